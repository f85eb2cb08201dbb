"""Results, summaries, figures and summary.md of a collection run (``kind = "collection"``).

The results table has one row per replication x policy x shuffled x period x quantity x
category; ``quantity`` is one of

- ``frequency`` / ``change``: an answer's share in the period (or its change from the
  period before), with its interval, the population's realised value (``truth``) and the
  expected value of the answer dynamics (``theory``); ``n`` the reports behind it;
- ``privacy``: a summary of the respondents' privacy spent after the period (``max``,
  ``mean``, ``median``, ``p90``; ``per_report``; for plain and filter policies
  ``exact_at_delta`` (the exact composition of the mechanism for the respondent with the
  most reports), ``basic``, ``advanced`` and ``reports_max``; for memoisation
  ``longitudinal`` and ``distinct_max``; for filters ``budget`` and ``stopped_share``);
- ``privacy_class``: one row per class of respondents with the same privacy spent
  (``estimate`` the eps, ``n`` how many respondents);
- ``latency``: per period of sending, ``mean_delay``, ``p95_delay``, ``mean_shuffler_wait``
  and ``received_share``;
- ``central``: behind a shuffler, the local eps of one report, the central eps at the
  scenario's delta for the smallest batch, and the batch sizes.

Everything here is a pure function of the table (and the scenario for its setup).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim._text import plural, sayer
from ldpsim._text import table as text_table
from ldpsim.analyst.estimation import z_value
from ldpsim.privacy.shuffle import shuffle_epsilon, shuffle_epsilon_closed_form
from ldpsim.report.figures import amount, log_axes, period_label, plt, png_bytes, quiet_figures, short_label
from ldpsim.report.html import Section, run_html
from ldpsim.report.html import table as md_table
from ldpsim.report.tables import read_csv, rms
from ldpsim.risk import MEMO_STATES, changing_risk, repeated_risk

COLUMNS = [
    "replication",
    "policy",
    "shuffled",
    "period",
    "time",
    "quantity",
    "category",
    "estimate",
    "ci_low",
    "ci_high",
    "truth",
    "theory",
    "n",
]


def read_results(path: str | Path) -> pd.DataFrame:
    numeric = ["time", "estimate", "ci_low", "ci_high", "truth", "theory", "n"]
    out = read_csv(path, dtype={"policy": str, "quantity": str, "category": str}, na=numeric)
    out["shuffled"] = out["shuffled"].astype(str).str.lower().isin(["true", "1"])
    return out


def arm_name(policy: str, shuffled: bool) -> str:
    return f"{policy} + shuffler" if shuffled else str(policy)


def _arms(results: pd.DataFrame) -> list[tuple[str, bool]]:
    return list(dict.fromkeys(zip(results["policy"], results["shuffled"].astype(bool))))


# --------------------------------------------------------------------- tables
def accuracy_over_time(results: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per arm and period: RMSE over answers and replications of the estimates against the
    realised shares, the root-mean-square standard error the intervals state (half-width
    over the normal quantile at ``confidence``), the share of intervals that cover, and the
    mean number of reports behind an estimate."""
    z = z_value(confidence)
    f = results[results["quantity"] == "frequency"].copy()
    f["err"] = f["estimate"] - f["truth"]
    with np.errstate(over="ignore", invalid="ignore"):  # intervals of eps near 0 reach past the doubles
        f["se"] = (f["ci_high"] - f["ci_low"]) / (2 * z)
    f["covered"] = (f["ci_low"] <= f["truth"]) & (f["truth"] <= f["ci_high"])
    g = f.groupby(["policy", "shuffled", "period"], sort=False)
    out = g.agg(
        rmse=("err", rms),
        std_error=("se", rms),
        coverage=("covered", "mean"),
        reports=("n", "mean"),
        estimates=("estimate", "count"),
    )
    out.loc[out["estimates"] == 0, "coverage"] = np.nan  # no interval at all (no report reached the server)
    return out.drop(columns="estimates").reset_index()


def has_estimates(results: pd.DataFrame) -> bool:
    """Whether any period's estimate exists (some report reached the server)."""
    return bool(results.loc[results["quantity"] == "frequency", "estimate"].notna().any())


