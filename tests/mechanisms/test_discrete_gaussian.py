"""DiscreteGaussian (Canonne, Kamath and Steinke 2020): exact privacy against brute force,
zCDP, variance, trade-off, calibration, parameters and errors.

The references are computed here with mpmath (40 digits) over a truncated support
``|z| <= M``, with the remainder bounded analytically: for an integer ``h >= 0``,
``sum_{j >= 1} exp(-(h + j)^2/(2 s2)) <= exp(-h^2/(2 s2)) / (exp(h/s2) - 1)`` (a geometric
series, since ``(h + j)^2 >= h^2 + 2 h j``), and both the hockey-stick sum and the normaliser
miss at most twice that; M is chosen so that the bound is below 1e-25 of the reference.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.noise.discrete_gaussian import DiscreteGaussian
from ldpsim.privacy.gdp import gdp_delta

mp.mp.dps = 40


def _mpf(f: Fraction):
    return mp.mpf(f.numerator) / f.denominator


def remainder_bound(h: int, s2) -> mp.mpf:
    """Bound on sum_{|z| > h} exp(-z^2/(2 s2)) (both sides), h >= 1."""
    return 2 * mp.exp(-(mp.mpf(h) ** 2) / (2 * s2)) / mp.expm1(mp.mpf(h) / s2)


def brute_delta(sigma2: Fraction, shift: int, eps: float) -> tuple[float, float]:
    """(delta(eps), bound on its truncation error): sum over |z| <= M of (p - e^eps r)_+."""
    s2 = _mpf(sigma2)
    sig = math.sqrt(float(sigma2))
    k = eps * float(sigma2) / shift  # the terms that count sit above eps sigma2/D - D/2
    m = int(abs(k)) + shift + int(math.sqrt(2 * 800) * sig) + 10
    w = [mp.exp(-(mp.mpf(z) ** 2) / (2 * s2)) for z in range(-m - shift, m + shift + 1)]
    off = m + shift
    c = mp.fsum(w)
    e = mp.exp(mp.mpf(eps))
    tot = mp.fsum(max(w[z + off] - e * w[z - shift + off], 0) for z in range(-m, m + 1))
    val = tot / c
    # missing: terms with |z| > m (at most the P-mass there) and the normaliser's tail
    err = remainder_bound(m, s2) / c * (1 + val)
    return float(val), float(err)


PRIVACY_CASES = [
    (Fraction(1, 64), 1, [0.0, 1.0, 20.0, 31.9, 40.0, 150.0, 300.0]),  # eps in the hundreds
    (Fraction(1, 3), 1, [0.0, 1e-3, 0.5, 2.0, 5.0, 20.0, 45.0, 56.0]),  # delta down to 1e-230
    (Fraction(1369, 100), 1, [0.0, 0.1, 1.0, 3.0, 8.0, 12.0]),
    (Fraction(25), 3, [0.0, 0.01, 1.0, 5.0, 20.0, 24.0]),
    (Fraction(1000, 7), 2, [0.0, 0.1, 1.0, 4.0, 6.0]),
    (Fraction(0.3), 2, [0.0, 1.0, 10.0, 30.0]),
]


@pytest.mark.parametrize("sigma2, shift, grid", PRIVACY_CASES, ids=[f"{c[0]}-D{c[1]}" for c in PRIVACY_CASES])
def test_delta_against_brute_force(sigma2, shift, grid):
    mech = DiscreteGaussian(sigma2, shift)
    got = np.asarray(mech.delta(np.array(grid)), dtype=float)
    for t, g in zip(grid, got):
        ref, err = brute_delta(sigma2, shift, t)
        assert err <= 1e-25 * max(ref, 1e-300), (t, ref, err)
        assert g == pytest.approx(ref, rel=1e-9, abs=0), (t, g, ref)
        assert float(mech.delta(t)) == g
    assert mech.epsilon(0.0) == math.inf and mech.delta(math.inf) == 0.0


def test_tiny_deltas_reached():
    # delta below 1e-200 is computed, not flushed: log_delta stays finite and accurate
    mech = DiscreteGaussian(Fraction(1, 3), 1)
    ref, _ = brute_delta(Fraction(1, 3), 1, 56.0)
    assert 0 < ref < 1e-200
    assert math.log(ref) == pytest.approx(float(mech.log_delta(56.0)), rel=1e-12)
    assert math.isfinite(float(mech.log_delta(500.0))) and float(mech.log_delta(500.0)) < -700


def test_epsilon_inverts_delta():
    mech = DiscreteGaussian(Fraction(1369, 100), 2)
    for d in (0.1, 1e-3, 1e-10, 1e-50, 1e-200):
        t = mech.epsilon(d)
        assert 0 < t < math.inf
        assert float(mech.delta(t)) <= d * (1 + 1e-9)
        assert float(mech.delta(t * (1 - 1e-7))) > d
    assert mech.epsilon(1.0) == 0.0 and mech.epsilon(0.3) == 0.0  # delta(0) = 0.198...


def test_zcdp_rho_is_the_renyi_bound():
    # D_alpha(P || R) <= alpha rho for all alpha > 1, equal when alpha D is an integer (CKS Thm 4)
    for sigma2, d in [(Fraction(1, 3), 1), (Fraction(1369, 100), 2), (Fraction(5, 2), 1)]:
        mech = DiscreteGaussian(sigma2, d)
        rho = mech.zcdp_rho()
        assert rho == pytest.approx(d * d / (2 * float(sigma2)), rel=1e-15)
        s2 = _mpf(sigma2)
        m = int(60 * math.sqrt(float(sigma2))) + 60
        zs = range(-m, m + 1)
        logp = [-(mp.mpf(z) ** 2) / (2 * s2) for z in zs]
        logr = [-(mp.mpf(z - d) ** 2) / (2 * s2) for z in zs]
        lc = mp.log(mp.fsum(mp.exp(x) for x in logp))
        for alpha in (1.25, 1.5, 2.0, 3.0, 4.5, 10.0):
            a = mp.mpf(alpha)
            s = mp.fsum(mp.exp(a * x + (1 - a) * y) for x, y in zip(logp, logr))
            renyi = float((mp.log(s) - lc) / (a - 1))
            assert renyi <= alpha * rho * (1 + 1e-12), (sigma2, alpha, renyi, alpha * rho)
            if float(alpha * d).is_integer():
                assert renyi == pytest.approx(alpha * rho, rel=1e-12)
        # the (eps, delta) that rho-zCDP implies holds: delta(eps) <= exp(-(eps - rho)^2/(4 rho)) for eps > rho
        for eps in (rho * 1.5, rho + 1.0, rho + 5.0):
            assert float(mech.delta(eps)) <= math.exp(-((eps - rho) ** 2) / (4 * rho))


def test_gdp_is_not_claimed():
    # the discrete Gaussian is not dominated by mu = D/sigma GDP: at sigma2 = 1/4, D = 1,
    # eps = 17.75 its exact delta is about 6.5 times the continuous Gaussian's
    mech = DiscreteGaussian(Fraction(1, 4), 1)
    ref, _ = brute_delta(Fraction(1, 4), 1, 17.75)
    assert ref > 5 * float(gdp_delta(17.75, 2.0))
    assert float(mech.delta(17.75)) == pytest.approx(ref, rel=1e-9)
    assert not hasattr(mech, "gdp_mu")


@pytest.mark.parametrize(
    "sigma2", [Fraction(1, 1024), Fraction(1, 3), Fraction(1), Fraction(1369, 100), Fraction(10**6)]
)
def test_variance_and_normaliser(sigma2):
    mech = DiscreteGaussian(sigma2)
    s2 = _mpf(sigma2)
    sig = math.sqrt(float(sigma2))
    if sig < 100:
        m = int(45 * sig) + 15
        w = [(z, mp.exp(-(mp.mpf(z) ** 2) / (2 * s2))) for z in range(-m, m + 1)]
        c = mp.fsum(x for _, x in w)
        var = float(mp.fsum(z * z * x for z, x in w) / c)
        z = np.arange(-m, m + 1, dtype=float)
        probs = np.asarray(mech.pmf(z))
        assert math.fsum(probs) == pytest.approx(1.0, abs=1e-13)
        assert probs[m] == pytest.approx(float(1 / c), rel=1e-13)
    else:  # sigma = 1000: the variance is sigma2 minus less than 1e-100 (Poisson summation)
        var = float(sigma2)
    assert mech.variance == pytest.approx(var, rel=1e-12)
    assert mech.variance < float(sigma2) or sig >= 2  # below by e^(-2 pi^2 sigma2) relative: rounds away beyond
    assert float(mech.log_pdf(0.5)) == -math.inf and float(mech.log_pdf(math.inf)) == -math.inf


def test_tradeoff_against_neyman_pearson():
    sigma2, d = Fraction(5, 2), 1
    mech = DiscreteGaussian(sigma2, d)
    law = {z: float(mech.pmf(z)) for z in range(-40, 41)}
    for j in (-3, 0, 1, 4):
        alpha = math.fsum(p for z, p in law.items() if z > j) + 0.5 * law[j]
        beta = math.fsum(p for z, p in law.items() if z <= j - d) - 0.5 * law[j - d]
        assert float(mech.tradeoff(alpha)) == pytest.approx(beta, abs=1e-14)
    a = np.linspace(0, 1, 41)
    back = np.asarray(mech.tradeoff(mech.tradeoff(a)))
    np.testing.assert_allclose(back, a, atol=1e-12)


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1), (0.5, 1e-3, 2), (3.0, 1e-10, 1), (0.05, 1e-6, 1)])
def test_calibrate(eps, delta, sens):
    mech = DiscreteGaussian.calibrate(eps, delta, sens)
    assert 1024 % mech.sigma2.denominator == 0
    assert float(mech.delta(eps)) <= delta
    assert mech.is_private(eps, delta)
    j = int(mech.sigma2 * 1024)
    # delta(eps) decreases along the grid near the answer, and one step below fails
    ds = [float(DiscreteGaussian(Fraction(i, 1024), sens).delta(eps)) for i in range(max(1, j - 6), j + 3)]
    assert all(b <= a for a, b in zip(ds, ds[1:]))
    if j > 1:
        assert float(DiscreteGaussian(Fraction(j - 1, 1024), sens).delta(eps)) > delta


def test_parameters_and_equality():
    a = DiscreteGaussian("1369/100", 2)
    b = DiscreteGaussian(Fraction(1369, 100), 2)
    assert a == b and hash(a) == hash(b)
    assert a.params == {"sigma2": 13.69, "sigma2_exact": "1369/100", "sensitivity": 2}
    assert DiscreteGaussian(0.1).sigma2 == Fraction(0.1)
    assert DiscreteGaussian(3).sigma2 == 3
    assert "sigma2_exact='1369/100'" in repr(a)
    y = a.sample(7, 1000, rng="os")
    assert y.dtype == np.float64 and np.all(y == np.round(y))
    np.testing.assert_array_equal(a.sample(0, 100, rng=4), a.sample(0, 100, np.random.default_rng(4)))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: DiscreteGaussian(Fraction(1, 2048)), "sigma2"),
        (lambda: DiscreteGaussian(2e10), "sigma2"),
        (lambda: DiscreteGaussian("x/3"), "sigma2"),
        (lambda: DiscreteGaussian(-1.0), "sigma2"),
        (lambda: DiscreteGaussian(True), "sigma2"),
        (lambda: DiscreteGaussian(1, 0), "sensitivity"),
        (lambda: DiscreteGaussian(1, 1.5), "sensitivity"),
        (lambda: DiscreteGaussian(1).delta(-1.0), "eps"),
        (lambda: DiscreteGaussian(1).delta(1.0, shift=0), "shift"),
        (lambda: DiscreteGaussian.calibrate(1.0, 0.0), "delta"),
        (lambda: DiscreteGaussian.calibrate(1.0, 1e-5, compositions=3), "method"),
        (lambda: DiscreteGaussian.calibrate(1e-9, 1e-12), "delta"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(LdpSimError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(name), msg
