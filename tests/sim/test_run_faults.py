"""Run directories under faults (issue 14's defects, each reproduced first): runs in which no
report arrives, work bounded at load time, names and seeds that would leave reports/, resume
that checks what it reads, concurrent writers, a full disk and Ctrl-C at every stage."""

from __future__ import annotations

import errno
import json
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpsim import LdpSimError, _files
from ldpsim.cli import main
from ldpsim.runs import RunInterrupted, default_run_dir
from ldpsim.sim import parse_scenario, resume_run, run_scenario
from ldpsim.sim.scenario.multiparty import parse_multiparty
from tests.sim.helpers import SCENARIOS, scenario_text
from tests.tiers import sample

REPORT_FILES = {"summary.md", "results.csv", "metadata.json", "scenario.toml"}


def one_line_error(capsys, code: int = 2) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run_cli(argv: list[str]) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning may reach a user on a path the library handles
        return main(argv)


# --------------------------------------------------------------------- 1. runs in which no report arrives
EMPTY = {
    "everything lost": dict(loss=1.0),
    "arrivals after the end": dict(arrivals='{ kind = "all_at_once", at = 5.0 }', end=1.0),
    "end at 1e-9": dict(arrivals='{ kind = "poisson", duration = 1.0 }', end=1e-9),
    "end at 1e-300": dict(arrivals='{ kind = "poisson", duration = 1.0 }', end=1e-300),
    "duration 1e-300 and a late end": dict(
        arrivals='{ kind = "poisson", duration = 1e-300 }', latency='{ kind = "constant", value = 2.0 }', end=1.0
    ),
}


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
@pytest.mark.parametrize("case", sorted(EMPTY))
def test_a_run_without_reports_finishes_with_a_report_that_says_so(case, mode, tmp_path, capsys):
    path = write(tmp_path, scenario_text(size=500, mode=mode, **EMPTY[case]))
    assert run_cli(["run", str(path), "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "no report reached the server" in out
    run = tmp_path / "run"
    assert REPORT_FILES <= {p.name for p in run.iterdir()}
    assert "finished" in json.loads((run / "metadata.json").read_text())
    summary = (run / "summary.md").read_text()
    assert "No report reached the server" in summary and "error_vs_n.png" not in summary
    assert not (run / "error_vs_n.png").exists()


def test_replications_with_and_without_reports_mix_cleanly(tmp_path, capsys):
    """Loss 0.9 with 3 clients: some replications receive nothing, others something."""
    path = write(tmp_path, scenario_text(size=3, loss=0.9, replications=12, mode="aggregate"))
    assert run_cli(["run", str(path), "--out", str(tmp_path / "run")]) == 0
    df = pd.read_csv(tmp_path / "run" / "results.csv")
    received = df[df["quantity"] == "received"]["estimate"]
    assert (received == 0).any() and (received > 0).any()  # both kinds happened at this seed
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "Interval coverage over all checkpoints with reports" in summary


# --------------------------------------------------------------------- 2. work bounded at load time
def test_report_checkpoints_beyond_the_row_budget_are_refused_at_load():
    big = scenario_text(size=10**10, mode="aggregate", checkpoints="{ every_reports = 10_000 }")
    with pytest.raises(
        LdpSimError, match=r"^s.toml: analyst.checkpoints.every_reports: got 10000, expected no report-count"
    ) as info:
        parse_scenario(big, "s.toml")  # 10^6 checkpoints, and numpy's split cannot take 10^9 reports in a tick
    assert "\n" not in str(info.value)
    many = scenario_text(size=10**8, mode="aggregate", checkpoints="{ every_reports = 100 }")
    with pytest.raises(
        LdpSimError, match=r"^s.toml: analyst.checkpoints.every_reports: got 100, expected at least [0-9,]+ "
    ):
        parse_scenario(many, "s.toml")
    with pytest.raises(LdpSimError, match=r"every_reports: got 1, expected at least 4 "):
        parse_scenario(scenario_text(size=10**5, checkpoints="{ every_reports = 1 }"), "s.toml")
    parse_scenario(scenario_text(size=10**5, checkpoints="{ every_reports = 4 }"), "s.toml")  # the bound it names works


def test_replications_beyond_the_row_budget_are_refused_at_load():
    with pytest.raises(LdpSimError, match=r"simulation.replications: got 1000000, expected at most [0-9,]+"):
        parse_scenario(scenario_text(replications=1_000_000), "s.toml")


def test_aggregate_splits_beyond_the_work_budget_are_refused_at_load():
    text = scenario_text(
        size=10**10,
        mode="aggregate",
        arrivals='{ kind = "poisson", duration = 1.0 }',
        tick=1e-5,
        end=1.0,
        latency='{ kind = "exponential", mean = 0.1 }',
    )
    with pytest.raises(LdpSimError, match=r"simulation.tick: got 1e-05, expected a coarser tick"):
        parse_scenario(text, "s.toml")


def multiparty_text(**rounds: object) -> str:
    text = (SCENARIOS / "multiparty_xor.toml").read_text()
    for key, value in rounds.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1
    return text


def test_multiparty_rounds_all_in_flight_are_refused_at_load():
    with pytest.raises(
        LdpSimError, match=r"^m.toml: rounds.count: got 1,000,000,000, expected rounds whose messages in flight fit"
    ):
        parse_multiparty(multiparty_text(count="1_000_000_000", interval=0), "m.toml")
    parse_multiparty(multiparty_text(count="1_000_000_000"), "m.toml")  # spread over time: legal, streams
    with pytest.raises(LdpSimError, match=r"simulation.replications: got 100000, expected at most"):
        parse_multiparty(multiparty_text(replications=100_000), "m.toml")


def test_multiparty_memory_does_not_grow_with_rounds(monkeypatch):
    """Per-round state streams: the bits of decided batches are forgotten and completion
    delays are kept only for the first rounds, so ten times the rounds take about the same
    peak memory."""
    import tracemalloc

    from ldpsim.protocols import Protocol, Task
    from ldpsim.sim import multiparty as psim
    from ldpsim.sim.network import ExponentialLatency

    monkeypatch.setattr(psim, "QUANTILE_SAMPLE", 30_000)

    def peak(rounds: int) -> int:
        tracemalloc.start()
        psim.simulate_broadcast(
            [Protocol.binary([1.0, 2.0])],
            Task.xor(2),
            rounds,
            batch=2_000,
            interval=0.01,
            latency=ExponentialLatency(0.01),
            seed=1,
        )
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    small, large = peak(40_000), peak(400_000)
    assert large < 1.5 * small, (small, large)


def test_demo_bounds_its_work_and_checks_its_seed(capsys):
    assert run_cli(["demo", "--n", "10000000000"]) == 2
    assert "--n: got 10000000000, expected an integer >= 1 and <= 1000000000" in one_line_error(capsys)
    assert run_cli(["demo", "--seed", "-1"]) == 2
    assert "--seed: got -1" in one_line_error(capsys)


# --------------------------------------------------------------------- 3 and 10. names and seeds
@pytest.mark.parametrize("name", ["..", ".", "...", "a" * 101])
def test_names_that_leave_reports_or_overflow_a_file_name_are_refused(name):
    with pytest.raises(LdpSimError, match=r"^s.toml: name: ") as info:
        parse_scenario(scenario_text().replace('name = "test"', f'name = "{name}"'), "s.toml")
    assert "\n" not in str(info.value)
    with pytest.raises(LdpSimError, match=r"^m.toml: name: "):
        parse_multiparty(multiparty_text().replace('name = "multiparty_xor"', f'name = "{name}"'), "m.toml")


def test_default_run_directory_stays_under_its_root(tmp_path):
    path = default_run_dir("a" * 100, 2**128 - 1, base=tmp_path / "reports")
    assert path.resolve().is_relative_to((tmp_path / "reports").resolve())
    path.mkdir(parents=True)  # the longest name and seed still make a legal path


@pytest.mark.parametrize("seed", [str(10**300), "-1", str(2**128)])
def test_huge_or_negative_seeds_are_one_line(seed, tmp_path, capsys):
    path = write(tmp_path, scenario_text(size=100))
    assert run_cli(["run", str(path), "--seed", seed]) == 2
    assert one_line_error(capsys).startswith("ldpsim: error: --seed: got ")
    assert not (tmp_path / "reports").exists()


# --------------------------------------------------------------------- 4. resume checks what it reads
def interrupted(tmp_path: Path, reps: int = 4, done: int = 2) -> tuple[Path, Path]:
    path = write(tmp_path, scenario_text(size=2000, replications=reps))
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=done)
    return path, tmp_path / "cut"


def test_resume_rebuilds_the_scenario_from_its_file_not_the_metadata(tmp_path):
    path, cut = interrupted(tmp_path)
    full = run_scenario(path, out=tmp_path / "full", progress=False)
    meta = json.loads((cut / "metadata.json").read_text())
    meta["spec"]["mechanism"]["eps"] = 5.0  # the metadata's copy of the spec is for reading only
    (cut / "metadata.json").write_text(json.dumps(meta))
    resumed = resume_run(cut, progress=False)
    assert (resumed.run_dir / "results.csv").read_bytes() == (full.run_dir / "results.csv").read_bytes()


@pytest.mark.parametrize("key, value", [("seed", 8), ("replications", 3)])
def test_resume_refuses_an_edited_seed_or_replication_count(key, value, tmp_path, capsys):
    _, cut = interrupted(tmp_path)
    meta = json.loads((cut / "metadata.json").read_text())
    meta[key] = value
    (cut / "metadata.json").write_text(json.dumps(meta))
    assert run_cli(["run", "--resume", str(cut)]) == 2
    assert "metadata.json as the run wrote it" in one_line_error(capsys)


@pytest.mark.parametrize("cut_at", ["line", "mid-line", "extra line", "deleted"])
def test_resume_refuses_a_changed_replication_file(cut_at, tmp_path, capsys):
    _, cut = interrupted(tmp_path)
    rep = cut / "replications" / "rep-000001.csv"
    data = rep.read_bytes()
    if cut_at == "line":
        rep.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])  # one whole row fewer
    elif cut_at == "mid-line":
        rep.write_bytes(data[: len(data) // 2])
    elif cut_at == "extra line":
        rep.write_bytes(data + data.splitlines(keepends=True)[-1])
    else:
        rep.unlink()
    assert run_cli(["run", "--resume", str(cut)]) == 2
    line = one_line_error(capsys)
    assert "replications/rep-000001.csv" in line and "delete it" in line


def test_a_replication_file_without_its_record_is_run_again(tmp_path):
    """A kill between the file and its record: the replication is simply run again."""
    path, cut = interrupted(tmp_path)
    full = run_scenario(path, out=tmp_path / "full", progress=False)
    (cut / "replications" / "rep-000001.json").unlink()
    (cut / "replications" / "rep-000001.csv").write_bytes(b"half a file")
    resumed = resume_run(cut, progress=False)
    assert (resumed.run_dir / "results.csv").read_bytes() == (full.run_dir / "results.csv").read_bytes()


# --------------------------------------------------------------------- 5. concurrent writers
def test_a_second_writer_gets_one_line_naming_the_pid(tmp_path, capsys, cli):
    _, cut = interrupted(tmp_path)
    with _files.DirectoryLock(cut, "--resume"):  # an flock: a second descriptor conflicts even in this process
        proc = cli("run", "--resume", cut)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"in use by pid {__import__('os').getpid()}" in lines[0], proc.stderr
    with _files.DirectoryLock(tmp_path / "cut", "--out"):
        assert run_cli(["run", str(tmp_path / "s.toml"), "--out", str(cut)]) == 2
        one_line_error(capsys)


@pytest.mark.parametrize("count", [2, pytest.param(6, marks=pytest.mark.slow)])
def test_concurrent_resumes_of_one_directory(count, tmp_path):
    """``count`` processes resume the same run at once: each either finishes it or says in
    one line that it is in use (or already finished); the result is the uninterrupted run's.
    True subprocesses: the writers must be separate processes."""
    path, cut = interrupted(tmp_path, reps=6, done=1)
    full = run_scenario(path, out=tmp_path / "full", progress=False)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ldpsim", "run", "--resume", str(cut)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    outcomes = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        outcomes.append((p.returncode, err))
    for code, err in outcomes:
        assert "Traceback" not in err, err
        assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1 and "in use by" in err), err
    assert any(code == 0 for code, _ in outcomes)
    assert (cut / "results.csv").read_bytes() == (full.run_dir / "results.csv").read_bytes()
    assert not list(cut.rglob("*.tmp"))


def test_temporary_names_are_unique(tmp_path):
    names = {_files.temporary_name(tmp_path / "rep-000001.csv") for _ in range(100)}
    assert len(names) == 100


# --------------------------------------------------------------------- 6. a full disk
class FullDisk:
    """Replaces the file opening of :mod:`ldpsim._files` (every file a run writes): writes
    succeed until ``budget`` bytes have been written in all, then fail with ENOSPC."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def open(self, path, mode="r", *args, **kwargs):
        f = open(path, mode, *args, **kwargs)
        if "w" not in mode and "a" not in mode:
            return f
        disk = self

        class Limited:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()
                return False

            def write(self, data):
                if len(data) > disk.left:
                    f.write(data[: disk.left])
                    disk.left = 0
                    raise OSError(errno.ENOSPC, "No space left on device")
                disk.left -= len(data)
                return f.write(data)

        return Limited()


@pytest.mark.parametrize(
    "points", [pytest.param(5, id="budgets5"), pytest.param(25, id="budgets25", marks=pytest.mark.slow)]
)
def test_a_full_disk_is_one_line_and_leaves_a_resumable_or_no_directory(points, tmp_path, monkeypatch, capsys):
    """Budgets from nothing to a whole run (0, 1, 200, 500 bytes and ``points`` more, evenly
    to twice the run's bytes; the fine sweep in the slow tier): one line and exit 2 (or
    success), no file half-written, and a directory that is either gone or resumes to the
    same bytes."""
    path = write(tmp_path, scenario_text(size=2000, replications=3, mode="aggregate"))
    assert run_cli(["run", str(path), "--out", str(tmp_path / "ref")]) == 0
    ref = {p.relative_to(tmp_path / "ref"): p.read_bytes() for p in (tmp_path / "ref").rglob("*") if p.is_file()}
    total = sum(len(b) for name, b in ref.items() if name.name != ".lock")
    capsys.readouterr()
    budgets = sorted({0, 1, 200, 500, *np.linspace(0, 2 * total, points).astype(int).tolist()})
    outcomes = {"removed": 0, "resumed": 0, "finished": 0}
    for i, budget in enumerate(budgets):
        out = tmp_path / f"run{i}"
        with monkeypatch.context() as m:
            m.setattr(_files, "open", FullDisk(budget).open, raising=False)
            code = run_cli(["run", str(path), "--out", str(out)])
        if code == 0:
            capsys.readouterr()
            outcomes["finished"] += 1
            continue
        assert code == 2
        line = one_line_error(capsys)
        assert "No space left on device" in line, line
        assert not list(tmp_path.rglob("*.tmp")), "no temporary file is left behind"
        if not out.exists():
            outcomes["removed"] += 1
            continue
        for p in out.rglob("*"):  # whatever is there is complete
            rel = p.relative_to(out)
            if p.is_file() and rel.name not in ("metadata.json", ".lock"):
                assert p.read_bytes() == ref[rel], rel
        assert "resume with: ldpsim run --resume" in line
        assert run_cli(["run", "--resume", str(out)]) == 0
        capsys.readouterr()
        for name in ("results.csv", "summary.md"):
            assert (out / name).read_bytes() == ref[Path(name)]
        outcomes["resumed"] += 1
    assert outcomes["removed"] and outcomes["resumed"] and outcomes["finished"], outcomes


def test_start_up_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, scenario_text(size=100))
    monkeypatch.setattr(_files, "open", FullDisk(10).open, raising=False)
    assert run_cli(["run", str(path), "--out", str(tmp_path / "deep" / "run")]) == 2
    assert "No space left on device" in one_line_error(capsys)
    assert not (tmp_path / "deep").exists()
    (tmp_path / "empty").mkdir()  # an existing empty directory stays, empty
    assert run_cli(["run", str(path), "--out", str(tmp_path / "empty")]) == 2
    one_line_error(capsys)
    assert list((tmp_path / "empty").iterdir()) == []


# --------------------------------------------------------------------- 7. Ctrl-C at every stage
STAGES = {  # what to interrupt (an attribute of ldpsim.runs or of the SurveyStudy) and when
    "merging": (False, "concat_replications", lambda args: True),
    "rendering the report": (True, "render_report", lambda args: True),
    "writing a report file": (False, "write_bytes", lambda args: str(args[0]).endswith("summary.md")),
    "writing the final metadata": (False, "write_json", lambda args: "finished" in args[1]),
}


@pytest.mark.parametrize("stage", sample(sorted(STAGES)))
def test_ctrl_c_after_the_last_replication_is_one_line_and_resumable(stage, tmp_path, monkeypatch, capsys):
    path = write(tmp_path, scenario_text(size=1000, replications=2))
    assert run_cli(["run", str(path), "--out", str(tmp_path / "ref")]) == 0
    capsys.readouterr()
    import ldpsim.runs as runs
    from ldpsim.sim.studies import SurveyStudy

    on_study, attr, when = STAGES[stage]
    owner = SurveyStudy if on_study else runs
    real = getattr(owner, attr)

    def interrupt(*args, **kwargs):
        if when(args):
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(owner, attr, interrupt)
        assert run_cli(["run", str(path), "--out", str(tmp_path / "cut")]) == 130
    line = one_line_error(capsys)
    assert "resume with: ldpsim run --resume" in line
    assert run_cli(["run", "--resume", str(tmp_path / "cut")]) == 0
    for name in ("results.csv", "summary.md", "estimates_over_time.png"):
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()


def test_ctrl_c_while_starting_leaves_no_directory(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, scenario_text(size=100))

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("ldpsim.runs.write_json", interrupt)
    assert run_cli(["run", str(path), "--out", str(tmp_path / "x" / "run")]) == 130
    assert one_line_error(capsys) == "ldpsim: interrupted; nothing was written"
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_ctrl_c_as_the_folder_is_made_leaves_no_directory(command, tmp_path, monkeypatch, capsys):
    """Ctrl-C that lands just after the folder was made, before the block that undoes a
    failed start begins (the slow tier's real SIGINT found it: a bare folder stayed)."""
    from pathlib import Path

    path = write(tmp_path, scenario_text(size=100))
    out = tmp_path / "x" / "run"
    mkdir = Path.mkdir

    def made_then_interrupted(self, *args, **kwargs):
        mkdir(self, *args, **kwargs)
        if self == out:
            raise KeyboardInterrupt

    monkeypatch.setattr(Path, "mkdir", made_then_interrupted)
    extra = ["--grid", "mechanism.eps=[0.5, 2]"] if command == "sweep" else []
    assert run_cli([command, str(path), *extra, "--out", str(out)]) == 130
    assert one_line_error(capsys) == "ldpsim: interrupted; nothing was written"
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------- found by the fuzzers
def test_a_tick_that_overflows_the_tick_count_is_one_line():
    text = scenario_text(size=10, tick=1e-300, end=1e12)
    with pytest.raises(LdpSimError, match=r"^s.toml: simulation.tick: got 1e-300, expected at most 1000000 ticks"):
        parse_scenario(text, "s.toml")


def test_report_count_checkpoints_cost_work_even_without_tasks():
    text = scenario_text(size=10**8, mode="aggregate", checkpoints="{ every_reports = 1 }").replace(
        "checkpoints = { every_reports = 1 }", "checkpoints = { every_reports = 1 }\ntasks = []"
    )
    with pytest.raises(LdpSimError, match=r"every_reports: got 1, expected at least"):
        parse_scenario(text, "s.toml")


def test_multiparty_latency_far_beyond_the_round_interval_is_bounded_without_overflow():
    text = multiparty_text(count=1611, batch=1, interval=1e-300).replace(
        'latency = { kind = "lognormal", median = 0.05, sigma = 0.8 }', 'latency = { kind = "constant", value = 1e12 }'
    )
    parse_multiparty(text, "m.toml")  # 1611 rounds all in flight is small: accepted, no OverflowError


@pytest.mark.parametrize("median, sigma, n", [(1.0, 10.0, 1), (1e-9, 10.0, 7), (0.05, 0.8, 6), (1e12, 1.0, 64)])
def test_expected_max_of_lognormal_latencies_against_mpmath(median, sigma, n):
    """E[max of n lognormals] = int_0^inf 1 - F(s)^n ds, by mpmath in the log scale with the
    integrand's peak region split out (quad at 40 digits); n = 1 is the closed-form mean."""
    import mpmath as mp

    from ldpsim.sim.network import LognormalLatency

    with mp.workdps(40):
        # 1 - Phi(z)^n as -expm1(n log1p(-Phi(-z))): no cancellation far in the upper tail
        f = lambda z: -mp.expm1(n * mp.log1p(-mp.ncdf(-z))) * median * sigma * mp.e ** (sigma * z)
        cuts = [-mp.inf, -10, 0, sigma / 2, sigma, sigma + 5, sigma + 10, sigma + 20, mp.inf]
        ref = float(mp.quad(f, cuts, maxdegree=10))
    got = LognormalLatency(median, sigma).expected_max(n)
    assert got == pytest.approx(ref, rel=1e-9)
    if n == 1:
        assert got == pytest.approx(median * np.exp(sigma**2 / 2), rel=1e-12)


def test_binomial_tolerance_at_extreme_alpha_is_a_valid_interval():
    from ldpsim.stats import mean_tolerance as tolerance

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tolerance(np.eye(2), 0.5, 880, 1e-300) == 0.5  # P(K = 0) = 2^-880 > 1e-300: the whole range
        assert tolerance(np.eye(2), 1.0, 880, 1e-300) == 0.0


def test_checkpoints_far_finer_than_the_default_end_are_one_line():
    text = scenario_text(size=10, arrivals='{ kind = "all_at_once", at = 1e12 }', checkpoints="{ every = 1e-300 }")
    with pytest.raises(LdpSimError, match=r"^s.toml: analyst.checkpoints.every: got 1e-300, expected at least 1e\+06"):
        parse_scenario(text, "s.toml")


def test_a_time_far_past_the_end_over_a_tiny_tick_raises_no_warning(tmp_path, capsys):
    text = scenario_text(
        size=50,
        arrivals='{ kind = "waves", times = [0.0, 1e12], fractions = [0.5, 0.5] }',
        latency='{ kind = "constant", value = 1e12 }',
        tick=1e-300,
        end=1e-300,
        checkpoints="{ }",
    )
    assert run_cli(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "run")]) == 0


