"""The public API at extreme values: hypothesis strategies for calls of every catalog entry
(built with parameters drawn from the ends of the doubles and the integers, then
``epsilon()``, ``delta(eps)`` and ``sample``) and of the privacy accounting
(``EpsDelta(...).compose(k).epsilon(delta)`` with k up to 10^18, ``optimal_delta``,
``shuffle_epsilon``, ``shuffle_delta``, ``mean_standard_error``), and the check each call
must pass.

:func:`guarded` accepts exactly: a value, or an :class:`~ldpsim.errors.LdpSimError` with a
one-line message. Any other exception (OverflowError, MemoryError, ZeroDivisionError, a
numpy error raised as one), a warning (numpy's floating-point warnings included), more than
``CALL_LIMIT`` seconds of CPU or ``WALL_LIMIT`` of wall time, or more than ``MEMORY_HEADROOM``
bytes of new address space fails. The checks of the values: never NaN; privacy parameters
non-negative, deltas in [0, 1]; inf only where it is the right answer (no pure eps, a delta
below the composition's floor).
"""

from __future__ import annotations

import math
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.catalog import CATALOG
from tests.sim.fuzz import Hang, _alarm
from tests.sim.fuzz_paths import memory_guard

CALL_LIMIT = 2.0  # seconds of CPU per call
WALL_LIMIT = 20  # seconds of wall time per call (a hang)
OUTCOMES: Counter = Counter()

EPS = [5e-324, 1e-300, 1e-12, 1e-6, 0.5, 1.0, 700.0, 710.0, 1e308, math.inf, math.nan]
DELTA = [0.0, 5e-324, 1e-300, 1e-12, 0.5, 1.0 - 1e-16, 1.0, math.nan]
SENSITIVITY = [5e-324, 1e-300, 1.0, 1e300, 2**62]
INTS = [0, 1, 2, 3, 64, 2**31, 2**63, -1]
PROB = [0.0, 5e-324, 0.5, 1.0 - 1e-16, 1.0, math.nan]
BOUNDS = [(-1.0, 1.0), (-1e300, 1e300), (0.0, 5e-324), (0.0, 1e300), (1.0, 1.0), (1.0, -1.0), (-math.inf, 0.0)]
COMPOSITIONS = [1, 2, 10**6, 10**9, 10**12, 10**18, 2**63]

#: catalog entries whose default parameters do not describe the inputs (priors needed)
PRIORS = {"eps": 1.0, "P0": [0.5, 0.3, 0.2], "P1": [0.2, 0.3, 0.5]}
NEEDS_PRIORS = {"optimal", "better_of_binary_and_rr"}


@dataclass(frozen=True)
class Call:
    """One call of the public API: what it is, and the function that makes it."""

    label: str
    fn: Callable[[], Any]

    def __repr__(self) -> str:
        return self.label


