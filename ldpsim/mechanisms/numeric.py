"""Mean estimation of a bounded numeric answer: one report per respondent whose value is an
unbiased estimate of the respondent's answer (docs/theory.md sec. 13, docs/mechanisms.md,
"Numeric answers: mean estimation").

Each respondent holds a number ``x`` in a known range ``[lo, hi]`` (default ``[-1, 1]``). A
mechanism maps ``x`` affinely to ``u = (x - mid) / half`` in ``[-1, 1]`` (``mid = (lo + hi)/2``,
``half = (hi - lo)/2``), randomises ``u`` into ``z`` with ``E[z | u] = u`` and reports
``y = mid + half z``, so ``E[y | x] = x`` and the analyst's estimate of the mean answer is the
plain mean of the reports, in the original units. Answers outside ``[lo, hi]`` are clipped to
it (the privacy guarantee is over the range; the report is then unbiased for the clipped
answer); NaN and infinite answers are refused.

* :class:`LaplaceBounded` -- the clipped answer plus Laplace noise of scale ``(hi - lo)/eps``
  (the library's :class:`~ldpsim.mechanisms.noise.Laplace`, reused for the noise and for the
  exact privacy profile);
* :class:`Duchi` -- Duchi, Jordan and Wainwright (2018): two reports ``+-C``;
* :class:`Piecewise` -- Wang et al. (2019): a density on ``[-C, C]``, ``e^eps`` times higher
  on a window of width ``C - 1`` that moves with the answer;
* :class:`Hybrid` -- Wang et al. (2019): Piecewise with probability ``alpha = 1 - e^(-eps/2)``
  and Duchi's otherwise above :data:`HYBRID_THRESHOLD` (``~0.6094``), Duchi's alone at or below.

Every class implements the mechanism contract (:class:`ldpsim.mechanisms.base.Mechanism`) with
real reports: ``sample(x, n, rng)``, ``privatize(values, rng)`` (one report per answer, any
shape, vectorised), the exact ``variance(x)`` of one report (vectorised), ``worst_variance()``,
exact ``epsilon(delta)`` / ``delta(eps)`` (the pure eps is the ``eps`` given), and
``log_density(x, y)``.

Densities with atoms. Duchi's reports take two values and Hybrid's law is a density plus
two atoms, so ``log_density`` is the density with respect to Lebesgue measure *plus* a unit
mass at each value of :attr:`atoms` (the same values for every answer): at an atom it is the
log of the atom's probability, elsewhere the log of the ordinary density (``-inf`` off the
support). Because this reference measure does not depend on ``x``, the ratio
``p(y | x) / p(y | x')`` is the likelihood ratio and the hockey-stick divergence is
``int (p - e^t p')_+`` over the density plus the sum of ``(p - e^t p')_+`` over the atoms; the
contract tests integrate exactly that (reference kind ``"mixed"``). Duchi's reports could be
coded as a finite mechanism instead, but its input is continuous and its reports must be
numbers whose mean estimates the mean answer, so the atoms are the reports themselves.

Privacy. For Duchi, Piecewise and Hybrid the privacy loss between any two answers takes only
the values ``eps``, ``0`` and ``-eps``, and the P-mass ``K`` of the value ``eps`` is largest for
the answers ``lo`` and ``hi``; hence ``delta(t) = K (1 - e^(t - eps))`` for ``t < eps`` and 0
above, with ``K = 1/(1 + e^-eps)`` (Duchi), ``1/(1 + e^(-eps/2))`` (Piecewise) and
``alpha/(1 + e^(-eps/2)) + (1 - alpha)/(1 + e^-eps)`` (Hybrid). :meth:`pld` is that three-atom law.
All computations are in log space or through ``expm1`` / ``log1p``: eps from about 1e-300 to
the thousands.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator, as_source
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.base import Mechanism, NoDensity
from ldpsim.mechanisms.noise.discrete_laplace import DiscreteLaplace
from ldpsim.mechanisms.noise.laplace import Laplace
from ldpsim.mechanisms.noise.snapping import ETA, SnappedLaplace
from ldpsim.mechanisms.noise.staircase import Staircase
from ldpsim.privacy.guarantees import MechanismGuarantee, PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD

__all__ = [
    "HYBRID_THRESHOLD",
    "BoundedNumeric",
    "DiscreteLaplaceBounded",
    "Duchi",
    "Hybrid",
    "LaplaceBounded",
    "NoiseBounded",
    "Piecewise",
    "SQUARE_WAVE_MAX_EPS",
    "SnappedLaplaceBounded",
    "SquareWave",
    "StaircaseBounded",
    "hybrid_threshold",
    "square_wave_b",
]

_FLOAT_MAX = float(np.finfo(np.float64).max)
#: Largest half-width ``half * C`` of the reports: draws and their squares' sums stay finite floats.
_MAX_REPORT = _FLOAT_MAX / 1024.0
#: Smallest half-width ``(hi - lo)/2`` of the answers' range: the smallest normal double.
_MIN_HALF = float(np.finfo(np.float64).tiny)


def hybrid_threshold() -> float:
    """The eps at which mixing Piecewise into Duchi's mechanism starts to lower the worst-case
    variance: ``2 log s*``, ``s*`` the real root of ``3 s^3 - s^2 + s - 7`` (where Piecewise's
    variance at ``x = 0`` equals Duchi's, ``C^2``; docs/theory.md sec. 13). About 0.609352;
    Wang et al. (2019) round it to 0.61."""
    s = 1.356
    for _ in range(8):  # Newton on a simple root: converged to the last bit well before 8 steps
        s -= (((3.0 * s - 1.0) * s + 1.0) * s - 7.0) / ((9.0 * s - 2.0) * s + 1.0)
    return 2.0 * math.log(s)


#: eps at or below which :class:`Hybrid` is Duchi's mechanism alone (see :func:`hybrid_threshold`).
HYBRID_THRESHOLD = hybrid_threshold()


def _log1pexp(t: float) -> float:
    """``log(1 + e^t)`` without overflow."""
    return t + math.log1p(math.exp(-t)) if t > 0 else math.log1p(math.exp(t))


def _scaled(w: NDArray[np.float64], s: float) -> float | NDArray[np.float64]:
    """``w s^2``, ``inf`` where that exceeds the doubles (``s**2`` raised OverflowError at s = 1e300)."""
    s2 = s * s  # a Python float: inf on overflow, no exception
    with np.errstate(over="ignore"):
        out = np.asarray(w * s2 if math.isfinite(s2) else (w * s) * s, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


class BoundedNumeric(Mechanism):
    """Base class of the mean-estimation mechanisms for an answer in ``[lo, hi]`` (see the
    module docstring): validation, the affine map, clipping, the contract's ``sample`` and
    ``log_density`` over the per-class unit-range law, and the three-atom privacy profile."""

    name = "numeric"
    has_density = True
    exact_delta = True
    output_size = None

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        self.eps = v.positive(eps, "eps")
        lo_f = v.real(lo, "lo", "a finite real number")
        hi_f = v.real(hi, "hi", "a finite real number")
        if not math.isfinite(lo_f):
            raise invalid("lo", lo, "a finite real number")
        if not math.isfinite(hi_f):
            raise invalid("hi", hi, "a finite real number")
        if not (hi_f > lo_f and math.isfinite(hi_f - lo_f)):
            raise invalid("hi", hi, f"a number > lo = {lo_f!r} with hi - lo finite")
        if not (hi_f - lo_f) / 2.0 >= _MIN_HALF:
            # a subnormal half-width loses its digits (5e-324 / 2 is 0): the answers could not
            # be mapped to [-1, 1] and back, and every variance was 0/0
            raise invalid(
                "hi",
                hi,
                f"a number with hi - lo >= {2.0 * _MIN_HALF:.6g} (lo = {lo_f!r}; a range of subnormal "
                "width cannot be scaled safely)",
            )
        self.lo, self.hi = lo_f, hi_f
        self._half = (hi_f - lo_f) / 2.0
        self._mid = lo_f + self._half

    # ------------------------------------------------------------------ identity
    @property
    def params(self) -> dict[str, Any]:
        return {"eps": self.eps, "lo": self.lo, "hi": self.hi}

    def neighbours(self) -> list[tuple[Any, Any]]:
        """``[(lo, hi)]``: the two ends of the range attain the privacy loss."""
        return [(self.lo, self.hi)]

    def _check_reach(self, bound: float) -> None:
        """Refuse eps where the reports ``mid +- half * bound`` leave the float range."""
        if not (self._half * bound <= _MAX_REPORT):
            raise invalid(
                "eps",
                self.eps,
                f"a larger eps for the range [{self.lo!r}, {self.hi!r}] (the reports reach "
                f"{self._half * bound:.4g} times beyond its centre, past the float range)",
            )

    # ------------------------------------------------------------------ inputs
    def _unit(self, x: ArrayLike, name: str) -> NDArray[np.float64]:
        """Answers clipped to ``[lo, hi]`` and mapped to ``[-1, 1]``."""
        u = v.finite_array(x, name, "finite real numbers")  # a copy of its own: changed in place
        np.clip(u, self.lo, self.hi, out=u)
        u -= self._mid
        u /= self._half
        return np.clip(u, -1.0, 1.0, out=u)

    def valid_answers(self, values: ArrayLike) -> NDArray[np.bool_]:
        """Which of ``values`` this mechanism can report (all finite numbers here; the discrete
        sampler takes integers only). The scenario loader names the first row it refuses."""
        return np.isfinite(np.asarray(values, dtype=np.float64))

    def _scalar_unit(self, x: Any) -> float:
        arr = v.finite_array(x, "x", "a finite real number")
        if arr.ndim != 0:
            raise invalid("x", x, "a finite real number")
        return float(self._unit(arr, "x"))

    # ------------------------------------------------------------------ sampling
    def _draw(self, u: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:  # pragma: no cover
        """Reports in unit coordinates for the unit answers ``u`` (any shape)."""
        raise NotImplementedError

    def _report(self, z: NDArray[np.float64] | np.float64) -> NDArray[np.float64] | np.float64:
        return self._mid + self._half * z

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        """One report per answer of ``values`` (any shape; clipped to ``[lo, hi]``), vectorised:
        a float64 array of the same shape whose mean estimates the mean answer."""
        u = self._unit(values, "values")
        return np.asarray(self._report(self._draw(u, as_generator(rng))), dtype=np.float64)

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        """``n`` independent reports for the answer ``x`` (clipped to ``[lo, hi]``)."""
        u = self._scalar_unit(x)
        n = v.integer(n, "n", minimum=0)
        return np.asarray(self._report(self._draw(np.full(n, u), as_generator(rng))), dtype=np.float64)

    # ------------------------------------------------------------------ law
    @property
    def atoms(self) -> NDArray[np.float64]:
        """The report values that carry positive probability (the same for every answer):
        ``log_density`` there is the log of that probability (see the module docstring)."""
        return np.empty(0)

    def _unit_log_density(
        self, u: NDArray[np.float64], z: NDArray[np.float64]
    ) -> NDArray[np.float64]:  # pragma: no cover
        """log density (unit coordinates) of the continuous part, ``-inf`` off its support."""
        raise NotImplementedError

    def _atom_log_mass(self, u: NDArray[np.float64], sign: float) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError

    def log_density(self, x: ArrayLike, y: ArrayLike) -> float | NDArray[np.float64]:
        """log density of the report ``y`` given the answer ``x`` (clipped), with respect to
        Lebesgue measure plus a unit mass at each of :attr:`atoms`; ``x`` and ``y`` broadcast,
        NaN ``y`` gives NaN; a float when both are scalars."""
        u = self._unit(x, "x")
        ya = v.real_array(y, "y", "real numbers")
        u, ya = np.broadcast_arrays(u, ya)
        with np.errstate(invalid="ignore", over="ignore"):
            z = (ya - self._mid) / self._half
            out = np.asarray(self._unit_log_density(u, z), dtype=np.float64) - math.log(self._half)
            atoms = self.atoms
            if atoms.size:
                out = np.where(ya == atoms[1], self._atom_log_mass(u, 1.0), out)
                out = np.where(ya == atoms[0], self._atom_log_mass(u, -1.0), out)
        out = np.where(np.isnan(ya), np.nan, out)
        return float(out) if out.ndim == 0 else out

    # ------------------------------------------------------------------ moments
    def _unit_variance(self, u: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError

    def variance(self, x: ArrayLike) -> float | NDArray[np.float64]:
        """Exact variance of one report given the answer ``x`` (clipped; vectorised; a float
        for a scalar). The report is unbiased, so this is also its mean squared error. ``inf``
        where it exceeds the doubles (a range 1e300 wide: about 1e600)."""
        w, s = self.variance_parts(x)
        return _scaled(w, s)

    def variance_parts(self, x: ArrayLike) -> tuple[NDArray[np.float64], float]:
        """``(w, s)`` with ``variance(x) = w s^2`` (``w`` an array of the shape of ``x``): the
        standard error ``s sqrt(mean(w) / n)`` is finite where ``s^2`` is not
        (:func:`ldpsim.analyst.means.mean_standard_error`)."""
        u = self._unit(x, "x")
        return np.asarray(self._unit_variance(u), dtype=np.float64), self._half

    def _reach(self) -> float:  # pragma: no cover
        """The largest ``|z|`` of a report in unit coordinates (``inf``: unbounded)."""
        raise NotImplementedError

    @property
    def report_range(self) -> tuple[float, float]:
        """``(low, high)``: every report lies in this interval (``(-inf, inf)`` for unbounded
        noise); Hoeffding's bound on the mean of reports uses its length."""
        c = self._reach()
        if not math.isfinite(c):
            return (-math.inf, math.inf)
        return (float(self._report(np.float64(-c))), float(self._report(np.float64(c))))

    def worst_variance(self) -> float:
        """The largest :meth:`variance` over ``[lo, hi]`` (each variance here is a quadratic
        in ``x`` symmetric about the centre, so at the centre or at the ends)."""
        return float(np.max(self.variance(np.array([self.lo, self._mid, self.hi]))))

    # ------------------------------------------------------------------ privacy
    def _log_k(self) -> float:  # pragma: no cover
        """log of the P-mass of the privacy-loss value ``eps`` for the answers ``lo``, ``hi``."""
        raise NotImplementedError

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact ``delta(t) = K (1 - e^(t - eps))`` below the mechanism's eps, 0 at and above
        it (``K`` per class, see the module docstring); scalar or array ``t >= 0``."""
        t, scalar = v.eps_array(eps)
        with np.errstate(invalid="ignore", over="ignore"):
            gap = -np.expm1(np.minimum(t - self.eps, 0.0))
        out = np.where(t < self.eps, math.exp(self._log_k()) * gap, 0.0)
        return float(out) if scalar else out

    def epsilon(self, delta: Any = 0.0) -> Any:
        """The smallest eps with ``delta(eps) <= delta``: the mechanism's ``eps`` at 0,
        ``eps + log(1 - delta/K)`` (rounded up to meet the bound in floats) below
        ``delta(0)``, and 0 from there."""
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0:
            return self.eps
        if delta >= float(self.delta(0.0)):
            return 0.0
        k = math.exp(self._log_k())
        t = min(self.eps, max(0.0, self.eps + math.log1p(-delta / k)))
        while t < self.eps and float(self.delta(t)) > delta:
            t = float(np.nextafter(t, math.inf))
        return t

    def pld(self) -> Any:
        """The exact privacy-loss law of the answer ``lo`` against ``hi`` (a
        :class:`ldpsim.privacy.DiscretePLD`): atoms ``eps``, 0, ``-eps`` with P-masses ``K``,
        ``1 - K (1 + e^-eps)``, ``K e^-eps``. Symmetric: ``hi`` against ``lo`` has the same law."""
        lk = self._log_k()
        rest = -math.expm1(lk + _log1pexp(-self.eps))  # 1 - K (1 + e^-eps)
        log_rest = math.log(rest) if rest > 0 else -math.inf
        return DiscretePLD.from_atoms([-self.eps, 0.0, self.eps], [lk - self.eps, log_rest, lk])

    def guarantee(self) -> Any:
        """The exact guarantee (:class:`ldpsim.privacy.PLDGuarantee` of :meth:`pld`)."""
        law = self.pld()
        return PLDGuarantee((law, law.swap()), label=repr(self))


# --------------------------------------------------------------------------- Laplace
class NoiseBounded(BoundedNumeric):
    """The answer clipped to ``[lo, hi]`` plus noise of a library noise family calibrated for
    sensitivity ``hi - lo`` (:meth:`_make_noise`): the noise law, the exact privacy profile
    (that of a shift by ``hi - lo``) and the trade-off function are those of the noise
    instance, and the variance is the noise's for every answer. No atoms."""

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)
        self.noise = self._make_noise()

    def _make_noise(self) -> Any:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        arr = v.finite_array(values, "values", "finite real numbers")
        clipped = np.clip(arr, self.lo, self.hi)
        return clipped + np.asarray(self.noise.sample_noise(clipped.shape, as_generator(rng)), dtype=np.float64)

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        self._scalar_unit(x)  # validation
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, float(x)), rng)

    def log_density(self, x: ArrayLike, y: ArrayLike) -> float | NDArray[np.float64]:
        """log density of ``clip(x) + Z`` at ``y`` (the noise's ``log_density`` at the clipped answer)."""
        arr = v.finite_array(x, "x", "finite real numbers")
        clipped = np.clip(arr, self.lo, self.hi)
        out = self.noise.log_density(clipped, y)
        return float(out) if np.ndim(out) == 0 else out

    def _reach(self) -> float:
        return math.inf

    def variance(self, x: ArrayLike) -> float | NDArray[np.float64]:
        u = self._unit(x, "x")
        out = np.full(u.shape, self.noise.variance)
        return float(out) if out.ndim == 0 else out

    def variance_parts(self, x: ArrayLike) -> tuple[NDArray[np.float64], float]:
        """``(1, std)`` of the noise: its ``std`` is finite (from its log) where its variance
        is refused by name."""
        u = self._unit(x, "x")
        return np.ones(u.shape), float(self.noise.std)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact: the noise's ``delta`` for a shift by ``hi - lo``."""
        return self.noise.delta(eps)

    def epsilon(self, delta: Any = 0.0) -> Any:
        return self.noise.epsilon(delta)

    def guarantee(self) -> Any:
        return MechanismGuarantee(self.noise, label=repr(self))

    def pld(self) -> Any:
        raise invalid("pld", repr(self), "a mechanism with a discrete privacy-loss law over answers (use guarantee())")


