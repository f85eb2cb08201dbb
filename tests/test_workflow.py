"""The Python workflow (``ldpsim.Scenario``, ``ldpsim.load_run``, ``ldpsim.Run``;
ldpsim/workflow.py, docs/python.md): runs started from Python write the run directory
``ldpsim run`` writes, every kind of run loads back with its types, scenario, tables and
figure, errors are one line naming the key or ``run_dir``, and the worked example
docs/examples/notebook.py runs."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import ldpsim
from ldpsim.errors import LdpSimError
from tests.sim import helpers

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
NOTEBOOK = ROOT / "docs" / "examples" / "notebook.py"

SURVEY = (SCENARIOS / "survey.toml").read_text().replace("size = 1_000_000", "size = 5_000")

MULTIPARTY = helpers.MULTIPARTY.replace('name = "small"', 'name = "small_xor"').replace(
    "replications = 3", "replications = 2"
)

COLLECTION = helpers.collection_text(
    labels='["a", "1", "01"]',
    distribution="[0.5, 0.3, 0.2]",
    size=2_000,
    periods=4,
    replications=2,
    policies=helpers.PLAIN_AND_MEMOISED,
).replace('name = "collection_test"', 'name = "small_collection"')

TEXTS = {"survey": SURVEY, "multiparty": MULTIPARTY, "collection": COLLECTION}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One finished run of each kind, made by ``Scenario.run``: kind -> (Scenario, Run)."""
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for kind, text in TEXTS.items():
        scenario = ldpsim.Scenario.from_text(text, base / f"{kind}.toml")
        out[kind] = (scenario, scenario.run(out=base / kind))
    return out


# --------------------------------------------------------------------------- the front
def test_the_names_are_the_package_fronts_and_lazy():
    import ldpsim.sim
    import ldpsim.workflow

    assert ldpsim.Scenario is ldpsim.workflow.Scenario and ldpsim.Scenario is not ldpsim.sim.Scenario
    assert ldpsim.load_run is ldpsim.workflow.load_run and ldpsim.Run is ldpsim.workflow.Run
    assert {"Scenario", "Run", "load_run"} <= set(ldpsim.__all__)
    code = "import sys, ldpsim; print('ldpsim.workflow' in sys.modules, 'pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == [
        "False",
        "False",
    ]


def test_scenarios_of_every_kind_from_files_and_text(tmp_path):
    survey = ldpsim.Scenario.from_file(SCENARIOS / "survey.toml")
    assert (survey.kind, survey.name, survey.spec.population.size) == ("survey", "survey", 1_000_000)
    assert isinstance(survey.built, ldpsim.sim.Scenario) and survey.source == (SCENARIOS / "survey.toml").read_text()
    assert repr(survey) == (
        "Scenario(kind='survey', name='survey', replications=1, seed=20261129, "
        f"path={str(SCENARIOS / 'survey.toml')!r})"
    )
    assert ldpsim.Scenario.from_file(SCENARIOS / "multiparty_xor.toml").kind == "multiparty"
    assert ldpsim.Scenario.from_text(COLLECTION).kind == "collection"
    assert ldpsim.Scenario(survey.built).built is survey.built  # a built scenario, wrapped
    with pytest.raises(LdpSimError, match="^scenario: got 'survey', expected a built scenario"):
        ldpsim.Scenario("survey")
    with pytest.raises(LdpSimError, match=r"^nope\.toml: cannot read the scenario file"):
        ldpsim.Scenario.from_file("nope.toml")
    with pytest.raises(LdpSimError, match=r"^t\.toml: population\.size: "):
        ldpsim.Scenario.from_text(SURVEY.replace("size = 5_000", "size = -1"), "t.toml")


