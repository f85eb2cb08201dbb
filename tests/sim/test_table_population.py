"""Survey populations read from a CSV table (``[population] file``, ``column``): the shipped
ANES 1996 extract, tables used as is and resampled, the truth computed from the table,
seeds, the shipped scenario run small, aggregate mode, and every error in one line."""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ldpsim.cli import main
from ldpsim.errors import LdpSimError
from ldpsim.sim import load_scenario, parse_scenario, run_replication, run_scenario
from ldpsim.sim.table import Table, table_population
from tests.sim.helpers import SCENARIOS

DATA = SCENARIOS / "data" / "anes96.csv"
PARTY = [
    "Strong Democrat",
    "Weak Democrat",
    "Independent-Democrat",
    "Independent-Independent",
    "Independent-Republican",
    "Weak Republican",
    "Strong Republican",
]


def _csv_counts(column: str, path: Path = DATA) -> Counter:
    """The column's counts, computed here with the csv module alone."""
    with path.open(newline="", encoding="utf-8") as f:
        return Counter(row[column] for row in csv.DictReader(f))


def _text(
    population: str,
    *,
    mechanism: str = 'kind = "randomized_response"\neps = 1.0',
    arrivals: str = 'kind = "all_at_once"',
    mode: str = "individual",
    loss: float = 0.0,
    extra: str = "",
) -> str:
    return f"""
name = "table"
[population]
{population}
[mechanism]
{mechanism}
[arrivals]
{arrivals}
[network]
loss = {loss}
[analyst]
checkpoints = {{ every = 1.0 }}
{extra}
[simulation]
mode = "{mode}"
seed = 3
"""


def _anes(population: str, **kwargs) -> object:
    """A scenario on the shipped table, parsed as if it were a file in scenarios/."""
    return parse_scenario(_text(f'file = "data/anes96.csv"\n{population}', **kwargs), str(SCENARIOS / "t.toml"))


def _final(rows):
    end = rows[rows["reason"] == "end"]
    f = end[end["quantity"] == "frequency"]
    se = end[end["quantity"] == "std_error"]
    return f["category"].tolist(), f["estimate"].to_numpy(), f["truth"].to_numpy(), se["theory"].to_numpy()


# ----------------------------------------------------------------------------- the shipped data
def test_the_shipped_table_has_944_respondents_and_the_documented_columns():
    table = Table.read(DATA)
    assert table.rows == 944 and table.lines[0] == 2 and table.lines[-1] == 945
    readme = (SCENARIOS / "data" / "README.md").read_text()
    section = readme.split("## anes96.csv")[1].split("\n## ")[0]  # the README documents other tables after it
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert list(table.header) == documented
    assert all(all(v != "" for v in table.column(c)) for c in table.header)  # nothing blank
    assert Counter(table.column("party_id")) == _csv_counts("party_id")
    assert set(table.column("party_id")) == set(PARTY)
    assert len(set(table.column("income"))) == 24 and set(table.column("vote")) == {"Clinton", "Dole"}
    assert {int(v) for v in table.column("tv_news_days")} <= set(range(8))
    # every label of the README's table occurs in its column, and nothing else does
    for column in ("party_id", "self_lr", "education", "income", "vote"):
        line = next(x for x in readme.splitlines() if x.startswith(f"| `{column}` |"))
        labels = re.findall(r"`([^`]+)`", line.split("|")[3])
        assert set(table.column(column)) == set(labels), column


