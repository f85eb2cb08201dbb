"""report.html of a run and index.html of a folder of runs, rendered with Jinja2 templates
(``ldpsim/report/templates/``, autoescaping on).

A report page is self-contained: its figures are embedded as PNG data URIs, its CSS is
inline, it loads nothing from the network and runs no script. It shows what summary.md
shows, in the same order and with the same numbers: the report modules build summary.md
as a list of Markdown lines in which every table is a :class:`TableText` (the table's
Markdown that remembers its data frame), and :func:`run_html` turns that list into HTML
blocks, each table rendered from its frame. Around it: the key numbers, the scenario as
run (its TOML text) and the metadata a report can know (seed, replications, the scenario's
digest). Like summary.md, the page depends only on the scenario, the seed and results.csv.

Jinja2 is imported on first use, so ``import ldpsim`` stays light.
"""

from __future__ import annotations

import base64
import html.parser
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from ldpsim._meta import package_version
from ldpsim.report.tables import cell_text, md_table

TEMPLATES = Path(__file__).resolve().parent / "templates"

#: files of a run directory that a report links to when summary.md names them in backticks
RUN_FILES = ("results.csv", "scenario.toml", "metadata.json", "summary.md", "replications/")

#: the files that make a directory a run directory (as ``ldpsim run`` writes it)
RUN_MARKERS = ("metadata.json", "results.csv", "scenario.toml")

KEY_PREFIX = "ldpsim-key:"


class TableText(str):
    """A table's Markdown text (what summary.md shows) that remembers its data frame and
    the kinds of its columns, so the HTML page renders the same numbers from the frame."""

    frame: pd.DataFrame
    kinds: dict[Any, str]


def table(df: pd.DataFrame, kinds: dict[Any, str] | None = None) -> TableText:
    """:func:`ldpsim.report.tables.md_table` (one format per kind of column, ``kinds`` for
    columns whose names do not tell it), remembering ``df`` for the HTML page."""
    out = TableText(md_table(df, kinds))
    out.frame = df
    out.kinds = dict(kinds or {})
    return out


@dataclass
class Section:
    """A section the HTML page adds after summary.md's content: a heading, lines of text
    (Markdown as summary.md writes it) and tables (:func:`table`)."""

    title: str
    lines: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------ blocks
def _inline(text: str, links: Iterable[str] = RUN_FILES) -> list[dict[str, str]]:
    """Text split into plain and `code` segments; code naming one of the folder's files
    (``links``) becomes a link."""
    out = []
    for i, part in enumerate(text.split("`")):
        if not part:
            continue
        if i % 2 == 0:
            out.append({"kind": "text", "text": part})
        elif part in links:
            out.append({"kind": "link", "text": part, "href": part})
        else:
            out.append({"kind": "code", "text": part})
    return out


def _cells(df: pd.DataFrame, kinds: dict[Any, str] | None = None) -> list[list[dict[str, Any]]]:
    """The cells of ``df`` as summary.md shows them (:func:`~ldpsim.report.tables.cell_text`),
    each marked a number (right-aligned) or not."""
    cols, kinds = list(df.columns), kinds or {}
    rows = []
    for row in df.itertuples(index=False, name=None):  # plain tuples: labels are never field names
        rows.append(
            [
                {
                    "text": cell_text(c, v, kinds.get(c)),
                    "num": isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)),
                }
                for c, v in zip(cols, row)
            ]
        )
    return rows


def _table_block(t: TableText) -> dict[str, Any]:
    return {"kind": "table", "columns": [str(c) for c in t.frame.columns], "rows": _cells(t.frame, t.kinds)}


_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")
_HEADING = re.compile(r"^(#{1,4}) (.*)$")
_ITEM = re.compile(r"^( *)- (.*)$")


