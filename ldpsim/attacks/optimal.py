"""The optimal attacker of a finite mechanism, as a linear program.

The analyst's estimate is affine in the report frequencies, so the expected estimate of the
targets' total share after ``m`` fake reports among ``n + m`` is affine in the fake reports'
law ``phi`` over outputs: with ``beta = m / (n + m)`` and the honest output law
``nu = Q^T pi``,

    E[sum_T f_hat] = (1 - beta) f_T + beta sum_T (A phi)_t ,

``A`` the inversion (:meth:`FiniteMechanism.invert`). Without constraints the maximum is at a
vertex: every fake report is the output ``y`` of largest ``sum_T A[t, y]``, the maximal gain
attack. The **undetectable** attacker adds the constraint that the pooled reports keep the
law of *some* honest population, ``(1 - beta) nu + beta phi = Q^T pi'`` for a distribution
``pi'`` over answers: then no test of the reports, however many, tells the poisoned survey
from an honest one whose answers follow ``pi'``, and the estimate is ``pi'`` itself. The
program (``m + k`` variables, ``m`` equalities) is solved by HiGHS; its optimum is never below
the random item attack's gain (an input attack is undetectable) and never above the maximal
gain attack's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.base import FrequencyOracle, target_indices

__all__ = ["OptimalAttack", "optimal_attack"]


def checked_share(share: object) -> float:
    """A fake share ``m / (n + m)`` in ``[0, 1)``."""
    beta = v.real(share, "share", "a fake share m / (n + m) in [0, 1)")
    if not 0.0 <= beta < 1.0:
        raise invalid("share", share, "a fake share m / (n + m) in [0, 1)")
    return beta


@dataclass(frozen=True)
class OptimalAttack:
    """The fake reports' law over outputs (``law``), the expected gain of the targets'
    estimated total share, and the input law the poisoned reports imitate (``imitated``:
    None without the constraint)."""

    law: NDArray[np.float64]
    gain: float
    imitated: NDArray[np.float64] | None


def optimal_attack(
    mech: FrequencyOracle, prior: ArrayLike, targets: ArrayLike, share: float, *, undetectable: bool = True
) -> OptimalAttack:
    """The attack of largest expected gain on a finite mechanism (module docstring)."""
    m = getattr(mech, "output_size", None)
    if m is None:
        raise invalid(
            "mechanism", mech, "a finite mechanism (an output matrix) for the optimal attack's linear program"
        )
    t = target_indices(targets, mech.k)
    pi = v.probability_vector(prior, "prior", size=mech.k)
    beta = checked_share(share)
    gains = np.asarray(mech.target_gains(t), dtype=np.float64)  # type: ignore[attr-defined]
    possible = mech.possible_outputs()
    f_t = float(pi[t].sum())
    if not undetectable or beta == 0.0:
        y = int(np.argmax(np.where(possible, gains, -np.inf)))
        law = np.zeros(m)
        law[y] = 1.0
        return OptimalAttack(law, beta * (gains[y] - f_t), None)
    q = np.asarray(mech.matrix, dtype=np.float64)  # type: ignore[attr-defined]
    k = mech.k
    nu = pi @ q
    # variables: phi (m), pi' (k); maximise sum_T pi'_t
    c = np.zeros(m + k)
    c[m + t] = -1.0
    a_eq = np.hstack([beta * np.eye(m), -q.T])
    b_eq = -(1.0 - beta) * nu
    a_eq = np.vstack([a_eq, np.concatenate([np.ones(m), np.zeros(k)])])
    b_eq = np.append(b_eq, 1.0)
    res = linprog(c, A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * (m + k), method="highs")
    if res.status != 0:  # pragma: no cover - the random item attack is always feasible
        raise LdpSimError(f"optimal attack: the linear program failed ({res.message})")
    law = np.clip(res.x[:m], 0.0, None)
    law /= law.sum()
    imitated = np.clip(res.x[m:], 0.0, None)
    imitated /= imitated.sum()
    return OptimalAttack(law, float(imitated[t].sum() - f_t), imitated)
