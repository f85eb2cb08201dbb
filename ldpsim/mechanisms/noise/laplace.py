"""Laplace noise ``Lap(scale)``: the pure eps-DP family of real-valued queries."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldpsim.mechanisms.noise.base import _FLOAT_MAX, _SQRT2, NoiseMechanism, _eps_for_scale, _need_pure, _positive, _scale


class Laplace(NoiseMechanism):
    """Laplace noise ``Lap(scale)`` (density ``exp(-|x|/scale)/(2 scale)``).

    With ``mu = shift/scale``: ``delta(eps) = 1 - exp((eps - mu)/2)`` for ``eps < mu``, else 0
    (pure ``mu``-DP); trade-off ``1 - e^mu alpha`` (``alpha < e^-mu/2``),
    ``e^-mu/(4 alpha)`` (up to 1/2), ``e^-mu (1 - alpha)`` beyond; variance ``2 scale^2``.
    Worst case: the full-sensitivity shift.
    """

    name = "laplace"
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

