"""The public API at edge values (issue 14): every catalog mechanism, every noise calibration
and the composition functions over eps in {1e-300, 1e-12, 700, 710, 800}, delta in
{1e-300, 1} (and 0 where the family takes a pure guarantee), k in {1, 10^6, 10^9}.

Each call must either return a correct number -- finite or a justified inf, never NaN,
checked against a closed form or a property that must hold (the claimed guarantee is met,
monotonicity in eps or delta, a bound is never below the exact optimum, inverse functions
agree) -- or raise one LdpSimError whose one-line message names the parameter
(``"name: got value, expected ..."``). Never another exception type, never a warning (all
warnings are errors here), and each call within ``CALL_LIMIT`` seconds of CPU
(time.process_time: the work the call does, whatever else the machine runs; an explore run
beside four others once took 5.2 s of wall time for a call of 2.1 s of CPU) and
``WALL_LIMIT`` seconds of wall time.
"""

from __future__ import annotations

import math
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from ldpsim.audit import target
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import (
    binary_mechanism_for_priors,
    quaternary_mechanism,
    randomized_response,
    truncated_geometric,
)
from ldpsim.mechanisms.catalog import CATALOG as TARGETS
from ldpsim.mechanisms.noise import Gaussian, Geometric, Laplace, NoiseMechanism, Staircase, TruncatedLaplace
from ldpsim.privacy import composition as C
from tests.contract.cases import CASES

#: entries whose default parameters do not describe the inputs (a divergence needs P0, P1)
NEEDS_CASE = {"optimal", "better_of_binary_and_rr"}

EPS = [1e-300, 1e-12, 700.0, 710.0, 800.0]
DELTAS = [1e-300, 1.0]
KS = [1, 10**6, 10**9]
CALL_LIMIT = 5.0  # seconds of CPU per call
#: Wall seconds per call: a call blocked on something (not computing) is a hang too. Far
#: above CALL_LIMIT, because wall time also counts what other processes take of the cores.
WALL_LIMIT = 60.0
NOISE = [Laplace, Gaussian, TruncatedLaplace, Staircase, Geometric]
#: catalog families whose exact eps is the eps parameter ("exact eps = eps" in the catalog)
PURE_AT_EPS = {
    "randomized_response",
    "binary",
    "truncated_geometric",
    "staircase",
    "laplace",
    "staircase_noise",
    "geometric",
    "norm_laplace",
    "olh",
    "blh",
    "hadamard_response",
    "subset_selection",
    "sue",
    "oue",
}
#: catalog families with no pure guarantee (delta(eps) > 0 for every eps)
NO_PURE = {"gaussian", "gaussian_classical", "truncated_laplace", "quaternary", "discrete_gaussian"}
MESSAGE = re.compile(r"^[A-Za-z_][\w.\[\], ]*: got ")


@dataclass
class Tally:
    values: int = 0
    errors: int = 0
    slowest: float = 0.0
    slowest_call: str = ""
    messages: list[str] = field(default_factory=list)


TALLY = Tally()  # across the module (read by the summary in the last test of the file)


