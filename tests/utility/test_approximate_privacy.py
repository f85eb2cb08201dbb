"""Approximate privacy on binary inputs (Kairouz et al. 2014, Sec. 5): the quaternary mechanism dominates.

For |X| = 2 the quaternary mechanism ``quaternary_mechanism(eps, delta)`` maximises every
utility obeying the data processing inequality over (eps, delta)-LDP mechanisms, because
every such mechanism is a post-processing of it (Blackwell; its privacy region is exactly
R(eps, delta)). Checked here against random (eps, delta)-LDP mechanisms with 2..6 outputs,
some generic and some close to the boundary of the privacy region:
KL divergence, total variation and mutual information are never larger than the
quaternary mechanism's, and each random mechanism is ``Q_quat W`` for a stochastic W
(found by a linear program).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from ldpsim.mechanisms import from_matrix, quaternary_mechanism
from ldpsim.utility import KL, ChiSquare, Hellinger, MutualInformation, TotalVariation

SEED = st.integers(0, 2**32 - 1)
EPS = st.floats(math.log(0.05), math.log(5.0)).map(math.exp)
DELTA = st.floats(math.log(1e-4), math.log(0.5)).map(math.exp)


def random_pure_ldp(rng: np.random.Generator, m: int, eps: float) -> np.ndarray:
    """A random 2 x m matrix whose column ratios are at most e^eps (eps-LDP): column y is
    ``(u_y, u_y e^(eps s_y))`` up to row normalisation, with the ratio split so that the
    normalisation keeps every ratio within e^eps."""
    for _ in range(1000):
        eps_p = rng.uniform(eps / 2, eps)
        u = rng.random((2, m))
        u = np.where(rng.random((2, m)) < 0.5, np.round(u), u)  # some extreme columns
        c = np.exp(eps_p * u) * rng.dirichlet(np.ones(m))[None, :]
        q = c / c.sum(axis=1, keepdims=True)
        if from_matrix(q).is_private(eps):
            return q
    raise AssertionError("no eps-LDP matrix in 1000 tries")


def random_approx_ldp(rng: np.random.Generator, m: int, eps: float, delta: float) -> np.ndarray:
    """A random 2 x m (eps, delta)-LDP matrix: ``(1 - t) E + t R`` with E eps'-LDP for an
    eps' drawn around eps (up to 1.5 eps, so E alone may use part of the delta budget), R an
    arbitrary random matrix (with some zero entries) and t in [0, 2 delta]; kept if
    ``from_matrix(Q).delta(eps) <= delta``. With ``eps' <= eps`` and ``t <= delta`` the
    mixture is always (eps, delta)-LDP, so acceptance is frequent, while the other draws
    reach the boundary of the privacy region."""
    for _ in range(1000):
        e = random_pure_ldp(rng, m, eps * rng.uniform(0.5, 1.5))
        r = rng.dirichlet(np.full(m, 0.5), size=2)
        r = np.where(rng.random((2, m)) < 0.2, 0.0, r)
        r[:, rng.integers(m)] += 1e-3  # no all-zero row
        r /= r.sum(axis=1, keepdims=True)
        t = rng.uniform(0.0, min(1.0, 2.0 * delta))
        q = (1.0 - t) * e + t * r
        q /= q.sum(axis=1, keepdims=True)
        if from_matrix(q).delta(eps) <= delta:
            return q
    raise AssertionError("no (eps, delta)-LDP matrix in 1000 tries")


def near_boundary_approx_ldp(rng: np.random.Generator, m: int, eps: float, delta: float) -> np.ndarray:
    """A random 2 x m (eps, delta)-LDP matrix close to the boundary of R(eps, delta): a
    quaternary mechanism at perturbed (eps', delta'), post-processed by a random
    near-deterministic 4 x m map, mixed with a little of a random matrix; kept if
    ``from_matrix(Q).delta(eps) <= delta`` (most are, except at tiny delta). These reach
    95-98% of the quaternary mechanism's total variation."""
    for _ in range(1000):
        base = quaternary_mechanism(eps * rng.uniform(0.7, 1.1), min(1.0, delta * rng.uniform(0.5, 1.2))).matrix
        target = rng.integers(0, m, size=4)
        w = rng.dirichlet(np.full(m, 0.3), size=4) * rng.uniform(0.0, 0.3, size=(4, 1))
        w[np.arange(4), target] += 1.0 - w.sum(axis=1)
        t = rng.uniform(0.0, 0.05)
        q = (1.0 - t) * base @ w + t * rng.dirichlet(np.ones(m), size=2)
        q /= q.sum(axis=1, keepdims=True)
        if from_matrix(q).delta(eps) <= delta:
            return q
    raise AssertionError("no (eps, delta)-LDP matrix in 1000 tries")


def candidates(rng: np.random.Generator, eps: float, delta: float, n: int) -> list[np.ndarray]:
    out = []
    for gen in (random_approx_ldp, near_boundary_approx_ldp):
        out += [gen(rng, int(rng.integers(2, 7)), eps, delta) for _ in range(n)]
    return out


