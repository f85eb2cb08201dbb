"""The inversion estimator: exact on expected counts, unbiased in simulation (checked against
its exact variance), closed form for randomized response equal to the generic path."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ldpsim import LdpSimError, frequency_estimate
from ldpsim.mechanisms import from_matrix, randomized_response, truncated_geometric


@pytest.mark.parametrize("make", [lambda: randomized_response(6, 0.7), lambda: truncated_geometric(5, 2.0)])
def test_estimator_inverts_expected_counts(make):
    mech = make()
    prior = np.random.default_rng(3).dirichlet(np.ones(mech.k))
    n = 10**15  # counts far beyond 2^32 must not overflow
    counts = np.rint(n * mech.marginal(prior)).astype(np.int64)
    est = frequency_estimate(mech, counts)
    np.testing.assert_allclose(est.estimate, prior, atol=1e-9)


def test_randomized_response_closed_form_equals_generic_least_squares():
    rr = randomized_response(5, 1.3)
    generic = from_matrix(rr.matrix)
    counts = rr.sample_counts([100, 2000, 30, 400, 5000], np.random.default_rng(4))
    a, b = frequency_estimate(rr, counts), frequency_estimate(generic, counts)
    np.testing.assert_allclose(a.estimate, b.estimate, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.std_error, b.std_error, rtol=1e-8)


def test_estimator_is_unbiased_with_its_exact_variance():
    """R = 4000 replications of n = 5000 clients; the mean estimate must be within
    z * sqrt(Var/R) of the truth, Var the exact variance of the linear estimator
    M_y(1 - M_y)/(n q^2); z from a normal tail at 1e-7 split over k categories (the mean of
    4000 i.i.d. bounded estimates is normal to far better than this)."""
    mech = randomized_response(4, 1.0)
    n_x = np.array([500, 1000, 1500, 2000])
    n = n_x.sum()
    prior = n_x / n
    rng = np.random.default_rng(5)
    reps = 4000
    est = np.stack([frequency_estimate(mech, mech.sample_counts(n_x, rng)).estimate for _ in range(reps)])
    marg = mech.marginal(prior)
    # fixed input counts: output counts are a sum of multinomials, Var(c_y) = sum_x n_x Q[x,y](1-Q[x,y])
    q = mech.matrix
    var_counts = (n_x[:, None] * q * (1 - q)).sum(axis=0)
    var_est = var_counts / n**2 / mech.keep**2
    z = stats.norm.isf(1e-7 / (2 * mech.k))
    assert np.all(np.abs(est.mean(axis=0) - prior) <= z * np.sqrt(var_est / reps))
    # and the sample variance matches the exact one (chi-square law of the sample variance)
    lo, hi = stats.chi2.ppf([1e-7 / (4 * mech.k), 1 - 1e-7 / (4 * mech.k)], reps - 1) / (reps - 1)
    ratio = est.var(axis=0, ddof=1) / var_est
    assert np.all((ratio >= lo) & (ratio <= hi)), ratio
    assert np.all(marg > 0)


def test_estimator_rejects_bad_counts():
    mech = randomized_response(3, 1.0)
    with pytest.raises(LdpSimError, match="^output_counts:"):
        frequency_estimate(mech, [0, 0, 0])
    with pytest.raises(LdpSimError, match="^output_counts:"):
        frequency_estimate(mech, [1, 2])
    singular = from_matrix([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(LdpSimError, match="^mechanism:"):
        frequency_estimate(singular, [3, 4])


@pytest.mark.parametrize("k, eps", [(2, 0.3), (5, 1.3), (7, 4.0)])
def test_randomized_response_inversion_methods_equal_the_generic_ones(k, eps):
    """Every inversion method of randomized response (closed forms) against the generic
    least-squares versions on its matrix, and the generic A against its definition A Q^T = I."""
    rr = randomized_response(k, eps)
    generic = from_matrix(rr.matrix)
    q = np.asarray(generic.matrix)
    np.testing.assert_allclose(generic.inversion_matrix @ q.T, np.eye(k), atol=1e-10)
    rng = np.random.default_rng(8)
    f = rng.dirichlet(np.ones(k))
    p = rng.dirichlet(np.ones(k))
    g = rng.random(k)
    np.testing.assert_allclose(rr.invert(f), generic.invert(f), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        rr.inversion_covariance(f, 1000.0), generic.inversion_covariance(f, 1000.0), rtol=1e-8, atol=1e-15
    )
    np.testing.assert_allclose(rr.inversion_variance(f, 1000.0), generic.inversion_variance(f, 1000.0), rtol=1e-8)
    np.testing.assert_allclose(rr.inversion_std_error(f, 1000), generic.inversion_std_error(f, 1000), rtol=1e-8)
    np.testing.assert_allclose(rr.inversion_variance(f, 1000.0), rr.inversion_std_error(f, 1000) ** 2, rtol=1e-12)
    np.testing.assert_allclose(rr.inversion_coefficient_range(), generic.inversion_coefficient_range(), rtol=1e-9)
    np.testing.assert_allclose(rr.forward(p), p @ q, rtol=1e-12)
    np.testing.assert_allclose(rr.backward(g), q @ g, rtol=1e-12)
    np.testing.assert_array_equal(rr.possible_outputs(), generic.possible_outputs())


def test_inversion_refusals_name_the_mechanism():
    rr0 = randomized_response(3, 0.0)
    with pytest.raises(LdpSimError, match=r"mechanism: got randomized_response\(k=3, eps=0.0\), expected eps > 0"):
        rr0.invert(np.full(3, 1 / 3))
    flat = from_matrix([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(LdpSimError, match="full row rank 2"):
        flat.invert(np.array([0.5, 0.5]))
    assert from_matrix([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]]).possible_outputs().tolist() == [True, True, False]
