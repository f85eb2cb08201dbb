"""Builders of catalog entries whose parameters are not a class's constructor arguments.

Each takes the entry's resolved parameters as keywords and returns a mechanism; see
:mod:`ldpsim.mechanisms.catalog`.
"""

from __future__ import annotations

from typing import Any

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import from_matrix
from ldpsim.mechanisms.noise.discrete_gaussian import DiscreteGaussian
from ldpsim.mechanisms.noise.gaussian import Gaussian
from ldpsim.mechanisms.noise.laplace import Laplace
from ldpsim.mechanisms.norm_laplace import NormLaplace, dimension
from ldpsim.mechanisms.standard import binary_mechanism, binary_mechanism_for_priors


def binary(eps: float, k: int, T: Any = None, P0: Any = None, P1: Any = None):
    """The binary mechanism: for the set ``T`` when given; else for the prior pair
    (``P0``, ``P1``), with ``T = {x : P0(x) >= P1(x)}`` (Kairouz et al. 2014, Theorem 12);
    else ``T`` = the first ``ceil(k/2)`` symbols."""
    k = v.alphabet_size(k, "k")
    if T is not None:
        return binary_mechanism(eps, T, k)
    if P0 is not None or P1 is not None:
        if P0 is None or P1 is None:
            missing = "P0" if P0 is None else "P1"
            raise invalid(missing, None, "both P0 and P1 (the binary mechanism of a prior pair), or neither")
        mech = binary_mechanism_for_priors(P0, P1, eps)
        if mech.k != k:
            raise invalid("P0", f"{mech.k} entries", f"one per input symbol (k = {k})")
        return mech
    return binary_mechanism(eps, list(range((k + 1) // 2)), k)


def matrix(matrix: Any, k: int | None = None, output_labels: Any = None):
    """The finite mechanism with row-stochastic matrix ``matrix`` (``Q[x, y] = P(y | x)``);
    ``k``, when given, is the number of rows expected."""
    q = v.stochastic_matrix(matrix, "matrix")
    if k is not None and q.shape[0] != k:
        raise invalid("matrix", f"{q.shape[0]} rows", f"one per input symbol ({k})")
    return from_matrix(q, output_labels=output_labels)


def laplace_for(eps: float, sensitivity: float = 1.0):
    """Laplace noise of scale ``sensitivity / eps``, widened by a rounding unit where the
    float quotient would make the pure eps exceed ``eps`` (:meth:`Laplace.calibrate`), so
    that the mechanism is eps-DP in floating point too."""
    eps = v.positive(eps, "eps")  # checked here: the scale is sens / eps
    sensitivity = v.positive(sensitivity, "sensitivity")
    return Laplace.calibrate(eps, 0.0, sensitivity)


def gaussian_analytic(eps: float, delta: float, sensitivity: float = 1.0):
    """Gaussian noise with the analytic calibration (the least sigma meeting (eps, delta))."""
    return Gaussian.analytic(eps, delta, sensitivity)


def gaussian_classical(eps: float, delta: float, sensitivity: float = 1.0):
    """Gaussian noise with the classical calibration ``sqrt(2 log(1.25/delta)) / eps``."""
    return Gaussian.classical(eps, delta, sensitivity)


def norm_laplace(d: int, p: float, eps: float):
    """l_p Laplace noise on R^d."""
    return NormLaplace(dimension(d, "d"), p, eps)


def discrete_gaussian_calibrated(eps: float, delta: float, sensitivity: int = 1):
    """The discrete Gaussian (Canonne, Kamath and Steinke 2020) with the least sigma2 in
    (1/1024) Z whose exact delta(eps) is at most delta (:meth:`DiscreteGaussian.calibrate`)."""
    return DiscreteGaussian.calibrate(eps, delta, sensitivity)
