"""Noise mechanisms at extreme parameters (issue 14): eps from 1e-300 to 800, delta down to
1e-300, k up to 10^9. Each call returns a correct number (checked against mpmath or a closed
form computed here) or raises one LdpSimError naming the parameter and the supported range;
never another exception, never a warning (warnings are errors in these tests), never a hang.

References are independent of the code under test: the Gaussian profile and its largest mu
are computed with mpmath at a precision chosen from the size of the cancellation, variances
from their defining sums or integrals in mpmath, the staircase gamma* from its closed form
in mpmath.
"""

from __future__ import annotations

import math
import time
import warnings

import mpmath as mp
import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.noise import Gaussian, Geometric, Laplace, Staircase, TruncatedLaplace, gdp_log_delta

FLOAT_MAX = float(np.finfo(float).max)


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _timed(fn, limit: float = 1.0):
    """``fn()`` within ``limit`` seconds of CPU (the work it does, whatever else runs)."""
    t0 = time.process_time()
    out = fn()
    elapsed = time.process_time() - t0
    assert elapsed < limit, f"took {elapsed:.2f} s of CPU (limit {limit} s)"
    return out


# --------------------------------------------------------------------------- mpmath GDP
def _dps(eps, mu: mp.mpf) -> int:
    # delta = Phi(a) (1 - e^s) with |s| ~ mu / max(1, |a|), a = mu/2 - eps/mu: the difference of
    # the two terms cancels about -log10 |s| digits
    with mp.workdps(30):
        a = abs(mu / 2 - mp.mpf(eps) / mu)
        return 40 + max(0, int(-mp.log10(mu / max(1, a))))


def gdp_log_delta_mp(eps: float, mu) -> mp.mpf:
    """log(Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)) at enough digits for the cancellation."""
    mu = mp.mpf(mu)
    with mp.workdps(_dps(eps, mu)):
        e = mp.mpf(eps)
        d = mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2)
        assert d > 0
        return mp.log(d)


def largest_mu_mp(eps: float, delta: float) -> mp.mpf:
    """The largest mu with delta_mu(eps) <= delta (delta increases with mu): bracketed by
    decades from mu = 1, then bisection on log mu."""
    lt = mp.log(mp.mpf(delta))
    with mp.workdps(30):
        lo = hi = mp.mpf(1)
        if gdp_log_delta_mp(eps, lo) > lt:
            while gdp_log_delta_mp(eps, lo) > lt:
                hi, lo = lo, lo / 10
        else:
            while gdp_log_delta_mp(eps, hi) <= lt:
                lo, hi = hi, hi * 10
        for _ in range(80):  # 10 / 2^80: far below the tolerances used
            mid = mp.sqrt(lo * hi)
            if gdp_log_delta_mp(eps, mid) > lt:
                hi = mid
            else:
                lo = mid
        return lo


EXTREME_PAIRS = [
    (1e-12, 1e-300),
    (1e-8, 1e-300),
    (1e-10, 1e-300),
    (1e-6, 1e-300),
    (1e-300, 1e-300),
    (1e-300, 0.5),
    (1e-300, 0.9),
    (700.0, 1e-300),
    (800.0, 1e-300),
    (0.5, 1e-5),
]


@pytest.mark.parametrize("eps, delta", EXTREME_PAIRS)
def test_analytic_gaussian_at_extreme_pairs_is_valid_tight_and_fast(eps, delta):
    """Defect 8: the repair loop after the root solve walked mu down by ulps (minutes at
    eps = 1e-12, delta = 1e-300) because the erfcx difference cancels when mu is small."""
    m = _timed(lambda: Gaussian.analytic(eps, delta))
    mu = mp.mpf(1) / mp.mpf(m.sigma)  # the mechanism's exact mu (sensitivity 1)
    assert gdp_log_delta_mp(eps, mu) <= mp.log(mp.mpf(delta))  # valid
    best = largest_mu_mp(eps, delta)
    assert mu <= best * (1 + mp.mpf("1e-12"))
    assert mu >= best * (1 - mp.mpf("1e-9")), (float(mu), float(best))  # tight
    # the same through calibrate, and k-fold (sqrt(k) mu-GDP overall)
    assert _timed(lambda: Gaussian.calibrate(eps, delta)) == m
    mk = _timed(lambda: Gaussian.calibrate(eps, delta, compositions=10**9))
    mu_k = mp.sqrt(10**9) / mp.mpf(mk.sigma)
    assert gdp_log_delta_mp(eps, mu_k) <= mp.log(mp.mpf(delta))
    assert mu_k >= best * (1 - mp.mpf("1e-9"))


