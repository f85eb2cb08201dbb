"""RAPPOR (ldpsim.mechanisms.oracles.rappor) against independent computations.

References here never come from the code under test: the hash is recomputed with Python
integers; report laws are enumerated report by report in mpmath (50 digits) from the two
stages of the definition (permanent randomized response, then instantaneous); eps and
delta are the definition's maximum over every ordered pair of candidates of the largest
log-ratio and of the hockey-stick sum; the estimator's exact mean and covariance come from
the enumerated joint law of one report and a dense pseudo-inverse of the pattern matrix.
Statistical checks have a stated false-failure probability of at most 1e-6 each (fixed seeds).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.oracles.rappor import Rappor, bloom_bits
from ldpsim.privacy.pld import DiscretePLD
from tests.oracles import sum_of_binomials_pmf
from tests.stats_checks import FALSE_FAILURE, assert_codes_law, assert_sample_law, binomial_cells_ok
from tests.tiers import sample

mp.mp.dps = 50
MASK = (1 << 64) - 1


# --------------------------------------------------------------------------- references
def ref_splitmix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def ref_pattern(x: int, m: int, h: int, cohort: int) -> set[int]:
    sx = ref_splitmix(ref_splitmix(cohort) ^ x)
    return {ref_splitmix(sx ^ j) % m for j in range(h)}


def ref_bit_one(b: int, f: float, p: float, q: float):
    """P(S_i = 1 | B_i = b) from the two stages: B'_i = 1 w.p. f/2 + (1 - f) b, then q or p."""
    f, p, q = mp.mpf(f), mp.mpf(p), mp.mpf(q)
    perm_one = f / 2 + (1 - f) * b
    return perm_one * q + (1 - perm_one) * p


def all_reports(m: int) -> np.ndarray:
    codes = np.arange(1 << m)
    return ((codes[:, None] >> np.arange(m)[None, :]) & 1).astype(np.int64)


def ref_law(pattern: set[int], m: int, f: float, p: float, q: float) -> list:
    """The probability of every report (rows of all_reports(m)) in mpmath."""
    one = [ref_bit_one(1 if i in pattern else 0, f, p, q) for i in range(m)]
    out = []
    for y in all_reports(m).tolist():
        prob = mp.mpf(1)
        for i, bit in enumerate(y):
            prob *= one[i] if bit else 1 - one[i]
        out.append(prob)
    return out


def ref_permanent_law(pattern: set[int], m: int, f: float) -> list:
    f = mp.mpf(f)
    out = []
    for y in all_reports(m).tolist():
        prob = mp.mpf(1)
        for i, bit in enumerate(y):
            prob *= (1 - f / 2) if bit == (1 if i in pattern else 0) else f / 2
        out.append(prob)
    return out


def ref_eps(laws: list[list]) -> float:
    best = mp.mpf(0)
    for a in range(len(laws)):
        for b in range(len(laws)):
            if a == b:
                continue
            for pa, pb in zip(laws[a], laws[b]):
                if pa > 0 and pb == 0:
                    return math.inf
                if pa > 0:
                    best = max(best, mp.log(pa / pb))
    return float(best)


def ref_delta(laws: list[list], eps: float):
    factor = mp.e ** mp.mpf(eps) if math.isfinite(eps) else None
    best = mp.mpf(0)
    for a in range(len(laws)):
        for b in range(len(laws)):
            if a == b:
                continue
            if factor is None:
                s = mp.fsum(pa for pa, pb in zip(laws[a], laws[b]) if pb == 0)
            else:
                s = mp.fsum(max(pa - factor * pb, 0) for pa, pb in zip(laws[a], laws[b]))
            best = max(best, s)
    return best


def ref_root(laws: list[list], target: float, hi: float):
    """The smallest eps with delta(eps) <= target, by bisection in mpmath."""
    lo, hi = mp.mpf(0), mp.mpf(hi)
    if ref_delta(laws, 0.0) <= target:
        return mp.mpf(0)
    for _ in range(80):
        mid = (lo + hi) / 2
        if ref_delta(laws, float(mid)) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def params_of(mech: Rappor) -> tuple[int, int, int, float, float, float, int]:
    return mech.k, mech.m, mech.h, mech.f, mech.p, mech.q, mech.cohort