class LaplaceBounded(NoiseBounded):
    """The answer clipped to ``[lo, hi]`` plus Laplace noise of scale ``(hi - lo)/eps``
    (:class:`ldpsim.mechanisms.noise.Laplace` calibrated for sensitivity ``hi - lo``, its scale
    widened by a rounding unit where the float quotient would exceed eps). Continuous
    privacy loss; variance ``2 ((hi - lo)/eps)^2`` for every answer."""

    name = "laplace_bounded"

    def _make_noise(self) -> Any:
        return Laplace.calibrate(self.eps, 0.0, self.hi - self.lo)

    @property
    def scale(self) -> float:
        """The Laplace scale, ``(hi - lo)/eps`` up to a rounding unit."""
        return float(self.noise.scale)


class StaircaseBounded(NoiseBounded):
    """The answer clipped to ``[lo, hi]`` plus staircase noise (Geng and Viswanath 2016) for
    sensitivity ``hi - lo`` at its variance-optimal gamma
    (:class:`ldpsim.mechanisms.noise.Staircase`): unbiased like Laplace, never a larger
    variance, and far smaller at large eps; exact eps = eps."""

    name = "staircase_bounded"

    def _make_noise(self) -> Any:
        try:
            return Staircase(self.eps, self.hi - self.lo)
        except LdpSimError as exc:  # its sensitivity is the width of the range: name the range
            if not str(exc).startswith("sensitivity:"):
                raise
            raise invalid(
                "hi",
                self.hi,
                f"a wider range [lo, hi] for the staircase at eps = {self.eps:g} (lo = {self.lo!r}; {exc})",
            ) from None


