"""Count-mean sketches (ldpsim.mechanisms.sketches): the hash family's buckets, exact eps by
brute force over every report on a tiny sketch, and the estimate's exact law and moments
(hash collisions included) against a Poisson-binomial written here and against simulation."""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import sketches as sketch_module
from ldpsim.mechanisms.sketches import (
    CountMeanSketch,
    HadamardCountMeanSketch,
    SketchHashes,
    best_shape,
    item_codes,
    shared_codes,
)
from tests.stats_checks import FALSE_FAILURE, assert_sample_law

CLASSES = {"cms": CountMeanSketch, "hcms": HadamardCountMeanSketch}


def test_the_hashes_are_the_top_bits_of_a_multiply_add_in_64_bit_words():
    hashes = SketchHashes(rows=3, m=16, seed=5)
    items = np.array([0, 1, 2**31, 2**32 - 1], dtype=np.int64)
    got = hashes(items)
    for j in range(3):
        a, b = int(hashes.a[j]), int(hashes.b[j])
        want = [((a * int(x) + b) % 2**64) >> 60 for x in items]  # Python integers: exact
        assert got[j].tolist() == want
    assert hashes(items, rows=[2, 0, 1, 2]).tolist() == [got[2, 0], got[0, 1], got[1, 2], got[2, 3]]


def test_every_bucket_is_equally_likely_for_one_item_over_the_seeds():
    # strongly universal: h(x) uniform on [m] over the hash words; 20,000 seeds' rows
    hashes = SketchHashes(rows=20_000, m=8, seed=11)
    buckets = hashes(np.array([123_456_789]))[:, 0]
    assert_sample_law(buckets, np.full(8, 1 / 8), FALSE_FAILURE)


def _report_probabilities(name: str, eps: float, m: int, rows: int, buckets: np.ndarray) -> np.ndarray:
    """P(report | answer) for every report of a tiny sketch, written from the protocol's
    description: CMS reports (row, m bits), HCMS reports (row, column, sign)."""
    if name == "cms":
        q = 1 / (1 + math.exp(eps / 2))
        out = []
        for j in range(rows):
            for bits in itertools.product((0, 1), repeat=m):
                prob = 1 / rows
                for s, bit in enumerate(bits):
                    one = (1 - q) if s == buckets[j] else q
                    prob *= one if bit else 1 - one
                out.append(prob)
        return np.array(out)
    q = 1 / (1 + math.exp(eps))
    h = hadamard(m)
    return np.array(
        [
            (1 / rows) * (1 / m) * ((1 - q) if sign == h[buckets[j], col] else q)
            for j in range(rows)
            for col in range(m)
            for sign in (1, -1)
        ]
    )


@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_exact_eps_is_the_largest_log_ratio_over_every_report_and_pair_of_answers(name, eps):
    m, rows = 4, 3
    mech = CLASSES[name](eps, m=m, rows=rows, hash_seed=2)
    answers = np.arange(40)
    buckets = mech.hashes(answers)  # (rows, answers)
    laws = [_report_probabilities(name, eps, m, rows, buckets[:, i]) for i in range(answers.size)]
    for law in laws:
        assert law.sum() == pytest.approx(1.0, abs=1e-12)
    worst = max(float(np.max(np.log(a / b))) for a, b in itertools.permutations(laws, 2))
    assert worst == pytest.approx(mech.epsilon(), rel=1e-12)


