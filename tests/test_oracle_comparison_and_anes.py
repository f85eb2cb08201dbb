"""Issue 34, items 14, 15 and 20: what ``oracle_comparison`` lists as its largest estimates,
intervals that hold their own estimates, and the labels of the ANES extract.

- 14: a run with several tasks (the five oracles) prints and writes, for every task, that
  task's own 20 largest estimates, as its text says (it printed the union of the five top
  lists: 36 answers for every oracle).
- 15: one clipping rule for an estimate and its interval: the unbiased estimates (and
  their intervals) are never clipped, so each interval holds its estimate; the estimators
  that return a distribution get the unbiased interval intersected with [0, 1].
- 20: every label of ``scenarios/data/anes96.csv`` is the codebook's label of the source's
  code. The codebook below is that of the R package faraway's ``nes96`` (the same 944
  respondents, value for value) and the ANES seven-category summary of education; the
  counts per code were tabulated from statsmodels' ``anes96.csv`` (the converter's
  source), not from the shipped file.
"""

from __future__ import annotations

import ast
import csv
import math
import re
import tomllib
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from ldpsim.analyst import confidence_intervals
from ldpsim.mechanisms import randomized_response
from ldpsim.sim import parse_scenario, run_replication
from tests.sim.helpers import SCENARIOS

DATA = SCENARIOS / "data" / "anes96.csv"


def _oracle_comparison(size: int, replications: int = 1) -> str:
    text = (SCENARIOS / "oracle_comparison.toml").read_text()
    assert "size = 200_000" in text and "seed = 20261202" in text
    return text.replace("size = 200_000", f"size = {size}").replace(
        "seed = 20261202", f"seed = 20261202\nreplications = {replications}"
    )


