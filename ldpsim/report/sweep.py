"""The tables and the figure of a parameter sweep (``ldpsim sweep``): pure functions of the
sweep's tidy table (the swept keys as leading columns, then every row of each grid point's
results.csv), with no knowledge of how the points were run.

- :func:`error_summary`: per grid point and frequency task, the measured root mean squared
  error of the final estimates (over replications and categories) next to the exact one,
  the root mean square of the exact standard errors the ``std_error`` rows carry as
  ``theory`` (each at the number of reports its replication received).
- :func:`error_figure`: that error against each swept key, one panel per key, with the exact
  value drawn beside the measured one.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.report.figures import plt, png_bytes, quiet_figures, short_label
from ldpsim.report.tables import rms

#: The columns of :func:`error_summary` after the swept keys.
SUMMARY_COLUMNS = ["task", "replications", "n_received", "rmse", "theory_rmse", "ratio"]
#: The columns of a survey's results that the summary reads (other kinds get no summary).
SURVEY_COLUMNS = {
    "replication",
    "checkpoint",
    "reason",
    "n_received",
    "task",
    "quantity",
    "category",
    "estimate",
    "truth",
    "theory",
}
#: Most lines a panel draws one per combination of the other keys' values (and task); beyond
#: that a panel draws the root mean square over the other keys instead.
MAX_LINES = 6


def error_summary(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """One row per grid point (the values of ``keys``, in the table's order) and frequency
    task: replications, mean reports received at the end, ``rmse`` (measured: the root mean
    square of estimate - truth over replications and categories, at the final checkpoint),
    ``theory_rmse`` (exact: the root mean square of the exact standard errors of the same
    estimates) and their ratio. Empty (with these columns) when no point has frequency rows
    (or the table is not a survey's)."""
    keys = list(keys)
    columns = keys + SUMMARY_COLUMNS
    if table.empty or not SURVEY_COLUMNS <= set(table.columns):  # the error of survey estimates only
        return pd.DataFrame(columns=columns)
    point = _point_ids(table, keys)
    t = table.assign(_point=point)
    final = t[t["reason"] == "end"] if "reason" in t.columns and (t["reason"] == "end").any() else t
    freq = final[final["quantity"] == "frequency"]
    if freq.empty:
        return pd.DataFrame(columns=columns)
    on = ["_point", "replication", "checkpoint", "task", "category"]
    se = final[final["quantity"] == "std_error"][on + ["theory"]].rename(columns={"theory": "theory_se"})
    f = freq.merge(se, on=on, how="left")
    f = f[f["estimate"].notna()]
    f = f.assign(
        _sq=(f["estimate"].astype(float) - f["truth"].astype(float)) ** 2, _tsq=f["theory_se"].astype(float) ** 2
    )
    rows = []
    for (pid, task), g in f.groupby(["_point", "task"], sort=False):
        first = g.iloc[0]
        rmse = math.sqrt(float(g["_sq"].mean()))
        theory = math.sqrt(float(g["_tsq"].mean())) if g["_tsq"].notna().all() else float("nan")
        rows.append(
            {
                **{k: first[k] for k in keys},
                "task": task,
                "replications": int(g["replication"].nunique()),
                "n_received": float(g.drop_duplicates("replication")["n_received"].mean()),
                "rmse": rmse,
                "theory_rmse": theory,
                "ratio": rmse / theory if theory > 0 else float("nan"),
                "_point": pid,
            }
        )
    out = pd.DataFrame(rows)
    out = out.sort_values("_point", kind="stable").drop(columns="_point").reset_index(drop=True)
    return out[columns]


def _point_ids(table: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """The grid point of every row, numbered in the order points first appear."""
    if not keys:
        return np.zeros(len(table), dtype=np.int64)
    codes = table[keys].astype(str).agg("\x1f".join, axis=1)
    return pd.factorize(codes, sort=False)[0]


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v)) for v in values)


