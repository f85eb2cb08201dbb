"""Amplification by shuffling: the central privacy of n shuffled local reports.

When n respondents each send one report of an ``eps0``-LDP randomizer and a shuffler
forwards the reports in random order, the server sees a multiset, and the respondents hide
among each other. Feldman, McMillan and Talwar (2021, "Hiding among the clones") reduce the
central (eps, delta) guarantee for any pair of neighbouring datasets to a pair of
distributions on two counts: with

    C ~ Bin(n - 1, e^-eps0),   A ~ Bin(C, 1/2),   D ~ Bernoulli(e^eps0 / (e^eps0 + 1)),

    P = (A + D, C - A + 1 - D),   Q = (A + 1 - D, C - A + D),

the shuffled reports are (eps, delta)-DP for every ``delta >= D_{e^eps}(P || Q)``, the
hockey-stick divergence ``sum (P - e^eps Q)_+`` (each other respondent is, with probability
``e^-eps0``, a "clone" that looks like the first respondent under either of the two inputs).

**Computed exactly, in O(sqrt n).** On the support ``(a, c + 1 - a)`` both laws share the
factor ``P(C = c) / 2^c``; with ``x = binom(c, a - 1)`` and ``y = binom(c, a)``,
``P ~ q x + (1 - q) y`` and ``Q ~ q y + (1 - q) x`` (``q = e^eps0 / (e^eps0 + 1)``). So
``P - e^eps Q = alpha x + beta y`` with ``alpha = q - e^eps (1 - q)`` and ``beta = 1 - q -
e^eps q < 0``: nothing is positive when ``alpha <= 0``; otherwise the positive part is the
``a`` with ``a / (c + 1 - a) > -beta / alpha``, a tail ``a >= a0(c)``, and the sum over it
is ``alpha P(Bin(c, 1/2) >= a0 - 1) + beta P(Bin(c, 1/2) >= a0)``. The divergence is the
expectation of that over ``C``: binomial tails, vectorised over the ``c`` where ``C`` has
mass (``O(sqrt(n))`` of them; the ``TAIL`` left out on each side is charged in full, so
the result is never below the divergence). :func:`shuffle_epsilon` inverts it by bisection on eps.
The coefficients and the law of C are computed from their logarithms, so any finite eps0
works: at eps0 in the hundreds ``1 - q`` and ``e^-eps0`` are far below a double's precision
(or underflow), clones are too rare to matter and the central eps is just below eps0.

For comparison, :func:`shuffle_epsilon_closed_form` is the paper's analytic bound
(Theorem 3.1): ``eps <= log(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 log(4/delta)) /
sqrt(n) + 8 e^eps0 / n))`` for ``eps0 <= log(n / (16 log(2/delta)))``; the numerical
divergence above is never larger than it.

Checked against the authors' numerical code (github.com/apple/ml-shuffling-amplification,
which brackets the same divergence from below and above): :func:`shuffle_epsilon` lies in
their bracket at every (eps0, n, delta) tried, eps0 = 0.5..8, n = 10^4..10^6, and within
2e-4 relative of their lower bound where they visit every clone count; their upper bound
is looser (up to 8% above) because it charges the mass it did not visit (tests/privacy/test_shuffle.py).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.privacy._binom import log_pmf

__all__ = ["shuffle_delta", "shuffle_epsilon", "shuffle_epsilon_closed_form"]

#: Largest number of respondents.
MAX_N = 10**9
#: Bound on the mass of Bin(n - 1, e^-eps0) left out (Bernstein); the exact left-out mass is
#: charged in full to delta.
TAIL = 1e-30
#: Steps of the clone count over which binomial tails are carried (``_half_binomial_path``).
_PATH_BLOCK = 1024


def _check(eps0: float, n: int) -> tuple[float, int]:
    e0 = v.epsilon(eps0, "eps0")
    if not e0 > 0:
        raise invalid("eps0", eps0, "a finite local eps > 0")
    return e0, v.integer(n, "n", minimum=1, maximum=MAX_N)


def shuffle_delta(eps0: float, n: int, eps: float) -> float:
    """The smallest delta at ``eps`` that the shuffled reports of ``n`` ``eps0``-LDP
    respondents are shown to satisfy by the clone reduction (module docstring): the exact
    hockey-stick divergence ``D_{e^eps}(P || Q)``.

    Computed in log space, so any finite ``eps0`` works: with ``q = e^eps0 / (e^eps0 +
    1)``, ``alpha = q (1 - e^(eps - eps0))`` and ``-beta = q (e^eps - e^-eps0)`` never
    round ``1 - q`` to 0, and the clone counts' law comes from its logarithm (Loader's
    form), so ``e^-eps0`` may underflow (where clones are too rare to matter, the
    divergence is that of one respondent, ``alpha``)."""
    e0, n = _check(eps0, n)
    e = v.epsilon(eps, "eps", allow_inf=True)
    if e >= e0:
        return 0.0  # the shuffled output is a post-processing of eps0-DP reports
    log_q = -math.log1p(math.exp(-e0))  # log(e^eps0 / (e^eps0 + 1))
    log_alpha = log_q + math.log(-math.expm1(e - e0))  # alpha = q - e^eps (1 - q) > 0
    log_beta = log_q + e + math.log(-math.expm1(-e - e0))  # -beta = e^eps q - (1 - q) > 0
    log_t = log_beta - log_alpha  # t = -beta / alpha
    alpha = math.exp(log_alpha)
    c, weight, outside = _clone_law(e0, n)
    # the positive part is a >= a0 with a / (c + 1 - a) > t, i.e. c + 1 - a < s = (c + 1) / (1 + t)
    s = (c + 1.0) * expit(-log_t)
    a0 = c + 2.0 - np.maximum(np.ceil(s), 1.0)  # s > 0, even where it underflows
    point, tail = _half_binomial_path(c, a0)  # P(Bin(c, 1/2) = a0 - 1), P(Bin(c, 1/2) >= a0)
    # alpha P(X >= a0 - 1) + beta P(X >= a0) = alpha (P(X = a0 - 1) - (t - 1) P(X >= a0)):
    # no difference of two tails near 1/2 at t ~ 1 (eps ~ 0). The tail is > 0 only where
    # a0 <= c, i.e. s >= 2, t <= c: t is then finite; elsewhere it is capped (no inf * 0)
    t_minus_1 = math.expm1(min(log_t, math.log(c[-1] + 2.0)))
    per_c = np.maximum(point - t_minus_1 * tail, 0.0)
    # every term >= 0: numpy's pairwise sum is within ~20 ulps (math.fsum took 30 ms at n = 10^9)
    return float(min(1.0, alpha * float(np.sum(weight * per_c)) + alpha * outside))


@functools.lru_cache(maxsize=4)  # 6 MB an entry at n = 10^9
def _clone_law(e0: float, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The clone counts c where C ~ Bin(n - 1, e^-eps0) has mass, P(C = c) there, and the mass
    of C outside them (at most 2 TAIL; each such c contributes at most alpha, which is added:
    an upper bound, never below the truth). Independent of eps: cached for the dozen
    divergences :func:`shuffle_epsilon` evaluates (read-only arrays)."""
    from scipy import stats

    m = n - 1
    log_clone, log_keep = -e0, math.log(-math.expm1(-e0))  # log e^-eps0, log(1 - e^-eps0)
    clone = math.exp(log_clone)
    # Bernstein: P(|C - m p| >= t) <= 2 exp(-t^2 / (2 (var + t/3))) <= TAIL at this t
    log_term = math.log(2.0 / TAIL)
    t_dev = math.sqrt(2.0 * m * clone * (1.0 - clone) * log_term) + 2.0 * log_term / 3.0
    lo = max(0, math.floor(m * clone - t_dev))
    hi = min(m, math.ceil(m * clone + t_dev))
    outside = float(stats.binom.cdf(lo - 1, m, clone) + stats.binom.sf(hi, m, clone))  # no pmf: fine at any clone
    c = np.arange(lo, hi + 1, dtype=np.float64)
    if m > 0:
        with np.errstate(over="ignore"):  # c eps0 beyond the doubles (eps0 = 1e308): log P(C = c) = -inf
            weight = np.exp(log_pmf(c, m, log_clone, log_keep))
    else:
        weight = np.ones(1)
    c.flags.writeable = False
    weight.flags.writeable = False
    return c, weight, outside


