"""Progress bars (ldpsim._progress): on a terminal only, with tqdm's estimate of the time left,
on every long piece of work (reproductions per instance, sequential audits per look).

- With stderr a real terminal (a pseudo-terminal of 100 x 30), ``ldpsim reproduce`` and
  ``ldpsim audit --sequential`` draw a bar with ``[elapsed<remaining]`` and print on stdout
  exactly what they print without one; ``LDPSIM_NO_PROGRESS=1`` switches the bar off.
- With stderr a pipe nothing is written to it.
- The files a reproduction writes are the same bytes with and without a terminal, and with
  one or two worker processes (CSV files; metadata.json holds times).
- In-process: ticks that reach the bar (in order or as workers finish, never from a
  worker's own copy of it) add up to the total every reproduction announced upfront;
  ``ldpsim run`` writes its report under a bar by stage, only with ``progress``.

Fixed seeds throughout; the whole file takes about 15 s.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from contextlib import contextmanager
from pathlib import Path

import pytest

from ldpsim import _progress
from ldpsim._pool import pool_map
from ldpsim.errors import LdpSimError
from ldpsim.reproduce import get
from tests.tiers import sample

#: tqdm's ``[elapsed<remaining`` with a number for the time left (not ``?``).
TIME_LEFT = re.compile(r"\[\d+:\d\d<\d+:\d\d")
AUDIT = ("audit", "randomized_response:k=4,eps=1", "--sequential", "--n", "200000", "--seed", "7")
STEIN = ("reproduce", "stein-exponent", "--instances", "2", "--eps-grid", "1")


# --------------------------------------------------------------------------- helpers
def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != _progress.ENV}
    env.update(extra)
    return env


def run_on_terminal(args: tuple[str, ...], cwd: Path, **env: str) -> tuple[int, str, str]:
    """``python -m ldpsim ARGS`` with stderr a pseudo-terminal of 100 x 30 and stdout a pipe:
    (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ldpsim", *args],
        cwd=cwd,
        env=_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    out_fd = proc.stdout.fileno()
    got = {master: bytearray(), out_fd: bytearray()}
    open_fds = set(got)
    try:
        while open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], 120)
            assert ready, "no output for 120 s"
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # the terminal's other end closed (Linux: EIO)
                    data = b""
                if data:
                    got[fd] += data
                else:
                    open_fds.discard(fd)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        proc.stdout.close()
    return proc.returncode, got[out_fd].decode(), got[master].decode(errors="replace")


