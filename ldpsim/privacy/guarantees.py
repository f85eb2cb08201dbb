"""Privacy guarantees as objects: an (eps, delta) pair, a delta(eps) curve, a trade-off
function beta(alpha), mu-GDP, or the exact law of a pair of output distributions.

Every guarantee answers the same three questions:

* ``delta(eps)``: the smallest delta such that the guarantee implies (eps, delta)-DP;
* ``epsilon(delta)``: the smallest eps with ``delta(eps) <= delta``;
* ``tradeoff(alpha)``: the symmetric trade-off function (lower boundary of the privacy
  region: the smallest type II error of any test of level alpha between neighbours).

For composition every guarantee also gives :meth:`Guarantee.dominating_pld`: the privacy-loss
law of a pair of distributions whose trade-off function is at most the guarantee's (so the
pair is at least as informative as any mechanism meeting the guarantee, and composing such
pairs bounds the composition from above). It is exact (the trade-off is equal) for
:class:`EpsDelta`, :class:`OptimalComposition` and :class:`PLDGuarantee`; every other kind gets
the pessimistic grid discretisation :func:`grid_pld` of its exact delta curve
(:mod:`ldpsim.privacy.accountant` composes them).

The two descriptions are convex conjugates of each other (docs/theory.md sec. 1 and 8):
``delta(eps) = sup_alpha [1 - e^eps alpha - f(alpha)]`` and
``f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))``.
Where a closed form exists it is used (the (eps, delta) region, GDP, finite pairs, optimal
composition); a user-supplied curve or trade-off is converted numerically, as documented on
its class.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp, ndtr, ndtri

from .. import _validate as V
from .._bisect import smallest_ok
from .._deprecate import warn
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

    #: True where :meth:`dominating_pld` is exact (its trade-off function equals the
    #: guarantee's), False where it is the pessimistic grid discretisation.
    exact_pld: ClassVar[bool] = False

    # -- composition -----------------------------------------------------------
    def dominating_pld(self, step: float, eps_max: float) -> DiscretePLD:
        """The privacy-loss law (under P) of a symmetric pair (P, R) that dominates the
        guarantee: its trade-off function is <= the guarantee's everywhere, so its delta(eps)
        is >= the guarantee's at every eps and so is that of any composition built from it.

        Here (the default, for delta curves, trade-off functions, GDP and noise mechanisms):
        the pessimistic discretisation :func:`grid_pld` of :meth:`log_delta` on the grid
        ``0, step, 2 step, ...`` up to ``eps_max`` -- equal to the guarantee's delta at the
        grid points, linear in e^eps between them (above the exact curve, which is convex in
        e^eps), and ``delta(eps_max)`` from there on (an atom at infinite loss). Classes with an
        exact pair (:class:`EpsDelta`, :class:`OptimalComposition`, :class:`PLDGuarantee`)
        override it and ignore ``step`` and ``eps_max``."""
        return grid_pld(self.log_delta, step, eps_max)

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
            return bool(self.log_delta(e) <= log_t) and (target == 0 or bool(self.delta(e) <= target))

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
def _one_delta(delta: Any, delta_: Any) -> Any:
    """The delta given as ``delta=`` (documented) or as the field's own name ``delta_=``."""
    if delta is not None and delta_ is not None:
        raise invalid("delta", delta, "one of delta= and delta_= (the same parameter), not both")
    return delta if delta is not None else delta_