def guarded(label: str, fn: Callable[[], Any]) -> Any:
    """``fn()`` under the limits above; its value, or the LdpSimError it raised (checked:
    one line), or AssertionError."""
    import signal

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WALL_LIMIT)
    c0 = time.process_time()
    try:
        with warnings.catch_warnings(), memory_guard():
            warnings.simplefilter("error")
            out = fn()
    except LdpSimError as exc:
        out = exc
    except Hang:
        raise AssertionError(f"hang: {label} still running after {WALL_LIMIT} s") from None
    except Exception as exc:  # noqa: BLE001 - the finding
        raise AssertionError(f"traceback: {label}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    cpu = time.process_time() - c0
    assert cpu < CALL_LIMIT, f"slow: {label}: {cpu:.2f} s of CPU"
    if isinstance(out, LdpSimError):
        assert "\n" not in str(out) and str(out), f"{label}: the error is not one line: {str(out)!r}"
        OUTCOMES["refused"] += 1
    else:
        OUTCOMES["value"] += 1
    return out


def _number(label: str, x: Any, lo: float = 0.0, hi: float = math.inf) -> float:
    v = float(x)
    assert not math.isnan(v), f"NaN: {label}"
    assert lo <= v <= hi, f"out of range: {label} = {v!r}, expected in [{lo}, {hi}]"
    return v


# ----------------------------------------------------------------------------- catalog
def _param_value(draw, name: str, typ: type, params: dict[str, Any]) -> Any:
    if name in ("eps", "eps_permanent", "eps_instantaneous"):
        return draw(st.sampled_from(EPS))
    if name == "delta":
        return draw(st.sampled_from(DELTA))
    if name == "sensitivity":
        return draw(st.sampled_from([int(x) if typ is int else x for x in SENSITIVITY if typ is float or x >= 1]))
    if name in ("f", "p", "q") and typ is float:
        return draw(st.sampled_from(PROB))
    if name in ("bound", "T") and typ is float:
        return draw(st.sampled_from([0.0, 5e-324, 16.0, 1e300, -math.inf, math.nan]))
    if typ is int:
        return draw(st.sampled_from(INTS))
    if typ is float:
        return draw(st.sampled_from(EPS))
    return None  # objects (matrices, sets, priors): the defaults


@st.composite
def catalog_cases(draw) -> tuple[str, dict[str, Any]]:
    """A catalog entry and parameters at extremes (each parameter drawn or left at its
    default, each with probability one half)."""
    name = draw(st.sampled_from(sorted(n for n in CATALOG if n != "matrix")))
    entry = CATALOG[name]
    params: dict[str, Any] = dict(PRIORS) if name in NEEDS_PRIORS else {}
    for key, p in entry.params.items():
        if key in ("lo", "hi") or p.type is object or p.role in ("P0", "P1", "prior") or not draw(st.booleans()):
            continue
        if name in NEEDS_PRIORS and key == "k":
            continue  # implied by the priors
        value = _param_value(draw, key, p.type, params)
        if value is not None:
            params[key] = value
    if "lo" in entry.params and draw(st.booleans()):
        params["lo"], params["hi"] = draw(st.sampled_from(BOUNDS))
    return name, params


def check_catalog_case(case: tuple[str, dict[str, Any]], work: Any = None) -> str:
    """Build, then epsilon(), epsilon(1e-6), delta(eps) at three points and sample(x, n)."""
    name, params = case
    lab = f"{name}{params}"
    mech = guarded(f"build {lab}", lambda: CATALOG[name].build(**params))
    if isinstance(mech, LdpSimError):
        return "refused"
    e0 = guarded(f"{lab}.epsilon()", lambda: mech.epsilon())
    if not isinstance(e0, LdpSimError):
        _number(f"{lab}.epsilon()", e0)
    e6 = guarded(f"{lab}.epsilon(1e-6)", lambda: mech.epsilon(1e-6))
    if not isinstance(e6, LdpSimError):
        e6 = _number(f"{lab}.epsilon(1e-6)", e6)
        if not isinstance(e0, LdpSimError):
            assert e6 <= float(e0) * (1 + 1e-9) or math.isinf(float(e0)), (
                f"{lab}: epsilon(1e-6) = {e6} > epsilon(0) = {e0}"
            )
    eps = params.get("eps", 1.0)
    points = [0.0, 1.0] + ([eps] if isinstance(eps, float) and math.isfinite(eps) else [])
    for t in points:
        d = guarded(f"{lab}.delta({t})", lambda t=t: mech.delta(t))
        if not isinstance(d, LdpSimError):
            _number(f"{lab}.delta({t})", np.max(np.asarray(d, dtype=float)), 0.0, 1.0)
    pairs = guarded(f"{lab}.neighbours()", lambda: mech.neighbours())
    if isinstance(pairs, LdpSimError) or not pairs:
        return "value"
    x = pairs[0][0]
    for n in (1, 5):
        out = guarded(f"{lab}.sample({x!r}, {n})", lambda n=n: np.asarray(mech.sample(x, n, np.random.default_rng(1))))
        if isinstance(out, LdpSimError):
            continue
        if out.dtype.kind == "f":
            assert not np.any(np.isnan(out)), f"NaN: {lab}.sample({x!r}, {n}) = {out}"
            assert "broken" in CATALOG[name].tags or np.all(np.isfinite(out)), f"inf: {lab}.sample({x!r}, {n}) = {out}"
    return "value"


# ----------------------------------------------------------------------------- accounting
@st.composite
def privacy_cases(draw) -> Call:
    """One accounting call at extremes, with its check folded into the call."""
    from ldpsim.privacy import EpsDelta, optimal_delta
    from ldpsim.privacy.shuffle import shuffle_delta, shuffle_epsilon

    kind = draw(
        st.sampled_from(["compose", "optimal_delta", "shuffle_epsilon", "shuffle_delta", "mean_standard_error"])
    )
    eps, delta = draw(st.sampled_from(EPS)), draw(st.sampled_from(DELTA))
    k = draw(st.sampled_from(COMPOSITIONS))
    t = draw(st.sampled_from(DELTA))
    if kind == "compose":

        def fn() -> Any:
            g = guarded(f"EpsDelta({eps}, {delta})", lambda: EpsDelta(eps, delta))
            if isinstance(g, LdpSimError):
                return g
            c = guarded(f"EpsDelta({eps}, {delta}).compose({k})", lambda: g.compose(k))
            if isinstance(c, LdpSimError):
                return c
            e = guarded(f"EpsDelta({eps}, {delta}).compose({k}).epsilon({t})", lambda: c.epsilon(t))
            if not isinstance(e, LdpSimError):
                v = _number(f"compose({k}).epsilon({t})", e, 0.0)
                floor = 1.0 if delta >= 1 else -math.expm1(k * math.log1p(-delta))  # 1 - (1 - delta)^k
                if math.isinf(v):  # below the delta floor, or k eps past the largest double
                    assert t < floor or math.isinf(k * eps), (
                        f"compose({k}).epsilon({t}) = inf at ({eps}, {delta}), but the floor is {floor}"
                    )
                else:
                    assert v <= k * eps * (1 + 1e-9), f"compose({k}).epsilon({t}) = {v} > k eps"
            return e

        return Call(f"EpsDelta({eps!r}, {delta!r}).compose({k}).epsilon({t!r})", fn)
    if kind == "optimal_delta":
        total = draw(st.sampled_from([0.0, 5e-324, 1.0, 700.0, 1e308, math.inf, math.nan]))

        def fn() -> Any:
            d = guarded(f"optimal_delta({eps}, {delta}, {k}, {total})", lambda: optimal_delta(eps, delta, k, total))
            if not isinstance(d, LdpSimError):
                _number(f"optimal_delta({eps}, {delta}, {k}, {total})", d, 0.0, 1.0)
            return d

        return Call(f"optimal_delta({eps!r}, {delta!r}, {k}, {total!r})", fn)
    n = draw(st.sampled_from([1, 2, 10, 10**6, 10**9, 10**12, 2**63]))
    if kind == "shuffle_epsilon":

        def fn() -> Any:
            e = guarded(f"shuffle_epsilon({eps}, {n}, {t})", lambda: shuffle_epsilon(eps, n, t))
            if not isinstance(e, LdpSimError):
                _number(f"shuffle_epsilon({eps}, {n}, {t})", e, 0.0, eps)
            return e

        return Call(f"shuffle_epsilon({eps!r}, {n}, {t!r})", fn)
    if kind == "shuffle_delta":
        at = draw(st.sampled_from(EPS[:-1] + [0.0]))

        def fn() -> Any:
            d = guarded(f"shuffle_delta({eps}, {n}, {at})", lambda: shuffle_delta(eps, n, at))
            if not isinstance(d, LdpSimError):
                _number(f"shuffle_delta({eps}, {n}, {at})", d, 0.0, 1.0)
            return d

        return Call(f"shuffle_delta({eps!r}, {n}, {at!r})", fn)
    from ldpsim.analyst.means import mean_standard_error

    name = draw(st.sampled_from(sorted(n_ for n_, e in CATALOG.items() if "numeric" in e.tags)))
    lo, hi = draw(st.sampled_from(BOUNDS))
    answers = draw(st.sampled_from([[0.0], [lo, hi], [1e300], [math.nan], []]))
    size = draw(st.sampled_from([None, 1, 10**18]))

    def fn() -> Any:
        m = guarded(f"{name}(eps={eps}, lo={lo}, hi={hi})", lambda: CATALOG[name].build(eps=eps, lo=lo, hi=hi))
        if isinstance(m, LdpSimError):
            return m
        se = guarded(f"mean_standard_error({name}, {answers}, {size})", lambda: mean_standard_error(m, answers, size))
        if not isinstance(se, LdpSimError):
            _number(f"mean_standard_error({name}(eps={eps}, lo={lo}, hi={hi}), {answers}, {size})", se, 0.0)
        return se

    return Call(f"mean_standard_error({name}(eps={eps!r}, lo={lo!r}, hi={hi!r}), {answers!r}, n={size})", fn)


def check_privacy_case(call: Call, work: Any = None) -> str:
    out = call.fn()
    return "refused" if isinstance(out, LdpSimError) else "value"
