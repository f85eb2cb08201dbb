"""The command line: the demo runs and agrees with the truth; errors are one line, exit 2."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from ldpsim.cli import main


def test_demo_prints_true_and_estimated_frequencies(capsys):
    assert main(["demo", "--n", "200000", "--k", "4", "--eps", "2", "--seed", "42"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["category", "true", "estimated"])
    rows = [line.split() for line in lines[header + 1 : header + 5]]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    # |z| <= 5.5: each z is approximately standard normal; P(|Z| > 5.5) < 4e-8 per row.
    assert all(abs(float(r[4])) <= 5.5 for r in rows), out
    assert "seed 42" in out


def test_demo_is_reproducible(capsys):
    main(["demo", "--n", "1000", "--seed", "7"])
    first = capsys.readouterr().out.splitlines()[2:]
    main(["demo", "--n", "1000", "--seed", "7"])
    assert capsys.readouterr().out.splitlines()[2:] == first


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["demo", "--eps", "-1"], "eps: got -1.0"),
        (["demo", "--k", "1"], "k: got 1"),
        (["demo", "--n", "0"], "--n: got 0"),
        (["demo", "--k", "x"], "invalid int value"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_errors_are_one_line_and_exit_2(argv, needle, cli):
    proc = cli(*argv)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_installed_entry_point_runs_end_to_end():
    # the console script of the installed package (a true subprocess, once): a usage
    # error and --version go through the same main() as every in-process test
    exe = shutil.which("ldpsim")
    if exe is None:  # pragma: no cover - package not installed, only on the path
        pytest.skip("no ldpsim entry point installed")
    bad = subprocess.run([exe, "demo", "--k", "1"], capture_output=True, text=True, timeout=120)
    assert (
        bad.returncode == 2
        and bad.stdout == ""
        and bad.stderr.strip() == "ldpsim: error: --k: got 1, expected an integer >= 2 and <= 10000"
    )
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("ldpsim ")


def test_output_piped_into_a_closed_reader_ends_quietly():
    # a real pipe whose reader (head) closes early: needs a true subprocess
    proc = subprocess.run(
        f"{sys.executable} -m ldpsim demo --n 1000 --k 200 --seed 1 | head -1",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("ldpsim demo")


def test_bare_ldpsim_prints_usage_and_exits_2(cli) -> None:
    r = cli()
    assert r.returncode == 2
    assert "usage: ldpsim" in r.stderr and "compose" in r.stderr and "COMMAND: got nothing" in r.stderr


def test_scenarios_lists_the_shipped_files_and_copies_one(cli, tmp_path) -> None:
    from ldpsim import _shipped

    listed = cli("scenarios")
    assert listed.returncode == 0 and [line.split()[0] for line in listed.stdout.splitlines()] == _shipped.names()
    done = cli("scenarios", "copy", "anes96_party", "--to", tmp_path / "mine")
    assert done.returncode == 0 and (tmp_path / "mine" / "anes96_party.toml").is_file()
    assert (tmp_path / "mine" / "data" / "anes96.csv").is_file() and (
        tmp_path / "mine" / "data" / "README.md"
    ).is_file()
    again = cli("scenarios", "copy", "anes96_party", "--to", tmp_path / "mine")
    assert again.returncode == 2 and "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert cli("scenarios", "copy", "anes96_party", "--to", tmp_path / "mine", "--force").returncode == 0
    checked = cli("check", tmp_path / "mine" / "anes96_party.toml")
    assert checked.returncode == 0 and "a valid survey scenario" in checked.stdout


def test_check_validates_without_running_and_names_a_misspelled_key(cli, tmp_path) -> None:
    from tests.sim.helpers import scenario_text

    good = tmp_path / "good.toml"
    good.write_text(scenario_text(size=1000))
    r = cli("check", good, cwd=tmp_path)
    assert (
        r.returncode == 0 and "1,000 respondents" in " ".join(r.stdout.split()) and not (tmp_path / "reports").exists()
    )
    bad = tmp_path / "bad.toml"
    bad.write_text(scenario_text(size=1000).replace("[network]", "[netwrok]"))
    r = cli("check", bad)
    assert r.returncode == 2 and "netwrok: no such key (did you mean 'network'?)" in r.stderr
    r = cli("check", "survy")
    assert r.returncode == 2 and "did you mean 'survey'?" in r.stderr


def test_report_rebuilds_a_run_and_the_index(cli, tmp_path) -> None:
    from tests.sim.helpers import scenario_text

    path = tmp_path / "s.toml"
    path.write_text(scenario_text(size=1000))
    assert cli("run", path, "--out", tmp_path / "runs" / "one", "--no-progress").returncode == 0
    page = (tmp_path / "runs" / "one" / "report.html").read_bytes()
    (tmp_path / "runs" / "one" / "report.html").unlink()
    r = cli("report", tmp_path / "runs")
    assert r.returncode == 0 and "rebuilt the reports of 1 run(s) and 0 reproduction(s)" in r.stdout
    assert (tmp_path / "runs" / "one" / "report.html").read_bytes() == page
    assert (tmp_path / "runs" / "index.html").is_file()
