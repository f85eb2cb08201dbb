"""Run directories for multi-party scenarios (``kind = "multiparty"``): replications of the
broadcast model, results.csv, metadata.json, summary.md and a figure, and the table that
``ldpsim run`` prints.

Same shapes as :mod:`ldpsim.runs`: ``reports/<name>/<run-id>/``; replication r is seeded by
``SeedSequence(seed, spawn_key=(r,))`` whatever the executor; each replication's rows go
to ``replications/rep-NNNNNN.csv`` as it finishes, so an interrupted run can be resumed;
``results.csv`` is their concatenation in order. Exact accuracies are computed once per
run, in the calling process, and handed to every replication.
"""

from __future__ import annotations

import math
import sys
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ldpsim._meta import now, versions, write_json
from ldpsim.errors import LdpSimError
from ldpsim.report.run_report import _md_table as md_table
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
from ldpsim.runs import (
    RunInterrupted,
    SequentialExecutor,
    _chunks,
    _rep_path,
    _write_rep,
    concat_replications,
    open_resume,
    prepare_run,
)

FIGURE = "accuracy.png"


@dataclass(frozen=True)
class MultipartyRun:
    run_dir: Path
    scenario: MultipartyScenario
    results: pd.DataFrame  # one replication's rows after another (RESULT_COLUMNS)
    summary: pd.DataFrame  # accuracy pooled over replications, measured next to exact
    latency: pd.DataFrame  # completion delays per receiver, measured next to theory
    seed: int


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
    scenario, seed, run_dir = prepare_run(scenario, seed, replications, workers, out)
    meta = _metadata(scenario, seed, workers, executor)
    write_json(run_dir / "metadata.json", meta)
    return _execute(run_dir, scenario, seed, meta, workers, executor, interrupt_after)


def resume_multiparty(run_dir: str | Path, *, workers: int = 1, executor: Executor | None = None) -> MultipartyRun:
    """Finish an interrupted multi-party run: only the missing replications are run."""
    run_dir, meta, scenario, seed = open_resume(
        run_dir, workers, lambda meta: None, lambda _, source, path: parse_multiparty(source, path)
    )  # fmt: skip
    return _execute(run_dir, scenario, seed, meta, workers, executor, None)


def run_replication(scenario: MultipartyScenario, index: int, seed: int, exact: dict | None = None) -> pd.DataFrame:
    """Replication ``index`` of a run with root seed ``seed`` (its rows of results.csv)."""
    spec = scenario.spec
    result = simulate_broadcast(
        scenario.protocols, scenario.task, spec.rounds.count, batch=spec.rounds.batch, latency=scenario.latency,
        interval=spec.rounds.interval, p_one=scenario.p_one, seed=np.random.SeedSequence(seed, spawn_key=(index,)),
        alpha=spec.simulation.alpha, replication=index, exact=exact,
    )  # fmt: skip
    return result.table


def _execute(run_dir, scenario, seed, meta, workers, executor, interrupt_after) -> MultipartyRun:
    total = scenario.spec.simulation.replications
    todo = [r for r in range(total) if not _rep_path(run_dir, r).exists()]
    done = total - len(todo)
    exact = exact_gains(scenario.protocols, scenario.task, scenario.p_one)
    own = executor is None
    if own:
        executor = SequentialExecutor() if workers == 1 else ProcessPoolExecutor(max_workers=workers)
    finished_now = 0
    try:
        for index, frame in _completed(executor, scenario, seed, todo, workers, exact):
            _write_rep(run_dir, index, frame)
            done += 1
            finished_now += 1
            if interrupt_after is not None and finished_now >= interrupt_after and done < total:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise RunInterrupted(run_dir, done, total) from None
    finally:
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
    results = _merge(run_dir, total)
    summary, latency = summarise(results, scenario)
    write_report(run_dir, scenario, results, summary, latency, seed)
    meta["finished"] = now()
    write_json(run_dir / "metadata.json", meta)
    return MultipartyRun(run_dir, scenario, results, summary, latency, seed)


def _completed(executor, scenario, seed, todo, workers, exact):
    if isinstance(executor, SequentialExecutor):
        for r in todo:
            yield from _run_chunk(scenario, seed, [r], exact)
        return
    futures = [executor.submit(_run_chunk, scenario, seed, chunk, exact) for chunk in _chunks(todo, workers)]
    try:
        for future in as_completed(futures):
            yield from future.result()
    finally:
        for f in futures:
            f.cancel()


def _run_chunk(scenario, seed: int, indices: Iterable[int], exact) -> list[tuple[int, pd.DataFrame]]:
    return [(r, run_replication(scenario, r, seed, exact)) for r in indices]


def _merge(run_dir: Path, total: int) -> pd.DataFrame:
    return read_results(concat_replications(run_dir, total))


def read_results(path: str | Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"protocol": str, "role": str, "quantity": str}, keep_default_na=False,
                       na_values={c: [""] for c in RESULT_COLUMNS if c not in ("protocol", "role", "quantity")})  # fmt: skip


def _metadata(scenario: MultipartyScenario, seed: int, workers: int, executor: Executor | None) -> dict[str, Any]:
    packages = versions()
    return {
        "kind": "multiparty",
        "scenario": scenario.name,
        "scenario_path": scenario.path,
        "scenario_sha256": scenario.digest(),
        "spec": scenario.spec.model_dump(mode="json"),
        "seed": seed,
        "replications": scenario.spec.simulation.replications,
        "workers": workers,
        "executor": type(executor).__name__ if executor is not None else ("sequential" if workers == 1 else "process_pool"),
        "ldpsim_version": packages["ldpsim"],
        "python": packages["python"],
        "packages": packages,
        "command_line": sys.argv,
        "started": now(),
    }


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
def write_report(run_dir: Path, scenario, results, summary, latency, seed: int) -> None:
    """summary.md and the figure: functions of the scenario, seed and results only."""
    _figure(run_dir / FIGURE, scenario, summary, latency)
    (run_dir / "summary.md").write_text(_summary_md(scenario, summary, latency, seed))


def _figure(path: Path, scenario, summary: pd.DataFrame, latency: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ldpsim.report.run_report import PNG_META

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
    fig.savefig(path, dpi=110, metadata=PNG_META)
    plt.close(fig)


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
        "- `replications/`: the same rows, one file per replication",
        "- `scenario.toml`: the scenario as run; `metadata.json`: seed, versions, command line, times",
        "",
    ]
    return "\n".join(out)


# ------------------------------------------------------------------------- command line
def format_table(summary: pd.DataFrame, quantity: str = "accuracy") -> str:
    cols = ["protocol", "party", "eps", "delta", "measured", "exact", "std_error", "tolerance", "within"]
    return summary[summary["quantity"] == quantity][cols].to_string(index=False, float_format=lambda x: f"{x:.5f}")


def cli_run(args) -> int:
    """``ldpsim run`` for a multi-party scenario file or run directory."""
    if args.resume is not None:
        if args.file is not None or args.seed is not None or args.replications is not None or args.out is not None:
            raise LdpSimError("--resume: got other options too, expected only --workers with --resume")
        try:
            run = resume_multiparty(args.resume, workers=args.workers)
        except RunInterrupted as exc:  # pragma: no cover - only with interrupt_after
            print(f"ldpsim: {exc}", file=sys.stderr)
            return 130
    else:
        try:
            run = run_multiparty(args.file, seed=args.seed, replications=args.replications, workers=args.workers, out=args.out)
        except RunInterrupted as exc:
            print(f"ldpsim: {exc}", file=sys.stderr)
            return 130
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
