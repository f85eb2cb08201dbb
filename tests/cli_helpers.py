"""Running the command line in-process: the same ``main(argv)`` as ``python -m ldpsim``,
with its exit status and its two output streams captured, without a new interpreter (a
subprocess costs about a second of imports per call). A few tests keep true subprocesses
end to end (the installed entry point, a real pipe, signals, concurrent writers, a real full
disk with its resume); everything else uses :func:`run_cli`.

What a command may change in the interpreter is put back afterwards, so one test's run
cannot affect the next: the working directory, ``sys.argv`` (set to the command line, as
the metadata of a real run records it), the warning filters, the SIGINT and SIGTERM
handlers and any pyplot figure left open."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import warnings
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

    args = [str(a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_argv = os.getcwd(), sys.argv
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["ldpsim", *args]
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old_cwd)
        sys.argv = old_argv
        for sig, handler in handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    return CliResult(int(code), out.getvalue(), err.getvalue())
