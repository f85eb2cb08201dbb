"""The figures and summary.md of a multi-party run (``kind = "multiparty"``), rendered to
bytes from the summaries of :mod:`ldpsim.report.multiparty_tables`: set-up, each party's
exact privacy per protocol (announced and, with deviating parties, as run), each
receiver's function and gain, measured against exact accuracy (``accuracy.png``), the
exact worst-case accuracies, honest against deviating parties, the accuracy lost to the
channel at each loss rate (``channel.png``) and the completion delays.

Pure functions of the scenario, the seed and the results frame, so a resumed run writes
the same files as an uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ldpsim._text import sayer
from ldpsim._text import table as text_table
from ldpsim.report import multiparty_tables as mt
from ldpsim.report.figures import amount, in_unit, plt, png_bytes, quiet_figures
from ldpsim.report.html import TableText, run_html, table
from ldpsim.report.multiparty_tables import (
    channel_table,
    deviation_table,
    gain_text,
    privacy_tables,
    receivers_table,
    summarise,
    worst_case_table,
)
from ldpsim.report.tables import describe_section, figures_and_files

FIGURE = "accuracy.png"
CHANNEL_FIGURE = "channel.png"
#: Receivers drawn in the channel figure at most (the observer and the first parties).
CHANNEL_LINES = 10


def render_report(
    scenario: Any, results: pd.DataFrame, seed: int
) -> tuple[dict[str, bytes], tuple[pd.DataFrame, pd.DataFrame]]:
    """The report files (the figure, report.html, then summary.md) and the two summary
    tables (accuracy, latency) of :func:`summarise`."""
    summary, latency = summarise(results, scenario)
    channel = channel_table(results, summary, scenario)
    with quiet_figures():
        figure = _figure(scenario, summary, latency)
        files = {FIGURE: figure}
        if not channel.empty:
            files[CHANNEL_FIGURE] = _channel_figure(scenario, results, summary)
    lines = _summary_lines(scenario, summary, latency, seed, results, channel)
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
        ax.errorbar(
            x - width * 0.15,
            g["measured"],
            yerr=g["tolerance"],
            fmt="o",
            ms=4,
            capsize=3,
            color=colors[q % 10],
            label=f"{name}: measured ± tolerance",
        )
        ax.plot(x + width * 0.15, g["exact"], "D", ms=5, mfc="none", color=colors[q % 10], label=f"{name}: exact")
    labels = []
    for r in receivers:
        row = summary[summary["party"] == r].iloc[0]
        labels.append("observer" if r == "observer" else f"party {r}\n(ε={row['eps']:g}, δ={row['delta']:g})")
    ax.set_xticks(x0)
    ax.set_xticklabels(labels, fontsize=7)
    names = sorted({t.name for t in (getattr(scenario, "tasks", ()) or (scenario.task,))})
    ax.set_ylabel(f"average accuracy ({', '.join(names)})")
    alpha = scenario.spec.simulation.alpha
    ax.set_title(f"Measured vs exact accuracy (tolerance: false-failure ≤ {alpha:g} over the table)", fontsize=9)
    ax.legend(fontsize=7)
    if not latency.empty:
        lx = np.arange(len(latency))
        ax2.plot(lx, latency["mean_measured"], "o", color="tab:blue", label="mean (measured)")
        if "mean_theory" in latency.columns:  # an interactive protocol's delay may have no closed form
            ax2.plot(lx, latency["mean_theory"], "_", ms=14, color="tab:blue", label="mean (theory)")
        ax2.plot(lx, latency["p99_measured"], "s", color="tab:red", label="99% quantile (measured)")
        if "p99_theory" in latency.columns:
            ax2.plot(lx, latency["p99_theory"], "_", ms=14, color="tab:red", label="99% quantile (theory)")
        ax2.set_xticks(lx)
        ticks = ["obs" if p == "observer" else p for p in latency["party"]]
        if "protocol" in latency.columns:  # completion delays per protocol (interactive protocols)
            ticks = [f"{name}\n{t}" for name, t in zip(latency["protocol"], ticks)]
        ax2.set_xticklabels(ticks, fontsize=8)
        ax2.set_xlabel("receiver")
        ax2.set_ylabel(
            in_unit("completion delay", scenario.spec.simulation.time_unit) + "\nlast message in - round start"
        )
        ax2.set_title("Transcript completion delay", fontsize=9)
        ax2.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def _channel_figure(scenario, results: pd.DataFrame, summary: pd.DataFrame) -> bytes:
    """The accuracy lost to the channel against the loss rate (PNG bytes): per receiver, the
    exact gain with a perfect channel minus the exact gain at each rate (lines), one panel
    per protocol, and the measured loss at the scenario's rate with its tolerance."""
    first = results["replication"].min()
    grid = results[(results["quantity"] == "channel_accuracy") & (results["replication"] == first)]
    perfect = results[(results["quantity"] == "perfect_channel_accuracy") & (results["replication"] == first)]
    perfect = perfect.set_index(["protocol", "party"])["theory"]
    acc = summary[summary["quantity"] == "accuracy"].set_index(["protocol", "party"])
    protocols = list(dict.fromkeys(grid["protocol"]))
    parties = list(dict.fromkeys(grid["party"]))
    shown = ([p for p in parties if p < 0] + [p for p in parties if p >= 0])[:CHANNEL_LINES]
    fig, axes = plt.subplots(1, len(protocols), figsize=(5.2 * len(protocols) + 1.5, 4.2), squeeze=False, sharey=True)
    colors = plt.cm.tab10(np.arange(10))
    loss = float(scenario.spec.network.loss)
    for ax, name in zip(axes[0], protocols):
        g = grid[grid["protocol"] == name]
        for n, party in enumerate(shown):
            line = g[g["party"] == party].sort_values("loss")
            label = "observer" if party < 0 else f"party {int(party)}"
            best = float(perfect.loc[(name, party)])
            ax.plot(line["loss"], best - line["theory"], "-", lw=1.3, color=colors[n % 10], label=f"{label}: exact")
            s = acc.loc[(name, "observer" if party < 0 else str(int(party)))]
            ax.errorbar(
                [loss], [best - s["measured"]], yerr=[s["tolerance"]], fmt="o", ms=4, capsize=3, color=colors[n % 10]
            )
        ax.axvline(loss, color="0.6", lw=0.8, ls=":")
        ax.axhline(0.0, color="0.3", lw=0.6)
        ax.set_xlabel("loss rate (per message and receiver)")
        ax.set_title(
            f"{name}" + (f" (deadline {scenario.spec.network.deadline:g})" if scenario.spec.network.deadline else ""),
            fontsize=9,
        )
        ax.grid(True, lw=0.4, alpha=0.5)
    axes[0][0].set_ylabel("accuracy lost to the channel\n(perfect channel - lossy, expected gain)")
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(
        f"Accuracy lost to the channel against the loss rate: exact lines; dots: measured at loss {loss:g} ± tolerance",
        fontsize=9,
    )
    fig.tight_layout()
    return png_bytes(fig)


