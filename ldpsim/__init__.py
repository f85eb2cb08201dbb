"""ldpsim: simulate and validate local differential privacy.

The names below are imported on first use (PEP 562), so ``import ldpsim`` and
``ldpsim --help`` do not pay for scipy, pandas, matplotlib or SimPy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldpsim._lazy import lazy_exports
from ldpsim.errors import LdpSimError

if TYPE_CHECKING:  # what static tools see; at run time each name is imported on first use
    from ldpsim.analyst import frequency_estimate

    # no-redef: ldpsim.mechanisms.randomized_response is both a submodule and the function imported here
    from ldpsim.mechanisms import (  # type: ignore[no-redef]
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
    from ldpsim.workflow import Run, Scenario, load_run

    __version__: str

_MECHANISMS = (
    "FiniteMechanism",
    "MatrixMechanism",
    "RandomizedResponse",
    "binary_mechanism",
    "binary_mechanism_for_prior",
    "binary_mechanism_for_priors",
    "from_matrix",
    "pattern_matrix",
    "quaternary_mechanism",
    "randomized_response",
    "staircase_mechanism",
    "truncated_geometric",
)
_UTILITY = (
    "KL",
    "ChiSquare",
    "FDivergence",
    "Hellinger",
    "MutualInformation",
    "TotalVariation",
    "better_of_binary_and_rr",
    "optimal_mechanism",
)
_EXPORTS = {
    **dict.fromkeys(_MECHANISMS, "ldpsim.mechanisms"),
    **dict.fromkeys(_UTILITY, "ldpsim.utility"),
    "frequency_estimate": "ldpsim.analyst",
    # working from Python and notebooks (docs/python.md): a scenario of any kind, its runs
    **dict.fromkeys(("Scenario", "Run", "load_run"), "ldpsim.workflow"),
}
_getattr, __dir__ = lazy_exports(__name__, {**_EXPORTS, "__version__": ""})


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata on first use
        from importlib.metadata import PackageNotFoundError, version

        global __version__
        try:
            __version__ = version("ldpsim")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            __version__ = "0.0.0+unknown"
        return __version__
    return _getattr(name)


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
    "Run",
    "Scenario",
    "binary_mechanism",
    "binary_mechanism_for_prior",
    "binary_mechanism_for_priors",
    "frequency_estimate",
    "from_matrix",
    "load_run",
    "pattern_matrix",
    "quaternary_mechanism",
    "randomized_response",
    "staircase_mechanism",
    "truncated_geometric",
    "__version__",
]
