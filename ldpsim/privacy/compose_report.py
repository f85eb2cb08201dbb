"""``ldpsim compose``: the exact k-fold composition next to the closed-form bounds, as
tables (delta at a grid of eps_total, or eps_total at target deltas) and a region figure."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import _validate as V
from .._meta import write_json
from ..errors import LdpSimError
from . import composition as C
from .guarantees import DeltaCurve, Guarantee, OptimalComposition
from .plot import plot_regions

LABELS = {
    "exact": "exact (Thm 3.3)",
    "basic": "basic (k eps, k delta)",
    "drv": "Dwork-Rothblum-Vadhan",
    "kov": "Thm 3.4",
    "kov_small_eps": "Thm 3.4, eps <= 0.9 form",
}


def methods(eps: float) -> list[str]:
    """The exact result and every bound that applies at this eps."""
    out = ["exact", "basic", "drv", "kov"]
    if eps <= C.SMALL_EPS_LIMIT:
        out.append("kov_small_eps")
    return out


def default_eps_grid(eps: float, delta: float, compositions: int, points: int = 12) -> np.ndarray:
    """Evenly spaced eps_total up to the mean privacy loss plus 8 of its standard
    deviations, ``k eps tanh(eps/2) + 8 sqrt(k) eps`` (or k eps, if sooner), where the exact
    delta is within about 1e-15 of its floor ``1 - (1 - delta)^k``; from 0, or from the mean
    minus 4 standard deviations when that is positive (large k): where the methods differ.
    Here k = ``compositions``."""
    k = compositions
    if eps == 0:
        return np.linspace(0.0, 1.0, points + 1)[1:]
    mean, sd = k * eps * float(np.tanh(eps / 2)), np.sqrt(k) * eps
    top = mean + 8.0 * sd
    step = 10.0 ** (np.floor(np.log10(top)) - 1)  # round to two significant digits
    top = min(k * eps, float(np.ceil(top / step) * step))
    bottom = float(np.floor(max(0.0, mean - 4.0 * sd) / step) * step)
    if bottom <= 0:
        return np.linspace(0.0, top, points + 1)[1:]
    return np.linspace(bottom, top, points)


def delta_table(eps: float, delta: float, compositions: int, eps_totals: Sequence[float]) -> pd.DataFrame:
    """delta_total at each eps_total: the exact value and each bound's."""
    grid = np.asarray(eps_totals, dtype=np.float64)
    table = {"eps_total": grid}
    for m in methods(eps):
        table[m] = (
            C.optimal_delta(eps, delta, compositions, grid) if m == "exact" else C.bound_delta(m, eps, delta, compositions, grid)
        )
    return pd.DataFrame(table)


def epsilon_table(eps: float, delta: float, compositions: int, delta_totals: Sequence[float]) -> pd.DataFrame:
    """eps_total at each target delta_total (inf where a bound certifies nothing)."""
    targets = np.asarray(delta_totals, dtype=np.float64)
    table = {"delta_total": targets}
    for m in methods(eps):
        table[m] = (
            C.optimal_epsilon(eps, delta, compositions, targets)
            if m == "exact"
            else C.bound_epsilon(m, eps, delta, compositions, targets)
        )
    return pd.DataFrame(table)


def guarantees(eps: float, delta: float, compositions: int) -> list[Guarantee]:
    """The exact composition and each bound as guarantees (bounds through their delta curve)."""
    out: list[Guarantee] = [OptimalComposition(eps, delta, compositions, label=LABELS["exact"])]
    for m in methods(eps)[1:]:
        fn = functools.partial(C.bound_delta, m, eps, delta, compositions)
        out.append(DeltaCurve(fn, label=LABELS[m], eps_max=1.05 * compositions * eps))
    return out


def region_figure(eps: float, delta: float, compositions: int, path: Path) -> Path:
    """Left: the privacy regions (trade-off view). Right: delta_total against eps_total."""
    k = compositions
    gs = guarantees(eps, delta, k)
    fig = Figure(figsize=(10.5, 5.0))
    left, right = fig.subplots(1, 2)
    plot_regions(gs, left, title=f"{k}-fold composition of ({eps:g}, {delta:g})-DP")
    grid = np.linspace(0.0, 1.05 * k * eps, 400)
    for i, g in enumerate(gs):
        right.semilogy(grid, np.maximum(np.asarray(g.delta(grid)), 1e-300), color=f"C{i}", lw=1.6, label=g.label)
    right.set_xlabel(r"$\varepsilon_{total}$")
    right.set_ylabel(r"smallest $\delta_{total}$")
    right.set_ylim(max(1e-12, 0.5 * float(gs[0].delta(k * eps)) if delta > 0 else 1e-12), 1.5)
    right.set_title("delta at each eps (lower is better)")
    right.grid(True, which="major", lw=0.4, alpha=0.5)
    right.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def run(
    eps: float,
    delta: float,
    compositions: int,
    *,
    eps_totals: Sequence[float] | None = None,
    delta_totals: Sequence[float] | None = None,
    out: str | Path | None = None,
    figure: bool = True,
) -> tuple[pd.DataFrame, list[Path], list[str]]:
    """Compute the table (delta at eps_totals, or eps at delta_totals) and write CSV + PNG;
    returns (table, files, notes)."""
    eps, delta, k = V.epsilon(eps), V.delta(delta), V.integer(compositions, "compositions", minimum=1)
    if delta_totals is not None:
        table = epsilon_table(eps, delta, k, delta_totals)
    else:
        grid = default_eps_grid(eps, delta, k) if eps_totals is None else eps_totals
        table = delta_table(eps, delta, k, grid)
    # the directory name and the metadata key keep the spelling "k" (outputs are unchanged)
    out_dir = Path(out) if out is not None else Path("reports") / "compose" / f"eps{eps:g}-delta{delta:g}-k{k}"
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [out_dir / "table.csv"]
    table.to_csv(files[0], index=False, float_format="%.12g")
    notes: list[str] = []
    if figure:
        try:
            files.append(region_figure(eps, delta, k, out_dir / "region.png"))
        except LdpSimError as exc:  # the exact trade-off polygon is too large to draw
            notes.append(f"region.png skipped ({exc})")
    write_json(out_dir / "metadata.json", {"eps": eps, "delta": delta, "k": k, "methods": methods(eps)})
    files.append(out_dir / "metadata.json")
    return table, files, notes