@dataclass(frozen=True, repr=False, init=False)
class EpsDelta(Guarantee):
    """(eps, delta)-DP. Its region is the quaternary mechanism's: exact in both views.

    ``EpsDelta(eps, delta=0.0, label="")``; the value is kept as ``delta_`` (``delta`` is
    the method ``delta(eps)``)."""

    eps: float
    delta_: float = 0.0
    label: str = field(default="", compare=False)

    def __init__(self, eps: float, delta: float | None = None, label: str = "", *, delta_: float | None = None) -> None:
        d = _one_delta(delta, delta_)
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "delta_", 0.0 if d is None else d)
        object.__setattr__(self, "label", label)
        self.__post_init__()

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
            # e^e0 overflows: the same equation divided by e^e0, 1 - e^(x - e0) = u (< 1 here,
            # as delta(0) > t). The generic doubling search it replaces gave up at eps 1e6
            # (inf for EpsDelta(1e308).epsilon(0), whose answer is 1e308)
            u = (t - self.delta_) * (1 + np.exp(-self.eps)) / (1 - self.delta_)
            x = self.eps + np.log1p(-u)
        else:
            # solve d0 + (1-d0)(e^e0 - e^x)/(1+e^e0) = t; here the argument of the log is > 1
            x = np.log(np.exp(self.eps) - (t - self.delta_) * (1 + np.exp(self.eps)) / (1 - self.delta_))
        x = float(min(max(x, 0.0), self.eps))
        return settle_up(x, lambda e: bool(self.delta(e) <= t), self.eps)

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

    exact_pld: ClassVar[bool] = True

    def dominating_pld(self, step: float = 0.0, eps_max: float = 0.0) -> DiscretePLD:
        """Exact: the quaternary mechanism's loss law (losses +-eps, delta at +-infinity)."""
        return DiscretePLD.binomial(self.eps, self.delta_, 1).merged()


# --------------------------------------------------------------------------- optimal composition
@dataclass(frozen=True, repr=False, init=False)
class OptimalComposition(Guarantee):
    """The exact ``compositions``-fold (adaptive) composition of (eps, delta)-DP (Kairouz et al. 2015,
    Theorem 3.3).

    ``OptimalComposition(eps, delta, compositions, label="")``; ``k=`` is the old spelling
    of ``compositions`` (a deprecation warning; it goes away in 0.2), and the delta is kept
    as ``delta_`` (``delta`` is the method ``delta(eps)``)."""

    eps: float
    delta_: float
    compositions: int
    label: str = field(default="", compare=False)

    def __init__(
        self,
        eps: float,
        delta: float | None = None,
        compositions: int | None = None,
        label: str = "",
        *,
        delta_: float | None = None,
        k: int | None = None,
    ) -> None:
        d = _one_delta(delta, delta_)
        if k is not None:
            if compositions is not None:
                raise invalid("k", k, "compositions= alone (k= is its old spelling)")

            warn("OptimalComposition(k=...) is deprecated since 0.1; use compositions= (k goes away in 0.2)")
            compositions = k
        if d is None or compositions is None:
            missing = "delta" if d is None else "compositions"
            raise invalid(missing, None, f"the {missing} of OptimalComposition(eps, delta, compositions)")
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "delta_", d)
        object.__setattr__(self, "compositions", compositions)
        object.__setattr__(self, "label", label)
        self.__post_init__()

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", V.epsilon(self.eps))
        object.__setattr__(self, "delta_", V.delta(self.delta_))
        object.__setattr__(self, "compositions", C.exact_compositions(self.compositions))
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

    exact_pld: ClassVar[bool] = True

    def dominating_pld(self, step: float = 0.0, eps_max: float = 0.0) -> DiscretePLD:
        """Exact: :meth:`pld`."""
        return self.pld().merged()


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

    exact_pld: ClassVar[bool] = True

    def dominating_pld(self, step: float = 0.0, eps_max: float = 0.0) -> DiscretePLD:
        """Exact: one symmetric pair whose trade-off is the lower convex hull of all the
        pairs' trade-off polygons, both orders (:func:`hull_pld`). Its delta(eps) is the
        guarantee's for eps >= 0 (when the pairs come in both orders, as a mechanism's do)."""
        return hull_pld(self.plds)


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
            g = lambda a: -(1.0 - s * a - float(self.fn(np.array(a))))
            from scipy import (
                optimize,
            )  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

            res = optimize.minimize_scalar(
                g, bounds=(0.0, min(1.0, 1.0 / s)), method="bounded", options={"xatol": 1e-13}
            )
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


# --------------------------------------------------------------------------- dominating pairs
MAX_GRID = 4_000_000
"""Largest number of grid points :func:`grid_pld` evaluates (eps_max / step)."""


