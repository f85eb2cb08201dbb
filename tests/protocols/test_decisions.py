"""Multi-party protocols: exact accuracies against brute-force enumeration, the XOR closed
form, privacy checks, optimality of randomized response, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import quaternary_mechanism
from ldpsim.protocols import (
    OBSERVER,
    Protocol,
    Task,
    average_rule_table,
    decide,
    exact_accuracy,
    rule_accuracy,
    worst_case,
)


# --------------------------------------------------------------------------- brute force
def brute_average(protocol: Protocol, task: Task, party: int) -> float:
    """2^-k sum over every transcript and own bit of max_y sum_x P[x, tau] w(f(x), y),
    with P the explicit Kronecker product (independent of the library's paths)."""
    k = protocol.parties
    P = np.ones((1, 1))
    for q in protocol.matrices:
        P = np.kron(P, q)  # rows x (x_1 most significant), columns tau (C order)
    F = np.array([task.full_table()[x] for x in range(2**k)])
    G = task.gain[F]  # (2^k, Y): w(f(x), y)
    xs = np.array(list(itertools.product((0, 1), repeat=k)))
    total = 0.0
    if party == OBSERVER:
        return float((P.T @ G).max(axis=1).sum() / 2**k)
    for b in (0, 1):
        mask = xs[:, party] == b
        total += (P[mask].T @ G[mask]).max(axis=1).sum()  # per tau (tau_i included: sums out)
    return float(total / 2**k)


def brute_worst(protocol: Protocol, task: Task, party: int) -> float:
    """Kairouz et al. 2015, eq. 12 with the full transcript (tau_i included) as an explicit LP."""
    k, Y = protocol.parties, task.n_outputs
    P = np.ones((1, 1))
    for q in protocol.matrices:
        P = np.kron(P, q)
    T = P.shape[1]
    F = task.full_table()
    own = [0] if party == OBSERVER else [0, 1]
    n = T * len(own) * Y
    xs = list(itertools.product((0, 1), repeat=k))
    A = np.zeros((2**k, n + 1))
    for x, bits in enumerate(xs):
        oi = 0 if party == OBSERVER else bits[party]
        blk = np.zeros((T, len(own), Y))
        blk[:, oi, :] = P[x][:, None] * task.gain[F[x]][None, :]
        A[x, :n] = -blk.ravel()
        A[x, n] = 1
    Aeq = np.zeros((T * len(own), n + 1))
    for r in range(T * len(own)):
        Aeq[r, r * Y : (r + 1) * Y] = 1
    c = np.zeros(n + 1)
    c[-1] = -1
    res = linprog(
        c,
        A_ub=A,
        b_ub=np.zeros(2**k),
        A_eq=Aeq,
        b_eq=np.ones(T * len(own)),
        bounds=[(0, 1)] * n + [(None, None)],
        method="highs",
    )
    return float(-res.fun)


def _levels(seed: int, k: int):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.1, 3.0, k), np.where(rng.random(k) < 0.3, 0.0, rng.uniform(0, 0.2, k))


# --------------------------------------------------------------------------- XOR
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(1, 60), party=st.integers(-1, 59))
def test_xor_equals_the_closed_form(seed, k, party):
    party = party if party < k else OBSERVER
    eps, delta = _levels(seed, k)
    p = Protocol.universal(eps, delta)
    keep = np.arange(k) != party
    closed = 0.5 * (1 + np.prod(delta[keep] + (1 - delta[keep]) * np.tanh(eps[keep] / 2)))
    assert exact_accuracy(p, Task.xor(k), party) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_xor_closed_form_equals_brute_force_and_worst_case(k):
    eps, delta = _levels(k, k)
    p = Protocol.universal(eps, delta)
    for party in (OBSERVER, 0, k - 1):
        ave = exact_accuracy(p, Task.xor(k), party)
        assert ave == pytest.approx(brute_average(p, Task.xor(k), party), rel=1e-12)
        if k <= 3:  # flipping bits maps x to x': the worst case equals the average for XOR
            assert exact_accuracy(p, Task.xor(k), party, "worst") == pytest.approx(ave, abs=1e-8)