def _half_binomial_path(
    c: NDArray[np.float64], j: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``P(Bin(c, 1/2) = j - 1)`` and ``P(Bin(c, 1/2) >= j)`` along a path of consecutive c
    (``c[i + 1] = c[i] + 1``) with ``1 <= j <= c + 1``, mostly rising by 0 or 1 per step.

    scipy's binomial tails (the regularized incomplete beta function) take up to 30 us each
    near the median at c ~ 10^8, and at n = 10^9 there are 3.7e5 clone counts: 20 s a
    divergence. Along the path both are carried from one c to the next instead, exactly: with
    ``b = P(Bin(c, 1/2) = j - 1)`` and d in {0, 1} the rise of j,

        P(Bin(c + 1, 1/2) >= j + d) = P(Bin(c, 1/2) >= j) + b/2 (1 - d (c + 1)/j),
        P(Bin(c + 1, 1/2) = j + d - 1) = b (c + 1) / (2 (c + 2 - j) if d = 0 else 2 j),

    over blocks of ``_PATH_BLOCK`` steps, each started from scipy's values (which are off by up
    to ~5e-12 relative at c ~ 4e8, as are the values carried from them). A block is carried
    only where the tail moves slowly along it: |z| <= 30 standard deviations from the median
    and ``_PATH_BLOCK (z^2 + 4) <= c``, so that along the path (d log tail / dc ~ z^2 / 2c) it
    changes by at most e^(1/2) over the block and each step by b/2 with b/tail <= ~1/8; the
    rounding of the sums then stays within about ``_PATH_BLOCK`` ulps of the tail (compared
    with scipy at thousands of clone counts of n = 10^6 to 10^9: within scipy's own ~1e-11).
    Elsewhere (small c, far tails, where scipy is fast) and for any other rise of j, scipy's
    values are used."""
    from scipy import stats

    size = c.size
    point = np.empty(size)
    tail = np.empty(size)
    direct = np.ones(size, dtype=bool)
    width = min(_PATH_BLOCK, size)
    if width >= 2:
        # blocks of ``width`` steps; the last one ends at the end (overlapping the one before)
        starts = np.arange(0, size - width + 1, width)
        if starts[-1] != size - width:
            starts = np.append(starts, size - width)
        idx = starts[:, None] + np.arange(width)
        cb, jb = c[idx], j[idx]
        z2 = (2.0 * jb - cb) ** 2 / np.maximum(cb, 1.0)  # ((j - c/2) / (sqrt(c)/2))^2
        d = np.diff(jb, axis=1)
        carried = np.all((z2 <= 900.0) & (width * (z2 + 4.0) <= cb), axis=1) & np.all((d == 0.0) | (d == 1.0), axis=1)
        if np.any(carried):
            cb, jb, d, idx = cb[carried], jb[carried], d[carried], idx[carried]
            cp, jp = cb[:, :-1], jb[:, :-1]
            pts = np.empty_like(cb)
            pts[:, 0] = stats.binom.pmf(jb[:, 0] - 1.0, cb[:, 0], 0.5)
            pts[:, 1:] = pts[:, :1] * np.cumprod((cp + 1.0) / (2.0 * np.where(d == 0.0, cp + 2.0 - jp, jp)), axis=1)
            tls = np.empty_like(cb)
            tls[:, 0] = stats.binom.sf(jb[:, 0] - 1.0, cb[:, 0], 0.5)
            tls[:, 1:] = tls[:, :1] + np.cumsum(0.5 * pts[:, :-1] * (1.0 - d * (cp + 1.0) / jp), axis=1)
            point[idx], tail[idx], direct[idx] = pts, tls, False
    if np.any(direct):
        point[direct] = stats.binom.pmf(j[direct] - 1.0, c[direct], 0.5)
        tail[direct] = stats.binom.sf(j[direct] - 1.0, c[direct], 0.5)
    return point, np.clip(tail, 0.0, 1.0)


def shuffle_epsilon(eps0: float, n: int, delta: float) -> float:
    """The smallest eps (to 1e-9 relative, rounded up) with :func:`shuffle_delta` ``<=
    delta``: the central eps of ``n`` shuffled ``eps0``-LDP reports. At most ``eps0``.

    The divergence falls as eps grows, so its root is bracketed in ``[0, eps0]``; Brent's
    method on ``log delta(eps) - log delta`` finds it in about ten evaluations (bisection
    to the same precision takes thirty), and the end of the bracket where the divergence
    is at most ``delta`` is returned, so the answer is never below the true one."""
    e0, n = _check(eps0, n)
    d = v.delta(delta, "delta")
    return _shuffle_epsilon(e0, n, d)


@functools.lru_cache(maxsize=4096)
def _shuffle_epsilon(e0: float, n: int, d: float) -> float:
    delta = functools.lru_cache(maxsize=None)(functools.partial(shuffle_delta, e0, n))  # each eps once
    if delta(0.0) <= d:
        return 0.0
    if d <= 0.0:
        return e0
    # every divergence is at least alpha(eps) times the mass of C left out (charged in full), and
    # alpha = q (1 - e^(eps - eps0)): below e_floor it is above d. Where e_floor is within the
    # precision of eps0 (a d below ~1e-30 at large n) that is the answer; the bisection
    # towards eps0 took 40 divergences (4 s at n = 10^9)
    outside = _clone_law(e0, n)[2]
    log_q = -math.log1p(math.exp(-e0))
    if outside > 0 and math.log(d) < log_q + math.log(outside):
        e_floor = e0 + math.log1p(-math.exp(math.log(d) - log_q - math.log(outside)))
        if e_floor >= e0 * (1.0 - 1e-9):
            return e0
    lo, hi = 0.0, e0  # delta(lo) > d >= delta(hi) = 0
    # the paper's closed form is never below the divergence's root: a bracket with a finite
    # log at its top end where it holds (Brent's first step from the -1e300 stand-in for
    # log 0 at eps0 lands next to 0, a divergence wasted)
    closed = shuffle_epsilon_closed_form(e0, n, d)
    if closed < e0 and 0.0 < delta(closed) <= d:
        hi = closed
    log_d = math.log(d)

    def gap(e: float) -> float:
        value = delta(e)
        return (math.log(value) if value > 0 else -1e300) - log_d

    root = optimize.brentq(gap, lo, hi, xtol=1e-11 * hi, rtol=1e-15, maxiter=500)
    up = min(hi, root * (1.0 + 1e-9))
    while up < hi and gap(up) > 0:  # round up until the divergence is at most delta
        up = min(hi, up + 1e-9 * hi)
    return up


def shuffle_epsilon_closed_form(eps0: float, n: int, delta: float) -> float:
    """Feldman, McMillan and Talwar (2021), Theorem 3.1: ``log(1 + (e^eps0 - 1)/(e^eps0 + 1)
    (8 sqrt(e^eps0 log(4/delta)) / sqrt(n) + 8 e^eps0 / n))``, valid for ``eps0 <= log(n /
    (16 log(2/delta)))``; ``eps0`` itself (no amplification shown) outside that range."""
    e0, n = _check(eps0, n)
    d = v.delta(delta, "delta")
    if d <= 0.0 or d >= 1.0:
        return e0
    # log(2/delta) as log 2 - log delta: 2/delta overflows at delta = 5e-324 (then log(n/inf) was
    # a math domain error)
    log_2_d, log_4_d = math.log(2.0) - math.log(d), math.log(4.0) - math.log(d)
    if e0 > math.log(n) - math.log(16.0 * log_2_d):
        return e0
    ee = math.exp(e0)
    bound = math.log1p((ee - 1.0) / (ee + 1.0) * (8.0 * math.sqrt(ee * log_4_d) / math.sqrt(n) + 8.0 * ee / n))
    return min(e0, bound)
