"""Interactive multi-party protocols: several rounds, each message depending on the
transcript so far, with their exact law, exact per-party privacy and exact accuracies.

**The model.** ``k`` parties; party ``j`` holds an input ``x_j`` in ``{0, ..., a_j - 1}``
(a bit by default) and may first draw a private value ``v_j ~ private[j][x_j, :]`` (the
identity by default: ``v_j = x_j``). The messages are sent one at a time, in *slots*: at
slot ``s`` the party ``speakers[s]`` sends a message ``y_s`` in ``{0, ..., m_s - 1}`` with
probability ``rules[s][v, h, y]``, where ``v`` is its private value and ``h`` the history,
the integer of the messages before slot ``s`` (mixed radix, the first message most
significant). A non-interactive protocol is one slot per party (:meth:`InteractiveProtocol.from_protocol`).

**Exact quantities**, by enumeration over the ``prod a_j`` input vectors and the
``prod m_s`` transcripts:

- :meth:`law`: ``P[x, tau]``;
- :meth:`privacy_table`: per party ``i``, the exact delta at its claimed eps, the hockey-stick
  divergence of the transcript's law between two of its inputs, maximised over the other
  parties' inputs and over ordered pairs, and the exact pure eps (the largest log ratio);
  the claimed levels are checked at construction as :class:`~ldpsim.protocols.Protocol`
  checks its parties';
- :meth:`accuracy`: the optimal average accuracy of a party (its own input and the
  transcript) or of the observer (the transcript) for a :class:`~ldpsim.protocols.Task`,
  inputs uniform: ``(1/prod a_j) sum_{x_i, tau} max_y sum_{x_-i} P[x, tau] w(f(x), y)``.

:meth:`sample` draws transcripts slot by slot, vectorised over rounds of the protocol, for
Monte Carlo checks.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from .._rng import RNGLike, as_generator
from ..errors import invalid
from .protocol import Protocol
from .tasks import Task

__all__ = ["InteractiveProtocol", "binary_rules", "gated", "quaternary", "rr_over_rounds", "rr_slots"]

#: Largest law enumerated (input vectors times transcripts).
MAX_LAW_ENTRIES = 20_000_000
#: Relative and absolute tolerance of the privacy check (as for product protocols).
PRIVACY_RTOL, PRIVACY_ATOL = 1e-9, 1e-13
OBSERVER = -1


class InteractiveProtocol:
    """A protocol of several slots (module docstring)."""

    def __init__(
        self,
        rules: Sequence[ArrayLike],
        speakers: Sequence[int],
        eps: ArrayLike,
        delta: ArrayLike = 0.0,
        *,
        inputs: Sequence[int] | int = 2,
        private: Sequence[ArrayLike] | None = None,
        name: str = "interactive",
    ) -> None:
        speakers = [int(j) for j in speakers]
        k = max(speakers) + 1 if speakers else 0
        if k < 1 or min(speakers) < 0:
            raise invalid("speakers", speakers, "party indices 0..k-1, one per slot")
        self.parties = k
        sizes_in = [int(inputs)] * k if isinstance(inputs, (int, np.integer)) else [int(a) for a in inputs]
        if len(sizes_in) != k or min(sizes_in) < 2:
            raise invalid("inputs", inputs, f"one alphabet size >= 2 per party ({k} parties)")
        self.inputs = tuple(sizes_in)
        priv = (
            [np.eye(a) for a in sizes_in] if private is None else [V.stochastic_matrix(p, "private") for p in private]
        )
        if len(priv) != k or any(p.shape[0] != a for p, a in zip(priv, sizes_in)):
            raise invalid("private", f"{len(priv)} matrices", f"one matrix per party with {sizes_in} rows")
        self.private = priv
        if len(rules) != len(speakers):
            raise invalid("rules", f"{len(rules)} rules", f"one per slot ({len(speakers)} slots)")
        self.speakers = tuple(speakers)
        history = 1
        self.rules: list[NDArray[np.float64]] = []
        self.messages: list[int] = []
        for s, (rule, j) in enumerate(zip(rules, speakers)):
            r = np.asarray(rule, dtype=np.float64)
            want = (priv[j].shape[1], history)
            if r.ndim != 3 or r.shape[:2] != want or r.shape[2] < 1:
                raise invalid(
                    f"rules[{s}]", f"shape {r.shape}", f"({want[0]}, {want[1]}, m): P(message | value, history)"
                )
            if np.any(r < -1e-12) or not np.allclose(r.sum(axis=2), 1.0, atol=1e-9):
                raise invalid(
                    f"rules[{s}]", "rows that are not probabilities", "each (value, history) a law over messages"
                )
            self.rules.append(np.clip(r, 0.0, None))
            self.messages.append(r.shape[2])
            history *= r.shape[2]
        entries = math.prod(sizes_in) * history
        if entries > MAX_LAW_ENTRIES:
            raise invalid("rules", f"{entries:,} law entries", f"at most {MAX_LAW_ENTRIES:,} (fewer parties or slots)")
        self.eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (k,)).copy()
        self.delta = np.broadcast_to(np.asarray(delta, dtype=np.float64), (k,)).copy()
        self.name = name
        self._law: NDArray[np.float64] | None = None
        if np.all(np.isinf(self.eps)) and np.all(self.delta >= 1.0):
            return  # no claim to check (a law under study, e.g. before its levels are known)
        table = self.privacy_table()
        bad = table[~table["private"]]
        if len(bad):
            row = bad.iloc[0]
            raise invalid(
                "rules",
                f"party {int(row['party'])} with exact delta {row['exact_delta_at_eps']:.3g} at eps {row['eps']:g}",
                f"an ({row['eps']:g}, {row['delta']:g})-DP transcript for every party",
            )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_protocol(cls, protocol: Protocol) -> "InteractiveProtocol":
        """A product protocol as one slot per party (messages that ignore the history)."""
        rules, history = [], 1
        for q in protocol.matrices:
            rules.append(np.broadcast_to(q[:, None, :], (q.shape[0], history, q.shape[1])))
            history *= q.shape[1]
        return cls(
            rules,
            list(range(protocol.parties)),
            protocol.eps,
            protocol.delta,
            inputs=protocol.inputs,
            name=f"{protocol.name} (one round)",
        )

    # ------------------------------------------------------------------ the law
    def law(self) -> NDArray[np.float64]:
        """``P[x, tau]``: input vectors (C order, party 0 most significant) by transcripts."""
        if self._law is None:
            values = [p.shape[1] for p in self.private]
            vs = np.array(list(itertools.product(*[range(m) for m in values])), dtype=np.int64)
            w = np.ones((vs.shape[0], 1))
            for rule, j in zip(self.rules, self.speakers):
                h = np.arange(w.shape[1])
                step = rule[vs[:, j][:, None], h[None, :], :]  # (V, H, m)
                w = (w[:, :, None] * step).reshape(w.shape[0], -1)
            m: NDArray[Any] = self.private[0]
            for p in self.private[1:]:
                m = np.kron(m, p)
            self._law = np.asarray(m @ w, dtype=np.float64)
        return self._law

    # ------------------------------------------------------------------ privacy
    def _pairs(self, i: int) -> tuple[NDArray[np.float64], list[tuple[int, int]]]:
        t = self.law().reshape(self.inputs + (-1,))
        return t, [(a, b) for a in range(self.inputs[i]) for b in range(self.inputs[i]) if a != b]

    def delta_at(self, i: int, eps: float) -> float:
        """Party ``i``'s exact delta at ``eps``: the largest hockey-stick divergence of the
        transcript's law between two of its inputs, over the others' inputs."""
        t, pairs = self._pairs(i)
        e = math.exp(eps) if eps < 700 else math.inf
        worst = 0.0
        for a, b in pairs:
            pa = np.take(t, a, axis=i).reshape(-1, t.shape[-1])
            pb = np.take(t, b, axis=i).reshape(-1, t.shape[-1])
            with np.errstate(invalid="ignore"):
                diff = pa - e * pb if math.isfinite(e) else np.where(pb > 0, 0.0, pa)
            worst = max(worst, float(np.maximum(diff, 0.0).sum(axis=1).max()))
        return worst

    def epsilon(self, i: int) -> float:
        """Party ``i``'s exact pure eps: the largest log ratio of two of its inputs' laws
        (``inf`` when a transcript is possible under one and not the other)."""
        t, pairs = self._pairs(i)
        worst = 0.0
        for a, b in pairs:
            pa = np.take(t, a, axis=i).reshape(-1, t.shape[-1])
            pb = np.take(t, b, axis=i).reshape(-1, t.shape[-1])
            if np.any((pa > 0) & (pb <= 0)):
                return math.inf
            seen = pa > 0
            if seen.any():
                worst = max(worst, float(np.max(np.log(pa[seen]) - np.log(pb[seen]))))
        return worst

    def privacy_table(self) -> pd.DataFrame:
        """Per party: claimed (eps, delta), the exact delta at that eps, the exact pure eps,
        and whether the claim holds."""
        rows = []
        for i in range(self.parties):
            e, d = float(self.eps[i]), float(self.delta[i])
            exact = self.delta_at(i, e)
            rows.append(
                {
                    "party": i,
                    "eps": e,
                    "delta": d,
                    "exact_delta_at_eps": exact,
                    "exact_pure_eps": self.epsilon(i),
                    "private": bool(exact <= d * (1 + PRIVACY_RTOL) + PRIVACY_ATOL),
                }
            )
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ accuracy
    def _scores(self, task: Task, party: int) -> tuple[list[NDArray[np.float64]], int]:
        """Per value of ``party``'s own input (one block for the observer): the matrix
        ``sum_{x_-i} P[x, tau] w(f(x), y)`` (transcripts by guesses), and the number of input vectors."""
        if task.parties != self.parties:
            raise invalid("task", task.name, f"a task of {self.parties} parties")
        if tuple(task.sizes) != self.inputs:
            raise invalid("task", f"{task.name} on input sizes {tuple(task.sizes)}", f"input sizes {self.inputs}")
        party = V.integer(party, "party", minimum=-1, maximum=self.parties - 1)
        xs = np.array(list(itertools.product(*[range(a) for a in self.inputs])), dtype=np.int64)
        g = task.gain[task.value(xs)]  # (X, Y)
        p = self.law()
        if party == OBSERVER:
            return [p.T @ g], xs.shape[0]
        own = xs[:, party]
        return [p[own == b].T @ g[own == b] for b in range(self.inputs[party])], xs.shape[0]

    def accuracy(self, task: Task, party: int = OBSERVER) -> float:
        """The optimal average accuracy of ``party`` (or the observer) for ``task``, inputs
        uniform on each party's alphabet."""
        blocks, n = self._scores(task, party)
        return float(sum(b.max(axis=1).sum() for b in blocks) / n)

    def decisions(self, task: Task, party: int = OBSERVER) -> NDArray[np.int64]:
        """The optimal rule of :meth:`accuracy` as a table: ``[own input, transcript index]``
        -> guess (one row for the observer); ties go to the first guess (any tied guess has the
        same expected gain, so the rule's average gain is :meth:`accuracy` exactly)."""
        blocks, _ = self._scores(task, party)
        return np.stack([b.argmax(axis=1) for b in blocks]).astype(np.int64)

    def reads(self, slot: int) -> tuple[int, ...]:
        """The earlier slots whose messages the rule of ``slot`` depends on (exactly: its
        probabilities are not constant along that message): what its speaker must have
        received before it can send."""
        slot = V.integer(slot, "slot", minimum=0, maximum=len(self.rules) - 1)
        r = self.rules[slot].reshape((self.rules[slot].shape[0], *self.messages[:slot], self.messages[slot]))
        return tuple(t for t in range(slot) if not np.all(r == np.take(r, [0], axis=t + 1)))

    # ------------------------------------------------------------------ sampling
    def sample(self, x: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Transcripts (one row of slot messages per input vector of ``x``), drawn slot by slot."""
        gen = as_generator(rng)
        xs = np.asarray(x, dtype=np.int64)
        if xs.ndim != 2 or xs.shape[1] != self.parties:
            raise invalid("x", f"shape {xs.shape}", f"an (n, {self.parties}) array of inputs")
        n = xs.shape[0]
        v = np.empty_like(xs)
        for j, p in enumerate(self.private):
            cdf = np.cumsum(p[xs[:, j]], axis=1)
            v[:, j] = (cdf < gen.random((n, 1)) * cdf[:, -1:]).sum(axis=1)
        out = np.empty((n, len(self.rules)), dtype=np.int64)
        h = np.zeros(n, dtype=np.int64)
        for s, (rule, j, m) in enumerate(zip(self.rules, self.speakers, self.messages)):
            probs = rule[v[:, j], h]
            cdf = np.cumsum(probs, axis=1)
            out[:, s] = np.minimum((cdf < gen.random((n, 1)) * cdf[:, -1:]).sum(axis=1), m - 1)
            h = h * m + out[:, s]
        return out

    def transcript_index(self, transcripts: ArrayLike) -> NDArray[np.int64]:
        """The column of :meth:`law` of each transcript row."""
        t = np.asarray(transcripts, dtype=np.int64)
        return np.ravel_multi_index(tuple(t.T), tuple(self.messages))

    def __repr__(self) -> str:
        return f"InteractiveProtocol({self.name!r}, parties={self.parties}, slots={len(self.rules)})"


# --------------------------------------------------------------------------- families
def quaternary(eps: float, delta: float) -> NDArray[np.float64]:
    """The (eps, delta) randomized response's 2 x 4 matrix (Kairouz et al. 2015): outputs
    "surely 0", "0", "1", "surely 1"."""
    e = math.exp(eps)
    return np.array(
        [
            [delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0],
            [0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta],
        ]
    )


def binary_rules(ones: Sequence[ArrayLike]) -> list[NDArray[np.float64]]:
    """Rules of binary messages from P(message = 1 | value, history), one array per slot."""
    return [np.stack([1.0 - np.asarray(p1, dtype=float), np.asarray(p1, dtype=float)], axis=2) for p1 in ones]


def rr_slots(k: int, rounds: int = 2) -> list[int]:
    """The party speaking at each slot: round by round, parties 0..k-1 in order."""
    return [j for _ in range(rounds) for j in range(k)]


def _levels(eps: ArrayLike, delta: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    d = np.broadcast_to(np.asarray(delta, dtype=np.float64), e.shape).copy()
    if e.ndim != 1 or not np.all(np.isfinite(e)) or np.any(e < 0):
        raise invalid("eps", eps, "one finite eps >= 0 per party")
    if np.any((d < 0) | (d > 1)):
        raise invalid("delta", delta, "one delta in [0, 1] per party")
    return e, d


def _rr_bits(k: int, slot: int, history: int) -> NDArray[np.float64]:
    """P(message = 1 | z, history) of randomized response split over two rounds: round 1
    sends the high bit of the quaternary output z, round 2 the low bit."""
    z = np.arange(4)[:, None]
    bit = (z >> 1) & 1 if slot < k else z & 1
    return np.broadcast_to(bit, (4, history)).astype(float)


def rr_over_rounds(eps: ArrayLike, delta: ArrayLike = 0.0, *, check: bool = True) -> InteractiveProtocol:
    """The (eps_j, delta_j) randomized response split over two rounds: party j privately
    draws its quaternary output z_j, sends its high bit in round 1 and its low bit in round
    2 (slots: round 1 parties 0..k-1, then round 2). The transcript is RR's output, so its
    accuracies are RR's. ``check=False``: no privacy claim (the law only)."""
    e, d = _levels(eps, delta)
    k = e.size
    ones = [_rr_bits(k, s, 2**s) for s in range(2 * k)]
    return InteractiveProtocol(
        binary_rules(ones),
        rr_slots(k),
        e if check else math.inf,
        d if check else 1.0,
        private=[quaternary(a, b) for a, b in zip(e, d)],
        name="rr_rounds",
    )


def gated(eps: ArrayLike, delta: ArrayLike, *, check: bool = True) -> InteractiveProtocol:
    """The gated protocol (k >= 2, two rounds of binary messages; Kairouz et al. 2015's
    optimality of RR fails for it under approximate DP): party 0 sends Warner's bit m at eps_0
    in round 1 (and a constant 0 in round 2); party k-1 sends its quaternary output (high bit
    in round 1, low bit in round 2) at (eps_{k-1}, a) after m = 0 and (eps_{k-1}, b) after
    m = 1, with a = delta/p, b = 0 when delta <= p (p = P(m = x_0)), else a = 1 and b as large
    as admissible; the parties between send their RR split over the rounds. Party k-1 spends
    its delta where m = 0 makes it pay. ``check=False``: no privacy claim (the law only)."""
    e, dl = _levels(eps, delta)
    k = e.size
    if k < 2:
        raise invalid("eps", eps, "levels of k >= 2 parties (the gated protocol gates the last party by the first)")
    p = 1 / (1 + math.exp(-e[0]))
    d = dl[-1]
    a = min(1.0, d / p)
    b = max(0.0, (d - p * a) / (1 - p))
    inputs = [np.eye(2)] + [quaternary(x, y) for x, y in zip(e[1:-1], dl[1:-1])] + [np.eye(2)]
    strat = []
    qa, qb = quaternary(e[-1], a), quaternary(e[-1], b)
    for sl in range(k * 2):
        j = sl % k
        H = 2**sl
        h = np.arange(H)
        if j == 0:  # Warner's bit in round 1, a constant 0 in round 2
            strat.append(np.array([[1 - p], [p]]) if sl == 0 else np.zeros((2, H)))
        elif j == k - 1:
            m = (h >> (sl - 1)) & 1  # party 0's first message, the most significant bit of h
            if sl < k:  # high bit of party k-1's quaternary output, law chosen by m
                hi_a, hi_b = qa[:, 2] + qa[:, 3], qb[:, 2] + qb[:, 3]
                strat.append(np.where(m[None, :] == 0, hi_a[:, None], hi_b[:, None]))
            else:  # low bit given the high bit (the previous own message)
                own = (h >> (sl - 1 - (k - 1))) & 1  # party k-1's round-1 message (slot k-1)
                out = np.empty((2, H))
                for mv in (0, 1):
                    q = qa if mv == 0 else qb
                    for ov in (0, 1):
                        sel = (m == mv) & (own == ov)
                        for xv in (0, 1):
                            tot = q[xv, 2 * ov] + q[xv, 2 * ov + 1]
                            out[xv, sel] = q[xv, 2 * ov + 1] / tot if tot > 0 else 0.0
                strat.append(out)
        else:
            strat.append(_rr_bits(k, sl, H))
    return InteractiveProtocol(
        binary_rules(strat),
        rr_slots(k),
        e if check else math.inf,
        dl if check else 1.0,
        private=inputs,
        name="gated",
    )
