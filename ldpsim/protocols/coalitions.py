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

**Many parties.** With the exchangeable prior given by its ``rho`` (``rho=...``; ``rho = 0``
is independent bits, the default beyond the tensor's reach) the sum over the honest others'
messages runs over their *counts* of each symbol, per class of identical parties: under
the common bit the others' messages are i.i.d. given it, otherwise i.i.d. given independent
bits, so the joint of the target's bit and the counts is a two-term mixture of multinomials
(theory sec. 7.4). The coalition's inputs enter only through whether they all equal 0, all
equal 1, or neither. Exact for any k with the others in few classes.

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
from .decisions import MAX_CLASS_COMBOS, _classes, class_rows, exact_accuracy
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
    protocol: Protocol,
    coalition: Sequence[int],
    target: int,
    prior: ArrayLike | None = None,
    *,
    rho: float | None = None,
) -> CoalitionInference:
    """Exact inference of ``target``'s input by ``coalition`` (module docstring): inputs from
    ``prior`` (a flat array over the input vectors), or from the exchangeable prior ``rho``
    (any number of parties), or independent and uniform."""
    k = protocol.parties
    members = sorted({V.integer(j, "coalition", minimum=0, maximum=k - 1) for j in coalition})
    t = V.integer(target, "target", minimum=0, maximum=k - 1)
    if t in members:
        raise invalid("target", t, f"a party outside the coalition {members}")
    if rho is not None and prior is not None:
        raise invalid("rho", rho, "no rho when a prior array is given (one or the other)")
    shape = tuple(protocol.inputs)
    honest = [j for j in range(k) if j not in members]
    entries = math.prod(shape) * math.prod(protocol.sizes[j] for j in honest)
    if rho is not None or (prior is None and entries > MAX_ENTRIES and protocol.binary_inputs):
        return _exchangeable_inference(protocol, members, t, 0.0 if rho is None else rho)
    if prior is None:
        pi = np.full(shape, 1.0 / math.prod(shape))
    else:
        pi = V.probability_vector(prior, "prior", size=math.prod(shape)).reshape(shape)
    if entries > MAX_ENTRIES:
        raise invalid(
            "coalition",
            members,
            f"a contraction within {MAX_ENTRIES:,} entries (here {entries:,}): fewer parties, or the "
            "exchangeable prior by its rho",
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


def _exchangeable_inference(protocol: Protocol, members: list[int], t: int, rho: float) -> CoalitionInference:
    """:func:`coalition_inference` under the exchangeable prior ``rho``, by counts (module
    docstring): for each class of the coalition's inputs (all 0, all 1, mixed), each message
    of the target and each vector of counts of the honest others' messages per class,
    ``P(x_t = b, ...) = (1 - rho) 2^-(c+1) prod_j m_j(tau_j) Q_t[b, tau_t] + [x_C = b] rho/2
    prod_j Q_j[b, tau_j] Q_t[b, tau_t]`` with ``m_j = (Q_j[0] + Q_j[1]) / 2``."""
    if not protocol.binary_inputs:
        raise invalid("protocol", "parties holding more than a bit", "bits for the exchangeable prior")
    rho = V.real(rho, "rho", "a probability in [0, 1]")
    if not 0.0 <= rho <= 1.0:
        raise invalid("rho", rho, "a probability in [0, 1]")
    c = len(members)
    others = [j for j in range(protocol.parties) if j != t and j not in members]
    tables = []
    for q, n in _classes(protocol, others):
        live = q[0] + q[1] > 0
        full, logw, _ = class_rows(q, n, live)  # logw: log multinomial probability under m_j
        with np.errstate(divide="ignore", invalid="ignore"):
            logq = np.log(q)
            log_m = np.log(0.5 * (q[0] + q[1]))
            # log prod_j Q_j[b, tau_j] over the class = logw + sum_o n_o (log q[b, o] - log m[o])
            l0 = logw + np.where(full > 0, full * (logq[0] - log_m), 0.0).sum(axis=1)
            l1 = logw + np.where(full > 0, full * (logq[1] - log_m), 0.0).sum(axis=1)
        tables.append((logw, l0, l1))
    shape = tuple(len(tb[0]) for tb in tables)
    combos = math.prod(shape)
    if combos > MAX_CLASS_COMBOS:
        raise invalid(
            "coalition",
            members,
            f"at most {MAX_CLASS_COMBOS:,} count vectors of the honest others' messages (here {combos:,}): "
            "parties in fewer classes",
        )
    index = np.unravel_index(np.arange(combos), shape) if shape else ()
    lu, lb = np.zeros(combos), np.zeros((2, combos))
    for (logw, l0, l1), idx in zip(tables, index):
        lu += logw[idx]
        lb[0] += l0[idx]
        lb[1] += l1[idx]
    # the coalition's inputs: (how many vectors, all equal 0, all equal 1)
    classes = [(1.0, True, True)] if c == 0 else [(1.0, True, False), (1.0, False, True)]
    if c >= 2:
        classes.append((2.0**c - 2.0, False, False))
    with np.errstate(divide="ignore"):
        log_iid, log_common = math.log1p(-rho) if rho < 1 else -math.inf, math.log(rho / 2) if rho > 0 else -math.inf
        logq_t = np.log(protocol.matrices[t])
    iid = log_iid - (c + 1) * math.log(2.0)
    accuracy = expected = baseline = 0.0
    for count, *equal in classes:
        joint_b = []
        for b in (0, 1):
            term = iid + lu
            if equal[b]:
                term = np.logaddexp(term, log_common + lb[b])
            joint_b.append(term[:, None] + logq_t[b][None, :])  # (counts, tau_t)
        joint = np.stack(joint_b)  # (2, counts, tau_t), log P
        top = joint.max(axis=0)
        total = np.logaddexp(joint[0], joint[1])
        accuracy += count * float(np.exp(top).sum())
        with np.errstate(invalid="ignore"):
            expected += count * float(np.nansum(np.exp(np.logaddexp(2 * joint[0], 2 * joint[1]) - total)))
        prior_b = [math.exp(iid) + (rho / 2 if equal[b] else 0.0) for b in (0, 1)]
        baseline += count * max(prior_b)
    return CoalitionInference(accuracy, baseline, expected)


def coalition_table(
    protocol: Protocol,
    task: Task,
    *,
    prior: ArrayLike | None = None,
    rho: float | None = None,
    deviation: str | tuple[str, int] = "truthful",
    colluders: Sequence[int] | None = None,
) -> pd.DataFrame:
    """One row per coalition size ``c`` in ``colluders`` (default ``0 .. k - 1``; the first
    ``c`` parties; the last party is the honest one studied): what the coalition learns about
    the last party's input (under ``prior``, or the exchangeable prior ``rho``), and the last
    party's accuracy for ``task`` when the coalition deviates with its rule for the honest
    protocol and with the rule re-optimised. Symmetric tasks run by transcript classes, so
    many parties in few classes are exact too."""
    k = protocol.parties
    last = k - 1
    sizes = range(k) if colluders is None else [V.integer(c, "colluders", minimum=0, maximum=k - 1) for c in colluders]
    honest_acc = exact_accuracy(protocol, task, last)
    rows: list[dict[str, Any]] = []
    for c in sizes:
        members = list(range(c))
        inf = coalition_inference(protocol, members, last, prior, rho=rho)
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
