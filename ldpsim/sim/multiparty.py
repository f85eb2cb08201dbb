"""A SimPy model of the multi-party broadcast (docs/theory.md sec. 7; Kairouz et al. 2015, Sec. 5),
over a channel that may lose messages or deliver them too late, with parties that may deviate.

Every round, each of the k parties draws its bit (Bernoulli(1/2) by default, or its own
probability; a party holding one of a_j > 2 values draws it uniformly on {0, ..., a_j - 1}
from the same stream), privatises it with its mechanism ``Q_j`` and broadcasts the message. Every
party and a central observer receive the messages through a channel with latency, each
message to each receiver lost with probability ``loss`` (independently); a receiver decides
by the round's ``deadline`` (if any), and a message not there by then counts as not heard.
A receiver decides with the optimal rule (:func:`ldpsim.protocols.decide`) of the protocol
it faces: the announced protocol seen through the channel, ``erasure_protocol(protocol, m)``
with ``m = missing_probability(loss, late)`` and ``late = P(latency > deadline)``, in which
a missing message is the extra symbol "not heard" (index = that party's alphabet size). Each
receiver may compute its own function with its own gain (one Task per receiver), and a
referee records the gain ``w(f(x), guess)``.

The model is a :class:`Broadcast` (one replication; :func:`simulate_broadcast` builds and runs
one). Its processes (never one per round, never one per message):

- ``_party(j)``: one process per party. At the start of each **round batch** (``batch``
  consecutive rounds, round r starting at ``r * interval``) it draws its bits for the
  batch, privatises them with every protocol compared (same bits for all protocols:
  common random numbers; a deviating party samples from its deviating matrix) and
  broadcasts one bundle, a numpy array of messages;
- the **channel**: draws one latency per (message, receiver) from the latency law (the
  sender's own copy has latency 0), one loss per (message, receiver) from its own stream
  (the sender always holds its own message), marks each message heard or not, and hands
  the bundle to each receiver when the last of its messages is *resolved* (below);
  exact times travel with the bundle as data;
- ``_receiver(i)``: one process per party and one for the observer. It takes bundles from
  its inbox and, when it holds all k bundles of a batch, decides every round of the batch
  at once: the messages it did not hear become "not heard" in its transcript.

**When a receiver decides** (a round's completion time). A message is resolved when it
arrives if it is heard; a missing one (lost, or later than the deadline) is resolved at the
deadline ``start + deadline``. So with a deadline D and n awaited messages (k - 1 for a
party, k for the observer) the completion delay is ``T = max latency`` if every message is
heard and ``T = D`` otherwise: ``P(T <= t) = ((1 - loss) F(t))^n`` for t < D and 1 from D
on (:func:`completion_cdf`; mean and quantiles exactly, the mean by numerical integration).
Without a deadline the channel notifies a loss when the message would have arrived, so T
is the largest latency, ``P(T <= t) = F(t)^n``, whatever the loss.

So each batch costs about k (k + 2) SimPy events whatever its size, and memory holds only
the batches in flight and running tallies: a batch's bits are forgotten once every
receiver has decided it, and completion delays are kept for the quantiles only for the
first rounds (:data:`QUANTILE_SAMPLE` over all receivers; the mean and the maximum cover
every round). The SimPy time at which the receiver decides is at or after the completion
time (the end of the batch's last delivery), which :class:`Trace` records so tests can
check it.

Decisions, vectorised over a batch: by a table of every transcript's decision when the
transcripts are fewer than the rounds (:class:`_RuleTable`); otherwise, for functions of
the number of ones, by a cache of decisions keyed by how many parties of each class sent
each symbol (:class:`_CountRule`: one ``decide`` per distinct count vector, shared by the
receivers of a class; this is what keeps k = 200 within reach); otherwise by ``decide`` on
the batch. All three give ``decide``'s answers (up to exact ties, where any answer is
optimal; with deviating parties or biased bits ``decide`` itself is used, so that ties
follow ``rule_gain`` and the enumeration).

Cost: about k (k + 2) SimPy events per batch and k (k + 1) latencies (and losses) per
round, so the model grows as k^2 per round: measured on one core for one protocol, about
1 s per 10^5 rounds at k = 8, 30 to 40 s at k = 64 and 5.5 to 7 minutes at k = 200
(batches of 1,000 rounds; the larger figures with 5% loss and a deadline).

Accuracy. For each protocol and receiver the measured average gain over the rounds is
reported next to the exact expected gain of the same rule (:func:`exact_values`): the
optimal accuracy of the protocol under the channel (``exact_accuracy`` of the erasure
protocol, uniform bits; other bit probabilities by enumeration when small enough), and,
with deviating parties, ``rule_gain`` of the announced rule on the deviating protocol's
transcripts. Rounds are i.i.d., so the gains are i.i.d.: with 0/1 gains the number of
correct rounds is exactly binomial and the tolerance is an exact binomial acceptance
interval; other gains use Hoeffding's inequality. Tolerances are Bonferroni-corrected so
the whole table fails with probability at most ``alpha``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import simpy
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import quad

from ldpsim.errors import LdpSimError, invalid
from ldpsim.protocols import (
    OBSERVER,
    Protocol,
    Task,
    decide,
    erasure_protocol,
    missing_probability,
    rule_gain,
    worst_case,
)
from ldpsim.protocols.decisions import lp_coefficients, worst_case_reach
from ldpsim.protocols.gains import bit_probabilities, exact_gain
from ldpsim.protocols.tasks import MAX_TABLE_PARTIES
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
    arrival: NDArray[np.float64]  # (R, k senders, k + 1 receivers) when each message arrives (or would, if lost)
    completion: NDArray[np.float64]  # (R, k + 1) when each receiver's transcript was resolved (module docstring)
    decided_at: NDArray[np.float64]  # (R, k + 1) SimPy time at which the receiver decided
    delivered: NDArray[np.int64]  # (k + 1,) message slots each receiver took from its inbox
    gains: NDArray[np.float64]  # (protocols, R, k + 1) realised gain per round
    heard: NDArray[np.bool_] | None = None  # (R, k senders, k + 1 receivers) heard in time


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
    arrival: NDArray[np.float64]  # (n,) resolution times at this receiver (arrival, or the deadline)
    heard: NDArray[np.bool_]  # (n,) whether this receiver heard the message in time


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
    heard: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def empty(cls, n_protocols: int, n_recv: int) -> "_Tally":
        z = lambda: np.zeros((n_protocols, n_recv))
        return cls(
            z(),
            z(),
            z(),
            keep=max(10_000, QUANTILE_SAMPLE // n_recv),
            delay_sum=np.zeros(n_recv),
            delay_count=np.zeros(n_recv, np.int64),
            delay_max=np.full(n_recv, -np.inf),
            delay_sample=[[] for _ in range(n_recv)],
            sampled=np.zeros(n_recv, np.int64),
            heard=np.zeros(n_recv, np.int64),
        )

    def add_delays(self, i: int, delay: NDArray[np.float64]) -> None:
        self.delay_sum[i] += float(delay.sum())
        self.delay_count[i] += delay.size
        self.delay_max[i] = max(self.delay_max[i], float(delay.max()))
        room = self.keep - int(self.sampled[i])
        if room > 0:
            self.delay_sample[i].append(delay[:room].copy())
            self.sampled[i] += min(room, delay.size)


def _per_receiver(task: Task | Sequence[Task], k: int | None = None) -> list[Task]:
    """One Task per receiver (parties 0..k-1, then the observer) from one Task or a list."""
    if isinstance(task, Task):
        return [task] * (task.parties + 1)
    tasks = list(task)
    if not tasks or not all(isinstance(t, Task) for t in tasks):
        raise invalid("task", task, "a Task, or one Task per receiver (the k parties, then the observer)")
    parties = tasks[0].parties
    if len(tasks) != parties + 1 or any(t.parties != parties for t in tasks):
        raise invalid(
            "task",
            f"{len(tasks)} tasks",
            f"one Task of {parties} bits per receiver: {parties + 1} (the parties, then the observer)",
        )
    return tasks


def _who(i: int, k: int) -> int:
    return OBSERVER if i == k else i


def channel_missing(
    loss: float = 0.0, deadline: float | None = None, latency: Latency | None = None
) -> tuple[float, float]:
    """``(late, m)``: P(latency > deadline) (0 without a deadline) and P(a message is not
    heard in time) = ``missing_probability(loss, late)``."""
    late = 0.0
    if deadline is not None:
        if not (
            isinstance(deadline, (int, float))
            and not isinstance(deadline, bool)
            and deadline > 0
            and math.isfinite(deadline)
        ):
            raise invalid("deadline", deadline, "a finite time > 0, or None")
        lat = latency if latency is not None else ConstantLatency(0.0)
        late = min(max(float(1.0 - lat.cdf(float(deadline))), 0.0), 1.0)
    return late, missing_probability(loss, late)


def faced_protocol(protocol: Protocol, missing: float) -> Protocol:
    """The protocol a receiver faces through the channel (the protocol itself when nothing
    is ever missing)."""
    return erasure_protocol(protocol, missing) if missing > 0 else protocol


def exact_value(
    nominal: Protocol, actual: Protocol, task: Task, who: int, p_one: ArrayLike | None, missing: float
) -> float:
    """The exact expected gain per round of receiver ``who``'s rule (the announced
    protocol's, through the channel) when the parties run ``actual`` (NaN when the
    enumeration for non-uniform bits is out of reach). Parties holding more than a bit:
    uniform inputs (``p_one`` is ignored)."""
    seen = faced_protocol(nominal, missing)
    if not nominal.binary_inputs:
        p_one = None
    if actual is nominal:
        probs = bit_probabilities(p_one, nominal.parties)
        if not np.all(probs == 0.5) and task.parties <= MAX_TABLE_PARTIES:
            try:  # the same rule's gain under other bit probabilities, by contraction rather than enumeration
                return float(rule_gain(seen, seen, task, who, probs))
            except LdpSimError:
                pass  # too large for the contraction: the enumeration, or NaN
        return float(exact_gain(seen, task, who, p_one))
    return float(rule_gain(seen, faced_protocol(actual, missing), task, who, p_one))


def exact_values(
    protocols: Sequence[Protocol],
    task: Task | Sequence[Task],
    p_one: ArrayLike | None = None,
    missing: float = 0.0,
    actual: Sequence[Protocol] | None = None,
) -> dict[tuple[str, int], float]:
    """Exact expected gain per round for every (protocol name, receiver): each receiver's
    own task, through the channel (``missing``), with the parties running ``actual``
    (default: the protocols as announced)."""
    tasks = _per_receiver(task)
    k = tasks[0].parties
    actual = list(protocols) if actual is None else list(actual)
    probs = bit_probabilities(p_one, k)
    memo: dict = {}
    return {
        (p.name, _who(i, k)): _exact_memo(memo, q, p, a, tasks[i], i, probs, missing)
        for q, (p, a) in enumerate(zip(protocols, actual))
        for i in range(k + 1)
    }


def _exact_memo(
    memo: dict, q: int, p: Protocol, a: Protocol, task: Task, i: int, probs: NDArray, missing: float
) -> float:
    """:func:`exact_value` of receiver i, computed once per class of exchangeable receivers:
    for a symmetric function, parties with the same announced and actual matrices and bit
    probability face the same others, so they have the same exact value."""
    k = p.parties
    who = _who(i, k)
    if not task.is_symmetric or who == OBSERVER:
        return exact_value(p, a, task, who, probs, missing)
    key = (
        q,
        id(task),
        missing,
        p.matrices[i].tobytes(),
        bytes(p.matrices[i].shape),
        a.matrices[i].tobytes(),
        bytes(a.matrices[i].shape),
        float(probs[i]),
    )
    if key not in memo:
        memo[key] = (task, exact_value(p, a, task, who, probs, missing))  # the task is kept: its id stays its own
    return memo[key][1]


class Broadcast:
    """One replication of the multi-party broadcast, as a SimPy model: ``rounds`` rounds for
    every protocol (common random numbers), measured against exact accuracy per protocol and
    receiver, with latency statistics (:meth:`run`). The constructor checks the parameters
    and prepares what every round shares (per-party samplers, the receivers' rules); each
    :meth:`run` draws from fresh streams of ``seed``, so it gives the same result every time.

    Parameters
    ----------
    protocols: product protocols over the same k parties (e.g. ``Protocol.universal`` and
        ``Protocol.binary`` at the same levels); names must be distinct. Their rules are the
        receivers' (the announced protocols).
    task: the function every receiver computes, with its gain; or one Task per receiver
        (the k parties, then the observer).
    rounds, batch: number of rounds, and rounds per SimPy event (a numpy batch).
    latency: per-message latency law (default: none); interval: time between rounds.
    p_one: probability that each party's bit is 1 (scalar or one per party; default 1/2);
        None when some party holds more than a bit (``protocol.inputs``: party j's input is
        then uniform on {0, ..., a_j - 1}; the protocols and tasks must agree on the a_j).
    seed: the replication's SeedSequence (or an int). Streams are derived from it by fixed
        spawn keys, so the numbers do not depend on SimPy's event order.
    alpha: false-failure probability of the whole table's tolerances.
    replication: the replication's index, recorded in the table.
    keep_trace: keep the :class:`Trace` of every round (for checks and small runs).
    exact: precomputed exact gains keyed by (protocol name, party) (:func:`exact_values`),
        so that replications do not recompute them.
    loss: P(a message is lost), per (message, receiver), independently.
    deadline: time after a round's start by which every receiver decides (None: when every
        message is resolved); later messages are not heard.
    actual: the protocols the parties really run (same alphabets; e.g. ``deviate``d), one
        per protocol; default: the announced ones.
    """

    def __init__(
        self,
        protocols: Sequence[Protocol],
        task: Task | Sequence[Task],
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
        loss: float = 0.0,
        deadline: float | None = None,
        actual: Sequence[Protocol] | None = None,
    ) -> None:
        started = time.perf_counter()
        self._check(protocols, task, actual, p_one)
        self.rounds = _positive_int(rounds, "rounds")
        self.batch = min(_positive_int(batch, "batch"), self.rounds)
        if not (isinstance(interval, (int, float)) and math.isfinite(interval) and interval >= 0):
            raise invalid("interval", interval, "a finite time >= 0")
        self.interval = float(interval)
        if not (0 < alpha < 1):
            raise invalid("alpha", alpha, "a probability in (0, 1)")
        self.alpha = alpha
        self.latency = latency if latency is not None else ConstantLatency(0.0)
        _, self.missing = channel_missing(loss, deadline, self.latency)
        self.loss = float(loss)
        self.deadline = deadline
        self.probs = bit_probabilities(p_one, self.k)
        self.seed = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self.replication = replication
        self.keep_trace = keep_trace
        self.exact = exact
        self._prepare_rules()
        self._setup_seconds = time.perf_counter() - started

    # ------------------------------------------------------------------ parameters
    def _check(
        self,
        protocols: Sequence[Protocol],
        task: Task | Sequence[Task],
        actual: Sequence[Protocol] | None,
        p_one: ArrayLike | None,
    ) -> None:
        """Protocols, tasks and the protocols actually run: the same parties, alphabets and
        inputs (sets ``protocols``, ``tasks``, ``k``, ``actual``, ``inputs``, ``binary``)."""
        self.protocols = protocols = list(protocols)
        if not protocols:
            raise invalid("protocols", protocols, "at least one protocol")
        self.tasks = tasks = _per_receiver(task)
        self.k = k = tasks[0].parties
        for p in protocols:
            if p.parties != k:
                raise invalid("protocols", f"{p.name} with {p.parties} parties", f"{k} parties, as the task")
        names = [p.name for p in protocols]
        if len(set(names)) != len(names):
            raise invalid("protocols", names, "protocols with distinct names")
        self.actual = actual = protocols if actual is None else list(actual)
        if len(actual) != len(protocols) or any(
            a.sizes != p.sizes or a.inputs != p.inputs for a, p in zip(actual, protocols)
        ):
            raise invalid(
                "actual", [a.name for a in actual], "one protocol per announced protocol, with the same alphabets"
            )
        self.inputs = inputs = protocols[0].inputs  # each party's number of values (2: a bit)
        for p in protocols:
            if p.inputs != inputs:
                raise invalid(
                    "protocols",
                    f"{p.name} with input sizes {p.inputs}",
                    f"the same input sizes for every protocol ({inputs})",
                )
        for t in tasks:
            if t.sizes != inputs:
                raise invalid(
                    "task",
                    f"{t.name} on input sizes {t.sizes}",
                    f"a function of the parties' inputs, of sizes {inputs}",
                )
        self.binary = all(a == 2 for a in inputs)
        if not self.binary and p_one is not None:
            raise invalid(
                "p_one", p_one, "no bit probabilities when parties hold more than a bit (their inputs are uniform)"
            )

    def _prepare_rules(self) -> None:
        """Each party's sampler and each receiver's rule, shared by every round."""
        k, protocols, tasks = self.k, self.protocols, self.tasks
        # each party privatises with its own one-party protocol (the same sampler, Protocol.sample),
        # from the matrices it actually runs
        self.solo = [
            [Protocol.from_matrices([a.matrices[j]], [a.eps[j]], [a.delta[j]], name=f"{a.name}[{j}]") for j in range(k)]
            for a in self.actual
        ]
        self.n_recv = k + 1  # parties 0..k-1, observer k
        self.faced = [faced_protocol(p, self.missing) for p in protocols]  # the receivers' rules are these protocols'
        self.not_heard = [np.asarray(p.sizes, dtype=np.int64) for p in protocols]
        self.rules = [_RuleTable.build(p, tasks, self.rounds) for p in self.faced]
        # decisions by symbol counts where no table fits; not with deviating parties or biased
        # bits, whose exact gain (rule_gain, enumeration) follows decide's own answer on each
        # transcript even where two answers tie (any answer to a tie is optimal only for the
        # announced protocol and uniform bits)
        uniform = bool(np.all(self.probs == 0.5))
        self.counted = [
            None if r is not None or a is not p or not uniform else _CountRule.build(f, tasks)
            for f, r, a, p in zip(self.faced, self.rules, self.actual, protocols)
        ]
        self.n_batches = -(-self.rounds // self.batch)

    # ------------------------------------------------------------------ the run
    def run(self) -> BroadcastResult:
        """Run every round and return the results table (and the trace, if kept)."""
        started = time.perf_counter()
        self._start()
        for j in range(self.k):
            self.env.process(self._party(j))
        for i in range(self.n_recv):
            self.env.process(self._receiver(i))
        self.env.run()
        if int(self.delivered.sum()) != self.rounds * self.k * self.n_recv:  # pragma: no cover - a broken model
            raise AssertionError(
                f"delivered {self.delivered.tolist()}, expected {self.rounds * self.k} messages per receiver"
            )
        table = self._table()
        return BroadcastResult(table, self._setup_seconds + time.perf_counter() - started, self.events, self.trace)

    def _stream(self, *key: int) -> np.random.Generator:
        ss = self.seed
        return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + key))

    def _start(self) -> None:
        """Fresh random streams, SimPy environment, inboxes, ledger and tallies."""
        k, n_recv, rounds = self.k, self.n_recv, self.rounds
        self.bit_rng = [self._stream(0, j) for j in range(k)]
        self.latency_rng = [self._stream(1, j) for j in range(k)]
        # common random numbers for the noise too: every protocol's party j draws from its own
        # copy of the same stream, so all protocols privatise with the same uniforms (inverse-CDF
        # sampling): each protocol keeps its exact law, and their outcomes are coupled, which
        # makes the paired differences between protocols far more precise.
        self.noise_rng = [[self._stream(2, j) for j in range(k)] for _ in self.protocols]
        self.loss_rng = [
            self._stream(3, j) for j in range(k)
        ]  # losses: their own streams (the same for every protocol)
        self.env = simpy.Environment()
        self.inbox = [simpy.Store(self.env) for _ in range(n_recv)]
        self.ledger: dict[tuple[int, int], NDArray[np.int8]] = {}  # (batch, party) -> bits: the referee's record
        self.decided: dict[
            int, int
        ] = {}  # batch -> receivers that have decided it (the ledger entry goes with the last)
        self.tally = _Tally.empty(len(self.protocols), n_recv)
        self.delivered = np.zeros(n_recv, dtype=np.int64)
        self.trace: Trace | None = None
        if self.keep_trace:
            self.trace = Trace(
                start=np.arange(rounds) * self.interval,
                bits=np.zeros((rounds, k), np.int8),
                arrival=np.full((rounds, k, n_recv), np.nan),
                completion=np.full((rounds, n_recv), np.nan),
                decided_at=np.full((rounds, n_recv), np.nan),
                delivered=self.delivered,
                gains=np.full((len(self.protocols), rounds, n_recv), np.nan),
                heard=np.zeros((rounds, k, n_recv), bool),
            )
        self.events = 0

    def _bounds(self, b: int) -> tuple[int, int]:
        """The rounds of batch b (never a list of all batches)."""
        return b * self.batch, min((b + 1) * self.batch, self.rounds)

    def _deliver(self, i: int, bundle: _Bundle):
        """The channel: hand the bundle to receiver i when the last of its messages is resolved."""
        wait = _delay_until(self.env.now, float(bundle.arrival.max()))
        if wait > 0:
            yield self.env.timeout(wait)
        self.events += 1
        yield self.inbox[i].put(bundle)

    def _party(self, j: int):
        """Party j: each batch, its bits, their privatisation by every protocol, and the broadcast."""
        env, trace, deadline = self.env, self.trace, self.deadline
        for b in range(self.n_batches):
            lo, hi = self._bounds(b)
            wait = _delay_until(env.now, lo * self.interval)
            if wait > 0:
                yield env.timeout(wait)
            bits = self._draw_bits(j, hi - lo)
            self.ledger[(b, j)] = bits
            taus = [
                self.solo[q][j].sample(bits[:, None], self.noise_rng[q][j])[:, 0] for q in range(len(self.protocols))
            ]
            send = np.arange(lo, hi) * self.interval
            arrival, heard = self._channel(j, send)
            # resolved: when heard, on arrival; when missing, at the deadline (without one, a
            # lost message is notified when it would have arrived)
            resolved = arrival if deadline is None else np.where(heard, arrival, send[:, None] + float(deadline))
            if trace is not None:
                trace.bits[lo:hi, j] = bits
                trace.arrival[lo:hi, j, :] = arrival
                trace.heard[lo:hi, j, :] = heard
            for i in range(self.n_recv):  # the broadcast: one bundle per receiver
                env.process(self._deliver(i, _Bundle(b, j, taus, resolved[:, i], heard[:, i])))
            self.events += 1

    def _draw_bits(self, j: int, n: int) -> NDArray[np.int8]:
        """Party j's inputs for n rounds: bits of probability ``p_one``, or uniform values."""
        if self.inputs[j] == 2:
            return (self.bit_rng[j].random(n) < self.probs[j]).astype(np.int8)
        return self.bit_rng[j].integers(0, self.inputs[j], n).astype(np.int8)  # one of a_j values, uniform

    def _channel(self, j: int, send: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Party j's messages sent at times ``send``: their arrival at every receiver, and
        whether each was heard in time (not lost, not past the deadline)."""
        n, n_recv = send.size, self.n_recv
        lat = self.latency.sample(n * n_recv, self.latency_rng[j]).reshape(n, n_recv)
        lat[:, j] = 0.0  # a party holds its own message at once
        arrival = send[:, None] + lat
        heard = np.ones((n, n_recv), dtype=bool)
        if self.loss > 0:
            heard &= self.loss_rng[j].random((n, n_recv)) >= self.loss
        if self.deadline is not None:
            heard &= lat <= self.deadline
        heard[:, j] = True
        return arrival, heard

    def _receiver(self, i: int):
        """Receiver i: collect the bundles of each batch, and decide it once all k are in."""
        k = self.k
        pending: dict[int, dict[int, _Bundle]] = {}
        for _ in range(self.n_batches * k):
            bundle = yield self.inbox[i].get()
            self.delivered[i] += bundle.arrival.size
            got = pending.setdefault(bundle.batch, {})
            got[bundle.sender] = bundle
            if len(got) < k:
                continue
            del pending[bundle.batch]
            self._decide_batch(i, bundle.batch, [got[s] for s in range(k)])
            self.events += 1

    def _decide_batch(self, i: int, b: int, bundles: list[_Bundle]) -> None:
        """Receiver i decides every round of batch b at once, with each protocol's rule, and
        the referee tallies the gains and the completion delays."""
        k, tally, trace = self.k, self.tally, self.trace
        lo, hi = self._bounds(b)
        completion = np.max(np.stack([bd.arrival for bd in bundles], axis=1), axis=1)
        assert self.env.now >= completion.max()  # every message of every round is resolved
        heard = np.stack([bd.heard for bd in bundles], axis=1)  # (n, k)
        complete = bool(heard.all())
        tally.heard[i] += int(heard.sum())
        x = np.stack([self.ledger[(b, s)] for s in range(k)], axis=1)
        t = self.tasks[i]
        truth = t.value(x)
        own = None if i == k else x[:, i]
        first = None
        for q in range(len(self.protocols)):
            tau = np.stack([bd.taus[q] for bd in bundles], axis=1)
            if not complete:
                tau = np.where(heard, tau, self.not_heard[q][None, :])
            gain = t.gain[truth, self._guess(q, i, tau, own)]
            tally.total[q, i] += gain.sum()
            tally.squares[q, i] += np.square(gain).sum()
            first = gain if q == 0 else first
            tally.cross[q, i] += float(np.dot(gain, first))
            if trace is not None:
                trace.gains[q, lo:hi, i] = gain
        tally.add_delays(i, completion - np.arange(lo, hi) * self.interval)
        if trace is not None:
            trace.completion[lo:hi, i] = completion
            trace.decided_at[lo:hi, i] = self.env.now
        self._forget(b)

    def _guess(self, q: int, i: int, tau: NDArray[np.int64], own: NDArray | None) -> NDArray[np.int64]:
        """Receiver i's decisions under protocol q's rule: by table, by symbol counts, or by ``decide``."""
        t = self.tasks[i]
        if self.rules[q] is not None:
            return self.rules[q].lookup(i, tau, own)
        if self.counted[q] is not None and t.is_symmetric:
            return self.counted[q].lookup(i, tau, own)
        return np.asarray(decide(self.faced[q], t, _who(i, self.k), tau, own))

    def _forget(self, b: int) -> None:
        """One more receiver has decided batch b; after the last, its bits are forgotten."""
        self.decided[b] = self.decided.get(b, 0) + 1
        if self.decided[b] == self.n_recv:
            del self.decided[b]
            for sender in range(self.k):
                del self.ledger[(b, sender)]

    def _table(self) -> pd.DataFrame:
        """The results table: measured against exact gains, and the channel's statistics."""
        exact = self.exact
        if exact is None:
            exact = exact_values(
                self.protocols, self.tasks, self.probs if self.binary else None, self.missing, self.actual
            )
        channel = Channel(self.latency, self.loss, self.deadline, self.missing)
        return _table(
            self.protocols,
            self.tasks,
            self.tally,
            self.delivered,
            self.rounds,
            channel,
            self.alpha,
            self.replication,
            exact,
        )


def simulate_broadcast(
    protocols: Sequence[Protocol],
    task: Task | Sequence[Task],
    rounds: int,
    **options: Any,
) -> BroadcastResult:
    """Run ``rounds`` rounds of the broadcast for every protocol (common random numbers)
    and return measured against exact accuracy per protocol and receiver, with latency
    statistics: ``Broadcast(protocols, task, rounds, **options).run()``; the options
    (``batch``, ``latency``, ``interval``, ``p_one``, ``seed``, ``alpha``, ``replication``,
    ``keep_trace``, ``exact``, ``loss``, ``deadline``, ``actual``) are :class:`Broadcast`'s."""
    return Broadcast(protocols, task, rounds, **options).run()


@dataclass(frozen=True)
class Channel:
    """The channel of a run: latency law, loss rate, deadline, and P(not heard in time)."""

    latency: Latency
    loss: float = 0.0
    deadline: float | None = None
    missing: float = 0.0


# ------------------------------------------------------------------------- decision tables
class _RuleTable:
    """Every receiver's decision (from :func:`decide`) for every possible transcript and own
    input (a bit, or a value below the party's alphabet size), looked up by transcript index:
    used when the transcripts are fewer than the rounds, so each round costs an index
    instead of a posterior."""

    MAX_TRANSCRIPTS = 1 << 16

    def __init__(self, sizes: tuple[int, ...], table: NDArray[np.int64]) -> None:
        self.sizes, self.table = sizes, table  # table[receiver, transcript, own input]

    @classmethod
    def build(cls, protocol: Protocol, task: Task | Sequence[Task], rounds: int) -> "_RuleTable | None":
        tasks = _per_receiver(task)
        sizes = tuple(q.shape[1] for q in protocol.matrices)
        n_tau = math.prod(sizes)
        own_sizes = protocol.inputs
        if n_tau > cls.MAX_TRANSCRIPTS or 4 * n_tau * max(own_sizes) // 2 > rounds:
            return None
        taus = np.stack(np.unravel_index(np.arange(n_tau), sizes), axis=1).astype(np.int64)
        possible = np.ones(n_tau, dtype=bool)  # impossible transcripts never occur: no decision needed
        for j, q in enumerate(protocol.matrices):
            possible &= q.sum(axis=0)[taus[:, j]] > 0
        k = protocol.parties
        table = np.full((k + 1, n_tau, max(own_sizes)), -1, dtype=np.int64)
        for i in range(k):
            for b in range(own_sizes[i]):
                table[i, possible, b] = decide(protocol, tasks[i], i, taus[possible], np.full(int(possible.sum()), b))
        table[k, possible, :] = np.asarray(decide(protocol, tasks[k], OBSERVER, taus[possible]))[:, None]
        return cls(sizes, table)

    def lookup(self, receiver: int, tau: NDArray[np.int64], own: NDArray | None) -> NDArray[np.int64]:
        """Decisions of ``receiver`` (a party index, or OBSERVER / k for the observer)."""
        idx = np.ravel_multi_index(tuple(tau.T), self.sizes)
        if own is None or receiver == OBSERVER:
            return self.table[-1, idx, 0]
        return self.table[receiver, idx, own.astype(np.int64)]


class _CountRule:
    """Decisions of symmetric tasks looked up by *per-class symbol counts*: for a function of
    the number of ones, the optimal rule depends on a transcript only through how many
    parties of each class (parties with the same matrix) sent each symbol, besides the
    receiver's own bit (and class). Each batch's transcripts are reduced to those counts (a
    bincount, O(k) per round); decisions are made by :func:`decide` once per distinct count
    vector, on a representative transcript, and kept in a sorted cache shared by every
    receiver of the same class and task for the whole run. Where transcripts repeat their
    counts (large k, few classes) this replaces the O(k^2) posterior per round and receiver
    by a lookup. (Where the expected gains of two answers are exactly equal, the library's
    choice may depend on the order of floating-point operations; either answer is optimal.)"""

    def __init__(self, protocol: Protocol, tasks: list[Task]) -> None:
        self.protocol, self.tasks = protocol, tasks
        key_of: dict[bytes, int] = {}
        self.cls = np.array([key_of.setdefault(q.tobytes() + bytes(q.shape), len(key_of)) for q in protocol.matrices])
        sizes = np.zeros(len(key_of), dtype=np.int64)
        for j, q in enumerate(protocol.matrices):
            sizes[self.cls[j]] = q.shape[1]
        self.offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])[self.cls]  # per party: its class's first code
        self.codes = int(sizes.sum())
        self.cache: dict[tuple[int, int], tuple[NDArray, NDArray[np.int64]]] = {}

    @classmethod
    def build(cls, protocol: Protocol, tasks: list[Task]) -> "_CountRule | None":
        if protocol.parties > np.iinfo(np.int16).max or not any(t.is_symmetric for t in tasks):
            return None
        return cls(protocol, tasks)

    def counts(self, tau: NDArray[np.int64], exclude: int | None) -> NDArray[np.int16]:
        n = tau.shape[0]
        width = self.codes + 1  # the last column collects the excluded party
        code = self.offset[None, :] + tau
        if exclude is not None:
            code[:, exclude] = self.codes
        flat = (np.arange(n, dtype=np.int64)[:, None] * width + code).ravel()
        return np.bincount(flat, minlength=n * width).reshape(n, width)[:, : self.codes].astype(np.int16)

    def lookup(self, i: int, tau: NDArray[np.int64], own: NDArray | None) -> NDArray[np.int64]:
        who = _who(i, self.protocol.parties)
        task = self.tasks[i]
        counts = self.counts(tau, None if who == OBSERVER else i)
        if own is not None:
            counts = np.hstack([counts, np.asarray(own, dtype=np.int16)[:, None]])
        keys = np.ascontiguousarray(counts).view(np.dtype((np.void, counts.shape[1] * 2))).ravel()
        where = (id(task), -1 if who == OBSERVER else int(self.cls[i]))
        known, answers = self.cache.get(where, (keys[:0], np.zeros(0, dtype=np.int64)))
        uniq, first = np.unique(keys, return_index=True)
        new = ~np.isin(uniq, known) if known.size else np.ones(uniq.size, dtype=bool)
        if new.any():
            rows = first[new]
            got = np.asarray(
                decide(self.protocol, task, who, tau[rows], None if own is None else own[rows]), dtype=np.int64
            )
            known = np.concatenate([known, uniq[new]])
            answers = np.concatenate([answers, got])
            order = np.argsort(known, kind="stable")
            known, answers = known[order], answers[order]
            self.cache[where] = (known, answers)
        return answers[np.searchsorted(known, keys)]


