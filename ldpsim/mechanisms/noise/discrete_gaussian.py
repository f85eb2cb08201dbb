"""The discrete Gaussian mechanism (Canonne, Kamath and Steinke 2020): noise ``N_Z(0, sigma2)``
on the integers, an exact integer-only sampler, and its exact privacy profile."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.noise.base import NoiseMechanism
from ldpsim.mechanisms.noise.exact import ExactSampling, _as_fraction, discrete_gaussian
from ldpsim.mechanisms.noise.geometric import _integer_shift
from ldpsim.privacy.gdp import largest_mu

#: the supported range of sigma2 (the sums behind delta, the trade-off and epsilon run over
#: about 10 sigma integers, so sigma2 above 10^10 would make them slow)
SIGMA2_MIN = Fraction(1, 1024)
SIGMA2_MAX = Fraction(10**10)
#: calibration grid: sigma2 in (1/1024) Z
CALIBRATION_DENOMINATOR = 1024
#: a sum is extended until the bound on what is left is below e^-42 (5.7e-19) of the sum
_REL_STOP = 42.0
_LOG_SQRT_PI_2 = 0.5 * math.log(math.pi / 2.0)


def _log_gauss_tail_bound(h: int, sigma: float, s2: float) -> float:
    """log of a bound on ``sum_{j >= 1} exp(-(h + j)^2/(2 sigma2))`` for an integer ``h >= 0``:
    ``exp(-h^2/(2 sigma2)) sum_j exp(-j h/sigma2 - j^2/(2 sigma2))``, and the last sum is at
    most both the geometric series ``1/(e^(h/sigma2) - 1)`` (h > 0) and
    ``int_0^inf exp(-x^2/(2 sigma2)) dx = sqrt(pi/2) sigma``."""
    lead = -0.5 * (h / sigma) ** 2
    x = h / s2
    if h <= 0:
        geo = math.inf
    elif x > 30.0:  # log(1/(e^x - 1)) = -x - log(1 - e^-x)
        geo = -x - math.log1p(-math.exp(-x))
    else:
        geo = -math.log(math.expm1(x))
    return lead + min(geo, _LOG_SQRT_PI_2 + math.log(sigma))


class DiscreteGaussian(ExactSampling, NoiseMechanism):
    """Discrete Gaussian noise ``N_Z(0, sigma2)``: ``p(z) = exp(-z^2/(2 sigma2)) / C`` on the
    integers, ``C = sum_z exp(-z^2/(2 sigma2))`` (Canonne, Kamath and Steinke 2020).

    ``sigma2``: a rational (Fraction, int, float -- its exact binary value -- or ``"p/q"``) in
    ``[1/1024, 10^10]``, kept as a Fraction; ``sensitivity``: an integer >= 1. The sampler is
    exact, with integer arithmetic only (:func:`ldpsim.mechanisms.noise.exact.discrete_gaussian`),
    and accepts ``rng="os"``.

    **Privacy (exact).** For the pair ``P = N_Z(0, sigma2)``, ``R = N_Z(D, sigma2)`` (integer
    shift D, by default the sensitivity) the privacy loss is ``L(z) = log p(z)/r(z) =
    ((z - D)^2 - z^2)/(2 sigma2) = (D^2 - 2 D z)/(2 sigma2)``, unbounded, so the pure eps is
    infinite and

        delta(eps) = sum_{L(z) > eps} p(z) (1 - e^(eps - L(z)))
                   = P(Z > eps sigma2/D - D/2) - e^eps P(Z > eps sigma2/D + D/2)

    (CKS 2020, Theorem 7; the second form by ``z -> -z``). The reflection ``z -> D - z`` maps P
    to R, so both directions give the same delta. It is computed as the log of the sum of
    the positive terms ``exp(-w^2/(2 sigma2)) (1 - e^(-g(w)))``, ``w >= k``, ``k`` the least
    integer above ``eps sigma2/D - D/2`` (exact, in Fractions) and ``g(w) = (D^2 +
    2 D w)/(2 sigma2) - eps > 0`` (``g(k)`` exact, then a float) -- no cancellation, in log
    space, so delta down to 1e-300 and below and eps in the hundreds work. Truncation: the
    sum runs over consecutive integers until the bound of :func:`_log_gauss_tail_bound` on
    the rest (each term is at most ``exp(-w^2/(2 sigma2))``) is below e^-42 of the sum, and
    the terms left of ``-cut`` (when ``k < -cut``) are bounded the same way; so the
    relative truncation error is below 1.2e-18, far below the float rounding (about 1e-13
    relative in the log-sum-exp of up to 10^6 terms). ``log C``: Poisson summation, an exact
    identity, ``C = sqrt(2 pi) sigma (1 + 2 sum_{k>=1} exp(-2 pi^2 sigma2 k^2))`` for
    sigma >= 1 (terms k <= 4; the rest is below e^-490), a direct sum over ``|z| <= 12``
    below (the rest below e^-72).

    ``epsilon(delta)``: bisection on this delta (inherited). Trade-off: the Neyman-Pearson test
    rejects P on ``{z > j}`` and with probability w at ``z = j``: ``alpha = P(Z > j) + w p(j)``,
    ``beta = P(Z <= j - D) - w p(j - D)``, piecewise linear between integer j (over
    ``|z| <= 10 sigma + D``; the mass outside is below 1e-21, an absolute error).

    **zCDP**: ``rho = D^2/(2 sigma2)`` (CKS 2020, Theorem 4: the Renyi divergence of order
    alpha of integer-shifted discrete Gaussians is at most ``alpha D^2/(2 sigma2)``, with
    equality when ``alpha D`` is an integer, so this rho is the least). No GDP statement is
    claimed: CKS show the discrete Gaussian's privacy is close to that of the continuous
    Gaussian ``N(0, sigma2)`` (mu = D/sigma GDP), not that it is dominated by it.

    **Variance** (exact): ``sigma2 (1 - 4 pi^2 sigma2 B/A)`` with ``A = 1 + 2 sum_{k>=1}
    e^(-2 pi^2 sigma2 k^2)`` and ``B = 2 sum_{k>=1} k^2 e^(-2 pi^2 sigma2 k^2)`` (Poisson summation
    of ``sum z^2 e^(-z^2/(2 sigma2))``), so always below sigma2 (as CKS 2020 note); a direct sum
    for sigma < 1.

    :meth:`calibrate` gives the smallest sigma2 on the grid ``(1/1024) Z`` whose exact
    delta(eps) is at most delta.
    """

    name = "discrete_gaussian"
    family = "discrete_gaussian"
    pure = False

    def __init__(self, sigma2: Any, sensitivity: int = 1) -> None:
        f = _as_fraction(sigma2)
        if not SIGMA2_MIN <= f <= SIGMA2_MAX:
            raise invalid(
                "sigma2", sigma2, "a rational in [1/1024, 10^10] (the supported range of the discrete Gaussian)"
            )
        self.sigma2 = f
        self.sensitivity = DiscreteGaussian._check_sensitivity(sensitivity)
        self._s2 = float(f)
        self._sigma = math.sqrt(self._s2)
        self._log_c = self._log_normaliser()

    @classmethod
    def _check_sensitivity(cls, sensitivity: object) -> int:
        # as the geometric family's: its privacy sums run over int64 offsets from about -D/2
        # (an int of 1e300 overflowed them: OverflowError)
        return _integer_shift(sensitivity, "sensitivity")

    def _params(self) -> dict[str, Any]:
        f = self.sigma2
        return {"sigma2": float(f), "sigma2_exact": f"{f.numerator}/{f.denominator}", "sensitivity": self.sensitivity}

    def _shift(self, shift: object) -> float:
        if shift is None:
            return self.sensitivity

        return _integer_shift(shift, "shift")

    @property
    def sigma(self) -> float:
        """``sqrt(sigma2)`` (a float)."""
        return self._sigma

    # ------------------------------------------------------------------ the law
    def _log_normaliser(self) -> float:
        s2, sig = self._s2, self._sigma
        if sig >= 1.0:
            extra = sum(math.exp(-2.0 * math.pi**2 * s2 * k * k) for k in range(1, 5))
            return 0.5 * math.log(2.0 * math.pi) + math.log(sig) + math.log1p(2.0 * extra)
        z = np.arange(-12, 13, dtype=np.float64)
        return float(logsumexp(-0.5 * z * z / s2))

    def pmf(self, z: ArrayLike) -> NDArray[np.float64]:
        """The probability mass at the integers ``z`` (0 elsewhere)."""
        return np.exp(np.asarray(self.log_pdf(np.asarray(z, dtype=np.float64)), dtype=np.float64))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        integer = np.isfinite(y) & (np.floor(y) == y)
        z = np.where(integer, y, 0.0) / self._sigma
        return np.where(integer, -0.5 * z * z - self._log_c, -np.inf)

    def _sample(self, size: Any, rng: Any) -> NDArray[np.int64]:
        return np.asarray(discrete_gaussian(self.sigma2, size, rng), dtype=np.int64)

    # ------------------------------------------------------------------ privacy
    def _log_tail(self, k: int, g0: float, r: float) -> float:
        """log of ``sum_{w >= k} exp(-w^2/(2 sigma2)) (1 - exp(-(g0 + (w - k) r)))`` (terms
        positive), truncated with the bounds stated in the class docstring."""
        sig, s2 = self._sigma, self._s2
        cut = int(math.ceil(math.sqrt(120.0) * sig)) + 2
        while True:
            lo = max(k, -cut)
            acc = -math.inf
            start = lo
            z0 = max(lo, 0)
            end = z0 + int(math.ceil(90.0 * s2 / (z0 + math.sqrt(float(z0) ** 2 + 90.0 * s2)))) + 2
            while True:
                w = np.arange(start, end + 1, dtype=np.int64)
                wf = w.astype(np.float64)
                with np.errstate(divide="ignore"):
                    terms = -0.5 * (wf / sig) ** 2 + np.log(-np.expm1(-(g0 + (w - k).astype(np.float64) * r)))
                top = float(np.max(terms))  # log-sum-exp by hand: scipy's took half the time of a
                # calibration (1.7 s at eps = 1e-6, 40 sums of ~1e5 terms)
                if top > -math.inf:
                    acc = float(np.logaddexp(acc, top + math.log(float(np.sum(np.exp(terms - top))))))
                if end >= 0 and _log_gauss_tail_bound(end, sig, s2) <= acc - _REL_STOP:
                    break
                start, end = end + 1, end + max(1024, 2 * (end - lo))
            if lo == k or _log_gauss_tail_bound(cut, sig, s2) <= acc - _REL_STOP:
                return acc
            cut *= 2  # pragma: no cover - the left part is far below the sum in practice

    def _log_delta_one(self, eps: float, shift: int) -> float:
        if math.isinf(eps):
            return -math.inf  # R has full support: delta(inf) = 0
        e = Fraction(eps)
        d = Fraction(shift)
        k = math.floor(e * self.sigma2 / d - d / 2) + 1  # least integer above eps sigma2/D - D/2
        g0 = (d * d + 2 * d * k) / (2 * self.sigma2) - e  # g(k) > 0, exact
        if k >= 2**52:
            # far out (eps sigma2/D >= 2^52, e.g. eps = 1e308): the second term is below
            # e^-(2k+1)/(2 sigma2) <= e^-450000 of the first (sigma2 <= 10^10), so the sum is its
            # first term exp(-k^2/(2 sigma2)) (1 - e^-g(k)), in logs (-inf once k/sigma passes 1e154)
            z = k / Fraction(self._sigma) if k < 10**300 else math.inf
            if not z < 1e154:
                return -math.inf
            return -0.5 * float(z) ** 2 + math.log(-math.expm1(-float(g0))) - self._log_c
        return self._log_tail(k, float(g0), shift / self._s2) - self._log_c

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        t = np.asarray(t, dtype=np.float64)
        flat = [self._log_delta_one(float(x), int(shift)) for x in t.reshape(-1).tolist()]
        return np.array(flat, dtype=np.float64).reshape(t.shape)

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        d = int(shift)
        m = int(math.ceil(10.0 * self._sigma)) + d + 2
        z = np.arange(-m, m + 1, dtype=np.float64)
        p = np.exp(self._log_pdf(z))
        right = np.cumsum(p[::-1])[::-1]  # right[i] = P(Z >= z_i)
        left = np.cumsum(p)  # left[i] = P(Z <= z_i)
        flat = np.asarray(a, dtype=np.float64).reshape(-1)
        i = np.clip(np.searchsorted(-right, -flat, side="right") - 1, 0, z.size - 1)  # last i with right[i] >= alpha
        above = np.where(i + 1 < z.size, right[np.minimum(i + 1, z.size - 1)], 0.0)
        w = np.clip((flat - above) / p[i], 0.0, 1.0)
        j = i - d
        ok = j >= 0
        beta = np.where(ok, left[np.maximum(j, 0)] - w * p[np.maximum(j, 0)], 0.0)
        return np.clip(beta, 0.0, 1.0).reshape(np.shape(a))

    def zcdp_rho(self, shift: int | None = None) -> float:
        """``rho = D^2/(2 sigma2)``: the pair at shift D (default: the sensitivity) is rho-zCDP,
        and no smaller rho holds (CKS 2020, Theorem 4)."""
        d = self._shift(shift)
        return float(Fraction(d * d) / (2 * self.sigma2))

    # ------------------------------------------------------------------ variance
    def _variance_exact(self) -> float:
        s2 = self._s2
        if self._sigma >= 1.0:
            e = [math.exp(-2.0 * math.pi**2 * s2 * k * k) for k in range(1, 5)]
            a = 1.0 + 2.0 * sum(e)
            b = 2.0 * sum(k * k * x for k, x in zip(range(1, 5), e))
            return s2 * (1.0 - 4.0 * math.pi**2 * s2 * b / a)
        z = np.arange(1, 13, dtype=np.float64)
        return math.exp(math.log(2.0) + float(logsumexp(2.0 * np.log(z) - 0.5 * z * z / s2)) - self._log_c)

    def _log_variance(self) -> float:
        return math.log(self._variance_exact())

    def _variance_direct(self) -> float:
        return self._variance_exact()

    def _variance_refusal(self) -> tuple[str, float, str]:  # pragma: no cover - sigma2 <= 10^10
        return "sigma2", float(self.sigma2), "sigma2 <= 10^10"

    # ------------------------------------------------------------------ calibration
    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "DiscreteGaussian":
        """The smallest ``sigma2 = j/1024`` (j >= 1) whose exact delta(eps) is at most delta:
        a bracket around the continuous analytic Gaussian's sigma^2, then bisection on j.
        The sigma2 returned always meets the target; it is the smallest on the grid where
        delta(eps) decreases in sigma2 (checked numerically in the tests)."""
        if not 0.0 < delta < 1.0:
            raise invalid("delta", delta, "a number in (0, 1) for the discrete Gaussian")
        sens_i = int(sens)
        q = CALIBRATION_DENOMINATOR
        log_target = math.log(delta)

        def ok(j: int) -> bool:
            mech = cls(Fraction(j, q), sens_i)
            lv = mech._log_delta_one(eps, sens_i)
            return lv <= log_target and math.exp(lv) <= delta

        top = int(SIGMA2_MAX * q)
        try:
            j0 = int(min(max(math.ceil((sens_i / largest_mu(eps, delta)) ** 2 * q), 1), top))
        except (LdpSimError, ValueError, OverflowError, ZeroDivisionError):  # pragma: no cover
            j0 = q
        if ok(j0):
            hi, lo = j0, j0 // 2
            while lo >= 1 and ok(lo):
                hi, lo = lo, lo // 2
            if lo < 1:
                return cls(Fraction(hi, q), sens_i)
        else:
            lo, hi = j0, min(2 * j0, top)
            while not ok(hi):
                if hi >= top:
                    raise invalid(
                        "delta",
                        delta,
                        f"a larger delta (or eps): the discrete Gaussian meeting (eps={eps:g}, "
                        f"delta={delta:g}) at sensitivity {sens_i} needs sigma2 above 10^10, the supported range",
                    )
                lo, hi = hi, min(2 * hi, top)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return cls(Fraction(hi, q), sens_i)

    @classmethod
    def _calibrate_corollary(cls, eps0: float, delta0: float, sens: float) -> "DiscreteGaussian":
        return cls._calibrate_single(eps0, delta0, sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, compositions: int) -> "DiscreteGaussian":
        raise invalid(
            "method",
            "exact",
            f"method='corollary' for compositions = {compositions} (the exact calibration of a "
            "composed discrete Gaussian is not available)",
        )
