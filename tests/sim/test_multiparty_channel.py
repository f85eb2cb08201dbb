"""Multi-party scenarios with per-party catalog mechanisms, per-receiver tasks and gains,
worst-case accuracies, a lossy channel with a deadline, and deviating parties.

Every Monte Carlo assertion has a stated false-failure probability of at most ``FALSE_FAILURE =
1e-6`` (the model's own tolerance column, Bonferroni-corrected over its table, or a bound
computed here), and the seeds are fixed. Brute-force checks of the exact values themselves
(erasure protocols, deviations, rule_gain) are in tests/protocols/test_channel.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.protocols import (
    OBSERVER,
    Protocol,
    Task,
    erasure_protocol,
    exact_accuracy,
    missing_probability,
    rule_gain,
    worst_case,
)
from ldpsim.sim import run_scenario
from ldpsim.sim.multiparty import (
    channel_missing,
    completion_cdf,
    completion_mean,
    completion_quantile,
    simulate_broadcast,
)
from ldpsim.sim.network import ExponentialLatency, LognormalLatency
from ldpsim.sim.scenario.multiparty import load_multiparty, parse_multiparty
from ldpsim.stats import binomial_acceptance, hoeffding
from tests.stats_checks import FALSE_FAILURE

ROOT = Path(__file__).resolve().parents[2]
LOSSY = ROOT / "scenarios" / "multiparty_lossy.toml"
EPS = [0.5, 1.0, 2.0, 1.5, 3.0]
DELTA = [0.0, 0.05, 0.1, 0.02, 0.0]


def accuracy_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["quantity"] == "accuracy"]


def assert_covered(table: pd.DataFrame) -> None:
    """Accuracy rows and paired differences within the model's tolerances, whose alphas
    add up to at most FALSE_FAILURE over the table."""
    rows = table[table["quantity"].isin(("accuracy", "accuracy_difference"))]
    bad = rows[(rows["estimate"] - rows["theory"]).abs() > rows["tolerance"]]
    assert bad.empty, bad[["protocol", "party", "estimate", "theory", "tolerance"]].to_string()
    assert float(rows["alpha"].sum()) <= FALSE_FAILURE * (1 + 1e-12)


# --------------------------------------------------------------------- the lossy channel
def test_loss_and_deadline_accuracy_covers_the_erasure_protocol():
    """5 parties, 10% loss and a deadline: every receiver decides with the rule of the
    erasure protocol; measured within tolerance of its exact accuracy."""
    latency, loss, deadline = LognormalLatency(0.05, 0.8), 0.1, 0.12
    protocols = [Protocol.universal(EPS, DELTA), Protocol.binary(EPS, DELTA)]
    tasks = [Task.majority(5)] * 3 + [Task.xor(5), Task.threshold(5, 2), Task.sum(5)]
    result = simulate_broadcast(
        protocols,
        tasks,
        60_000,
        batch=10_000,
        latency=latency,
        interval=0.01,
        seed=31,
        alpha=FALSE_FAILURE,
        loss=loss,
        deadline=deadline,
    )
    assert_covered(result.table)
    late, m = channel_missing(loss, deadline, latency)
    assert late == pytest.approx(1 - float(latency.cdf(deadline)), abs=1e-15) and late > 0.01
    assert m == pytest.approx(missing_probability(loss, late), abs=1e-15)
    rows = accuracy_rows(result.table)
    for p in protocols:
        seen = erasure_protocol(p, m)
        for i, who in enumerate([*range(5), OBSERVER]):
            row = rows[(rows["protocol"] == p.name) & (rows["party"] == who)].iloc[0]
            assert row["theory"] == pytest.approx(exact_accuracy(seen, tasks[i], who), abs=1e-12)
            assert row["loss"] == loss
    # the channel costs accuracy: every exact value is below the perfect channel's
    for p in protocols:
        for i, who in enumerate([*range(5), OBSERVER]):
            assert exact_accuracy(erasure_protocol(p, m), tasks[i], who) <= exact_accuracy(p, tasks[i], who) + 1e-12


def test_messages_heard_and_decision_times_follow_the_rule():
    """Losses per (message, receiver), the own message always held, late messages not
    heard, and the decision at the deadline exactly when one message is missing."""
    k, loss, deadline = 4, 0.2, 0.1
    latency = ExponentialLatency(0.05)
    result = simulate_broadcast(
        [Protocol.binary([1.0] * k)],
        Task.sum(k),
        20_000,
        batch=2_500,
        latency=latency,
        interval=0.01,
        seed=7,
        keep_trace=True,
        loss=loss,
        deadline=deadline,
    )
    tr = result.trace
    start = tr.start[:, None, None]
    for j in range(k):
        assert tr.heard[:, j, j].all()
    late = (tr.arrival - start) > deadline
    assert not (tr.heard & late).any()  # a late message is never heard
    # not heard and not late: lost; the loss rate over the other receivers' copies
    others = ~np.eye(k, k + 1, dtype=bool)[None, :, :].repeat(len(tr.start), axis=0)
    lost = others & ~late & ~tr.heard
    n_on_time = int((others & ~late).sum())
    tol = binomial_acceptance(n_on_time, loss, FALSE_FAILURE / 3)
    assert abs(lost.sum() / n_on_time - loss) <= tol
    # decision time: the deadline if anything is missing, else the last arrival
    missing_any = (~tr.heard).any(axis=1)  # (R, k + 1)
    expect = np.where(missing_any, tr.start[:, None] + deadline, tr.arrival.max(axis=1))
    np.testing.assert_allclose(tr.completion, expect, rtol=0, atol=1e-12)
    assert (tr.decided_at >= tr.completion).all()
    # messages heard: the table's count against its expectation (binomial, FALSE_FAILURE / 3)
    m = missing_probability(loss, float(1 - latency.cdf(deadline)))
    heard = result.table[result.table["quantity"] == "messages_heard"].set_index("party")
    n_obs = len(tr.start) * k
    assert heard.loc[OBSERVER, "theory"] == pytest.approx(n_obs * (1 - m))
    tol = binomial_acceptance(n_obs, 1 - m, FALSE_FAILURE / 3) * n_obs
    assert abs(heard.loc[OBSERVER, "estimate"] - heard.loc[OBSERVER, "theory"]) <= tol
    assert heard.loc[OBSERVER, "estimate"] == tr.heard[:, :, k].sum()


def test_completion_delay_law_with_a_deadline():
    """The observer's decision time: T = D when a message is missing, else the largest
    latency; P(T <= t) = ((1 - loss) F(t))^n below D. The atom at D against its exact mass
    (binomial), the continuous part against its exact conditional law (Kolmogorov-Smirnov),
    the mean against the exact integral (Hoeffding on [0, D]); each at FALSE_FAILURE / 3."""
    k, loss, deadline = 5, 0.05, 0.2
    latency = LognormalLatency(0.06, 0.7)
    rounds = 20_000
    tr = simulate_broadcast(
        [Protocol.binary([1.0] * k)],
        Task.xor(k),
        rounds,
        batch=5_000,
        latency=latency,
        seed=4,
        keep_trace=True,
        loss=loss,
        deadline=deadline,
    ).trace
    delay = tr.completion[:, k] - tr.start
    atom = float(1.0 - completion_cdf(latency, k, deadline - 1e-12, loss, deadline))
    assert atom == pytest.approx(1 - ((1 - loss) * float(latency.cdf(deadline))) ** k, rel=1e-9)
    at_d = np.isclose(delay, deadline, rtol=0, atol=1e-9)
    assert abs(at_d.mean() - atom) <= binomial_acceptance(rounds, atom, FALSE_FAILURE / 3)
    below = delay[~at_d]
    mass_below = 1.0 - atom
    res = stats.kstest(below, lambda t: completion_cdf(latency, k, t, loss, deadline) / mass_below)
    assert res.pvalue > FALSE_FAILURE / 3, res
    mean = completion_mean(latency, k, loss, deadline)
    grid = np.linspace(0, deadline, 200_001)
    mid = (grid[1:] + grid[:-1]) / 2  # E[T] = int_0^D P(T > t) dt, by the midpoint rule
    direct = float(np.sum(1 - completion_cdf(latency, k, mid, loss, deadline)) * (grid[1] - grid[0]))
    assert mean == pytest.approx(direct, abs=1e-7)
    assert abs(delay.mean() - mean) <= hoeffding(deadline, rounds, FALSE_FAILURE / 3)
    # quantiles: below the atom, F^-1(p^(1/n) / (1 - loss)); in the atom, D
    q50 = completion_quantile(latency, k, 0.5, loss, deadline)
    assert float(completion_cdf(latency, k, q50, loss, deadline)) == pytest.approx(0.5, abs=1e-9)
    assert completion_quantile(latency, k, 0.99, loss, deadline) == deadline
    # the table's theory columns are these functions
    table = simulate_broadcast(
        [Protocol.binary([1.0] * k)],
        Task.xor(k),
        2_000,
        batch=1_000,
        latency=latency,
        seed=4,
        loss=loss,
        deadline=deadline,
    ).table
    obs = table[(table["party"] == OBSERVER)].set_index("quantity")["theory"]
    assert obs["completion_delay_mean"] == pytest.approx(mean, rel=1e-12)
    assert obs["completion_delay_p50"] == pytest.approx(q50, rel=1e-12)


def test_without_deadline_a_loss_leaves_the_completion_law_alone():
    lat = ExponentialLatency(0.3)
    assert completion_mean(lat, 4, 0.2, None) == pytest.approx(lat.expected_max(4))
    assert completion_quantile(lat, 4, 0.9, 0.2, None) == pytest.approx(float(lat.quantile(0.9**0.25)))


def test_losses_are_common_random_numbers_and_seeded():
    """The same losses for every protocol compared, and the same numbers for the same seed."""
    kw = {
        "batch": 1_000,
        "latency": ExponentialLatency(0.05),
        "interval": 0.01,
        "seed": 3,
        "keep_trace": True,
        "loss": 0.3,
        "deadline": 0.1,
    }
    one = simulate_broadcast([Protocol.universal(EPS, DELTA)], Task.xor(5), 3_000, **kw)
    two = simulate_broadcast([Protocol.universal(EPS, DELTA), Protocol.binary(EPS)], Task.xor(5), 3_000, **kw)
    np.testing.assert_array_equal(one.trace.heard, two.trace.heard)
    np.testing.assert_array_equal(one.trace.gains[0], two.trace.gains[0])
    again = simulate_broadcast([Protocol.universal(EPS, DELTA)], Task.xor(5), 3_000, **kw)
    assert one.table.equals(again.table)


# --------------------------------------------------------------------- per-receiver gains
def test_custom_gains_per_receiver_cover_exact():
    """A weighted gain for the observer's sum and a truth-table function with its own gain
    for party 1, through a lossy channel: measured against exact (Hoeffding where the gain
    is not 0/1)."""
    k = 4
    w_sum = np.eye(k + 1) * np.array([3.0, 1.0, 1.0, 1.0, 3.0])[:, None]  # the extremes are worth more
    w_sum[2, 1] = w_sum[2, 3] = 0.5  # a near miss on 2 is worth half
    table = Task.from_table(
        np.array([0, 0, 1, 2, 0, 1, 2, 2, 1, 1, 2, 2, 0, 2, 1, 0]),
        3,
        gain=[[2.0, -1.0, 0.0], [0.0, 1.0, 0.5], [-1.0, 0.0, 3.0]],
        name="table",
    )
    tasks = [Task.majority(k), table, Task.majority(k), Task.xor(k), Task.sum(k, gain=w_sum)]
    protocols = [Protocol.universal(EPS[:k], DELTA[:k])]
    result = simulate_broadcast(
        protocols,
        tasks,
        50_000,
        batch=10_000,
        latency=ExponentialLatency(0.02),
        seed=12,
        alpha=FALSE_FAILURE,
        loss=0.15,
    )
    assert_covered(result.table)
    rows = accuracy_rows(result.table).set_index("party")
    m = missing_probability(0.15)
    seen = erasure_protocol(protocols[0], m)
    assert rows.loc[1, "theory"] == pytest.approx(exact_accuracy(seen, table, 1), abs=1e-12)
    assert rows.loc[OBSERVER, "theory"] == pytest.approx(exact_accuracy(seen, tasks[-1], OBSERVER), abs=1e-12)
    # Hoeffding over the gain's range, at the row's alpha
    assert rows.loc[1, "tolerance"] == pytest.approx(hoeffding(4.0, 50_000, rows.loc[1, "alpha"]))  # range 3 - (-1)


# --------------------------------------------------------------------- deviating parties
DEVIATING = """\
kind = "multiparty"
name = "deviating"
protocols = ["universal", { name = "rr", mechanisms = [{ kind = "randomized_response", eps = 1 }] }]

