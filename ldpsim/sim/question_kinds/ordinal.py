"""Ordinal questions (``kind = "ordinal"``): ordered answers (income brackets, age in
years), whose analyst estimates the shares of ranges of answers (``ranges``), the
distribution function at every answer and, with ``quantiles``, the answers where it
crosses each level, all with exact variances (:mod:`ldpsim.mechanisms.ranges`).

The answers are given as for a categorical question (labels in order with a law, or a
table column with ``labels`` giving their order). ``mechanism`` chooses the method:

- ``{ kind = "hierarchical", fanout = 4, oracle = "hadamard_response", consistent = true }``:
  a tree of fan-out ``fanout`` (or ``"optimal"``: the fan-out with the smallest exact mean
  variance over the question's ranges and the distribution function's, at a uniform law),
  each respondent reporting the node of the answer at one random level through a finite
  frequency oracle (``hadamard_response`` or ``randomized_response``), the leaves fitted
  consistently (``consistent = false``: the fewest covering nodes);
- ``{ kind = "haar" }``: HaarHRR;
- any frequency oracle of the catalog (``oue``, ``olh``, ...): the flat method.

A respondent's report is one symbol of a finite mechanism over the answers (the level and
the level's report), so aggregate mode draws the server's counts exactly and the
``[[analyst.tasks]]`` frequency tasks apply as to any categorical question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst import norm_sub
from ldpsim.analyst.estimation import z_value
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.ranges import FlatRanges, HaarRanges, HierarchicalRanges, RangeMethod, optimal_fanout
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext
from ldpsim.sim.question_kinds.categorical import CategoricalQuestion, _from_law, _from_table
from ldpsim.sim.scenario.survey_specs import QuestionSpec, QuestionsScenarioSpec
from ldpsim.sim.table import TablePopulation
from ldpsim.sim.tasks import Checkpoint, Task, confidence_of, rows_per_checkpoint, validate_tasks

#: the methods a mechanism table may name besides a catalog frequency oracle
METHODS = ("hierarchical", "haar")
FANOUTS = (2, 3, 4, 5, 6, 8, 16)


@dataclass(frozen=True)
class OrdinalQuestion(CategoricalQuestion):
    """An ordinal question: a categorical one whose answers are ordered, with its ranges
    (name, first and last answer index) and each strategy's range method."""

    ranges: tuple[tuple[str, int, int], ...] = ()
    levels: tuple[float, ...] = ()
    methods: dict[str, RangeMethod] = field(default_factory=dict)

    kind: ClassVar[str] = "ordinal"
    accepts: ClassVar[str] = "hierarchical (a fan-out and a finite oracle), haar, or a frequency oracle (flat)"
    crosstabs: ClassVar[bool] = True

    @classmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[OrdinalQuestion, TablePopulation | None]:
        at = f"questions[{i}]"
        spec, table = ctx.spec, ctx.table
        for key in ("range", "estimate", "bins", "bootstrap", "loss", "buckets", "inclusion", "values", "variance"):
            if getattr(q, key) is not None:
                raise LdpSimError(f"{at}.{key}: got {show(getattr(q, key))}, expected no {key} for an ordinal question")
        tp = None
        if table is not None:
            column, labels, prior, codes, tp = _from_table(q, table, ctx.resample, at)
            if q.labels is None:
                raise LdpSimError(
                    f"{at}.labels: got nothing, expected the answers in their order (an ordinal question)"
                )
        else:
            column, codes = None, None
            labels, prior = _from_law(q, at)
        ranges = _ranges(q, labels, at)
        levels = tuple(float(a) for a in q.quantiles) if q.quantiles is not None else ()
        if any(not 0.0 < a < 1.0 for a in levels) or len(set(levels)) != len(levels):
            raise LdpSimError(
                f"{at}.quantiles: got {show(q.quantiles)}, expected distinct levels strictly between 0 and 1"
            )
        d = len(labels)
        workload = np.array([(a, b) for _, a, b in ranges] + [(0, j) for j in range(d)], dtype=np.int64)
        size = spec.population.size if spec.population.size is not None else table.rows  # type: ignore[union-attr]
        count = len(spec.questions)
        methods, mechanisms = {}, {}
        for s in STRATEGIES:
            n = size if s == "split" else size / count
            method = _method(q.mechanism, d, ctx.eps_of[s][i], workload, n, at)
            mech = method.finite_mechanism()
            try:
                validate_tasks(spec.analyst.tasks, spec.simulation.mode, mech)
            except LdpSimError as exc:
                raise LdpSimError(f"{exc} (with {at}.mechanism)") from None
            methods[s], mechanisms[s] = method, mech
        question = cls(
            q.name, mechanisms, 0.0, column, labels, prior, codes, None, ranges=ranges, levels=levels, methods=methods
        )
        return question, tp

    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        out = super().tasks(name, mechanism, spec, expected_reports)
        method = self.methods[spec.budget.runs_as]
        out.append(RangeTask(f"{name}:ranges", self, method, confidence_of(spec.analyst.tasks)))
        return out

    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        workload = np.array([(a, b) for _, a, b in self.ranges], dtype=np.int64).reshape(-1, 2)
        if not len(workload):
            return rows
        split = self.methods["split"]
        one = self.methods["one_random"]
        var_split = split.range_variance(workload, self.prior, split.expected_sizes(size))
        var_one = one.range_variance(workload, self.prior, one.expected_sizes(size / count))
        for (label, a, b), vs, vo in zip(self.ranges, var_split, var_one):
            rows.append(
                {
                    "question": self.name,
                    "category": label,
                    "truth": float(self.prior[a : b + 1].sum()),
                    "var_split": float(vs),
                    "var_one_random": float(vo),
                }
            )
        return rows

    # under a design: the answers' shares and the ranges' (sums of them), by the unbiased
    # least-squares inverse of the method's reports
    def design_labels(self, mechanism: Any) -> list[str]:
        return list(self.labels) + [label for label, _, _ in self.ranges]

    def _range_matrix(self) -> NDArray[np.float64]:
        r = np.zeros((self.k, len(self.ranges)))
        for j, (_, a, b) in enumerate(self.ranges):
            r[a : b + 1, j] = 1.0
        return r

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        u = super().design_units(mechanism, reports)
        return np.hstack([u, u @ self._range_matrix()])

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        x = super().design_truth(rows)
        return np.hstack([x, x @ self._range_matrix()])

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        r = super().design_ranges(mechanism)  # a range's term is the sum of its answers' terms
        return np.concatenate([r, r @ self._range_matrix()])

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        r = self._range_matrix()
        table = np.stack(
            [
                np.concatenate([np.diag(c), np.einsum("ij,ik,kj->j", r, c, r)])
                for c in (mechanism.estimate_covariance(e, 1.0) for e in np.eye(self.k))
            ]
        )
        return table[self.codes[rows]]  # type: ignore[index]

    def describe(self) -> str:
        method = self.methods["split"]
        words = {
            "FlatRanges": "flat",
            "HierarchicalRanges": "hierarchical",
            "HaarRanges": "HaarHRR",
        }[type(method).__name__]
        extra = f", fan-out {method.fanout}" if isinstance(method, HierarchicalRanges) else ""
        return f"{self.k} ordered answers, {len(self.ranges)} range(s), {words}{extra}"

    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        return rows_per_checkpoint(spec.analyst.tasks, self.k) + len(self.ranges) + self.k + len(self.levels)


