"""The sections of a survey scenario file, with one question (``[population]``,
``[mechanism]``) or several (``[[questions]]``, ``[budget]``), as the strict pydantic models
that validate them, and the one way a ``[mechanism]`` table becomes a mechanism (through the
catalog, its inputs filled in from the population or from a question's answers).

:mod:`ldpsim.sim.scenario.survey` builds a survey scenario and
:mod:`ldpsim.sim.scenario.questions` the questions of one; both need these, which is why
they live here and not in either: survey imports questions, and questions never imports
survey back.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, model_validator

from ldpsim._text import did_you_mean
from ldpsim._validate import SUM_TOL
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.sim.scenario.common import (
    Model,
    PositiveFloat,
    PositiveTime,
    Probability,
    ScenarioName,
    Time,
)
from ldpsim.sim.scenario.common import NetworkSpec as _Network
from ldpsim.sim.scenario.common import SimulationSpec as _Simulation
from ldpsim.sim.tasks import TEST_ENTRY
from ldpsim.sim.weights import UnitWeight, Weight, sum_problem

# --------------------------------------------------------------------- population
#: Most answers a survey question may have (labels are kept in memory and in the report).
MAX_ANSWERS = 10**6


class AnswersSpec(Model):
    """``answers = { count = 1000, prefix = "app " }``: labels ``prefix1`` .. ``prefix<count>``
    for questions with many answers."""

    count: Annotated[int, Field(ge=2, le=MAX_ANSWERS)]
    prefix: Annotated[str, Field(max_length=50)] = "answer "


class LawSpec(Model):
    """``law = { kind = "zipf", s = 1.1 }`` (``P(answer i) ∝ i^-s``, i = 1..k) or
    ``{ kind = "uniform" }``: a named true distribution instead of a list."""

    kind: Literal["zipf", "uniform"]
    s: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _exponent(self) -> "LawSpec":
        if self.kind == "zipf" and self.s is None:
            raise ValueError("s: got nothing, expected the Zipf exponent s > 0 (P(answer i) proportional to i^-s)")
        if self.kind == "uniform" and self.s is not None:
            raise ValueError(f"s: got {self.s!r}, expected no 's' for kind = 'uniform'")
        return self

    def probabilities(self, k: int) -> list[float]:
        if self.kind == "uniform":
            return [1.0 / k] * k
        w = np.arange(1, k + 1, dtype=np.float64) ** -float(self.s)  # type: ignore[arg-type]
        return (w / w.sum()).tolist()


class PopulationSpec(Model):
    """Who the clients are: an alphabet (``labels``, or ``answers`` for many), the true
    distribution (``distribution``, a named ``law``, or P0/P1 and which holds); or a column
    of a CSV table (``file``, ``column``, optional ``labels``, ``missing``), used as is
    (no ``size``) or resampled to ``size`` clients (:mod:`ldpsim.sim.table`)."""

    labels: Annotated[list[str], Field(min_length=2, max_length=MAX_ANSWERS)] | None = None
    answers: AnswersSpec | None = None
    size: Annotated[int, Field(ge=1, le=10**15)] | None = None
    #: weights: numbers, or exact fractions such as "1/3" (:mod:`ldpsim.sim.weights`)
    distribution: list[Weight] | None = None
    law: LawSpec | None = None
    P0: list[Weight] | None = None
    P1: list[Weight] | None = None
    truth: Literal["P0", "P1"] | None = None
    #: a CSV table, relative to the scenario file, and the column holding the answers
    file: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    column: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    #: what a blank value in the column does: an error, or its row is left out
    missing: Literal["error", "drop"] | None = None

    @model_validator(mode="after")
    def _one_truth(self) -> "PopulationSpec":
        if self.file is not None:
            return self._from_table()
        for key in ("column", "missing"):
            if getattr(self, key) is not None:
                raise ValueError(f"{key}: got {getattr(self, key)!r}, expected no {key!r} without 'file' (a CSV table)")
        if self.size is None:
            raise ValueError("size: got nothing, expected the number of clients (or a table: 'file' and 'column')")
        if (self.labels is None) == (self.answers is None):
            raise ValueError("give either 'labels' (a list) or 'answers' (a count and a prefix), not both")
        pair = (self.P0, self.P1, self.truth)
        given = (self.distribution is not None) + (self.law is not None) + all(v is not None for v in pair)
        if given != 1 or (any(v is not None for v in pair) and not all(v is not None for v in pair)):
            raise ValueError("give one of 'distribution', 'law', or all of 'P0', 'P1' and 'truth'")
        return self._distinct()

    def _distinct(self) -> "PopulationSpec":
        if self.labels is not None and len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        return self

    def _from_table(self) -> "PopulationSpec":
        if self.column is None:
            raise ValueError(f"column: got nothing, expected the column of {self.file} that holds the answers")
        for key in ("answers", "distribution", "law", "P0", "P1", "truth"):
            if getattr(self, key) is not None:
                raise ValueError(
                    f"{key}: got {show(getattr(self, key))}, expected no {key!r} with 'file' "
                    "(the answers and their truth come from the table)"
                )
        return self._distinct()

    def label_list(self) -> list[str]:
        """The answers' labels (generated from ``answers`` when not listed; for a table,
        the built scenario's ``labels``)."""
        if self.labels is not None:
            return self.labels
        a = self.answers
        return [f"{a.prefix}{i}" for i in range(1, a.count + 1)]  # type: ignore[union-attr]

    def true_distribution(self) -> list[float]:
        if self.distribution is not None:
            return self.distribution
        if self.law is not None:
            return self.law.probabilities(len(self.label_list()))
        return self.P0 if self.truth == "P0" else self.P1  # type: ignore[return-value]


