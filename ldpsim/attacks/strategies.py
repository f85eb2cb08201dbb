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

For numeric questions, two strategies move the estimated mean towards a target value (Li,
Li, Sun, Gong and Li 2023): ``output_mean``, their output poisoning (every fake report
carries the value that puts the pooled mean at the target, clipped to the mechanism's report
range), and ``input_mean``, their baseline input poisoning (the fake answer is that value
clipped to the answers' range, privatised honestly).

Two more move the mean and the variance together, through the two-group protocol of the same
paper (:func:`ldpsim.analyst.means.moment_reports`: half the respondents report ``x``, half
``g(x^2)``): ``output_mean_variance`` (OPA) and ``input_mean_variance`` (IPA). Their
``targets`` are ``(target mean, target variance)``, their ``prior`` the honest answers' mean
and second moment, and a report is a row ``(group, value)`` (group 1: the squares' group).
Fake respondents alternate between the groups; in the first every fake report carries the
value that puts the pooled mean at the target, in the second the value that puts the pooled
second moment at ``target variance + mu_a^2``, ``mu_a`` the mean the first group reaches
(the target unless clipped), each clipped to the report range (OPA) or to the answers' range
and privatised honestly (IPA).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.means import moments_from_sums, square_range
from ldpsim.attacks.optimal import optimal_attack
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle, target_indices

__all__ = [
    "STRATEGIES",
    "AnswerStrategy",
    "MeanStrategy",
    "MomentsStrategy",
    "Strategy",
    "moment_statistic",
    "strategy",
]


class Strategy(ABC):
    """What a cohort of fake respondents sends (module docstring)."""

    #: the name a scenario file uses
    name: ClassVar[str]
    #: one line for tables and ``--help``
    summary: ClassVar[str]
    #: whether the strategy needs the honest answers' law and the fake share
    needs_prior: ClassVar[bool] = False
    #: what the strategy moves: ``"answers"`` (a frequency oracle's targets) or ``"mean"``
    moves: ClassVar[str]

    @staticmethod
    @abstractmethod
    def estimate(mech: Any, counts: NDArray, n: int, targets: Any) -> float:
        """The moved quantity from a statistic of ``n`` reports."""

    @staticmethod
    @abstractmethod
    def truth(prior: Any, targets: Any) -> float:
        """The moved quantity's true value."""

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


class AnswerStrategy(Strategy):
    """A strategy that promotes answers of a frequency oracle: the quantity it moves is the
    targets' estimated total share."""

    moves: ClassVar[str] = "answers"

    @staticmethod
    def estimate(mech: Any, counts: NDArray, n: int, targets: Any) -> float:
        return float(np.asarray(mech.invert(np.asarray(counts) / float(n)))[targets].sum())

    @staticmethod
    def truth(prior: NDArray[np.float64], targets: Any) -> float:
        return float(np.asarray(prior)[targets].sum())


class RandomPerturbed(AnswerStrategy):
    name = "random_perturbed"
    summary = "a report drawn uniformly from the report space (Cao et al.'s RPA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.random_reports(n, rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        return np.asarray(mech.random_report_support(), dtype=np.float64)


class RandomItem(AnswerStrategy):
    name = "random_item"
    summary = "a target drawn uniformly and privatised honestly (Cao et al.'s RIA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.privatize(targets[rng.integers(0, targets.size, size=n)], rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        u = np.zeros(mech.k)
        u[targets] = 1.0 / targets.size
        return np.asarray(mech.forward(u), dtype=np.float64)


class MaximalGain(AnswerStrategy):
    name = "maximal_gain"
    summary = "the report supporting the most targets (Cao et al.'s MGA)"

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return mech.crafted_reports(targets, n, rng)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        # every crafted report supports the same targets; the rest of the statistic is
        # the padding's, whose expectation the gain does not need: only the targets' entries
        # and the estimate's affine form matter, and they are read from one report exactly
        return mech.statistic(mech.crafted_reports(targets, 1, rng)).astype(np.float64)


class Undetectable(AnswerStrategy):
    name = "undetectable"
    summary = "the best report law that keeps the pooled reports honest-looking (linear program)"
    needs_prior = True

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        law = optimal_attack(mech, prior, targets, share, undetectable=True).law
        return rng.choice(law.size, size=n, p=law).astype(np.int64)

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        return optimal_attack(mech, prior, targets, share, undetectable=True).law


class MeanStrategy(Strategy):
    """A strategy that moves the estimated mean of a numeric question (Li, Li, Sun, Gong and
    Li 2023) towards a ``target`` value; ``prior`` is the honest answers' mean, which the
    attacker is assumed to know, and ``share`` the fake share. The analyst's mean is the
    reports' average (the numeric mechanisms' reports are unbiased)."""

    moves: ClassVar[str] = "mean"
    needs_prior = True

    @staticmethod
    def estimate(mech: Any, counts: NDArray, n: int, targets: Any) -> float:
        return float(counts[0]) / float(n)

    @staticmethod
    def truth(prior: Any, targets: Any) -> float:
        return float(np.asarray(prior).reshape(-1)[0])

    @staticmethod
    def _wanted(target: float, share: float, honest: float) -> float:
        """The fake reports' mean that puts the pooled mean at ``target``."""
        return (float(target) - (1.0 - share) * honest) / share

    def fake_value(self, mech: Any, target: float, share: float, honest: float) -> float:
        """The value every fake report carries (or its expectation)."""
        raise NotImplementedError

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        return np.full(n, self.fake_value(mech, float(targets), float(share), self.truth(prior, None)))

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        return np.array([self.fake_value(mech, float(targets), float(share), self.truth(prior, None))])


class OutputMean(MeanStrategy):
    name = "output_mean"
    summary = "reports set to the value that moves the mean to the target, within the report range (Li et al.'s OPA)"

    def fake_value(self, mech: Any, target: float, share: float, honest: float) -> float:
        lo, hi = mech.report_range
        return float(np.clip(self._wanted(target, share, honest), lo, hi))


class InputMean(MeanStrategy):
    name = "input_mean"
    summary = "answers set to the value that moves the mean most towards the target, privatised honestly"

    def fake_value(self, mech: Any, target: float, share: float, honest: float) -> float:
        return float(np.clip(self._wanted(target, share, honest), mech.lo, mech.hi))

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        value = self.fake_value(mech, float(targets), float(share), self.truth(prior, None))
        return mech.privatize(np.full(n, value), rng)


def moment_statistic(reports: NDArray[np.float64]) -> NDArray[np.float64]:
    """The two-group statistic of rows ``(group, value)``: the first group's sum of values and
    number of reports, then the second group's."""
    r = np.asarray(reports, dtype=np.float64).reshape(-1, 2)
    second = r[:, 0] > 0.5
    return np.array(
        [r[~second, 1].sum(), float((~second).sum()), r[second, 1].sum(), float(second.sum())], dtype=np.float64
    )


class MomentsStrategy(Strategy):
    """A strategy that moves a numeric question's mean and variance together (module
    docstring). The moved quantity (``estimate``, ``truth``) is the variance; ``estimates``
    gives the mean beside it."""

    moves: ClassVar[str] = "moments"
    needs_prior = True

    @staticmethod
    def estimates(mech: Any, counts: NDArray) -> tuple[float, float]:
        """``(mean, variance)`` from the two-group statistic ``counts``."""
        c = np.asarray(counts, dtype=np.float64)
        mean, _, var = moments_from_sums(c[0], c[1], c[2], c[3], mech.lo, mech.hi)
        return mean, var

    @staticmethod
    def estimate(mech: Any, counts: NDArray, n: int, targets: Any) -> float:
        return MomentsStrategy.estimates(mech, counts)[1]

    @staticmethod
    def truth(prior: Any, targets: Any) -> float:
        mean, m2 = (float(p) for p in np.asarray(prior, dtype=np.float64).reshape(-1)[:2])
        return m2 - mean * mean

    #: the range fake values are clipped to: "reports" (OPA) or "answers" (IPA)
    clip_to: ClassVar[str]

    def fake_values(self, mech: Any, targets: Any, share: float, prior: Any) -> tuple[float, float]:
        """The first group's fake value (of ``x``) and the second's (of ``g(x^2)``)."""
        t_mean, t_var = (float(t) for t in np.asarray(targets, dtype=np.float64).reshape(-1)[:2])
        mean, m2 = (float(p) for p in np.asarray(prior, dtype=np.float64).reshape(-1)[:2])
        lo, hi = mech.report_range if self.clip_to == "reports" else (mech.lo, mech.hi)
        v1 = float(np.clip((t_mean - (1.0 - share) * mean) / share, lo, hi))
        reached = (1.0 - share) * mean + share * v1
        g_target = _to_square_scale(t_var + reached * reached, mech.lo, mech.hi)
        g_honest = _to_square_scale(m2, mech.lo, mech.hi)
        v2 = float(np.clip((g_target - (1.0 - share) * g_honest) / share, lo, hi))
        return v1, v2

    def reports(self, mech, targets, n, rng, *, prior=None, share=None):
        v1, v2 = self.fake_values(mech, targets, float(share), prior)
        second = (np.arange(n) % 2).astype(np.float64)
        values = np.where(second > 0.5, v2, v1)
        if self.clip_to == "answers":
            values = np.asarray(mech.privatize(values, rng), dtype=np.float64)
        return np.column_stack([second, values])

    def unit_support(self, mech, targets, *, prior=None, share=None, rng=None):
        v1, v2 = self.fake_values(mech, targets, float(share), prior)
        return np.array([0.5 * v1, 0.5, 0.5 * v2, 0.5])


def _to_square_scale(m2: float, lo: float, hi: float) -> float:
    """``g(m2)``: a second moment on the answers' scale (the inverse of ``square_back``,
    unclipped, unlike ``square_input`` of an answer)."""
    q_lo, q_hi = square_range(lo, hi)
    return lo + (hi - lo) * (m2 - q_lo) / (q_hi - q_lo)


class OutputMeanVariance(MomentsStrategy):
    name = "output_mean_variance"
    summary = "two-group reports set to the values that move mean and variance to the targets (Li et al.'s OPA)"
    clip_to = "reports"


class InputMeanVariance(MomentsStrategy):
    name = "input_mean_variance"
    summary = "two-group answers set to the values that move mean and variance most, privatised honestly (IPA)"
    clip_to = "answers"


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        RandomPerturbed(),
        RandomItem(),
        MaximalGain(),
        Undetectable(),
        OutputMean(),
        InputMean(),
        OutputMeanVariance(),
        InputMeanVariance(),
    )
}


def strategy(name: str) -> Strategy:
    """The registered strategy ``name``; one line listing them otherwise."""
    try:
        return STRATEGIES[name]
    except (KeyError, TypeError):
        raise invalid("strategy", name, f"one of {', '.join(STRATEGIES)}") from None


def checked_targets(mech: FrequencyOracle, targets: Any) -> NDArray[np.int64]:
    """The targets as sorted distinct indices of ``mech``'s answers."""
    return target_indices(targets, mech.k)
