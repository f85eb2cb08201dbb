"""Exact log densities: ``NoiseMechanism.log_pdf`` / ``log_density`` and the broken
mechanisms' ``log_density`` (used by privacy auditors to build likelihood-ratio events).

Checks: normalisation (quadrature / summation to 1 within 1e-9), agreement with independent
computations (scipy.stats closed forms, numerical derivatives of the exact CDFs, the
``matrix()`` entries), far-tail values against the analytic log-space formulas, and the
support (``-inf`` off it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.audit import zoo as b
from ldpsim.mechanisms.noise import Gaussian, Geometric, Laplace, Staircase, TruncatedLaplace

CONTINUOUS = {
    "laplace": lambda: Laplace(1.7, 1.0),
    "laplace_small": lambda: Laplace(0.01, 2.0),
    "gaussian": lambda: Gaussian(2.5, 1.0),
    "gaussian_small": lambda: Gaussian(0.05, 1.0),
    "trunc_laplace": lambda: TruncatedLaplace(1.0, 1e-3, 1.0),
    "trunc_laplace_tiny_delta": lambda: TruncatedLaplace(0.3, 1e-12, 2.0),
    "trunc_laplace_big_eps": lambda: TruncatedLaplace(300.0, 1e-5, 1.0),
    "staircase": lambda: Staircase(1.0),
    "staircase_gamma": lambda: Staircase(0.5, 2.0, gamma=0.25),
    "staircase_gamma0": lambda: Staircase(2.0, 1.0, gamma=0.0),
    "staircase_gamma1": lambda: Staircase(2.0, 1.0, gamma=1.0),
}


def _round_err(h: float) -> float:
    """Absolute rounding error of a central difference of a CDF with values in [0, 1]: each
    CDF value carries a few ulps of 1 (2.2e-16), divided by 2h; 20 ulps for margin (this
    dominates in the right tails, where the CDF is near 1 and the density small)."""
    return 20 * 2.0**-52 / (2 * h)


def _breakpoints(mech) -> list[float]:
    """Integration pieces covering (numerically) all the mass, split at every kink."""
    if isinstance(mech, Laplace):
        return [-math.inf, 0.0, math.inf]
    if isinstance(mech, Gaussian):
        return [-math.inf, 0.0, math.inf]
    if isinstance(mech, TruncatedLaplace):
        return [-mech.bound, 0.0, mech.bound]
    assert isinstance(mech, Staircase)
    D, g = mech.sensitivity, mech.gamma
    J = int(math.ceil(45.0 / mech.eps)) + 2  # b^J < e^-45: negligible tail mass
    pos = sorted({j * D for j in range(J + 1)} | {(j + g) * D for j in range(J)})
    return sorted({-p for p in pos} | set(pos))


@pytest.mark.parametrize("key", sorted(CONTINUOUS))
def test_continuous_density_integrates_to_one(key):
    mech = CONTINUOUS[key]()
    pts = _breakpoints(mech)
    f = lambda y: math.exp(float(mech.log_pdf(y)))
    total = 0.0
    for lo, hi in zip(pts[:-1], pts[1:]):
        if hi > lo:
            total += integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
    assert abs(total - 1.0) <= 1e-9


@pytest.mark.parametrize("mech", [Geometric(1.0), Geometric(0.2, 3), Geometric(40.0)])
def test_geometric_pmf_sums_to_one(mech):
    # a^N < e^-60 beyond N: the tail is far below the tolerance
    N = int(math.ceil(60.0 / -mech.log_a))
    z = np.arange(-N, N + 1)
    total = math.fsum(np.exp(mech.log_pdf(z)).tolist())
    assert abs(total - 1.0) <= 1e-9


def test_laplace_matches_scipy():
    for scale in (0.05, 1.0, 13.0):
        mech = Laplace(scale)
        y = np.linspace(-50.0, 50.0, 1001)
        ref = stats.laplace.logpdf(y, scale=scale)  # scipy's log(pdf) underflows to -inf far out
        ok = ref > -600.0  # and loses accuracy in the subnormal range (pdf < 1e-308)
        assert ok.sum() > 100
        np.testing.assert_allclose(mech.log_pdf(y)[ok], ref[ok], rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(mech.log_pdf(y), -np.abs(y) / scale - math.log(2 * scale), rtol=1e-14)


def test_gaussian_matches_scipy():
    for sigma in (0.1, 1.0, 7.0):
        mech = Gaussian(sigma)
        y = np.linspace(-100.0, 100.0, 1001)
        np.testing.assert_allclose(mech.log_pdf(y), stats.norm.logpdf(y, scale=sigma), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "mech", [TruncatedLaplace(1.0, 1e-3), TruncatedLaplace(0.5, 0.2, 3.0), TruncatedLaplace(4.0, 1e-8)]
)
def test_truncated_laplace_matches_cdf_derivative(mech):
    # central difference of the exact CDF: truncation error h^2/6 |f'''| <= h^2 f / (6 lam^3)
    # (f'' = f/lam^2 between kinks) and rounding ~1e-16/h; relative tolerance 1e-6 covers both
    # with margin. Points stay h-away from the kinks at 0 and +-A.
    A, h = mech.bound, 1e-5 * mech.lam
    y = np.concatenate([np.linspace(-0.99 * A, -0.01 * A, 41), np.linspace(0.01 * A, 0.99 * A, 41)])
    num = (mech.cdf(y + h) - mech.cdf(y - h)) / (2 * h)
    np.testing.assert_allclose(np.exp(mech.log_pdf(y)), num, rtol=1e-6, atol=_round_err(h))


def test_truncated_laplace_support():
    mech = TruncatedLaplace(1.0, 1e-3)
    A = mech.bound
    inside = mech.log_pdf([-A * (1 - 1e-12), 0.0, A * (1 - 1e-12)])
    assert np.all(np.isfinite(inside))
    out = mech.log_pdf([-2 * A, -A * (1 + 1e-12), A * (1 + 1e-12), 2 * A, 1e6, -np.inf, np.inf])
    assert np.all(out == -np.inf)
    # the value inside is the analytic one: -|y|/lam - log(2 lam (1 - e^-K))
    y = 0.5 * A
    expect = -y / mech.lam - math.log(2 * mech.lam) - math.log(-math.expm1(-mech.K))
    assert float(mech.log_pdf(y)) == pytest.approx(expect, rel=1e-14)


def test_staircase_matches_independent_formula():
    # density a b^m: m = j on [j D, (j + gamma) D), j + 1 on [(j + gamma) D, (j + 1) D)
    for eps, D, g in [(1.0, 1.0, 0.3), (0.5, 2.0, 0.8), (3.0, 1.0, None)]:
        mech = Staircase(eps, D, gamma=g)
        gam = mech.gamma
        bb = math.exp(-eps)
        a = (1 - bb) / (2 * D * (gam + (1 - gam) * bb))
        ys, expect = [], []
        for j in range(0, 8):
            for frac, m in ((gam / 2, j), ((1 + gam) / 2, j + 1)):
                for sgn in (1.0, -1.0):
                    ys.append(sgn * (j + frac) * D)
                    expect.append(math.log(a) - eps * m)
        np.testing.assert_allclose(mech.log_pdf(np.array(ys)), expect, rtol=1e-13, atol=1e-13)
        # and the class's own (linear-scale) density where it does not underflow
        np.testing.assert_allclose(np.exp(mech.log_pdf(np.array(ys))), mech.density(np.array(ys)), rtol=1e-12)


def test_geometric_matches_scipy_dlaplace():
    for eps, D in [(1.0, 1), (0.3, 2), (5.0, 1)]:
        mech = Geometric(eps, D)
        z = np.arange(-60, 61)
        np.testing.assert_allclose(mech.log_pdf(z), stats.dlaplace.logpmf(z, eps / D), rtol=1e-12, atol=1e-12)


def test_geometric_non_integers():
    mech = Geometric(1.0)
    out = mech.log_pdf([0.5, -2.5, 1e-9, 3.000001, np.inf, -np.inf])
    assert np.all(out == -np.inf)
    assert float(mech.log_pdf(0.5)) == -np.inf


def test_far_tails_finite_and_analytic():
    lap = Laplace(2.0)
    assert float(lap.log_pdf(1e6)) == pytest.approx(-1e6 / 2.0 - math.log(4.0), rel=1e-15)
    assert float(lap.log_pdf(-1e6)) == float(lap.log_pdf(1e6))
    lap_eps = Laplace(1.0 / 500.0)  # eps = 500 at sensitivity 1
    assert float(lap_eps.log_pdf(1e6)) == pytest.approx(-5e8 - math.log(2.0 / 500.0), rel=1e-15)
    gau = Gaussian(1.5)
    expect = -0.5 * (1e4 / 1.5) ** 2 - math.log(1.5) - 0.5 * math.log(2 * math.pi)
    assert float(gau.log_pdf(1e4)) == pytest.approx(expect, rel=1e-15)
    assert float(gau.log_pdf(1e6)) == pytest.approx(
        -0.5 * (1e6 / 1.5) ** 2 - math.log(1.5) - 0.5 * math.log(2 * math.pi), rel=1e-15
    )
    geo = Geometric(300.0)
    assert float(geo.log_pdf(1e6)) == pytest.approx(
        -300.0 * 1e6 + math.log(-math.expm1(-300.0)) - math.log1p(math.exp(-300.0)), rel=1e-15
    )
    # staircase with eps in the hundreds and gamma = 0: a = (1-b)/(2 D b) overflows, its log does not
    # (eps = 700: the constructor's linear-scale ``a`` itself divides by zero past eps ~ 745)
    st = Staircase(700.0, 1.0, gamma=0.0)
    assert float(st.log_pdf(0.3)) == pytest.approx(-math.log(2.0), rel=1e-14)  # m = 1: log a - eps
    assert float(st.log_pdf(1e6 + 0.5)) == pytest.approx(700.0 - math.log(2.0) - 700.0 * (1e6 + 1), rel=1e-14)
    st2 = Staircase(300.0)
    v = st2.log_pdf(np.array([0.0, 1e6, -1e6 + 0.5]))
    assert np.all(np.isfinite(v))
    tl = TruncatedLaplace(500.0, 1e-6, 1.0)
    y = 0.9 * tl.bound
    assert float(tl.log_pdf(y)) == pytest.approx(
        -y / tl.lam - math.log(2 * tl.lam) - math.log(-math.expm1(-tl.K)), rel=1e-13
    )


def test_shapes_scalars_and_log_density_shift():
    mech = Laplace(1.0)
    assert isinstance(mech.log_pdf(0.3), float)
    y = np.linspace(-3, 3, 12).reshape(3, 4)
    out = mech.log_pdf(y)
    assert out.shape == (3, 4) and out.dtype == np.float64
    np.testing.assert_array_equal(mech.log_density(2.0, y), mech.log_pdf(y - 2.0))
    assert isinstance(mech.log_density(1.0, 0.5), float)
    geo = Geometric(1.0)
    assert float(geo.log_density(3, 5)) == float(geo.log_pdf(2))
    assert np.isnan(mech.log_pdf(np.nan))
    with pytest.raises(ValueError):
        mech.log_density(np.inf, 0.0)
    with pytest.raises(ValueError):
        mech.log_pdf("abc")


# --------------------------------------------------------------------------- broken
def test_noisy_max_value_matches_cdf_derivative_and_integrates():
    mech = b.NoisyMaxValue(1.0, 5)
    for x in mech.inputs[0]:
        q = np.asarray(x, dtype=float)
        # away from the kink at q (the Laplace density has a corner there): central difference,
        # error ~h^2 f'''/6 ~ 1e-10 f / b^2 plus rounding 1e-16/h: rtol 1e-6 has ample margin
        t = np.linspace(-15.0, 25.0, 161)
        t = t[np.abs(t - q[0]) > 0.01]
        h = 1e-5
        num = (mech.cdf(x, t + h) - mech.cdf(x, t - h)) / (2 * h)
        np.testing.assert_allclose(np.exp(mech.log_density(x, t)), num, rtol=1e-6, atol=_round_err(h))
        f = lambda s, x=x: math.exp(float(mech.log_density(x, s)))
        k = float(q[0])
        total = (
            integrate.quad(f, -np.inf, k, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
            + integrate.quad(f, k, np.inf, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
        )
        assert abs(total - 1.0) <= 1e-9


def test_noisy_max_value_log_ratio_attains_true_eps():
    mech = b.NoisyMaxValue(1.0, 5)
    x, xp = mech.inputs[0]
    t = np.linspace(-40.0, 60.0, 2001)
    r = mech.log_density(x, t) - mech.log_density(xp, t)
    assert np.all(np.isfinite(r))
    assert np.max(np.abs(r)) <= mech.true_eps + 1e-9
    assert np.min(np.abs(r - mech.true_eps)) <= 1e-9


def test_noisy_max_value_far_tails():
    mech = b.NoisyMaxValue(1.0, 5)
    m, s = mech.m, mech.scale
    x = mech.inputs[0][0]  # q = 0^m: left tail m e^{m t/b} / (2^m b); right tail ~ m e^{-t/b}/(2b)
    left = float(mech.log_density(x, -1e6))
    assert left == pytest.approx(math.log(m) + m * -1e6 / s - m * math.log(2.0) - math.log(s), rel=1e-14)
    right = float(mech.log_density(x, 1e6))
    assert right == pytest.approx(math.log(m / (2 * s)) - 1e6 / s, rel=1e-14)
    assert float(mech.log_density(x, np.inf)) == -np.inf


@pytest.mark.parametrize("mech", [b.LaplaceWrongScale(0.5), b.HistogramWrongScale(0.5, bins=3, affected=1)])
def test_laplace_broken_log_density(mech):
    for x in mech.inputs[0]:
        t = np.linspace(-10.0, 10.0, 101)
        h = 1e-5
        t = t[np.min(np.abs(t[:, None] - np.array([0.0, 1.0, 2.0])), axis=1) > 0.01]
        num = (mech.cdf(x, t + h) - mech.cdf(x, t - h)) / (2 * h)
        np.testing.assert_allclose(np.exp(mech.log_density(x, t)), num, rtol=1e-6, atol=_round_err(h))
    x, xp = mech.inputs[0]
    t = np.linspace(-5.0, 5.0, 1001)
    r = mech.log_density(x, t) - mech.log_density(xp, t)
    assert np.max(np.abs(r)) <= mech.true_eps + 1e-9
    assert np.min(np.abs(np.abs(r) - mech.true_eps)) <= 1e-9


FINITE = {
    "doubled_rr": lambda: b.DoubledRR(3, 0.7),
    "unary_no_reset": lambda: b.UnaryNoReset(4, 1.0),
    "svt_no_query_noise": lambda: b.SVTNoQueryNoise(1.0),
    "svt_no_cutoff": lambda: b.SVTNoCutoff(1.0, 2),
}


@pytest.mark.parametrize("key", sorted(FINITE))
def test_finite_broken_log_density_is_log_matrix(key):
    mech = FINITE[key]()
    M = mech.matrix()
    codes = np.arange(M.shape[1])
    for i, x in enumerate(mech.rows):
        ld = mech.log_density(x, codes)
        np.testing.assert_allclose(np.exp(ld), M[i], rtol=1e-13, atol=0.0)
        assert np.all((ld == -np.inf) == (M[i] == 0))
        assert float(mech.log_density(x, 0)) == ld[0]
        out = mech.log_density(x, [-1, M.shape[1], 0.5])
        assert np.all(out == -np.inf)
    with pytest.raises(ValueError):
        mech.log_density("not an input", 0)


def test_unary_no_reset_has_zero_probability_outputs():
    mech = b.UnaryNoReset(4, 1.0)
    # code 0b0010 (bit 1 set, bit 0 clear) is impossible under x = 0 (bit 0 always 1)
    assert float(mech.log_density(0, 2)) == -np.inf
    assert np.isfinite(float(mech.log_density(1, 2)))


def test_doubled_rr_log_space_at_large_eps():
    mech = b.DoubledRR(3, 400.0)  # e^{2 eps} overflows; the log-probabilities do not
    ld = mech.log_density(1, [0, 1, 2])
    np.testing.assert_allclose(ld, [-800.0, 0.0, -800.0], atol=1e-12)


def test_svt_returns_value_has_no_log_density():
    from ldpsim.audit import density_of
    from ldpsim.mechanisms.base import NoDensity

    mech = b.SVTReturnsValue(1.0, 2)
    assert mech.has_density is False and density_of(mech) is None
    with pytest.raises(NoDensity):
        mech.log_density(mech.inputs[0][0], 0.0)
