"""A run folder from someone else is safe to open, and resume checks what it trusts (issue
34, second pass): a ``.lock`` that is a link or not a regular file is refused and the lock
goes away when the command ends; every input file is copied into the run folder and its
SHA-256 checked on resume and on ``ldpsim report``; paths are literal everywhere (a
quoted ``~`` is a folder named ``~``); a run killed while starting leaves a folder that
can be reused or resumed. Each test failed on the code before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ldpsim import _files
from ldpsim.errors import LdpSimError
from ldpsim.runs import RunInterrupted
from ldpsim.sim import resume_run, run_scenario
from tests.cli_helpers import run_cli
from tests.sim.helpers import scenario_text

#: A small population table: 20 respondents answering yes, no or maybe.
POLL = "answer\n" + "yes\nno\nyes\nmaybe\n" * 5
EDITED = "answer\n" + "no\nno\nno\nmaybe\n" * 5


def poll_text(file: str = "poll.csv", replications: int = 3, name: str = "poll") -> str:
    return textwrap.dedent(f"""
        name = "{name}"
        [population]
        file = "{file}"
        column = "answer"
        [mechanism]
        kind = "randomized_response"
        eps = 1.0
        [arrivals]
        kind = "all_at_once"
        [analyst]
        checkpoints = {{ every = 1.0 }}
        [simulation]
        mode = "aggregate"
        replications = {replications}
        seed = 5
    """)


def poll_scenario(folder: Path, file: str | None = "poll.csv", replications: int = 3) -> Path:
    """A scenario file in ``folder`` reading the table ``file`` (relative to it); with
    ``file=None``, the same population given by its labels and distribution (no input file)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = poll_text(file or "poll.csv", replications)
    if file is None:
        text = text.replace(
            'file = "poll.csv"\ncolumn = "answer"',
            'labels = ["maybe", "no", "yes"]\ndistribution = [0.25, 0.25, 0.5]\nsize = 20',
        )
        assert "file" not in text
    else:
        table = folder / file
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text(POLL)
    path = folder / "poll.toml"
    path.write_text(text)
    return path


def one_error(r, *words: str) -> str:
    """Exit code 2 and one line on stderr naming every word."""
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def finished_run(tmp_path: Path, report: bool = False, file: str | None = "poll.csv") -> Path:
    path = poll_scenario(tmp_path / "src", file, replications=2)
    return run_scenario(path, out=tmp_path / "run", progress=False, report=report).run_dir


def cut_run(tmp_path: Path, file: str | None = "poll.csv") -> tuple[Path, Path]:
    """A run of 3 replications stopped after 1 (scenario, run directory)."""
    path = poll_scenario(tmp_path / "src", file)
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1, report=False)
    return path, tmp_path / "cut"


# ----------------------------------------------------------------------------- 1. the lock
def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "precious.txt"
    victim.write_text("a file the user cares about\n")
    return victim


def _symlinked_lock(folder: Path, victim: Path) -> None:
    lock = folder / _files.LOCK_NAME
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)


def test_resume_refuses_a_symlinked_lock_and_leaves_its_target(tmp_path):
    _, cut = cut_run(tmp_path, file=None)
    victim = _victim(tmp_path)
    _symlinked_lock(cut, victim)
    one_error(run_cli("run", "--resume", cut, "--no-progress"), "--resume", ".lock", "link")
    assert victim.read_text() == "a file the user cares about\n"


def test_report_refuses_a_symlinked_lock_and_leaves_its_target(tmp_path):
    run = finished_run(tmp_path, report=True, file=None)
    victim = _victim(tmp_path)
    _symlinked_lock(run, victim)
    one_error(run_cli("report", run), ".lock", "link")
    assert victim.read_text() == "a file the user cares about\n"
    # inside a folder of runs, the run is skipped with its line and the others rebuilt
    r = run_cli("report", tmp_path)
    assert r.returncode == 0 and "skipped" in r.stderr and ".lock" in r.stderr, r.stderr
    assert victim.read_text() == "a file the user cares about\n"