[parties]
k = 5
eps = 1
delta = [0, 0.05, 0.1, 0, 0.02]

[task]
kind = "majority"

[receivers.observer]
kind = "sum"

[[deviations]]
party = 1
kind = "truthful"

[[deviations]]
party = 3
kind = "fixed"
bit = 1

[rounds]
count = 30000
batch = 5000
interval = 0.01

[network]
latency = { kind = "exponential", mean = 0.05 }
loss = 0.1
deadline = 0.15
loss_grid = [0, 0.1, 0.3]

[simulation]
seed = 5
"""


def test_deviating_parties_measured_against_rule_gain_and_privacy(tmp_path):
    sc = parse_multiparty(DEVIATING)
    assert dict(sc.deviations) == {1: "truthful", 3: ("fixed", 1)}
    run = run_scenario(sc, out=tmp_path / "run", progress=False)
    acc = run.summary[run.summary["quantity"] == "accuracy"]
    assert acc["within"].all(), acc.to_string()
    m = sc.missing
    for p, a in zip(sc.protocols, sc.actual):
        assert a is not p and a.sizes == p.sizes
        for who in [*range(5), OBSERVER]:
            task = sc.tasks[-1] if who == OBSERVER else sc.tasks[who]
            row = acc[
                (acc["protocol"] == p.name) & (acc["party"] == ("observer" if who == OBSERVER else str(who)))
            ].iloc[0]
            want = rule_gain(erasure_protocol(p, m), erasure_protocol(a, m), task, who)
            assert row["exact"] == pytest.approx(want, abs=1e-12)
    # privacy: honest parties unchanged, deviating parties their own exact privacy
    from ldpsim.report.multiparty_tables import privacy_tables

    priv = privacy_tables(sc)
    for p in sc.protocols:
        rows = priv[priv["protocol"] == p.name].set_index("party")
        announced = p.privacy_table().set_index("party")
        for j in (0, 2, 4):
            assert rows.loc[j, "run_as"] == "honest"
            assert (
                rows.loc[j, "eps_run"] == announced.loc[j, "eps"]
                and rows.loc[j, "delta_run"] == announced.loc[j, "delta"]
            )
        assert math.isinf(rows.loc[1, "eps_run"]) and rows.loc[1, "run_as"] == "truthful"
        assert rows.loc[3, "eps_run"] == 0.0 and rows.loc[3, "run_as"] == "fixed bit 1"
        # honest parties' mechanisms are untouched: the same matrices and exact privacy
        a = sc.actual[list(sc.protocols).index(p)]
        for j in (0, 2, 4):
            np.testing.assert_array_equal(a.matrices[j], p.matrices[j])
            assert a.mechanisms[j].delta(float(p.eps[j])) == p.mechanisms[j].delta(float(p.eps[j]))
    text = (tmp_path / "run" / "summary.md").read_text()
    assert "## Deviating parties" in text and "exact_honest" in text and "unchanged" in text


def test_worst_case_rows_are_the_linear_program(tmp_path):
    """Small enough for the worst-case LP through the channel: the table's values are
    worst_case() of the erasure protocol, and below the average accuracy."""
    sc = parse_multiparty(DEVIATING.replace("count = 30000", "count = 2000").replace("batch = 5000", "batch = 1000"))
    run = run_scenario(sc, out=tmp_path / "run", progress=False)
    worst = run.results[(run.results["quantity"] == "worst_case_accuracy") & (run.results["replication"] == 0)]
    assert len(worst) == 2 * 6 and worst["theory"].notna().all()
    p = sc.protocols[0]
    row = worst[(worst["protocol"] == p.name) & (worst["party"] == OBSERVER)].iloc[0]
    assert row["theory"] == pytest.approx(
        worst_case(erasure_protocol(p, sc.missing), sc.tasks[-1], OBSERVER)[0], abs=1e-9
    )
    honest = run.results[(run.results["quantity"] == "honest_accuracy") & (run.results["replication"] == 0)]
    merged = worst.merge(honest, on=["protocol", "party"], suffixes=("_w", "_a"))
    assert (merged["theory_w"] <= merged["theory_a"] + 1e-9).all()


# --------------------------------------------------------------------- scenario files
def test_lossy_scenario_loads():
    sc = load_multiparty(LOSSY)
    assert sc.spec.parties.k == 8 and [p.name for p in sc.protocols] == ["mixed", "universal"]
    assert sc.loss == 0.05 and sc.deadline == 0.3 and 0.05 < sc.missing < 0.07
    assert {t.name for t in sc.tasks} == {"majority", "xor", "table", "sum"} and sc.tasks[-1].name == "sum"
    assert not np.array_equal(sc.tasks[5].gain, np.eye(2))
    mixed = sc.protocols[0]
    assert len(set(mixed.sizes)) == 3  # quaternary, randomized response, a 3-message matrix
    # "universal" is at the mixed parties' exact levels (eps from the mechanisms: epsilon(delta)
    # with the contract's rounding slack on delta)
    np.testing.assert_allclose(sc.protocols[1].eps, mixed.eps, rtol=1e-9)
    np.testing.assert_allclose(sc.protocols[1].delta, mixed.delta, rtol=0, atol=1e-15)
    assert 0.05 in sc.loss_grid and sc.loss_grid[0] == 0


def test_lossy_scenario_runs_end_to_end_shortened(tmp_path):
    text = LOSSY.read_text().replace("count = 100_000", "count = 6_000").replace("batch = 10_000", "batch = 2_000")
    path = tmp_path / "lossy.toml"
    path.write_text(text)
    run = run_scenario(path, out=tmp_path / "run", progress=False)
    for name in ("results.csv", "summary.md", "report.html", "accuracy.png", "channel.png", "metadata.json"):
        assert (tmp_path / "run" / name).stat().st_size > 0, name
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "loss table" in summary and "lost_exact" in summary and "worst_case_exact" in summary
    assert "## Receivers" in summary and "custom [1 0; 0 2]" in summary
    assert run.summary[run.summary["quantity"] == "accuracy"]["within"].all()
    channel = run.results[run.results["quantity"] == "channel_accuracy"]
    assert sorted(channel["loss"].unique()) == [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3]


def test_catalog_protocol_needs_no_levels_and_one_table_serves_every_party():
    text = """\
