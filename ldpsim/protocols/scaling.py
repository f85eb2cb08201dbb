"""How the accuracy of identical parties scales with their number k: large-k formulas,
exact values over a grid of (task, k, eps, receiver), and a Monte Carlo of the optimal rule
that samples counts instead of parties (docs/multiparty.md).

Set-up. Each of k parties holds a uniform bit x_j and broadcasts ``y_j ~ Q[x_j, :]`` with
the same 2 x m matrix Q. A receiver that does not know n of the bits (n = k for the
observer, n = k - 1 for a party, which knows its own) sees the n messages. Write

* ``pi(y) = (Q[0, y] + Q[1, y]) / 2``: the law of one message;
* ``p(y) = P(x_j = 1 | y_j = y) = Q[1, y] / (2 pi(y))``: the posterior of one bit;
* ``v_b = Var(E[x_j | y_j]) = sum_y pi(y) (p(y) - 1/2)^2`` (what a message says) and
  ``v_w = E[Var(x_j | y_j)] = sum_y pi(y) p(y) (1 - p(y))`` (what it leaves unknown);
  ``v_b + v_w = Var(x_j) = 1/4``.

Large-k formulas (:func:`large_k_accuracy`, indicator gain, the optimal average rule):

* **XOR** is exact at every k: ``(1 + TV^n) / 2`` with ``TV = TV(Q[0], Q[1])``.
* **Majority** ``[S > k/2]``, S the number of ones. Given the messages, S is a sum of
  independent Bernoulli(p(y_j)) (plus the known bit), and the optimal rule is close to
  ``[E[S | y] > k/2]``. Centre both: ``A = E[S | y] - k/2`` and ``S - k/2 = A + B`` with
  ``B = S - E[S | y]`` uncorrelated with A. By the multivariate CLT (A, A + B) is nearly a
  centred normal pair with ``Var A = n v_b + (k - n)/4`` (a known bit is its own
  posterior mean and adds 1/4) and ``Var(A + B) = k/4``, so with correlation
  ``rho^2 = (4 n v_b + (k - n)) / k`` and Sheppard's formula for the probability that two
  such normals have the same sign,

      ACC ~ 1/2 + arcsin(rho) / pi,     rho^2 = 4 v_b for the observer.

  Binary randomized response with keep probability ``e^eps / (1 + e^eps)``: p(y) is that
  probability or its complement, each half the time, so ``rho = 2 keep - 1 = tanh(eps/2)``.
  Measured against the exact values (eps 0.5, 1, 2; delta 0 and 0.05-0.3; k = 20-1000):
  the error is O(1/k), about ``0.3/k`` to ``0.65/k`` for even k (a tie ``S = k/2`` counts
  as 0, a lattice effect the normal pair does not see) and below ``0.2/k`` for odd k.
* **Sum** (the exact count, guessed as the mode of its posterior). Given the messages the
  unknown part of S is a sum of n independent Bernoulli(p(y_j)) with variance
  ``sigma^2(y) = sum_j p(y_j)(1 - p(y_j))``, close to ``n v_w`` by the law of large
  numbers. The local CLT puts the posterior's largest mass at about
  ``1 / sqrt(2 pi sigma^2)`` (a normal density at its centre, read on the integer lattice
  with spacing 1: continuity), so

      ACC ~ 1 / sqrt(2 pi n v_w),

  which is ``cosh(eps/2) sqrt(2 / (pi n))`` for binary randomized response
  (``v_w = 1 / (4 cosh^2(eps/2))``). Measured relative error: O(1/k), ``|rel| k <= 0.42``
  for the same grid. (When ``v_w = 0`` every bit is revealed and the answer is 1.)

Aggregate Monte Carlo (:func:`aggregate_accuracy`). For identical parties and a symmetric
function, the optimal rule depends on the messages only through the vector C of counts of
each symbol among the unknown parties (and the receiver's own bit): the posterior of the
count of ones is a convolution of ``Binomial(C_y, p(y))``. So a round is drawn exactly as

    S ~ Binomial(n, 1/2),   C = Multinomial(S, Q[1]) + Multinomial(n - S, Q[0]),

(the own bit b ~ Bernoulli(1/2) apart), vectorised over rounds, with no party drawn. The
guess for each distinct (C, b) comes from :func:`ldpsim.protocols.decide` applied to one
representative transcript with those counts (symbols in order), so the tie-breaking is the
library's; the gain is ``w(g(S + b), guess)``. The law of one round's gain is that of the
optimal rule on a real broadcast, so the mean estimates :func:`exact_accuracy` without bias.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from .._rng import RNGLike, as_generator
from ..errors import LdpSimError, invalid
from .decisions import (
    MAX_CLASS_COMBOS,
    OBSERVER,
    decide,
    exact_accuracy,
    exact_plan,
    transcript_classes,
)
from .protocol import Protocol
from .tasks import Task

#: The tasks of a scaling study, by name.
TASKS = ("xor", "sum", "majority")
#: The protocols of a scaling study, by name (:meth:`Protocol.universal`, :meth:`Protocol.binary`).
PROTOCOLS = ("universal", "binary")
#: Rounds drawn at once by :func:`aggregate_accuracy` (memory stays bounded whatever ``rounds``).
CHUNK = 1 << 20
#: Largest count vectors handed to :func:`decide` at once: rows x parties entries.
DECIDE_BLOCK = 4_000_000

__all__ = [
    "PROTOCOLS",
    "TASKS",
    "PointCost",
    "aggregate_accuracy",
    "aggregate_gains",
    "build_protocol",
    "build_task",
    "large_k_accuracy",
    "message_statistics",
    "point_cost",
    "receiver_label",
    "study_points",
]


# --------------------------------------------------------------------------- building blocks
def build_protocol(name: str, eps: float, delta: float, k: int) -> Protocol:
    """``Protocol.universal`` or ``Protocol.binary`` at one level for ``k`` parties."""
    if name not in PROTOCOLS:
        raise invalid("protocol", name, f"one of {', '.join(repr(p) for p in PROTOCOLS)}")
    return (Protocol.universal if name == "universal" else Protocol.binary)(eps, delta, parties=k)


def build_task(name: str, k: int) -> Task:
    """``Task.xor``, ``Task.sum`` or ``Task.majority`` of ``k`` bits."""
    if name not in TASKS:
        raise invalid("task", name, f"one of {', '.join(repr(t) for t in TASKS)}")
    return {"xor": Task.xor, "sum": Task.sum, "majority": Task.majority}[name](k)


def receiver_label(party: int) -> str:
    """``"observer"`` or ``"party i"``."""
    return "observer" if party == OBSERVER else f"party {party}"


def message_statistics(matrix: ArrayLike) -> tuple[float, float, float]:
    """``(TV, v_b, v_w)`` of one party's 2 x m matrix for a uniform bit: the total
    variation between its rows, ``Var(E[x | y])`` and ``E[Var(x | y)]`` (module docstring)."""
    q = V.stochastic_matrix(matrix, "matrix")
    if q.shape[0] != 2:
        raise invalid("matrix", f"shape {q.shape}", "2 rows (inputs 0 and 1)")
    pi = 0.5 * (q[0] + q[1])
    live = pi > 0
    post = np.where(live, q[1] / np.where(live, 2 * pi, 1.0), 0.5)
    tv = 0.5 * float(np.abs(q[0] - q[1]).sum())
    v_b = float(np.sum(pi * (post - 0.5) ** 2))
    v_w = float(np.sum(pi * post * (1.0 - post)))
    return tv, v_b, v_w


def _unknown(k: int, receiver: int) -> int:
    """Bits the receiver does not know: all k for the observer, k - 1 for a party."""
    return k if receiver == OBSERVER else k - 1


# --------------------------------------------------------------------------- large k
def large_k_accuracy(task_name: str, matrix: ArrayLike, k: int, receiver: int = OBSERVER) -> float:
    """The large-k accuracy of the optimal average rule of ``receiver`` (:data:`OBSERVER` or
    a party index) when all ``k`` parties use the 2 x m ``matrix`` and bits are uniform:

    * ``"xor"``: ``(1 + TV^n) / 2`` (exact);
    * ``"majority"``: ``1/2 + arcsin(rho) / pi``, ``rho^2 = (4 n v_b + (k - n)) / k``;
    * ``"sum"``: ``min(1, 1 / sqrt(2 pi n v_w))``;

    with n = k (observer) or k - 1 (a party) unknown bits; the derivations and the measured
    errors (O(1/k)) are in the module docstring."""
    if task_name not in TASKS:
        raise invalid("task_name", task_name, f"one of {', '.join(repr(t) for t in TASKS)}")
    k = V.integer(k, "k", minimum=1)
    receiver = V.integer(receiver, "receiver", minimum=OBSERVER, maximum=k - 1)
    tv, v_b, v_w = message_statistics(matrix)
    n = _unknown(k, receiver)
    if task_name == "xor":
        return 0.5 * (1.0 + tv**n)
    if task_name == "sum":
        var = n * v_w
        return 1.0 if var <= 0 else min(1.0, 1.0 / math.sqrt(2.0 * math.pi * var))
    rho2 = min(1.0, (4.0 * n * v_b + (k - n)) / k)
    return 0.5 + math.asin(math.sqrt(rho2)) / math.pi


# --------------------------------------------------------------------------- exact grid
def study_points(
    protocols: Sequence[str],
    tasks: Sequence[str],
    parties: Sequence[int],
    eps: Sequence[float],
    delta: float = 0.0,
    receivers: Sequence[int] = (OBSERVER, 0),
    *,
    exact: bool = True,
    max_classes: int = MAX_CLASS_COMBOS,
) -> pd.DataFrame:
    """One row per (protocol, task, eps, k, receiver), in that nesting order (the order a
    study spawns its random streams in): the exact accuracy of the optimal average rule
    where :func:`exact_plan` finds a path (``plan``; NaN and ``plan = ""`` otherwise, or
    everywhere with ``exact=False``) and :func:`large_k_accuracy` beside it."""
    rows = []
    for pname in protocols:
        for tname in tasks:
            for e in eps:
                for k in parties:
                    protocol = build_protocol(pname, float(e), float(delta), int(k))
                    task = build_task(tname, int(k))
                    for who in receivers:
                        plan, value = "", math.nan
                        try:
                            plan = exact_plan(protocol, task, who, max_classes)
                        except LdpSimError:
                            plan = ""
                        if plan and exact:
                            value = float(exact_accuracy(protocol, task, who, max_classes=max_classes))
                        rows.append(
                            {
                                "protocol": pname,
                                "task": tname,
                                "k": int(k),
                                "eps": float(e),
                                "delta": float(delta),
                                "receiver": receiver_label(who),
                                "party": int(who),
                                "plan": plan,
                                "exact": value,
                                "large_k": large_k_accuracy(tname, protocol.matrices[0], int(k), who),
                            }
                        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- cost estimates
@dataclass(frozen=True)
class PointCost:
    """Estimated seconds (one core) of one point of a study: ``exact_path`` is what
    :func:`exact_plan` would take (``None``: out of reach); ``mc_seconds`` is for ``rounds``
    rounds of :func:`aggregate_accuracy`; ``table_rows`` bounds the count vectors decided."""

    exact_path: str | None
    exact_seconds: float
    mc_seconds: float
    table_rows: int


def point_cost(protocol: Protocol, task: Task, party: int, rounds: int) -> PointCost:
    """Rough time of the exact path and of the aggregate Monte Carlo of one point,
    calibrated on one core (transcript classes: 1e-5 s + 2e-7 s per party each; decisions:
    about 3e-9 s per row x party x party of :func:`count_posterior`; sampling 4e-7 s per
    round and symbol)."""
    k = protocol.parties
    try:
        path: str | None = exact_plan(protocol, task, party)
    except LdpSimError:
        path = None
    if path == "xor" or path is None:
        exact_s = 1e-4 if path else math.inf
    elif path == "classes":
        exact_s = transcript_classes(protocol, party) * (1e-5 + 2e-7 * k)
    else:
        exact_s = 1e-8 * task.n_outputs * math.prod(2 if j == party else m for j, m in enumerate(protocol.sizes)) + 1e-3
    q = protocol.matrices[0]
    live = int(np.count_nonzero(q[0] + q[1] > 0))
    n = _unknown(k, party)
    vectors = math.comb(n + live - 1, live - 1) * (1 if party == OBSERVER else 2)
    rows = min(vectors, 2 * rounds)
    mc_s = 4e-7 * rounds * live + 3e-9 * rows * k * k + 1e-3
    return PointCost(path, exact_s, mc_s, rows)


# --------------------------------------------------------------------------- aggregate Monte Carlo
def _identical(protocol: Protocol) -> NDArray[np.float64]:
    q = protocol.matrices[0]
    for j, other in enumerate(protocol.matrices[1:], start=1):
        if other.shape != q.shape or not np.array_equal(other, q):
            raise invalid(
                "protocol", f"party {j} with a matrix unlike party 0's", "identical parties (one matrix for all)"
            )
    return q


def _canonical_transcripts(counts: NDArray[np.int64], live: NDArray[np.int64], k: int, party: int) -> NDArray[np.int64]:
    """One transcript per row of ``counts`` (counts of the live symbols among the unknown
    parties): the symbols in increasing order, the party's own column (if any) set to the
    first live symbol (:func:`decide` does not read it)."""
    n = int(counts[0].sum()) if counts.shape[0] else 0
    cum = np.cumsum(counts, axis=1)[:, :-1]  # boundaries between symbols
    which = (np.arange(n)[None, :, None] >= cum[:, None, :]).sum(axis=2)  # index into live
    others = live[which]
    if party == OBSERVER:
        return others
    tau = np.empty((counts.shape[0], k), dtype=np.int64)
    tau[:, party] = live[0]
    tau[:, [j for j in range(k) if j != party]] = others
    return tau


def _decisions(
    protocol: Protocol,
    task: Task,
    party: int,
    counts: NDArray[np.int64],
    own: NDArray[np.int64] | None,
    live: NDArray[np.int64],
) -> NDArray[np.int64]:
    """:func:`decide` on one representative transcript per row, in blocks of rows."""
    k = protocol.parties
    out = np.empty(counts.shape[0], dtype=np.int64)
    block = max(1, DECIDE_BLOCK // max(k * k, 1))
    for start in range(0, counts.shape[0], block):  # a loop over blocks of count vectors
        stop = min(start + block, counts.shape[0])
        tau = _canonical_transcripts(counts[start:stop], live, k, party)
        out[start:stop] = decide(protocol, task, party, tau, None if own is None else own[start:stop])
    return out


def aggregate_gains(
    protocol: Protocol, task: Task, party: int = OBSERVER, rounds: int = 10_000, rng: RNGLike = None
) -> NDArray[np.float64]:
    """The gain of the optimal average rule of ``party`` in each of ``rounds`` rounds, drawn
    by counts (module docstring): identical parties, a symmetric task, uniform bits."""
    k = protocol.parties
    if task.parties != k:
        raise invalid(
            "task", f"a function of {task.parties} bits", f"a function of {k} bits, one per party of the protocol"
        )
    if not task.is_symmetric:
        raise invalid("task", task.name, "a symmetric function (xor, sum, majority, threshold, and)")
    party = V.integer(party, "party", minimum=OBSERVER, maximum=k - 1)
    rounds = V.integer(rounds, "rounds", minimum=1)
    q = _identical(protocol)
    if q.shape[0] != 2:
        raise invalid("protocol", f"inputs of size {q.shape[0]}", "parties holding bits (2 inputs)")
    gen = as_generator(rng)
    live = np.flatnonzero(q[0] + q[1] > 0).astype(np.int64)
    q0, q1 = q[0, live] / q[0, live].sum(), q[1, live] / q[1, live].sum()
    n = _unknown(k, party)
    base = n + 1
    if live.size * math.log2(base) + 2 > 62:
        raise invalid(
            "protocol", f"{live.size} message symbols for {n} parties", "fewer symbols (count vectors must fit 62 bits)"
        )
    weights = (base ** np.arange(live.size, dtype=np.int64)).astype(np.int64)
    assert task.counts is not None
    known_keys = np.empty(0, dtype=np.int64)
    known_guess = np.empty(0, dtype=np.int64)
    out = np.empty(rounds, dtype=np.float64)
    for start in range(0, rounds, CHUNK):  # a loop over chunks of rounds, each vectorised
        size = min(CHUNK, rounds - start)
        ones = gen.binomial(n, 0.5, size=size)
        counts = gen.multinomial(ones, q1) + gen.multinomial(n - ones, q0)
        own = None if party == OBSERVER else gen.integers(0, 2, size=size)
        keys = counts @ weights
        if own is not None:
            keys = 2 * keys + own
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        pos = cast(NDArray[np.intp], np.searchsorted(known_keys, uniq))  # an array of positions
        hit = np.zeros(uniq.size, dtype=bool)
        if known_keys.size:
            hit = known_keys[np.minimum(pos, known_keys.size - 1)] == uniq
        guess_u = np.empty(uniq.size, dtype=np.int64)
        guess_u[hit] = known_guess[pos[hit]]
        new = ~hit
        if new.any():
            rows = first[new]
            guess_u[new] = _decisions(protocol, task, party, counts[rows], None if own is None else own[rows], live)
            known_keys = np.concatenate([known_keys, uniq[new]])
            known_guess = np.concatenate([known_guess, guess_u[new]])
            order = np.argsort(known_keys, kind="stable")
            known_keys, known_guess = known_keys[order], known_guess[order]
        guess = guess_u[inverse.ravel()]
        truth = task.counts[ones if own is None else ones + own]
        out[start : start + size] = task.gain[truth, guess]
    return out


def aggregate_accuracy(
    protocol: Protocol, task: Task, party: int = OBSERVER, rounds: int = 10_000, rng: RNGLike = None
) -> tuple[float, float]:
    """Monte Carlo accuracy of the optimal average rule by aggregate sampling
    (:func:`aggregate_gains`): (mean gain, standard error). Costs O(rounds x symbols) plus
    :func:`decide` on each distinct count vector drawn, whatever the number of parties."""
    rounds = V.integer(rounds, "rounds", minimum=2)
    g = aggregate_gains(protocol, task, party, rounds, rng)
    return float(g.mean()), float(g.std(ddof=1) / math.sqrt(rounds))
