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


# --------------------------------------------------------------------------- validation
def _positive(value: object, name: str, *, finite: bool = True) -> float:
    expected = "a finite number > 0" if finite else "a number > 0"
    x = v._as_float(value, name, expected)
    if math.isnan(x) or x <= 0 or (finite and math.isinf(x)):
        raise invalid(name, value, expected)
    return x


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


def _points(y: ArrayLike, name: str = "y") -> tuple[NDArray[np.float64], bool]:
    """Real evaluation points as a float64 array (NaN and +-inf allowed) and whether scalar."""
    return v._real_array(y, name, "real numbers"), np.ndim(y) == 0


# --------------------------------------------------------------------------- Gaussian helpers
def gdp_log_delta(eps: ArrayLike, mu: ArrayLike) -> NDArray[np.float64]:
    """log of the mu-GDP privacy profile ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.

    Evaluated without cancellation of tiny tails: with ``a = mu/2 - eps/mu`` and
    ``b = -mu/2 - eps/mu`` one has ``b^2/2 = a^2/2 + eps``, so for ``a < 0``
    ``delta = exp(-a^2/2) (erfcx(-a/sqrt2) - erfcx(-b/sqrt2)) / 2`` (``erfcx`` the scaled
    complementary error function); for ``a >= 0 > b``
    ``delta = (erf(a/sqrt2) + erf(-b/sqrt2))/2 - (e^eps - 1) Phi(b)``. Works for eps in the
    hundreds and delta far below 1e-300 (log scale). Accuracy: relative ~1e-15 (1 + a^2) plus,
    for ``a < 0``, ~1e-16/mu from the erfcx difference (so about 1e-10 relative at
    ``sigma = 10^6 Delta``).
    ``eps = inf`` gives ``-inf``. The Gaussian mechanism ``N(0, sigma^2)`` with shift ``D`` is
    ``D/sigma``-GDP and this is its exact profile.
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
    return out


def _gdp_log_err(eps: float, mu: float) -> float:
    """A conservative bound on the absolute rounding error of :func:`gdp_log_delta` (used by
    the calibrations so that the *true* delta, not only the computed one, meets the target):
    the ``a^2/2`` exponent, the erfcx difference (cancellation when mu is small) and, for
    ``a >= 0``, the ``1 - ...`` subtraction."""
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    if a < 0:
        e1, e2 = float(special.erfcx(-a / _SQRT2)), float(special.erfcx(-b / _SQRT2))
        return 1e-15 * (4.0 + a * a + (e1 + e2) / max(e1 - e2, 1e-300))
    d = math.exp(float(gdp_log_delta(eps, mu)))
    return 1e-15 * (4.0 + min(eps, 1.0) / max(d, 1e-300))


def _gdp_ok(eps: float, mu: float, delta: float) -> bool:
    """mu-GDP meets (eps, delta), with the rounding error bound as a safety margin."""
    ld = float(gdp_log_delta(eps, mu))
    return ld + _gdp_log_err(eps, mu) <= math.log(delta) and float(np.exp(ld)) <= delta


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

    @property
    def variance(self) -> float:
        raise NotImplementedError

    @property
    def mse(self) -> float:
        """Mean squared error of the release; the noise is zero-mean, so the variance."""
        return self.variance

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)

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
            return cls._calibrate_corollary(eps0, delta0, sens)
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
        """Pure families: largest eps0 with optimal_delta(eps0, 0, k, eps) <= delta."""
        from ldpsim.privacy.composition import optimal_delta  # lazy: sibling module

        if delta == 0.0:
            eps0 = eps / k  # at delta = 0 basic composition is exact
        else:
            ok = lambda e0: float(optimal_delta(e0, 0.0, k, eps)) <= delta  # noqa: E731
            lo, hi = eps / k, eps
            while ok(hi):
                lo, hi = hi, 2.0 * hi
                if hi > 1e6:
                    break
            eps0 = largest_ok(ok, lo, hi, iters=200)
        mech = cls._calibrate_single(eps0, 0.0, sens)
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
        self.scale = _positive(scale, "scale")
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
        mu = shift / self.scale
        em = math.exp(-mu)
        with np.errstate(all="ignore"):
            low = 1.0 - np.exp(mu) * a
            mid = em / (4.0 * a)
            high = em * (1.0 - a)
        return np.where(a < em / 2.0, low, np.where(a <= 0.5, mid, high))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(exp(-|y|/scale) / (2 scale))
        return -np.abs(y) / self.scale - math.log(2.0 * self.scale)

    @property
    def variance(self) -> float:
        return 2.0 * self.scale**2

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        return rng.laplace(0.0, self.scale, size)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Laplace":
        _need_pure(delta, "Laplace")
        scale = sens / eps
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
        self.sigma = _positive(sigma, "sigma")
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

    @property
    def variance(self) -> float:
        return self.sigma**2

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
        return cls(sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps, sens)

    @staticmethod
    def _largest_mu(eps: float, delta: float) -> float:
        """Largest mu with mu-GDP delta(eps) <= delta (root of the exact log-delta in log mu)."""
        log_target = math.log(delta)
        g = lambda lm: float(gdp_log_delta(eps, math.exp(lm))) - log_target  # noqa: E731
        lo, hi = -1.0, 1.0
        while g(lo) > 0:
            lo -= 2.0
        while g(hi) < 0:
            hi += 2.0
        lm = optimize.brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        mu = math.exp(lm)
        step = 0
        while not _gdp_ok(eps, mu, delta):
            step += 1
            mu = mu * (1.0 - 2.0**-52 * step)  # growing steps: the margin may need many ulps
        return mu

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
        sigma = math.sqrt(k) * sens / mu_total
        while not _gdp_ok(eps, math.sqrt(k) * (sens / sigma), delta):
            sigma = float(np.nextafter(sigma, math.inf))
        return cls(sigma, sens)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Gaussian":
        if not 0.0 < delta < 1.0:
            raise invalid("delta", delta, "a number in (0, 1) for the Gaussian mechanism")
        return cls.analytic(eps, delta, sens)

    @classmethod
    def _calibrate_corollary(cls, eps0: float, delta0: float, sens: float) -> "Gaussian":
        # Corollary 4.1 / THEORY sec. 6: sigma^2 = 2 Delta^2 log(2/delta0) / eps0^2
        return cls(sens * math.sqrt(2.0 * math.log(2.0 / delta0)) / eps0, sens)

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
        self.lam = self.sensitivity / self.eps
        # K = log(1 + (e^eps - 1)/(2 delta)), in log space
        self.K = float(np.logaddexp(0.0, math.log(math.expm1(self.eps)) - math.log(2.0 * self.delta_param))) if self.eps < 700 else (
            self.eps - math.log(2.0 * self.delta_param) + math.log1p(-math.exp(-self.eps))
        )
        self.bound = self.lam * self.K  #: the truncation point A
        self._q = math.exp(-self.K)
        self._one_q = -math.expm1(-self.K)
        self._C = 0.5 / self._one_q

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "delta": self.delta_param, "sensitivity": self.sensitivity}

    def _cdf_y(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        C, q, K = self._C, self._q, self.K
        with np.errstate(all="ignore"):
            neg = C * (np.exp(np.minimum(y, 0.0)) - q)
            pos = 1.0 - C * (np.exp(-np.maximum(y, 0.0)) - q)
        out = np.where(y <= 0, neg, pos)
        return np.where(y <= -K, 0.0, np.where(y >= K, 1.0, out))

    def cdf(self, x: ArrayLike) -> NDArray[np.float64]:
        """CDF of the noise."""
        return self._cdf_y(np.asarray(x, dtype=np.float64) / self.lam)

    def _log_piece1(self, u: float) -> float:
        """log of the mass of P with no counterpart under R, ``G(u - K)`` (log space: for tiny
        delta, ``q = e^-K`` is subnormal)."""
        K = self.K
        if u <= K:  # C (e^{u-K} - e^-K) = C expm1(u) e^-K
            return math.log(self._C) + math.log(math.expm1(u)) - K
        return math.log1p(-self._C * (math.exp(K - u) - self._q))

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
            p2b = C * (math.exp(-lo) - np.exp(-w)) - np.exp(np.where(on, t, 0.0)) * C * (np.exp(w - u) - math.exp(lo - u))
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
        C, q = self._C, self._q
        with np.errstate(all="ignore"):
            # c = G^-1(1 - alpha)
            c_hi = -np.log(a / C + q)  # alpha <= 1/2 -> c >= 0
            c_lo = np.log((1.0 - a) / C + q)  # alpha >= 1/2 -> c <= 0
            c = np.where(a <= 0.5, c_hi, c_lo)
        return self._cdf_y(c - u)

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # density C e^{-|y|/lam} / lam on |y|/lam <= K (the support used by the CDF), else 0;
        # log C = -log 2 - log(1 - e^-K) with 1 - e^-K taken as -expm1(-K)
        u = np.abs(y) / self.lam
        inside = -u + (math.log(self._C) - math.log(self.lam))
        return np.where(u <= self.K, inside, -np.inf)

    @property
    def variance(self) -> float:
        K, q = self.K, self._q
        return self.lam**2 * (2.0 - q * (K * K + 2 * K + 2)) / self._one_q

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        uu = rng.random(size)
        sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
        y = -np.log1p(-uu * self._one_q)  # truncated Exp(1) on [0, K]
        return sign * self.lam * y

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "TruncatedLaplace":
        if not 0.0 < delta < 0.5:
            raise invalid("delta", delta, "a number in (0, 0.5) for the truncated Laplace mechanism")
        d = delta
        for step in range(1, 200):
            mech = cls(eps, d, sens)
            ld = float(mech.log_delta(eps))
            # margin for the rounding of K = log(1 + (e^eps - 1)/(2 delta)) (about 1e-16 K)
            if ld + 4e-16 * (mech.K + 4.0) <= math.log(delta) and float(np.exp(ld)) <= delta:
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

        L, P, R = self._atoms(self._shift(shift))
        both = (P > 0) & (R > 0)
        return DiscretePLD.from_atoms(L[both], np.log(P[both]), float(P[R == 0].sum()), float(R[P == 0].sum()))

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
    (clipped to [0, 1]; the tests check it against numerical minimisation of the variance)."""
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

    @property
    def variance(self) -> float:
        return self._variance_of(self.gamma)

    def _variance_of(self, gamma: float) -> float:
        b, one_b, D = self.b, self._one_b, self.sensitivity
        p0 = gamma / (gamma + (1.0 - gamma) * b)
        EG = b / one_b
        EG2 = b * (1.0 + b) / one_b**2
        EW = p0 * gamma / 2.0 + (1.0 - p0) * (1.0 + gamma) / 2.0
        EW2 = p0 * gamma**2 / 3.0 + (1.0 - p0) * (1.0 + gamma + gamma**2) / 3.0
        return D * D * (EG2 + 2.0 * EG * EW + EW2)

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        g, b = self.gamma, self.b
        sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
        G = rng.geometric(self._one_b, size) - 1
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

    def _atoms(self, shift: float):
        s = int(shift)
        if s in self._cache:
            return self._cache[s]
        a, D = self.a, self.sensitivity
        c = self._one_a / (1.0 + a)
        z = np.arange(1, s, dtype=np.float64)
        n = np.concatenate([[s], s - 2 * z, [-s]]).astype(np.float64)
        as_ = math.exp(self.log_a * s)
        P = np.concatenate([[1.0 / (1.0 + a)], c * np.exp(self.log_a * z), [as_ / (1.0 + a)]])
        R = np.concatenate([[as_ / (1.0 + a)], c * np.exp(self.log_a * (s - z)), [1.0 / (1.0 + a)]])
        order = np.argsort(n, kind="stable")
        res = (self.eps * (n[order] / D), P[order], R[order])
        if len(self._cache) < 64:
            self._cache[s] = res
        return res

    @property
    def variance(self) -> float:
        return 2.0 * self.a / self._one_a**2

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        p = self._one_a
        return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.float64)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Geometric":
        _need_pure(delta, "Geometric")
        return cls(eps, int(sens))
