"""Several mechanisms compared on the same respondents and network ([[mechanisms]]):
common random numbers (the same clients' answers, times, losses and latencies), one server
and one set of analyst tasks per mechanism, each estimate within its exact interval."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.sim.helpers import scenario_text

MECHS = """
[[mechanisms]]
kind = "randomized_response"
eps = 1.0
[[mechanisms]]
name = "tg"
kind = "truncated_geometric"
eps = 1.0
[[mechanisms]]
name = "rr2"
kind = "randomized_response"
eps = 2.0
"""


def _text(mode: str = "individual", loss: float = 0.1) -> str:
    text = scenario_text(
        size=40_000,
        mode=mode,
        loss=loss,
        arrivals='{ kind = "poisson", duration = 3.0 }',
        latency='{ kind = "exponential", mean = 0.3 }',
    )
    return text.replace('[mechanism]\nkind = "randomized_response"\neps = 1.0\n', "") + MECHS


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_common_random_numbers_and_exact_intervals(mode):
    sc = parse_scenario(_text(mode), "c.toml")
    assert [n for n, _ in sc.mechanisms] == ["randomized_response", "tg", "rr2"] and sc.compared
    rows = run_replication(sc, 0, 5)
    freq = rows[rows["quantity"] == "frequency"]
    assert set(freq["task"]) == {"frequency@randomized_response", "frequency@tg", "frequency@rr2"}
    # the same deliveries for every mechanism at every checkpoint: n_received is one column
    per = freq.groupby(["checkpoint", "task"])["n_received"].first().unstack()
    assert (per.nunique(axis=1) == 1).all()
    # every final estimate within 6 exact standard errors (2 Phi(-6) = 2e-9 per estimate)
    end = rows[rows["reason"] == "end"]
    for task, g in end.groupby("task"):
        if not task.startswith("frequency@"):
            continue
        f = g[g["quantity"] == "frequency"]
        se = g[g["quantity"] == "std_error"]["theory"].to_numpy()
        assert np.all(np.abs(f["estimate"].to_numpy() - f["truth"].to_numpy()) <= 6 * se), task


def test_a_single_mechanism_run_is_unchanged_by_the_comparison_machinery():
    text = scenario_text(size=5_000)
    a = run_replication(parse_scenario(text, "a.toml"), 0, 9)
    b = run_replication(parse_scenario(text, "a.toml"), 0, 9)
    assert a.equals(b) and set(a["task"]) == {"frequency", "engine"}


@pytest.mark.parametrize(
    "extra, key",
    [
        (
            '\n[[mechanisms]]\nkind = "randomized_response"\neps = 1.0\n[[mechanisms]]\nkind = '
            '"randomized_response"\neps = 2.0\n',
            "mechanisms[1].name",
        ),
        ('\n[[mechanisms]]\nname = 3\nkind = "randomized_response"\neps = 1.0\n', "mechanisms[0].name"),
        ('\n[[mechanisms]]\nkind = "randomized_response"\nepsilon = 1.0\n', "mechanisms[0].epsilon"),
    ],
)
def test_bad_comparisons_name_the_mechanism(extra, key):
    text = scenario_text().replace('[mechanism]\nkind = "randomized_response"\neps = 1.0\n', "") + extra
    with pytest.raises(
        LdpSimError, match=r"^c\.toml: " + key.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_scenario(text, "c.toml")
