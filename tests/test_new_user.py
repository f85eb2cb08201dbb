"""What a new user meets first (issue 34): the README's quick start and test paragraph, the
command-line reference against ``ldpsim --help``, ``ldpsim scenarios copy`` into a folder
that is missing or cannot be written, ``ldpsim run --resume`` on a run that is already
finished, and progress bars that leave nothing on the terminal.

The venv in which the wheel test runs (item 22) is tested in ``tests/test_packaging.py``.

Everything runs in-process through the ``cli`` fixture; nothing random beyond fixed seeds.
The file takes a few seconds.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from ldpsim import _progress

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TESTING = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", flags=re.S | re.M)
#: A commit hash as the README used to quote them (7 to 40 hex digits with a digit and a letter).
_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of ``text``."""
    start = text.index(f"\n## {heading}\n") + len(heading) + 5
    end = text.find("\n## ", start)
    return text[start : end if end >= 0 else len(text)]


def _bash_blocks(text: str) -> list[str]:
    return [body.strip() for info, body in _FENCE.findall(text) if info.strip() == "bash"]


def _paragraph_after(text: str, block: str) -> str:
    """The prose paragraph right after the fenced block whose body is ``block``."""
    at = text.index(f"\n{block}\n```\n") + len(block) + 6
    rest = text[at:].lstrip("\n")
    return " ".join(rest.split("\n\n", 1)[0].split())


# --------------------------------------------------------------------------- item 17: README
RUN = "pip install -e . && ldpsim run scenarios/survey.toml"
TEST = 'pip install -e ".[dev]" && python -m pytest'


def test_quick_start_installs_the_runtime_to_run_and_the_dev_extra_to_test():
    """Running the survey needs the package and its dependencies only; the dev extra (pytest,
    hypothesis, selenium, Dask: about 65 packages) is for the tests."""
    blocks = _bash_blocks(_section(README, "Quick start"))
    assert RUN in blocks, blocks
    assert TEST in blocks, blocks
    assert blocks.index(RUN) < blocks.index(TEST)


def test_the_test_paragraph_is_one_plain_sentence():
    """How long on two cores and when that was measured (a date in words), a quick subset and
    the slow tier; no commit hashes."""
    text = _paragraph_after(_section(README, "Quick start"), TEST)
    assert len(re.findall(r"[.!?](?:\s|$)", text)) == 1 and text.endswith("."), text
    assert re.search(r"\babout \d+ minutes on two cores\b", text), text
    months = "January|February|March|April|May|June|July|August|September|October|November|December"
    assert re.search(rf"\bon \d{{1,2}} ({months}) 20\d\d\b", text), text
    assert "`python -m pytest -m slow`" in text and re.search(r"`python -m pytest tests/\w+`", text), text
    assert not _HASH.search(text), text


