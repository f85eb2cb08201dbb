"""Tampered run folders: hypothesis strategies that take a small run folder (finished, or
interrupted after its first replication) and tamper with it, and the check that
``ldpsim run --resume DIR`` and then ``ldpsim report DIR`` must pass on what is left.

Tampering: ``.lock`` replaced by a symlink to a file outside the folder, or by a folder;
``scenario.toml`` or the population table the run copied edited, deleted, or swapped for a
symlink out of the folder; ``results.csv``, ``metadata.json`` and the replication files
truncated, filled with junk, given odd values or deleted; the replications folder a
symlink out of the folder; report files deleted or made folders; a file made a FIFO or a
symlink to /dev/zero.

:func:`check_tampered_run` accepts exactly, for each command: exit 0 with a complete run
folder, or exit 2 with one line on stderr; an edited scenario or table must be refused (exit
2) by both. Never a traceback, a warning or a hang, never a byte changed outside the run
folder (a symlinked ``.lock`` must not be written through), never the contents of a file
outside the folder on stdout or stderr.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.sim.fuzz import ODD, check_complete_run, invoke, one_line_refusal
from tests.sim.fuzz_paths import SECRET, _snapshot, memory_guard

#: Seconds one command on a tampered folder may take (the runs are tiny).
TIME_BOUND = 30

OUTCOMES: Counter = Counter()

TABLE = "answer\n" + "\n".join("abcab"[i % 5] for i in range(30)) + "\n"

SURVEY = """name = "tamper"
[population]
file = "data/table.csv"
column = "answer"
labels = ["a", "b", "c"]
[mechanism]
kind = "randomized_response"
eps = 1.0
[arrivals]
kind = "poisson"
duration = 1.0
[network]
latency = { kind = "constant", value = 0.0 }
[analyst]
checkpoints = { every = 0.5 }
tasks = [{ kind = "frequency", confidence = 0.95 }]
[simulation]
replications = REPS
seed = 3
"""

COLLECTION = """kind = "collection"
name = "tamper_collection"
policies = [
    { name = "plain", kind = "plain" },
    { name = "budget", kind = "filter", filter = "basic", budget_eps = 1.5 },
]
[population]
labels = ["a", "b", "c"]
distribution = [0.5, 0.3, 0.2]
size = 60
[collection]
periods = 3
[mechanism]
kind = "randomized_response"
eps = 1.0
[shuffler]
batch = 10
[simulation]
seed = 3
replications = REPS
"""

MULTIPARTY = """kind = "multiparty"
name = "tamper_multiparty"
protocols = ["universal"]
[parties]
k = 3
eps = 1.0
[task]
kind = "xor"
[rounds]
count = 200
batch = 100
interval = 0.1
[network]
latency = { kind = "constant", value = 0.0 }
[simulation]
seed = 3
replications = REPS
"""

#: name -> (scenario text, replications, interrupted after the first replication)
BASES = {
    "table finished": (SURVEY, 2, False),
    "table interrupted": (SURVEY, 3, True),
    "collection finished": (COLLECTION, 1, False),
    "multiparty interrupted": (MULTIPARTY, 2, True),
}

_MADE: dict[str, Path] = {}
_ROOT: list[Path] = []


def base_run(name: str) -> Path:
    """The pristine run folder ``name`` of BASES, made once per process."""
    if name in _MADE:
        return _MADE[name]
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="ldpsim-tamper-")))
        atexit.register(shutil.rmtree, _ROOT[0], True)
    text, reps, cut = BASES[name]
    folder = _ROOT[0] / name.replace(" ", "_")
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "table.csv").write_text(TABLE)
    path = folder / "case.toml"
    path.write_text(text.replace("REPS", str(reps)))
    run = folder / "run"
    if cut:
        from ldpsim.runs import RunInterrupted
        from ldpsim.sim import run_scenario

        try:
            run_scenario(path, out=run, progress=False, interrupt_after=1)
        except RunInterrupted:
            pass
        else:  # pragma: no cover
            raise AssertionError("the run was not interrupted")
    else:
        code, _, err, _ = invoke(["run", str(path), "--out", str(run), "--no-progress"])
        assert code == 0, err
    _MADE[name] = run
    return run


# ----------------------------------------------------------------------------- tampering
#: op -> whether the commands must refuse the folder afterwards
OPS = {
    "lock -> symlink out": False,
    "lock -> folder": False,
    "lock deleted": False,
    "scenario edited": True,
    "scenario value changed": True,
    "scenario junk": True,
    "scenario deleted": True,
    "scenario -> symlink out": True,
    "table edited": True,
    "table value changed": True,
    "table deleted": True,
    "table -> symlink out": True,
    "table -> folder": True,
    "results truncated": False,
    "results junk": False,
    "results emptied": False,
    "results deleted": False,
    "metadata junk": False,
    "metadata not an object": False,
    "metadata key deleted": False,
    "metadata value changed": False,
    "metadata -> symlink out": False,
    "replication file deleted": False,
    "replication file junk": False,
    "replication record junk": False,
    "replications -> symlink out": False,
    "replications deleted": False,
    "summary deleted": False,
    "report.html -> folder": False,
    "figure deleted": False,
    "results -> fifo": False,
    "metadata -> /dev/zero": False,
    "results -> /dev/zero": False,
}
META_KEYS = ["kind", "layout", "seed", "replications", "scenario_sha256", "run_key", "finished", "spec", "resumes"]


@dataclass(frozen=True)
class TamperCase:
    base: str
    ops: tuple[tuple[str, Any], ...]  # (op, its drawn argument)
    refuse: bool  # an op was drawn after which both commands must refuse


@st.composite
def tamper_cases(draw) -> TamperCase:
    base = draw(st.sampled_from(sorted(BASES)))
    names = sorted(OPS)
    if not base.startswith("table"):
        names = [n for n in names if not n.startswith("table")]
    ops = []
    for op in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)):
        if op == "metadata key deleted":
            arg: Any = draw(st.sampled_from(META_KEYS))
        elif op == "metadata value changed":
            arg = (draw(st.sampled_from(META_KEYS)), draw(st.sampled_from(ODD)))
        elif op in (
            "results truncated",
            "scenario junk",
            "results junk",
            "metadata junk",
            "replication file junk",
            "replication record junk",
        ):
            arg = draw(st.binary(max_size=64)) if "junk" in op else draw(st.floats(0, 1))
        else:
            arg = None
        ops.append((op, arg))
    return TamperCase(base, tuple(ops), any(OPS[op] for op, _ in ops))


def _replace(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def tamper(run: Path, outside: Path, op: str, arg: Any) -> bool:
    """Apply ``op`` to the run folder ``run``; whether it changed anything (a file the op
    needs may be gone already)."""
    reps = sorted((run / "replications").glob("rep-*.csv")) if (run / "replications").is_dir() else []
    target = {
        "lock": run / ".lock",
        "scenario": run / "scenario.toml",
        "table": run / "data" / "table.csv",
        "results": run / "results.csv",
        "metadata": run / "metadata.json",
        "summary": run / "summary.md",
        "report.html": run / "report.html",
        "replications": run / "replications",
    }.get(op.split()[0])
    if target is not None and not target.exists() and not target.is_symlink() and not op.startswith("lock"):
        return False
    # ops that read or write the file in place (emptying included: writing to a FIFO an earlier
    # op made blocks for ever) need a plain file; "metadata key deleted" reads it to edit it
    reads = op == "metadata key deleted" or not (
        op.startswith("lock") or op.endswith((" deleted", "-> folder", "-> fifo", "-> /dev/zero"))
    )
    if target is not None and reads and not (target.is_dir() if op.startswith("replications") else target.is_file()):
        return False  # an earlier op made it something that is not read as a file
    if op == "lock -> symlink out":
        _replace(target)
        target.symlink_to(outside / "victim.txt")
    elif op == "lock -> folder":
        _replace(target)
        target.mkdir()
    elif op == "lock deleted":
        _replace(target)
    elif op in ("scenario edited", "table edited"):
        target.write_bytes(target.read_bytes() + (b"\n# edited\n" if op.startswith("scenario") else b"b\n"))
    elif op == "scenario value changed":
        try:
            text = target.read_text()
        except UnicodeDecodeError:  # junk an earlier op wrote
            return False
        if "seed = 3" not in text:
            return False
        target.write_text(text.replace("seed = 3", "seed = 4"))
    elif op == "table value changed":
        data = target.read_bytes()
        target.write_bytes(data.replace(b"\na\n", b"\nc\n", 1))  # as long as before
    elif op.endswith(" deleted") and op.split()[0] in ("scenario", "table", "results", "summary", "replications"):
        _replace(target)
    elif op in ("scenario -> symlink out", "table -> symlink out", "metadata -> symlink out"):
        copy = outside / target.name
        data = target.read_bytes()
        copy.write_bytes(data + (b"" if op.startswith("metadata") else (b"\n# " + SECRET.encode() + b"\n")))
        _replace(target)
        target.symlink_to(copy)
    elif op == "table -> folder":
        _replace(target)
        target.mkdir()
    elif op == "report.html -> folder":
        _replace(target)
        target.mkdir()
    elif op == "scenario junk" or op.endswith(" junk") and op.split()[0] in ("results", "metadata"):
        target.write_bytes(arg)
    elif op == "results truncated":
        data = target.read_bytes()
        target.write_bytes(data[: int(len(data) * arg)])
    elif op == "results emptied":
        target.write_bytes(b"")
    elif op == "metadata not an object":
        target.write_text("[1, 2, 3]\n")
    elif op in ("metadata key deleted", "metadata value changed"):
        try:
            meta = json.loads(target.read_text())
        except (ValueError, OSError):
            return False
        if not isinstance(meta, dict):
            return False
        if op == "metadata key deleted":
            meta.pop(arg, None)
        else:
            key, value = arg
            meta[key] = value if not (isinstance(value, float) and value != value) else None  # NaN: not JSON
        target.write_text(json.dumps(meta))
    elif op.startswith("replication file") or op == "replication record junk":
        if not reps:
            return False
        rep = reps[0] if op.startswith("replication file") else reps[0].with_suffix(".json")
        if not rep.exists():
            return False
        if op == "replication file deleted":
            rep.unlink()
        else:
            rep.write_bytes(arg)
    elif op == "replications -> symlink out":
        copy = outside / "replications"
        shutil.copytree(target, copy)
        _replace(target)
        target.symlink_to(copy, target_is_directory=True)
    elif op == "figure deleted":
        figures = sorted(run.glob("*.png"))
        if not figures:
            return False
        figures[0].unlink()
    elif op == "results -> fifo":
        _replace(target)
        os.mkfifo(target)
    elif op in ("metadata -> /dev/zero", "results -> /dev/zero"):
        _replace(target)
        target.symlink_to("/dev/zero")
    else:  # pragma: no cover
        raise AssertionError(op)
    return True


def check_tampered_run(case: TamperCase, work: Path) -> str:
    """Tamper a copy of the case's base run, then ``ldpsim run --resume`` and ``ldpsim
    report`` it; ``"resumed"`` (both exit 0), ``"refused"`` (at least one refused in one
    line), or AssertionError."""
    base = base_run(case.base)
    run, outside = work / "run", work / "outside"
    outside.mkdir(parents=True)
    (outside / "victim.txt").write_text(f"not ldpsim's: {SECRET}\n")
    shutil.copytree(base, run, symlinks=True)
    must_refuse = False
    for op, arg in case.ops:
        if tamper(run, outside, op, arg) and OPS[op]:
            must_refuse = True
    before = _snapshot(outside)
    codes = []
    for argv in (["run", "--resume", str(run), "--no-progress"], ["report", str(run)]):
        with memory_guard():
            code, stdout, err, _ = invoke(argv, TIME_BOUND, f"ldpsim {argv[0]} on a tampered folder")
        shown = f"ldpsim {' '.join(argv[:2])}: exit {code}"
        assert SECRET not in stdout and SECRET not in err, f"{shown}: a file outside the folder was printed"
        assert _snapshot(outside) == before, f"{shown}: a file outside the run folder changed (written through a link?)"
        if code == 2:
            one_line_refusal(err)
        elif argv[0] == "report" and "reports of 0 run(s)" in stdout:
            # no longer a run folder (its scenario.toml or metadata.json is gone): ldpsim
            # report took it for a folder of runs, found none and wrote an empty index
            assert code == 0, f"{shown}: {err!r}"
        else:
            assert code == 0, f"{shown}: {err!r}"
            assert err == "", f"{shown}: success, but stderr holds {err!r}"
            assert not must_refuse, f"{shown}: accepted a folder whose scenario or table was edited"
            if argv[0] == "report" or BASES[case.base][2]:
                # a resume that finished the run, or a report that re-rendered it, leaves it
                # complete; a resume of a finished run may say so and leave it as it is
                check_complete_run(run)
        codes.append(code)
    outcome = "resumed" if codes == [0, 0] else "refused"
    OUTCOMES[outcome] += 1
    return outcome