# --------------------------------------------------------------------- arrivals
class AllAtOnceSpec(Model):
    kind: Literal["all_at_once"]
    at: Time = 0.0


class PoissonSpec(Model):
    """Poisson arrivals: a Poisson process of rate ``rate`` (or ``size / duration``),
    conditioned on the population size, so arrival times are i.i.d. uniform on
    ``[0, duration]`` with ``duration = size / rate``."""

    kind: Literal["poisson"]
    rate: PositiveFloat | None = None
    duration: PositiveTime | None = None

    @model_validator(mode="after")
    def _rate_or_duration(self) -> "PoissonSpec":
        if (self.rate is None) == (self.duration is None):
            raise ValueError("give exactly one of 'rate' and 'duration'")
        return self


class WavesSpec(Model):
    """Waves: a fraction of the population arrives at each given time."""

    kind: Literal["waves"]
    times: list[Time] = Field(min_length=1)
    fractions: list[UnitWeight] = Field(min_length=1)

    @model_validator(mode="after")
    def _match(self) -> "WavesSpec":
        if len(self.times) != len(self.fractions):
            raise ValueError("'times' and 'fractions' must have the same length")
        problem = sum_problem(self.fractions, "fractions", SUM_TOL)
        if problem is not None:
            raise ValueError(f"fractions: {problem}")
        if any(b < a for a, b in zip(self.times, self.times[1:])):
            raise ValueError("'times' must be non-decreasing")
        return self


ArrivalSpec = Annotated[Union[AllAtOnceSpec, PoissonSpec, WavesSpec], Field(discriminator="kind")]


# --------------------------------------------------------------------- network
class LossByAnswerSpec(Model):
    """``network.loss = { by_answer = { label = probability, ... }, default = ... }``: the
    probability that a report is lost depends on its client's true answer (non-response
    missing not at random); answers not listed are lost with ``default``."""

    by_answer: Annotated[dict[str, Probability], Field(min_length=1)]
    default: Probability = 0.0


class NetworkSpec(_Network):
    """``[network]``: the latency of every report and the probability that it is lost
    (one number, or per answer)."""

    loss: Union[Probability, LossByAnswerSpec] = 0.0

    def loss_text(self) -> str:
        if isinstance(self.loss, LossByAnswerSpec):
            listed = ", ".join(f"{label} {p:g}" for label, p in self.loss.by_answer.items())
            return f"by answer ({listed}; any other {self.loss.default:g})"
        return f"{self.loss}"


# --------------------------------------------------------------------- server and analyst
class ServerSpec(Model):
    """What the server keeps: output counts always; individual reports on request, up to a
    memory budget (reports beyond it are counted but not stored)."""

    keep_reports: bool = False
    max_reports: Annotated[int, Field(ge=0)] = 10_000_000


class CheckpointSpec(Model):
    """When the analyst runs: every ``every`` time units and/or every ``every_reports``
    reports received; always at the end."""

    every: PositiveTime | None = None
    every_reports: Annotated[int, Field(ge=1)] | None = None


