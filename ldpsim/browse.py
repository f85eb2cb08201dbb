"""Reports to open in a browser: rebuild a run directory's report files (report.html,
summary.md, figures) from its results.csv, rebuild a reproduction folder's summary.md and
report.html from its files, and write the index.html of a folder of runs and reproductions
(``ldpsim report [DIR] [--open]``).

A run's report is re-rendered by its study (:mod:`ldpsim.sim.studies`), rebuilt from the
run's own scenario.toml as resuming does, so the files are those an uninterrupted run
of this version of ldpsim writes. A reproduction's are rendered again from its
summary.csv, metadata.json and figures (:mod:`ldpsim.report.reproduction`), nothing
recomputed, so they are the bytes ``ldpsim reproduce`` wrote. The pages themselves are
rendered in :mod:`ldpsim.report.html`.
"""

from __future__ import annotations

import hashlib
import sys
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path

from ldpsim._files import DirectoryLock, describe_os_error, shell_word, write_bytes
from ldpsim.errors import LdpSimError
from ldpsim.report.html import index_html, is_reproduction_dir, is_run_dir, report_dirs
from ldpsim.report.reproduction import render
from ldpsim.runs import (
    RESULTS_LIMIT,
    check_inputs,
    check_results,
    check_run_file,
    check_study_inputs,
    metadata_fields,
    read_metadata,
    read_scenario_text,
    run_key,
)
from ldpsim.sim.studies import _parsers

__all__ = ["Rebuilt", "rebuild", "rebuild_reproduction", "rebuild_run", "refresh_index", "write_index"]

OPTION = "ldpsim report"


@dataclass
class Rebuilt:
    """What :func:`rebuild` did: the folders re-rendered (``runs``: run directories and
    reproduction folders alike; ``reproductions``: the reproduction folders among them),
    those skipped (with why), the index written (if any) and the page to open."""

    runs: list[Path] = field(default_factory=list)
    reproductions: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    index: Path | None = None
    page: Path | None = None


