"""What every report's tables share: Markdown tables and reading results files back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim._files import open_input
from ldpsim.errors import LdpSimError

#: significant digits of every number a report table shows that is neither a count nor a
#: parameter as the scenario gives it (probabilities, frequencies, estimates, errors, times)
DIGITS = 4

#: columns that count things (clients, reports, rounds, intervals): integers with thousands
#: separators, never scientific notation; a mean of counts over replications keeps one decimal
COUNT_COLUMNS = frozenset(
    {
        "n",
        "n_received",
        "clients",
        "lost",
        "in_flight",
        "received",
        "stored_reports",
        "storage_truncated",
        "rounds",
        "messages",
        "messages_expected",
        "withheld",
        "replications",
        "intervals",
        "period_intervals",
        "change_intervals",
        "reports",
        "true_rank",
    }
)

#: columns of parameters as the scenario or the command states them (eps, delta): shortest form
PARAMETER_COLUMNS = frozenset({"eps", "delta"})

#: columns of integers that name rather than count (seeds, replications, checkpoints): no separators
ID_COLUMNS = frozenset(
    {"seed", "replication", "checkpoint", "ordinal", "period", "party", "instance", "index", "k", "df"}
)

#: the kinds a column can have: what :func:`cell_text` does with its numbers
KINDS = ("count", "number", "parameter", "id")


def rms(values: Any) -> float:
    """Root mean square of the values that are not NaN (NaN when there are none), scaled by
    the largest magnitude so that errors near the largest double (eps near 0) give their
    root mean square (or inf), never an overflow in the squares."""
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    if not x.size:
        return float("nan")
    top = float(np.max(np.abs(x)))
    if top == 0.0 or not np.isfinite(top):
        return top
    return top * float(np.sqrt(np.mean(np.square(x / top))))


def column_kind(column: Any) -> str:
    """The kind of a report table's column from its name (:data:`KINDS`): a count, a
    parameter, an identifier, or (everything else) a number shown to :data:`DIGITS`
    significant digits."""
    name = str(column)
    if name in COUNT_COLUMNS or name.startswith("n_") or name.endswith("_intervals"):
        return "count"
    if name in PARAMETER_COLUMNS:
        return "parameter"
    if name in ID_COLUMNS:
        return "id"
    return "number"


def number_text(value: float, digits: int = DIGITS) -> str:
    """A measured or computed number to ``digits`` significant digits, trailing zeros kept
    (``0.3000`` beside ``0.2997``); from 10^(digits-1) up, whole units with thousands
    separators (``11,461``, never ``1.146e+04``); below 10^-4, scientific (``3.528e-16``);
    zero is ``0``."""
    v = float(value)
    if np.isnan(v):
        return ""
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    if abs(v) >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    if abs(v) < 1e-4:
        return f"{v:.{digits - 1}e}"
    text = f"{v:#.{digits}g}"
    if abs(float(text)) >= 10 ** (digits - 1):  # rounded up to 10^(digits-1): whole units
        return f"{v:,.0f}"
    return text.rstrip(".")


def count_text(value: float) -> str:
    """A count: an integer with thousands separators (``133,348``); a mean of counts over
    replications that is not whole keeps one decimal (``133,348.5``)."""
    v = float(value)
    if np.isnan(v):
        return ""
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:,.0f}" if v.is_integer() else f"{v:,.1f}"


def cell_text(column: Any, value: Any, kind: str | None = None) -> str:
    """One cell of a report table (summary.md and report.html alike), by the kind of its
    column (``kind``, else :func:`column_kind` of ``column``): counts as integers with
    separators, parameters in their shortest form (``0.5``, ``1e-06``), identifiers as
    plain integers, every other number to :data:`DIGITS` significant digits; booleans as
    ``True``/``False``, text as it is, missing values empty."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer, float, np.floating)):
        kind = kind or column_kind(column)
        if isinstance(value, (float, np.floating)) and np.isnan(value):
            return ""
        if kind == "count":
            return count_text(float(value))
        if kind == "parameter":
            return f"{float(value):.6g}"
        if isinstance(value, (int, np.integer)):
            return str(int(value)) if kind == "id" else f"{int(value):,}"
        if kind == "id" and float(value).is_integer():
            return str(int(value))
        return number_text(float(value))
    return str(value)


def md_table(df: pd.DataFrame, kinds: dict[Any, str] | None = None) -> str:
    """A data frame as a Markdown table, every cell by :func:`cell_text` (one format per
    kind of column; ``kinds`` names the kind of columns whose names do not tell it, e.g.
    ``{"mean": "count"}`` for a table of mean counts); NaN and missing values empty."""
    cols = list(df.columns)
    kinds = kinds or {}
    lines = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False, name=None):  # plain tuples: labels are never field names
        cells = [cell_text(c, v, kinds.get(c)) for c, v in zip(cols, row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_csv(path: str | Path, dtype: dict[str, Any], na: list[str]) -> pd.DataFrame:
    """A results file as ldpsim wrote it: ``dtype`` columns as given (labels stay text, so
    "1", "01" and "" stay distinct), empty cells of the ``na`` columns NaN; an unreadable
    file is one LdpSimError naming it."""
    try:
        with open_input(path) as f:  # a file object: pandas would expand a leading "~" of a path
            return pd.read_csv(f, dtype=dtype, keep_default_na=False, na_values={c: [""] for c in na})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise LdpSimError(
            f"{path}: got a results file pandas cannot read "
            f"({' '.join(str(exc).split())}), expected CSV as ldpsim wrote it"
        ) from None


def describe_section(section: Any) -> str:
    """A scenario section as a reader writes it, not as a Python dict: ``poisson (duration
    7)``, ``lognormal (median 0.01, sigma 1)``; keys left unset are left out."""
    data = section.model_dump() if hasattr(section, "model_dump") else dict(section)
    kind = data.pop("kind", None)
    parts = [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in data.items() if v is not None]
    if kind is None:
        return ", ".join(parts)
    return f"{kind} ({', '.join(parts)})" if parts else str(kind)


def figures_and_files(figures: list[str], rows: str, more: list[str] | None = None) -> list[str]:
    """The end of a run's summary.md: its figures, then what its files hold; ``rows`` says
    what one row of results.csv is, ``more`` adds lines to the list of files."""
    out = ["## Figures", ""] + [f"![{name}]({name})" for name in figures] + [""] if figures else []
    return out + [
        "## Files",
        "",
        f"- `results.csv`: one row per {rows}",
        "- `replications/`: the same rows, one file per replication (written as each finishes), each with a "
        "`.json` record (rows, bytes, SHA-256) that resuming checks",
        "- `scenario.toml`: the scenario as run; `metadata.json`: seed, versions, command line, times",
        *(more or []),
        "",
    ]