class AnalystSpec(Model):
    """``[analyst]``: when to look (``checkpoints``) and what to compute (``tasks``, each a
    kind of the task registry). Hypothesis tests may also be written as tables of their own,
    ``[[analyst.tests]]`` (kind, reference or groups, alpha, sequential): they are tasks of the
    same registry and join ``tasks`` after its entries, their errors naming
    ``analyst.tests[j]``."""

    checkpoints: CheckpointSpec = CheckpointSpec()
    tasks: list[dict[str, Any]] = Field(default_factory=lambda: [{"kind": "frequency"}])
    tests: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _tests_are_tasks(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
            return data
        tasks = data.get("tasks", [{"kind": "frequency"}])
        if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in [*tasks, *data["tests"]]):
            return data  # the fields' own validation names what is wrong
        # entries that joined before (a spec validated again) are replaced, not repeated
        own = [t for t in tasks if TEST_ENTRY not in t]
        joined = [{**t, TEST_ENTRY: j} for j, t in enumerate(data["tests"]) if TEST_ENTRY not in t]
        return {**data, "tasks": [*own, *joined]}

    #: with answer-dependent loss: the analyst knows the response rates and reweights
    reweight: bool = False


class SimulationSpec(_Simulation):
    """How the simulation runs.

    ``mode``: ``individual`` draws every client (values, reports, times); ``aggregate``
    draws only counts, exactly in law (``sample_counts``, binomial thinning for loss,
    multinomial splitting over delivery ticks).
    ``tick``: time resolution; the arrivals of one tick form one cohort (one SimPy event).
    ``end``: when the run stops; reports still in flight are not received.
    """

    mode: Literal["individual", "aggregate"] = "individual"
    tick: PositiveTime | None = None
    end: PositiveTime | None = None
    batch_size: Annotated[int, Field(ge=1)] = 1 << 16


# --------------------------------------------------------------------- fake respondents
class AttackerSpec(Model):
    """A cohort of fake respondents (``[[attackers]]``): ``share`` of the reports the server
    receives are theirs (``m = share n / (1 - share)`` fakes beside ``n`` respondents), sent
    from ``start`` on, all at once (``arrivals = "burst"``) or uniformly until ``stop``
    (``"steady"``; default: when the respondents' arrivals end), to promote ``targets``
    (answer labels, or a number r: the r least frequent answers), or a numeric question's
    mean towards ``target``, with a ``strategy`` of :data:`ldpsim.attacks.STRATEGIES`; with
    ``[[questions]]``, ``question`` names the question attacked."""

    name: Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[A-Za-z0-9_.-]+$")] = "attacker"
    share: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
    targets: Union[Annotated[int, Field(ge=1, le=MAX_ANSWERS)], Annotated[list[str], Field(min_length=1)]] | None = None
    #: a numeric question's target value for its mean (strategies output_mean, input_mean), or
    #: ``{ mean = ..., variance = ... }`` (output_mean_variance, input_mean_variance; checked at build)
    target: Annotated[float, Field(allow_inf_nan=False)] | dict[str, Any] | None = None
    #: with [[questions]]: the name of the question attacked
    question: Annotated[str, Field(min_length=1, max_length=50)] | None = None
    #: a name of :data:`ldpsim.attacks.STRATEGIES` (checked when the scenario is built)
    strategy: Annotated[str, Field(min_length=1, max_length=50)] = "maximal_gain"
    arrivals: Literal["burst", "steady"] = "steady"
    start: Time = 0.0
    stop: PositiveTime | None = None
    #: the false-alarm probability of the server's detection (over the whole collection)
    alpha: float = Field(1e-3, gt=0, lt=1, allow_inf_nan=False)


class ScenarioSpec(Model):
    kind: Literal["survey"] = "survey"
    name: ScenarioName
    description: str = ""
    population: PopulationSpec
    #: ``kind`` = a catalog entry tagged ``scenario``, and its parameters (checked at build)
    mechanism: dict[str, Any] | None = None
    #: several mechanisms compared on the same respondents and network (``[[mechanisms]]``,
    #: each a ``[mechanism]`` table with an optional ``name``)
    mechanisms: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=16)] | None = None
    arrivals: ArrivalSpec
    network: NetworkSpec = NetworkSpec()
    server: ServerSpec = ServerSpec()
    analyst: AnalystSpec = AnalystSpec()
    simulation: SimulationSpec = SimulationSpec()
    #: fake respondents (``[[attackers]]``)
    attackers: Annotated[list[AttackerSpec], Field(max_length=16)] = Field(default_factory=list)


