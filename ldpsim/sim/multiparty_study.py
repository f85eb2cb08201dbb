"""Scaling studies of multi-party randomized response (``[study]`` in a multi-party file):
for every point (protocol, task, eps, k, receiver) the exact accuracy of the optimal rule,
its large-k approximation and a Monte Carlo measurement by aggregate sampling
(:mod:`ldpsim.protocols.scaling`), with a tolerance at the scenario's ``alpha``.

Seeds: replication r of a run with root seed s uses ``SeedSequence(s, spawn_key=(r,))`` and
spawns one child per point, in the order of the scenario's grid, so the same seed gives the
same rows whatever the executor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldpsim.errors import LdpSimError, show
from ldpsim.protocols.decisions import exact_accuracy
from ldpsim.protocols.scaling import aggregate_accuracy, build_protocol, build_task, large_k_accuracy
from ldpsim.report.multiparty_study import console, read_study_results, render_study_report, summarise_study
from ldpsim.runs import Outcome, Study
from ldpsim.sim.scenario.multiparty_study import parse_multiparty_study
from ldpsim.stats import mean_tolerance

#: The columns of a study's results, one row per replication x point (``party`` -1 is the
#: observer). ``tolerance`` holds at ``alpha`` over the replication's table (Bonferroni over
#: the rows with an exact value); ``within`` is empty where there is nothing to compare.
STUDY_COLUMNS = [
    "replication",
    "protocol",
    "task",
    "k",
    "eps",
    "delta",
    "receiver",
    "party",
    "plan",
    "exact",
    "large_k",
    "measured",
    "std_error",
    "rounds",
    "tolerance",
    "alpha",
    "within",
]

EXACT_COLUMNS = ["protocol", "task", "k", "eps", "delta", "receiver", "party", "plan", "exact", "large_k"]


def exact_table(scenario: Any) -> pd.DataFrame:
    """The exact accuracy (NaN where no exact path) and the large-k approximation of every
    point of the study, in the order of ``scenario.points``: computed once per run."""
    rows = []
    built: dict[tuple[str, float, int], Any] = {}
    for p in scenario.points.itertuples(index=False):
        key = (p.protocol, p.eps, p.k)
        if key not in built:
            built[key] = build_protocol(p.protocol, p.eps, p.delta, p.k)
        protocol = built[key]
        task = build_task(p.task, p.k)
        exact = float(exact_accuracy(protocol, task, p.party)) if p.plan else math.nan
        rows.append(
            {
                "protocol": p.protocol,
                "task": p.task,
                "k": p.k,
                "eps": p.eps,
                "delta": p.delta,
                "receiver": p.receiver,
                "party": p.party,
                "plan": p.plan,
                "exact": exact,
                "large_k": large_k_accuracy(p.task, protocol.matrices[0], p.k, p.party),
            }
        )
    return pd.DataFrame(rows, columns=EXACT_COLUMNS)


def run_study_replication(scenario: Any, index: int, seed: int, exact: pd.DataFrame | None = None) -> pd.DataFrame:
    """One replication: for each point, ``rounds`` rounds of the aggregate Monte Carlo
    (:func:`ldpsim.protocols.scaling.aggregate_accuracy`) next to the exact value and the
    large-k approximation (``exact``: :func:`exact_table`, computed here when not given)."""
    if exact is None:
        exact = exact_table(scenario)
    points = scenario.points
    rounds = scenario.rounds
    alpha = float(scenario.spec.simulation.alpha)
    children = np.random.SeedSequence(seed, spawn_key=(index,)).spawn(len(points))
    built: dict[tuple[str, float, int], Any] = {}
    measured = np.full(len(points), math.nan)
    se = np.full(len(points), math.nan)
    for i, p in enumerate(points.itertuples(index=False)):  # a loop over points; each is vectorised over rounds
        if not p.monte_carlo:
            continue
        key = (p.protocol, p.eps, p.k)
        if key not in built:
            built[key] = build_protocol(p.protocol, p.eps, p.delta, p.k)
        measured[i], se[i] = aggregate_accuracy(
            built[key], build_task(p.task, p.k), p.party, rounds, np.random.default_rng(children[i])
        )
    values = exact["exact"].to_numpy(dtype=float)
    compared = np.isfinite(values) & np.isfinite(measured)
    n_table = max(int(compared.sum()), 1)
    indicator = np.array([0.0, 1.0])  # the gain of every task here: right or wrong
    tol = np.array(
        [
            mean_tolerance(indicator, float(values[i]), rounds, alpha / n_table) if compared[i] else math.nan
            for i in range(len(points))
        ]
    )
    within = [bool(abs(measured[i] - values[i]) <= tol[i]) if compared[i] else None for i in range(len(points))]
    out = exact.copy()
    out.insert(0, "replication", index)
    out["measured"] = measured
    out["std_error"] = se
    out["rounds"] = np.where(np.isfinite(measured), rounds, 0)
    out["tolerance"] = tol
    out["alpha"] = alpha
    out["within"] = pd.array(within, dtype="boolean")
    return out[STUDY_COLUMNS]


@dataclass(frozen=True)
class MultipartyStudyRun:
    """A finished scaling study: its directory, the scenario as run, every replication's
    rows, the root seed and the summary pooled over replications (one row per point)."""

    run_dir: Path
    scenario: Any
    results: pd.DataFrame
    seed: int
    summary: pd.DataFrame


class MultipartyScalingStudy(Study):
    """A multi-party scaling study (``[study]``): exact values once per run, in the calling
    process; the aggregate Monte Carlo in every replication."""

    kind = "multiparty_study"
    columns = tuple(STUDY_COLUMNS)

    @classmethod
    def parse(cls, text: str, where: str) -> Any:
        return parse_multiparty_study(text, where)

    def shared(self) -> Any:
        return exact_table(self.scenario)

    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        return run_study_replication(self.scenario, index, seed, shared)

    def read_results(self, path: Path) -> pd.DataFrame:
        return read_study_results(path)

    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        return render_study_report(self.scenario, results, seed)

    def tables(self, results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """``points``: one row per protocol, task, eps, k and receiver (exact, measured,
        tolerance, large-k approximation)."""
        return {"points": summarise_study(results, self.scenario)}

    def plot(
        self, ax: Any, results: pd.DataFrame, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> None:
        """The observer's accuracy against k, one curve per eps (exact line, measured points,
        large-k approximation dashed) for the task ``quantity`` (default the first)."""
        if replication is not None:
            raise LdpSimError(
                f"replication: got {show(replication)}, expected None (a study's points are pooled over replications)"
            )
        points = self.tables(results)["points"]
        tasks = list(dict.fromkeys(points["task"]))
        task = tasks[0] if quantity is None else quantity
        if task not in tasks:
            raise LdpSimError(
                f"quantity: got {show(task)}, expected one of the study's tasks {', '.join(map(repr, tasks))}"
            )
        g = points[(points["task"] == task) & (points["receiver"] == "observer")]
        if g.empty:
            g = points[points["task"] == task]
        protocol = g["protocol"].iloc[0]
        g = g[(g["protocol"] == protocol) & (g["receiver"] == g["receiver"].iloc[0])]
        for n, (eps, h) in enumerate(g.groupby("eps", sort=True)):
            h = h.sort_values("k")
            color = f"C{n % 10}"
            ax.plot(h["k"], h["exact"], "-", color=color, label=f"ε = {eps:g}: exact")
            ax.plot(h["k"], h["large_k"], "--", lw=1, color=color, label=f"ε = {eps:g}: large k")
            ax.errorbar(h["k"], h["measured"], yerr=h["tolerance"], fmt="o", ms=3, capsize=2, color=color, **kw)
        ax.set_xscale("log")
        ax.set_xlabel("parties k")
        ax.set_ylabel(f"accuracy ({task}, {g['receiver'].iloc[0]})")
        ax.set_title(f"{self.scenario.name}: {task} against k ({protocol})", fontsize=10)
        ax.legend(fontsize=7)

    def console(self, result: Any) -> list[str]:
        return console(result)

    def metadata(self) -> dict[str, Any]:
        sc = self.scenario
        return {
            "points": len(sc.points),
            "rounds_per_point": sc.rounds,
            "estimated_seconds": round(sc.estimated_seconds, 1),
            "exact_points": int((sc.points["plan"] != "").sum()),
            "monte_carlo_points": int(sc.points["monte_carlo"].sum()),
        }

    def result(self, o: Outcome) -> MultipartyStudyRun:
        return MultipartyStudyRun(o.run_dir, o.study.scenario, o.results, o.seed, o.extra)