def error_figure(summary: pd.DataFrame, keys: Sequence[str], title: str = "") -> bytes | None:
    """PNG bytes: one panel per swept key, the measured RMS error (solid, dots) and the exact
    one (dashed, same colour) against that key's values. With other keys swept too, one line
    per combination of their values (and per task when several ran), or, when that makes
    more than :data:`MAX_LINES` lines, the root mean square over the other keys' values (the
    panel's title says which). None when the summary is empty."""
    keys = list(keys)
    if summary.empty or not keys:
        return None
    n = len(keys)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    with quiet_figures():
        fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
        for i, key in enumerate(keys):
            _panel(axes[i // cols][i % cols], summary, key, [k for k in keys if k != key])
        for j in range(n, rows * cols):
            axes[j // cols][j % cols].set_visible(False)
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        return png_bytes(fig)


def _panel(ax: Any, summary: pd.DataFrame, key: str, others: list[str]) -> None:
    order = list(dict.fromkeys(summary[key].tolist()))  # the key's values in grid order
    numeric = _numeric(order)
    position = {v: (float(v) if numeric else float(i)) for i, v in enumerate(order)}
    groups = others + (["task"] if summary["task"].nunique() > 1 else [])
    data = summary
    note = ""
    if groups and summary.groupby(groups, sort=False).ngroups > MAX_LINES:
        keep = ["task"] if "task" in groups else []
        data = (
            summary.groupby(keep + [key], sort=False)
            .agg(rmse=("rmse", rms), theory_rmse=("theory_rmse", rms))
            .reset_index()
        )
        groups = keep
        note = f"RMS over {', '.join(others)}"
    elif others:
        note = f"one line per value of {', '.join(others)}"
    series = [((), data)] if not groups else list(data.groupby(groups, sort=False))
    colors = plt.cm.tab10(np.arange(10))
    for i, (label, g) in enumerate(series):
        c = colors[i % 10]
        x = g[key].map(position).to_numpy(dtype=float)
        name = ", ".join(f"{k}={v}" for k, v in zip(groups, label if isinstance(label, tuple) else (label,)))
        name = short_label(name, 36)
        ax.plot(x, g["rmse"], "o-", ms=4, color=c, label=f"{name + ': ' if name else ''}measured")
        if g["theory_rmse"].notna().any():
            ax.plot(x, g["theory_rmse"], "--", color=c, label=f"{name + ': ' if name else ''}exact")
    values = pd.concat([data["rmse"], data["theory_rmse"]]).dropna()
    if len(values) and (values > 0).all():
        ax.set_yscale("log")
    if numeric and all(float(v) > 0 for v in order) and max(map(float, order)) >= 10 * min(map(float, order)):
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([short_label(v, 16) for v in order], rotation=20, fontsize=8)
    ax.set_xlabel(key)
    ax.set_ylabel("RMS error of the final frequency estimates")
    ax.set_title(f"error against {key}" + (f"\n({note})" if note else ""), fontsize=9)
    ax.legend(fontsize=7)


# ----------------------------------------------------------------------------- fake respondents
#: The columns of :func:`attack_summary` after the swept keys.
ATTACK_COLUMNS = ["attacker", "gain", "gain_exact", "detector", "detected", "median_time"]


def _attack_rows(table: pd.DataFrame) -> pd.DataFrame:
    if "task" not in table.columns:
        return table.iloc[0:0]
    task = table["task"].astype(str)
    return table[((task == "attack") | task.str.endswith(":attack")) & (table["reason"] == "end")]


def attack_summary(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per grid point, attacker and detector, at the end (means over replications): the gain
    and its exact expectation, and for each detector the share of replications that raised
    the alarm and the median time it did (empty without ``[[attackers]]``)."""
    rows = _attack_rows(table)
    keys = list(keys)
    if rows.empty:
        return pd.DataFrame(columns=keys + ATTACK_COLUMNS)
    gain = rows[rows["quantity"] == "gain"]
    gains = (
        gain.groupby(keys + ["category"], sort=False)
        .agg(gain=("estimate", "mean"), gain_exact=("theory", "mean"))
        .reset_index()
        .rename(columns={"category": "attacker"})
    )
    at = rows[rows["quantity"] == "detected_at"]
    found = (
        at.groupby(keys + ["category"], sort=False)["estimate"]
        .agg(detected=lambda s: float(s.notna().mean()), median_time=lambda s: float(s.dropna().median()))
        .reset_index()
        .rename(columns={"category": "detector"})
    )
    if found.empty:
        gains["detector"], gains["detected"], gains["median_time"] = "", np.nan, np.nan
        return gains[keys + ATTACK_COLUMNS]
    out = gains.merge(found, on=keys, how="left")
    return out[keys + ATTACK_COLUMNS]


def attack_figure(summary: pd.DataFrame, keys: Sequence[str], title: str = "") -> bytes | None:
    """PNG bytes: the gain and the detection time against the swept keys. With two numeric
    keys, surfaces (one heat map of the measured gain per attacker, one of the median detection
    time per detector, a cell left blank where the detector never raised the alarm); otherwise
    one panel per key, gain (measured and exact) and detection time against it, averaged
    over the other keys. None without attackers."""
    keys = list(keys)
    if summary.empty or not keys:
        return None
    with quiet_figures():
        if len(keys) == 2 and all(_numeric(summary[k].tolist()) for k in keys):
            fig = _surfaces(summary, keys)
        else:
            fig = _attack_lines(summary, keys)
        if title:
            fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        return png_bytes(fig)


def _surfaces(summary: pd.DataFrame, keys: list[str]) -> Any:
    a, b = keys
    xs = sorted(set(summary[a].astype(float)))
    ys = sorted(set(summary[b].astype(float)))
    attackers = list(dict.fromkeys(summary["attacker"]))
    detectors = [d for d in dict.fromkeys(summary["detector"]) if isinstance(d, str) and d]
    panels = [("gain", name, "attacker") for name in attackers] + [("median_time", d, "detector") for d in detectors]
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    for ax, (column, name, by) in zip(axes.ravel(), panels):
        part = summary[summary[by] == name]
        grid = np.full((len(ys), len(xs)), np.nan)
        for _, row in part.drop_duplicates(subset=[a, b]).iterrows():
            grid[ys.index(float(row[b])), xs.index(float(row[a]))] = row[column]
        image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([f"{v:g}" for v in xs], fontsize=8)
        ax.set_yticks(range(len(ys)))
        ax.set_yticklabels([f"{v:g}" for v in ys], fontsize=8)
        ax.set_xlabel(a)
        ax.set_ylabel(b)
        what = (
            f"gain of {short_label(name, 30)}"
            if column == "gain"
            else f"median detection time\n{short_label(name, 30)} (blank: no alarm)"
        )
        ax.set_title(what, fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def _attack_lines(summary: pd.DataFrame, keys: list[str]) -> Any:
    fig, axes = plt.subplots(2, len(keys), figsize=(5.0 * len(keys), 7.0), squeeze=False)
    for i, key in enumerate(keys):
        order = list(dict.fromkeys(summary[key].tolist()))
        numeric = _numeric(order)
        pos = {v: (float(v) if numeric else float(j)) for j, v in enumerate(order)}
        gains = summary.drop_duplicates(subset=keys + ["attacker"])
        for name, g in gains.groupby("attacker", sort=False):
            m = g.groupby(key, sort=False)[["gain", "gain_exact"]].mean()
            x = [pos[v] for v in m.index]
            axes[0][i].plot(x, m["gain"], "o-", ms=4, label=f"{name}: measured")
            axes[0][i].plot(x, m["gain_exact"], "--", label=f"{name}: exact")
        for name, g in summary.dropna(subset=["median_time"]).groupby("detector", sort=False):
            m = g.groupby(key, sort=False)["median_time"].mean()
            axes[1][i].plot([pos[v] for v in m.index], m.to_numpy(), "o-", ms=4, label=str(name))
        for ax, label in ((axes[0][i], "gain (mean over the other keys)"), (axes[1][i], "median detection time")):
            ax.set_xlabel(key)
            ax.set_ylabel(label)
            if ax.has_data():
                ax.legend(fontsize=7)
            if not numeric:
                ax.set_xticks(range(len(order)))
                ax.set_xticklabels([short_label(v, 16) for v in order], rotation=20, fontsize=8)
    return fig
