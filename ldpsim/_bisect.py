"""Bisection on a monotone predicate, to the last floating-point step."""

from __future__ import annotations

from typing import Callable


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