def _can_mount_tmpfs() -> bool:
    import shutil as sh

    if sh.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare and tmpfs mounts (root)")
@pytest.mark.parametrize(
    "size, outcome",
    [
        pytest.param("4k", "removed", marks=pytest.mark.slow),
        pytest.param("16k", "resumed", marks=pytest.mark.slow),  # 3-12 s each: in the slow tier (a
        # full disk, its one line and the resume, are checked by default with FullDisk, above)
        pytest.param("48k", "resumed", marks=pytest.mark.slow),
        pytest.param("96k", "resumed", marks=pytest.mark.slow),
    ],
)
def test_a_real_full_disk(size, outcome, tmp_path):
    """The same on a real file system: a small tmpfs in a private mount namespace fills up
    during the run (ENOSPC from the kernel); then it grows and the run is resumed."""
    path = write(tmp_path, scenario_text(size=2000, replications=3, mode="aggregate"))
    ref = run_scenario(path, out=tmp_path / "ref", progress=False)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"""
mount -t tmpfs -o size={size} tmpfs {mnt} || exit 99
{sys.executable} -m ldpsim run {path} --out {mnt}/run --no-progress > /dev/null 2> {tmp_path}/err1
echo $? > {tmp_path}/rc1
ls -A {mnt} > {tmp_path}/left
mount -o remount,size=50m {mnt}
if [ -d {mnt}/run ]; then
  {sys.executable} -m ldpsim run --resume {mnt}/run --no-progress > /dev/null 2> {tmp_path}/err2
  echo $? > {tmp_path}/rc2
  cp {mnt}/run/results.csv {mnt}/run/summary.md {tmp_path}/ 2>/dev/null
fi
"""
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 99, proc.stderr
    rc1 = int((tmp_path / "rc1").read_text())
    err1 = (tmp_path / "err1").read_text()
    assert rc1 == 2 and len(err1.strip().splitlines()) == 1 and "No space left on device" in err1, err1
    if outcome == "removed":  # failed while starting: nothing left behind
        assert (tmp_path / "left").read_text().strip() == ""
        return
    assert "resume with" in err1
    assert int((tmp_path / "rc2").read_text()) == 0, (tmp_path / "err2").read_text()
    assert (tmp_path / "results.csv").read_bytes() == (ref.run_dir / "results.csv").read_bytes()
    assert (tmp_path / "summary.md").read_bytes() == (ref.run_dir / "summary.md").read_bytes()


