"""Composition of (eps, delta)-DP mechanisms: the exact optimal region and closed-form bounds.

Exact (Kairouz et al. 2015, Theorem 3.3; docs/theory.md sec. 6). The k-fold adaptive
composition of (eps, delta)-DP mechanisms (k is the argument ``compositions`` everywhere
below) is exactly as private as the k-fold product of the quaternary mechanism, so the
smallest delta at a total eps_t is its hockey-stick

    delta(eps_t) = a + (1 - a) m(eps_t),   a = 1 - (1 - delta)^k,
    m(eps_t) = sum_{l : (k - 2l) eps > eps_t} b(l; k, q) (1 - e^{eps_t - (k - 2l) eps}),

with ``b(l; k, q)`` the binomial(k, q = 1/(1 + e^eps)) probabilities. Every term is positive,
so ``log m`` is a log-sum-exp with no cancellation; the terms are log-concave in l, so only a
window of O(sqrt(k)) terms around their peak is summed, with a rigorous geometric bound on
what is left out (kept below 1e-20 relative). The binomial probabilities come from Loader's
saddle-point form (:mod:`._binom`), accurate to a few ulps at k = 10^7 where the usual
``gammaln`` differences lose eight digits.

The inverse ``eps_t(delta_t)`` is exact too: between consecutive lattice points
``(k - 2i) eps`` the set of terms is fixed and ``m`` is ``S1 - e^{eps_t} S2``; a bisection over
lattice points finds the piece and the equation is solved in closed form.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Callable, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betainc

from .. import _validate as V
from ..errors import invalid
from ._binom import log_pmf
from .pld import MAX_ATOMS, DiscretePLD, log1mexp, settle_up

TAIL_LOG_RTOL = -46.0
"""Neglected terms are bounded by e^-46 (1e-20) times the sum."""

MAX_COMPOSITIONS = 2**53
"""Largest k of the exact homogeneous composition: the binomial indices l = 0..k of its sum
must be exact doubles."""

FAST_WIDTH = 1 << 15
"""Beyond this many terms in the window (``10 sqrt(k q (1 - q)) + 30``: k above about 10^7) the
middle sum is taken from the regularized incomplete beta function (binomial tails, O(1)) and
short geometric sums, not summed over its O(sqrt k) window (``_Homogeneous.fast``)."""

MAX_WINDOW = 1 << 22
"""Largest window of terms summed (32 MB per array): beyond it the call is refused by name."""

_DIRECT_WIDTH = 1 << 16  # fast mode: sums whose terms fall off within this many are summed directly
_TAIL_OK = 1e-280  # incomplete beta values at or above this are used (normal, relative accuracy)
_CANCEL_OK = math.log1p(-(2.0**-20))  # S1 - e^x S2 is used while e^x S2 <= (1 - 2^-20) S1
_CF_TERMS = 400  # continued fraction of a binomial tail: a few terms in the far tail; more is refused
_DBL_MAX = Fraction(sys.float_info.max)
_RUN_PMF = 1 << 14  # windows longer than this take log b from its ratios (``_Homogeneous._pmf_run``)
_RUN_BLOCK = 512  # ... between anchors this far apart

BOUNDS = ("basic", "drv", "kov", "kov_small_eps")
SMALL_EPS_LIMIT = 0.9
"""Theorem 3.4's simpler form (k eps^2 in place of k eps tanh(eps/2)) is stated for eps <= 0.9."""


# --------------------------------------------------------------------------- validation
def exact_compositions(value: object) -> int:
    """The k of an exact homogeneous composition: an integer in ``1..MAX_COMPOSITIONS`` (2^53)."""
    k = V.integer(value, "compositions", minimum=1)
    if k > MAX_COMPOSITIONS:
        raise invalid(
            "compositions",
            value,
            "an integer in 1..2^53 for the exact composition (its binomial indices 0..k must be "
            "exact doubles); the closed-form bounds (bound_delta, bound_epsilon) take any k",
        )
    return k


def _params(eps: object, delta: object, compositions: object) -> tuple[float, float, int]:
    return V.epsilon(eps), V.delta(delta), exact_compositions(compositions)


def _too_wide(k: int, eps: float, terms: float) -> Exception:
    return invalid(
        "compositions",
        k,
        f"a smaller k at eps = {eps:g}: this value of the exact composition needs a sum of about "
        f"{terms:.3g} terms (at most {MAX_WINDOW:,})",
    )


def _nonneg_array(value: ArrayLike, name: str, upper: float | None = None) -> tuple[NDArray[np.float64], bool]:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid(name, value, "a number or array of numbers") from None
    bad = np.isnan(arr) | (arr < 0)
    if upper is not None:
        bad |= arr > upper
    if np.any(bad):
        what = f"a number in [0, {upper:g}]" if upper is not None else "a number >= 0"
        raise invalid(name, float(arr[bad].ravel()[0]), what)
    return arr, arr.ndim == 0


def _log_or_ninf(x: float) -> float:
    return float(np.log(x)) if x > 0 else -np.inf


