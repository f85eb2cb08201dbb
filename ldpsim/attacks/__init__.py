"""Fake respondents and their defences: what an attacker can do to a survey's estimates,
exactly, and how a server notices.

- :mod:`~ldpsim.attacks.strategies`: the strategies of fake respondents (random perturbed
  value, random item, maximal gain, undetectable; the mean, and the mean with the variance, of
  a numeric question), one registry;
- :mod:`~ldpsim.attacks.gain`: the exact expected gain of a strategy, the gain measured;
- :mod:`~ldpsim.attacks.optimal`: the optimal attacker of a finite mechanism (a linear
  program), with or without the constraint of staying undetectable;
- :mod:`~ldpsim.attacks.detect`: anytime-valid detection from the statistic, frequent-pair
  detection from the reports, and the estimate without the flagged reports.
"""

from ldpsim.attacks.detect import ExcessMonitor, FrequentItemset, SizeMonitor, frequent_itemset, recovered_estimate
from ldpsim.attacks.gain import PoisonedMoments, expected_gain, expected_moments, fake_share_needed, measured_gain
from ldpsim.attacks.optimal import OptimalAttack, optimal_attack
from ldpsim.attacks.strategies import STRATEGIES, Strategy, strategy

__all__ = [
    "STRATEGIES",
    "ExcessMonitor",
    "FrequentItemset",
    "OptimalAttack",
    "PoisonedMoments",
    "SizeMonitor",
    "Strategy",
    "expected_gain",
    "expected_moments",
    "fake_share_needed",
    "frequent_itemset",
    "measured_gain",
    "optimal_attack",
    "recovered_estimate",
    "strategy",
]
