"""The finite part of the contract: every mechanism with an exact matrix (the catalog entries
tagged ``finite`` and the instances built outside the catalog, tests/contract/cases.py).

Exact privacy by brute force over all events and all ordered pairs of inputs (the generic
contract suite looks only at the pairs ``neighbours()`` names), the structured closed forms
against the generic code on the same matrix, marginals, and the three samplers
(``privatize``, ``sample_counts``, ``sample``) against the exact matrix, each with a stated
false-failure probability (see tests/stats_checks.py). Pure and approximate LDP of a finite
mechanism, and delta as a maximum over events, are defined in docs/theory.md sec. 1; exact
aggregate sampling in sec. 12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.mechanisms import FiniteMechanism, catalog, from_matrix
from tests.contract.cases import EXTRA, instance, instance_params
from tests.oracles import brute_force_delta, brute_force_epsilon, sum_of_binomials_pmf
from tests.stats_checks import FALSE_FAILURE, assert_conditional_frequencies, assert_sample_law, binomial_cells_ok

FINITE = set(catalog.names("finite"))
# the finite instances built outside the catalog (EXTRA also holds oracles with vector reports)
_FINITE_EXTRA = [pytest.param(key, id=key) for key in EXTRA if isinstance(instance(key), FiniteMechanism)]
MECHS = pytest.mark.parametrize("key", instance_params(lambda name: name in FINITE, extra=False) + _FINITE_EXTRA)


def _eps_grid(mech) -> list[float]:
    e = mech.epsilon()
    base = [0.0, 0.3, 1.0, 3.0, math.inf]
    if math.isfinite(e):
        base += [e / 2, e, e * 1.5]
    return base


@MECHS
def test_matrix_is_row_stochastic_and_consistent(key):
    mech = instance(key)
    assert isinstance(mech, FiniteMechanism)
    q = mech.matrix
    assert q.shape == (mech.k, mech.m) == mech.shape
    assert mech.output_size == mech.m
    assert np.all(q >= 0)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(q, np.exp(mech.log_matrix))
    assert len(mech.input_labels) == mech.k and len(mech.output_labels) == mech.m


@MECHS
def test_log_density_is_the_log_matrix(key):
    mech = instance(key)
    codes = np.arange(mech.m)  # reports are output codes; inputs are the input labels
    for i, label in enumerate(mech.input_labels):
        np.testing.assert_array_equal(np.asarray(mech.log_density(label, codes), dtype=float), mech.log_matrix[i])


@MECHS
def test_epsilon_equals_brute_force_over_events(key):
    mech = instance(key)
    expected = brute_force_epsilon(np.asarray(mech.matrix))
    got = mech.epsilon()
    if math.isinf(expected):
        assert math.isinf(got)
    else:
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


@MECHS
def test_delta_equals_brute_force_over_events(key):
    mech = instance(key)
    q = np.asarray(mech.matrix)
    for eps in _eps_grid(mech):
        assert mech.delta(eps) == pytest.approx(brute_force_delta(q, eps), rel=1e-9, abs=1e-12), eps
    grid = np.array(_eps_grid(mech))
    np.testing.assert_allclose(mech.delta(grid), [mech.delta(e) for e in grid], rtol=0, atol=0)


@MECHS
def test_is_private_at_the_exact_boundary(key):
    mech = instance(key)
    e = mech.epsilon()
    if math.isfinite(e):
        assert mech.is_private(e)
        if e > 0:
            assert not mech.is_private(e * (1 - 1e-6))
    else:
        assert not mech.is_private(1e6)
    for eps in [0.0, 0.5, 2.0, math.inf]:
        d = mech.delta(eps)
        assert mech.is_private(eps, d)
        if d > 1e-6:
            assert not mech.is_private(eps, d * (1 - 1e-6))
        # monotone in delta: passing at some delta means passing at every larger one
        verdicts = [mech.is_private(eps, dd) for dd in (0.0, d / 2, d, min(1.0, 2 * d + 1e-12), 1.0)]
        assert verdicts == sorted(verdicts), verdicts


@MECHS
def test_marginal_is_prior_times_matrix(key):
    mech = instance(key)
    prior = np.random.default_rng(1).dirichlet(np.ones(mech.k))
    np.testing.assert_allclose(mech.marginal(prior), prior @ np.asarray(mech.matrix), rtol=1e-12, atol=1e-15)


@MECHS
def test_structured_methods_agree_with_generic_matrix(key):
    """Closed forms (randomized response) against the generic code on the same matrix."""
    mech = instance(key)
    generic = from_matrix(np.asarray(mech.matrix))
    e_m, e_g = mech.epsilon(), generic.epsilon()
    assert e_m == pytest.approx(e_g, rel=1e-9, abs=1e-12) or (math.isinf(e_m) and math.isinf(e_g))
    for eps in _eps_grid(mech):
        assert mech.delta(eps) == pytest.approx(generic.delta(eps), rel=1e-9, abs=1e-12)


@MECHS
def test_privatize_is_reproducible_and_keeps_shape(key):
    mech = instance(key)
    x = np.random.default_rng(2).integers(0, mech.k, size=(3, 1000))
    a = mech.privatize(x, np.random.default_rng(7))
    b = mech.privatize(x, np.random.default_rng(7))
    assert a.shape == x.shape and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < mech.m
    # chunking changes nothing but the order of draws: still a valid output everywhere
    c = mech.privatize(x, np.random.default_rng(7), chunk_size=17)
    assert c.shape == x.shape and c.min() >= 0 and c.max() < mech.m


@MECHS
def test_privatize_frequencies_follow_the_matrix(key):
    """False-failure probability 1e-7 (exact binomial cells + chi-square, see stats_checks).
    400,000 clients per input: a 1% error in a probability of about 1/2 is 6 standard errors."""
    mech = instance(key)
    q = np.asarray(mech.matrix)
    smallest = q[q > 0].min()
    per_input = int(max(400_000, 150 / smallest))
    x = np.repeat(np.arange(mech.k), per_input)
    y = mech.privatize(x, np.random.default_rng(11), chunk_size=9973)  # hundreds of chunk boundaries
    assert_conditional_frequencies(x, y, q, alpha=1e-7)


@MECHS
def test_sample_counts_and_aggregated_privatize_follow_the_exact_law(key):
    """Both samplers against the exact law of output counts: for each event S in a family
    (single outputs, pairs), the count c_S is a sum over inputs of Bin(n_x, Q(S|x)), whose
    pmf is computed by convolution. R replications per sampler; alpha is split over events
    and the two samplers so that the whole test fails by chance with probability <= 1e-6."""
    mech = instance(key)
    q = np.asarray(mech.matrix)
    rng = np.random.default_rng(12)
    n_x = rng.integers(10, 400, size=mech.k)
    reps = 3000
    events = [[y] for y in range(mech.m)] + [[a, b] for a in range(mech.m) for b in range(a + 1, mech.m)]
    events = [s for s in events if len(s) < mech.m][:12]
    alpha = FALSE_FAILURE / (2 * max(1, len(events)))

    from_counts = np.stack([mech.sample_counts(n_x, rng) for _ in range(reps)])
    x = np.tile(np.repeat(np.arange(mech.k), n_x), (reps, 1))
    y = mech.privatize(x, rng)
    from_reports = np.zeros((reps, mech.m), dtype=np.int64)
    np.add.at(from_reports, (np.repeat(np.arange(reps), x.shape[1]), y.ravel()), 1)

    for counts in (from_counts, from_reports):
        np.testing.assert_array_equal(counts.sum(axis=1), n_x.sum())
        for s in events:
            pmf = sum_of_binomials_pmf(n_x, q[:, s].sum(axis=1))
            assert_sample_law(counts[:, s].sum(axis=1), pmf, alpha)


@MECHS
def test_sample_counts_from_one_input_follows_its_row(key):
    """With all n = 10^9 clients on input x the output counts are Multinomial(n, Q[x]) exactly:
    exact binomial tails per cell (Bonferroni), false-failure probability 1e-7 in all. At this n
    a probability error of 1e-4 is several standard errors."""
    mech = instance(key)
    q = np.asarray(mech.matrix)
    rng = np.random.default_rng(13)
    n = 10**9
    table = np.stack([mech.sample_counts(np.eye(mech.k, dtype=np.int64)[x] * n, rng) for x in range(mech.k)])
    assert np.all(table[q == 0] == 0)
    bad = binomial_cells_ok(table, n, q, 1e-7)
    assert not bad, bad