@pytest.mark.parametrize("mu", [1e-300, 1e-100, 1e-30, 1e-14, 1e-10, 1e-6, 1e-3, 0.3, 1.0])
@pytest.mark.parametrize("r", [0.0, 1e-3, 0.7, 5.0, 20.0, 38.5, 45.0])
def test_gdp_log_delta_small_mu_matches_mpmath(mu, r):
    """log delta of mu-GDP at eps = r mu (a = mu/2 - r) to 1e-15 (4 + a^2) absolute, plus the
    spacing of floats near log delta itself: the erfcx difference used to lose -log10(mu)
    digits (and gave -inf below mu ~ 1e-17)."""
    eps = r * mu
    ref = float(gdp_log_delta_mp(eps, mu))
    got = float(gdp_log_delta(eps, mu))
    a = mu / 2 - eps / mu
    assert abs(got - ref) <= 1e-15 * (4 + a * a + abs(ref)), (got, ref)


# --------------------------------------------------------------------------- defect 9
def _refused(fn, name: str):
    """``fn()`` raises one LdpSimError whose one-line message names ``name`` and a range."""
    with pytest.raises(LdpSimError) as info:
        fn()
    msg = str(info.value)
    assert msg.startswith(f"{name}: got ") and "\n" not in msg, msg
    return msg


def tl_reference(eps: float, delta: float, D: float = 1.0):
    """Truncated Laplace from its definition (mpmath): lam = D/eps,
    A = lam log(1 + (e^eps - 1)/(2 delta)), density C e^{-|x|/lam}/lam on [-A, A]."""
    with mp.workdps(60):
        e, d = mp.mpf(eps), mp.mpf(delta)
        lam = D / e
        K = mp.log1p(mp.expm1(e) / (2 * d))
        C = 1 / (2 * -mp.expm1(-K))
        return lam, K, C


def tl_variance_mp(eps: float, delta: float, D: float = 1.0) -> mp.mpf:
    """E X^2 = 2 C lam^2 int_0^K y^2 e^-y dy = 2 C lam^2 gamma(3, K) (lower incomplete gamma)."""
    lam, K, C = tl_reference(eps, delta, D)
    with mp.workdps(60):
        return 2 * C * lam**2 * mp.gammainc(3, 0, K)


def tl_delta_mp(eps: float, delta: float, t: float, D: float = 1.0) -> mp.mpf:
    """Hockey-stick E_{e^t}(P || P + D) by quadrature of (p - e^t r)_+ between the breakpoints
    (the crossing of p = e^t r inside [0, D] is at x* = (D - t lam)/2)."""
    lam, K, C = tl_reference(eps, delta, D)
    with mp.workdps(60):
        A = lam * K
        p = lambda x: C / lam * mp.exp(-abs(x) / lam) if abs(x) <= A else mp.mpf(0)
        r = lambda x: p(x - D)
        g = mp.exp(t)
        pts = sorted({-A, D - A, mp.mpf(0), mp.mpf(D), A, D + A, min(max((D - t * lam) / 2, 0), D)})
        pts = [x for x in pts if -A <= x <= D + A]
        total = mp.mpf(0)
        for lo, hi in zip(pts[:-1], pts[1:]):
            mid = (lo + hi) / 2
            if p(mid) - g * r(mid) > 0:
                total += mp.quad(lambda x: p(x) - g * r(x), [lo, hi])
        return total


@pytest.mark.parametrize(
    "eps, delta", [(709.0, 1e-5), (710.0, 1e-5), (800.0, 1e-300), (1e-12, 1e-300), (1e-300, 0.25), (0.01, 0.4)]
)
def test_truncated_laplace_at_extreme_eps(eps, delta):
    """Defect 9: TruncatedLaplace(710, 1e-5).delta raised OverflowError (expm1(710) in the mass
    without counterpart); tiny eps lost the overlap terms to cancellation (1 - e^-w with w ~
    1e-300) and the variance to 2 - q (K^2 + 2K + 2) (or overflowed)."""
    m = TruncatedLaplace(eps, delta)
    assert m.delta(eps) == pytest.approx(delta, rel=1e-9)  # exactly (eps, delta)-DP
    for t in (0.0, eps / 2):
        ref = float(tl_delta_mp(eps, delta, t))
        assert m.delta(t) == pytest.approx(ref, rel=1e-9, abs=1e-300), t
    e = m.epsilon(delta)
    assert 0.0 <= e <= eps * (1 + 1e-12) and m.delta(e) <= delta
    assert m.epsilon(0.0) == math.inf
    var = tl_variance_mp(eps, delta)
    assert m.variance == pytest.approx(float(var), rel=1e-9)
    assert m.std == pytest.approx(float(mp.sqrt(var)), rel=1e-9)
    x = m.sample_noise(1000, rng=np.random.default_rng(3))
    assert np.all(np.abs(x) <= m.bound) and np.all(np.isfinite(x))
    assert m.tradeoff(0.0) == pytest.approx(1.0 - delta, rel=1e-9)  # f(0) = 1 - delta (the atom-free mass)
    c = TruncatedLaplace.calibrate(eps, delta)
    assert c.delta(eps) <= delta


