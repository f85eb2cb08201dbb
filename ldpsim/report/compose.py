"""``ldpsim compose``: the exact k-fold composition next to the closed-form bounds, as
tables (delta at a grid of eps_total, or eps_total at target deltas) and a region figure;
and the same for a list of different mechanisms and (eps, delta) pairs (:func:`run_mixed`,
through :class:`ldpsim.privacy.Accountant`). Mechanisms arrive as guarantees: this module
never imports :mod:`ldpsim.mechanisms` (the command line builds them). The numbers are the
accounting's (:mod:`ldpsim.privacy`, which writes no files); the figure and the output
folder are made here."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, cast

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ldpsim import _validate as V
from ldpsim._files import OutputFolder
from ldpsim._meta import write_json
from ldpsim.errors import LdpSimError, invalid
from ldpsim.privacy import composition as C
from ldpsim.privacy.accountant import Accountant
from ldpsim.privacy.guarantees import DeltaCurve, EpsDelta, Guarantee, OptimalComposition
from ldpsim.report.regions import plot_regions

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


def delta_table(eps: float, delta: float, compositions: int, eps_totals: ArrayLike) -> pd.DataFrame:
    """delta_total at each eps_total: the exact value and each bound's."""
    grid = np.asarray(eps_totals, dtype=np.float64)
    table: dict[str, Any] = {"eps_total": grid}
    for m in methods(eps):
        table[m] = (
            C.optimal_delta(eps, delta, compositions, grid)
            if m == "exact"
            else C.bound_delta(m, eps, delta, compositions, grid)
        )
    return pd.DataFrame(table)


def epsilon_table(eps: float, delta: float, compositions: int, delta_totals: Sequence[float]) -> pd.DataFrame:
    """eps_total at each target delta_total (inf where a bound certifies nothing)."""
    targets = np.asarray(delta_totals, dtype=np.float64)
    table: dict[str, Any] = {"delta_total": targets}
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


def _regions_and_deltas(gs: list[Guarantee], title: str, grid: np.ndarray, floor: float, path: Path) -> Path:
    """Left: the privacy regions (trade-off view). Right: delta_total against eps_total on
    ``grid``, down to half of ``floor`` (1e-12 when there is no floor)."""
    fig = Figure(figsize=(10.5, 5.0))
    left, right = fig.subplots(1, 2)
    plot_regions(gs, left, title=title)
    for i, g in enumerate(gs):
        right.semilogy(grid, np.maximum(np.asarray(g.delta(grid)), 1e-300), color=f"C{i}", lw=1.6, label=g.label)
    right.set_xlabel(r"$\varepsilon_{total}$")
    right.set_ylabel(r"smallest $\delta_{total}$")
    right.set_ylim(max(1e-12, 0.5 * floor) if floor > 0 else 1e-12, 1.5)
    right.set_title("delta at each eps (lower is better)")
    right.grid(True, which="major", lw=0.4, alpha=0.5)
    right.legend(fontsize=8)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def region_figure(eps: float, delta: float, compositions: int, path: Path) -> Path:
    """Left: the privacy regions (trade-off view). Right: delta_total against eps_total."""
    k = compositions
    gs = guarantees(eps, delta, k)
    floor = float(gs[0].delta(k * eps)) if delta > 0 else 0.0
    return _regions_and_deltas(
        gs, f"{k}-fold composition of ({eps:g}, {delta:g})-DP", np.linspace(0.0, 1.05 * k * eps, 400), floor, path
    )


#: Parent of the default output folders (one per command line, then one per run).
DEFAULT_BASE = Path("reports") / "compose"


def output_folder(out: str | Path | None, name: str, force: bool = False) -> OutputFolder:
    """Where a composition's files go: ``out``, or a new folder ``reports/compose/<name>/<UTC
    time>`` (a rerun never replaces an earlier one); checked before any work and written as a
    whole at the end (:class:`ldpsim._files.OutputFolder`)."""
    return OutputFolder.of(out, DEFAULT_BASE / name, force=force)