BRUTE = [
    dict(k=4, m=8, h=2, f=0.5, p=0.5, q=0.75, cohort=0),  # disjoint patterns exist
    dict(k=3, m=6, h=1, f=0.25, p=0.25, q=0.75, cohort=1),
    dict(k=5, m=3, h=2, f=0.5, p=0.5, q=0.75, cohort=0),  # every pair overlaps: all pairs examined
    dict(k=4, m=7, h=3, f=0.3, p=0.8, q=0.2, cohort=5),  # q < p
    dict(k=3, m=5, h=2, f=0.0, p=0.0, q=1.0, cohort=2),  # the bare Bloom filter: eps = inf
    dict(k=4, m=6, h=2, f=0.0, p=0.1, q=1.0, cohort=3),  # q* = 1: some reports impossible for some inputs
]


# --------------------------------------------------------------------------- hashing
def test_hash_matches_an_independent_implementation():
    for m, h, cohort in [(32, 2, 0), (7, 3, 1), (1000, 4, 2**40 + 3), (1, 2, 9)]:
        bits = bloom_bits(50, m, h, cohort)
        for x in range(50):
            assert set(bits[x].tolist()) == ref_pattern(x, m, h, cohort)
        mech = Rappor(50, m, h, cohort=cohort)
        for x in (0, 17, 49):
            assert set(mech.pattern(x).tolist()) == ref_pattern(x, m, h, cohort)
    assert not np.array_equal(bloom_bits(20, 64, 2, 0), bloom_bits(20, 64, 2, 1))  # cohorts differ


