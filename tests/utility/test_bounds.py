"""Bounds and closed forms of Kairouz et al. 2014 (ldpsim.utility.bounds) against the staircase LP.

Priors are drawn from a Dirichlet(1) distribution with a seed that hypothesis draws, so
they are strictly positive (with probability one) and vary across runs; every check is
exact up to floating-point tolerances (no sampling). Random eps-LDP mechanisms come from
three generators below: random matrices with bounded column ratios (rejected unless
``from_matrix(Q).is_private(eps)``), random vertex staircase mechanisms (an LP over random
patterns) and mixtures of two staircase mechanisms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import (
    binary_mechanism,
    binary_mechanism_for_priors,
    from_matrix,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)
from ldpsim.utility import (
    KL,
    ChiSquare,
    FDivergence,
    Hellinger,
    MutualInformation,
    TotalVariation,
    binary_for,
    optimal_mechanism,
)
from ldpsim.utility.bounds import (
    RegimeThresholds,
    binary_kl,
    binary_kl_lower_bound_factor,
    binary_marginals,
    binary_tv,
    check_binary_kl_factor,
    duchi_bound,
    max_balanced_product,
    mi_small_eps_bound,
    regime_thresholds,
    symmetrized_kl,
)

SEED = st.integers(0, 2**32 - 1)
#: Absolute slack for comparing utilities computed by the library: KL and MI sum terms of
#: order eps that cancel to order eps^2, so their rounding error is ~1e-16 absolute, which is
#: more than 1e-9 relative when close priors make the divergence ~1e-8 or smaller.
FLOOR = 1e-15


def log_uniform(lo: float, hi: float):
    return st.floats(math.log(lo), math.log(hi)).map(math.exp)


def priors(seed: int, k: int, n: int = 2, floor: float = 0.0) -> list[np.ndarray]:
    """``n`` strictly positive priors on k symbols: Dirichlet(1), mixed with the uniform
    distribution in proportion ``floor``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        p = (1.0 - floor) * rng.dirichlet(np.ones(k)) + floor / k
        out.append(p / p.sum())
    return out


# --------------------------------------------------------------------- random eps-LDP mechanisms
def random_ldp_matrix(rng: np.random.Generator, k: int, m: int, eps: float) -> np.ndarray:
    """A random k x m eps-LDP matrix. Columns ``C[:, y] s_y`` with entries of C in
    ``[1, e^eps']``, rows then normalised: the normalisation changes column ratios by at most
    another ``e^eps'``, so eps' <= eps/2 is always private; eps' is drawn in [eps/2, eps] and
    the matrix kept only if it is eps-LDP (about half are). Some entries are set to the
    extremes 1 or e^eps' (staircase-like columns)."""
    for _ in range(1000):
        eps_p = rng.uniform(eps / 2, eps)
        u = rng.random((k, m))
        extreme = rng.random((k, m)) < 0.5
        u = np.where(extreme, np.round(u), u)
        c = np.exp(eps_p * u) * rng.dirichlet(np.ones(m))[None, :]
        q = c / c.sum(axis=1, keepdims=True)
        if from_matrix(q).is_private(eps):
            return q
    raise AssertionError("random_ldp_matrix: no private matrix in 1000 tries")


def random_staircase(rng: np.random.Generator, k: int, eps: float):
    """A random vertex of the staircase polytope: ``S theta = 1, theta >= 0`` over a random set
    of patterns (always with the all-zero pattern and the one-hot ones, so that it is
    feasible), maximising a random objective. Returns (codes, theta) with theta polished on
    its support so that rows sum to one in floating point."""
    full = 1 << k
    extra = rng.integers(0, full, size=min(3 * k, full))
    codes = np.unique(np.concatenate([[0], 1 << np.arange(k), extra])).astype(np.int64)
    bits = ((codes[:, None] >> np.arange(k)) & 1).T.astype(float)  # k x n
    cols = np.exp(eps * bits - eps)  # scaled: entries e^-eps and 1
    res = linprog(-rng.random(codes.size), A_eq=cols, b_eq=np.ones(k), bounds=(0, None), method="highs-ds")
    assert res.status == 0
    support = res.x > 1e-12
    sol, *_ = np.linalg.lstsq(cols[:, support], np.ones(k), rcond=None)
    exact = np.all(sol > 0) and np.allclose(cols[:, support] @ sol, 1.0, rtol=0, atol=1e-13)
    theta = np.zeros(codes.size)
    theta[support] = sol if exact else res.x[support]
    return codes, theta * math.exp(-eps)  # weights of the unscaled patterns e^(eps b)


