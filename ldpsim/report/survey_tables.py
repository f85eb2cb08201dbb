"""Summaries of a survey results table (pandas aggregations; no formulas): what the report
and ``ldpsim run`` show."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ldpsim.report.tables import read_csv, rms

#: The columns of a survey results table, one row per replication x checkpoint x task x
#: quantity x category; ``method`` says how a frequency row was estimated (estimator and
#: interval, e.g. ``inversion/normal``; empty elsewhere).
RESULT_COLUMNS = [
    "replication",
    "checkpoint",
    "reason",
    "time",
    "n_received",
    "task",
    "quantity",
    "category",
    "estimate",
    "ci_low",
    "ci_high",
    "truth",
    "theory",
    "method",
]


def read_results(path: str | Path) -> pd.DataFrame:
    """A survey results.csv with labels kept as text ("1", "01" and "" stay distinct) and
    empty numeric cells as NaN."""
    numeric = ["time", "n_received", "estimate", "ci_low", "ci_high", "truth", "theory"]
    return read_csv(
        path, dtype={"category": str, "task": str, "quantity": str, "reason": str, "method": str}, na=numeric
    )


def frequency_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Frequency rows with their plug-in and exact standard errors side by side."""
    freq = results[results["quantity"] == "frequency"]
    se = results[results["quantity"] == "std_error"][
        ["replication", "checkpoint", "task", "category", "estimate", "theory"]
    ]
    se = se.rename(columns={"estimate": "std_error", "theory": "theory_se"})
    out = freq.merge(se, on=["replication", "checkpoint", "task", "category"], how="left")
    covered = (out["ci_low"] <= out["truth"]) & (out["truth"] <= out["ci_high"])
    # no interval (no report yet): coverage is undefined, not False
    out["covered"] = pd.array(covered.to_numpy(), dtype="boolean")
    out.loc[out["estimate"].isna().to_numpy(), "covered"] = pd.NA
    out["error"] = out["estimate"] - out["truth"]
    # the k-th checkpoint of each kind is comparable across replications (the k-th overall
    # is not when periodic and report-count checkpoints interleave differently)
    first = out.drop_duplicates(["replication", "checkpoint"])[["replication", "checkpoint", "reason"]].copy()
    first["ordinal"] = first.groupby(["replication", "reason"]).cumcount()
    return out.merge(first[["replication", "checkpoint", "ordinal"]], on=["replication", "checkpoint"], how="left")


def has_estimates(results: pd.DataFrame) -> bool:
    """Whether any frequency estimate exists (some report reached the server)."""
    f = results[results["quantity"] == "frequency"]
    return bool(f["estimate"].notna().any())


def final_frequencies(results: pd.DataFrame) -> pd.DataFrame:
    """At the last checkpoint: per task and category, the estimate of replication 0 with its
    CI, and over replications the mean estimate, RMSE, mean standard errors and coverage."""
    f = frequency_rows(results)
    last = f[f["reason"] == "end"]
    first = last[last["replication"] == last["replication"].min()]
    agg = last.groupby(["task", "category"], sort=False).agg(
        truth=("truth", "first"),
        mean_estimate=("estimate", "mean"),
        rmse=("error", rms),
        std_error=("std_error", "mean"),
        theory_se=("theory_se", "mean"),
        coverage=("covered", "mean"),
        replications=("covered", "size"),
    )
    agg["coverage"] = agg["coverage"].astype(float)  # NaN where no replication had an interval
    one = first.set_index(["task", "category"])[["estimate", "ci_low", "ci_high", "covered", "n_received"]]
    return one.join(agg).reset_index()


def checkpoint_series(results: pd.DataFrame, replication: int | None = None) -> pd.DataFrame:
    """Estimates of one replication at every checkpoint: one row per checkpoint, one column
    per category (the published series)."""
    f = frequency_rows(results)
    rep = f["replication"].min() if replication is None else replication
    f = f[f["replication"] == rep]
    wide = f.pivot_table(index=["checkpoint", "time", "n_received"], columns="category", values="estimate", sort=False)
    return wide.reset_index()