def test_ci_runs_the_readme_test_command_in_a_fresh_venv():
    """.ci/run does what a user does: a new virtual environment, activated, then exactly the
    README's test command (the machine's own interpreter is left alone) before any other
    test command; then the slow tier."""
    lines = [line.strip() for line in CI.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    venv = next(i for i, line in enumerate(lines) if " -m venv " in f" {line} ")
    activate = next(i for i, line in enumerate(lines) if re.match(r"^(source|\.) .*bin/activate\"?$", line))
    first_test = next(i for i, line in enumerate(lines) if "pytest" in line)
    assert venv < activate < first_test and lines[first_test] == TEST, lines[first_test]
    assert "python -m pytest -m slow" in lines[first_test + 1 :]
    assert "--system-site-packages" not in CI  # fresh: nothing borrowed from the machine


def test_docs_testing_runs_the_same_command_and_defers_to_the_readme_for_the_time():
    running = _section(TESTING, "Running the tests")
    assert _bash_blocks(running)[0] == TEST
    assert "README" in running and not re.search(r"\b\d+ (and|to) \d+ minutes\b", running)
    assert "`python -m pytest -m slow`" in running and "`python -m pytest tests/mechanisms`" in running


# --------------------------------------------------------------------------- item 18: docs/cli.md
def _commands() -> list[str]:
    from ldpsim.cli import _build_parser

    sub = next(a for a in _build_parser()._actions if a.dest == "command")
    return list(sub.choices)


_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split()


def test_the_cli_reference_counts_lists_and_tabulates_every_command():
    commands = _commands()
    said = re.search(r"has (\w+) commands", CLI_DOC)
    assert said and said.group(1) == _NUMBERS[len(commands)], (said and said.group(0), len(commands))
    usage = re.search(r"^ldpsim \[--version\] \{([a-z,]+)\} \.\.\.$", CLI_DOC, flags=re.M)
    assert usage and usage.group(1).split(",") == commands
    head = CLI_DOC.split("\n## ", 1)[0]  # the page's introduction, with the table of commands
    table = re.findall(r"^\| `ldpsim (\w+)` \|", head, flags=re.M)
    assert sorted(table) == sorted(commands), table
    for command in commands:
        assert f"\n## `ldpsim {command}`\n" in CLI_DOC, command


# --------------------------------------------------------------------------- item 18: resume a finished run
def _small_run(tmp_path: Path, cli, name: str = "done", replications: int = 2) -> Path:
    from tests.sim.helpers import scenario_text

    path = tmp_path / "small.toml"
    path.write_text(scenario_text(size=500, replications=replications))
    out = tmp_path / name
    r = cli("run", path, "--out", out, "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return out


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_resume_of_a_finished_run_says_already_complete_and_rewrites_nothing(tmp_path, cli):
    out = _small_run(tmp_path, cli)
    before = _snapshot(out)
    r = cli("run", "--resume", out, cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert " ".join(r.stdout.split()) == (
        f"{out}: already complete (2 replications); nothing to resume; its report is "
        f"{out / 'summary.md'} (ldpsim report {out} rebuilds it)"
    )
    assert max(map(len, r.stdout.splitlines())) <= 100  # one line, wrapped within 100 columns
    assert _snapshot(out) == before  # no report redone, no resume recorded in metadata.json
    rebuilt = cli("report", out, cwd=tmp_path)  # the way the line points to
    assert rebuilt.returncode == 0 and "rebuilt the reports of 1 run(s)" in rebuilt.stdout, rebuilt.stderr


def test_resume_after_an_interruption_in_the_report_still_writes_the_report(tmp_path, cli):
    """A run whose replications are all done but whose report was not written is not finished:
    --resume writes the report as before."""
    import json

    out = _small_run(tmp_path, cli, replications=1)
    meta = json.loads((out / "metadata.json").read_text())
    del meta["finished"]  # as a run stopped while writing its report leaves it
    (out / "metadata.json").write_text(json.dumps(meta))
    (out / "summary.md").unlink()
    r = cli("run", "--resume", out, cwd=tmp_path)
    assert r.returncode == 0 and "already complete" not in r.stdout, r.stdout
    assert (out / "summary.md").is_file()


# --------------------------------------------------------------------------- item 18: progress bars
def _screen(drawn: str) -> list[str]:
    """What a terminal shows after ``drawn``: carriage returns, newlines and cursor-up
    (``ESC[nA``) move the cursor, other escape sequences are ignored, characters overwrite."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(drawn):
        m = re.match(r"\x1b\[(\d*)([A-Za-z])", drawn[i:])
        if m:
            if m.group(2) == "A":
                row = max(0, row - int(m.group(1) or 1))
            i += m.end()
            continue
        ch = drawn[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
        else:
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
    return ["".join(r).rstrip() for r in rows if "".join(r).strip()]


@pytest.fixture
def terminal(monkeypatch):
    """Bars drawn as if stderr were a terminal (the CLI fixture captures what they drew)."""
    monkeypatch.delenv(_progress.ENV, raising=False)
    monkeypatch.setattr(_progress, "_terminal", lambda stream: True)


def test_screen_keeps_a_left_bar_and_drops_a_cleared_one():
    assert _screen("\rx:  50%|##  | 1/2\rx: 100%|####| 2/2\n") == ["x: 100%|####| 2/2"]
    assert _screen("\rx:  50%|##  | 1/2\r" + " " * 20 + "\r") == []


@pytest.mark.parametrize("command", ["run", "resume", "sweep"])
def test_no_progress_bar_is_left_on_the_terminal_at_the_end(tmp_path, cli, terminal, command):
    """docs/cli.md: bars are cleared when the work ends, so the terminal holds only the
    results (run: the replications' bar and the report's; sweep: the points' bar)."""
    from tests.sim.helpers import scenario_text

    path = tmp_path / "small.toml"
    path.write_text(scenario_text(size=500, replications=3))
    if command == "sweep":
        argv = (
            "sweep",
            path,
            "--grid",
            "mechanism.eps=[0.5, 1]",
            "--replications",
            "1",
            "--out",
            tmp_path / "out",
            "--no-point-reports",
        )
    elif command == "run":
        argv = ("run", path, "--out", tmp_path / "out")
    else:  # a run interrupted after one replication, resumed on a terminal
        from ldpsim.runs import RunInterrupted
        from ldpsim.sim import run_scenario

        with pytest.raises(RunInterrupted):
            run_scenario(path, out=tmp_path / "out", progress=False, interrupt_after=1)
        argv = ("run", "--resume", tmp_path / "out")
    r = cli(*argv, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "%|" in r.stderr  # a bar was drawn ...
    assert _screen(r.stderr) == []  # ... and nothing of it is left


# --------------------------------------------------------------------------- item 13: scenarios copy
def _one_line(r, code: int = 2) -> str:
    assert r.returncode == code, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr.strip()


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_scenarios_copy_into_a_missing_folder_creates_it(tmp_path, cli):
    r = cli("scenarios", "copy", "anes96", "--to", Path("new") / "deep", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new" / "deep" / "anes96.toml").is_file() and (
        tmp_path / "new" / "deep" / "data" / "anes96.csv"
    ).is_file()


def test_scenarios_copy_under_a_file_is_one_line_and_exit_2(tmp_path, cli):
    """A path under a regular file cannot be written by anyone, root included."""
    (tmp_path / "file.txt").write_text("not a folder\n")
    before = _tree(tmp_path)
    r = cli("scenarios", "copy", "survey", "--to", Path("file.txt") / "sub", cwd=tmp_path)
    assert _one_line(r) == "ldpsim: error: --to: got 'file.txt/sub', expected a folder we can write (Not a directory)"
    assert r.stdout == "" and _tree(tmp_path) == before


def _refuse_writes_under(ro: Path, monkeypatch) -> None:
    """Make ``ro`` read-only: by its mode where permissions are enforced, and for root (who
    bypasses them) by a file system that refuses to make anything under it."""
    ro.mkdir(mode=0o500)
    real_mkdir = Path.mkdir

    def refused(path: object) -> bool:
        p = Path(os.fspath(path)).resolve()
        return p.parent == ro.resolve() or ro.resolve() in p.parents

    def mkdir(self, *args, **kwargs):
        if refused(self):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)


@pytest.mark.parametrize("inside", [False, True])
def test_scenarios_copy_into_a_read_only_folder_is_one_line_and_exit_2(tmp_path, cli, monkeypatch, inside):
    ro = tmp_path / "ro"
    _refuse_writes_under(ro, monkeypatch)
    dest = Path("ro") / "sub" if inside else Path("ro")
    try:
        before = _tree(tmp_path)
        r = cli("scenarios", "copy", "anes96", "--to", dest, cwd=tmp_path)
        assert _one_line(r) == f"ldpsim: error: --to: got '{dest}', expected a folder we can write (Permission denied)"
        assert r.stdout == "" and _tree(tmp_path) == before
    finally:
        ro.chmod(0o700)


def test_scenarios_copy_whose_data_folder_is_a_file_writes_nothing(tmp_path, cli):
    (tmp_path / "data").write_text("a file where the data folder goes\n")
    r = cli("scenarios", "copy", "anes96", "--to", ".", cwd=tmp_path)
    assert _one_line(r) == "ldpsim: error: --to: got 'data', expected a folder (it is a file)"
    assert _tree(tmp_path) == ["data"]


def test_scenarios_copy_that_fails_while_writing_leaves_nothing_it_made(tmp_path, cli, monkeypatch):
    """A full disk on the second file: one line, and the first file and the folders made for
    the copy are removed again."""
    from ldpsim import _shipped

    real, calls = _shipped.write_bytes, []

    def full_disk(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)

    monkeypatch.setattr(_shipped, "write_bytes", full_disk)
    r = cli("scenarios", "copy", "anes96", "--to", Path("new") / "copy", cwd=tmp_path)
    assert (
        _one_line(r) == "ldpsim: error: --to: got 'new/copy', expected a folder we can write (No space left on device)"
    )
    assert len(calls) == 2 and _tree(tmp_path) == []
