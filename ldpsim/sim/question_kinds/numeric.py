"""Numeric questions (``kind = "numeric"``): answers are numbers in a stated ``range``
read from a table column; the analyst estimates what ``estimate`` lists:

- ``"mean"`` (the default): the mean of the answers;
- ``"distribution"``: the answers' distribution on ``bins`` equal buckets of the range
  (the distribution function at each bucket's right edge, and the Wasserstein-1 and
  Kolmogorov-Smirnov distances of the estimate from the truth);
- ``"quantiles"``: the quantiles at ``quantiles`` (default: the deciles 0.1 and 0.9, the
  quartiles and the median), each with an interval.

Two families of mechanisms, chosen by ``mechanism.kind``:

- a **numeric** catalog mechanism (tagged ``numeric``: ``laplace_bounded``, ``piecewise``,
  ``duchi``, ``hybrid``, ``square_wave``, ...) privatises the number itself. Its reports are
  unbiased for the answer, so the mean of the reports is unbiased, with the exact variance
  ``(E[variance(x)] + Var(x)) / n``. Only ``square_wave`` also gives a distribution: its
  server keeps the counts of the raw reports in ``bins`` equal buckets of ``[-b, 1 + b]``,
  and EMS (expectation-maximisation with smoothing, Li et al. 2020) decodes them. EMS is
  biased (smoothing trades bias for variance); its intervals are those of a parametric
  bootstrap (``bootstrap`` replicates of the bucket counts drawn from the fitted law, EMS
  restarted from the estimate, basic (reflected) percentile intervals);
- a **frequency oracle** of the catalog (tagged ``scenario``: ``oue``, ``olh``,
  ``randomized_response``, ...) over the ``bins`` buckets of the range: each respondent
  reports the bucket of the answer. The unbiased estimate of the buckets' probabilities is
  linear in the server's statistic, so the distribution function at every edge and the mean
  of the bucket midpoints have exact variances; quantile intervals invert the pointwise
  normal intervals of the distribution function. The midpoint mean is biased by less than
  half a bucket; the report states the exact bias beside it.

With ``variance = true`` (a numeric mechanism, ``estimate = ["mean"]``) the question also
estimates the answers' variance by Li et al.'s two-group protocol
(:mod:`ldpsim.analyst.means`): each respondent falls in one of two groups with probability
1/2 (drawn from the stream that privatises the question's reports, so questions without the
key draw exactly as before); the first group privatises the answer, the second its square
mapped onto the range. The server keeps ``[sum_1, n_1, sum_2, n_2]``; the analyst reports the
mean (the first group's), the second moment and the variance, each beside its exact
expectation and with its exact standard error at the groups' sizes received
(:func:`ldpsim.analyst.moments_law` with ``drawn=True``). The joint attacks
``output_mean_variance`` and ``input_mean_variance`` send such reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from ldpsim._text import did_you_mean
from ldpsim.analyst import bucket, norm_sub
from ldpsim.analyst.distribution import (
    em_counts,
    kolmogorov_smirnov,
    quantile,
    square_wave_transition,
    wasserstein1,
)
from ldpsim.analyst.estimation import z_value
from ldpsim.analyst.means import (
    MomentsLaw,
    moment_reports,
    moments_from_sums,
    moments_law,
    moments_law_of,
    square_input,
    square_range,
)
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext, Question, WithoutAnswerList
from ldpsim.sim.question_kinds.categorical import question_mechanism, unit_inverse
from ldpsim.sim.scenario.survey_specs import QuestionSpec, QuestionsScenarioSpec
from ldpsim.sim.servers import MomentsServer, NumericServer, Server
from ldpsim.sim.table import Table, TablePopulation
from ldpsim.sim.tasks import Checkpoint, MeanTask, Task, confidence_of

#: what a numeric question may estimate
ESTIMATES = ("mean", "distribution", "quantiles")
#: default quantile levels: deciles 0.1 and 0.9, quartiles, median
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
#: default buckets of the range for a distribution, and bootstrap replicates
BINS = 64
BOOTSTRAP = 100


@dataclass(frozen=True)
class NumericQuestion(WithoutAnswerList, Question):
    """A numeric question: each table row's answer, the range, what is estimated and how.

    ``labels`` is empty and ``prior`` holds the answers' mean (the truth of the mean),
    as the scenario's single-question fields expect."""

    values: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    lo: float = 0.0
    hi: float = 1.0
    #: numeric mechanisms: the exact variance of one report of a respondent drawn from
    #: the rows under each strategy (E[variance(x)] + Var(x)); None for a bucketed oracle
    report_variance: dict[str, float] | None = None
    estimate: tuple[str, ...] = ("mean",)
    bins: int = BINS
    levels: tuple[float, ...] = LEVELS
    bootstrap: int = BOOTSTRAP
    #: whether answers are reported as their bucket through a frequency oracle
    bucketed: bool = False
    #: without a table: the answers' law, Beta(a, b) stretched over [lo, hi]
    law: tuple[float, float] | None = None
    #: whether the variance is estimated too (the two-group protocol, module docstring)
    variance: bool = False

    kind: ClassVar[str] = "numeric"
    accepts: ClassVar[str] = (
        "a numeric mechanism of the catalog (tagged numeric; square_wave for a distribution) "
        "or a frequency oracle over the buckets (tagged scenario)"
    )

    @property
    def prior(self) -> NDArray[np.float64]:
        return np.array([self.true_mean()])

    def true_mean(self) -> float:
        """The answers' mean: the table's, or the stated law's."""
        if self.law is None:
            return float(np.mean(self.values))
        a, b = self.law
        return self.lo + (self.hi - self.lo) * a / (a + b)

    def true_quantile(self, level: float) -> float:
        """The answers' quantile: the table's (linear between order statistics), or the law's."""
        if self.law is None:
            return float(np.quantile(self.values, level))
        return self.lo + (self.hi - self.lo) * float(stats.beta.ppf(level, *self.law))

    def true_variance(self) -> float:
        if self.law is None:
            return float(np.var(self.values))
        a, b = self.law
        return (self.hi - self.lo) ** 2 * a * b / ((a + b) ** 2 * (a + b + 1))

    def expected(self, fn: Any) -> float:
        """``E[fn(x)]`` over the answers: the table's mean, or by quadrature of the law."""
        if self.law is None:
            return float(np.mean(fn(self.values)))
        width = self.hi - self.lo
        return float(stats.beta(*self.law).expect(lambda u: float(np.asarray(fn(self.lo + width * u)))))

    @property
    def edges(self) -> NDArray[np.float64]:
        return np.linspace(self.lo, self.hi, self.bins + 1)

    @property
    def codes(self) -> NDArray[np.int64]:
        """Each row's bucket."""
        return bucket(self.values, self.edges)

    def truth_histogram(self) -> NDArray[np.float64]:
        if self.law is None:
            return np.bincount(self.codes, minlength=self.bins) / self.values.size
        return np.diff(stats.beta.cdf((self.edges - self.lo) / (self.hi - self.lo), *self.law))

    def midpoints(self) -> NDArray[np.float64]:
        e = self.edges
        return (e[:-1] + e[1:]) / 2.0

    # ----------------------------------------------------------------- building
    @classmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[NumericQuestion, TablePopulation | None]:
        at = f"questions[{i}]"
        table = ctx.table
        if (table is None) == (q.density is None):
            raise LdpSimError(
                f"{at}.density: got {'nothing without population.file' if table is None else 'a law beside a table'}, "
                "expected one source of answers: a table column, or a density (Beta(a, b) over the range) without one"
            )
        if q.range is None:
            raise LdpSimError(f"{at}.range: got nothing, expected [lo, hi], the range of the answers")
        lo, hi = q.range
        if not hi > lo:
            raise LdpSimError(f"{at}.range: got {q.range!r}, expected [lo, hi] with lo < hi")
        if q.loss is not None:
            raise LdpSimError(
                f"{at}.loss: got a loss by answer for a numeric question, expected it on categorical questions only"
            )
        for key in ("labels", "answers", "distribution", "law", "buckets", "ranges", "inclusion", "values"):
            if getattr(q, key) is not None:
                raise LdpSimError(
                    f"{at}.{key}: got {show(getattr(q, key))}, expected no {key!r} for a numeric question"
                )
        estimate = _estimate(q, at)
        levels = tuple(float(a) for a in q.quantiles) if q.quantiles is not None else LEVELS
        if q.quantiles is not None and "quantiles" not in estimate:
            raise LdpSimError(f"{at}.quantiles: got {show(q.quantiles)}, expected none unless estimate has 'quantiles'")
        if any(not 0.0 < a < 1.0 for a in levels) or len(set(levels)) != len(levels):
            raise LdpSimError(
                f"{at}.quantiles: got {show(q.quantiles)}, expected distinct levels strictly between 0 and 1"
            )
        column = q.column or q.name if table is not None else None
        if table is not None:
            values = _values(table, column, float(lo), float(hi), at)  # type: ignore[arg-type]
            law = None
        else:
            values = np.zeros(0)
            law = (1.0, 1.0) if q.density.kind == "uniform" else (float(q.density.a), float(q.density.b))  # type: ignore[union-attr]
        table_keys = dict(q.mechanism)
        kind = table_keys.pop("kind", None)
        numeric, oracles = catalog.names("numeric"), catalog.names("scenario")
        if not isinstance(kind, str) or kind not in numeric + oracles:
            usable = numeric + oracles
            raise LdpSimError(
                f"{at}.mechanism.kind: got {show(kind) if kind is not None else 'nothing'}, expected a numeric "
                f"mechanism ({', '.join(numeric)}) or a frequency oracle over the buckets "
                f"({', '.join(oracles)}){did_you_mean(kind, usable)}"
            )
        bucketed = kind not in numeric
        wants_distribution = any(e in estimate for e in ("distribution", "quantiles"))
        if (q.bins is not None or q.bootstrap is not None) and not wants_distribution and not bucketed:
            key = "bins" if q.bins is not None else "bootstrap"
            raise LdpSimError(
                f"{at}.{key}: got {show(getattr(q, key))}, expected none unless estimate has 'distribution' or "
                "'quantiles' (or the mechanism is a frequency oracle over buckets)"
            )
        if wants_distribution and not bucketed and kind != "square_wave":
            raise LdpSimError(
                f"{at}.mechanism.kind: got {kind!r} with estimate = {show(list(estimate))}, expected square_wave "
                "or a frequency oracle over the buckets (the other numeric mechanisms estimate the mean only)"
            )
        bins = int(q.bins) if q.bins is not None else BINS
        if q.variance:
            _check_variance(q, at, kind, bucketed, estimate)
        base = dict(
            law=law,
            values=values,
            lo=float(lo),
            hi=float(hi),
            estimate=estimate,
            bins=bins,
            levels=levels,
            bootstrap=int(q.bootstrap) if q.bootstrap is not None else BOOTSTRAP,
            bucketed=bucketed,
            variance=bool(q.variance),
        )
        if bucketed:
            mechanisms = _oracles(ctx, q, i, at, kind, table_keys, bins)
            question = cls(q.name, mechanisms, float(q.mechanism.get("delta", 0.0) or 0.0), column, **base)  # type: ignore[arg-type]
        else:
            probe = cls(q.name, {}, 0.0, column, **base)  # type: ignore[arg-type]
            mechanisms, variance = _numeric_mechanisms(ctx, i, at, kind, table_keys, probe, float(lo), float(hi))
            question = cls(q.name, mechanisms, 0.0, column, report_variance=variance, **base)  # type: ignore[arg-type]
        if table is None:
            return question, None
        record = TablePopulation(
            table.path, table.shown, table.sha256, q.column or q.name, [], np.zeros(table.rows, np.int64), ctx.resample
        )
        return question, record

    # ----------------------------------------------------------------- the run
    def answers(self, rows: NDArray[np.int64]) -> NDArray[Any]:
        return self.codes[rows] if self.bucketed else self.values[rows]

    def draw(self, size: int, rng: np.random.Generator) -> NDArray[Any]:
        a, b = self.law if self.law is not None else (1.0, 1.0)  # drawn only without a table, with a law
        x = self.lo + (self.hi - self.lo) * rng.beta(a, b, size=size)
        return bucket(x, self.edges) if self.bucketed else x

    def server(self, mechanism: Any, keep_reports: bool, max_reports: int) -> Any:
        if self.variance:
            return MomentsServer()
        if self.bucketed:
            return Server(mechanism, keep_reports, max_reports)
        if self.wants_distribution:
            b = mechanism.b
            return NumericServer(lambda y: _cells(mechanism.raw(y), b, self.bins), self.bins)
        return NumericServer()

    # ----------------------------------------------------------------- the variance (two groups)
    def privatize(self, mechanism: Any, answers: NDArray[Any], rng: np.random.Generator) -> NDArray[Any]:
        if not self.variance:
            return mechanism.privatize(answers, rng)
        second, y = moment_reports(mechanism, answers, rng)
        return np.column_stack([second.astype(np.float64), y])

    @property
    def two_groups(self) -> bool:
        return self.variance

    def attack_prior(self, strategy: str) -> NDArray[np.float64]:
        """With ``variance``: the honest answers' mean and second moment (what the joint
        strategies read), then the exact variances of one honest report in each group (on
        the scales of the mean and of the second moment), for the campaign's exact rows."""
        if not self.variance:
            return self.prior
        one = self.report_law(strategy)
        return np.array([one.mean, one.second_moment, one.mean_var, one.second_moment_var])

    def report_law(self, strategy: str) -> MomentsLaw:
        """The exact law of the two-group estimates from one report in each group of a
        respondent drawn from the answers (the table's rows, or the law by quadrature)."""
        mech = self.mechanisms[strategy]
        if self.law is None:
            return moments_law(mech, self.values, self.values, 1, 1, drawn=True)
        q_lo, q_hi = square_range(self.lo, self.hi)
        k = (q_hi - q_lo) / (self.hi - self.lo)
        mean, m2 = self.true_mean(), self.expected(lambda x: x * x)
        noise1 = self.expected(mech.variance) + self.true_variance()
        noise2 = k * k * self.expected(lambda x: mech.variance(square_input(x, self.lo, self.hi)))
        noise2 += self.expected(lambda x: x**4) - m2 * m2
        return MomentsLaw(mean, noise1, m2, noise2, m2 - mean * mean - noise1, noise2 + 4 * mean * mean * noise1)

    @property
    def wants_distribution(self) -> bool:
        return "distribution" in self.estimate or "quantiles" in self.estimate

    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        confidence = confidence_of(spec.analyst.tasks)
        out: list[Task] = []
        strategy = spec.budget.runs_as
        if self.variance:
            one = self.report_law(strategy)
            return [MomentsTask(f"{name}:{part}", part, self, one, confidence) for part in MOMENTS]
        if "mean" in self.estimate:
            if self.bucketed:
                out.append(BucketMeanTask(f"{name}:mean", self, mechanism, confidence))
            else:
                out.append(MeanTask(f"{name}:mean", float(self.prior[0]), self.report_variance[strategy], confidence))  # type: ignore[index]
        if self.wants_distribution:
            decoder = _BucketDecoder(mechanism, self.bins) if self.bucketed else _EmsDecoder(mechanism, self.bins)
            out.append(DistributionTask(f"{name}:distribution", self, decoder, confidence))
        return out

    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        if self.variance:  # each group is half the question's respondents, on average
            laws = {
                s: moments_law_of(self.report_law(s), n / 2, n / 2)
                for s, n in (("split", size), ("one_random", size / count))
            }
            return [
                {
                    "question": self.name,
                    "category": part,
                    "truth": _part(self.report_law("split"), part, truth=True),
                    "var_split": _part_var(laws["split"], part),
                    "var_one_random": _part_var(laws["one_random"], part),
                }
                for part in ("mean", "variance")
            ]
        rows = []
        if "mean" in self.estimate:
            rows.append(
                {
                    "question": self.name,
                    "category": "mean",
                    "truth": float(self.prior[0]),
                    "var_split": self.mean_variance("split", size),
                    "var_one_random": self.mean_variance("one_random", size / count),
                }
            )
        if self.bucketed and self.wants_distribution:  # the buckets' shares, exact (EMS has no closed form)
            h = self.truth_histogram()
            rows.append(
                {
                    "question": self.name,
                    "category": "buckets",
                    "truth": 1.0,
                    "var_split": float(self.mechanisms["split"].estimate_variance(h, float(size)).sum()),
                    "var_one_random": float(self.mechanisms["one_random"].estimate_variance(h, size / count).sum()),
                }
            )
        return rows

    def mean_variance(self, strategy: str, n: float) -> float:
        """The exact variance of the mean's estimate from ``n`` reports."""
        if self.report_variance is not None:
            return self.report_variance[strategy] / n
        mech, m = self.mechanisms[strategy], self.centred_midpoints()
        return float(m @ mech.estimate_covariance(self.truth_histogram(), n) @ m)

    def centred_midpoints(self) -> NDArray[np.float64]:
        """The bucket midpoints less the range's centre ``c``: the mean is estimated as ``c +
        sum (m_j - c) p_j``, unbiased like ``sum m_j p_j`` (the shares sum to 1) but without
        the variance of the estimated shares' total times ``c^2``."""
        return self.midpoints() - (self.lo + self.hi) / 2.0

    def midpoint_bias(self) -> float:
        """The exact bias of the midpoint mean of the true bucket shares."""
        return float(self.midpoints() @ self.truth_histogram() - self.true_mean())

    # under a design: the mean (of the reports, each unbiased for its answer; or of the
    # buckets' midpoints by the unbiased shares, unbiased for the midpoints' mean)
    def design_problem(self, mechanism: Any) -> str | None:
        if self.variance:
            return "its reports are the two-group protocol's (variance = true), which has no design estimate yet"
        if "mean" not in self.estimate:
            return f"its design estimate is the mean, expected estimate to include 'mean' (got {list(self.estimate)})"
        if self.bucketed and type(mechanism).unit_statistics is FrequencyOracle.unit_statistics:
            return f"{mechanism!r} gives no statistic of each report alone"
        return None

    def design_labels(self, mechanism: Any) -> list[str]:
        return ["mean"]

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        if not self.bucketed:
            return np.asarray(reports, dtype=np.float64).reshape(-1, 1)
        a, b = unit_inverse(mechanism)
        return ((mechanism.unit_statistics(reports) @ a.T + b) @ self.midpoints()).reshape(-1, 1)

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        if not self.bucketed:  # a report is its own term: the mechanism's report range (inf: unbounded noise)
            lo, hi = getattr(mechanism, "report_range", (-np.inf, np.inf))
            return np.array([float(hi) - float(lo)])
        widths = np.asarray(mechanism.inversion_coefficient_range(), dtype=np.float64)
        return np.array([float(np.abs(self.midpoints()) @ widths)])

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        x = self.midpoints()[self.codes[rows]] if self.bucketed else self.values[rows]
        return np.asarray(x, dtype=np.float64).reshape(-1, 1)

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        if not self.bucketed:
            return np.asarray(mechanism.variance(self.values[rows]), dtype=np.float64).reshape(-1, 1)
        m = self.midpoints()
        table = np.array([m @ mechanism.estimate_covariance(e, 1.0) @ m for e in np.eye(m.size)])
        return table[self.codes[rows]].reshape(-1, 1)

    def describe(self) -> str:
        if self.variance:
            return (
                f"numeric in [{self.lo:g}, {self.hi:g}]: mean, second moment and variance by two groups "
                "(the answer, or its square mapped onto the range)"
            )
        what = ", ".join(self.estimate)
        if self.bucketed:
            return (
                f"numeric in [{self.lo:g}, {self.hi:g}], reported as one of {self.bins} equal buckets; {what}; "
                f"the midpoint mean's exact bias is {self.midpoint_bias():.4g}"
            )
        if self.estimate == ("mean",):
            return "numeric, the mean of the reports"
        return f"numeric in [{self.lo:g}, {self.hi:g}]; {what} (EMS on {self.bins} buckets)"

    def answers_summary(self) -> Any:
        return "numeric"

    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        if self.variance:
            return 2 * len(MOMENTS)
        rows = 2 if "mean" in self.estimate else 0
        if "distribution" in self.estimate:
            rows += self.bins + 2
        if "quantiles" in self.estimate:
            rows += len(self.levels)
        return rows


