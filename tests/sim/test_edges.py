"""Edge cases of the timeline: the end, tick edges, arrivals after the end, overrides,
labels that look like numbers."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim import LdpSimError
from ldpsim.sim import parse_scenario, run_replication, run_scenario
from tests.sim.helpers import SCENARIOS, make, scenario_text


def end_counts(sc, seed=1):
    df = run_replication(sc, 0, seed)
    e = df[df["task"] == "engine"].set_index("quantity")["estimate"]
    f = df[(df["quantity"] == "frequency") & (df["category"] == df["category"].iloc[0])]
    return e, f.set_index("time")["n_received"]


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_reports_after_the_end_are_in_flight(mode):
    """Second wave arrives at 2.4 + 0.2 = 2.6 > end = 2.5 (the tick does not divide the end)."""
    sc = make(
        size=1000,
        mode=mode,
        arrivals='{ kind = "waves", times = [0.0, 2.4], fractions = [0.5, 0.5] }',
        latency='{ kind = "constant", value = 0.2 }',
        end=2.5,
        tick=0.4,
    )
    e, received = end_counts(sc)
    assert received.iloc[-1] == 500 and e["in_flight"] == 500 and e["received"] == 500


@pytest.mark.parametrize("at, latency, every", [(0.1, 0.2, 0.1), (0.2, 0.1, 0.3), (0.3, 0.9, 0.1), (0.7, 0.0, 0.7)])
def test_deliveries_on_a_tick_edge_agree_between_modes(at, latency, every):
    """Deterministic deliveries landing on a checkpoint up to floating-point error are
    counted at that checkpoint in both modes."""
    counts = {}
    for mode in ("individual", "aggregate"):
        sc = make(
            size=100,
            mode=mode,
            arrivals=f'{{ kind = "all_at_once", at = {at} }}',
            latency=f'{{ kind = "constant", value = {latency} }}',
            checkpoints=f"{{ every = {every} }}",
            end=3.0,
        )
        counts[mode] = end_counts(sc)[1]
    assert counts["individual"].equals(counts["aggregate"])
    t = round(at + latency, 10)
    reached = counts["individual"][np.isclose(counts["individual"].index, t)]
    assert reached.empty or reached.iloc[0] == 100


def test_arrivals_long_after_the_end_cost_nothing():
    sc = make(size=10**6, mode="aggregate", arrivals='{ kind = "poisson", duration = 1e7 }', end=1.0, tick=0.001)
    e, _ = end_counts(sc)
    assert e["clients"] == 10**6 and e["received"] + e["in_flight"] + e["lost"] == 10**6
    assert e["received"] < 10  # about 0.1 expected


def test_run_scenario_honours_overrides(tmp_path):
    sc = make(size=5000, mode="individual").with_overrides(mode="aggregate", replications=2)
    res = run_scenario(sc, out=tmp_path / "r", progress=False)
    direct = run_replication(sc, 1, res.seed)
    got = res.results[res.results["replication"] == 1]
    np.testing.assert_allclose(got["estimate"].to_numpy(float), direct["estimate"].to_numpy(float), equal_nan=True)


def test_labels_that_look_like_numbers_stay_text(tmp_path):
    text = scenario_text(labels='["1", "01", "1.0", ""]')
    path = tmp_path / "s.toml"
    path.write_text(text)
    res = run_scenario(path, out=tmp_path / "r", progress=False)
    cats = res.results[res.results["quantity"] == "frequency"]["category"].unique().tolist()
    assert cats == ["1", "01", "1.0", ""]


def test_every_reports_beyond_numpy_limits_is_a_clear_error():
    text = (SCENARIOS / "survey_large.toml").read_text().replace("size = 10_000_000_000", "size = 1_000_000_000_000")
    text = text.replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0, every_reports = 1_000_000_000 }")
    # refused when the file is loaded, before any run directory exists
    with pytest.raises(
        LdpSimError, match="^big.toml: analyst.checkpoints.every_reports: got 1000000000, expected no report-count"
    ):
        parse_scenario(text, "big.toml")
