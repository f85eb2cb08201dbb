"""Post-processing of frequency estimates with the knowledge that true frequencies are
non-negative and sum to one (Wang, Lopuhaä-Zwakenberg, Li, Skoric and Li 2020, "Locally
differentially private frequency estimation with consistency").

- :func:`norm_sub`: turn negative estimates to zero and subtract one constant from the
  positive ones so that they sum to one, repeated until no estimate is negative. The
  result is the Euclidean projection onto the simplex (constrained least squares; the
  tests check it against :func:`ldpsim.analyst.project_to_simplex`, computed by a sort).
- :func:`base_cut`: estimates below a significance threshold become zero, the others stay
  as they are (no renormalisation); the threshold is the ``1 - alpha/k`` normal quantile of
  the estimate of an answer nobody gave (:func:`base_cut_threshold`), so that with
  probability about ``1 - alpha`` no answer of frequency zero survives.

Both are post-processing of the released estimates, so they cost no privacy. They trade
the unbiasedness of inversion for a smaller error on the answers that matter; the
intervals of :func:`ldpsim.analyst.confidence_intervals` stay those of the unbiased
estimate (their coverage holds whatever point estimate is shown).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = ["norm_sub", "base_cut", "base_cut_threshold"]


def _estimate(values: ArrayLike) -> NDArray[np.float64]:
    expected = "a non-empty vector of finite real numbers"
    arr = v.real_array(values, "estimate", expected)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        raise invalid("estimate", values, expected)
    return arr


def norm_sub(estimate: ArrayLike) -> NDArray[np.float64]:
    """Norm-Sub (Wang et al. 2020): the non-negative vector summing to one obtained by
    zeroing negative entries and subtracting one constant from the positive ones, repeated
    until none is negative. At most ``k`` rounds, each vectorised."""
    est = _estimate(estimate)
    keep = np.ones(est.size, dtype=bool)
    out = est.copy()
    for _ in range(est.size + 1):
        shift = (est[keep].sum() - 1.0) / np.count_nonzero(keep)
        out = np.where(keep, est - shift, 0.0)
        negative = out < 0
        if not negative.any():
            return out
        keep &= ~negative
    raise AssertionError("unreachable: each round drops an entry")  # pragma: no cover


def base_cut_threshold(mechanism: FrequencyOracle, n: int, alpha: float = 0.05) -> float:
    """The Base-Cut threshold: the ``1 - alpha/k`` normal quantile times the exact standard
    error of the estimate of an answer of frequency zero, from ``n`` reports when every
    other answer is equally likely (Wang et al. 2020, the base variance)."""
    n = v.integer(n, "n", minimum=1)
    a = v.as_float(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < a < 1.0:
        raise invalid("alpha", alpha, "a number in (0, 1)")
    k = mechanism.k
    prior = np.full(k, 1.0 / (k - 1))
    prior[0] = 0.0
    se = float(np.sqrt(mechanism.estimate_variance(prior, float(n))[0]))
    return float(stats.norm.isf(a / k)) * se


def base_cut(estimate: ArrayLike, threshold: float) -> NDArray[np.float64]:
    """Base-Cut (Wang et al. 2020): entries below ``threshold`` become zero, the others are
    kept as estimated."""
    est = _estimate(estimate)
    t = v.as_float(threshold, "threshold", "a finite number")
    if not np.isfinite(t):
        raise invalid("threshold", threshold, "a finite number")
    return np.where(est < t, 0.0, est)
