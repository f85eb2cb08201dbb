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
from ldpsim.browse import refresh_index
from ldpsim.errors import LdpSimError, invalid
from ldpsim.report.reproduction import RENDERED, render
from ldpsim.reproduce._study import eps_grid as _eps_grid

#: Default seed of every reproduction (the extremal-mechanisms paper is from 2014).
DEFAULT_SEED = 2014
#: Default number of random instances (the papers' setting).
DEFAULT_INSTANCES = 100
#: Default parent folder of the output folders.
DEFAULT_BASE = Path("reports") / "reproduce"
#: The options a reproduction may take beyond seed, instances, eps_grid and workers
#: (``register(..., options=(...))``): ``k``, alphabet sizes (a tuple of integers in
#: [2, MAX_K]); ``seeds``, a range of seeds run as one combined study (a reproduction
#: without it runs once per seed, each into its own subfolder).
OPTIONS = ("k", "seeds")
#: The largest alphabet size ``--k`` accepts: the linear programs are over 2^k staircase patterns.
MAX_K = 14
#: The most seeds one ``--seeds A..B`` may name.
MAX_SEEDS = 10_000


class ReproductionFunction(Protocol):
    def __call__(
        self, seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
    ) -> pd.DataFrame: ...


@dataclass(frozen=True)
class Reproduction:
    """A registered reproduction of a figure or table of a source paper."""

    name: str
    description: str  # one line, for ``ldpsim reproduce --list``
    source: str  # which seed and figure
    func: ReproductionFunction
    options: tuple[str, ...] = ()  # of OPTIONS: what the function takes as keyword arguments

    def takes(self, option: str) -> bool:
        return option in self.options


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
    seeds: tuple[int, ...] = ()  # a --seeds run: the seeds (summary then has a "seed" column when run per seed)
    runs: tuple[ReproductionRun, ...] = ()  # a --seeds run of a reproduction without "seeds": one run per seed

    @property
    def disagreements(self) -> pd.DataFrame:
        return self.summary[self.summary["agrees"] == "no"]


REPRODUCTIONS: dict[str, Reproduction] = {}


def register(
    name: str, description: str, source: str, *, options: tuple[str, ...] = ()
) -> Callable[[ReproductionFunction], ReproductionFunction]:
    """Decorator: register ``func`` as ``ldpsim reproduce NAME``. ``options`` names what it
    takes beyond the common arguments (of :data:`OPTIONS`), passed as keyword arguments:
    ``k=`` a tuple of alphabet sizes or None (its default), ``seeds=`` a tuple of seeds or
    None (then it uses ``seed``). A reproduction that does not take ``k`` refuses ``--k``."""
    options = tuple(options)
    unknown = [o for o in options if o not in OPTIONS]
    if unknown:
        raise LdpSimError(f"reproduction {name!r}: got options {unknown}, expected some of {list(OPTIONS)}")

    def deco(func: ReproductionFunction) -> ReproductionFunction:
        if name in REPRODUCTIONS:
            raise LdpSimError(f"reproduction {name!r} is registered twice")
        REPRODUCTIONS[name] = Reproduction(name, description, source, func, options)
        return func

    return deco


def get(name: str) -> Reproduction:
    """The reproduction called ``name``; an unknown name raises :class:`LdpSimError`."""
    if name not in REPRODUCTIONS:
        raise invalid("NAME", name, f"one of {', '.join(sorted(REPRODUCTIONS))} (see ldpsim reproduce --list)")
    return REPRODUCTIONS[name]


def names() -> list[str]:
    return sorted(REPRODUCTIONS)


def check_k(rep: Reproduction, k: Any, option: str = "--k") -> tuple[int, ...] | None:
    """``k`` as a tuple of distinct alphabet sizes in [2, MAX_K], in the order given (None
    stays None); refused with one line naming ``option`` when ``rep`` takes no ``k``."""
    if k is None:
        return None
    if not rep.takes("k"):
        takers = [n for n in names() if REPRODUCTIONS[n].takes("k")]
        raise LdpSimError(
            f"{option}: {rep.name} takes no alphabet size (reproductions that do: {', '.join(takers) or 'none'})"
        )
    values = [k] if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else k
    try:
        values = list(values)
    except TypeError:
        raise invalid(option, k, f"alphabet sizes, integers in [2, {MAX_K}]") from None
    if not values:
        raise invalid(option, k, f"alphabet sizes, integers in [2, {MAX_K}]")
    out = tuple(v.integer(x, option, minimum=2, maximum=MAX_K) for x in values)
    if len(set(out)) != len(out):
        raise invalid(option, k, "distinct alphabet sizes")
    return out


