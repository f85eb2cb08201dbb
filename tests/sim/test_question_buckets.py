"""A categorical question made from a numeric column by buckets (a histogram of the numbers
through a frequency oracle): labels, truth counted here from the CSV file itself, a run
within the exact intervals, and the errors in one line."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.sim.helpers import SCENARIOS

EDGES = [18, 30, 45, 65, 100]


def _text(buckets: str = str(EDGES), size: int = 20_000, extra: str = "") -> str:
    return f"""
name = "ages"
[population]
file = "data/anes96.csv"
size = {size}
[budget]
total = 2.0
strategy = "split"
[[questions]]
name = "age_group"
column = "age"
buckets = {buckets}
mechanism = {{ kind = "randomized_response" }}
{extra}
[[questions]]
name = "vote"
mechanism = {{ kind = "randomized_response" }}
[arrivals]
kind = "all_at_once"
[simulation]
seed = 3
end = 1.0
tick = 1.0
"""


def _parse(text: str):
    return parse_scenario(text, str(SCENARIOS / "ages.toml"))


def test_buckets_are_the_answers_and_the_truth_is_counted_from_the_file():
    sc = _parse(_text())
    q = sc.questions.questions[0]
    assert q.labels == ["[18, 30)", "[30, 45)", "[45, 65)", "[65, 100]"]
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        ages = [float(row["age"]) for row in csv.DictReader(f)]
    counts = [sum(lo <= a < hi for a in ages) for lo, hi in zip(EDGES, EDGES[1:])]
    counts[-1] += sum(a == EDGES[-1] for a in ages)  # the last bucket is closed
    assert np.allclose(q.prior, np.array(counts) / len(ages), rtol=0, atol=1e-15)


def test_a_run_estimates_the_histogram_within_the_exact_intervals():
    """Every bucket within 6 exact standard errors of its truth (2 Phi(-6) = 2e-9 each)."""
    rows = run_replication(_parse(_text()), 0, 11)
    end = rows[(rows["reason"] == "end") & (rows["task"] == "age_group:frequency")]
    est = end[end["quantity"] == "frequency"]
    se = end[end["quantity"] == "std_error"]
    assert len(est) == 4
    assert np.all(np.abs(est["estimate"].to_numpy() - est["truth"].to_numpy()) <= 6 * se["theory"].to_numpy())


@pytest.mark.parametrize(
    "buckets, extra, key, part",
    [
        ("[18, 30, 30, 100]", "", "questions[0].buckets", "increasing"),
        ("[20, 40, 100]", "", "questions[0].column", "line"),  # an age below 20 in the file
        (str(EDGES), 'labels = ["a", "b", "c", "d"]', "questions[0].labels", "buckets"),
    ],
)
def test_bad_buckets_are_one_line(buckets, extra, key, part):
    with pytest.raises(LdpSimError) as err:
        _parse(_text(buckets, extra=extra))
    msg = str(err.value)
    assert key in msg and part in msg and "\n" not in msg, msg
