"""Utilities: per-column mu, the pattern formula from subset sums, values against direct
divergence formulas, numerical edge cases, and the LP certificate checked by brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ldpsim import LdpSimError
from ldpsim.mechanisms import pattern_bits, quaternary_mechanism, randomized_response
from ldpsim.utility import (
    KL,
    ChiSquare,
    FDivergence,
    Hellinger,
    MutualInformation,
    TotalVariation,
    f_divergence,
    kl_divergence,
    mutual_information,
    optimal_mechanism,
    tv_distance,
)


def priors(seed: int, k: int):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def all_utilities(p0, p1):
    return [
        KL(p0, p1),
        TotalVariation(p0, p1),
        ChiSquare(p0, p1),
        Hellinger(p0, p1),
        FDivergence(p0, p1, lambda t: (t - 1.0) ** 4 / (1.0 + t)),
        MutualInformation(p0),
    ]


def direct_value(u, q):
    """The utility from its definition on the induced distributions, written independently."""
    if isinstance(u, MutualInformation):
        joint = u.P[:, None] * q
        m = joint.sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.nansum(np.where(joint > 0, joint * np.log(joint / (u.P[:, None] * m[None, :])), 0.0)))
    m0, m1 = u.P0 @ q, u.P1 @ q
    if isinstance(u, KL):
        return float(np.sum(m0 * np.log(m0 / m1)))
    if isinstance(u, TotalVariation):
        return float(0.5 * np.abs(m0 - m1).sum())
    if isinstance(u, ChiSquare):
        return float(np.sum((m0 - m1) ** 2 / m1))
    if isinstance(u, Hellinger):
        return float(np.sum((np.sqrt(m0) - np.sqrt(m1)) ** 2))
    return float(np.sum(m1 * ((m0 / m1 - 1.0) ** 4 / (1.0 + m0 / m1))))


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 9), eps=st.floats(0.0, 50.0))
@example(seed=0, k=2, eps=21.70433785084716)  # found by the explore profile
def test_pattern_formula_equals_mu_of_explicit_columns(seed, k, eps):
    p0, p1 = priors(seed, k)
    codes = np.arange(1 << k)
    cols = math.exp(-eps) + (-math.expm1(-eps)) * pattern_bits(codes, k).T.astype(float)
    for u in all_utilities(p0, p1):
        sums = u.weights @ pattern_bits(codes, k).T.astype(float)
        want = u.mu(cols)
        # a pattern whose exact mu is 0 (all ones) comes out as a rounding of O(max mu) terms:
        # the absolute tolerance scales with the largest mu (explore found 3.6e-15 at eps = 21.7)
        np.testing.assert_allclose(
            u.pattern_mu(sums, eps), want, rtol=1e-9, atol=1e-13 * max(1.0, float(np.max(np.abs(want))))
        )


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 7), m=st.integers(1, 7))
def test_values_equal_the_definitions(seed, k, m):
    rng = np.random.default_rng(seed)
    p0, p1 = priors(seed + 1, k)
    q = rng.dirichlet(np.ones(m), size=k)
    for u in all_utilities(p0, p1):
        assert u.value(q) == pytest.approx(direct_value(u, q), rel=1e-9, abs=1e-15), u.name
    assert KL(p0, p1).value(q) == pytest.approx(kl_divergence(p0 @ q, p1 @ q), rel=1e-12)
    assert TotalVariation(p0, p1).value(q) == pytest.approx(tv_distance(p0 @ q, p1 @ q), rel=1e-12)
    assert MutualInformation(p0).value(q) == pytest.approx(mutual_information(p0, q), rel=1e-9, abs=1e-15)
    assert KL(p0, p1).value(q) == pytest.approx(f_divergence(p0 @ q, p1 @ q, lambda t: t * np.log(t)), rel=1e-9)


def test_identity_and_constant_mechanisms():
    p0, p1 = priors(3, 5)
    eye = np.eye(5)
    assert KL(p0, p1).value(eye) == pytest.approx(kl_divergence(p0, p1), rel=1e-12)
    assert KL(p0, p1).prior_divergence() == pytest.approx(kl_divergence(p0, p1), rel=1e-12)
    entropy = -np.sum(p0 * np.log(p0))
    assert MutualInformation(p0).value(eye) == pytest.approx(entropy, rel=1e-12)
    const = np.tile([0.2, 0.8], (5, 1))
    for u in all_utilities(p0, p1):
        assert u.value(const) == pytest.approx(0.0, abs=1e-15)


def test_stable_at_large_eps_and_tiny_probabilities():
    p0 = np.array([1 - 2e-300, 1e-300, 1e-300])
    p1 = np.array([1e-300, 1e-300, 1 - 2e-300])
    for eps in [1e-9, 1.0, 50.0]:
        rr = randomized_response(3, eps)
        for u in all_utilities(p0, p1):
            val = u.value(rr)
            assert math.isfinite(val) and val >= 0, (u.name, eps, val)
    # zeros in a mechanism: 0 log 0 = 0, and an infinite divergence is inf, not NaN
    q = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    assert math.isfinite(KL(p0, p1).value(q))
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert KL(p0, p1).divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert mutual_information([0.5, 0.5], quaternary_mechanism(1.0, 0.0)) >= 0


@pytest.mark.parametrize("k", [3, 5, 8])
@pytest.mark.parametrize("eps", [0.05, 0.7, 3.0, 20.0])
def test_certificate_holds_for_every_pattern(k, eps):
    """The dual vector bounds mu on every pattern (checked on explicit columns), so its sum
    bounds every eps-LDP mechanism's utility; the LP attains it."""
    p0, p1 = priors(10 * k, k)
    for u in all_utilities(p0, p1):
        res = optimal_mechanism(u, eps)
        codes = np.arange(1 << k)
        cols = math.exp(-eps) + (-math.expm1(-eps)) * pattern_bits(codes, k).T.astype(float)
        slack = u.mu(cols) - res.dual @ cols
        assert slack.max() <= 1e-9 * max(1.0, res.value), u.name
        assert res.bound == pytest.approx(res.value, rel=1e-8, abs=1e-14)
        assert res.mechanism.m <= k and res.mechanism.epsilon() <= eps * (1 + 1e-9)
        assert res.status == "optimal"


