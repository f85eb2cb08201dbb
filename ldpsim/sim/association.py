"""Tests on paired unbiased terms in a survey simulation: ``[analyst] crosstabs`` of any
two questions whose kinds give each report an unbiased term (beyond the finite path of
:class:`ldpsim.sim.tasks.CrosstabTask`), and ``[analyst] homogeneity``, a question across
the groups of a column of the population's table.

The engine cannot keep every pair of reports, so each task keeps the sufficient sums of
the Wald test (:class:`ldpsim.analyst.PairedSums`): the number of pairs, the terms' sums
and their products. For a homogeneity test the second side is the group's one-hot
indicator, whose sums are the groups' sizes and the terms' sums by group. The same sums of
the true answers' terms (:meth:`Question.design_truth`, from each respondent's table row)
give the same test without privacy beside it, and the answers' own cross-covariance.

Rows at each checkpoint (task ``"a x b:crosstab"`` or ``"question by column:homogeneity"``):

- ``independence_statistic``, ``independence_df``, ``independence_p_value``,
  ``independence_reject`` (at ``alpha``; 1 or 0), each twice: category ``ldp`` (the Wald
  test on the privatised reports' terms, :func:`ldpsim.analyst.association_from_sums`) and
  ``answers`` (the same statistic on the true answers' terms of the same respondents: for
  two categorical questions Pearson's chi-square, for two numbers ``n r^2``; NaN without a
  table, where the answers are drawn independently from each question's law);
- ``association`` (category ``ldp``): the Frobenius norm of the terms' cross-covariance,
  a consistent estimate of the answers' own (the noises are independent and centred);
  truth: the same norm on the true answers' terms of the same respondents (0 without a
  table: independent by construction);
- a homogeneity test of a question with a finite mechanism also writes the four
  ``independence_*`` rows for category ``conditional``: the exact conditional test on the
  groups' output counts (:func:`ldpsim.analyst.hypotheses.homogeneity`: Pearson's statistic
  of the ``g x m`` table of output counts, calibrated on :data:`DRAWS` tables dealt out
  with the same margins; df NaN), whose level is exact at every ``n``.

Beside them, ``independence_log_e_value`` and ``independence_reject`` of category
``sequential``: the anytime-valid test that bets on the respondents two at a time
(:class:`ldpsim.analyst.betting.PairBetting`; the groups' indicator is the second side of a
homogeneity test), whose level holds however many checkpoints look; NaN where a kind's
terms have no bounded width (a numeric question through unbounded noise).

A test that cannot be computed (fewer than three pairs, terms that do not vary) is NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.association import PairedSums, association_from_sums
from ldpsim.analyst.betting import PairBetting
from ldpsim.analyst.hypotheses import homogeneity
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.finite import FiniteMechanism

#: calibration draws of the conditional homogeneity test at each checkpoint
DRAWS = 999


class _Sums:
    """Running sums of paired rows ``(u, v)``: n, sum u, sum v, sum u u^T, sum v v^T, sum u v^T."""

    def __init__(self, p: int, q: int) -> None:
        self.n = 0
        self.sa, self.sb = np.zeros(p), np.zeros(q)
        self.saa, self.sbb, self.sab = np.zeros((p, p)), np.zeros((q, q)), np.zeros((p, q))

    def add(self, u: NDArray[np.float64], v: NDArray[np.float64]) -> None:
        self.n += u.shape[0]
        self.sa += u.sum(axis=0)
        self.sb += v.sum(axis=0)
        self.saa += u.T @ u
        self.sbb += v.T @ v
        self.sab += u.T @ v

    def frozen(self) -> PairedSums:
        return PairedSums(self.n, self.sa.copy(), self.sb.copy(), self.saa.copy(), self.sbb.copy(), self.sab.copy())


def _rows(sums: _Sums, truth: _Sums | None, alpha: float, test: str, zero_truth: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    found: dict[str, tuple[float, float, float, float]] = {}
    for which, s in (("ldp", sums), ("answers", truth)):
        stat = df = p = cross = np.nan
        if s is not None and s.n >= 3:
            try:
                res = association_from_sums(s.frozen(), alpha=alpha, test=test)
                stat, df, p, cross = res.statistic, float(res.df), res.p_value, res.association
            except LdpSimError:  # terms that do not vary (yet): nothing to test
                cross = float(np.linalg.norm(s.frozen().covariances()[2]))
        found[which] = (stat, df, p, cross)
        reject = float(p <= alpha) if not np.isnan(p) else np.nan
        for quantity, value in (("statistic", stat), ("df", df), ("p_value", p), ("reject", reject)):
            out.append(_row(f"independence_{quantity}", which, value))
    true_cross = 0.0 if zero_truth else found["answers"][3]
    out.append(_row("association", "ldp", found["ldp"][3], truth=true_cross))
    return out


def _bets(ranges_a: Any, ranges_b: Any) -> PairBetting | None:
    """The sequential test's bettor, or None where a width is unbounded."""
    try:
        return PairBetting(ranges_a, ranges_b)
    except LdpSimError:
        return None


