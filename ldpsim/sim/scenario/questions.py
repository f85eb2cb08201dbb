"""Several questions per respondent in a survey scenario (``[[questions]]`` and ``[budget]``).

A survey file with a list ``[[questions]]`` asks every respondent several questions
instead of the one of ``[population]`` and ``[mechanism]``. Each question has a ``name``,
its answers (a column of the population's table, or labels and a true law of its own; a
numeric question, ``type = "numeric"`` with a ``range``, reads a column of numbers), and
a catalog mechanism (``mechanism = { kind = ... }``: a finite one, or for a numeric
question one tagged ``numeric``) whose eps comes from the respondent's privacy budget
``[budget] total = E, strategy = ...``:

- ``split``: every respondent answers every question; question j uses ``eps_j``, either
  as each question states it (``eps``; the stated values must sum to ``total``) or
  ``total / Q`` each when no question states one. Per-respondent privacy: the sum of the
  eps_j (basic composition is exact for pure eps, the answers of one respondent being any
  tuple); with (eps, delta) mechanisms, the exact (optimal) composition's delta at that sum.
- ``one_random``: every respondent answers one question, chosen uniformly from their own
  random stream, with the whole budget ``total``; the server learns which question was
  answered. Per-respondent privacy: eps = total, and delta = the mean of the questions'
  deltas at that eps (the choice does not depend on the answers, so the hockey-stick
  divergence of the mixture is the mean of the questions', each at its worst pair).

The built :class:`QuestionSet` also carries, for the design, the mechanisms of both
strategies, the exact per-respondent privacy of each, and the exact variance of every
estimate under each (at n respondents for ``split``, at the expected n / Q for
``one_random``; for a numeric question, of the mean of its reports).

Aggregate mode (categorical questions whose mechanisms have an exact aggregate law): the
respondents are counted by *type*, a distinct row of the table (the answers to all the
questions), or, without a table, all alike (the questions' answers are then drawn at
delivery from their independent laws); see :mod:`ldpsim.sim.engine`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ldpsim._text import did_you_mean
from ldpsim.analyst import bucket
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog, product_mechanism
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.finite import FiniteMechanism
from ldpsim.privacy.composition import optimal_delta_heterogeneous
from ldpsim.sim.scenario.common import check_sum_to_one
from ldpsim.sim.scenario.survey_specs import MAX_ANSWERS, QuestionSpec, QuestionsScenarioSpec, _build_mechanism
from ldpsim.sim.table import Table, TablePopulation, read_scenario_table, table_population
from ldpsim.sim.tasks import validate_tasks

STRATEGIES = ("split", "one_random")


@dataclass(frozen=True)
class Question:
    """A built question: its answers, their true law, its mechanism under each strategy."""

    name: str
    labels: list[str]
    prior: NDArray[np.float64]  # the truth: the column's distribution, or the stated law
    mechanisms: dict[str, FrequencyOracle]  # strategy -> the mechanism at that strategy's eps
    delta: float  # the mechanism's stated delta (0 for pure-eps mechanisms)
    codes: NDArray[np.int64] | None = None  # each table row's answer (None: drawn from prior)
    column: str | None = None
    #: numeric questions: each row's answer, and the exact variance of one report of a
    #: respondent drawn from the rows under each strategy (E[variance(x)] + Var(x))
    values: NDArray[np.float64] | None = None
    report_variance: dict[str, float] | None = None
    #: item non-response (``loss = { by_answer = ... }``): each answer's loss probability
    loss: NDArray[np.float64] | None = None

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def numeric(self) -> bool:
        return self.values is not None


@dataclass(frozen=True)
class Crosstab:
    """A built cross-tabulation: the two questions (indices), the product of their
    mechanisms (inputs: answer pairs, row-major) and the true joint table (``ka x kb``: the
    table's joint distribution of the two columns, or the product of the two laws)."""

    name: str  # the task's name in results.csv: "rows x columns:crosstab"
    first: int
    second: int
    mechanism: FrequencyOracle
    truth: NDArray[np.float64]
    alpha: float

    @property
    def shape(self) -> tuple[int, int]:
        return self.truth.shape


@dataclass(frozen=True)
class QuestionSet:
    """The questions of a scenario, the budget, and the exact accounting of both strategies."""

    questions: tuple[Question, ...]
    strategy: str
    total: float
    size: int  # respondents
    table: TablePopulation | None  # the first question's column (the table's file, for the run's copy)
    rows: int | None  # table rows (kept), when answers come from a table
    resample: bool
    eps: dict[str, list[float]]  # strategy -> each question's eps (as its mechanism was built)
    privacy: pd.DataFrame  # per strategy: eps and delta per respondent
    variance: pd.DataFrame  # per question and answer: the exact variance under each strategy
    crosstabs: tuple[Crosstab, ...] = ()  # [analyst] crosstabs (split only)
    #: aggregate mode with a table: each distinct row's answer codes (types x questions),
    #: each table row's type, and the types' shares of the rows
    type_codes: NDArray[np.int64] | None = None
    row_type: NDArray[np.int64] | None = None
    type_prior: NDArray[np.float64] | None = None

    @property
    def types(self) -> int:
        """Groups of respondents aggregate mode counts: the table's distinct rows, else 1."""
        return 1 if self.type_codes is None else int(self.type_codes.shape[0])

    def type_counts(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Aggregate mode: respondents ``first .. first + size - 1`` counted by type (their
        rows as they are, or a multinomial over the distinct rows when resampling; all alike
        without a table)."""
        if self.type_codes is None:
            return np.array([size], dtype=np.int64)
        if self.resample:
            return rng.multinomial(size, self.type_prior)  # type: ignore[arg-type]
        return np.bincount(self.row_type[first : first + size], minlength=self.types).astype(np.int64)  # type: ignore[index]

    @property
    def count(self) -> int:
        return len(self.questions)

    def mechanism(self, j: int) -> FrequencyOracle:
        """Question j's mechanism in this run (at the scenario's strategy)."""
        return self.questions[j].mechanisms[self.strategy]

    def expected_reports(self) -> int:
        """Reports each question expects: every respondent (split), n / Q (one_random)."""
        return self.size if self.strategy == "split" else max(1, math.ceil(self.size / self.count))

    def row_indices(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The table rows of respondents ``first .. first + size - 1``: as they are, or drawn
        uniformly with replacement (one row per respondent for all questions)."""
        if self.resample:
            return rng.integers(0, self.rows, size=size)
        return np.arange(first, first + size, dtype=np.int64)

    def summary(self) -> dict[str, Any]:
        """For metadata.json: the budget, each strategy's exact privacy, the questions."""
        return {
            "strategy": self.strategy,
            "total_eps": self.total,
            "per_respondent": {
                row["strategy"]: {"eps": row["eps"], "delta": row["delta"]} for row in self.privacy.to_dict("records")
            },
            "questions": [
                {
                    "name": q.name,
                    "column": q.column,
                    "answers": "numeric" if q.numeric else q.k,
                    "mechanism": repr(self.mechanism(j)),
                    "eps": float(self.privacy_eps(j)),
                }
                for j, q in enumerate(self.questions)
            ],
            **({"crosstabs": [c.name for c in self.crosstabs]} if self.crosstabs else {}),
        }

    def privacy_eps(self, j: int) -> float:
        """Question j's exact eps in this run."""
        q = self.questions[j]
        return _eps_of(q.mechanisms[self.strategy], q.delta, self.eps[self.strategy][j])


def _eps_of(mech: FrequencyOracle, delta: float, stated: float) -> float:
    """A mechanism's exact eps: its own at delta 0 when pure, the stated one when it has a
    delta (the catalog's (eps, delta) mechanism is the worst case of its parameters)."""
    return float(mech.epsilon(0.0)) if delta == 0 else float(stated)


def respondent_privacy(eps: list[float], deltas: list[float], strategy: str) -> tuple[float, float]:
    """Exact per-respondent (eps, delta) of questions with parameters (eps_j, delta_j):

    - ``split``: eps = sum eps_j; delta = 0 when every delta_j = 0 (basic composition is
      exact for pure eps), else the optimal composition's delta at that eps
      (:func:`ldpsim.privacy.composition.optimal_delta_heterogeneous`, which is
      1 - prod(1 - delta_j) there);
    - ``one_random``: eps = max eps_j; delta = the mean of the questions' deltas at it.
    """
    if strategy == "split":
        total = math.fsum(eps)
        if not any(deltas):
            return total, 0.0

        return total, float(optimal_delta_heterogeneous(eps, deltas, total))
    # in this design every question runs at the whole budget, so the eps_j are equal
    return max(eps), math.fsum(deltas) / len(deltas)


def build_questions(spec: QuestionsScenarioSpec, where: str) -> QuestionSet:
    """Validate the questions against the population and the budget, and build them."""
    if spec.mechanism is not None or spec.mechanisms is not None:
        key = "mechanism" if spec.mechanism is not None else "mechanisms"
        raise LdpSimError(
            f"{key}: got a [{key}] table, expected none with [[questions]] (each question names its mechanism)"
        )
    pop = spec.population
    names = [q.name for q in spec.questions]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise LdpSimError(f"questions[{i}].name: got {name!r}, expected a name no other question has")
    eps_of = _question_eps(spec)
    table = _read_table(spec, where) if pop.file is not None else None
    resample = pop.size is not None
    built: list[Question] = []
    first_column: TablePopulation | None = None
    for i, q in enumerate(spec.questions):
        at = f"questions[{i}]"
        if q.type == "numeric":
            if q.loss is not None:
                raise LdpSimError(
                    f"{at}.loss: got a loss by answer for a numeric question, expected it on categorical questions only"
                )
            built.append(_numeric_question(spec, q, table, eps_of, i, at))
            first_column = first_column or (_table_file(table, q, resample) if table is not None else None)
            continue
        if q.range is not None:
            raise LdpSimError(
                f"{at}.range: got {q.range!r}, expected no range for "
                "a categorical question (type = 'numeric' takes one)"
            )
        if table is not None:
            column, labels, prior, codes, tp = _from_table(q, table, resample, at)
            first_column = first_column or tp
        else:
            column, codes = None, None
            labels, prior = _from_law(q, at)
        mechanisms = {s: _question_mechanism(spec, q, labels, prior, eps_of[s][i], at) for s in STRATEGIES}
        delta = float(q.mechanism.get("delta", 0.0) or 0.0)
        loss = _item_loss(spec, q, labels, mechanisms[spec.budget.strategy], at)
        built.append(Question(q.name, labels, prior, mechanisms, delta, codes, column, loss=loss))
    if spec.analyst.reweight and all(q.loss is None for q in built):
        raise LdpSimError(
            "analyst.reweight: got true, expected some question with loss = { by_answer = {...} } "
            "(reweighting corrects answer-dependent item non-response)"
        )
    size = pop.size if pop.size is not None else table.rows  # type: ignore[union-attr]
    privacy, variance = _accounting(built, eps_of, size)
    crosstabs = _crosstabs(spec, built)
    types: tuple[Any, ...] = (None, None, None)
    if spec.simulation.mode == "aggregate":
        _check_aggregate(spec, built, crosstabs)
        if table is not None:
            types = _types(built)
    return QuestionSet(
        tuple(built),
        spec.budget.strategy,
        spec.budget.total,
        size,
        first_column,
        table.rows if table is not None else None,
        resample,
        eps_of,
        privacy,
        variance,
        crosstabs,
        *types,
    )


def _item_loss(
    spec: QuestionsScenarioSpec, q: QuestionSpec, labels: list[str], mech: FrequencyOracle, at: str
) -> NDArray[np.float64] | None:
    """``questions[i].loss = { by_answer, default }``: each answer's probability that the
    question's report is left out (None without), and the checks of ``analyst.reweight``."""
    loss = q.loss
    if loss is None:
        return None
    for label in loss.by_answer:
        if label not in labels:
            raise LdpSimError(f"{at}.loss.by_answer: got {label!r}, expected answers among the labels ({show(labels)})")
    vec = np.array([loss.by_answer.get(label, loss.default) for label in labels], dtype=np.float64)
    if np.all(vec == 1.0):
        raise LdpSimError(f"{at}.loss: got probability 1 for every answer, expected some answer to be heard")
    if spec.analyst.reweight:
        if np.any(vec == 1.0):
            bad = labels[int(np.flatnonzero(vec == 1.0)[0])]
            raise LdpSimError(
                f"{at}.loss.by_answer: got 1 for {bad!r}, expected every loss below 1 with "
                "analyst.reweight (an answer never heard cannot be reweighted)"
            )
        if not mech.identifiable:
            raise LdpSimError(
                f"analyst.reweight: got true with {mech!r} ({at}), expected a mechanism whose matrix has "
                f"full row rank {mech.k} (the reweighting corrects an unbiased estimate)"
            )
    vec.setflags(write=False)
    return vec


def _check_aggregate(spec: QuestionsScenarioSpec, built: list[Question], crosstabs: tuple[Crosstab, ...]) -> None:
    """Aggregate mode: categorical questions whose mechanisms have an exact aggregate law,
    each in at most one cross-tabulation (one line naming the key otherwise)."""
    for i, q in enumerate(built):
        if q.numeric:
            raise LdpSimError(
                f"questions[{i}].type: got 'numeric' in aggregate mode, expected simulation.mode = "
                "'individual' for numeric questions (the sum of their reports has no exact aggregate law here)"
            )
        mech = q.mechanisms[spec.budget.strategy]
        if not mech.aggregate_exact:
            raise LdpSimError(
                f"questions[{i}].mechanism.kind: got {spec.questions[i].mechanism.get('kind')!r} in aggregate "
                f"mode ({mech!r}: its statistic has no exact law cheaper than drawing every report), "
                "expected simulation.mode = 'individual'"
            )
    seen: dict[int, int] = {}
    for c, xt in enumerate(crosstabs):
        for key, j in (("rows", xt.first), ("columns", xt.second)):
            if j in seen:
                raise LdpSimError(
                    f"analyst.crosstabs[{c}].{key}: got {built[j].name!r}, already in analyst.crosstabs"
                    f"[{seen[j]}], expected each question in one cross-tabulation in aggregate mode"
                )
            seen[j] = c


def _types(built: list[Question]) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """The table's distinct rows (answer codes of all questions), each row's type and the
    types' shares of the rows."""
    codes = np.stack([q.codes for q in built], axis=1)  # type: ignore[misc]
    type_codes, row_type = np.unique(codes, axis=0, return_inverse=True)
    type_codes = type_codes.astype(np.int64)
    row_type = np.asarray(row_type, dtype=np.int64).ravel()
    prior = np.bincount(row_type, minlength=type_codes.shape[0]) / row_type.size
    for a in (type_codes, row_type, prior):
        a.setflags(write=False)
    return type_codes, row_type, prior


def _crosstabs(spec: QuestionsScenarioSpec, built: list[Question]) -> tuple[Crosstab, ...]:
    """``[analyst] crosstabs``: two categorical questions with finite mechanisms each, under
    ``split``; their product mechanism (built here: the analyst never builds mechanisms) and
    their true joint table."""
    entries = spec.analyst.crosstabs
    if entries and spec.budget.strategy != "split":
        raise LdpSimError(
            f"analyst.crosstabs: got {len(entries)} cross-tabulation(s) with budget.strategy = "
            f"{spec.budget.strategy!r}, expected budget.strategy = 'split' (under one_random nobody "
            "answers two questions)"
        )
    names = [q.name for q in built]
    out: list[Crosstab] = []
    for i, entry in enumerate(entries):
        at = f"analyst.crosstabs[{i}]"
        index = []
        for key in ("rows", "columns"):
            name = getattr(entry, key)
            if name not in names:
                raise LdpSimError(f"{at}.{key}: got {name!r}, expected the name of a question ({', '.join(names)})")
            j = names.index(name)
            q = built[j]
            if q.numeric:
                raise LdpSimError(f"{at}.{key}: got {name!r}, a numeric question, expected a categorical one")
            if q.loss is not None:
                raise LdpSimError(
                    f"{at}.{key}: got {name!r}, a question with a loss by answer, expected a question "
                    "without item non-response (not yet cross-tabulated)"
                )
            mech = q.mechanisms["split"]
            if not isinstance(mech, FiniteMechanism):
                raise LdpSimError(
                    f"{at}.{key}: got {name!r}, whose mechanism {mech!r} has no finite matrix, expected a "
                    "question with a finite mechanism (one output symbol per report)"
                )
            index.append(j)
        a, b = index
        if a == b:
            raise LdpSimError(f"{at}.columns: got {entry.columns!r}, expected a question other than rows")
        qa, qb = built[a], built[b]
        try:
            # both finite (checked above)
            first, second = cast(FiniteMechanism, qa.mechanisms["split"]), cast(FiniteMechanism, qb.mechanisms["split"])
            mech = product_mechanism(first, second)
        except LdpSimError as exc:
            raise LdpSimError(f"{at}: {exc}") from None
        if qa.codes is not None and qb.codes is not None:  # the table's joint distribution
            joint = np.bincount(qa.codes * qb.k + qb.codes, minlength=qa.k * qb.k).astype(np.float64)
            truth = (joint / joint.sum()).reshape(qa.k, qb.k)
        else:  # answers drawn from each question's own law: independent
            truth = np.outer(qa.prior, qb.prior)
        truth.setflags(write=False)
        name = f"{qa.name} x {qb.name}:crosstab"
        if name in [c.name for c in out]:
            raise LdpSimError(f"{at}: got {qa.name!r} x {qb.name!r} twice, expected each cross-tabulation once")
        out.append(Crosstab(name, a, b, mech, truth, entry.alpha))
    return tuple(out)


def _table_file(table: Table, q: QuestionSpec, resample: bool) -> TablePopulation:
    """The table's file as a population record (for the run's copy of the table)."""
    return TablePopulation(
        table.path, table.shown, table.sha256, q.column or q.name, [], np.zeros(table.rows, np.int64), resample
    )


def _numeric_question(
    spec: QuestionsScenarioSpec, q: QuestionSpec, table: Table | None, eps_of: dict[str, list[float]], i: int, at: str
) -> Question:
    """A numeric question: its column's values in ``range``, a numeric catalog mechanism
    at each strategy's eps, the truth (the column's mean) and the exact report variances."""
    if table is None:
        raise LdpSimError(f"{at}.type: got 'numeric' without population.file, expected a table column with the answers")
    if q.range is None:
        raise LdpSimError(f"{at}.range: got nothing, expected [lo, hi], the range of the answers")
    lo, hi = q.range
    if not hi > lo:
        raise LdpSimError(f"{at}.range: got {q.range!r}, expected [lo, hi] with lo < hi")
    for key in ("labels", "answers", "distribution", "law"):
        if getattr(q, key) is not None:
            raise LdpSimError(f"{at}.{key}: got {show(getattr(q, key))}, expected no {key!r} for a numeric question")
    column = q.column or q.name
    raw = table.column(column)
    values = np.empty(len(raw), dtype=np.float64)
    for r, text in enumerate(raw):
        try:
            x = float(text)
        except ValueError:
            x = math.nan
        if not (lo <= x <= hi):  # what the value is like, never the value: it is the file's
            got = (
                "a blank value"
                if text == ""
                else "a value that is not a number"
                if math.isnan(x)
                else "a number outside the range"
            )
            raise LdpSimError(
                f"{at}.column: {table.where(r, column)}: got {got}, expected a number in the range [{lo:g}, {hi:g}]"
            )
        values[r] = x
    if values.size == 0:
        raise LdpSimError(f"{at}.column: {table.shown}, column {column!r}: got no values, expected at least one answer")
    values.setflags(write=False)
    table_keys = dict(q.mechanism)
    kind = table_keys.pop("kind", None)
    sampler = table_keys.pop("sampler", "float")
    usable = catalog.names("numeric")
    if not isinstance(kind, str) or kind not in usable:
        raise LdpSimError(
            f"{at}.mechanism.kind: got {show(kind) if kind is not None else 'nothing'}, expected one of "
            f"{', '.join(usable)}{did_you_mean(kind, usable)}"
        )
    for key, value in table_keys.items():
        raise LdpSimError(
            f"{at}.mechanism.{key}: got {show(value)}, expected no such key (eps comes from the budget, "
            f"lo and hi from {at}.range)"
        )
    kind = catalog.with_sampler(kind, sampler, f"{at}.mechanism.sampler")
    mechanisms, variance = {}, {}
    for s in STRATEGIES:
        try:
            mech = catalog.entry(kind).build(strict=True, eps=eps_of[s][i], lo=float(lo), hi=float(hi))
        except LdpSimError as exc:
            raise LdpSimError(f"{at}.mechanism: {exc} (at eps {eps_of[s][i]:g} under {s!r})") from None
        mechanisms[s] = mech
        ok = np.asarray(mech.valid_answers(values), dtype=bool)
        if not ok.all():
            r = int(np.flatnonzero(~ok)[0])
            raise LdpSimError(
                f"{at}.column: {table.where(r, column)}: got a number that is not an integer, expected an integer "
                f"(mechanism.sampler = {sampler!r} reports integer answers plus integer noise)"
            )
        # one report of a respondent drawn from the rows: E[variance(x)] + Var(x)
        variance[s] = float(np.mean(mech.variance(values)) + np.var(values))
    mean = float(np.mean(values))
    return Question(q.name, [], np.array([mean]), mechanisms, 0.0, None, column, values, variance)


def _question_eps(spec: QuestionsScenarioSpec) -> dict[str, list[float]]:
    """Each question's eps under each strategy (the scenario's, and the other for comparison)."""
    b = spec.budget
    qs = spec.questions
    stated = [q.eps for q in qs]
    if b.strategy == "one_random":
        for i, e in enumerate(stated):
            if e is not None:
                raise LdpSimError(
                    f"questions[{i}].eps: got {e!r}, expected no eps with budget.strategy = 'one_random' "
                    "(each respondent answers one question with the whole budget.total)"
                )
    if all(e is None for e in stated):
        split = [b.total / len(qs)] * len(qs)
    else:
        missing = [i for i, e in enumerate(stated) if e is None]
        if missing:
            raise LdpSimError(
                f"questions[{missing[0]}].eps: got nothing, expected an eps for every question or for none "
                "(none: budget.total is divided equally)"
            )
        split = [float(e) for e in stated]  # type: ignore[arg-type]
        if abs(math.fsum(split) - b.total) > 1e-9 * b.total:
            raise LdpSimError(
                f"budget.total: got {b.total!r}, expected the sum of the questions' eps ({math.fsum(split)!r}) "
                "with budget.strategy = 'split'"
            )
    return {"split": split, "one_random": [b.total] * len(qs)}


def _read_table(spec: QuestionsScenarioSpec, where: str) -> Table:
    pop = spec.population
    table = read_scenario_table(pop.file, where)  # type: ignore[arg-type]
    columns = []
    for i, q in enumerate(spec.questions):
        try:
            columns.append(table.column(q.column or q.name))
        except LdpSimError as exc:
            raise LdpSimError(f"questions[{i}].{'column' if q.column else 'name'}: {exc}") from None
    if pop.missing == "drop":  # rows blank in any question's column are left out of all
        keep = [r for r in range(table.rows) if all(c[r] != "" for c in columns)]
        if len(keep) < table.rows:
            table = dataclasses.replace(
                table,
                columns=tuple(tuple(c[r] for r in keep) for c in table.columns),
                lines=tuple(table.lines[r] for r in keep),
            )
    return table


def _from_table(q: QuestionSpec, table: Table, resample: bool, at: str) -> tuple[Any, ...]:
    for key in ("answers", "distribution", "law"):
        if getattr(q, key) is not None:
            raise LdpSimError(
                f"{at}.{key}: got {show(getattr(q, key))}, expected no {key!r} with population.file "
                "(the answers and their truth come from the table)"
            )
    column = q.column or q.name
    if q.buckets is not None:
        table, column = _bucketed(q, table, column, at)
    try:
        tp = table_population(table, column, q.labels, resample, "error", MAX_ANSWERS)
    except LdpSimError as exc:
        raise LdpSimError(f"{at}.column: {str(exc).replace('population.labels', f'{at}.labels')}") from None
    return column, tp.labels, tp.distribution, tp.codes, tp


def bucket_labels(edges: list[float]) -> list[str]:
    """``[a, b)`` for each bucket, the last one closed: ``[a, b]``."""
    shown = [f"{e:g}" for e in edges]
    return [f"[{a}, {b}{']' if i == len(edges) - 2 else ')'}" for i, (a, b) in enumerate(zip(shown, shown[1:]))]


def _bucketed(q: QuestionSpec, table: Table, column: str, at: str) -> tuple[Table, str]:
    """The table with the numeric column ``column`` replaced by its buckets' labels (blank
    values stay blank, for ``population.missing``); one line naming the row and column of a
    value that is not a number or lies outside the edges."""
    edges = [float(e) for e in q.buckets]  # type: ignore[union-attr]
    if any(b <= a for a, b in zip(edges, edges[1:])):
        raise LdpSimError(f"{at}.buckets: got {show(edges)}, expected increasing edges e0 < e1 < ...")
    if q.labels is not None:
        raise LdpSimError(f"{at}.labels: got {show(q.labels)}, expected no labels with buckets (they are the buckets)")
    try:
        raw = table.column(column)
    except LdpSimError as exc:
        raise LdpSimError(f"{at}.column: {exc}") from None
    text = pd.Series(raw, dtype=object)
    seen = (text != "").to_numpy()
    values = pd.to_numeric(text.where(seen, None), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(seen & ~((values >= edges[0]) & (values <= edges[-1])))  # also not a number
    if bad.size:
        r = int(bad[0])
        got = "a value that is not a number" if math.isnan(values[r]) else "a number outside the buckets"
        raise LdpSimError(
            f"{at}.column: {table.where(r, column)}: got {got}, expected a number in "
            f"[{edges[0]:g}, {edges[-1]:g}] ({at}.buckets)"
        )
    labels = bucket_labels(edges)
    idx = np.zeros(len(raw), dtype=np.int64)
    idx[seen] = bucket(values[seen], edges)
    derived = tuple(labels[i] if ok else "" for i, ok in zip(idx, seen))
    name = f"{column} (buckets)"
    return dataclasses.replace(table, header=table.header + (name,), columns=table.columns + (derived,)), name


def _from_law(q: QuestionSpec, at: str) -> tuple[list[str], NDArray[np.float64]]:
    if q.column is not None:
        raise LdpSimError(f"{at}.column: got {q.column!r}, expected no column without population.file (a CSV table)")
    if (q.labels is None) == (q.answers is None):
        raise LdpSimError(f"{at}.labels: give either 'labels' (a list) or 'answers' (a count and a prefix), not both")
    if (q.distribution is None) == (q.law is None):
        raise LdpSimError(f"{at}.distribution: give one of 'distribution' and 'law'")
    if q.labels is not None:
        labels = q.labels
        if len(set(labels)) != len(labels):
            raise LdpSimError(f"{at}.labels: labels must be distinct")
    else:
        a = q.answers
        labels = [f"{a.prefix}{i}" for i in range(1, a.count + 1)]  # type: ignore[union-attr]
    if q.distribution is not None:
        vec = q.distribution
        if len(vec) != len(labels):
            raise LdpSimError(f"{at}.distribution: got {len(vec)} entries, expected one per label ({len(labels)})")
        check_sum_to_one(vec, f"{at}.distribution")
    else:
        vec = q.law.probabilities(len(labels))  # type: ignore[union-attr]
    prior = np.asarray(vec, dtype=np.float64)
    return labels, prior / prior.sum()


def _question_mechanism(
    spec: QuestionsScenarioSpec, q: QuestionSpec, labels: list[str], prior: Any, eps: float, at: str
) -> FrequencyOracle:
    table = dict(q.mechanism)
    where = f"{at}.mechanism"
    if "eps" in table:
        raise LdpSimError(
            f"{where}.eps: got {show(table['eps'])}, expected no eps here: it comes from the budget "
            f"({at}.eps under 'split', else budget.total)"
        )
    kind = table.get("kind")
    if isinstance(kind, str) and kind in catalog.names("scenario") and "eps" not in catalog.entry(kind).params:
        raise LdpSimError(
            f"{where}.kind: got {kind!r}, expected a mechanism with an eps parameter (its eps comes from the budget)"
        )
    table["eps"] = eps
    filled = {"alphabet": len(labels), "P0": None, "P1": None, "prior": [float(p) for p in prior]}
    mech = _build_mechanism(spec, table, labels, prior, where, filled=filled)

    try:
        validate_tasks(spec.analyst.tasks, spec.simulation.mode, mech)
    except LdpSimError as exc:
        raise LdpSimError(f"{exc} (with {where})") from None
    return mech


def _accounting(
    questions: list[Question], eps_of: dict[str, list[float]], size: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both strategies' exact per-respondent privacy, and the exact variance of every
    estimate under each (split: n respondents; one_random: n / Q, the expected number)."""
    count = len(questions)
    rows = []
    for s in STRATEGIES:
        eps = [_eps_of(q.mechanisms[s], q.delta, e) for q, e in zip(questions, eps_of[s])]
        total, delta = respondent_privacy(eps, [q.delta for q in questions], s)
        rows.append({"strategy": s, "eps": total, "delta": delta, "question_eps": ", ".join(f"{e:.6g}" for e in eps)})
    privacy = pd.DataFrame(rows)
    var_rows = []
    for q in questions:
        if q.numeric:  # the mean of the reports
            var = q.report_variance or {}
            var_rows.append(
                {
                    "question": q.name,
                    "category": "mean",
                    "truth": float(q.prior[0]),
                    "var_split": var["split"] / size,
                    "var_one_random": var["one_random"] / (size / count),
                }
            )
            continue
        split = q.mechanisms["split"].estimate_variance(q.prior, float(size))
        one = q.mechanisms["one_random"].estimate_variance(q.prior, size / count)
        for label, p, a, b in zip(q.labels, q.prior, split, one):
            var_rows.append(
                {
                    "question": q.name,
                    "category": label,
                    "truth": float(p),
                    "var_split": float(a),
                    "var_one_random": float(b),
                }
            )
    return privacy, pd.DataFrame(var_rows)
