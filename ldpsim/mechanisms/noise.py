"""Noise-adding mechanisms for numeric queries (THEORY sec. 6 and 8).

A query ``f`` with sensitivity ``Delta`` is released as ``f(D) + Z`` with ``Z`` drawn from a
fixed noise law ``P``. For two neighbouring datasets the outputs are ``P`` and ``R``, the law
``P`` shifted by ``f(D') - f(D)``; the worst case is the full-sensitivity shift
``|f(D') - f(D)| = Delta`` (the exact ``delta(eps)`` is non-decreasing in the shift size for
every family here; the test-suite checks it on a grid of shifts), so all privacy quantities
below are those of the pair ``(P, P + Delta)`` unless a ``shift=`` is given.

Families (all share :class:`NoiseMechanism`):

* :class:`Laplace` -- ``Lap(scale)``;
* :class:`Gaussian` -- ``N(0, sigma^2)``, with the classical and the analytic (Balle-Wang
  2018) calibrations;
* :class:`TruncatedLaplace` -- Geng-Ding-Guo-Kumar 2020;
* :class:`Staircase` -- Geng-Viswanath staircase noise;
* :class:`Geometric` -- two-sided geometric noise for integer queries.

Numerical range: eps from the smallest floats to the hundreds (Staircase: up to 700), delta
down to 1e-300 and below (log scale); a noise scale (Laplace scale, Gaussian sigma,
sensitivity/eps) beyond :data:`MAX_NOISE_SCALE` is refused naming the parameter, and a
variance beyond the largest float raises an error naming it (``std`` stays available).

Every mechanism gives the *exact* privacy profile ``delta(eps)`` (and ``log_delta``), its
inverse ``epsilon(delta)``, the exact trade-off function ``tradeoff(alpha)`` (f-DP), the
variance / MSE, vectorised samplers, a ``calibrate`` classmethod, and the exact log density
of the noise ``log_pdf(y)`` / of the output ``log_density(x, y)`` (log space, for
likelihood-ratio tests).

Conventions. Privacy loss ``L(x) = log p(x)/r(x)`` (``p`` the density of ``P``, ``r`` of
``R``). Hockey-stick divergence ``E_g(P||R) = int (p - g r)_+``; ``delta(eps) =
max(E_{e^eps}(P||R), E_{e^eps}(R||P))``. All pairs here are symmetric (the reflection
``x -> shift - x`` maps ``P`` to ``R`` and back), so the two divergences agree and the
trade-off function ``T[P, R]`` is its own inverse -- it is already the symmetric f of f-DP.
Trade-off: the test rejects ``P`` (type I error ``alpha = E_P[phi]``, type II error
``beta = 1 - E_R[phi]``); ``tradeoff(alpha) = inf beta`` (Neyman-Pearson, randomised at atoms
of the likelihood ratio).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from ldpsim import _validate as v
from ldpsim._bisect import largest_ok, smallest_ok
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, invalid

if TYPE_CHECKING:  # imported lazily at run time: the privacy package imports mechanisms
    from ldpsim.privacy.guarantees import MechanismGuarantee
    from ldpsim.privacy.pld import DiscretePLD

__all__ = [
    "NoiseMechanism",
    "Laplace",
    "Gaussian",
    "TruncatedLaplace",
    "Staircase",
    "Geometric",
    "gdp_delta",
    "gdp_log_delta",
]

_SQRT2 = math.sqrt(2.0)
_METHODS = ("exact", "corollary")
_FLOAT_MAX = float(np.finfo(np.float64).max)
_LOG_FLOAT_MAX = math.log(_FLOAT_MAX)
#: Largest noise scale (Laplace scale, Gaussian sigma, sensitivity/eps): draws reach about 50
#: scales with probability 1e-22 and 1000 scales never, so they stay finite floats below it.
MAX_NOISE_SCALE = _FLOAT_MAX / 1024.0
#: numpy's geometric sampler returns int64 and saturates at 2^63 - 1 for p below ~1e-18; below
#: this p the geometric draws come from floor(E / rate), E ~ Exp(1) (the same law, in floats).
_GEOMETRIC_FLOAT_P = 2.0**-40


# --------------------------------------------------------------------------- validation
def _positive(value: object, name: str, *, finite: bool = True) -> float:
    expected = "a finite number > 0" if finite else "a number > 0"
    x = v._as_float(value, name, expected)
    if math.isnan(x) or x <= 0 or (finite and math.isinf(x)):
        raise invalid(name, value, expected)
    return x


def _scale(value: object, name: str) -> float:
    """A noise scale given directly: finite, > 0 and at most :data:`MAX_NOISE_SCALE`."""
    x = _positive(value, name)
    if x > MAX_NOISE_SCALE:
        raise invalid(name, value, f"a number in (0, {MAX_NOISE_SCALE:.4g}] (noise draws of this scale must stay finite floats)")
    return x


def _eps_for_scale(eps: float, sens: float, family: str) -> float:
    """``sensitivity / eps``, the noise scale of a family calibrated by eps; refuses eps below
    the supported range (``sensitivity / MAX_NOISE_SCALE``) naming eps."""
    lam = sens / eps
    if not lam <= MAX_NOISE_SCALE:
        raise invalid(
            "eps", eps, f"eps >= {sens / MAX_NOISE_SCALE:.4g} (sensitivity / {MAX_NOISE_SCALE:.4g}): below it the "
            f"{family} noise scale sensitivity/eps is beyond the float range of its draws"
        )
    return lam


def _open_delta(value: object, name: str = "delta", upper: float = 1.0) -> float:
    expected = f"a number in (0, {upper:g})"
    d = v._as_float(value, name, expected)
    if not (0.0 < d < upper):
        raise invalid(name, value, expected)
    return d


def _eps_array(eps: ArrayLike, name: str = "eps") -> tuple[NDArray[np.float64], bool]:
    """Validated eps values (>= 0, inf allowed) as a float array and whether it was scalar."""
    if np.ndim(eps) == 0:
        return np.array(v.epsilon(eps, name, allow_inf=True), dtype=np.float64), True
    arr = v._real_array(eps, name, "numbers >= 0")
    bad = np.flatnonzero(~(arr.reshape(-1) >= 0))  # negative or NaN
    if bad.size:
        i = int(bad[0])
        raise invalid(f"{name}[{i}]", float(arr.reshape(-1)[i]), "a number >= 0")
    return arr, False


def _alpha_array(alpha: ArrayLike) -> tuple[NDArray[np.float64], bool]:
    expected = "a number in [0, 1]"
    if np.ndim(alpha) == 0:
        a = v._as_float(alpha, "alpha", expected)
        if not (0.0 <= a <= 1.0):
            raise invalid("alpha", alpha, expected)
        return np.array(a, dtype=np.float64), True
    arr = v._real_array(alpha, "alpha", "numbers in [0, 1]")
    bad = np.flatnonzero(~((arr.reshape(-1) >= 0) & (arr.reshape(-1) <= 1)))
    if bad.size:
        i = int(bad[0])
        raise invalid(f"alpha[{i}]", float(arr.reshape(-1)[i]), expected)
    return arr, False


def _out(arr: NDArray[np.float64], scalar: bool) -> float | NDArray[np.float64]:
    return float(arr) if scalar else arr


def _method(method: object) -> str:
    if method not in _METHODS:
        raise invalid("method", method, "one of 'exact', 'corollary'")
    return str(method)


def _log(x: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.log(x)


def _log_expm1(x: ArrayLike) -> NDArray[np.float64]:
    """``log(e^x - 1)`` for x >= 0 without overflow (``-inf`` at 0)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 1.0, x + np.log1p(-np.exp(-np.maximum(x, 1.0))), np.log(np.expm1(np.minimum(x, 1.0))))


