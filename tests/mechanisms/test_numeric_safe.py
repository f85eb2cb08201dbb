"""The mean-estimation mechanisms whose privacy holds for the numbers they produce:
``discrete_laplace_bounded`` (integer answers plus exact discrete Laplace noise) and
``snapped_laplace_bounded`` (Mironov's snapping with a public dither that removes the
grid's bias). Law checks use exact moments and Bernstein's inequality at a stated
false-failure probability; the exact moments come from closed forms (discrete Laplace) and
from the snapping mechanism's exact law of one report, averaged over dithers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.numeric import DiscreteLaplaceBounded, SnappedLaplaceBounded
from tests.stats_checks import FALSE_FAILURE, bernstein

#: false-failure probability of each statistical check below: a dozen checks, so a twentieth
#: of FALSE_FAILURE each keeps them within it together (union bound)
PER_CHECK = FALSE_FAILURE / 20


# --------------------------------------------------------------------------- discrete Laplace
def test_discrete_reports_are_integers_and_unbiased_with_the_closed_form_variance():
    mech = DiscreteLaplaceBounded(1.0, 0, 20)
    a = math.exp(-1.0 / 20.0)
    assert mech.variance(7.0) == pytest.approx(2 * a / (1 - a) ** 2, rel=1e-12)  # not 2 (20/eps)^2 = 800
    n = 200_000
    y = mech.privatize(np.full(n, 7.0), np.random.default_rng(5))
    assert np.all(y == np.round(y))
    # |y - 7| is unbounded: Chebyshev on the mean, then the sample variance against the
    # closed-form fourth moment of the two-sided geometric (Chebyshev again)
    v = mech.variance(7.0)
    assert abs(y.mean() - 7.0) <= math.sqrt(v / n / PER_CHECK)
    # E Z^4 of the discrete Laplace: sum over z of z^4 p(z), brute force to where it vanishes
    z = np.arange(-4000, 4001, dtype=float)
    p = (1 - a) / (1 + a) * a ** np.abs(z)
    m4 = float(np.sum(z**4 * p))
    assert float(np.sum(z**2 * p)) == pytest.approx(v, rel=1e-12)
    assert abs(np.mean((y - 7.0) ** 2) - v) <= math.sqrt((m4 - v * v) / n / PER_CHECK)


def test_discrete_answers_must_be_integers_and_the_ends_too():
    mech = catalog.build("discrete_laplace_bounded", eps=1.0, lo=0, hi=10)
    with pytest.raises(LdpSimError, match=r"^values\[1\]: got 2\.5, expected an integer answer"):
        mech.privatize(np.array([1.0, 2.5]), 1)
    with pytest.raises(LdpSimError, match=r"^x: got 2\.5"):
        mech.sample(2.5, 3, 1)
    with pytest.raises(LdpSimError, match=r"^lo: got 0\.5, expected an integer"):
        catalog.build("discrete_laplace_bounded", eps=1.0, lo=0.5, hi=10)
    assert np.array_equal(mech.privatize(np.array([3.0, 4.0]), 7), mech.privatize(np.array([3.0, 4.0]), 7))
    assert mech.privatize(np.arange(5.0), "os").shape == (5,)


# --------------------------------------------------------------------------- snapped, dithered
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_snapped_variance_is_the_dither_average_of_the_exact_law(eps):
    """The variance formula 2 lambda^2 + Lambda^2/12 (unit coordinates) against the exact
    second moment of the snapping mechanism's report about its input, E[(snap(w) - w)^2] from
    its exact law, averaged over 64 equally spaced dithers of one grid period (the dither
    average of a smooth periodic function: the Fourier terms that survive are those at
    multiples of 64, below 1e-6 relative here)."""
    mech = SnappedLaplaceBounded(eps, 0.0, 1.0)
    snap = mech.snap
    grid = snap.grid_step
    second = []
    for w in 0.37 + grid * np.arange(64) / 64:
        support = snap.support()
        pmf = np.asarray(snap.pmf(w), dtype=float)
        assert math.fsum(pmf) == pytest.approx(1.0, abs=1e-12)
        second.append(math.fsum(pmf * (support - w) ** 2))
    formula = float(mech.variance(0.37))  # its f (1 - f) h^2 term is below 1e-26 here
    assert float(np.mean(second)) == pytest.approx(formula, rel=2e-6)


@pytest.mark.parametrize(("eps", "x"), [(0.5, 3.3), (1.0, 40.3), (4.0, 99.1)])
def test_snapped_reports_are_unbiased_with_their_variance(eps, x):
    """Reports of one answer: the mean within Bernstein's bound around the answer (the bias is
    below 1e-12 (hi - lo) by the dither argument), the mean square error within Bernstein's
    bound around the variance formula; every report lies in report_range."""
    mech = catalog.build("snapped_laplace_bounded", eps=eps, lo=0.0, hi=100.0)
    n = 200_000
    y = mech.privatize(np.full(n, x), np.random.default_rng(int(eps * 10)))
    lo, hi = mech.report_range
    assert y.min() >= lo and y.max() <= hi
    b = max(hi - x, x - lo)
    v = float(mech.variance(x))
    assert abs(y.mean() - x) <= bernstein(v, b, n, PER_CHECK) + 1e-12 * 100
    sq = (y - x) ** 2
    assert abs(sq.mean() - v) <= bernstein(b * b * v, b * b, n, PER_CHECK)


def test_without_the_dither_snapping_is_biased_and_the_dither_removes_it():
    """The plain snapped report of u = 0.3 (sensitivity-1 units, eps = 1) is biased by several
    hundredths of lambda, exactly (the exact law); averaged over reports of the dithered
    mechanism the bias is gone (Bernstein at PER_CHECK), though 10^6 reports would see the plain one."""
    mech = SnappedLaplaceBounded(1.0, 0.0, 1.0)
    u = 0.3
    bias = float(mech.snap.mean(u)) - u
    assert abs(bias) > 0.01
    n = 400_000
    y = mech.privatize(np.full(n, u), np.random.default_rng(11))
    lo, hi = mech.report_range
    assert abs(y.mean() - u) <= bernstein(float(mech.variance(u)), max(hi - u, u - lo), n, PER_CHECK)
    assert abs(y.mean() - u) < abs(bias)


def test_snapped_bounded_privacy_is_the_snapping_bound_and_draws_are_reproducible():
    mech = catalog.build("snapped_laplace_bounded", eps=1.0, lo=0.0, hi=10.0)
    assert mech.epsilon(0.0) <= 1.0 and mech.is_private(1.0)
    assert mech.epsilon(0.0) == mech.snap.epsilon(0.0)
    assert not mech.has_density and not mech.exact_delta
    a = mech.privatize(np.array([1.0, 5.0, 9.0]), 3)
    assert np.array_equal(a, mech.privatize(np.array([1.0, 5.0, 9.0]), np.random.default_rng(3)))
    assert mech.privatize(np.array([1.0, 5.0]), "os").shape == (2,)
