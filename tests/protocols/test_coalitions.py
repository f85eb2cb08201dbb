"""Coalitions (:mod:`ldpsim.protocols.coalitions`): the coalition's inference against brute
force over every input vector and transcript, written here; its independence from the
coalition when inputs are independent; the deviation table's rows against the functions it
promises to use."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.protocols import Protocol, Task, deviate, exact_accuracy, rule_gain
from ldpsim.protocols.coalitions import coalition_inference, coalition_table, exchangeable_prior


def _brute(protocol: Protocol, coalition: list[int], target: int, prior: np.ndarray) -> tuple[float, float]:
    """Accuracy and expected posterior: every input vector and transcript enumerated."""
    k = protocol.parties
    xs = list(itertools.product(range(2), repeat=k))
    taus = list(itertools.product(*[range(m.shape[1]) for m in protocol.matrices]))
    seen: dict[tuple, np.ndarray] = {}
    for xi, x in enumerate(xs):
        for tau in taus:
            p = prior[xi] * math.prod(protocol.matrices[j][x[j], tau[j]] for j in range(k))
            key = (tuple(x[j] for j in coalition), tau)
            seen.setdefault(key, np.zeros(2))[x[target]] += p
    acc = sum(v.max() for v in seen.values())
    post = sum((v**2).sum() / v.sum() for v in seen.values() if v.sum() > 0)
    return acc, post


@pytest.mark.parametrize("rho", [0.0, 0.4, 0.9])
@pytest.mark.parametrize("coalition", [[], [0], [0, 2]])
def test_inference_against_brute_force(rho, coalition):
    p = Protocol.universal([0.5, 1.0, 2.0, 1.5], [0.0, 0.1, 0.0, 0.2])
    prior = exchangeable_prior(4, rho)
    got = coalition_inference(p, coalition, 3, prior)
    acc, post = _brute(p, coalition, 3, prior)
    assert got.accuracy == pytest.approx(acc, rel=1e-12)
    assert got.expected_posterior == pytest.approx(post, rel=1e-12)
    assert got.baseline <= got.accuracy + 1e-12


def test_independent_inputs_give_the_coalition_one_message_worth():
    eps, delta = 1.2, 0.05
    p = Protocol.universal([eps] * 5, [delta] * 5)
    one = (1 + delta + (1 - delta) * math.tanh(eps / 2)) / 2  # (1 + TV) / 2 of the quaternary mechanism
    for c in range(4):
        assert coalition_inference(p, list(range(c)), 4).accuracy == pytest.approx(one, rel=1e-12)


def test_correlated_inputs_make_every_colluder_count():
    p = Protocol.universal([1.0] * 5, [0.0] * 5)
    acc = [coalition_inference(p, list(range(c)), 4, exchangeable_prior(5, 0.6)).accuracy for c in range(5)]
    assert all(b > a for a, b in zip(acc, acc[1:]))


@pytest.mark.parametrize("deviation", ["truthful", ("fixed", 1)])
def test_the_table_rows_are_the_promised_quantities(deviation):
    p = Protocol.universal([1.0, 0.8, 1.5, 1.0], [0.0, 0.0, 0.1, 0.0])
    task = Task.majority(4)
    table = coalition_table(p, task, deviation=deviation)
    assert list(table["colluders"]) == [0, 1, 2, 3]
    honest = exact_accuracy(p, task, 3)
    assert np.allclose(table["honest_accuracy"], honest)
    for c in range(1, 4):
        actual = deviate(p, {j: deviation for j in range(c)})
        row = table.iloc[c]
        assert row["naive_rule_accuracy"] == pytest.approx(rule_gain(p, actual, task, 3), rel=1e-12)
        assert row["reoptimised_accuracy"] == pytest.approx(exact_accuracy(actual, task, 3), rel=1e-12)
        assert row["reoptimised_accuracy"] >= row["naive_rule_accuracy"] - 1e-12


def test_errors_name_the_parameter():
    p = Protocol.universal([1.0] * 3, [0.0] * 3)
    with pytest.raises(LdpSimError, match="^target"):
        coalition_inference(p, [0, 2], 2)
    with pytest.raises(LdpSimError, match="^rho"):
        exchangeable_prior(3, 1.5)
    with pytest.raises(LdpSimError, match="^prior"):
        coalition_inference(p, [0], 2, np.ones(5))


@pytest.mark.parametrize("rho", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("coalition", [[], [1], [0, 1, 2]])
def test_exchangeable_counts_against_brute_force(rho, coalition):
    """The count path (``rho=``), parties in three classes, against every input vector and
    transcript enumerated here."""
    p = Protocol.universal([1.0, 1.0, 0.5, 0.5, 2.0], [0.1, 0.1, 0.0, 0.0, 0.05])
    got = coalition_inference(p, coalition, 4, rho=rho)
    acc, post = _brute(p, coalition, 4, exchangeable_prior(5, rho))
    assert got.accuracy == pytest.approx(acc, rel=1e-12)
    assert got.expected_posterior == pytest.approx(post, rel=1e-12)


def _common_bit_accuracy(k: int, eps: float) -> float:
    """All k bits equal (rho = 1), binary randomized response, all messages seen: the majority
    vote's accuracy, sum_j C(k, j) max(p^j q^(k-j), q^j p^(k-j)) / 2, in log space."""
    p = math.exp(eps) / (1 + math.exp(eps))
    total = 0.0
    for j in range(k + 1):
        lc = math.lgamma(k + 1) - math.lgamma(j + 1) - math.lgamma(k - j + 1)
        total += 0.5 * math.exp(
            lc + max(j * math.log(p) + (k - j) * math.log1p(-p), j * math.log1p(-p) + (k - j) * math.log(p))
        )
    return total