def check_seeds(seeds: Any, option: str = "--seeds") -> tuple[int, ...] | None:
    """``seeds`` as a tuple of distinct seeds >= 0 (at most MAX_SEEDS of them): a range,
    an iterable of integers, or the text ``"A..B"`` (both ends included). None stays None."""
    if seeds is None:
        return None
    expected = f"a range of seeds A..B with 0 <= A <= B, at most {MAX_SEEDS:,} of them"
    if isinstance(seeds, str):
        a, sep, b = seeds.strip().partition("..")
        try:
            lo, hi = int(a), int(b)
        except ValueError:
            raise invalid(option, seeds, expected) from None
        if not sep or lo < 0 or hi < lo or hi - lo + 1 > MAX_SEEDS:
            raise invalid(option, seeds, expected)
        return tuple(range(lo, hi + 1))
    try:
        values = list(seeds)
    except TypeError:
        raise invalid(option, seeds, expected) from None
    if not values or len(values) > MAX_SEEDS:
        raise invalid(option, seeds, expected)
    out = tuple(v.integer(x, option, minimum=0) for x in values)
    if len(set(out)) != len(out):
        raise invalid(option, seeds, "distinct seeds")
    return out


def check_eps_grid(eps_grid: Any, option: str = "--eps-grid") -> list[float] | None:
    """``eps_grid`` as a list of numbers in (0, 700], checked as every reproduction checks it
    (:func:`ldpsim.reproduce._study.eps_grid`), before any work; None stays None."""
    if eps_grid is None:
        return None

    try:
        values = np.atleast_1d(np.asarray(eps_grid, dtype=float))
    except (TypeError, ValueError):
        raise invalid(option, eps_grid, "a non-empty list of numbers in (0, 700]") from None
    try:
        _eps_grid(values)
    except LdpSimError:
        raise invalid(option, eps_grid, "a non-empty list of numbers in (0, 700]") from None
    return values.tolist()


def reproduce(
    name: str,
    *,
    seed: int | None = None,
    instances: int = DEFAULT_INSTANCES,
    out: str | os.PathLike | None = None,
    eps_grid: Any = None,
    workers: int = 1,
    force: bool = False,
    k: Any = None,
    seeds: Any = None,
) -> ReproductionRun:
    """Run the reproduction ``name``: writes its CSV, PNG, ``summary.csv``,
    ``metadata.json``, ``summary.md`` and ``report.html`` to ``out`` (default: a new folder
    ``reports/reproduce/NAME/<UTC time>-seed<seed>``, so a rerun never replaces an earlier
    one). summary.md and report.html are rendered from the other files
    (:func:`ldpsim.report.reproduction.render`), as ``ldpsim report`` renders them again.
    When the folder is under ``reports/``, ``reports/index.html`` is rewritten to list it
    (:func:`ldpsim.browse.refresh_index`).

    ``seed`` defaults to :data:`DEFAULT_SEED`. ``k`` (alphabet sizes) is passed to a
    reproduction registered with ``options=("k",)`` and refused by any other. ``seeds`` (a
    range, e.g. ``range(1, 11)`` or ``"1..10"``; not with ``seed``) runs the reproduction
    for each seed: one combined study when it is registered with ``"seeds"``, otherwise one
    run per seed, each into the subfolder ``seed<S>`` of ``out`` (its files the same, byte
    for byte, as those of a run with ``seed=S``, except the times in metadata.json and the
    pages rendered from it), with ``seeds.csv`` (every summary row, with its seed) and
    ``metadata.json`` beside them; the returned run's summary is then that of seeds.csv
    and ``runs`` holds the run of each seed (default folder
    ``reports/reproduce/NAME/<UTC time>-seeds<A>-<B>``).

    Every argument and the folder are checked before any work: a non-empty ``out`` is
    refused unless ``force`` (which replaces the files of the same name and leaves other
    files alone), and one that cannot be written is refused at once. The reproduction writes
    into a temporary folder whose files are put in place only at the end: an error or Ctrl-C
    leaves nothing (:class:`ldpsim._files.OutputFolder`)."""
    rep = get(name)
    if seed is not None and seeds is not None:
        raise invalid("--seeds", seeds, "either --seed or --seeds, not both")
    seed = DEFAULT_SEED if seed is None else v.integer(seed, "--seed", minimum=0)
    instances = v.integer(instances, "--instances", minimum=1)
    workers = v.integer(workers, "--workers", minimum=1)
    ks = check_k(rep, k)
    seed_list = check_seeds(seeds)
    grid = check_eps_grid(eps_grid)
    if seed_list is not None and not rep.takes("seeds"):
        return _reproduce_each(rep, seed_list, instances, out, grid, workers, force, ks)
    suffix = f"-seed{seed}" if seed_list is None else f"-seeds{seed_list[0]}-{seed_list[-1]}"
    with OutputFolder.of(out, DEFAULT_BASE / name, force=force, suffix=suffix) as folder:
        assert folder.work is not None
        first = seed if seed_list is None else seed_list[0]
        summary, seconds = _run_into(rep, folder.work, first, instances, grid, workers, ks, seed_list)
    files = [p for p in folder.files if p.is_file()]  # what this reproduction wrote, nothing else

    index = refresh_index(folder.path, DEFAULT_BASE.parent)
    return ReproductionRun(name, summary, folder.path, files, seconds, first, instances, index, seed_list or ())


