"""Anytime-valid tests for every oracle and for numeric reports, by betting on each report.

The sequential tests of :mod:`ldpsim.analyst.hypotheses` read a finite mechanism's output
counts. An oracle whose reports are vectors (unary encoding, RAPPOR), hashes (local hashing)
or subsets has too many outputs for a mixture over them, and a numeric report has no finite
law at all. What every one of them has is an unbiased term per report: ``u_i = A s_i + b``
(``s_i`` the report's own statistic, ``A, b`` the oracle's affine inversion), whose mean over
the reports is the oracle's estimate and whose ``v``-th entry lies in an interval of known
width ``R_v`` (:meth:`inversion_coefficient_range`); a numeric report lies in its mechanism's
report range. Each null below says that some vector built from the reports has mean zero:

- goodness of fit: ``x_i = u_i - reference`` (uniformity: the uniform reference);
- homogeneity of ``g`` groups: the ``i``-th report of every group paired with the ``i``-th of
  the first, ``x_i = (u_{1,i} - u_{0,i}, ..., u_{g-1,i} - u_{0,i})``;
- independence of two questions: two respondents at a time, ``x_i = vec((a_{2i} - a_{2i+1})
  (b_{2i} - b_{2i+1})^T)``, whose mean is twice the cross-covariance of the answers' terms;
- a share at most ``theta``: ``x_i = u_{i,v} - theta``, mean at most zero;
- m-ary: hypothesis ``j`` against each other ``i``, ``x_i = (u_i - pi_j) . (pi_i - pi_j)``;
- numeric means: one group's reports less a stated mean, or the ``i``-th report of group A
  less the ``i``-th of group B.

The test bets on the next report: wealth ``K_n = prod_i (1 + lambda_i x_i . w_i)``, with the
direction ``w_i`` (the running mean of the ``x`` seen before, normalised) and the stake
``lambda_i`` (the predictable plug-in ``mean / second moment`` in the manner of Waudby-Smith
and Ramdas 2024, capped at ``1 / (2 |w_i| . R)`` so that every factor is at least 1/2) fixed
before the report arrives. Under the null each factor has mean one given the past (at most
one, for the one-sided share null), so ``K_n`` is a nonnegative (super)martingale started at
one, and by Ville's inequality ``P(sup_n K_n >= 1 / alpha) <= alpha``: rejecting the first
time the wealth reaches ``1 / alpha`` keeps the level however often the analyst looks. The
direction and stake change only at fixed report counts (16, 32, 64, ... doubling up to
:data:`MAX_CHUNK`), which keeps the work vectorised and makes the wealth after ``n`` reports
the same whether they arrive at once or in many batches.

Pairing leaves a group's reports without a partner until the other group catches up: they
wait (the test uses ``min`` of the groups' sizes). The tests are valid for every oracle; for
finite mechanisms the likelihood mixtures of :mod:`ldpsim.analyst.hypotheses` use the
reports more efficiently and are the ones the scenario tasks use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim.analyst.hypotheses import SequentialResult, _alpha, affine_estimate
from ldpsim.errors import invalid

__all__ = [
    "MAX_CHUNK",
    "BettingProcess",
    "MaryBetting",
    "PairBetting",
    "SequentialMaryResult",
    "report_terms",
    "sequential_fit_of_reports",
    "sequential_homogeneity_of_reports",
    "sequential_independence",
    "sequential_mary_test",
    "sequential_mean_difference",
    "sequential_mean_test",
    "sequential_share_of_reports",
    "term_ranges",
]

#: the first stretch of reports bet with a stake of zero (nothing seen yet), and the largest
#: stretch between two updates of the direction and stake
FIRST_CHUNK = 16
MAX_CHUNK = 4096
#: every factor of the wealth stays at least this (the stake's cap)
_FLOOR = 0.5


class BettingProcess:
    """The wealth of a bettor on vectors ``x_i`` (rows) whose mean is zero under the null,
    each entry bounded, ``|x_{i,v}| <= radius_v``. ``direction`` fixes the bet's direction
    (a one-sided test of a mean at most zero along it); without it, the direction is learned
    from the running mean (two-sided). Feed reports with :meth:`update` in arrival order;
    ``log_e`` is the log wealth now, ``log_e_max`` its largest value along the path.

    Each entry is bet on in units of its bound, ``x_v / radius_v`` (within [-1, 1]; an entry
    of zero radius is zero), so terms near the largest double (eps near zero) never overflow.
    Before each chunk the stake is ``mu / s2``, ``mu`` the running mean along the direction
    and ``s2`` the running second moment along it with the entries' cross terms left out
    (``sum_v w_v^2 mean(x_v^2)``): any stake fixed before the chunk keeps the test valid; this
    one is near the growth-optimal bet when the entries are weakly correlated."""

    def __init__(self, radius: ArrayLike, direction: ArrayLike | None = None) -> None:
        self.radius = np.asarray(radius, dtype=np.float64).ravel()
        if self.radius.size == 0 or not np.all(np.isfinite(self.radius)) or np.any(self.radius < 0):
            raise invalid("radius", self.radius.tolist()[:8], "finite nonnegative bounds, one per entry")
        self.fixed = None if direction is None else np.asarray(direction, dtype=np.float64).ravel()
        if self.fixed is not None and self.fixed.shape != self.radius.shape:
            raise invalid("direction", self.fixed.shape, f"one entry per entry of radius ({self.radius.size})")
        d = self.radius.size
        self._live = self.radius > 0  # the scaled entries' bounds: 1, or 0 for a constant zero
        self.n = 0
        self.log_e = 0.0
        self.log_e_max = 0.0
        self._sum = np.zeros(d)  # sums of x and of x^2 over every report seen
        self._sq = np.zeros(d)
        self._chunk_end = FIRST_CHUNK
        self._w, self._lam = np.zeros(d), 0.0

    def _reset_bet(self) -> None:
        """The direction and stake for the next chunk, from the reports before it only."""
        mean = self._sum / self.n
        if self.fixed is not None:
            w = self.fixed
        else:
            norm = float(np.sqrt(mean @ mean))
            w = mean / norm if norm > 0 else np.zeros_like(mean)
        reach = float(np.abs(w) @ self._live)
        mu = float(mean @ w)
        second = float((w * w) @ (self._sq / self.n))
        lam = mu / second if mu > 0 and second > 0 and reach > 0 else 0.0
        self._w, self._lam = w, min(lam, (1.0 - _FLOOR) / reach) if lam > 0 else 0.0

    def update(self, x: ArrayLike) -> None:
        """Bet on the rows of ``x`` in order."""
        raw = np.asarray(x, dtype=np.float64).reshape(-1, self.radius.size)
        rows = np.divide(raw, self.radius, out=np.zeros_like(raw), where=self._live)
        at = 0
        while at < rows.shape[0]:
            take = min(rows.shape[0] - at, self._chunk_end - self.n)
            part = rows[at : at + take]
            if self._lam > 0:
                logs = np.cumsum(np.log1p(self._lam * (part @ self._w)))
                self.log_e_max = max(self.log_e_max, self.log_e + float(logs.max()))
                self.log_e += float(logs[-1])
            self._sum += part.sum(axis=0)
            self._sq += (part * part).sum(axis=0)
            self.n += take
            at += take
            if self.n == self._chunk_end:  # the chunk is finished: the next bet
                self._chunk_end = self.n + min(self.n, MAX_CHUNK)
                self._reset_bet()

    def result(self, test: str, alpha: float) -> SequentialResult:
        """The anytime-valid decision: reject once the wealth has reached ``1 / alpha``."""
        return SequentialResult(test, self.log_e, alpha, log_e_max=self.log_e_max)


# ------------------------------------------------------------------------------ per-report terms
def report_terms(oracle: Any, reports: ArrayLike) -> NDArray[np.float64]:
    """``(n, k)``: each report's unbiased term ``A s_i + b`` (their mean is the oracle's
    estimate of the answers' law)."""
    a, b = affine_estimate(oracle)
    units = np.asarray(oracle.unit_statistics(reports), dtype=np.float64)
    return np.asarray(units @ a.T + b, dtype=np.float64)