# --------------------------------------------------------------------- several questions
#: Most questions one scenario asks.
MAX_QUESTIONS = 50


class QuestionsPopulationSpec(Model):
    """``[population]`` of a scenario with questions: the respondents only (their answers
    are described by each question): a number (``size``), or a CSV table (``file``) used as
    is or resampled to ``size``; ``missing = "drop"`` leaves out the rows with a blank value
    in any question's column."""

    size: Annotated[int, Field(ge=1, le=10**15)] | None = None
    file: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    missing: Literal["error", "drop"] | None = None
    #: the survey design of the table's rows (:mod:`ldpsim.sim.design`): the columns of the
    #: final weights, the strata and the primary sampling units
    weight: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    strata: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    psu: Annotated[str, Field(min_length=1, max_length=1000)] | None = None

    @model_validator(mode="after")
    def _who(self) -> QuestionsPopulationSpec:
        if self.file is None and self.size is None:
            raise ValueError("size: got nothing, expected the number of respondents (or a table: 'file')")
        for key in ("missing", "weight", "strata", "psu"):
            if self.file is None and getattr(self, key) is not None:
                raise ValueError(f"{key}: got {getattr(self, key)!r}, expected no {key!r} without 'file' (a CSV table)")
        if self.designed and self.size is not None:
            key = next(k for k in ("weight", "strata", "psu") if getattr(self, k) is not None)
            raise ValueError(
                f"size: got {self.size}, expected no size with {key!r} (the table's rows are the design's sample, "
                "used as they are, not resampled)"
            )
        return self

    @property
    def designed(self) -> bool:
        """Whether the table's rows carry a survey design (weights, strata or PSUs)."""
        return any(getattr(self, k) is not None for k in ("weight", "strata", "psu"))


class RangeSpec(Model):
    """One range of an ordinal question: its name and its first and last answers."""

    name: Annotated[str, Field(min_length=1, max_length=100)]
    first: Annotated[str, Field(min_length=1, max_length=1000)]
    last: Annotated[str, Field(min_length=1, max_length=1000)]


class DensitySpec(Model):
    """A numeric question's law without a table: Beta(a, b) stretched over its range
    (``uniform``: Beta(1, 1))."""

    kind: Literal["beta", "uniform"]
    a: PositiveFloat = 1.0
    b: PositiveFloat = 1.0