def _check_variance(q: QuestionSpec, at: str, kind: str, bucketed: bool, estimate: tuple[str, ...]) -> None:
    """``variance = true`` needs a numeric mechanism privatising real answers, and the mean only."""
    if bucketed:
        raise LdpSimError(
            f"{at}.variance: got true with mechanism.kind = {kind!r}, expected a numeric mechanism of the catalog "
            "(the two groups privatise the answer and its square; a frequency oracle over buckets has no square)"
        )
    if estimate != ("mean",):
        raise LdpSimError(
            f"{at}.variance: got true with estimate = {show(list(estimate))}, expected estimate = ['mean'] "
            "(half the respondents report their answer's square, which no distribution estimate reads)"
        )
    if q.mechanism.get("sampler", "float") != "float":
        raise LdpSimError(
            f"{at}.variance: got true with mechanism.sampler = {show(q.mechanism.get('sampler'))}, expected "
            "sampler = 'float' (the squares mapped onto the range are not integers)"
        )


def _estimate(q: QuestionSpec, at: str) -> tuple[str, ...]:
    if q.estimate is None:
        return ("mean",)
    for e in q.estimate:
        if e not in ESTIMATES:
            raise LdpSimError(
                f"{at}.estimate: got {e!r}, expected some of {', '.join(ESTIMATES)}{did_you_mean(e, ESTIMATES)}"
            )
    if len(set(q.estimate)) != len(q.estimate) or not q.estimate:
        raise LdpSimError(f"{at}.estimate: got {show(q.estimate)}, expected distinct entries, at least one")
    return tuple(e for e in ESTIMATES if e in q.estimate)


