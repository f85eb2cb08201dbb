"""Multi-party randomized-response protocols (seed 003 Sec. 5): k parties broadcast
privatised bits; each party, and a central observer, computes a function of all bits."""

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
from ldpsim.protocols.protocol import Protocol
from ldpsim.protocols.tasks import Task

__all__ = [
    "OBSERVER",
    "Protocol",
    "Task",
    "average_rule_table",
    "count_posterior",
    "decide",
    "estimate_accuracy",
    "exact_accuracy",
    "exact_plan",
    "rule_accuracy",
    "transcript_classes",
    "worst_case",
    "xor_accuracy",
]
