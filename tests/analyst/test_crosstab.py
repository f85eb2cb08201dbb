"""Cross-tabulations of two privatised questions and the test of independence.

References are computed here independently: the product matrix with numpy's kron, the
exact covariance from the pseudo-inverse of that matrix, Pearson's test from scipy on the
true answers. Statistical checks state their false-failure probability."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import crosstab_estimate, independence_test, joint_output_counts
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import product_mechanism, randomized_response, truncated_geometric
from ldpsim.stats import clopper_pearson
from tests.stats_checks import FALSE_FAILURE

# A real-looking association: 3 x 4 with rows and columns dependent.
DEPENDENT = np.array([[0.12, 0.08, 0.05, 0.03], [0.06, 0.10, 0.09, 0.06], [0.02, 0.05, 0.12, 0.22]])


def _pair(eps_a=1.0, eps_b=1.5):
    return randomized_response(3, eps_a), truncated_geometric(4, eps_b)


def _reference_covariance(qa, qb, table, n):
    """A (diag(mu) - mu mu^T) A^T / n for the Kronecker matrix, from first principles."""
    q = np.kron(qa, qb)
    mu = table.ravel() @ q
    a = np.linalg.pinv(q.T)
    return a @ (np.diag(mu) - np.outer(mu, mu)) @ a.T / n


def test_product_mechanism_is_the_kronecker_product_with_summed_eps():
    a, b = _pair(1.0, 1.5)
    prod = product_mechanism(a, b)
    assert prod.shape == (12, 12)
    assert np.allclose(prod.matrix, np.kron(a.matrix, b.matrix), rtol=1e-14, atol=0)
    assert prod.epsilon() == pytest.approx(2.5, rel=1e-12)
    assert prod.input_labels == tuple((x, y) for x in a.input_labels for y in b.input_labels)
    with pytest.raises(LdpSimError, match="mechanisms"):
        product_mechanism(a, "not a mechanism")


def test_joint_counts_from_two_columns_of_codes():
    y1 = np.array([0, 2, 2, 1, 0])
    y2 = np.array([3, 0, 0, 1, 3])
    counts = joint_output_counts(y1, y2, 3, 4)
    want = np.zeros(12, dtype=np.int64)
    for i, j in zip(y1, y2):
        want[i * 4 + j] += 1
    assert np.array_equal(counts, want)
    with pytest.raises(LdpSimError, match="second"):
        joint_output_counts(y1, y2[:3], 3, 4)
    with pytest.raises(LdpSimError, match="first"):
        joint_output_counts(np.array([0, 3]), np.array([0, 0]), 3, 4)


def test_the_crosstab_is_unbiased_and_its_covariance_exact():
    """R = 3,000 replications of n = 5,000 respondents drawn from the dependent table, the
    product mechanism's counts drawn from its exact aggregate law: every cell's mean error
    within 5.3 of its exact standard errors over the replications (|Z| > 5.3 has
    probability 1.2e-7 per cell, 12 cells: about 1.4e-6 in all, with the normal law of a
    mean of 3,000 i.i.d. estimates); the empirical covariance against the exact one within
    a relative 15% on the diagonal."""
    a, b = _pair()
    prod = product_mechanism(a, b)
    n, R = 5_000, 3_000
    rng = np.random.default_rng(20261202)
    est = np.empty((R, 12))
    for r in range(R):
        inputs = rng.multinomial(n, DEPENDENT.ravel())
        est[r] = crosstab_estimate(prod, prod.sample_counts(inputs, rng), (3, 4)).estimate.ravel()
    exact = _reference_covariance(a.matrix, b.matrix, DEPENDENT, n)
    se_mean = np.sqrt(np.diag(exact) / R)
    assert np.all(np.abs(est.mean(axis=0) - DEPENDENT.ravel()) <= 5.3 * se_mean)
    emp = np.cov(est, rowvar=False)
    assert np.allclose(np.diag(emp), np.diag(exact), rtol=0.15)
    # the library's exact covariance is the same formula
    tab = crosstab_estimate(prod, prod.sample_counts(rng.multinomial(n, DEPENDENT.ravel()), rng), (3, 4))
    assert np.allclose(tab.exact_covariance(DEPENDENT), exact, rtol=1e-9, atol=1e-15)
    assert tab.rows == a.input_labels and tab.columns == b.input_labels
    assert tab.projected.min() >= 0 and tab.projected.sum() == pytest.approx(1.0)


def _rejections(prod, table, n, R, alpha, rng):
    """Rejections of the private test and of Pearson's test on the same respondents' true
    answers, over R replications."""
    private = pearson = 0
    for _ in range(R):
        inputs = rng.multinomial(n, table.ravel())
        private += independence_test(prod, prod.sample_counts(inputs, rng), table.shape).reject(alpha)
        pearson += stats.chi2_contingency(inputs.reshape(table.shape), correction=False).pvalue <= alpha
    return private, pearson


def test_type_one_error_is_the_nominal_level():
    """Under independence, 2,000 tests at alpha = 0.05 (n = 20,000): the rejection count is
    consistent with a rate of exactly 0.05 by the exact binomial test at 1e-6 (two-sided)."""
    a, b = _pair()
    prod = product_mechanism(a, b)
    table = np.outer([0.5, 0.3, 0.2], [0.1, 0.2, 0.3, 0.4])
    R = 2_000
    hits, _ = _rejections(prod, table, 20_000, R, 0.05, np.random.default_rng(7))
    lo, hi = stats.binom.ppf(FALSE_FAILURE / 2, R, 0.05), stats.binom.isf(FALSE_FAILURE / 2, R, 0.05)
    assert lo <= hits <= hi, (hits, lo, hi)


def test_power_grows_with_n_and_the_private_test_pays_for_privacy():
    """Against a weak association (the dependent table mixed 1:3 with its independent
    version), 400 tests each: power at n = 2,000, 16,000 and 64,000 increases (the
    Clopper-Pearson intervals at 1e-6 / 6 are disjoint in order), and at every n the
    non-private Pearson test on the same respondents' true answers rejects at least as
    often (privacy costs power)."""
    a, b = _pair()
    prod = product_mechanism(a, b)
    indep = np.outer(DEPENDENT.sum(axis=1), DEPENDENT.sum(axis=0))
    table = 0.25 * DEPENDENT + 0.75 * indep
    R = 400
    rng = np.random.default_rng(11)
    runs = [_rejections(prod, table, n, R, 0.05, rng) for n in (2_000, 16_000, 64_000)]
    powers = [private for private, _ in runs]
    bounds = [clopper_pearson(h, R, FALSE_FAILURE / 6) for h in powers]
    assert bounds[0][1] < bounds[1][0] and bounds[1][1] < bounds[2][0], (powers, bounds)
    assert all(pearson >= private for private, pearson in runs), runs


def test_the_statistic_against_a_hand_computation():
    """W from its definition, written out here with explicit loops for a 2 x 2 table."""
    a, b = randomized_response(2, 1.0), randomized_response(2, 2.0)
    prod = product_mechanism(a, b)
    counts = np.array([400, 250, 150, 200])
    test = independence_test(prod, counts, (2, 2))
    f = counts / counts.sum()
    p = np.linalg.pinv(prod.matrix.T) @ f
    P = p.reshape(2, 2)
    r, c = P.sum(axis=1), P.sum(axis=0)
    d = P[0, 0] - r[0] * c[0]
    # d = P00 - (P00 + P01)(P00 + P10): its gradient at the null, by hand
    grad = np.array([1 - c[0] - r[0], -c[0], -r[0], 0.0])
    sigma = _reference_covariance(a.matrix, b.matrix, np.outer(r, c), counts.sum())
    w = d * d / (grad @ sigma @ grad)
    assert test.df == 1
    assert test.statistic == pytest.approx(w, rel=1e-9)
    assert test.p_value == pytest.approx(stats.chi2.sf(w, 1), rel=1e-9)


@pytest.mark.parametrize("shape", [(2, 5), (3,), "3x4", (1, 12)])
def test_bad_shapes_are_one_line(shape):
    prod = product_mechanism(*_pair())
    with pytest.raises(LdpSimError, match="shape") as err:
        crosstab_estimate(prod, np.ones(12, dtype=np.int64), shape)
    assert "\n" not in str(err.value)


def test_reject_checks_alpha():
    prod = product_mechanism(*_pair())
    t = independence_test(prod, np.full(12, 100), (3, 4))
    assert math.isfinite(t.statistic) and t.df == 6
    with pytest.raises(LdpSimError, match="alpha"):
        t.reject(1.5)
