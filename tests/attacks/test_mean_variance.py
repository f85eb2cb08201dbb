"""The variance of a numeric question under LDP (the two-group protocol of Li, Li, Sun, Gong
and Li 2023) and their joint mean-and-variance attacks, OPA and IPA.

References are computed here, never read from the code under test: Duchi's mechanism on
[-1, 1] reports +-C with C = (e^eps + 1)/(e^eps - 1), so Var(y | x) = C^2 - x^2; the piecewise
mechanism's reports reach C = (e^(eps/2) + 1)/(e^(eps/2) - 1) (Wang et al. 2019). On [-1, 1]
the squares fill [0, 1] and the second group privatises 2 x^2 - 1. Simulated means are
compared by t tests at the suite's false-failure probability (1e-6 in all per test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst.means import moment_reports, moments_estimate, moments_law, square_back, square_input
from ldpsim.attacks import STRATEGIES, expected_gain, expected_moments, fake_share_needed
from ldpsim.attacks.strategies import moment_statistic
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from tests.stats_checks import FALSE_FAILURE

EPS = 1.0
C_DUCHI = (math.exp(EPS) + 1) / (math.exp(EPS) - 1)
C_PM = (math.exp(EPS / 2) + 1) / (math.exp(EPS / 2) - 1)


def _duchi():
    return catalog.build("duchi", eps=EPS, lo=-1.0, hi=1.0)


def _piecewise():
    return catalog.build("piecewise", eps=EPS, lo=-1.0, hi=1.0)


def test_one_group_cannot_estimate_the_second_moment_through_duchi():
    """Why two groups: every Duchi report has the same square, whatever the answer."""
    y = _duchi().privatize(np.linspace(-1, 1, 101).repeat(20), np.random.default_rng(1))
    assert np.allclose(y * y, C_DUCHI**2)


def test_the_square_map_and_its_inverse():
    x = np.array([-1.0, -0.5, 0.0, 0.3, 1.0])
    assert np.allclose(square_input(x, -1.0, 1.0), 2 * x * x - 1)
    assert np.allclose(square_back(2 * x * x - 1, -1.0, 1.0), x * x)
    # [2, 5]: squares fill [4, 25], mapped onto [2, 5]
    assert np.allclose(square_input([2.0, 5.0, 3.0], 2.0, 5.0), [2.0, 5.0, 2 + 3 * (9 - 4) / 21])


def test_the_exact_law_against_the_closed_form_of_duchi():
    x1 = np.array([-0.9, -0.2, 0.4, 0.7])
    x2 = np.array([-0.5, 0.1, 0.8])
    law = moments_law(_duchi(), x1, x2)
    var1 = np.sum(C_DUCHI**2 - x1**2) / 16
    var2 = np.sum(C_DUCHI**2 - (2 * x2**2 - 1) ** 2) / 4 / 9  # (1/2)^2 of the reports' variance
    assert law.mean == pytest.approx(x1.mean()) and law.mean_var == pytest.approx(var1)
    assert law.second_moment == pytest.approx(np.mean(x2**2)) and law.second_moment_var == pytest.approx(var2)
    assert law.variance == pytest.approx(np.mean(x2**2) - x1.mean() ** 2 - var1)


def test_the_estimates_are_unbiased_and_the_variance_biased_by_var_of_the_mean():
    """Fixed small groups (so the bias -Var(mu_hat) is large against the noise), many
    replications; three two-sided t tests, and the exact variances against the sample's."""
    mech = _duchi()
    x1 = np.linspace(-0.8, 0.6, 12)
    x2 = np.linspace(-0.3, 0.9, 10)
    reps = 40_000
    rng = np.random.default_rng(2023)
    y1 = mech.privatize(np.tile(x1, reps), rng).reshape(reps, -1)
    y2 = mech.privatize(np.tile(2 * x2**2 - 1, reps), rng).reshape(reps, -1)
    mu = y1.mean(axis=1)
    m2 = (y2.mean(axis=1) + 1) / 2
    var = m2 - mu**2
    var1 = np.sum(C_DUCHI**2 - x1**2) / x1.size**2
    z = stats.t.isf(FALSE_FAILURE / 6, reps - 1)
    for sample, want in ((mu, x1.mean()), (m2, np.mean(x2**2)), (var, np.mean(x2**2) - x1.mean() ** 2 - var1)):
        assert abs(sample.mean() - want) <= z * sample.std(ddof=1) / math.sqrt(reps)
    law = moments_law(mech, x1, x2)
    assert mu.var(ddof=1) == pytest.approx(law.mean_var, rel=0.05)
    assert m2.var(ddof=1) == pytest.approx(law.second_moment_var, rel=0.05)
    assert var.mean() < np.mean(x2**2) - x1.mean() ** 2  # the bias is visible: more than 30 se


def test_moments_estimate_from_the_protocol_reports():
    mech = _piecewise()
    rng = np.random.default_rng(5)
    x = -1 + 2 * rng.beta(2, 5, 200_000)
    second, y = moment_reports(mech, x, rng)
    est = moments_estimate(y[~second], y[second], mech, x[~second], x[second])
    assert est.n_mean + est.n_square == x.size
    # five standard errors: a normal tail of 6e-7 each
    assert abs(est.mean - x[~second].mean()) <= 5 * est.mean_se
    assert abs(est.second_moment - np.mean(x[second] ** 2)) <= 5 * est.second_moment_se
    assert abs(est.variance - np.var(x)) <= 5 * est.variance_se + 5 * est.mean_se
    assert est.mean_se == pytest.approx(math.sqrt(est.exact.mean_var), rel=0.05)