def staircase_candidates(rng: np.random.Generator, k: int, eps: float, n: int = 3) -> list:
    out = []
    for _ in range(n):
        codes, theta = random_staircase(rng, k, eps)
        out.append(staircase_mechanism(eps, theta, patterns=codes, k=k))
    # a mixture of two staircase mechanisms (not a vertex): Q = [lam Q1 | (1 - lam) Q2]
    (c1, t1), (c2, t2) = random_staircase(rng, k, eps), random_staircase(rng, k, eps)
    lam = rng.uniform(0.1, 0.9)
    out.append(
        staircase_mechanism(eps, np.concatenate([lam * t1, (1 - lam) * t2]), patterns=np.concatenate([c1, c2]), k=k)
    )
    return out


def library_mechanisms(rng: np.random.Generator, k: int, eps: float, utility) -> list:
    """Every kind of eps-LDP mechanism the library builds, plus random ones."""
    mechs = [randomized_response(k, eps), binary_for(utility, eps), truncated_geometric(k, eps)]
    mechs.append(binary_mechanism(eps, rng.random(k) < 0.5, k))
    mechs += staircase_candidates(rng, k, eps)
    for m in (2, k, 2 * k + 1):
        q = random_ldp_matrix(rng, k, m, eps)
        mechs.append(from_matrix(q))
        w = rng.dirichlet(np.ones(3), size=m)  # post-processing keeps eps-LDP
        mechs.append(from_matrix(q @ w))
    for mech in mechs:
        assert mech.is_private(eps), mech
    return mechs


# --------------------------------------------------------------------- closed forms
@settings(max_examples=100)
@given(seed=SEED, k=st.integers(2, 12), eps=log_uniform(1e-2, 700.0))
def test_binary_closed_forms_equal_library_values(seed, k, eps):
    P0, P1 = priors(seed, k)
    mech = binary_mechanism_for_priors(P0, P1, eps)
    # KL.value sums terms of order eps that cancel to order eps^2: its absolute rounding
    # error is ~1e-16, the closed form's is relative (see the mpmath test below)
    assert binary_kl(P0, P1, eps) == pytest.approx(KL(P0, P1).value(mech), rel=1e-9, abs=FLOOR)
    assert binary_tv(P0, P1, eps) == pytest.approx(TotalVariation(P0, P1).value(mech), rel=1e-9, abs=FLOOR)
    m = binary_marginals(P0, P1, eps)
    np.testing.assert_allclose(m, np.vstack([mech.marginal(P0), mech.marginal(P1)]), rtol=1e-12, atol=0)
    # the TV closed form is tanh(eps/2) ||P0 - P1||_TV = (e - 1)/(e + 1) ||P0 - P1||_TV
    if eps < 30:
        e = math.exp(eps)
        assert binary_tv(P0, P1, eps) == pytest.approx((e - 1) / (e + 1) * 0.5 * np.abs(P0 - P1).sum(), rel=1e-12)


def test_binary_kl_keeps_relative_accuracy_at_tiny_eps():
    """The closed form stays accurate where the direct sum (and the library's KL.value)
    cancels: against 50-digit arithmetic."""
    import mpmath

    mpmath.mp.dps = 50
    P0, P1 = priors(3, 5)
    T = P0 >= P1
    for eps in (1e-12, 1e-8, 1e-4, 1.0, 50.0):
        e = mpmath.exp(mpmath.mpf(eps))
        a = [(1 + (e - 1) * mpmath.fsum([mpmath.mpf(x) for x in P[T]])) / (1 + e) for P in (P0, P1)]
        ref = a[0] * mpmath.log(a[0] / a[1]) + (1 - a[0]) * mpmath.log((1 - a[0]) / (1 - a[1]))
        assert binary_kl(P0, P1, eps) == pytest.approx(float(ref), rel=1e-13)


