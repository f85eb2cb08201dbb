"""Tests on privatised reports (:mod:`ldpsim.analyst.hypotheses`): exact p-values against an
enumeration written here, levels over thousands of null replications within their binomial
intervals, the m-ary rules' error matrices against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst.hypotheses import goodness_of_fit, homogeneity, mary_test, share_test, uniformity
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from tests.stats_checks import FALSE_FAILURE


def _rr(k: int, eps: float) -> tuple[float, float]:
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    return p, (1 - p) / (k - 1)


#: replications of a level check: 1,000 in the default run, 4,000 (the issue's figure) in the slow tier
TIERS = [pytest.param(1000, id="1000"), pytest.param(4000, id="4000", marks=pytest.mark.slow)]


def _level_interval(reps: int, alpha: float) -> tuple[float, float]:
    """Where the rejection count of a test with level exactly alpha falls but with
    probability FALSE_FAILURE (a rejection rate below alpha is allowed: valid tests may be
    conservative)."""
    return 0.0, stats.binom.isf(FALSE_FAILURE, reps, alpha) / reps


def test_goodness_of_fit_exact_p_value_against_enumeration():
    """Every vector of output counts of n = 12 reports of 3-ary randomized response: the
    estimate (c/n - q)/(p - q), its exact variance M(1 - M)/(n (p - q)^2), the statistic and
    the null mass of the vectors at least as far, all written here."""
    k, eps, n = 3, 1.0, 12
    rr = catalog.build("randomized_response", k=k, eps=eps)
    p, q = _rr(k, eps)
    pi0 = np.array([0.5, 0.3, 0.2])
    m0 = pi0 * (p - q) + q
    var = m0 * (1 - m0) / (n * (p - q) ** 2)

    def distance(c):
        f = (np.asarray(c) / n - q) / (p - q)
        return float((((f - pi0) ** 2) / var).sum())

    observed = np.array([2, 6, 4])
    t_obs = distance(observed)
    want = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            c = (a, b, n - a - b)
            if distance(c) >= t_obs - 1e-9:
                want += stats.multinomial.pmf(c, n, m0)
    got = goodness_of_fit(rr, observed, pi0)
    assert got.method == "exact" and got.p_value == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("oracle", ["randomized_response", "oue", "olh", "hadamard_response"])
def test_goodness_of_fit_keeps_its_level(oracle, tier):
    """Monte Carlo p-values are valid at any number of draws: 4,000 null replications at
    alpha = 0.05 reject at most as often as the binomial interval allows (local hashing, with
    no exact aggregate law, privatises every report: fewer replications)."""
    k, n, alpha = 6, 400, 0.05
    mech = catalog.build(oracle, k=k, eps=1.0)
    pi0 = np.array([0.3, 0.25, 0.15, 0.15, 0.1, 0.05])
    reps = tier if oracle != "olh" else tier // 10
    gen = np.random.default_rng([20261207, k])
    rejections = 0
    for r in range(reps):
        answers = gen.multinomial(n, pi0)
        c = mech.statistic(mech.privatize(np.repeat(np.arange(k), answers), gen))
        rejections += goodness_of_fit(mech, c, pi0, n=n, alpha=alpha, draws=39, rng=gen).reject
    lo, hi = _level_interval(reps, alpha)
    assert lo <= rejections / reps <= hi


def test_uniformity_detects_a_skew_and_names_its_parameters():
    rr = catalog.build("randomized_response", k=4, eps=2.0)
    gen = np.random.default_rng(3)
    c = rr.sample_statistic(gen.multinomial(5000, [0.4, 0.3, 0.2, 0.1]), gen)
    assert uniformity(rr, c, rng=1).p_value < 1e-3
    with pytest.raises(LdpSimError, match="alpha"):
        uniformity(rr, c, alpha=1.5)
    with pytest.raises(LdpSimError, match="counts"):
        uniformity(rr, c[:3])
    oue = catalog.build("oue", k=4, eps=1.0)
    with pytest.raises(LdpSimError, match="n"):
        uniformity(oue, oue.sample_statistic([5, 5, 5, 5], gen))


@pytest.mark.parametrize("reps", TIERS)
def test_conditional_homogeneity_is_exact_at_small_n(reps):
    """Three groups of 15, 10 and 8 reports: the conditional test keeps its level whatever
    the common law, even where chi-square's approximation would not."""
    rr = catalog.build("randomized_response", k=3, eps=0.5)
    gen = np.random.default_rng(11)
    alpha = 0.05
    law = np.array([0.7, 0.2, 0.1])
    rejections = 0
    for _ in range(reps):
        groups = [rr.sample_statistic(gen.multinomial(m, law), gen) for m in (15, 10, 8)]
        rejections += homogeneity(rr, groups, alpha=alpha, draws=39, rng=gen).reject
    assert rejections / reps <= _level_interval(reps, alpha)[1]


