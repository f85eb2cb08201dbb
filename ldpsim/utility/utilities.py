"""Utilities of a local mechanism as sums of a sublinear function over output columns.

``U(Q) = sum_y mu(Q[:, y])`` (docs/theory.md sec. 3-4). Every utility here offers

- ``value(Q)``: the utility of a mechanism (or matrix),
- ``mu(columns)``: the per-column function, for a ``k x n`` array of columns,
- ``pattern_mu(sums, eps)``: ``mu`` of the staircase patterns, from subset sums only.

The staircase linear program needs ``mu`` on columns of the pattern matrix. We scale each
pattern column to ``q = e^-eps + (1 - e^-eps) b`` (entries ``1`` on the set ``T`` of the
pattern's ones, ``e^-eps`` elsewhere; a column's scale is free in the LP), so that for any
weight vector ``w``, ``w . q = e^-eps w(X) + (1 - e^-eps) w(T)`` depends on ``T`` only
through the subset sum ``w(T)``. Each utility names the weight vectors it needs
(``weights``, ``r x k``) and evaluates ``mu`` from their subset sums; the LP then prices
all ``2^k`` patterns in vectorised chunks without ever building the pattern matrix.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.utility.divergences import perspective

if TYPE_CHECKING:
    from ldpsim.mechanisms.finite import FiniteMechanism


def _positive_prior(value: ArrayLike, name: str, size: int | None = None) -> NDArray[np.float64]:
    p = v.probability_vector(value, name, size=size)
    if np.any(p <= 0):
        raise invalid(
            name,
            value,
            "entries > 0 (merge or drop categories that have probability zero: a staircase "
            "mechanism's utility depends only on the categories that can occur)",
        )
    if p.size < 2:
        raise invalid(name, value, "at least 2 categories")
    return p


class Utility:
    """Base class: a utility that sums a sublinear ``mu`` over output columns."""

    name: str = "utility"
    #: weight vectors (r x k) whose subset sums determine mu on staircase patterns
    weights: NDArray[np.float64]

    @property
    def k(self) -> int:
        return int(self.weights.shape[1])

    def mu(self, columns: NDArray[np.float64]) -> NDArray[np.float64]:
        """``mu`` of each column of a ``k x n`` array."""
        raise NotImplementedError

    def pattern_mu(self, sums: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
        """``mu`` of scaled patterns from the subset sums ``sums`` (``r x n``) of ``weights``."""
        raise NotImplementedError

    def value(self, Q: ArrayLike | FiniteMechanism) -> float:
        """``U(Q) = sum_y mu(Q[:, y])``; accepts a mechanism or a matrix with k rows."""
        return float(np.sum(self.mu(self._matrix(Q))))

    def _matrix(self, Q: ArrayLike | FiniteMechanism) -> NDArray[np.float64]:
        q = np.asarray(getattr(Q, "matrix", Q), dtype=np.float64)
        if q.ndim != 2 or q.shape[0] != self.k:
            raise invalid("Q", f"a matrix of shape {q.shape}", f"{self.k} rows (one per input)")
        return q

    def __repr__(self) -> str:
        return f"{self.name}(k={self.k})"


def _dots(weights: NDArray[np.float64], sums: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    """``w . q`` for each weight vector and scaled pattern: ``e^-eps w(X) + (1 - e^-eps) w(T)``."""
    s = math.exp(-eps)
    return s * weights.sum(axis=1)[:, None] + (-math.expm1(-eps)) * sums


class PairUtility(Utility):
    """Utilities of hypothesis testing between priors P0 and P1: functions of the induced
    marginals ``M0 = P0^T Q`` and ``M1 = P1^T Q`` column by column."""

    def __init__(self, P0: ArrayLike, P1: ArrayLike) -> None:
        p0 = _positive_prior(P0, "P0")
        p1 = _positive_prior(P1, "P1", size=p0.size)
        if np.allclose(p0, p1, rtol=0, atol=1e-12):
            raise invalid("P1", P1, "a distribution different from P0 (with P0 == P1 every mechanism has utility 0)")
        self.P0, self.P1 = p0, p1
        self.weights = np.vstack([p0, p1])

    def _column_terms(self, a: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError

    def mu(self, columns: NDArray[np.float64]) -> NDArray[np.float64]:
        cols = np.asarray(columns, dtype=np.float64)
        return self._column_terms(self.P0 @ cols, self.P1 @ cols)

    def pattern_mu(self, sums: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
        dots = _dots(self.weights, sums, eps)
        return self._column_terms(dots[0], dots[1])

    def divergence(self, M0: ArrayLike, M1: ArrayLike) -> float:
        """The divergence between two distributions (the utility of the identity)."""
        return float(np.sum(self._column_terms(np.asarray(M0, float), np.asarray(M1, float))))

    def prior_divergence(self) -> float:
        """The divergence between the priors themselves (no privatisation)."""
        return self.divergence(self.P0, self.P1)


class KL(PairUtility):
    """``D_kl(M0 || M1)``: ``mu(q) = (P0.q) log((P0.q)/(P1.q))``."""

    name = "kl"

    def _column_terms(self, a, c):
        return perspective(_t_log_t, a, c)

    def value(self, Q: ArrayLike | FiniteMechanism) -> float:
        # sum of M1 phi((M0 - M1)/M1), phi(x) = (1+x) log(1+x) - x >= 0 (the extra -x terms
        # sum to zero): never negative, and accurate when M0 is close to M1 (tiny eps)
        q = self._matrix(Q)
        return float(np.sum(_kl_terms((self.P0 - self.P1) @ q, self.P1 @ q)))


class TotalVariation(PairUtility):
    """``||M0 - M1||_TV``: ``mu(q) = |P0.q - P1.q| / 2``."""

    name = "tv"

    def _column_terms(self, a, c):
        return 0.5 * np.abs(a - c)


class ChiSquare(PairUtility):
    """``chi^2(M0 || M1)``: ``mu(q) = (P0.q - P1.q)^2 / (P1.q)``."""

    name = "chi_square"

    def _column_terms(self, a, c):
        # (a - c) ((a - c) / c): no intermediate (a/c)^2 to overflow when c is tiny; a value
        # beyond the largest float is inf (justified), without a warning
        a = np.asarray(a, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64)
        d = a - c
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            terms = d * (d / np.where(c > 0, c, 1.0))
        return np.where(c > 0, terms, np.where(a > 0, np.inf, 0.0))


class Hellinger(PairUtility):
    """Squared Hellinger ``sum (sqrt(M0) - sqrt(M1))^2``: ``mu(q) = (sqrt(P0.q) - sqrt(P1.q))^2``."""

    name = "hellinger"

    def _column_terms(self, a, c):
        return (np.sqrt(a) - np.sqrt(c)) ** 2


class FDivergence(PairUtility):
    """``D_f(M0 || M1)`` for a user's convex ``f`` with ``f(1) = 0`` (vectorised over arrays):
    ``mu(q) = (P1.q) f((P0.q)/(P1.q))``. ``f_inf = lim f(t)/t`` is used where ``P1.q = 0``."""

    name = "f_divergence"

    def __init__(
        self,
        P0: ArrayLike,
        P1: ArrayLike,
        f: Callable[[NDArray[np.float64]], NDArray[np.float64]],
        f_inf: float | None = None,
    ) -> None:
        super().__init__(P0, P1)
        if not callable(f):
            raise invalid("f", f, "a callable convex function with f(1) = 0")
        one = float(np.asarray(f(np.array([1.0])))[0])
        if abs(one) > 1e-12:
            raise invalid("f", f"a function with f(1) = {one!r}", "f(1) = 0")
        self.f, self.f_inf = f, f_inf

    def _column_terms(self, a, c):
        return perspective(self.f, a, c, self.f_inf)


class MutualInformation(Utility):
    """``I(X; Y)`` for inputs with prior P: ``mu(q) = sum_x P(x) q_x log(q_x / (P.q))``."""

    name = "mutual_information"

    def __init__(self, P: ArrayLike) -> None:
        self.P = _positive_prior(P, "P")
        self.weights = self.P[None, :]

    def mu(self, columns):
        cols = np.asarray(columns, dtype=np.float64)
        m = self.P @ cols
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(cols > 0, self.P[:, None] * cols * np.log(cols / np.where(m > 0, m, 1.0)[None, :]), 0.0)
        return terms.sum(axis=0)

    def value(self, Q: ArrayLike | FiniteMechanism) -> float:
        # sum over x of P(x) sum_y kl_div(Q[x, y], M(y)), each term >= 0: never negative by
        # rounding; P(x) outside the kl terms (P(x) M(y) underflows for tiny P(x) and M(y))
        q = self._matrix(Q)
        m = self.P @ q
        return float(np.sum(self.P[:, None] * _kl_terms(q - m[None, :], np.broadcast_to(m[None, :], q.shape))))

    def pattern_mu(self, sums, eps):
        # q_x = 1 on T, e^-eps off T; P.q = e^-eps + (1 - e^-eps) P(T):
        # mu = P(T) log(1/P.q) + e^-eps (1 - P(T)) (-eps - log P.q), in logs: e^-eps underflows
        # past eps = 745 (P.q = 0 for T empty), and eps + log P.q = log(1 + (e^eps - 1) P(T))
        pt = np.asarray(sums[0], dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_pt = np.log(pt)
        log_em1 = eps + math.log(-math.expm1(-eps)) if eps > 0 else -math.inf  # log(e^eps - 1)
        gain = np.logaddexp(0.0, log_em1 + log_pt)  # eps + log P.q, 0 where P(T) = 0
        log_pq = gain - eps
        first = np.where(pt > 0, -pt * log_pq, 0.0)
        return first - math.exp(-eps) * (1.0 - pt) * gain


class MaryAccuracy(Utility):
    """Deciding among ``m`` answer laws ``P_1 .. P_m`` (prior weights ``w``, equal by default)
    from one report: the Bayes rule's probability of being right, ``sum_y max_j w_j (P_j^T
    Q)_y``, so ``mu(q) = max_j w_j P_j . q``: a maximum of linear functions, convex and
    positively homogeneous, hence sublinear, so the staircase linear program finds the
    mechanism that maximises it (m-ary testing, one of Kairouz et al.'s open extensions)."""

    name = "mary_accuracy"

    def __init__(self, hypotheses: ArrayLike, weights: ArrayLike | None = None) -> None:
        hyps = np.asarray(hypotheses, dtype=np.float64)
        if hyps.ndim != 2 or hyps.shape[0] < 2:
            raise invalid("hypotheses", f"an array of shape {hyps.shape}", "at least two answer laws (rows)")
        laws = np.stack([_positive_prior(h, f"hypotheses[{j}]", size=hyps.shape[1]) for j, h in enumerate(hyps)])
        w = (
            np.full(laws.shape[0], 1.0 / laws.shape[0])
            if weights is None
            else v.probability_vector(weights, "weights", size=laws.shape[0])
        )
        self.hypotheses, self.prior_weights = laws, w
        self.weights = w[:, None] * laws

    def mu(self, columns):
        return (self.weights @ np.asarray(columns, dtype=np.float64)).max(axis=0)

    def pattern_mu(self, sums, eps):
        return _dots(self.weights, sums, eps).max(axis=0)


def _kl_terms(d: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a log(a/c) - a + c`` with ``a = c + d``, accurate for small ``d/c`` (series), 0 where
    ``a = c = 0`` and ``inf`` where ``c = 0 < a``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = np.where(c > 0, d / np.where(c > 0, c, 1.0), 0.0)
        small = np.abs(x) < 1e-4
        series = x * x * (0.5 - x / 6.0 + x * x / 12.0)
        direct = (1.0 + x) * np.log1p(np.where(small, 0.0, x)) - x
        terms = c * np.where(small, series, np.where(x == -1.0, 1.0, direct))
        # a >> c (x beyond 1e6, or overflowing): a (log a - log c) - a + c has no cancellation,
        # whereas c (1 + x) log1p(x) overflows in the middle
        a = c + d
        big = x > 1e6
        safe_a, safe_c = np.where(big, a, 1.0), np.where(big & (c > 0), c, 1.0)
        far = safe_a * (np.log(safe_a) - np.log(safe_c)) - safe_a + safe_c
        terms = np.where(big, far, terms)
    return np.where(c > 0, terms, np.where(d > 0, np.inf, 0.0))


def _t_log_t(t: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)


#: Divergence utilities by name (hypothesis testing between P0 and P1).
UTILITIES = {"kl": KL, "tv": TotalVariation, "chi_square": ChiSquare, "hellinger": Hellinger}