def run_piped(args: tuple[str, ...], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ldpsim", *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _same_stdout(text: str, out: Path) -> str:
    """stdout with the output folder and the run's seconds masked."""
    return re.sub(r", \d+\.\d s$", ", T s", text.replace(str(out), "OUT"), flags=re.M)


def _csvs(folder: Path) -> dict[str, bytes]:
    out = {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}
    assert out, f"no CSV in {folder}"
    return out


@pytest.fixture
def terminal(monkeypatch, capsys):
    """In-process bars as if stderr were a terminal; ``terminal()`` is what they drew."""
    monkeypatch.delenv(_progress.ENV, raising=False)
    monkeypatch.setattr(_progress, "_terminal", lambda stream: True)
    return lambda: capsys.readouterr().err


@pytest.fixture
def bars(monkeypatch):
    """Every bar opened: (desc, total, how far its ticks got, shown)."""
    seen: list[tuple[str, float, float, bool]] = []
    original = _progress.bar

    @contextmanager
    def recording(total, desc, *args, **kwargs):
        with original(total, desc, *args, **kwargs) as b:
            yield b
            seen.append((desc, total, 0.0 if b is None else b.n, b is not None))

    monkeypatch.setattr(_progress, "bar", recording)
    return seen


def _tick_in_worker(x: int) -> int:
    _progress.advance(1000)  # a forked worker's copy of the bar: must not move it
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


# --------------------------------------------------------------------------- the commands
def test_reproduce_on_a_terminal_shows_the_time_left_and_writes_the_same(tmp_path):
    code, stdout, screen = run_on_terminal((*STEIN, "--out", str(tmp_path / "tty")), tmp_path)
    assert code == 0, screen
    assert "stein-exponent:" in screen and TIME_LEFT.search(screen), screen
    piped = run_piped((*STEIN, "--out", str(tmp_path / "cat")), tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""  # no terminal: no bar
    assert _same_stdout(stdout, tmp_path / "tty") == _same_stdout(piped.stdout, tmp_path / "cat")
    assert _csvs(tmp_path / "tty") == _csvs(tmp_path / "cat")


def test_sequential_audit_on_a_terminal_shows_the_looks_and_the_time_left(tmp_path):
    code, stdout, screen = run_on_terminal(AUDIT, tmp_path)
    assert code == 0, screen
    assert TIME_LEFT.search(screen) and re.search(r"look \d+ of \d+", screen), screen
    piped = run_piped(AUDIT, tmp_path)
    assert piped.returncode == 0 and piped.stderr == ""
    assert stdout == piped.stdout  # a fixed seed: the same report, bar or not


def test_no_progress_variable_switches_the_bar_off_on_a_terminal(tmp_path):
    code, stdout, screen = run_on_terminal(AUDIT, tmp_path, LDPSIM_NO_PROGRESS="1")
    assert code == 0 and stdout.startswith("audit of")
    assert screen == ""


# --------------------------------------------------------------------------- the files
@pytest.mark.parametrize(
    "name, kwargs",
    sample([("kov-fig3", {"eps_grid": [0.1, 1.0, 10.0]}), ("stein-exponent", {"points": 2, "samples": 200})]),
)
def test_files_do_not_depend_on_workers_or_the_terminal(tmp_path, monkeypatch, name, kwargs, bars):
    monkeypatch.delenv(_progress.ENV, raising=False)
    func = get(name).func
    runs = {}
    for label, workers, shown in (("one", 1, False), ("two", 2, False), ("bar", 1, True)):
        if shown:
            monkeypatch.setattr(_progress, "_terminal", lambda stream: True)
        out = tmp_path / label
        out.mkdir()
        func(5, 3, out, workers=workers, **kwargs)
        runs[label] = _csvs(out)
    assert runs["one"] == runs["two"] == runs["bar"]
    assert [b[3] for b in bars] == [False, False, True]


# --------------------------------------------------------------------------- every reproduction
@pytest.mark.parametrize(
    "name", sample(["kov-fig3", "kov-fig4", "kov-fig5", "kov-mi", "composition-region", "clt"], keep=(0, 2, 4))
)
def test_each_reproduction_fills_one_bar_announced_upfront(tmp_path, terminal, bars, name):
    """One bar per reproduction, its total known before the work, its ticks (weighted by the
    expected cost where pieces differ) adding up to exactly that total. stein-exponent and
    multiparty-optimality are pool_map with one tick per item (tested above and below)."""
    kwargs = {"eps_grid": [0.5, 2.0]} if name.startswith("kov") else {}
    get(name).func(1, 1, tmp_path, **kwargs)
    assert len(bars) == 1, bars
    desc, total, reached, shown = bars[0]
    assert desc == name and shown
    assert reached == pytest.approx(total, rel=1e-9)
    assert name in terminal()


def test_run_report_has_a_bar_by_stage_only_with_progress(tmp_path, terminal, bars):
    from ldpsim.sim import run_scenario
    from tests.sim.helpers import scenario_text

    path = tmp_path / "test.toml"
    path.write_text(scenario_text(size=2000))
    run_scenario(path, out=tmp_path / "quiet", progress=False)
    assert terminal() == "" and [(b[0], b[3]) for b in bars] == [("test", False), ("test: report", False)]
    run_scenario(path, out=tmp_path / "shown")
    screen = terminal()
    assert "test: report:" in screen and "tables and figures" in screen and TIME_LEFT.search(screen)
    (reps, n_reps, reps_reached, reps_shown), (desc, total, reached, shown) = bars[-2:]
    assert reps == "test" and reps_shown and reps_reached == n_reps  # the replications' bar, then the report's
    assert shown and reached == pytest.approx(total, rel=1e-9)


# --------------------------------------------------------------------------- the unit
def test_without_a_terminal_nothing_is_drawn_and_advance_is_a_no_op(capsys):
    _progress.advance()  # no bar: nothing happens
    with _progress.bar(3, "work") as b:
        assert b is None and not _progress.active()
        _progress.advance()
        _progress.note("stage")
    assert capsys.readouterr().err == ""


def test_bar_shows_the_time_left_and_is_cleared_on_errors_and_ctrl_c(terminal):
    for exc in (ValueError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with _progress.bar(4, "work", unit="piece") as b:
                assert _progress.active()
                _progress.advance(2)
                b.refresh()
                raise exc
        assert b.disable  # closed
        assert not _progress.active()
    text = terminal()
    assert "work:  50%" in text and TIME_LEFT.search(text)
    assert text.endswith("\r")  # leave=False: the line is wiped, nothing left behind


def test_a_resumed_bar_starts_at_initial_and_is_wiped_when_done(terminal):
    with _progress.bar(8, "resumed", unit="rep", initial=5) as b:
        assert b.n == 5
        b.refresh()
        _progress.advance(3)
    text = terminal()
    assert "resumed:  62%" in text and "5/8" in text
    assert text.endswith("\r") and "\n" not in text  # done: wiped like every bar (docs/cli.md)
    with pytest.raises(KeyboardInterrupt):
        with _progress.bar(8, "stopped", unit="rep", initial=2):
            raise KeyboardInterrupt
    text = terminal()
    assert "2/8" in text and text.endswith("\r")  # Ctrl-C: wiped too


@pytest.mark.parametrize("initial", [-1, 9, float("nan"), "2", True])
def test_a_bad_initial_is_refused_naming_it(initial):
    with pytest.raises(LdpSimError, match="^initial: got"):
        with _progress.bar(8, "work", initial=initial):
            pass


def test_switched_off_by_the_variable_and_by_show(terminal, monkeypatch):
    with _progress.bar(2, "shown") as b:
        assert b is not None
    with _progress.bar(2, "hidden", show=False) as b:
        assert b is None
    for value, off in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv(_progress.ENV, value)
        assert _progress.switched_off() is off
        assert _progress.shown() is not off


def test_an_inner_bar_takes_over_its_ticks(terminal):
    with _progress.bar(10, "outer") as outer:
        _progress.advance()
        with _progress.bar(5, "inner", show=False):
            _progress.advance(5)  # the inner (hidden) bar's own tick
        _progress.advance()
    assert outer.n == 2


@pytest.mark.parametrize("total", [0, -1, float("nan"), float("inf"), "3", True, None])
def test_a_bad_total_is_refused_naming_it(total):
    with pytest.raises(LdpSimError, match="^total: got"):
        with _progress.bar(total, "work"):
            pass


@pytest.mark.parametrize("workers", [1, 2])
def test_pool_map_advances_per_item_in_order_and_ignores_workers_ticks(terminal, workers):
    with _progress.bar(10, "map", counts=False) as b:
        out = pool_map(_tick_in_worker, range(4), workers=workers, ticks=[1, 2, 3, 4])
    assert out == [0, 1, 4, 9]
    # in one process the function's own advance(1000) reaches the bar too; in workers never
    assert b.n == (10 + 4 * 1000 if workers == 1 else 10)


def test_pool_map_stops_on_an_error_and_checks_ticks(terminal):
    with pytest.raises(ValueError, match="three"):
        pool_map(_fail_on_three, range(6), workers=2)
    with pytest.raises(LdpSimError, match="^ticks: got 2 numbers"):
        pool_map(_fail_on_three, range(3), workers=1, ticks=[1, 1])