def rebuild_run(run_dir: str | Path) -> list[Path]:
    """Re-render the report files of one finished run directory from its results.csv and
    scenario.toml (with the run's seed and replications); the files written, in order.
    Any problem is one LdpSimError naming the directory."""
    run_dir = Path(run_dir)
    bad = f"{OPTION}: got {str(run_dir)!r}, expected"
    parsers = _parsers()  # run kind -> parser, from the one registry (ldpsim.sim.kinds)
    if not is_run_dir(run_dir):
        raise LdpSimError(f"{bad} a run directory made by ldpsim run (metadata.json, results.csv, scenario.toml)")
    try:
        lock = DirectoryLock(run_dir, OPTION).acquire()
    except OSError as exc:
        raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
    try:
        try:
            meta = read_metadata(run_dir)  # bounded, regular files (not links to /dev/zero, say)
            source = read_scenario_text(run_dir / "scenario.toml")
            check_run_file(run_dir / "results.csv", RESULTS_LIMIT)
            # each field of the type a run writes (a kind of [] once raised TypeError here)
            kind, total, seed, digest, _, _ = metadata_fields(meta, bad, next(iter(parsers)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
            raise LdpSimError(
                f"{bad} a run directory made by ldpsim run (readable metadata.json and scenario.toml)"
            ) from None
        if kind not in parsers:
            raise LdpSimError(f"{bad} a run of a kind this version knows ({', '.join(parsers)}), not {kind!r}")
        if not meta.get("finished"):
            raise LdpSimError(f"{bad} a finished run (finish it with: ldpsim run --resume {shell_word(run_dir)})")
        if hashlib.sha256(source.encode()).hexdigest() != digest:
            raise LdpSimError(f"{bad} its scenario.toml unchanged since the run")
        if run_key(kind, digest, seed, total) != meta.get("run_key"):  # the report would state an edited seed
            raise LdpSimError(f"{bad} metadata.json as the run wrote it (its seed or replications were changed)")
        check_inputs(run_dir, meta, bad)  # the population table the results came from, say
        check_results(run_dir, total, bad)  # not cut short or edited since the run
        study = parsers[kind](source, str(run_dir / "scenario.toml"))
        check_study_inputs(study, meta, bad)
        if study.replications != total:
            study = study.with_replications(total)
        results = study.read_results(run_dir / "results.csv")
        files, _ = study.render_report(results, seed)
        return _write_files(run_dir, files, f"{bad} a run directory that can be written")
    finally:
        lock.release()


def rebuild_reproduction(folder: str | Path) -> list[Path]:
    """Re-render summary.md and report.html of one reproduction folder from its summary.csv,
    metadata.json and figures (nothing is recomputed); the files written, in order. Any
    problem is one LdpSimError naming the folder or the file at fault."""
    folder = Path(folder)
    bad = f"{OPTION}: got {str(folder)!r}, expected"
    if not is_reproduction_dir(folder):
        raise LdpSimError(f"{bad} a reproduction folder made by ldpsim reproduce (summary.csv, metadata.json)")
    try:
        files = render(folder)
    except OSError as exc:
        raise LdpSimError(f"{bad} a reproduction folder that can be read ({describe_os_error(exc)})") from None
    return _write_files(folder, files, f"{bad} a reproduction folder that can be written")


def _write_files(folder: Path, files: dict[str, bytes], expected: str) -> list[Path]:
    """Write ``files`` (name -> bytes) into ``folder``, each atomically; the paths written, in
    order. An OSError is one LdpSimError: ``expected`` and the system's reason."""
    written = []
    try:
        for name, data in files.items():
            write_bytes(folder / name, data)
            written.append(folder / name)
    except OSError as exc:
        raise LdpSimError(f"{expected} ({describe_os_error(exc)})") from None
    return written


def write_index(root: str | Path) -> Path:
    """Write ``root/index.html``: every run directory and reproduction folder under ``root``,
    with links."""
    root = Path(root)
    path = root / "index.html"
    try:
        write_bytes(path, index_html(root))
    except OSError as exc:
        raise LdpSimError(
            f"{OPTION}: got {str(root)!r}, expected a folder that can be written ({describe_os_error(exc)})"
        ) from None
    return path


def refresh_index(folder: str | Path, root: str | Path = "reports") -> Path | None:
    """After a command has written ``folder`` (a run directory, a reproduction folder):
    rewrite ``root/index.html`` if ``folder`` lies under ``root``. Returns the index written,
    or None when ``folder`` is elsewhere or the index cannot be written (the folder is whole
    all the same, and ``ldpsim report`` writes the index later)."""
    folder, root = Path(folder), Path(root)
    try:
        if not root.is_dir() or not folder.resolve().is_relative_to(root.resolve()):
            return None
        return write_index(root)
    except (LdpSimError, OSError):
        return None


def rebuild(path: str | Path = "reports", open_browser: bool = False, *, quiet: bool = False) -> Rebuilt:
    """``ldpsim report [DIR] [--open]``: if ``path`` is a run directory or a reproduction
    folder, re-render its report; otherwise re-render every finished run and every
    reproduction under the folder ``path`` (those that cannot be re-rendered, e.g.
    unfinished runs or runs made by an older layout, are skipped with a line on stderr and
    keep their files) and write ``path/index.html``. With ``open_browser``, open the run's
    or reproduction's report.html, or the index, in the default browser."""
    path = Path(path)
    out = Rebuilt()
    if is_run_dir(path) or is_reproduction_dir(path):
        _rebuild_one(path, out)
        out.page = path / "report.html"
    elif path.is_dir():
        for folder in report_dirs(path):
            try:
                _rebuild_one(folder, out)
            except LdpSimError as exc:
                out.skipped.append((folder, str(exc)))
                if not quiet:
                    print(f"skipped: {exc}", file=sys.stderr)
        out.index = out.page = write_index(path)
    else:
        raise LdpSimError(
            f"{OPTION}: got {str(path)!r}, expected a run directory, a reproduction folder or a folder of "
            "them (default: reports)"
        )
    if open_browser and out.page is not None:
        webbrowser.open(out.page.resolve().as_uri())
    return out


def _rebuild_one(folder: Path, out: Rebuilt) -> None:
    if is_run_dir(folder):
        rebuild_run(folder)
    else:
        rebuild_reproduction(folder)
        out.reproductions.append(folder)
    out.runs.append(folder)
