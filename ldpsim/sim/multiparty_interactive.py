"""The multi-party broadcast of *interactive* protocols (:class:`ldpsim.protocols.InteractiveProtocol`),
as a SimPy model, round by round: a scenario file that declares an interactive protocol runs as
the kind ``"multiparty_interactive"`` (:class:`MultipartyInteractiveStudy`, one entry of the
run-kind registry), the product protocols of the same file as one slot per party.

**The model.** Every round each party draws its input (uniform on its alphabet, from the same
stream as :class:`~ldpsim.sim.multiparty.Broadcast`'s, so every protocol sees the same inputs)
and its private value. The messages are sent slot by slot: slot ``s``'s speaker ``j`` sends
as soon as it holds the messages its rule reads (:meth:`InteractiveProtocol.reads`: those of
other parties arrive after a latency, its own are in hand) and it has sent its own earlier
slots, and not before the round starts. So a round of a protocol whose every slot reads the
one before is a *chain*: its completion time is the sum of the slot latencies; a protocol that
reads nothing (a product protocol) completes at the largest latency, as the one-round
broadcast does. Every message goes to every other party and to the observer, with a latency
drawn per (message, receiver) from the scenario's law. There is no loss and no deadline.

**Processes** (never one per round or per message), per protocol: one per party, which for
each batch of rounds, slot by slot, waits for the bundles of the slots it reads, draws its
messages for every round of the batch at once (the history of each round from the messages
it holds) and broadcasts one bundle per receiver; and one per receiver that is not a party
(the observer). The exact per-round send and arrival times travel with the bundles as data,
computed from the rounds' own times (so a bundle's SimPy delivery time is the batch's last
arrival, and the per-round times do not depend on how rounds are batched). A receiver that
holds every slot of a batch decides each round with the optimal rule on the full transcript
and its own input (:meth:`InteractiveProtocol.decisions`, a table lookup), and a referee
tallies the gains (common random numbers: paired differences with the first protocol).

**Exact values.** The accuracy rows' theory is :meth:`InteractiveProtocol.accuracy` of the
same rule (inputs uniform), with the exact binomial (or Hoeffding) tolerance of
:func:`ldpsim.stats.mean_tolerance`, Bonferroni-corrected over the table as the one-round
broadcast's are. The completion delay's theory is exact where it is known in closed form: a
constant latency (the delays are then the recursion above, deterministic), or a protocol
whose slots read no other party's message (the largest of the latencies awaited,
:func:`ldpsim.sim.multiparty.completion_mean`); otherwise it is left empty (the delay is then
the largest of sums of latencies along the protocol's dependency graph, which has no closed
form in general).

**Streams.** One SeedSequence per replication; per party: inputs ``(0, j)`` (shared by the
protocols), latencies ``(1, j)`` and draws ``(2, j)``, a copy of each per protocol (common
random numbers). Each party draws in a fixed order (batch by batch, slot by slot), so the
numbers do not depend on SimPy's event order: the same seed gives the same table, byte for
byte.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from ldpsim.errors import invalid
from ldpsim.protocols import Task
from ldpsim.protocols.interactive import InteractiveProtocol
from ldpsim.report.multiparty_tables import LATENCY_QUANTITIES, RESULT_COLUMNS
from ldpsim.sim.multiparty import (
    ExactTables,
    _delay_until,
    _per_receiver,
    _positive_int,
    _Tally,
    _who,
    accuracy_rows,
    completion_mean,
    completion_quantile,
    delay_rows,
)
from ldpsim.sim.network import ConstantLatency, Latency
from ldpsim.sim.studies import MultipartyStudy

__all__ = [
    "InteractiveBroadcast",
    "InteractiveResult",
    "InteractiveTrace",
    "MultipartyInteractiveStudy",
    "completion_theory",
    "exact_interactive",
    "send_times",
    "simulate_interactive",
]


@dataclass
class InteractiveTrace:
    """What the model did, round by round (on request; receivers 0..k-1, then the observer k)."""

    start: NDArray[np.float64]  # (R,) round start times
    inputs: NDArray[np.int64]  # (R, k) the parties' inputs
    messages: list[NDArray[np.int64]]  # per protocol: (R, S) the transcripts
    send: list[NDArray[np.float64]]  # per protocol: (R, S) when each slot was sent
    arrival: list[NDArray[np.float64]]  # per protocol: (R, S, k + 1) when each slot reached each receiver
    completion: NDArray[np.float64]  # (protocols, R, k + 1) when each receiver held the whole transcript
    gains: NDArray[np.float64]  # (protocols, R, k + 1) realised gain per round


@dataclass
class InteractiveResult:
    """The results table of one replication (long format, RESULT_COLUMNS)."""

    table: pd.DataFrame
    seconds: float
    events: int
    trace: InteractiveTrace | None = None


@dataclass
class _Bundle:
    batch: int
    slot: int
    messages: NDArray[np.int64]  # (n,) the slot's message in every round of the batch
    send: NDArray[np.float64]  # (n,) when it was sent
    arrival: NDArray[np.float64]  # (n,) when it reaches this receiver


def send_times(
    protocol: InteractiveProtocol, start: NDArray[np.float64], latency: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The model's timing, vectorised over rounds: ``latency[r, s, i]`` the latency of slot
    s's message to receiver i (the speaker's own entry is ignored: 0). Returns the send
    times (R, S) and the arrival times (R, S, k + 1)."""
    rounds, slots = latency.shape[:2]
    send = np.empty((rounds, slots))
    arrival = np.empty_like(latency)
    for s, j in enumerate(protocol.speakers):
        t = start.astype(np.float64).copy()
        for u in range(s):
            if protocol.speakers[u] == j:
                t = np.maximum(t, send[:, u])  # a party speaks its slots in order
        for u in protocol.reads(s):
            t = np.maximum(t, arrival[:, u, j])
        send[:, s] = t
        arrival[:, s, :] = t[:, None] + latency[:, s, :]
        arrival[:, s, j] = t
    return send, arrival


