"""Hostile population tables and data paths: hypothesis strategies for survey scenarios
whose ``population.file`` names something a table should not be, and the check every such
case must pass when ``ldpsim run`` takes it.

A case is a scenario (one question read from a column, with or without labels; or several
``[[questions]]`` reading the table) and a target for ``population.file``:

- a file inside the scenario's folder holding odd CSV (empty, a header only, a byte-order
  mark, duplicate or blank column names, quotes left open, NUL bytes, huge numbers, NaN,
  values that are normalisation twins, lines of a megabyte) or binary junk;
- something outside the folder: an absolute path, ``..``, a symlink out of the folder (to a
  file or a folder);
- something that is not a file: ``/dev/zero``, ``/dev/urandom``, a symlink to either, a
  FIFO, a directory, a missing file, a name with a NUL.

:func:`check_table_case` accepts exactly: exit 0 with a complete run, or exit 2 with one
line on stderr, within ``TIME_BOUND`` seconds and ``MEMORY_HEADROOM`` bytes of address
space (a read that never ends is a hang or a MemoryError, both findings). A secret planted
in every hostile file (never in a column the scenario reads, never in a header) must not
appear on stdout or stderr, nor in any file of the run folder other than a byte-for-byte
copy of the table; nothing outside the scenario's folder and the run folder may change.
"""

from __future__ import annotations

import json
import os
import resource
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.sim.fuzz import TWINS, check_complete_run, invoke, one_line_refusal

#: Seconds one case may take (a table read should be instant: a FIFO blocks forever).
TIME_BOUND = 20
#: Address space a case may add to the process (a read of /dev/zero would take it all).
MEMORY_HEADROOM = 3 * 2**30
#: Planted in every hostile file, in a column no scenario reads (and after the first line).
SECRET = "SECRET-d41d8cd9-never-print-me"

OUTCOMES: Counter = Counter()

LABELS = ["a", "b", "c"]
COLUMN = "answer"
OTHER = "notes"


# ----------------------------------------------------------------------------- contents
def _csv_line(cells: list[str]) -> str:
    return ",".join(cells)


@st.composite
def odd_values(draw) -> str:
    return draw(
        st.sampled_from(
            LABELS * 4
            + [
                "",
                " ",
                "a ",
                " b",
                "NaN",
                "nan",
                "inf",
                "-0",
                "1e309",
                "9" * 400,
                '"a"',
                '"a,b"',
                '"open',
                "\ufeffa",
                "a\x00",
                "\u00e9",
                *[t for pair in TWINS for t in pair],
                "x" * 5000,
            ]
        )
    )


@st.composite
def table_bytes(draw) -> bytes:
    """The bytes of a population table: odd CSV in many shapes, or junk."""
    shape = draw(
        st.sampled_from(
            ["rows"] * 6
            + [
                "empty",
                "header only",
                "blank lines",
                "junk",
                "not utf-8",
                "nul",
                "cr only",
                "one huge line",
                "bom",
                "duplicate columns",
                "blank column name",
                "ragged",
                "twins",
            ]
        )
    )
    secret_row = _csv_line(["a", SECRET])
    header = _csv_line([COLUMN, OTHER])
    rows = [_csv_line([draw(odd_values()), SECRET]) for _ in range(draw(st.integers(0, 12)))]
    body = "\n".join([header, *rows, secret_row]) + draw(st.sampled_from(["\n", "", "\r\n", "\n\n\n"]))
    if shape == "rows":
        return body.encode("utf-8")
    if shape == "empty":
        return b""
    if shape == "header only":
        return (header + "\n").encode()
    if shape == "blank lines":
        return b"\n\n  \n" + body.encode()
    if shape == "junk":  # a first line of junk (it may be read as a header), the secret after it
        # (never blank, never a quote: the secret must not become part of the header)
        first = b"#" + bytes(b for b in draw(st.binary(min_size=0, max_size=200)) if b not in b'\r\n"')
        return first + b"\n" + draw(st.binary(max_size=200)) + SECRET.encode() + draw(st.binary(max_size=50))
    if shape == "not utf-8":
        return header.encode() + b"\n\xff\xfe\xc3(," + SECRET.encode() + b"\n"
    if shape == "nul":
        return body.replace("\n", "\x00\n", 2).encode()
    if shape == "cr only":
        return body.replace("\n", "\r").encode()
    if shape == "one huge line":
        return (header + "\n" + "a," + SECRET + "x" * 2**20 + "\n").encode()
    if shape == "bom":
        return b"\xef\xbb\xbf" + body.encode()
    if shape == "duplicate columns":
        return body.replace(header, _csv_line([COLUMN, COLUMN]), 1).encode()
    if shape == "blank column name":
        return body.replace(header, _csv_line([COLUMN, OTHER, ""]), 1).encode()
    if shape == "ragged":
        return (body + "a," + SECRET + ",extra\n").encode()
    a, b = draw(st.sampled_from(TWINS))  # a column whose values are distinct but normalise alike
    return "\n".join([header, f"{a},{SECRET}", f"{b},{SECRET}", f"a,{SECRET}"]).encode() + b"\n"