def test_closed_forms_at_the_ends():
    P0, P1 = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    assert binary_kl(P0, P1, 0.0) == 0.0 and binary_tv(P0, P1, 0.0) == 0.0
    assert binary_kl_lower_bound_factor(0.0) == pytest.approx(1 / 8, rel=1e-15)
    assert binary_kl_lower_bound_factor(1.0) == pytest.approx(1 / (2 * (math.e + 1) ** 2), rel=1e-14)
    assert binary_kl_lower_bound_factor(800.0) == 0.0
    assert duchi_bound(P0, P1, 1.0) == pytest.approx(4 * (math.e - 1) ** 2 * 0.3**2, rel=1e-14)
    assert duchi_bound(P0, P1, 500.0) == math.inf
    assert duchi_bound(P0, P0, 500.0) == 0.0
    # as eps -> inf the binary mechanism reveals T exactly: KL -> D_kl of (P(T), P(T^c))
    t0, t1 = 0.5 + 0.3, 0.2 + 0.3
    assert binary_kl(P0, P1, 700.0) == pytest.approx(
        t0 * math.log(t0 / t1) + (1 - t0) * math.log((1 - t0) / (1 - t1)), rel=1e-14
    )
    assert binary_tv(P0, P1, 700.0) == pytest.approx(0.3, rel=1e-15)
    assert max_balanced_product([0.4, 0.3, 0.2, 0.1]) == pytest.approx(0.25)
    assert mi_small_eps_bound([0.7, 0.2, 0.1], 0.1) == pytest.approx(0.5 * 0.01 * 0.21)


def test_bad_input_is_rejected_with_the_parameter_name():
    with pytest.raises(LdpSimError, match="eps"):
        binary_kl([0.5, 0.5], [0.2, 0.8], -1.0)
    with pytest.raises(LdpSimError, match="P1"):
        binary_tv([0.5, 0.5], [0.2, 0.3, 0.5], 1.0)
    with pytest.raises(LdpSimError, match="P"):
        mi_small_eps_bound(np.full(21, 1 / 21), 0.1)
    with pytest.raises(LdpSimError, match="eps_grid"):
        regime_thresholds(KL([0.5, 0.5], [0.2, 0.8]), eps_grid=[1.0, 0.5])
    with pytest.raises(LdpSimError, match="utility"):
        regime_thresholds("kl")


# --------------------------------------------------------------------- TV and the KL factor
@settings(max_examples=60)
@given(seed=SEED, k=st.integers(2, 9), eps=log_uniform(1e-2, 40.0))
def test_binary_is_optimal_for_total_variation_at_every_eps(seed, k, eps):
    """Kairouz et al. 2014, Sec. 3.2 / 8: the binary mechanism maximises ||M0 - M1||_TV for every eps."""
    P0, P1 = priors(seed, k)
    res = optimal_mechanism(TotalVariation(P0, P1), eps)
    tv = binary_tv(P0, P1, eps)
    # the LP certifies the optimum in [value, bound]: binary lies there, nothing beats it
    # (up to the ~1e-16 absolute rounding of the utilities, relative 1e-11 when TV is small)
    assert res.value <= tv * (1 + 1e-9) + FLOOR
    assert tv <= res.bound * (1 + 1e-9) + FLOOR
    # equal within 1e-9, or within the LP's certified gap where that is larger: at eps > 20
    # the vertices differ by ~e^-eps, near HiGHS's 1e-10 tolerances, and the LP may stop at
    # randomized response 1.1e-9 (relative) below binary (reported; see optimal.py)
    assert res.value == pytest.approx(tv, rel=1e-9, abs=max(res.gap, 0.0))
    assert res.bound == pytest.approx(tv, rel=1e-9, abs=max(res.gap, 0.0))


@settings(max_examples=60)
@given(seed=SEED, k=st.integers(2, 9), eps=log_uniform(1e-2, 30.0))
def test_binary_kl_is_within_the_constant_factor_of_optimal(seed, k, eps):
    """Kairouz et al. 2014, Sec. 3.3: BIN >= OPT / (2 (e^eps + 1)^2) for KL; and BIN <= OPT."""
    P0, P1 = priors(seed, k)
    check = check_binary_kl_factor(P0, P1, eps)
    assert check.holds
    assert check.ratio >= binary_kl_lower_bound_factor(eps)
    assert check.binary <= check.optimum * (1 + 1e-9) + FLOOR
    # the check helper with a given optimum agrees
    again = check_binary_kl_factor(P0, P1, eps, optimum=check.optimum)
    assert again == check