# ------------------------------------------------------------------------- the table
def accuracy_rows(protocols, tasks, tally, rounds, alpha, common, exact) -> list[dict]:
    """The accuracy rows (measured against exact, with tolerances) and the paired differences
    with the first protocol, the table's false-failure probability ``alpha`` split over them
    (shared by the one-round and the interactive broadcasts)."""
    k = tasks[0].parties
    n_recv = k + 1
    alpha_row = alpha / ((2 * len(protocols) - 1) * n_recv)  # accuracy rows and paired differences
    rows = []
    for q, p in enumerate(protocols):
        for i in range(n_recv):
            who = _who(i, k)
            mean = tally.total[q, i] / rounds
            var = max(tally.squares[q, i] / rounds - mean**2, 0.0) * rounds / max(rounds - 1, 1)
            theory = float(exact[(p.name, who)])
            rows.append(
                {
                    **common,
                    "protocol": p.name,
                    "party": who,
                    "role": _role(who),
                    "eps": float(p.eps[i]) if i < k else math.nan,
                    "delta": float(p.delta[i]) if i < k else math.nan,
                    "quantity": "accuracy",
                    "estimate": mean,
                    "std_error": math.sqrt(var / rounds),
                    "tolerance": mean_tolerance(tasks[i].gain, theory, rounds, alpha_row),
                    "alpha": alpha_row,
                    "theory": theory,
                }
            )
    # paired comparisons (common random numbers): gain of protocol q minus gain of protocol 0, same rounds
    for q, p in enumerate(protocols[1:], start=1):
        base = protocols[0]
        for i in range(n_recv):
            who = _who(i, k)
            spread = float(tasks[i].gain.max() - tasks[i].gain.min())
            mean = (tally.total[q, i] - tally.total[0, i]) / rounds
            second = (tally.squares[q, i] + tally.squares[0, i] - 2 * tally.cross[q, i]) / rounds
            var = max(second - mean**2, 0.0) * rounds / max(rounds - 1, 1)
            theory = float(exact[(p.name, who)] - exact[(base.name, who)])
            rows.append(
                {
                    **common,
                    "protocol": f"{p.name} - {base.name}",
                    "party": who,
                    "role": _role(who),
                    "eps": float(p.eps[i]) if i < k else math.nan,
                    "delta": float(p.delta[i]) if i < k else math.nan,
                    "quantity": "accuracy_difference",
                    "estimate": mean,
                    "std_error": math.sqrt(var / rounds),
                    "tolerance": paired_tolerance(2 * spread, var, rounds, alpha_row),
                    "alpha": alpha_row,
                    "theory": theory,
                }
            )
    return rows


