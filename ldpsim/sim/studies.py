"""The studies of the run framework (:mod:`ldpsim.runs`): one per kind of scenario, each
implementing the run-kind contract (:mod:`ldpsim.study`): its parser, one replication of
its model, its results read back, its report, tables, figure and console lines. The kinds
are listed once, in :mod:`ldpsim.sim.kinds`. :func:`run_scenario` and :func:`resume_run`
run any kind; ``ldpsim run`` calls them.

Seeds: one root ``SeedSequence(seed)`` per run; replication r is seeded by
``SeedSequence(seed, spawn_key=(r,))`` whatever the executor, so results depend neither on
the number of workers nor on the order in which replications finish.
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from ldpsim.errors import LdpSimError, show
from ldpsim.report import collection as collection_report
from ldpsim.report import multiparty as multiparty_report
from ldpsim.report import multiparty_tables
from ldpsim.report import survey as survey_report
from ldpsim.report import survey_tables as st
from ldpsim.report.figures import in_unit, period_label, short_label
from ldpsim.runs import Outcome, RunOptions, Study, input_name, resume_study, run_study
from ldpsim.sim import collection, engine, kinds, multiparty
from ldpsim.sim.multiparty_study import MultipartyScalingStudy, MultipartyStudyRun
from ldpsim.sim.scenario import (
    BuiltScenario,
    CollectionScenario,
    MultipartyScenario,
    Scenario,
    allow_long_runs,
    load_scenario,
    parse_scenario,
)
from ldpsim.sim.scenario.collection import parse_collection
from ldpsim.sim.scenario.multiparty_study import parse_multiparty_file
from ldpsim.sim.scenario.survey import parse_survey

__all__ = [
    "RunResult",
    "MultipartyRun",
    "MultipartyStudyRun",
    "CollectionRun",
    "CollectionStudy",
    "SurveyStudy",
    "MultipartyStudy",
    "MultipartyScalingStudy",
    "STUDIES",
    "run_scenario",
    "resume_run",
]


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

    @classmethod
    def parse(cls, text: str, where: str) -> Scenario:
        return parse_survey(text, where)

    @property
    def columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(st.RESULT_COLUMNS)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        return engine.run_replication(self.scenario, index, seed)

    def unshardable(self) -> str | None:
        if self.scenario.spec.simulation.mode == "individual":
            return None
        return "for an aggregate-mode scenario (aggregate mode draws counts, not clients: it needs no shards)"

    def shard_plan(self, index: int, seed: int, shared: Any, shards: int) -> list[Any]:
        return engine.plan_shards(self.scenario, index, seed, shards)

    def run_shard(self, index: int, seed: int, shared: Any, piece: Any) -> Any:
        return engine.run_shard(self.scenario, index, seed, *piece)

    def merge_shards(self, index: int, seed: int, shared: Any, results: list[Any]) -> pd.DataFrame:
        return engine.merge_shards(self.scenario, index, seed, results)

    def read_results(self, path: Path) -> pd.DataFrame:
        return st.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        return survey_report.render_report(self.scenario, results, seed), None

    def tables(self, results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """``final`` (replication 0's estimates and intervals at the end, beside the mean
        estimate, RMSE, standard errors and coverage over replications), ``error_by_n``,
        ``error_norms`` (when the run estimated frequencies), ``other_tasks`` (when other
        tasks ran), ``engine`` (clients and reports)."""
        out: dict[str, pd.DataFrame] = {}
        if st.has_estimates(results):
            out.update(
                final=st.final_frequencies(results),
                error_by_n=st.error_by_n(results),
                error_norms=st.error_norms(results),
            )
        other = st.other_task_totals(results)
        if not other.empty:
            out["other_tasks"] = other
        out["engine"] = st.engine_totals(results)
        return out

    def plot(
        self, ax: Any, results: pd.DataFrame, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> None:
        """The frequency estimates of one replication (the first by default) over time with
        their intervals, the truth dashed (the ten most frequent answers when there are many;
        of the first frequency task when there are several); a survey without frequency
        estimates (hypothesis tests, say): one quantity of its tasks over time beside its
        theory and truth (``quantity``, default the first)."""
        name = self.scenario.name
        if not st.has_estimates(results):  # other analyst tasks only: one of their quantities
            rep = self.pick_replication(results["replication"], replication)
            series = st.other_task_series(results, rep)
            names = list(dict.fromkeys(series["quantity"]))
            if not names:
                raise LdpSimError(
                    f"run: got {name!r}, expected a run with estimates to draw (no report reached the server)"
                )
            shown = names[0] if quantity is None else quantity
            if shown not in names:
                raise LdpSimError(
                    f"quantity: got {show(shown)}, expected one of the run's quantities {', '.join(map(repr, names))}"
                )
            g = series[series["quantity"] == shown]
            task = g["task"].iloc[0]
            ax.plot(g["time"], g["estimate"], "o-", ms=3, label="measured", **kw)
            if g["theory"].notna().any():
                ax.plot(g["time"], g["theory"], "--", color="tab:red", label="theory")
            if g["truth"].notna().any():
                ax.plot(g["time"], g["truth"], ":", color="black", label="truth")
            ax.set_ylabel(short_label(shown))
            ax.set_title(f"{name}: {short_label(f'{task}: {shown}', 60)} over time (replication {rep})", fontsize=10)
        else:
            if quantity is not None:
                raise LdpSimError(
                    f"quantity: got {show(quantity)}, expected None (a survey with frequency estimates draws them)"
                )
            f = st.frequency_rows(results)
            f = f[f["estimate"].notna()]
            rep = self.pick_replication(f["replication"], replication)
            task, several = f["task"].iloc[0], f["task"].nunique() > 1
            f = f[(f["replication"] == rep) & (f["task"] == task)]
            many = f["category"].nunique() > st.MANY_ANSWERS
            if many:
                f = f[f["category"].isin(f.drop_duplicates("category").nlargest(10, "truth")["category"])]
            for i, (category, g) in enumerate(f.groupby("category", sort=False)):
                color = f"C{i % 10}"
                below = np.clip(g["estimate"] - g["ci_low"], 0.0, None)
                above = np.clip(g["ci_high"] - g["estimate"], 0.0, None)
                ax.errorbar(
                    g["time"],
                    g["estimate"],
                    yerr=[below, above],
                    color=color,
                    marker="o",
                    ms=3,
                    capsize=3,
                    label=short_label(category),
                    **{"lw": 1.2, **kw},
                )
                ax.axhline(float(g["truth"].iloc[0]), color=color, ls="--", lw=0.8, alpha=0.7)
            which = ("the 10 most frequent answers, " if many else "") + (f"task {task!r}, " if several else "")
            ax.set_ylabel("estimated frequency")
            ax.set_title(f"{name}: estimates with intervals ({which}replication {rep}); dashed: truth", fontsize=10)
        ax.set_xlabel(in_unit("time", self.scenario.spec.simulation.time_unit))
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))

    def console(self, result: Any) -> list[str]:
        return survey_report.console(result)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        out = {"mode": sc.spec.simulation.mode, "tick": sc.tick, "end": sc.end}
        if sc.questions is not None:  # the budget and each strategy's exact privacy per respondent
            out["questions"] = sc.questions.summary()
        if sc.table is not None and sc.questions is not None:
            t, qs = sc.table, sc.questions
            out["population_table"] = {
                "file": t.shown,
                "read_from": t.path,
                "sha256": t.sha256,
                "rows": qs.rows,
                "columns": [q.column for q in qs.questions],
                "resampled": qs.resample,
                "clients": sc.size,
            }
        elif sc.table is not None:
            t = sc.table
            out["population_table"] = {
                "file": t.shown,
                "read_from": t.path,
                "sha256": t.sha256,
                "rows": t.rows,
                "column": t.column,
                "resampled": t.resample,
                "clients": sc.size,
            }
        return out

    input_key = "population.file"

    def inputs(self) -> dict[str, bytes]:
        """The population table, wherever it sits in the scenario's folder (``poll.csv``
        beside it, ``data/anes96.csv`` below it): the run keeps a copy under the same path.
        A table outside that folder (``allow_outside_data``) is read where it is."""
        t = self.scenario.table
        name = input_name(t.shown) if t is not None else None
        return {} if name is None else {name: t.file_bytes()}

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

    @classmethod
    def parse(cls, text: str, where: str) -> BuiltScenario:
        """A multi-party file: one broadcast, or (with ``[study]``) a scaling study, run as
        :class:`MultipartyScalingStudy`."""
        return parse_multiparty_file(text, where)

    @property
    def columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(multiparty_tables.RESULT_COLUMNS)

    def shared(self) -> Any:
        return multiparty.exact_tables(self.scenario)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        sc = self.scenario
        spec = sc.spec
        result = multiparty.simulate_broadcast(
            sc.protocols,
            list(sc.tasks),
            spec.rounds.count,
            batch=spec.rounds.batch,
            latency=sc.latency,
            interval=spec.rounds.interval,
            p_one=sc.p_one,
            seed=np.random.SeedSequence(seed, spawn_key=(index,)),
            alpha=spec.simulation.alpha,
            replication=index,
            exact=shared.exact,
            loss=sc.loss,
            deadline=sc.deadline,
            actual=list(sc.actual),
        )
        return pd.concat([result.table, shared.frame(index)], ignore_index=True)

    def read_results(self, path: Path) -> pd.DataFrame:
        return multiparty_tables.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        return multiparty_report.render_report(self.scenario, results, seed)

    def tables(self, results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """``accuracy`` (measured next to exact, with tolerances) and ``latency``."""
        accuracy, latency = multiparty_tables.summarise(results, self.scenario)
        return {"accuracy": accuracy, "latency": latency}

    def plot(
        self, ax: Any, results: pd.DataFrame, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> None:
        """Each receiver's accuracy, measured (with its tolerance) and exact, per protocol."""
        if quantity is not None:
            raise LdpSimError(
                f"quantity: got {show(quantity)}, expected None (only a survey's or a study's plot takes a quantity)"
            )
        if replication is not None:
            raise LdpSimError(
                f"replication: got {show(replication)}, expected None (a "
                "multi-party run's accuracy is pooled over replications)"
            )
        accuracy = self.tables(results)["accuracy"]
        accuracy = accuracy[accuracy["quantity"] == "accuracy"]
        receivers = list(dict.fromkeys(accuracy["party"]))
        protocols = list(dict.fromkeys(accuracy["protocol"]))
        width = 0.8 / max(len(protocols), 1)
        x0 = np.arange(len(receivers))
        for q, protocol in enumerate(protocols):
            g = accuracy[accuracy["protocol"] == protocol].set_index("party").loc[receivers]
            x = x0 - 0.4 + width * (q + 0.5)
            color = f"C{q % 10}"
            ax.errorbar(
                x - width * 0.15,
                g["measured"],
                yerr=g["tolerance"],
                fmt="o",
                ms=4,
                capsize=3,
                color=color,
                label=f"{protocol}: measured ± tolerance",
                **kw,
            )
            ax.plot(x + width * 0.15, g["exact"], "D", ms=5, mfc="none", color=color, label=f"{protocol}: exact")
        ax.set_xticks(x0)
        ax.set_xticklabels([r if r == "observer" else f"party {r}" for r in receivers], fontsize=8)
        built = self.scenario
        names = list(dict.fromkeys(t.name for t in (getattr(built, "tasks", ()) or [built.task])))
        ax.set_ylabel(f"average accuracy ({names[0] if len(names) == 1 else 'each receiver its own task'})")
        ax.set_title(f"{built.name}: measured vs exact accuracy", fontsize=10)
        ax.legend(fontsize=7)

    def console(self, result: Any) -> list[str]:
        return multiparty_report.console(result)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {
            "parties": sc.spec.parties.k,
            "protocols": [p.name for p in sc.protocols],
            "loss": sc.loss,
            "deadline": sc.deadline,
            "missing": sc.missing,
            "deviations": {str(j): how if isinstance(how, str) else list(how) for j, how in sc.deviations},
        }

    def result(self, o: Outcome) -> MultipartyRun:
        summary, latency = o.extra
        return MultipartyRun(o.run_dir, o.study.scenario, o.results, o.seed, summary, latency)


