"""What every report's figures share: PNG bytes without version strings, quiet warnings
about glyphs the figure font lacks, labels shortened for legends, times labelled with the
scenario's unit (``simulation.time_unit``). ``plt`` is matplotlib's
pyplot on the Agg backend (no screen needed); report modules take it from here."""

from __future__ import annotations

import io
import re
import warnings
from contextlib import contextmanager
from typing import Iterator

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import LogFormatterSciNotation  # noqa: E402

PNG_META = {"Software": None}  # no version string: same bytes across matplotlib patch releases
#: Resolution of every report figure. Figures are made at it too (in :func:`quiet_figures`),
#: so the layout pass and the saved image share one renderer and its cache of text sizes.
DPI = 110


@contextmanager
def quiet_figures() -> Iterator[None]:
    """What a report's figures say to nobody. Labels are the user's text: a character the
    figure font lacks (an emoji, say) is drawn as a box, and summary.md still shows it;
    matplotlib's warning about it is not for the user. And values near the largest double
    (the errors of eps near 0) overflow in matplotlib's own axis arithmetic (a log axis pads
    its limits by a factor): the figure is drawn with the limits matplotlib falls back to, the
    tables give the numbers, and numpy's floating-point warnings from that arithmetic are not
    raised. Every figure opened inside is closed at the end, also when an error stops it half-way."""
    before = set(plt.get_fignums())
    try:
        with (
            matplotlib.rc_context({"figure.dpi": DPI}),
            warnings.catch_warnings(),
            np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"),
        ):
            warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
            yield
    finally:  # a figure left open by an error half-way through it is closed too (pyplot keeps it otherwise)
        for number in set(plt.get_fignums()) - before:
            plt.close(number)


_SUPERSCRIPT = str.maketrans("0123456789-+.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺·")
_MATH_POWER = re.compile(r"^\$\\mathdefault\{(?:(.+?)\\times)?10\^\{(.+?)\}\}\$$")


class _PlainLogFormatter(LogFormatterSciNotation):
    """matplotlib's labels of a log axis (the same ticks labelled), written as plain text
    with Unicode superscripts (``10⁻²``, ``2×10³``) rather than as mathtext: a figure's
    layout then measures no mathtext, which is most of the time its log axes cost."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        label = super().__call__(x, pos)
        m = _MATH_POWER.match(label)
        if m is None:
            return label.replace("$\\mathdefault{", "").replace("}$", "")
        coefficient, power = m.groups()
        return f"{coefficient + '×' if coefficient else ''}10{power.translate(_SUPERSCRIPT)}"


def log_axes(ax, *, x: bool = False, y: bool = False) -> None:
    """Log scale on the axes asked for, each only where what is drawn has a positive value
    on it (errors of 0, at a confidence level near 0 or with no reports, stay on a linear
    axis, where matplotlib would otherwise warn and fall back itself); tick labels in plain
    text (:class:`_PlainLogFormatter`)."""
    lim = ax.dataLim
    if x and np.isfinite(lim.minposx):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_PlainLogFormatter())
        ax.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
    if y and np.isfinite(lim.minposy):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(_PlainLogFormatter())
        ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))


def short_label(text: object, limit: int = 40) -> str:
    """A label as figures show it: on one line, at most ``limit`` characters (the tables in
    summary.md keep the full text)."""
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def in_unit(what: str, unit: str) -> str:
    """The label of a time, a delay or a latency with the scenario's unit
    (``simulation.time_unit``): ``time (days)``."""
    return f"{what} ({unit})"


def amount(value: float, unit: str) -> str:
    """A length of time in words: ``0.5 days``, ``2 hours``, and ``1 day`` (a plural unit's
    last word loses its ``s`` for exactly one; short units such as ``ms`` stay as written)."""
    head, _, last = unit.rpartition(" ")
    if value == 1 and len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        unit = f"{head} {last[:-1]}" if head else last[:-1]
    return f"{value:g} {unit}"


def period_label(length: float, unit: str) -> str:
    """The axis label of collection periods: ``period (1 day each)``."""
    return f"period ({amount(length, unit)} each)"


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes (closed afterwards); the same bytes as saving it to a file."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata=PNG_META)
    plt.close(fig)
    return buf.getvalue()