def _table(protocols, tasks, tally, delivered, rounds, channel, alpha, replication, exact) -> pd.DataFrame:
    k = tasks[0].parties
    n_recv = k + 1
    common = {"replication": replication, "loss": channel.loss, "rounds": rounds}
    rows = accuracy_rows(protocols, tasks, tally, rounds, alpha, common, exact)
    lat, loss, deadline, m = channel.latency, channel.loss, channel.deadline, channel.missing
    for i in range(n_recv):
        who = _who(i, k)
        sample = np.concatenate(tally.delay_sample[i])
        others = k if i == k else k - 1  # a party waits for the k - 1 other messages
        measured = {
            "completion_delay_mean": tally.delay_sum[i] / tally.delay_count[i],
            "completion_delay_p50": np.quantile(sample, 0.5),
            "completion_delay_p99": np.quantile(sample, 0.99),
            "completion_delay_max": tally.delay_max[i],
        }
        theory = {
            "completion_delay_mean": completion_mean(lat, others, loss, deadline),
            "completion_delay_p50": completion_quantile(lat, others, 0.5, loss, deadline),
            "completion_delay_p99": completion_quantile(lat, others, 0.99, loss, deadline),
            "completion_delay_max": math.nan,
        }
        counts = [("messages_delivered", float(delivered[i]), float(rounds * k))]
        if m > 0:  # messages heard in time: the own one always, the others with probability 1 - m
            expect = rounds * ((1 if i < k else 0) + others * (1.0 - m))
            counts.append(("messages_heard", float(tally.heard[i]), float(expect)))
        rows += delay_rows(common, "network", who, measured, theory, counts)
    df = pd.DataFrame(rows)
    df["within_tolerance"] = np.where(
        df["tolerance"].notna() & df["theory"].notna(), (df["estimate"] - df["theory"]).abs() <= df["tolerance"], pd.NA
    )
    return df.reindex(columns=RESULT_COLUMNS)


