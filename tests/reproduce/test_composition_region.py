"""``ldpsim reproduce composition-region``: Theorem 3.3 of Kairouz et al. 2015 checked from samples.

The run uses a fixed seed and n = 80,000 per hypothesis (instances = 40); the exact region is
recomputed here from Theorem 3.3's lattice of (eps, delta) pairs (``lattice_region``, not the
privacy-loss polygon the reproduction uses), and a mutated mechanism (eps 30% larger than
claimed) must make the checks fail. Deterministic: fixed seeds only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ldpsim.privacy import OptimalComposition, lattice_region
from ldpsim.reproduce import composition as cr
from ldpsim.reproduce import names, reproduce

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SEED = 2014
INSTANCES = 40  # n = 80,000 per hypothesis


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce(cr.NAME, seed=SEED, instances=INSTANCES, out=tmp_path_factory.mktemp("compreg"))


@pytest.fixture(scope="module")
def data(run) -> pd.DataFrame:
    return pd.read_csv(run.out_dir / "data.csv")


def _thm33_tradeoff(eps: float, delta: float, k: int, alpha: np.ndarray) -> np.ndarray:
    """The lower boundary of the intersection of the (eps_i, delta_i) regions of Thm 3.3."""
    e_i, d_i = lattice_region(eps, delta, k)
    a = np.asarray(alpha)[:, None]
    lines = np.maximum(1 - d_i - np.exp(e_i) * a, np.exp(-e_i) * (1 - d_i - a))
    return np.maximum(0.0, lines.max(axis=1))


# ----------------------------------------------------------------------------- the run
def test_registered_and_listed_by_the_cli(cli):
    assert cr.NAME in names()
    proc = cli("reproduce", "--list")
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith(cr.NAME + " ") for line in proc.stdout.splitlines())


def test_files_are_written(run):
    files = {p.name for p in run.files}
    assert {"data.csv", "summary.csv", "metadata.json", f"{cr.NAME}.png"} <= files
    assert (run.out_dir / f"{cr.NAME}.png").read_bytes()[:8] == PNG_MAGIC
    summary = pd.read_csv(run.out_dir / "summary.csv")
    assert list(summary.columns) == ["quantity", "k", "eps", "paper", "ours", "agrees", "criterion"]
    assert len(summary) == len(run.summary) == 8


def test_every_check_agrees(run):
    summary = run.summary
    assert (summary["agrees"] == "yes").all(), summary[["quantity", "ours", "criterion"]].to_string()
    assert summary["paper"].notna().all() and np.isfinite(summary["ours"]).all()
    assert all(f"n = {cr.SAMPLES_PER_INSTANCE * INSTANCES}" in c for c in summary["criterion"])


def test_measured_figures_are_of_the_sampling_size(run):
    s = run.summary.set_index("quantity")["ours"]
    tol = cr.roc_tolerance(cr.SAMPLES_PER_INSTANCE * INSTANCES)
    for q, x in s.items():
        if "inside the exact region" in q or "corners" in q or "GDP" in q:
            assert 0 <= x <= tol, q  # distances outside the region / off the vertices are sampling noise
        if "strictly inside" in q:
            assert x > tol, q  # the Laplace composition keeps a certified distance from the boundary


def test_region_is_theorem_3_3s_intersection_of_lattice_regions(data):
    """The exact boundary written (and checked against) equals Thm 3.3's formula, and every
    quaternary vertex lies on it."""
    for (case, eps, delta, k), g in data.groupby(["case", "eps", "delta", "k"]):
        low = g[g["curve"] == "region_lower"]
        ref = _thm33_tradeoff(eps, delta, int(k), low["alpha"].to_numpy())
        assert np.allclose(low["beta"], ref, rtol=1e-9, atol=1e-12), case
        vert = g[g["curve"] == "vertex"].iloc[1:]  # after (0, 1), the "reject nothing" test
        if len(vert):
            assert np.allclose(
                vert["beta"], _thm33_tradeoff(eps, delta, int(k), vert["alpha"].to_numpy()), atol=1e-9
            ), case


def test_empirical_points_at_the_vertices_are_close(data):
    for case, g in data[data["mechanism"] == "quaternary"].groupby("case"):
        v = g[g["curve"] == "vertex"][["alpha", "beta"]].to_numpy()
        e = g[g["curve"] == "empirical_at_vertex"][["alpha", "beta"]].to_numpy()
        assert v.shape == e.shape and len(v) == int(g["k"].iloc[0]) + 4
        assert np.max(np.abs(v - e)) < 0.01, case


def test_gaussian_points_follow_the_gdp_curve(data):
    g = data[(data["mechanism"] == "gaussian") & (data["curve"] == "empirical")]
    mu = math.sqrt(cr.GAUSSIAN[1]) / cr.GAUSSIAN[0]
    mid = g[(g["alpha"] > 0.05) & (g["alpha"] < 0.95)]  # where G_mu is not steep
    ref = stats.norm.cdf(stats.norm.ppf(1 - mid["alpha"]) - mu)
    assert np.max(np.abs(mid["beta"] - ref)) < 0.01


# ----------------------------------------------------------------------------- the checks can fail
@pytest.mark.parametrize("factor", [1.3, 1.2])
def test_mutation_larger_eps_than_claimed_is_detected(factor):
    case = cr.run_case(0, "quaternary", (0.5, 0.01, 10), 50_000, seed=1, sample_eps=0.5 * factor)
    assert not case.inside.ok
    assert case.inside.adjusted > 0.03 and case.inside.distance > 3 * case.inside.tol
    assert case.corners is not None and not case.corners.ok.all()
    rows = cr.summary_of([case])
    assert set(rows["agrees"]) == {"no"}


def test_mutation_laplace_against_a_smaller_eps_is_detected():
    lp, lr = cr.laplace_llr(0.5, 10, 50_000, np.random.default_rng(3))
    _, a, b = cr.empirical_roc(lp, lr)
    assert cr.check_inside(a, b, OptimalComposition(0.5, 0.0, 10).tradeoff, 50_000).ok
    assert not cr.check_inside(a, b, OptimalComposition(0.4, 0.0, 10).tradeoff, 50_000).ok


def test_small_runs_give_the_strict_inside_row_no_verdict(tmp_path):
    summary = reproduce(cr.NAME, seed=7, instances=4, out=tmp_path).summary
    strict = summary["quantity"].str.contains("strictly inside")
    assert summary.loc[strict, "paper"].isna().all() and (summary.loc[strict, "agrees"] == "").all()
    assert (summary.loc[~strict, "agrees"] == "yes").all()


def test_unmutated_case_passes_with_another_seed():
    case = cr.run_case(0, "quaternary", (0.5, 0.01, 10), 50_000, seed=1)
    assert case.inside.ok and case.corners is not None and case.corners.ok.all()


# ----------------------------------------------------------------------------- units
def test_empirical_roc_by_hand():
    t, a, b = cr.empirical_roc(np.array([1.0, 0.0, 1.0]), np.array([2.0, 1.0]))
    assert np.array_equal(t[:-1], [0.0, 1.0, 2.0]) and np.isnan(t[-1])
    # reject P iff L < t: t = 0 rejects nothing; t = 1 rejects the P-sample 0; t = 2 rejects
    # every P-sample and the R-sample 1; then reject all
    assert np.allclose(a, [0.0, 1 / 3, 1.0, 1.0])
    assert np.allclose(b, [1.0, 1.0, 0.5, 0.0])


def test_empirical_roc_with_infinite_losses():
    t, a, b = cr.empirical_roc(np.array([np.inf, 0.0]), np.array([-np.inf, 0.0]))
    assert np.array_equal(t[:-1], [-np.inf, 0.0, np.inf])
    assert np.allclose(a, [0.0, 0.0, 0.5, 1.0])
    assert np.allclose(b, [1.0, 0.5, 0.0, 0.0])


def test_quaternary_llr_counts():
    lp, lr = cr.quaternary_llr(0.5, 0.01, 3, 20_000, np.random.default_rng(0))
    # +inf only under P, -inf only under R, finite values on the lattice (k - 2l) eps
    assert not np.isneginf(lp).any() and not np.isposinf(lr).any()
    assert math.isclose(np.isposinf(lp).mean(), 1 - 0.99**3, abs_tol=0.005)
    fin = lp[np.isfinite(lp)] / 0.5
    assert set(np.unique(fin)) <= {-3.0, -1.0, 1.0, 3.0}


def test_tolerances():
    n = 10_000
    tol = cr.roc_tolerance(n, 1e-6)
    assert math.isclose(4 * math.exp(-2 * n * tol**2), 1e-6, rel_tol=1e-9)
    lo, hi = cr.clopper_pearson(np.array([0, 7, 100]), 100, 0.95)
    for x, l, h in zip([0, 7, 100], lo, hi):
        ci = stats.binomtest(int(x), 100).proportion_ci(0.95, method="exact")
        assert math.isclose(l, ci.low, abs_tol=1e-12) and math.isclose(h, ci.high, abs_tol=1e-12)