def _sequential_rows(bets: PairBetting | None, alpha: float) -> list[dict[str, Any]]:
    log_e = reject = np.nan
    if bets is not None:
        res = bets.proc.result("sequential", alpha)
        log_e, reject = res.log_e, float(res.reject)
    return [
        {**_row("independence_log_e_value", "sequential", log_e), "method": "betting"},
        {**_row("independence_reject", "sequential", reject), "method": "betting"},
    ]


def _row(quantity: str, category: str, estimate: float, truth: float = np.nan) -> dict[str, Any]:
    return dict(
        quantity=quantity,
        category=category,
        estimate=estimate,
        ci_low=np.nan,
        ci_high=np.nan,
        truth=truth,
        theory=np.nan,
        method="wald",
    )


class PairedTermsTask:
    """``[analyst] crosstabs`` of two questions on their paired unbiased terms (module docstring)."""

    kind = "crosstab"

    def __init__(self, name: str, first: int, second: int, questions: Any, mechanisms: Any, alpha: float, rows: bool):
        self.name = name
        self.first, self.second = first, second
        self.qa, self.qb = questions[first], questions[second]
        self.ma, self.mb = mechanisms[first], mechanisms[second]
        self.alpha = alpha
        self.with_rows = rows  # the respondents' table rows travel: the true answers' terms
        p = len(self.qa.design_labels(self.ma))
        q = len(self.qb.design_labels(self.mb))
        self.sums = _Sums(p, q)
        self.truth = _Sums(p, q) if rows else None
        self.bets = _bets(self.qa.design_ranges(self.ma), self.qb.design_ranges(self.mb))

    @property
    def n(self) -> int:
        return self.sums.n

    def add(self, ya: NDArray[Any], yb: NDArray[Any], rows: NDArray[np.int64] | None) -> None:
        """The reports of both questions of the same respondents (and their table rows)."""
        if not len(ya):
            return
        ua, ub = self.qa.design_units(self.ma, ya), self.qb.design_units(self.mb, yb)
        self.sums.add(ua, ub)
        if self.bets is not None:
            self.bets.update(ua, ub)
        if self.truth is not None and rows is not None:
            self.truth.add(self.qa.design_truth(rows), self.qb.design_truth(rows))

    def at_checkpoint(self) -> list[dict[str, Any]]:
        out = _rows(self.sums, self.truth, self.alpha, "independence", zero_truth=self.truth is None)
        return out + _sequential_rows(self.bets, self.alpha)


class GroupTermsTask:
    """``[analyst] homogeneity``: a question's terms against the groups of a table column."""

    kind = "homogeneity"

    def __init__(self, test: Any, questions: Any, mechanisms: Any) -> None:
        self.name = test.name
        self.question = test.question
        self.q, self.m = questions[test.question], mechanisms[test.question]
        self.group = test.group
        self.labels = test.labels
        self.alpha = test.alpha
        p, g = len(self.q.design_labels(self.m)), len(test.labels)
        self.eye = np.eye(g)
        self.sums = _Sums(p, g)
        self.truth = _Sums(p, g)
        self.bets = _bets(self.q.design_ranges(self.m), np.ones(g))
        # a finite mechanism: each group's output counts, for the exact conditional test
        self.finite = isinstance(self.m, FiniteMechanism)
        self.counts = np.zeros((g, self.m.output_size if self.finite else 0), np.int64)
        self.rng = np.random.default_rng(0)

    def start(self, rng: np.random.Generator) -> None:
        """The stream of the conditional test's calibration draws."""
        self.rng = rng

    @property
    def n(self) -> int:
        return self.sums.n

    def add(self, y: NDArray[Any], rows: NDArray[np.int64]) -> None:
        """The question's reports heard and the same respondents' table rows."""
        if not len(y):
            return
        group = self.group[rows]
        indicator = self.eye[group]
        units = self.q.design_units(self.m, y)
        self.sums.add(units, indicator)
        if self.bets is not None:
            self.bets.update(units, indicator)
        self.truth.add(self.q.design_truth(rows), indicator)
        if self.finite:
            m = self.counts.shape[1]
            self.counts += np.bincount(group * m + np.asarray(y, np.int64), minlength=self.counts.size).reshape(
                self.counts.shape
            )

    def at_checkpoint(self) -> list[dict[str, Any]]:
        out = _rows(self.sums, self.truth, self.alpha, "homogeneity", zero_truth=False) + _sequential_rows(
            self.bets, self.alpha
        )
        if self.finite:
            stat = p = np.nan
            heard = self.counts[self.counts.sum(axis=1) > 0]  # groups with no report yet are left out
            if heard.shape[0] >= 2:
                res = homogeneity(self.m, list(heard), alpha=self.alpha, draws=DRAWS, rng=self.rng)
                stat, p = res.statistic, res.p_value
            reject = float(p <= self.alpha) if not np.isnan(p) else np.nan
            for quantity, value in (("statistic", stat), ("df", np.nan), ("p_value", p), ("reject", reject)):
                out.append({**_row(f"independence_{quantity}", "conditional", value), "method": "conditional"})
        return out