def _log_tail_cf(last: int, k: int, log_1mp: float) -> float | None:
    """``log(P(Bin(k, p) <= last) / (b(last; k, p) p))`` below the mean, from the continued
    fraction of the incomplete beta function: ``I_{1-p}(a, b) = x^a (1 - x)^b / (a B(a, b)) / (1 +
    d1/(1 + d2/...))`` (x = 1 - p, a = k - last, b = last + 1; DLMF 8.17.22), whose prefactor is
    ``b(last; k, p) p``; Lentz's method. Far in the tail it converges in a handful of terms (k =
    10^12, 37 standard deviations out: 5), to a few ulps, where the incomplete beta function
    underflows; None outside its range (x above (a + 1)/(a + b + 2)) or without convergence
    within ``_CF_TERMS``."""
    a, b, x = float(k - last), float(last + 1), math.exp(log_1mp)
    if not x < (a + 1.0) / (a + b + 2.0):
        return None
    tiny = 1e-300  # Lentz: a zero denominator is moved off zero
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) >= tiny else tiny)
    h = d
    for m in range(1, _CF_TERMS):
        de = 1.0
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for num in (even, odd):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) >= tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) >= tiny else tiny
            de = d * c
            h *= de
        if abs(de - 1.0) <= 1e-15:
            return math.log(h) if h > 0 else None
    return None


def _gauss_scale(log_m: float) -> float:
    """``-sqrt(-2 log m)``: about linear in the lattice index where m is a binomial tail
    (``log m ~ -z^2/2``), which ``log m`` itself is far from (a secant step in it lands next to
    the end it started from)."""
    return -math.sqrt(-2.0 * min(log_m, 0.0))


def _last_at_most(fn: Callable[[int], float], lo: int, hi: int, f_hi: float, target: float) -> int:
    """The largest i in ``[lo, hi)`` with ``fn(i) <= target``, for a non-decreasing ``fn`` (a log
    of a middle sum) with ``fn(lo) <= target < fn(hi) = f_hi``: the Illinois method (regula
    falsi whose kept end has its value halved when it is kept twice) on the integers, in
    :func:`_gauss_scale`; a dozen steps where halving took 30, each a window of up to 1.6e5
    terms at k = 10^9 and tiny eps. Halving where a value is not finite, and for good after
    as many steps as halving would take."""
    goal = _gauss_scale(target)
    r_lo, r_hi = -math.inf, _gauss_scale(f_hi) - goal  # scaled values less the goal: <= 0 < r_hi
    kept = ""
    steps = 0
    limit = 2 * max(hi - lo, 1).bit_length()
    while hi - lo > 1:
        steps += 1
        if steps > limit or not (math.isfinite(r_lo) and math.isfinite(r_hi) and r_hi > r_lo):
            i = (lo + hi) // 2
        else:
            i = min(max(lo + int(round((hi - lo) * -r_lo / (r_hi - r_lo))), lo + 1), hi - 1)
        value = fn(i)
        r = _gauss_scale(value) - goal
        if value <= target:  # compared as logs: the scale only guides the steps
            lo, r_lo = i, min(r, 0.0)
            r_hi = r_hi / 2.0 if kept == "lo" else r_hi
            kept = "lo"
        else:
            hi, r_hi = i, max(r, 0.0)
            r_lo = r_lo / 2.0 if kept == "hi" else r_lo
            kept = "hi"
    return lo


# --------------------------------------------------------------------------- log-concave sums
def _logsum_concave(
    fn: Callable[[NDArray[np.float64]], NDArray[np.float64]], first: int, last: int, center: float, width: float
) -> float:
    """``log sum_{l=first}^{last} exp(fn(l))`` for a concave ``fn``, summing a window.

    The window grows until the peak is inside and the terms beyond each edge, bounded by a
    geometric series with the edge's ratio (valid by concavity), are below e^-46 of the sum.
    """
    if last < first:
        return -np.inf
    c = int(min(max(round(center), first), last))
    w = int(max(8, np.ceil(width)))
    while True:
        lo, hi = max(first, c - w), min(last, c + w)
        l = np.arange(lo, hi + 1, dtype=np.float64)
        t = fn(l)
        top = int(np.argmax(t))
        if not np.isfinite(t[top]):
            return -np.inf
        if (top == 0 and lo > first) or (top == t.size - 1 and hi < last):
            c = int(l[top])  # the peak is outside the window: move there
            w *= 2
            continue
        total = float(t[top] + np.log(np.sum(np.exp(t - t[top]))))  # scipy's logsumexp: 10x the time
        ok = True
        if lo > first:
            d = t[1] - t[0]  # terms below lo shrink at least by e^-d per step
            ok &= bool(d > 0) and (t[0] - d - np.log(-np.expm1(-d)) - total < TAIL_LOG_RTOL)
        if hi < last:
            d = t[-2] - t[-1]
            ok &= bool(d > 0) and (t[-1] - d - np.log(-np.expm1(-d)) - total < TAIL_LOG_RTOL)
        if ok:
            return total
        w *= 2


