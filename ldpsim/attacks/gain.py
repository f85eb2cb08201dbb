"""The exact expected gain of an attack, and the gain a survey measured.

The analyst's estimate is ``invert(S / N)``, affine in the statistic's frequencies. With
``n`` honest reports (statistic ``S_h``) and ``m`` fake ones (``S_f``), ``beta = m / (n + m)``:

    invert((S_h + S_f) / (n + m)) = (1 - beta) invert(S_h / n) + beta invert(S_f / m),

an identity, since the weights sum to one. So the **frequency gain** of the targets ``T``
(Cao, Jia and Gong 2021: the increase of their estimated total share) is

    G = beta (sum_T invert(S_f / m) - sum_T invert(S_h / n)),
    E[G] = beta (sum_T invert(rho) - f_T),

with ``rho`` the expected statistic of one fake report (the strategy's ``unit_support``) and
``f_T`` the targets' true total share. For randomized response, unary encoding and local
hashing this reproduces the closed forms of Cao et al.'s table (``tests/attacks``). For a
numeric question's mean (the average of unbiased reports) the same identity gives
``E[G] = beta (E[fake report] - mean)``.

For the strategies that move a numeric question's mean and variance together (the two-group
protocol, :mod:`ldpsim.analyst.means`), the mean and the second moment are each affine in
their group's reports, so with the share ``beta`` of fake reports in each group
(:func:`expected_moments`)

    E[mu_hat'] = (1 - beta) mu + beta v_1,    E[m2_hat'] = (1 - beta) m2 + beta g^-1(v_2),
    E[var_hat'] = E[m2_hat'] - E[mu_hat']^2 - Var(mu_hat'),

``v_1``, ``v_2`` the fake reports' expectations in the two groups and ``Var(mu_hat') = ((1 -
beta) (E[variance(x)] + Var(x)) + beta variance(v_1)) / n_1`` (the last term for the input
attack only; 0 when ``n_1`` is not given: the large-sample limit). Each target is reached
exactly when its unclipped fake value lies in the range the attack may use; the least fake
share that allows both is :func:`fake_share_needed`: for a target ``t`` of a mean ``mu`` and
a range ``[L, H]``, ``(t - mu) / (H - mu)`` above the mean and ``(mu - t) / (mu - L)`` below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.analyst.means import square_back, square_range
from ldpsim.attacks.optimal import checked_share
from ldpsim.attacks.strategies import MomentsStrategy, checked_targets, strategy
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = ["PoisonedMoments", "expected_gain", "expected_moments", "fake_share_needed", "measured_gain"]


def expected_gain(
    mech: FrequencyOracle,
    name: str,
    targets: ArrayLike,
    share: float,
    prior: ArrayLike,
    rng: np.random.Generator | int | None = None,
) -> float:
    """``E[G]`` of the strategy ``name`` with a fake share ``share`` when the honest answers
    follow ``prior`` (module docstring). For the strategies that move a numeric question's
    mean, ``targets`` is the target value, ``prior`` the honest answers' mean and the gain
    ``beta (E[fake report] - mean)``. For those that move the mean and the variance together,
    ``targets`` is ``(mean, variance)``, ``prior`` the honest mean and second moment, and the
    gain that of the variance in the large-sample limit (:func:`expected_moments`)."""
    st = strategy(name)
    beta = checked_share(share)
    if st.moves == "moments":
        law = np.asarray(prior, dtype=np.float64).reshape(-1)
        mean, m2 = v.real(law[0], "prior", "the honest mean"), v.real(law[-1], "prior", "the second moment")
        return expected_moments(mech, name, targets, share, honest=(mean, m2)).variance - (m2 - mean * mean)
    if st.moves == "mean":
        t: Any = v.real(targets, "targets", "a target value for the mean")
        pi = np.array([v.real(np.asarray(prior).reshape(-1)[0], "prior", "the honest answers' mean")])
    else:
        t = checked_targets(mech, targets)
        pi = v.probability_vector(prior, "prior", size=mech.k)
    rho = st.unit_support(mech, t, prior=pi, share=beta, rng=np.random.default_rng(rng))
    return float(beta * (st.estimate(mech, rho, 1, t) - st.truth(pi, t)))


def measured_gain(
    mech: FrequencyOracle,
    targets: NDArray[np.int64],
    honest: NDArray[np.int64],
    n_honest: int,
    fake: NDArray[np.int64],
    n_fake: int,
) -> float:
    """``G``: the targets' estimated total share from all the reports minus that from the
    honest ones alone (statistics and numbers of reports)."""
    if n_honest == 0 or n_fake == 0:
        return 0.0
    after = np.asarray(mech.invert((honest + fake) / float(n_honest + n_fake)))[targets].sum()
    before = np.asarray(mech.invert(honest / float(n_honest)))[targets].sum()
    return float(after - before)


@dataclass(frozen=True)
class PoisonedMoments:
    """The expected mean and variance estimates after an attack (module docstring), the
    variance of the poisoned mean's estimate, and the fake values of the two groups."""

    mean: float
    variance: float
    mean_var: float
    fake_mean_value: float
    fake_square_value: float


