"""Survey scenario files (``kind = "survey"``, the default): a population answering one
question, a mechanism, arrivals, a lossy network, the server and the analyst's tasks.
TOML validated by the strict pydantic models of :mod:`ldpsim.sim.scenario.survey_specs`,
then built into simulation objects (:class:`Scenario`; several questions per respondent
through :mod:`ldpsim.sim.scenario.questions`); the shared sections and the error format are
those of :mod:`ldpsim.sim.scenario.common`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.sim.attackers import build_attacker
from ldpsim.sim.design import DesignAccumulator
from ldpsim.sim.network import Latency
from ldpsim.sim.scenario.common import (
    MAX_ROWS_PER_REPLICATION,
    MAX_TIME,
    BuiltScenario,
    build_latency,
    check_rows,
    check_sum_to_one,
    read_toml,
    validate_and_build,
)
from ldpsim.sim.scenario.questions import build_questions
from ldpsim.sim.scenario.survey_specs import (
    MAX_ANSWERS,
    AllAtOnceSpec,
    LossByAnswerSpec,
    PopulationSpec,
    QuestionsScenarioSpec,
    ScenarioSpec,
    WavesSpec,
    _build_mechanism,
)
from ldpsim.sim.table import (
    DataAccess,
    TablePopulation,
    current_access,
    data_access,
    read_scenario_table,
    table_population,
)
from ldpsim.sim.tasks import rows_per_checkpoint, task_location, validate_tasks
from ldpsim.sim.weights import parse_weight

KIND = "survey"

#: Largest population simulated client by client (individual mode): 10^12 clients are about
#: 10^6 core-seconds, a day of a 100-node cluster with ``--shards`` (docs/distributed.md).
MAX_INDIVIDUAL = 10**12
#: Most ticks in one run.
MAX_TICKS = 10**6

#: numpy's multivariate hypergeometric sampler (report-count checkpoints in aggregate
#: mode) needs totals below this.
HYPERGEOMETRIC_LIMIT = 10**9
#: Cells (cohort x delivery tick x output) of the exact multinomial splits over delivery
#: ticks in aggregate mode, per replication (about 10 s of numpy at the limit).
MAX_SPLIT_CELLS = 10**8


# --------------------------------------------------------------------- built scenario
@dataclass(frozen=True)
class Scenario(BuiltScenario):
    """A validated survey scenario with its simulation objects built."""

    kind: ClassVar[str] = KIND

    mechanisms: tuple[tuple[str, FrequencyOracle], ...]  # (name, oracle): one, or several compared
    prior: np.ndarray  # the true distribution clients draw from
    latency: Latency
    tick: float
    end: float
    labels: list[str]  # the answers' labels
    size: int  # the number of clients (population.size, or the table's rows)
    table: TablePopulation | None = None  # the population's table column, if it has one
    #: several questions per respondent (``[[questions]]``): then ``mechanisms`` holds one
    #: (question name, mechanism) per question, and ``labels``/``prior`` are the first's
    questions: Any = None  # ldpsim.sim.scenario.questions.QuestionSet
    #: answer-dependent loss (``network.loss = { by_answer = ... }``): each answer's loss
    #: probability (None: one probability for all, ``spec.network.loss``)
    loss: np.ndarray | None = None
    #: privacy tiers (``[mechanism] tiers``): then ``mechanisms`` holds one (name, oracle)
    #: per tier, the same family at the tier's eps
    tiers: "Tiers | None" = None
    #: where the scenario may read its data files (``allow_outside_data``), kept for rebuilds
    data_access: DataAccess = DataAccess()
    #: fake respondents (``[[attackers]]``), built
    attackers: tuple[Any, ...] = ()

    @property
    def mechanism(self) -> FrequencyOracle:
        """The (first) mechanism."""
        return self.mechanisms[0][1]

    @property
    def compared(self) -> bool:
        """Whether several mechanisms run on the same respondents (common random numbers)."""
        return len(self.mechanisms) > 1 and self.questions is None and self.tiers is None

    def rebuild(self, spec: "ScenarioSpec") -> "Scenario":
        with data_access(self.data_access):  # the table is read again, as the first time allowed
            return build(spec, self.source, self.path)


def parse_survey(text: str, where: str = "<scenario>") -> Scenario:
    raw = read_toml(text, where)
    if "questions" in raw:  # several questions per respondent
        return validate_and_build(raw, text, where, QuestionsScenarioSpec, build)
    return validate_and_build(raw, text, where, ScenarioSpec, build)


# --------------------------------------------------------------------- building
def build(spec: ScenarioSpec, source: str, where: str) -> Scenario:
    """Cross-field checks and construction; errors name the key path."""
    if hasattr(spec, "questions"):
        return _build_questions(spec, source, where)
    pop = spec.population
    table = read_population(pop, where) if pop.file is not None else None
    labels = table.labels if table is not None else pop.label_list()
    size = pop.size if pop.size is not None else table.rows  # type: ignore[union-attr]
    k = len(labels)
    for key in ("distribution", "P0", "P1"):
        vec = getattr(pop, key)
        if vec is None:
            continue
        if len(vec) != k:
            raise LdpSimError(f"population.{key}: got {len(vec)} entries, expected one per label ({k})")
        check_sum_to_one(vec, f"population.{key}")
    if table is not None:
        prior = table.distribution
    else:
        prior = np.asarray(pop.true_distribution(), dtype=np.float64)
        prior = prior / prior.sum()
    tiers = _build_tiers(spec, labels, prior)
    mechanisms = _build_mechanisms(spec, labels, prior) if tiers is None else list(tiers.named)
    latency = build_latency(spec.network.latency)

    keys = _mechanism_keys(spec) if tiers is None else [f"mechanism.tiers[{t}]" for t in range(len(mechanisms))]
    for where_, (_, mechanism) in zip(keys, mechanisms):
        if spec.simulation.mode == "aggregate" and not mechanism.aggregate_exact:
            raise LdpSimError(
                f"simulation.mode: got 'aggregate', expected 'individual' for {where_} ({mechanism!r}: its statistic "
                "has no exact law cheaper than drawing every report)"
            )
        try:
            validate_tasks(spec.analyst.tasks, spec.simulation.mode, mechanism, labels)
        except LdpSimError as exc:
            raise LdpSimError(
                f"{exc} (with {where_})" if spec.mechanisms is not None or tiers is not None else str(exc)
            ) from None
    # aggregate mode splits the output symbols of one finite mechanism, else the clients by input
    only = mechanisms[0][1]
    groups = only.statistic_size if len(mechanisms) == 1 and only.output_size is not None else len(labels)
    per_checkpoint = None
    if tiers is not None:  # each tier's output symbols (or its clients by input) travel as groups
        finite = all(m.output_size is not None for _, m in mechanisms)
        groups = sum(m.statistic_size for _, m in mechanisms) if finite else len(labels) * len(mechanisms)
        per_checkpoint = tiers.rows_per_checkpoint(k)
    tick, end = _timing(spec, latency, size, groups, len(mechanisms), k, per_checkpoint)
    loss = _loss_by_answer(spec, labels, [m for _, m in mechanisms])
    if tiers is not None and loss is not None:
        raise LdpSimError(
            "network.loss: got a loss by answer with mechanism.tiers, expected one probability (answer-"
            "dependent loss is not yet combined with privacy tiers)"
        )
    attackers = _build_attackers(spec, mechanisms, labels, prior, size, tiers)
    return Scenario(
        spec,
        source,
        where,
        tuple(mechanisms),
        prior,
        latency,
        tick,
        end,
        labels,
        size,
        table,
        None,
        loss,
        tiers,
        current_access(),
        attackers,
    )


def _build_attackers(
    spec: ScenarioSpec,
    mechanisms: list[tuple[str, FrequencyOracle]],
    labels: list[str],
    prior: Any,
    size: int,
    tiers: Any,
) -> tuple[Any, ...]:
    """``[[attackers]]``, built: one mechanism only (fake reports go to its one server)."""
    if not spec.attackers:
        return ()
    if len(mechanisms) > 1 or tiers is not None:
        raise LdpSimError(
            "attackers: got fake respondents with several mechanisms or privacy tiers, expected one mechanism "
            "(fake reports are sent to one server)"
        )
    _check_attackers(spec)
    stop = arrival_horizon(spec, size)
    mech = mechanisms[0][1]
    for i, a in enumerate(spec.attackers):
        if a.question is not None:
            raise LdpSimError(f"attackers[{i}].question: got {a.question!r}, expected none (one question here)")
    return tuple(build_attacker(a, i, mech, labels, prior, size, stop) for i, a in enumerate(spec.attackers))


def _questionnaire_attackers(spec: Any, qs: Any, size: int) -> tuple[Any, ...]:
    """``[[attackers]]`` of a questionnaire: each names the question it attacks."""
    if not spec.attackers:
        return ()
    _check_attackers(spec)
    names = [q.name for q in qs.questions]
    stop = arrival_horizon(spec, size)
    out = []
    for i, a in enumerate(spec.attackers):
        if a.question not in names:
            raise LdpSimError(
                f"attackers[{i}].question: got {a.question!r}, expected the name of a question ({', '.join(names)})"
            )
        j = names.index(a.question)
        q = qs.questions[j]
        prior = q.attack_prior(spec.budget.runs_as)
        out.append(
            build_attacker(a, i, qs.mechanism(j), list(q.labels), prior, size, stop, j, q.kind, q.two_groups, q.name)
        )
    return tuple(out)


def _check_attackers(spec: Any) -> None:
    if spec.analyst.checkpoints.every_reports is not None:
        raise LdpSimError(
            "analyst.checkpoints.every_reports: got a number of reports with [[attackers]], expected time-based "
            "checkpoints (fake reports arrive at tick ends, not at an exact report)"
        )
    names = [a.name for a in spec.attackers]
    if len(set(names)) != len(names):
        raise LdpSimError(f"attackers: got the names {names}, expected distinct names")


@dataclass(frozen=True)
class Tiers:
    """Privacy tiers of a single question (``[mechanism] tiers = [{ eps, share }, ...]``):
    each respondent is in tier ``t`` with probability ``shares[t]`` (drawn from its own
    stream) and privatises its answer with ``named[t]``'s oracle, the mechanism's family at
    the tier's ``eps``; the analyst combines the tiers' estimates
    (:func:`ldpsim.analyst.combine_tiers`)."""

    eps: tuple[float, ...]
    shares: np.ndarray
    named: tuple[tuple[str, FrequencyOracle], ...]
    confidence: float = 0.95

    @property
    def mechanisms(self) -> list[FrequencyOracle]:
        return [m for _, m in self.named]

    def rows_per_checkpoint(self, k: int) -> int:
        """frequency, std_error and naive_frequency per answer, and each tier's estimate."""
        return (3 + len(self.eps)) * k


