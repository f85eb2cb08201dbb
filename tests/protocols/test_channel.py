"""Lost and late messages and deviating parties (ldpsim.protocols.channel) against brute
force: every input x, every transcript with its "not heard" symbols, the optimal rule found
by enumeration, written here independently of the library's paths (k <= 8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.protocols import OBSERVER, Protocol, Task, exact_accuracy, worst_case
from ldpsim.protocols.channel import deviate, erasure_protocol, missing_probability, rule_gain

TASKS = {
    "xor": lambda k: Task.xor(k),
    "sum": lambda k: Task.sum(k),
    "majority": lambda k: Task.majority(k),
    "random": lambda k: Task.random(k, 3, rng=k, gain=np.array([[1.0, 0.2, -0.5], [0.0, 1.0, 0.3], [-1.0, 0.4, 2.0]])),
}


def law(matrices, missing):
    """P[x, tau] over every x in {0,1}^k (x_1 most significant) and every transcript, where
    party j's message is replaced by the extra symbol m_j (= its alphabet size) with
    probability missing[j]: the Kronecker product of the per-party channels, written here
    from the definition and not through erasure_protocol."""
    k = len(matrices)
    P = np.ones((1, 1))
    for q, m in zip(matrices, missing):
        channel = np.zeros((2, q.shape[1] + 1))
        for x in (0, 1):
            for s in range(q.shape[1]):
                channel[x, s] = (1 - m) * q[x, s]
            channel[x, q.shape[1]] = m
        P = np.kron(P, channel)
    xs = np.array(list(itertools.product((0, 1), repeat=k)))
    return xs, None, P


def brute_rule(P, xs, prior, task, party):
    """Per (tau, own bit): the guess maximising the expected gain, and the margin to the
    runner-up (a tie would make two optimal rules; the tests avoid them)."""
    f = task.value(xs)
    W = task.gain[f]  # (x, y)
    owns = (0,) if party == OBSERVER else (0, 1)
    rule, margin = {}, math.inf
    for own in owns:
        rows = np.ones(len(xs), bool) if party == OBSERVER else xs[:, party] == own
        H = (prior[rows, None] * P[rows]).T @ W[rows]  # (tau, y)
        srt = np.sort(H, axis=1)
        live = P[rows].sum(axis=0) > 0
        if H.shape[1] > 1 and live.any():
            margin = min(margin, float((srt[live, -1] - srt[live, -2]).min()))
        rule[own] = H.argmax(axis=1)
    return rule, margin


def brute_gain(P, xs, prior, task, party, rule):
    f = task.value(xs)
    total = 0.0
    for a, x in enumerate(xs):
        own = 0 if party == OBSERVER else x[party]
        total += prior[a] * float(P[a] @ task.gain[f[a], rule[own]])
    return total


def levels(rng, k, with_delta):
    return rng.uniform(0.2, 2.5, k), (rng.uniform(0.01, 0.2, k) if with_delta else np.zeros(k))


@pytest.mark.parametrize("k,with_delta", [(2, True), (3, True), (5, False), (8, False)])
@pytest.mark.parametrize("task_name", list(TASKS))
def test_exact_accuracy_with_lost_messages_matches_brute_force(k, with_delta, task_name):
    rng = np.random.default_rng([k, len(task_name)])
    eps, delta = levels(rng, k, with_delta)
    p = Protocol.universal(eps, delta) if with_delta else Protocol.binary(eps)
    mats = [q[:, q.sum(axis=0) > 0] for q in p.matrices]  # quaternary at delta 0: drop its two empty symbols
    p = Protocol(mats, eps, delta)
    task = TASKS[task_name](k)
    missing = rng.uniform(0.02, 0.4, k)
    xs, _, P = law(p.matrices, missing)
    prior = np.full(len(xs), 2.0**-k)
    lossy = erasure_protocol(p, missing)
    for party in (OBSERVER, 0, k - 1):
        rule, _ = brute_rule(P, xs, prior, task, party)
        expected = brute_gain(P, xs, prior, task, party, rule)
        assert exact_accuracy(lossy, task, party) == pytest.approx(expected, rel=1e-11, abs=1e-13)
        # nothing lost: the protocol itself
    assert exact_accuracy(erasure_protocol(p, 0.0), task, 0) == pytest.approx(exact_accuracy(p, task, 0), rel=1e-12)


def test_xor_under_loss_is_the_closed_form_with_shrunk_total_variation():
    eps, delta = np.array([0.5, 1.0, 2.0, 3.0]), np.array([0.0, 0.05, 0.1, 0.02])
    m = np.array([0.05, 0.1, 0.2, 0.3])
    tv = delta + (1 - delta) * np.tanh(eps / 2)  # the quaternary mechanism's TV (docs/theory.md sec. 7)
    lossy = erasure_protocol(Protocol.universal(eps, delta), m)
    assert exact_accuracy(lossy, Task.xor(4), OBSERVER) == pytest.approx((1 + np.prod((1 - m) * tv)) / 2, rel=1e-13)
    assert exact_accuracy(lossy, Task.xor(4), 1) == pytest.approx(
        (1 + np.prod(np.delete((1 - m) * tv, 1))) / 2, rel=1e-13
    )


def test_worst_case_under_loss_is_at_most_the_lossless_one_and_at_most_the_average():
    p = Protocol.universal([0.7, 1.5, 2.0], [0.0, 0.1, 0.05])
    lossy = erasure_protocol(p, 0.2)
    for party in (OBSERVER, 0):
        wc, wc_lossy = worst_case(p, Task.majority(3), party)[0], worst_case(lossy, Task.majority(3), party)[0]
        assert wc_lossy <= wc + 1e-9  # a garbling cannot help
        assert wc_lossy <= exact_accuracy(lossy, Task.majority(3), party) + 1e-9


def brute_gain_range(Pn, Pa, xs, prior, task, party):
    """The least and the largest gain under the actual law Pa over every optimal rule of the
    nominal law Pn (guesses within 1e-12 of the best count as ties; structural ties occur,
    e.g. the observer's guess of the sum when no message was heard)."""
    f = task.value(xs)
    W = task.gain[f]
    lo = hi = 0.0
    for own in (0,) if party == OBSERVER else (0, 1):
        rows = np.ones(len(xs), bool) if party == OBSERVER else xs[:, party] == own
        Hn = (prior[rows, None] * Pn[rows]).T @ W[rows]  # (tau, y): nominal
        Ha = (prior[rows, None] * Pa[rows]).T @ W[rows]  # the same under the actual law
        tied = Hn >= Hn.max(axis=1, keepdims=True) - 1e-12
        lo += float(np.where(tied, Ha, np.inf).min(axis=1).sum())
        hi += float(np.where(tied, Ha, -np.inf).max(axis=1).sum())
    return lo, hi


@pytest.mark.parametrize("k", [3, 5, 8])
@pytest.mark.parametrize("task_name", ["sum", "majority", "random"])
def test_deviating_parties_gain_matches_brute_force(k, task_name):
    rng = np.random.default_rng([k, 7, len(task_name)])
    eps = rng.uniform(0.3, 2.5, k)
    nominal = Protocol.binary(eps)
    task = TASKS[task_name](k)
    deviations = {0: "truthful", k - 1: ("fixed", 1)}
    # what the deviators send, written out: the bit itself; always the message of bit 1
    actual_mats = [q.copy() for q in nominal.matrices]
    actual_mats[0] = np.eye(2)
    actual_mats[k - 1] = np.vstack([nominal.matrices[k - 1][1]] * 2)
    actual = deviate(nominal, deviations)
    for a, b in zip(actual.matrices, actual_mats):
        assert np.array_equal(a, b)
    for missing in (np.zeros(k), rng.uniform(0.05, 0.3, k)):
        xs, _, Pn = law(nominal.matrices, missing)
        _, _, Pa = law(actual_mats, missing)
        prior = np.full(len(xs), 2.0**-k)
        for party in (OBSERVER, 1):
            lo, hi = brute_gain_range(Pn, Pa, xs, prior, task, party)
            got = rule_gain(erasure_protocol(nominal, missing), erasure_protocol(actual, missing), task, party)
            assert lo - 1e-12 <= got <= hi + 1e-12
            if missing.max() == 0 and task_name != "sum":  # heterogeneous eps, all heard: no ties here
                assert hi - lo <= 1e-12


def test_rule_gain_of_the_protocol_itself_is_its_exact_accuracy_under_any_prior():
    p = Protocol.universal([0.5, 1.0, 2.0, 1.5], [0.0, 0.05, 0.1, 0.0])
    for task in (Task.majority(4), Task.sum(4), Task.random(4, 3, rng=3)):
        for party in (OBSERVER, 2):
            assert rule_gain(p, p, task, party) == pytest.approx(exact_accuracy(p, task, party), rel=1e-12)
    # non-uniform bits: brute force
    p_one = np.array([0.2, 0.5, 0.7, 0.9])
    xs, _, P = law(p.matrices, np.zeros(4))
    prior = np.prod(np.where(xs == 1, p_one, 1 - p_one), axis=1)
    task = Task.majority(4)
    lib_rule_on_brute = rule_gain(p, p, task, OBSERVER, p_one)
    # the library's rule is optimal for uniform bits; under this prior it is just some rule:
    # its gain is below the optimum
    best, _ = brute_rule(P, xs, prior, task, OBSERVER)
    assert lib_rule_on_brute <= brute_gain(P, xs, prior, task, OBSERVER, best) + 1e-12


def test_honest_parties_keep_their_exact_privacy_on_the_whole_transcript():
    nominal = Protocol.universal([0.5, 1.0, 2.0], [0.0, 0.05, 0.1])
    actual = deviate(nominal, {0: "truthful", 2: ("fixed", 0)})
    assert actual.eps[0] == math.inf and actual.delta[0] == pytest.approx(1.0)
    assert actual.eps[2] == 0.0
    xs, _, P = law(actual.matrices, np.zeros(3))
    j, eps_j = 1, 1.0
    for others in itertools.product((0, 1), repeat=2):  # every input of the others
        rows = [a for a, x in enumerate(xs) if (x[0], x[2]) == others]
        p0, p1 = (P[a] for a in sorted(rows, key=lambda a: xs[a][j]))
        d = max(np.maximum(p0 - math.exp(eps_j) * p1, 0).sum(), np.maximum(p1 - math.exp(eps_j) * p0, 0).sum())
        assert d == pytest.approx(float(nominal.mechanisms[j].delta(eps_j)), abs=1e-15)
        assert d <= 0.05 + 1e-15


def test_missing_probability_and_bad_values():
    assert missing_probability(0.05, 0.1) == pytest.approx(0.05 + 0.95 * 0.1)
    p = Protocol.binary([1.0, 2.0])
    with pytest.raises(LdpSimError, match="^loss: got"):
        missing_probability(1.5)
    with pytest.raises(LdpSimError, match="^missing: got"):
        erasure_protocol(p, [0.1, 0.2, 0.3])
    with pytest.raises(LdpSimError, match="^deviation: got"):
        deviate(p, {0: "liar"})
    with pytest.raises(LdpSimError, match="^bit: got"):
        deviate(p, {0: ("fixed",)})
    with pytest.raises(LdpSimError, match="^party: got"):
        deviate(p, {2: "truthful"})


# --------------------------------------------------------------------------- parties holding more than a bit
def alphabet_law(matrices, missing):
    """P[x, tau] for inputs x in C order over the parties' alphabets (Kronecker product of
    the per-party channels, each with its "not heard" column)."""
    P = np.ones((1, 1))
    for q, m in zip(matrices, missing):
        P = np.kron(P, np.hstack([(1 - m) * q, np.full((q.shape[0], 1), m)]))
    sizes = [q.shape[0] for q in matrices]
    xs = np.array(list(itertools.product(*[range(a) for a in sizes])))
    return xs, P


def test_parties_holding_more_than_a_bit_match_brute_force():
    from ldpsim.mechanisms import catalog
    from ldpsim.protocols import average_rule_table, estimate_accuracy, rule_accuracy

    rng = np.random.default_rng(21)
    mechs = [
        catalog.build("randomized_response", k=3, eps=1.2),
        catalog.build("randomized_response", k=2, eps=0.7),
        catalog.build("matrix", matrix=rng.dirichlet(np.ones(3), 4).tolist()),
    ]
    p = Protocol.from_mechanisms(mechs)
    assert p.inputs == (3, 2, 4)
    task = Task.random(3, 3, rng=5, gain=np.array([[1.0, 0.0, 0.3], [0.2, 1.0, 0.0], [0.0, 0.5, 2.0]]), inputs=p.inputs)
    for missing in (np.zeros(3), np.array([0.1, 0.3, 0.2])):
        xs, P = alphabet_law(p.matrices, missing)
        prior = np.full(len(xs), 1 / len(xs))
        lossy = erasure_protocol(p, missing)
        for party in (OBSERVER, 0, 2):
            f = task.value(xs)
            W = task.gain[f]
            best = 0.0
            for own in range(1) if party == OBSERVER else range(p.inputs[party]):
                rows = np.ones(len(xs), bool) if party == OBSERVER else xs[:, party] == own
                best += float(((prior[rows, None] * P[rows]).T @ W[rows]).max(axis=1).sum())
            assert exact_accuracy(lossy, task, party) == pytest.approx(best, rel=1e-12)
            assert rule_gain(lossy, lossy, task, party) == pytest.approx(best, rel=1e-12)
    # the worst case: the LP's optimum is at least the worst case of the average-optimal rule, and at most the average
    for party in (OBSERVER, 1):
        wc = worst_case(p, task, party)[0]
        avg, worst_of_avg_rule = rule_accuracy(p, task, party, average_rule_table(p, task, party))
        assert avg == pytest.approx(exact_accuracy(p, task, party), rel=1e-12)
        assert worst_of_avg_rule - 1e-9 <= wc <= avg + 1e-9
    # Monte Carlo of the optimal rule within 5 standard errors of exact (false failure ~ 6e-7 each)
    mean, se = estimate_accuracy(p, task, 0, rounds=20_000, rng=3)
    assert abs(mean - exact_accuracy(p, task, 0)) <= 5 * se
    # a deviating party holding 4 values: truthful sends the symbol that most favours its value
    actual = deviate(p, {2: "truthful", 0: ("fixed", 2)})
    assert np.array_equal(actual.matrices[0], np.vstack([p.matrices[0][2]] * 3))
    q = p.matrices[2]
    for x in range(4):
        ratios = q[x] / np.delete(q, x, axis=0).max(axis=0)
        assert actual.matrices[2][x, np.argmax(ratios)] == 1.0


def test_sampling_and_bad_inputs_with_alphabets():
    p = Protocol.from_matrices(
        [np.eye(3) * 0.4 + 0.2, np.array([[0.75, 0.25], [0.25, 0.75]])], [math.log(3), math.log(3)]
    )
    x = np.array([[0, 1], [2, 0], [1, 1]])
    assert p.sample(x, rng=1).shape == (3, 2)
    with pytest.raises(LdpSimError, match="^x: got"):
        p.sample(np.array([[3, 0]]), rng=1)
    with pytest.raises(LdpSimError, match="^task: got"):
        exact_accuracy(p, Task.xor(2), 0)  # a function of bits, but party 0 holds one of 3 values
    with pytest.raises(LdpSimError, match="^values: got"):
        Task.from_table([0, 1, 0], inputs=(3, 2))
