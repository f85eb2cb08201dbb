"""Interactive protocols in the multi-party broadcast (:mod:`ldpsim.sim.multiparty_interactive`)
and in scenario files: measured against exact accuracy at the suite's false-failure probability,
completion delays against the sum of independent latencies (gamma law) and against the exact
recursion for a constant latency, determinism, one-line validation errors naming the key, and
each scenario-built protocol's privacy from an enumeration written here."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.protocols import OBSERVER, InteractiveProtocol, Protocol, Task
from ldpsim.protocols import interactive as inter
from ldpsim.sim import run_scenario
from ldpsim.sim.kinds import study_of
from ldpsim.sim.multiparty_interactive import InteractiveBroadcast, send_times, simulate_interactive
from ldpsim.sim.network import ConstantLatency, ExponentialLatency
from ldpsim.sim.scenario.multiparty import load_multiparty, parse_multiparty
from tests.stats_checks import FALSE_FAILURE

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "ldpsim" / "scenarios" / "multiparty_interactive.toml"
GATED_TASK = Task.from_table([0, 1, 2, 2], n_outputs=3)  # x_2 if x_1 = 0, else "void"
EPS = [math.log(2), math.log(3)]
DELTA = [0.0, 0.2]


def _chain(eps: float = 2.0) -> InteractiveProtocol:
    """k = 2, four binary slots (parties 0, 1, 0, 1), each one's bit a noisy copy of the
    speaker's input XOR the previous message (so every slot reads the one before)."""
    keep = 1 / (1 + math.exp(-eps / 2))  # each party speaks twice: eps/2 per message
    rules = [np.array([[[keep, 1 - keep]], [[1 - keep, keep]]])]
    for s in range(1, 4):
        h = np.arange(2**s)
        prev = h & 1
        one = np.where(prev[None, :] == 0, np.array([[1 - keep], [keep]]), np.array([[keep], [1 - keep]]))
        rules.append(np.stack([1 - one, one], axis=2))
    return InteractiveProtocol(rules, [0, 1, 0, 1], [eps, eps], name="chain")


# --------------------------------------------------------------------------- accuracy
def test_measured_accuracy_matches_the_exact_value_at_the_suites_false_failure():
    rr = InteractiveProtocol.from_protocol(Protocol.universal(EPS, DELTA))
    rr.name = "universal"
    protocols = [rr, inter.gated(EPS, DELTA)]
    rounds = 40_000
    res = simulate_interactive(
        protocols,
        GATED_TASK,
        rounds,
        batch=7_000,
        latency=ExponentialLatency(0.03),
        seed=3,
        keep_trace=True,
        alpha=FALSE_FAILURE / 2,
    )
    table = res.table
    acc = table[table["quantity"].isin(["accuracy", "accuracy_difference"])]
    assert len(acc) == 9 and acc["within_tolerance"].all()  # the table's own tolerances: alpha = 1e-6 / 2 over it
    # independently: each (protocol, receiver)'s correct rounds are Binomial(rounds, exact), exact from the law
    checks = 2 * len(protocols) * 3
    for q, p in enumerate(protocols):
        for i, who in enumerate((0, 1, OBSERVER)):
            exact = p.accuracy(GATED_TASK, who)
            correct = int(res.trace.gains[q, :, i].sum())
            lo = stats.binom.ppf(FALSE_FAILURE / 2 / checks, rounds, exact)
            hi = stats.binom.isf(FALSE_FAILURE / 2 / checks, rounds, exact)
            assert lo <= correct <= hi, (p.name, who, correct / rounds, exact)
    # the exact values are the counterexample's: the observer gains 1/120 with the gated protocol
    assert protocols[1].accuracy(GATED_TASK) - rr.accuracy(GATED_TASK) == pytest.approx(1 / 120, abs=1e-14)


def test_receivers_decide_with_the_optimal_rule_on_the_full_transcript():
    p = inter.gated(EPS, DELTA)
    res = simulate_interactive([p], GATED_TASK, 3_000, batch=1_000, seed=8, keep_trace=True)
    tr = res.trace
    x, tau = tr.inputs, tr.messages[0]
    f = GATED_TASK.value(x)
    law = p.law()
    idx = p.transcript_index(tau)
    for i, who in enumerate((0, 1, OBSERVER)):
        # the rule written here: argmax_y sum over inputs agreeing with the receiver's of P[x, tau] [f(x) = y]
        xs = np.array(list(itertools.product((0, 1), repeat=2)))
        fx = GATED_TASK.value(xs)
        clear = 0
        for r in range(len(x)):
            agree = np.ones(4, bool) if who == OBSERVER else xs[:, who] == x[r, who]
            score = np.array([law[agree & (fx == y), idx[r]].sum() for y in range(3)])
            best = int(np.argmax(score))
            if np.sort(score)[-2] < score[best] - 1e-12:  # a unique best guess: the simulation's must be it
                assert tr.gains[0, r, i] == float(best == f[r]), (who, r)
                clear += 1
        assert clear > len(x) // 2