def run(
    eps: float,
    delta: float,
    compositions: int,
    *,
    eps_totals: Sequence[float] | None = None,
    delta_totals: Sequence[float] | None = None,
    out: str | Path | None = None,
    figure: bool = True,
    force: bool = False,
) -> tuple[pd.DataFrame, list[Path], list[str]]:
    """Compute the table (delta at eps_totals, or eps at delta_totals) and write table.csv,
    region.png and metadata.json to ``out`` (default: a new folder under
    ``reports/compose/eps<eps>-delta<delta>-k<K>/``); returns (table, files, notes).

    The folder is checked before any work: a non-empty ``out`` is refused unless ``force``
    (which replaces the files of the same name). The files appear all at once at the end;
    an error or Ctrl-C leaves nothing."""
    eps, delta, k = V.epsilon(eps), V.delta(delta), V.integer(compositions, "compositions", minimum=1)
    # the directory name and the metadata key keep the spelling "k" (outputs are unchanged)
    notes: list[str] = []
    with output_folder(out, f"eps{eps:g}-delta{delta:g}-k{k}", force) as folder:
        assert folder.work is not None
        if delta_totals is not None:
            table = epsilon_table(eps, delta, k, delta_totals)
        else:
            grid = default_eps_grid(eps, delta, k) if eps_totals is None else eps_totals
            table = delta_table(eps, delta, k, grid)
        files = [folder.work / "table.csv"]
        table.to_csv(files[0], index=False, float_format="%.12g")
        if figure:
            try:
                files.append(region_figure(eps, delta, k, folder.work / "region.png"))
            except LdpSimError as exc:  # the exact trade-off polygon is too large to draw
                notes.append(f"region.png skipped ({exc})")
        write_json(folder.work / "metadata.json", {"eps": eps, "delta": delta, "k": k, "methods": methods(eps)})
        files.append(folder.work / "metadata.json")
    return table, [folder.final(f) for f in files], notes


# --------------------------------------------------------------------------- heterogeneous lists
MIXED_LABELS = {
    "exact": "exact (accountant)",
    "basic": "basic (sum eps, sum delta)",
    "kov_heterogeneous": "Thm 3.5",
}


@dataclass(frozen=True)
class Item:
    """One entry of a heterogeneous composition: a guarantee used ``count`` times, its label,
    and the (eps, delta) it is known to satisfy for the basic and Theorem 3.5 bounds (None
    when it has no finite pure eps, e.g. Gaussian noise)."""

    guarantee: Guarantee
    count: int
    label: str
    eps: float | None
    delta: float | None


def _eps_delta_lists(items: Sequence[Item]) -> tuple[np.ndarray, np.ndarray] | None:
    if any(it.eps is None or it.delta is None or not np.isfinite(it.eps) for it in items):
        return None
    # both set for every item (checked above)
    eps = np.concatenate([np.full(it.count, float(cast(float, it.eps))) for it in items])
    delta = np.concatenate([np.full(it.count, float(cast(float, it.delta))) for it in items])
    return eps, delta


def basic_delta(eps_list: np.ndarray, delta_list: np.ndarray, eps_total: np.ndarray) -> np.ndarray:
    """Basic composition: ``sum delta`` (capped at 1) from ``eps_total >= sum eps`` on, else 1."""
    s_eps, s_delta = float(np.sum(eps_list)), min(1.0, float(np.sum(delta_list)))
    return np.where(np.asarray(eps_total, dtype=np.float64) >= s_eps, s_delta, 1.0)


def basic_epsilon(eps_list: np.ndarray, delta_list: np.ndarray, delta_total: np.ndarray) -> np.ndarray:
    """Basic composition: ``sum eps`` where ``delta_total >= sum delta``, else inf."""
    s_eps, s_delta = float(np.sum(eps_list)), min(1.0, float(np.sum(delta_list)))
    return np.where(np.asarray(delta_total, dtype=np.float64) >= s_delta, s_eps, np.inf)


def _kov_terms(eps_list: np.ndarray, delta_list: np.ndarray) -> tuple[float, float, float, float]:
    """``sum eps``, ``sum eps tanh(eps/2)``, ``sum eps^2`` and ``log prod (1 - delta)``."""
    e = np.asarray(eps_list, dtype=np.float64)
    d = np.asarray(delta_list, dtype=np.float64)
    log_keep = float(np.sum(np.log1p(-d))) if np.all(d < 1) else -np.inf
    return float(e.sum()), float(np.sum(e * np.tanh(e / 2))), float(np.sum(e * e)), log_keep