def _ranges(q: QuestionSpec, labels: list[str], at: str) -> tuple[tuple[str, int, int], ...]:
    out: list[tuple[str, int, int]] = []
    for j, r in enumerate(q.ranges or []):
        index = []
        for key in ("first", "last"):
            value = getattr(r, key)
            if value not in labels:
                raise LdpSimError(
                    f"{at}.ranges[{j}].{key}: got {value!r}, expected one of the answers ({show(labels)})"
                )
            index.append(labels.index(value))
        if index[0] > index[1]:
            raise LdpSimError(f"{at}.ranges[{j}].last: got {r.last!r}, expected an answer at or after {r.first!r}")
        if r.name in [name for name, _, _ in out]:
            raise LdpSimError(f"{at}.ranges[{j}].name: got {r.name!r}, expected a name no other range has")
        out.append((r.name, index[0], index[1]))
    return tuple(out)


def _method(table: dict[str, Any], d: int, eps: float, workload: NDArray[np.int64], n: float, at: str) -> RangeMethod:
    """The range method a question's ``mechanism`` table names, at ``eps``."""
    keys = dict(table)
    kind = keys.pop("kind", None)
    where = f"{at}.mechanism"
    if "eps" in keys:
        raise LdpSimError(f"{where}.eps: got {show(keys['eps'])}, expected no eps here: it comes from the budget")
    oracles = catalog.names("scenario")
    if kind == "haar":
        for key, value in keys.items():
            raise LdpSimError(f"{where}.{key}: got {show(value)}, expected no other key for haar")
        return HaarRanges(d, eps)
    if kind == "hierarchical":
        allowed = {"fanout", "oracle", "consistent"}
        for key, value in keys.items():
            if key not in allowed:
                raise LdpSimError(f"{where}.{key}: got {show(value)}, expected one of {', '.join(sorted(allowed))}")
        oracle = keys.get("oracle", "hadamard_response")
        if oracle not in ("hadamard_response", "randomized_response"):
            raise LdpSimError(
                f"{where}.oracle: got {show(oracle)}, expected hadamard_response or randomized_response (a finite "
                "oracle: one symbol per report)"
            )
        consistent = keys.get("consistent", True)
        if not isinstance(consistent, bool):
            raise LdpSimError(f"{where}.consistent: got {show(consistent)}, expected true or false")
        fanout = keys.get("fanout", 4)
        if fanout == "optimal":
            fanout, _ = optimal_fanout(d, eps, n, workload, oracle=oracle, consistent=consistent, fanouts=FANOUTS)
        if not isinstance(fanout, int) or isinstance(fanout, bool) or not 2 <= fanout <= max(2, d):
            raise LdpSimError(f"{where}.fanout: got {show(fanout)}, expected an integer from 2 to {d} or 'optimal'")
        return HierarchicalRanges(d, eps, fanout=fanout, oracle=oracle, consistent=consistent)
    if isinstance(kind, str) and kind in oracles:
        for key, value in keys.items():
            raise LdpSimError(f"{where}.{key}: got {show(value)}, expected no other key for the flat method")
        return FlatRanges(d, eps, oracle=kind)
    raise LdpSimError(
        f"{where}.kind: got {show(kind) if kind is not None else 'nothing'}, expected hierarchical, haar or a "
        f"frequency oracle ({', '.join(oracles)})"
    )


