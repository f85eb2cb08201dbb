"""Closed forms and bounds for the utility of locally private mechanisms (Kairouz et al. 2014).

Results of Kairouz, Oh and Viswanath, *Extremal Mechanisms for Local Differential Privacy*
(Kairouz et al. 2014; formulas restated in docs/theory.md sec. 2-4):

- the binary mechanism's KL divergence and total variation in closed form, and its
  constant-factor guarantee for KL (Kairouz et al. 2014, Sec. 3.3, 8: ``BIN >= OPT / (2 (e^eps + 1)^2)``);
- Duchi, Jordan and Wainwright's converse, quoted in Kairouz et al. 2014, Sec. 3:
  ``D_kl(M0||M1) + D_kl(M1||M0) <= 4 (e^eps - 1)^2 ||P0 - P1||_TV^2`` for every eps-LDP
  mechanism;
- the leading term of the mutual-information bound (Kairouz et al. 2014, Sec. 4 and 9):
  ``I(X; Y) <= (1/2) eps^2 max_A P(A) P(A^c) + O(eps^3)``;
- a numerical search for the two privacy regimes of Kairouz et al. 2014, Sec. 3-4: the binary mechanism is
  exactly optimal for ``eps <= eps_bin``, randomized response for ``eps >= eps_rr``.

The binary mechanism for priors (P0, P1) is ``T = {x : P0(x) >= P1(x)}`` with two outputs
(docs/theory.md sec. 2). Its induced marginals are ``M_v = (a_v, 1 - a_v)`` with

    a_v = (1 + (e^eps - 1) P_v(T)) / (1 + e^eps) = (e^-eps + (1 - e^-eps) P_v(T)) / (1 + e^-eps),

the second form being the one evaluated (no overflow for any eps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms import best_balanced_set, randomized_response
from ldpsim.mechanisms.standard import MAX_ENUMERATED_K
from ldpsim.utility.optimal import binary_for, optimal_mechanism
from ldpsim.utility.utilities import KL, Utility

__all__ = [
    "BinaryFactorCheck",
    "RegimeThresholds",
    "binary_kl",
    "binary_kl_lower_bound_factor",
    "binary_marginals",
    "binary_tv",
    "check_binary_kl_factor",
    "duchi_bound",
    "max_balanced_product",
    "mi_small_eps_bound",
    "regime_thresholds",
    "symmetrized_kl",
]


def _priors(P0: ArrayLike, P1: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    p0 = v.probability_vector(P0, "P0")
    p1 = v.probability_vector(P1, "P1", size=p0.size)
    if p0.size < 2:
        raise invalid("P0", P0, "a probability vector of length >= 2")
    return p0, p1


def binary_marginals(P0: ArrayLike, P1: ArrayLike, eps: float) -> NDArray[np.float64]:
    """The binary mechanism's induced marginals as a ``2 x 2`` array: row v is
    ``M_v = (a_v, 1 - a_v)`` with ``a_v = (1 + (e^eps - 1) P_v(T)) / (1 + e^eps)`` and
    ``T = {P0 >= P1}`` (Kairouz et al. 2014, Sec. 3; docs/theory.md sec. 2).

    Both entries of a row are computed from the subset sums over T and over its complement,
    so neither suffers cancellation, and the form with ``e^-eps`` never overflows."""
    p0, p1 = _priors(P0, P1)
    eps = v.epsilon(eps, "eps")
    t = p0 >= p1
    s, g = math.exp(-eps), -math.expm1(-eps)  # e^-eps and 1 - e^-eps
    inside = np.array([math.fsum(p0[t].tolist()), math.fsum(p1[t].tolist())])
    outside = np.array([math.fsum(p0[~t].tolist()), math.fsum(p1[~t].tolist())])
    a = (s + g * inside) / (1.0 + s)
    b = (s + g * outside) / (1.0 + s)
    return np.column_stack([a, b])


def _phi(t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(1 + t) log(1 + t) - t`` for ``t >= -1``, accurate to a few rounding units even for
    tiny ``|t|`` (a series there, where the direct form cancels)."""
    t = np.asarray(t, dtype=np.float64)
    small = np.abs(t) < 1e-2
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.where(t > -1.0, (1.0 + t) * np.log1p(np.where(t > -1.0, t, 0.0)) - t, 1.0)
    # sum_{n >= 2} (-1)^n t^n / (n (n - 1)); |t| < 1e-2 so 10 terms reach 1e-20 relative
    series = np.zeros_like(t)
    power = t * t
    for n in range(2, 12):
        series = series + (1.0 if n % 2 == 0 else -1.0) * power / (n * (n - 1))
        power = power * t
    return np.where(small, series, direct)