#: Most privacy tiers of one mechanism.
MAX_TIERS = 16


def _build_tiers(spec: ScenarioSpec, labels: list[str], prior: Any) -> Tiers | None:
    """``[mechanism] tiers``: the checks (one line naming the key) and one oracle per tier."""
    for i, table in enumerate(spec.mechanisms or []):
        if isinstance(table, dict) and "tiers" in table:
            raise LdpSimError(
                f"mechanisms[{i}].tiers: got {show(table['tiers'])}, expected no tiers in [[mechanisms]] "
                "(privacy tiers are for one [mechanism])"
            )
    if spec.mechanism is None or "tiers" not in spec.mechanism or spec.mechanisms is not None:
        return None  # (both [mechanism] and [[mechanisms]]: refused by _build_mechanisms)

    table = dict(spec.mechanism)
    raw = table.pop("tiers")
    if "eps" in table:
        raise LdpSimError(
            f"mechanism.eps: got {show(table['eps'])} with tiers, expected no eps: each tier states its own"
        )
    kind = table.get("kind")
    if isinstance(kind, str) and kind in catalog.names("scenario") and "eps" not in catalog.entry(kind).params:
        raise LdpSimError(f"mechanism.tiers: got tiers with kind = {kind!r}, expected a mechanism that takes eps")
    if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_TIERS:
        raise LdpSimError(
            f"mechanism.tiers: got {show(raw)}, expected a list of 2 to {MAX_TIERS} tables {{ eps = ..., share = ... }}"
        )
    eps, shares = [], []
    for t, tier in enumerate(raw):
        where = f"mechanism.tiers[{t}]"
        if not isinstance(tier, dict) or set(tier) != {"eps", "share"}:
            raise LdpSimError(
                f"{where}: got {show(tier)}, expected a table {{ eps = ..., share = ... }} (exactly those keys)"
            )
        value = tier["eps"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise LdpSimError(f"{where}.eps: got {show(value)}, expected a finite number")
        if not tier["eps"] > 0:
            raise LdpSimError(f"{where}.eps: got {show(tier['eps'])}, expected eps > 0")
        try:  # a number, or an exact fraction such as "1/3"
            share = parse_weight(tier["share"], at_most_one=True)
        except ValueError as exc:
            raise LdpSimError(f"{where}.share: {exc}") from None
        if not share > 0:
            raise LdpSimError(f"{where}.share: got {show(tier['share'])}, expected a share in (0, 1]")
        eps.append(float(tier["eps"]))
        shares.append(share)
    check_sum_to_one(shares, "mechanism.tiers", "shares")
    named = []
    for t, e in enumerate(eps):
        mech = _build_mechanism(spec, {**table, "eps": e}, labels, prior, f"mechanism.tiers[{t}]")
        named.append((f"tier {t} (eps = {e:g})", mech))
    share_vec = np.asarray(shares, dtype=np.float64)
    share_vec = share_vec / share_vec.sum()
    share_vec.setflags(write=False)
    return Tiers(tuple(eps), share_vec, tuple(named), _tier_confidence(spec.analyst.tasks))


def _tier_confidence(tasks: list[dict[str, Any]]) -> float:
    """With tiers the analyst's task is the tiers' combined frequency estimate: only
    ``frequency`` tasks with the default estimator and interval (their ``confidence`` is used)."""
    confidence = 0.95
    for i, entry in enumerate(tasks):
        if entry.get("kind") != "frequency":
            raise LdpSimError(
                f"{task_location(i, entry)}.kind: got {show(entry.get('kind'))} with mechanism.tiers, expected "
                "'frequency' (the tiers' combined estimate)"
            )
        for key, default in (("estimator", "inversion"), ("interval", "normal"), ("simultaneous", False)):
            if key in entry and entry[key] != default:
                raise LdpSimError(
                    f"{task_location(i, entry)}.{key}: got {show(entry[key])} with mechanism.tiers, expected "
                    f"{default!r} (the combined estimate and its normal interval)"
                )
        if i == 0 and isinstance(entry.get("confidence"), float):
            confidence = float(entry["confidence"])
    return confidence


def _loss_by_answer(spec: ScenarioSpec, labels: list[str], mechanisms: list[FrequencyOracle]) -> np.ndarray | None:
    """Each answer's loss probability under ``network.loss = { by_answer = ... }`` (None
    for one probability), and the checks of ``analyst.reweight``."""
    loss = spec.network.loss
    if not isinstance(loss, LossByAnswerSpec):
        if spec.analyst.reweight:
            raise LdpSimError(
                "analyst.reweight: got true, expected network.loss = { by_answer = {...} } (reweighting "
                "corrects answer-dependent loss; with one loss probability there is nothing to correct)"
            )
        return None
    for label in loss.by_answer:
        if label not in labels:
            raise LdpSimError(
                f"network.loss.by_answer: got {label!r}, expected answers among the labels ({show(labels)})"
            )
    vec = np.array([loss.by_answer.get(label, loss.default) for label in labels], dtype=np.float64)
    if np.all(vec == 1.0):
        raise LdpSimError("network.loss: got probability 1 for every answer, expected some answer to be heard")
    if spec.analyst.reweight:
        if np.any(vec == 1.0):
            bad = labels[int(np.flatnonzero(vec == 1.0)[0])]
            raise LdpSimError(
                f"network.loss.by_answer: got 1 for {bad!r}, expected every loss below 1 with "
                "analyst.reweight (an answer never heard cannot be reweighted)"
            )
        for mech in mechanisms:
            if not mech.identifiable:
                raise LdpSimError(
                    f"analyst.reweight: got true with {mech!r}, expected a mechanism whose matrix has "
                    f"full row rank {mech.k} (the reweighting corrects an unbiased estimate)"
                )
    vec.setflags(write=False)
    return vec


def _build_questions(spec: Any, source: str, where: str) -> Scenario:
    """A scenario with ``[[questions]]`` (:mod:`ldpsim.sim.scenario.questions`)."""
    if isinstance(spec.network.loss, LossByAnswerSpec):
        raise LdpSimError(
            "network.loss: got a loss by answer with [[questions]], expected one probability (a loss "
            "that depends on an answer is set per question: questions[i].loss)"
        )
    qs = build_questions(spec, where)
    mechanisms = tuple((q.name, qs.mechanism(j)) for j, q in enumerate(qs.questions))
    latency = build_latency(spec.network.latency)
    k = max(q.k for q in qs.questions)
    # aggregate mode thins and splits the respondents by type (the table's distinct rows)
    groups = qs.types if spec.simulation.mode == "aggregate" else k
    # the rows each question's kind writes at a checkpoint, and its design rows
    per_checkpoint = sum(q.rows_per_checkpoint(spec) for q in qs.questions)
    if qs.design is not None:
        strata = len(qs.design.strata)
        per_checkpoint += sum(
            DesignAccumulator.rows_per_checkpoint(
                len(q.design_labels(qs.mechanism(j))) + len(q.design_ratios(qs.mechanism(j))), strata
            )
            for j, q in enumerate(qs.questions)
        )
    tick, end = _timing(spec, latency, qs.size, groups, len(mechanisms), k, per_checkpoint)
    first = qs.questions[0]
    return Scenario(
        spec,
        source,
        where,
        mechanisms,
        first.prior,
        latency,
        tick,
        end,
        first.labels,
        qs.size,
        qs.table,
        qs,
        data_access=current_access(),
        attackers=_questionnaire_attackers(spec, qs, qs.size),
    )


def _timing(
    spec: ScenarioSpec,
    latency: Latency,
    size: int,
    groups: int,
    mechanisms: int,
    k: int,
    per_checkpoint: int | None = None,
) -> tuple[float, float]:
    """The size checks, the end and the tick of a scenario, and the bounds on its work."""
    if spec.simulation.mode == "individual" and size > MAX_INDIVIDUAL:
        raise LdpSimError(
            f"population.size: got {size}, expected at most {MAX_INDIVIDUAL} in individual mode "
            "(set simulation.mode = 'aggregate': exact counts at any size)"
        )
    if arrival_horizon(spec, size) > MAX_TIME:
        raise LdpSimError(f"arrivals.rate: got {spec.arrivals.rate!r}, expected size / rate <= {MAX_TIME:g}")  # type: ignore[union-attr]
    if spec.server.keep_reports and spec.simulation.mode != "individual":
        raise LdpSimError(
            "server.keep_reports: got true in aggregate mode, expected simulation.mode = 'individual' "
            "(aggregate mode draws counts only)"
        )
    end = spec.simulation.end if spec.simulation.end is not None else _default_end(spec, latency, size)
    tick = _tick(spec, end)
    if end / tick > MAX_TICKS:
        raise LdpSimError(f"simulation.tick: got {tick!r}, expected at most {MAX_TICKS} ticks up to end = {end!r}")
    _check_workload(spec, groups, tick, end, mechanisms, size, k, per_checkpoint)
    return tick, end


def read_population(pop: PopulationSpec, where: str) -> TablePopulation:
    """``[population] file``, ``column``: the column of the CSV table (its path relative to
    the scenario file) as a population, used as is or resampled to ``size``."""
    # both set when this is called (a population read from a table)
    file, column = cast(str, pop.file), cast(str, pop.column)
    table = read_scenario_table(file, where)
    try:
        table.column(column)
        return table_population(table, column, pop.labels, pop.size is not None, pop.missing or "error", MAX_ANSWERS)
    except LdpSimError as exc:
        raise LdpSimError(f"population.column: {exc}") from None


def _check_workload(
    spec: ScenarioSpec, m: int, tick: float, end: float, mechanisms: int, size: int, k: int, rows: int | None = None
) -> None:
    """Bound the rows and the aggregate-mode work of a scenario before it runs (``rows``:
    the rows per checkpoint when not those of the tasks, one set per mechanism)."""
    cp = spec.analyst.checkpoints
    # a checkpoint costs about as much as a row even when no task writes one
    per_checkpoint = max(1, mechanisms * rows_per_checkpoint(spec.analyst.tasks, k) if rows is None else rows)
    if spec.simulation.mode == "aggregate" and cp.every_reports is not None and size >= HYPERGEOMETRIC_LIMIT:
        raise LdpSimError(
            f"analyst.checkpoints.every_reports: got {cp.every_reports}, expected no report-count checkpoints with "
            f"population.size >= {HYPERGEOMETRIC_LIMIT:.0e} in aggregate mode (numpy's exact split of a tick's reports "
            "needs fewer than 1e9 of them); use time-based checkpoints (every = T)"
        )
    periodic = math.floor(end / cp.every + 1e-9) if cp.every is not None else 0
    by_reports = size // cp.every_reports if cp.every_reports is not None else 0
    checkpoints = 1 + periodic + by_reports
    rows = checkpoints * per_checkpoint + 6  # and the engine's book-keeping
    room = (MAX_ROWS_PER_REPLICATION - 6) // max(per_checkpoint, 1) - 1  # checkpoints that fit besides the end
    if by_reports and by_reports >= periodic:
        least = math.ceil(size / max(room - periodic, 1))
        detail = (
            f"analyst.checkpoints.every_reports: got {cp.every_reports}, expected at least {least:,} "
            f"(each replication may write {MAX_ROWS_PER_REPLICATION:,} result rows; this gives about {rows:,}: "
            f"{checkpoints:,} checkpoints x {per_checkpoint} rows)"
        )
    else:
        least_every = end / max(room - by_reports, 1)
        detail = (
            f"analyst.checkpoints.every: got {cp.every!r}, expected at least {least_every:.6g} "
            f"(each replication may write {MAX_ROWS_PER_REPLICATION:,} result rows; this gives about {rows:,}: "
            f"{checkpoints:,} checkpoints x {per_checkpoint} rows)"
        )
    check_rows(rows, spec.simulation.replications, detail)
    if spec.simulation.mode == "aggregate":
        cells = split_cells(spec, tick, end, size) * m
        if cells > MAX_SPLIT_CELLS:
            raise LdpSimError(
                f"simulation.tick: got {tick:.6g}, expected a coarser tick: aggregate mode splits each cohort's "
                f"reports over the delivery ticks exactly, {cells:.3g} cells here against at most "
                f"{MAX_SPLIT_CELLS:.0e} (fewer ticks: a larger simulation.tick, or a shorter arrival period)"
            )


def split_cells(spec: ScenarioSpec, tick: float, end: float, size: int | None = None) -> int:
    """An upper bound on sum over cohorts of the delivery ticks their reports are split over
    (``size``: the number of clients, by default ``population.size``)."""
    n = int(math.ceil(end / tick - 1e-9))
    a = spec.arrivals

    def tick_of(t: float) -> int:
        return n if not t / tick < n else int(t / tick)  # t / tick may overflow to inf

    if isinstance(a, AllAtOnceSpec):
        starts = [tick_of(a.at)]
    elif isinstance(a, WavesSpec):
        starts = [tick_of(t) for t in a.times]
    else:
        last = min(tick_of(arrival_horizon(spec, size)) + 1, n)
        return last * n - last * (last - 1) // 2 + n  # cohorts 0..last-1, each split from its own tick on
    return sum(n - j + 1 for j in starts)


def _mechanism_keys(spec: ScenarioSpec) -> list[str]:
    if spec.mechanisms is None:
        return ["mechanism"]
    return [f"mechanisms[{i}]" for i in range(len(spec.mechanisms))]


def _build_mechanisms(spec: ScenarioSpec, labels: list[str], prior: Any) -> list[tuple[str, FrequencyOracle]]:
    """``[mechanism]``, or the ``[[mechanisms]]`` compared on the same respondents: each
    built by :func:`_build_mechanism`, named by its ``name`` (default: its kind; distinct)."""
    if (spec.mechanism is None) == (spec.mechanisms is None):
        raise LdpSimError(
            "mechanism: got "
            + ("both [mechanism] and [[mechanisms]]" if spec.mechanism is not None else "nothing")
            + ", expected one [mechanism] table or a list [[mechanisms]] to compare"
        )
    tables = [spec.mechanism] if spec.mechanism is not None else list(spec.mechanisms or [])
    out: list[tuple[str, FrequencyOracle]] = []
    for key, table in zip(_mechanism_keys(spec), tables):
        table = dict(table)
        name = table.pop("name", None) if spec.mechanisms is not None else None
        if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 50):
            raise LdpSimError(f"{key}.name: got {show(name)}, expected a short text naming this mechanism")
        mech = _build_mechanism(spec, table, labels, prior, key)
        name = name if name is not None else str(table.get("kind"))
        if any(name == other for other, _ in out):
            raise LdpSimError(f"{key}.name: got {name!r}, expected a name no other mechanism has (set 'name')")
        out.append((name, mech))
    return out