# --------------------------------------------------------------------- regimes
@settings(max_examples=10)
@given(seed=SEED, k=st.integers(3, 6), which=st.sampled_from(["kl", "mi"]))
def test_binary_optimal_at_small_eps_and_rr_at_large_eps(seed, k, which):
    """Kairouz et al. 2014, Sec. 3.2-3.3, 4: for the same priors the binary mechanism is exactly optimal up to
    eps_bin and randomized response from eps_rr on, with eps_bin < eps_rr (k >= 3)."""
    P0, P1 = priors(seed, k, floor=0.05)
    U = KL(P0, P1) if which == "kl" else MutualInformation(P0)
    r = regime_thresholds(U)
    assert isinstance(r, RegimeThresholds)
    assert 0 < r.eps_bin and r.eps_rr < math.inf
    if k >= 4:
        assert r.eps_bin < r.eps_rr
    else:
        # k = 3: the regimes meet (binary gives way straight to randomized response); near
        # the meeting point both are within rtol of optimal, so the two may overlap by ~xtol
        assert r.eps_bin <= r.eps_rr * (1 + 10 * r.xtol)
    lo, hi = r.eps_bin_bracket
    assert lo == r.eps_bin and hi / lo <= 1 + 1.01 * r.xtol
    lo, hi = r.eps_rr_bracket
    assert hi == r.eps_rr and hi / lo <= 1 + 1.01 * r.xtol
    slack = 1 - r.rtol
    for eps in (r.eps_bin / 4, r.eps_bin / 2, r.eps_bin):
        opt = optimal_mechanism(U, eps).value
        assert U.value(binary_for(U, eps)) >= opt * slack - r.atol
    for eps in (r.eps_rr, 2 * r.eps_rr, 4 * r.eps_rr):
        opt = optimal_mechanism(U, eps).value
        assert U.value(randomized_response(k, eps)) >= opt * slack - r.atol
    # just outside each regime the mechanism is strictly worse than optimal
    eps = r.eps_bin_bracket[1]
    assert U.value(binary_for(U, eps)) < optimal_mechanism(U, eps).value * slack - r.atol
    eps = r.eps_rr_bracket[0]
    assert U.value(randomized_response(k, eps)) < optimal_mechanism(U, eps).value * slack - r.atol


def test_regime_thresholds_edge_cases():
    P0, P1 = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    # total variation: binary optimal everywhere (Kairouz et al. 2014, Sec. 3.2)
    tv = regime_thresholds(TotalVariation(P0, P1), eps_grid=np.geomspace(0.01, 20, 12))
    assert tv.eps_bin == math.inf
    # k = 2: binary and randomized response are the same mechanism, optimal everywhere
    two = regime_thresholds(KL([0.7, 0.3], [0.4, 0.6]), eps_grid=np.geomspace(0.01, 20, 12))
    assert two.eps_bin == math.inf and two.eps_rr == 0.0
    # a grid entirely inside the intermediate regime
    kl = KL(np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4]))
    full = regime_thresholds(kl)
    mid = math.sqrt(full.eps_bin_bracket[1] * full.eps_rr_bracket[0])
    if full.eps_rr / full.eps_bin > 1.1:
        r = regime_thresholds(kl, eps_grid=[mid])
        assert r.eps_bin == 0.0 and r.eps_rr == math.inf


# --------------------------------------------------------------------- Duchi et al.
@settings(max_examples=25)
@given(seed=SEED, k=st.integers(2, 8), eps=log_uniform(1e-2, 8.0))
def test_duchi_bound_holds_for_optimal_and_random_mechanisms(seed, k, eps):
    """D_kl(M0||M1) + D_kl(M1||M0) <= 4 (e^eps - 1)^2 ||P0 - P1||_TV^2 for every eps-LDP Q."""
    P0, P1 = priors(seed, k)
    bound = duchi_bound(P0, P1, eps)
    rng = np.random.default_rng(seed + 1)
    mechs = [optimal_mechanism(KL(P0, P1), eps).mechanism, optimal_mechanism(KL(P1, P0), eps).mechanism]
    mechs += library_mechanisms(rng, k, eps, KL(P0, P1))
    for mech in mechs:
        assert symmetrized_kl(P0, P1, mech) <= bound * (1 + 1e-9) + FLOOR
    # the strongest test: the optimum of the symmetrised KL itself, an f-divergence with
    # f(t) = (t - 1) log t (Jeffreys), over all eps-LDP mechanisms
    jeffreys = FDivergence(P0, P1, lambda t: (t - 1.0) * np.log(np.where(t > 0, t, 1.0)))
    best = optimal_mechanism(jeffreys, eps)
    assert best.value == pytest.approx(symmetrized_kl(P0, P1, best.mechanism), rel=1e-9, abs=FLOOR)
    assert best.bound <= bound * (1 + 1e-9) + FLOOR


