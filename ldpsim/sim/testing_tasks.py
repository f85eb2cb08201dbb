"""Hypothesis-testing tasks: Wald's sequential test (``sprt``) and the fixed-n
Neyman-Pearson test (``lrt``) of H0: clients draw from P0 against H1: they draw from P1; and
the tests of :mod:`ldpsim.analyst.hypotheses` at every checkpoint: ``goodness_of_fit`` (to a
``reference``), ``uniformity``, ``change`` (the reports before time ``since`` against those
after), each fixed-n or ``sequential``; ``share`` (a composite null on one answer's share)
and ``mary`` (which of several answer laws).

The hypotheses are given in the task entry (the task context carries only the true
distribution), e.g. ``{ kind = "sprt", P0 = [...], P1 = [...], alpha = 0.01, beta = 0.01 }``;
a scenario that tests its own population repeats its ``population.P0``/``P1`` there.
Reports are compared through their marginals ``M_v = P_v^T Q`` (``mechanism.marginal``), with
per-output log-likelihood ratios ``w_y = log(M1(y) / M0(y))``.

The truth column of a decision row is 1 when the population's true distribution is P1, 0
when it is P0, NaN when it is neither.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from ldpsim.analyst.betting import BettingProcess, MaryBetting, report_terms, sequential_mary_test, term_ranges
from ldpsim.analyst.hypotheses import (
    fit_power,
    goodness_of_fit,
    homogeneity,
    mary_test,
    sequential_goodness_of_fit,
    sequential_homogeneity,
    sequential_share_test,
    share_power,
    share_test,
)
from ldpsim.analyst.testing import chernoff_stein_exponent, hypothesis_marginals, lrt_exact, lrt_normal
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.sim.tasks import Checkpoint, Task, TaskContext, TaskParams, register_task
from ldpsim.sim.weights import UnitWeight, sum_problem

OpenUnit = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]

#: Two priors within this (max-norm) distance count as equal.
_SAME = 1e-12


class HypothesisParams(TaskParams):
    P0: list[UnitWeight] = Field(min_length=2)  # numbers, or exact fractions such as "1/3"
    P1: list[UnitWeight] = Field(min_length=2)
    alpha: OpenUnit = 0.05


def _check_hypotheses(params: Any, mechanism: FrequencyOracle) -> str | None:
    """Why P0/P1 cannot be tested with ``mechanism`` (None if they can)."""
    if mechanism.output_size is None:
        return (
            "expected a mechanism with finitely many outputs "
            f"({mechanism!r} reports vectors; the test weighs each output)"
        )
    k = mechanism.k
    for key in ("P0", "P1"):
        vec = getattr(params, key)
        if len(vec) != k:
            return f"expected {key} with one entry per label ({k}), got {len(vec)} entries"
        problem = sum_problem(vec)
        if problem is not None:
            return f"expected {key} summing to 1 ({problem})"
    if np.max(np.abs(np.subtract(params.P0, params.P1))) <= _SAME:
        return "expected P0 and P1 to differ (identical hypotheses cannot be told apart)"
    m0, m1 = mechanism.marginal(params.P0), mechanism.marginal(params.P1)  # type: ignore[attr-defined]
    if np.max(np.abs(m0 - m1)) <= 1e-15:
        return f"expected a mechanism whose outputs tell P0 from P1 ({mechanism!r} gives them the same output law)"
    if not np.array_equal(m0 > 0, m1 > 0):
        return "expected marginals M0 and M1 positive on the same outputs (a report possible under one hypothesis only)"
    return None


def _truth_indicator(truth: NDArray[np.float64], p0: list[float], p1: list[float]) -> float:
    t = np.asarray(truth, dtype=np.float64)
    if np.max(np.abs(t - np.asarray(p1) / math.fsum(p1))) <= 1e-9:
        return 1.0
    if np.max(np.abs(t - np.asarray(p0) / math.fsum(p0))) <= 1e-9:
        return 0.0
    return math.nan


def _row(quantity: str, estimate: float, truth: float = math.nan, theory: float = math.nan) -> dict[str, Any]:
    return dict(
        quantity=quantity, category="", estimate=estimate, ci_low=math.nan, ci_high=math.nan, truth=truth, theory=theory
    )


class _HypothesisTask(Task):
    """Shared set-up: the marginals, log-ratios, divergences and the truth indicator."""

    is_test = True

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        return _check_hypotheses(params, mechanism)

    def __init__(self, params: TaskParams, context: TaskContext) -> None:
        super().__init__(params, context)
        p: Any = params
        self.M0, self.M1 = hypothesis_marginals(context.mechanism, p.P0, p.P1)
        pos = self.M0 > 0
        self.w = np.zeros(self.M0.size)
        self.w[pos] = np.log(self.M1[pos]) - np.log(self.M0[pos])
        self.D01 = chernoff_stein_exponent(self.M0, self.M1)  # D(M0 || M1)
        self.D10 = chernoff_stein_exponent(self.M1, self.M0)  # D(M1 || M0)
        self.truth_is_p1 = _truth_indicator(context.truth, p.P0, p.P1)


# --------------------------------------------------------------------- SPRT
class SPRTParams(HypothesisParams):
    kind: Literal["sprt"]
    beta: OpenUnit = 0.05


@register_task
class SPRTTask(_HypothesisTask):
    """Wald's sequential probability ratio test on the stream of reports, in arrival order.

    ``S_n = sum_{i<=n} w(y_i)``; decide H1 at the first ``S_n >= A = log((1-beta)/alpha)``,
    H0 at the first ``S_n <= B = log(beta/(1-alpha))``; later reports are ignored. Wald's
    bounds: P0(decide H1) <= alpha / (1 - beta), P1(decide H0) <= beta / (1 - alpha).

    Rows: ``sprt_decision`` (1 = H1, 0 = H0, NaN undecided; truth = 1 if the truth is P1),
    ``sprt_sample_size`` (reports used so far, or at the decision; theory = Wald's
    approximate expected sample size under the true hypothesis, which ignores the
    overshoot of the boundary), ``llr`` (the current ``S``), and ``sprt_decision_time``
    (the arrival time of the deciding report, NaN while undecided)."""

    kind = "sprt"
    Params = SPRTParams
    needs_reports = True

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        return 4

    def __init__(self, params: TaskParams, context: TaskContext) -> None:
        super().__init__(params, context)
        p: Any = params
        a, b = p.alpha, p.beta
        self.A = math.log((1 - b) / a)
        self.B = math.log(b / (1 - a))
        if self.truth_is_p1 == 1.0:
            self.expected_n = ((1 - b) * self.A + b * self.B) / self.D10
        elif self.truth_is_p1 == 0.0:
            self.expected_n = ((1 - a) * self.B + a * self.A) / (-self.D01)
        else:
            self.expected_n = math.nan

    def start(self, rng: np.random.Generator) -> None:
        self.S = 0.0
        self.n = 0
        self.decision = math.nan
        self.decision_time = math.nan

    def observe(self, times: NDArray[np.float64], reports: NDArray[np.int64]) -> None:
        if not math.isnan(self.decision) or reports.size == 0:
            return
        s = self.S + np.cumsum(self.w[reports])
        hit = np.flatnonzero((s >= self.A) | (s <= self.B))
        if hit.size == 0:
            self.S = float(s[-1])
            self.n += int(reports.size)
            return
        i = int(hit[0])
        self.S = float(s[i])
        self.n += i + 1
        self.decision = 1.0 if self.S >= self.A else 0.0
        self.decision_time = float(times[i])

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        return [
            _row("sprt_decision", self.decision, truth=self.truth_is_p1),
            _row("sprt_sample_size", float(self.n), theory=self.expected_n),
            _row("llr", self.S),
            _row("sprt_decision_time", self.decision_time),
        ]


# --------------------------------------------------------------------- fixed-n LRT
class LRTParams(HypothesisParams):
    kind: Literal["lrt"]


@register_task
class LRTTask(_HypothesisTask):
    """The Neyman-Pearson test at level ``alpha`` on the counts received at each checkpoint.

    Exact and randomised (:func:`lrt_exact`) when the exact law of the log-likelihood ratio
    is computable, else the normal approximation (:func:`lrt_normal`). Rows:
    ``lrt_reject_h0`` (1 = reject; truth = 1 if the truth is P1), ``lrt_type2_theory``
    (theory = the test's type II error beta_n at this n), ``stein_exponent`` (estimate =
    ``-(1/n) log beta_n``; theory = ``D_kl(M0 || M1)``, its limit)."""

    kind = "lrt"
    Params = LRTParams

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        return 3

    def start(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def _test(self, n: int):
        cache = self.__dict__.setdefault("_tests", {})
        if n not in cache:
            try:
                cache[n] = lrt_exact(self.M0, self.M1, n, self.params.alpha)  # type: ignore[attr-defined]
            except LdpSimError:  # too many count vectors to enumerate
                cache[n] = lrt_normal(self.M0, self.M1, n, self.params.alpha)  # type: ignore[attr-defined]
        return cache[n]

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        n = checkpoint.n_received
        if n == 0:
            reject = beta = exponent = math.nan
        else:
            test = self._test(n)
            reject = float(test.reject(checkpoint.counts, self.rng))
            beta, exponent = test.beta, -test.log_beta / n
        return [
            _row("lrt_reject_h0", reject, truth=self.truth_is_p1),
            _row("lrt_type2_theory", math.nan, theory=beta),
            _row("stein_exponent", exponent, theory=self.D01),
        ]


# --------------------------------------------------------------------- tests of fit, change, share, m hypotheses
Draws = Annotated[int, Field(ge=19, le=100_000)]


class _FitParams(TaskParams):
    alpha: OpenUnit = 0.05
    #: the anytime-valid e-value test instead of the fixed-n test at each checkpoint
    sequential: bool = False
    #: Monte Carlo draws calibrating the fixed-n test (its p-value is valid at any number)
    draws: Draws = 999


class GoodnessParams(_FitParams):
    kind: Literal["goodness_of_fit"]
    reference: list[UnitWeight] = Field(min_length=2)


class UniformityParams(_FitParams):
    kind: Literal["uniformity"]


class ChangeParams(_FitParams):
    kind: Literal["change"]
    since: Annotated[float, Field(gt=0, allow_inf_nan=False)]


def _fit_rows(prefix: str, out: Any, truth: float, power: float) -> list[dict[str, Any]]:
    """statistic, p-value (or e-value) and decision rows of one test at a checkpoint."""
    if out is None:
        return [
            _row(f"{prefix}_statistic", math.nan),
            _row(f"{prefix}_p_value", math.nan),
            _row(f"{prefix}_reject", math.nan, truth=truth, theory=power),
        ]
    if hasattr(out, "log_e"):
        return [
            _row(f"{prefix}_log_e_value", out.log_e),
            _row(f"{prefix}_e_value", out.e_value),
            _row(f"{prefix}_reject", float(out.reject), truth=truth),
        ]
    return [
        _row(f"{prefix}_statistic", out.statistic),
        _row(f"{prefix}_p_value", out.p_value),
        _row(f"{prefix}_reject", float(out.reject), truth=truth, theory=power),
    ]


class _DecisionTask(Task):
    """A test writing three rows per checkpoint (statistic, p- or e-value, decision). Its
    ``sequential`` version bets on every report in arrival order in individual mode
    (:mod:`ldpsim.analyst.betting`; an oracle whose reports are vectors or hashes needs
    individual mode), and in aggregate mode reads a finite mechanism's output counts (the
    likelihood mixtures of :mod:`ldpsim.analyst.hypotheses`)."""

    is_test = True

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        return 3

    @classmethod
    def reads_reports(cls, params: TaskParams, mechanism: FrequencyOracle) -> bool:
        p: Any = params
        return bool(p.sequential) and mechanism.output_size is None

    def start(self, rng: np.random.Generator) -> None:
        self.rng = rng
        mech = self.context.mechanism
        p: Any = self.params
        # bets on every report wherever they arrive one by one (far more power than the
        # mixture over the outputs: benchmarks/sequential_power.py); the mixture of the
        # counts where only counts arrive (aggregate mode)
        self.betting = bool(p.sequential) and (mech.output_size is None or self.context.mode == "individual")
        if self.betting:
            self.ranges = term_ranges(mech)
            self.start_bets()

    def start_bets(self) -> None:
        """A new replication's bettor (sequential tests on reports)."""
        raise NotImplementedError

    def bet(self, times: NDArray[np.float64], terms: NDArray[np.float64]) -> None:
        """Bet on a batch of reports' unbiased terms."""
        raise NotImplementedError

    @property
    def streams(self) -> bool:
        return self.betting

    def observe(self, times: NDArray[np.float64], reports: NDArray[Any]) -> None:
        if self.betting and len(reports):
            self.bet(times, report_terms(self.context.mechanism, reports))


