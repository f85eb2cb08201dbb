"""The optimal local mechanism: the staircase linear program (Kairouz et al. 2014, Sec. 2.2, Theorem 4).

    maximise  sum_j mu(S_j) theta_j   subject to  S theta = 1,  theta >= 0

over the ``2^k`` staircase patterns. Small k: the full LP. Large k: column generation.
The restricted LP over a few columns is solved with HiGHS (dual simplex, so its solution
is basic: at most k non-zero weights); its dual vector ``w`` prices every pattern,
``mu(S_b) - w . S_b``, computed from subset sums in vectorised chunks of the ``2^k``
patterns (the pattern matrix is never built); the most improving columns join the LP and
this repeats until no pattern improves. The dual vector is the certificate: when every
pattern has ``mu(S_b) <= w . S_b``, ``sum(w)`` bounds the utility of every eps-LDP
mechanism, and the LP attains it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Iterator, cast

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms import (
    FiniteMechanism,
    MatrixMechanism,
    binary_mechanism,
    randomized_response,
    staircase_mechanism,
)
from ldpsim.mechanisms.standard import pattern_bits
from ldpsim.utility.utilities import UTILITIES, MutualInformation, PairUtility, Utility

#: Largest k for the full LP (2^k columns).
MAX_FULL_K = 14
#: Largest k column generation accepts: 2^30 patterns per pricing pass (minutes each).
MAX_CG_K = 30
#: Patterns priced per vectorised block.
BLOCK = 1 << 18


@dataclass(frozen=True)
class OptimalResult:
    """An optimal staircase mechanism, its utility and the LP certificate."""

    mechanism: MatrixMechanism
    value: float  # utility of the mechanism (primal objective)
    bound: float  # sum of the dual vector: an upper bound on every eps-LDP mechanism's utility
    dual: NDArray[np.float64]  # dual vector w (for the scaled patterns, see utilities.py)
    patterns: NDArray[np.int64]  # codes of the patterns used (bit i of a code = b_i)
    weights: NDArray[np.float64]  # their weights theta (scaled patterns)
    status: str  # "optimal", or why not
    method: str  # "full" or "column_generation"
    iterations: int = 0
    columns: int = 0  # columns in the final restricted LP
    seconds: float = 0.0
    max_reduced_cost: float = 0.0  # largest mu - w.q over all patterns at the end (<= tol)
    history: list[float] = field(default_factory=list)

    @property
    def gap(self) -> float:
        return self.bound - self.value


class SubsetSums:
    """Subset sums ``w(T_b)`` of weight vectors (rows of ``weights``) for ranges of pattern
    codes, from a table of the low 16 bits plus the high bits' contribution."""

    LOW = 16

    def __init__(self, weights: NDArray[np.float64]) -> None:
        self.weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        self.k = self.weights.shape[1]
        self.low_bits = min(self.k, self.LOW)
        self.low = _all_subset_sums(self.weights[:, : self.low_bits])  # r x 2^low_bits

    def block(self, start: int, stop: int) -> NDArray[np.float64]:
        span = 1 << self.low_bits
        if self.k > self.low_bits and start % span == 0 and stop % span == 0:
            # whole low-bit tables: one high-bit sum per 2^16 codes, broadcast over the table
            high = np.arange(start >> self.low_bits, stop >> self.low_bits, dtype=np.int64)
            hs = self.weights[:, self.low_bits :] @ pattern_bits(high, self.k - self.low_bits).astype(np.float64).T
            return (self.low[:, None, :] + hs[:, :, None]).reshape(self.weights.shape[0], -1)
        codes = np.arange(start, stop, dtype=np.int64)
        out = self.low[:, codes & ((1 << self.low_bits) - 1)]
        if self.k > self.low_bits:
            high = pattern_bits(codes >> self.low_bits, self.k - self.low_bits).astype(np.float64)
            out = out + self.weights[:, self.low_bits :] @ high.T
        return out


