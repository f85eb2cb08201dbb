"""Parameter sweeps (``ldpsim sweep``): one scenario run at every point of a grid of values
of its keys, into one sweep folder, with one tidy table, a summary and a figure.

A grid is a list of dotted scenario keys, each with a list of values, from ``--grid
'KEY=[v1, v2]'`` options and/or a ``[sweep]`` table in the scenario file (removed before the
scenario is validated; an option replaces a key of the table of the same name, in the
table's place). The points are the cartesian product, in the order the keys are given, the
last key varying fastest. Each point is the base scenario's TOML table with the point's keys
set, written out as TOML and validated by the ordinary loader: every point is checked before
any runs.

Every point runs as an ordinary run directory, ``OUT/points/pNNN-<label>/``, through
:func:`ldpsim.sim.run_scenario` with the same root seed (common random numbers: replication
r of every point uses ``SeedSequence(seed, spawn_key=(r,))``). ``OUT/sweep.json`` records the
sweep at the start (the base scenario's text, the grid, the seed, the replications and each
point's scenario digest); ``OUT/scenario.toml`` is the base file as given (with the data
files it reads), so that :func:`resume_sweep` needs nothing outside the folder. At the end,
``sweep.csv`` holds the swept keys as leading columns, then every row of each point's
results.csv (cells copied as text, so the rows equal the point's file and the table is the
same bytes whether the sweep was interrupted or not), ``summary.csv`` the measured error per
point and task next to the exact one, and ``error.png`` the figure
(:mod:`ldpsim.report.sweep`).

The survey's frequency estimates are summarised and drawn; a sweep of a multi-party or
collection scenario runs alike and writes sweep.csv, without the summary rows and figure.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ldpsim import _progress
from ldpsim._files import (
    LOCK_NAME,
    DirectoryLock,
    check_output_folder,
    describe_os_error,
    open_input,
    remove_stale_temporaries,
    shell_word,
    write_bytes,
)
from ldpsim._meta import now, versions, write_json
from ldpsim._pool import start_pool, stop_pool
from ldpsim.errors import LdpSimError, invalid, show
from ldpsim.report import sweep as sweep_report
from ldpsim.runs import (
    RUN_FILES,
    Creation,
    RunInterrupted,
    RunOptions,
    check_input_names,
    check_inputs,
    check_shards,
    check_study_inputs,
    default_run_dir,
    record_resume,
    refuse_used,
    settle_seed,
    stopped_while_starting,
    write_input,
)
from ldpsim.sim.scenario import parse_scenario
from ldpsim.sim.scenario.common import read_scenario_text, read_toml
from ldpsim.sim.studies import resume_run, run_scenario, study_of
from ldpsim.sim.table import DataAccess, data_access

#: The table of a scenario file that lists the grid.
TABLE = "sweep"
#: Files of a sweep folder.
SWEEP_JSON, TABLE_CSV, SUMMARY_CSV, FIGURE_PNG, BASE_TOML, POINTS_DIR = (
    "sweep.json",
    "sweep.csv",
    "summary.csv",
    "error.png",
    "scenario.toml",
    "points",
)
#: With [[attackers]]: the gain and detection per point, and their surfaces.
ATTACK_CSV, ATTACK_PNG = "attack.csv", "attack.png"
#: Names a sweep folder's own files take (a copy of an input file may not take one).
SWEEP_FILES = RUN_FILES | {
    SWEEP_JSON,
    TABLE_CSV,
    SUMMARY_CSV,
    FIGURE_PNG,
    BASE_TOML,
    POINTS_DIR,
    ATTACK_CSV,
    ATTACK_PNG,
}
#: Version of the sweep folder's layout that :func:`resume_sweep` understands.
LAYOUT = 1
#: Most grid points one sweep may have.
MAX_POINTS = 1000
#: Scenario keys that name a data file: an absolute path given for one in ``grid`` (typed by
#: the user) may lie anywhere, one from the file's ``[sweep]`` table only where the file may.
DATA_KEYS = ("population.file",)
#: Keys a grid may not set: the sweep's own --seed and --replications hold for every point.
RESERVED = {"simulation.seed": "--seed", "simulation.replications": "--replications"}
_KEY = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_EXPECTED = "KEY=[v1, v2, ...] with KEY a dotted scenario key and a non-empty TOML or JSON list"


class SweepInterrupted(Exception):
    """The sweep stopped before it finished; its folder can be resumed."""

    def __init__(self, out_dir: Path, done: int, total: int) -> None:
        super().__init__(
            f"interrupted after {done} of {total} grid points; resume with: ldpsim sweep --resume {shell_word(out_dir)}"
        )
        self.out_dir, self.done, self.total = out_dir, done, total


# ----------------------------------------------------------------------------- the grid
@dataclass(frozen=True)
class Grid:
    """Swept keys and their values, in order; the points are their cartesian product, the
    last key varying fastest."""

    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]

    def points(self) -> list[dict[str, Any]]:
        return [dict(zip(self.keys, combo)) for combo in itertools.product(*self.values)]

    def size(self) -> int:
        return math.prod(len(v) for v in self.values)

    def as_json(self) -> list[list[Any]]:
        return [[k, list(v)] for k, v in zip(self.keys, self.values)]


def _integral(value: Any) -> Any:
    """Integral floats become ints (``1e4`` is a valid ``population.size``), in lists too."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _parse_list(text: str) -> Any:
    """A TOML inline array, else a JSON one; None if it is neither."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return None


def _check_entry(key: Any, values: Any, option: str, shown: str) -> tuple[str, list[Any]]:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise LdpSimError(
            f"{option}: got {shown}, expected {_EXPECTED} (KEY: letters, digits, '_' and '-', joined by dots)"
        )
    if not isinstance(values, list):
        why = "the values are not a list"
        if isinstance(values, str) and values.strip().startswith("[") and values.strip().endswith("]"):
            why += '; write text in double quotes, e.g. ["a", "b"]'
        raise LdpSimError(f"{option}: got {shown}, expected {_EXPECTED} ({why})")
    if not values:
        raise LdpSimError(f"{option}: got {shown}, expected {_EXPECTED} (the list is empty)")
    if key in RESERVED:
        raise LdpSimError(
            f"{option}: got {shown}, expected a key other than {key} (use {RESERVED[key]}: "
            "every point uses the same seed and replications)"
        )
    values = _integral(values)
    seen = []
    for v in values:
        if v in seen:
            raise LdpSimError(f"{option}: got {shown}, expected distinct values ({show(v)} is listed twice)")
        seen.append(v)
    return key, values


def parse_grid(
    entries: Sequence[str] | Mapping[str, Any] | None, option: str = "--grid"
) -> list[tuple[str, list[Any]]]:
    """``KEY=[v1, v2, ...]`` strings (the list as TOML or JSON), or a mapping key -> list:
    the entries, checked one by one (one line naming ``option`` and the entry otherwise)."""
    if entries is None:
        return []
    out: list[tuple[str, list[Any]]] = []
    if isinstance(entries, Mapping):
        items = [(k, v, f"{k}={show(v)}") for k, v in entries.items()]
    elif isinstance(entries, str):
        raise invalid(option, entries, "a list of KEY=[...] entries (not one string)")
    else:
        items = []
        for entry in entries:
            if not isinstance(entry, str) or "=" not in entry:
                raise LdpSimError(f"{option}: got {show(entry)}, expected {_EXPECTED} (no '=')")
            key, _, text = entry.partition("=")
            value = _parse_list(text.strip())
            items.append((key.strip(), value if value is not None else text, repr(entry)))
    keys: list[str] = []
    for key, values, shown in items:
        key, values = _check_entry(key, values, option, shown)
        _no_clash(key, keys, option, shown)
        keys.append(key)
        out.append((key, values))
    return out


def _no_clash(key: str, keys: Sequence[str], option: str, shown: str) -> None:
    for other in keys:
        if other == key:
            raise LdpSimError(f"{option}: got {shown}, expected each key once ({key} is given twice)")
        if key.startswith(other + ".") or other.startswith(key + "."):
            raise LdpSimError(
                f"{option}: got {shown}, expected keys that do not contain one another ({key} and {other})"
            )


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.extend(_flatten(v, key + "."))
        else:
            out.append((key, v))
    return out


def table_grid(raw: dict[str, Any], where: str) -> list[tuple[str, list[Any]]]:
    """The entries of the file's ``[sweep]`` table (``"mechanism.eps" = [...]`` or
    ``mechanism.eps = [...]``), checked as ``--grid`` entries are; [] without one."""
    table = raw.get(TABLE)
    if table is None:
        return []
    option = f"{where}: {TABLE}"
    if not isinstance(table, dict):
        raise invalid(option, table, 'a table of KEY = [values], e.g. [sweep] "mechanism.eps" = [0.5, 1, 2]')
    return parse_grid(dict(_flatten(table)), option)


def combine(
    from_table: list[tuple[str, list[Any]]], from_option: list[tuple[str, list[Any]]], option: str = "--grid"
) -> Grid:
    """The ``[sweep]`` entries with the option's: an option's key replaces the table's (in its
    place), new keys follow. At least one key, at most :data:`MAX_POINTS` points."""
    entries = dict(from_table)
    for key, values in from_option:
        clash = [k for k in entries if k != key and (k.startswith(key + ".") or key.startswith(k + "."))]
        if clash:
            raise LdpSimError(
                f"{option}: got {key}, expected keys that do not contain "
                f"one another ({key} and {clash[0]} of [{TABLE}])"
            )
        entries[key] = values
    if not entries:
        raise LdpSimError(
            f"{option}: got nothing, expected at least one {option} "
            f"KEY=[v1, v2, ...] or a [{TABLE}] table in the scenario file"
        )
    grid = Grid(tuple(entries), tuple(tuple(v) for v in entries.values()))
    if grid.size() > MAX_POINTS:
        raise LdpSimError(f"{option}: got {grid.size():,} grid points, expected at most {MAX_POINTS:,}")
    return grid


# ----------------------------------------------------------------------------- TOML text of a point
def _toml_key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if hasattr(value, "isoformat"):  # TOML dates and times
        return str(value.isoformat())
    raise TypeError(f"no TOML form for {value!r}")  # pragma: no cover - tomllib gives nothing else


def to_toml(raw: Mapping[str, Any]) -> str:
    """TOML text of a table: top-level values first, then one ``[section]`` per table (its
    own tables inline). Reading it back gives ``raw``."""
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in raw.items() if not isinstance(v, Mapping)]
    for k, v in raw.items():
        if isinstance(v, Mapping):
            lines += ["", f"[{_toml_key(k)}]"] + [f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    text = "\n".join(lines) + "\n"
    if tomllib.loads(text) != raw:  # pragma: no cover - a value the writer does not round-trip
        raise LdpSimError("scenario: got a value that cannot be written back as TOML, expected plain TOML values")
    return text


def _item(node: Any, part: str) -> tuple[bool, Any]:
    """``node[part]``: a table's key, or an array of tables' entry when ``part`` is its
    index (``attackers.0.share``); (False, None) when there is none."""
    if isinstance(node, list) and part.isdigit():
        i = int(part)
        return (True, node[i]) if i < len(node) else (False, None)
    if isinstance(node, Mapping) and part in node:
        return True, node[part]
    return False, None


def _set(raw: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``raw`` with the dotted ``key`` set (tables made on the way; an integer part
    names an existing entry of an array of tables)."""
    out = _copy(raw)
    node: Any = out
    parts = key.split(".")
    for part in parts[:-1]:
        found, child = _item(node, part)
        if not found:
            child = node.setdefault(part, {})
        node = child
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _lookup(raw: Mapping[str, Any], key: str) -> tuple[bool, str | None]:
    """Whether ``key`` is in ``raw``, and the first prefix of it that holds a value that is
    not a table (None if there is none)."""
    node: Any = raw
    parts = key.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, (Mapping, list)) or (isinstance(node, list) and not part.isdigit()):
            return False, ".".join(parts[:i])
        found, node = _item(node, part)
        if not found:
            return False, None
    return True, None