def _tiny(name: str) -> tuple[object, np.ndarray, np.ndarray, int]:
    mech = CLASSES[name](1.5, m=8, rows=4, hash_seed=3)
    items = np.array([7, 1_000_003, 42, 2**32 - 5, 99])
    counts = np.array([9, 6, 4, 3, 2])
    return mech, items, counts, 7


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_estimate_has_its_exact_law_and_moments_in_simulation(name):
    # 24 reports, the estimate of answer 7 from the sketch, 20,000 replications: its law
    # against the Poisson-binomial of the module docstring (assert_sample_law, FALSE_FAILURE),
    # and the moments of that law against moments()
    mech, items, counts, query = _tiny(name)
    values, pmf = mech.term_law(items, counts, query)
    mean, var = mech.moments(items, counts, query)
    assert float(values @ pmf) == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert float((values - mean) ** 2 @ pmf) == pytest.approx(var, rel=1e-12)
    rng = np.random.default_rng(20261207)
    answers = np.repeat(items, counts)
    reps, n = 20_000, answers.size
    many = np.tile(answers, reps)
    reports = mech.privatize(many, rng)
    # each report's term, computed here from the protocol's description, summed per replication
    qb = mech.hashes(np.array([query]))[:, 0]  # the query's bucket in each row
    if name == "cms":
        rows, bits = reports
        q = 1 / (1 + math.exp(mech.eps / 2))
        terms = (bits[np.arange(bits.shape[0]), qb[rows]] - q) / (1 - 2 * q)
    else:
        rows, cols, signs = reports
        c = (math.exp(mech.eps) + 1) / (math.exp(mech.eps) - 1)
        terms = c * signs * hadamard(mech.m)[qb[rows], cols]
    m = mech.m
    est = m / (m - 1) * (terms.reshape(reps, n).sum(axis=1) - n / m)
    for t in range(0, reps, 997):  # the sketch and its query give the same, replication by replication
        part = tuple(a[t * n : (t + 1) * n] for a in reports)
        assert mech.estimate(mech.statistic(*part), n, [query])[0] == pytest.approx(est[t], abs=1e-9)
    # the number of successes behind each estimate (it is an affine image of one)
    step = values[1] - values[0]
    successes = (est - values[0]) / step
    index = np.rint(successes).astype(np.int64)
    assert np.abs(successes - index).max() < 1e-6  # every estimate is one of the law's values
    assert_sample_law(index, pmf, FALSE_FAILURE)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_bias_given_the_hashes_is_their_collisions_and_vanishes_over_hash_seeds(name):
    mech, items, counts, query = _tiny(name)
    mean, _ = mech.moments(items, counts, query)
    pi = np.array([np.mean(mech.hashes(np.array([x]))[:, 0] == mech.hashes(np.array([query]))[:, 0]) for x in items])
    m = mech.m
    assert mean == pytest.approx(m / (m - 1) * (float(counts @ pi) - counts.sum() / m), rel=1e-12)
    # over the hash family the collisions average out, E = n_query exactly: the rows of one
    # sketch are independent draws from the family, and with 4,000 of them the mean over rows
    # is within 5.33 standard errors of 9 (two-sided normal at 1e-7; a mean of 4,000 bounded
    # terms, each m/(m-1) (9 + sum of 4 weighted Bernoulli(1/8) collisions - 24/8))
    wide = CLASSES[name](1.5, m=8, rows=4_000, hash_seed=9)
    over_rows, _ = wide.moments(items, counts, query)
    spread = m / (m - 1) * math.sqrt(float((counts[1:] ** 2).sum()) * (1 / 8) * (7 / 8))
    assert abs(over_rows - 9) <= 5.33 * spread / math.sqrt(4_000)
    assert over_rows != 9  # the rows do collide: the check has something to average


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_aggregate_mode_draws_the_sketch_with_the_estimate_s_exact_law(name):
    # sample_statistic draws the sketch without a report: the estimate of two queries from
    # 10,000 of its draws against the exact law (FALSE_FAILURE / 2 each); the hashes
    # collide for some items, so the law is not that of a collision-free sketch
    mech, items, counts, _ = _tiny(name)
    rng = np.random.default_rng(38)
    sketches = [mech.sample_statistic(items, counts, rng) for _ in range(10_000)]
    for query in (7, 99):
        values, pmf = mech.term_law(items, counts, query)
        est = np.array([mech.estimate(s, int(counts.sum()), [query])[0] for s in sketches])
        successes = (est - values[0]) / (values[1] - values[0])
        index = np.rint(successes).astype(np.int64)
        assert np.abs(successes - index).max() < 1e-6
        assert_sample_law(index, pmf, FALSE_FAILURE / 2)


def test_aggregate_mode_takes_a_billion_clients_at_the_cost_of_their_items():
    mech = CountMeanSketch(2.0, m=1024, rows=16, hash_seed=4)
    items = np.arange(1_000, dtype=np.int64) * 4_000_003
    counts = np.full(1_000, 1_000_000)
    sketch = mech.sample_statistic(items, counts, 5)
    est = mech.estimate(sketch, 10**9, items[:3])
    mean, var = mech.moments(items, counts, int(items[0]))
    assert abs(est[0] - mean) <= 5.33 * math.sqrt(var)  # normal approximation at 1e-7: 10^9 terms
    assert HadamardCountMeanSketch(2.0, m=64, rows=4).sample_statistic(items, counts, 5).shape == (4, 64)