def arrival_horizon(spec: ScenarioSpec, size: int | None = None) -> float:
    """The time by which every client has arrived (``size``: the number of clients, by
    default ``population.size``)."""
    a = spec.arrivals
    if isinstance(a, AllAtOnceSpec):
        return a.at
    if isinstance(a, WavesSpec):
        return max(a.times)
    n = size if size is not None else spec.population.size
    return a.duration if a.duration is not None else n / a.rate  # type: ignore[operator]


def _default_end(spec: ScenarioSpec, latency: Latency, size: int) -> float:
    """Default end: every client arrived, plus the latency's 99.9% quantile, rounded up to a
    whole checkpoint interval when checkpoints are periodic."""
    end = arrival_horizon(spec, size) + latency.quantile(0.999)
    every = spec.analyst.checkpoints.every
    if every is not None:
        if not end / every <= MAX_TICKS:  # each interval needs a tick at least (also catches inf)
            raise LdpSimError(
                f"analyst.checkpoints.every: got {every!r}, expected at least {end / MAX_TICKS:.6g} (at most "
                f"{MAX_TICKS} checkpoint intervals up to the default end {end:.6g}; or set simulation.end)"
            )
        end = max(every, math.ceil(end / every - 1e-9) * every)
    return end if end > 0 else 1.0


def _tick(spec: ScenarioSpec, end: float) -> float:
    """The time resolution: the requested tick (default: checkpoint interval / 24, else
    end / 240), shrunk so that a whole number of ticks fits in each checkpoint interval,
    and so that a whole number fits up to the end when checkpoints are not periodic."""
    every = spec.analyst.checkpoints.every
    wanted = spec.simulation.tick
    if wanted is None:
        wanted = every / 24 if every is not None and every < end else end / 240
    span = every if every is not None and every < end else end
    ratio = span / wanted if wanted > 0 else math.inf
    if not ratio <= MAX_TICKS or end / span * ratio > 2 * MAX_TICKS:  # also catches inf and NaN, before any ceil
        shown = spec.simulation.tick if spec.simulation.tick is not None else wanted
        raise LdpSimError(f"simulation.tick: got {shown!r}, expected at most {MAX_TICKS} ticks up to end = {end!r}")
    return span / max(1, math.ceil(ratio - 1e-9))
