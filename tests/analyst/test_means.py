"""Means of a bounded numeric answer from privatised reports, and bucketing.

Coverage is measured over many replications with fixed seeds and checked against exact
binomial (Clopper-Pearson) bounds at a false-failure probability of 1e-6 per check. Exact
variances are the closed forms of docs/theory.md sec. 13, written here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.analyst import bucket, mean_estimate, mean_standard_error
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import (
    Duchi,
    Hybrid,
    LaplaceBounded,
    Piecewise,
    randomized_response,
)
from ldpsim.stats import clopper_pearson
from tests.stats_checks import FALSE_FAILURE
from tests.tiers import sample

LO, HI = 0.0, 10.0
EPS = 1.0
N, REPS = 400, 5000
#: allowance for the normal approximation of the "normal" interval at n = 400
NORMAL_SLACK = 0.01
MECHS = [LaplaceBounded, Duchi, Piecewise, Hybrid]


def _answers():
    rng = np.random.default_rng(99)
    return np.concatenate([[LO, HI, 5.0], rng.beta(2, 5, N - 3) * (HI - LO) + LO])


def _unit_variance(name, u, eps):
    """Var(z | u) in unit coordinates, by hand."""
    s = math.exp(eps / 2)
    duchi = 1.0 / math.tanh(eps / 2) ** 2 - u * u
    pw = u * u / (s - 1) + (s + 3) / (3 * (s - 1) ** 2)
    if name == "LaplaceBounded":
        return np.full_like(u, 2.0 * (2.0 / eps) ** 2)  # scale (hi - lo)/eps = 2/eps in unit coordinates
    if name == "Duchi":
        return duchi
    if name == "Piecewise":
        return pw
    a = 1 - math.exp(-eps / 2)
    return a * pw + (1 - a) * duchi


@pytest.mark.parametrize("mech_cls", MECHS, ids=lambda c: c.__name__)
def test_exact_standard_error_is_the_mean_variance_over_n(mech_cls):
    mech = mech_cls(EPS, LO, HI)
    x = _answers()
    half = (HI - LO) / 2
    u = (x - (LO + half)) / half
    ref = math.sqrt(float(np.mean(_unit_variance(mech_cls.__name__, u, EPS))) * half**2 / N)
    assert mean_standard_error(mech, x) == pytest.approx(ref, rel=1e-9)
    assert mean_standard_error(mech, x, n=4 * N) == pytest.approx(ref / 2, rel=1e-9)


@pytest.mark.parametrize("mech_cls", sample(MECHS, keep=(0, 1)), ids=lambda c: c.__name__)
def test_interval_coverage_by_simulation(mech_cls):
    """Per mechanism: the normal interval misses the mean answer at a rate within
    ``NORMAL_SLACK`` of 5% and the conservative (Hoeffding) interval at most 5% (both by
    Clopper-Pearson at 1e-6); the spread of the replicate means matches the exact standard
    error (chi-square bounds on the sample variance of 5,000 near-normal means, 1e-6)."""
    from scipy import stats

    mech = mech_cls(EPS, LO, HI)
    x = _answers()
    truth = float(np.mean(x))
    rng = np.random.default_rng(sum(map(ord, mech_cls.__name__)))
    reports = mech.privatize(np.broadcast_to(x, (REPS, N)), rng)
    conservative = mech_cls is not LaplaceBounded
    miss_normal = miss_cons = 0
    for row in reports:
        est = mean_estimate(row, mech, 0.95, "normal")
        miss_normal += not (est.ci_low <= truth <= est.ci_high)
        if conservative:
            c = mean_estimate(row, mech, 0.95, "conservative")
            assert c.estimate == est.estimate and c.ci_high - c.ci_low > est.ci_high - est.ci_low
            miss_cons += not (c.ci_low <= truth <= c.ci_high)
    lo, hi = clopper_pearson(miss_normal, REPS, FALSE_FAILURE)
    assert lo <= 0.05 + NORMAL_SLACK and hi >= 0.05 - NORMAL_SLACK, miss_normal / REPS
    if conservative:
        assert clopper_pearson(miss_cons, REPS, FALSE_FAILURE)[0] <= 0.05, miss_cons / REPS
    else:
        with pytest.raises(
            LdpSimError,
            match=r"^method: got 'conservative', expected 'normal' .*unbounded",
        ):
            mean_estimate(reports[0], mech, 0.95, "conservative")
    means = reports.mean(axis=1)
    exact = mean_standard_error(mech, x)
    ratio = float(np.var(means, ddof=1)) / exact**2
    df = REPS - 1
    assert stats.chi2.ppf(FALSE_FAILURE / 2, df) / df <= ratio <= stats.chi2.isf(FALSE_FAILURE / 2, df) / df
    assert mean_estimate(reports[0], mech, answers=x).exact_std_error == pytest.approx(exact)


def test_mean_estimate_fields_and_errors():
    y = np.array([1.0, 2.0, 4.0, 5.0])
    est = mean_estimate(y)
    assert est.estimate == 3.0 and est.n == 4 and est.method == "normal" and est.exact_std_error is None
    assert est.std_error == pytest.approx(math.sqrt(10.0 / 3.0 / 4.0))
    assert est.ci_high - 3.0 == pytest.approx(1.959963984540054 * est.std_error)
    duchi = Duchi(1.0, LO, HI)
    with pytest.raises(LdpSimError, match=r"^mechanism: got None, expected .*method='conservative'"):
        mean_estimate(y, method="conservative")
    with pytest.raises(LdpSimError, match=r"^reports: got .*expected reports of Duchi"):
        mean_estimate([100.0, 1.0], duchi)
    with pytest.raises(LdpSimError, match=r"^method: "):
        mean_estimate(y, method="exact")
    with pytest.raises(LdpSimError, match=r"^reports: "):
        mean_estimate([1.0])
    with pytest.raises(LdpSimError, match=r"^confidence: "):
        mean_estimate(y, confidence=1.0)
    with pytest.raises(LdpSimError, match=r"^mechanism: got None, expected .*answers"):
        mean_estimate(y, answers=[1.0])


def test_bucket_maps_values_like_numpy_histogram():
    edges = [0.0, 1.0, 2.5, 3.0]
    np.testing.assert_array_equal(bucket([0.0, 0.5, 1.0, 2.4999, 2.5, 3.0], edges), [0, 0, 1, 1, 2, 2])
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 3, 10_000)
    np.testing.assert_array_equal(np.bincount(bucket(x, edges), minlength=3), np.histogram(x, edges)[0])
    np.testing.assert_array_equal(bucket([-1.0, 5.0], edges, clip=True), [0, 2])
    assert bucket(np.array([[0.2, 2.9]]), edges).shape == (1, 2)
    with pytest.raises(
        LdpSimError,
        match=r"^values: got 'a value 5.0', expected values in \[0.0, 3.0\]",
    ):
        bucket([1.0, 5.0], edges)
    with pytest.raises(LdpSimError, match=r"^edges: "):
        bucket([1.0], [0.0, 2.0, 1.0])
    with pytest.raises(LdpSimError, match=r"^edges: "):
        bucket([1.0], [0.0])


def test_bucketed_histogram_through_a_categorical_oracle():
    """The histogram of bucketed answers, estimated through randomized response: the
    conservative (Hoeffding) intervals cover the true bucket shares (each misses with
    probability <= 1e-6 / 4)."""
    from ldpsim.analyst import confidence_intervals

    rng = np.random.default_rng(8)
    x = rng.gamma(2.0, 1.5, 200_000)
    edges = [0.0, 1.0, 2.0, 4.0, 100.0]
    idx = bucket(x, edges)
    truth = np.bincount(idx, minlength=4) / x.size
    rr = randomized_response(4, 2.0)
    counts = rr.sample_counts(np.bincount(idx, minlength=4), rng)
    ci = confidence_intervals(rr, counts, 1 - FALSE_FAILURE, method="conservative", simultaneous=True)
    assert np.all((ci.ci_low <= truth) & (truth <= ci.ci_high))
