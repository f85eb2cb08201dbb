"""The SimPy broadcast model: measured accuracies against exact ones (and the XOR closed
form), common random numbers, determinism, and the channel really delivering every message
before anyone decides.

Every Monte Carlo assertion uses the model's own tolerance column, which is an exact
binomial acceptance interval (0/1 gains) Bonferroni-corrected so that the whole table fails
with probability at most ``alpha = 1e-6`` when the model is right; seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.protocols import OBSERVER, Protocol, Task, enumerated_gain, exact_accuracy
from ldpsim.sim.multiparty import expected_max_latency, max_latency_quantile, simulate_broadcast
from ldpsim.sim.network import ConstantLatency, ExponentialLatency, LognormalLatency
from ldpsim.stats import mean_tolerance as tolerance
from tests.stats_checks import FALSE_FAILURE

EPS = [0.5, 1, 1, 2, 3, 5]
DELTA = [0, 0.01, 0.05, 0, 0.1, 0.02]


def both(eps, delta):
    return [Protocol.universal(eps, delta), Protocol.binary(eps, delta)]


def accuracy_rows(table):
    return table[table["quantity"] == "accuracy"]


def difference_rows(table):
    return table[table["quantity"] == "accuracy_difference"]


def xor_closed_form(eps, delta, party):
    """P(correct) = (1 + prod_{j != party} (delta_j + (1 - delta_j) tanh(eps_j / 2))) / 2
    (docs/theory.md sec. 7); the observer multiplies over every party."""
    terms = [d + (1 - d) * math.tanh(e / 2) for j, (e, d) in enumerate(zip(eps, delta)) if j != party]
    return (1 + math.prod(terms)) / 2


def assert_covered(rows, table_rows=None):
    """Every row within its tolerance; the rows' alphas add up to at most FALSE_FAILURE."""
    bad = rows[(rows["estimate"] - rows["theory"]).abs() > rows["tolerance"]]
    assert bad.empty, bad[["protocol", "party", "estimate", "theory", "tolerance"]].to_string()
    assert (rows["alpha"] * (table_rows or len(rows))).max() <= FALSE_FAILURE * (1 + 1e-12)


def assert_table_covered(table):
    """Accuracies and paired differences: together at most FALSE_FAILURE false-failure."""
    rows = table[table["quantity"].isin(("accuracy", "accuracy_difference"))]
    assert_covered(rows)


# --------------------------------------------------------------------- accuracy coverage
def test_xor_accuracy_covers_exact_and_closed_form():
    protocols = both(EPS, DELTA)
    result = simulate_broadcast(
        protocols,
        Task.xor(6),
        100_000,
        batch=10_000,
        latency=ExponentialLatency(0.2),
        seed=20261130,
        alpha=FALSE_FAILURE,
    )
    rows = accuracy_rows(result.table)
    assert len(rows) == 2 * 7 and len(difference_rows(result.table)) == 7
    assert_table_covered(result.table)
    # the closed form, computed here: universal uses (eps, delta); binary is Warner RR (delta 0)
    for name, delta in (("universal", DELTA), ("binary", [0.0] * 6)):
        for party in [*range(6), OBSERVER]:
            row = rows[(rows["protocol"] == name) & (rows["party"] == party)].iloc[0]
            closed = xor_closed_form(EPS, delta, None if party == OBSERVER else party)
            assert row["theory"] == pytest.approx(closed, abs=1e-12)
            tol = tolerance(np.eye(2), closed, int(row["rounds"]), FALSE_FAILURE / 21)
            assert abs(row["estimate"] - closed) <= tol, (name, party, row["estimate"], closed, tol)


