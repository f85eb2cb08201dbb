"""Plot privacy regions / trade-off curves of several guarantees on one set of axes."""

from __future__ import annotations

from typing import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ldpsim.privacy.guarantees import Guarantee


def plot_regions(
    guarantees: Sequence[Guarantee],
    ax: Axes | None = None,
    *,
    labels: Sequence[str] | None = None,
    fill: bool = True,
    n: int = 801,
    title: str | None = None,
) -> Axes:
    """Draw each guarantee's privacy region: the set of (type I, type II) errors between
    f(alpha) (lower boundary, the trade-off function) and 1 - f(1 - alpha) (its mirror).

    A smaller region is a stronger guarantee. Returns the axes (a new figure if none).
    """
    if ax is None:
        fig = Figure(figsize=(5.2, 5.0))
        ax = fig.add_subplot()
    labels = [g.label for g in guarantees] if labels is None else list(labels)
    for i, (g, label) in enumerate(zip(guarantees, labels)):
        color = f"C{i}"
        a, lower, upper = g.region(n)
        ax.plot(a, lower, color=color, lw=1.6, label=label)
        ax.plot(a, upper, color=color, lw=1.6)
        if fill:
            ax.fill_between(a, lower, upper, color=color, alpha=0.08, lw=0)
    ax.plot([0, 1], [1, 0], color="0.6", lw=0.8, ls=":", label="perfect privacy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel(r"type I error $\alpha$")
    ax.set_ylabel(r"type II error $\beta$")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    return ax


def zoomed(ax: Axes, corner: float) -> Axes:
    """Limit the axes to the lower-left corner [0, corner]^2, where composed regions differ."""
    ax.set_xlim(0, corner)
    ax.set_ylim(0, corner)
    return ax


__all__ = ["plot_regions", "zoomed"]