def subset_sums(weights: NDArray[np.float64], start: int, stop: int) -> NDArray[np.float64]:
    """Subset sums ``w(T_b)`` of each weight vector for pattern codes ``start..stop-1``."""
    return SubsetSums(weights).block(start, stop)


def _all_subset_sums(w: NDArray[np.float64]) -> NDArray[np.float64]:
    """``w(T)`` for all ``2^m`` subsets T of m columns (bit i of the index = column i)."""
    sums = np.zeros((w.shape[0], 1))
    for i in range(w.shape[1]):
        sums = np.concatenate([sums, sums + w[:, i : i + 1]], axis=1)
    return sums


def _blocks(k: int) -> Iterator[tuple[int, int]]:
    total = 1 << k
    for start in range(0, total, BLOCK):
        yield start, min(start + BLOCK, total)


def _scaled_columns(codes: NDArray[np.int64], k: int, eps: float) -> NDArray[np.float64]:
    """Scaled pattern columns ``e^-eps + (1 - e^-eps) b`` (``k x n``)."""
    bits = pattern_bits(codes, k).T.astype(np.float64)
    return math.exp(-eps) + (-math.expm1(-eps)) * bits


def _solve_master(cols: NDArray[np.float64], mu: NDArray[np.float64]):
    """max mu.theta s.t. cols theta = 1, theta >= 0; returns (theta, w, value).

    ``mu`` should be scaled to order one (the caller divides by a fixed scale): HiGHS's
    tolerances are absolute."""
    k = cols.shape[0]
    for method, options in _ATTEMPTS:  # tight tolerances first; HiGHS may stall on them at large eps
        res = linprog(-mu, A_eq=cols, b_eq=np.ones(k), bounds=(0, None), method=method, options=options)
        if res.status == 0:
            break
    else:
        raise LdpSimError(f"optimal_mechanism: the linear program failed ({res.message})")
    w = -np.asarray(res.eqlin.marginals)  # duals of the maximisation
    return np.asarray(res.x), w, -float(res.fun)


_TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
_ATTEMPTS = [("highs-ds", _TIGHT), ("highs-ds", {}), ("highs-ipm", {})]


def _price(utility: Utility, eps: float, w: NDArray[np.float64], top: int, tol: float):
    """Price every pattern against ``w``: the ``top`` best reduced costs
    ``r_b = mu(q_b) - w.q_b`` above ``tol`` (codes, costs), the largest ``r_b``, and the
    Lagrangian bound ``sum(w) + k max_b r_b / (1.q_b)`` on the optimum (valid for any w,
    because every feasible theta has ``sum_b theta_b (1.q_b) = k``)."""
    k = utility.k
    s, g = math.exp(-eps), -math.expm1(-eps)
    best_codes = np.zeros(0, dtype=np.int64)
    best_costs = np.zeros(0)
    best = -math.inf
    best_ratio = -math.inf
    wsum = float(w.sum())
    table = SubsetSums(np.vstack([utility.weights, w[None, :], np.ones((1, k))]))
    for start, stop in _blocks(k):
        sums = table.block(start, stop)
        cost = utility.pattern_mu(sums[:-2], eps) - (s * wsum + g * sums[-2])
        best = max(best, float(cost.max()))
        best_ratio = max(best_ratio, float(np.max(cost / (k * s + g * sums[-1]))))
        if top:
            cand = np.flatnonzero(cost > tol)
            if cand.size > top:
                cand = cand[np.argpartition(-cost[cand], top)[:top]]
            best_codes = np.concatenate([best_codes, cand + start])
            best_costs = np.concatenate([best_costs, cost[cand]])
            if best_codes.size > 4 * top:
                keep = np.argpartition(-best_costs, top)[:top]
                best_codes, best_costs = best_codes[keep], best_costs[keep]
    order = np.argsort(-best_costs, kind="stable")[:top]
    return best_codes[order], best_costs[order], best, wsum + k * max(best_ratio, 0.0)


