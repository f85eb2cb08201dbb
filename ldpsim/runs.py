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
(whose digest must match the one recorded at the start), every input file from the copy
the run keeps of it (whose SHA-256 must match the one recorded in metadata.json), the seed
and the number of replications must match the run key recorded with them, and every
finished replication's file must match its record.

Starting: metadata.json is written first, then ``replications/``, scenario.toml and the
inputs' copies, so a run killed while starting leaves only files its metadata.json lists
(or, before it, a ``.lock``): such a folder is taken by a new run with the same ``--out``
(:func:`stopped_while_starting`), and resuming it says so.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import posixpath
import shutil
import stat
import sys
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator, Literal

import numpy as np
import pandas as pd

from ldpsim import _progress
from ldpsim import _validate as v
from ldpsim._deprecate import moved
from ldpsim._files import (
    LOCK_NAME,
    DirectoryLock,
    atomic_writer,
    describe_os_error,
    is_temporary,
    remove_stale_temporaries,
    shell_word,
    sigint_held,
    write_bytes,
)
from ldpsim._meta import now, versions, write_json
from ldpsim._pool import start_pool, stop_pool
from ldpsim.errors import LdpSimError, show
from ldpsim.study import REQUIRED_HOOKS, Study  # noqa: F401 - the contract, used and re-exported here

REP_DIR = "replications"
#: Shares of the report's time by stage, for its progress bar (measured on the shipped
#: scenarios: 0.3-1.8 s to render the tables and figures, a few ms to read or write).
REPORT_STAGES = {"read": 0.03, "render": 0.94, "write": 0.03}
#: Version of the run-directory layout that :func:`resume_run` understands.
LAYOUT = 2
#: Most bytes of a run's metadata.json (or a replication's record) read back: a run writes a
#: few kB, and each resume adds a few hundred bytes.
METADATA_LIMIT = 16 << 20
#: Most bytes of a results file (results.csv, a replication's CSV) read back.
RESULTS_LIMIT = 1 << 36


