"""A SimPy model of the multi-party broadcast (docs/theory.md sec. 7; Kairouz et al. 2015, Sec. 5).

Every round, each of the k parties draws its bit (Bernoulli(1/2) by default, or its own
probability), privatises it with its mechanism ``Q_j`` and broadcasts the message. Every
party and a central observer receive every message through a channel with latency; once a
receiver holds the round's whole transcript it applies the optimal decision rule
(:func:`ldpsim.protocols.decide`) and a referee records the gain ``w(f(x), guess)``.

Processes (never one per round, never one per message):

- ``party(j)``: one process per party. At the start of each **round batch** (``batch``
  consecutive rounds, round r starting at ``r * interval``) it draws its bits for the
  batch, privatises them with every protocol compared (same bits for all protocols:
  common random numbers) and broadcasts one bundle, a numpy array of messages;
- the **channel**: draws one latency per (message, receiver) from the latency law (the
  sender's own copy has latency 0) and hands the bundle to each receiver when the last of
  its messages has arrived; exact arrival times travel with the bundle as data;
- ``receiver(i)``: one process per party and one for the observer. It takes bundles from
  its inbox and, when it holds all k bundles of a batch (the transcripts of all of the
  batch's rounds are complete), decides every round of the batch at once.

So each batch costs about k (k + 2) SimPy events whatever its size, and memory holds only
the batches in flight and running tallies: a batch's bits are forgotten once every
receiver has decided it, and completion delays are kept for the quantiles only for the
first rounds (:data:`QUANTILE_SAMPLE` over all receivers; the mean and the maximum cover
every round). A round's
**completion time** for a receiver is the exact arrival time of the last of its k
messages; the SimPy time at which the receiver decides is at or after it (the end of the
batch's last delivery), which :class:`Trace` records so tests can check it.

Accuracy. For each protocol and receiver the measured average gain over the rounds is
reported next to the exact optimal average accuracy (``exact_accuracy``, uniform bits) or,
for other bit probabilities, the exact expected gain of the same rule by enumeration (when
small enough). Rounds are i.i.d., so the gains are i.i.d.: with 0/1 gains the number of
correct rounds is exactly binomial and the tolerance is an exact binomial acceptance
interval; other gains use Hoeffding's inequality. Tolerances are Bonferroni-corrected so
the whole table fails with probability at most ``alpha``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import simpy
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import invalid
from ldpsim.protocols import OBSERVER, Protocol, Task, decide
from ldpsim.protocols.gains import bit_probabilities, exact_gains
from ldpsim.report.multiparty_tables import LATENCY_QUANTITIES, RESULT_COLUMNS
from ldpsim.sim.network import ConstantLatency, Latency
from ldpsim.stats import mean_tolerance, paired_tolerance


@dataclass
class Trace:
    """What the model did, round by round (kept on request, for checks and small runs).

    Receivers are indexed 0..k-1 (the parties) and k (the observer).
    """

    start: NDArray[np.float64]  # (R,) round start (= send) times
    bits: NDArray[np.int8]  # (R, k) the parties' bits
    arrival: NDArray[np.float64]  # (R, k senders, k + 1 receivers) message arrival times
    completion: NDArray[np.float64]  # (R, k + 1) when each receiver's transcript was complete
    decided_at: NDArray[np.float64]  # (R, k + 1) SimPy time at which the receiver decided
    delivered: NDArray[np.int64]  # (k + 1,) messages each receiver took from its inbox
    gains: NDArray[np.float64]  # (protocols, R, k + 1) realised gain per round


@dataclass
class BroadcastResult:
    """The results table of one replication (long format, :data:`RESULT_COLUMNS`)."""

    table: pd.DataFrame
    seconds: float
    events: int
    trace: Trace | None = None


@dataclass
class _Bundle:
    batch: int
    sender: int
    taus: list[NDArray[np.int64]]  # one (n,) message array per protocol
    arrival: NDArray[np.float64]  # (n,) arrival times at this receiver


#: Completion delays kept per replication for the measured quantiles (over all receivers);
#: the mean and the maximum are running tallies over every round.
QUANTILE_SAMPLE = 4_000_000


@dataclass
class _Tally:
    """Running sums per (protocol, receiver), and completion delays per receiver: running
    sum, count and maximum over every round, and the delays of the first ``keep`` rounds for
    the quantiles (rounds are i.i.d., so the first rounds are a fair sample). Memory does not
    grow with the number of rounds."""

    total: NDArray[np.float64]
    squares: NDArray[np.float64]
    cross: NDArray[np.float64]  # sum of gain_q * gain_0 (the paired comparison with the first protocol)
    keep: int = 0
    delay_sum: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    delay_count: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    delay_max: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    delay_sample: list[list[NDArray[np.float64]]] = field(default_factory=list)  # per receiver, per batch
    sampled: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def empty(cls, n_protocols: int, n_recv: int) -> "_Tally":
        z = lambda: np.zeros((n_protocols, n_recv))  # noqa: E731
        return cls(z(), z(), z(), keep=max(10_000, QUANTILE_SAMPLE // n_recv), delay_sum=np.zeros(n_recv),
                   delay_count=np.zeros(n_recv, np.int64), delay_max=np.full(n_recv, -np.inf),
                   delay_sample=[[] for _ in range(n_recv)], sampled=np.zeros(n_recv, np.int64))  # fmt: skip

    def add_delays(self, i: int, delay: NDArray[np.float64]) -> None:
        self.delay_sum[i] += float(delay.sum())
        self.delay_count[i] += delay.size
        self.delay_max[i] = max(self.delay_max[i], float(delay.max()))
        room = self.keep - int(self.sampled[i])
        if room > 0:
            self.delay_sample[i].append(delay[:room].copy())
            self.sampled[i] += min(room, delay.size)


def simulate_broadcast(
    protocols: Sequence[Protocol],
    task: Task,
    rounds: int,
    *,
    batch: int = 10_000,
    latency: Latency | None = None,
    interval: float = 1.0,
    p_one: ArrayLike | None = None,
    seed: int | np.random.SeedSequence | None = None,
    alpha: float = 1e-6,
    replication: int = 0,
    keep_trace: bool = False,
    exact: Mapping[tuple[str, int], float] | None = None,
) -> BroadcastResult:
    """Run ``rounds`` rounds of the broadcast for every protocol (common random numbers)
    and return measured against exact accuracy per protocol and receiver, with latency
    statistics.

    Parameters
    ----------
    protocols: product protocols over the same k parties (e.g. ``Protocol.universal`` and
        ``Protocol.binary`` at the same levels); names must be distinct.
    task: the function every party (and the observer) computes, with its gain.
    rounds, batch: number of rounds, and rounds per SimPy event (a numpy batch).
    latency: per-message latency law (default: none); interval: time between rounds.
    p_one: probability that each party's bit is 1 (scalar or one per party; default 1/2).
    seed: the replication's SeedSequence (or an int). Streams are derived from it by fixed
        spawn keys, so the numbers do not depend on SimPy's event order.
    alpha: false-failure probability of the whole table's tolerances.
    exact: precomputed exact gains keyed by (protocol name, party) (:func:`exact_gains`),
        so that replications do not recompute them.
    """
    started = time.perf_counter()
    protocols = list(protocols)
    if not protocols:
        raise invalid("protocols", protocols, "at least one protocol")
    k = task.parties
    for p in protocols:
        if p.parties != k:
            raise invalid("protocols", f"{p.name} with {p.parties} parties", f"{k} parties, as the task")
    names = [p.name for p in protocols]
    if len(set(names)) != len(names):
        raise invalid("protocols", names, "protocols with distinct names")
    rounds = _positive_int(rounds, "rounds")
    batch = min(_positive_int(batch, "batch"), rounds)
    if not (isinstance(interval, (int, float)) and math.isfinite(interval) and interval >= 0):
        raise invalid("interval", interval, "a finite time >= 0")
    if not (0 < alpha < 1):
        raise invalid("alpha", alpha, "a probability in (0, 1)")
    latency = latency if latency is not None else ConstantLatency(0.0)
    probs = bit_probabilities(p_one, k)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)

    def stream(*key: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + key))

    bit_rng = [stream(0, j) for j in range(k)]
    latency_rng = [stream(1, j) for j in range(k)]
    # common random numbers for the noise too: every protocol's party j draws from its own
    # copy of the same stream, so all protocols privatise with the same uniforms (inverse-CDF
    # sampling): each protocol keeps its exact law, and their outcomes are coupled, which
    # makes the paired differences between protocols far more precise.
    noise_rng = [[stream(2, j) for j in range(k)] for _ in protocols]
    # each party privatises with its own one-party protocol (the same sampler, Protocol.sample)
    solo = [[Protocol.from_matrices([p.matrices[j]], [p.eps[j]], [p.delta[j]], name=f"{p.name}[{j}]") for j in range(k)]
            for p in protocols]  # fmt: skip

    n_recv = k + 1  # parties 0..k-1, observer k
    rules = [_RuleTable.build(p, task, rounds) for p in protocols]
    n_batches = -(-rounds // batch)

    def bounds(b: int) -> tuple[int, int]:  # rounds of batch b (never a list of all batches)
        return b * batch, min((b + 1) * batch, rounds)

    env = simpy.Environment()
    inbox = [simpy.Store(env) for _ in range(n_recv)]
    ledger: dict[tuple[int, int], NDArray[np.int8]] = {}  # (batch, party) -> bits: the referee's record
    decided: dict[int, int] = {}  # batch -> receivers that have decided it (the ledger entry goes with the last)
    tally = _Tally.empty(len(protocols), n_recv)
    delivered = np.zeros(n_recv, dtype=np.int64)
    trace = None
    if keep_trace:
        trace = Trace(
            start=np.arange(rounds) * float(interval), bits=np.zeros((rounds, k), np.int8),
            arrival=np.full((rounds, k, n_recv), np.nan), completion=np.full((rounds, n_recv), np.nan),
            decided_at=np.full((rounds, n_recv), np.nan), delivered=delivered,
            gains=np.full((len(protocols), rounds, n_recv), np.nan),
        )  # fmt: skip
    events = [0]

    def deliver(i: int, bundle: _Bundle):
        wait = _delay_until(env.now, float(bundle.arrival.max()))
        if wait > 0:
            yield env.timeout(wait)
        events[0] += 1
        yield inbox[i].put(bundle)

    def party(j: int):
        for b in range(n_batches):
            lo, hi = bounds(b)
            wait = _delay_until(env.now, lo * float(interval))
            if wait > 0:
                yield env.timeout(wait)
            n = hi - lo
            bits = (bit_rng[j].random(n) < probs[j]).astype(np.int8)
            ledger[(b, j)] = bits
            taus = [solo[q][j].sample(bits[:, None], noise_rng[q][j])[:, 0] for q in range(len(protocols))]
            send = np.arange(lo, hi) * float(interval)
            lat = latency.sample(n * n_recv, latency_rng[j]).reshape(n, n_recv)
            lat[:, j] = 0.0  # a party holds its own message at once
            arrival = send[:, None] + lat
            if trace is not None:
                trace.bits[lo:hi, j] = bits
                trace.arrival[lo:hi, j, :] = arrival
            for i in range(n_recv):  # the broadcast: one bundle per receiver
                env.process(deliver(i, _Bundle(b, j, taus, arrival[:, i])))
            events[0] += 1

    def receiver(i: int):
        pending: dict[int, dict[int, _Bundle]] = {}
        for _ in range(n_batches * k):
            bundle = yield inbox[i].get()
            delivered[i] += bundle.arrival.size
            got = pending.setdefault(bundle.batch, {})
            got[bundle.sender] = bundle
            if len(got) < k:
                continue
            del pending[bundle.batch]
            _decide_batch(i, bundle.batch, [got[s] for s in range(k)])
            events[0] += 1

    def _decide_batch(i: int, b: int, bundles: list[_Bundle]) -> None:
        lo, hi = bounds(b)
        completion = np.max(np.stack([bd.arrival for bd in bundles], axis=1), axis=1)
        assert env.now >= completion.max()  # the transcript of every round is complete
        x = np.stack([ledger[(b, s)] for s in range(k)], axis=1)
        truth = task.value(x)
        who = OBSERVER if i == k else i
        own = None if i == k else x[:, i]
        first = None
        for q, p in enumerate(protocols):
            tau = np.stack([bd.taus[q] for bd in bundles], axis=1)
            rule = rules[q]
            guess = rule.lookup(who, tau, own) if rule is not None else np.asarray(decide(p, task, who, tau, own))
            gain = task.gain[truth, guess]
            tally.total[q, i] += gain.sum()
            tally.squares[q, i] += np.square(gain).sum()
            first = gain if q == 0 else first
            tally.cross[q, i] += float(np.dot(gain, first))
            if trace is not None:
                trace.gains[q, lo:hi, i] = gain
        tally.add_delays(i, completion - np.arange(lo, hi) * float(interval))
        if trace is not None:
            trace.completion[lo:hi, i] = completion
            trace.decided_at[lo:hi, i] = env.now
        decided[b] = decided.get(b, 0) + 1
        if decided[b] == n_recv:  # every receiver is done with this batch: forget its bits
            del decided[b]
            for sender in range(k):
                del ledger[(b, sender)]

    for j in range(k):
        env.process(party(j))
    for i in range(n_recv):
        env.process(receiver(i))
    env.run()
    if int(delivered.sum()) != rounds * k * n_recv:  # pragma: no cover - a broken model
        raise AssertionError(f"delivered {delivered.tolist()}, expected {rounds * k} messages per receiver")

    if exact is None:
        exact = exact_gains(protocols, task, probs)
    table = _table(protocols, task, tally, delivered, rounds, latency, alpha, replication, exact)
    return BroadcastResult(table, time.perf_counter() - started, events[0], trace)


# ------------------------------------------------------------------------- decision tables
class _RuleTable:
    """Every receiver's decision (from :func:`decide`) for every possible transcript and own
    bit, looked up by transcript index: used when the transcripts are fewer than the rounds,
    so each round costs an index instead of a posterior."""

    MAX_TRANSCRIPTS = 1 << 16

    def __init__(self, sizes: tuple[int, ...], table: NDArray[np.int64]) -> None:
        self.sizes, self.table = sizes, table  # table[receiver, transcript, own bit]

    @classmethod
    def build(cls, protocol: Protocol, task: Task, rounds: int) -> "_RuleTable | None":
        sizes = tuple(q.shape[1] for q in protocol.matrices)
        n_tau = math.prod(sizes)
        if n_tau > cls.MAX_TRANSCRIPTS or 4 * n_tau > rounds:
            return None
        taus = np.stack(np.unravel_index(np.arange(n_tau), sizes), axis=1).astype(np.int64)
        possible = np.ones(n_tau, dtype=bool)  # impossible transcripts never occur: no decision needed
        for j, q in enumerate(protocol.matrices):
            possible &= q.sum(axis=0)[taus[:, j]] > 0
        k = protocol.parties
        table = np.full((k + 1, n_tau, 2), -1, dtype=np.int64)
        for i in range(k):
            for b in (0, 1):
                table[i, possible, b] = decide(protocol, task, i, taus[possible], np.full(int(possible.sum()), b))
        table[k, possible, :] = np.asarray(decide(protocol, task, OBSERVER, taus[possible]))[:, None]
        return cls(sizes, table)

    def lookup(self, party: int, tau: NDArray[np.int64], own: NDArray | None) -> NDArray[np.int64]:
        idx = np.ravel_multi_index(tuple(tau.T), self.sizes)
        if party == OBSERVER:
            return self.table[-1, idx, 0]
        return self.table[party, idx, own.astype(np.int64)]


# ------------------------------------------------------------------------- the table
def _table(protocols, task, tally, delivered, rounds, latency, alpha, replication, exact) -> pd.DataFrame:
    k = task.parties
    n_recv = k + 1
    alpha_row = alpha / ((2 * len(protocols) - 1) * n_recv)  # accuracy rows and paired differences
    spread = float(task.gain.max() - task.gain.min())
    rows = []
    for q, p in enumerate(protocols):
        for i in range(n_recv):
            who = OBSERVER if i == k else i
            mean = tally.total[q, i] / rounds
            var = max(tally.squares[q, i] / rounds - mean**2, 0.0) * rounds / max(rounds - 1, 1)
            theory = float(exact[(p.name, who)])
            rows.append({
                "replication": replication, "protocol": p.name, "party": who, "role": _role(who),
                "eps": float(p.eps[i]) if i < k else math.nan, "delta": float(p.delta[i]) if i < k else math.nan,
                "quantity": "accuracy", "estimate": mean, "std_error": math.sqrt(var / rounds),
                "tolerance": mean_tolerance(task.gain, theory, rounds, alpha_row), "alpha": alpha_row,
                "theory": theory, "rounds": rounds,
            })  # fmt: skip
    # paired comparisons (common random numbers): gain of protocol q minus gain of protocol 0, same rounds
    for q, p in enumerate(protocols[1:], start=1):
        base = protocols[0]
        for i in range(n_recv):
            who = OBSERVER if i == k else i
            mean = (tally.total[q, i] - tally.total[0, i]) / rounds
            second = (tally.squares[q, i] + tally.squares[0, i] - 2 * tally.cross[q, i]) / rounds
            var = max(second - mean**2, 0.0) * rounds / max(rounds - 1, 1)
            theory = float(exact[(p.name, who)] - exact[(base.name, who)])
            rows.append({
                "replication": replication, "protocol": f"{p.name} - {base.name}", "party": who, "role": _role(who),
                "eps": float(p.eps[i]) if i < k else math.nan, "delta": float(p.delta[i]) if i < k else math.nan,
                "quantity": "accuracy_difference", "estimate": mean, "std_error": math.sqrt(var / rounds),
                "tolerance": paired_tolerance(2 * spread, var, rounds, alpha_row), "alpha": alpha_row, "theory": theory,
                "rounds": rounds,
            })  # fmt: skip
    for i in range(n_recv):
        who = OBSERVER if i == k else i
        sample = np.concatenate(tally.delay_sample[i])
        others = k if i == k else k - 1  # a party waits for the k - 1 other messages
        measured = {"completion_delay_mean": tally.delay_sum[i] / tally.delay_count[i],
                    "completion_delay_p50": np.quantile(sample, 0.5), "completion_delay_p99": np.quantile(sample, 0.99),
                    "completion_delay_max": tally.delay_max[i]}  # fmt: skip
        theory = {"completion_delay_mean": expected_max_latency(latency, others),
                  "completion_delay_p50": max_latency_quantile(latency, others, 0.5),
                  "completion_delay_p99": max_latency_quantile(latency, others, 0.99),
                  "completion_delay_max": math.nan}  # fmt: skip
        base = {"replication": replication, "protocol": "network", "party": who, "role": _role(who),
                "eps": math.nan, "delta": math.nan, "std_error": math.nan, "tolerance": math.nan,
                "alpha": math.nan, "rounds": rounds}  # fmt: skip
        for name in LATENCY_QUANTITIES:
            rows.append({**base, "quantity": name, "estimate": float(measured[name]), "theory": theory[name]})
        rows.append({**base, "quantity": "messages_delivered", "estimate": float(delivered[i]), "theory": float(rounds * k)})
    df = pd.DataFrame(rows)
    df["within_tolerance"] = np.where(
        df["tolerance"].notna() & df["theory"].notna(), (df["estimate"] - df["theory"]).abs() <= df["tolerance"], pd.NA
    )
    return df[RESULT_COLUMNS]


def _role(who: int) -> str:
    return "observer" if who == OBSERVER else "party"


def expected_max_latency(latency: Latency, n: int) -> float:
    """``E[max of n i.i.d. latencies]`` (0 for n = 0): :meth:`Latency.expected_max`."""
    return latency.expected_max(n)


def max_latency_quantile(latency: Latency, n: int, p: float) -> float:
    """The p-quantile of the max of n i.i.d. latencies: ``F^-1(p^(1/n))``."""
    if n == 0:
        return 0.0
    return float(latency.quantile(p ** (1.0 / n)))


# ------------------------------------------------------------------------- helpers
def _delay_until(now: float, target: float) -> float:
    """A delay d >= 0 with ``now + d >= target`` in floating point (SimPy adds the delay)."""
    d = max(target - now, 0.0)
    while now + d < target:
        d = math.nextafter(d, math.inf)
    return d


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise invalid(name, value, "an integer >= 1")
    return int(value)


__all__ = ["BroadcastResult", "Trace", "simulate_broadcast", "expected_max_latency", "max_latency_quantile"]
