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


def _run(cli, tmp_path: Path, text: str) -> Path:
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
    assert [c["text"] for c in _cells(frame)[0]] == ["1.000", "2.000", "3.000", "4.000"]


# ---------------------------------------------------------------- item 19: number formats
SURVEY = """
name = "formats"
[population]
labels = ["a", "b", "c"]
distribution = [0.5, 0.3, 0.2]
size = 150000
[mechanism]
kind = "randomized_response"
eps = 1.0
[arrivals]
kind = "poisson"
duration = 3.0
[network]
latency = { kind = "exponential", mean = 0.01 }
loss = 0.1
[analyst]
checkpoints = { every = 1.0 }
tasks = [{ kind = "frequency", confidence = 0.95 }]
[simulation]
mode = "aggregate"
replications = 3
seed = 5
"""

# the columns of the survey's summary.md tables by kind (one format each)
COUNT_COLUMNS = {"n_received", "mean", "min", "max"}  # mean/min/max: of the clients-and-reports table
NUMBER_COLUMNS = {
    "truth",
    "estimate",
    "ci_low",
    "ci_high",
    "mean_estimate",
    "rmse",
    "std_error",
    "theory_se",
    "coverage",
    "l1",
    "linf",
    "theory_rms_se",
    "time",
    "a",
    "b",
    "c",
}
DIGITS = 4


def _md_tables(text: str) -> list[pd.DataFrame]:
    """Every Markdown table of ``text`` as a frame of its cells (text)."""
    out, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            out.append(pd.DataFrame(block[2:], columns=block[0]))
            block = []
    return out


def _is_count(cell: str) -> bool:
    """An integer with thousands separators (a mean over replications: one decimal)."""
    import re

    return re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d)?", cell) is not None


def _significant(cell: str) -> int | None:
    """The significant digits ``cell`` shows (None: not a plain decimal number)."""
    import re

    m = re.fullmatch(r"-?(\d+(?:,\d{3})*)(?:\.(\d+))?(e-\d+)?", cell.replace(",", "") if "e" in cell else cell)
    if m is None:
        return None
    digits = (m.group(1).replace(",", "") + (m.group(2) or "")).lstrip("0")
    return len(digits) if digits else 0


def test_summary_numbers_follow_one_rule_per_column_kind(cli, tmp_path):
    out = _run(cli, tmp_path, SURVEY)
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "e+" not in summary  # no scientific notation for large numbers
    seen = set()
    for t in _md_tables(summary):
        for col in t.columns:
            cells = [c for c in t[col] if c != ""]
            if col in COUNT_COLUMNS or col == "n_received":
                seen.add(col)
                assert all(_is_count(c) for c in cells), (col, cells)
            elif col in NUMBER_COLUMNS:
                seen.add(col)
                for c in cells:  # 4 significant digits, trailing zeros kept (0.3000 beside 0.2997)
                    if c == "0":
                        continue
                    n = _significant(c)
                    assert n is not None and (n == DIGITS or (n > DIGITS and "." not in c)), (col, c)
    assert {"n_received", "truth", "estimate", "theory_rms_se", "mean"} <= seen
    # the clients are counted with separators, not 1.5e+05
    assert "| clients | 150,000 | 150,000 | 150,000 |" in summary


def test_report_cells_format_by_column_kind():
    from ldpsim.report.tables import cell_text

    assert cell_text("truth", 0.3) == "0.3000" and cell_text("estimate", 0.29969) == "0.2997"
    assert cell_text("n_received", 133348.0) == "133,348" and cell_text("n_received", 133348) == "133,348"
    assert cell_text("n_received", 133348.5) == "133,348.5"
    assert cell_text("lrt_type2", 3.5279e-16) == "3.528e-16"
    assert cell_text("statistic", 11461.4) == "11,461"  # no 1.146e+04
    assert cell_text("estimate", float("nan")) == "" and cell_text("estimate", 0.0) == "0"
    assert cell_text("covered", True) == "True" and cell_text("seed", 20261129) == "20261129"
    assert cell_text("eps", 0.5) == "0.5" and cell_text("delta", 1e-6) == "1e-06"  # parameters as given


def test_html_cells_show_the_summary_numbers():
    from ldpsim.report.html import _cells, table

    frame = pd.DataFrame({"truth": [0.3], "estimate": [0.29969], "n_received": [133348.0]})
    md = table(frame)
    assert md.splitlines()[2] == "| 0.3000 | 0.2997 | 133,348 |"
    assert [c["text"] for c in _cells(frame)[0]] == ["0.3000", "0.2997", "133,348"]


