"""Estimates from repeated collection: each period's distribution and the change between
consecutive periods, with normal confidence intervals.

The estimator is the inversion estimator of :mod:`ldpsim.analyst.frequency`, written per
report: for a mechanism whose report is one symbol ``y`` of ``m``, the unbiased estimate of
the indicator of a respondent's answer is the row ``W[y]`` of the ``m x k`` table
:func:`report_estimators` (the mechanism's own inversion applied to one report), and a
period's estimate is the mean of its reports' rows. Inversion is affine in the output
frequencies, so this mean is exactly the inversion of the period's counts.

**Intervals.** A period's variance is estimated by the sample variance of its reports' rows
over the number of reports: unbiased for sampling a random subset of respondents, and
conservative when every respondent reports (the spread of the true answers is counted as if
it were sampling noise). The change ``p_t - p_{t-1}`` has variance ``V_t + V_{t-1} - 2 C``:
when the server knows who sent which report (no shuffler), ``C`` is estimated from the
respondents who reported in both periods (their reports are correlated: the same person,
and with memoisation the same memoised response); when reports are anonymous (shuffled),
``C`` is taken as 0, which is conservative whenever a respondent's consecutive reports are
not negatively correlated (true for plain and memoised reports of a Markov chain or drift
that keeps answers with probability >= their share; the module does not check it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.analyst.estimation import z_value
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = [
    "z_value",
    "PeriodEstimates",
    "report_estimators",
    "period_estimates",
    "paired_covariance",
    "change_estimates",
]


def report_estimators(mechanism: FrequencyOracle) -> NDArray[np.float64]:
    """``m x k``: row ``y`` is the unbiased estimate of the answer's indicator from one
    report ``y`` (the mechanism's inversion of a single report). Needs a mechanism whose
    report is one symbol (its statistic counts output symbols)."""
    if tuple(getattr(mechanism, "report_shape", ())) != ():
        raise invalid("mechanism", mechanism, "a mechanism whose report is one symbol")
    m = mechanism.statistic_size
    return np.asarray(np.stack([mechanism.invert(row) for row in np.eye(m)]), dtype=np.float64)


@dataclass(frozen=True)
class PeriodEstimates:
    """Per period ``t`` (rows) and answer (columns): the estimate, the estimated variance of
    the estimate, the number of reports; NaN where a period has fewer than two reports."""

    estimate: NDArray[np.float64]
    variance: NDArray[np.float64]
    n: NDArray[np.int64]

    def interval(self, confidence: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        z = z_value(confidence)
        half = z * np.sqrt(self.variance)
        with np.errstate(invalid="ignore"):  # an estimate and a half-width both inf (eps near 0): NaN ends
            return self.estimate - half, self.estimate + half


def period_estimates(estimators: ArrayLike, counts: ArrayLike) -> PeriodEstimates:
    """Each period's estimate from its output counts (``T x m``) and the per-report table
    (``m x k``, :func:`report_estimators`)."""
    w = np.asarray(estimators, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != w.shape[0]:
        raise invalid("counts", f"shape {c.shape}", f"periods x {w.shape[0]} output counts")
    n = c.sum(axis=1)
    # eps near 0 makes the per-report estimators huge (about 1/eps): their squares pass the
    # largest double, and so does the variance, which is then inf (not a warning, not NaN)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = (c @ w) / n[:, None]
        second = (c @ (w * w)) / n[:, None]
        var = np.maximum(second - mean * mean, 0.0) * n[:, None] / (n[:, None] - 1) / n[:, None]
        var[np.isinf(second) & (n[:, None] >= 2)] = np.inf
    few = n < 2
    mean[few] = np.nan
    var[few] = np.nan
    return PeriodEstimates(mean, var, n.astype(np.int64))


def paired_covariance(estimators: ArrayLike, reports: ArrayLike) -> NDArray[np.float64]:
    """``(T - 1) x k``: the estimated covariance of the estimates of periods ``t - 1`` and
    ``t``, from the respondents who reported in both. ``reports`` is ``T x n`` (period,
    respondent): the output symbol, or -1 where the server has no report."""
    w = np.asarray(estimators, dtype=np.float64)
    r = np.asarray(reports)
    T, k = r.shape[0], w.shape[1]
    out = np.zeros((max(T - 1, 0), k))
    counts = (r >= 0).sum(axis=1)
    for t in range(1, T):  # one vectorised pass per period pair
        both = (r[t] >= 0) & (r[t - 1] >= 0)
        nb = int(both.sum())
        if nb < 2 or counts[t] < 2 or counts[t - 1] < 2:
            continue
        a, b = w[r[t, both]], w[r[t - 1, both]]
        with np.errstate(over="ignore", invalid="ignore"):  # estimators near the largest double (eps near 0)
            cov = ((a - a.mean(axis=0)) * (b - b.mean(axis=0))).sum(axis=0) / (nb - 1)
            out[t - 1] = nb * cov / (counts[t] * counts[t - 1])
    return out


def change_estimates(
    periods: PeriodEstimates, covariance: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(T - 1) x k`` estimates of ``p_t - p_{t-1}`` and their variances
    ``V_t + V_{t-1} - 2 C`` (``C`` = ``covariance``, :func:`paired_covariance`, or 0 for
    anonymous reports)."""
    with np.errstate(over="ignore", invalid="ignore"):
        est = periods.estimate[1:] - periods.estimate[:-1]
        var = periods.variance[1:] + periods.variance[:-1]
        if covariance is not None:
            var = var - 2.0 * np.asarray(covariance, dtype=np.float64)
    # a period variance past the doubles (eps near 0) leaves inf - inf: the change's is inf too
    var[np.isnan(var) & (np.isinf(periods.variance[1:]) | np.isinf(periods.variance[:-1]))] = np.inf
    return est, np.maximum(var, 0.0)
