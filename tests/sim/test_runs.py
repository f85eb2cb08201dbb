"""Run directories end to end: shipped scenarios, files, determinism, workers, resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ldpsim import LdpSimError
from ldpsim.runs import RunInterrupted
from ldpsim.sim import (
    Checkpoint,
    Task,
    load_scenario,
    parse_scenario,
    register_task,
    resume_run,
    run_replication,
    run_scenario,
)
from ldpsim.sim.tasks import TASKS, TaskParams
from tests.sim.helpers import SCENARIOS, make, scenario_text

FILES = ["scenario.toml", "metadata.json", "results.csv", "summary.md", "estimates_over_time.png", "error_vs_n.png"]


def small_copy(name: str, tmp_path: Path, size: int, replications: int | None = None) -> Path:
    """A shipped scenario with a smaller population (and optionally replications)."""
    text = (SCENARIOS / f"{name}.toml").read_text()
    text, n = re.subn(r"(?m)^size = .*$", f"size = {size}", text)
    assert n == 1
    if replications is not None:
        text, n = re.subn(r"(?m)^replications = .*$", f"replications = {replications}", text)
        assert n == 1
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, size", [("survey", 20_000), ("survey_large", 10**9)])
def test_shipped_scenarios_produce_every_file(name, size, tmp_path):
    result = run_scenario(small_copy(name, tmp_path, size, replications=3), out=tmp_path / "run", progress=False)
    for f in FILES:
        assert (result.run_dir / f).stat().st_size > 0, f
    expected = sorted(f"rep-{r:06d}.{ext}" for r in range(3) for ext in ("csv", "json"))  # rows and their record
    assert sorted(p.name for p in (result.run_dir / "replications").iterdir()) == expected
    meta = json.loads((result.run_dir / "metadata.json").read_text())
    for key in ("seed", "ldpsim_version", "python", "packages", "command_line", "started", "finished"):
        assert key in meta
    assert meta["packages"]["numpy"] == np.__version__
    df = pd.read_csv(result.run_dir / "results.csv")
    for col in [
        "replication",
        "time",
        "n_received",
        "task",
        "quantity",
        "category",
        "estimate",
        "ci_low",
        "ci_high",
        "truth",
        "theory",
    ]:
        assert col in df.columns
    freq = df[df["quantity"] == "frequency"]
    assert set(freq["replication"]) == {0, 1, 2}
    assert sorted(set(freq["time"])) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]  # daily, end at day 8
    summary = (result.run_dir / "summary.md").read_text()
    assert "## Final estimates" in summary and "estimates_over_time.png" in summary
    # the shipped file itself is valid and has the promised size
    shipped = load_scenario(SCENARIOS / f"{name}.toml")
    assert shipped.spec.population.size == {"survey": 10**6, "survey_large": 10**10}[name]


def coverage_counts(scenario, reps: int) -> pd.Series:
    hits = []
    for r in range(reps):
        df = run_replication(scenario, r, 99)
        f = df[(df["quantity"] == "frequency") & (df["reason"] == "end")]
        hits.append(((f["ci_low"] <= f["truth"]) & (f["truth"] <= f["ci_high"])).to_numpy())
    return np.array(hits).sum(axis=0)


@pytest.mark.parametrize(
    "mode, reps",
    [
        ("aggregate", 1000),
        ("individual", 400),
        pytest.param("aggregate", 4000, marks=pytest.mark.slow),  # finer: the slow tier
        pytest.param("individual", 1500, marks=pytest.mark.slow),
    ],
)
def test_confidence_intervals_cover_at_their_nominal_rate(mode, reps):
    """95% intervals at the end checkpoint, per category over independent replications: the
    number covering is Binomial(R, 0.95) up to the normal approximation of the estimator
    (n = 20,000 reports; its error is far below the tolerance). Exact two-sided binomial
    bounds at 1e-7 / (2 k) per category: false-failure probability <= 1e-7."""
    sc = make(
        size=20_000,
        mode=mode,
        checkpoints="{ every = 1.0 }",
        end=1.0,
        tick=1.0,
        labels='["a", "b", "c", "d", "e"]',
        distribution="[0.35, 0.25, 0.2, 0.15, 0.05]",
    )
    hits = coverage_counts(sc, reps)
    k = len(hits)
    lo = stats.binom.ppf(1e-7 / (2 * k), reps, 0.95)
    hi = stats.binom.isf(1e-7 / (2 * k), reps, 0.95)
    assert np.all((hits >= lo) & (hits <= hi)), (hits / reps, lo / reps, hi / reps)


def test_same_seed_same_results_and_workers_do_not_matter(tmp_path):
    path = small_copy("survey", tmp_path, 5_000, replications=4)
    a = run_scenario(path, out=tmp_path / "a", progress=False)
    b = run_scenario(path, out=tmp_path / "b", progress=False)
    c = run_scenario(path, out=tmp_path / "c", workers=2, progress=False)
    d = run_scenario(path, out=tmp_path / "d", seed=1, progress=False)
    text = (a.run_dir / "results.csv").read_bytes()
    assert text == (b.run_dir / "results.csv").read_bytes()
    assert text == (c.run_dir / "results.csv").read_bytes()
    assert text != (d.run_dir / "results.csv").read_bytes()
    assert (a.run_dir / "summary.md").read_bytes() == (c.run_dir / "summary.md").read_bytes()


def test_interrupted_run_resumes_to_the_same_files(tmp_path):
    path = small_copy("survey", tmp_path, 5_000, replications=5)
    full = run_scenario(path, out=tmp_path / "full", progress=False)
    with pytest.raises(RunInterrupted) as info:
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=2)
    cut = tmp_path / "cut"
    assert info.value.done == 2 and len(list((cut / "replications").glob("*.csv"))) == 2
    assert not (cut / "results.csv").exists()
    before = {p.name: p.read_bytes() for p in (cut / "replications").iterdir()}
    resumed = resume_run(cut, workers=2, progress=False)
    for name, content in before.items():  # finished replications are not repeated
        assert (cut / "replications" / name).read_bytes() == content
    for f in ["results.csv", "summary.md", "estimates_over_time.png", "error_vs_n.png"]:
        assert (resumed.run_dir / f).read_bytes() == (full.run_dir / f).read_bytes(), f
    resumes = json.loads((cut / "metadata.json").read_text())["resumes"]
    assert len(resumes) == 1 and resumes[0]["workers"] == 2


def test_a_new_task_plugs_in_without_touching_the_engine():
    class CountParams(TaskParams):
        every_symbol: bool = True

    @register_task
    class ReportCounter(Task):
        """Counts reports as they stream in (observe) and compares with the server."""

        kind = "test_counter"
        Params = CountParams

        def start(self, rng):
            self.seen = 0

        def observe(self, times, reports):
            self.seen += reports.size

        def at_checkpoint(self, cp: Checkpoint):
            return [
                dict(
                    quantity="seen",
                    category="",
                    estimate=self.seen,
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=cp.n_received,
                    theory=np.nan,
                )
            ]

    try:
        text = scenario_text(size=3000, latency='{ kind = "exponential", mean = 0.3 }', end=2.0)
        text = text.replace(
            "checkpoints = { every = 1.0 }",
            'checkpoints = { every = 1.0 }\ntasks = [{ kind = "test_counter" }, { kind = "frequency" }]',
        )
        df = run_replication(parse_scenario(text, "t.toml"), 0, 5)
        seen = df[df["quantity"] == "seen"]
        assert len(seen) == 2 and (seen["estimate"] == seen["truth"]).all()
        assert (df["quantity"] == "frequency").any()
    finally:
        TASKS.pop("test_counter", None)


def test_testing_population_with_p0_p1_and_binary_mechanism():
    """A population given as P0/P1 with the truth P1: clients draw from P1, the binary
    mechanism takes T = {P0 >= P1}, and the truth column is P1."""
    text = scenario_text(mechanism='kind = "binary"\neps = 2.0', size=4000).replace(
        "distribution = [0.4, 0.3, 0.2, 0.1]", 'P0 = [0.4, 0.3, 0.2, 0.1]\nP1 = [0.1, 0.2, 0.3, 0.4]\ntruth = "P1"'
    )
    # a two-output mechanism cannot be inverted for 4 frequencies: refused at load time
    with pytest.raises(
        LdpSimError, match=r"^t.toml: analyst.tasks\[0\].kind: got 'frequency', expected .* full row rank"
    ):
        parse_scenario(text, "t.toml")
    sc = parse_scenario(
        text.replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0 }\ntasks = []"), "t.toml"
    )
    np.testing.assert_allclose(sc.prior, [0.1, 0.2, 0.3, 0.4])
    assert sc.mechanism.params["T"] == (0, 1)
    assert sc.mechanism.input_labels == ("a", "b", "c", "d")
    df = run_replication(sc, 0, 1)
    counts = df[df["task"] == "engine"].set_index("quantity")["estimate"]
    assert counts["received"] == 4000


@pytest.mark.parametrize("kind", ["optimal", "better_of_binary_and_rr"])
@pytest.mark.parametrize("utility", ["kl", "mutual_information"])
def test_optimal_and_mixed_mechanisms_in_scenarios(kind, utility):
    from ldpsim.utility import KL, MutualInformation, better_of_binary_and_rr, optimal_mechanism

    text = (
        scenario_text(mechanism=f'kind = "{kind}"\neps = 1.5\nutility = "{utility}"')
        .replace(
            "distribution = [0.4, 0.3, 0.2, 0.1]", 'P0 = [0.4, 0.3, 0.2, 0.1]\nP1 = [0.1, 0.2, 0.3, 0.4]\ntruth = "P0"'
        )
        .replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0 }\ntasks = []")
    )
    sc = parse_scenario(text, "t.toml")
    p0, p1 = [0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]
    u = KL(p0, p1) if utility == "kl" else MutualInformation(p0)
    expected = optimal_mechanism(u, 1.5).mechanism if kind == "optimal" else better_of_binary_and_rr(u, 1.5)
    np.testing.assert_allclose(sc.mechanism.matrix, expected.matrix)
    assert sc.mechanism.input_labels == ("a", "b", "c", "d")
    assert sc.mechanism.epsilon() <= 1.5 * (1 + 1e-9)
