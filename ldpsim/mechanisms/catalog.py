"""The one catalog of mechanisms: name -> builder with typed parameters.

Every mechanism of the library, and every deliberately broken target of the auditor, has
exactly one entry here. The scenario loader, ``ldpsim audit``, the reproductions and the
contract test suite all build mechanisms through it, so adding a mechanism to ldpsim means
one class (implementing :class:`ldpsim.mechanisms.base.Mechanism`) and one entry below.

An entry names its builder as a ``"module:attribute"`` string, imported on first use: this
keeps ``import ldpsim`` light and lets packages above :mod:`ldpsim.mechanisms` (the
optimal-mechanism linear program, the auditor's broken zoo) contribute builders without an
import running upward.

Specs on the command line use the grammar ``NAME`` or ``NAME:param=value,param=value``
(:func:`parse`); values are converted to the declared parameter types.

>>> from ldpsim.mechanisms import catalog
>>> catalog.build("randomized_response", k=4, eps=1.0)
randomized_response(k=4, eps=1.0)
>>> catalog.parse("laplace:eps=0.5").params
{'eps': 0.5, 'sensitivity': 1.0}
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ldpsim.errors import LdpSimError, invalid

__all__ = ["Param", "Entry", "Built", "CATALOG", "entry", "build", "parse", "names", "SPEC_FORM"]

#: The command-line grammar of a mechanism spec.
SPEC_FORM = "NAME or NAME:param=value,param=value"


@dataclass(frozen=True)
class Param:
    """One parameter of a catalog entry: its type (``int``, ``float`` or ``str``; ``object``
    for values that only scenario files and Python pass, such as matrices), its default
    (``None``: required) and a one-line help."""

    type: type
    default: Any
    help: str


@dataclass(frozen=True)
class Entry:
    """A family of mechanisms: ``build(**params)`` fills in defaults, converts the values to
    the declared types and calls the builder.

    ``tags`` say what the family is for: ``finite`` (finite outputs, exact matrix),
    ``noise`` (additive noise on a number), ``vector``, ``broken`` (an auditor's target that
    claims more privacy than it has), ``scenario`` (usable as ``[mechanism]`` of a survey
    scenario), ``party`` (a per-party mechanism of the multi-party protocols)."""

    name: str
    description: str
    params: Mapping[str, Param]
    builder: str
    tags: frozenset[str] = field(default_factory=frozenset)

    def resolve(self, **params: Any) -> dict[str, Any]:
        """Defaults merged with ``params``, converted to the declared types."""
        out: dict[str, Any] = {}
        for key, value in params.items():
            if key not in self.params:
                raise invalid("parameter", key, f"a parameter of {self.name}: one of {', '.join(self.params) or '(none)'}")
            out[key] = _coerce(key, value, self.params[key].type)
        resolved: dict[str, Any] = {}
        for key, p in self.params.items():
            if key in out:
                resolved[key] = out[key]
            elif p.default is None:
                raise invalid(key, None, f"a value for {self.name} ({p.help})")
            else:
                resolved[key] = p.default
        return resolved

    def builder_fn(self) -> Callable[..., Any]:
        module, _, attr = self.builder.partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]

    def build(self, **params: Any) -> Any:
        """The mechanism with ``params`` (the others at their defaults)."""
        return self.builder_fn()(**self.resolve(**params))

    def claimed(self, params: Mapping[str, Any]) -> tuple[float, float]:
        """The privacy the family claims at these parameters: ``(eps, delta)`` read from
        the parameters of the same names (``inf`` and 0 where absent). For library
        mechanisms it is their exact privacy; for ``broken`` ones it is the false claim."""
        eps = params.get("eps", math.inf)
        return float(eps), float(params.get("delta", 0.0))

    def spec(self, params: Mapping[str, Any]) -> str:
        """The spec string that rebuilds these parameters with :func:`parse`."""
        if not params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={_format(v)}" for k, v in params.items())


@dataclass(frozen=True)
class Built:
    """A parsed spec: the entry, the resolved parameters and the mechanism."""

    entry: Entry
    params: dict[str, Any]
    mechanism: Any

    __hash__ = None  # type: ignore[assignment]

    @property
    def spec(self) -> str:
        return self.entry.spec(self.params)


def _format(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _coerce(name: str, value: Any, typ: type) -> Any:
    """``value`` as ``typ``, from a string or a number; one-line errors."""
    if typ is object:
        return value
    if typ is str:
        if not isinstance(value, str):
            raise invalid(name, value, "a string")
        return value.strip()
    word = "an integer" if typ is int else "a number"
    if isinstance(value, str):
        text = value.strip()
        try:
            return typ(text)
        except ValueError:
            if typ is int:
                try:
                    f = float(text)
                except ValueError:
                    raise invalid(name, value, word) from None
                if f.is_integer():
                    return int(f)
            raise invalid(name, value, word) from None
    if isinstance(value, bool):
        raise invalid(name, value, word)
    if typ is int:
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise invalid(name, value, word)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    raise invalid(name, value, word)


# --------------------------------------------------------------------------- entries
_EPS = Param(float, 1.0, "privacy level eps (> 0)")
_SENS = Param(float, 1.0, "sensitivity of the query (the pair is (0, sensitivity))")
_K = Param(int, 2, "alphabet size (>= 2)")
_B = "ldpsim.mechanisms.builders"


def _entries() -> list[Entry]:
    fin = frozenset({"finite", "scenario"})
    noise = frozenset({"noise"})
    broken = frozenset({"broken"})
    zoo = "ldpsim.mechanisms.broken"
    return [
        Entry(
            "randomized_response",
            "k-ary randomized response: the input with probability e^eps/(k-1+e^eps); exact eps = eps",
            {"k": _K, "eps": _EPS},
            "ldpsim.mechanisms.randomized_response:RandomizedResponse",
            fin | {"party"},
        ),
        Entry(
            "binary",
            "binary mechanism (two outputs) with T = the first ceil(k/2) symbols; exact eps = eps",
            {"eps": _EPS, "k": _K},
            f"{_B}:binary_first_half",
            fin,
        ),
        Entry(
            "truncated_geometric",
            "truncated geometric mechanism on 1..k, clip(x + Z, 1, k); exact eps = eps",
            {"k": Param(int, 4, "alphabet size (>= 2)"), "eps": _EPS},
            "ldpsim.mechanisms.standard:truncated_geometric",
            fin,
        ),
        Entry(
            "staircase",
            "finite staircase mechanism S diag(theta): the optimal (LP) one for mutual information "
            "under a uniform prior; exact eps = eps",
            {"k": Param(int, 4, "alphabet size (2..14)"), "eps": _EPS},
            "ldpsim.utility.optimal:optimal_staircase_for_uniform_mi",
            frozenset({"finite"}),
        ),
        Entry(
            "quaternary",
            "quaternary (eps, delta) mechanism on a binary input; pure eps is inf, delta(eps) = delta",
            {"eps": _EPS, "delta": Param(float, 0.05, "delta in [0, 1]")},
            "ldpsim.mechanisms.standard:quaternary_mechanism",
            fin | {"party"},
        ),
        Entry(
            "laplace",
            "Laplace noise with scale sensitivity/eps; exact eps = eps",
            {"eps": _EPS, "sensitivity": _SENS},
            f"{_B}:laplace_for",
            noise,
        ),
        Entry(
            "gaussian",
            "Gaussian noise, analytic calibration (Balle-Wang 2018): exact delta(eps) <= delta; pure eps inf",
            {"eps": _EPS, "delta": Param(float, 1e-5, "delta in (0, 1)"), "sensitivity": _SENS},
            f"{_B}:gaussian_analytic",
            noise,
        ),
        Entry(
            "gaussian_classical",
            "Gaussian noise, classical calibration sigma = sensitivity sqrt(2 log(1.25/delta))/eps (eps < 1)",
            {
                "eps": Param(float, 0.5, "privacy level eps in (0, 1)"),
                "delta": Param(float, 1e-5, "delta in (0, 1)"),
                "sensitivity": _SENS,
            },
            f"{_B}:gaussian_classical",
            noise,
        ),
        Entry(
            "truncated_laplace",
            "truncated Laplace noise (Geng-Ding-Guo-Kumar 2020): exactly (eps, delta)-DP; pure eps inf",
            {"eps": _EPS, "delta": Param(float, 1e-5, "delta in (0, 1/2)"), "sensitivity": _SENS},
            "ldpsim.mechanisms.noise.truncated_laplace:TruncatedLaplace",
            noise,
        ),
        Entry(
            "staircase_noise",
            "staircase noise (Geng-Viswanath), variance-optimal gamma; exact eps = eps",
            {"eps": _EPS, "sensitivity": _SENS},
            "ldpsim.mechanisms.noise.staircase:Staircase",
            noise,
        ),
        Entry(
            "geometric",
            "two-sided geometric noise for integer queries; exact eps = eps",
            {"eps": _EPS, "sensitivity": Param(int, 1, "integer sensitivity (>= 1)")},
            "ldpsim.mechanisms.noise.geometric:Geometric",
            noise,
        ),
        Entry(
            "norm_laplace",
            "l_p Laplace noise on R^d (density prop. to exp(-eps ||y - x||_p)), vector outputs; exact eps = eps "
            "for inputs at l_p distance 1 (the pair 0, e_1)",
            {"d": Param(int, 4, "dimension (>= 1)"), "p": Param(float, 2.0, "the norm, >= 1 (inf allowed)"), "eps": _EPS},
            f"{_B}:norm_laplace",
            frozenset({"vector"}),
        ),
        Entry(
            "broken.doubled_rr",
            'deliberately broken: k-ary randomized response whose probabilities use ``2 eps``.',
            {"k": Param(int, 2, "alphabet size (>= 2)"), "eps": _EPS},
            f"{zoo}:DoubledRR",
            broken,
        ),
        Entry(
            "broken.unary_no_reset",
            'deliberately broken: Symmetric unary encoding (RAPPOR-like) whose client never randomises its true bit.',
            {"k": Param(int, 4, "alphabet size (>= 2)"), "eps": _EPS},
            f"{zoo}:UnaryNoReset",
            broken,
        ),
        Entry(
            "broken.laplace_wrong_scale",
            'deliberately broken: Laplace noise with scale ``eps`` instead of ``1/eps`` on a sensitivity-1 query.',
            {"eps": Param(float, 0.5, "claimed privacy level eps (> 0)")},
            f"{zoo}:LaplaceWrongScale",
            broken,
        ),
        Entry(
            "broken.histogram_wrong_scale",
            'deliberately broken: A histogram over ``bins`` bins with ``Lap(eps)`` noise per bin instead of ``Lap(1/eps)``.',
            {
                "eps": Param(float, 0.5, "claimed privacy level eps (> 0)"),
                "bins": Param(int, 4, "number of bins"),
                "affected": Param(int, 0, "the bin the neighbouring data set changes"),
            },
            f"{zoo}:HistogramWrongScale",
            broken,
        ),
        Entry(
            "broken.noisy_max_value",
            'deliberately broken: Report-noisy-max over ``m`` counting queries that releases the noisy maximum *value*.',
            {"eps": _EPS, "m": Param(int, 5, "number of queries")},
            f"{zoo}:NoisyMaxValue",
            broken,
        ),
        Entry(
            "broken.svt_no_query_noise",
            'deliberately broken: Sparse vector without noise on the queries (Lyu-Su-Li 2017, Alg. 5, Stoddard et al.).',
            {"eps": _EPS, "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTNoQueryNoise",
            broken,
        ),
        Entry(
            "broken.svt_no_cutoff",
            'deliberately broken: Sparse vector that never stops (Lyu-Su-Li 2017, Alg. 6, Chen et al. 2015).',
            {"eps": _EPS, "m": Param(int, 3, "number of queries"), "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTNoCutoff",
            broken,
        ),
        Entry(
            "broken.svt_returns_value",
            "deliberately broken: Sparse vector that releases the noisy query value ``q_i + nu_i`` for its top (Lyu-Su-Li 2017, Alg. 3, after Roth's lecture notes), cutoff ``c = 1``.",
            {"eps": _EPS, "m": Param(int, 7, "number of queries"), "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTReturnsValue",
            broken,
        ),
    ]


#: name -> entry, library mechanisms first, then the broken targets of the auditor.
CATALOG: dict[str, Entry] = {e.name: e for e in _entries()}


def names(tag: str | None = None) -> list[str]:
    """Sorted entry names (those with ``tag`` only, if given)."""
    return sorted(n for n, e in CATALOG.items() if tag is None or tag in e.tags)


def entry(name: Any) -> Entry:
    """The entry called ``name``; a one-line error listing the names otherwise."""
    if not isinstance(name, str) or name not in CATALOG:
        raise invalid("mechanism", name, f"one of {', '.join(names())}")
    return CATALOG[name]


def build(name: str, **params: Any) -> Any:
    """Build the mechanism ``name`` with ``params`` (the others at their defaults)."""
    return entry(name).build(**params)


def parse(spec: str) -> Built:
    """Parse and build ``"name"`` or ``"name:param=value,..."``. Unknown names or
    parameters, malformed specs and bad values raise a one-line
    :class:`~ldpsim.errors.LdpSimError`; errors of the builder pass through."""
    if not isinstance(spec, str):
        raise invalid("spec", spec, SPEC_FORM)
    name, sep, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise invalid("spec", spec, SPEC_FORM)
    e = entry(name)
    given: dict[str, str] = {}
    if sep:
        if not rest.strip():
            raise invalid("spec", spec, SPEC_FORM + " (parameters after ':')")
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not key:
                raise invalid("spec", spec, SPEC_FORM + f" (bad item {item.strip()!r})")
            if not value:
                raise invalid(key, value, "a value after '='")
            if key in given:
                raise invalid("parameter", key, "each parameter at most once")
            if key not in e.params:
                raise invalid("parameter", key, f"a parameter of {name}: one of {', '.join(e.params) or '(none)'}")
            given[key] = value
    params = e.resolve(**given)
    return Built(e, params, e.builder_fn()(**params))


def check_catalog() -> None:
    """Every builder string resolves (used by the contract tests)."""
    for e in CATALOG.values():
        try:
            e.builder_fn()
        except (ImportError, AttributeError) as exc:  # pragma: no cover - caught by the tests
            raise LdpSimError(f"catalog: entry {e.name!r} names builder {e.builder!r}, which does not resolve ({exc})") from None