def _values(table: Table, column: str, lo: float, hi: float, at: str) -> NDArray[np.float64]:
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
    return values


def _numeric_mechanisms(
    ctx: BuildContext,
    i: int,
    at: str,
    kind: str,
    keys: dict[str, Any],
    question: NumericQuestion,
    lo: float,
    hi: float,
) -> tuple[dict[str, Any], dict[str, float]]:
    """A numeric catalog mechanism at each strategy's eps, and the exact variance of one
    report of a respondent drawn from the rows under each."""
    sampler = keys.pop("sampler", "float")
    for key, value in keys.items():
        raise LdpSimError(
            f"{at}.mechanism.{key}: got {show(value)}, expected no such key (eps comes from the budget, "
            f"lo and hi from {at}.range)"
        )
    kind = catalog.with_sampler(kind, sampler, f"{at}.mechanism.sampler")
    mechanisms, variance = {}, {}
    for s in STRATEGIES:
        eps = ctx.eps_of[s][i]
        try:
            mech = catalog.entry(kind).build(strict=True, eps=eps, lo=lo, hi=hi)
        except LdpSimError as exc:
            raise LdpSimError(f"{at}.mechanism: {exc} (at eps {eps:g} under {s!r})") from None
        mechanisms[s] = mech
        if question.law is not None and sampler != "float":
            raise LdpSimError(
                f"{at}.mechanism.sampler: got {sampler!r} with a density, expected 'float' (the exact samplers take "
                "integer answers: read them from a table)"
            )
        ok = np.asarray(mech.valid_answers(question.values), dtype=bool)
        if not ok.all():
            r = int(np.flatnonzero(~ok)[0])
            raise LdpSimError(
                f"{at}.column: {ctx.table.where(r, ctx.spec.questions[i].column or ctx.spec.questions[i].name)}: "  # type: ignore[union-attr]
                "got a number that is not an integer, expected an integer "
                f"(mechanism.sampler = {sampler!r} reports integer answers plus integer noise)"
            )
        # one report of a respondent drawn from the rows: E[variance(x)] + Var(x)
        variance[s] = question.expected(mech.variance) + question.true_variance()
    return mechanisms, variance


