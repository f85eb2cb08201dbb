"""Run directories for multi-party scenarios (``kind = "multiparty"``): replications of the
broadcast model, results.csv, metadata.json, summary.md and a figure, and the table that
``ldpsim run`` prints.

A study of the run framework (:mod:`ldpsim.runs`), so the same directories, seeds, workers,
locks, atomic files and resume checks as survey runs: ``reports/<name>/<run-id>/``;
replication r is seeded by ``SeedSequence(seed, spawn_key=(r,))`` whatever the executor.
Exact accuracies are computed once per run, in the calling process, and handed to every
replication.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.protocols import OBSERVER
from ldpsim.protocols.scenario import MultipartyScenario, load_multiparty, parse_multiparty
from ldpsim.protocols.sim import (
    LATENCY_QUANTITIES,
    RESULT_COLUMNS,
    exact_gains,
    paired_tolerance,
    simulate_broadcast,
    tolerance,
)
from ldpsim.report import png_bytes
from ldpsim.report.run_report import _md_table as md_table
from ldpsim.report.run_report import quiet_glyphs
from ldpsim.runs import Study, read_csv, resume_study, run_study

FIGURE = "accuracy.png"


@dataclass(frozen=True)
class MultipartyRun:
    run_dir: Path
    scenario: MultipartyScenario
    results: pd.DataFrame  # one replication's rows after another (RESULT_COLUMNS)
    summary: pd.DataFrame  # accuracy pooled over replications, measured next to exact
    latency: pd.DataFrame  # completion delays per receiver, measured next to theory
    seed: int


class MultipartyStudy(Study):
    """A multi-party broadcast scenario as a study of the run framework (:mod:`ldpsim.runs`).
    Exact accuracies are computed once per run, in the calling process, and handed to
    every replication."""

    kind = "multiparty"

    def shared(self) -> Any:
        sc = self.scenario
        return exact_gains(sc.protocols, sc.task, sc.p_one)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        return run_replication(self.scenario, index, seed, shared)

    def read_results(self, path: Path) -> pd.DataFrame:
        return read_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        summary, latency = summarise(results, self.scenario)
        with quiet_glyphs():
            figure = _figure(self.scenario, summary, latency)
        files = {
            FIGURE: figure,
            "summary.md": _summary_md(self.scenario, summary, latency, seed).encode("utf-8"),
        }
        return files, (summary, latency)


def _parse(source: str, path: str) -> MultipartyStudy:
    return MultipartyStudy(parse_multiparty(source, path))


# ------------------------------------------------------------------------- running
def run_multiparty(
    scenario: MultipartyScenario | str | Path,
    *,
    seed: int | None = None,
    replications: int | None = None,
    workers: int = 1,
    out: str | Path | None = None,
    executor: Executor | None = None,
    interrupt_after: int | None = None,
) -> MultipartyRun:
    """Run a multi-party scenario's replications into a new run directory and write its report."""
    if not isinstance(scenario, MultipartyScenario):
        scenario = load_multiparty(scenario)
    o = run_study(MultipartyStudy(scenario), seed=seed, replications=replications, workers=workers, out=out,
                  executor=executor, progress=False, interrupt_after=interrupt_after)  # fmt: skip
    return MultipartyRun(o.run_dir, o.study.scenario, o.results, *o.extra, o.seed)


def resume_multiparty(run_dir: str | Path, *, workers: int = 1, executor: Executor | None = None) -> MultipartyRun:
    """Finish an interrupted multi-party run: only the missing replications are run."""
    o = resume_study(run_dir, {MultipartyStudy.kind: _parse}, workers=workers, executor=executor, progress=False)
    return MultipartyRun(o.run_dir, o.study.scenario, o.results, *o.extra, o.seed)


def run_replication(scenario: MultipartyScenario, index: int, seed: int, exact: dict | None = None) -> pd.DataFrame:
    """Replication ``index`` of a run with root seed ``seed`` (its rows of results.csv)."""
    spec = scenario.spec
    result = simulate_broadcast(
        scenario.protocols, scenario.task, spec.rounds.count, batch=spec.rounds.batch, latency=scenario.latency,
        interval=spec.rounds.interval, p_one=scenario.p_one, seed=np.random.SeedSequence(seed, spawn_key=(index,)),
        alpha=spec.simulation.alpha, replication=index, exact=exact,
    )  # fmt: skip
    return result.table