def test_sweep_resume_refuses_a_symlinked_lock_and_leaves_its_target(tmp_path):
    from ldpsim import sweep as sw

    base = poll_scenario(tmp_path / "src", None, replications=1)
    out = tmp_path / "sweep"
    with pytest.raises(sw.SweepInterrupted):
        sw.run_sweep(base, ["mechanism.eps=[0.5, 2]"], out=out, progress=False, point_reports=False, interrupt_after=1)
    victim = _victim(tmp_path)
    _symlinked_lock(out, victim)
    one_error(run_cli("sweep", "--resume", out, "--no-progress"), ".lock", "link")
    assert victim.read_text() == "a file the user cares about\n"


@pytest.mark.parametrize("kind", ["fifo", "folder", "hard link"])
def test_a_lock_that_is_not_a_plain_file_of_its_own_is_refused(kind, tmp_path):
    _, cut = cut_run(tmp_path, file=None)
    lock = cut / _files.LOCK_NAME
    lock.unlink(missing_ok=True)
    victim = _victim(tmp_path)
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "folder":
        lock.mkdir()
    else:
        os.link(victim, lock)
    with pytest.raises(LdpSimError, match=r"^--resume: got .*\.lock"):
        resume_run(cut, progress=False)
    assert victim.read_text() == "a file the user cares about\n"


def test_no_lock_is_left_in_a_finished_run_a_report_or_a_sweep(tmp_path):
    from ldpsim import sweep as sw

    path, cut = cut_run(tmp_path, file=None)
    assert not (cut / _files.LOCK_NAME).exists()  # interrupted: resumable, and unlocked
    resume_run(cut, progress=False, report=False)
    assert not (cut / _files.LOCK_NAME).exists()
    run = run_scenario(path, out=tmp_path / "whole", progress=False, report=False).run_dir
    assert not (run / _files.LOCK_NAME).exists()
    assert run_cli("report", run).returncode == 0
    assert not (run / _files.LOCK_NAME).exists()
    out = tmp_path / "sweep"
    sw.run_sweep(path, ["mechanism.eps=[0.5, 2]"], replications=1, out=out, progress=False, point_reports=False)
    assert not list(out.rglob(_files.LOCK_NAME))


def test_a_lock_held_by_another_process_is_neither_taken_nor_removed(tmp_path):
    """A second process holds the lock: this one is refused and the holder's .lock stays."""
    folder = tmp_path / "d"
    folder.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from ldpsim._files import DirectoryLock; "
            f"DirectoryLock(Path({str(folder)!r}), '--out').acquire(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LdpSimError, match=f"in use by pid {holder.pid}"):
            _files.DirectoryLock(folder, "--out").acquire()
        assert (folder / _files.LOCK_NAME).read_text().strip() == str(holder.pid)
    finally:
        holder.kill()
        holder.wait()
    with _files.DirectoryLock(folder, "--out"):  # the holder is gone: its lock is free again
        assert (folder / _files.LOCK_NAME).is_file()
    assert not (folder / _files.LOCK_NAME).exists()


def test_a_lock_removed_while_it_is_being_taken_is_taken_again(tmp_path, monkeypatch):
    """A opens .lock, B takes it, releases it (removing .lock) before A's flock: A must not
    then hold a lock on a file no longer in the folder, beside a C holding the new one."""
    folder = tmp_path / "d"
    folder.mkdir()
    real_flock = _files.fcntl.flock
    state = {"first": True}

    def flock(fd, op):
        if state["first"] and op & _files.fcntl.LOCK_EX:
            state["first"] = False
            with _files.DirectoryLock(folder, "--out"):  # B comes and goes meanwhile
                pass
        return real_flock(fd, op)

    monkeypatch.setattr(_files.fcntl, "flock", flock)
    a = _files.DirectoryLock(folder, "--out").acquire()
    monkeypatch.setattr(_files.fcntl, "flock", real_flock)
    try:
        with pytest.raises(
            LdpSimError, match=f"in use by pid {os.getpid()}"
        ):  # C is refused: A holds the .lock there is
            _files.DirectoryLock(folder, "--out").acquire()
    finally:
        a.release()


