"""Range queries (:mod:`ldpsim.mechanisms.ranges`): every method's affine map reproduces the
true range shares from the true coefficients (brute-force sums of the law); HaarHRR's
coefficient covariance against an exact enumeration of one respondent's report; the
simulated error of each method against its exact variance at the suite's false-failure
probability; the optimal fan-out is the minimum of the exact variances; errors name the
parameter."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.ranges import (
    FlatRanges,
    HaarRanges,
    HierarchicalRanges,
    optimal_fanout,
    range_matrix,
    ranges_of_length,
)
from tests.stats_checks import FALSE_FAILURE


def _brute(ranges, prior):
    return np.array([prior[a : b + 1].sum() for a, b in ranges])


def _true_coefficients(method, prior):
    if isinstance(method, HaarRanges):
        return method.true_coefficients(prior)
    if isinstance(method, HierarchicalRanges):
        return [method.node_matrix(level) @ prior for level in range(1, method.height + 1)]
    return [np.asarray(prior)]


@pytest.mark.parametrize("d", [16, 50, 64])
@pytest.mark.parametrize(
    "make",
    [
        lambda d: FlatRanges(d, 1.0),
        lambda d: HierarchicalRanges(d, 1.0, fanout=2, consistent=False),
        lambda d: HierarchicalRanges(d, 1.0, fanout=3, consistent=False),
        lambda d: HierarchicalRanges(d, 1.0, fanout=4),
        lambda d: HierarchicalRanges(d, 1.0, fanout=5),
        lambda d: HaarRanges(d, 1.0),
    ],
    ids=["flat", "tree-2", "tree-3", "tree-4-consistent", "tree-5-consistent", "haar"],
)
def test_the_range_map_of_the_true_coefficients_is_the_true_share(make, d):
    rng = np.random.default_rng(d)
    prior = rng.dirichlet(np.ones(d))
    method = make(d)
    ranges = np.array([(a, b) for a, b in itertools.combinations_with_replacement(range(d), 2)])
    maps, r0 = method.range_map(ranges)
    got = r0 + sum(m @ c for m, c in zip(maps, _true_coefficients(method, prior)))
    assert np.allclose(got, _brute(ranges, prior), rtol=0, atol=1e-12)


def test_haar_coefficient_covariance_is_the_enumerated_one():
    """One respondent's term ``C H[r, k] s`` for every coefficient of depth j, enumerated over
    the answer (its law), the Hadamard row (uniform) and the flip: mean and covariance."""
    d, eps = 8, 0.7
    method = HaarRanges(d, eps)
    prior = np.array([0.05, 0.2, 0.1, 0.15, 0.05, 0.25, 0.1, 0.1])
    keep = math.exp(eps) / (1 + math.exp(eps))
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    for j in range(method.height):
        m = 1 << j
        hadamard = np.array([[(-1) ** bin(r & k).count("1") for k in range(m)] for r in range(m)], dtype=float)
        mean, second = np.zeros(m), np.zeros((m, m))
        for x in range(d):
            node, sign = x >> (method.height - j), 1 - 2 * ((x >> (method.height - j - 1)) & 1)
            for r in range(m):
                for flip, pr in ((1, keep), (-1, 1 - keep)):
                    w = prior[x] * pr / m
                    term = c * hadamard[r] * flip * sign * hadamard[r, node]
                    mean += w * term
                    second += w * np.outer(term, term)
        assert np.allclose(mean, method.true_coefficients(prior)[j], atol=1e-12)
        assert np.allclose(second - np.outer(mean, mean), method.blocks(prior, [1.0] * method.height)[j], atol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda: FlatRanges(16, 1.0),
        lambda: HierarchicalRanges(16, 1.0, fanout=4, consistent=False),
        lambda: HierarchicalRanges(16, 1.0, fanout=2),
        lambda: HaarRanges(16, 1.0),
    ],
    ids=["flat", "tree-4", "tree-2-consistent", "haar"],
)
def test_simulated_errors_have_the_exact_variance(make):
    """A long and a short range: the mean squared error over 300 collections of 4,000
    answers lies in the Laurent-Massart band (FALSE_FAILURE / 2 each) around the mean exact
    variance at the realised group sizes, and the mean error within the normal bound."""
    method = make()
    prior = np.diff(stats.beta(2, 3).cdf(np.linspace(0, 1, 17)))
    prior /= prior.sum()
    ranges = np.array([[3, 12], [5, 6]])
    truth = _brute(ranges, prior)
    rng = np.random.default_rng(7)
    reps = 300
    errors, variances = [], []
    for _ in range(reps):
        x = rng.choice(16, size=4000, p=prior)
        got = method.collect(x, rng)
        errors.append(method.answer(got, ranges) - truth)
        variances.append(method.range_variance(ranges, prior, got.sizes))
    errors, var = np.array(errors), np.mean(variances, axis=0)
    alpha = FALSE_FAILURE / 4  # two ranges, two checks each
    x = math.log(2.0 / alpha)
    low, high = var * (1 - 2 * math.sqrt(x / reps)), var * (1 + 2 * math.sqrt(x / reps) + 2 * x / reps)
    mse = np.mean(errors**2, axis=0)
    assert np.all(low <= mse) and np.all(mse <= high)
    assert np.all(np.abs(errors.mean(axis=0)) <= stats.norm.isf(alpha / 2) * np.sqrt(var / reps))


def test_the_optimal_fanout_is_the_smallest_exact_mean_variance():
    d, eps, n = 256, 1.0, 10**6
    ranges = ranges_of_length(d, [16, 64, 128])
    best, table = optimal_fanout(d, eps, n, ranges, fanouts=(2, 4, 8, 16))
    for b, value in table.items():
        m = HierarchicalRanges(d, eps, fanout=b)
        assert value == pytest.approx(float(np.mean(m.range_variance(ranges, np.full(d, 1 / d), m.expected_sizes(n)))))
    assert table[best] == min(table.values())


def test_consistency_never_does_worse_than_the_covering_nodes_on_long_ranges():
    d, eps, n = 256, 1.0, 10**6
    ranges = ranges_of_length(d, [64, 128, 256])
    prior = np.full(d, 1 / d)
    for b in (2, 4, 8):
        plain = HierarchicalRanges(d, eps, fanout=b, consistent=False)
        fit = HierarchicalRanges(d, eps, fanout=b)
        sizes = plain.expected_sizes(n)
        assert np.mean(fit.range_variance(ranges, prior, sizes)) < np.mean(plain.range_variance(ranges, prior, sizes))


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: range_matrix([[3, 2]], 8), "ranges"),
        (lambda: range_matrix([[0, 8]], 8), "ranges"),
        (lambda: FlatRanges(1, 1.0), "d"),
        (lambda: HierarchicalRanges(8, 1.0, fanout=1), "fanout"),
        (lambda: HaarRanges(8, 0.0), "eps"),
        (lambda: FlatRanges(8, 1.0).collect(np.array([0, 8]), np.random.default_rng(0)), "answers"),
        (lambda: FlatRanges(8, 1.0).range_variance([[0, 1]], np.ones(7) / 7, [10]), "prior"),
    ],
)
def test_errors_name_the_parameter(call, name):
    with pytest.raises(LdpSimError, match=rf"^{name}: "):
        call()


@pytest.mark.parametrize(
    "make",
    [
        lambda: HierarchicalRanges(20, 1.0, fanout=3, oracle="hadamard_response"),
        lambda: HierarchicalRanges(20, 0.5, fanout=4, oracle="randomized_response"),
        lambda: HaarRanges(20, 1.0),
    ],
    ids=["tree-hadamard", "tree-rr", "haar"],
)
def test_the_reports_a_respondent_makes_follow_the_finite_mechanisms_matrix(make):
    """Reports are drawn level by level (not through the matrix's alias tables): for three
    answers, the counts of 200,000 reports against the matrix row by Pearson's chi-square
    test at the suite's false-failure probability."""
    method = make()
    mech = method.finite_mechanism()
    rng = np.random.default_rng(11)
    for x in (0, 7, 19):
        counts = np.bincount(mech.privatize(np.full(200_000, x), rng), minlength=mech.output_size)
        expected = 200_000 * mech.matrix[x]
        seen = expected > 0
        assert counts[~seen].sum() == 0
        chi2 = float(((counts[seen] - expected[seen]) ** 2 / expected[seen]).sum())
        assert stats.chi2.sf(chi2, seen.sum() - 1) > FALSE_FAILURE / 9
