"""The reports' tables and text (issue 34): labels that are distinct strings but equal
after Unicode normalisation, one number format per column kind, legends, plurals,
suggestions for unknown names, wrapped quantity names, figure axes and titles, and the
HTML page's wide tables."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pandas as pd
import pytest

# distinct strings that Python identifiers (NFKC) would make equal: the ligature "ﬁ" and
# "fi", and "café" composed (NFC) and decomposed (NFD)
CAFE_NFC = unicodedata.normalize("NFC", "caf\u00e9")
CAFE_NFD = unicodedata.normalize("NFD", "caf\u00e9")
CLASH = ["\ufb01", "fi", CAFE_NFC, CAFE_NFD]


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join('"' + s + '"' for s in items) + "]"


def _survey_toml(labels: list[str]) -> str:
    return f"""
name = "clash"
[population]
labels = {_toml_list(labels)}
distribution = [0.4, 0.3, 0.2, 0.1]
size = 2000
[mechanism]
kind = "randomized_response"
eps = 1.0
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
mode = "aggregate"
replications = 2
seed = 1
"""


def _collection_toml(labels: list[str]) -> str:
    return f"""
kind = "collection"
name = "clash_collection"
[population]
labels = {_toml_list(labels)}
distribution = [0.4, 0.3, 0.2, 0.1]
size = 2000
[collection]
periods = 3
schedule = {{ kind = "every_period" }}
change = {{ kind = "none" }}
delta = 1e-6
[mechanism]
kind = "randomized_response"
eps = 1.0
[[policies]]
name = "plain"
kind = "plain"
[network]
latency = {{ kind = "exponential", mean = 0.01 }}
loss = 0.0
[simulation]
seed = 17
replications = 1
"""


def _run(cli, tmp_path: Path, text: str) -> Path:  # type: ignore[no-untyped-def]
    (tmp_path / "s.toml").write_text(text, encoding="utf-8")
    proc = cli("run", "s.toml", "--out", "out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "out"


# ---------------------------------------------------------------- item 7: labels
def test_clashing_labels_are_distinct_strings():
    assert len(set(CLASH)) == 4
    assert len({unicodedata.normalize("NFKC", s) for s in CLASH}) == 2


@pytest.mark.parametrize("scenario", [_survey_toml, _collection_toml], ids=["survey", "collection"])
def test_labels_equal_after_normalisation_are_reported_apart(cli, tmp_path, scenario):
    # the survey's checkpoint table has one column per label (pandas' itertuples made
    # them namedtuple fields, which Python folds by NFKC); the collection's tables have
    # one row per label: both reports build, each label kept as itself
    out = _run(cli, tmp_path, scenario(CLASH))
    results = pd.read_csv(out / "results.csv", dtype={"category": str}, keep_default_na=False)
    assert set(CLASH) <= set(results["category"])
    if scenario is _survey_toml:
        summary = (out / "summary.md").read_text(encoding="utf-8")
        page = (out / "report.html").read_text(encoding="utf-8")
        for label in CLASH:
            assert f"| {label} |" in summary or f" {label} |" in summary
            assert f">{label}<" in page
    again = cli("report", out, cwd=tmp_path)  # rebuilt from results.csv alone
    assert again.returncode == 0, again.stderr


def test_md_table_takes_any_column_labels():
    from ldpsim.report.html import _cells
    from ldpsim.report.tables import md_table

    frame = pd.DataFrame([[1.0, 2.0, 3.0, 4.0]], columns=CLASH)
    text = md_table(frame)
    assert text.splitlines()[0] == "| " + " | ".join(CLASH) + " |"
    assert [c["text"] for c in _cells(frame, "{:.5g}")[0]] == ["1", "2", "3", "4"]
