"""Reproductions of the source papers' figures and tables (``ldpsim reproduce NAME``).

Each reproduction is registered under a name with a one-line description; it writes CSV
and PNG files to an output folder (default ``reports/reproduce/NAME``) and returns a
summary table with our numbers beside the paper's (columns ``paper``, ``ours``,
``agrees``).

>>> from ldpsim.reproduce import names, reproduce
>>> run = reproduce("kov-fig5", instances=5, out="/tmp/fig5")  # doctest: +SKIP
"""

import importlib as _importlib
import pkgutil as _pkgutil

from ldpsim.reproduce._registry import (
    DEFAULT_INSTANCES,
    DEFAULT_SEED,
    REPRODUCTIONS,
    Reproduction,
    ReproductionRun,
    format_summary,
    get,
    names,
    register,
    reproduce,
)

# Every public module of this package registers its reproductions when imported; a new
# reproduction is a new module here, nothing else to edit.
for _module in sorted(m.name for m in _pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    _importlib.import_module(f"{__name__}.{_module}")

__all__ = [
    "DEFAULT_INSTANCES",
    "DEFAULT_SEED",
    "REPRODUCTIONS",
    "Reproduction",
    "ReproductionRun",
    "format_summary",
    "get",
    "names",
    "register",
    "reproduce",
]