def _initial_codes(utility: Utility, k: int) -> NDArray[np.int64]:
    """Start from the zero pattern (feasible alone), randomized response's one-hot patterns,
    their complements and the binary mechanism's pair."""
    full = (1 << k) - 1
    codes = [0] + [1 << i for i in range(k)] + [full ^ (1 << i) for i in range(k)]
    if isinstance(utility, PairUtility):
        t = int(np.sum((utility.P0 >= utility.P1) << np.arange(k)))
        codes += [t, full ^ t]
    return np.unique(np.asarray(codes, dtype=np.int64))


def optimal_mechanism(
    utility: Utility,
    eps: float,
    *,
    method: str = "auto",
    tol: float = 1e-10,
    max_iterations: int = 10_000,
    columns_per_iteration: int | None = None,
    smoothing: float = 0.5,
) -> OptimalResult:
    """The optimal eps-LDP mechanism for ``utility`` (a staircase mechanism, <= k outputs).

    ``method``: ``"full"`` (all 2^k patterns in one LP, k <= 14), ``"column_generation"``
    (k <= 30), or ``"auto"`` (full for k <= 10). ``tol`` is the relative reduced-cost
    tolerance at which column generation stops.
    """
    if not isinstance(utility, Utility):
        raise invalid(
            "utility", utility, "a Utility (KL, TotalVariation, ChiSquare, Hellinger, FDivergence, MutualInformation)"
        )
    eps = v.epsilon(eps, "eps")
    if eps > 700:
        raise invalid("eps", eps, "eps <= 700")
    k = utility.k
    if method not in ("auto", "full", "column_generation"):
        raise invalid("method", method, "'auto', 'full' or 'column_generation'")
    if method == "auto":
        method = "full" if k <= 10 else "column_generation"
    limit = MAX_FULL_K if method == "full" else MAX_CG_K
    if k > limit:
        hint = (
            "method='column_generation'"
            if method == "full" and k <= MAX_CG_K
            else "better_of_binary_and_rr(utility, eps), within a constant factor of optimal, or fewer categories"
        )
        raise LdpSimError(
            f"k: got {k}, expected k <= {limit} for method={method!r} (2^{k} patterns); use {hint} instead"
        )
    started = time.perf_counter()
    if eps == 0:
        # every pattern is the all-ones column: one output, utility 0, dual certificate w = 0
        codes, theta, w = np.array([0], dtype=np.int64), np.array([1.0]), np.zeros(k)
        return _finish(utility, eps, codes, theta, w, method, 0, started, 0.0, [])
    if method == "full":
        codes = np.arange(1 << k, dtype=np.int64)
        mu = utility.pattern_mu(subset_sums(utility.weights, 0, 1 << k), eps)
        scale = _scale(mu)
        theta, w, value = _solve_master(_scaled_columns(codes, k, eps), mu / scale)
        w = w * scale
        _, _, worst, _ = _price(utility, eps, w, 0, 0.0)
        return _finish(utility, eps, codes, theta, w, method, 1, started, worst, [value * scale])

    # Column generation, stabilised by dual smoothing (Wentges): price at a convex combination
    # of the master's dual and the dual with the best Lagrangian bound so far; if that finds
    # no column improving the master, price at the master's dual itself.
    top = columns_per_iteration or max(2 * k, 10)
    codes = _initial_codes(utility, k)
    mu = utility.pattern_mu(_sums_for(utility.weights, codes), eps)
    scale = _scale(mu)
    history: list[float] = []
    worst = math.inf
    status = "iteration limit reached"
    center, center_bound = None, math.inf
    alpha = smoothing
    for it in range(1, max_iterations + 1):
        theta, w, value = _solve_master(_scaled_columns(codes, k, eps), mu / scale)
        w = w * scale
        value *= scale
        history.append(value)
        threshold = tol * max(scale, abs(value))
        while True:
            w_price = w if center is None or alpha == 0 else alpha * center + (1 - alpha) * w
            new_codes, _, worst, bound = _price(utility, eps, w_price, top, threshold)
            if bound < center_bound:
                center, center_bound = w_price, bound
            new_codes = np.setdiff1d(new_codes, codes)
            if new_codes.size:
                # keep only columns that improve the master (reduced cost at w > 0)
                r = utility.pattern_mu(_sums_for(utility.weights, new_codes), eps) - w @ _scaled_columns(
                    new_codes, k, eps
                )
                new_codes = new_codes[r > threshold]
            if new_codes.size or w_price is w:
                break
            alpha = 0.0  # mispricing: price at the master's dual
        if center_bound - value <= threshold or new_codes.size == 0:
            status = "optimal"
            break
        alpha = smoothing
        codes = np.concatenate([codes, new_codes])
        mu = np.concatenate([mu, utility.pattern_mu(_sums_for(utility.weights, new_codes), eps)])
    result = _finish(utility, eps, codes, theta, w, "column_generation", it, started, worst, history, status=status)
    # a finite center_bound comes with its center
    return (
        result if center_bound >= result.bound else _with_bound(result, center_bound, cast(NDArray[np.float64], center))
    )


