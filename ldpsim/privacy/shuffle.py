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
from scipy import optimize

from ldpsim import _validate as v
from ldpsim.errors import invalid

__all__ = ["shuffle_delta", "shuffle_epsilon", "shuffle_epsilon_closed_form"]

#: Largest number of respondents.
MAX_N = 10**9
#: Bound on the mass of Bin(n - 1, e^-eps0) left out (Bernstein); the exact left-out mass is
#: charged in full to delta.
TAIL = 1e-30


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
    from scipy import stats
    from scipy.special import expit

    from ldpsim.privacy._binom import log_pmf

    e0, n = _check(eps0, n)
    e = v.epsilon(eps, "eps", allow_inf=True)
    if e >= e0:
        return 0.0  # the shuffled output is a post-processing of eps0-DP reports
    log_q = -math.log1p(math.exp(-e0))  # log(e^eps0 / (e^eps0 + 1))
    log_alpha = log_q + math.log(-math.expm1(e - e0))  # alpha = q - e^eps (1 - q) > 0
    log_beta = log_q + e + math.log(-math.expm1(-e - e0))  # -beta = e^eps q - (1 - q) > 0
    log_t = log_beta - log_alpha  # t = -beta / alpha
    alpha = math.exp(log_alpha)
    # C only where Bin(n - 1, e^-eps0) has mass: outside [lo, hi] (at most 2 TAIL in all)
    # each c contributes at most alpha, which is added (an upper bound, never below the truth)
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
    weight = np.exp(log_pmf(c, m, log_clone, log_keep)) if m > 0 else np.ones(1)
    # the positive part is a >= a0 with a / (c + 1 - a) > t, i.e. c + 1 - a < s = (c + 1) / (1 + t)
    s = (c + 1.0) * expit(-log_t)
    a0 = c + 2.0 - np.maximum(np.ceil(s), 1.0)  # s > 0, even where it underflows
    tail_x = stats.binom.sf(a0 - 2.0, c, 0.5)  # P(Bin(c, 1/2) >= a0 - 1)
    tail_y = stats.binom.sf(a0 - 1.0, c, 0.5)  # P(Bin(c, 1/2) >= a0)
    # tail_y > 0 only where a0 <= c, i.e. s >= 2, t <= c: t is then finite; elsewhere 0
    t_capped = math.exp(min(log_t, math.log(hi + 2.0)))
    per_c = np.maximum(tail_x - t_capped * tail_y, 0.0)
    return float(min(1.0, alpha * math.fsum((weight * per_c).tolist()) + alpha * outside))


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
    if shuffle_delta(e0, n, 0.0) <= d:
        return 0.0
    if d <= 0.0:
        return e0
    lo, hi = 0.0, e0  # delta(lo) > d >= delta(hi) = 0
    log_d = math.log(d)

    def gap(e: float) -> float:
        value = shuffle_delta(e0, n, e)
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
    if d <= 0.0 or d >= 1.0 or e0 > math.log(n / (16.0 * math.log(2.0 / d))):
        return e0
    ee = math.exp(e0)
    bound = math.log1p((ee - 1.0) / (ee + 1.0) * (8.0 * math.sqrt(ee * math.log(4.0 / d)) / math.sqrt(n) + 8.0 * ee / n))
    return min(e0, bound)
