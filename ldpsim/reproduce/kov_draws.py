"""``ldpsim reproduce kov-fig4-draws``: how much the floor of Figure 4 of Kairouz, Oh and
Viswanath 2014 depends on the draw of its 100 random instances.

The paper (Sec. 5, Figure 4) reports that the better of the binary and the randomized-
response mechanisms reaches at least 70% (k = 6) and 55% (k = 12) of the optimal
``D_kl(M0||M1)`` over its 100 random prior pairs and every eps. That floor is the minimum
over one draw of 100 instances: a random number. This reproduction draws it many times.

Draw ``S`` is exactly the instances of ``ldpsim reproduce kov-fig4 --seed S`` at that k
(``prior_pairs(S, instances, k)``: Dirichlet(1) pairs from ``default_rng(S)``), so each
draw's minimum can be rerun on its own. For every instance the mixed strategy's ratio to
the optimum is minimised over the eps grid (25 points from 0.1 to 10, one linear program
each), giving the instance's floor ``m``; a draw's floor is the smallest ``m`` of its
instances. Two estimates of the distribution of the floor of N instances:

* direct: the empirical distribution of the D draw floors (D = number of seeds);
* pooled: the instance floors are independent and identically distributed, so the floor
  of N instances has ``P(floor <= x) = 1 - (1 - F(x))^N`` with F the distribution of one
  instance's floor. From all ``M = D N`` instances, the U-statistic
  ``1 - C(M - c, N) / C(M, N)`` (c = instances with ``m <= x``) is the exact average of
  the indicator over every N-subset of the pool, an unbiased estimate with far less
  spread than D draws give; a Clopper-Pearson interval for ``F(x)`` maps through the
  monotone ``1 - (1 - F)^N`` to an interval for the plug-in estimate.

The paper's number is then placed as a quantile of that distribution.

Default: 16 draws (seeds 2014..2029) of 100 instances at k = 6 only, about 95 s on one
core (1,600 instances x 25 LPs of about 2 ms). k = 12 costs about 1 s per instance (its LP
is over 4,096 staircase patterns), so ``--k 6,12`` adds about 100 s per draw: ask for it
with ``--seeds`` and ``--workers``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _progress as progress
from ldpsim.errors import invalid
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary
from ldpsim.reproduce.kov import FIG4_PAPER

NAME = "kov-fig4-draws"
#: Draws of the default run (seeds seed .. seed + 15).
DEFAULT_DRAWS = 16
#: Alphabet sizes of the default run: k = 12 costs about 20 times as much per instance.
DEFAULT_K = (6,)
#: Confidence level of the Clopper-Pearson intervals.
LEVEL = 0.95
#: The paper's value "agrees" when it lies in the central 95% of the floor's distribution.
CENTRAL = 0.95
#: The pooled distribution's quantiles tabulated.
QUANTILES = (0.05, 0.5, 0.95)
DPI = 110
PNG_META = {"Software": None}


# --------------------------------------------------------------------------- statistics
def pooled_cdf(floors: ArrayLike, x: float, n: int) -> float:
    """``P(min of n instances <= x)`` estimated from a pool of instance floors: the average
    of ``1{min <= x}`` over every n-subset of the pool, ``1 - C(M - c, n) / C(M, n)`` with
    ``c`` the floors ``<= x`` (exact rational arithmetic; needs ``M >= n``)."""
    floors = np.asarray(floors, dtype=float)
    m = floors.size
    if not 1 <= n <= m:
        raise invalid("n", n, f"an integer in [1, {m}] (the pool's size)")
    c = int(np.sum(floors <= x))
    return float(1 - Fraction(math.comb(m - c, n), math.comb(m, n)))


def pooled_curve(floors: ArrayLike, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The pooled distribution function of the floor of n instances at each pool floor,
    sorted: ``(x, P(min of n <= x))``."""
    x = np.sort(np.asarray(floors, dtype=float))
    m = x.size
    total = math.comb(m, n)
    p = np.array([float(1 - Fraction(math.comb(m - c, n), total)) for c in range(1, m + 1)])
    return x, p


def pooled_quantile(floors: ArrayLike, n: int, level: float) -> float:
    """The smallest pool floor x with ``P(min of n <= x) >= level`` (pooled estimate)."""
    x, p = pooled_curve(floors, n)
    return float(x[int(np.searchsorted(p, level - 1e-15))])


