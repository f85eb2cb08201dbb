"""Estimating the input distribution from privatised output counts.

Three estimators of the input distribution ``P`` (length ``k``) from the output counts
``c`` (length ``m``, ``n = sum c`` reports, ``f = c / n`` the observed output frequencies)
of a finite mechanism ``Q`` (``k x m``, docs/theory.md sec. 2-3, ``M = P^T Q``):

- :func:`inversion_estimate`: the unbiased linear (inversion) estimator ``A f`` with ``A``
  the ``k x m`` least-squares inverse (``A Q^T = I``), with its exact covariance
  ``A (diag(M) - M M^T) A^T / n`` (:func:`exact_covariance`) and the plug-in covariance
  (the same with ``M`` replaced by ``f``).
- :func:`project_to_simplex`: the Euclidean projection of any estimate onto the simplex.
- :func:`em_estimate`: the maximum-likelihood estimate by expectation-maximisation.

and per-category confidence intervals (:func:`confidence_intervals`).

Everything works from frequencies in float64, never from products of counts, so counts of
10^12 reports and more are handled without overflow. The estimators never ask which
mechanism produced the reports: the mechanism inverts them itself
(:meth:`~ldpsim.mechanisms.FiniteMechanism.invert`, ``inversion_covariance``,
``inversion_variance``, ``forward``, ``backward``). Randomized response answers with closed
forms (``A f = (f - p_other) / q``, covariance ``(diag(M) - M M^T) / (n q^2)``, ``q`` the
keep probability) and never builds a ``k x k`` matrix except the requested covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim.analyst.sequences import confidence_sequence_halfwidth, rho_for
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.finite import check_dense
from ldpsim.stats import hoeffding

#: Weight of the uniform distribution in the EM starting point (keeps it in the interior,
#: where EM can move every coordinate; EM never revives a coordinate that is exactly zero).
EM_START_UNIFORM = 0.05

#: Interval methods accepted by :func:`confidence_intervals`.
METHODS = ("normal", "conservative", "sequence")


# --------------------------------------------------------------------- helpers
def _frequencies(
    mechanism: FrequencyOracle, counts: ArrayLike, n: int | None = None, name: str = "counts"
) -> tuple[NDArray[np.float64], int]:
    """Validated statistic (output counts of a finite mechanism) as float64 frequencies
    ``c / n`` and the number ``n`` of reports: the sum of the counts when each report counts
    once (finite outputs), else ``n`` as given (required)."""
    c = v.counts(counts, name, size=mechanism.statistic_size)
    if n is None:
        if mechanism.output_size is None:
            raise invalid("n", None, f"the number of reports behind the statistic of {mechanism!r}")
        n = sum(c.tolist())  # exact Python integer sum
        if n == 0:
            raise invalid(name, "all zeros", "at least one report")
    else:
        n = v.integer(n, "n", minimum=1)
    return c.astype(np.float64) / float(n), n


def z_value(confidence: float, tests: int = 1) -> float:
    """The two-sided normal quantile of a confidence level (1.96 at 0.95): ``z`` with
    ``P(|Z| > z) = (1 - confidence) / tests`` (``tests`` > 1: the Bonferroni level of each of
    that many intervals). Computed as ``sqrt(2) erfinv(confidence)`` below 1/2 and
    ``sqrt(2) erfcinv(alpha)`` above, not ``ndtri(1/2 + c/2)``: that rounds away a level
    below 1e-16 (z = 0, and 0 * inf = NaN beside an infinite variance) and one within 1e-16
    of 1 (z = inf); 1 - c is exact for c >= 1/2."""
    c = _confidence(confidence)
    if tests == 1 and c < 0.5:
        return float(np.sqrt(2.0) * special.erfinv(c))
    return float(np.sqrt(2.0) * special.erfcinv((1.0 - c) / tests))


def _confidence(value: object, name: str = "confidence") -> float:
    expected = "a number strictly between 0 and 1"
    try:
        x = v.as_float(value, name, expected)
    except Exception:
        raise invalid(name, value, expected) from None
    if not (0.0 < x < 1.0):  # also rejects NaN
        raise invalid(name, value, expected)
    return x


# --------------------------------------------------------------------- inversion estimator
@dataclass(frozen=True)
class InversionEstimate:
    """The unbiased inversion estimate with its plug-in covariance.

    Attributes
    ----------
    labels : tuple
        The input labels of the mechanism.
    estimate : ndarray, shape (k,)
        ``A f``; sums to one but may leave the simplex (see :func:`project_to_simplex`).
    std_error : ndarray, shape (k,)
        Plug-in standard errors (square roots of the covariance diagonal).
    frequencies : ndarray, shape (m,)
        The observed output frequencies ``f = c / n``.
    n : int
        Number of reports.
    """

    labels: tuple
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    frequencies: NDArray[np.float64]
    n: int
    mechanism: FrequencyOracle = field(repr=False, compare=False)

    @cached_property
    def covariance(self) -> NDArray[np.float64]:
        """Plug-in covariance ``A (diag(f) - f f^T) A^T / n`` (``k x k``, built on first
        access, so a huge randomized response costs nothing until it is asked for)."""
        check_dense(self.mechanism.k, self.mechanism.k, "covariance")
        return self.mechanism.plugin_covariance(self.frequencies, float(self.n))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"category": list(self.labels), "estimate": self.estimate, "std_error": self.std_error})


def inversion_estimate(mechanism: FrequencyOracle, counts: ArrayLike, n: int | None = None) -> InversionEstimate:
    """The unbiased inversion estimate of the input distribution and its plug-in covariance.

    Parameters
    ----------
    mechanism : FrequencyOracle
        A mechanism whose ``k x m`` matrix has full row rank ``k``.
    counts : array_like of int, shape (m,)
        Output counts; at least one report. Totals up to 2^62 are accepted.

    Returns
    -------
    InversionEstimate
        ``estimate = A f`` (the same as :func:`ldpsim.analyst.frequency_estimate`) and the
        plug-in covariance ``A (diag(f) - f f^T) A^T / n``; for randomized response
        ``(diag(f) - f f^T) / (n q^2)``.

    Raises
    ------
    LdpSimError
        Counts of the wrong length, negative or non-integer, all zero; a mechanism that
        cannot be inverted.
    """
    f, n = _frequencies(mechanism, counts, n)
    est = mechanism.invert(f)
    se = np.sqrt(mechanism.plugin_variance(f, float(n)))
    return InversionEstimate(mechanism.input_labels, est, se, f, n, mechanism)


def exact_covariance(mechanism: FrequencyOracle, prior: ArrayLike, n: int) -> NDArray[np.float64]:
    """Exact covariance of the inversion estimator from ``n`` i.i.d. reports of inputs drawn
    from ``prior``.

    The output counts are Multinomial(n, M), ``M = P^T Q``, so the covariance is
    ``A (diag(M) - M M^T) A^T / n``; for randomized response with keep probability ``q``,
    ``Var_x = M_x (1 - M_x) / (n q^2)`` and ``Cov_xy = -M_x M_y / (n q^2)``.

    Parameters
    ----------
    mechanism : FrequencyOracle
    prior : array_like, shape (k,)
        The true input distribution.
    n : int
        Number of reports, >= 1.

    Returns
    -------
    ndarray, shape (k, k)
    """
    p = v.probability_vector(prior, "prior", size=mechanism.k)
    n = v.integer(n, "n", minimum=1)
    check_dense(mechanism.k, mechanism.k, "covariance")
    return mechanism.estimate_covariance(p, float(n))


# --------------------------------------------------------------------- projection
def project_to_simplex(values: ArrayLike) -> NDArray[np.float64]:
    """Euclidean projection onto the probability simplex ``{p : p >= 0, sum p = 1}``.

    The sort-based algorithm (Held et al.; Duchi et al. 2008): with ``u`` sorted in
    decreasing order, ``rho = max{j : u_j - (sum_{i<=j} u_i - 1)/j > 0}`` and
    ``theta = (sum_{i<=rho} u_i - 1)/rho``, the projection is ``max(v - theta, 0)``.

    Parameters
    ----------
    values : array_like, shape (..., k)
        One vector or a batch of vectors (the last axis is projected), finite reals.

    Returns
    -------
    ndarray, same shape as ``values``
    """
    expected = "a non-empty array of finite real numbers (vectors along the last axis)"
    arr = v.real_array(values, "values", expected)
    if arr.ndim == 0 or arr.shape[-1] == 0 or not np.all(np.isfinite(arr)):
        raise invalid("values", values, expected)
    k = arr.shape[-1]
    u = -np.sort(-arr, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    j = np.arange(1, k + 1, dtype=np.float64)
    positive = u - css / j > 0  # true for a prefix, at least the first entry
    rho = np.count_nonzero(positive, axis=-1)  # >= 1
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.maximum(arr - theta, 0.0)


# --------------------------------------------------------------------- EM
@dataclass(frozen=True)
class EMResult:
    """Maximum-likelihood estimate by EM.

    Attributes
    ----------
    labels : tuple
    estimate : ndarray, shape (k,)
        On the simplex.
    iterations : int
        EM updates performed.
    converged : bool
        Whether the max absolute change of an update fell below ``tol``.
    log_likelihood : float
        ``sum_y c_y log M_y`` at the estimate.
    log_likelihood_trace : ndarray
        The log-likelihood at the start and after every update (non-decreasing up to
        rounding).
    """

    labels: tuple
    estimate: NDArray[np.float64]
    iterations: int
    converged: bool
    log_likelihood: float
    log_likelihood_trace: NDArray[np.float64]


def em_estimate(
    mechanism: FrequencyOracle, counts: ArrayLike, tol: float = 1e-10, max_iter: int = 10_000, n: int | None = None
) -> EMResult:
    """Maximum-likelihood estimate of the input distribution by expectation-maximisation.

    The update is ``p_new(x) = p(x) * sum_y f_y Q[x, y] / M(y)`` with ``M = p^T Q`` and
    ``f = c / n``; it keeps ``p`` on the simplex and never decreases the log-likelihood
    ``sum_y c_y log M(y)``. The start is the projected inversion estimate mixed with the
    uniform distribution (weight ``EM_START_UNIFORM``), an interior point. Iteration stops
    when the largest absolute change of ``p`` is below ``tol`` or after ``max_iter`` updates.

    When the inversion estimate lies inside the simplex and ``m = k`` it is the MLE itself
    (it reproduces ``f`` exactly), so EM converges to it. When the MLE is on the boundary
    of the simplex EM approaches it slowly (coordinates that should be zero decay
    geometrically or slower), so a small change per step does not bound the distance to
    the MLE; ``converged`` only reports the stopping rule.

    For oracles whose reports count several entries of the statistic (unary encoding,
    RAPPOR, local hashing, subset selection) the same update is the iterative Bayesian
    update of the statistic's frequencies (``n`` must then be given); it is not the
    maximum-likelihood estimate of the reports, and ``log_likelihood`` is then the pseudo
    log-likelihood ``sum_y c_y log M_y`` of the statistic.

    Parameters
    ----------
    mechanism : FrequencyOracle
    counts : array_like of int, shape (s,)
    tol : float, > 0
    max_iter : int, >= 1
    n : int, the number of reports (required when the statistic does not count each once)

    Returns
    -------
    EMResult
    """
    f, n = _frequencies(mechanism, counts, n)
    tol_f = v.as_float(tol, "tol", "a finite number > 0")
    if not (math.isfinite(tol_f) and tol_f > 0):
        raise invalid("tol", tol, "a finite number > 0")
    max_iter = v.integer(max_iter, "max_iter", minimum=1)
    seen = f > 0
    impossible = seen & ~mechanism.possible_outputs()
    if np.any(impossible):
        y = int(np.flatnonzero(impossible)[0])
        raise invalid("counts", f"reports of output {y}", "no reports of an output that no input can produce")
    k = mechanism.k
    start = project_to_simplex(mechanism.invert(f))
    p = (1.0 - EM_START_UNIFORM) * start + EM_START_UNIFORM / k
    fs = f[seen]
    nf = float(n)

    def loglik(marg: NDArray[np.float64]) -> float:
        with np.errstate(divide="ignore"):
            return nf * float(np.dot(fs, np.log(marg[seen])))

    marg = mechanism.forward(p)
    trace = [loglik(marg)]
    converged = False
    it = 0
    g = np.zeros(mechanism.statistic_size)
    while it < max_iter:
        g[seen] = fs / marg[seen]
        new = p * mechanism.backward(g)
        new /= new.sum()  # rounding drift for finite mechanisms; the normalisation of the update otherwise
        change = float(np.max(np.abs(new - p)))
        p = new
        it += 1
        marg = mechanism.forward(p)
        trace.append(loglik(marg))
        if change < tol_f:
            converged = True
            break
    return EMResult(mechanism.input_labels, p, it, converged, trace[-1], np.array(trace))


# --------------------------------------------------------------------- intervals
def confidence_intervals(
    mechanism: FrequencyOracle,
    counts: ArrayLike,
    confidence: float = 0.95,
    method: str = "normal",
    simultaneous: bool = False,
    n: int | None = None,
    n_plan: float | None = None,
) -> pd.DataFrame:
    """Confidence intervals for each input category's probability.

    Methods
    -------
    ``"normal"``
        ``estimate +- z sqrt(Var_x)`` with ``Var_x`` the exact variance of the linear
        estimator evaluated at the observed frequencies (plug-in) and ``z`` the normal
        quantile; asymptotic (coverage tends to nominal as n grows).
    ``"conservative"``
        Valid at every n: the estimate is the mean over reports of ``A[x, Y_i]``, i.i.d.
        and bounded in ``[min_y A[x,y], max_y A[x,y]]``, so Hoeffding's inequality gives
        ``|est_x - P_x| <= (max_y A[x,y] - min_y A[x,y]) sqrt(log(2/alpha) / (2n))`` with
        probability at least ``1 - alpha``.
    ``"sequence"``
        Anytime-valid: the normal-mixture confidence sequence of
        :mod:`ldpsim.analyst.sequences` over the same bounded contributions, which holds at
        every number of reports at once (look at every checkpoint without inflating the
        error rate); tightest near ``n_plan`` reports (default: ``n``).

    With ``simultaneous=True`` the level is Bonferroni-corrected (``alpha / k`` per
    category), so all ``k`` intervals cover at once with probability at least
    ``confidence`` (exactly for ``"conservative"``, asymptotically for ``"normal"``); the
    method column then reads ``"<method>+bonferroni"``. Neither the estimate nor its
    interval is clipped to ``[0, 1]``: the estimate is unbiased, so it may be negative (an
    answer rarer than the noise) or above 1, and its interval is ``estimate +- half-width``
    as it is, so it always holds its estimate. Intersecting it with ``[0, 1]`` would change
    the coverage of no true probability inside (0, 1), and would leave such an estimate
    outside its own interval.

    Parameters
    ----------
    mechanism : FrequencyOracle
    counts : array_like of int, shape (m,)
    confidence : float in (0, 1)
    method : {"normal", "conservative", "sequence"}
    simultaneous : bool

    Returns
    -------
    pandas.DataFrame
        Columns ``category, estimate, ci_low, ci_high, method, confidence``; one row per
        input category.
    """
    conf = _confidence(confidence, "confidence")
    if method not in METHODS:
        raise invalid("method", method, f"one of {METHODS!r}")
    if not isinstance(simultaneous, (bool, np.bool_)):
        raise invalid("simultaneous", simultaneous, "True or False")
    f, n = _frequencies(mechanism, counts, n)
    est = mechanism.invert(f)
    alpha = 1.0 - conf
    if simultaneous:
        alpha /= mechanism.k
    if method == "normal":
        z = z_value(conf, mechanism.k if simultaneous else 1)
        half: float | NDArray[np.float64] = z * np.sqrt(mechanism.plugin_variance(f, float(n)))
    elif method == "conservative":
        half = hoeffding(mechanism.inversion_coefficient_range(), int(n), alpha)
    else:
        spread = mechanism.inversion_coefficient_range()
        rho = rho_for(spread, float(n if n_plan is None else n_plan), alpha)
        half = confidence_sequence_halfwidth(spread, int(n), alpha, rho)
    label = method + ("+bonferroni" if simultaneous else "")
    k = mechanism.k
    return pd.DataFrame(
        {
            "category": list(mechanism.input_labels),
            "estimate": est,
            "ci_low": est - half,
            "ci_high": est + half,
            "method": [label] * k,
            "confidence": np.full(k, conf),
        }
    )
