"""summary.md and report.html of a reproduction folder (``ldpsim reproduce NAME``).

Both are rendered by :func:`render` from the folder's own files only: summary.csv (our
numbers beside the paper's), metadata.json (the reproduction's name, description and
source paper, its parameters, versions and times, the files it wrote) and the PNG figures.
``ldpsim reproduce`` calls it once the reproduction has written those files, and
``ldpsim report`` calls it again on the folder, so a rebuild gives the same bytes without
recomputing anything. summary.md is a list of Markdown lines whose table is a
:class:`~ldpsim.report.html.TableText`; report.html is the same lines through the report
page template (:func:`ldpsim.report.html.page_html`), with the figures embedded, the key
numbers and the metadata.

This module knows the layout of a reproduction folder, not the reproductions themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ldpsim.errors import LdpSimError
from ldpsim.report.html import TableText, page_html, read_metadata, table
from ldpsim.report.tables import read_csv

#: the columns of summary.csv, in order
SUMMARY_COLUMNS = ("quantity", "k", "eps", "paper", "ours", "agrees", "criterion")
#: the files :func:`render` writes
RENDERED = ("summary.md", "report.html")

#: what the list of files says of the files every reproduction writes
_FILE_NOTES = {
    "summary.csv": "the table above, every number to 10 significant digits",
    "metadata.json": "name, source, seed, instances, eps grid, workers, versions, command line, times, the files",
    "summary.md": "this summary as Markdown",
    "report.html": "this summary as one self-contained web page (figures embedded)",
}


def render(folder: str | Path) -> dict[str, bytes]:
    """summary.md and report.html of the reproduction folder ``folder``, by name, from its
    summary.csv, metadata.json and figures. A folder that is not a whole reproduction is one
    LdpSimError naming the file at fault."""
    folder = Path(folder)
    meta = read_metadata(folder)
    if "reproduction" not in meta:
        raise LdpSimError(
            f"{folder / 'metadata.json'}: got no readable metadata of a reproduction, "
            'expected a JSON object with a "reproduction" key, as ldpsim reproduce writes it'
        )
    summary = read_summary(folder / "summary.csv")
    names = file_names(folder, meta)
    missing = [n for n in names if n not in RENDERED and not (folder / n).is_file()]
    if missing:
        raise LdpSimError(
            f"{folder}: got a reproduction folder without {', '.join(missing)}, expected every file "
            "its metadata.json lists"
        )
    figures = {n: (folder / n).read_bytes() for n in names if n.endswith(".png")}
    lines = summary_lines(meta, summary, names)
    page = page_html(
        title=str(meta["reproduction"]),
        badge="reproduction",
        noun="reproduction",
        lines=lines,
        files=figures,
        links=[n for n in names if n != "report.html"],
        metadata=metadata_rows(meta),
        key=key_numbers(meta, summary),
    )
    return {"summary.md": "\n".join(lines).encode("utf-8"), "report.html": page}


def read_summary(path: Path) -> pd.DataFrame:
    """summary.csv as written: ``k``, ``eps``, ``agrees`` and ``criterion`` as their text,
    ``paper`` and ``ours`` as numbers (an empty ``paper``: the paper gives no number)."""
    try:
        df = read_csv(
            path, dtype={c: str for c in ("quantity", "k", "eps", "agrees", "criterion")}, na=["paper", "ours"]
        )
    except OSError as exc:
        raise LdpSimError(
            f"{path}: got a file that cannot be read ({exc.strerror or exc}), expected the summary table "
            "ldpsim reproduce writes"
        ) from None
    if tuple(df.columns) != SUMMARY_COLUMNS:
        raise LdpSimError(
            f"{path}: got columns {', '.join(map(str, df.columns))}, expected {', '.join(SUMMARY_COLUMNS)}"
        )
    for c in ("paper", "ours"):
        if not pd.api.types.is_float_dtype(df[c]):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    return df


def file_names(folder: Path, meta: dict[str, Any]) -> list[str]:
    """The files of the reproduction, sorted: those its metadata.json lists, or for a folder
    written before metadata.json listed them, the files in it and the two :data:`RENDERED`."""
    listed = meta.get("files")
    if isinstance(listed, list) and all(isinstance(n, str) and n and "/" not in n for n in listed):
        return sorted(set(listed) | set(RENDERED))
    here = {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}
    return sorted(here | set(RENDERED))


def agreement(summary: pd.DataFrame) -> tuple[int, int]:
    """(numbers that agree with the paper, numbers the paper gives and we compare)."""
    agrees = summary["agrees"].fillna("")
    return int((agrees == "yes").sum()), int(agrees.isin(["yes", "no"]).sum())


def key_numbers(meta: dict[str, Any], summary: pd.DataFrame) -> dict[str, str]:
    """What the index shows of a reproduction: how many of the paper's numbers we meet, and
    the number of random instances."""
    yes, compared = agreement(summary)
    return {"agree with the paper": f"{yes} of {compared}", "instances": str(meta.get("instances", ""))}


def _eps_grid(meta: dict[str, Any]) -> str:
    grid = meta.get("eps_grid")
    if not grid:
        return "the reproduction's default"
    try:
        return ", ".join(f"{float(x):g}" for x in grid)
    except (TypeError, ValueError):
        return str(grid)


def _markdown_table(summary: pd.DataFrame) -> TableText:
    """The summary as a table; in the Markdown, a ``|`` inside a cell is escaped (the page
    shows the cells as they are, from the frame)."""
    escaped = summary.copy()
    for c in ("quantity", "criterion"):
        escaped[c] = [v.replace("|", "\\|") if isinstance(v, str) else v for v in escaped[c]]
    out = table(escaped)
    out.frame = summary
    return out


def _verdict(summary: pd.DataFrame) -> str:
    yes, compared = agreement(summary)
    if compared == 0:
        return "The paper gives no number to compare with here: the rows above are our measurements and checks."
    if yes == compared:
        return f"Every number the paper gives agrees with ours within its criterion ({yes} of {compared})."
    bad = summary[summary["agrees"] == "no"]
    which = "; ".join(f"{q} (k = {k}, eps = {e})" for q, k, e in zip(bad["quantity"], bad["k"], bad["eps"]))
    return f"Disagrees with the paper: {compared - yes} of the {compared} numbers it gives ({which})."


def summary_lines(meta: dict[str, Any], summary: pd.DataFrame, names: list[str]) -> list[str]:
    """summary.md as a list of lines (the table a :class:`~ldpsim.report.html.TableText`),
    for summary.md and report.html alike."""
    instances = meta.get("instances", "")
    out = [f"# {meta['reproduction']}", ""]
    if meta.get("description"):
        out += [f"{meta['description']}.", ""]
    if meta.get("source"):
        out += [f"Source: {meta['source']}.", ""]
    out += [
        "## Parameters",
        "",
        f"- seed: {meta.get('seed', '')}",
        f"- instances: {instances} random instance{'' if str(instances) == '1' else 's'}",
        f"- eps grid: {_eps_grid(meta)}",
        f"- workers: {meta.get('workers', '')} (the numbers do not depend on it)",
        "",
        "## Our numbers beside the paper's",
        "",
        (
            "`paper` holds a number only where the paper states one (blank otherwise); `agrees` then says whether "
            "`ours` meets the `criterion`. `eps` is the privacy level (of each mechanism compared) at which the "
            "number is measured."
        ),
        "",
        _markdown_table(summary),
        "",
        _verdict(summary),
        "",
    ]
    figures = [n for n in names if n.endswith(".png")]
    if figures:
        out += ["## Figures", ""] + [f"![{n}]({n})" for n in figures] + [""]
    out += ["## Files", ""]
    for n in names:
        note = _FILE_NOTES.get(n, "a figure" if n.endswith(".png") else "")
        out.append(f"- `{n}`" + (f": {note}" if note else ""))
    out.append("")
    return out


def metadata_rows(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """The metadata the page shows, from metadata.json."""
    packages = meta.get("packages")
    rows = [
        ("kind", "reproduction"),
        ("reproduction", str(meta.get("reproduction", ""))),
        ("source", str(meta.get("source", ""))),
        ("seed", str(meta.get("seed", ""))),
        ("instances", str(meta.get("instances", ""))),
        ("eps grid", _eps_grid(meta)),
        ("workers", str(meta.get("workers", ""))),
        ("ldpsim", str(meta.get("ldpsim_version", ""))),
        ("python", str(meta.get("python", ""))),
    ]
    if isinstance(packages, dict):
        rows.append(("packages", ", ".join(f"{k} {v}" for k, v in packages.items() if k not in ("python", "ldpsim"))))
    if isinstance(meta.get("command_line"), list):
        rows.append(("command line", " ".join(map(str, meta["command_line"]))))
    rows += [(k, str(meta.get(k, ""))) for k in ("started", "finished", "seconds")]
    return rows