def binary_kl(P0: ArrayLike, P1: ArrayLike, eps: float) -> float:
    """``D_kl(M0 || M1)`` of the binary mechanism for priors (P0, P1), in closed form (nats).

    With ``M_v = (a_v, 1 - a_v)`` as in :func:`binary_marginals` (Kairouz et al. 2014, Sec. 3, the mechanism
    of Kairouz et al. 2014, Sec. 3.2), ``D_kl = a_0 log(a_0/a_1) + (1-a_0) log((1-a_0)/(1-a_1))``. It is
    evaluated as ``sum_y M1(y) phi(d_y / M1(y))`` with ``phi(t) = (1+t) log(1+t) - t`` and
    ``d = M0 - M1`` (the ``-t`` terms sum to zero), which keeps full relative accuracy as
    eps -> 0, where the divergence is of order eps^2 and the direct sum cancels.
    """
    m = binary_marginals(P0, P1, eps)
    m0, m1 = m[0], m[1]
    eps = float(eps)
    s, g = math.exp(-eps), -math.expm1(-eps)
    p0, p1 = _priors(P0, P1)
    tv = 0.5 * math.fsum(np.abs(p0 - p1).tolist())  # = P0(T) - P1(T) for T = {P0 >= P1}
    d0 = g * tv / (1.0 + s)  # a_0 - a_1, without cancellation
    d = np.array([d0, -d0])
    with np.errstate(divide="ignore"):
        terms = np.where(m1 > 0, m1 * _phi(d / np.where(m1 > 0, m1, 1.0)), np.where(m0 > 0, math.inf, 0.0))
    return float(np.sum(terms))


def binary_tv(P0: ArrayLike, P1: ArrayLike, eps: float) -> float:
    """``||M0 - M1||_TV`` of the binary mechanism: ``tanh(eps/2) ||P0 - P1||_TV``, i.e.
    ``(e^eps - 1)/(e^eps + 1) ||P0 - P1||_TV`` (Kairouz et al. 2014, Sec. 3). By Kairouz et al.
    2014, Sec. 3.2 / 8 this is the largest total variation of any eps-LDP mechanism, for every
    eps."""
    p0, p1 = _priors(P0, P1)
    eps = v.epsilon(eps, "eps")
    return math.tanh(eps / 2.0) * 0.5 * math.fsum(np.abs(p0 - p1).tolist())


def binary_kl_lower_bound_factor(eps: float) -> float:
    """``1 / (2 (e^eps + 1)^2)``: the binary mechanism's KL divergence is at least this
    fraction of the optimum over eps-LDP mechanisms, for every eps and every pair of priors
    (Kairouz et al. 2014, Sec. 3.3 and 8, "BIN >= OPT / [2 (e^eps + 1)^2]"). At most 1/8 (eps = 0); it decays
    like e^-2eps, where randomized response, not binary, is the optimal mechanism."""
    eps = v.epsilon(eps, "eps")
    # log(e^eps + 1) = eps + log1p(e^-eps): no overflow
    return 0.5 * math.exp(-2.0 * (eps + math.log1p(math.exp(-eps))))


@dataclass(frozen=True)
class BinaryFactorCheck:
    """The binary mechanism's KL against the optimum at one eps (see :func:`check_binary_kl_factor`)."""

    eps: float
    binary: float  # D_kl(M0||M1) of the binary mechanism
    optimum: float  # the optimal eps-LDP mechanism's D_kl
    factor: float  # 1 / (2 (e^eps + 1)^2)

    @property
    def ratio(self) -> float:
        """``binary / optimum`` (1 when the optimum is 0)."""
        return self.binary / self.optimum if self.optimum > 0 else 1.0

    @property
    def holds(self) -> bool:
        """Whether ``binary >= factor * optimum`` (Kairouz et al. 2014, Sec. 3.3), with a relative slack of
        1e-12 on the optimum for the LP's rounding."""
        return self.binary >= self.factor * self.optimum * (1.0 - 1e-12)