def term_ranges(oracle: Any) -> NDArray[np.float64]:
    """``R_v``: the width of the interval that every report's term for answer ``v`` lies in,
    so ``|u_v - m| <= R_v`` for any ``m`` in that interval (every law's share ``pi_v`` is)."""
    return np.asarray(oracle.inversion_coefficient_range(), dtype=np.float64)


def _terms(oracle: Any, reports: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        return report_terms(oracle, reports)
    except (ValueError, TypeError) as exc:
        raise invalid(name, f"{np.shape(reports)}", f"reports of {oracle!r} ({exc})") from None


# ------------------------------------------------------------------------------ the tests
def sequential_fit_of_reports(
    oracle: Any, reports: ArrayLike, reference: ArrayLike, *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid goodness of fit to ``reference`` from the reports in arrival order
    (any oracle; module docstring)."""
    a = _alpha(alpha)
    pi0 = v.probability_vector(reference, "reference", size=int(oracle.k))
    proc = BettingProcess(term_ranges(oracle))
    proc.update(_terms(oracle, reports, "reports") - pi0)
    return proc.result("sequential goodness of fit", a)


def _paired(groups: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
    n = min(g.shape[0] for g in groups)
    return np.concatenate([g[:n] - groups[0][:n] for g in groups[1:]], axis=1)


def sequential_homogeneity_of_reports(
    oracle: Any, groups: Sequence[ArrayLike], *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid homogeneity of ``g >= 2`` groups' reports (each in arrival order): the
    ``i``-th report of every group against the ``i``-th of the first (module docstring)."""
    a = _alpha(alpha)
    if len(groups) < 2:
        raise invalid("groups", len(groups), "at least two groups' reports")
    terms = [_terms(oracle, g, f"groups[{i}]") for i, g in enumerate(groups)]
    proc = BettingProcess(np.tile(term_ranges(oracle), len(groups) - 1))
    proc.update(_paired(terms))
    return proc.result("sequential homogeneity", a)


def sequential_share_of_reports(
    oracle: Any, reports: ArrayLike, answer: int, threshold: float, *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid ``H0: pi_answer <= threshold``: a one-sided bet that the terms of
    ``answer`` run above the threshold."""
    a = _alpha(alpha)
    j = v.integer(answer, "answer", minimum=0, maximum=int(oracle.k) - 1)
    theta = v.as_float(threshold, "threshold", "a share in (0, 1)")
    if not 0.0 < theta < 1.0:
        raise invalid("threshold", threshold, "a share in (0, 1)")
    proc = BettingProcess(term_ranges(oracle)[j : j + 1], direction=[1.0])
    proc.update(_terms(oracle, reports, "reports")[:, j] - theta)
    return proc.result("sequential share at most threshold", a)


def sequential_independence(
    units_a: ArrayLike, units_b: ArrayLike, ranges_a: ArrayLike, ranges_b: ArrayLike, *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid independence of two questions from their respondents' paired unbiased
    terms (rows in arrival order; ``ranges_*`` the widths their entries lie in): under
    independence of the answers the two reports of one respondent are independent, so the
    product of two respondents' differences has mean zero (module docstring)."""
    a = _alpha(alpha)
    ua = np.asarray(units_a, dtype=np.float64)
    ub = np.asarray(units_b, dtype=np.float64)
    ua = ua.reshape(ua.shape[0], -1)
    ub = ub.reshape(ub.shape[0], -1)
    if ua.shape[0] != ub.shape[0]:
        raise invalid("units_b", ub.shape[0], f"one row per row of units_a ({ua.shape[0]})")
    ra = np.asarray(ranges_a, dtype=np.float64).ravel()
    rb = np.asarray(ranges_b, dtype=np.float64).ravel()
    if ra.size != ua.shape[1] or rb.size != ub.shape[1]:
        raise invalid("ranges_a" if ra.size != ua.shape[1] else "ranges_b", "size", "one width per column of units")
    bets = PairBetting(ra, rb)
    bets.update(ua, ub)
    return bets.proc.result("sequential independence", a)


class PairBetting:
    """:func:`sequential_independence` fed in arrival order: respondents two at a time (one
    waits for the next), each pair's product of differences bet on."""

    def __init__(self, ranges_a: ArrayLike, ranges_b: ArrayLike) -> None:
        self.ra = np.asarray(ranges_a, dtype=np.float64).ravel()
        self.rb = np.asarray(ranges_b, dtype=np.float64).ravel()
        if not (np.all(np.isfinite(self.ra)) and np.all(np.isfinite(self.rb))):
            raise invalid("ranges", "an infinite width", "terms of bounded width (a bet needs bounded terms)")
        # each side in units of its widths before the product (no overflow near the largest double)
        self.proc = BettingProcess(np.outer(self.ra > 0, self.rb > 0).ravel().astype(np.float64))
        self._wait: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None

    def update(self, ua: NDArray[np.float64], ub: NDArray[np.float64]) -> None:
        """The next respondents' terms of both questions (rows)."""
        if self._wait is not None:
            ua, ub = np.vstack([self._wait[0], ua]), np.vstack([self._wait[1], ub])
            self._wait = None
        if ua.shape[0] % 2:
            self._wait = (ua[-1:], ub[-1:])
            ua, ub = ua[:-1], ub[:-1]
        if ua.shape[0] == 0:
            return
        da = _scaled(ua[0::2], self.ra) - _scaled(ua[1::2], self.ra)
        db = _scaled(ub[0::2], self.rb) - _scaled(ub[1::2], self.rb)
        self.proc.update((da[:, :, None] * db[:, None, :]).reshape(da.shape[0], -1))


def _scaled(u: NDArray[np.float64], widths: NDArray[np.float64]) -> NDArray[np.float64]:
    """Terms in units of their widths (zero where a width is zero)."""
    return np.divide(u, widths, out=np.zeros_like(u), where=widths > 0)


def _bounds(low: Any, high: Any) -> tuple[float, float]:
    lo = v.as_float(low, "low", "the smallest possible report (finite)")
    hi = v.as_float(high, "high", "the largest possible report (finite)")
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise invalid("high", high, f"a finite bound above low = {low!r}")
    return lo, hi


def _numeric(reports: ArrayLike, name: str, lo: float, hi: float) -> NDArray[np.float64]:
    y = v.finite_array(reports, name, "finite numbers").ravel()
    if y.size and (float(y.min()) < lo or float(y.max()) > hi):
        raise invalid(name, f"reports in [{float(y.min()):g}, {float(y.max()):g}]", f"reports in [{lo:g}, {hi:g}]")
    return y


def sequential_mean_test(
    reports: ArrayLike, mean: float, *, low: float, high: float, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid ``H0: E[report] = mean`` for numeric reports in ``[low, high]`` (a
    numeric mechanism's reports are unbiased for the answers, so this tests the answers'
    mean)."""
    a = _alpha(alpha)
    lo, hi = _bounds(low, high)
    m = v.as_float(mean, "mean", "a number in [low, high]")
    if not lo <= m <= hi:
        raise invalid("mean", mean, f"a number in [{lo:g}, {hi:g}]")
    proc = BettingProcess([hi - lo])
    proc.update((_numeric(reports, "reports", lo, hi) - m)[:, None])
    return proc.result("sequential mean", a)


def sequential_mean_difference(
    reports_a: ArrayLike,
    reports_b: ArrayLike,
    *,
    low: float,
    high: float,
    delta: float = 0.0,
    alpha: float = 0.05,
) -> SequentialResult:
    """Anytime-valid ``H0: mean_a - mean_b = delta`` for two groups' numeric reports in
    ``[low, high]`` (each in arrival order; the ``i``-th of A paired with the ``i``-th of B)."""
    a = _alpha(alpha)
    lo, hi = _bounds(low, high)
    d = v.as_float(delta, "delta", "a finite number")
    ya = _numeric(reports_a, "reports_a", lo, hi)
    yb = _numeric(reports_b, "reports_b", lo, hi)
    n = min(ya.size, yb.size)
    proc = BettingProcess([hi - lo + abs(d)])
    proc.update((ya[:n] - yb[:n] - d)[:, None])
    return proc.result("sequential mean difference", a)


# ------------------------------------------------------------------------------ m-ary
@dataclass(frozen=True)
class SequentialMaryResult:
    """Anytime-valid m-ary decision: hypothesis ``j``'s log e-value ``log_e[j]`` (evidence
    against it) and whether it is rejected (its wealth reached ``1 / alpha``); the decision
    is the one hypothesis left standing (``None`` while more than one is, or none). Under
    ``H_j``, ``P(H_j is ever rejected) <= alpha``, so the decision is wrong with probability
    at most ``alpha`` at any look."""

    log_e: NDArray[np.float64]
    rejected: NDArray[np.bool_]
    alpha: float

    @property
    def decision(self) -> int | None:
        left = np.flatnonzero(~self.rejected)
        return int(left[0]) if left.size == 1 else None


def sequential_mary_test(
    oracle: Any,
    hypotheses: Sequence[ArrayLike],
    *,
    counts: ArrayLike | None = None,
    reports: ArrayLike | None = None,
    alpha: float = 0.05,
) -> SequentialMaryResult:
    """Anytime-valid choice among simple hypotheses (answer laws).

    With a finite mechanism's output ``counts``, hypothesis ``j``'s e-value is the average
    likelihood ratio ``mean_{i != j} L_i / L_j`` of the reports (a test martingale under
    ``H_j`` whatever the order of the reports: Wald's m-ary sequential test in the form of
    Armitage 1950). With ``reports`` of any oracle, it is the average over ``i != j`` of a
    one-sided bet along ``pi_i - pi_j`` (module docstring)."""
    a = _alpha(alpha)
    k = int(oracle.k)
    laws = np.stack([v.probability_vector(h, "hypotheses", size=k) for h in hypotheses])
    m = laws.shape[0]
    if m < 2:
        raise invalid("hypotheses", m, "at least two answer laws")
    if (counts is None) == (reports is None):
        raise invalid("counts", "both" if counts is not None else "neither", "either counts or reports")
    log_e = np.zeros(m)
    if counts is not None:
        if getattr(oracle, "output_size", None) is None:
            raise invalid("counts", "given", f"reports (rows) for {oracle!r}, whose statistic is not output counts")
        c = np.asarray(counts, dtype=np.float64)
        if c.shape != (int(oracle.statistic_size),) or np.any(c < 0) or np.any(c != np.round(c)):
            raise invalid("counts", f"shape {c.shape}", f"{oracle.statistic_size} non-negative integer counts")
        outs = np.stack([np.asarray(oracle.forward(p), dtype=np.float64).clip(0.0) for p in laws])
        with np.errstate(divide="ignore"):
            ll = (special.xlogy(c[None, :], outs)).sum(axis=1)
            for j in range(m):
                if not np.isfinite(ll[j]):
                    log_e[j] = math.inf
                    continue
                others = np.delete(ll, j) - ll[j]
                log_e[j] = float(special.logsumexp(others) - math.log(m - 1))
        return SequentialMaryResult(log_e, log_e >= math.log(1.0 / a), a)
    bets = MaryBetting(oracle, laws)
    bets.update(_terms(oracle, np.asarray(reports), "reports"))
    log_e = bets.log_e()
    return SequentialMaryResult(log_e, log_e >= math.log(1.0 / a), a)


class MaryBetting:
    """The bettors of :func:`sequential_mary_test` on reports, fed in arrival order: for
    each hypothesis ``j`` and each other ``i``, a one-sided bet along ``pi_i - pi_j`` on
    the reports' terms (:func:`report_terms`)."""

    def __init__(self, oracle: Any, laws: NDArray[np.float64]) -> None:
        radius = term_ranges(oracle)
        self.laws = laws
        self.bets: list[list[tuple[NDArray[np.float64], BettingProcess]]] = []
        for j in range(laws.shape[0]):
            row = []
            for i in range(laws.shape[0]):
                if i != j:
                    w = laws[i] - laws[j]
                    w = w / float(np.sqrt(w @ w))
                    row.append((w, BettingProcess([float(np.abs(w) @ radius)], direction=[1.0])))
            self.bets.append(row)

    def update(self, terms: NDArray[np.float64]) -> None:
        """Bet on the next reports' terms (rows)."""
        for j, row in enumerate(self.bets):
            centred = terms - self.laws[j]
            for w, proc in row:
                proc.update((centred @ w)[:, None])

    def log_e(self) -> NDArray[np.float64]:
        """Each hypothesis's log e-value now: the log of its bettors' average wealth (a test
        martingale under it)."""
        m = len(self.bets)
        return np.array([float(special.logsumexp([p.log_e for _, p in row]) - math.log(m - 1)) for row in self.bets])