class _FitTask(_DecisionTask):
    """A test of the answers' law at every checkpoint (:mod:`ldpsim.analyst.hypotheses`):
    rows ``<kind>_statistic`` and ``<kind>_p_value`` (sequential: ``<kind>_log_e_value`` and
    ``<kind>_e_value``) and ``<kind>_reject`` (1 = reject at ``alpha``; truth = 1 when the
    population's true law is not the null's, so the share of replications whose decision
    equals the truth is the power, or one minus the level; theory = the fixed-n test's power
    at the true law, by Monte Carlo from the exact laws, :func:`fit_power`)."""

    def reference(self) -> NDArray[np.float64]:
        raise NotImplementedError

    def start(self, rng: np.random.Generator) -> None:
        self._power: dict[int, float] = {}
        super().start(rng)

    def start_bets(self) -> None:
        self.proc = BettingProcess(self.ranges)
        self.ref = self.reference()

    def bet(self, times: NDArray[np.float64], terms: NDArray[np.float64]) -> None:
        self.proc.update(terms - self.ref)

    def _power_at(self, n: int) -> float:
        p: Any = self.params
        if p.sequential:
            return math.nan
        if n not in self._power:
            self._power[n] = fit_power(
                self.context.mechanism, self.reference(), self.context.truth, n, p.alpha, self.rng
            )
        return self._power[n]

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        p: Any = self.params
        n = checkpoint.n_received
        ref = self.reference()
        truth = float(np.max(np.abs(np.asarray(self.context.truth) - ref)) > 1e-12)
        if n == 0:
            return _fit_rows(self.kind, None, truth, math.nan)
        mech = self.context.mechanism
        if self.betting:
            out: Any = self.proc.result(f"sequential {self.kind}", p.alpha)
        elif p.sequential:
            out = sequential_goodness_of_fit(mech, checkpoint.counts, ref, alpha=p.alpha)
        else:
            out = goodness_of_fit(mech, checkpoint.counts, ref, n=n, alpha=p.alpha, draws=p.draws, rng=self.rng)
        return _fit_rows(self.kind, out, truth, self._power_at(n))