def test_text_answers_become_the_first_four_bytes_of_their_blake2b_digest():
    words = ["apple.com", "caf\u00e9", "", "apple.com", "\U0001f600"]
    want = [int(hashlib.blake2b(w.encode("utf-8"), digest_size=4).hexdigest(), 16) for w in words]
    assert item_codes(words).tolist() == want
    assert item_codes(np.array(words, dtype=object)).dtype == np.uint64
    assert shared_codes(words) == []
    with pytest.raises(LdpSimError, match="answers: got 3, expected text"):
        item_codes(["a", 3])


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_standard_error_bound_holds_for_any_answers_and_is_reached_by_hcms(name):
    mech, items, counts, query = _tiny(name)
    n = int(counts.sum())
    for d in (query, 99, 123):  # present, and absent answers
        _, var = mech.moments(items, counts, d)
        assert math.sqrt(var) <= mech.std_error_bound(n) * (1 + 1e-12)
    if name == "hcms":  # no report can meet a bucket no row gives the query: pi = 0 for all
        lonely = next(d for d in range(10**6) if (mech.hashes(items) != mech.hashes([d])).all())
        assert math.sqrt(mech.moments(items, counts, lonely)[1]) == pytest.approx(mech.std_error_bound(n), rel=1e-12)


def test_heavy_hitters_are_the_candidates_with_the_largest_estimates():
    mech = CountMeanSketch(4.0, m=256, rows=16, hash_seed=2)
    words = ["a.com", "b.org", "c.net", "d.io", "e.fr"]
    answers = np.repeat(item_codes(words), [50_000, 30_000, 10_000, 0, 10])
    sketch = mech.sample_statistic(*np.unique(answers, return_counts=True), 3)
    order, est = mech.heavy_hitters(sketch, answers.size, item_codes(words), top=3)
    assert order.tolist() == [0, 1, 2] and (np.diff(est) <= 0).all()
    assert np.allclose(est, mech.estimate(sketch, answers.size, item_codes(words)[:3]))


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_expected_mse_is_the_average_over_the_hash_family(name):
    # 6,000 sketches of 3 rows each, their rows cut from one long draw of the family: for
    # each, the exact bias and variance given its hashes (written here from the module's
    # formulas), and their mean squared error averaged over the sketches against
    # expected_mse; one other answer: the formula is exact under pairwise independence
    eps, m, k, sketches = 1.0, 8, 3, 6_000
    n_d, n_x, d, x = 40, 60, 12_345, 987_654_321
    hashes = SketchHashes(rows=k * sketches, m=m, seed=21)
    hit = (hashes(np.array([x]))[:, 0] == hashes(np.array([d]))[:, 0]).reshape(sketches, k)
    pi = hit.mean(axis=1)
    s = m / (m - 1)
    if name == "cms":
        q = 1 / (1 + math.exp(eps / 2))
        base = q * (1 - q) / (1 - 2 * q) ** 2
        var = s**2 * (n_d * base + n_x * (base + pi * (1 - pi)))
    else:
        c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
        var = s**2 * (n_d * (c**2 - 1) + n_x * (c**2 - pi**2))
    bias = s * (n_d + n_x * pi - (n_d + n_x) / m) - n_d
    mse = var + bias**2
    want = CLASSES[name](eps, m=m, rows=k).expected_mse(n_d + n_x, n_d, n_x**2)
    # a mean of 6,000 independent bounded values: within 5.33 standard errors (1e-7, normal)
    assert abs(mse.mean() - want) <= 5.33 * mse.std(ddof=1) / math.sqrt(sketches)
    # the sketch's own moments agree with the formulas written here, sketch by sketch
    one = CLASSES[name](eps, m=m, rows=k * sketches, hash_seed=21)
    mean_all, _ = one.moments(np.array([d, x]), np.array([n_d, n_x]), d)
    pooled = hit.mean()
    assert mean_all == pytest.approx(s * (n_d + n_x * pooled - (n_d + n_x) / m), rel=1e-12)


