"""Optimal decision rules and exact accuracies of multi-party protocols (Kairouz et al. 2015, Sec. 5).

Party i sees the whole transcript tau and its own bit x_i and guesses f(x); the central
observer (``party=OBSERVER``) sees only tau. With x uniform on {0,1}^k:

* average accuracy ``ACC_ave = 2^-k sum_x E[w(f(x), guess)]``; the optimal rule is
  ``argmax_y sum_{x_-i} P[x, tau] w(f(x), y)`` and, since sum_{tau_i} Q_i[x_i, tau_i] = 1,
  ``ACC_ave = 2^-k sum_{tau_-i, x_i} max_y H[tau_-i, x_i, y]`` with
  ``H = sum_{x_-i} prod_{j != i} Q_j[x_j, tau_j] w(f(x), y)``: a tensor contraction of the
  gain table with each party's matrix (general functions, k <= 12);
* worst-case accuracy ``ACC_wc = min_x E[...]``: a linear program over randomised rules
  (Kairouz et al. 2015, eq. 12), solved with HiGHS for small k;
* symmetric functions f = g(sum x): given tau the count of ones among the other parties is
  a Poisson-binomial whose law a dynamic program over parties gives in O(k^2) per
  transcript (decisions for any k); exact accuracies enumerate transcript *classes* (how
  many parties of each privacy class sent each symbol), whose posterior of the count is a
  convolution of binomials (parties in few classes: k = 1000 and beyond);
* XOR with the indicator gain: ``(1 + prod_{j != i} TV(Q_j[0], Q_j[1])) / 2``, which for the
  quaternary mechanism is docs/theory.md's ``(1 + prod (delta_j + (1 - delta_j) tanh(eps_j/2)))/2``.

Parties holding more than a bit (party j's input uniform on ``{0, ..., a_j - 1}``, a task
given by its table, ``Task.from_table(..., inputs=...)``) go through the general tensor
path and the worst-case linear program with ``2^-k`` replaced by ``1 / prod a_j``; the
symmetric and XOR paths are for bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.optimize import linprog
from scipy.special import gammaln
from scipy.stats import binom

from .. import _validate as V
from ..errors import LdpSimError, invalid
from .protocol import Protocol
from .tasks import MAX_TABLE_PARTIES, Task

OBSERVER = -1
"""``party=OBSERVER``: the central observer, who sees the transcript only."""

MAX_GENERAL_PARTIES = 12
"""General functions: exact up to k = 12 (the gain tensor has prod m_j x |Y| entries)."""
MAX_LP_ENTRIES = 6_000_000
"""Worst-case linear programs: at most this many constraint coefficients (k <= 7 for the
quaternary protocol and a binary function)."""
MAX_CLASS_COMBOS = 400_000
"""Symmetric functions: at most this many transcript classes enumerated exactly."""


def _check(protocol: Protocol, task: Task, party: int) -> int:
    if protocol.parties != task.parties:
        raise invalid(
            "task",
            f"a function of {task.parties} bits",
            f"a function of {protocol.parties} bits, one per party of the protocol",
        )
    if protocol.inputs != task.sizes:
        raise invalid(
            "task",
            f"a function of inputs of sizes {task.sizes}",
            f"the protocol's input sizes {protocol.inputs}, one per party",
        )
    p = V.integer(party, "party", minimum=OBSERVER, maximum=protocol.parties - 1)
    return p


def _others(protocol: Protocol, party: int) -> list[int]:
    return [j for j in range(protocol.parties) if j != party]


# --------------------------------------------------------------------------- general functions
def _gain_tensor(protocol: Protocol, task: Task, party: int) -> NDArray[np.float64]:
    k = protocol.parties
    if k > MAX_GENERAL_PARTIES:
        raise invalid(
            "parties",
            k,
            f"at most {MAX_GENERAL_PARTIES} parties for a general function (symmetric functions: "
            "Task.sum / xor / majority / threshold / and_ scale to thousands)",
        )
    T = task.gain[task.full_table()].reshape(task.sizes + (task.n_outputs,))
    for j in range(k):
        if j == party:
            continue
        T = np.moveaxis(np.tensordot(T, protocol.matrices[j], axes=([j], [0])), -1, j)
    return T


@dataclass(frozen=True)
class GeneralRule:
    """A deterministic rule as a table over (tau_-i, x_i) (or tau for the observer)."""

    party: int
    table: NDArray[np.int64]  # axes: every party's message, the party's own axis its input

    def decide(self, tau: NDArray[np.int64], own: NDArray[np.int64] | None) -> NDArray[np.int64]:
        cols = [tau[:, j] if j != self.party else own for j in range(tau.shape[1])]
        return self.table[tuple(cols)]


def _general_average(protocol: Protocol, task: Task, party: int) -> tuple[float, GeneralRule]:
    H = _gain_tensor(protocol, task, party)
    value = float(H.max(axis=-1).sum()) / math.prod(protocol.inputs)
    return value, GeneralRule(party, H.argmax(axis=-1))


# --------------------------------------------------------------------------- symmetric functions
def count_posterior(protocol: Protocol, tau: ArrayLike, exclude: int = OBSERVER) -> NDArray[np.float64]:
    """Per transcript row, the law of the number of ones among the parties other than
    ``exclude`` given their messages (x uniform): a DP over parties, O(k^2) per row."""
    t = np.asarray(tau, dtype=np.int64)
    n = t.shape[0]
    c = np.ones((n, 1))
    for j in _others(protocol, exclude):
        q = protocol.matrices[j]
        a, b = q[0, t[:, j]], q[1, t[:, j]]
        new = np.zeros((n, c.shape[1] + 1))
        new[:, :-1] += c * a[:, None]
        new[:, 1:] += c * b[:, None]
        top = new.max(axis=1, keepdims=True)
        c = new / np.where(top > 0, top, 1.0)
    total = c.sum(axis=1, keepdims=True)  # 0 only for transcripts of probability 0
    return np.divide(c, total, out=np.zeros_like(c), where=total > 0)


def _shifted_gain(task: Task, own: int, size: int) -> NDArray[np.float64]:
    """G[s, y] = w(g(own + s), y) for s = 0..size-1."""
    assert task.counts is not None
    return task.gain[task.counts[own + np.arange(size)]]


def _symmetric_decide(
    protocol: Protocol, task: Task, party: int, tau: NDArray[np.int64], own: NDArray[np.int64] | None
) -> NDArray[np.int64]:
    post = count_posterior(protocol, tau, party)
    if party == OBSERVER:
        return np.argmax(post @ _shifted_gain(task, 0, post.shape[1]), axis=1)
    assert own is not None
    s0 = post @ _shifted_gain(task, 0, post.shape[1])
    s1 = post @ _shifted_gain(task, 1, post.shape[1])
    return np.where(own == 1, np.argmax(s1, axis=1), np.argmax(s0, axis=1))


def _compositions(n: int, m: int) -> NDArray[np.int64]:
    """All vectors of m non-negative integers summing to n (rows)."""
    if m == 1:
        return np.array([[n]], dtype=np.int64)
    rows = []
    for first in range(n + 1):
        rest = _compositions(n - first, m - 1)
        rows.append(np.hstack([np.full((rest.shape[0], 1), first, dtype=np.int64), rest]))
    return np.vstack(rows)


def _classes(protocol: Protocol, members: list[int]) -> list[tuple[NDArray[np.float64], int]]:
    groups: dict[bytes, list] = {}
    for j in members:
        q = protocol.matrices[j]
        key = q.shape[1].to_bytes(4, "little") + q.tobytes()
        groups.setdefault(key, [q, 0])[1] += 1
    return [(q, n) for q, n in groups.values()]


def transcript_classes(protocol: Protocol, party: int = OBSERVER) -> int:
    """How many transcript classes the exact symmetric path would enumerate."""
    total = 1
    for q, n in _classes(protocol, _others(protocol, party)):
        m = int(np.count_nonzero(q[0] + q[1] > 0))  # symbols that can occur
        total *= math.comb(n + m - 1, m - 1)
    return total


def _convolve_rows(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise convolution of two stacks of laws: ``out[i] = convolve(a[i], b[i])``."""
    out = np.zeros((a.shape[0], a.shape[1] + b.shape[1] - 1))
    for j in range(b.shape[1]):  # a loop over the shorter axis: the law's support, not the rows
        out[:, j : j + a.shape[1]] += a * b[:, j : j + 1]
    return out


