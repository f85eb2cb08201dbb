"""Hypothesis testing on privatised counts: Neyman-Pearson tests and their error exponents.

Setting (docs/theory.md sec. 5; Kairouz et al. 2014, Sec. 1, 3): ``n`` clients report ``Y_i ~ M_v`` i.i.d. for
``v in {0, 1}``, with ``M_v = P_v^T Q`` the marginal a mechanism ``Q`` induces from the prior
``P_v`` (:func:`hypothesis_marginals`). The output counts ``c`` are ``Multinomial(n, M_v)``;
the log-likelihood-ratio statistic is

    L(c) = sum_y c_y w_y,   w_y = log(M1(y) / M0(y)),

and the Neyman-Pearson test rejects H0 when ``L`` is large. Everything here works in log
space, so type II errors far below the smallest double (``1e-308``) are reported through
their logarithm (``log_beta``).

- :func:`chernoff_stein_exponent`, :func:`chernoff_information`: the error exponents.
- :func:`llr_exact_law`, :func:`lrt_exact`: the exact law of ``L`` and the exact randomised
  NP test (small ``n``, or any ``n`` when ``w`` takes two distinct values).
- :func:`lrt_normal`: the normal approximation (large ``n``).
- :func:`type2_error_tilted`: tiny type II errors measured by importance sampling with
  exponential tilting, with a stated relative error.
- :func:`stein_exponent_curve`: measured ``-(1/n) log beta_n`` against ``D_kl(M0 || M1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid

#: Largest number of compositions (count vectors) that :func:`llr_exact_law` enumerates.
MAX_COMPOSITIONS = 2_000_000

#: Two values of ``L`` within ``TIE_RTOL * max(1, n max|w|)`` count as one (a tie): the
#: rounding error of ``sum_y c_y w_y`` is a few units in the last place of that scale.
TIE_RTOL = 1e-12

#: Samples drawn per chunk by :func:`type2_error_tilted` (bounds temporary memory).
_CHUNK = 1 << 16


# --------------------------------------------------------------------- validation
def _alpha(value: object) -> float:
    a = v.as_float(value, "alpha", "a number in (0, 1)")
    if not (0.0 < a < 1.0):  # also rejects NaN
        raise invalid("alpha", value, "a number in (0, 1)")
    return a


def _pair(M0: ArrayLike, M1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validated marginals: same length, different, and positive on the same outputs."""
    m0 = v.probability_vector(M0, "M0")
    m1 = v.probability_vector(M1, "M1", size=m0.size)
    m0, m1 = m0 / m0.sum(), m1 / m1.sum()
    if not np.array_equal(m0 > 0, m1 > 0):
        raise invalid(
            "M1",
            M1,
            "a distribution positive exactly where M0 is (an output possible under one hypothesis only "
            "decides the test by itself: the error exponents are infinite)",
        )
    if np.allclose(m0, m1, rtol=0, atol=1e-15):
        raise invalid("M1", M1, "a distribution different from M0 (identical hypotheses cannot be told apart)")
    return m0, m1


@dataclass(frozen=True)
class RatioGroups:
    """Outputs merged by their log-likelihood ratio: ``L`` depends on the counts only through
    the total count of each group, and the group counts are ``Multinomial(n, group mass)``."""

    w: NDArray[np.float64]  # per original output (0 off the support)
    gw: NDArray[np.float64]  # one log-ratio per group
    log_g0: NDArray[np.float64]  # log group mass under M0
    log_g1: NDArray[np.float64]

    @property
    def size(self) -> int:
        return int(self.gw.size)


def ratio_groups(m0: NDArray[np.float64], m1: NDArray[np.float64]) -> RatioGroups:
    """The outputs of the two laws ``m0``, ``m1`` grouped by equal log-likelihood ratio
    (within ``TIE_RTOL``): the statistic of the exact likelihood-ratio test, also used by the
    Chernoff-Stein reproduction."""
    pos = m0 > 0
    with np.errstate(divide="ignore"):
        lw = np.where(pos, np.log(np.where(pos, m1, 1.0)) - np.log(np.where(pos, m0, 1.0)), 0.0)
    ws = lw[pos]
    order = np.argsort(ws, kind="stable")
    sw = ws[order]
    tol = TIE_RTOL * np.maximum(1.0, np.abs(sw))
    new = np.ones(sw.size, dtype=bool)
    new[1:] = np.diff(sw) > tol[1:]
    starts = np.flatnonzero(new)
    g0 = np.add.reduceat(m0[pos][order], starts)
    g1 = np.add.reduceat(m1[pos][order], starts)
    gw = np.log(g1) - np.log(g0)  # exact for a group of equal ratios
    return RatioGroups(lw, gw, np.log(g0), np.log(g1))


