"""Estimates from repeated collection: each period's estimate is the inversion of its
counts, its variance and the paired covariance are the sample moments they claim to be,
and the change estimates are unbiased with intervals that cover (plain reports and
memoised reports, paired and anonymous)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst.longitudinal import (
    change_estimates,
    paired_covariance,
    period_estimates,
    report_estimators,
    z_value,
)
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import randomized_response
from tests.stats_checks import FALSE_FAILURE


def _rr_rows(k: int, eps: float) -> np.ndarray:
    """Closed form: k-RR keeps with p = e^eps / (e^eps + k - 1), else q each; the unbiased
    estimate of the indicator of answer j from report y is (1{y = j} - q) / (p - q)."""
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = 1 / (math.exp(eps) + k - 1)
    return (np.eye(k) - q) / (p - q)


def test_report_estimators_are_the_closed_form_and_the_inversion_of_counts() -> None:
    mech = randomized_response(4, 1.3)
    w = report_estimators(mech)
    assert np.allclose(w, _rr_rows(4, 1.3), atol=1e-12)
    counts = np.array([[10, 0, 5, 7], [1, 2, 3, 4]])
    est = period_estimates(w, counts)
    for t in range(2):
        assert np.allclose(est.estimate[t], mech.invert(counts[t] / counts[t].sum()), atol=1e-12)
        rows = np.repeat(w, counts[t], axis=0)  # one row per report
        assert np.allclose(est.variance[t], rows.var(axis=0, ddof=1) / counts[t].sum(), rtol=1e-10)


def test_paired_covariance_is_the_sample_covariance_over_respondents_in_both_periods() -> None:
    rng = np.random.default_rng(5)
    w = _rr_rows(3, 1.0)
    r = rng.integers(0, 3, (3, 50))
    r[0, :7] = -1
    r[1, 40:] = -1
    cov = paired_covariance(w, r)
    for t in (1, 2):
        both = (r[t] >= 0) & (r[t - 1] >= 0)
        a, b = w[r[t, both]], w[r[t - 1, both]]
        nt, ns = (r[t] >= 0).sum(), (r[t - 1] >= 0).sum()
        for j in range(3):
            c = np.cov(a[:, j], b[:, j], ddof=1)[0, 1]
            assert cov[t - 1, j] == pytest.approx(both.sum() * c / (nt * ns), rel=1e-10)


def _simulate_changes(
    memo: bool, paired: bool, R: int, n: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """R replications of two periods for n respondents (answers fixed across replications:
    the population is what is estimated). k-RR at eps = 1 per report; memoised: a permanent
    k-RR at eps 1.5 per answer, each report a k-RR at eps 1 of it."""
    k, eps = 3, 1.0
    rng = np.random.default_rng(seed)
    x0 = rng.choice(k, n, p=[0.5, 0.3, 0.2])
    x1 = np.where(rng.random(n) < 0.8, x0, rng.choice(k, n, p=[0.2, 0.3, 0.5]))
    truth = np.bincount(x1, minlength=k) / n - np.bincount(x0, minlength=k) / n

    def rr(x: np.ndarray, e: float) -> np.ndarray:
        keep = rng.random(x.size) < math.exp(e) / (math.exp(e) + k - 1)
        other = (x + rng.integers(1, k, x.size)) % k
        return np.where(keep, x, other)

    if memo:  # the chain of two k-RRs is a k-RR whose keep probability is the product rule below
        p1 = math.exp(1.5) / (math.exp(1.5) + k - 1)
        p2 = math.exp(eps) / (math.exp(eps) + k - 1)
        keep = p1 * p2 + (1 - p1) * (1 - p2) / (k - 1)
        eps_chain = math.log(keep * (k - 1) / (1 - keep))
        w = _rr_rows(k, eps_chain)
    else:
        w = _rr_rows(k, eps)
    est_all, lo_all, hi_all = [], [], []
    z = z_value(0.95)
    for _ in range(R):
        if memo:
            memo_table = np.stack([rr(np.full(n, v), 1.5) for v in range(k)], axis=1)
            y0, y1 = rr(memo_table[np.arange(n), x0], eps), rr(memo_table[np.arange(n), x1], eps)
        else:
            y0, y1 = rr(x0, eps), rr(x1, eps)
        counts = np.stack([np.bincount(y0, minlength=k), np.bincount(y1, minlength=k)])
        pe = period_estimates(w, counts)
        cov = paired_covariance(w, np.stack([y0, y1])) if paired else None
        c, v = change_estimates(pe, cov)
        est_all.append(c[0])
        lo_all.append(c[0] - z * np.sqrt(v[0]))
        hi_all.append(c[0] + z * np.sqrt(v[0]))
    return np.array(est_all), np.array(lo_all), np.array(hi_all), truth


@pytest.mark.parametrize("memo, paired", [(False, True), (False, False), (True, True), (True, False)])
def test_change_estimates_are_unbiased_and_their_intervals_cover(memo: bool, paired: bool) -> None:
    """Unbiased: the mean over R replications is within the normal quantile at FALSE_FAILURE (three
    answers: Bonferroni) of the true change, with the spread measured across replications
    (R = 300 makes the t-quantile and normal close; a margin of 10% covers it). Coverage:
    the 95% intervals are conservative, so the number covering out of R is at least the
    lower FALSE_FAILURE-quantile of Binomial(R, 0.95) minus a 2-point allowance for the normal
    approximation of the estimate's law at n = 3,000 respondents."""
    R, n = 300, 3000
    est, lo, hi, truth = _simulate_changes(memo, paired, R, n, seed=11 + 2 * memo + paired)
    zq = stats.norm.isf(FALSE_FAILURE / 6)
    for j in range(3):
        se = est[:, j].std(ddof=1) / math.sqrt(R)
        assert abs(est[:, j].mean() - truth[j]) <= 1.1 * zq * se
        covered = int(np.sum((lo[:, j] <= truth[j]) & (truth[j] <= hi[:, j])))
        floor = stats.binom.ppf(FALSE_FAILURE / 3, R, 0.95)
        assert covered >= floor - 2, (j, covered, floor)


def test_paired_intervals_are_shorter_for_memoised_reports() -> None:
    """Memoised reports of an unchanged answer are positively correlated: the paired
    interval uses it and is shorter than the anonymous one (which assumes covariance 0)."""
    _, lo_p, hi_p, _ = _simulate_changes(True, True, 20, 3000, seed=3)
    _, lo_a, hi_a, _ = _simulate_changes(True, False, 20, 3000, seed=3)
    assert np.all((hi_p - lo_p) < (hi_a - lo_a))


def test_inputs_are_checked() -> None:
    with pytest.raises(LdpSimError, match="counts"):
        period_estimates(np.eye(3), np.ones((2, 4)))
    with pytest.raises(LdpSimError, match="confidence"):
        z_value(1.0)
    assert z_value(0.95) == pytest.approx(1.959963984540054)
