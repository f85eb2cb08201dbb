"""Real answers in, privatised reports out (``ldpsim privatize``); real reports in, the
estimates and tests of a run out (``ldpsim analyse``): the deployment workflow of
docs/analyse.md, with the files of one CSV per collection.

**Formats** (:func:`report_format`; a header row always, one report per row):

=================================================  =========================  ==========================
mechanism                                          column(s)                  one report
=================================================  =========================  ==========================
finite: randomized_response, hadamard_response,    ``report``                 the output symbol's index
binary, matrix, staircase, truncated_geometric, ...                           ``0..m-1``
oue, sue, rappor                                   ``report``                 a string of ``0``/``1`` of the
                                                                              statistic's length (k; m)
olh, blh                                           ``hash_a,hash_b,hash_c,    the client's hash seed
                                                   value``                    ``(a, b, c)`` and its value
subset_selection                                   ``report``                 omega distinct indices, ``;``
piecewise, duchi, laplace_bounded, square_wave...  ``report``                 a finite number
=================================================  =========================  ==========================

A local-hashing seed is three numbers of ``Z_P`` (``P = 2^31 - 1``), 93 bits, more than
one integer column holds, hence its three columns.

**Randomness.** ``privatize`` privatises the answers in consecutive chunks of :data:`CHUNK`
rows, chunk ``b`` with ``mechanism.privatize(indices, block_generator(seed, b))``: the
streams a simulated survey run with the same seed gives the same respondents (replication
0, its first cohort, batch ``b`` of ``CHUNK`` clients: :func:`block_generator`), so the
reports are those of that run, and a test or an auditor remakes them from the answers and
the seed. ``--rng os`` draws from the operating system's generator instead.

**Reading** is chunked (``pandas.read_csv(chunksize=CHUNK)``, every value read as text and
parsed here, so memory stays bounded whatever the file's size); the additive statistic of
the oracle (``mechanism.statistic`` of each chunk's reports) or the moments of numeric
reports are summed over the chunks. A file of bit strings and nothing else is read faster,
as fixed-width lines of raw bytes, eight lines per group of 64-bit words
(:class:`_BitLines`); any irregular line sends it to the chunked reader, which names the
row. Every row is checked: the first bad one is one line naming its row (the n-th report
after the header) and column, and nothing is written.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from ldpsim import _progress
from ldpsim import _validate as v
from ldpsim._files import atomic_writer, describe_os_error, open_input
from ldpsim._rng import SystemRandom, block_sequence
from ldpsim.analyst.betting import BettingProcess, report_terms, term_ranges
from ldpsim.analyst.estimation import confidence_intervals, project_to_simplex
from ldpsim.analyst.frequency import frequency_estimate
from ldpsim.analyst.hypotheses import (
    DRAWS,
    SequentialResult,
    TestResult,
    affine_estimate,
    homogeneity,
    sequential_homogeneity,
    sequential_uniformity,
    uniformity,
)
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.numeric import Duchi
from ldpsim.mechanisms.oracles.hashing import LocalHashing
from ldpsim.mechanisms.oracles.rappor import Rappor
from ldpsim.mechanisms.oracles.subset import SubsetSelection
from ldpsim.mechanisms.oracles.unary import UnaryEncoding

__all__ = [
    "CHUNK",
    "HASH_COLUMNS",
    "Format",
    "Collected",
    "build",
    "report_format",
    "file_labels",
    "privatize_file",
    "collect",
    "block_generator",
]

#: Rows per chunk, read and privatised (privatize's draws depend on it: see the module).
CHUNK = 1 << 16
#: The columns of a local-hashing report.
HASH_COLUMNS = ("hash_a", "hash_b", "hash_c", "value")
#: The column of every other report.
REPORT_COLUMN = "report"
#: At most this many groups (``--groups``): each keeps its own statistic.
MAX_GROUPS = 1000

_INTEGER = re.compile(r"[0-9]{1,18}")
_NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_RE = re.compile(_NUMBER)


#: the catalog's tag of the mechanisms for a bounded number (reports are numbers)
NUMERIC_TAG = "numeric"


#: The survey engine's stream of the first cohort of replication 0: ``SeedSequence(seed,
#: spawn_key=(replication,))`` spawns five children, the second of which spawns one per
#: cohort (:mod:`ldpsim.sim.engine`); tests/test_analyse.py checks that a run draws with it.
_FIRST_COHORT = (0, 1, 0)


def block_generator(seed: int, block: int) -> np.random.Generator:
    """The generator of answers ``block * CHUNK`` onwards of ``privatize --seed seed``
    (module docstring): the stream a simulated run with seed ``seed`` privatises the same
    respondents with (replication 0, its first cohort, batch ``block`` of ``CHUNK``)."""
    return np.random.default_rng(block_sequence(np.random.SeedSequence(seed, spawn_key=_FIRST_COHORT), block))


@dataclass(frozen=True)
class Format:
    """How reports of a mechanism are written: ``kind`` (``symbol``, ``bits``, ``hash``,
    ``subset``, ``number``), ``width`` (output symbols, bits or subset size) and a phrase
    saying what one report is."""

    kind: str
    width: int
    what: str

    @property
    def categorical(self) -> bool:
        return self.kind != "number"


def build(spec: str, k: int | None = None, option: str = "--mechanism") -> catalog.Built:
    """The catalog mechanism of ``spec`` (``NAME:k=v,...``); ``k`` fills in a missing ``k``
    (the number of labels). Families that do not privatise answers for deployment (noise on
    a number, vector mechanisms, the auditor's broken zoo) are refused: one line naming ``option``."""
    try:
        name = spec.strip().partition(":")[0].strip()
        e = catalog.entry(name)
        if k is not None and "k" in e.params and not re.search(r"(^|[:,])\s*k\s*=", spec):
            spec = f"{spec}{',' if ':' in spec else ':'}k={k}"
        built = catalog.parse(spec)
    except LdpSimError as exc:
        raise LdpSimError(f"{option}: {exc}") from None
    if not ({NUMERIC_TAG, "finite", "oracle"} & built.entry.tags) or "broken" in built.entry.tags:
        raise LdpSimError(
            f"{option}: got {spec!r}, expected a frequency oracle or a numeric mechanism of the catalog "
            "(randomized_response, oue, olh, subset_selection, piecewise, ...)"
        )
    report_format(built)
    return built


def with_sampler(spec: str, sampler: str | None, option: str = "--sampler") -> str:
    """``spec`` drawn by ``sampler`` (``float``, ``discrete``, ``snapped``): the family's safe
    version of the catalog (:func:`ldpsim.mechanisms.catalog.with_sampler`). Without one, a
    family that has safe versions gets ``snapped`` (or ``discrete``), whose privacy holds for
    the doubles it produces; any other family stays as it is."""
    name, colon, params = spec.strip().partition(":")
    try:
        e = catalog.entry(name.strip())
    except LdpSimError:
        return spec  # build names the unknown family
    if sampler is None:
        if NUMERIC_TAG not in e.tags:  # build refuses noise on unbounded numbers as it is named
            return spec
        sampler = next((s for s in ("snapped", "discrete") if s in e.samplers), catalog.FLOAT_SAMPLER)
    return catalog.with_sampler(e.name, sampler, option) + colon + params


def check_system_rng(built: catalog.Built, option: str = "--rng") -> None:
    """One line naming ``option`` unless ``built``'s mechanism draws its reports from the
    operating system's generator (the discrete and snapped samplers; one probe report)."""
    mech = built.mechanism
    probe = np.full(1, getattr(mech, "lo", 0.0)) if report_format(built).kind == "number" else np.zeros(1, np.int64)
    try:
        mech.privatize(probe, SystemRandom())
    except (LdpSimError, AttributeError, TypeError):  # as_generator refuses it; a sampler may not know it
        raise LdpSimError(
            f"{option}: got 'os' with {built.spec}, expected a mechanism whose sampler draws from the operating "
            "system's generator (discrete_laplace_bounded, snapped_laplace_bounded: --sampler discrete or snapped)"
        ) from None


def report_format(built: catalog.Built) -> Format:
    """The :class:`Format` of ``built``'s reports (module docstring)."""
    m = built.mechanism
    if NUMERIC_TAG in built.entry.tags:
        return Format("number", 1, "a finite number")
    if isinstance(m, (UnaryEncoding, Rappor)):
        return Format("bits", int(m.statistic_size), f"a string of {m.statistic_size} characters 0 or 1")
    if isinstance(m, LocalHashing):
        return Format("hash", 4, f"hash_a, hash_b, hash_c in 0..{m.prime - 1} and value in 0..{m.g - 1}")
    if isinstance(m, SubsetSelection):
        return Format("subset", int(m.omega), f"{m.omega} distinct indices in 0..{m.k - 1} separated by ';'")
    size = getattr(m, "output_size", None)
    if isinstance(m, FrequencyOracle) and size is not None:
        return Format("symbol", int(size), f"an integer in 0..{int(size) - 1}")
    raise LdpSimError(f"--mechanism: got {built.spec!r}, expected a mechanism whose reports ldpsim can write")


# ------------------------------------------------------------------------------ reading CSV
def _read_header(path: Path, option: str) -> list[str]:
    """The column names of ``path`` (one line naming ``option`` for a file that is not a
    UTF-8 CSV with a header)."""
    try:
        with open_input(path) as f:
            first = f.readline()
    except OSError as exc:
        raise LdpSimError(
            f"{option}: got {str(path)!r}, expected a file we can read ({describe_os_error(exc)})"
        ) from None
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise LdpSimError(f"{option}: row 0 (the header): got bytes that are not UTF-8, expected UTF-8 text") from None
    if not text.strip():
        raise LdpSimError(f"{option}: got an empty file {str(path)!r}, expected a header row and one row per report")
    return next(csv.reader([text.rstrip("\r\n")]))


def pick_column(columns: Sequence[str], column: str | None, option: str, default: str | None = None) -> str:
    """``column`` if the file has it; without it ``default`` if present, else the only column."""
    if column is not None:
        if column not in columns:
            raise LdpSimError(f"--column: got {column!r}, expected one of the file's columns: {', '.join(columns)}")
        return column
    if default is not None and default in columns:
        return default
    if len(columns) == 1:
        return columns[0]
    raise LdpSimError(f"--column: got nothing, expected one of the columns of {option}: {', '.join(columns)}")


def _bad_line(path: Path) -> int | None:
    """The first line (1-based) of ``path`` that is not UTF-8, if any."""
    with open_input(path) as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return None


def _chunks(path: Path, columns: list[str], option: str) -> Iterator[tuple[int, pd.DataFrame, int]]:
    """``(first row, frame of text values, bytes read so far)`` per chunk of :data:`CHUNK`
    rows; rows are numbered from 1 after the header. Errors of the file's shape are one line."""
    with open_input(path) as raw:
        handle = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        try:
            reader = pd.read_csv(  # every column read: usecols would let a row of extra fields through
                handle,
                dtype=str,
                na_filter=False,
                skip_blank_lines=False,
                chunksize=CHUNK,
                engine="c",
            )
            start = 1
            for frame in reader:
                yield start, frame[columns], raw.tell()
                start += len(frame)
        except pd.errors.EmptyDataError:
            raise LdpSimError(f"{option}: got an empty file {str(path)!r}, expected a header row and reports") from None
        except pd.errors.ParserError as exc:
            found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
            if found:
                want, line, saw = (int(g) for g in found.groups())
                raise LdpSimError(
                    f"{option}: row {line - 1}: got {saw} fields, expected {want} (the header's)"
                ) from None
            raise LdpSimError(f"{option}: got a file pandas cannot read as CSV ({str(exc).splitlines()[0]})") from None
        except UnicodeDecodeError:
            bad = _bad_line(path)
            where = f"row {bad - 1}" if bad is not None and bad > 1 else "row 0 (the header)"
            raise LdpSimError(f"{option}: {where}: got bytes that are not UTF-8, expected UTF-8 text") from None


def _fail(option: str, row: int, column: str, value: Any, expected: str) -> LdpSimError:
    shown = "nothing (an empty value or a missing field)" if value is None or value == "" else repr(value)
    return LdpSimError(f"{option}: row {row}, column {column!r}: got {shown}, expected {expected}")


def _text(frame: pd.DataFrame, column: str, start: int, option: str, expected: str) -> NDArray[Any]:
    """The column's values as a numpy array of str; a missing or empty value is one line."""
    values = frame[column].to_numpy()
    empty = pd.isna(values) | (values == "")
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise _fail(option, start + i, column, None, expected)
    return values


def _first_bad(ok: NDArray[np.bool_]) -> int | None:
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else None


def _matching(values: NDArray[Any], pattern: re.Pattern[str]) -> NDArray[np.bool_]:
    return np.asarray(pd.Series(values, dtype=object).str.fullmatch(pattern.pattern).to_numpy(dtype=bool))


def _integers(values: NDArray[Any], start: int, column: str, option: str, top: int, expected: str) -> NDArray[np.int64]:
    i = _first_bad(_matching(values, _INTEGER))
    if i is not None:
        raise _fail(option, start + i, column, values[i], expected)
    out = values.astype(np.int64)
    i = _first_bad(out < top)
    if i is not None:
        raise _fail(option, start + i, column, values[i], expected)
    return out


def numbers(
    values: NDArray[Any], start: int, column: str, option: str, expected: str, positive: bool = False
) -> NDArray[np.float64]:
    """Finite numbers written in ASCII decimal (no ``nan``, ``inf`` or other digits)."""
    ok = _matching(values, _NUMBER_RE)
    i = _first_bad(ok)
    if i is None:
        out = values.astype(np.float64)
        i = _first_bad(np.isfinite(out) & ((out > 0) if positive else True))
        if i is None:
            return out
    raise _fail(option, start + i, column, values[i], expected)


def parse_reports(
    frame: pd.DataFrame, start: int, built: catalog.Built, fmt: Format, column: str, option: str
) -> NDArray[Any]:
    """The reports of one chunk as the arrays ``mechanism.statistic`` takes (floats for a
    numeric mechanism); the first bad row is one line."""
    m = built.mechanism
    if fmt.kind == "hash":
        cols = []
        for name in HASH_COLUMNS:
            top = m.g if name == "value" else m.prime
            vals = _text(frame, name, start, option, fmt.what)
            cols.append(_integers(vals, start, name, option, top, f"an integer in 0..{top - 1}"))
        return np.stack(cols, axis=1)
    vals = _text(frame, column, start, option, fmt.what)
    if fmt.kind == "symbol":
        return _integers(vals, start, column, option, fmt.width, fmt.what)
    if fmt.kind == "number":
        y = numbers(vals, start, column, option, fmt.what)
        if isinstance(m, Duchi):  # two reports only
            atoms = np.asarray(m.atoms, dtype=np.float64)
            i = _first_bad(np.isin(y, atoms))
            if i is not None:
                shown = " or ".join(repr(float(x)) for x in atoms)
                raise _fail(option, start + i, column, vals[i], f"a report of {m!r}: {shown}")
        lo, hi = m.report_range
        i = _first_bad((y >= lo) & (y <= hi))
        if i is not None:
            raise _fail(option, start + i, column, vals[i], f"a report of {m!r}, in [{lo!r}, {hi!r}]")
        return y
    if fmt.kind == "bits":
        k = fmt.width
        text = vals.astype(f"U{k + 1}")  # a longer value keeps k + 1 characters: wrong length all the same
        i = _first_bad(np.char.str_len(text) == k)  # np.char: numpy 1.26 has no np.strings
        if i is None:
            codes = text.view(np.uint32).reshape(-1, k + 1)[:, :k]
            i = _first_bad(((codes == 48) | (codes == 49)).all(axis=1))
            if i is None:
                return (codes - 48).astype(np.uint8)
        raise _fail(option, start + i, column, vals[i], fmt.what)
    # subset selection
    omega, k = fmt.width, m.k
    pattern = re.compile(r"[0-9]{1,9}(?:;[0-9]{1,9}){%d}" % (omega - 1))
    i = _first_bad(_matching(vals, pattern))
    if i is None:
        items = np.array(";".join(vals.tolist()).split(";"), dtype=np.int64).reshape(-1, omega)
        ordered = np.sort(items, axis=1)
        ok = (items < k).all(axis=1) & (np.diff(ordered, axis=1) > 0).all(axis=1)
        i = _first_bad(ok)
        if i is None:
            return items
    raise _fail(option, start + i, column, vals[i], fmt.what)


# ------------------------------------------------------------------------------ privatize
def file_labels(path: Path, column: str, option: str = "ANSWERS") -> list[str]:
    """The distinct answers of ``column`` (one pass over the file, chunked), in numeric order
    when all are numbers, else sorted as text: the order a scenario's population gives them."""
    seen: set[str] = set()
    for start, frame, _ in _chunks(path, [column], option):
        vals = _text(frame, column, start, option, "an answer")
        seen.update(pd.unique(vals).tolist())
    values = sorted(seen)
    return [values[i] for i in v.label_order(values)]


@dataclass
class Privatized:
    """What :func:`privatize_file` wrote."""

    rows: int
    labels: list[str] | None
    spec: str
    columns: list[str]


def _format_chunk(fmt: Format, reports: NDArray[Any]) -> dict[str, Any]:
    if fmt.kind == "hash":
        return {name: reports[:, j] for j, name in enumerate(HASH_COLUMNS)}
    if fmt.kind == "bits":
        k = fmt.width
        text = (reports.astype(np.uint8) + 48).reshape(-1).view(f"S{k}").astype(f"U{k}")
        return {REPORT_COLUMN: text}
    if fmt.kind == "subset":
        parts = reports.astype(np.int64).astype(str)
        joined = parts[:, 0].astype(object)
        for j in range(1, parts.shape[1]):
            joined = joined + ";" + parts[:, j].astype(object)
        return {REPORT_COLUMN: joined}
    if fmt.kind == "number":
        return {REPORT_COLUMN: np.asarray(reports, dtype=np.float64)}
    return {REPORT_COLUMN: np.asarray(reports, dtype=np.int64)}


def _write_chunk(f: IO[str], frame: pd.DataFrame, header: bool) -> None:
    frame.to_csv(f, index=False, header=header, lineterminator="\n", float_format=None)


def privatize_file(
    answers: Path,
    built: catalog.Built,
    seed: int,
    out: Path,
    *,
    column: str,
    labels: list[str] | None,
    keep: Sequence[str] = (),
    show_progress: bool = True,
    system: bool = False,
) -> Privatized:
    """Privatise the answers in ``column`` of ``answers`` into the reports file ``out``
    (written whole at the end, or not at all), ``keep`` columns copied beside them; chunk
    ``b`` of :data:`CHUNK` answers draws from :func:`block_generator`, or with ``system``
    from the operating system's generator (``seed`` is then unused)."""
    fmt = report_format(built)
    mech = built.mechanism
    names = list(HASH_COLUMNS) if fmt.kind == "hash" else [REPORT_COLUMN]
    clash = [c for c in keep if c in names]
    if clash:
        raise LdpSimError(f"--keep: got {clash[0]!r}, expected columns not named like the reports ({', '.join(names)})")
    rows = 0
    size = max(1, os.path.getsize(answers))
    wanted = list(dict.fromkeys([column, *keep]))
    index = pd.Index(labels) if labels is not None else None
    with atomic_writer(out, "w") as f, _progress.bar(size, "privatize", "B", show=show_progress) as _:
        done = 0
        header = True
        for start, frame, read in _chunks(answers, wanted, "ANSWERS"):
            gen: Any = SystemRandom() if system else block_generator(seed, start // CHUNK)
            if fmt.categorical:
                assert index is not None
                vals = _text(frame, column, start, "ANSWERS", "an answer")
                codes = index.get_indexer(vals)
                i = _first_bad(codes >= 0)
                if i is not None:
                    raise _fail("ANSWERS", start + i, column, vals[i], "one of the labels (--labels)")
                reports = mech.privatize(codes, gen)
            else:
                vals = _text(frame, column, start, "ANSWERS", "a number")
                reports = mech.privatize(numbers(vals, start, column, "ANSWERS", "a finite number"), gen)
            table = pd.DataFrame(_format_chunk(fmt, reports))
            for c in keep:
                table[c] = frame[c].to_numpy()
            _write_chunk(f, table, header)
            header = False
            rows += len(frame)
            _progress.advance(read - done)
            done = read
        if header:  # no answers at all
            raise LdpSimError(f"ANSWERS: got {str(answers)!r} with a header only, expected at least one answer")
    return Privatized(rows, labels, built.spec, names + list(keep))


# ------------------------------------------------------------------------------ analyse
@dataclass
class Sums:
    """What the server keeps of a set of reports: their number and the oracle's statistic
    (categorical), or the mean and the sum of squared deviations of the reports (numeric,
    merged chunk by chunk as Chan, Golub and LeVeque do, so no cancellation)."""

    n: int = 0
    statistic: NDArray[np.int64] | None = None
    mean: float = 0.0
    m2: float = 0.0

    def add(self, stat: NDArray[Any] | None, y: NDArray[np.float64] | None, n: int) -> None:
        if stat is not None:
            s = np.asarray(stat, dtype=np.int64)
            self.statistic = s if self.statistic is None else self.statistic + s
        if y is not None and y.size:
            mean = float(y.mean())
            m2 = float(np.sum((y - mean) ** 2))
            total = self.n + n
            delta = mean - self.mean
            self.mean += delta * n / total
            self.m2 += m2 + delta * delta * self.n * n / total
        self.n += n

    @property
    def variance(self) -> float:
        """The unbiased sample variance of the reports."""
        return self.m2 / (self.n - 1) if self.n > 1 else math.nan


@dataclass
class Weighted:
    """Running sums of the Hajek estimate with each report its own PSU (one stratum):
    ``sum w``, ``sum w u``, ``sum w^2``, ``sum w^2 u``, ``sum w^2 u^2`` with ``u`` each
    report's unbiased contribution (a k-vector: ``invert`` of its unit statistic; numeric:
    the report)."""

    n: int = 0
    w: float = 0.0
    wu: NDArray[np.float64] | float = 0.0
    w2: float = 0.0
    w2u: NDArray[np.float64] | float = 0.0
    w2u2: NDArray[np.float64] | float = 0.0

    def add(self, w: NDArray[np.float64], u: NDArray[np.float64]) -> None:
        w2 = w * w
        self.n += int(w.size)
        self.w += float(w.sum())
        self.wu = self.wu + w @ u
        self.w2 += float(w2.sum())
        self.w2u = self.w2u + w2 @ u
        self.w2u2 = self.w2u2 + w2 @ (u * u)

    def estimate(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The Hajek estimate ``sum w u / sum w`` and its linearised variance
        ``n/(n-1) sum_i z_i^2``, ``z_i = w_i (u_i - theta) / W`` (sum z_i = 0), as
        :func:`ldpsim.analyst.survey_design.hajek` gives it with one PSU per report."""
        theta = np.atleast_1d(np.asarray(self.wu, dtype=np.float64)) / self.w
        squares = (
            np.atleast_1d(np.asarray(self.w2u2, dtype=np.float64))
            - 2.0 * theta * np.atleast_1d(np.asarray(self.w2u, dtype=np.float64))
            + theta * theta * self.w2
        ) / (self.w * self.w)
        factor = self.n / (self.n - 1.0) if self.n > 1 else math.nan
        return theta, np.clip(factor * squares, 0.0, None)


@dataclass
class Collected:
    """A reports file read: all reports, each group's (first-seen order), weighted sums."""

    built: catalog.Built
    format: Format
    all: Sums
    groups: dict[str, Sums] = field(default_factory=dict)
    weighted: Weighted | None = None
    fast: bool = False  # read by the raw-bytes reader
    #: the anytime-valid uniformity test on every report in file order (``sequential`` with
    #: an oracle whose statistic is not output counts)
    bets: BettingProcess | None = None


#: Lines per block of the raw-bytes reader of bit strings (a multiple of 8; 1 MB at k = 64,
#: so a block's passes stay in the processor's cache).
_BIT_ROWS = 1 << 14


def _fill(f: IO[bytes], view: memoryview) -> int:
    """Bytes read into ``view``: as many as it holds, fewer only at the end of the file."""
    got = 0
    while got < len(view):
        part = f.readinto(view[got:])  # type: ignore[attr-defined]
        if not part:
            break
        got += part
    return got


class _BitLines:
    """The counts of 1s per column of lines of ``k`` ASCII ``0``/``1`` and ``\\n``, eight
    lines at a time as ``k + 1`` 64-bit words. In each group of eight lines byte ``b``
    belongs to column ``b mod (k + 1)``. XOR with the expected bytes (``0x30`` for data,
    ``0x0A`` for the newline) leaves each data byte's bit (0 or 1) and 0 at the newlines
    when the lines are regular; the OR of all those words over the block says whether any
    byte strays beyond that (one reduction, no temporary), and up to 255 groups are added
    as words with no carry between bytes (each byte's sum stays below 256), then folded
    back onto the columns. The masks are bytes viewed as words, so the result does not
    depend on the machine's byte order."""

    def __init__(self, k: int) -> None:
        self.k, self.width = k, k + 1
        data = (np.arange(8 * self.width) % self.width) < k
        self.expect = np.where(data, 0x30, 0x0A).astype(np.uint8).view(np.uint64)
        self.stray = np.where(data, 0xFE, 0xFF).astype(np.uint8).view(np.uint64)  # bits no regular byte leaves
        self._y = np.empty((_BIT_ROWS // 8, self.width), np.uint64)
        self.positions = np.zeros(8 * self.width, np.int64)  # 1s per byte of a group of eight lines
        self.rest = np.zeros(k, np.int64)  # 1s of the lines after the last whole group

    def add(self, buf: bytearray, rows: int) -> bool:
        """Count the first ``rows`` lines of ``buf``; False if any of them is irregular."""
        groups = rows // 8
        if groups:
            w = np.frombuffer(buf, np.uint64, count=groups * self.width).reshape(groups, self.width)
            y = self._y[:groups]
            np.bitwise_xor(w, self.expect, out=y)
            if (np.bitwise_or.reduce(y, axis=0) & self.stray).any():
                return False
            whole = groups // 255 * 255
            if whole:
                sums = y[:whole].reshape(-1, 255, self.width).sum(axis=1)
                self.positions += sums.view(np.uint8).sum(axis=0, dtype=np.int64)
            if whole < groups:
                self.positions += y[whole:].sum(axis=0).view(np.uint8).astype(np.int64)
        left = rows - 8 * groups
        if left:
            a = np.frombuffer(buf, np.uint8, count=rows * self.width)[8 * groups * self.width :].reshape(
                left, self.width
            )
            bits = a[:, : self.k]
            if not (a[:, self.k] == 10).all() or bits.min() < 48 or bits.max() > 49:
                return False
            self.rest += bits.sum(axis=0, dtype=np.int64) - 48 * left
        return True

    def counts(self) -> NDArray[np.int64]:
        return self.positions.reshape(8, self.width).sum(axis=0)[: self.k] + self.rest


def _fast_bits(path: Path, column: str, k: int, mech: Any, show: bool) -> Sums | None:
    """The statistic of a file of one column of bit strings, every line ``k`` characters 0/1
    and ``\n``, read as raw bytes into one reused buffer (:class:`_BitLines`); None at the
    first irregularity (the chunked reader then reads the file and names the bad row)."""
    width = k + 1
    with open_input(path) as f:
        head = f.readline()
        if head.decode("utf-8", "replace").strip() not in (column, "\ufeff" + column):
            return None
        size = max(1, os.path.getsize(path))
        sums = Sums()
        lines = _BitLines(k)
        buf = bytearray(width * _BIT_ROWS + 1)  # one byte more: a last line's missing newline
        with _progress.bar(size, "analyse", "B", show=show):
            while True:
                got = _fill(f, memoryview(buf)[: width * _BIT_ROWS])
                if not got:
                    break
                read = got
                if got % width:
                    if got % width == k and buf[got - 1] != 10:  # the last line without its newline
                        buf[got] = 10
                        got += 1
                    else:
                        return None
                if not lines.add(buf, got // width):
                    return None
                sums.n += got // width
                _progress.advance(read)
                if read < width * _BIT_ROWS:
                    break
        sums.statistic = lines.counts()
        return sums if sums.n else None


#: Bytes read at a time by the raw-bytes reader of integer reports.
_BLOCK = 1 << 21
#: Digits of the largest integer :data:`_INTEGER` allows.
_DIGITS = 18


def _integer_lines(buf: bytes) -> NDArray[np.int64] | None:
    """The integers of ``buf``, lines of 1 to 18 ASCII digits each ending in ``\\n``, parsed
    with numpy (no Python per row: one pass per digit position over the lines); None at
    anything else (an empty line, a sign, a ``\\r``)."""
    a = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    if np.count_nonzero((a < 48) | (a > 57)) != ends.size:  # anything but digits and newlines
        return None
    width = np.diff(ends, prepend=-1) - 1
    top = int(width.max())
    if width.min() < 1 or top > _DIGITS:
        return None
    values = np.zeros(ends.size, dtype=np.int64)
    for d in range(top):  # the digit d places before each line's end, where the line has one
        digit = a[np.maximum(ends - 1 - d, 0)].astype(np.int64) - 48
        values += np.where(width > d, digit, 0) * (10**d)
    return values


def _blocks(f: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """``(whole lines, bytes read)`` of ``f`` in blocks of about :data:`_BLOCK` bytes, a
    line cut at a block's end carried into the next; the last line gets its newline."""
    rest = b""
    while True:
        block = f.read(_BLOCK)
        if not block:
            if rest:
                yield (rest if rest.endswith(b"\n") else rest + b"\n"), 0
            return
        buf = rest + block
        cut = buf.rfind(b"\n") + 1
        buf, rest = buf[:cut], buf[cut:]
        yield buf, len(block)


def _fast_symbols(path: Path, column: str, top: int, mech: Any, show: bool) -> Sums | None:
    """The statistic of a file of one column of output symbols, integers ``0..top-1`` one
    per line ending in ``\\n``, read as raw bytes in blocks; None at the first irregularity
    (the chunked reader then reads the file and names the bad row)."""
    with open_input(path) as f:
        head = f.readline()
        if head.decode("utf-8", "replace").strip() not in (column, "\ufeff" + column):
            return None
        size = max(1, os.path.getsize(path))
        sums = Sums()
        out: NDArray[np.int64] | None = None
        with _progress.bar(size, "analyse", "B", show=show):
            for buf, read in _blocks(f):
                if not buf:
                    continue
                values = _integer_lines(buf)
                if values is None or values.max() >= top:
                    return None
                stat = np.asarray(mech.statistic(values), dtype=np.int64)
                out = stat if out is None else out + stat
                sums.n += int(values.size)
                _progress.advance(read)
        sums.statistic = out
        return sums if sums.n else None


#: Longest group label (bytes) the raw-bytes reader of bit strings with groups takes.
_LABEL_BYTES = 256


def _bits_and_labels(buf: bytes, k: int) -> tuple[NDArray[np.uint8], NDArray[Any]] | None:
    """Lines ``BITS,LABEL`` of ``buf``: the ``k`` bits of each (the characters ``0``/``1``,
    48/49) and its label as bytes
    (1 to :data:`_LABEL_BYTES` bytes, no comma, quote, carriage return or NUL); None at
    anything else."""
    a = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    if ends.size == 0 or np.count_nonzero(a == 44) != ends.size or np.count_nonzero((a == 34) | (a == 13) | (a == 0)):
        return None
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    sizes = ends - starts - k - 1  # the label's bytes
    if sizes.min() < 1 or sizes.max() > _LABEL_BYTES or not (a[starts + k] == 44).all():
        return None
    bits = a[starts[:, None] + np.arange(k)]
    if bits.min() < 48 or bits.max() > 49:
        return None
    width = int(sizes.max())
    at = starts[:, None] + k + 1 + np.arange(width)
    inside = np.arange(width) < sizes[:, None]
    labels = np.where(inside, a[np.minimum(at, a.size - 1)], 0).astype(np.uint8)
    return bits, np.ascontiguousarray(labels).view(f"S{width}").ravel()


def _fast_bits_groups(path: Path, column: str, groups: str, k: int, show: bool) -> tuple[Sums, dict[str, Sums]] | None:
    """The statistic of a file of two columns, bit strings then a group label, read as raw
    bytes: all reports' and each group's (first-seen order); None at the first irregularity
    (a quoted field, a label that is not UTF-8: the chunked reader then reads the file)."""
    with open_input(path) as f:
        head = f.readline().decode("utf-8", "replace").strip().removeprefix("\ufeff")
        if head != f"{column},{groups}":
            return None
        everyone = Sums(statistic=np.zeros(k, dtype=np.int64))
        found: dict[bytes, Sums] = {}
        with _progress.bar(max(1, os.path.getsize(path)), "analyse", "B", show=show):
            for buf, read in _blocks(f):
                if not buf:
                    continue
                parsed = _bits_and_labels(buf, k)
                if parsed is None:
                    return None
                bits, labels = parsed
                names, first, codes = np.unique(labels, return_index=True, return_inverse=True)
                order = np.argsort(codes, kind="stable")
                bounds = np.searchsorted(codes[order], np.arange(names.size))
                sizes = np.diff(np.append(bounds, codes.size))
                # sums of the characters (a block has fewer than 2^31 / 49 lines), less 48 per line
                per_group = np.add.reduceat(bits[order], bounds, axis=0, dtype=np.int32).astype(np.int64)
                per_group -= 48 * sizes[:, None]
                for j in np.argsort(first, kind="stable"):  # first-seen order
                    name = bytes(names[j])
                    if name not in found:
                        if len(found) >= MAX_GROUPS:
                            return None  # the chunked reader says so
                        found[name] = Sums(statistic=np.zeros(k, dtype=np.int64))
                    found[name].add(per_group[j], None, int(sizes[j]))
                everyone.add(per_group.sum(axis=0), None, int(codes.size))
                _progress.advance(read)
    try:
        out = {name.decode("utf-8"): sums for name, sums in found.items()}
    except UnicodeDecodeError:
        return None
    return (everyone, out) if everyone.n else None


def collect(
    path: Path,
    built: catalog.Built,
    *,
    column: str | None,
    groups: str | None = None,
    weights: str | None = None,
    show_progress: bool = True,
    fast: bool = True,
    sequential: bool = False,
) -> Collected:
    """Read the reports file ``path`` of ``built``'s mechanism in chunks: the statistic (or
    moments) of all reports, of each group of column ``groups`` and the weighted sums of
    column ``weights``. With ``sequential`` and an oracle whose statistic is not output
    counts, also the betting test of uniformity on every report in file order (the chunked
    reader then reads every file). The first bad row is one line naming it
    (``REPORTS: row N, column C: ...``)."""
    option = "REPORTS"
    fmt = report_format(built)
    mech = built.mechanism
    bets = sequential and fmt.categorical and getattr(mech, "output_size", None) is None
    fast = fast and not bets
    header = _read_header(path, option)
    if fmt.kind == "hash":
        if column is not None:
            raise LdpSimError(f"--column: got {column!r}, expected none for local hashing (its columns are fixed)")
        missing = [c for c in HASH_COLUMNS if c not in header]
        if missing:
            raise LdpSimError(f"{option}: got columns {', '.join(header)}, expected {', '.join(HASH_COLUMNS)}")
        col = HASH_COLUMNS[-1]
        wanted = list(HASH_COLUMNS)
    else:
        col = pick_column(header, column, option, REPORT_COLUMN)
        wanted = [col]
    for name, option_name in ((groups, "--groups"), (weights, "--weights")):
        if name is not None:
            if name not in header:
                raise LdpSimError(
                    f"{option_name}: got {name!r}, expected one of the file's columns: {', '.join(header)}"
                )
            if name in wanted:
                raise LdpSimError(f"{option_name}: got {name!r}, expected a column other than the reports'")
            wanted.append(name)
    if fast and fmt.kind == "bits" and len(header) == 1 and groups is None and weights is None:
        sums = _fast_bits(path, col, fmt.width, mech, show_progress)
        if sums is not None:
            return Collected(built, fmt, sums, fast=True)
    if fast and fmt.kind == "bits" and header == [col, groups] and weights is None:
        assert groups is not None
        both = _fast_bits_groups(path, col, groups, fmt.width, show_progress)
        if both is not None:
            return Collected(built, fmt, both[0], both[1], fast=True)
    if fast and fmt.kind == "symbol" and len(header) == 1 and groups is None and weights is None:
        sums = _fast_symbols(path, col, fmt.width, mech, show_progress)
        if sums is not None:
            return Collected(built, fmt, sums, fast=True)
    out = Collected(built, fmt, Sums())
    affine = affine_estimate(mech) if (weights is not None and fmt.categorical) else None
    if bets:
        out.bets = BettingProcess(term_ranges(mech))
    if weights is not None:
        out.weighted = Weighted()
    size = max(1, os.path.getsize(path))
    with _progress.bar(size, "analyse", "B", show=show_progress):
        done = 0
        for start, frame, read in _chunks(path, wanted, option):
            reports = parse_reports(frame, start, built, fmt, col, option)
            n = len(frame)
            if groups is not None:
                labels = _text(frame, groups, start, option, "a group label")
            if weights is not None:
                w = numbers(
                    _text(frame, weights, start, option, "a weight > 0"), start, weights, option, "a weight > 0", True
                )
            if fmt.categorical:
                out.all.add(mech.statistic(reports), None, n)
            else:
                out.all.add(None, reports, n)
            if out.bets is not None:
                out.bets.update(report_terms(mech, reports) - 1.0 / mech.k)
            if groups is not None:
                codes, uniques = pd.factorize(labels)
                for j, g in enumerate(uniques.tolist()):
                    part = reports[codes == j]
                    if g not in out.groups:
                        if len(out.groups) >= MAX_GROUPS:
                            raise LdpSimError(
                                f"--groups: got more than {MAX_GROUPS} groups in {groups!r}, expected fewer"
                            )
                        out.groups[g] = Sums()
                    if fmt.categorical:
                        out.groups[g].add(mech.statistic(part), None, len(part))
                    else:
                        out.groups[g].add(None, part, len(part))
            if out.weighted is not None:
                if affine is not None:
                    a, b = affine
                    u = np.asarray(mech.unit_statistics(reports), dtype=np.float64) @ a.T + b
                else:
                    u = np.asarray(reports, dtype=np.float64)[:, None]
                out.weighted.add(w, u)
            _progress.advance(read - done)
            done = read
    if out.all.n == 0:
        raise LdpSimError(f"{option}: got {str(path)!r} with a header only, expected at least one report")
    return out


def statistic_of_reports(built: catalog.Built, reports: NDArray[Any]) -> NDArray[np.int64]:
    """``mechanism.statistic`` of reports held in memory (what a simulated run computes)."""
    return np.asarray(built.mechanism.statistic(reports), dtype=np.int64)


def check_labels(labels: Sequence[str], k: int, option: str = "--labels") -> list[str]:
    """``k`` distinct, non-empty labels."""
    out = [str(x) for x in labels]
    if len(out) != k or len(set(out)) != k or any(not x for x in out):
        raise LdpSimError(f"{option}: got {len(out)} labels ({', '.join(out)[:80]}), expected {k} distinct labels")
    return out


def seed_value(seed: int | None) -> int:
    """``--seed``, or fresh entropy."""
    return int(np.random.SeedSequence().entropy) if seed is None else v.seed(seed, "--seed")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the run's estimates and tests
#: Reports a test may privatise to calibrate itself (an oracle without an exact aggregate
#: law, local hashing: every calibration draw privatises n reports).
CALIBRATION_REPORTS = 2_000_000


@dataclass
class Analysis:
    """The estimates (one row per category, or per mean, and scope) and the tests of a reports file."""

    estimates: pd.DataFrame
    tests: pd.DataFrame
    notes: list[str]
    labels: list[str]


def _frequency_rows(
    mech: Any, stat: NDArray[np.int64], n: int, alpha: float, labels: list[str], scope: str, group: str
) -> pd.DataFrame:
    ci = confidence_intervals(mech, stat, confidence=1.0 - alpha, n=n)
    est = frequency_estimate(mech, stat, n)
    return pd.DataFrame(
        {
            "scope": scope,
            "group": group,
            "category": labels,
            "estimate": est.estimate,
            "std_error": est.std_error,
            "ci_low": ci["ci_low"].to_numpy(),
            "ci_high": ci["ci_high"].to_numpy(),
            "projected": project_to_simplex(est.estimate),
            "reports": n,
        }
    )


def _mean_row(sums: Sums, alpha: float, scope: str, group: str) -> pd.DataFrame:
    se = math.sqrt(sums.variance / sums.n) if sums.n > 1 else math.nan
    half = float(special.ndtri(1.0 - alpha / 2.0)) * se
    return pd.DataFrame(
        {
            "scope": [scope],
            "group": [group],
            "category": ["mean"],
            "estimate": [sums.mean],
            "std_error": [se],
            "ci_low": [sums.mean - half],
            "ci_high": [sums.mean + half],
            "reports": [sums.n],
        }
    )


def _calibration_draws(mech: Any, n: int) -> int:
    """Calibration draws for a test at ``n`` reports: the default, or for an oracle without
    an exact aggregate law as many as :data:`CALIBRATION_REPORTS` allow (0: not run)."""
    if getattr(mech, "aggregate_exact", True) or getattr(mech, "output_size", None) is not None:
        return DRAWS
    draws = min(DRAWS, CALIBRATION_REPORTS // max(n, 1))
    return draws if draws >= 19 else 0


def _test_row(result: TestResult, scope: str) -> dict[str, Any]:
    return {"scope": scope, **result.as_dict(), "note": ""}


def _sequential_row(result: SequentialResult, scope: str, method: str) -> dict[str, Any]:
    """An anytime-valid test's row: its log e-value as the statistic and ``min(1, 1 / E)``
    (``E`` its largest value along the reports, where known) as the p-value, valid at every
    look."""
    top = result.log_e if result.log_e_max is None else max(result.log_e, result.log_e_max)
    return {
        "scope": scope,
        "test": result.test,
        "statistic": result.log_e,
        "p_value": float(min(1.0, math.exp(-top))) if top > -700 else 1.0,
        "alpha": result.alpha,
        "reject": result.reject,
        "method": method,
        "draws": 0,
        "note": "statistic: the log e-value; p-value: min(1, 1 / e-value), valid however often one looks",
    }


def _not_run(test: str, scope: str, alpha: float, why: str) -> dict[str, Any]:
    return {
        "scope": scope,
        "test": test,
        "statistic": math.nan,
        "p_value": math.nan,
        "alpha": alpha,
        "reject": None,
        "method": "not run",
        "draws": 0,
        "note": why,
    }


def analyse(
    collected: Collected, labels: list[str] | None, alpha: float, seed: int, stream: tuple[int, ...] = ()
) -> Analysis:
    """Estimates and tests of the reports ``collected`` (docs/analyse.md): unbiased
    frequencies with their plug-in standard errors and intervals at ``1 - alpha`` and their
    projection on the simplex (numeric: the mean); per group; weighted (Hajek); uniformity
    and, with groups, homogeneity (numeric, two groups: Welch's difference of means). The
    Monte Carlo p-values draw from ``default_rng(SeedSequence(seed, spawn_key=stream))``."""
    mech = collected.built.mechanism
    fmt = collected.format
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=stream))
    notes: list[str] = []
    frames: list[pd.DataFrame] = []
    tests: list[dict[str, Any]] = []
    groups = collected.groups
    if fmt.categorical:
        names = [str(x) for x in (labels if labels is not None else range(mech.k))]
        all_stat = collected.all.statistic
        assert all_stat is not None
        frames.append(_frequency_rows(mech, all_stat, collected.all.n, alpha, names, "all", ""))
        for g, s in groups.items():
            assert s.statistic is not None
            frames.append(_frequency_rows(mech, s.statistic, s.n, alpha, names, "group", g))
        draws = _calibration_draws(mech, collected.all.n)
        if draws:
            tests.append(
                _test_row(uniformity(mech, all_stat, n=collected.all.n, alpha=alpha, draws=draws, rng=gen), "all")
            )
        else:
            why = f"calibrating it would privatise more than {CALIBRATION_REPORTS:,} reports (no exact aggregate law)"
            tests.append(_not_run("uniformity", "all", alpha, why))
        if len(groups) >= 2:
            sizes = [s.n for s in groups.values()]
            draws = _calibration_draws(mech, max(sizes))
            if draws:
                stats = [s.statistic for s in groups.values()]
                result = homogeneity(mech, stats, sizes=sizes, alpha=alpha, draws=draws, rng=gen)  # type: ignore[arg-type]
                tests.append(_test_row(result, "groups"))
            else:
                tests.append(
                    _not_run("homogeneity", "groups", alpha, "calibrating it would privatise too many reports")
                )
        if getattr(mech, "output_size", None) is not None:  # output counts: the mixtures, free
            method = "e-value (mixture)"
            tests.append(_sequential_row(sequential_uniformity(mech, all_stat, alpha=alpha), "all", method))
            if len(groups) >= 2:
                stats = [s.statistic for s in groups.values()]
                seq = sequential_homogeneity(mech, stats, alpha=alpha)  # type: ignore[arg-type]
                tests.append(_sequential_row(seq, "groups", method))
        elif collected.bets is not None:
            seq = collected.bets.result("sequential uniformity", alpha)
            tests.append(_sequential_row(seq, "all", "e-value (betting, file order)"))
    else:
        names = ["mean"]
        frames.append(_mean_row(collected.all, alpha, "all", ""))
        for g, s in groups.items():
            frames.append(_mean_row(s, alpha, "group", g))
        if len(groups) == 2:
            (ga, a), (gb, b) = groups.items()
            se = math.sqrt(a.variance / a.n + b.variance / b.n) if min(a.n, b.n) > 1 else math.nan
            z = (a.mean - b.mean) / se if se > 0 else math.inf
            p = float(2.0 * special.ndtr(-abs(z)))
            result = TestResult(f"mean difference ({ga} - {gb})", z, p, alpha, "normal (Welch)", 0)
            tests.append(_test_row(result, "groups"))
        elif groups:
            tests.append(_not_run("mean difference", "groups", alpha, "Welch's test compares exactly two groups"))
    if collected.weighted is not None:
        theta, var = collected.weighted.estimate()
        errors = np.sqrt(var)
        spread = float(special.ndtri(1.0 - alpha / 2.0)) * errors
        frame = pd.DataFrame(
            {
                "scope": "weighted",
                "group": "",
                "category": names,
                "estimate": theta,
                "std_error": errors,
                "ci_low": theta - spread,
                "ci_high": theta + spread,
                "reports": collected.weighted.n,
            }
        )
        if fmt.categorical:
            frame.insert(7, "projected", project_to_simplex(theta))
        frames.append(frame)
        notes.append(
            "the weighted rows are Hajek estimates (sum w u / sum w) with their linearised variance, each report "
            "its own sampling unit; the tests ignore the weights"
        )
    columns = ["scope", "test", "statistic", "p_value", "alpha", "reject", "method", "draws", "note"]
    return Analysis(pd.concat(frames, ignore_index=True), pd.DataFrame(tests, columns=columns), notes, names)


# ------------------------------------------------------------------------------ a file of several questions
@dataclass(frozen=True)
class Question:
    """One question of an analysis file, checked: its reports file, mechanism, column,
    labels, level, groups and weights columns, and ``key`` (``questions[i]``) for messages."""

    key: str
    name: str
    path: Path
    built: catalog.Built
    column: str | None
    labels: list[str] | None
    alpha: float
    groups: str | None
    weights: str | None
    sequential: bool = False


@dataclass(frozen=True)
class AnalysisFile:
    """An analysis file (``kind = "analysis"``) read and checked: its name, seed (None: not
    given) and questions."""

    path: Path
    name: str
    description: str
    seed: int | None
    questions: list[Question]


def load_analysis(path: Path) -> AnalysisFile:
    """Read and check the analysis file ``path`` (docs/analyse.md, "Several questions in
    one file"): the TOML, every key (strict models), every mechanism and its labels, every
    reports file and the columns each question names, before any report is read. A problem
    is one line naming the file and the key."""
    # deferred: pydantic and the scenario loader, only for an analysis file (a CSV starts without them)
    from pydantic import ValidationError

    from ldpsim.sim.scenario.analysis_specs import AnalysisSpec  # deferred: as above
    from ldpsim.sim.scenario.common import first_error, read_scenario_text, read_toml  # deferred: as above

    text, where = read_scenario_text(path)
    raw = read_toml(text, where)
    if raw.get("kind") != "analysis":
        raise LdpSimError(f"{where}: kind: got {raw.get('kind')!r}, expected 'analysis' (a file of questions)")
    try:
        spec = AnalysisSpec.model_validate(raw)
    except ValidationError as exc:
        raise LdpSimError(f"{where}: {first_error(exc, model=AnalysisSpec)}") from None
    base = Path(path).parent
    questions: list[Question] = []
    try:
        for i, q in enumerate(spec.questions):
            key = f"questions[{i}]"
            if q.name in [p.name for p in spec.questions[:i]]:
                raise LdpSimError(f"{key}.name: got {q.name!r} twice, expected distinct question names")
            if q.reports is None and spec.reports is None:
                raise LdpSimError(f"{key}.reports: got nothing, expected a reports file (here or at the top level)")
            labels = list(q.labels) if q.labels is not None else None
            built = build(q.mechanism, k=len(labels) if labels is not None else None, option=f"{key}.mechanism")
            if labels is not None:
                if not report_format(built).categorical:
                    raise LdpSimError(f"{key}.labels: got {len(labels)} labels, expected none for a numeric mechanism")
                labels = check_labels(labels, int(built.mechanism.k), f"{key}.labels")
            name = q.reports if q.reports is not None else spec.reports
            assert name is not None  # checked above
            file = Path(name) if Path(name).is_absolute() else base / name
            option = f"{key}.reports" if q.reports is not None else "reports"
            if not file.is_file():
                raise LdpSimError(f"{option}: got {name!r}, expected a CSV file of reports (relative to the file)")
            header = _read_header(file, option)
            for column, what in ((q.column, "column"), (q.groups, "groups"), (q.weights, "weights")):
                if column is not None and column not in header:
                    raise LdpSimError(
                        f"{key}.{what}: got {column!r}, expected one of the columns of {name}: {', '.join(header)}"
                    )
            alpha = q.alpha if q.alpha is not None else spec.alpha
            questions.append(
                Question(key, q.name, file, built, q.column, labels, alpha, q.groups, q.weights, q.sequential)
            )
    except LdpSimError as exc:
        raise LdpSimError(f"{where}: {exc}") from None
    return AnalysisFile(Path(path), spec.name or Path(path).stem, spec.description, spec.seed, questions)


def _keyed(exc: LdpSimError, q: Question) -> LdpSimError:
    """A message of :func:`collect` (``REPORTS: ...``, ``--groups: ...``) with the
    question's key instead of the command's option."""
    text = str(exc)
    for option, key in (
        ("REPORTS", "reports"),
        ("--column", "column"),
        ("--groups", "groups"),
        ("--weights", "weights"),
    ):
        if text.startswith(option + ":"):
            where = f" ({q.path.name})" if option == "REPORTS" else ""
            return LdpSimError(f"{q.key}.{key}{where}:{text[len(option) + 1 :]}")
    return LdpSimError(f"{q.key}: {text}")


def analyse_questions(
    plan: AnalysisFile, seed: int, show_progress: bool = True
) -> list[tuple[Question, int, Analysis]]:
    """Each question of ``plan`` read and analysed as ``ldpsim analyse`` does one reports
    file: ``(question, reports read, analysis)``; question ``i``'s Monte Carlo p-values draw
    from ``SeedSequence(seed, spawn_key=(i,))``."""
    out = []
    for i, q in enumerate(plan.questions):
        try:
            got = collect(
                q.path,
                q.built,
                column=q.column,
                groups=q.groups,
                weights=q.weights,
                show_progress=show_progress,
                sequential=q.sequential,
            )
        except LdpSimError as exc:
            raise _keyed(exc, q) from None
        out.append((q, got.all.n, analyse(got, q.labels, q.alpha, seed, stream=(i,))))
    return out


# ------------------------------------------------------------------------------ a simulated run's own reports
def catalog_mechanism(mechanism: Any) -> catalog.Built:
    """The catalog spec of a built frequency oracle: the entry of its class whose
    parameters, read off the object, rebuild an equal mechanism (same class and repr)."""
    for name in catalog.names():
        e = catalog.entry(name)
        if not ({"finite", "oracle"} & e.tags) or "broken" in e.tags:
            continue
        params = {p: getattr(mechanism, p) for p in e.params if hasattr(mechanism, p)}
        try:
            built = catalog.parse(e.spec(params))
        except (LdpSimError, TypeError):
            continue
        if type(built.mechanism) is type(mechanism) and repr(built.mechanism) == repr(mechanism):
            return built
    raise LdpSimError(f"mechanism: got {mechanism!r}, expected a frequency oracle of the catalog")


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def replay_reports(run_dir: str | os.PathLike[str], folder: str | os.PathLike[str], replication: int = 0) -> Path:
    """Write the reports the server of replication ``replication`` of the survey run
    ``run_dir`` received, one CSV per question in the format of docs/analyse.md
    (``folder/<question>.csv``, in the order the server received them), and
    ``folder/analysis.toml`` naming them with their mechanisms and labels; returns that file.
    ``ldpsim analyse folder/analysis.toml`` then gives the run's own estimates (results.csv).

    The replication is run again from the run's scenario.toml and seed with ``[server]
    keep_reports = true``: a replication is a function of (scenario, seed, index), and keeping
    the reports changes none of its draws, so none of its estimates (only the engine's count
    of stored reports; tests/test_analyse.py checks the estimates against the run's
    results.csv). Individual mode, questions of frequency oracles (a numeric question's
    server keeps moments, not reports), no attackers and no privacy tiers. The files are
    written whole at the end; ``folder`` must be new or empty."""
    # deferred: the simulation (SimPy) and the run layer, only to replay a run
    from ldpsim._files import OutputFolder
    from ldpsim.runs import read_metadata  # deferred: as above
    from ldpsim.sim.engine import Replication  # deferred: as above
    from ldpsim.sim.scenario import load_scenario  # deferred: as above
    from ldpsim.sim.servers import Server  # deferred: as above

    run = Path(run_dir)
    try:
        meta = read_metadata(run)
    except (OSError, ValueError) as exc:
        raise LdpSimError(f"run_dir: got {str(run)!r}, expected a run folder with its metadata.json ({exc})") from None
    if meta.get("kind", "survey") != "survey" or meta.get("mode") != "individual":
        raise LdpSimError(
            f"run_dir: got a {meta.get('kind')} run in {meta.get('mode')} mode, "
            "expected a survey run in individual mode"
        )
    replications = int(meta["replications"])
    if not (isinstance(replication, int) and 0 <= replication < replications):
        raise LdpSimError(f"replication: got {replication!r}, expected an integer in 0..{replications - 1}")
    scenario = load_scenario(run / "scenario.toml")
    if scenario.attackers or scenario.tiers is not None:
        raise LdpSimError(
            "run_dir: got a run with attackers or privacy tiers, expected honest reports of one mechanism"
        )
    spec = scenario.spec
    server_spec = spec.server.model_copy(update={"keep_reports": True, "max_reports": 2**62})
    kept = scenario.rebuild(spec.model_copy(update={"server": server_spec}))
    rep = Replication(kept, replication, int(meta["seed"]))  # as the run ran it (runs.run_study)
    rep.run()
    names = [name for name, _ in scenario.mechanisms]
    questions = scenario.questions.questions if scenario.questions is not None else [scenario] * len(names)
    labels = [getattr(q, "labels", None) for q in questions]  # one mechanism, or several compared: the scenario's
    files: dict[str, bytes] = {}
    seed = int(meta["seed"])
    title = f"{meta.get('scenario', 'run')}-replication-{replication}"
    toml = [
        'kind = "analysis"',
        f"name = {_toml_string(title)}",
        f"description = {_toml_string(f'The reports replication {replication} of the run received (seed {seed}).')}",
        f"seed = {seed}",
    ]
    for j, (name, server) in enumerate(zip(names, rep.servers)):
        if not isinstance(server, Server) or labels[j] is None:
            raise LdpSimError(f"run_dir: question {name!r} keeps no reports (a numeric question keeps their moments)")
        built = catalog_mechanism(server.mechanism)
        reports, _ = server.stored_reports()
        assert reports is not None and not server.truncated
        fmt = report_format(built)
        file = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.csv"
        text = pd.DataFrame(_format_chunk(fmt, reports)).to_csv(index=False, lineterminator="\n")
        files[file] = text.encode("utf-8")
        toml += [
            "",
            "[[questions]]",
            f"name = {_toml_string(name)}",
            f"reports = {_toml_string(file)}",
            f"mechanism = {_toml_string(built.spec)}",
            f"labels = [{', '.join(_toml_string(str(x)) for x in labels[j] or ())}]",
        ]
    files["analysis.toml"] = ("\n".join(toml) + "\n").encode("utf-8")
    with OutputFolder(folder, option="folder") as out:
        assert out.work is not None
        for file, data in files.items():
            (out.work / file).write_bytes(data)
    return Path(folder) / "analysis.toml"
