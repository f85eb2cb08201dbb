"""Property-based tests: exact eps/delta equal their parameters over the whole range,
matrices equal their defining formulas (computed independently in tests/oracles.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ldpsim.mechanisms import (
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    from_matrix,
    pattern_matrix,
    quaternary_mechanism,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)
from tests.oracles import quaternary_matrix, rr_matrix, truncated_geometric_matrix

EPS = st.floats(min_value=0.0, max_value=700.0, allow_nan=False, allow_infinity=False)
MODERATE_EPS = st.floats(min_value=0.0, max_value=30.0)
DELTA = st.floats(min_value=0.0, max_value=1.0)


def _prior(k: int):
    return st.lists(st.floats(min_value=1e-3, max_value=1.0), min_size=k, max_size=k).map(
        lambda w: np.asarray(w) / np.sum(w)
    )


PRIOR_PAIR = st.integers(2, 12).flatmap(lambda k: st.tuples(_prior(k), _prior(k)))


def assert_eps(got: float, eps: float) -> None:
    assert got == pytest.approx(eps, rel=1e-9, abs=1e-12)


def assert_rows_sum_to_one(mech) -> None:
    np.testing.assert_allclose(mech.matrix.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@given(k=st.integers(2, 60), eps=EPS)
def test_randomized_response_exact_epsilon(k, eps):
    mech = randomized_response(k, eps)
    assert_eps(mech.epsilon(), eps)
    assert_rows_sum_to_one(mech)
    assert mech.is_private(eps)
    if eps > 1e-3:  # below that the 1e-12 absolute rounding slack dominates a 1e-6 relative step
        assert not mech.is_private(eps * (1 - 1e-6))
    if eps <= 30:
        np.testing.assert_allclose(mech.matrix, rr_matrix(k, eps), rtol=1e-12)


@given(pair=PRIOR_PAIR, eps=EPS)
def test_binary_mechanism_for_priors_exact_epsilon(pair, eps):
    p0, p1 = pair
    mech = binary_mechanism_for_priors(p0, p1, eps)
    t = p0 >= p1
    assume(0 < t.sum() < t.size)  # otherwise the two rows coincide and eps is 0
    assert_eps(mech.epsilon(), eps)
    assert_rows_sum_to_one(mech)
    if eps <= 30:
        e = math.exp(eps)
        np.testing.assert_allclose(mech.matrix[:, 0], np.where(t, e / (1 + e), 1 / (1 + e)), rtol=1e-12)


@given(p=st.integers(2, 10).flatmap(_prior), eps=EPS)
def test_binary_mechanism_for_prior_best_set(p, eps):
    mech = binary_mechanism_for_prior(p, eps)
    assert_eps(mech.epsilon(), eps)
    assert_rows_sum_to_one(mech)
    # the chosen set maximises P(T) P(T^c): compare with every subset
    t = np.array(mech.params["T"], dtype=int)
    mass = p[t].sum()
    codes = np.arange(1 << p.size)
    masses = ((codes[:, None] >> np.arange(p.size)) & 1) @ p
    assert mass * (1 - mass) >= np.max(masses * (1 - masses)) - 1e-12


@given(k=st.integers(2, 40), eps=EPS)
def test_truncated_geometric_exact_epsilon(k, eps):
    mech = truncated_geometric(k, eps)
    assert_eps(mech.epsilon(), eps)
    assert_rows_sum_to_one(mech)


@given(k=st.integers(2, 12), eps=st.floats(min_value=0.05, max_value=20.0))
def test_truncated_geometric_matches_clipped_noise(k, eps):
    np.testing.assert_allclose(truncated_geometric(k, eps).matrix, truncated_geometric_matrix(k, eps), rtol=1e-9, atol=1e-15)


@st.composite
def staircase_mixtures(draw):
    """Random staircase mechanisms: mixtures of randomized response and binary mechanisms
    on random sets, each a staircase mechanism, so their concatenation is one too."""
    k = draw(st.integers(2, 8))
    eps = draw(EPS)
    parts = draw(st.integers(1, 4))
    weights = np.asarray(draw(st.lists(st.floats(0.05, 1.0), min_size=parts + 1, max_size=parts + 1)))
    weights /= weights.sum()
    codes, theta = [], []
    # randomized response: one-hot patterns, theta = 1/(k - 1 + e)
    log_rr = -eps - math.log1p((k - 1) * math.exp(-eps))
    codes += [1 << i for i in range(k)]
    theta += [weights[0] * math.exp(log_rr)] * k
    for j in range(parts):
        t = draw(st.integers(1, (1 << k) - 2))  # a proper non-empty set
        comp = ((1 << k) - 1) ^ t
        lo = -eps - math.log1p(math.exp(-eps))  # log 1/(1+e)
        codes += [t, comp]
        theta += [weights[j + 1] * math.exp(lo)] * 2
    return k, eps, np.asarray(codes), np.asarray(theta)


@given(spec=staircase_mixtures())
def test_staircase_exact_epsilon(spec):
    k, eps, codes, theta = spec
    mech = staircase_mechanism(eps, theta, patterns=codes, k=k)
    assert_eps(mech.epsilon(), eps)
    assert_rows_sum_to_one(mech)
    if eps <= 30:
        # columns are proportional to columns of the pattern matrix
        theta_full = np.bincount(codes, weights=theta, minlength=1 << k)
        out_codes = [sum(int(b) << i for i, b in enumerate(label)) for label in mech.output_labels]
        assert sorted(out_codes) == sorted(np.flatnonzero(theta_full).tolist())
        expected = pattern_matrix(k, eps)[:, out_codes] * theta_full[out_codes]
        np.testing.assert_allclose(mech.matrix, expected, rtol=1e-9)


@given(eps=EPS, delta=DELTA)
def test_quaternary_exact_privacy(eps, delta):
    mech = quaternary_mechanism(eps, delta)
    assert_rows_sum_to_one(mech)
    assert mech.delta(eps) == pytest.approx(delta, rel=1e-9, abs=0)
    assert mech.is_private(eps, delta)
    if delta == 0:
        assert_eps(mech.epsilon(), eps)
    else:
        assert math.isinf(mech.epsilon())
        # below eps the quaternary mechanism needs strictly more delta
        if eps > 1e-6 and delta < 1 - 1e-6:
            assert mech.delta(eps * (1 - 1e-3)) > delta
    if eps <= 30:
        np.testing.assert_allclose(mech.matrix, quaternary_matrix(eps, delta), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("delta", [1e-300, 1e-100, 1e-12, 0.3])
@pytest.mark.parametrize("eps", [0.0, 1e-8, 1.0, 50.0, 700.0])
def test_quaternary_delta_at_tiny_values(eps, delta):
    assert quaternary_mechanism(eps, delta).delta(eps) == pytest.approx(delta, rel=1e-9, abs=0)


@given(k=st.integers(2, 6), m=st.integers(1, 6), data=st.data())
def test_from_matrix_delta_is_monotone_and_bounded(k, m, data):
    rows = data.draw(st.lists(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m), min_size=k, max_size=k))
    q = np.asarray(rows)
    assume(np.all(q.sum(axis=1) > 1e-3))
    q = q / q.sum(axis=1, keepdims=True)
    mech = from_matrix(q)
    deltas = mech.delta(np.array([0.0, 0.1, 0.5, 1.0, 5.0, math.inf]))
    assert np.all(np.diff(deltas) <= 1e-15) and np.all((deltas >= 0) & (deltas <= 1))
    # delta(0) is the largest total variation distance between rows
    tv = max(0.5 * np.abs(q[a] - q[b]).sum() for a in range(k) for b in range(k))
    assert deltas[0] == pytest.approx(tv, abs=1e-12)
    e = mech.epsilon()
    if math.isfinite(e):
        assert mech.delta(e) <= 1e-12


def test_pattern_matrix_columns():
    s = pattern_matrix(3, 1.0)
    assert s.shape == (3, 8)
    # column b = 5 = 0b101: bits b_0 = 1, b_1 = 0, b_2 = 1
    np.testing.assert_allclose(s[:, 5], [math.e, 1.0, math.e])
    np.testing.assert_allclose(s[:, 0], 1.0)


def test_binary_mechanism_explicit_set_and_mask_agree():
    a = binary_mechanism(1.0, [0, 2], 4)
    b = binary_mechanism(1.0, np.array([True, False, True, False]), 4)
    np.testing.assert_array_equal(a.matrix, b.matrix)


def test_staircase_full_theta_keeps_the_pattern_order():
    """With a full theta, column j is pattern j: Q = S diag(theta) on the non-zero weights."""
    k, eps = 2, 1.0
    s = pattern_matrix(k, eps)
    theta = np.array([0.1, 0.0, 0.0, 0.0])
    theta[1] = theta[2] = (1 - 0.1 - math.e * 0.05 - 0.0) / (1 + math.e)  # rows: 0.1 + th (1 + e) + 0.05 e = 1
    theta[3] = 0.05
    mech = staircase_mechanism(eps, theta)
    np.testing.assert_allclose(mech.matrix, s * theta, rtol=1e-12)
    codes = [4, 1, 2]
    mech3 = staircase_mechanism(eps, [1 / (2 + math.e)] * 3, patterns=codes, k=3)
    np.testing.assert_allclose(mech3.matrix, pattern_matrix(3, eps)[:, codes] / (2 + math.e), rtol=1e-12)
