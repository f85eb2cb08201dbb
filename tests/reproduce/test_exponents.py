"""``ldpsim reproduce test-exponents``: the exact errors against enumerations written here, the
exponents against closed forms and numerical minimisation, and a small run that agrees."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from ldpsim.analyst.hypotheses import mary_exponent, share_exponent, two_sample_exponent
from ldpsim.mechanisms import catalog
from ldpsim.reproduce import reproduce
from ldpsim.reproduce.exponents import (
    composite_log_beta,
    fitted_exponent,
    mary_log_error,
    two_sample_log_beta,
)


def test_two_sample_beta_against_every_pair_of_counts():
    """The exact conditional test, written with scipy's hypergeometric law pair by pair."""
    ma, mb, n = 0.3, 0.6, 20
    total = 0.0
    for a in range(n + 1):
        for b in range(n + 1):
            t = a + b
            xs = np.arange(max(0, t - n), min(n, t) + 1)
            pmf = stats.hypergeom.pmf(xs, 2 * n, t, n)
            p = pmf[np.abs(xs - t / 2) >= abs(a - t / 2) - 1e-9].sum()
            if p > 0.05:
                total += stats.binom.pmf(a, n, ma) * stats.binom.pmf(b, n, mb)
    assert two_sample_log_beta(ma, mb, n) == pytest.approx(math.log(total), rel=1e-10)


def test_mary_error_against_every_sequence_of_outputs():
    laws = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]])
    n = 5
    err = 0.0
    for ys in itertools.product(range(3), repeat=n):
        like = np.array([np.prod([law[y] for y in ys]) for law in laws])
        err += (like.sum() - like.max()) / 3  # equal weights; ties cannot occur at these laws
    assert mary_log_error(laws, n) == pytest.approx(math.log(err), rel=1e-10)


def test_composite_beta_is_an_exact_level_test():
    m_theta, m1, n = 0.45, 0.6, 300
    c = int(stats.binom.isf(0.05, n, m_theta)) + 1
    while stats.binom.sf(c - 2, n, m_theta) <= 0.05:
        c -= 1
    assert stats.binom.sf(c - 1, n, m_theta) <= 0.05 < stats.binom.sf(c - 2, n, m_theta)
    assert composite_log_beta(m_theta, m1, n) == pytest.approx(stats.binom.logcdf(c - 1, n, m1), rel=1e-10)


def test_exponents_against_closed_forms_and_minimisation():
    a, b = np.array([0.2, 0.5, 0.3]), np.array([0.4, 0.4, 0.2])

    def objective(z):  # D(Q||a) + D(Q||b) over Q = softmax(z)
        q = np.exp(z - z.max())
        q /= q.sum()
        return float((q * (2 * np.log(q) - np.log(a) - np.log(b))).sum())

    best = optimize.minimize(objective, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14})
    assert two_sample_exponent(a, b) == pytest.approx(best.fun, rel=1e-6)
    # Sanov for a yes/no question: the Bernoulli divergence at the boundary's output law
    rr = catalog.build("randomized_response", k=2, eps=1.0)
    p = math.e / (1 + math.e)
    mt, m1 = 0.45 * (2 * p - 1) + 1 - p, 0.6 * (2 * p - 1) + 1 - p
    kl = mt * math.log(mt / m1) + (1 - mt) * math.log((1 - mt) / (1 - m1))
    assert share_exponent(rr, [0.6, 0.4], 0, 0.45) == pytest.approx(kl, rel=1e-9)
    # m-ary: the closest pair's Chernoff information, by a grid over the tilt
    laws = [a, b, np.array([0.1, 0.2, 0.7])]
    lam = np.linspace(0, 1, 100001)
    pair = min(
        (-np.log((laws[i][None, :] ** lam[:, None] * laws[j][None, :] ** (1 - lam[:, None])).sum(axis=1))).max()
        for i in range(3)
        for j in range(i + 1, 3)
    )
    assert mary_exponent(laws) == pytest.approx(pair, rel=1e-6)


def test_fitted_exponent_recovers_a_known_form():
    n = np.geomspace(50, 5000, 8)
    assert fitted_exponent(n, -0.03 * n + 1.7 * np.sqrt(n) - 0.5 * np.log(n) + 2, "composite") == pytest.approx(0.03)
    assert fitted_exponent(n, -0.02 * n - 0.5 * np.log(n) - 1, "m-ary") == pytest.approx(0.02)


def test_a_small_run_agrees(tmp_path):
    run = reproduce("test-exponents", seed=3, instances=2, out=tmp_path / "run", eps_grid=[4.0])
    summary = run.summary
    checked = summary[summary["paper"].notna()]
    assert len(checked) == 6 and (checked["agrees"] == "yes").all(), summary.to_string()
    assert (tmp_path / "run" / "test-exponents.png").exists()
