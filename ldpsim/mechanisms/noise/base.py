"""The shared machinery of the noise families: :class:`NoiseMechanism` (the base class,
implementing the mechanism contract of :mod:`ldpsim.mechanisms.base`), the atom-based base
of the families whose privacy loss takes finitely many values, and the validation and
numerical helpers they share. See :mod:`ldpsim.mechanisms.noise` for the conventions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._bisect import largest_ok, largest_ok_below, smallest_ok
from ldpsim._deprecate import renamed
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.base import Mechanism
from ldpsim.privacy import composition  # composition.f looked up per call: a test swaps the module
from ldpsim.privacy.guarantees import MechanismGuarantee
from ldpsim.privacy.pld import DiscretePLD

_SQRT2 = math.sqrt(2.0)
_METHODS = ("exact", "corollary", "worst_case")
_FLOAT_MAX = float(np.finfo(np.float64).max)
_LOG_FLOAT_MAX = math.log(_FLOAT_MAX)
#: Largest noise scale (Laplace scale, Gaussian sigma, sensitivity/eps): draws reach about 50
#: scales with probability 1e-22 and 1000 scales never, so they stay finite floats below it.
MAX_NOISE_SCALE = _FLOAT_MAX / 1024.0
#: numpy's geometric sampler returns int64 and saturates at 2^63 - 1 for p below ~1e-18; below
#: this p the geometric draws come from floor(E / rate), E ~ Exp(1) (the same law, in floats).
_GEOMETRIC_FLOAT_P = 2.0**-40


# --------------------------------------------------------------------------- validation
#: a number > 0 (finite unless ``finite=False``): the public validator
_positive = v.positive


def _scale(value: object, name: str) -> float:
    """A noise scale given directly: finite, > 0 and at most :data:`MAX_NOISE_SCALE`."""
    x = _positive(value, name)
    if x > MAX_NOISE_SCALE:
        raise invalid(
            name, value, f"a number in (0, {MAX_NOISE_SCALE:.4g}] (noise draws of this scale must stay finite floats)"
        )
    return x


def _eps_for_scale(eps: float, sens: float, family: str) -> float:
    """``sensitivity / eps``, the noise scale of a family calibrated by eps; refuses eps below
    the supported range (``sensitivity / MAX_NOISE_SCALE``) naming eps."""
    lam = sens / eps
    if not lam <= MAX_NOISE_SCALE:
        raise invalid(
            "eps",
            eps,
            f"eps >= {sens / MAX_NOISE_SCALE:.4g} (sensitivity / {MAX_NOISE_SCALE:.4g}): below it the "
            f"{family} noise scale sensitivity/eps is beyond the float range of its draws",
        )
    if not lam > 0.0:  # a subnormal sensitivity at a large eps (5e-324 / 700): sens/scale was 0/0
        raise invalid(
            "sensitivity",
            sens,
            f"a sensitivity >= {eps * 5e-324:.4g} at eps = {eps:g} (the {family} noise scale "
            "sensitivity/eps underflows to 0 below it)",
        )
    return lam


def _open_delta(value: object, name: str = "delta", upper: float = 1.0) -> float:
    expected = f"a number in (0, {upper:g})"
    d = v.as_float(value, name, expected)
    if not (0.0 < d < upper):
        raise invalid(name, value, expected)
    return d


_eps_array = v.eps_array


def _alpha_array(alpha: ArrayLike) -> tuple[NDArray[np.float64], bool]:
    expected = "a number in [0, 1]"
    if np.ndim(alpha) == 0:
        a = v.as_float(alpha, "alpha", expected)
        if not (0.0 <= a <= 1.0):
            raise invalid("alpha", alpha, expected)
        return np.array(a, dtype=np.float64), True
    arr = v.real_array(alpha, "alpha", "numbers in [0, 1]")
    bad = np.flatnonzero(~((arr.reshape(-1) >= 0) & (arr.reshape(-1) <= 1)))
    if bad.size:
        i = int(bad[0])
        raise invalid(f"alpha[{i}]", float(arr.reshape(-1)[i]), expected)
    return arr, False


def _out(arr: NDArray[np.float64], scalar: bool) -> float | NDArray[np.float64]:
    return float(arr) if scalar else arr


def _method(method: object) -> str:
    if method not in _METHODS:
        raise invalid("method", method, "one of 'exact', 'corollary', 'worst_case'")
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
    return v.real_array(y, name, "real numbers"), np.ndim(y) == 0


# --------------------------------------------------------------------------- base class
class NoiseMechanism(Mechanism):
    """Base class: additive noise ``Z`` for a numeric query of sensitivity ``sensitivity``.

    It implements the mechanism contract (:class:`ldpsim.mechanisms.base.Mechanism`) for a
    scalar input ``x`` (the query value) and the real report ``x + Z``: :meth:`sample`,
    :meth:`log_density`, :meth:`epsilon`, :meth:`delta`, :meth:`guarantee`, :attr:`params`
    and :meth:`neighbours` (the inputs ``0`` and ``sensitivity``, the full-sensitivity shift
    that attains the privacy loss).

    Subclasses implement ``_log_delta(t, shift)`` (vectorised over ``t``), ``_tradeoff``,
    ``variance``, ``_sample``, ``_log_pdf`` (vectorised log density of the noise) and
    ``_calibrate_single`` / ``_calibrate_corollary``.
    Privacy quantities refer to the worst case, the full-sensitivity shift; ``shift=`` gives
    those of a smaller (or larger) shift.
    """

    name = "noise"
    family = "noise"
    #: whether the pair at full sensitivity is pure eps-DP by design
    pure = False

    sensitivity: float

    if TYPE_CHECKING:  # implemented by every subclass (see above); declared here for the type checker only

        def _sample(self, size: Any, rng: Any) -> NDArray[Any]: ...

        def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]: ...

        def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]: ...

    # ------------------------------------------------------------------ the contract
    @property
    def params(self) -> dict[str, Any]:
        """The parameters that identify the mechanism (equality, hash and repr)."""
        return self._params()

    def _params(self) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    def neighbours(self) -> list[tuple[Any, Any]]:
        """The pair of query values at the full sensitivity, ``[(0.0, sensitivity)]``: the
        worst case of every family here."""
        return [(0.0, self.sensitivity)]

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        """``n`` independent reports ``x + Z`` for the query value ``x`` (a finite number):
        a float64 array of length ``n``."""
        x0 = v.finite_array(x, "x", "a finite real number")
        if x0.ndim != 0:
            raise invalid("x", x, "a finite real number")
        n = v.integer(n, "n", minimum=0)
        noise = np.asarray(self._sample((n,), self._random_source(rng)), dtype=np.float64)
        return float(x0) + noise

    def _random_source(self, rng: Any) -> Any:
        """The random source ``_sample`` draws from: a numpy Generator (:func:`as_generator`;
        ``rng="os"`` is refused with one line). Samplers built only on exact uniform
        integers override this with :func:`ldpsim._rng.as_source`, which also takes the
        operating system's generator."""
        return as_generator(rng)

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

    def guarantee(self) -> MechanismGuarantee:
        """This mechanism's exact privacy guarantee as a :class:`ldpsim.privacy.Guarantee`
        (for overlaying with others in :func:`ldpsim.report.regions.plot_regions`)."""
        return MechanismGuarantee(self, label=repr(self))

    def _loss_sup(self, shift: float) -> float:
        """Largest finite privacy-loss value (inf if unbounded): delta is constant beyond it."""
        return math.inf

    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """Smallest eps >= 0 with ``delta(eps) <= delta`` (``inf`` if none; for ``delta = 0``
        the pure eps). Bisection on floats; the returned eps always satisfies the bound."""
        if np.ndim(delta) == 0:
            return self._epsilon_scalar(v.delta(delta, "delta"))
        arr = v.real_array(delta, "delta", "numbers in [0, 1]")
        flat = arr.reshape(-1)
        for i, d in enumerate(flat.tolist()):
            if not (0.0 <= d <= 1.0):
                raise invalid(f"delta[{i}]", d, "a number in [0, 1]")
        return np.array([self._epsilon_scalar(d) for d in flat.tolist()]).reshape(arr.shape)

    def _epsilon_scalar(self, target: float) -> float:
        s = self.sensitivity
        ld = lambda t: float(self._log_delta(np.array(t), s))
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
        ok = lambda t: (lambda l: l <= log_target and float(np.exp(l)) <= target)(ld(t))
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
            name,
            value,
            f"{limit} for a finite variance (the variance is about "
            f"10^{lv / math.log(10.0):.1f}, beyond the largest float; std = {math.exp(0.5 * lv):.6g} is available)",
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
        g = self._random_source(rng)
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
        xa = v.finite_array(x, "x", "finite real numbers")
        ya, scalar = _points(y)
        with np.errstate(invalid="ignore"):
            d = ya - xa
        out = np.asarray(self.log_pdf(d), dtype=np.float64)
        return _out(out, scalar and np.ndim(x) == 0)

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError

    def privatize(self, values: ArrayLike, rng: RNGLike = None) -> float | NDArray[np.float64]:
        """``values + noise`` elementwise (one noise draw per value, vectorised)."""
        x = v.finite_array(values, "values", "finite real numbers")
        noise = self._sample(x.shape, self._random_source(rng))
        out = x + np.asarray(noise, dtype=np.float64)
        return float(out) if np.ndim(values) == 0 else out

    # repr, == and hash come from Mechanism: the class name and ``params``

    # ------------------------------------------------------------------ calibration
    @classmethod
    @renamed(old="k", new="compositions", since="0.1", removed_in="0.2")
    def calibrate(
        cls, eps: float, delta: float = 0.0, sensitivity: float = 1.0, compositions: int = 1, method: str = "exact"
    ) -> "NoiseMechanism":
        """The mechanism of this family with the least noise meeting (eps, delta)-DP for the
        k-fold composition of the same query, k = ``compositions`` (1: one release; the
        keyword ``k=`` is its deprecated spelling, accepted with a warning until 0.2).

        ``k = 1``: the exact calibration of the family (``method`` is only validated).
        ``k > 1``: ``method="corollary"`` -- Corollary 4.1 of Kairouz et al. 2015 (docs/theory.md sec. 6): each
        query is (eps0, delta0)-DP with ``eps0 = eps / sqrt(4 k log(e + eps/delta))``,
        ``delta0 = delta / (2k)`` (needs delta > 0). ``method="exact"`` -- Gaussian: GDP
        (k-fold is exactly ``sqrt(k) Delta/sigma``-GDP); Laplace: its own privacy-loss law
        composed k times (:meth:`Laplace._calibrate_exact_composed`, k up to
        ``LAPLACE_EXACT_MAX_COMPOSITIONS``); the other pure families: as ``"worst_case"``;
        truncated Laplace: not available. ``method="worst_case"`` (pure families) -- the
        largest per-query eps0 whose exact optimal k-fold composition of eps0-DP mechanisms
        meets (eps, delta) (``ldpsim.privacy.composition.optimal_delta``): the worst case over
        every eps0-DP mechanism, more noise than Laplace needs (formerly Laplace's default).
        """
        eps = _positive(eps, "eps")
        delta = v.delta(delta, "delta")
        sens = cls._check_sensitivity(sensitivity)
        k = v.integer(compositions, "compositions", minimum=1)
        method = _method(method)
        if k == 1:
            return cls._calibrate_single(eps, delta, sens)
        if method == "corollary":
            if not delta > 0:
                raise invalid(
                    "delta", delta, "a number in (0, 1] for method='corollary' (Corollary 4.1 needs delta > 0)"
                )
            eps0, delta0 = composition.per_query_budget(eps, delta, k)
            try:
                return cls._calibrate_corollary(eps0, delta0, sens)
            except LdpSimError as exc:
                raise LdpSimError(
                    f"{exc} (the per-query budget of Corollary 4.1 for eps = {eps:g}, delta = {delta:g}, "
                    f"compositions = {k}: eps0 = {eps0:.6g}, delta0 = {delta0:.6g})"
                ) from None
        if method == "worst_case":
            if not cls.pure:
                raise invalid(
                    "method",
                    method,
                    f"'exact' or 'corollary' for {cls.__name__} ('worst_case' calibrates a pure "
                    "family by the optimal composition of eps0-DP mechanisms)",
                )
            return cls._calibrate_worst_case(eps, delta, sens, k)
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
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, compositions: int) -> "NoiseMechanism":
        """``method="exact"`` for k > 1 releases; pure families without their own: the worst case."""
        return cls._calibrate_worst_case(eps, delta, sens, compositions)

    @classmethod
    def _calibrate_worst_case(cls, eps: float, delta: float, sens: float, compositions: int) -> "NoiseMechanism":
        """Pure families: largest eps0 with optimal_delta(eps0, 0, k, eps) <= delta, k = ``compositions``.

        The delta of the composition increases continuously with eps0 (from 0 at eps0 = eps/k
        to 1), so the root of ``log optimal_delta - log delta`` in ``log eps0`` is bracketed and
        found by Brent's method (a dozen evaluations, each O(sqrt(k)) terms), then moved to the
        largest float at or below it that meets the target (bounded bracketing and bisection)."""
        k = compositions
        if delta >= 1.0:
            raise invalid(
                "delta",
                delta,
                "a number in [0, 1) for the exact composed calibration (at delta = 1 every "
                "mechanism qualifies, so there is no least noise)",
            )
        if delta == 0.0:
            eps0 = eps / k  # at delta = 0 basic composition is exact
        else:
            log_target = math.log(delta)
            ok = lambda e0: float(composition.optimal_delta(e0, 0.0, k, eps)) <= delta

            def g(log_e0: float) -> float:  # clipped below: log delta is -inf at eps0 <= eps/k
                d = float(composition.optimal_delta(math.exp(log_e0), 0.0, k, eps))
                return max(math.log(d) if d > 0 else -math.inf, log_target - 1e3) - log_target

            lo, hi, factor = eps / k, eps, 16.0
            for _ in range(64):  # delta -> 1 as eps0 grows: a bracket exists for delta < 1
                if not ok(hi):
                    break
                lo, hi, factor = hi, factor * hi, min(factor * factor, 1e100)
            else:  # pragma: no cover - delta within rounding of 1
                raise invalid("delta", delta, "a number clearly below 1 for the exact composed calibration")
            if ok(lo) and lo > 0 and math.isfinite(g(math.log(lo))) and g(math.log(lo)) < 0 < g(math.log(hi)):
                from scipy import (
                    optimize,
                )  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

                root = optimize.brentq(g, math.log(lo), math.log(hi), xtol=1e-14, rtol=4 * np.finfo(float).eps)
                eps0 = largest_ok_below(ok, min(max(math.exp(root), lo), hi), "the composed target")
            else:
                eps0 = largest_ok(ok, lo, hi, iters=200)
        if not eps0 > 0:
            raise invalid(
                "eps",
                eps,
                f"a composed target whose per-query eps0 = {eps0!r} is > 0 (compositions = {k} is too large)",
            )
        try:
            mech = cls._calibrate_single(eps0, 0.0, sens)
        except LdpSimError as exc:
            raise LdpSimError(
                f"{exc} (the per-query eps0 of the exact {k}-fold calibration for eps = {eps:g}, delta = {delta:g})"
            ) from None
        # guarantee: the mechanism's own pure eps meets the composed target
        for _ in range(64):
            e_own = float(mech.epsilon(0.0))
            good = (k * e_own <= eps) if delta == 0.0 else float(composition.optimal_delta(e_own, 0.0, k, eps)) <= delta
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
            f"0 for a single {family} release (a pure eps-DP family; for delta > 0 use Gaussian or TruncatedLaplace, "
            "or compositions > 1)",
        )


# --------------------------------------------------------------------------- atom-based families
class _AtomMechanism(NoiseMechanism):
    """Families whose privacy loss has finitely many values (atoms): delta and the
    trade-off are exact finite sums over the atoms ``(L_i, P(L = L_i), R(L = L_i))``."""

    def _atoms(self, shift: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        raise NotImplementedError

    def loss_atoms(
        self, shift: float | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The privacy-loss law: values ``L`` (ascending), their P-masses and R-masses."""
        return self._atoms(self._shift(shift))

    def pld(self, shift: float | None = None) -> DiscretePLD:
        """The exact privacy-loss law as a :class:`ldpsim.privacy.DiscretePLD` (composes
        exactly with :meth:`DiscretePLD.self_compose`)."""
        L, log_p, log_r = self._log_atoms(self._shift(shift))
        both = np.isfinite(log_p) & np.isfinite(log_r)
        P, R = np.exp(log_p), np.exp(log_r)
        return DiscretePLD.from_atoms(
            L[both], log_p[both], float(P[~np.isfinite(log_r)].sum()), float(R[~np.isfinite(log_p)].sum())
        )

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
