"""Run directories: replications of a scenario through a pluggable executor, then the report.

This module sits above `sim` (the model) and `report` (the files) and below `cli`.

Seeds: one root ``SeedSequence(seed)`` per run; replication r uses the child with spawn key
``(r,)``, whatever executor or worker runs it, so results do not depend on either.

Any :class:`concurrent.futures.Executor` works (a local process pool, or a distributed
one such as dask's ``client.get_executor()``); ``workers=1`` runs in-process.

Each replication's rows are written to ``replications/rep-NNNNNN.csv`` as soon as it
finishes (atomically), so an interrupted run keeps what it finished and
:func:`resume_run` completes the rest. ``results.csv`` is the concatenation of those files
in replication order, so it is byte-identical whether the run was interrupted or not.
"""

from __future__ import annotations

import json
import math
import os
import sys
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
from tqdm import tqdm

from ldpsim._meta import now, versions, write_json
from ldpsim.errors import LdpSimError
from ldpsim.report import write_report
from ldpsim.sim.engine import run_replication
from ldpsim.sim.scenario import Scenario, ScenarioSpec, build, load_scenario

REP_DIR = "replications"


class SequentialExecutor(Executor):
    """Runs each submitted call at once, in the calling process."""

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


class RunInterrupted(Exception):
    """The run stopped before all replications finished; the run directory can be resumed."""

    def __init__(self, run_dir: Path, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} replications; resume with: ldpsim run --resume {run_dir}")
        self.run_dir, self.done, self.total = run_dir, done, total


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    scenario: Scenario
    results: pd.DataFrame
    seed: int


def default_run_dir(scenario: Scenario, seed: int, base: Path = Path("reports")) -> Path:
    """``reports/<scenario>/<UTC time>-seed<seed>``, with a suffix if that exists already."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = base / scenario.name / f"{stamp}-seed{seed}"
    suffix = 2
    while path.exists():
        path = base / scenario.name / f"{stamp}-seed{seed}-{suffix}"
        suffix += 1
    return path


def run_scenario(
    scenario: Scenario | str | Path,
    *,
    seed: int | None = None,
    replications: int | None = None,
    workers: int = 1,
    out: str | Path | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
) -> RunResult:
    """Run a scenario's replications into a new run directory and write its report.

    ``seed`` defaults to the scenario's ``simulation.seed``, else fresh entropy (recorded).
    ``interrupt_after`` stops the run after that many replications, as a Ctrl-C would
    (for trying out :func:`resume_run`).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    scenario, seed, run_dir = prepare_run(scenario, seed, replications, workers, out)
    meta = _metadata(scenario, seed, workers, executor)
    write_json(run_dir / "metadata.json", meta)
    return _execute(run_dir, scenario, seed, meta, workers, executor, progress, interrupt_after)


def prepare_run(scenario: Any, seed: int | None, replications: int | None, workers: int, out: str | Path | None):
    """Shared start of every run (survey and multi-party scenarios alike): apply the
    ``--replications`` override, settle the seed (argument, else the scenario's, else fresh
    entropy), check the workers, and create the run directory with the scenario as run.
    Returns ``(scenario, seed, run_dir)``."""
    if replications is not None:
        if replications < 1:
            raise LdpSimError(f"--replications: got {replications}, expected an integer >= 1")
        scenario = scenario.with_overrides(replications=replications)
    if seed is None:
        seed = scenario.spec.simulation.seed
    if seed is None:
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    if seed < 0:
        raise LdpSimError(f"--seed: got {seed}, expected an integer >= 0")
    _check_workers(workers)
    run_dir = Path(out) if out is not None else default_run_dir(scenario, seed)
    try:
        if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise LdpSimError(f"--out: got {str(run_dir)!r}, expected a new or empty directory (use --resume to continue)")
        (run_dir / REP_DIR).mkdir(parents=True, exist_ok=True)
        (run_dir / "scenario.toml").write_text(scenario.source)
    except OSError as exc:
        raise LdpSimError(f"--out: got {str(run_dir)!r}, expected a directory that can be created ({exc.strerror})") from None
    return scenario, seed, run_dir


def resume_run(
    run_dir: str | Path,
    *,
    workers: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
) -> RunResult:
    """Finish an interrupted run: run only the replications whose files are missing."""
    run_dir, meta, scenario, seed = open_resume(
        run_dir, workers, lambda meta: ScenarioSpec.model_validate(meta["spec"]), lambda spec, source, path: build(spec, source, path)
    )  # fmt: skip
    return _execute(run_dir, scenario, seed, meta, workers, executor, progress, interrupt_after)