def check_binary_kl_factor(P0: ArrayLike, P1: ArrayLike, eps: float, optimum: float | None = None) -> BinaryFactorCheck:
    """Compare the binary mechanism's KL with the optimum at ``eps`` (Kairouz et al. 2014, Sec. 3.3).

    ``optimum`` is the optimal KL divergence; when omitted it is computed with
    :func:`~ldpsim.utility.optimal.optimal_mechanism` (the staircase LP). The result's
    ``holds`` tells whether ``BIN >= OPT / (2 (e^eps + 1)^2)`` and ``ratio`` gives BIN/OPT.
    """
    eps = v.epsilon(eps, "eps")
    if optimum is None:
        optimum = optimal_mechanism(KL(P0, P1), eps).value
    return BinaryFactorCheck(
        eps=eps, binary=binary_kl(P0, P1, eps), optimum=float(optimum), factor=binary_kl_lower_bound_factor(eps)
    )


def duchi_bound(P0: ArrayLike, P1: ArrayLike, eps: float) -> float:
    """``4 (e^eps - 1)^2 ||P0 - P1||_TV^2``: Duchi, Jordan and Wainwright's converse, cited in
    Kairouz et al. 2014, Sec. 3 (docs/theory.md sec. 4). For every eps-LDP mechanism Q,
    ``D_kl(M0||M1) + D_kl(M1||M0) <= duchi_bound(P0, P1, eps)``
    (see :func:`symmetrized_kl`). ``inf`` when ``(e^eps - 1)^2`` overflows."""
    p0, p1 = _priors(P0, P1)
    eps = v.epsilon(eps, "eps")
    tv = 0.5 * math.fsum(np.abs(p0 - p1).tolist())
    if eps > 354.0:  # (e^eps - 1)^2 > 1.8e308
        return math.inf if tv > 0 else 0.0
    return 4.0 * math.expm1(eps) ** 2 * tv * tv


def symmetrized_kl(P0: ArrayLike, P1: ArrayLike, Q: ArrayLike) -> float:
    """``D_kl(M0||M1) + D_kl(M1||M0)`` for the marginals ``M_v = P_v^T Q`` of a mechanism or
    matrix ``Q``: the left-hand side of Duchi et al.'s bound (:func:`duchi_bound`)."""
    return KL(P0, P1).value(Q) + KL(P1, P0).value(Q)


def max_balanced_product(P: ArrayLike) -> float:
    """``max_A P(A) P(A^c)`` over subsets A, by enumeration (k <= 20)."""
    p = v.probability_vector(P, "P")
    if p.size < 2:
        raise invalid("P", P, "a probability vector of length >= 2")
    if p.size > MAX_ENUMERATED_K:
        raise invalid(
            "P",
            f"a vector of length {p.size}",
            f"length <= {MAX_ENUMERATED_K} (max_A P(A) P(A^c) is found by enumeration)",
        )
    mask = best_balanced_set(p)
    inside = math.fsum(p[mask].tolist())
    outside = math.fsum(p[~mask].tolist())
    return inside * outside


def mi_small_eps_bound(P: ArrayLike, eps: float) -> float:
    """``(1/2) eps^2 max_A P(A) P(A^c)``: the leading term of the bound on the mutual
    information of any eps-LDP mechanism with input prior P (Kairouz et al. 2014, Sec. 4 and 9;
    docs/theory.md sec. 4): ``I(X; Y) <= (1/2) eps^2 max_A P(A) P(A^c) + O(eps^3)``.

    Because of the ``O(eps^3)`` remainder this is *not* an upper bound at a fixed eps; it is
    the small-eps asymptote: ``OPT_MI(eps) / mi_small_eps_bound(P, eps) -> 1`` as eps -> 0
    (the binary mechanism on the set A attaining the maximum reaches it). k <= 20
    (the maximising set is found by enumeration)."""
    eps = v.epsilon(eps, "eps")
    return 0.5 * eps * eps * max_balanced_product(P)


