"""DiscretePLD against brute force: hockey-stick sums, LP trade-offs, product distributions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldpsim.errors import LdpSimError
from ldpsim.privacy.pld import DiscretePLD

from .oracles import hockey_stick, product, quaternary_rows, tradeoff_lp


def _pair(seed: int, m: int, zeros: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p, r = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    if zeros:
        p[0], r[-1] = 0.0, 0.0  # an R-only and a P-only outcome
        p, r = p / p.sum(), r / r.sum()
    return p, r


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 8), zeros=st.booleans(), eps=st.floats(0, 4))
def test_delta_equals_hockey_stick(seed, m, zeros, eps):
    p, r = _pair(seed, m, zeros)
    pld = DiscretePLD.from_distributions(p, r)
    assert pld.delta(eps) == pytest.approx(hockey_stick(p, r, eps), rel=1e-12, abs=1e-15)
    assert pld.swap().delta(eps) == pytest.approx(hockey_stick(r, p, eps), rel=1e-12, abs=1e-15)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 6), zeros=st.booleans(), alpha=st.floats(0, 1))
def test_tradeoff_equals_linear_program(seed, m, zeros, alpha):
    p, r = _pair(seed, m, zeros)
    pld = DiscretePLD.from_distributions(p, r)
    assert pld.tradeoff(alpha) == pytest.approx(tradeoff_lp(p, r, alpha), abs=1e-9)


def test_tradeoff_vertices_are_convex_and_conjugate_to_delta():
    p, r = _pair(3, 7)
    pld = DiscretePLD.from_distributions(p, r)
    a, b = pld.tradeoff_vertices()
    assert np.all(np.diff(a) >= 0) and np.all(np.diff(b) <= 1e-15)
    slopes = np.diff(b)[np.diff(a) > 0] / np.diff(a)[np.diff(a) > 0]
    assert np.all(np.diff(slopes) >= -1e-9)  # convex
    for eps in (0.0, 0.3, 1.0, 2.5):
        # delta(eps) = max over vertices of 1 - e^eps alpha - beta (conjugacy, P vs R)
        assert np.max(1 - np.exp(eps) * a - b) == pytest.approx(hockey_stick(r, p, eps), abs=1e-12)


def test_compose_equals_product_distributions():
    p1, r1 = _pair(1, 3)
    p2, r2 = _pair(2, 4)
    pld = DiscretePLD.from_distributions(p1, r1).compose(DiscretePLD.from_distributions(p2, r2))
    P, R = np.outer(p1, p2).ravel(), np.outer(r1, r2).ravel()
    for eps in (0.0, 0.2, 1.0, 3.0):
        assert pld.delta(eps) == pytest.approx(hockey_stick(P, R, eps), rel=1e-12, abs=1e-15)
    for alpha in (0.0, 0.05, 0.3, 0.9):
        assert pld.tradeoff(alpha) == pytest.approx(tradeoff_lp(P, R, alpha), abs=1e-9)


@pytest.mark.parametrize("k", [1, 2, 5, 6])
def test_self_compose_and_binomial_match_brute_force(k):
    eps, delta = 0.7, 0.02
    p, r = quaternary_rows(eps, delta)
    P, R = product(p, k), product(r, k)
    one = DiscretePLD.from_distributions(p, r)
    for pld in (one.self_compose(k), DiscretePLD.binomial(eps, delta, k)):
        for e in (0.0, 0.35, 0.7, 1.4, k * eps):
            assert pld.delta(e) == pytest.approx(hockey_stick(P, R, e), rel=1e-11, abs=1e-15)
    # equal losses were merged: at most 2k + 1 distinct lattice losses... here k + 1
    assert one.self_compose(k).loss.size == k + 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 8), target=st.floats(0, 1))
def test_epsilon_is_the_exact_inverse(seed, m, target):
    p, r = _pair(seed, m, zeros=False)
    pld = DiscretePLD.from_distributions(p, r)
    x = pld.epsilon(target)
    assert hockey_stick(p, r, x) <= target + 1e-15
    if x > 0:
        assert hockey_stick(p, r, x * (1 - 1e-9)) > target - 1e-12


def test_epsilon_unreachable_is_inf():
    p, r = _pair(4, 5)
    pld = DiscretePLD.from_distributions(p, r)
    assert pld.epsilon(pld.p_inf / 2) == np.inf


def test_log_delta_far_below_doubles():
    # 5000-fold product of RR(eps = 1): delta at eps_total close to k eps underflows doubles
    pld = DiscretePLD.binomial(1.0, 0.0, 5000)
    # only the top atom l = 0 contributes at eps_total in ((k-2) eps, k eps)
    et = 5000 - 1.0
    log_q0 = -5000 * np.log1p(np.exp(-1.0))
    assert pld.log_delta(et) == pytest.approx(log_q0 + np.log(-np.expm1(-1.0)), rel=1e-13)
    assert pld.delta(et) == 0.0


def test_bad_input():
    with pytest.raises(LdpSimError, match="r"):
        DiscretePLD.from_distributions([0.5, 0.5], [0.2, 0.3, 0.5])
    pld = DiscretePLD.from_distributions([0.5, 0.5], [0.2, 0.8])
    with pytest.raises(LdpSimError, match="eps"):
        pld.delta(-1.0)
    with pytest.raises(LdpSimError, match="alpha"):
        pld.tradeoff(1.5)
    with pytest.raises(LdpSimError, match="max_atoms"):
        DiscretePLD.binomial(0.1, 0, 3000).compose(DiscretePLD.binomial(0.2, 0, 3000), max_atoms=10**6)
