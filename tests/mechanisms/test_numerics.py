"""Extreme parameters: eps up to 700, k up to 10^6, counts up to 10^12: no overflow, no NaN.

RuntimeWarnings (overflow, invalid value) are turned into errors by pytest's configuration,
so any overflow on these paths fails the test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim import LdpSimError
from ldpsim.mechanisms import (
    binary_mechanism_for_priors,
    from_matrix,
    quaternary_mechanism,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)

EXTREME_EPS = [0.0, 1e-12, 1.0, 50.0, 300.0, 700.0]


@pytest.mark.parametrize("eps", EXTREME_EPS)
@pytest.mark.parametrize("k", [2, 1000, 10**6])
def test_randomized_response_large_k_and_eps(k, eps):
    mech = randomized_response(k, eps)
    assert mech.epsilon() == pytest.approx(eps, rel=1e-9, abs=1e-12)
    # exact delta at eps/2 from the closed form: p_keep (1 - e^{-eps/2}), p_keep = 1/(1 + (k-1) e^-eps)
    expected = -math.expm1(-eps / 2) / (1 + (k - 1) * math.exp(-eps))
    assert mech.delta(eps / 2) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    prior = np.zeros(k)
    prior[0] = 1.0
    marg = mech.marginal(prior)
    assert np.all(np.isfinite(marg)) and marg.sum() == pytest.approx(1.0, abs=1e-9)
    counts = np.zeros(k, dtype=np.int64)
    counts[: min(k, 3)] = 10**12 // 3
    out = mech.sample_counts(counts, np.random.default_rng(0))
    assert out.sum() == counts.sum() and out.min() >= 0
    y = mech.privatize(np.arange(min(k, 1000)), np.random.default_rng(0))
    assert y.min() >= 0 and y.max() < k


def test_randomized_response_refuses_to_materialise_a_huge_matrix():
    with pytest.raises(LdpSimError, match="^k: got 1000000"):
        randomized_response(10**6, 1.0).matrix


@pytest.mark.parametrize("eps", EXTREME_EPS)
def test_matrix_mechanisms_at_extreme_eps(eps):
    mechs = [
        truncated_geometric(50, eps),
        binary_mechanism_for_priors([0.7, 0.2, 0.1], [0.1, 0.2, 0.7], eps),
        quaternary_mechanism(eps, 1e-300),
        staircase_mechanism(eps, np.exp(-eps - np.log1p(np.exp(-eps))) * np.array([0, 1, 1, 0.0])),
    ]
    for mech in mechs:
        assert np.all(np.isfinite(mech.matrix))
        e = mech.epsilon()
        assert math.isinf(e) or e == pytest.approx(eps, rel=1e-9, abs=1e-12)
        d = mech.delta(np.array([0.0, eps / 2, eps, math.inf]))
        assert np.all(np.isfinite(d)) and np.all((d >= 0) & (d <= 1))
        out = mech.sample_counts(np.full(mech.k, 10**12 // mech.k), np.random.default_rng(1))
        assert out.sum() == 10**12 // mech.k * mech.k


def test_from_matrix_with_tiny_entries():
    q = np.array([[1 - 1e-300, 1e-300], [0.5, 0.5]])
    mech = from_matrix(q)
    assert mech.epsilon() == pytest.approx(math.log(0.5 / 1e-300), rel=1e-12)
    assert mech.delta(mech.epsilon()) <= 1e-12