def test_homogeneity_matches_pearson_and_finds_a_difference():
    rr = catalog.build("randomized_response", k=4, eps=1.0)
    gen = np.random.default_rng(5)
    a = rr.sample_statistic(gen.multinomial(4000, [0.4, 0.3, 0.2, 0.1]), gen)
    b = rr.sample_statistic(gen.multinomial(4000, [0.25, 0.25, 0.25, 0.25]), gen)
    got = homogeneity(rr, [a, b], rng=1)
    assert got.statistic == pytest.approx(stats.chi2_contingency(np.stack([a, b]), correction=False)[0], rel=1e-12)
    assert got.reject and got.method == "conditional"


@pytest.mark.slow
def test_bootstrap_homogeneity_level_for_unary_encoding():
    oue = catalog.build("oue", k=5, eps=1.0)
    gen = np.random.default_rng(12)
    reps, alpha = 4000, 0.05
    law = np.array([0.35, 0.25, 0.2, 0.15, 0.05])
    rejections = 0
    for _ in range(reps):
        groups = [oue.sample_statistic(gen.multinomial(m, law), gen) for m in (300, 500)]
        rejections += homogeneity(oue, groups, sizes=[300, 500], alpha=alpha, draws=39, rng=gen).reject
    lo = stats.binom.ppf(FALSE_FAILURE, reps, alpha) / reps
    assert lo <= rejections / reps <= _level_interval(reps, alpha)[1]


def test_bootstrap_homogeneity_runs_for_unary_encoding():
    oue = catalog.build("oue", k=5, eps=1.0)
    gen = np.random.default_rng(13)
    a = oue.sample_statistic(gen.multinomial(3000, [0.4, 0.3, 0.1, 0.1, 0.1]), gen)
    b = oue.sample_statistic(gen.multinomial(3000, [0.2, 0.2, 0.2, 0.2, 0.2]), gen)
    got = homogeneity(oue, [a, b], sizes=[3000, 3000], rng=2)
    assert got.method == "parametric bootstrap" and got.reject
    with pytest.raises(LdpSimError, match="sizes"):
        homogeneity(oue, [a, b])


def test_mary_errors_against_brute_force_and_minimax_balances():
    """Three hypotheses, n = 8 reports of 3-ary randomized response: every output count
    vector, its likelihood under each hypothesis and the Bayes decision, written here."""
    k, eps, n = 3, 1.0, 8
    rr = catalog.build("randomized_response", k=k, eps=eps)
    p, q = _rr(k, eps)
    hyps = np.array([[0.6, 0.3, 0.1], [1 / 3, 1 / 3, 1 / 3], [0.1, 0.3, 0.6]])
    outs = hyps * (p - q) + q
    want = np.zeros((3, 3))
    for c in itertools.product(range(n + 1), repeat=k):
        if sum(c) != n:
            continue
        like = np.array([stats.multinomial.pmf(c, n, o) for o in outs])
        want[int(np.argmax(like)), :] += like
    got = mary_test(rr, [3, 3, 2], hyps)
    assert got.method == "exact"
    np.testing.assert_allclose(got.errors, want, rtol=1e-10, atol=1e-14)
    mm = mary_test(rr, [3, 3, 2], hyps, rule="minimax")
    assert mm.error.max() <= got.error.max() + 1e-12
    assert got.bayes_risk <= float(np.full(3, 1 / 3) @ mm.error) + 1e-12  # Bayes is best at its own weights


