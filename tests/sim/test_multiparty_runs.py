"""Multi-party scenario files: validation (one line naming file and key), the shipped
scenarios, and ``ldpsim run`` end to end (files, determinism, workers, resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ldpsim.cli import main
from ldpsim.errors import LdpSimError
from ldpsim.runs import RunInterrupted
from ldpsim.sim import resume_run, run_scenario
from ldpsim.sim.scenario.multiparty import load_multiparty, parse_multiparty
from tests.sim.helpers import MULTIPARTY

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
FILES = ["scenario.toml", "metadata.json", "results.csv", "summary.md", "accuracy.png"]

GOOD = MULTIPARTY

CASES = {
    "eps list too short": ("eps = [0.5, 1, 2, 3]", "eps = [0.5, 1, 2]", "parties.eps", "length 3"),
    "delta list too long": ("delta = [0, 0.01, 0.05, 0.1]", "delta = [0, 0, 0, 0, 0]", "parties.delta", "length 5"),
    "p_one list length": ("[task]", "p_one = [0.5, 0.5]\n[task]", "parties.p_one", "length 2"),
    "negative eps in list": (
        "eps = [0.5, 1, 2, 3]",
        "eps = [0.5, -1, 2, 3]",
        "parties.eps[1]",
        "greater than or equal to 0",
    ),
    "delta above one": ("delta = [0, 0.01, 0.05, 0.1]", "delta = 1.5", "parties.delta", "less than or equal to 1"),
    "eps as text": ("eps = [0.5, 1, 2, 3]", 'eps = "1"', "parties.eps", "valid number"),
    "eps nan": ("eps = [0.5, 1, 2, 3]", "eps = nan", "parties.eps", "finite"),
    "k zero": ("k = 4", "k = 0", "parties.k", "greater than or equal to 1"),
    "unknown task": ('kind = "xor"', 'kind = "parity"', "task.kind", "'parity'"),
    "threshold without t": ('kind = "xor"', 'kind = "threshold"', "task.t", "threshold t"),
    "t for xor": ('kind = "xor"', 'kind = "xor"\nt = 2', "task.t", "only for 'threshold'"),
    "t too large": ('kind = "xor"', 'kind = "threshold"\nt = 9', "task.t", "between 0 and k + 1"),
    "unknown protocol": ('["universal", "binary"]', '["universal", "laplace"]', "protocols[1]", "'laplace'"),
    "repeated protocol": ('["universal", "binary"]', '["binary", "binary"]', "protocols", "at most once"),
    "no protocols": ('["universal", "binary"]', "[]", "protocols", "at least 1"),
    "zero rounds": ("count = 4000", "count = 0", "rounds.count", "greater than or equal to 1"),
    "zero batch": ("batch = 1000", "batch = 0", "rounds.batch", "greater than or equal to 1"),
    "negative latency": ("mean = 0.2", "mean = -0.2", "network.latency.mean", "greater than 0"),
    "unknown latency": ('kind = "exponential", mean = 0.2', 'kind = "gamma"', "network.latency", "gamma"),
    "unknown key": ("k = 4", "k = 4\ncolour = 1", "parties.colour", "no such key"),
    "missing task": ('[task]\nkind = "xor"', "", "task", "Field required"),
    "alpha zero": ("replications = 3", "replications = 3\nalpha = 0.0", "simulation.alpha", "greater than 0"),
    "bad name": ('name = "small"', 'name = "a/b"', "name", "pattern"),
    "bad TOML": ("[rounds]", "[rounds", "invalid TOML", "line"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_naming_file_and_key(case):
    old, new, key, problem = CASES[case]
    assert old in GOOD
    with pytest.raises(LdpSimError) as info:
        parse_multiparty(GOOD.replace(old, new), "bad.toml")
    msg = str(info.value)
    assert msg.startswith(f"bad.toml: {key}"), msg
    assert problem in msg, msg
    assert "\n" not in msg


def test_scalars_apply_to_every_party():
    sc = parse_multiparty(
        GOOD.replace("eps = [0.5, 1, 2, 3]", "eps = 2").replace("delta = [0, 0.01, 0.05, 0.1]", "delta = 0.1")
    )
    for p in sc.protocols:
        assert list(p.eps) == [2.0] * 4 and list(p.delta) == [0.1] * 4


@pytest.mark.parametrize("name, k, task", [("multiparty_xor", 6, "xor"), ("multiparty_sum", 8, "sum")])
def test_shipped_scenarios_load(name, k, task):
    sc = load_multiparty(SCENARIOS / f"{name}.toml")
    assert sc.spec.parties.k == k and sc.task.name == task
    assert [p.name for p in sc.protocols] == ["universal", "binary"]
    assert len(set(sc.spec.parties.levels("eps"))) > 2  # heterogeneous privacy levels


def test_cli_runs_the_shipped_xor_scenario(tmp_path, cli):
    out = tmp_path / "run"
    proc = cli("run", SCENARIOS / "multiparty_xor.toml", "--out", out, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    for f in FILES:
        assert (out / f).stat().st_size > 0, f
    assert "measured" in proc.stdout and "exact" in proc.stdout and "observer" in proc.stdout
    assert "within tolerance" in proc.stdout and "21 of 21" in proc.stdout  # false-failure <= 1e-6, fixed seed
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["kind"] == "multiparty" and meta["seed"] == 20261130 and "finished" in meta
    results = pd.read_csv(out / "results.csv")
    acc = results[results["quantity"] == "accuracy"]
    assert len(acc) == 14 and set(acc["protocol"]) == {"universal", "binary"}
    diff = results[results["quantity"] == "accuracy_difference"]
    assert len(diff) == 7 and set(diff["protocol"]) == {"binary - universal"}
    assert "paired differences" in proc.stdout
    assert "| protocol | party |" in (out / "summary.md").read_text()


def test_same_seed_same_files_any_workers_and_after_resume(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(GOOD)
    assert main(["run", str(path), "--out", str(tmp_path / "a"), "--no-progress"]) == 0
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--workers", "2"]) == 0
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "c", interrupt_after=1)
    assert main(["run", "--resume", str(tmp_path / "c")]) == 0
    first = (tmp_path / "a" / "results.csv").read_bytes()
    for other in ("b", "c"):
        assert (tmp_path / other / "results.csv").read_bytes() == first
        assert (tmp_path / other / "summary.md").read_text() == (tmp_path / "a" / "summary.md").read_text()
    assert main(["run", str(path), "--out", str(tmp_path / "d"), "--seed", "4"]) == 0
    assert (tmp_path / "d" / "results.csv").read_bytes() != first
    results = pd.read_csv(tmp_path / "a" / "results.csv")
    assert sorted(results["replication"].unique()) == [0, 1, 2]


def test_resume_refuses_a_changed_scenario(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(GOOD)
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "c", interrupt_after=1)
    (tmp_path / "c" / "scenario.toml").write_text(GOOD.replace("count = 4000", "count = 5000"))
    with pytest.raises(LdpSimError, match="unchanged"):
        resume_run(tmp_path / "c")


def test_cli_bad_multiparty_file_is_one_line_exit_2(tmp_path, cli):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace("eps = [0.5, 1, 2, 3]", "eps = [0.5, 1]"))
    proc = cli("run", path, "--out", tmp_path / "r", cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "parties.eps: got a list of length 2" in lines[0] and str(path) in lines[0], proc.stderr
