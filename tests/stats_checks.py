"""Statistical assertions with tolerances derived from a stated false-failure probability.

:data:`FALSE_FAILURE` is the suite's false-failure probability (see its comment). Every
check below fails with probability at most ``alpha`` when the sampler is correct: per-cell
checks use exact binomial tails with a Bonferroni (union) bound; the global
chi-square check uses the chi-square law of the statistic, accurate when every expected
count is large (callers keep expected counts >= 100, where the approximation is excellent).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ldpsim.stats import dkw

#: The false-failure probability of every statistical test of the suite: the probability that
#: a test fails when the code under test is right. Each statistical check's tolerance is derived
#: from it (never tuned to the seed), so that the check fails with probability at most this;
#: a test with several checks splits it among them (a union bound: ``FALSE_FAILURE / checks``
#: each), and a test may state a stricter level as a fraction of it, never a looser one.
#: Seeds are fixed, so a test is deterministic: this says how unlucky a seed would have to be
#: for correct code to fail. One constant for the whole suite, imported by every such module.
FALSE_FAILURE = 1e-6


def binomial_cells_ok(observed: np.ndarray, trials: np.ndarray, probs: np.ndarray, alpha: float) -> list[str]:
    """Exact two-sided binomial check of each cell ``observed ~ Bin(trials, probs)`` at level
    ``alpha / cells``; returns the failing cells (empty when all pass)."""
    observed, trials, probs = np.broadcast_arrays(observed, trials, probs)
    level = alpha / observed.size / 2.0
    low = stats.binom.cdf(observed, trials, probs)  # P(X <= obs)
    high = stats.binom.sf(observed - 1, trials, probs)  # P(X >= obs)
    bad = np.argwhere((low < level) | (high < level))
    return [
        f"cell {tuple(int(i) for i in idx)}: observed {observed[tuple(idx)]}, "
        f"expected {trials[tuple(idx)] * probs[tuple(idx)]:.2f}"
        for idx in bad[:10]
    ]


def chi_square_ok(observed: np.ndarray, expected: np.ndarray, df: int, alpha: float) -> tuple[bool, float, float]:
    """Pearson chi-square over cells with positive expectation; (passes, statistic, threshold)."""
    pos = expected > 0
    stat = float(np.sum((observed[pos] - expected[pos]) ** 2 / expected[pos]))
    threshold = float(stats.chi2.isf(alpha, df))
    return stat <= threshold, stat, threshold


def assert_conditional_frequencies(x: np.ndarray, y: np.ndarray, Q: np.ndarray, alpha: float) -> None:
    """Check that ``y`` given ``x`` follows the rows of ``Q``: exact per-cell binomial checks
    (alpha/2) and a global chi-square (alpha/2). Outputs in a zero-probability cell fail."""
    k, m = Q.shape
    table = np.zeros((k, m), dtype=np.int64)
    np.add.at(table, (x.ravel(), y.ravel()), 1)
    n_x = table.sum(axis=1)
    assert np.all(table[Q == 0] == 0), "an output with probability zero was produced"
    bad = binomial_cells_ok(table, n_x[:, None], Q, alpha / 2)
    assert not bad, "per-cell binomial check failed: " + "; ".join(bad)
    expected = n_x[:, None] * Q
    assert expected[Q > 0].min() >= 100, "test design: expected counts must be >= 100 for the chi-square law"
    df = int(sum(np.count_nonzero(Q[i] > 0) - 1 for i in range(k) if n_x[i] > 0))
    if df > 0:
        ok, stat, thr = chi_square_ok(table, expected, df, alpha / 2)
        assert ok, f"chi-square {stat:.1f} > {thr:.1f} (df {df})"


def assert_sample_law(samples: np.ndarray, pmf: np.ndarray, alpha: float, min_expected: float = 100.0) -> None:
    """Check i.i.d. integer ``samples`` against an exact ``pmf`` on 0..len(pmf)-1.

    The support is cut into contiguous bins each with expected count >= ``min_expected``
    (tails merged); bin counts are multinomial, checked by exact binomial tails per bin at
    level alpha/(2 bins) and by a chi-square at alpha/2."""
    r = samples.size
    assert samples.min() >= 0 and samples.max() < pmf.size, "sample outside the support"
    edges = [0]
    acc = 0.0
    for i, p in enumerate(pmf):
        acc += p
        if acc * r >= min_expected and pmf[i + 1 :].sum() * r >= min_expected:
            edges.append(i + 1)
            acc = 0.0
    edges.append(pmf.size)
    edges = np.unique(edges)
    probs = np.add.reduceat(pmf, edges[:-1])
    probs = probs / probs.sum()
    counts = np.add.reduceat(np.bincount(samples, minlength=pmf.size), edges[:-1])
    bad = binomial_cells_ok(counts, np.full(counts.size, r), probs, alpha / 2)
    assert not bad, "binned law check failed: " + "; ".join(bad)
    if probs.size > 1:
        ok, stat, thr = chi_square_ok(counts, r * probs, probs.size - 1, alpha / 2)
        assert ok, f"chi-square {stat:.1f} > {thr:.1f} (df {probs.size - 1})"


def assert_cdf_dkw(samples: np.ndarray, points: np.ndarray, cdf: np.ndarray, alpha: float) -> None:
    """Check i.i.d. real ``samples`` against exact CDF values ``cdf`` at ``points``: the
    largest gap between the empirical CDF (``P(X <= t)``) and ``cdf`` over the points must be
    within the DKW tolerance. A sup over some points is at most the sup over all t, so the
    false-failure probability is at most ``alpha`` for any set of points."""
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    n = x.size
    emp = np.searchsorted(x, points, side="right") / n
    gap = np.abs(emp - cdf)
    tol = dkw(n, alpha)  # checked against its closed form in tests/test_stats.py
    worst = int(np.argmax(gap))
    assert gap[worst] <= tol, (
        f"empirical CDF off by {gap[worst]:.4g} > DKW tolerance {tol:.4g} at t = {points[worst]:.6g} "
        f"(empirical {emp[worst]:.6g}, exact {cdf[worst]:.6g}, n = {n})"
    )


def assert_codes_law(samples: np.ndarray, pmf: np.ndarray, alpha: float) -> None:
    """Check i.i.d. integer codes against the exact ``pmf`` on 0..m-1: no code outside the
    support or of probability zero, then :func:`assert_sample_law` (binned binomial tails and
    chi-square, false-failure probability at most ``alpha``)."""
    samples = np.asarray(samples)
    assert np.issubdtype(samples.dtype, np.integer), f"codes must be integers, got dtype {samples.dtype}"
    assert samples.min() >= 0 and samples.max() < pmf.size, "a code outside 0..m-1"
    seen = np.bincount(samples, minlength=pmf.size)
    assert not np.any(seen[pmf == 0]), f"codes of probability zero drawn: {np.flatnonzero(seen * (pmf == 0))[:10]}"
    assert_sample_law(samples.astype(np.int64), pmf / pmf.sum(), alpha)


def bernstein(var: float, bound: float, n: int, alpha: float) -> float:
    """Half-width t with P(|mean - E| >= t) <= alpha for the mean of n i.i.d. variables
    with variance ``var`` and |X - E X| <= ``bound`` (Bernstein's inequality:
    P >= t <= 2 exp(-n t^2 / (2 var + 2 bound t / 3)))."""
    L = math.log(2.0 / alpha)
    return (bound * L / 3.0 + math.sqrt((bound * L / 3.0) ** 2 + 2.0 * var * L * n)) / n