def _signal_run(tmp_path: Path, sig: int, stage: str, workers: int) -> None:
    """Start ``ldpsim run`` in a subprocess, send ``sig`` to its process group (as a
    terminal's Ctrl-C does) at ``stage``, then resume: the files equal an uninterrupted run."""
    import os
    import time

    reps = 8
    path = write(tmp_path, scenario_text(size=20_000, replications=reps, mode="individual"))
    ref = run_scenario(path, out=tmp_path / "ref", progress=False)
    out = tmp_path / "cut"
    records = lambda: len(list((out / "replications").glob("*.json"))) if (out / "replications").is_dir() else -1
    ready = {
        "starting": lambda: out.exists(),
        "replicating": lambda: records() >= 2,
        "reporting": lambda: records() >= reps,
    }[stage]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ldpsim", "run", str(path), "--out", str(out), "--workers", str(workers)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while proc.poll() is None and not ready() and time.monotonic() < deadline:
        time.sleep(0.002)
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    if sig == signal.SIGINT and proc.returncode != 0:
        assert proc.returncode == 130, (proc.returncode, err)
        assert len(err.strip().splitlines()) == 1, err
    if not out.exists():
        return
    if not (out / "metadata.json").exists():
        assert sig == signal.SIGKILL, "an interrupted start leaves no folder"
    if proc.returncode != 0:  # resumed, or, killed while starting, started again in the same folder
        from ldpsim._files import is_temporary
        from ldpsim.runs import stopped_while_starting

        # killed between the folder and its lock, the folder is empty: a new run takes it (CI's slow tier
        # once killed there; resume then took the lock and rightly said to start again)
        empty = not any(not is_temporary(p.name) for p in out.iterdir())
        fresh = empty or stopped_while_starting(out)
        again = ["run", str(path), "--out", str(out)] if fresh else ["run", "--resume", str(out)]
        assert main([*again, "--no-progress"]) == 0
    for name in ("results.csv", "summary.md"):
        assert (out / name).read_bytes() == (ref.run_dir / name).read_bytes()


