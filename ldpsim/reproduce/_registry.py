"""The registry of reproductions: name -> function writing CSV + PNG and returning a summary."""

from __future__ import annotations

import os
import platform
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd

from ldpsim import _validate as v
from ldpsim._files import OutputFolder
from ldpsim._meta import now, package_version, versions, write_json
from ldpsim.errors import LdpSimError, invalid
from ldpsim.report.reproduction import RENDERED, render

#: Default seed of every reproduction (the extremal-mechanisms paper is from 2014).
DEFAULT_SEED = 2014
#: Default number of random instances (the papers' setting).
DEFAULT_INSTANCES = 100
#: Default parent folder of the output folders.
DEFAULT_BASE = Path("reports") / "reproduce"


class ReproductionFunction(Protocol):
    def __call__(self, seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1) -> pd.DataFrame: ...


@dataclass(frozen=True)
class Reproduction:
    """A registered reproduction of a figure or table of a source paper."""

    name: str
    description: str  # one line, for ``ldpsim reproduce --list``
    source: str  # which seed and figure
    func: ReproductionFunction


@dataclass(frozen=True)
class ReproductionRun:
    """What :func:`reproduce` did: the summary table, where the files are, how long it took."""

    name: str
    summary: pd.DataFrame
    out_dir: Path
    files: list[Path]
    seconds: float
    seed: int
    instances: int
    index: Path | None = None  # reports/index.html, when the folder is under reports/ and it was rewritten

    @property
    def disagreements(self) -> pd.DataFrame:
        return self.summary[self.summary["agrees"] == "no"]


REPRODUCTIONS: dict[str, Reproduction] = {}


def register(name: str, description: str, source: str) -> Callable[[ReproductionFunction], ReproductionFunction]:
    """Decorator: register ``func`` as ``ldpsim reproduce NAME``."""

    def deco(func: ReproductionFunction) -> ReproductionFunction:
        if name in REPRODUCTIONS:
            raise LdpSimError(f"reproduction {name!r} is registered twice")
        REPRODUCTIONS[name] = Reproduction(name, description, source, func)
        return func

    return deco


def get(name: str) -> Reproduction:
    """The reproduction called ``name``; an unknown name raises :class:`LdpSimError`."""
    if name not in REPRODUCTIONS:
        raise invalid("NAME", name, f"one of {', '.join(sorted(REPRODUCTIONS))} (see ldpsim reproduce --list)")
    return REPRODUCTIONS[name]


def names() -> list[str]:
    return sorted(REPRODUCTIONS)


def reproduce(
    name: str,
    *,
    seed: int = DEFAULT_SEED,
    instances: int = DEFAULT_INSTANCES,
    out: str | os.PathLike | None = None,
    eps_grid: Any = None,
    workers: int = 1,
    force: bool = False,
) -> ReproductionRun:
    """Run the reproduction ``name``: writes its CSV, PNG, ``summary.csv``,
    ``metadata.json``, ``summary.md`` and ``report.html`` to ``out`` (default: a new folder
    ``reports/reproduce/NAME/<UTC time>-seed<seed>``, so a rerun never replaces an earlier
    one). summary.md and report.html are rendered from the other files
    (:func:`ldpsim.report.reproduction.render`), as ``ldpsim report`` renders them again.
    When the folder is under ``reports/``, ``reports/index.html`` is rewritten to list it
    (:func:`ldpsim.browse.refresh_index`).

    The folder is checked before any work: a non-empty ``out`` is refused unless ``force``
    (which replaces the files of the same name and leaves other files alone), and one that
    cannot be written is refused at once. The reproduction writes into a temporary folder
    whose files are put in place only at the end: an error or Ctrl-C leaves nothing
    (:class:`ldpsim._files.OutputFolder`)."""
    rep = get(name)
    seed = v.integer(seed, "--seed", minimum=0)
    instances = v.integer(instances, "--instances", minimum=1)
    workers = v.integer(workers, "--workers", minimum=1)
    with OutputFolder.of(out, DEFAULT_BASE / name, force=force, suffix=f"-seed{seed}") as folder:
        assert folder.work is not None
        started, t0 = now(), time.perf_counter()
        summary = rep.func(seed, instances, folder.work, eps_grid=eps_grid, workers=workers)
        seconds = time.perf_counter() - t0
        meta = {
            "reproduction": name,
            "description": rep.description,
            "source": rep.source,
            "seed": seed,
            "instances": instances,
            "eps_grid": None if eps_grid is None else np.atleast_1d(np.asarray(eps_grid, dtype=float)).tolist(),
            "workers": workers,
            "ldpsim_version": package_version("ldpsim"),
            "python": platform.python_version(),
            "packages": versions(),
            "command_line": sys.argv,
            "started": started,
            "finished": now(),
            "seconds": round(seconds, 3),
            "disagreements_with_paper": summary.loc[summary["agrees"] == "no", "quantity"].tolist(),
            "files": sorted({p.name for p in folder.work.iterdir() if not p.name.startswith(".")} | {"metadata.json", *RENDERED}),
        }
        write_json(folder.work / "metadata.json", meta)
        for file, data in render(folder.work).items():  # summary.md and report.html, from the files above
            (folder.work / file).write_bytes(data)
    files = [p for p in folder.files if p.is_file()]  # what this reproduction wrote, nothing else
    from ldpsim.browse import refresh_index

    index = refresh_index(folder.path, DEFAULT_BASE.parent)
    return ReproductionRun(name, summary, folder.path, files, seconds, seed, instances, index)


def format_summary(summary: pd.DataFrame, width: int = 100) -> str:
    """The summary as a table a person can read within ``width`` columns: text left-aligned,
    numbers right-aligned, ``paper`` blank where the paper gives no number, each criterion
    a numbered note below the table (wrapped), quantities shortened with "..." only if the
    table would still be wider (summary.csv keeps every cell whole)."""
    notes: dict[str, int] = {}
    for text in summary["criterion"]:
        if str(text) and str(text) not in notes:
            notes[str(text)] = len(notes) + 1
    cells = {
        "quantity": [str(x) for x in summary["quantity"]],
        "k": [str(x) for x in summary["k"]],
        "eps": [str(x) for x in summary["eps"]],
        "paper": ["" if np.isnan(x) else f"{x:.4g}" for x in summary["paper"]],
        "ours": [f"{x:.5g}" for x in summary["ours"]],
        "agrees": [str(x) for x in summary["agrees"]],
        "criterion": [f"[{notes[str(x)]}]" if str(x) in notes else "" for x in summary["criterion"]],
    }
    right = {"k", "paper", "ours"}
    size = {c: max([len(c), *map(len, vals)]) for c, vals in cells.items()}
    room = width - sum(v + 2 for c, v in size.items() if c != "quantity")
    if size["quantity"] > room >= 12:
        size["quantity"] = room
        cells["quantity"] = [q if len(q) <= room else q[: room - 3] + "..." for q in cells["quantity"]]

    def fmt(c: str, text: str) -> str:
        return text.rjust(size[c]) if c in right else text.ljust(size[c])

    lines = ["  ".join(fmt(c, c) for c in cells).rstrip()]
    for i in range(len(summary)):
        lines.append("  ".join(fmt(c, cells[c][i]) for c in cells).rstrip())
    for text, n in notes.items():
        lines += textwrap.wrap(text, width=width, initial_indent=f"[{n}] ", subsequent_indent=" " * (len(str(n)) + 3))
    return "\n".join(lines)


def write_summary(summary: pd.DataFrame, out_dir: Path) -> None:
    summary.to_csv(out_dir / "summary.csv", index=False, float_format="%.10g")
