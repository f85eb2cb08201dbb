"""Multi-party randomized-response protocols (Kairouz et al. 2015, Sec. 5): k parties broadcast
privatised bits; each party, and a central observer, computes a function of all bits.

Every name is imported on first use (PEP 562): the decision rules need scipy and the
protocol pandas.
"""

from typing import TYPE_CHECKING

from ldpsim._lazy import lazy_exports

if TYPE_CHECKING:
    from ldpsim.protocols.channel import deviate, erasure_protocol, missing_probability, rule_gain
    from ldpsim.protocols.coalitions import (
        CoalitionInference,
        coalition_inference,
        coalition_table,
        exchangeable_prior,
    )
    from ldpsim.protocols.decisions import (
        OBSERVER,
        average_rule_table,
        count_posterior,
        decide,
        estimate_accuracy,
        exact_accuracy,
        exact_plan,
        rule_accuracy,
        transcript_classes,
        worst_case,
        xor_accuracy,
    )
    from ldpsim.protocols.gains import bit_probabilities, enumerated_gain, exact_gain, exact_gains
    from ldpsim.protocols.interactive import InteractiveProtocol
    from ldpsim.protocols.protocol import Protocol
    from ldpsim.protocols.tasks import Task

_DECISIONS = (
    "OBSERVER",
    "average_rule_table",
    "bit_probabilities",
    "count_posterior",
    "decide",
    "deviate",
    "enumerated_gain",
    "erasure_protocol",
    "estimate_accuracy",
    "exact_accuracy",
    "exact_gain",
    "exact_gains",
    "exact_plan",
    "missing_probability",
    "rule_accuracy",
    "rule_gain",
    "transcript_classes",
    "worst_case",
    "xor_accuracy",
)
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(_DECISIONS, "ldpsim.protocols.decisions"),
        **dict.fromkeys(
            ("bit_probabilities", "enumerated_gain", "exact_gain", "exact_gains"), "ldpsim.protocols.gains"
        ),
        **dict.fromkeys(
            ("deviate", "erasure_protocol", "missing_probability", "rule_gain"), "ldpsim.protocols.channel"
        ),
        **dict.fromkeys(
            ("CoalitionInference", "coalition_inference", "coalition_table", "exchangeable_prior"),
            "ldpsim.protocols.coalitions",
        ),
        "InteractiveProtocol": "ldpsim.protocols.interactive",
        "Protocol": "ldpsim.protocols.protocol",
        "Task": "ldpsim.protocols.tasks",
    },
)

__all__ = [
    "OBSERVER",
    "CoalitionInference",
    "InteractiveProtocol",
    "coalition_inference",
    "coalition_table",
    "exchangeable_prior",
    "Protocol",
    "Task",
    "average_rule_table",
    "bit_probabilities",
    "count_posterior",
    "decide",
    "deviate",
    "enumerated_gain",
    "erasure_protocol",
    "estimate_accuracy",
    "exact_accuracy",
    "exact_gain",
    "exact_gains",
    "exact_plan",
    "missing_probability",
    "rule_accuracy",
    "rule_gain",
    "transcript_classes",
    "worst_case",
    "xor_accuracy",
]
