"""Anytime-valid tests by betting (:mod:`ldpsim.analyst.betting`): the wealth against a
report-by-report loop written here from the module's description, the same wealth however
the reports are batched, the level under the null for every kind of oracle and for numeric
reports (the chance of ever reaching ``1 / alpha`` is at most ``alpha``, checked against the
binomial bound at the suite's false-failure probability), power under clear alternatives,
and the m-ary likelihood-ratio e-values against a brute-force product over the reports."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import betting as B
from ldpsim.analyst.hypotheses import goodness_of_fit, sequential_independence_of_pairs
from ldpsim.deploy import build
from ldpsim.errors import LdpSimError
from tests.stats_checks import FALSE_FAILURE

K = 5
NULL = np.array([0.35, 0.25, 0.2, 0.1, 0.1])
FAR = np.array([0.1, 0.1, 0.2, 0.25, 0.35])
ORACLES = [
    "oue:k=5,eps=1",
    "olh:k=5,eps=1",
    "subset_selection:k=5,eps=1",
    "rappor:k=5,f=0.5",
    "hadamard_response:k=5,eps=1",
]


def _mech(spec):
    return build(spec).mechanism


def _reports(mech, law, n, rng):
    return mech.privatize(rng.choice(law.size, size=n, p=law), rng)


def _at_most(rejections: int, trials: int, level: float, checks: int = 1) -> bool:
    """Whether ``rejections`` is within the one-sided binomial bound for a rate at most ``level``."""
    return rejections <= stats.binom.isf(FALSE_FAILURE / checks, trials, level)


def _loop_wealth(x: np.ndarray, radius: np.ndarray) -> tuple[float, float]:
    """The wealth of the module's bettor, report by report: each entry in units of its
    bound, direction and stake from the reports before each chunk (16, 32, 64, ... reports
    long, at most 4,096)."""
    x = x / radius
    radius = np.ones_like(radius)
    log_e = peak = 0.0
    w, lam = np.zeros(x.shape[1]), 0.0
    end = 16
    for i, row in enumerate(x):
        if lam > 0:
            log_e += math.log(1.0 + lam * float(row @ w))
            peak = max(peak, log_e)
        if i + 1 == end:
            seen = x[: i + 1]
            mean = seen.mean(axis=0)
            w = mean / np.linalg.norm(mean) if np.linalg.norm(mean) > 0 else np.zeros_like(mean)
            mu = float(mean @ w)
            second = float(sum(w[v] ** 2 * np.mean(seen[:, v] ** 2) for v in range(x.shape[1])))
            reach = float(np.abs(w) @ radius)
            lam = min(mu / second, 0.5 / reach) if mu > 0 and second > 0 else 0.0
            end = i + 1 + min(i + 1, 4096)
    return log_e, peak


def test_wealth_matches_a_report_by_report_loop_and_ignores_batching():
    rng = np.random.default_rng(5)
    radius = np.array([1.0, 2.0, 0.5])
    x = rng.uniform(-1, 1, size=(3000, 3)) * radius + np.array([0.1, -0.2, 0.0])
    log_e, peak = _loop_wealth(x, radius)
    whole = B.BettingProcess(radius)
    whole.update(x)
    assert whole.log_e == pytest.approx(log_e, rel=1e-9, abs=1e-9)
    assert whole.log_e_max == pytest.approx(peak, rel=1e-9, abs=1e-9)
    parts = B.BettingProcess(radius)
    cuts = np.sort(rng.choice(np.arange(1, 3000), size=40, replace=False))
    for chunk in np.split(x, cuts):
        parts.update(chunk)
    assert parts.log_e == pytest.approx(whole.log_e, rel=1e-12, abs=1e-12)
    assert parts.log_e_max == pytest.approx(whole.log_e_max, rel=1e-12, abs=1e-12)
    assert whole.result("t", 0.05).reject  # a mean 0.22 from zero in 3,000 draws


def test_report_terms_are_unbiased_per_report():
    """The mean of the terms is the oracle's own estimate, and every term lies within its range."""
    rng = np.random.default_rng(6)
    for spec in ORACLES:
        mech = _mech(spec)
        y = _reports(mech, NULL, 4000, rng)
        terms = B.report_terms(mech, y)
        est = mech.invert(mech.statistic(y) / 4000)
        assert np.allclose(terms.mean(axis=0), est, atol=1e-9), spec
        width = terms.max(axis=0) - terms.min(axis=0)
        assert np.all(width <= B.term_ranges(mech) + 1e-9), spec


