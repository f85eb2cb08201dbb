"""Divergences between distributions and mutual information (docs/theory.md sec. 3).

Conventions: ``0 log 0 = 0``; a divergence that is infinite (mass where the reference
has none) is returned as ``inf``, never NaN.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim.errors import invalid


def _pair(p: ArrayLike, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = v.probability_vector(p, "p")
    b = v.probability_vector(q, "q", size=a.size)
    return a, b


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """``D_kl(p || q) = sum p log(p/q)`` in nats.

    Summed as ``sum q g((p - q)/q)`` with ``g(x) = (1 + x) log(1 + x) - x >= 0``, which equals
    ``sum p log(p/q)`` because both vectors sum to one: every term is non-negative and keeps
    its relative precision when p and q nearly agree (a series for small ``x``), so a
    divergence of 1e-22 between two marginals comes out right instead of drowning in the
    rounding of terms of size 1e-10 that cancel."""
    a, b = _pair(p, q)
    if np.any((b == 0) & (a > 0)):
        return float("inf")
    live = b > 0
    x = (a[live] - b[live]) / b[live]  # >= -1; p - q is exact where p and q are close
    return float(math.fsum((b[live] * _g(x)).tolist()))


#: Below this |x|, g(x) = (1 + x) log(1 + x) - x by its series (terms x^n / (n (n - 1)), n <= 12).
_SERIES_X = 1e-2


def _g(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(1 + x) log(1 + x) - x`` for x >= -1 (``g(-1) = 1``), accurate to a few ulps of g."""
    out = special.xlogy(1.0 + x, 1.0 + x) - x
    small = np.abs(x) < _SERIES_X
    if np.any(small):
        xs = x[small]
        series = np.zeros_like(xs)
        for n in range(12, 1, -1):  # Horner from the smallest term: sum_{n>=2} (-1)^n x^n / (n (n - 1))
            series = xs * (series + (-1.0) ** n / (n * (n - 1)))
        out[small] = xs * series
    return out


def tv_distance(p: ArrayLike, q: ArrayLike) -> float:
    """``||p - q||_TV = sum |p - q| / 2``."""
    a, b = _pair(p, q)
    return float(0.5 * np.sum(np.abs(a - b)))


def chi_square_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """``sum (p - q)^2 / q`` (inf when q = 0 < p)."""
    a, b = _pair(p, q)
    return float(np.sum(_ratio_terms((a - b) ** 2, b)))


def hellinger_squared(p: ArrayLike, q: ArrayLike) -> float:
    """Squared Hellinger distance in the f-divergence form ``sum (sqrt(p) - sqrt(q))^2``."""
    a, b = _pair(p, q)
    return float(np.sum((np.sqrt(a) - np.sqrt(b)) ** 2))


def f_divergence(
    p: ArrayLike, q: ArrayLike, f: Callable[[NDArray[np.float64]], NDArray[np.float64]], f_inf: float | None = None
) -> float:
    """``D_f(p || q) = sum_y q(y) f(p(y)/q(y))`` for a convex ``f`` with ``f(1) = 0``.

    Cells with ``q = 0 < p`` contribute ``p * f'(inf)`` where ``f'(inf) = lim f(t)/t``:
    give it as ``f_inf`` (``inf`` by default, and 0 cells never contribute).
    """
    a, b = _pair(p, q)
    return float(np.sum(perspective(f, a, b, f_inf)))


def perspective(f, a: NDArray[np.float64], c: NDArray[np.float64], f_inf: float | None = None) -> NDArray[np.float64]:
    """``c f(a / c)`` elementwise, with the limits ``a f'(inf)`` at ``c = 0`` and 0 at a = c = 0."""
    a = np.asarray(a, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    pos = c > 0
    out = np.zeros(np.broadcast(a, c).shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(pos, a / np.where(pos, c, 1.0), 1.0)
        vals = np.asarray(f(ratio), dtype=np.float64)
    out = np.where(pos, c * vals, out)
    slope = np.inf if f_inf is None else f_inf
    only_a = (~pos) & (a > 0)
    if np.any(only_a):
        out = np.where(only_a, a * slope, out)
    return out


def mutual_information(prior: ArrayLike, Q: ArrayLike) -> float:
    """``I(X; Y) = sum_{x,y} P(x) Q[x,y] log(Q[x,y] / M(y))`` with ``M = P^T Q``, in nats."""
    p = v.probability_vector(prior, "prior")
    q = np.asarray(getattr(Q, "matrix", Q), dtype=np.float64)
    if q.ndim != 2 or q.shape[0] != p.size:
        raise invalid("Q", f"a matrix of shape {q.shape}", f"{p.size} rows (one per input)")
    joint = p[:, None] * q
    marg = joint.sum(axis=0)
    return float(np.sum(special.rel_entr(joint, p[:, None] * marg[None, :])))


def _ratio_terms(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, 0.0))