def completion_theory(protocol: InteractiveProtocol, latency: Latency, receiver: int) -> dict[str, float]:
    """The exact completion delay of ``receiver`` (a party, or k for the observer) where it is
    known (module docstring); NaN otherwise. Keys: LATENCY_QUANTITIES."""
    nan = dict.fromkeys(LATENCY_QUANTITIES, math.nan)
    lo, hi = float(latency.quantile(1e-12)), float(latency.quantile(1 - 1e-12))
    k, slots = protocol.parties, len(protocol.speakers)
    if lo == hi:  # a constant latency: the recursion is deterministic
        lat = np.full((1, slots, k + 1), lo)
        _, arrival = send_times(protocol, np.zeros(1), lat)
        d = float(arrival[0, :, receiver].max())
        return {**nan, "completion_delay_mean": d, "completion_delay_p50": d, "completion_delay_p99": d}
    reading = any(protocol.speakers[u] != protocol.speakers[s] for s in range(slots) for u in protocol.reads(s))
    if reading:
        return nan
    n = sum(1 for j in protocol.speakers if j != receiver)  # independent latencies awaited, sent at the start
    return {
        **nan,
        "completion_delay_mean": completion_mean(latency, n),
        "completion_delay_p50": completion_quantile(latency, n, 0.5),
        "completion_delay_p99": completion_quantile(latency, n, 0.99),
    }


def exact_interactive(protocols: Sequence[InteractiveProtocol], task: Task | Sequence[Task]) -> ExactTables:
    """The exact accuracy of every (protocol, receiver): :meth:`InteractiveProtocol.accuracy`
    of the receiver's own task (inputs uniform); no exact-only rows (no channel, worst case or
    deviations here)."""
    tasks = _per_receiver(task)
    k = tasks[0].parties
    exact = {(p.name, _who(i, k)): p.accuracy(tasks[i], _who(i, k)) for p in protocols for i in range(k + 1)}
    return ExactTables(exact, [])


