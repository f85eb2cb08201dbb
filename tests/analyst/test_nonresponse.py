"""Answer-dependent non-response: the exact bias and the reweighted estimate.

References are written here: the bias in exact rational arithmetic, the Jacobian by central
differences, the second-order bias term of the delta method by hand. Statistical checks
state their false-failure probability (1e-6 overall, under the normal approximation of the
mean and of the sample variance of 3,000 replicate estimates, each from 6e5 reports)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import inversion_estimate, nonresponse_bias, reweight_for_response
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import randomized_response
from tests.stats_checks import FALSE_FAILURE

P = np.array([0.4, 0.3, 0.2, 0.1])
R = np.array([0.9, 0.6, 0.5, 0.3])


def test_bias_is_q_minus_p_exactly():
    p = [Fraction(2, 5), Fraction(3, 10), Fraction(1, 5), Fraction(1, 10)]
    r = [Fraction(9, 10), Fraction(3, 5), Fraction(1, 2), Fraction(3, 10)]
    rate = sum(a * b for a, b in zip(p, r))  # 0.36 + 0.18 + 0.1 + 0.03 = 0.67
    assert rate == Fraction(67, 100)
    ref = [float(a * b / rate - a) for a, b in zip(p, r)]
    np.testing.assert_allclose(nonresponse_bias(P, R), ref, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(nonresponse_bias(P, np.full(4, 0.3)), 0.0, atol=1e-15)  # equal rates: no bias
    np.testing.assert_allclose(nonresponse_bias([0.5, 0.5], [1.0, 0.0]), [0.5, -0.5])


def test_reweighting_inverts_the_response_map_and_its_jacobian():
    q = P + nonresponse_bias(P, R)
    out = reweight_for_response(q, R)
    np.testing.assert_allclose(out.estimate, P, rtol=1e-14)
    np.testing.assert_allclose(reweight_for_response(q, 7 * R / 10).estimate, P, rtol=1e-14)  # only ratios matter
    assert out.covariance is None and out.std_error is None

    def g(x):
        u = x / R
        return u / u.sum()

    h = 1e-6
    num = np.column_stack([(g(q + h * e) - g(q - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(out.jacobian, num, rtol=1e-7, atol=1e-9)
    sigma = np.diag([1.0, 2.0, 3.0, 4.0]) * 1e-4
    cov = reweight_for_response(q, R, sigma).covariance
    np.testing.assert_allclose(cov, num @ sigma @ num.T, rtol=1e-6, atol=1e-14)


def test_reweighted_estimate_is_unbiased_to_first_order_and_its_covariance_matches():
    rng = np.random.default_rng(31)
    rr = randomized_response(4, 1.0)
    n, reps = 1_000_000, 3000
    q = P * R / (P @ R)
    n_recv = n * float(P @ R)
    raw, fixed = np.empty((reps, 4)), np.empty((reps, 4))
    plug_cov = np.zeros((4, 4))
    for i in range(reps):
        received = rng.binomial(rng.multinomial(n, P), R)
        est = inversion_estimate(rr, rr.sample_counts(received, rng))
        raw[i] = est.estimate
        out = reweight_for_response(est.estimate, R, est.covariance)
        fixed[i] = out.estimate
        plug_cov += out.covariance / reps
    # the exact covariance of q_hat at q with the expected number of received reports
    e = math.e
    m = (1 + q * (e - 1)) / (e + 3)
    gain = (e - 1) / (e + 3)
    sigma = (np.diag(m) - np.outer(m, m)) / (n_recv * gain**2)
    # delta method by hand at q: J = (I - p 1^T) diag(1/r) / s, s = sum q / r
    s = float((q / R).sum())
    jac = (np.eye(4) - np.outer(P, np.ones(4))) / (R * s)
    cov = jac @ sigma @ jac.T
    # second-order bias of u/s: (u (1^T D S D 1)/s - D S D 1) / s^2, D = diag(1/r)
    dsd = sigma / np.outer(R, R)
    bias2 = ((q / R) * dsd.sum() / s - dsd.sum(axis=1)) / s**2
    z = stats.norm.isf(FALSE_FAILURE / 40 / 2)  # 8 bias checks, 8 variance sides, 16 covariances (< 40 checks)
    se_mean = fixed.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(fixed.mean(axis=0) - P) <= z * se_mean + np.abs(bias2)), (
        fixed.mean(axis=0) - P,
        se_mean,
    )
    # the uncorrected estimate is biased by q - p, far beyond the tolerance
    raw_se = raw.std(axis=0, ddof=1) / math.sqrt(reps)
    assert np.all(np.abs(raw.mean(axis=0) - P - nonresponse_bias(P, R)) <= z * raw_se)
    assert np.all(np.abs(nonresponse_bias(P, R)) > 50 * z * se_mean)
    # covariance: the sample variances against the delta method (chi-square bounds)
    df = reps - 1
    lo, hi = stats.chi2.ppf(FALSE_FAILURE / 40, df) / df, stats.chi2.isf(FALSE_FAILURE / 40, df) / df
    ratio = fixed.var(axis=0, ddof=1) / np.diag(cov)
    assert np.all((lo <= ratio) & (ratio <= hi)), ratio
    # the plug-in delta-method covariance is, on average, the exact one
    np.testing.assert_allclose(plug_cov, cov, rtol=0.01, atol=1e-3 * np.abs(cov).max())
    emp = np.cov(fixed.T)
    # each sample covariance has standard deviation <= sqrt(2 / reps) sigma_i sigma_j (normal law)
    assert np.all(np.abs(emp - cov) <= z * np.sqrt(2.0 / reps) * np.sqrt(np.outer(np.diag(cov), np.diag(cov))))


def test_errors_are_one_line_and_name_the_parameter():
    with pytest.raises(
        LdpSimError,
        match=r"^response_rates: .*expected 4 response probabilities in \(0, 1\]",
    ):
        reweight_for_response(P, [0.5, 0.5, 0.0, 0.5])
    with pytest.raises(LdpSimError, match=r"^response_rates: "):
        reweight_for_response(P, [0.5, 0.5])
    with pytest.raises(LdpSimError, match=r"^response_rates: .*\[0, 1\]"):
        nonresponse_bias(P, [1.2, 0.5, 0.5, 0.5])
    with pytest.raises(LdpSimError, match=r"^response_rates: .*p . r > 0"):
        nonresponse_bias([1.0, 0.0], [0.0, 1.0])
    with pytest.raises(LdpSimError, match=r"^prior: "):
        nonresponse_bias([0.5, 0.6], [1.0, 1.0])
    with pytest.raises(LdpSimError, match=r"^covariance: got 'shape \(2, 2\)'"):
        reweight_for_response(P, R, np.eye(2))
    with pytest.raises(LdpSimError, match=r"^estimate: "):
        reweight_for_response([-0.5, -0.5], [0.5, 0.5])