# ---------------------------------------------------------------- item 19: legends
def test_summary_explains_reason_ordinal_and_theory_rms_se(cli, tmp_path):
    out = _run(cli, tmp_path, SURVEY)
    prose = [line for line in (out / "summary.md").read_text(encoding="utf-8").splitlines() if not line.startswith("|")]
    text = "\n".join(prose)
    for col in ("reason", "ordinal", "theory_rms_se"):
        assert f"`{col}`:" in text, col


# ---------------------------------------------------------------- item 19: audit text
def test_audit_list_shows_no_rst_markup(cli):
    proc = cli("audit", "--list")
    assert proc.returncode == 0, proc.stderr
    assert "``" not in proc.stdout and "*value*" not in proc.stdout
    assert "probabilities use 2 eps" in " ".join(proc.stdout.split())


@pytest.mark.parametrize(
    "spec, extra, word",
    [
        ("randomized_response:k=2,eps=1", (), "1 pair,"),
        ("broken.doubled_rr", ("--sequential", "--first", "1000"), "after 1 look"),  # refuted at the first look
    ],
)
def test_audits_say_one_pair_and_one_look(cli, spec, extra, word):
    proc = cli("audit", spec, "--n", "10000", "--seed", "1", *extra)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert word in text, text
    assert "1 pairs" not in text and "(s)" not in text, text