class InteractiveBroadcast:
    """One replication of the broadcast of interactive protocols (module docstring): ``rounds``
    rounds of every protocol (common random numbers), measured against exact accuracy per
    protocol and receiver, with completion delays per protocol and receiver (:meth:`run`).

    protocols: InteractiveProtocols over the same parties and inputs, distinct names (a product
        protocol enters as :meth:`InteractiveProtocol.from_protocol`). task: one Task, or one
        per receiver (the parties, then the observer). rounds, batch, latency, interval, seed,
        alpha, replication, keep_trace, exact: as :class:`ldpsim.sim.multiparty.Broadcast`'s
        (inputs are uniform: the exact accuracies are for uniform inputs)."""

    def __init__(
        self,
        protocols: Sequence[InteractiveProtocol],
        task: Task | Sequence[Task],
        rounds: int,
        *,
        batch: int = 10_000,
        latency: Latency | None = None,
        interval: float = 1.0,
        seed: int | np.random.SeedSequence | None = None,
        alpha: float = 1e-6,
        replication: int = 0,
        keep_trace: bool = False,
        exact: Mapping[tuple[str, int], float] | None = None,
    ) -> None:
        started = time.perf_counter()
        self.protocols = list(protocols)
        if not self.protocols:
            raise invalid("protocols", protocols, "at least one interactive protocol")
        self.tasks = _per_receiver(task)
        self.k = k = self.tasks[0].parties
        names = [p.name for p in self.protocols]
        if len(set(names)) != len(names):
            raise invalid("protocols", names, "protocols with distinct names")
        self.inputs = tuple(int(a) for a in self.tasks[0].sizes)
        for t in self.tasks:
            if tuple(t.sizes) != self.inputs:
                raise invalid("task", f"{t.name} on input sizes {tuple(t.sizes)}", f"input sizes {self.inputs}")
        for p in self.protocols:
            if p.parties != k or p.inputs != self.inputs:
                raise invalid(
                    "protocols",
                    f"{p.name} of {p.parties} parties with input sizes {p.inputs}",
                    f"{k} parties with input sizes {self.inputs}, as the task",
                )
        self.rounds = _positive_int(rounds, "rounds")
        self.batch = min(_positive_int(batch, "batch"), self.rounds)
        if not (isinstance(interval, (int, float)) and math.isfinite(interval) and interval >= 0):
            raise invalid("interval", interval, "a finite time >= 0")
        self.interval = float(interval)
        if not (0 < alpha < 1):
            raise invalid("alpha", alpha, "a probability in (0, 1)")
        self.alpha = alpha
        self.latency = latency if latency is not None else ConstantLatency(0.0)
        self.seed = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self.replication = replication
        self.keep_trace = keep_trace
        self.exact = exact
        self.n_recv = k + 1
        self.n_batches = -(-self.rounds // self.batch)
        # per protocol: the rule of each receiver (own input x transcript index -> guess), the
        # slots each party speaks and the slots each slot reads
        self.decisions = [[p.decisions(self.tasks[i], _who(i, k)) for i in range(k + 1)] for p in self.protocols]
        self.reads = [[p.reads(s) for s in range(len(p.speakers))] for p in self.protocols]
        self._setup_seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ the run
    def run(self) -> InteractiveResult:
        started = time.perf_counter()
        k, n_recv, n_q = self.k, self.n_recv, len(self.protocols)
        self.env = simpy.Environment()
        stream = self._stream
        self.input_rng = [stream(0, j) for j in range(k)]
        self.latency_rng = [[stream(1, j) for j in range(k)] for _ in range(n_q)]
        self.draw_rng = [[stream(2, j) for j in range(k)] for _ in range(n_q)]
        self.inbox = [[simpy.Store(self.env) for _ in range(n_recv)] for _ in range(n_q)]
        self.ledger: dict[tuple[int, int], NDArray[np.int64]] = {}  # (batch, party) -> inputs
        self.pending_gains: dict[tuple[int, int], dict[int, NDArray[np.float64]]] = {}
        self.decided: dict[int, int] = {}  # batch -> decisions made (its inputs are forgotten after the last)
        self.tally = _Tally.empty(n_q, n_recv)
        self.delays = [_Tally.empty(1, n_recv) for _ in range(n_q)]
        self.delivered = np.zeros((n_q, n_recv), dtype=np.int64)
        self.events = 0
        self.trace: InteractiveTrace | None = None
        if self.keep_trace:
            R = self.rounds
            self.trace = InteractiveTrace(
                start=np.arange(R, dtype=np.float64) * self.interval,
                inputs=np.zeros((R, k), np.int64),
                messages=[np.zeros((R, len(p.speakers)), np.int64) for p in self.protocols],
                send=[np.full((R, len(p.speakers)), np.nan) for p in self.protocols],
                arrival=[np.full((R, len(p.speakers), n_recv), np.nan) for p in self.protocols],
                completion=np.full((n_q, R, n_recv), np.nan),
                gains=np.full((n_q, R, n_recv), np.nan),
            )
        for q in range(n_q):
            for j in range(k):
                self.env.process(self._party(q, j))
            self.env.process(self._observer(q))
        self.env.run()
        expected = [self.rounds * len(p.speakers) for p in self.protocols]
        if not all(int(self.delivered[q, i]) == expected[q] for q in range(n_q) for i in range(n_recv)):
            raise AssertionError(f"delivered {self.delivered.tolist()}, expected {expected}")  # pragma: no cover
        return InteractiveResult(
            self._table(), self._setup_seconds + time.perf_counter() - started, self.events, self.trace
        )

    def _stream(self, *key: int) -> np.random.Generator:
        ss = self.seed
        return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + key))

    def _bounds(self, b: int) -> tuple[int, int]:
        return b * self.batch, min((b + 1) * self.batch, self.rounds)

    def _inputs(self, b: int, j: int) -> NDArray[np.int64]:
        """Party j's inputs in batch b, drawn once (the first protocol to need them; batches are
        needed in order, so the stream's draws do not depend on which protocol asks first)."""
        if (b, j) not in self.ledger:
            lo, hi = self._bounds(b)
            self.ledger[(b, j)] = self.input_rng[j].integers(0, self.inputs[j], hi - lo).astype(np.int64)
        return self.ledger[(b, j)]

    def _deliver(self, q: int, i: int, bundle: _Bundle):
        wait = _delay_until(self.env.now, float(bundle.arrival.max()))
        if wait > 0:
            yield self.env.timeout(wait)
        self.events += 1
        yield self.inbox[q][i].put(bundle)

    def _collect(self, q: int, i: int, got: dict[tuple[int, int], _Bundle], b: int, slots: Sequence[int]):
        """Take bundles from receiver i's inbox until it holds the slots ``slots`` of batch b."""
        while any((b, s) not in got for s in slots):
            bundle = yield self.inbox[q][i].get()
            self.delivered[q, i] += bundle.messages.size
            got[(bundle.batch, bundle.slot)] = bundle

    def _party(self, q: int, j: int):
        """Party j under protocol q: per batch, its slots in order, then its decisions."""
        p, env = self.protocols[q], self.env
        rng, lat_rng = self.draw_rng[q][j], self.latency_rng[q][j]
        mine = [s for s, sp in enumerate(p.speakers) if sp == j]
        got: dict[tuple[int, int], _Bundle] = {}
        for b in range(self.n_batches):
            lo, hi = self._bounds(b)
            n = hi - lo
            wait = _delay_until(env.now, lo * self.interval)
            if wait > 0:
                yield env.timeout(wait)
            x = self._inputs(b, j)
            cdf = np.cumsum(p.private[j][x], axis=1)
            v = np.minimum((cdf < rng.random((n, 1)) * cdf[:, -1:]).sum(axis=1), cdf.shape[1] - 1)
            start = np.arange(lo, hi, dtype=np.float64) * self.interval
            last = start
            said: dict[int, NDArray[np.int64]] = {}  # its own messages of this batch
            for s in mine:
                others = [u for u in self.reads[q][s] if p.speakers[u] != j]
                yield from self._collect(q, j, got, b, others)
                t = last
                for u in others:
                    t = np.maximum(t, got[(b, u)].arrival)
                h = np.zeros(n, dtype=np.int64)
                for u in range(s):  # the history, with the messages of unread slots as 0 (the rule ignores them)
                    if u in self.reads[q][s]:
                        h = h * p.messages[u] + (said[u] if u in said else got[(b, u)].messages)
                    else:
                        h = h * p.messages[u]
                cdf = np.cumsum(p.rules[s][v, h], axis=1)
                y = np.minimum((cdf < rng.random((n, 1)) * cdf[:, -1:]).sum(axis=1), p.messages[s] - 1)
                lat = self.latency.sample(n * self.n_recv, lat_rng).reshape(n, self.n_recv)
                lat[:, j] = 0.0
                arrival = t[:, None] + lat
                if self.trace is not None:
                    self.trace.messages[q][lo:hi, s] = y
                    self.trace.send[q][lo:hi, s] = t
                    self.trace.arrival[q][lo:hi, s, :] = arrival
                for i in range(self.n_recv):
                    env.process(self._deliver(q, i, _Bundle(b, s, y, t, arrival[:, i])))
                self.events += 1
                said[s] = y
                last = t
            yield from self._collect(q, j, got, b, range(len(p.speakers)))
            self._decide(q, j, b, [got.pop((b, s)) for s in range(len(p.speakers))])

    def _observer(self, q: int):
        got: dict[tuple[int, int], _Bundle] = {}
        slots = range(len(self.protocols[q].speakers))
        for b in range(self.n_batches):
            yield from self._collect(q, self.k, got, b, slots)
            self._decide(q, self.k, b, [got.pop((b, s)) for s in slots])

    def _decide(self, q: int, i: int, b: int, bundles: list[_Bundle]) -> None:
        """Receiver i decides every round of batch b under protocol q; the referee records the
        gains (tallied with the other protocols' on the same rounds) and the completion delays."""
        k, p = self.k, self.protocols[q]
        lo, hi = self._bounds(b)
        x = np.stack([self._inputs(b, s) for s in range(k)], axis=1)
        tau = np.stack([bd.messages for bd in bundles], axis=1)
        completion = np.max(np.stack([bd.arrival for bd in bundles], axis=1), axis=1)
        assert self.env.now >= completion.max()
        t = self.tasks[i]
        own = np.zeros(hi - lo, dtype=np.int64) if i == k else x[:, i]
        gain = t.gain[t.value(x), self.decisions[q][i][own, p.transcript_index(tau)]]
        self.delays[q].add_delays(i, completion - np.arange(lo, hi) * self.interval)
        self.events += 1
        if self.trace is not None:
            self.trace.inputs[lo:hi] = x
            self.trace.completion[q, lo:hi, i] = completion
            self.trace.gains[q, lo:hi, i] = gain
        gains = self.pending_gains.setdefault((b, i), {})
        gains[q] = gain
        if len(gains) == len(self.protocols):  # every protocol decided these rounds: tally, paired with the first
            del self.pending_gains[(b, i)]
            for r, g in sorted(gains.items()):
                self.tally.total[r, i] += g.sum()
                self.tally.squares[r, i] += np.square(g).sum()
                self.tally.cross[r, i] += float(np.dot(g, gains[0]))
        self.decided[b] = self.decided.get(b, 0) + 1
        if self.decided[b] == len(self.protocols) * self.n_recv:  # every receiver of every protocol: forget
            del self.decided[b]
            for j in range(k):
                del self.ledger[(b, j)]

    # ------------------------------------------------------------------ the table
    def _table(self) -> pd.DataFrame:
        exact = self.exact if self.exact is not None else exact_interactive(self.protocols, self.tasks).exact
        common = {"replication": self.replication, "loss": 0.0, "rounds": self.rounds}
        rows = accuracy_rows(self.protocols, self.tasks, self.tally, self.rounds, self.alpha, common, exact)
        for q, p in enumerate(self.protocols):
            tally = self.delays[q]
            for i in range(self.n_recv):
                who = _who(i, self.k)
                sample = np.concatenate(tally.delay_sample[i])
                measured = {
                    "completion_delay_mean": tally.delay_sum[i] / tally.delay_count[i],
                    "completion_delay_p50": np.quantile(sample, 0.5),
                    "completion_delay_p99": np.quantile(sample, 0.99),
                    "completion_delay_max": tally.delay_max[i],
                }
                theory = completion_theory(p, self.latency, i)
                delivered = ("messages_delivered", float(self.delivered[q, i]), float(self.rounds * len(p.speakers)))
                rows += delay_rows(common, p.name, who, measured, theory, [delivered])
        df = pd.DataFrame(rows)
        df["within_tolerance"] = np.where(
            df["tolerance"].notna() & df["theory"].notna(),
            (df["estimate"] - df["theory"]).abs() <= df["tolerance"],
            pd.NA,
        )
        return df.reindex(columns=RESULT_COLUMNS)


