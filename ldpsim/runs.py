"""Run directories: replications of a study through a pluggable executor, then the report.

One framework serves every kind of run: a :class:`Study` says how to run one replication,
how to read the results back and how to render the report; this module owns the
directory, the seeds, the workers, the files and what happens when things go wrong. It
knows no model: the survey and multi-party studies live with their models in
:mod:`ldpsim.sim.studies`, above this module, and plug into it.

Seeds: one root ``SeedSequence(seed)`` per run; replication r uses the child with spawn key
``(r,)``, whatever executor or worker runs it, so results do not depend on either.

Any :class:`concurrent.futures.Executor` works (a local process pool, or a distributed
one such as dask's ``client.get_executor()``); ``workers=1`` runs in-process.

Shards: with ``shards`` > 1 a study that allows it (:meth:`Study.unshardable`) cuts each
replication into pieces, each a task of its own; the parent merges a replication's pieces
in plan order once they are all back, and writes the same rows as an unsharded run.

Files. Each replication's rows go to ``replications/rep-NNNNNN.csv`` as soon as it
finishes, with a record ``rep-NNNNNN.json`` (rows, bytes, SHA-256 and the run key) written
after it; a replication counts as done only when both agree. ``results.csv`` is the
concatenation of those files in replication order, so it is byte-identical whether the
run was interrupted or not. Every file is written to a temporary name and renamed into
place (:mod:`ldpsim._files`): a full disk, Ctrl-C or a kill never leaves a half-written
file. One process at a time owns a run directory (an exclusive lock on ``.lock``).

Resuming trusts nothing it cannot check: the scenario is rebuilt from ``scenario.toml``
(whose digest must match the one recorded at the start), the seed and the number of
replications must match the run key recorded with them, and every finished replication's
file must match its record.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from ldpsim import _progress
from ldpsim import _validate as v
from ldpsim._files import (
    DirectoryLock, LOCK_NAME, atomic_writer, describe_os_error, remove_stale_temporaries, sigint_held, start_pool,
    stop_pool, write_bytes,
)  # fmt: skip
from ldpsim._deprecate import moved
from ldpsim._meta import now, versions, write_json
from ldpsim.errors import LdpSimError

REP_DIR = "replications"
#: Shares of the report's time by stage, for its progress bar (measured on the shipped
#: scenarios: 0.3-1.8 s to render the tables and figures, a few ms to read or write).
REPORT_STAGES = {"read": 0.03, "render": 0.94, "write": 0.03}
#: Version of the run-directory layout that :func:`resume_run` understands.
LAYOUT = 2


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
    """The run stopped before it finished; the run directory can be resumed."""

    def __init__(self, run_dir: Path, done: int, total: int) -> None:
        where = f"after {done} of {total} replications" if done < total else f"while writing the report ({total} of {total} replications done)"
        super().__init__(f"interrupted {where}; resume with: ldpsim run --resume {run_dir}")
        self.run_dir, self.done, self.total = run_dir, done, total


# ----------------------------------------------------------------------------- studies
class Study:
    """What a kind of run provides to the framework. Subclasses are plain picklable
    objects (they travel to worker processes).

    - ``kind``: recorded in metadata.json (``"survey"``, ``"multiparty"``);
    - ``scenario``: the built scenario (``name``, ``spec.simulation.replications``,
      ``source``, ``path``, ``digest()``, ``with_overrides(replications=...)``);
    - :meth:`shared`: computed once per run in the calling process and handed to every
      replication (e.g. exact values);
    - :meth:`run_replication`, :meth:`read_results`, :meth:`render_report`,
      :meth:`metadata`, :meth:`result`.
    """

    kind: str = ""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario

    @property
    def replications(self) -> int:
        return int(self.scenario.spec.simulation.replications)

    def with_replications(self, replications: int) -> "Study":
        return type(self)(self.scenario.with_overrides(replications=replications))

    def shared(self) -> Any:
        return None

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError

    def read_results(self, path: Path) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:  # pragma: no cover
        """The report files (name -> bytes, written in this order) and anything the caller
        should get back (e.g. summary tables)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, Any]:
        return {}

    def inputs(self) -> dict[str, bytes]:
        """Input files the scenario reads besides its text (path relative to the scenario
        file -> contents, e.g. a population table): the run keeps a copy next to its
        scenario.toml, so that resuming finds them as the scenario names them."""
        return {}

    def result(self, outcome: "Outcome") -> Any:
        """What :func:`run_study`'s callers get back for this kind of run (default: the
        :class:`Outcome` itself)."""
        return outcome

    # shards: one replication cut into pieces of work, run apart and merged (optional)
    def unshardable(self) -> str | None:
        """Why this study's replications cannot be cut into shards (None when they can)."""
        return f"for a {self.kind} run (shards cut an individual-mode survey population)"

    def shard_plan(self, index: int, seed: int, shared: Any, shards: int) -> list[Any]:  # pragma: no cover
        """At most ``shards`` pieces of replication ``index`` (picklable descriptions)."""
        raise NotImplementedError

    def run_shard(self, index: int, seed: int, shared: Any, piece: Any) -> Any:  # pragma: no cover
        """One piece of replication ``index``; its result travels back to the parent."""
        raise NotImplementedError

    def merge_shards(self, index: int, seed: int, shared: Any, results: list[Any]) -> pd.DataFrame:  # pragma: no cover
        """Replication ``index``'s rows from its pieces' results, in plan order: the same
        rows as :meth:`run_replication`."""
        raise NotImplementedError