class QuestionSpec(Model):
    """One ``[[questions]]`` entry."""

    name: Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[A-Za-z0-9_.-]+$")]
    #: the question kind (:mod:`ldpsim.sim.question_kinds`: categorical, numeric, ...);
    #: ``type`` is its older name
    kind: Annotated[str, Field(min_length=1, max_length=50)] | None = None
    type: Annotated[str, Field(min_length=1, max_length=50)] | None = None
    #: numeric questions: what the analyst estimates (mean, distribution, quantiles)
    estimate: Annotated[list[str], Field(max_length=10)] | None = None
    #: numeric questions: equal buckets of the range for a distribution (or for a
    #: frequency oracle), the quantile levels, and the bootstrap replicates of EMS
    bins: Annotated[int, Field(ge=2, le=4096)] | None = None
    quantiles: (
        Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=1, max_length=99)] | None
    ) = None
    bootstrap: Annotated[int, Field(ge=20, le=10_000)] | None = None
    #: numeric questions: the variance too, by Li et al.'s two-group protocol (half the
    #: respondents report the answer, half its square mapped onto the range)
    variance: bool | None = None
    #: ordinal questions: the ranges of answers whose shares the analyst estimates
    ranges: Annotated[list[RangeSpec], Field(min_length=1, max_length=100)] | None = None
    #: multiselect questions without a table: each item's probability of being checked
    inclusion: Annotated[list[Probability], Field(min_length=1, max_length=60)] | None = None
    #: numeric questions without a table: the answers' law over the range
    density: DensitySpec | None = None
    #: keyvalue questions: each key's mean value among its holders, in [-1, 1]
    values: Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=1, max_length=60)] | None = (
        None
    )
    #: numeric questions: the answers' range [lo, hi] (the mechanism's)
    range: Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=2, max_length=2)] | None = (
        None
    )
    #: the table's column holding the answers (default: the question's name)
    column: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    #: a categorical question from a numeric column: the bucket edges e0 < e1 < ... < eB;
    #: the answers are the buckets [e0, e1), ..., [e(B-1), eB] (a histogram of the numbers)
    buckets: (
        Annotated[list[Annotated[float, Field(allow_inf_nan=False)]], Field(min_length=3, max_length=MAX_ANSWERS + 1)]
        | None
    ) = None
    labels: Annotated[list[str], Field(min_length=2, max_length=MAX_ANSWERS)] | None = None
    answers: AnswersSpec | None = None
    distribution: list[Weight] | None = None  # numbers, or exact fractions such as "1/3"
    law: LawSpec | None = None
    #: a catalog entry tagged ``scenario`` and its parameters, without eps
    mechanism: dict[str, Any]
    #: this question's eps under budget.strategy = "split" (default: budget.total / Q)
    eps: PositiveFloat | None = None
    #: item non-response: this question's report is left out of its respondent's message
    #: with a probability that depends on the respondent's answer to it
    loss: LossByAnswerSpec | None = None

    @model_validator(mode="after")
    def _one_kind_key(self) -> QuestionSpec:
        if self.kind is not None and self.type is not None:
            raise ValueError(
                f"type: got {self.type!r} beside kind = {self.kind!r}, expected one of them (type is kind's older name)"
            )
        return self

    @property
    def kind_key(self) -> str:
        """The key the file used for the kind (for errors)."""
        return "type" if self.type is not None else "kind"

    @property
    def question_kind(self) -> str:
        """The question's kind (default: categorical)."""
        return self.kind or self.type or "categorical"


class BudgetSpec(Model):
    """``[budget]``: each respondent's privacy budget and how it is spent (``optimal``: split,
    at the eps of each question that minimise the weighted sum of the exact variances;
    ``weights``: each question's weight by name, default 1 / its variance with the whole
    budget, so that every question counts by its relative loss)."""

    total: PositiveFloat
    strategy: Literal["split", "one_random", "optimal"]
    weights: Annotated[dict[str, PositiveFloat], Field(min_length=1)] | None = None

    @property
    def runs_as(self) -> str:
        """How respondents answer: ``split`` (also under ``optimal``) or ``one_random``."""
        return "one_random" if self.strategy == "one_random" else "split"


class CrosstabSpec(Model):
    """One ``[analyst] crosstabs`` entry: two questions whose independence the analyst tests
    from the pairs of reports (``split`` only): two categorical or ordinal questions with
    finite mechanisms through the product mechanism (also their joint table), any other
    pair whose kinds give each report an unbiased term through the test on paired terms
    (:func:`ldpsim.analyst.association_from_sums`)."""

    rows: Annotated[str, Field(min_length=1, max_length=50)]
    columns: Annotated[str, Field(min_length=1, max_length=50)]
    #: the level of both tests of independence
    alpha: float = Field(0.05, gt=0, lt=1, allow_inf_nan=False)


class HomogeneitySpec(Model):
    """One ``[analyst] homogeneity`` entry: do the groups of respondents of a column of the
    population's table (``by``: gender, region; not privatised) answer ``question`` alike?
    Tested on the question's unbiased terms per report against the groups' indicator."""

    question: Annotated[str, Field(min_length=1, max_length=50)]
    by: Annotated[str, Field(min_length=1, max_length=200)]
    #: the level of the test
    alpha: float = Field(0.05, gt=0, lt=1, allow_inf_nan=False)


class QuestionsAnalystSpec(AnalystSpec):
    """``[analyst]`` of a scenario with questions: also the cross-tabulations and the tests
    of homogeneity across the groups of a table column."""

    crosstabs: Annotated[list[CrosstabSpec], Field(max_length=MAX_QUESTIONS)] = Field(default_factory=list)
    homogeneity: Annotated[list[HomogeneitySpec], Field(max_length=MAX_QUESTIONS)] = Field(default_factory=list)


class QuestionsScenarioSpec(ScenarioSpec):
    """A survey scenario whose respondents answer the ``[[questions]]``."""

    population: QuestionsPopulationSpec  # type: ignore[assignment]
    analyst: QuestionsAnalystSpec = QuestionsAnalystSpec()
    questions: Annotated[list[QuestionSpec], Field(min_length=1, max_length=MAX_QUESTIONS)]
    budget: BudgetSpec