def _run_into(
    rep: Reproduction,
    work: Path,
    seed: int,
    instances: int,
    eps_grid: list[float] | None,
    workers: int,
    ks: tuple[int, ...] | None,
    seeds: tuple[int, ...] | None,
) -> tuple[pd.DataFrame, float]:
    """Run ``rep`` into the folder ``work`` and write its metadata.json, summary.md and
    report.html there; returns the summary and the seconds the reproduction took."""
    extra: dict[str, Any] = {}
    if rep.takes("k"):
        extra["k"] = ks
    if rep.takes("seeds"):
        extra["seeds"] = seeds
    started, t0 = now(), time.perf_counter()
    summary = rep.func(seed, instances, work, eps_grid=eps_grid, workers=workers, **extra)
    seconds = time.perf_counter() - t0
    meta = {
        "reproduction": rep.name,
        "description": rep.description,
        "source": rep.source,
        "seed": seed,
        "instances": instances,
        "eps_grid": None if eps_grid is None else np.atleast_1d(np.asarray(eps_grid, dtype=float)).tolist(),
        **({"k": None if ks is None else list(ks)} if rep.takes("k") else {}),
        **({"seeds": _seed_text(seeds)} if seeds is not None else {}),
        "workers": workers,
        "ldpsim_version": package_version("ldpsim"),
        "python": platform.python_version(),
        "packages": versions(),
        "command_line": sys.argv,
        "started": started,
        "finished": now(),
        "seconds": round(seconds, 3),
        "disagreements_with_paper": summary.loc[summary["agrees"] == "no", "quantity"].tolist(),
        "files": sorted({p.name for p in work.iterdir() if not p.name.startswith(".")} | {"metadata.json", *RENDERED}),
    }
    write_json(work / "metadata.json", meta)
    for file, data in render(work).items():  # summary.md and report.html, from the files above
        (work / file).write_bytes(data)
    return summary, seconds


def _seed_text(seeds: tuple[int, ...]) -> str | list[int]:
    """``"A..B"`` for a contiguous range, else the list."""
    return f"{seeds[0]}..{seeds[-1]}" if seeds == tuple(range(seeds[0], seeds[-1] + 1)) else list(seeds)


def _reproduce_each(
    rep: Reproduction,
    seeds: tuple[int, ...],
    instances: int,
    out: Any,
    eps_grid: list[float] | None,
    workers: int,
    force: bool,
    ks: tuple[int, ...] | None,
) -> ReproductionRun:
    """``reproduce(name, seeds=...)`` of a reproduction without ``seeds``: one run per seed,
    into ``seed<S>/`` of one output folder, put in place whole at the end."""
    suffix = f"-seeds{seeds[0]}-{seeds[-1]}"
    parts: list[tuple[int, pd.DataFrame, float]] = []
    with OutputFolder.of(out, DEFAULT_BASE / rep.name, force=force, suffix=suffix) as folder:
        assert folder.work is not None
        started, t0 = now(), time.perf_counter()
        for sd in seeds:
            sub = folder.work / f"seed{sd}"
            sub.mkdir()
            summary, seconds = _run_into(rep, sub, sd, instances, eps_grid, workers, ks, None)
            parts.append((sd, summary, seconds))
        combined = pd.concat([p[1].assign(seed=p[0]) for p in parts], ignore_index=True)
        combined = combined[["seed", *[c for c in combined.columns if c != "seed"]]]
        combined.to_csv(folder.work / "seeds.csv", index=False, float_format="%.10g")
        write_json(
            folder.work / "metadata.json",
            {
                "reproduction_per_seed": rep.name,
                "source": rep.source,
                "seeds": _seed_text(seeds),
                "instances": instances,
                "eps_grid": eps_grid,
                **({"k": None if ks is None else list(ks)} if rep.takes("k") else {}),
                "workers": workers,
                "ldpsim_version": package_version("ldpsim"),
                "command_line": sys.argv,
                "started": started,
                "finished": now(),
                "seconds": round(time.perf_counter() - t0, 3),
                "folders": [f"seed{sd}" for sd in seeds],
            },
        )

    runs = []
    for sd, summary, seconds in parts:
        sub = folder.path / f"seed{sd}"
        runs.append(
            ReproductionRun(
                rep.name, summary, sub, sorted(p for p in sub.iterdir() if p.is_file()), seconds, sd, instances
            )
        )
    files = sorted(p for p in folder.path.iterdir() if p.is_file() and p.name in ("seeds.csv", "metadata.json"))
    index = refresh_index(folder.path, DEFAULT_BASE.parent)
    return ReproductionRun(
        rep.name, combined, folder.path, files, sum(p[2] for p in parts), seeds[0], instances, index, seeds, tuple(runs)
    )