def _bits(spec: Any) -> bool:
    """Whether every party holds a bit (``[parties] values``, 2 by default)."""
    sizes = getattr(spec.parties, "sizes", None)
    return sizes is None or all(a == 2 for a in sizes())


def _parties_line(spec: Any, levels: str, p_one: Any) -> str:
    """The set-up line of the parties: their bits' law, or each party's number of values."""
    if _bits(spec):
        return f"- parties: k = {spec.parties.k}{levels}, P(bit = 1) = {p_one}"
    sizes = list(spec.parties.sizes())
    return (
        f"- parties: k = {spec.parties.k}{levels}; each holds one value, uniform on {{0, ..., a_j - 1}}, "
        f"alphabet sizes a = {sizes}"
    )


def _md_table(df: pd.DataFrame) -> TableText:
    return table(df)


def _summary_lines(
    scenario: Any,
    summary: pd.DataFrame,
    latency: pd.DataFrame,
    seed: int,
    results: pd.DataFrame | None = None,
    channel: pd.DataFrame | None = None,
) -> list[str]:
    """summary.md as a list of lines (its tables remember their frames for report.html): one
    function per section, in this order."""
    results = results if results is not None else pd.DataFrame(columns=["quantity"])
    return [
        *_title(scenario.spec),
        *_setup(scenario, seed),
        *_privacy(scenario),
        *_receivers(scenario),
        *_accuracy(scenario, summary),
        *_worst_case(scenario, results),
        *_deviating_parties(scenario, results, summary),
        *_channel_loss(scenario, channel),
        *_completion(scenario, latency),
        *_files(channel),
    ]