@register_task
class GoodnessTask(_FitTask):
    """``H0``: the answers follow ``reference`` (the last wave's shares, say)."""

    kind = "goodness_of_fit"
    Params = GoodnessParams

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        p: Any = params
        if len(p.reference) != mechanism.k:
            return f"expected reference with one entry per label ({mechanism.k}), got {len(p.reference)} entries"
        problem = sum_problem(p.reference)
        if problem is not None:
            return f"expected reference summing to 1 ({problem})"
        return super().check(params, mechanism)

    def reference(self) -> NDArray[np.float64]:
        ref = np.asarray(self.params.reference, dtype=np.float64)  # type: ignore[attr-defined]
        return ref / ref.sum()


@register_task
class UniformityTask(_FitTask):
    """``H0``: every answer equally likely."""

    kind = "uniformity"
    Params = UniformityParams

    def reference(self) -> NDArray[np.float64]:
        k = self.context.mechanism.k
        return np.full(k, 1.0 / k)


@register_task
class ChangeTask(_DecisionTask):
    """Did the answers' law change at time ``since``? The reports received by ``since`` (at
    the last checkpoint at or before it; put a checkpoint there) against those received after, by
    :func:`~ldpsim.analyst.hypotheses.homogeneity` (exact conditional test for a finite
    mechanism; sequential: :func:`~ldpsim.analyst.hypotheses.sequential_homogeneity`). Rows as
    the other tests (``change_*``); truth = 0 (a survey's population does not change)."""

    kind = "change"
    Params = ChangeParams

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        p: Any = params
        if mechanism.output_size is None and not p.sequential:
            return (
                f"expected a mechanism with finitely many outputs ({mechanism!r} reports vectors, and the fixed-n "
                "change test reads each period's number of reports from the output counts), or sequential = true "
                "(which bets on each report)"
            )
        return None

    def start(self, rng: np.random.Generator) -> None:
        self.before: NDArray[np.int64] | None = None
        super().start(rng)

    def start_bets(self) -> None:
        # the reports by `since` wait in `early`; each later one is paired with the next of them
        self.proc = BettingProcess(self.ranges)
        self.early: list[NDArray[np.float64]] = []
        self.waiting = np.zeros((0, self.ranges.size))

    def bet(self, times: NDArray[np.float64], terms: NDArray[np.float64]) -> None:
        p: Any = self.params
        late = times > p.since
        if np.any(~late):
            self.early.append(terms[~late])
        if not np.any(late):
            return
        if self.early:
            self.waiting = np.concatenate([self.waiting, *self.early])
            self.early = []
        after = terms[late]
        n = min(after.shape[0], self.waiting.shape[0])
        self.proc.update(after[:n] - self.waiting[:n])
        self.waiting = self.waiting[n:]

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        p: Any = self.params
        if self.betting:
            done = self.proc.n > 0
            return _fit_rows("change", self.proc.result("sequential change", p.alpha) if done else None, 0.0, math.nan)
        if checkpoint.time <= p.since or self.before is None:
            if checkpoint.time <= p.since:
                self.before = np.asarray(checkpoint.counts, dtype=np.int64).copy()
            return _fit_rows("change", None, 0.0, math.nan)
        after = np.asarray(checkpoint.counts, dtype=np.int64) - self.before
        if after.sum() == 0 or self.before.sum() == 0:
            return _fit_rows("change", None, 0.0, math.nan)
        mech = self.context.mechanism
        if p.sequential:
            out: Any = sequential_homogeneity(mech, [self.before, after], alpha=p.alpha)
        else:
            out = homogeneity(mech, [self.before, after], alpha=p.alpha, draws=p.draws, rng=self.rng)
        return _fit_rows("change", out, 0.0, math.nan)


