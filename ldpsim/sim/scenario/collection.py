"""Collection scenario files (``kind = "collection"``): the same respondents report again and
again (every period, or on random periods), their answers change between periods (a Markov
chain, or a slow drift of the distribution), and several **policies** are compared side by
side on the same respondents and answers: every report spends privacy (``plain``),
RAPPOR-style memoisation (``memoise``), a privacy filter that stops a respondent at a budget
(``filter``); each with and without a **shuffler** between the clients and the server.

Layout::

    kind = "collection"
    name = "telemetry_daily"

    [population]
    labels = ["idle", "browsing", ...]
    distribution = [0.4, 0.3, ...]      # at the first period
    size = 100_000

    [collection]
    periods = 30
    period = 1.0                        # time units per period (days)
    schedule = { kind = "every_period" }            # or { kind = "random", rate = 0.3 }
    change = { kind = "drift", final = [...], stay = 0.9 }
    # change = { kind = "markov", matrix = [[...], ...] }   or { kind = "none" }
    delta = 1e-6                        # delta at which composed eps is reported

    [mechanism]                         # one report: any one-symbol catalog mechanism
    kind = "randomized_response"
    eps = 1.0

    [[policies]]
    name = "every report"
    kind = "plain"

    [[policies]]
    name = "memoised"
    kind = "memoise"
    eps_permanent = 2.0                 # the memo; [mechanism] randomises each report of it

    [[policies]]
    name = "budget 8"
    kind = "filter"
    filter = "basic"                    # basic | advanced
    budget_eps = 8.0
    budget_delta = 0.0
    exhausted = "stop"                  # or "lower": one last report at the eps left

    [shuffler]                          # optional
    batch = 10_000                      # reports per batch (or window = 0.25 time units)
    compare = true                      # each policy with and without the shuffler

    [network]
    latency = { kind = "exponential", mean = 0.01 }
    loss = 0.0

    [analyst]
    confidence = 0.95

    [simulation]
    seed = 1
    replications = 1

Every problem is one :class:`ldpsim.errors.LdpSimError` naming the file and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Union, cast

import numpy as np
from pydantic import Field, model_validator

from ldpsim.attacks.strategies import STRATEGIES
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.memo import Memoised
from ldpsim.privacy.filters import AdvancedFilter, BasicFilter, allowed_reports
from ldpsim.sim.attackers import answer_targets
from ldpsim.sim.network import Latency
from ldpsim.sim.scenario.common import (
    BuiltScenario,
    Model,
    PositiveTime,
    Probability,
    ScenarioName,
    build_latency,
    check_rows,
    check_sum_to_one,
    read_toml,
    validate_and_build,
)
from ldpsim.sim.scenario.common import NetworkSpec as _Network
from ldpsim.sim.scenario.common import SimulationSpec as _Simulation
from ldpsim.sim.scenario.survey import _build_mechanism
from ldpsim.sim.weights import Weight

KIND = "collection"
#: Most answers, periods, respondents and respondent-periods one replication may simulate.
MAX_LABELS = 256
MAX_PERIODS = 1000
MAX_SIZE = 10**7
MAX_CELLS = 10**8


def _distribution(values: list[float], key: str, k: int | None = None) -> np.ndarray:
    p = np.asarray(values, dtype=np.float64)
    if k is not None and p.size != k:
        raise LdpSimError(f"{key}: got {p.size} numbers, expected one per label ({k})")
    check_sum_to_one(values, key)
    return p / p.sum()


# --------------------------------------------------------------------- sections
class PopulationSpec(Model):
    labels: Annotated[list[str], Field(min_length=2, max_length=MAX_LABELS)]
    distribution: list[Weight]  # numbers, or exact fractions such as "1/3"
    size: Annotated[int, Field(ge=1, le=MAX_SIZE)]

    @model_validator(mode="after")
    def _distinct(self) -> "PopulationSpec":
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        return self


class EveryPeriodSpec(Model):
    """Every respondent reports once in every period."""

    kind: Literal["every_period"]


class RandomScheduleSpec(Model):
    """Each respondent reports in each period with probability ``rate``, independently."""

    kind: Literal["random"]
    rate: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class NoChangeSpec(Model):
    kind: Literal["none"]


class MarkovSpec(Model):
    """Answers follow a Markov chain: row i of ``matrix`` is the law of the next answer of a
    respondent whose answer is label i."""

    kind: Literal["markov"]
    matrix: list[list[Weight]]


class DriftSpec(Model):
    """The distribution moves linearly from ``population.distribution`` (first period) to
    ``final`` (last period); each respondent keeps its answer with probability ``stay`` and
    otherwise redraws it from the law that keeps the marginal on that path."""

    kind: Literal["drift"]
    final: list[Weight]
    stay: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.9


ScheduleSpec = Annotated[Union[EveryPeriodSpec, RandomScheduleSpec], Field(discriminator="kind")]
ChangeSpec = Annotated[Union[NoChangeSpec, MarkovSpec, DriftSpec], Field(discriminator="kind")]


class CollectionSpec(Model):
    periods: Annotated[int, Field(ge=1, le=MAX_PERIODS)]
    period: PositiveTime = 1.0
    schedule: ScheduleSpec = EveryPeriodSpec(kind="every_period")
    change: ChangeSpec = NoChangeSpec(kind="none")
    #: the delta at which composed privacy is reported (eps of the optimal composition)
    delta: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 1e-6


class PolicySpec(Model):
    """One way of collecting: ``plain`` (every report randomised afresh), ``memoise``
    (a permanent randomised response per value at ``eps_permanent``, each report an
    instantaneous randomisation of it by ``[mechanism]``), ``filter`` (plain reports while a
    privacy filter admits them, then the respondent stops, or with ``exhausted = "lower"``
    sends one last report at the largest eps the filter still admits). ``rate`` < 1 makes each
    respondent send each scheduled report with that probability only."""

    name: Annotated[str, Field(min_length=1, max_length=50)]
    kind: Literal["plain", "memoise", "filter"]
    #: each scheduled report is sent with this probability (a respondent samples the
    #: periods it reports in, e.g. to spread a budget over the collection)
    rate: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    eps_permanent: Annotated[float, Field(gt=0, le=50, allow_inf_nan=False)] | None = None
    filter: Literal["basic", "advanced"] | None = None
    budget_eps: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    budget_delta: Probability | None = None
    #: filter: what a respondent does when its next report would not fit the budget: stop,
    #: or send one last report at the largest eps the filter still admits, then stop
    exhausted: Literal["stop", "lower"] | None = None

    @model_validator(mode="after")
    def _keys(self) -> "PolicySpec":
        own = {
            "plain": set(),
            "memoise": {"eps_permanent"},
            "filter": {"filter", "budget_eps", "budget_delta", "exhausted"},
        }[self.kind]
        for key in ("eps_permanent", "filter", "budget_eps", "budget_delta", "exhausted"):
            value = getattr(self, key)
            if value is not None and key not in own:
                raise ValueError(f"{key}: got {show(value)}, expected no {key!r} for kind = {self.kind!r}")
        if self.kind == "memoise" and self.eps_permanent is None:
            raise ValueError("eps_permanent: got nothing, expected the eps of the memoised (permanent) response")
        if self.kind == "filter" and self.budget_eps is None:
            raise ValueError("budget_eps: got nothing, expected each respondent's privacy budget eps")
        return self


class ShufflerSpec(Model):
    """A shuffler between the network and the server: it holds reports until it has
    ``batch`` of them (or until the end of each ``window`` of time), permutes them and
    forwards them without sender identities."""

    batch: Annotated[int, Field(ge=2, le=10**8)] | None = None
    window: PositiveTime | None = None
    #: run each policy both with and without the shuffler
    compare: bool = True

    @model_validator(mode="after")
    def _one(self) -> "ShufflerSpec":
        if (self.batch is None) == (self.window is None):
            raise ValueError("give one of 'batch' (reports per batch) or 'window' (time per batch)")
        return self


class NetworkSpec(_Network):
    loss: Probability = 0.0


class AnalystSpec(Model):
    confidence: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.95


class SimulationSpec(_Simulation):
    replications: Annotated[int, Field(ge=1, le=10_000)] = 1


class CollectionAttackerSpec(Model):
    """Fake respondents of a collection (``[[attackers]]``): in every period from ``start``
    to ``stop`` (period numbers, 1 = the first), fake reports worth ``share`` of the reports
    a period receives, promoting ``targets`` (labels, or a number r: the r least frequent
    answers of the first period) with ``strategy`` (``maximal_gain``, ``random_item``,
    ``random_perturbed``, ``undetectable``), sent to every arm alike."""

    name: Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[A-Za-z0-9_.-]+$")] = "attacker"
    share: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
    targets: Union[Annotated[int, Field(ge=1)], Annotated[list[str], Field(min_length=1)]]
    strategy: Annotated[str, Field(min_length=1, max_length=50)] = "maximal_gain"
    start: Annotated[int, Field(ge=1)] = 1
    stop: Annotated[int, Field(ge=1)] | None = None
    #: the false-alarm probability of the server's detection (over the whole collection)
    alpha: float = Field(1e-3, gt=0, lt=1, allow_inf_nan=False)


class CollectionScenarioSpec(Model):
    kind: Literal["collection"]
    name: ScenarioName
    description: str = ""
    population: PopulationSpec
    collection: CollectionSpec
    mechanism: dict[str, Any]
    policies: Annotated[list[PolicySpec], Field(min_length=1, max_length=12)]
    shuffler: ShufflerSpec | None = None
    network: NetworkSpec = NetworkSpec()
    analyst: AnalystSpec = AnalystSpec()
    simulation: SimulationSpec = SimulationSpec()
    attackers: Annotated[list[CollectionAttackerSpec], Field(max_length=16)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _names(self) -> "CollectionScenarioSpec":
        names = [p.name for p in self.policies]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError(f"policies[{i}].name: got {name!r}, expected a name no other policy has")
        return self


# --------------------------------------------------------------------- built scenario
@dataclass(frozen=True)
class Policy:
    """A built policy: its spec, the mechanism of each report (the chain permanent then
    instantaneous for memoisation), the memoised mechanism (memoise), the filter and the
    number of reports it admits (filter)."""

    spec: PolicySpec
    mechanism: Any  # FrequencyOracle: the law of one report given the answer
    memo: Any = None  # ldpsim.mechanisms.memo.Memoised
    filter: Any = None  # ldpsim.privacy.filters.PrivacyFilter
    allowed: int | None = None  # full reports the filter admits (None: no limit)
    lowered: Any = None  # the mechanism of the one last, lowered report (exhausted = "lower")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind


@dataclass(frozen=True)
class CollectionScenario(BuiltScenario):
    """A validated collection scenario: labels, the first period's distribution, the
    expected distribution of every period, the answer dynamics, the policies and the arms
    (policy x shuffled) they run as."""

    kind: ClassVar[str] = KIND

    labels: list[str]
    start: np.ndarray  # the first period's distribution
    path_expected: np.ndarray  # periods x k: the expected distribution of each period
    redraw: np.ndarray | None  # drift: periods x k laws of a redrawn answer (row 0 unused)
    transition: np.ndarray | None  # markov: k x k
    mechanism: Any  # the [mechanism], one report
    policies: tuple[Policy, ...]
    latency: Latency
    #: fake respondents: (spec, target indices, fake reports per period)
    attackers: tuple[tuple[Any, Any, int], ...] = ()

    @property
    def size(self) -> int:
        return int(self.spec.population.size)

    @property
    def periods(self) -> int:
        return int(self.spec.collection.periods)

    @property
    def arms(self) -> list[tuple[Policy, bool]]:
        """(policy, shuffled) in the order they run: each policy without, then with, the
        shuffler when it is compared; only with it when ``compare = false``."""
        sh = self.spec.shuffler
        out: list[tuple[Policy, bool]] = []
        for p in self.policies:
            if sh is None or sh.compare:
                out.append((p, False))
            if sh is not None:
                out.append((p, True))
        return out

    def rebuild(self, spec: CollectionScenarioSpec) -> "CollectionScenario":
        return build(spec, self.source, self.path)


def parse_collection(text: str, where: str = "<scenario>") -> CollectionScenario:
    return validate_and_build(
        read_toml(text, where),
        text,
        where,
        CollectionScenarioSpec,
        build,
        frozenset({"every_period", "random", "none", "markov", "drift"}),
    )


def build(spec: CollectionScenarioSpec, source: str, where: str) -> CollectionScenario:
    labels = list(spec.population.labels)
    k = len(labels)
    start = _distribution(spec.population.distribution, "population.distribution", k)
    c = spec.collection
    path, redraw, transition = _dynamics(c, start, k)
    mech = _one_report_mechanism(spec, labels, start)
    policies = tuple(_policy(spec, i, p, mech, labels) for i, p in enumerate(spec.policies))
    cells = spec.population.size * c.periods
    if cells > MAX_CELLS:
        raise LdpSimError(
            f"population.size: got {spec.population.size:,}, expected at most {MAX_CELLS // c.periods:,} "
            f"respondents for {c.periods} periods (each respondent-period is simulated)"
        )
    arms = len(policies) * (2 if spec.shuffler is not None and spec.shuffler.compare else 1)
    check_rows(
        arms * c.periods * (2 * k + 40),
        spec.simulation.replications,
        f"collection.periods: got {c.periods}, expected fewer periods or labels (too many result rows)",
    )
    return CollectionScenario(
        spec,
        source,
        where,
        labels,
        start,
        path,
        redraw,
        transition,
        mech,
        policies,
        build_latency(spec.network.latency),
        _attackers(spec, labels, start, policies),
    )


def _attackers(
    spec: CollectionScenarioSpec, labels: list[str], start: np.ndarray, policies: tuple[Policy, ...]
) -> tuple[tuple[Any, Any, int], ...]:
    """``[[attackers]]``, checked: targets among the labels, a strategy every policy's
    mechanism can carry, periods within the collection; the number of fake reports per period
    from the share and the reports a period expects."""
    names = [a.name for a in spec.attackers]
    if len(set(names)) != len(names):
        raise LdpSimError(f"attackers: got the names {names}, expected distinct names")
    c = spec.collection
    rate = c.schedule.rate if isinstance(c.schedule, RandomScheduleSpec) else 1.0
    out = []
    for i, a in enumerate(spec.attackers):
        where = f"attackers[{i}]"
        if a.strategy not in STRATEGIES or STRATEGIES[a.strategy].moves != "answers":
            answers = [n for n, st in STRATEGIES.items() if st.moves == "answers"]
            raise LdpSimError(f"{where}.strategy: got {a.strategy!r}, expected one of {', '.join(answers)}")
        stop = c.periods if a.stop is None else a.stop
        if not a.start <= stop <= c.periods:
            raise LdpSimError(f"{where}.stop: got {stop}, expected a period from start = {a.start} to {c.periods}")
        targets = answer_targets(a, where, labels, start)
        for p in policies:
            try:
                STRATEGIES[a.strategy].unit_support(p.mechanism, targets, prior=start, share=a.share)
            except (NotAvailable, LdpSimError) as exc:
                raise LdpSimError(
                    f"{where}.strategy: got {a.strategy!r}, which policy {p.name!r}'s mechanism cannot carry ({exc})"
                ) from None
        count = int(round(a.share * spec.population.size * rate / (1.0 - a.share)))
        if count < 1:
            raise LdpSimError(f"{where}.share: got {a.share}, expected at least one fake report a period")
        out.append((a, targets, count))
    return tuple(out)


def _dynamics(c: CollectionSpec, start: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The expected distribution of every period, and the laws the sampler needs."""
    T = c.periods
    ch = c.change
    if isinstance(ch, NoChangeSpec):
        return np.tile(start, (T, 1)), None, None
    if isinstance(ch, MarkovSpec):
        if len(ch.matrix) != k or any(len(row) != k for row in ch.matrix):
            raise LdpSimError(
                f"collection.change.matrix: got {len(ch.matrix)} rows, expected a {k} x {k} matrix (one row and "
                "column per label)"
            )
        m = np.asarray(ch.matrix, dtype=np.float64)
        for i, row in enumerate(ch.matrix):
            check_sum_to_one(row, f"collection.change.matrix[{i}]")
        m = m / m.sum(axis=1, keepdims=True)
        path = [start]
        for _ in range(T - 1):
            path.append(path[-1] @ m)
        return np.array(path), None, m
    final = _distribution(ch.final, "collection.change.final", k)
    w = np.linspace(0.0, 1.0, T) if T > 1 else np.zeros(1)
    path = (1 - w)[:, None] * start[None, :] + w[:, None] * final[None, :]
    stay = ch.stay
    redraw = np.zeros_like(path)
    for t in range(1, T):
        r = (path[t] - stay * path[t - 1]) / (1 - stay)
        if np.any(r < -1e-12):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(path[:-1] > 0, path[1:] / np.where(path[:-1] > 0, path[:-1], 1), np.inf)
            top = float(np.min(ratio))
            raise LdpSimError(
                f"collection.change.stay: got {stay:g}, expected at most {top:.6g}: a respondent who "
                "keeps its answer that often cannot follow the drift (an answer's share falls faster "
                "than the respondents who leave it)"
            )
        r = np.maximum(r, 0.0)
        total = float(r.sum())
        # stay within a rounding of 1 and no drift: r rounds to zero; its limit is the law itself
        redraw[t] = r / total if total > 0 else path[t] / path[t].sum()
    return path, redraw, None


