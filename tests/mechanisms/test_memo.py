"""Memoisation (ldpsim/mechanisms/memo.py): one report is the chain of the two mechanisms;
c reports of one value, and histories of several values, against brute force.

The references are independent of the code under test: closed forms derived by hand (the
chain of two k-ary randomized responses is k-ary randomized response with the product keep
probability), and exact enumeration with fractions over every output sequence and every
memo value, at rational probabilities (``e^eps`` rational: eps = log 2, log 3, log 6). The
sampling checks state their false-failure probabilities (tests/stats_checks.py).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import (
    Memoised,
    catalog,
    chain_mechanism,
    from_matrix,
    memoised_rr,
    randomized_response,
)
from ldpsim.mechanisms.memo import REPORTS_WORK_LIMIT
from tests.stats_checks import FALSE_FAILURE, assert_sample_law, binomial_cells_ok


# --------------------------------------------------------------------------- exact references
def rr_fractions(k: int, e: int) -> list[list[F]]:
    """k-ary randomized response with e^eps = e (an integer): e/(k-1+e) on the diagonal."""
    d = F(k - 1 + e)
    return [[F(e) / d if i == j else 1 / d for j in range(k)] for i in range(k)]


def as_float(m: list[list[F]]) -> np.ndarray:
    return np.array([[float(x) for x in row] for row in m])


def history_law(history: tuple[int, ...], y: tuple[int, ...], m1, m2) -> F:
    """P(reports y | answers history): one memo per distinct value, drawn from M1, shared by
    the periods holding that value; each report drawn from M2 given its memo."""
    p = F(1)
    for value in set(history):
        periods = [t for t, h in enumerate(history) if h == value]
        p *= sum(m1[value][s] * math.prod(m2[s][y[t]] for t in periods) for s in range(len(m2)))
    return p


def max_log_ratio(pairs, periods: int, m1, m2) -> float:
    """max over the pairs of histories and over every report sequence of log P(y|h)/P(y|h')
    (``inf`` where only h produces y)."""
    best = F(1)
    for h, hp in pairs:
        for y in itertools.product(range(len(m2[0])), repeat=periods):
            a, b = history_law(h, y, m1, m2), history_law(hp, y, m1, m2)
            if a > 0 and b == 0:
                return math.inf
            if b > 0:
                best = max(best, a / b)
    return math.log(best)


def brute_force_reports(c: int, m1, m2) -> float:
    """Exact eps of c reports of one unchanged value: every ordered pair x != x'."""
    k = len(m1)
    pairs = [((x,) * c, (xp,) * c) for x in range(k) for xp in range(k) if x != xp]
    return max_log_ratio(pairs, c, m1, m2)


def brute_force_delta(c: int, m1, m2, eps: float) -> float:
    """Exact delta at eps of c reports of one value: max over pairs of sum_y (P - e^eps P')_+."""
    k, w = len(m1), math.exp(eps)
    out = 0.0
    for x in range(k):
        for xp in range(k):
            if x != xp:
                total = 0.0
                for y in itertools.product(range(len(m2[0])), repeat=c):
                    total += max(
                        0.0, float(history_law((x,) * c, y, m1, m2)) - w * float(history_law((xp,) * c, y, m1, m2))
                    )
                out = max(out, total)
    return out


def chain_keep_eps(k: int, a: float, b: float) -> float:
    """The chain of k-RR(a) and k-RR(b) is k-RR with keep probability q = q1 q2
    (q_i = (e^eps_i - 1)/(e^eps_i + k - 1): keep, else a uniform symbol); its eps is
    log(P(y = x) / P(y = x')) = log((q + (1 - q)/k) / ((1 - q)/k))."""
    q = (math.exp(a) - 1) / (math.exp(a) + k - 1) * (math.exp(b) - 1) / (math.exp(b) + k - 1)
    return math.log((q + (1 - q) / k) / ((1 - q) / k))


#: a pair that is not randomized response: 3 inputs, 2 memo symbols, 3 outputs (one zero)
M1_GENERIC = [[F(1, 2), F(1, 2)], [F(1, 5), F(4, 5)], [F(3, 4), F(1, 4)]]
M2_GENERIC = [[F(1, 2), F(1, 2), F(0)], [F(1, 6), F(1, 3), F(1, 2)]]
#: rational k-RR parameters (k, e^eps_permanent, e^eps_instantaneous)
RATIONAL = [(2, 3, 3), (3, 2, 6), (3, 3, 2), (2, 2, 9)]


def generic(m1, m2) -> Memoised:
    return Memoised(from_matrix(as_float(m1)), from_matrix(as_float(m2)))


# --------------------------------------------------------------------------- one report
@pytest.mark.parametrize(
    "k, a, b", [(2, math.log(3), math.log(3)), (3, 1.0, 0.5), (4, 2.0, 1.0), (7, 0.3, 4.0), (5, 0.0, 2.0)]
)
def test_one_report_is_rr_with_the_product_keep_probability(k, a, b):
    mech = memoised_rr(k, a, b)
    assert mech.epsilon_report() == pytest.approx(chain_keep_eps(k, a, b), rel=1e-12, abs=1e-15)
    assert mech.epsilon() == mech.epsilon_report()
    # the matrix is the product of the two randomized-response matrices
    p1, p2 = randomized_response(k, a).matrix, randomized_response(k, b).matrix
    np.testing.assert_allclose(mech.matrix, p1 @ p2, rtol=1e-13, atol=1e-16)
    # and the generic log-space product agrees with the closed-form chain
    gen = Memoised(from_matrix(p1), from_matrix(p2))
    np.testing.assert_allclose(gen.matrix, mech.matrix, rtol=1e-13, atol=1e-16)
    assert gen.epsilon_report() == pytest.approx(mech.epsilon_report(), rel=1e-12, abs=1e-15)
    for eps in (0.0, 0.2, mech.epsilon_report() / 2):
        assert mech.delta(eps) == pytest.approx(gen.delta(eps), rel=1e-12, abs=1e-15)


def test_the_chain_is_the_contract_of_one_report():
    mech = memoised_rr(4, 2.0, 1.0)
    plain = from_matrix(mech.matrix)
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    np.testing.assert_allclose(mech.invert(mech.forward(prior)), prior, rtol=0, atol=1e-13)
    np.testing.assert_allclose(
        mech.estimate_covariance(prior, 1000), plain.estimate_covariance(prior, 1000), rtol=1e-10, atol=1e-15
    )
    np.testing.assert_allclose(mech.marginal(prior), prior @ mech.matrix, rtol=1e-13)
    assert mech.epsilon(1e-3) == pytest.approx(plain.epsilon(1e-3), rel=1e-9)
    assert np.allclose(mech.log_density(2, np.arange(4)), np.log(mech.matrix[2]), rtol=1e-13)
    assert mech.identifiable and mech.k == mech.m == 4 and mech.output_size == 4
    g = mech.guarantee()
    assert g.delta(0.3) == pytest.approx(mech.delta(0.3), rel=1e-9)


def test_epsilon_longitudinal_is_the_permanent_eps():
    for k, a, b in [(4, 2.0, 1.0), (2, 0.5, 3.0), (9, 0.0, 1.0)]:
        mech = memoised_rr(k, a, b)
        assert mech.epsilon_longitudinal() == a  # exact: randomized response's eps is its parameter
        assert mech.epsilon_longitudinal(1e-3) == randomized_response(k, a).epsilon(1e-3)
    m = generic(M1_GENERIC, M2_GENERIC)
    assert m.epsilon_longitudinal() == pytest.approx(math.log(F(3, 4) / F(1, 5)), rel=1e-12)  # column 0: 3.75


# --------------------------------------------------------------------------- c reports of one value
@pytest.mark.parametrize("k, e1, e2", RATIONAL)
def test_epsilon_reports_against_brute_force_rr(k, e1, e2):
    m1, m2 = rr_fractions(k, e1), rr_fractions(k, e2)
    closed = memoised_rr(k, math.log(e1), math.log(e2))  # the closed form
    enumerated = generic(m1, m2)  # the count-vector enumeration
    for c in range(1, 5):
        exact = brute_force_reports(c, m1, m2)
        assert closed.epsilon_reports(c) == pytest.approx(exact, rel=1e-12), c
        assert enumerated.epsilon_reports(c) == pytest.approx(exact, rel=1e-12), c


def test_epsilon_reports_against_brute_force_generic():
    mech = generic(M1_GENERIC, M2_GENERIC)
    for c in range(1, 6):
        assert mech.epsilon_reports_exact_available(c)
        assert mech.epsilon_reports(c) == pytest.approx(brute_force_reports(c, M1_GENERIC, M2_GENERIC), rel=1e-12), c


def test_epsilon_reports_with_delta_against_brute_force():
    m1, m2 = rr_fractions(2, 3), rr_fractions(2, 3)
    for mech in (memoised_rr(2, math.log(3), math.log(3)), generic(m1, m2)):
        assert mech.epsilon_reports(1, 0.01) == mech.epsilon_report(0.01)
        for c in (2, 3):
            for delta in (0.01, 0.1):
                e = mech.epsilon_reports(c, delta)
                assert 0 < e < mech.epsilon_reports(c)
                assert brute_force_delta(c, m1, m2, e) <= delta * (1 + 1e-9)
                assert brute_force_delta(c, m1, m2, e * (1 - 1e-6)) > delta
    mech = generic(M1_GENERIC, M2_GENERIC)
    e = mech.epsilon_reports(3, 0.05)
    assert brute_force_delta(3, M1_GENERIC, M2_GENERIC, e) <= 0.05 * (1 + 1e-9)
    assert brute_force_delta(3, M1_GENERIC, M2_GENERIC, e * (1 - 1e-6)) > 0.05


@pytest.mark.parametrize(
    "mech, revealed",
    [
        (memoised_rr(4, 2.0, 1.0), True),
        (memoised_rr(10, 5.0, 0.1), False),
        (generic(M1_GENERIC, M2_GENERIC), True),
        (generic(rr_fractions(3, 2), rr_fractions(3, 6)), True),
    ],
    ids=["rr4", "rr10-slow", "generic", "rr3-enumerated"],
)
def test_epsilon_reports_grows_to_eps_inf(mech, revealed):
    """0 at c = 0, one report's eps at c = 1, nondecreasing, at most eps_inf, and (when the
    reports reveal the memo by c = 79: instantaneous eps not tiny) equal to it in floats."""
    inf = mech.epsilon_longitudinal()
    cs = [c for c in range(80) if mech.epsilon_reports_exact_available(c)]
    values = np.array([mech.epsilon_reports(c) for c in cs])
    assert values[0] == 0.0 and values[1] == mech.epsilon_report()
    assert np.all(np.diff(values) >= 0), values
    assert np.all(values <= inf)
    assert values[-1] > values[1]
    if revealed:
        assert values[-1] == pytest.approx(inf, rel=1e-9)  # the memo is revealed


def test_rr_closed_form_tends_to_eps_inf():
    mech = memoised_rr(10, 5.0, 0.1)
    assert mech.epsilon_reports(10**6) == 5.0
    assert 4.9 < mech.epsilon_reports(100) < 5.0
    assert mech.epsilon_reports_exact_available(10**6)
    assert not mech.epsilon_reports_exact_available(10**6, delta=1e-3)  # delta > 0: enumeration only
    assert mech.epsilon_reports(10**6, delta=1e-3) == mech.epsilon_longitudinal(1e-3)


def test_beyond_the_work_limit_the_bound():
    mech = generic(rr_fractions(10, 5), rr_fractions(10, 2))
    assert mech.epsilon_reports_exact_available(8) and not mech.epsilon_reports_exact_available(9)
    assert 10 * 10 * math.comb(9 + 9, 9) > REPORTS_WORK_LIMIT >= 10 * 10 * math.comb(8 + 9, 9)
    assert mech.epsilon_reports(9) == mech.epsilon_longitudinal() == pytest.approx(math.log(5), rel=1e-12)
    assert mech.epsilon_reports(8) < mech.epsilon_reports(9)
    closed = memoised_rr(10, math.log(5), math.log(2))
    assert mech.epsilon_reports(8) == pytest.approx(closed.epsilon_reports(8), rel=1e-12)


def test_instantaneous_rows_equal_the_limit_is_not_reached():
    # eps_instantaneous = 0: the reports say nothing, however many; eps_inf is a bound only
    mech = memoised_rr(3, 1.0, 0.0)
    assert mech.epsilon_reports(50) == 0.0 and mech.epsilon_longitudinal() == 1.0


# --------------------------------------------------------------------------- histories
def test_one_change_spends_again():
    """Answers (a, a, b) against (a', a', b') (one change, the same pattern), all 3 reports:
    k = 3, e^eps_permanent = 2, e^eps_instantaneous = 6. The exact eps is 1.082336, more
    than eps_inf = log 2 = 0.693147 of one value and equal to epsilon_history([2, 1]) =
    eps_2 + eps_1 = 0.640503 + 0.441833 (the sum is attained: swap the two values)."""
    k, m1, m2 = 3, rr_fractions(3, 2), rr_fractions(3, 6)
    mech = memoised_rr(k, math.log(2), math.log(6))
    histories = [(a, a, b) for a in range(k) for b in range(k) if a != b]
    exact = max_log_ratio([(h, g) for h in histories for g in histories if h != g], 3, m1, m2)
    assert exact == pytest.approx(1.082336, abs=1e-6)
    assert exact > mech.epsilon_longitudinal() + 0.3
    total = mech.epsilon_history(np.array([2, 1, 0]))
    assert exact <= total * (1 + 1e-12)
    assert exact == pytest.approx(total, rel=1e-12)
    assert total == pytest.approx(mech.epsilon_reports(2) + mech.epsilon_reports(1), rel=1e-15)


def test_one_change_generic_is_bounded_by_the_history():
    m1, m2 = M1_GENERIC, M2_GENERIC
    mech = generic(m1, m2)
    histories = [(a, a, b) for a in range(3) for b in range(3) if a != b]
    exact = max_log_ratio([(h, g) for h in histories for g in histories if h != g], 3, m1, m2)
    assert exact <= mech.epsilon_history(np.array([2, 1, 0])) * (1 + 1e-12)


def test_the_timing_of_a_change_leaks():
    """Histories (a, a) and (a, b) have different patterns: one memo or two. Reports of one
    memo agree more often, so the pair is told apart beyond eps_inf. k = 3,
    e^eps_permanent = 2, e^eps_instantaneous = 6: the exact eps of the pair is 0.947381 >
    eps_inf = 0.693147, and more than epsilon_history([1, 1]) = 0.883666; for any two
    histories of T reports T eps_instantaneous (here 3.58) still holds."""
    k, m1, m2 = 3, rr_fractions(3, 2), rr_fractions(3, 6)
    mech = memoised_rr(k, math.log(2), math.log(6))
    pairs = [((a, a), (a, b)) for a in range(k) for b in range(k) if a != b]
    exact = max_log_ratio(pairs + [(q, p) for p, q in pairs], 2, m1, m2)
    assert exact == pytest.approx(0.947381, abs=1e-6)
    assert exact > mech.epsilon_longitudinal()
    assert exact > mech.epsilon_history(np.array([1, 1, 0]))
    assert exact <= 2 * math.log(6)
    # an instantaneous mechanism that nearly reveals the memo leaks the change almost surely
    m2_sharp = rr_fractions(3, 10**6)
    sharp = max_log_ratio(pairs + [(q, p) for p, q in pairs], 2, m1, m2_sharp)
    assert sharp > 12  # log(10^6) - a little: (a, b) gives two different reports, (a, a) almost never


def test_epsilon_history_is_vectorised():
    mech = memoised_rr(4, 2.0, 1.0)
    counts = np.random.default_rng(3).integers(0, 6, size=(500, 4))
    got = mech.epsilon_history(counts)
    assert got.shape == (500,)
    expected = [math.fsum(mech.epsilon_reports(int(c)) for c in row) for row in counts]
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert mech.epsilon_history([0, 0, 0, 0]) == 0.0
    assert mech.epsilon_history([3, 0, 0, 0]) == mech.epsilon_reports(3)
    assert isinstance(mech.epsilon_history(np.array([1, 2, 0, 0])), float)
    assert mech.epsilon_history(counts.reshape(50, 10, 4)).shape == (50, 10)
    for bad in ([1.5, 0, 0, 0], [1, 2, 3], [-1, 0, 0, 0], 3, [True, False, False, False]):
        with pytest.raises(LdpSimError, match="^counts: got"):
            mech.epsilon_history(bad)


# --------------------------------------------------------------------------- sampling


def test_one_report_follows_the_chain():
    """Every input's 200,000 draws of ``sample`` against the chain's row (binned binomial
    cells and chi-square); alpha split over inputs: false failure <= 1e-6."""
    mech = memoised_rr(4, 2.0, 1.0)
    rng = np.random.default_rng(20261203)
    for x in range(mech.k):
        assert_sample_law(mech.sample(x, 200_000, rng), mech.matrix[x], FALSE_FAILURE / mech.k)
    gen = generic(M1_GENERIC, M2_GENERIC)
    for x in range(gen.k):
        assert_sample_law(gen.sample(x, 200_000, rng), gen.matrix[x], FALSE_FAILURE / gen.k)


def _joint_same_memo(m1: np.ndarray, m2: np.ndarray, x: int) -> np.ndarray:
    """P(y1, y2 | x) for two reports of one memo: sum_s M1[x, s] M2[s, y1] M2[s, y2]."""
    return np.einsum("s,si,sj->ij", m1[x], m2, m2)


def test_reports_of_one_memo_are_correlated_as_predicted():
    """P(y1 = y2 | x) exactly (sum_s M1[x, s] sum_y M2[s, y]^2) against 200,000 respondents,
    and the whole joint law of (y1, y2) and of (y1, y2, y3) for the history (a, b, a) (reports
    1 and 3 share a memo, report 2 has its own), each at false-failure 1e-6 / 3."""
    mech = memoised_rr(3, 1.0, 2.0)
    m1, m2 = mech.permanent.matrix, mech.instantaneous.matrix
    rng = np.random.default_rng(20261204)
    n = 200_000
    x = 1
    y = mech.report_history(np.full((n, 2), x), rng)
    assert y.shape == (n, 2) and y.dtype == np.int64
    same = float(m1[x] @ (m2**2).sum(axis=1))
    independent = float(mech.matrix[x] @ mech.matrix[x])
    assert same > independent + 0.05  # the memo makes agreement likelier than two fresh reports
    assert not binomial_cells_ok(
        np.array([np.count_nonzero(y[:, 0] == y[:, 1])]), np.array([n]), np.array([same]), FALSE_FAILURE / 3
    )
    joint = _joint_same_memo(m1, m2, x)
    assert_sample_law(y[:, 0] * 3 + y[:, 1], joint.ravel(), FALSE_FAILURE / 3)
    # a, b, a: the return to a reuses a's memo
    a, b = 0, 2
    y3 = mech.report_history(np.tile([a, b, a], (n, 1)), rng)
    law = np.einsum("ik,j->ijk", _joint_same_memo(m1, m2, a), mech.matrix[b])  # (y1, y2, y3)
    assert_sample_law((y3[:, 0] * 3 + y3[:, 1]) * 3 + y3[:, 2], law.ravel(), FALSE_FAILURE / 3)


def test_two_stages_are_vectorised_and_reproducible():
    mech = memoised_rr(5, 1.0, 2.0)
    n, k = 1000, 5
    memo = mech.permanent_response(np.broadcast_to(np.arange(k), (n, k)), np.random.default_rng(1))  # a memo table
    assert memo.shape == (n, k) and memo.min() >= 0 and memo.max() < k
    again = mech.permanent_response(np.broadcast_to(np.arange(k), (n, k)), np.random.default_rng(1))
    np.testing.assert_array_equal(memo, again)
    answers = np.random.default_rng(2).integers(0, k, size=(n, 7))
    reports = mech.instantaneous_response(memo[np.arange(n)[:, None], answers], np.random.default_rng(3))
    assert reports.shape == (n, 7) and reports.dtype == np.int64
    h1 = mech.report_history(answers, np.random.default_rng(4))
    h2 = mech.report_history(answers, np.random.default_rng(4))
    np.testing.assert_array_equal(h1, h2)
    # an instantaneous mechanism that keeps the memo exactly: reports are the memo, so every
    # period holding the same value reports the same symbol
    exact = Memoised(randomized_response(3, 1.0), from_matrix(np.eye(3)))
    hist = np.random.default_rng(5).integers(0, 3, size=(200, 6))
    rep = exact.report_history(hist, np.random.default_rng(6))
    for i in range(200):
        for value in set(hist[i].tolist()):
            assert len(set(rep[i][hist[i] == value].tolist())) == 1
    with pytest.raises(LdpSimError, match="^answers: got"):
        mech.report_history(np.zeros(4, dtype=int))
    with pytest.raises(LdpSimError, match="^answers: got"):
        mech.report_history(np.full((2, 2), 5))


# --------------------------------------------------------------------------- construction, catalog
def test_construction_errors_and_equality():
    with pytest.raises(LdpSimError, match="^instantaneous: got"):
        Memoised(randomized_response(3, 1.0), randomized_response(4, 1.0))
    with pytest.raises(LdpSimError, match="^mechanisms: got"):
        Memoised(randomized_response(3, 1.0), object())  # type: ignore[arg-type]
    a = generic(M1_GENERIC, M2_GENERIC)
    other = [[F(1, 4), F(3, 4)], [F(3, 4), F(1, 4)]]
    b = Memoised(from_matrix(as_float(M1_GENERIC)), from_matrix(as_float(other) @ as_float(M2_GENERIC)))
    assert repr(a) == repr(b) and a != b  # same shapes, different matrices
    assert a == generic(M1_GENERIC, M2_GENERIC) and hash(a) == hash(generic(M1_GENERIC, M2_GENERIC))
    assert memoised_rr(3, 1.0, 2.0) == catalog.build("memoised_rr", k=3, eps_permanent=1.0, eps_instantaneous=2.0)
    assert memoised_rr(3, 1.0, 2.0) != memoised_rr(3, 2.0, 1.0)
    labelled = Memoised(
        from_matrix(as_float(M1_GENERIC)).with_labels(["x", "y", "z"]), from_matrix(as_float(M2_GENERIC))
    )
    assert labelled.input_labels == ("x", "y", "z")
    assert labelled.log_density("z", 0) == pytest.approx(math.log(5 / 12), rel=1e-13)  # 3/4 * 1/2 + 1/4 * 1/6
    chained = chain_mechanism(from_matrix(as_float(M1_GENERIC)), from_matrix(as_float(M2_GENERIC)))
    np.testing.assert_allclose(chained.matrix, as_float(M1_GENERIC) @ as_float(M2_GENERIC), rtol=1e-14)


def test_catalog_entry():
    e = catalog.entry("memoised_rr")
    assert {"finite", "scenario"} <= e.tags
    built = catalog.parse("memoised_rr:k=4,eps_permanent=2,eps_instantaneous=1")
    assert built.mechanism.epsilon_longitudinal() == 2.0
    assert catalog.parse(built.spec).mechanism == built.mechanism
    for bad, name in [
        ({"k": 1}, "k"),
        ({"eps_permanent": -1.0}, "eps_permanent"),
        ({"eps_instantaneous": float("nan")}, "eps_instantaneous"),
    ]:
        with pytest.raises(LdpSimError, match=f"^{name}: got"):
            catalog.build("memoised_rr", **bad)


def test_usable_in_a_scenario():
    from ldpsim.sim import parse_scenario
    from tests.sim.helpers import scenario_text

    labels = ["a", "b", "c", "d"]
    text = scenario_text(mechanism='kind = "memoised_rr"\neps_permanent = 2.0\neps_instantaneous = 1.0')
    sc = parse_scenario(text, "memo.toml")
    assert sc.mechanism == memoised_rr(4, 2.0, 1.0).with_labels(labels)
    assert sc.mechanism.epsilon() == memoised_rr(4, 2.0, 1.0).epsilon()
