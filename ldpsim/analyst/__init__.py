"""The analyst: functions of privatised reports or counts (never of how they were made)."""

from ldpsim.analyst.consistency import base_cut, base_cut_threshold, norm_sub
from ldpsim.analyst.crosstab import (
    CrossTab,
    IndependenceTest,
    crosstab_estimate,
    independence_test,
    joint_output_counts,
)
from ldpsim.analyst.estimation import (
    EMResult,
    InversionEstimate,
    confidence_intervals,
    em_estimate,
    exact_covariance,
    inversion_estimate,
    project_to_simplex,
)
from ldpsim.analyst.frequency import FrequencyEstimate, frequency_estimate, frequency_standard_error
from ldpsim.analyst.means import MeanEstimate, bucket, mean_estimate, mean_standard_error
from ldpsim.analyst.nonresponse import ReweightedEstimate, nonresponse_bias, reweight_for_response
from ldpsim.analyst.sequences import confidence_sequence_halfwidth, rho_for
from ldpsim.analyst.testing import (
    ChernoffInformation,
    LikelihoodRatioTest,
    LLRLaw,
    TiltedEstimate,
    chernoff_information,
    chernoff_stein_exponent,
    hypothesis_marginals,
    llr_exact_law,
    lrt_exact,
    lrt_normal,
    stein_exponent_curve,
    type2_error_tilted,
)
from ldpsim.analyst.tiers import TierDesign, TierEstimate, combine_tiers, inverse_variance_weights, tier_design

__all__ = [
    "CrossTab",
    "IndependenceTest",
    "crosstab_estimate",
    "independence_test",
    "joint_output_counts",
    "base_cut",
    "base_cut_threshold",
    "confidence_sequence_halfwidth",
    "norm_sub",
    "rho_for",
    "EMResult",
    "FrequencyEstimate",
    "InversionEstimate",
    "confidence_intervals",
    "em_estimate",
    "exact_covariance",
    "frequency_estimate",
    "frequency_standard_error",
    "inversion_estimate",
    "project_to_simplex",
    "ChernoffInformation",
    "LikelihoodRatioTest",
    "LLRLaw",
    "TiltedEstimate",
    "chernoff_information",
    "chernoff_stein_exponent",
    "hypothesis_marginals",
    "llr_exact_law",
    "lrt_exact",
    "lrt_normal",
    "stein_exponent_curve",
    "type2_error_tilted",
    "MeanEstimate",
    "bucket",
    "mean_estimate",
    "mean_standard_error",
    "ReweightedEstimate",
    "nonresponse_bias",
    "reweight_for_response",
    "TierDesign",
    "TierEstimate",
    "combine_tiers",
    "inverse_variance_weights",
    "tier_design",
]
