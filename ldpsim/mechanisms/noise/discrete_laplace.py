"""The discrete Laplace mechanism with an exact sampler: the law of :class:`Geometric`
(``p(z)`` proportional to ``exp(-eps |z| / sensitivity)`` on the integers), drawn by the
integer-only sampler of Canonne, Kamath and Steinke 2020 (Algorithm 2)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldpsim.errors import invalid
from ldpsim.mechanisms.noise.exact import MAX_EXACT_SCALE, ExactSampling, discrete_laplace
from ldpsim.mechanisms.noise.geometric import Geometric


class DiscreteLaplace(ExactSampling, Geometric):
    """Discrete Laplace noise ``Lap_Z(sensitivity/eps)``: ``p(z) = (1-a)/(1+a) a^|z|``,
    ``a = exp(-eps/sensitivity)``, integer sensitivity -- the law of :class:`Geometric`, whose
    exact privacy it inherits (eps-DP at the full shift, delta, trade-off, privacy-loss law).

    The sampler is exact: ``Lap_Z(t/s)`` with ``t/s = Fraction(sensitivity)/Fraction(eps)``
    in lowest terms (a float eps is an exact binary fraction), drawn with uniform integers
    only (:func:`ldpsim.mechanisms.noise.exact.discrete_laplace`), so the law sampled is
    exactly the law whose privacy the class reports. ``rng`` may be ``"os"`` (the operating
    system's generator). Noise scales ``sensitivity/eps`` up to 2^40 are supported.
    """

    name = "discrete_laplace"
    family = "discrete_laplace"

    def __init__(self, eps: float, sensitivity: int = 1) -> None:
        super().__init__(eps, sensitivity)
        scale = Fraction(self.sensitivity) / Fraction(self.eps)
        if scale > MAX_EXACT_SCALE:
            raise invalid(
                "eps",
                eps,
                f"eps >= sensitivity / 2^40 = {self.sensitivity / MAX_EXACT_SCALE:.4g} (the exact discrete "
                "Laplace sampler supports scales sensitivity/eps up to 2^40)",
            )
        self._s, self._t = scale.denominator, scale.numerator

    @property
    def scale(self) -> Fraction:
        """The exact scale ``t/s = sensitivity/eps`` of the law sampled."""
        return Fraction(self._t, self._s)

    # integers, where Geometric's (its base) samples are floats
    def _sample(self, size: Any, rng: Any) -> NDArray[np.int64]:  # type: ignore[override]
        return np.asarray(discrete_laplace(self._s, self._t, size, rng), dtype=np.int64)
