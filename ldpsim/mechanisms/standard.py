"""The finite mechanisms of the source papers (docs/theory.md sec. 2), built exactly in log space.

- the binary mechanism, for a prior pair (P0, P1) or a single prior with a set T (Kairouz et al. 2014);
- the truncated geometric mechanism (Kairouz et al. 2014's experimental baseline);
- staircase mechanisms ``Q = S diag(theta)`` and the pattern matrix ``S`` (Kairouz et al. 2014, Theorem 4);
- the quaternary (eps, delta) mechanism on binary inputs (Kairouz et al. 2014; Kairouz et al. 2015, Sec. 5).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.finite import MAX_DENSE_ENTRIES, MatrixMechanism, check_dense

#: Largest k for which the best set T of a single prior is found by enumeration.
MAX_ENUMERATED_K = 20

#: Largest k for which the full pattern matrix (k x 2^k) is built.
MAX_PATTERN_K = 20

#: Largest eps for which e^eps is a finite double.
MAX_LINEAR_EPS = 709.0


def _log_sigmoid_pair(eps: float) -> tuple[float, float]:
    """``(log(e/(1+e)), log(1/(1+e)))`` with ``e = exp(eps)``, stable for any eps >= 0."""
    hi = -math.log1p(math.exp(-eps))
    return hi, hi - eps


# --------------------------------------------------------------------- binary
def binary_mechanism(eps: float, T: Iterable[int] | NDArray[np.bool_], k: int) -> MatrixMechanism:
    """The binary mechanism for a set ``T`` of inputs: two outputs, output 0 ("in T") with
    probability ``e^eps/(1+e^eps)`` for x in T and ``1/(1+e^eps)`` otherwise (docs/theory.md sec. 2).

    ``T`` is a collection of symbol indices or a boolean mask of length ``k``. If T is empty
    or everything, both rows coincide and the exact eps is 0.
    """
    eps = v.epsilon(eps, "eps")
    k = v.alphabet_size(k, "k")
    mask = v.subset(T, k, "T")
    hi, lo = _log_sigmoid_pair(eps)
    lm = np.empty((k, 2))
    lm[:, 0] = np.where(mask, hi, lo)
    lm[:, 1] = np.where(mask, lo, hi)
    return MatrixMechanism(
        lm,
        name="binary_mechanism",
        params={"eps": eps, "T": tuple(np.flatnonzero(mask).tolist()), "k": k},
        output_labels=("in T", "not in T"),
    )


def binary_mechanism_for_priors(P0: ArrayLike, P1: ArrayLike, eps: float) -> MatrixMechanism:
    """The binary mechanism for hypothesis testing between priors P0 and P1:
    ``T = {x : P0(x) >= P1(x)}`` (Kairouz et al. 2014, Sec. 3)."""
    p0 = v.probability_vector(P0, "P0")
    p1 = v.probability_vector(P1, "P1", size=p0.size)
    if p0.size < 2:
        raise invalid("P0", P0, "a probability vector of length >= 2")
    return binary_mechanism(eps, p0 >= p1, p0.size)


def binary_mechanism_for_prior(P: ArrayLike, eps: float, T: Iterable[int] | None = None) -> MatrixMechanism:
    """The binary mechanism for a single prior ``P`` with set ``T``.

    If ``T`` is None it is the set maximising ``P(T) P(T^c)``, the best choice for mutual
    information at small eps (Kairouz et al. 2014, Sec. 9), found by enumeration for k <= 20.
    """
    p = v.probability_vector(P, "P")
    k = v.alphabet_size(p.size, "len(P)")
    if T is None:
        if k > MAX_ENUMERATED_K:
            raise invalid("T", None, f"an explicit set when k > {MAX_ENUMERATED_K} (choosing T needs 2^k evaluations)")
        T = best_balanced_set(p)
    return binary_mechanism(eps, T, k)


def best_balanced_set(P: NDArray[np.float64]) -> NDArray[np.bool_]:
    """The set T maximising ``P(T) (1 - P(T))`` (mask), by exhaustive enumeration.

    Symbol 0 is kept outside T to halve the search (T and its complement score the same).
    """
    k = P.size
    best_val, best_mask = -1.0, 0
    # enumerate masks over symbols 1..k-1 in vectorised blocks
    weights = P[1:]
    total = 1 << (k - 1)
    block = 1 << min(k - 1, 16)
    for start in range(0, total, block):
        codes = np.arange(start, min(start + block, total), dtype=np.int64)
        bits = (codes[:, None] >> np.arange(k - 1)) & 1
        mass = bits @ weights
        score = mass * (1.0 - mass)
        i = int(np.argmax(score))
        if score[i] > best_val:
            best_val, best_mask = float(score[i]), int(codes[i])
    mask = np.zeros(k, dtype=bool)
    mask[1:] = ((best_mask >> np.arange(k - 1)) & 1).astype(bool)
    return mask


# --------------------------------------------------------------------- truncated geometric
def truncated_geometric(k: int, eps: float) -> MatrixMechanism:
    """The truncated geometric mechanism on inputs and outputs labelled 1..k (docs/theory.md sec. 2):
    ``Y = clip(x + Z, 1, k)``, ``P(Z = z) propto lambda^|z|``, ``lambda = exp(-eps/(k-1))``.
    Its exact eps is eps."""
    k = v.alphabet_size(k, "k")
    eps = v.epsilon(eps, "eps")
    check_dense(k, k, "truncated-geometric")
    a = eps / (k - 1)  # -log lambda
    lam = math.exp(-a)
    x = np.arange(k)[:, None]
    y = np.arange(k)[None, :]
    with np.errstate(divide="ignore"):
        log_center = math.log(-math.expm1(-a)) - math.log1p(lam) if a > 0 else -math.inf
    lm = log_center - a * np.abs(y - x)
    lm = lm.astype(np.float64)
    lm[:, 0] = -a * np.arange(k) - math.log1p(lam)  # lambda^(x-1)/(1+lambda), x = 1..k
    lm[:, -1] = -a * np.arange(k)[::-1] - math.log1p(lam)  # lambda^(k-x)/(1+lambda)
    labels = tuple(range(1, k + 1))
    return MatrixMechanism(
        lm, name="truncated_geometric", params={"k": k, "eps": eps}, input_labels=labels, output_labels=labels
    )


# --------------------------------------------------------------------- staircase
def pattern_bits(codes: ArrayLike, k: int) -> NDArray[np.int8]:
    """Bit vectors of staircase patterns: row ``j`` holds ``b_i = (codes[j] >> i) & 1``."""
    c = np.asarray(codes, dtype=np.int64).reshape(-1)
    return ((c[:, None] >> np.arange(k, dtype=np.int64)) & 1).astype(np.int8)


def pattern_matrix(k: int, eps: float) -> NDArray[np.float64]:
    """The staircase pattern matrix ``S`` (``k x 2^k``): column ``b`` has ``S[i, b] = e^(eps b_i)``
    where ``b_i = (b >> i) & 1`` (Kairouz et al. 2014, Theorem 4). Built for k <= 20."""
    k = v.integer(k, "k", minimum=2, maximum=MAX_PATTERN_K)
    eps = v.epsilon(eps, "eps")
    if eps > MAX_LINEAR_EPS:
        raise invalid(
            "eps",
            eps,
            f"eps <= {MAX_LINEAR_EPS} so that e^eps is a finite double (staircase_mechanism works in log space)",
        )
    bits = pattern_bits(np.arange(1 << k), k)
    return np.exp(eps * bits.T.astype(np.float64))


def staircase_mechanism(
    eps: float,
    theta: ArrayLike,
    patterns: ArrayLike | None = None,
    k: int | None = None,
) -> MatrixMechanism:
    """The staircase mechanism ``Q = S diag(theta)``: column j is ``theta_j e^(eps b_j)``.

    Parameters
    ----------
    eps : privacy level.
    theta : weights >= 0. Without ``patterns``, one per column of the pattern matrix
        (length ``2^k``). With ``patterns``, one per given pattern.
    patterns : optional patterns, as integer codes (then ``k`` is required) or as an
        ``m x k`` 0/1 array. Useful when k is large and theta is sparse (an optimal
        mechanism has at most k non-zero weights).
    k : input alphabet size when ``patterns`` are integer codes.

    Rows must sum to one within 1e-9 (``S theta = 1``). Columns with zero weight are
    dropped and repeated patterns merged (their weights add); the remaining columns keep the
    order in which their patterns first appear, so with a full ``theta`` column j is pattern
    j. Output labels are the patterns as bit strings ``b_0 b_1 ... b_{k-1}``.
    """
    eps = v.epsilon(eps, "eps")
    th = v.real_array(theta, "theta", "a vector of finite weights >= 0")
    if th.ndim != 1 or th.size == 0 or not np.all(np.isfinite(th)) or np.any(th < 0):
        raise invalid("theta", theta, "a vector of finite weights >= 0")
    if patterns is None:
        kk = int(round(math.log2(th.size))) if th.size > 1 else 0
        if kk < 1 or (1 << kk) != th.size:
            raise invalid("theta", f"a vector of length {th.size}", "a length 2^k (one weight per pattern) for k >= 2")
        k = v.alphabet_size(kk, "k")
        bits = pattern_bits(np.arange(th.size), k)
    else:
        pat = np.asarray(patterns)
        if pat.ndim not in (1, 2) or pat.size == 0:
            raise invalid("patterns", patterns, "integer codes (with k) or a non-empty (m, k) 0/1 array")
        if pat.ndim == 2:
            if k is not None and pat.shape[1] != k:
                raise invalid("patterns", f"an array of shape {pat.shape}", f"shape (m, {k})")
            k = v.alphabet_size(pat.shape[1], "k")
            if not np.all((pat == 0) | (pat == 1)):
                raise invalid("patterns", patterns, "a 0/1 array of shape (m, k)")
            bits = pat.astype(np.int8)
        else:
            if k is None:
                raise invalid("k", None, "the alphabet size when patterns are integer codes")
            k = v.alphabet_size(k, "k")
            if k > 62:
                raise invalid("k", k, "k <= 62 for integer pattern codes (use an (m, k) 0/1 array)")
            codes = np.asarray(pat)
            if (
                codes.ndim != 1
                or not np.issubdtype(codes.dtype, np.integer)
                or codes.min() < 0
                or codes.max() >= (1 << k)
            ):
                raise invalid("patterns", patterns, f"integer codes in 0..2^{k}-1")
            bits = pattern_bits(codes, k)
        if bits.shape[0] != th.size:
            raise invalid("theta", f"a vector of length {th.size}", f"one weight per pattern ({bits.shape[0]})")
    keep = th > 0
    bits, th = bits[keep], th[keep]
    # a repeated pattern is one column (weights add); columns keep their first-appearance order
    uniq, first, where = np.unique(bits, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    th = np.bincount(rank[where.reshape(-1)], weights=th, minlength=uniq.shape[0]).astype(np.float64, copy=False)
    bits = uniq[order]
    if bits.shape[0] * k > MAX_DENSE_ENTRIES:
        raise LdpSimError(f"theta: got {bits.shape[0]} non-zero weights, expected at most {MAX_DENSE_ENTRIES // k}")
    lm = np.log(th)[None, :] + eps * bits.T.astype(np.float64)
    sums = np.exp(lm).sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > v.SUM_TOL)
    if bad.size:
        raise LdpSimError(
            f"theta: got row {bad[0]} of S theta = {float(sums[bad[0]])!r}, "
            f"expected S theta = 1 within {v.SUM_TOL:g} (rows of Q sum to one)"
        )
    lm = lm - np.log(sums)[:, None]  # remove the last rounding
    labels = tuple("".join(str(b) for b in row) for row in bits.tolist())
    return MatrixMechanism(
        lm, name="staircase_mechanism", params={"eps": eps, "k": k, "m": int(th.size)}, output_labels=labels
    )


# --------------------------------------------------------------------- quaternary
def quaternary_mechanism(eps: float, delta: float) -> MatrixMechanism:
    """The quaternary (eps, delta) mechanism on a binary input (docs/theory.md sec. 2):
    ``Q[0] = (delta, (1-delta) e/(1+e), (1-delta)/(1+e), 0)``,
    ``Q[1] = (0, (1-delta)/(1+e), (1-delta) e/(1+e), delta)``. Its privacy region is
    exactly R(eps, delta): exact eps is inf when delta > 0, and ``delta(eps) = delta``."""
    eps = v.epsilon(eps, "eps")
    delta = v.delta(delta, "delta")
    hi, lo = _log_sigmoid_pair(eps)
    with np.errstate(divide="ignore"):
        ld = math.log(delta) if delta > 0 else -math.inf
        l1 = math.log1p(-delta) if delta < 1 else -math.inf
    lm = np.array([[ld, l1 + hi, l1 + lo, -math.inf], [-math.inf, l1 + lo, l1 + hi, ld]])
    return MatrixMechanism(lm, name="quaternary_mechanism", params={"eps": eps, "delta": delta}, input_labels=(0, 1))


__all__ = [
    "binary_mechanism",
    "binary_mechanism_for_priors",
    "binary_mechanism_for_prior",
    "best_balanced_set",
    "truncated_geometric",
    "pattern_bits",
    "pattern_matrix",
    "staircase_mechanism",
    "quaternary_mechanism",
]