# --------------------------------------------------------------------- regimes
#: Default grid of :func:`regime_thresholds`: 1e-2 to 50, 64 points (ratio ~1.14 per step).
#: It starts at 1e-2 because the utilities are computed with an absolute rounding error of
#: about 1e-16 while they shrink like eps^2: much below that, their rounding can exceed the
#: default tolerances and an optimal mechanism could be judged sub-optimal.
DEFAULT_EPS_GRID = np.geomspace(1e-2, 50.0, 64)


@dataclass(frozen=True)
class RegimeThresholds:
    """The privacy regimes of Kairouz et al. 2014, Sec. 3-4 for one utility, found numerically.

    ``eps_bin``: the binary mechanism is exactly optimal at every checked eps up to it (and
    at ``eps_bin`` itself); it is not at ``eps_bin_bracket[1]``. ``eps_rr``: randomized
    response is exactly optimal at every checked eps from it on; it is not at
    ``eps_rr_bracket[0]``. The brackets' relative widths are the resolution (``xtol``) unless
    the regime reaches past an end of the grid:

    - ``eps_bin = inf``: binary optimal at every grid point (total variation; k = 2);
      ``eps_bin = 0``: binary not optimal at the smallest grid point (not resolved below it);
    - ``eps_rr = 0``: randomized response optimal at every grid point (k = 2);
      ``eps_rr = inf``: not optimal at the largest grid point.
    """

    eps_bin: float
    eps_rr: float
    eps_bin_bracket: tuple[float, float]
    eps_rr_bracket: tuple[float, float]
    rtol: float
    atol: float
    xtol: float
    evaluations: int  # optimal mechanisms computed


