"""Reproductions of the source papers' figures and tables (``ldpsim reproduce NAME``).

Each reproduction is registered under a name with a one-line description; it writes CSV
and PNG files to an output folder (default ``reports/reproduce/NAME``) and returns a
summary table with our numbers beside the paper's (columns ``paper``, ``ours``,
``agrees``).

>>> from ldpsim.reproduce import names, reproduce
>>> run = reproduce("kov-fig5", instances=5, out="/tmp/fig5")  # doctest: +SKIP
"""

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
from ldpsim.reproduce import kov  # noqa: F401  (registers the extremal-mechanisms reproductions)
from ldpsim.reproduce import stein  # noqa: F401  (registers the Chernoff-Stein exponent reproduction)
from ldpsim.reproduce import composition  # noqa: F401  (registers the composition-region reproduction)
from ldpsim.reproduce import multiparty  # noqa: F401  (registers the multi-party RR optimality reproduction)
from ldpsim.reproduce import clt  # noqa: F401  (registers the Dong et al. 2021 CLT reproduction)

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