def _with_bound(result: OptimalResult, bound: float, dual: NDArray[np.float64]) -> OptimalResult:
    return replace(result, bound=bound, dual=dual)


def _scale(mu: NDArray[np.float64]) -> float:
    """A fixed scale that brings the LP objective to order one."""
    top = float(np.max(np.abs(mu))) if mu.size else 0.0
    return top if top > 0 else 1.0


def _sums_for(weights: NDArray[np.float64], codes: NDArray[np.int64]) -> NDArray[np.float64]:
    bits = pattern_bits(codes, weights.shape[1]).astype(np.float64)
    return weights @ bits.T


def _finish(
    utility, eps, codes, theta, w, method, iterations, started, worst, history, status="optimal"
) -> OptimalResult:
    """Polish the basic solution (solve its <= k columns exactly) and build the mechanism."""
    k = utility.k
    support = theta > 1e-12 * max(1.0, float(theta.max()))
    sc, th = codes[support], theta[support]
    cols = _scaled_columns(sc, k, eps)
    polished, *_ = np.linalg.lstsq(cols, np.ones(k), rcond=None)
    if np.all(polished > 0) and np.allclose(cols @ polished, 1.0, atol=1e-12):
        th = polished
    # Q[:, j] = th_j q_j = th_j e^-eps e^(eps b_j): staircase weights th_j e^-eps, in log space
    lm = np.log(th)[None, :] + np.log(cols)
    lm -= np.log(np.exp(lm).sum(axis=1))[:, None]  # rows sum to one in floating point
    labels = tuple("".join(str(b) for b in row) for row in pattern_bits(sc, k).tolist())
    mech = MatrixMechanism(
        lm, name="optimal_mechanism", params={"utility": utility.name, "eps": eps, "k": k}, output_labels=labels
    )
    value = utility.value(mech)
    return OptimalResult(
        mechanism=mech,
        value=value,
        bound=float(w.sum()),
        dual=w,
        patterns=sc,
        weights=th,
        status=status,
        method=method,
        iterations=iterations,
        columns=int(codes.size),
        seconds=time.perf_counter() - started,
        max_reduced_cost=float(worst),
        history=history,
    )


# --------------------------------------------------------------------- simple mechanisms
def binary_for(utility: Utility, eps: float) -> FiniteMechanism:
    """The binary mechanism for a utility: ``T = {P0 >= P1}`` for hypothesis testing (Kairouz et al. 2014),
    the best set T by enumeration for mutual information (k <= 20)."""
    k = utility.k
    if isinstance(utility, PairUtility):
        return binary_mechanism(eps, utility.P0 >= utility.P1, k)
    if k > 20:
        raise LdpSimError(f"k: got {k}, expected k <= 20 to choose the binary mechanism's set by enumeration")
    half = 1 << (k - 1)  # T and its complement give the same mechanism up to relabelling
    sums = subset_sums(utility.weights, 0, half)
    vals = utility.pattern_mu(sums, eps) + utility.pattern_mu(utility.weights.sum(axis=1)[:, None] - sums, eps)
    code = int(np.argmax(vals))
    return binary_mechanism(eps, pattern_bits([code], k)[0].astype(bool), k)