class DiscreteLaplaceBounded(NoiseBounded):
    """Integer answers in ``[lo, hi]`` (``lo`` and ``hi`` integers) plus discrete Laplace
    noise, ``P(Z = z)`` proportional to ``exp(-eps |z| / (hi - lo))``, drawn by the exact
    sampler of Canonne, Kamath and Steinke (2020) (:class:`ldpsim.mechanisms.noise.
    DiscreteLaplace`): every report is an integer, so no floating-point bit of it depends on
    the answer beyond its value, and the privacy computed is that of the numbers produced.
    Unbiased (symmetric noise); variance ``2a/(1 - a)^2`` with ``a = e^(-eps/(hi - lo))`` for
    every answer; exact eps = eps. Answers that are not integers are refused (a survey's
    numeric column of counts, ages or amounts in whole units); the operating system's
    generator is accepted (``rng="os"``)."""

    name = "discrete_laplace_bounded"

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        for key, value in (("lo", lo), ("hi", hi)):
            f = v.real(value, key, "an integer")
            if not (math.isfinite(f) and f.is_integer() and abs(f) <= 2.0**52):
                raise invalid(
                    key,
                    value,
                    "an integer of magnitude <= 2^52 (the discrete sampler adds integer noise to integer answers)",
                )
        super().__init__(eps, lo, hi)

    def _make_noise(self) -> Any:
        return DiscreteLaplace(self.eps, int(self.hi - self.lo))

    def valid_answers(self, values: ArrayLike) -> NDArray[np.bool_]:
        """Which answers this mechanism can report: the integers."""
        arr = np.asarray(values, dtype=np.float64)
        return np.isfinite(arr) & (arr == np.floor(arr))

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        arr = v.finite_array(values, "values", "finite integers")
        bad = np.flatnonzero(~self.valid_answers(arr).ravel())
        if bad.size:
            i = int(bad[0])
            raise invalid(
                f"values[{i}]", float(arr.ravel()[i]), "an integer answer (the discrete sampler reports integers)"
            )
        clipped = np.clip(arr, self.lo, self.hi)
        return clipped + np.asarray(self.noise.sample_noise(clipped.shape, rng), dtype=np.float64)

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        self._scalar_unit(x)
        if not bool(self.valid_answers(x)):
            raise invalid("x", x, "an integer answer (the discrete sampler reports integers)")
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, float(x)), rng)