class RangeTask(Task):
    """An ordinal question's ranges, distribution function and quantiles. Rows: ``range``
    (one per named range, ``category`` its name), ``cdf`` (one per answer: the share of
    answers up to it) and ``quantile`` (one per level: the index of the first answer where
    the distribution function reaches it, from 0; the interval: where its normal band
    does). Estimates are unbiased (the methods are linear); intervals use the plug-in
    covariance (the exact one at the estimated law, clipped to the simplex), ``theory`` the
    exact standard error at the true law, both at the respondents each level received."""

    kind = "ranges"

    def __init__(self, name: str, question: OrdinalQuestion, method: RangeMethod, confidence: float) -> None:
        self.name = name
        self.q = question
        self.method = method
        self.z = z_value(confidence)
        d = question.k
        self.workload = np.array(
            [(a, b) for _, a, b in question.ranges] + [(0, j) for j in range(d)], dtype=np.int64
        ).reshape(-1, 2)
        self.truth = np.array([question.prior[a : b + 1].sum() for a, b in self.workload])

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        q = self.q
        m = len(self.workload)
        if isinstance(self.method, FlatRanges):
            collected = self.method.from_counts(checkpoint.counts, checkpoint.n_received)
        else:
            collected = self.method.from_counts(checkpoint.counts)
        if checkpoint.n_received == 0 or np.any(np.asarray(collected.sizes) == 0):
            est = lo = hi = theory = np.full(m, np.nan)
        else:
            est = self.method.answer(collected, self.workload)
            cdf = est[len(q.ranges) :]
            fitted = norm_sub(np.diff(np.concatenate([[0.0], cdf])))
            plug = np.sqrt(self.method.range_variance(self.workload, fitted, collected.sizes))
            theory = np.sqrt(self.method.range_variance(self.workload, q.prior, collected.sizes))
            lo, hi = est - self.z * plug, est + self.z * plug
        rows = []
        labels = [name for name, _, _ in q.ranges] + list(q.labels)
        quantity = ["range"] * len(q.ranges) + ["cdf"] * q.k
        for j in range(m):
            rows.append(
                dict(
                    quantity=quantity[j],
                    category=labels[j],
                    estimate=float(est[j]),
                    ci_low=float(lo[j]),
                    ci_high=float(hi[j]),
                    truth=float(self.truth[j]),
                    theory=float(theory[j]),
                    method=type(self.method).__name__.replace("Ranges", "").lower(),
                )
            )
        cut = len(q.ranges)
        true_cdf = self.truth[cut:]
        for a in q.levels:
            rows.append(
                dict(
                    quantity="quantile",
                    category=f"{a:g}",
                    estimate=_first(est[cut:], a),
                    ci_low=_first(hi[cut:], a),
                    ci_high=_first(lo[cut:], a),
                    truth=_first(true_cdf, a),
                    theory=np.nan,
                    method="inversion/normal",
                )
            )
        return rows


def _first(cdf: NDArray[np.float64], level: float) -> float:
    """The index of the first answer whose distribution function (made monotone) reaches
    ``level``; the last answer when none does; NaN without an estimate."""
    if np.isnan(cdf).any():
        return math.nan
    reached = np.flatnonzero(np.maximum.accumulate(cdf) >= level)
    return float(reached[0]) if reached.size else float(cdf.size - 1)
