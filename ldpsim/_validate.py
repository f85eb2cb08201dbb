"""Validation at the public boundary; raises :class:`ldpsim.errors.LdpSimError`.

Inside the package the validated values are trusted.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import LdpSimError, invalid

#: Tolerance on "sums to one" for probability vectors and matrix rows.
SUM_TOL = 1e-9

#: Largest total count (clients) accepted, so that int64 sums cannot overflow.
MAX_TOTAL = 2**62


def as_float(value: object, name: str, expected: str) -> float:
    """A real scalar (Python or numpy number, or a 0-d numeric array) as a float; bools,
    strings and arrays are refused with ``name: got VALUE, expected EXPECTED``. NaN and
    +-inf pass: the caller checks the range."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        try:
            arr = np.asarray(value)
        except Exception:  # pragma: no cover - defensive
            raise invalid(name, value, expected) from None
        if (
            arr.ndim != 0
            or arr.dtype == bool
            or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating))
        ):
            raise invalid(name, value, expected)
        value = arr.item()
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        raise invalid(name, value, expected) from None


def real(value: object, name: str, expected: str = "a real number") -> float:
    """A real scalar that is not NaN (+-inf pass: the caller checks the range)."""
    out = as_float(value, name, expected)
    if math.isnan(out):
        raise invalid(name, value, expected)
    return out


def positive(value: object, name: str, *, finite: bool = True) -> float:
    """A number > 0: finite (``a finite number > 0``) unless ``finite=False``
    (``a number > 0``, ``inf`` allowed)."""
    expected = "a finite number > 0" if finite else "a number > 0"
    x = as_float(value, name, expected)
    if math.isnan(x) or x <= 0 or (finite and math.isinf(x)):
        raise invalid(name, value, expected)
    return x


def real_array(value: ArrayLike, name: str, expected: str = "real numbers") -> NDArray[np.float64]:
    """A float64 array (any shape) from real numbers; anything else (strings, complex,
    objects, bools) is refused. NaN and +-inf pass: see :func:`finite_array`."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise invalid(name, value, expected) from None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise invalid(name, value, expected)
    return arr.astype(np.float64)


def finite_array(value: ArrayLike, name: str, expected: str = "finite real numbers") -> NDArray[np.float64]:
    """A float64 array (any shape) of finite real numbers; one message, ``expected``, for
    every refusal (not real, NaN or +-inf)."""
    arr = real_array(value, name, expected)
    if not np.all(np.isfinite(arr)):
        raise invalid(name, value, expected)
    return arr


def epsilon(value: object, name: str = "eps", *, allow_inf: bool = False) -> float:
    """A privacy level: a number >= 0 (finite unless ``allow_inf``)."""
    expected = "a number >= 0" if allow_inf else "a finite number >= 0"
    eps = as_float(value, name, expected)
    if math.isnan(eps) or eps < 0 or (math.isinf(eps) and not allow_inf):
        raise invalid(name, value, expected)
    return eps


def delta(value: object, name: str = "delta") -> float:
    """A delta in [0, 1]."""
    expected = "a number in [0, 1]"
    d = as_float(value, name, expected)
    if not (0.0 <= d <= 1.0):  # also rejects NaN
        raise invalid(name, value, expected)
    return d


def eps_array(eps: ArrayLike, name: str = "eps") -> tuple[NDArray[np.float64], bool]:
    """Validated eps values (>= 0, inf allowed) as a float array, and whether ``eps`` was a
    scalar; a bad element is named ``eps[i]``. The one way ``delta(eps)`` methods take a
    scalar or an array."""
    if np.ndim(eps) == 0:
        return np.array(epsilon(eps, name, allow_inf=True), dtype=np.float64), True
    arr = real_array(eps, name, "numbers >= 0")
    bad = np.flatnonzero(~(arr.reshape(-1) >= 0))  # negative or NaN
    if bad.size:
        i = int(bad[0])
        raise invalid(f"{name}[{i}]", float(arr.reshape(-1)[i]), "a number >= 0")
    return arr, False


def over_deltas(values: object, scalar: Callable[[float], float]) -> Any:
    """``scalar(d)`` for one delta in [0, 1], or elementwise over an array of them (floats of
    the same shape); each element is checked, and named ``delta[i]`` when it is wrong. The
    one way a mechanism's ``epsilon(delta)`` takes a scalar or an array."""
    if np.ndim(cast(Any, values)) == 0:
        return scalar(delta(values, "delta"))
    arr = np.asarray(values)
    flat = [delta(d, f"delta[{i}]") for i, d in enumerate(arr.reshape(-1).tolist())]
    return np.array([scalar(d) for d in flat], dtype=np.float64).reshape(arr.shape)


def integer(value: object, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer within optional bounds (bools are rejected)."""
    parts = []
    if minimum is not None:
        parts.append(f">= {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    expected = "an integer" + (" " + " and ".join(parts) if parts else "")
    if isinstance(value, bool):
        raise invalid(name, value, expected)
    if isinstance(value, (numbers.Integral, np.integer)):
        out = int(value)
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        out = int(value)
    else:
        raise invalid(name, value, expected)
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        raise invalid(name, value, expected)
    return out


#: Seeds are integers in [0, 2^128): the entropy numpy draws for a fresh SeedSequence, and
#: short enough to sit in a file name.
MAX_SEED = 2**128 - 1


def seed(value: object, name: str = "seed") -> int:
    """A root seed: an integer in ``[0, 2^128)``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (numbers.Integral, np.integer))
        or not 0 <= int(value) <= MAX_SEED
    ):
        raise invalid(name, value, "an integer in [0, 2^128)")
    return int(value)


