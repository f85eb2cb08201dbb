"""The exact discrete samplers of ldpsim.mechanisms.noise.exact (Canonne, Kamath and Steinke
2020) against their laws, computed here independently (mpmath for small supports, float64
sums with math.fsum for wide ones), never from the code under test.

Every statistical check fails with probability at most FALSE_FAILURE = 1e-6 per test function when
the sampler is right: within a test the level is split (Bonferroni) over its checks, and a
law check splits its share between a chi-square test over cells (merged where expected
counts are below 50) and exact two-sided binomial tests of the tail counts ``#{|Z| >= m}``
at a few m far out. Seeds are fixed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from ldpsim._rng import SystemRandom
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.noise.discrete_laplace import DiscreteLaplace
from ldpsim.mechanisms.noise.exact import bernoulli_exp, discrete_gaussian, discrete_laplace
from tests.stats_checks import FALSE_FAILURE

mp.mp.dps = 40


# --------------------------------------------------------------------------- exact laws (independent)
def laplace_law(s: int, t: int, m: int) -> dict[int, float]:
    """P(Z = z), |z| <= m, of Lap_Z(t/s): (1 - a)/(1 + a) a^|z|, a = exp(-s/t) (mpmath)."""
    a = mp.exp(-mp.mpf(s) / t)
    c = (1 - a) / (1 + a)
    return {z: float(c * a ** abs(z)) for z in range(-m, m + 1)}


def laplace_tail(s: int, t: int, m: int) -> float:
    """P(|Z| >= m) = 2 a^m/(1 + a) for m >= 1."""
    a = mp.exp(-mp.mpf(s) / t)
    return float(2 * a**m / (1 + a))


def gauss_law(sigma2: Fraction, m: int) -> dict[int, float]:
    """P(Z = z), |z| <= m, of N_Z(0, sigma2): exp(-z^2/(2 sigma2))/C, C summed (mpmath) over
    |z| <= m + 40 sigma + 20 (the rest is below e^-800 of C)."""
    s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
    top = m + int(40 * math.sqrt(float(sigma2))) + 20
    if top > 4000:  # wide support: float64 terms, math.fsum (relative error ~1e-15)
        s2f = float(sigma2)
        z = np.arange(-top, top + 1, dtype=np.float64)
        w = np.exp(-(z * z) / (2 * s2f))
        c = math.fsum(w)
        return {int(k): float(x) / c for k, x in zip(z, w) if abs(k) <= m}
    w = {z: mp.exp(-(mp.mpf(z) ** 2) / (2 * s2)) for z in range(-top, top + 1)}
    c = mp.fsum(w.values())
    return {z: float(w[z] / c) for z in range(-m, m + 1)}


def gauss_tail(sigma2: Fraction, m: int) -> float:
    """P(|Z| >= m) (mpmath, the sum over m <= |z| <= m + 40 sigma + 20)."""
    s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
    sig = math.sqrt(float(sigma2))
    top = m + int(40 * sig) + 20
    if top > 4000:
        s2f = float(sigma2)
        z = np.arange(0, top + 1, dtype=np.float64)
        w = np.exp(-(z * z) / (2 * s2f))
        c = w[0] + 2 * math.fsum(w[1:])
        return 2 * math.fsum(w[m:]) / c
    full = mp.fsum(mp.exp(-(mp.mpf(z) ** 2) / (2 * s2)) for z in range(-top, top + 1))
    part = 2 * mp.fsum(mp.exp(-(mp.mpf(z) ** 2) / (2 * s2)) for z in range(m, top + 1))
    return float(part / full)


# --------------------------------------------------------------------------- checks
def binomial_two_sided_ok(k: int, n: int, p: float, level: float) -> bool:
    """Exact two-sided binomial test of k ~ Bin(n, p) at level ``level``."""
    return bool(stats.binom.cdf(k, n, p) >= level / 2 and stats.binom.sf(k - 1, n, p) >= level / 2)


def assert_integer_law(z: np.ndarray, pmf: dict[int, float], tails: list[tuple[int, float]], alpha: float) -> None:
    """Chi-square over cells (consecutive integers merged until the expected count is >= 50,
    the two ends merged with everything beyond) at alpha/2, and exact binomial tests of the
    counts #{|Z| >= m} at alpha/(2 len(tails))."""
    n = z.size
    keys = sorted(pmf)
    # cells: runs of consecutive integers with expected count >= 50; the first and last
    # absorb everything beyond the support listed
    edges, cur = [], 0.0
    for k in keys:
        cur += pmf[k] * n
        if cur >= 50:
            edges.append(k)
            cur = 0.0
    if not edges:  # pragma: no cover - test design
        raise AssertionError("test design: no cell with expected count >= 50")
    edges[-1] = keys[-1]
    bounds = np.array(edges, dtype=np.int64)  # cell i: (bounds[i-1], bounds[i]]
    cell_of = np.searchsorted(bounds, np.clip(z, keys[0], keys[-1]), side="left")
    observed = np.bincount(cell_of, minlength=bounds.size).astype(float)
    probs = np.zeros(bounds.size)
    for k in keys:
        probs[int(np.searchsorted(bounds, k, side="left"))] += pmf[k]
    # the mass beyond the listed support goes to the end cells (symmetric laws)
    rest = max(0.0, 1.0 - math.fsum(pmf.values()))
    probs[0] += rest / 2
    probs[-1] += rest / 2
    expected = probs * n
    assert expected.min() >= 45, "test design: expected counts must be >= 45"
    if bounds.size > 1:  # (one cell: a law almost all at 0, checked by its tails)
        stat = float(np.sum((observed - expected) ** 2 / expected))
        thr = float(stats.chi2.isf(alpha / 2, bounds.size - 1))
        assert stat <= thr, f"chi-square {stat:.1f} > {thr:.1f} (cells {bounds.size})"
    for m, p in tails:
        k = int(np.count_nonzero(np.abs(z) >= m))
        assert binomial_two_sided_ok(k, n, p, alpha / (2 * len(tails))), (m, k, n * p)