# ----------------------------------------------------------------------------- 2. inputs checked by digest
def test_resume_refuses_a_population_table_edited_between_replications(tmp_path):
    _, cut = cut_run(tmp_path)
    (cut / "poll.csv").write_text(EDITED)
    r = run_cli("run", "--resume", cut, "--no-progress")
    one_error(r, "--resume", "poll.csv", "changed since the run started")
    assert not (cut / "results.csv").exists()


def test_resume_refuses_an_edited_table_in_a_folder_of_the_scenario(tmp_path):
    _, cut = cut_run(tmp_path, file="data/poll.csv")
    (cut / "data" / "poll.csv").write_text(EDITED)
    one_error(run_cli("run", "--resume", cut, "--no-progress"), "data/poll.csv", "changed since the run started")


def test_resume_of_a_run_recorded_without_an_inputs_list_checks_the_tables_digest(tmp_path):
    """A run folder made before metadata.json listed its inputs still records the table's
    SHA-256 (population_table): resume checks that one."""
    _, cut = cut_run(tmp_path, file="data/poll.csv")
    meta = json.loads((cut / "metadata.json").read_text())
    meta.pop("inputs", None)
    (cut / "metadata.json").write_text(json.dumps(meta))
    (cut / "data" / "poll.csv").write_text(EDITED.replace("maybe", "yes"))  # still a valid table
    with pytest.raises(LdpSimError, match="data/poll.csv.*changed since the run started"):
        resume_run(cut, progress=False)


def test_resume_checks_a_table_read_from_outside_the_folder_by_its_digest(tmp_path):
    """A table outside the scenario's folder (allowed explicitly) is not copied; resume
    reads it where it is, and refuses it once changed."""
    table = tmp_path / "elsewhere" / "poll.csv"
    table.parent.mkdir()
    table.write_text(POLL)
    src = tmp_path / "src"
    src.mkdir()
    path = src / "poll.toml"
    path.write_text(poll_text(str(table)))
    import inspect

    # where data outside the folder must be allowed explicitly (issue 34, item 4), allow it
    allow = {"allow_outside_data": True} if "allow_outside_data" in inspect.signature(run_scenario).parameters else {}
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1, report=False, **allow)
    assert json.loads((tmp_path / "cut" / "metadata.json").read_text())["inputs"] == {}
    table.write_text(EDITED)
    with pytest.raises(LdpSimError, match="poll.csv as the run read it.*changed since the run started"):
        resume_run(tmp_path / "cut", progress=False, **allow)


def test_report_refuses_a_population_table_edited_after_the_run(tmp_path):
    run = finished_run(tmp_path, report=True)
    summary = (run / "summary.md").read_bytes()
    (run / "poll.csv").write_text(EDITED)
    one_error(run_cli("report", run), "ldpsim report", "poll.csv", "changed since the run started")
    assert (run / "summary.md").read_bytes() == summary


@pytest.mark.parametrize("cut", [0.125, 0.5, -1])
def test_report_refuses_a_results_csv_cut_short_or_edited(tmp_path, cut):
    """The slow tampered-folder fuzz tier (fresh examples): results.csv cut to 12.5% of its
    bytes made the report raise IndexError, and cut to 5-50% it silently rebuilt a report
    from the rows left. It is checked against the replication files it joins."""
    run = finished_run(tmp_path, report=True)
    summary = (run / "summary.md").read_bytes()
    data = (run / "results.csv").read_bytes()
    edited = data[: int(len(data) * cut)] if cut > 0 else data.replace(b",", b";", 1)
    (run / "results.csv").write_bytes(edited)
    one_error(run_cli("report", run), "ldpsim report", "results.csv as the run wrote it")
    assert (run / "summary.md").read_bytes() == summary
    (run / "results.csv").write_bytes(data)
    assert run_cli("report", run).returncode == 0


def test_report_refuses_junk_results_beside_a_deleted_replication_file(tmp_path):
    """The slow tampered-folder fuzz tier (fresh examples): with a replication file deleted
    the results check was skipped and a results.csv of one NUL byte reached the report
    (KeyError). A record whose file is missing is now refused in one line."""
    run = finished_run(tmp_path, report=True)
    next((run / "replications").glob("*.csv")).unlink()
    (run / "results.csv").write_bytes(b"\x00")
    one_error(run_cli("report", run), "ldpsim report", "as the run wrote them")


