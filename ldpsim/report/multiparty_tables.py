"""Summaries of a multi-party results table (pandas aggregations and the tolerances of
:mod:`ldpsim.stats`): accuracy pooled over replications next to the exact value, paired
differences between protocols, transcript completion delays next to theory; and the
exact-only tables (worst-case accuracy, honest against deviating parties, accuracy against
loss rate) read from the rows a run carries for them (``honest_accuracy``,
``worst_case_accuracy``, ``perfect_channel_accuracy``, ``channel_accuracy``: estimate
empty, ``loss`` the rate), besides each party's privacy and each receiver's task from the
scenario; what the report and ``ldpsim run`` show."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.protocols import OBSERVER, erasure_protocol
from ldpsim.protocols.decisions import worst_case_reach
from ldpsim.report.tables import read_csv
from ldpsim.stats import mean_tolerance, paired_tolerance

#: The columns of a multi-party results table, one row per replication x protocol x
#: receiver x quantity (party -1 is the observer); ``loss`` is the channel's loss rate the
#: row is about.
RESULT_COLUMNS = [
    "replication",
    "protocol",
    "party",
    "role",
    "eps",
    "delta",
    "quantity",
    "estimate",
    "std_error",
    "tolerance",
    "alpha",
    "theory",
    "rounds",
    "within_tolerance",
    "loss",
]

LATENCY_QUANTITIES = ("completion_delay_mean", "completion_delay_p50", "completion_delay_p99", "completion_delay_max")


def read_results(path: str | Path) -> pd.DataFrame:
    """A multi-party results.csv as written (text columns kept as text, empty cells NaN)."""
    df = read_csv(
        path,
        dtype={"protocol": str, "role": str, "quantity": str},
        na=[c for c in RESULT_COLUMNS if c not in ("protocol", "role", "quantity")],
    )
    if "loss" not in df.columns:  # runs written before the channel had losses
        df["loss"] = 0.0
    return df


# ------------------------------------------------------------------------- summaries
def summarise(results: pd.DataFrame, scenario: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy (and paired differences between protocols) pooled over replications:
    measured, exact, standard error and tolerance at the scenario's alpha over the whole
    table; and completion delays per receiver, measured next to theory."""
    acc = results[results["quantity"].isin(("accuracy", "accuracy_difference"))]
    alpha = scenario.spec.simulation.alpha
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
        gain = receiver_task(scenario, int(party)).gain
        if quantity == "accuracy":
            tol = mean_tolerance(gain, exact, int(total), alpha / n_rows)
        else:
            tol = paired_tolerance(2 * float(gain.max() - gain.min()), pooled_var, int(total), alpha / n_rows)
        rows.append(
            {
                "quantity": quantity,
                "protocol": protocol,
                "party": "observer" if party == OBSERVER else str(int(party)),
                "eps": g["eps"].iloc[0],
                "delta": g["delta"].iloc[0],
                "measured": mean,
                "exact": exact,
                "std_error": se,
                "z": (mean - exact) / se if se > 0 else math.nan,
                "tolerance": tol,
                "within": bool(abs(mean - exact) <= tol) if math.isfinite(tol) and math.isfinite(exact) else None,
                "rounds": int(total),
            }
        )
    summary = pd.DataFrame(rows)
    lat = results[results["quantity"].isin(LATENCY_QUANTITIES)]
    # per protocol where the completion depends on it (interactive protocols), else one "network" row per receiver
    per_protocol = bool((lat["protocol"] != "network").any())
    agg = {"completion_delay_max": "max"}
    lrows = []
    for (protocol, party, quantity), g in lat.groupby(["protocol", "party", "quantity"], sort=False):
        how = agg.get(quantity, "mean")
        lrows.append(
            {
                "protocol": protocol,
                "party": "observer" if party == OBSERVER else str(int(party)),
                "quantity": quantity,
                "measured": float(getattr(g["estimate"], how)()),
                "theory": float(g["theory"].iloc[0]),
            }
        )
    latency = pd.DataFrame(lrows)
    if not latency.empty:
        latency = latency.pivot_table(
            index=["protocol", "party"],
            columns="quantity",
            values=["measured", "theory"],
            sort=False,
            dropna=False,
        )
        latency.columns = [f"{q.removeprefix('completion_delay_')}_{kind}" for kind, q in latency.columns]
        order = [
            f"{q.removeprefix('completion_delay_')}_{kind}"
            for q in LATENCY_QUANTITIES
            for kind in ("measured", "theory")
        ]
        latency = latency[[c for c in order if c in latency.columns]].dropna(axis=1, how="all").reset_index()
        if not per_protocol:
            latency = latency.drop(columns="protocol")
    delivered = results[results["quantity"] == "messages_delivered"]
    if not latency.empty:
        keys = ["protocol", "party"] if per_protocol else ["party"]

        def at(series: pd.Series, row: pd.Series) -> float:
            who = OBSERVER if row["party"] == "observer" else int(row["party"])
            return float(series[(row["protocol"], who)] if per_protocol else series[who])

        counts = delivered.groupby(keys, sort=False)["estimate"].sum()
        expected = delivered.groupby(keys, sort=False)["theory"].sum()
        latency["messages"] = [int(at(counts, r)) for _, r in latency.iterrows()]
        latency["messages_expected"] = [int(at(expected, r)) for _, r in latency.iterrows()]
        heard = results[results["quantity"] == "messages_heard"]
        if not heard.empty:  # a lossy channel or a deadline: messages heard in time
            got = heard.groupby("party", sort=False)["estimate"].sum()
            want = heard.groupby("party", sort=False)["theory"].sum()
            latency["heard"] = [int(got[OBSERVER if p == "observer" else int(p)]) for p in latency["party"]]
            latency["heard_expected"] = [float(want[OBSERVER if p == "observer" else int(p)]) for p in latency["party"]]
    return summary, latency