# ----------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class Point:
    """One grid point: its index, folder name, values, TOML text and built scenario."""

    index: int
    label: str
    values: dict[str, Any]
    text: str
    scenario: Any

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class Plan:
    """A validated sweep: the base scenario (its text as given, where it came from, its table
    without ``[sweep]``), the grid and every point, checked."""

    base_text: str
    where: str
    base: dict[str, Any]
    grid: Grid
    points: list[Point]

    @property
    def name(self) -> str:
        return str(self.points[0].scenario.name)

    def check_shards(self, shards: int) -> None:
        """One line naming ``--shards`` unless every point's replications can be cut so."""
        for pt in self.points:
            check_shards(study_of(pt.scenario), shards)


def _label(index: int, width: int, values: Mapping[str, Any]) -> str:
    parts = []
    for key, value in values.items():
        shown = value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else json.dumps(value)
        parts.append(f"{key.rsplit('.', 1)[-1]}{shown}")
    tail = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join(parts)).strip("_.")[:60].rstrip("_.-")
    return f"p{index:0{width}d}" + (f"-{tail}" if tail else "")


def _describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={show(v)}" for k, v in values.items())


def plan(
    base_text: str,
    where: str,
    grid: Sequence[str] | Mapping[str, Any] | None = None,
    *,
    option: str = "--grid",
    replications: int | None = None,
    allow_outside_data: bool = False,
) -> Plan:
    """Read the base scenario text, take its ``[sweep]`` table, add ``grid`` and build and
    validate the scenario of every point (with ``replications`` if given): any problem is
    one LdpSimError, before anything runs. Data files lie where the scenario's own may
    (``allow_outside_data``), or anywhere for an absolute path given in ``grid`` for one of
    ``DATA_KEYS`` (not on ``--resume``: the grid is then read back from the folder)."""
    _check_replications(replications)
    raw = read_toml(base_text, where)
    from_table = table_grid(raw, where)
    typed = parse_grid(grid, option)
    paths = frozenset(v for k, vs in typed if k in DATA_KEYS for v in vs if isinstance(v, str) and os.path.isabs(v))
    with data_access(DataAccess(allow_outside_data, paths if option != "--resume" else frozenset())):
        return _plan(base_text, where, raw, combine(from_table, typed, option), option, replications)