def test_sum_accuracy_covers_exact():
    eps = [0.25, 0.5, 1, 1, 1.5, 2, 3, 4]
    delta = [0, 0.01, 0, 0.02, 0.05, 0, 0.1, 0.01]
    result = simulate_broadcast(
        both(eps, delta),
        Task.sum(8),
        60_000,
        batch=10_000,
        latency=LognormalLatency(0.05, 0.5),
        seed=8,
        alpha=FALSE_FAILURE,
    )
    rows = accuracy_rows(result.table)
    assert len(rows) == 2 * 9 and len(difference_rows(result.table)) == 9
    assert_table_covered(result.table)
    # the universal protocol is optimal (Kairouz et al. 2015, Sec. 5): never below the binary one, exactly
    uni = rows[rows["protocol"] == "universal"]["theory"].to_numpy()
    bin_ = rows[rows["protocol"] == "binary"]["theory"].to_numpy()
    assert np.all(uni >= bin_ - 1e-12)


def test_non_uniform_bits_cover_the_enumerated_gain():
    """Bits with P(1) != 1/2: the exact expected gain of the same rule, by enumeration."""
    eps, delta = [0.5, 1.5, 2.0, 3.0], [0.05, 0.0, 0.1, 0.02]
    p_one = [0.2, 0.5, 0.7, 0.9]
    protocols = both(eps, delta)
    result = simulate_broadcast(
        protocols, Task.majority(4), 60_000, batch=8_000, p_one=p_one, seed=5, alpha=FALSE_FAILURE
    )
    rows = accuracy_rows(result.table)
    for _, row in rows.iterrows():
        p = protocols[0] if row["protocol"] == "universal" else protocols[1]
        assert row["theory"] == pytest.approx(enumerated_gain(p, Task.majority(4), int(row["party"]), p_one), abs=1e-12)
    assert_table_covered(result.table)


@pytest.mark.parametrize("task", [Task.xor(5), Task.sum(5), Task.threshold(5, 2)], ids=lambda t: t.name)
def test_enumeration_through_decide_matches_exact_accuracy(task):
    """An independent check of the exact code: brute force over inputs and transcripts,
    with the guesses of ``decide`` itself, at uniform bits."""
    eps, delta = [0.3, 1.0, 2.0, 0.7, 4.0], [0.0, 0.05, 0.1, 0.2, 0.0]
    for p in both(eps, delta):
        for party in [0, 3, OBSERVER]:
            assert enumerated_gain(p, task, party) == pytest.approx(exact_accuracy(p, task, party), abs=1e-12)


def test_tolerance_is_an_exact_binomial_acceptance_interval():
    n, p, a = 5_000, 0.37, 1e-3
    tol = tolerance(np.eye(3), p, n, a)
    lo, hi = math.ceil(n * (p - tol) - 1e-9), math.floor(n * (p + tol) + 1e-9)
    outside = stats.binom.cdf(lo - 1, n, p) + stats.binom.sf(hi, n, p)
    assert outside <= a
    # and not wastefully wide: one count narrower on the wider side breaks the bound
    narrower = stats.binom.cdf(lo, n, p) + stats.binom.sf(hi - 1, n, p)
    assert narrower > a / 2
    # other gains: Hoeffding over their range
    w = np.array([[1.0, 0.5], [0.0, 2.0]])
    assert tolerance(w, 1.0, n, a) == pytest.approx(2.0 * math.sqrt(math.log(2 / a) / (2 * n)))


# --------------------------------------------------------------------- determinism, CRN
def test_same_seed_same_numbers_and_other_seed_other_numbers():
    kw = dict(batch=700, latency=ExponentialLatency(0.1), interval=0.01)
    a = simulate_broadcast(both(EPS, DELTA), Task.xor(6), 3_000, seed=11, **kw).table
    b = simulate_broadcast(both(EPS, DELTA), Task.xor(6), 3_000, seed=11, **kw).table
    c = simulate_broadcast(both(EPS, DELTA), Task.xor(6), 3_000, seed=12, **kw).table
    assert a.equals(b)
    assert not a["estimate"].equals(c["estimate"])