class SnappedLaplaceBounded(BoundedNumeric):
    """The answer clipped to ``[lo, hi]`` and reported through Mironov's (2012) snapping
    mechanism (:class:`ldpsim.mechanisms.noise.SnappedLaplace`), made unbiased for mean
    estimation by a public dither; its privacy holds for the doubles it produces.

    In unit coordinates ``u = (clip(x) - lo)/(hi - lo)`` in ``[0, 1]`` (sensitivity 1):

    1. ``u`` is rounded at random to the grid ``h Z``, ``h = 2^-G``: up with probability equal
       to its fractional part in units of ``h`` (``v``, ``E[v] = u``);
    2. a dither ``r`` uniform on ``{0, h, 2h, ..., Lambda - h}`` (``Lambda`` the snapping grid)
       is added: ``w = v + r``, exact in doubles;
    3. ``w`` goes through the snapping mechanism (``bound`` ``B = 1 + 2 Lambda + 40 lambda``, so
       the clamp binds with probability below ``e^-40``); the report is
       ``lo + (hi - lo) (snap(w) - r)``.

    Privacy: for every ``r`` and every pair of grid values ``v, v'`` in ``[0, 1]`` the inputs
    ``w, w'`` differ by at most 1, the snapping mechanism's sensitivity, so each branch is
    ``epsilon(0)``-DP (Mironov's bound, at most eps); the random rounding of ``u`` is a mixture
    over such branches and ``r`` does not depend on the answer (it is part of the report, as a
    public random number would be): the report is ``epsilon(0)``-DP. Everything after the
    snapped value is post-processing.

    Bias and variance: rounding to the grid of ``Lambda`` is a sawtooth error, periodic in the
    input; averaged over the ``Lambda / h`` equally spaced dithers its mean is within
    ``h / 2`` of 0 whatever the noise, so ``|E[report] - clip(x)| <= (hi - lo)(2^-(G+1) +
    2^-50 B)`` (the second term: rounding of the addition inside the mechanism) plus the
    clamp's ``e^-40 lambda`` -- below ``1e-12 (hi - lo)`` at every supported eps. Without the
    dither the bias is up to ``0.2 lambda``, which averages never remove. With the dither the
    rounding error is uniform on ``[-Lambda/2, Lambda/2)`` and independent of the noise (up to
    terms of order ``h Lambda``), so one report has variance ``(hi - lo)^2 (2 lambda^2 +
    Lambda^2/12 + f (1 - f) h^2)`` (``f`` the fractional part of ``u / h``).
    ``G = 50 - ceil(log2(2 B))`` keeps ``v + r`` and ``snap(w) - r`` exact. The law of a report
    has no closed-form density (a mixture over ``2^G``-fine dithers): ``has_density`` is False,
    and like the snapped mechanism its delta is known only at and above its pure eps."""

    name = "snapped_laplace_bounded"
    has_density = False
    exact_delta = False

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)

        # the snapping mechanism's floor, checked before 1/eps (inf at 5e-324) sizes its bound
        if not 2.0 * float(ETA) < self.eps:
            raise invalid(
                "eps",
                eps,
                "an eps the snapping mechanism supports on [lo, hi] (eps > 2 eta = 2^-51, the "
                "additive term of the snapping bound)",
            )
        lam0 = 1.0 / self.eps
        grid0 = 2.0 ** math.ceil(math.log2(lam0)) if lam0 > 0 else 1.0
        bound = 1.0 + 2.0 * grid0 + 40.0 * lam0
        try:
            self.snap = SnappedLaplace(self.eps, bound, 1.0)
        except LdpSimError as exc:
            raise invalid("eps", eps, f"an eps the snapping mechanism supports on [lo, hi] ({exc})") from None
        self._g = 50 - math.ceil(math.log2(2.0 * self.snap.bound))
        self._h = 2.0**-self._g
        steps = self.snap.grid_step / self._h
        if not (steps.is_integer() and 1 <= steps <= 2.0**62):
            raise invalid("eps", eps, "an eps whose snapping grid is between 2^-40 and 2^40 (the dither's grid)")
        self._steps = int(steps)
        self._check_reach(2.0 * (self.snap.bound + self.snap.grid_step))

    @property
    def scale(self) -> float:
        """The Laplace scale lambda of the snapping mechanism, in the answers' units."""
        return float(self.snap.scale) * (self.hi - self.lo)

    def _unit01(self, x: ArrayLike, name: str) -> NDArray[np.float64]:
        arr = v.finite_array(x, name, "finite real numbers")
        return np.clip((np.clip(arr, self.lo, self.hi) - self.lo) / (self.hi - self.lo), 0.0, 1.0)

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        u = self._unit01(values, "values")
        src = as_source(rng)
        scaled = u * 2.0**self._g  # exact: a power of two
        low = np.floor(scaled)
        frac = scaled - low  # exact; multiples of 2^-52 unless u < 2^-G
        up = src.integers(0, 2**52, size=u.shape) < np.ceil(frac * 2.0**52)
        vq = (low + up) * self._h
        r = src.integers(0, self._steps, size=u.shape).astype(np.float64) * self._h
        out = np.asarray(self.snap.privatize(vq + r, src), dtype=np.float64).reshape(u.shape)
        return self.lo + (self.hi - self.lo) * (out - r)

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        self._scalar_unit(x)
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, float(x)), rng)

    def log_density(self, x: ArrayLike, y: ArrayLike) -> Any:
        raise NoDensity(
            f"log_density: got a call on {self!r}, expected a mechanism with a density (the dithered snapped "
            "report is a mixture over 2^G dithers: audit it from samples)"
        )

    def _reach(self) -> float:
        return 2.0 * (self.snap.bound + self.snap.grid_step)  # unit coordinates of [-1, 1]: half-widths

    @property
    def report_range(self) -> tuple[float, float]:
        w = self.hi - self.lo
        return (self.lo - w * (self.snap.bound + self.snap.grid_step), self.lo + w * self.snap.bound)

    def variance(self, x: ArrayLike) -> float | NDArray[np.float64]:
        """Variance of one report: ``(hi - lo)^2 (2 lambda^2 + Lambda^2/12 + f (1 - f) h^2)``
        (see the class docstring; relative error of order ``2^-G``); ``inf`` beyond the doubles."""
        w, s = self.variance_parts(x)
        return _scaled(w, s)

    def variance_parts(self, x: ArrayLike) -> tuple[NDArray[np.float64], float]:
        """``(w, s)`` with ``variance(x) = w s^2``: ``s = (hi - lo)/2``, ``w = 4 (2 lambda^2 + ...)``."""
        u = self._unit01(x, "x")
        f = u * 2.0**self._g - np.floor(u * 2.0**self._g)
        lam, grid = float(self.snap.lam), float(self.snap.grid_step)
        return 4.0 * (2.0 * lam**2 + grid**2 / 12.0 + f * (1.0 - f) * self._h**2), self._half

    def delta(self, eps: ArrayLike) -> Any:
        return self.snap.delta(eps)

    def epsilon(self, delta: Any = 0.0) -> Any:
        return self.snap.epsilon(delta)

    def guarantee(self) -> Any:
        return self.snap.guarantee()

    def pld(self) -> Any:
        raise invalid("pld", repr(self), "a mechanism with a discrete privacy-loss law over answers (use guarantee())")


