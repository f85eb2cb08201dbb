"""The files of ``ldpsim recommend``: the table (CSV), the regime figure (loss against eps
for every oracle, with the crossings marked) and a short summary.md."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from ldpsim.report.figures import plt, png_bytes, quiet_figures
from ldpsim.report.tables import md_table

#: The figure's axis label per loss.
AXIS = {
    "mse": "expected squared error, summed over answers",
    "l1": "expected L1 error",
    "kl": "expected KL(p || estimate)",
}


def figure(
    curves: pd.DataFrame, crossings: pd.DataFrame, k: int, n: int, loss: str, eps: float, kind: str = "exact"
) -> bytes:
    """Loss against eps (log-log), one line per oracle; crossings as dotted verticals."""
    with quiet_figures():
        fig, ax = plt.subplots(figsize=(8, 5))
        for name in [c for c in curves.columns if c != "eps"]:
            ax.plot(curves["eps"], curves[name], lw=1.4, label=name)
        for e in crossings["eps"]:
            ax.axvline(e, color="gray", ls=":", lw=0.8)
        ax.axvline(eps, color="black", ls="--", lw=0.8, label=f"eps = {eps:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("eps")
        ax.set_ylabel(AXIS[loss] if kind == "exact" else f"{AXIS[loss]} ({kind})")
        ax.set_title(
            f"{'Exact' if kind == 'exact' else 'Expected'} loss of each frequency oracle: k = {k:,}, n = {n:,} "
            "(dotted: where two swap places)",
            fontsize=9,
        )
        ax.legend(fontsize=7)
        fig.tight_layout()
        return png_bytes(fig)


def files(
    table: pd.DataFrame, curves: pd.DataFrame, crossings: pd.DataFrame, params: dict[str, Any], with_figure: bool
) -> dict[str, bytes]:
    """recommend.csv, curves.csv, crossings.csv, recommend.png (unless ``with_figure`` is
    False) and summary.md, by name."""
    out: dict[str, bytes] = {}
    for name, frame in (("recommend.csv", table), ("curves.csv", curves), ("crossings.csv", crossings)):
        buf = io.StringIO()
        frame.to_csv(buf, index=False, float_format="%.12g")
        out[name] = buf.getvalue().encode()
    if with_figure:
        out["recommend.png"] = figure(
            curves,
            crossings,
            params["k"],
            params["n"],
            params["utility"],
            params["eps"],
            params.get("loss_kind", "exact"),
        )
    text = [
        f"# Choosing a frequency oracle: k = {params['k']:,}, eps = {params['eps']:g}, n = {params['n']:,}",
        "",
        f"Prior: {params['prior']}. Loss: {params['utility']} ({params.get('loss_kind', 'exact')}).",
        "",
        md_table(table.fillna({"note": ""})),
        "",
        "Where two oracles swap places (exact losses, bisection):",
        "",
        md_table(crossings) if len(crossings) else "(no crossing between eps = 0.1 and 8)",
        "",
    ]
    if with_figure:
        text += ["![recommend.png](recommend.png)", ""]
    out["summary.md"] = "\n".join(text).encode()
    return out
