"""Gaussian noise ``N(0, sigma^2)``: exactly ``sensitivity/sigma``-GDP, with the classical
and the analytic (Balle-Wang 2018) calibrations. The GDP mathematics is in
:mod:`ldpsim.privacy.gdp`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.noise.base import (
    _FLOAT_MAX,
    MAX_NOISE_SCALE,
    NoiseMechanism,
    _eps_array,
    _open_delta,
    _out,
    _positive,
    _scale,
)
from ldpsim.privacy.gdp import gdp_delta, gdp_log_delta, gdp_meets, largest_mu


class Gaussian(NoiseMechanism):
    """Gaussian noise ``N(0, sigma^2)``; the pair at shift ``D`` is ``mu = D/sigma``-GDP.

    ``delta(eps) = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    (Balle-Wang 2018, Thm 8), evaluated in log space (:func:`gdp_log_delta`); trade-off
    ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``; variance ``sigma^2``.
    Worst case: the full-sensitivity shift.
    """

    name = "gaussian"
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

    def composed_delta(self, eps: ArrayLike, compositions: int) -> float | NDArray[np.float64]:
        """Exact delta(eps) of the k-fold composition (k = ``compositions``): ``sqrt(k) D/sigma``-GDP."""
        t, scalar = _eps_array(eps)
        k = v.integer(compositions, "compositions", minimum=1)
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
            raise invalid(
                "eps", eps, "a number in (0, 1) for the classical Gaussian calibration (use Gaussian.analytic)"
            )
        delta = _open_delta(delta)
        sens = _positive(sensitivity, "sensitivity")
        sigma = sens * math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) / eps
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "eps",
                eps,
                f"a larger eps: sigma = sensitivity sqrt(2 log(1.25/delta))/eps = {sigma:.4g} is beyond "
                f"the largest supported noise scale {MAX_NOISE_SCALE:.4g}",
            )
        return cls(sigma, sens)

    @staticmethod
    def _largest_mu(eps: float, delta: float) -> float:
        """Largest mu with mu-GDP delta(eps) <= delta (:func:`ldpsim.privacy.gdp.largest_mu`)."""
        return largest_mu(eps, delta)

    @classmethod
    def analytic(cls, eps: float, delta: float, sensitivity: float = 1.0) -> "Gaussian":
        """Analytic Gaussian (Balle-Wang 2018): the smallest sigma whose exact
        ``delta(eps) <= delta`` (root finding on the exact log-delta, then checked)."""
        eps = _positive(eps, "eps")
        delta = _open_delta(delta)
        sens = _positive(sensitivity, "sensitivity")
        return cls._from_mu(eps, delta, sens, Gaussian._largest_mu(eps, delta), compositions=1)

    @classmethod
    def _from_mu(cls, eps: float, delta: float, sens: float, mu_total: float, compositions: int) -> "Gaussian":
        rk = math.sqrt(compositions)
        sigma = rk * sens / mu_total
        if not sigma > 0.0:  # a subnormal sensitivity at a large eps: sens/sigma was a division by 0
            raise invalid(
                "sensitivity",
                sens,
                f"a sensitivity >= {mu_total * 5e-324 / rk:.4g} at eps = {eps:g}, delta = {delta:g} "
                "(the calibrated sigma = sqrt(k) sensitivity/mu underflows to 0 below it)",
            )
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "delta",
                delta,
                f"a larger delta (or eps): the calibrated sigma = sqrt(k) sensitivity/mu = {sigma:.4g} "
                f"is beyond the largest supported noise scale {MAX_NOISE_SCALE:.4g}",
            )
        for _ in range(64):  # rounding of sqrt(k) sens / sigma: a few ulps at most
            if gdp_meets(eps, rk * (sens / sigma), delta):
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
        # Corollary 4.1 / docs/theory.md sec. 6: sigma^2 = 2 Delta^2 log(2/delta0) / eps0^2 (log(2/delta0)
        # in two terms: delta0 = delta/(2k) may be subnormal, 2/delta0 overflow)
        sigma = sens * math.sqrt(2.0 * (math.log(2.0) - math.log(delta0))) / eps0
        if not sigma <= MAX_NOISE_SCALE:
            raise invalid(
                "eps",
                eps0,
                f"a larger per-query eps0: the Corollary 4.1 sigma = {sigma:.4g} is beyond the largest "
                f"supported noise scale {MAX_NOISE_SCALE:.4g}",
            )
        return cls(sigma, sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, compositions: int) -> "Gaussian":
        if not 0.0 < delta < 1.0:
            raise invalid("delta", delta, "a number in (0, 1) for the Gaussian mechanism")
        return cls._from_mu(eps, delta, sens, Gaussian._largest_mu(eps, delta), compositions=compositions)
