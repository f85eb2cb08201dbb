"""The Square Wave paper's headline (Li et al. 2020): "SW with EMS consistently outperforms
other methods" in estimating a numerical distribution.

The paper reports its errors in figures; their numbers could not be read from any copy
reachable here, so this reproduction checks the claim itself on the paper's synthetic
setting: answers from Beta(5, 2) on [0, 1], the distribution on d = 256 equal buckets, n
respondents per instance, at each eps of the grid. Methods, on the same answers:

- Square Wave decoded by EMS (``ldpsim.analyst.distribution``);
- Square Wave decoded by plain EM (no smoothing), the paper's own ablation;
- bucketing into B buckets (8, 16, 32, 64) reported through OUE, the unbiased estimate
  projected by Norm-Sub and spread evenly over the 256 buckets, the best B chosen per
  instance after the fact (a baseline favoured by hindsight).

Each method's Wasserstein-1 distance from the sample's own histogram is recorded; the
summary gives the means over instances and, per eps, the ratio of the best other method's
mean error to EMS's: the claim holds where it is above 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ldpsim import _progress as progress
from ldpsim import _validate as v
from ldpsim.analyst import frequency_estimate, norm_sub
from ldpsim.analyst.distribution import em_counts, square_wave_transition, wasserstein1
from ldpsim.mechanisms import catalog
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

#: the paper's synthetic setting, and our grid
D = 256
N = 100_000
EPS = (0.5, 1.0, 2.0, 4.0)
BUCKETS = (8, 16, 32, 64)
DPI = 110
PNG_META = {"Software": None}


def _errors(x: np.ndarray, eps: float, rng: np.random.Generator) -> dict[str, float]:
    """Each method's Wasserstein-1 error on the answers ``x`` at ``eps``."""
    edges = np.linspace(0.0, 1.0, D + 1)
    truth = np.bincount(np.minimum((x * D).astype(np.int64), D - 1), minlength=D) / x.size
    sw = catalog.build("square_wave", eps=eps, lo=0.0, hi=1.0)
    matrix = square_wave_transition(sw, D)
    raw = sw.raw(sw.privatize(x, rng))
    counts = np.bincount(np.clip(np.floor((raw + sw.b) / (1 + 2 * sw.b) * D), 0, D - 1).astype(np.int64), minlength=D)
    out = {
        "square wave + EMS": wasserstein1(em_counts(matrix, counts, edges).probabilities, truth, edges),
        "square wave + EM": wasserstein1(em_counts(matrix, counts, edges, smoothing=False).probabilities, truth, edges),
    }
    best = np.inf
    for b in BUCKETS:
        oue = catalog.build("oue", eps=eps, k=b)
        stat = oue.sample_statistic(np.bincount(np.minimum((x * b).astype(np.int64), b - 1), minlength=b), rng)
        coarse = norm_sub(frequency_estimate(oue, stat, x.size).estimate)
        best = min(best, wasserstein1(np.repeat(coarse / (D // b), D // b), truth, edges))
    out["bucketing + OUE (best B)"] = best
    return out


@register(
    "square-wave-ems",
    "Square Wave + EMS vs SW + EM and bucketing + OUE (best B): Wasserstein-1 on Beta(5,2), d = 256",
    "Li et al. 2020 (SIGMOD), abstract: SW with EMS consistently outperforms other methods",
)
def square_wave_ems(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1, n: int = N
) -> pd.DataFrame:
    """Wasserstein-1 errors of the methods (see the module docstring); about 0.3 s per
    instance and eps at n = 10^5."""
    seed, instances = s.check_run_args(seed, instances)
    eps = s.eps_grid(eps_grid, default=np.array(EPS))
    n = v.integer(n, "n", minimum=100)
    out_dir = Path(out_dir)
    rows = []
    with progress.bar(instances, "square-wave-ems", unit="instance"):
        for i in range(instances):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
            x = rng.beta(5.0, 2.0, size=n)
            for e in eps:
                for method, w1 in _errors(x, float(e), rng).items():
                    rows.append({"instance": i, "eps": float(e), "method": method, "wasserstein1": w1})
            progress.advance()
    data = pd.DataFrame(rows)
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    mean = data.groupby(["eps", "method"], sort=False)["wasserstein1"].mean().unstack("method")
    over = f"mean over {instances} instance{'s' if instances > 1 else ''}, n = {n:,}"
    summary = []
    for e in eps:
        m = mean.loc[float(e)]
        for method in m.index:
            summary.append(s.row(f"Wasserstein-1: {method}", D, float(e), m[method], note=over))
        others = min(m[k] for k in m.index if k != "square wave + EMS")
        summary.append(
            s.row(
                "best other method's error / SW + EMS's (the claim: above 1)",
                D,
                float(e),
                others / m["square wave + EMS"],
                paper=1.0,
                how="above",
                note=over,
            )
        )
    frame = pd.DataFrame(summary, columns=s.SUMMARY_COLUMNS)
    write_summary(frame, out_dir)
    fig = Figure(figsize=(7, 4.5), dpi=DPI)
    ax = fig.add_subplot()
    for method in mean.columns:
        ax.plot(mean.index, mean[method], "o-", label=method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("eps")
    ax.set_ylabel("Wasserstein-1 error (mean)")
    ax.set_title(f"Beta(5, 2) on {D} buckets, n = {n:,}, {instances} instance(s)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / "square-wave-ems.png", dpi=DPI, metadata=PNG_META)
    return frame