def test_paired_differences_use_the_coupling():
    """Same bits and same noise uniforms for both protocols: the paired difference's
    standard error is far below that of independent runs (true ratio about 0.2 here; at
    50,000 rounds the estimated standard errors are within a few percent, so the margin of
    0.5 is wide), and the difference row is the difference of the accuracy rows."""
    table = simulate_broadcast(both(EPS, DELTA), Task.xor(6), 50_000, batch=10_000, seed=21).table
    acc, diff = accuracy_rows(table), difference_rows(table)
    for party in [*range(6), OBSERVER]:
        a = acc[acc["party"] == party].set_index("protocol")
        d = diff[diff["party"] == party].iloc[0]
        assert d["protocol"] == "binary - universal"
        assert d["estimate"] == pytest.approx(a.loc["binary", "estimate"] - a.loc["universal", "estimate"], abs=1e-12)
        assert d["theory"] == pytest.approx(a.loc["binary", "theory"] - a.loc["universal", "theory"], abs=1e-12)
        independent = math.hypot(a.loc["binary", "std_error"], a.loc["universal", "std_error"])
        assert d["std_error"] < 0.5 * independent


def test_common_random_numbers_a_protocol_does_not_change_the_others():
    kw = dict(batch=1_000, latency=ExponentialLatency(0.1), seed=3, keep_trace=True)
    alone = simulate_broadcast([Protocol.universal(EPS, DELTA)], Task.xor(6), 4_000, **kw)
    pair = simulate_broadcast(both(EPS, DELTA), Task.xor(6), 4_000, **kw)
    np.testing.assert_array_equal(alone.trace.bits, pair.trace.bits)
    np.testing.assert_array_equal(alone.trace.arrival, pair.trace.arrival)
    np.testing.assert_array_equal(alone.trace.gains[0], pair.trace.gains[0])


# --------------------------------------------------------------------- the SimPy model
def test_every_message_is_delivered_and_parties_decide_after_the_transcript_is_complete():
    k, rounds, batch = 5, 2_500, 300  # batches overlap in time: latencies >> interval
    result = simulate_broadcast(
        both(EPS[:k], DELTA[:k]),
        Task.sum(k),
        rounds,
        batch=batch,
        latency=ExponentialLatency(0.5),
        interval=0.001,
        seed=9,
        keep_trace=True,
    )
    tr = result.trace
    # every receiver (k parties + observer) took every message of every round from its inbox
    np.testing.assert_array_equal(tr.delivered, np.full(k + 1, rounds * k))
    delivered = result.table[result.table["quantity"] == "messages_delivered"]
    assert (delivered["estimate"] == rounds * k).all()
    assert np.isfinite(tr.arrival).all() and np.isfinite(tr.decided_at).all()
    # latencies are non-negative; a party holds its own message at once
    assert (tr.arrival >= tr.start[:, None, None]).all()
    for j in range(k):
        np.testing.assert_array_equal(tr.arrival[:, j, j], tr.start)
    # completion = the last message's arrival; the decision comes at or after every message
    np.testing.assert_array_equal(tr.completion, tr.arrival.max(axis=1))
    assert (tr.decided_at >= tr.completion).all()
    assert (tr.decided_at[:, :, None] >= tr.arrival.transpose(0, 2, 1)).all()
    assert (tr.arrival.max(axis=1) > tr.start[:, None]).all()  # real (positive) latencies were waited for
    # every round was decided and scored, and the table is the trace's mean
    assert np.isin(tr.gains, (0.0, 1.0)).all()
    acc = accuracy_rows(result.table)
    for q, name in enumerate(["universal", "binary"]):
        for i in range(k + 1):
            party = OBSERVER if i == k else i
            est = acc[(acc["protocol"] == name) & (acc["party"] == party)]["estimate"].iloc[0]
            assert est == pytest.approx(tr.gains[q, :, i].mean(), abs=1e-12)
    # cohorts, not one event per round or per message: about k (k + 2) events per batch
    n_batches = math.ceil(rounds / batch)
    assert result.events <= n_batches * (k * (k + 1) + k + (k + 1))


