"""``ldpsim reproduce stein-exponent``: measured Chernoff-Stein exponents of the NP test
against ``D_kl(M0||M1)``. Small runs (one instance, the default or a coarse n grid); the
theory is recomputed here from the priors with the mechanisms and the KL utility, not read
back from the code under test. Deterministic: fixed seeds only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ldpsim.mechanisms import binary_mechanism_for_priors, randomized_response, truncated_geometric
from ldpsim.reproduce import names, reproduce, stein
from ldpsim.utility import KL, kl_divergence, optimal_mechanism, tv_distance

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The default setting (eps 0.1, 1, 5; 8 values of n with n D from 10 to 3000), one instance."""
    return reproduce("stein-exponent", seed=2014, instances=1, out=tmp_path_factory.mktemp("stein"))


@pytest.fixture(scope="module")
def data(run) -> pd.DataFrame:
    return pd.read_csv(run.out_dir / "data.csv")


def _priors(run) -> tuple[np.ndarray, np.ndarray]:
    p = pd.read_csv(run.out_dir / "priors.csv")
    get = lambda which: p[(p["instance"] == 0) & (p["prior"] == which)].sort_values("symbol")["probability"].to_numpy()
    return get("P0"), get("P1")


def test_registered_and_listed_by_the_cli(cli):
    assert "stein-exponent" in names()
    proc = cli("reproduce", "--list")
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("stein-exponent ") for line in proc.stdout.splitlines())


def test_files_are_written(run):
    files = {p.name for p in run.files}
    assert {"data.csv", "ess.csv", "priors.csv", "summary.csv", "metadata.json", "stein-exponent.png"} <= files
    assert (run.out_dir / "stein-exponent.png").read_bytes()[:8] == PNG_MAGIC
    summary = pd.read_csv(run.out_dir / "summary.csv")
    assert list(summary.columns) == ["quantity", "k", "eps", "paper", "ours", "agrees", "criterion"]
    assert len(summary) == len(run.summary)


def test_grid_spans_n_D_from_10_to_3000(data):
    for _, g in data.groupby(["eps", "mechanism"]):
        assert len(g) == stein.POINTS
        assert g["nD"].min() == pytest.approx(10, rel=0.05) and g["nD"].max() == pytest.approx(3000, rel=1e-3)
    assert set(data["mechanism"]) == {"binary", "randomized_response", "truncated_geometric", "optimal", "mixed"}
    assert sorted(set(data["eps"])) == [0.1, 1.0, 5.0]


def test_theory_is_the_kl_utility_of_each_mechanism(run, data):
    P0, P1 = _priors(run)
    U = KL(P0, P1)
    for eps in (0.1, 1.0, 5.0):
        mechs = {
            "binary": binary_mechanism_for_priors(P0, P1, eps),
            "randomized_response": randomized_response(6, eps),
            "truncated_geometric": truncated_geometric(6, eps),
            "optimal": optimal_mechanism(U, eps).mechanism,
        }
        for name, mech in mechs.items():
            theory = data.loc[(data["eps"] == eps) & (data["mechanism"] == name), "theory"].unique()
            assert theory.size == 1
            assert theory[0] == pytest.approx(U.value(mech), rel=1e-9)
            assert theory[0] == pytest.approx(kl_divergence(mech.marginal(P0), mech.marginal(P1)), rel=1e-9)


def test_mixed_rows_copy_the_better_of_binary_and_rr(data):
    cols = ["n", "theory", "exponent", "log_beta"]
    for (inst, eps), g in data.groupby(["instance", "eps"]):
        b, r, m = (
            g[g["mechanism"] == x][cols].reset_index(drop=True) for x in ("binary", "randomized_response", "mixed")
        )
        best = b if b["theory"].iloc[0] >= r["theory"].iloc[0] else r
        pd.testing.assert_frame_equal(m, best)
        opt = g.loc[g["mechanism"] == "optimal", "utility"].iloc[0]
        assert (g["utility"] <= opt * (1 + 1e-9)).all()
        assert np.allclose(g["ratio_to_optimal"], g["utility"] / opt, rtol=1e-12)


def test_summary_theory_rows_match_the_kl_utility(run):
    P0, P1 = _priors(run)
    U = KL(P0, P1)
    rows = run.summary[run.summary["quantity"].str.startswith("D(M0||M1), the Stein exponent (theory): binary")]
    for _, r in rows.iterrows():
        assert r["ours"] == pytest.approx(U.value(binary_mechanism_for_priors(P0, P1, float(r["eps"]))), rel=1e-9)


def test_measured_exponents_below_theory_within_the_stated_error(data):
    # Not a theorem at finite n (the converse only gives ratio <= (1 + log 2/(nD))/(1 - alpha)),
    # but the second-order term -z sigma0/sqrt(n) is negative: the measured exponent sits below.
    err = data["rel_error"] / (data["n"] * data["theory"])  # error of log beta is ~ rel_error
    assert np.all(data["exponent"] / data["theory"] - 3 * err <= 1.0)
    assert np.all(data["rel_error"] < 0.5)
    assert np.allclose(data["ratio"], data["exponent"] / data["theory"], rtol=1e-9)


def test_exponents_approach_theory(data):
    for _, g in data.groupby(["eps", "mechanism"]):
        g = g.sort_values("n")
        assert np.all(np.diff(g["ratio"].to_numpy()) > 0)
        last = g.iloc[-1]
        assert last["ratio"] >= stein.CHECK_RATIO
        # and close to the second-order prediction 1 - z sigma0 / (sqrt(n) D)
        assert last["ratio"] == pytest.approx(last["second_order"], abs=0.02)


def test_check_rows_agree(run):
    check = run.summary[run.summary["paper"].notna()]
    assert len(check) == 3 and (check["agrees"] == "yes").all()


def test_effective_sample_size(run):
    ess = pd.read_csv(run.out_dir / "ess.csv")
    P0, P1 = _priors(run)
    d_raw = kl_divergence(P0, P1)
    assert np.allclose(ess["D_raw"], d_raw, rtol=1e-9)
    assert np.allclose(ess["n_ratio"], d_raw / ess["D_private"], rtol=1e-9)
    assert np.allclose(ess["n_raw"], math.log(1e6) / d_raw, rtol=1e-9)
    # privacy costs reports, and binary at small eps is within Pinsker's bound D eps^2/(2 tanh(eps/2)^2 TV^2)
    assert (ess["n_ratio"] > 1).all()
    b = ess[(ess["eps"] == 0.1) & (ess["mechanism"] == "binary")].iloc[0]
    tv = tv_distance(P0, P1)
    bound = d_raw * 0.01 / (2 * math.tanh(0.05) ** 2 * tv**2)
    assert b["n_ratio_eps2"] <= bound * (1 + 1e-9)
    assert b["n_ratio_eps2"] >= 0.95 * bound


def test_coarse_grid_and_instances_do_not_change_instance_zero(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    stein.stein_exponent(5, 1, a, eps_grid=[1.0], points=3, samples=500)
    stein.stein_exponent(5, 2, b, eps_grid=[1.0], points=3, samples=500)
    da, db = pd.read_csv(a / "data.csv"), pd.read_csv(b / "data.csv")
    assert len(da) == 5 * 3 and len(db) == 10 * 3
    pd.testing.assert_frame_equal(da, db[db["instance"] == 0].reset_index(drop=True))