def _tasks(scenario: Any) -> list[Any]:
    """Each receiver's task (one for all when the scenario has a single task)."""
    return list(getattr(scenario, "tasks", ()) or [scenario.task])


def _one_task(scenario: Any) -> bool:
    """Whether every receiver computes the same function with the same gain."""
    return len({(t.name, gain_text(t)) for t in _tasks(scenario)}) == 1


def _deviations(scenario: Any) -> list[Any]:
    return list(getattr(scenario, "deviations", ()) or ())


def _channel(scenario: Any) -> tuple[float, float | None, float]:
    """The channel's loss rate, deadline (None: none) and P(a message is not heard in time)."""
    net = scenario.spec.network
    return float(getattr(net, "loss", 0.0)), getattr(net, "deadline", None), float(getattr(scenario, "missing", 0.0))


def _title(spec: Any) -> list[str]:
    """The scenario's name, and its description if any."""
    return [f"# {spec.name}", "", *([spec.description, ""] if spec.description else [])]


def _setup(scenario: Any, seed: int) -> list[str]:
    """## Set-up: parties, tasks, protocols, rounds, network, channel, deviating parties."""
    spec = scenario.spec
    unit = spec.simulation.time_unit
    loss, deadline, missing = _channel(scenario)
    levels = (
        f", eps = {spec.parties.levels('eps')}, delta = {spec.parties.levels('delta')}"
        if spec.parties.eps is not None
        else ""
    )
    task_line = (
        f"- task: {scenario.task.name} ({scenario.task.n_outputs} outputs), gain {gain_text(scenario.task)}"
        if _one_task(scenario)
        else f"- tasks: one per receiver (table below); default {scenario.task.name}, gain {gain_text(scenario.task)}"
    )
    channel_line = f"- channel: loss {loss:g} per message and receiver"
    if deadline is not None:
        channel_line += (
            f", deadline {amount(deadline, unit)} after the round's start (P(latency > deadline) = "
            f"{float(getattr(scenario, 'late', 0.0)):.4g})"
        )
    else:
        channel_line += ", no deadline"
    channel_line += f": a message is not heard with probability m = {missing:.4g}"
    out = [
        "## Set-up",
        "",
        _parties_line(spec, levels, spec.parties.p_one),
        task_line,
        f"- protocols: {', '.join(p.name for p in scenario.protocols)} (common random numbers: the same bits, noise "
        "uniforms, latencies and losses for all)",
        f"- rounds: {spec.rounds.count:,} per replication, in batches of {spec.rounds.batch:,}, one every "
        f"{amount(spec.rounds.interval, unit)}",
        f"- network: latency {describe_section(spec.network.latency)}, in {unit}",
        channel_line,
    ]
    if getattr(scenario, "interactive", False):  # the slots of each protocol, and no channel
        slots = "; ".join(f"{p.name} {list(p.speakers)}" for p in scenario.protocols)
        out[-1] = "- channel: no loss, no deadline (interactive protocols): every message is heard"
        out.append(
            f"- interactive protocols, the speaker of each slot: {slots}; a slot is sent once its speaker holds the "
            "messages its rule reads; inputs uniform"
        )
    deviations = _deviations(scenario)
    if deviations:
        fixed = "fixed bit" if _bits(spec) else "fixed value"
        what = ", ".join(
            f"party {j} {how}" if isinstance(how, str) else f"party {j} {fixed} {how[1]}" for j, how in deviations
        )
        out.append(f"- deviating parties: {what} (receivers keep the announced protocol's rule)")
    return out + [f"- {spec.simulation.replications} replication(s), seed {seed}", ""]