# --------------------------------------------------------------------------- Bernoulli(exp(-gamma))
BERNOULLI_CASES = [
    (0, 1),
    (1, 1000),
    (6, 7),
    (1, 1),
    (5, 2),
    (30, 1),
    (2**70, 2**71),  # Python ints beyond 2^62: gamma = 1/2
    (3 * 2**70 + 1, 2**70),  # gamma just above 3, big integers
]


def test_bernoulli_exp_law():
    rng = np.random.default_rng(20261202)
    level = FALSE_FAILURE / len(BERNOULLI_CASES)
    for num, den in BERNOULLI_CASES:
        big = num > 2**62 or den > 2**62
        n = 40_000 if big else 200_000  # Python ints: slower
        arr = np.array([num] * n, dtype=object) if big else np.full(n, num, dtype=np.int64)
        b = bernoulli_exp(arr, den, rng)
        assert b.dtype == bool and b.shape == (n,)
        p = float(mp.exp(-mp.mpf(num) / den))
        k = int(b.sum())
        if num == 0:
            assert k == n
        else:
            assert binomial_two_sided_ok(k, n, p, level), (num, den, k, n * p)


def test_bernoulli_exp_broadcast_and_mixed():
    rng = np.random.default_rng(7)
    num = np.array([[0, 1, 2], [3, 40, 0]])
    out = bernoulli_exp(num, np.array([1, 2, 1]), rng)
    assert out.shape == (2, 3) and out[0, 0] and out[1, 2]
    # a mixed batch (one element beyond 2^62) runs through Python ints, the same law
    mixed = bernoulli_exp(np.array([1, 2**63], dtype=object), np.array([1, 2**64], dtype=object), rng)
    assert mixed.shape == (2,)


# --------------------------------------------------------------------------- discrete Laplace
LAPLACE_CASES = [(1, 1), (1, 2), (3, 10), (1, 100), (7, 3)]


def test_discrete_laplace_law():
    rng = np.random.default_rng(314159)
    n = 200_000
    level = FALSE_FAILURE / len(LAPLACE_CASES)
    for s, t in LAPLACE_CASES:
        z = discrete_laplace(s, t, n, rng)
        assert z.dtype == np.int64 and z.shape == (n,)
        scale = t / s
        m = int(math.ceil(30 * scale)) + 5
        pmf = laplace_law(s, t, m)
        far = [int(math.ceil(scale * x)) + 1 for x in (8.0, 12.0)]
        assert_integer_law(z, pmf, [(f, laplace_tail(s, t, f)) for f in far], level)


