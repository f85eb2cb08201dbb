"""The one list of mechanism instances the tests check against the contract.

``CASES``: catalog entry name -> parameter points (dicts given to ``catalog.build``); every
entry of :data:`ldpsim.mechanisms.catalog.CATALOG` must have at least one (a test fails
otherwise), and a broken entry's points must be broken (claim less eps than they have).
``EXTRA``: instances built outside the catalog (factories with matrices, priors or explicit
patterns). ``BAD``: out-of-range parameters per entry, with the parameter the one-line error
must name. ``SLOW``: parameter points that run only with ``-m slow``.
``REFERENCE``: how the exact eps and delta of a non-finite entry are checked independently:
``"quad"`` (1-D density, adaptive quadrature of the hockey-stick integral), ``"mixed"``
(a 1-D density plus atoms at the values ``mech.atoms``, the same for every input: quadrature
of the density part plus a sum over the atoms), ``"lattice"``
(integer outputs, a sum over the support), ``"radial"`` (vector outputs whose density
depends only on ``||y - x||_p``, ``p`` a parameter: the privacy loss on the line through
the pair, the law of the norm of the noise; 1-element vectors go to ``"quad"``) or ``None``
(no independent computation); finite outputs (``output_size`` not None) are always checked
by brute force over events.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

from ldpsim.mechanisms import (
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    catalog,
    from_matrix,
    staircase_mechanism,
)
from ldpsim.mechanisms.base import Mechanism
from ldpsim.mechanisms.oracles.hashing import BinaryLocalHashing, OptimizedLocalHashing

CASES: dict[str, list[dict[str, Any]]] = {
    "randomized_response": [
        {"k": 2, "eps": math.log(3.0)},
        {"k": 5, "eps": 1.0},
        {"k": 3, "eps": 0.0},
        {"k": 8, "eps": 2.0},
    ],
    "binary": [
        {"eps": 1.0, "k": 2},
        {"eps": 2.0, "k": 5},
        {"eps": 0.7, "k": 4, "T": [1, 3]},
        {"eps": 1.2, "k": 4, "P0": [0.4, 0.3, 0.2, 0.1], "P1": [0.1, 0.2, 0.3, 0.4]},
    ],
    "truncated_geometric": [{"k": 2, "eps": 1.0}, {"k": 6, "eps": 2.5}],
    "staircase": [{"k": 4, "eps": 1.0}, {"k": 3, "eps": 0.5}],
    "optimal": [
        {"eps": 1.0, "utility": "kl", "P0": [0.5, 0.3, 0.2], "P1": [0.2, 0.3, 0.5]},
        {"eps": 0.8, "utility": "mutual_information", "k": 4},
        {"eps": 1.5, "utility": "tv", "P0": [0.6, 0.4], "P1": [0.3, 0.7]},
    ],
    "better_of_binary_and_rr": [
        {"eps": 1.0, "utility": "kl", "P0": [0.5, 0.3, 0.2], "P1": [0.2, 0.3, 0.5]},
        {"eps": 2.0, "utility": "mutual_information", "prior": [0.4, 0.3, 0.2, 0.1]},
    ],
    "matrix": [
        {"matrix": [[0.75, 0.25], [0.25, 0.75]]},
        {"matrix": [[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]], "k": 3, "output_labels": ["a", "b", "c"]},
        {"matrix": [[0.6, 0.4, 0.0], [0.1, 0.6, 0.3]]},  # a zero beside a non-zero in column 2: eps = inf
    ],
    "quaternary": [{"eps": 0.7, "delta": 0.05}, {"eps": 0.7, "delta": 0.0}, {"eps": 2.0, "delta": 0.3}],
    "laplace": [{"eps": 1.0}, {"eps": 0.3, "sensitivity": 2.0}],
    "gaussian": [{"eps": 1.0, "delta": 1e-5}, {"eps": 0.5, "delta": 1e-3, "sensitivity": 2.0}],
    "gaussian_classical": [{"eps": 0.5, "delta": 1e-5}, {"eps": 0.9, "delta": 1e-3}],
    "truncated_laplace": [{"eps": 1.0, "delta": 1e-5}, {"eps": 0.3, "delta": 0.05, "sensitivity": 2.0}],
    "staircase_noise": [{"eps": 1.0}, {"eps": 2.5, "sensitivity": 0.5}],
    "geometric": [{"eps": 1.0}, {"eps": 0.4, "sensitivity": 3}],
    # -- discrete samplers: here
    "discrete_laplace": [{"eps": 1.0}, {"eps": 0.3, "sensitivity": 3}],
    "discrete_gaussian": [{"eps": 1.0, "delta": 1e-5}, {"eps": 0.5, "delta": 1e-3, "sensitivity": 2}],
    # -- snapping: here
    "snapped_laplace": [
        {"eps": 1.0, "bound": 8.0},
        {"eps": 0.5, "bound": 20.0, "sensitivity": 2.0},
        {"eps": 3.0, "bound": 3.0},
    ],
    "norm_laplace": [
        {"d": 4, "p": 2.0, "eps": 1.0},
        {"d": 1, "p": 1.0, "eps": 0.5},
        {"d": 3, "p": math.inf, "eps": 2.0},
    ],
    "broken.doubled_rr": [{"k": 2, "eps": 1.0}, {"k": 4, "eps": 0.5}],
    "broken.unary_no_reset": [{"k": 4, "eps": 1.0}, {"k": 3, "eps": 2.0}],
    "broken.laplace_wrong_scale": [{"eps": 0.5}, {"eps": 0.8}],
    "broken.histogram_wrong_scale": [{"eps": 0.5, "bins": 4, "affected": 0}, {"eps": 0.25, "bins": 2, "affected": 1}],
    "broken.noisy_max_value": [{"eps": 1.0, "m": 5}, {"eps": 0.5, "m": 3}],
    "broken.svt_no_query_noise": [{"eps": 1.0, "T": 0.0}, {"eps": 0.5, "T": 1.0}],
    "broken.svt_no_cutoff": [{"eps": 1.0, "m": 3}, {"eps": 0.5, "m": 4}],
    "broken.svt_returns_value": [{"eps": 1.0, "m": 7}, {"eps": 2.0, "m": 4}],
    # rappor: small m so that possible_reports() lists every report
    "rappor": [
        {"k": 4, "m": 8, "h": 2, "f": 0.5, "p": 0.5, "q": 0.75, "cohort": 0},
        {"k": 3, "m": 6, "h": 1, "f": 0.25, "p": 0.25, "q": 0.75, "cohort": 1},
        {"k": 5, "m": 3, "h": 2, "f": 0.5, "p": 0.5, "q": 0.75, "cohort": 0},  # overlapping patterns, not identifiable
        {"k": 3, "m": 5, "h": 2, "f": 0.0, "p": 0.0, "q": 1.0, "cohort": 2},  # the bare Bloom filter: eps = inf
    ],
    # local hashing at the default prime 2^31 - 1: too many reports to enumerate (the
    # enumeration checks run on the small-prime instances of EXTRA)
    "olh": [{"k": 4, "eps": 1.0}, {"k": 6, "eps": 2.0, "g": 3}, {"k": 10, "eps": 0.5}, {"k": 3, "eps": 0.0}],
    "blh": [{"k": 4, "eps": 1.0}, {"k": 7, "eps": 0.3}],
    "hadamard_response": [{"k": 3, "eps": 1.0}, {"k": 5, "eps": 2.0}, {"k": 2, "eps": 0.0}, {"k": 7, "eps": 0.4}],
    "subset_selection": [
        {"k": 5, "eps": 1.0, "omega": 2},
        {"k": 4, "eps": 0.5},
        {"k": 6, "eps": 2.0, "omega": 4},
        {"k": 3, "eps": 0.0, "omega": 1},
    ],
    # unary encoding: small k, so that possible_reports() enumerates every report
    "sue": [{"k": 4, "eps": 1.0}, {"k": 2, "eps": 0.3}, {"k": 5, "eps": 3.0}],
    "oue": [{"k": 4, "eps": 1.0}, {"k": 3, "eps": 2.5}, {"k": 2, "eps": 0.2}],
    # mean estimation of a bounded numeric answer (hybrid: below and above its threshold 0.6094)
    "laplace_bounded": [{"eps": 1.0}, {"eps": 0.5, "lo": 0.0, "hi": 10.0}],
    "discrete_laplace_bounded": [
        {"eps": 1.0},
        {"eps": 0.5, "lo": 0.0, "hi": 10.0},
        {"eps": 3.0, "lo": -5.0, "hi": 2.0},
    ],
    "snapped_laplace_bounded": [{"eps": 1.0}, {"eps": 0.3, "lo": 2.0, "hi": 5.0}, {"eps": 4.0, "lo": 0.0, "hi": 100.0}],
    "staircase_bounded": [{"eps": 1.0}, {"eps": 3.0, "lo": 0.0, "hi": 10.0}],
    "duchi": [{"eps": 1.0}, {"eps": 0.3, "lo": 2.0, "hi": 5.0}, {"eps": 4.0}],
    "piecewise": [{"eps": 1.0}, {"eps": 0.3, "lo": 2.0, "hi": 5.0}, {"eps": 4.0}],
    "hybrid": [{"eps": 1.0}, {"eps": 0.5, "lo": 2.0, "hi": 5.0}, {"eps": 3.0, "lo": -10.0, "hi": 0.0}],
    "square_wave": [{"eps": 1.0}, {"eps": 0.3, "lo": 2.0, "hi": 5.0}, {"eps": 4.0, "lo": -10.0, "hi": 0.0}],
    "memoised_rr": [
        {"k": 4, "eps_permanent": 2.0, "eps_instantaneous": 1.0},
        {"k": 2, "eps_permanent": math.log(3.0), "eps_instantaneous": math.log(3.0)},
        {"k": 3, "eps_permanent": 0.0, "eps_instantaneous": 1.0},  # eps = 0: nothing to estimate
        {"k": 5, "eps_permanent": 1.0, "eps_instantaneous": 3.0},
    ],
}

#: (entry, index into CASES[entry]) run only with -m slow
SLOW: set[tuple[str, int]] = set()
#: Non-catalog instances run only with -m slow (a second prime of each local hashing: every
#: report enumerated, 1.5-2 s a law check)
SLOW_EXTRA = {"olh-prime5-g3", "blh-prime7"}
#: Cases of each entry in the default run (the rest, 67 of the 108, in the slow tier).
DEFAULT_CASES = 1

REFERENCE: dict[str, str | None] = {
    "laplace": "quad",
    "gaussian": "quad",
    "gaussian_classical": "quad",
    "truncated_laplace": "quad",
    "staircase_noise": "quad",
    "geometric": "lattice",
    # -- discrete samplers: here
    "discrete_laplace": "lattice",
    "discrete_gaussian": "lattice",
    # -- snapping: here
    "snapped_laplace": "grid",  # finite support(): the exact pmf summed over it
    "norm_laplace": "radial",  # density a function of ||y - x||_p (quadrature when d = 1)
    "broken.laplace_wrong_scale": "quad",
    "broken.histogram_wrong_scale": "quad",
    "broken.noisy_max_value": "quad",
    "broken.svt_returns_value": None,  # atoms at +-inf and a density only by quadrature
    "laplace_bounded": "quad",
    "discrete_laplace_bounded": "lattice",
    "snapped_laplace_bounded": None,  # a mixture over 2^G dithers: no density; its own tests check the moments
    "staircase_bounded": "quad",
    "duchi": "mixed",  # two atoms, no density part
    "piecewise": "quad",
    "hybrid": "mixed",  # a density plus Duchi's two atoms
    "square_wave": "quad",
}

NAN = float("nan")
BAD: dict[str, list[tuple[dict[str, Any], str]]] = {
    "randomized_response": [({"k": 1}, "k"), ({"eps": -1.0}, "eps"), ({"eps": NAN}, "eps")],
    "binary": [
        ({"k": 1}, "k"),
        ({"eps": -0.5}, "eps"),
        ({"T": [0, 7], "k": 4}, "T"),
        ({"P0": [0.5, 0.5]}, "P1"),
        ({"P0": [0.5, 0.5], "P1": [0.2, 0.8], "k": 3}, "P0"),
    ],
    "optimal": [
        ({"utility": "entropy"}, "utility"),
        ({"utility": "kl"}, "P0"),
        ({"utility": "mutual_information"}, "prior"),
        ({"eps": -1.0, "utility": "mutual_information", "k": 3}, "eps"),
    ],
    "better_of_binary_and_rr": [({"utility": "tv", "P0": [0.5, 0.5]}, "P1")],
    "matrix": [
        ({"matrix": [[0.5, 0.6], [0.5, 0.5]]}, "matrix"),
        ({"matrix": [[1.0, 0.0]]}, "matrix"),
        ({"matrix": [[0.5, 0.5], [0.5, 0.5]], "k": 3}, "matrix"),
        ({"matrix": [[0.5, 0.5], [0.5, 0.5]], "output_labels": ["x"]}, "output_labels"),
    ],
    "truncated_geometric": [({"k": 1}, "k"), ({"eps": -1.0}, "eps")],
    "staircase": [({"k": 1}, "k"), ({"eps": -1.0}, "eps")],
    "quaternary": [({"delta": 1.5}, "delta"), ({"delta": -0.1}, "delta"), ({"eps": -1.0}, "eps")],
    "laplace": [({"eps": 0.0}, "eps"), ({"eps": math.inf}, "eps"), ({"sensitivity": 0.0}, "sensitivity")],
    "gaussian": [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"eps": -1.0}, "eps"),
        ({"sensitivity": -1.0}, "sensitivity"),
    ],
    "gaussian_classical": [({"eps": 1.5}, "eps"), ({"delta": 0.0}, "delta")],
    "truncated_laplace": [({"delta": 0.6}, "delta"), ({"eps": 0.0}, "eps")],
    "staircase_noise": [({"eps": 0.0}, "eps"), ({"sensitivity": -1.0}, "sensitivity")],
    "geometric": [({"sensitivity": 0}, "sensitivity"), ({"eps": -1.0}, "eps")],
    # -- discrete samplers: here
    "discrete_laplace": [
        ({"sensitivity": 0}, "sensitivity"),
        ({"eps": -1.0}, "eps"),
        ({"eps": 1e-15}, "eps"),
        ({"eps": NAN}, "eps"),
    ],
    "discrete_gaussian": [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"eps": 0.0}, "eps"),
        ({"sensitivity": 0}, "sensitivity"),
        ({"eps": 1e-9, "delta": 1e-12}, "delta"),
    ],
    # -- snapping: here
    "snapped_laplace": [
        ({"sensitivity": 3.0}, "sensitivity"),
        ({"bound": 0.5}, "bound"),
        ({"bound": 1000.0}, "bound"),
        ({"eps": 0.0}, "eps"),
    ],
    "norm_laplace": [({"d": 0}, "d"), ({"p": 0.5}, "p"), ({"eps": 0.0}, "eps")],
    "broken.doubled_rr": [({"eps": 0.0}, "eps"), ({"k": 1}, "k")],
    "broken.unary_no_reset": [({"k": 1}, "k"), ({"k": 17}, "k")],
    "broken.laplace_wrong_scale": [({"eps": -1.0}, "eps")],
    "broken.histogram_wrong_scale": [({"bins": 0}, "bins"), ({"affected": 4}, "affected")],
    "broken.noisy_max_value": [({"m": 0}, "m"), ({"eps": 0.0}, "eps")],
    "broken.svt_no_query_noise": [({"eps": 0.0}, "eps"), ({"T": NAN}, "T")],
    "broken.svt_no_cutoff": [({"m": 9}, "m"), ({"eps": 1e-7}, "eps"), ({"T": NAN}, "T")],
    "broken.svt_returns_value": [({"m": 0}, "m"), ({"m": 65}, "m"), ({"T": NAN}, "T")],
    "rappor": [
        ({"k": 1}, "k"),
        ({"m": 0}, "m"),
        ({"h": 0}, "h"),
        ({"h": 65}, "h"),
        ({"f": 1.5}, "f"),
        ({"p": -0.1}, "p"),
        ({"q": NAN}, "q"),
        ({"cohort": -1}, "cohort"),
    ],
    "olh": [
        ({"k": 1}, "k"),
        ({"eps": -1.0}, "eps"),
        ({"eps": NAN}, "eps"),
        ({"g": 1}, "g"),
        ({"g": 2**31}, "g"),
        ({"k": 2**31 - 1}, "k"),
    ],
    "blh": [({"k": 1}, "k"), ({"eps": -1.0}, "eps"), ({"k": 2**31}, "k")],
    "hadamard_response": [({"k": 1}, "k"), ({"eps": -1.0}, "eps"), ({"eps": NAN}, "eps"), ({"eps": math.inf}, "eps")],
    "subset_selection": [
        ({"k": 1}, "k"),
        ({"eps": -1.0}, "eps"),
        ({"eps": NAN}, "eps"),
        ({"omega": 0}, "omega"),
        ({"k": 4, "omega": 4}, "omega"),
        ({"omega": 1.5}, "omega"),
    ],
    # unary encoding
    "sue": [({"k": 1}, "k"), ({"eps": -1.0}, "eps"), ({"eps": NAN}, "eps"), ({"eps": math.inf}, "eps")],
    "oue": [({"k": 1}, "k"), ({"eps": -0.5}, "eps"), ({"eps": NAN}, "eps"), ({"eps": math.inf}, "eps")],
    # mean estimation
    "discrete_laplace_bounded": [
        ({"eps": 0.0}, "eps"),
        ({"lo": 0.5}, "lo"),
        ({"hi": 2.5}, "hi"),
        ({"lo": 1.0}, "hi"),
        ({"hi": 2.0**60}, "hi"),
    ],
    "snapped_laplace_bounded": [
        ({"eps": 0.0}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"lo": 1.0}, "hi"),
        ({"hi": NAN}, "hi"),
    ],
    "laplace_bounded": [
        ({"eps": 0.0}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"lo": 1.0}, "hi"),
        ({"hi": NAN}, "hi"),
        ({"lo": -math.inf}, "lo"),
    ],
    "staircase_bounded": [({"eps": 0.0}, "eps"), ({"eps": math.inf}, "eps"), ({"lo": 1.0}, "hi"), ({"hi": NAN}, "hi")],
    "duchi": [
        ({"eps": 0.0}, "eps"),
        ({"eps": NAN}, "eps"),
        ({"lo": 2.0, "hi": 2.0}, "hi"),
        ({"lo": NAN}, "lo"),
        ({"eps": 1e-310}, "eps"),
    ],
    "piecewise": [
        ({"eps": -1.0}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"hi": -1.0}, "hi"),
        ({"hi": math.inf}, "hi"),
        ({"lo": -1e308, "hi": 1e308}, "hi"),
    ],
    "hybrid": [({"eps": 0.0}, "eps"), ({"eps": NAN}, "eps"), ({"lo": 3.0}, "hi"), ({"lo": math.inf}, "lo")],
    "square_wave": [
        ({"eps": 0.0}, "eps"),
        ({"eps": 701.0}, "eps"),  # the window would be a subnormal double wide
        ({"eps": 1e-300, "lo": -1e300, "hi": 1e300}, "eps"),  # reports past the float range
        ({"lo": 3.0}, "hi"),
    ],
    "memoised_rr": [
        ({"k": 1}, "k"),
        ({"eps_permanent": -1.0}, "eps_permanent"),
        ({"eps_instantaneous": NAN}, "eps_instantaneous"),
        ({"eps_permanent": math.inf}, "eps_permanent"),
    ],
}


# --------------------------------------------------------------------------- outside the catalog
def _random_matrix():
    rng = np.random.default_rng(20261129)
    q = rng.dirichlet(np.ones(5), size=4)
    q[1, 3] = 0.0  # a column that mixes zeros and non-zeros: eps = inf
    q[1] /= q[1].sum()
    return from_matrix(q)


def _rr_as_staircase(k: int, eps: float):
    codes = 1 << np.arange(k)  # one-hot patterns e_i
    theta = np.full(k, 1.0 / (k - 1 + math.exp(eps)))
    return staircase_mechanism(eps, theta, patterns=codes, k=k)


EXTRA: dict[str, Callable[[], Any]] = {
    "binary-priors": lambda: binary_mechanism_for_priors([0.5, 0.2, 0.2, 0.1], [0.1, 0.3, 0.2, 0.4], 0.8),
    "binary-prior-bestT": lambda: binary_mechanism_for_prior([0.4, 0.3, 0.2, 0.1], 1.5),
    "binary-explicit-T": lambda: binary_mechanism(2.0, [1, 2], 5),
    "staircase-rr": lambda: _rr_as_staircase(4, 1.2),
    # binary: patterns 01 and 10 with theta = 1/(1+e)
    "staircase-full-theta": lambda: staircase_mechanism(1.0, np.array([0.0, 1.0, 1.0, 0.0]) / (1.0 + math.e)),
    "from-matrix": _random_matrix,
    # local hashing with a small prime: every report (a, b, c, value) enumerable
    "olh-prime7": lambda: OptimizedLocalHashing(4, 1.0, prime=7),
    "olh-prime5-g3": lambda: OptimizedLocalHashing(3, 0.5, g=3, prime=5),
    "blh-prime5": lambda: BinaryLocalHashing(4, 1.0, prime=5),
    "blh-prime7": lambda: BinaryLocalHashing(3, 2.0, prime=7),
}


# --------------------------------------------------------------------------- pending conversions
#: The methods and attributes of the contract (ldpsim/mechanisms/base.py).
CONTRACT = (
    "params",
    "sample",
    "log_density",
    "neighbours",
    "epsilon",
    "delta",
    "is_private",
    "guarantee",
    "output_size",
)

_PENDING: dict[str, str | None] = {}


def pending(name: str) -> str | None:
    """Why the broken-zoo entry ``name`` cannot pass the contract yet, or None.

    The deliberately broken targets of the auditor are being converted to the contract while
    they move into their own package; until then their tests are expected failures whose
    reason names the missing methods. Only ``broken`` entries are ever pending: a library
    entry that breaks the contract fails. Wherever the builder lives (the entry names it as a
    string), the check is on the object it builds."""
    if name not in _PENDING:
        e = catalog.entry(name)
        reason = None
        if "broken" in e.tags:
            made = e.build(**CASES[name][0])
            if not isinstance(made, Mechanism):
                missing = [m for m in CONTRACT if not hasattr(made, m)]
                reason = (
                    f"{e.name}: {type(made).__name__} (built by {e.builder}) does not implement the "
                    f"Mechanism contract yet (not a Mechanism subclass; missing {', '.join(missing) or 'nothing'})"
                )
        _PENDING[name] = reason
    return _PENDING[name]


def pending_marks(name: str | None) -> list[Any]:
    reason = pending(name) if name is not None else None
    return [pytest.mark.xfail(reason=reason, strict=False)] if reason else []


def entry_params(contract: bool = True) -> list[Any]:
    """pytest params over the catalog entry names; with ``contract`` (tests that use the
    built mechanisms) the pending broken-zoo entries are expected failures."""
    return [pytest.param(n, id=n, marks=pending_marks(n) if contract else []) for n in sorted(catalog.CATALOG)]


# --------------------------------------------------------------------------- the instances
def case_id(name: str, params: dict[str, Any]) -> str:
    return name + ":" + ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


_BUILT: dict[str, Any] = {}


def instance(key: str) -> Any:
    """The mechanism of an instance id (built once per test session: some constructors
    solve a linear program or integrate)."""
    if key not in _BUILT:
        if key in EXTRA:
            _BUILT[key] = EXTRA[key]()
        else:
            name, params = _BY_ID[key]
            _BUILT[key] = catalog.build(name, **params)
    return _BUILT[key]


_BY_ID: dict[str, tuple[str, dict[str, Any]]] = {
    case_id(name, p): (name, p) for name, points in CASES.items() for p in points
}


def instance_params(entries: Callable[[str], bool] | None = None, extra: bool = True) -> list[Any]:
    """pytest params (id = instance id) for the catalog cases (of the entries ``entries``
    accepts) and, with ``extra``, the non-catalog instances. The default run takes the first
    :data:`DEFAULT_CASES` cases of each entry; the others, and the SLOW points, run in the
    slow tier (CI runs both)."""
    out = []
    for name, points in CASES.items():
        if entries is not None and not entries(name):
            continue
        for i, p in enumerate(points):
            slow = (name, i) in SLOW or i >= DEFAULT_CASES
            marks = ([pytest.mark.slow] if slow else []) + pending_marks(name)
            out.append(pytest.param(case_id(name, p), id=case_id(name, p), marks=marks))
    if extra:
        out += [pytest.param(key, id=key, marks=[pytest.mark.slow] if key in SLOW_EXTRA else []) for key in EXTRA]
    return out


def entry_name(key: str) -> str | None:
    """The catalog entry of an instance id (None for EXTRA)."""
    return _BY_ID[key][0] if key in _BY_ID else None


def case_params(key: str) -> dict[str, Any]:
    return _BY_ID[key][1]
