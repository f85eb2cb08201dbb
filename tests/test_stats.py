"""ldpsim.stats: every bound against an independent computation (scipy's binomtest intervals,
the closed forms in mpmath) and its guarantee checked: coverage of the binomial bounds
exactly (summing the binomial pmf, no sampling), DKW by simulation with a false-failure
probability of at most 1e-6."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats as sst

from ldpsim import stats as S
from ldpsim.errors import LdpSimError
from tests.tiers import sample

CASES = [(0, 10), (1, 10), (5, 10), (9, 10), (10, 10), (0, 1), (1, 1), (3, 57), (40, 300), (7, 100_000)]
#: (40, 300): 2 s a level for the mpmath reference, in the slow tier
CP_CASES = sample(CASES, keep=[i for i, c in enumerate(CASES) if c != (40, 300)])


# --------------------------------------------------------------------------- Clopper-Pearson
def _binom_cdf(k: int, n: int, p: mpmath.mpf) -> mpmath.mpf:
    return mpmath.fsum(mpmath.binomial(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


def _cp_reference(k: int, n: int, a: float, side: str) -> float:
    """Clopper-Pearson by its definition, in mpmath: the lower bound is the p where
    ``P_p(K >= k) = a``, the upper one where ``P_p(K <= k) = a`` (bisection to 2^-120)."""
    if side == "lower" and k == 0:
        return 0.0
    if side == "upper" and k == n:
        return 1.0
    with mpmath.workdps(40):
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(120):
            mid = (lo + hi) / 2
            if side == "lower":
                too_high = 1 - _binom_cdf(k - 1, n, mid) > a  # the tail at mid already exceeds a
            else:
                too_high = _binom_cdf(k, n, mid) < a
            lo, hi = (lo, mid) if too_high else (mid, hi)
        return float(lo)


@pytest.mark.parametrize("k, n", CP_CASES)
@pytest.mark.parametrize("alpha", [0.1, 1e-3, 1e-7])
def test_clopper_pearson_against_the_definition_and_scipy(k, n, alpha):
    lo, hi = S.clopper_pearson(k, n, alpha)
    assert lo == pytest.approx(_cp_reference(k, n, alpha / 2, "lower"), rel=1e-11, abs=1e-300)
    assert hi == pytest.approx(_cp_reference(k, n, alpha / 2, "upper"), rel=1e-11, abs=1e-300)
    assert S.clopper_pearson_lower(k, n, alpha) == pytest.approx(
        _cp_reference(k, n, alpha, "lower"), rel=1e-11, abs=1e-300
    )
    assert S.clopper_pearson_upper(k, n, alpha) == pytest.approx(
        _cp_reference(k, n, alpha, "upper"), rel=1e-11, abs=1e-300
    )
    # scipy's binomtest finds the same roots numerically (to its root-finding tolerance, ~1e-7 relative)
    two = sst.binomtest(k, n).proportion_ci(1 - alpha, method="exact")
    assert lo == pytest.approx(two.low, rel=1e-6, abs=1e-15) and hi == pytest.approx(two.high, rel=1e-6, abs=1e-15)
    low1 = sst.binomtest(k, n, alternative="greater").proportion_ci(1 - alpha, method="exact").low
    high1 = sst.binomtest(k, n, alternative="less").proportion_ci(1 - alpha, method="exact").high
    assert S.clopper_pearson_lower(k, n, alpha) == pytest.approx(low1, rel=1e-6, abs=1e-15)
    assert S.clopper_pearson_upper(k, n, alpha) == pytest.approx(high1, rel=1e-6, abs=1e-15)


def test_clopper_pearson_closed_forms_at_the_ends():
    # k = 0: upper bound 1 - alpha^(1/n); k = n: lower bound alpha^(1/n) (exact, mpmath)
    for n, alpha in ((10, 0.05), (1000, 1e-6), (7, 1e-300)):
        up = float(1 - mpmath.power(mpmath.mpf(alpha), mpmath.mpf(1) / n))
        lo = float(mpmath.power(mpmath.mpf(alpha), mpmath.mpf(1) / n))
        assert S.clopper_pearson_upper(0, n, alpha) == pytest.approx(up, rel=1e-10)
        assert S.clopper_pearson_lower(n, n, alpha) == pytest.approx(lo, rel=1e-10)
        assert S.clopper_pearson_lower(0, n, alpha) == 0.0 and S.clopper_pearson_upper(n, n, alpha) == 1.0
    # a tiny alpha keeps the upper bound below 1 (upper-tail quantile, not ppf(1 - alpha))
    assert S.clopper_pearson_upper(5, 10**6, 1e-20) < 1e-4


def test_clopper_pearson_vectorised():
    k = np.array([0, 3, 10])
    lo = S.clopper_pearson_lower(k, 10, 0.05)
    assert isinstance(lo, np.ndarray) and lo.shape == (3,)
    np.testing.assert_array_equal(lo, [S.clopper_pearson_lower(int(x), 10, 0.05) for x in k])
    assert isinstance(S.clopper_pearson_upper(3, 10, 0.05), float)


@pytest.mark.parametrize("n, alpha", [(20, 0.05), (60, 0.01)])
def test_clopper_pearson_coverage_is_exact(n, alpha):
    """``P_p(lower(K) > p) <= alpha`` and ``P_p(upper(K) < p) <= alpha`` for every p on a fine
    grid, computed exactly by summing the binomial pmf over the k where the bound misses."""
    k = np.arange(n + 1)
    lo = S.clopper_pearson_lower(k, n, alpha)
    hi = S.clopper_pearson_upper(k, n, alpha)
    for p in np.linspace(0.0005, 0.9995, 1999):
        pmf = sst.binom.pmf(k, n, p)
        assert pmf[lo > p].sum() <= alpha * (1 + 1e-9)
        assert pmf[hi < p].sum() <= alpha * (1 + 1e-9)


# --------------------------------------------------------------------------- Wilson
@pytest.mark.parametrize("k, n", CASES)
@pytest.mark.parametrize("alpha", [0.05, 1e-4])
def test_wilson_against_scipy_binomtest(k, n, alpha):
    ci = sst.binomtest(k, n).proportion_ci(1 - alpha, method="wilson")
    lo, hi = S.wilson(k, n, alpha)
    assert lo == pytest.approx(ci.low, rel=1e-9, abs=1e-14) and hi == pytest.approx(ci.high, rel=1e-9, abs=1e-14)
    z = float(sst.norm.isf(alpha / 2))
    assert S.wilson(k, n, z=z) == (lo, hi)


def test_wilson_arguments():
    with pytest.raises(LdpSimError, match="^wilson: got .*expected exactly one of alpha and z"):
        S.wilson(1, 10)
    with pytest.raises(LdpSimError, match="^wilson"):
        S.wilson(1, 10, 0.05, z=2.0)
    lo, hi = S.wilson(np.array([0, 10]), 10, z=3.0)
    assert lo[0] == 0.0 and hi[1] == 1.0


# --------------------------------------------------------------------------- DKW
@pytest.mark.parametrize("n, alpha", [(1000, 1e-6), (10, 0.5), (10**6, 1e-300), (50, 5e-324)])
def test_dkw_closed_form(n, alpha):
    """``2 exp(-2 n tol^2) = alpha`` (Massart's constant), in mpmath; finite for any alpha > 0."""
    tol = S.dkw(n, alpha)
    assert math.isfinite(tol)
    got = 2 * mpmath.exp(-2 * n * mpmath.mpf(tol) ** 2)
    assert float(got / mpmath.mpf(alpha)) == pytest.approx(1.0, rel=1e-9)


def test_dkw_samples_is_the_inverse():
    for tol, alpha in ((0.01, 1e-6), (0.05, 0.05), (0.003, 1e-300)):
        n = S.dkw_samples(tol, alpha)
        assert S.dkw(n, alpha) <= tol < S.dkw(n - 1, alpha)
        assert n == math.ceil(float(mpmath.log(2 / mpmath.mpf(alpha)) / (2 * mpmath.mpf(tol) ** 2)))


def test_dkw_coverage_by_simulation():
    """The band ``dkw(n, a)`` fails for each of R independent ECDFs with probability <= a, so the
    number of failures is stochastically below Bin(R, a); the test fails only if it exceeds
    the 1 - 1e-6 quantile of Bin(R, a) (false-failure probability <= 1e-6)."""
    R, n, a = 2000, 200, 0.2
    rng = np.random.default_rng(20250611)
    u = np.sort(rng.random((R, n)), axis=1)  # uniforms: F(t) = t
    i = np.arange(1, n + 1)
    ks = np.maximum((i / n - u).max(axis=1), (u - (i - 1) / n).max(axis=1))
    fails = int(np.count_nonzero(ks > S.dkw(n, a)))
    assert fails <= sst.binom.isf(1e-6, R, a), fails


# --------------------------------------------------------------------------- Hoeffding
@pytest.mark.parametrize("spread, n, alpha", [(1.0, 100, 0.05), (3.5, 10**6, 1e-9), (2.0, 7, 5e-324)])
def test_hoeffding_closed_form(spread, n, alpha):
    h = S.hoeffding(spread, n, alpha)
    expected = spread * mpmath.sqrt(mpmath.log(2 / mpmath.mpf(alpha)) / (2 * n))
    assert h == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("n, alpha", [(30, 0.1), (200, 0.01)])
def test_hoeffding_coverage_for_bernoulli_means_is_exact(n, alpha):
    """``P(|mean - p| > h) <= alpha`` for the mean of n Bernoulli(p), exactly from the pmf."""
    h = S.hoeffding(1.0, n, alpha)
    k = np.arange(n + 1)
    for p in np.linspace(0.01, 0.99, 99):
        miss = np.abs(k / n - p) > h
        assert sst.binom.pmf(k, n, p)[miss].sum() <= alpha


# --------------------------------------------------------------------------- binomial acceptance
@pytest.mark.parametrize(
    "n, p, alpha", [(50, 0.3, 0.05), (880, 0.5, 1e-6), (10_000, 0.01, 1e-9), (1, 0.5, 0.2), (200, 0.0, 0.01)]
)
def test_binomial_acceptance_is_exact_and_valid(n, p, alpha):
    """The half-width t covers the binomial law with probability >= 1 - alpha, summed exactly
    from the pmf, and it is the half-width of the quantile interval computed independently
    by a search over the cdf in mpmath."""
    t = S.binomial_acceptance(n, p, alpha)
    k = np.arange(n + 1)
    outside = np.abs(k / n - p) > t + 1e-15
    assert sst.binom.pmf(k, n, p)[outside].sum() <= alpha
    with mpmath.workdps(30):
        pm = mpmath.mpf(p)
        cdf = [mpmath.mpf(0)]
        for j in range(n + 1):
            cdf.append(cdf[-1] + mpmath.binomial(n, j) * pm**j * (1 - pm) ** (n - j))
        lo = next(j for j in range(n + 1) if cdf[j + 1] >= alpha / 2)  # smallest j with P(K <= j) >= a/2
        hi = next(j for j in range(n, -1, -1) if 1 - cdf[j] >= alpha / 2)  # largest j with P(K >= j) >= a/2
    assert t == pytest.approx(max(p - lo / n, hi / n - p), abs=1e-12)


def test_binomial_acceptance_at_an_extreme_alpha_falls_back_to_the_whole_range():
    assert S.binomial_acceptance(880, 0.5, 1e-300) == 0.5  # P(K = 0) = 2^-880 > 1e-300: every count is accepted
    assert S.binomial_acceptance(880, 1.0, 1e-300) == 0.0


# --------------------------------------------------------------------------- empirical Bernstein
@pytest.mark.parametrize(
    "spread, variance, n, alpha", [(1.0, 0.25, 100, 0.05), (2.0, 1e-4, 10**6, 1e-8), (0.5, 0.0, 2, 0.5)]
)
def test_empirical_bernstein_closed_form(spread, variance, n, alpha):
    """Maurer and Pontil (2009), Theorem 4, at alpha/2 per side: sqrt(2 V log(2/(alpha/2)) / n)
    + 7 R log(2/(alpha/2)) / (3 (n - 1)), in mpmath."""
    ell = mpmath.log(4 / mpmath.mpf(alpha))
    expected = mpmath.sqrt(2 * variance * ell / n) + 7 * spread * ell / (3 * (n - 1))
    assert S.empirical_bernstein(spread, variance, n, alpha) == pytest.approx(float(expected), rel=1e-12)


def test_empirical_bernstein_coverage_by_simulation():
    """Means of n = 50 Bernoulli(0.2) draws, their unbiased sample variance, R = 20,000 runs at
    alpha = 0.05: misses are at most the binomial quantile of R runs at rate alpha, at a
    false-failure probability of 1e-6."""
    rng = np.random.default_rng(20261201)
    R, n, p, a = 20_000, 50, 0.2, 0.05
    x = (rng.random((R, n)) < p).astype(float)
    var = x.var(axis=1, ddof=1)
    half = np.array([S.empirical_bernstein(1.0, v, n, a) for v in var])
    misses = int(np.count_nonzero(np.abs(x.mean(axis=1) - p) > half))
    assert misses <= sst.binom.isf(1e-6, R, a), misses


# --------------------------------------------------------------------------- simulated means
def test_mean_tolerance_chooses_the_exact_interval_for_zero_one_values():
    assert S.mean_tolerance([0.0, 1.0], 0.3, 500, 1e-6) == S.binomial_acceptance(500, 0.3, 1e-6)
    assert S.mean_tolerance(np.eye(3), 0.3, 500, 1e-6) == S.binomial_acceptance(500, 0.3, 1e-6)
    assert S.mean_tolerance([0.0, 0.5, 2.0], 0.7, 500, 1e-6) == pytest.approx(S.hoeffding(2.0, 500, 1e-6))
    assert math.isnan(S.mean_tolerance([0.0, 1.0], math.nan, 500, 1e-6))


def test_paired_tolerance_is_the_smaller_bound_at_half_alpha():
    hoeff = S.hoeffding(2.0, 10_000, 0.5e-6)
    bern = S.empirical_bernstein(2.0, 1e-4, 10_000, 0.5e-6)
    assert bern < hoeff and S.paired_tolerance(2.0, 1e-4, 10_000, 1e-6) == bern
    assert S.paired_tolerance(2.0, 1.0, 10_000, 1e-6) == pytest.approx(
        min(hoeff, S.empirical_bernstein(2.0, 1.0, 10_000, 0.5e-6))
    )
    assert S.paired_tolerance(2.0, 0.0, 1, 1e-6) == pytest.approx(S.hoeffding(2.0, 1, 1e-6))  # one pair: Hoeffding only


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: S.dkw(0, 0.05), r"^n: got 0, expected an integer >= 1"),
        (lambda: S.dkw(10, 0.0), r"^alpha: got 0.0, expected a number in \(0, 1\]"),
        (lambda: S.dkw(10, float("nan")), r"^alpha: got nan"),
        (lambda: S.hoeffding(-1.0, 10, 0.05), r"^spread: got -1.0, expected finite numbers >= 0"),
        (lambda: S.clopper_pearson_lower(11, 10, 0.05), r"^k: got 11, expected integer counts in 0..n"),
        (lambda: S.clopper_pearson_upper(2.5, 10, 0.05), r"^k: got 2.5"),
        (lambda: S.dkw_samples(0.0, 0.05), r"^tol: got 0.0"),
        (lambda: S.wilson(1, 10, z=float("inf")), r"^z: got inf"),
        (lambda: S.binomial_acceptance(0, 0.5, 0.05), r"^n: got 0"),
        (lambda: S.empirical_bernstein(1.0, 0.1, 1, 0.05), r"^n: got 1, expected an integer >= 2"),
        (lambda: S.empirical_bernstein(1.0, 0.1, 10, 1.5), r"^alpha: got 1.5"),
    ],
)
def test_errors_are_one_line(call, match):
    with pytest.raises(LdpSimError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
