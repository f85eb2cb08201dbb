"""The studies of the run framework (:mod:`ldpsim.runs`): one per kind of scenario, each
saying how to run one replication of its model, read its results back and render its
report. :func:`run_scenario` and :func:`resume_run` run any kind; ``ldpsim run`` calls them.

Seeds: one root ``SeedSequence(seed)`` per run; replication r is seeded by
``SeedSequence(seed, spawn_key=(r,))`` whatever the executor, so results depend neither on
the number of workers nor on the order in which replications finish.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.report import collection as collection_report
from ldpsim.report import multiparty as multiparty_report
from ldpsim.report import multiparty_tables
from ldpsim.report import survey as survey_report
from ldpsim.report import survey_tables
from ldpsim.runs import Outcome, Study, input_name, resume_study, run_study
from ldpsim.sim.multiparty_study import MultipartyScalingStudy, MultipartyStudyRun
from ldpsim.sim.scenario import BuiltScenario, CollectionScenario, MultipartyScenario, Scenario, load_scenario, parse_scenario

__all__ = ["RunResult", "MultipartyRun", "MultipartyStudyRun", "CollectionRun", "CollectionStudy", "SurveyStudy", "MultipartyStudy",
           "MultipartyScalingStudy", "STUDIES", "run_scenario", "resume_run"]


@dataclass(frozen=True)
class RunResult:
    """A finished run: its directory, the scenario as run, the results table (every
    replication's rows, in order) and the root seed."""

    run_dir: Path
    scenario: Any
    results: pd.DataFrame
    seed: int


@dataclass(frozen=True)
class MultipartyRun(RunResult):
    """A finished multi-party run, with its two summary tables: accuracy pooled over
    replications next to exact (and paired differences), completion delays next to theory."""

    summary: pd.DataFrame
    latency: pd.DataFrame


@dataclass(frozen=True)
class CollectionRun(RunResult):
    """A finished collection run, with one summary row per arm (policy x shuffled)."""

    summary: pd.DataFrame


class SurveyStudy(Study):
    """A survey scenario: clients, network, server, analyst (:mod:`ldpsim.sim.engine`)."""

    kind = Scenario.kind

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        from ldpsim.sim.engine import run_replication

        return run_replication(self.scenario, index, seed)

    def unshardable(self) -> str | None:
        if self.scenario.spec.simulation.mode == "individual":
            return None
        return "for an aggregate-mode scenario (aggregate mode draws counts, not clients: it needs no shards)"

    def shard_plan(self, index: int, seed: int, shared: Any, shards: int) -> list[Any]:
        from ldpsim.sim.engine import plan_shards

        return plan_shards(self.scenario, index, seed, shards)

    def run_shard(self, index: int, seed: int, shared: Any, piece: Any) -> Any:
        from ldpsim.sim.engine import run_shard

        return run_shard(self.scenario, index, seed, *piece)

    def merge_shards(self, index: int, seed: int, shared: Any, results: list[Any]) -> pd.DataFrame:
        from ldpsim.sim.engine import merge_shards

        return merge_shards(self.scenario, index, seed, results)

    def read_results(self, path: Path) -> pd.DataFrame:
        return survey_tables.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        return survey_report.render_report(self.scenario, results, seed), None

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        out = {"mode": sc.spec.simulation.mode, "tick": sc.tick, "end": sc.end}
        if sc.questions is not None:  # the budget and each strategy's exact privacy per respondent
            out["questions"] = sc.questions.summary()
        if sc.table is not None and sc.questions is not None:
            t, qs = sc.table, sc.questions
            out["population_table"] = {"file": t.shown, "read_from": t.path, "sha256": t.sha256, "rows": qs.rows,
                                       "columns": [q.column for q in qs.questions], "resampled": qs.resample,
                                       "clients": sc.size}  # fmt: skip
        elif sc.table is not None:
            t = sc.table
            out["population_table"] = {"file": t.shown, "read_from": t.path, "sha256": t.sha256, "rows": t.rows,
                                       "column": t.column, "resampled": t.resample, "clients": sc.size}  # fmt: skip
        return out

    input_key = "population.file"

    def inputs(self) -> dict[str, bytes]:
        """The population table, wherever it sits in the scenario's folder (``poll.csv``
        beside it, ``data/anes96.csv`` below it): the run keeps a copy under the same path.
        A table outside that folder (``allow_outside_data``) is read where it is."""
        t = self.scenario.table
        name = input_name(t.shown) if t is not None else None
        return {} if name is None else {name: t.file_bytes()}  # type: ignore[union-attr]

    def input_digests(self) -> dict[str, str]:
        t = self.scenario.table  # its SHA-256 as read: no second reading
        return {} if t is None else {input_name(t.shown) or t.shown: t.sha256}

    def recorded_inputs(self, meta: dict[str, Any]) -> dict[str, str]:
        """metadata.json's ``inputs``, and the table's SHA-256 it records in any case
        (``population_table``: also for a table outside the folder, and in runs made before
        metadata.json listed its inputs)."""
        out = super().recorded_inputs(meta)
        t = meta.get("population_table")
        if isinstance(t, dict) and isinstance(t.get("file"), str) and isinstance(t.get("sha256"), str):
            out.setdefault(input_name(t["file"]) or t["file"], t["sha256"])
        return out

    def result(self, o: Outcome) -> RunResult:
        return RunResult(o.run_dir, o.study.scenario, o.results, o.seed)


class MultipartyStudy(Study):
    """A multi-party broadcast scenario (:mod:`ldpsim.sim.multiparty`). The exact values
    (every receiver's expected gain under the channel and the deviations, worst-case
    accuracies, the channel table) are computed once per run, in the calling process, and
    handed to every replication, whose table carries the exact-only rows too (so that the
    report is a function of results.csv)."""

    kind = MultipartyScenario.kind

    def shared(self) -> Any:
        from ldpsim.sim.multiparty import exact_tables

        return exact_tables(self.scenario)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        from ldpsim.sim.multiparty import simulate_broadcast

        sc = self.scenario
        spec = sc.spec
        result = simulate_broadcast(
            sc.protocols, list(sc.tasks), spec.rounds.count, batch=spec.rounds.batch, latency=sc.latency,
            interval=spec.rounds.interval, p_one=sc.p_one, seed=np.random.SeedSequence(seed, spawn_key=(index,)),
            alpha=spec.simulation.alpha, replication=index, exact=shared.exact, loss=sc.loss,
            deadline=sc.deadline, actual=list(sc.actual),
        )  # fmt: skip
        return pd.concat([result.table, shared.frame(index)], ignore_index=True)

    def read_results(self, path: Path) -> pd.DataFrame:
        return multiparty_tables.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        return multiparty_report.render_report(self.scenario, results, seed)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {"parties": sc.spec.parties.k, "protocols": [p.name for p in sc.protocols],
                "loss": sc.loss, "deadline": sc.deadline, "missing": sc.missing,
                "deviations": {str(j): how if isinstance(how, str) else list(how) for j, how in sc.deviations}}  # fmt: skip

    def result(self, o: Outcome) -> MultipartyRun:
        summary, latency = o.extra
        return MultipartyRun(o.run_dir, o.study.scenario, o.results, o.seed, summary, latency)


class CollectionStudy(Study):
    """A collection scenario: the same respondents reporting period after period under
    several policies (:mod:`ldpsim.sim.collection`). Each policy's privacy by class is
    computed once per run, in the calling process, and handed to every replication."""

    kind = CollectionScenario.kind

    def shared(self) -> Any:
        from ldpsim.sim.collection import privacy_tables

        return privacy_tables(self.scenario)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        from ldpsim.sim.collection import run_replication

        return run_replication(self.scenario, index, seed, shared)

    def read_results(self, path: Path) -> pd.DataFrame:
        return collection_report.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        sc = self.scenario
        summary = collection_report.final_summary(results, float(sc.spec.analyst.confidence))
        return collection_report.render_report(sc, results, seed), summary

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {"respondents": sc.size, "periods": sc.periods, "arms": [
            {"policy": p.name, "kind": p.kind, "shuffled": s, "reports_allowed": p.allowed} for p, s in sc.arms]}

    def result(self, o: Outcome) -> "CollectionRun":
        return CollectionRun(o.run_dir, o.study.scenario, o.results, o.seed, o.extra)


#: scenario kind -> its study; a new kind of run is one entry here and one in
#: :data:`ldpsim.sim.scenario.KINDS`.
STUDIES: dict[str, type[Study]] = {
    SurveyStudy.kind: SurveyStudy, MultipartyStudy.kind: MultipartyStudy, CollectionStudy.kind: CollectionStudy,
    MultipartyScalingStudy.kind: MultipartyScalingStudy,
}


def study_of(scenario: BuiltScenario) -> Study:
    """The study that runs ``scenario`` (by its kind)."""
    return STUDIES[scenario.kind](scenario)


def run_scenario(
    scenario: BuiltScenario | str | Path,
    *,
    seed: int | None = None,
    replications: int | None = None,
    workers: int = 1,
    out: str | Path | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
    shards: int = 1,
    report: bool = True,
    allow_outside_data: bool = False,
) -> RunResult:
    """Run a scenario (a built one, or a file of any kind) into a new run directory and write
    its report; a :class:`MultipartyRun` for multi-party scenarios.

    ``seed`` defaults to the scenario's ``simulation.seed``, else fresh entropy (recorded).
    ``workers`` > 1 runs replications in a local process pool, or pass any
    :class:`concurrent.futures.Executor`. ``interrupt_after`` stops the run after that many
    replications, as a Ctrl-C would (for trying out :func:`resume_run`). ``shards`` > 1 cuts
    each replication of an individual-mode survey into that many pieces of its population,
    each a task of its own (on a cluster, spread over its workers), merged in time order:
    the files are the same byte for byte whatever the number of shards (docs/distributed.md).
    ``report=False`` writes results.csv and metadata.json but no report (``ldpsim report
    DIR`` makes it later) and returns a plain :class:`RunResult`. ``allow_outside_data``:
    a file's data may lie outside its folder (as :func:`ldpsim.sim.load_scenario`).
    """
    if not isinstance(scenario, BuiltScenario):
        scenario = load_scenario(scenario, allow_outside_data=allow_outside_data)
    study = study_of(scenario)
    o = run_study(study, seed=seed, replications=replications, workers=workers, out=out,
                  executor=executor, progress=progress, interrupt_after=interrupt_after, shards=shards,
                  report=report)  # fmt: skip
    return study.result(o) if report else RunResult(o.run_dir, o.study.scenario, o.results, o.seed)  # type: ignore[no-any-return]


def _parsers(allow_outside_data: bool = False) -> dict[str, Any]:
    """Run kind -> a parser of the scenario as run into its study (the file's own ``kind``
    picks the parser; a multi-party file with ``[study]`` is a "multiparty_study" run). A
    run that exists was accepted when it started: its estimated time is not refused again."""
    from ldpsim.sim.scenario import allow_long_runs

    def parse(text: str, path: str) -> Study:
        with allow_long_runs():
            return study_of(parse_scenario(text, path, allow_outside_data=allow_outside_data))

    return {kind: parse for kind in STUDIES}


def resume_run(
    run_dir: str | Path,
    *,
    workers: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
    shards: int = 1,
    report: bool = True,
    allow_outside_data: bool = False,
) -> RunResult:
    """Finish an interrupted run of any kind: run only the replications whose files are
    missing, then write the report (``report=False``: as :func:`run_scenario`). The data
    files of ``run_dir/scenario.toml`` must lie in the run directory, unless
    ``allow_outside_data`` (given again: the run directory does not grant it)."""
    o = resume_study(run_dir, _parsers(allow_outside_data), workers=workers, executor=executor, progress=progress,
                     interrupt_after=interrupt_after, shards=shards, report=report)  # fmt: skip
    return o.study.result(o) if report else RunResult(o.run_dir, o.study.scenario, o.results, o.seed)  # type: ignore[no-any-return]
