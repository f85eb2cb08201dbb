"""The strategies of fake respondents: one class each, one registry (:data:`STRATEGIES`).

A strategy says which reports ``n`` fake respondents send to promote the ``targets`` (answer
indices) of a frequency oracle, and the exact expected statistic of one of its reports
(``unit_support``), from which :func:`ldpsim.attacks.gain.expected_gain` follows. The first
three are the attacks of Cao, Jia and Gong (2021); the fourth is the best attack that no
test of the reports can detect, a linear program (:mod:`ldpsim.attacks.optimal`).

- ``random_perturbed`` (their RPA): a report drawn uniformly from the report space;
- ``random_item`` (RIA): a target drawn uniformly, privatised honestly: an input attack,
  indistinguishable from an honest respondent holding that target;
- ``maximal_gain`` (MGA): the report that supports as many targets as one report can
  (:meth:`FrequencyOracle.crafted_reports`); the best attack when nothing constrains it;
- ``undetectable``: knowing the honest answers' law and the fake share, the report law that
  raises the targets' estimate most while the pooled reports keep the law of some honest
  population (finite mechanisms).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.attacks.optimal import optimal_attack
from ldpsim.mechanisms.base import FrequencyOracle, target_indices

__all__ = ["STRATEGIES", "Strategy", "strategy"]


class Strategy(ABC):
    """What a cohort of fake respondents sends (module docstring)."""

    #: the name a scenario file uses
    name: ClassVar[str]
    #: one line for tables and ``--help``
    summary: ClassVar[str]
    #: whether the strategy needs the honest answers' law and the fake share
    needs_prior: ClassVar[bool] = False

    @abstractmethod
    def reports(
        self,
        mech: FrequencyOracle,
        targets: NDArray[np.int64],
        n: int,
        rng: np.random.Generator,
        *,
        prior: NDArray[np.float64] | None = None,
        share: float | None = None,
    ) -> NDArray[Any]:
        """``n`` fake reports."""

    @abstractmethod
    def unit_support(
        self,
        mech: FrequencyOracle,
        targets: NDArray[np.int64],
        *,
        prior: NDArray[np.float64] | None = None,
        share: float | None = None,
        rng: np.random.Generator | None = None,
    ) -> NDArray[np.float64]:
        """The exact expected statistic of one fake report (length ``statistic_size``)."""


class RandomPerturbed(Strategy):
    name = "random_perturbed"
    summary = "a report drawn uniformly from the report space (Cao et al.'s RPA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.random_reports(n, rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        return np.asarray(mech.random_report_support(), dtype=np.float64)


class RandomItem(Strategy):
    name = "random_item"
    summary = "a target drawn uniformly and privatised honestly (Cao et al.'s RIA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.privatize(targets[rng.integers(0, targets.size, size=n)], rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        u = np.zeros(mech.k)
        u[targets] = 1.0 / targets.size
        return np.asarray(mech.forward(u), dtype=np.float64)


class MaximalGain(Strategy):
    name = "maximal_gain"
    summary = "the report supporting the most targets (Cao et al.'s MGA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.crafted_reports(targets, n, rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        # every crafted report supports the same targets; the rest of the statistic is
        # the padding's, whose expectation the gain does not need: only the targets' entries
        # and the estimate's affine form matter, and they are read from one report exactly
        return mech.statistic(mech.crafted_reports(targets, 1, rng)).astype(np.float64)


class Undetectable(Strategy):
    name = "undetectable"
    summary = "the best report law that keeps the pooled reports honest-looking (linear program)"
    needs_prior = True

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        law = optimal_attack(mech, prior, targets, share, undetectable=True).law
        return rng.choice(law.size, size=n, p=law).astype(np.int64)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        return optimal_attack(mech, prior, targets, share, undetectable=True).law


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (RandomPerturbed(), RandomItem(), MaximalGain(), Undetectable())}


def strategy(name: str) -> Strategy:
    """The registered strategy ``name``; one line listing them otherwise."""
    from ldpsim.errors import invalid

    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise invalid("strategy", name, f"one of {', '.join(STRATEGIES)}") from None


def checked_targets(mech: FrequencyOracle, targets: Any) -> NDArray[np.int64]:
    """The targets as sorted distinct indices of ``mech``'s answers."""
    return target_indices(targets, mech.k)
