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


# --------------------------------------------------------------------------- pairs of laws
def _pair_events(m: int) -> np.ndarray:
    """Indicator matrix (m, 2^m - 1) of every non-empty event over m codes."""
    codes = np.arange(1, 2**m, dtype=np.int64)
    return ((codes[None, :] >> np.arange(m, dtype=np.int64)[:, None]) & 1).astype(float)


#: Largest output set enumerated event by event; above it the pair functions use the
#: maximising event in closed form (the codes where P > e^eps Q, resp. one code).
EVENT_ENUMERATION_MAX = 16


def pair_delta(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """Smallest delta with P(S) <= e^eps Q(S) + delta for every event S, by its definition:
    max over all events (m <= EVENT_ENUMERATION_MAX) of P(S) - e^eps Q(S), and 0 (the empty
    event). For larger m the maximising event {y : p(y) > e^eps q(y)} gives the same number:
    the sum of the positive parts."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if math.isinf(eps):
        return float(p[q == 0].sum())
    factor = math.exp(eps) if eps < 700 else math.inf
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(q == 0, p, p - factor * q)
    if p.size <= EVENT_ENUMERATION_MAX:
        return max(0.0, float(np.max(diff @ _pair_events(p.size))))
    return float(math.fsum(diff[diff > 0]))


def pair_epsilon(p: np.ndarray, q: np.ndarray) -> float:
    """Smallest eps with P(S) <= e^eps Q(S) for every event S: max over events of
    log P(S)/Q(S) (inf if some event has P(S) > 0 = Q(S)); by enumeration for small m, by
    single codes (the mediant inequality) above."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.size <= EVENT_ENUMERATION_MAX:
        ev = _pair_events(p.size)
        ps, qs = p @ ev, q @ ev
    else:
        ps, qs = p, q
    if np.any((ps > 0) & (qs == 0)):
        return math.inf
    both = (ps > 0) & (qs > 0)
    return max(0.0, float(np.max(np.log(ps[both]) - np.log(qs[both])))) if both.any() else 0.0


# --------------------------------------------------------------------------- quadrature
_GL = np.polynomial.legendre.leggauss(20)
#: Where a cell is split for the error estimate. Any rule with symmetric nodes integrates a
#: jump at the centre of a cell exactly and a jump near the centre with the same error as its
#: halves' rule, so comparing a cell with its two halves (or a 10- with a 20-point rule) can
#: accept a wrong value; an asymmetric split has no such coincidence.
_SPLIT = 0.38196601125010515  # (3 - sqrt 5) / 2


def _gl(f, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    nodes, weights = _GL
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    y = mid[:, None] + half[:, None] * nodes[None, :]
    return half * (f(y.ravel()).reshape(y.shape) @ weights)


def adaptive_integral(f, edges: np.ndarray, atol: float = 2e-16, rtol: float = 1e-13, rounds: int = 80):
    """Integrals of ``f`` (vectorised over a 1-D array) over each cell of ``edges``: the
    20-point Gauss-Legendre value of a cell is compared with the sum over its two pieces split
    at the fraction :data:`_SPLIT`; where they differ by more than ``atol + rtol |I|`` the
    pieces become cells of the next round (jumps and kinks end up in cells of width ~1e-15).
    Returns ``(per_cell, error_bound)``: the sums over the input cells and the summed
    disagreement of the cells accepted only because the rounds ran out or they became too
    narrow to split."""
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1].copy(), edges[1:].copy()
    owner = np.arange(lo.size)
    whole = _gl(f, lo, hi)
    out = np.zeros(lo.size)
    err = 0.0
    for r in range(rounds + 1):
        cut = lo + _SPLIT * (hi - lo)
        left, right = _gl(f, lo, cut), _gl(f, cut, hi)
        pieces = left + right
        gap = np.abs(pieces - whole)
        good = gap <= atol + rtol * np.abs(pieces)
        narrow = hi - lo <= 8 * np.spacing(np.maximum(np.abs(lo), np.abs(hi)))
        ok = good | narrow | (r == rounds)
        np.add.at(out, owner[ok], pieces[ok])
        err += float(gap[ok & ~good].sum())
        keep = ~ok
        if not keep.any():
            break
        lo, cut, hi, owner = lo[keep], cut[keep], hi[keep], owner[keep]
        whole = np.concatenate([left[keep], right[keep]])
        lo, hi, owner = np.concatenate([lo, cut]), np.concatenate([cut, hi]), np.concatenate([owner, owner])
    return out, err


def density_window(
    logpdfs, start: tuple[float, float], drop: float = 46.0, limit: float = 1e7, lattice: bool = False
) -> tuple[float, float]:
    """An interval at both ends of which every log density in ``logpdfs`` is below its
    maximum over the interval minus ``drop`` (e^-46 ~ 1e-20): ``start`` widened (tripled)
    until it is. The densities are evaluated on 4001 points of the interval, or on every
    integer in it for a ``lattice`` law (a mass function that is ``-inf`` off the integers:
    rounded grid points would miss its support)."""
    a, b = float(start[0]), float(start[1])
    if not b > a:
        a, b = a - 1.0, b + 1.0
    if lattice:
        a, b = float(math.floor(a)), float(math.ceil(b))
    while True:
        grid = np.arange(a, b + 1.0) if lattice else np.linspace(a, b, 4001)
        done = True
        for lp in logpdfs:
            vals = lp(grid)
            top = float(np.max(vals))
            if max(vals[0], vals[-1]) > top - drop:
                done = False
        if done:
            return a, b
        w = b - a
        a, b = a - w, b + w
        if w > limit:
            raise AssertionError(f"test design: no window where the densities fall by e^{drop} (width {w:g})")


def hockey_stick_integral(logp, logq, eps: float, edges: np.ndarray) -> tuple[float, float]:
    """``int (p - e^eps q)_+`` over ``edges`` for log densities ``logp``, ``logq`` (vectorised
    callables), by :func:`adaptive_integral`; ``(value, error bound)``."""

    def f(y):
        lp, lq = logp(y), logq(y)
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isinf(eps):
                return np.where(np.isneginf(lq), np.exp(lp), 0.0)
            return np.maximum(np.exp(lp) - np.exp(np.minimum(eps + lq, 700.0)), 0.0)

    cells, err = adaptive_integral(f, edges)
    return math.fsum(cells), err