#: Largest alphabet (number of input symbols k) of a finite mechanism or frequency oracle,
#: 2^22 = 4,194,304: each keeps its k input labels (randomized response its k output labels
#: too) as Python objects and builds k-length arrays (a row, the frequencies, the counts),
#: about 0.7 GB of memory at the bound (measured: randomized response 0.70 GB, Hadamard
#: response 0.86 GB); at 2^31 the labels alone would take 70 GB.
MAX_ALPHABET = 1 << 22


def alphabet_size(value: object, name: str = "k") -> int:
    """An alphabet size: an integer in ``2..MAX_ALPHABET``."""
    k = integer(value, name, minimum=2)
    if k > MAX_ALPHABET:
        raise invalid(
            name,
            value,
            f"an integer in 2..{MAX_ALPHABET:,} (2^22: a mechanism keeps its k labels and k-length arrays "
            "in memory, about 0.7 GB at the bound)",
        )
    return k


def probability_vector(value: ArrayLike, name: str, *, size: int | None = None) -> NDArray[np.float64]:
    """A 1-D vector of finite entries >= 0 that sums to one within ``SUM_TOL``."""
    where = f" of length {size}" if size is not None else ""
    expected = f"a probability vector{where} (entries >= 0, summing to 1 within {SUM_TOL:g})"
    p = real_array(value, name, expected)
    if p.ndim != 1 or p.size == 0 or (size is not None and p.size != size):
        raise invalid(name, value, expected)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise invalid(name, value, expected)
    if abs(math.fsum(p.tolist()) - 1.0) > SUM_TOL:
        raise invalid(name, value, expected)
    return p


def stochastic_matrix(value: ArrayLike, name: str = "Q") -> NDArray[np.float64]:
    """A k x m matrix (k >= 2, m >= 1) of finite entries >= 0 whose rows sum to one."""
    expected = f"a row-stochastic matrix with at least 2 rows (entries >= 0, rows summing to 1 within {SUM_TOL:g})"
    q = real_array(value, name, expected)
    if q.ndim != 2 or q.shape[0] < 2 or q.shape[1] < 1:
        raise invalid(name, value, expected)
    bad_entry = np.argwhere(~np.isfinite(q))
    if bad_entry.size:
        i, j = bad_entry[0]
        raise invalid(f"{name}[{i}, {j}]", float(q[i, j]), "a finite entry >= 0")
    neg = np.argwhere(q < 0)
    if neg.size:
        i, j = neg[0]
        raise invalid(f"{name}[{i}, {j}]", float(q[i, j]), expected)
    sums = q.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOL)
    if bad.size:
        raise LdpSimError(
            f"{name}: got row {bad[0]} summing to {float(sums[bad[0]])!r}, "
            f"expected rows summing to 1 within {SUM_TOL:g}"
        )
    return q


def counts(value: ArrayLike, name: str, *, size: int | None = None) -> NDArray[np.int64]:
    """A 1-D vector of non-negative integer counts (int64)."""
    where = f" of length {size}" if size is not None else ""
    expected = f"a vector{where} of non-negative integers"
    arr = np.asarray(value)
    if arr.ndim != 1 or (size is not None and arr.size != size):
        raise invalid(name, value, expected)
    if arr.dtype == bool:
        raise invalid(name, value, expected)
    if np.issubdtype(arr.dtype, np.integer):
        out = arr.astype(np.int64)
    elif np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)) or np.any(np.abs(arr) > 2**62):
            raise invalid(name, value, expected)
        out = arr.astype(np.int64)
    else:
        raise invalid(name, value, expected)
    if np.any(out < 0):
        raise invalid(name, value, expected)
    if out.size and int(out.max()) > MAX_TOTAL // out.size and sum(out.tolist()) > MAX_TOTAL:
        raise invalid(name, f"counts summing to {sum(out.tolist())}", f"a total of at most {MAX_TOTAL} (2^62)")
    return out


def symbol_indices(value: ArrayLike, k: int, name: str = "x") -> NDArray[np.integer]:
    """An integer array of input symbols, each in ``0..k-1``."""
    expected = f"integer input symbols in 0..{k - 1}"
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.size == 0:
            return arr.astype(np.intp)
        raise invalid(name, _summary(arr), expected)
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi >= k:
            bad = lo if lo < 0 else hi
            raise invalid(name, f"a symbol {int(bad)}", expected)
    return arr


def subset(value: object, k: int, name: str = "T") -> NDArray[np.bool_]:
    """A set of symbols in ``0..k-1`` given as indices or as a boolean mask of length k."""
    expected = f"a set of symbols in 0..{k - 1} (indices or a boolean mask of length {k})"
    if value is None or isinstance(value, (str, bytes)) or np.ndim(value) != 1:  # type: ignore[arg-type]
        raise invalid(name, value, expected)
    arr = np.asarray(value)
    if arr.dtype == bool:
        if arr.shape != (k,):
            raise invalid(name, value, expected)
        return arr.copy()
    if arr.size == 0:
        return np.zeros(k, dtype=bool)
    if not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= k:
        raise invalid(name, value, expected)
    mask = np.zeros(k, dtype=bool)
    mask[arr] = True
    return mask


def _summary(arr: np.ndarray) -> str:
    return f"an array of dtype {arr.dtype}"


def label_order(values: list[str]) -> list[int]:
    """Indices of ``values`` (distinct answers, sorted as text) in numeric order when all are
    finite numbers, else as they are: the order of a population's answers and of
    ``ldpsim privatize``'s labels when none are given."""
    try:
        numbers = [float(x) for x in values]
    except ValueError:
        return list(range(len(values)))
    if not all(math.isfinite(x) for x in numbers):
        return list(range(len(values)))
    return sorted(range(len(values)), key=lambda i: (numbers[i], values[i]))
