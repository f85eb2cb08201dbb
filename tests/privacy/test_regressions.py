"""Cases found in review: extreme parameters that once gave NaN, exceptions or wrong answers."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from ldpsim.cli import main
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import Gaussian
from ldpsim.privacy import GDP, OptimalComposition, PLDGuarantee, optimal_delta


def _gdp_log_delta_mp(mu: float, eps: float) -> float:
    with mp.workdps(120):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return float(mp.log(mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2)))


@pytest.mark.parametrize("mu, eps", [(50.0, 1000.0), (38.0, 710.0), (40.0, 709.0), (200.0, 1e4)])
def test_gdp_profile_past_the_overflow_of_e_to_the_eps(mu, eps):
    assert GDP(mu).log_delta(eps) == pytest.approx(_gdp_log_delta_mp(mu, eps), rel=1e-9)


def test_low_noise_gaussian_epsilon_is_not_understated():
    x = GDP(50.0).epsilon(1e-10)
    assert _gdp_log_delta_mp(50.0, x) <= np.log(1e-10) + 1e-12
    assert _gdp_log_delta_mp(50.0, x * (1 - 1e-9)) > np.log(1e-10)
    assert Gaussian(0.02).epsilon(1e-10) == pytest.approx(x, rel=1e-12)


def test_guarantee_whose_delta_is_never_zero_has_infinite_epsilon_at_zero():
    assert GDP(1.0).epsilon(0.0) == np.inf
    with pytest.raises(LdpSimError, match="delta"):
        GDP.for_delta(1.0, 1.0)


def test_pair_without_positive_losses():
    x = 0.07110258756687808
    assert PLDGuarantee.from_distributions([1 - x, x], [1.0, 0.0]).epsilon(x) == 0.0


def test_composition_at_infinite_eps_and_tiny_eps():
    assert optimal_delta(1.0, 0.0, 5, np.inf) == 0.0
    assert optimal_delta(1.0, 0.01, 5, np.inf) == pytest.approx(1 - 0.99**5, rel=1e-14)
    assert optimal_delta(1e-310, 0.0, 5, 1.0) == 0.0
    assert OptimalComposition(1.0, 0.0, 5).delta(np.inf) == 0.0


def test_compose_with_a_huge_k_skips_only_the_figure(tmp_path, capsys):
    assert main(["compose", "--eps", "0.001", "-k", "10000000000", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "region.png skipped" in out
    assert (tmp_path / "c" / "table.csv").exists()


def test_composing_a_tiny_eps_keeps_its_distinct_losses():
    """Binary randomized response at eps = 1e-13 composed with itself: delta(0) is the total
    variation of the product pair, computed here from its three outcome classes in mpmath.
    An absolute merge tolerance of 1e-12 once merged every atom and returned 0. (p and q are
    rounded to doubles, about 1e-16 absolutely, so the ~1e-13 result is good to ~1e-3.)"""
    import mpmath

    from ldpsim.privacy.pld import DiscretePLD

    eps = 1e-13
    with mpmath.workdps(50):
        p = mpmath.e**eps / (1 + mpmath.e**eps)
        q = 1 - p
        tv = sum(mpmath.binomial(2, a) * max(p**a * q ** (2 - a) - q**a * p ** (2 - a), 0) for a in range(3))
    one = DiscretePLD.from_distributions([float(p), float(q)], [float(q), float(p)])
    assert float(one.compose(one).delta(0.0)) == pytest.approx(float(tv), rel=1e-2)