# ----------------------------------------------------------------------------- targets
#: How population.file is given: the table inside the scenario's folder, or something else.
TARGETS = ["inside"] * 8 + [
    "absolute",
    "dotdot",
    "symlink out",
    "symlinked folder",
    "dev/zero",
    "dev/urandom",
    "symlink to dev/zero",
    "symlink to dev/urandom",
    "fifo",
    "directory",
    "missing",
    "nul in name",
    "empty name",
    "the scenario itself",
    "folder itself",
]


@dataclass(frozen=True)
class TableCase:
    template: str  # "labels", "no labels", "questions"
    target: str
    content: bytes
    size: int | None  # population.size (None: the rows as they are)
    mode: str

    def __repr__(self) -> str:  # what hypothesis prints for a failing case
        return (
            f"TableCase({self.template!r}, {self.target!r}, size={self.size}, mode={self.mode!r}, "
            f"content={self.content[:300]!r})"
        )


@st.composite
def table_cases(draw) -> TableCase:
    return TableCase(
        template=draw(st.sampled_from(["labels", "no labels", "questions"])),
        target=draw(st.sampled_from(TARGETS)),
        content=draw(table_bytes()),
        size=draw(st.sampled_from([None, None, 1, 50, 3000])),
        mode=draw(st.sampled_from(["individual", "individual", "aggregate"])),
    )


def _toml_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # JSON escapes are TOML basic-string escapes


def scenario_text(case: TableCase, file: str) -> str:
    size = "" if case.size is None else f"size = {case.size}\n"
    common = f"""
[arrivals]
kind = "poisson"
duration = 1.0
[network]
latency = {{ kind = "constant", value = 0.0 }}
loss = 0.0
[analyst]
checkpoints = {{ every = 0.5 }}
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
mode = "{case.mode}"
replications = 1
seed = 3
"""
    if case.template == "questions":
        return (
            f"""name = "tables"
[population]
file = {_toml_string(file)}
{size}[budget]
total = 1.0
strategy = "split"
[[questions]]
name = "{COLUMN}"
labels = {json.dumps(LABELS)}
mechanism = {{ kind = "randomized_response" }}
"""
            + common
        )
    labels = f"labels = {json.dumps(LABELS)}\n" if case.template == "labels" else ""
    return (
        f"""name = "tables"
[population]
file = {_toml_string(file)}
column = "{COLUMN}"
{labels}{size}[mechanism]
kind = "randomized_response"
eps = 1.0
"""
        + common
    )


