"""Utilities of local mechanisms, the optimal (staircase) mechanism and bounds (Kairouz et al. 2014).

Every name is imported on first use (PEP 562): the divergences need scipy.special and the
optimal mechanism scipy's linear programming.
"""

from typing import TYPE_CHECKING

from ldpsim._lazy import lazy_exports

if TYPE_CHECKING:
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
        MaryAccuracy,
        MutualInformation,
        TotalVariation,
        Utility,
    )

_DIVERGENCES = (
    "chi_square_divergence",
    "f_divergence",
    "hellinger_squared",
    "kl_divergence",
    "mutual_information",
    "tv_distance",
)
_OPTIMAL = ("OptimalResult", "better_of_binary_and_rr", "binary_for", "optimal_mechanism")
_UTILITIES = (
    "KL",
    "UTILITIES",
    "ChiSquare",
    "FDivergence",
    "Hellinger",
    "MaryAccuracy",
    "MutualInformation",
    "TotalVariation",
    "Utility",
)
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "bounds": "ldpsim.utility.bounds",
        **dict.fromkeys(_DIVERGENCES, "ldpsim.utility.divergences"),
        **dict.fromkeys(_OPTIMAL, "ldpsim.utility.optimal"),
        **dict.fromkeys(_UTILITIES, "ldpsim.utility.utilities"),
    },
)

__all__ = [
    "bounds",
    "KL",
    "ChiSquare",
    "FDivergence",
    "Hellinger",
    "MaryAccuracy",
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
