"""The run-kind contract (:mod:`ldpsim.study`) over every registered kind (:mod:`ldpsim.sim.kinds`).

Each kind runs one small scenario (two replications) and is checked against the framework's
promises: the same results.csv bytes with one worker and with two, and after an interrupted
run is resumed; ``read_results`` round trips; the report re-rendered from results.csv alone
is the same bytes; ``tables``, ``plot`` and ``console`` run (every console line within 100
columns). A kind registered without a case here, or missing a hook, fails. A toy fifth kind
registered inside a test runs through the registry without any framework file knowing it.
"""

from __future__ import annotations

import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ldpsim.runs import RunInterrupted, RunOptions  # noqa: E402
from ldpsim.sim import kinds, parse_scenario, resume_run, run_scenario  # noqa: E402
from ldpsim.sim.studies import study_of  # noqa: E402
from ldpsim.study import REQUIRED_HOOKS, Study  # noqa: E402
from tests.sim.helpers import MULTIPARTY, PLAIN_AND_MEMOISED, collection_text, scenario_text  # noqa: E402

WIDTH = 100

#: run kind -> a small scenario of it (two replications each)
CASES = {
    "survey": scenario_text(size=2000, replications=2),
    "multiparty": MULTIPARTY.replace("count = 4000", "count = 2000").replace("replications = 3", "replications = 2"),
    "collection": collection_text(size=1000, periods=3, policies=PLAIN_AND_MEMOISED, replications=2),
    "multiparty_study": """
kind = "multiparty"
name = "small_study"
[study]
protocols = ["universal"]
tasks = ["xor", "majority"]
parties = [2, 9]
eps = [1]
delta = 0.1
rounds = 2000
[simulation]
seed = 5
replications = 2
alpha = 1e-6
""",
    "multiparty_interactive": """
kind = "multiparty"
name = "small_interactive"
protocols = ["universal", { name = "gated", family = "gated" }]
[parties]
k = 2
eps = [0.7, 1.1]
delta = [0, 0.2]
[task]
kind = "table"
values = [0, 1, 2, 2]
[rounds]
count = 2000
batch = 500
[network]
latency = { kind = "exponential", mean = 0.03 }
[simulation]
seed = 5
replications = 2
alpha = 1e-6
""",
}


def test_every_registered_kind_has_a_case():
    assert set(kinds.kinds()) == set(CASES), "a registered kind without a contract case (or a case of no kind)"


@pytest.mark.parametrize("kind", kinds.kinds())
def test_every_registered_kind_implements_every_hook(kind):
    cls = kinds.study_class(kind)
    assert issubclass(cls, Study) and cls.kind == kind
    assert not inspect.isabstract(cls), f"{kind}: missing hooks {sorted(cls.__abstractmethods__)}"
    for hook in REQUIRED_HOOKS:
        assert not getattr(getattr(cls, hook), "__isabstractmethod__", False), f"{kind}: {hook}"


def test_a_kind_missing_a_hook_cannot_be_instantiated():
    class NoConsole(Study):
        kind = "no_console"

        @classmethod
        def parse(cls, text, where):  # pragma: no cover
            return None

        def run_replication(self, index, seed, shared):  # pragma: no cover
            return pd.DataFrame()

        def read_results(self, path):  # pragma: no cover
            return pd.DataFrame()

        def render_report(self, results, seed):  # pragma: no cover
            return {}, None

        def tables(self, results):  # pragma: no cover
            return {}

        def plot(self, ax, results, *, replication=None, quantity=None, **kw):  # pragma: no cover
            pass

    with pytest.raises(TypeError, match="console"):
        NoConsole(None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """kind -> (its scenario file, the run with one worker)."""
    out = {}
    for kind, text in CASES.items():
        folder = tmp_path_factory.mktemp(kind)
        path = folder / f"{kind}.toml"
        path.write_text(text)
        out[kind] = (path, run_scenario(path, out=folder / "one", progress=False))
    return out


@pytest.mark.parametrize("kind", list(CASES))
def test_the_scenario_is_of_its_kind(kind, runs):
    _, run = runs[kind]
    assert run.scenario.kind == kind
    assert study_of(run.scenario).kind == kind


@pytest.mark.parametrize("kind", list(CASES))
def test_same_results_with_one_and_two_workers(kind, runs, tmp_path):
    path, one = runs[kind]
    two = run_scenario(
        path, options=RunOptions(out=tmp_path / "two", progress=False, workers=2)
    )  # one value or keywords
    assert (two.run_dir / "results.csv").read_bytes() == (one.run_dir / "results.csv").read_bytes()


@pytest.mark.parametrize("kind", list(CASES))
def test_interrupted_and_resumed_gives_the_same_results(kind, runs, tmp_path):
    path, one = runs[kind]
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1)
    assert not (tmp_path / "cut" / "results.csv").exists()
    resumed = resume_run(tmp_path / "cut", options=RunOptions(progress=False))
    assert (resumed.run_dir / "results.csv").read_bytes() == (one.run_dir / "results.csv").read_bytes()


