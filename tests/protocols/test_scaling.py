"""Scaling of identical parties (:mod:`ldpsim.protocols.scaling`): the large-k formulas
against exact values computed independently, and the aggregate Monte Carlo (counts, not
parties) against the exact accuracy.

Independent exact values. For binary randomized response (and the universal protocol at
delta = 0, which sends the same two symbols) the number T of parties that send "1" is a
sufficient statistic: given T = t the number of ones is ``Bin(t, keep) + Bin(n - t, 1 - keep)``,
so the optimal accuracy is ``sum_t P(T = t) max_y P(f = y | T = t)`` with ``T ~ Bin(n, 1/2)``;
a few lines of scipy, sharing nothing with the library's transcript classes.

Tolerances. The large-k formulas have an error O(1/k) (the module docstring measures
``|error| k <= 0.65`` for the majority and ``|relative error| k <= 0.42`` for the sum, eps in
{0.5, 1, 2}); the tests ask for ``|error| <= 1/k`` (majority) and ``|relative error| <= 1/k``
(sum) at k = 200, 201 and 1000, which an O(1/sqrt(k)) mistake in a formula would fail. The
Monte Carlo checks use the exact binomial acceptance interval of the mean of 0/1 gains,
each at false-failure probability 1e-6 / (number of checks), so that the whole file fails by
chance with probability at most 1e-6; the seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from ldpsim.errors import LdpSimError
from ldpsim.protocols import (
    OBSERVER,
    Protocol,
    Task,
    exact_accuracy,
    scaling,
    xor_accuracy,
)
from ldpsim.protocols.gains import enumerated_gain
from ldpsim.protocols.scaling import (
    aggregate_accuracy,
    aggregate_gains,
    build_protocol,
    build_task,
    large_k_accuracy,
    message_statistics,
    point_cost,
    study_points,
)
from ldpsim.stats import mean_tolerance
from tests.stats_checks import FALSE_FAILURE
from tests.tiers import sample

EPS = (0.5, 1.0, 2.0)


# --------------------------------------------------------------------------- independent exact values
def rr_accuracy(task: str, eps: float, k: int, receiver: int) -> float:
    """Exact optimal accuracy under binary randomized response through the sufficient
    statistic T (module docstring); ``receiver`` OBSERVER or a party (own bit known)."""
    keep = math.exp(eps) / (1.0 + math.exp(eps))
    n = k if receiver == OBSERVER else k - 1
    owns = [0] if receiver == OBSERVER else [0, 1]
    total = 0.0
    for t in range(n + 1):
        post = np.convolve(binom.pmf(np.arange(t + 1), t, keep), binom.pmf(np.arange(n - t + 1), n - t, 1.0 - keep))
        for b in owns:
            s = b + np.arange(n + 1)  # the count of ones of all k bits
            if task == "sum":
                best = post.max()
            elif task == "majority":
                best = max(post[2 * s > k].sum(), post[2 * s <= k].sum())
            else:
                best = max(post[s % 2 == 1].sum(), post[s % 2 == 0].sum())
            total += binom.pmf(t, n, 0.5) * best / len(owns)
    return float(total)


@pytest.mark.parametrize("task", ["xor", "sum", "majority"])
@pytest.mark.parametrize("receiver", [OBSERVER, 0])
def test_independent_oracle_matches_brute_force_and_the_library(task, receiver):
    for k in (2, 4):  # brute force over every input and transcript
        p = Protocol.binary(1.0, parties=k)
        assert rr_accuracy(task, 1.0, k, receiver) == pytest.approx(
            enumerated_gain(p, build_task(task, k), receiver), rel=1e-12
        )
    for k in (7, 60):  # the library's exact paths (tensor or classes; XOR closed form)
        for eps in EPS:
            p = Protocol.binary(eps, parties=k)
            assert exact_accuracy(p, build_task(task, k), receiver) == pytest.approx(
                rr_accuracy(task, eps, k, receiver), rel=1e-10
            )


# --------------------------------------------------------------------------- large-k formulas
def test_message_statistics_of_binary_randomized_response():
    for eps in EPS:
        tv, v_b, v_w = message_statistics(Protocol.binary(eps, parties=1).matrices[0])
        assert tv == pytest.approx(math.tanh(eps / 2), rel=1e-12)
        assert 2 * math.sqrt(v_b) == pytest.approx(math.tanh(eps / 2), rel=1e-12)  # rho = tanh(eps/2)
        assert v_w == pytest.approx(1 / (4 * math.cosh(eps / 2) ** 2), rel=1e-12)
        assert v_b + v_w == pytest.approx(0.25, rel=1e-12)


@pytest.mark.parametrize("k", sample([200, 201, 1000], keep=(0, 1)))
@pytest.mark.parametrize("receiver", [OBSERVER, 0])
def test_large_k_formulas_against_independent_exact_values(k, receiver):
    for eps in EPS:
        q = Protocol.binary(eps, parties=1).matrices[0]
        maj = rr_accuracy("majority", eps, k, receiver)
        assert abs(large_k_accuracy("majority", q, k, receiver) - maj) <= 1.0 / k, (eps, k, receiver)
        total = rr_accuracy("sum", eps, k, receiver)
        assert abs(large_k_accuracy("sum", q, k, receiver) / total - 1.0) <= 1.0 / k, (eps, k, receiver)
        if receiver == OBSERVER:  # the closed forms of the docstring
            assert large_k_accuracy("majority", q, k) == pytest.approx(
                0.5 + math.asin(math.tanh(eps / 2)) / math.pi, rel=1e-12
            )
            assert large_k_accuracy("sum", q, k) == pytest.approx(
                math.cosh(eps / 2) * math.sqrt(2 / (math.pi * k)), rel=1e-12
            )


def test_large_k_errors_shrink_like_one_over_k():
    q = Protocol.binary(1.0, parties=1).matrices[0]
    err = {k: abs(large_k_accuracy("majority", q, k) - rr_accuracy("majority", 1.0, k, OBSERVER)) for k in (100, 400)}
    rel = {k: abs(large_k_accuracy("sum", q, k) / rr_accuracy("sum", 1.0, k, OBSERVER) - 1) for k in (100, 400)}
    assert err[400] < err[100] / 3 and rel[400] < rel[100] / 3  # O(1/k) gives 4, O(1/sqrt(k)) only 2


def test_large_k_formulas_with_four_symbols_against_the_library():
    """delta > 0: the quaternary mechanism (four symbols), exact by transcript classes."""
    for k in (40, 41):
        p = Protocol.universal(1.0, 0.1, parties=k)
        q = p.matrices[0]
        assert abs(large_k_accuracy("majority", q, k) - exact_accuracy(p, Task.majority(k))) <= 1.0 / k
        assert abs(large_k_accuracy("sum", q, k) / exact_accuracy(p, Task.sum(k)) - 1) <= 1.0 / k


def test_xor_formula_is_the_exact_closed_form():
    for name, delta in (("universal", 0.1), ("binary", 0.0)):
        p = build_protocol(name, 1.5, delta, 9)
        for who in (OBSERVER, 0, 4):
            assert large_k_accuracy("xor", p.matrices[0], 9, who) == pytest.approx(xor_accuracy(p, who), rel=1e-14)


def test_large_k_edge_cases_and_errors():
    reveal = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert large_k_accuracy("sum", reveal, 50) == 1.0  # nothing unknown after the messages
    assert large_k_accuracy("majority", reveal, 50) == 1.0
    assert large_k_accuracy("sum", reveal, 1, 0) == 1.0  # a lone party knows its bit
    with pytest.raises(LdpSimError, match="task_name"):
        large_k_accuracy("parity", reveal, 5)
    with pytest.raises(LdpSimError, match="receiver"):
        large_k_accuracy("sum", reveal, 5, 5)


# --------------------------------------------------------------------------- the grid
def test_study_points_exact_where_a_path_exists():
    pts = study_points(["universal"], ["sum", "majority"], [3, 30], [1.0], delta=0.1)
    assert list(pts.columns[:7]) == ["protocol", "task", "k", "eps", "delta", "receiver", "party"]
    assert len(pts) == 2 * 2 * 2
    small = pts[pts["k"] == 3]
    assert (small["plan"] != "").all() and np.isfinite(small["exact"]).all()
    big = study_points(["universal"], ["sum"], [200], [1.0], delta=0.1, receivers=[OBSERVER])  # 1.4 million classes
    assert big["plan"].tolist() == [""] and math.isnan(big["exact"].iloc[0]) and np.isfinite(big["large_k"].iloc[0])


# --------------------------------------------------------------------------- aggregate Monte Carlo
#: (protocol, eps, delta, k, task, receiver, rounds): small and large k, two and four symbols
MC_CASES = [
    ("binary", 1.0, 0.0, 2, "xor", 0, 100_000),
    ("binary", 1.0, 0.0, 7, "majority", OBSERVER, 100_000),
    ("binary", 0.5, 0.0, 7, "sum", 0, 100_000),
    ("universal", 2.0, 0.1, 6, "majority", 0, 100_000),
    ("universal", 1.0, 0.2, 12, "sum", OBSERVER, 100_000),
    ("universal", 1.0, 0.05, 5, "xor", OBSERVER, 100_000),
    ("universal", 1.0, 0.0, 200, "majority", 0, 200_000),
    ("universal", 0.5, 0.0, 400, "sum", OBSERVER, 200_000),
]
PER_CHECK = FALSE_FAILURE / (len(MC_CASES) + 1)  # Bonferroni over every Monte Carlo check of this file


@pytest.mark.parametrize("case", range(len(MC_CASES)))
def test_aggregate_monte_carlo_against_exact(case):
    name, eps, delta, k, task_name, who, rounds = MC_CASES[case]
    p, task = build_protocol(name, eps, delta, k), build_task(task_name, k)
    exact = exact_accuracy(p, task, who)
    mean, se = aggregate_accuracy(p, task, who, rounds, rng=np.random.default_rng([2026, case]))
    tol = mean_tolerance([0.0, 1.0], exact, rounds, PER_CHECK)
    assert abs(mean - exact) <= tol, (MC_CASES[case], mean, exact, tol, (mean - exact) / se)


def test_aggregate_decision_cache_across_chunks(monkeypatch):
    """Rounds drawn in many chunks reuse decisions made in earlier chunks: same law."""
    monkeypatch.setattr(scaling, "CHUNK", 4096)
    p, task = build_protocol("universal", 1.0, 0.1, 9), build_task("majority", 9)
    rounds = 60_000
    g = aggregate_gains(p, task, 0, rounds, rng=np.random.default_rng(11))
    exact = exact_accuracy(p, task, 0)
    assert abs(g.mean() - exact) <= mean_tolerance([0.0, 1.0], exact, rounds, PER_CHECK)


def test_aggregate_is_reproducible_and_refuses_unequal_parties():
    p, task = build_protocol("binary", 1.0, 0.0, 30), build_task("sum", 30)
    a = aggregate_gains(p, task, OBSERVER, 5000, rng=np.random.default_rng(5))
    b = aggregate_gains(p, task, OBSERVER, 5000, rng=np.random.default_rng(5))
    assert np.array_equal(a, b)
    mixed = Protocol.binary([1.0, 2.0, 1.0])
    with pytest.raises(LdpSimError, match="identical parties"):
        aggregate_gains(mixed, Task.sum(3), OBSERVER, 100)
    with pytest.raises(LdpSimError, match="task"):
        aggregate_gains(p, build_task("sum", 5), OBSERVER, 100)


def test_point_cost_bounds_the_decision_table():
    p = build_protocol("universal", 1.0, 0.1, 500)
    cost = point_cost(p, build_task("sum", 500), OBSERVER, 1000)
    assert cost.exact_path is None and cost.table_rows == 2000  # min(count vectors, 2 x rounds)
    cost = point_cost(build_protocol("binary", 1.0, 0.0, 500), build_task("sum", 500), 0, 10**6)
    assert cost.exact_path == "classes" and cost.table_rows == 2 * 500  # two symbols: n + 1 vectors per own bit
