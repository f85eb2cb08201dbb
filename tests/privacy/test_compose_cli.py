"""``ldpsim compose``: the printed table, the files, and one-line errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from ldpsim.cli import main

from .oracles import hockey_stick, product, quaternary_rows


def test_compose_prints_exact_and_bounds_and_writes_the_region_figure(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["compose", "--eps", "0.1", "--delta", "0.001", "--compositions", "30", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    for label in ("exact (Thm 3.3)", "basic", "Dwork-Rothblum-Vadhan", "Thm 3.4"):
        assert label in text
    table = pd.read_csv(out / "table.csv")
    assert list(table.columns) == ["eps_total", "exact", "basic", "drv", "kov", "kov_small_eps"]
    assert np.allclose(table["eps_total"], np.linspace(0, 3, 13)[1:])
    # every bound is at least the exact value, and the exact one is the theorem's at k eps
    for col in ("basic", "drv", "kov", "kov_small_eps"):
        assert (table[col] >= table["exact"] * (1 - 1e-12)).all()
    assert table["exact"].iloc[-1] == pytest.approx(1 - 0.999**30, rel=1e-12)
    assert (out / "region.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compose_small_k_matches_brute_force(tmp_path, capsys):
    out = tmp_path / "c"
    assert (
        main(
            [
                "compose",
                "--eps",
                "0.7",
                "--delta",
                "0.02",
                "--compositions",
                "4",
                "--eps-total",
                "0",
                "0.5",
                "1.4",
                "--out",
                str(out),
                "--no-figure",
            ]
        )
        == 0
    )
    table = pd.read_csv(out / "table.csv")
    p, r = quaternary_rows(0.7, 0.02)
    P, R = product(p, 4), product(r, 4)
    ref = [hockey_stick(P, R, e) for e in (0.0, 0.5, 1.4)]
    assert np.allclose(table["exact"], ref, rtol=1e-12)
    assert not (out / "region.png").exists()


def test_compose_target_delta(tmp_path, capsys):
    out = tmp_path / "c"
    assert (
        main(
            [
                "compose",
                "--eps",
                "0.1",
                "--delta",
                "0.001",
                "--compositions",
                "30",
                "--target-delta",
                "0.05",
                "0.1",
                "--out",
                str(out),
                "--no-figure",
            ]
        )
        == 0
    )
    table = pd.read_csv(out / "table.csv")
    p, r = quaternary_rows(0.1, 0.001)
    # brute force over the 30-fold product is too large; use the binomial sufficient statistic
    e = np.exp(0.1)
    from math import comb

    for row in table.itertuples():
        x = row.exact
        mid = sum(comb(30, l) * max(0.0, e ** (30 - l) - np.exp(x) * e**l) for l in range(31)) / (1 + e) ** 30
        d = 1 - 0.999**30 + 0.999**30 * mid
        assert d <= row.delta_total * (1 + 1e-12)
        for col in ("basic", "drv", "kov", "kov_small_eps"):
            assert getattr(row, col) >= x
    assert "eps_total at each target" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["compose", "--eps", "-0.1", "--compositions", "3"], "eps: got -0.1"),
        (["compose", "--eps", "0.1", "--compositions", "0"], "compositions: got 0"),
        (["compose", "--eps", "0.1", "--delta", "1.5", "--compositions", "3"], "delta: got 1.5"),
        (["compose", "--eps", "0.1", "--compositions", "3", "--eps-total", "-1"], "eps_total: got -1"),
        (
            ["compose", "--eps", "0.1", "--delta", "0.01", "--compositions", "30", "--target-delta", "0.01"],
            "delta_total: got 0.01",
        ),
        (
            ["compose", "--eps", "0.1", "--compositions", "3", "--eps-total", "1", "--target-delta", "0.1"],
            "--target-delta",
        ),
    ],
)
def test_compose_errors_are_one_line_exit_2(argv, needle, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


# --------------------------------------------------------------------------- --pairs / --mechanism
def _rr_rows(k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows 0 and 1 of k-ary randomized response, by hand."""
    e = np.exp(eps)
    p = np.full(k, 1 / (e + k - 1))
    r = p.copy()
    p[0] = r[1] = e / (e + k - 1)
    return p, r