def delay_rows(
    common: dict[str, Any],
    protocol: str,
    who: int,
    measured: dict[str, float],
    theory: dict[str, float],
    counts: list[tuple[str, float, float]],
) -> list[dict[str, Any]]:
    """One receiver's completion-delay rows (:data:`LATENCY_QUANTITIES`, measured beside
    theory), then its ``counts`` rows (quantity, measured, expected: messages delivered,
    heard), shared by the one-round and the interactive broadcasts."""
    base = {
        **common,
        "protocol": protocol,
        "party": who,
        "role": _role(who),
        "eps": math.nan,
        "delta": math.nan,
        "std_error": math.nan,
        "tolerance": math.nan,
        "alpha": math.nan,
    }
    rows = [
        {**base, "quantity": name, "estimate": float(measured[name]), "theory": theory[name]}
        for name in LATENCY_QUANTITIES
    ]
    rows += [{**base, "quantity": q, "estimate": est, "theory": exp} for q, est, exp in counts]
    return rows


def _role(who: int) -> str:
    return "observer" if who == OBSERVER else "party"


# ------------------------------------------------------------------------- completion delays
def expected_max_latency(latency: Latency, n: int) -> float:
    """``E[max of n i.i.d. latencies]`` (0 for n = 0): :meth:`Latency.expected_max`."""
    return latency.expected_max(n)


