"""Li, Li, Sun, Gong and Li (2023): the output poisoning attack (OPA) on LDP mean and
variance estimation, beside the baseline input poisoning attack (IPA).

Synthetic data (stated, no dataset shipped): answers Beta(2, 5) stretched over [-1, 1] (mean
-3/7, variance 5/49), a population of 200,000 drawn once from the seed, n = 100,000 honest
respondents drawn from it per instance; the two-group protocol (half report x, half 2 x^2 -
1); fake share beta = 0.15 in each group; targets mean -0.3 and variance 0.15; the piecewise
mechanism and Duchi's at each eps of the grid (default 0.5, 1, 2, 4). The attacker knows the
honest mean and second moment. Rows:

- the least fake share with which each attack reaches both targets: the paper's condition
  (the fake value ``(t - (1 - beta) mu) / beta`` lies in the range the attack may use) with
  the report bound C the mechanisms' papers publish (piecewise ``(e^(eps/2) + 1) / (e^(eps/2)
  - 1)``, Duchi ``(e^eps + 1) / (e^eps - 1)``; IPA: the answers' range [-1, 1]), beside ours
  from :func:`ldpsim.attacks.fake_share_needed` (the mechanism's own report range);
- OPA's poisoned mean and variance where beta suffices: the paper's claim that they land on
  the targets, beside ours exact (:func:`ldpsim.attacks.expected_moments`: the variance
  falls short by ``Var(mu_hat')``, which the paper's attacker ignores) and measured;
- OPA's root-mean-square distance of the mean from its target, exact and measured, and
  whether it falls as eps grows: the paper's "security-privacy consistency" (with a small
  eps, the honest reports' noise, which the attacker does not control, blurs the result);
- IPA's poisoned mean and variance, exact and measured: at this share it reaches the mean
  but not the variance, whose fake answers would need squares beyond the answers' range.
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
from ldpsim.analyst.means import moment_reports
from ldpsim.attacks import STRATEGIES, expected_moments, fake_share_needed
from ldpsim.attacks.strategies import MomentsStrategy, moment_statistic
from ldpsim.mechanisms import catalog
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

POPULATION, N, BETA = 200_000, 100_000, 0.15
TARGET = (-0.3, 0.15)
EPS = np.array([0.5, 1.0, 2.0, 4.0])
MECHANISMS = ("piecewise", "duchi")
ATTACKS = {"output_mean_variance": "OPA", "input_mean_variance": "IPA"}
FALSE_AGREEMENT = 1e-6
DPI = 110
PNG_META = {"Software": None}


def published_bound(mechanism: str, eps: float) -> float:
    """The report bound C on [-1, 1] as the mechanisms' papers publish it."""
    e = math.exp(eps / 2 if mechanism == "piecewise" else eps)
    return (e + 1) / (e - 1)


def paper_share(bound: float, mean: float, m2: float, target: tuple[float, float]) -> float:
    """The paper's condition on the fake share: both fake values within [-bound, bound]
    (second group on the scale 2 x^2 - 1)."""

    def need(t: float, h: float) -> float:
        return (t - h) / (bound - h) if t > h else (h - t) / (h + bound) if t < h else 0.0

    return max(need(target[0], mean), need(2 * (target[1] + target[0] ** 2) - 1, 2 * m2 - 1))


def _t_row(label: str, eps: float, values: np.ndarray, paper: float, note: str) -> dict:
    mean = float(values.mean())
    se = float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else math.nan
    z = float(t_dist.isf(FALSE_AGREEMENT / 2, values.size - 1)) if values.size > 1 else 0.0
    row = s.row(label, "-", eps, mean, paper=paper, how="relative")
    ok = abs(mean - paper) <= z * (se if values.size > 1 else 0.0) + 2e-3
    row.update(
        agrees="yes" if ok else "no",
        criterion=f"|ours - paper| <= {z:.3g} se + 0.002 (t test at 1e-6); se {se:.2g}; {note}",
    )
    return row


