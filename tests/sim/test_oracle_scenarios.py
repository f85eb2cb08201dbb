"""The shipped frequency-oracle scenarios: app_usage (OLH over 1,000 apps) and
oracle_comparison (five oracles on the same respondents), run at a reduced size."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.sim import load_scenario, parse_scenario, run_replication
from tests.sim.helpers import SCENARIOS


def _small(name: str, size: int):
    text = (SCENARIOS / f"{name}.toml").read_text()
    full = load_scenario(SCENARIOS / f"{name}.toml")
    return full, parse_scenario(text.replace(f"size = {full.spec.population.size:_}", f"size = {size}"), f"{name}.toml")


def test_shipped_oracle_scenarios_load_as_documented():
    app = load_scenario(SCENARIOS / "app_usage.toml")
    assert app.spec.population.size == 1_000_000 and len(app.labels) == 1000 and app.mechanism.name == "olh"
    assert app.mechanism.epsilon() == pytest.approx(2.0) and app.mechanism.g == 8
    cmp_ = load_scenario(SCENARIOS / "oracle_comparison.toml")
    assert [n for n, _ in cmp_.mechanisms] == ["GRR", "OUE", "OLH", "HR", "SS"] and cmp_.compared
    assert all(m.epsilon() == pytest.approx(1.0) for _, m in cmp_.mechanisms)


@pytest.mark.parametrize("name, size", [("app_usage", 20_000), ("oracle_comparison", 20_000)])
def test_a_small_run_estimates_within_the_exact_intervals(name, size):
    """Every final unbiased estimate within 6 exact standard errors of the truth (2 Phi(-6)
    = 2e-9 per estimate; at most 1,000 of them per run)."""
    _, sc = _small(name, size)
    rows = run_replication(sc, 0, 7)
    end = rows[rows["reason"] == "end"]
    for task, g in end.groupby("task"):
        if not task.startswith("frequency"):
            continue
        se = g[g["quantity"] == "std_error"]
        f = g[g["quantity"] == "frequency"]
        if (
            name == "app_usage"
        ):  # Norm-Sub is shown: check its distribution, and the unbiased one via its interval's centre
            est = f["estimate"].to_numpy()
            assert np.all(est >= 0) and abs(est.sum() - 1) < 1e-9
            centre = (f["ci_low"].to_numpy() + f["ci_high"].to_numpy()) / 2
            inside = (f["ci_low"].to_numpy() > 0) & (f["ci_high"].to_numpy() < 1)  # not clipped
            err = np.abs(centre - f["truth"].to_numpy())[inside]
            assert np.all(err <= 6 * se["theory"].to_numpy()[inside])
        else:
            assert np.all(np.abs(f["estimate"].to_numpy() - f["truth"].to_numpy()) <= 6 * se["theory"].to_numpy()), task