def test_many_parties_by_counts_against_closed_forms():
    k, eps = 301, 0.05
    p = Protocol.binary([eps] * k, [0.0] * k)
    assert coalition_inference(p, [], k - 1, rho=1.0).accuracy == pytest.approx(_common_bit_accuracy(k, eps), rel=1e-10)
    # independent bits: one message's worth, (1 + tanh(eps / 2)) / 2, whatever the coalition
    one = (1 + math.tanh(eps / 2)) / 2
    for c in (0, 10, 300):
        assert coalition_inference(p, list(range(c)), k - 1).accuracy == pytest.approx(one, rel=1e-10)


@pytest.mark.parametrize("deviation", ["truthful", ("fixed", 0), ("fixed", 1)])
def test_rule_gain_by_classes_matches_the_tensor(deviation):
    from ldpsim.protocols.decisions import OBSERVER, symmetric_rule_gain

    p = Protocol.universal([1.0, 1.0, 0.5, 2.0, 1.0, 1.0], [0.0, 0.0, 0.1, 0.0, 0.05, 0.0])
    actual = deviate(p, {0: deviation, 2: deviation})
    for task in (Task.majority(6), Task.sum(6), Task.threshold(6, 2)):
        for party in (5, OBSERVER):
            want = rule_gain(p, actual, task, party)
            assert symmetric_rule_gain(p, actual, task, party, 10**6) == pytest.approx(want, rel=1e-12)


def test_coalition_table_for_many_parties():
    k = 81
    p = Protocol.universal([1.0] * k, [0.0] * k)
    table = coalition_table(p, Task.majority(k), rho=0.5, deviation=("fixed", 1), colluders=[0, 10, 40, 80])
    assert list(table.colluders) == [0, 10, 40, 80]
    assert np.all(np.diff(table.learns_accuracy) >= -1e-12)
    assert np.all(np.diff(table.naive_rule_accuracy) < 0)
    assert np.all(table.reoptimised_accuracy >= table.naive_rule_accuracy - 1e-12)
    with pytest.raises(LdpSimError, match="colluders"):
        coalition_table(p, Task.majority(k), colluders=[k])
    with pytest.raises(LdpSimError, match="rho"):
        coalition_inference(p, [], k - 1, rho=1.5)