def max_latency_quantile(latency: Latency, n: int, p: float) -> float:
    """The p-quantile of the max of n i.i.d. latencies: ``F^-1(p^(1/n))``."""
    if n == 0:
        return 0.0
    return float(latency.quantile(p ** (1.0 / n)))


def completion_cdf(
    latency: Latency, n: int, t: ArrayLike, loss: float = 0.0, deadline: float | None = None
) -> NDArray[np.float64]:
    """``P(T <= t)`` for the completion delay T of a receiver awaiting ``n`` messages:
    ``F(t)^n`` without a deadline; with a deadline D, ``((1 - loss) F(t))^n`` for t < D and
    1 from D on (T = D as soon as one message is missing)."""
    t = np.asarray(t, dtype=np.float64)
    if n == 0:
        return (t >= 0).astype(np.float64)
    f = np.asarray(latency.cdf(np.maximum(t, 0.0)), dtype=np.float64) * (t >= 0)
    if deadline is None:
        return f**n
    return np.where(t >= deadline, 1.0, ((1.0 - loss) * f) ** n)


def completion_mean(latency: Latency, n: int, loss: float = 0.0, deadline: float | None = None) -> float:
    """``E[T]``: ``E[max of n latencies]`` without a deadline; with one,
    ``int_0^D (1 - ((1 - loss) F(t))^n) dt`` (numerical quadrature)."""
    if n == 0:
        return 0.0
    if deadline is None:
        return expected_max_latency(latency, n)

    def tail(t: float) -> float:
        return float(1.0 - ((1.0 - loss) * float(latency.cdf(t))) ** n)

    points = [float(latency.quantile(p)) for p in (0.01, 0.5, 0.99)]
    points = sorted({min(max(x, 0.0), float(deadline)) for x in points} - {0.0, float(deadline)})
    value, _ = quad(tail, 0.0, float(deadline), points=points or None, limit=200, epsabs=1e-13, epsrel=1e-11)
    return float(value)


