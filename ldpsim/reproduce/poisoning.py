"""Cao, Jia and Gong (2021), Table 1: the frequency gains of the random perturbed-value
(RPA), random item (RIA) and maximal gain (MGA) attacks on kRR, OUE and OLH.

The paper's setting for its synthetic data: d = 1,024 answers following a Zipf law (here
exponent 1), n = 1,000,000 honest users, fake share beta = 0.05, r = 10 targets drawn at
random, eps = 1. For each protocol and attack, three numbers sit side by side:

- the paper's closed form (their Table 1, OLH with q = 1/g);
- ours, exact: :func:`ldpsim.attacks.expected_gain` from the oracle's own inversion (for
  OLH with the exact collision probability of ldpsim's hash family, and the g the oracle
  uses, round(e + 1) = 4 at eps = 1: the paper's form is evaluated at that g too);
- ours, measured: the mean over instances of the gain of a simulated survey (honest reports
  drawn from the oracle, fake ones from the strategy), with its standard error. OLH's honest
  reports are drawn for n = 100,000 users (its decoding costs O(n d)) at the same share.

Beside them, ours only: the undetectable attacker's gain on kRR (the linear program of
:mod:`ldpsim.attacks.optimal`), which no test of the reports can see.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.stats import t as t_dist

from ldpsim import _progress as progress
from ldpsim.attacks import expected_gain, optimal_attack, strategy
from ldpsim.mechanisms import catalog
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

D, N, N_OLH, BETA, R, EPS = 1024, 1_000_000, 100_000, 0.05, 10, 1.0
PROTOCOLS = ("randomized_response", "oue", "olh")
ATTACKS = ("random_perturbed", "random_item", "maximal_gain")
SHORT = {
    "randomized_response": "kRR",
    "oue": "OUE",
    "olh": "OLH",
    "random_perturbed": "RPA",
    "random_item": "RIA",
    "maximal_gain": "MGA",
}
DPI = 110
#: the measured mean is compared with the paper by a two-sided t test at this level
FALSE_AGREEMENT = 1e-6
PNG_META = {"Software": None}


def cao_table_1(protocol: str, attack: str, eps: float, d: int, r: int, beta: float, f_t: float, g: int = 0) -> float:
    """The paper's closed forms (OLH with q = 1/g at the given g)."""
    e = math.exp(eps)
    if attack == "random_item":
        return beta * (1 - f_t)
    if protocol == "randomized_response":
        return beta * (r / d - f_t) if attack == "random_perturbed" else beta * (1 - f_t) + beta * (d - r) / (e - 1)
    if protocol == "oue":
        return beta * (r - f_t) if attack == "random_perturbed" else beta * (2 * r - f_t) + 2 * beta * r / (e - 1)
    if attack == "random_perturbed":
        return -beta * f_t
    p = e / (e + g - 1)
    return beta * (r * (1 - 1 / g) / (p - 1 / g) - f_t)


def _prior() -> np.ndarray:
    w = 1.0 / np.arange(1, D + 1)
    return w / w.sum()


def _measured(mech, attack: str, targets: np.ndarray, prior: np.ndarray, n: int, rng: np.random.Generator) -> float:
    m = int(round(BETA * n / (1 - BETA)))
    if mech.aggregate_exact:
        honest = mech.sample_statistic(rng.multinomial(n, prior), rng)
    else:
        honest = mech.statistic(mech.privatize(rng.choice(D, size=n, p=prior), rng))
    fake = mech.statistic(strategy(attack).reports(mech, targets, m, rng, prior=prior, share=m / (n + m)))
    after = np.asarray(mech.invert((honest + fake) / (n + m)))[targets].sum()
    before = np.asarray(mech.invert(honest / n))[targets].sum()
    return float(after - before)


