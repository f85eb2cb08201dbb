"""Subset selection (ldpsim/mechanisms/oracles/subset.py) against independent references.

References: the law written from its definition (Wang et al. 2016; Ye and Barg 2018) by
enumerating every subset of size omega in mpmath at 50 digits, with weights e^eps and 1;
brute-force hockey-stick divergences over every ordered pair of inputs; inclusion and pair
inclusion probabilities and the covariance of the inclusion indicators summed over the
enumerated subsets; the worst-case risk of every subset size computed from those sums.
Every statistical check states its false-failure probability (at most 1e-6 per test; exact
binomial tails, chi-square, or Hoeffding's inequality; fixed seeds).
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations

import mpmath as mp
import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog, randomized_response
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.oracles.subset import SubsetSelection, optimal_omega
from ldpsim.sim import parse_scenario
from ldpsim.stats import hoeffding
from tests.sim.helpers import scenario_text
from tests.stats_checks import assert_codes_law, binomial_cells_ok
from tests.tiers import sample

mp.mp.dps = 50


# --------------------------------------------------------------------------- references
def ref_law(k: int, omega: int, eps: float) -> tuple[list[tuple[int, ...]], list[list[mp.mpf]]]:
    """Every omega-subset and its probability under each input: weight e^eps when the input
    is in it, 1 otherwise, normalised by the sum of the weights."""
    subsets = list(combinations(range(k), omega))
    e = mp.e ** mp.mpf(eps)
    law = []
    for x in range(k):
        w = [e if x in s else mp.mpf(1) for s in subsets]
        z = mp.fsum(w)
        law.append([wi / z for wi in w])
    return subsets, law


def ref_delta(law, t: float) -> mp.mpf:
    et = mp.e ** mp.mpf(t)
    return max(mp.fsum(max(a - et * b, 0) for a, b in zip(p, q)) for p in law for q in law if p is not q)


def ref_moments(k: int, omega: int, eps: float, prior) -> tuple[list[mp.mpf], list[list[mp.mpf]]]:
    """E[I_z] and E[I_z I_z'] of the inclusion indicators under inputs drawn from prior."""
    subsets, law = ref_law(k, omega, eps)
    prior = [mp.mpf(p) for p in prior]
    prob = [mp.fsum(prior[x] * law[x][i] for x in range(k)) for i in range(len(subsets))]
    mean = [mp.fsum(prob[i] for i, s in enumerate(subsets) if z in s) for z in range(k)]
    pair = [[mp.fsum(prob[i] for i, s in enumerate(subsets) if z in s and w in s) for w in range(k)] for z in range(k)]
    return mean, pair


def ref_inclusion(k: int, omega: int, eps: float) -> tuple[mp.mpf, mp.mpf]:
    """(P(x in Y | x), P(z in Y | x)) for z != x, by enumeration."""
    subsets, law = ref_law(k, omega, eps)
    p_in = mp.fsum(law[0][i] for i, s in enumerate(subsets) if 0 in s)
    q_in = mp.fsum(law[0][i] for i, s in enumerate(subsets) if 1 in s)
    return p_in, q_in


SMALL = [(2, 1, 1.0), (3, 1, 0.5), (4, 2, 2.0), (5, 2, 1.0), (5, 3, 0.3), (6, 4, 1.5), (7, 3, 3.0)]


# --------------------------------------------------------------------------- exact law and privacy
@pytest.mark.parametrize("k, omega, eps", SMALL)
def test_law_is_the_definition(k, omega, eps):
    mech = SubsetSelection(k, eps, omega)
    subsets, law = ref_law(k, omega, eps)
    reports = mech.possible_reports()
    assert [tuple(r) for r in reports.tolist()] == subsets
    for x in range(k):
        got = np.exp(mech.log_density(x, reports))
        np.testing.assert_allclose(got, [float(p) for p in law[x]], rtol=1e-13, atol=0)
        assert mech.log_density(x, reports[0]) == pytest.approx(math.log(float(law[x][0])), rel=1e-13)
    # rows that are not subsets of size omega in increasing order have probability zero
    if omega >= 2:
        bad = np.array([[0] * omega, list(range(omega))[::-1], [0.5] + list(range(1, omega))])
        assert np.all(mech.log_density(0, bad) == -np.inf)
    assert np.isnan(mech.log_density(0, np.full(omega, np.nan)))
    assert mech.log_density(0, np.full(omega, k)) == -np.inf
    p_in, q_in = ref_inclusion(k, omega, eps)
    assert mech.p_in == pytest.approx(float(p_in), rel=1e-14)
    assert mech.q_in == pytest.approx(float(q_in), rel=1e-13)
    assert mech.report_bits == pytest.approx(math.log2(math.comb(k, omega)), rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("k, omega, eps", SMALL)
def test_exact_eps_and_delta_against_brute_force(k, omega, eps):
    mech = SubsetSelection(k, eps, omega)
    _, law = ref_law(k, omega, eps)
    ref_eps = max(mp.log(max(p / q for p, q in zip(law[a], law[b]))) for a in range(k) for b in range(k) if a != b)
    assert mech.epsilon(0.0) == pytest.approx(float(ref_eps), rel=1e-14)
    for t in [0.0, eps / 3, eps / 2, 0.9 * eps, eps, 2 * eps]:
        assert mech.delta(t) == pytest.approx(float(ref_delta(law, t)), rel=1e-12, abs=1e-30), t  # 50-digit reference
    np.testing.assert_array_equal(mech.delta(np.array([0.0, eps])), [mech.delta(0.0), mech.delta(eps)])
    for d in [1e-9, 1e-3, 0.05, mech.delta(0.0) / 2]:
        t = mech.epsilon(d)
        assert mech.delta(t) <= d
        if t > 0:
            assert mech.delta(math.nextafter(t, 0.0)) > d
    assert mech.epsilon(mech.delta(0.0)) == 0.0
    g = mech.guarantee()
    for t in [0.0, eps / 2]:
        assert g.delta(t) == pytest.approx(float(ref_delta(law, t)), rel=1e-12, abs=1e-30)


def test_omega_one_is_randomized_response():
    for k, eps in [(2, 1.0), (5, 0.7), (9, 3.0)]:
        mech = SubsetSelection(k, eps, 1)
        rr = randomized_response(k, eps)
        rows = np.arange(k)[:, None]
        for x in range(k):
            np.testing.assert_allclose(mech.log_density(x, rows), rr.log_matrix[x], rtol=1e-14)
        for t in [0.0, eps / 2]:
            assert mech.delta(t) == pytest.approx(rr.delta(t), rel=1e-12)
        # single items may also come without their axis of length 1
        np.testing.assert_array_equal(mech.log_density(0, np.arange(k)), mech.log_density(0, rows))
        assert mech.log_density(0, 0) == mech.log_density(0, [0])
        np.testing.assert_array_equal(mech.statistic(np.arange(k)), mech.statistic(rows))


@pytest.mark.parametrize("eps", [1e-12, 1e-6, 700.0, 800.0])
def test_extreme_eps_no_overflow(eps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, omega in [(6, None), (6, 3), (200, 2), (200, 150)]:
            mech = SubsetSelection(k, eps, omega)
            assert mech.epsilon(0.0) == eps
            d0 = mech.delta(0.0)
            assert 0.0 < d0 <= 1.0 and mech.epsilon(d0 / 2) <= eps
            y = mech.privatize(np.arange(k).repeat(20), rng=1)
            assert y.shape == (20 * k, mech.omega)
            assert np.all(np.isfinite(mech.log_density(0, y)))
            var = mech.estimate_variance(np.full(k, 1 / k), 10**6)
            assert np.all(np.isfinite(var)) and np.all(var > 0)
            assert np.all(np.isfinite(mech.invert(mech.statistic(y) / y.shape[0])))
    # the loss atoms in closed form against mpmath at eps = 1e-12: delta(0) = a (1 - e^-eps)
    mech = SubsetSelection(6, 1e-12, 3)
    e = mp.e ** mp.mpf(1e-12)
    a = 3 * e / (3 * e + 3) * mp.mpf(3) / 5
    assert mech.delta(0.0) == pytest.approx(float(a * (1 - 1 / e)), rel=1e-12)


# --------------------------------------------------------------------------- the choice of omega
def ref_worst_risk(k: int, omega: int, eps: float) -> mp.mpf:
    """Sum over inputs of the exact variance of the estimator from one report at the uniform
    prior, from p_in and q_in counted over subsets (no closed form of the module used)."""
    e = mp.e ** mp.mpf(eps)
    z = mp.binomial(k - 1, omega - 1) * e + mp.binomial(k - 1, omega)
    p_in = mp.binomial(k - 1, omega - 1) * e / z
    q_in = (
        (mp.binomial(k - 2, omega - 2) * e + mp.binomial(k - 2, omega - 1)) / z
        if omega >= 2
        else mp.binomial(k - 2, omega - 1) / z
    )
    mu = (p_in + (k - 1) * q_in) / k
    return k * mu * (1 - mu) / (p_in - q_in) ** 2


@pytest.mark.parametrize("k", sample([2, 3, 5, 8, 17, 64, 100, 1000], keep=range(7)))  # k = 1000: slow tier
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 1.7, 3.0, 6.0])
def test_default_omega_minimises_the_exact_worst_case_risk(k, eps):
    chosen = SubsetSelection(k, eps).omega
    assert chosen == optimal_omega(k, eps)
    risks = {w: ref_worst_risk(k, w, eps) for w in range(1, k)}
    best = min(risks.values())
    assert risks[chosen] <= best * (1 + mp.mpf(1e-12))
    star = k / (math.exp(eps) + 1)
    assert chosen in (max(1, math.floor(star)), max(1, min(k - 1, math.ceil(star))))
    # the module's estimate_variance at the uniform prior is that risk
    mech = SubsetSelection(k, eps, chosen)
    assert mech.estimate_variance(np.full(k, 1 / k), 1).sum() == pytest.approx(float(risks[chosen]), rel=1e-10)


def test_uniform_prior_is_the_worst_case():
    mech = SubsetSelection(7, 1.0)
    worst = mech.estimate_variance(np.full(7, 1 / 7), 1).sum()
    for p in np.random.default_rng(1).dirichlet(np.ones(7) * 0.5, size=200):
        assert mech.estimate_variance(p, 1).sum() <= worst * (1 + 1e-12)


# --------------------------------------------------------------------------- samplers
CASES_LAW = [(5, 2, 1.0), (5, 3, 0.8), (6, 4, 2.0), (4, 1, 0.5), (64, 1, 2.0), (8, 7, 1.0)]


@pytest.mark.parametrize("k, omega, eps", sample(CASES_LAW, keep=(0, 3, 4)))
def test_privatize_follows_the_exact_law(k, omega, eps):
    """Every report of two inputs against its exact probability (binned exact binomial
    tails and a chi-square, tests/stats_checks.py): false-failure probability <= 1e-6."""
    mech = SubsetSelection(k, eps, omega)
    subsets, law = ref_law(k, omega, eps)
    index = {s: i for i, s in enumerate(subsets)}
    rng = np.random.default_rng(2)
    for x in (0, k - 1):
        pmf = np.array([float(p) for p in law[x]])
        n = int(min(2_000_000, max(200_000, 2_000 / pmf.min())))
        y = mech.sample(x, n, rng)
        assert y.dtype == mech.report_dtype and y.shape == (n, omega)
        codes = np.array([index[tuple(r)] for r in y.tolist()])
        assert_codes_law(codes, pmf, 1e-6 / 2)


@pytest.mark.parametrize(
    "k, omega, eps", sample([(300, 2, 1.0), (300, 150, 0.3), (300, 250, 1.0), (4096, 1102, 1.0)], keep=(0, 1))
)
def test_inclusion_frequencies_for_larger_alphabets(k, omega, eps):
    """P(x in Y) = p_in, P(z in Y) = q_in, P(x, z in Y) = p_in (omega-1)/(k-1) and
    P(z, z' in Y) (z, z' != x) from subset counting, by exact binomial tails over the
    inclusion counts of n reports (Bonferroni, false-failure probability <= 1e-6). Covers the
    list sampler (omega <= k/64), the bitmap sampler and its complement form."""
    mech = SubsetSelection(k, eps, omega)
    e, c = mp.e ** mp.mpf(eps), mp.binomial  # subsets counted in mpmath (C(4096, 1102) overflows floats)
    z = c(k - 1, omega - 1) * e + c(k - 1, omega)
    p_in = float(c(k - 1, omega - 1) * e / z)
    q_in = float((c(k - 2, omega - 2) * e + c(k - 2, omega - 1)) / z)  # C(n, -1) = 0 in mpmath
    pair_x = float(c(k - 2, omega - 2) * e / z)  # x and z in Y
    pair_o = float((c(k - 3, omega - 3) * e + c(k - 3, omega - 2)) / z)  # z and z' in Y, x either way
    n = 40_000 if k == 4096 else 200_000
    x = 3
    y = mech.sample(x, n, np.random.default_rng(3))
    member = np.zeros((n, k), dtype=bool)
    np.put_along_axis(member, y.astype(np.int64), True, axis=1)
    assert np.all(member.sum(axis=1) == omega)
    counts = member.sum(axis=0)
    probs = np.full(k, q_in)
    probs[x] = p_in
    pairs = [(x, 0), (x, k - 1), (0, 1), (1, k - 1)]
    pc = np.array([np.count_nonzero(member[:, a] & member[:, b]) for a, b in pairs])
    pp = np.array([pair_x, pair_x, pair_o, pair_o])
    bad = binomial_cells_ok(np.concatenate([counts, pc]), n, np.concatenate([probs, pp]), 1e-6)
    assert not bad, bad
    np.testing.assert_array_equal(mech.statistic(y), counts)


def test_privatize_shapes_chunks_and_reproducibility():
    mech = SubsetSelection(10, 1.0, 3)
    x = np.random.default_rng(4).integers(0, 10, size=(4, 250))
    a = mech.privatize(x, np.random.default_rng(5))
    b = mech.privatize(x, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 250, 3) and np.all(np.diff(a.astype(int), axis=-1) > 0)
    c = mech.privatize(x, np.random.default_rng(5), chunk_size=7)
    assert c.shape == a.shape and np.all(np.diff(c.astype(int), axis=-1) > 0)
    assert mech.privatize(np.zeros(0, dtype=np.int64), rng=1).shape == (0, 3)
    assert mech.statistic(np.zeros((0, 3), dtype=np.int64)).tolist() == [0] * 10
    np.testing.assert_array_equal(mech.statistic(a), np.bincount(a.reshape(-1), minlength=10))


# --------------------------------------------------------------------------- the estimator
@pytest.mark.parametrize("k, omega, eps", [(4, 1, 1.0), (5, 2, 1.0), (6, 4, 0.5), (7, 3, 2.0)])
def test_estimator_moments_against_enumeration(k, omega, eps):
    mech = SubsetSelection(k, eps, omega)
    prior = np.random.default_rng(6).dirichlet(np.ones(k))
    mean, pair = ref_moments(k, omega, eps, prior)
    mean_f = np.array([float(m) for m in mean])
    cov_ref = np.array([[float(pair[a][b] - mean[a] * mean[b]) for b in range(k)] for a in range(k)])
    p_in, q_in = (float(v) for v in ref_inclusion(k, omega, eps))
    np.testing.assert_allclose(mech.forward(prior), mean_f, rtol=1e-13)
    np.testing.assert_allclose(mech.invert(mean_f), prior, atol=1e-12)  # unbiased
    np.testing.assert_allclose(mech.support_matrix, np.where(np.eye(k, dtype=bool), p_in, q_in), rtol=1e-13)
    np.testing.assert_allclose(mech.statistic_covariance(prior), cov_ref, rtol=1e-11, atol=1e-15)
    n = 300
    gap = p_in - q_in
    np.testing.assert_allclose(mech.estimate_covariance(prior, n), cov_ref / (n * gap * gap), rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(mech.estimate_variance(prior, n), np.diag(cov_ref) / (n * gap * gap), rtol=1e-12)
    np.testing.assert_allclose(mech.plugin_variance(mean_f, n), np.diag(cov_ref) / (n * gap * gap), rtol=1e-12)
    np.testing.assert_allclose(mech.inversion_covariance(mean_f, n), cov_ref / (n * gap * gap), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(mech.inversion_coefficient_range(), 1 / gap, rtol=1e-13)
    g = np.random.default_rng(7).random(k)
    np.testing.assert_allclose(mech.backward(g), mech.support_matrix @ g, rtol=1e-13)


def test_estimator_mean_and_covariance_against_simulation():
    """One report per replication (the n-report covariance is exactly 1/n of it): with the
    true mean known, (est_z - p_z)(est_z' - p_z') are i.i.d. and bounded, so Hoeffding's
    inequality bounds the error of their mean; alpha 1e-6 over the k means and the
    k(k+1)/2 covariance entries."""
    k, eps = 5, 2.0
    mech = SubsetSelection(k, eps, 2)
    p = np.array([0.35, 0.25, 0.2, 0.15, 0.05])
    R = 1_000_000
    x = np.random.default_rng(8).choice(k, size=R, p=p)
    y = mech.privatize(x, np.random.default_rng(9))
    member = np.zeros((R, k))
    np.put_along_axis(member, y.astype(np.int64), 1.0, axis=1)
    est = (member - mech.q_in) / mech.gap
    tests = k + k * (k + 1) // 2
    z = hoeffding(1.0, R, 1e-6 / tests)  # per unit range, false-failure 1e-6 over all the tests
    assert np.all(np.abs(est.mean(axis=0) - p) <= z / mech.gap)
    centred = est - p
    cov = centred.T @ centred / R
    reach = max(1 - mech.q_in, mech.q_in) / mech.gap + 1  # |est - p| <= reach
    assert np.all(np.abs(cov - mech.estimate_covariance(p, 1)) <= 2 * reach**2 * z)


def test_estimate_in_a_survey_run_and_no_aggregate_mode():
    text = scenario_text(
        mechanism='kind = "subset_selection"\neps = 1.0\nomega = 2',
        size=20_000,
        labels='["a", "b", "c", "d", "e"]',
        distribution="[0.4, 0.3, 0.15, 0.1, 0.05]",
    )
    sc = parse_scenario(text, "ss.toml")
    assert sc.mechanism == SubsetSelection(5, 1.0, 2).with_labels(["a", "b", "c", "d", "e"])
    assert sc.mechanism.sample("c", 4, rng=1).shape == (4, 2)
    with pytest.raises(LdpSimError) as exc:
        parse_scenario(text.replace('mode = "individual"', 'mode = "aggregate"'), "ss.toml")
    assert "\n" not in str(exc.value) and "simulation.mode: got 'aggregate'" in str(exc.value)
    with pytest.raises(NotAvailable) as exc:
        SubsetSelection(5, 1.0).sample_statistic([1, 2, 3, 4, 5])
    assert "\n" not in str(exc.value) and str(exc.value).startswith("sample_statistic: got")
    assert SubsetSelection.aggregate_exact is False


# --------------------------------------------------------------------------- large alphabets
def test_large_alphabet_without_dense_matrices():
    k = 10**5
    mech = SubsetSelection(k, 10.0)  # omega = ceil or floor of k / (e^10 + 1) = 4.5
    assert mech.omega in (4, 5) and mech.report_dtype == np.uint32
    for call in (
        lambda: mech.support_matrix,
        lambda: mech.estimate_covariance(np.full(k, 1 / k), 10),
        lambda: mech.statistic_covariance(np.full(k, 1 / k)),
        lambda: mech.possible_reports(),
    ):
        with pytest.raises(LdpSimError) as exc:
            call()
        assert "\n" not in str(exc.value) and str(exc.value).startswith("k: got")
    p = np.full(k, 1.0 / k)
    x = np.random.default_rng(10).integers(0, k, size=200_000)
    y = mech.privatize(x, rng=11)
    counts = mech.statistic(y)
    est = mech.invert(counts / x.size)
    se = mech.estimate_std_error(p, x.size)
    assert np.all(np.abs(est - p) <= 6.5 * se)  # 2 Phi(-6.5) k < 1e-5
    assert est.sum() == pytest.approx(1.0, rel=1e-9)
    plugin = mech.plugin_std_error(counts / x.size, x.size) ** 2
    assert plugin.mean() == pytest.approx((se**2).mean(), rel=1e-2)  # item by item it is noisy (about 9 reports each)
    assert mech.forward(p).shape == (k,) and mech.backward(np.ones(k)).shape == (k,)
    assert mech.is_private(10.0) and not mech.is_private(9.99) and mech.identifiable
    assert mech.guarantee().delta(5.0) == pytest.approx(mech.delta(5.0), rel=1e-12)
    assert len(mech.neighbours()) == k - 1
    big = SubsetSelection(k, 1.0)  # omega ~ 26894: the bitmap sampler, O(k) per client
    yb = big.privatize(np.arange(300), rng=12)
    assert yb.shape == (300, big.omega) and np.all(np.diff(yb.astype(np.int64), axis=1) > 0)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: SubsetSelection(1, 1.0), "k"),
        (lambda: SubsetSelection(4, -1.0), "eps"),
        (lambda: SubsetSelection(4, float("nan")), "eps"),
        (lambda: SubsetSelection(4, 1.0, 0), "omega"),
        (lambda: SubsetSelection(4, 1.0, 4), "omega"),
        (lambda: SubsetSelection(4, 1.0, 2.5), "omega"),
        (lambda: SubsetSelection(4, 1.0, True), "omega"),
        (lambda: SubsetSelection(4, 1.0, 2).privatize([0, 4]), "x"),
        (lambda: SubsetSelection(4, 1.0, 2).privatize([1.5]), "x"),
        (lambda: SubsetSelection(4, 1.0, 2).sample(7, 3), "x"),
        (lambda: SubsetSelection(4, 1.0, 2).sample(0, -1), "n"),
        (lambda: SubsetSelection(4, 1.0, 2).statistic(np.zeros((3, 3), dtype=int)), "reports"),
        (lambda: SubsetSelection(4, 1.0, 2).statistic(np.array([[0, 4]])), "reports"),
        (lambda: SubsetSelection(4, 1.0, 2).statistic(np.array([[0.0, 1.0]])), "reports"),
        (lambda: SubsetSelection(4, 1.0, 2).log_density(0, [0, 1, 2]), "y"),
        (lambda: SubsetSelection(4, 1.0, 2).log_density(0, ["a", "b"]), "y"),
        (lambda: SubsetSelection(4, 0.0, 2).invert(np.full(4, 0.5)), "mechanism"),
        (lambda: SubsetSelection(4, 1.0, 2).epsilon(2.0), "delta"),
        (lambda: SubsetSelection(4, 1.0, 2).delta(float("nan")), "eps"),
        (lambda: SubsetSelection(40, 1.0, 20).possible_reports(), "k"),
        (lambda: catalog.build("subset_selection", k=4, omega="x"), "omega"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, name):
    with pytest.raises(LdpSimError) as exc:
        call()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{name}: got"), msg