def test_discrete_laplace_big_integers():
    # t = 300 2^55 > 2^62: the uniform integers and the comparisons in Python ints
    e = Fraction(0.1)
    s, t = e.numerator, 300 * e.denominator
    n = 30_000
    z = discrete_laplace(s, t, n, np.random.default_rng(11))
    m = 50_000
    a = mp.exp(-mp.mpf(s) / t)
    pmf_cells = {}
    # cells of 500 integers (scale about 3000): P(lo <= Z <= hi) from mpmath sums of the law
    c = (1 - a) / (1 + a)
    for lo in range(-m, m, 500):
        hi = lo + 499
        if lo >= 0:
            p = c * (a**lo - a ** (hi + 1)) / (1 - a)
        elif hi < 0:
            p = c * (a ** (-hi) - a ** (-lo + 1)) / (1 - a)
        else:
            p = c * ((1 - a ** (-lo + 1)) / (1 - a) + (1 - a ** (hi + 1)) / (1 - a) - 1)
        pmf_cells[hi] = float(p)
    # reuse the law check on cell indices: map each draw to its cell's upper end
    zz = np.clip(z, -m, m - 1)
    cells = (zz + m) // 500 * 500 - m + 499
    assert_integer_law(cells, pmf_cells, [], FALSE_FAILURE)


def test_discrete_laplace_system_random():
    n = 40_000
    for src in ("os", SystemRandom()):
        z = discrete_laplace(1, 2, n, src)
        assert_integer_law(z, laplace_law(1, 2, 80), [(25, laplace_tail(1, 2, 25))], FALSE_FAILURE / 2)


def test_discrete_laplace_mechanism_law_and_os():
    mech = DiscreteLaplace(0.3, 3)  # scale 3/0.3 as an exact binary fraction
    sc = mech.scale
    assert sc == Fraction(3) / Fraction(0.3)
    y = mech.sample(5, 100_000, rng=np.random.default_rng(2))
    z = (y - 5).astype(np.int64)
    assert np.all(z == y - 5)
    s, t = sc.denominator, sc.numerator
    assert_integer_law(z, laplace_law(s, t, 400), [(150, laplace_tail(s, t, 150))], FALSE_FAILURE / 2)
    y_os = mech.sample(0, 20_000, rng="os")
    assert_integer_law(y_os.astype(np.int64), laplace_law(s, t, 400), [], FALSE_FAILURE / 2)


# --------------------------------------------------------------------------- discrete Gaussian
GAUSS_CASES = [
    Fraction(1, 1024),  # sigma < 1, almost all mass at 0
    Fraction(1, 3),
    Fraction(5, 2),
    Fraction(1369, 100),  # sigma = 3.7
    Fraction(10_000),  # sigma = 100
    Fraction(0.7),  # a float's exact value: denominator 2^53, Python ints
]


def test_discrete_gaussian_law():
    rng = np.random.default_rng(271828)
    n = 200_000
    level = FALSE_FAILURE / len(GAUSS_CASES)
    for s2 in GAUSS_CASES:
        z = discrete_gaussian(s2, n, rng)
        assert z.dtype == np.int64 and z.shape == (n,)
        sig = math.sqrt(float(s2))
        m = int(math.ceil(8 * sig)) + 3
        pmf = gauss_law(s2, m)
        far = sorted({1, int(math.ceil(4.0 * sig)) + 1, int(math.ceil(5.0 * sig)) + 1})
        assert_integer_law(z, pmf, [(f, gauss_tail(s2, f)) for f in far], level)