class _Homogeneous:
    """Shared pieces of the k-fold composition of (eps, delta)."""

    def __init__(self, eps: float, delta: float, compositions: int):
        k = compositions
        self.eps, self.delta, self.compositions = eps, delta, k
        if eps > 0:
            self.log_q = -eps - float(np.log1p(np.exp(-eps)))  # P(loss = -eps) per factor
            self.log_1mq = -float(np.log1p(np.exp(-eps)))
            q = float(np.exp(self.log_q))
            self.center = k * q
            self.width = 10.0 * np.sqrt(k * q * (1.0 - q)) + 30.0  # e^-50 at the edges
        #: the top lattice point k eps is beyond the doubles (eps > 2^1024 / 2^53 = 2e292). Then
        #: q < e^-2e292, so the loss is k eps with probability 1 to any double precision, and
        #: k eps is above every finite eps_total by at least one of its ulps (2^918: eps is a
        #: multiple of its own ulp, >= 2^918, and the largest double one of 2^971): delta is 1
        #: at every finite eps_total, to the last bit (``log_m`` and ``_optimal_epsilon_one``)
        self.beyond = eps > 0 and k * Fraction(eps) > _DBL_MAX
        #: large k: binomial tails from the incomplete beta function (see ``FAST_WIDTH``)
        self.fast = eps > 0 and self.width > FAST_WIDTH and not self.beyond
        self.log_1ma = k * float(np.log1p(-delta)) if delta < 1 else -np.inf  # log (1-delta)^k
        self.a = float(-np.expm1(self.log_1ma)) if delta > 0 else 0.0  # 1 - (1-delta)^k, to an ulp
        self.log_a = float(np.log(self.a)) if delta > 0 else -np.inf

    def pmf(self, l: NDArray[np.float64]) -> NDArray[np.float64]:
        if l.size > _RUN_PMF and l[-1] - l[0] == l.size - 1:  # a window: consecutive l
            return self._pmf_run(l)
        return log_pmf(l, self.compositions, self.log_q, self.log_1mq)

    def _pmf_run(self, l: NDArray[np.float64]) -> NDArray[np.float64]:
        """``log b(l)`` over consecutive l: Loader's form at every ``_RUN_BLOCK``-th, the rest
        from there by the ratios ``b(l + 1)/b(l) = 1 + ((k + 1) q - (l + 1)) / ((l + 1)(1 - q))``
        (log1p: a few ulps of each step; 0.04 us a term where Loader's form takes 0.3 us, most of
        the cost of a window of 1.6e5 terms at k = 10^9). Off by at most ``_RUN_BLOCK`` steps'
        roundings, ~1e-13: below what the rounding of q alone does to ``log b`` in windows this
        long (``(l - kq) / (q (1 - q))`` ulps of q, ~3e-11 at k = 10^9, ten deviations out)."""
        k, n, width = self.compositions, l.size, _RUN_BLOCK
        rows = -(-n // width)
        q, p = math.exp(self.log_q), math.exp(self.log_1mq)
        x = l[:-1] + 1.0
        steps = np.zeros(rows * width)
        steps[1:n] = np.log1p(((k + 1) * q - x) / (x * p))
        steps[::width] = 0.0  # each row starts at its anchor
        anchors = log_pmf(l[::width], k, self.log_q, self.log_1mq)
        return (anchors[:, None] + np.cumsum(steps.reshape(rows, width), axis=1)).ravel()[:n]

    def last_term(self, eps_t: float) -> int:
        """Largest l with (k - 2l) eps > eps_t (-1 if none)."""
        k, eps = self.compositions, self.eps
        if self.fast:
            return self._last_exact(eps_t)
        with np.errstate(over="ignore", invalid="ignore"):
            ratio = (k * eps - eps_t) / (2 * eps)
        if not np.isfinite(ratio):
            ratio = -1.0 if (np.isnan(ratio) or ratio < 0) else float(k)
        l = int(np.floor(min(max(ratio, -1.0), float(k))))
        while l >= 0 and (k - 2 * l) * eps - eps_t <= 0:
            l -= 1
        while l + 1 <= k and (k - 2 * (l + 1)) * eps - eps_t > 0:
            l += 1
        return l

    def _last_exact(self, eps_t: float) -> int:
        """``last_term`` with the lattice points compared exactly (Fractions): at large k the
        products (k - 2l) eps are far above one ulp of eps."""
        k, eps = self.compositions, self.eps
        if not math.isfinite(eps_t):
            return -1
        fe, ft = Fraction(eps), Fraction(eps_t)
        # in exact arithmetic: in floats (k eps - eps_t) / (2 eps) is -inf at eps = 5e-324
        l = min(max(math.floor((k * fe - ft) / (2 * fe)), -1), k)
        while l >= 0 and (k - 2 * l) * fe <= ft:
            l -= 1
        while l + 1 <= k and (k - 2 * (l + 1)) * fe > ft:
            l += 1
        return l

    # ---- large k (``fast``): tails from the incomplete beta function, short sums exactly
    def _gap(self, last: int, eps_t: float) -> float:
        """``(k - 2 last) eps - eps_t`` (> 0), rounded once from its exact value."""
        return float((self.compositions - 2 * last) * Fraction(self.eps) - Fraction(eps_t))

    def _width(self, log_ratio: float) -> float:
        """Terms a sum needs when they fall off by ``e^log_ratio`` per step (log-concave: at
        least that fast further out) to reach e^-60 of the first."""
        return 60.0 / -log_ratio + 30.0 if log_ratio < 0 else math.inf

    def _window(self, fn: Callable[[NDArray[np.float64]], NDArray[np.float64]], last: int, width: float) -> float:
        if width > MAX_WINDOW:
            raise _too_wide(self.compositions, self.eps, width)
        return _logsum_concave(fn, 0, last, float(last), width)

    def _log_es2(self, last: int, eps_t: float) -> float:
        """``log sum_{l <= last} b(l) e^{eps_t - (k - 2l) eps}``, the part of ``m`` taken off:
        terms rising to l = last by ``l q / ((k - l + 1)(1 - q))`` per step, so a short exact sum;
        else ``e^{eps_t} P(Bin(k, 1 - q) <= last)`` (``b(l; q) e^{-(k-2l) eps} = b(l; 1 - q)``)."""
        k, eps = self.compositions, self.eps
        if last >= k:  # pragma: no cover - last < k/2 for eps_t >= 0
            return -np.inf
        g0 = self._gap(last, eps_t)
        log_ratio = math.log(last) + self.log_q - math.log(k - last + 1) - self.log_1mq if last > 0 else -math.inf
        width = self._width(log_ratio)
        term = lambda l: self.pmf(l) - g0 - 2.0 * eps * (last - l)
        if width <= _DIRECT_WIDTH:
            return self._window(term, last, width)
        log_f2 = self._log_cdf(last, flip=True)
        if log_f2 is not None:
            return eps_t + log_f2
        return self._window(term, last, width)

    def _log_cdf(self, last: int, flip: bool) -> float | None:
        """``log P(Bin(k, q) <= last)`` (flip: ``Bin(k, 1 - q)``): the incomplete beta function,
        or where that underflows (the far tail: it used to fall back on a window sum of ~10^6
        terms per call at k = 10^12, seconds per epsilon) its continued fraction in logs; None
        if neither applies."""
        k = self.compositions
        if last >= k:
            return 0.0
        log_p, log_1mp = (self.log_1mq, self.log_q) if flip else (self.log_q, self.log_1mq)
        v = float(betainc(k - last, last + 1, math.exp(log_1mp)))
        if v >= _TAIL_OK:
            return math.log(v)
        log_h = _log_tail_cf(last, k, log_1mp)
        if log_h is None:
            return None
        return float(log_pmf(np.array([float(last)]), k, log_p, log_1mp)[0]) + log_p + log_h

    def _log_tails(self, last: int, eps_t: float) -> tuple[float, float] | None:
        """``log S1`` and ``log(e^x S2 / S1)`` of ``m = S1 - e^x S2`` (S1 = P(Bin(k, q) <= last),
        e^x S2 = e^{eps_t} P(Bin(k, 1 - q) <= last)), or None.

        In the tail both are continued fractions times the same ``b(last; q)`` (``b(l; 1 - q) =
        b(l; q) e^{-(k - 2l) eps}`` and ``(1 - q)/q = e^eps``), so the ratio is exact to a few ulps:
        ``b(last)`` itself is off by ~1e-8 relative at k = 10^12 (the mean kq enters Loader's
        form through its log), which two separate tails would turn into ~1e-6 in m where S1
        and e^x S2 are close (eps = 1e-6). Else the incomplete beta function (as before)."""
        h1 = _log_tail_cf(last, self.compositions, self.log_1mq)
        h2 = _log_tail_cf(last, self.compositions, self.log_q) if h1 is not None else None
        if h1 is not None and h2 is not None:
            log_s1 = float(self.pmf(np.array([float(last)]))[0]) + self.log_q + h1
            return log_s1, self.eps - self._gap(last, eps_t) + h2 - h1
        log_cdf = self._log_cdf(last, flip=False)
        if log_cdf is None:
            return None
        return log_cdf, self._log_es2(last, eps_t) - log_cdf

    def _log_m_fast(self, eps_t: float, last: int) -> float:
        k, eps = self.compositions, self.eps
        if last < 0:
            return -np.inf
        g0 = self._gap(last, eps_t)
        log_ratio = math.log(last) + self.log_1mq - math.log(k - last + 1) - self.log_q if last > 0 else -math.inf
        width = self._width(log_ratio)
        term = lambda l: self.pmf(l) + log1mexp(g0 + 2.0 * eps * (last - l))
        if width <= _DIRECT_WIDTH:  # far below the peak: few terms, summed exactly
            return self._window(term, last, width)
        tails = self._log_tails(last, eps_t)
        if tails is not None and tails[1] <= _CANCEL_OK:
            return tails[0] + float(log1mexp(np.array(-tails[1])))
        # S1 - e^x S2 cancels (tiny eps): the exact sum over the window
        width = min(width, self.width)
        return self._window(term, last, width)

    def log_m(self, eps_t: float, last: int | None = None) -> float:
        """log of the middle sum m(eps_t), over l = 0..last (default: every positive term)."""
        if self.eps == 0:
            return -np.inf
        if self.beyond:  # the one term l = 0 at k eps, which is beyond eps_t (see ``beyond``)
            return 0.0 if eps_t < np.inf else -np.inf
        if last is None:
            last = self.last_term(eps_t)
        if self.fast:
            return self._log_m_fast(eps_t, last)
        k, eps = self.compositions, self.eps

        def term(l: NDArray[np.float64]) -> NDArray[np.float64]:
            return self.pmf(l) + log1mexp((k - 2 * l) * eps - eps_t)

        return _logsum_concave(term, 0, last, self.center, self.width)

    def log_total(self, log_m: float) -> float:
        return min(0.0, float(np.logaddexp(self.log_a, self.log_1ma + log_m)))

    def log_delta(self, eps_t: float) -> float:
        if self.delta >= 1:
            return 0.0
        return self.log_total(self.log_m(eps_t))

    def log_s(self, last: int, flip: bool) -> float:
        """log sum_{l <= last} b(l) (flip: b(l) e^{-(k - 2l) eps}, the R-masses)."""
        k, eps = self.compositions, self.eps
        if flip:
            fn = lambda l: self.pmf(l) - (k - 2 * l) * eps
            center = k * (1 - np.exp(self.log_q))
        else:
            fn = self.pmf
            center = self.center
        return _logsum_concave(fn, 0, last, center, self.width)


# --------------------------------------------------------------------------- exact homogeneous
def optimal_log_delta(eps: float, delta: float, compositions: int, eps_total: ArrayLike) -> NDArray[np.float64] | float:
    """Natural log of :func:`optimal_delta` (finite where the delta underflows doubles)."""
    eps, delta, k = _params(eps, delta, compositions)
    arr, scalar = _nonneg_array(eps_total, "eps_total")
    h = _Homogeneous(eps, delta, k)
    flat = arr.ravel()
    out: NDArray[np.float64] = np.empty(flat.shape)
    cache: dict[float, float] = {}
    for j, e in enumerate(flat):
        key = float(e)
        if key not in cache:
            cache[key] = h.log_delta(key)
        out[j] = cache[key]
    out = out.reshape(arr.shape)
    return float(out) if scalar else out


def optimal_delta(eps: float, delta: float, compositions: int, eps_total: ArrayLike) -> NDArray[np.float64] | float:
    """Exact smallest delta_total such that every k-fold adaptive composition of
    (eps, delta)-DP mechanisms is (eps_total, delta_total)-DP (Theorem 3.3 of Kairouz et al. 2015,
    extended to every eps_total). Vectorised over ``eps_total``; k up to 10^7 and beyond."""
    out = np.exp(optimal_log_delta(eps, delta, compositions, eps_total))
    return float(out) if np.ndim(out) == 0 else out


def _unreachable(delta_total: float, floor: float, what: str) -> Exception:
    return invalid(
        "delta_total",
        delta_total,
        f">= {floor:.6g} = {what}: no eps_total reaches a smaller delta (that mass is lost outright)",
    )


def _optimal_epsilon_one(h: _Homogeneous, target: float) -> float:
    eps, k = h.eps, h.compositions
    a = h.a  # not exp(log a): that is off by ~|log a| ulps (2e-14 at a = 1e-300)
    # optimal_delta is exp(log delta), off by up to ~|log delta| ulps: a target that is the
    # floor a as optimal_delta computed it (at eps_total = k eps) may sit that far below a
    slack = (4.0 + 2.0 * abs(math.log(a))) * 2.3e-16 if a > 0 else 0.0
    if target < a * (1 - slack) and not (target >= a):
        raise _unreachable(target, a, "1 - (1 - delta)^k")
    log_target = _log_or_ninf(target)
    if h.delta >= 1 or np.exp(h.log_delta(0.0)) <= target:
        return 0.0
    if h.beyond:  # delta is 1 at every finite eps_total: the answer, k eps, is beyond the doubles
        return math.inf
    # middle-sum target m* = (target - a) / (1 - a), in logs
    if target <= a:
        log_mstar = -np.inf
    else:
        log_mstar = (
            log_target + float(log1mexp(np.array(log_target - h.log_a))) - h.log_1ma if h.delta > 0 else log_target
        )

    # lattice point i is eps_t = (k - 2i) eps, whose middle sum uses l = 0..i-1; it grows with i.
    # m at i = 0 is 0 <= m*; find the largest i with m_i <= m*
    def log_m_at(j: int) -> float:
        return h.log_m((k - 2 * j) * eps, j - 1)

    top = log_m_at(k // 2)
    i = k // 2 if top <= log_mstar else _last_at_most(log_m_at, 0, k // 2, top, log_mstar)
    # eps_t in [x_lo, x_hi] = [(k - 2i - 2) eps, (k - 2i) eps], terms l = 0..i: m = S1 - e^x S2
    x_hi = (k - 2 * i) * eps
    x_lo = max(0.0, (k - 2 * i - 2) * eps)
    log_m_lo = h.log_m(x_lo, i)
    # log(e^{x_lo} S2): at large k from the exact gap to the lattice point (x_lo and the lattice
    # products are far above one ulp of the offset)
    log_s2 = None if h.fast else h.log_s(i, flip=True)
    # e^x S2 = e^{x_lo} S2 + (m(x_lo) - m*): both parts positive, no cancellation
    if log_mstar == -np.inf:
        log_gap = log_m_lo
    elif log_m_lo > log_mstar:
        log_gap = log_m_lo + float(log1mexp(np.array(log_m_lo - log_mstar)))
    else:
        log_gap = -np.inf
    # x = log(e^{x_lo} + gap / S2) = x_lo + log1p(gap / (e^{x_lo} S2)): the offset from x_lo in
    # full relative precision (x - x_lo may be ~eps = 1e-300 beside O(1) logs)
    offset = log_gap - h._log_es2(i, x_lo) if log_s2 is None else log_gap - x_lo - log_s2
    x = x_lo + float(np.logaddexp(0.0, offset))
    x = min(max(x, x_lo), x_hi)
    # keep the answer on the safe side of rounding (delta(x_hi) <= target by construction)
    return settle_up(x, lambda e: float(np.exp(h.log_delta(e))) <= target, x_hi)


def optimal_epsilon(eps: float, delta: float, compositions: int, delta_total: ArrayLike) -> NDArray[np.float64] | float:
    """Smallest eps_total >= 0 with ``optimal_delta(eps, delta, compositions, eps_total) <= delta_total``.

    Raises :class:`~ldpsim.errors.LdpSimError` when ``delta_total < 1 - (1 - delta)^k``, the
    P-mass that no eps_total can cover (beyond the rounding of :func:`optimal_delta` itself,
    about ``|log delta_total|`` ulps, so that the floor as computed there is accepted)."""
    eps, delta, k = _params(eps, delta, compositions)
    arr, scalar = _nonneg_array(delta_total, "delta_total", upper=1.0)
    h = _Homogeneous(eps, delta, k)
    if eps == 0:
        a = h.a
        if np.any(arr < a):
            raise _unreachable(float(arr[arr < a].ravel()[0]), a, "1 - (1 - delta)^k")
        out = np.zeros(arr.shape)
        return 0.0 if scalar else out
    flat = arr.ravel()
    out = np.array([_optimal_epsilon_one(h, float(t)) for t in flat]).reshape(arr.shape)
    return float(out) if scalar else out


def lattice_region(eps: float, delta: float, compositions: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Theorem 3.3's corner points: ``((k - 2i) eps, 1 - (1-delta)^k (1 - delta_i))`` for
    i = 0..floor(k/2). The exact region is the intersection of these (eps, delta) regions."""
    eps, delta, k = _params(eps, delta, compositions)
    if k // 2 + 1 > MAX_ATOMS:
        raise invalid(
            "compositions", k, f"at most {2 * MAX_ATOMS - 1:,} for the lattice region (k // 2 + 1 corner points)"
        )
    i = np.arange(k // 2 + 1)
    with np.errstate(over="ignore"):  # a corner beyond the doubles (eps ~ 1e308) is at inf
        eps_i = (k - 2 * i) * np.float64(eps)
    return eps_i.astype(np.float64), cast(
        NDArray[np.float64], optimal_delta(eps, delta, k, eps_i)
    )  # an array in, an array out


# --------------------------------------------------------------------------- heterogeneous
def _classes(eps_list: ArrayLike, delta_list: ArrayLike) -> list[tuple[float, float, int]]:
    e = np.atleast_1d(np.asarray(eps_list, dtype=np.float64))
    d = np.atleast_1d(np.asarray(delta_list, dtype=np.float64))
    if e.ndim != 1 or e.size == 0:
        raise invalid("eps_list", eps_list, "a non-empty list of per-mechanism eps")
    if d.size == 1 and e.size > 1:
        d = np.full(e.shape, float(d[0]))
    if d.shape != e.shape:
        raise invalid("delta_list", f"length {d.size}", f"one delta per eps (length {e.size})")
    for x in e:
        V.epsilon(x, "eps_list")
    for x in d:
        V.delta(x, "delta_list")
    pairs, counts = np.unique(np.stack([e, d], axis=1), axis=0, return_counts=True)
    return [(float(p[0]), float(p[1]), int(c)) for p, c in zip(pairs, counts)]


def heterogeneous_pld(eps_list: ArrayLike, delta_list: ArrayLike, max_atoms: int = MAX_ATOMS) -> DiscretePLD:
    """Exact loss law of the product of quaternary (eps_l, delta_l) mechanisms, which is the
    worst case of adaptive composition of (eps_l, delta_l)-DP mechanisms. Mechanisms with
    equal parameters form one binomial class; the classes are convolved exactly, so the
    size is the product over classes of (count + 1) (refused beyond ``max_atoms``)."""
    classes = _classes(eps_list, delta_list)
    size = 1
    for _, _, n in classes:
        size *= n + 1
    if size > max_atoms:
        raise invalid(
            "eps_list",
            f"{len(classes)} distinct (eps, delta) classes",
            f"at most max_atoms = {max_atoms} loss atoms (this needs {size}); use "
            "kov_bound_heterogeneous (Theorem 3.5), or round each eps_l up to fewer distinct "
            "values (still a valid upper bound), or a numerical PLD accountant (dp-accounting)",
        )
    pld: DiscretePLD | None = None
    for e, d, n in classes:
        part = DiscretePLD.binomial(e, d, n)
        pld = part if pld is None else pld.compose(part, max_atoms)
    assert pld is not None
    return pld


def optimal_delta_heterogeneous(
    eps_list: ArrayLike, delta_list: ArrayLike, eps_total: ArrayLike, max_atoms: int = MAX_ATOMS
) -> NDArray[np.float64] | float:
    """Exact delta_total at eps_total for the composition of (eps_l, delta_l)-DP mechanisms."""
    arr, scalar = _nonneg_array(eps_total, "eps_total")
    out = heterogeneous_pld(eps_list, delta_list, max_atoms).delta(arr)
    return float(out) if scalar else np.asarray(out)


def optimal_epsilon_heterogeneous(
    eps_list: ArrayLike, delta_list: ArrayLike, delta_total: ArrayLike, max_atoms: int = MAX_ATOMS
) -> NDArray[np.float64] | float:
    """Smallest eps_total with ``optimal_delta_heterogeneous(...) <= delta_total``."""
    arr, scalar = _nonneg_array(delta_total, "delta_total", upper=1.0)
    pld = heterogeneous_pld(eps_list, delta_list, max_atoms)
    flat = arr.ravel()
    out: NDArray[np.float64] = np.empty(flat.shape)
    for j, t in enumerate(flat):
        if t < pld.p_inf and not np.isclose(t, pld.p_inf, rtol=1e-15, atol=0):
            raise _unreachable(
                float(t), pld.p_inf, "1 - prod(1 - delta_l) (with any mass at losses beyond the doubles)"
            )
        out[j] = pld.epsilon(max(float(t), pld.p_inf))
    out = out.reshape(arr.shape)
    return float(out) if scalar else out


# --------------------------------------------------------------------------- closed-form bounds
def basic_bound(eps: float, delta: float, compositions: int) -> tuple[float, float]:
    """Basic composition: ``(k eps, k delta)`` (delta capped at 1)."""
    eps, delta, k = _params(eps, delta, compositions)
    return k * eps, min(1.0, k * delta)


def _slack(delta_slack: object) -> float:
    d = V.delta(delta_slack, "delta_slack")
    if d <= 0:
        raise invalid("delta_slack", d, "a number in (0, 1]")
    return d


def _drv_center(eps: float, compositions: int) -> float:
    """``k eps (e^eps - 1)``; +inf where it exceeds the float range (from eps ~ 690), no warning."""
    k = compositions
    if eps <= 0:
        return 0.0
    log_c = float(np.log(k) + np.log(eps) + eps + np.log(-np.expm1(-eps)))  # log(e^eps - 1) = eps + log(1 - e^-eps)
    return float(k * eps * np.expm1(eps)) if log_c < 709.0 else np.inf


def drv_bound(eps: float, delta: float, compositions: int, delta_slack: float) -> tuple[float, float]:
    """Dwork-Rothblum-Vadhan: ``(k eps (e^eps - 1) + eps sqrt(2k log(1/delta_slack)),
    k delta + delta_slack)``, eps_total min'ed with the basic ``k eps``."""
    eps, delta, k = _params(eps, delta, compositions)
    ds = _slack(delta_slack)
    with np.errstate(over="ignore"):  # k eps (e^eps - 1) = inf past eps ~ 700: the basic bound wins
        e_t = _drv_center(eps, k) + eps * np.sqrt(2 * k * -np.log(ds))
    return float(min(k * eps, e_t)), min(1.0, k * delta + ds)


def _kov_eps(sum_eps: float, center: float, sum_sq: float, ds: float, scale: float = 1.0) -> float:
    """The eps of Theorem 3.4/3.5 with ``sum of eps_l^2 = scale^2 sum_sq`` (the scale factored
    out: ``k eps^2`` underflows at eps = 1e-300, which made the bound 0, i.e. invalid)."""
    # r = sqrt(sum eps_l^2) = scale sqrt(sum_sq); log(e + r/ds) and log(1/ds) in logs: r/ds
    # and 1/ds overflow for subnormal ds
    log_r = np.log(scale) + 0.5 * np.log(sum_sq) if sum_sq > 0 and scale > 0 else -np.inf
    with np.errstate(over="ignore"):
        a = center + scale * np.sqrt(2 * sum_sq * np.logaddexp(1.0, log_r - np.log(ds)))
        b = center + scale * np.sqrt(2 * sum_sq * -np.log(ds))
    return float(min(sum_eps, a, b))


def kov_bound(
    eps: float, delta: float, compositions: int, delta_slack: float, form: str = "general"
) -> tuple[float, float]:
    """Theorem 3.4 of Kairouz et al. 2015: ``(eps_t, 1 - (1 - delta)^k (1 - delta_slack))`` with
    ``eps_t = min{k eps, c + eps sqrt(2k log(e + sqrt(k eps^2)/delta_slack)), c + eps sqrt(2k log(1/delta_slack))}``,
    ``c = k eps (e^eps - 1)/(e^eps + 1)`` (form "general") or ``k eps^2`` (form "small_eps",
    stated for eps <= 0.9)."""
    eps, delta, k = _params(eps, delta, compositions)
    ds = _slack(delta_slack)
    center = _kov_center(eps, k, form)
    return _kov_eps(k * eps, center, float(k), ds, scale=eps), _kov_delta(delta, k, ds)


def _kov_center(eps: float, compositions: int, form: str) -> float:
    k = compositions
    if form == "general":
        return k * eps * float(np.tanh(eps / 2))
    if form == "small_eps":
        if eps > SMALL_EPS_LIMIT:
            raise invalid("eps", eps, f"eps <= {SMALL_EPS_LIMIT} for Theorem 3.4's small_eps form (use form='general')")
        return k * eps * eps
    raise invalid("form", form, "'general' or 'small_eps'")


def _kov_delta(delta: float, compositions: int, ds: float) -> float:
    return float(-np.expm1(compositions * np.log1p(-delta) + np.log1p(-ds))) if delta < 1 and ds < 1 else 1.0


def kov_bound_heterogeneous(eps_list: ArrayLike, delta_list: ArrayLike, delta_slack: float) -> tuple[float, float]:
    """Theorem 3.5 of Kairouz et al. 2015: the sums of eps_l, eps_l tanh(eps_l/2) and eps_l^2 replace
    k eps, k eps tanh(eps/2) and k eps^2; delta_total = 1 - (1 - delta_slack) prod(1 - delta_l)."""
    classes = _classes(eps_list, delta_list)
    ds = _slack(delta_slack)
    s = sum(n * e for e, _, n in classes)
    c = sum(n * e * np.tanh(e / 2) for e, _, n in classes)
    top = max(e for e, _, _ in classes)
    s2 = sum(n * (e / top) ** 2 for e, _, n in classes) if top > 0 else 0.0  # sum of eps_l^2 / top^2
    log_keep = sum(n * np.log1p(-d) if d < 1 else -np.inf for _, d, n in classes) + np.log1p(-ds)
    return _kov_eps(s, float(c), s2, ds, scale=top), float(-np.expm1(log_keep))


def _check_bound(name: str) -> str:
    if name not in BOUNDS:
        raise invalid("bound", name, "one of " + ", ".join(BOUNDS))
    return name


def bound_epsilon(
    name: str, eps: float, delta: float, compositions: int, delta_total: ArrayLike
) -> NDArray[np.float64] | float:
    """Smallest eps_total the named bound certifies with total ``delta_total`` (inf if none)."""
    name = _check_bound(name)
    eps, delta, k = _params(eps, delta, compositions)
    arr, scalar = _nonneg_array(delta_total, "delta_total", upper=1.0)
    out: NDArray[np.float64] = np.full(arr.shape, np.inf).ravel()
    for j, t in enumerate(arr.ravel()):
        if name == "basic":
            out[j] = k * eps if t >= min(1.0, k * delta) else np.inf
            continue
        if name == "drv":
            ds: float = t - k * delta
            if ds > 0:
                out[j] = drv_bound(eps, delta, k, min(ds, 1.0))[0]
            elif ds == 0:
                out[j] = k * eps
            continue
        a = -np.expm1(k * np.log1p(-delta)) if delta < 1 else 1.0
        if t < a:
            continue
        ds = 1.0 - (1.0 - t) / np.exp(k * np.log1p(-delta)) if delta < 1 else 1.0
        if ds <= 0:
            out[j] = k * eps
            continue
        form = "general" if name == "kov" else "small_eps"
        out[j] = kov_bound(eps, delta, k, min(ds, 1.0), form)[0]
    out = out.reshape(arr.shape)
    return float(out) if scalar else out


def bound_delta(
    name: str, eps: float, delta: float, compositions: int, eps_total: ArrayLike
) -> NDArray[np.float64] | float:
    """Smallest total delta the named bound certifies at ``eps_total`` (1.0 if none).

    Each bound's eps is non-increasing in its slack delta_slack, so the smallest slack that
    brings it down to eps_total is found in closed form from each branch of the min."""
    name = _check_bound(name)
    eps, delta, k = _params(eps, delta, compositions)
    arr, scalar = _nonneg_array(eps_total, "eps_total")
    out: NDArray[np.float64] = np.ones(arr.shape).ravel()
    basic_delta = min(1.0, k * delta)
    for j, e_t in enumerate(arr.ravel()):
        if e_t >= k * eps:
            out[j] = basic_delta if name in ("basic", "drv") else _kov_delta(delta, k, 0.0)
            continue
        if name == "basic" or eps == 0:
            continue
        # s2 = k eps^2 underflows at tiny eps: u = gap^2 / (2 s2) = (gap/eps)^2 / (2k)
        log_sqrt_s2 = 0.5 * np.log(k) + np.log(eps)
        if name == "drv":
            gap = e_t - _drv_center(eps, k)
            if gap > 0:
                out[j] = min(1.0, k * delta + float(np.exp(-((gap / eps) ** 2) / (2 * k))))
            continue
        gap = e_t - _kov_center(eps, k, "general" if name == "kov" else "small_eps")
        if gap <= 0:
            continue
        u = (gap / eps) ** 2 / (2 * k)
        log_ds = -u  # from c + sqrt(2 s2 log(1/ds)) <= e_t
        if u > 1:  # from c + sqrt(2 s2 log(e + sqrt(s2)/ds)) <= e_t: ds >= sqrt(s2)/(e^u - e)
            log_ds = min(log_ds, log_sqrt_s2 - u - float(np.log(-np.expm1(1 - u))))
        if log_ds <= 0:
            out[j] = _kov_delta(delta, k, float(np.exp(log_ds)))
    out = out.reshape(arr.shape)
    return float(out) if scalar else out


def per_query_budget(eps: float, delta: float, compositions: int) -> tuple[float, float]:
    """Corollary 4.1 of Kairouz et al. 2015: per-query (eps0, delta0) whose k-fold composition is
    (eps, delta)-DP: ``eps0 = eps / sqrt(4k log(e + eps/delta))``, ``delta0 = delta/(2k)``
    (Theorem 3.4's small_eps form with delta_slack = delta/sqrt(2); needs eps0 <= 0.9)."""
    eps = V.epsilon(eps)
    delta = V.delta(delta)
    k = V.integer(compositions, "compositions", minimum=1)
    if eps <= 0 or delta <= 0:
        raise invalid("eps, delta", (eps, delta), "eps > 0 and delta > 0 for Corollary 4.1")
    eps0 = eps / np.sqrt(4 * k * np.logaddexp(1.0, np.log(eps) - np.log(delta)))  # eps/delta may overflow
    if eps0 > SMALL_EPS_LIMIT:
        raise invalid("eps", eps, f"a target whose per-query eps0 = {eps0:.3g} is <= {SMALL_EPS_LIMIT} (Corollary 4.1)")
    return float(eps0), delta / (2 * k)