class CollectionStudy(Study):
    """A collection scenario: the same respondents reporting period after period under
    several policies (:mod:`ldpsim.sim.collection`). Each policy's privacy by class is
    computed once per run, in the calling process, and handed to every replication."""

    kind = CollectionScenario.kind

    @classmethod
    def parse(cls, text: str, where: str) -> CollectionScenario:
        return parse_collection(text, where)

    @property
    def columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(collection_report.COLUMNS)

    def shared(self) -> Any:
        return collection.privacy_tables(self.scenario)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        return collection.run_replication(self.scenario, index, seed, shared)

    def read_results(self, path: Path) -> pd.DataFrame:
        return collection_report.read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        sc = self.scenario
        summary = collection_report.final_summary(results, float(sc.spec.analyst.confidence))
        return collection_report.render_report(sc, results, seed), summary

    def tables(self, results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """``final`` (one row per arm at the last period), ``accuracy`` (per arm and period)
        and ``privacy`` (replication 0's privacy spent per arm and period)."""
        confidence = float(self.scenario.spec.analyst.confidence)
        return {
            "final": collection_report.final_summary(results, confidence),
            "accuracy": collection_report.accuracy_over_time(results, confidence),
            "privacy": collection_report.privacy_series(results),
        }

    def plot(
        self, ax: Any, results: pd.DataFrame, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> None:
        """The privacy spent by the most exposed respondent (solid) and the median one
        (dotted) per policy over the periods (``replication``: default the first)."""
        if quantity is not None:
            raise LdpSimError(
                f"quantity: got {show(quantity)}, expected None (only a survey's or a study's plot takes a quantity)"
            )
        sc = self.scenario
        rep = self.pick_replication(results["replication"], replication)
        privacy = collection_report.privacy_series(results, rep)
        local = ~privacy["shuffled"].astype(bool)
        privacy = privacy[local] if local.any() else privacy  # the shuffler changes no local eps
        for i, (policy, g) in enumerate(privacy.groupby("policy", sort=False)):
            color = f"C{i % 10}"
            ax.plot(
                g["period"], g["max"], color=color, label=f"{short_label(policy)}: most exposed", **{"lw": 1.8, **kw}
            )
            ax.plot(g["period"], g["median"], color=color, ls=":", lw=1.2, label=f"{short_label(policy)}: median")
        ax.set_xlabel(period_label(sc.spec.collection.period, sc.spec.simulation.time_unit))
        ax.set_ylabel("privacy spent per respondent (pure eps)")
        ax.set_title(f"{sc.name}: privacy spent per policy (replication {rep})", fontsize=10)
        ax.grid(True, lw=0.4, alpha=0.5)
        ax.legend(fontsize=7)

    def console(self, result: Any) -> list[str]:
        return collection_report.console(result)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {
            "respondents": sc.size,
            "periods": sc.periods,
            "arms": [
                {"policy": p.name, "kind": p.kind, "shuffled": s, "reports_allowed": p.allowed} for p, s in sc.arms
            ],
        }

    def result(self, o: Outcome) -> "CollectionRun":
        return CollectionRun(o.run_dir, o.study.scenario, o.results, o.seed, o.extra)


class _Studies(Mapping[str, type[Study]]):
    """Run kind -> its study class: a read-only view of the one registry
    (:mod:`ldpsim.sim.kinds`), kept for the callers of 0.1's ``STUDIES``."""

    def __getitem__(self, kind: str) -> type[Study]:
        return kinds.study_class(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(kinds.kinds())

    def __len__(self) -> int:
        return len(kinds.kinds())


STUDIES: Mapping[str, type[Study]] = _Studies()


def study_of(scenario: BuiltScenario) -> Study:
    """The study that runs ``scenario`` (by its kind, from the registry)."""
    return kinds.study_of(scenario)


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
    options: RunOptions | None = None,
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
    a file's data may lie outside its folder (as :func:`ldpsim.sim.load_scenario`). The run's
    keywords are those of :class:`ldpsim.runs.RunOptions`; or pass one as ``options``.
    """
    options = RunOptions.of(
        options,
        seed=seed,
        replications=replications,
        workers=workers,
        out=out,
        executor=executor,
        progress=progress,
        interrupt_after=interrupt_after,
        shards=shards,
        report=report,
    )
    built: BuiltScenario = (
        scenario
        if isinstance(scenario, BuiltScenario)
        else load_scenario(scenario, allow_outside_data=allow_outside_data)
    )
    study = study_of(built)
    return _result(run_study(study, options=options), options.report)


def _result(o: Outcome, report: bool) -> RunResult:
    """What the run's caller gets: its kind's result, or a plain one where no report was made."""
    return o.study.result(o) if report else RunResult(o.run_dir, o.study.scenario, o.results, o.seed)


def _parsers(allow_outside_data: bool = False) -> dict[str, Any]:
    """Run kind -> a parser of the scenario as run into its study (the file's own ``kind``
    picks the parser; a multi-party file with ``[study]`` is a "multiparty_study" run). A
    run that exists was accepted when it started: its estimated time is not refused again."""

    def parse(text: str, path: str) -> Study:
        with allow_long_runs():
            return study_of(parse_scenario(text, path, allow_outside_data=allow_outside_data))

    return kinds.parsers(parse)


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
    options: RunOptions | None = None,
) -> RunResult:
    """Finish an interrupted run of any kind: run only the replications whose files are
    missing, then write the report (``report=False``: as :func:`run_scenario`). The data
    files of ``run_dir/scenario.toml`` must lie in the run directory, unless
    ``allow_outside_data`` (given again: the run directory does not grant it). The keywords
    are those of :class:`ldpsim.runs.RunOptions` that a resume takes; or pass one as ``options``."""
    options = RunOptions.of(
        options,
        workers=workers,
        executor=executor,
        progress=progress,
        interrupt_after=interrupt_after,
        shards=shards,
        report=report,
    )
    return _result(resume_study(run_dir, _parsers(allow_outside_data), options=options), options.report)