def _nothing_received(results: pd.DataFrame) -> str:
    """summary.md's paragraph for a run in which no report reached the server."""
    sent = results[(results["quantity"] == "latency") & (results["category"] == "mean_delay")]
    per_arm = sent.groupby(["replication", "policy", "shuffled"], sort=False)["n"].sum()
    mean = float(per_arm.mean()) if len(per_arm) else 0.0
    return (
        f"No report reached the server in any replication (per arm and replication on average {mean:,.0f} reports "
        "were sent, and every one was lost or still on its way when the collection ended): there is nothing to "
        "estimate, so results.csv holds empty estimates and this report has no accuracy figure. The privacy spent "
        "is real all the same: the reports left the devices. Check `network.loss` and `network.latency` against "
        "the length of the collection (`collection.periods` x `collection.period`)."
    )


def coverage(results: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """Per arm: the share of intervals of ``quantity`` (frequency or change) that cover the
    realised value, and how many intervals there were."""
    f = results[(results["quantity"] == quantity) & results["estimate"].notna()]
    cov = (f["ci_low"] <= f["truth"]) & (f["truth"] <= f["ci_high"])
    out = (
        f.assign(covered=cov)
        .groupby(["policy", "shuffled"], sort=False)
        .agg(coverage=("covered", "mean"), intervals=("covered", "size"))
    )
    return out.reset_index()


def privacy_series(results: pd.DataFrame, replication: int | None = None) -> pd.DataFrame:
    """Per arm and period, the privacy summaries as columns (replication 0 by default)."""
    p = results[results["quantity"] == "privacy"]
    rep = p["replication"].min() if replication is None else replication
    p = p[p["replication"] == rep]
    wide = p.pivot_table(index=["policy", "shuffled", "period"], columns="category", values="estimate", sort=False)
    return wide.reset_index()


def final_summary(results: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """One row per arm: what a designer compares (at the last period)."""
    acc = accuracy_over_time(results, confidence)
    priv = privacy_series(results)
    lat = results[results["quantity"] == "latency"].pivot_table(
        index=["policy", "shuffled"], columns="category", values="estimate", aggfunc="mean", sort=False
    )
    cen = results[results["quantity"] == "central"].pivot_table(
        index=["policy", "shuffled"], columns="category", values="estimate", aggfunc="max", sort=False
    )
    rows = []
    for policy, shuffled in _arms(results):
        a = acc[(acc["policy"] == policy) & (acc["shuffled"] == shuffled)]
        pr = priv[(priv["policy"] == policy) & (priv["shuffled"] == shuffled)]
        last = pr.iloc[-1] if len(pr) else pd.Series(dtype=float)
        row: dict[str, Any] = {
            "arm": arm_name(policy, shuffled),
            "eps_max": last.get("max", np.nan),
            "eps_median": last.get("median", np.nan),
            "exact_at_delta": last.get("exact_at_delta", np.nan),
            "se_first": float(a["std_error"].iloc[0]) if len(a) else np.nan,
            "se_last": float(a["std_error"].iloc[-1]) if len(a) else np.nan,
            "rmse_all": rms(a["rmse"]) if len(a) else np.nan,
            "coverage": float(a["coverage"].mean()) if len(a) else np.nan,
        }
        key = (policy, shuffled)
        # pivot_table drops a category without a value (no report reached the server)
        row["mean_delay"] = (
            float(lat.loc[key, "mean_delay"]) if key in lat.index and "mean_delay" in lat.columns else np.nan
        )
        for name in ("central_eps", "withheld"):
            row[name] = float(cen.loc[key, name]) if key in cen.index and name in cen.columns else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------- figures
def _privacy_figure(results: pd.DataFrame, delta: float, period: str) -> bytes:
    """``period``: the x-axis label (:func:`~ldpsim.report.figures.period_label`)."""
    priv = privacy_series(results)
    priv = priv[~priv["shuffled"].astype(bool)] if (~priv["shuffled"].astype(bool)).any() else priv
    policies = list(dict.fromkeys(priv["policy"]))
    fig, axes = plt.subplots(1, len(policies), figsize=(4.2 * len(policies) + 0.5, 4.2), squeeze=False, sharey=True)
    for ax, policy in zip(axes[0], policies):
        g = priv[priv["policy"] == policy]
        x = g["period"]
        ax.plot(x, g["max"], color="C0", lw=2, label="spent, most exposed respondent (pure eps)")
        ax.plot(x, g["median"], color="C0", lw=1, ls=":", label="spent, median respondent")
        if "exact_at_delta" in g and g["exact_at_delta"].notna().any():
            ax.plot(x, g["exact_at_delta"], color="C2", lw=1.6, label=f"exact composition at delta = {delta:g}")
            ax.plot(x, g["advanced"], color="C3", lw=1, ls="--", label=f"advanced composition at delta = {delta:g}")
        if "longitudinal" in g and g["longitudinal"].notna().any():
            ax.axhline(
                float(g["longitudinal"].iloc[0]),
                color="C1",
                lw=1.2,
                ls="--",
                label="eps_inf: one unchanged answer, any number of reports",
            )
            ax.axhline(float(g["per_report"].iloc[0]), color="C4", lw=1.2, ls="-.", label="eps of one report")
        if "budget" in g and g["budget"].notna().any():
            ax.axhline(float(g["budget"].iloc[0]), color="k", lw=1, ls="--", label="budget")
        ax.set_title(short_label(policy))
        ax.set_xlabel(period)
        ax.grid(True, lw=0.4, alpha=0.5)
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("privacy spent per respondent (eps)")
    fig.tight_layout()
    return png_bytes(fig)


def _accuracy_figure(results: pd.DataFrame, confidence: float, period: str) -> bytes:
    acc = accuracy_over_time(results, confidence)
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    policies = list(dict.fromkeys(acc["policy"]))
    for (policy, shuffled), g in acc.groupby(["policy", "shuffled"], sort=False):
        c = f"C{policies.index(policy) % 10}"
        ax.plot(
            g["period"],
            g["std_error"],
            color=c,
            ls="--" if shuffled else "-",
            lw=1.5,
            label=short_label(arm_name(policy, bool(shuffled))),
        )
        ax.plot(g["period"], g["rmse"], color=c, ls="none", marker="x" if shuffled else "o", ms=3, alpha=0.6)
    ax.set_xlabel(period)
    ax.set_ylabel("error of the period's estimates")
    log_axes(ax, y=True)
    ax.set_title(
        "analyst's accuracy over time: standard error (lines) and RMSE (marks)\n"
        "by policy; dashed lines and crosses: behind the shuffler",
        fontsize=10,
    )
    ax.grid(True, which="both", lw=0.4, alpha=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png_bytes(fig)


def _central_figure(results: pd.DataFrame, delta: float) -> bytes | None:
    """Central eps against the batch size, one curve per distinct local eps (policies that
    share it named together), the paper's closed form dashed, the run's smallest batches
    marked. On log axes, so only positive values are drawn; None when there are none (a
    local eps so small that every central eps is 0)."""
    cen = results[results["quantity"] == "central"]
    local = cen[cen["category"] == "local_eps"].drop_duplicates("policy").set_index("policy")["estimate"]
    batch = cen[cen["category"] == "batch_min"].drop_duplicates("policy").set_index("policy")["estimate"]
    groups: dict[float, list[str]] = {}
    for policy, eps0 in local.items():
        groups.setdefault(float(f"{float(eps0):.12g}"), []).append(str(policy))  # 12 digits, not places: eps 1e-300
    ns = np.unique(np.round(np.logspace(2, 6, 9)).astype(int))  # half decades, 100 to 10^6
    curves = []
    for eps0, policies in groups.items():
        exact = np.array([shuffle_epsilon(eps0, int(n), delta) for n in ns])
        closed = np.array([shuffle_epsilon_closed_form(eps0, int(n), delta) for n in ns])
        marks = [(b, shuffle_epsilon(eps0, b, delta)) for b in (int(batch.get(p, 0)) for p in policies) if b >= 1]
        curves.append((eps0, policies, exact, closed, marks))
    if not any(np.any(c[2] > 0) or np.any(c[3] > 0) for c in curves):
        return None
    fig, ax = plt.subplots(figsize=(7.8, 4.8))
    for i, (eps0, policies, exact, closed, marks) in enumerate(curves):
        c = f"C{i}"
        names = ", ".join(short_label(p, 24) for p in policies)
        ok = exact > 0
        ax.plot(ns[ok], exact[ok], color=c, lw=1.6, label=f"local eps {eps0:.3g} ({names})")
        ok = closed > 0
        ax.plot(ns[ok], closed[ok], color=c, lw=1.0, ls="--")
        for b, value in marks:
            if value > 0:
                ax.plot([b], [value], "o", color=c, ms=6)
    ax.plot([], [], color="0.4", ls="--", lw=1.0, label="closed form (Feldman, McMillan and Talwar 2021, Thm 3.1)")
    log_axes(ax, x=True, y=True)  # log-log, with the plain tick labels of every report
    ax.set_xlabel("reports in one shuffled batch (n)")
    ax.set_ylabel(f"central eps at delta = {delta:g}")
    ax.set_title("amplification by shuffling (dots: the smallest batch of the run)")
    ax.grid(True, which="both", lw=0.4, alpha=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png_bytes(fig)


def render_report(scenario: Any, results: pd.DataFrame, seed: int) -> dict[str, bytes]:
    with quiet_figures():
        delta = float(scenario.spec.collection.delta)
        period = period_label(scenario.spec.collection.period, scenario.spec.simulation.time_unit)
        files: dict[str, bytes] = {"privacy.png": _privacy_figure(results, delta, period)}
        if results.loc[results["quantity"] == "frequency", "estimate"].notna().any():
            files["accuracy.png"] = _accuracy_figure(results, float(scenario.spec.analyst.confidence), period)
        central = _central_figure(results, delta) if (results["quantity"] == "central").any() else None
        if central is not None:
            files["central.png"] = central
        lines = _summary_lines(scenario, results, seed, list(files))
        files["report.html"] = run_html(
            kind="collection",
            scenario=scenario,
            seed=seed,
            lines=lines,
            files=files,
            key=_key_numbers(results),
            sections=[_privacy_section(results, delta)],
        )
        files["summary.md"] = ("\n".join(lines) + "\n").encode("utf-8")
        return files


def _key_numbers(results: pd.DataFrame) -> dict[str, str]:
    """What the index of runs shows of a collection run: the largest privacy spent and the
    interval coverage, over the arms."""
    out: dict[str, str] = {}
    p = results[(results["quantity"] == "privacy") & (results["category"] == "max")]["estimate"].dropna()
    if len(p):
        out["largest eps spent"] = f"{float(p.max()):.4g}"
    cov = coverage(results, "frequency")
    if len(cov) and cov["intervals"].sum() > 0:
        out["interval coverage"] = f"{float((cov['coverage'] * cov['intervals']).sum() / cov['intervals'].sum()):.4f}"
    return out


def _privacy_section(results: pd.DataFrame, delta: float) -> Section:
    """report.html's table of the privacy spent after every period (replication 0)."""
    priv = privacy_series(results)
    priv.insert(0, "arm", [arm_name(p, bool(s)) for p, s in zip(priv["policy"], priv["shuffled"])])
    priv = priv.drop(columns=["policy", "shuffled"])
    priv.columns = [str(c) for c in priv.columns]
    return Section(
        "Privacy spent after every period",
        [
            "Replication 0: pure eps spent by the most exposed (`max`), the median (`median`), the mean (`mean`) "
            f"and the 90th-percentile (`p90`) respondent; the exact and composed guarantees at delta = {delta:g} "
            "beside them where the policy has them (see results.csv's `privacy` rows):",
            "",
            md_table(priv),
        ],
    )


def _summary_lines(scenario: Any, results: pd.DataFrame, seed: int, figures: list[str]) -> list[str]:
    """summary.md as a list of lines (its tables remember their frames for report.html)."""
    spec = scenario.spec
    c = spec.collection
    lines = [f"# {spec.name}", ""]
    if spec.description:
        lines += [spec.description, ""]
    unit = spec.simulation.time_unit
    sched = "every period" if c.schedule.kind == "every_period" else f"each period with probability {c.schedule.rate:g}"
    lines += [
        f"{scenario.size:,} respondents, {c.periods} periods of {amount(c.period, unit)}, reporting {sched}; answers "
        f"change: {c.change.kind}. Mechanism of one report: {scenario.mechanism!r}. {spec.simulation.replications} "
        f"replication(s), seed {seed}. Composed privacy is shown at delta = {c.delta:g}.",
        "",
        *([_nothing_received(results), ""] if not has_estimates(results) else []),
        "## Policies at the last period",
        "",
        md_table(final_summary(results, float(spec.analyst.confidence))),
        "",
        "eps_max / eps_median: pure eps spent by the most exposed and the median respondent; exact_at_delta: the "
        "exact composition of the mechanism at delta for the respondent with the most reports; se_first / se_last: "
        "the standard error of a share's estimate in the first and the last period (root mean square over answers); "
        "rmse_all: the estimates' root-mean-square error against the realised shares over all periods; coverage: "
        "share of the period intervals that cover the realised share; mean_delay: the mean time from sending to the "
        f"server, in {unit}, including time in the shuffler; central_eps: the central guarantee of the smallest "
        "shuffled batch; withheld: reports the shuffler still held, short of a full batch, when the run ended (they "
        "never reach the server).",
        "",
        "## Interval coverage",
        "",
    ]
    cov = coverage(results, "frequency").rename(
        columns={"coverage": "period_coverage", "intervals": "period_intervals"}
    )
    chg = coverage(results, "change").rename(columns={"coverage": "change_coverage", "intervals": "change_intervals"})
    both = cov.merge(chg, on=["policy", "shuffled"], how="left")
    both.insert(0, "arm", [arm_name(p, s) for p, s in zip(both["policy"], both["shuffled"])])
    lines += [
        md_table(both.drop(columns=["policy", "shuffled"]))
        if has_estimates(results)
        else "No intervals: no report reached the server.",
        "",
    ]
    lines += _attack_section(scenario, results)
    lines += _risk_over_time(scenario)
    lines += [f"![{name}]({name})" for name in figures if name.endswith(".png")]
    return lines


def attack_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per arm and attacker, over the periods it attacked: the mean gain measured and its
    exact expectation (means over periods and replications), the largest gain, the mean fake
    share received."""
    gain = results[results["quantity"] == "gain"]
    if gain.empty:
        return pd.DataFrame()
    share = results[results["quantity"] == "fake_share"]
    keys = ["policy", "shuffled", "category"]
    hit = gain[gain["theory"] != 0]
    out = hit.groupby(keys, sort=False).agg(
        gain=("estimate", "mean"), gain_exact=("theory", "mean"), largest_gain=("estimate", "max")
    )
    out["fake_share"] = share[share["estimate"] > 0].groupby(keys, sort=False)["estimate"].mean()
    out = out.reset_index()
    out.insert(0, "arm", [arm_name(p, bool(s)) for p, s in zip(out["policy"], out["shuffled"])])
    return out.drop(columns=["policy", "shuffled"]).rename(columns={"category": "attacker"})


def detection_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per arm: the share of replications whose excess monitor raised the alarm, and the
    median period at which it did."""
    at = results[(results["quantity"] == "detected_at") & (results["category"] == "excess")]
    if at.empty:
        return pd.DataFrame()
    last = at[at["period"] == at["period"].max()]
    rows = []
    for (p, sh), g in last.groupby(["policy", "shuffled"], sort=False):
        hit = g["estimate"].notna()
        rows.append(
            {
                "arm": arm_name(p, bool(sh)),
                "detected": float(hit.mean()),
                "median_period": float(g.loc[hit, "estimate"].median()) if hit.any() else np.nan,
            }
        )
    return pd.DataFrame(rows)


def _attack_section(scenario: Any, results: pd.DataFrame) -> list[str]:
    table = attack_table(results)
    if table.empty:
        return []
    found = detection_table(results)
    who = "; ".join(
        f"`{spec.name}`: {count:,} fake reports a period from period {spec.start}, strategy `{spec.strategy}`, "
        f"promoting {', '.join(scenario.labels[t] for t in targets)}"
        for spec, targets, count in scenario.attackers
    )
    return [
        "## Fake respondents",
        "",
        f"{who}. The gain is the targets' estimated share of a period from all its reports minus that from the "
        "honest ones alone; gain_exact its expectation given the fake reports received (means over the attacked "
        "periods and the replications). A policy that sends fewer honest reports (a filter, a shuffler's withheld "
        "batch) leaves the fake ones a larger share; a less informative report (memoisation) multiplies what each "
        "fake report adds to the estimate (docs/risk.md):",
        "",
        md_table(table),
        "",
        *(
            [
                "Detection by the excess monitor (an anytime-valid test of every output's count per period against "
                "the largest rate an honest population could give it, false-alarm probability alpha over the "
                "collection; not run under memoisation, whose reports of one respondent are not drawn afresh): "
                "the share of replications that raised the alarm and the median period it did.",
                "",
                md_table(found),
                "",
            ]
            if not found.empty
            else []
        ),
    ]


def risk_over_time(scenario: Any) -> pd.DataFrame:
    """Per policy, after the periods 1, 2, 5, 10, 20, ... and the last: the accuracy of the
    server's best guess of the answer of the most exposed respondent (one who reports every
    period its policy lets it, and whose answer never changed), linking its reports (no
    shuffler), beside one report alone (a shuffler unlinks them) and the baseline; exact
    (:func:`ldpsim.risk.repeated_risk`)."""
    T = int(scenario.spec.collection.periods)
    periods = sorted({t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500) if t < T} | {T})
    prior = np.asarray(scenario.start, dtype=np.float64)
    steps = _steps(scenario)
    rows = []
    for p in scenario.policies:
        counts = [min(t, p.allowed) if p.allowed is not None else t for t in periods]
        if p.memo is not None:
            linked = repeated_risk(p.memo.instantaneous, prior, [1, *counts], permanent=p.memo.permanent, rng=0)
        else:
            linked = repeated_risk(p.mechanism, prior, [1, *counts], rng=0)
        moving = None
        if steps is not None and p.lowered is None:
            reported = np.arange(T) < (T if p.allowed is None else p.allowed)
            if p.memo is not None:
                moving = changing_risk(p.memo.instantaneous, prior, steps, reported, permanent=p.memo.permanent, rng=0)
            else:
                moving = changing_risk(p.mechanism, prior, steps, reported, rng=0)
        for t, r, acc, how in zip(periods, counts, linked.accuracy[1:], linked.method[1:]):
            row = {
                "policy": p.name,
                "period": t,
                "reports": r,
                "linked": float(acc),
                "one_report": float(linked.accuracy[0]),
                "baseline": float(prior.max()),
                "method": how,
            }
            if steps is not None:
                row["changing"] = float(moving.accuracy[t - 1]) if moving is not None else np.nan
                row["changing_se"] = float(moving.standard_error[t - 1]) if moving is not None else np.nan
                row["changing_baseline"] = float(moving.baseline[t - 1]) if moving is not None else np.nan
                if moving is not None and moving.method == "bounds":
                    assert moving.lower is not None and moving.upper is not None  # filled in by ChangingRisk
                    row["changing_at_least"] = float(moving.lower[t - 1])
                    row["changing_at_most"] = float(moving.upper[t - 1])
            rows.append(row)
    return pd.DataFrame(rows)


def _steps(scenario: Any) -> list[np.ndarray] | None:
    """The answers' transition matrices between periods (None when answers never change)."""
    T = int(scenario.spec.collection.periods)
    k = len(scenario.labels)
    if scenario.transition is not None:
        return [np.asarray(scenario.transition, dtype=np.float64)] * (T - 1)
    if scenario.redraw is not None:
        stay = float(scenario.spec.collection.change.stay)
        return [stay * np.eye(k) + (1.0 - stay) * np.asarray(scenario.redraw[t])[None, :] for t in range(1, T)]
    return None


def _risk_over_time(scenario: Any) -> list[str]:
    table = risk_over_time(scenario)
    if table.empty:
        return []
    return [
        "## What a respondent risks over time",
        "",
        "The most exposed respondent reports in every period its policy allows, and its answer never changes. "
        "`linked`: how often the server's best guess of that answer from all its reports so far is right, when "
        "the server knows which reports are whose (no shuffler). A filter stops the reports at its budget; "
        "memoisation caps the risk at what the permanent response reveals. `one_report`: the same from one "
        "report, which is all a server behind a shuffler can tie to the respondent. `baseline`: guessing the most "
        "common answer. Exact, by enumerating the counts of the reports (docs/risk.md). Where answers change, "
        "`changing` is the same server's accuracy on the current answer of a respondent whose answer follows the "
        "scenario's dynamics, from all its reports (the forward filter of the chain, exact per respondent, by Monte "
        "Carlo over 20,000 respondents with its standard error; not computed for a lowered last report), beside "
        "that period's baseline. Memoised reports of changing answers are filtered exactly while the answers and "
        f"their memos have at most {MEMO_STATES:,} joint states; beyond that `changing_at_least` and "
        "`changing_at_most` bracket the accuracy: a server that reads the reports as unmemoised, or guesses the "
        "period's most likely answer, is right that often at least, and one that also saw the memos at most:",
        "",
        md_table(table),
        "",
    ]


# ----------------------------------------------------------------------------- what ldpsim run prints
def console(run: Any) -> list[str]:
    """What ``ldpsim run`` prints for a finished collection run (its CollectionRun), line
    by line: the scenario, then one summary row per arm."""
    out: list[str] = []
    say, show = sayer(out)
    sc = run.scenario
    c = sc.spec.collection
    say(
        f"{sc.name}: {sc.size:,} respondents x {c.periods} periods of "
        f"{amount(c.period, sc.spec.simulation.time_unit)}, {plural(len(sc.arms), 'arm')}, "
        f"{sc.spec.simulation.replications} replication(s), seed {run.seed}; composed eps at delta = {c.delta:g}"
    )
    if not has_estimates(run.results):
        say("no report reached the server in any replication: nothing to estimate (see the report)")
    show(text_table(run.summary, na_rep="", float_format=lambda x: f"{x:.5g}", full=run.run_dir / "summary.md"))
    return out