def _class_table(q: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For one class of n identical parties: log P(counts of each symbol) under x uniform,
    and, row by row, the law of the number of ones given those counts (a convolution of
    binomials, on 0..n)."""
    _, logw, posts = class_rows(q, n, q[0] + q[1] > 0)
    return logw, posts


def class_rows(
    q: NDArray[np.float64], n: int, live: NDArray[np.bool_]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """For one class of ``n`` parties with matrix ``q`` (bits uniform): every vector of counts
    of the ``live`` symbols (rows, over all the symbols), its log probability (``-inf`` where
    ``q`` cannot send it) and the law of the number of ones given it, on ``0..n``."""
    m = q.shape[1]
    marg = 0.5 * (q[0] + q[1])
    comps = _compositions(n, int(live.sum()))
    full = np.zeros((comps.shape[0], m), dtype=np.int64)
    full[:, live] = comps
    with np.errstate(divide="ignore", invalid="ignore"):
        logmarg = np.log(marg)
        logw = gammaln(n + 1) - gammaln(full + 1).sum(axis=1) + np.where(full > 0, full * logmarg, 0.0).sum(axis=1)
    sent = marg > 0
    p_one = np.where(sent, q[1] / np.where(sent, 2 * marg, 1.0), 0.5)
    trials = np.arange(n + 1)
    posts = np.ones((full.shape[0], 1))
    for o in np.flatnonzero(live):
        # row c: the law of Binomial(c, p_one[o]) on 0..n; row 0 is a point mass at 0
        table = binom.pmf(trials[None, :], trials[:, None], p_one[o])
        posts = _convolve_rows(posts, table[full[:, o]])[:, : n + 1]
    return full, logw, posts


def symmetric_rule_gain(nominal: Protocol, actual: Protocol, task: Task, party: int, max_classes: int) -> float:
    """:func:`ldpsim.protocols.rule_gain` for a symmetric function of bits (inputs uniform)
    by transcript classes: the parties are grouped by their pair of matrices (nominal,
    actual); a class's counts of symbols have their law under ``actual`` and, under
    ``nominal``, the law of the ones that the nominal rule reads. Parties in few classes: any
    k (:data:`MAX_CLASS_COMBOS` combinations of counts at most)."""
    others = _others(actual, party)
    groups: dict[bytes, list] = {}
    for j in others:
        qn, qa = nominal.matrices[j], actual.matrices[j]
        groups.setdefault(qn.tobytes() + b"|" + qa.tobytes(), [qn, qa, 0])[2] += 1
    tables = []
    for qn, qa, n in groups.values():
        live = (qn[0] + qn[1] > 0) | (qa[0] + qa[1] > 0)
        _, logw, posts_a = class_rows(qa, n, live)
        _, logw_n, posts_n = class_rows(qn, n, live)
        tables.append((logw, posts_a, logw_n, posts_n))
    shape = tuple(len(t[0]) for t in tables)
    combos = math.prod(shape)
    if combos > max_classes:
        raise invalid(
            "protocol",
            f"{combos:,} transcript classes",
            f"at most {max_classes:,} for the exact gain of a rule on a symmetric function (parties in few classes)",
        )
    size = len(others) + 1
    assert task.counts is not None
    owns = [0] if party == OBSERVER else [0, 1]
    gains = [np.eye(task.n_outputs)[task.counts[o + np.arange(size)]] @ task.gain for o in owns]
    step = max(1, _CHUNK_ENTRIES // size)
    total = 0.0
    for first in range(0, combos, step):
        rows = np.arange(first, min(first + step, combos))
        index = np.unravel_index(rows, shape) if shape else ()
        logw, logw_n = np.zeros(rows.size), np.zeros(rows.size)
        post_a, post_n = np.ones((rows.size, 1)), np.ones((rows.size, 1))
        for (lw, pa, lwn, pn), idx in zip(tables, index):
            logw += lw[idx]
            logw_n += lwn[idx]
            post_a, post_n = _convolve_rows(post_a, pa[idx]), _convolve_rows(post_n, pn[idx])
        post_a, post_n = post_a[:, :size], post_n[:, :size]
        possible = np.isfinite(logw_n)  # a transcript the nominal protocol never sends: decide guesses 0
        for g in gains:  # the nominal rule's guess (first of the ties, as decide), scored under actual
            guess = np.where(possible, np.argmax(post_n @ g, axis=1), 0)
            total += float(np.exp(logw) @ np.take_along_axis(post_a @ g, guess[:, None], axis=1)[:, 0]) / len(gains)
    return total


#: Transcript classes handled at once by the symmetric path (a bound on its memory).
_CHUNK_ENTRIES = 1 << 21


def _symmetric_average(protocol: Protocol, task: Task, party: int, max_classes: int) -> float:
    others = _others(protocol, party)
    n_classes = transcript_classes(protocol, party)
    if n_classes > max_classes:
        raise invalid(
            "protocol",
            f"{n_classes:,} transcript classes",
            f"at most {max_classes:,} for the exact symmetric-function accuracy (parties in few distinct "
            "privacy classes); use estimate_accuracy (Monte Carlo with the exact optimal rule), or k <= "
            f"{MAX_GENERAL_PARTIES} for the general path",
        )
    tables = [_class_table(q, n) for q, n in _classes(protocol, others)]
    size = len(others) + 1
    assert task.counts is not None
    # the gain of each output given the count s of ones among the others, for each own bit
    # (the observer has none): a matrix s -> output, averaged over the own bits by the rule
    owns = [0] if party == OBSERVER else [0, 1]
    gains = [np.eye(task.n_outputs)[task.counts[o + np.arange(size)]] @ task.gain for o in owns]
    shape = tuple(len(lw) for lw, _ in tables)
    combos = math.prod(shape)
    step = max(1, _CHUNK_ENTRIES // size)
    total = 0.0
    for first in range(0, combos, step):  # every combination of one row per class, in chunks
        rows = np.arange(first, min(first + step, combos))
        # no other party (k = 1): one combination, of no rows
        index = np.unravel_index(rows, shape) if shape else ()
        logw = np.zeros(rows.size)
        post = np.ones((rows.size, 1))
        for (lw, posts), idx in zip(tables, index):
            logw += lw[idx]
            post = _convolve_rows(post, posts[idx])
        post = post[:, :size]
        best = sum(((post @ g).max(axis=1) for g in gains), np.zeros(post.shape[0])) / len(gains)
        total += float(np.exp(logw) @ best)
    return total


# --------------------------------------------------------------------------- XOR
def _is_xor(task: Task) -> bool:
    return (
        task.counts is not None
        and np.array_equal(task.counts, np.arange(task.parties + 1) % 2)
        and np.array_equal(task.gain, np.eye(2))
    )


def xor_accuracy(protocol: Protocol, party: int = OBSERVER) -> float:
    """Closed form for XOR with the indicator gain: ``(1 + prod_{j != i} TV_j) / 2``."""
    party = V.integer(party, "party", minimum=OBSERVER, maximum=protocol.parties - 1)
    tv = protocol.total_variation()
    keep = np.ones(protocol.parties, dtype=bool)
    if party != OBSERVER:
        keep[party] = False
    return float(0.5 * (1.0 + np.prod(tv[keep])))


# --------------------------------------------------------------------------- public API
MAX_TENSOR_ENTRIES = 60_000_000
"""General path: at most this many entries in the gain tensor (480 MB; k = 12 with up to 3
outputs for the observer, 7 for a party, of the quaternary protocol)."""


def exact_plan(protocol: Protocol, task: Task, party: int = OBSERVER, max_classes: int = MAX_CLASS_COMBOS) -> str:
    """Which exact path :func:`exact_accuracy` takes ("xor", "classes" or "tensor"); raises
    :class:`LdpSimError` in one line when none is within reach."""
    party = _check(protocol, task, party)
    if _is_xor(task):
        return "xor"
    k = protocol.parties
    if task.is_symmetric:
        classes = transcript_classes(protocol, party)
        # the tensor path is fastest for small k (0.1 s at k = 10); classes beyond that
        if classes <= max_classes and (k > 10 or classes <= 2_000):
            return "classes"
    entries = task.n_outputs * math.prod(protocol.inputs[j] if j == party else m for j, m in enumerate(protocol.sizes))
    if k <= MAX_GENERAL_PARTIES and entries <= MAX_TENSOR_ENTRIES:
        return "tensor"
    if task.is_symmetric and transcript_classes(protocol, party) <= max_classes:
        return "classes"
    what = (
        f"{transcript_classes(protocol, party):,} transcript classes (at most {max_classes:,}) and "
        if task.is_symmetric
        else ""
    )
    # "k" (not "parties") while multi-party scenario files name the count [parties] k: the
    # scenario loader prints this message after the key path ("parties: k: got 20 ...")
    raise invalid(
        "k",
        k,
        f"an exact accuracy within reach: this needs {what}a gain tensor of {entries:,} entries (at most "
        f"{MAX_TENSOR_ENTRIES:,}, k <= {MAX_GENERAL_PARTIES}); use fewer distinct (eps, delta) levels or "
        "delta = 0 for symmetric functions, fewer parties, or Monte Carlo (estimate_accuracy)",
    )


def exact_accuracy(
    protocol: Protocol,
    task: Task,
    party: int = OBSERVER,
    notion: str = "average",
    *,
    max_classes: int = MAX_CLASS_COMBOS,
) -> float:
    """Exact accuracy of the optimal rule of ``party`` (or the observer).

    ``notion="average"``: XOR closed form; symmetric functions by transcript classes;
    general functions by tensor contraction (k <= 12). ``notion="worst"``: the linear
    program of Kairouz et al. 2015, eq. 12 (small k)."""
    party = _check(protocol, task, party)
    if notion == "worst":
        return worst_case(protocol, task, party)[0]
    if notion != "average":
        raise invalid("notion", notion, "'average' or 'worst'")
    plan = exact_plan(protocol, task, party, max_classes)
    if plan == "xor":
        return xor_accuracy(protocol, party)
    if plan == "classes":
        return _symmetric_average(protocol, task, party, max_classes)
    return _general_average(protocol, task, party)[0]


def decide(
    protocol: Protocol, task: Task, party: int, tau: ArrayLike, own_bits: ArrayLike | None = None
) -> NDArray[np.int64]:
    """The optimal average-accuracy guesses of ``party`` for transcript rows ``tau`` and its
    own bits (ignored for the observer)."""
    party = _check(protocol, task, party)
    t = np.asarray(tau, dtype=np.int64)
    if t.ndim != 2 or t.shape[1] != protocol.parties:
        raise invalid("tau", f"shape {t.shape}", f"an (n, {protocol.parties}) array of transcripts")
    own = None
    if party != OBSERVER:
        if own_bits is None:
            raise invalid("own_bits", None, "the party's own bits (one per transcript row)")
        own = np.asarray(own_bits, dtype=np.int64).ravel()
        a = protocol.inputs[party]
        if own.shape != (t.shape[0],) or (own.size and (own.min() < 0 or own.max() >= a)):
            raise invalid("own_bits", f"shape {own.shape}", f"{t.shape[0]} inputs of party {party} (0 to {a - 1})")
    if task.is_symmetric:
        return _symmetric_decide(protocol, task, party, t, own)
    cache = protocol.__dict__.setdefault("_rule_cache", {})
    hit = cache.get((id(task), party))
    if hit is None or hit[0] is not task:  # the rule table is built once per (task, party)
        hit = cache[(id(task), party)] = (task, _general_average(protocol, task, party)[1])
    return hit[1].decide(t, own)


def estimate_accuracy(
    protocol: Protocol, task: Task, party: int = OBSERVER, rounds: int = 10_000, rng=None
) -> tuple[float, float]:
    """Monte Carlo average accuracy of the optimal rule: (mean gain, standard error)."""
    party = _check(protocol, task, party)
    rounds = V.integer(rounds, "rounds", minimum=2)
    gen = np.random.default_rng(rng)
    x = gen.integers(0, np.asarray(protocol.inputs), size=(rounds, protocol.parties))
    tau = protocol.sample(x, gen)
    guess = decide(protocol, task, party, tau, None if party == OBSERVER else x[:, party])
    g = task.gain[task.value(x), guess]
    return float(g.mean()), float(g.std(ddof=1) / math.sqrt(rounds))


# --------------------------------------------------------------------------- worst case
def _kron_rows(protocol: Protocol, members: list[int]) -> NDArray[np.float64]:
    """P[x_S, tau_S] = prod_{j in S} Q_j[x_j, tau_j] (row: x_S, column: tau_S, C order)."""
    P: NDArray[Any] = np.ones((1, 1))
    for j in members:
        P = np.kron(P, protocol.matrices[j])
    return P


def _lp_parts(protocol: Protocol, task: Task, party: int):
    k, Y = protocol.parties, task.n_outputs
    others = _others(protocol, party)
    P = _kron_rows(protocol, others)  # (prod of the others' inputs, T)
    T = P.shape[1]
    own_vals = [0] if party == OBSERVER else list(range(protocol.inputs[party]))
    n_var = T * len(own_vals) * Y
    rows = math.prod(protocol.inputs)
    if rows * T * Y > MAX_LP_ENTRIES:
        raise invalid(
            "parties",
            k,
            f"a smaller problem for the worst-case linear program (it needs {rows * T * Y:,} coefficients, at most "
            f"{MAX_LP_ENTRIES:,})",
        )
    F = task.full_table()
    return k, Y, others, P, T, own_vals, n_var, F


def _input_rows(protocol: Protocol, party: int, others: list[int]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """For every input vector x (C order): the row of the others' inputs in ``_kron_rows``
    and the party's own input (0 for the observer)."""
    sizes = protocol.inputs
    xs = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), axis=1)
    xo = (
        np.ravel_multi_index(tuple(xs[:, others].T), [sizes[j] for j in others])
        if others
        else np.zeros(len(xs), np.int64)
    )
    own = np.zeros(len(xs), np.int64) if party == OBSERVER else xs[:, party]
    return xo, own


