"""The files of ``ldpsim analyse``: summary.md, report.html, estimates.csv, tests.csv and
analysis.json, as pure functions of the estimates and tests frames and the values passed
in (report.html by :func:`ldpsim.report.html.page_html`, as a run's report)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ldpsim.report.html import page_html
from ldpsim.report.html import table as html_table

#: the files of an analysis folder, as summary.md links them
FILES = ("estimates.csv", "tests.csv", "analysis.json", "summary.md")

_ESTIMATE_COLUMNS = ["category", "estimate", "std_error", "ci_low", "ci_high", "projected"]
_TEST_COLUMNS = ["scope", "test", "statistic", "p_value", "reject", "method", "draws", "note"]


def _shown(frame: pd.DataFrame) -> Any:
    cols = [c for c in _ESTIMATE_COLUMNS if c in frame.columns]
    return html_table(frame[cols].reset_index(drop=True))


def summary_lines(meta: dict[str, Any], estimates: pd.DataFrame, tests: pd.DataFrame, notes: list[str]) -> list[str]:
    """summary.md, line by line (every table a :class:`ldpsim.report.html.TableText`)."""
    confidence = 1.0 - float(meta["alpha"])
    lines = [
        f"# Analysis of {meta['reports']}",
        "",
        f"{meta['n']:,} reports of `{meta['mechanism']}`, analysed as a run without truths: the estimates "
        f"and tests below are functions of the reports alone. Intervals at {confidence:.0%} (normal, plug-in "
        f"variance); tests at level {meta['alpha']:g}; Monte Carlo p-values drawn with seed {meta['seed']}.",
        "",
        "## Estimates",
        "",
    ]
    everyone = estimates[estimates["scope"] == "all"]
    lines += [_shown(everyone), ""]
    if "projected" in estimates.columns:
        lines += [
            "`estimate` is unbiased and may leave [0, 1]; `projected` is its projection on the simplex "
            "(non-negative, summing to 1).",
            "",
        ]
    for group, frame in estimates[estimates["scope"] == "group"].groupby("group", sort=False):
        lines += [f"### Group {group} ({int(frame['reports'].iloc[0]):,} reports)", "", _shown(frame), ""]
    weighted = estimates[estimates["scope"] == "weighted"]
    if len(weighted):
        lines += [f"### Weighted by `{meta['weights']}`", "", _shown(weighted), ""]
    lines += ["## Tests", ""]
    if len(tests):
        cols = [c for c in _TEST_COLUMNS if c in tests.columns]
        lines += [html_table(tests[cols].reset_index(drop=True)), ""]
    else:
        lines += ["No test applies.", ""]
    for note in notes:
        lines += [f"Note: {note}.", ""]
    lines += [
        "## Files",
        "",
        "- `estimates.csv`: every estimate with its standard error and interval (`scope`: all, group, weighted)",
        "- `tests.csv`: every test with its statistic, p-value and decision",
        "- `analysis.json`: the mechanism, the file read, the options and the seed",
    ]
    return lines


def _folder(
    meta: dict[str, Any],
    estimates: pd.DataFrame,
    tests: pd.DataFrame,
    lines: list[str],
    title: str,
    facts: list[tuple[str, str]],
    key: dict[str, str],
    source: str | None = None,
) -> dict[str, bytes]:
    """The five files of an analysis folder, by name, from its tables, summary lines and the
    report's title, facts (``metadata`` beside ``kind``) and key figures."""
    page = page_html(
        title=title,
        badge="analysis",
        noun="analysis",
        lines=lines,
        files={},
        links=FILES,
        metadata=[("kind", "analysis"), *facts],
        key=key,
        source=source,
    )
    return {
        "estimates.csv": estimates.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "tests.csv": tests.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "analysis.json": (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "summary.md": ("\n".join(lines) + "\n").encode("utf-8"),
        "report.html": page,
    }


def files(meta: dict[str, Any], estimates: pd.DataFrame, tests: pd.DataFrame, notes: list[str]) -> dict[str, bytes]:
    """Every file of the analysis folder, by name."""
    n, mechanism = f"{meta['n']:,}", str(meta["mechanism"])
    return _folder(
        meta,
        estimates,
        tests,
        summary_lines(meta, estimates, tests, notes),
        f"Analysis of {meta['reports']}",
        [("mechanism", mechanism), ("reports", n), ("seed", str(meta["seed"]))],
        {"reports": n, "mechanism": mechanism},
    )


def _demoted(lines: list[str]) -> list[str]:
    """A question's summary lines one heading level down, without its title and files."""
    body = lines[2 : lines.index("## Files")] if "## Files" in lines else lines[2:]
    return [("#" + line) if isinstance(line, str) and line.startswith("#") else line for line in body]


def question_files(
    meta: dict[str, Any],
    parts: list[tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, list[str]]],
    source: str | None = None,
) -> dict[str, bytes]:
    """The files of an analysis of several questions (``ldpsim analyse analysis.toml``):
    ``parts`` holds each question's meta (as :func:`files` takes it, with ``question``),
    estimates, tests and notes; estimates.csv and tests.csv get a first column ``question``."""
    lines = [f"# Analysis {meta['name']}", ""]
    if meta.get("description"):
        lines += [str(meta["description"]), ""]
    lines += [
        f"{len(parts)} questions from `{meta['file']}`, each analysed as `ldpsim analyse` analyses one reports file; "
        f"Monte Carlo p-values drawn with seed {meta['seed']} (question i: its spawn key (i,)).",
        "",
    ]
    estimates, tests = [], []
    for q_meta, est, tst, notes in parts:
        lines += [f"## Question {q_meta['question']}", ""]
        lines += _demoted(summary_lines(q_meta, est, tst, notes))
        estimates.append(est.assign(question=q_meta["question"]))
        tests.append(tst.assign(question=q_meta["question"]))
    lines += [
        "## Files",
        "",
        "- `estimates.csv`: every estimate of every question (`question`; `scope`: all, group, weighted)",
        "- `tests.csv`: every test of every question with its statistic, p-value and decision",
        "- `analysis.json`: the file read, each question's mechanism, reports file and options, and the seed",
    ]
    all_estimates = pd.concat(estimates, ignore_index=True)
    all_tests = pd.concat(tests, ignore_index=True)
    all_estimates = all_estimates[["question", *[c for c in all_estimates.columns if c != "question"]]]
    all_tests = all_tests[["question", *[c for c in all_tests.columns if c != "question"]]]
    n = f"{sum(int(q['n']) for q, *_ in parts):,}"
    count = str(len(parts))
    return _folder(
        meta,
        all_estimates,
        all_tests,
        lines,
        f"Analysis {meta['name']}",
        [("questions", count), ("reports", n), ("seed", str(meta["seed"]))],
        {"questions": count, "reports": n},
        source,
    )