def test_discrete_gaussian_wide():
    # sigma = 10^4: cells of merged integers (the law check merges them), tails at 4 and 5 sigma
    s2 = Fraction(10**8)
    z = discrete_gaussian(s2, 100_000, np.random.default_rng(5))
    sig = 1e4
    # cells of 200 integers: P from float64 sums of the pmf (math.fsum)
    zz = np.arange(-60_000, 60_001, dtype=np.float64)
    w = np.exp(-(zz * zz) / (2 * float(s2)))
    c = math.fsum(w)
    pmf = {}
    for lo in range(-60_000, 60_000, 200):
        pmf[lo + 199] = math.fsum(w[lo + 60_000 : lo + 60_200]) / c
    cells = (np.clip(z, -60_000, 59_999) + 60_000) // 200 * 200 - 60_000 + 199
    tails = [(int(4 * sig), gauss_tail(s2, int(4 * sig))), (int(5 * sig), gauss_tail(s2, int(5 * sig)))]
    assert_integer_law(cells, pmf, [], FALSE_FAILURE / 2)
    for m, p in tails:
        k = int(np.count_nonzero(np.abs(z) >= m))
        assert binomial_two_sided_ok(k, z.size, p, FALSE_FAILURE / 4), (m, k, p * z.size)


def test_discrete_gaussian_system_random():
    s2 = Fraction(1369, 100)
    z = discrete_gaussian(s2, 40_000, "os")
    assert_integer_law(z, gauss_law(s2, 35), [(16, gauss_tail(s2, 16))], FALSE_FAILURE)


# --------------------------------------------------------------------------- reproducibility
def test_same_seed_same_draws():
    for f in (
        lambda r: discrete_laplace(3, 10, 1000, r),
        lambda r: discrete_gaussian(Fraction(1369, 100), 1000, r),
        lambda r: discrete_gaussian("1/3", (10, 5), r),
        lambda r: bernoulli_exp(np.arange(100), 7, r),
        lambda r: DiscreteLaplace(0.5, 2).sample(1, 500, r),
    ):
        a, b = f(np.random.default_rng(99)), f(99)
        np.testing.assert_array_equal(a, b)
        c = f(np.random.default_rng(100))
        assert not np.array_equal(a, c)
    assert isinstance(discrete_laplace(1, 1, None, 0), int)
    assert discrete_gaussian(4, (2, 3), 0).shape == (2, 3)
    assert discrete_gaussian(4, 0, 0).shape == (0,)


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: discrete_laplace(0, 1, 5), "s"),
        (lambda: discrete_laplace(1, 0, 5), "t"),
        (lambda: discrete_laplace(1.5, 2, 5), "s"),
        (lambda: discrete_laplace(1, True, 5), "t"),
        (lambda: discrete_laplace(1, 2**41, 5), "t"),
        (lambda: discrete_laplace(1, 2, -1), "size"),
        (lambda: discrete_gaussian(-1, 5), "sigma2"),
        (lambda: discrete_gaussian("abc", 5), "sigma2"),
        (lambda: discrete_gaussian(float("nan"), 5), "sigma2"),
        (lambda: discrete_gaussian(0, 5), "sigma2"),
        (lambda: discrete_gaussian(Fraction(2**81), 5), "sigma2"),
        (lambda: bernoulli_exp(-1, 1), "num"),
        (lambda: bernoulli_exp(1, 0), "den"),
        (lambda: bernoulli_exp(1.5, 1), "num"),
        (lambda: DiscreteLaplace(1e-15), "eps"),
        (lambda: DiscreteLaplace(1.0, 0), "sensitivity"),
        (lambda: DiscreteLaplace(1.0, 1.5), "sensitivity"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(LdpSimError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(name), msg


class _FirstCallZeros:
    """A source whose first ``integers`` call returns zeros (then a numpy Generator): it
    forces the rare branch of Bernoulli(exp(-1)) where the one-draw shortcut gives K > 12."""

    def __init__(self, seed: int) -> None:
        self.rng, self.first = np.random.default_rng(seed), True

    def integers(self, low, high=None, size=None, dtype=np.int64):
        if self.first:
            self.first = False
            return np.zeros(size, dtype=dtype)
        return self.rng.integers(low, high, size=size, dtype=dtype)


def test_bernoulli_exp_minus1_continuation():
    from ldpsim.mechanisms.noise.exact import _bern_exp_minus1

    n = 200_000
    b = _bern_exp_minus1(n, _FirstCallZeros(3))
    # given K > 12, P(K odd) = 12! sum_{k odd >= 13} (1/(k-1)! - 1/k!)
    p = float(mp.factorial(12) * mp.fsum(1 / mp.factorial(k - 1) - 1 / mp.factorial(k) for k in range(13, 80, 2)))
    assert binomial_two_sided_ok(int(b.sum()), n, p, FALSE_FAILURE), (int(b.sum()), n * p)
