"""Multi-party scaling studies (a ``[study]`` table in a multi-party file): one-line errors
naming the key, bounded work, the same bytes from the same seed, and a small study run end
to end through the run framework (report files, resume).

The study is a kind of the one registry (``ldpsim.sim.kinds``), reached through a
multi-party file's ``[study]`` table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.report.multiparty_study import read_study_results, summarise_study
from ldpsim.runs import RunInterrupted
from ldpsim.sim import kinds
from ldpsim.sim.multiparty_study import (
    STUDY_COLUMNS,
    MultipartyScalingStudy,
    MultipartyStudyRun,
    exact_table,
    run_study_replication,
)
from ldpsim.sim.scenario.multiparty_study import (
    KIND,
    load_multiparty_study,
    parse_multiparty_study,
)

ROOT = Path(__file__).resolve().parents[2]
FILES = ["scenario.toml", "metadata.json", "results.csv", "summary.md", "report.html", "scaling.png"]

GOOD = """
kind = "multiparty"
name = "small_study"
description = "a small scaling study"

[study]
protocols = ["universal", "binary"]
tasks = ["xor", "sum", "majority"]
parties = [2, 9, 30]
eps = [1]
delta = 0.1
rounds = 4000

[simulation]
seed = 5
replications = 2
alpha = 1e-6
"""

CASES = {
    "k below two": ("parties = [2, 9, 30]", "parties = [1, 9]", "study.parties[0]", "greater than or equal to 2"),
    "k above 1000": ("parties = [2, 9, 30]", "parties = [2, 5000]", "study.parties[1]", "less than or equal to 1000"),
    "k repeated": ("parties = [2, 9, 30]", "parties = [2, 2]", "study.parties", "at most once"),
    "k not a list": ("parties = [2, 9, 30]", "parties = 5", "study.parties", "a list of numbers of parties"),
    "k as text": ("parties = [2, 9, 30]", 'parties = ["2"]', "study.parties[0]", "valid integer"),
    "grid reversed": (
        "parties = [2, 9, 30]",
        "parties = { from = 20, to = 5, count = 3 }",
        "study.parties.to",
        ">= from = 20",
    ),
    "grid one value": (
        "parties = [2, 9, 30]",
        "parties = { from = 2, to = 5, count = 1 }",
        "study.parties.count",
        "at least 2",
    ),
    "grid without count": (
        "parties = [2, 9, 30]",
        "parties = { from = 2, to = 5 }",
        "study.parties.count",
        "Field required",
    ),
    "grid too far": (
        "parties = [2, 9, 30]",
        "parties = { from = 2, to = 5000, count = 4 }",
        "study.parties.to",
        "1000",
    ),
    "eps zero": ("eps = [1]", "eps = [0]", "study.eps[0]", "greater than 0"),
    "eps repeated": ("eps = [1]", "eps = [1, 1.0]", "study.eps", "at most once"),
    "eps a number": ("eps = [1]", "eps = 1", "study.eps", "valid list"),
    "eps nan": ("eps = [1]", "eps = [nan]", "study.eps[0]", "finite"),
    "delta one": ("delta = 0.1", "delta = 1", "study.delta", "less than 1"),
    "unknown task": ('tasks = ["xor", "sum", "majority"]', 'tasks = ["parity"]', "study.tasks[0]", "'parity'"),
    "no tasks": ('tasks = ["xor", "sum", "majority"]', "tasks = []", "study.tasks", "at least 1"),
    "unknown protocol": (
        'protocols = ["universal", "binary"]',
        'protocols = ["laplace"]',
        "study.protocols[0]",
        "'laplace'",
    ),
    "unknown receiver": (
        "rounds = 4000",
        'rounds = 4000\nreceivers = ["everyone"]',
        "study.receivers[0]",
        "'everyone'",
    ),
    "one round": ("rounds = 4000", "rounds = 1", "study.rounds", "greater than or equal to 2"),
    "rounds as text": ("rounds = 4000", 'rounds = "many"', "study.rounds", "valid integer"),
    "unknown key": ("rounds = 4000", "rounds = 4000\ncolour = 1", "study.colour", "no such key"),
    "no study.rounds": ("rounds = 4000", "", "study.rounds", "Field required"),
    "a [parties] table": ("[study]", "[parties]\nk = 3\n\n[study]", "parties", "study.parties"),
    "a [task] table": ("[study]", '[task]\nkind = "xor"\n\n[study]', "task", "study.tasks"),
    "a [rounds] table": ("[study]", "[rounds]\ncount = 10\n\n[study]", "rounds", "study.rounds"),
    "a [network] table": ("[study]", '[network]\nlatency = { kind = "constant" }\n\n[study]', "network", "no network"),
    "top-level protocols": (
        'description = "a small scaling study"',
        'protocols = ["binary"]',
        "protocols",
        "study.protocols",
    ),
    "alpha zero": ("alpha = 1e-6", "alpha = 0.0", "simulation.alpha", "greater than 0"),
    "absurd work": ("rounds = 4000", "rounds = 100_000_000", "study.rounds", "estimated at"),
    "out of reach": (
        "parties = [2, 9, 30]\neps = [1]\ndelta = 0.1\nrounds = 4000",
        "parties = [1000]\neps = [1]\ndelta = 0.1\nrounds = 1_000_000",
        "study.parties",
        "no exact path",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_study_values_are_one_line_naming_the_key(case):
    old, new, key, problem = CASES[case]
    assert old in GOOD
    with pytest.raises(LdpSimError) as info:
        parse_multiparty_study(GOOD.replace(old, new), "bad.toml")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"bad.toml: {key}: "), msg
    assert problem in msg, msg


def test_grid_and_points():
    sc = parse_multiparty_study(
        GOOD.replace("parties = [2, 9, 30]", "parties = { from = 2, to = 200, count = 15 }"), "ok.toml"
    )
    assert sc.kind == KIND == MultipartyScalingStudy.kind
    assert sc.spec.study.party_counts() == [2, 3, 4, 5, 7, 10, 14, 20, 28, 39, 54, 75, 104, 144, 200]
    # delta = 0.1: four symbols, no exact symmetric path at k = 200 for the universal protocol, Monte Carlo everywhere
    pts = sc.points
    assert len(pts) == 2 * 3 * 1 * 15 * 2
    assert (pts["monte_carlo"]).all()
    far = pts[(pts["protocol"] == "universal") & (pts["k"] == 200) & (pts["task"] != "xor")]
    assert (far["plan"] == "").all()


def test_shipped_scaling_scenario_loads():
    sc = load_multiparty_study(ROOT / "scenarios" / "multiparty_scaling.toml")
    assert sc.spec.study.party_counts()[0] == 2 and sc.spec.study.party_counts()[-1] == 200
    assert (sc.points["plan"] != "").all()  # delta = 0: every point has an exact value
    assert sc.estimated_seconds < 120


def test_same_seed_same_bytes():
    sc = parse_multiparty_study(GOOD, "ok.toml")
    exact = exact_table(sc)
    a = run_study_replication(sc, 1, 99, exact)
    b = run_study_replication(sc, 1, 99)  # exact values computed inside: the same
    assert list(a.columns) == STUDY_COLUMNS
    assert a.to_csv(index=False).encode() == b.to_csv(index=False).encode()
    c = run_study_replication(sc, 0, 99, exact)
    assert not np.array_equal(a["measured"].to_numpy(), c["measured"].to_numpy())


@pytest.fixture
def registered():
    """The study as the registry has it: a run kind of its own, not a file kind."""
    assert kinds.study_class(KIND) is MultipartyScalingStudy
    assert KIND in kinds.kinds() and KIND not in kinds.file_kinds()


def test_small_study_end_to_end(tmp_path, registered):
    from ldpsim.sim import resume_run, run_scenario

    sc = parse_multiparty_study(GOOD, "ok.toml")
    run = run_scenario(sc, out=tmp_path / "a", progress=False)
    assert isinstance(run, MultipartyStudyRun)
    for name in FILES:
        assert (tmp_path / "a" / name).is_file(), name
    results = read_study_results(tmp_path / "a" / "results.csv")
    assert len(results) == 2 * len(sc.points)
    summary = run.summary
    assert len(summary) == len(sc.points)
    assert summary["within"].notna().all()  # every point has an exact value here (k <= 30)
    assert summary["within"].all()
    # the report re-rendered from results.csv alone gives the same summary
    again = summarise_study(results, sc)
    pd.testing.assert_frame_equal(again.reset_index(drop=True), summary.reset_index(drop=True), check_dtype=False)
    text = (tmp_path / "a" / "summary.md").read_text()
    assert "## Accuracy against k" in text and "scaling.png" in text
    # the same seed, interrupted and resumed, gives the same bytes
    with pytest.raises(RunInterrupted):
        run_scenario(sc, out=tmp_path / "b", progress=False, interrupt_after=1)
    resumed = resume_run(tmp_path / "b", progress=False)
    assert isinstance(resumed, MultipartyStudyRun)
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()
    assert (tmp_path / "a" / "summary.md").read_bytes() == (tmp_path / "b" / "summary.md").read_bytes()


@pytest.mark.slow
def test_shipped_scaling_scenario_runs_within_tolerance(tmp_path, registered):
    """The shipped study (about 20 s): every point within tolerance of its exact value."""
    from ldpsim.sim import run_scenario

    run = run_scenario(
        load_multiparty_study(ROOT / "scenarios" / "multiparty_scaling.toml"), out=tmp_path / "s", progress=False
    )
    assert run.summary["within"].notna().all() and run.summary["within"].all()