def _tie_tol(n: int, groups: RatioGroups) -> float:
    return TIE_RTOL * max(1.0, n * float(np.max(np.abs(groups.gw))))


def hypothesis_marginals(mechanism, P0: ArrayLike, P1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The output laws ``M0 = P0^T Q`` and ``M1 = P1^T Q`` of a mechanism under the two
    hypotheses (docs/theory.md sec. 3, 5); ``P0 == P1`` is refused (nothing to test)."""
    p0 = v.probability_vector(P0, "P0", size=mechanism.k)
    p1 = v.probability_vector(P1, "P1", size=mechanism.k)
    if np.allclose(p0, p1, rtol=0, atol=1e-15):
        raise invalid("P1", P1, "a prior different from P0 (identical hypotheses cannot be told apart)")
    m0, m1 = mechanism.marginal(p0), mechanism.marginal(p1)
    return m0, m1


# --------------------------------------------------------------------- exponents
def chernoff_stein_exponent(M0: ArrayLike, M1: ArrayLike) -> float:
    """The Chernoff-Stein exponent ``D_kl(M0 || M1)`` in nats (Kairouz et al. 2014, Sec. 1, 3).

    With the type I error held at any ``alpha in (0, 1)``, the smallest type II error of a
    test from ``n`` reports is ``beta_n = exp(-n D_kl(M0 || M1) + o(n))`` (docs/theory.md sec. 5).
    """
    m0, m1 = _pair(M0, M1)
    return float(np.sum(special.rel_entr(m0, m1)))


class ChernoffInformation(NamedTuple):
    """The Chernoff information and the tilt ``lambda`` attaining it."""

    value: float
    minimiser: float


def _log_affinity(lam: float, l0: NDArray[np.float64], l1: NDArray[np.float64]) -> float:
    return float(special.logsumexp(lam * l0 + (1.0 - lam) * l1))


def chernoff_information(M0: ArrayLike, M1: ArrayLike) -> ChernoffInformation:
    """The Chernoff information ``C = -min_{0<=l<=1} log sum_y M0(y)^l M1(y)^(1-l)`` (Kairouz et al. 2014, Sec. 1, 3).

    The best exponent of the Bayes error (both errors weighted): ``P_e = exp(-n C + o(n))``.
    ``l -> log sum M0^l M1^(1-l)`` is convex, zero at both ends; it is minimised by
    bounded Brent search (``scipy.optimize.minimize_scalar``) evaluated with ``logsumexp``,
    so the exponent is accurate when the marginals have tiny entries. Returns
    ``(value, minimiser)``; ``C <= min(D_kl(M0||M1), D_kl(M1||M0))``.
    """
    m0, m1 = _pair(M0, M1)
    pos = m0 > 0
    l0, l1 = np.log(m0[pos]), np.log(m1[pos])
    from scipy import optimize  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

    res = optimize.minimize_scalar(
        _log_affinity, bounds=(0.0, 1.0), args=(l0, l1), method="bounded", options={"xatol": 1e-12}
    )
    return ChernoffInformation(max(0.0, -float(res.fun)), float(res.x))


# --------------------------------------------------------------------- exact law of L
@dataclass(frozen=True)
class LLRLaw:
    """The exact law of ``L`` under both hypotheses: distinct values (ascending) and their
    log-probabilities (ties within ``TIE_RTOL`` of the scale merged)."""

    n: int
    values: NDArray[np.float64]
    log_pmf0: NDArray[np.float64]
    log_pmf1: NDArray[np.float64]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "L": self.values,
                "pmf0": np.exp(self.log_pmf0),
                "pmf1": np.exp(self.log_pmf1),
                "log_pmf0": self.log_pmf0,
                "log_pmf1": self.log_pmf1,
            }
        )


def n_compositions(n: int, parts: int) -> int:
    """How many vectors of ``parts`` non-negative integers sum to ``n`` (the support size of
    the exact law over ``parts`` groups)."""
    return math.comb(n + parts - 1, parts - 1)


def _compositions(n: int, parts: int) -> NDArray[np.int64]:
    """All vectors of ``parts`` non-negative integers summing to ``n`` (rows), vectorised."""
    rem = np.array([n], dtype=np.int64)
    cols: list[NDArray[np.int64]] = []
    for _ in range(parts - 1):
        reps = rem + 1
        idx = np.repeat(np.arange(rem.size), reps)
        starts = np.cumsum(reps) - reps
        c = np.arange(idx.size, dtype=np.int64) - starts[idx]
        cols = [col[idx] for col in cols] + [c]
        rem = rem[idx] - c
    cols.append(rem)
    return np.stack(cols, axis=1)


def _law(n: int, groups: RatioGroups) -> LLRLaw:
    comps = _compositions(n, groups.size)
    base = special.gammaln(n + 1.0) - special.gammaln(comps + 1.0).sum(axis=1)
    lp0 = base + comps @ groups.log_g0
    lp1 = base + comps @ groups.log_g1
    L = comps @ groups.gw
    order = np.argsort(L, kind="stable")
    L, lp0, lp1 = L[order], lp0[order], lp1[order]
    new = np.ones(L.size, dtype=bool)
    new[1:] = np.diff(L) > _tie_tol(n, groups)
    starts = np.flatnonzero(new)
    return LLRLaw(n, L[starts], np.logaddexp.reduceat(lp0, starts), np.logaddexp.reduceat(lp1, starts))


def llr_exact_law(M0: ArrayLike, M1: ArrayLike, n: int) -> LLRLaw:
    """The exact law of the log-likelihood ratio ``L`` of ``n`` reports under H0 and H1.

    Outputs with equal ``w_y`` are merged first (``L`` depends only on their total count),
    then every count vector over the ``g`` groups is enumerated (``C(n+g-1, g-1)`` of them,
    at most ``MAX_COMPOSITIONS``) with its multinomial log-probability under both
    hypotheses, and the probabilities are summed (in log space) over equal values of ``L``.
    A binary mechanism has ``g = 2``: the law is exact for any ``n`` up to millions.
    """
    m0, m1 = _pair(M0, M1)
    n = v.integer(n, "n", minimum=1)
    groups = ratio_groups(m0, m1)
    size = n_compositions(n, groups.size)
    if size > MAX_COMPOSITIONS:
        raise invalid(
            "n",
            n,
            f"at most {MAX_COMPOSITIONS} count vectors to enumerate (got {size} over {groups.size} "
            "distinct likelihood ratios); use lrt_normal and type2_error_tilted for large n",
        )
    return _law(n, groups)


# --------------------------------------------------------------------- NP tests
@dataclass(frozen=True)
class LikelihoodRatioTest:
    """A (randomised) Neyman-Pearson test on ``n`` reports: reject H0 when ``L > threshold``,
    and with probability ``gamma`` when ``L == threshold`` (within ``tie_tol``).

    ``type1`` is the test's type I error (exactly ``alpha`` for ``method="exact"``, the nominal
    ``alpha`` for ``"normal"``); ``beta`` and ``log_beta`` its type II error (exact, or the
    normal approximation). ``weights`` are the per-output ``w_y = log(M1(y)/M0(y))``.
    """

    n: int
    alpha: float
    threshold: float
    gamma: float
    type1: float
    beta: float
    log_beta: float
    method: str
    weights: NDArray[np.float64]
    tie_tol: float

    def statistic(self, counts: ArrayLike) -> NDArray[np.float64] | float:
        """``L(c) = sum_y c_y w_y`` for a count vector (length m) or a stack of them (rows)."""
        c = np.asarray(counts)
        if c.shape[-1:] != self.weights.shape or not np.issubdtype(c.dtype, np.integer):
            raise invalid(
                "counts",
                f"an array of shape {c.shape} and dtype {c.dtype}",
                f"integer counts with last axis {self.weights.size}",
            )
        out = c @ self.weights
        return float(out) if np.ndim(out) == 0 else out

    def reject(self, counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.bool_] | bool:
        """The randomised decision (``True``: reject H0) for one count vector or a stack."""
        gen = as_generator(rng)
        L = np.asarray(self.statistic(counts))
        above = L > self.threshold + self.tie_tol
        tie = np.abs(L - self.threshold) <= self.tie_tol
        out = above | (tie & (gen.random(L.shape) < self.gamma))
        return bool(out) if out.ndim == 0 else out


def lrt_exact(M0: ArrayLike, M1: ArrayLike, n: int, alpha: float) -> LikelihoodRatioTest:
    """The exact randomised Neyman-Pearson test of H0: ``M0`` against H1: ``M1`` (Kairouz et al. 2014, Sec. 1, 3).

    From the exact law of ``L`` (:func:`llr_exact_law`): the threshold ``t`` is the smallest
    value of ``L`` with ``P0(L > t) <= alpha``, and ``gamma = (alpha - P0(L > t)) / P0(L = t)``
    makes the type I error exactly ``alpha``. The type II error
    ``beta = P1(L < t) + (1 - gamma) P1(L = t)`` is summed in log space (``log_beta`` is
    exact even when ``beta`` underflows). By the Neyman-Pearson lemma no test with type I
    error ``<= alpha`` has a smaller type II error.
    """
    m0, m1 = _pair(M0, M1)
    a = _alpha(alpha)
    law = llr_exact_law(m0, m1, n)
    groups = ratio_groups(m0, m1)
    p0 = np.exp(law.log_pmf0)
    tail_ge = np.append(np.cumsum(p0[::-1])[::-1], 0.0)
    above = tail_ge[1:]  # P0(L > values[i])
    i = int(np.searchsorted(-above, -a, side="left"))  # first i with above[i] <= alpha
    i = min(i, law.values.size - 1)
    # (alpha - P0(L > t)) / P0(L = t) clipped to [0, 1], never dividing by a P0(L = t) so small
    # (subnormal) that the ratio would overflow: it is 1 whenever the gap reaches P0(L = t)
    gap = float(a - above[i])
    gamma = 0.0 if not p0[i] > 0 or gap <= 0.0 else 1.0 if gap >= p0[i] else gap / float(p0[i])
    type1 = float(above[i] + gamma * p0[i])
    parts = [special.logsumexp(law.log_pmf1[:i])] if i > 0 else []
    if gamma < 1.0:
        parts.append(math.log1p(-gamma) + law.log_pmf1[i])
    log_beta = float(special.logsumexp(parts)) if parts else -math.inf
    return LikelihoodRatioTest(
        law.n,
        a,
        float(law.values[i]),
        gamma,
        type1,
        math.exp(log_beta),
        log_beta,
        "exact",
        groups.w,
        _tie_tol(law.n, groups),
    )


def _moments(m: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[float, float]:
    mean = float(m @ w)
    return mean, float(m @ (w - mean) ** 2)


def lrt_normal(M0: ArrayLike, M1: ArrayLike, n: int, alpha: float) -> LikelihoodRatioTest:
    """The likelihood-ratio test with the normal approximation of ``L`` (large ``n``; Kairouz et al. 2014, Sec. 1, 3).

    Under H_v, ``L`` is a sum of ``n`` i.i.d. copies of ``w(Y)``: mean ``n E_v[w]``, variance
    ``n Var_v[w]`` (``E_0[w] = -D_kl(M0||M1)``, ``E_1[w] = D_kl(M1||M0)``). The threshold is
    ``t = n E_0[w] + sqrt(n Var_0[w]) z_{1-alpha}`` and ``beta ~ Phi((t - n E_1[w]) / sqrt(n Var_1[w]))``.

    Accuracy: by Berry-Esseen the actual type I error is within ``C rho_0 / (sigma_0^3 sqrt(n))``
    of ``alpha`` (``rho_0 = E_0|w - E_0 w|^3``, ``C <= 0.48``), plus a lattice error of the same
    order when ``w`` takes few values; the same *absolute* error bounds the approximate
    ``beta``. The *relative* error of a tiny ``beta`` is not controlled: it is a large-deviation
    probability (about ``exp(-n D_kl(M0||M1))``) where the normal tail is wrong by factors
    that grow exponentially in ``n``. Use :func:`type2_error_tilted` for tiny ``beta``
    (and :func:`lrt_exact` for an exact test at small ``n``). ``gamma`` is 0.
    """
    m0, m1 = _pair(M0, M1)
    a = _alpha(alpha)
    n = v.integer(n, "n", minimum=1)
    groups = ratio_groups(m0, m1)
    e0, v0 = _moments(np.exp(groups.log_g0), groups.gw)
    e1, v1 = _moments(np.exp(groups.log_g1), groups.gw)
    # norm.isf and norm.logcdf as scipy.stats computes them, without importing it (~0.9 s: ldpsim analyse)
    t = n * e0 + math.sqrt(n * v0) * float(-special.ndtri(a))
    log_beta = (
        float(special.log_ndtr((t - n * e1) / math.sqrt(n * v1))) if v1 > 0 else (0.0 if t >= n * e1 else -math.inf)
    )
    return LikelihoodRatioTest(n, a, t, 0.0, a, math.exp(log_beta), log_beta, "normal", groups.w, _tie_tol(n, groups))


# --------------------------------------------------------------------- tilted estimator
@dataclass(frozen=True)
class TiltedEstimate:
    """An importance-sampling estimate of a type II error ``beta``.

    ``std_error`` is the estimated standard error of ``beta`` and ``rel_error`` that divided
    by ``beta`` (the central limit theorem applies to the mean of the bounded weights);
    ``log_beta`` stays finite when ``beta`` underflows. ``tilt`` is the ``lambda`` sampled.
    """

    beta: float
    log_beta: float
    std_error: float
    rel_error: float
    tilt: float
    threshold: float
    n: int
    samples: int


def _tilt_mean(lam: float, groups: RatioGroups) -> float:
    """``E_lambda[w]`` under ``M_lambda ∝ M0^lambda M1^(1-lambda)``."""
    lg = lam * groups.log_g0 + (1.0 - lam) * groups.log_g1
    return float(np.exp(lg - special.logsumexp(lg)) @ groups.gw)


def _solve_tilt(target: float, groups: RatioGroups) -> float:
    """The ``lambda >= 0`` with ``E_lambda[w] = target`` (``E_lambda[w]`` decreases in ``lambda``);
    0 when ``target`` is above ``E_1[w]`` (then ``beta`` is not small and plain sampling from
    ``M1`` is efficient)."""
    if target >= _tilt_mean(0.0, groups):
        return 0.0
    hi = 1.0
    while _tilt_mean(hi, groups) > target:
        if hi >= 1e4:
            return hi
        hi *= 2.0
    from scipy import optimize  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

    return float(optimize.brentq(lambda lam: _tilt_mean(lam, groups) - target, 0.0, hi, xtol=1e-14, rtol=1e-14))


def type2_error_tilted(
    M0: ArrayLike,
    M1: ArrayLike,
    n: int,
    threshold: float,
    rng: RNGLike = None,
    samples: int = 20_000,
    *,
    gamma: float = 0.0,
) -> TiltedEstimate:
    """Estimate ``beta_n = P_1(L < t) + (1 - gamma) P_1(L = t)`` by exponential tilting
    (Kairouz et al. 2014, Sec. 1, 3).

    The type II error of the test "reject when ``L > t``, and with probability ``gamma`` when
    ``L = t``" (``gamma = 0``: ``beta = P_1(L <= t)``). Counts are drawn from
    ``Multinomial(n, M_l)`` with the tilted law ``M_l ∝ M0^l M1^(1-l)``, ``l`` solving
    ``E_l[L] = t`` (root finding, so that the event sits at the centre of the sampled law),
    and each draw is weighted by the likelihood ratio
    ``prod_y (M1(y)/M_l(y))^c_y = exp(n log Z(l) + l L(c))``, ``Z(l) = sum M0^l M1^(1-l)``,
    in log space. On the event ``L <= t`` the weight is at most ``exp(n log Z(l) + l t)``: the
    estimator has bounded relative variance of order ``l sqrt(n Var_l[w])``, so a few 10^4
    samples give a relative error of a few per cent for ``beta`` of ``1e-30``, ``1e-300`` or
    far below (``beta`` then underflows to 0; read ``log_beta``). Draws are vectorised
    (``rng.multinomial(n, M_l, size=...)``) over outputs merged by equal ``w_y``.
    """
    m0, m1 = _pair(M0, M1)
    n = v.integer(n, "n", minimum=1)
    samples = v.integer(samples, "samples", minimum=2)
    t = v.as_float(threshold, "threshold", "a finite number")
    if not math.isfinite(t):
        raise invalid("threshold", threshold, "a finite number")
    g = v.as_float(gamma, "gamma", "a number in [0, 1]")
    if not (0.0 <= g <= 1.0):
        raise invalid("gamma", gamma, "a number in [0, 1]")
    gen = as_generator(rng)
    groups = ratio_groups(m0, m1)
    tol = _tie_tol(n, groups)
    if t < n * float(groups.gw.min()) - tol:  # L >= n min w always: the test always rejects
        return TiltedEstimate(0.0, -math.inf, 0.0, 0.0, math.inf, t, n, samples)
    lam = _solve_tilt(t / n, groups)
    lg = lam * groups.log_g0 + (1.0 - lam) * groups.log_g1
    log_z = float(special.logsumexp(lg))
    probs = np.exp(lg - log_z)
    probs /= probs.sum()
    logw = np.empty(samples)
    for start in range(0, samples, _CHUNK):
        size = min(_CHUNK, samples - start)
        L = gen.multinomial(n, probs, size=size) @ groups.gw
        lw = n * log_z + lam * L
        with np.errstate(divide="ignore"):
            h = np.where(L < t - tol, 0.0, np.where(L <= t + tol, math.log1p(-g) if g < 1 else -math.inf, -math.inf))
        logw[start : start + size] = lw + h
    top = float(logw.max())
    if not math.isfinite(top):
        return TiltedEstimate(0.0, -math.inf, math.nan, math.inf, lam, t, n, samples)
    scaled = np.exp(logw - top)
    mean = float(scaled.mean())
    sd = float(scaled.std(ddof=1))
    rel = sd / (mean * math.sqrt(samples))
    log_beta = top + math.log(mean)
    beta = math.exp(log_beta)
    return TiltedEstimate(beta, log_beta, beta * rel, rel, lam, t, n, samples)


def stein_exponent_curve(
    M0: ArrayLike,
    M1: ArrayLike,
    ns: Sequence[int],
    alpha: float,
    rng: RNGLike = None,
    samples: int = 20_000,
) -> pd.DataFrame:
    """Measured Chernoff-Stein exponents ``-(1/n) log beta_n`` against ``D_kl(M0 || M1)``
    (Kairouz et al. 2014, Sec. 1, 3).

    For each ``n``: the NP test at type I error ``alpha`` (exact, :func:`lrt_exact`, when the
    exact law has at most ``MAX_COMPOSITIONS`` count vectors; else the normal threshold of
    :func:`lrt_normal`), then its type II error measured by :func:`type2_error_tilted`.
    Columns: ``n, method, threshold, gamma, beta, log_beta, rel_error, exponent, theory``
    (``beta_exact`` and ``log_beta_exact`` too: the exact type II error where the law was
    enumerated, else NaN).
    The exponent approaches the theory from below like ``sigma_0 z_{1-alpha} / sqrt(n)``,
    ``sigma_0^2 = Var_0[w]`` (the price of holding the type I error at ``alpha``).
    """
    m0, m1 = _pair(M0, M1)
    a = _alpha(alpha)
    gen = as_generator(rng)
    if isinstance(ns, (str, bytes)) or np.ndim(ns) != 1 or len(ns) == 0:
        raise invalid("ns", ns, "a non-empty sequence of integers >= 1")
    sizes = [v.integer(x, f"ns[{i}]", minimum=1) for i, x in enumerate(ns)]
    theory = chernoff_stein_exponent(m0, m1)
    groups = ratio_groups(m0, m1)
    rows = []
    for n in sizes:
        exact = n_compositions(n, groups.size) <= MAX_COMPOSITIONS
        test = lrt_exact(m0, m1, n, a) if exact else lrt_normal(m0, m1, n, a)
        est = type2_error_tilted(m0, m1, n, test.threshold, gen, samples, gamma=test.gamma)
        rows.append(
            {
                "n": n,
                "method": test.method,
                "threshold": test.threshold,
                "gamma": test.gamma,
                "beta": est.beta,
                "log_beta": est.log_beta,
                "rel_error": est.rel_error,
                "exponent": -est.log_beta / n,
                "theory": theory,
                "beta_exact": test.beta if exact else math.nan,
                "log_beta_exact": test.log_beta if exact else math.nan,
            }
        )
    return pd.DataFrame(rows)