def receiver_task(scenario: Any, party: int) -> Any:
    """The Task of receiver ``party`` (a party index, or OBSERVER)."""
    tasks = getattr(scenario, "tasks", ()) or ()
    if not tasks:
        return scenario.task
    return tasks[-1] if party == OBSERVER else tasks[party]


def _receiver(party: Any) -> str:
    return "observer" if int(party) == OBSERVER else str(int(party))


def _first(results: pd.DataFrame, quantity: str) -> pd.DataFrame:
    """Exact-only rows of one quantity, from the first replication that has them."""
    rows = results[results["quantity"] == quantity]
    if rows.empty:
        return rows
    return rows[rows["replication"] == rows["replication"].min()]


def gain_text(task: Any) -> str:
    """``indicator`` or the custom gain matrix, as one line."""
    g = np.asarray(task.gain)
    if np.array_equal(g, np.eye(len(g))):
        return "indicator"
    return "custom " + "[" + "; ".join(" ".join(f"{v:g}" for v in row) for row in g) + "]"


def receivers_table(scenario: Any) -> pd.DataFrame:
    """Each receiver's function and gain."""
    k = scenario.spec.parties.k
    rows = []
    for party in [*range(k), OBSERVER]:
        t = receiver_task(scenario, party)
        rows.append({"receiver": _receiver(party), "function": t.name, "outputs": t.n_outputs, "gain": gain_text(t)})
    return pd.DataFrame(rows)


