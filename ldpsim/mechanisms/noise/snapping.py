"""The snapping mechanism of Mironov (2012): Laplace noise on a bounded range whose privacy
holds for the floating-point numbers actually produced, with the exact law of the sampler
as implemented here (every output's probability is an exact dyadic sum over the uniform
doubles that produce it)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import as_source
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.noise.base import NoiseMechanism, _eps_array, _need_pure, _out, _positive
from ldpsim.privacy.guarantees import EpsDelta

__all__ = ["SnappedLaplace", "ETA"]

#: Relative error bound per floating-point step used in the privacy bound: one unit in the
#: last place (2^-52), twice the unit roundoff 2^-53 of correctly rounded operations, so
#: that it also covers a logarithm that is only faithful (error below 1 ulp), as numpy's is.
ETA = Fraction(1, 2**52)

_MANT = (1 << 52) - 1
#: bit pattern of 2^-1022, the smallest U* (the exponent is capped at the normal range)
_P_LO = 1 << 52
#: bit pattern of 1.0: one past the largest U*, 1 - 2^-53
_P_ONE = 1023 << 52
#: the largest j of U* = (1 + m 2^-52) 2^-j; P(j) = 2^-j below it, P(j = _J_MAX) = 2^-1021
_J_MAX = 1022
_CACHE = 64


def _cum(p: int) -> int:
    """``2^1074 P(U* < u)`` for the double ``u`` with bit pattern ``p`` (``_P_LO <= p <=
    _P_ONE``), an integer. For ``u >= 2^-1021`` it is ``u`` itself (the law gives every binade
    ``[2^-j, 2^-j+1)`` mass ``2^-j``, uniform over its doubles); the lowest binade
    ``[2^-1022, 2^-1021)`` also carries the mass of everything below it (the exponent is capped),
    so each of its doubles has mass ``2^-1073``."""
    e, m = p >> 52, p & _MANT
    if e <= 1:
        return 2 * m
    return (_MANT + 1 + m) << (e - 1)


def _one_plus_tz(w: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """``1 +`` the number of trailing zero bits of each word ``w != 0`` (anything for 0):
    ``popcount(w ^ (w - 1))``, or the exponent of the lowest set bit on numpy < 2."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(w ^ (w - np.uint64(1))).astype(np.uint64)
    low = w & (~w + np.uint64(1))  # pragma: no cover - numpy 1.x
    return np.frexp(low.astype(np.float64))[1].astype(np.uint64)  # pragma: no cover


def _log_mass(n: int) -> float:
    """``log(n / 2^1075)`` for an integer ``n >= 0``, accurate to a few ulps (no cancellation
    between ``log n`` and ``1075 log 2``)."""
    if n <= 0:
        return -math.inf
    shift = max(n.bit_length() - 60, 0)
    top, e = float(n >> shift), shift - 1075
    f = math.ldexp(top, e)
    if f >= 2.2250738585072014e-308:
        return math.log(f)
    return math.log(top) + e * math.log(2.0)


def _power_of_two(value: object, name: str = "sensitivity") -> float:
    s = _positive(value, name)
    if math.frexp(s)[0] != 0.5:
        raise invalid(
            name,
            value,
            "a power of two (1, 2, 0.5, ...): the snapped grid and the scaling by it must be exact in floats",
        )
    return s


def _round_up(x: Fraction) -> float:
    f = float(x)
    return f if Fraction(f) >= x else float(np.nextafter(f, math.inf))


def _pow2_ceil(x: float) -> float:
    """The smallest power of two >= x (x > 0)."""
    m, e = math.frexp(x)
    return math.ldexp(1.0, e - 1) if m == 0.5 else math.ldexp(1.0, e)