def test_truncated_laplace_variance_beyond_the_float_range_is_refused():
    m = TruncatedLaplace(1e-300, 1e-300)
    assert float(mp.log10(tl_variance_mp(1e-300, 1e-300))) > 308.3
    msg = _refused(lambda: m.variance, "eps")
    assert "finite" in msg
    assert m.std == pytest.approx(float(mp.sqrt(tl_variance_mp(1e-300, 1e-300))), rel=1e-9)


def test_laplace_tiny_eps():
    """Defect 9: Laplace.calibrate(1e-155).mse raised OverflowError (1e-154: inf); a scale
    beyond the float range (eps = 1e-320) is refused naming eps."""
    m = Laplace.calibrate(1e-155)
    assert m.scale == pytest.approx(1e155, rel=1e-15)
    msg = _refused(lambda: m.mse, "scale")
    assert "9.48" in msg  # the largest scale with a finite variance, sqrt(max/2) = 9.48e153
    assert m.std == pytest.approx(math.sqrt(2) * 1e155, rel=1e-15)
    _refused(lambda: Laplace.calibrate(1e-154).variance, "scale")  # 2e308 > the largest float
    assert Laplace.calibrate(2e-154).variance == pytest.approx(0.5e308, rel=1e-14)
    msg = _refused(lambda: Laplace.calibrate(1e-320), "eps")
    assert "5.696e-306" in msg  # sensitivity / MAX_NOISE_SCALE (the largest float / 1024)
    assert Laplace.calibrate(1e-300).epsilon(0.0) <= 1e-300


@pytest.mark.parametrize("mu", [700.0, 710.0, 800.0])
def test_laplace_tradeoff_past_e_to_the_700(mu):
    """Beyond the list: Laplace(1/mu).tradeoff(0) was NaN for mu >= 710 (e^mu * 0)."""
    m = Laplace(1.0 / mu)
    alphas = np.array([0.0, 1e-320, 1e-300, 0.3, 0.5, 0.9, 1.0])
    got = m.tradeoff(alphas)
    with mp.workdps(40):
        M = mp.mpf(1) / mp.mpf(m.scale)  # the mechanism's exact mu
        em = mp.exp(-M)
        ref = [
            max(0, 1 - mp.exp(M) * a) if a < em / 2 else (em / (4 * a) if a <= 0.5 else em * (1 - a))
            for a in map(mp.mpf, alphas)
        ]
    assert np.allclose(got, [float(r) for r in ref], rtol=1e-12, atol=0)


def _gamma_star_mp(eps: float) -> mp.mpf:
    """Geng-Viswanath Thm 7 at enough digits for the cancellation in b - 2b^2 + 2b^4 - b^5 ~ eps^3."""
    # inner ~ eps^3 cancels 3 |log10 eps| digits, the two terms ~ 1/eps another |log10 eps|
    with mp.workdps(40 + 5 * max(0, int(-math.log10(eps)))):
        e = mp.mpf(eps)
        b = mp.exp(-e)
        inner = b - 2 * b**2 + 2 * b**4 - b**5
        return -b / (1 - b) + mp.cbrt(inner) / (mp.cbrt(2) * (1 - b) ** 2)


@pytest.mark.parametrize("eps", [1e-300, 1e-200, 1e-100, 1e-12, 1e-6, 1e-4, 1e-2, 0.3, 0.5, 0.6, 2.0])
def test_staircase_optimal_gamma_at_small_eps(eps):
    """Beyond the list: gamma* lost digits to cancellation below eps ~ 0.1 (0.2% at 1e-4, 0 at
    1e-6: the variance-optimal claim failed) and divided by (1 - b)^2 = 0 below eps ~ 1e-154."""
    from ldpsim.mechanisms.noise import _optimal_gamma

    assert _optimal_gamma(eps) == pytest.approx(float(_gamma_star_mp(eps)), rel=1e-14)