REPS = 200
N = 1500


@pytest.mark.parametrize("spec", ORACLES)
def test_sequential_fit_keeps_its_level_at_every_report(spec):
    """Under the null, the path ever crosses ``1 / alpha`` in at most ``alpha`` of the runs
    (Ville), though the analyst looked at every report; a far law is found."""
    rng = np.random.default_rng(7)
    mech = _mech(spec)
    null = sum(B.sequential_fit_of_reports(mech, _reports(mech, NULL, N, rng), NULL).reject for _ in range(REPS))
    assert _at_most(null, REPS, 0.05)
    far = sum(B.sequential_fit_of_reports(mech, _reports(mech, FAR, N, rng), NULL).reject for _ in range(20))
    assert far >= 15, (spec, far)


@pytest.mark.slow
def test_per_look_tests_inflate_the_error_and_betting_does_not():
    """Ten looks at OUE reports: the fixed-n test at each look rejects a true null in far
    more than 5% of the runs; the betting test, at most 5%."""
    rng = np.random.default_rng(8)
    mech = _mech("oue:k=5,eps=1")
    reps, looks, step = 400, 10, 150
    fixed = seq = 0
    for _ in range(reps):
        y = _reports(mech, NULL, looks * step, rng)
        fixed += any(
            goodness_of_fit(mech, mech.statistic(y[: t * step]), NULL, n=t * step, draws=99, rng=rng).reject
            for t in range(1, looks + 1)
        )
        seq += B.sequential_fit_of_reports(mech, y, NULL).reject
    assert _at_most(seq, reps, 0.05, checks=2)
    assert fixed > stats.binom.isf(FALSE_FAILURE / 2, reps, 0.05), fixed  # inflated beyond 5%


def test_homogeneity_share_and_independence_levels_and_power():
    rng = np.random.default_rng(9)
    mech = _mech("olh:k=5,eps=2")
    checks = 3
    hom = sum(
        B.sequential_homogeneity_of_reports(mech, [_reports(mech, NULL, N, rng), _reports(mech, NULL, 900, rng)]).reject
        for _ in range(REPS)
    )
    assert _at_most(hom, REPS, 0.05, checks)
    share = sum(B.sequential_share_of_reports(mech, _reports(mech, NULL, N, rng), 0, 0.35).reject for _ in range(REPS))
    assert _at_most(share, REPS, 0.05, checks)  # at the boundary of the null
    ranges = B.term_ranges(mech)
    ind = 0
    for _ in range(REPS):
        ua = B.report_terms(mech, _reports(mech, NULL, N, rng))
        ub = B.report_terms(mech, _reports(mech, FAR, N, rng))
        ind += B.sequential_independence(ua, ub, ranges, ranges).reject
    assert _at_most(ind, REPS, 0.05, checks)
    # power: groups far apart, a share well above the threshold, one answer copied to the other question
    assert B.sequential_homogeneity_of_reports(mech, [_reports(mech, NULL, N, rng), _reports(mech, FAR, N, rng)]).reject
    assert B.sequential_share_of_reports(mech, _reports(mech, NULL, 3000, rng), 0, 0.2).reject
    x = rng.choice(K, size=6000, p=NULL)
    ua, ub = B.report_terms(mech, mech.privatize(x, rng)), B.report_terms(mech, mech.privatize(x, rng))
    assert B.sequential_independence(ua, ub, ranges, ranges).reject


def test_numeric_means():
    """Duchi's reports (two values, unbiased for answers in [-1, 1]): the level of the one-
    and two-sample tests under the null, and power at a difference of 0.3."""
    rng = np.random.default_rng(10)
    mech = _mech("duchi:eps=1")
    hi = float(np.max(np.abs(mech.privatize(np.array([1.0]), rng))))
    lo = -hi

    def reports(mean, n):
        return mech.privatize(np.clip(rng.normal(mean, 0.3, size=n), -1, 1), rng)

    one = sum(B.sequential_mean_test(reports(0.0, N), 0.0, low=lo, high=hi).reject for _ in range(REPS))
    two = sum(
        B.sequential_mean_difference(reports(0.2, N), reports(0.2, 1200), low=lo, high=hi).reject for _ in range(REPS)
    )
    assert _at_most(one, REPS, 0.05, 2) and _at_most(two, REPS, 0.05, 2)
    assert B.sequential_mean_difference(reports(0.3, 20000), reports(0.0, 20000), low=lo, high=hi).reject
    with pytest.raises(LdpSimError, match="reports_a"):
        B.sequential_mean_difference([5.0], [0.0], low=lo, high=hi)