def test_sweep_resume_refuses_an_edited_population_table(tmp_path):
    from ldpsim import sweep as sw

    base = poll_scenario(tmp_path / "src", replications=1)
    out = tmp_path / "sweep"
    with pytest.raises(sw.SweepInterrupted):
        sw.run_sweep(base, ["mechanism.eps=[0.5, 2]"], out=out, progress=False, point_reports=False, interrupt_after=1)
    (out / "poll.csv").write_text(EDITED)
    one_error(run_cli("sweep", "--resume", out, "--no-progress"), "poll.csv", "changed since the sweep started")


def test_load_run_refuses_an_edited_population_table(tmp_path):
    from ldpsim import load_run

    run = finished_run(tmp_path)
    (run / "poll.csv").write_text(EDITED)
    with pytest.raises(LdpSimError, match="poll.csv.*changed since the run started"):
        load_run(run).scenario


# ----------------------------------------------------------------------------- 3. literal paths
ODD = ["~/x", "~", "rel/dir", "http:/example.invalid/run", "a b/ü;$x"]


@pytest.fixture
def decoy_home(tmp_path, monkeypatch):
    """$HOME with a decoy ``x/results.csv`` (another run's numbers), and a working folder."""
    home = tmp_path / "home"
    (home / "x").mkdir(parents=True)
    (home / "x" / "results.csv").write_text("replication,quantity\n99,decoy\n")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work
    assert (home / "x" / "results.csv").read_text() == "replication,quantity\n99,decoy\n"


@pytest.mark.parametrize("out", ODD)
def test_out_paths_are_literal_when_the_run_reads_its_results_back(out, decoy_home):
    """``--out '~/x'`` (quoted: the shell did not expand it) is a folder named ``~`` here:
    the results read back are those just written, not a decoy ``$HOME/x``'s, and no path
    is taken for a URL."""
    path = poll_scenario(decoy_home / "src", None)
    result = run_scenario(path, out=out, progress=False, report=False)
    literal = decoy_home / out
    with open(literal / "results.csv", "rb") as f:
        written = pd.read_csv(f)
    assert set(result.results["replication"]) == {0, 1, 2}
    pd.testing.assert_frame_equal(result.results[["replication", "estimate"]], written[["replication", "estimate"]])


def test_a_quoted_tilde_is_literal_for_the_command_line_run_and_report(decoy_home):
    path = poll_scenario(decoy_home / "src", None)
    r = run_cli("run", path, "--out", "~/x", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "decoy" not in (decoy_home / "~" / "x" / "summary.md").read_text()
    (decoy_home / "~" / "x" / "summary.md").unlink()
    r = run_cli("report", "~/x")
    assert r.returncode == 0, r.stderr
    assert (decoy_home / "~" / "x" / "summary.md").is_file()


def test_the_resume_line_of_an_odd_path_pastes_into_a_shell(tmp_path, monkeypatch):
    path = poll_scenario(tmp_path / "src", None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunInterrupted) as info:
        run_scenario(path, out="~/my run", progress=False, interrupt_after=1, report=False)
    line = str(info.value)
    assert line.endswith("resume with: ldpsim run --resume '~/my run'"), line
    assert run_cli("run", "--resume", "~/my run", "--no-progress").returncode == 0
    assert (tmp_path / "~" / "my run" / "results.csv").is_file()


def test_compose_out_with_a_tilde_is_a_literal_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    r = run_cli(
        "compose", "--eps", "1", "--delta", "1e-6", "--compositions", "5", "--out", "~/x", "--no-figure", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "~" / "x" / "table.csv").is_file()


# ----------------------------------------------------------------------------- 5. every input copied
def test_a_table_next_to_the_scenario_is_copied_so_the_run_resumes_and_rerenders(tmp_path):
    src = tmp_path / "src"
    path = poll_scenario(src)
    whole = run_scenario(path, out=tmp_path / "whole", progress=False, report=False)
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1, report=False)
    (src / "poll.csv").unlink()  # the run folder must hold everything it needs
    moved = tmp_path / "elsewhere" / "cut"
    moved.parent.mkdir()
    (tmp_path / "cut").rename(moved)  # as if zipped and unpacked by someone else
    resume_run(moved, progress=False, report=False)
    assert (moved / "results.csv").read_bytes() == (whole.run_dir / "results.csv").read_bytes()
    assert (moved / "poll.csv").read_text() == POLL
    r = run_cli("report", moved)
    assert r.returncode == 0, r.stderr
    assert (moved / "summary.md").is_file()
    from ldpsim import load_run

    run = load_run(moved)
    assert run.scenario.built.table.rows == 20
    assert "poll.csv" not in run.files  # an input, not a report file