def _honest(x):
    return float(np.mean(x)), float(np.mean(x * x))


def test_opa_fake_values_reach_the_targets_and_the_share_it_needs():
    mech = _piecewise()
    x = -1 + 2 * np.random.default_rng(3).beta(2, 5, 50_000)
    mu, m2 = _honest(x)
    target = (-0.2, 0.2)
    g_t, g_h = 2 * (0.2 + 0.04) - 1, 2 * m2 - 1  # g of the target and honest second moments
    need = max((target[0] - mu) / (C_PM - mu), (g_h - g_t) / (g_h + C_PM))
    assert fake_share_needed(mech, "output_mean_variance", target, (mu, m2)) == pytest.approx(need, rel=1e-12)
    need_ipa = max((target[0] - mu) / (1 - mu), (g_h - g_t) / (g_h + 1))
    assert fake_share_needed(mech, "input_mean_variance", target, (mu, m2)) == pytest.approx(need_ipa, rel=1e-12)
    beta = 0.08  # above need (0.051): OPA reaches both targets exactly in the large-sample limit
    out = expected_moments(mech, "output_mean_variance", target, beta, honest=(mu, m2))
    assert out.mean == pytest.approx(-0.2, abs=1e-12) and out.variance == pytest.approx(0.2, abs=1e-12)
    assert out.fake_mean_value == pytest.approx((-0.2 - (1 - beta) * mu) / beta)
    # below the share IPA needs (0.16): IPA's mean stops at (1 - beta) mu + beta
    ipa = expected_moments(mech, "input_mean_variance", target, beta, honest=(mu, m2))
    assert ipa.mean == pytest.approx((1 - beta) * mu + beta)
    gain = expected_gain(mech, "output_mean_variance", target, beta, [mu, m2])
    assert gain == pytest.approx(0.2 - (m2 - mu * mu))


@pytest.mark.parametrize("name", ["output_mean_variance", "input_mean_variance"])
def test_simulated_attacks_against_the_exact_expectations(name):
    """Honest respondents drawn from a Beta(2, 5) sample on [-1, 1], the two-group protocol,
    fake reports from the strategy; 200 replications, two t tests."""
    mech = _piecewise()
    rng = np.random.default_rng(11)
    pop = -1 + 2 * rng.beta(2, 5, 100_000)
    honest = _honest(pop)
    n, beta, target = 4_000, 0.05, (-0.2, 0.2)
    m = round(beta * n / (1 - beta))
    st = STRATEGIES[name]
    means, variances = [], []
    for _ in range(200):
        x = pop[rng.integers(0, pop.size, n)]
        second, y = moment_reports(mech, x, rng)
        fake = st.reports(mech, np.array(target), m, rng, prior=np.array(honest), share=m / (n + m))
        stat = moment_statistic(np.column_stack([second, y])) + moment_statistic(fake)
        mean, var = st.estimates(mech, stat)
        means.append(mean)
        variances.append(var)
    means, variances = np.array(means), np.array(variances)
    n1 = (n + m) / 2
    want = expected_moments(mech, name, target, m / (n + m), answers=pop, n_mean=round(n1))
    z = stats.t.isf(FALSE_FAILURE / 4, means.size - 1)
    assert abs(means.mean() - want.mean) <= z * means.std(ddof=1) / math.sqrt(means.size)
    # the group sizes are random here, fixed in the formula: a second-order difference
    assert abs(variances.mean() - want.variance) <= z * variances.std(ddof=1) / math.sqrt(means.size) + 1e-4
    if name == "input_mean_variance":
        assert np.unique(fake[:, 1]).size > 2  # privatised honestly


def test_fake_reports_alternate_between_the_groups_and_opa_stays_in_range():
    mech = _piecewise()
    fake = STRATEGIES["output_mean_variance"].reports(
        mech, np.array([0.9, 0.5]), 7, np.random.default_rng(0), prior=np.array([-0.4, 0.3]), share=0.01
    )
    assert fake[:, 0].tolist() == [0, 1, 0, 1, 0, 1, 0]
    lo, hi = mech.report_range
    assert np.all((fake[:, 1] >= lo) & (fake[:, 1] <= hi)) and fake[0, 1] == hi


def test_errors_name_the_parameter():
    mech = _piecewise()
    with pytest.raises(LdpSimError, match="^target: got"):
        expected_moments(mech, "output_mean_variance", (0.1,), 0.1, honest=(0.0, 0.3))
    with pytest.raises(LdpSimError, match="^target: got"):
        expected_moments(mech, "output_mean_variance", (0.1, -1.0), 0.1, honest=(0.0, 0.3))
    with pytest.raises(LdpSimError, match="^strategy: got 'output_mean'"):
        fake_share_needed(mech, "output_mean", (0.1, 0.2), (0.0, 0.3))
    with pytest.raises(LdpSimError, match="^share"):
        expected_moments(mech, "output_mean_variance", (0.1, 0.2), 1.5, honest=(0.0, 0.3))
