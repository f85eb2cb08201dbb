"""Categorical questions (``kind = "categorical"``, the default): answers from a list of
labels, drawn from a stated law or read from a table column (or a numeric column cut into
buckets), privatised by a catalog frequency oracle; the analyst's tasks of
``[[analyst.tasks]]`` estimate their frequencies, with the exact covariance of the
unbiased estimate; item non-response by answer (``loss``) and cross-tabulations."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ldpsim.analyst import bucket
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext, Question
from ldpsim.sim.scenario.common import check_sum_to_one
from ldpsim.sim.scenario.survey_specs import MAX_ANSWERS, QuestionSpec, QuestionsScenarioSpec, _build_mechanism
from ldpsim.sim.servers import Server
from ldpsim.sim.table import Table, TablePopulation, table_population
from ldpsim.sim.tasks import (
    NonresponseTask,
    Task,
    TaskContext,
    confidence_of,
    make_tasks,
    rows_per_checkpoint,
    validate_tasks,
)


@dataclass(frozen=True)
class CategoricalQuestion(Question):
    """A categorical question: its labels, their true law (the column's distribution, or
    the stated law), each table row's answer code, and the loss probability of each answer
    (item non-response, or None)."""

    labels: list[str] = dataclasses.field(default_factory=list)
    prior: NDArray[np.float64] = dataclasses.field(default_factory=lambda: np.zeros(0))
    codes: NDArray[np.int64] | None = None
    loss: NDArray[np.float64] | None = None

    kind: ClassVar[str] = "categorical"
    accepts: ClassVar[str] = "a frequency oracle of the catalog (tagged scenario)"
    crosstabs: ClassVar[bool] = True
    aggregate: ClassVar[bool] = True

    @property
    def k(self) -> int:
        return len(self.labels)

    @classmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[CategoricalQuestion, TablePopulation | None]:
        at = f"questions[{i}]"
        spec, table = ctx.spec, ctx.table
        takes = {
            "ranges": "'ordinal'",
            "quantiles": "'numeric' or 'ordinal'",
            "inclusion": "'multiselect' or 'keyvalue'",
            "values": "'keyvalue'",
        }
        for key in ("range", "estimate", "bins", "quantiles", "bootstrap", "ranges", "inclusion", "values", "variance"):
            if getattr(q, key) is not None:
                raise LdpSimError(
                    f"{at}.{key}: got {show(getattr(q, key))}, expected no {key} for "
                    f"a {cls.kind} question (kind = {takes.get(key, repr('numeric'))} takes one)"
                )
        tp = None
        if table is not None:
            column, labels, prior, codes, tp = _from_table(q, table, ctx.resample, at)
        else:
            column, codes = None, None
            labels, prior = _from_law(q, at)
        mechanisms = {s: question_mechanism(spec, q, labels, prior, ctx.eps_of[s][i], at) for s in STRATEGIES}
        delta = float(q.mechanism.get("delta", 0.0) or 0.0)
        loss = _item_loss(spec, q, labels, mechanisms[spec.budget.runs_as], at)
        return cls(q.name, mechanisms, delta, column, labels, prior, codes, loss), tp

    def answers(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        return self.codes[rows]  # type: ignore[index]

    def draw(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return rng.choice(self.k, size=size, p=self.prior)

    def server(self, mechanism: Any, keep_reports: bool, max_reports: int) -> Server:
        return Server(mechanism, keep_reports, max_reports)

    def aggregate_problem(self, mechanism: Any) -> str | None:
        if mechanism.aggregate_exact:
            return None
        return f"{mechanism!r}: its statistic has no exact law cheaper than drawing every report"

    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        context = TaskContext(mechanism, self.labels, self.prior, spec.simulation.mode, expected_reports)
        out = make_tasks(spec.analyst.tasks, context)
        if self.loss is not None:  # item non-response: its exact bias, and the reweighting
            out.append(
                NonresponseTask(context, 1.0 - self.loss, spec.analyst.reweight, confidence_of(spec.analyst.tasks))
            )
        for task in out:
            task.name = f"{name}:{task.name}"
        return out

    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        split = self.mechanisms["split"].estimate_variance(self.prior, float(size))
        one = self.mechanisms["one_random"].estimate_variance(self.prior, size / count)
        return [
            {
                "question": self.name,
                "category": label,
                "truth": float(p),
                "var_split": float(a),
                "var_one_random": float(b),
            }
            for label, p, a, b in zip(self.labels, self.prior, split, one)
        ]

    def design_problem(self, mechanism: Any) -> str | None:
        if type(mechanism).unit_statistics is FrequencyOracle.unit_statistics:
            return f"{mechanism!r} gives no statistic of each report alone"
        if not mechanism.identifiable:
            return f"{mechanism!r} cannot estimate the {self.k} frequencies (its matrix has rank below {self.k})"
        return None

    def design_labels(self, mechanism: Any) -> list[str]:
        return list(self.labels)

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        a, b = unit_inverse(mechanism)
        return mechanism.unit_statistics(reports) @ a.T + b

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        return np.eye(self.k)[self.codes[rows]]  # type: ignore[index]

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        return np.asarray(mechanism.inversion_coefficient_range(), dtype=np.float64)

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        return answer_noise(mechanism)[self.codes[rows]]  # type: ignore[index]

    def describe(self) -> str:
        return f"{self.k} answers"

    def answers_summary(self) -> Any:
        return self.k

    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        return rows_per_checkpoint(spec.analyst.tasks, self.k) + (4 * self.k if self.loss is not None else 0)


def unit_inverse(mechanism: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The oracle's unbiased estimate as an affine map of the statistic's frequencies,
    ``invert(f) = A f + b`` (``A``: ``k x s``), so that one report's term is ``A s_i + b``
    (``s_i`` its own statistic) and their mean is the estimate. Cached on the mechanism."""
    cached = mechanism.__dict__.get("_unit_inverse")
    if cached is None:
        size = mechanism.statistic_size
        b = np.asarray(mechanism.invert(np.zeros(size)), dtype=np.float64)
        a = np.stack([np.asarray(mechanism.invert(e), dtype=np.float64) - b for e in np.eye(size)], axis=1)
        cached = (a, b)
        mechanism.__dict__["_unit_inverse"] = cached
    return cached


def answer_noise(mechanism: Any) -> NDArray[np.float64]:
    """``k x k``: row x is the exact variance of one report's term of each frequency
    estimate when its answer is x (the estimate's variance at a point-mass prior, n = 1)."""
    cached = mechanism.__dict__.get("_answer_noise")
    if cached is None:
        cached = np.stack([mechanism.estimate_variance(e, 1.0) for e in np.eye(mechanism.k)])
        mechanism.__dict__["_answer_noise"] = cached
    return cached


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


def question_mechanism(
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
        validate_tasks(spec.analyst.tasks, spec.simulation.mode, mech, labels)
    except LdpSimError as exc:
        raise LdpSimError(f"{exc} (with {where})") from None
    return mech