class SnappedLaplace(NoiseMechanism):
    """The snapping mechanism of Mironov (2012, "On significance of the least significant
    bits for differential privacy", ACM CCS): for a query of sensitivity ``s`` (a power of
    two) clamped to ``[-B, B]`` (``B = bound``), the report

        ``clamp_B( round_Lambda( clamp_B(x) (+) S (*) lambda (*) LN(U*) ) )``

    computed in IEEE doubles, with ``S`` uniform on ``{-1, +1}``, ``U*`` uniform on the doubles
    of ``(0, 1)`` with probability proportional to their spacing, ``LN`` numpy's ``np.log``,
    ``Lambda`` the smallest power of two ``>= lambda`` and ``round_Lambda`` the exact rounding to
    the nearest multiple of ``Lambda`` (``np.rint(v / Lambda) * Lambda``: ties to even). Every
    report is a multiple of ``Lambda`` in ``[-B, B]`` or ``+-B`` (:meth:`support`).

    **The privacy constant.** In units of the sensitivity (``b = B/s``; :attr:`lam` is
    ``lambda`` in these units, :attr:`scale` ``= s lambda`` in query units, :attr:`grid_step`
    ``= s Lambda``), Mironov's Theorem 1 states
    ``(1/lambda + 2^-49 b/lambda)``-DP for ``lambda < b < 2^46 lambda``; the last line of its
    proof is the sharper ``((1 + 12 b eta)/lambda + 2 eta)``-DP, ``eta`` the relative error of
    one floating-point step (Mironov's machine epsilon, 2^-53), as the snapping-mechanism
    notes of the Harvard Privacy Tools project (OpenDP/SmartNoise) restate it; with
    ``eta = 2^-53`` it implies the theorem's constant whenever ``lambda <= 2b``. The proof
    assumes a correctly rounded logarithm (crlibm: error <= 2^-53 relative). numpy's float64
    ``np.log`` is not correctly rounded: on x86-64 Linux builds with AVX-512 it is Intel
    SVML's high-accuracy log (documented <= 1 ulp; measured here up to 0.61 ulp, 0.4% of
    U* draws not correctly rounded), elsewhere the C library's (glibc documents 0.52 ulp).
    Both are faithful (error below one ulp, so relative error below 2^-52). The class
    therefore implements the eta form with ``eta = 2^-52`` (:data:`ETA`), which bounds the
    error of every step, the log included:

        ``epsilon(0) = (1 + 12 b 2^-52)/lambda + 2^-51``  (rounded up to a float),

    larger than Mironov's ``(1 + 2^-49 b)/lambda`` by ``2^-50 b/lambda + 2^-51`` (about
    ``1e-15 b/lambda``). ``lambda`` is the smallest double for which it is ``<= eps``: the
    mechanism is ``epsilon(0)``-DP, a proven bound, not the exact eps of the sampler (that is
    :meth:`exact_epsilon`, about ``1/lambda``). Caveat: when ``s/lambda`` is near ``1/2^k``
    (``eps = 1`` or ``4`` and ``s = 1``) the calibrated ``lambda`` lies just above a power of
    two and ``Lambda`` is nearly ``2 lambda``, a grid twice as coarse as at a slightly
    larger eps.

    **The range of U* (a condition the theorem omits).** ``U*`` is a double, so the noise is
    bounded: ``|lambda ln U*| <= 1074 ln 2 lambda`` (744 lambda) even with subnormals. If
    ``2B`` exceeds that, an interior output next to the end of the noise's reach from ``x``
    is out of reach from the neighbour ``x + s``: probability zero against a positive one,
    infinite privacy loss (:meth:`exact_epsilon` shows it). Here the exponent of ``U*`` is
    capped at the normal range (``U* >= 2^-1022``: ``P(j) = 2^-j`` for ``j < 1022``,
    ``P(j = 1022) = 2^-1021``: the law of Mironov's ``U*`` with the mass of the subnormals,
    ``2^-1022``, moved into the lowest normal binade ``[2^-1022, 2^-1021)``), and the class
    refuses a bound unless every ``U* < 2^-1021`` sends both ``x = B`` and ``x = -B`` to the
    opposite clamp: then every input does (the output is monotone in ``x`` and ``U*``), the
    output law equals that of Mironov's uncapped ``U*``, and ``b`` is at most about
    ``353.5 lambda`` (about 353 at ``eps = 1``, 88 at ``eps = 4``, 3530 at ``eps = 0.1``).
    ``lambda < b`` is required too (Mironov's lower condition); ``b < 2^46 lambda`` is then
    implied.

    **The exact law** (:meth:`log_density`, :meth:`pmf`): for each sign ``S`` the report is a
    monotone function of ``U*`` (IEEE multiplication by a positive constant, addition,
    division by a power of two, ``rint`` and clipping are monotone; numpy's log is assumed
    monotone, which a faithful log guarantees except within two ulps), so the doubles that
    give one report form an interval; its ends are found by bisection over the 64-bit
    patterns of ``U*``, vectorised over all reports, calling the sampler's own arithmetic
    (:meth:`_snap`), and each end is verified (the pattern before it gives another report).
    The mass of an interval is an exact dyadic number (:func:`_cum`), so the law is exact
    for the sampler as it runs on this machine (its np.log). :meth:`check_monotone` verifies
    the reports over a window of patterns around every end.

    :meth:`mean` and :meth:`variance` are the exact moments of one report; the report is
    biased (rounding to the grid and the clamps): for an input well inside ``[-B, B]`` the
    bias is periodic in ``x`` with period ``Lambda``, zero on the grid and at its midpoints
    (measured: at most ``0.058 lambda`` at ``eps = 1``, where ``Lambda/lambda`` is near 2, and
    ``0.01 lambda`` where it is near 1; see the tests), and near a clamp it pulls towards 0.

    ``exact_delta`` is False: ``delta(eps)`` is 0 at and above ``epsilon(0)`` and
    :class:`~ldpsim.mechanisms.base.NotAvailable` below it. The operating system's generator
    is accepted (``rng="os"``): the sampler uses only uniform 64-bit words.
    """

    name = "snapped_laplace"
    family = "snapped_laplace"
    pure = True
    exact_delta = False

    def __init__(self, eps: float, bound: float, sensitivity: float = 1.0) -> None:
        self.eps = _positive(eps, "eps")
        self.sensitivity = _power_of_two(sensitivity)
        self.bound = _positive(bound, "bound")
        b = self.bound / self.sensitivity  # exact: a power of two
        if not math.isfinite(b):
            raise invalid(
                "sensitivity",
                sensitivity,
                f"a power of two with bound / sensitivity a finite float (bound = {self.bound!r})",
            )
        if not 2.0 * float(ETA) < self.eps:
            raise invalid("eps", eps, "eps > 2 eta = 2^-51 (the additive term of the snapping bound)")
        lam = self._calibrate_lambda(self.eps, b)
        if not lam < b:
            raise invalid(
                "bound",
                bound,
                f"a bound above sensitivity * lambda = {lam * self.sensitivity:.6g} (Mironov 2012 needs "
                f"lambda < B; lambda = {lam:.6g} in sensitivity units at eps = {self.eps:g})",
            )
        if not (lam * self.sensitivity > 0.0 and _pow2_ceil(lam) * self.sensitivity > 0.0):
            raise invalid(
                "sensitivity",
                sensitivity,
                f"a sensitivity whose noise scale lambda * sensitivity is a positive double (lambda = {lam:.6g} "
                f"at eps = {self.eps:g}: the scale and the grid underflow to 0)",
            )
        # the noise reaches at most 1021 ln2 lambda / 2 = 353.9 lambda each way: a bound far
        # beyond it is refused before the grid of its 2 b / Lambda points is built
        far = not b <= 1024.0 * lam
        if not far:
            self._setup(b, lam)
        if far or not (b < 2.0**46 * lam and self._within_reach()):
            grid = _pow2_ceil(lam) * self.sensitivity
            reach = (1021 * math.log(2.0) * lam - grid / self.sensitivity / 2.0) / 2.0 * self.sensitivity
            raise invalid(
                "bound",
                bound,
                f"a bound of at most about {reach:.6g} at eps = {self.eps:g}, sensitivity = {self.sensitivity:g} "
                f"(beyond it the noise, at most 1021 ln2 lambda for U* >= 2^-1021, cannot carry x = B to -B: "
                "some outputs would be out of reach from one input and not its neighbour)",
            )

    def _setup(self, b: float, lam: float) -> None:
        """Derived constants from ``b = bound/sensitivity`` and ``lambda`` (sensitivity units)."""
        s = self.sensitivity
        self.lam = lam
        self.scale = lam * s  # query units (exact: s a power of two)
        self.grid_step = _pow2_ceil(lam) * s  # Lambda, query units
        self._b = b
        self._pmf_cache: dict[float, tuple[list[int], NDArray[np.float64]]] = {}
        lo, hi = math.ceil(-self.bound / self.grid_step), math.floor(self.bound / self.grid_step)
        grid = np.arange(lo, hi + 1, dtype=np.float64) * self.grid_step
        self._support = np.unique(np.concatenate([[-self.bound], grid, [self.bound]]))
        self._support.setflags(write=False)

    @staticmethod
    def bound_for(lam: float, b: float) -> Fraction:
        """The privacy bound ``(1 + 12 b eta)/lambda + 2 eta`` exactly (sensitivity units)."""
        return (1 + 12 * Fraction(b) * ETA) / Fraction(lam) + 2 * ETA

    @classmethod
    def _calibrate_lambda(cls, eps: float, b: float) -> float:
        """The smallest double ``lambda`` whose bound, rounded up to a float, is ``<= eps``."""
        ok = lambda lam: _round_up(cls.bound_for(lam, b)) <= eps
        lam = float((1 + 12 * Fraction(b) * ETA) / (Fraction(eps) - 2 * ETA))
        if not (math.isfinite(lam) and lam > 0):
            raise invalid("eps", eps, "an eps whose noise scale is a finite float")
        while not ok(lam):
            lam = float(np.nextafter(lam, math.inf))
        while lam > 0 and ok(float(np.nextafter(lam, 0.0))):
            lam = float(np.nextafter(lam, 0.0))
        return lam

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "bound": self.bound, "sensitivity": self.sensitivity}

    def neighbours(self) -> list[tuple[Any, Any]]:
        """``(0, s)``, ``(B - s, B)`` and ``(-B, -B + s)``: the middle and both clamps."""
        s, B = self.sensitivity, self.bound
        return [(0.0, s), (B - s, B), (-B, -B + s)]

    # ------------------------------------------------------------------ the arithmetic
    def _snap(self, xc: NDArray[np.float64], s_lam: Any, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """The mechanism's arithmetic, shared by the sampler and the exact law: clamped inputs
        ``xc``, signed scales ``s_lam`` (``+-scale``) and ``U*`` values ``u`` (broadcast).
        The log runs on a contiguous array (numpy's SIMD and scalar logs can differ); a report
        of zero is always +0.0 (a -0.0 would tell the sign of the noisy value)."""
        v = np.log(np.ascontiguousarray(u, dtype=np.float64))
        v *= s_lam  # S lambda (*) LN(U*)
        v += xc  # clamp(x) (+) noise
        g = self.grid_step
        v *= 1.0 / g  # exact: g is a power of two
        np.rint(v, out=v)
        v *= g
        np.clip(v, -self.bound, self.bound, out=v)
        v += 0.0  # no -0.0 (it would tell the sign of the noisy value)
        return v

    def _clamp(self, x: ArrayLike) -> NDArray[np.float64]:
        return np.clip(np.asarray(x, dtype=np.float64), -self.bound, self.bound)

    def _within_reach(self) -> bool:
        """Whether every ``U* < 2^-1021`` sends ``x = B`` to ``-B`` (S = +1) and ``x = -B`` to
        ``B`` (S = -1); by monotonicity then every U* of the lowest binade and every input."""
        u = np.array([np.nextafter(2.0**-1021, 0.0)])
        B = self.bound
        down = self._snap(np.array([B]), self.scale, u)[0]
        up = self._snap(np.array([-B]), -self.scale, u)[0]
        return bool(down == -B and up == B)

    # ------------------------------------------------------------------ sampling
    def _random_source(self, rng: Any) -> Any:
        return as_source(rng)

    @staticmethod
    def _words(source: Any, n: int) -> NDArray[np.uint64]:
        """``n`` uniform 64-bit words from a numpy Generator or the operating system's source."""
        if hasattr(source, "words"):
            return np.asarray(source.words(n), dtype=np.uint64)
        return source.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)

    @classmethod
    def _uniform_bits(cls, source: Any, n: int) -> tuple[NDArray[np.float64], NDArray[np.uint64]]:
        """``n`` draws of U* (exact law, :func:`_cum`) and the words whose lowest bit is ``S``.

        ``j = 1 +`` the number of trailing zero bits of a stream of random words (``P(j) =
        2^-j``; ``popcount(w ^ (w - 1))`` for a word ``w != 0``), capped at 1022 (``P(j =
        1022) = P(at least 1021 zeros) = 2^-1021``); the 52 mantissa bits are the top bits of a
        second word, the sign (1: ``S = +1``) its lowest bit."""
        w = cls._words(source, n)
        j = _one_plus_tz(w)
        todo = np.flatnonzero(w == 0)
        zeros = 64
        while todo.size:  # a zero word (probability 2^-64): the stream goes on
            if zeros >= _J_MAX - 1:
                j[todo] = _J_MAX
                break
            w2 = cls._words(source, todo.size)
            hit = w2 != 0
            j[todo[hit]] = np.uint64(zeros) + _one_plus_tz(w2[hit])
            todo, zeros = todo[~hit], zeros + 64
        np.minimum(j, np.uint64(_J_MAX), out=j)
        m = cls._words(source, n)
        bits = ((np.uint64(1023) - j) << np.uint64(52)) | (m >> np.uint64(12))
        return bits.view(np.float64), m

    @classmethod
    def _uniform_doubles(cls, source: Any, n: int) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """``n`` draws of U* and of the sign (True: ``S = +1``)."""
        u, m = cls._uniform_bits(source, n)
        return u, (m & np.uint64(1)).astype(bool)

    def _draw(self, xc: NDArray[np.float64], source: Any) -> NDArray[np.float64]:
        flat = np.ascontiguousarray(xc, dtype=np.float64).reshape(-1)
        u, m = self._uniform_bits(source, flat.size)
        # +-scale: the sign bit of scale set where the word's lowest bit is 0 (S = -1)
        scale_bits = np.array([self.scale]).view(np.uint64)[0]
        s_lam = (((~m) & np.uint64(1)) << np.uint64(63) | scale_bits).view(np.float64)
        return self._snap(flat, s_lam, u).reshape(np.shape(xc))

    def sample(self, x: Any, n: int, rng: Any = None) -> NDArray[np.float64]:
        """``n`` independent reports for the query value ``x`` (a finite number); ``rng`` a
        seed, a numpy Generator or ``"os"``."""
        x0 = v.finite_array(x, "x", "a finite real number")
        if x0.ndim != 0:
            raise invalid("x", x, "a finite real number")
        n = v.integer(n, "n", minimum=0)
        return self._draw(np.full(n, float(self._clamp(x0))), as_source(rng))

    def privatize(self, values: ArrayLike, rng: Any = None) -> float | NDArray[np.float64]:
        """One report per entry of ``values`` (vectorised)."""
        x = v.finite_array(values, "values", "finite real numbers")
        out = self._draw(self._clamp(x), as_source(rng))
        return float(out) if np.ndim(values) == 0 else out

    def sample_noise(self, size: Any = None, rng: Any = None) -> Any:
        raise LdpSimError(
            f"sample_noise: got a call on {self!r}, expected an additive mechanism (the snapped report is clamped and "
            "rounded, not x + noise: use sample(x, n) or privatize(values))"
        )

    def log_pdf(self, y: ArrayLike) -> Any:
        raise LdpSimError(
            f"log_pdf: got a call on {self!r}, expected an additive mechanism (the report's law depends on x beyond a "
            "shift: use log_density(x, y))"
        )

    # ------------------------------------------------------------------ the exact law
    def support(self) -> NDArray[np.float64]:
        """Every possible report, sorted: the multiples of ``Lambda`` in ``[-B, B]`` and ``+-B``."""
        return self._support

    def _cuts(self, xc: NDArray[np.float64], y: NDArray[np.float64], plus: bool) -> NDArray[np.int64]:
        """For each pair ``(xc[i], y[i])`` the first pattern of U* whose report is ``>= y``
        (``S = +1``: the report rises with U*) or ``<= y`` (``S = -1``), ``_P_ONE`` if none:
        bisection over the 64-bit patterns, every pair at once; the ends are verified."""
        s_lam = self.scale if plus else -self.scale
        lo = np.full(y.shape, _P_LO, dtype=np.int64)
        hi = np.full(y.shape, _P_ONE, dtype=np.int64)
        while True:
            act = lo < hi
            if not act.any():
                break
            mid = lo + ((hi - lo) >> 1)
            out = self._snap(xc, s_lam, mid.view(np.float64))
            good = out >= y if plus else out <= y
            hi = np.where(act & good, mid, hi)
            lo = np.where(act & ~good, mid + 1, lo)
        # verify the ends: the cut gives the side sought, the pattern before it does not
        inside = (lo > _P_LO) & (lo < _P_ONE)
        at = self._snap(xc, s_lam, np.where(inside, lo, _P_LO).view(np.float64))
        before = self._snap(xc, s_lam, np.where(inside, lo - 1, _P_LO).view(np.float64))
        ok_at = (at >= y) if plus else (at <= y)
        ok_before = (before < y) if plus else (before > y)
        if not bool(np.all(~inside | (ok_at & ok_before))):  # pragma: no cover - a non-monotone log
            raise LdpSimError(
                "snapped_laplace: the report is not monotone in U* at a bisection end (np.log not monotone here)"
            )
        return lo

    def _masses(self, xcs: NDArray[np.float64]) -> list[list[int]]:
        """``2^1075 P(report = support[k] | x)`` (integers) for each clamped input of ``xcs``."""
        sup = self._support
        K = sup.size
        xx = np.repeat(np.asarray(xcs, dtype=np.float64), K)
        yy = np.tile(sup, len(xcs))
        c_plus = self._cuts(xx, yy, True).reshape(len(xcs), K)
        c_minus = self._cuts(xx, yy, False).reshape(len(xcs), K)
        for c, rising in ((c_plus, True), (c_minus, False)):  # the cuts must be ordered like the reports
            d = np.diff(c, axis=1)
            if not bool(np.all(d >= 0) if rising else np.all(d <= 0)):  # pragma: no cover
                raise LdpSimError("snapped_laplace: the bisection ends are not ordered (np.log not monotone here)")
        out = []
        for cp, cm in zip(c_plus.tolist(), c_minus.tolist()):
            fp = [_cum(p) for p in cp] + [_cum(_P_ONE)]
            fm = [_cum(_P_ONE)] + [_cum(p) for p in cm]
            out.append([(fp[k + 1] - fp[k]) + (fm[k] - fm[k + 1]) for k in range(K)])
        return out

    def _law(self, x: Any) -> tuple[list[int], NDArray[np.float64]]:
        """(integer masses, log pmf) over :meth:`support` at the input ``x`` (cached)."""
        xc = float(self._clamp(x))
        hit = self._pmf_cache.get(xc)
        if hit is None:
            mass = self._masses(np.array([xc]))[0]
            logp = np.array([_log_mass(m) for m in mass])
            if len(self._pmf_cache) >= _CACHE:
                self._pmf_cache.pop(next(iter(self._pmf_cache)))
            hit = self._pmf_cache[xc] = (mass, logp)
        return hit

    def pmf(self, x: float) -> NDArray[np.float64]:
        """``P(report = support()[k] | x)`` as floats (exact masses rounded)."""
        xx = self._scalar_x(x)
        mass, _ = self._law(xx)
        return np.array([float(Fraction(m, 2**1075)) for m in mass])

    def exact_masses(self, x: float) -> list[Fraction]:
        """The exact probabilities of the reports :meth:`support` at input ``x`` (dyadic)."""
        mass, _ = self._law(self._scalar_x(x))
        return [Fraction(m, 2**1075) for m in mass]

    def _scalar_x(self, x: Any) -> float:
        x0 = v.finite_array(x, "x", "a finite real number")
        if x0.ndim != 0:
            raise invalid("x", x, "a finite real number")
        return float(x0)

    def log_density(self, x: ArrayLike, y: ArrayLike) -> float | NDArray[np.float64]:
        """log ``P(report = y | x)``, exact for the sampler as implemented (vectorised over
        ``y``; ``-inf`` off :meth:`support`, NaN for NaN)."""
        xx = self._scalar_x(x)
        ya = v.real_array(y, "y", "real numbers")
        _, logp = self._law(xx)
        sup = self._support
        idx = np.clip(np.searchsorted(sup, ya), 0, sup.size - 1)
        on = sup[idx] == ya
        out = np.where(on, logp[idx], -np.inf)
        out = np.where(np.isnan(ya), np.nan, out)
        return float(out) if np.ndim(y) == 0 else out

    def mean(self, x: ArrayLike) -> float | NDArray[np.float64]:
        """The exact mean of one report at ``x`` (vectorised over ``x``)."""
        return self._moment(x, 1)

    def variance(self, x: ArrayLike) -> float | NDArray[np.float64]:  # type: ignore[override]
        """The exact variance of one report at ``x`` (vectorised over ``x``)."""
        return self._moment(x, 2)

    def _moment(self, x: ArrayLike, order: int) -> float | NDArray[np.float64]:
        xa = v.finite_array(x, "x", "finite real numbers")
        xc = self._clamp(xa).reshape(-1)
        uniq, inv = np.unique(xc, return_inverse=True)
        ys = [Fraction(t) for t in self._support.tolist()]
        vals = []
        for mass in self._masses(uniq):
            total = sum(mass)
            m1 = Fraction(sum(y * m for y, m in zip(ys, mass)), total)
            if order == 1:
                vals.append(float(m1))
            else:
                m2 = Fraction(sum(y * y * m for y, m in zip(ys, mass)), total)
                vals.append(float(m2 - m1 * m1))
        out = np.asarray(vals, dtype=np.float64)[inv].reshape(xa.shape)
        return float(out) if np.ndim(x) == 0 else out

    @property
    def std(self) -> float:
        raise LdpSimError(f"std: got a call on {self!r}, expected an input: the spread depends on x (use variance(x))")

    @property
    def mse(self) -> float:
        raise LdpSimError(
            f"mse: got a call on {self!r}, expected an input: the error depends on x (use mean(x), variance(x))"
        )

    def check_monotone(self, x: float, window: int = 2048) -> bool:
        """Whether the report is monotone in U* over ``window`` patterns on each side of every
        bisection end at input ``x`` (both signs). A faithful log (error < 1 ulp) can invert
        only values less than 2 ulps of ``ln u`` apart, i.e. patterns within ``2 |ln u| <=
        2046`` of each other: with the default window this makes every preimage an interval."""
        xc = float(self._clamp(self._scalar_x(x)))
        sup = self._support
        offs = np.arange(-window, window + 1, dtype=np.int64)
        for plus in (True, False):
            cuts = self._cuts(np.full(sup.size, xc), sup, plus)
            pats = np.clip(cuts[:, None] + offs[None, :], _P_LO, _P_ONE - 1)
            out = self._snap(np.array(xc), self.scale if plus else -self.scale, pats.reshape(-1).view(np.float64))
            d = np.diff(out.reshape(pats.shape), axis=1)
            if not bool(np.all(d >= 0) if plus else np.all(d <= 0)):
                return False
        return True

    # ------------------------------------------------------------------ privacy
    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """``delta = 0``: the implemented bound ``(1 + 12 b eta)/lambda + 2 eta`` (rounded up;
        a proven bound, not the exact eps); ``delta >= 1``: 0; in between
        :class:`~ldpsim.mechanisms.base.NotAvailable`."""
        if np.ndim(delta) != 0:
            arr = v.real_array(delta, "delta", "numbers in [0, 1]")
            return np.array([self.epsilon(float(d)) for d in arr.reshape(-1)]).reshape(arr.shape)
        d = v.delta(delta, "delta")
        e = _round_up(self.bound_for(self.lam, self._b))
        if d == 0.0:
            return e
        if d >= 1.0:
            return 0.0
        raise NotAvailable(
            f"delta: got {d!r}, expected 0 or 1 for {self!r} (below its pure eps bound {e!r} the delta curve is not "
            f"computed; available: epsilon(0.0) = {e!r}, delta(eps) = 0 for eps >= {e!r})"
        )

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        e = float(self.epsilon(0.0))
        t = np.asarray(t, dtype=np.float64)
        below = t < e
        if np.any(below):
            first = float(t[below].reshape(-1)[0])
            raise NotAvailable(
                f"eps: got {first!r}, expected eps >= {e!r} for {self!r} (below its pure eps bound the delta curve is "
                f"not computed; available: delta(eps) = 0 for eps >= {e!r})"
            )
        return np.full(t.shape, -np.inf)

    def delta(self, eps: ArrayLike, shift: float | None = None) -> float | NDArray[np.float64]:
        """0 at and above :meth:`epsilon`\\ ``(0)``; :class:`NotAvailable` below it."""
        if shift is not None:
            raise invalid("shift", shift, "None: the snapped law is not a shifted noise law (use exact_epsilon(pairs))")
        t, scalar = _eps_array(eps)
        return _out(np.exp(self._log_delta(t, self.sensitivity)), scalar)

    def _loss_sup(self, shift: float) -> float:
        return float(self.epsilon(0.0))

    def tradeoff(self, alpha: ArrayLike, shift: float | None = None) -> Any:
        raise NotAvailable(
            f"tradeoff: got a call on {self!r}, expected a mechanism with an exact trade-off curve (use guarantee())"
        )

    def guarantee(self) -> Any:
        """The pure eps-DP guarantee at the implemented bound (valid, not the exact curve)."""
        return EpsDelta(float(self.epsilon(0.0)), 0.0, label=f"{self!r} (pure eps bound)")

    def exact_epsilon(self, pairs: list[tuple[float, float]] | None = None) -> float:
        """The exact eps of the sampler as implemented for the input ``pairs`` (default
        :meth:`neighbours`): the largest ``|log P(y|x) - log P(y|x')|`` over every report
        ``y`` of the support, from the exact masses (the log ratio evaluated in mpmath at 40
        digits, then rounded to a float); ``inf`` when a report is possible under one input
        only."""
        import mpmath

        pairs = self.neighbours() if pairs is None else list(pairs)
        xs = sorted({float(self._clamp(self._scalar_x(x))) for pair in pairs for x in pair})
        table = dict(zip(xs, self._masses(np.array(xs))))
        worst = mpmath.mpf(0)
        with mpmath.workdps(40):
            for a, b in pairs:
                ma, mb = table[float(self._clamp(a))], table[float(self._clamp(b))]
                for p, q in zip(ma, mb):
                    if p == 0 and q == 0:
                        continue
                    if p == 0 or q == 0:
                        return math.inf
                    worst = max(worst, abs(mpmath.log(mpmath.mpf(p) / mpmath.mpf(q))))
            return float(worst)

    # ------------------------------------------------------------------ calibration
    @classmethod
    def _check_sensitivity(cls, sensitivity: object) -> float:
        return _power_of_two(sensitivity)

    @classmethod
    def calibrate(  # type: ignore[override]
        cls,
        eps: float,
        delta: float = 0.0,
        sensitivity: float = 1.0,
        compositions: int = 1,
        method: str = "exact",
        *,
        bound: float,
    ) -> "SnappedLaplace":
        """The snapped mechanism at ``bound`` whose implemented bound meets (eps, delta) for
        ``compositions`` releases (the pure-family calibration of :class:`NoiseMechanism`:
        one release needs ``delta = 0``)."""
        b = _positive(bound, "bound")

        class _AtBound(cls):  # type: ignore[valid-type, misc]
            @classmethod
            def _calibrate_single(k, e: float, d: float, s: float) -> "SnappedLaplace":
                _need_pure(d, "snapped Laplace")
                return SnappedLaplace(e, b, s)

        return super(SnappedLaplace, _AtBound).calibrate(eps, delta, sensitivity, compositions, method)  # type: ignore[misc]