# ---------------------------------------------------------------- item 19: did you mean
def test_unknown_mechanism_names_suggest_the_closest(cli, tmp_path):
    proc = cli("audit", "randomised_response:k=2")
    assert proc.returncode == 2 and "did you mean 'randomized_response'?" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "s.toml").write_text(
        _survey_toml(["a", "b", "c", "d"]).replace('"randomized_response"', '"randomised_response"'), encoding="utf-8"
    )
    proc = cli("check", "s.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'randomized_response'?" in proc.stderr, proc.stderr
    far = cli("audit", "zzzz")
    assert far.returncode == 2 and "did you mean" not in far.stderr  # nothing close: no guess


def test_unknown_mechanism_parameter_suggests_the_closest(cli):
    proc = cli("audit", "randomized_response:k=2,esp=1")
    assert proc.returncode == 2 and "did you mean 'eps'?" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- item 19: reproduce tables
def test_reproduce_table_wraps_long_quantities_at_words():
    from ldpsim.reproduce import format_summary

    long = (
        "Cor 4.1 budget (eps0 0.1234, delta0 1e-06) composed exactly: delta of the composition over "
        "the target delta, at the largest eps0 allowed"
    )
    summary = pd.DataFrame(
        {
            "quantity": [long, "short one"],
            "k": ["10", "2"],
            "eps": ["1", "0.5"],
            "paper": [0.5, float("nan")],
            "ours": [0.49, 1.0],
            "agrees": ["yes", ""],
            "criterion": ["within 5%", ""],
        }
    )
    text = format_summary(summary, width=80)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80
    assert "..." not in text
    table = "\n".join(lines[:-1])  # the last line: the criterion's note
    assert " ".join(long.split()) in " ".join(
        w for line in table.splitlines()[1:] for w in line.split() if w not in ("10", "1", "0.5", "0.49", "yes", "[1]")
    )
    first = next(line for line in lines if line.startswith("Cor 4.1"))
    assert first.rstrip().endswith("[1]")  # the row's cells stay on its first line


# ---------------------------------------------------------------- item 19: figures
def _capture(monkeypatch):
    """The figures the survey report draws: per figure, its titles, texts and the y-data of
    each visible panel's lines (png_bytes is replaced, so nothing is rendered)."""
    from ldpsim.report import survey

    got = []

    def grab(fig):
        import matplotlib.pyplot as plt

        panels = []
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
            panels.append(
                {"title": ax.get_title(), "ys": ys, "texts": [t.get_text() for t in ax.texts], "xlim": ax.get_xlim()}
            )
        sup = fig._suptitle.get_text() if fig._suptitle is not None else ""
        got.append({"suptitle": sup, "panels": panels})
        plt.close(fig)
        return b""

    monkeypatch.setattr(survey, "png_bytes", grab)
    return got


import numpy as np  # noqa: E402


def test_hypothesis_test_figure_has_no_flat_panel(cli, tmp_path, monkeypatch):
    from ldpsim.report import survey
    from ldpsim.report import survey_tables as st

    proc = cli("run", "hypothesis_test", "--out", tmp_path / "h", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = st.read_results(tmp_path / "h" / "results.csv")
    got = _capture(monkeypatch)
    survey._other_tasks_over_time(st.other_task_series(results), "days")
    (fig,) = got
    drawn = [p for p in fig["panels"] if p["ys"]]
    assert drawn
    for p in drawn:  # every panel drawn changes over time; a quantity that does not is told, not drawn
        assert any(np.ptp(y[np.isfinite(y)]) > 0 for y in p["ys"] if np.isfinite(y).sum() > 1), p["title"]
    told = " ".join(t for p in fig["panels"] for t in p["texts"])
    for quantity in ("sprt_decision", "sprt_sample_size", "llr", "sprt_decision_time", "lrt_reject_h0"):
        assert quantity in told, told
    assert "0.688" in told  # the SPRT's stopping day, before the first daily checkpoint


def test_survey_figure_title_names_the_mechanism_and_eps(tmp_path, monkeypatch):
    from ldpsim.report import survey
    from ldpsim.sim import run_scenario

    (tmp_path / "s.toml").write_text(SURVEY.replace("replications = 3", "replications = 1"), encoding="utf-8")
    got = _capture(monkeypatch)
    run_scenario(tmp_path / "s.toml", out=tmp_path / "o")
    titles = [p["title"] for f in got for p in f["panels"]]
    title = next(t for t in titles if t.startswith("Estimates"))
    assert "randomized_response" in title and "eps = 1" in title, title
    assert survey is not None


# ---------------------------------------------------------------- item 19: report.html
def _css(page: str) -> str:
    import re

    return " ".join(re.search(r"<style>(.*?)</style>", page, re.S).group(1).split())


def test_wide_tables_scroll_with_their_first_column_in_view(cli, tmp_path):
    import re

    out = _run(cli, tmp_path, SURVEY)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count('<div class="scroll"><table>') == page.count("<table>")  # every table may scroll sideways
    css = _css(page)
    rule = re.search(r"\.scroll (?:th|td):first-child, \.scroll (?:th|td):first-child \{([^}]*)\}", css)
    assert rule is not None, css
    assert "position: sticky" in rule.group(1) and "left: 0" in rule.group(1)
    assert "background" in rule.group(1)  # opaque: scrolled cells pass under it


def test_index_shows_the_run_directory_whole(cli, tmp_path):
    import re

    out = tmp_path / "reports" / "a-rather-long-scenario-name" / "20261129T101010-abcdef-0123456789"
    (tmp_path / "s.toml").write_text(SURVEY, encoding="utf-8")
    assert cli("run", "s.toml", "--out", out, "--no-progress", cwd=tmp_path).returncode == 0
    assert cli("report", tmp_path / "reports", cwd=tmp_path).returncode == 0
    index = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    cell = re.search(r'<td class="path"><code>([^<]*)</code></td>', index.replace("<wbr>", ""))  # breaks after a /
    assert cell is not None and cell.group(1) == out.relative_to(tmp_path / "reports").as_posix()
    css = _css(index)
    rule = re.search(r"td\.path code \{([^}]*)\}", css)
    assert rule is not None and "overflow-wrap: anywhere" in rule.group(1), css


def test_log_axes_label_their_ticks_in_plain_text_as_matplotlib_chooses_them():
    """The report's log axes keep matplotlib's choice of labelled ticks but write them
    without mathtext: 10⁻², 10⁰, 10³, and 2×10⁻² on a minor tick within a decade."""
    from ldpsim.report.figures import log_axes, plt

    fig, ax = plt.subplots()
    ax.plot([1e-3, 1e3], [2e-2, 9e-2])
    log_axes(ax, x=True, y=True)
    ax.set_xlim(1e-3, 1e3)
    ax.set_ylim(2e-2, 9e-2)
    fig.canvas.draw()
    major = {t.get_text() for t in ax.get_xticklabels()}
    minor = {t.get_text() for t in ax.yaxis.get_minorticklabels()}
    plt.close(fig)
    assert {"10⁻²", "10⁰", "10³"} <= major, major
    assert "2×10⁻²" in minor, minor
    assert not any("$" in label for label in major | minor)