@register(
    "li-mean-variance",
    "Li et al. 2023: OPA and IPA on LDP mean and variance, the fake share each needs, the targets reached",
    "Li, Li, Sun, Gong and Li 2023 (USENIX Security), OPA and IPA",
)
def li_mean_variance(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """About 0.1 s per instance and eps."""
    seed, instances = s.check_run_args(seed, instances)
    grid = s.eps_grid(eps_grid, default=EPS)
    out_dir = Path(out_dir)
    pop = -1.0 + 2.0 * np.random.default_rng(seed).beta(2.0, 5.0, POPULATION)
    honest = (float(pop.mean()), float(np.mean(pop * pop)))
    m = int(round(BETA * N / (1 - BETA)))
    share = m / (N + m)
    mechs = {(name, float(e)): catalog.build(name, eps=float(e), lo=-1.0, hi=1.0) for name in MECHANISMS for e in grid}
    rows = []
    with progress.bar(instances, "li-mean-variance", unit="instance"):
        for i in range(instances):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i,)))
            for (name, e), mech in mechs.items():
                x = pop[rng.integers(0, POPULATION, N)]
                second, y = moment_reports(mech, x, rng)
                stat = moment_statistic(np.column_stack([second, y]))
                for attack in ATTACKS:
                    st = STRATEGIES[attack]
                    fake = st.reports(mech, np.array(TARGET), m, rng, prior=np.array(honest), share=share)
                    mean, var = MomentsStrategy.estimates(mech, stat + moment_statistic(fake))
                    rows.append(dict(instance=i, mechanism=name, eps=e, attack=attack, mean=mean, variance=var))
            progress.advance()
    data = pd.DataFrame(rows)
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    summary = []
    note = f"Beta(2, 5) on [-1, 1], n = {N}, beta = {BETA}, target {TARGET}"
    rms: dict[str, list[float]] = {name: [] for name in MECHANISMS}
    for (name, e), mech in mechs.items():
        n1 = int(round((N + m) / 2))
        for attack, short in ATTACKS.items():
            bound = published_bound(name, e) if attack == "output_mean_variance" else 1.0
            need = fake_share_needed(mech, attack, TARGET, honest)
            label = f"{short} on {name}"
            summary.append(
                s.row(
                    f"least fake share for {label} to reach both targets",
                    "-",
                    e,
                    need,
                    paper=paper_share(bound, *honest, TARGET),
                    how="relative",
                    note=note,
                )
            )
            here = data[(data.mechanism == name) & (data.eps == e) & (data.attack == attack)]
            exact = expected_moments(mech, attack, TARGET, share, answers=pop, n_mean=n1)
            if attack == "output_mean_variance" and need <= share:
                summary.append(_t_row(f"{label}: poisoned mean, measured", e, here["mean"].to_numpy(), TARGET[0], note))
                summary.append(
                    _t_row(f"{label}: poisoned variance, measured", e, here["variance"].to_numpy(), TARGET[1], note)
                )
                summary.append(
                    s.row(
                        f"{label}: poisoned variance, ours exact",
                        "-",
                        e,
                        exact.variance,
                        paper=TARGET[1],
                        how="relative",
                        note=f"short of the target by Var(mu_hat') = {exact.mean_var:.3g}",
                    )
                )
                err = here["mean"].to_numpy() - TARGET[0]
                rms[name].append(math.sqrt(exact.mean_var))
                summary.append(s.row(f"{label}: RMS error of the mean, ours exact", "-", e, math.sqrt(exact.mean_var)))
                summary.append(
                    s.row(f"{label}: RMS error of the mean, measured", "-", e, float(np.sqrt(np.mean(err**2))))
                )
            elif attack == "input_mean_variance":
                for column, value in (("mean", exact.mean), ("variance", exact.variance)):
                    summary.append(s.row(f"{label}: poisoned {column}, ours exact", "-", e, value, note=note))
                    summary.append(
                        _t_row(
                            f"{label}: poisoned {column}, measured",
                            e,
                            here[column].to_numpy(),
                            value,
                            "paper = ours exact (the paper gives no number)",
                        )
                    )
    for name, errors in rms.items():
        falls = float(len(errors) > 1 and all(b < a for a, b in zip(errors, errors[1:])))
        summary.append(
            s.row(
                f"OPA on {name}: error falls as eps grows (security-privacy consistency)",
                "-",
                "grid",
                falls,
                paper=1.0,
                how="equal",
                note="1 = the exact RMS error decreases along the eps grid where OPA reaches its targets",
            )
        )
    frame = pd.DataFrame(summary, columns=s.SUMMARY_COLUMNS)
    write_summary(frame, out_dir)
    fig = Figure(figsize=(8, 3.8), dpi=DPI)
    for j, (column, target) in enumerate((("mean", TARGET[0]), ("variance", TARGET[1]))):
        ax = fig.add_subplot(1, 2, j + 1)
        means = data.groupby(["mechanism", "attack", "eps"])[column].mean()
        for name in MECHANISMS:
            for attack, short in ATTACKS.items():
                curve = means.loc[(name, attack)]
                ax.plot(curve.index, curve.to_numpy(), marker="o", label=f"{short}, {name}")
        ax.axhline(target, color="black", linestyle="--", linewidth=1, label="target")
        ax.axhline(
            honest[0] if column == "mean" else honest[1] - honest[0] ** 2, color="grey", linewidth=1, label="honest"
        )
        ax.set_xscale("log")
        ax.set_xlabel("eps")
        ax.set_ylabel(f"poisoned {column} (mean of {instances})")
        if j == 0:
            ax.legend(fontsize=7)
    fig.suptitle(f"beta = {BETA}, n = {N}, Beta(2, 5) on [-1, 1]", fontsize=10)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / "li-mean-variance.png", dpi=DPI, metadata=PNG_META)
    return frame
