"""Progress bars with an estimate of the time left, on a terminal only.

A long piece of work opens one bar for the whole of it, with its total known upfront, and
the code that does the work advances whatever bar is current::

    with bar(total=4 * instances, desc="kov-fig4", unit="instance"):
        ...                     # somewhere below, as each piece finishes:
        advance()               # a no-op when no bar is open

:func:`bar` shows a tqdm bar on stderr, with tqdm's ``[elapsed<remaining]`` estimate, only
when stderr is a terminal, ``show`` is true and the environment variable
``LDPSIM_NO_PROGRESS`` is unset (or empty, or ``0``); otherwise nothing is printed and
:func:`advance` does nothing. The bar is cleared from the terminal when the block ends,
normally or by an error or Ctrl-C, so nothing is left behind the command's own output.

The current bar is a :class:`contextvars.ContextVar`: library code advances it without
being handed it. Only the process that opened a bar advances it: a worker process forked
from it inherits the variable, and its calls do nothing (the parent advances the bar as
the workers' results come back, :func:`ldpsim._pool.pool_map`).

Ticks may be weighted: when pieces of work cost very different times (linear programs on
k = 12 symbols take about 17 times as long as on k = 6), each advances by its expected cost
and the total is the sum of those costs, so that the estimate of the time left stays
honest. Such a bar is opened with ``counts=False``: it shows the percentage and the times,
not a count of weighted units; :func:`note` shows which stage is running.

tqdm is imported only when a bar is shown, so importing this module costs nothing.
"""

from __future__ import annotations

import math
import numbers
import os
import shutil
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

from ldpsim.errors import invalid

#: Set to anything but empty or ``0`` to switch every progress bar off.
ENV = "LDPSIM_NO_PROGRESS"
#: The layout of a bar whose ticks are weighted: no counts, the stage in the brackets.
WEIGHTED_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"


@dataclass(frozen=True)
class _Current:
    bar: Any  # a tqdm bar
    pid: int  # the process that opened it, the only one that may advance it


_current: ContextVar[_Current | None] = ContextVar("ldpsim_progress_bar", default=None)
_tqdm_class: list[Any] = []  # the tqdm subclass used, made on first use


def switched_off() -> bool:
    """Whether ``LDPSIM_NO_PROGRESS`` switches bars off (set, and neither empty nor ``0``)."""
    return os.environ.get(ENV, "").strip() not in ("", "0")


def _terminal(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, OSError, ValueError):  # no isatty, or a closed stream
        return False


def _sized(stream: Any) -> bool:
    """Whether the terminal of ``stream`` reports its size."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return size.columns > 0 and size.lines > 0


def shown(show: bool = True) -> bool:
    """Whether a bar opened now would be shown: ``show``, stderr a terminal, not switched off."""
    return bool(show) and not switched_off() and _terminal(sys.stderr)


def _bar_class() -> Any:
    """tqdm without its monitor thread: a thread running while a process pool forks its
    workers could hold a lock (stderr's) that a worker then waits for forever."""
    if not _tqdm_class:
        from tqdm import tqdm

        class _Tqdm(tqdm):
            monitor_interval = 0

        _tqdm_class.append(_Tqdm)
    return _tqdm_class[0]


@contextmanager
def bar(
    total: float,
    desc: str,
    unit: str = "it",
    *,
    show: bool = True,
    counts: bool = True,
    initial: float = 0,
) -> Iterator[Any]:
    """Make a bar of ``total`` (a number > 0) the current one for the block; yields the tqdm
    bar, or None when it is not shown (:func:`shown`). ``desc`` names the work, ``unit``
    what is counted; ``counts=False`` for weighted ticks (see the module); ``initial`` is
    the work already done (a resumed run), in ``[0, total]``. The bar is cleared from the
    terminal when the block ends, however it ends. Inside the block :func:`advance` moves
    it; a bar opened inside, even one not shown, takes over until its own block ends (its
    ticks are its own)."""
    if isinstance(total, bool) or not isinstance(total, numbers.Real) or not (0 < total < math.inf):
        raise invalid("total", total, "a finite number > 0")
    if isinstance(initial, bool) or not isinstance(initial, numbers.Real) or not (0 <= initial <= total):
        raise invalid("initial", initial, f"a number in [0, total = {total}]")
    if not shown(show):
        token = _current.set(None)
        try:
            yield None
        finally:
            _current.reset(token)
        return
    tqdm = _bar_class()
    sized = _sized(sys.stderr)  # else (a pseudo-terminal of no size) tqdm draws nothing: 80 x 24, or $COLUMNS x $LINES
    fallback = shutil.get_terminal_size()
    b = tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        leave=False,
        file=sys.stderr,
        dynamic_ncols=sized,
        ncols=None if sized else fallback.columns,
        nrows=None if sized else fallback.lines,
        bar_format=None if counts else WEIGHTED_FORMAT,
        miniters=0,  # every tick may redraw (at most every 0.1 s), however the ticks are weighted
    )
    token = _current.set(_Current(b, os.getpid()))
    try:
        yield b
    finally:
        _current.reset(token)
        b.close()  # leave=False: the line is wiped


def _mine() -> Any:
    cur = _current.get()
    return cur.bar if cur is not None and cur.pid == os.getpid() else None


def advance(n: float = 1) -> None:
    """Advance the current bar by ``n`` (nothing when there is none, or it is not shown)."""
    b = _mine()
    if b is not None and n:
        b.update(n)


def note(text: str) -> None:
    """Show ``text`` (the stage running) beside the current bar's times, if there is one."""
    b = _mine()
    if b is not None:
        b.set_postfix_str(text)


def active() -> bool:
    """Whether a bar is shown and current in this process (ticks would move it)."""
    return _mine() is not None
