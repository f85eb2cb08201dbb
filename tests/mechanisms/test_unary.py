"""Unary encoding (ldpsim/mechanisms/oracles/unary.py): SUE (basic one-time RAPPOR,
Erlingsson et al. 2014) and OUE (Wang et al. 2017).

Reference values are computed here from the definitions, independently of the closed forms
of the module: the law of a report is enumerated bit by bit in mpmath (bit ``x`` is 1 with
``p``, every other bit with ``q``, with ``p`` and ``q`` written from the papers' formulas),
eps is the largest log-ratio over all reports and all ordered pairs, delta(t) the largest
hockey-stick sum, epsilon(d) the root of that sum found by bisection in mpmath. Every
statistical check states its false-failure probability (at most 1e-6 per test) and uses
fixed seeds: exact binomial tails (tests/stats_checks.py), Bernstein's inequality for
means of bounded variables with their exact variance, and for sample covariances six
standard errors of a mean of 4000 products of near-normal estimates.
"""

from __future__ import annotations

import itertools
import math
import time
import tracemalloc
import warnings

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import confidence_intervals, frequency_estimate
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.oracles.unary import (
    SPARSE_BELOW,
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
    bernoulli_bits,
)
from ldpsim.sim import parse_scenario
from ldpsim.sim.engine import run_replication
from tests.oracles import sum_of_binomials_pmf
from tests.sim.helpers import scenario_text
from tests.stats_checks import FALSE_FAILURE, assert_sample_law, bernstein, binomial_cells_ok
from tests.tiers import sample

CLASSES = {"sue": SymmetricUnaryEncoding, "oue": OptimizedUnaryEncoding}
mp.mp.dps = 40


# --------------------------------------------------------------------------- references
def ref_pq(name: str, eps) -> tuple[mp.mpf, mp.mpf]:
    """``(p, q)`` from the papers, in mpmath: SUE flips each bit of the one-hot vector with
    probability 1/(e^(eps/2)+1); OUE reports the input's bit with 1/2, the others with
    1/(e^eps+1)."""
    e = mp.mpf(eps)
    if name == "sue":
        h = mp.exp(e / 2)
        return h / (h + 1), 1 / (h + 1)
    return mp.mpf(1) / 2, 1 / (mp.exp(e) + 1)


def ref_law(name: str, k: int, eps: float, x: int) -> list[mp.mpf]:
    """P(report | input x) for every report in the order of ``itertools.product``."""
    p, q = ref_pq(name, eps)
    out = []
    for bits in itertools.product((0, 1), repeat=k):
        prob = mp.mpf(1)
        for j, b in enumerate(bits):
            r = p if j == x else q
            prob *= r if b else 1 - r
        out.append(prob)
    return out


def ref_privacy(name: str, k: int, eps: float):
    """(eps, delta(t)) of the definitions: max over ordered pairs and reports / events."""
    laws = [ref_law(name, k, eps, x) for x in range(k)]
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
    ref_eps = max(mp.log(pa / pb) for a, b in pairs for pa, pb in zip(laws[a], laws[b]))

    def delta(t) -> mp.mpf:
        et = mp.exp(mp.mpf(t))
        return max(mp.fsum(max(pa - et * pb, 0) for pa, pb in zip(laws[a], laws[b])) for a, b in pairs)

    return ref_eps, delta


def ref_epsilon(delta_fn, d: float, top: float) -> mp.mpf:
    """The t with delta(t) = d by bisection in mpmath (delta is decreasing on [0, top])."""
    lo, hi = mp.mpf(0), mp.mpf(top)
    for _ in range(90):  # 2^-90 of top: far below a rounding step of the result
        mid = (lo + hi) / 2
        if delta_fn(mid) <= d:
            hi = mid
        else:
            lo = mid
    return hi


def reports_in_product_order(k: int) -> np.ndarray:
    return np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64)


# --------------------------------------------------------------------------- exact privacy
PRIVACY_CASES = [(name, k, eps) for name in CLASSES for k, eps in ((2, 0.5), (3, 1.0), (4, 2.0), (5, 0.1), (3, 6.0))]