def binary_prior(rng: np.random.Generator) -> np.ndarray:
    p = rng.uniform(0.02, 0.98)
    return np.array([p, 1.0 - p])


def post_processing_residual(quat: np.ndarray, q: np.ndarray) -> float:
    """``min ||Q_quat W - Q||_1`` over stochastic 4 x m matrices W (a linear program)."""
    m = q.shape[1]
    nw = 4 * m
    # variables: W (row-major, 4 x m), then slacks s+ and s- for the 2 x m residual
    a_eq, b_eq = [], []
    for x in range(2):
        for y in range(m):
            row = np.zeros(nw + 4 * m)
            for j in range(4):
                row[j * m + y] = quat[x, j]
            row[nw + x * m + y] = 1.0  # + s+
            row[nw + 2 * m + x * m + y] = -1.0  # - s-
            a_eq.append(row)
            b_eq.append(q[x, y])
    for j in range(4):
        row = np.zeros(nw + 4 * m)
        row[j * m : (j + 1) * m] = 1.0
        a_eq.append(row)
        b_eq.append(1.0)
    c = np.concatenate([np.zeros(nw), np.ones(4 * m)])
    res = linprog(c, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


@settings(max_examples=80)
@given(seed=SEED, eps=EPS, delta=DELTA)
def test_quaternary_dominates_random_approximately_private_mechanisms(seed, eps, delta):
    rng = np.random.default_rng(seed)
    quat = quaternary_mechanism(eps, delta)
    assert quat.delta(eps) <= delta * (1 + 1e-9)
    P0, P1 = binary_prior(rng), binary_prior(rng)
    if abs(P0[0] - P1[0]) < 1e-3:
        P1 = np.array([1.0 - P0[0], P0[0]]) if abs(P0[0] - 0.5) > 0.01 else np.array([0.9, 0.1])
    P = binary_prior(rng)
    utilities = {
        "kl": KL(P0, P1),
        "kl_reversed": KL(P1, P0),
        "tv": TotalVariation(P0, P1),
        "chi_square": ChiSquare(P0, P1),
        "hellinger": Hellinger(P0, P1),
        "mi": MutualInformation(P),
    }
    best = {name: U.value(quat) for name, U in utilities.items()}
    for q in candidates(rng, eps, delta, 6):
        assert from_matrix(q).delta(eps) <= delta
        for name, U in utilities.items():
            val = U.value(q)
            assert val <= best[name] * (1 + 1e-9) + 1e-15, (name, val, best[name], q)


@settings(max_examples=50)
@given(seed=SEED, eps=EPS, delta=DELTA)
def test_every_approximately_private_mechanism_is_a_post_processing_of_the_quaternary(seed, eps, delta):
    """The reason for the dominance (Kairouz et al. 2014, Sec. 5): Q = Q_quat W for a stochastic W."""
    rng = np.random.default_rng(seed)
    quat = quaternary_mechanism(eps, delta).matrix
    for q in candidates(rng, eps, delta, 2):
        assert post_processing_residual(quat, q) <= 1e-8


@settings(max_examples=40)
@given(seed=SEED, eps=EPS, delta=st.sampled_from([0.0, 1e-3, 0.05, 0.3]))
def test_quaternary_total_variation_in_closed_form(seed, eps, delta):
    """``||M0 - M1||_TV = (delta + (1 - delta) tanh(eps/2)) ||P0 - P1||_TV`` for the
    quaternary mechanism (its two delta outputs reveal the input, the middle ones are the
    binary mechanism); at delta = 0 it is the binary mechanism's closed form."""
    rng = np.random.default_rng(seed)
    P0, P1 = binary_prior(rng), binary_prior(rng)
    if abs(P0[0] - P1[0]) < 1e-3:
        P1 = np.array([0.9, 0.1]) if P0[0] < 0.5 else np.array([0.1, 0.9])
    quat = quaternary_mechanism(eps, delta)
    expected = (delta + (1 - delta) * math.tanh(eps / 2)) * abs(P0[0] - P1[0])
    assert TotalVariation(P0, P1).value(quat) == pytest.approx(expected, rel=1e-12)


def test_generator_reaches_the_boundary_of_the_privacy_region():
    """The random mechanisms are not all deep inside R(eps, delta): some use almost all of
    the delta budget, and the quaternary mechanism's advantage over them gets small."""
    rng = np.random.default_rng(11)
    eps, delta = 0.7, 0.05
    used = [from_matrix(random_approx_ldp(rng, int(rng.integers(2, 7)), eps, delta)).delta(eps) for _ in range(200)]
    assert max(used) > 0.8 * delta
    assert min(used) < 0.2 * delta
    P0, P1 = np.array([0.3, 0.7]), np.array([0.6, 0.4])
    tv = TotalVariation(P0, P1)
    best = max(tv.value(near_boundary_approx_ldp(rng, int(rng.integers(2, 7)), eps, delta)) for _ in range(200))
    assert 0.9 * tv.value(quaternary_mechanism(eps, delta)) < best <= tv.value(quaternary_mechanism(eps, delta))
