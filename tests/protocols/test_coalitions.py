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