def better_of_binary_and_rr(utility: Utility, eps: float) -> FiniteMechanism:
    """The mixed strategy of Kairouz et al. 2014, Sec. 5: whichever of binary and randomized response has the
    larger utility at this eps. The paper reports at least 70% of optimal for KL at k = 6;
    over random Dirichlet(1) priors we measure 61-73% as the worst case of 100 instances,
    depending on the draw (``ldpsim reproduce kov-fig4``)."""
    eps = v.epsilon(eps, "eps")
    b = binary_for(utility, eps)
    r = randomized_response(utility.k, eps)
    return b if utility.value(b) >= utility.value(r) else r


def optimal_staircase_for_uniform_mi(k: int, eps: float):
    """The optimal staircase mechanism for mutual information under a uniform prior (the
    linear program above), rebuilt with :func:`ldpsim.mechanisms.staircase_mechanism` from
    the program's patterns and weights (the catalog's ``staircase`` entry)."""
    k = v.alphabet_size(k, "k")
    eps = v.epsilon(eps, "eps")
    res = optimal_mechanism(MutualInformation(np.full(k, 1.0 / k)), eps)
    # the program's weights are for the scaled columns e^-eps e^(eps b): staircase weights th e^-eps
    theta = np.asarray(res.weights, dtype=np.float64) * math.exp(-eps)
    return staircase_mechanism(eps, theta, patterns=np.asarray(res.patterns, dtype=np.int64), k=k)


# --------------------------------------------------------------------- catalog builders
#: Utilities a catalog entry can name: the divergences of :data:`UTILITIES` between the
#: output laws under P0 and P1, and the mutual information between input and output.
UTILITY_NAMES = ("kl", "tv", "chi_square", "hellinger", "mutual_information")


def utility_named(name: str, k: int | None = None, P0=None, P1=None, prior=None) -> Utility:
    """The utility ``name`` (:data:`UTILITY_NAMES`): a divergence of the prior pair
    (``P0``, ``P1``), or the mutual information under ``prior`` (uniform over ``k`` symbols
    when not given); a one-line error naming what is missing."""
    if name not in UTILITY_NAMES:
        raise invalid("utility", name, f"one of {', '.join(UTILITY_NAMES)}")
    if name == "mutual_information":
        if prior is None:
            if k is None:
                raise invalid(
                    "prior", None, "a distribution over the inputs, or k (a uniform prior) for mutual_information"
                )
            prior = np.full(v.alphabet_size(k, "k"), 1.0 / k)
        utility: Utility = MutualInformation(prior)
    else:
        for key, value in (("P0", P0), ("P1", P1)):
            if value is None:
                raise invalid(
                    key, None, f"a distribution over the inputs for utility {name!r} (a divergence of P0 and P1)"
                )
        utility = UTILITIES[name](P0, P1)
    if k is not None and utility.k != k:
        raise invalid(
            "P0" if name != "mutual_information" else "prior", f"{utility.k} entries", f"one per input symbol (k = {k})"
        )
    return utility


def optimal_for(eps: float, utility: str = "kl", k: int | None = None, P0=None, P1=None, prior=None) -> FiniteMechanism:
    """The optimal eps-LDP mechanism for the utility ``utility`` (:func:`utility_named`),
    from the staircase linear program (the catalog's ``optimal`` entry)."""
    return optimal_mechanism(utility_named(utility, k, P0, P1, prior), eps).mechanism


def better_of_binary_and_rr_for(
    eps: float, utility: str = "kl", k: int | None = None, P0=None, P1=None, prior=None
) -> FiniteMechanism:
    """:func:`better_of_binary_and_rr` for the utility ``utility`` (:func:`utility_named`;
    the catalog's ``better_of_binary_and_rr`` entry)."""
    return better_of_binary_and_rr(utility_named(utility, k, P0, P1, prior), eps)
