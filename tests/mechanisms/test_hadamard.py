"""Hadamard response (ldpsim/mechanisms/oracles/hadamard.py) against independent references.

References: the Sylvester-Hadamard matrix of scipy.linalg.hadamard (built by Kronecker
products, not by bit parities), the output law written from the definition of Acharya, Sun
and Zhang (2019) in mpmath at 50 digits, brute-force hockey-stick divergences over every
ordered pair of inputs, and dense linear algebra on that matrix. Every statistical check
states its false-failure probability (at most 1e-6 per test; exact binomial tails or
Hoeffding's inequality, fixed seeds).
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy.linalg import hadamard

from ldpsim.analyst import frequency_estimate
from ldpsim.analyst.estimation import confidence_intervals, em_estimate
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.oracles.hadamard import HadamardResponse
from ldpsim.sim import parse_scenario
from ldpsim.sim.engine import run_replication
from ldpsim.stats import hoeffding
from tests.oracles import brute_force_delta, sum_of_binomials_pmf
from tests.sim.helpers import scenario_text
from tests.stats_checks import assert_sample_law, binomial_cells_ok

mp.mp.dps = 50


# --------------------------------------------------------------------------- references
def ref_K(k: int) -> int:
    K = 1
    while K < k + 1:
        K *= 2
    return K


def ref_law(k: int, eps: float) -> list[list[mp.mpf]]:
    """P(y | x) from the definition: 2 e^eps / (K (1 + e^eps)) where row x + 1 of the
    Hadamard matrix is +1, 2 / (K (1 + e^eps)) elsewhere (mpmath)."""
    K = ref_K(k)
    H = hadamard(K)
    e = mp.e ** mp.mpf(eps)
    on, off = 2 * e / (K * (1 + e)), mp.mpf(2) / (K * (1 + e))
    return [[on if H[x + 1, y] == 1 else off for y in range(K)] for x in range(k)]


def ref_delta(law, t: float) -> mp.mpf:
    """max over ordered pairs of sum_y (P(y|x) - e^t P(y|x'))_+ (the hockey-stick divergence)."""
    et = mp.e ** mp.mpf(t)
    best = mp.mpf(0)
    for p in law:
        for q in law:
            if p is q:
                continue
            best = max(best, mp.fsum(max(a - et * b, 0) for a, b in zip(p, q)))
    return best


def ref_matrix(k: int, eps: float) -> np.ndarray:
    return np.array([[float(v) for v in row] for row in ref_law(k, eps)])


SMALL = [(2, 1.0), (3, 0.5), (4, 2.0), (5, 1.0), (7, 3.0), (8, 0.25)]


# --------------------------------------------------------------------------- exact law and privacy
@pytest.mark.parametrize("k, eps", SMALL)
def test_law_is_the_definition(k, eps):
    mech = HadamardResponse(k, eps)
    assert mech.m == ref_K(k) and mech.K == ref_K(k) and mech.output_size == ref_K(k)
    ref = ref_matrix(k, eps)
    np.testing.assert_allclose(mech.matrix, ref, rtol=1e-14, atol=0)
    for x in range(k):
        got = np.exp(mech.log_density(x, np.arange(mech.m)))
        np.testing.assert_allclose(got, ref[x], rtol=1e-14, atol=0)
        np.testing.assert_array_equal(mech.log_density(x, np.arange(mech.m)), mech.log_matrix[x])
    assert mech.report_bits == math.log2(ref_K(k))


@pytest.mark.parametrize("k, eps", SMALL)
def test_exact_eps_and_delta_against_brute_force(k, eps):
    mech = HadamardResponse(k, eps)
    law = ref_law(k, eps)
    ref_eps = max(
        mp.log(max(law[a][y] / law[b][y] for y in range(len(law[0])))) for a in range(k) for b in range(k) if a != b
    )
    assert mech.epsilon(0.0) == pytest.approx(float(ref_eps), rel=1e-14)
    for t in [0.0, eps / 3, eps / 2, 0.9 * eps, eps, 2 * eps]:
        assert mech.delta(t) == pytest.approx(float(ref_delta(law, t)), rel=1e-12, abs=1e-30), t  # 50-digit reference
    # the same by enumeration of every event (tests/oracles.py) for small K
    q = mech.matrix
    for t in [0.0, eps / 2]:
        assert mech.delta(t) == pytest.approx(brute_force_delta(np.asarray(q), t), rel=1e-9, abs=1e-15)
    # epsilon(delta): the smallest float t with delta(t) <= delta
    for d in [1e-9, 1e-3, 0.05, float(ref_delta(law, 0.0)) * 0.5]:
        t = mech.epsilon(d)
        assert mech.delta(t) <= d
        if t > 0:
            assert mech.delta(math.nextafter(t, 0.0)) > d
    assert mech.epsilon(mech.delta(0.0)) == 0.0 and mech.epsilon(1.0) == 0.0


@pytest.mark.parametrize("k, eps", [(3, 1.0), (6, 0.7)])
def test_guarantee_and_pld_match_brute_force(k, eps):
    mech = HadamardResponse(k, eps)
    law = ref_law(k, eps)
    g = mech.guarantee()
    for t in [0.0, 0.3, eps]:
        assert g.delta(t) == pytest.approx(float(ref_delta(law, t)), rel=1e-12, abs=1e-30)
    assert g.epsilon(0.0) == pytest.approx(eps, rel=1e-12)
    # the trade-off of one pair against the polygon of its two laws
    from ldpsim.privacy.pld import DiscretePLD

    pair = DiscretePLD.from_distributions(ref_matrix(k, eps)[0], ref_matrix(k, eps)[1])
    alpha = np.linspace(0, 1, 11)
    np.testing.assert_allclose(mech.pld(0, 1).tradeoff(alpha), pair.tradeoff(alpha), atol=1e-12)


@pytest.mark.parametrize("eps", [1e-12, 1e-6, 700.0, 800.0])
def test_extreme_eps_no_overflow(eps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech = HadamardResponse(6, eps)
        tau = mp.tanh(mp.mpf(eps) / 2)
        assert mech.tau == pytest.approx(float(tau), rel=1e-14)
        assert mech.delta(0.0) == pytest.approx(float(tau / 2), rel=1e-12)
        assert mech.epsilon(0.0) == eps
        d = mech.delta(eps / 2)
        assert 0.0 < d < 1.0 and mech.epsilon(d) <= eps / 2
        assert np.all(np.isfinite(mech.log_density(0, np.arange(mech.m))))
        y = mech.privatize(np.arange(6).repeat(100), rng=1)
        c = mech.sample_counts(np.full(6, 10**6), rng=2)
        assert c.sum() == 6 * 10**6 and y.min() >= 0 and y.max() < mech.m
        est = mech.invert(c / c.sum())
        var = mech.estimate_variance(np.full(6, 1 / 6), 10**6)
        assert np.all(np.isfinite(est)) and np.all(np.isfinite(var)) and np.all(var > 0)
        assert np.all(np.abs(est - 1 / 6) <= 6 * np.sqrt(var))  # 2 Phi(-6) per estimate


# --------------------------------------------------------------------------- samplers
@pytest.mark.parametrize("k, eps", [(5, 1.0), (11, 3.0)])
def test_privatize_frequencies_follow_the_law(k, eps):
    """Exact two-sided binomial tails per (input, output) cell, Bonferroni: false-failure
    probability <= 1e-6."""
    mech = HadamardResponse(k, eps)
    q = ref_matrix(k, eps)
    per = 200_000
    x = np.repeat(np.arange(k), per)
    y = mech.privatize(x, np.random.default_rng(3), chunk_size=7919)
    table = np.zeros((k, mech.m), dtype=np.int64)
    np.add.at(table, (x, y), 1)
    bad = binomial_cells_ok(table, per, q, 1e-6)
    assert not bad, bad


def test_sample_counts_and_aggregated_privatize_have_the_exact_law():
    """Each output count (and the count of each C_x) is a sum over inputs of binomials:
    both samplers against that exact pmf over 2000 replications; alpha 1e-6 split over the
    events and the two samplers."""
    k, eps = 6, 1.2
    mech = HadamardResponse(k, eps)
    q = ref_matrix(k, eps)
    rng = np.random.default_rng(4)
    n_x = rng.integers(5, 60, size=k)
    reps = 2000
    H = hadamard(mech.m)
    events = [[y] for y in range(mech.m)] + [list(np.flatnonzero(H[x + 1] == 1)) for x in range(k)]
    alpha = 1e-6 / (2 * len(events))
    agg = np.stack([mech.sample_counts(n_x, rng) for _ in range(reps)])
    x = np.repeat(np.arange(k), n_x)
    ind = np.stack([mech.statistic(mech.privatize(x, rng)) for _ in range(reps)])
    for counts in (agg, ind):
        assert np.all(counts.sum(axis=1) == n_x.sum())
        for ev in events:
            pmf = sum_of_binomials_pmf(n_x, q[:, ev].sum(axis=1))
            assert_sample_law(counts[:, ev].sum(axis=1), pmf, alpha)


def test_sample_counts_at_huge_n_follows_the_multinomial():
    """All 10^12 clients on one input: Multinomial(10^12, Q[x]) exactly, exact binomial
    tails per cell (false-failure probability 1e-6)."""
    k, eps = 5, 0.5
    mech = HadamardResponse(k, eps)
    q = ref_matrix(k, eps)
    n = 10**12
    rng = np.random.default_rng(5)
    table = np.stack([mech.sample_counts(np.eye(k, dtype=np.int64)[x] * n, rng) for x in range(k)])
    assert np.all(table.sum(axis=1) == n)
    assert not binomial_cells_ok(table, n, q, 1e-6)


def test_sample_statistic_is_sample_counts():
    mech = HadamardResponse(9, 1.0)
    n = np.arange(9) * 1000
    np.testing.assert_array_equal(mech.sample_statistic(n, rng=8), mech.sample_counts(n, rng=8))


# --------------------------------------------------------------------------- the estimator
@pytest.mark.parametrize("k, eps", [(3, 1.0), (5, 2.0), (8, 0.5)])
def test_estimator_is_the_hadamard_estimator_and_unbiased(k, eps):
    mech = HadamardResponse(k, eps)
    K = ref_K(k)
    H = hadamard(K).astype(float)
    q = ref_matrix(k, eps)
    e = math.exp(eps)
    # A f = 2 (e^eps + 1)/(e^eps - 1) (Phat(C_x) - 1/2) for frequencies summing to one
    f = np.random.default_rng(6).dirichlet(np.ones(K))
    phat = np.array([f[H[x + 1] == 1].sum() for x in range(k)])
    np.testing.assert_allclose(mech.invert(f), 2 * (e + 1) / (e - 1) * (phat - 0.5), rtol=1e-12, atol=1e-13)
    # unbiased: A Q^T = I; and it is not the least-squares inverse of the generic class
    a = mech.inversion_matrix
    np.testing.assert_allclose(a @ q.T, np.eye(k), atol=1e-12)
    assert not np.allclose(a, np.linalg.pinv(q.T))
    p = np.random.default_rng(7).dirichlet(np.ones(k))
    np.testing.assert_allclose(mech.invert(p @ q), p, atol=1e-13)
    np.testing.assert_allclose(mech.forward(p), p @ q, rtol=1e-13)
    g = np.random.default_rng(8).random(K)
    np.testing.assert_allclose(mech.backward(g), q @ g, rtol=1e-13)
    # exact covariance: A (diag(M) - M M^T) A^T / n with A = H[1:k+1] / tau, built densely
    tau = (e - 1) / (e + 1)
    a_ref = H[1 : k + 1] / tau
    m = p @ q
    cov = a_ref @ (np.diag(m) - np.outer(m, m)) @ a_ref.T / 250.0
    np.testing.assert_allclose(mech.estimate_covariance(p, 250), cov, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(mech.inversion_covariance(m, 250), cov, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(mech.estimate_variance(p, 250), np.diag(cov), rtol=1e-12)
    np.testing.assert_allclose(mech.inversion_variance(m, 250), np.diag(cov), rtol=1e-10)
    np.testing.assert_allclose(mech.estimate_std_error(p, 250), np.sqrt(np.diag(cov)), rtol=1e-12)
    np.testing.assert_allclose(mech.plugin_variance(m, 250), np.diag(cov), rtol=1e-10)
    np.testing.assert_allclose(mech.inversion_coefficient_range(), a_ref.max(axis=1) - a_ref.min(axis=1), rtol=1e-14)
    assert mech.identifiable and not HadamardResponse(k, 0.0).identifiable


def test_estimator_mean_and_covariance_against_simulation():
    """One report per replication (the n-report covariance is exactly 1/n of it): with the
    true mean known, (est_x - p_x)(est_x' - p_x') are i.i.d. and bounded, so Hoeffding's
    inequality bounds the error of their mean; alpha 1e-6 split over the k means and the
    k(k+1)/2 covariance entries."""
    k, eps = 4, 2.0
    mech = HadamardResponse(k, eps)
    p = np.array([0.4, 0.3, 0.2, 0.1])
    R = 2_000_000
    x = np.random.default_rng(9).choice(k, size=R, p=p)
    y = mech.privatize(x, np.random.default_rng(10))
    H = hadamard(mech.m).astype(float)
    est = H[1 : k + 1][:, y].T / mech.tau  # each report's estimate, R x k
    tests = k + k * (k + 1) // 2
    z = hoeffding(1.0, R, 1e-6 / tests)  # per unit range, false-failure 1e-6 over all the tests
    width = 2 / mech.tau
    assert np.all(np.abs(est.mean(axis=0) - p) <= width * z)
    centred = est - p
    cov = centred.T @ centred / R
    exact = mech.estimate_covariance(p, 1)
    bound = (1 / mech.tau + 1) ** 2 * 2 * z
    assert np.all(np.abs(cov - exact) <= bound), (cov, exact, bound)
    # and the covariance differs from what the least-squares estimator would have
    pinv = np.linalg.pinv(mech.matrix.T)
    m = p @ mech.matrix
    ls = pinv @ (np.diag(m) - np.outer(m, m)) @ pinv.T
    assert np.max(np.abs(ls - exact)) > 4 * bound


def test_analyst_functions_use_the_closed_forms():
    mech = HadamardResponse(5, 1.0)
    p = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    counts = mech.sample_counts(np.round(p * 10**7).astype(np.int64), rng=11)
    fe = frequency_estimate(mech, counts)
    se = mech.estimate_std_error(p, fe.n)
    assert np.all(np.abs(fe.estimate - p) <= 6 * se)
    np.testing.assert_allclose(fe.std_error, se, rtol=1e-2)
    ci = confidence_intervals(mech, counts, method="conservative")
    assert np.all((ci["ci_low"] <= p) & (p <= ci["ci_high"]))
    em = em_estimate(mech, counts)
    assert np.all(np.abs(em.estimate - p) <= 6 * se)


# --------------------------------------------------------------------------- large alphabets
def test_large_alphabet_without_dense_matrices():
    k = 10**5
    mech = HadamardResponse(k, 1.0)
    assert mech.m == 131072
    for what in ("matrix", "inversion_matrix"):
        with pytest.raises(LdpSimError) as exc:
            getattr(mech, what)
        assert "\n" not in str(exc.value) and str(exc.value).startswith("k: got")
    p = np.full(k, 1.0 / k)
    x = np.random.default_rng(12).integers(0, k, size=200_000)
    counts = mech.statistic(mech.privatize(x, rng=13))
    est = mech.invert(counts / counts.sum())
    se = mech.estimate_std_error(p, x.size)
    assert est.shape == (k,) and np.all(np.abs(est - p) <= 6.5 * se)  # 2 Phi(-6.5) k < 1e-5
    np.testing.assert_allclose(mech.plugin_std_error(counts / counts.sum(), x.size), se, rtol=1e-2)
    agg = mech.sample_counts(np.full(k, 10**7, dtype=np.int64), rng=14)
    assert agg.sum() == k * 10**7
    assert mech.forward(p).shape == (mech.m,) and mech.backward(np.ones(mech.m)).shape == (k,)
    assert mech.epsilon(0.0) == 1.0 and mech.delta(0.5) > 0 and mech.is_private(1.0)
    assert mech.guarantee().delta(0.5) == pytest.approx(mech.delta(0.5), rel=1e-12)
    assert mech.identifiable and mech.possible_outputs().all()
    assert np.all(mech.inversion_coefficient_range() == 2 / mech.tau)
    assert mech.log_density(k - 1, [0, 5, mech.m - 1]).shape == (3,)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: HadamardResponse(1, 1.0), "k"),
        (lambda: HadamardResponse(2.5, 1.0), "k"),
        (lambda: HadamardResponse(4, -1.0), "eps"),
        (lambda: HadamardResponse(4, float("nan")), "eps"),
        (lambda: HadamardResponse(4, math.inf), "eps"),
        (lambda: HadamardResponse(4, 1.0).privatize([0, 4]), "x"),
        (lambda: HadamardResponse(4, 1.0).privatize([0.5]), "x"),
        (lambda: HadamardResponse(4, 1.0).sample_counts([1, 2, 3]), "input_counts"),
        (lambda: HadamardResponse(4, 1.0).sample_counts([1, 2, 3, -1]), "input_counts"),
        (lambda: HadamardResponse(4, 1.0).sample("z", 3), "values"),
        (lambda: HadamardResponse(4, 0.0).invert(np.full(8, 1 / 8)), "mechanism"),
        (lambda: HadamardResponse(4, 1.0).epsilon(1.5), "delta"),
        (lambda: HadamardResponse(4, 1.0).delta(-1.0), "eps"),
        (lambda: catalog.build("hadamard_response", k=4, eps="x"), "eps"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, name):
    with pytest.raises(LdpSimError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{name}: got"), msg


# --------------------------------------------------------------------------- in a survey
def test_aggregate_survey_run_estimates_within_exact_errors():
    """A survey of 10^9 clients in aggregate mode (exact output counts): every final estimate
    within 6 exact standard errors (2 Phi(-6) per estimate, under 1e-8 for the 5)."""
    text = scenario_text(
        mode="aggregate",
        size=10**9,
        mechanism='kind = "hadamard_response"\neps = 0.5',
        labels='["a", "b", "c", "d", "e"]',
        distribution="[0.4, 0.3, 0.15, 0.1, 0.05]",
    )
    sc = parse_scenario(text, "hr.toml")
    assert sc.mechanism == HadamardResponse(5, 0.5).with_labels(["a", "b", "c", "d", "e"])
    rows = run_replication(sc, 0, 20261202)
    end = rows[rows["reason"] == "end"]
    est = end[end["quantity"] == "frequency"]
    se = end[end["quantity"] == "std_error"]["theory"].to_numpy()
    err = np.abs(est["estimate"].to_numpy() - est["truth"].to_numpy())
    assert len(err) == 5 and np.all(err <= 6 * se), (err, se)
    assert int(end[end["quantity"] == "received"]["estimate"].iloc[0]) == 10**9


@pytest.mark.parametrize("numpy_has_bitwise_count", [True, False])
def test_odd_parity_matches_python_popcount(numpy_has_bitwise_count, monkeypatch):
    """The sign of H[a, y], with numpy's bitwise_count and with the fold numpy 1.x uses,
    against Python's own bit count, at indices up to 2^62."""
    from ldpsim.mechanisms.oracles.hadamard import _odd_parity

    if not numpy_has_bitwise_count:
        monkeypatch.delattr(np, "bitwise_count", raising=False)
    rng = np.random.default_rng(7)
    a = np.concatenate([np.arange(300), rng.integers(0, 2**62, 2000)]).astype(np.int64)
    y = rng.integers(0, 2**62, a.size).astype(np.int64)
    expected = np.array([bin(int(p) & int(q)).count("1") % 2 == 1 for p, q in zip(a, y)])
    np.testing.assert_array_equal(_odd_parity(a, y), expected)
