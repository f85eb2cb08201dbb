"""Estimation from output counts: inversion estimator with exact covariance, simplex
projection, EM maximum likelihood, confidence intervals.

Every statistical check has a fixed seed and a tolerance derived from a stated
false-failure probability (at most 1e-6 per test, split by a union bound over the checks it
makes), computed from scipy.stats quantiles.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ldpsim import LdpSimError
from ldpsim.analyst import (
    confidence_intervals,
    em_estimate,
    exact_covariance,
    frequency_estimate,
    inversion_estimate,
    project_to_simplex,
)
from ldpsim.mechanisms import from_matrix, randomized_response, truncated_geometric
from tests.stats_checks import FALSE_FAILURE

R = 4000  # replications


def _random_full_rank(k: int = 4, m: int = 4, seed: int = 11):
    rng = np.random.default_rng(seed)
    q = 0.5 * np.eye(k, m) + 0.5 * rng.dirichlet(np.ones(m), size=k)
    q /= q.sum(axis=1, keepdims=True)
    assert np.linalg.matrix_rank(q) == k
    return from_matrix(q, name="random")


MECHANISMS = {
    "rr": lambda: randomized_response(4, 1.0),
    "geometric": lambda: truncated_geometric(5, 2.0),
    "random": _random_full_rank,
}
PRIORS = {
    "rr": np.array([0.1, 0.2, 0.3, 0.4]),
    "geometric": np.array([0.3, 0.25, 0.2, 0.15, 0.1]),
    "random": np.array([0.4, 0.1, 0.2, 0.3]),
}


def _replicate(mech, prior, n, reps, seed):
    """``reps`` output-count vectors: inputs Multinomial(n, P), outputs via sample_counts."""
    rng = np.random.default_rng(seed)
    inputs = rng.multinomial(n, prior, size=reps)
    return np.stack([mech.sample_counts(row, rng) for row in inputs])


def _estimates(mech, counts):
    return np.stack([frequency_estimate(mech, c).estimate for c in counts])


# --------------------------------------------------------------------- closed forms
def test_randomized_response_covariance_closed_form_equals_generic():
    rr = randomized_response(4, 1.0)
    generic = from_matrix(rr.matrix)
    prior = PRIORS["rr"]
    n = 1234
    m = rr.marginal(prior)
    q = rr.keep
    expected = (np.diag(m) - np.outer(m, m)) / (n * q * q)
    np.testing.assert_allclose(exact_covariance(rr, prior, n), expected, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(exact_covariance(generic, prior, n), expected, rtol=1e-9, atol=1e-15)
    counts = [100, 300, 50, 900]
    a, b = inversion_estimate(rr, counts), inversion_estimate(generic, counts)
    np.testing.assert_allclose(a.estimate, b.estimate, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.covariance, b.covariance, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(a.std_error, np.sqrt(np.diag(a.covariance)), rtol=1e-12)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_plugin_covariance_is_exact_covariance_at_observed_frequencies(name):
    mech = MECHANISMS[name]()
    counts = _replicate(mech, PRIORS[name], 700, 1, seed=5)[0]
    est = inversion_estimate(mech, counts)
    # The plug-in covariance is the exact formula with M replaced by f; any prior P with
    # P^T Q = f would give it, and the estimate itself is such a "prior" (it may be outside
    # the simplex, so compare against the formula directly).
    a = np.linalg.pinv(mech.matrix.T)
    f = counts / counts.sum()
    expected = a @ (np.diag(f) - np.outer(f, f)) @ a.T / counts.sum()
    np.testing.assert_allclose(est.covariance, expected, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(est.estimate, a @ f, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------- (a) unbiasedness, (b) covariance
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_unbiased_and_exact_covariance_matches_sample_covariance(name):
    """R = 4000 replications of n = 2000 reports.

    (a) Each category's mean estimate is within z sqrt(Var/R) of the truth, Var from the
    exact covariance; z the normal quantile at FALSE_FAILURE/2 split two-sided over the k
    categories (a mean of 4000 i.i.d. estimates with bounded support is normal far beyond
    this accuracy).
    (b) (R-1) s^2 / sigma^2 ~ chi2(R-1) for each category and for two fixed contrasts
    (which involve the off-diagonal covariances): the statistic lies within the two-sided
    chi-square quantiles at FALSE_FAILURE/2 split over the k + 2 checks. Each estimate is
    a mean of n = 2000 bounded terms, so its excess kurtosis is O(1/n) and the chi-square
    law of the sample variance is accurate."""
    mech = MECHANISMS[name]()
    prior = PRIORS[name]
    n = 2000
    est = _estimates(mech, _replicate(mech, prior, n, R, seed=100))
    cov = exact_covariance(mech, prior, n)
    k = mech.k

    z = stats.norm.isf(FALSE_FAILURE / 2 / (2 * k))
    dev = np.abs(est.mean(axis=0) - prior)
    bound = z * np.sqrt(np.diag(cov) / R)
    assert np.all(dev <= bound), (dev, bound)

    contrasts = np.vstack([np.eye(k), np.r_[1.0, -1.0, np.zeros(k - 2)], np.linspace(-1.0, 1.0, k)])
    checks = contrasts.shape[0]
    level = FALSE_FAILURE / 2 / checks / 2
    lo, hi = stats.chi2.ppf(level, R - 1), stats.chi2.isf(level, R - 1)
    proj = est @ contrasts.T
    sample_var = proj.var(axis=0, ddof=1)
    true_var = np.einsum("ci,ij,cj->c", contrasts, cov, contrasts)
    stat = (R - 1) * sample_var / true_var
    assert np.all((stat >= lo) & (stat <= hi)), (stat, lo, hi)


# --------------------------------------------------------------------- (c) coverage
def _covered(mech, counts, prior, **kw):
    out = np.empty((len(counts), mech.k), dtype=bool)
    for r, c in enumerate(counts):
        df = confidence_intervals(mech, c, **kw)
        out[r] = (df["ci_low"].to_numpy() <= prior) & (prior <= df["ci_high"].to_numpy())
    return out


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("R", [1500, pytest.param(R, marks=pytest.mark.slow)])
def test_normal_and_simultaneous_intervals_coverage(name, R):
    """n = 5000: the normal intervals' per-category coverage count over R replications
    (1,500; 4,000 in the slow tier) lies within exact two-sided Binomial(R, 0.95) quantiles (at FALSE_FAILURE/2
    split over k categories); the Bonferroni simultaneous normal intervals cover all
    categories at once at least as often as the one-sided Binomial(R, 0.95) quantile at
    FALSE_FAILURE/2. (At n = 5000 the normal approximation's coverage error is far below the
    binomial tolerance: about 0.02 at R = 4,000, 0.03 at 1,500.)"""
    mech = MECHANISMS[name]()
    prior = PRIORS[name]
    counts = _replicate(mech, prior, 5000, R, seed=200)
    conf = 0.95
    k = mech.k
    hits = _covered(mech, counts, prior, confidence=conf, method="normal").sum(axis=0)
    level = FALSE_FAILURE / 2 / k / 2
    lo, hi = stats.binom.ppf(level, R, conf), stats.binom.isf(level, R, conf)
    assert np.all((hits >= lo) & (hits <= hi)), (hits, lo, hi)

    joint = _covered(mech, counts, prior, confidence=conf, method="normal", simultaneous=True).all(axis=1).sum()
    assert joint >= stats.binom.ppf(FALSE_FAILURE / 2, R, conf), joint


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("R", [1500, pytest.param(R, marks=pytest.mark.slow)])
def test_conservative_intervals_cover_at_small_n(name, R):
    """n = 30: per-category and simultaneous (Bonferroni) Hoeffding intervals cover at least
    at the nominal rate: coverage counts over R replications (1,500; 4,000 in the slow tier) are at least the one-sided
    Binomial(R, 0.9) quantile at FALSE_FAILURE split over k + 1 checks."""
    mech = MECHANISMS[name]()
    prior = PRIORS[name]
    counts = _replicate(mech, prior, 30, R, seed=300)
    conf = 0.9
    k = mech.k
    floor = stats.binom.ppf(FALSE_FAILURE / (k + 1), R, conf)
    hits = _covered(mech, counts, prior, confidence=conf, method="conservative").sum(axis=0)
    assert np.all(hits >= floor), (hits, floor)
    joint = _covered(mech, counts, prior, confidence=conf, method="conservative", simultaneous=True)
    assert joint.all(axis=1).sum() >= floor


def test_interval_frame_layout_and_widths():
    mech = MECHANISMS["random"]()
    counts = [120, 80, 300, 500]
    df = confidence_intervals(mech, counts, confidence=0.9, method="normal")
    assert list(df.columns) == ["category", "estimate", "ci_low", "ci_high", "method", "confidence"]
    assert list(df["category"]) == list(mech.input_labels)
    assert set(df["method"]) == {"normal"} and np.all(df["confidence"] == 0.9)
    est = inversion_estimate(mech, counts)
    np.testing.assert_allclose(df["estimate"], est.estimate)
    z = stats.norm.isf(0.05)
    np.testing.assert_allclose(df["ci_high"], est.estimate + z * est.std_error)  # not clipped to [0, 1]
    sim = confidence_intervals(mech, counts, confidence=0.9, method="normal", simultaneous=True)
    assert set(sim["method"]) == {"normal+bonferroni"}
    assert np.all(sim["ci_high"] - sim["ci_low"] >= df["ci_high"] - df["ci_low"])
    cons = confidence_intervals(mech, counts, confidence=0.9, method="conservative")
    a = np.linalg.pinv(mech.matrix.T)
    half = (a.max(axis=1) - a.min(axis=1)) * np.sqrt(np.log(2 / 0.1) / (2 * sum(counts)))
    np.testing.assert_allclose(cons["ci_low"], est.estimate - half)


# --------------------------------------------------------------------- (d) EM
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_em_equals_inversion_inside_the_simplex(name):
    """Large n, interior prior: the inversion estimate is inside the simplex (checked), and
    for a square mechanism it then reproduces f exactly, so it is the MLE; EM must agree to
    1e-6 (no randomness in the comparison)."""
    mech = MECHANISMS[name]()
    counts = _replicate(mech, PRIORS[name], 10**8, 1, seed=400)[0]
    inv = inversion_estimate(mech, counts).estimate
    assert np.all(inv > 0.01)  # precondition: interior
    em = em_estimate(mech, counts)
    assert em.converged and em.iterations < 10_000
    np.testing.assert_allclose(em.estimate, inv, atol=1e-6)
    assert np.all(em.estimate >= 0) and abs(em.estimate.sum() - 1) < 1e-12


def _loglik(mech, counts, p):
    marg = p @ mech.matrix
    with np.errstate(divide="ignore"):
        return float(np.sum(np.where(counts > 0, counts * np.log(marg), 0.0)))


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("seed", range(12))
def test_em_on_boundary_stays_on_simplex_and_increases_likelihood(name, seed):
    """Small n and a prior with zeros: the inversion estimate typically leaves the simplex and
    the MLE is on the boundary, where EM converges sublinearly. Only what is guaranteed is
    asserted (checked over 200 seeds per mechanism when this test was written; 12 here):

    * the iterates stay on the simplex and the log-likelihood LL never decreases (up to
      rounding);
    * LL at the end >= LL at the start p0 = (1 - w) proj + w uniform (w = EM_START_UNIFORM,
      proj the projected inversion estimate) >= (1 - w) LL(proj) + w LL(uniform), by
      concavity of LL in p. (LL >= LL(proj) itself is *not* guaranteed, and failed at about
      a quarter of the seeds: p0 may start below proj and 3000 sublinear steps need not
      climb back);
    * the O(1/T) rate of EM for mixture weights (Csiszar-Tusnady alternating minimisation:
      LL* - LL_T <= n KL(p*||p0) / T <= n log(k/w) / T since p0 >= w/k), checked against
      the best feasible point we know, a run 10 times longer (LL(q) <= LL*);
    * the duality certificate: LL_T + n (max_x g_x - 1) >= LL(q) for every feasible q, with
      g = Q (f / M) the gradient of LL/n (concavity).
    """
    from ldpsim.analyst.estimation import EM_START_UNIFORM as w

    mech = MECHANISMS[name]()
    prior = np.zeros(mech.k)
    prior[:2] = [0.7, 0.3]
    counts = _replicate(mech, prior, 40, 1, seed=500 + seed)[0]
    n, k = int(counts.sum()), mech.k
    em = em_estimate(mech, counts, max_iter=3000)
    assert np.all(em.estimate >= 0) and abs(em.estimate.sum() - 1) < 1e-12
    trace = em.log_likelihood_trace
    assert trace.size == em.iterations + 1
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])), np.diff(trace).min()
    np.testing.assert_allclose(em.log_likelihood, np.sum(counts * np.log(em.estimate @ mech.matrix)), rtol=1e-12)
    # start and concavity
    proj = project_to_simplex(inversion_estimate(mech, counts).estimate)
    p0 = (1 - w) * proj + w / k
    assert trace[0] == pytest.approx(_loglik(mech, counts, p0), rel=1e-12)
    floor = (1 - w) * _loglik(mech, counts, proj) + w * _loglik(mech, counts, np.full(k, 1.0 / k))
    assert em.log_likelihood >= floor - 1e-9 * abs(floor)
    # O(1/T) rate against a longer run, and the duality certificate
    longer = em_estimate(mech, counts, tol=1e-300, max_iter=10 * em.iterations)
    T = em.iterations
    assert longer.log_likelihood - em.log_likelihood <= n * np.log(k / w) / T + 1e-9 * abs(em.log_likelihood)
    marg = em.estimate @ mech.matrix
    g = mech.matrix @ np.where(counts > 0, counts / n / np.where(marg > 0, marg, 1.0), 0.0)
    assert em.log_likelihood + n * (g.max() - 1.0) >= longer.log_likelihood - 1e-9 * abs(em.log_likelihood)


def test_em_reports_non_convergence():
    mech = MECHANISMS["rr"]()
    em = em_estimate(mech, [10, 0, 0, 30], tol=1e-15, max_iter=5)
    assert em.iterations == 5 and not em.converged


# --------------------------------------------------------------------- (e) projection
def _assert_kkt(vec, w, tol=1e-12):
    """w = max(vec - theta, 0) for one theta, and w sums to one: the KKT conditions of
    min ||w - vec||^2 over the simplex (sufficient, the problem being strictly convex)."""
    assert np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    support = w > 0
    theta = np.mean(vec[support] - w[support])
    np.testing.assert_allclose(vec[support] - w[support], theta, atol=tol)
    assert np.all(vec[~support] <= theta + tol)


def test_projection_kkt_idempotent_and_batched():
    rng = np.random.default_rng(600)
    batch = np.concatenate(
        [rng.normal(size=(200, 6)) * 3, rng.dirichlet(np.ones(6), size=20), rng.normal(size=(20, 6)) * 1e-3]
    )
    w = project_to_simplex(batch)
    assert w.shape == batch.shape
    for vec, row in zip(batch, w):
        _assert_kkt(vec, row)
        np.testing.assert_array_equal(project_to_simplex(vec), row)
    np.testing.assert_allclose(project_to_simplex(w), w, atol=1e-15)  # idempotent
    np.testing.assert_allclose(w[200:220], batch[200:220], atol=1e-15)  # points on the simplex stay
    three_d = batch[:240].reshape(4, 60, 6)
    np.testing.assert_array_equal(project_to_simplex(three_d), w[:240].reshape(4, 60, 6))
    np.testing.assert_array_equal(project_to_simplex([5.0]), [1.0])


def test_projection_equals_brute_force_over_faces():
    """The minimiser lies in the relative interior of some face {w_S >= 0, w_rest = 0} of the
    simplex, where it is the projection onto that face's affine hull, w_S = v_S - theta_S;
    enumerating all 2^k - 1 faces and keeping the nearest feasible candidate is exact."""
    rng = np.random.default_rng(601)
    k = 5
    masks = ((np.arange(1, 2**k)[:, None] >> np.arange(k)) & 1).astype(bool)
    for vec in rng.normal(size=(50, k)) * 2:
        best, best_dist = None, np.inf
        for s in masks:
            w = np.zeros(k)
            w[s] = vec[s] - (vec[s].sum() - 1) / s.sum()
            if np.all(w >= 0):
                dist = np.sum((w - vec) ** 2)
                if dist < best_dist:
                    best, best_dist = w, dist
        np.testing.assert_allclose(project_to_simplex(vec), best, atol=1e-12)


# --------------------------------------------------------------------- (f) huge counts
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_trillion_reports_no_overflow(name):
    mech = MECHANISMS[name]()
    prior = PRIORS[name]
    n = 10**12
    counts = np.rint(n * mech.marginal(prior)).astype(np.int64)
    with np.errstate(all="raise"):
        est = inversion_estimate(mech, counts)
        np.testing.assert_allclose(est.estimate, prior, atol=1e-9)
        assert np.all(np.isfinite(est.covariance)) and np.all(np.isfinite(est.std_error))
        np.testing.assert_allclose(
            est.covariance, exact_covariance(mech, prior, int(counts.sum())), rtol=1e-6, atol=1e-30
        )
        em = em_estimate(mech, counts)
        assert np.isfinite(em.log_likelihood) and np.all(np.isfinite(em.estimate))
        np.testing.assert_allclose(em.estimate, prior, atol=1e-6)
        for method in ("normal", "conservative"):
            df = confidence_intervals(mech, counts, method=method)
            assert np.all(np.isfinite(df[["estimate", "ci_low", "ci_high"]].to_numpy()))
            assert np.all((df["ci_low"] <= prior) & (prior <= df["ci_high"]))


# --------------------------------------------------------------------- (g) bad input
def test_bad_inputs():
    mech = MECHANISMS["rr"]()
    good = [10, 20, 30, 40]
    for bad in ([1, 2, 3], [1, 2, 3, -4], [0, 0, 0, 0], [1.5, 2, 3, 4], [[1, 2, 3, 4]]):
        for fn in (inversion_estimate, em_estimate, confidence_intervals):
            with pytest.raises(LdpSimError, match="^counts: got"):
                fn(mech, bad)
    for conf in (0, 1, -0.5, 1.5, float("nan"), "0.9", True):
        with pytest.raises(LdpSimError, match="^confidence: got"):
            confidence_intervals(mech, good, confidence=conf)
    with pytest.raises(LdpSimError, match="^method: got"):
        confidence_intervals(mech, good, method="bootstrap")
    with pytest.raises(LdpSimError, match="^tol: got"):
        em_estimate(mech, good, tol=0)
    with pytest.raises(LdpSimError, match="^max_iter: got"):
        em_estimate(mech, good, max_iter=0)
    with pytest.raises(LdpSimError, match="^prior: got"):
        exact_covariance(mech, [0.5, 0.5, 0.5, 0.5], 10)
    with pytest.raises(LdpSimError, match="^n: got"):
        exact_covariance(mech, [0.25] * 4, 0)
    for bad in ([], [np.nan, 1.0], "abc", 3.0):
        with pytest.raises(LdpSimError, match="^values: got"):
            project_to_simplex(bad)
    singular = from_matrix([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(LdpSimError, match="^mechanism: got"):
        inversion_estimate(singular, [3, 4])


def test_estimators_never_ask_which_mechanism_they_hold():
    """The analyst inverts reports through the mechanism's own methods: no isinstance (or
    issubclass) test against a mechanism class in the estimators, and no file of the analyst
    tests for RandomizedResponse (found by parsing the sources, not by grepping text)."""
    import ast
    from pathlib import Path

    import ldpsim.analyst
    import ldpsim.mechanisms

    root = Path(ldpsim.analyst.__file__).parent
    mechanism_classes = {name for name in ldpsim.mechanisms.__all__ if name[:1].isupper()}
    assert {"RandomizedResponse", "FiniteMechanism", "MatrixMechanism"} <= mechanism_classes

    def class_checks(path: Path) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
            ):
                for sub in ast.walk(node.args[1]):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
                    elif isinstance(sub, ast.Attribute):
                        names.add(sub.attr)
        return names

    for name in ("estimation.py", "frequency.py", "testing.py"):
        assert not class_checks(root / name) & mechanism_classes, name
    for path in sorted(root.glob("*.py")):
        assert "RandomizedResponse" not in class_checks(path), path.name
