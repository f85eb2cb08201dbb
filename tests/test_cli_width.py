"""Every command's terminal output fits a 100-column terminal, and nothing is lost on the way.

Each subcommand runs in-process in a fast variant (small scenarios, small budgets); every
line it prints on stdout must be at most 100 characters (``audit --json`` is machine output
and exempt). A table wider than that is printed in blocks of columns, its key columns
repeated; the tests read the blocks back and find every value of the table's file in them.
The helper itself (:mod:`ldpsim._text`) is tested on a 15-column frame."""

from __future__ import annotations

import re
from itertools import takewhile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpsim._text import KEEP, WIDTH, shorten, table, wrap
from tests.cli_helpers import run_cli
from tests.sim.helpers import MULTIPARTY, PLAIN_MEMOISED_AND_BUDGET, collection_text, scenario_text

NUMBER = re.compile(r"^-?(\d[\d,]*\.?\d*(e[+-]\d+)?|inf|nan)$", re.I)


def fits(*argv: object, cwd: Path | None = None) -> str:
    """Run ``ldpsim ARGV``: exit code 0 and every stdout line within WIDTH; its stdout."""
    r = run_cli(*argv, cwd=cwd)
    assert r.returncode == 0, r.stderr
    wide = [line for line in r.stdout.splitlines() if len(line) > WIDTH]
    assert not wide, f"ldpsim {' '.join(map(str, argv))}: lines over {WIDTH} columns:\n" + "\n".join(wide)
    assert KEEP not in r.stdout
    return r.stdout


def blocks(text: str, header: str, rows: int) -> list[list[list[str]]]:
    """The blocks of a table of ``rows`` rows printed by :func:`table`, from the first line
    whose first word is ``header``: each block its header and ``rows`` lines, split at
    whitespace; blocks are separated by one blank line."""
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if line.split()[:1] == [header] and len(line.split()) > 1)
    out = [[line.split() for line in lines[i : i + rows + 1]]]
    i += rows + 1
    while i + 1 < len(lines) and not lines[i].strip() and lines[i + 1].split()[:1] == [header]:
        out.append([line.split() for line in lines[i + 1 : i + rows + 2]])
        i += rows + 2
    return out


# --------------------------------------------------------------------------- the helper
def test_a_wide_frame_is_split_into_blocks_that_fit_with_every_cell():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"col_{i:02d}": rng.normal(size=6) * 10.0 ** (i % 7) for i in range(14)})
    frame.insert(0, "name", [f"row-{i}" for i in range(6)])
    assert frame.shape[1] == 15 and len(frame.to_string(index=False).splitlines()[0]) > WIDTH
    text = table(frame, float_format=lambda x: f"{x:.6g}", full="out/table.csv")
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert text.splitlines()[-1] == "full table: out/table.csv"
    found = blocks(text, "name", len(frame))
    assert len(found) >= 2
    headers = [c for b in found for c in b[0][1:]]
    assert headers == list(frame.columns[1:])  # every column once, in order
    for b in found:
        assert [row[0] for row in b[1:]] == list(frame["name"])  # the key column in every block
    for i in range(len(frame)):
        cells = [c for b in found for c in b[i + 1][1:]]
        assert cells == [f"{x:.6g}" for x in frame.iloc[i, 1:]]


def test_a_table_that_fits_is_printed_as_pandas_prints_it():
    frame = pd.DataFrame({"category": ["a", "b"], "estimate": [0.25, 0.75]})
    assert table(frame, float_format=lambda x: f"{x:.5f}") == frame.to_string(
        index=False, float_format=lambda x: f"{x:.5f}"
    )


def test_keys_repeat_and_text_too_wide_for_any_block_is_shortened():
    frame = pd.DataFrame({"task": ["t", "t"], "category": ["x", "y"], **{f"c{i}": [1.5, 2.5] for i in range(30)}})
    found = blocks(table(frame, keys=2), "task", 2)
    assert len(found) > 1 and all(b[0][:2] == ["task", "category"] for b in found)
    long = pd.DataFrame({"label": ["word " * 40, "short"], "value": [1.0, 2.0]})
    text = table(long)
    assert max(map(len, text.splitlines())) <= WIDTH and "..." in text and "short" in text


