"""Privacy tiers combined with minimum-variance weights.

Reference variances are closed forms written here (k-ary randomized response:
``M_x (1 - M_x) / (n g^2)`` with ``M_x = (1 + p_x (e^eps - 1)) / (e^eps + k - 1)`` and ``g =
(e^eps - 1) / (e^eps + k - 1)``; OUE: ``q (1 - q) / (n d^2) + p_x (1 - p - q) / (n d)`` with
``p = 1/2``, ``q = 1/(e^eps + 1)``, ``d = p - q``, plus ``p_x (1 - p_x) / n`` since the answers
are drawn i.i.d. from the prior), never the code's. Statistical checks
state their false-failure probability (at most 1e-6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.analyst import combine_tiers, inverse_variance_weights, tier_design
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import randomized_response
from ldpsim.mechanisms.oracles.unary import OptimizedUnaryEncoding
from tests.stats_checks import FALSE_FAILURE

PRIOR = np.array([0.4, 0.3, 0.2, 0.1])
EPS = (0.5, 1.0, 2.0)
SHARES = np.array([0.5, 0.3, 0.2])


def _rr_variance(p, eps, n):
    k = len(p)
    e = math.exp(eps)
    m = (1.0 + np.asarray(p) * (e - 1.0)) / (e + k - 1.0)
    g = (e - 1.0) / (e + k - 1.0)
    return m * (1.0 - m) / (n * g * g)


def _oue_variance(p, eps, n):
    q = 1.0 / (math.exp(eps) + 1.0)
    d = 0.5 - q
    p = np.asarray(p)
    return q * (1 - q) / (n * d * d) + p * (1 - 0.5 - q) / (n * d) + p * (1 - p) / n


def _rr_tiers():
    return [randomized_response(4, e) for e in EPS]


def test_design_variance_is_the_exact_minimum_variance_formula():
    n = 10_000
    design = tier_design(_rr_tiers(), PRIOR, n, SHARES)
    tv = np.array([_rr_variance(PRIOR, e, n * s) for e, s in zip(EPS, SHARES)])
    combined = 1.0 / (1.0 / tv).sum(axis=0)
    np.testing.assert_allclose(design.tier_variances, tv, rtol=1e-12)
    np.testing.assert_allclose(design.variance, combined, rtol=1e-12)
    np.testing.assert_allclose(design.weights, (1.0 / tv) * combined, rtol=1e-12)
    np.testing.assert_allclose(design.weights.sum(axis=0), 1.0, rtol=1e-12)
    # the weights minimise sum_t w_t^2 V_t over sum_t w_t = 1: any other weights do worse
    rng = np.random.default_rng(3)
    for _ in range(200):
        other = design.weights + rng.normal(0, 0.1, design.weights.shape)
        other -= (other.sum(axis=0) - 1.0) / len(EPS)
        assert np.all((other**2 * tv).sum(axis=0) >= combined * (1 - 1e-12))
    # naive pooling: the n_t-weighted average
    naive = (SHARES[:, None] ** 2 * tv).sum(axis=0)
    np.testing.assert_allclose(design.naive_variance, naive, rtol=1e-12)
    assert np.all(design.variance <= design.naive_variance) and np.all(design.variance < 0.9 * naive)
    assert np.all(design.variance <= design.best_single_variance)


def test_design_mixes_families_with_their_own_variances():
    n = 50_000
    mechs = [randomized_response(4, 1.0), OptimizedUnaryEncoding(4, 3.0)]
    design = tier_design(mechs, PRIOR, n, [0.6, 0.4])
    tv = np.array([_rr_variance(PRIOR, 1.0, 0.6 * n), _oue_variance(PRIOR, 3.0, 0.4 * n)])
    np.testing.assert_allclose(design.tier_variances, tv, rtol=1e-10)
    np.testing.assert_allclose(design.variance, 1.0 / (1.0 / tv).sum(axis=0), rtol=1e-10)
    assert np.all(design.variance <= design.best_single_variance)


def test_plugin_weights_use_each_tier_s_variance_at_its_own_estimate():
    rng = np.random.default_rng(11)
    mechs = _rr_tiers()
    sizes = [30_000, 20_000, 10_000]
    counts = [m.sample_counts(rng.multinomial(s, PRIOR), rng) for m, s in zip(mechs, sizes)]
    res = combine_tiers(mechs, counts)
    tv = []
    for m, c, s, e in zip(mechs, counts, sizes, EPS):
        k, ee = 4, math.exp(e)
        est = (c / s - 1.0 / (ee + k - 1)) * (ee + k - 1) / (ee - 1)  # RR inversion by hand
        p = np.clip(est, 0, None)
        tv.append(_rr_variance(p / p.sum(), e, s))
    tv = np.array(tv)
    np.testing.assert_allclose(res.tier_variances, tv, rtol=1e-10)
    np.testing.assert_allclose(res.std_error, np.sqrt(1.0 / (1.0 / tv).sum(axis=0)), rtol=1e-10)
    np.testing.assert_allclose(res.estimate, (res.weights * res.tier_estimates).sum(axis=0), rtol=1e-12)
    share = np.array(sizes) / sum(sizes)
    np.testing.assert_allclose(res.naive_estimate, share @ res.tier_estimates, rtol=1e-12)
    np.testing.assert_allclose(res.naive_std_error, np.sqrt(share**2 @ tv), rtol=1e-10)
    assert res.same_family and res.plugin and res.n == tuple(sizes)
    assert np.all(res.std_error <= res.naive_std_error)
    assert np.all(res.std_error <= np.sqrt(tv.min(axis=0)))
    assert abs(res.projected.sum() - 1.0) < 1e-12


def test_fixed_weight_combination_is_unbiased():
    """With the weights fixed at the design prior the combination is linear in the output
    frequencies: its replicate mean is ``sum_t w_t`` times the mean of ``R n_t`` independent
    contributions ``A_t[x, y]``, each of range ``1/g_t`` (RR). Hoeffding for that weighted sum,
    Bonferroni over the 4 answers: false failure <= 1e-6."""
    rng = np.random.default_rng(2024)
    mechs = _rr_tiers()
    n, reps = 200_000, 40
    sizes = (n * SHARES).astype(int)
    design = tier_design(mechs, PRIOR, n, SHARES)
    total = np.zeros(4)
    for _ in range(reps):
        counts = [m.sample_counts(rng.multinomial(s, PRIOR), rng) for m, s in zip(mechs, sizes)]
        res = combine_tiers(mechs, counts, prior=PRIOR)
        np.testing.assert_allclose(res.weights, design.weights, rtol=1e-12)
        total += res.estimate
    mean = total / reps
    k = 4
    ranges = np.array([(math.exp(e) + k - 1) / (math.exp(e) - 1) for e in EPS])
    spread2 = (design.weights**2 * (ranges**2 / (reps * sizes))[:, None]).sum(axis=0)
    tol = np.sqrt(spread2 * math.log(2 * k / FALSE_FAILURE) / 2.0)
    assert np.all(np.abs(mean - PRIOR) <= tol), (mean - PRIOR, tol)
    assert np.all(tol < 0.004)  # the check has teeth


def test_plugin_combination_tracks_the_fixed_weight_one():
    """Plug-in weights are data-dependent, so unbiased only to first order: on the same draws
    the plug-in and the fixed-weight combinations differ by far less than one standard error."""
    rng = np.random.default_rng(7)
    mechs = _rr_tiers()
    sizes = (100_000 * SHARES).astype(int)
    for _ in range(20):
        counts = [m.sample_counts(rng.multinomial(s, PRIOR), rng) for m, s in zip(mechs, sizes)]
        plug = combine_tiers(mechs, counts)
        fixed = combine_tiers(mechs, counts, prior=PRIOR)
        assert np.all(np.abs(plug.estimate - fixed.estimate) <= 0.1 * fixed.std_error)


def test_empty_tier_and_zero_variance():
    mechs = _rr_tiers()
    rng = np.random.default_rng(1)
    counts = [
        mechs[0].sample_counts(rng.multinomial(1000, PRIOR), rng),
        np.zeros(4, int),
        mechs[2].sample_counts(rng.multinomial(500, PRIOR), rng),
    ]
    res = combine_tiers(mechs, counts)
    assert np.all(res.weights[1] == 0) and res.n == (1000, 0, 500)
    assert np.all(np.isnan(res.tier_estimates[1])) and np.all(np.isfinite(res.estimate))
    w, var = inverse_variance_weights([[0.0, 1.0], [0.0, 3.0], [2.0, np.inf]])
    np.testing.assert_allclose(w, [[0.5, 0.75], [0.5, 0.25], [0.0, 0.0]])
    np.testing.assert_allclose(var, [0.0, 0.75])


def test_errors_are_one_line_and_name_the_parameter():
    mechs = _rr_tiers()
    with pytest.raises(LdpSimError, match=r"^mechanisms\[1\]: .*same k = 4"):
        combine_tiers([mechs[0], randomized_response(3, 1.0)], [[1, 2, 3, 4], [1, 2, 3]])
    with pytest.raises(LdpSimError, match=r"^counts: got '2 count arrays', expected one per tier \(3\)"):
        combine_tiers(mechs, [[1, 2, 3, 4]] * 2)
    with pytest.raises(LdpSimError, match=r"^counts\[0\]: "):
        combine_tiers(mechs, [[1, 2, 3]] * 3)
    with pytest.raises(LdpSimError, match=r"^counts: got 'no reports in any tier'"):
        combine_tiers(mechs, [[0, 0, 0, 0]] * 3)
    with pytest.raises(LdpSimError, match=r"^shares: "):
        tier_design(mechs, PRIOR, 100, [0.5, 0.5])
    for err in (combine_tiers, tier_design):
        with pytest.raises(LdpSimError):
            err([], [], 1, [1.0]) if err is tier_design else err([], [])