class ShareParams(TaskParams):
    kind: Literal["share"]
    answer: str | Annotated[int, Field(ge=0)]  # a label, or an answer's index
    threshold: OpenUnit
    alpha: OpenUnit = 0.05
    draws: Draws = 999
    sequential: bool = False


@register_task
class ShareTask(_DecisionTask):
    """``H0``: the share of ``answer`` (a label) is at most ``threshold``, against more
    (:func:`~ldpsim.analyst.hypotheses.share_test`). Rows ``share_statistic``,
    ``share_p_value``, ``share_reject`` (truth = 1 when the true share is above the
    threshold; theory = the test's power at the true law by the normal approximation,
    :func:`share_power`)."""

    kind = "share"
    Params = ShareParams

    @classmethod
    def check_labels(cls, params: TaskParams, labels: list[str]) -> str | None:
        p: Any = params
        if isinstance(p.answer, int):
            if p.answer >= len(labels):
                return f"answer: got {p.answer}, expected an answer index below {len(labels)}"
        elif p.answer not in labels:
            return f"answer: got {p.answer!r}, expected one of the labels {labels}"
        return None

    def start_bets(self) -> None:
        j = self._answer()
        self.proc = BettingProcess(self.ranges[j : j + 1], direction=[1.0])

    def bet(self, times: NDArray[np.float64], terms: NDArray[np.float64]) -> None:
        p: Any = self.params
        self.proc.update(terms[:, self._answer()] - p.threshold)

    def _answer(self) -> int:
        p: Any = self.params
        if isinstance(p.answer, int):
            return int(p.answer)
        return [str(label) for label in self.context.labels].index(p.answer)

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        p: Any = self.params
        j = self._answer()
        truth = float(self.context.truth[j] > p.threshold)
        n = checkpoint.n_received
        if n == 0:
            return _fit_rows("share", None, truth, math.nan)
        mech = self.context.mechanism
        if self.betting:
            return _fit_rows("share", self.proc.result("sequential share", p.alpha), truth, math.nan)
        if p.sequential:
            seq = sequential_share_test(mech, checkpoint.counts, j, p.threshold, alpha=p.alpha)
            return _fit_rows("share", seq, truth, math.nan)
        out = share_test(mech, checkpoint.counts, j, p.threshold, n=n, alpha=p.alpha, draws=p.draws, rng=self.rng)
        power = share_power(mech, self.context.truth, j, p.threshold, n, p.alpha)
        return _fit_rows("share", out, truth, power)