def completion_quantile(latency: Latency, n: int, p: float, loss: float = 0.0, deadline: float | None = None) -> float:
    """The p-quantile of T: ``F^-1(p^(1/n))`` without a deadline; with one,
    ``F^-1(p^(1/n) / (1 - loss))`` when that is below D, else D."""
    if n == 0:
        return 0.0
    if deadline is None:
        return max_latency_quantile(latency, n, p)
    target = p ** (1.0 / n) / (1.0 - loss) if loss < 1 else math.inf
    if target < 1.0:
        t = float(latency.quantile(target))
        if t < deadline:
            return t
    return float(deadline)


# ------------------------------------------------------------------------- exact-only values of a run
#: The exact-only quantities a run's table carries (estimate empty): the report's tables of
#: worst-case accuracy, honest against deviating parties, and accuracy against loss rate.
EXACT_QUANTITIES = ("honest_accuracy", "worst_case_accuracy", "perfect_channel_accuracy", "channel_accuracy")


@dataclass(frozen=True)
class ExactTables:
    """What a multi-party run computes once, in the calling process (``Study.shared``):
    the exact value of every accuracy row keyed by (protocol name, receiver), and the
    exact-only rows of the results table (:data:`EXACT_QUANTITIES`)."""

    exact: dict[tuple[str, int], float]
    rows: list[dict]

    def frame(self, replication: int) -> pd.DataFrame:
        df = pd.DataFrame(self.rows, columns=[c for c in RESULT_COLUMNS if c != "replication"])
        df.insert(0, "replication", replication)
        return df.reindex(columns=RESULT_COLUMNS)


