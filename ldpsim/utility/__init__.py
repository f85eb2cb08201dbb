"""Utilities of local mechanisms, the optimal (staircase) mechanism and bounds (000, 001)."""

from ldpsim.utility import bounds
from ldpsim.utility.divergences import (
    chi_square_divergence,
    f_divergence,
    hellinger_squared,
    kl_divergence,
    mutual_information,
    tv_distance,
)
from ldpsim.utility.optimal import OptimalResult, better_of_binary_and_rr, binary_for, optimal_mechanism
from ldpsim.utility.utilities import (
    KL,
    UTILITIES,
    ChiSquare,
    FDivergence,
    Hellinger,
    MutualInformation,
    TotalVariation,
    Utility,
)

__all__ = [
    "bounds",
    "KL",
    "ChiSquare",
    "FDivergence",
    "Hellinger",
    "MutualInformation",
    "OptimalResult",
    "TotalVariation",
    "UTILITIES",
    "Utility",
    "better_of_binary_and_rr",
    "binary_for",
    "chi_square_divergence",
    "f_divergence",
    "hellinger_squared",
    "kl_divergence",
    "mutual_information",
    "optimal_mechanism",
    "tv_distance",
]
