"""Builders of catalog entries whose parameters are not a class's constructor arguments.

Each takes the entry's resolved parameters as keywords and returns a mechanism; see
:mod:`ldpsim.mechanisms.catalog`.
"""

from __future__ import annotations

from ldpsim import _validate as v


def binary_first_half(eps: float, k: int):
    """The binary mechanism with ``T`` = the first ``ceil(k/2)`` symbols."""
    from ldpsim.mechanisms.standard import binary_mechanism

    k = v.alphabet_size(k, "k")
    return binary_mechanism(eps, list(range((k + 1) // 2)), k)


def laplace_for(eps: float, sensitivity: float = 1.0):
    """Laplace noise of scale ``sensitivity / eps`` (exactly eps-DP)."""
    from ldpsim.mechanisms.noise.laplace import Laplace

    eps = v.positive(eps, "eps")  # checked here: the scale is sens / eps
    sensitivity = v.positive(sensitivity, "sensitivity")
    return Laplace(sensitivity / eps, sensitivity)


def gaussian_analytic(eps: float, delta: float, sensitivity: float = 1.0):
    """Gaussian noise with the analytic calibration (the least sigma meeting (eps, delta))."""
    from ldpsim.mechanisms.noise.gaussian import Gaussian

    return Gaussian.analytic(eps, delta, sensitivity)


def gaussian_classical(eps: float, delta: float, sensitivity: float = 1.0):
    """Gaussian noise with the classical calibration ``sqrt(2 log(1.25/delta)) / eps``."""
    from ldpsim.mechanisms.noise.gaussian import Gaussian

    return Gaussian.classical(eps, delta, sensitivity)


def norm_laplace(d: int, p: float, eps: float):
    """l_p Laplace noise on R^d."""
    from ldpsim.mechanisms.norm_laplace import NormLaplace

    return NormLaplace(v.integer(d, "d", minimum=1), p, eps)
