"""Neyman-Pearson tests on privatised counts, exact laws, tilted estimates of tiny type II
errors and the Chernoff-Stein exponent (docs/theory.md sec. 5).

Statistical checks use fixed seeds and tolerances whose false-failure probability is stated
(<= 1e-6 each): exact binomial bounds (tests/stats_checks.py) for Monte Carlo error rates, and
6 estimated standard errors (normal tail 2e-9) for the importance-sampling estimates, which
are means of 2*10^4 or more i.i.d. bounded weights.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import special, stats

from ldpsim import LdpSimError
from ldpsim.analyst.testing import (
    MAX_COMPOSITIONS,
    chernoff_information,
    chernoff_stein_exponent,
    hypothesis_marginals,
    llr_exact_law,
    lrt_exact,
    lrt_normal,
    stein_exponent_curve,
    type2_error_tilted,
)
from ldpsim.mechanisms import binary_mechanism_for_priors, from_matrix, randomized_response
from tests.stats_checks import FALSE_FAILURE, binomial_cells_ok


def _rr_pair(k=3, eps=1.0, seed=0):
    rng = np.random.default_rng(seed)
    P0, P1 = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    return hypothesis_marginals(randomized_response(k, eps), P0, P1)


# Outputs 0 and 1 share a likelihood ratio (2/3): the grouping of equal ratios is exercised.
TIED = (np.array([0.2, 0.1, 0.3, 0.4]), np.array([0.3, 0.15, 0.45, 0.1]))


# --------------------------------------------------------------------- (a) exact LRT
@pytest.mark.parametrize("pair", [_rr_pair(3, 1.0), _rr_pair(4, 2.0, seed=5), TIED])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_exact_law_matches_brute_force_enumeration(pair, n):
    M0, M1 = pair
    w = np.log(M1) - np.log(M0)
    agg: dict[float, list[float]] = {}
    for c in itertools.product(range(n + 1), repeat=M0.size):
        if sum(c) != n:
            continue
        L = float(np.dot(c, w))
        key = next((k for k in agg if abs(k - L) <= 1e-9), L)
        acc = agg.setdefault(key, [0.0, 0.0])
        acc[0] += stats.multinomial.pmf(c, n, M0)
        acc[1] += stats.multinomial.pmf(c, n, M1)
    keys = sorted(agg)
    law = llr_exact_law(M0, M1, n)
    np.testing.assert_allclose(law.values, keys, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.exp(law.log_pmf0), [agg[k][0] for k in keys], rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(np.exp(law.log_pmf1), [agg[k][1] for k in keys], rtol=1e-10, atol=1e-300)
    assert math.isclose(special.logsumexp(law.log_pmf0), 0.0, abs_tol=1e-12)


@pytest.mark.parametrize("alpha", [0.001, 0.05, 0.3, 0.9])
@pytest.mark.parametrize("pair,n", [(_rr_pair(3, 1.0), 40), (TIED, 25), (_rr_pair(2, 0.5, seed=2), 500)])
def test_exact_test_has_type_one_error_alpha_exactly(pair, n, alpha):
    M0, M1 = pair
    test = lrt_exact(M0, M1, n, alpha)
    law = llr_exact_law(M0, M1, n)
    p0, p1 = np.exp(law.log_pmf0), np.exp(law.log_pmf1)
    at = np.abs(law.values - test.threshold) <= test.tie_tol
    above = law.values > test.threshold + test.tie_tol
    assert at.sum() == 1 and 0.0 <= test.gamma <= 1.0
    type1 = math.fsum(p0[above]) + test.gamma * p0[at][0]
    assert math.isclose(type1, alpha, rel_tol=1e-9)
    assert math.fsum(p0[above]) <= alpha <= math.fsum(p0[above]) + p0[at][0] * (1 + 1e-12)
    below = ~above & ~at
    beta = math.fsum(p1[below]) + (1 - test.gamma) * p1[at][0]
    assert math.isclose(test.beta, beta, rel_tol=1e-9)


def test_exact_test_error_rates_by_monte_carlo():
    M0, M1 = _rr_pair(3, 1.0)
    n, alpha, draws = 30, 0.05, 200_000
    test = lrt_exact(M0, M1, n, alpha)
    rng = np.random.default_rng(11)
    rejected0 = int(test.reject(rng.multinomial(n, M0, size=draws), rng).sum())
    accepted1 = int((~test.reject(rng.multinomial(n, M1, size=draws), rng)).sum())
    # each count is exactly Binomial(draws, rate); two cells checked at level FALSE_FAILURE together
    bad = binomial_cells_ok(
        np.array([rejected0, accepted1]), np.full(2, draws), np.array([alpha, test.beta]), FALSE_FAILURE
    )
    assert not bad, bad
    assert test.type1 == pytest.approx(alpha, rel=1e-12)


def test_normal_test_is_close_to_exact_at_moderate_n():
    M0, M1 = _rr_pair(3, 1.0)
    exact, normal = lrt_exact(M0, M1, 400, 0.05), lrt_normal(M0, M1, 400, 0.05)
    law = llr_exact_law(M0, M1, 400)
    type1 = float(np.exp(law.log_pmf0[law.values > normal.threshold]).sum())
    assert abs(type1 - 0.05) < 0.01  # Berry-Esseen order 1/sqrt(n)
    assert abs(normal.threshold - exact.threshold) < 0.1 * abs(exact.threshold)
    assert normal.method == "normal" and normal.gamma == 0.0


# --------------------------------------------------------------------- (b) tilted estimator
@pytest.mark.parametrize(
    "pair,n,seed",
    [(_rr_pair(3, 1.0), 60, 1), (_rr_pair(3, 1.0), 200, 2), (TIED, 150, 3), (_rr_pair(3, 1.0), 1000, 4)],
)
def test_tilted_estimate_agrees_with_exact_beta(pair, n, seed):
    M0, M1 = pair
    test = lrt_exact(M0, M1, n, 0.05)
    est = type2_error_tilted(M0, M1, n, test.threshold, seed, 20_000, gamma=test.gamma)
    # 6 estimated standard errors: false-failure probability ~2e-9 by the CLT
    assert abs(est.beta - test.beta) <= 6 * est.std_error
    assert est.rel_error <= 0.1


def _binary_beta_exact(M0, M1, n, t, gamma):
    """beta = P1(L < t) + (1 - gamma) P1(L = t) for a two-output pair, independently of the
    code: L = c w_a + (n - c) w_b with c ~ Binomial(n, M1[0]) the count of output 0 under H1
    (w = log M1/M0), so beta is a binomial tail (scipy.stats, in logs)."""
    w_a, w_b = math.log(M1[0] / M0[0]), math.log(M1[1] / M0[1])
    c_t = (t - n * w_b) / (w_a - w_b)  # L(c) = t; L is strictly monotone in c (w_a != w_b)
    c0 = round(c_t)
    assert abs(c_t - c0) < 1e-6  # the exact threshold is a value of L
    # L < t: c > c0 when L decreases in c (w_a < w_b), c < c0 otherwise; the tail summed from
    # the log pmf (binom.logsf is not accurate where the tail underflows)
    cs = np.arange(c0 + 1, n + 1) if w_a < w_b else np.arange(0, c0)
    parts = [float(special.logsumexp(stats.binom.logpmf(cs, n, M1[0])))]
    if gamma < 1:
        parts.append(math.log1p(-gamma) + stats.binom.logpmf(c0, n, M1[0]))
    return float(special.logsumexp(parts))


def test_tilted_estimate_reaches_far_below_1e_minus_30():
    """The instances are explicit and their property is established here, not left to a prior
    draw (the old Dirichlet draw of seed 0 happened to give beta ~ 1e-1146; other draws give
    1e-93 to 1e-703, and the test failed at every other seed).

    Binary mechanism at eps = 1 for P0 = (0.4, 0.3, 0.2, 0.1), P1 its reverse: two outputs,
    so the exact beta is a binomial tail, computed with scipy here; it is below 1e-30 at both n.
    Randomized response (k = 3, eps = 1) for P0 = (0.7, 0.2, 0.1), P1 its reverse at
    n = 20000 with the normal threshold t: the Chernoff bound beta = P1(L <= t) <=
    e^t E1[e^-L] = e^t (lambda = 1: E1[e^-w] = sum M0 = 1) puts beta below e^t ~ 1e-1145,
    far below 1e-1000; the estimate must sit below the bound (up to its error)."""
    P0 = np.array([0.4, 0.3, 0.2, 0.1])
    P1 = P0[::-1].copy()
    M0, M1 = hypothesis_marginals(binary_mechanism_for_priors(P0, P1, 1.0), P0, P1)
    p = math.e / (1 + math.e)  # the closed form of the binary mechanism, T = {P0 >= P1} = {0, 1}
    np.testing.assert_allclose(M0, [0.7 * p + 0.3 * (1 - p), 0.7 * (1 - p) + 0.3 * p], rtol=1e-14)
    np.testing.assert_allclose(M1, [0.3 * p + 0.7 * (1 - p), 0.3 * (1 - p) + 0.7 * p], rtol=1e-14)
    for n, seed in ((2_000, 2_000), (20_000, 20_000)):
        test = lrt_exact(M0, M1, n, 0.05)
        exact = _binary_beta_exact(M0, M1, n, test.threshold, test.gamma)
        assert exact < math.log(1e-30)  # the property of the instance
        assert test.log_beta == pytest.approx(exact, rel=1e-9)
        est = type2_error_tilted(M0, M1, n, test.threshold, seed, 20_000, gamma=test.gamma)
        assert est.log_beta < math.log(1e-30)
        assert est.rel_error <= 0.1
        # in log space: |log(est/beta)| <= 6 rel. standard errors (first order), FALSE_FAILURE ~2e-9
        assert abs(est.log_beta - exact) <= 6 * est.rel_error
    # k-ary randomized response at large n (normal threshold): beta < 1e-1000
    P0 = np.array([0.7, 0.2, 0.1])
    M0, M1 = hypothesis_marginals(randomized_response(3, 1.0), P0, P0[::-1].copy())
    w = np.log(M1) - np.log(M0)
    n = 20_000
    e0 = float(M0 @ w)
    t_ref = n * e0 + math.sqrt(n * float(M0 @ (w - e0) ** 2)) * Z95  # the normal threshold, by hand
    test = lrt_normal(M0, M1, n, 0.05)
    assert test.threshold == pytest.approx(t_ref, rel=1e-12)
    bound = t_ref  # log of the Chernoff bound e^t on beta
    assert bound < -1100 * math.log(10)
    est = type2_error_tilted(M0, M1, n, test.threshold, 9, 20_000)
    assert est.beta == 0.0 and est.rel_error <= 0.1
    assert est.log_beta < -1000 * math.log(10)
    assert est.log_beta <= bound + 6 * est.rel_error


def test_tilted_estimate_edge_thresholds():
    M0, M1 = _rr_pair(3, 1.0)
    w = np.log(M1) - np.log(M0)
    below = type2_error_tilted(M0, M1, 10, 10 * w.min() - 1.0, 0, 100)
    assert below.beta == 0.0 and below.log_beta == -math.inf
    high = type2_error_tilted(M0, M1, 10, 10 * w.max() + 1.0, 0, 100)  # always accept: beta = 1
    assert high.beta == pytest.approx(1.0) and high.tilt == 0.0


# --------------------------------------------------------------------- (c) Stein exponents
Z95 = float(stats.norm.isf(0.05))


@pytest.mark.parametrize("mechanism", ["randomized_response", "binary"])
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@settings(max_examples=3, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_measured_exponent_approaches_kl(mechanism, eps, seed):
    rng = np.random.default_rng(seed)
    P0, P1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    Q = randomized_response(3, eps) if mechanism == "randomized_response" else binary_mechanism_for_priors(P0, P1, eps)
    M0, M1 = hypothesis_marginals(Q, P0, P1)
    D = chernoff_stein_exponent(M0, M1)
    assume(D > 1e-9)  # keeps n = 3000 / D well inside int64 and double precision
    w = np.log(M1) - np.log(M0)
    sigma0 = math.sqrt(float(M0 @ (w + D) ** 2))  # sd of w under H0 (E_0 w = -D)
    ns = [math.ceil(c / D) for c in (30, 300, 3000)]  # beta_n about e^-30 .. e^-3000
    df = stein_exponent_curve(M0, M1, ns, 0.05, seed, samples=20_000)
    deficit = D - df["exponent"].to_numpy()
    lead = Z95 * sigma0 / np.sqrt(ns)  # -(1/n) log beta_n = D - z sigma0 / sqrt(n) + O(log n / n)
    assert np.all(df["rel_error"] <= 0.1)
    assert np.all(deficit > 0) and np.all(np.diff(deficit) < 0)  # shrinks with n
    # at the largest n (n D = 3000) the O(log n / n) term is < 10% of the sqrt(n) term
    # (measured 5-9%); Monte Carlo error of the exponent is <= 0.1/n, negligible
    assert deficit[-1] <= 1.2 * lead[-1]
    assert deficit[-1] >= 0.8 * lead[-1]


# --------------------------------------------------------------------- (d) Chernoff information
@pytest.mark.parametrize("pair", [_rr_pair(3, 1.0), _rr_pair(5, 0.1, seed=3), _rr_pair(4, 8.0, seed=4), TIED])
def test_chernoff_information_bounds_and_grid(pair):
    M0, M1 = pair
    C, lam = chernoff_information(M0, M1)
    d01, d10 = chernoff_stein_exponent(M0, M1), chernoff_stein_exponent(M1, M0)
    assert 0 < C <= min(d01, d10) + 1e-15
    grid = np.linspace(0.0, 1.0, 100_001)
    f = np.log(np.sum(M0[None, :] ** grid[:, None] * M1[None, :] ** (1 - grid[:, None]), axis=1))
    assert C == pytest.approx(-f.min(), rel=1e-8, abs=1e-15)
    assert abs(lam - grid[f.argmin()]) <= 1e-3
    assert 0.0 < lam < 1.0


def test_chernoff_information_of_symmetric_pair_is_at_one_half():
    M0, M1 = np.array([0.8, 0.2]), np.array([0.2, 0.8])
    C, lam = chernoff_information(M0, M1)
    assert lam == pytest.approx(0.5, abs=1e-8)
    assert C == pytest.approx(-math.log(2 * math.sqrt(0.16)), rel=1e-12)


# --------------------------------------------------------------------- (e) bad inputs
M0, M1 = _rr_pair(3, 1.0)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "0.05", True])
@pytest.mark.parametrize("fn", [lrt_exact, lrt_normal])
def test_bad_alpha(fn, alpha):
    with pytest.raises(LdpSimError, match=r"^alpha: got"):
        fn(M0, M1, 10, alpha)


@pytest.mark.parametrize("n", [0, -3, 1.5, "10", None])
def test_bad_n(n):
    for call in (
        lambda: lrt_exact(M0, M1, n, 0.05),
        lambda: lrt_normal(M0, M1, n, 0.05),
        lambda: llr_exact_law(M0, M1, n),
        lambda: type2_error_tilted(M0, M1, n, 0.0, 0, 100),
    ):
        with pytest.raises(LdpSimError, match=r"^n: got"):
            call()
    with pytest.raises(LdpSimError, match=r"^ns\[1\]: got"):
        stein_exponent_curve(M0, M1, [10, n], 0.05, 0, 100)


@pytest.mark.parametrize(
    "fn",
    [
        chernoff_stein_exponent,
        lambda a, b: chernoff_information(a, b),
        lambda a, b: lrt_exact(a, b, 5, 0.05),
        lambda a, b: lrt_normal(a, b, 5, 0.05),
        lambda a, b: type2_error_tilted(a, b, 5, 0.0, 0, 100),
        lambda a, b: stein_exponent_curve(a, b, [5], 0.05, 0, 100),
    ],
)
def test_bad_distributions(fn):
    with pytest.raises(LdpSimError, match=r"^M1: got .*different from M0"):
        fn(M0, M0.copy())
    with pytest.raises(LdpSimError, match=r"^M1: got .*length 3"):
        fn(M0, np.array([0.5, 0.5]))
    with pytest.raises(LdpSimError, match=r"^M1: got .*positive exactly where M0 is"):
        fn(np.array([0.5, 0.5, 0.0]), np.array([0.2, 0.3, 0.5]))
    with pytest.raises(LdpSimError, match=r"^M0: got"):
        fn(np.array([0.5, 0.6]), np.array([0.5, 0.5]))


def test_identical_priors_and_oversized_enumeration():
    P = np.array([0.2, 0.3, 0.5])
    with pytest.raises(LdpSimError, match=r"^P1: got .*different from P0"):
        hypothesis_marginals(randomized_response(3, 1.0), P, P.copy())
    with pytest.raises(LdpSimError, match=r"^P1: got"):
        hypothesis_marginals(randomized_response(3, 1.0), P, [0.5, 0.5])
    big = math.isqrt(2 * MAX_COMPOSITIONS) + 10  # C(n+2, 2) > MAX_COMPOSITIONS for 3 distinct ratios
    with pytest.raises(LdpSimError, match=r"^n: got .*lrt_normal"):
        lrt_exact(M0, M1, big, 0.05)
    with pytest.raises(LdpSimError, match=r"^gamma: got"):
        type2_error_tilted(M0, M1, 5, 0.0, 0, 100, gamma=1.5)
    with pytest.raises(LdpSimError, match=r"^samples: got"):
        type2_error_tilted(M0, M1, 5, 0.0, 0, 1)


def test_statistic_and_decision_on_single_count_vectors():
    Q = from_matrix([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    M0, M1 = hypothesis_marginals(Q, [1.0, 0.0], [0.0, 1.0])
    test = lrt_exact(M0, M1, 4, 0.1)
    c = np.array([0, 0, 4])
    assert test.statistic(c) == pytest.approx(4 * math.log(6.0))
    assert test.reject(c, 0) is True
    with pytest.raises(LdpSimError, match=r"^counts: got"):
        test.statistic(np.array([1.0, 2.0, 1.0]))
