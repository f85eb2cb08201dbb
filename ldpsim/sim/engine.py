"""The SimPy model of one replication: cohorts of clients, a network, a server, an analyst.

Time is cut into ticks of width ``scenario.tick``. The clients who arrive during one tick
form one **cohort**, a single SimPy event carrying a numpy batch (individual mode) or
just counts (aggregate mode); no SimPy process ever stands for one client.

Processes, composed through events:

- ``arrivals``: at the start of each tick with arrivals, draws the cohort (true values,
  privatised reports, exact arrival times) and hands it to the network; the true values
  come from the population's law, or from its rows of a table (:mod:`ldpsim.sim.table`:
  the cohort's own rows when the table is used as is, rows drawn with replacement when it
  is resampled);
- ``network.deliveries``: the network drops each report with the loss probability, adds
  its latency and files it under the tick in which it reaches the server; at the end of
  each tick it delivers that tick's reports to the server in time order, then fires
  ``tick_done``;
- ``analyst``: waits on ``tick_done`` and runs the tasks at the checkpoints that are due;
  checkpoints every m reports fire inside the server at the exact report.

Exactness. Individual mode draws every arrival and delivery time, so a checkpoint at time
T sees exactly the reports delivered by T, whatever the tick. Aggregate mode draws only
counts: input counts (multinomial), output counts (``sample_counts``), losses (binomial
thinning) and the split over delivery ticks (multinomial with the exact probabilities of
``Latency.delivered_by``), so counts at tick ends have exactly the law of individual mode.
For frequency oracles whose reports are not one symbol (unary encoding and the like), the
clients themselves are thinned and split by input, and the statistic of each delivered
group is drawn on delivery (``sample_statistic``): the same law, since each report depends
only on its client's input.
With several questions (``[[questions]]``) aggregate mode counts respondents by type (a
distinct row of the table, or all alike without one): the types are thinned and split
over delivery ticks, and on delivery each question's statistic is drawn from its answer
counts (a cross-tabulated pair's from the product mechanism on the answer-pair counts).
With privacy tiers each answer's clients are split over the tiers (multinomial) and each
tier's output counts drawn from its own mechanism.
Ticks divide the checkpoint interval, so periodic checkpoints are exact in both modes;
checkpoints every m reports take the exact m-th report in individual mode, and in
aggregate mode the exact counts of the first m reports (a multivariate hypergeometric
split of the tick) stamped at the end of the tick in which the m-th report arrives.

The tick therefore trades time resolution for speed only in what the SimPy clock sees
(one event per cohort and per delivery tick) and, in aggregate mode, in the time stamps
of report-count checkpoints.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from ldpsim._deprecate import renamed
from ldpsim._rng import block_sequence
from ldpsim.errors import LdpSimError
from ldpsim.report.survey_tables import RESULT_COLUMNS
from ldpsim.sim.association import GroupTermsTask, PairedTermsTask
from ldpsim.sim.attackers import Campaign
from ldpsim.sim.design import DesignAccumulator
from ldpsim.sim.scenario.survey import HYPERGEOMETRIC_LIMIT, Scenario, arrival_horizon
from ldpsim.sim.scenario.survey_specs import AllAtOnceSpec, PoissonSpec, WavesSpec
from ldpsim.sim.servers import Server
from ldpsim.sim.tasks import (
    Checkpoint,
    CrosstabTask,
    NonresponseTask,
    Task,
    TaskContext,
    TierTask,
    confidence_of,
    make_tasks,
)


class Timeline:
    """Tick arithmetic: tick j covers (j dt, (j+1) dt] (the last one ends at ``end``), tick 0
    also holds time 0. A time within ``EDGE_TOL`` ticks of an edge counts as at the edge, in
    both modes, so floating-point sums such as 0.1 + 0.2 land where they are meant to."""

    EDGE_TOL = 1e-9

    def __init__(self, tick: float, end: float) -> None:
        self.dt = tick
        self.n = int(math.ceil(end / tick - self.EDGE_TOL))
        self.end = end

    def edge(self, j: int | NDArray) -> Any:
        return (
            np.minimum(np.asarray(j) * self.dt, self.end) if isinstance(j, np.ndarray) else min(j * self.dt, self.end)
        )

    def index(self, t: NDArray[np.float64]) -> NDArray[np.int64]:
        """Tick of each time; ``n`` (past the last tick) for times after the end."""
        t = np.asarray(t, dtype=np.float64)
        with np.errstate(over="ignore"):  # a time far past the end over a tiny tick is inf, clipped next
            q = np.clip(np.ceil(t / self.dt - self.EDGE_TOL), 0, self.n + 1)  # finite before the cast
        j = np.maximum(q.astype(np.int64) - 1, 0)
        return np.where(t > self.end + self.EDGE_TOL * self.dt, self.n, np.minimum(j, self.n - 1))


class Cohort:
    """Clients arriving during one tick: ``size`` clients with arrival times uniform on
    ``[start, stop]`` (a point when equal); ``first`` numbers its first client (clients are
    numbered in the order of the plan, which is how a table's rows are handed out)."""

    __slots__ = ("tick", "size", "start", "stop", "first")

    def __init__(self, tick: int, size: int, start: float, stop: float) -> None:
        self.tick, self.size, self.start, self.stop = tick, size, start, stop
        self.first = 0


def plan_cohorts(scenario: Scenario, timeline: Timeline, rng: np.random.Generator) -> list[Cohort]:
    """Sizes and time windows of the cohorts (the arrival process, drawn exactly)."""
    cohorts = _plan(scenario, timeline, rng)
    first = 0
    for cohort in cohorts:
        cohort.first = first
        first += cohort.size
    return cohorts


def _plan(scenario: Scenario, timeline: Timeline, rng: np.random.Generator) -> list[Cohort]:
    spec = scenario.spec
    n = scenario.size
    arr = spec.arrivals
    if isinstance(arr, AllAtOnceSpec):
        return [Cohort(int(timeline.index(np.array([arr.at]))[0]), n, arr.at, arr.at)]
    if isinstance(arr, WavesSpec):
        sizes = _largest_remainder(n, np.asarray(arr.fractions))
        ticks = timeline.index(np.asarray(arr.times))
        return [Cohort(int(j), int(s), t, t) for j, s, t in zip(ticks, sizes, arr.times) if s > 0]
    assert isinstance(arr, PoissonSpec)
    horizon = arrival_horizon(spec, n)
    # Poisson process conditioned on n arrivals in [0, horizon]: i.i.d. uniform times, so the
    # counts per tick are multinomial with the tick's share of [0, horizon]. Arrivals after
    # the end form one last cohort (never delivered), so the plan has at most n ticks + 1.
    ratio = horizon / timeline.dt  # inf when the arrivals outlast a tiny end by far
    last = timeline.n if not ratio < timeline.n else int(math.ceil(ratio - 1e-9))
    edges = np.minimum(np.arange(last + 1) * timeline.dt, horizon)
    shares = np.append(np.diff(edges), horizon - edges[-1]) / horizon
    sizes = rng.multinomial(n, np.clip(shares, 0.0, None) / np.clip(shares, 0.0, None).sum())
    cohorts = [Cohort(j, int(sizes[j]), float(edges[j]), float(edges[j + 1])) for j in range(last) if sizes[j] > 0]
    if sizes[-1] > 0:
        cohorts.append(Cohort(timeline.n, int(sizes[-1]), float(edges[-1]), horizon))
    return cohorts


def _largest_remainder(n: int, fractions: NDArray[np.float64]) -> NDArray[np.int64]:
    raw = n * fractions / fractions.sum()
    sizes = np.floor(raw).astype(np.int64)
    short = n - int(sizes.sum())
    sizes[np.argsort(-(raw - sizes), kind="stable")[:short]] += 1
    return sizes


class Replication:
    """One replication of a scenario, as a SimPy model."""

    @renamed(old="entropy", new="seed", since="0.1", removed_in="0.2")
    def __init__(self, scenario: Scenario, index: int, seed: int) -> None:
        self.scenario = scenario
        self.index = index
        spec = scenario.spec
        self.individual = spec.simulation.mode == "individual"
        seq = np.random.SeedSequence(seed, spawn_key=(index,))
        plan_seq, self._cohort_seq, task_seq, split_seq, statistic_seq = seq.spawn(5)
        # fake respondents: their own stream (the sixth child), so honest draws are unchanged
        attack_seq = seq.spawn(1)[0] if scenario.attackers else None
        self.timeline = Timeline(scenario.tick, scenario.end)
        self.cohorts = plan_cohorts(scenario, self.timeline, np.random.default_rng(plan_seq))
        # one mechanism, or several compared on the same respondents, arrivals and network
        # (common random numbers): each has its server and its own analyst tasks
        self.mechs = [m for _, m in scenario.mechanisms]
        self.mech = self.mechs[0]
        self.questions = scenario.questions
        if self.questions is None:
            self.servers = [Server(m, spec.server.keep_reports, spec.server.max_reports) for m in self.mechs]
        else:  # each question's kind says what its server keeps
            self.servers = [
                q.server(m, spec.server.keep_reports, spec.server.max_reports)
                for q, m in zip(self.questions.questions, self.mechs)
            ]
        self.server = self.servers[0]
        self.tasks: list[tuple[int, Task]] = []
        # privacy tiers: one server per tier, and one task combining them (no per-tier tasks)
        self.tiers = scenario.tiers
        self.tier_task = (
            None
            if self.tiers is None
            else TierTask(self.tiers.mechanisms, self.tiers.eps, scenario.labels, scenario.prior, self.tiers.confidence)
        )
        # several questions: one server per question, its tasks (from its kind) named "question:task"
        for j, (name, mech) in enumerate(() if self.tiers is not None else scenario.mechanisms):
            if self.questions is not None:
                q = self.questions.questions[j]
                self.tasks.extend((j, t) for t in q.tasks(name, mech, spec, self.questions.expected_reports()))
                continue
            context = TaskContext(mech, scenario.labels, scenario.prior, spec.simulation.mode, scenario.size)
            for task in make_tasks(spec.analyst.tasks, context):
                if scenario.compared:
                    task.name = f"{task.name}@{name}"
                self.tasks.append((j, task))
            if scenario.loss is not None:  # answer-dependent loss: its exact bias, and the reweighting
                nr = NonresponseTask(
                    context, 1.0 - scenario.loss, spec.analyst.reweight, confidence_of(spec.analyst.tasks)
                )
                if scenario.compared:
                    nr.name = f"{nr.name}@{name}"
                self.tasks.append((j, nr))
        for (_, task), child in zip(self.tasks, task_seq.spawn(len(self.tasks))):
            task.start(np.random.default_rng(child))
        # [analyst] crosstabs (split): per pair of questions, the counts of the pairs of output
        # codes received and of the same respondents' true answer pairs
        self.crosstabs: list[tuple[Any, CrosstabTask, NDArray[np.int64], NDArray[np.int64]]] = []
        for xt in self.questions.crosstabs if self.questions is not None else ():
            qa, qb = self.questions.questions[xt.first], self.questions.questions[xt.second]
            m = (self.mechs[xt.first].output_size, self.mechs[xt.second].output_size)
            task = CrosstabTask(
                xt.name, xt.mechanism, xt.truth, qa.labels, qb.labels, xt.alpha, confidence_of(spec.analyst.tasks), m
            )
            self.crosstabs.append((xt, task, np.zeros(m[0] * m[1], np.int64), np.zeros(qa.k * qb.k, np.int64)))
        # [analyst] crosstabs of other pairs (their paired terms' sums) and [analyst] homogeneity
        qs = self.questions
        self.paired = (
            []
            if qs is None
            else [
                PairedTermsTask(xt.name, xt.first, xt.second, qs.questions, self.mechs, xt.alpha, qs.rows is not None)
                for xt in qs.paired
            ]
        )
        self.groups = [] if qs is None else [GroupTermsTask(h, qs.questions, self.mechs) for h in qs.homogeneity]
        for group, child in zip(self.groups, task_seq.spawn(len(self.groups))):  # after the tasks' streams
            group.start(np.random.default_rng(child))
        # questions with item non-response (questions[i].loss): their indices, in order
        self._item_loss = (
            [] if self.questions is None else [j for j, q in enumerate(self.questions.questions) if q.loss is not None]
        )
        # [population] weight, strata, psu: per question its design sums (each respondent's
        # table row travels beside their reports)
        design = None if self.questions is None else self.questions.design
        self.design = (
            []
            if design is None
            else [
                DesignAccumulator(name, design, q, m, confidence_of(spec.analyst.tasks))
                for (name, m), q in zip(scenario.mechanisms, self.questions.questions)  # type: ignore[union-attr]
            ]
        )
        # each respondent's table row travels last beside their reports (design, homogeneity,
        # the true answers of the paired cross-tabulations)
        self._rows_travel = qs is not None and qs.rows is not None and bool(self.design or self.groups or self.paired)
        self.rows: list[dict[str, Any]] = []
        self.sent = self.lost = self.in_flight = 0
        self.messages = 0  # reports received (a respondent's answers to several questions travel as one)
        self._buckets: dict[int, list] = defaultdict(list)
        self._next_tick = 0  # the first tick not yet delivered
        cp = spec.analyst.checkpoints
        self._every_reports = cp.every_reports
        self._next_report_cp = cp.every_reports or 0
        self._every = cp.every
        self._checkpoints = 0
        self._split_rng = np.random.default_rng(split_seq)
        # aggregate mode: a finite mechanism's reports are symbols, so its output counts are
        # thinned and split over delivery ticks; other oracles' clients are thinned and split
        # by input, and the statistic of each delivered group is drawn when it arrives
        grouped = self.mechs if self.tiers is not None else [self.mech]
        self._split_outputs = not scenario.compared and all(m.output_size is not None for m in grouped)
        # aggregate mode with tiers: where each tier's groups start in a cohort's group vector
        if self.tiers is not None:
            sizes = [m.statistic_size if self._split_outputs else m.k for m in self.mechs]
            self._tier_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self._statistic_rngs = [np.random.default_rng(c) for c in statistic_seq.spawn(len(self.mechs))]
        # fake respondents: one campaign per attacked question (its server), each attacker's
        # reports from its own stream
        self.campaigns: list[tuple[int, Campaign]] = []
        if attack_seq is not None:
            by_question: dict[int, list[Any]] = defaultdict(list)
            for att in scenario.attackers:
                by_question[att.question].append(att)
            seqs = attack_seq.spawn(len(by_question))
            for (j, group), child in zip(sorted(by_question.items()), seqs):
                q = None if self.questions is None else self.questions.questions[j]
                self.campaigns.append(
                    (
                        j,
                        Campaign(
                            tuple(group),
                            self.mechs[j],
                            scenario.prior if q is None else q.attack_prior(spec.budget.runs_as),
                            scenario.latency,
                            self.timeline,
                            child,
                            spec.server.keep_reports and self.individual,
                            _looks(scenario.end, spec.analyst.checkpoints.every),
                        ),
                    )
                )
        if self.questions is not None and not self.individual:
            # aggregate mode with questions: the cross-tabulations' joint reports, and the
            # one_random split of the respondents among the questions, from their own streams
            self._pair_rngs = [np.random.default_rng(c) for c in statistic_seq.spawn(len(self.crosstabs))]
            self._pick_rng = np.random.default_rng(statistic_seq.spawn(1)[0])

    # ----------------------------------------------------------------- SimPy processes
    def run(self) -> pd.DataFrame:
        """The replication's rows. In individual mode, when each tick's statistic is all the
        server and the analyst need (:meth:`counts_suffice`), every block is sent first and
        folded into per-tick counts at once, as one shard (:meth:`send_blocks`), then the
        clock runs: the same rows as the live model (:meth:`run_live`, tested byte for
        byte) at about half the time, since no report is held until its tick."""
        if self.individual and self.counts_suffice():
            shard = self.send_blocks(0, int(self._block_starts()[-1]))
            self.sent = self.lost = self.in_flight = 0  # counted again from the shard
            return self.run_merged([shard])
        return self.run_live()

    def run_live(self) -> pd.DataFrame:
        """The replication as the SimPy model of clients arriving, a network and a server."""
        env = simpy.Environment()
        self.env = env
        self.tick_done = env.event()
        env.process(self._arrivals(env))
        env.process(self._deliveries(env))
        env.process(self._analyst(env))
        env.run()
        self._engine_rows()
        return pd.DataFrame(self.rows, columns=RESULT_COLUMNS)

    def _arrivals(self, env: simpy.Environment):
        seqs = self._cohort_seq.spawn(len(self.cohorts))
        for cohort, seq in zip(self.cohorts, seqs):
            start = cohort.tick * self.timeline.dt
            if start > env.now:
                yield env.timeout(start - env.now)
            self._send(cohort, np.random.default_rng(seq), seq)

    # ----------------------------------------------------------------- shards (individual mode)
    def _block_starts(self) -> NDArray[np.int64]:
        """Index of the first block of every cohort, and the number of blocks at the end."""
        batch = self.scenario.spec.simulation.batch_size
        per = np.array([-(-c.size // batch) for c in self.cohorts], np.int64)
        return np.concatenate([[0], np.cumsum(per)]).astype(np.int64)

    def blocks(self, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
        """The units of randomness of individual mode, in sending order: (cohort, batch) for
        every batch of ``simulation.batch_size`` clients of every cohort (those numbered
        ``lo .. hi - 1``). Each has its own random stream (:func:`_block_streams`), so any
        contiguous run of blocks can be simulated apart from the others (a shard) with the
        same draws."""
        starts = self._block_starts()
        hi = int(starts[-1]) if hi is None else hi
        g = np.arange(lo, hi, dtype=np.int64)
        c = np.searchsorted(starts, g, side="right") - 1
        return list(zip(c.tolist(), (g - starts[c]).tolist()))

    def block_sizes(self) -> NDArray[np.int64]:
        """Clients of every block, in order (one array; 8 bytes a block)."""
        batch = self.scenario.spec.simulation.batch_size
        starts = self._block_starts()
        sizes = np.full(int(starts[-1]), batch, np.int64)
        last = starts[1:] - 1  # each cohort's last block holds what is left
        sizes[last[np.diff(starts) > 0]] = [
            c.size - (-(-c.size // batch) - 1) * batch for c in self.cohorts if c.size > 0
        ]
        return sizes

    def counts_suffice(self) -> bool:
        """Whether the server and the analyst need only each tick's statistic of the reports
        delivered (then a shard sends counts back, not reports): one mechanism, one question,
        no tiers, no stored reports, no checkpoints every m reports, no task reading reports
        one by one."""
        spec = self.scenario.spec
        return (
            self.questions is None
            and not self.campaigns
            and self.tiers is None
            and not self.scenario.compared
            and not spec.server.keep_reports
            and not self._every_reports
            and not self.crosstabs
            and not any(task.streams for _, task in self.tasks)
        )

    def send_blocks(self, lo: int, hi: int) -> "Shard":
        """Blocks ``lo .. hi - 1`` sent through the network, without the SimPy clock: what
        reached the server in each tick (reports in sending order, or their statistic), and
        the clients sent, lost and still in flight at the end."""
        counts = self.counts_suffice()
        seqs = self._cohort_seq.spawn(len(self.cohorts))
        batch = self.scenario.spec.simulation.batch_size
        shard = Shard(counts)
        for c, b in self.blocks(lo, hi):
            cohort = self.cohorts[c]
            first = b * batch
            rng, privacy, tier_rng = _block_streams(
                seqs[c], b, len(self.mechs) if self.scenario.compared else 0, self.tiers is not None
            )
            self.sent += min(batch, cohort.size - first)
            self._send_individual(cohort, cohort.first + first, min(batch, cohort.size - first), rng, privacy, tier_rng)
            for tick, parts in self._buckets.items():
                shard.add(tick, parts, self.mech if counts else None)
            self._buckets.clear()
        shard.sent, shard.lost, shard.in_flight = self.sent, self.lost, self.in_flight
        return shard.finish()

    def run_merged(self, shards: list["Shard"]) -> pd.DataFrame:
        """The replication from its shards (in block order): what each tick delivers is the
        shards' deliveries of that tick put together, then the clock, the server and the
        analyst run exactly as in :meth:`run`."""
        for shard in shards:
            self.sent += shard.sent
            self.lost += shard.lost
            self.in_flight += shard.in_flight
            for tick, parts in shard.ticks.items():
                self._buckets[tick].extend(parts)
        env = simpy.Environment()
        self.env = env
        self.tick_done = env.event()
        env.process(self._deliveries(env))
        env.process(self._analyst(env))
        env.run()
        self._engine_rows()
        return pd.DataFrame(self.rows, columns=RESULT_COLUMNS)

    def _deliveries(self, env: simpy.Environment):
        for j in range(self.timeline.n):
            yield env.timeout(self.timeline.edge(j + 1) - env.now)
            self._deliver(j)
            for q, campaign in self.campaigns:  # fake reports arrive after the tick's honest ones
                campaign.deliver(j, self.servers[q], self.individual, lambda t, y, q=q: self._observe(q, t, y))
                campaign.tick_end(self.servers[q], float(self.timeline.edge(j + 1)))
            self._next_tick = j + 1
            done, self.tick_done = self.tick_done, env.event()
            done.succeed(j)

    def _analyst(self, env: simpy.Environment):
        last = self.timeline.n - 1
        while True:
            j = yield self.tick_done
            t = self.timeline.edge(j + 1)
            if j == last:
                self._checkpoint(t, "end")
                return
            if self._every is not None and _is_multiple(t, self._every):
                self._checkpoint(t, "every")

    # ----------------------------------------------------------------- network
    def _send(self, cohort: Cohort, rng: np.random.Generator, seq: np.random.SeedSequence) -> None:
        self.sent += cohort.size
        if self.individual:
            batch = self.scenario.spec.simulation.batch_size
            compared = len(self.mechs) if self.scenario.compared else 0
            for b, first in enumerate(range(0, cohort.size, batch)):
                streams = _block_streams(seq, b, compared, self.tiers is not None, rng)
                self._send_individual(cohort, cohort.first + first, min(batch, cohort.size - first), *streams)
        else:
            self._send_aggregate(
                cohort, rng, np.random.default_rng(seq.spawn(1)[0]) if self.tiers is not None else None
            )

    def _send_individual(
        self,
        cohort: Cohort,
        first: int,
        size: int,
        rng: np.random.Generator,
        privacy: list | None,
        tier_rng: np.random.Generator | None = None,
    ) -> None:
        """Clients ``first .. first + size - 1`` (of the cohort); ``tier_rng``: the stream of
        their privacy tiers (None without tiers)."""
        scenario = self.scenario
        if self.questions is not None:  # every question's reports, drawn from the cohort's stream
            answered, pick = self._answer(first, size, rng)
            y = np.arange(size)
        elif scenario.table is None:
            x = rng.choice(self.mech.k, size=size, p=scenario.prior)
        else:  # their rows of the table, or rows drawn with replacement
            x = scenario.table.inputs(first, size, rng)
        # one mechanism: its reports are drawn here, from the cohort's stream; compared ones
        # after the network's draws, so that respondents, times and losses are common
        if tier_rng is not None:  # each tier's mechanism privatises its own respondents
            answered = self._tiered(x, tier_rng, rng)
            pick = answered.pop()
            y = np.arange(size)
        elif self.questions is None:
            y = self.mech.privatize(x, rng) if privacy is None else np.arange(size)
        if cohort.stop > cohort.start:
            t = rng.uniform(cohort.start, cohort.stop, size)
        else:
            t = np.full(size, cohort.start)
        # answer-dependent loss: each client's own answer's probability (single question)
        kept = rng.random(size) >= (scenario.spec.network.loss if scenario.loss is None else scenario.loss[x])
        self.lost += int(size - np.count_nonzero(kept))
        t, y = t[kept], y[kept]
        t = t + scenario.latency.sample(t.size, rng)
        # never before the cohort's own tick, never into a tick already delivered
        j = np.maximum(self.timeline.index(t), max(cohort.tick, self._next_tick))
        late = j >= self.timeline.n
        self.in_flight += int(np.count_nonzero(late))
        j, t, y = j[~late], t[~late], y[~late]
        order = np.argsort(j, kind="stable")
        j, t, y = j[order], t[order], y[order]
        picks = None
        if self.questions is not None or tier_rng is not None:
            ys, picks = [r[y] for r in answered], (None if pick is None else pick[y])
        else:
            ys = [y] if privacy is None else [m.privatize(x[y], g) for m, g in zip(self.mechs, privacy)]
        ticks, starts = np.unique(j, return_index=True)
        for tick, a, b in zip(ticks.tolist(), starts.tolist(), list(starts[1:]) + [j.size]):
            self._buckets[tick].append((t[a:b], [yy[a:b] for yy in ys], None if picks is None else picks[a:b]))

    def _answer(
        self, first: int, size: int, rng: np.random.Generator
    ) -> tuple[list[NDArray], NDArray[np.int64] | None]:
        """Respondents ``first .. first + size - 1`` answer the questions: their answers (one
        table row each for all questions, or each question's law), the question each one
        answers under ``one_random`` (uniform, from the cohort's stream; None under
        ``split``), and each question's reports (placeholders where not answered)."""
        qs = self.questions
        if qs.rows is not None:
            rows = qs.row_indices(first, size, rng)
            xs = [q.answers(rows) for q in qs.questions]
        else:
            xs = [q.draw(size, rng) for q in qs.questions]
        pick = rng.integers(0, qs.count, size=size) if qs.strategy == "one_random" else None
        out = []
        for j, (mech, q, x) in enumerate(zip(self.mechs, qs.questions, xs)):
            if pick is None:
                out.append(q.privatize(mech, x, rng))
                continue
            chosen = pick == j
            part = q.privatize(mech, x[chosen], rng)
            full = np.zeros((size, *part.shape[1:]), dtype=part.dtype)
            full[chosen] = part
            out.append(full)
        for xt, _, _, _ in self.crosstabs:  # the true answer pairs travel with the reports (split only)
            out.append(xs[xt.first] * qs.questions[xt.second].k + xs[xt.second])
        for j in self._item_loss:  # item non-response: whether the message keeps question j's report
            out.append(rng.random(size) >= qs.questions[j].loss[xs[j]])
        if self._rows_travel:  # the respondents' rows (their weights, strata, PSUs and groups), last
            out.append(rows)
        return out, pick

    def _tiered(self, x: NDArray[np.int64], tier_rng: np.random.Generator, rng: np.random.Generator) -> list[NDArray]:
        """Privacy tiers, individual mode: each respondent's tier (one draw from the tier
        stream), then each tier's reports (placeholders for the other tiers' respondents);
        the tiers come last in the list."""
        tier = tier_rng.choice(len(self.mechs), size=x.size, p=self.tiers.shares)  # type: ignore[union-attr]
        out: list[NDArray] = []
        for t, mech in enumerate(self.mechs):
            chosen = tier == t
            part = mech.privatize(x[chosen], rng)
            full = np.zeros((x.size, *part.shape[1:]), dtype=part.dtype)
            full[chosen] = part
            out.append(full)
        out.append(tier)
        return out

    def _send_aggregate(
        self, cohort: Cohort, rng: np.random.Generator, tier_rng: np.random.Generator | None = None
    ) -> None:
        scenario = self.scenario
        if self.questions is not None:  # respondents by type: they travel, their reports are drawn on delivery
            groups = self.questions.type_counts(cohort.first, cohort.size, rng)
            survivors = rng.binomial(groups, 1.0 - scenario.spec.network.loss)
            self.lost += int(groups.sum() - survivors.sum())
            self._split_over_ticks(cohort, survivors, rng)
            return
        if scenario.table is None:
            inputs = rng.multinomial(cohort.size, scenario.prior)
        else:
            inputs = scenario.table.input_counts(cohort.first, cohort.size, rng)
        # the groups that travel: output symbols (finite mechanisms) or inputs (other oracles)
        if scenario.loss is not None:  # answer-dependent loss: thin each answer's clients, then privatise
            heard = rng.binomial(inputs, 1.0 - scenario.loss)
            self.lost += int(inputs.sum() - heard.sum())
            survivors = self.mech.sample_counts(heard, rng) if self._split_outputs else heard
        elif tier_rng is not None:  # privacy tiers: each answer's clients split over the tiers (multinomial)
            by_tier = tier_rng.multinomial(inputs, np.broadcast_to(self.tiers.shares, (inputs.size, len(self.mechs))))  # type: ignore[union-attr]
            outputs = np.concatenate(
                [
                    m.sample_counts(by_tier[:, t], rng) if self._split_outputs else by_tier[:, t]
                    for t, m in enumerate(self.mechs)
                ]
            )
            survivors = rng.binomial(outputs, 1.0 - scenario.spec.network.loss)
            self.lost += int(outputs.sum() - survivors.sum())
        else:
            outputs = self.mech.sample_counts(inputs, rng) if self._split_outputs else inputs
            survivors = rng.binomial(outputs, 1.0 - scenario.spec.network.loss)
            self.lost += int(outputs.sum() - survivors.sum())
        self._split_over_ticks(cohort, survivors, rng)

    def _split_over_ticks(self, cohort: Cohort, survivors: NDArray[np.int64], rng: np.random.Generator) -> None:
        """Split each group's survivors over the delivery ticks (the rest is still in flight)."""
        scenario = self.scenario
        first = max(cohort.tick, self._next_tick)
        edges = self.timeline.edge(np.arange(first + 1, self.timeline.n + 1))
        edges = edges + Timeline.EDGE_TOL * self.timeline.dt  # the same edge convention as individual mode
        by = scenario.latency.delivered_by(edges, cohort.start, cohort.stop)
        by = np.maximum.accumulate(by)
        probs = np.diff(np.concatenate([[0.0], by, [1.0]]))
        probs = np.clip(probs, 0.0, None)
        probs /= probs.sum()
        split = rng.multinomial(survivors, np.broadcast_to(probs, (survivors.size, probs.size)))
        self.in_flight += int(split[:, -1].sum())
        for offset in np.flatnonzero(split[:, :-1].sum(axis=0)).tolist():
            self._buckets[first + offset].append(split[:, offset])

    def _deliver(self, j: int) -> None:
        parts = self._buckets.pop(j, [])
        if not parts:
            return
        if isinstance(parts[0], Delivered):  # shards' statistics (counts_suffice): the same sums
            counts = np.sum([p.counts for p in parts], axis=0)
            reports = sum(p.reports for p in parts)
            self.messages += reports
            self.server.add_counts(counts, reports)
        elif self.individual:
            t = np.concatenate([p[0] for p in parts])
            order = np.argsort(t, kind="stable")
            ys = [np.concatenate([p[1][i] for p in parts])[order] for i in range(len(parts[0][1]))]
            picks = None if parts[0][2] is None else np.concatenate([p[2] for p in parts])[order]
            self._receive_individual(t[order], ys, picks)
        else:
            self._receive_counts(np.sum(parts, axis=0), self.timeline.edge(j + 1))

    # ----------------------------------------------------------------- server side
    def _receive_individual(
        self, t: NDArray[np.float64], ys: list[NDArray[np.int64]], picks: NDArray[np.int64] | None = None
    ) -> None:
        """Reports delivered in time order: one array per mechanism (or question), the same
        clients; ``picks``: the question each one answered (one_random), else None."""
        while self._every_reports and self.messages + len(t) >= self._next_report_cp:
            cut = self._next_report_cp - self.messages
            self._take(t[:cut], [y[:cut] for y in ys], None if picks is None else picks[:cut])
            self._checkpoint(float(t[cut - 1]), "every_reports")
            t, ys, picks = t[cut:], [y[cut:] for y in ys], None if picks is None else picks[cut:]
            self._next_report_cp += self._every_reports
        self._take(t, ys, picks)

    def _take(
        self, t: NDArray[np.float64], ys: list[NDArray[np.int64]], picks: NDArray[np.int64] | None = None
    ) -> None:
        if not len(t):
            return
        self.messages += len(t)
        # which respondents each question hears: None for all of them; under one_random those
        # who chose it (picks); with item non-response those who also kept its report
        masks: list[NDArray[np.bool_] | None] = [None] * len(self.servers)
        if picks is not None:
            masks = [picks == j for j in range(len(self.servers))]
        base = len(self.mechs) + len(self.crosstabs)
        for i, j in enumerate(self._item_loss):
            kept = ys[base + i]
            masks[j] = kept if masks[j] is None else masks[j] & kept
        stored = [s.stored for s in self.servers]
        for server, y, m in zip(self.servers, ys, masks):
            if m is None:
                server.add_reports(t, y)
            elif m.any():
                server.add_reports(t[m], y[m])
        for q, campaign in self.campaigns:
            campaign.mark_honest(self.servers[q].stored - stored[q])
        for j, task in self.tasks:
            m = masks[j]
            if m is None:
                task.observe(t, ys[j])
            elif m.any():
                task.observe(t[m], ys[j][m])
        for acc, y, m in zip(self.design, ys, masks):
            if m is None:
                acc.add(ys[-1], y)
            elif m.any():
                acc.add(ys[-1][m], y[m])
        rows = ys[-1] if self._rows_travel else None
        for group in self.groups:
            m = masks[group.question]
            if m is None:
                group.add(ys[group.question], rows)  # type: ignore[arg-type]
            elif m.any():
                group.add(ys[group.question][m], rows[m])  # type: ignore[index]
        if picks is None:  # split: the cross-tabulated questions have no item non-response
            self._pairs(ys)
            for pair in self.paired:
                pair.add(ys[pair.first], ys[pair.second], rows)

    def _observe(self, question: int, t: NDArray[np.float64], y: NDArray[Any]) -> None:
        """Fake reports the tasks of ``question`` see one by one (the analyst cannot tell)."""
        for j, task in self.tasks:
            if j == question:
                task.observe(t, y)

    def _pairs(self, ys: list[NDArray[np.int64]]) -> None:
        """The cross-tabulations' pairs of output codes and of true answers (split)."""
        count = len(self.mechs)
        for c, (xt, _, joint, true_joint) in enumerate(self.crosstabs):
            m_b = self.mechs[xt.second].output_size
            joint += np.bincount(ys[xt.first] * m_b + ys[xt.second], minlength=joint.size)
            true_joint += np.bincount(ys[count + c], minlength=true_joint.size)

    def _receive_counts(self, counts: NDArray[np.int64], t: float) -> None:
        """A tick's delivered groups (output counts, or input counts of the clients heard)."""
        counts = counts.astype(np.int64)
        while self._every_reports and self._heard() + int(counts.sum()) >= self._next_report_cp:
            cut = self._next_report_cp - self._heard()
            head = _hypergeometric_head(counts, cut, self._split_rng)
            self._add_group(head)
            counts = counts - head
            self._checkpoint(t, "every_reports")
            self._next_report_cp += self._every_reports
        self._add_group(counts)

    def _heard(self) -> int:
        """Reports received (aggregate mode): every tier's, with privacy tiers; the messages
        (respondents heard), with questions."""
        if self.questions is not None:
            return self.messages
        return self.server.n_received if self.tiers is None else sum(s.n_received for s in self.servers)

    def _add_respondents(self, counts: NDArray[np.int64]) -> None:
        """Aggregate mode with questions: ``counts`` respondents of each type delivered
        together. Under one_random they are first split among the questions (multinomial,
        equal shares). Each question's answer counts are sums over the types (without a
        table: its own law's multinomial); its statistic is drawn from its mechanism's
        aggregate law, independently of the other questions' (independent noise). A
        cross-tabulated pair's joint output counts come from the product mechanism on the
        answer-pair counts, and both questions' statistics are its margins."""
        qs = self.questions
        total = int(counts.sum())
        if total == 0:
            return
        self.messages += total
        if qs.strategy == "one_random":
            by_question = self._pick_rng.multinomial(counts, np.full((counts.size, qs.count), 1.0 / qs.count))
        else:
            by_question = np.broadcast_to(counts[:, None], (counts.size, qs.count))
        codes = qs.type_codes
        done = set()
        for (xt, _, joint, true_joint), rng in zip(self.crosstabs, self._pair_rngs):  # split only: every question
            a, b = xt.first, xt.second
            kb = qs.questions[b].k
            if codes is None:  # independent laws: the pairs are a multinomial over the product
                pairs = rng.multinomial(total, xt.truth.ravel())
            else:
                pairs = np.zeros(qs.questions[a].k * kb, np.int64)
                np.add.at(pairs, codes[:, a] * kb + codes[:, b], counts)
            out = xt.mechanism.sample_counts(pairs, rng)
            joint += out
            true_joint += pairs
            grid = out.reshape(self.mechs[a].output_size, self.mechs[b].output_size)
            self.servers[a].add_counts(grid.sum(axis=1), total)
            self.servers[b].add_counts(grid.sum(axis=0), total)
            done.update((a, b))
        for j, (server, mech, rng) in enumerate(zip(self.servers, self.mechs, self._statistic_rngs)):
            if j in done:
                continue
            heard = by_question[:, j]
            m = int(heard.sum())
            if m == 0:
                continue
            q = qs.questions[j]
            if codes is None:
                answers = rng.multinomial(m, q.prior)
            else:
                answers = np.zeros(q.k, np.int64)
                np.add.at(answers, codes[:, j], heard)
            if q.loss is not None:  # item non-response: each answer's reports thinned by its rate
                answers = rng.binomial(answers, 1.0 - q.loss)
                m = int(answers.sum())
                if m == 0:
                    continue
            server.add_counts(mech.sample_statistic(answers, rng), m)

    def _add_group(self, counts: NDArray[np.int64]) -> None:
        if self.questions is not None:
            self._add_respondents(counts)
            return
        if self.tiers is not None:  # each tier's part of the groups goes to its own server
            off = self._tier_offsets
            for t, (server, mech, rng) in enumerate(zip(self.servers, self.mechs, self._statistic_rngs)):
                part = counts[off[t] : off[t + 1]]
                stat = part if self._split_outputs else mech.sample_statistic(part, rng)
                server.add_counts(stat, int(part.sum()))
            return
        reports = int(counts.sum())
        if self._split_outputs:
            self.server.add_counts(counts, reports)
            return
        for server, mech, rng in zip(self.servers, self.mechs, self._statistic_rngs):
            server.add_counts(mech.sample_statistic(counts, rng), reports)

    # ----------------------------------------------------------------- analyst side
    def _checkpoint(self, t: float, reason: str) -> None:
        cps = []
        for server in self.servers:
            reports, times = server.stored_reports()
            cps.append(
                Checkpoint(self._checkpoints, t, reason, server.n_received, server.counts.copy(), reports, times)
            )
        heard = cps[0].n_received if self.tiers is None else sum(cp.n_received for cp in cps)
        base = dict(replication=self.index, checkpoint=self._checkpoints, reason=reason, time=t, n_received=heard)
        self._checkpoints += 1
        if self.tier_task is not None:
            for row in self.tier_task.at_checkpoint(cps):
                self.rows.append({**base, "task": self.tier_task.name, **row})
        for j, task in self.tasks:
            # several questions: each question's own reports received
            own = base if self.questions is None else {**base, "n_received": cps[j].n_received}
            for row in task.at_checkpoint(cps[j]):
                self.rows.append({**own, "task": task.name, **row})
        for j, acc in enumerate(self.design):
            for row in acc.at_checkpoint():
                self.rows.append({**base, "n_received": cps[j].n_received, "task": acc.name, **row})
        for q, campaign in self.campaigns:
            own = base if self.questions is None else {**base, "n_received": cps[q].n_received}
            task = "attack" if self.questions is None else f"{self.questions.questions[q].name}:attack"
            for row in campaign.rows(self.servers[q], cps[q].reports, t, reason == "end"):
                self.rows.append({**own, "task": task, **row})
        for xt, task, joint, true_joint in self.crosstabs:  # n_received: the pairs of reports received
            n = cps[xt.first].n_received
            for row in task.at_checkpoint(n, joint.copy(), true_joint.copy()):
                self.rows.append({**base, "n_received": n, "task": task.name, **row})
        for other in [*self.paired, *self.groups]:  # n_received: the pairs (reports and groups) received
            for row in other.at_checkpoint():
                self.rows.append({**base, "n_received": other.n, "task": other.name, **row})

    def _engine_rows(self) -> None:
        """Book-keeping at the end: clients sent, reports lost, in flight, received, stored."""
        base = dict(
            replication=self.index,
            checkpoint=self._checkpoints - 1,
            reason="end",
            time=self.timeline.end,
            n_received=self._received(),
            task="engine",
            category="",
            ci_low=np.nan,
            ci_high=np.nan,
            truth=np.nan,
            theory=np.nan,
        )
        values = {
            "clients": self.sent,
            "lost": self.lost,
            "in_flight": self.in_flight,
            "received": self._received(),
            "stored_reports": sum(s.stored for s in self.servers)
            if self.questions or self.tiers
            else self.server.stored,
            "storage_truncated": float(self.server.truncated),
        }
        for quantity, value in values.items():
            self.rows.append({**base, "quantity": quantity, "estimate": float(value)})

    def _received(self) -> int:
        """Reports received: the server's count (the messages, with several questions)."""
        if self.tiers is not None and not self.individual:
            return self._heard()
        return self.messages if self.questions is not None or self.tiers is not None else self.server.n_received


def _block_streams(
    seq: np.random.SeedSequence, b: int, compared: int, tiers: bool, rng: np.random.Generator | None = None
) -> tuple[Any, Any, Any]:
    """The random streams of batch ``b`` of the cohort whose stream is ``seq``: its generator
    (``rng``, when the caller already made it for batch 0), each compared mechanism's
    privacy stream (None without), its privacy tiers' stream (None without). Batch 0 draws
    from the cohort's own stream and its first children, as a cohort of one batch always
    has; batch b > 0 from the child ``(BLOCK_KEY, b)`` of the cohort's stream
    (:func:`ldpsim._rng.block_sequence`), so a shard needs no earlier batch to find it."""
    if b > 0:
        seq = block_sequence(seq, b)
        rng = None
    children = [
        np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, i), pool_size=seq.pool_size)
        for i in range(compared + tiers)
    ]
    privacy = [np.random.default_rng(c) for c in children[:compared]] if compared else None
    tier_rng = np.random.default_rng(children[compared]) if tiers else None
    return (np.random.default_rng(seq) if rng is None else rng), privacy, tier_rng


class Delivered:
    """A shard's reports delivered in one tick, as their statistic (``counts``) and number."""

    __slots__ = ("counts", "reports")

    def __init__(self, counts: NDArray[np.int64], reports: int) -> None:
        self.counts, self.reports = counts, reports


class Shard:
    """What a shard of one replication sends back: per delivery tick, its reports in
    sending order (``(times, reports per mechanism, picks)`` parts, as the engine files
    them) or, when the statistic suffices, one :class:`Delivered`; and its clients sent,
    lost and in flight."""

    #: Reports of one tick held before their statistic is taken: a statistic costs a call
    #: (for local hashing, O(k) of work per call), so small pieces are taken together.
    FLUSH = 1 << 16

    def __init__(self, counts: bool) -> None:
        self.counts = counts
        self.ticks: dict[int, list[Any]] = {}
        self.sent = self.lost = self.in_flight = 0
        self._held: dict[int, list[NDArray]] = {}
        self._mechanism: Any = None

    def add(self, tick: int, parts: list[Any], mechanism: Any) -> None:
        if mechanism is None:
            self.ticks.setdefault(tick, []).extend(parts)
            return
        self._mechanism = mechanism
        held = self._held.setdefault(tick, [])
        held.extend(p[1][0] for p in parts)
        if sum(len(y) for y in held) >= self.FLUSH:
            self._take(tick)

    def _take(self, tick: int) -> None:
        ys = self._held.pop(tick)
        y = ys[0] if len(ys) == 1 else np.concatenate(ys)
        stat = np.asarray(self._mechanism.statistic(y), dtype=np.int64)
        have = self.ticks.get(tick)
        if have is None:
            self.ticks[tick] = [Delivered(stat, len(y))]
        else:
            have[0].counts = have[0].counts + stat
            have[0].reports += len(y)

    def finish(self) -> "Shard":
        """Take the statistic of the reports still held; the shard is then complete."""
        for tick in list(self._held):
            self._take(tick)
        self._mechanism = None
        return self


def shard_bounds(sizes: NDArray[np.int64], shards: int) -> list[tuple[int, int]]:
    """Cut blocks of ``sizes`` clients into at most ``shards`` contiguous runs of about equal
    numbers of clients (none empty)."""
    total = int(sizes.sum())
    if total == 0 or sizes.size == 0:
        return [(0, int(sizes.size))]
    ends = np.cumsum(sizes)
    cuts = np.searchsorted(ends, [total * s / shards for s in range(1, shards)], side="left") + 1
    edges = sorted(set([0, *np.minimum(cuts, sizes.size).tolist(), int(sizes.size)]))
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _looks(end: float, every: float | None) -> int:
    """The checkpoints of a run: one every ``every`` and one at the end."""
    return 1 if every is None else int(math.floor(end / every + 1e-9)) + 1


def _is_multiple(t: float, every: float) -> bool:
    r = t / every
    return abs(r - round(r)) < 1e-9


def _hypergeometric_head(counts: NDArray[np.int64], r: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Counts among the first r reports of a tick: the tick's reports are exchangeable, so
    this is a multivariate hypergeometric draw."""
    total = int(counts.sum())
    if r >= total:
        return counts.copy()
    if total >= HYPERGEOMETRIC_LIMIT:
        raise LdpSimError(
            f"analyst.checkpoints.every_reports: a tick delivered {total} reports, expected fewer than "
            f"{HYPERGEOMETRIC_LIMIT:.0e} per tick in aggregate mode (numpy's exact hypergeometric split); "
            "use a smaller simulation.tick or time-based checkpoints"
        )
    return rng.multivariate_hypergeometric(counts, r, method="marginals").astype(np.int64)


@renamed(old="entropy", new="seed", since="0.1", removed_in="0.2")
def run_replication(scenario: Scenario, index: int, seed: int) -> pd.DataFrame:
    """Results of replication ``index`` of the run with root seed ``seed`` (seeded by
    ``SeedSequence(seed, spawn_key=(index,))``)."""
    return Replication(scenario, index, seed).run()


def plan_shards(scenario: Scenario, index: int, seed: int, shards: int) -> list[tuple[int, int]]:
    """The shards of replication ``index``: contiguous runs of its blocks (individual mode)."""
    if scenario.spec.simulation.mode != "individual":
        raise LdpSimError(
            f"--shards: got {shards} for a scenario in {scenario.spec.simulation.mode} mode, expected 1 "
            "(shards cut an individual-mode population; aggregate mode draws counts, not clients)"
        )
    return shard_bounds(Replication(scenario, index, seed).block_sizes(), shards)


def run_shard(scenario: Scenario, index: int, seed: int, lo: int, hi: int) -> Shard:
    """Blocks ``lo .. hi - 1`` of replication ``index``, sent through the network."""
    return Replication(scenario, index, seed).send_blocks(lo, hi)


def merge_shards(scenario: Scenario, index: int, seed: int, shards: list[Shard]) -> pd.DataFrame:
    """Replication ``index`` from all its shards, in block order: the same rows, byte for byte,
    as :func:`run_replication`."""
    return Replication(scenario, index, seed).run_merged(shards)