def seed_spread(summary: pd.DataFrame) -> pd.DataFrame:
    """Per quantity of a per-seed summary (``seeds.csv``): the paper's number, the smallest,
    median and largest of ours over the seeds, and in how many seeds it agrees."""
    rows = []
    for (quantity, k, eps), g in summary.groupby(["quantity", "k", "eps"], sort=False):
        judged = g["agrees"].isin(["yes", "no"])
        rows.append(
            {
                "quantity": quantity,
                "k": k,
                "eps": eps,
                "paper": g["paper"].iloc[0],
                "min": g["ours"].min(),
                "median": g["ours"].median(),
                "max": g["ours"].max(),
                "agrees": f"{int((g['agrees'] == 'yes').sum())}/{int(judged.sum())}" if judged.any() else "",
            }
        )
    return pd.DataFrame(rows, columns=["quantity", "k", "eps", "paper", "min", "median", "max", "agrees"])


def format_summary(summary: pd.DataFrame, width: int = 100) -> str:
    """The summary as a table a person can read within ``width`` columns: text left-aligned,
    numbers right-aligned, ``paper`` blank where the paper gives no number, each criterion
    a numbered note below the table (wrapped), a quantity too long for the room left by the
    other columns wrapped at its words onto lines of its own below its row's first line
    (summary.csv keeps every cell on one line)."""
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
    lines = aligned(cells, right={"k", "paper", "ours"}, width=width).split("\n")
    for text, n in notes.items():
        lines += textwrap.wrap(text, width=width, initial_indent=f"[{n}] ", subsequent_indent=" " * (len(str(n)) + 3))
    return "\n".join(lines)


def format_spread(spread: pd.DataFrame, width: int = 100) -> str:
    """:func:`seed_spread`'s table within ``width`` columns, as :func:`format_summary` lays
    out a summary: long quantities wrapped at their words."""

    def num(x: Any) -> str:
        return "" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{float(x):.5g}"

    cells = {
        c: [num(x) for x in spread[c]] if c in ("paper", "min", "median", "max") else [str(x) for x in spread[c]]
        for c in spread.columns
    }
    return aligned(cells, right={"k", "paper", "min", "median", "max"}, width=width)


def aligned(cells: dict[str, list[str]], right: set[str], width: int = 100, wrap: str = "quantity") -> str:
    """Columns of text cells (column name -> its cells, in order) as a table: two spaces
    between columns, the ``right`` columns right-aligned, the others left-aligned. When
    the table is wider than ``width``, the column ``wrap`` gets the room the others leave
    (at least 12) and its cells are wrapped at words; a wrapped cell's further lines sit
    under it, indented two spaces, the other columns blank there."""
    size = {c: max([len(c), *map(len, vals)]) for c, vals in cells.items()}
    room = width - sum(v + 2 for c, v in size.items() if c != wrap)
    if wrap in cells and size[wrap] > room:
        size[wrap] = max(room, 12)
    rows = len(next(iter(cells.values()), []))
    indent = sum(size[c] + 2 for c in list(cells)[: list(cells).index(wrap)]) if wrap in cells else 0

    def fmt(c: str, text: str) -> str:
        return text.rjust(size[c]) if c in right else text.ljust(size[c])

    lines = ["  ".join(fmt(c, c) for c in cells).rstrip()]
    for i in range(rows):
        parts = [""]
        if wrap in cells:
            parts = textwrap.wrap(
                cells[wrap][i], width=size[wrap], subsequent_indent="  ", break_long_words=True, break_on_hyphens=False
            ) or [""]
        lines.append("  ".join(fmt(c, parts[0] if c == wrap else cells[c][i]) for c in cells).rstrip())
        lines += [" " * indent + part for part in parts[1:]]
    return "\n".join(lines)


def write_summary(summary: pd.DataFrame, out_dir: Path) -> None:
    summary.to_csv(out_dir / "summary.csv", index=False, float_format="%.10g")