kind = "multiparty"
name = "catalog"
protocols = [{ name = "rr", mechanisms = [{ kind = "randomized_response", eps = 2 }] },
             { name = "q", mechanisms = [{ kind = "quaternary", eps = 1, delta = 0.1 },
                                         { kind = "quaternary", eps = 1, delta = 0 },
                                         { kind = "matrix", matrix = [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]] }] }]
[parties]
k = 3
[task]
kind = "and"
[rounds]
count = 100
"""
    sc = parse_multiparty(text)
    rr, q = sc.protocols
    assert list(rr.eps) == pytest.approx([2.0] * 3) and rr.sizes == (2, 2, 2)
    assert list(q.delta) == [0.1, 0.0, 0.0] and q.sizes == (4, 4, 3)
    assert q.eps[2] == pytest.approx(math.log(2.5), rel=1e-12)  # the matrix's exact eps
    priv = q.privacy_table()
    assert priv["private"].all()


# --------------------------------------------------------------------- bad values
BASE = DEVIATING.replace(
    '[[deviations]]\nparty = 1\nkind = "truthful"\n\n[[deviations]]\nparty = 3\nkind = "fixed"\nbit = 1\n\n', ""
)

BAD = {
    "unknown function": ('kind = "majority"', 'kind = "median"', "task.kind", "'median'"),
    "receiver unknown function": ('kind = "sum"', 'kind = "mode"', "receivers.observer.kind", "'mode'"),
    "gain of the wrong shape": (
        'kind = "sum"',
        'kind = "sum"\ngain = [[1, 0], [0, 1]]',
        "receivers.observer.gain",
        "6 x 6",
    ),
    "default gain wrong shape": (
        'kind = "majority"',
        'kind = "majority"\ngain = [[1, 0, 0], [0, 1, 0]]',
        "task.gain",
        "2 x 2",
    ),
    "loss above one": ("loss = 0.1", "loss = 1.5", "network.loss", "less than or equal to 1"),
    "loss below zero": ("loss = 0.1", "loss = -0.1", "network.loss", "greater than or equal to 0"),
    "table of the wrong length": (
        'kind = "majority"',
        'kind = "table"\nvalues = [0, 1, 1, 0]',
        "task.values",
        "2^k = 32",
    ),
    "receiver out of range": ("[receivers.observer]", "[receivers.7]", "receivers", "party index 0..4"),
    "receiver not a name": ("[receivers.observer]", "[receivers.king]", "receivers", "'observer'"),
    "deviation of an unknown party": (
        "[rounds]",
        '[[deviations]]\nparty = 9\nkind = "truthful"\n\n[rounds]',
        "deviations[0].party",
        "0..4",
    ),
    "deviation kind": (
        "[rounds]",
        '[[deviations]]\nparty = 1\nkind = "lying"\n\n[rounds]',
        "deviations[0].kind",
        "'lying'",
    ),
    "fixed without bit": (
        "[rounds]",
        '[[deviations]]\nparty = 1\nkind = "fixed"\n\n[rounds]',
        "deviations[0].bit",
        "the bit",
    ),
    "unknown catalog mechanism": (
        'kind = "randomized_response", eps = 1',
        'kind = "gamma", eps = 1',
        "protocols[1].mechanisms[0].kind",
        "'gamma'",
    ),
    "noise mechanism": (
        'kind = "randomized_response", eps = 1',
        'kind = "laplace", eps = 1',
        "protocols[1].mechanisms[0].kind",
        "finitely many",
    ),
    "mechanism bad eps": (
        'kind = "randomized_response", eps = 1',
        'kind = "randomized_response", eps = -1',
        "protocols[1].mechanisms[0].eps",
        "-1",
    ),
    "mechanism eps missing": (
        'kind = "randomized_response", eps = 1',
        'kind = "randomized_response"',
        "protocols[1].mechanisms[0].eps",
        "privacy parameter",
    ),
    "mechanism alphabet": (
        'kind = "randomized_response", eps = 1',
        'kind = "randomized_response", eps = 1, k = 3',
        "protocols[1].mechanisms[0].k",
        "bit",
    ),
    "mechanism unknown key": (
        'kind = "randomized_response", eps = 1',
        'kind = "randomized_response", eps = 1, colour = 2',
        "protocols[1].mechanisms[0].colour",
        "no such key",
    ),
    "mechanisms count": (
        '[{ kind = "randomized_response", eps = 1 }]',
        '[{ kind = "randomized_response", eps = 1 }, { kind = "randomized_response", eps = 2 }]',
        "protocols[1].mechanisms",
        "one per party",
    ),
    "matrix on three inputs": (
        'kind = "randomized_response", eps = 1',
        'kind = "matrix", matrix = [[1, 0], [0, 1], [0.5, 0.5]]',
        "protocols[1].mechanisms[0].matrix",
        "one per input symbol (2)",
    ),
    "eps missing for universal": ("eps = 1\n", "", "parties.eps", "'universal' needs them"),
    "duplicate protocol names": ('name = "rr"', 'name = "universal"', "protocols", "at most once"),
    "deadline zero": ("deadline = 0.15", "deadline = 0", "network.deadline", "greater than 0"),
    "loss grid value": (
        "loss_grid = [0, 0.1, 0.3]",
        "loss_grid = [0, 2]",
        "network.loss_grid[1]",
        "less than or equal to 1",
    ),
    "t for sum": ('kind = "sum"', 'kind = "sum"\nt = 2', "receivers.observer.t", "only for 'threshold'"),
    "outputs too few": (
        'kind = "majority"',
        'kind = "table"\nvalues = ' + str([0, 1, 2, 1] * 8) + '\noutputs = ["a", "b"]',
        "task.outputs",
        "3 or more",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_are_one_line_naming_the_key(case):
    old, new, key, problem = BAD[case]
    assert old in BASE, case
    with pytest.raises(LdpSimError) as info:
        parse_multiparty(BASE.replace(old, new, 1), "bad.toml")
    msg = str(info.value)
    assert msg.startswith(f"bad.toml: {key}"), msg
    assert problem in msg, msg
    assert "\n" not in msg


def test_deviations_out_of_reach_of_rule_gain_are_refused_at_load():
    """rule_gain contracts a tensor over every transcript: a large protocol is refused in
    one line naming the deviations."""
    text = (
        BASE.replace("k = 5", "k = 12")
        .replace("delta = [0, 0.05, 0.1, 0, 0.02]", "delta = 0.05")
        .replace("[rounds]", '[[deviations]]\nparty = 1\nkind = "truthful"\n\n[rounds]')
        .replace('kind = "sum"', 'kind = "majority"')
    )
    text = text.replace(', { name = "rr", mechanisms = [{ kind = "randomized_response", eps = 1 }] }', "")
    with pytest.raises(LdpSimError) as info:
        parse_multiparty(text, "big.toml")
    msg = str(info.value)
    assert msg.startswith("big.toml: deviations:") and "rule_gain" in msg and "\n" not in msg


@pytest.mark.parametrize("task", [Task.majority(7), Task.sum(7), Task.threshold(7, 3)], ids=lambda t: t.name)
def test_decisions_by_symbol_counts_agree_with_decide(task):
    """Large k decides by per-class symbol counts (one ``decide`` per distinct count vector,
    cached across batches and receivers of a class); on transcripts with "not heard"
    symbols the guesses are decide's, except where two answers have exactly the same
    posterior expected gain (a tie, e.g. nothing heard from the others), where the lookup's
    answer is optimal too."""
    from ldpsim.protocols import count_posterior, decide
    from ldpsim.sim.multiparty import _CountRule

    def posterior_gains(p, who, tau, own):
        post = count_posterior(p, tau, who)
        shift = np.zeros(len(tau), dtype=np.int64) if own is None else own
        labels = task.counts[shift[:, None] + np.arange(post.shape[1])[None, :]]  # (n, s)
        return np.einsum("ns,nsy->ny", post, task.gain[labels])

    eps, delta = [0.5, 1.0, 1.0, 2.0, 1.0, 0.5, 1.0], [0.0, 0.05, 0.05, 0.1, 0.05, 0.0, 0.05]
    rng = np.random.default_rng(8)
    for p in (Protocol.universal(eps, delta), Protocol.binary(eps)):
        seen = erasure_protocol(p, 0.2)
        rule = _CountRule.build(seen, [task] * 8)
        for _ in range(2):  # the second batch uses the cache
            x = rng.integers(0, 2, (4_000, 7))
            tau = seen.sample(x, rng)
            for i, who in enumerate([*range(7), OBSERVER]):
                own = None if who == OBSERVER else x[:, who]
                got, want = rule.lookup(i, tau, own), np.asarray(decide(seen, task, who, tau, own))
                differ = np.flatnonzero(got != want)
                assert differ.size <= 0.01 * len(tau)
                if differ.size:
                    g = posterior_gains(seen, who, tau[differ], None if own is None else own[differ])
                    rows = np.arange(differ.size)
                    np.testing.assert_allclose(g[rows, got[differ]], g[rows, want[differ]], rtol=0, atol=1e-12)
        assert len(rule.cache) == len(set(map(bytes, (q.tobytes() for q in seen.matrices)))) + 1


def test_non_uniform_bits_through_the_channel():
    """P(bit = 1) != 1/2 with loss: the exact gain of the same rule (by contraction, checked
    here against brute-force enumeration), and measured within tolerance."""
    from ldpsim.protocols import enumerated_gain

    eps, delta, p_one = [0.5, 1.5, 2.0, 3.0], [0.05, 0.0, 0.1, 0.02], [0.2, 0.5, 0.7, 0.9]
    protocols = [Protocol.universal(eps, delta), Protocol.binary(eps)]
    tasks = [Task.majority(4)] * 4 + [Task.sum(4)]
    result = simulate_broadcast(
        protocols, tasks, 40_000, batch=8_000, p_one=p_one, seed=15, alpha=FALSE_FAILURE, loss=0.2
    )
    assert_covered(result.table)
    rows = accuracy_rows(result.table)
    for p in protocols:
        seen = erasure_protocol(p, 0.2)
        for i, who in enumerate([*range(4), OBSERVER]):
            row = rows[(rows["protocol"] == p.name) & (rows["party"] == who)].iloc[0]
            assert row["theory"] == pytest.approx(enumerated_gain(seen, tasks[i], who, p_one), abs=1e-12)


@pytest.mark.slow
def test_two_hundred_parties_run(tmp_path):
    """k = 200 (the model's cost grows as k^2 per round: about 5 minutes per 10^5 rounds):
    a short run through a lossy channel, decisions by symbol counts, within tolerance."""
    text = """\
kind = "multiparty"
name = "k200"
protocols = ["universal", "binary"]
[parties]
k = 200
eps = 1
[task]
kind = "majority"
[receivers.observer]
kind = "xor"
[rounds]
count = 1000
batch = 500
interval = 0.05
[network]
latency = { kind = "lognormal", median = 0.05, sigma = 0.8 }
loss = 0.05
deadline = 0.3
loss_grid = [0, 0.05]
[simulation]
seed = 1
"""
    path = tmp_path / "k200.toml"
    path.write_text(text)
    run = run_scenario(path, out=tmp_path / "run", progress=False)
    acc = run.summary[run.summary["quantity"] == "accuracy"]
    assert len(acc) == 2 * 201 and acc["within"].all()
