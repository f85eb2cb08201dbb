"""Independence and homogeneity on paired unbiased terms (:mod:`ldpsim.analyst.association`):
the statistic against the formula written with numpy's pseudo-inverse, the Wald p-value
against scipy's chi-square, the permutation p-value against the exact permutation law
enumerated here, the sums path against the rows path, the rejection rates under a true
null inside their binomial interval at the suite's false-failure probability, and power
under a strong dependence."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import PairedSums, association_from_sums, association_test, group_homogeneity
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from tests.stats_checks import FALSE_FAILURE

ALPHA = 0.05


def _brute(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """n tr(Sa^+ C Sb^+ C^T) and rank(Sa) rank(Sb), written with numpy's pinv and matrix_rank."""
    a = a.reshape(len(a), -1)
    b = b.reshape(len(b), -1)
    n = len(a)
    sa = np.cov(a, rowvar=False, bias=True).reshape(a.shape[1], a.shape[1])
    sb = np.cov(b, rowvar=False, bias=True).reshape(b.shape[1], b.shape[1])
    c = (a - a.mean(0)).T @ (b - b.mean(0)) / n
    t = n * np.trace(np.linalg.pinv(sa, rcond=1e-9, hermitian=True) @ c @ np.linalg.pinv(sb, rcond=1e-9) @ c.T)
    ra = np.linalg.matrix_rank(sa, tol=1e-9 * np.abs(sa).max())
    rb = np.linalg.matrix_rank(sb, tol=1e-9 * np.abs(sb).max())
    return float(t), int(ra * rb)


def _grr_units(x: np.ndarray, k: int, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Randomized response's reports of ``x`` and their unbiased terms (e_y - q) / (p - q),
    written here: one-hot rows summing to one, so one degenerate direction."""
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = (1 - p) / (k - 1)
    keep = rng.random(x.size) < p - q  # with probability p - q the answer, else uniform
    y = np.where(keep, x, rng.integers(0, k, x.size))
    return (np.eye(k)[y] - q) / (p - q)


def _interval(reps: int, alpha: float) -> tuple[int, int]:
    """Where the rejection count of a test of level alpha falls but with probability
    FALSE_FAILURE (two-sided)."""
    return int(stats.binom.ppf(FALSE_FAILURE / 2, reps, alpha)), int(stats.binom.isf(FALSE_FAILURE / 2, reps, alpha))


# ------------------------------------------------------------------------------ reference values
def test_statistic_and_wald_p_value_against_the_formula():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, 500)
    a = _grr_units(x, 4, 1.0, rng)  # rank 3
    b = rng.normal(size=(500, 2)) + 0.2 * x[:, None]
    got = association_test(a, b, method="wald")
    want, df = _brute(a, b)
    assert df == 6 and got.df == 6 and got.n == 500
    assert got.statistic == pytest.approx(want, rel=1e-9)
    assert got.p_value == pytest.approx(stats.chi2.sf(want, 6), rel=1e-9)
    assert got.method == "wald" and got.draws == 0 and got.test == "independence"
    c = (a - a.mean(0)).T @ (b - b.mean(0)) / 500
    assert got.association == pytest.approx(np.linalg.norm(c), rel=1e-12)


def test_one_number_each_is_n_times_the_squared_correlation():
    rng = np.random.default_rng(2)
    a = rng.normal(size=300)
    b = 0.3 * a + rng.normal(size=300)
    r = stats.pearsonr(a, b)[0]
    assert association_test(a, b, method="wald").statistic == pytest.approx(300 * r**2, rel=1e-10)


def test_permutation_p_value_against_the_enumerated_permutation_law():
    """n = 6: all 720 pairings enumerated here; the Monte Carlo p-value over 20,000 draws
    estimates P(T_pi >= T), within its binomial band."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 2))
    b = rng.normal(size=6) + a[:, 0]
    t_obs, _ = _brute(a, b)
    perms = [_brute(a, b[list(p)])[0] for p in itertools.permutations(range(6))]
    exact = np.mean(np.array(perms) >= t_obs - 1e-9)
    draws = 20_000
    got = association_test(a, b, draws=draws, rng=4)
    assert got.statistic == pytest.approx(t_obs, rel=1e-9) and got.method == "permutation" and got.draws == draws
    lo, hi = stats.binom.interval(1 - FALSE_FAILURE, draws, exact)
    assert (1 + lo) / (1 + draws) <= got.p_value <= (1 + hi) / (1 + draws)


def test_sums_path_equals_rows_path():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, 4000)
    a = _grr_units(x, 3, 0.5, rng) + 100.0  # far from zero: the raw sums lose digits
    b = np.column_stack([rng.normal(size=4000) + 0.1 * x, rng.integers(0, 2, 4000)]) - 50.0
    rows = association_test(a, b, method="wald")
    sums = PairedSums.of(a[:2500], b[:2500])
    rest = PairedSums.of(a[2500:], b[2500:])
    merged = PairedSums(
        sums.n + rest.n,
        sums.sa + rest.sa,
        sums.sb + rest.sb,
        sums.saa + rest.saa,
        sums.sbb + rest.sbb,
        sums.sab + rest.sab,
    )
    got = association_from_sums(merged)
    assert got.df == rows.df == 4
    assert got.statistic == pytest.approx(rows.statistic, rel=1e-7)
    assert got.p_value == pytest.approx(rows.p_value, rel=1e-6)
    assert got.association == pytest.approx(rows.association, rel=1e-7)