def _staircase_variance_mp(eps: float, gamma: float, D: float = 1.0) -> mp.mpf:
    """From the density: |X| = D (G + W), G geometric (P(G = j) = (1-b) b^j), W on [0, gamma)
    with probability p0 = gamma/(gamma + (1-gamma) b) (uniform), else uniform on [gamma, 1)."""
    with mp.workdps(60):
        e, g = mp.mpf(eps), mp.mpf(gamma)
        b, one_b = mp.exp(-e), -mp.expm1(-e)
        EG, EG2 = b / one_b, b * (1 + b) / one_b**2
        p0 = g / (g + (1 - g) * b)
        EW = p0 * g / 2 + (1 - p0) * (1 + g) / 2
        EW2 = p0 * g**2 / 3 + (1 - p0) * (1 + g + g**2) / 3
        return D**2 * (EG2 + 2 * EG * EW + EW2)


def _scale_check(x: np.ndarray, eps: float) -> None:
    """eps |X| is about Exp(1) for tiny eps (staircase: D (G + W), G geometric with ratio e^-eps;
    geometric: a difference of two such): each draw lands outside [1e-3, 10] with probability
    below 1.1e-3 (2e-3 for the difference), so more than 30 of 1000 outside has probability < 1e-15."""
    s = eps * np.abs(x)
    outside = int(np.sum((s < 1e-3) | (s > 10)))
    assert outside <= 30, (outside, s[:5])


@pytest.mark.parametrize("eps", [1e-300, 1e-200, 1e-100, 1e-12])
def test_staircase_tiny_eps(eps):
    """Defect 9: Staircase(1e-300) and Staircase.calibrate(1e-200) raised ZeroDivisionError;
    the sampler saturated numpy's int64 geometric (noise 9.2e18 instead of ~1/eps)."""
    m = _timed(lambda: Staircase(eps), 2.0)
    assert Staircase.calibrate(eps) == m
    assert m.epsilon(0.0) == pytest.approx(eps, rel=1e-12)
    with mp.workdps(40):
        e, g = mp.mpf(eps), mp.mpf(m.gamma)
        b, one_b = mp.exp(-e), -mp.expm1(-e)
        a = one_b / (2 * (g + (1 - g) * b))
        p_plus = mp.mpf(1) / 2 + a * min(g, 1 - g)  # P(loss = +eps); delta(0) = TV = (1 - b) P(+eps)
        tv = one_b * p_plus
    assert m.delta(0.0) == pytest.approx(float(tv), rel=1e-9)
    var = _staircase_variance_mp(eps, m.gamma)
    if var > FLOAT_MAX:
        _refused(lambda: m.variance, "eps")
    else:
        assert m.variance == pytest.approx(float(var), rel=1e-9)
    assert m.std == pytest.approx(float(mp.sqrt(var)), rel=1e-9)
    _scale_check(m.sample_noise(1000, rng=np.random.default_rng(11)), eps)
    c = _timed(lambda: Staircase.calibrate(eps, 1e-300, compositions=10**6), 5.0)
    assert c.epsilon(0.0) > 0


@pytest.mark.parametrize("eps", [1e-300, 1e-200, 1e-100, 1e-12])
def test_geometric_tiny_eps(eps):
    """Defect 9: Geometric(1e-200).mse raised ZeroDivisionError (1e-154: inf); its sampler
    returned 0 (both int64 geometric draws saturated)."""
    m = Geometric.calibrate(eps)
    with mp.workdps(40):
        a = mp.exp(-mp.mpf(eps))
        var = 2 * a / mp.expm1(-mp.mpf(eps)) ** 2  # sum_z z^2 (1-a)/(1+a) a^|z|
    if var > FLOAT_MAX:
        _refused(lambda: m.variance, "eps")
    else:
        assert m.variance == pytest.approx(float(var), rel=1e-12)
    assert m.std == pytest.approx(float(mp.sqrt(var)), rel=1e-12)
    _scale_check(m.sample_noise(1000, rng=np.random.default_rng(12)), eps)
    assert m.epsilon(0.0) == pytest.approx(eps, rel=1e-12)


def test_gaussian_variance_beyond_the_float_range_and_tiny_eps_calibrations():
    m = Gaussian.analytic(1e-300, 1e-300)
    _refused(lambda: m.variance, "sigma")
    assert m.std == m.sigma
    _refused(lambda: Gaussian.classical(1e-320, 1e-5), "eps")
    c = Gaussian.calibrate(1e-12, 1e-300, compositions=10**9, method="corollary")
    # Corollary 4.1: sigma = sqrt(2 log(2/delta0))/eps0, delta0 = delta/(2k) (subnormal here)
    eps0 = 1e-12 / math.sqrt(4 * 10**9 * (math.log(1e-12) - math.log(1e-300)))  # log(e + eps/delta) ~ log(eps/delta)
    assert c.sigma == pytest.approx(math.sqrt(2 * (math.log(2.0) - math.log(1e-300) + math.log(2e9))) / eps0, rel=1e-12)


