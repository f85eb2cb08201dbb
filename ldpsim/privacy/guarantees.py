"""Privacy guarantees as objects: an (eps, delta) pair, a delta(eps) curve, a trade-off
function beta(alpha), mu-GDP, or the exact law of a pair of output distributions.

Every guarantee answers the same three questions:

* ``delta(eps)``: the smallest delta such that the guarantee implies (eps, delta)-DP;
* ``epsilon(delta)``: the smallest eps with ``delta(eps) <= delta``;
* ``tradeoff(alpha)``: the symmetric trade-off function (lower boundary of the privacy
  region: the smallest type II error of any test of level alpha between neighbours).

The two descriptions are convex conjugates of each other (docs/theory.md sec. 1 and 8):
``delta(eps) = sup_alpha [1 - e^eps alpha - f(alpha)]`` and
``f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))``.
Where a closed form exists it is used (the (eps, delta) region, GDP, finite pairs, optimal
composition); a user-supplied curve or trade-off is converted numerically, as documented on
its class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize
from scipy.special import ndtr, ndtri

from .. import _validate as V
from .._bisect import smallest_ok
from ..errors import invalid
from . import composition as C
from .gdp import gdp_log_delta, largest_mu
from .pld import DiscretePLD, log1mexp, settle_up

Array = NDArray[np.float64]


def _alpha_array(alpha: ArrayLike) -> tuple[Array, bool]:
    a = np.asarray(alpha, dtype=np.float64)
    bad = np.isnan(a) | (a < 0) | (a > 1)
    if np.any(bad):
        raise invalid("alpha", float(a[bad].ravel()[0]), "a type I error in [0, 1]")
    return a, a.ndim == 0


def _eps_array(eps: ArrayLike) -> tuple[Array, bool]:
    e = np.asarray(eps, dtype=np.float64)
    bad = np.isnan(e) | (e < 0)
    if np.any(bad):
        raise invalid("eps", float(e[bad].ravel()[0]), "a number >= 0")
    return e, e.ndim == 0


def _out(x: Array, scalar: bool) -> Array | float:
    return float(x) if scalar else x


class Guarantee(ABC):
    """A privacy guarantee; see the module docstring. Subclasses set ``label``."""

    label: str

    # -- the delta(eps) view -------------------------------------------------
    @abstractmethod
    def log_delta(self, eps: ArrayLike) -> Array | float:
        """Natural log of :meth:`delta` (``-inf`` where delta is 0)."""

    def delta(self, eps: ArrayLike) -> Array | float:
        """Smallest delta such that the guarantee implies (eps, delta)-DP (vectorised)."""
        out = np.exp(self.log_delta(eps))
        return float(out) if np.ndim(out) == 0 else out

    def epsilon(self, delta: float) -> float:
        """Smallest eps >= 0 with ``delta(eps) <= delta`` (``inf`` if none)."""
        target = V.delta(delta, "delta")
        log_t = float(np.log(target)) if target > 0 else -np.inf

        def ok(e: float) -> bool:  # in logs: delta = 0 is reached only where log delta = -inf
            return bool(self.log_delta(e) <= log_t) and (target == 0 or self.delta(e) <= target)

        if ok(0.0):
            return 0.0
        hi = 1.0
        while not ok(hi):
            hi *= 2.0
            if hi > 1e6:
                return float("inf")
        return smallest_ok(ok, hi / 2 if hi > 1 else 0.0, hi, iters=200)  # delta is non-increasing

    # -- the trade-off view --------------------------------------------------
    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        """Symmetric trade-off function f(alpha), by conjugating :meth:`delta` (numerical:
        the supremum over eps is taken on the grid ``eps_grid()``; every line is a valid
        bound, so the result is at most the exact f, within the grid's resolution)."""
        a, scalar = _alpha_array(alpha)
        grid = self.eps_grid()
        grid = grid[grid <= 700.0]
        d = np.asarray(self.delta(grid), dtype=np.float64)
        e = np.exp(grid)
        flat = a.ravel()
        lines = np.maximum(1 - d[None, :] - e[None, :] * flat[:, None], (1 - d[None, :] - flat[:, None]) / e[None, :])
        out = np.maximum(0.0, lines.max(axis=1))
        return _out(out.reshape(a.shape), scalar)

    def eps_grid(self) -> Array:
        """The eps values used to conjugate a delta curve numerically."""
        top = max(1.0, self.epsilon(1e-12) if np.isfinite(self.epsilon(1e-12)) else 50.0)
        return np.concatenate([np.linspace(0.0, top, 2000), top * np.geomspace(1.0, 20.0, 200)[1:]])

    def region(self, n: int = 801) -> tuple[Array, Array, Array]:
        """Points for plotting the privacy region: alpha, its lower boundary f(alpha) and its
        upper boundary 1 - f(1 - alpha)."""
        a = np.unique(np.concatenate([np.linspace(0, 1, n), np.geomspace(1e-6, 1, n // 4)]))
        return a, np.asarray(self.tradeoff(a)), 1.0 - np.asarray(self.tradeoff(1.0 - a))

    def contains(self, other: "Guarantee", eps: ArrayLike | None = None, rtol: float = 1e-9) -> bool:
        """True if ``other`` is at least as private as ``self`` on an eps grid
        (``other.delta <= self.delta``), i.e. other's region lies inside self's."""
        grid = self.eps_grid() if eps is None else np.asarray(eps, dtype=np.float64)
        return bool(np.all(np.asarray(other.delta(grid)) <= np.asarray(self.delta(grid)) * (1 + rtol) + 1e-300))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"


# --------------------------------------------------------------------------- (eps, delta)
@dataclass(frozen=True, repr=False)
class EpsDelta(Guarantee):
    """(eps, delta)-DP. Its region is the quaternary mechanism's: exact in both views."""

    eps: float
    delta_: float = 0.0
    label: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.epsilon(self.eps))
        object.__setattr__(self, "delta_", V.delta(self.delta_))
        if not self.label:
            object.__setattr__(self, "label", f"({self.eps:g}, {self.delta_:g})-DP")

    def log_delta(self, eps: ArrayLike) -> Array | float:
        """``delta + (1 - delta)(e^eps0 - e^eps)/(1 + e^eps0)`` below eps0, delta above."""
        e, scalar = _eps_array(eps)
        e0, d0 = self.eps, self.delta_
        with np.errstate(divide="ignore"):
            log_d0 = np.log(d0)
            gap = e0 - e
            mid = np.full(e.shape, -np.inf)
            pos = gap > 0
            # (1-d0) e^e0 (1 - e^{-(e0-e)}) / (1 + e^e0) = (1-d0) (1 - e^{-gap}) / (1 + e^-e0)
            mid[pos] = np.log1p(-d0) + log1mexp(gap[pos]) - np.log1p(np.exp(-e0)) if d0 < 1 else -np.inf
            out = np.logaddexp(log_d0, mid)
        return _out(out, scalar)

    def delta(self, eps: ArrayLike) -> Array | float:
        e, scalar = _eps_array(eps)
        e0, d0 = self.eps, self.delta_
        gap = e0 - e
        mid = np.zeros(e.shape)
        pos = gap > 0
        if d0 < 1:
            mid[pos] = (1 - d0) * -np.expm1(-gap[pos]) / (1 + np.exp(-e0))
        return _out(np.minimum(1.0, d0 + mid), scalar)

    def epsilon(self, delta: float) -> float:
        t = V.delta(delta, "delta")
        if t < self.delta_:
            return float("inf")
        if self.delta_ >= 1 or self.delta(0.0) <= t:
            return 0.0
        if self.eps >= 700:
            return super().epsilon(t)
        # solve d0 + (1-d0)(e^e0 - e^x)/(1+e^e0) = t; here the argument of the log is > 1
        x = np.log(np.exp(self.eps) - (t - self.delta_) * (1 + np.exp(self.eps)) / (1 - self.delta_))
        x = float(min(max(x, 0.0), self.eps))
        return settle_up(x, lambda e: self.delta(e) <= t, self.eps)

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        """``max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))`` (docs/theory.md sec. 1)."""
        a, scalar = _alpha_array(alpha)
        e0, d0 = self.eps, self.delta_
        with np.errstate(over="ignore"):
            out = np.maximum.reduce([np.zeros_like(a), 1 - d0 - np.exp(e0) * a, np.exp(-e0) * (1 - d0 - a)])
        return _out(out, scalar)

    def compose(self, compositions: int) -> "OptimalComposition":
        """The exact ``compositions``-fold composition (Theorem 3.3 of Kairouz et al. 2015)."""
        return OptimalComposition(self.eps, self.delta_, compositions)


# --------------------------------------------------------------------------- optimal composition
@dataclass(frozen=True, repr=False)
class OptimalComposition(Guarantee):
    """The exact ``compositions``-fold (adaptive) composition of (eps, delta)-DP (Kairouz et al. 2015,
    Theorem 3.3)."""

    eps: float
    delta_: float
    compositions: int
    label: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.epsilon(self.eps))
        object.__setattr__(self, "delta_", V.delta(self.delta_))
        object.__setattr__(self, "compositions", V.integer(self.compositions, "compositions", minimum=1))
        if not self.label:
            object.__setattr__(self, "label", f"exact {self.compositions}-fold ({self.eps:g}, {self.delta_:g})")

    def log_delta(self, eps: ArrayLike) -> Array | float:
        return C.optimal_log_delta(self.eps, self.delta_, self.compositions, eps)

    def epsilon(self, delta: float) -> float:
        t = V.delta(delta, "delta")
        floor = float(-np.expm1(self.compositions * np.log1p(-self.delta_))) if self.delta_ < 1 else 1.0
        if t < floor:
            return float("inf")
        return float(C.optimal_epsilon(self.eps, self.delta_, self.compositions, t))

    def pld(self) -> DiscretePLD:
        """The loss law of the k-fold quaternary mechanism (binomial atoms at (k-2l) eps;
        atoms below e^-800 of the largest dropped: exact for the trade-off in doubles)."""
        return DiscretePLD.binomial(self.eps, self.delta_, self.compositions, trim=True)

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        """Exact: the trade-off polygon of the k-fold quaternary mechanism (symmetric)."""
        return self.pld().tradeoff(alpha)


# --------------------------------------------------------------------------- GDP
@dataclass(frozen=True, repr=False)
class GDP(Guarantee):
    """mu-Gaussian DP: trade-off ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)`` and
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (exact, log space)."""

    mu: float
    label: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        mu = V.epsilon(self.mu, "mu")
        object.__setattr__(self, "mu", mu)
        if not self.label:
            object.__setattr__(self, "label", f"{mu:g}-GDP")

    def log_delta(self, eps: ArrayLike) -> Array | float:
        e, scalar = _eps_array(eps)
        if self.mu == 0:
            return _out(np.full(e.shape, -np.inf), scalar)
        return _out(np.asarray(gdp_log_delta(e, self.mu), dtype=np.float64), scalar)

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        a, scalar = _alpha_array(alpha)
        return _out(ndtr(ndtri(1 - a) - self.mu), scalar)

    def compose(self, compositions: int) -> "GDP":
        """k-fold composition (k = ``compositions``): ``sqrt(k) mu``-GDP (exact)."""
        return GDP(self.mu * np.sqrt(V.integer(compositions, "compositions", minimum=1)))

    @staticmethod
    def composition(mus: ArrayLike) -> "GDP":
        """Composition of mu_i-GDP guarantees: ``sqrt(sum mu_i^2)``-GDP (exact)."""
        m = np.asarray(mus, dtype=np.float64)
        return GDP(float(np.sqrt(np.sum(m * m))))

    @staticmethod
    def for_delta(eps: float, delta: float) -> "GDP":
        """The largest mu whose delta(eps) is <= delta (the GDP calibration of a target)."""
        eps, delta = V.epsilon(eps), V.delta(delta)
        if delta <= 0:
            raise invalid("delta", delta, "a number in (0, 1] (mu-GDP with mu > 0 has delta(eps) > 0 for every eps)")
        if delta >= 1:
            raise invalid("delta", delta, "a number in (0, 1) (every mechanism meets delta = 1)")
        return GDP(largest_mu(eps, delta))


# --------------------------------------------------------------------------- pairs and curves
@dataclass(frozen=True, repr=False)
class PLDGuarantee(Guarantee):
    """The exact guarantee of one or more ordered pairs of discrete output laws.

    ``delta(eps)`` is the largest hockey-stick divergence over the pairs; the trade-off is the
    lower convex hull of all the pairs' trade-off polygons, whose conjugate is that same
    delta curve. Build it from two distributions (both orders are taken) or from a
    mechanism's pairs (:meth:`ldpsim.mechanisms.FiniteMechanism.guarantee`).
    """

    plds: tuple[DiscretePLD, ...]
    label: str = field(default="pair", compare=False)

    @classmethod
    def from_distributions(cls, p: ArrayLike, r: ArrayLike, label: str = "pair") -> "PLDGuarantee":
        pld = DiscretePLD.from_distributions(p, r)
        return cls((pld, pld.swap()), label)

    def log_delta(self, eps: ArrayLike) -> Array | float:
        out = np.maximum.reduce([np.asarray(p.log_delta(eps)) for p in self.plds])
        return float(out) if np.ndim(out) == 0 else out

    def epsilon(self, delta: float) -> float:
        return max(p.epsilon(delta) for p in self.plds)

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        a, scalar = _alpha_array(alpha)
        verts = [p.tradeoff_vertices() for p in self.plds]
        hx, hy = _lower_hull(np.concatenate([v[0] for v in verts]), np.concatenate([v[1] for v in verts]))
        return _out(np.interp(a, hx, hy), scalar)


def _lower_hull(x: Array, y: Array) -> tuple[Array, Array]:
    """Lower convex hull of points (monotone chain), returned sorted by x."""
    order = np.lexsort((y, x))
    pts: list[tuple[float, float]] = []
    for px, py in zip(x[order], y[order]):
        if pts and pts[-1][0] == px:
            continue  # keep the lowest y at a repeated x
        while len(pts) >= 2:
            (ax, ay), (bx, by) = pts[-2], pts[-1]
            if (bx - ax) * (py - ay) - (by - ay) * (px - ax) <= 0:
                pts.pop()
            else:
                break
        pts.append((float(px), float(py)))
    hx, hy = np.array(pts).T
    return hx, hy


@dataclass(frozen=True, repr=False)
class DeltaCurve(Guarantee):
    """A guarantee given by a callable ``delta(eps)`` (vectorised over numpy arrays), e.g.
    a mechanism's exact curve. The trade-off comes from the conjugate on an eps grid."""

    fn: Callable[[Array], Any]
    label: str = "delta(eps) curve"
    eps_max: float = 50.0

    def log_delta(self, eps: ArrayLike) -> Array | float:
        e, scalar = _eps_array(eps)
        with np.errstate(divide="ignore"):
            out = np.log(np.clip(np.asarray(self.fn(e), dtype=np.float64), 0.0, 1.0))
        return _out(out, scalar)

    def eps_grid(self) -> Array:
        return np.concatenate([np.linspace(0.0, self.eps_max, 4000)])


@dataclass(frozen=True, repr=False)
class TradeOff(Guarantee):
    """A guarantee given by a symmetric trade-off function ``f(alpha)`` (convex, continuous,
    non-increasing, f <= 1 - alpha). ``delta(eps) = sup_alpha 1 - e^eps alpha - f(alpha)`` is
    a concave maximisation, solved by a bounded scalar search per eps (alpha to ~1e-8
    relative, so delta may be understated by about that much: use the exact classes where
    they exist)."""

    fn: Callable[[Array], Any]
    label: str = "trade-off f"

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        a, scalar = _alpha_array(alpha)
        return _out(np.asarray(self.fn(a), dtype=np.float64), scalar)

    def log_delta(self, eps: ArrayLike) -> Array | float:
        e, scalar = _eps_array(eps)
        flat = e.ravel()
        out = np.empty(flat.shape)
        for j, x in enumerate(flat):
            s = float(np.exp(x))
            g = lambda a: -(1.0 - s * a - float(self.fn(np.array(a))))  # noqa: E731
            res = optimize.minimize_scalar(g, bounds=(0.0, min(1.0, 1.0 / s)), method="bounded", options={"xatol": 1e-13})
            best = max(-res.fun, -g(0.0), 0.0)
            out[j] = np.log(best) if best > 0 else -np.inf
        return _out(out.reshape(e.shape), scalar)


@dataclass(frozen=True, repr=False)
class MechanismGuarantee(Guarantee):
    """Wraps any object with exact ``delta(eps)`` and ``tradeoff(alpha)`` methods (the noise
    mechanisms), using both exactly."""

    mechanism: Any
    label: str = "mechanism"

    def log_delta(self, eps: ArrayLike) -> Array | float:
        if hasattr(self.mechanism, "log_delta"):
            return self.mechanism.log_delta(eps)
        with np.errstate(divide="ignore"):
            out = np.log(self.mechanism.delta(eps))
        return float(out) if np.ndim(out) == 0 else out

    def epsilon(self, delta: float) -> float:
        if hasattr(self.mechanism, "epsilon"):
            return float(self.mechanism.epsilon(delta))
        return super().epsilon(delta)

    def tradeoff(self, alpha: ArrayLike) -> Array | float:
        a, scalar = _alpha_array(alpha)
        return _out(np.asarray(self.mechanism.tradeoff(a), dtype=np.float64), scalar)
