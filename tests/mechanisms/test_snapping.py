"""The snapping mechanism (Mironov 2012), ldpsim/mechanisms/noise/snapping.py: the implemented
privacy bound against the exact eps of the sampler, exhaustively over the grid of reports;
the exact law (by bisection over the bit patterns of U*) against exact sums, the ideal
real-number law, a direct enumeration of U* and Monte Carlo draws; grid, clamp, seeds,
rng="os" and one-line errors. Statistical checks fail with probability <= 1e-6 each (fixed
seeds)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.noise.snapping import _P_LO, _P_ONE, ETA, SnappedLaplace, _cum
from tests.stats_checks import FALSE_FAILURE, assert_sample_law

#: (eps, bound) with small grids: every report of the grid is checked
CONFIGS = [
    (0.1, 12.0),
    (0.1, 64.0),
    (0.1, 200.0),
    (1.0, 3.0),
    (1.0, 8.0),
    (1.0, 40.0),
    (4.0, 1.0),
    (4.0, 4.0),
    (4.0, 20.0),
]


def pairs_for(B: float) -> list[tuple[float, float]]:
    """The neighbours at the middle and both clamps, inputs off the grid, and one beyond B."""
    return [(0.0, 1.0), (B - 1.0, B), (-B, -B + 1.0), (0.3, 1.3), (-2.5, -1.5), (B - 0.7, B + 0.3), (0.5, -0.5)]


def one_line(exc, *words):
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, (w, msg)


# --------------------------------------------------------------------------- privacy
@pytest.mark.parametrize("eps,B", CONFIGS)
def test_exact_eps_within_the_implemented_bound(eps, B):
    m = SnappedLaplace(eps, B)
    bound = float(m.epsilon(0.0))
    assert bound <= eps and bound == pytest.approx(eps, rel=1e-12)
    # the implemented bound, exactly: (1 + 12 b eta)/lambda + 2 eta <= eps
    assert SnappedLaplace.bound_for(m.lam, B) <= Fraction(eps)
    exact = m.exact_epsilon(pairs_for(B))
    assert exact <= bound, (exact, bound)
    # the law is right: the exact eps is 1/lambda up to floating-point effects, not below
    assert abs(exact * m.lam - 1.0) <= 1e-12, (exact, 1.0 / m.lam)


def test_exact_eps_with_a_power_of_two_sensitivity():
    m = SnappedLaplace(0.5, 20.0, sensitivity=2.0)
    assert m.lam * 2.0 == m.scale and m.grid_step == 8.0  # lambda just above 2 units of 2: Lambda = 4 * 2
    exact = m.exact_epsilon([(0.0, 2.0), (18.0, 20.0), (-20.0, -18.0), (0.6, 2.6)])
    assert exact <= m.epsilon(0.0) and abs(exact * m.lam - 1.0) <= 1e-12


def test_beyond_the_reach_of_the_noise_the_mechanism_is_not_private():
    """B above ~354 lambda: refused, and rightly: built anyway, an output is reachable from
    one input and not from its neighbour (U* is a double: |noise| <= 1022 ln2 lambda)."""
    with pytest.raises(LdpSimError) as exc:
        SnappedLaplace(1.0, 400.0)
    one_line(exc, "bound", "400.0")
    m = SnappedLaplace.__new__(SnappedLaplace)
    m.eps, m.sensitivity, m.bound = 1.0, 1.0, 400.0
    m._setup(400.0, SnappedLaplace._calibrate_lambda(1.0, 400.0))
    assert not m._within_reach()
    assert m.exact_epsilon([(400.0, 399.0)]) == math.inf
    assert SnappedLaplace(1.0, 350.0)._within_reach()  # just inside the limit (about 353)


def test_delta_and_epsilon_follow_the_contract():
    m = SnappedLaplace(1.0, 8.0)
    e = m.epsilon(0.0)
    assert m.delta(e) == 0.0 and m.delta(math.inf) == 0.0 and list(m.delta([e, 2 * e])) == [0.0, 0.0]
    with pytest.raises(NotAvailable) as exc:
        m.delta(e / 2)
    one_line(exc, "eps")
    with pytest.raises(NotAvailable):
        m.epsilon(1e-3)
    assert m.epsilon(1.0) == 0.0
    assert m.is_private(1.0) and not m.is_private(0.999)
    assert m.guarantee().epsilon(0.0) == e


# --------------------------------------------------------------------------- the exact law
@pytest.mark.parametrize("eps,B", [(1.0, 8.0), (4.0, 4.0), (0.1, 64.0)])
def test_pmf_sums_to_one_exactly(eps, B):
    m = SnappedLaplace(eps, B)
    for x in (0.0, 0.3, B, -B + 0.25, 5.0 * B):
        masses = m.exact_masses(x)
        assert sum(masses, Fraction(0)) == 1
        assert all(p > 0 for p in masses)  # every report is possible from every input
    assert math.fsum(np.exp(m.log_density(0.3, m.support()))) == pytest.approx(1.0, abs=1e-14)


def _ideal(m: SnappedLaplace, x: float) -> list[mpmath.mpf]:
    """The law in real arithmetic: Laplace(lambda) noise added to clamp(x), the cells of the
    grid (ties to even have measure zero), clamped; 40 digits."""
    lam, g = mpmath.mpf(m.scale), mpmath.mpf(m.grid_step)
    xc = mpmath.mpf(min(max(x, -m.bound), m.bound))

    def cdf(t):  # P(x + Z < t)
        d = t - xc
        return mpmath.exp(d / lam) / 2 if d < 0 else 1 - mpmath.exp(-d / lam) / 2

    sup = [mpmath.mpf(y) for y in m.support().tolist()]
    # the ends +-B collect everything rounded beyond the next grid point inside
    first = [cdf(sup[1] - g / 2)]
    last = [1 - cdf(sup[-2] + g / 2)]
    return first + [cdf(y + g / 2) - cdf(y - g / 2) for y in sup[1:-1]] + last


@pytest.mark.parametrize(
    "eps,B,x", [(1.0, 8.0, 0.0), (1.0, 9.0, 0.3), (4.0, 4.1, 2.2), (0.1, 64.0, -7.0), (0.7, 20.0, 19.6)]
)
def test_exact_law_against_the_ideal_law(eps, B, x):
    """The floating-point law differs from the real-number law only by rounding: relatively
    by less than 1e-12 on every report (an independent computation of the whole pmf)."""
    m = SnappedLaplace(eps, B)
    with mpmath.workdps(40):
        ideal = _ideal(m, x)
        exact = [mpmath.mpf(p.numerator) / p.denominator for p in m.exact_masses(x)]
        assert mpmath.fsum(ideal) == pytest.approx(1.0, abs=1e-30)
        worst = max(abs(a / b - 1) for a, b in zip(exact, ideal))
    assert worst < 1e-12, float(worst)


def test_exact_law_against_a_direct_enumeration_of_u():
    """A tiny grid: every U* on a coarse lattice of patterns (exponents 1..70, 2^12 mantissas
    each) and every pattern within 3 of each bisection end gives, computed directly, the
    report whose interval of patterns holds it; the coarse lattice's Riemann sum of masses
    matches the exact masses."""
    m = SnappedLaplace(4.0, 1.0)
    sup = m.support()
    assert sup.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    x = 0.3
    j = np.arange(1, 71)
    mant = np.arange(0, 2**52, 2**40, dtype=np.int64)
    pats = (((1023 - j)[:, None] << 52) | mant[None, :]).reshape(-1)
    for plus in (True, False):
        cuts = m._cuts(np.full(sup.size, x), sup, plus)
        near = (cuts[:, None] + np.arange(-3, 4)[None, :]).reshape(-1)
        p_all = np.unique(np.concatenate([pats, near[(near >= _P_LO) & (near < _P_ONE)]]))
        direct = m._snap(np.array(x), m.scale if plus else -m.scale, p_all.view(np.float64))
        # the report predicted by the intervals [cut_k, cut_k+1) (S = +1) or [cut_k, cut_k-1) (S = -1)
        order = cuts if plus else cuts[::-1]
        pos = np.searchsorted(order, p_all, side="right") - 1
        predicted = sup[pos] if plus else sup[::-1][pos]
        np.testing.assert_array_equal(direct, predicted)
        # coarse masses: each lattice point stands for the 2^40 doubles after it (mass u-spacing)
        w = np.ldexp(1.0, -(j + 12).astype(int))  # 2^40 doubles of mass 2^-(j+52) each
        coarse = np.zeros(sup.size)
        d = m._snap(np.array(x), m.scale if plus else -m.scale, pats.view(np.float64))
        np.add.at(coarse, np.searchsorted(sup, d), np.repeat(w, mant.size))
        exact = np.zeros(sup.size)
        ends = list(order) + [_P_ONE]
        for k in range(sup.size):
            idx = k if plus else sup.size - 1 - k
            exact[idx] = float(Fraction(_cum(int(ends[k + 1])) - _cum(int(ends[k])), 2**1074))
        np.testing.assert_allclose(coarse, exact, rtol=0, atol=2e-3)


def test_cum_is_the_law_of_u():
    assert _cum(_P_LO) == 0 and _cum(_P_ONE) == 2**1074
    half = int(np.array([0.5]).view(np.int64)[0])
    assert _cum(half) == 2**1073  # P(U* < 1/2) = 1/2
    low = int(np.array([2.0**-1021]).view(np.int64)[0])
    assert _cum(low) == 2**53  # P(U* < 2^-1021) = 2^-1021: all of it in the lowest binade
    # every double of the two lowest binades has mass 2^-1073 (the lowest one holds the capped tail)
    assert _cum(low + 1) - _cum(low) == 2 and _cum(low) - _cum(low - 1) == 2 and _cum(_P_LO + 1) == 2


class _Words:
    """A fake random source: fixed 64-bit words, in turn."""

    def __init__(self, words):
        self.w = list(words)

    def words(self, n):
        out, self.w = self.w[:n], self.w[n:]
        return np.array(out, dtype=np.uint64)


def test_uniform_doubles_from_words():
    # trailing zeros give the exponent: 2^5 -> j = 6; a zero word goes on to the next word
    m_word = (0x123456789ABCD << 12) | 1
    u, plus = SnappedLaplace._uniform_doubles(_Words([1 << 5, 1, m_word, 0]), 2)
    assert u[0] == (1 + 0x123456789ABCD / 2**52) * 2.0**-6 and plus[0]
    assert u[1] == 2.0**-1 and not plus[1]
    u, _ = SnappedLaplace._uniform_doubles(_Words([0, 1 << 3, 0]), 1)
    assert u[0] == 2.0**-68  # 64 + 3 zeros: j = 68
    u, _ = SnappedLaplace._uniform_doubles(_Words([0] * 17 + [0]), 1)
    assert u[0] == 2.0**-1022  # 1021 zeros or more: the capped exponent


def test_exponent_law():
    u, plus = SnappedLaplace._uniform_doubles(np.random.default_rng(20261202), 400_000)
    j = -np.frexp(u)[1] + 1  # u in [2^-j, 2^-j+1)
    pmf = np.ldexp(1.0, -np.arange(1, 31))
    pmf = np.append(pmf, 1.0 - pmf.sum())
    assert_sample_law(np.minimum(j, 31) - 1, pmf, FALSE_FAILURE / 2)
    assert_sample_law(plus.astype(np.int64), np.array([0.5, 0.5]), FALSE_FAILURE / 2)


@pytest.mark.parametrize("eps,B,x,seed", [(1.0, 8.0, 0.3, 11), (4.0, 4.0, 3.9, 12), (0.1, 64.0, -60.0, 13)])
def test_sampler_against_the_exact_law(eps, B, x, seed):
    m = SnappedLaplace(eps, B)
    z = m.sample(x, 300_000, rng=seed)
    sup = m.support()
    idx = np.searchsorted(sup, z)
    assert np.all(sup[np.minimum(idx, sup.size - 1)] == z)
    pmf = m.pmf(x)
    assert_sample_law(idx, pmf / pmf.sum(), FALSE_FAILURE)


def test_bisection_ends_and_monotone_windows():
    for eps, B, x in [(1.0, 8.0, 0.3), (4.0, 4.0, -1.1), (0.1, 64.0, 63.0)]:
        assert SnappedLaplace(eps, B).check_monotone(x)


# --------------------------------------------------------------------------- moments
def test_mean_and_variance():
    m = SnappedLaplace(1.0, 8.0)
    assert m.mean(0.0) == 0.0  # symmetric: S = +-1 mirror each other exactly
    xs = np.linspace(-1.0, 1.0, 9)
    means = m.mean(xs)
    assert means.shape == xs.shape and np.allclose(means, -means[::-1], atol=1e-15)
    # interior bias: periodic with period Lambda, zero on the grid and at midpoints
    bias = m.mean(np.linspace(0.0, 2.0, 41)) - np.linspace(0.0, 2.0, 41)
    assert np.max(np.abs(bias)) == pytest.approx(0.0584, abs=5e-4)
    assert abs(m.mean(2.0) - 2.0) < 2e-3 and m.mean(8.0) < 7.6  # the clamp pulls towards 0
    far = SnappedLaplace(1.0, 40.0)  # clamps e^-38 away: no bias on the grid and at its midpoints
    assert abs(far.mean(2.0) - 2.0) < 1e-14 and abs(far.mean(1.0) - 1.0) < 1e-14
    # variance against the exact sums over the pmf
    sup = [Fraction(y) for y in m.support().tolist()]
    p = m.exact_masses(0.3)
    mu = sum(y * q for y, q in zip(sup, p))
    assert m.variance(0.3) == float(sum((y - mu) ** 2 * q for y, q in zip(sup, p)))
    assert m.mean(0.3) == float(mu)


# --------------------------------------------------------------------------- reports
def test_outputs_on_the_grid_and_in_range():
    for eps, B, s in [(1.0, 8.0, 1.0), (0.5, 20.0, 2.0), (3.0, 3.0, 1.0), (4.0, 1.7, 0.25)]:
        m = SnappedLaplace(eps, B, sensitivity=s)
        z = m.privatize(np.linspace(-2 * B, 2 * B, 100_000), rng=5)
        assert np.all(np.abs(z) <= B)
        on_grid = (z / m.grid_step == np.rint(z / m.grid_step)) | (np.abs(z) == B)
        assert np.all(on_grid) and np.all(np.isin(z, m.support()))
        assert not np.any(np.signbit(z) & (z == 0))  # never -0.0


def test_seeds_and_os_generator():
    m = SnappedLaplace(1.0, 8.0)
    a = m.sample(0.3, 1000, rng=7)
    assert a.tobytes() == m.sample(0.3, 1000, np.random.default_rng(7)).tobytes()
    assert a.tobytes() != m.sample(0.3, 1000, rng=8).tobytes()
    z = m.sample(0.3, 20_000, rng="os")
    assert np.all(np.isin(z, m.support())) and np.all(m.log_density(0.3, z) > -np.inf)
    assert np.asarray(m.privatize([0.0, 1.0], rng="os")).shape == (2,)
    assert m.log_density(0.3, 0.1) == -math.inf and math.isnan(m.log_density(0.3, math.nan))


def test_catalog_and_calibration():
    m = catalog.build("snapped_laplace", eps=1.0, bound=8.0)
    assert m == SnappedLaplace(1.0, 8.0) == SnappedLaplace.calibrate(1.0, 0.0, 1.0, bound=8.0)
    assert repr(m) == "SnappedLaplace(eps=1.0, bound=8.0, sensitivity=1.0)"
    k4 = SnappedLaplace.calibrate(1.0, 0.0, 1.0, compositions=4, bound=8.0)
    assert 4 * k4.epsilon(0.0) <= 1.0 and k4.epsilon(0.0) == pytest.approx(0.25, rel=1e-12)
    with pytest.raises(LdpSimError) as exc:
        SnappedLaplace.calibrate(1.0, 1e-5, 1.0, bound=8.0)
    one_line(exc, "delta")
    assert ETA == Fraction(1, 2**52)


@pytest.mark.parametrize(
    "args,name",
    [
        ((1.0, 8.0, 3.0), "sensitivity"),
        ((1.0, 8.0, -2.0), "sensitivity"),
        ((1.0, 0.9), "bound"),
        ((1.0, 400.0), "bound"),
        ((0.0, 8.0), "eps"),
        ((math.nan, 8.0), "eps"),
        ((1e-17, 8.0), "eps"),
        ((1.0, math.inf), "bound"),
    ],
)
def test_bad_parameters(args, name):
    with pytest.raises(LdpSimError) as exc:
        SnappedLaplace(*args)
    one_line(exc, name)


def test_non_additive_members_refuse():
    m = SnappedLaplace(1.0, 8.0)
    for call in (lambda: m.sample_noise(3), lambda: m.log_pdf(0.0), lambda: m.std, lambda: m.mse):
        with pytest.raises(LdpSimError) as exc:
            call()
        one_line(exc)


# --------------------------------------------------------------------------- heavier sweeps
@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.05, 0.1, 0.3, 0.5, 1.0, 1.7, 2.0, 4.0, 8.0])
def test_exact_eps_sweep(eps):
    """Bounds from just above lambda up to the reach limit of the noise, every pair type."""
    lam = 1.0 / eps
    for B in sorted({1.5 * lam, 10 * lam, 100 * lam, 300 * lam, 350 * lam}):
        m = SnappedLaplace(eps, B)
        exact = m.exact_epsilon(pairs_for(B) + [(B - 0.5, B + 0.5), (-B + 0.01, -B + 1.01)])
        assert exact <= m.epsilon(0.0), (eps, B, exact, m.epsilon(0.0))
        if B >= 1.0:  # else no two clamped inputs are a sensitivity apart: less than 1/lambda
            assert abs(exact * m.lam - 1.0) <= 1e-10, (eps, B, exact)
        assert m.check_monotone(0.3) and m.check_monotone(B - 0.5)