def call(label: str, fn: Callable[[], Any], names: tuple[str, ...] | None = None) -> Any:
    """Run ``fn`` with warnings as errors and a time limit; return its value, or the
    LdpSimError it raised (checked: one line, naming a parameter -- one of ``names`` if given)."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = fn()
    except LdpSimError as exc:
        out = exc
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
    elapsed, wall = time.process_time() - c0, time.perf_counter() - t0
    assert elapsed < CALL_LIMIT and wall < WALL_LIMIT, f"{label}: {elapsed:.2f} s of CPU, {wall:.2f} s wall"
    if elapsed > TALLY.slowest:
        TALLY.slowest, TALLY.slowest_call = elapsed, label
    if isinstance(out, LdpSimError):
        msg = str(out)
        assert "\n" not in msg and MESSAGE.match(msg), f"{label}: {msg!r}"
        if names is not None:
            assert msg.split(":")[0] in names, f"{label}: {msg!r}"
        TALLY.errors += 1
        TALLY.messages.append(msg)
    else:
        TALLY.values += 1
    return out


def is_err(x: Any) -> bool:
    return isinstance(x, LdpSimError)


def number(label: str, x: Any) -> float:
    """A float that is not NaN (inf allowed)."""
    v = float(x)
    assert not math.isnan(v), label
    return v


# --------------------------------------------------------------------------- catalog
def _catalog_cases() -> list[tuple[str, dict[str, Any]]]:
    """Every entry with an eps parameter at every edge eps (and delta), its other parameters
    at their defaults, or at its first contract case where the defaults do not describe the
    inputs (a utility's priors)."""
    cases = []
    for name, spec in TARGETS.items():
        if "eps" not in spec.params:
            continue  # matrix: its privacy is its matrix's
        base = {k: v for k, v in CASES[name][0].items() if k not in ("eps", "delta")} if name in NEEDS_CASE else {}
        for eps in EPS:
            for delta in DELTAS if "delta" in spec.params else [None]:
                params = {**base, "eps": eps} if delta is None else {**base, "eps": eps, "delta": delta}
                cases.append((name, params))
    return cases


@pytest.mark.parametrize("name, params", _catalog_cases(), ids=lambda x: str(x))
def test_catalog_mechanism_at_edge_values(name, params):
    spec_params = tuple(TARGETS[name].params)
    lab = f"{name}{params}"
    tg = call("build " + lab, lambda: target(name, **params), spec_params + ("scale", "sigma"))
    if is_err(tg):
        return
    eps = params["eps"]
    true_eps = number(lab, call("true_eps " + lab, lambda: tg.true_eps))
    assert true_eps >= 0
    if name in PURE_AT_EPS:
        assert true_eps == pytest.approx(eps, rel=1e-9), lab
    elif tg.broken:
        pass  # documented per class (e.g. 1/eps for the wrong Laplace scale): checked in the audit tests
    elif name in NO_PURE:  # delta(eps) > 0 for every eps
        assert true_eps == math.inf, lab
    else:  # chosen by a utility (optimal, better of binary and RR): eps-DP, maybe strictly
        assert true_eps <= eps * (1 + 1e-9), lab
    if tg.true_delta is not None:
        ds = [number(lab, call(f"true_delta({t}) " + lab, lambda t=t: tg.true_delta(t))) for t in (0.0, eps, 2 * eps)]
        assert all(0.0 <= d <= 1.0 for d in ds) and ds[0] >= ds[1] >= ds[2], (lab, ds)
        if not tg.broken:
            assert ds[1] <= tg.claimed_delta * (1 + 1e-9) + 1e-12, (lab, ds)  # the claim holds
    x = tg.pairs[0][0]
    out = call("sample " + lab, lambda: np.asarray(tg.sampler(x, 5, np.random.default_rng(1)), dtype=float))
    # svt_returns_value codes "all bottom" / "an earlier top" as -inf / +inf by design
    assert not np.any(np.isnan(out)) and (tg.broken or np.all(np.isfinite(out))), (lab, out)
    m = tg.mechanism
    if isinstance(m, NoiseMechanism):
        _check_noise(lab, m)


def _check_noise(lab: str, m: NoiseMechanism) -> None:
    std = number(lab, call("std " + lab, lambda: m.std))
    assert 0 < std < math.inf, lab
    var = call("variance " + lab, lambda: m.variance, ("eps", "scale", "sigma"))
    if not is_err(var):
        assert var == pytest.approx(std * std, rel=1e-9), lab
        assert call("mse " + lab, lambda: m.mse) == var
    e_small = number(lab, call("epsilon(1e-300) " + lab, lambda: m.epsilon(1e-300)))
    e_half = number(lab, call("epsilon(0.5) " + lab, lambda: m.epsilon(0.5)))
    assert 0.0 <= e_half <= e_small, lab  # non-increasing in delta
    for e, d in ((e_small, 1e-300), (e_half, 0.5)):
        if math.isfinite(e):
            assert float(m.delta(e)) <= d, (lab, e, d)
    noise = call("sample_noise " + lab, lambda: m.sample_noise(3, rng=2))
    assert np.all(np.isfinite(noise)), lab


# --------------------------------------------------------------------------- calibrations
def _calibration_cases():
    for cls in NOISE:
        for eps in EPS:
            for delta in [0.0] + DELTAS:
                for k in KS:
                    for method in ("exact", "corollary") if k > 1 else ("exact",):
                        yield cls, eps, delta, k, method


@pytest.mark.parametrize(
    "cls, eps, delta, k, method", list(_calibration_cases()), ids=lambda x: getattr(x, "__name__", str(x))
)
def test_calibration_at_edge_values(cls, eps, delta, k, method):
    lab = f"{cls.__name__}.calibrate({eps}, {delta}, compositions={k}, {method})"
    m = call(lab, lambda: cls.calibrate(eps, delta, 1.0, k, method), ("eps", "delta", "compositions", "method"))
    if is_err(m):
        return
    assert isinstance(m, cls)
    if k == 1:
        if cls.pure:
            assert float(m.epsilon(0.0)) <= eps * (1 + 1e-12), lab
        else:
            assert float(m.delta(eps)) <= delta, lab
    elif method == "corollary":
        eps0, delta0 = C.per_query_budget(eps, delta, k)
        if cls.pure:
            assert float(m.epsilon(0.0)) <= eps0 * (1 + 1e-12), lab
        else:
            assert float(m.delta(eps0)) <= delta0, lab
    elif cls is Gaussian:
        assert float(m.composed_delta(eps, k)) <= delta, lab
    else:
        e0 = float(m.epsilon(0.0))
        assert (k * e0 <= eps * (1 + 1e-12)) if delta == 0 else C.optimal_delta(e0, 0.0, k, eps) <= delta, lab
    _check_noise(lab, m)


@pytest.mark.parametrize("eps", EPS)
@pytest.mark.parametrize("delta", DELTAS + [0.5])
def test_gaussian_calibrations_at_edge_values(eps, delta):
    lab = f"({eps}, {delta})"
    a = call("analytic" + lab, lambda: Gaussian.analytic(eps, delta), ("eps", "delta"))
    if not is_err(a):
        assert float(a.delta(eps)) <= delta, lab
        # tight: 0.1% less noise breaks the target (mu-GDP delta increases with mu)
        assert float(Gaussian(a.sigma * 0.999).delta(eps)) > delta, lab
    c = call("classical" + lab, lambda: Gaussian.classical(eps, delta), ("eps", "delta"))
    if not is_err(c):
        assert eps < 1 and float(c.delta(eps)) <= delta, lab
        assert is_err(a) or c.sigma >= a.sigma, lab  # the analytic calibration is the tightest


# --------------------------------------------------------------------------- composition
def _composition_cases():
    for eps in EPS:
        for delta in [0.0] + DELTAS:
            for k in KS:
                yield eps, delta, k


@pytest.mark.parametrize("eps, delta, k", list(_composition_cases()))
def test_composition_at_edge_values(eps, delta, k):
    lab = f"({eps}, {delta}, compositions={k})"
    names = ("eps", "delta", "compositions", "delta_total", "eps_total", "eps, delta", "delta_slack", "form")
    floor = -math.expm1(k * math.log1p(-delta)) if delta < 1 else 1.0  # 1 - (1 - delta)^k
    grid = sorted({0.0, eps, k * eps / 2, k * eps})
    exact = call("optimal_delta" + lab, lambda: C.optimal_delta(eps, delta, k, grid), names)
    exact = np.asarray(exact, dtype=float)
    assert not np.any(np.isnan(exact)) and np.all((exact >= 0) & (exact <= 1)), lab
    assert np.all(np.diff(exact) <= 1e-15), (lab, exact)  # non-increasing in eps_total
    assert exact[-1] == pytest.approx(floor, rel=1e-9, abs=1e-300), lab  # at k eps only the lost mass
    for t in (1e-300, 0.5, 1.0):
        e = call(f"optimal_epsilon({t})" + lab, lambda t=t: C.optimal_epsilon(eps, delta, k, t), names)
        if is_err(e):
            assert t < floor, (lab, t, str(e))  # refused only below the unreachable floor
            continue
        e = number(lab, e)
        assert 0 <= e <= k * eps * (1 + 1e-12), (lab, t, e)
        assert C.optimal_delta(eps, delta, k, e) <= t * (1 + 1e-9), (lab, t, e)
    m = min(k, 200)
    het = call(
        "optimal_delta_heterogeneous" + lab,
        lambda: C.optimal_delta_heterogeneous([eps] * m, [delta], [0.0, eps]),
        names,
    )
    if not is_err(het):
        hom = C.optimal_delta(eps, delta, m, [0.0, eps])
        np.testing.assert_allclose(np.asarray(het, dtype=float), hom, rtol=1e-9, atol=1e-300, err_msg=lab)
    e_b, d_b = call("basic_bound" + lab, lambda: C.basic_bound(eps, delta, k))
    assert e_b == k * eps and d_b == min(1.0, k * delta), lab
    for ds in (1e-300, 1.0):
        for fn in (C.drv_bound, C.kov_bound):
            r = call(f"{fn.__name__}({ds})" + lab, lambda fn=fn, ds=ds: fn(eps, delta, k, ds), names)
            e_t, d_t = number(lab, r[0]), number(lab, r[1])
            assert 0 <= e_t <= k * eps and 0 <= d_t <= 1, (lab, r)
            # a valid bound: the exact optimum at e_t is no larger than the bound's delta
            assert C.optimal_delta(eps, delta, k, e_t) <= d_t * (1 + 1e-9) + 1e-300, (lab, fn.__name__, r)
    for name in C.BOUNDS:
        bd = call(f"bound_delta {name}" + lab, lambda name=name: C.bound_delta(name, eps, delta, k, grid), names)
        if is_err(bd):
            assert name == "kov_small_eps" and eps > C.SMALL_EPS_LIMIT, (lab, str(bd))
            continue
        bd = np.asarray(bd, dtype=float)
        assert not np.any(np.isnan(bd)) and np.all(bd >= exact * (1 - 1e-9)), (lab, name, bd, exact)
        be = call(
            f"bound_epsilon {name}" + lab,
            lambda name=name: C.bound_epsilon(name, eps, delta, k, [1e-300, 0.5, 1.0]),
            names,
        )
        be = np.asarray(be, dtype=float)
        assert not np.any(np.isnan(be)) and np.all(be[:-1] >= be[1:]), (lab, name, be)  # non-increasing in delta
    q = call("per_query_budget" + lab, lambda: C.per_query_budget(eps, delta, k), names)
    if not is_err(q):
        eps0, delta0 = q
        assert 0 < eps0 <= C.SMALL_EPS_LIMIT and delta0 == delta / (2 * k), (lab, q)


# --------------------------------------------------------------------------- finite constructors
@pytest.mark.parametrize("eps", EPS)
def test_finite_constructors_at_edge_values(eps):
    names = ("eps", "delta", "k", "T", "P0", "P1")
    makers = {
        "randomized_response(10^6)": lambda: randomized_response(10**6, eps),
        "truncated_geometric(50)": lambda: truncated_geometric(50, eps),
        "binary_for_priors": lambda: binary_mechanism_for_priors([0.7, 0.2, 0.1], [0.1, 0.2, 0.7], eps),
    }
    for lab, mk in makers.items():
        mech = call(f"{lab} at {eps}", mk, names)
        if is_err(mech):
            continue
        e = number(lab, call(f"{lab}.epsilon", lambda: mech.epsilon()))
        assert e == pytest.approx(eps, rel=1e-9), (lab, e)
        d = number(lab, call(f"{lab}.delta", lambda: mech.delta(eps / 2)))
        assert 0 <= d <= 1, lab
        out = call(f"{lab}.privatize", lambda: mech.privatize(np.zeros(5, dtype=np.int64), np.random.default_rng(3)))
        assert np.all((out >= 0) & (out < mech.m)), lab
    for delta in DELTAS:
        q = call(f"quaternary({eps}, {delta})", lambda delta=delta: quaternary_mechanism(eps, delta), names)
        if not is_err(q):
            assert float(q.delta(eps)) == pytest.approx(delta, rel=1e-9), (eps, delta)
            assert np.all(np.isfinite(q.matrix)) and np.allclose(q.matrix.sum(axis=1), 1.0)


def test_summary_of_the_edge_calls():
    """Runs last in this file: every call above returned a value or raised one LdpSimError."""
    assert TALLY.values + TALLY.errors > 0
    print(
        f"\nedge calls: {TALLY.values} values, {TALLY.errors} LdpSimError; slowest {TALLY.slowest:.2f} s "
        f"({TALLY.slowest_call})"
    )
