"""``ldpsim compose``: the printed table, the files, and one-line errors."""

from __future__ import annotations

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
    assert main(["compose", "--eps", "0.7", "--delta", "0.02", "--compositions", "4", "--eps-total", "0", "0.5", "1.4", "--out", str(out), "--no-figure"]) == 0
    table = pd.read_csv(out / "table.csv")
    p, r = quaternary_rows(0.7, 0.02)
    P, R = product(p, 4), product(r, 4)
    ref = [hockey_stick(P, R, e) for e in (0.0, 0.5, 1.4)]
    assert np.allclose(table["exact"], ref, rtol=1e-12)
    assert not (out / "region.png").exists()


def test_compose_target_delta(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["compose", "--eps", "0.1", "--delta", "0.001", "--compositions", "30", "--target-delta", "0.05", "0.1", "--out", str(out), "--no-figure"]) == 0
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
        (["compose", "--eps", "0.1", "--delta", "0.01", "--compositions", "30", "--target-delta", "0.01"], "delta_total: got 0.01"),
        (["compose", "--eps", "0.1", "--compositions", "3", "--eps-total", "1", "--target-delta", "0.1"], "--target-delta"),
    ],
)
def test_compose_errors_are_one_line_exit_2(argv, needle, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
