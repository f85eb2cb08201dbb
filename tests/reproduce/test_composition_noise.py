"""Tests of ``ldpsim reproduce composition-noise`` (Kairouz, Oh and Viswanath 2015, Section 4).

Everything is deterministic (exact privacy-loss laws), so the reference values are
independent computations: closed forms typed here, one-dimensional quadrature, brute-force
binomial sums, the library's separate accountant and calibration code."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from ldpsim.mechanisms.noise import Geometric, Staircase
from ldpsim.privacy import GDP, optimal_delta
from ldpsim.reproduce import composition_noise as cn


def _laplace_one(t: float, mu: float) -> float:
    """Hockey-stick E_{e^t}(Lap(0, b) || Lap(1, b)), mu = 1/b, for any real t (typed here)."""
    if t >= mu:
        return 0.0
    if t > -mu:
        return 1.0 - math.exp((t - mu) / 2.0)
    return -math.expm1(t)


def _laplace_two_by_quadrature(scale: float, eps: float) -> float:
    """Two releases: condition on the first output x, whose loss is L1(x); the second release
    contributes the one-release divergence at level eps - L1(x). One-dimensional quadrature."""
    mu = 1.0 / scale

    def f(x: float) -> float:
        p = math.exp(-abs(x) / scale) / (2 * scale)
        loss = mu * (abs(x - 1.0) - abs(x))
        return p * _laplace_one(eps - loss, mu)

    pts = [0.0, 1.0, 0.5 * (1 - (eps - mu) / mu), 0.5 * (1 - (eps + mu) / mu), 0.5 * (1 - eps / mu)]
    pts = sorted(p for p in pts if 0.0 < p < 1.0)
    total = integrate.quad(f, -np.inf, 0.0, epsabs=1e-15, epsrel=1e-13)[0]
    edges = [0.0, *pts, 1.0]
    for a, b in zip(edges[:-1], edges[1:]):
        total += integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13)[0]
    total += integrate.quad(f, 1.0, np.inf, epsabs=1e-15, epsrel=1e-13)[0]
    return total


@pytest.mark.parametrize("scale", [0.7, 2.0, 10.0])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3, 1.0])
def test_laplace_one_release_closed_form(scale, eps):
    assert cn.laplace_delta(scale, 1, eps) == pytest.approx(_laplace_one(eps, 1.0 / scale), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("scale", [0.8, 2.0])
@pytest.mark.parametrize("eps", [0.0, 0.3, 0.9, 1.5])
def test_laplace_two_releases_against_quadrature(scale, eps):
    ref = _laplace_two_by_quadrature(scale, eps)
    assert cn.laplace_delta(scale, 2, eps) == pytest.approx(ref, rel=1e-9, abs=1e-14)


def test_laplace_pure_limit_and_accountant():
    # k uses of Lap(1/e0) are k e0-pure: delta vanishes from k e0 on, positive just below
    # (the float 0.6 is 2.2e-17 below 6 x 0.1: only the all-(+e0) atom, mass 2^-6, reaches past it)
    assert 0.0 <= cn.laplace_delta(10.0, 6, 0.6) < 1e-18
    assert cn.laplace_delta(10.0, 6, 0.6000001) == 0.0
    assert cn.laplace_delta(10.0, 6, 0.59) > 0
    # the Accountant (separate code, an upper bound) agrees to its error
    for eps in (0.0, 0.2, 0.45):
        exact = cn.laplace_delta(10.0, 6, eps)
        acc = float(cn._laplace_accountant(0.1, 6).delta(eps))
        assert acc >= exact * (1 - 1e-12)
        assert acc == pytest.approx(exact, rel=1e-4)


def _binomial_delta(e0: float, k: int, eps: float) -> float:
    """Brute force: the loss is +-e0 with P-mass e^e0/(1+e^e0) on +e0 (k-fold binomial)."""
    p = math.exp(e0) / (1 + math.exp(e0))
    out = 0.0
    for l in range(k + 1):  # l losses of +e0
        L = (2 * l - k) * e0
        out += special.comb(k, l) * p**l * (1 - p) ** (k - l) * max(0.0, 1.0 - math.exp(eps - L))
    return out


@pytest.mark.parametrize("eps", [0.0, 0.25, 0.7, 1.3])
def test_geometric_and_half_staircase_attain_the_region(eps):
    e0, k = 0.2, 9
    ref = _binomial_delta(e0, k, eps)
    assert float(optimal_delta(e0, 0.0, k, eps)) == pytest.approx(ref, rel=1e-10, abs=1e-15)
    for fam in ("geometric", "staircase_half"):
        assert float(cn.composed_delta(fam, e0, k, eps)) == pytest.approx(ref, rel=1e-10, abs=1e-15)
    # the variance-optimal staircase and Laplace stay inside
    for fam in ("staircase", "laplace"):
        assert float(cn.composed_delta(fam, e0, k, eps)) <= ref * (1 + 1e-12) + 1e-15


def test_staircase_loss_atom_at_zero():
    # Geng-Viswanath density: a on [0, gamma), a b on [gamma, 1), b = e^-e0; the loss at shift 1
    # is 0 on [gamma, 1 - gamma) with P-mass a b (1 - 2 gamma)
    e0, gamma = 0.3, 0.4
    b = math.exp(-e0)
    a = (1 - b) / (2 * (gamma + (1 - gamma) * b))
    L, P, _ = Staircase(e0, gamma=gamma).loss_atoms()
    assert P[np.argmin(np.abs(L))] == pytest.approx(a * b * (1 - 2 * gamma), rel=1e-12)


def test_calibration_meets_the_target_tightly():
    eps, delta = 0.5, 1e-5
    for fam, k in (("geometric", 10), ("staircase", 10), ("laplace", 3), ("laplace", 20)):
        e0 = cn.calibrate(fam, k, eps, delta)
        assert float(cn.composed_delta(fam, e0, k, eps)) <= delta
        assert float(cn.composed_delta(fam, e0 * (1 + 1e-6), k, eps)) > delta
    # the geometric mechanism against the library's own exact calibration (optimal_delta based)
    g = Geometric.calibrate(eps, delta, compositions=10)
    assert cn.calibrate("geometric", 10, eps, delta) == pytest.approx(g.eps, rel=1e-8)
    sigma = cn.calibrate("gaussian", 30, eps, delta)
    assert float(GDP(math.sqrt(30) / sigma).delta(eps)) == pytest.approx(delta, rel=1e-8)


def test_variance_of():
    e0 = 0.3
    assert cn.variance_of("laplace", e0) == pytest.approx(2 / e0**2)
    assert cn.variance_of("geometric", e0) == pytest.approx(1 / (2 * math.sinh(e0 / 2) ** 2), rel=1e-12)
    assert cn.variance_of("gaussian", 3.0) == 9.0


@pytest.mark.parametrize("fam", ["gaussian", "laplace", "geometric", "staircase"])
def test_param_for_variance_inverts_the_variance(fam):
    for var in (3.0, 250.0, 4e4):
        assert cn.variance_of(fam, cn.param_for_variance(fam, var)) == pytest.approx(var, rel=1e-9)


def test_small_study_agrees_with_the_paper():
    rv = cn.region_view(0.3, 5, 1e-3)
    vv = cn.variance_view(0.5, 1e-5, (2, 10))
    summary = cn.summary_of(rv, vv)
    assert set(summary["agrees"]) <= {"yes", ""}
    assert (summary["agrees"] == "yes").sum() >= 9
    cor = vv.corollary
    # the paper's Laplace variance is 8 k log(e + eps/delta) / eps^2 (typed here)
    ref = [8 * k * math.log(math.e + 0.5 / 1e-5) / 0.25 for k in (2, 10)]
    assert cor.paper_laplace_variance.to_numpy() == pytest.approx(ref, rel=1e-12)
    # Corollary 4.1's budget leaves about delta/2 (k delta0) under exact composition
    assert np.all(cor.exact_delta_at_budget <= 1e-5)


@pytest.mark.slow
def test_default_run(tmp_path):
    summary = cn.composition_noise(2014, 100, tmp_path)
    assert not (summary["agrees"] == "no").any()
    for name in ("region.csv", "variance.csv", "corollary.csv", "summary.csv", "composition-noise.png"):
        assert (tmp_path / name).is_file()