def _oracles(
    ctx: BuildContext, q: QuestionSpec, i: int, at: str, kind: str, keys: dict[str, Any], bins: int
) -> dict[str, Any]:
    """A frequency oracle over the ``bins`` buckets at each strategy's eps."""
    labels = [f"b{j}" for j in range(bins)]
    uniform = np.full(bins, 1.0 / bins)
    return {s: question_mechanism(ctx.spec, q, labels, uniform, ctx.eps_of[s][i], at) for s in STRATEGIES}


def _cells(raw: NDArray[np.float64], b: float, m: int) -> NDArray[np.int64]:
    """The bucket of each raw Square Wave report among ``m`` equal buckets of ``[-b, 1 + b]``."""
    return np.clip(np.floor((raw + b) / (1.0 + 2.0 * b) * m), 0, m - 1).astype(np.int64)


# --------------------------------------------------------------------- decoders
class _EmsDecoder:
    """Square Wave: EMS on the raw reports' bucket counts; bootstrap intervals."""

    method = "ems/bootstrap"

    def __init__(self, mechanism: Any, bins: int) -> None:
        self.matrix = square_wave_transition(mechanism, bins)
        self.edges = np.linspace(mechanism.lo, mechanism.hi, bins + 1)

    def fit(self, counts: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return em_counts(self.matrix, counts[2:], self.edges).probabilities

    def replicates(self, p: NDArray[np.float64], n: int, b: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """``b`` bootstrap estimates (rows): counts from the fitted law, EMS from the estimate."""
        law = self.matrix @ p
        law = law / law.sum()
        out = np.empty((b, p.size))
        for r in range(b):
            counts = rng.multinomial(n, law).astype(np.float64)
            out[r] = em_counts(self.matrix, counts, self.edges, start=p).probabilities
        return out


class _BucketDecoder:
    """A frequency oracle over buckets: the unbiased estimate, its exact covariance."""

    method = "inversion/normal"

    def __init__(self, mechanism: Any, bins: int) -> None:
        self.mechanism = mechanism

    def unbiased(self, counts: NDArray[Any], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        f = np.asarray(counts, dtype=np.float64) / n
        return self.mechanism.invert(f), self.mechanism.plugin_covariance(f, n)


def _cumulative_se(cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standard errors of the cumulative sums of an estimate with covariance ``cov``."""
    return np.sqrt(np.clip(np.diag(np.cumsum(np.cumsum(cov, axis=0), axis=1)), 0.0, None))


def _crossing(cdf: NDArray[np.float64], edges: NDArray[np.float64], level: float) -> float:
    """Where a (made monotone) distribution function at the right edges first reaches
    ``level``, linear between edges; the range's ends when it never does."""
    curve = np.maximum.accumulate(np.concatenate([[0.0], cdf]))
    if level <= curve[0]:
        return float(edges[0])
    if level > curve[-1]:
        return float(edges[-1])
    j = int(np.searchsorted(curve, level, side="left"))
    a, b = curve[j - 1], curve[j]
    frac = 0.0 if b <= a else (level - a) / (b - a)
    return float(edges[j - 1] + frac * (edges[j] - edges[j - 1]))


class BucketMeanTask(Task):
    """The mean of a numeric question reported as its bucket through a frequency oracle:
    the bucket midpoints weighted by the unbiased estimate of the buckets' shares (centred
    on the range's centre, :meth:`NumericQuestion.centred_midpoints`), with a
    normal interval from its exact standard error (its plug-in in ``std_error``). Unbiased
    for the midpoint mean; its exact bias against the answers' mean is
    :meth:`NumericQuestion.midpoint_bias`."""

    kind = "mean"

    def __init__(self, name: str, question: NumericQuestion, mechanism: Any, confidence: float) -> None:
        self.name = name
        self.question = question
        self.mechanism = mechanism
        self.truth = float(question.prior[0])
        self.z = z_value(confidence)
        self.decoder = _BucketDecoder(mechanism, question.bins)
        self.m = question.centred_midpoints()
        self.centre = (question.lo + question.hi) / 2.0
        self.histogram = question.truth_histogram()

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        n = checkpoint.n_received
        if n == 0:
            est = lo = hi = plug = exact = float("nan")
        else:
            p, cov = self.decoder.unbiased(checkpoint.counts, n)
            est = self.centre + float(self.m @ p)
            plug = math.sqrt(max(float(self.m @ cov @ self.m), 0.0))
            exact = math.sqrt(max(float(self.m @ self.mechanism.estimate_covariance(self.histogram, n) @ self.m), 0.0))
            lo, hi = est - self.z * exact, est + self.z * exact
        return [
            dict(
                quantity="mean",
                category="",
                estimate=est,
                ci_low=lo,
                ci_high=hi,
                truth=self.truth,
                theory=np.nan,
                method="mean/buckets",
            ),
            dict(
                quantity="std_error",
                category="",
                estimate=plug,
                ci_low=np.nan,
                ci_high=np.nan,
                truth=np.nan,
                theory=exact,
            ),
        ]


class DistributionTask(Task):
    """A numeric question's distribution and quantiles (``estimate``): rows ``cdf`` (one
    per bucket's right edge, ``category`` the edge), ``wasserstein1`` and ``ks`` (the
    distances of the estimated histogram from the true one on the same buckets: estimate =
    the distance, truth = 0) and ``quantile`` (``category`` the level; truth: the answers'
    own quantile, linear between order statistics)."""

    kind = "distribution"

    def __init__(self, name: str, question: NumericQuestion, decoder: Any, confidence: float) -> None:
        self.name = name
        self.q = question
        self.decoder = decoder
        self.z = z_value(confidence)
        self.alpha = 1.0 - confidence
        self.edges = question.edges
        self.truth_hist = question.truth_histogram()
        self.truth_cdf = np.cumsum(self.truth_hist)
        self.truth_quantiles = [question.true_quantile(a) for a in question.levels]
        self.rng = np.random.default_rng(0)

    def start(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        n = checkpoint.n_received
        q = self.q
        d = q.bins
        nan = np.full(d, np.nan)
        theory = nan
        if n == 0:
            p = cdf = lo = hi = nan
            qs = qlo = qhi = [math.nan] * len(q.levels)
        elif q.bucketed:
            unbiased, cov = self.decoder.unbiased(checkpoint.counts, n)
            cdf = np.cumsum(unbiased)
            se = _cumulative_se(cov)
            lo, hi = cdf - self.z * se, cdf + self.z * se
            theory = _cumulative_se(self.decoder.mechanism.estimate_covariance(self.truth_hist, n))
            p = norm_sub(unbiased)
            qs = [quantile(p, self.edges, a) for a in q.levels]
            qlo = [_crossing(hi, self.edges, a) for a in q.levels]  # the upper band reaches the level first
            qhi = [_crossing(lo, self.edges, a) for a in q.levels]
        else:
            p = self.decoder.fit(checkpoint.counts, n)
            cdf = np.cumsum(p)
            boot = self.decoder.replicates(p, n, q.bootstrap, self.rng)
            # basic (reflected) bootstrap intervals: the bootstrap's spread of theta* - theta_hat
            # stands for that of theta_hat - theta, so the bias EMS shows at its own estimate is
            # taken off (percentile intervals would add it a second time)
            tails = (100 * self.alpha / 2, 100 * (1 - self.alpha / 2))
            low_b, high_b = np.percentile(np.cumsum(boot, axis=1), tails, axis=0)
            lo, hi = np.clip(2 * cdf - high_b, 0.0, 1.0), np.clip(2 * cdf - low_b, 0.0, 1.0)
            qs = [quantile(p, self.edges, a) for a in q.levels]
            bq = np.array([[quantile(row, self.edges, a) for a in q.levels] for row in boot])
            ql, qh = np.percentile(bq, tails, axis=0)
            qlo = list(np.clip(2 * np.array(qs) - qh, q.lo, q.hi))
            qhi = list(np.clip(2 * np.array(qs) - ql, q.lo, q.hi))
        method = self.decoder.method
        rows: list[dict[str, Any]] = []
        if "distribution" in q.estimate:
            for j in range(d):
                rows.append(
                    dict(
                        quantity="cdf",
                        category=f"{self.edges[j + 1]:g}",
                        estimate=float(cdf[j]),
                        ci_low=float(lo[j]),
                        ci_high=float(hi[j]),
                        truth=float(self.truth_cdf[j]),
                        theory=float(theory[j]),
                        method=method,
                    )
                )
            ok = n > 0
            w1 = wasserstein1(p, self.truth_hist, self.edges) if ok else math.nan
            ks = kolmogorov_smirnov(p, self.truth_hist) if ok else math.nan
            for name, value in (("wasserstein1", w1), ("ks", ks)):
                rows.append(
                    dict(
                        quantity=name,
                        category="",
                        estimate=value,
                        ci_low=np.nan,
                        ci_high=np.nan,
                        truth=0.0,
                        theory=np.nan,
                        method=method,
                    )
                )
        if "quantiles" in q.estimate:
            for a, est, low, high, truth in zip(q.levels, qs, qlo, qhi, self.truth_quantiles):
                rows.append(
                    dict(
                        quantity="quantile",
                        category=f"{a:g}",
                        estimate=float(est),
                        ci_low=float(low),
                        ci_high=float(high),
                        truth=truth,
                        theory=np.nan,
                        method=method,
                    )
                )
        return rows


#: what a question with ``variance = true`` estimates, each a task of its own
MOMENTS = ("mean", "second_moment", "variance")


def _part(law: MomentsLaw, part: str, truth: bool = False) -> float:
    """The estimate ``part`` of ``law``: its exact expectation, or (``truth``) what it estimates."""
    if part == "mean":
        return law.mean
    if part == "second_moment":
        return law.second_moment
    return law.second_moment - law.mean * law.mean if truth else law.variance


def _part_var(law: MomentsLaw, part: str) -> float:
    return {"mean": law.mean_var, "second_moment": law.second_moment_var, "variance": law.variance_var}[part]


class MomentsTask(Task):
    """One of the two-group estimates of a question with ``variance = true`` (``part``: the
    mean, the second moment or the variance; module docstring) from the server's statistic
    ``[sum_1, n_1, sum_2, n_2, squares_1, squares_2]``. Rows: ``part`` (estimate, a normal
    interval from the exact standard error at the groups' sizes received, truth: the answers'
    own, theory: the estimate's exact expectation) and ``std_error`` (estimate: the plug-in
    from the reports' sample variances, the variance's by the delta method; theory: exact)."""

    kind = "moments"

    def __init__(self, name: str, part: str, question: NumericQuestion, one: MomentsLaw, confidence: float) -> None:
        self.name = name
        self.part = part
        self.one = one
        self.lo, self.hi = question.lo, question.hi
        q_lo, q_hi = square_range(question.lo, question.hi)
        self.k = (q_hi - q_lo) / (question.hi - question.lo)
        self.truth = _part(one, part, truth=True) if part != "variance" else question.true_variance()
        self.z = z_value(confidence)

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        s1, n1, s2, n2, q1, q2 = (float(c) for c in checkpoint.counts[:6])
        est = lo = hi = plug = exact = expected = math.nan
        if n1 > 0 and n2 > 0:
            mean, m2, var = moments_from_sums(s1, n1, s2, n2, self.lo, self.hi)
            est = {"mean": mean, "second_moment": m2, "variance": var}[self.part]
            law = moments_law_of(self.one, n1, n2)
            expected, exact = _part(law, self.part), math.sqrt(max(_part_var(law, self.part), 0.0))
            lo, hi = est - self.z * exact, est + self.z * exact
            if n1 > 1 and n2 > 1:  # the reports' sample variances in each group
                v1 = max(q1 - s1 * s1 / n1, 0.0) / (n1 - 1) / n1
                v2 = self.k * self.k * max(q2 - s2 * s2 / n2, 0.0) / (n2 - 1) / n2
                plug = math.sqrt({"mean": v1, "second_moment": v2, "variance": v2 + 4 * mean * mean * v1}[self.part])
        return [
            dict(
                quantity=self.part,
                category="",
                estimate=est,
                ci_low=lo,
                ci_high=hi,
                truth=self.truth,
                theory=expected,
                method="moments/two-group",
            ),
            dict(
                quantity="std_error",
                category="",
                estimate=plug,
                ci_low=np.nan,
                ci_high=np.nan,
                truth=np.nan,
                theory=exact,
            ),
        ]