def test_mary_for_an_oracle_measures_its_errors():
    oue = catalog.build("oue", k=4, eps=1.0)
    gen = np.random.default_rng(4)
    hyps = [[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]
    c = oue.sample_statistic(gen.multinomial(500, hyps[0]), gen)
    got = mary_test(oue, c, hyps, n=500, draws=4000, rng=1)
    assert got.method == "monte carlo" and got.decision == 0 and got.error.max() < 0.01
    with pytest.raises(LdpSimError, match="rule"):
        mary_test(oue, c, hyps, n=500, rule="best")


def test_share_test_level_at_the_boundary():
    rr = catalog.build("randomized_response", k=4, eps=1.0)
    gen = np.random.default_rng(21)
    law = np.array([0.3, 0.3, 0.25, 0.15])
    reps, alpha = 2000, 0.05
    rejections = sum(
        share_test(
            rr, rr.sample_statistic(gen.multinomial(800, law), gen), 0, 0.3, alpha=alpha, draws=99, rng=gen
        ).reject
        for _ in range(reps)
    )
    lo = stats.binom.ppf(FALSE_FAILURE, reps, alpha) / reps
    assert lo <= rejections / reps <= _level_interval(reps, alpha)[1]
    with pytest.raises(LdpSimError, match="threshold"):
        share_test(rr, [200, 200, 200, 200], 0, 1.5)


def _looks(reps: int, looks: list[int], law, gen):
    """Output counts of randomized response (k = 4, eps = 1) at each look, per replication."""
    rr = catalog.build("randomized_response", k=4, eps=1.0)
    out = np.asarray(rr.forward(np.asarray(law)))
    steps = np.diff([0, *looks])
    return rr, np.cumsum(np.stack([gen.multinomial(s, out, size=reps) for s in steps], axis=1), axis=1)


def test_sequential_tests_keep_their_level_where_repeated_fixed_tests_do_not():
    """An analyst who looks after every 300 reports, ten times: the fixed-n test repeated at
    each look rejects a true null far more often than alpha; the e-value test stays within
    alpha's binomial interval over the whole run."""
    from ldpsim.analyst.hypotheses import sequential_goodness_of_fit

    gen = np.random.default_rng(31)
    law = np.array([0.4, 0.3, 0.2, 0.1])
    looks = list(range(300, 3001, 300))
    reps, alpha = 300, 0.05
    rr, counts = _looks(reps, looks, law, gen)
    fixed = sum(any(goodness_of_fit(rr, c, law, draws=39, rng=gen).reject for c in run) for run in counts)
    seq = sum(any(sequential_goodness_of_fit(rr, c, law).reject for c in run) for run in counts)
    hi = _level_interval(reps, alpha)[1]
    assert seq / reps <= hi
    assert fixed / reps > hi  # peeking inflates the error of the fixed-n test (about 0.2 here)


@pytest.mark.parametrize("reps", TIERS)
def test_sequential_level_over_many_replications(reps):
    from ldpsim.analyst.hypotheses import sequential_homogeneity, sequential_uniformity

    gen = np.random.default_rng(32)
    looks = list(range(100, 2001, 100))
    alpha = 0.05
    rr, counts = _looks(reps, looks, np.full(4, 0.25), gen)
    rate = np.mean([any(sequential_uniformity(rr, c).reject for c in run) for run in counts])
    _, other = _looks(reps, looks, np.full(4, 0.25), gen)
    rate2 = np.mean(
        [any(sequential_homogeneity(rr, [a, b]).reject for a, b in zip(r1, r2)) for r1, r2 in zip(counts, other)]
    )
    hi = _level_interval(reps, alpha)[1]
    assert rate <= hi and rate2 <= hi


def test_sequential_tests_find_a_change():
    from ldpsim.analyst.hypotheses import sequential_goodness_of_fit, sequential_homogeneity

    gen = np.random.default_rng(33)
    rr, counts = _looks(1, [12_000], [0.3, 0.3, 0.2, 0.2], gen)
    _, base = _looks(1, [12_000], [0.5, 0.3, 0.1, 0.1], gen)
    assert sequential_goodness_of_fit(rr, counts[0, 0], [0.4, 0.3, 0.2, 0.1]).reject
    assert sequential_homogeneity(rr, [counts[0, 0], base[0, 0]]).reject
    with pytest.raises(LdpSimError, match="oracle"):
        sequential_goodness_of_fit(catalog.build("oue", k=4, eps=1.0), [1, 1, 1, 1], [0.25] * 4)


@pytest.mark.parametrize("reps", TIERS)
def test_mean_difference_level_and_power(reps):
    from ldpsim.analyst.hypotheses import mean_difference_test

    duchi = catalog.build("duchi", eps=1.0)
    gen = np.random.default_rng(34)
    alpha = 0.05
    x = gen.uniform(-0.5, 0.9, size=(reps, 2, 300))
    y = duchi.privatize(x.ravel(), gen).reshape(x.shape)
    rate = np.mean([mean_difference_test(r[0], r[1], alpha=alpha).reject for r in y])
    lo = stats.binom.ppf(FALSE_FAILURE, reps, alpha) / reps
    assert lo <= rate <= _level_interval(reps, alpha)[1]
    far = duchi.privatize(np.full(3000, 0.6), gen)
    assert mean_difference_test(far, duchi.privatize(np.full(3000, 0.0), gen)).reject
    assert not mean_difference_test(far, far + 0.1, delta=-0.1).reject


@pytest.mark.parametrize("reps", TIERS)
def test_sequential_share_constrained_maximum_and_level(reps):
    """The largest null likelihood against a numerical maximisation written here, and the
    level over ten looks at the boundary of the null."""
    from scipy import optimize as opt

    from ldpsim.analyst.hypotheses import sequential_share_test

    rr = catalog.build("randomized_response", k=3, eps=1.0)
    p, q = _rr(3, 1.0)
    c = np.array([60.0, 25.0, 15.0])  # the estimate of answer 0 is well above 0.3
    n = c.sum()
    t = 0.3 * (p - q) + q  # estimate <= 0.3  <=>  M_0 <= t for randomized response

    def neg(z):
        m = np.exp(z - z.max())
        m /= m.sum()
        return -float((c * np.log(m)).sum())

    cons = {"type": "ineq", "fun": lambda z: t - np.exp(z[0] - z.max()) / np.exp(z - z.max()).sum()}
    best = opt.minimize(neg, np.zeros(3), constraints=[cons], method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    mixture = math.lgamma(1.5) - math.lgamma(n + 1.5) + sum(math.lgamma(x + 0.5) - math.lgamma(0.5) for x in c)
    got = sequential_share_test(rr, c, 0, 0.3)
    assert got.log_e == pytest.approx(mixture + best.fun, abs=1e-6)
    gen = np.random.default_rng(41)
    law = np.asarray(rr.forward(np.array([0.3, 0.45, 0.25])))
    looks = np.cumsum(gen.multinomial(100, law, size=(reps, 10)), axis=1)
    rate = np.mean([any(sequential_share_test(rr, cc, 0, 0.3).reject for cc in run) for run in looks])
    assert rate <= _level_interval(reps, 0.05)[1]
    assert sequential_share_test(
        rr, rr.sample_statistic(gen.multinomial(20_000, [0.45, 0.3, 0.25]), gen), 0, 0.3
    ).reject
