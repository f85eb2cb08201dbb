"""Summaries of a survey results table (pandas aggregations; no formulas): what the report
and ``ldpsim run`` show."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ldpsim.report.tables import read_csv

#: The columns of a survey results table, one row per replication x checkpoint x task x
#: quantity x category; ``method`` says how a frequency row was estimated (estimator and
#: interval, e.g. ``inversion/normal``; empty elsewhere).
RESULT_COLUMNS = [
    "replication", "checkpoint", "reason", "time", "n_received", "task", "quantity", "category",
    "estimate", "ci_low", "ci_high", "truth", "theory", "method",
]  # fmt: skip


def read_results(path: str | Path) -> pd.DataFrame:
    """A survey results.csv with labels kept as text ("1", "01" and "" stay distinct) and
    empty numeric cells as NaN."""
    numeric = ["time", "n_received", "estimate", "ci_low", "ci_high", "truth", "theory"]
    return read_csv(path, dtype={"category": str, "task": str, "quantity": str, "reason": str, "method": str}, na=numeric)


def frequency_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Frequency rows with their plug-in and exact standard errors side by side."""
    freq = results[results["quantity"] == "frequency"]
    se = results[results["quantity"] == "std_error"][["replication", "checkpoint", "task", "category", "estimate", "theory"]]
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


def _rms(values: pd.Series) -> float:
    """Root mean square of the values that are not NaN (NaN when there are none)."""
    x = values.to_numpy(dtype=float)
    x = x[~np.isnan(x)]
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else float("nan")


def final_frequencies(results: pd.DataFrame) -> pd.DataFrame:
    """At the last checkpoint: per task and category, the estimate of replication 0 with its
    CI, and over replications the mean estimate, RMSE, mean standard errors and coverage."""
    f = frequency_rows(results)
    last = f[f["reason"] == "end"]
    first = last[last["replication"] == last["replication"].min()]
    agg = last.groupby(["task", "category"], sort=False).agg(
        truth=("truth", "first"),
        mean_estimate=("estimate", "mean"),
        rmse=("error", _rms),
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
    columns = (["task"] if several else []) + ["reason", "ordinal", "time", "n_received", "rmse", "theory_rms_se", "coverage"]
    if f.empty:
        return pd.DataFrame(columns=columns)
    g = f.groupby((["task"] if several else []) + ["reason", "ordinal"], sort=False)
    out = pd.DataFrame(
        {
            "time": g["time"].mean(),
            "n_received": g["n_received"].mean(),
            "rmse": g["error"].apply(_rms),
            "theory_rms_se": g["theory_se"].apply(_rms),
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
    rows = results[~results["task"].isin(["engine"]) & ~results["quantity"].isin(["frequency", "std_error"])]
    if rows.empty:
        return rows
    rep = rows["replication"].min() if replication is None else replication
    rows = rows[rows["replication"] == rep]
    cols = ["checkpoint", "time", "n_received", "task", "quantity", "category", "estimate", "theory", "truth"]
    return rows[cols].reset_index(drop=True)


def other_task_totals(results: pd.DataFrame) -> pd.DataFrame:
    """At the end, per task and quantity: mean estimate over replications, mean theory, mean
    truth (e.g. the rate of correct decisions is the share of estimate == truth)."""
    rows = results[(results["reason"] == "end") & ~results["task"].isin(["engine"])
                   & ~results["quantity"].isin(["frequency", "std_error"])]  # fmt: skip
    if rows.empty:
        return rows
    g = rows.groupby(["task", "quantity"], sort=False)
    out = g.agg(mean_estimate=("estimate", "mean"), theory=("theory", "mean"), truth=("truth", "mean"),
                replications=("estimate", "size"))  # fmt: skip
    agree = rows.assign(match=(rows["estimate"] == rows["truth"])).groupby(["task", "quantity"], sort=False)["match"].mean()
    out["share_equal_to_truth"] = agree
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


def error_norms(results: pd.DataFrame) -> pd.DataFrame:
    """Per task and checkpoint (the k-th of each kind, as in :func:`error_by_n`): the L1
    error ``sum_x |estimate_x - truth_x|`` and the L-infinity error ``max_x |...|`` of the
    estimated distribution, averaged over replications."""
    f = frequency_rows(results)
    f = f[(f["n_received"] > 0) & f["estimate"].notna()]
    cols = ["task", "reason", "ordinal", "time", "n_received", "l1", "linf"]
    if f.empty:
        return pd.DataFrame(columns=cols)
    per = f.assign(abs_error=f["error"].abs()).groupby(["task", "reason", "ordinal", "replication"], sort=False).agg(
        time=("time", "first"), n_received=("n_received", "first"), l1=("abs_error", "sum"), linf=("abs_error", "max")
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
    g["better"] = np.where(g["var_split"] < g["var_one_random"], "split",
                           np.where(g["var_one_random"] < g["var_split"], "one_random", "equal"))  # fmt: skip
    return g


def final_means(results: pd.DataFrame) -> pd.DataFrame:
    """Numeric questions at the last checkpoint: per task, replication 0's mean with its
    interval and reports, and over replications the mean estimate, RMSE against the truth,
    the exact standard error and the coverage of the intervals."""
    m = results[(results["quantity"] == "mean") & (results["reason"] == "end")]
    cols = ["task", "truth", "estimate", "ci_low", "ci_high", "covered", "n_received", "mean_estimate", "rmse",
            "theory_se", "coverage"]  # fmt: skip
    if m.empty:
        return pd.DataFrame(columns=cols)
    se = results[(results["quantity"] == "std_error") & (results["reason"] == "end")][["replication", "task", "theory"]]
    m = m.merge(se.rename(columns={"theory": "theory_se"}), on=["replication", "task"], how="left")
    m = m.assign(covered=(m["ci_low"] <= m["truth"]) & (m["truth"] <= m["ci_high"]), error=m["estimate"] - m["truth"])
    first = m[m["replication"] == m["replication"].min()].set_index("task")
    agg = m.groupby("task", sort=False).agg(mean_estimate=("estimate", "mean"), rmse=("error", _rms),
                                            coverage=("covered", "mean"))  # fmt: skip
    out = first[["truth", "estimate", "ci_low", "ci_high", "covered", "n_received", "theory_se"]].join(agg).reset_index()
    return out[cols]
