"""Guarantee objects: each view against an independent computation, and the conversions."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import binary_mechanism, quaternary_mechanism, randomized_response
from ldpsim.privacy import GDP, DeltaCurve, EpsDelta, OptimalComposition, PLDGuarantee, TradeOff

from .oracles import hockey_stick, product, quaternary_rows, tradeoff_lp

ALPHAS = np.array([0.0, 1e-4, 0.01, 0.1, 0.3, 0.5, 0.77, 1.0])


# --------------------------------------------------------------------------- (eps, delta)
@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0, 6), delta=st.floats(0, 0.5), e=st.floats(0, 8))
def test_eps_delta_curve_is_the_quaternary_hockey_stick(eps, delta, e):
    p, r = quaternary_rows(eps, delta)
    assert EpsDelta(eps, delta).delta(e) == pytest.approx(hockey_stick(p, r, e), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("eps, delta", [(0.5, 0.01), (2.0, 0.0), (0.1, 0.2)])
def test_eps_delta_tradeoff_is_the_quaternary_trade_off(eps, delta):
    p, r = quaternary_rows(eps, delta)
    g = EpsDelta(eps, delta)
    for a in ALPHAS:
        assert g.tradeoff(a) == pytest.approx(tradeoff_lp(p, r, a), abs=1e-9)
    # the closed form also equals the region of docs/theory.md sec. 1 written out
    f = np.maximum.reduce([0 * ALPHAS, 1 - delta - np.exp(eps) * ALPHAS, np.exp(-eps) * (1 - delta - ALPHAS)])
    assert np.allclose(g.tradeoff(ALPHAS), f, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.01, 6), delta=st.floats(0, 0.3), t=st.floats(0, 1))
def test_eps_delta_epsilon_inverse(eps, delta, t):
    g = EpsDelta(eps, delta)
    x = g.epsilon(t)
    if t < delta:
        assert x == np.inf
        return
    assert g.delta(x) <= t
    if x > 0:
        assert g.delta(x * (1 - 1e-9)) > t - 1e-12


def test_generic_conjugates_agree_with_exact_views():
    g = EpsDelta(0.8, 0.02)
    a = np.linspace(0, 1, 41)
    # trade-off from the delta curve (numerical conjugate) against the closed form
    numeric = DeltaCurve(g.delta, eps_max=2.0).tradeoff(a)
    assert np.max(np.abs(numeric - g.tradeoff(a))) < 1e-3
    assert np.all(numeric <= g.tradeoff(a) + 1e-12)  # every supporting line is valid
    # delta curve from the trade-off (concave maximisation) against the closed form
    e = np.array([0.0, 0.2, 0.5, 0.79])
    assert np.allclose(TradeOff(g.tradeoff).delta(e), g.delta(e), rtol=1e-8)


# --------------------------------------------------------------------------- GDP
def _gdp_delta_mp(mu: float, eps: float) -> mp.mpf:
    with mp.workdps(80):
        return mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("mu, eps", [(1.0, 0.0), (1.0, 1.0), (0.5, 3.0), (2.0, 10.0), (0.3, 25.0), (1.0, 30.0)])
def test_gdp_delta_matches_mpmath_even_far_below_doubles(mu, eps):
    ref = _gdp_delta_mp(mu, eps)
    assert GDP(mu).log_delta(eps) == pytest.approx(float(mp.log(ref)), rel=1e-9)


def test_gdp_tradeoff_and_composition():
    mu = 1.3
    ref = [
        float(mp.ncdf(mp.sqrt(2) * mp.erfinv(1 - 2 * a) - mu)) if 0 < a < 1 else (1.0 if a == 0 else 0.0)
        for a in ALPHAS
    ]
    assert np.allclose(GDP(mu).tradeoff(ALPHAS), ref, atol=1e-12)
    assert GDP(0.5).compose(9).mu == pytest.approx(1.5)
    assert GDP.composition([0.3, 0.4]).mu == pytest.approx(0.5)
    # delta from the trade-off numerically equals the closed form
    e = np.array([0.0, 0.5, 2.0])
    assert np.allclose(TradeOff(GDP(mu).tradeoff).delta(e), GDP(mu).delta(e), rtol=1e-7)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (0.1, 1e-3), (5.0, 1e-12), (20.0, 1e-100)])
def test_gdp_for_delta_meets_target_within_one_percent(eps, delta):
    g = GDP.for_delta(eps, delta)
    assert float(_gdp_delta_mp(g.mu, eps)) <= delta * (1 + 1e-12)
    assert float(_gdp_delta_mp(g.mu, eps)) >= 0.99 * delta


# --------------------------------------------------------------------------- pairs and mechanisms
@pytest.mark.parametrize(
    "mech",
    [randomized_response(4, 1.0), binary_mechanism(0.7, [0, 2], 3), quaternary_mechanism(0.4, 0.05)],
    ids=["rr", "binary", "quaternary"],
)
def test_mechanism_guarantee_matches_all_pairs_brute_force(mech):
    Q = mech.matrix
    g = mech.guarantee()
    for e in (0.0, 0.3, 1.0):
        ref = max(hockey_stick(Q[i], Q[j], e) for i in range(mech.k) for j in range(mech.k) if i != j)
        assert g.delta(e) == pytest.approx(ref, rel=1e-12, abs=1e-15)
        assert mech.delta(e) == pytest.approx(ref, rel=1e-12, abs=1e-15)
    for a in (0.0, 0.05, 0.4):
        pair = tradeoff_lp(Q[0], Q[1], a)
        assert mech.tradeoff(a, mech.input_labels[0], mech.input_labels[1]) == pytest.approx(pair, abs=1e-9)
        # the symmetric trade-off is below every pair's
        assert (
            g.tradeoff(a)
            <= min(tradeoff_lp(Q[i], Q[j], a) for i in range(mech.k) for j in range(mech.k) if i != j) + 1e-9
        )


def test_pair_guarantee_tradeoff_is_conjugate_to_its_delta():
    rng = np.random.default_rng(5)
    p, r = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    g = PLDGuarantee.from_distributions(p, r)
    a = np.linspace(0, 1, 20001)
    f = g.tradeoff(a)
    for e in (0.0, 0.2, 0.6, 1.5):
        numeric = np.max(1 - np.exp(e) * a - f)
        assert numeric == pytest.approx(max(hockey_stick(p, r, e), hockey_stick(r, p, e)), abs=2e-4)
        assert numeric <= max(hockey_stick(p, r, e), hockey_stick(r, p, e)) + 1e-12


# --------------------------------------------------------------------------- optimal composition
@pytest.mark.parametrize("k", [2, 3, 4])
def test_optimal_composition_tradeoff_is_the_k_fold_quaternary(k):
    eps, delta = 0.6, 0.03
    p, r = quaternary_rows(eps, delta)
    P, R = product(p, k), product(r, k)
    g = EpsDelta(eps, delta).compose(k)
    assert isinstance(g, OptimalComposition)
    for a in (0.0, 0.02, 0.2, 0.5):
        assert g.tradeoff(a) == pytest.approx(tradeoff_lp(P, R, a), abs=1e-9)
    for e in (0.0, 0.6, 1.0):
        assert g.delta(e) == pytest.approx(hockey_stick(P, R, e), rel=1e-12)
    x = g.epsilon(0.2)
    assert hockey_stick(P, R, x) <= 0.2 + 1e-15 and hockey_stick(P, R, x * (1 - 1e-9)) > 0.2 - 1e-12
    assert g.epsilon(0.5 * (1 - (1 - delta) ** k)) == np.inf  # below the mass no eps covers


def test_contains_orders_regions():
    exact = EpsDelta(0.1, 0.001).compose(30)
    basic = EpsDelta(3.0, 0.03)
    assert basic.contains(exact)
    assert not exact.contains(basic)


def test_bad_input():
    with pytest.raises(LdpSimError, match="eps"):
        EpsDelta(-0.1, 0.0)
    with pytest.raises(LdpSimError, match="delta"):
        EpsDelta(0.1, 1.5)
    with pytest.raises(LdpSimError, match="mu"):
        GDP(-1.0)
    with pytest.raises(LdpSimError, match="alpha"):
        GDP(1.0).tradeoff(-0.1)
    with pytest.raises(LdpSimError, match="eps"):
        GDP(1.0).delta(np.nan)
    with pytest.raises(LdpSimError, match="compositions"):
        EpsDelta(0.1, 0.0).compose(0)
    with pytest.raises(LdpSimError, match="delta"):
        GDP.for_delta(1.0, 0.0)


def test_noise_mechanism_guarantee_uses_its_exact_views():
    from ldpsim.mechanisms import Gaussian, Laplace

    lap = Laplace(2.0).guarantee()
    # Laplace(b) at shift 1: delta(eps) = 1 - exp((eps - 1/b)/2) below 1/b (closed form)
    assert lap.delta(0.1) == pytest.approx(1 - np.exp((0.1 - 0.5) / 2), rel=1e-12)
    assert lap.epsilon(0.0) == pytest.approx(0.5)
    gauss = Gaussian(2.0).guarantee()
    assert np.allclose(gauss.tradeoff(ALPHAS), GDP(0.5).tradeoff(ALPHAS), atol=1e-14)


def test_plot_regions_draws_every_guarantee():
    from ldpsim.report.regions import plot_regions

    ax = plot_regions([EpsDelta(1.0, 0.01), GDP(1.0), EpsDelta(0.5, 0.0).compose(3)])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:3] == ["(1, 0.01)-DP", "1-GDP", "exact 3-fold (0.5, 0)"]
    # the first curve drawn is the (1, 0.01) trade-off
    x, y = ax.lines[0].get_data()
    assert np.allclose(y, EpsDelta(1.0, 0.01).tradeoff(x), atol=1e-15)


def test_documented_keyword_spellings_build_the_same_guarantees() -> None:
    """``delta=`` (the documented spelling) and the field's name ``delta_=`` build equal
    guarantees; ``k=`` is the deprecated spelling of ``compositions``; giving a value twice
    or leaving one out is one error naming the parameter."""
    import pytest

    from ldpsim.errors import LdpSimError
    from ldpsim.privacy import EpsDelta, OptimalComposition

    assert EpsDelta(1.0, delta=1e-6) == EpsDelta(1.0, 1e-6) == EpsDelta(1.0, delta_=1e-6)
    a = OptimalComposition(0.1, delta=0.001, compositions=30)
    assert a == OptimalComposition(0.1, 0.001, 30) == OptimalComposition(0.1, delta_=0.001, compositions=30)
    with pytest.warns(DeprecationWarning, match="compositions="):
        assert OptimalComposition(0.1, delta=0.001, k=30) == a
    with pytest.raises(LdpSimError, match="delta"):
        EpsDelta(1.0, delta=1e-6, delta_=1e-6)
    with pytest.raises(LdpSimError, match="compositions"):
        OptimalComposition(0.1, delta=0.001)
    with pytest.raises(LdpSimError, match="^k"):
        OptimalComposition(0.1, 0.001, 30, k=30)
