"""The accountant for mixed mechanisms (ldpsim.privacy.accountant) and the dominating pairs
behind it (Guarantee.dominating_pld, grid_pld, hull_pld).

References are computed independently of the code under test: closed forms (Kairouz, Oh
and Viswanath 2015 through optimal_delta / optimal_delta_heterogeneous, which the suite
checks against brute force and mpmath elsewhere; mu-GDP composition), products of output
distributions enumerated by brute force (tests/privacy/oracles.py), a 30-digit mpmath
integral for two uses of Laplace noise, and for mixed lists the exact sum over the
enumerated finite outcomes of the GDP profile at the shifted eps.

Tolerances (relative, in delta):

* exact paths: 1e-12 against closed forms and brute force (1e-10 for random (eps, delta)
  lists, whose sums run over up to a few thousand atoms);
* pessimistic paths: never below the exact value (1e-12 slack for rounding) and at most
  1e-3 above it at delta 1e-3 and 1e-6 for k <= 100 Gaussian uses (the default step's
  measured error is <= 6e-4 there; 1.5e-3 at delta 1e-10); 2e-4 for two uses of Laplace noise
  (measured <= 1.1e-4); 1e-3 for the mixed lists.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import ndtr

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog, from_matrix, randomized_response
from ldpsim.mechanisms.noise import Gaussian, Laplace
from ldpsim.privacy import (
    GDP,
    Accountant,
    DeltaCurve,
    EpsDelta,
    OptimalComposition,
    PLDGuarantee,
    optimal_delta,
    optimal_delta_heterogeneous,
    optimal_epsilon,
    optimal_epsilon_heterogeneous,
)
from ldpsim.privacy.guarantees import grid_pld, hull_pld

from .oracles import hockey_stick, product, quaternary_rows

EXACT = 1e-12


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-300)


# --------------------------------------------------------------------------- independent references
def rr_rows(k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows x = 0 and x' = 1 of k-ary randomized response, written out by hand."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    other = 1.0 / (math.exp(eps) + k - 1)
    p = np.full(k, other)
    p[0] = keep
    r = np.full(k, other)
    r[1] = keep
    return p, r


def oue_rows(k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Optimised unary encoding on inputs 0 and 1, over all 2^k bit vectors."""
    q = 1.0 / (math.exp(eps) + 1.0)
    bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1

    def law(x):
        prob = np.where(np.arange(k) == x, 0.5, q)
        return np.prod(np.where(bits == 1, prob, 1 - prob), axis=1)

    return law(0), law(1)


