"""Tests of ``ldpsim reproduce clt-conditions`` (ldpsim/reproduce/clt_conditions.py).

References are computed independently: closed forms (Gamma-distribution moments, order
statistics of exponentials, max of two chi-square(1)), two-dimensional quadrature of the
density, a direct simulation of the Poisson limit process and of the noise itself.
Monte Carlo tolerances: DKW at false-failure probability 1e-6, or 6 standard errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.highdim import NormPowerNoise
from ldpsim.reproduce import _registry
from ldpsim.reproduce import clt_conditions as cc
from ldpsim.stats import dkw
from tests.stats_checks import FALSE_FAILURE


def test_registered():
    rep = _registry.get("clt-conditions")
    assert "Dong" in rep.source and len(rep.description) <= 150


# --------------------------------------------------------------------------- (D2)
@pytest.mark.parametrize("p", [2.0, math.inf])
@pytest.mark.parametrize("n", [1, 7, 100, 10**6])
def test_d2_cv_alpha2_is_gamma_cv(p, n):
    # alpha = 2: ||grad phi||^2 = 4 R^2 S with S constant for p = 2 (S = 1) and p = inf (S = 1),
    # R^2 ~ Gamma(n/2): cv = sqrt(2/n)
    assert cc.d2_cv(n, p, 2.0) == pytest.approx(math.sqrt(2.0 / n), rel=1e-12)


@pytest.mark.parametrize("p", [1.0, 2.0, math.inf])
def test_d2_cv_zero_when_gradient_norm_constant(p):
    # alpha = 1: ||grad phi|| = 1 (p = 2), sqrt(n) (p = 1), 1 (p = inf)
    for n in (3, 1000, 10**6):
        assert cc.d2_cv(n, p, 1.0) == 0.0


def _moments_2d(p: float, alpha: float) -> tuple[float, float]:
    """E||grad phi||^2 and E||grad phi||^4 in n = 2 by quadrature of the density (first quadrant, symmetric)."""

    def norm(x, y):
        return (x**p + y**p) ** (1 / p)

    def g2(x, y):
        r = norm(x, y)
        return alpha**2 * r ** (2 * alpha - 2) * ((x / r) ** (2 * p - 2) + (y / r) ** (2 * p - 2))

    dens = lambda y, x: math.exp(-(norm(x, y) ** alpha))
    z = integrate.dblquad(dens, 0, 40, 0, 40, epsabs=1e-12, epsrel=1e-10)[0]
    m1 = integrate.dblquad(lambda y, x: g2(x, y) * dens(y, x), 0, 40, 0, 40, epsabs=1e-12, epsrel=1e-10)[0] / z
    m2 = (
        integrate.dblquad(
            lambda y, x: g2(x, y) ** 2 * dens(y, x),
            0,
            40,
            0,
            40,
            epsabs=1e-12,
            epsrel=1e-10,
        )[0]
        / z
    )
    return m1, m2


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("p,alpha", [(3.0, 1.0), (1.5, 1.5)])
def test_d2_cv_against_quadrature_n2(p, alpha):
    m1, m2 = _moments_2d(p, alpha)
    assert m1 == pytest.approx(2 * NormPowerNoise(2, p, alpha).fisher_norm(), rel=1e-6)  # tr I = n c
    assert cc.d2_cv(2, p, alpha) == pytest.approx(math.sqrt(m2 / m1**2 - 1), rel=1e-5)


# --------------------------------------------------------------------------- l_inf error
@pytest.mark.parametrize("n", [1, 2, 10, 1000])
def test_g_max_sq_laplace_order_statistics(n):
    # |G| ~ Exp(1): max = sum_k E_k / k, E max^2 = sum 1/k^2 + (sum 1/k)^2
    k = np.arange(1, n + 1)
    assert cc.g_max_sq(n, 1.0) == pytest.approx(float(np.sum(1 / k**2) + np.sum(1 / k) ** 2), rel=1e-9)


def test_g_max_sq_gaussian_and_uniform():
    assert cc.g_max_sq(1, 2.0) == pytest.approx(0.5, rel=1e-9)  # G ~ N(0, 1/2)
    assert cc.g_max_sq(2, 2.0) == pytest.approx(0.5 * (1 + 2 / math.pi), rel=1e-9)  # E max(Z1^2, Z2^2) = 1 + 2/pi
    assert cc.g_max_sq(5, math.inf) == pytest.approx(5 / 7, rel=1e-15)


def test_linf_product_bound_and_equality():
    # (8): ||I|| E||X||_inf^2 >= ||I|| E||X||_2^2 / n >= 1; equality for the Gaussian at n = 1
    assert cc.linf_product(1, 2.0, 2.0) == pytest.approx(1.0, rel=1e-9)
    for p, alpha in cc.FAMILIES:
        for n in (2, 30, 3000):
            val = cc.linf_product(n, p, alpha)
            noise = NormPowerNoise(n, p, alpha)
            assert val >= noise.error_times_mu2() / n * (1 - 1e-9)
            assert val >= 1 - 1e-9
    # p = inf, alpha = 1: ||I|| = 1/n, ||X||_inf = R ~ Gamma(n): n (n + 1) / n = n + 1
    assert cc.linf_product(50, math.inf, 1.0) == pytest.approx(51.0, rel=1e-12)


# --------------------------------------------------------------------------- p = inf: the limit
def test_limit_law_is_a_privacy_loss_law():
    y = np.linspace(-8, 10, 180001)
    f = np.gradient(cc.limit_cdf(y), y)
    assert np.trapezoid(np.exp(-y) * f, y) == pytest.approx(1.0, abs=1e-6)  # E e^-L = 1
    i = np.searchsorted(y, [0.3, 1.0, 2.0])
    j = np.searchsorted(y, [-0.3, -1.0, -2.0])
    np.testing.assert_allclose(f[j], np.exp(-y[i]) * f[i], rtol=1e-4)  # f(-y) = e^-y f(y)


def test_limit_law_matches_poisson_simulation():
    rng = np.random.default_rng(20)
    m = 200_000
    out = rng.standard_normal(m)  # Z_0: the top coordinate
    gam = np.zeros(m)
    for _ in range(60):  # Poisson points Gamma_j of rate 1 (their displaced values beyond 60 never win)
        gam += rng.exponential(size=m)
        out = np.maximum(out, rng.standard_normal(m) - gam)
    ks = stats.kstest(out, cc.limit_cdf).statistic
    assert ks <= dkw(m, FALSE_FAILURE)


def test_limit_law_summary_numbers():
    lim = cc.limit_law()
    assert lim["e_minus_l"] == pytest.approx(1.0, abs=1e-6)
    assert 0.80 < lim["mu_fit"] < 0.90 and 0.80 < lim["sd"] < 0.90
    assert lim["d1"] > 0.05  # (D1) fails


def test_law_summary_on_gdp():
    y = np.arange(-9, 12, 0.002)
    for mu in (0.7, 1.0):
        out = cc.law_summary(y, stats.norm.cdf((y - mu**2 / 2) / mu))
        assert out["mean"] == pytest.approx(mu**2 / 2, abs=1e-6)
        assert out["sd"] == pytest.approx(mu, abs=1e-6)
        assert out["mu_fit"] == pytest.approx(mu, abs=1e-4)
        assert out["e_minus_l"] == pytest.approx(1.0, abs=1e-6)
    assert cc.law_summary(y, stats.norm.cdf(y - 0.5))["d1"] < 1e-9


# --------------------------------------------------------------------------- p = inf: finite n
def _naive_cdf(w: np.ndarray, yv: float) -> float:
    """P(||X + w||_inf - R <= y): the product formula with R integrated by scipy quad."""
    n = w.size
    a = np.maximum(w - yv, 0) + np.maximum(-w - yv, 0)
    h = 0.5 * ((w <= yv).astype(float) + (-w <= yv).astype(float))

    def given_r(r):
        g = np.clip(1 - a / (2 * r), 0, 1)
        return sum(h[k] * np.prod(np.delete(g, k)) for k in range(n)) / n * stats.gamma.pdf(r, n)

    return integrate.quad(given_r, 0, n + 40 * math.sqrt(n), points=[n], limit=200, epsabs=1e-12)[0]


def test_linf_loss_cdf_against_naive_product():
    n = 40
    w = np.random.default_rng(3).standard_normal(n)
    y = np.array([-1.5, -0.3, 0.2, 0.9, 2.0])
    F, H = cc.linf_loss_cdf(w, y)
    for yv, fv in zip(y, F):
        assert fv == pytest.approx(_naive_cdf(w, yv), abs=1e-10)
    np.testing.assert_allclose(
        H,
        [np.mean(0.5 * ((w <= t).astype(float) + (-w <= t).astype(float))) for t in y],
    )


def test_linf_loss_cdf_against_simulation():
    n, m = 60, 100_000
    rng = np.random.default_rng(7)
    w = rng.standard_normal(n)
    x = NormPowerNoise(n, math.inf, 1.0).sample(m, rng)
    loss = np.max(np.abs(x + w), axis=1) - np.max(np.abs(x), axis=1)
    y = np.linspace(-3, 3, 121)
    F, _ = cc.linf_loss_cdf(w, y)
    emp = np.searchsorted(np.sort(loss), y, side="right") / m
    assert np.max(np.abs(emp - F)) <= dkw(m, FALSE_FAILURE)


def test_d1_sample_p2_gaussian_is_linear():
    # p = alpha = 2: phi(x + w) - phi(x) = w . grad phi(x) + |w|^2 exactly
    noise = NormPowerNoise(30, 2.0, 2.0)
    w = np.random.default_rng(1).standard_normal(30) * 0.1
    d = cc.d1_sample(noise, w, 500, np.random.default_rng(2))
    np.testing.assert_allclose(d["loss"], d["lin"] + w @ w, atol=1e-10)
