"""The figure and summary.md of a multi-party run (``kind = "multiparty"``), rendered to
bytes from the summaries of :mod:`ldpsim.report.multiparty_tables`.

Pure functions of the scenario, the seed and the results frame, so a resumed run writes
the same files as an uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ldpsim.report.figures import amount, in_unit, plt, png_bytes, quiet_glyphs
from ldpsim.report.html import TableText, run_html, table
from ldpsim.report.multiparty_tables import summarise
from ldpsim.report.tables import describe_section

FIGURE = "accuracy.png"


def render_report(scenario: Any, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], tuple[pd.DataFrame, pd.DataFrame]]:
    """The report files (the figure, report.html, then summary.md) and the two summary
    tables (accuracy, latency) of :func:`summarise`."""
    summary, latency = summarise(results, scenario)
    with quiet_glyphs():
        figure = _figure(scenario, summary, latency)
    lines = _summary_lines(scenario, summary, latency, seed)
    files = {FIGURE: figure}
    within = int(summary["within"].fillna(False).sum())
    key = {"within tolerance": f"{within} of {len(summary)} rows"}
    files["report.html"] = run_html(kind="multiparty", scenario=scenario, seed=seed, lines=lines, files=files, key=key)
    files["summary.md"] = "\n".join(lines).encode("utf-8")
    return files, (summary, latency)


# ------------------------------------------------------------------------- files
def _figure(scenario, summary: pd.DataFrame, latency: pd.DataFrame) -> bytes:
    """The figure (PNG bytes): a function of the scenario and the results only."""
    summary = summary[summary["quantity"] == "accuracy"]
    receivers = list(dict.fromkeys(summary["party"]))
    protocols = list(dict.fromkeys(summary["protocol"]))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [2, 1]})
    width = 0.8 / max(len(protocols), 1)
    colors = plt.cm.tab10(np.arange(10))
    x0 = np.arange(len(receivers))
    for q, name in enumerate(protocols):
        g = summary[summary["protocol"] == name].set_index("party").loc[receivers]
        x = x0 - 0.4 + width * (q + 0.5)
        ax.errorbar(x - width * 0.15, g["measured"], yerr=g["tolerance"], fmt="o", ms=4, capsize=3,
                    color=colors[q % 10], label=f"{name}: measured ± tolerance")  # fmt: skip
        ax.plot(x + width * 0.15, g["exact"], "D", ms=5, mfc="none", color=colors[q % 10], label=f"{name}: exact")
    labels = []
    for r in receivers:
        row = summary[summary["party"] == r].iloc[0]
        labels.append("observer" if r == "observer" else f"party {r}\n(ε={row['eps']:g}, δ={row['delta']:g})")
    ax.set_xticks(x0)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel(f"average accuracy ({scenario.task.name})")
    alpha = scenario.spec.simulation.alpha
    ax.set_title(f"Measured vs exact accuracy (tolerance: false-failure ≤ {alpha:g} over the table)", fontsize=9)
    ax.legend(fontsize=7)
    if not latency.empty:
        lx = np.arange(len(latency))
        ax2.plot(lx, latency["mean_measured"], "o", color="tab:blue", label="mean (measured)")
        ax2.plot(lx, latency["mean_theory"], "_", ms=14, color="tab:blue", label="mean (theory)")
        ax2.plot(lx, latency["p99_measured"], "s", color="tab:red", label="99% quantile (measured)")
        ax2.plot(lx, latency["p99_theory"], "_", ms=14, color="tab:red", label="99% quantile (theory)")
        ax2.set_xticks(lx)
        ax2.set_xticklabels(["obs" if p == "observer" else p for p in latency["party"]], fontsize=8)
        ax2.set_xlabel("receiver")
        ax2.set_ylabel(in_unit("completion delay", scenario.spec.simulation.time_unit) + "\nlast message in - round start")
        ax2.set_title("Transcript completion delay", fontsize=9)
        ax2.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def _md_table(df: pd.DataFrame) -> TableText:
    return table(df, "{:.6g}")


def _summary_lines(scenario: Any, summary: pd.DataFrame, latency: pd.DataFrame, seed: int) -> list[str]:
    """summary.md as a list of lines (its tables remember their frames for report.html)."""
    spec = scenario.spec
    reps = spec.simulation.replications
    gain = scenario.task.gain
    binary_gain = bool(np.all((gain == 0) | (gain == 1)))
    accuracy = summary[summary["quantity"] == "accuracy"]
    differences = summary[summary["quantity"] == "accuracy_difference"]
    out = [f"# {spec.name}", ""]
    if spec.description:
        out += [spec.description, ""]
    p_one = spec.parties.p_one
    unit = spec.simulation.time_unit
    out += [
        "## Set-up",
        "",
        f"- parties: k = {spec.parties.k}, eps = {spec.parties.levels('eps')}, delta = {spec.parties.levels('delta')}, "
        f"P(bit = 1) = {p_one}",
        f"- task: {scenario.task.name} ({scenario.task.n_outputs} outputs), gain {'indicator' if np.array_equal(gain, np.eye(len(gain))) else 'custom'}",
        f"- protocols: {', '.join(spec.protocols)} (common random numbers: the same bits, noise uniforms and latencies for all)",
        f"- rounds: {spec.rounds.count:,} per replication, in batches of {spec.rounds.batch:,}, one every {amount(spec.rounds.interval, unit)}",
        f"- network: latency {describe_section(spec.network.latency)}, in {unit}",
        f"- {reps} replication(s), seed {seed}",
        "",
        "## Accuracy: measured against exact",
        "",
        f"Pooled over {reps} replication(s). `exact` is the optimal average accuracy (docs/theory.md sec. 7) computed "
        "exactly; `tolerance` is a half-width such that all "
        f"{len(summary)} rows of this section lie within it together with probability at least "
        f"1 - {spec.simulation.alpha:g} when the simulation is correct (Bonferroni over the rows): "
        + ("an exact binomial acceptance interval" if binary_gain else "Hoeffding's inequality")
        + " for accuracies, the smaller of Hoeffding's and the empirical Bernstein bound (Maurer-Pontil) for paired "
        "differences. `z` = (measured - exact) / std_error.",
        "",
        _md_table(accuracy.drop(columns=["quantity"])),
        "",
    ]
    if not differences.empty:
        out += [
            "### Paired differences between protocols (common random numbers)",
            "",
            "Every protocol sees the same bits and privatises them with the same uniforms (inverse-CDF coupling), so "
            "the difference of two protocols' gains in the same round has a much smaller variance than two "
            "independent runs would give.",
            "",
            _md_table(differences.drop(columns=["quantity"])),
            "",
        ]
    out += [f"Within tolerance: {int(summary['within'].fillna(False).sum())} of {len(summary)} rows.", ""]
    if len(spec.protocols) > 1:
        wide = accuracy.pivot_table(index="party", columns="protocol", values="exact", sort=False).reset_index()
        out += ["Exact accuracy per protocol, side by side:", "", _md_table(wide), ""]
    if not latency.empty:
        out += [
            "## Transcript completion (network)",
            "",
            f"Completion delay = arrival of a round's last message at the receiver minus the round's start, in {unit} "
            "(the `_measured` and `_theory` columns); a party "
            "waits for the k - 1 other messages, the observer for all k. Theory: the mean and quantiles of the maximum "
            "of that many i.i.d. latencies. `messages` = messages each receiver took from its inbox.",
            "",
            _md_table(latency),
            "",
        ]
    out += [
        "## Figures",
        "",
        f"![{FIGURE}]({FIGURE})",
        "",
        "## Files",
        "",
        "- `results.csv`: one row per replication x protocol x receiver x quantity (party -1 is the observer)",
        "- `replications/`: the same rows, one file per replication (written as each finishes), each with a "
        "`.json` record (rows, bytes, SHA-256) that resuming checks",
        "- `scenario.toml`: the scenario as run; `metadata.json`: seed, versions, command line, times",
        "",
    ]
    return out


