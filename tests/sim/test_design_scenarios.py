"""Scenario files with a survey design (``[population] weight, strata, psu``): the shipped
NHANES II scenario gives svy's weighted shares and design standard errors as its truth
(tests/analyst/test_survey_design.py holds svy's numbers), and every misuse is refused in
one line naming the key."""

from __future__ import annotations

import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import load_scenario, parse_scenario, run_replication
from tests.analyst.test_survey_design import SVY
from tests.sim.helpers import SCENARIOS


def test_the_nhanes_scenario_states_svys_numbers_as_its_truth_and_design_error():
    sc = load_scenario(str(SCENARIOS / "nhanes2.toml"))
    assert sc.questions.design.summary()["psus"] == 62 and len(sc.questions.design.strata) == 31
    rows = run_replication(sc, 0, 1)
    design = rows[rows["task"].str.endswith(":design")]
    for (question, answer), (share, se) in SVY.items():
        mine = design[(design["task"] == f"{question}:design") & (design["category"] == answer)]
        assert mine[mine["quantity"] == "weighted"]["truth"].iloc[-1] == pytest.approx(share, rel=1e-12)
        assert mine[mine["quantity"] == "design_se"]["theory"].iloc[-1] == pytest.approx(se, rel=1e-9)


def _text(population: str, mode: str = "individual", question: str = "") -> str:
    question = question or 'name = "answer"\nlabels = ["a", "b"]\nmechanism = { kind = "randomized_response" }'
    return f"""
name = "d"
[population]
{population}
[budget]
total = 1.0
strategy = "split"
[[questions]]
{question}
[arrivals]
kind = "all_at_once"
[simulation]
mode = "{mode}"
end = 1.0
tick = 1.0
"""


ROWS = "answer,w,h,c\na,1.5,x,1\nb,2,x,2\na,1,y,1\nb,3,y,2\n"


@pytest.mark.parametrize(
    ("population", "mode", "rows", "words"),
    [
        ('size = 10\nweight = "w"', "individual", ROWS, "weight: got 'w', expected no 'weight' without 'file'"),
        ('file = "t.csv"\nsize = 10\nweight = "w"', "individual", ROWS, "size: got 10, expected no size with 'weight'"),
        ('file = "t.csv"\nweight = "w"', "aggregate", ROWS, "simulation.mode: got 'aggregate' with population.weight"),
        ('file = "t.csv"\nweight = "nope"', "individual", ROWS, "population.weight: .*nope"),
        (
            'file = "t.csv"\nweight = "w"',
            "individual",
            ROWS.replace("1.5", "-1"),
            r"population.weight: .*got '-1', expected a positive finite number",
        ),
        (
            'file = "t.csv"\nweight = "w"',
            "individual",
            ROWS.replace("1.5", "nan"),
            "population.weight: .*expected a positive finite number",
        ),
        (
            'file = "t.csv"\nstrata = "h"\npsu = "c"',
            "individual",
            ROWS.replace("y,2", "y,1"),
            "population.psu: got a single PSU in stratum 'y'",
        ),
        ('file = "t.csv"\nstrata = "h"', "individual", ROWS.replace(",x,", ",,"), "population.strata: .*blank"),
    ],
)
def test_misuse_is_refused_in_one_line_naming_the_key(population, mode, rows, words, tmp_path):
    (tmp_path / "t.csv").write_text(rows)
    with pytest.raises(LdpSimError, match=words) as info:
        parse_scenario(_text(population, mode), str(tmp_path / "s.toml"))
    assert "\n" not in str(info.value)


def test_without_strata_each_respondent_is_its_own_psu_in_one_stratum(tmp_path):
    (tmp_path / "t.csv").write_text(ROWS)
    sc = parse_scenario(_text('file = "t.csv"\nweight = "w"'), str(tmp_path / "s.toml"))
    d = sc.questions.design
    assert d.strata == ("",) and d.cells == 4 and list(d.weight) == [1.5, 2.0, 1.0, 3.0]
    rows = run_replication(sc, 0, 1)
    mine = rows[(rows["task"] == "answer:design") & (rows["quantity"] == "weighted")]
    assert set(mine["category"]) == {"a", "b"}  # no stratum rows with a single stratum
    assert mine.set_index("category").loc["a", "truth"] == pytest.approx(2.5 / 7.5)


def test_the_shipped_design_table_has_the_documented_columns_and_design():
    import csv
    import re

    with (SCENARIOS / "data" / "nhanes2.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    readme = (SCENARIOS / "data" / "README.md").read_text()
    section = readme.split("## nhanes2.csv")[1].split("\n## ")[0]
    assert list(rows[0]) == re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert len(rows) == 10337 and sum(r["diabetes"] == "" for r in rows) == 2
    pairs = {(r["stratum"], r["psu"]) for r in rows}
    assert len(pairs) == 62 and len({s for s, _ in pairs}) == 31