@register(
    "cao-gains",
    "Poisoning gains of RPA, RIA and MGA on kRR, OUE and OLH: the paper's closed forms, ours exact and measured",
    "Cao, Jia and Gong 2021 (USENIX Security), Table 1",
)
def cao_gains(seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1) -> pd.DataFrame:
    """About 2 s per instance (OLH's decoding and kRR's million-report statistic dominate)."""
    seed, instances = s.check_run_args(seed, instances)
    eps = float(s.eps_grid(eps_grid, default=np.array([EPS]))[0])
    out_dir = Path(out_dir)
    prior = _prior()
    targets = np.sort(np.random.default_rng(seed).choice(D, size=R, replace=False))
    f_t = float(prior[targets].sum())
    mechs = {p: catalog.build(p, k=D, eps=eps) for p in PROTOCOLS}
    rows = []
    with progress.bar(instances, "cao-gains", unit="instance"):
        for i in range(instances):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
            for p, mech in mechs.items():
                for a in ATTACKS:
                    n = N_OLH if p == "olh" else N
                    rows.append(
                        {"instance": i, "protocol": p, "attack": a, "gain": _measured(mech, a, targets, prior, n, rng)}
                    )
            progress.advance()
    data = pd.DataFrame(rows)
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    stats = data.groupby(["protocol", "attack"], sort=False)["gain"].agg(["mean", "std"])
    summary = []
    table = []
    note = f"beta = {BETA}, r = {R}, d = {D}, f_T = {f_t:.4f}"
    for p, mech in mechs.items():
        g = int(getattr(mech, "g", 0))
        for a in ATTACKS:
            paper = cao_table_1(p, a, eps, D, R, BETA, f_t, g)
            exact = expected_gain(mech, a, targets, BETA, prior, rng=seed)
            mean, sd = stats.loc[(p, a)]
            se = sd / math.sqrt(instances) if instances > 1 else math.nan
            label = f"{SHORT[a]} on {SHORT[p]}"
            summary.append(s.row(f"gain of {label}: ours exact", D, eps, exact, paper=paper, how="relative", note=note))
            measured = s.row(
                f"gain of {label}: ours measured (mean of {instances})", D, eps, mean, paper=paper, how="relative"
            )
            # the simulation's own noise: a two-sided t test at 1e-6, or within 2% of the paper's
            z = float(t_dist.isf(FALSE_AGREEMENT / 2, instances - 1)) if instances > 1 else 0.0
            ok = abs(mean - paper) <= z * (se if instances > 1 else 0.0) + 0.02 * abs(paper)
            measured.update(
                agrees="yes" if ok else "no",
                criterion=f"|ours - paper| <= {z:.3g} se + 0.02 |paper| (t test at 1e-6); {note}; se {se:.2g}",
            )
            summary.append(measured)
            table.append((label, paper, exact, mean, se))
    hidden = optimal_attack(mechs["randomized_response"], prior, targets, BETA).gain
    summary.append(
        s.row("gain of the undetectable attack on kRR (linear program; not in the paper)", D, eps, hidden, note=note)
    )
    frame = pd.DataFrame(summary, columns=s.SUMMARY_COLUMNS)
    write_summary(frame, out_dir)
    fig = Figure(figsize=(8, 4.2), dpi=DPI)
    ax = fig.add_subplot()
    x = np.arange(len(table))
    ax.bar(x - 0.25, [abs(t[1]) for t in table], 0.25, label="Cao et al., Table 1")
    ax.bar(x, [abs(t[2]) for t in table], 0.25, label="ours, exact")
    ax.bar(x + 0.25, [abs(t[3]) for t in table], 0.25, label="ours, measured")
    ax.set_xticks(x)
    ax.set_xticklabels([t[0] for t in table], rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("|frequency gain|")
    ax.set_title(f"eps = {eps:g}, beta = {BETA}, r = {R}, d = {D}, {instances} instance(s)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / "cao-gains.png", dpi=DPI, metadata=PNG_META)
    return frame