def test_homogeneity_is_association_with_the_group_indicator():
    rng = np.random.default_rng(6)
    g = rng.choice(["north", "south", "east"], 600)
    u = rng.normal(size=(600, 2)) + (g == "east")[:, None] * 0.3
    got = group_homogeneity(u, g, method="wald")
    want, df = _brute(u, np.eye(3)[np.unique(g, return_inverse=True)[1]])
    assert got.test == "homogeneity" and got.df == df == 4
    assert got.statistic == pytest.approx(want, rel=1e-9)
    # two groups, one number: n r^2 of the point-biserial correlation
    two = rng.integers(0, 2, 600)
    assert group_homogeneity(u[:, 0], two, method="wald").statistic == pytest.approx(
        600 * stats.pearsonr(u[:, 0], two)[0] ** 2, rel=1e-10
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: association_test(np.ones((10, 2)), np.ones(10)), "units_a: got terms that do not vary"),
        (lambda: association_test(np.arange(10.0), np.arange(9.0)), "units_b: got '9 rows'"),
        (lambda: association_test(np.arange(10.0), np.arange(10.0), method="exact"), "method: got 'exact'"),
        (lambda: association_test(np.arange(10.0), np.arange(10.0), alpha=1.5), "alpha: got 1.5"),
        (lambda: association_test([[np.nan]] * 4, np.arange(4.0)), "units_a: got 'shape (4, 1)'"),
        (lambda: group_homogeneity(np.arange(5.0), ["a"] * 5), "groups: got ['a'], expected at least two"),
        (lambda: group_homogeneity(np.arange(5.0), ["a", "b"] * 3), "groups: got '6 labels'"),
        (lambda: group_homogeneity(np.arange(4.0), [1, "a", None, 2]), "groups: got [1, 'a', None, 2]"),
        (lambda: association_test("abc", np.arange(3.0)), "units_a: got 'abc'"),
        (lambda: association_test([1e308, -1e308, 1, 2], np.arange(4.0), method="wald"), "covariance overflows"),
    ],
)
def test_errors_name_the_parameter(call, message):
    with pytest.raises(LdpSimError, match="expected") as err:
        call()
    assert message in str(err.value)


# ------------------------------------------------------------------------------ level and power
def _numeric_pair(rng, n, eps, rho, kind="duchi"):
    """Two numbers in [-1, 1] with correlation about ``rho`` (independent at 0), each through
    Duchi et al.'s mechanism (or ``kind``) with its own stream."""
    duchi = catalog.build(kind, eps=eps)
    z = rng.normal(size=(n, 2))
    x = np.tanh(z[:, 0])
    y = np.tanh(rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1])
    return duchi.privatize(x, rng), duchi.privatize(y, rng)


