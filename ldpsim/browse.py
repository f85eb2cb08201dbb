"""Reports to open in a browser: rebuild a run directory's report files (report.html,
summary.md, figures) from its results.csv, and write the index.html of a folder of runs
(``ldpsim report [DIR] [--open]``).

A run's report is re-rendered by its study (:mod:`ldpsim.sim.studies`), rebuilt from the
run's own scenario.toml as resuming does, so the files are those an uninterrupted run
of this version of ldpsim writes. The pages themselves are rendered in
:mod:`ldpsim.report.html`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path

from ldpsim._files import DirectoryLock, describe_os_error, write_bytes
from ldpsim.errors import LdpSimError

__all__ = ["Rebuilt", "rebuild", "rebuild_run", "write_index"]

OPTION = "ldpsim report"


@dataclass
class Rebuilt:
    """What :func:`rebuild` did: the run directories re-rendered, those skipped (with why),
    the index written (if any) and the page to open."""

    runs: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    index: Path | None = None
    page: Path | None = None


def rebuild_run(run_dir: str | Path) -> list[Path]:
    """Re-render the report files of one finished run directory from its results.csv and
    scenario.toml (with the run's seed and replications); the files written, in order.
    Any problem is one LdpSimError naming the directory."""
    from ldpsim.report.html import is_run_dir
    from ldpsim.sim.studies import _parsers

    run_dir = Path(run_dir)
    bad = f"{OPTION}: got {str(run_dir)!r}, expected"
    if not is_run_dir(run_dir):
        raise LdpSimError(f"{bad} a run directory made by ldpsim run (metadata.json, results.csv, scenario.toml)")
    try:
        lock = DirectoryLock(run_dir, OPTION).acquire()
    except OSError as exc:
        raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
    try:
        try:
            meta = json.loads((run_dir / "metadata.json").read_text(encoding="utf-8"))
            source = (run_dir / "scenario.toml").read_text(encoding="utf-8")
            kind = meta.get("kind", "survey")
            total, seed, digest = int(meta["replications"]), int(meta["seed"]), meta["scenario_sha256"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise LdpSimError(f"{bad} a run directory made by ldpsim run (readable metadata.json and scenario.toml)") from None
        parsers = _parsers()
        if kind not in parsers:
            raise LdpSimError(f"{bad} a run of a kind this version knows ({', '.join(parsers)}), not {kind!r}")
        if not meta.get("finished"):
            raise LdpSimError(f"{bad} a finished run (finish it with: ldpsim run --resume {run_dir})")
        if hashlib.sha256(source.encode()).hexdigest() != digest:
            raise LdpSimError(f"{bad} its scenario.toml unchanged since the run")
        study = parsers[kind](source, str(run_dir / "scenario.toml"))
        if study.replications != total:
            study = study.with_replications(total)
        results = study.read_results(run_dir / "results.csv")
        files, _ = study.render_report(results, seed)
        written = []
        try:
            for name, data in files.items():
                write_bytes(run_dir / name, data)
                written.append(run_dir / name)
        except OSError as exc:
            raise LdpSimError(f"{bad} a run directory that can be written ({describe_os_error(exc)})") from None
        return written
    finally:
        lock.release()


def write_index(root: str | Path) -> Path:
    """Write ``root/index.html``: every run directory under ``root``, with links."""
    from ldpsim.report.html import index_html

    root = Path(root)
    path = root / "index.html"
    try:
        write_bytes(path, index_html(root))
    except OSError as exc:
        raise LdpSimError(f"{OPTION}: got {str(root)!r}, expected a folder that can be written ({describe_os_error(exc)})") from None
    return path


def rebuild(path: str | Path = "reports", open_browser: bool = False, *, quiet: bool = False) -> Rebuilt:
    """``ldpsim report [DIR] [--open]``: if ``path`` is a run directory, re-render its report;
    otherwise re-render every finished run under the folder ``path`` (runs that cannot be
    re-rendered, e.g. unfinished or made by an older layout, are skipped with a line on
    stderr and keep their files) and write ``path/index.html``. With ``open_browser``, open
    the run's report.html, or the index, in the default browser."""
    from ldpsim.report.html import is_run_dir, run_dirs

    path = Path(path)
    out = Rebuilt()
    if is_run_dir(path):
        rebuild_run(path)
        out.runs.append(path)
        out.page = path / "report.html"
    elif path.is_dir():
        for run_dir in run_dirs(path):
            try:
                rebuild_run(run_dir)
                out.runs.append(run_dir)
            except LdpSimError as exc:
                out.skipped.append((run_dir, str(exc)))
                if not quiet:
                    print(f"skipped: {exc}", file=sys.stderr)
        out.index = out.page = write_index(path)
    else:
        raise LdpSimError(f"{OPTION}: got {str(path)!r}, expected a run directory or a folder of runs (default: reports)")
    if open_browser and out.page is not None:
        webbrowser.open(out.page.resolve().as_uri())
    return out
