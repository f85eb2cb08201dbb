"""What the broadcast channel and dishonest parties do to a multi-party protocol, exactly.

**Lost and late messages.** A receiver may not hear party j's message: it is lost (with
probability ``loss``) or arrives after the receiver's decision deadline (with probability
``late``, independently). Either way the receiver sees a "not heard" symbol instead, with
probability ``m_j = loss + (1 - loss) late`` *whatever party j's bit and message were*. So
the channel is a post-processing of each party's mechanism: the protocol the receiver
faces has the matrices ``Q'_j = [(1 - m_j) Q_j | m_j]`` (one extra column, "not heard"),
which :func:`erasure_protocol` builds. Its privacy is party j's (post-processing cannot
lose privacy), and everything the library computes for a protocol applies to it as it
stands: the optimal rule for ``Q'`` is the rule that conditions on which parties were
heard, and its exact average accuracy (XOR closed form with ``TV'_j = (1 - m_j) TV_j``,
transcript classes, tensor path) and worst-case accuracy (the linear program) are the
accuracies under the channel. Losses are independent across receivers, so each receiver's
accuracy is that of the same erasure protocol (its own message it always holds).

**Deviating parties.** :func:`deviate` replaces some parties' matrices by what a dishonest
party sends, in the protocol's own alphabet (so nobody can tell): ``"truthful"`` sends,
for bit x, the message that says the most about x (the symbol with the largest likelihood
ratio ``Q[x, s] / Q[1 - x, s]``; for Warner's randomized response, the bit itself; for the
quaternary mechanism, the symbol that reveals it), so its privacy is gone; ``"fixed"``
follows the protocol as if its bit were always ``bit`` (its message then carries no
information: eps = 0). The honest parties' matrices are untouched, and since the parties
randomise independently the law of the whole transcript given an honest party's bit is its
own matrix times a factor that does not depend on that bit: every honest party keeps its
exact (eps_j, delta_j) whatever the others do. Receivers keep the rule of the announced
protocol; :func:`rule_gain` is its exact expected gain when the transcripts come from
another protocol (the deviating one, under the channel or not).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from ..errors import invalid
from .decisions import MAX_CLASS_COMBOS, MAX_TENSOR_ENTRIES, OBSERVER, _check, decide, symmetric_rule_gain
from .gains import bit_probabilities
from .protocol import Protocol
from .tasks import Task

#: The deviations :func:`deviate` knows.
DEVIATIONS = ("truthful", "fixed")
#: :func:`rule_gain` of a symmetric function decides at most this many transcripts, each by
#: a dynamic program over the parties (a fuzzed k = 12 file with 4 symbols each took minutes).
MAX_RULE_TRANSCRIPTS = 1 << 18


def missing_probability(loss: float, late: float = 0.0) -> float:
    """P(a message is not heard in time) = ``loss + (1 - loss) late``: lost with
    probability ``loss``, else later than the deadline with probability ``late``."""
    for name, value in (("loss", loss), ("late", late)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.floating))
            or not 0.0 <= float(value) <= 1.0
        ):
            raise invalid(name, value, "a probability in [0, 1]")
    return float(loss) + (1.0 - float(loss)) * float(late)


def erasure_protocol(protocol: Protocol, missing: ArrayLike) -> Protocol:
    """The protocol a receiver faces when party j's message is not heard with probability
    ``missing[j]`` (one number for every party, or one per party), independently of
    everything else: party j's matrix gains a last column, "not heard" (symbol index
    ``protocol.sizes[j]``). Same privacy levels (a post-processing)."""
    m = np.atleast_1d(np.asarray(missing, dtype=np.float64))
    if m.size == 1:
        m = np.full(protocol.parties, float(m[0]))
    if m.shape != (protocol.parties,) or not np.all((m >= 0) & (m <= 1)):
        raise invalid("missing", missing, f"a probability, or {protocol.parties} probabilities (one per party)")
    mats = [np.hstack([(1.0 - mj) * q, np.full((q.shape[0], 1), mj)]) for q, mj in zip(protocol.matrices, m)]
    return Protocol(mats, protocol.eps, protocol.delta, name=protocol.name)


def truthful_matrix(q: ArrayLike) -> NDArray[np.float64]:
    """The matrix of a party that, for input x, always sends the symbol with the largest
    likelihood ratio ``Q[x, s] / max_{x' != x} Q[x', s]`` (for a bit: ``Q[x, s] / Q[1 - x, s]``;
    ties: the likeliest under x)."""
    q = np.asarray(q, dtype=np.float64)
    out = np.zeros_like(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        for x in range(len(q)):
            rival = np.delete(q, x, axis=0).max(axis=0)
            ratio = np.where(q[x] > 0, q[x] / rival, -np.inf)  # inf where no other input sends s
            best = np.flatnonzero(ratio == ratio.max())
            out[x, best[np.argmax(q[x, best])]] = 1.0
    return out


def fixed_matrix(q: ArrayLike, bit: int) -> NDArray[np.float64]:
    """The matrix of a party that follows the protocol as if its input were ``bit``."""
    q = np.asarray(q, dtype=np.float64)
    b = V.integer(bit, "bit", minimum=0, maximum=len(q) - 1)
    return np.vstack([q[b]] * len(q))


def deviate(protocol: Protocol, deviations: Mapping[int, str | tuple[str, int]]) -> Protocol:
    """The protocol actually run when the parties in ``deviations`` deviate:
    ``{party: "truthful"}`` or ``{party: ("fixed", bit)}``. Deviating parties are given
    their exact privacy (``truthful``: eps = inf, delta = the mass it reveals;
    ``fixed``: eps = 0); honest parties keep their levels and matrices."""
    mats = list(protocol.matrices)
    eps = protocol.eps.copy()
    delta = protocol.delta.copy()
    for party, how in deviations.items():
        j = V.integer(party, "party", minimum=0, maximum=protocol.parties - 1)
        kind, bit = (how, None) if isinstance(how, str) else (how[0], how[1] if len(how) > 1 else None)
        if kind == "truthful":
            mats[j] = truthful_matrix(protocol.matrices[j])
        elif kind == "fixed":
            if bit is None:
                raise invalid("bit", None, f"the bit party {j} always claims (0 or 1)")
            mats[j] = fixed_matrix(protocol.matrices[j], bit)
        else:
            raise invalid("deviation", kind, f"one of {', '.join(DEVIATIONS)}")
        mech = Protocol([mats[j]], [math.inf], [1.0]).mechanisms[0]
        eps[j] = float(mech.epsilon(0.0))
        delta[j] = 0.0 if math.isfinite(eps[j]) else float(mech.delta(math.inf))
    return Protocol(mats, eps, delta, name=f"{protocol.name} (deviating)")


def rule_gain(
    nominal: Protocol, actual: Protocol, task: Task, party: int = OBSERVER, p_one: ArrayLike | None = None
) -> float:
    """The exact expected gain of the optimal average rule of ``nominal`` (the guesses of
    :func:`ldpsim.protocols.decide`, ties included) when the transcripts come from
    ``actual`` (same parties and alphabets) and party j's bit is 1 with probability
    ``p_one[j]`` (1/2 by default; parties holding more than a bit: uniform inputs):
    ``sum_x prior(x) sum_tau P_actual[x, tau] w(f(x), rule(tau, x_i))``,
    a contraction of the prior-weighted gain table with each of ``actual``'s matrices."""
    party = _check(nominal, task, party)
    _check(actual, task, party)
    if nominal.sizes != actual.sizes or nominal.inputs != actual.inputs:
        raise invalid(
            "actual",
            f"alphabets {actual.inputs} -> {actual.sizes}",
            f"the nominal protocol's alphabets {nominal.inputs} -> {nominal.sizes}",
        )
    k = nominal.parties
    if not nominal.binary_inputs and p_one is not None:
        raise invalid(
            "p_one", p_one, "no bit probabilities when parties hold more than a bit (their inputs are uniform)"
        )
    inputs = nominal.inputs
    laws = (
        [np.full(a, 1.0 / a) for a in inputs]
        if not nominal.binary_inputs
        else [np.array([1 - p, p]) for p in bit_probabilities(p_one, k)]
    )
    # messages neither protocol ever sends add nothing: each other party's alphabet shrinks to
    # the symbols in use (the quaternary mechanism at delta = 0 uses 2 of its 4)
    used = [
        np.flatnonzero((nominal.matrices[j].sum(axis=0) > 0) | (actual.matrices[j].sum(axis=0) > 0)) for j in range(k)
    ]
    sizes = [inputs[j] if j == party else len(used[j]) for j in range(k)]
    entries = task.n_outputs * math.prod(sizes)
    too_big = entries > MAX_TENSOR_ENTRIES or math.prod(sizes) > MAX_RULE_TRANSCRIPTS
    if too_big and task.is_symmetric and p_one is None:  # bits uniform: by transcript classes, any k
        return symmetric_rule_gain(nominal, actual, task, party, MAX_CLASS_COMBOS)
    if entries > MAX_TENSOR_ENTRIES:
        raise invalid(
            "parties",
            k,
            f"a smaller protocol for the exact gain of a rule ({entries:,} entries, at most {MAX_TENSOR_ENTRIES:,})",
        )
    if task.is_symmetric and math.prod(sizes) > MAX_RULE_TRANSCRIPTS:  # each decided by an O(k^2) posterior
        raise invalid(
            "parties",
            k,
            f"a smaller protocol for the exact gain of a rule ({math.prod(sizes):,} transcripts to decide, "
            f"at most {MAX_RULE_TRANSCRIPTS:,} for a symmetric function)",
        )
    # T[x_1..x_k, y] = prior(x) w(f(x), y), then each other party's input axis -> its message axis
    prior = np.ones((1,))
    for law in laws:
        prior = np.multiply.outer(prior, law).reshape(-1)
    T = (prior[:, None] * task.gain[task.full_table()]).reshape(tuple(inputs) + (task.n_outputs,))
    for j in range(k):
        if j != party:
            T = np.moveaxis(np.tensordot(T, actual.matrices[j][:, used[j]], axes=([j], [0])), -1, j)
    # the nominal rule at every (tau_-i, x_i): decide() on transcripts whose own column is a placeholder
    grid = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), axis=1).astype(np.int64)
    tau = grid.copy()
    for j in range(k):
        if j != party:
            tau[:, j] = used[j][grid[:, j]]  # back to the symbols' own indices
    if party == OBSERVER:
        guess = np.asarray(decide(nominal, task, OBSERVER, tau))
    else:
        own = grid[:, party].copy()
        tau[:, party] = 0
        guess = np.asarray(decide(nominal, task, party, tau, own))
    return float(np.take_along_axis(T.reshape(-1, task.n_outputs), guess[:, None], axis=1).sum())


__all__ = [
    "DEVIATIONS",
    "deviate",
    "erasure_protocol",
    "fixed_matrix",
    "missing_probability",
    "rule_gain",
    "truthful_matrix",
]