def _one_report_mechanism(
    spec: CollectionScenarioSpec, labels: list[str], start: np.ndarray, table: dict[str, Any] | None = None
) -> Any:
    """``[mechanism]`` (or ``table``, the same with another eps) through the one catalog (as
    survey scenarios build theirs); its reports must be one symbol, since the analyst keeps
    one estimator row per output."""
    filled = {"alphabet": len(labels), "P0": None, "P1": None, "prior": [float(p) for p in start]}
    table = spec.mechanism if table is None else table
    mech = _build_mechanism(spec, table, labels, start, "mechanism", filled)  # type: ignore[arg-type]
    if tuple(getattr(mech, "report_shape", ())) != () or mech.statistic_size > 4096:
        raise LdpSimError(
            f"mechanism.kind: got {spec.mechanism.get('kind')!r}, expected a mechanism whose report is one "
            "of at most 4,096 symbols (randomized_response, or another finite mechanism)"
        )
    return mech


def _policy(spec: CollectionScenarioSpec, index: int, p: PolicySpec, mech: Any, labels: list[str]) -> Policy:
    key = f"policies[{index}]"
    if p.kind == "plain":
        return Policy(p, mech)
    if p.kind == "memoise":
        try:
            permanent = catalog.entry("randomized_response").build(k=len(labels), eps=p.eps_permanent)
            memo = Memoised(permanent, mech)
        except LdpSimError as exc:
            raise LdpSimError(f"{key}.eps_permanent: {str(exc).partition(': ')[2] or exc}") from None
        return Policy(p, memo, memo=memo)

    eps = float(mech.epsilon())
    kind = p.filter or "basic"
    budget_delta = 0.0 if p.budget_delta is None else float(p.budget_delta)
    if kind == "advanced" and not 0 < budget_delta < 1:
        raise LdpSimError(
            f"{key}.budget_delta: got {p.budget_delta!r}, expected a delta in (0, 1) for the advanced "
            "filter (it spends delta on its concentration term)"
        )
    # the reports are pure, so the advanced filter puts all of delta on its concentration term
    budget_eps = cast(float, p.budget_eps)  # a filter policy has one (checked by PolicySpec)
    flt = (
        BasicFilter(budget_eps, budget_delta)
        if kind == "basic"
        else AdvancedFilter(budget_eps, budget_delta, delta_slack=budget_delta)
    )
    allowed = int(allowed_reports(flt, eps, 0.0))
    if allowed < 1:
        raise LdpSimError(
            f"{key}.budget_eps: got {p.budget_eps:g}, expected a budget that admits at least one report "
            f"of the mechanism (eps = {eps:g} per report under the {kind} filter)"
        )
    lowered = None
    # a lowered report is the one after the last full one: only when the filter stops a
    # respondent within the collection (at eps 1e-6 a budget of 1 admits 10^6 full reports,
    # so nobody gets there, and neither loading nor the accounting walks through them)
    if p.exhausted == "lower" and allowed < spec.collection.periods:
        last = largest_admitted(flt, eps, allowed)
        if not last > 0:
            raise LdpSimError(
                f"{key}.exhausted: got 'lower', expected a budget with room left after {allowed} reports "
                f"of eps = {eps:g} (there is none: use 'stop')"
            )
        if "eps" not in spec.mechanism:
            raise LdpSimError(f"{key}.exhausted: got 'lower', expected a [mechanism] with an eps to lower")
        lowered = _one_report_mechanism(
            spec, labels, np.asarray(spec.population.distribution, dtype=np.float64), {**spec.mechanism, "eps": last}
        )
    return Policy(p, mech, filter=flt, allowed=allowed, lowered=lowered)


def largest_admitted(flt: Any, eps: float, reports: int) -> float:
    """The largest eps the filter admits after ``reports`` reports of ``eps`` (pure; 0 if
    none), by bisection on the filter's own test (to 1e-12 relative, from below)."""
    state = flt.start(1)
    for _ in range(reports):
        state = flt.spend(state, eps, 0.0)
    lo, hi = 0.0, eps
    if bool(flt.admits(state, hi)[0]):
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bool(flt.admits(state, mid)[0]) else (lo, mid)
    return lo