@pytest.mark.parametrize(
    "name, k, eps", sample(PRIVACY_CASES, keep=[i for i, c in enumerate(PRIVACY_CASES) if c[1] < 5])
)
def test_exact_eps_and_delta_against_the_definition(name, k, eps):
    mech = CLASSES[name](k, eps)
    ref_eps, ref_delta = ref_privacy(name, k, eps)
    assert mech.epsilon(0.0) == pytest.approx(float(ref_eps), rel=1e-13)
    for t in [0.0, eps / 3, eps / 2, 0.9 * eps, eps * (1 - 1e-9), eps, 1.5 * eps, math.inf]:
        want = float(ref_delta(t)) if math.isfinite(t) else 0.0
        # abs: the reference's own rounding at 40 digits (delta(eps) = 0 comes out near 1e-41)
        assert mech.delta(t) == pytest.approx(want, rel=1e-12, abs=1e-35), t
        assert mech.guarantee().delta(t) == pytest.approx(want, rel=1e-9, abs=1e-35), t
        if t >= eps:
            assert mech.delta(t) == 0.0
    d0 = float(ref_delta(0))
    for d in [1e-12, 1e-6, 1e-3, 0.3 * d0, 0.99 * d0]:
        t = mech.epsilon(d)
        root = ref_epsilon(ref_delta, d, eps)
        # the smallest float with delta(t) <= d is within a few rounding steps of the exact
        # root, plus the shift of the root that a rounding of delta itself (4 units of d) makes
        slope = abs(ref_delta(root + mp.mpf("1e-20")) - ref_delta(root)) / mp.mpf("1e-20")
        tol = 8 * math.ulp(max(float(root), 1e-300)) + 4 * math.ulp(d) / float(slope) + 1e-300
        assert abs(t - float(root)) <= tol, (d, t, float(root), tol)
        assert mech.delta(t) <= d and (t == 0.0 or mech.delta(math.nextafter(t, 0.0)) > d)
    assert mech.epsilon(mech.delta(0.0)) == 0.0 and mech.epsilon(1.0) == 0.0 and mech.epsilon(d0) < 1e-15
    np.testing.assert_array_equal(mech.epsilon(np.array([0.0, 1e-6])), [mech.epsilon(0.0), mech.epsilon(1e-6)])


@pytest.mark.parametrize("name", CLASSES)
def test_log_density_against_the_definition(name):
    k, eps = 5, 1.3
    mech = CLASSES[name](k, eps).with_labels(list("abcde"))
    reports = reports_in_product_order(k)
    for x, label in enumerate("abcde"):
        want = np.array([float(mp.log(v)) for v in ref_law(name, k, eps, x)])
        np.testing.assert_allclose(mech.log_density(label, reports), want, rtol=1e-13, atol=0)
        assert mech.log_density(label, reports[3].tolist()) == pytest.approx(want[3], rel=1e-13)
    assert mech.log_density("a", [0, 1, 2, 0, 0]) == -math.inf
    assert mech.log_density("a", [0.5, 1, 0, 0, 0]) == -math.inf
    assert math.isnan(mech.log_density("a", [math.nan, 1, 0, 0, 0]))
    assert mech.log_density("a", reports.reshape(4, 8, k)).shape == (4, 8)


@pytest.mark.parametrize("name", CLASSES)
def test_privacy_loss_law_and_symmetry(name):
    mech = CLASSES[name](6, 1.7)
    p, q = ref_pq(name, 1.7)
    law = mech.pld(2, 5)
    np.testing.assert_allclose(law.loss, [-1.7, 0.0, 1.7], rtol=1e-15)
    want = [(1 - p) * q, p * q + (1 - p) * (1 - q), p * (1 - q)]
    np.testing.assert_allclose(np.exp(law.log_p), [float(w) for w in want], rtol=1e-14)
    assert mech.neighbours() == [(0, 1)]
    assert mech.with_labels("uvwxyz").neighbours() == [("u", "v")]


def test_closed_forms_of_the_papers():
    """p, q and the small-frequency variance of Wang et al. (2017): SUE e^(eps/2)/(n(e^(eps/2)-1)^2),
    OUE 4 e^eps / (n (e^eps - 1)^2)."""
    for eps in (0.5, 1.0, 3.0):
        sue, oue = SymmetricUnaryEncoding(8, eps), OptimizedUnaryEncoding(8, eps)
        h = math.exp(eps / 2)
        assert sue.p == pytest.approx(h / (h + 1), rel=1e-15) and sue.q == pytest.approx(1 / (h + 1), rel=1e-15)
        assert oue.p == 0.5 and oue.q == pytest.approx(1 / (math.exp(eps) + 1), rel=1e-15)
        prior = np.zeros(8)
        prior[0] = 1.0
        n = 1000
        assert sue.estimate_variance(prior, n)[1] == pytest.approx(h / (n * (h - 1) ** 2), rel=1e-12)
        e = math.exp(eps)
        assert oue.estimate_variance(prior, n)[1] == pytest.approx(4 * e / (n * (e - 1) ** 2), rel=1e-12)


