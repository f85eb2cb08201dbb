"""Running the command line in-process: the same ``main(argv)`` as ``python -m ldpsim``,
with its exit status and its two output streams captured, without a new interpreter (a
subprocess costs about a second of imports per call). A few tests keep true subprocesses
end to end (signals, the installed entry point); everything else uses :func:`run_cli`."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CliResult:
    """What a command returned and printed (the fields of ``subprocess.CompletedProcess``
    that the tests read)."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*argv: Any, cwd: str | Path | None = None) -> CliResult:
    """``ldpsim ARGV...`` in this process, in directory ``cwd`` (default: the current one)."""
    from ldpsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old)
    return CliResult(int(code), out.getvalue(), err.getvalue())