def _geometric_floats(rate: float, p: float, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
    """Draws of ``G`` with ``P(G >= j) = e^{-rate j}`` (``p = 1 - e^-rate``), as floats: numpy's
    int64 sampler for moderate p, else ``floor(E / rate)`` with ``E ~ Exp(1)``."""
    if p >= _GEOMETRIC_FLOAT_P:
        return (rng.geometric(p, size) - 1).astype(np.float64)
    return np.floor(rng.standard_exponential(size) / rate)


def _points(y: ArrayLike, name: str = "y") -> tuple[NDArray[np.float64], bool]:
    """Real evaluation points as a float64 array (NaN and +-inf allowed) and whether scalar."""
    return v._real_array(y, name, "real numbers"), np.ndim(y) == 0


# --------------------------------------------------------------------------- Gaussian helpers
#: Below this mu the profile is taken from the integral of the Mills-ratio gap (no cancellation).
_SMALL_MU = 1.0
#: Gauss-Legendre rule on [-1, 1] for that integral (20 nodes: the integrand is smooth and
#: slowly varying, and on intervals of length mu <= 1 the rule agrees with mpmath to rounding).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)
#: Laplace's continued fraction for the Mills ratio is used from here on (60 terms: 1e-17).
_CF_FROM = 3.0
_CF_TERMS = 60


def _mills_gap(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``psi(z) = 1/R(z) - z`` with ``R(z) = Phi(-z)/phi(z)`` the Mills ratio (``psi > 0``), to a
    few ulps: directly for ``z < 3`` (no cancellation for ``z < 0``, at most a factor 10 for
    ``0 <= z < 3``) and, beyond, from Laplace's continued fraction
    ``1/R(z) = z + 1/(z + 2/(z + 3/(z + ...)))``, i.e. ``psi(z) = 1/(z + 2/(z + 3/(z + ...)))``."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    near = z < _CF_FROM
    zn = z[near]
    with np.errstate(over="ignore", under="ignore"):
        # z < 0: phi(z)/Phi(-z) - z, both terms positive; 0 <= z < 3: 1/(sqrt(pi/2) erfcx(z/sqrt2)) - z
        direct_neg = np.exp(-0.5 * zn * zn) / math.sqrt(2.0 * math.pi) / special.ndtr(-zn) - zn
        direct_pos = 1.0 / (math.sqrt(math.pi / 2.0) * special.erfcx(zn / _SQRT2)) - zn
    out[near] = np.where(zn < 0, direct_neg, direct_pos)
    zf = z[~near]
    t = zf.copy()
    for n in range(_CF_TERMS, 1, -1):
        t = zf + n / t
    out[~near] = 1.0 / t
    return out


def _gdp_log_delta_small_mu(a: NDArray[np.float64], m: NDArray[np.float64]) -> NDArray[np.float64]:
    """The profile for ``mu <= 1`` as ``log Phi(a) + log(1 - e^s)`` with
    ``s = eps - log(Phi(a)/Phi(b)) = -int_{-a}^{-a+mu} psi(z) dz`` (since
    ``d/dt log Phi(t) = phi(t)/Phi(t) = psi(-t) - t`` and ``int_b^a (-t) dt = eps``): the integrand
    is positive, so ``s`` has full relative accuracy however small mu is; 20-point Gauss-Legendre."""
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    m = np.asarray(m, dtype=np.float64).reshape(-1)
    nodes = -a[:, None] + 0.5 * m[:, None] * (_GL_X[None, :] + 1.0)
    with np.errstate(divide="ignore", under="ignore"):
        # log(-s) in logs (s itself underflows when mu/|a| < 1e-308), then
        # log(1 - e^s) = log(-s) + log((1 - e^-x)/x), x = -s: -x/2 (+x^2/24) for tiny x
        log_x = math.log(0.5) + np.log(m) + np.log(_mills_gap(nodes) @ _GL_W)
        x = np.exp(log_x)
        tail = np.where(x < 1e-5, -0.5 * x + x * x / 24.0, np.log(-np.expm1(-x)) - log_x)
        return special.log_ndtr(a) + log_x + tail


def gdp_log_delta(eps: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """log of the mu-GDP privacy profile ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Evaluated without cancellation of tiny tails, with ``a = mu/2 - eps/mu`` and
    ``b = -mu/2 - eps/mu`` (so ``b^2/2 = a^2/2 + eps``):

    * ``mu <= 1``: ``log Phi(a) + log(1 - e^s)`` where ``s = -int_{-a}^{-b} psi`` is the integral
      of the positive gap ``psi(z) = 1/R(z) - z`` of the Mills ratio ``R`` (see
      :func:`_gdp_log_delta_small_mu`), exact to rounding for mu down to the smallest floats
      (the difference of the two terms cancels ``-log10(mu)`` digits in any direct form);
    * ``mu > 1``, ``a < 0``: ``delta = exp(-a^2/2) (erfcx(-a/sqrt2) - erfcx(-b/sqrt2)) / 2``
      (``erfcx`` the scaled complementary error function; the difference cancels about
      ``log10(1 + 2|a|/mu)`` digits, which the error bound :func:`_gdp_log_err` covers);
    * ``mu > 1``, ``a >= 0 > b``:
      ``delta = (erf(a/sqrt2) + erf(-b/sqrt2))/2 - (e^eps - 1) Phi(b)`` in logs.

    Works for eps in the hundreds and delta far below 1e-300 (log scale). Accuracy (checked
    against mpmath, tests/mechanisms/test_noise_extremes.py): absolute about
    1e-15 (4 + a^2 + |log delta|) in log delta. ``eps = inf`` gives ``-inf``.
    The Gaussian mechanism ``N(0, sigma^2)`` with shift ``D`` is ``D/sigma``-GDP and this is
    its exact profile.
    """
    t, m = np.broadcast_arrays(np.asarray(eps, dtype=np.float64), np.asarray(mu, dtype=np.float64))
    out = np.full(t.shape, -np.inf)
    fin = np.isfinite(t)
    with np.errstate(all="ignore"):
        a = m / 2.0 - t / m
        b = -m / 2.0 - t / m
        neg = fin & (a < 0)
        diff = special.erfcx(-a / _SQRT2) - special.erfcx(-b / _SQRT2)
        lneg = -0.5 * a * a + np.log(0.5 * diff)
        # a >= 0 > b: Phi(a) - Phi(b) = (erf(a/sqrt2) + erf(-b/sqrt2))/2 has no cancellation
        # minus (e^eps - 1) Phi(b), taken in logs: e^eps overflows past eps = 709.78
        log_first = np.log(0.5 * (special.erf(a / _SQRT2) + special.erf(-b / _SQRT2)))
        log_second = np.where(t > 0, t + np.log(-np.expm1(-t)) + special.log_ndtr(b), -np.inf)
        lpos = log_first + np.log(-np.expm1(np.minimum(log_second - log_first, 0.0)))
    out = np.where(neg, lneg, out)
    out = np.where(fin & ~neg, lpos, out)
    small = fin & (m <= _SMALL_MU) & np.isfinite(a)
    if np.any(small):
        out = np.array(out, dtype=np.float64)
        out[small] = _gdp_log_delta_small_mu(a[small], m[small])
    return out


def _gdp_log_err(eps: float, mu: float, ld: float | None = None) -> float:
    """A conservative bound on the absolute rounding error of :func:`gdp_log_delta` (used by
    the calibrations so that the *true* delta, not only the computed one, meets the target):
    the ``a^2/2`` exponent (``log Phi(a)``), the Mills-ratio integral (mu <= 1) or the erfcx
    difference (mu > 1), for ``a >= 0`` the ``1 - ...`` subtraction, and the rounding of the
    log itself (``ld``, the computed log delta, if known)."""
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    if ld is None:
        ld = float(gdp_log_delta(eps, mu))
    own = 1e-15 * abs(ld) if math.isfinite(ld) else 0.0
    if mu <= _SMALL_MU:
        return 1e-15 * (8.0 + a * a) + own
    if a < 0:
        e1, e2 = float(special.erfcx(-a / _SQRT2)), float(special.erfcx(-b / _SQRT2))
        return 1e-15 * (4.0 + a * a + (e1 + e2) / max(e1 - e2, 1e-300)) + own
    d = math.exp(ld)
    return 1e-15 * (4.0 + min(eps, 1.0) / max(d, 1e-300)) + own


def _gdp_ok(eps: float, mu: float, delta: float) -> bool:
    """mu-GDP meets (eps, delta), with the rounding error bound as a safety margin."""
    ld = float(gdp_log_delta(eps, mu))
    return ld + _gdp_log_err(eps, mu, ld) <= math.log(delta) and float(np.exp(ld)) <= delta


def _largest_ok_below(ok, x: float, what: str) -> float:
    """The largest float ``y <= x`` with ``ok(y)`` (``ok`` true on ``(0, y]``, false above),
    found by bracketing: steps down from ``x`` growing geometrically (``2^j`` ulps), then a
    bisection to the last float. At most about 120 + 60 calls of ``ok``, whatever the margin."""
    if ok(x):
        return x
    hi, step = x, 2.0**-52
    for _ in range(1100):
        lo = x * (1.0 - step) if step < 0.5 else hi * 0.5
        if lo <= 0.0:
            break
        if ok(lo):
            return largest_ok(ok, lo, hi, iters=200)
        hi, step = lo, step * 2.0
    raise LdpSimError(f"calibrate: could not meet {what} (numerical failure)")  # pragma: no cover


def gdp_delta(eps: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """The mu-GDP privacy profile ``delta(eps)`` (see :func:`gdp_log_delta`)."""
    return np.exp(gdp_log_delta(eps, mu))


# --------------------------------------------------------------------------- base class
class NoiseMechanism:
    """Base class: additive noise ``Z`` for a numeric query of sensitivity ``sensitivity``.

    Subclasses implement ``_log_delta(t, shift)`` (vectorised over ``t``), ``_tradeoff``,
    ``variance``, ``_sample``, ``_log_pdf`` (vectorised log density of the noise) and ``_calibrate_single`` / ``_calibrate_corollary``.
    Privacy quantities refer to the worst case, the full-sensitivity shift; ``shift=`` gives
    those of a smaller (or larger) shift.
    """

    family = "noise"
    #: whether the pair at full sensitivity is pure eps-DP by design
    pure = False

    sensitivity: float

    # ------------------------------------------------------------------ generic API
    def _shift(self, shift: object) -> float:
        if shift is None:
            return self.sensitivity
        return _positive(shift, "shift")

    def log_delta(self, eps: ArrayLike, shift: float | None = None) -> float | NDArray[np.float64]:
        """log of :meth:`delta` (``-inf`` where delta is exactly 0)."""
        t, scalar = _eps_array(eps)
        s = self._shift(shift)
        return _out(np.asarray(self._log_delta(t, s), dtype=np.float64), scalar)

    def delta(self, eps: ArrayLike, shift: float | None = None) -> float | NDArray[np.float64]:
        """Exact smallest delta such that ``(P, P + shift)`` is (eps, delta)-DP:
        ``max(E_{e^eps}(P||R), E_{e^eps}(R||P))``. The worst case over neighbours is the
        full-sensitivity shift (the default). ``eps`` scalar or array; ``inf`` allowed."""
        t, scalar = _eps_array(eps)
        s = self._shift(shift)
        return _out(np.exp(np.asarray(self._log_delta(t, s), dtype=np.float64)), scalar)

    def guarantee(self) -> "MechanismGuarantee":
        """This mechanism's exact privacy guarantee as a :class:`ldpsim.privacy.Guarantee`
        (for overlaying with others in :func:`ldpsim.privacy.plot.plot_regions`)."""
        from ldpsim.privacy.guarantees import MechanismGuarantee  # lazy: privacy imports mechanisms

        return MechanismGuarantee(self, label=repr(self))

    def _loss_sup(self, shift: float) -> float:
        """Largest finite privacy-loss value (inf if unbounded): delta is constant beyond it."""
        return math.inf

    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:
        """Smallest eps >= 0 with ``delta(eps) <= delta`` (``inf`` if none; for ``delta = 0``
        the pure eps). Bisection on floats; the returned eps always satisfies the bound."""
        if np.ndim(delta) == 0:
            return self._epsilon_scalar(v.delta(delta, "delta"))
        arr = v._real_array(delta, "delta", "numbers in [0, 1]")
        flat = arr.reshape(-1)
        for i, d in enumerate(flat.tolist()):
            if not (0.0 <= d <= 1.0):
                raise invalid(f"delta[{i}]", d, "a number in [0, 1]")
        return np.array([self._epsilon_scalar(d) for d in flat.tolist()]).reshape(arr.shape)

    def _epsilon_scalar(self, target: float) -> float:
        s = self.sensitivity
        ld = lambda t: float(self._log_delta(np.array(t), s))  # noqa: E731
        log_target = math.log(target) if target > 0 else -math.inf
        if ld(0.0) <= log_target and float(np.exp(ld(0.0))) <= target:
            return 0.0
        if ld(math.inf) > log_target:
            return math.inf
        hi = self._loss_sup(s)
        if not math.isfinite(hi):
            if target == 0.0:
                return math.inf
            hi = 1.0
            while ld(hi) > log_target:
                hi *= 2.0
        # both scales: delta() is exp(log_delta()), whose rounding may cross the target
        ok = lambda t: (lambda l: l <= log_target and float(np.exp(l)) <= target)(ld(t))  # noqa: E731
        if not ok(hi):  # pragma: no cover - rounding at the top of the bracket
            hi = float(np.nextafter(hi, math.inf))
        return smallest_ok(ok, 0.0, hi)

    def tradeoff(self, alpha: ArrayLike, shift: float | None = None) -> float | NDArray[np.float64]:
        """Exact trade-off function ``beta(alpha)`` of testing ``P`` against ``P + shift``
        (default: the sensitivity). Symmetric: ``tradeoff(tradeoff(alpha)) = alpha``."""
        a, scalar = _alpha_array(alpha)
        s = self._shift(shift)
        f = np.clip(np.asarray(self._tradeoff(a, s), dtype=np.float64), 0.0, None)
        f = np.minimum(f, 1.0 - a)
        return _out(f, scalar)

    def _log_variance(self) -> float:
        """Natural log of the variance (finite even where the variance overflows a float)."""
        raise NotImplementedError

    def _variance_direct(self) -> float:
        """The variance by its closed form (called only where it cannot overflow)."""
        return math.exp(self._log_variance())

    def _variance_refusal(self) -> tuple[str, float, str]:
        """(parameter, value, supported range) for the error when the variance overflows."""
        raise NotImplementedError

    @property
    def variance(self) -> float:
        """Variance of the noise. Raises :class:`~ldpsim.errors.LdpSimError` naming the
        parameter and its supported range when the variance exceeds the largest float (the
        mechanism itself stays usable: :attr:`std` and everything else are finite)."""
        lv = self._log_variance()
        if lv < _LOG_FLOAT_MAX - 1.0:
            return self._variance_direct()
        if lv < _LOG_FLOAT_MAX:
            try:
                return math.exp(lv)
            except OverflowError:  # pragma: no cover - rounding at the very top
                pass
        name, value, limit = self._variance_refusal()
        raise invalid(
            name, value, f"{limit} for a finite variance (the variance is about "
            f"10^{lv / math.log(10.0):.1f}, beyond the largest float; std = {math.exp(0.5 * lv):.6g} is available)"
        )

    @property
    def mse(self) -> float:
        """Mean squared error of the release; the noise is zero-mean, so the variance."""
        return self.variance

    @property
    def std(self) -> float:
        """Standard deviation of the noise (in log space where the variance over- or underflows)."""
        lv = self._log_variance()
        if -700.0 < lv < _LOG_FLOAT_MAX - 1.0:
            return math.sqrt(self._variance_direct())
        return math.exp(0.5 * lv)

    def sample_noise(self, size: Any = None, rng: RNGLike = None) -> float | NDArray[np.float64]:
        """Draw noise (float64) of the given numpy ``size``; a float when ``size`` is None."""
        g = as_generator(rng)
        out = np.asarray(self._sample(size if size is not None else (), g), dtype=np.float64)
        return float(out) if size is None else out

    def log_pdf(self, y: ArrayLike) -> float | NDArray[np.float64]:
        """Natural log of the density of the noise ``Z`` at ``y`` (for :class:`Geometric`: of
        its probability mass, on the integers). Exact, in log space: finite and accurate for
        ``|y|`` up to 1e6 and beyond and for eps in the hundreds; ``-inf`` off the support
        (and at ``y = +-inf``); NaN propagates. ``y`` array-like: a float64 array of the
        same shape; a scalar ``y`` gives a float."""
        arr, scalar = _points(y)
        with np.errstate(invalid="ignore"):
            out = np.asarray(self._log_pdf(arr), dtype=np.float64)
        return _out(np.where(np.isnan(arr), np.nan, out), scalar)

    def log_density(self, x: ArrayLike, y: ArrayLike) -> float | NDArray[np.float64]:
        """log density (mass for :class:`Geometric`) of the *output* ``x + Z`` at ``y`` given
        the input (query value) ``x``: ``log_pdf(y - x)``. ``x`` and ``y`` broadcast; ``x``
        must be finite. A float when both are scalars."""
        xa = v._real_array(x, "x", "finite real numbers")
        if not np.all(np.isfinite(xa)):
            raise invalid("x", x, "finite real numbers")
        ya, scalar = _points(y)
        with np.errstate(invalid="ignore"):
            d = ya - xa
        out = np.asarray(self.log_pdf(d), dtype=np.float64)
        return _out(out, scalar and np.ndim(x) == 0)

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> float | NDArray[np.float64]:
        """``values + noise`` elementwise (one noise draw per value, vectorised)."""
        x = v._real_array(values, "values", "real numbers")
        if not np.all(np.isfinite(x)):
            raise invalid("values", values, "finite real numbers")
        noise = self._sample(x.shape, as_generator(rng))
        out = x + np.asarray(noise, dtype=np.float64)
        return float(out) if np.ndim(values) == 0 else out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={val!r}" for k, val in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._params() == other._params()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self._params().items())))

    def _params(self) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    # ------------------------------------------------------------------ calibration
    @classmethod
    def calibrate(
        cls, eps: float, delta: float = 0.0, sensitivity: float = 1.0, k: int = 1, method: str = "exact"
    ) -> "NoiseMechanism":
        """The mechanism of this family with the least noise meeting (eps, delta)-DP for the
        k-fold composition of the same query (k = 1: one release).

        ``k = 1``: the exact calibration of the family (``method`` is only validated).
        ``k > 1``: ``method="corollary"`` -- Corollary 4.1 of seed 003 (THEORY sec. 6): each
        query is (eps0, delta0)-DP with ``eps0 = eps / sqrt(4 k log(e + eps/delta))``,
        ``delta0 = delta / (2k)`` (needs delta > 0). ``method="exact"`` -- Gaussian: GDP
        (k-fold is exactly ``sqrt(k) Delta/sigma``-GDP); pure families: the largest per-query
        eps0 whose exact optimal k-fold composition meets (eps, delta)
        (``ldpsim.privacy.composition.optimal_delta``); truncated Laplace: not available.
        """
        eps = _positive(eps, "eps")
        delta = v.delta(delta, "delta")
        sens = cls._check_sensitivity(sensitivity)
        k = v.integer(k, "k", minimum=1)
        method = _method(method)
        if k == 1:
            return cls._calibrate_single(eps, delta, sens)
        if method == "corollary":
            if not delta > 0:
                raise invalid("delta", delta, "a number in (0, 1] for method='corollary' (Corollary 4.1 needs delta > 0)")
            from ldpsim.privacy.composition import per_query_budget  # lazy: sibling package

            eps0, delta0 = per_query_budget(eps, delta, k)
            try:
                return cls._calibrate_corollary(eps0, delta0, sens)
            except LdpSimError as exc:
                raise LdpSimError(
                    f"{exc} (the per-query budget of Corollary 4.1 for eps = {eps:g}, delta = {delta:g}, k = {k}: "
                    f"eps0 = {eps0:.6g}, delta0 = {delta0:.6g})"
                ) from None
        return cls._calibrate_exact_composed(eps, delta, sens, k)

    @classmethod
    def _check_sensitivity(cls, sensitivity: object) -> float:
        return _positive(sensitivity, "sensitivity")

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "NoiseMechanism":
        raise NotImplementedError

    @classmethod
    def _calibrate_corollary(cls, eps0: float, delta0: float, sens: float) -> "NoiseMechanism":
        # pure families: per query (eps0, 0)-DP
        return cls._calibrate_single(eps0, 0.0, sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, k: int) -> "NoiseMechanism":
        """Pure families: largest eps0 with optimal_delta(eps0, 0, k, eps) <= delta.

        The delta of the composition increases continuously with eps0 (from 0 at eps0 = eps/k
        to 1), so the root of ``log optimal_delta - log delta`` in ``log eps0`` is bracketed and
        found by Brent's method (a dozen evaluations, each O(sqrt(k)) terms), then moved to the
        largest float at or below it that meets the target (bounded bracketing and bisection)."""
        from ldpsim.privacy.composition import optimal_delta  # lazy: sibling module

        if delta >= 1.0:
            raise invalid(
                "delta", delta, "a number in [0, 1) for the exact composed calibration (at delta = 1 every "
                "mechanism qualifies, so there is no least noise)"
            )
        if delta == 0.0:
            eps0 = eps / k  # at delta = 0 basic composition is exact
        else:
            log_target = math.log(delta)
            ok = lambda e0: float(optimal_delta(e0, 0.0, k, eps)) <= delta  # noqa: E731

            def g(log_e0: float) -> float:  # clipped below: log delta is -inf at eps0 <= eps/k
                d = float(optimal_delta(math.exp(log_e0), 0.0, k, eps))
                return max(math.log(d) if d > 0 else -math.inf, log_target - 1e3) - log_target

            lo, hi, factor = eps / k, eps, 16.0
            for _ in range(64):  # delta -> 1 as eps0 grows: a bracket exists for delta < 1
                if not ok(hi):
                    break
                lo, hi, factor = hi, factor * hi, min(factor * factor, 1e100)
            else:  # pragma: no cover - delta within rounding of 1
                raise invalid("delta", delta, "a number clearly below 1 for the exact composed calibration")
            if ok(lo) and lo > 0 and math.isfinite(g(math.log(lo))) and g(math.log(lo)) < 0 < g(math.log(hi)):
                root = optimize.brentq(g, math.log(lo), math.log(hi), xtol=1e-14, rtol=4 * np.finfo(float).eps)
                eps0 = _largest_ok_below(ok, min(max(math.exp(root), lo), hi), "the composed target")
            else:
                eps0 = largest_ok(ok, lo, hi, iters=200)
        if not eps0 > 0:
            raise invalid("eps", eps, f"a composed target whose per-query eps0 = {eps0!r} is > 0 (k = {k} is too large)")
        try:
            mech = cls._calibrate_single(eps0, 0.0, sens)
        except LdpSimError as exc:
            raise LdpSimError(f"{exc} (the per-query eps0 of the exact {k}-fold calibration for eps = {eps:g}, delta = {delta:g})") from None
        # guarantee: the mechanism's own pure eps meets the composed target
        for _ in range(64):
            e_own = float(mech.epsilon(0.0))
            good = (k * e_own <= eps) if delta == 0.0 else float(optimal_delta(e_own, 0.0, k, eps)) <= delta
            if good:
                return mech
            eps0 = float(np.nextafter(eps0, 0.0)) * (1 - 1e-15)
            mech = cls._calibrate_single(eps0, 0.0, sens)
        raise LdpSimError("calibrate: could not meet the composed target (numerical failure)")  # pragma: no cover


def _need_pure(delta: float, family: str) -> None:
    if delta != 0.0:
        raise invalid(
            "delta",
            delta,
            f"0 for a single {family} release (a pure eps-DP family; for delta > 0 use Gaussian or TruncatedLaplace, or k > 1)",
        )


# --------------------------------------------------------------------------- Laplace
class Laplace(NoiseMechanism):
    """Laplace noise ``Lap(scale)`` (density ``exp(-|x|/scale)/(2 scale)``).

    With ``mu = shift/scale``: ``delta(eps) = 1 - exp((eps - mu)/2)`` for ``eps < mu``, else 0
    (pure ``mu``-DP); trade-off ``1 - e^mu alpha`` (``alpha < e^-mu/2``),
    ``e^-mu/(4 alpha)`` (up to 1/2), ``e^-mu (1 - alpha)`` beyond; variance ``2 scale^2``.
    Worst case: the full-sensitivity shift.
    """

    family = "laplace"
    pure = True

    def __init__(self, scale: float, sensitivity: float = 1.0) -> None:
        self.scale = _scale(scale, "scale")
        self.sensitivity = _positive(sensitivity, "sensitivity")

    def _params(self) -> dict[str, Any]:
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        mu = shift / self.scale
        with np.errstate(all="ignore"):
            val = np.log(-np.expm1(np.minimum(t - mu, 0.0) / 2.0))
        return np.where(t < mu, val, -np.inf)

    def _loss_sup(self, shift: float) -> float:
        return shift / self.scale

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        # in logs: e^mu overflows past mu = 709.78 (and e^mu * 0 was NaN)
        mu = shift / self.scale
        with np.errstate(all="ignore"):
            log_a = np.log(a)
            low = -np.expm1(np.minimum(mu + log_a, 1.0))
            mid = np.exp(-mu - np.log(4.0) - log_a)
            high = np.exp(-mu) * (1.0 - a)
        return np.where(log_a < -mu - math.log(2.0), low, np.where(a <= 0.5, mid, high))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(exp(-|y|/scale) / (2 scale))
        return -np.abs(y) / self.scale - math.log(2.0 * self.scale)

    def _log_variance(self) -> float:
        return math.log(2.0) + 2.0 * math.log(self.scale)

    def _variance_direct(self) -> float:
        return 2.0 * self.scale**2

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "scale", self.scale, f"scale <= {math.sqrt(_FLOAT_MAX / 2.0):.4g}"

    @property
    def std(self) -> float:
        return _SQRT2 * self.scale  # finite: scale <= MAX_NOISE_SCALE

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        return rng.laplace(0.0, self.scale, size)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Laplace":
        _need_pure(delta, "Laplace")
        scale = _eps_for_scale(eps, sens, "Laplace")
        while sens / scale > eps:  # rounding: make the pure eps <= the target
            scale = float(np.nextafter(scale, math.inf))
        return cls(scale, sens)


# --------------------------------------------------------------------------- Gaussian
class Gaussian(NoiseMechanism):
    """Gaussian noise ``N(0, sigma^2)``; the pair at shift ``D`` is ``mu = D/sigma``-GDP.

    ``delta(eps) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    (Balle-Wang 2018, Thm 8), evaluated in log space (:func:`gdp_log_delta`); trade-off
    ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``; variance ``sigma^2``.
    Worst case: the full-sensitivity shift.
    """

    family = "gaussian"

    def __init__(self, sigma: float, sensitivity: float = 1.0) -> None:
        self.sigma = _scale(sigma, "sigma")
        self.sensitivity = _positive(sensitivity, "sensitivity")

    def _params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}

    @property
    def mu(self) -> float:
        """GDP parameter ``sensitivity / sigma``."""
        return self.sensitivity / self.sigma

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        return gdp_log_delta(t, shift / self.sigma)

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        mu = shift / self.sigma
        with np.errstate(all="ignore"):
            return special.ndtr(-special.ndtri(a) - mu)

    def composed_delta(self, eps: ArrayLike, k: int) -> float | NDArray[np.float64]:
        """Exact delta(eps) of the k-fold composition: ``sqrt(k) D/sigma``-GDP."""
        t, scalar = _eps_array(eps)
        k = v.integer(k, "k", minimum=1)
        return _out(gdp_delta(t, math.sqrt(k) * self.mu), scalar)

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log of exp(-y^2/(2 sigma^2)) / (sigma sqrt(2 pi)); z = y/sigma first (no overflow of y^2)
        z = y / self.sigma
        return -0.5 * z * z - math.log(self.sigma) - 0.5 * math.log(2.0 * math.pi)

    def _log_variance(self) -> float:
        return 2.0 * math.log(self.sigma)

    def _variance_direct(self) -> float:
        return self.sigma**2

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "sigma", self.sigma, f"sigma <= {math.sqrt(_FLOAT_MAX):.4g}"

    @property
    def std(self) -> float:
        return self.sigma

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        return rng.normal(0.0, self.sigma, size)

    @classmethod
    def classical(cls, eps: float, delta: float, sensitivity: float = 1.0) -> "Gaussian":
        """Dwork-Roth: ``sigma = Delta sqrt(2 log(1.25/delta)) / eps``, valid for ``0 < eps < 1``."""
        eps = _positive(eps, "eps")
        if not eps < 1.0:
            raise invalid("eps", eps, "a number in (0, 1) for the classical Gaussian calibration (use Gaussian.analytic)")
        delta = _open_delta(delta)
        sens = _positive(sensitivity, "sensitivity")
        sigma = sens * math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) / eps
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "eps", eps, f"a larger eps: sigma = sensitivity sqrt(2 log(1.25/delta))/eps = {sigma:.4g} is beyond "
                f"the largest supported noise scale {MAX_NOISE_SCALE:.4g}"
            )
        return cls(sigma, sens)

    @staticmethod
    def _largest_mu(eps: float, delta: float) -> float:
        """Largest mu with mu-GDP delta(eps) <= delta: root of the exact log-delta in log mu
        (brentq), then the largest float at or below it that meets the target with the
        rounding-error margin of :func:`_gdp_ok` (bracketing and bisection, bounded)."""
        log_target = math.log(delta)
        g = lambda lm: float(gdp_log_delta(eps, math.exp(lm))) - log_target  # noqa: E731
        lo, hi = -1.0, 1.0
        while g(lo) > 0:
            lo -= 2.0
        while g(hi) < 0:
            hi += 2.0
        lm = optimize.brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        return _largest_ok_below(lambda mu: _gdp_ok(eps, mu, delta), math.exp(lm), "delta")

    @classmethod
    def analytic(cls, eps: float, delta: float, sensitivity: float = 1.0) -> "Gaussian":
        """Analytic Gaussian (Balle-Wang 2018): the smallest sigma whose exact
        ``delta(eps) <= delta`` (root finding on the exact log-delta, then checked)."""
        eps = _positive(eps, "eps")
        delta = _open_delta(delta)
        sens = _positive(sensitivity, "sensitivity")
        return cls._from_mu(eps, delta, sens, Gaussian._largest_mu(eps, delta), k=1)

    @classmethod
    def _from_mu(cls, eps: float, delta: float, sens: float, mu_total: float, k: int) -> "Gaussian":
        rk = math.sqrt(k)
        sigma = rk * sens / mu_total
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "delta", delta, f"a larger delta (or eps): the calibrated sigma = sqrt(k) sensitivity/mu = {sigma:.4g} "
                f"is beyond the largest supported noise scale {MAX_NOISE_SCALE:.4g}"
            )
        for _ in range(64):  # rounding of sqrt(k) sens / sigma: a few ulps at most
            if _gdp_ok(eps, rk * (sens / sigma), delta):
                return cls(sigma, sens)
            sigma = float(np.nextafter(sigma, math.inf)) * (1.0 + 2.0**-52)
        raise LdpSimError("calibrate: could not meet delta (numerical failure)")  # pragma: no cover

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Gaussian":
        if not 0.0 < delta < 1.0:
            raise invalid("delta", delta, "a number in (0, 1) for the Gaussian mechanism")
        return cls.analytic(eps, delta, sens)

    @classmethod
    def _calibrate_corollary(cls, eps0: float, delta0: float, sens: float) -> "Gaussian":
        # Corollary 4.1 / THEORY sec. 6: sigma^2 = 2 Delta^2 log(2/delta0) / eps0^2 (log(2/delta0)
        # in two terms: delta0 = delta/(2k) may be subnormal, 2/delta0 overflow)
        sigma = sens * math.sqrt(2.0 * (math.log(2.0) - math.log(delta0))) / eps0
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "eps", eps0, f"a larger per-query eps0: the Corollary 4.1 sigma = {sigma:.4g} is beyond the largest "
                f"supported noise scale {MAX_NOISE_SCALE:.4g}"
            )
        return cls(sigma, sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, k: int) -> "Gaussian":
        if not 0.0 < delta < 1.0:
            raise invalid("delta", delta, "a number in (0, 1) for the Gaussian mechanism")
        return cls._from_mu(eps, delta, sens, Gaussian._largest_mu(eps, delta), k=k)