def _log_slope(ea: Array, la: Array, eb: Array, lb: Array) -> Array:
    """``log |slope|`` of the chord from ``(e^ea, e^la)`` to ``(e^eb, e^lb)`` (``ea < eb``,
    ``la >= lb``): ``log(d_a - d_b) - log(e^eb - e^ea)``, in logs (e^eps overflows at 710)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(np.isneginf(lb), np.inf, la - lb)
        num = np.where(np.isneginf(la), -np.inf, la + log1mexp(np.maximum(gap, 0.0)))
        x = np.asarray(eb - ea, dtype=np.float64)
        log_expm1 = np.where(x < 1.0, np.log(np.expm1(np.minimum(x, 1.0))), x + log1mexp(np.maximum(x, 1.0)))
        return num - ea - log_expm1


def _convex_vertices(eps: Array, ld: Array) -> NDArray[np.integer[Any]]:
    """Indices of the lower convex hull of the points ``(e^eps_i, delta_i)`` (first and last
    included): where the chord slopes fail to flatten (a curve not convex in e^eps, or
    rounding), the points above the hull are dropped. Each pass drops every point that lies
    on or above the chord of its current neighbours (never a hull vertex), vectorised."""
    v = np.arange(eps.size)
    while v.size > 2:
        lam = _log_slope(eps[v[:-1]], ld[v[:-1]], eps[v[1:]], ld[v[1:]])
        bad = lam[1:] >= lam[:-1]  # the middle point of two chords that do not flatten
        if not np.any(bad):
            break
        v = np.concatenate([v[:1], v[1:-1][~bad], v[-1:]])
    return v


def _symmetric(loss: Array, log_p: Array, p_inf: float, what: str, zero: float | None = None) -> DiscretePLD:
    """The symmetric loss law with the positive atoms ``(loss, log_p)``: mirrored atoms at
    ``-loss`` with P-mass ``p e^-loss``, the rest of the mass (``zero``, if the caller has
    it more accurately than ``1 - sum``) at loss 0, and ``p_inf`` at both infinities."""
    log_r = log_p - loss
    with np.errstate(under="ignore"):
        used = p_inf + float(np.exp(logsumexp(log_p)) + np.exp(logsumexp(log_r))) if loss.size else p_inf
    if zero is None or 1.0 - used < -1e-9:
        zero = 1.0 - used
    if zero < -1e-9:
        raise invalid(
            what,
            f"positive losses carrying mass {used:.12g}",
            "at most 1: this is no privacy profile of a pair of distributions",
        )
    log_zero = np.log(zero) if zero > 0 else -np.inf
    return DiscretePLD.from_atoms(
        np.concatenate([-loss[::-1], [0.0], loss]),
        np.concatenate([log_r[::-1], [log_zero], log_p]),
        min(1.0, p_inf),
        min(1.0, p_inf),
    )


def grid_pld(log_delta: Callable[[Array], Any], step: float, eps_max: float) -> DiscretePLD:
    """Pessimistic discretisation of a symmetric guarantee from its delta curve
    ("connect the dots", Doroshenko et al. 2022).

    On the grid ``eps_j = j step`` (j = 0..m, ``m = ceil(eps_max / step)``) take the values
    ``d_j = delta(eps_j)``. The exact curve, as a function of ``s = e^eps``, is convex and
    non-increasing; the piecewise-linear interpolation ``D(s)`` of the points ``(e^eps_j, d_j)``
    (constant ``d_m`` beyond the last) lies above it and is itself the delta curve of the
    symmetric pair with

    * a loss atom at each ``eps_j`` (j >= 1) with R-mass ``r_j`` = the drop of ``|D'|`` at
      ``e^eps_j`` and P-mass ``p_j = e^eps_j r_j``; in terms of the differences
      ``g_j = d_j - d_{j+1}``: ``p_j = (e^step g_{j-1} - g_j) / (e^step - 1)``;
    * mirrored atoms at ``-eps_j`` (P-mass ``r_j``), ``d_m`` at +-infinity, and the rest of
      the mass at loss 0.

    So ``P(L > eps_i) - e^eps_i R(L > eps_i) = d_i`` at every grid point, the pair's trade-off
    ``max(0, max_j 1 - d_j - e^eps_j alpha, max_j e^-eps_j (1 - d_j - alpha))`` is the
    envelope of supporting lines of the exact one, hence below it (pessimistic), and between
    grid points delta is overstated by at most the chord gap (second order in the step).
    Computed in logs (eps into the hundreds, delta below 1e-300). A curve that is not
    non-increasing or not convex in e^eps (a bound, say) is replaced by the largest
    privacy profile below it: the running minimum, then the lower convex hull.
    """
    h = float(step) if isinstance(step, (int, float, np.floating, np.integer)) else float("nan")
    if not (np.isfinite(h) and h > 0):
        raise invalid("step", step, "a number > 0 (the grid spacing in eps)")
    e_max = float(eps_max) if isinstance(eps_max, (int, float, np.floating, np.integer)) else float("nan")
    if not (np.isfinite(e_max) and e_max >= 0):
        raise invalid("eps_max", eps_max, "a finite number >= 0 (the end of the eps grid)")
    m = max(1, int(np.ceil(e_max / h - 1e-9)))
    if m > MAX_GRID:
        raise invalid("step", h, f"a step >= eps_max / {MAX_GRID:,} = {e_max / MAX_GRID:.3g} (eps_max = {e_max:g})")
    eps = np.arange(m + 1, dtype=np.float64) * h
    ld = np.asarray(log_delta(eps), dtype=np.float64).reshape(-1)
    if ld.shape != eps.shape or np.any(np.isnan(ld)):
        raise invalid(
            "delta", "NaN or a wrong shape", "a delta(eps) curve with a value in [0, 1] at every eps of the grid"
        )
    ld = np.minimum.accumulate(np.minimum(ld, 0.0))
    flat = int(np.argmax(ld == ld[-1]))  # delta is constant (= d_m) from here on
    eps, ld = eps[: flat + 1], ld[: flat + 1]
    p_inf = float(np.exp(ld[-1]))
    if flat == 0:
        return _symmetric(np.empty(0), np.empty(0), p_inf, "delta")
    # delta = 1 (to rounding) on a first stretch: the hull goes from eps = 0 straight past it
    top = int(np.argmax(ld < ld[0]))
    if top > 1:
        eps, ld = np.concatenate([eps[:1], eps[top - 1 :]]), np.concatenate([ld[:1], ld[top - 1 :]])
    v = _convex_vertices(eps, ld)
    lam = _log_slope(eps[v[:-1]], ld[v[:-1]], eps[v[1:]], ld[v[1:]])  # into vertices v[1:]
    lam_out = np.append(lam[1:], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_r = lam + log1mexp(np.where(np.isneginf(lam_out), np.inf, lam - lam_out))
    loss = eps[v[1:]]
    keep = np.isfinite(log_r)
    # the mass at loss 0 is 1 - d_0 - 2 sum r_j (P and R both lose sum r_j to the mirrored
    # atoms and d_0 + sum r_j to the positive ones), and sum r_j = |first chord slope|: no
    # cancellation against 1 where that mass is tiny (a very informative mechanism)
    zero = max(0.0, float(-np.expm1(ld[0])) - 2.0 * float(np.exp(lam[0])))
    return _symmetric(loss[keep], log_r[keep] + loss[keep], p_inf, "delta", zero)


def _pair_points(q: DiscretePLD) -> tuple[Array, Array, Array, Array]:
    """The part of the trade-off polygon of one pair right of its slope -1 vertex, in the
    coordinates ``X = 1 - alpha`` (the P-mass of the atoms not yet rejected) and
    ``Y = beta``: ``(log X_i, log Y_i)`` for i = 0..n, X_i = p_inf + sum_{l >= i} p_l and
    Y_i = sum_{l >= i} r_l over the n positive-loss atoms; also the atoms themselves."""
    pos = q.loss > 0
    loss, log_p = q.loss[pos], q.log_p[pos]
    log_r = log_p - loss
    log_pinf = np.log(q.p_inf) if q.p_inf > 0 else -np.inf
    if loss.size:
        tail_p = np.logaddexp.accumulate(log_p[::-1])[::-1]
        tail_r = np.logaddexp.accumulate(log_r[::-1])[::-1]
    else:
        tail_p = tail_r = np.empty(0)
    lx = np.append(np.logaddexp(tail_p, log_pinf), log_pinf)
    ly = np.append(tail_r, -np.inf)
    return lx, ly, loss, log_p


def hull_pld(plds: Any) -> DiscretePLD:
    """One symmetric pair whose trade-off function is the lower convex hull of the trade-off
    polygons of ``plds`` and of their swaps, so its delta(eps) is the largest of theirs at
    every eps >= 0: exact where no single pair dominates the others.

    A convex piecewise-linear trade-off with vertices (alpha_i, beta_i) is the trade-off of
    the pair whose outcomes are its segments, with P-mass ``alpha_{i+1} - alpha_i`` and
    R-mass ``beta_i - beta_{i+1}`` (a Neyman-Pearson test rejects P on the steepest segments
    first; Dong, Roth and Su 2022). By symmetry only the segments of slope in (-1, 0]
    (positive losses) are built: from the hull of the pairs' vertices in the coordinates
    ``(1 - alpha, beta)``, both kept as tail sums so that small masses keep their relative
    precision. A hull segment that is one pair's own edge keeps that pair's atoms exactly;
    a bridge between two pairs becomes one atom. The rest is mirrored (:func:`_symmetric`)."""
    uniq: dict[tuple[bytes, bytes, float, float], DiscretePLD] = {}
    for q in plds:
        for r in (q, q.swap()):
            uniq.setdefault((r.loss.tobytes(), r.log_p.tobytes(), r.p_inf, r.r_inf), r)
    pairs = list(uniq.values())
    if not pairs:
        raise invalid("plds", "nothing", "at least one loss law")
    lxs, lys, tags, atoms = [np.array([-np.inf])], [np.array([-np.inf])], [np.array([[-1, 0]])], []
    for j, q in enumerate(pairs):
        lx, ly, loss, log_p = _pair_points(q)
        lxs.append(lx)
        lys.append(ly)
        tags.append(np.stack([np.full(lx.size, j), np.arange(lx.size)], axis=1))
        atoms.append((loss, log_p))
    lx, ly, tag = np.concatenate(lxs), np.concatenate(lys), np.concatenate(tags)
    x, y = np.exp(lx), np.exp(ly)
    order = np.lexsort((y, x))
    hull: list[int] = []
    for k in order:
        if hull and x[hull[-1]] == x[k]:
            continue  # the lowest Y at a repeated X (sorted first)
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (x[b] - x[a]) * (y[k] - y[a]) - (y[b] - y[a]) * (x[k] - x[a]) <= 0:
                hull.pop()
            else:
                break
        hull.append(int(k))
    out_loss: list[Array] = []
    out_logp: list[Array] = []
    p_inf = 0.0
    for u, w in itertools.pairwise(hull):
        if y[w] == 0.0 and y[u] == 0.0:  # along beta = 0: mass where R = 0
            p_inf = float(x[w])
            continue
        ju, iu = tag[u]
        jw, iw = tag[w]
        if ju == jw and ju >= 0:  # an edge of one pair's polygon: its own atoms iw..iu-1
            loss, log_p = atoms[ju]
            out_loss.append(loss[iw:iu])
            out_logp.append(log_p[iw:iu])
        else:  # a bridge between two pairs: one atom
            with np.errstate(divide="ignore"):
                lp = lx[w] + (log1mexp(np.array(lx[w] - lx[u])) if np.isfinite(lx[u]) else 0.0)
                lr = ly[w] + (log1mexp(np.array(ly[w] - ly[u])) if np.isfinite(ly[u]) else 0.0)
            # rounding of the two differences: a slope -1 bridge must not pass for a loss > 0
            tol = 4e-16 * (x[w] / (x[w] - x[u]) + y[w] / (y[w] - y[u])) if y[w] > y[u] else 0.0
            if not lp - lr > tol:
                break  # slope -1 or steeper: the mirrored half
            out_loss.append(np.array([float(lp - lr)]))
            out_logp.append(np.array([float(lp)]))
    loss = np.concatenate(out_loss) if out_loss else np.empty(0)
    log_p = np.concatenate(out_logp) if out_logp else np.empty(0)
    order = np.argsort(loss, kind="stable")
    return _symmetric(loss[order], log_p[order], p_inf, "plds")