# --------------------------------------------------------------------------- exact privacy
@pytest.mark.parametrize(
    "params", sample(BRUTE, keep=(1, 2, 4, 5)), ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items())
)  # the two with 2^7-2^8 reports (3-5 s each): the slow tier
def test_exact_eps_and_delta_against_brute_force(params):
    mech = Rappor(**params)
    k, m, h, f, p, q, cohort = params_of(mech)
    laws = [ref_law(ref_pattern(x, m, h, cohort), m, f, p, q) for x in range(k)]
    for law in laws:
        assert abs(mp.fsum(law) - 1) < mp.mpf(10) ** -40
    e0 = ref_eps(laws)
    if math.isinf(e0):
        assert mech.epsilon() == math.inf
    else:
        assert mech.epsilon() == pytest.approx(e0, rel=1e-12, abs=1e-15)
    grid = [0.0, 0.1, 0.5, 1.0, 3.0, math.inf] + ([e0 / 2, 0.9 * e0, e0, 1.1 * e0] if math.isfinite(e0) else [])
    for t in grid:
        assert mech.delta(t) == pytest.approx(float(ref_delta(laws, t)), rel=1e-10, abs=1e-15), t
    for d in [1e-9, 1e-4, 0.01, 0.2]:
        t = mech.epsilon(d)
        if math.isinf(t):
            assert float(ref_delta(laws, math.inf)) > d
            continue
        assert mech.delta(t) <= d
        if t > 0:  # the smallest float: one step below it delta exceeds d
            assert mech.delta(math.nextafter(t, 0.0)) > d
        hi = e0 if math.isfinite(e0) else 60.0
        assert t == pytest.approx(float(ref_root(laws, d, hi)), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("params", BRUTE[:4], ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_longitudinal_eps_against_brute_force(params):
    mech = Rappor(**params)
    k, m, h, f, p, q, cohort = params_of(mech)
    laws = [ref_permanent_law(ref_pattern(x, m, h, cohort), m, f) for x in range(k)]
    e_inf = ref_eps(laws)
    assert mech.epsilon_longitudinal() == pytest.approx(e_inf, rel=1e-12)
    for t in [0.0, e_inf / 3, e_inf / 2, e_inf]:
        assert mech.delta_longitudinal(t) == pytest.approx(float(ref_delta(laws, t)), rel=1e-10, abs=1e-15)
    for d in [1e-6, 0.05]:
        t = mech.epsilon_longitudinal(d)
        assert mech.delta_longitudinal(t) <= d and (t == 0 or mech.delta_longitudinal(math.nextafter(t, 0)) > d)
    assert mech.guarantee_longitudinal().delta(e_inf / 2) == pytest.approx(float(ref_delta(laws, e_inf / 2)), rel=1e-9)


def test_longitudinal_closed_form_for_disjoint_patterns():
    # Erlingsson et al. 2014: eps_inf = 2 h ln((1 - f/2)/(f/2)); one report:
    # eps_1 = h ln(q*(1 - p*)/(p*(1 - q*)))
    for h, f, p, q in [(2, 0.5, 0.5, 0.75), (4, 0.25, 0.35, 0.65), (1, 0.9, 0.1, 0.9)]:
        mech = Rappor(30, m=256, h=h, f=f, p=p, q=q)
        ((a, b),) = mech.worst_pairs().keys()
        assert (a, b) == (h, h)
        assert mech.epsilon_longitudinal() == pytest.approx(2 * h * math.log((1 - f / 2) / (f / 2)), rel=1e-13)
        qs, ps = (1 - f / 2) * q + f / 2 * p, f / 2 * q + (1 - f / 2) * p
        assert mech.epsilon() == pytest.approx(h * math.log(qs * (1 - ps) / (ps * (1 - qs))), rel=1e-12)
        assert mech.epsilon() <= mech.epsilon_longitudinal()
    assert Rappor(4, f=0.0).epsilon_longitudinal() == math.inf
    assert Rappor(4, f=1.0).epsilon_longitudinal() == 0.0 and Rappor(4, f=1.0).epsilon() == 0.0


def test_pair_law_equals_the_composition_of_per_bit_laws():
    mech = Rappor(6, m=64, h=3, f=0.4, p=0.3, q=0.85)
    qs, ps = mech.q_star, mech.p_star
    one = DiscretePLD.from_distributions([qs, 1 - qs], [ps, 1 - ps])
    zero = DiscretePLD.from_distributions([ps, 1 - ps], [qs, 1 - qs])
    for a, b in [(1, 0), (0, 2), (2, 1), (3, 3)]:
        parts = [one] * a + [zero] * b
        ref = parts[0]
        for part in parts[1:]:
            ref = ref.compose(part)
        got = mech._pair_pld(a, b)
        for t in [0.0, 0.2, 0.7, 1.5, 3.0]:
            assert got.delta(t) == pytest.approx(ref.delta(t), rel=1e-10, abs=1e-16), (a, b, t)


# --------------------------------------------------------------------------- the sampler
def test_support_probabilities_against_sampled_frequencies():
    """Per-bit exact binomial checks (Bonferroni over bits, inputs and both samplers)."""
    mech = Rappor(5, m=16, h=2, f=0.3, p=0.35, q=0.8, cohort=4)
    s = mech.support_matrix
    n = 100_000
    rng = np.random.default_rng(20261201)
    for x in range(mech.k):
        pattern = ref_pattern(x, 16, 2, 4)
        exact = np.array([float(ref_bit_one(1 if i in pattern else 0, 0.3, 0.35, 0.8)) for i in range(16)])
        np.testing.assert_allclose(s[x], exact, rtol=1e-15)
        direct = mech.statistic(mech.privatize(np.full(n, x), rng))
        staged = mech.statistic(mech.instantaneous_response(mech.permanent_response(np.full(n, x), rng), rng))
        for counts in (direct, staged):
            bad = binomial_cells_ok(counts, np.full(16, n), exact, FALSE_FAILURE / (2 * mech.k))
            assert not bad, bad


def test_two_stage_joint_law():
    """The two stages, run one after the other, have the exact joint law of the report."""
    mech = Rappor(3, m=5, h=2, f=0.5, p=0.3, q=0.7, cohort=1)
    rng = np.random.default_rng(7)
    for x in range(3):
        law = np.array([float(t) for t in ref_law(ref_pattern(x, 5, 2, 1), 5, 0.5, 0.3, 0.7)])
        y = mech.instantaneous_response(mech.permanent_response(np.full(200_000, x), rng), rng)
        codes = (y.astype(np.int64) << np.arange(5)).sum(axis=1)
        assert_codes_law(codes, law, FALSE_FAILURE / 3)
        np.testing.assert_allclose(np.exp(mech.log_density(x, all_reports(5))), law, rtol=1e-13)


def test_privatize_is_chunked_and_reproducible():
    mech = Rappor(10, m=12)
    x = np.random.default_rng(0).integers(0, 10, size=(7, 30))
    a = mech.privatize(x, rng=3)
    assert a.shape == (7, 30, 12) and a.dtype == np.uint8 and set(np.unique(a)) <= {0, 1}
    np.testing.assert_array_equal(a, mech.privatize(x, rng=3))
    np.testing.assert_array_equal(mech.statistic(a), a.reshape(-1, 12).sum(axis=0))
    assert mech.privatize(np.zeros(0, dtype=int), rng=1).shape == (0, 12)


# --------------------------------------------------------------------------- the estimator
def _reference(mech: Rappor, prior: np.ndarray):
    """Dense pattern matrix, its pseudo-inverse, and the exact mean and covariance of one
    report's bits (enumerated from the mpmath joint law)."""
    k, m, h, f, p, q, cohort = params_of(mech)
    b = np.zeros((k, m))
    for x in range(k):
        b[x, list(ref_pattern(x, m, h, cohort))] = 1.0
    pinv = np.linalg.pinv(b.T)
    reports = all_reports(m).astype(float)
    mean, second = np.zeros(m), np.zeros((m, m))
    for x in range(k):
        law = np.array([float(t) for t in ref_law(ref_pattern(x, m, h, cohort), m, f, p, q)])
        mean += prior[x] * (law @ reports)
        second += prior[x] * (reports.T * law) @ reports
    sigma = second - np.outer(mean, mean)
    ps = float(ref_bit_one(0, f, p, q))
    gap = float(ref_bit_one(1, f, p, q)) - ps
    return b, pinv, mean, sigma, ps, gap


def test_exact_mean_and_covariance_against_enumeration():
    mech = Rappor(4, m=8, h=2, f=0.5, p=0.5, q=0.75)
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    b, pinv, mean, sigma, ps, gap = _reference(mech, prior)
    assert mech.identifiable
    np.testing.assert_allclose(mech.forward(prior), mean, rtol=1e-13)
    np.testing.assert_allclose(mech.invert(mean), prior, rtol=1e-12)  # unbiased
    np.testing.assert_allclose(pinv @ ((mean - ps) / gap), prior, rtol=1e-12)
    np.testing.assert_allclose(mech.statistic_covariance(prior), sigma, rtol=1e-12, atol=1e-15)
    cov = pinv @ sigma @ pinv.T / gap**2 / 1000
    np.testing.assert_allclose(mech.estimate_covariance(prior, 1000), cov, rtol=1e-11, atol=1e-17)
    np.testing.assert_allclose(mech.estimate_variance(prior, 1000), np.diag(cov), rtol=1e-11)
    np.testing.assert_allclose(mech.estimate_std_error(prior, 1000), np.sqrt(np.diag(cov)), rtol=1e-11)
    contrib = (all_reports(8) - ps) @ pinv.T / gap  # each report's contribution, every input
    np.testing.assert_allclose(
        mech.inversion_coefficient_range(), contrib.max(axis=0) - contrib.min(axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(mech.backward(np.arange(8.0)), mech.support_matrix @ np.arange(8.0), rtol=1e-14)


def test_unbiasedness_and_covariance_by_simulation():
    """R replications of n reports. The pooled estimate (the mean over all R n reports of
    each report's bounded contribution) is within Bernstein's bound of the truth, with the
    exact variance and range from the enumeration (false-failure probability 1e-6 / 2 over
    the k inputs); each entry of the sample covariance of the R estimates is within
    z(1e-6 / 2 / entries) of its standard error estimated from the replicates (normal
    approximation at R = 20000)."""
    mech = Rappor(4, m=8, h=2, f=0.5, p=0.5, q=0.75)
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    b, pinv, mean, sigma, ps, gap = _reference(mech, prior)
    R, n = 20_000, 50
    rng = np.random.default_rng(20261202)
    x = rng.choice(4, size=(R, n), p=prior)
    counts = mech.privatize(x, rng).sum(axis=1, dtype=np.int64)
    est = ((counts / n - ps) / gap) @ pinv.T
    np.testing.assert_allclose(est[:5], np.array([mech.invert(c / n) for c in counts[:5]]), rtol=1e-12, atol=1e-12)
    pooled = est.mean(axis=0)
    var1 = np.diag(pinv @ sigma @ pinv.T) / gap**2  # one report
    rng_width = np.abs(pinv).sum(axis=1) / abs(gap)
    big_n = R * n
    log_term = math.log(2 * 4 / (FALSE_FAILURE / 2))
    tol = np.sqrt(2 * var1 * log_term / big_n) + 2 * rng_width * log_term / (3 * big_n)
    assert np.all(np.abs(pooled - prior) <= tol), (pooled - prior, tol)
    exact = mech.estimate_covariance(prior, n)
    centred = est - prior
    products = centred[:, :, None] * centred[:, None, :]
    sample = products.mean(axis=0)
    se = products.std(axis=0, ddof=1) / math.sqrt(R)
    z = stats.norm.isf(FALSE_FAILURE / 2 / 2 / 10)  # 10 distinct entries of a symmetric 4 x 4
    assert np.all(np.abs(sample - exact) <= z * se), (sample - exact) / se


def test_sample_statistic_has_the_law_of_the_statistic_of_privatize():
    """Each bit's count and the total count of ones against their exact laws (sums of
    binomials; the total's law holds only if the bits are independent), for both
    samplers: 2 (m + 1) checks at 1e-6 / (2 (m + 1)) each."""
    mech = Rappor(4, m=8, h=2, f=0.5, p=0.5, q=0.75)
    counts = np.array([30, 0, 50, 20])
    x = np.repeat(np.arange(4), counts)
    covered = np.array([sum(int(counts[c]) for c in range(4) if i in ref_pattern(c, 8, 2, 0)) for i in range(8)])
    qs, ps = float(ref_bit_one(1, 0.5, 0.5, 0.75)), float(ref_bit_one(0, 0.5, 0.5, 0.75))
    rng = np.random.default_rng(11)
    draws = 4000
    aggregate = np.array([mech.sample_statistic(counts, rng) for _ in range(draws)])
    individual = np.array([mech.statistic(mech.privatize(x, rng)) for _ in range(draws)])
    alpha = FALSE_FAILURE / (2 * 9)
    for drawn in (aggregate, individual):
        for i in range(8):
            pmf = sum_of_binomials_pmf(np.array([covered[i], 100 - covered[i]]), np.array([qs, ps]))
            assert_sample_law(drawn[:, i], pmf, alpha)
        total = sum_of_binomials_pmf(np.array([covered.sum(), 800 - covered.sum()]), np.array([qs, ps]))
        assert_sample_law(drawn.sum(axis=1), total, alpha)


def test_sample_statistic_at_a_trillion_clients():
    """Chebyshev per bit at level 1e-6 / m: |c_i - E c_i| <= sd_i / sqrt(1e-6 / m)."""
    mech = Rappor(4096, m=32)
    counts = np.full(4096, 10**12 // 4096)
    c = mech.sample_statistic(counts, rng=5)
    n = int(counts.sum())
    covered = np.array([0] * 32)
    for x, pat in enumerate(mech.bits.tolist()):
        for i in set(pat):
            covered[i] += int(counts[x])
    mean = covered * mech.q_star + (n - covered) * mech.p_star
    sd = np.sqrt(covered * mech.q_star * (1 - mech.q_star) + (n - covered) * mech.p_star * (1 - mech.p_star))
    assert c.dtype == np.int64 and np.all(np.abs(c - mean) <= sd / math.sqrt(FALSE_FAILURE / 32))


# --------------------------------------------------------------------------- errors
def _one_line(exc, word):
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{word}: got "), msg


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: Rappor(1), "k"),
        (lambda: Rappor(4, m=0), "m"),
        (lambda: Rappor(4, m=2**24 + 1), "m"),
        (lambda: Rappor(4, h=0), "h"),
        (lambda: Rappor(4, h=65), "h"),
        (lambda: Rappor(4, f=1.5), "f"),
        (lambda: Rappor(4, p=-0.1), "p"),
        (lambda: Rappor(4, q=math.nan), "q"),
        (lambda: Rappor(4, q="x"), "q"),
        (lambda: Rappor(4, cohort=-1), "cohort"),
        (lambda: Rappor(4, cohort=1.5), "cohort"),
        (lambda: Rappor(4).privatize([0, 4]), "x"),
        (lambda: Rappor(4).privatize([0.5]), "x"),
        (lambda: Rappor(4).sample(7, 3), "x"),
        (lambda: Rappor(4).sample(0, -1), "n"),
        (lambda: Rappor(4, m=8).statistic(np.zeros((3, 7), dtype=int)), "reports"),
        (lambda: Rappor(4, m=8).statistic(np.full((3, 8), 2)), "reports"),
        (lambda: Rappor(4, m=8).statistic(np.zeros((3, 8))), "reports"),
        (lambda: Rappor(4, m=8).log_density(0, np.zeros(7)), "y"),
        (lambda: Rappor(4, m=11).possible_reports(), "m"),
        (lambda: Rappor(4, m=8).sample_statistic([1, 2, 3]), "input_counts"),
        (lambda: Rappor(4, m=8).sample_statistic([1, -2, 3, 4]), "input_counts"),
        (lambda: Rappor(64, m=32).invert(np.zeros(32)), "m"),  # k > m: not identifiable
        (lambda: Rappor(4, m=32, f=1.0).invert(np.zeros(32)), "f"),
        (lambda: Rappor(4, m=32, p=0.6, q=0.6).invert(np.zeros(32)), "q"),
        (lambda: Rappor(5, m=3).estimate_variance(np.full(5, 0.2), 10), "m"),  # patterns of rank 3 < 5
        (lambda: Rappor(4).delta(-1.0), "eps"),
        (lambda: Rappor(4).epsilon(2.0), "delta"),
        (lambda: Rappor(4).epsilon_longitudinal(-0.5), "delta"),
        (lambda: catalog.build("rappor", m="abc"), "m"),
    ],
)
def test_bad_inputs_give_one_line_errors(call, word):
    with pytest.raises(LdpSimError) as exc:
        call()
    _one_line(exc, word)


def test_identifiable_says_why():
    assert not Rappor(64, m=32).identifiable and not Rappor(5, m=3).identifiable
    assert not Rappor(4, f=1.0).identifiable and Rappor(4, m=32).identifiable
    with pytest.raises(LdpSimError, match=r"^m: got 32, expected .*full column rank k = 64"):
        Rappor(64, m=32).invert(np.zeros(32))


# --------------------------------------------------------------------------- large k
def test_large_k_without_dense_matrices(monkeypatch):
    """k = 10^5: the engine's and the analyst's operations never build k x m or k x k."""

    def refuse(self):
        raise AssertionError("a dense k x m matrix was built")

    monkeypatch.setattr(Rappor, "support_matrix", property(refuse))
    k = 100_000
    mech = Rappor(k, m=32)
    rng = np.random.default_rng(3)
    x = rng.integers(0, k, size=200_000)
    stat = mech.statistic(mech.privatize(x, rng))
    assert stat.shape == (32,) and stat.sum() > 0
    agg = mech.sample_statistic(np.bincount(x, minlength=k), rng)
    assert agg.shape == (32,)
    assert math.isfinite(mech.epsilon()) and 0 < mech.delta(0.5) < 1 and mech.neighbours()
    assert mech.forward(np.full(k, 1.0 / k)).shape == (32,) and mech.backward(np.ones(32)).shape == (k,)
    assert not mech.identifiable  # k > m: least squares over the candidates is impossible
    # identifiable at k = 10^5 with m = 2^22 bits: sparse blocks, exact inverse and variances
    wide = Rappor(k, m=1 << 22, h=2, f=0.25, p=0.25, q=0.75)
    assert wide.identifiable
    prior = np.full(k, 1.0 / k)
    n = 10**12
    counts = wide.sample_statistic(np.full(k, n // k), rng)
    est = wide.invert(counts / n)
    se = wide.estimate_std_error(prior, n)
    assert est.shape == (k,) and np.all(np.abs(est - prior) <= 6 * se)
    assert np.all(np.isfinite(wide.plugin_std_error(counts / n, n)))
    assert wide.inversion_coefficient_range().shape == (k,)


# --------------------------------------------------------------------------- extreme eps
def test_eps_near_1e_12_and_700():
    """Mechanisms whose exact eps is 4e-13 and 711, against the closed form and the mpmath
    brute force (two candidates, one bit each); no warning (they are errors here), no NaN."""
    for p, q, f in [(0.5, 0.5 + 1e-13, 0.0), (1e-300, 1 - 1e-9, 0.0), (0.25, 0.75, 1e-300)]:
        mech = Rappor(2, m=64, h=1, f=f, p=p, q=q)
        pats = [ref_pattern(x, 64, 1, 0) for x in range(2)]
        assert not pats[0] & pats[1]
        qs, ps = ref_bit_one(1, f, p, q), ref_bit_one(0, f, p, q)
        e_ref = float(mp.log(qs * (1 - ps) / (ps * (1 - qs))))
        assert mech.epsilon() == pytest.approx(e_ref, rel=1e-9)
        law = {0: (qs, ps), 1: (ps, qs)}  # per input: P(bit of x0 = 1), P(bit of x1 = 1)

        def ref_d(t):
            out = mp.mpf(0)
            for y0 in (0, 1):
                for y1 in (0, 1):
                    a = (law[0][0] if y0 else 1 - law[0][0]) * (law[0][1] if y1 else 1 - law[0][1])
                    b = (law[1][0] if y0 else 1 - law[1][0]) * (law[1][1] if y1 else 1 - law[1][1])
                    out += max(a - mp.e ** mp.mpf(t) * b, 0)
            return out

        for t in [0.0, 1e-12, e_ref / 2, 700.0, 800.0]:
            got = mech.delta(t)
            assert not math.isnan(got)
            assert got == pytest.approx(float(ref_d(t)), rel=1e-7, abs=1e-300), t
        for d in [1e-300, 1e-12, 0.5]:
            t = mech.epsilon(d)
            assert not math.isnan(t) and mech.delta(t) <= d
        g = mech.guarantee()
        assert not np.any(np.isnan(g.tradeoff(np.linspace(0, 1, 11))))
        assert not math.isnan(mech.epsilon_longitudinal()) and not math.isnan(mech.epsilon_longitudinal(1e-12))
        y = mech.sample(0, 10, rng=1)
        assert np.all(np.isfinite(mech.log_density(0, y)))


# --------------------------------------------------------------------------- the simulation
def test_aggregate_mode_survey():
    """A survey in aggregate mode (exact bit counts of 10^9 clients): every estimate within
    6 exact standard errors (2 Phi(-6) = 2e-9 each under the normal approximation)."""
    from ldpsim.sim import parse_scenario
    from ldpsim.sim.engine import run_replication
    from tests.sim.helpers import scenario_text

    text = scenario_text(mode="aggregate", size=10**9, mechanism='kind = "rappor"\nm = 16\nh = 2\nf = 0.25')
    sc = parse_scenario(text, "rappor.toml")
    assert sc.mechanism == Rappor(4, m=16, h=2, f=0.25) and sc.mechanism.input_labels == ("a", "b", "c", "d")
    rows = run_replication(sc, 0, 20261203)
    end = rows[rows["reason"] == "end"]
    final = end[end["quantity"] == "frequency"]
    se = end[end["quantity"] == "std_error"]["theory"].to_numpy()
    err = np.abs(final["estimate"].to_numpy() - final["truth"].to_numpy())
    assert len(err) == 4 and np.all(err <= 6 * se), (err, se)