def test_a_path_that_climbs_back_into_the_scenario_folder_is_copied(tmp_path):
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    path = poll_scenario(src, "data/../poll.csv")
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1, report=False)
    (src / "poll.csv").unlink()
    assert resume_run(tmp_path / "cut", progress=False, report=False).results["replication"].nunique() == 3


@pytest.mark.parametrize("name", ["results.csv", "metadata.json", "replications/poll.csv", "figure.png"])
def test_an_input_named_like_a_file_of_the_run_is_refused_before_any_folder(name, tmp_path):
    path = poll_scenario(tmp_path / "src", name)
    r = run_cli("run", path, "--out", tmp_path / "run", "--no-progress")
    one_error(r, "population.file", name)
    assert not (tmp_path / "run").exists()


# ----------------------------------------------------------------------------- 11. killed while starting
#: Killed at the n-th file written while starting (0: metadata.json, 1: scenario.toml, 2: the
#: table's copy, 3: the first replication's file), in processes forked from one interpreter
#: that has ldpsim imported (one import for all of them).
KILL_AT_EACH_WRITE = """
import os, signal, sys
import ldpsim.runs as runs
from ldpsim.sim import run_scenario
path, base = sys.argv[1], sys.argv[2]
for step in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            count = [0]
            def kill_at(real):
                def wrapped(*args, **kwargs):
                    if count[0] == step:
                        os.kill(os.getpid(), signal.SIGKILL)
                    count[0] += 1
                    return real(*args, **kwargs)
                return wrapped
            runs.write_bytes = kill_at(runs.write_bytes)
            runs.write_json = kill_at(runs.write_json)
            run_scenario(path, out=f"{base}-{step}", progress=False, report=False)
        finally:
            os._exit(3)  # not killed: the test fails
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
"""


@pytest.fixture(scope="module")
def killed_starts(tmp_path_factory):
    """The folders a run leaves when killed by SIGKILL at each step of its start (real
    processes), and one with only a stale ``.lock`` (killed between the lock and the first
    write); the scenario they ran."""
    root = tmp_path_factory.mktemp("killed")
    path = poll_scenario(root / "src", "data/poll.csv")
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_EACH_WRITE, str(path), str(root / "killed")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    states = {f"killed at write {step}": root / f"killed-{step}" for step in range(4)}
    lock_only = root / "lock-only"
    lock_only.mkdir()
    (lock_only / _files.LOCK_NAME).write_text("123456\n")
    states["only a stale .lock"] = lock_only
    whole = run_scenario(path, out=root / "whole", progress=False, report=False)
    return path, states, (whole.run_dir / "results.csv").read_bytes()