def test_overrides_return_a_new_scenario_and_name_a_bad_key():
    survey = ldpsim.Scenario.from_text(SURVEY, "s.toml")
    three = survey.with_overrides(replications=3, seed=5, mode="aggregate")
    sim = three.spec.simulation
    assert (sim.replications, sim.seed, sim.mode) == (3, 5, "aggregate")
    assert survey.spec.simulation.replications == 1 and survey.spec.simulation.mode == "individual"
    assert three.source == survey.source and survey.with_overrides() is survey
    with pytest.raises(
        LdpSimError,
        match=r"^simulation\.replicatons: no such key \(did you mean 'replications'\?\); "
        r"\[simulation\] of a survey scenario has seed, replications, time_unit, mode",
    ):
        survey.with_overrides(replicatons=3)
    with pytest.raises(
        LdpSimError, match=r"^simulation\.replications: Input should be greater than or equal to 1 \(got 0\)$"
    ):
        survey.with_overrides(replications=0)
    with pytest.raises(LdpSimError, match=r"^simulation\.replications: Input should be a valid integer \(got True\)$"):
        survey.with_overrides(replications=True)
    with pytest.raises(LdpSimError, match=r"^simulation\.seed: "):
        survey.with_overrides(seed=-1)
    with pytest.raises(
        LdpSimError,
        match=(
            r"^simulation\.mode: no such key; \[simulation\] of a multiparty scenario has seed, replications, "
            r"time_unit, alpha$"
        ),
    ):
        ldpsim.Scenario.from_text(MULTIPARTY).with_overrides(mode="aggregate")
    with pytest.raises(LdpSimError, match=r"^simulation\.alpha: Input should be less than 1"):
        ldpsim.Scenario.from_text(MULTIPARTY).with_overrides(alpha=2.0)
    # checks made when the scenario is built (the row budgets) name the file
    with pytest.raises(
        LdpSimError, match=r"^<scenario>: simulation\.replications: got 100000, expected at most [0-9,]+ \(results"
    ):
        ldpsim.Scenario.from_text(MULTIPARTY).with_overrides(replications=100_000)