def test_eps_zero_gives_zero_utility():
    p0, p1 = priors(1, 4)
    res = optimal_mechanism(KL(p0, p1), 0.0)
    assert res.value == pytest.approx(0.0, abs=1e-30) and res.mechanism.m == 1


BAD = {
    "zero prior entry": (lambda: KL([0.5, 0.5, 0.0], [0.2, 0.3, 0.5]), "P0"),
    "negative prior": (lambda: TotalVariation([1.2, -0.2], [0.5, 0.5]), "P0"),
    "prior sum": (lambda: MutualInformation([0.5, 0.6]), "P"),
    "equal priors": (lambda: KL([0.3, 0.7], [0.3, 0.7]), "P1"),
    "one category": (lambda: MutualInformation([1.0]), "P"),
    "f(1) != 0": (lambda: FDivergence([0.3, 0.7], [0.6, 0.4], lambda t: t), "f"),
    "not a utility": (lambda: optimal_mechanism("kl", 1.0), "utility"),
    "eps negative": (lambda: optimal_mechanism(KL([0.3, 0.7], [0.6, 0.4]), -1.0), "eps"),
    "unknown method": (lambda: optimal_mechanism(KL([0.3, 0.7], [0.6, 0.4]), 1.0, method="magic"), "method"),
    "full LP too large": (lambda: optimal_mechanism(KL(*priors(0, 16)), 1.0, method="full"), "k"),
    "too large for memory and time": (lambda: optimal_mechanism(MutualInformation(np.full(31, 1 / 31)), 1.0), "k"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input(case):
    call, name = BAD[case]
    with pytest.raises(LdpSimError) as info:
        call()
    assert str(info.value).startswith(name + ":"), str(info.value)


def test_too_large_requests_say_what_to_do():
    with pytest.raises(LdpSimError, match="column_generation"):
        optimal_mechanism(KL(*priors(0, 16)), 1.0, method="full")
    with pytest.raises(LdpSimError, match="better_of_binary_and_rr"):
        optimal_mechanism(MutualInformation(np.full(31, 1 / 31)), 1.0)


@pytest.mark.parametrize("eps", [1e-8, 1e-5, 1e-2, 1.0, 30.0])
def test_kl_value_keeps_relative_accuracy_at_tiny_eps(eps):
    """KL of the binary mechanism against its closed form (itself checked against 50-digit
    arithmetic in test_bounds): the value is summed as M1 phi((M0 - M1)/M1) with M0 - M1
    computed directly, so it keeps relative accuracy where a log(a/c) would cancel. The
    matrix entries themselves are rounded to 1e-16, which bounds what is reachable:
    relative 1e-16 / eps."""
    from ldpsim.mechanisms import binary_mechanism_for_priors
    from ldpsim.utility.bounds import binary_kl

    p0, p1 = priors(3, 5)
    got = KL(p0, p1).value(binary_mechanism_for_priors(p0, p1, eps))
    assert got == pytest.approx(binary_kl(p0, p1, eps), rel=max(1e-12, 1e-7 * 1e-8 / eps))


@pytest.mark.parametrize("d", [1e-3, 1e-6, 1e-9, 1e-12, 1e-15])
def test_kl_divergence_keeps_its_relative_precision_between_nearly_equal_distributions(d):
    # The reference is the divergence of the two distributions the floats stand for: the
    # exact sum of p log(p/q) minus the rounding of the entries' sums (which is zero for
    # distributions), in 50-digit arithmetic; about 2 d^2 (1 + ...) for these pairs.
    import mpmath as mp

    q = np.array([0.25, 0.25, 0.5])
    p = np.array([0.25 + d, 0.25 - 2 * d, 0.5 + d])
    with mp.workdps(50):
        a, b = [mp.mpf(float(x)) for x in p], [mp.mpf(float(x)) for x in q]
        ref = mp.fsum(x * mp.log(x / y) for x, y in zip(a, b)) - (mp.fsum(a) - mp.fsum(b))
    got = kl_divergence(p, q)
    assert got > 0 and got == pytest.approx(float(ref), rel=1e-12)
    assert kl_divergence(q, q) == 0.0


def test_kl_divergence_edge_cells():
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(math.log(2), rel=1e-15)
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert kl_divergence([0.0, 1.0], [0.0, 1.0]) == 0.0