def hull_pair(Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pair whose outcomes are the segments of the lower convex hull of all ordered
    pairs' trade-off polygons of the matrix ``Q``, built from scratch (sort by likelihood
    ratio, monotone chain)."""
    pts = []
    for a in range(Q.shape[0]):
        for b in range(Q.shape[0]):
            if a == b:
                continue
            p, r = Q[a], Q[b]
            order = np.argsort(-(r / p))  # reject P where R/P is largest first
            alpha = np.concatenate([[0.0], np.cumsum(p[order])])
            beta = np.concatenate([[1.0], 1.0 - np.cumsum(r[order])])
            pts += list(zip(alpha, beta))
    pts = sorted(set(pts))
    hull: list[tuple[float, float]] = []
    for q in pts:
        while len(hull) >= 2:
            (ax, ay), (bx, by) = hull[-2], hull[-1]
            if (bx - ax) * (q[1] - ay) - (by - ay) * (q[0] - ax) <= 0:
                hull.pop()
            else:
                break
        hull.append(q)
    h = np.array(hull)
    P = np.diff(h[:, 0])
    R = -np.diff(h[:, 1])
    keep = (P > 1e-15) | (R > 1e-15)
    return P[keep], R[keep]


def gdp_shifted(mu: float, t: np.ndarray) -> np.ndarray:
    """E[(1 - e^{t - L})_+] for the loss L ~ N(mu^2/2, mu^2) of mu-GDP, any real t."""
    return ndtr(-t / mu + mu / 2) - np.exp(t) * ndtr(-t / mu - mu / 2)


def laplace2_exact(mu: float, eps: float) -> float:
    """delta(eps) of two uses of Laplace noise (mu = sensitivity / scale), 30 digits. The
    loss of one use is +mu with P-mass 1/2, -mu with e^-mu / 2, and has density
    e^{-(mu - l)/2} / 4 on (-mu, mu); the sum of two continuous parts has density
    e^{-(2 mu - t)/2} (2 mu - |t|) / 16 on (-2 mu, 2 mu)."""
    mp.mp.dps = 30
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    atoms = [(mu, mp.mpf(1) / 2), (-mu, mp.exp(-mu) / 2)]

    def g(l):
        return mp.exp(-(mu - l) / 2) / 4

    def f(s):
        return max(mp.mpf(0), 1 - mp.exp(eps - s))

    tot = sum(m1 * m2 * f(l1 + l2) for l1, m1 in atoms for l2, m2 in atoms)
    for l1, m1 in atoms:
        lo = max(-mu, eps - l1)
        if lo < mu:
            tot += 2 * m1 * mp.quad(lambda l, l1=l1: g(l) * (1 - mp.exp(eps - l1 - l)), [lo, mu])
    lo = max(-2 * mu, eps)
    if lo < 2 * mu:
        pts = [lo, 0, 2 * mu] if lo < 0 else [lo, 2 * mu]
        tot += mp.quad(lambda t: mp.exp(-(2 * mu - t) / 2) * (2 * mu - abs(t)) / 16 * (1 - mp.exp(eps - t)), pts)
    return float(tot)


# --------------------------------------------------------------------------- dominating pairs
@pytest.mark.parametrize(
    "mech",
    [
        randomized_response(4, 1.0),
        randomized_response(2, 3.0),
        catalog.build("oue", k=6, eps=1.5),
        catalog.build("sue", k=5, eps=2.0),
        catalog.build("hadamard_response", k=5, eps=1.0),
        *[from_matrix(np.random.default_rng(seed).dirichlet(np.ones(5), size=4)) for seed in (1, 2, 3)],
    ],
    ids=lambda m: repr(m)[:30],
)
def test_finite_dominating_pair_is_exact(mech):
    g = mech.guarantee()
    pld = g.dominating_pld(1.0, 0.0)
    top = max(float(p.loss.max()) for p in g.plds)
    grid = np.unique(np.concatenate([np.linspace(0, 1.05 * top, 200), [l for p in g.plds for l in p.loss if l >= 0]]))
    want = np.asarray(g.delta(grid))
    got = np.asarray(pld.delta(grid))
    assert np.all(rel(got, want)[want > 1e-300] <= EXACT)
    # a valid pair, the same trade-off as the guarantee's hull, symmetric
    assert math.isclose(np.exp(pld.log_p).sum() + pld.p_inf, 1.0, abs_tol=1e-12)
    assert math.isclose(np.exp(pld.log_r).sum() + pld.r_inf, 1.0, abs_tol=1e-12)
    a = np.linspace(0, 1, 101)
    assert np.allclose(pld.tradeoff(a), g.tradeoff(a), atol=1e-12)
    assert np.allclose(pld.swap().delta(grid), got, rtol=1e-12, atol=1e-300)


def test_hull_pair_of_a_mechanism_without_a_dominating_pair():
    # this matrix's hull has bridges: no pair of inputs dominates the others
    Q = np.random.default_rng(2).dirichlet(np.ones(5), size=4)
    g = from_matrix(Q).guarantee()
    P, R = hull_pair(Q)
    grid = np.linspace(0, 6, 61)
    want = [hockey_stick(P, R, e) for e in grid]
    assert np.all(rel(hull_pld(g.plds).delta(grid), want) <= 1e-12)
    # one use: delta is the largest pair's (conjugate of the hull); two uses: the hull pair's
    # product is worse than every product of two real pairs somewhere (by 23% here)
    pairs = [(a, b) for a in range(4) for b in range(4) if a != b]
    twice = [hockey_stick(np.outer(P, P).ravel(), np.outer(R, R).ravel(), e) for e in grid]
    best = np.max(
        [
            [hockey_stick(np.outer(Q[a], Q[c]).ravel(), np.outer(Q[b], Q[d]).ravel(), e) for e in grid]
            for a, b in pairs
            for c, d in pairs
        ],
        axis=0,
    )
    assert np.all(np.asarray(twice) >= best - 1e-14) and np.max(np.asarray(twice) / np.maximum(best, 1e-300)) > 1.2
    acc = Accountant([(from_matrix(Q), 2)])
    assert np.all(rel(acc.delta(grid), twice)[np.asarray(twice) > 0] <= 1e-12)


def test_eps_delta_and_optimal_composition_pairs_are_exact():
    e = np.linspace(0, 3, 31)
    assert np.all(rel(EpsDelta(0.7, 0.01).dominating_pld(1.0, 0.0).delta(e), EpsDelta(0.7, 0.01).delta(e)) <= EXACT)
    oc = OptimalComposition(0.3, 1e-4, 12)
    assert np.all(rel(oc.dominating_pld(1.0, 0.0).delta(e), optimal_delta(0.3, 1e-4, 12, e)) <= EXACT)


@pytest.mark.parametrize(
    "g, step, eps_max",
    [
        (GDP(1.0), 0.01, 40.0),
        (GDP(0.1), 0.001, 4.5),
        (Laplace(1.0).guarantee(), 0.01, 1.0),
        (Gaussian(0.2).guarantee(), 0.05, 200.0),
    ],
    ids=["gdp1", "gdp0.1", "laplace", "gaussian-mu5"],
)
def test_grid_pld_is_exact_on_the_grid_and_pessimistic_between(g, step, eps_max):
    pld = grid_pld(g.log_delta, step, eps_max)
    grid = np.arange(round(eps_max / step) + 1)[::7] * step  # every 7th grid point
    want = np.asarray(g.log_delta(grid))
    got = np.asarray(pld.log_delta(grid))
    fine = want > -690  # the mass at infinite loss is a double: exact down to 1e-300
    assert np.all(np.abs(got[fine] - want[fine]) <= 1e-12 * np.maximum(1, np.abs(want[fine])))
    between = np.random.default_rng(0).uniform(0, eps_max, 200)
    w, h = np.asarray(g.delta(between)), np.asarray(pld.delta(between))
    assert np.all(h >= w * (1 - EXACT))
    assert np.all(h <= w * 1.02 + 1e-300)  # the chord gap: (step |d log delta / d eps|)^2 / 8, here <= 2%
    assert math.isclose(np.exp(pld.log_p).sum() + pld.p_inf, 1.0, abs_tol=1e-12)
    assert math.isclose(np.exp(pld.log_r).sum() + pld.r_inf, 1.0, abs_tol=1e-12)


def test_grid_pld_of_a_non_convex_curve_is_its_largest_profile_below():
    # a "curve" with a kink the wrong way: the hull drops the point above, never raises delta
    pts = {0.0: 0.5, 0.5: 0.45, 1.0: 0.1, 1.5: 0.0}
    curve = DeltaCurve(lambda e: np.interp(e, list(pts), list(pts.values())))
    pld = curve.dominating_pld(0.5, 1.5)
    got = pld.delta(np.array(list(pts)))
    assert np.all(got <= np.array(list(pts.values())) + 1e-15)
    assert got[0] == pytest.approx(0.5, rel=EXACT) and got[2] == pytest.approx(0.1, rel=EXACT)


def test_grid_pld_errors_name_the_parameter():
    with pytest.raises(LdpSimError, match="step: got 0"):
        grid_pld(GDP(1.0).log_delta, 0.0, 1.0)
    with pytest.raises(LdpSimError, match="eps_max: got"):
        grid_pld(GDP(1.0).log_delta, 0.1, float("inf"))
    with pytest.raises(LdpSimError, match="step: got"):
        grid_pld(GDP(1.0).log_delta, 1e-9, 100.0)
    with pytest.raises(LdpSimError, match="delta: got"):
        grid_pld(lambda e: np.full(e.shape, np.nan), 0.1, 1.0)


# --------------------------------------------------------------------------- exact compositions
@pytest.mark.parametrize("eps, delta, k", [(1.0, 0.0, 1), (0.3, 1e-5, 7), (0.1, 1e-3, 50), (0.01, 1e-12, 1000)])
def test_homogeneous_pairs_equal_optimal_composition(eps, delta, k):
    acc = Accountant([((eps, delta), k)])
    grid = np.linspace(0, k * eps * 1.05, 25)
    assert acc.exact
    assert np.all(rel(acc.delta(grid), optimal_delta(eps, delta, k, grid)) <= EXACT)
    floor = 1 - (1 - delta) ** k
    for t in (floor + (1 - floor) * x for x in (1e-4, 1e-2, 0.2)):
        # eps solves delta(eps) = t: where delta is flat, rounding in delta moves eps further
        assert acc.epsilon(t) == pytest.approx(optimal_epsilon(eps, delta, k, t), rel=1e-9, abs=1e-15)


def test_heterogeneous_pairs_equal_the_optimum():
    eps, deltas = [1.0, 0.5, 0.5], [1e-6, 0.0, 0.0]
    acc = Accountant([(1.0, 1e-6), (0.5, 0.0), (0.5, 0.0)])
    grid = np.linspace(0, 2.2, 23)
    assert np.all(rel(acc.delta(grid), optimal_delta_heterogeneous(eps, deltas, grid)) <= EXACT)
    assert acc.epsilon(1e-5) == optimal_epsilon_heterogeneous(eps, deltas, 1e-5)
    assert acc.items[1][1] == 2  # equal items grouped


pair = st.tuples(
    st.floats(0.01, 2.0),
    st.sampled_from([0.0, 1e-9, 1e-5, 0.01]),
    st.integers(1, 6),
)


@given(st.lists(pair, min_size=1, max_size=4))
def test_random_pair_lists_equal_the_heterogeneous_optimum(items):
    acc = Accountant()
    eps_list, delta_list = [], []
    for e, d, k in items:
        acc.add((e, d), times=k)
        eps_list += [e] * k
        delta_list += [d] * k
    top = sum(eps_list)
    grid = np.linspace(0, 1.05 * top, 12)
    want = optimal_delta_heterogeneous(eps_list, delta_list, grid)
    assert np.all(rel(acc.delta(grid), want) <= 1e-10)
    floor = 1 - np.prod(1 - np.array(delta_list))
    for t in (floor + 1e-4, floor + 0.05):
        assert acc.epsilon(t) == pytest.approx(
            optimal_epsilon_heterogeneous(eps_list, delta_list, t), rel=1e-10, abs=1e-12
        )


@pytest.mark.parametrize("k_rr, eps, times", [(3, 1.0, 4), (2, 0.5, 6), (5, 2.0, 3)])
def test_k_fold_randomized_response_equals_brute_force(k_rr, eps, times):
    p, r = rr_rows(k_rr, eps)
    P, R = product(p, times), product(r, times)
    acc = Accountant([(randomized_response(k_rr, eps), times)])
    grid = np.linspace(0, times * eps * 1.05, 30)
    want = [hockey_stick(P, R, e) for e in grid]
    assert acc.exact
    assert np.all(rel(acc.delta(grid), want)[np.array(want) > 0] <= EXACT)


def test_two_fold_oue_and_a_finite_mechanism_equal_brute_force():
    p, r = oue_rows(4, 1.0)
    Q = np.random.default_rng(2).dirichlet(np.ones(5), size=4)
    hp, hr = hull_pair(Q)
    P = np.outer(product(p, 2), hp).ravel()
    R = np.outer(product(r, 2), hr).ravel()
    acc = Accountant([(catalog.build("oue", k=4, eps=1.0), 2), from_matrix(Q)])
    grid = np.linspace(0, 5, 26)
    want = [hockey_stick(P, R, e) for e in grid]
    assert acc.exact
    assert np.all(rel(acc.delta(grid), want)[np.array(want) > 0] <= EXACT)


def test_k_fold_gdp_is_its_closed_form_on_the_lattice():
    acc = Accountant([(GDP(0.5), 16)])
    exact = GDP(2.0)
    h = acc.step
    grid = np.arange(0, 1200) * h
    want = np.asarray(exact.delta(grid))
    ok = want > 1e-300
    assert np.all(rel(acc.delta(grid), want)[ok] <= EXACT)
    between = grid[:-1] + 0.37 * h
    got, want = np.asarray(acc.delta(between)), np.asarray(exact.delta(between))
    assert np.all(got >= want * (1 - EXACT)) and np.all(got <= want * (1 + 1e-3) + 1e-300)


# --------------------------------------------------------------------------- pessimistic compositions
@pytest.mark.parametrize("sigma", [0.3, 1.0, 10.0])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_gaussian_mechanism_composition_is_pessimistic_and_close(sigma, k):
    acc = Accountant([(Gaussian(sigma), k)])
    exact = GDP(math.sqrt(k) / sigma)  # k uses of N(0, sigma^2), sensitivity 1
    assert not acc.exact
    for d, tol in ((1e-3, 1e-3), (1e-6, 1e-3), (1e-10, 1.5e-3)):
        e = exact.epsilon(d)
        ratio = acc.delta(e) / exact.delta(e)
        assert 1 - EXACT <= ratio <= 1 + tol, (d, ratio)
        assert acc.epsilon(d) >= e * (1 - EXACT)


def test_far_tails_and_large_eps_stay_in_log_space():
    acc = Accountant([(Gaussian(1.0), 4)])  # exactly 2-GDP
    exact = GDP(2.0)
    e = 76.0  # delta ~ 1e-300
    want = float(exact.log_delta(e))
    got = float(acc.log_delta(e))
    assert want < -680 and want - 1e-12 <= got <= want + 0.02
    acc = Accountant([(Gaussian(0.05), 2)])  # mu = 20 per use: eps in the hundreds
    exact = GDP(20 * math.sqrt(2))
    e = exact.epsilon(1e-6)
    assert e > 500
    assert 1 - EXACT <= acc.delta(e) / 1e-6 <= 1 + 1e-3


def test_two_uses_of_laplace_noise_against_the_mpmath_integral():
    eps0 = 1.0
    acc = Accountant([(Laplace(1 / eps0), 2)])
    grid = np.linspace(0.0, 1.95, 14)
    want = np.array([laplace2_exact(eps0, e) for e in grid])
    ratio = np.asarray(acc.delta(grid)) / want
    assert np.all(ratio >= 1 - EXACT) and np.all(ratio <= 1 + 2e-4)
    assert acc.delta(2.0) == 0.0  # the pure eps 2 eps0 is on the lattice: nothing above it


def test_mixed_list_against_the_exact_sum():
    # 2 x 3-ary RR(1) + 3 x Gaussian(sigma = 2) + (0.5, 1e-4): the finite part enumerated,
    # the Gaussian part exactly sqrt(3)/2-GDP, whose loss is N(mu^2/2, mu^2)
    p, r = rr_rows(3, 1.0)
    qp, qr = quaternary_rows(0.5, 1e-4)
    P = np.outer(product(p, 2), qp).ravel()
    R = np.outer(product(r, 2), qr).ravel()
    mu = math.sqrt(3) / 2
    pos = (P > 0) & (R > 0)
    loss = np.log(P[pos] / R[pos])
    p_inf = P[(P > 0) & (R == 0)].sum()

    def exact(e):
        return p_inf + float(np.sum(P[pos] * gdp_shifted(mu, e - loss)))

    acc = Accountant([(randomized_response(3, 1.0), 2), (Gaussian(2.0), 3), (0.5, 1e-4)])
    assert not acc.exact
    for e in np.linspace(0.0, 6.0, 13):
        ratio = acc.delta(e) / exact(e)
        assert 1 - EXACT <= ratio <= 1 + 1e-3, (e, ratio)


def test_delta_error_bounds_the_actual_error():
    acc = Accountant([(Gaussian(1.0), 30)])
    exact = GDP(math.sqrt(30))
    e = exact.epsilon(1e-6)
    actual = acc.delta(e) - exact.delta(e)
    est = acc.delta_error(e)
    assert actual > 0 and actual <= est <= 10 * actual
    assert acc.epsilon_error(1e-6) >= acc.epsilon(1e-6) - exact.epsilon(1e-6) > 0
    assert Accountant([(1.0, 0.0)]).delta_error(0.5) == 0.0


def test_exact_items_beyond_max_atoms_go_on_the_lattice():
    rr = randomized_response(4, 1.0)
    exact = Accountant([(rr, 40)])
    small = Accountant([(rr, 40)], max_atoms=50)
    grid = np.linspace(0, 40, 21)
    assert small.exact and small.step == 1.0 and small.notes  # losses on the lattice of step 1: still exact
    assert np.all(rel(small.delta(grid), exact.delta(grid))[exact.delta(grid) > 1e-300] <= 1e-9)
    mixed = [(randomized_response(2, 1.0), 12), (randomized_response(2, math.sqrt(2)), 12)]
    want = Accountant(mixed).delta(grid)
    got = Accountant(mixed, max_atoms=20).delta(grid)
    assert np.all(got >= want * (1 - EXACT)) and np.all(got <= want * 1.01 + 1e-300)


# --------------------------------------------------------------------------- the API
def test_items_grouping_and_the_guarantee():
    rr = randomized_response(2, 1.0)
    acc = Accountant([rr, (rr, 2), (1.0, 1e-6)]).add(EpsDelta(1.0, 1e-6), times=2).add(rr.guarantee())
    assert acc.compositions == 7
    counts = sorted(k for _, k in acc.items)
    assert counts[-1] == 3  # the (1, 1e-6) pair and the EpsDelta are one group
    g = acc.guarantee()
    assert isinstance(g, PLDGuarantee)
    grid = np.linspace(0, 7, 15)
    assert np.allclose(g.delta(grid), acc.delta(grid), rtol=EXACT, atol=0)
    a = np.linspace(0, 1, 11)
    assert np.all(np.diff(g.tradeoff(a)) <= 1e-15)
    from matplotlib.figure import Figure

    from ldpsim.report.regions import plot_regions

    plot_regions([g, GDP(1.0)], Figure().subplots())


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda: Accountant().delta(1.0), "items: got 'nothing'"),
        (lambda: Accountant(["gaussian"]), "item: got 'gaussian'"),
        (lambda: Accountant().add((1.0, 0.0), times=0), "times: got 0"),
        (lambda: Accountant([(-1.0, 0.0)]), "eps: got -1"),
        (lambda: Accountant([(1.0, 2.0)]), "delta: got 2"),
        (lambda: Accountant(step=-0.1), "step: got -0.1"),
        (lambda: Accountant([(1.0, 0.0)]).epsilon(1.5), "delta: got 1.5"),
        (lambda: Accountant([(1.0, 0.0)]).delta(-1.0), "eps: got -1"),
    ],
)
def test_errors_name_the_parameter(make, needle):
    with pytest.raises(LdpSimError) as info:
        make()
    assert needle in str(info.value) and "\n" not in str(info.value)
