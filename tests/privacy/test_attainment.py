"""Theorem 3.3's region is attained: by the k-fold quaternary mechanism, and (delta = 0) by
k-fold two-sided geometric noise on a counting query. Both sides are computed independently:
the composed loss laws by exact convolution of the mechanisms' own matrices / pmfs, the
region by the mpmath lattice formula of the theorem."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from ldpsim.mechanisms import Geometric, Laplace, quaternary_mechanism
from ldpsim.privacy import EpsDelta, optimal_delta


def _theorem_33(eps: float, delta: float, k: int, i: int) -> float:
    """1 - (1-delta)^k (1 - delta_i) at eps_t = (k - 2i) eps, literally (mpmath)."""
    with mp.workdps(60):
        e = mp.e ** mp.mpf(eps)
        di = mp.fsum(mp.binomial(k, l) * (e ** (k - l) - e ** (k - 2 * i + l)) for l in range(i)) / (1 + e) ** k
        return float(1 - (1 - mp.mpf(delta)) ** k * (1 - di))


@pytest.mark.parametrize("eps, delta, k", [(0.5, 0.01, 6), (0.1, 0.001, 30), (1.2, 0.0, 9)])
def test_quaternary_composition_attains_the_lattice_region(eps, delta, k):
    pld = quaternary_mechanism(eps, delta).pld(0, 1).self_compose(k)
    for i in range(k // 2 + 1):
        assert pld.delta((k - 2 * i) * eps) == pytest.approx(_theorem_33(eps, delta, k, i), rel=1e-11, abs=1e-300)


@pytest.mark.parametrize("eps, k", [(0.3, 5), (1.0, 20), (0.05, 60)])
def test_geometric_noise_attains_the_pure_region(eps, k):
    pld = Geometric(eps).pld().self_compose(k)
    for i in range(k // 2 + 1):
        assert pld.delta((k - 2 * i) * eps) == pytest.approx(_theorem_33(eps, 0.0, k, i), rel=1e-11)
    # and between lattice points it equals the exact curve (attained everywhere)
    grid = np.linspace(0, k * eps, 37)
    assert np.allclose(pld.delta(grid), optimal_delta(eps, 0.0, k, grid), rtol=1e-10, atol=1e-300)


def test_laplace_is_strictly_inside_the_region():
    # one release: Laplace(1/eps) is eps-DP, but its curve is strictly below the region's
    eps = 0.7
    lap = Laplace(1 / eps)
    e = np.array([0.0, 0.2, 0.5])
    assert np.all(lap.delta(e) < EpsDelta(eps, 0.0).delta(e))
    assert lap.delta(eps) == 0.0