# --------------------------------------------------------------------------- completion
def test_a_chain_completes_after_the_sum_of_its_slot_latencies():
    """Party 1 holds the transcript when it sends slot 3 (3 hops), party 0 one hop later (4):
    sums of i.i.d. exponential latencies, so the mean of n rounds is exactly Gamma(hops n, mean / n)."""
    mean, rounds = 0.03, 30_000
    res = simulate_interactive(
        [_chain()], Task.xor(2), rounds, batch=4_000, latency=ExponentialLatency(mean), seed=11, keep_trace=True
    )
    tr = res.trace
    delay = tr.completion[0] - tr.start[:, None]
    for receiver, hops in ((0, 4), (1, 3)):
        law = stats.gamma(hops * rounds, scale=mean / rounds)
        lo, hi = law.ppf(FALSE_FAILURE / 4), law.isf(FALSE_FAILURE / 4)
        assert lo <= delay[:, receiver].mean() <= hi, (receiver, delay[:, receiver].mean(), hops * mean)
    # the recursion written here: each slot is sent when the previous one reaches its speaker
    send, arrival = tr.send[0], tr.arrival[0]
    expect = np.zeros_like(send)
    expect[:, 0] = tr.start
    for s in range(1, 4):
        expect[:, s] = arrival[:, s - 1, (s % 2)]
    assert np.array_equal(send, expect)
    assert np.array_equal(tr.completion[0, :, 1], send[:, 3])  # the last speaker holds it when it sends


def test_constant_latency_gives_the_exact_recursion_in_the_table():
    latency = ConstantLatency(0.5)
    res = simulate_interactive([_chain(), inter.gated(EPS, DELTA)], Task.xor(2), 200, batch=64, latency=latency)
    rows = res.table[res.table["quantity"] == "completion_delay_mean"]
    got = {(r.protocol, r.party): (r.estimate, r.theory) for r in rows.itertuples()}
    # chain: 4 hops to party 0, 3 to party 1, the observer hears slot 3 one hop after it is sent
    assert got[("chain", 0)] == pytest.approx((2.0, 2.0)) and got[("chain", 1)] == pytest.approx((1.5, 1.5))
    assert got[("chain", OBSERVER)] == pytest.approx((2.0, 2.0))
    # gated: party 1's round-1 message waits for party 0's bit (one hop); party 0's round 2 reads nothing
    assert got[("gated", 0)] == pytest.approx((1.0, 1.0)) and got[("gated", 1)] == pytest.approx((0.5, 0.5))
    assert got[("gated", OBSERVER)] == pytest.approx((1.0, 1.0))


def test_send_times_of_a_protocol_that_reads_nothing_are_the_round_starts():
    rr = inter.rr_over_rounds([1.0, 2.0, 0.5], 0.1)
    assert all(rr.reads(s) == () for s in range(6))
    lat = np.random.default_rng(1).exponential(0.1, (5, 6, 4))
    send, arrival = send_times(rr, np.arange(5.0), lat)
    assert np.array_equal(send, np.repeat(np.arange(5.0)[:, None], 6, axis=1))


# --------------------------------------------------------------------------- determinism
def test_same_seed_same_table_bytes_other_seed_other_numbers():
    def table(seed: int) -> bytes:
        b = InteractiveBroadcast(
            [inter.gated(EPS, DELTA), _chain()],
            GATED_TASK,
            5_000,
            batch=900,
            latency=ExponentialLatency(0.1),
            seed=seed,
        )
        return b.run().table.to_csv(index=False).encode()

    assert table(4) == table(4)
    assert table(4) != table(5)


def test_bad_broadcast_arguments_are_refused_in_one_line():
    with pytest.raises(LdpSimError, match="^protocols: got .*distinct names"):
        InteractiveBroadcast([_chain(), _chain()], Task.xor(2), 10)
    with pytest.raises(LdpSimError, match="^protocols: got 'chain of 2 parties.*3 parties .*as the task"):
        InteractiveBroadcast([_chain()], Task.xor(3), 10)