@pytest.mark.parametrize(
    "sig, stage, workers",
    [("SIGINT", "replicating", 2)],
)
@pytest.mark.slow  # with every signal, stage and worker count below (by default: test_cli_careful's real Ctrl-C)
def test_real_signals_during_a_run(sig, stage, workers, tmp_path, capsys):
    _signal_run(tmp_path, getattr(signal, sig), stage, workers)


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGKILL"])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("stage", ["starting", "replicating", "reporting"])
def test_real_signals_at_every_stage(sig, stage, workers, tmp_path):
    _signal_run(tmp_path, getattr(signal, sig), stage, workers)


def test_waves_far_past_a_tiny_end_load_without_overflow():
    text = scenario_text(
        size=10**6,
        mode="aggregate",
        tick=1e-4,
        end=1e-300,
        checkpoints="{ }",
        arrivals='{ kind = "waves", times = [7.0, 1e12], fractions = [0.5, 0.5] }',
    )
    parse_scenario(text, "s.toml")


def test_labels_the_figure_font_lacks_raise_no_warning(tmp_path, capsys):
    text = scenario_text(size=200, labels='["🙂", "b", "c", "d"]')
    assert run_cli(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "run")]) == 0
    assert "🙂" in (tmp_path / "run" / "summary.md").read_text()


def test_very_long_labels_keep_the_figures_readable_and_quiet(tmp_path, capsys):
    text = scenario_text(size=200, labels=f'["{"a" * 300}", "b", "line\\nbreak", "d"]')
    assert run_cli(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "run")]) == 0
    assert "a" * 300 in (tmp_path / "run" / "summary.md").read_text()


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_arrivals_that_outlast_a_tiny_end_by_far(mode, tmp_path, capsys):
    """size / rate = 1e6 over ticks of 4e-303: the tick count of the arrivals overflows."""
    text = scenario_text(size=1, mode=mode, arrivals='{ kind = "poisson", rate = 1e-6 }', end=1e-300, checkpoints="{ }")
    assert run_cli(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "run")]) == 0


def test_exponential_latency_with_a_tiny_mean(tmp_path, capsys):
    text = scenario_text(
        size=1000,
        mode="aggregate",
        arrivals='{ kind = "poisson", duration = 1.0 }',
        latency='{ kind = "exponential", mean = 1e-300 }',
    )
    assert run_cli(["run", str(write(tmp_path, text)), "--out", str(tmp_path / "run")]) == 0