def test_wrap_keeps_words_numbers_paths_and_joined_words_whole():
    path = "/tmp/" + "a-very-long-folder-name/" * 3 + "table.csv"
    words = ["value", "1e-06", "3,000,000", path] * 4
    text = wrap("files: " + " ".join(words) + f" loss{KEEP}mse{KEEP}(exact)")
    lines = text.splitlines()
    assert len(lines) > 1 and all(len(line) <= WIDTH for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])  # the hanging indent
    assert text.split() == ["files:", *words, "loss", "mse", "(exact)"]  # nothing broken or lost
    assert "loss mse (exact)" in text and KEEP not in text
    assert wrap("  a b   c") == "  a b   c"  # a line that fits is left as it is
    assert shorten("one two three four", 12) == "one two..." and shorten("fits", 10) == "fits"


# --------------------------------------------------------------------------- every command
def test_run_prints_every_kind_of_scenario_within_the_width(tmp_path):
    (tmp_path / "s.toml").write_text(scenario_text(size=2000))
    fits("run", "s.toml", "--out", "survey", "--no-progress", cwd=tmp_path)
    (tmp_path / "mp.toml").write_text(MULTIPARTY)
    out = fits("run", "mp.toml", "--out", "mp", "--no-progress", cwd=tmp_path)
    assert "paired differences" in out and "completion delay (time units): mean" in out
    (tmp_path / "tiers.toml").write_text(
        scenario_text(
            size=2000,
            mechanism='kind = "randomized_response"\ntiers = [{ eps = 0.5, share = 0.5 }, { eps = 2.0, share = 0.5 }]',
        )
    )
    assert "privacy tiers" in fits("run", "tiers.toml", "--out", "tiers", "--no-progress", cwd=tmp_path)
    (tmp_path / "nr.toml").write_text(
        scenario_text(
            size=2000, loss="{ by_answer = { a = 0.8 }, default = 0.1 }", checkpoints="{ every = 1.0 }\nreweight = true"
        )
    )
    assert "answer-dependent loss" in fits("run", "nr.toml", "--out", "nr", "--no-progress", cwd=tmp_path)
    # several questions, a mean, a cross-tabulation: the shipped ANES survey, at 3,000 respondents
    fits("scenarios", "copy", "anes96", "--to", "anes", cwd=tmp_path)
    text, n = re.subn(r"(?m)^size = [\d_]+", "size = 3000", (tmp_path / "anes" / "anes96.toml").read_text())
    assert n == 1
    (tmp_path / "anes" / "anes96.toml").write_text(text)
    out = fits("run", "anes/anes96.toml", "--out", "anes_run", "--no-progress", cwd=tmp_path)
    assert "questions per respondent" in out and ":crosstab:" in out and "age:distribution" in out


def test_the_collection_table_is_split_and_every_value_of_summary_md_is_printed(tmp_path):
    shuffler = "[shuffler]\nbatch = 300\ncompare = true"
    (tmp_path / "c.toml").write_text(
        collection_text(size=2000, periods=6, policies=PLAIN_MEMOISED_AND_BUDGET, shuffler=shuffler)
    )
    out = fits("run", "c.toml", "--out", "c", "--no-progress", cwd=tmp_path)
    assert "full table: c/summary.md" in out
    md = (tmp_path / "c" / "summary.md").read_text().splitlines()
    at = next(i for i, line in enumerate(md) if line.startswith("| arm |"))
    header = [c.strip() for c in md[at].strip("|").split("|")]
    rows = [
        [c.strip() for c in line.strip("|").split("|")] for line in takewhile(lambda x: x.startswith("|"), md[at + 2 :])
    ]
    found = blocks(out, "arm", len(rows))
    assert len(found) >= 2  # 11 columns do not fit in 100
    assert [c for b in found for c in b[0][1:]] == header[1:]
    for row in rows:
        printed = []
        for b in found:  # the row of this arm in each block: its name, then only numbers
            n = len(row[0].split())
            mine = [r[n:] for r in b[1:] if r[:n] == row[0].split() and (len(r) == n or NUMBER.match(r[n]))]
            assert len(mine) == 1, (row[0], b)
            printed += mine[0]
        want = [float(v) for v in row[1:] if v]
        # summary.md shows 4 significant digits (half a unit of the 4th: rel. 5e-4 at most)
        assert np.allclose([float(v) for v in printed], want, rtol=5e-4, atol=0), (row, printed)