def test_mary_counts_e_values_are_the_average_likelihood_ratio():
    """Brute force: the likelihood ratio as a product over the reports, one by one."""
    rng = np.random.default_rng(11)
    mech = _mech("hadamard_response:k=5,eps=1")
    laws = [NULL, FAR, np.full(K, 0.2)]
    y = _reports(mech, NULL, 3000, rng)
    out = B.sequential_mary_test(mech, laws, counts=mech.statistic(y))
    matrix = np.asarray(mech.matrix)  # P(output | answer): one row per answer
    assert matrix.shape == (K, 8)
    m_out = [law @ matrix for law in laws]
    logl = [sum(math.log(m[r]) for r in y) for m in m_out]
    for j in range(3):
        ratios = [math.exp(logl[i] - logl[j]) for i in range(3) if i != j]
        assert out.log_e[j] == pytest.approx(math.log(sum(ratios) / 2), rel=1e-9, abs=1e-9)
    assert out.decision == 0


@pytest.mark.parametrize("spec", ["oue:k=5,eps=1", "randomized_response:k=5,eps=1"])
def test_mary_rejects_the_truth_rarely_and_decides(spec):
    rng = np.random.default_rng(12)
    mech = _mech(spec)
    laws = [NULL, FAR, np.full(K, 0.2)]
    wrong = 0
    for _ in range(REPS):
        y = _reports(mech, NULL, N, rng)
        res = (
            B.sequential_mary_test(mech, laws, counts=mech.statistic(y))
            if mech.output_size is not None
            else B.sequential_mary_test(mech, laws, reports=y)
        )
        wrong += bool(res.rejected[0])
    assert _at_most(wrong, REPS, 0.05)
    y = _reports(mech, FAR, 8000, rng)
    assert B.sequential_mary_test(mech, laws, reports=y).decision == 1


def test_bad_input_is_one_line():
    mech = _mech("oue:k=5,eps=1")
    with pytest.raises(LdpSimError, match="reference"):
        B.sequential_fit_of_reports(mech, np.zeros((3, 5), dtype=np.int64), [0.5, 0.5])
    with pytest.raises(LdpSimError, match="either counts or reports"):
        B.sequential_mary_test(mech, [NULL, FAR])
    with pytest.raises(LdpSimError, match="radius"):
        B.BettingProcess([-1.0])


def test_sequential_independence_of_output_pairs():
    """The mixture over joint laws against the best product law: level at every look over
    pairs of randomized-response reports of independent answers, the e-value against a
    brute-force mixture written here (the predictive probabilities report by report), and
    power when one answer is copied."""
    rng = np.random.default_rng(13)
    rr = _mech("randomized_response:k=3,eps=2")
    law = np.array([0.5, 0.3, 0.2])
    ya, yb = rr.privatize(rng.choice(3, 200, p=law), rng), rr.privatize(rng.choice(3, 200, p=law), rng)
    seen = np.zeros(9)
    log_mix = 0.0
    for a, b in zip(ya, yb):
        log_mix += math.log((seen[a * 3 + b] + 0.5) / (seen.sum() + 4.5))
        seen[a * 3 + b] += 1
    table = seen.reshape(3, 3)
    n = table.sum()
    best = sum(c * math.log(c / n) for c in table.sum(axis=1) if c) + sum(
        c * math.log(c / n) for c in table.sum(axis=0) if c
    )
    assert sequential_independence_of_pairs(table).log_e == pytest.approx(log_mix - best, rel=1e-10)
    wrong = 0
    for _ in range(REPS):
        ya, yb = rr.privatize(rng.choice(3, 600, p=law), rng), rr.privatize(rng.choice(3, 600, p=law), rng)
        pairs = ya * 3 + yb
        wrong += any(
            sequential_independence_of_pairs(np.bincount(pairs[:t], minlength=9).reshape(3, 3)).reject
            for t in range(60, 601, 60)
        )
    assert _at_most(wrong, REPS, 0.05)
    x = rng.choice(3, 3000, p=law)
    table = np.bincount(rr.privatize(x, rng) * 3 + rr.privatize(x, rng), minlength=9).reshape(3, 3)
    assert sequential_independence_of_pairs(table).reject
