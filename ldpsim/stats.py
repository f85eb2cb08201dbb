"""Finite-sample statistical bounds, each written once: the auditor, the reproductions, the
protocol simulations and the analyst's conservative intervals all call these.

Every function states what it guarantees at *every* sample size (none of them is an
asymptotic approximation, except the Wilson interval, which is documented as a score
interval used for ranking, not for certification).

``clopper_pearson_lower(k, n, alpha)`` / ``clopper_pearson_upper(k, n, alpha)``
    Exact one-sided binomial confidence bounds (Clopper and Pearson 1934). With
    ``K ~ Bin(n, p)``: ``P(lower(K) > p) <= alpha`` and ``P(upper(K) < p) <= alpha`` for
    every ``p``. In closed form through the Beta quantile function:
    ``lower(k) = Beta^{-1}(alpha; k, n - k + 1)`` (0 at ``k = 0``) and
    ``upper(k) = Beta^{-1}(1 - alpha; k + 1, n - k)`` (1 at ``k = n``), the latter computed
    as the upper-tail quantile so that a tiny ``alpha`` does not round ``1 - alpha`` to 1.
``clopper_pearson(k, n, alpha)``
    The two-sided interval: both one-sided bounds at ``alpha / 2``; it misses ``p`` with
    probability at most ``alpha``.
``wilson(k, n, alpha=None, z=None)``
    The Wilson score interval (Wilson 1927),
    ``(k + z^2/2)/(n + z^2) -+ z sqrt(k (n - k)/n + z^2/4)/(n + z^2)`` clipped to
    ``[0, 1]``, with ``z`` the normal quantile (``z = Phi^{-1}(1 - alpha/2)`` for a
    two-sided level ``1 - alpha``). Cheap and vectorised but only approximately valid: the
    auditor ranks candidate events with it and certifies with Clopper-Pearson.
``dkw(n, alpha)`` / ``dkw_samples(tol, alpha)``
    The Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant (Massart 1990): the
    empirical CDF ``F_n`` of ``n`` i.i.d. draws satisfies
    ``P(sup_t |F_n(t) - F(t)| > tol) <= 2 exp(-2 n tol^2)``, so ``dkw(n, alpha) =
    sqrt(log(2/alpha) / (2n))`` is a uniform band holding with probability at least
    ``1 - alpha`` for **one** empirical CDF (for ``j`` CDFs at once, call it at
    ``alpha / j``); ``dkw_samples`` is the inverse, the fewest draws for a band ``tol``.
``hoeffding(spread, n, alpha)``
    Hoeffding's inequality (Hoeffding 1963): the mean of ``n`` independent values in an
    interval of length ``spread`` is further than
    ``spread sqrt(log(2/alpha) / (2n))`` from its expectation with probability at most
    ``alpha`` (two-sided; each side has probability at most ``alpha / 2``).
``binomial_acceptance(n, p, alpha)``
    The exact two-sided acceptance interval of ``K ~ Bin(n, p)`` as a half-width on the
    proportion: ``t`` with ``P(|K/n - p| > t) <= alpha``, from the binomial quantiles at
    ``alpha / 2`` on each side (the whole range where scipy's quantile search gives up).
``empirical_bernstein(spread, variance, n, alpha)``
    The empirical Bernstein bound (Maurer and Pontil 2009, Theorem 4), two-sided: the mean
    of ``n >= 2`` i.i.d. values in an interval of length ``spread`` with unbiased sample
    variance ``variance`` is within ``sqrt(2 V L / n) + 7 spread L / (3 (n - 1))``,
    ``L = log(4 / alpha)``, of its expectation with probability at least ``1 - alpha``.
``mean_tolerance(values, mean, n, alpha)`` / ``paired_tolerance(spread, variance, n, alpha)``
    What the simulations compare measured means with: the binomial acceptance interval
    when every value is 0 or 1, else Hoeffding; and, for paired differences, the smaller
    of Hoeffding and the empirical Bernstein bound, each at ``alpha / 2``.

The formulas and where ldpsim uses each bound: docs/theory.md sec. 11 ("Statistical bounds
used across ldpsim").

``log(2/alpha)`` is evaluated as ``log 2 - log alpha`` once ``2/alpha`` would overflow, so
the bounds stay finite for any ``alpha > 0`` (down to the smallest subnormal).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import invalid

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "clopper_pearson",
    "wilson",
    "dkw",
    "dkw_samples",
    "hoeffding",
    "binomial_acceptance",
    "empirical_bernstein",
    "mean_tolerance",
    "paired_tolerance",
]


# --------------------------------------------------------------------------- checks
def _alpha(alpha: object, name: str = "alpha") -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise invalid(name, alpha, "a number in (0, 1]")
    a = float(alpha)
    if not 0.0 < a <= 1.0:
        raise invalid(name, alpha, "a number in (0, 1]")
    return a


def _count(n: object, name: str = "n", minimum: int = 1) -> int:
    if (
        isinstance(n, bool)
        or not isinstance(n, (int, np.integer))
        and not (isinstance(n, (float, np.floating)) and float(n).is_integer())
    ):
        raise invalid(name, n, f"an integer >= {minimum}")
    out = int(n)
    if out < minimum:
        raise invalid(name, n, f"an integer >= {minimum}")
    return out


def _successes(k: ArrayLike, n: int) -> NDArray[np.float64]:
    arr = np.asarray(k, dtype=np.float64)
    if np.any(~np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > n) or np.any(arr != np.floor(arr)):
        raise invalid("k", k, f"integer counts in 0..n = 0..{n}")
    return arr


def _log_two_over(alpha: float) -> float:
    """``log(2 / alpha)``, in logs where ``2 / alpha`` overflows."""
    ratio = 2.0 / alpha
    return math.log(ratio) if math.isfinite(ratio) else math.log(2.0) - math.log(alpha)


def _out(x: NDArray[np.float64], like: ArrayLike) -> float | NDArray[np.float64]:
    return float(x) if np.ndim(like) == 0 else x


# --------------------------------------------------------------------------- Clopper-Pearson
def clopper_pearson_lower(k: ArrayLike, n: int, alpha: float) -> float | NDArray[np.float64]:
    """Exact one-sided lower confidence bound on a binomial proportion: for
    ``K ~ Bin(n, p)``, ``P(clopper_pearson_lower(K, n, alpha) > p) <= alpha`` for every ``p``.
    ``Beta^{-1}(alpha; k, n - k + 1)``, 0 at ``k = 0``; vectorised over ``k``."""
    from scipy import stats as _st  # deferred: ~0.9 s to import (ldpsim analyse loads this module)

    n_ = _count(n)
    a = _alpha(alpha)
    kk = _successes(k, n_)
    with np.errstate(all="ignore"):
        out = _st.beta.ppf(a, kk, n_ - kk + 1)
    return _out(np.where(kk > 0, out, 0.0), k)


def clopper_pearson_upper(k: ArrayLike, n: int, alpha: float) -> float | NDArray[np.float64]:
    """Exact one-sided upper confidence bound on a binomial proportion: for
    ``K ~ Bin(n, p)``, ``P(clopper_pearson_upper(K, n, alpha) < p) <= alpha`` for every ``p``.
    ``Beta^{-1}(1 - alpha; k + 1, n - k)`` (as an upper-tail quantile), 1 at ``k = n``;
    vectorised over ``k``."""
    from scipy import stats as _st  # deferred: ~0.9 s to import (ldpsim analyse loads this module)

    n_ = _count(n)
    a = _alpha(alpha)
    kk = _successes(k, n_)
    with np.errstate(all="ignore"):
        out = _st.beta.isf(a, kk + 1, n_ - kk)
    return _out(np.where(kk < n_, out, 1.0), k)


def clopper_pearson(
    k: ArrayLike, n: int, alpha: float
) -> tuple[float | NDArray[np.float64], float | NDArray[np.float64]]:
    """Exact two-sided interval ``(lower, upper)`` for a binomial proportion at confidence
    ``1 - alpha``: each one-sided bound at ``alpha / 2``, so the interval misses ``p`` with
    probability at most ``alpha``."""
    a = _alpha(alpha)
    return clopper_pearson_lower(k, n, a / 2.0), clopper_pearson_upper(k, n, a / 2.0)


# --------------------------------------------------------------------------- Wilson
def wilson(
    k: ArrayLike, n: int, alpha: float | None = None, *, z: float | None = None
) -> tuple[float | NDArray[np.float64], float | NDArray[np.float64]]:
    """The Wilson score interval ``(lower, upper)`` for ``k`` successes of ``n``, clipped to
    ``[0, 1]``. Give either ``alpha`` (two-sided level ``1 - alpha``: ``z = Phi^{-1}(1 -
    alpha/2)``) or the normal quantile ``z`` itself. Approximate coverage only (a score
    test inverted); use :func:`clopper_pearson` where validity at every ``n`` is needed."""
    if (alpha is None) == (z is None):
        raise invalid("wilson", {"alpha": alpha, "z": z}, "exactly one of alpha and z")
    n_ = _count(n)
    if z is None:
        from scipy import stats as _st  # deferred: ~0.9 s to import (ldpsim analyse loads this module)

        zz = float(_st.norm.isf(_alpha(alpha) / 2.0))
    else:
        zz = float(z)
        if not (math.isfinite(zz) and zz >= 0):
            raise invalid("z", z, "a finite number >= 0")
    kk = _successes(k, n_)
    z2 = zz * zz
    centre = (kk + z2 / 2.0) / (n_ + z2)
    half = zz * np.sqrt(np.maximum(kk * (n_ - kk) / n_, 0.0) + z2 / 4.0) / (n_ + z2)
    return _out(np.clip(centre - half, 0.0, 1.0), k), _out(np.clip(centre + half, 0.0, 1.0), k)


# --------------------------------------------------------------------------- DKW
def dkw(n: int, alpha: float) -> float:
    """Half-width ``tol = sqrt(log(2/alpha) / (2n))`` of the uniform band around **one**
    empirical CDF of ``n`` i.i.d. draws: ``P(sup_t |F_n(t) - F(t)| > tol) <= alpha``
    (Dvoretzky-Kiefer-Wolfowitz with Massart's constant). For several empirical CDFs that
    must hold at once, divide ``alpha`` among them."""
    n_ = _count(n)
    return math.sqrt(_log_two_over(_alpha(alpha)) / (2.0 * n_))


def dkw_samples(tol: float, alpha: float) -> int:
    """The fewest draws ``n`` with :func:`dkw` ``(n, alpha) <= tol``:
    ``ceil(log(2/alpha) / (2 tol^2))``."""
    t = float(tol)
    if not (math.isfinite(t) and t > 0):
        raise invalid("tol", tol, "a finite number > 0")
    return math.ceil(_log_two_over(_alpha(alpha)) / (2.0 * t * t))


# --------------------------------------------------------------------------- Hoeffding
def hoeffding(spread: ArrayLike, n: int, alpha: float) -> float | NDArray[np.float64]:
    """Two-sided Hoeffding half-width: the mean of ``n`` independent values in an interval of
    length ``spread`` is further than ``spread sqrt(log(2/alpha) / (2n))`` from its
    expectation with probability at most ``alpha``. Vectorised over ``spread`` (a float for
    a scalar)."""
    arr = np.asarray(spread, dtype=np.float64)
    if not np.all(np.isfinite(arr) & (arr >= 0)):
        raise invalid("spread", spread, "finite numbers >= 0")
    n_ = _count(n, "n")
    half = math.sqrt(_log_two_over(_alpha(alpha)) / (2 * n_))
    return float(arr) * half if np.ndim(spread) == 0 else arr * half


# --------------------------------------------------------------------------- binomial acceptance
def binomial_acceptance(n: int, p: float, alpha: float) -> float:
    """Half-width ``t`` of the exact two-sided acceptance interval of ``K ~ Bin(n, p)`` on
    the proportion scale: ``P(|K/n - p| > t) <= alpha``. The interval runs from the
    ``alpha/2`` quantile to the upper ``alpha/2`` quantile; where scipy's quantile search
    gives up in an extreme tail, that side is the whole range (always valid)."""
    n_ = _count(n)
    a = _alpha(alpha)
    from scipy import stats as _st  # deferred: ~0.9 s to import (ldpsim analyse loads this module)

    q = min(max(float(p), 0.0), 1.0)
    with warnings.catch_warnings():  # boost gives up on extreme tails: checked just below
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = _st.binom.ppf(a / 2, n_, q)  # P(K < lo) <= alpha / 2
        hi = _st.binom.isf(a / 2, n_, q)  # P(K > hi) <= alpha / 2
    lo = lo if math.isfinite(lo) and 0 <= lo <= n_ else 0.0
    hi = hi if math.isfinite(hi) and 0 <= hi <= n_ else float(n_)
    return float(max(q - lo / n_, hi / n_ - q))


# --------------------------------------------------------------------------- empirical Bernstein
def empirical_bernstein(spread: float, variance: float, n: int, alpha: float) -> float:
    """Two-sided empirical Bernstein half-width (Maurer and Pontil 2009, Theorem 4, each side
    at ``alpha / 2``): the mean of ``n >= 2`` i.i.d. values in an interval of length
    ``spread``, with unbiased sample variance ``variance``, is further than
    ``sqrt(2 variance L / n) + 7 spread L / (3 (n - 1))``, ``L = log(4 / alpha)``, from its
    expectation with probability at most ``alpha``."""
    n_ = _count(n, "n", minimum=2)
    a = _alpha(alpha)
    ratio = 4.0 / a
    log = math.log(ratio) if math.isfinite(ratio) else math.log(4.0) - math.log(a)
    return math.sqrt(2.0 * max(float(variance), 0.0) * log / n_) + 7.0 * float(spread) * log / (3.0 * (n_ - 1))


# --------------------------------------------------------------------------- tolerances of simulated means
def mean_tolerance(values: ArrayLike, mean: float, n: int, alpha: float) -> float:
    """Half-width ``t`` with ``P(|measured - mean| > t) <= alpha`` for the average of ``n``
    i.i.d. draws of a variable taking values in ``values`` with expectation ``mean``: the
    exact binomial acceptance interval when every value is 0 or 1, Hoeffding's bound over
    the values' range otherwise. NaN when ``mean`` is not finite (nothing to compare)."""
    g = np.asarray(values, dtype=np.float64)
    if not math.isfinite(mean):
        return math.nan
    if np.all((g == 0) | (g == 1)):
        return binomial_acceptance(n, mean, alpha)
    return float(hoeffding(float(g.max() - g.min()), n, alpha))


def paired_tolerance(spread: float, variance: float, n: int, alpha: float) -> float:
    """Half-width for the average of ``n`` i.i.d. paired differences in an interval of length
    ``spread`` with unbiased sample variance ``variance``: the smaller of Hoeffding's bound
    and :func:`empirical_bernstein`, each at ``alpha / 2``, so it holds with probability at
    least ``1 - alpha``. Coupled simulations give small variances, where the Bernstein bound
    is far tighter."""
    if n < 2:
        return float(hoeffding(spread, n, alpha))
    return min(float(hoeffding(spread, n, alpha / 2)), empirical_bernstein(spread, variance, n, alpha / 2))