def test_check_report_scenarios_demo_and_lists(tmp_path):
    assert len(fits("scenarios").splitlines()) >= 10
    deep = Path("d" * 70) / "copy"  # (relative) "edit it, then: ldpsim run PATH" is 113 characters
    out = fits("scenarios", "copy", "survey", "--to", deep, cwd=tmp_path)
    assert f"\n  ldpsim run {deep / 'survey.toml'}\n" in out  # the command to run it, on one line
    out = fits("check", deep / "survey.toml", cwd=tmp_path)
    assert "a valid survey scenario 'survey'" in out and f"ldpsim run {deep / 'survey.toml'}" in out
    (tmp_path / "s.toml").write_text(scenario_text(size=500))
    fits("run", tmp_path / "s.toml", "--out", tmp_path / "runs" / "one", "--no-progress")
    assert "rebuilt the reports of 1 run(s) and 0 reproduction(s)" in fits("report", tmp_path / "runs")
    out = fits("demo", "--n", "2000", "--k", "4", "--seed", str(2**127 + 1))
    assert f"(seed {2**127 + 1})" in out  # a seed of 39 digits: the header wraps, the seed stays whole
    fits("reproduce", "--list")
    out = fits("audit", "--list")
    assert "broken.svt_returns_value(" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--eps", "0.5", "--compositions", "10"],
        ["--eps", "0.5", "--delta", "1e-6", "--compositions", "10", "--target-delta", "1e-5", "1e-3"],
        ["--eps", "0.1", "--delta", "0.001", "--compositions", "30"],
        ["--mechanism", "laplace:eps=0.5x10", "--pairs", "1,0x2"],
        ["--mechanism", "gaussian:eps=1,delta=1e-5x4", "--mechanism", "randomized_response:k=4,eps=1x3"],
    ],
    ids=["eps", "target-delta", "small-eps", "laplace-and-pairs", "gaussian"],
)
def test_compose_prints_every_value_of_table_csv(argv, tmp_path):
    out = fits("compose", *argv, "--out", tmp_path / "c", "--no-figure")
    csv = pd.read_csv(tmp_path / "c" / "table.csv")
    first = csv.columns[0]
    found = blocks(out, first, len(csv))
    values = [[float(v) for v in row] for b in found for row in b[1:]]
    assert np.allclose(values, csv.to_numpy(dtype=float), rtol=1e-5, atol=0)


def test_recommend_reproduce_and_audit(tmp_path):
    out = fits("recommend", "--k", "10", "--eps", "1", "--n", "1e4", "--utility", "kl", "--out", tmp_path / "r")
    assert "loss kl (" in out and "regime boundaries" in out
    fits("reproduce", "kov-fig5", "--instances", "1", "--out", tmp_path / "p")
    for argv in (
        ["randomized_response:k=4,eps=1", "--n", "2000", "--seed", str(2**127 + 3)],
        ["broken.doubled_rr", "--sequential", "--first", "200", "--n", "20000"],
        ["gaussian", "--n", "2000"],
        ["broken.svt_returns_value", "--n", "2000", "--black-box"],
    ):
        out = fits("audit", *argv)
        assert out.startswith("audit of ") and "method: " in out
