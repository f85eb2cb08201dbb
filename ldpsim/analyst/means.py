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

**The variance** (the two-group protocol of Li, Li, Sun, Gong and Li 2023). Each respondent
falls in one of two groups at random: the first privatises the answer ``x``, the second
privatises ``g(x^2)``, the square mapped affinely onto the answers' range ``[lo, hi]``
(:func:`square_input`; the squares of ``[lo, hi]`` fill ``[q_lo, q_hi]``, :func:`square_range`),
through the same mechanism at the same eps. Both groups' reports are unbiased for what they
privatise, so the first group's mean ``mu_hat`` estimates the mean, the second's mapped back
(:func:`square_back`) the second moment ``m2_hat``, and ``var_hat = m2_hat - mu_hat^2``
the variance (:func:`moments_estimate`). One group cannot do it: for Duchi's mechanism
``y^2`` is the same for every report, so nothing in ``E[y^2 | x]`` depends on ``x``.

Given the groups and their answers, ``mu_hat`` and ``m2_hat`` are independent, unbiased, with
variances ``sum_1 variance(x_i) / n_1^2`` and ``k^2 sum_2 variance(g(x_i^2)) / n_2^2``
(``k = (q_hi - q_lo) / (hi - lo)``), so exactly ``E[var_hat] = E[m2_hat] - E[mu_hat]^2 -
Var(mu_hat)``: biased down by the variance of the mean's estimate. Its variance is given by
the delta method, ``Var(m2_hat) + 4 E[mu_hat]^2 Var(mu_hat)`` (:func:`moments_law`).
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
    "MomentsEstimate",
    "MomentsLaw",
    "bucket",
    "mean_estimate",
    "mean_standard_error",
    "moment_reports",
    "moments_estimate",
    "moments_from_sums",
    "moments_law",
    "moments_law_of",
    "square_back",
    "square_input",
    "square_range",
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


# --------------------------------------------------------------------- the variance (two groups)
def square_range(lo: float, hi: float) -> tuple[float, float]:
    """``(q_lo, q_hi)``: the squares of the answers in ``[lo, hi]`` fill this interval."""
    lo, hi = float(lo), float(hi)
    if not hi > lo:
        raise invalid("range", (lo, hi), "lo < hi")
    q_lo = 0.0 if lo <= 0.0 <= hi else min(lo * lo, hi * hi)
    return q_lo, max(lo * lo, hi * hi)


def square_input(values: ArrayLike, lo: float, hi: float) -> NDArray[np.float64]:
    """``g(x^2)``: each answer's square mapped affinely from ``square_range`` onto ``[lo, hi]``
    (what the second group privatises)."""
    q_lo, q_hi = square_range(lo, hi)
    x = np.asarray(values, dtype=np.float64)
    return np.clip(lo + (hi - lo) * (x * x - q_lo) / (q_hi - q_lo), lo, hi)


def square_back(values: ArrayLike, lo: float, hi: float) -> NDArray[np.float64] | float:
    """``g^-1``: a value on the answers' scale (a report, or the second group's mean) mapped back
    to the scale of the squares; affine, so it maps the reports' mean to an unbiased second moment."""
    q_lo, q_hi = square_range(lo, hi)
    out = q_lo + (q_hi - q_lo) * (np.asarray(values, dtype=np.float64) - lo) / (hi - lo)
    return float(out) if out.ndim == 0 else out


def moment_reports(
    mechanism: Any, values: ArrayLike, rng: np.random.Generator
) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """The two-group protocol's reports of respondents answering ``values``: each falls in the
    second group (``True``: reports ``g(x^2)``) with probability 1/2, else reports ``x``;
    returns the groups and the reports."""
    x = np.asarray(values, dtype=np.float64)
    second = rng.random(x.shape) < 0.5
    return second, np.asarray(
        mechanism.privatize(np.where(second, square_input(x, mechanism.lo, mechanism.hi), x), rng), dtype=np.float64
    )


@dataclass(frozen=True)
class MomentsLaw:
    """The exact expectation and variance of the two-group estimates (module docstring):
    ``variance`` is ``E[var_hat]`` exactly, ``variance_var`` the delta method's variance."""

    mean: float
    mean_var: float
    second_moment: float
    second_moment_var: float
    variance: float
    variance_var: float


@dataclass(frozen=True)
class MomentsEstimate:
    """The two-group estimates of the mean, second moment and variance, with plug-in standard
    errors (the reports' sample variances; the variance's by the delta method), the numbers of
    reports in each group, and the exact law at given answers (None when not asked)."""

    mean: float
    second_moment: float
    variance: float
    mean_se: float
    second_moment_se: float
    variance_se: float
    n_mean: int
    n_square: int
    exact: MomentsLaw | None = None