def _data_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def blocks(lines: Iterable[str], figures: dict[str, bytes], links: Iterable[str] = RUN_FILES) -> list[dict[str, Any]]:
    """Markdown lines as summary.md writes them (headings, paragraphs, lists of one nesting
    level, images, tables) as blocks for the template; a :class:`TableText` is rendered
    from its frame, a figure named by an image line is embedded, a file of the folder
    named in backticks (``links``) is linked."""
    links = frozenset(links)
    out: list[dict[str, Any]] = []
    para: list[str] = []
    items: list[dict[str, Any]] | None = None
    slugs: set[str] = set()

    def flush() -> None:
        nonlocal items
        if para:
            out.append({"kind": "p", "parts": _inline(" ".join(para), links)})
            para.clear()
        if items is not None:
            out.append({"kind": "list", "items": items})
            items = None

    for entry in lines:
        if isinstance(entry, TableText):
            flush()
            out.append(_table_block(entry))
            continue
        for line in str(entry).split("\n"):
            if not line.strip():
                flush()
                continue
            if (m := _HEADING.match(line)) is not None:
                flush()
                slug = _slug(m.group(2), slugs)
                out.append(
                    {
                        "kind": "h",
                        "level": len(m.group(1)),
                        "parts": _inline(m.group(2), links),
                        "text": m.group(2).replace("`", ""),
                        "id": slug,
                    }
                )
            elif (m := _IMAGE.match(line.strip())) is not None:
                flush()
                name = m.group(2)
                if name in figures:
                    out.append({"kind": "figure", "name": name, "alt": m.group(1), "src": _data_uri(figures[name])})
            elif (m := _ITEM.match(line)) is not None and not para:
                if items is None:
                    items = []
                if m.group(1) and items:
                    items[-1]["children"].append(_inline(m.group(2), links))
                else:
                    items.append({"parts": _inline(m.group(2), links), "children": []})
            elif line.startswith("|"):  # a table given as text: shown as text
                flush()
                out.append({"kind": "pre", "text": line})
            else:
                if items is not None:
                    flush()
                para.append(line.strip())
    flush()
    return out