def _privacy(scenario: Any) -> list[str]:
    """## Privacy of each party: claimed and exact, and what deviating parties really run."""
    if getattr(scenario, "interactive", False):
        return [
            "## Privacy of each party",
            "",
            "Each party's exact privacy per protocol (`InteractiveProtocol.privacy_table()`): the claimed (eps, "
            "delta), the exact delta of the whole transcript at that eps (the largest hockey-stick divergence between "
            "two of the party's inputs, over the others' inputs, by enumeration), and whether the claim holds (checked "
            "when the file was read). A product protocol runs as one message per party.",
            "",
            _md_table(privacy_tables(scenario)),
            "",
        ]
    return [
        "## Privacy of each party",
        "",
        "Each party's exact privacy per protocol (`Protocol.privacy_table()`): the claimed (eps, delta), the exact "
        "delta of its mechanism at that eps, and whether the claim holds. The channel cannot lose privacy (a lost "
        "or late message is a post-processing)."
        + (
            " `eps_run`/`delta_run`: the exact privacy of what each party actually runs: a truthful party has eps = "
            "inf (delta = the mass it reveals), a fixed party eps = 0; honest parties keep their announced privacy "
            "exactly whatever the others do (the parties randomise independently), and their rows are unchanged."
            if _deviations(scenario)
            else ""
        ),
        "",
        _md_table(privacy_tables(scenario)),
        "",
    ]


def _receivers(scenario: Any) -> list[str]:
    """## Receivers: what each computes, when they do not all compute the same."""
    if _one_task(scenario):
        return []
    return [
        "## Receivers",
        "",
        "What each receiver computes and the gain w[true, guess] of its guesses.",
        "",
        _md_table(receivers_table(scenario)),
        "",
    ]