def check_run_file(path: str | Path, limit: int) -> int:
    """The size of ``path`` if it is a regular file of at most ``limit`` bytes, not a
    symbolic link (checked with lstat: a run folder from someone else may link a file to
    /dev/zero or out of the folder); otherwise an OSError saying why (FileNotFoundError if
    there is nothing), which the callers' one-line refusals take."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "it is a symbolic link, expected a regular file", str(path))
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "it is not a regular file", str(path))
    if st.st_size > limit:
        raise OSError(errno.EFBIG, f"it is larger than {limit:,} bytes", str(path))
    return st.st_size


def read_run_file(path: str | Path, limit: int) -> bytes:
    """The bytes of a file of a run folder, read through :func:`check_run_file`'s checks
    (and opened without following a link, at most ``limit`` bytes read)."""
    check_run_file(path, limit)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the lstat
            raise OSError(errno.EINVAL, "it is not a regular file", str(path))
        chunks, size = [], 0
        while size <= limit:  # in pieces: a buffer of the limit's size is never allocated
            chunk = f.read(min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"it is larger than {limit:,} bytes", str(path))
    return data


def read_scenario_text(path: str | Path) -> str:
    """A run's scenario.toml as text (newlines as :meth:`Path.read_text` gives them), read
    through :func:`read_run_file`."""
    return read_run_file(path, METADATA_LIMIT).decode().replace("\r\n", "\n").replace("\r", "\n")


def read_metadata(run_dir: str | Path) -> Any:
    """``run_dir/metadata.json`` parsed, read through :func:`read_run_file` (an OSError or a
    ValueError if it cannot be)."""
    return json.loads(read_run_file(Path(run_dir) / "metadata.json", METADATA_LIMIT))


def _integer_field(meta: dict[str, Any], name: str, minimum: int, bad: str) -> int:
    value = meta.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise LdpSimError(
            f"{bad} metadata.json as the run wrote it (its {name!r}: got {value!r}, expected an integer >= {minimum})"
        )
    return value


def metadata_fields(meta: Any, bad: str, default_kind: str = "") -> tuple[str, int, int, str, str, int]:
    """(kind, replications, seed, scenario_sha256, run_key, layout) of a run's metadata,
    each of the type and range a run writes (finite integers, strings): one line naming
    the first field that is not. ``default_kind``: the kind of a run that recorded none."""
    if not isinstance(meta, dict):
        raise LdpSimError(f"{bad} metadata.json as the run wrote it (a JSON object, not {type(meta).__name__})")
    kind = meta.get("kind", default_kind)
    for name, value in (
        ("kind", kind),
        ("scenario_sha256", meta.get("scenario_sha256")),
        ("run_key", meta.get("run_key")),
    ):
        if not isinstance(value, str):
            raise LdpSimError(
                f"{bad} metadata.json as the run wrote it (its {name!r}: got {value!r}, expected a string)"
            )
    total = _integer_field(meta, "replications", 1, bad)
    seed = _integer_field(meta, "seed", 0, bad)
    layout = _integer_field(meta, "layout", 0, bad)
    return kind, total, seed, meta["scenario_sha256"], meta["run_key"], layout


def check_written_folders(run_dir: Path, bad: str) -> None:
    """The folder a run writes into (``replications/``) is a folder of ``run_dir`` itself:
    not a symbolic link, nor anything resolving outside the folder (a run folder from
    someone else could send the files anywhere). One line naming it, nothing written."""
    folder = run_dir / REP_DIR
    try:
        st = os.lstat(folder)
        inside = folder.resolve().parent == run_dir.resolve()
    except FileNotFoundError:
        refuse_unstarted(run_dir, bad)
        raise LdpSimError(f"{bad} its {REP_DIR}/ folder as the run made it (it is missing)") from None
    except OSError as exc:
        raise LdpSimError(f"{bad} its {REP_DIR}/ folder as the run made it ({describe_os_error(exc)})") from None
    if stat.S_ISLNK(st.st_mode):
        raise LdpSimError(f"{bad} its {REP_DIR}/ folder as the run made it (it is a symbolic link now)")
    if not stat.S_ISDIR(st.st_mode) or not inside:
        raise LdpSimError(f"{bad} its {REP_DIR}/ folder as the run made it (a folder inside the run directory)")


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
        where = (
            f"after {done} of {total} replications"
            if done < total
            else f"while writing the report ({total} of {total} replications done)"
        )
        super().__init__(f"interrupted {where}; resume with: ldpsim run --resume {shell_word(run_dir)}")
        self.run_dir, self.done, self.total = run_dir, done, total


@dataclass(frozen=True)
class Outcome:
    """What :func:`run_study` and :func:`resume_study` return, for every kind of run."""

    run_dir: Path
    study: Study
    results: pd.DataFrame
    extra: Any  # what the study's report returned besides its files
    seed: int

    @property
    def scenario(self) -> Any:
        """The scenario as run (as a :class:`ldpsim.sim.RunResult` has it)."""
        return self.study.scenario


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
    if (
        not path.resolve().is_relative_to(root) or path.resolve() == root
    ):  # pragma: no cover - names are checked at load
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
    text = json.dumps(
        {"kind": kind, "scenario_sha256": digest, "seed": seed, "replications": replications}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out, as one value: what ``ldpsim run``'s options and the keyword
    arguments of :func:`run_study`, :func:`resume_study`, :func:`ldpsim.sim.run_scenario`,
    :func:`ldpsim.sim.resume_run`, :func:`ldpsim.sweep.run_sweep` and
    :meth:`ldpsim.workflow.Scenario.run` say, checked once when it is made.

    ``seed``: the run's root seed (None: the scenario's, else fresh entropy); ``replications``
    (None: the scenario's); ``workers``: local processes (1: in this process), unless
    ``executor`` is given; ``out``: the new run's folder (None: ``reports/<name>/<time>-seed<seed>``);
    ``progress``: bars on stderr; ``interrupt_after``: stop as a Ctrl-C would after that many
    replications (for trying out resume); ``shards``: pieces each replication is cut into;
    ``report``: write the report (else only results.csv and metadata.json). A resume takes
    its seed, replications and folder from the run, not from here."""

    seed: int | None = None
    replications: int | None = None
    workers: int = 1
    out: str | Path | None = None
    executor: Executor | None = None
    progress: bool = True
    interrupt_after: int | None = None
    shards: int = 1
    report: bool = True

    def __post_init__(self) -> None:
        r = self.replications
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise LdpSimError(f"--replications: got {r!r}, expected an integer >= 1")
        check_workers(self.workers)
        check_shards(None, self.shards)

    @classmethod
    def of(cls, options: RunOptions | None, **keywords: Any) -> RunOptions:
        """``options`` if given (then every keyword must be left at its default, so that
        nothing given is silently dropped), else the options the keywords say."""
        if options is None:
            return cls(**keywords)
        if not isinstance(options, cls):
            raise LdpSimError(f"options: got {options!r}, expected a RunOptions or None")
        given = sorted(k for k, value in keywords.items() if value != cls.__dataclass_fields__[k].default)
        if given:
            raise LdpSimError(f"options: got a RunOptions and {', '.join(given)} too, expected one or the other")
        return options


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
    options: RunOptions | None = None,
) -> Outcome:
    """Run a study into a new run directory and write its report (``report=False``: only
    results.csv and metadata.json; ``ldpsim report DIR`` makes the report later). The
    keywords are those of :class:`RunOptions`; or pass one as ``options``.

    ``shards`` > 1 cuts each replication into that many pieces of work (where the study
    allows it), run as separate tasks and merged; the files are the same byte for byte.
    Everything is checked before anything is written; if the start fails (a full disk,
    Ctrl-C), the directory made for the run is removed again."""
    o = RunOptions.of(
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
    if o.replications is not None:
        study = study.with_replications(o.replications)
    seed = settle_seed(o.seed, study.scenario.spec.simulation.seed)
    check_shards(study, o.shards)
    out = o.out
    option = "--out"
    try:
        run_dir = Path(out) if out is not None else default_run_dir(study.scenario.name, seed)
        if not stopped_while_starting(run_dir):  # a run killed while starting left nothing worth keeping
            refuse_used(run_dir, option)
    except OSError as exc:
        got = f"{str(out)!r}" if out is not None else "the default folder under 'reports'"
        raise LdpSimError(f"{option}: got {got}, expected a folder we can write ({describe_os_error(exc)})") from None
    inputs = study.inputs()
    check_input_names(inputs, study.input_key, RUN_FILES)
    meta = _metadata(study, seed, o.workers, o.executor)
    meta["inputs"] = {name: hashlib.sha256(data).hexdigest() for name, data in inputs.items()}
    if o.shards > 1:
        meta["shards"] = o.shards
    shared = study.shared()  # before any folder: a scenario this refuses leaves nothing behind
    with Creation(run_dir, option, default=out is None) as made:
        made.lock = lock = DirectoryLock(run_dir, option).acquire()
        if stopped_while_starting(run_dir):
            clear_start(run_dir)
        refuse_used(run_dir, option, ignore=(LOCK_NAME,))  # another process may have been quicker
        made.owned = True
        # metadata.json first: whatever a kill leaves from here on, it lists (see stopped_while_starting)
        write_json(run_dir / "metadata.json", meta)
        (run_dir / REP_DIR).mkdir()
        write_bytes(run_dir / "scenario.toml", study.scenario.source.encode())
        for name, data in inputs.items():
            write_input(run_dir, name, data)
    return _execute(run_dir, study, seed, meta, o, lock, shared=shared, made=made)


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
    options: RunOptions | None = None,
) -> Outcome:
    """Finish an interrupted run of any kind listed in ``parsers`` (kind -> a function of the
    scenario text and its path giving the study; the first kind is that of a run whose
    metadata.json names none, as :func:`ldpsim.sim.kinds.parsers` orders them): only missing replications are run (in
    ``shards`` pieces each, whatever the first part of the run used: the bytes are the same).
    The keywords are those of :class:`RunOptions` that a resume takes; or pass one as
    ``options`` (its seed, replications and folder must be left unset: the run's own count)."""
    o = RunOptions.of(
        options,
        workers=workers,
        executor=executor,
        progress=progress,
        interrupt_after=interrupt_after,
        shards=shards,
        report=report,
    )
    for name in ("seed", "replications", "out"):
        if getattr(o, name) is not None:
            raise LdpSimError(f"options: got {name}={getattr(o, name)!r}, expected None on a resume (the run's own)")
    run_dir, meta, study, seed, lock = open_resume(run_dir, o.workers, parsers)
    try:
        check_shards(study, o.shards)
    except LdpSimError:
        lock.release()
        raise
    return _execute(run_dir, study, seed, meta, o, lock)