def test_compose_pairs_match_brute_force_and_bounds(tmp_path, capsys):
    out = tmp_path / "c"
    grid = ["0", "0.5", "1.4", "2"]
    assert (
        main(["compose", "--pairs", "1,1e-6 0.5,0", "0.5,0", "--eps-total", *grid, "--out", str(out), "--no-figure"])
        == 0
    )
    text = capsys.readouterr().out
    assert "exact (accountant)" in text and "Thm 3.5" in text and "basic" in text
    table = pd.read_csv(out / "table.csv")
    assert list(table.columns) == ["eps_total", "exact", "basic", "kov_heterogeneous"]
    P, R = np.ones(1), np.ones(1)
    for eps, delta in ((1.0, 1e-6), (0.5, 0.0), (0.5, 0.0)):
        p, r = quaternary_rows(eps, delta)
        P, R = np.outer(P, p).ravel(), np.outer(R, r).ravel()
    ref = [hockey_stick(P, R, float(e)) for e in grid]
    # table.csv keeps 12 digits; at eps_total = 2, a loss of exactly 2 leaves a 5e-17 residue in the brute sum
    assert np.allclose(table["exact"], ref, rtol=1e-11, atol=1e-15)
    for col in ("basic", "kov_heterogeneous"):
        assert (table[col] >= table["exact"] * (1 - 1e-12)).all()
    assert table["basic"].iloc[-1] == pytest.approx(1e-6) and table["basic"].iloc[0] == 1.0


