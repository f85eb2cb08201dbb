"""Independent reference computations for the privacy package (brute force, linear programs)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog


def hockey_stick(p: np.ndarray, r: np.ndarray, eps: float) -> float:
    """``sum (p - e^eps r)_+`` directly."""
    return float(np.maximum(p - np.exp(eps) * r, 0.0).sum())


def tradeoff_lp(p: np.ndarray, r: np.ndarray, alpha: float) -> float:
    """Smallest type II error ``sum r (1 - phi)`` over randomised tests ``phi in [0,1]^m``
    rejecting P with ``sum p phi <= alpha``: a linear program (HiGHS)."""
    p, r = np.asarray(p, float), np.asarray(r, float)
    res = linprog(-r, A_ub=p[None, :], b_ub=[alpha], bounds=[(0, 1)] * p.size, method="highs")
    assert res.status == 0, res.message
    return float(1.0 - r @ res.x)


def quaternary_rows(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    e = np.exp(eps)
    p = np.array([delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0])
    return p, p[::-1].copy()


def product(p: np.ndarray, k: int) -> np.ndarray:
    out = np.ones(1)
    for _ in range(k):
        out = np.outer(out, p).ravel()
    return out