def read_results(path: str | Path) -> pd.DataFrame:
    return read_csv(path, dtype={"protocol": str, "role": str, "quantity": str},
                    na=[c for c in RESULT_COLUMNS if c not in ("protocol", "role", "quantity")])  # fmt: skip


# ------------------------------------------------------------------------- summaries
def summarise(results: pd.DataFrame, scenario: MultipartyScenario) -> tuple[pd.DataFrame, pd.DataFrame]:
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
            tol = tolerance(gain, exact, int(total), alpha / n_rows)
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


# ------------------------------------------------------------------------- files
def _figure(scenario, summary: pd.DataFrame, latency: pd.DataFrame) -> bytes:
    """The figure (PNG bytes): a function of the scenario and the results only."""
    import matplotlib.pyplot as plt

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
        ax2.set_ylabel("completion delay (last message in - round start)")
        ax2.set_title("Transcript completion delay", fontsize=9)
        ax2.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def _md_table(df: pd.DataFrame) -> str:
    return md_table(df, "{:.6g}")


def _summary_md(scenario: MultipartyScenario, summary: pd.DataFrame, latency: pd.DataFrame, seed: int) -> str:
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
    out += [
        "## Set-up",
        "",
        f"- parties: k = {spec.parties.k}, eps = {spec.parties.levels('eps')}, delta = {spec.parties.levels('delta')}, "
        f"P(bit = 1) = {p_one}",
        f"- task: {scenario.task.name} ({scenario.task.n_outputs} outputs), gain {'indicator' if np.array_equal(gain, np.eye(len(gain))) else 'custom'}",
        f"- protocols: {', '.join(spec.protocols)} (common random numbers: the same bits, noise uniforms and latencies for all)",
        f"- rounds: {spec.rounds.count:,} per replication, in batches of {spec.rounds.batch:,}, one every {spec.rounds.interval:g} time units",
        f"- network: latency {spec.network.latency.model_dump()}",
        f"- {reps} replication(s), seed {seed}",
        "",
        "## Accuracy: measured against exact",
        "",
        f"Pooled over {reps} replication(s). `exact` is the optimal average accuracy (THEORY.md sec. 7) computed "
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
            "Completion delay = arrival of a round's last message at the receiver minus the round's start; a party "
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
    return "\n".join(out)


# ------------------------------------------------------------------------- command line
def format_table(summary: pd.DataFrame, quantity: str = "accuracy") -> str:
    cols = ["protocol", "party", "eps", "delta", "measured", "exact", "std_error", "tolerance", "within"]
    return summary[summary["quantity"] == quantity][cols].to_string(index=False, float_format=lambda x: f"{x:.5f}")


def cli_run(args) -> int:
    """``ldpsim run`` for a multi-party scenario file or run directory (options checked by
    the caller)."""
    if args.resume is not None:
        run = resume_multiparty(args.resume, workers=args.workers)
    else:
        run = run_multiparty(args.file, seed=args.seed, replications=args.replications, workers=args.workers, out=args.out)
    spec = run.scenario.spec
    print(f"{spec.name}: k = {spec.parties.k} parties, task {run.scenario.task.name}, {spec.rounds.count:,} rounds x "
          f"{spec.simulation.replications} replication(s), seed {run.seed}")  # fmt: skip
    print(format_table(run.summary))
    if (run.summary["quantity"] == "accuracy_difference").any():
        print("paired differences (same bits and noise uniforms for every protocol):")
        print(format_table(run.summary, "accuracy_difference"))
    within = int(run.summary["within"].fillna(False).sum())
    print(f"within tolerance (false-failure <= {spec.simulation.alpha:g} for the table): {within} of {len(run.summary)}")
    if not run.latency.empty:
        lat = run.latency
        print(f"completion delay: mean {lat['mean_measured'].mean():.4g} (theory {lat['mean_theory'].mean():.4g}), "
              f"max {lat['max_measured'].max():.4g}; messages delivered {int(lat['messages'].sum()):,} of "
              f"{int(lat['messages_expected'].sum()):,}")  # fmt: skip
    print(f"report: {run.run_dir / 'summary.md'}")
    return 0
