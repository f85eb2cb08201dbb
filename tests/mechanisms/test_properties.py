"""Property-based tests: exact eps/delta equal their parameters over the whole range,
matrices equal their defining formulas (computed independently in tests/oracles.py)."""

from __future__ import annotations

import math

import mpmath as mp
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
from tests.stats_checks import assert_sample_law

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
    np.testing.assert_allclose(
        truncated_geometric(k, eps).matrix, truncated_geometric_matrix(k, eps), rtol=1e-9, atol=1e-15
    )


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


# --------------------------------------------------------------------- the contract: epsilon(delta)
# Reference: the hockey-stick divergence by its definition, max over ordered pairs of rows of
# sum_y (Q[x,y] - e^t Q[x',y])_+, in mpmath at 40 digits, and its smallest root t >= 0 with
# delta(t) <= d by bisection to 1e-30 (the curve is continuous and non-increasing).
INF_COLUMN_Q = np.array([[0.5, 0.3, 0.2], [0.3, 0.6, 0.1], [0.2, 0.8, 0.0]])  # eps = inf, delta(inf) = 0.2


def _mp_delta(q: np.ndarray, t) -> mp.mpf:
    rows = [[mp.mpf(float(c)) for c in row] for row in q]
    factor = mp.e ** mp.mpf(t)
    best = mp.mpf(0)
    for a in rows:
        for b in rows:
            best = max(best, mp.fsum(max(mp.mpf(0), ca - factor * cb) for ca, cb in zip(a, b)))
    return best


def _mp_delta_inf(q: np.ndarray) -> mp.mpf:
    return max(mp.fsum(mp.mpf(float(ca)) for ca, cb in zip(a, b) if cb == 0) for a in q for b in q)


def _mp_epsilon(q: np.ndarray, d: float) -> float:
    """Smallest t >= 0 with delta(t) <= d, brute force (inf when delta(inf) > d)."""
    with mp.workdps(40):
        d = mp.mpf(d)
        if _mp_delta(q, 0) <= d:
            return 0.0
        if _mp_delta_inf(q) > d:
            return math.inf
        hi = mp.mpf(1)
        while _mp_delta(q, hi) > d:
            hi *= 2
        lo = mp.mpf(0)
        while hi - lo > mp.mpf("1e-30") * max(hi, 1):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if _mp_delta(q, mid) <= d else (mid, hi)
        return float(hi)


def _finite_cases():
    rng = np.random.default_rng(20240615)
    cases = {
        "rr_3_1": randomized_response(3, 1.0),
        "rr_2_0.1": randomized_response(2, 0.1),
        "geometric_4_2": truncated_geometric(4, 2.0),
        "binary_5": binary_mechanism(1.5, [0, 3], 5),
        "inf_column": from_matrix(INF_COLUMN_Q),
        "quaternary": quaternary_mechanism(0.7, 0.05),
    }
    for k, m in [(3, 2), (4, 5), (5, 6)]:
        cases[f"dirichlet_{k}x{m}"] = from_matrix(rng.dirichlet(np.ones(m), size=k))
    return cases


FINITE_CASES = _finite_cases()
DELTA_GRID = [1e-300, 1e-12, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 0.9, 1.0]


@pytest.mark.parametrize("name", sorted(FINITE_CASES))
def test_epsilon_of_delta_equals_the_brute_force_root(name):
    mech = FINITE_CASES[name]
    q = np.asarray(mech.matrix)
    for d in DELTA_GRID:
        got = mech.epsilon(d)
        want = _mp_epsilon(q, d)
        if math.isinf(want):
            assert got == math.inf, (d, got)
            continue
        # the library sees Q rounded to doubles and counts log-ratios within 64 ulps of t as
        # ties: it moves the root by far less than 1e-9 of t or 1e-12 absolute here
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (d, got, want)
        assert mech.delta(got) <= d
    assert mech.epsilon(0.0) == mech.epsilon()  # delta = 0: the pure eps


@pytest.mark.parametrize("eps", [1e-300, 1e-9, 0.1, 1.0, 30.0, 700.0])
@pytest.mark.parametrize("k", [2, 3, 1000, 10**6])
def test_randomized_response_epsilon_of_delta_closed_form(k, eps):
    """RR's epsilon(delta) against eps + log(1 - delta / p_keep) in mpmath (no k x k matrix:
    k = 10^6 would need 10^12 entries)."""
    rr = randomized_response(k, eps)
    with mp.workdps(50):
        p_keep = 1 / (1 + (k - 1) * mp.e ** (-mp.mpf(eps)))
        delta0 = -p_keep * mp.expm1(-mp.mpf(eps))  # delta(0), the keep probability
        for frac in [1e-300, 1e-12, 0.001, 0.5, 0.999]:
            d = float(frac * delta0)
            if d == 0.0:  # 1e-300 of a delta(0) near 1e-300 underflows
                continue
            want = mp.mpf(eps) + mp.log1p(-mp.mpf(d) / p_keep)
            got = rr.epsilon(d)
            assert abs(got - want) <= 1e-12 * max(1.0, eps) + 4 * mp.eps * abs(want), (frac, got, want)
            assert rr.delta(got) <= d
            if got > 0:
                assert rr.delta(math.nextafter(got, 0.0)) > d  # the smallest such float
        assert rr.epsilon(min(1.0, float(delta0) * (1 + 1e-12))) == 0.0
        assert rr.epsilon(1.0) == 0.0
    assert rr.epsilon(0.0) == eps


def test_randomized_response_three_one_at_1e_3():
    rr = randomized_response(3, 1)
    p_keep = math.e / (2 + math.e)
    assert rr.epsilon(1e-3) == pytest.approx(1 + math.log1p(-1e-3 / p_keep), rel=1e-14)