@pytest.mark.slow  # needs statsmodels (not a dependency): pip install statsmodels && python -m pytest -m slow
def test_the_conversion_reproduces_the_shipped_file(tmp_path, monkeypatch):
    """Provenance: scenarios/data/convert_anes96.py, run on statsmodels' copy, writes the
    shipped file byte for byte."""
    pytest.importorskip("statsmodels")
    import importlib.util

    spec = importlib.util.spec_from_file_location("convert_anes96", SCENARIOS / "data" / "convert_anes96.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "anes96.csv")
    with contextlib.redirect_stdout(io.StringIO()):
        module.main()
    assert (tmp_path / "anes96.csv").read_bytes() == DATA.read_bytes()


# ----------------------------------------------------------------------------- labels and truth
def test_labels_order_and_truth_come_from_the_table():
    counts = _csv_counts("party_id")
    sc = _anes(f'column = "party_id"\nlabels = {PARTY!r}'.replace("'", '"'))
    assert sc.labels == PARTY and sc.size == 944 and not sc.table.resample
    np.testing.assert_array_equal(sc.table.counts, [counts[a] for a in PARTY])
    np.testing.assert_allclose(sc.prior, [counts[a] / 944 for a in PARTY], rtol=1e-15)
    # without labels: sorted as text, or numerically when every value is a number
    assert _anes('column = "party_id"').labels == sorted(PARTY)
    days = _anes('column = "tv_news_days"')
    assert days.labels == [str(d) for d in range(8)]
    tv = _csv_counts("tv_news_days")
    np.testing.assert_allclose(days.prior, [tv[str(d)] / 944 for d in range(8)], rtol=1e-15)
    # a label absent from the table has truth 0
    extra = _anes('column = "vote"\nlabels = ["Clinton", "Dole", "Perot"]')
    votes = _csv_counts("vote")
    np.testing.assert_allclose(extra.prior, [votes["Clinton"] / 944, votes["Dole"] / 944, 0.0])


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_used_as_is_every_row_is_one_client(mode):
    """No size: each of the 944 rows answers once, whatever the arrivals. At eps = 50
    randomized response almost never lies (P(lie) = 6/(e^50 + 6)), so without loss the
    estimates are the table's shares exactly."""
    counts = _csv_counts("party_id")
    sc = _anes(
        'column = "party_id"',
        mechanism='kind = "randomized_response"\neps = 50.0',
        arrivals='kind = "poisson"\nduration = 3.0',
        mode=mode,
    )
    rows = run_replication(sc, 0, 11)
    cats, est, truth, _ = _final(rows)
    engine = rows[rows["task"] == "engine"].set_index("quantity")["estimate"]
    assert engine["clients"] == 944 and engine["received"] == 944
    np.testing.assert_allclose(est * 944, [counts[c] for c in cats], atol=1e-9)
    np.testing.assert_allclose(truth, [counts[c] / 944 for c in cats], rtol=1e-15)


def test_the_rows_are_handed_out_in_order():
    table = Table.read(DATA)
    pop = table_population(table, "party_id", PARTY, resample=False)
    rng = np.random.default_rng(0)
    parts = [pop.inputs(a, b - a, rng) for a, b in [(0, 100), (100, 101), (101, 944)]]
    np.testing.assert_array_equal(np.concatenate(parts), [PARTY.index(v) for v in table.column("party_id")])


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_resampled_answers_follow_the_table_distribution(mode):
    """With size: rows drawn with replacement, so the answers' shares are within 6 binomial
    standard errors of the table's (eps = 50: the reports are the answers)."""
    n = 200_000
    sc = _anes(f'column = "party_id"\nsize = {n}', mechanism='kind = "randomized_response"\neps = 50.0', mode=mode)
    assert sc.size == n and sc.table.resample and sc.table.rows == 944
    _, est, truth, _ = _final(run_replication(sc, 0, 5))
    assert np.all(np.abs(est - truth) <= 6 * np.sqrt(truth * (1 - truth) / n))
    assert not np.allclose(est, truth, atol=1e-9)  # a resample, not the table


def test_the_same_seed_gives_the_same_bytes_whatever_the_workers(tmp_path):
    sc = _anes('column = "self_lr"\nsize = 5000', arrivals='kind = "poisson"\nduration = 2.0', loss=0.1)
    sc = sc.with_overrides(replications=2)
    one = run_scenario(sc, seed=42, out=tmp_path / "one", progress=False)
    two = run_scenario(sc, seed=42, out=tmp_path / "two", progress=False, workers=2)
    other = run_scenario(sc, seed=43, out=tmp_path / "other", progress=False)
    assert (one.run_dir / "results.csv").read_bytes() == (two.run_dir / "results.csv").read_bytes()
    assert (one.run_dir / "results.csv").read_bytes() != (other.run_dir / "results.csv").read_bytes()
    # the run keeps the table it read next to its scenario.toml, so --resume finds it
    assert (one.run_dir / "data" / "anes96.csv").read_bytes() == DATA.read_bytes()


# ----------------------------------------------------------------------------- the shipped scenario
def test_the_shipped_scenario_loads_as_documented():
    sc = load_scenario(SCENARIOS / "anes96_party.toml")
    assert sc.size == 1_000_000 and sc.spec.population.size == 1_000_000
    assert sc.labels == PARTY and sc.table.resample and sc.table.rows == 944 and sc.table.column == "party_id"
    assert sc.mechanism.name == "randomized_response" and sc.mechanism.epsilon() == pytest.approx(1.0)
    counts = _csv_counts("party_id")
    np.testing.assert_allclose(sc.prior, [counts[a] / 944 for a in PARTY], rtol=1e-15)
    assert "anes96_party.toml" in (SCENARIOS / "README.md").read_text()


@pytest.mark.parametrize("mode, size", [("individual", 20_000), ("aggregate", 1_000_000)])
def test_the_shipped_scenario_estimates_within_the_exact_intervals(mode, size):
    """Every final estimate within 6 exact standard errors of the real answers' shares."""
    text = (SCENARIOS / "anes96_party.toml").read_text()
    assert "size = 1_000_000" in text and 'mode = "individual"' in text
    text = text.replace("size = 1_000_000", f"size = {size}").replace('mode = "individual"', f'mode = "{mode}"')
    sc = parse_scenario(text, str(SCENARIOS / "anes96_party.toml"))
    cats, est, truth, se = _final(run_replication(sc, 0, 7))
    assert cats == PARTY
    counts = _csv_counts("party_id")
    np.testing.assert_allclose(truth, [counts[c] / 944 for c in cats], rtol=1e-15)
    assert np.all(np.abs(est - truth) <= 6 * se)


# ----------------------------------------------------------------------------- errors
def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD_CSV = "id,answer,other\n1,yes,x\n2,no,y\n3,yes,z\n"

CASES = {
    "missing file": ("nope.csv", None, 'column = "answer"', ["population.file", "nope.csv", "no such file"]),
    "ragged row": (
        "t.csv",
        "id,answer,other\n1,yes,x\n2,no\n",
        'column = "answer"',
        ["population.file", "t.csv, line 3", "got 2 fields, expected 3"],
    ),
    "malformed quote": (
        "t.csv",
        'id,answer,other\n1,"yes"x,x\n',
        'column = "answer"',
        ["population.file", "t.csv, line 2", "malformed CSV"],
    ),
    "empty file": ("t.csv", "", 'column = "answer"', ["population.file", "t.csv", "empty file"]),
    "duplicate header": (
        "t.csv",
        "id,answer,answer\n1,a,b\n",
        'column = "answer"',
        ["t.csv, line 1", "'answer' appears twice"],
    ),
    "missing column": (
        "t.csv",
        GOOD_CSV,
        'column = "answr"',
        ["population.column", "got column 'answr'", "t.csv", "id, answer, other"],
    ),
    "no rows": (
        "t.csv",
        "id,answer,other\n",
        'column = "answer"',
        ["population.column", "t.csv, column 'answer'", "no values", "no rows"],
    ),
    "all blank dropped": (
        "t.csv",
        "id,answer\n1,\n2, \n",
        'column = "answer"\nmissing = "drop"',
        ["t.csv, column 'answer'", "no values", "2 blank values left out"],
    ),
    "one value": (
        "t.csv",
        "id,answer\n1,yes\n2,yes\n",
        'column = "answer"',
        ["t.csv, column 'answer'", "one distinct value,", "population.labels"],
    ),
    "outside the labels": (
        "t.csv",
        GOOD_CSV.replace("3,yes", "3,maybe"),
        'column = "answer"\nlabels = ["yes", "no"]',
        [
            "population.column",
            "t.csv, line 4 (row 3), column 'answer'",
            "got a value outside population.labels",
            "'yes', 'no'",
        ],
    ),
    "blank value": (
        "t.csv",
        GOOD_CSV.replace("2,no", "2,"),
        'column = "answer"',
        ["t.csv, line 3 (row 2), column 'answer'", "blank value", 'missing = "drop"'],
    ),
    "not utf-8": ("t.csv", None, 'column = "answer"', ["population.file", "cannot read t.csv", "utf-8"]),
    "a folder": ("sub", None, 'column = "answer"', ["population.file", "cannot read sub"]),
    "no column key": ("t.csv", GOOD_CSV, "", ["population.column", "got nothing"]),
    "file and distribution": (
        "t.csv",
        GOOD_CSV,
        'column = "answer"\ndistribution = [0.5, 0.5]',
        ["population.distribution", "expected no 'distribution' with 'file'"],
    ),
    "size zero": ("t.csv", GOOD_CSV, 'column = "answer"\nsize = 0', ["population.size"]),
    "bad missing": ("t.csv", GOOD_CSV, 'column = "answer"\nmissing = "skip"', ["population.missing"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_table_error_is_one_line_naming_file_line_and_column(case, tmp_path):
    name, content, population, expected = CASES[case]
    if content is not None:
        _write(tmp_path, name, content)
    elif case == "not utf-8":
        (tmp_path / name).write_bytes(b"id,answer\n1,\xff\xfe\n")
    elif case == "a folder":
        (tmp_path / name).mkdir()
    scenario = _write(tmp_path, "s.toml", _text(f'file = "{name}"\n{population}'))
    with pytest.raises(LdpSimError) as info:
        load_scenario(scenario)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{scenario}: "), message
    for part in expected:
        assert part in message, (part, message)


@pytest.mark.parametrize(
    "population, expected",
    [
        ('column = "answer"\nlabels = ["a", "b"]\ndistribution = [0.5, 0.5]\nsize = 10', "population.column"),
        ('labels = ["a", "b"]\ndistribution = [0.5, 0.5]', "population.size"),
    ],
)
def test_table_keys_without_a_table_are_refused(population, expected, tmp_path):
    with pytest.raises(LdpSimError, match=re.escape(expected)):
        load_scenario(_write(tmp_path, "s.toml", _text(population)))


def test_blank_values_can_be_dropped(tmp_path):
    _write(tmp_path, "t.csv", "id,answer\n1,yes\n2,\n3,no\n4,yes\n")
    sc = load_scenario(_write(tmp_path, "s.toml", _text('file = "t.csv"\ncolumn = "answer"\nmissing = "drop"')))
    assert sc.labels == ["no", "yes"] and sc.size == 3 and sc.table.dropped == 1
    np.testing.assert_allclose(sc.prior, [1 / 3, 2 / 3])


def test_the_command_line_refuses_a_bad_table_with_exit_2(tmp_path):
    _write(tmp_path, "t.csv", "id,answer\n1,yes\n2,no,extra\n")
    scenario = _write(tmp_path, "s.toml", _text('file = "t.csv"\ncolumn = "answer"'))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", str(scenario), "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and "t.csv, line 3" in lines[0] and "got 3 fields, expected 2" in lines[0]
    assert not (tmp_path / "run").exists()