#: CPU seconds of HiGHS per constraint coefficient of a worst-case linear program (4.2
#: million coefficients, the universal protocol's at k = 7, took 17 to 29 s on one core:
#: the estimate is rather high than low).
SECONDS_PER_LP_COEFFICIENT = 7e-6


def _worst_case_key(q: int, task: Task, seen: Protocol, i: int, k: int) -> tuple:
    """What a receiver's worst-case linear program depends on: for a symmetric task, its own
    matrix (equal parties share one program), else the protocol and the receiver."""
    return (q, id(task), seen.matrices[i].tobytes() if i < k else b"observer") if task.is_symmetric else (q, i)


def worst_case_seconds(scenario) -> float:
    """About how long :func:`exact_tables` spends in the worst-case linear programs of a
    built multi-party scenario (one core): each distinct program within reach, by its size."""
    sc, k = scenario, scenario.spec.parties.k
    tasks, programs = list(sc.tasks), {}
    for q, p in enumerate(sc.protocols):
        seen = faced_protocol(p, sc.missing)
        for i in range(k + 1):
            who, t = _who(i, k), tasks[i]
            if not worst_case_reach(seen, t, who):
                programs.setdefault(_worst_case_key(q, t, seen, i, k), lp_coefficients(seen, t, who))
    return sum(programs.values()) * SECONDS_PER_LP_COEFFICIENT