def simulate_interactive(
    protocols: Sequence[InteractiveProtocol], task: Task | Sequence[Task], rounds: int, **options: Any
) -> InteractiveResult:
    """``InteractiveBroadcast(protocols, task, rounds, **options).run()``."""
    return InteractiveBroadcast(protocols, task, rounds, **options).run()


class MultipartyInteractiveStudy(MultipartyStudy):
    """A multi-party file that declares an interactive protocol (its ``protocols`` hold a
    family or a table of rules): every protocol runs as an :class:`InteractiveProtocol` in
    :class:`InteractiveBroadcast`; parsing, results, report and console are the multi-party
    kind's."""

    kind = "multiparty_interactive"

    def shared(self) -> Any:
        return exact_interactive(self.scenario.protocols, list(self.scenario.tasks))

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        sc = self.scenario
        spec = sc.spec
        result = simulate_interactive(
            sc.protocols,
            list(sc.tasks),
            spec.rounds.count,
            batch=spec.rounds.batch,
            latency=sc.latency,
            interval=spec.rounds.interval,
            seed=np.random.SeedSequence(seed, spawn_key=(index,)),
            alpha=spec.simulation.alpha,
            replication=index,
            exact=shared.exact,
        )
        return pd.concat([result.table, shared.frame(index)], ignore_index=True)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {
            "parties": sc.spec.parties.k,
            "protocols": [p.name for p in sc.protocols],
            "slots": {p.name: list(p.speakers) for p in sc.protocols},
        }
