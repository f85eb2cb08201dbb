"""What every report's tables share: Markdown tables and reading results files back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.errors import LdpSimError


def md_table(df: pd.DataFrame, floatfmt: str = "{:.5g}") -> str:
    """A data frame as a Markdown table: floats with ``floatfmt``, NaN and missing values empty."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False, name=None):  # plain tuples: labels are never field names
        cells = []
        for v in row:
            if isinstance(v, (float, np.floating)):
                cells.append("" if np.isnan(v) else floatfmt.format(v))
            else:
                cells.append("" if v is None or v is pd.NA else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def read_csv(path: str | Path, dtype: dict[str, Any], na: list[str]) -> pd.DataFrame:
    """A results file as ldpsim wrote it: ``dtype`` columns as given (labels stay text, so
    "1", "01" and "" stay distinct), empty cells of the ``na`` columns NaN; an unreadable
    file is one LdpSimError naming it."""
    from ldpsim._files import open_input

    try:
        with open_input(path) as f:  # a file object: pandas would expand a leading "~" of a path
            return pd.read_csv(f, dtype=dtype, keep_default_na=False, na_values={c: [""] for c in na})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise LdpSimError(f"{path}: got a results file pandas cannot read ({' '.join(str(exc).split())}), expected CSV as ldpsim wrote it") from None


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
