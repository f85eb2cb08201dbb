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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.attacks.optimal import checked_share
from ldpsim.attacks.strategies import checked_targets, strategy
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = ["expected_gain", "measured_gain"]


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
    ``beta (E[fake report] - mean)``."""
    st = strategy(name)
    beta = checked_share(share)
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