def _copy(states: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    import shutil

    out = {}
    for what, folder in states.items():
        assert folder.is_dir(), what
        out[what] = tmp_path / folder.name
        shutil.copytree(folder, out[what], symlinks=True)
    return out


def test_a_run_killed_while_starting_can_be_resumed_or_else_started_again(killed_starts, tmp_path):
    """Resume finishes the folder, or says in one line to start it again with the same
    --out, which then works: never two refusals pointing at each other."""
    path, states, whole = killed_starts
    starts = []
    for what, out in _copy(states, tmp_path).items():
        try:
            resume_run(out, progress=False, report=False)
        except LdpSimError as exc:
            file = "FILE" if what in ("killed at write 0", "only a stale .lock") else str(path)  # before metadata.json
            assert f"start it again with: ldpsim run {file} --out {out})" in str(exc), (what, str(exc))
            starts.append(what)
            run_scenario(path, out=out, progress=False, report=False)
        assert (out / "results.csv").read_bytes() == whole, what
        assert not (out / _files.LOCK_NAME).exists(), what
    # a start that wrote all its files is resumed; the others are started again
    assert starts == ["killed at write 0", "killed at write 1", "killed at write 2", "only a stale .lock"]


def test_a_run_killed_while_starting_is_taken_by_a_new_run_with_the_same_out(killed_starts, tmp_path):
    path, states, whole = killed_starts
    copies = _copy(states, tmp_path)
    r = run_cli("run", path, "--out", copies.pop("killed at write 2"), "--no-progress")  # the command line's check too
    assert r.returncode == 0, r.stderr
    for what, out in copies.items():
        run_scenario(path, out=out, progress=False, report=False)
        assert (out / "results.csv").read_bytes() == whole, what
        assert not (out / "data" / ".poll.csv").exists() and (out / "data" / "poll.csv").read_text() == POLL, what


def test_a_folder_with_a_finished_replication_is_not_taken_by_a_new_run(tmp_path):
    path, cut = cut_run(tmp_path)
    one_error(run_cli("run", path, "--out", cut, "--no-progress"), "--out", "--resume")
    assert (cut / "replications" / "rep-000000.json").is_file()


# ----------------------------------------------------------------------------- 3. tampered folders (fuzz findings)
@pytest.mark.parametrize("change", ["scenario edited", "scenario deleted", "table edited", "table deleted"])
def test_resume_of_a_finished_run_checks_its_inputs_before_saying_it_is_complete(change, tmp_path):
    run = run_scenario(
        poll_scenario(tmp_path / "src", "data/poll.csv", replications=2),
        out=tmp_path / "run",
        progress=False,
        report=False,
    ).run_dir
    target = run / ("scenario.toml" if change.startswith("scenario") else "data/poll.csv")
    if change.endswith("edited"):
        target.write_text(target.read_text().replace("eps = 1.0", "eps = 2.0") if "scenario" in change else EDITED)
    else:
        target.unlink()
    line = one_error(run_cli("run", "--resume", run, "--no-progress"), "--resume")
    assert ("scenario.toml" if "scenario" in change else "data/poll.csv") in line
    assert "already complete" not in line


@pytest.mark.parametrize("name", ["metadata.json", "results.csv", "replications/rep-000000.csv"])
def test_run_files_linked_to_an_endless_device_are_refused_without_reading_it(name, tmp_path):
    run = finished_run(tmp_path)
    (run / name).unlink()
    (run / name).symlink_to("/dev/zero")
    for argv in (("run", "--resume", run, "--no-progress"), ("report", run)):
        r = run_cli(*argv)  # refused in one line, or (a file it need not read) done without it
        assert r.returncode in (0, 2) and "Traceback" not in r.stderr and "MemoryError" not in r.stderr, (
            argv,
            r.stderr,
        )
        assert len(r.stderr.strip().splitlines()) == (r.returncode == 2), r.stderr
    if name == "metadata.json":
        from ldpsim.workflow import load_run

        with pytest.raises(LdpSimError):
            load_run(run)


@pytest.mark.parametrize("value", ["Infinity", "-1", "1e400", '"2"', "2.5", "true"])
def test_resume_names_a_bad_replications_value_in_metadata(value, tmp_path):
    _, cut = cut_run(tmp_path)
    text = (cut / "metadata.json").read_text()
    meta = json.loads(text)
    (cut / "metadata.json").write_text(
        text.replace(f'"replications": {meta["replications"]}', f'"replications": {value}')
    )
    assert (cut / "metadata.json").read_text() != text
    line = one_error(run_cli("run", "--resume", cut, "--no-progress"), "--resume", "replications")
    assert "metadata.json" in line


def test_resume_refuses_a_replications_folder_linked_out_of_the_run(tmp_path):
    import shutil

    _, cut = cut_run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(cut / "replications", elsewhere)
    (cut / "replications").symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in elsewhere.iterdir())
    one_error(run_cli("run", "--resume", cut, "--no-progress"), "--resume", "replications")
    assert sorted(p.name for p in elsewhere.iterdir()) == before
    assert not (cut / "results.csv").exists()


