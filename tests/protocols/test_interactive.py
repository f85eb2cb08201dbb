"""Interactive protocols users build (:class:`ldpsim.protocols.InteractiveProtocol`):
against the product protocols' independent exact paths, against the exact counterexample of
the interactive study written here from its definition (Kairouz, Oh and Viswanath 2015's
optimality fails for interactive protocols under approximate DP), and sampling against the
exact law."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.protocols import OBSERVER, InteractiveProtocol, Protocol, Task, exact_accuracy, interactive
from tests.stats_checks import FALSE_FAILURE


@pytest.mark.parametrize("task", [Task.xor(3), Task.majority(3), Task.sum(3)], ids=lambda t: t.name)
def test_a_product_protocol_as_one_round_has_the_same_accuracies_and_privacy(task):
    p = Protocol.universal([0.5, 1.0, 2.0], [0.0, 0.1, 0.05])
    ip = InteractiveProtocol.from_protocol(p)
    for party in (OBSERVER, 0, 1, 2):
        assert ip.accuracy(task, party) == pytest.approx(exact_accuracy(p, task, party), rel=1e-12)
    table, ref = ip.privacy_table(), p.privacy_table()
    assert np.allclose(table["exact_delta_at_eps"], ref["exact_delta_at_eps"], atol=1e-15)
    assert table["private"].all()


def _gated(delta_after_0: float, delta_after_1: float) -> InteractiveProtocol:
    """Party 0 sends Warner's bit m (P(m = x_0) = 2/3, e^eps_0 = 2); party 1 then sends its
    quaternary output at e^eps_1 = 3 with delta chosen by m."""
    e = 3.0

    def quaternary(d: float) -> np.ndarray:
        return np.array(
            [[d, (1 - d) * e / (1 + e), (1 - d) / (1 + e), 0.0], [0.0, (1 - d) / (1 + e), (1 - d) * e / (1 + e), d]]
        )

    warner = np.array([[[2 / 3, 1 / 3]], [[1 / 3, 2 / 3]]])  # (x_0, history 1, message)
    second = np.stack([quaternary(delta_after_0), quaternary(delta_after_1)], axis=1)  # (x_1, m, message)
    return InteractiveProtocol([warner, second], [0, 1], [math.log(2), math.log(3)], [0.0, 0.2], name="gated")


def test_the_gated_counterexample_beats_randomized_response_by_exactly_one_120th():
    ip = _gated(0.3, 0.0)
    table = ip.privacy_table()
    # party 1's delta: 3/10 given m = 0 (probability 2/3 when x_0 = 0), 0 given m = 1: 1/5 in all
    assert table.loc[1, "exact_delta_at_eps"] == pytest.approx(0.2, abs=1e-15)
    assert table.loc[0, "exact_delta_at_eps"] == pytest.approx(0.0, abs=1e-15)
    gated_task = Task.from_table([0, 1, 2, 2], n_outputs=3)  # x_1 if x_0 = 0, else "void"
    rr = Protocol.universal([math.log(2), math.log(3)], [0.0, 0.2])
    assert ip.accuracy(gated_task) == pytest.approx(73 / 120, rel=1e-12)
    assert exact_accuracy(rr, gated_task) == pytest.approx(3 / 5, rel=1e-12)


def test_a_claim_the_transcript_breaks_is_refused_in_one_line():
    with pytest.raises(LdpSimError) as err:
        _gated(0.4, 0.0)  # delta 4/15 > 1/5 for party 1
    assert "party 1" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(LdpSimError, match=r"^rules\[1\]"):
        InteractiveProtocol([np.full((2, 1, 2), 0.5), np.full((2, 1, 2), 0.5)], [0, 1], math.inf, 1.0)


def test_sampling_follows_the_exact_law():
    ip = _gated(0.3, 0.0)
    rng = np.random.default_rng(4)
    n = 200_000
    x = np.tile([[0, 0], [0, 1], [1, 0], [1, 1]], (n // 4, 1))
    tau = ip.transcript_index(ip.sample(x, rng))
    law = ip.law()
    for row in range(4):
        mine = tau[np.all(x == [[row >> 1, row & 1]], axis=1)]
        counts = np.bincount(mine, minlength=law.shape[1])
        expected = law[row] * mine.size
        seen = expected > 0
        assert counts[~seen].sum() == 0
        chi2 = float((((counts - expected) ** 2)[seen] / expected[seen]).sum())
        assert chi2 <= stats.chi2.isf(FALSE_FAILURE, seen.sum() - 1)


# --------------------------------------------------------------------------- families, rules, reads
@pytest.mark.parametrize("k", [2, 3])
def test_rr_over_rounds_has_randomized_responses_accuracies(k):
    eps, delta = [0.4, 1.3, 2.0][:k], [0.0, 0.15, 0.05][:k]
    ip = interactive.rr_over_rounds(eps, delta)
    rr = Protocol.universal(eps, delta)
    for task in (Task.xor(k), Task.sum(k), Task.majority(k)):
        for party in (OBSERVER, *range(k)):
            assert ip.accuracy(task, party) == pytest.approx(exact_accuracy(rr, task, party), rel=1e-12)
    assert ip.privacy_table()["private"].all()


def test_the_gated_family_is_the_counterexample_and_spends_exactly_its_delta():
    g = interactive.gated([math.log(2), math.log(3)], [0.0, 0.2])
    gated_task = Task.from_table([0, 1, 2, 2], n_outputs=3)
    assert g.accuracy(gated_task) == pytest.approx(73 / 120, rel=1e-12)
    assert g.privacy_table()["exact_delta_at_eps"].tolist() == pytest.approx([0.0, 0.2], abs=1e-15)
    three = interactive.gated([0.5, 1.0, 2.0], [0.0, 0.05, 0.1])
    assert three.privacy_table()["private"].all() and three.parties == 3
    with pytest.raises(LdpSimError, match="^eps: got .*k >= 2"):
        interactive.gated([1.0], [0.1])


def test_the_decision_table_attains_the_exact_accuracy():
    g = interactive.gated([0.7, 1.1], [0.0, 0.2])
    task = Task.from_table([0, 1, 2, 2], n_outputs=3)
    law = g.law()
    xs = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    f = task.value(xs)
    for party in (OBSERVER, 0, 1):
        rule = g.decisions(task, party)
        own = np.zeros(4, int) if party == OBSERVER else xs[:, party]
        gain = sum(law[x, t] * (rule[own[x], t] == f[x]) for x in range(4) for t in range(law.shape[1])) / 4
        assert gain == pytest.approx(g.accuracy(task, party), rel=1e-12)


def test_reads_names_the_earlier_messages_a_rule_depends_on():
    g = interactive.gated([0.7, 1.1], [0.0, 0.2])
    # party 1's round-1 bit depends on party 0's bit; party 0's round-2 message is a constant; party 1's
    # round-2 bit on party 0's bit and its own round-1 bit
    assert [g.reads(s) for s in range(4)] == [(), (0,), (), (0, 1)]
    ip = InteractiveProtocol.from_protocol(Protocol.binary([1.0, 2.0, 0.5]))
    assert [ip.reads(s) for s in range(3)] == [(), (), ()]
