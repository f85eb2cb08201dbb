"""Figures and summary.md for a survey run directory, rendered to bytes (the run framework writes
them, each atomically).

Everything rendered here depends only on the scenario, the seed and results.csv (no clock
times), so a resumed run writes the same files as an uninterrupted one. A run in which no
report reached the server is a legitimate outcome: the summary says so, and figures with
nothing to show are left out.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pandas as pd

from ldpsim._text import KEEP, plural, sayer
from ldpsim._text import table as text_table
from ldpsim.report import survey_tables as summary
from ldpsim.report.figures import amount, in_unit, log_axes, plt, png_bytes, quiet_figures, short_label
from ldpsim.report.html import run_html
from ldpsim.report.html import table as _md_table
from ldpsim.report.tables import describe_section, figures_and_files, number_text
from ldpsim.risk import profile_risk, reidentification_risk, risk_table

#: the clients-and-reports table: mean, smallest and largest counts over the replications
COUNTS = {"mean": "count", "min": "count", "max": "count"}

#: under the tables of errors at each checkpoint: what their columns mean
CHECKPOINT_LEGEND = (
    "`reason`: why the checkpoint was taken (`every`: the periodic checkpoints of `analyst.checkpoints.every`, "
    "`every_reports`: one each time `analyst.checkpoints.every_reports` more reports arrived, `end`: the end of "
    "the run); `ordinal`: the checkpoint's number among those of its reason, from 0, which pairs the same "
    "checkpoint across replications; `time`, `n_received`: means over the replications."
)
ERROR_LEGEND = (
    "`rmse`: the root mean squared error of the estimates against the truth, over answers and replications; "
    "`theory_rms_se`: the root mean square of the exact standard errors of the same estimates (what `rmse` is "
    "expected to be for unbiased estimates); `coverage`: the share of the intervals that hold the truth; "
    "`reason`, `ordinal`: as above."
)


def render_report(scenario, results: pd.DataFrame, seed: int) -> dict[str, bytes]:
    """The report files of a run: figures (PNG), report.html and summary.md, by name,
    summary.md last."""
    with quiet_figures():
        return _render_report(scenario, results, seed)


def _render_report(scenario, results: pd.DataFrame, seed: int) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    unit = scenario.spec.simulation.time_unit
    if summary.has_estimates(results):
        files["estimates_over_time.png"] = _estimates_over_time(results, unit, scenario)
        if not summary.error_by_n(results).empty:
            files["error_vs_n.png"] = _error_vs_n(results)
    other = summary.other_task_series(results)
    if not other.empty:
        files["tasks_over_time.png"] = _other_tasks_over_time(other, unit)
    cdfs = summary.final_cdfs(results)
    if cdfs["estimate"].notna().any():
        files["distributions.png"] = _distributions(cdfs)
    items, keys = summary.final_items(results), summary.final_keys(results)
    if items["estimate"].notna().any() or keys["frequency"].notna().any():
        files["items.png"] = _items_figure(items, keys)
    design = summary.design_table(results)
    if not design.empty and design["design_se"].notna().any():
        files["design.png"] = _design_figure(design)
    if summary.is_attack(results).any():
        files["attack.png"] = _attack_figure(results, unit)
    lines = _summary_lines(scenario, results, seed, list(files))
    files["report.html"] = run_html(
        kind="survey", scenario=scenario, seed=seed, lines=lines, files=files, key=_key_numbers(results)
    )
    files["summary.md"] = "\n".join(lines).encode("utf-8")
    return files


def _key_numbers(results: pd.DataFrame) -> dict[str, str]:
    """What the index of runs shows of a survey: the interval coverage and the reports heard."""
    out: dict[str, str] = {}
    if summary.has_estimates(results):
        f = summary.frequency_rows(results).dropna(subset=["estimate"])
        out["interval coverage"] = f"{f['covered'].mean():.4f}"
        final = summary.final_frequencies(results)
        out["reports (replication 0)"] = f"{int(final['n_received'].max()):,}"
    elif (results["quantity"] == "frequency").any():
        out["reports (replication 0)"] = "0"
    return out


def _mechanism_words(scenario, task: str) -> str:
    """The mechanism behind the estimates of ``task`` as a figure's title names it: its
    name and exact eps (each tier's, with privacy tiers)."""
    if scenario is None:
        return ""
    if scenario.tiers is not None:
        return "privacy tiers " + ", ".join(
            f"{name} ({_mechanism_name(m)}, eps = {m.epsilon():.4g})" for name, m in scenario.mechanisms
        )
    m = dict(scenario.mechanisms).get(task, scenario.mechanism)
    return f"{_mechanism_name(m)}, eps = {m.epsilon():.4g}"


def _mechanism_name(m) -> str:
    return repr(m).partition("(")[0]


def _estimates_over_time(results: pd.DataFrame, unit: str, scenario=None) -> bytes:
    f = summary.frequency_rows(results)
    f = f[f["estimate"].notna()]
    rep = f["replication"].min()
    f = f[(f["replication"] == rep) & (f["task"] == f["task"].iloc[0])]
    many = f["category"].nunique() > summary.MANY_ANSWERS
    if many:  # the ten answers with the largest true frequencies
        top = f.drop_duplicates("category").nlargest(10, "truth")["category"]
        f = f[f["category"].isin(top)]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    colors = plt.cm.tab10(np.linspace(0, 1, 10))
    for i, (cat, g) in enumerate(f.groupby("category", sort=False)):
        c = colors[i % 10]
        # an interval clipped to [0, 1] may end short of a negative estimate: draw what is left
        below = np.clip(g["estimate"] - g["ci_low"], 0.0, None)
        above = np.clip(g["ci_high"] - g["estimate"], 0.0, None)
        ax.errorbar(
            g["time"],
            g["estimate"],
            yerr=[below, above],
            color=c,
            marker="o",
            ms=3,
            capsize=3,
            lw=1.2,
            label=_legend_label(cat),
        )
        ax.axhline(g["truth"].iloc[0], color=c, ls="--", lw=0.8, alpha=0.7)
    ax.set_xlabel(in_unit("time", unit))
    ax.set_ylabel("estimated frequency")
    which = "the 10 most frequent answers, " if many else ""
    words = _mechanism_words(scenario, str(f["task"].iloc[0]))
    title = (
        f"Estimates with confidence intervals{': ' + words if words else ''} ({which}replication {rep}); dashed: truth"
    )
    ax.set_title("\n".join(textwrap.wrap(title, 100)), fontsize=9 if len(title) > 80 else None)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return png_bytes(fig)


def _legend_label(answer: Any) -> str:
    """An answer as a legend shows it: matplotlib leaves out empty labels and those that
    begin with an underscore, so a blank answer is shown quoted and a leading underscore
    kept behind a space."""
    text = short_label(answer)
    if not text.strip():
        return repr(str(answer))
    return f" {text}" if text.startswith("_") else text


def _error_vs_n(results: pd.DataFrame) -> bytes:
    f = summary.frequency_rows(results)
    f = f[(f["n_received"] > 0) & f["error"].notna()]
    e = summary.error_by_n(results)
    fig, ax = plt.subplots(figsize=(7, 5))
    if "task" not in e.columns:
        ax.scatter(f["n_received"], np.abs(f["error"]), s=6, alpha=0.25, color="tab:gray", label="|estimate - truth|")
        ax.plot(e["n_received"], e["rmse"], "o-", color="tab:blue", label="RMS error (measured)")
        ax.plot(e["n_received"], e["theory_rms_se"], "--", color="tab:red", label="RMS standard error (theory)")
    else:  # compared mechanisms (or tasks): measured and exact side by side, one colour each
        colors = plt.cm.tab10(np.arange(10))
        for i, (task, g) in enumerate(e.groupby("task", sort=False)):
            c = colors[i % 10]
            ax.plot(g["n_received"], g["rmse"], "o-", ms=3, color=c, label=f"{short_label(task)}: measured")
            ax.plot(g["n_received"], g["theory_rms_se"], "--", color=c, label=f"{short_label(task)}: exact")
    log_axes(ax, x=True, y=True)
    ax.set_xlabel("reports received")
    ax.set_ylabel("error of the frequency estimates")
    ax.set_title("Error against the number of reports")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png_bytes(fig)


def _changes(values: pd.Series) -> bool:
    """Whether a quantity takes more than one value over the checkpoints (NaN left out)."""
    v = values.dropna()
    return len(v) > 1 and bool(v.max() > v.min())


def _other_tasks_over_time(rows: pd.DataFrame, unit: str) -> bytes:
    """One panel per (task, quantity) that changes over the checkpoints: the estimate over
    time, and the theory and truth where known. A quantity with one value at every
    checkpoint (a decision, a sequential test that stopped before the first checkpoint) is
    not drawn as a flat line: a last panel lists those values. The time axis starts at 0 and
    takes in the time a sequential test stopped (a dotted line in its task's panels)."""
    keys = list(rows.groupby(["task", "quantity"], sort=False).groups)
    series = {key: rows[(rows["task"] == key[0]) & (rows["quantity"] == key[1])] for key in keys}
    moving = [key for key in keys if any(_changes(series[key][c]) for c in ("estimate", "theory", "truth"))]
    still = [key for key in keys if key not in moving]
    stops = {
        task: float(g["estimate"].dropna().iloc[-1])
        for (task, quantity), g in series.items()
        if quantity == "sprt_decision_time" and g["estimate"].notna().any()
    }
    right = max([float(rows["time"].max()), *stops.values()])
    n = len(moving) + (1 if still else 0)
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    for ax, (task, quantity) in zip(axes.ravel(), moving):
        g = series[(task, quantity)]
        for col, style, color, label in (
            ("estimate", "o-", None, "measured"),
            ("theory", "--", "tab:red", "theory"),
            ("truth", ":", "black", "truth"),
        ):
            if g[col].notna().any():  # a series with no value is left out, legend and all
                ax.plot(g["time"], g[col], style, ms=3, color=color, label=label)
        if task in stops:
            ax.axvline(stops[task], ls=":", lw=1, color="tab:gray", label=f"stopped ({stops[task]:.3g})")
        vals = pd.concat([g["estimate"], g["theory"]]).dropna()
        if len(vals) and (vals > 0).all() and vals.max() > 100 * vals.min():
            ax.set_yscale("log")  # error probabilities span many decades
        ax.set_xlim(0, right * 1.03)
        ax.set_title(short_label(f"{task}: {quantity}", 60), fontsize=9)
        ax.set_xlabel(in_unit("time", unit), fontsize=8)
        ax.legend(fontsize=7)
    if still:
        ax = axes.ravel()[len(moving)]
        ax.axis("off")
        first, last = float(rows["time"].min()), float(rows["time"].max())
        lines = [
            f"the same at every checkpoint ({first:g} to {last:g} {unit}):"
            if last > first
            else f"at the only checkpoint ({amount(first, unit)}):"
        ]
        for task, quantity in still:
            g = series[(task, quantity)]
            words = [f"{task}: {quantity} = {_value(g['estimate'], quantity, unit)}"]
            words += [f"{c} {_value(g[c], quantity, unit)}" for c in ("theory", "truth") if g[c].notna().any()]
            lines.append(
                textwrap.fill(
                    f"{words[0]}" + (f" ({', '.join(words[1:])})" if words[1:] else ""), 48, subsequent_indent="    "
                )
            )
        ax.text(0.0, 1.0, "\n".join(lines), transform=ax.transAxes, va="top", ha="left", fontsize=8, family="monospace")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle("Analyst tasks over time (replication 0)", fontsize=10)
    fig.tight_layout()
    return png_bytes(fig)


def _value(values: pd.Series, quantity: str, unit: str) -> str:
    """The one value of a quantity that does not change, as the summary's tables show it."""
    v = values.dropna()
    if v.empty:
        return "none"
    text = number_text(float(v.iloc[-1]))
    return f"{text} {unit}" if quantity.endswith("_time") else text


def _nothing_received(results: pd.DataFrame) -> str:
    totals = summary.engine_totals(results).set_index("quantity")["mean"]
    return (
        f"No report reached the server in any replication (per replication on average: "
        f"{totals.get('clients', 0):,.0f} clients, {totals.get('lost', 0):,.0f} reports lost, "
        f"{totals.get('in_flight', 0):,.0f} still in flight at the end): there is nothing to estimate, so "
        "results.csv holds empty estimates and this report has no estimate figures. Check `network.loss`, "
        "the arrival times and `simulation.end`."
    )


def _summary_lines(scenario, results: pd.DataFrame, seed: int, figures: list[str]) -> list[str]:
    """summary.md as a list of lines (its tables :class:`~ldpsim.report.html.TableText`), for
    summary.md and report.html alike: one function per section, in this order."""
    return [
        *_title(scenario.spec),
        *_setup(scenario, seed),
        *_frequencies(scenario, results),
        *_means(scenario, results),
        *_distribution_section(scenario, results),
        *_design(scenario, results),
        *_risk(scenario, seed),
        *_attacks(scenario, results),
        *_other_tasks(scenario, results),
        *_nonresponse(results),
        *_tiers(results),
        *_crosstabs(scenario, results),
        *_clients(results),
        *figures_and_files(list(figures), "replication x checkpoint x task x quantity x category"),
    ]


def _title(spec) -> list[str]:
    """The scenario's name, and its description if any."""
    return [f"# {spec.name}", "", *([spec.description, ""] if spec.description else [])]


def _setup(scenario, seed: int) -> list[str]:
    """## Set-up: the population (or the questions and their strategies), the mechanisms,
    arrivals, network and simulation."""
    spec = scenario.spec
    questions = scenario.questions
    unit = spec.simulation.time_unit
    run_lines = [
        f"- time unit: {unit} (every time in this report: arrivals, latency, tick, end and the tables' `time` columns)",
        f"- arrivals: {describe_section(spec.arrivals)}",
        f"- network: latency {describe_section(spec.network.latency)}, loss {spec.network.loss_text()}",
        f"- simulation: {spec.simulation.mode} mode, tick {scenario.tick:.6g}, end {scenario.end:.6g}, "
        f"{spec.simulation.replications} replication(s), seed {seed}",
    ]
    if questions is not None:
        return ["## Set-up", "", *_questions_setup(scenario), *run_lines, "", *_strategies(questions)]
    return [
        "## Set-up",
        "",
        f"- population: {scenario.size:,} clients over {len(scenario.labels)} categories",
        *(
            [f"- answers from {scenario.table.describe()}; the truth is the column's distribution"]
            if scenario.table is not None
            else []
        ),
        *(
            f"- mechanism{' ' + name if scenario.compared else ''}: {m!r}, exact eps = {m.epsilon():.6g}"
            for name, m in scenario.mechanisms
            if scenario.tiers is None
        ),
        *_tiers_setup(scenario),
        *(
            [
                "- the mechanisms privatise the same respondents, who arrive at the same times over the same network "
                "(common random numbers)"
            ]
            if scenario.compared
            else []
        ),
        *run_lines,
        "",
    ]


def _frequencies(scenario, results: pd.DataFrame) -> list[str]:
    """The frequency tasks' sections: final estimates, then their errors over time (nothing
    without frequency rows; one paragraph when no report was received)."""
    if not (results["quantity"] == "frequency").any():
        return []
    if not summary.has_estimates(results):
        return ["## Final estimates", "", _nothing_received(results), ""]
    return [*_final_estimates(scenario, results), *_errors(scenario, results)]


def _final_estimates(scenario, results: pd.DataFrame) -> list[str]:
    """## Final estimates: replication 0 at the end (or the largest estimates when there are
    many answers), over the replications, and the coverage over every checkpoint."""
    questions = scenario.questions
    reps = scenario.spec.simulation.replications
    final = summary.final_frequencies(results)
    k = summary.answer_count(results)
    tasks = ["task"] if final["task"].nunique() > 1 or questions is not None else []
    heard = (
        f"{int(final['n_received'].iloc[0]):,} reports"
        if questions is None
        else "each question's reports in `n_received`"
    )
    out = ["## Final estimates", "", f"Replication 0 at the end ({heard}):", ""]
    if int(final["n_received"].iloc[0]) == 0:
        out += ["No report reached the server in replication 0: its estimates are empty.", ""]
    if k > summary.MANY_ANSWERS:
        top = summary.top_answers(results)
        what = (
            f"of each task, of {k:,} answers{' at most' if questions is not None else ''}"
            if tasks
            else f"of the {k:,} answers"
        )  # several tasks: each its own, not the union of all tasks'
        out += [
            f"The {summary.MANY_ANSWERS} largest estimates {what} (all of them are in "
            "results.csv), with each answer's true rank:",
            "",
            _md_table(top if tasks else top.drop(columns=["task"])),
            "",
        ]
    else:
        shown = tasks + ["category", "truth", "estimate", "ci_low", "ci_high", "covered"]
        out += [_md_table(final[shown + (["n_received"] if questions is not None else [])]), ""]
    if reps > 1:
        kept = summary.of_top_answers(final, results) if k > summary.MANY_ANSWERS else final  # as listed above
        many = kept[tasks + ["category", "truth", "mean_estimate", "rmse", "std_error", "theory_se", "coverage"]]
        out += [f"Over {reps} replications (coverage: share of replications whose interval holds the truth):", ""]
        out += [_md_table(many), ""]
    f = summary.frequency_rows(results).dropna(subset=["estimate"])
    return out + [
        f"Interval coverage over all checkpoints with reports, categories and replications: "
        f"{f['covered'].mean():.4f} ({int(f['covered'].sum())} of {len(f)}).",
        "",
    ]


def _errors(scenario, results: pd.DataFrame) -> list[str]:
    """The estimates at each checkpoint (when the answers are few), and the error of the
    estimated distribution at each checkpoint and against the number of reports."""
    return [
        *(
            ["## Estimates at each checkpoint (replication 0)", "", *_series(results, scenario.questions is not None)]
            if summary.answer_count(results) <= summary.MANY_ANSWERS
            else []
        ),
        "## Error of the estimated distribution at each checkpoint",
        "",
        "L1 = sum over answers of |estimate - truth|, Linf = the largest |estimate - truth| (mean over replications):",
        "",
        _md_table(summary.error_norms(results)),
        "",
        CHECKPOINT_LEGEND,
        "",
        "## Error against the number of reports",
        "",
        _md_table(summary.error_by_n(results)),
        "",
        ERROR_LEGEND,
        "",
    ]


def _means(scenario, results: pd.DataFrame) -> list[str]:
    """## Means of the numeric questions (a scenario of questions only)."""
    means = summary.final_means(results) if scenario.questions is not None else pd.DataFrame()
    if means.empty:
        return []
    return [
        "## Means of the numeric questions",
        "",
        "At the end (estimate, interval, covered, n_received: replication 0; the interval's standard error "
        f"is exact; mean_estimate, rmse, coverage: over {scenario.spec.simulation.replications} replication(s)):",
        "",
        _md_table(means),
        "",
    ]


def _distribution_section(scenario, results: pd.DataFrame) -> list[str]:
    """## Distributions of the numeric questions: quantiles with intervals, and the distances."""
    quantiles, distances = summary.final_quantiles(results), summary.final_distances(results)
    ranges = summary.final_ranges(results)
    items = summary.final_items(results)
    keys = summary.final_keys(results)
    if quantiles.empty and distances.empty and ranges.empty and items.empty and keys.empty:
        return []
    reps = scenario.spec.simulation.replications
    out = ["## Distributions, quantiles and ranges", ""]
    if not keys.empty:
        out += [
            "Key-value questions at the end of replication 0 (PCKV): each key's frequency with its exact standard "
            "error and exact bias (from sets of more keys than the padding length), and its mean value among its "
            "holders (a ratio: its standard error by the delta method):",
            "",
            _md_table(keys),
            "",
        ]
    if not items.empty:
        out += [
            "Check-all-that-apply questions at the end of replication 0: each item's share through padding and "
            "sampling (the interval from the plug-in covariance; `exact_se` at the true sets; `exact_bias` from sets "
            "of more items than the padding length; `naive_se`: the exact standard error of one yes/no question per "
            "item at eps / k, the alternative):",
            "",
            _md_table(items),
            "",
        ]
    if not ranges.empty:
        out += [
            "Ranges of the ordinal questions at the end (estimate, interval, covered, theory_se: replication 0, the "
            "interval from the plug-in covariance, `theory_se` the exact standard error at the true law; "
            f"mean_estimate, rmse, coverage: over {reps} replication(s)):",
            "",
            _md_table(ranges),
            "",
        ]
    if not quantiles.empty:
        out += [
            "Quantiles at the end (estimate, interval, covered: replication 0; mean_estimate, rmse, coverage: over "
            f"{reps} replication(s)); the truth is the answers' own quantile (for an ordinal question, the index of "
            "the answer from 0). Intervals: `ems/bootstrap` the basic "
            "(reflected) intervals of a parametric bootstrap of EMS (EMS is biased: its smoothing trades bias for "
            "variance, and the intervals cover only the part of the bias the bootstrap sees), "
            "`inversion/normal` where the exact normal band of the distribution function crosses the level:",
            "",
            _md_table(quantiles),
            "",
        ]
    if not distances.empty:
        out += [
            "Distances of the estimated histogram from the true one on the same buckets (Wasserstein-1 in the "
            f"answers' unit; Kolmogorov-Smirnov: the largest gap of the distribution functions), replication 0 and "
            f"the mean over {reps} replication(s):",
            "",
            _md_table(distances),
            "",
        ]
    return out


def _distributions(cdfs: pd.DataFrame) -> bytes:
    """Each numeric question's estimated distribution function at the end of replication 0,
    with its band, against the truth."""
    tasks = list(dict.fromkeys(cdfs["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(6.5 * len(tasks), 4.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        g = cdfs[cdfs["task"] == task]
        if g["edge"].isna().any():  # ordered answers (an ordinal question): at their positions
            g = g.assign(edge=np.arange(len(g), dtype=float))
            ax.set_xticks(g["edge"][:: max(1, len(g) // 8)])
            ticks = [short_label(a).replace("$", r"\$") for a in g["answer"][:: max(1, len(g) // 8)]]
            ax.set_xticklabels(ticks, rotation=30, ha="right")  # a "$" is text, not mathtext
        ax.fill_between(g["edge"], g["ci_low"].clip(0, 1), g["ci_high"].clip(0, 1), step="post", alpha=0.25,
                        color="C0", label="interval")  # fmt: skip
        ax.step(g["edge"], g["estimate"], where="post", color="C0", lw=1.4, label="estimate")
        ax.step(g["edge"], g["truth"], where="post", color="k", ls="--", lw=1.0, label="truth")
        ax.set_title(short_label(task.split(":")[0]), fontsize=10)
        ax.set_xlabel("answer")
        ax.set_ylabel("distribution function")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Estimated distribution functions at the end (replication 0), with their intervals", fontsize=10)
    fig.tight_layout()
    return png_bytes(fig)


def _items_figure(items: pd.DataFrame, keys: pd.DataFrame) -> bytes:
    """Check-all-that-apply items and key-value keys at the end of replication 0: each
    share's estimate with its interval, the truth, and the truth plus the exact bias (what
    the estimate is unbiased for)."""
    frames = [
        (task, g["item"].tolist(), g["estimate"], g["ci_low"], g["ci_high"], g["truth"], g["exact_bias"])
        for task, g in items.groupby("task", sort=False)
    ] + [
        (
            task,
            g["key"].tolist(),
            g["frequency"],
            g["frequency"] - 1.959963984540054 * g["frequency_se"],
            g["frequency"] + 1.959963984540054 * g["frequency_se"],
            g["truth"],
            g["frequency_bias"],
        )
        for task, g in keys.groupby("task", sort=False)
    ]
    fig, axes = plt.subplots(1, len(frames), figsize=(6.5 * len(frames), 0.5 * max(len(f[1]) for f in frames) + 2))
    axes = np.atleast_1d(axes)
    for ax, (task, names, est, lo, hi, truth, bias) in zip(axes, frames):
        y = np.arange(len(names))[::-1]
        ax.errorbar(
            est,
            y,
            xerr=[np.clip(est - lo, 0, None), np.clip(hi - est, 0, None)],
            fmt="o",
            color="C0",
            capsize=3,
            label="estimate, 95% interval",
        )
        ax.plot(truth, y, "k|", ms=14, mew=2, label="truth")
        ax.plot(truth + bias, y, "x", color="C3", ms=7, label="truth + exact bias")
        ax.set_yticks(y)
        ax.set_yticklabels([short_label(n).replace("$", r"\$") for n in names])
        ax.set_xlabel("share of respondents")
        ax.set_title(short_label(task), fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return png_bytes(fig)


def _design_figure(design: pd.DataFrame) -> bytes:
    """Under a survey design, per question and answer: the design's standard error, the
    privacy noise's exact one, their sum in quadrature (the theory) and the analyst's
    standard error from the reports (mean over replications)."""
    questions = list(dict.fromkeys(design["question"]))
    fig, axes = plt.subplots(
        1, len(questions), figsize=(4.5 * len(questions), 0.45 * design.groupby("question").size().max() + 2)
    )
    axes = np.atleast_1d(axes)
    for ax, question in zip(axes, questions):
        g = design[design["question"] == question]
        y = np.arange(len(g))[::-1]
        ax.barh(y + 0.2, g["design_se"], height=0.4, color="C2", label="design")
        ax.barh(y - 0.2, g["privacy_se"], height=0.4, color="C1", label="privacy noise (exact)")
        ax.plot(g["se_theory"], y, "k|", ms=14, mew=2, label="both (theory)")
        ax.plot(g["analyst_se"], y, "o", color="C0", ms=5, label="analyst's, from the reports")
        ax.set_yticks(y)
        ax.set_yticklabels([short_label(str(a)).replace("$", r"\$") for a in g["answer"]])
        ax.set_xlabel("standard error of the weighted share")
        ax.set_title(short_label(question), fontsize=10)
        ax.set_xlim(0, 1.1 * float(np.nanmax(g[["design_se", "privacy_se", "se_theory", "analyst_se"]].to_numpy())))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return png_bytes(fig)


def _attack_figure(results: pd.DataFrame, unit: str) -> bytes:
    """Left: each attacker's gain over time (mean over replications) beside its exact
    expectation. Right: each detector's log e-value (mean) against its alarm threshold."""
    rows = results[summary.is_attack(results)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    gain = rows[rows["quantity"] == "gain"]
    for i, (name, g) in enumerate(gain.groupby("category", sort=False)):
        mean = g.groupby("checkpoint")[["time", "estimate", "theory"]].mean()
        left.plot(mean["time"], mean["estimate"], "o-", color=f"C{i}", label=f"{name}: measured")
        left.plot(mean["time"], mean["theory"], "--", color=f"C{i}", label=f"{name}: exact")
    left.axhline(0.0, color="0.6", lw=0.8)
    left.set_xlabel(in_unit("time", unit))
    left.set_ylabel("gain of the targets' estimated share")
    left.legend(fontsize=8)
    evalue = rows[rows["quantity"] == "log_e_value"]
    for i, (name, g) in enumerate(evalue.groupby("category", sort=False)):
        mean = g.groupby("checkpoint")[["time", "estimate", "theory"]].mean()
        right.plot(mean["time"], mean["estimate"], "o-", color=f"C{i + 3}", label=name)
        right.plot(mean["time"], mean["theory"], ":", color=f"C{i + 3}", label=f"{name}: alarm")
    right.set_xlabel(in_unit("time", unit))
    right.set_ylabel("log e-value (mean over replications)")
    if not evalue.empty:
        right.legend(fontsize=8)
    else:
        right.text(0.5, 0.5, "no sequential detector applies to this oracle", ha="center", transform=right.transAxes)
    fig.tight_layout()
    return png_bytes(fig)


def _attacks(scenario, results: pd.DataFrame) -> list[str]:
    """## Fake respondents: gains, detection and recovery."""
    attackers, detectors = summary.attack_tables(results)
    if attackers.empty:
        return []
    reps = scenario.spec.simulation.replications
    specs = {a.name: a for a in scenario.attackers}
    labels = scenario.labels
    qs = scenario.questions

    def aim(a: Any) -> str:
        if a.moves == "moments":  # a numeric question's mean and variance
            return f"moving the mean towards {float(a.targets[0]):g} and the variance towards {float(a.targets[1]):g}"
        if np.ndim(a.targets) == 0:  # a numeric question's mean
            return f"moving the mean towards {float(a.targets):g}"
        names = labels if qs is None else qs.questions[a.question].labels
        shown = ", ".join(str(names[t]) for t in a.targets[:8])
        return f"promoting {shown}{' ...' if a.targets.size > 8 else ''}"

    setup = [
        f"- `{a.name}`{'' if qs is None else f' (question {qs.questions[a.question].name})'}: {a.count:,} fake "
        f"reports ({a.share:.2%} of those received), strategy `{a.strategy}`, "
        f"{'all at ' + str(a.start) if a.burst else f'from {a.start:g} to {a.stop:g}'}, {aim(a)}"
        for a in specs.values()
    ]
    out = [
        "## Fake respondents",
        "",
        *setup,
        "",
        f"At the end, over {reps} replication(s): the gain is the targets' estimated total share (or a numeric "
        "question's estimated mean) from all the reports minus that from the honest ones alone (Cao, Jia and Gong "
        "2021; Li et al. 2023); gain_exact its expectation given the fake reports received, exact for every "
        "mechanism; truth the targets' true share (or the true mean); gain_after_norm_sub the gain once both "
        "estimates are projected by Norm-Sub (the weak defence); flagged the share of the attacker's reports "
        "that frequent-itemset detection flagged at the end and gain_after_recovery the gain once every flagged "
        "report is removed (with server.keep_reports). For the joint attacks on a question's mean and variance "
        "(variance = true), the gain is the variance's; mean and variance are the poisoned estimates, beside their "
        "exact expectations given the groups' sizes received (mean_exact, variance_exact) and exact standard errors "
        "(one replication's). docs/risk.md explains each.",
        "",
        _md_table(attackers),
        "",
    ]
    if not detectors.empty:
        out += [
            "Detection: `detected` is the share of replications in which the anytime-valid monitor raised the alarm "
            "(false-alarm probability alpha over the whole collection), median_time when it did; for frequent "
            "itemsets, the first checkpoint at which a set was found, and the share of honest reports flagged at the "
            "end; each defence's cost on the honest respondents alone: how much it changes the L1 error of their "
            "estimate against the answers' law (negative: it helps). attack.png draws the gain and the "
            "monitors over time.",
            "",
            _md_table(detectors),
            "",
        ]
    return out


def _other_tasks(scenario, results: pd.DataFrame) -> list[str]:
    """## Other analyst tasks: their totals at the end, and replication 0 at every checkpoint."""
    # (a scenario's numeric questions are shown above)
    rest = results if scenario.questions is None else results[~results["quantity"].isin(summary.MOMENT_QUANTITIES)]
    totals = summary.other_task_totals(rest)
    if totals.empty:
        return []
    reps = scenario.spec.simulation.replications
    series = summary.other_task_series(rest)
    return [
        "## Other analyst tasks",
        "",
        f"At the end, over {reps} replication(s):",
        "",
        _md_table(totals),
        "",
        "Replication 0 at every checkpoint (estimate, theory, truth side by side):",
        "",
        _md_table(series.drop(columns=["category"])),
        "",
    ]


def _design(scenario, results: pd.DataFrame) -> list[str]:
    """## Weighted estimates under the survey design (population.weight, strata, psu)."""
    table = summary.design_table(results)
    if table.empty:
        return []
    reps = scenario.spec.simulation.replications
    return [
        "## Weighted estimates under the survey design",
        "",
        "Each share is the weighted (Hajek) estimate from the privatised reports: sum w_i u_i / sum w_i, u_i a "
        "report's unbiased term. Its interval uses the analyst's standard error, linearised over the PSUs "
        "within strata from the reports alone (what an analyst in the field computes): it holds the design's "
        "variance and the privacy noise's together. The simulation also knows the parts: truth_weighted is the "
        "same estimate from the true answers (the survey without privacy), design_se its design standard error "
        "(the same linearisation on the true answers) and privacy_se the noise's exact standard error, "
        "sqrt(sum w_i^2 Var(u_i | x_i)) / sum w_i; se_theory = sqrt(design_se^2 + privacy_se^2). Replication 0 "
        f"at the end; analyst_se is the mean over {reps} replication(s), and sd_over_replications the spread of "
        "the estimate over them (the same sample each time: privacy noise alone, to set beside privacy_se). "
        "Estimates per stratum are in results.csv (stratum_weighted, stratum_weighted_se); design.png "
        "draws the standard errors.",
        "",
        _md_table(table),
        "",
    ]


def _risk(scenario, seed: int) -> list[str]:
    """## What a respondent risks: the server's best guess of each answer from one report."""
    qs = scenario.questions
    if qs is None:
        items = [(name, m, scenario.prior) for name, m in scenario.mechanisms]
    else:  # questions with a finite list of answers
        items = [(q.name, qs.mechanism(j), q.prior) for j, q in enumerate(qs.questions) if q.k > 0]
    if not items:
        return []
    rows = risk_table(items, seed)
    out = [
        "## What a respondent risks",
        "",
        "How often the server's best (Bayes-optimal) guess of a respondent's answer from their report is right "
        "(accuracy), against guessing the most common answer without it (baseline); eps-LDP caps the accuracy at "
        "exp_eps times the baseline and the posterior-to-prior ratio (worst_ratio) at exp_eps. The prior is the "
        "answers' true law, as a server that knows the population would use it (docs/risk.md):",
        "",
        _md_table(pd.DataFrame(rows)),
        "",
    ]
    if qs is not None and qs.strategy == "split":
        finite = [
            (q, qs.mechanism(j))
            for j, q in enumerate(qs.questions)
            if q.k > 0 and getattr(qs.mechanism(j), "output_size", None) is not None and q.codes is not None
        ]
        if len(finite) >= 2:
            codes = np.stack([q.codes for q, _ in finite], axis=1)
            profiles, counts = np.unique(codes, axis=0, return_counts=True)
            whole = profile_risk([m for _, m in finite], profiles, counts / counts.sum(), samples=20_000, rng=seed)
            how = (
                "exact" if whole.method == "enumeration" else f"Monte Carlo, standard error {whole.standard_error:.2g}"
            )
            reid = reidentification_risk([m for _, m in finite], codes, samples=20_000, rng=seed)
            how_reid = (
                "exact" if reid.method == "enumeration" else f"Monte Carlo, standard error {reid.standard_error:.2g}"
            )
            out += [
                f"The whole profile of the {len(finite)} questions above read from the table "
                f"({', '.join(q.name for q, _ in finite)}; {len(profiles):,} distinct profiles): the best guess from "
                f"all of a respondent's reports is right for {whole.accuracy:.4%} of respondents, against "
                f"{whole.baseline:.4%} for the most common profile ({how}).",
                "",
                f"Re-identification: an attacker who holds the table's {reid.respondents:,} rows and one respondent's "
                f"reports, and picks the row that best explains them, picks the right respondent with probability "
                f"{reid.accuracy:.4%} ({how_reid}), against {reid.baseline:.4%} at random and {reid.exposed:.2%} "
                f"from the true answers themselves ({reid.unique:.1%} of the respondents have a profile no one else "
                "in the table has).",
                "",
            ]
    return out


def _nonresponse(results: pd.DataFrame) -> list[str]:
    """## Answer-dependent non-response: the bias it causes, and the reweighted estimate."""
    nonresponse = summary.nonresponse_table(results)
    if nonresponse.empty:
        return []
    reweighted = "reweighted" in nonresponse.columns
    return [
        "## Answer-dependent non-response",
        "",
        "Each report is lost with a probability that depends on its respondent's true answer, so the reports "
        "received follow q = p r / (p . r) (r: the response rates) and the raw estimate targets q, not p: "
        "exact_bias = q - p, raw_target = q, raw_error = raw estimate - p (replication 0, at the end)"
        + (
            "; the analyst, told the response rates, reweights the unbiased estimate (p = (q / r) / sum(q / r)) "
            "and gives a normal interval from its delta-method standard error"
            if reweighted
            else ""
        )
        + ":",
        "",
        _md_table(nonresponse),
        "",
    ]


def _tiers(results: pd.DataFrame) -> list[str]:
    """## Privacy tiers: each tier's estimate, their combination and the naive pooling."""
    tiers = summary.tiers_table(results)
    if tiers.empty:
        return []
    sizes = ", ".join(f"{name}: {n:,}" for name, n in summary.tier_sizes(results))
    return [
        "## Privacy tiers",
        "",
        "Each tier's reports estimate the distribution alone; the analyst combines them answer by answer with "
        "inverse-variance weights (plug-in variances; `combined`, the `tiers` task's frequency rows) and shows "
        "the naive pooling beside it (the tiers' estimates weighted by their numbers of reports, `naive`). "
        "Exact standard errors at the truth and at each tier's reports received (" + sizes + "), replication "
        "0 at the end:",
        "",
        _md_table(tiers),
        "",
    ]


def _df_text(df: float) -> str:
    """`` (df 3)``, or nothing for a test without degrees of freedom (a calibrated one)."""
    return "" if pd.isna(df) else f" (df {df:.0f})"


def _crosstabs(scenario, results: pd.DataFrame) -> list[str]:
    """## Cross-tabulations: the tests of independence and the joint tables (questions only)."""
    tests = summary.crosstab_tests(results) if scenario.questions is not None else pd.DataFrame()
    if tests.empty:
        return []
    reps = scenario.spec.simulation.replications
    cells = summary.crosstab_cells(results)
    return [
        "## Cross-tabulations",
        "",
        "Two questions answered by the same respondents (`split`), or a question against the groups of a "
        "column of the table (`:homogeneity`: do the groups answer alike?). Two categorical questions with "
        "finite mechanisms: the joint table estimated from the pairs of reports through the product of the "
        "two mechanisms (projected onto the simplex; the interval is that of the unbiased estimate; exact_se: "
        "the exact standard error at the truth). Tests of independence at the end of replication 0: `ldp`, "
        "the Wald chi-square test on the privatised reports (for other kinds, on the pairs of each report's "
        "unbiased term: n times the sum of the squared canonical correlations); `pearson`, Pearson's "
        "chi-square test (no continuity correction) on the true answers of the same respondents, the "
        "non-private test; `answers`, the paired-terms test on the same respondents' true answers; "
        "`conditional`, the exact conditional test on the groups' output counts (a finite mechanism). "
        "association: the norm of the terms' cross-covariance, beside the true answers' "
        f"(rejection_rate: over {reps} replication(s)):",
        "",
        _md_table(tests),
        "",
        *(["The joint tables at the end (replication 0):", "", _md_table(cells), ""] if not cells.empty else []),
    ]


def _clients(results: pd.DataFrame) -> list[str]:
    """## Clients and reports: the engine's counts, mean over replications."""
    return [
        "## Clients and reports (mean over replications)",
        "",
        _md_table(summary.engine_totals(results), COUNTS),
        "",
    ]


def _series(results: pd.DataFrame, by_task: bool) -> list[str]:
    """The published series of replication 0 (one table per question when there are several)."""
    if not by_task:
        return [_series_table(summary.checkpoint_series(results)), ""]
    out = []
    for task in results.loc[results["quantity"] == "frequency", "task"].unique():
        out += [f"`{task}`:", "", _series_table(summary.checkpoint_series(results[results["task"] == task])), ""]
    return out


def _series_table(series: pd.DataFrame):
    """The published series: one column per answer, whatever the answer's label says."""
    fixed = {"checkpoint", "time", "n_received"}
    return _md_table(series, {c: "number" for c in series.columns if c not in fixed})


def _tiers_setup(scenario) -> list[str]:
    """The privacy tiers of a scenario with ``[mechanism] tiers`` (none otherwise)."""
    tiers = scenario.tiers
    if tiers is None:
        return []
    out = ["- privacy tiers: each respondent is in one tier, drawn with the tier's share; its exact eps is its tier's"]
    for (name, m), share in zip(tiers.named, tiers.shares):
        out.append(f"  - {name}, share {share:.6g}: {m!r}, exact eps = {m.epsilon():.6g}")
    return out


def _questions_setup(scenario) -> list[str]:
    """Set-up lines of a scenario whose respondents answer several questions."""
    qs = scenario.questions
    own = qs.privacy.set_index("strategy").loc[qs.strategy]
    how = (
        "every respondent answers every question, each at its share of the budget"
        if qs.strategy == "split"
        else "every respondent answers one question chosen uniformly at random, with the whole budget"
    )
    out = [f"- respondents: {scenario.size:,}, each asked {qs.count} questions"]
    if qs.table is not None:
        how_rows = "resampled with replacement" if qs.resample else "one respondent per row, as is"
        out.append(
            f"- answers from {qs.table.shown} ({qs.rows:,} rows, {how_rows}); each respondent is one row for "
            "every question, so answers stay correlated across questions; the truth of each question is its "
            "column's distribution (its mean, for a numeric question)"
        )
    if qs.design is not None:
        d = qs.design.summary()
        named = ", ".join(f"{k} {v!r}" for k, v in qs.design.columns.items() if v is not None)
        out.append(
            f"- survey design ({named}): {d['strata']} strata, {d['psus']:,} PSUs, total weight "
            f"{d['total_weight']:,.6g}, Kish effective size {d['kish_size']:,.1f} of {qs.rows:,} rows"
        )
    for j, q in enumerate(qs.questions):
        source = f"column {q.column!r}, " if q.column is not None else ""
        what = q.describe()
        out.append(f"- question `{q.name}` ({source}{what}): {qs.mechanism(j)!r}, exact eps = {qs.privacy_eps(j):.6g}")
    out += [
        f"- budget: total eps {qs.total:g} per respondent, strategy `{qs.strategy}` ({how})",
        f"- exact privacy per respondent: eps = {own['eps']:.6g}, delta = {own['delta']:.6g}",
    ]
    return out


def _strategies(qs) -> list[str]:
    """Both budget strategies side by side: exact privacy, exact variances."""
    n = qs.size
    per_answer = qs.variance.assign(
        se_split=np.sqrt(qs.variance["var_split"]), se_one_random=np.sqrt(qs.variance["var_one_random"])
    )
    return [
        "## Budget strategies: split or one random question",
        "",
        "Exact privacy per respondent under each strategy (`split`: the sum of the questions' eps, exact for "
        "pure eps; with (eps, delta) mechanisms, the optimal composition's delta at that sum. `one_random`: "
        "the whole budget, and the mean of the questions' deltas):",
        "",
        _md_table(qs.privacy.rename(columns={"question_eps": "eps of each question"})),
        "",
        f"Exact variance of the unbiased estimates, summed over each question's answers (for a numeric question: "
        f"of the mean of its reports), at {n:,} respondents "
        f"(`split`: all of them answer every question; `one_random`: {n / qs.count:,.6g} per question, the "
        "expected number; losses scale both alike). This run uses "
        f"`{qs.strategy}`:",
        "",
        _md_table(summary.strategy_comparison(qs.variance)),
        "",
        "Per answer (standard errors):",
        "",
        _md_table(per_answer[["question", "category", "truth", "se_split", "se_one_random"]]),
        "",
        *_optimal_plan(qs),
    ]


def _optimal_plan(qs) -> list[str]:
    """``[budget] strategy = "optimal"``: the plan beside the equal split and one random question."""
    if getattr(qs, "plan", None) is None:
        return []
    per, totals = summary.optimal_plan(qs.plan, qs.variance, qs.count)
    return [
        'The optimal split (`[budget] strategy = "optimal"`): the eps of each question that minimise the '
        "weighted sum of the questions' exact variances (each `weight` stated in `budget.weights`, else 1 over the "
        "question's variance with the whole budget), found by a derivative-free search over the simplex from the "
        "equal split; this run's `split` rows above are at these eps:",
        "",
        _md_table(per),
        "",
        "The weighted loss of each strategy, and its effective sample size relative to the equal split (how many "
        "times the respondents the equal split would need for the same loss):",
        "",
        _md_table(totals),
        "",
    ]


# ----------------------------------------------------------------------------- what ldpsim run prints
def console(result: Any) -> list[str]:
    """What ``ldpsim run`` prints for a finished survey run (``result``: its RunResult),
    line by line: the estimates, the other tasks' totals, the engine's counts."""
    out: list[str] = []
    say, show = sayer(out)
    spec = result.scenario.spec
    whole = result.run_dir / "summary.md"  # every table printed here, whole
    say(
        f"{spec.name}: {result.scenario.size:,} clients, "
        f"{spec.simulation.replications} replication(s), seed {result.seed}"
    )
    qs = result.scenario.questions
    if qs is not None:
        out.extend(questions_console(qs, whole))
    if (result.results["quantity"] == "frequency").any() and not summary.has_estimates(result.results):
        say("no report reached the server in any replication: nothing to estimate (see the report)")
    elif (result.results["quantity"] == "frequency").any():
        final = summary.final_frequencies(result.results)
        k = summary.answer_count(result.results)
        if spec.simulation.replications == 1:
            cols = ["category", "truth", "estimate", "ci_low", "ci_high", "covered"]
        else:
            cols = ["category", "truth", "mean_estimate", "rmse", "theory_se", "coverage"]
        if final["task"].nunique() > 1 or qs is not None:
            cols = ["task", *cols]
        if k > summary.MANY_ANSWERS:  # each task's own largest estimates (replication 0), by decreasing truth
            final = summary.of_top_answers(final, result.results)
            order = {t: i for i, t in enumerate(dict.fromkeys(final["task"]))}
            final = (
                final.assign(_order=final["task"].map(order))
                .sort_values(["_order", "truth"], ascending=[True, False], kind="stable")
                .drop(columns="_order")
            )
            which = " of each task" if len(order) > 1 else ""
            when = " in replication 0" if spec.simulation.replications > 1 else ""
            say(
                f"the {summary.MANY_ANSWERS} answers with the largest estimates{which}{when}, of {k:,} "
                "(all in results.csv):"
            )
        show(text_table(final[cols], na_rep="", float_format=lambda x: f"{x:.5f}", keys=_keys(final[cols]), full=whole))
        norms = summary.error_norms(result.results)
        last = norms[norms["reason"] == "end"]
        for _, row in last.iterrows():
            say(f"{row['task']}: L1 error {row['l1']:.5f}, Linf error {row['linf']:.5f} at the end")
    means = summary.final_means(result.results) if qs is not None else None
    if means is not None and not means.empty:
        cols = (
            ["task", "truth", "estimate", "ci_low", "ci_high", "covered"]
            if spec.simulation.replications == 1
            else ["task", "truth", "mean_estimate", "rmse", "theory_se", "coverage"]
        )
        show(text_table(means[cols], na_rep="", float_format=lambda x: f"{x:.5g}", full=whole))
    if qs is not None:  # ranges and quantiles of ordinal and numeric questions
        one = spec.simulation.replications == 1
        for frame, key in (
            (summary.final_ranges(result.results), "range"),
            (summary.final_quantiles(result.results), "level"),
        ):
            if frame.empty:
                continue
            cols = [
                "task",
                key,
                "truth",
                *(["estimate", "ci_low", "ci_high", "covered"] if one else ["mean_estimate", "rmse", "coverage"]),
            ]
            show(
                text_table(
                    frame[cols], na_rep="", float_format=lambda x: f"{x:.5g}", keys=_keys(frame[cols]), full=whole
                )
            )
        keys = summary.final_keys(result.results)
        if not keys.empty:
            cols = ["task", "key", "truth", "frequency", "frequency_bias", "true_mean", "mean", "mean_se"]
            show(
                text_table(keys[cols], na_rep="", float_format=lambda x: f"{x:.5g}", keys=_keys(keys[cols]), full=whole)
            )
        items = summary.final_items(result.results)
        if not items.empty:
            cols = ["task", "item", "truth", "estimate", "ci_low", "ci_high", "exact_bias", "naive_se"]
            show(
                text_table(
                    items[cols], na_rep="", float_format=lambda x: f"{x:.5g}", keys=_keys(items[cols]), full=whole
                )
            )
        distances = summary.final_distances(result.results)
        for _, row in distances.iterrows():
            say(
                f"{row['task']}: Wasserstein-1 {row['wasserstein1']:.4g}, Kolmogorov-Smirnov {row['ks']:.4g} at the end"
            )
    others = summary.other_task_totals(result.results)
    if qs is not None:  # the means are shown above
        others = others[~others["quantity"].isin(summary.MOMENT_QUANTITIES)] if not others.empty else others
    if not others.empty:
        show(text_table(others, na_rep="", float_format=lambda x: f"{x:.6g}", keys=_keys(others), full=whole))
    attackers, detectors = summary.attack_tables(result.results)
    for _, row in attackers.iterrows():
        flagged = (
            f", {row['flagged']:.0%} of its reports flagged, gain after removing them {row['gain_after_recovery']:.4g}"
            if "flagged" in attackers.columns and np.isfinite(row["flagged"])
            else ""
        )
        moved = (
            f"mean {row['mean']:.4g} (exact {row['mean_exact']:.4g}), variance {row['variance']:.4g} (exact "
            f"{row['variance_exact']:.4g}), "
            if "variance" in attackers.columns and np.isfinite(row["variance"])
            else ""
        )
        say(
            f"attacker {row['attacker']}: {moved}gain {row['gain']:.4g} (exact {row['gain_exact']:.4g}) at a fake "
            f"share of {row['fake_share']:.2%}{flagged}"
        )
    for _, row in detectors.iterrows():
        if "median_time" in detectors.columns and np.isfinite(row.get("median_time", np.nan)):
            say(
                f"detector {row['detector']}: alarm in {row['detected']:.0%} of the replications, median time "
                f"{row['median_time']:.4g}"
            )
    nonresponse = summary.nonresponse_table(result.results)
    if not nonresponse.empty:
        say(
            "answer-dependent loss (replication 0 at the end): the raw estimate's exact bias"
            + (" and the reweighted estimate" if "reweighted" in nonresponse.columns else "")
            + ":"
        )
        show(text_table(nonresponse, na_rep="", float_format=lambda x: f"{x:.5f}", keys=_keys(nonresponse), full=whole))
    tiers = summary.tiers_table(result.results)
    if not tiers.empty:
        say(
            "privacy tiers (replication 0 at the end): the combined estimate, the naive pooling, exact standard errors:"
        )
        show(text_table(tiers, na_rep="", float_format=lambda x: f"{x:.5f}", keys=_keys(tiers), full=whole))
    tests = summary.crosstab_tests(result.results) if qs is not None else None
    if tests is not None and not tests.empty:
        for task, g in tests.groupby("task", sort=False):
            shown = {row["test"]: row for _, row in g.iterrows()}
            groups = str(task).endswith(summary.HOMOGENEITY)
            null, what = ("homogeneity", "report") if groups else ("independence", "pair")
            labels = (
                ("LDP Wald", shown.get("ldp")),
                ("Pearson on the true answers", shown.get("pearson")),
                ("Wald on the true answers", shown.get("answers")),
                ("exact conditional", shown.get("conditional")),
            )
            parts = [
                f"{label} chi2 {r['statistic']:.4g}{_df_text(r['df'])}, p {r['p_value']:.3g}, "
                f"{'rejects' if r['reject'] == 'yes' else 'does not reject'} {null}"
                for label, r in labels
                if r is not None and not pd.isna(r["statistic"])
            ]
            n = g["n_received"].iloc[0]
            err = g["max_abs_error"].iloc[0]
            head = f"{task}: {plural(int(n), what) if not pd.isna(n) else f'no {what}s'}"
            if not pd.isna(err):
                head += f", max |estimate - truth| {err:.5f}"
            say(head + "; " + ("; ".join(parts) if parts else "no test yet"))
    totals = summary.engine_totals(result.results).set_index("quantity")["mean"]
    say(
        f"reports received {totals.get('received', 0):,.0f}, lost {totals.get('lost', 0):,.0f}, "
        f"in flight at the end {totals.get('in_flight', 0):,.0f} (mean per replication)"
    )
    return out


def _keys(frame: pd.DataFrame) -> int:
    """How many leading columns of a survey table name its rows (task, then category or
    quantity): repeated in every block when the table is printed in blocks."""
    names = [str(c) for c in frame.columns[:2]]
    return 2 if names[:1] == ["task"] and names[1:] in (["category"], ["quantity"]) else 1


def questions_console(qs: Any, whole: Any = None) -> list[str]:
    """Several questions per respondent, line by line: the budget, each strategy's exact
    privacy and the exact variances side by side (``whole``: the file that holds the table whole)."""
    out: list[str] = []
    say, show = sayer(out)
    how = qs.strategy if getattr(qs, "plan", None) is None else "optimal (a split at the eps below)"
    say(f"{qs.count} questions per respondent, budget eps {qs.total:g}, strategy {how}; exact privacy per respondent:")
    for row in qs.privacy.to_dict("records"):
        mark = f"  (this{KEEP}run)" if row["strategy"] == qs.strategy else ""
        say(
            f"  {row['strategy']}: eps = {row['eps']:.6g}, delta = {row['delta']:.6g} (questions at eps "
            f"{row['question_eps']}){mark}"
        )
    say(
        f"exact variance summed over each question's answers at {qs.size:,} "
        f"respondents (one_random: n / {qs.count} per question):"
    )
    show(text_table(summary.strategy_comparison(qs.variance), na_rep="", float_format=lambda x: f"{x:.4g}", full=whole))
    if getattr(qs, "plan", None) is not None:
        per, totals = summary.optimal_plan(qs.plan, qs.variance, qs.count)
        say("budget strategy optimal: the eps of each question that minimise the weighted sum of exact variances:")
        show(text_table(per, na_rep="", float_format=lambda x: f"{x:.4g}", full=whole))
        show(text_table(totals, na_rep="", float_format=lambda x: f"{x:.4g}", full=whole))
    return out