class MaryParams(TaskParams):
    kind: Literal["mary"]
    hypotheses: list[list[UnitWeight]] = Field(min_length=2)
    rule: Literal["bayes", "minimax"] = "bayes"
    weights: list[UnitWeight] | None = None
    #: the anytime-valid version: every hypothesis is tested at ``alpha`` and the decision
    #: is the one left standing
    sequential: bool = False
    alpha: OpenUnit = 0.05


@register_task
class MaryTask(Task):
    """Which of the ``hypotheses`` (answer laws) holds, by the Bayes or minimax rule
    (:func:`~ldpsim.analyst.hypotheses.mary_test`). Rows ``mary_decision`` (the index of the
    hypothesis chosen; truth = the index of the hypothesis equal to the population's law,
    NaN if none is; theory = the rule's probability of choosing it under that hypothesis) and
    ``mary_posterior`` (the chosen hypothesis's posterior).

    ``sequential = true``: every hypothesis is rejected once its e-value reaches ``1 /
    alpha`` (:func:`~ldpsim.analyst.betting.sequential_mary_test`: likelihood ratios of the
    output counts for a finite mechanism, bets on every report otherwise, in individual
    mode), and ``mary_decision`` is the one left standing (NaN while several are); the
    second row is ``mary_rejected``, how many are rejected. The true hypothesis is rejected
    with probability at most ``alpha`` however often the analyst looks."""

    kind = "mary"
    Params = MaryParams
    is_test = True

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        return 2

    @classmethod
    def reads_reports(cls, params: TaskParams, mechanism: FrequencyOracle) -> bool:
        p: Any = params
        return bool(p.sequential) and mechanism.output_size is None

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        p: Any = params
        for i, h in enumerate(p.hypotheses):
            if len(h) != mechanism.k:
                return f"expected hypotheses[{i}] with one entry per label ({mechanism.k}), got {len(h)} entries"
            problem = sum_problem(h)
            if problem is not None:
                return f"expected hypotheses[{i}] summing to 1 ({problem})"
        if p.weights is not None and len(p.weights) != len(p.hypotheses):
            return f"expected one weight per hypothesis ({len(p.hypotheses)}), got {len(p.weights)}"
        return None

    def start(self, rng: np.random.Generator) -> None:
        self.rng = rng
        p: Any = self.params
        self.hyps = [np.asarray(h, dtype=np.float64) / math.fsum(h) for h in p.hypotheses]
        self.betting = bool(p.sequential) and self.context.mechanism.output_size is None
        if self.betting:
            self.bets = MaryBetting(self.context.mechanism, np.stack(self.hyps))

    @property
    def streams(self) -> bool:
        return self.betting

    def observe(self, times: NDArray[np.float64], reports: NDArray[Any]) -> None:
        if self.betting and len(reports):
            self.bets.update(report_terms(self.context.mechanism, reports))

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        p: Any = self.params
        hyps = self.hyps
        match = [i for i, h in enumerate(hyps) if np.max(np.abs(h - np.asarray(self.context.truth))) <= 1e-9]
        truth = float(match[0]) if match else math.nan
        n = checkpoint.n_received
        second = "mary_rejected" if p.sequential else "mary_posterior"
        if n == 0:
            return [_row("mary_decision", math.nan, truth=truth), _row(second, math.nan)]
        if p.sequential:
            if self.betting:
                log_e = self.bets.log_e()
                rejected = log_e >= math.log(1.0 / p.alpha)
            else:
                seq = sequential_mary_test(self.context.mechanism, hyps, counts=checkpoint.counts, alpha=p.alpha)
                rejected = seq.rejected
            left = np.flatnonzero(~rejected)
            decision = float(left[0]) if left.size == 1 else math.nan
            return [
                _row("mary_decision", decision, truth=truth),
                _row("mary_rejected", float(rejected.sum())),
            ]
        weights = None if p.weights is None else np.asarray(p.weights, dtype=np.float64) / math.fsum(p.weights)
        out = mary_test(
            self.context.mechanism, checkpoint.counts, hyps, n=n, weights=weights, rule=p.rule, draws=2000, rng=self.rng
        )
        right = float(out.errors[match[0], match[0]]) if match else math.nan
        return [
            _row("mary_decision", float(out.decision), truth=truth, theory=right),
            _row("mary_posterior", float(out.posterior[out.decision])),
        ]
