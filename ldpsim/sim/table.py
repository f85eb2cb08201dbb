"""Survey populations read from a CSV table (``[population] file = ..., column = ...``).

:class:`Table` reads a CSV file once (a header row naming the columns, then one row per
respondent) and hands out its columns; a scenario that asks several questions of the same
respondents can take several columns of one ``Table``. :func:`table_population` turns one
column into a :class:`TablePopulation`: the answers' labels, each row's answer as a code
into them, and how the engine draws its clients:

- used as is (no ``size``): client i of the run is row i of the table (clients numbered in
  the order of the arrival plan), so the run's answers are exactly the table's;
- resampled (``size = n``): each client is a row drawn uniformly with replacement, i.e. an
  independent draw from the column's empirical distribution.

In both cases the truth of every estimate is the column's empirical distribution (counts
of each answer / rows). Every problem is one :class:`~ldpsim.errors.LdpSimError` naming
the file, and the line and column where it applies; no message quotes what the file holds
beyond a column name (the file may be anyone's, and a message may end up in a report).

Where a scenario's data may be (:func:`data_path`, :func:`read_scenario_table`): a regular
file in the scenario's folder or below once symlinks are followed, unless the caller allows
more (:class:`DataAccess`: ``--allow-outside-data``, an absolute path typed on the command
line). Whatever the file, it is read without blocking (a FIFO is refused, never waited on)
and never past ``MAX_TABLE_BYTES`` (:func:`read_data_file`).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import os
import stat
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from numpy.typing import NDArray

from ldpsim._validate import label_order
from ldpsim.errors import LdpSimError

#: Most data rows a population table may have (it is read whole into memory).
MAX_TABLE_ROWS = 10**7
#: Largest population table file, in bytes: no more than this is ever read, whatever the
#: file's size on disk says (a file under /proc says 0).
MAX_TABLE_BYTES = 2**30
#: Longest column name a message shows whole, and most names it lists.
_NAME_SHOWN, _NAMES_SHOWN = 60, 20


# ----------------------------------------------------------------------------- where data may be
@dataclass(frozen=True)
class DataAccess:
    """Where a scenario may read the data files it names: its own folder and below, once
    symlinks are followed, unless ``outside`` (``--allow-outside-data``,
    ``allow_outside_data=True``); ``typed``: absolute paths the user typed on the command
    line (``ldpsim sweep --grid``), allowed wherever they are."""

    outside: bool = False
    typed: frozenset[str] = frozenset()


_ACCESS: ContextVar[DataAccess] = ContextVar("ldpsim_data_access", default=DataAccess())


def current_access() -> DataAccess:
    """The :class:`DataAccess` of the scenario being loaded now."""
    return _ACCESS.get()


@contextlib.contextmanager
def data_access(access: DataAccess | bool = False) -> Iterator[DataAccess]:
    """Scenarios loaded in the block may read data as ``access`` says (``True``: from
    anywhere), and as the enclosing block allows."""
    outer = _ACCESS.get()
    if isinstance(access, bool):
        access = DataAccess(outside=access)
    merged = DataAccess(outer.outside or access.outside, outer.typed | access.typed)
    token = _ACCESS.set(merged)
    try:
        yield merged
    finally:
        _ACCESS.reset(token)


def data_path(name: str, where: str, key: str, access: DataAccess | None = None) -> Path:
    """The file a scenario at ``where`` names as ``name`` under ``key``, once it is known to
    lie in the scenario's folder or below (symlinks followed), unless ``access`` allows it
    elsewhere; one line naming ``key`` otherwise."""
    access = current_access() if access is None else access
    given = Path(name)
    folder = Path(where).parent
    path = given if given.is_absolute() else folder / given
    if access.outside or (given.is_absolute() and name in access.typed):
        return path
    try:
        base, real = folder.resolve(), path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it does not resolve"
        raise LdpSimError(f"{key}: got {name!r}, expected a path to a file ({reason})") from None
    if not real.is_relative_to(base):
        leads = f"; it leads to {str(real)!r}" if str(real) != str(path) else ""
        raise LdpSimError(
            f"{key}: got {name!r}, expected a file in the scenario's folder {str(base)!r} or below{leads} "
            "(to read data from elsewhere: --allow-outside-data, or allow_outside_data=True from Python)"
        )
    return real


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_data_file(path: str | Path, shown: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (``shown`` in messages), at most ``limit`` of
    them. What is not a regular file (a device, a FIFO, a folder) is refused before it is
    opened, and again once open (it may have been swapped meanwhile); the file is opened
    without blocking, and read no further than ``limit`` + 1 bytes. One line otherwise,
    never quoting what was read."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise LdpSimError(f"cannot read {shown}: got {_not_regular(mode)}, expected a regular file")
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise LdpSimError(f"cannot read {shown}: got {_not_regular(info.st_mode)}, expected a regular file")
            if info.st_size > limit:
                raise LdpSimError(f"cannot read {shown}: larger than {limit:,} bytes, expected a smaller table")
            parts = [os.read(fd, info.st_size + 1)]  # all of it at once, as a rule
            total = len(parts[0])
            while parts[-1] and total <= limit:  # a file whose size on disk is not its length
                parts.append(os.read(fd, min(1 << 20, limit + 1 - total)))
                total += len(parts[-1])
        finally:
            os.close(fd)
    except LdpSimError:
        raise
    except FileNotFoundError:
        looked = f" (looked for {path})" if str(path) != shown else ""
        raise LdpSimError(f"cannot read {shown}: no such file{looked}") from None
    except OSError as exc:  # no permission, a read error
        raise LdpSimError(f"cannot read {shown}: {exc.strerror or type(exc).__name__}") from None
    except ValueError:  # a NUL in the name
        raise LdpSimError(f"cannot read {shown}: got a name with a NUL character, expected a file name") from None
    if total > limit:
        raise LdpSimError(f"cannot read {shown}: larger than {limit:,} bytes, expected a smaller table")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_scenario_table(name: str, where: str, key: str = "population.file") -> "Table":
    """The table a scenario at ``where`` names as ``name`` (relative to its folder), read
    as :func:`data_path` and :meth:`Table.read` allow; errors are prefixed by ``key``."""
    try:
        return Table.read(data_path(name, where, key), shown=name)
    except LdpSimError as exc:
        message = str(exc)
        raise LdpSimError(message if message.startswith(f"{key}: ") else f"{key}: {message}") from None


@dataclass(frozen=True)
class Table:
    """A CSV file read whole: its header and its columns as stripped strings. ``shown`` is
    the file's name in messages, ``path`` where it was read; ``lines[i]`` is the line of the
    file where data row i ends (the header is line 1)."""

    path: str
    shown: str
    header: tuple[str, ...]
    columns: tuple[tuple[str, ...], ...]
    lines: tuple[int, ...]
    sha256: str = ""  # of the file's bytes as read

    @property
    def rows(self) -> int:
        return len(self.lines)

    @classmethod
    def read(cls, path: str | Path, shown: str | None = None) -> "Table":
        """Read ``path``: comma-separated, UTF-8 (a byte-order mark is ignored), fields
        quoted with ``"`` when they hold commas; blank lines are skipped. It must be a
        regular file of at most ``MAX_TABLE_BYTES`` (:func:`read_data_file`); no message
        quotes what it holds beyond a column name."""
        shown = str(path) if shown is None else shown
        data = read_data_file(path, shown, MAX_TABLE_BYTES)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:  # where, never the bytes themselves
            raise LdpSimError(
                f"cannot read {shown}: got bytes that are not utf-8 text (at byte {exc.start:,}), "
                "expected a UTF-8 CSV file"
            ) from None
        table = cls._parse(csv.reader(io.StringIO(text, newline=""), strict=True), str(path), shown)
        return dataclasses.replace(table, sha256=hashlib.sha256(data).hexdigest())

    @classmethod
    def _parse(cls, reader: Any, path: str, shown: str) -> "Table":
        header: list[str] | None = None
        cells: list[list[str]] = []
        lines: list[int] = []
        try:
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line
                if header is None:
                    header = [h.strip() for h in row]
                    _check_header(header, shown)
                    cells = [[] for _ in header]
                    continue
                if len(row) != len(header):
                    raise LdpSimError(
                        f"{shown}, line {reader.line_num} (row {len(lines) + 1}): got {len(row)} fields, expected "
                        f"{len(header)} (one per column of the header: {_show_names(header)})"
                    )
                if len(lines) == MAX_TABLE_ROWS:
                    raise LdpSimError(f"{shown}: got more than {MAX_TABLE_ROWS:,} rows, expected at most that many")
                for column, value in zip(cells, row):
                    column.append(value.strip())
                lines.append(reader.line_num)
        except csv.Error as exc:
            raise LdpSimError(f"{shown}, line {reader.line_num}: malformed CSV ({exc})") from None
        if header is None:
            raise LdpSimError(f"{shown}: got an empty file, expected a header row naming the columns")
        return cls(path, shown, tuple(header), tuple(tuple(c) for c in cells), tuple(lines))

    def column(self, name: str) -> tuple[str, ...]:
        """The values of column ``name`` (one line naming the columns there are otherwise)."""
        if name not in self.header:
            raise LdpSimError(
                f"got column {name!r}, expected a column of {self.shown} (one of: {_show_names(self.header)})"
            )
        return self.columns[self.header.index(name)]

    def where(self, row: int, name: str) -> str:
        """``file, line L (row i), column 'name'`` for data row ``row`` (0-based)."""
        return f"{self.shown}, line {self.lines[row]} (row {row + 1}), column {name!r}"


def _check_header(header: list[str], shown: str) -> None:
    for i, name in enumerate(header):
        if not name:
            raise LdpSimError(
                f"{shown}, line 1: column {i + 1} of the header has no name, expected a name for every column"
            )
        if name in header[:i]:
            raise LdpSimError(
                f"{shown}, line 1: column {_show_name(name)!r} appears twice in the header, expected distinct names"
            )


@dataclass(frozen=True)
class TablePopulation:
    """One column of a table as a survey population.

    ``labels``: the answers, in order; ``codes[r]``: the answer of (kept) row r as an index
    into them; ``resample``: whether clients are rows drawn with replacement (else client i
    is row i)."""

    path: str  # where the table was read
    shown: str  # the file as the scenario names it
    sha256: str  # of the file's bytes as read
    column: str
    labels: list[str]
    codes: NDArray[np.int64]
    resample: bool
    dropped: int = 0  # rows left out for a blank value (missing = "drop")

    @property
    def rows(self) -> int:
        return int(self.codes.size)

    @property
    def counts(self) -> NDArray[np.int64]:
        """Rows per answer."""
        return np.bincount(self.codes, minlength=len(self.labels)).astype(np.int64)

    @property
    def distribution(self) -> NDArray[np.float64]:
        """The column's empirical distribution: the truth of every estimate."""
        return self.counts / float(self.rows)

    def inputs(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The answers of clients ``first .. first + size - 1``: their rows as they are, or
        rows drawn uniformly with replacement from ``rng``."""
        if self.resample:
            return self.codes[rng.integers(0, self.rows, size=size)]
        return self.codes[first : first + size]

    def input_counts(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The number of each answer among those clients (aggregate mode): the counts of
        their rows, or multinomial(size, the empirical distribution) when resampling."""
        if self.resample:
            return rng.multinomial(size, self.distribution).astype(np.int64)
        return np.bincount(self.codes[first : first + size], minlength=len(self.labels)).astype(np.int64)

    def file_bytes(self) -> bytes:
        """The file's bytes again, checked against those read (one line if it changed)."""
        try:
            data = read_data_file(self.path, self.shown, MAX_TABLE_BYTES)
        except LdpSimError as exc:
            raise LdpSimError(f"population.file: {exc} (reading it again)") from None
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise LdpSimError(
                f"population.file: {self.shown} changed since the scenario was loaded, expected it unchanged"
            )
        return data

    def describe(self) -> str:
        how = "resampled with replacement" if self.resample else "one client per row, as is"
        dropped = f", {self.dropped:,} rows with a blank value left out" if self.dropped else ""
        return f"column {self.column!r} of {self.shown} ({self.rows:,} rows{dropped}; {how})"


def table_population(
    table: Table, column: str, labels: list[str] | None, resample: bool, missing: str = "error", max_labels: int = 10**6
) -> TablePopulation:
    """Column ``column`` of ``table`` as a population. The answers are ``labels`` when
    given (in that order; every value must be one of them), else the column's distinct
    values: in numeric order when every one is a number, else sorted as text. A blank
    value is an error, or its row is left out with ``missing = "drop"``."""
    values = np.asarray(table.column(column), dtype=str) if table.rows else np.zeros(0, dtype=str)
    blank = values == ""
    if blank.any() and missing != "drop":
        row = int(np.flatnonzero(blank)[0])
        raise LdpSimError(
            f"{table.where(row, column)}: got a blank value, expected an answer "
            '(or set population.missing = "drop" to leave such rows out)'
        )
    kept = values[~blank]
    if kept.size == 0:
        more = f" ({int(blank.sum()):,} blank values left out)" if blank.any() else " (the table has no rows)"
        raise LdpSimError(f"{table.shown}, column {column!r}: got no values{more}, expected at least one answer")
    distinct, inverse = np.unique(kept, return_inverse=True)
    if labels is None:
        if distinct.size < 2:
            raise LdpSimError(
                f"{table.shown}, column {column!r}: got one distinct value, expected at least 2 "
                "(or list the possible answers in population.labels)"
            )
        if distinct.size > max_labels:
            raise LdpSimError(
                f"{table.shown}, column {column!r}: got {distinct.size:,} "
                f"distinct values, expected at most {max_labels:,}"
            )
        order = label_order([str(x) for x in distinct])
        labels = [str(distinct[i]) for i in order]
        position = np.empty(distinct.size, dtype=np.int64)
        position[order] = np.arange(distinct.size)
    else:
        index = {label: i for i, label in enumerate(labels)}
        position = np.array([index.get(str(v), -1) for v in distinct], dtype=np.int64)
        if (position < 0).any():
            unknown = (position < 0)[inverse]
            row = int(np.flatnonzero(~blank)[int(np.flatnonzero(unknown)[0])])
            raise LdpSimError(
                f"{table.where(row, column)}: got a value outside population.labels, expected one of them "
                f"({_show_labels(labels)})"
            )
    codes = position[inverse].astype(np.int64)
    codes.setflags(write=False)  # the engine hands out slices of it
    return TablePopulation(
        table.path, table.shown, table.sha256, column, list(labels), codes, resample, int(blank.sum())
    )


def _show_name(name: str) -> str:
    """A column name as messages show it: printable, at most ``_NAME_SHOWN`` characters."""
    name = "".join(c if c.isprintable() else "?" for c in name[: _NAME_SHOWN + 1])
    return name if len(name) <= _NAME_SHOWN else name[: _NAME_SHOWN - 3] + "..."


def _show_names(names: Any) -> str:
    """The header's column names for a message (the first ``_NAMES_SHOWN``)."""
    names = list(names)
    shown = ", ".join(_show_name(n) for n in names[:_NAMES_SHOWN])
    return shown + (f", ... {len(names) - _NAMES_SHOWN:,} more" if len(names) > _NAMES_SHOWN else "")


def _show_labels(labels: list[str], most: int = 10) -> str:
    shown = ", ".join(repr(x) for x in labels[:most])
    return shown + (f", ... {len(labels) - most:,} more" if len(labels) > most else "")
