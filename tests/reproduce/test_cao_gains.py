"""``ldpsim reproduce cao-gains``: Cao, Jia and Gong's Table 1 beside our exact and measured
gains, on a small run; the paper's column is recomputed here from their closed forms, the
measured column from the written data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ldpsim.reproduce import get, names, reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce("cao-gains", seed=2014, instances=2, out=tmp_path_factory.mktemp("cao"))


def test_registered_with_its_source():
    assert "cao-gains" in names() and "Cao, Jia and Gong 2021" in get("cao-gains").source


def test_the_paper_column_is_table_1_and_every_row_agrees(run):
    d, r, beta, e = 1024, 10, 0.05, math.e
    prior = 1.0 / np.arange(1, d + 1)
    prior /= prior.sum()
    targets = np.sort(np.random.default_rng(2014).choice(d, size=r, replace=False))
    f = prior[targets].sum()
    p_olh = e / (e + 3)  # g = 4 at eps = 1
    want = {
        "RPA on kRR": beta * (r / d - f),
        "RIA on kRR": beta * (1 - f),
        "MGA on kRR": beta * (1 - f) + beta * (d - r) / (e - 1),
        "RPA on OUE": beta * (r - f),
        "RIA on OUE": beta * (1 - f),
        "MGA on OUE": beta * (2 * r - f) + 2 * beta * r / (e - 1),
        "RPA on OLH": -beta * f,
        "RIA on OLH": beta * (1 - f),
        "MGA on OLH": beta * (r * 0.75 / (p_olh - 0.25) - f),
    }
    summary = run.summary
    for label, value in want.items():
        rows = summary[summary["quantity"].str.contains(label, regex=False)]
        assert len(rows) == 2 and np.allclose(rows["paper"], value, rtol=1e-12)
    assert (summary["agrees"].isin(["yes", ""])).all()


def test_the_measured_rows_are_the_means_of_the_data(run):
    data = pd.read_csv(run.out_dir / "data.csv")
    assert len(data) == 2 * 9
    mean = data.groupby(["protocol", "attack"])["gain"].mean()
    row = run.summary[run.summary["quantity"] == "gain of MGA on OUE: ours measured (mean of 2)"].iloc[0]
    assert row["ours"] == pytest.approx(mean[("oue", "maximal_gain")], rel=1e-9)


def test_files_are_written(run):
    assert {"data.csv", "summary.csv", "metadata.json", "cao-gains.png"} <= {p.name for p in run.files}
