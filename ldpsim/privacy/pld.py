"""Exact privacy-loss distributions of pairs of discrete distributions.

For a pair of output laws (P, R) the privacy loss of an outcome y is ``L(y) = log P(y)/R(y)``.
Everything about the pair's privacy is a function of the law of L under P:

* ``delta(eps) = E_{e^eps}(P || R) = p_inf + sum_i p_i (1 - e^{eps - L_i})_+``, where ``p_inf``
  is the P-mass of outcomes impossible under R (the hockey-stick divergence, docs/theory.md sec. 1);
* the trade-off function ``T[P, R]`` (type II error of the best test at each type I error):
  the Neyman-Pearson tests reject P on the outcomes with the smallest loss first, so its
  graph is the polygon through the cumulative masses of the atoms sorted by loss;
* composition (product distributions) adds independent losses: atoms convolve.

A :class:`DiscretePLD` keeps the atoms in log space (losses and log P-masses, R-masses being
``p_i e^{-L_i}``) so that products of millions of factors neither overflow nor underflow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from .. import _validate as V
from .._bisect import smallest_ok
from ..errors import invalid
from ._binom import log_pmf

MAX_ATOMS = 5_000_000
"""Largest number of atoms a composition may build (about 80 MB of float64 pairs)."""


def log1mexp(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(1 - e^{-x})`` for x > 0, accurate at both ends (Maechler 2012)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(x < np.log(2.0), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))


def _as_eps_array(eps: ArrayLike, name: str = "eps") -> tuple[NDArray[np.float64], bool]:
    arr = np.asarray(eps, dtype=np.float64)
    if arr.size and (np.any(np.isnan(arr)) or np.any(arr < 0)):
        bad = arr[np.isnan(arr) | (arr < 0)].ravel()[0]
        raise invalid(name, float(bad), "a number >= 0")
    return arr, arr.ndim == 0


def settle_up(x: float, ok: Callable[[float], bool], hi: float) -> float:
    """The smallest float >= x (to bisection accuracy) with ``ok``, given ``ok(hi)`` and a
    monotone ``ok``: a closed-form answer rounded the wrong way is moved up by 1, 2, 4, ...
    ulps until ``ok`` holds, then bisected back (O(log) calls however far off it was; it used
    to walk 64 single ulps before bisecting all of [x, hi])."""
    if ok(x):
        return x
    lo = x
    ulp = float(np.nextafter(x, np.inf)) - x if x > 0 else 5e-324
    for j in range(1100):  # steps of 1, 2, 4, ... ulps up from x, then bisection: O(log) calls
        x = lo + ulp * 2.0**j
        if x >= hi:
            return smallest_ok(ok, lo, hi, iters=200)
        if ok(x):
            return smallest_ok(ok, lo, x, iters=200)
        lo = x
    return smallest_ok(ok, lo, hi, iters=200)  # pragma: no cover


def _union(a: float, b: float) -> float:
    """``1 - (1 - a)(1 - b)`` without losing small a, b to rounding."""
    if a >= 1 or b >= 1:
        return 1.0
    return float(-np.expm1(np.log1p(-a) + np.log1p(-b)))


@dataclass(frozen=True)
class DiscretePLD:
    """The privacy-loss law of a pair (P, R) of discrete distributions.

    ``loss[i]`` are the finite losses ``log P/R`` (sorted ascending), ``log_p[i]`` the log
    P-masses of those outcomes, ``p_inf`` the P-mass where R = 0 and ``r_inf`` the R-mass
    where P = 0. Build one with :meth:`from_distributions` or :meth:`from_atoms`.
    """

    loss: NDArray[np.float64]
    log_p: NDArray[np.float64]
    p_inf: float = 0.0
    r_inf: float = 0.0

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_atoms(cls, loss: ArrayLike, log_p: ArrayLike, p_inf: float = 0.0, r_inf: float = 0.0) -> "DiscretePLD":
        loss = np.asarray(loss, dtype=np.float64).ravel()
        log_p = np.asarray(log_p, dtype=np.float64).ravel()
        if loss.shape != log_p.shape:
            raise invalid("log_p", f"shape {log_p.shape}", f"the shape of loss {loss.shape}")
        if not np.all(np.isfinite(loss)):
            raise invalid("loss", "a non-finite loss", "finite losses (put infinite ones in p_inf / r_inf)")
        keep = np.isfinite(log_p)
        order = np.argsort(loss[keep], kind="stable")
        return cls(loss[keep][order], log_p[keep][order], V.delta(p_inf, "p_inf"), V.delta(r_inf, "r_inf"))

    @classmethod
    def from_distributions(cls, p: ArrayLike, r: ArrayLike) -> "DiscretePLD":
        """The loss law of ``P`` against ``R`` (two probability vectors on the same outcomes)."""
        p = V.probability_vector(p, "p")
        r = V.probability_vector(r, "r", size=p.size)
        both = (p > 0) & (r > 0)
        with np.errstate(divide="ignore"):
            loss = np.log(p[both]) - np.log(r[both])
            log_p = np.log(p[both])
        p_inf = float(min(1.0, p[(p > 0) & (r == 0)].sum()))
        r_inf = float(min(1.0, r[(r > 0) & (p == 0)].sum()))
        return cls.from_atoms(loss, log_p, p_inf, r_inf)

    @classmethod
    def binomial(cls, eps: float, delta: float, compositions: int, trim: bool = False) -> "DiscretePLD":
        """The k-fold product (k = ``compositions``) of the quaternary (eps, delta) mechanism:
        atoms at (k - 2l) eps.

        ``trim=True`` drops atoms below e^-800 of the largest (invisible in doubles, so the
        trade-off curve is unchanged) and works for any k; without it every atom is kept
        (exact log-space deltas far below 1e-300) and k + 1 <= MAX_ATOMS."""
        eps = V.epsilon(eps)
        delta = V.delta(delta)
        k = V.integer(compositions, "compositions", minimum=1)
        log_q = -eps - np.log1p(np.exp(-eps))  # P(loss -eps) = 1/(1+e^eps)
        log_1mq = -np.log1p(np.exp(-eps))
        if trim:
            # atoms below e^-800 of the largest change no double of the trade-off curve:
            # keep only the O(sqrt k) central ones (k in the millions and beyond)
            q = float(np.exp(log_q))
            half = 60.0 * np.sqrt(k * q * (1 - q)) + 60.0
            lo, hi = int(max(0, np.floor(k * q - half))), int(min(k, np.ceil(k * q + half)))
        else:
            lo, hi = 0, k
        if hi - lo + 1 > MAX_ATOMS:
            raise invalid(
                "compositions", k, f"a loss law with at most max_atoms = {MAX_ATOMS} atoms (here {hi - lo + 1:,})"
            )
        l = np.arange(lo, hi + 1, dtype=np.float64)
        log_keep = k * np.log1p(-delta) if delta < 1 else -np.inf
        with np.errstate(over="ignore"):  # eps ~ 1e308: l log q and (k - 2l) eps beyond the doubles
            log_p = log_pmf(l, k, log_q, log_1mq) + log_keep
            loss = (k - 2 * l) * eps
        if trim:
            keep = log_p >= log_p.max() - 800.0
            l, log_p, loss = l[keep], log_p[keep], loss[keep]
        a = float(-np.expm1(k * np.log1p(-delta))) if delta < 1 else 1.0
        # a loss beyond the doubles tells the pair apart outright, as an infinite one does (e^-loss
        # is 0): its P-mass (loss +inf) joins p_inf, its R-mass (-inf; b(l; q) e^-((k - 2l) eps)
        # = b(l; 1 - q)) r_inf
        up, down = loss == np.inf, loss == -np.inf
        p_inf, r_inf = a, a
        if np.any(up):
            p_inf = min(1.0, a + float(np.sum(np.exp(log_p[up]))))
        if np.any(down):
            with np.errstate(over="ignore"):
                log_r = log_pmf(l[down], k, log_1mq, log_q) + log_keep
            r_inf = min(1.0, a + float(np.sum(np.exp(log_r))))
        finite = ~(up | down)
        return cls.from_atoms(loss[finite], log_p[finite], p_inf, r_inf)

    # ----------------------------------------------------------------- queries
    @property
    def log_r(self) -> NDArray[np.float64]:
        """Log R-masses of the finite atoms."""
        return self.log_p - self.loss

    def swap(self) -> "DiscretePLD":
        """The loss law of R against P."""
        return DiscretePLD.from_atoms(-self.loss, self.log_r, self.r_inf, self.p_inf)

    def log_delta(self, eps: ArrayLike) -> NDArray[np.float64] | float:
        """``log E_{e^eps}(P || R)`` (``-inf`` where it is exactly 0), vectorised over eps >= 0."""
        arr, scalar = _as_eps_array(eps)
        flat = arr.ravel()
        out: NDArray[np.float64] = np.full(flat.shape, -np.inf)
        # atoms above each eps: loss sorted ascending
        starts = np.searchsorted(self.loss, flat, side="right")
        for j, (e, s) in enumerate(zip(flat, starts)):
            terms = self.log_p[s:] + log1mexp(self.loss[s:] - e)
            mid = logsumexp(terms) if terms.size else -np.inf
            out[j] = min(0.0, np.logaddexp(np.log(self.p_inf) if self.p_inf > 0 else -np.inf, mid))
        out = out.reshape(arr.shape)
        return float(out) if scalar else out

    def delta(self, eps: ArrayLike) -> NDArray[np.float64] | float:
        """The hockey-stick divergence ``E_{e^eps}(P || R)``, the smallest delta at eps
        (``p_inf`` plus the atoms' part, so that it is exactly ``p_inf`` above every loss)."""
        arr, scalar = _as_eps_array(eps)
        flat = arr.ravel()
        starts = np.searchsorted(self.loss, flat, side="right")
        out: NDArray[np.float64] = np.empty(flat.shape)
        for j, (e, s) in enumerate(zip(flat, starts)):
            terms = self.log_p[s:] + log1mexp(self.loss[s:] - e)
            out[j] = min(1.0, self.p_inf + (float(np.exp(logsumexp(terms))) if terms.size else 0.0))
        out = out.reshape(arr.shape)
        return float(out) if scalar else out

    def epsilon(self, delta: float) -> float:
        """Smallest eps >= 0 with ``delta(eps) <= delta`` (exact: delta is piecewise
        ``A - e^eps B`` between consecutive losses). ``inf`` if no eps reaches it."""
        target = V.delta(delta, "delta")
        if target < self.p_inf:
            return float("inf")
        if self.delta(0.0) <= target or not np.any(self.loss > 0):
            return 0.0
        # delta(eps) on (L_{j-1}, L_j] uses the atoms j, j+1, ...: A_j - e^eps B_j.
        pos = self.loss > 0
        loss, log_p = self.loss[pos], self.log_p[pos]
        log_target = np.log(target) if target > 0 else -np.inf
        lo, hi = 0, loss.size - 1  # delta(loss[-1]) = p_inf <= target
        while lo < hi:  # first j with delta(loss[j]) <= target (delta decreases)
            mid = (lo + hi) // 2
            if self.log_delta(float(loss[mid])) <= log_target:
                hi = mid
            else:
                lo = mid + 1
        j = lo
        lower = float(loss[j - 1]) if j > 0 else 0.0
        log_a = np.logaddexp(logsumexp(log_p[j:]), np.log(self.p_inf) if self.p_inf > 0 else -np.inf)
        log_b = logsumexp(log_p[j:] - loss[j:])
        with np.errstate(divide="ignore"):
            x = float(log_a + np.log(-np.expm1(log_target - log_a)) - log_b) if log_target < log_a else float(loss[j])
        x = min(max(x, lower), float(loss[j]))
        return settle_up(x, lambda e: bool(self.delta(e) <= target), float(loss[j]))

    # ----------------------------------------------------------------- trade-off
    def tradeoff_vertices(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Vertices (alpha, beta) of the exact trade-off polygon of testing P against R.

        The likelihood-ratio tests reject P on the outcomes of smallest loss first; alpha is
        the P-mass rejected and beta the R-mass accepted. beta is summed from the far end so
        that small values keep their relative precision.
        """
        p = np.exp(self.log_p)
        r = np.exp(self.log_r)
        alpha = np.concatenate([[0.0, 0.0], np.cumsum(p), [1.0]])
        tail_r = np.concatenate([np.cumsum(r[::-1])[::-1], [0.0]])
        beta = np.concatenate([[1.0], tail_r, [0.0]])
        alpha = np.minimum(alpha, 1.0)
        alpha[-2] = 1.0 - self.p_inf
        return alpha, np.minimum(beta, 1.0)

    def tradeoff(self, alpha: ArrayLike) -> NDArray[np.float64] | float:
        """The exact trade-off function ``T[P, R](alpha)`` (piecewise linear)."""
        a = np.asarray(alpha, dtype=np.float64)
        if a.size and (np.any(np.isnan(a)) or np.any(a < 0) or np.any(a > 1)):
            raise invalid("alpha", a[np.isnan(a) | (a < 0) | (a > 1)].ravel()[0], "a type I error in [0, 1]")
        va, vb = self.tradeoff_vertices()
        # the polygon is convex and non-increasing; alpha may repeat at vertices: take the
        # lowest beta reached at a given alpha (a vertical drop at alpha = 0 for r_inf)
        out = np.interp(a, va[1:], vb[1:])
        # at alpha = 0 exactly only the R-mass where P = 0 is rejected for free: atoms whose
        # P-mass underflowed to 0 (losses past -745) still have P-mass > 0
        out = np.where(a == 0.0, min(1.0, 1.0 - self.r_inf), out)
        return float(out) if a.ndim == 0 else out

    # ----------------------------------------------------------------- composition
    def compose(self, other: "DiscretePLD", max_atoms: int = MAX_ATOMS) -> "DiscretePLD":
        """The loss law of the product pair (P x P', R x R'): losses add."""
        n = self.loss.size * other.loss.size
        if n > max_atoms:
            raise invalid("atoms", n, f"at most max_atoms = {max_atoms} atoms in the composed loss law")
        with np.errstate(over="ignore"):  # 1e308 + 1e308: see below (and log masses: -inf, mass 0)
            loss = (self.loss[:, None] + other.loss[None, :]).ravel()
            log_p = (self.log_p[:, None] + other.log_p[None, :]).ravel()
        p_inf = _union(self.p_inf, other.p_inf)
        r_inf = _union(self.r_inf, other.r_inf)
        # a sum of losses beyond the doubles tells the pair apart outright, as an infinite loss
        # does: its P-mass (+inf) joins p_inf, its R-mass (-inf) r_inf (disjoint from theirs)
        up, down = loss == np.inf, loss == -np.inf
        if np.any(up):
            p_inf = min(1.0, p_inf + float(np.sum(np.exp(log_p[up]))))
        if np.any(down):
            with np.errstate(over="ignore"):
                log_r = (self.log_r[:, None] + other.log_r[None, :]).ravel()[down]
            r_inf = min(1.0, r_inf + float(np.sum(np.exp(log_r))))
        finite = ~(up | down)
        return DiscretePLD.from_atoms(loss[finite], log_p[finite], p_inf, r_inf).merged()

    def merged(self, rtol: float = 1e-12) -> "DiscretePLD":
        """Merge atoms whose losses agree to ``rtol`` relative to the largest |loss| (so
        rounding in sums of losses merges, while the distinct losses of a mechanism at
        eps = 1e-13 stay distinct; an absolute floor of 1 here used to merge them all)."""
        if self.loss.size < 2:
            return self
        scale = float(np.max(np.abs(self.loss)))
        with np.errstate(over="ignore"):  # losses -1e308 and 1e308: inf apart, distinct
            new = np.concatenate([[True], np.diff(self.loss) > rtol * scale])
        if np.all(new):
            return self
        groups = np.cumsum(new) - 1
        n = int(groups[-1]) + 1
        top = np.full(n, -np.inf)
        np.maximum.at(top, groups, self.log_p)
        sums = np.zeros(n)
        np.add.at(sums, groups, np.exp(self.log_p - top[groups]))
        loss = self.loss[new]
        return DiscretePLD(loss, top + np.log(sums), self.p_inf, self.r_inf)

    def self_compose(self, compositions: int, max_atoms: int = MAX_ATOMS) -> "DiscretePLD":
        """The ``compositions``-fold product by repeated squaring, merging equal losses after
        each product."""
        k = V.integer(compositions, "compositions", minimum=1)
        result: DiscretePLD | None = None
        base = self
        while k:
            if k & 1:
                result = base if result is None else result.compose(base, max_atoms)
            k >>= 1
            if k:
                base = base.compose(base, max_atoms)
        assert result is not None
        return result