def error_by_n(results: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint (the k-th of each kind across replications; per task when several
    frequency tasks or compared mechanisms ran): mean reports received,
    root mean squared error over categories and replications, and the same mean of the exact
    standard error (theory). Only estimates made from at least one report count (empty
    when no checkpoint had any)."""
    f = frequency_rows(results)
    f = f[(f["n_received"] > 0) & f["estimate"].notna()]
    several = f["task"].nunique() > 1
    columns = (["task"] if several else []) + [
        "reason",
        "ordinal",
        "time",
        "n_received",
        "rmse",
        "theory_rms_se",
        "coverage",
    ]
    if f.empty:
        return pd.DataFrame(columns=columns)
    g = f.groupby((["task"] if several else []) + ["reason", "ordinal"], sort=False)
    out = pd.DataFrame(
        {
            "time": g["time"].mean(),
            "n_received": g["n_received"].mean(),
            "rmse": g["error"].apply(rms),
            "theory_rms_se": g["theory_se"].apply(rms),
            "coverage": g["covered"].mean().astype(float),
        }
    ).reset_index()
    order = (["task"] if several else []) + ["n_received", "time"]
    return out.sort_values(order, kind="stable").reset_index(drop=True)[columns]


def engine_totals(results: pd.DataFrame) -> pd.DataFrame:
    """Clients, losses, reports in flight and received: mean over replications."""
    e = results[results["task"] == "engine"]
    return e.groupby("quantity", sort=False)["estimate"].agg(["mean", "min", "max"]).reset_index()


def other_task_series(results: pd.DataFrame, replication: int | None = None) -> pd.DataFrame:
    """Rows of tasks other than frequency estimation and the engine's book-keeping, for one
    replication: one row per checkpoint and quantity with estimate and theory side by side."""
    rows = results[
        (results["task"] != "engine") & (results["quantity"] != "frequency") & (results["quantity"] != "std_error")
    ]
    rows = rows[~_own_table(rows)]  # shown in their own tables
    if rows.empty:
        return rows
    rep = rows["replication"].min() if replication is None else replication
    rows = rows[rows["replication"] == rep]
    cols = ["checkpoint", "time", "n_received", "task", "quantity", "category", "estimate", "theory", "truth"]
    return rows[cols].reset_index(drop=True)


def other_task_totals(results: pd.DataFrame) -> pd.DataFrame:
    """At the end, per task and quantity: mean estimate over replications, mean theory, mean
    truth (e.g. the rate of correct decisions is the share of estimate == truth)."""
    rows = results[
        (results["reason"] == "end")
        & (results["task"] != "engine")
        & (results["quantity"] != "frequency")
        & (results["quantity"] != "std_error")
    ]
    rows = rows[~_own_table(rows)]
    if rows.empty:
        return rows
    g = rows.groupby(["task", "quantity"], sort=False)
    out = g.agg(
        mean_estimate=("estimate", "mean"),
        theory=("theory", "mean"),
        truth=("truth", "mean"),
        replications=("estimate", "size"),
    )
    # the share of replications whose estimate equals the truth, only where there is a
    # truth (a blank cell, not 0, for quantities without one)
    has_truth = rows["truth"].notna()
    match = (rows["estimate"] == rows["truth"]).where(has_truth)
    agree = rows.assign(match=match.astype(float)).groupby(["task", "quantity"], sort=False)["match"].mean()
    out["share_equal_to_truth"] = agree
    # a decision (every estimate 0 or 1): the rate of ones with its exact 99.9% interval
    # (Clopper-Pearson), e.g. a test's rejection rate over the replications
    est = rows["estimate"]
    grouped = rows.assign(d=est.isin([0.0, 1.0]) | est.isna()).groupby(["task", "quantity"], sort=False)
    decision = grouped["d"].all() & grouped["estimate"].count().gt(0)
    ones = rows.groupby(["task", "quantity"], sort=False)["estimate"].sum()
    tries = rows.groupby(["task", "quantity"], sort=False)["estimate"].count()
    if decision.any():
        low = stats.beta.ppf(0.0005, ones, tries - ones + 1)
        high = stats.beta.ppf(0.9995, ones + 1, tries - ones)
        out["rate_low"] = np.where(decision, np.nan_to_num(low, nan=0.0), np.nan)
        out["rate_high"] = np.where(decision, np.nan_to_num(high, nan=1.0), np.nan)
    return out.reset_index()


#: Answers above which tables and figures show the largest ones only (the full set stays in
#: results.csv).
MANY_ANSWERS = 20


def answer_count(results: pd.DataFrame) -> int:
    """Number of distinct answers with frequency rows (of the task with the most: questions
    of a scenario each have their own answers)."""
    f = results.loc[results["quantity"] == "frequency", ["task", "category"]]
    return int(f.groupby("task", sort=False)["category"].nunique().max()) if len(f) else 0


def top_answers(results: pd.DataFrame, count: int = MANY_ANSWERS) -> pd.DataFrame:
    """At the end of replication 0, per task: the ``count`` answers with the largest
    estimates, with their intervals, the truth and the answer's true rank."""
    final = final_frequencies(results)
    out = []
    for _, g in final.groupby("task", sort=False):
        g = g.assign(true_rank=g["truth"].rank(ascending=False, method="first").astype(int))
        out.append(g.sort_values("estimate", ascending=False, kind="stable").head(count))
    cols = ["task", "category", "estimate", "ci_low", "ci_high", "truth", "true_rank", "covered"]
    return pd.concat(out)[cols].reset_index(drop=True) if out else pd.DataFrame(columns=cols)


def of_top_answers(frame: pd.DataFrame, results: pd.DataFrame, count: int = MANY_ANSWERS) -> pd.DataFrame:
    """The rows of ``frame`` (per task and category, e.g. :func:`final_frequencies`) of each
    task's own ``count`` answers with the largest estimates (:func:`top_answers`): ``count``
    rows per task, in the order of ``frame``. With several tasks (the mechanisms of a
    comparison, the questions) each keeps its own answers, not the union of all tasks'."""
    top = top_answers(results, count)[["task", "category"]]
    return frame.merge(top, on=["task", "category"], how="inner")


def error_norms(results: pd.DataFrame) -> pd.DataFrame:
    """Per task and checkpoint (the k-th of each kind, as in :func:`error_by_n`): the L1
    error ``sum_x |estimate_x - truth_x|`` and the L-infinity error ``max_x |...|`` of the
    estimated distribution, averaged over replications."""
    f = frequency_rows(results)
    f = f[(f["n_received"] > 0) & f["estimate"].notna()]
    cols = ["task", "reason", "ordinal", "time", "n_received", "l1", "linf"]
    if f.empty:
        return pd.DataFrame(columns=cols)
    per = (
        f.assign(abs_error=f["error"].abs())
        .groupby(["task", "reason", "ordinal", "replication"], sort=False)
        .agg(
            time=("time", "first"),
            n_received=("n_received", "first"),
            l1=("abs_error", "sum"),
            linf=("abs_error", "max"),
        )
    )
    out = per.groupby(["task", "reason", "ordinal"], sort=False).mean().reset_index()
    return out.sort_values(["task", "n_received", "time"], kind="stable").reset_index(drop=True)[cols]


def strategy_comparison(variance: pd.DataFrame) -> pd.DataFrame:
    """Several questions per respondent: per question, the sum over its answers of the exact
    variances of the unbiased estimates (its expected squared L2 error) under each budget
    strategy (``variance``: one row per question and answer, columns ``var_split`` and
    ``var_one_random``), their ratio and the smaller one."""
    g = variance.groupby("question", sort=False)[["var_split", "var_one_random"]].sum().reset_index()
    g["ratio_one_random_to_split"] = g["var_one_random"] / g["var_split"]
    g["better"] = np.where(
        g["var_split"] < g["var_one_random"],
        "split",
        np.where(g["var_one_random"] < g["var_split"], "one_random", "equal"),
    )
    return g


#: The estimates of a numeric question shown with its mean: with ``variance = true`` also its
#: second moment and variance (each a task of its own).
MOMENT_QUANTITIES = ("mean", "second_moment", "variance")


def final_means(results: pd.DataFrame) -> pd.DataFrame:
    """Numeric questions at the last checkpoint: per task, replication 0's mean with its
    interval and reports, and over replications the mean estimate, RMSE against the truth,
    the exact standard error and the coverage of the intervals. With a question's variance
    (``variance = true``), its second moment and variance too, and a column ``expected``: each
    estimate's exact expectation (the variance's is below the truth by the mean's variance)."""
    m = results[results["quantity"].isin(MOMENT_QUANTITIES) & (results["reason"] == "end")]
    cols = [
        "task",
        "truth",
        "estimate",
        "ci_low",
        "ci_high",
        "covered",
        "n_received",
        "mean_estimate",
        "rmse",
        "theory_se",
        "coverage",
    ]
    if m.empty:
        return pd.DataFrame(columns=cols)
    se = results[(results["quantity"] == "std_error") & (results["reason"] == "end")][["replication", "task", "theory"]]
    m = m.merge(se.rename(columns={"theory": "theory_se"}), on=["replication", "task"], how="left")
    m = m.assign(covered=(m["ci_low"] <= m["truth"]) & (m["truth"] <= m["ci_high"]), error=m["estimate"] - m["truth"])
    first = m[m["replication"] == m["replication"].min()].set_index("task")
    agg = m.groupby("task", sort=False).agg(
        mean_estimate=("estimate", "mean"), rmse=("error", rms), coverage=("covered", "mean")
    )
    out = (
        first[["truth", "estimate", "ci_low", "ci_high", "covered", "n_received", "theory_se"]].join(agg).reset_index()
    )
    if m["quantity"].isin(MOMENT_QUANTITIES[1:]).any():
        out.insert(2, "expected", m.groupby("task", sort=False)["theory"].mean().reindex(out["task"]).to_numpy())
        cols.insert(2, "expected")
    return out[cols]


#: The suffix of the task names of cross-tabulations (``"rows x columns:crosstab"``).
CROSSTAB = ":crosstab"
#: The suffix of the tests of homogeneity across groups (``"question by column:homogeneity"``).
HOMOGENEITY = ":homogeneity"


def _is_crosstab(rows: pd.DataFrame) -> pd.Series:
    """Cross-tabulations and tests of homogeneity: tests of independence, their own tables."""
    task = rows["task"].astype(str)
    return task.str.endswith(CROSSTAB) | task.str.endswith(HOMOGENEITY)


#: Quantities of answer-dependent non-response (shown in their own table).
NONRESPONSE = ("nonresponse_bias", "reweighted")


#: quantities of the privacy tiers' task shown in their own table
TIERS = ("naive_frequency", "tier_frequency")


#: quantities of the survey design's rows (their own section)
DESIGN = (
    "weighted",
    "weighted_se",
    "design_se",
    "privacy_se",
    "stratum_weighted",
    "stratum_weighted_se",
)


def _own_table(rows: pd.DataFrame) -> pd.Series:
    # a set lookup, not Series.isin: pandas 2.0 with numpy 1.26 warns in isin's dtype merge
    own = set(NONRESPONSE + TIERS + DISTRIBUTION + DESIGN)
    return _is_crosstab(rows) | is_attack(rows) | rows["quantity"].map(lambda q: q in own).astype(bool)


def is_attack(rows: pd.DataFrame) -> pd.Series:
    """The rows of fake respondents: task ``attack``, or ``<question>:attack``."""
    task = rows["task"].astype(str)
    return (task == "attack") | task.str.endswith(":attack")


def attack_tables(results: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fake respondents at the end (task ``attack``): per attacker, the fake share received,
    the gain measured (mean and standard deviation over replications) beside its exact
    expectation, and after the frequent-itemset recovery; per detector, the share of
    replications in which it raised the alarm and the median time it did."""
    rows = results[is_attack(results) & (results["reason"] == "end")]
    if rows.empty:
        return pd.DataFrame(), pd.DataFrame()

    def per(quantity: str) -> pd.DataFrame:
        return rows[rows["quantity"] == quantity]

    gains = per("gain").groupby("category", sort=False)
    attackers = pd.DataFrame(
        {
            "fake_share": per("fake_share").groupby("category", sort=False)["estimate"].mean(),
            "gain": gains["estimate"].mean(),
            "gain_sd": gains["estimate"].std(ddof=1),
            "gain_exact": gains["theory"].mean(),
            "truth": gains["truth"].mean(),
        }
    )
    for part in ("mean", "variance"):  # the joint attacks: the moved estimates beside their exact expectations
        moved = per(f"moved_{part}").groupby("category", sort=False)
        if per(f"moved_{part}").empty:
            continue
        attackers[part] = moved["estimate"].mean()
        attackers[f"{part}_exact"] = moved["theory"].mean()
        attackers[f"{part}_exact_se"] = per(f"moved_{part}_se").groupby("category", sort=False)["theory"].mean()
    normsub = per("normsub_gain")
    if not normsub.empty:
        attackers["gain_after_norm_sub"] = normsub.groupby("category", sort=False)["estimate"].mean()
    recovered = per("recovered_gain")
    if not recovered.empty:
        attackers["flagged"] = per("flagged_fake").groupby("category", sort=False)["estimate"].mean()
        attackers["gain_after_recovery"] = recovered.groupby("category", sort=False)["estimate"].mean()
    attackers = attackers.reset_index().rename(columns={"category": "attacker"})
    found = []
    for name, at in per("detected_at").groupby("category", sort=False):
        hit = at["estimate"].notna()
        found.append(
            {
                "detector": name,
                "detected": float(hit.mean()),
                "median_time": float(at.loc[hit, "estimate"].median()) if hit.any() else np.nan,
                "final_log_e_value": float(per("log_e_value").query("category == @name")["estimate"].mean()),
            }
        )
    for name, part in per("honest_l1_change").groupby("category", sort=False):
        found.append(
            {
                "detector": f"{name}: change of the honest estimate's L1 error",
                "detected": float(part["estimate"].mean()),
            }
        )
    honest = per("flagged_honest")
    if not honest.empty:
        found.append(
            {"detector": "frequent itemset: honest reports flagged", "detected": float(honest["estimate"].mean())}
        )
    return attackers, pd.DataFrame(found)


#: the rows of a numeric question's distribution task (their own section)
DISTRIBUTION = (
    "cdf",
    "wasserstein1",
    "ks",
    "quantile",
    "range",
    "item",
    "item_bias",
    "item_naive_se",
    "set_size_cdf",
    "key_frequency",
    "key_bias",
    "key_mean",
)


def final_quantiles(results: pd.DataFrame) -> pd.DataFrame:
    """Numeric questions' quantiles at the last checkpoint: per task and level, replication
    0's estimate with its interval, and over replications the mean estimate, the RMSE
    against the truth and the coverage of the intervals."""
    cols = ["task", "level", "truth", "estimate", "ci_low", "ci_high", "covered", "mean_estimate", "rmse", "coverage"]
    m = results[(results["quantity"] == "quantile") & (results["reason"] == "end")]
    if m.empty:
        return pd.DataFrame(columns=cols)
    m = m.assign(covered=(m["ci_low"] <= m["truth"]) & (m["truth"] <= m["ci_high"]), error=m["estimate"] - m["truth"])
    first = m[m["replication"] == m["replication"].min()].set_index(["task", "category"])
    agg = m.groupby(["task", "category"], sort=False).agg(
        mean_estimate=("estimate", "mean"), rmse=("error", rms), coverage=("covered", "mean")
    )
    out = first[["truth", "estimate", "ci_low", "ci_high", "covered"]].join(agg).reset_index()
    return out.rename(columns={"category": "level"})[cols]


def final_ranges(results: pd.DataFrame) -> pd.DataFrame:
    """Ordinal questions' ranges at the last checkpoint: per task and range, replication 0's
    estimate with its interval and exact standard error, and over replications the mean
    estimate, the RMSE against the truth and the coverage of the intervals."""
    cols = ["task", "range", "truth", "estimate", "ci_low", "ci_high", "covered", "theory_se", "mean_estimate", "rmse"]
    cols += ["coverage"]
    m = results[(results["quantity"] == "range") & (results["reason"] == "end")]
    if m.empty:
        return pd.DataFrame(columns=cols)
    m = m.assign(covered=(m["ci_low"] <= m["truth"]) & (m["truth"] <= m["ci_high"]), error=m["estimate"] - m["truth"])
    first = m[m["replication"] == m["replication"].min()].set_index(["task", "category"])
    agg = m.groupby(["task", "category"], sort=False).agg(
        mean_estimate=("estimate", "mean"), rmse=("error", rms), coverage=("covered", "mean")
    )
    out = first[["truth", "estimate", "ci_low", "ci_high", "covered", "theory"]].join(agg).reset_index()
    return out.rename(columns={"category": "range", "theory": "theory_se"})[cols]


def final_distances(results: pd.DataFrame) -> pd.DataFrame:
    """Numeric questions' distances of the estimated histogram from the true one at the end:
    per task, replication 0's Wasserstein-1 and Kolmogorov-Smirnov distances and their
    means over replications."""
    cols = ["task", "wasserstein1", "ks", "mean_wasserstein1", "mean_ks"]
    m = results[
        ((results["quantity"] == "wasserstein1") | (results["quantity"] == "ks")) & (results["reason"] == "end")
    ]
    if m.empty:
        return pd.DataFrame(columns=cols)
    first = m[m["replication"] == m["replication"].min()].pivot(index="task", columns="quantity", values="estimate")
    mean = m.groupby(["task", "quantity"], sort=False)["estimate"].mean().unstack("quantity")
    out = first.join(mean.add_prefix("mean_")).reset_index()
    return out[cols]


def final_cdfs(results: pd.DataFrame) -> pd.DataFrame:
    """Replication 0's distribution function of each numeric question at the end: per task,
    the bucket edge (a number), the estimate, its band and the truth."""
    m = results[(results["quantity"] == "cdf") & (results["reason"] == "end")]
    m = m[m["replication"] == m["replication"].min()] if not m.empty else m
    out = m[["task", "category", "estimate", "ci_low", "ci_high", "truth"]].copy()
    out["edge"] = pd.to_numeric(out["category"], errors="coerce")
    return out.rename(columns={"category": "answer"}).reset_index(drop=True)


def tiers_table(results: pd.DataFrame) -> pd.DataFrame:
    """Privacy tiers, at the end of replication 0, per answer: the truth, the combined
    (minimum-variance) estimate and its exact standard error, the naive pooling and its
    exact standard error, and each tier's exact standard error (columns ``se tier t (eps =
    ...)``, at the tier's reports received)."""
    end = results[(results["reason"] == "end") & (results["task"] == "tiers")]
    if end.empty:
        return pd.DataFrame()
    end = end[end["replication"] == end["replication"].min()]
    comb = end[end["quantity"] == "frequency"].set_index("category")
    out = pd.DataFrame(
        {"category": comb.index, "truth": comb["truth"].to_numpy(), "combined": comb["estimate"].to_numpy()}
    )
    se = end[end["quantity"] == "std_error"].set_index("category")["theory"]
    naive = end[end["quantity"] == "naive_frequency"].set_index("category")
    out["combined_exact_se"] = out["category"].map(se)
    out["naive"] = out["category"].map(naive["estimate"])
    out["naive_exact_se"] = out["category"].map(naive["theory"])
    tiers = end[end["quantity"] == "tier_frequency"]
    for method, g in tiers.groupby("method", sort=False):
        out[f"se {method}"] = out["category"].map(g.set_index("category")["theory"])
    return out


def tier_sizes(results: pd.DataFrame) -> list[tuple[str, int]]:
    """(tier, reports received) at the end of replication 0."""
    end = results[
        (results["reason"] == "end") & (results["task"] == "tiers") & (results["quantity"] == "tier_frequency")
    ]
    if end.empty:
        return []
    end = end[end["replication"] == end["replication"].min()]
    first = end.groupby("method", sort=False)["n_received"].first()
    return [(str(m), int(n)) for m, n in first.items()]


def nonresponse_table(results: pd.DataFrame) -> pd.DataFrame:
    """Answer-dependent loss, at the end of replication 0, per answer: the truth p, the raw
    estimate (the first frequency task's of the same mechanism), the exact bias q - p, the
    raw estimate's target q, and when the analyst reweights, the reweighted estimate with its
    interval and whether it holds p."""
    nr = results[(results["quantity"] == "nonresponse_bias") & (results["reason"] == "end")]
    cols = ["task", "category", "truth", "raw_estimate", "exact_bias", "raw_target", "raw_error"]
    if nr.empty:
        return pd.DataFrame(columns=cols)
    rep = nr["replication"].min()
    end = results[(results["reason"] == "end") & (results["replication"] == rep)]
    out = []
    for task, g in nr[nr["replication"] == rep].groupby("task", sort=False):
        names = end["task"].astype(str)
        if task.endswith(":nonresponse"):  # a question's item non-response: "question:nonresponse"
            mine = names.str.startswith(task[: -len("nonresponse")])
        else:
            mine = names.str.endswith(task[len("nonresponse") :])  # "" or "@mechanism"
        freq = end[(end["quantity"] == "frequency") & mine]
        raw = freq[freq["task"] == freq["task"].iloc[0]].set_index("category") if len(freq) else None
        t = pd.DataFrame(
            {
                "task": task,
                "category": g["category"].to_numpy(),
                "exact_bias": g["estimate"].to_numpy(),
                "raw_target": g["truth"].to_numpy(),
            }
        )
        t["truth"] = t["raw_target"] - t["exact_bias"]
        t["raw_estimate"] = t["category"].map(raw["estimate"]) if raw is not None else np.nan
        t["raw_error"] = t["raw_estimate"] - t["truth"]
        rw = end[(end["quantity"] == "reweighted") & (end["task"] == task)].set_index("category")
        if len(rw):
            t["reweighted"] = t["category"].map(rw["estimate"])
            t["ci_low"], t["ci_high"] = t["category"].map(rw["ci_low"]), t["category"].map(rw["ci_high"])
            t["covered"] = (t["ci_low"] <= t["truth"]) & (t["truth"] <= t["ci_high"])
        out.append(t)
    table = pd.concat(out, ignore_index=True)
    extra = [c for c in ("reweighted", "ci_low", "ci_high", "covered") if c in table.columns]
    return table[cols + extra]


def crosstab_tests(results: pd.DataFrame) -> pd.DataFrame:
    """Cross-tabulations and tests of homogeneity at the last checkpoint of replication 0:
    per task and test (``ldp``: the Wald test on the privatised reports; ``pearson``:
    Pearson's on the same respondents' true answers; ``answers``: the test on paired terms
    run on the true answers' terms), the statistic, df, p-value and decision, with the pairs
    received and the largest |estimate - truth| of the joint table (finite path) or the
    estimated and true cross-covariance norms (``association``, ``true_association``: tests
    on paired terms); and over replications the share that rejected independence."""
    x = results[_is_crosstab(results) & (results["reason"] == "end")]
    cols = [
        "task",
        "test",
        "n_received",
        "statistic",
        "df",
        "p_value",
        "reject",
        "rejection_rate",
        "max_abs_error",
        "association",
        "true_association",
    ]
    if x.empty:
        return pd.DataFrame(columns=cols)
    rep = x["replication"].min()
    tests = x[x["quantity"].str.startswith("independence_")].assign(
        what=lambda d: d["quantity"].str.removeprefix("independence_")
    )
    wide = tests[tests["replication"] == rep].pivot_table(
        index=["task", "category"], columns="what", values="estimate", sort=False, dropna=False
    )
    # only the tests each task has (pivot_table with dropna=False crosses every task with every test)
    have = pd.MultiIndex.from_frame(tests[["task", "category"]].drop_duplicates())
    wide = wide[wide.index.isin(have)]
    rate = tests[tests["what"] == "reject"].groupby(["task", "category"], sort=False)["estimate"].mean()
    cells = x[(x["quantity"] == "joint") & (x["replication"] == rep)]
    err = (cells["estimate"] - cells["truth"]).abs().groupby(cells["task"], sort=False).max()
    first = tests[tests["replication"] == rep]
    n = first.groupby("task", sort=False)["n_received"].first()
    assoc = x[(x["quantity"] == "association") & (x["replication"] == rep)].set_index("task")
    out = wide.join(rate.rename("rejection_rate")).reset_index().rename(columns={"category": "test"})
    out["n_received"] = out["task"].map(n)
    out["max_abs_error"] = out["task"].map(err)
    ldp = out["test"] == "ldp"
    out["association"] = out["task"].map(assoc["estimate"]).where(ldp)
    out["true_association"] = out["task"].map(assoc["truth"]).where(ldp)
    out["reject"] = out["reject"].map(lambda v: "" if pd.isna(v) else ("yes" if v else "no"))
    return out[cols]


def crosstab_cells(results: pd.DataFrame) -> pd.DataFrame:
    """The joint tables at the end of replication 0: per task and cell, the estimate
    (projected onto the simplex), its interval, the truth and the exact standard error."""
    x = results[_is_crosstab(results) & (results["reason"] == "end") & (results["quantity"] == "joint")]
    x = x[x["replication"] == x["replication"].min()] if len(x) else x
    return (
        x[["task", "category", "truth", "estimate", "ci_low", "ci_high", "theory"]]
        .rename(columns={"category": "cell", "theory": "exact_se"})
        .reset_index(drop=True)
    )


def optimal_plan(plan: pd.DataFrame, variance: pd.DataFrame, count: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``[budget] strategy = "optimal"``: the per-question plan (weight, eps and summed exact
    variance under the equal split and at the optimum), and the weighted loss ``sum_j w_j
    V_j`` of the equal split, the optimum and one random question with the whole budget,
    with each one's effective sample size relative to the equal split (the factor by which
    the equal split would need more respondents to reach the same loss)."""
    per = plan.copy()
    one = variance.groupby("question", sort=False)["var_one_random"].sum()
    weights = per.set_index("question")["weight"]
    losses = {
        "equal split": float((per["weight"] * per["var_equal"]).sum()),
        "optimal split": float((per["weight"] * per["var_optimal"]).sum()),
        "one random question": float((weights * one.reindex(weights.index).fillna(0.0)).sum()),
    }
    base = losses["equal split"]
    totals = pd.DataFrame(
        {
            "strategy": list(losses),
            "weighted_loss": list(losses.values()),
            "effective_sample_size_gain": [base / v if v > 0 else float("nan") for v in losses.values()],
        }
    )
    return per, totals


def final_items(results: pd.DataFrame) -> pd.DataFrame:
    """Check-all-that-apply questions at the end of replication 0: per task and item, the
    estimate with its interval, the exact standard error and bias, and the exact standard
    error one yes/no question per item at eps / k would have had."""
    cols = ["task", "item", "truth", "estimate", "ci_low", "ci_high", "covered", "exact_se", "exact_bias", "naive_se"]
    end = results[(results["reason"] == "end")]
    m = end[end["quantity"] == "item"]
    if m.empty:
        return pd.DataFrame(columns=cols)
    first = m["replication"].min()
    m = m[m["replication"] == first].assign(
        covered=lambda f: (f["ci_low"] <= f["truth"]) & (f["truth"] <= f["ci_high"])
    )
    extra = end[
        (end["replication"] == first) & ((end["quantity"] == "item_bias") | (end["quantity"] == "item_naive_se"))
    ]
    # looked up by (task, item), not pivoted: pandas 2.0 with numpy 1.26 warns in a pivot's dtype merge
    lookup = {(t, q, c): v for t, q, c, v in zip(extra["task"], extra["quantity"], extra["category"], extra["theory"])}
    keys = list(zip(m["task"], m["category"]))
    out = m[["task", "category", "truth", "estimate", "ci_low", "ci_high", "covered", "theory"]].assign(
        exact_bias=[lookup.get((t, "item_bias", c), np.nan) for t, c in keys],
        naive_se=[lookup.get((t, "item_naive_se", c), np.nan) for t, c in keys],
    )
    out = out.rename(columns={"category": "item", "theory": "exact_se"}).reset_index(drop=True)
    return out[cols]


def final_keys(results: pd.DataFrame) -> pd.DataFrame:
    """Key-value questions at the end of replication 0: per task and key, the frequency with
    its interval, exact standard error and exact bias, and the mean value with its interval
    and delta-method standard error."""
    cols = ["task", "key", "truth", "frequency", "frequency_se", "frequency_bias", "true_mean", "mean", "mean_low"]
    cols += ["mean_high", "mean_se"]
    end = results[results["reason"] == "end"]
    m = end[end["quantity"] == "key_frequency"]
    if m.empty:
        return pd.DataFrame(columns=cols)
    first = m["replication"].min()
    end = end[end["replication"] == first]
    idx = ["task", "category"]
    freq = end[end["quantity"] == "key_frequency"].set_index(idx)
    bias = end[end["quantity"] == "key_bias"].set_index(idx)["theory"]
    mean = end[end["quantity"] == "key_mean"].set_index(idx)
    out = pd.DataFrame(
        {
            "truth": freq["truth"],
            "frequency": freq["estimate"],
            "frequency_se": freq["theory"],
            "frequency_bias": bias,
            "true_mean": mean["truth"],
            "mean": mean["estimate"],
            "mean_low": mean["ci_low"],
            "mean_high": mean["ci_high"],
            "mean_se": mean["theory"],
        }
    ).reset_index()
    return out.rename(columns={"category": "key"})[cols]


def design_table(results: pd.DataFrame) -> pd.DataFrame:
    """The survey design's estimates at the end: per question and answer, replication 0's
    weighted estimate and interval, the weighted truth (the same estimate from the true
    answers), the design's and the privacy noise's standard errors (exact, from the
    simulation), the analyst's standard error (mean over replications) beside its theory
    (the two parts together), and the spread of the estimate over replications (the
    privacy noise alone: the sample is the same in every one)."""
    rows = results[(results["reason"] == "end") & results["task"].astype(str).str.endswith(":design")]
    if rows.empty:
        return pd.DataFrame()
    rows = rows.assign(question=rows["task"].astype(str).str.slice(0, -len(":design")))
    keys = ["question", "category"]

    def part(quantity: str) -> pd.DataFrame:
        return rows[rows["quantity"] == quantity]

    first = part("weighted")
    first = first[first["replication"] == first["replication"].min()]
    out = first[keys + ["estimate", "ci_low", "ci_high", "truth"]].reset_index(drop=True)
    for quantity, column in (("design_se", "design_se"), ("privacy_se", "privacy_se")):
        one = part(quantity).groupby(keys, sort=False)["theory"].first().rename(column)
        out = out.join(one, on=keys)
    se = (
        part("weighted_se")
        .groupby(keys, sort=False)
        .agg(analyst_se=("estimate", "mean"), se_theory=("theory", "first"))
    )
    out = out.join(se, on=keys)
    spread = part("weighted").groupby(keys, sort=False)["estimate"].std(ddof=1).rename("sd_over_replications")
    return out.join(spread, on=keys).rename(columns={"category": "answer", "truth": "truth_weighted"})