# --------------------------------------------------------------------------- same files as ldpsim run
def _tree(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run directory but metadata.json and the lock, by relative path."""
    return {
        p.relative_to(run_dir).as_posix(): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in ("metadata.json", ".lock")
    }


def _meta(run_dir: Path) -> dict:
    meta = json.loads((run_dir / "metadata.json").read_text())
    for key in ("started", "finished", "command_line", "scenario_path"):
        meta.pop(key, None)
    return meta


def test_a_run_writes_the_files_of_ldpsim_run(tmp_path, cli):
    from ldpsim.sim import run_scenario

    path = tmp_path / "small.toml"
    path.write_text(SURVEY)
    ran = ldpsim.Scenario.from_file(path).run(out=tmp_path / "a", seed=9, replications=2)
    run_scenario(path, out=tmp_path / "b", seed=9, replications=2, progress=False)
    assert cli("run", path, "--out", tmp_path / "c", "--seed", 9, "--replications", 2, "--no-progress").returncode == 0
    a, b, c = (_tree(tmp_path / d) for d in "abc")
    assert a["results.csv"] == b["results.csv"] == c["results.csv"]
    assert a == b == c  # scenario.toml, replications/, every report file, byte for byte
    assert _meta(tmp_path / "a") == _meta(tmp_path / "b") == _meta(tmp_path / "c")
    assert isinstance(ran, ldpsim.Run) and ran.dir == tmp_path / "a" and (ran.seed, ran.replications) == (9, 2)


def test_overridden_seed_and_replications_run_as_the_command_line_options(tmp_path, cli):
    path = tmp_path / "small.toml"
    path.write_text(SURVEY)
    ldpsim.Scenario.from_file(path).with_overrides(seed=4, replications=2).run(out=tmp_path / "a")
    assert cli("run", path, "--out", tmp_path / "c", "--seed", 4, "--replications", 2, "--no-progress").returncode == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "c")
    a, c = _meta(tmp_path / "a"), _meta(tmp_path / "c")
    assert (a["seed"], a["replications"], a["spec"]["simulation"]["replications"]) == (4, 2, 2)
    # the one difference: the spec recorded is the scenario as overridden (--seed leaves the file's)
    assert (a["spec"]["simulation"]["seed"], c["spec"]["simulation"]["seed"]) == (4, 20261129)
    a["spec"]["simulation"]["seed"] = c["spec"]["simulation"]["seed"]
    assert a == c


# --------------------------------------------------------------------------- load_run, every kind
@pytest.mark.parametrize("kind", list(TEXTS))
def test_load_run_round_trip(runs, kind, tmp_path):
    import matplotlib.axes
    import pandas as pd

    from ldpsim.sim.studies import STUDIES

    scenario, made = runs[kind]
    run = ldpsim.load_run(made.dir)
    assert (run.kind, run.name, run.finished) == (kind, scenario.name, True)
    assert (run.seed, run.replications) == (scenario.spec.simulation.seed, scenario.spec.simulation.replications)
    assert repr(run).startswith(f"Run({str(made.dir)!r}, kind={kind!r}, name={scenario.name!r}")
    assert run.metadata == json.loads((made.dir / "metadata.json").read_text())
    # the results, as the study reads them (types included), and as the run returned them
    want = STUDIES[kind](scenario.built).read_results(made.dir / "results.csv")
    pd.testing.assert_frame_equal(run.results, want)
    pd.testing.assert_frame_equal(made.results, want)
    # the scenario as run, rebuilt next to the run's scenario.toml
    assert run.scenario.kind == kind and run.scenario.source == scenario.source
    assert run.scenario.path == str(made.dir / "scenario.toml")
    assert run.scenario.spec == scenario.spec
    # the report
    assert "summary.md" in run.files and run.files["summary.md"] == made.dir / "summary.md"
    assert not {"results.csv", "metadata.json", "scenario.toml", ".lock"} & set(run.files)
    assert run.summary == (made.dir / "summary.md").read_text() and run.summary.startswith(f"# {scenario.name}")
    tables = run.tables()
    assert tables and all(isinstance(t, pd.DataFrame) and not t.empty for t in tables.values())
    ax = run.plot()
    assert isinstance(ax, matplotlib.axes.Axes) and (ax.lines or ax.collections) and ax.get_title()
    ax.figure.savefig(tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 1000


def test_the_tables_are_the_report_modules(runs):
    import pandas as pd

    from ldpsim.report import collection, multiparty_tables, survey_tables

    survey = ldpsim.load_run(runs["survey"][1].dir)
    assert set(survey.tables()) == {"final", "error_by_n", "error_norms", "engine"}
    pd.testing.assert_frame_equal(survey.tables()["final"], survey_tables.final_frequencies(survey.results))
    multi = ldpsim.load_run(runs["multiparty"][1].dir)
    accuracy, latency = multiparty_tables.summarise(multi.results, multi.scenario.built)
    pd.testing.assert_frame_equal(multi.tables()["accuracy"], accuracy)
    pd.testing.assert_frame_equal(multi.tables()["latency"], latency)
    coll = ldpsim.load_run(runs["collection"][1].dir)
    pd.testing.assert_frame_equal(coll.tables()["final"], collection.final_summary(coll.results, 0.95))
    # labels that look like numbers stay text
    assert set(coll.results.loc[coll.results["quantity"] == "frequency", "category"]) == {"a", "1", "01"}


def test_plot_draws_on_the_axes_given(runs):
    import matplotlib.pyplot as plt

    run = ldpsim.load_run(runs["survey"][1].dir)
    _, (left, right) = plt.subplots(1, 2)
    assert run.plot(ax=right, replication=0, lw=2.5) is right and not left.lines
    assert len(right.get_legend().get_texts()) == 8  # one per answer
    with pytest.raises(LdpSimError, match=r"^replication: got 5, expected one of the run's replications 0\.\.0$"):
        run.plot(ax=left, replication=5)
    with pytest.raises(LdpSimError, match=r"^quantity: got 'llr', expected None \(a survey with frequency estimates"):
        run.plot(quantity="llr")
    coll = ldpsim.load_run(runs["collection"][1].dir)
    with pytest.raises(LdpSimError, match=r"^quantity: got 'max', expected None \(only a survey's or a study's plot"):
        coll.plot(quantity="max")
    ax = coll.plot(replication=1)
    assert [line.get_label() for line in ax.lines][:2] == ["every report: most exposed", "every report: median"]


def test_a_survey_without_frequency_estimates_plots_a_task_quantity(tmp_path):
    text = (SCENARIOS / "hypothesis_test.toml").read_text().replace("size = 20_000", "size = 3_000")
    run = ldpsim.Scenario.from_text(text, SCENARIOS / "hypothesis_test.toml").run(out=tmp_path / "ht")
    assert set(run.tables()) == {"other_tasks", "engine"}
    ax = run.plot(quantity="llr")
    assert "sprt: llr" in ax.get_title() and ax.lines[0].get_label() == "measured"
    with pytest.raises(
        LdpSimError, match=r"^quantity: got 'x', expected one of the run's quantities 'sprt_decision', "
    ):
        run.plot(quantity="x")


def test_the_scenario_of_a_run_runs_again_to_the_same_results(tmp_path):
    # fresh entropy for the seed, and [simulation] values overridden: both come back
    scenario = ldpsim.Scenario.from_text(SURVEY.replace("seed = 20261129", ""), tmp_path / "s.toml")
    first = scenario.with_overrides(mode="aggregate", replications=2).run(out=tmp_path / "a")
    back = ldpsim.load_run(first.dir).scenario
    sim = back.spec.simulation
    assert (sim.mode, sim.replications, sim.seed) == ("aggregate", 2, first.seed)
    back.run(out=tmp_path / "b")
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()


def test_a_run_reading_a_table_loads_from_its_own_copy(tmp_path):
    text = (SCENARIOS / "anes96_party.toml").read_text().replace("size = 1_000_000", "size = 3_000")
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    shutil.copy(SCENARIOS / "data" / "anes96.csv", src / "data" / "anes96.csv")
    (src / "party.toml").write_text(text)
    made = ldpsim.Scenario.from_file(src / "party.toml").run(out=tmp_path / "run")
    shutil.rmtree(src)  # the run keeps its data next to its scenario.toml, as resuming needs
    run = ldpsim.load_run(tmp_path / "run")
    assert run.scenario.built.table.rows == 944 and run.scenario.spec.population.size == 3_000
    assert run.results.equals(made.results)


# --------------------------------------------------------------------------- errors
def test_load_run_errors_name_run_dir(tmp_path):
    with pytest.raises(
        LdpSimError, match=r"^run_dir: got '.*missing', expected a run directory made by ldpsim run \(no such folder\)$"
    ):
        ldpsim.load_run(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(LdpSimError, match=r"^run_dir: got '.*file', expected a run directory"):
        ldpsim.load_run(tmp_path / "file")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(
        LdpSimError,
        match=(
            r"^run_dir: got '.*empty', expected a run directory made by ldpsim run \(with its metadata\.json and "
            r"scenario\.toml\)$"
        ),
    ):
        ldpsim.load_run(empty)
    (empty / "metadata.json").write_text("[1, 2]")
    (empty / "scenario.toml").write_text("")
    with pytest.raises(LdpSimError, match=r"^run_dir: got '.*empty', expected a run directory made by ldpsim run"):
        ldpsim.load_run(empty)
    (empty / "metadata.json").write_text(
        json.dumps({"kind": "poll", "seed": 1, "replications": 1, "scenario_sha256": "x"})
    )
    with pytest.raises(
        LdpSimError,
        match=(
            r"^run_dir: got '.*empty', expected a run of a known kind \(survey, multiparty, collection, "
            r"multiparty_study, multiparty_interactive\), not 'poll'$"
        ),
    ):
        ldpsim.load_run(empty)


def test_an_edited_scenario_toml_is_refused(runs, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(runs["multiparty"][1].dir, copy)
    (copy / "scenario.toml").write_text(MULTIPARTY.replace("count = 4000", "count = 8000"))
    run = ldpsim.load_run(copy)
    assert len(run.results) == len(runs["multiparty"][1].results)  # the results still read
    with pytest.raises(
        LdpSimError, match=r"^run_dir: got '.*copy', expected its scenario\.toml unchanged since the run started$"
    ):
        _ = run.scenario


def test_an_interrupted_run_opens_but_has_no_results_yet(tmp_path):
    from ldpsim.runs import RunInterrupted
    from ldpsim.sim import resume_run, run_scenario

    scenario = ldpsim.Scenario.from_text(MULTIPARTY)
    with pytest.raises(RunInterrupted):
        run_scenario(scenario.built, out=tmp_path / "r", progress=False, interrupt_after=1)
    run = ldpsim.load_run(tmp_path / "r")
    assert not run.finished and "finished=False" in repr(run)
    for member in ("results", "summary"):
        with pytest.raises(
            LdpSimError,
            match=r"^run_dir: got '.*r', expected a finished run \(resume it with: ldpsim run --resume .*r\)$",
        ):
            getattr(run, member)
    resume_run(tmp_path / "r", progress=False)
    assert ldpsim.load_run(tmp_path / "r").finished


def test_a_chosen_matplotlib_backend_is_kept(runs):
    code = (
        "import matplotlib, sys, ldpsim; run = ldpsim.load_run(sys.argv[1]); run.results; run.plot(); "
        "print(matplotlib.get_backend())"
    )
    env = {**os.environ, "MPLBACKEND": "pdf"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(runs["multiparty"][1].dir)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == "pdf"


# --------------------------------------------------------------------------- the worked example
def test_the_notebook_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's runs go under tmp_path
    names = runpy.run_path(str(NOTEBOOK), run_name="__main__")
    work = names["work"]
    assert work.parent == tmp_path
    assert sorted(p.name for p in work.glob("*.png")) == [
        "compare_mechanisms.png",
        "other_kinds.png",
        "survey_estimates.png",
    ]
    for name in ("survey", "survey_oue", "xor", "mood"):
        assert ldpsim.load_run(work / name).finished
    comparison = names["comparison"]
    assert list(comparison["mechanism"]) == ["randomized_response", "oue"] and (comparison["rmse"] > 0).all()
    assert "runs go to" in capsys.readouterr().out


def test_the_notebook_example_is_made_of_cells():
    text = NOTEBOOK.read_text()
    assert text.startswith("# %% [markdown]") and text.count("\n# %%\n") >= 6
    assert "docs/python.md" in text
