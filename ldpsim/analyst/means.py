"""The mean of a bounded numeric answer from privatised reports, and histograms by bucketing.

The mean-estimation mechanisms (:mod:`ldpsim.mechanisms.numeric`: ``laplace_bounded``,
``duchi``, ``piecewise``, ``hybrid``) release one number per respondent with ``E[y | x] = x``,
so the mean of the ``n`` reports is an unbiased estimate of the respondents' mean answer
(clipped to the mechanism's range). :func:`mean_estimate` gives it with one of two intervals:

``"normal"``
    ``mean +- z s / sqrt(n)``, ``s^2`` the unbiased sample variance of the reports: the
    reports are independent with (given the answers) variances ``Var(y_i | x_i)`` whose mean
    ``s^2`` estimates, so the coverage tends to the nominal level as ``n`` grows.
``"conservative"``
    Valid at every ``n``: the reports of Duchi's, the Piecewise and the Hybrid mechanisms lie
    in the mechanism's ``report_range`` ``[a, b]`` (``mid -+ half C``), so by Hoeffding's
    inequality the mean is within ``(b - a) sqrt(log(2/alpha) / (2n))`` of the mean answer
    with probability at least ``1 - alpha`` (:func:`ldpsim.stats.hoeffding`; it needs
    independence and the range only, not identical laws). Laplace reports are unbounded, so
    this method refuses them.

With the respondents' true answers (``answers``, a design question), the exact standard error
``sqrt(mean_i Var(y | x_i) / n)`` comes from the mechanism's ``variance(x)``
(:func:`mean_standard_error`).

:func:`bucket` maps numeric answers to bucket indices, so any categorical frequency oracle
can estimate their histogram.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim.analyst.estimation import _confidence
from ldpsim.errors import invalid
from ldpsim.stats import hoeffding

__all__ = [
    "MEAN_METHODS",
    "MeanEstimate",
    "bucket",
    "mean_estimate",
    "mean_standard_error",
]

#: Interval methods accepted by :func:`mean_estimate`.
MEAN_METHODS = ("normal", "conservative")


@dataclass(frozen=True)
class MeanEstimate:
    """The mean of the reports with a confidence interval.

    ``estimate`` the mean of the reports; ``std_error`` the plug-in standard error ``s /
    sqrt(n)``; ``ci_low``, ``ci_high`` the interval by ``method`` at ``confidence``;
    ``exact_std_error`` the exact standard error at the given answers (None when not asked)."""

    estimate: float
    std_error: float
    ci_low: float
    ci_high: float
    method: str
    confidence: float
    n: int
    exact_std_error: float | None = None


def _reports(reports: ArrayLike) -> NDArray[np.float64]:
    y = v.finite_array(reports, "reports", "a one-dimensional array of finite numbers")
    if y.ndim != 1 or y.size < 2:
        raise invalid(
            "reports",
            f"shape {y.shape}",
            "a one-dimensional array of at least 2 reports",
        )
    return y


def mean_standard_error(mechanism: Any, answers: ArrayLike, n: int | None = None) -> float:
    """Exact standard error of the mean of reports when the respondents' answers are
    ``answers``: ``sqrt(mean_i variance(x_i) / n)`` (``n`` = the number of answers unless
    given, so ``answers`` may also be a sample standing for the answer distribution). It is
    the error given the answers; the answers' own spread adds ``Var(x) / n`` when they are
    themselves a random sample of a population whose mean is the target."""
    x = v.finite_array(answers, "answers", "finite numbers")
    if x.size == 0:
        raise invalid("answers", "no answers", "at least one answer")
    size = x.size if n is None else v.integer(n, "n", minimum=1)
    parts = getattr(mechanism, "variance_parts", None)
    # variance = w s^2: over a range 1e300 wide s^2 overflows (it raised OverflowError) where the
    # standard error s sqrt(mean(w) / n) is a double; mean(w) as top * mean(w / top), whose
    # sum cannot overflow
    w, s = parts(x.ravel()) if parts is not None else (np.asarray(mechanism.variance(x.ravel()), dtype=np.float64), 1.0)
    top = float(np.max(w))
    if not top > 0.0 or not math.isfinite(top):
        return math.sqrt(top) * s  # 0, or inf beyond the doubles
    return float(s * math.sqrt(float(np.mean(w / top)) / size) * math.sqrt(top))


def mean_estimate(
    reports: ArrayLike,
    mechanism: Any = None,
    confidence: float = 0.95,
    method: str = "normal",
    answers: ArrayLike | None = None,
) -> MeanEstimate:
    """The mean answer from numeric reports, with an interval (see the module docstring).

    ``mechanism`` (one of :mod:`ldpsim.mechanisms.numeric`) is needed for ``"conservative"``
    (its ``report_range``) and for ``answers`` (the exact standard error at those answers);
    every report must lie in its range."""
    y = _reports(reports)
    conf = _confidence(confidence)
    if method not in MEAN_METHODS:
        raise invalid("method", method, f"one of {MEAN_METHODS!r}")
    n = int(y.size)
    mean = float(np.mean(y))
    se = float(np.std(y, ddof=1)) / math.sqrt(n)
    alpha = 1.0 - conf
    if mechanism is not None:
        lo, hi = mechanism.report_range
        if y.min() < lo or y.max() > hi:
            raise invalid(
                "reports",
                f"values from {float(y.min())!r} to {float(y.max())!r}",
                f"reports of {mechanism!r}, in [{lo!r}, {hi!r}]",
            )
    if method == "normal":
        half = float(stats.norm.isf(alpha / 2.0)) * se
    else:
        if mechanism is None:
            raise invalid(
                "mechanism",
                None,
                "the mechanism of the reports (its report range) for method='conservative'",
            )
        lo, hi = mechanism.report_range
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise invalid(
                "method",
                method,
                f"'normal' for {mechanism!r}: its reports are unbounded, so Hoeffding does not apply",
            )
        half = float(hoeffding(hi - lo, n, alpha))
    exact = None
    if answers is not None:
        if mechanism is None:
            raise invalid(
                "mechanism",
                None,
                "the mechanism of the reports (its variance) to use answers",
            )
        exact = mean_standard_error(mechanism, answers, n)
    return MeanEstimate(mean, se, mean - half, mean + half, method, conf, n, exact)


def bucket(values: ArrayLike, edges: ArrayLike, clip: bool = False) -> NDArray[np.int64]:
    """Bucket indices of numeric ``values`` for ``edges`` ``e_0 < e_1 < ... < e_B``: index
    ``i`` for ``e_i <= x < e_{i+1}``, the last bucket closed (``x = e_B`` is in bucket
    ``B - 1``). Values outside ``[e_0, e_B]`` are refused, or with ``clip=True`` put in the
    first or last bucket. The indices are the inputs ``0..B-1`` of a ``k = B`` oracle."""
    e = v.finite_array(edges, "edges", "at least two increasing finite numbers")
    if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) <= 0):
        raise invalid("edges", edges, "at least two strictly increasing finite numbers")
    x = v.finite_array(values, "values", "finite numbers")
    if not clip and x.size and (x.min() < e[0] or x.max() > e[-1]):
        bad = float(x.min() if x.min() < e[0] else x.max())
        raise invalid(
            "values",
            f"a value {bad!r}",
            f"values in [{float(e[0])!r}, {float(e[-1])!r}] (or clip=True)",
        )
    idx = np.searchsorted(e, x, side="right") - 1
    return np.clip(idx, 0, e.size - 2).astype(np.int64)