def clopper_pearson(count: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval for a binomial probability."""
    a = (1 - level) / 2
    lo = 0.0 if count == 0 else float(stats.beta.ppf(a, count, trials - count + 1))
    hi = 1.0 if count == trials else float(stats.beta.ppf(1 - a, count + 1, trials - count))
    return lo, hi


def plug_in_interval(count: int, pool: int, n: int, level: float = LEVEL) -> tuple[float, float, float]:
    """``1 - (1 - F)^n`` at ``F = count / pool`` and at the ends of F's Clopper-Pearson
    interval: the plug-in estimate of ``P(min of n <= x)`` with a ``level`` interval."""
    lo, hi = clopper_pearson(count, pool, level)
    f = lambda p: 1.0 - (1.0 - p) ** n
    return f(count / pool), f(lo), f(hi)


# --------------------------------------------------------------------------- solving
def _floors(study: s.Study, draws: int) -> dict[str, NDArray]:
    """Per instance: the mixed strategy's smallest ratio to the optimum over eps, where, and
    which of binary and RR the strategy uses there; shaped (draws, instances)."""
    ratio = study.ratio(s.MIXED)  # (D N, m)
    j = np.argmin(ratio, axis=1)
    i = np.arange(ratio.shape[0])
    uses_binary = study.values["binary"][i, j] >= study.values["randomized_response"][i, j]
    shape = (draws, ratio.shape[0] // draws)
    return {
        "floor": ratio[i, j].reshape(shape),
        "eps": study.eps[j].reshape(shape),
        "uses": np.where(uses_binary, "binary", "randomized_response").reshape(shape),
        "optimal": study.values["optimal"][i, j].reshape(shape),
    }


def _solve(
    seeds: Sequence[int], instances: int, ks: Sequence[int], eps: NDArray[np.float64], workers: int
) -> list[s.Study]:
    """One study per k: the draws' instances one after the other (draw d = instances
    ``d N .. (d+1) N - 1``), under one progress bar weighted by the cost per instance."""
    studies = []
    with progress.bar(len(seeds) * instances * sum(s.lp_cost(k) for k in ks), NAME, counts=False):
        for k in ks:
            progress.note(f"k = {k}")
            pairs = np.concatenate([s.prior_pairs(sd, instances, k) for sd in seeds])
            studies.append(s.solve("kl", pairs, eps, workers, tick=s.lp_cost(k)))
    return studies


# --------------------------------------------------------------------------- the reproduction
@register(
    NAME,
    "KL, Fig. 4's floor across draws: the mixed strategy's min "
    "ratio per draw of 100 instances, the paper's 0.70 as a quantile",
    "Kairouz et al. 2014, Sec. 5, Figure 4 (the 70% at k = 6 and 55% at k = 12), over many draws of its instances",
    options=("k", "seeds"),
)
def kov_fig4_draws(
    seed: int,
    instances: int,
    out_dir: Path,
    *,
    eps_grid: Any = None,
    workers: int = 1,
    k: Sequence[int] | None = None,
    seeds: Sequence[int] | None = None,
) -> pd.DataFrame:
    """For each k (default 6) and each seed S (default ``seed .. seed + 15``), the instances
    of ``kov-fig4 --seed S`` at that k; every instance's floor (min over eps of
    ``max(BIN, RR) / OPT``), every draw's floor, and where the paper's floor falls in their
    distribution (module docstring)."""
    seed, instances = s.check_run_args(seed, instances)
    seeds = tuple(range(seed, seed + DEFAULT_DRAWS)) if seeds is None else tuple(int(x) for x in seeds)
    ks = DEFAULT_K if k is None else tuple(int(x) for x in k)
    eps = s.eps_grid(eps_grid)
    draws = len(seeds)
    studies = _solve(seeds, instances, ks, eps, workers)

    inst_rows, draw_rows, rows, curves = [], [], [], []
    for st in studies:
        f = _floors(st, draws)
        for d, sd in enumerate(seeds):
            at = int(np.argmin(f["floor"][d]))
            draw_rows.append(
                {
                    "k": st.k,
                    "seed": sd,
                    "instances": instances,
                    "floor": f["floor"][d, at],
                    "instance": at,
                    "eps": f["eps"][d, at],
                    "uses": f["uses"][d, at],
                }
            )
            inst_rows.append(
                pd.DataFrame(
                    {
                        "k": st.k,
                        "seed": sd,
                        "instance": np.arange(instances),
                        "floor": f["floor"][d],
                        "eps": f["eps"][d],
                        "uses": f["uses"][d],
                        "optimal": f["optimal"][d],
                    }
                )
            )
        pool = f["floor"].ravel()
        per_draw = f["floor"].min(axis=1)
        curves.append((st.k, pool, per_draw))
        rows += _rows(st.k, pool, per_draw, instances, seeds)
        rows += [s.row(f"CHECK FAILED: {msg}", st.k, "all", 1.0) for msg in st.anomalies()]
    pd.concat(inst_rows, ignore_index=True).to_csv(out_dir / "instances.csv", index=False, float_format="%.12g")
    pd.DataFrame(draw_rows).to_csv(out_dir / "draws.csv", index=False, float_format="%.12g")
    summary = s.summary_frame(rows)
    write_summary(summary, out_dir)
    _figure(curves, instances, seeds, out_dir / f"{NAME}.png")
    return summary


def _rows(k: int, pool: NDArray, per_draw: NDArray, n: int, seeds: Sequence[int]) -> list[dict]:
    d, m = per_draw.size, pool.size
    span = f"seeds {seeds[0]}..{seeds[-1]}" if d > 1 else f"seed {seeds[0]}"
    where = f"{d} draws of {n} instances ({span})"
    rows = []
    paper = FIG4_PAPER.get(k)
    if paper is not None:
        at = pooled_cdf(pool, paper, n)
        _, lo_i, hi_i = plug_in_interval(int(np.sum(pool <= paper)), m, n)
        lo_c, hi_c = (1 - CENTRAL) / 2, 1 - (1 - CENTRAL) / 2
        verdict = "yes" if hi_i >= lo_c and lo_i <= hi_c else "no"
        median = s.row(
            f"mixed: min ratio over {n} instances, median over draws", k, "all", float(np.median(per_draw)), note=where
        )
        median.update(
            paper=paper,
            agrees=verdict,
            criterion=f"the paper's value may lie in the central {CENTRAL:.0%} of the distribution of the min "
            f"over {n} instances: the {LEVEL:.0%} interval of P(min <= paper) meets [{lo_c:g}, {hi_c:g}] "
            f"(here {at:.3g}, [{lo_i:.3g}, {hi_i:.3g}]); {where}",
        )
        rows.append(median)
    rows.append(s.row(f"mixed: min ratio over {n} instances, smallest draw", k, "all", per_draw.min(), note=where))
    rows.append(s.row(f"mixed: min ratio over {n} instances, largest draw", k, "all", per_draw.max(), note=where))
    for q in QUANTILES:
        rows.append(
            s.row(
                f"pooled {q:.0%} quantile of the min over {n} instances",
                k,
                "all",
                pooled_quantile(pool, n, q),
                note=f"from all {m} instances",
            )
        )
    if paper is not None:
        below = int(np.sum(per_draw <= paper))
        lo, hi = clopper_pearson(below, d)
        rows.append(
            s.row(
                f"paper's {paper:.2f} as a quantile: fraction of draws with min <= {paper:.2f}",
                k,
                "all",
                below / d,
                note=f"{below} of {d} draws; Clopper-Pearson {LEVEL:.0%} [{lo:.3g}, {hi:.3g}]",
            )
        )
        c = int(np.sum(pool <= paper))
        est, plo, phi = plug_in_interval(c, m, n)
        rows.append(
            s.row(
                f"paper's {paper:.2f} as a quantile: pooled P(min over {n} <= {paper:.2f})",
                k,
                "all",
                pooled_cdf(pool, paper, n),
                note=f"U-statistic over all {m} instances; plug-in 1-(1-F)^{n} = {est:.3g}, "
                f"{LEVEL:.0%} [{plo:.3g}, {phi:.3g}]",
            )
        )
        rows.append(s.row(f"instances with min ratio <= {paper:.2f}", k, "all", c, note=f"of {m}"))
        meets = int(np.sum(per_draw >= paper - 0.03))
        rows.append(
            s.row(f"draws meeting kov-fig4's criterion (min >= {paper:.2f} - 0.03)", k, "all", meets, note=f"of {d}")
        )
    return rows


def _figure(curves: list[tuple[int, NDArray, NDArray]], n: int, seeds: Sequence[int], path: Path) -> None:
    fig = Figure(figsize=(max(8.5, 6.2 * len(curves)), 4.8), dpi=DPI)
    axes = np.atleast_1d(fig.subplots(1, len(curves)))
    for ax, (k, pool, per_draw) in zip(axes, curves):
        x, p = pooled_curve(pool, n)
        ax.step(x, p, where="post", color=s.COLORS["mixed"], lw=1.6, label=f"pooled: all {pool.size} instances")
        dx = np.sort(per_draw)
        ax.step(
            np.r_[dx[0], dx],
            np.r_[0, np.arange(1, dx.size + 1) / dx.size],
            where="post",
            color="black",
            lw=1.1,
            label=f"direct: {dx.size} draws",
        )
        ax.plot(dx, np.zeros_like(dx) - 0.02, "|", color="black", ms=10)
        lo = min(float(dx.min()), float(x[np.searchsorted(p, 0.005)]))
        paper = FIG4_PAPER.get(k)
        if paper is not None:
            at = pooled_cdf(pool, paper, n)
            ax.axvline(paper, color="tab:red", ls="--", lw=1, label=f"paper: {paper:.2f} (pooled quantile {at:.2f})")
            ax.axhline(at, color="tab:red", ls=":", lw=0.8)
            lo = min(lo, paper)
        ax.set_xlim(lo - 0.03, float(dx.max()) + 0.05)
        ax.set_ylim(-0.05, 1.02)
        ax.set_xlabel(f"min over {n} instances and eps of max(BIN, RR) / OPT")
        ax.set_ylabel("fraction of draws at or below")
        ax.set_title(f"k = {k}")
        ax.grid(True, alpha=0.25)
        ax.legend(loc="upper left", fontsize=8)
    span = f"seeds {seeds[0]}..{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
    fig.suptitle(f"Kairouz et al. 2014, Fig. 4: the floor of {n} instances across draws (KL, {span})", fontsize=11)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI, metadata=PNG_META)