@pytest.mark.parametrize("name", sorted(FINITE_CASES))
def test_epsilon_and_delta_are_inverse_curves(name):
    """delta(epsilon(d)) <= d and epsilon(delta(e)) <= e, exactly, over wide grids."""
    mech = FINITE_CASES[name]
    for d in DELTA_GRID + [0.0]:
        e = mech.epsilon(d)
        assert e >= 0
        if math.isfinite(e):
            assert mech.delta(e) <= d, (d, e)
    for e in [0.0, 1e-300, 1e-6, 0.3, 0.7, 1.0, 2.0, 10.0, 700.0, math.inf]:
        d = float(mech.delta(e))
        assert mech.epsilon(d) <= e, (e, d)
    grid = np.array([1e-3, 0.1])
    np.testing.assert_array_equal(mech.epsilon(grid), [mech.epsilon(float(x)) for x in grid])


def test_epsilon_of_delta_at_the_edges_of_the_inf_column():
    mech = from_matrix(INF_COLUMN_Q)
    assert mech.epsilon() == math.inf
    d_inf = float(mech.delta(math.inf))
    assert d_inf == pytest.approx(0.2, rel=1e-15)
    assert mech.epsilon(math.nextafter(d_inf, 0.0)) == math.inf
    assert math.isfinite(mech.epsilon(d_inf))
    with pytest.raises(ValueError, match="delta"):
        mech.epsilon(1.5)
    with pytest.raises(ValueError, match="delta"):
        mech.epsilon(-1e-3)


# --------------------------------------------------------------------- the contract: identity
def test_finite_mechanisms_have_value_equality_and_hash():
    rr = randomized_response(3, 1)
    assert rr == randomized_response(3, 1.0) and hash(rr) == hash(randomized_response(3, 1.0))
    assert rr != randomized_response(3, 1.5) and rr != randomized_response(4, 1.0)
    assert repr(rr) == "randomized_response(k=3, eps=1.0)"
    assert len({rr, randomized_response(3, 1.0), randomized_response(3, 2.0)}) == 2
    generic = from_matrix(rr.matrix)
    assert generic != rr  # another class
    q = INF_COLUMN_Q
    a, b = from_matrix(q), from_matrix(q.copy())
    assert a == b and hash(a) == hash(b)
    other = q.copy()
    other[2] = [0.1, 0.9, 0.0]
    assert from_matrix(other) != a  # same shape (the params), another matrix
    assert from_matrix(q, input_labels="abc") != a
    assert from_matrix(q, name="other") != a
    assert truncated_geometric(4, 1.0) == truncated_geometric(4, 1.0)
    assert staircase_mechanism(1.0, [1 / (2 + math.e)] * 3, patterns=[4, 1, 2], k=3) == staircase_mechanism(
        1.0, [1 / (2 + math.e)] * 3, patterns=[4, 1, 2], k=3
    )
    params = rr.params
    params["eps"] = 9.0  # a copy: the mechanism keeps its own
    assert rr.params == {"k": 3, "eps": 1.0} and rr.epsilon() == 1.0
    assert rr.output_size == 3 and from_matrix(np.full((2, 5), 0.2)).output_size == 5


def test_neighbours_all_pairs_up_to_six_inputs_then_a_star():
    assert randomized_response(3, 1.0).neighbours() == [(0, 1), (0, 2), (1, 2)]
    six = truncated_geometric(6, 1.0).neighbours()
    assert len(six) == 15 and len(set(six)) == 15 and all(a < b for a, b in six)
    seven = truncated_geometric(7, 1.0).neighbours()
    assert seven == [(1, j) for j in range(2, 8)]


# --------------------------------------------------------------------- the contract: sample, log_density
SAMPLE_CASES = {
    "rr": lambda: randomized_response(4, 1.0),
    "geometric": lambda: truncated_geometric(5, 1.0),
    "inf_column": lambda: from_matrix(INF_COLUMN_Q, input_labels=("a", "b", "c")),
}


@pytest.mark.parametrize("name", sorted(SAMPLE_CASES))
def test_sample_follows_the_row_of_its_input(name):
    """sample(x, n) against row x of the matrix: binned binomial + chi-square checks at total
    false-failure probability 1e-6 (split evenly over the inputs)."""
    mech = SAMPLE_CASES[name]()
    q = np.asarray(mech.matrix)
    rng = np.random.default_rng(97)
    for i, label in enumerate(mech.input_labels):
        y = mech.sample(label, 40_000, rng)
        assert y.shape == (40_000,) and y.dtype == np.int64
        assert np.all(q[i][y] > 0), "an output of probability zero"
        assert_sample_law(y, q[i], alpha=1e-6 / mech.k)
    assert mech.sample(mech.input_labels[0], 0, rng).shape == (0,)
    with pytest.raises(ValueError, match="values"):
        mech.sample("not a label", 3, rng)


@pytest.mark.parametrize("name", sorted(SAMPLE_CASES))
def test_log_density_is_the_log_of_the_matrix(name):
    mech = SAMPLE_CASES[name]()
    q = np.asarray(mech.matrix)
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    for i, label in enumerate(mech.input_labels):
        np.testing.assert_allclose(mech.log_density(label, np.arange(mech.m)), logq[i], rtol=1e-12)
        assert mech.log_density(label, 0) == pytest.approx(logq[i, 0], rel=1e-12)
        assert isinstance(mech.log_density(label, 0), float)
        off = mech.log_density(label, np.array([-1, mech.m, 0.5]))
        assert np.all(off == -np.inf)
