"""ldpsim: simulate and validate local differential privacy."""

from importlib.metadata import PackageNotFoundError, version

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import (
    FiniteMechanism,
    MatrixMechanism,
    RandomizedResponse,
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    from_matrix,
    pattern_matrix,
    quaternary_mechanism,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)
from ldpsim.analyst import frequency_estimate
from ldpsim.utility import (
    KL,
    ChiSquare,
    FDivergence,
    Hellinger,
    MutualInformation,
    TotalVariation,
    better_of_binary_and_rr,
    optimal_mechanism,
)

try:
    __version__ = version("ldpsim")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "KL",
    "ChiSquare",
    "FDivergence",
    "Hellinger",
    "MutualInformation",
    "TotalVariation",
    "better_of_binary_and_rr",
    "optimal_mechanism",
    "FiniteMechanism",
    "LdpSimError",
    "MatrixMechanism",
    "RandomizedResponse",
    "binary_mechanism",
    "binary_mechanism_for_prior",
    "binary_mechanism_for_priors",
    "frequency_estimate",
    "from_matrix",
    "pattern_matrix",
    "quaternary_mechanism",
    "randomized_response",
    "staircase_mechanism",
    "truncated_geometric",
    "__version__",
]