def lp_coefficients(protocol: Protocol, task: Task, party: int = OBSERVER) -> int:
    """The constraint coefficients of ``party``'s worst-case linear program: one per input,
    transcript of the others and output (what its solving time grows with)."""
    transcripts = math.prod(m for j, m in enumerate(protocol.sizes) if j != party)
    return math.prod(protocol.inputs) * transcripts * task.n_outputs


def worst_case_reach(protocol: Protocol, task: Task, party: int = OBSERVER) -> str | None:
    """None when the worst-case linear program of ``party`` fits (at most
    :data:`MAX_LP_ENTRIES` constraint coefficients), else why not, in a few words."""
    k = protocol.parties
    if k > MAX_TABLE_PARTIES:
        return f"k = {k}: the function's table has 2^k entries"
    entries = lp_coefficients(protocol, task, party)
    if entries > MAX_LP_ENTRIES:
        return f"{entries:,} coefficients, at most {MAX_LP_ENTRIES:,}"
    return None


def worst_case(protocol: Protocol, task: Task, party: int = OBSERVER) -> tuple[float, NDArray[np.float64]]:
    """The optimal worst-case accuracy (Kairouz et al. 2015, eq. 12) and its randomised rule
    ``phi[tau_-i, x_i, y]`` (``phi[tau, y]`` for the observer), by HiGHS."""
    party = _check(protocol, task, party)
    k, Y, others, P, T, own_vals, n_var, F = _lp_parts(protocol, task, party)
    n_x = len(F)
    A = np.zeros((n_x, n_var + 1))
    rows_of, own_of = _input_rows(protocol, party, others)
    for x in range(n_x):
        coef = P[rows_of[x]][:, None] * task.gain[F[x]][None, :]  # (T, Y)
        block = np.zeros((T, len(own_vals), Y))
        block[:, own_of[x], :] = coef
        A[x, :n_var] = -block.ravel()
        A[x, n_var] = 1.0  # s - E[gain | x] <= 0
    eq = sparse.kron(sparse.eye(T * len(own_vals)), np.ones((1, Y)))
    eq = sparse.hstack([eq, sparse.csr_matrix((eq.shape[0], 1))]).tocsr()
    c = np.zeros(n_var + 1)
    c[-1] = -1.0
    gmin, gmax = float(task.gain.min()), float(task.gain.max())
    bounds = [(0, 1)] * n_var + [(gmin - 1, gmax + 1)]
    res = linprog(
        c,
        A_ub=sparse.csr_matrix(A),
        b_ub=np.zeros(n_x),
        A_eq=eq,
        b_eq=np.ones(eq.shape[0]),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - HiGHS solves these small feasible LPs
        raise LdpSimError(f"worst-case linear program: {res.message}")
    phi = res.x[:n_var].reshape((T, len(own_vals), Y))
    return float(-res.fun), phi


def rule_accuracy(protocol: Protocol, task: Task, party: int, phi: ArrayLike) -> tuple[float, float]:
    """(average, worst-case) accuracy of a randomised rule ``phi[tau_-i, x_i, y]``."""
    party = _check(protocol, task, party)
    k, Y, others, P, T, own_vals, n_var, F = _lp_parts(protocol, task, party)
    phi = np.asarray(phi, dtype=np.float64).reshape((T, len(own_vals), Y))
    vals = np.empty(len(F))
    rows_of, own_of = _input_rows(protocol, party, others)
    for x in range(len(F)):
        vals[x] = float(P[rows_of[x]] @ (phi[:, own_of[x], :] @ task.gain[F[x]]))
    return float(vals.mean()), float(vals.min())


def average_rule_table(protocol: Protocol, task: Task, party: int = OBSERVER) -> NDArray[np.float64]:
    """The optimal average rule as a (deterministic) ``phi`` table, for :func:`rule_accuracy`."""
    party = _check(protocol, task, party)
    k, Y, others, P, T, own_vals, n_var, F = _lp_parts(protocol, task, party)
    H = _gain_tensor(protocol, task, party)
    best = H.argmax(axis=-1)  # axes: parties in order, party's axis = x_i
    if party != OBSERVER:
        best = np.moveaxis(best, party, -1)  # (tau_-i..., x_i)
    flat = best.reshape(T, len(own_vals))
    phi = np.zeros((T, len(own_vals), Y))
    np.put_along_axis(phi, flat[:, :, None], 1.0, axis=2)
    return phi