# --------------------------------------------------------------------------- fast paths
TASKS = {
    "sum": Task.sum,
    "majority": Task.majority,
    "and": Task.and_,
    "threshold2": lambda k: Task.threshold(k, 2),
    "xor": Task.xor,
}


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("k", [3, 5])
def test_every_path_equals_brute_force_universal(name, k):
    eps, delta = _levels(17 + k, k)
    p = Protocol.universal(eps, delta)
    task = TASKS[name](k)
    general = Task.from_table(task.full_table(), task.n_outputs)  # forces the tensor path
    for party in (OBSERVER, 0, k // 2):
        ref = brute_average(p, task, party)
        assert exact_accuracy(p, task, party) == pytest.approx(ref, rel=1e-11)
        assert exact_accuracy(p, general, party) == pytest.approx(ref, rel=1e-11)


@pytest.mark.parametrize("name", ["sum", "majority", "threshold2"])
@pytest.mark.parametrize("k", [8, 10])
def test_symmetric_paths_equal_brute_force_up_to_k_10(name, k):
    # binary protocol: the explicit 2^k x 2^k matrix is small enough for brute force
    eps, _ = _levels(k, k)
    p = Protocol.binary(eps)
    task = TASKS[name](k)
    for party in (OBSERVER, 1):
        assert exact_accuracy(p, task, party) == pytest.approx(brute_average(p, task, party), rel=1e-10)


def test_symmetric_classes_path_with_repeated_levels():
    # 9 parties in 2 privacy classes: class enumeration vs the general tensor path
    eps = [0.5] * 5 + [1.5] * 4
    delta = [0.05] * 5 + [0.0] * 4
    p = Protocol.universal(eps, delta)
    task = Task.majority(9)
    general = Task.from_table(task.full_table(), 2)
    for party in (OBSERVER, 0, 8):
        assert exact_accuracy(p, task, party) == pytest.approx(exact_accuracy(p, general, party), rel=1e-11)


@pytest.mark.parametrize("name", ["sum", "majority", "xor"])
def test_decide_is_the_optimal_rule(name):
    # the DP rule's exact accuracy (enumerate transcripts, apply decide) equals the optimum
    k = 4
    eps, delta = _levels(3, k)
    p = Protocol.universal(eps, delta)
    task = TASKS[name](k)
    taus = np.array(list(itertools.product(range(4), repeat=k)))
    for party in (OBSERVER, 2):
        total = 0.0
        for x in itertools.product((0, 1), repeat=k):
            prob = np.prod([p.matrices[j][x[j], taus[:, j]] for j in range(k)], axis=0)
            own = np.full(taus.shape[0], x[party]) if party != OBSERVER else None
            g = decide(p, task, party, taus, own)
            total += prob @ task.gain[task.value(np.array([x]))[0], g]
        assert total / 2**k == pytest.approx(exact_accuracy(p, task, party), rel=1e-12)


# --------------------------------------------------------------------------- worst case
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_worst_case_lp_equals_the_explicit_lp(seed):
    rng = np.random.default_rng(seed)
    k = 3
    eps, delta = _levels(seed, k)
    p = Protocol.universal(eps, delta)
    task = Task.random(k, 3, rng=rng, gain=rng.uniform(0, 1, (3, 3)))
    for party in (OBSERVER, 1):
        value, phi = worst_case(p, task, party)
        assert value == pytest.approx(brute_worst(p, task, party), abs=1e-7)
        assert rule_accuracy(p, task, party, phi)[1] == pytest.approx(value, abs=1e-7)
        # the average-optimal rule is average-optimal and no better in the worst case
        ave, wc = rule_accuracy(p, task, party, average_rule_table(p, task, party))
        assert ave == pytest.approx(exact_accuracy(p, task, party), rel=1e-12)
        assert wc <= value + 1e-9


# --------------------------------------------------------------------------- optimality of RR
def _random_private_matrix(eps: float, delta: float, rng) -> np.ndarray:
    """A random (eps, delta)-DP 2 x m matrix: the quaternary mechanism post-processed."""
    m = int(rng.integers(2, 6))
    post = rng.dirichlet(np.ones(m) * 0.5, size=4)
    return quaternary_mechanism(eps, delta).matrix @ post


@pytest.mark.parametrize("seed", range(6))
def test_randomized_response_beats_alternatives_both_notions(seed):
    rng = np.random.default_rng(100 + seed)
    k = 3
    eps, delta = _levels(seed, k)
    rr = Protocol.universal(eps, delta)
    alternatives = [
        Protocol.binary(eps, delta),
        Protocol.from_matrices([_random_private_matrix(e, d, rng) for e, d in zip(eps, delta)], eps, delta),
    ]
    task = Task.random(k, int(rng.integers(2, 4)), rng=rng)
    task = Task.from_table(task.table, task.n_outputs, gain=rng.uniform(0, 1, (task.n_outputs,) * 2))
    for party in (OBSERVER, 0, 2):
        best_ave = exact_accuracy(rr, task, party)
        best_wc = exact_accuracy(rr, task, party, "worst")
        for alt in alternatives:
            assert alt.privacy_table()["private"].all()
            assert exact_accuracy(alt, task, party) <= best_ave + 1e-10
            assert exact_accuracy(alt, task, party, "worst") <= best_wc + 1e-7


# --------------------------------------------------------------------------- privacy and bad input
def test_every_protocol_passes_its_exact_per_party_check():
    eps, delta = _levels(9, 6)
    for p in (Protocol.universal(eps, delta), Protocol.binary(eps, delta)):
        table = p.privacy_table()
        assert table["private"].all()
        assert (table["exact_delta_at_eps"] <= table["delta"] * (1 + 1e-9)).all()
    # a matrix that leaks more than claimed is refused, naming the party
    leaky = np.array([[0.9, 0.1], [0.1, 0.9]])  # eps = log 81 = 4.39
    with pytest.raises(LdpSimError, match=r"matrices\[1\]"):
        Protocol.from_matrices([np.array([[0.6, 0.4], [0.4, 0.6]]), leaky], [1.0, 1.0], [0.0, 0.0])


def test_bad_input():
    p = Protocol.universal([1.0, 1.0, 1.0], 0.0)
    with pytest.raises(LdpSimError, match="gain"):
        Task.sum(3, gain=np.eye(2))  # 4 outputs, 2 x 2 gain
    with pytest.raises(LdpSimError, match="delta"):
        Protocol.universal([1.0, 1.0, 1.0], [0.0, 0.1])
    with pytest.raises(LdpSimError, match="eps"):
        Protocol.binary([1.0, -1.0])
    with pytest.raises(LdpSimError, match="task"):
        exact_accuracy(p, Task.xor(4), 0)
    with pytest.raises(LdpSimError, match="party"):
        exact_accuracy(p, Task.xor(3), 3)
    big = Protocol.universal(np.full(13, 1.0), 0.0)
    with pytest.raises(LdpSimError, match="k: got 13"):
        exact_accuracy(big, Task.random(13, 2, rng=0), 0)
    with pytest.raises(LdpSimError, match="estimate_accuracy"):
        exact_accuracy(Protocol.universal(np.linspace(0.5, 2, 30), 0.01), Task.majority(30), 0)
    with pytest.raises(LdpSimError, match="notion"):
        exact_accuracy(p, Task.xor(3), 0, "median")
    with pytest.raises(LdpSimError, match="x"):
        p.sample(np.array([[0, 1, 2]]))
