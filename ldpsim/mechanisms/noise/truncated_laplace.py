"""Truncated Laplace noise (Geng-Ding-Guo-Kumar 2020): exactly (eps, delta)-DP, bounded."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.noise.base import NoiseMechanism, _eps_for_scale, _log, _log_expm1, _open_delta, _positive


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

    name = "truncated_laplace"
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
        if not self.K >= sys.float_info.min:  # about eps/(2 delta): at eps = 5e-324 subnormal, and the
            # normaliser C = 1/(2(1 - e^-K)) overflowed (NaN deltas)
            raise invalid(
                "eps",
                eps,
                f"eps >= about {2.0 * self.delta_param * sys.float_info.min:.4g} at delta = "
                f"{self.delta_param:g} (the truncation point K = log(1 + (e^eps - 1)/(2 delta)) must be a "
                "normal float)",
            )
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
            series = (
                1 / 3 - K / 12 + K**2 / 360 + K**3 / 720 - K**4 / 15120 - K**5 / 30240 + K**6 / 604800 + K**7 / 1209600
            )
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
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, compositions: int) -> "TruncatedLaplace":
        raise invalid(
            "method",
            "exact",
            "'corollary' for compositions > 1 with TruncatedLaplace (no exact composition is implemented)",
        )