# --------------------------------------------------------------------------- Duchi et al.
class Duchi(BoundedNumeric):
    """Duchi, Jordan and Wainwright (2018): in unit coordinates the report is ``+C`` with
    probability ``(1 + u tanh(eps/2))/2`` and ``-C`` otherwise, ``C = (e^eps + 1)/(e^eps - 1)
    = coth(eps/2)``; unbiased, variance ``C^2 - u^2`` (times ``half^2``). The two reports are the
    :attr:`atoms`; the probabilities at ``u = 1`` and ``u = -1`` are ``e^eps/(1 + e^eps)`` and
    ``1/(1 + e^eps)``, so the exact eps is eps and ``K = 1/(1 + e^-eps)``."""

    name = "duchi"

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)
        with np.errstate(divide="ignore", over="ignore"):
            self._c = float(1.0 / np.tanh(self.eps / 2.0))
        self._check_reach(self._c)
        self._c_minus_1 = 2.0 / math.expm1(self.eps) if self.eps < 700 else 2.0 * math.exp(-self.eps)
        self._c_plus_1 = 2.0 / -math.expm1(-self.eps)
        self._atoms = np.array([self._mid - self._half * self._c, self._mid + self._half * self._c])
        self._atoms.setflags(write=False)
        #: log(1/(1 + e^eps)), the probability of the far report at an end of the range
        self._log_far = -_log1pexp(self.eps)

    @property
    def C(self) -> float:
        """The report magnitude ``coth(eps/2)`` in unit coordinates."""
        return self._c

    @property
    def atoms(self) -> NDArray[np.float64]:
        """The two reports ``mid - half C`` and ``mid + half C``."""
        return self._atoms

    def _log_plus(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """log P(+C | u) = log((1 + u tanh(eps/2))/2) without cancellation: with
        ``P(-C | u) = (1 - u)/2 + u/(1 + e^eps)`` (two non-negative terms for ``u >= 0``),
        ``log P(+C | u)`` is ``log1p(-P(-C | u))`` for ``u >= 0`` and ``log P(-C | -u)`` for ``u < 0``."""
        u = np.asarray(u, dtype=np.float64)
        a = np.abs(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_far = np.logaddexp(np.log1p(-a) - math.log(2.0), np.log(a) + self._log_far)  # log P(-C | |u|)
            near = np.log1p(-np.exp(log_far))
        return np.where(u >= 0, near, log_far)

    def _atom_log_mass(self, u: NDArray[np.float64], sign: float) -> NDArray[np.float64]:
        return self._log_plus(sign * np.asarray(u, dtype=np.float64))

    def _unit_log_density(self, u: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.full(np.broadcast(u, z).shape, -np.inf)

    def _plus_probability(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(self._log_plus(u))

    def _draw(self, u: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
        plus = rng.random(u.shape) < self._plus_probability(u)
        return np.where(plus, self._c, -self._c)

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        u = self._unit(values, "values")
        plus = as_generator(rng).random(u.shape) < self._plus_probability(u)
        return np.where(plus, self._atoms[1], self._atoms[0])  # the atoms exactly

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        u = self._scalar_unit(x)
        n = v.integer(n, "n", minimum=0)
        plus = as_generator(rng).random(n) < float(self._plus_probability(np.array(u)))
        return np.where(plus, self._atoms[1], self._atoms[0])

    def _reach(self) -> float:
        return self._c

    def _unit_variance(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        # C^2 - u^2 = (C - 1)(C + 1) + (1 - u)(1 + u): no cancellation where C -> 1
        return self._c_minus_1 * self._c_plus_1 + (1.0 - u) * (1.0 + u)

    def _log_k(self) -> float:
        return -_log1pexp(-self.eps)


# --------------------------------------------------------------------------- Piecewise
class Piecewise(BoundedNumeric):
    """The piecewise mechanism of Wang et al. (2019). In unit coordinates, with
    ``s = e^(eps/2)`` and ``C = (s + 1)/(s - 1)``: the report has density
    ``p = s (s - 1)/(2 (s + 1))`` on ``[l(u), r(u)]``, ``l(u) = (C + 1) u/2 - (C - 1)/2``,
    ``r(u) = l(u) + C - 1``, and ``p e^-eps`` on the rest of ``[-C, C]``. Unbiased, variance
    ``u^2/(s - 1) + (s + 3)/(3 (s - 1)^2)``. The window has probability ``s/(s + 1)``; for
    ``u = -1`` and ``u = 1`` the windows ``[-C, -1]`` and ``[1, C]`` are disjoint, so the exact
    eps is eps and ``K = 1/(1 + e^(-eps/2))``. No atoms."""

    name = "piecewise"

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)
        h = self.eps / 2.0
        with np.errstate(divide="ignore", over="ignore"):
            self._c = float(1.0 / np.tanh(h / 2.0))  # (s + 1)/(s - 1) = coth(eps/4)
        self._check_reach(self._c)
        self._em = math.expm1(h) if h < 709 else math.inf  # s - 1
        self._a = 1.0 / -math.expm1(-h)  # (C + 1)/2
        self._b = 1.0 / self._em  # (C - 1)/2
        # log p = log s + log(s - 1) - log 2 - log(s + 1), in logs for eps in the thousands
        log_em = math.log(self._em) if h < 709 else h + math.log1p(-math.exp(-h))
        self._log_hi = h + log_em - math.log(2.0) - _log1pexp(h)
        self._log_lo = self._log_hi - self.eps
        #: probability of the window, s/(s + 1)
        self.window_probability = 1.0 / (1.0 + math.exp(-h))

    @property
    def C(self) -> float:
        """The half-width of the report range in unit coordinates, ``coth(eps/4)``."""
        return self._c

    def window(self, x: ArrayLike) -> tuple[Any, Any]:
        """``(l, r)``: the high-density window of the answer ``x`` (clipped), in report units."""
        u = self._unit(x, "x")
        lo, hi = self._report(self._l(u)), self._report(self._l(u) + 2.0 * self._b)
        return (float(lo), float(hi)) if np.ndim(lo) == 0 else (lo, hi)

    def _l(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._a * u - self._b

    def _unit_log_density(self, u: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        l = self._l(u)
        r = l + 2.0 * self._b
        edge = self._c * (1.0 + 4.0 * np.finfo(float).eps)  # reports rounded at the range's ends stay inside
        inside = (z >= l) & (z <= r)
        return np.where(np.abs(z) <= edge, np.where(inside, self._log_hi, self._log_lo), -np.inf)

    def _draw(self, u: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
        l = self._l(u)
        width = 2.0 * self._b  # C - 1
        inside = rng.random(u.shape) < self.window_probability
        w = rng.random(u.shape)
        z_in = l + w * width
        # outside: uniform on [-C, l) and (r, C], total length C + 1 = 2a
        o = -self._c + w * (2.0 * self._a)
        z_out = np.where(o < l, o, o + width)
        return np.clip(np.where(inside, z_in, z_out), -self._c, self._c)

    def _reach(self) -> float:
        return self._c

    def _unit_variance(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        # u^2/(s-1) + (s+3)/(3 (s-1)^2) = u^2 b' + (1 + 4 b') b'/3 with b' = 1/(s-1)
        b = self._b
        return u * u * b + (1.0 + 4.0 * b) * b / 3.0

    def _log_k(self) -> float:
        return -_log1pexp(-self.eps / 2.0)


# --------------------------------------------------------------------------- Square Wave
#: Largest eps of :class:`SquareWave`: its window's half-width b is about eps e^-eps, a
#: subnormal double from eps = 708 on.
SQUARE_WAVE_MAX_EPS = 700.0


def square_wave_b(eps: float) -> float:
    """The half-width ``b`` of the Square Wave's window (Li et al. 2020) on answers in
    ``[0, 1]``: ``(eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps))``, the value that
    maximises the mutual information between answer and report. Both differences cancel
    for small eps: there their Taylor series (``sum (n-1) eps^n / n!`` over
    ``2 e^eps sum eps^n / n!``, n >= 2); ``b`` tends to 1/2 as eps tends to 0."""
    if eps < 1.0:
        num = den = 0.0
        term = 1.0 / 2.0  # eps^(n-2) / n! at n = 2
        for n in range(2, 40):
            num += (n - 1) * term
            den += term
            term *= eps / (n + 1)
        return num / (2.0 * math.exp(eps) * den)
    return (eps - 1.0 + math.exp(-eps)) / (2.0 * (math.expm1(eps) - eps))


class SquareWave(BoundedNumeric):
    """The Square Wave mechanism of Li et al. (2020), its reports made unbiased for the
    answer. On ``v = (u + 1)/2`` in ``[0, 1]`` the raw report ``w`` has density
    ``p = e^eps q`` on the window ``[v - b, v + b]`` and ``q = 1/(1 + 2 b e^eps)`` on the rest
    of ``[-b, 1 + b]`` (:func:`square_wave_b`). Its mean is ``(1 - beta)/2 + beta v`` with
    ``beta = 2 b (p - q) = (1 - q)(1 - e^-eps)``, so the unit report ``z = (2 w - 1)/beta`` is
    unbiased for ``u``; it lies in ``[-C, C]``, ``C = (1 + 2 b)/beta``. Variance
    ``4 Var(w)/beta^2`` with ``Var(w) = q ((1 + b - v)^3 + (v + b)^3)/3 + beta b^2/3 -
    (1 - beta)^2 (1/2 - v)^2``. The window has probability ``2 b p = 1 - q``; the windows of
    ``v = 0`` and ``v = 1`` are disjoint (``b < 1/2``), so the privacy loss takes the values
    eps, 0, -eps, the exact eps is eps and ``K = 1 - q``. The raw reports, ``w = (1 + beta z)/2``,
    are what the Square Wave's distribution estimate (EMS) decodes. No atoms."""

    name = "square_wave"

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)
        if self.eps > SQUARE_WAVE_MAX_EPS:
            raise invalid(
                "eps",
                eps,
                f"at most {SQUARE_WAVE_MAX_EPS:g} for square_wave (its window, about eps e^-eps wide, "
                "is a subnormal double beyond)",
            )
        self.b = square_wave_b(self.eps)
        # log(2 b e^eps) without overflow; q = 1/(1 + 2 b e^eps)
        log_2bp = math.log(2.0 * self.b) + self.eps
        self._log_q = -_log1pexp(log_2bp)
        self.q = math.exp(self._log_q)
        self._log_p = self.eps + self._log_q
        one_m_q = -math.expm1(self._log_q)
        self.beta = one_m_q * -math.expm1(-self.eps)
        self._one_m_beta = self.q + one_m_q * math.exp(-self.eps)  # 1 - beta, without cancellation
        # beta is about eps/2 at small eps: 0 (and the reports unbounded) below about 1e-323
        self._c = (1.0 + 2.0 * self.b) / self.beta if self.beta > 0.0 else math.inf
        self._check_reach(self._c)
        self._log_jac = math.log(self.beta / 2.0)  # dw/dz
        self._log_k_value = math.log1p(-self.q)

    @property
    def C(self) -> float:
        """The half-width of the report range in unit coordinates, ``(1 + 2 b)/beta``."""
        return self._c

    def raw(self, y: ArrayLike) -> NDArray[np.float64]:
        """The Square Wave's own reports ``w`` in ``[-b, 1 + b]`` behind reports ``y`` of this
        mechanism (an affine map; what a distribution estimate decodes)."""
        z = (np.asarray(y, dtype=np.float64) - self._mid) / self._half
        return (1.0 + self.beta * z) / 2.0

    def _draw(self, u: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
        b = self.b
        inside = rng.random(u.shape) >= self.q  # the window has probability 1 - q
        r = rng.random(u.shape)
        v = u + 1.0
        v *= 0.5
        # the rest, [-b, v - b) and (v + b, 1 + b], is one unit long: r - b, moved past the
        # window when r >= v (in place, few temporaries: this is the hot path of a survey)
        rest = r - b
        np.add(rest, 2.0 * b, out=rest, where=r >= v)
        w = r * (2.0 * b)  # the window: v - b + 2 b r
        w += v
        w -= b
        np.copyto(w, rest, where=~inside)
        np.clip(w, -b, 1.0 + b, out=w)
        w *= 2.0
        w -= 1.0
        w /= self.beta
        return np.clip(w, -self._c, self._c, out=w)

    def _unit_log_density(self, u: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        v = (u + 1.0) / 2.0
        w = (1.0 + self.beta * z) / 2.0
        edge = self._c * (1.0 + 4.0 * np.finfo(float).eps)  # reports rounded at the range's ends stay inside
        inside = np.abs(w - v) <= self.b
        return np.where(np.abs(z) <= edge, np.where(inside, self._log_p, self._log_q) + self._log_jac, -np.inf)

    def _reach(self) -> float:
        return self._c

    def _unit_variance(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        v = (u + 1.0) / 2.0
        b, beta = self.b, self.beta
        second = self.q * ((1.0 + b - v) ** 3 + (v + b) ** 3) / 3.0 + beta * b * b / 3.0  # E[(w - v)^2]
        bias = self._one_m_beta * (0.5 - v)  # E[w] - v
        with np.errstate(over="ignore"):  # beta near 1e-160 and below: beyond the doubles, inf
            return 4.0 * ((second - bias * bias) / beta) / beta

    def _log_k(self) -> float:
        return self._log_k_value


# --------------------------------------------------------------------------- Hybrid
class Hybrid(BoundedNumeric):
    """The hybrid mechanism of Wang et al. (2019): for eps above :data:`HYBRID_THRESHOLD`
    (``2 log s*``, ``3 s*^3 - s*^2 + s* - 7 = 0``, about 0.609352), :class:`Piecewise` with
    probability ``alpha = 1 - e^(-eps/2)`` and :class:`Duchi` with ``1 - alpha``; at or below it,
    Duchi's alone (``alpha = 0``). This ``alpha`` makes the variance the same for every answer,
    ``alpha V_PM(0) + (1 - alpha) C_D^2``, the smallest worst case over all mixtures
    (docs/theory.md sec. 13). The law is ``alpha`` times Piecewise's density plus the two atoms
    ``+-C_D`` with ``1 - alpha`` times Duchi's probabilities; both parts have privacy loss in
    ``{eps, 0, -eps}`` and are at their worst for the same answers, so the exact eps is eps and
    ``K = alpha/(1 + e^(-eps/2)) + (1 - alpha)/(1 + e^-eps)``."""

    name = "hybrid"

    def __init__(self, eps: float, lo: float = -1.0, hi: float = 1.0) -> None:
        super().__init__(eps, lo, hi)
        self.duchi = Duchi(self.eps, self.lo, self.hi)
        self.mixing = self.eps > HYBRID_THRESHOLD
        self.piecewise = Piecewise(self.eps, self.lo, self.hi) if self.mixing else None
        #: probability of the Piecewise part
        self.alpha = -math.expm1(-self.eps / 2.0) if self.mixing else 0.0
        self._log_alpha = math.log(self.alpha) if self.mixing else -math.inf
        self._log_1m_alpha = -self.eps / 2.0 if self.mixing else 0.0

    @property
    def atoms(self) -> NDArray[np.float64]:
        """Duchi's two reports."""
        return self.duchi.atoms

    def _atom_log_mass(self, u: NDArray[np.float64], sign: float) -> NDArray[np.float64]:
        return self._log_1m_alpha + self.duchi._atom_log_mass(u, sign)

    def _unit_log_density(self, u: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.piecewise is None:
            return np.full(np.broadcast(u, z).shape, -np.inf)
        return self._log_alpha + self.piecewise._unit_log_density(u, z)

    def _draw(self, u: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
        if self.piecewise is None:
            return self.duchi._draw(u, rng)
        pm = rng.random(u.shape) < self.alpha
        out = np.empty(u.shape)
        out[pm] = self.piecewise._draw(u[pm], rng)
        out[~pm] = self.duchi._draw(u[~pm], rng)
        return out

    def _reports(self, u: NDArray[np.float64], rng: RNGLike) -> NDArray[np.float64]:
        z = self._draw(u, as_generator(rng))
        out = self._report(z)
        # Duchi's reports are the atoms exactly (log_density recognises them by equality)
        return np.where(z == self.duchi.C, self.atoms[1], np.where(z == -self.duchi.C, self.atoms[0], out))

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        return self._reports(self._unit(values, "values"), rng)

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        u = self._scalar_unit(x)
        n = v.integer(n, "n", minimum=0)
        return self._reports(np.full(n, u), rng)

    def _reach(self) -> float:
        # Piecewise's range [-coth(eps/4), coth(eps/4)] contains Duchi's atoms +-coth(eps/2)
        return self.duchi.C if self.piecewise is None else max(self.piecewise.C, self.duchi.C)

    def _unit_variance(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        vd = self.duchi._unit_variance(u)
        if self.piecewise is None:
            return vd
        return self.alpha * self.piecewise._unit_variance(u) + (1.0 - self.alpha) * vd

    def _log_k(self) -> float:
        kd = self.duchi._log_k()
        if self.piecewise is None:
            return kd
        return float(np.logaddexp(self._log_alpha + self.piecewise._log_k(), self._log_1m_alpha + kd))