def materialise(case: TableCase, work: Path) -> tuple[Path, Path, bytes | None]:
    """Lay the case out under ``work``: the scenario's folder ``work/scn`` (the scenario
    ``case.toml``, its ``data`` folder) and ``work/outside`` (files that are not the
    scenario's, each holding the secret). Returns the scenario, the outside folder and the
    bytes of the table as ldpsim would read them (None when it is not a regular file)."""
    scn, outside = work / "scn", work / "outside"
    (scn / "data").mkdir(parents=True)
    outside.mkdir()
    (outside / "table.csv").write_bytes(case.content if case.content else b"x\n" + SECRET.encode())
    (outside / "private.txt").write_text(f"{COLUMN},{OTHER}\na,{SECRET}\n")
    table: bytes | None = None
    t = case.target
    file = "data/table.csv"
    inside = scn / "data" / "table.csv"
    if t == "inside":
        inside.write_bytes(case.content)
        table = case.content
    elif t == "absolute":
        file, table = str(outside / "table.csv"), (outside / "table.csv").read_bytes()
    elif t == "dotdot":
        file, table = "../outside/table.csv", (outside / "table.csv").read_bytes()
    elif t == "symlink out":
        inside.symlink_to(outside / "table.csv")
        table = (outside / "table.csv").read_bytes()
    elif t == "symlinked folder":
        (scn / "data").rmdir()
        (scn / "data").symlink_to(outside, target_is_directory=True)
        table = (outside / "table.csv").read_bytes()
    elif t in ("dev/zero", "dev/urandom"):
        file = "/" + t
    elif t.startswith("symlink to "):
        inside.symlink_to("/" + t.removeprefix("symlink to "))
    elif t == "fifo":
        os.mkfifo(inside)
    elif t == "directory":
        inside.mkdir()
    elif t == "missing":
        pass
    elif t == "nul in name":
        file = "data/table\x00.csv"
    elif t == "empty name":
        file = ""
    elif t == "the scenario itself":
        file = "case.toml"
    elif t == "folder itself":
        file = "."
    else:  # pragma: no cover
        raise AssertionError(t)
    path = scn / "case.toml"
    path.write_text(scenario_text(case, file), encoding="utf-8")
    if t == "the scenario itself":
        table = path.read_bytes()
    return path, outside, table


def _snapshot(folder: Path) -> dict[str, Any]:
    """Every entry under ``folder`` (not following links): its type and, for files, bytes."""
    out: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        st_ = p.lstat()
        if stat.S_ISREG(st_.st_mode):
            out[str(p.relative_to(folder))] = p.read_bytes()
        elif stat.S_ISLNK(st_.st_mode):
            out[str(p.relative_to(folder))] = ("link", os.readlink(p))
        else:
            out[str(p.relative_to(folder))] = stat.S_IFMT(st_.st_mode)
    return out


class memory_guard:
    """Cap the process's address space at its current size plus ``MEMORY_HEADROOM`` for the
    block (an unbounded read then fails with MemoryError instead of taking the machine),
    and put the previous limit back after it."""

    def __enter__(self) -> "memory_guard":
        self.previous = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * resource.getpagesize()
        hard = self.previous[1]
        soft = size + MEMORY_HEADROOM
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return self

    def __exit__(self, *exc: Any) -> None:
        resource.setrlimit(resource.RLIMIT_AS, self.previous)


def check_table_case(case: TableCase, work: Path) -> str:
    """Run the case through ``ldpsim run``; ``"success"`` or ``"clean"``, else AssertionError."""
    path, outside, table = materialise(case, work)
    before = _snapshot(outside)
    out = work / "run"
    with memory_guard():
        code, stdout, err, _ = invoke(
            ["run", str(path), "--out", str(out), "--no-progress"], TIME_BOUND, f"a run reading {case.target!r}"
        )
    assert SECRET not in stdout and SECRET not in err, f"the table's contents were printed (exit {code}): {err[:500]!r}"
    assert _snapshot(outside) == before, "a file outside the scenario's folder and the run folder changed"
    if code == 2:
        one_line_refusal(err)
        assert not out.exists() or not any(p.name != ".lock" for p in out.iterdir()), "a refused run left files"
        OUTCOMES["clean"] += 1
        return "clean"
    assert code == 0, f"exit {code}: {err!r}"
    assert err == "", f"success, but stderr holds {err!r}"
    check_complete_run(out)
    for p in out.rglob("*"):
        if p.is_file() and not p.is_symlink() and SECRET.encode() in p.read_bytes():
            assert table is not None and p.read_bytes() == table, (
                f"{p.relative_to(out)} holds the table's secret column"
            )
    OUTCOMES["success"] += 1
    return "success"
