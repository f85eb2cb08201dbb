"""Privacy accounting: guarantees as objects, exact privacy-loss laws, exact optimal
composition and its closed-form bounds, the mu-GDP profile.

This package is pure accounting: it never imports :mod:`ldpsim.mechanisms` (mechanisms
import it), and it writes no files and draws nothing: the figures of privacy regions
(:mod:`ldpsim.report.regions`) and the files of ``ldpsim compose``
(:mod:`ldpsim.report.compose`) are the report layer's."""

from ldpsim.privacy.accountant import Accountant
from ldpsim.privacy.composition import (
    basic_bound,
    bound_delta,
    bound_epsilon,
    drv_bound,
    heterogeneous_pld,
    kov_bound,
    kov_bound_heterogeneous,
    lattice_region,
    optimal_delta,
    optimal_delta_heterogeneous,
    optimal_epsilon,
    optimal_epsilon_heterogeneous,
    optimal_log_delta,
    per_query_budget,
)
from ldpsim.privacy.filters import AdvancedFilter, BasicFilter, FilterState, PrivacyFilter, allowed_reports
from ldpsim.privacy.gdp import gdp_delta, gdp_log_delta
from ldpsim.privacy.guarantees import (
    GDP,
    DeltaCurve,
    EpsDelta,
    Guarantee,
    MechanismGuarantee,
    OptimalComposition,
    PLDGuarantee,
    TradeOff,
)
from ldpsim.privacy.pld import DiscretePLD

__all__ = [
    "Accountant",
    "GDP",
    "DeltaCurve",
    "DiscretePLD",
    "EpsDelta",
    "Guarantee",
    "MechanismGuarantee",
    "OptimalComposition",
    "PLDGuarantee",
    "TradeOff",
    "basic_bound",
    "bound_delta",
    "bound_epsilon",
    "drv_bound",
    "gdp_delta",
    "gdp_log_delta",
    "heterogeneous_pld",
    "kov_bound",
    "kov_bound_heterogeneous",
    "lattice_region",
    "optimal_delta",
    "optimal_delta_heterogeneous",
    "optimal_epsilon",
    "optimal_epsilon_heterogeneous",
    "optimal_log_delta",
    "per_query_budget",
    "AdvancedFilter",
    "BasicFilter",
    "FilterState",
    "PrivacyFilter",
    "allowed_reports",
]
