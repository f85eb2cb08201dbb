"""Analyst tasks: what the analyst computes at each checkpoint.

A task is a class with a ``kind``, a pydantic ``Params`` model (its keys in
``[[analyst.tasks]]``), and three hooks:

- ``start(rng)`` once per replication,
- ``observe(times, reports)`` for every batch of reports as it arrives, in time order
  (individual mode only; streaming tasks such as sequential tests use it),
- ``at_checkpoint(checkpoint)`` returning tidy rows (dicts with ``quantity``, ``category``,
  ``estimate``, ``ci_low``, ``ci_high``, ``truth``, ``theory``).

Register a new task with :func:`register_task`; the engine needs no change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from scipy.stats import chi2_contingency

from ldpsim.analyst import (
    combine_tiers,
    confidence_intervals,
    crosstab_estimate,
    em_estimate,
    frequency_estimate,
    frequency_standard_error,
    independence_test,
    nonresponse_bias,
    project_to_simplex,
    reweight_for_response,
    tier_design,
)
from ldpsim.analyst.consistency import base_cut, base_cut_threshold, norm_sub
from ldpsim.analyst.estimation import z_value
from ldpsim.analyst.hypotheses import sequential_independence_of_pairs
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms.base import FrequencyOracle


@dataclass(frozen=True)
class Checkpoint:
    """What the server holds when the analyst looks."""

    index: int
    time: float
    reason: str  # "every", "every_reports" or "end"
    n_received: int
    counts: NDArray[np.int64]  # the mechanism's statistic so far (output counts of a finite mechanism)
    reports: NDArray[np.int64] | None = None  # stored reports in arrival order (if kept)
    report_times: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class TaskContext:
    mechanism: FrequencyOracle
    labels: list[str]
    truth: NDArray[np.float64]  # the true input distribution (for the truth column only)
    mode: str  # "individual" or "aggregate"
    planned_reports: int = 0  # the population size: where confidence sequences are tightest


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    kind: str
    name: str | None = None


class Task:
    """Base class of analyst tasks."""

    kind: ClassVar[str]
    Params: ClassVar[type[TaskParams]] = TaskParams
    #: whether the task needs individual reports (then the scenario must run in individual mode)
    needs_reports: ClassVar[bool] = False
    #: whether the task is a hypothesis test (may be written as an ``[[analyst.tests]]`` table)
    is_test: ClassVar[bool] = False

    def __init__(self, params: TaskParams, context: TaskContext) -> None:
        self.params = params
        self.context = context
        self.name = params.name or params.kind

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        """At load time: why this task cannot work with ``mechanism`` (None if it can)."""
        return None

    @classmethod
    def reads_reports(cls, params: TaskParams, mechanism: FrequencyOracle) -> bool:
        """Whether this entry reads individual reports with ``mechanism`` (then the scenario
        must run in individual mode): :attr:`needs_reports` unless a task says otherwise."""
        return cls.needs_reports

    @property
    def streams(self) -> bool:
        """Whether this task reads the reports one batch at a time (:meth:`observe`): then
        the engine must hand them over, not only their statistic."""
        return type(self).observe is not Task.observe

    @classmethod
    def check_labels(cls, params: TaskParams, labels: list[str]) -> str | None:
        """At load time: why this task cannot work with these answer labels (None if it can)."""
        return None

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        """Result rows this task writes at each checkpoint for ``k`` labels (bounds the
        size of a run at load time; a task that writes more should say so)."""
        return 2 * k

    def start(self, rng: np.random.Generator) -> None:
        """Reset for a new replication."""

    def observe(self, times: NDArray[np.float64], reports: NDArray[np.int64]) -> None:
        """A batch of reports as delivered, in time order (individual mode only)."""

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        raise NotImplementedError


TASKS: dict[str, type[Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available to scenario files under ``kind = cls.kind``."""
    TASKS[cls.kind] = cls
    return cls


#: the key a ``[[analyst.tests]]`` entry carries once it has joined ``[analyst] tasks`` (its
#: index among the tests, so that errors name the table the user wrote)
TEST_ENTRY = "__test__"


def task_location(i: int, entry: dict[str, Any]) -> str:
    """Where entry ``i`` of the task list came from: ``analyst.tasks[i]`` or ``analyst.tests[j]``."""
    j = entry.get(TEST_ENTRY)
    return f"analyst.tests[{j}]" if j is not None else f"analyst.tasks[{i}]"


