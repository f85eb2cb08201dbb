"""Estimates under a survey's sampling design: weighted (Hajek) means and their design
variance, from the totals of each primary sampling unit (PSU).

A design sample is a set of respondents, each with a weight ``w_i`` (the inverse of their
inclusion probability, or a final weight after adjustment), in a stratum ``h`` and a PSU
within it. The Hajek estimate of a population mean of a value ``u`` is the ratio

    theta = sum_i w_i u_i / sum_i w_i,

and its variance is estimated by linearisation (Taylor) under the standard approximation
of PSUs drawn with replacement within strata (the first-stage with-replacement variance
estimator, as survey packages compute it by default): with ``z_i = w_i (u_i - theta) / W``,
``W = sum_i w_i``, and ``Z_hc`` the total of ``z`` over PSU ``c`` of stratum ``h`` (``n_h``
PSUs),

    V(theta) = sum_h n_h / (n_h - 1) * sum_c (Z_hc - mean_c Z_hc)^2.

Everything needs only each PSU's total weight and weighted value totals, which is how a
server that receives privatised reports keeps them (:mod:`ldpsim.sim.design`). The same
formula gives the estimate and variance in a domain (a stratum, for instance): the totals
of the PSUs outside it are zero and only the domain's own weight divides.

When ``u_i`` is a privatised respondent's unbiased contribution (the estimate's per-report
term), ``u_i = x_i + e_i`` with noise ``e_i`` independent over respondents, the estimator
above applied to the ``u_i`` estimates the design variance plus the privacy noise's: for
fixed ``theta`` its expectation over the noise is that of the ``x_i`` plus ``sum_i w_i^2
Var(e_i) / W^2`` exactly (the factor ``n_h / (n_h - 1)`` undoes the loss of the centring).
:func:`privacy_variance` is that last term.

Checked against the survey package svy (tests/analyst/test_survey_design.py), and against
the same sums written out as plain loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import LdpSimError


@dataclass(frozen=True)
class DesignEstimate:
    """Hajek estimates of ``m`` means and their linearised design variances."""

    estimate: NDArray[np.float64]  # (m,)
    variance: NDArray[np.float64]  # (m,)
    weight: float  # the total weight behind them


def psu_layout(strata: ArrayLike, psus: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Number the PSUs: each respondent's PSU index (a PSU is a (stratum, PSU label) pair,
    so equal PSU labels in two strata are two PSUs), each PSU's stratum index, and the
    number of strata. Inputs are any labels (one per respondent)."""
    strata = np.asarray(strata)
    psus = np.asarray(psus)
    if strata.shape != psus.shape or strata.ndim != 1:
        raise LdpSimError(
            f"psus: got shape {psus.shape} beside strata of shape {strata.shape}, expected one label each"
        )
    h_labels, h = np.unique(strata, return_inverse=True)
    p_labels, p = np.unique(psus, return_inverse=True)
    pairs, cell = np.unique(h.reshape(-1).astype(np.int64) * p_labels.size + p.reshape(-1), return_inverse=True)
    cell = cell.reshape(-1).astype(np.int64)
    stratum_of = (pairs // max(p_labels.size, 1)).astype(np.int64)
    return cell, stratum_of, int(h_labels.size)


def psu_totals(cell: NDArray[np.int64], values: ArrayLike, cells: int) -> NDArray[np.float64]:
    """``(cells, m)``: the sum of the rows of ``values`` (``(n, m)``) over each PSU."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 1:
        v = v[:, None]
    out = np.zeros((cells, v.shape[1]))
    np.add.at(out, cell, v)
    return out


def hajek(
    value_totals: ArrayLike,
    weight_totals: ArrayLike,
    stratum_of: NDArray[np.int64],
    strata: int,
) -> DesignEstimate:
    """The Hajek estimate and linearised variance from the PSU totals of ``w_i u_i``
    (``(C, m)``) and of ``w_i`` (``(C,)``); ``stratum_of[c]`` is PSU c's stratum. A stratum
    with a single PSU that carries weight has no variance estimate: refused (one line).
    With the totals of ``w_i v_i`` in place of the weights it is the ratio estimate
    ``sum w u / sum w v`` and its linearised variance."""
    y = np.asarray(value_totals, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    w = np.asarray(weight_totals, dtype=np.float64)
    total = float(w.sum())
    if not total > 0:  # no weight here (an empty domain), or a ratio whose estimated denominator is not positive
        return DesignEstimate(np.full(y.shape[1], np.nan), np.full(y.shape[1], np.nan), 0.0)
    theta = y.sum(axis=0) / total
    z = (y - np.outer(w, theta)) / total
    n_h = np.bincount(stratum_of, minlength=strata).astype(np.float64)
    # a stratum's PSUs with no weight in this domain still count (domain estimation)
    used = np.bincount(stratum_of, weights=(w != 0).astype(np.float64), minlength=strata)
    single = (n_h == 1) & (used > 0)
    if single.any():
        raise LdpSimError(
            f"psu: got a stratum with a single PSU (stratum index {int(np.flatnonzero(single)[0])}), "
            "expected at least two PSUs in every stratum (the design variance compares them)"
        )
    sums = np.zeros((strata, y.shape[1]))
    np.add.at(sums, stratum_of, z)
    means = sums / np.maximum(n_h, 1.0)[:, None]
    dev = z - means[stratum_of]
    squares = np.zeros((strata, y.shape[1]))
    np.add.at(squares, stratum_of, dev * dev)
    factor = np.where(n_h > 1, n_h / np.maximum(n_h - 1.0, 1.0), 0.0)
    variance = factor @ squares
    return DesignEstimate(theta, variance, total)


def privacy_variance(noise_totals: ArrayLike, weight: float) -> NDArray[np.float64]:
    """The exact variance the privacy noise adds to a Hajek estimate: ``sum_i w_i^2
    Var(u_i | x_i) / W^2`` from the total of ``w_i^2 Var(u_i | x_i)`` (``(m,)``) and ``W``."""
    v = np.asarray(noise_totals, dtype=np.float64)
    if not weight > 0:
        return np.full(v.shape, np.nan)
    return v / (weight * weight)


def kish_size(weights: ArrayLike) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2``: the number of unweighted
    respondents whose mean has the variance the weights give (equal variances)."""
    w = np.asarray(weights, dtype=np.float64)
    squares = float(np.dot(w, w))
    return float(w.sum()) ** 2 / squares if squares > 0 else 0.0