def _accuracy(scenario: Any, summary: pd.DataFrame) -> list[str]:
    """## Accuracy: measured against exact, the paired differences between protocols, how
    many rows are within tolerance, and the exact accuracies side by side."""
    spec = scenario.spec
    binary_gain = all(bool(np.all((t.gain == 0) | (t.gain == 1))) for t in _tasks(scenario))
    accuracy = summary[summary["quantity"] == "accuracy"]
    differences = summary[summary["quantity"] == "accuracy_difference"]
    exact_text = "the exact expected gain of the receiver's optimal average rule"
    if _channel(scenario)[2] > 0:
        exact_text += (
            " through the channel (the rule of the erasure protocol, where a missing message is the symbol 'not heard')"
        )
    if _deviations(scenario):
        exact_text += ", applied by every receiver to the transcripts of the deviating parties (`rule_gain`)"
    out = [
        "## Accuracy: measured against exact",
        "",
        f"Pooled over {spec.simulation.replications} replication(s). `exact` is {exact_text} (docs/theory.md sec. 7) "
        f"computed exactly; `tolerance` is a half-width such that all {len(summary)} rows of this section lie within "
        f"it together with probability at least 1 - {spec.simulation.alpha:g} when the simulation is correct "
        "(Bonferroni over the rows): "
        + (
            "an exact binomial acceptance interval for accuracies"
            if binary_gain
            else "for accuracies, an exact binomial "
            "acceptance interval where the gain is 0/1 and Hoeffding's inequality over the gain's range otherwise"
        )
        + "; the smaller of Hoeffding's and the empirical Bernstein bound (Maurer-Pontil) for paired "
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
    return out


def _worst_case(scenario: Any, results: pd.DataFrame) -> list[str]:
    """## Worst-case accuracy (exact), when the scenario asks for it."""
    if not (results["quantity"] == "worst_case_accuracy").any():
        return []
    return [
        "## Worst-case accuracy (exact)",
        "",
        "`worst_case_exact`: the accuracy min over the bit vectors x of the optimal randomised worst-case rule, the "
        "linear program of Kairouz, Oh and Viswanath (2015, eq. 12) solved by HiGHS"
        + (
            " for the protocol seen through the channel (its alphabet has the extra symbol 'not heard', which makes "
            "the program larger)"
            if _channel(scenario)[2] > 0
            else ""
        )
        + "; `average_exact`: the optimal average accuracy with every party honest, for comparison. Both are exact "
        "only: the simulation measures the average rule, not the worst-case one. Where the linear program has too "
        "many coefficients (`ldpsim.protocols.decisions.MAX_LP_ENTRIES`) the note says so.",
        "",
        _md_table(worst_case_table(results, scenario)),
        "",
    ]


def _deviating_parties(scenario: Any, results: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """## Deviating parties: honest against deviating exact accuracy, and the measured one."""
    if not _deviations(scenario):
        return []
    return [
        "## Deviating parties",
        "",
        "`exact_honest`: the exact accuracy if every party followed the protocol; `exact_deviating`: the exact "
        "expected gain of the announced rule on the transcripts the deviating parties produce (`rule_gain`); "
        "`measured`: the simulation, within `tolerance` of `exact_deviating` (the accuracy table's tolerance).",
        "",
        _md_table(deviation_table(results, summary)),
        "",
    ]


def _channel_loss(scenario: Any, channel: pd.DataFrame | None) -> list[str]:
    """## Accuracy lost to the channel: exact at each loss rate of the grid, and measured."""
    if channel is None or channel.empty:
        return []
    loss, deadline, _ = _channel(scenario)
    return [
        "## Accuracy lost to the channel (loss table)",
        "",
        "Exact expected gain per protocol and receiver with a perfect channel (`perfect`: no loss, no deadline) and "
        "at each loss rate of the grid (`loss=r`"
        + (
            f", with the deadline's P(late) = {float(getattr(scenario, 'late', 0.0)):.4g} at every rate"
            if deadline is not None
            else ""
        )
        + f"), from `exact_accuracy` of the erasure protocol; `lost_exact` = perfect - exact at the scenario's rate "
        f"{loss:g}; `measured@{loss:g}` is the simulation at that rate and `lost_measured` = perfect - measured, "
        "within `tolerance` (the accuracy table's) of `lost_exact`.",
        "",
        _md_table(channel),
        "",
        f"![{CHANNEL_FIGURE}]({CHANNEL_FIGURE})",
        "",
    ]


def _completion(scenario: Any, latency: pd.DataFrame) -> list[str]:
    """## Transcript completion: measured completion delays against their exact law."""
    if latency.empty:
        return []
    if "protocol" in latency.columns:  # interactive protocols: completion per protocol
        return [
            "## Transcript completion (per protocol)",
            "",
            "Completion delay = the time a receiver holds the whole transcript minus the round's start, in "
            f"{scenario.spec.simulation.time_unit}. A slot's speaker sends once it holds the messages its rule reads "
            "(and after its own earlier slots): a protocol whose slots read the one before completes after the sum "
            "of the slot latencies, one that reads nothing after the largest latency. Theory (the `_theory` "
            "columns): exact for a constant latency or a protocol whose slots read no other party's message, empty "
            "otherwise (the largest of sums of latencies along the protocol's reads has no closed form). "
            "`messages` = messages each receiver took from its inbox (every slot of every round).",
            "",
            _md_table(latency),
            "",
        ]
    loss, deadline, _ = _channel(scenario)
    return [
        "## Transcript completion (network)",
        "",
        "Completion delay = the time a receiver decides a round minus the round's start, in "
        f"{scenario.spec.simulation.time_unit} (the `_measured` and `_theory` columns); a party waits for the k - 1 "
        "other messages, the observer for all k. "
        + (
            "It decides when every message is heard, or at the deadline D if one is missing (lost or late): "
            "P(T <= t) = ((1 - loss) F(t))^n for t < D and 1 from D on; theory: the mean (numerical integral) and "
            "quantiles of that law. "
            if deadline is not None
            else "Theory: the mean and quantiles of the maximum of that many i.i.d. latencies"
            + (" (a lost message is notified when it would have arrived). " if loss > 0 else ". ")
        )
        + "`messages` = messages each receiver took from its inbox"
        + (
            "; `heard` = messages heard in time, against its expectation (the own message, and each other with "
            "probability 1 - m)."
            if "heard" in latency.columns
            else "."
        ),
        "",
        _md_table(latency),
        "",
    ]


def _files(channel: pd.DataFrame | None) -> list[str]:
    """## Figures and ## Files."""
    has_channel = channel is not None and not channel.empty
    return figures_and_files(
        [FIGURE],
        "replication x protocol x receiver x quantity (party -1 is the observer)",
        [
            f"- `{FIGURE}`: measured and exact accuracy per receiver, completion delays"
            + (
                f"; `{CHANNEL_FIGURE}`: the accuracy lost to the channel against the loss rate, exact, and measured "
                "at the scenario's rate"
                if has_channel
                else ""
            ),
        ],
    )


# ----------------------------------------------------------------------------- what ldpsim run prints
#: The columns of a multi-party accuracy table as printed (those of the report's
#: ``multiparty_tables.format_table``); protocol and party are its keys.
_MULTIPARTY_COLUMNS = ["protocol", "party", "eps", "delta", "measured", "exact", "std_error", "tolerance", "within"]


def console(run: Any) -> list[str]:
    """What ``ldpsim run`` prints for a finished multi-party run (its MultipartyRun), line
    by line: accuracy next to exact, the channel, deviations, completion delays."""
    out: list[str] = []
    say, show = sayer(out)
    sc = run.scenario
    spec = sc.spec
    names = [t.name for t in getattr(sc, "tasks", ()) or [sc.task]]
    tasks = f"task {names[0]}" if len(set(names)) == 1 else f"tasks per receiver ({', '.join(dict.fromkeys(names))})"
    say(
        f"{spec.name}: k = {spec.parties.k} parties, {tasks}, {spec.rounds.count:,} rounds x "
        f"{spec.simulation.replications} replication(s), seed {run.seed}"
    )

    def accuracy(quantity: str) -> str:
        rows = run.summary[run.summary["quantity"] == quantity][_MULTIPARTY_COLUMNS]
        return text_table(rows, float_format=lambda x: f"{x:.5f}", keys=2, full=run.run_dir / "summary.md")

    show(accuracy("accuracy"))
    if (run.summary["quantity"] == "accuracy_difference").any():
        say("paired differences (same bits and noise uniforms for every protocol):")
        show(accuracy("accuracy_difference"))
    within = int(run.summary["within"].fillna(False).sum())
    say(f"within tolerance (false-failure <= {spec.simulation.alpha:g} for the table): {within} of {len(run.summary)}")
    if (run.results["quantity"] == "perfect_channel_accuracy").any():
        ch = mt.channel_table(run.results, run.summary, sc)
        say(
            f"channel: a message is not heard with probability {float(sc.missing):.4g}; accuracy lost to it, exact "
            f"{ch['lost_exact'].min():.4g} to {ch['lost_exact'].max():.4g} per receiver, measured "
            f"{ch['lost_measured'].min():.4g} to {ch['lost_measured'].max():.4g} (loss table in summary.md)"
        )
    if getattr(sc, "deviations", ()):
        dev = mt.deviation_table(run.results, run.summary)
        say(
            f"deviating parties {', '.join(str(j) for j, _ in sc.deviations)}: exact accuracy change per receiver "
            f"{dev['change'].min():+.4g} to {dev['change'].max():+.4g}; honest parties' privacy unchanged (summary.md)"
        )
    if not run.latency.empty:
        lat = run.latency
        known = lat["mean_theory"].notna() if "mean_theory" in lat.columns else pd.Series(False, index=lat.index)
        if known.all():
            theory = f"theory {lat['mean_theory'].mean():.4g}"
        else:  # interactive protocols: a closed form for some rows only
            theory = f"theory for {int(known.sum())} of {len(lat)} rows in summary.md"
        say(
            f"completion delay ({spec.simulation.time_unit}): mean {lat['mean_measured'].mean():.4g} "
            f"({theory}), max {lat['max_measured'].max():.4g}; messages delivered "
            f"{int(lat['messages'].sum()):,} of {int(lat['messages_expected'].sum()):,}"
        )
    return out
