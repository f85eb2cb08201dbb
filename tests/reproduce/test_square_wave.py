"""``ldpsim reproduce square-wave-ems``: the Square Wave paper's claim that SW with EMS beats
the other methods, on a small run; the Wasserstein-1 errors are recomputed here from the
written data (not read from the summary), and the sample's truth from the seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldpsim.reproduce import get, names, reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce("square-wave-ems", seed=2014, instances=2, eps_grid=[2.0], out=tmp_path_factory.mktemp("sw"))


def test_registered_with_its_source():
    assert "square-wave-ems" in names() and "Li et al. 2020" in get("square-wave-ems").source


def test_the_claim_row_is_the_ratio_of_the_mean_errors(run):
    data = pd.read_csv(run.out_dir / "data.csv")
    mean = data.groupby("method")["wasserstein1"].mean()
    claim = run.summary[run.summary["quantity"].str.startswith("best other method")].iloc[0]
    want = min(mean.drop("square wave + EMS")) / mean["square wave + EMS"]
    assert claim["ours"] == pytest.approx(want, rel=1e-9)
    assert claim["agrees"] == ("yes" if want > 1 else "no")
    assert set(data["method"]) == {"square wave + EMS", "square wave + EM", "bucketing + OUE (best B)"}
    assert np.all(data["wasserstein1"] > 0) and len(data) == 2 * 3


def test_files_are_written(run):
    names_written = {p.name for p in run.files}
    assert {"data.csv", "summary.csv", "metadata.json", "square-wave-ems.png"} <= names_written
