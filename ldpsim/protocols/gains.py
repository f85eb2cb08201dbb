"""Exact expected gains of the optimal decision rules of a multi-party protocol, for
uniform bits (:func:`exact_accuracy`) or any independent bit probabilities (enumeration of
every input and transcript): the exact values a simulation of the broadcast is checked
against (docs/theory.md sec. 7)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import invalid
from ldpsim.protocols.decisions import OBSERVER, decide, exact_accuracy
from ldpsim.protocols.protocol import Protocol
from ldpsim.protocols.tasks import Task

#: Largest ``2^parties * |transcripts|`` enumerated for the exact gain under non-uniform bits.
MAX_ENUMERATION = 1 << 22


def exact_gains(
    protocols: Sequence[Protocol], task: Task, p_one: ArrayLike | None = None
) -> dict[tuple[str, int], float]:
    """Exact expected gain per round for every (protocol name, receiver): parties 0..parties-1
    and the observer (:data:`OBSERVER`)."""
    return {
        (p.name, who): exact_gain(p, task, who, p_one) for p in protocols for who in [*range(task.parties), OBSERVER]
    }


def exact_gain(protocol: Protocol, task: Task, party: int, p_one: ArrayLike | None = None) -> float:
    """The exact expected gain per round of the optimal rule of ``party`` when party j's bit
    is 1 with probability ``p_one[j]``: ``exact_accuracy`` for uniform bits, otherwise an
    enumeration of all inputs and transcripts (NaN when larger than MAX_ENUMERATION)."""
    if not protocol.binary_inputs:  # parties holding more than a bit: uniform inputs only
        if p_one is not None:
            raise invalid(
                "p_one", p_one, "no bit probabilities when parties hold more than a bit (their inputs are uniform)"
            )
        return float(exact_accuracy(protocol, task, party, notion="average"))
    probs = bit_probabilities(p_one, task.parties)
    if np.all(probs == 0.5):
        return float(exact_accuracy(protocol, task, party, notion="average"))
    return enumerated_gain(protocol, task, party, probs)


def enumerated_gain(protocol: Protocol, task: Task, party: int, p_one: ArrayLike | None = None) -> float:
    """``sum_x prior(x) sum_tau P(tau | x) w(f(x), decide(tau, x_party))`` by brute force,
    with the rule's guesses taken from :func:`decide` itself (NaN when too large)."""
    k = task.parties
    if not protocol.binary_inputs:
        raise invalid(
            "protocol",
            f"input sizes {protocol.inputs}",
            "parties holding bits (enumerated_gain; use exact_accuracy or rule_gain)",
        )
    probs = bit_probabilities(p_one, k)
    sizes = [q.shape[1] for q in protocol.matrices]
    n_tau = math.prod(sizes)
    if (2**k) * n_tau > MAX_ENUMERATION:
        return math.nan
    taus = np.stack(np.unravel_index(np.arange(n_tau), sizes), axis=1).astype(np.int64)  # (T, k)
    possible = np.ones(n_tau, dtype=bool)  # transcripts of probability 0 under every input add nothing
    for j, q in enumerate(protocol.matrices):
        possible &= q.sum(axis=0)[taus[:, j]] > 0
    taus = taus[possible]
    n_tau = taus.shape[0]
    xs = ((np.arange(2**k)[:, None] >> np.arange(k - 1, -1, -1)[None, :]) & 1).astype(np.int8)  # (2^k, k)
    like = np.ones((2**k, n_tau))
    for j, q in enumerate(protocol.matrices):
        like *= q[xs[:, j][:, None], taus[:, j][None, :]]
    prior = np.prod(np.where(xs == 1, probs, 1 - probs), axis=1)
    truth = task.value(xs)
    if party == OBSERVER:
        guess = np.asarray(decide(protocol, task, OBSERVER, taus))
        g = np.broadcast_to(guess, (2**k, n_tau))
    else:
        by_bit = [np.asarray(decide(protocol, task, party, taus, np.full(n_tau, b, np.int8))) for b in (0, 1)]
        g = np.where(xs[:, party][:, None] == 1, by_bit[1][None, :], by_bit[0][None, :])
    gains = task.gain[truth[:, None], g]
    return float(np.sum(prior[:, None] * like * gains))


def bit_probabilities(p_one: ArrayLike | None, k: int) -> NDArray[np.float64]:
    """P(bit = 1) of each of the ``k`` parties: 1/2 by default, one number for all, or one
    per party."""
    if p_one is None:
        return np.full(k, 0.5)
    arr = np.atleast_1d(np.asarray(p_one, dtype=np.float64))
    if arr.size == 1:
        arr = np.full(k, float(arr[0]))
    if arr.shape != (k,) or not np.all((arr >= 0) & (arr <= 1)):
        raise invalid("p_one", p_one, f"a probability or {k} probabilities (one per party)")
    return arr