# --------------------------------------------------------------------------- scenario files
GOOD = """
kind = "multiparty"
name = "inter"
protocols = [
    "universal",
    { name = "gated", family = "gated" },
    { name = "mine", speakers = [0, 1], rules = [
        [[[0.75, 0.25]], [[0.25, 0.75]]],
        [[[0.75, 0.25], [0.75, 0.25]], [[0.25, 0.75], [0.25, 0.75]]],
    ], eps = [1.1, 1.1], delta = 0 },
]
[parties]
k = 2
eps = [0.7, 1.2]
delta = [0, 0.2]
[task]
kind = "xor"
[rounds]
count = 1000
batch = 500
[network]
latency = { kind = "exponential", mean = 0.03 }
[simulation]
seed = 1
"""

BAD = {
    "unknown family": ('family = "gated"', 'family = "gate"', "protocols[1].family", "'gate'"),
    "family eps length": ('family = "gated" }', 'family = "gated", eps = [1, 2, 3] }', "protocols[1].eps", "length 3"),
    "speaker out of range": ("speakers = [0, 1]", "speakers = [0, 2]", "protocols[2].speakers[1]", "0..1"),
    "a silent party": ("speakers = [0, 1]", "speakers = [0, 0]", "protocols[2].speakers", "party 1 never"),
    "rules per slot": ("speakers = [0, 1]", "speakers = [0, 1, 1]", "protocols[2].rules", "one per slot"),
    "rule shape": (
        "[[[0.75, 0.25]], [[0.25, 0.75]]],",
        "[[[0.75, 0.25], [0.5, 0.5]], [[0.25, 0.75], [0.5, 0.5]]],",
        "protocols[2].rules[0]",
        "shape (2, 2, 2)",
    ),
    "not probabilities": (
        "[[[0.75, 0.25]], [[0.25, 0.75]]],",
        "[[[0.75, 0.35]], [[0.25, 0.75]]],",
        "protocols[2].rules[0]",
        "probabilities",
    ),
    "ragged rule": (
        "[[[0.75, 0.25]], [[0.25, 0.75]]],",
        "[[[0.75, 0.25]], [[0.25]]],",
        "protocols[2].rules[0]",
        "different lengths",
    ),
    "rule value as text": (
        "[[[0.75, 0.25]], [[0.25, 0.75]]],",
        '[[["a", 0.25]], [[0.25, 0.75]]],',
        "protocols[2].rules[0][0][0][0]",
        "number",
    ),
    "claim broken": ("eps = [1.1, 1.1], delta = 0", "eps = [1.0, 1.0], delta = 0", "protocols[2].rules", "exact delta"),
    "p_one": ("delta = [0, 0.2]", "delta = [0, 0.2]\np_one = 0.5", "parties.p_one", "uniform"),
    "loss": ("mean = 0.03 }", "mean = 0.03 }\nloss = 0.01", "network.loss", "interactive protocol (protocols[1])"),
    "deadline": ("mean = 0.03 }", "mean = 0.03 }\ndeadline = 0.5", "network.deadline", "no deadline"),
    "loss grid": ("mean = 0.03 }", "mean = 0.03 }\nloss_grid = [0, 0.1]", "network.loss_grid", "no loss grid"),
    "deviation": ("[simulation]", '[[deviations]]\nparty = 0\nkind = "truthful"\n[simulation]', "deviations", "none"),
    "gated with one party": (None, None, "protocols[0].family", "k >= 2"),
    "no eps anywhere": (None, None, "protocols[0].eps", "here or in parties.eps"),
    "private matrices": (
        "speakers = [0, 1],",
        "speakers = [0, 1], private = [[[1, 0], [0, 1]]],",
        "protocols[2].private",
        "one per party",
    ),
}

ONE_PARTY = """
kind = "multiparty"
name = "one"
protocols = [{ name = "g", family = "gated" }]
[parties]
k = 1
eps = 1
[task]
kind = "xor"
[rounds]
count = 100
"""


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_interactive_scenarios_are_one_line_naming_the_key(case):
    old, new, key, problem = BAD[case]
    if case == "gated with one party":
        text = ONE_PARTY
    elif case == "no eps anywhere":
        text = ONE_PARTY.replace("k = 1\neps = 1", "k = 2")
    else:
        assert old in GOOD, old
        text = GOOD.replace(old, new)
    with pytest.raises(LdpSimError) as info:
        parse_multiparty(text, "bad.toml")
    msg = str(info.value)
    assert msg.startswith(f"bad.toml: {key}"), msg
    assert problem in msg and "\n" not in msg, msg