@pytest.mark.parametrize("kind", list(CASES))
def test_read_results_round_trips(kind, runs, tmp_path):
    _, run = runs[kind]
    study = kinds.study_class(kind)(None)  # reading needs no scenario
    read = study.read_results(run.run_dir / "results.csv")
    assert tuple(read.columns) == tuple(study_of(run.scenario).columns)
    pd.testing.assert_frame_equal(read, run.results)
    read.to_csv(tmp_path / "again.csv", index=False)
    pd.testing.assert_frame_equal(study.read_results(tmp_path / "again.csv"), read)


@pytest.mark.parametrize("kind", list(CASES))
def test_the_report_is_a_function_of_results_csv(kind, runs):
    _, run = runs[kind]
    study = study_of(run.scenario)
    files, _ = study.render_report(study.read_results(run.run_dir / "results.csv"), run.seed)
    assert files
    for name, data in files.items():
        assert (run.run_dir / name).read_bytes() == data, name


@pytest.mark.parametrize("kind", list(CASES))
def test_tables_plot_and_console_run(kind, runs):
    _, run = runs[kind]
    study = study_of(run.scenario)
    tables = study.tables(run.results)
    assert tables and all(isinstance(t, pd.DataFrame) for t in tables.values())
    fig, ax = plt.subplots()
    try:
        study.plot(ax, run.results)
        assert ax.has_data()
    finally:
        plt.close(fig)
    lines = study.console(run)
    assert lines and all(isinstance(line, str) for line in lines)
    too_wide = [line for line in lines if len(line) > WIDTH]
    assert not too_wide, too_wide


# ----------------------------------------------------------------------------- a toy fifth kind
def _docstring_example() -> tuple[dict, str]:
    """The complete example of :mod:`ldpsim.study`'s docstring, run here: the kind it defines
    (everything before it registers the kind) as a namespace, and its last lines."""
    import textwrap

    import ldpsim.study

    code = textwrap.dedent(ldpsim.study.__doc__.split(".. code-block:: python\n", 1)[1])
    kind, rest = code.split("kinds.register(", 1)
    namespace: dict = {"__name__": "ldpsim_study_docstring_example"}
    exec(compile(kind, "ldpsim/study.py (docstring example)", "exec", dont_inherit=True), namespace)
    return namespace, "kinds.register(" + rest


EXAMPLE, EXAMPLE_TAIL = _docstring_example()
CoinStudy = EXAMPLE["CoinStudy"]


def test_the_docstring_example_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "coin.toml").write_text(COIN)
    try:
        exec(compile(EXAMPLE_TAIL, "ldpsim/study.py (docstring example)", "exec", dont_inherit=True), dict(EXAMPLE))
    finally:
        kinds.unregister("coin")
    assert (tmp_path / "coin-run" / "summary.md").read_text().startswith("mean heads ")


COIN = """
kind = "coin"
name = "coin"
p = 0.3
flips = 1000
[simulation]
seed = 11
replications = 4
"""


@pytest.fixture
def coin():
    kinds.register("coin", CoinStudy)
    try:
        yield
    finally:
        kinds.unregister("coin")


def test_a_toy_kind_runs_through_the_registry(coin, tmp_path):
    path = tmp_path / "coin.toml"
    path.write_text(COIN)
    assert parse_scenario(COIN, str(path)).kind == "coin"
    whole = run_scenario(path, out=tmp_path / "whole", progress=False)
    assert list(whole.results.columns) == list(CoinStudy.columns) and len(whole.results) == 4
    assert (whole.run_dir / "summary.md").read_text().startswith("mean heads ")
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=2)
    resumed = resume_run(tmp_path / "cut", options=RunOptions(progress=False))
    assert (resumed.run_dir / "results.csv").read_bytes() == (whole.run_dir / "results.csv").read_bytes()
    assert study_of(whole.scenario).console(whole) == [f"coin: mean heads {whole.results['heads'].mean():g}"]


def test_the_toy_kind_is_gone_once_unregistered(tmp_path):
    assert "coin" not in kinds.kinds()
    with pytest.raises(ValueError, match="kind"):
        parse_scenario(COIN, "coin.toml")


def test_ldpsim_run_prints_a_toy_kinds_console_lines(coin, tmp_path, capsys):
    from ldpsim.cli import main

    path = tmp_path / "coin.toml"
    path.write_text(COIN)
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("coin: mean heads ") and printed[1].startswith("report: ")
