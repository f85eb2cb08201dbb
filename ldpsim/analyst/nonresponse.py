"""Answer-dependent non-response (missing not at random), and its correction by reweighting.

If a respondent whose true answer is ``x`` sends a report with probability ``r_x``, the
reports received come from the answer distribution

    q_x = p_x r_x / sum_y p_y r_y,

so an unbiased estimate from the received reports targets ``q``, not ``p``: its bias is
``q - p`` (:func:`nonresponse_bias`). When the rates ``r`` are known (up to a common factor:
only their ratios matter), ``p`` is recovered from ``q`` by dividing out the rates and
normalising, ``p_x = (q_x / r_x) / sum_y (q_y / r_y)``. :func:`reweight_for_response` applies
this map ``g`` to an estimate ``q_hat``; ``g`` is smooth, so ``g(q_hat)`` is unbiased to first
order, and by the delta method its covariance is ``J Sigma J^T`` with ``Sigma`` the
covariance of ``q_hat`` and

    J = (I - g 1^T) D / s,    D = diag(1 / r),  s = sum_y q_y / r_y,

evaluated at ``q_hat`` (``d g_x / d q_z = (delta_xz - g_x) / (r_z s)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid

__all__ = ["ReweightedEstimate", "nonresponse_bias", "reweight_for_response"]


def _rates(response_rates: ArrayLike, k: int, positive: bool) -> NDArray[np.float64]:
    expected = f"{k} response probabilities in {'(0, 1]' if positive else '[0, 1]'}, one per answer"
    r = v.finite_array(response_rates, "response_rates", expected)
    if r.shape != (k,) or np.any(r < 0) or np.any(r > 1) or (positive and np.any(r == 0)):
        raise invalid("response_rates", response_rates, expected)
    return r


def nonresponse_bias(prior: ArrayLike, response_rates: ArrayLike) -> NDArray[np.float64]:
    """``q - p``: the bias of any unbiased estimate made from the received reports alone, when
    answers follow ``prior`` ``p`` and answer ``x`` responds with probability ``r_x``
    (``q = p r / (p . r)``)."""
    p = v.probability_vector(prior, "prior")
    r = _rates(response_rates, p.size, positive=False)
    rate = float(p @ r)
    if rate <= 0:
        raise invalid(
            "response_rates",
            response_rates,
            "rates under which some respondent answers (p . r > 0)",
        )
    return p * r / rate - p


@dataclass(frozen=True)
class ReweightedEstimate:
    """The estimate corrected for non-response: ``estimate`` ``g(q_hat)`` (sums to one);
    ``covariance`` ``J Sigma J^T`` and ``std_error`` its diagonal's square root (None when no
    input covariance was given); ``jacobian`` ``J`` at ``q_hat``."""

    estimate: NDArray[np.float64]
    covariance: NDArray[np.float64] | None
    std_error: NDArray[np.float64] | None
    jacobian: NDArray[np.float64]


def reweight_for_response(
    estimate: ArrayLike, response_rates: ArrayLike, covariance: ArrayLike | None = None
) -> ReweightedEstimate:
    """Correct an estimate ``q_hat`` of the received reports' answer distribution for known
    answer-dependent response rates (module docstring): ``p_hat_x = (q_hat_x / r_x) / sum_y
    q_hat_y / r_y``, with the delta-method covariance ``J covariance J^T`` when the covariance
    of ``q_hat`` is given (e.g. an inversion estimate's ``covariance``). Every rate must be
    positive (an answer that never responds cannot be recovered)."""
    q = v.finite_array(estimate, "estimate", "a one-dimensional array of finite numbers")
    if q.ndim != 1 or q.size < 1:
        raise invalid("estimate", estimate, "a one-dimensional array of finite numbers")
    r = _rates(response_rates, q.size, positive=True)
    u = q / r
    s = float(u.sum())
    if not s > 0:
        raise invalid("estimate", estimate, "an estimate with sum(estimate / response_rates) > 0")
    g = u / s
    jac = (np.eye(q.size) - np.outer(g, np.ones(q.size))) / (r[None, :] * s)
    cov = se = None
    if covariance is not None:
        sigma = v.finite_array(covariance, "covariance", f"a {q.size} x {q.size} covariance matrix")
        if sigma.shape != (q.size, q.size):
            raise invalid(
                "covariance",
                f"shape {sigma.shape}",
                f"a {q.size} x {q.size} covariance matrix",
            )
        cov = jac @ sigma @ jac.T
        cov = (cov + cov.T) / 2.0
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return ReweightedEstimate(g, cov, se, jac)