def _plan(base_text: str, where: str, raw: dict[str, Any], g: Grid, option: str, replications: int | None) -> Plan:
    base = {k: v for k, v in raw.items() if k != TABLE}
    known = [k for k, _ in _flatten(base)]
    for key, values in zip(g.keys, g.values):
        present, blocked = _lookup(base, key)
        shown = f"{key}={show(list(values))}"
        if blocked is not None:
            raise LdpSimError(
                f"{option}: got {shown!r}, expected a key inside a table ({blocked} is a value, not a table)"
            )
        if present:
            continue
        try:  # a key the file does not set: is it a key of this kind of scenario at all?
            parse_scenario(to_toml(_set(base, key, values[0])), where)
        except LdpSimError as exc:
            if "no such key" in str(exc) or str(exc).endswith("expected no such key"):
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise LdpSimError(
                    f"{option}: got {shown!r}, expected a key of the scenario ({key}: no such key{hint})"
                ) from None
    points = []
    combos = g.points()
    width = max(3, len(str(len(combos) - 1)))
    for i, chosen in enumerate(combos):
        raw_i = base
        for key, value in chosen.items():
            raw_i = _set(raw_i, key, value)
        text = to_toml(raw_i)
        try:
            scenario = parse_scenario(text, where)
            if replications is not None:
                scenario = scenario.with_overrides(replications=replications)
        except LdpSimError as exc:
            raise LdpSimError(f"{option}: grid point {i} of {len(combos)} ({_describe(chosen)}): {exc}") from None
        points.append(Point(i, _label(i, width, chosen), chosen, text, scenario))
    return Plan(base_text, where, base, g, points)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: its folder, the tidy table (the swept keys, then each point's
    results rows), the summary of errors, the files, the seed and the points' run
    directories."""

    out_dir: Path
    grid: Grid
    table: pd.DataFrame
    summary: pd.DataFrame
    table_path: Path
    summary_path: Path
    figure_path: Path | None
    seed: int
    replications: int
    run_dirs: list[Path]


def _check_replications(replications: Any) -> None:
    if replications is not None and (
        isinstance(replications, bool) or not isinstance(replications, int) or replications < 1
    ):
        raise invalid("--replications", replications, "an integer >= 1")


def run_sweep(
    scenario: str | Path,
    grid: Sequence[str] | Mapping[str, Any] | None = None,
    *,
    seed: int | None = None,
    replications: int | None = None,
    workers: int = 1,
    out: str | Path | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
    interrupt_within: int | None = None,
    shards: int = 1,
    point_reports: bool = True,
    allow_outside_data: bool = False,
) -> SweepResult:
    """Run the scenario file ``scenario`` at every point of its ``[sweep]`` table and
    ``grid`` (``["mechanism.eps=[0.5, 1, 2]"]`` or ``{"mechanism.eps": [0.5, 1, 2]}``) into
    the new or empty folder ``out`` (default ``reports/<name>-sweep/<UTC time>-seed<seed>``).

    ``seed`` (default: the scenario's ``simulation.seed``, else fresh entropy) and
    ``replications`` (default: the scenario's) hold for every point. ``workers`` > 1 runs each
    point's replications in one process pool kept for the whole sweep; ``executor`` (a Dask
    cluster's, say) is used for every point instead. ``interrupt_after`` stops the sweep
    after that many points, as a Ctrl-C would (``interrupt_within``: after that many
    replications of the next point), to try out :func:`resume_sweep`. ``shards`` cuts every
    replication of an individual-mode survey into that many pieces (``ldpsim run --shards``).
    ``point_reports=False`` leaves out each point's own report (its figures and pages, a
    second or two per point; ``ldpsim report DIR`` makes one later): the sweep's table,
    summary and figure are the same. ``allow_outside_data``: the points' data files may lie
    outside the scenario's folder (an absolute path in ``grid`` may anyway). The run keywords
    are those of :class:`ldpsim.runs.RunOptions` (``report`` is ``point_reports``), which hold
    for every point, except ``interrupt_after``: points here."""
    option = "--grid" if grid is None or not isinstance(grid, Mapping) else "grid"
    options = RunOptions(
        seed=seed,
        replications=replications,
        workers=workers,
        out=out,
        executor=executor,
        progress=progress,
        interrupt_after=interrupt_after,
        shards=shards,
        report=point_reports,
    )
    if out is not None:
        check_output_folder(out, option="--out", hint="use --resume to continue")
    text, where = read_scenario_text(scenario)
    p = plan(text, where, grid, option=option, replications=replications, allow_outside_data=allow_outside_data)
    p.check_shards(options.shards)
    first = p.points[0].scenario
    seed = settle_seed(seed, first.spec.simulation.seed)
    reps = int(first.spec.simulation.replications)
    out_dir = Path(out) if out is not None else default_run_dir(f"{p.name}-sweep", seed)
    inputs: dict[str, bytes] = {}
    for pt in p.points:  # the data files the points read (a swept population.file: each of them)
        inputs.update(study_of(pt.scenario).inputs())
    check_input_names(inputs, "population.file", SWEEP_FILES)
    # made as a run directory is: what this made goes again if the start fails
    with Creation(out_dir, "--out", default=out is None) as made:
        made.lock = lock = DirectoryLock(out_dir, "--out").acquire()
        refuse_used(out_dir, "--out", ignore=(LOCK_NAME,))  # another process may have been quicker
        made.owned = True

        write_bytes(out_dir / BASE_TOML, text.encode())
        for name, data in inputs.items():
            write_input(out_dir, name, data)
        record = {
            "layout": LAYOUT,
            "kind": "sweep",
            "scenario": p.name,
            "scenario_path": where,
            "base_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "grid": p.grid.as_json(),
            "order": "cartesian product in the order of the keys, the last key varying fastest",
            "seed": seed,
            "replications": reps,
            "points": [{"label": pt.label, "values": pt.values, "scenario_sha256": pt.digest()} for pt in p.points],
            "ldpsim_version": versions()["ldpsim"],
            "command_line": sys.argv,
            "started": now(),
            "inputs": {name: hashlib.sha256(data).hexdigest() for name, data in inputs.items()},
        }
        write_json(out_dir / SWEEP_JSON, record)
    return _execute(out_dir, p, record, seed, reps, options, interrupt_within, lock)


def resume_sweep(
    out_dir: str | Path,
    *,
    workers: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
    interrupt_within: int | None = None,
    shards: int = 1,
    point_reports: bool = True,
    allow_outside_data: bool = False,
) -> SweepResult:
    """Finish an interrupted sweep: points already finished are kept, a point interrupted
    half-way is resumed (:func:`ldpsim.sim.resume_run`), the others are run; then the
    tables and the figure, the same bytes as an uninterrupted sweep's. Data files outside
    the sweep folder need ``allow_outside_data`` again (the folder does not grant it)."""
    options = RunOptions(
        workers=workers,
        executor=executor,
        progress=progress,
        interrupt_after=interrupt_after,
        shards=shards,
        report=point_reports,
    )
    out_dir = Path(out_dir)
    bad = f"--resume: got {str(out_dir)!r}, expected"
    if not (out_dir / SWEEP_JSON).is_file():
        raise LdpSimError(f"{bad} a sweep folder made by ldpsim sweep (with {SWEEP_JSON})")
    try:
        lock = DirectoryLock(out_dir, "--resume").acquire()
    except OSError as exc:
        raise LdpSimError(f"{bad} a sweep folder that can be written ({describe_os_error(exc)})") from None
    try:
        try:
            record = json.loads((out_dir / SWEEP_JSON).read_text())
            text = (out_dir / BASE_TOML).read_text()
            layout, seed, reps = int(record["layout"]), int(record["seed"]), int(record["replications"])
            grid, digest, recorded = record["grid"], record["base_sha256"], record["points"]
        except (OSError, ValueError, KeyError, TypeError):
            raise LdpSimError(
                f"{bad} a sweep folder made by this version of ldpsim sweep ({SWEEP_JSON} and {BASE_TOML})"
            ) from None
        if layout != LAYOUT:
            raise LdpSimError(f"{bad} a sweep folder of layout {LAYOUT} (it has {layout})")
        if hashlib.sha256(text.encode()).hexdigest() != digest:
            raise LdpSimError(f"{bad} its {BASE_TOML} unchanged since the sweep started")
        check_inputs(out_dir, record, bad, what="sweep")  # the points not yet run read these copies
        where = str(out_dir / BASE_TOML)
        base_raw = {k: v for k, v in read_toml(text, where).items() if k != TABLE}
        p = plan(
            to_toml(base_raw),
            where,
            {k: v for k, v in grid},
            option="--resume",
            replications=reps,
            allow_outside_data=allow_outside_data,
        )
        p = Plan(text, where, p.base, p.grid, p.points)
        p.check_shards(options.shards)
        if [pt.digest() for pt in p.points] != [r.get("scenario_sha256") for r in recorded]:
            raise LdpSimError(
                f"{bad} grid points that this version of ldpsim builds as the sweep did (their scenarios differ)"
            )
        for pt in p.points:
            check_study_inputs(study_of(pt.scenario), {"inputs": record.get("inputs", {})}, bad, what="sweep")
        remove_stale_temporaries(out_dir)
        record_resume(record, workers, f"{bad} {SWEEP_JSON} as the sweep wrote it")
        write_json(out_dir / SWEEP_JSON, record)
    except BaseException:
        lock.release()
        raise
    return _execute(out_dir, p, record, seed, reps, options, interrupt_within, lock, allow_outside_data)


def _state(run_dir: Path, point: Point, seed: int, reps: int) -> str:
    """``"new"``, ``"partial"`` (resume it) or ``"done"``, after checking that the run
    directory is this point's."""
    if not run_dir.exists():
        return "new"
    names = {q.name for q in run_dir.iterdir()}
    if names <= {LOCK_NAME} or stopped_while_starting(run_dir):  # made, then stopped before any replication
        shutil.rmtree(run_dir)
        return "new"
    bad = f"--resume: got {str(run_dir)!r}, expected"
    try:
        meta = json.loads((run_dir / "metadata.json").read_text())
        text = (run_dir / "scenario.toml").read_text()
    except (OSError, ValueError):
        raise LdpSimError(
            f"{bad} the run directory of grid point {point.index} (delete it to run that point again)"
        ) from None
    if text != point.text or meta.get("seed") != seed or meta.get("replications") != reps:
        raise LdpSimError(
            f"{bad} the run of grid point {point.index} with this sweep's scenario, seed and replications"
        )
    return "done" if meta.get("finished") and (run_dir / "results.csv").is_file() else "partial"


def _execute(
    out_dir: Path,
    p: Plan,
    record: dict[str, Any],
    seed: int,
    reps: int,
    options: RunOptions,
    interrupt_within: int | None,
    lock: DirectoryLock,
    allow_outside_data: bool = False,
) -> SweepResult:
    """Run the points not yet finished (``options.interrupt_after``: points), then the tables."""
    workers, executor, interrupt_after = options.workers, options.executor, options.interrupt_after
    total = len(p.points)
    run_dirs = [out_dir / POINTS_DIR / pt.label for pt in p.points]
    own = executor is None and workers > 1
    pool = None
    done = 0
    try:
        states = [_state(d, pt, seed, reps) for d, pt in zip(run_dirs, p.points)]
        done = states.count("done")
        finished_now = 0
        if own:
            pool = start_pool(workers)
        run_with = pool if own else executor
        with _progress.bar(total, f"{p.name} sweep", "point", show=options.progress, initial=done):
            for pt, run_dir, state in zip(p.points, run_dirs, states):
                if state == "done":
                    continue
                cut = interrupt_within if interrupt_after is not None and finished_now >= interrupt_after else None
                point = replace(
                    options,
                    seed=None,
                    replications=None,
                    out=None,
                    executor=run_with,
                    progress=False,
                    interrupt_after=cut,
                )  # a resume's: the run's own seed, count and folder
                if state == "new":
                    run_scenario(pt.scenario, options=replace(point, seed=seed, replications=reps, out=run_dir))
                else:
                    resume_run(run_dir, allow_outside_data=allow_outside_data, options=point)
                done += 1
                finished_now += 1
                _progress.advance()
                if (
                    interrupt_after is not None
                    and interrupt_within is None
                    and finished_now >= interrupt_after
                    and done < total
                ):
                    raise KeyboardInterrupt  # (with interrupt_within, the next point's run stops itself)
        table_bytes = tidy_csv(p.grid.keys, run_dirs, [pt.values for pt in p.points])
        write_bytes(out_dir / TABLE_CSV, table_bytes)
        table = read_table(out_dir / TABLE_CSV)
        summary = sweep_report.error_summary(table, p.grid.keys)
        write_bytes(out_dir / SUMMARY_CSV, summary.to_csv(index=False).encode())
        figure = sweep_report.error_figure(
            summary, p.grid.keys, title=f"{p.name}: error of the final estimates, {reps} replication(s), seed {seed}"
        )
        figure_path = None
        if figure is not None:
            figure_path = out_dir / FIGURE_PNG
            write_bytes(figure_path, figure)
        attacks = sweep_report.attack_summary(table, p.grid.keys)
        if not attacks.empty:  # fake respondents: the gain and detection surfaces
            write_bytes(out_dir / ATTACK_CSV, attacks.to_csv(index=False).encode())
            surfaces = sweep_report.attack_figure(
                attacks, p.grid.keys, title=f"{p.name}: fake respondents, {reps} replication(s), seed {seed}"
            )
            if surfaces is not None:
                write_bytes(out_dir / ATTACK_PNG, surfaces)
        record["finished"] = now()
        write_json(out_dir / SWEEP_JSON, record)
    except (KeyboardInterrupt, RunInterrupted):
        if pool is not None:
            stop_pool(pool)
            pool = None
        raise SweepInterrupted(out_dir, done, total) from None
    except OSError as exc:
        raise LdpSimError(
            f"--out: cannot write in {str(out_dir)!r} ({describe_os_error(exc)}); finished points are "
            f"kept: free some space, then resume with: ldpsim sweep --resume {shell_word(out_dir)}"
        ) from None
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
        lock.release()
    return SweepResult(
        out_dir, p.grid, table, summary, out_dir / TABLE_CSV, out_dir / SUMMARY_CSV, figure_path, seed, reps, run_dirs
    )


def _cell(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value) if not isinstance(value, float) else repr(value)
    return json.dumps(value)


def tidy_csv(keys: Sequence[str], run_dirs: Sequence[Path], values: Sequence[Mapping[str, Any]] | None = None) -> bytes:
    """sweep.csv: the swept keys' values as leading columns, then every row of each point's
    results.csv with its cells as they are in that file (read as text, not parsed)."""
    frames: list[pd.DataFrame] = []
    for run_dir in run_dirs:
        meta_values = values[len(frames)] if values is not None else None
        with open_input(run_dir / "results.csv") as f:
            frame = pd.read_csv(f, dtype=str, keep_default_na=False, na_filter=False)
        point = meta_values if meta_values is not None else _values_of(run_dir, keys)
        for i, key in enumerate(keys):
            frame.insert(i, key, _cell(point[key]))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).fillna("").to_csv(index=False).encode()


