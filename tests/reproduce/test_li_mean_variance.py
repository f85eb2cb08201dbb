"""``ldpsim reproduce li-mean-variance``: Li et al.'s OPA and IPA on the two-group mean and
variance protocol, on a small run. The paper's fake-share condition is recomputed here from
the report bounds the mechanisms' papers publish; the measured rows from the written data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ldpsim.reproduce import get, names, reproduce


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce("li-mean-variance", seed=2023, instances=3, out=tmp_path_factory.mktemp("li"), eps_grid=[1.0, 4.0])


def test_registered_with_its_source():
    assert "li-mean-variance" in names() and "Li, Li, Sun, Gong and Li 2023" in get("li-mean-variance").source


def test_the_paper_column_is_the_fake_share_condition(run):
    pop = -1.0 + 2.0 * np.random.default_rng(2023).beta(2.0, 5.0, 200_000)
    mu, m2 = pop.mean(), np.mean(pop**2)
    g_h, g_t = 2 * m2 - 1, 2 * (0.15 + 0.09) - 1  # the second group's scale, 2 x^2 - 1
    for name, eps, c in (
        ("piecewise", 1.0, (math.exp(0.5) + 1) / (math.exp(0.5) - 1)),
        ("duchi", 4.0, (math.exp(4) + 1) / (math.exp(4) - 1)),
        ("duchi", 1.0, 1.0),  # IPA: the answers' range
    ):
        want = max((-0.3 - mu) / (c - mu), (g_h - g_t) / (g_h + c))
        short = "IPA" if c == 1.0 else "OPA"
        row = run.summary[
            (run.summary.quantity == f"least fake share for {short} on {name} to reach both targets")
            & (run.summary.eps == f"{eps:g}")
        ].iloc[0]
        assert row.paper == pytest.approx(want, rel=1e-12) and row.agrees == "yes"
    assert (run.summary.agrees.isin(["yes", ""])).all()


def test_the_measured_rows_are_the_means_of_the_data(run):
    data = pd.read_csv(run.out_dir / "data.csv")
    assert len(data) == 3 * 2 * 2 * 2
    here = data[(data.mechanism == "piecewise") & (data.eps == 1.0) & (data.attack == "output_mean_variance")]
    row = run.summary[
        (run.summary.quantity == "OPA on piecewise: poisoned variance, measured") & (run.summary.eps == "1")
    ].iloc[0]
    assert row.ours == pytest.approx(here.variance.mean(), rel=1e-9)


def test_files_are_written(run):
    assert {"data.csv", "summary.csv", "metadata.json", "li-mean-variance.png"} <= {p.name for p in run.files}
