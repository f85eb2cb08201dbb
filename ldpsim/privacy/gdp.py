"""Gaussian differential privacy (mu-GDP): the exact privacy profile and its calibration.

A pair of output laws is mu-GDP when its trade-off function is at least
``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``, the one of testing ``N(0, 1)`` against
``N(mu, 1)`` (Dong-Roth-Su 2019). Its privacy profile, the smallest delta at each eps, is
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle-Wang 2018, Thm 8);
the Gaussian mechanism ``N(0, sigma^2)`` on a query of sensitivity ``D`` is exactly
``D/sigma``-GDP, and the k-fold composition of mu-GDP is ``sqrt(k) mu``-GDP.

This module holds the pure mathematics, shared by :class:`ldpsim.privacy.GDP` and the
Gaussian noise mechanism: :func:`gdp_log_delta` (the profile in log space, accurate where
delta is far below the smallest float and for mu down to the smallest floats),
:func:`gdp_delta`, :func:`gdp_meets` (whether mu-GDP meets an (eps, delta) target with a
bound on the profile's rounding error as a safety margin, so that the true delta, not only
the computed one, meets it: the Gaussian mechanism's calibration under composition uses it
too), and :func:`largest_mu`, the largest mu meeting an (eps, delta) target (the analytic
Gaussian calibration).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim._bisect import largest_ok_below

__all__ = ["gdp_log_delta", "gdp_delta", "gdp_meets", "largest_mu"]

_SQRT2 = math.sqrt(2.0)

# --------------------------------------------------------------------------- the profile
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
    # mu = 0 (also a shift/sigma below 2.5e-324, rounded to 0): the pair is one law, delta 0
    # (the true delta is below 0.4 mu, 0 in doubles); eps/mu was 0/0 = NaN at eps = 0
    return np.where(m == 0.0, -np.inf, out)


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


def gdp_meets(eps: float, mu: float, delta: float) -> bool:
    """mu-GDP meets (eps, delta), with the rounding error bound as a safety margin."""
    ld = float(gdp_log_delta(eps, mu))
    return ld + _gdp_log_err(eps, mu, ld) <= math.log(delta) and float(np.exp(ld)) <= delta


def gdp_delta(eps: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """The mu-GDP privacy profile ``delta(eps)`` (see :func:`gdp_log_delta`)."""
    return np.exp(gdp_log_delta(eps, mu))


def largest_mu(eps: float, delta: float) -> float:
    """Largest mu with mu-GDP ``delta(eps) <= delta`` (``eps >= 0``, ``0 < delta < 1``): root
    of the exact log-delta in log mu (brentq), then the largest float at or below it that
    meets the target with the rounding-error margin of :func:`gdp_meets` (bracketing and
    bisection, bounded). The true profile, not only the computed one, meets the target."""
    log_target = math.log(delta)
    g = lambda lm: float(gdp_log_delta(eps, math.exp(lm))) - log_target
    lo, hi = -1.0, 1.0
    while g(lo) > 0:
        lo -= 2.0
    while g(hi) < 0:
        hi += 2.0
    from scipy import optimize  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

    lm = optimize.brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return largest_ok_below(lambda mu: gdp_meets(eps, mu, delta), math.exp(lm), "delta")