def test_a_good_file_builds_interactive_protocols_and_runs_as_its_own_kind():
    sc = parse_multiparty(GOOD, "ok.toml")
    assert sc.kind == "multiparty_interactive" and study_of(sc).kind == "multiparty_interactive"
    assert [p.name for p in sc.protocols] == ["universal", "gated", "mine"]
    assert all(isinstance(p, InteractiveProtocol) for p in sc.protocols)
    assert list(sc.protocols[2].eps) == [1.1, 1.1] and list(sc.protocols[1].delta) == [0.0, 0.2]
    # without an interactive item the file is the one-round kind, as before
    plain = parse_multiparty(
        GOOD.replace(GOOD[GOOD.index("protocols = [") : GOOD.index("[parties]")], 'protocols = ["universal"]\n')
    )
    assert plain.kind == "multiparty" and isinstance(plain.protocols[0], Protocol)


def _law_by_hand(p: InteractiveProtocol) -> dict[tuple[tuple[int, ...], tuple[int, ...]], float]:
    """P(transcript | inputs) by enumerating inputs, private values and every message, one at a time."""
    law: dict = {}
    k, slots = p.parties, len(p.speakers)
    for x in itertools.product(*[range(a) for a in p.inputs]):
        for v in itertools.product(*[range(m.shape[1]) for m in p.private]):
            pv = math.prod(float(p.private[j][x[j], v[j]]) for j in range(k))
            if pv == 0:
                continue
            for tau in itertools.product(*[range(m) for m in p.messages]):
                prob, h = pv, 0
                for s in range(slots):
                    prob *= float(p.rules[s][v[p.speakers[s]], h, tau[s]])
                    h = h * p.messages[s] + tau[s]
                law[(x, tau)] = law.get((x, tau), 0.0) + prob
    return law


@pytest.mark.parametrize("name", ["gated", "rr_rounds", "gated_inline", "universal"])
def test_the_shipped_protocols_privacy_by_brute_force(name):
    sc = load_multiparty(SHIPPED)
    p = next(q for q in sc.protocols if q.name == name)
    law = _law_by_hand(p)
    taus = list(itertools.product(*[range(m) for m in p.messages]))
    for i in range(p.parties):
        worst = 0.0
        others = list(itertools.product(*[range(a) for j, a in enumerate(p.inputs) if j != i]))
        for rest in others:
            for a, b in itertools.permutations(range(p.inputs[i]), 2):
                xa, xb = (tuple([*rest[:i], a, *rest[i:]]), tuple([*rest[:i], b, *rest[i:]]))
                e = math.exp(float(p.eps[i]))
                worst = max(worst, sum(max(law.get((xa, t), 0.0) - e * law.get((xb, t), 0.0), 0.0) for t in taus))
        assert worst <= float(p.delta[i]) * (1 + 1e-9) + 1e-13, (name, i, worst)
        assert worst == pytest.approx(float(p.privacy_table().loc[i, "exact_delta_at_eps"]), abs=1e-12)
    if name != "universal":  # party 1's delta is spent exactly: 1/5
        assert worst == pytest.approx(0.2, abs=1e-12)


def test_the_shipped_scenario_runs_in_seconds_within_tolerance(tmp_path):
    sc = load_multiparty(SHIPPED)
    assert sc.kind == "multiparty_interactive" and sc.spec.parties.k == 2
    by_name = {p.name: p for p in sc.protocols}
    assert by_name["gated"].accuracy(sc.task) == pytest.approx(73 / 120, rel=1e-12)
    assert by_name["gated_inline"].accuracy(sc.task) == pytest.approx(73 / 120, rel=1e-12)
    assert by_name["universal"].accuracy(sc.task) == pytest.approx(3 / 5, rel=1e-12)
    assert by_name["rr_rounds"].accuracy(sc.task) == pytest.approx(3 / 5, rel=1e-12)
    run = run_scenario(SHIPPED, out=tmp_path / "run", progress=False)
    assert run.summary["within"].all()
    assert (tmp_path / "run" / "summary.md").read_text().count("## Transcript completion (per protocol)") == 1
    lat = run.latency.set_index(["protocol", "party"])
    # RR reads nothing: one hop; the gated protocols' party 0 waits for party 1, which waits for party 0
    assert lat.loc[("universal", "0"), "mean_measured"] < lat.loc[("gated_inline", "0"), "mean_measured"]
    run_scenario(SHIPPED, out=tmp_path / "again", progress=False)
    assert (tmp_path / "run" / "results.csv").read_bytes() == (tmp_path / "again" / "results.csv").read_bytes()