def _moments_strategy(name: str) -> MomentsStrategy:
    st = strategy(name)
    if not isinstance(st, MomentsStrategy):
        raise invalid("strategy", name, "a strategy that moves the mean and the variance (output_mean_variance, ...)")
    return st


def _pair(value: Any, name: str, expected: str) -> tuple[float, float]:
    a = np.asarray(value, dtype=np.float64).reshape(-1) if value is not None else np.zeros(0)
    if a.size != 2 or not np.all(np.isfinite(a)):
        raise invalid(name, value, expected)
    return float(a[0]), float(a[1])


def expected_moments(
    mech: Any,
    name: str,
    target: Any,
    share: float,
    answers: ArrayLike | None = None,
    n_mean: int | None = None,
    honest: tuple[float, float] | None = None,
) -> PoisonedMoments:
    """The exact expected mean and variance estimates when the share ``share`` of each group's
    reports come from the strategy ``name`` aiming at ``target = (mean, variance)``, the honest
    respondents drawn from ``answers`` (or with mean and second moment ``honest``), the first
    group holding ``n_mean`` reports (None: the large-sample limit, no ``Var(mu_hat')`` term)."""
    st = _moments_strategy(name)
    beta = checked_share(share)
    if beta == 0.0:
        raise invalid("share", share, "a fake share in (0, 1)")
    t = _pair(target, "target", "a target (mean, variance) of two finite numbers")
    if t[1] < 0:
        raise invalid("target", target, "a variance of at least 0")
    x = None
    if answers is not None:
        x = v.finite_array(answers, "answers", "finite numbers").ravel()
        honest = (float(np.mean(x)), float(np.mean(x * x)))
    mean, m2 = _pair(honest, "honest", "the honest answers' mean and second moment (or the answers)")
    v1, v2 = st.fake_values(mech, np.array(t), beta, np.array([mean, m2]))
    e_mean = (1.0 - beta) * mean + beta * v1
    e_m2 = (1.0 - beta) * m2 + beta * float(square_back(v2, mech.lo, mech.hi))
    mean_var = 0.0
    if n_mean is not None:
        if x is None:
            raise invalid("answers", None, "the honest answers, to give the variance of the mean's estimate")
        n1 = v.integer(n_mean, "n_mean", minimum=1)
        honest_noise = float(np.mean(mech.variance(x))) + float(np.var(x))
        fake_noise = float(mech.variance(v1)) if st.clip_to == "answers" else 0.0
        mean_var = ((1.0 - beta) * honest_noise + beta * fake_noise) / n1
    return PoisonedMoments(e_mean, e_m2 - e_mean * e_mean - mean_var, mean_var, v1, v2)


def _needed(target: float, honest: float, low: float, high: float) -> float:
    if target > honest:
        return (target - honest) / (high - honest) if high > honest else math.inf
    if target < honest:
        return (honest - target) / (honest - low) if honest > low else math.inf
    return 0.0


def fake_share_needed(mech: Any, name: str, target: Any, honest: tuple[float, float]) -> float:
    """The least fake share ``m / (n + m)`` at which the strategy ``name`` puts both expected
    estimates on ``target = (mean, variance)`` in the large-sample limit, for honest answers
    of mean and second moment ``honest`` (module docstring); 1 or more: never."""
    st = _moments_strategy(name)
    t_mean, t_var = _pair(target, "target", "a target (mean, variance) of two finite numbers")
    mean, m2 = _pair(honest, "honest", "the honest answers' mean and second moment")
    low, high = mech.report_range if st.clip_to == "reports" else (mech.lo, mech.hi)
    q_lo, q_hi = square_range(mech.lo, mech.hi)

    def g(u: float) -> float:
        return mech.lo + (mech.hi - mech.lo) * (u - q_lo) / (q_hi - q_lo)

    return max(_needed(t_mean, mean, low, high), _needed(g(t_var + t_mean * t_mean), g(m2), low, high))