def kov_heterogeneous_delta(eps_list: np.ndarray, delta_list: np.ndarray, eps_total: ArrayLike) -> np.ndarray:
    """Smallest total delta that Theorem 3.5 of Kairouz et al. 2015 certifies at each
    ``eps_total`` (1 where none): the smallest slack ``delta_slack`` bringing either branch of
    :func:`ldpsim.privacy.kov_bound_heterogeneous` down to eps_total, in closed form,
    ``delta_total = 1 - (1 - delta_slack) prod (1 - delta_l)``."""
    s, c, s2, log_keep = _kov_terms(eps_list, delta_list)
    arr = np.atleast_1d(np.asarray(eps_total, dtype=np.float64))
    out = np.ones(arr.shape)
    for j, e_t in enumerate(arr.ravel()):
        if e_t >= s:
            out.flat[j] = max(0.0, float(-np.expm1(log_keep)))  # not -0.0
            continue
        gap = e_t - c
        if gap <= 0 or s2 <= 0:
            continue
        u = gap * gap / (2 * s2)
        log_ds = -u  # from c + sqrt(2 s2 log(1/ds)) <= e_t
        if u > 1:  # from c + sqrt(2 s2 log(e + sqrt(s2)/ds)) <= e_t: ds >= sqrt(s2)/(e^u - e)
            log_ds = min(log_ds, 0.5 * np.log(s2) - u - float(np.log(-np.expm1(1 - u))))
        if log_ds <= 0:
            out.flat[j] = float(-np.expm1(log_keep + np.log1p(-np.exp(log_ds)))) if log_ds < 0 else 1.0
    return out.reshape(np.shape(eps_total)) if np.ndim(eps_total) else out


def kov_heterogeneous_epsilon(eps_list: np.ndarray, delta_list: np.ndarray, delta_total: ArrayLike) -> np.ndarray:
    """Smallest eps_total that Theorem 3.5 certifies with total ``delta_total`` (inf if none)."""
    s, _, _, log_keep = _kov_terms(eps_list, delta_list)
    arr = np.atleast_1d(np.asarray(delta_total, dtype=np.float64))
    out = np.full(arr.shape, np.inf)
    floor = float(-np.expm1(log_keep))
    for j, t in enumerate(arr.ravel()):
        if t < floor:
            continue
        ds = float(-np.expm1(np.log1p(-t) - log_keep)) if t < 1 else 1.0  # 1 - (1 - t) / prod(1 - delta)
        out.flat[j] = s if ds <= 0 else C.kov_bound_heterogeneous(eps_list, delta_list, min(ds, 1.0))[0]
    return out.reshape(np.shape(delta_total)) if np.ndim(delta_total) else out


def mixed_eps_grid(pld: Any, points: int = 12) -> np.ndarray:
    """Evenly spaced eps_total up to the mean privacy loss of the composition plus 8 of its
    standard deviations (or its largest finite loss, if sooner); from 0, or from the mean
    minus 4 standard deviations when that is positive."""
    if pld.loss.size == 0:
        return np.linspace(0.0, 1.0, points + 1)[1:]
    w = np.exp(pld.log_p - pld.log_p.max())
    mean = float((w * pld.loss).sum() / w.sum())
    sd = float(np.sqrt(max(0.0, float((w * (pld.loss - mean) ** 2).sum() / w.sum()))))
    top = min(float(pld.loss.max()), mean + 8.0 * sd)
    if top <= 0:
        return np.linspace(0.0, 1.0, points + 1)[1:]
    step = 10.0 ** (np.floor(np.log10(top)) - 1)
    top = float(np.ceil(top / step) * step)
    bottom = float(np.floor(max(0.0, mean - 4.0 * sd) / step) * step)
    if bottom <= 0:
        return np.linspace(0.0, top, points + 1)[1:]
    return np.linspace(bottom, top, points)


def mixed_methods(items: Sequence[Item]) -> list[str]:
    """The accountant, and the bounds that apply (every item needs a finite eps)."""
    return ["exact"] + (["basic", "kov_heterogeneous"] if _eps_delta_lists(items) is not None else [])


def _mixed_label(acc: Accountant, error: float) -> str:
    if acc.exact:
        return MIXED_LABELS["exact"]
    return f"pessimistic (rel. error <= {error:.1g})"


def mixed_dirname(items: Sequence[Item]) -> str:
    """``mixed-<n>-<hash>``: the number of mechanisms and a hash of the list."""
    text = ";".join(f"{it.label}x{it.count}" for it in items)
    return f"mixed-{sum(it.count for it in items)}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def mixed_figure(items: Sequence[Item], acc: Accountant, label: str, path: Path) -> Path:
    """Left: the privacy regions (trade-off view). Right: delta_total against eps_total."""
    lists = _eps_delta_lists(items)
    gs: list[Guarantee] = [acc.guarantee(label=label)]
    pld = acc.pld()
    top = float(mixed_eps_grid(pld)[-1])
    if lists is not None:
        e, d = lists
        gs.append(EpsDelta(float(e.sum()), min(1.0, float(d.sum())), label=MIXED_LABELS["basic"]))
        fn = functools.partial(kov_heterogeneous_delta, e, d)
        gs.append(DeltaCurve(fn, label=MIXED_LABELS["kov_heterogeneous"], eps_max=1.05 * float(e.sum())))
        top = max(top, float(e.sum()))
    n = sum(it.count for it in items)
    floor = float(gs[0].delta(1.05 * top))
    return _regions_and_deltas(gs, f"composition of {n} mechanisms", np.linspace(0.0, 1.05 * top, 200), floor, path)