def test_compose_pairs_repetition_and_target_delta(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    common = ["--target-delta", "1e-5", "0.01", "--no-figure"]
    assert main(["compose", "--pairs", "0.5,1e-7x3", "0.2,0*2", "--out", str(a), *common]) == 0
    assert main(["compose", "--pairs", "0.5,1e-7 0.5,1e-7 0.5,1e-7 0.2,0 0.2,0", "--out", str(b), *common]) == 0
    ta, tb = pd.read_csv(a / "table.csv"), pd.read_csv(b / "table.csv")
    assert np.array_equal(ta["exact"], tb["exact"])
    from ldpsim.privacy import optimal_epsilon_heterogeneous

    want = optimal_epsilon_heterogeneous([0.5] * 3 + [0.2] * 2, [1e-7] * 3 + [0.0] * 2, [1e-5, 0.01])
    assert np.allclose(ta["exact"], want, rtol=1e-11)
    assert (ta["kov_heterogeneous"] >= ta["exact"]).all() and (ta["basic"] == 1.9).all()
    assert "eps_total at each target" in capsys.readouterr().out


def test_compose_finite_mechanisms_are_exact(tmp_path, capsys):
    out = tmp_path / "m"
    assert (
        main(
            [
                "compose",
                "--mechanism",
                "randomized_response:k=3,eps=1x3",
                "--mechanism",
                "randomized_response:k=2,eps=0.5",
                "--eps-total",
                "0",
                "1",
                "2.5",
                "--out",
                str(out),
                "--no-figure",
            ]
        )
        == 0
    )
    table = pd.read_csv(out / "table.csv")
    p3, r3 = _rr_rows(3, 1.0)
    p2, r2 = _rr_rows(2, 0.5)
    P, R = np.outer(product(p3, 3), p2).ravel(), np.outer(product(r3, 3), r2).ravel()
    assert np.allclose(table["exact"], [hockey_stick(P, R, e) for e in (0.0, 1.0, 2.5)], rtol=1e-11)
    text = capsys.readouterr().out
    assert "randomized_response:k=3,eps=1.0 x3" in text and "exact (accountant)" in text
    assert (table["basic"] == [1.0, 1.0, 1.0]).all()  # sum eps = 3.5 > 2.5


def test_compose_noise_mechanism_is_pessimistic_with_its_error(tmp_path, capsys):
    out = tmp_path / "g"
    # gaussian:eps=1,delta=1e-5 is N(0, sigma^2) with the analytic sigma; 4 uses are 2/sigma-GDP
    assert main(["compose", "--mechanism", "gaussian:eps=1,delta=1e-5x4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pessimistic (rel. error <=" in text and "basic and Thm 3.5 left out" in text
    table = pd.read_csv(out / "table.csv")
    assert list(table.columns) == ["eps_total", "exact"]
    from ldpsim.mechanisms import catalog
    from ldpsim.privacy import GDP

    exact = GDP(2 * catalog.build("gaussian", eps=1.0, delta=1e-5).mu).delta(table["eps_total"].to_numpy())
    assert (table["exact"] >= exact * (1 - 1e-12)).all() and (table["exact"] <= exact * (1 + 1e-3) + 1e-300).all()
    assert (out / "region.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["exact"] is False and meta["items"][0]["count"] == 4 and meta["step"] > 0


def test_the_stated_error_of_a_pessimistic_composition_ignores_where_delta_is_zero(tmp_path, capsys):
    # Laplace(eps 0.5) x10 with (1, 0) x2 loses at most 7: the grid ends at eps_total = 7, where
    # the pessimistic delta is 0 (exact) and the coarser lattice's is not; that point once
    # made the header read "rel. error <= 3e+294"
    out = tmp_path / "m"
    assert main(["compose", "--mechanism", "laplace:eps=0.5x10", "--pairs", "1,0x2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    stated = float(re.search(r"rel\. error <= ([0-9.e+-]+)\)", text).group(1))
    table = pd.read_csv(out / "table.csv")
    assert table["exact"].iloc[-1] == 0.0 and table["eps_total"].iloc[-1] == pytest.approx(7.0)
    assert 0 < stated < 0.01


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["compose", "--pairs", "1;0"], "--pairs: got '1;0'"),
        (["compose", "--pairs=-1,0"], "--pairs: got '-1,0'"),
        (["compose", "--pairs", "1,2"], "--pairs: got '1,2'"),
        (["compose", "--pairs", "1,0x0"], "--pairs: got '1,0x0'"),
        (["compose", "--pairs", "1,0,3"], "--pairs: got '1,0,3'"),
        (["compose", "--mechanism", "nosuch:eps=1"], "--mechanism: mechanism: got 'nosuch'"),
        (["compose", "--mechanism", "laplace:eps=-1"], "--mechanism: "),
        (["compose", "--mechanism", "laplace:bogus=1"], "--mechanism: parameter: got 'bogus'"),
        (["compose", "--pairs", "1,0", "--eps", "1"], "--pairs/--mechanism: got --eps too"),
        (["compose", "--mechanism", "laplace", "--compositions", "3"], "--pairs/--mechanism: got --compositions too"),
        (["compose", "--compositions", "3"], "--eps: got nothing"),
        (["compose", "--eps", "1"], "--compositions: got nothing"),
        (["compose", "--pairs", "1,0", "--eps-total", "-1"], "eps_total: got -1"),
        (["compose", "--pairs", "1,0", "--target-delta", "2"], "delta_total: got 2"),
    ],
)
def test_compose_mixed_errors_are_one_line_exit_2(argv, needle, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "x"), "--no-figure"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_theorem_3_5_inversions_match_the_bound():
    from ldpsim.privacy import kov_bound_heterogeneous
    from ldpsim.report import compose as cr

    eps = np.array([1.0, 0.5, 0.5, 0.2, 0.2, 0.2, 0.1])
    delta = np.array([1e-6, 0, 0, 1e-5, 1e-5, 1e-5, 0.0])
    keep = np.prod(1 - delta)
    grid = np.linspace(0.5, 3.0, 11)
    for e_t, d_t in zip(grid, cr.kov_heterogeneous_delta(eps, delta, grid)):
        ds = 1 - (1 - d_t) / keep
        if e_t >= eps.sum():  # no slack needed: basic composition's delta
            assert d_t == pytest.approx(1 - keep, rel=1e-12)
        elif 0 < ds < 1:  # the slack is the smallest that brings the theorem's eps down to e_t
            assert kov_bound_heterogeneous(eps, delta, ds)[0] <= e_t * (1 + 1e-9)
            assert kov_bound_heterogeneous(eps, delta, ds * 0.99)[0] > e_t
    for t in (1e-4, 0.01, 0.3):
        e_t = cr.kov_heterogeneous_epsilon(eps, delta, [t])[0]
        assert cr.kov_heterogeneous_delta(eps, delta, [e_t * (1 + 1e-9)])[0] <= t * (1 + 1e-9)
