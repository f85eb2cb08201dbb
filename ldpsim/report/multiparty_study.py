"""The report of a multi-party scaling study (a ``[study]`` table in a multi-party file):
accuracy against the number of parties k, exact, large-k approximation and measured, one
panel per task; rendered to bytes.

Pure functions of the scenario, the seed and the results frame, so a resumed run writes the
same files as an uninterrupted one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ldpsim._text import sayer
from ldpsim._text import table as text_table
from ldpsim.report.figures import plt, png_bytes, quiet_figures
from ldpsim.report.html import TableText, run_html, table
from ldpsim.report.tables import figures_and_files, read_csv
from ldpsim.stats import mean_tolerance

FIGURE = "scaling.png"
#: Text columns of a study's results.csv (every other column is numeric, empty cells NaN).
TEXT_COLUMNS = ("protocol", "task", "receiver", "plan")
#: The numeric columns (empty cells are NaN).
NUMERIC_COLUMNS = [
    "replication",
    "k",
    "eps",
    "delta",
    "party",
    "exact",
    "large_k",
    "measured",
    "std_error",
    "rounds",
    "tolerance",
    "alpha",
]
POINT_KEYS = ["protocol", "task", "eps", "k", "receiver"]
#: What each task's large-k column is, for the summary.
LARGE_K = {
    "xor": "`(1 + TV^n) / 2`, exact at every k",
    "majority": "`1/2 + arcsin(rho) / pi` with `rho^2 = (4 n Var(E[x | y]) + k - n) / k` (the observer: `rho = "
    "tanh(eps/2)` for binary randomized response)",
    "sum": "`1 / sqrt(2 pi n E[Var(x | y)])` (local CLT; `cosh(eps/2) "
    "sqrt(2 / (pi n))` for binary randomized response)",
}


def read_study_results(path: str | Path) -> pd.DataFrame:
    """A study's results.csv as written (text columns kept as text, empty cells NaN;
    ``within`` as a nullable boolean)."""
    frame = read_csv(path, dtype={c: str for c in (*TEXT_COLUMNS, "within")}, na=NUMERIC_COLUMNS)
    frame["plan"] = frame["plan"].fillna("")
    frame["within"] = pd.array(
        [None if v in ("", None) or (isinstance(v, float) and math.isnan(v)) else v == "True" for v in frame["within"]],
        dtype="boolean",
    )
    return frame


def summarise_study(results: pd.DataFrame, scenario: Any) -> pd.DataFrame:
    """One row per point, pooled over replications: measured (weighted by rounds), its
    standard error, the exact value and the large-k approximation, and the tolerance at the
    scenario's alpha over the whole table (Bonferroni over the rows with both an exact value
    and a measurement)."""
    alpha = float(scenario.spec.simulation.alpha)
    rows = []
    for key, g in results.groupby(POINT_KEYS, sort=False):
        n = g["rounds"].to_numpy(dtype=float)
        total = float(n.sum())
        m = g["measured"].to_numpy(dtype=float)
        if total > 0:
            use = n > 0
            var = np.square(g["std_error"].to_numpy(dtype=float)[use]) * n[use]
            mean = float((n[use] * m[use]).sum() / total)
            squares = float(((n[use] - 1) * var + n[use] * m[use] ** 2).sum())
            se = math.sqrt(max(squares - total * mean**2, 0.0) / max(total - 1, 1) / total)
        else:
            mean = se = math.nan
        first = g.iloc[0]
        rows.append(
            {
                **dict(zip(POINT_KEYS, key)),
                "delta": float(first["delta"]),
                "plan": first["plan"],
                "exact": float(first["exact"]),
                "large_k": float(first["large_k"]),
                "measured": mean,
                "std_error": se,
                "rounds": int(total),
            }
        )
    summary = pd.DataFrame(rows)
    if summary.empty:
        return summary
    compared = np.isfinite(summary["exact"]) & np.isfinite(summary["measured"])
    n_table = max(int(compared.sum()), 1)
    indicator = np.array([0.0, 1.0])
    summary["tolerance"] = [
        mean_tolerance(indicator, e, r, alpha / n_table) if c else math.nan
        for e, r, c in zip(summary["exact"], summary["rounds"], compared)
    ]
    summary["z"] = (summary["measured"] - summary["exact"]) / summary["std_error"].where(summary["std_error"] > 0)
    summary["within"] = pd.array(
        [
            bool(abs(m - e) <= t) if c else None
            for m, e, t, c in zip(summary["measured"], summary["exact"], summary["tolerance"], compared)
        ],
        dtype="boolean",
    )
    summary["approx_error"] = summary["large_k"] - summary["exact"]
    return summary


def render_study_report(scenario: Any, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], pd.DataFrame]:
    """The report files (the figure, report.html, then summary.md) and the summary of
    :func:`summarise_study`."""
    summary = summarise_study(results, scenario)
    with quiet_figures():
        figure = _figure(scenario, summary)
    lines = _summary_lines(scenario, summary, seed)
    files = {FIGURE: figure}
    compared = int(summary["within"].notna().sum()) if not summary.empty else 0
    within = int(summary["within"].fillna(False).sum()) if not summary.empty else 0
    key = {"points": f"{len(summary)}", "within tolerance": f"{within} of {compared} compared"}
    files["report.html"] = run_html(
        kind="multiparty study", scenario=scenario, seed=seed, lines=lines, files=files, key=key
    )
    files["summary.md"] = "\n".join(lines).encode("utf-8")
    return files, summary


# ------------------------------------------------------------------------- figure
#: Ticks of the k axis (those within the study's range are shown).
K_TICKS = (2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def _log_k_axis(ax: Any, ks: Any) -> None:
    """A log axis for k with plain integer ticks."""
    lo, hi = float(np.min(ks)), float(np.max(ks))
    ax.set_xscale("log")
    ticks: list[float] = [t for t in K_TICKS if lo <= t <= hi] or [lo]
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _figure(scenario: Any, summary: pd.DataFrame) -> bytes:
    """One column per task, one row per (protocol, receiver): accuracy against k on a log
    axis, one colour per eps; exact as solid lines, the large-k approximation dashed,
    measured as points with their tolerance (or 3 standard errors where nothing exact)."""
    st = scenario.spec.study
    tasks = list(st.tasks)
    rows = [(p, r) for p in st.protocols for r in dict.fromkeys(summary["receiver"])] if not summary.empty else []
    rows = rows or [(st.protocols[0], "observer")]
    fig, axes = plt.subplots(len(rows), len(tasks), figsize=(4.6 * len(tasks), 3.4 * len(rows)), squeeze=False)
    colors = plt.cm.tab10(np.arange(len(st.eps)) % 10)
    for i, (protocol, receiver) in enumerate(rows):
        for j, task in enumerate(tasks):
            ax = axes[i][j]
            for c, eps in enumerate(st.eps):
                g = summary[
                    (summary["protocol"] == protocol)
                    & (summary["receiver"] == receiver)
                    & (summary["task"] == task)
                    & (summary["eps"] == float(eps))
                ].sort_values("k")
                if g.empty:
                    continue
                k = g["k"].to_numpy(dtype=float)
                ax.plot(k, g["exact"], "-", color=colors[c], lw=1.6, label=f"ε = {eps:g}: exact")
                ax.plot(k, g["large_k"], "--", color=colors[c], lw=1.0, label=f"ε = {eps:g}: large k")
                bars = np.where(np.isfinite(g["tolerance"]), g["tolerance"], 3 * g["std_error"])
                ax.errorbar(
                    k,
                    g["measured"],
                    yerr=bars,
                    fmt="o",
                    ms=3,
                    capsize=2,
                    color=colors[c],
                    lw=0.8,
                    label=f"ε = {eps:g}: measured",
                )
            _log_k_axis(ax, summary["k"] if not summary.empty else [2])
            if task == "sum":
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_title(f"{task}: {receiver} ({protocol})", fontsize=9)
            ax.set_xlabel("parties k")
            ax.set_ylabel("accuracy")
            ax.grid(True, which="both", alpha=0.2)
            if i == 0 and j == 0:
                ax.legend(fontsize=6, ncol=1)
    fig.suptitle(
        f"Accuracy of the optimal rule against k (δ = {st.delta:g}); bars: tolerance at false-failure "
        f"≤ {scenario.spec.simulation.alpha:g} over the table",
        fontsize=9,
    )
    fig.tight_layout()
    return png_bytes(fig)


# ------------------------------------------------------------------------- summary.md
def _md_table(df: pd.DataFrame) -> TableText:
    return table(df)


def _summary_lines(scenario: Any, summary: pd.DataFrame, seed: int) -> list[str]:
    """summary.md as a list of lines (its tables remember their frames for report.html)."""
    spec = scenario.spec
    st = spec.study
    reps = spec.simulation.replications
    ks = st.party_counts()
    out = [f"# {spec.name}", ""]
    if spec.description:
        out += [spec.description, ""]
    out += [
        "## Set-up",
        "",
        f"- parties: k = {', '.join(str(k) for k in ks)}, every party at the same level",
        f"- eps = {', '.join(f'{e:g}' for e in st.eps)}; delta = {st.delta:g}",
        f"- tasks: {', '.join(st.tasks)} (indicator gain: the probability of being right)",
        f"- protocols: {', '.join(st.protocols)}; receivers: "
        f"{', '.join(st.receivers)} (a party knows its own bit; party 0)",
        f"- Monte Carlo: {st.rounds:,} rounds per point and replication, drawn by counts (no party is simulated: the "
        "number of ones, then the counts of each message symbol, then the optimal rule's guess for those counts)",
        f"- {reps} replication(s), seed {seed}; estimated time {scenario.estimated_seconds:.0f} s on one core",
        "",
        "## Accuracy against k",
        "",
        "`exact` is the accuracy of the optimal average rule, computed exactly (`plan`: the XOR closed form, "
        "transcript classes, or the gain tensor; empty where out of reach); `large_k` the large-k approximation; "
        f"`measured` the Monte Carlo pooled over {reps} replication(s). `tolerance` is the half-width of an exact "
        "binomial acceptance interval such that all compared rows lie within it together with probability at least "
        f"1 - {spec.simulation.alpha:g} when the simulation is correct (Bonferroni over the rows). "
        "`z` = (measured - exact) / std_error; `approx_error` = large_k - exact.",
        "",
    ]
    cols = [
        "protocol",
        "receiver",
        "eps",
        "k",
        "plan",
        "exact",
        "large_k",
        "approx_error",
        "measured",
        "std_error",
        "tolerance",
        "z",
        "within",
    ]
    for task in st.tasks:
        g = summary[summary["task"] == task] if not summary.empty else summary
        out += [f"### {task}", "", f"Large k: {LARGE_K[task]}; n = k (observer) or k - 1 (a party) unknown bits.", ""]
        if not g.empty:
            out += [_md_table(g[cols].reset_index(drop=True)), ""]
    if not summary.empty:
        compared = int(summary["within"].notna().sum())
        out += [
            f"Within tolerance: {int(summary['within'].fillna(False).sum())} of {compared} compared rows "
            f"({len(summary) - compared} without an exact value or a measurement).",
            "",
        ]
        big = summary[summary["k"] == max(ks)]
        big = big[np.isfinite(big["exact"])]
        if not big.empty:
            worst = big.assign(
                abs_error=big["approx_error"].abs(), rel_error=(big["approx_error"] / big["exact"]).abs()
            )
            worst = worst.groupby("task", sort=False)[["abs_error", "rel_error"]].max().reset_index()
            out += [
                f"### Large-k approximation at k = {max(ks)}",
                "",
                "Largest error over protocols, eps and receivers:",
                "",
                _md_table(worst),
                "",
            ]
    out += figures_and_files([FIGURE], "replication x point (party -1 is the observer)")
    return out


# ----------------------------------------------------------------------------- what ldpsim run prints
def console(run: Any) -> list[str]:
    """What ``ldpsim run`` prints for a finished scaling study (its MultipartyStudyRun), line
    by line: the grid, the points at the largest k, how many are within tolerance."""
    out: list[str] = []
    say, show = sayer(out)
    st = run.scenario.spec.study
    s = run.summary
    ks = sorted(set(int(k) for k in s["k"]))
    say(
        f"{run.scenario.spec.name}: {len(s)} points (k = {ks[0]}..{ks[-1]}, eps = "
        f"{', '.join(f'{e:g}' for e in st.eps)}, {', '.join(st.tasks)}), {st.rounds:,} Monte Carlo rounds per point "
        f"x {run.scenario.spec.simulation.replications} replication(s), seed {run.seed}"
    )
    last = s[s["k"] == ks[-1]]
    cols = [
        c
        for c in ("protocol", "task", "receiver", "eps", "k", "exact", "measured", "tolerance", "large_k")
        if c in last.columns
    ]
    say(f"at the largest k ({ks[-1]}): exact, measured and the large-k approximation")
    show(text_table(last[cols], float_format=lambda x: f"{x:.5f}", keys=3, full=run.run_dir / "summary.md"))
    compared = int(s["within"].notna().sum())
    within = int(s["within"].fillna(False).sum())
    say(
        f"within tolerance (false-failure <= {run.scenario.spec.simulation.alpha:g} for the table): {within} of "
        f"{compared} measured points"
    )
    return out
