"""Terminal text that fits a width (100 columns by default): what every ``ldpsim`` command
prints goes through here.

- :func:`table` prints a DataFrame as ``DataFrame.to_string`` does when it fits; a wider
  table is split into blocks of columns that each fit, its key columns (the first, by
  default) repeated at the left of every block, with a closing line naming the file that
  holds the table whole. A text cell too wide even for a block of its own is cut at a word
  and ended with ``...`` (the file keeps it whole).
- :func:`wrap` wraps prose lines, continuation lines indented, never breaking a word, a
  number or a path; words joined by :data:`KEEP` stay on one line.
- :func:`shorten` cuts one line of text at a word to a width, ended with ``...``.
- :func:`plain` strips reStructuredText inline markup from a docstring's text for the
  terminal; :func:`plural` counts a noun (``1 pair``, ``2 pairs``); :func:`did_you_mean`
  names the closest known name to a misspelled one.

Only the standard library is imported (tables are pandas frames handed in), so this costs
nothing at ``import ldpsim`` or ``ldpsim --help``.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Callable
from typing import Any

#: The width every command's output fits in.
WIDTH = 100
#: Joins words that :func:`wrap` must not put on different lines; printed as a space.
KEEP = "\u00a0"


def wrap(text: str, width: int = WIDTH, hang: int = 2) -> str:
    """``text`` with each line longer than ``width`` wrapped at spaces, continuation lines
    indented ``hang`` columns more than the line's own leading spaces. Words (numbers, paths,
    ``1e-06``, ``a-b``) are never broken, so a single word longer than the room stays whole
    on its line. Words joined by :data:`KEEP` stay together; :data:`KEEP` prints as a
    space."""
    out: list[str] = []
    for line in str(text).split("\n"):
        if len(line) <= width:
            out.append(line.replace(KEEP, " "))
            continue
        lead = len(line) - len(line.lstrip(" "))
        pieces = textwrap.wrap(
            line, width=width, subsequent_indent=" " * (lead + hang), break_long_words=False, break_on_hyphens=False
        )
        out.extend(p.replace(KEEP, " ") for p in pieces or [""])
    return "\n".join(out)


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut at a word boundary (within the last third) and ended with
    ``...`` if it is longer than ``width``; unchanged if it fits."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    cut = text[: width - 3]
    space = cut.rfind(" ")
    if space >= (width - 3) * 2 // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "..."


_ROLE = re.compile(r":[a-z:]+:`([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")


def plain(text: str) -> str:
    """``text`` (reStructuredText, as docstrings and catalog descriptions write it) as a
    terminal shows it: ````x```` and ``:role:`x``` become ``x``, ``*x*`` and ``**x**`` become
    ``x``."""
    text = _ROLE.sub(
        lambda m: m.group(1)[1:].rpartition(".")[2] if m.group(1).startswith("~") else m.group(1), str(text)
    )
    return _EMPHASIS.sub(r"\1", _LITERAL.sub(r"\1", text))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, the noun plural unless the count is one: ``1 pair``,
    ``2 pairs``, ``1,000 pairs`` (``many``: an irregular plural)."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"


def did_you_mean(name: Any, known: Any) -> str:
    """`` (did you mean 'x'?)`` when one of ``known`` is close to ``name`` (a misspelling),
    else empty: the end of a one-line error naming an unknown name."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def table(
    frame: Any,
    width: int = WIDTH,
    *,
    float_format: Callable[[float], str] | None = None,
    na_rep: str = "NaN",
    keys: int = 1,
    full: Any = None,
) -> str:
    """``frame`` (a pandas DataFrame, printed without its index) within ``width`` columns.

    As ``frame.to_string(index=False, ...)`` when every line fits. Otherwise the columns are
    split, in order, into blocks that each fit, the first ``keys`` columns repeated at the
    left of every block and a blank line between blocks, followed by ``full table: FULL``
    (the file that holds the table whole; without ``full``, a line saying how it was
    split). Text cells are shortened with ``...`` only where a key column takes more than
    half the width, or one column with the keys would not fit on its own."""

    def render(f: Any) -> str:
        text = str(f.to_string(index=False, float_format=float_format, na_rep=na_rep))
        return "\n".join(line.rstrip() for line in text.split("\n"))  # blank last cells: no trailing spaces

    text = render(frame)
    if _widest(text) <= width or frame.shape[1] == 0:
        return text
    if len(frame) == 0:  # pandas prints "Empty DataFrame / Columns: [...]": prose
        return wrap(text, width)
    keys = max(0, min(keys, frame.shape[1] - 1))
    frame = frame.copy()
    clipped = False
    key_cols = list(frame.columns[:keys])
    if key_cols and _widest(render(frame[key_cols])) > width // 2:
        for c in key_cols:
            clipped |= _clip(frame, c, max(12, width // 2 // len(key_cols) - 2))
    blocks: list[list[Any]] = []
    for col in frame.columns[keys:]:
        if blocks and _widest(render(frame[key_cols + blocks[-1] + [col]])) <= width:
            blocks[-1].append(col)
            continue
        alone = _widest(render(frame[key_cols + [col]]))
        if alone > width:
            room = width - (_widest(render(frame[key_cols])) + 2 if key_cols else 0)
            clipped |= _clip(frame, col, max(12, room))
        blocks.append([col])
    parts = [render(frame[key_cols + cols]) for cols in blocks]
    if full is not None:
        note = f"full table: {full}"
    elif len(blocks) > 1:
        first = ", ".join(str(c) for c in key_cols) or "no column"
        note = f"(the table in {len(blocks)} blocks of columns, {first} repeated in each)"
    else:
        note = "(long text cells shortened with ...)"
    return "\n\n".join(parts) + "\n" + wrap(note, width)


def _widest(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _clip(frame: Any, col: Any, limit: int) -> bool:
    """Shorten the text cells of column ``col`` of ``frame`` (in place) to ``limit``
    characters; whether any cell changed. Columns of numbers are left alone."""
    values = frame[col]
    if not any(isinstance(v, str) and len(v) > limit for v in values):
        return False
    frame[col] = values.map(lambda v: shorten(v, limit) if isinstance(v, str) and len(v) > limit else v)
    return True


def sayer(out: list[str]) -> tuple[Callable[..., None], Callable[[str], None]]:
    """Two writers into ``out``, line by line (what a study's console lines are made of):
    ``say(text, hang=2)``, prose wrapped within :data:`WIDTH` columns (:func:`wrap`), and
    ``show(block)``, a block as it is (a :func:`table`)."""

    def say(text: str, hang: int = 2) -> None:
        out.extend(wrap(text, hang=hang).split("\n"))

    def show(block: str) -> None:
        out.extend(block.split("\n"))

    return say, show