REPS = [pytest.param(1000, id="1000"), pytest.param(4000, id="4000", marks=pytest.mark.slow)]


@pytest.mark.parametrize("reps", REPS)
def test_wald_level_numeric_by_numeric_duchi(reps):
    """Independent numbers through Duchi's mechanism at eps = 1, n = 200: the chi-square(1)
    approximation's rejection rate within the binomial interval of a level-0.05 test."""
    rng = np.random.default_rng(7)
    rejected = sum(association_test(*_numeric_pair(rng, 200, 1.0, 0.0), method="wald").reject for _ in range(reps))
    lo, hi = _interval(reps, ALPHA)
    assert lo <= rejected <= hi, (rejected, lo, hi)


@pytest.mark.parametrize("reps", REPS)
def test_wald_level_categorical_by_numeric(reps):
    """A 4-answer question through randomized response (rank-3 terms) and an independent
    number through Duchi's mechanism, n = 300: df 3."""
    rng = np.random.default_rng(8)
    duchi = catalog.build("duchi", eps=1.0)
    rejected = 0
    for _ in range(reps):
        a = _grr_units(rng.choice(4, 300, p=[0.4, 0.3, 0.2, 0.1]), 4, 1.0, rng)
        rejected += association_test(a, duchi.privatize(rng.uniform(-1, 1, 300), rng), method="wald").reject
    lo, hi = _interval(reps, ALPHA)
    assert lo <= rejected <= hi, (rejected, lo, hi)


def test_permutation_level_at_small_n():
    """n = 30 through the piecewise mechanism (continuous reports: no ties), 99 permutations
    each: the Monte Carlo p-value's level is exactly 0.05 (5 of 100 ranks), whatever the law
    of the terms. (Two-valued reports such as Duchi's tie often, and ties counted against
    the null make the test conservative: 0.028 at n = 30 over 2,000 tests.)"""
    rng = np.random.default_rng(9)
    reps = 600
    rejected = sum(
        association_test(*_numeric_pair(rng, 30, 0.5, 0.0, "piecewise"), draws=99, rng=rng).reject for _ in range(reps)
    )
    lo, hi = _interval(reps, ALPHA)
    assert lo <= rejected <= hi, (rejected, lo, hi)


def test_power_under_strong_dependence():
    """Correlation 0.9 through Duchi at eps = 2, n = 2,000: both calibrations reject in
    (nearly) every replication; the bound 0.9 is far below the power (about 1)."""
    rng = np.random.default_rng(10)
    reps = 50
    wald = sum(association_test(*_numeric_pair(rng, 2000, 2.0, 0.9), method="wald").reject for _ in range(reps))
    perm = sum(association_test(*_numeric_pair(rng, 2000, 2.0, 0.9), draws=99, rng=rng).reject for _ in range(reps))
    assert wald >= 0.9 * reps and perm >= 0.9 * reps


def test_homogeneity_power_and_level_by_group():
    """Three groups of a public column; a categorical answer whose law moves in one group is
    detected, and one law in every group is rejected at about the level."""
    rng = np.random.default_rng(11)
    groups = np.repeat([0, 1, 2], 500)
    moved = np.where(groups == 2, rng.choice(3, 1500, p=[0.2, 0.3, 0.5]), rng.choice(3, 1500, p=[0.5, 0.3, 0.2]))
    assert group_homogeneity(_grr_units(moved, 3, 2.0, rng), groups, draws=199, rng=rng).reject
    reps = 1000
    rejected = sum(
        group_homogeneity(_grr_units(rng.choice(3, 1500), 3, 1.0, rng), groups, method="wald").reject
        for _ in range(reps)
    )
    lo, hi = _interval(reps, ALPHA)
    assert lo <= rejected <= hi, (rejected, lo, hi)