def test_constant_latency_completion_is_exact():
    k, c = 4, 0.25
    result = simulate_broadcast(
        both(EPS[:k], DELTA[:k]),
        Task.xor(k),
        1_000,
        batch=128,
        latency=ConstantLatency(c),
        interval=0.1,
        seed=1,
        keep_trace=True,
    )
    tr = result.trace
    np.testing.assert_allclose(tr.completion - tr.start[:, None], c, rtol=0, atol=1e-9)
    lat = result.table[result.table["quantity"] == "completion_delay_max"]
    np.testing.assert_allclose(lat["estimate"], c, atol=1e-9)


def test_completion_delay_theory():
    lat = ExponentialLatency(0.3)
    # E[max of n exponentials] = mean * H_n; its p-quantile is F^-1(p^(1/n))
    for n in (1, 5, 9):
        assert expected_max_latency(lat, n) == pytest.approx(0.3 * sum(1 / i for i in range(1, n + 1)), rel=1e-7)
        assert max_latency_quantile(lat, n, 0.99) == pytest.approx(-0.3 * math.log1p(-(0.99 ** (1 / n))), rel=1e-12)
    assert expected_max_latency(ConstantLatency(0.2), 4) == 0.2
    assert expected_max_latency(lat, 0) == 0.0


def test_completion_delay_law_matches_theory():
    """The observer's completion delay is the max of k i.i.d. latencies: its empirical CDF
    against the exact one (Kolmogorov-Smirnov, false-failure 1e-6)."""
    k, lat = 4, LognormalLatency(0.1, 0.7)
    tr = simulate_broadcast(
        [Protocol.binary([1.0] * k)], Task.xor(k), 20_000, batch=5_000, latency=lat, seed=4, keep_trace=True
    ).trace
    delay = tr.completion[:, k] - tr.start
    res = stats.kstest(delay, lambda s: lat.cdf(s) ** k)
    assert res.pvalue > FALSE_FAILURE, res


# --------------------------------------------------------------------- argument checks
@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(rounds=0), "rounds: got 0"),
        (dict(batch=-1), "batch: got -1"),
        (dict(p_one=[0.5, 2.0]), "p_one"),
        (dict(alpha=0.0), "alpha"),
        (dict(task=Task.xor(5)), "protocols"),
    ],
)
def test_bad_arguments_raise_one_line_errors(kwargs, needle):
    args = dict(protocols=both(EPS, DELTA), task=Task.xor(6), rounds=100)
    args.update(kwargs)
    with pytest.raises(LdpSimError) as info:
        simulate_broadcast(args.pop("protocols"), args.pop("task"), args.pop("rounds"), **args)
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("task", [Task.xor(5), Task.sum(5), Task.majority(5)], ids=lambda t: t.name)
def test_decision_tables_agree_with_decide(task):
    """The model looks decisions up in a table built from ``decide`` when transcripts are
    fewer than rounds; the lookup must give exactly decide's guesses."""
    from ldpsim.protocols import decide
    from ldpsim.sim.multiparty import _RuleTable

    rng = np.random.default_rng(2)
    for p in both(EPS[:5], DELTA[:5]):
        rule = _RuleTable.build(p, task, rounds=10**9)
        assert rule is not None
        x = rng.integers(0, 2, (3_000, 5))
        tau = p.sample(x, rng)
        for party in [*range(5), OBSERVER]:
            own = None if party == OBSERVER else x[:, party]
            np.testing.assert_array_equal(rule.lookup(party, tau, own), decide(p, task, party, tau, own))
    assert _RuleTable.build(both(EPS[:5], DELTA[:5])[0], task, rounds=100) is None  # too few rounds: no table