def open_resume(
    run_dir: str | Path,
    workers: int,
    read: Callable[[dict], Any],
    rebuild: Callable[[Any, str, str], Any],
) -> tuple[Path, dict, Any, int]:
    """What resuming any kind of run shares: read ``metadata.json`` and ``scenario.toml`` of
    ``run_dir`` (``read(meta)`` picks what the kind needs from the metadata; any failure is
    one line naming ``--resume``), rebuild the scenario with ``rebuild(read(meta), source,
    path)``, check it is unchanged since the run started, restore its number of
    replications and record the resume in ``meta``. Returns the run directory, the
    metadata, the scenario and the root seed."""
    _check_workers(workers)
    run_dir = Path(run_dir)
    path = run_dir / "scenario.toml"
    try:
        meta = json.loads((run_dir / "metadata.json").read_text())
        source = path.read_text()
        extra = read(meta)
        total, seed, digest = int(meta["replications"]), int(meta["seed"]), meta["scenario_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        raise LdpSimError(f"--resume: got {str(run_dir)!r}, expected a run directory made by ldpsim run") from None
    scenario = rebuild(extra, source, str(path))
    if scenario.digest() != digest:
        raise LdpSimError(f"--resume: got {str(run_dir)!r}, expected its scenario.toml unchanged since the run started")
    if scenario.spec.simulation.replications != total:
        scenario = scenario.with_overrides(replications=total)
    meta.setdefault("resumes", []).append({"at": now(), "workers": workers, "command_line": sys.argv})
    return run_dir, meta, scenario, seed


def _check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LdpSimError(f"--workers: got {workers!r}, expected an integer >= 1")


def _execute(
    run_dir: Path,
    scenario: Scenario,
    seed: int,
    meta: dict[str, Any],
    workers: int,
    executor: Executor | None,
    progress: bool,
    interrupt_after: int | None,
) -> RunResult:
    total = scenario.spec.simulation.replications
    todo = [r for r in range(total) if not _rep_path(run_dir, r).exists()]
    done = total - len(todo)
    own = executor is None
    if own:
        executor = SequentialExecutor() if workers == 1 else ProcessPoolExecutor(max_workers=workers)
    bar = tqdm(total=total, initial=done, unit="rep", desc=scenario.name, disable=not (progress and sys.stderr.isatty()))
    finished_now = 0
    try:
        for index, frame in _completed(executor, scenario, total, seed, todo, workers):
            _write_rep(run_dir, index, frame)
            done += 1
            finished_now += 1
            bar.update(1)
            if interrupt_after is not None and finished_now >= interrupt_after and done < total:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise RunInterrupted(run_dir, done, total) from None
    finally:
        bar.close()
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
    results = _merge(run_dir, total)
    write_report(run_dir, scenario, results, seed)
    meta["finished"] = now()
    write_json(run_dir / "metadata.json", meta)
    return RunResult(run_dir, scenario, results, seed)


def _completed(executor: Executor, scenario: Scenario, total: int, seed: int, todo: list[int], workers: int):
    """(index, results) of each replication as it finishes. In-process runs go one
    replication at a time, so each is written before the next starts."""
    if isinstance(executor, SequentialExecutor):
        for r in todo:
            yield from _run_chunk(scenario, seed, [r])
        return
    futures = [executor.submit(_run_chunk, scenario, seed, chunk) for chunk in _chunks(todo, workers)]
    try:
        for future in as_completed(futures):
            yield from future.result()
    finally:
        for f in futures:
            f.cancel()


def _chunks(todo: list[int], workers: int) -> list[list[int]]:
    """Group replications so each worker gets several tasks (fewer round trips)."""
    if not todo:
        return []
    size = max(1, math.ceil(len(todo) / (4 * max(1, workers))))
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def _run_chunk(scenario: Scenario, seed: int, indices: Iterable[int]) -> list[tuple[int, pd.DataFrame]]:
    return [(r, run_replication(scenario, r, seed)) for r in indices]


def _rep_path(run_dir: Path, index: int) -> Path:
    return run_dir / REP_DIR / f"rep-{index:06d}.csv"


def _write_rep(run_dir: Path, index: int, frame: pd.DataFrame) -> None:
    path = _rep_path(run_dir, index)
    tmp = path.with_suffix(".tmp")
    frame.to_csv(tmp, index=False)
    os.replace(tmp, path)


def concat_replications(run_dir: Path, total: int) -> Path:
    """results.csv = the replication files in order (header once), byte for byte."""
    out = run_dir / "results.csv"
    with open(out, "w") as dst:
        for r in range(total):
            lines = _rep_path(run_dir, r).read_text().splitlines(keepends=True)
            dst.writelines(lines if r == 0 else lines[1:])
    return out


def _merge(run_dir: Path, total: int) -> pd.DataFrame:
    return read_results(concat_replications(run_dir, total))


def read_results(path: str | Path) -> pd.DataFrame:
    """A results.csv with labels kept as text ("1", "01" and "" stay distinct) and empty
    numeric cells as NaN."""
    numeric = ["time", "n_received", "estimate", "ci_low", "ci_high", "truth", "theory"]
    return pd.read_csv(
        path, dtype={"category": str, "task": str, "quantity": str, "reason": str},
        keep_default_na=False, na_values={c: [""] for c in numeric},
    )  # fmt: skip


def _metadata(scenario: Scenario, seed: int, workers: int, executor: Executor | None) -> dict[str, Any]:
    packages = versions()
    return {
        "scenario": scenario.name,
        "scenario_path": scenario.path,
        "scenario_sha256": scenario.digest(),
        "spec": scenario.spec.model_dump(mode="json"),
        "seed": seed,
        "replications": scenario.spec.simulation.replications,
        "mode": scenario.spec.simulation.mode,
        "tick": scenario.tick,
        "end": scenario.end,
        "workers": workers,
        "executor": type(executor).__name__ if executor is not None else ("sequential" if workers == 1 else "process_pool"),
        "ldpsim_version": packages["ldpsim"],
        "python": packages["python"],
        "packages": packages,
        "command_line": sys.argv,
        "started": now(),
    }