def _values_of(run_dir: Path, keys: Sequence[str]) -> dict[str, Any]:
    """The swept values of a point, from its scenario.toml."""
    raw = tomllib.loads((run_dir / "scenario.toml").read_text())
    out = {}
    for key in keys:
        node: Any = raw
        for part in key.split("."):
            node = _item(node, part)[1]
        out[key] = node
    return out


#: Columns of the points' results that hold labels: read as text ("1", "01" and "" stay distinct).
TEXT_COLUMNS = ("reason", "task", "quantity", "category", "method", "policy", "protocol", "role", "arm")


def read_table(path: str | Path) -> pd.DataFrame:
    """sweep.csv as a data frame: label columns stay text, an empty cell elsewhere is NaN."""
    with open_input(path) as f:
        columns = list(pd.read_csv(f, nrows=0).columns)
    text = [c for c in columns if c in TEXT_COLUMNS]
    with open_input(path) as f:
        return pd.read_csv(
            f,
            dtype=dict.fromkeys(text, str),
            keep_default_na=False,
            na_values={c: [""] for c in columns if c not in text},
        )


def read_sweep(out_dir: str | Path) -> SweepResult:
    """A finished sweep folder read back (its table and summary as data frames)."""
    out_dir = Path(out_dir)
    try:
        record = json.loads((out_dir / SWEEP_JSON).read_text())
        grid = Grid(tuple(k for k, _ in record["grid"]), tuple(tuple(v) for _, v in record["grid"]))
        table = read_table(out_dir / TABLE_CSV)
        with open_input(out_dir / SUMMARY_CSV) as f:
            summary = pd.read_csv(f)
    except (OSError, ValueError, KeyError, TypeError):
        raise invalid("out_dir", str(out_dir), "a finished sweep folder (sweep.json, sweep.csv, summary.csv)") from None
    figure = out_dir / FIGURE_PNG
    return SweepResult(
        out_dir,
        grid,
        table,
        summary,
        out_dir / TABLE_CSV,
        out_dir / SUMMARY_CSV,
        figure if figure.is_file() else None,
        int(record["seed"]),
        int(record["replications"]),
        [out_dir / POINTS_DIR / r["label"] for r in record["points"]],
    )
