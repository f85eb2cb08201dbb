"""The distribution of a numeric answer from Square Wave reports (ldpsim/analyst/distribution.py):
the transition matrix against double quadrature of the mechanism's own density, EM's fixed
point on exact expected counts, the distances against scipy, and EMS on drawn reports."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.analyst.distribution import (
    _em,
    ems,
    kolmogorov_smirnov,
    quantile,
    square_wave_transition,
    wasserstein1,
)
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.numeric import SquareWave


@pytest.mark.parametrize("eps, d, d_out", [(1.0, 8, 10), (0.3, 5, 5), (4.0, 6, 12)])
def test_transition_entries_are_the_density_integrated_over_both_buckets(eps, d, d_out):
    """Entry (j, i) = (1/h) int over answer bucket i of P(raw report in bucket j | x) dx.
    The inner probability comes from the mechanism's own log_density, which is constant
    between the report bucket's ends and the window's ends x +- b (its value at each piece's
    middle times the piece's length); the outer integral is scipy's quad with those kinks
    as break points. Each column sums to 1."""
    mech = SquareWave(eps, 0.0, 1.0)
    matrix = square_wave_transition(mech, d, d_out)
    assert matrix.shape == (d_out, d)
    np.testing.assert_allclose(matrix.sum(axis=0), 1.0, rtol=0, atol=1e-13)
    b, h = mech.b, 1.0 / d
    edges = -b + (1.0 + 2.0 * b) * np.arange(d_out + 1) / d_out

    def raw_density(w, x):  # the raw report w = (1 + beta z)/2 is the report y = 1/2 + z/2 on [lo, hi] = [0, 1]
        return math.exp(mech.log_density(x, 0.5 + (2.0 * w - 1.0) / mech.beta / 2.0)) / mech.beta

    def inner(x, lo, hi):
        cuts = sorted({lo, hi, *np.clip([x - b, x + b], lo, hi)})
        return sum((c1 - c0) * raw_density((c0 + c1) / 2, x) for c0, c1 in zip(cuts[:-1], cuts[1:]) if c1 > c0)

    for i, j in [(0, 0), (d // 2, d_out // 2), (d - 1, d_out - 1), (1, d_out - 2), (d // 2, 0)]:
        lo, hi = edges[j], edges[j + 1]
        kinks = [k for k in (lo - b, lo + b, hi - b, hi + b) if i * h < k < (i + 1) * h]
        ref, _ = integrate.quad(inner, i * h, (i + 1) * h, args=(lo, hi), points=kinks or None, epsabs=1e-14)
        assert matrix[j, i] == pytest.approx(ref / h, rel=1e-9, abs=1e-13), (i, j)


def test_em_on_exact_expected_counts_returns_the_histogram():
    mech = SquareWave(3.0, 0.0, 1.0)
    matrix = square_wave_transition(mech, 4, 8)
    truth = np.array([0.1, 0.4, 0.3, 0.2])
    est = _em(matrix, 1e6 * (matrix @ truth), np.linspace(0.0, 1.0, 5), False, 1e-16, 100_000)
    assert est.converged
    np.testing.assert_allclose(est.probabilities, truth, atol=1e-6)


def test_distances_against_scipy_and_the_definition():
    rng = np.random.default_rng(3)
    edges = np.linspace(-2.0, 6.0, 17)
    centres = (edges[:-1] + edges[1:]) / 2
    p, q = rng.dirichlet(np.ones(16)), rng.dirichlet(np.ones(16))
    assert wasserstein1(p, q, edges) == pytest.approx(
        stats.wasserstein_distance(centres, centres, p, q), rel=1e-12, abs=1e-15
    )
    assert kolmogorov_smirnov(p, q) == pytest.approx(np.max(np.abs(np.cumsum(p) - np.cumsum(q))), rel=1e-12)
    assert wasserstein1(p, p, edges) == 0.0 and kolmogorov_smirnov(p, p) == 0.0


def test_quantiles_of_a_histogram():
    edges = np.linspace(10.0, 20.0, 11)
    uniform = np.ones(10)
    for level in (0.0, 0.1, 0.25, 0.5, 0.99, 1.0):
        assert quantile(uniform, edges, level) == pytest.approx(10.0 + 10.0 * level, abs=1e-12)
    one = np.zeros(10)
    one[3] = 1.0
    assert quantile(one, edges, 0.5) == pytest.approx(13.5)
    with pytest.raises(LdpSimError, match=r"^level: got 1.5"):
        quantile(uniform, edges, 1.5)


def test_ems_on_drawn_reports_recovers_a_beta_law():
    """n = 300,000 answers from Beta(2, 5), eps = 2, d = 64: the EMS histogram is within a
    Wasserstein-1 distance of 0.01 of the true bucket probabilities (measured 0.003 at
    n = 10^6), a tenth of the uniform histogram's, and its median within 0.02 of the law's
    (fixed seed; a regression bound, not a stated false-failure probability: EMS has no
    exact law)."""
    rng = np.random.default_rng(20261207)
    mech = SquareWave(2.0, 0.0, 1.0)
    d = 64
    edges = np.linspace(0.0, 1.0, d + 1)
    truth = np.diff(stats.beta(2, 5).cdf(edges))
    est = ems(mech, mech.privatize(rng.beta(2.0, 5.0, size=300_000), rng), d)
    assert est.converged
    assert wasserstein1(est.probabilities, truth, edges) < 0.01
    assert wasserstein1(est.probabilities, truth, edges) < wasserstein1(np.ones(d), truth, edges) / 10
    assert abs(est.quantile(0.5) - stats.beta(2, 5).median()) < 0.02


def test_bad_input_is_one_line_naming_it():
    mech = SquareWave(1.0)
    with pytest.raises(LdpSimError, match=r"^reports: got 'no reports'"):
        ems(mech, [], 8)
    with pytest.raises(LdpSimError, match=r"^d: got 0"):
        ems(mech, [0.1], 0)
    with pytest.raises(LdpSimError, match=r"^q: got 'shape \(1,\)'"):
        wasserstein1([0.5, 0.5], [1.0], [0.0, 1.0, 2.0])


def test_the_smoothing_averages_inner_buckets_and_leaves_the_ends():
    """EMS's smoothing step, written out: inner buckets (1/4, 1/2, 1/4), end buckets kept,
    then renormalised (averaging an end bucket with its one neighbour pulls mass inwards;
    docs/reproductions.md, the Square Wave paper's claim)."""
    from ldpsim.analyst.distribution import _smooth

    x = np.array([0.1, 0.4, 0.2, 0.3])
    raw = np.array([0.1, (0.1 + 0.8 + 0.2) / 4, (0.4 + 0.4 + 0.3) / 4, 0.3])
    np.testing.assert_allclose(_smooth(x), raw / raw.sum(), rtol=1e-15)


def test_ems_of_mirrored_reports_is_the_mirrored_estimate():
    """The square wave is symmetric: reversing the answer buckets and the report buckets
    reverses the matrix, so EMS on reversed counts gives the reversed estimate (a check of
    the smoothing's two ends treated alike)."""
    from ldpsim.analyst.distribution import em_counts, square_wave_transition
    from ldpsim.mechanisms import catalog

    sw = catalog.build("square_wave", eps=1.0, lo=0.0, hi=1.0)
    d = 64
    matrix = square_wave_transition(sw, d)
    np.testing.assert_allclose(matrix[::-1, ::-1], matrix, atol=1e-15)
    rng = np.random.default_rng(3)
    counts = rng.multinomial(100_000, matrix @ np.diff(np.linspace(0, 1, d + 1) ** 3)).astype(float)
    edges = np.linspace(0, 1, d + 1)
    a = em_counts(matrix, counts, edges).probabilities
    b = em_counts(matrix, counts[::-1], edges).probabilities
    np.testing.assert_allclose(b[::-1], a, rtol=1e-9, atol=1e-15)