def run_mixed(
    items: Sequence[Item],
    *,
    eps_totals: Sequence[float] | None = None,
    delta_totals: Sequence[float] | None = None,
    out: str | Path | None = None,
    figure: bool = True,
    force: bool = False,
) -> tuple[pd.DataFrame, list[Path], list[str], str]:
    """The composition of different mechanisms: the accountant's value (exact, or
    pessimistic with its estimated error) next to basic composition and Theorem 3.5 when
    every item has a finite eps; writes CSV + PNG + metadata to ``out`` (default: a new
    folder under ``reports/compose/mixed-<n>-<hash>/``), as :func:`run` does. Returns
    (table, files, notes, the accountant column's label)."""
    if not items:
        raise invalid("items", "nothing", "at least one mechanism or (eps, delta) pair")
    with output_folder(out, mixed_dirname(items), force) as folder:
        assert folder.work is not None
        table, files, notes, label = _run_mixed(items, eps_totals, delta_totals, folder.work, figure)
    return table, [folder.final(f) for f in files], notes, label


def _run_mixed(
    items: Sequence[Item],
    eps_totals: Sequence[float] | None,
    delta_totals: Sequence[float] | None,
    out_dir: Path,
    figure: bool,
) -> tuple[pd.DataFrame, list[Path], list[str], str]:
    acc = Accountant()
    for it in items:
        acc.add(it.guarantee, times=it.count)
    lists = _eps_delta_lists(items)
    methods_ = mixed_methods(items)
    if delta_totals is not None:
        targets = np.asarray(delta_totals, dtype=np.float64)
        for t in targets.ravel():
            V.delta(float(t), "delta_total")
        table = {"delta_total": targets, "exact": np.array([acc.epsilon(float(t)) for t in targets])}
        error = max(
            (
                acc.epsilon_error(float(t)) / max(acc.epsilon(float(t)), 1e-300)
                for t in targets
                if np.isfinite(acc.epsilon(float(t)))
            ),
            default=0.0,
        )
        if lists is not None:
            table["basic"] = basic_epsilon(*lists, targets)
            table["kov_heterogeneous"] = kov_heterogeneous_epsilon(*lists, targets)
    else:
        grid = mixed_eps_grid(acc.pld()) if eps_totals is None else np.asarray(eps_totals, dtype=np.float64)
        for e in np.asarray(grid).ravel():
            V.epsilon(float(e), "eps_total")
        exact = np.asarray(acc.delta(grid), dtype=np.float64)
        table = {"eps_total": np.asarray(grid, dtype=np.float64), "exact": exact}
        err = np.asarray(acc.delta_error(grid), dtype=np.float64)
        # relative to a positive delta only: where the pessimistic delta is 0 it is exact (an
        # upper bound of 0), however far the coarser lattice's value lies above it
        error = float(np.max(err[exact > 0] / exact[exact > 0], initial=0.0)) if not acc.exact else 0.0
        if lists is not None:
            table["basic"] = basic_delta(*lists, grid)
            table["kov_heterogeneous"] = kov_heterogeneous_delta(*lists, grid)
    label = _mixed_label(acc, error)
    frame = pd.DataFrame(table)
    files = [out_dir / "table.csv"]
    frame.to_csv(files[0], index=False, float_format="%.12g")
    notes = acc.notes
    if lists is None:
        notes.append("basic and Thm 3.5 left out: they need a finite eps for every mechanism")
    if figure:
        try:
            files.append(mixed_figure(items, acc, label, out_dir / "region.png"))
        except LdpSimError as exc:
            notes.append(f"region.png skipped ({exc})")
    meta = {
        "items": [{"label": it.label, "count": it.count, "eps": it.eps, "delta": it.delta} for it in items],
        "methods": methods_,
        "exact": acc.exact,
        "step": acc.step,
        "error_estimate": error,
    }
    write_json(out_dir / "metadata.json", meta)
    files.append(out_dir / "metadata.json")
    return frame, files, notes, label
