"""The m-ary accuracy utility: its value is the Bayes rule's one-report accuracy computed
here, and the staircase optimum matches a linear program over every staircase pattern
written here (Kairouz et al. 2014, Theorem 2: an optimal mechanism is a staircase one),
and beats randomized response and random private mechanisms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from ldpsim.mechanisms import catalog
from ldpsim.utility import MaryAccuracy, optimal_mechanism

H = np.array([[0.5, 0.3, 0.15, 0.05], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])


def _accuracy(q: np.ndarray, weights: np.ndarray) -> float:
    """sum_y max_j w_j P(y | H_j), output by output."""
    return float(sum(max(weights[j] * (H[j] @ q[:, y]) for j in range(len(H))) for y in range(q.shape[1])))


def _staircase_lp(eps: float, weights: np.ndarray) -> float:
    """max sum_T theta_T mu(column_T) over every pattern T with column_T = e^-eps + (1 -
    e^-eps) 1_T, subject to sum_T theta_T column_T = 1 (each row of Q sums to one)."""
    k = H.shape[1]
    cols, mus = [], []
    for bits in itertools.product([0, 1], repeat=k):
        c = math.exp(-eps) + (1 - math.exp(-eps)) * np.array(bits, dtype=float)
        cols.append(c)
        mus.append(max(weights[j] * (H[j] @ c) for j in range(len(H))))
    a = np.array(cols).T
    res = linprog(-np.array(mus), A_eq=a, b_eq=np.ones(k), bounds=(0, None), method="highs")
    return -float(res.fun)


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("weights", [np.full(3, 1 / 3), np.array([0.6, 0.3, 0.1])])
def test_optimum_against_an_independent_staircase_lp(eps, weights):
    u = MaryAccuracy(H, weights)
    got = optimal_mechanism(u, eps)
    assert got.value == pytest.approx(_staircase_lp(eps, weights), rel=1e-8)
    q = got.mechanism.matrix
    assert u.value(q) == pytest.approx(_accuracy(q, weights), rel=1e-12)
    assert np.log(q.max(axis=0) / q.min(axis=0)).max() <= eps + 1e-9  # eps-LDP
    assert got.value >= u.value(catalog.build("randomized_response", k=4, eps=eps)) - 1e-12
    gen = np.random.default_rng(int(eps * 10))
    for _ in range(50):  # random eps-LDP mechanisms: columns within a factor e^eps
        raw = gen.uniform(1.0, math.exp(eps), size=(4, 6))
        rand = raw / raw.sum(axis=1, keepdims=True)
        if np.log(rand.max(axis=0) / rand.min(axis=0)).max() <= eps:
            assert u.value(rand) <= got.value + 1e-12


def test_bad_hypotheses_are_one_line():
    from ldpsim.errors import LdpSimError

    with pytest.raises(LdpSimError, match="hypotheses"):
        MaryAccuracy([[0.5, 0.5]])
    with pytest.raises(LdpSimError, match="weights"):
        MaryAccuracy(H, [0.5, 0.5])
