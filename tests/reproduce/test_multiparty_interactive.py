"""Tests of ``ldpsim reproduce multiparty-interactive`` (Kairouz, Oh and Viswanath 2015, Sec. 5).

Reference values come from independent computations written here: Kronecker products of
the quaternary matrices, brute force over every event S and every deterministic decision
rule, closed forms. Everything is exact up to float64 rounding (tolerances 1e-12) or in
fractions; the random protocols use fixed seeds.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from ldpsim.protocols import Task, interactive
from ldpsim.reproduce import multiparty_interactive as mi


def quat(eps, delta):
    e = math.exp(eps)
    return np.array(
        [
            [delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0],
            [0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta],
        ]
    )


def test_rr_in_two_rounds_is_the_kronecker_product_of_quaternary_mechanisms():
    eps, delta = np.array([0.3, 1.2, 2.0]), np.array([0.1, 0.0, 0.25])
    P = mi.rr_law(eps, delta)
    K = np.kron(np.kron(quat(0.3, 0.1), quat(1.2, 0.0)), quat(2.0, 0.25))
    # rr_law's columns: (high bits of parties 1..3, low bits of 1..3); K's: (z1, z2, z3)
    P6 = P.reshape(8, 2, 2, 2, 2, 2, 2).transpose(0, 1, 4, 2, 5, 3, 6).reshape(8, 64)
    assert np.abs(P6 - K).max() <= 1e-15
    # each party's exact delta at its eps is its delta (the quaternary's region is R(eps, delta))
    assert np.allclose(mi.privacy_deltas(P, eps), delta, atol=1e-15)


def test_privacy_deltas_match_the_definition_over_every_event():
    rng = np.random.default_rng(3)
    eps = np.array([0.7, 1.1])
    P = mi.transcript_law([np.eye(2), np.eye(2)], mi.random_strategy(2, 2, rng), 2)  # 4 x 16
    subsets = np.array(list(itertools.product((0, 1), repeat=16)), dtype=float)  # every S
    probs = P @ subsets.T  # (x, S)
    for i, e in enumerate(eps):
        best = 0.0
        for x_other in (0, 1):
            a = probs[[0 * 2 + x_other, 2 + x_other] if i == 0 else [2 * x_other, 2 * x_other + 1]]
            best = max(best, (a[0] - math.exp(e) * a[1]).max(), (a[1] - math.exp(e) * a[0]).max())
        assert abs(mi.privacy_deltas(P, eps)[i] - best) <= 1e-12


def test_average_accuracy_is_the_best_deterministic_rule():
    rng = np.random.default_rng(5)
    P = mi.transcript_law([quat(0.5, 0.1), quat(1.0, 0.0)], mi.random_strategy(2, 4, rng), 2)
    Pm = P.reshape(4, 4, 4).sum(axis=2)  # merge transcripts to 4 columns: 2^4 rules for the observer x 2 outputs
    f = np.array([0, 1, 1, 0])  # XOR, x in C order
    rules = np.array(list(itertools.product((0, 1), repeat=4)))  # rule[t] = guess
    best = max(sum(Pm[x, t] for x in range(4) for t in range(4) if rule[t] == f[x]) / 4 for rule in rules)
    assert abs(mi.average_accuracy(Pm, mi.gain_rows(f, np.eye(2)), mi.OBSERVER, 2) - best) <= 1e-12
    # party 1 (knows x_1): best rule per own bit
    best1 = 0.0
    for b in (0, 1):
        rows = [x for x in range(4) if x >> 1 == b]
        best1 += max(sum(Pm[x, t] for x in rows for t in range(4) if rule[t] == f[x]) for rule in rules)
    assert abs(mi.average_accuracy(Pm, mi.gain_rows(f, np.eye(2)), 0, 2) - best1 / 4) <= 1e-12


def test_xor_accuracy_of_rr_is_the_closed_form():
    eps, delta = np.array([0.4, 1.5, 0.9]), np.array([0.05, 0.2, 0.0])
    tv = delta + (1 - delta) * np.tanh(eps / 2)
    f, g = mi.functions(3, np.random.default_rng(0))["xor"]
    P = mi.rr_law(eps, delta)
    assert abs(mi.average_accuracy(P, mi.gain_rows(f, g), mi.OBSERVER, 3) - (1 + tv.prod()) / 2) <= 1e-12
    assert abs(mi.average_accuracy(P, mi.gain_rows(f, g), 1, 3) - (1 + tv[0] * tv[2]) / 2) <= 1e-12


def test_exact_counterexample_in_fractions():
    c = mi.counterexample()
    # party 2's delta: P(m = 0 | x1 = 0) * 3/10 = 2/3 * 3/10 and P(m = 0 | x1 = 1) * 3/10 = 1/3 * 3/10
    assert c["delta2_given_x1=0"] == Fraction(1, 5) and c["delta2_given_x1=1"] == Fraction(1, 10) and c["delta1"] == 0
    # independent float computation: RR = kron(quaternary(ln 2, 0), quaternary(ln 3, 1/5)); the protocol by hand
    f = np.array([0, 1, 2, 2])
    R = np.kron(quat(math.log(2), 0.0), quat(math.log(3), 0.2))
    P = np.zeros((4, 8))
    for x1, x2 in itertools.product((0, 1), repeat=2):
        for m in (0, 1):
            pm = 2 / 3 if m == x1 else 1 / 3
            P[2 * x1 + x2, 4 * m : 4 * m + 4] = pm * quat(math.log(3), 0.3 if m == 0 else 0.0)[x2]

    def obs(M):
        return sum(max(M[f == y, t].sum() for y in range(3)) for t in range(M.shape[1])) / 4

    assert abs(float(c["rr"]) - obs(R)) <= 1e-12 and abs(float(c["protocol"]) - obs(P)) <= 1e-12
    assert c["gain"] == Fraction(1, 120)


def test_gated_protocol_is_admissible_and_beats_rr_in_the_float_model():
    eps, delta = np.array([math.log(2), math.log(3)]), np.array([0.0, 0.2])
    P = mi.gated(eps, delta)
    assert mi.admissible(P, eps, delta)
    f, g = mi.functions(2, np.random.default_rng(0))["gated"]
    gain = mi.average_accuracy(P, mi.gain_rows(f, g), mi.OBSERVER, 2) - mi.average_accuracy(
        mi.rr_law(eps, delta), mi.gain_rows(f, g), mi.OBSERVER, 2
    )
    assert abs(gain - 1 / 120) <= 1e-12


def test_pure_dp_random_interactive_protocols_never_beat_rr():
    rng = np.random.default_rng(11)
    for k in (2, 3):
        eps, delta = rng.uniform(0.2, 2.0, k), np.zeros(k)
        R = mi.rr_law(eps, delta)
        tasks = {n: mi.gain_rows(f, g) for n, (f, g) in mi.functions(k, rng).items()}
        for _ in range(3):
            P, _ = mi.scaled_random(eps, delta, rng)
            assert mi.admissible(P, eps, delta)
            for G in tasks.values():
                for i in (mi.OBSERVER, *range(k)):
                    assert mi.average_accuracy(P, G, i, k) <= mi.average_accuracy(R, G, i, k) + 1e-12
            if k == 2:
                assert mi.blackwell_gap(R, P) <= 1e-8


def test_garbling_bound_certifies_post_processings_and_bounds_the_lp_gap():
    rng = np.random.default_rng(5)
    for k in (2, 3):
        eps, zero = rng.uniform(0.2, 2.0, k), np.zeros(k)
        R = mi.rr_law(eps, zero)
        # a random garbling of RR's support: the certificate is rounding-level
        support = R.max(axis=0) > 0
        W = rng.dirichlet(np.full(7, 0.5), support.sum())
        assert mi.garbling_bound(R, R[:, support] @ W) <= 1e-13
        # RR at twice the eps is not a garbling: the LP's gap is positive and the bound is above it
        P = mi.rr_law(2 * eps, zero)
        bound = mi.garbling_bound(R, P)
        if k == 2:
            lp = mi.blackwell_gap(R, P)
            assert 1e-3 < lp <= bound + 1e-12
        assert bound > mi.LP_TOL
    # approximate DP: RR's support is not square, so there is no certificate and the LP decides
    eps, delta = np.array([0.8, 1.3]), np.array([0.1, 0.2])
    assert mi.garbling_bound(mi.rr_law(eps, delta), mi.tv_binary(eps, delta)) is None


def test_tv_matched_binary_ties_xor_but_is_not_equivalent():
    eps, delta = np.array([0.8, 1.3]), np.array([0.1, 0.2])
    B, R = mi.tv_binary(eps, delta), mi.rr_law(eps, delta)
    assert np.allclose(mi.privacy_deltas(B, eps), delta, atol=1e-15)  # exactly (eps_j, delta_j)
    fx, gx = mi.functions(2, np.random.default_rng(0))["xor"]
    for i in (mi.OBSERVER, 0, 1):
        assert (
            abs(mi.average_accuracy(B, mi.gain_rows(fx, gx), i, 2) - mi.average_accuracy(R, mi.gain_rows(fx, gx), i, 2))
            <= 1e-12
        )
    # RR is not a garbling of it: some gain on (x, guess) favours RR strictly (B is a garbling of RR: gap 0)
    assert mi.blackwell_gap(B, R) > 1e-3
    assert mi.blackwell_gap(R, B) <= 1e-8


def test_relabelled_rr_is_equivalent():
    eps, delta = np.array([0.3, 1.0, 2.0]), np.array([0.1, 0.2, 0.05])
    R, L = mi.rr_law(eps, delta), mi.rr_relabelled(eps, delta)
    assert sorted(map(tuple, np.round(L.T, 15))) == sorted(map(tuple, np.round(R.T, 15)))  # a column permutation


def test_library_cross_check():
    assert mi.library_check(2014, 2) <= 1e-12


def test_the_study_builds_its_families_through_the_public_constructors():
    """The reproduction's gated protocol and RR are the scenario files' ``gated`` and
    ``rr_rounds`` families (ldpsim.protocols.interactive): the same laws, bit for bit, and the
    gated law gives the exact counterexample's observer gain of 1/120 at its levels."""
    eps, delta = np.array([math.log(2), 0.9, math.log(3)]), np.array([0.0, 0.1, 0.2])
    assert np.array_equal(mi.gated(eps, delta), interactive.gated(eps, delta).law())
    assert np.array_equal(mi.rr_law(eps, delta), interactive.rr_over_rounds(eps, delta).law())
    e2, d2 = np.array([math.log(2), math.log(3)]), np.array([0.0, 0.2])
    f, g = mi.functions(2, np.random.default_rng(0))["gated"]
    gain = mi.average_accuracy(mi.gated(e2, d2), mi.gain_rows(f, g), mi.OBSERVER, 2) - mi.average_accuracy(
        mi.rr_law(e2, d2), mi.gain_rows(f, g), mi.OBSERVER, 2
    )
    assert gain == pytest.approx(float(mi.counterexample()["gain"]), abs=1e-14) == pytest.approx(1 / 120)
    task = Task.from_table(f, n_outputs=3)
    assert interactive.gated(e2, d2).accuracy(task) == pytest.approx(73 / 120, rel=1e-12)