def regime_thresholds(
    utility: Utility,
    eps_grid: ArrayLike | None = None,
    rtol: float = 1e-9,
    *,
    atol: float = 1e-14,
    xtol: float = 1e-4,
) -> RegimeThresholds:
    """Find ``eps_bin`` (binary exactly optimal for eps up to it) and ``eps_rr`` (randomized
    response exactly optimal from it on) for ``utility`` (Kairouz et al. 2014, Sec. 3.2-3.3, 4: such
    thresholds exist for every f-divergence pair and for mutual information).

    Method. "Exactly optimal" at eps means ``U(mech) >= OPT (1 - rtol) - atol`` with OPT
    the value of :func:`~ldpsim.utility.optimal.optimal_mechanism` (the staircase LP,
    relative accuracy about 1e-12; about 1e-9 where vertices differ by less than the LP
    solver's 1e-10 tolerances, as for total variation at eps > 20) and mech
    :func:`~ldpsim.utility.optimal.binary_for` or
    :func:`~ldpsim.mechanisms.randomized_response`. Both are tested on ``eps_grid`` (default
    :data:`DEFAULT_EPS_GRID`, 64 points from 1e-2 to 50 evenly spaced in log eps; any
    increasing positive values <= 700). ``eps_bin`` is bracketed by the last grid point
    before the first failure of binary and that failure, ``eps_rr`` by the last failure of
    randomized response and the grid point after it; each bracket is then bisected in log
    eps until ``hi / lo <= 1 + xtol``.

    Resolution and caveats. The result is exact to the relative width ``xtol`` *for the
    tested criterion*. The criterion itself moves a threshold by little: past eps_bin the
    relative loss ``1 - U(binary)/OPT`` grows from zero linearly in eps (the LP's optimum
    has a kink where a new staircase column enters), with slopes of 1e-3 to 1 per unit of
    relative change in eps in our experiments, so the criterion places eps_bin about
    ``rtol / slope`` (1e-9 to 1e-6 relative at the default rtol) past the true threshold,
    below the default ``xtol``; likewise for eps_rr. ``atol`` (in the utility's units) absorbs
    the utilities' absolute rounding error, near 1e-16 for KL and mutual information
    (sums of terms of order eps that cancel to order eps^2): without it, priors with
    ``||P0 - P1||_TV`` about 1e-2 have KL near 1e-9 at eps = 1e-2, whose rounding alone
    exceeds rtol, and binary would be judged sub-optimal there. A failure strictly between
    two grid points that does not reach either of them is not seen (the regimes of 001 are intervals
    ``(0, eps*]`` and ``[eps*, inf)``, so this only matters for a grid too coarse to
    separate eps_bin and eps_rr). Cost: one LP per grid point and per bisection step
    (``evaluations``).
    """
    if not isinstance(utility, Utility):
        raise invalid(
            "utility", utility, "a Utility (KL, TotalVariation, ChiSquare, Hellinger, FDivergence, MutualInformation)"
        )
    grid = DEFAULT_EPS_GRID if eps_grid is None else np.asarray(eps_grid, dtype=np.float64).reshape(-1)
    if (
        grid.size < 1
        or not np.all(np.isfinite(grid))
        or np.any(grid <= 0)
        or np.any(grid > 700)
        or np.any(np.diff(grid) <= 0)
    ):
        raise invalid("eps_grid", eps_grid, "a non-empty increasing sequence of eps in (0, 700]")
    rtol = float(rtol)
    if not (0.0 <= rtol < 1.0):
        raise invalid("rtol", rtol, "a number in [0, 1)")
    xtol = float(xtol)
    if not (0.0 < xtol):
        raise invalid("xtol", xtol, "a number > 0")
    atol = float(atol)
    if not (0.0 <= atol < math.inf):
        raise invalid("atol", atol, "a finite number >= 0")
    k = utility.k
    count = 0
    cache: dict[float, tuple[bool, bool]] = {}

    def optimal_flags(eps: float) -> tuple[bool, bool]:
        nonlocal count
        if eps not in cache:
            res = optimal_mechanism(utility, eps)
            if res.status != "optimal":
                raise LdpSimError(f"regime_thresholds: the LP at eps = {eps!r} ended with status {res.status!r}")
            count += 1
            opt = res.value * (1.0 - rtol) - atol
            b = utility.value(binary_for(utility, eps)) >= opt
            r = utility.value(randomized_response(k, eps)) >= opt
            cache[eps] = (b, r)
        return cache[eps]

    def bisect(lo: float, hi: float, ok_at_lo: bool, which: int) -> tuple[float, float]:
        # invariant: flag(lo) == ok_at_lo, flag(hi) == not ok_at_lo
        while hi / lo > 1.0 + xtol:
            mid = math.sqrt(lo * hi)
            if mid <= lo or mid >= hi:
                break
            if optimal_flags(mid)[which] == ok_at_lo:
                lo = mid
            else:
                hi = mid
        return lo, hi

    flags = [optimal_flags(float(e)) for e in grid]
    bin_ok = np.array([f[0] for f in flags])
    rr_ok = np.array([f[1] for f in flags])

    if bin_ok.all():
        eps_bin, bin_bracket = math.inf, (float(grid[-1]), math.inf)
    else:
        first_fail = int(np.argmin(bin_ok))
        if first_fail == 0:
            eps_bin, bin_bracket = 0.0, (0.0, float(grid[0]))
        else:
            lo, hi = bisect(float(grid[first_fail - 1]), float(grid[first_fail]), True, 0)
            eps_bin, bin_bracket = lo, (lo, hi)

    if rr_ok.all():
        eps_rr, rr_bracket = 0.0, (0.0, float(grid[0]))
    else:
        last_fail = int(np.flatnonzero(~rr_ok)[-1])
        if last_fail == grid.size - 1:
            eps_rr, rr_bracket = math.inf, (float(grid[-1]), math.inf)
        else:
            lo, hi = bisect(float(grid[last_fail]), float(grid[last_fail + 1]), False, 1)
            eps_rr, rr_bracket = hi, (lo, hi)

    return RegimeThresholds(
        eps_bin=eps_bin,
        eps_rr=eps_rr,
        eps_bin_bracket=bin_bracket,
        eps_rr_bracket=rr_bracket,
        rtol=rtol,
        atol=atol,
        xtol=xtol,
        evaluations=count,
    )