def _refusing_replication(self, index, seed, shared):
    raise LdpSimError("mechanism: got randomized_response(k=3, eps=0.0), expected eps > 0")


@pytest.mark.parametrize("where", ["new folder", "empty folder"])
def test_a_run_refused_by_its_first_replication_leaves_no_half_made_folder(where, tmp_path, monkeypatch):
    from ldpsim.sim.studies import SurveyStudy

    path = poll_scenario(tmp_path / "src", "data/poll.csv")
    out = tmp_path / "parent" / "run"
    if where == "empty folder":
        out.mkdir(parents=True)
    monkeypatch.setattr(SurveyStudy, "run_replication", _refusing_replication)
    one_error(run_cli("run", path, "--out", out, "--no-progress"), "mechanism")
    if where == "empty folder":
        assert out.is_dir() and list(out.iterdir()) == []
    else:
        assert not out.exists() and not out.parent.exists()


def test_a_run_refused_while_computing_its_shared_values_leaves_no_folder(tmp_path, monkeypatch):
    from ldpsim.sim.studies import SurveyStudy

    def refuse(self):
        raise LdpSimError("mechanism: got randomized_response(k=3, eps=0.0), expected eps > 0")

    monkeypatch.setattr(SurveyStudy, "shared", refuse)
    out = tmp_path / "run"
    with pytest.raises(LdpSimError, match="mechanism"):
        run_scenario(poll_scenario(tmp_path / "src"), out=out, progress=False)
    assert not out.exists()


def test_an_interrupted_run_refused_on_resume_keeps_its_replications(tmp_path, monkeypatch):
    """The cleanup is only for a run that completed no replication in a folder it made."""
    from ldpsim.sim.studies import SurveyStudy

    _, cut = cut_run(tmp_path)
    monkeypatch.setattr(SurveyStudy, "run_replication", _refusing_replication)
    one_error(run_cli("run", "--resume", cut, "--no-progress"), "mechanism")
    assert (cut / "replications" / "rep-000000.json").is_file() and (cut / "metadata.json").is_file()


def _finished_run_with_metadata(tmp_path, cli, key, value) -> Path:
    """A finished two-replication survey run whose metadata.json has ``key`` set to ``value``."""
    path = tmp_path / "s.toml"
    path.write_text(scenario_text(size=200, replications=2))
    run = tmp_path / "run"
    assert cli("run", str(path), "--out", str(run), "--no-progress").returncode == 0
    meta = json.loads((run / "metadata.json").read_text())
    meta[key] = value
    (run / "metadata.json").write_text(json.dumps(meta))
    return run


@pytest.mark.parametrize("seed", [8, 10**15])  # the run's own is 7
def test_a_seed_edited_in_metadata_is_refused_by_report_and_resume(seed, tmp_path, cli):
    """With metadata.json's seed edited, `ldpsim report` rebuilt the report stating the edited
    seed and `--resume` said "already complete". Both check the run key the seed is part of,
    and refuse in one line."""
    run = _finished_run_with_metadata(tmp_path, cli, "seed", seed)
    for argv in (("report", str(run)), ("run", "--resume", str(run), "--no-progress")):
        done = cli(*argv)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "metadata.json as the run wrote it" in done.stderr, done.stderr


@pytest.mark.parametrize("value", [[], {}, 3])
def test_a_kind_that_is_not_a_string_is_refused_by_report(value, tmp_path, cli):
    """The slow tampered-folder tier: metadata.json's kind set to [] made `ldpsim report`
    raise TypeError (unhashable type: 'list')."""
    run = _finished_run_with_metadata(tmp_path, cli, "kind", value)
    done = cli("report", str(run))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
