"""Noise-adding mechanisms for numeric queries (docs/theory.md sec. 6 and 8).

A query ``f`` with sensitivity ``Delta`` is released as ``f(D) + Z`` with ``Z`` drawn from a
fixed noise law ``P``. For two neighbouring datasets the outputs are ``P`` and ``R``, the law
``P`` shifted by ``f(D') - f(D)``; the worst case is the full-sensitivity shift
``|f(D') - f(D)| = Delta`` (the exact ``delta(eps)`` is non-decreasing in the shift size for
every family here; the test-suite checks it on a grid of shifts), so all privacy quantities
below are those of the pair ``(P, P + Delta)`` unless a ``shift=`` is given.

Families (all share :class:`NoiseMechanism`, which implements the mechanism contract of
:mod:`ldpsim.mechanisms.base`), one module each:

* :class:`Laplace` -- ``Lap(scale)`` (``laplace.py``);
* :class:`Gaussian` -- ``N(0, sigma^2)``, with the classical and the analytic (Balle-Wang
  2018) calibrations (``gaussian.py``; the mu-GDP profile is in :mod:`ldpsim.privacy.gdp`);
* :class:`TruncatedLaplace` -- Geng-Ding-Guo-Kumar 2020 (``truncated_laplace.py``);
* :class:`Staircase` -- Geng-Viswanath staircase noise (``staircase.py``);
* :class:`Geometric` -- two-sided geometric noise for integer queries (``geometric.py``);
* :class:`DiscreteLaplace` -- the same law drawn by the exact integer-only sampler of
  Canonne, Kamath and Steinke 2020 (``discrete_laplace.py``, samplers in ``exact.py``);
* :class:`DiscreteGaussian` -- ``N_Z(0, sigma2)`` on the integers, exact sampler, exact
  delta(eps) and zCDP (``discrete_gaussian.py``);
* :class:`SnappedLaplace` -- Mironov's (2012) snapping mechanism, whose pure eps bound holds
  for the doubles it produces (``snapping.py``).

The base class, the atom-based base of Staircase and Geometric and the shared helpers are
in ``base.py``.

Numerical range: eps from the smallest floats to the hundreds (Staircase: up to 700), delta
down to 1e-300 and below (log scale); a noise scale (Laplace scale, Gaussian sigma,
sensitivity/eps) beyond :data:`MAX_NOISE_SCALE` is refused naming the parameter, and a
variance beyond the largest float raises an error naming it (``std`` stays available).

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

from ldpsim.mechanisms.noise.base import MAX_NOISE_SCALE, NoiseMechanism
from ldpsim.mechanisms.noise.discrete_gaussian import DiscreteGaussian
from ldpsim.mechanisms.noise.discrete_laplace import DiscreteLaplace
from ldpsim.mechanisms.noise.gaussian import Gaussian
from ldpsim.mechanisms.noise.geometric import Geometric
from ldpsim.mechanisms.noise.laplace import Laplace
from ldpsim.mechanisms.noise.snapping import SnappedLaplace
from ldpsim.mechanisms.noise.staircase import STAIRCASE_MAX_EPS, Staircase
from ldpsim.mechanisms.noise.staircase import _optimal_gamma as _optimal_gamma  # tests import it from here
from ldpsim.mechanisms.noise.truncated_laplace import TruncatedLaplace

# the mu-GDP mathematics lives in ldpsim.privacy.gdp; re-exported under the names this
# module has always had
from ldpsim.privacy.gdp import gdp_delta, gdp_log_delta

__all__ = [
    "NoiseMechanism",
    "Laplace",
    "Gaussian",
    "TruncatedLaplace",
    "Staircase",
    "Geometric",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "SnappedLaplace",
    "gdp_delta",
    "gdp_log_delta",
    "MAX_NOISE_SCALE",
    "STAIRCASE_MAX_EPS",
]