# --------------------------------------------------------------------- mutual information
@settings(max_examples=15)
@given(seed=SEED, k=st.integers(2, 8))
def test_mutual_information_small_eps_bound_is_the_asymptote(seed, k):
    """I(X;Y) <= (1/2) eps^2 max_A P(A) P(A^c) + O(eps^3) (Kairouz et al. 2014, Sec. 4): OPT_MI / bound -> 1
    as eps -> 0, at rate O(eps)."""
    (P,) = priors(seed, k, n=1, floor=0.05)
    U = MutualInformation(P)
    gaps = []
    for eps in (0.1, 0.03, 0.01, 0.003):
        ratio = optimal_mechanism(U, eps).value / mi_small_eps_bound(P, eps)
        gaps.append(abs(ratio - 1.0))
        assert abs(ratio - 1.0) <= eps
    assert gaps[-1] < gaps[0]


# --------------------------------------------------------------------- OPT dominates
UTILITY_KINDS = ["kl", "tv", "chi_square", "hellinger", "mi"]


def make_utility(which: str, P0: np.ndarray, P1: np.ndarray):
    return (
        {"kl": KL, "tv": TotalVariation, "chi_square": ChiSquare, "hellinger": Hellinger}[which](P0, P1)
        if which != "mi"
        else MutualInformation(P0)
    )


@settings(max_examples=100)
@given(seed=SEED, k=st.integers(2, 7), eps=log_uniform(5e-2, 10.0), which=st.sampled_from(UTILITY_KINDS))
def test_optimal_dominates_every_mechanism_the_library_builds(seed, k, eps, which):
    P0, P1 = priors(seed, k)
    U = make_utility(which, P0, P1)
    res = optimal_mechanism(U, eps)
    assert res.status == "optimal"
    mech = res.mechanism
    assert mech.epsilon() <= eps * (1 + 1e-9)
    assert mech.m <= k
    assert res.value <= res.bound * (1 + 1e-9) + FLOOR
    rng = np.random.default_rng(seed + 7)
    for other in library_mechanisms(rng, k, eps, U):
        val = U.value(other)
        assert val <= res.value * (1 + 1e-9) + FLOOR, (other, val, res.value)
        assert val <= res.bound * (1 + 1e-9) + FLOOR


@settings(max_examples=60)
@given(seed=SEED, k=st.integers(2, 14), eps=log_uniform(1e-2, 40.0), which=st.sampled_from(UTILITY_KINDS))
def test_optimal_mechanism_is_exactly_private_with_at_most_k_outputs(seed, k, eps, which):
    P0, P1 = priors(seed, k)
    res = optimal_mechanism(make_utility(which, P0, P1), eps)
    assert res.mechanism.epsilon() <= eps * (1 + 1e-9)
    assert res.mechanism.is_private(eps)
    assert res.mechanism.m <= k
    np.testing.assert_allclose(res.mechanism.matrix.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@settings(max_examples=40)
@given(seed=SEED, k=st.integers(2, 12), eps=log_uniform(5e-2, 12.0), which=st.sampled_from(UTILITY_KINDS))
def test_column_generation_equals_the_full_lp(seed, k, eps, which):
    P0, P1 = priors(seed, k)
    U = make_utility(which, P0, P1)
    full = optimal_mechanism(U, eps, method="full")
    cg = optimal_mechanism(U, eps, method="column_generation")
    assert full.status == cg.status == "optimal"
    assert cg.value == pytest.approx(full.value, rel=1e-7, abs=FLOOR)
    assert cg.bound >= full.value * (1 - 1e-9) - FLOOR
    assert cg.mechanism.epsilon() <= eps * (1 + 1e-9) and cg.mechanism.m <= k