@dataclass(frozen=True)
class Outcome:
    """What :func:`run_study` and :func:`resume_study` return, for every kind of run."""

    run_dir: Path
    study: Study
    results: pd.DataFrame
    extra: Any  # what the study's report returned besides its files
    seed: int


# ----------------------------------------------------------------------------- framework
def default_run_dir(name: str, seed: int, base: Path = Path("reports")) -> Path:
    """``reports/<name>/<UTC time>-seed<seed>``, with a suffix if that exists already; always
    inside ``base``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = base / name / f"{stamp}-seed{seed}"
    suffix = 2
    while path.exists():
        path = base / name / f"{stamp}-seed{seed}-{suffix}"
        suffix += 1
    root = base.resolve()
    if not path.resolve().is_relative_to(root) or path.resolve() == root:  # pragma: no cover - names are checked at load
        raise LdpSimError(f"name: got {name!r}, expected a name that keeps the run directory inside {str(base)!r}")
    return path


def settle_seed(seed: int | None, scenario_seed: int | None) -> int:
    """The run's root seed: the argument, else the scenario's, else fresh entropy."""
    if seed is None:
        seed = scenario_seed
    if seed is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    return v.seed(seed, "--seed")


def run_key(kind: str, digest: str, seed: int, replications: int) -> str:
    """What a run's results depend on besides the code, hashed: resuming checks it."""
    text = json.dumps({"kind": kind, "scenario_sha256": digest, "seed": seed, "replications": replications}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def run_study(
    study: Study,
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
) -> Outcome:
    """Run a study into a new run directory and write its report (``report=False``: only
    results.csv and metadata.json; ``ldpsim report DIR`` makes the report later).

    ``shards`` > 1 cuts each replication into that many pieces of work (where the study
    allows it), run as separate tasks and merged; the files are the same byte for byte.
    Everything is checked before anything is written; if the start fails (a full disk,
    Ctrl-C), the directory made for the run is removed again."""
    if replications is not None:
        if isinstance(replications, bool) or not isinstance(replications, int) or replications < 1:
            raise LdpSimError(f"--replications: got {replications!r}, expected an integer >= 1")
        study = study.with_replications(replications)
    seed = settle_seed(seed, study.scenario.spec.simulation.seed)
    check_workers(workers)
    check_shards(study, shards)
    option = "--out"
    try:
        run_dir = Path(out) if out is not None else default_run_dir(study.scenario.name, seed)
        refuse_used(run_dir, option)
    except OSError as exc:
        got = f"{str(out)!r}" if out is not None else "the default folder under 'reports'"
        raise LdpSimError(f"{option}: got {got}, expected a folder we can write ({describe_os_error(exc)})") from None
    meta = _metadata(study, seed, workers, executor)
    if shards > 1:
        meta["shards"] = shards
    with Creation(run_dir, option, default=out is None) as made:
        made.lock = DirectoryLock(run_dir, option).acquire()
        refuse_used(run_dir, option, ignore=(LOCK_NAME,))  # another process may have been quicker
        made.owned = True
        (run_dir / REP_DIR).mkdir()
        write_bytes(run_dir / "scenario.toml", study.scenario.source.encode())
        for name, data in study.inputs().items():
            (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
            write_bytes(run_dir / name, data)
        write_json(run_dir / "metadata.json", meta)
    return _execute(run_dir, study, seed, meta, workers, executor, progress, interrupt_after, made.lock, shards, report)


def resume_study(
    run_dir: str | Path,
    parsers: dict[str, Callable[[str, str], Study]],
    *,
    workers: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    interrupt_after: int | None = None,
    shards: int = 1,
    report: bool = True,
) -> Outcome:
    """Finish an interrupted run of any kind listed in ``parsers`` (kind -> a function of the
    scenario text and its path giving the study): only missing replications are run (in
    ``shards`` pieces each, whatever the first part of the run used: the bytes are the same)."""
    check_workers(workers)
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        check_shards(Study(None), shards)  # the one-line error
    run_dir, meta, study, seed, lock = open_resume(run_dir, workers, parsers)
    try:
        check_shards(study, shards)
    except LdpSimError:
        lock.release()
        raise
    return _execute(run_dir, study, seed, meta, workers, executor, progress, interrupt_after, lock, shards, report)


def finished_replications(run_dir: str | Path) -> int | None:
    """The number of replications of the run in ``run_dir`` if it is finished (its report
    written: ``metadata.json`` records when, and every replication's file matches its
    record), else None; anything unreadable is None too (resuming it says why). Reads only:
    ``ldpsim run --resume`` on a finished run says so instead of redoing its report."""
    try:
        meta = json.loads((Path(run_dir) / "metadata.json").read_text())
        total, key = int(meta["replications"]), meta["run_key"]
        if not meta.get("finished") or int(meta["layout"]) != LAYOUT:
            return None
        return total if all(_finished(Path(run_dir), r, key) for r in range(total)) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # LdpSimError is a ValueError
        return None


def open_resume(
    run_dir: str | Path, workers: int, parsers: dict[str, Callable[[str, str], Study]]
) -> tuple[Path, dict, Study, int, DirectoryLock]:
    """Lock ``run_dir``, read ``metadata.json`` and ``scenario.toml``, check the run key and
    the scenario's digest, rebuild the study from ``scenario.toml`` and record the resume.
    Any problem is one LdpSimError naming ``--resume``."""
    run_dir = Path(run_dir)
    option = "--resume"
    bad = f"{option}: got {str(run_dir)!r}, expected"
    if not run_dir.is_dir():
        raise LdpSimError(f"{bad} a run directory made by ldpsim run")
    try:
        lock = DirectoryLock(run_dir, option).acquire()
    except OSError as exc:
        raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
    try:
        path = run_dir / "scenario.toml"
        try:
            meta = json.loads((run_dir / "metadata.json").read_text())
            source = path.read_text()
            kind = meta.get("kind", "survey")
            total, seed, digest, key = int(meta["replications"]), int(meta["seed"]), meta["scenario_sha256"], meta["run_key"]
            layout = int(meta["layout"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise LdpSimError(f"{bad} a run directory made by this version of ldpsim run (metadata.json and scenario.toml)") from None
        if layout != LAYOUT or kind not in parsers:
            raise LdpSimError(f"{bad} a run directory made by this version of ldpsim run (layout {layout}, kind {kind!r})")
        if hashlib.sha256(source.encode()).hexdigest() != digest:
            raise LdpSimError(f"{bad} its scenario.toml unchanged since the run started")
        if run_key(kind, digest, seed, total) != key:
            raise LdpSimError(f"{bad} metadata.json as the run wrote it (its seed, replications or scenario digest were changed)")
        study = parsers[kind](source, str(path))
        if study.replications != total:
            study = study.with_replications(total)
        remove_stale_temporaries(run_dir)
        meta.setdefault("resumes", []).append({"at": now(), "workers": workers, "command_line": sys.argv})
        try:
            write_json(run_dir / "metadata.json", meta)
        except OSError as exc:
            raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
    except BaseException:
        lock.release()
        raise
    return run_dir, meta, study, seed, lock


def check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LdpSimError(f"--workers: got {workers!r}, expected an integer >= 1")


#: Most shards a replication may be cut into.
MAX_SHARDS = 1_000_000


def check_shards(study: Study, shards: int) -> None:
    """One line naming ``--shards`` unless it is a number the study can cut its replications into."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise LdpSimError(f"--shards: got {shards!r}, expected an integer from 1 to {MAX_SHARDS:,}")
    why = study.unshardable() if shards > 1 else None
    if why:
        raise LdpSimError(f"--shards: got {shards}, expected 1 {why}")


def refuse_used(run_dir: Path, option: str, ignore: tuple[str, ...] = ()) -> None:
    if run_dir.exists() and (not run_dir.is_dir() or any(p.name not in ignore for p in run_dir.iterdir())):
        raise LdpSimError(f"{option}: got {str(run_dir)!r}, expected a new or empty directory (use --resume to continue)")


class Creation:
    """Creates a run directory. If the block fails, removes what this process made (the
    directory and the parents it created, or only the contents when the directory was
    already there and empty), never what another process made, and turns an OSError into
    one line naming the option. Set ``owned`` once the lock is held and the directory is
    known to be empty."""

    def __init__(self, run_dir: Path, option: str, default: bool = False) -> None:
        self.run_dir, self.option, self.default = run_dir, option, default
        self.lock: DirectoryLock | None = None
        self.owned = False
        self._made: list[Path] = []

    def __enter__(self) -> "Creation":
        missing = []
        p = self.run_dir
        while not p.exists() and p.parent != p:
            missing.append(p)
            p = p.parent
        self._made = missing
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._remove_made()
            raise LdpSimError(self._message(exc)) from None
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            return False
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if self.owned:
            if self._made:
                self._remove_made()
            else:
                for p in list(self.run_dir.iterdir()):
                    shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        elif self._made and all(p.name == LOCK_NAME for p in self.run_dir.iterdir()):
            self._remove_made()
        if isinstance(exc, OSError):
            raise LdpSimError(self._message(exc)) from None
        return False

    def _message(self, exc: OSError) -> str:
        got = f"{str(self.run_dir)!r}" + (" (the default; choose another with --out)" if self.default else "")
        return f"{self.option}: got {got}, expected a folder we can write ({describe_os_error(exc)})"

    def _remove_made(self) -> None:
        if self._made:
            shutil.rmtree(self._made[0], ignore_errors=True)
        for p in self._made[1:]:  # parents created for the run, if nothing else went in since
            try:
                p.rmdir()
            except OSError:
                break


def _execute(
    run_dir: Path,
    study: Study,
    seed: int,
    meta: dict[str, Any],
    workers: int,
    executor: Executor | None,
    progress: bool,
    interrupt_after: int | None,
    lock: DirectoryLock,
    shards: int = 1,
    report: bool = True,
) -> Outcome:
    total = study.replications
    key = meta["run_key"]
    own = executor is None
    done = 0
    stopped = False
    try:
        todo = [r for r in range(total) if not _finished(run_dir, r, key)]
        done = total - len(todo)
        if own:
            executor = SequentialExecutor() if workers == 1 else start_pool(workers)
        finished_now = 0
        shared = study.shared()
        plans = {r: study.shard_plan(r, seed, shared, shards) for r in todo} if shards > 1 else None
        # the replications' bar (or their shards'), then the report's: each cleared when it ends
        if plans is None:
            bar = _progress.bar(total, study.scenario.name, "rep", show=progress, initial=done)
            finished = _completed(executor, study, seed, todo, workers, shared, cancel=not own)
        else:
            bar = _progress.bar(max(1, sum(map(len, plans.values()))), study.scenario.name, "shard", show=progress)
            finished = _completed_shards(executor, study, seed, plans, shared, cancel=not own)
        with bar:
            for index, frame in finished:
                if frame is None:  # a shard finished
                    _progress.advance()
                    continue
                _write_rep(run_dir, index, frame, key)
                done += 1
                finished_now += 1
                if plans is None:
                    _progress.advance()
                if interrupt_after is not None and finished_now >= interrupt_after and done < total:
                    raise KeyboardInterrupt
        with _progress.bar(sum(REPORT_STAGES.values()), f"{study.scenario.name}: report", show=progress, counts=False):
            _progress.note("reading the results")
            results = study.read_results(concat_replications(run_dir, total))
            _progress.advance(REPORT_STAGES["read"])
            _progress.note("tables and figures")
            files, extra = study.render_report(results, seed) if report else ({}, None)
            _progress.advance(REPORT_STAGES["render"])
            _progress.note("writing the files")
            for name, data in files.items():
                write_bytes(run_dir / name, data)
                _progress.advance(REPORT_STAGES["write"] / len(files))
        meta["finished"] = now()
        write_json(run_dir / "metadata.json", meta)
    except BaseException as exc:
        if own and executor is not None:  # Ctrl-C or an error: do not wait for replications nobody will keep
            stop_pool(executor)
            stopped = True
        if isinstance(exc, KeyboardInterrupt):
            raise RunInterrupted(run_dir, done, total) from None
        if isinstance(exc, OSError):
            raise LdpSimError(
                f"--out: cannot write in {str(run_dir)!r} ({describe_os_error(exc)}); finished replications are kept: "
                f"free some space, then resume with: ldpsim run --resume {run_dir}"
            ) from None
        raise
    finally:
        if own and executor is not None and not stopped:
            executor.shutdown(wait=True)
        lock.release()
    return Outcome(run_dir, study, results, extra, seed)


def _completed(
    executor: Executor, study: Study, seed: int, todo: list[int], workers: int, shared: Any, cancel: bool = True
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(index, results) of each replication as it finishes. In-process runs go one
    replication at a time, so each is written before the next starts. Workers are started
    by the submissions, with Ctrl-C held back meanwhile (:func:`ldpsim._files.start_pool`).
    ``cancel``: cancel what is left when the caller stops early (not for a pool the caller
    stops itself with :func:`ldpsim._files.stop_pool`, which cancels it)."""
    if isinstance(executor, SequentialExecutor):
        for r in todo:
            yield from _run_chunk(study, seed, [r], shared)
        return
    with sigint_held():
        futures = [executor.submit(_run_chunk, study, seed, chunk, shared) for chunk in _chunks(todo, workers)]
    try:
        for future in as_completed(futures):
            yield from future.result()
    finally:
        if cancel:
            for f in futures:
                f.cancel()


def _completed_shards(
    executor: Executor, study: Study, seed: int, plans: dict[int, list[Any]], shared: Any, cancel: bool = True
) -> Iterator[tuple[int, pd.DataFrame | None]]:
    """``(index, None)`` as each shard finishes, then ``(index, rows)`` once all the shards
    of replication ``index`` are back (merged in plan order, in this process). Every shard
    is a task of its own, so a cluster spreads one replication over its workers."""
    if isinstance(executor, SequentialExecutor):
        for r, pieces in plans.items():
            results = []
            for piece in pieces:
                results.append(study.run_shard(r, seed, shared, piece))
                yield r, None
            yield r, study.merge_shards(r, seed, shared, results)
        return
    with sigint_held():
        futures = {executor.submit(study.run_shard, r, seed, shared, piece): (r, i)
                   for r, pieces in plans.items() for i, piece in enumerate(pieces)}  # fmt: skip
    got: dict[int, list[Any]] = {r: [None] * len(pieces) for r, pieces in plans.items()}
    left = {r: len(pieces) for r, pieces in plans.items()}
    try:
        for future in as_completed(futures):
            r, i = futures[future]
            got[r][i] = future.result()
            left[r] -= 1
            yield r, None
            if left[r] == 0:
                yield r, study.merge_shards(r, seed, shared, got.pop(r))
    finally:
        if cancel:
            for f in futures:
                f.cancel()


def _chunks(todo: list[int], workers: int) -> list[list[int]]:
    """Group replications so each worker gets several tasks (fewer round trips)."""
    if not todo:
        return []
    size = max(1, math.ceil(len(todo) / (4 * max(1, workers))))
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def _run_chunk(study: Study, seed: int, indices: Iterable[int], shared: Any) -> list[tuple[int, pd.DataFrame]]:
    return [(r, study.run_replication(r, seed, shared)) for r in indices]


# ----------------------------------------------------------------------------- replication files
def _rep_path(run_dir: Path, index: int) -> Path:
    return run_dir / REP_DIR / f"rep-{index:06d}.csv"


def _record_path(run_dir: Path, index: int) -> Path:
    return run_dir / REP_DIR / f"rep-{index:06d}.json"


def _write_rep(run_dir: Path, index: int, frame: pd.DataFrame, key: str) -> None:
    """The replication's CSV, then its record: a replication is done only once both exist."""
    data = frame.to_csv(index=False).encode()
    write_bytes(_rep_path(run_dir, index), data)
    record = {"replication": index, "rows": len(frame), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "run_key": key}
    write_bytes(_record_path(run_dir, index), (json.dumps(record, sort_keys=True) + "\n").encode())


def _finished(run_dir: Path, index: int, key: str) -> bool:
    """Whether replication ``index`` is done: its record exists and its file matches it. A
    file without a record is unfinished (it is run again); a record whose file does not
    match is an error (something changed the file after the run wrote it)."""
    try:
        record = json.loads(_record_path(run_dir, index).read_text())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        record = None
    name = f"{REP_DIR}/{_rep_path(run_dir, index).name}"
    if not isinstance(record, dict) or record.get("run_key") != key:
        raise LdpSimError(
            f"--resume: got {str(run_dir)!r}, expected {REP_DIR}/{_record_path(run_dir, index).name} as this run wrote it; "
            f"delete it and {name} to run replication {index} again"
        )
    try:
        data = _rep_path(run_dir, index).read_bytes()
    except FileNotFoundError:
        data = None
    if data is None or len(data) != record.get("bytes") or hashlib.sha256(data).hexdigest() != record.get("sha256"):
        got = "no file" if data is None else f"{len(data):,} bytes"
        raise LdpSimError(
            f"--resume: got {str(run_dir)!r} with {name} changed since the run wrote it ({got}, expected "
            f"{record.get('bytes', 0):,} bytes with the recorded SHA-256); delete it and its .json record to run "
            f"replication {index} again"
        )
    return True


def concat_replications(run_dir: Path, total: int) -> Path:
    """results.csv = the replication files in order (header once), byte for byte."""
    out = run_dir / "results.csv"
    with atomic_writer(out) as dst:
        for r in range(total):
            with open(_rep_path(run_dir, r), "rb") as src:
                header = src.readline()
                if r == 0:
                    dst.write(header)
                shutil.copyfileobj(src, dst)
    return out


def _metadata(study: Study, seed: int, workers: int, executor: Executor | None) -> dict[str, Any]:
    packages = versions()
    scenario = study.scenario
    return {
        "kind": study.kind,
        "layout": LAYOUT,
        "scenario": scenario.name,
        "scenario_path": scenario.path,
        "scenario_sha256": scenario.digest(),
        "spec": scenario.spec.model_dump(mode="json"),  # for reading only: resuming rebuilds from scenario.toml
        "seed": seed,
        "replications": study.replications,
        "run_key": run_key(study.kind, scenario.digest(), seed, study.replications),
        **study.metadata(),
        "workers": workers,
        "executor": type(executor).__name__ if executor is not None else ("sequential" if workers == 1 else "process_pool"),
        "ldpsim_version": packages["ldpsim"],
        "python": packages["python"],
        "packages": packages,
        "command_line": sys.argv,
        "started": now(),
    }


# ----------------------------------------------------------------------------- old spellings
#: ``ldpsim.runs.run_scenario`` and ``resume_run`` (in the README of 0.1) keep working for one
#: release, with a deprecation warning: the survey's runs moved to :mod:`ldpsim.sim.studies`.
#: The new home is named by a string, as the catalog names its builders, so this module
#: never imports the layer above it.
__getattr__ = moved("ldpsim.runs", "ldpsim.sim", ["run_scenario", "resume_run", "RunResult"], removed_in="0.2")