def finished_replications(run_dir: str | Path) -> int | None:
    """The number of replications of the run in ``run_dir`` if it is finished (its report
    written: ``metadata.json`` records when, and every replication's file matches its
    record), else None; anything unreadable is None too (resuming it says why). Reads only:
    ``ldpsim run --resume`` on a finished run says so instead of redoing its report."""
    run_dir = Path(run_dir)
    try:
        meta = read_metadata(run_dir)
        kind, total, seed, digest, key, layout = metadata_fields(meta, "")
        if not meta.get("finished") or layout != LAYOUT or run_key(kind, digest, seed, total) != key:
            return None  # an edited seed or count: resuming it says so
        # the same checks as a resume: the scenario and every input as the run recorded them
        if hashlib.sha256(read_scenario_text(run_dir / "scenario.toml").encode()).hexdigest() != digest:
            return None
        check_inputs(run_dir, meta, "")
        check_written_folders(run_dir, "")
        return total if all(_finished(run_dir, r, key) for r in range(total)) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):  # LdpSimError is a ValueError
        return None


def record_resume(record: dict[str, Any], workers: int, bad: str) -> None:
    """Add this resume to the ``resumes`` list of a run's (or a sweep's) record; anything but
    a list there is a record someone edited: one line (``bad`` names the folder)."""
    resumes = record.setdefault("resumes", [])
    if not isinstance(resumes, list):
        raise LdpSimError(f"{bad} (its 'resumes' is {show(resumes)}, not a list)")
    resumes.append({"at": now(), "workers": workers, "command_line": sys.argv})


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
            meta = read_metadata(run_dir)
            source = read_scenario_text(path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            refuse_unstarted(run_dir, bad)
            raise LdpSimError(
                f"{bad} a run directory made by this version of ldpsim run (metadata.json and scenario.toml)"
            ) from None
        kind, total, seed, digest, key, layout = metadata_fields(meta, bad, next(iter(parsers), ""))
        if layout != LAYOUT or kind not in parsers:
            raise LdpSimError(
                f"{bad} a run directory made by this version of ldpsim run (layout {layout}, kind {kind!r})"
            )
        if hashlib.sha256(source.encode()).hexdigest() != digest:
            raise LdpSimError(f"{bad} its scenario.toml unchanged since the run started")
        if run_key(kind, digest, seed, total) != key:
            raise LdpSimError(
                f"{bad} metadata.json as the run wrote it (its seed, replications or scenario digest were changed)"
            )
        check_inputs(run_dir, meta, bad)
        check_written_folders(run_dir, bad)
        study = parsers[kind](source, str(path))
        check_study_inputs(study, meta, bad)
        if study.replications != total:
            study = study.with_replications(total)
        remove_stale_temporaries(run_dir)
        record_resume(meta, workers, f"{bad} metadata.json as the run wrote it")
        try:
            write_json(run_dir / "metadata.json", meta)
        except OSError as exc:
            raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
    except BaseException:
        lock.release()
        raise
    return run_dir, meta, study, seed, lock


# ----------------------------------------------------------------------------- input files
#: Names a run directory's own files take at its top (and a report's figures: any ``*.png``):
#: a copy of an input file may not take one.
RUN_FILES = frozenset(
    {"scenario.toml", "metadata.json", "results.csv", "summary.md", "report.html", REP_DIR, LOCK_NAME}
)


def input_name(name: str) -> str | None:
    """Where a run keeps its copy of the input file a scenario names as ``name`` (a path
    relative to the scenario's folder): the same path relative to the run's scenario.toml
    (``.`` parts and repeated slashes dropped), so that the scenario as run reads the copy.
    None for a file outside the scenario's folder (an absolute path, or one whose ``..``
    climbs out of it): such a file is read where it is and only its SHA-256 is kept."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or not path.parts or path.parts[-1] == "..":
        return None
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 1
        if depth < 0:
            return None
    return "/".join(path.parts)


def _top(name: str) -> str:
    """The first part of ``name`` once its ``..`` parts are resolved: the entry of the run
    directory that holds the copy."""
    return posixpath.normpath(name).split("/")[0]


def check_input_names(inputs: Iterable[str], key: str, own: Iterable[str]) -> None:
    """One line naming ``key`` if the copy of an input would take the name of one of the
    folder's ``own`` files (or of a figure, ``*.png``), or a name that is hidden or temporary."""
    own = set(own)
    for name in inputs:
        top = _top(name)
        if top in own or top.endswith(".png") or top.startswith(".") or is_temporary(top):
            raise LdpSimError(
                f"{key}: got {name!r}, expected a file named otherwise than the run directory's own "
                f"{top!r} (the run keeps a copy of it under the same path): rename it"
            )


def write_input(run_dir: Path, name: str, data: bytes) -> None:
    """The copy of the input ``name`` (as :func:`input_name` gives it) in ``run_dir``; the
    folders its path passes through are made, so that it reads as the scenario names it
    (``data/../poll.csv`` too)."""
    here = run_dir
    for part in PurePosixPath(name).parts[:-1]:
        here = here.parent if part == ".." else here / part
        here.mkdir(exist_ok=True)
    write_bytes(run_dir / name, data)


def file_digest(path: Path) -> str | None:
    """SHA-256 of the regular file ``path`` (None if there is none; ``""`` for something
    that is not a regular file, which matches no digest), read without blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_inputs(run_dir: Path, meta: dict[str, Any], bad: str, what: str = "run") -> None:
    """Every input file ``meta`` records (``inputs``: name -> SHA-256) as the run (or sweep:
    ``what``) copied it into ``run_dir``: one line (``bad`` ...) naming the first that is
    missing, changed, or now a symbolic link."""
    recorded = meta.get("inputs", {})
    if not isinstance(recorded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in recorded.items()
    ):
        raise LdpSimError(f"{bad} metadata.json as the {what} wrote it (its list of inputs)")
    for name, digest in sorted(recorded.items()):
        if input_name(name) != name:
            raise LdpSimError(
                f"{bad} metadata.json as the {what} wrote it (it lists an input {name!r} outside the folder)"
            )
        if (run_dir / name).is_symlink():
            raise LdpSimError(f"{bad} {name} as the {what} copied it (it is a symbolic link now)")
        try:
            got = file_digest(run_dir / name)
        except OSError as exc:
            raise LdpSimError(
                f"{bad} {name} as the {what} copied it (it cannot be read: {describe_os_error(exc)})"
            ) from None
        if got is None:
            refuse_unstarted(run_dir, bad)
            raise LdpSimError(f"{bad} {name} as the {what} copied it (it is missing)")
        if got != digest:
            raise LdpSimError(
                f"{bad} {name} as the {what} copied it (it changed since the {what} started: its SHA-256 "
                "is not the one recorded)"
            )


def check_study_inputs(study: Study, meta: dict[str, Any], bad: str, what: str = "run") -> None:
    """The input files the rebuilt ``study`` read are those the run (or sweep: ``what``)
    recorded, by SHA-256 (also those read from outside the folder, and those of a run made
    before metadata.json listed its inputs): one line naming the first that is not."""
    recorded = study.recorded_inputs(meta)
    for name, digest in study.input_digests().items():
        if name in recorded and recorded[name] != digest:
            raise LdpSimError(
                f"{bad} {name} as the {what} read it (it changed since the {what} started: its SHA-256 "
                "is not the one recorded)"
            )


# ----------------------------------------------------------------------------- killed while starting
def stopped_while_starting(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` is what a run leaves when it is killed while starting, before any
    replication finished: a ``.lock``, and from the first file on its metadata.json (written
    first) and some of the files it lists (scenario.toml, the inputs' copies), an empty
    ``replications/``, temporary files. Nothing in it is worth keeping: a new run takes the
    folder (``--out``), and resume says so when the folder lacks what it needs."""
    run_dir = Path(run_dir)
    try:
        names = {p.name for p in run_dir.iterdir() if not is_temporary(p.name)}
        if not names or (run_dir / REP_DIR).is_symlink():
            return False
        allowed, copies = {LOCK_NAME, REP_DIR}, set()
        if "metadata.json" in names:
            meta = read_metadata(run_dir)
            if not isinstance(meta, dict) or "run_key" not in meta or "finished" in meta:
                return False
            inputs = meta.get("inputs", {})
            copies = {posixpath.normpath(n) for n in inputs if isinstance(n, str) and input_name(n) == n}
            allowed |= {"metadata.json", "scenario.toml"} | {n.split("/")[0] for n in copies}
        if not names <= allowed:
            return False
        if REP_DIR in names and any(not is_temporary(p.name) for p in (run_dir / REP_DIR).iterdir()):
            return False  # a replication started: resume it
        for top in {n.split("/")[0] for n in copies} & names:
            if (run_dir / top).is_dir() and not (run_dir / top).is_symlink():
                for folder, _, files in os.walk(run_dir / top):
                    for f in files:
                        rel = (Path(folder) / f).relative_to(run_dir).as_posix()
                        if rel not in copies and not is_temporary(f):
                            return False
    except (OSError, ValueError, AttributeError, TypeError):
        return False
    return True


def clear_start(run_dir: Path) -> None:
    """Remove what a run killed while starting left in ``run_dir`` (see
    :func:`stopped_while_starting`), but for ``.lock``: call it holding the lock."""
    copies: set[str] = set()
    try:
        inputs = read_metadata(run_dir).get("inputs", {})
        copies = {posixpath.normpath(n) for n in inputs if isinstance(n, str) and input_name(n) == n}
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    remove_stale_temporaries(run_dir)
    shutil.rmtree(run_dir / REP_DIR, ignore_errors=True)
    for name in sorted(copies, key=lambda n: -n.count("/")):
        (run_dir / name).unlink(missing_ok=True)
        parts = name.split("/")[:-1]
        while parts:  # the folders made for it, deepest first, once empty
            try:
                (run_dir / "/".join(parts)).rmdir()
            except OSError:
                break
            parts.pop()
    for name in ("scenario.toml", "metadata.json"):
        (run_dir / name).unlink(missing_ok=True)


def refuse_unstarted(run_dir: Path, bad: str) -> None:
    """For resume: one line saying to start the run again, if ``run_dir`` stopped while
    starting (:func:`stopped_while_starting`)."""
    if not stopped_while_starting(run_dir):
        return
    try:
        scenario = read_metadata(run_dir).get("scenario_path")
    except (OSError, ValueError, AttributeError):
        scenario = None
    file = shell_word(scenario) if isinstance(scenario, str) and scenario else "FILE"
    raise LdpSimError(
        f"{bad} a run directory whose start finished (it stopped while starting, before any replication: "
        f"start it again with: ldpsim run {file} --out {shell_word(run_dir)})"
    )


def check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LdpSimError(f"--workers: got {workers!r}, expected an integer >= 1")


#: Most shards a replication may be cut into.
MAX_SHARDS = 1_000_000


def check_shards(study: Study | None, shards: int) -> None:
    """One line naming ``--shards`` unless it is a number the study (if given) can cut its
    replications into."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise LdpSimError(f"--shards: got {shards!r}, expected an integer from 1 to {MAX_SHARDS:,}")
    why = study.unshardable() if shards > 1 and study is not None else None
    if why:
        raise LdpSimError(f"--shards: got {shards}, expected 1 {why}")


def refuse_used(run_dir: Path, option: str, ignore: tuple[str, ...] = ()) -> None:
    if run_dir.exists() and (not run_dir.is_dir() or any(p.name not in ignore for p in run_dir.iterdir())):
        raise LdpSimError(
            f"{option}: got {str(run_dir)!r}, expected a new or empty directory (use --resume to continue)"
        )


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
        except BaseException:  # Ctrl-C as the folder is made: __exit__ will not run, so undo here
            self._remove_made()
            raise
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None:
            return False
        self.undo()
        if isinstance(exc, OSError):
            raise LdpSimError(self._message(exc)) from None
        return False

    def undo(self) -> None:
        """Remove what this process made (see the class) and release the lock: for a start
        that failed, or a run refused before any replication finished."""
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
    options: RunOptions,
    lock: DirectoryLock,
    *,
    shared: Any = None,
    made: Creation | None = None,
) -> Outcome:
    """Run what is missing of the study in ``run_dir`` and write its report. ``shared``:
    the study's shared values if the caller computed them already; ``made``: the creation
    of a new run's folder, undone if the run is refused (an LdpSimError) before any
    replication finished, so that bad input leaves no half-made folder."""
    total = study.replications
    key = meta["run_key"]
    workers, executor, shards, interrupt_after = (
        options.workers,
        options.executor,
        options.shards,
        options.interrupt_after,
    )
    progress, report = options.progress, options.report
    own = executor is None
    done = 0
    finished_now = 0
    stopped = False
    try:
        todo = [r for r in range(total) if not _finished(run_dir, r, key)]
        done = total - len(todo)
        if own:
            executor = SequentialExecutor() if workers == 1 else start_pool(workers)
        assert executor is not None  # the caller's, or the one started just above
        finished_now = 0
        if made is None:
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
                f"free some space, then resume with: ldpsim run --resume {shell_word(run_dir)}"
            ) from None
        if isinstance(exc, LdpSimError) and made is not None and finished_now == 0:
            made.undo()  # bad input refused before any replication: no half-made folder
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
    by the submissions, with Ctrl-C held back meanwhile (:func:`ldpsim._pool.start_pool`).
    ``cancel``: cancel what is left when the caller stops early (not for a pool the caller
    stops itself with :func:`ldpsim._pool.stop_pool`, which cancels it)."""
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
        futures = {
            executor.submit(study.run_shard, r, seed, shared, piece): (r, i)
            for r, pieces in plans.items()
            for i, piece in enumerate(pieces)
        }
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
    record = {
        "replication": index,
        "rows": len(frame),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "run_key": key,
    }
    write_bytes(_record_path(run_dir, index), (json.dumps(record, sort_keys=True) + "\n").encode())


def _finished(run_dir: Path, index: int, key: str) -> bool:
    """Whether replication ``index`` is done: its record exists and its file matches it. A
    file without a record is unfinished (it is run again); a record whose file does not
    match is an error (something changed the file after the run wrote it)."""
    try:
        record = json.loads(read_run_file(_record_path(run_dir, index), METADATA_LIMIT))
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        record = None
    name = f"{REP_DIR}/{_rep_path(run_dir, index).name}"
    if not isinstance(record, dict) or record.get("run_key") != key:
        raise LdpSimError(
            f"--resume: got {str(run_dir)!r}, expected {REP_DIR}/{_record_path(run_dir, index).name} as this run "
            f"wrote it; delete it and {name} to run replication {index} again"
        )
    why = None
    try:
        data = read_run_file(_rep_path(run_dir, index), RESULTS_LIMIT)
    except FileNotFoundError:
        data = None
    except OSError as exc:
        data, why = None, describe_os_error(exc)
    if data is None or len(data) != record.get("bytes") or hashlib.sha256(data).hexdigest() != record.get("sha256"):
        got = why or ("no file" if data is None else f"{len(data):,} bytes")
        raise LdpSimError(
            f"--resume: got {str(run_dir)!r} with {name} changed since the run wrote it ({got}, expected "
            f"{record.get('bytes', 0):,} bytes with the recorded SHA-256); delete it and its .json record to run "
            f"replication {index} again"
        )
    return True


def check_results(run_dir: Path, total: int, bad: str) -> None:
    """results.csv as the run wrote it: the concatenation of its replication files (header
    once), each as its record says. A results.csv cut short or edited, or a replication file
    missing or changed beside its record, is refused in one line (a report built from them
    would state other numbers); a run folder with no replication record at all (an older
    layout, or one shared without them) is not checked."""
    if not any(_record_path(run_dir, r).exists() for r in range(total)):
        return
    parts = []
    for r in range(total):
        name = f"{REP_DIR}/{_rep_path(run_dir, r).name}"
        try:
            record = json.loads(read_run_file(_record_path(run_dir, r), METADATA_LIMIT))
            data = read_run_file(_rep_path(run_dir, r), RESULTS_LIMIT)
        except (OSError, ValueError):
            record, data = None, b""
        if not isinstance(record, dict) or hashlib.sha256(data).hexdigest() != record.get("sha256"):
            raise LdpSimError(
                f"{bad} {name} and its record as the run wrote them (missing or changed); run the scenario again"
            )
        parts.append(data if r == 0 else data.split(b"\n", 1)[1] if b"\n" in data else b"")
    want = hashlib.sha256()
    size = 0
    for part in parts:
        want.update(part)
        size += len(part)
    got = read_run_file(run_dir / "results.csv", RESULTS_LIMIT)
    if len(got) != size or hashlib.sha256(got).hexdigest() != want.hexdigest():
        raise LdpSimError(
            f"{bad} results.csv as the run wrote it ({len(got):,} bytes that are not the {size:,} bytes of its "
            f"{total} replication file(s) in {REP_DIR}/); restore it from them or run the scenario again"
        )


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
        "executor": type(executor).__name__
        if executor is not None
        else ("sequential" if workers == 1 else "process_pool"),
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