def _slug(text: str, seen: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = base, 2
    while slug in seen:
        slug, n = f"{base}-{n}", n + 1
    seen.add(slug)
    return slug


# ------------------------------------------------------------------------ pages
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def page_html(
    *,
    title: str,
    badge: str,
    noun: str,
    lines: list[str],
    files: dict[str, bytes],
    links: Iterable[str],
    metadata: list[tuple[str, str]],
    key: dict[str, str] | None = None,
    sections: Iterable[Section] = (),
    source: str | None = None,
) -> bytes:
    """A report page (UTF-8) of a folder of results, a run's or a reproduction's:
    summary.md's ``lines`` as HTML (its first heading is the page's ``title``), the figures
    among ``files`` embedded (those summary.md does not show are added at the end), the key
    numbers, extra ``sections``, the scenario's TOML text (``source``, if any) and the
    ``metadata`` rows. ``badge`` names the kind of page, ``noun`` what the folder holds
    ("run"); ``links`` are the folder's files the page links to (in the header, and
    wherever summary.md names one in backticks)."""
    links = list(links)
    figures = {name: data for name, data in files.items() if name.endswith(".png")}
    body = blocks(lines, figures, links)
    if body and body[0]["kind"] == "h" and body[0]["level"] == 1:
        body = body[1:]  # the page's title
    shown = {b["name"] for b in body if b["kind"] == "figure"}
    rest = [name for name in figures if name not in shown]
    extra = []
    for s in sections:
        extra.append(
            {
                "title": s.title,
                "id": _slug(s.title, {b["id"] for b in body if b["kind"] == "h"}),
                "blocks": blocks(s.lines, figures, links),
            }
        )
    if rest:
        extra.append(
            {
                "title": "More figures",
                "id": "more-figures",
                "blocks": [{"kind": "figure", "name": n, "alt": n, "src": _data_uri(figures[n])} for n in rest],
            }
        )
    toc = [(b["id"], b["text"]) for b in body if b["kind"] == "h" and b["level"] == 2]
    toc += [(s["id"], s["title"]) for s in extra]
    page = (
        _environment()
        .get_template("run.html.j2")
        .render(
            title=title,
            badge=badge,
            noun=noun,
            key=list((key or {}).items()),
            key_prefix=KEY_PREFIX,
            blocks=body,
            extra=extra,
            toc=toc,
            source=source,
            metadata=[*metadata, ("rendered by", f"ldpsim {package_version('ldpsim')}")],
            files=[f for f in links if not f.endswith("/")],
        )
    )
    return page.encode("utf-8")


def run_html(
    *,
    kind: str,
    scenario: Any,
    seed: int,
    lines: list[str],
    files: dict[str, bytes],
    key: dict[str, str] | None = None,
    sections: Iterable[Section] = (),
) -> bytes:
    """report.html of a run (UTF-8, :func:`page_html`): summary.md's ``lines``, the figures
    among ``files``, the key numbers, extra ``sections``, the scenario's TOML text and the
    run's metadata."""
    spec = scenario.spec
    title = str(spec.name)
    metadata = [
        ("kind", kind),
        ("scenario", title),
        ("seed", str(seed)),
        ("replications", str(spec.simulation.replications)),
        ("scenario SHA-256", scenario.digest()),
    ]
    return page_html(
        title=title,
        badge=f"{kind} run",
        noun="run",
        lines=lines,
        files=files,
        links=RUN_FILES,
        metadata=metadata,
        key=key,
        sections=sections,
        source=scenario.source,
    )


# ------------------------------------------------------------------------ the index
def is_run_dir(path: Path) -> bool:
    """Whether ``path`` holds a run as ``ldpsim run`` writes it."""
    return path.is_dir() and all((path / name).is_file() for name in RUN_MARKERS)


def read_metadata(folder: Path) -> dict[str, Any]:
    """``folder/metadata.json`` as a dict ({} if it is missing, unreadable or not an object)."""
    try:
        meta = json.loads((Path(folder) / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def is_reproduction_dir(path: Path) -> bool:
    """Whether ``path`` holds a reproduction as ``ldpsim reproduce`` writes it: summary.csv
    and a metadata.json naming the reproduction."""
    path = Path(path)
    return path.is_dir() and (path / "summary.csv").is_file() and "reproduction" in read_metadata(path)


def _walk(root: Path, reproductions: bool) -> list[Path]:
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if is_run_dir(here) or (reproductions and is_reproduction_dir(here)):
            found.append(here)
            dirnames[:] = []  # replications/ and input folders are not runs
    return sorted(found)


def run_dirs(root: Path) -> list[Path]:
    """Every run directory under ``root`` (``root`` itself included), sorted by path; hidden
    folders and run directories' own sub-folders are skipped."""
    return _walk(Path(root), reproductions=False)


def report_dirs(root: Path) -> list[Path]:
    """Every run directory and reproduction folder under ``root`` (``root`` itself
    included), sorted by path: what the index lists and ``ldpsim report`` rebuilds."""
    return _walk(Path(root), reproductions=True)


class _KeyReader(html.parser.HTMLParser):
    """The key numbers a report page carries in its ``<meta name="ldpsim-key:...">`` tags."""

    def __init__(self) -> None:
        super().__init__()
        self.key: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        name = a.get("name") or ""
        if tag == "meta" and name.startswith(KEY_PREFIX):
            self.key[name[len(KEY_PREFIX) :]] = a.get("content") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            raise _Done


class _Done(Exception):
    pass


def report_key(path: Path) -> dict[str, str]:
    """The key numbers of a report.html ({} if it has none or cannot be read)."""
    reader = _KeyReader()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            reader.feed(f.read(200_000))  # the head comes first
    except _Done:
        pass
    except OSError:
        return {}
    return reader.key


def _href(target: Path, root: Path) -> str:
    return quote(Path(os.path.relpath(target, root)).as_posix())


def index_entry(run_dir: Path, root: Path) -> dict[str, Any]:
    """What the index shows of one run directory or reproduction folder (robust to damaged
    or old ones)."""
    meta = read_metadata(run_dir)
    reproduction = "reproduction" in meta and not is_run_dir(run_dir)
    report = run_dir / "report.html"
    first = "summary.csv" if reproduction else "results.csv"
    if report.is_file():
        page, link = report, "report.html"
    elif (run_dir / "summary.md").is_file():
        page, link = run_dir / "summary.md", "summary.md"
    else:
        page, link = run_dir / first, first
    started = str(meta.get("started", ""))
    if reproduction:
        name, kind, count, unit = meta.get("reproduction"), "reproduction", meta.get("instances", ""), "instances"
    else:
        name, kind, count, unit = (
            meta.get("scenario", run_dir.parent.name),
            meta.get("kind", "survey"),
            meta.get("replications", ""),
            "",
        )
    return {
        "href": _href(page, root),
        "link": link,
        "path": Path(os.path.relpath(run_dir, root)).as_posix(),
        "name": str(name),
        "kind": str(kind),
        "seed": str(meta.get("seed", "")),
        "replications": str(count),
        "unit": unit,
        "started": started.replace("T", " ")[:19],
        "finished": bool(meta.get("finished")),
        "key": list(report_key(report).items()) if report.is_file() else [],
        "started_sort": started,
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def index_html(root: str | Path) -> bytes:
    """index.html of a folder of runs (UTF-8): one row per run directory and reproduction
    folder under ``root`` with a relative link to its report.html (summary.md for runs made
    before report.html, summary.csv for reproductions made before summary.md), its kind,
    scenario or reproduction, seed, replications (a reproduction's instances), start time
    and key numbers; newest first."""
    root = Path(root)
    entries = [index_entry(d, root) for d in report_dirs(root)]
    entries.sort(key=lambda e: e["path"])
    entries.sort(key=lambda e: e["started_sort"], reverse=True)
    reproductions = sum(e["kind"] == "reproduction" for e in entries)
    count = _plural(len(entries) - reproductions, "run")
    if reproductions:
        count += f" and {_plural(reproductions, 'reproduction')}"
    page = (
        _environment()
        .get_template("index.html.j2")
        .render(title=f"ldpsim runs in {root.resolve().name or root}", entries=entries, count=count)
    )
    return page.encode("utf-8")