def exact_tables(scenario) -> ExactTables:
    """The exact values of a built multi-party scenario (:class:`ExactTables`): each
    receiver's expected gain under the scenario's channel and deviations; with everyone
    honest; the worst-case accuracy (the linear program of Kairouz et al. 2015, eq. 12) of
    the protocol through the channel where within reach (NaN otherwise); and, when the
    scenario has a channel, the expected gain at every rate of its loss grid and with a
    perfect channel (no loss, no deadline)."""
    sc = scenario
    k = sc.spec.parties.k
    tasks, p_one, m = list(sc.tasks), sc.p_one, sc.missing
    exact: dict[tuple[str, int], float] = {}
    rows: list[dict] = []
    grid = sc.loss_grid
    probs = bit_probabilities(p_one, k)
    memo: dict = {}
    worst_memo: dict = {}
    for q, (p, a) in enumerate(zip(sc.protocols, sc.actual)):
        seen = faced_protocol(p, m)
        for i in range(k + 1):
            who, t = _who(i, k), tasks[i]
            honest_key = q + len(sc.protocols)  # memo slots: as run, and everyone honest

            def value(actual: Protocol, missing: float, q=q, p=p, a=a, t=t, i=i, honest_key=honest_key) -> float:
                return _exact_memo(memo, q if actual is a else honest_key, p, actual, t, i, probs, missing)

            base = {
                "protocol": p.name,
                "party": who,
                "role": _role(who),
                "eps": float(p.eps[i]) if i < k else math.nan,
                "delta": float(p.delta[i]) if i < k else math.nan,
                "estimate": math.nan,
                "std_error": math.nan,
                "tolerance": math.nan,
                "alpha": math.nan,
                "rounds": math.nan,
                "within_tolerance": pd.NA,
            }
            exact[(p.name, who)] = own = value(a, m)
            honest = own if a is p else value(p, m)
            rows.append({**base, "quantity": "honest_accuracy", "theory": honest, "loss": sc.loss})
            worst = math.nan
            if not worst_case_reach(seen, t, who):
                key = _worst_case_key(q, t, seen, i, k)
                if key not in worst_memo:
                    worst_memo[key] = float(worst_case(seen, t, who)[0])
                worst = worst_memo[key]
            rows.append({**base, "quantity": "worst_case_accuracy", "theory": worst, "loss": sc.loss})
            if grid:
                rows.append({**base, "quantity": "perfect_channel_accuracy", "theory": value(a, 0.0), "loss": 0.0})
                for rate in grid:
                    got = own if rate == sc.loss else value(a, sc.missing_at(rate))
                    rows.append({**base, "quantity": "channel_accuracy", "theory": got, "loss": float(rate)})
    return ExactTables(exact, rows)


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


__all__ = [
    "EXACT_QUANTITIES",
    "Broadcast",
    "accuracy_rows",
    "BroadcastResult",
    "Channel",
    "ExactTables",
    "exact_tables",
    "Trace",
    "channel_missing",
    "completion_cdf",
    "completion_mean",
    "completion_quantile",
    "exact_value",
    "exact_values",
    "expected_max_latency",
    "faced_protocol",
    "max_latency_quantile",
    "simulate_broadcast",
]