def _slope(lo: float, hi: float) -> float:
    q_lo, q_hi = square_range(lo, hi)
    return (q_hi - q_lo) / (hi - lo)


def _law(mean: float, mean_var: float, m2: float, m2_var: float) -> MomentsLaw:
    return MomentsLaw(mean, mean_var, m2, m2_var, m2 - mean * mean - mean_var, m2_var + 4.0 * mean * mean * mean_var)


def moments_law(
    mechanism: Any,
    answers_mean: ArrayLike,
    answers_square: ArrayLike,
    n_mean: int | None = None,
    n_square: int | None = None,
    drawn: bool = False,
) -> MomentsLaw:
    """The exact law of the two-group estimates when the first group answered ``answers_mean``
    and the second ``answers_square`` (each group's size is its number of answers unless
    ``n_mean``, ``n_square`` are given, the answers then standing for the group's law). With
    ``drawn=True`` the respondents are drawn at random from those answers, so each report's
    variance also has the answers' own spread (``Var(x)``, ``Var(x^2)``)."""
    x1 = v.finite_array(answers_mean, "answers_mean", "finite numbers").ravel()
    x2 = v.finite_array(answers_square, "answers_square", "finite numbers").ravel()
    if x1.size == 0 or x2.size == 0:
        raise invalid("answers", "an empty group", "answers in both groups")
    n1 = x1.size if n_mean is None else v.integer(n_mean, "n_mean", minimum=1)
    n2 = x2.size if n_square is None else v.integer(n_square, "n_square", minimum=1)
    lo, hi = mechanism.lo, mechanism.hi
    k = _slope(lo, hi)
    noise1 = float(np.mean(mechanism.variance(x1)))
    noise2 = float(np.mean(mechanism.variance(square_input(x2, lo, hi)))) * k * k
    if drawn:
        noise1 += float(np.var(x1))
        noise2 += float(np.var(x2 * x2))
    return _law(float(np.mean(x1)), noise1 / n1, float(np.mean(x2 * x2)), noise2 / n2)


def moments_law_of(one: MomentsLaw, n_mean: float, n_square: float) -> MomentsLaw:
    """The exact law of the two-group estimates from ``n_mean`` and ``n_square`` reports, given
    ``one``: the law of one report in each group (:func:`moments_law` with one report per group,
    or a law's moments by quadrature); the groups' sizes may be expectations, fractional."""
    if not (n_mean > 0 and n_square > 0):
        raise invalid("n", (n_mean, n_square), "reports in both groups")
    return _law(one.mean, one.mean_var / n_mean, one.second_moment, one.second_moment_var / n_square)


def moments_from_sums(
    sum_mean: float, n_mean: float, sum_square: float, n_square: float, lo: float, hi: float
) -> tuple[float, float, float]:
    """``(mu_hat, m2_hat, var_hat)`` from the two groups' sums and numbers of reports (the
    server's statistic; the numbers may be expectations, fractional); NaN for an empty group."""
    mean = float(sum_mean) / n_mean if n_mean else math.nan
    m2 = float(square_back(float(sum_square) / n_square, lo, hi)) if n_square else math.nan
    return mean, m2, m2 - mean * mean


def moments_estimate(
    mean_reports: ArrayLike,
    square_reports: ArrayLike,
    mechanism: Any,
    answers_mean: ArrayLike | None = None,
    answers_square: ArrayLike | None = None,
) -> MomentsEstimate:
    """The mean, second moment and variance from the first group's reports (of ``x``) and the
    second's (of ``g(x^2)``), through ``mechanism`` (its ``lo`` and ``hi``); with both groups'
    true answers, also their exact law (:func:`moments_law`)."""
    y1 = _reports(mean_reports)
    y2 = _reports(square_reports)
    lo, hi = mechanism.lo, mechanism.hi
    k = _slope(lo, hi)
    mean, m2, var = moments_from_sums(float(np.sum(y1)), y1.size, float(np.sum(y2)), y2.size, lo, hi)
    v1 = float(np.var(y1, ddof=1)) / y1.size
    v2 = k * k * float(np.var(y2, ddof=1)) / y2.size
    exact = None
    if (answers_mean is None) != (answers_square is None):
        raise invalid("answers_square" if answers_square is None else "answers_mean", None, "both groups' answers")
    if answers_mean is not None:
        exact = moments_law(mechanism, answers_mean, answers_square)  # type: ignore[arg-type]
    return MomentsEstimate(
        mean,
        m2,
        var,
        math.sqrt(v1),
        math.sqrt(v2),
        math.sqrt(v2 + 4.0 * mean * mean * v1),
        int(y1.size),
        int(y2.size),
        exact,
    )
