"""Mechanisms as objects: exact matrices, exact privacy, vectorised samplers.

The finite mechanisms need numpy only and are imported here; the noise families need
scipy and are imported on first use (PEP 562).
"""

from typing import TYPE_CHECKING

from ldpsim._lazy import lazy_exports
from ldpsim.mechanisms.finite import FiniteMechanism, MatrixMechanism, from_matrix, product_mechanism
from ldpsim.mechanisms.memo import Memoised, chain_mechanism, memoised_rr
from ldpsim.mechanisms.randomized_response import RandomizedResponse, randomized_response
from ldpsim.mechanisms.standard import (
    best_balanced_set,
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    pattern_bits,
    pattern_matrix,
    quaternary_mechanism,
    staircase_mechanism,
    truncated_geometric,
)

if TYPE_CHECKING:
    from ldpsim.mechanisms.noise import (
        DiscreteGaussian,
        DiscreteLaplace,
        Gaussian,
        Geometric,
        Laplace,
        NoiseMechanism,
        SnappedLaplace,
        Staircase,
        TruncatedLaplace,
    )
    from ldpsim.mechanisms.numeric import (
        DiscreteLaplaceBounded,
        Duchi,
        Hybrid,
        LaplaceBounded,
        Piecewise,
        SnappedLaplaceBounded,
        StaircaseBounded,
    )

_NOISE = (
    "Gaussian",
    "Geometric",
    "Laplace",
    "NoiseMechanism",
    "Staircase",
    "TruncatedLaplace",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "SnappedLaplace",
)
_NUMERIC = (
    "LaplaceBounded",
    "StaircaseBounded",
    "Duchi",
    "Piecewise",
    "Hybrid",
    "DiscreteLaplaceBounded",
    "SnappedLaplaceBounded",
)
__getattr__, __dir__ = lazy_exports(
    __name__,
    {**dict.fromkeys(_NOISE, "ldpsim.mechanisms.noise"), **dict.fromkeys(_NUMERIC, "ldpsim.mechanisms.numeric")},
)

__all__ = [
    "FiniteMechanism",
    "Duchi",
    "Hybrid",
    "LaplaceBounded",
    "StaircaseBounded",
    "Piecewise",
    "Gaussian",
    "Geometric",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "SnappedLaplace",
    "DiscreteLaplaceBounded",
    "SnappedLaplaceBounded",
    "Laplace",
    "NoiseMechanism",
    "Staircase",
    "TruncatedLaplace",
    "MatrixMechanism",
    "Memoised",
    "RandomizedResponse",
    "best_balanced_set",
    "binary_mechanism",
    "binary_mechanism_for_prior",
    "binary_mechanism_for_priors",
    "chain_mechanism",
    "from_matrix",
    "memoised_rr",
    "pattern_bits",
    "pattern_matrix",
    "product_mechanism",
    "quaternary_mechanism",
    "randomized_response",
    "staircase_mechanism",
    "truncated_geometric",
]