def test_with_several_other_answers_the_expected_mse_is_within_sampling_error_here():
    # the cross terms (three answers colliding) are taken as a 3-wise independent family has
    # them; for these four other answers the family in use matches within sampling error
    eps, m, k, sketches = 1.0, 8, 3, 20_000
    d, others, n_d = 12_345, np.array([987_654_321, 5, 77_777, 2**31 + 3]), 40
    n_x = np.array([60, 30, 20, 10])
    hashes = SketchHashes(rows=k * sketches, m=m, seed=5)
    pi = (hashes(others) == hashes(np.array([d]))).reshape(sketches, k, others.size).mean(axis=1)
    s, q = m / (m - 1), 1 / (1 + math.exp(eps / 2))
    base = q * (1 - q) / (1 - 2 * q) ** 2
    var = s**2 * (n_d * base + (n_x * (base + pi * (1 - pi))).sum(axis=1))
    bias = s * (n_d + (n_x * pi).sum(axis=1) - (n_d + n_x.sum()) / m) - n_d
    mse = var + bias**2
    want = CountMeanSketch(eps, m=m, rows=k).expected_mse(int(n_d + n_x.sum()), n_d, float((n_x**2).sum()))
    assert abs(mse.mean() - want) <= 5.33 * mse.std(ddof=1) / math.sqrt(sketches)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_best_shape_is_the_smallest_expected_mse_over_every_shape_of_the_budget(name):
    cls = CLASSES[name]
    args = (2.0, 10**6, 5_000, 3e11)  # eps, n, the answer's count, the others' squared counts
    m, rows, mse = best_shape(cls, *args, cells=4096)
    every = {(2**j, 4096 // 2**j): cls(2.0, m=2**j, rows=4096 // 2**j).expected_mse(*args[1:]) for j in range(1, 13)}
    assert (m, rows) == min(every, key=every.get) and mse == every[(m, rows)]
    assert best_shape(cls, *args, cells=4096, max_m=64)[0] <= 64


@pytest.mark.parametrize("q", [0.05, 0.3, 0.45])
def test_the_count_mean_client_s_other_bits_are_independent_bernoulli(q, monkeypatch):
    # only the ones are drawn (geometric gaps): each bit is Bernoulli(q) and consecutive bits
    # are independent, across the ends of the reports too; the law of four consecutive bits
    # (16 patterns) at FALSE_FAILURE, over 2^21 bits in blocks of at most 1,000 gaps
    monkeypatch.setattr(sketch_module, "_UNIFORMS", 1_000)
    out = np.zeros(1 << 21, dtype=np.uint8)
    sketch_module._bernoulli_ones(out, q, np.random.default_rng(int(q * 100)))
    quads = out.reshape(-1, 4) @ np.array([8, 4, 2, 1])
    ones = np.array([bin(c).count("1") for c in range(16)])
    assert_sample_law(quads, q**ones * (1 - q) ** (4 - ones), FALSE_FAILURE)


def test_cms_statistic_counts_every_row_s_bits_across_its_16_bit_blocks(monkeypatch):
    monkeypatch.setattr(sketch_module, "_SUM16", 7)  # blocks of 7 reports per row here
    mech = CountMeanSketch(1.0, m=16, rows=3, hash_seed=1)
    rows, bits = mech.privatize(np.arange(100), np.random.default_rng(4))
    ones = np.zeros((3, 16))
    for r, b in zip(rows, bits):  # report by report
        ones[r] += b
    per_row = np.bincount(rows, minlength=3)[:, None]
    np.testing.assert_allclose(mech.statistic(rows, bits), (ones - mech.q * per_row) / (1 - 2 * mech.q), rtol=1e-12)


def test_hcms_statistic_is_the_hadamard_transform_of_each_row():
    mech = HadamardCountMeanSketch(1.0, m=8, rows=2, hash_seed=1)
    rows, cols, signs = np.array([0, 0, 1]), np.array([3, 5, 5]), np.array([1, -1, 1])
    got = mech.statistic(rows, cols, signs)
    h = hadamard(8)
    raw = np.zeros((2, 8))
    for r, c, s in zip(rows, cols, signs):
        raw[r, c] += s
    np.testing.assert_allclose(got, mech.c * raw @ h, rtol=1e-12)


@pytest.mark.parametrize(
    "build, needle",
    [
        (lambda: CountMeanSketch(1.0, m=12), "m: got 12, expected a power of two"),
        (lambda: CountMeanSketch(0.0), "eps: got 0"),
        (lambda: HadamardCountMeanSketch(1.0, rows=0), "rows: got 0"),
        (lambda: CountMeanSketch(1.0, m=8).privatize([2**32]), "items: got 4294967296"),
        (lambda: CountMeanSketch(1.0, m=8).privatize([-1]), "items: got -1"),
        (lambda: CountMeanSketch(1.0, m=8).sample_statistic([1, 2], [1, -1]), "counts: got"),
        (lambda: CountMeanSketch(1.0, m=8).expected_mse(10, 11, 0.0), "count: got 11"),
        (lambda: HadamardCountMeanSketch(1.0, m=8).expected_mse(10, 1, -1.0), "squares: got -1.0"),
        (lambda: CountMeanSketch(1.0, m=8).sample_statistic([1, 2], [2**52, 2**52]), "a total below 2^53"),
        (
            lambda: CountMeanSketch(1.0, m=8).estimate(np.zeros((2, 8)), 5, [1]),
            "sketch: got 'an array of shape (2, 8)', expected a 64 x 8 sketch",
        ),
    ],
)
def test_bad_parameters_are_one_line(build, needle):
    with pytest.raises(LdpSimError) as info:
        build()
    assert needle in str(info.value) and "\n" not in str(info.value)