def privacy_tables(scenario: Any) -> pd.DataFrame:
    """Each party's exact privacy per protocol, as announced and as run
    (:meth:`Protocol.privacy_table`): deviating parties get their own (eps inf for
    truthful, 0 for fixed); honest parties' rows are the announced ones."""
    deviating = dict(getattr(scenario, "deviations", ()) or ())
    actual = getattr(scenario, "actual", ()) or scenario.protocols
    frames = []
    for p, a in zip(scenario.protocols, actual):
        ann = p.privacy_table()
        run = a.privacy_table()
        df = pd.DataFrame(
            {
                "protocol": p.name,
                "party": ann["party"],
                "eps": ann["eps"],
                "delta": ann["delta"],
                "exact_delta_at_eps": ann["exact_delta_at_eps"],
                "private": ann["private"],
            }
        )
        if deviating:
            fixed = "fixed bit" if p.binary_inputs else "fixed value"
            df["run_as"] = [
                "truthful"
                if deviating.get(j) == "truthful"
                else f"{fixed} {deviating[j][1]}"
                if j in deviating
                else "honest"
                for j in ann["party"]
            ]
            df["eps_run"] = run["eps"]
            df["delta_run"] = run["delta"]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def worst_case_table(results: pd.DataFrame, scenario: Any) -> pd.DataFrame:
    """Per (protocol, receiver): the exact average accuracy of the optimal rule (everyone
    honest, through the channel) and the exact worst-case accuracy of the optimal
    worst-case rule, or why the linear program is out of reach."""
    avg = _first(results, "honest_accuracy")
    worst = _first(results, "worst_case_accuracy").set_index(["protocol", "party"])
    missing = float(getattr(scenario, "missing", 0.0))
    by_name = {p.name: p for p in scenario.protocols}
    rows = []
    for _, r in avg.iterrows():
        party = int(r["party"])
        value = (
            float(worst.loc[(r["protocol"], r["party"]), "theory"])
            if (r["protocol"], r["party"]) in worst.index
            else math.nan
        )
        why = ""
        if not math.isfinite(value) and r["protocol"] in by_name:
            faced = erasure_protocol(by_name[r["protocol"]], missing) if missing > 0 else by_name[r["protocol"]]
            why = worst_case_reach(faced, receiver_task(scenario, party), party) or ""
        rows.append(
            {
                "protocol": r["protocol"],
                "receiver": _receiver(party),
                "function": receiver_task(scenario, party).name,
                "average_exact": float(r["theory"]),
                "worst_case_exact": value,
                "note": f"out of reach: {why}" if why else "",
            }
        )
    return pd.DataFrame(rows)


def deviation_table(results: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Per (protocol, receiver): exact accuracy with everyone honest, exact with the
    deviations (the announced rule on the deviating transcripts), measured."""
    honest = _first(results, "honest_accuracy")
    acc = summary[summary["quantity"] == "accuracy"].set_index(["protocol", "party"])
    rows = []
    for _, r in honest.iterrows():
        key = (r["protocol"], _receiver(r["party"]))
        s = acc.loc[key]
        rows.append(
            {
                "protocol": key[0],
                "receiver": key[1],
                "exact_honest": float(r["theory"]),
                "exact_deviating": float(s["exact"]),
                "measured": float(s["measured"]),
                "change": float(s["exact"]) - float(r["theory"]),
                "tolerance": float(s["tolerance"]),
                "within": s["within"],
            }
        )
    return pd.DataFrame(rows)


def channel_table(results: pd.DataFrame, summary: pd.DataFrame, scenario: Any) -> pd.DataFrame:
    """Per (protocol, receiver): the exact expected gain with a perfect channel, at every
    loss rate of the grid (columns ``loss=r``), the accuracy lost to the scenario's channel
    (exact), and the measured accuracy at the scenario's rate with its tolerance."""
    grid = _first(results, "channel_accuracy")
    if grid.empty:
        return pd.DataFrame()
    perfect = _first(results, "perfect_channel_accuracy").set_index(["protocol", "party"])["theory"]
    acc = summary[summary["quantity"] == "accuracy"].set_index(["protocol", "party"])
    loss = float(scenario.spec.network.loss)
    rows = []
    for (protocol, party), g in grid.groupby(["protocol", "party"], sort=False):
        key = (protocol, _receiver(party))
        row = {"protocol": protocol, "receiver": key[1], "perfect": float(perfect.loc[(protocol, party)])}
        for _, r in g.sort_values("loss").iterrows():
            row[f"loss={r['loss']:g}"] = float(r["theory"])
        s = acc.loc[key]
        row["lost_exact"] = row["perfect"] - float(s["exact"])
        row[f"measured@{loss:g}"] = float(s["measured"])
        row["lost_measured"] = row["perfect"] - float(s["measured"])
        row["tolerance"] = float(s["tolerance"])
        row["within"] = s["within"]
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------- command line
def format_table(summary: pd.DataFrame, quantity: str = "accuracy") -> str:
    cols = ["protocol", "party", "eps", "delta", "measured", "exact", "std_error", "tolerance", "within"]
    return summary[summary["quantity"] == quantity][cols].to_string(index=False, float_format=lambda x: f"{x:.5f}")