# --------------------------------------------------------------------------- exact Bernoulli bits
@pytest.mark.parametrize(
    "prob", [0.5, 0.75, 1 / 3, 0.2689414213699951, 0.3775406687981454, 0.1, SPARSE_BELOW, 0.01, 1e-5, 0.999]
)
def test_bernoulli_bits_law(prob):
    """The count of ones is Binomial(size, prob) (exact tails); so are the counts at every
    lane of the 64-bit words and of pairs of neighbouring bits (1, 1) (prob^2), which would
    catch lanes that are biased or not independent; and the ones of 500 short runs (every
    digit compared, no recursion). Bonferroni over 4 checks at FALSE_FAILURE/4."""
    rng = np.random.default_rng(20261202)
    size = 64 * 40_000  # above the recursion threshold: the bit-sliced path recurses
    bits = bernoulli_bits(prob, size, rng)
    assert bits.dtype == np.uint8 and bits.shape == (size,) and set(np.unique(bits).tolist()) <= {0, 1}
    a = FALSE_FAILURE / 4
    short = sum(int(bernoulli_bits(prob, 5000, rng).sum()) for _ in range(500))
    assert not binomial_cells_ok(np.array([short]), np.array([500 * 5000]), np.array([prob]), a)
    assert not binomial_cells_ok(np.array([int(bits.sum())]), np.array([size]), np.array([prob]), a)
    lanes = bits.reshape(-1, 64).sum(axis=0, dtype=np.int64)
    assert not binomial_cells_ok(lanes, np.full(64, size // 64), np.full(64, prob), a)
    pairs = int((bits[0::2] & bits[1::2]).sum())
    assert not binomial_cells_ok(np.array([pairs]), np.array([size // 2]), np.array([prob * prob]), a)


def test_bernoulli_bits_edges():
    rng = np.random.default_rng(3)
    assert bernoulli_bits(0.0, 100, rng).sum() == 0 and bernoulli_bits(1.0, 100, rng).sum() == 100
    assert bernoulli_bits(0.5, 0, rng).shape == (0,)
    assert bernoulli_bits(5e-324, 10_000, rng).sum() == 0  # one in 2e323
    for size in (1, 63, 64, 65, 1000):  # short runs compare every digit
        assert bernoulli_bits(0.3, size, rng).shape == (size,)
    # the same generator state gives the same bits
    np.testing.assert_array_equal(bernoulli_bits(0.3, 5000, 11), bernoulli_bits(0.3, 5000, 11))


# --------------------------------------------------------------------------- support probabilities
@pytest.mark.parametrize("name, k, eps", [("sue", 6, 1.0), ("oue", 6, 1.0), ("oue", 5, 6.0), ("sue", 300, 2.0)])
def test_support_probabilities_against_sampled_frequencies(name, k, eps):
    """For each input x, the count of 1-bits at item z among n reports is exactly
    Binomial(n, p) (z = x) or Binomial(n, q): exact two-sided tails per cell, Bonferroni
    over the k x k cells (binomial_cells_ok). OUE at eps = 6 has q < 1/64: the sparse sampler;
    at k = 300 the reports are privatised in chunks of 333 clients."""
    mech = CLASSES[name](k, eps)
    p, q = (float(v) for v in ref_pq(name, eps))
    rng = np.random.default_rng(20261203)
    n = 20_000 if k <= 6 else 2_000
    xs = range(k) if k <= 6 else range(0, k, 37)
    chunk = None if k <= 6 else 333
    table = np.array([mech.statistic(mech.privatize(np.full(n, x), rng, chunk_size=chunk)) for x in xs])
    probs = np.array([[p if z == x else q for z in range(k)] for x in xs])
    bad = binomial_cells_ok(table, np.full(table.shape, n), probs, FALSE_FAILURE)
    assert not bad, bad
    support = mech.support_matrix
    np.testing.assert_allclose(support[list(xs)], probs, rtol=1e-14)


def test_privatize_chunks_and_shapes():
    mech = SymmetricUnaryEncoding(5, 1.0)
    x = np.arange(5).repeat(7).reshape(5, 7)
    y = mech.privatize(x, 1)
    assert y.shape == (5, 7, 5) and y.dtype == np.uint8
    np.testing.assert_array_equal(y, mech.privatize(x, np.random.default_rng(1)))
    assert mech.privatize(np.zeros(0, dtype=int), 1).shape == (0, 5)
    small = mech.privatize(x.ravel(), 1, chunk_size=3)
    assert small.shape == (35, 5) and set(np.unique(small).tolist()) <= {0, 1}
    assert mech.statistic(y).tolist() == y.reshape(-1, 5).sum(axis=0).tolist()
    assert mech.statistic(y.astype(bool)).tolist() == mech.statistic(y).tolist()
    assert mech.statistic(y[0, 0]).tolist() == y[0, 0].tolist()  # one report


# --------------------------------------------------------------------------- estimator
def one_client_moments(name: str, k: int, eps: float, prior: np.ndarray):
    """Exact moments of one client's contributions ``a_z = (b_z - q)/(p - q)`` under inputs
    from ``prior``, by enumeration of the input and of the bits (mpmath): the means, and for
    each pair (z, w) the mean and variance of ``a_z a_w`` (z = w: of ``a_z^2``), and the
    variance of each ``a_z``."""
    p, q = ref_pq(name, eps)
    g = p - q
    pi = [mp.mpf(float(v)) for v in prior]
    mean = [mp.mpf(0)] * k
    prod = [[mp.mpf(0)] * k for _ in range(k)]
    prod2 = [[mp.mpf(0)] * k for _ in range(k)]
    for x in range(k):
        r = [p if z == x else q for z in range(k)]
        for z in range(k):
            for bz in (0, 1):
                pz = r[z] if bz else 1 - r[z]
                az = (bz - q) / g
                mean[z] += pi[x] * pz * az
                for w in range(k):
                    if w == z:
                        prod[z][z] += pi[x] * pz * az**2
                        prod2[z][z] += pi[x] * pz * az**4
                        continue
                    for bw in (0, 1):
                        pw = r[w] if bw else 1 - r[w]
                        aw = (bw - q) / g
                        prod[z][w] += pi[x] * pz * pw * az * aw
                        prod2[z][w] += pi[x] * pz * pw * (az * aw) ** 2
    return g, mean, prod, prod2


@pytest.mark.parametrize("name", CLASSES)
def test_estimator_moments_against_the_definition(name):
    """The closed-form mean and covariance of the estimate (invert, estimate_covariance,
    estimate_variance, statistic_covariance) against one client's exact moments enumerated in
    mpmath: Cov(f) = (E[a a^T] - pi pi^T) / n for n i.i.d. clients."""
    k, eps, n = 4, 1.1, 250
    prior = np.array([0.5, 0.3, 0.2, 0.0])
    mech = CLASSES[name](k, eps)
    g, mean, prod, _ = one_client_moments(name, k, eps, prior)
    np.testing.assert_allclose([float(m) for m in mean], prior, atol=1e-15)
    want = np.array([[float(prod[z][w]) - prior[z] * prior[w] for w in range(k)] for z in range(k)]) / n
    np.testing.assert_allclose(mech.estimate_covariance(prior, n), want, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(mech.estimate_variance(prior, n), np.diag(want), rtol=1e-12)
    np.testing.assert_allclose(mech.estimate_std_error(prior, n), np.sqrt(np.diag(want)), rtol=1e-12)
    np.testing.assert_allclose(mech.statistic_covariance(prior), want * n * float(g) ** 2, rtol=1e-12, atol=1e-17)
    # the generic linear-algebra versions of the base class, from the support matrix
    s = mech.support_matrix
    np.testing.assert_allclose(mech.forward(prior), prior @ s, rtol=1e-14)
    h = np.array([0.3, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(mech.backward(h), s @ h, rtol=1e-14)
    np.testing.assert_allclose(mech.invert(mech.forward(prior)), prior, atol=1e-14)
    np.testing.assert_allclose(mech.inversion_coefficient_range(), 1.0 / float(g), rtol=1e-14)


@pytest.mark.parametrize("name", CLASSES)
def test_unbiasedness_and_covariance_against_simulation(name):
    """R = 4000 replications of n = 500 clients with inputs drawn from the prior, privatised
    by privatize (individual reports), estimated by invert of statistic / n.

    Per client: the contributions ``a_z = (b_z - q)/(p - q)`` have mean ``pi_z`` and
    ``E[a_z a_w] = 0`` for z != w (so Cov(f_z, f_w) = -pi_z pi_w / n); over all R n clients
    the means of ``a_z`` and of ``a_z a_w`` lie within Bernstein's bound (exact variances
    enumerated in mpmath, ranges at most 2/(p - q)^2) at FALSE_FAILURE / 2 over the 20 checks.
    Covariance: for each of the k (k + 1)/2 entries, the mean over replications of
    ``(f_x - pi_x)(f_y - pi_y)`` (a mean of 4000 i.i.d. products of near-normal estimates)
    lies within 6 of its standard errors of the exact covariance, the standard error taken
    from the normal fourth moments ``Var = V_x V_y + C_xy^2``: 2 Phi(-6) = 2e-9 per entry,
    3e-8 for the 15 entries under the normal approximation, far below FALSE_FAILURE / 2 even if the
    tails of the products were 10 times heavier."""
    k, eps, n, R = 5, 1.0, 500, 4000
    prior = np.array([0.35, 0.25, 0.2, 0.15, 0.05])
    mech = CLASSES[name](k, eps)
    rng = np.random.default_rng(20261204)
    x = rng.choice(k, size=(R, n), p=prior)
    reports = mech.privatize(x, rng)  # (R, n, k)
    counts = reports.sum(axis=1, dtype=np.int64)
    est = mech.invert(counts / n)  # (R, k)
    # per-client moments over all N = R n clients, against the enumerated exact moments
    g, _, prod, prod2 = one_client_moments(name, k, eps, prior)
    g, q = float(g), float(ref_pq(name, eps)[1])
    a = (reports.reshape(-1, k) - q) / g  # each client's contribution to the estimate
    N = R * n
    checks = k + k * (k + 1) // 2  # Bonferroni: FALSE_FAILURE / 2 over these
    pooled = est.mean(axis=0)
    for z in range(k):
        tol = bernstein(float(prod[z][z]) - prior[z] ** 2, 1.0 / g, N, FALSE_FAILURE / 2 / checks)
        assert abs(pooled[z] - prior[z]) <= tol, (z, pooled[z], prior[z], tol)
        for w in range(z, k):
            mean_zw = float(prod[z][w])  # E[a_z a_w]: 0 for z != w
            var_zw = float(prod2[z][w]) - mean_zw**2
            got = float(np.dot(a[:, z], a[:, w])) / N
            tol = bernstein(var_zw, (1.0 - min(q, 1 - q)) / g**2 + 1.0 / g**2, N, FALSE_FAILURE / 2 / checks)
            assert abs(got - mean_zw) <= tol, (z, w, got, mean_zw, tol)
            want = (mean_zw - prior[z] * prior[w]) / n  # the covariance of the estimate
            assert mech.estimate_covariance(prior, n)[z, w] == pytest.approx(want, rel=1e-12)
    # covariance across replications
    exact = mech.estimate_covariance(prior, n)
    dev = est - prior
    for z in range(k):
        for w in range(z, k):
            prods = dev[:, z] * dev[:, w]
            se = math.sqrt((exact[z, z] * exact[w, w] + exact[z, w] ** 2) / R)
            assert abs(prods.mean() - exact[z, w]) <= 6 * se, (z, w, prods.mean(), exact[z, w], se)
    # cross-item covariance is negative and equal to -pi_x pi_y / n
    assert exact[0, 1] == pytest.approx(-prior[0] * prior[1] / n, rel=1e-12)


@pytest.mark.parametrize("name", CLASSES)
def test_plugin_variance(name):
    mech = CLASSES[name](4, 1.0)
    f = np.array([0.6, 0.4, 0.35, 0.3])
    want = f * (1 - f) / (1000 * mech.gap**2)
    np.testing.assert_allclose(mech.plugin_variance(f, 1000), want, rtol=1e-13)
    np.testing.assert_allclose(mech.plugin_std_error(f, 1000), np.sqrt(want), rtol=1e-13)
    # at the expected frequencies the plug-in is the exact variance
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    np.testing.assert_allclose(
        mech.plugin_variance(mech.forward(prior), 1000), mech.estimate_variance(prior, 1000), rtol=1e-12
    )


# --------------------------------------------------------------------------- aggregate law
@pytest.mark.parametrize("name", CLASSES)
def test_sample_statistic_has_the_law_of_privatize(name):
    """For fixed input counts, each item's count from sample_statistic and from
    statistic(privatize(...)) is compared with its exact law, the convolution of
    Binomial(n_x, p) and Binomial(n - n_x, q) (tests/oracles.sum_of_binomials_pmf), and the
    pair (item 0, item 1) with the product of its exact laws (independence across items);
    the same for sample_statistics' rows drawn at once:
    binned exact binomial tails and chi-square (assert_sample_law), FALSE_FAILURE / 15 per check."""
    k, eps = 4, 1.0
    counts = np.array([30, 10, 0, 5])
    n = int(counts.sum())
    mech = CLASSES[name](k, eps)
    p, q = (float(v) for v in ref_pq(name, eps))
    reps = 20_000
    rng = np.random.default_rng(20261205)
    agg = np.array([mech.sample_statistic(counts, rng) for _ in range(reps)])
    batched = mech.sample_statistics(np.broadcast_to(counts, (reps, k)), rng)
    x = np.repeat(np.arange(k), counts)
    ind = mech.privatize(np.broadcast_to(x, (reps, n)), rng).sum(axis=1, dtype=np.int64)
    laws = [sum_of_binomials_pmf(np.array([counts[z], n - counts[z]]), np.array([p, q])) for z in range(k)]
    a = FALSE_FAILURE / 15  # 3 sets of draws x 5 checks
    for draws in (agg, batched, ind):
        for z in range(k):
            assert_sample_law(draws[:, z], laws[z], a)
        joint = np.outer(laws[0], laws[1]).ravel()
        assert_sample_law(draws[:, 0] * (n + 1) + draws[:, 1], joint, a)


def test_sample_statistic_at_a_trillion_clients():
    """10^12 clients at k = 4096 in well under a second; each count within Bernstein's bound
    (a sum of independent bits) at FALSE_FAILURE / k."""
    k, total = 4096, 10**12
    mech = OptimizedUnaryEncoding(k, 1.0)
    w = 1.0 / np.arange(1, k + 1)
    counts = np.floor(total * w / w.sum()).astype(np.int64)
    counts[0] += total - counts.sum()
    t0 = time.process_time()  # CPU: the work done, whatever else the machine runs
    stat = mech.sample_statistic(counts, 20261206)
    elapsed = time.process_time() - t0
    assert elapsed < 1.0, elapsed
    p, q = mech.p, mech.q
    mean = counts * p + (total - counts) * q
    var = counts * p * (1 - p) + (total - counts) * q * (1 - q)
    tol = np.array([bernstein(vv, 1.0, 1, FALSE_FAILURE / k) for vv in var])  # the sum: n = 1, variance of the sum
    assert np.all(np.abs(stat - mean) <= tol)
    # hence the estimate is within tol / (n (p - q)) of the input frequencies
    est = mech.invert(stat / total)
    assert np.all(np.abs(est - counts / total) <= tol / (total * mech.gap) * (1 + 1e-6) + 1e-15)


def test_aggregate_and_individual_survey_runs():
    """A survey with the oracle in both modes estimates within 6 exact standard errors (the
    scenario tests' criterion: 2 Phi(-6) = 2e-9 per estimate under the normal approximation)."""
    labels = '["a", "b", "c", "d", "e"]'
    dist = "[0.4, 0.25, 0.15, 0.12, 0.08]"
    for kind, mode, size in (("oue", "aggregate", 10**9), ("sue", "aggregate", 10**7), ("sue", "individual", 30_000)):
        text = scenario_text(
            mechanism=f'kind = "{kind}"\neps = 1.0', mode=mode, size=size, labels=labels, distribution=dist
        )
        sc = parse_scenario(text, "ue.toml")
        assert sc.mechanism == catalog.build(kind, k=5, eps=1.0).with_labels(list("abcde"))
        rows = run_replication(sc, 0, 20261207)
        end = rows[rows["reason"] == "end"]
        final = end[end["quantity"] == "frequency"]
        se = end[end["quantity"] == "std_error"]["theory"].to_numpy()
        err = np.abs(final["estimate"].to_numpy() - final["truth"].to_numpy())
        assert len(err) == 5 and np.all(err <= 6 * se), (kind, mode, err, se)


# --------------------------------------------------------------------------- large k
def test_large_alphabet_without_k_by_k_matrices():
    """k = 10^5: everything the engine and the analyst use works in O(k) memory; the dense
    views refuse with one line."""
    k = 100_000
    mech = SymmetricUnaryEncoding(k, 2.0)
    tracemalloc.start()
    t0 = time.process_time()
    x = np.arange(0, k, 997)
    y = mech.privatize(x, 1)
    stat = mech.statistic(y)
    agg = mech.sample_statistic(np.full(k, 10**6), 2)
    f = agg / (10**6 * k)
    est = mech.invert(f)
    se = mech.plugin_std_error(f, 10**6 * k)
    prior = np.full(k, 1.0 / k)
    exact = mech.estimate_std_error(prior, 10**6 * k)
    fe = frequency_estimate(mech, agg, n=10**6 * k)
    ci = confidence_intervals(mech, agg, n=10**6 * k, method="conservative")
    mech.forward(prior), mech.backward(prior), mech.inversion_coefficient_range(), mech.possible_outputs()
    lp = mech.log_density(5, y[:3])
    eps_d, delta_half, g = mech.epsilon(1e-6), mech.delta(1.0), mech.guarantee().delta(1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    elapsed = time.process_time() - t0
    assert y.shape == (x.size, k) and stat.shape == (k,) and int(stat.sum()) == int(y.sum())
    assert est.shape == se.shape == exact.shape == fe.estimate.shape == (k,) and len(ci) == k
    assert np.all(np.isfinite(lp)) and 0 < eps_d < 2.0 and delta_half == pytest.approx(g, rel=1e-12)
    assert peak < 200e6, peak  # a k x k float matrix would be 80 GB
    assert elapsed < 30, elapsed
    for call in (
        lambda: mech.support_matrix,
        lambda: mech.estimate_covariance(prior, 10),
        lambda: mech.statistic_covariance(prior),
    ):
        with pytest.raises(LdpSimError, match=r"^k: got 100000, expected") as exc:
            call()
        assert "\n" not in str(exc.value)
    assert mech.identifiable and mech.report_bits == k and mech.report_shape == (k,) and mech.statistic_size == k


# --------------------------------------------------------------------------- eps extremes
@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("eps", [1e-300, 1e-12, 700.0, 800.0])
def test_extreme_eps_without_warnings(name, eps):
    """Every method at eps = 1e-300 .. 800 gives finite (or documented infinite) values and no
    RuntimeWarning (warnings are errors here); delta(0) = p (1 - q)(1 - e^-eps) against mpmath."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mech = CLASSES[name](6, eps)
        p, q = ref_pq(name, eps)
        assert mech.epsilon(0.0) == eps
        want = float(p * (1 - q) * -mp.expm1(-mp.mpf(eps)))
        assert mech.delta(0.0) == pytest.approx(want, rel=1e-12)
        assert mech.gap == pytest.approx(float(p - q), rel=1e-12)
        for d in (1e-300, 1e-6, 0.5):
            t = mech.epsilon(d)
            assert 0.0 <= t <= eps and mech.delta(t) <= d
        y = mech.sample(2, 2000, 1)
        assert y.shape == (2000, 6)
        lp = mech.log_density(2, y)
        assert np.all(np.isfinite(lp))
        stat = mech.statistic(y)
        agg = mech.sample_statistic([10**12] * 6, 2)
        prior = np.full(6, 1 / 6)
        est = mech.invert(agg / (6 * 10**12))
        var = mech.estimate_variance(prior, 6 * 10**12)
        plug = mech.plugin_std_error(stat / 2000, 2000)
        rng_ = mech.inversion_coefficient_range()
        assert not np.any(np.isnan(est)) and not np.any(np.isnan(var)) and not np.any(np.isnan(plug))
        assert np.all(var > 0) and np.all(rng_ > 0)
        g = mech.guarantee()
        assert g.delta(0.0) == pytest.approx(want, rel=1e-9)
        if eps >= 700:  # no other bit is ever 1 (q < e^-350); SUE reports the input's bit surely
            assert np.all(est == pytest.approx(np.full(6, 1 / 6), rel=1e-5))
            assert stat[[0, 1, 3, 4, 5]].sum() == 0 and (name == "oue" or stat[2] == 2000)


def test_eps_zero_carries_no_information():
    mech = OptimizedUnaryEncoding(3, 0.0)
    assert mech.epsilon() == 0.0 and mech.delta(0.0) == 0.0 and mech.epsilon(0.5) == 0.0
    assert not mech.identifiable
    with pytest.raises(LdpSimError, match=r"^mechanism: got OptimizedUnaryEncoding\(k=3, eps=0.0\), expected eps > 0"):
        mech.invert(np.zeros(3))


# --------------------------------------------------------------------------- identity, errors
def test_identity_labels_and_reports():
    a, b = SymmetricUnaryEncoding(3, 1.0), catalog.build("sue", k=3, eps=1.0)
    assert a == b and hash(a) == hash(b) and repr(a) == "SymmetricUnaryEncoding(k=3, eps=1.0)"
    assert a != OptimizedUnaryEncoding(3, 1.0) and a != SymmetricUnaryEncoding(3, 2.0)
    lab = a.with_labels(["x", "y", "z"])
    assert lab != a and lab.input_labels == ("x", "y", "z") and a.input_labels == (0, 1, 2)
    assert a.with_labels([0, 1, 2]) == a
    assert lab.sample("z", 4, 1).shape == (4, 3)
    r = a.possible_reports()
    assert r.shape == (8, 3) and len({tuple(v) for v in r.tolist()}) == 8
    assert catalog.entry("sue").tags == catalog.entry("oue").tags == frozenset({"oracle", "scenario"})
    assert a.name == "sue" and OptimizedUnaryEncoding(3, 1.0).name == "oue"


def _one_line(exc, name: str) -> None:
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{name}: got "), msg


BAD_CALLS = [
    ("k", lambda: SymmetricUnaryEncoding(1, 1.0)),
    ("k", lambda: OptimizedUnaryEncoding(2.5, 1.0)),
    ("eps", lambda: SymmetricUnaryEncoding(3, -1.0)),
    ("eps", lambda: OptimizedUnaryEncoding(3, math.nan)),
    ("eps", lambda: OptimizedUnaryEncoding(3, math.inf)),
    ("eps", lambda: catalog.build("oue", eps="abc")),
    ("x", lambda: SymmetricUnaryEncoding(3, 1.0).privatize([0, 3])),
    ("x", lambda: SymmetricUnaryEncoding(3, 1.0).privatize([0.5])),
    ("x", lambda: SymmetricUnaryEncoding(3, 1.0).sample(7, 4)),
    ("x", lambda: SymmetricUnaryEncoding(3, 1.0).with_labels("abc").sample("q", 4)),
    ("n", lambda: SymmetricUnaryEncoding(3, 1.0).sample(0, -1)),
    ("chunk_size", lambda: SymmetricUnaryEncoding(3, 1.0).privatize([0], chunk_size=0)),
    ("y", lambda: SymmetricUnaryEncoding(3, 1.0).log_density(0, [0, 1])),
    ("y", lambda: SymmetricUnaryEncoding(3, 1.0).log_density(0, "abc")),
    ("reports", lambda: SymmetricUnaryEncoding(3, 1.0).statistic(np.zeros((4, 2), dtype=int))),
    ("reports", lambda: SymmetricUnaryEncoding(3, 1.0).statistic([[0, 2, 1]])),
    ("reports", lambda: SymmetricUnaryEncoding(3, 1.0).statistic([[0, -1, 1]])),
    ("reports", lambda: SymmetricUnaryEncoding(3, 1.0).statistic([[0.0, 1.0, 1.0]])),
    ("input_counts", lambda: SymmetricUnaryEncoding(3, 1.0).sample_statistic([1, 2])),
    ("input_counts", lambda: SymmetricUnaryEncoding(3, 1.0).sample_statistic([1, -2, 0])),
    ("k", lambda: SymmetricUnaryEncoding(11, 1.0).possible_reports()),
    ("k", lambda: OptimizedUnaryEncoding(6000, 1.0).support_matrix),
    ("labels", lambda: SymmetricUnaryEncoding(3, 1.0).with_labels(["a", "a", "b"])),
    ("labels", lambda: SymmetricUnaryEncoding(3, 1.0).with_labels(["a", "b"])),
    ("delta", lambda: SymmetricUnaryEncoding(3, 1.0).epsilon(1.5)),
    ("delta[1]", lambda: SymmetricUnaryEncoding(3, 1.0).epsilon([0.1, -0.1])),
    ("eps", lambda: SymmetricUnaryEncoding(3, 1.0).delta(-1.0)),
    ("x_prime", lambda: SymmetricUnaryEncoding(3, 1.0).pld(1, 1)),
    ("x_prime", lambda: SymmetricUnaryEncoding(3, 1.0).pld(1)),
]


@pytest.mark.parametrize("name, call", BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD_CALLS)])
def test_bad_inputs_give_one_line_errors(name, call):
    with pytest.raises(LdpSimError) as exc:
        call()
    _one_line(exc, name)


def test_engine_sized_batches_of_a_large_alphabet():
    """A batch the engine would send (2^12 clients at k = 4096, 16 MB of reports): the
    statistic matches the column sums and each count lies within exact binomial tails of
    its law (FALSE_FAILURE over the k cells)."""
    k, n = 4096, 1 << 12
    mech = OptimizedUnaryEncoding(k, 1.0)
    rng = np.random.default_rng(20261208)
    x = rng.integers(0, k, size=n)
    y = mech.privatize(x, rng)
    stat = mech.statistic(y)
    assert stat.tolist() == y.sum(axis=0, dtype=np.int64).tolist()
    held = np.bincount(x, minlength=k)
    # count_z ~ Bin(held_z, p) + Bin(n - held_z, q): exact two-sided tails of the convolution
    p, q = mech.p, mech.q
    low = np.empty(k)
    high = np.empty(k)
    for h in np.unique(held).tolist():
        pmf = sum_of_binomials_pmf(np.array([h, n - h]), np.array([p, q]))
        cdf = np.cumsum(pmf)
        idx = np.flatnonzero(held == h)
        c = stat[idx]
        low[idx] = cdf[c]
        high[idx] = 1.0 - np.concatenate([[0.0], cdf])[c]
    level = FALSE_FAILURE / k / 2
    assert np.all(low >= level) and np.all(high >= level)
    assert stats.binom.ppf(0.5, n, q) > 0  # the design: counts far from 0