# ----------------------------------------------------------------------------- item 14
@pytest.mark.parametrize("replications", [1, 2])
def test_oracle_comparison_lists_each_oracles_own_20_largest_estimates(tmp_path, cli, replications):
    """The run prints, per oracle, exactly the 20 answers with that oracle's largest
    estimates at the end of replication 0 (not the union over the oracles), says so, and
    summary.md's tables hold the same 20 answers per oracle."""
    path = tmp_path / "cmp.toml"
    path.write_text(_oracle_comparison(20_000, replications))
    r = cli("run", str(path), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    results = pd.read_csv(tmp_path / "run" / "results.csv")
    end = results[(results["quantity"] == "frequency") & (results["reason"] == "end") & (results["replication"] == 0)]
    tasks = list(dict.fromkeys(end["task"]))
    assert len(tasks) == 5
    top = {
        t: set(g.sort_values("estimate", ascending=False, kind="stable")["category"].head(20))
        for t, g in end.groupby("task")
    }
    printed: dict[str, list[str]] = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(frequency@\w+)\s+(answer \d+)\s", line)
        if m:
            printed.setdefault(m.group(1), []).append(m.group(2))
    assert list(printed) == tasks
    for task in tasks:
        assert len(printed[task]) == 20 and set(printed[task]) == top[task], task
    assert "the 20 answers with the largest estimates of each task" in r.stdout
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "The 20 largest estimates of each task" in md
    tables = [t for t in re.split(r"\n\n", md) if t.startswith("| task | category |")]
    assert len(tables) == (2 if replications > 1 else 1)
    for table in tables:
        rows = [line.split(" | ")[:2] for line in table.splitlines()[2:]]
        shown = {t: {c for task, c in rows if task.lstrip("| ") == t} for t in tasks}
        counts = Counter(task.lstrip("| ") for task, _ in rows)
        assert all(counts[t] == 20 and shown[t] == top[t] for t in tasks), counts


# ----------------------------------------------------------------------------- item 15
def test_every_interval_of_an_oracle_comparison_run_holds_its_own_estimate():
    """At every checkpoint, for every oracle and answer: ci_low <= estimate <= ci_high
    (deterministic; the run has negative estimates, which clipped intervals left out)."""
    rows = run_replication(parse_scenario(_oracle_comparison(20_000), "cmp.toml"), 0, 7)
    f = rows[(rows["quantity"] == "frequency") & rows["estimate"].notna()]
    assert len(f) > 1000 and (f["estimate"] < 0).mean() > 0.05  # the case that went wrong
    assert ((f["ci_low"] <= f["estimate"]) & (f["estimate"] <= f["ci_high"])).all()
    assert (f["ci_low"] < 0).any()


@pytest.mark.parametrize("method", ["normal", "conservative", "sequence"])
@pytest.mark.parametrize("simultaneous", [False, True])
def test_confidence_intervals_are_not_clipped_and_hold_a_negative_estimate(method, simultaneous):
    """4-ary randomized response at eps = 1, 1,000 reports of which output 3 is rarer than
    the noise alone makes it: its unbiased estimate is negative, and every interval is the
    estimate plus and minus one half-width, not intersected with [0, 1]."""
    rr = randomized_response(4, 1.0)
    counts = np.array([400, 300, 200, 100])  # output 3 is rarer than the noise alone makes it
    a, b = math.e / (math.e + 3), 1 / (math.e + 3)
    est = (counts / counts.sum() - b) / (a - b)  # closed form of the inversion
    assert est[3] < 0
    ci = confidence_intervals(rr, counts, method=method, simultaneous=simultaneous)
    np.testing.assert_allclose(ci["estimate"], est, rtol=0, atol=1e-12)
    lo, hi = ci["ci_low"].to_numpy(), ci["ci_high"].to_numpy()
    assert np.all((lo <= est) & (est <= hi))
    np.testing.assert_allclose(hi - est, est - lo, rtol=1e-12)  # symmetric: nothing clipped
    assert lo[3] < 0


def _single(mechanism: str = "eps = 1.0", *, estimator: str = "inversion", network: str = "", analyst: str = "") -> str:
    return f"""
name = "rare"
[population]
labels = ["a", "b", "c", "d", "e"]
distribution = [0.55, 0.3, 0.13, 0.015, 0.005]
size = 3000
[mechanism]
kind = "randomized_response"
{mechanism}
[arrivals]
kind = "poisson"
duration = 4.0
{network}
[analyst]
{analyst}
checkpoints = {{ every = 1.0 }}
tasks = [{{ kind = "frequency", estimator = "{estimator}" }}]
[simulation]
mode = "aggregate"
seed = 5
"""


def _rows_with_intervals(text: str, reps: int = 20) -> pd.DataFrame:
    sc = parse_scenario(text, "rare.toml")
    rows = pd.concat([run_replication(sc, r, 100 + r) for r in range(reps)])
    return rows[rows["ci_low"].notna() & rows["estimate"].notna()]


@pytest.mark.parametrize(
    "text, quantities",
    [
        (_single("tiers = [{ eps = 0.5, share = 0.3 }, { eps = 2.0, share = 0.7 }]"), {"frequency", "naive_frequency"}),
        (
            _single(network="[network]\nloss = { by_answer = { e = 0.5 }, default = 0.1 }", analyst="reweight = true"),
            {"reweighted"},
        ),
    ],
    ids=["tiers", "reweighted"],
)
def test_unbiased_estimates_of_tiers_and_reweighting_lie_in_their_intervals(text, quantities):
    """Privacy tiers (combined and naive estimates) and answer-dependent loss (the
    reweighted estimate): unbiased estimates, some negative, each inside its interval."""
    rows = _rows_with_intervals(text)
    rows = rows[rows["quantity"].isin(quantities)]
    assert set(rows["quantity"]) == quantities
    assert (rows["estimate"] < 0).any()
    assert ((rows["ci_low"] <= rows["estimate"]) & (rows["estimate"] <= rows["ci_high"])).all()


@pytest.mark.parametrize("estimator", ["projected", "norm_sub", "base_cut", "em"])
def test_estimators_on_the_simplex_get_the_unbiased_interval_clipped_to_0_1(estimator):
    """The rule's other half: an estimate in [0, 1] is shown with the unbiased estimate's
    interval intersected with [0, 1], the same clip as its own."""
    rows = _rows_with_intervals(_single(estimator=estimator), reps=5)
    f = rows[rows["quantity"] == "frequency"]
    assert (f["estimate"] >= 0).all() and (f["ci_low"] >= 0).all() and (f["ci_high"] <= 1).all()
    plain = _rows_with_intervals(_single(), reps=5)
    p = plain[plain["quantity"] == "frequency"]
    np.testing.assert_allclose(f["ci_low"], np.clip(p["ci_low"], 0, 1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(f["ci_high"], np.clip(p["ci_high"], 0, 1), rtol=0, atol=1e-15)
    assert (p["ci_low"] < 0).any()  # the inversion rows are not clipped


# ----------------------------------------------------------------------------- item 20
#: code -> label, as the codebook gives them (faraway's nes96 levels, in order; the ANES
#: seven-category summary of education: 5 is a junior or community college degree, 6 a BA
#: level degree, 7 an advanced degree). PID and vote are coded from 0, the others from 1.
LEFT_RIGHT = [
    "Extremely liberal",
    "Liberal",
    "Slightly liberal",
    "Moderate",
    "Slightly conservative",
    "Conservative",
    "Extremely conservative",
]
CODEBOOK = {
    "party_id": dict(
        enumerate(
            [
                "Strong Democrat",
                "Weak Democrat",
                "Independent-Democrat",
                "Independent-Independent",
                "Independent-Republican",
                "Weak Republican",
                "Strong Republican",
            ]
        )
    ),
    "self_lr": dict(enumerate(LEFT_RIGHT, start=1)),
    "clinton_lr": dict(enumerate(LEFT_RIGHT, start=1)),
    "dole_lr": dict(enumerate(LEFT_RIGHT, start=1)),
    "education": dict(
        enumerate(
            [
                "8 grades or less",
                "Some high school",
                "High school graduate",
                "Some college",
                "Associate degree",
                "Bachelor's degree",
                "Advanced degree",
            ],
            start=1,
        )
    ),
    "income": dict(
        enumerate(
            [
                "None or less than $2,999",
                "$3,000-$4,999",
                "$5,000-$6,999",
                "$7,000-$8,999",
                "$9,000-$9,999",
                "$10,000-$10,999",
                "$11,000-$11,999",
                "$12,000-$12,999",
                "$13,000-$13,999",
                "$14,000-$14,999",
                "$15,000-$16,999",
                "$17,000-$19,999",
                "$20,000-$21,999",
                "$22,000-$24,999",
                "$25,000-$29,999",
                "$30,000-$34,999",
                "$35,000-$39,999",
                "$40,000-$44,999",
                "$45,000-$49,999",
                "$50,000-$59,999",
                "$60,000-$74,999",
                "$75,000-$89,999",
                "$90,000-$104,999",
                "$105,000 and over",
            ],
            start=1,
        )
    ),
    "vote": dict(enumerate(["Clinton", "Dole"])),
}
#: respondents per code in statsmodels' anes96.csv (PID, selfLR, ClinLR, DoleLR, educ, income, vote)
SOURCE_COUNTS = {
    "party_id": {0: 200, 1: 180, 2: 108, 3: 37, 4: 94, 5: 150, 6: 175},
    "self_lr": {1: 16, 2: 103, 3: 147, 4: 256, 5: 170, 6: 218, 7: 34},
    "clinton_lr": {1: 109, 2: 317, 3: 236, 4: 160, 5: 67, 6: 36, 7: 19},
    "dole_lr": {1: 13, 2: 31, 3: 43, 4: 87, 5: 195, 6: 460, 7: 115},
    "education": {1: 13, 2: 52, 3: 248, 4: 187, 5: 90, 6: 227, 7: 127},
    "income": {
        1: 19,
        2: 12,
        3: 17,
        4: 19,
        5: 18,
        6: 13,
        7: 11,
        8: 17,
        9: 10,
        10: 15,
        11: 23,
        12: 35,
        13: 26,
        14: 39,
        15: 68,
        16: 70,
        17: 62,
        18: 48,
        19: 51,
        20: 100,
        21: 103,
        22: 53,
        23: 47,
        24: 68,
    },
    "vote": {0: 551, 1: 393},
}


def _column(name: str) -> list[str]:
    with DATA.open(newline="", encoding="utf-8") as f:
        return [row[name] for row in csv.DictReader(f)]


@pytest.mark.parametrize("column", list(CODEBOOK))
def test_anes_labels_are_the_codebooks_labels_of_the_source_codes(column):
    """Each label occurs as often as the source's code that the codebook gives it: for
    education, 227 respondents with a BA level degree (code 6) and 127 with an advanced
    degree (code 7), not 'Master's degree' and 'PhD'."""
    want = {CODEBOOK[column][code]: n for code, n in SOURCE_COUNTS[column].items()}
    assert sum(want.values()) == 944
    assert Counter(_column(column)) == want


def test_the_converter_scenarios_and_readme_name_the_education_levels_as_the_codebook():
    tree = ast.parse((SCENARIOS / "data" / "convert_anes96.py").read_text())
    lists = {
        t.id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name) and isinstance(node.value, ast.List)
    }
    levels = list(CODEBOOK["education"].values())
    assert lists["EDUCATION"] == levels
    for name in ("anes96.toml", "anes96_crosstab.toml"):
        spec = tomllib.loads((SCENARIOS / name).read_text())
        found = [q["labels"] for q in spec.get("questions", []) if q.get("column", q.get("name")) == "education"]
        assert found == [levels], name
    readme = (SCENARIOS / "data" / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith("| `education` |"))
    assert re.findall(r"`([^`]+)`", line.split("|")[3]) == levels
