"""Independent reference computations for tests: brute force over events and closed forms.

Nothing here imports ldpsim: these are the definitions, computed the slow obvious way.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats


def event_probabilities(Q: np.ndarray) -> np.ndarray:
    """``Q(S | x)`` for every input x and every non-empty event S (columns: events)."""
    m = Q.shape[1]
    events = np.array([s for s in itertools.product([0, 1], repeat=m) if any(s)], dtype=float).T
    return Q @ events


def brute_force_epsilon(Q: np.ndarray) -> float:
    """eps of pure DP by its definition: max over events S and ordered pairs of log Q(S|x)/Q(S|x')."""
    ps = event_probabilities(Q)
    best = 0.0
    k = Q.shape[0]
    for x in range(k):
        for xp in range(k):
            a, b = ps[x], ps[xp]
            if np.any((a > 0) & (b == 0)):
                return math.inf
            both = (a > 0) & (b > 0)
            if both.any():
                best = max(best, float(np.max(np.log(a[both]) - np.log(b[both]))))
    return best


def brute_force_delta(Q: np.ndarray, eps: float) -> float:
    """Smallest delta at eps by its definition: max over events and ordered pairs of
    Q(S|x) - e^eps Q(S|x') (and 0, the empty event)."""
    ps = event_probabilities(Q)
    best = 0.0
    factor = math.exp(eps) if eps < 700 else math.inf
    for x in range(Q.shape[0]):
        for xp in range(Q.shape[0]):
            b = ps[xp]
            with np.errstate(invalid="ignore"):
                val = np.where(b == 0, ps[x], ps[x] - factor * b)
            best = max(best, float(np.max(val)))
    return best


def rr_matrix(k: int, eps: float) -> np.ndarray:
    """k-ary randomized response straight from the formula e/(k-1+e), 1/(k-1+e)."""
    e = math.exp(eps)
    q = np.full((k, k), 1.0 / (k - 1 + e))
    np.fill_diagonal(q, e / (k - 1 + e))
    return q


def truncated_geometric_matrix(k: int, eps: float) -> np.ndarray:
    """By simulation-free definition: the law of clip(x + Z, 1, k), Z two-sided geometric,
    summed over a wide range of z."""
    lam = math.exp(-eps / (k - 1))
    reach = int(math.ceil(45 * (k - 1) / eps)) + k  # lambda^reach < 1e-19: the tail is negligible
    zs = np.arange(-reach, reach + 1)
    pz = (1 - lam) / (1 + lam) * lam ** np.abs(zs)
    q = np.zeros((k, k))
    for x in range(1, k + 1):
        y = np.clip(x + zs, 1, k)
        np.add.at(q[x - 1], y - 1, pz)
    return q


def quaternary_matrix(eps: float, delta: float) -> np.ndarray:
    e = math.exp(eps)
    return np.array(
        [
            [delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0],
            [0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta],
        ]
    )


def sum_of_binomials_pmf(trials: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Exact pmf of sum_x Bin(trials[x], probs[x]), by convolution."""
    pmf = np.array([1.0])
    for n, p in zip(trials.tolist(), probs.tolist()):
        if n == 0:
            continue
        pmf = np.convolve(pmf, stats.binom.pmf(np.arange(n + 1), n, min(max(p, 0.0), 1.0)))
    return pmf
