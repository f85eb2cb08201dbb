"""Anytime-valid confidence sequences for frequency estimates.

A checkpoint every day with a 95% interval each time is not a 95% statement about the
whole collection: the chance that *some* day's interval misses the truth grows with the
number of looks. A confidence sequence holds at every number of reports at once, so the
analyst may look as often as they like (and stop when they like).

The estimate of answer ``x`` after ``t`` reports is a mean of ``t`` i.i.d. contributions
``a_x(Y_i)`` with expectation ``f_x``, each in an interval of length ``R_x``
(:meth:`~ldpsim.mechanisms.base.FrequencyOracle.inversion_coefficient_range`). By
Hoeffding's lemma each centred contribution is sub-Gaussian with variance proxy
``s^2 = R_x^2 / 4``, so for any ``rho > 0`` the normal mixture of the exponential
supermartingales ``exp(l S_t - l^2 s^2 t / 2)`` over ``l ~ N(0, 1/rho)``,

    ``M_t = sqrt(rho / (s^2 t + rho)) exp(S_t^2 / (2 (s^2 t + rho)))``,

is a non-negative supermartingale with ``M_0 = 1`` (``S_t`` the centred sum). Ville's
inequality gives ``P(exists t: M_t >= 1/alpha) <= alpha``, that is, with probability at
least ``1 - alpha``, for every ``t`` at once,

    ``|estimate_t - f_x| <= sqrt((s^2 t + rho) log((s^2 t + rho) / (rho alpha^2))) / t``

(the two-sided normal-mixture boundary; Robbins 1970; Howard, Ramdas, McAuliffe and Sekhon
2021). ``rho`` sets where the sequence is tightest: :func:`rho_for` picks the ``rho`` that
minimises the half-width at a planned number of reports. Bonferroni over the ``k`` answers
(``alpha / k`` each) makes the sequences simultaneous over answers too.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid

__all__ = ["confidence_sequence_halfwidth", "rho_for"]


def rho_for(spread: ArrayLike, n_plan: float, alpha: float) -> NDArray[np.float64]:
    """The mixture parameter that makes the half-width smallest at ``n_plan`` reports:
    with ``V = s^2 n_plan`` (``s = spread / 2``) and ``c = 2 log(1/alpha)``, the derivative
    of ``(V + rho)(log((V + rho)/rho) + c)`` in ``rho`` vanishes at ``rho = V / u`` where
    ``u - log(1 + u) = c``; ``u`` is found by the fixed-point iteration
    ``u <- c + log(1 + u)`` (a contraction, since its slope ``1/(1 + u)`` is below 1)."""
    s2 = np.square(np.asarray(spread, dtype=np.float64)) / 4.0
    n = v.as_float(n_plan, "n_plan", "a number >= 1")
    if not (math.isfinite(n) and n >= 1):
        raise invalid("n_plan", n_plan, "a number >= 1")
    c = 2.0 * math.log(1.0 / _alpha(alpha))
    u = c + 1.0
    for _ in range(200):
        nxt = c + math.log1p(u)
        if abs(nxt - u) <= 1e-15 * nxt:
            break
        u = nxt
    return s2 * n / u


def _alpha(alpha: float) -> float:
    a = v.as_float(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < a < 1.0:
        raise invalid("alpha", alpha, "a number in (0, 1)")
    return a


def confidence_sequence_halfwidth(spread: ArrayLike, t: int, alpha: float, rho: ArrayLike) -> NDArray[np.float64]:
    """Half-width at ``t`` reports of the two-sided normal-mixture confidence sequence for
    the mean of i.i.d. values in intervals of length ``spread`` (one per answer), valid at
    every ``t`` simultaneously with probability ``>= 1 - alpha`` (per answer)."""
    t = v.integer(t, "t", minimum=1)
    a = _alpha(alpha)
    s2 = np.square(np.asarray(spread, dtype=np.float64)) / 4.0
    r = np.asarray(rho, dtype=np.float64)
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise invalid("rho", rho, "finite numbers > 0")
    v_t = s2 * t + r
    log_term = np.log(v_t / r) + 2.0 * math.log(1.0 / a)
    return np.sqrt(v_t * log_term) / t