def hypothesis_test_kinds() -> list[str]:
    """The task kinds that are hypothesis tests (what ``[[analyst.tests]]`` takes)."""
    return sorted(kind for kind, cls in TASKS.items() if cls.is_test)


def parse_task_params(entries: list[dict[str, Any]]) -> list[tuple[type[Task], TaskParams]]:
    """Validate the task entries (``[analyst] tasks``, then ``[[analyst.tests]]``); errors
    name the entry's key, ``analyst.tasks[i].key`` or ``analyst.tests[j].key``."""
    out = []
    for i, entry in enumerate(entries):
        where = task_location(i, entry)
        kind = entry.get("kind")
        if TEST_ENTRY in entry:
            if not isinstance(kind, str) or kind not in hypothesis_test_kinds():
                raise LdpSimError(f"{where}.kind: got {kind!r}, expected one of the tests {hypothesis_test_kinds()}")
            entry = {key: value for key, value in entry.items() if key != TEST_ENTRY}
        if not isinstance(kind, str) or kind not in TASKS:
            raise LdpSimError(f"{where}.kind: got {kind!r}, expected one of {sorted(TASKS)}")
        cls = TASKS[kind]
        try:
            params = cls.Params.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"]).replace(".[", "[")
            raise LdpSimError(f"{where}.{loc}: {err['msg']} (got {show(err.get('input'))})") from None
        out.append((cls, params))
    names = [p.name or p.kind for _, p in out]
    if len(set(names)) != len(names):
        raise LdpSimError(f"analyst.tasks: got task names {names}, expected distinct names (set 'name')")
    return out


def validate_tasks(
    entries: list[dict[str, Any]], mode: str, mechanism: FrequencyOracle, labels: list[Any] | None = None
) -> None:
    """Check the task entries of a scenario against its mode, mechanism and answer labels."""
    for i, (cls, params) in enumerate(parse_task_params(entries)):
        where = task_location(i, entries[i])
        if labels is not None:
            problem = cls.check_labels(params, [str(label) for label in labels])
            if problem is not None:
                raise LdpSimError(f"{where}: {problem}")
        if cls.reads_reports(params, mechanism) and mode != "individual":
            raise LdpSimError(
                f"{where}.kind: got {cls.kind!r} in {mode} mode, expected simulation.mode = 'individual' "
                "(this task reads individual reports)"
            )
        problem = cls.check(params, mechanism)
        if problem is not None:
            raise LdpSimError(f"{where}.kind: got {cls.kind!r}, {problem}")


def rows_per_checkpoint(entries: list[dict[str, Any]], k: int) -> int:
    """Result rows all the tasks of a scenario write at each checkpoint."""
    return sum(cls.rows_per_checkpoint(params, k) for cls, params in parse_task_params(entries))


def confidence_of(tasks: list[dict[str, Any]]) -> float:
    """The confidence of intervals a scenario's tasks do not set themselves (numeric
    questions, tiers, cross-tabulations): the first frequency task's, else 0.95."""
    for entry in tasks:
        if entry.get("kind") == "frequency" and isinstance(entry.get("confidence"), float):
            return float(entry["confidence"])
    return 0.95


def make_tasks(entries: list[dict[str, Any]], context: TaskContext) -> list[Task]:
    return [cls(params, context) for cls, params in parse_task_params(entries)]


# --------------------------------------------------------------------- frequency estimation
class FrequencyParams(TaskParams):
    kind: Literal["frequency"]
    confidence: float = Field(0.95, gt=0, lt=1, allow_inf_nan=False)
    #: the point estimate: unbiased inversion, its projection onto the simplex, Norm-Sub,
    #: Base-Cut (Wang et al. 2020), or the iterative Bayesian update (EM)
    estimator: Literal["inversion", "projected", "norm_sub", "base_cut", "em"] = "inversion"
    #: the interval: normal (plug-in variance), Hoeffding (valid at every n) or an
    #: anytime-valid confidence sequence (valid at every checkpoint at once)
    interval: Literal["normal", "hoeffding", "sequence"] = "normal"
    #: Bonferroni over the answers: all intervals hold together
    simultaneous: bool = False


#: the analyst's interval kinds in the names of ldpsim.analyst.confidence_intervals
_INTERVAL_METHOD = {"normal": "normal", "hoeffding": "conservative", "sequence": "sequence"}


@register_task
class FrequencyTask(Task):
    """Frequency estimation: a point estimate and an interval per answer, chosen in the
    scenario (``estimator``, ``interval``, ``simultaneous``, ``confidence``).

    Rows per category: ``frequency`` (estimate, interval, truth = the true probability,
    ``method`` = ``estimator/interval``, ``+bonferroni`` when simultaneous) and
    ``std_error`` (the plug-in standard error of the unbiased estimate; theory = its exact
    standard error at the number of reports received). Intervals are those of the unbiased
    estimate (their coverage holds whatever point estimate is shown), clipped as the point
    estimate is: the unbiased ``inversion`` estimate and its interval never (the interval
    holds its estimate, which may be negative), the estimators that return a distribution
    (``projected``, ``norm_sub``, ``base_cut``, ``em``) with the interval intersected with
    [0, 1]; sequences are tightest at the population size."""

    kind = "frequency"
    Params = FrequencyParams

    @property
    def method(self) -> str:
        p: Any = self.params
        return f"{p.estimator}/{p.interval}" + ("+bonferroni" if p.simultaneous else "")

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        if mechanism.epsilon() == 0:
            return "expected a mechanism with eps > 0 (at eps = 0 the reports carry no information)"
        if not mechanism.identifiable:
            return (
                f"expected a mechanism whose matrix has full row rank {mechanism.k} to estimate "
                f"{mechanism.k} frequencies ({mechanism!r} has {mechanism.statistic_size} outputs)"
            )
        return None

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        ctx = self.context
        p: Any = self.params
        labels = ctx.labels
        n = checkpoint.n_received
        if n == 0:
            est = se = lo = hi = np.full(len(labels), np.nan)
            theory_se = np.full(len(labels), np.nan)
        else:
            fe = frequency_estimate(ctx.mechanism, checkpoint.counts, n)
            se = fe.std_error
            est = _point_estimate(p, ctx.mechanism, checkpoint.counts, n, fe.estimate)
            theory_se = frequency_standard_error(ctx.mechanism, ctx.truth, n)
            ci = confidence_intervals(
                ctx.mechanism,
                checkpoint.counts,
                p.confidence,
                _INTERVAL_METHOD[p.interval],
                p.simultaneous,
                n=n,
                n_plan=max(ctx.planned_reports, n),
            )
            lo, hi = ci["ci_low"].to_numpy(), ci["ci_high"].to_numpy()
            if p.estimator != "inversion":  # an estimate on the simplex: its interval within [0, 1] too
                lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
        rows = []
        for i, label in enumerate(labels):
            rows.append(
                dict(
                    quantity="frequency",
                    category=label,
                    estimate=est[i],
                    ci_low=lo[i],
                    ci_high=hi[i],
                    truth=ctx.truth[i],
                    theory=np.nan,
                    method=self.method,
                )
            )
            rows.append(
                dict(
                    quantity="std_error",
                    category=label,
                    estimate=se[i],
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=np.nan,
                    theory=theory_se[i],
                )
            )
        return rows


def _point_estimate(
    p: Any, mechanism: FrequencyOracle, counts: NDArray[np.int64], n: int, unbiased: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The task's point estimate from the unbiased one (or from the counts, for EM)."""
    if p.estimator == "inversion":
        return unbiased
    if p.estimator == "projected":
        return project_to_simplex(unbiased)
    if p.estimator == "norm_sub":
        return norm_sub(unbiased)
    if p.estimator == "base_cut":
        return base_cut(unbiased, base_cut_threshold(mechanism, n, 1.0 - p.confidence))
    return em_estimate(mechanism, counts, n=n).estimate


# --------------------------------------------------------------------- numeric questions
class MeanTask(Task):
    """The mean of a numeric question's answers (``[[questions]]`` with ``type =
    "numeric"``): the mean of the reports (each unbiased for its answer), with a normal
    interval whose standard error is exact: ``sqrt(v / n)``, v the exact variance of one
    report of a respondent drawn from the population (the mean over the answers of the
    mechanism's ``variance(x)`` plus the answers' own variance). Rows: ``mean`` (truth =
    the answers' mean) and ``std_error`` (estimate: the plug-in standard error from the
    reports' sample variance; theory: the exact one). Not a task of ``[[analyst.tasks]]``:
    the engine gives one to every numeric question. The checkpoint's ``counts`` are the
    sum of the reports and the sum of their squares."""

    kind = "mean"

    def __init__(self, name: str, truth: float, report_variance: float, confidence: float) -> None:
        self.name = name
        self.truth = truth
        self.report_variance = report_variance
        self.z = z_value(confidence)

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        n = checkpoint.n_received
        if n == 0:
            est = lo = hi = plug = exact = float("nan")
        else:
            total, squares = (float(c) for c in checkpoint.counts[:2])
            est = total / n
            spread = max(squares - n * est * est, 0.0) / (n - 1) if n > 1 else float("nan")
            plug = float(np.sqrt(spread / n))
            exact = float(np.sqrt(self.report_variance / n))
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
                method="mean/normal",
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


# --------------------------------------------------------------------- cross-tabulations
class CrosstabTask:
    """The joint table of two categorical questions and a test of their independence
    (``[analyst] crosstabs``, strategy ``split``: both answers of a respondent travel in one
    report, whose pair of output codes is one output of the product mechanism).

    At each checkpoint, from the counts of the pairs of output codes received
    (``joint``, length ``m_a m_b``) and the counts of the same respondents' true answer
    pairs (``true_joint``, length ``ka kb``; the simulator knows them, the analyst does not):

    - ``joint`` rows, one per cell (category ``"row / column"``): the unbiased estimate
      projected onto the simplex; an interval of the unbiased estimate (normal, plug-in
      standard error), intersected with [0, 1] like the projected estimate; truth = the true
      joint table; theory = the exact standard error at the number of reports (the product
      mechanism's covariance at the truth);
    - ``independence_statistic``, ``independence_df``, ``independence_p_value``,
      ``independence_reject`` (at ``alpha``; 1 or 0), each twice: category ``ldp`` (the Wald
      test on the privatised reports, :func:`ldpsim.analyst.independence_test`) and
      ``pearson`` (Pearson's chi-square test, without continuity correction, on the true
      answers of the same respondents: ``scipy.stats.chi2_contingency``; answers no
      respondent gave are left out of its table). A test that cannot be computed (no
      report yet, a singular null covariance, fewer than two answers seen) is NaN;
    - ``independence_log_e_value`` and ``independence_reject``, category ``sequential``
      (given the two mechanisms' ``outputs``): the anytime-valid test of independence from
      the pairs' counts (:func:`ldpsim.analyst.hypotheses.sequential_independence_of_pairs`),
      whose level holds however many checkpoints look.
    """

    kind = "crosstab"

    def __init__(
        self,
        name: str,
        mechanism: FrequencyOracle,
        truth: NDArray[np.float64],
        rows: list[str],
        columns: list[str],
        alpha: float,
        confidence: float,
        outputs: tuple[int, int] | None = None,
    ) -> None:
        self.name = name
        self.mechanism = mechanism
        self.outputs = outputs
        self.truth = truth
        self.rows, self.columns = rows, columns
        self.alpha = alpha
        self.z = z_value(confidence)

    def at_checkpoint(self, n: int, joint: NDArray[np.int64], true_joint: NDArray[np.int64]) -> list[dict[str, Any]]:
        ka, kb = self.truth.shape
        cells = ka * kb
        nan = np.full(cells, np.nan)
        est = lo = hi = theory = nan
        ldp: tuple[float, float, float] = (np.nan, np.nan, np.nan)
        if n > 0:
            tab = crosstab_estimate(self.mechanism, joint, (ka, kb))
            unbiased, se = tab.estimate.ravel(), tab.std_error.ravel()
            est = tab.projected.ravel()
            lo, hi = np.clip(unbiased - self.z * se, 0.0, 1.0), np.clip(unbiased + self.z * se, 0.0, 1.0)
            theory = np.sqrt(
                np.clip(np.diag(self.mechanism.estimate_covariance(self.truth.ravel(), float(n))), 0.0, None)
            )
            try:
                test = independence_test(self.mechanism, joint, (ka, kb))
                ldp = (test.statistic, float(test.df), test.p_value)
            except LdpSimError:
                pass
        pearson = _pearson(true_joint.reshape(ka, kb))
        out = [
            dict(
                quantity="joint",
                category=f"{self.rows[i // kb]} / {self.columns[i % kb]}",
                estimate=est[i],
                ci_low=lo[i],
                ci_high=hi[i],
                truth=float(self.truth.flat[i]),
                theory=theory[i],
                method="projected/normal",
            )
            for i in range(cells)
        ]
        for which, (stat, df, p) in (("ldp", ldp), ("pearson", pearson)):
            reject = float(p <= self.alpha) if not np.isnan(p) else np.nan
            for quantity, value in (("statistic", stat), ("df", df), ("p_value", p), ("reject", reject)):
                out.append(
                    dict(
                        quantity=f"independence_{quantity}",
                        category=which,
                        estimate=value,
                        ci_low=np.nan,
                        ci_high=np.nan,
                        truth=np.nan,
                        theory=np.nan,
                    )
                )
        if self.outputs is not None:
            seq = sequential_independence_of_pairs(joint.reshape(self.outputs), alpha=self.alpha)
            for quantity, value in (("log_e_value", seq.log_e), ("reject", float(seq.reject))):
                out.append(
                    dict(
                        quantity=f"independence_{quantity}",
                        category="sequential",
                        estimate=value,
                        ci_low=np.nan,
                        ci_high=np.nan,
                        truth=np.nan,
                        theory=np.nan,
                    )
                )
        return out


def _pearson(counts: NDArray[np.int64]) -> tuple[float, float, float]:
    """Pearson's chi-square test of independence on a table of counts (no continuity
    correction), over the rows and columns with any count: (statistic, df, p-value)."""
    table = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return np.nan, np.nan, np.nan
    res = chi2_contingency(table, correction=False)
    return float(res.statistic), float(res.dof), float(res.pvalue)


# --------------------------------------------------------------------- answer-dependent non-response
class NonresponseTask(Task):
    """Answer-dependent loss (``network.loss = { by_answer = ... }``): a report whose client's
    true answer is x arrives with probability ``r_x = 1 - loss_x``, so the received reports
    follow ``q = p r / (p . r)`` and every estimate made from them alone targets ``q``.

    Rows per answer: ``nonresponse_bias`` (estimate = theory = the exact bias ``q - p``,
    :func:`ldpsim.analyst.nonresponse_bias`; truth = the target of the raw estimate, ``q``),
    and with ``reweight`` (``[analyst] reweight = true``: the analyst knows the rates)
    ``reweighted``: :func:`ldpsim.analyst.reweight_for_response` of the unbiased estimate,
    with the normal interval of its delta-method standard error (from the plug-in
    covariance of the unbiased estimate), neither clipped to [0, 1]; truth = p; theory = the exact
    standard error of the reweighted estimate to first order (``J Sigma J^T`` at q, with
    Sigma the exact covariance of the unbiased estimate at q). Not a task of
    ``[[analyst.tasks]]``: the engine adds it when the loss depends on the answer."""

    kind = "nonresponse"

    def __init__(self, context: TaskContext, rates: NDArray[np.float64], reweight: bool, confidence: float) -> None:
        self.context = context
        self.name = self.kind
        self.rates = np.asarray(rates, dtype=np.float64)
        self.reweight = reweight
        self.z = z_value(confidence)

        self.bias = nonresponse_bias(context.truth, self.rates)
        self.target = context.truth + self.bias  # q: what the received reports follow

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        ctx = self.context
        k = len(ctx.labels)
        rows = [
            dict(
                quantity="nonresponse_bias",
                category=label,
                estimate=self.bias[i],
                ci_low=np.nan,
                ci_high=np.nan,
                truth=self.target[i],
                theory=self.bias[i],
            )
            for i, label in enumerate(ctx.labels)
        ]
        if not self.reweight:
            return rows
        n = checkpoint.n_received
        est = lo = hi = theory = np.full(k, np.nan)
        if n > 0:
            fe = frequency_estimate(ctx.mechanism, checkpoint.counts, n)
            f = np.asarray(checkpoint.counts, dtype=np.float64) / n
            rw = reweight_for_response(fe.estimate, self.rates, ctx.mechanism.plugin_covariance(f, float(n)))
            est = rw.estimate
            se = cast(NDArray[np.float64], rw.std_error)  # not None: a covariance was given
            lo, hi = est - self.z * se, est + self.z * se  # not clipped, like the estimate
            exact = reweight_for_response(
                self.target, self.rates, ctx.mechanism.estimate_covariance(self.target, float(n))
            )
            theory = cast(NDArray[np.float64], exact.std_error)
        for i, label in enumerate(ctx.labels):
            rows.append(
                dict(
                    quantity="reweighted",
                    category=label,
                    estimate=est[i],
                    ci_low=lo[i],
                    ci_high=hi[i],
                    truth=ctx.truth[i],
                    theory=theory[i],
                    method="reweighted/normal",
                )
            )
        return rows


# --------------------------------------------------------------------- privacy tiers
class TierTask:
    """Privacy tiers (``[mechanism] tiers``): respondents in tier ``t`` privatise with the
    mechanism's family at eps_t, the server keeps each tier's statistic, and the analyst
    combines the tiers' unbiased estimates answer by answer with inverse plug-in-variance
    weights (:func:`ldpsim.analyst.combine_tiers`). Not a task of ``[[analyst.tasks]]``:
    the engine gives it to every scenario with tiers.

    Rows per answer at each checkpoint:

    - ``frequency``: the combined estimate, its normal interval from the plug-in combined
      standard error (neither clipped to [0, 1]: the estimate is unbiased); truth = the true probability; method
      ``tiers/normal``;
    - ``std_error``: estimate = the plug-in combined standard error; theory = the exact one,
      ``sqrt(1 / sum_t 1 / V_t)`` with ``V_t`` the exact variance of tier t's estimate at the
      truth and the tier's number of reports received (:func:`ldpsim.analyst.tier_design`);
    - ``naive_frequency``: the naive pooling (the tiers' estimates averaged with weights
      ``n_t / n``), its normal interval, theory = its exact standard error;
    - ``tier_frequency`` per tier (method ``tier t (eps = ...)``, ``n_received`` the tier's
      reports): the tier's own estimate, theory = its exact standard error.
    """

    kind = "tiers"

    def __init__(
        self,
        mechanisms: list[FrequencyOracle],
        eps: tuple[float, ...],
        labels: list[str],
        truth: NDArray[np.float64],
        confidence: float,
    ) -> None:
        self.name = self.kind
        self.mechanisms = list(mechanisms)
        self.eps = eps
        self.labels = labels
        self.truth = np.asarray(truth, dtype=np.float64)
        self.z = z_value(confidence)

    def at_checkpoint(self, checkpoints: list[Checkpoint]) -> list[dict[str, Any]]:
        k, count = len(self.labels), len(self.mechanisms)
        sizes = np.array([cp.n_received for cp in checkpoints], dtype=np.float64)
        nan = np.full(k, np.nan)
        est = se = naive = naive_se = exact = naive_exact = nan
        tier_est = tier_exact = np.full((count, k), np.nan)
        if sizes.sum() > 0:
            comb = combine_tiers(
                self.mechanisms, [cp.counts for cp in checkpoints], n=[cp.n_received for cp in checkpoints]
            )
            est, se, naive, naive_se = comb.estimate, comb.std_error, comb.naive_estimate, comb.naive_std_error
            design = tier_design(self.mechanisms, self.truth, float(sizes.sum()), sizes / sizes.sum())
            exact, naive_exact = np.sqrt(design.variance), np.sqrt(design.naive_variance)
            tier_est, tier_exact = comb.tier_estimates, np.sqrt(design.tier_variances)
        rows = []
        for i, label in enumerate(self.labels):
            for quantity, e, s, theory, method in (
                ("frequency", est, se, nan, "tiers/normal"),
                ("naive_frequency", naive, naive_se, naive_exact, "naive/normal"),
            ):
                rows.append(
                    dict(
                        quantity=quantity,
                        category=label,
                        estimate=e[i],
                        ci_low=float(e[i] - self.z * s[i]),
                        ci_high=float(e[i] + self.z * s[i]),
                        truth=self.truth[i],
                        theory=theory[i],
                        method=method,
                    )
                )
            rows.append(
                dict(
                    quantity="std_error",
                    category=label,
                    estimate=se[i],
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=np.nan,
                    theory=exact[i],
                )
            )
            for t in range(count):
                rows.append(
                    dict(
                        quantity="tier_frequency",
                        category=label,
                        estimate=tier_est[t, i],
                        ci_low=np.nan,
                        ci_high=np.nan,
                        truth=self.truth[i],
                        theory=tier_exact[t, i],
                        method=f"tier {t} (eps = {self.eps[t]:g})",
                        n_received=int(sizes[t]),
                    )
                )
        return rows