# --------------------------------------------------------------------- mechanisms
#: Catalog roles the loader fills in from ``[population]`` (the file does not set them in
#: ``[mechanism]``), and where each comes from, for messages.
_FILLED = {"alphabet": "population.labels", "P0": "population.P0", "P1": "population.P1", "prior": "population"}


def _build_mechanism(
    spec: ScenarioSpec,
    table: dict[str, Any],
    labels: list[str],
    prior: Any,
    where: str = "mechanism",
    filled: dict[str, Any] | None = None,
) -> FrequencyOracle:
    """A ``[mechanism]`` table built through the one catalog (:mod:`ldpsim.mechanisms.catalog`):
    ``kind`` names an entry tagged ``scenario``, the other keys are its parameters (strictly
    typed; the privacy parameters eps and delta must be stated), and the parameters that
    describe the inputs (alphabet size, P0, P1, prior) come from ``[population]``. Input
    sets (``T``) are written as labels. The mechanism's inputs are named by the labels.
    ``filled``: the values of the filled-in roles when they do not come from ``[population]``
    (a question's own answers)."""
    table = dict(table)
    if "tiers" in table:
        raise LdpSimError(
            f"{where}.tiers: got {show(table['tiers'])}, expected no tiers here (privacy tiers are for "
            "the one [mechanism] of a single-question scenario)"
        )
    pop = spec.population
    usable = catalog.names("scenario")
    kind = table.pop("kind", None)
    if not isinstance(kind, str) or kind not in usable:
        got = "nothing" if kind is None else show(kind)
        other = isinstance(kind, str) and kind in catalog.CATALOG
        hint = f" ({kind} does not report one of finitely many answers)" if other else did_you_mean(kind, usable)
        raise LdpSimError(f"{where}.kind: got {got}, expected one of {', '.join(usable)}{hint}")
    entry = catalog.entry(kind)
    params: dict[str, Any] = {}
    for key, value in table.items():
        p = entry.params.get(key)
        if p is None:
            own = [n for n, q in entry.params.items() if q.role not in _FILLED]
            raise LdpSimError(f"{where}.{key}: got {show(value)}, expected no such key ({kind} takes {', '.join(own)})")
        if p.role in _FILLED:
            raise LdpSimError(
                f"{where}.{key}: got {show(value)}, expected no {key} here: it comes from {_FILLED[p.role]}"
            )
        params[key] = _label_indices(value, labels, key, where) if p.role == "inputs" else value
    for key in ("eps", "delta"):
        if key in entry.params and key not in params:
            raise LdpSimError(
                f"{where}.{key}: got nothing, expected the privacy parameter {key} of {kind} (a scenario states it)"
            )
    if filled is None:
        truth = pop.true_distribution() if pop.file is None else [float(p) for p in prior]  # as written, or the table's
        given = {"alphabet": len(labels), "P0": pop.P0, "P1": pop.P1, "prior": truth}
    else:
        given = filled
    for key, p in entry.params.items():
        if p.role in _FILLED and given[p.role] is not None:
            params[key] = given[p.role]
    try:
        mech = entry.build(strict=True, **params)
    except LdpSimError as exc:
        key = str(exc).partition(":")[0]
        role = entry.params[key].role if key in entry.params else None
        raise LdpSimError(
            f"{_FILLED[role]}: {str(exc).partition(': ')[2]}" if role in _FILLED else f"{where}.{exc}"
        ) from None
    if mech.k != len(labels):
        raise LdpSimError(
            f"{where}.kind: got {kind!r} with {len(labels)} labels, expected exactly {mech.k} labels (its inputs)"
        )
    return mech.with_labels(labels)


def _label_indices(value: Any, labels: list[str], key: str, where: str = "mechanism") -> list[int]:
    """A list of labels as symbol indices (one line naming the key otherwise)."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise LdpSimError(f"{where}.{key}: got {show(value)}, expected a list of labels of the population")
    unknown = [t for t in value if t not in labels]
    if unknown:
        raise LdpSimError(f"{where}.{key}: got {unknown[0]!r}, expected labels of the population {labels}")
    return [labels.index(t) for t in value]