# --------------------------------------------------------------------------- truncated Laplace
class TruncatedLaplace(NoiseMechanism):
    """Truncated Laplace (Geng-Ding-Guo-Kumar 2020): density ``propto exp(-|x| eps/Delta)`` on
    ``[-A, A]``, ``A = (Delta/eps) log(1 + (e^eps - 1)/(2 delta))``; (eps, delta)-DP exactly
    (the mass without counterpart after a shift by Delta is exactly delta). ``0 < delta < 1/2``.

    Exact profile (units of ``lambda = Delta/eps``: ``y = x/lambda``, ``K = A/lambda``,
    ``u = shift/lambda``, ``q = e^-K``, ``C = 1/(2(1-q))`` so the density is ``C e^-|y|``;
    ``G`` its CDF): for ``u >= 2K`` delta = 1, else, at ``t = eps'``,

    * mass of P where R has none: ``G(u - K)``;
    * on ``[u-K, 0]`` (if ``u < K``) the loss is ``u``: ``(1 - e^{t-u})_+ C (1 - e^{u-K})``;
    * on ``[lo, hi] = [max(0, u-K), min(u, K)]`` the loss is ``u - 2y``, above t for
      ``y < y* = (u-t)/2``; with ``w = min(y*, hi) > lo``:
      ``C (e^-lo - e^-w) - e^t C (e^{w-u} - e^{lo-u})``;
    * on ``[u, K]`` the loss is ``-u < t``: nothing.

    Worst case: the full-sensitivity shift. Trade-off: the density is log-concave, so the
    likelihood ratio is monotone and threshold tests are optimal:
    ``f(alpha) = G(G^-1(1 - alpha) - u)``. Variance
    ``lambda^2 (2 - q (K^2 + 2K + 2)) / (1 - q)``.
    """

    family = "truncated_laplace"

    def __init__(self, eps: float, delta: float, sensitivity: float = 1.0) -> None:
        self.eps = _positive(eps, "eps")
        self.delta_param = _open_delta(delta, "delta", 0.5)
        self.sensitivity = _positive(sensitivity, "sensitivity")
        self.lam = _eps_for_scale(self.eps, self.sensitivity, "truncated Laplace")
        for _ in range(4):  # rounding: the loss at the full shift, sensitivity/lam, must not exceed eps
            if self.sensitivity / self.lam <= self.eps:
                break
            self.lam = float(np.nextafter(self.lam, math.inf))
        # K = log(1 + (e^eps - 1)/(2 delta)), in log space
        self._set_K(float(np.logaddexp(0.0, float(_log_expm1(self.eps)) - math.log(2.0 * self.delta_param))))
        # K is rounded (by up to ~K ulps through e^eps): raise it by the few ulps needed for the
        # float mechanism itself to meet its claim, the mass without counterpart <= delta (with
        # the rounding margin of that mass), so that epsilon(delta) <= eps, not inf
        for step in range(1, 64):
            if self._meets(self.delta_param):
                break
            self._set_K(self.K * (1.0 + 2.0**-52 * step))

    def _meets(self, delta: float) -> bool:
        """The computed delta at the full shift and eps', the mass without counterpart (constant
        for eps' >= eps), is <= delta in both scales, with a margin for the rounding of K
        (about 1e-16 K) and of the log itself (an ulp of |log delta|): so the float mechanism
        truly meets delta and ``epsilon(delta)`` finds it."""
        ld = self._log_piece1(self.sensitivity / self.lam)
        return ld + 4e-16 * (self.K + 4.0) + 2.3e-16 * abs(ld) <= math.log(delta) and math.exp(ld) <= delta

    def _set_K(self, K: float) -> None:
        self.K = K
        self.bound = self.lam * self.K  #: the truncation point A
        self._q = math.exp(-self.K)
        self._one_q = -math.expm1(-self.K)
        self._C = 0.5 / self._one_q

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "delta": self.delta_param, "sensitivity": self.sensitivity}

    def _cdf_y(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # G(y) = C (e^y - e^-K) = expm1(y + K) / (2 expm1(K)) for -K < y <= 0, symmetric above:
        # in logs (e^K overflows for tiny delta at large eps; for tiny K, e^y and e^-K both round to 1)
        K = self.K
        log_den = float(_log_expm1(K))
        yc = np.clip(np.asarray(y, dtype=np.float64), -K, K)
        with np.errstate(all="ignore"):
            neg = 0.5 * np.exp(_log_expm1(np.maximum(yc + K, 0.0)) - log_den)
            pos = 1.0 - 0.5 * np.exp(_log_expm1(np.maximum(K - yc, 0.0)) - log_den)
        out = np.where(yc <= 0, neg, pos)
        return np.where(y <= -K, 0.0, np.where(y >= K, 1.0, out))

    def cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF of the noise."""
        return self._cdf_y(np.asarray(x, dtype=np.float64) / self.lam)

    def _log_piece1(self, u: float) -> float:
        """log of the mass of P with no counterpart under R, ``G(u - K)`` (log space: for tiny
        delta, ``q = e^-K`` is subnormal)."""
        K = self.K
        if u <= K:  # C (e^{u-K} - e^-K) = C expm1(u) e^-K (expm1 in logs: u = eps past 709)
            return math.log(self._C) + float(_log_expm1(u)) - K
        # 1 - G(K - (u - K)) = 1 - expm1(2K - u) / (2 expm1(K))
        return math.log1p(-0.5 * math.exp(float(_log_expm1(2.0 * K - u)) - float(_log_expm1(K))))

    def _rest(self, t: NDArray[np.float64], u: float) -> NDArray[np.float64]:
        """Contribution of the overlap of the supports (pieces 2a and 2b), linear scale."""
        K, C = self.K, self._C
        with np.errstate(all="ignore"):
            p2a = np.zeros_like(t)
            if u < K:
                p2a = np.clip(-np.expm1(t - u), 0.0, None) * C * (-math.expm1(u - K))
            lo, hi = max(0.0, u - K), min(u, K)
            w = np.minimum((u - t) / 2.0, hi)
            on = w > lo
            w = np.where(on, w, lo)
            # C (e^-lo - e^-w) - e^t C (e^{w-u} - e^{lo-u}) = C e^-lo (1 - e^-d)(1 - e^y) with
            # d = w - lo >= 0 and y = t + w + lo - u <= 0: a product of positive factors (no
            # cancellation for tiny d, no overflow of e^t for t past 709)
            d = w - lo
            y = np.minimum(t + w + lo - u, 0.0)
            p2b = C * math.exp(-lo) * (-np.expm1(-d)) * (-np.expm1(y))
            p2b = np.where(on, np.clip(p2b, 0.0, None), 0.0)
        return p2a + p2b

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        u = shift / self.lam
        t = np.asarray(t, dtype=np.float64)
        if u >= 2 * self.K:
            return np.zeros_like(t)
        out = np.logaddexp(self._log_piece1(u), _log(self._rest(t, u)))
        return np.minimum(out, 0.0)

    def _loss_sup(self, shift: float) -> float:
        return shift / self.lam

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        u = shift / self.lam
        K = self.K
        log_em1 = float(_log_expm1(K))
        with np.errstate(all="ignore"):
            # c = G^-1(1 - alpha): 1 - G(c) = expm1(K - c) / (2 expm1(K)) for c >= 0, so
            # c = K - log1p(2 alpha expm1(K)) (alpha <= 1/2), and symmetrically below (in logs)
            c_hi = K - np.logaddexp(0.0, np.log(2.0 * a) + log_em1)
            c_lo = np.logaddexp(0.0, np.log(2.0 * (1.0 - a)) + log_em1) - K
            c = np.where(a <= 0.5, c_hi, c_lo)
        return self._cdf_y(c - u)

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # density C e^{-|y|/lam} / lam on |y|/lam <= K (the support used by the CDF), else 0;
        # log C = -log 2 - log(1 - e^-K) with 1 - e^-K taken as -expm1(-K)
        u = np.abs(y) / self.lam
        inside = -u + (math.log(self._C) - math.log(self.lam))
        return np.where(u <= self.K, inside, -np.inf)

    def _log_ratio(self) -> float:
        """log of ``R(K) = (2 - e^-K (K^2 + 2K + 2)) / (1 - e^-K) = E y^2`` for the truncated
        Exp(1) law on [0, K]: ``2 P(3, K) / (1 - e^-K)`` (regularised incomplete gamma, no
        cancellation), or its series ``K^2 (1/3 - K/12 + ...)`` for small K."""
        K = self.K
        if K < 0.05:
            series = 1 / 3 - K / 12 + K**2 / 360 + K**3 / 720 - K**4 / 15120 - K**5 / 30240 + K**6 / 604800 + K**7 / 1209600
            return 2.0 * math.log(K) + math.log(series)
        return math.log(2.0 * float(special.gammainc(3.0, K))) - math.log(self._one_q)

    def _log_variance(self) -> float:
        return 2.0 * math.log(self.lam) + self._log_ratio()

    def _variance_direct(self) -> float:
        return math.exp(self._log_variance())  # lam^2 alone may overflow (tiny eps, tiny K)

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "eps", self.eps, "a larger eps (the variance grows like (sensitivity/eps)^2)"

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        uu = rng.random(size)
        sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
        y = -np.log1p(-uu * self._one_q)  # truncated Exp(1) on [0, K]
        return sign * self.lam * y

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "TruncatedLaplace":
        if not 0.0 < delta < 0.5:
            raise invalid("delta", delta, "a number in (0, 0.5) for the truncated Laplace mechanism")
        # the constructor makes the float mechanism meet its own delta; start one rounding unit
        # below the target so that the ideal mechanism with the reported parameters does too
        d = delta * (1.0 - 2.0**-52)
        for step in range(1, 200):
            mech = cls(eps, d, sens)
            if mech._meets(delta):  # delta(eps) is the mass without counterpart
                return mech
            d = d * (1.0 - 2.0**-52 * step)
        raise LdpSimError("calibrate: could not meet delta (numerical failure)")  # pragma: no cover

    @classmethod
    def _calibrate_corollary(cls, eps0: float, delta0: float, sens: float) -> "TruncatedLaplace":
        return cls._calibrate_single(eps0, min(delta0, float(np.nextafter(0.5, 0.0))), sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, k: int) -> "TruncatedLaplace":
        raise invalid(
            "method", "exact", "'corollary' for k > 1 with TruncatedLaplace (no exact composition is implemented)"
        )


# --------------------------------------------------------------------------- atom-based families
class _AtomMechanism(NoiseMechanism):
    """Families whose privacy loss has finitely many values (atoms): delta and the
    trade-off are exact finite sums over the atoms ``(L_i, P(L = L_i), R(L = L_i))``."""

    def _atoms(self, shift: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        raise NotImplementedError

    def loss_atoms(self, shift: float | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The privacy-loss law: values ``L`` (ascending), their P-masses and R-masses."""
        return self._atoms(self._shift(shift))

    def pld(self, shift: float | None = None) -> "DiscretePLD":
        """The exact privacy-loss law as a :class:`ldpsim.privacy.DiscretePLD` (composes
        exactly with :meth:`DiscretePLD.self_compose`)."""
        from ldpsim.privacy.pld import DiscretePLD  # lazy: the privacy package imports mechanisms

        L, log_p, log_r = self._log_atoms(self._shift(shift))
        both = np.isfinite(log_p) & np.isfinite(log_r)
        P, R = np.exp(log_p), np.exp(log_r)
        return DiscretePLD.from_atoms(L[both], log_p[both], float(P[~np.isfinite(log_r)].sum()), float(R[~np.isfinite(log_p)].sum()))

    def _log_atoms(self, shift: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The atoms with log masses (families whose masses underflow override this)."""
        L, P, R = self._atoms(shift)
        return L, _log(P), _log(R)

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        return np.asarray(self.pld(shift).log_delta(np.asarray(t, dtype=np.float64)))

    def _loss_sup(self, shift: float) -> float:
        L, P, _ = self._atoms(shift)
        return float(np.max(L[P > 0]))

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        return np.asarray(self.pld(shift).tradeoff(a))


#: Largest eps of :class:`Staircase`: its privacy-loss atoms and density use ``b = e^-eps``,
#: which leaves the normal floats past eps = 708.
STAIRCASE_MAX_EPS = 700.0


def _optimal_gamma(eps: float) -> float:
    """Variance-optimal staircase gamma (Geng-Viswanath 2016, IEEE T-IT 62(2), Thm 7):
    ``gamma* = -b/(1-b) + (b - 2b^2 + 2b^4 - b^5)^{1/3} / (2^{1/3} (1-b)^2)``, ``b = e^-eps``
    (clipped to [0, 1]; the tests check it against numerical minimisation of the variance).

    The closed form cancels for small eps (``b - 2b^2 + 2b^4 - b^5 ~ eps^3``, and
    ``(1 - b)^2`` underflows below eps ~ 1e-154): up to eps = 0.5 its Taylor series
    ``1/2 - eps/12 + eps^5/12960 - eps^7/145152 + ...`` (to eps^15, exact to rounding there)."""
    if eps <= 0.5:
        e2 = eps * eps
        # odd powers from eps^5 on (Horner in e2): 1/12960, -1/145152, 1/1866240, -433/10346434560, ...
        tail = eps**5 * (
            1 / 12960 + e2 * (-1 / 145152 + e2 * (1 / 1866240 + e2 * (-433 / 10346434560 + e2 * (103 / 30569011200 - e2 * 521 / 1862358220800))))
        )
        return 0.5 - eps / 12.0 + tail
    if eps > 50.0:  # b < 2e-22: gamma* = (b/2)^(1/3) (1 + O(b^(2/3))), in log space (b underflows past 745)
        return min(math.exp(-(eps + math.log(2.0)) / 3.0), 1.0)
    b = math.exp(-eps)
    one_b = -math.expm1(-eps)
    inner = b - 2 * b**2 + 2 * b**4 - b**5
    g = -b / one_b + (max(inner, 0.0)) ** (1.0 / 3.0) / (2.0 ** (1.0 / 3.0) * one_b**2)
    return min(max(g, 0.0), 1.0)


class Staircase(_AtomMechanism):
    """Staircase noise (Geng-Viswanath): ``b = e^-eps``,
    ``a = (1-b) / (2 Delta (gamma + (1-gamma) b))``, density ``a`` on ``[0, gamma Delta)``,
    ``a b`` on ``[gamma Delta, Delta)``, ``f(x) = b^j f(x - j Delta)`` on
    ``[j Delta, (j+1) Delta)``, symmetric. ``gamma=None``: the variance-optimal gamma
    (:func:`_optimal_gamma`, Geng-Viswanath Thm 7).

    Privacy loss at shift Delta: ``+eps, 0, -eps`` with P-masses
    ``P(+eps) = 1/2 + a Delta min(gamma, 1-gamma)``, ``P(0) = a Delta |1 - 2 gamma| b^[gamma<=1/2]``,
    ``P(-eps) = 1 - P(+eps) - P(0)``; R-masses ``e^-L`` times these; so
    ``delta(t) = P(+eps)(1 - e^{t - eps})`` for ``t < eps``, else 0. For other shifts the
    density ratio is piecewise constant and periodic (ratio ``b``) outside ``[0, shift]``: the
    atoms are summed exactly over one period with geometric factor ``1/(1-b)``; the loss
    values are integer multiples of eps (computed exactly). Variance, via
    ``|X| = Delta (G + W)``: ``Delta^2 (E G^2 + 2 E G E W + E W^2)`` with
    ``E G = b/(1-b)``, ``E G^2 = b(1+b)/(1-b)^2``, ``p0 = gamma/(gamma + (1-gamma) b)``,
    ``E W = p0 gamma/2 + (1-p0)(1+gamma)/2``, ``E W^2 = p0 gamma^2/3 + (1-p0)(1+gamma+gamma^2)/3``.
    Worst case: the full-sensitivity shift.
    """

    family = "staircase"
    pure = True

    def __init__(self, eps: float, sensitivity: float = 1.0, gamma: float | None = None) -> None:
        self.eps = _positive(eps, "eps")
        if self.eps > STAIRCASE_MAX_EPS:  # b = e^-eps must stay a normal float for the atoms of the loss
            raise invalid("eps", eps, f"a number in (0, {STAIRCASE_MAX_EPS:g}] for the staircase mechanism")
        self.sensitivity = _positive(sensitivity, "sensitivity")
        _eps_for_scale(self.eps, self.sensitivity, "staircase")
        if gamma is None:
            gamma = _optimal_gamma(self.eps)
        else:
            g = v._as_float(gamma, "gamma", "a number in [0, 1] or None")
            if not 0.0 <= g <= 1.0:
                raise invalid("gamma", gamma, "a number in [0, 1] or None")
            gamma = g
        self.gamma = float(gamma)
        self.b = math.exp(-self.eps)
        self._one_b = -math.expm1(-self.eps)
        D = self.sensitivity
        self.a = self._one_b / (2.0 * D * (self.gamma + (1.0 - self.gamma) * self.b))
        self._cache: dict[float, tuple] = {}

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "sensitivity": self.sensitivity, "gamma": self.gamma}

    def _exponent(self, x: NDArray[np.float64]) -> NDArray[np.int64]:
        """m(x) with f(x) = a b^m(x)."""
        D = self.sensitivity
        ax = np.abs(x)
        j = np.floor(ax / D)
        r = ax - j * D
        return (j + (r >= self.gamma * D)).astype(np.int64)

    def density(self, x: ArrayLike) -> NDArray[np.float64]:
        """The staircase density."""
        m = self._exponent(np.asarray(x, dtype=np.float64))
        return self.a * np.exp(-self.eps * m)

    @property
    def _log_a(self) -> float:
        """log a = log(1 - b) - log(2 Delta) - log(gamma + (1 - gamma) b), in log space (b = e^-eps
        underflows for eps > 745, where ``a`` itself may overflow)."""
        g = self.gamma
        log_g = math.log(g) if g > 0 else -math.inf
        log_rest = math.log1p(-g) - self.eps if g < 1 else -math.inf
        return math.log(self._one_b) - math.log(2.0 * self.sensitivity) - float(np.logaddexp(log_g, log_rest))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(a b^m(y)) = log a - eps m(y); m(y) as in _exponent, in float (no int overflow)
        D = self.sensitivity
        fin = np.isfinite(y)
        ay = np.abs(np.where(fin, y, 0.0))
        j = np.floor(ay / D)
        r = ay - j * D
        m = j + (r >= self.gamma * D)
        return np.where(fin, self._log_a - self.eps * m, -np.inf)

    def _pieces(self, lo: float, hi: float, shift: float) -> tuple[NDArray, NDArray]:
        D, g = self.sensitivity, self.gamma
        js = np.arange(math.floor((lo - shift) / D) - 2, math.ceil(hi / D) + 3, dtype=np.float64)
        base = np.concatenate([js * D, js * D + g * D, js * D - g * D])
        pts = np.concatenate([base, base + shift, [lo, hi]])
        # exact duplicates only: a spurious piece one ulp wide (two breakpoints equal in exact
        # arithmetic, rounded apart) carries negligible mass and a genuine loss value, whereas
        # merging by a tolerance would lose genuine thin steps (gamma near 0 or 1)
        pts = np.unique(pts[(pts >= lo) & (pts <= hi)])
        return pts[:-1], np.diff(pts)

    def _atoms(self, shift: float):
        if shift in self._cache:
            return self._cache[shift]
        D = self.sensitivity
        ns, Ps, Rs = [], [], []
        for lo, hi, weight in ((-D, 0.0, 1.0 / self._one_b), (0.0, shift, 1.0), (shift, shift + D, 1.0 / self._one_b)):
            if hi <= lo:
                continue
            start, length = self._pieces(lo, hi, shift)
            mid = start + length / 2.0
            mp = self._exponent(mid)
            mr = self._exponent(mid - shift)
            ns.append(mr - mp)
            # a b^m in log space: a ~ e^eps / 2 for gamma = 0, whose product with b^2 would underflow
            log_w = math.log(weight) + self._log_a
            Ps.append(np.exp(log_w - self.eps * mp) * length)
            Rs.append(np.exp(log_w - self.eps * mr) * length)
        n = np.concatenate(ns)
        P = np.concatenate(Ps)
        R = np.concatenate(Rs)
        uniq, inv = np.unique(n, return_inverse=True)
        res = (uniq * self.eps, np.bincount(inv, weights=P), np.bincount(inv, weights=R))
        if len(self._cache) < 64:
            self._cache[shift] = res
        return res

    def _log_variance(self) -> float:
        return self._log_variance_of(self.gamma)

    def _variance_direct(self) -> float:
        return self._variance_of(self.gamma)

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "eps", self.eps, f"eps >= about {self.sensitivity * math.sqrt(2.0 / _FLOAT_MAX):.3g} (variance ~ 2 (sensitivity/eps)^2)"

    def _moments(self, gamma: float) -> tuple[float, float]:
        p0 = gamma / (gamma + (1.0 - gamma) * self.b)
        EW = p0 * gamma / 2.0 + (1.0 - p0) * (1.0 + gamma) / 2.0
        EW2 = p0 * gamma**2 / 3.0 + (1.0 - p0) * (1.0 + gamma + gamma**2) / 3.0
        return EW, EW2

    def _variance_of(self, gamma: float) -> float:
        b, one_b, D = self.b, self._one_b, self.sensitivity
        if math.log(one_b) < -300.0:  # (1 - b)^2 underflows: through the log form
            return math.exp(self._log_variance_of(gamma))
        EW, EW2 = self._moments(gamma)
        EG = b / one_b
        EG2 = b * (1.0 + b) / one_b**2
        return D * D * (EG2 + 2.0 * EG * EW + EW2)

    def _log_variance_of(self, gamma: float) -> float:
        """log of the variance with the factor ``1/(1 - b)^2`` taken out (it overflows for eps
        below ~1e-154): ``D^2 (b(1+b) + 2 b (1-b) EW + (1-b)^2 EW2) / (1-b)^2``."""
        b, one_b, D = self.b, self._one_b, self.sensitivity
        EW, EW2 = self._moments(gamma)
        inner = b * (1.0 + b) + 2.0 * b * one_b * EW + one_b * one_b * EW2
        return 2.0 * math.log(D) + math.log(inner) - 2.0 * math.log(one_b)

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        g, b = self.gamma, self.b
        sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
        G = _geometric_floats(self.eps, self._one_b, size, rng)
        U = rng.random(size)
        p0 = g / (g + (1.0 - g) * b)
        B = rng.random(size) >= p0  # B = 1 with probability 1 - p0
        inner = np.where(B, G + g + (1.0 - g) * U, G + g * U)
        return sign * self.sensitivity * inner

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Staircase":
        _need_pure(delta, "Staircase")
        return cls(eps, sens)


class Geometric(_AtomMechanism):
    """Two-sided geometric noise on the integers: ``p(z) = (1-a)/(1+a) a^|z|``,
    ``a = e^{-eps/sensitivity}``, integer sensitivity; eps-DP at the full shift.

    Privacy loss at integer shift s: ``(eps/D)(|z-s| - |z|)``, i.e. ``(eps/D) s`` for
    ``z <= 0`` (P-mass ``1/(1+a)``, R-mass ``a^s/(1+a)``), ``(eps/D)(s - 2z)`` for
    ``0 < z < s`` (P-mass ``c a^z``, R-mass ``c a^{s-z}``, ``c = (1-a)/(1+a)``), and
    ``-(eps/D) s`` for ``z >= s`` (P-mass ``a^s/(1+a)``, R-mass ``1/(1+a)``) -- geometric
    series; at ``s = D`` the values are ``eps (D - 2z)/D`` clipped at ``+-eps``.
    Variance ``2a/(1-a)^2`` (``1/(2 sinh^2(eps/2))`` at sensitivity 1). Worst case: the
    full-sensitivity shift. The trade-off randomises at each atom (piecewise linear).
    """

    family = "geometric"
    pure = True

    def __init__(self, eps: float, sensitivity: int = 1) -> None:
        self.eps = _positive(eps, "eps")
        self.sensitivity = Geometric._check_sensitivity(sensitivity)
        _eps_for_scale(self.eps, self.sensitivity, "geometric")
        self.log_a = -self.eps / self.sensitivity
        self.a = math.exp(self.log_a)
        self._one_a = -math.expm1(self.log_a)
        self._cache: dict[int, tuple] = {}

    @classmethod
    def _check_sensitivity(cls, sensitivity: object) -> int:  # type: ignore[override]
        return v.integer(sensitivity, "sensitivity", minimum=1)

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "sensitivity": self.sensitivity}

    def _shift(self, shift: object) -> float:
        if shift is None:
            return self.sensitivity
        return v.integer(shift, "shift", minimum=1)

    def pmf(self, z: ArrayLike) -> NDArray[np.float64]:
        z = np.asarray(z)
        return self._one_a / (1.0 + self.a) * np.exp(self.log_a * np.abs(z))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log pmf: log(1-a) - log(1+a) + log(a) |z| on the integers, -inf elsewhere
        z = np.abs(y)
        integer = np.isfinite(z) & (np.floor(z) == z)
        c = math.log(self._one_a) - math.log1p(self.a)
        return np.where(integer, c + self.log_a * np.where(integer, z, 0.0), -np.inf)

    def _log_atoms(self, shift: float):
        # log masses: a^s underflows for eps/D * s past 745 (R(+eps) = a^s/(1+a) is tiny, not 0,
        # and the loss stays bounded by eps: in linear scale it looked like mass without counterpart)
        s = int(shift)
        if s in self._cache:
            return self._cache[s]
        la, D = self.log_a, self.sensitivity
        l1a = math.log1p(self.a)
        lc = math.log(self._one_a) - l1a
        z = np.arange(1, s, dtype=np.float64)
        n = np.concatenate([[s], s - 2 * z, [-s]]).astype(np.float64)
        log_p = np.concatenate([[-l1a], lc + la * z, [la * s - l1a]])
        log_r = np.concatenate([[la * s - l1a], lc + la * (s - z), [-l1a]])
        order = np.argsort(n, kind="stable")
        res = (self.eps * (n[order] / D), log_p[order], log_r[order])
        if len(self._cache) < 64:
            self._cache[s] = res
        return res

    def _atoms(self, shift: float):
        L, log_p, log_r = self._log_atoms(shift)
        return L, np.exp(log_p), np.exp(log_r)

    def _log_variance(self) -> float:
        return math.log(2.0) + self.log_a - 2.0 * math.log(self._one_a)

    def _variance_direct(self) -> float:
        return 2.0 * self.a / self._one_a**2

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "eps", self.eps, f"eps >= about {self.sensitivity * math.sqrt(2.0 / _FLOAT_MAX):.3g} (variance ~ 2 (sensitivity/eps)^2)"

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        rate, p = -self.log_a, self._one_a
        return _geometric_floats(rate, p, size, rng) - _geometric_floats(rate, p, size, rng)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Geometric":
        _need_pure(delta, "Geometric")
        return cls(eps, int(sens))
