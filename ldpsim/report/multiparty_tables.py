"""Summaries of a multi-party results table (pandas aggregations and the tolerances of
:mod:`ldpsim.stats`): accuracy pooled over replications next to the exact optimum, paired
differences between protocols, transcript completion delays next to theory; what the
report and ``ldpsim run`` show."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.protocols import OBSERVER
from ldpsim.report.tables import read_csv
from ldpsim.stats import mean_tolerance, paired_tolerance

#: The columns of a multi-party results table, one row per replication x protocol x
#: receiver x quantity (party -1 is the observer).
RESULT_COLUMNS = [
    "replication", "protocol", "party", "role", "eps", "delta", "quantity", "estimate", "std_error",
    "tolerance", "alpha", "theory", "rounds", "within_tolerance",
]  # fmt: skip

LATENCY_QUANTITIES = ("completion_delay_mean", "completion_delay_p50", "completion_delay_p99", "completion_delay_max")


def read_results(path: str | Path) -> pd.DataFrame:
    """A multi-party results.csv as written (text columns kept as text, empty cells NaN)."""
    return read_csv(path, dtype={"protocol": str, "role": str, "quantity": str},
                    na=[c for c in RESULT_COLUMNS if c not in ("protocol", "role", "quantity")])  # fmt: skip


# ------------------------------------------------------------------------- summaries
def summarise(results: pd.DataFrame, scenario: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy (and paired differences between protocols) pooled over replications:
    measured, exact, standard error and tolerance at the scenario's alpha over the whole
    table; and completion delays per receiver, measured next to theory."""
    acc = results[results["quantity"].isin(("accuracy", "accuracy_difference"))]
    alpha = scenario.spec.simulation.alpha
    gain = scenario.task.gain
    keys = ["quantity", "protocol", "party"]
    n_rows = acc.groupby(keys, sort=False).ngroups
    rows = []
    for (quantity, protocol, party), g in acc.groupby(keys, sort=False):
        n = g["rounds"].to_numpy(dtype=float)
        m = g["estimate"].to_numpy(dtype=float)
        var = np.square(g["std_error"].to_numpy(dtype=float)) * n  # per-replication sample variance
        total = n.sum()
        mean = float((n * m).sum() / total)
        squares = float(((n - 1) * var + n * m**2).sum())
        pooled_var = max(squares - total * mean**2, 0.0) / max(total - 1, 1)
        se = math.sqrt(pooled_var / total)
        exact = float(g["theory"].iloc[0])
        if quantity == "accuracy":
            tol = mean_tolerance(gain, exact, int(total), alpha / n_rows)
        else:
            tol = paired_tolerance(2 * float(gain.max() - gain.min()), pooled_var, int(total), alpha / n_rows)
        rows.append({
            "quantity": quantity, "protocol": protocol, "party": "observer" if party == OBSERVER else str(int(party)),
            "eps": g["eps"].iloc[0], "delta": g["delta"].iloc[0], "measured": mean, "exact": exact,
            "std_error": se, "z": (mean - exact) / se if se > 0 else math.nan, "tolerance": tol,
            "within": bool(abs(mean - exact) <= tol) if math.isfinite(tol) else None, "rounds": int(total),
        })  # fmt: skip
    summary = pd.DataFrame(rows)
    lat = results[results["quantity"].isin(LATENCY_QUANTITIES)]
    agg = {"completion_delay_max": "max"}
    lrows = []
    for (party, quantity), g in lat.groupby(["party", "quantity"], sort=False):
        how = agg.get(quantity, "mean")
        lrows.append({"party": "observer" if party == OBSERVER else str(int(party)), "quantity": quantity,
                      "measured": float(getattr(g["estimate"], how)()), "theory": float(g["theory"].iloc[0])})  # fmt: skip
    latency = pd.DataFrame(lrows)
    if not latency.empty:
        latency = latency.pivot_table(index="party", columns="quantity", values=["measured", "theory"], sort=False, dropna=False)
        latency.columns = [f"{q.removeprefix('completion_delay_')}_{kind}" for kind, q in latency.columns]
        order = [f"{q.removeprefix('completion_delay_')}_{kind}" for q in LATENCY_QUANTITIES for kind in ("measured", "theory")]
        latency = latency[[c for c in order if c in latency.columns]].dropna(axis=1, how="all").reset_index()
    delivered = results[results["quantity"] == "messages_delivered"]
    if not latency.empty:
        counts = delivered.groupby("party", sort=False)["estimate"].sum()
        expected = delivered.groupby("party", sort=False)["theory"].sum()
        latency["messages"] = [int(counts[OBSERVER if p == "observer" else int(p)]) for p in latency["party"]]
        latency["messages_expected"] = [int(expected[OBSERVER if p == "observer" else int(p)]) for p in latency["party"]]
    return summary, latency


# ------------------------------------------------------------------------- command line
def format_table(summary: pd.DataFrame, quantity: str = "accuracy") -> str:
    cols = ["protocol", "party", "eps", "delta", "measured", "exact", "std_error", "tolerance", "within"]
    return summary[summary["quantity"] == quantity][cols].to_string(index=False, float_format=lambda x: f"{x:.5f}")
