"""Norm-power noise in high dimensions (docs/theory.md sec. 8; Dong et al. 2021, the CLT for noise addition).

Statistical checks use fixed seeds and tolerances from a stated false-failure probability
``FALSE_FAILURE = 1e-6`` per test (split by a union bound): DKW bands
``P(sup |F_m - F| > eps) <= 2 exp(-2 m eps^2)`` for laws, exact binomial tails for signs and
CLT bounds (``z = Phi^-1(1 - FALSE_FAILURE/2)``) for Monte Carlo means.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.highdim import (
    NormPowerNoise,
    axis_direction,
    empirical_tradeoff,
    gdp_distance,
    random_direction,
)
from ldpsim.stats import dkw  # half-width of the DKW band (closed form checked in tests/test_stats.py)
from tests.stats_checks import FALSE_FAILURE, binomial_cells_ok

INF = np.inf


def z_two_sided(fail: float) -> float:
    return float(stats.norm.isf(fail / 2.0))


# ------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "n, p, alpha, name",
    [
        (0, 2, 2, "n"),
        (-3, 2, 2, "n"),
        (2.5, 2, 2, "n"),
        (True, 2, 2, "n"),
        (3, 0.5, 2, "p"),
        (3, -INF, 2, "p"),
        (3, float("nan"), 2, "p"),
        (3, "2", 2, "p"),
        (3, 2, 0.99, "alpha"),
        (3, 2, INF, "alpha"),
        (3, 2, float("nan"), "alpha"),
    ],
)
def test_bad_parameters_are_refused(n, p, alpha, name):
    with pytest.raises(LdpSimError, match=rf"^{name}: got"):
        NormPowerNoise(n, p, alpha)


@pytest.mark.parametrize("mu", [0, -1.0, INF, float("nan")])
def test_bad_mu_is_refused(mu):
    with pytest.raises(LdpSimError, match=r"^mu: got"):
        NormPowerNoise(3, 2, 2).scale_for_mu(mu)


def test_other_bad_inputs():
    noise = NormPowerNoise(3, 2, 2)
    assert isinstance(LdpSimError("x"), ValueError)
    with pytest.raises(LdpSimError, match=r"^x: got"):
        noise.phi(np.zeros(4))
    with pytest.raises(LdpSimError, match=r"^v: got"):
        noise.privacy_loss(np.zeros(2), 1.0, 10)
    with pytest.raises(LdpSimError, match=r"^t: got"):
        noise.privacy_loss(np.zeros(3), 0.0, 10)
    with pytest.raises(LdpSimError, match=r"^size: got"):
        noise.sample(-1)
    with pytest.raises(LdpSimError, match=r"^alphas: got"):
        empirical_tradeoff([0.0, 1.0], [0.0], [1.5])
    with pytest.raises(LdpSimError, match=r"^n: got"):
        random_direction(0, 1)
    with pytest.raises(LdpSimError, match=r"^n: got"):
        axis_direction(0)


def test_accepts_p_infinity_and_integer_like_inputs():
    noise = NormPowerNoise(np.int64(4), INF, 1)
    assert (noise.n, noise.p, noise.alpha) == (4, math.inf, 1.0)
    assert noise.sample(0).shape == (0, 4)


# ------------------------------------------------------------------ phi, grad
@pytest.mark.parametrize("p, alpha", [(1, 1), (1, 2.5), (1.5, 1), (2, 2), (3.7, 1.3), (40, 2), (INF, 1), (INF, 3)])
def test_phi_and_gradient_against_direct_formula_and_finite_differences(p, alpha):
    noise = NormPowerNoise(5, p, alpha)
    x = np.random.default_rng(1).normal(size=(20, 5)) * 2.0
    norm = np.max(np.abs(x), axis=1) if p == INF else np.sum(np.abs(x) ** p, axis=1) ** (1 / p)
    np.testing.assert_allclose(noise.phi(x), norm**alpha, rtol=1e-12)
    g = noise.grad_phi(x)
    h = 1e-6
    for i in range(5):
        e = np.zeros(5)
        e[i] = h
        fd = (noise.phi(x + e) - noise.phi(x - e)) / (2 * h)
        np.testing.assert_allclose(g[:, i], fd, rtol=1e-5, atol=1e-6)
    # single points and the origin
    assert noise.phi(x[0]).shape == () and noise.grad_phi(x[0]).shape == (5,)
    assert noise.phi(np.zeros(5)) == 0.0 and np.all(noise.grad_phi(np.zeros(5)) == 0.0)


def test_sampling_is_reproducible_and_chunked():
    noise = NormPowerNoise(3000, 1.5, 2)  # 600 rows x 3000 > one chunk of 2^20 entries
    a, b = noise.sample(600, 7), noise.sample(600, 7)
    assert a.shape == (600, 3000) and np.array_equal(a, b) and np.all(np.isfinite(a))


# -------------------------------------------------------------------- sampling
RADIUS_CASES = [(1, 1, 1), (1, 3, 2), (3, 2, 2), (5, 1.5, 3), (10, INF, 1), (2, INF, 2.5), (50, 4, 1.5), (20, 60, 1)]


@pytest.mark.parametrize("n, p, alpha", RADIUS_CASES)
def test_radius_law(n, p, alpha):
    """||X||_p^alpha ~ Gamma(n/alpha, 1): DKW band at FALSE_FAILURE."""
    m = 20000
    noise = NormPowerNoise(n, p, alpha)
    r = noise.phi(noise.sample(m, rng=1000 + n))
    d = stats.kstest(r, stats.gamma(n / alpha).cdf).statistic
    assert d <= dkw(m, FALSE_FAILURE), (d, dkw(m, FALSE_FAILURE))


@pytest.mark.parametrize("p, alpha", [(1, 1), (1.5, 2), (INF, 1.5), (7, 3)])
def test_sign_symmetry(p, alpha):
    """The 8 sign patterns of a 3-dimensional draw are uniform (exact binomial tails, FALSE_FAILURE)."""
    m = 40000
    x = NormPowerNoise(3, p, alpha).sample(m, rng=11)
    pattern = ((x > 0) * np.array([1, 2, 4])).sum(axis=1)
    cells = np.bincount(pattern, minlength=8)
    bad = binomial_cells_ok(cells, np.full(8, m), np.full(8, 1 / 8), FALSE_FAILURE)
    assert not bad, bad


def test_l1_noise_has_iid_laplace_coordinates():
    """p = 1, alpha = 1: density exp(-sum |x_i|), coordinates i.i.d. Laplace(1). DKW on the
    first and last coordinate, and the law of |X_1| + |X_2| = Gamma(2) (independence); FALSE_FAILURE/3 each."""
    m = 30000
    x = NormPowerNoise(6, 1, 1).sample(m, rng=3)
    eps = dkw(m, FALSE_FAILURE / 3)
    for col in (0, 5):
        assert stats.kstest(x[:, col], stats.laplace.cdf).statistic <= eps
    assert stats.kstest(np.abs(x[:, 0]) + np.abs(x[:, 1]), stats.gamma(2).cdf).statistic <= eps


def test_gaussian_noise_has_iid_normal_coordinates():
    """p = 2, alpha = 2: X ~ N(0, I/2). DKW on a coordinate and on a random projection; FALSE_FAILURE/2 each."""
    m = 30000
    rng = np.random.default_rng(4)
    x = NormPowerNoise(7, 2, 2).sample(m, rng=rng)
    law = stats.norm(scale=math.sqrt(0.5)).cdf
    eps = dkw(m, FALSE_FAILURE / 2)
    assert stats.kstest(x[:, 0], law).statistic <= eps
    assert stats.kstest(x @ random_direction(7, rng), law).statistic <= eps


# ------------------------------------------------------------- exact moments
MOMENT_CASES = [
    (1, 1.7, 2.2),
    (3, 3.5, 2.5),
    (5, 2, 2),
    (5, 2, 1),
    (6, 1, 3),
    (7, INF, 1.5),
    (2, INF, 1),
    (4, 50, 1),
    (40, 1.3, 1.2),
    (200, 2.5, 4),
    (300, INF, 2),
]


@pytest.mark.parametrize("n, p, alpha", MOMENT_CASES)
def test_exact_fisher_and_mean_square_against_monte_carlo(n, p, alpha):
    """CLT bounds (sample standard errors) at FALSE_FAILURE/2 for each of the two means."""
    m = 20000
    z = z_two_sided(FALSE_FAILURE / 2)
    noise = NormPowerNoise(n, p, alpha)
    est, se = noise.fisher_norm_mc(m, rng=21)
    exact = noise.fisher_norm()
    assert abs(est - exact) <= z * se + 1e-12 * exact, (est, se, exact)
    sq = np.sum(noise.sample(m, rng=22) ** 2, axis=1)
    exact_sq = noise.mean_sq_norm()
    assert abs(sq.mean() - exact_sq) <= z * sq.std(ddof=1) / math.sqrt(m), (sq.mean(), exact_sq)


@pytest.mark.parametrize("p, alpha", [(1.5, 2), (INF, 1.5), (4, 1)])
def test_fisher_information_is_a_multiple_of_the_identity(p, alpha):
    """All 6 distinct entries of E[grad phi grad phi^T] (n = 3) against c Id; CLT at FALSE_FAILURE/6 each."""
    m = 40000
    noise = NormPowerNoise(3, p, alpha)
    g = noise.grad_phi(noise.sample(m, rng=31))
    c = noise.fisher_norm()
    z = z_two_sided(FALSE_FAILURE / 6)
    for i in range(3):
        for j in range(i, 3):
            prod = g[:, i] * g[:, j]
            target = c if i == j else 0.0
            assert abs(prod.mean() - target) <= z * prod.std(ddof=1) / math.sqrt(m), (i, j)


@pytest.mark.parametrize("p", [1, 1.5, 2, 6, INF])
@pytest.mark.parametrize("alpha", [1, 1.5, 2, 3])
def test_one_dimension_closed_forms(p, alpha):
    """n = 1: density exp(-|x|^alpha) whatever p; Fisher alpha^2 E|X|^(2 alpha - 2) and E X^2 by quadrature."""
    noise = NormPowerNoise(1, p, alpha)
    a = mpmath.mpf(alpha)
    z = mpmath.quad(lambda x: mpmath.exp(-(x**a)), [0, mpmath.inf])
    fisher = a**2 * mpmath.quad(lambda x: x ** (2 * a - 2) * mpmath.exp(-(x**a)), [0, mpmath.inf]) / z
    second = mpmath.quad(lambda x: x**2 * mpmath.exp(-(x**a)), [0, mpmath.inf]) / z
    assert noise.fisher_norm() == pytest.approx(float(fisher), rel=1e-10)
    assert noise.mean_sq_norm() == pytest.approx(float(second), rel=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 10**4, 10**6])
def test_known_cases(n):
    gauss = NormPowerNoise(n, 2, 2)
    assert gauss.fisher_norm() == pytest.approx(2.0, rel=1e-9)
    assert gauss.mean_sq_norm() == pytest.approx(n / 2, rel=1e-9)
    assert gauss.error_times_mu2() == pytest.approx(n, rel=1e-9)
    lap = NormPowerNoise(n, 1, 1)
    assert lap.fisher_norm() == pytest.approx(1.0, rel=1e-9)
    assert lap.error_times_mu2() == pytest.approx(2 * n, rel=1e-9)
    euclid = NormPowerNoise(n, 2, 1)
    assert euclid.fisher_norm() == pytest.approx(1.0 / n, rel=1e-9)
    assert euclid.error_times_mu2() == pytest.approx(n + 1, rel=1e-9)
    cube = NormPowerNoise(n, INF, 1)  # E R^2 = n(n+1), E||U||^2 = (n+2)/3, c = 1/n
    assert cube.error_times_mu2() == pytest.approx((n + 1) * (n + 2) / 3, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 30, 1000, 10**4])
def test_uncertainty_principle(n):
    for p in (1, 1.2, 1.5, 2, 3, 8, 100, INF):
        for alpha in (1, 1.3, 2, 3, 7):
            v = NormPowerNoise(n, p, alpha).error_times_mu2()
            assert math.isfinite(v) and v >= n * (1 - 1e-12), (n, p, alpha, v)


@pytest.mark.parametrize("alpha", [1, 1.5, 3, 6])
def test_euclidean_norm_powers_approach_the_gaussian_product(alpha):
    """phi = ||x||_2^alpha: err mu^2 / n -> 1 (docs/theory.md sec. 8)."""
    ratios = [NormPowerNoise(n, 2, alpha).error_times_mu2() / n for n in (10, 1000, 10**6)]
    assert ratios[0] >= ratios[1] >= ratios[2] >= 1 - 1e-12
    assert ratios[2] - 1 < 1e-4


def test_scale_for_mu():
    noise = NormPowerNoise(8, 1.5, 2)
    assert noise.scale_for_mu(0.5) == pytest.approx(math.sqrt(noise.fisher_norm()) / 0.5, rel=1e-15)


# ------------------------------------------------------------- trade-off tools
def test_empirical_tradeoff_small_cases():
    # identical samples: the trade-off is 1 - alpha exactly (ties randomised)
    a = np.linspace(0, 1, 11)
    np.testing.assert_allclose(empirical_tradeoff([1.0, 1.0, 1.0], [1.0, 1.0], a), 1 - a, atol=1e-12)
    np.testing.assert_allclose(empirical_tradeoff([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], a), 1 - a, atol=1e-12)
    # disjoint: loss_r entirely below loss_p -> beta = 0 for every alpha > 0
    beta = empirical_tradeoff([5.0, 6.0], [0.0, 1.0], a)
    assert beta[0] == 1.0 and np.all(beta[1:] == 0.0)
    # atoms: P-loss {0: 1/2, 1: 1/2}, R-loss {0: 3/4, 1: 1/4}: beta(a) = 1 - 3a/2 on [0, 1/2], (1 - a)/2 after
    beta = empirical_tradeoff([0, 0, 1, 1], [0, 0, 0, 1], a)
    np.testing.assert_allclose(beta, np.where(a <= 0.5, 1 - 1.5 * a, (1 - a) / 2), atol=1e-12)


def _sup_shift(d: float, r: float) -> float:
    z = np.linspace(-10, 10, 20001)
    return float(np.max(np.abs(stats.norm.cdf((z - d) / r) - stats.norm.cdf(z))))


def test_gaussian_mechanism_is_exactly_gdp():
    """Gaussian noise: L ~ N(mu^2/2, mu^2) under D and N(-mu^2/2, mu^2) under D', so the pair is
    exactly mu-GDP. Budget FALSE_FAILURE: DKW on each sample (FALSE_FAILURE/4 each), sample
    mean and sd (FALSE_FAILURE/4 each)."""
    n, mu, m = 30, 1.3, 100000
    rng = np.random.default_rng(41)
    noise = NormPowerNoise(n, 2, 2)
    lp, lr = noise.privacy_loss(random_direction(n, rng), noise.scale_for_mu(mu), m, rng)
    eps = dkw(m, FALSE_FAILURE / 4)
    assert stats.kstest(lp, stats.norm(mu**2 / 2, mu).cdf).statistic <= eps
    assert stats.kstest(lr, stats.norm(-(mu**2) / 2, mu).cdf).statistic <= eps
    # ks of the standardised sample: DKW + the largest effect of the estimated mean and sd
    dmax = z_two_sided(FALSE_FAILURE / 4) / math.sqrt(m)
    lo, hi = (math.sqrt(stats.chi2.ppf(q, m - 1) / (m - 1)) for q in (FALSE_FAILURE / 8, 1 - FALSE_FAILURE / 8))
    shift = max(_sup_shift(s * dmax, r) for s in (-1, 1) for r in (lo, hi))
    dist = gdp_distance(lp, lr, mu)
    assert set(dist) == {"ks", "tradeoff_gap"}
    assert dist["ks"] <= eps + shift, (dist, eps + shift)
    # trade-off band: G(alpha + eps + 1/m) - eps <= beta(alpha) <= G(alpha - eps) + eps
    a = np.linspace(0, 1, 1001)

    def g(x):
        return stats.norm.cdf(stats.norm.isf(np.clip(x, 0, 1)) - mu)

    beta = empirical_tradeoff(lp, lr, a)
    upper = g(a - eps) + eps
    lower = g(a + eps + 1 / m) - eps
    assert np.all(beta <= upper) and np.all(beta >= lower)
    bound = float(np.max(np.maximum(upper - g(a), g(a) - lower)))
    assert dist["tradeoff_gap"] <= bound
    assert dist["tradeoff_gap"] < 0.02  # typical value ~0.004


@pytest.mark.slow  # 8 s; by default test_clt.py checks l_1 noise at n = 1000 is 1-GDP to 6 standard errors
def test_l1_noise_clt_in_high_dimension():
    """p = 1, alpha = 1 (i.i.d. Laplace, I = Id, mu = 1/t): for a random direction the pair is close
    to mu-GDP at n = 1000, clearly less so at n = 4 and for the axis direction at n = 1000."""
    mu = 1.0
    rng = np.random.default_rng(2024)
    gaps = {}
    for n, direction, m in ((4, "random", 200000), (1000, "random", 40000), (1000, "axis", 40000)):
        noise = NormPowerNoise(n, 1, 1)
        v = random_direction(n, rng) if direction == "random" else axis_direction(n)
        lp, lr = noise.privacy_loss(v, noise.scale_for_mu(mu), m, rng)
        gaps[n, direction] = gdp_distance(lp, lr, mu)
    hi, low, axis = gaps[1000, "random"], gaps[4, "random"], gaps[1000, "axis"]
    assert hi["tradeoff_gap"] < low["tradeoff_gap"] < axis["tradeoff_gap"], gaps
    assert hi["ks"] < low["ks"] < axis["ks"], gaps


# --------------------------------------------------------------------------- l_p Laplace mechanism
@pytest.mark.parametrize(
    "n, p, log_c",
    [
        (1, 2.0, math.log(2.0)),  # 1-D Laplace: integral of exp(-|z|) is 2, any p
        (2, 2.0, math.log(2 * math.pi)),  # int exp(-r) 2 pi r dr
        (2, 1.0, math.log(4.0)),  # two independent Laplace(1): 2 x 2
        (2, math.inf, math.log(8.0)),  # square of side 2r: d(4 r^2) = 8 r dr
        (3, 2.0, math.log(8 * math.pi)),  # int exp(-r) 4 pi r^2 dr = 8 pi
    ],
)
def test_norm_laplace_normaliser(n, p, log_c):
    from ldpsim.highdim import NormLaplace

    eps = 1.7
    m = NormLaplace(n, p, eps)
    y = np.zeros((1, n))
    # density at the input itself: eps^n / c
    assert m.log_density(np.zeros(n), y)[0] == pytest.approx(n * math.log(eps) - log_c, rel=1e-12)


def test_norm_laplace_privacy_and_samples():
    from ldpsim.highdim import NormLaplace

    m = NormLaplace(3, 1.5, 0.8)
    x, xp = np.zeros(3), np.array([1.0, 0.0, 0.0])
    # on the ray from x away from x' the log-ratio is exactly eps * ||x - x'||_p = eps
    ray = np.outer([0.5, 3.0, 40.0], [-1.0, 0.0, 0.0])
    np.testing.assert_allclose(m.log_density(x, ray) - m.log_density(xp, ray), 0.8, rtol=1e-12)
    # elsewhere never above it (triangle inequality)
    y = np.random.default_rng(0).normal(scale=3.0, size=(2000, 3))
    assert np.max(m.log_density(x, y) - m.log_density(xp, y)) <= 0.8 + 1e-12
    s = m.sample(xp, 1000, np.random.default_rng(1))
    assert s.shape == (1000, 3)
    # mean of x' + Z/eps is x' (symmetric noise): 6 standard errors
    se = s.std(axis=0) / math.sqrt(1000)
    assert np.all(np.abs(s.mean(axis=0) - xp) < 6 * se)
    with pytest.raises(ValueError, match="eps"):
        NormLaplace(3, 2.0, 0.0)


# --------------------------------------------------------------------------- NormLaplace: the mechanism contract
@pytest.mark.parametrize("n, p", [(1, 2.0), (3, 1.5), (4, math.inf), (2, 1.0)])
def test_norm_laplace_contract(n, p):
    from ldpsim.highdim import NormLaplace, _p_norm
    from ldpsim.mechanisms.base import Mechanism, NotAvailable
    from ldpsim.mechanisms.norm_laplace import NormLaplace as Moved

    eps = 0.8
    m = NormLaplace(n, p, eps)
    assert NormLaplace is Moved and isinstance(m, Mechanism) and m.name == "norm_laplace"
    assert m.params == {"n": n, "p": p, "eps": eps} and repr(m) == f"NormLaplace(n={n}, p={p!r}, eps={eps!r})"
    assert m == NormLaplace(n, p, eps) and hash(m) == hash(NormLaplace(n, p, eps)) and m != NormLaplace(n, p, 0.9)
    # neighbours at l_p distance 1
    [(x0, x1)] = m.neighbours()
    assert len(x0) == len(x1) == n
    assert float(_p_norm(np.subtract(x1, x0), p)) == 1.0
    # the pure eps, its scaling with the distance, the boundary of is_private
    assert m.epsilon(0) == eps and m.epsilon() == eps and m.epsilon(0.0, distance=2.5) == 2.5 * eps
    assert m.is_private(eps) and not m.is_private(eps * (1 - 1e-6))
    assert m.delta(eps) == 0.0 and m.delta(math.inf) == 0.0 and m.epsilon(1.0) == 0.0
    # sample: n reports of dimension n
    s = m.sample(x1, 5, rng=3)
    assert s.shape == (5, n)
    with pytest.raises(LdpSimError, match="^x: got"):
        m.sample(0.0 if n > 1 else [0.0, 1.0], 5)
    if n == 1:  # the Laplace mechanism: exact below eps too
        assert m.exact_delta
        for t in (0.0, 0.3, 0.79):
            # hockey-stick divergence of Lap(0, 1/eps) vs Lap(1, 1/eps) at 30 digits
            with mpmath.workdps(30):
                e, tt = mpmath.mpf(eps), mpmath.mpf(t)
                f0 = lambda y: e / 2 * mpmath.exp(-e * abs(y))
                f1 = lambda y: e / 2 * mpmath.exp(-e * abs(y - 1))
                g = lambda y: max(f0(y) - mpmath.exp(tt) * f1(y), 0)
                # the integrand is positive left of y* = (1 - t/eps)/2, where the loss crosses t
                ref = mpmath.quad(g, [-mpmath.inf, 0, (1 - tt / e) / 2])
            assert m.delta(t) == pytest.approx(float(ref), rel=1e-12)
            assert m.epsilon(m.delta(t)) <= t
        assert m.is_private(0.3, m.delta(0.3)) and not m.is_private(0.3, m.delta(0.3) * (1 - 1e-6))
    else:  # below eps: a d-dimensional integral, not available; delta > 0 there, so not pure
        assert not m.exact_delta
        with pytest.raises(NotAvailable, match=r"^eps: got 0\.5,"):
            m.delta(0.5)
        with pytest.raises(NotAvailable, match=r"^delta: got 0\.1,"):
            m.epsilon(0.1)
        assert not m.is_private(eps * (1 - 1e-6), 0.0)
        g = m.guarantee()
        assert g.delta(eps) == 0.0 and g.delta(0.5) > 0  # the pure eps-DP bound