@pytest.mark.parametrize("cls", [Laplace, Staircase, Geometric])
def test_exact_composed_calibration_at_delta_one_is_refused(cls):
    """Beyond the list: at delta = 1 every mechanism qualifies; the search for the least noise
    ran for minutes at k = 10^9 (or returned eps0 ~ 1e6)."""
    msg = _timed(lambda: _refused(lambda: cls.calibrate(1.0, 1.0, compositions=10**9), "delta"), 1.0)
    assert "[0, 1)" in msg


@pytest.mark.parametrize("cls", [Laplace, Staircase, Geometric])
@pytest.mark.parametrize("eps", [1e-12, 700.0])
def test_exact_composed_calibration_at_a_billion_queries(cls, eps):
    """k = 10^9, delta = 1e-300: the largest per-query eps0 (Brent's method on log eps0; it used
    to take 70+ bisection steps of O(sqrt(k)) each)."""
    from ldpsim.privacy.composition import optimal_delta

    m = _timed(lambda: cls.calibrate(eps, 1e-300, compositions=10**9), 5.0)
    e0 = m.epsilon(0.0)
    assert optimal_delta(e0, 0.0, 10**9, eps) <= 1e-300
    assert optimal_delta(e0 * (1 + 1e-9), 0.0, 10**9, eps) > 1e-300


# --------------------------------------------------------------------------- found by test_api_edges
def test_truncated_laplace_meets_its_own_delta_in_floats():
    """The rounded scale lam = sensitivity/eps could put the loss at the full shift one ulp
    above eps (delta(eps) = 2.7e-20 for a claimed 5e-310), and the rounded K could put the
    mass without counterpart a few ulps above delta (so epsilon(delta) was inf, e.g. at
    eps = 2, delta = 0.3, or at eps = 709)."""
    m = TruncatedLaplace.calibrate(0.00042511440125337323, 5e-310)
    assert m.delta(0.00042511440125337323) <= 5e-310
    for eps, delta in ((2.0, 0.3), (709.0, 1e-5), (1.0, 1e-5), (1e-300, 1e-300), (0.1, 0.49)):
        m = TruncatedLaplace(eps, delta)
        assert m.sensitivity / m.lam <= eps
        assert m.delta(eps) <= delta
        e = m.epsilon(delta)
        assert e <= eps and m.delta(e) <= delta, (eps, delta, e)
        assert m.delta(eps) == pytest.approx(delta, rel=1e-12)  # and no more than rounding below


@pytest.mark.parametrize("eps", [750.0, 800.0, 1e4])
def test_geometric_past_e_to_the_minus_745(eps):
    """The R-mass a^s/(1+a) underflowed to 0, so the loss +eps looked like mass without
    counterpart: epsilon() was inf instead of eps; the trade-off at alpha = 0 was 0 (an atom
    whose P-mass e^-eps underflowed was rejected 'for free'), not 1."""
    m = Geometric(eps)
    assert m.epsilon(0.0) == eps
    assert m.delta(eps) == 0.0 and m.delta(eps / 2) == 1.0  # 1 - e^{-eps/2} = 1 in doubles
    assert m.tradeoff(0.0) == 1.0 and m.tradeoff(0.5) == 0.0
    with mp.workdps(30):
        std = mp.sqrt(2 * mp.exp(-mp.mpf(eps))) / -mp.expm1(-mp.mpf(eps))
    assert m.std == pytest.approx(float(std), rel=1e-12, abs=0.0)


@pytest.mark.parametrize("t", [40.0, 1e3, 1e6])
def test_gaussian_is_never_pure_private_where_its_delta_underflows(t):
    # The Gaussian has no finite pure eps: its delta(t) is positive for every t (the tail of
    # the privacy-loss law, Phi(-t/mu + mu/2) - e^t Phi(-t/mu - mu/2) > 0), but in floats it
    # underflows to 0 far out. is_private(t) must still say no; any delta > 0 is enough.
    g = Gaussian(1.0, 1.0)
    mu = 1.0
    mp.mp.dps = 50
    exact = mp.ncdf(-t / mu + mu / 2) - mp.e**t * mp.ncdf(-t / mu - mu / 2)
    assert exact > 0
    assert math.isinf(g.epsilon(0.0))
    assert not g.is_private(t)
    assert g.is_private(t, 1e-300) == (exact <= 1e-300)
