"""Randomized response at large k and large eps: its closed forms against its own matrix,
and its samplers against the exact law (the contract tests use small k only)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.mechanisms import MatrixMechanism, randomized_response
from tests.stats_checks import binomial_cells_ok, chi_square_ok
from tests.tiers import sample


@pytest.mark.parametrize("eps", [0.0, 1e-9, 0.5, 30.0, 300.0, 700.0])
@pytest.mark.parametrize("k", sample([2, 7, 300], keep=(0, 1)))
def test_closed_forms_equal_the_generic_code_on_the_matrix(k, eps):
    rr = randomized_response(k, eps)
    generic = MatrixMechanism(rr.log_matrix, name="generic")
    assert generic.epsilon() == pytest.approx(eps, rel=1e-9, abs=1e-12)
    assert rr.epsilon() == pytest.approx(generic.epsilon(), rel=1e-9, abs=1e-12)
    grid = [0.0, eps / 3, eps / 2, eps, 2 * eps + 1, math.inf]
    for t in grid:
        # absolute 1e-14: the generic code sees log Q rounded to doubles (at eps = 1e-9 the
        # entries differ by 1e-9 relative, so their rounding is 1e-7 of delta itself)
        assert rr.delta(t) == pytest.approx(generic.delta(t), rel=1e-9, abs=1e-14), t
    prior = np.random.default_rng(0).dirichlet(np.ones(k))
    np.testing.assert_allclose(rr.marginal(prior), prior @ rr.matrix, rtol=1e-12, atol=1e-300)


def _expected_row(k: int, eps: float, x: int) -> np.ndarray:
    """Row x of randomized response from the formula, in log space."""
    log_keep = -math.log1p((k - 1) * math.exp(-eps))
    row = np.full(k, math.exp(log_keep - eps))
    row[x] = math.exp(log_keep)
    return row


@pytest.mark.parametrize("k", [1000, 100_000])
def test_sample_counts_from_one_input_at_large_k(k):
    """All n clients on one input: counts are Multinomial(n, row) exactly. Per-cell exact
    binomial tails (Bonferroni) plus a chi-square: false-failure probability 1e-7."""
    eps, x, n = 2.0, k // 3, 10**9
    rr = randomized_response(k, eps)
    counts = np.zeros(k, dtype=np.int64)
    counts[x] = n
    out = rr.sample_counts(counts, np.random.default_rng(21))
    row = _expected_row(k, eps, x)
    assert not binomial_cells_ok(out, n, row, 5e-8)
    ok, stat, thr = chi_square_ok(out, n * row, k - 1, 5e-8)
    assert ok, (stat, thr)


@pytest.mark.parametrize("k", [1000, 50_000])
def test_privatize_at_large_k(k):
    """10^7 clients spread over three inputs; each input's outputs follow its row (expected
    counts >= 100 per cell); false-failure probability 1e-7 in all."""
    eps = 1.5
    rr = randomized_response(k, eps)
    inputs = np.array([0, k // 2, k - 1])
    x = np.repeat(inputs, 3_400_000 if k > 1000 else 400_000)
    y = rr.privatize(x, np.random.default_rng(22), chunk_size=99_991)
    for i, xi in enumerate(inputs):
        out = np.bincount(y[x == xi], minlength=k)
        n = out.sum()
        row = _expected_row(k, eps, xi)
        assert n * row.min() >= 50
        assert not binomial_cells_ok(out, n, row, 1e-7 / 6), xi
        ok, stat, thr = chi_square_ok(out, n * row, k - 1, 1e-7 / 6)
        assert ok, (xi, stat, thr)
