"""One careful command layer (issue 19): every subcommand handles bad arguments, output
folders and Ctrl-C the same way.

- bad arguments and an output folder that cannot be written are one line and exit 2,
  found before any work starts (the function doing the work is replaced here by one that
  fails the test if it is called);
- a non-empty ``--out`` is refused unless ``--force``, which replaces the files of the same
  name at the end and leaves other files alone; a default folder is new for every run;
- Ctrl-C (a KeyboardInterrupt raised by the work, in-process) is one line and exit 130 and
  leaves nothing: no folder, no temporary folder, an existing folder as it was;
- ``ldpsim run --workers 2`` stops its worker processes within 2 s of a real SIGINT.

Read-only folders are tested where permissions are enforced (not for root); a path under
a regular file is unwritable for everyone, root included, and is tested always.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ldpsim._files import is_temporary
from tests.cli_helpers import run_cli
from tests.sim.helpers import scenario_text


@dataclass(frozen=True)
class Command:
    """A command that writes a folder of files, run fast; ``work`` is a function (module
    path and attribute) that does its work, called after the folder is checked; ``late`` one
    called after some files are written into the temporary folder."""

    argv: tuple[str, ...]
    outputs: frozenset[str]
    work: str
    late: str | None = None
    force: bool = True  # has --force (ldpsim run: no, it resumes instead)
    scenario: bool = False  # argv[1] is a scenario file to write into the test folder
    skip_work: object = field(default=None)  # a predicate on the work's arguments: calls that are argument checks
    inputs: tuple[tuple[str, str], ...] = ()  # (name, text) of input files to write into the test folder


COMMANDS = {
    "compose": Command(
        ("compose", "--eps", "0.5", "--compositions", "5", "--no-figure"),
        frozenset({"table.csv", "metadata.json"}),
        "ldpsim.report.compose.delta_table",
        "ldpsim.report.compose.write_json",
    ),
    "compose-mixed": Command(
        ("compose", "--pairs", "1,0x3", "0.5,1e-6", "--no-figure"),
        frozenset({"table.csv", "metadata.json"}),
        "ldpsim.report.compose.mixed_eps_grid",
        "ldpsim.report.compose.write_json",
    ),
    "reproduce": Command(
        ("reproduce", "kov-fig5", "--instances", "1"),
        frozenset(
            {"data.csv", "priors.csv", "summary.csv", "kov-fig5.png", "metadata.json", "summary.md", "report.html"}
        ),
        "ldpsim.reproduce._study.solve",
        "ldpsim.reproduce._registry.write_json",
    ),
    "recommend": Command(
        ("recommend", "--k", "5", "--eps", "1", "--n", "1e4", "--no-figure"),
        frozenset({"recommend.csv", "curves.csv", "crossings.csv", "summary.md"}),
        "ldpsim.utility.recommend.evaluate",
        "ldpsim.report.recommend.files",
        skip_work=lambda *a, **k: k.get("lp") is False,
    ),  # the first call only checks the arguments
    "analyse": Command(
        ("analyse", "r.csv", "--mechanism", "randomized_response:k=3,eps=1", "--seed", "1"),
        frozenset({"estimates.csv", "tests.csv", "analysis.json", "summary.md", "report.html"}),
        "ldpsim.deploy.collect",
        "ldpsim.report.analysis.files",
        inputs=(("r.csv", "report\n0\n2\n1\n1\n"),),
    ),
    "analyse-file": Command(
        ("analyse", "a.toml", "--seed", "1"),
        frozenset({"estimates.csv", "tests.csv", "analysis.json", "summary.md", "report.html"}),
        "ldpsim.deploy.collect",
        "ldpsim.report.analysis.question_files",
        inputs=(
            ("r.csv", "report\n0\n2\n1\n1\n"),
            (
                "a.toml",
                'kind = "analysis"\nreports = "r.csv"\n[[questions]]\nname = "q"\n'
                'mechanism = "randomized_response:k=3,eps=1"\n',
            ),
        ),
    ),
    "run": Command(
        ("run", "s.toml", "--no-progress"),
        frozenset({"results.csv", "summary.md", "metadata.json", "scenario.toml"}),
        "ldpsim.runs._execute",
        force=False,
        scenario=True,
    ),
}
WRITERS = sorted(COMMANDS)
FOLDERS = sorted(c for c in COMMANDS if COMMANDS[c].force)  # made whole or not at all


def argv_of(name: str, tmp_path: Path) -> list[str]:
    cmd = COMMANDS[name]
    if cmd.scenario:
        (tmp_path / "s.toml").write_text(scenario_text(size=200, replications=2))
    for name, text in cmd.inputs:
        (tmp_path / name).write_text(text)
    return list(cmd.argv)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``, hidden ones included."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def no_temporaries(root: Path) -> None:
    left = [str(p) for p in root.rglob("*") if is_temporary(p.name)]
    assert left == [], left


def one_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def must_not_run(monkeypatch, target: str, skip=None) -> None:
    """Replace ``target`` (module path + attribute) by a function failing the test if it is
    called for work (``skip(*args, **kwargs)`` true: an argument check, let through)."""
    module, attr = target.rsplit(".", 1)
    real = getattr(__import__(module, fromlist=[attr]), attr)

    def guard(*args, **kwargs):
        if skip is not None and skip(*args, **kwargs):
            return real(*args, **kwargs)
        raise AssertionError(f"{target} ran: the work started before the output folder was checked")

    monkeypatch.setattr(target, guard)


def interrupt(monkeypatch, target: str, skip=None) -> None:
    """Make ``target`` raise KeyboardInterrupt, as Ctrl-C does in the middle of the work."""
    module, attr = target.rsplit(".", 1)
    real = getattr(__import__(module, fromlist=[attr]), attr)

    def ctrl_c(*args, **kwargs):
        if skip is not None and skip(*args, **kwargs):
            return real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(target, ctrl_c)


def permissions_enforced(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o500)
    try:
        (probe / "x").mkdir()
    except PermissionError:
        return True
    finally:
        probe.chmod(0o700)
    return False


# --------------------------------------------------------------------------- unwritable outputs
@pytest.mark.parametrize("name", WRITERS)
@pytest.mark.parametrize("where", ["under a file", "read-only folder", "inside a read-only folder"])
def test_an_unwritable_out_is_one_line_and_exit_2_before_any_work(name, where, tmp_path, monkeypatch):
    argv = argv_of(name, tmp_path)
    if where == "under a file":  # unwritable for everyone, root included
        (tmp_path / "afile").write_text("not a folder\n")
        out, reason = Path("afile") / "sub", "Not a directory"
    else:
        if not permissions_enforced(tmp_path):
            # root bypasses permission bits: the file system refuses writes under ro/ as a
            # read-only folder would for anyone else
            ro, real_mkdir = (tmp_path / "ro").resolve(), Path.mkdir

            def refusing_mkdir(self, *args, **kwargs):
                if self.resolve().parent == ro or ro in self.resolve().parents:
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
                return real_mkdir(self, *args, **kwargs)

            monkeypatch.setattr(Path, "mkdir", refusing_mkdir)
        (tmp_path / "ro").mkdir(mode=0o500)
        out, reason = (Path("ro") if where == "read-only folder" else Path("ro") / "sub"), "Permission denied"
    before = tree(tmp_path)
    must_not_run(monkeypatch, COMMANDS[name].work, COMMANDS[name].skip_work)
    try:
        r = run_cli(*argv, "--out", out, cwd=tmp_path)
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o700)
    line = one_line(r, 2)
    assert line == f"ldpsim: error: --out: got '{out}', expected a folder we can write ({reason})"
    assert r.stdout == ""
    assert tree(tmp_path) == before


def test_an_unwritable_default_folder_of_run_names_the_default_and_the_way_out(tmp_path, monkeypatch):
    argv = argv_of("run", tmp_path)
    (tmp_path / "reports").write_text("a file where the default folder goes\n")
    before = tree(tmp_path)
    must_not_run(monkeypatch, COMMANDS["run"].work)
    line = one_line(run_cli(*argv, cwd=tmp_path), 2)
    assert line.startswith("ldpsim: error: --out: got 'reports/"), line
    assert line.endswith(
        "(the default; choose another with --out), expected a folder we can write (Not a directory)"
    ), line
    assert tree(tmp_path) == before


# --------------------------------------------------------------------------- non-empty outputs
@pytest.mark.parametrize("name", WRITERS)
def test_a_non_empty_out_is_refused_without_force(name, tmp_path, monkeypatch):
    argv = argv_of(name, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    before = tree(tmp_path)
    with monkeypatch.context() as m:
        must_not_run(m, COMMANDS[name].work, COMMANDS[name].skip_work)
        r = run_cli(*argv, "--out", "out", cwd=tmp_path)
    hint = "use --force to replace its files" if COMMANDS[name].force else "use --resume to continue"
    assert one_line(r, 2) == f"ldpsim: error: --out: got 'out', expected a new or empty folder ({hint})"
    assert tree(tmp_path) == before
    if not COMMANDS[name].force:
        assert one_line(run_cli(*argv, "--out", "out", "--force", cwd=tmp_path), 2).endswith(
            "unrecognized arguments: --force"
        )
        return
    r = run_cli(*argv, "--out", "out", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in out.iterdir()} == COMMANDS[name].outputs | {"notes.txt"}
    assert (out / "notes.txt").read_text() == "my notes\n"  # other files are left alone ...
    assert "notes.txt" not in r.stdout  # ... and not listed among the outputs
    no_temporaries(tmp_path)


def test_compose_never_replaces_an_earlier_table_without_force(tmp_path):
    base = ["compose", "--eps", "0.5", "--compositions", "5", "--no-figure", "--out", "c"]
    assert run_cli(*base, cwd=tmp_path).returncode == 0
    table = (tmp_path / "c" / "table.csv").read_bytes()
    r = run_cli(*base, "--target-delta", "1e-3", cwd=tmp_path)
    assert "expected a new or empty folder" in one_line(r, 2)
    assert (tmp_path / "c" / "table.csv").read_bytes() == table
    assert run_cli(*base, "--target-delta", "1e-3", "--force", cwd=tmp_path).returncode == 0
    assert (tmp_path / "c" / "table.csv").read_text().startswith("delta_total,")


@pytest.mark.parametrize("name", WRITERS)
def test_an_existing_empty_out_is_filled(name, tmp_path):
    argv = argv_of(name, tmp_path)
    (tmp_path / "out").mkdir()
    r = run_cli(*argv, "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert COMMANDS[name].outputs <= {p.name for p in (tmp_path / "out").iterdir()}
    no_temporaries(tmp_path)


# --------------------------------------------------------------------------- default folders
@pytest.mark.parametrize("name", WRITERS)
def test_default_folders_are_new_for_every_run(name, tmp_path):
    argv = argv_of(name, tmp_path)
    for _ in range(2):
        r = run_cli(*argv, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    folders = sorted(p.parent for p in (tmp_path / "reports").rglob(sorted(COMMANDS[name].outputs)[0]))
    assert len(folders) == 2, folders
    for f in folders:
        assert COMMANDS[name].outputs <= {p.name for p in f.iterdir()}, f
    assert folders[0].parent == folders[1].parent  # one folder per command line, one run in it per run
    no_temporaries(tmp_path)


# --------------------------------------------------------------------------- Ctrl-C
@pytest.mark.parametrize("name", FOLDERS)
@pytest.mark.parametrize("when", ["work", "late"])
@pytest.mark.parametrize("out", ["default", "new", "empty", "force"])
def test_ctrl_c_is_one_line_exit_130_and_leaves_nothing(name, when, out, tmp_path, monkeypatch):
    cmd = COMMANDS[name]
    argv = argv_of(name, tmp_path)
    extra: list[str] = []
    if out == "new":
        extra = ["--out", "a/b/c"]
    elif out == "empty":
        (tmp_path / "e").mkdir()
        extra = ["--out", "e"]
    elif out == "force":  # a folder with an earlier run's files and a file of the user's
        assert run_cli(*argv, "--out", "f", cwd=tmp_path).returncode == 0
        (tmp_path / "f" / "notes.txt").write_text("my notes\n")
        extra = ["--out", "f", "--force"]
    before = tree(tmp_path)
    interrupt(monkeypatch, cmd.work if when == "work" else cmd.late, cmd.skip_work if when == "work" else None)
    r = run_cli(*argv, *extra, cwd=tmp_path)
    assert one_line(r, 130) == "ldpsim: interrupted; nothing was written"
    assert tree(tmp_path) == before  # no folder, no temporary folder, no parent made for it; old files as they were


@pytest.mark.parametrize("name", FOLDERS)
def test_a_full_disk_while_writing_is_one_line_and_leaves_nothing(name, tmp_path, monkeypatch):
    import errno

    argv = argv_of(name, tmp_path)
    before = tree(tmp_path)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(COMMANDS[name].late, full)
    r = run_cli(*argv, "--out", "a/b", cwd=tmp_path)
    assert (
        one_line(r, 2) == "ldpsim: error: --out: cannot write in 'a/b' (No space left on device); nothing was written"
    )
    assert tree(tmp_path) == before


def test_ctrl_c_after_the_files_are_in_place_says_so(tmp_path, monkeypatch):
    interrupt(monkeypatch, "ldpsim.reproduce.format_summary")  # while printing the table
    r = run_cli(*COMMANDS["reproduce"].argv, "--out", "r", cwd=tmp_path)
    assert one_line(r, 130) == "ldpsim: interrupted; the files in r are complete"
    assert {p.name for p in (tmp_path / "r").iterdir()} == COMMANDS["reproduce"].outputs


@pytest.mark.parametrize(
    "argv, target",
    [
        (
            ("audit", "randomized_response:k=4,eps=1", "--sequential", "--n", "100000", "--seed", "1"),
            "ldpsim.audit.audit_sequential",
        ),
        (("audit", "randomized_response:k=4,eps=1", "--n", "1000", "--seed", "1"), "ldpsim.audit.audit"),
        (("demo", "--n", "1000", "--seed", "1"), "ldpsim._demo.frequency_estimate"),
    ],
)
def test_commands_that_write_nothing_write_nothing_and_ctrl_c_is_one_line(argv, target, tmp_path, monkeypatch):
    assert run_cli(*argv, cwd=tmp_path).returncode == 0
    assert list(tmp_path.iterdir()) == []  # no files at all
    interrupt(monkeypatch, target)
    assert one_line(run_cli(*argv, cwd=tmp_path), 130) == "ldpsim: interrupted; nothing was written"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_a_reproduction_with_workers_stops_them_at_once():
    """The reproductions' worker pools (ldpsim._pool.pool_map): Ctrl-C (a real SIGINT to the
    main thread) while the workers are busy ends them at once, not after their tasks."""
    import multiprocessing
    import threading

    from ldpsim._pool import pool_map

    old = signal.signal(signal.SIGINT, signal.default_int_handler)  # also where this process was started ignoring it
    timer = threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    try:
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            pool_map(time.sleep, [30.0, 30.0, 30.0], workers=2)
        seconds = time.monotonic() - t0
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert seconds < 2.5
    assert multiprocessing.active_children() == []  # the workers were terminated and reaped


# --------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    "argv, needle",
    [
        (("run", "s.toml", "--workers", "0"), "--workers: got 0"),
        (("run",), "file: got nothing"),
        (("run", "s.toml", "--out", "s.toml"), "--out: got 's.toml', expected a folder (it is a file)"),
        (("demo", "--k", "1"), "--k: got 1"),
        (("compose", "--eps", "-1", "--compositions", "3"), "--eps: got -1.0"),
        (("compose", "--eps", "1", "--compositions", "0"), "--compositions: got 0"),
        (
            ("compose", "--eps", "1", "--compositions", "3", "--out", "s.toml"),
            "--out: got 's.toml', expected a folder (it is a file)",
        ),
        (("compose", "--pairs", "1,2"), "--pairs: got '1,2'"),
        (("reproduce", "kov-fig5", "--instances", "0"), "--instances: got 0"),
        (("reproduce", "kov-fig5", "--out", "s.toml"), "--out: got 's.toml', expected a folder (it is a file)"),
        (("recommend", "--k", "1", "--eps", "1", "--n", "100"), "--k: got 1"),
        (
            ("recommend", "--k", "5", "--eps", "1", "--n", "100", "--out", "s.toml"),
            "--out: got 's.toml', expected a folder (it is a file)",
        ),
        (("audit", "randomized_response:k=3,eps=1", "--alpha", "2"), "alpha: got 2.0"),
        (("audit", "randomized_response:k=3,eps=1", "--n", "x"), "invalid int value: 'x'"),
        (("compose", "--eps", "1", "--compositions", "3", "--nonsense"), "unrecognized arguments: --nonsense"),
    ],
)
def test_bad_arguments_are_one_line_exit_2_and_write_nothing(argv, needle, tmp_path):
    (tmp_path / "s.toml").write_text(scenario_text(size=100))
    before = tree(tmp_path)
    r = run_cli(*argv, cwd=tmp_path)
    line = one_line(r, 2)
    assert needle in line, line
    assert r.stdout == ""
    assert tree(tmp_path) == before


# --------------------------------------------------------------------------- a real Ctrl-C
def test_a_real_ctrl_c_stops_run_and_its_two_workers_within_2_s(tmp_path):
    """SIGINT to the process group of ``ldpsim run --workers 2`` (as a terminal's Ctrl-C)
    while both workers are in the middle of replications of about 5 s: the command ends
    within 2 s with one line saying how to resume, and no worker outlives it."""
    path = tmp_path / "slow.toml"
    path.write_text(
        scenario_text(
            size=250_000,
            replications=6,
            checkpoints="{ every = 0.002 }",
            arrivals='{ kind = "poisson", duration = 1.0 }',
            latency='{ kind = "exponential", mean = 0.01 }',
        )
    )
    out = tmp_path / "cut"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ldpsim", "run", str(path), "--out", str(out), "--workers", "2", "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even if this process ignores Ctrl-C
    )
    deadline = time.monotonic() + 60
    while proc.poll() is None and not (out / "metadata.json").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.0)  # the pool has started: both workers are inside a replication
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    workers = _group(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # pragma: no cover - only when the test fails
            os.killpg(proc.pid, signal.SIGKILL)
    seconds = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "resume with: ldpsim run --resume" in err, err
    assert seconds < 2.0, f"exit {seconds:.2f} s after SIGINT"
    if workers is not None:
        assert len(workers) == 3, workers  # the parent and its two workers were running
        assert _group(proc.pid) == [], "worker processes outlived the command"


def _group(pgid: int) -> list[str] | None:
    """The processes of a process group (None where ps is missing)."""
    try:
        ps = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(pgid)], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [line for line in ps.stdout.splitlines() if line.strip() and "Z" not in line.split()[1]]
