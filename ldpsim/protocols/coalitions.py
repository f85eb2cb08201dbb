"""What colluding parties learn, and what their deviation costs the honest ones (exact).

**Inference.** A coalition ``C`` of parties sees the whole transcript ``tau`` and its own
inputs ``x_C`` and guesses an honest party ``t``'s input. With a joint prior ``pi(x)`` over
the inputs (independent uniform bits by default), its best guess is right with probability

    A_C = sum_{x_C, tau} max_{x_t} sum_{x_R} pi(x) prod_j Q_j[x_j, tau_j]
        = sum_{x_C, tau_{-C}} max_{x_t} sum_{x_R} pi(x) prod_{j not in C} Q_j[x_j, tau_j],

``R`` the other honest parties: the coalition's own messages sum out (their rows sum to
one). With independent inputs the coalition's inputs tell it nothing about ``x_t``, and
``A_C`` is what one message of ``t`` gives away, ``(1 + TV(Q_t[0], Q_t[1])) / 2`` for a bit,
whatever ``C``; with correlated inputs (:func:`exchangeable_prior`) every colluder's input
adds to it. :func:`coalition_inference` computes it by a tensor contraction (one axis per
party), with the posterior's expectation.

**Deviation.** :func:`coalition_table` lets the first ``c`` parties collude, for ``c = 0 ..
k - 1``: what they learn about the last party's input, and, when they also deviate
(:func:`ldpsim.protocols.deviate`: ``"truthful"`` or ``("fixed", bit)``), the last party's
exact accuracy for a task with its rule for the honest protocol, against the rule
re-optimised for the deviation (:func:`ldpsim.protocols.rule_gain`,
:func:`ldpsim.protocols.exact_accuracy`; inputs independent and uniform there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from ..errors import invalid
from .channel import deviate, rule_gain
from .decisions import exact_accuracy
from .protocol import Protocol
from .tasks import Task

__all__ = ["CoalitionInference", "coalition_inference", "coalition_table", "exchangeable_prior"]

#: Largest tensor (inputs times the honest parties' messages) contracted exactly.
MAX_ENTRIES = 20_000_000


@dataclass(frozen=True)
class CoalitionInference:
    """The coalition's best guess of the target's input: its accuracy, the baseline (the
    most likely input given the coalition's inputs alone) and the expected posterior of the
    true input."""

    accuracy: float
    baseline: float
    expected_posterior: float


def exchangeable_prior(parties: int, rho: float) -> NDArray[np.float64]:
    """Bits that agree: with probability ``rho`` every party holds one common fair bit,
    otherwise independent fair bits. A flat array over ``{0,1}^parties`` (party 0 the most
    significant bit)."""
    k = V.integer(parties, "parties", minimum=1, maximum=20)
    rho = V.real(rho, "rho", "a probability in [0, 1]")
    if not 0.0 <= rho <= 1.0:
        raise invalid("rho", rho, "a probability in [0, 1]")
    out = np.full(1 << k, (1.0 - rho) / (1 << k))
    out[0] += rho / 2
    out[-1] += rho / 2
    return out


def coalition_inference(
    protocol: Protocol, coalition: Sequence[int], target: int, prior: ArrayLike | None = None
) -> CoalitionInference:
    """Exact inference of ``target``'s input by ``coalition`` (module docstring)."""
    k = protocol.parties
    members = sorted({V.integer(j, "coalition", minimum=0, maximum=k - 1) for j in coalition})
    t = V.integer(target, "target", minimum=0, maximum=k - 1)
    if t in members:
        raise invalid("target", t, f"a party outside the coalition {members}")
    shape = tuple(protocol.inputs)
    if prior is None:
        pi = np.full(shape, 1.0 / math.prod(shape))
    else:
        pi = V.probability_vector(prior, "prior", size=math.prod(shape)).reshape(shape)
    honest = [j for j in range(k) if j not in members]
    entries = math.prod(shape) * math.prod(protocol.sizes[j] for j in honest)
    if entries > MAX_ENTRIES:
        raise invalid(
            "coalition", members, f"a contraction within {MAX_ENTRIES:,} entries (here {entries:,}): fewer parties"
        )
    # axes: one per party, x_j, turned into tau_j for the honest others (summed inside the max)
    tensor = pi
    for j in honest:
        if j == t:
            continue
        tensor = np.moveaxis(np.tensordot(tensor, protocol.matrices[j], axes=([j], [0])), -1, j)
    q_t = protocol.matrices[t]
    joint = np.moveaxis(tensor, t, -1)[..., None] * q_t  # (..., x_t, tau_t)
    joint = np.moveaxis(joint, -2, 0)  # (x_t, ..., tau_t)
    total = joint.sum(axis=0)
    accuracy = float(joint.max(axis=0).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = float(np.nansum(np.where(total > 0, (joint**2).sum(axis=0) / total, 0.0)))
    # baseline: from the coalition's inputs alone (every other honest party summed out)
    others = tuple(j for j in honest if j != t)
    marg = np.moveaxis(pi.sum(axis=others, keepdims=True), t, 0)
    baseline = float(marg.reshape(marg.shape[0], -1).max(axis=0).sum())
    return CoalitionInference(accuracy, baseline, expected)


def coalition_table(
    protocol: Protocol,
    task: Task,
    *,
    prior: ArrayLike | None = None,
    deviation: str | tuple[str, int] = "truthful",
) -> pd.DataFrame:
    """One row per coalition size ``c = 0 .. k - 1`` (the first ``c`` parties; the last
    party is the honest one studied): what the coalition learns about the last party's input
    (under ``prior``), and the last party's accuracy for ``task`` when the coalition deviates
    with its rule for the honest protocol and with the rule re-optimised."""
    k = protocol.parties
    last = k - 1
    honest_acc = exact_accuracy(protocol, task, last)
    rows: list[dict[str, Any]] = []
    for c in range(k):
        members = list(range(c))
        inf = coalition_inference(protocol, members, last, prior)
        row: dict[str, Any] = {
            "colluders": c,
            "learns_accuracy": inf.accuracy,
            "learns_baseline": inf.baseline,
            "expected_posterior": inf.expected_posterior,
            "honest_accuracy": honest_acc,
        }
        if c == 0:
            row |= {"naive_rule_accuracy": honest_acc, "reoptimised_accuracy": honest_acc}
        else:
            actual = deviate(protocol, {j: deviation for j in members})
            row |= {
                "naive_rule_accuracy": rule_gain(protocol, actual, task, last),
                "reoptimised_accuracy": exact_accuracy(actual, task, last),
            }
        rows.append(row)
    return pd.DataFrame(rows)
