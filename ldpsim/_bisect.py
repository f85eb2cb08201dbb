"""Bisection on a monotone predicate, to the last floating-point step."""

from __future__ import annotations

from typing import Callable

from ldpsim.errors import LdpSimError


def smallest_ok(ok: Callable[[float], bool], lo: float, hi: float, iters: int = 400) -> float:
    """Smallest float t in (lo, hi] with ok(t) (ok monotone, ok(hi) True, ok(lo) False)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def largest_ok(ok: Callable[[float], bool], lo: float, hi: float, iters: int = 400) -> float:
    """Largest float t in [lo, hi) with ok(t) (ok monotone decreasing, ok(lo) True, ok(hi) False)."""
    return -smallest_ok(lambda t: ok(-t), -hi, -lo, iters)


def largest_ok_below(ok: Callable[[float], bool], x: float, what: str) -> float:
    """The largest float ``y <= x`` with ``ok(y)`` (``ok`` true on ``(0, y]``, false above),
    found by bracketing: steps down from ``x`` growing geometrically (``2^j`` ulps), then a
    bisection to the last float. At most about 120 + 60 calls of ``ok``, whatever the margin.
    ``what`` names the target in the error raised if no float in ``(0, x]`` passes."""
    if ok(x):
        return x
    hi, step = x, 2.0**-52
    for _ in range(1100):
        lo = x * (1.0 - step) if step < 0.5 else hi * 0.5
        if lo <= 0.0:
            break
        if ok(lo):
            return largest_ok(ok, lo, hi, iters=200)
        hi, step = lo, step * 2.0
    raise LdpSimError(f"calibrate: could not meet {what} (numerical failure)")  # pragma: no cover
