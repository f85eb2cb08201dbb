"""Mechanisms as objects: exact matrices, exact privacy, vectorised samplers."""

from ldpsim.mechanisms.finite import FiniteMechanism, MatrixMechanism, from_matrix
from ldpsim.mechanisms.noise import Gaussian, Geometric, Laplace, NoiseMechanism, Staircase, TruncatedLaplace
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

__all__ = [
    "FiniteMechanism",
    "Gaussian",
    "Geometric",
    "Laplace",
    "NoiseMechanism",
    "Staircase",
    "TruncatedLaplace",
    "MatrixMechanism",
    "RandomizedResponse",
    "best_balanced_set",
    "binary_mechanism",
    "binary_mechanism_for_prior",
    "binary_mechanism_for_priors",
    "from_matrix",
    "pattern_bits",
    "pattern_matrix",
    "quaternary_mechanism",
    "randomized_response",
    "staircase_mechanism",
    "truncated_geometric",
]
