"""Witnesses of the auditor: an input pair and an event on the outputs, replayable and
serialisable to strict JSON; with the helpers that put inputs and events in canonical form.

An event is one of ``{"kind": "outputs", "values": [...]}`` (a set of finite outputs, or of
integer vectors), ``{"kind": "threshold", "t": t, "side": "above" | "below"}``,
``{"kind": "interval", "lo": lo, "hi": hi}`` (both optionally on a projection ``"w"`` of
vector outputs), ``{"kind": "likelihood_ratio", "c": c}`` (replayed with the log density
it was found with; ``"exact": true`` compares the log-ratio without tolerance) or
``{"kind": "low_bits", "lo": lo, "hi": hi, "zeros": T, "side": "fewer" | "at_least"}`` (an
interval restricted by the trailing zero bits of the outputs' binary64 mantissa: the events of
the exact-floats audit). See :class:`Witness`.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim.errors import invalid

__all__ = ["Witness", "LogDensity"]

_EVENT_KINDS = ("outputs", "threshold", "interval", "likelihood_ratio", "low_bits")

#: Width of the mantissa (fraction) field of a binary64 number.
MANTISSA_BITS = 52

#: ``log_density(x, y) -> log p_x(y)`` for an array ``y`` of outputs (log pmf for finite outputs).
LogDensity = Callable[[Any, np.ndarray], ArrayLike]


# --------------------------------------------------------------------------- plain values
def _plain(value: Any) -> Any:
    """A JSON-serialisable copy of ``value`` (numpy scalars/arrays and tuples become Python)."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(x) for x in value]
    if isinstance(value, dict):
        return {str(k): _plain(x) for k, x in value.items()}
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise invalid("input", value, "a JSON-serialisable input (numbers, strings, lists of them)")


def _finite_input(value: Any) -> bool:
    """False for an input holding an infinite number (its JSON form would not be strict)."""
    try:
        arr = np.asarray(_plain(value), dtype=np.float64)
    except (TypeError, ValueError):
        return True  # labels that are not numbers
    return bool(np.all(np.isfinite(arr)))


def input_key(value: Any) -> str:
    """A canonical text key for a mechanism input (JSON, keys sorted), equal for equal inputs."""
    return json.dumps(_plain(value), sort_keys=True)


def _number(value: Any, name: str) -> float:
    if isinstance(value, str) and value in ("inf", "-inf"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise invalid(name, value, "a real number")
    out = float(value)
    if math.isnan(out):
        raise invalid(name, value, "a real number (not NaN)")
    return out


def _integer_values(vals: Any) -> np.ndarray | None:
    """``vals`` as a 1-D or 2-D int64 array when numpy reads it as one without a conversion
    (a list of Python ints within int64, or an integer array), else None: the general,
    element-by-element check then decides. A list of bools or floats is never taken here."""
    try:
        with np.errstate(all="ignore"):
            arr = np.asarray(vals)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2) or arr.size == 0:
        return None
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**63:
        return None
    return arr.astype(np.int64, copy=False)


def _check_event(event: Any) -> dict[str, Any]:
    expected = (
        '{"kind": "outputs", "values": [...]}, {"kind": "threshold", "t": float, "side": "above"|"below"}, '
        '{"kind": "interval", "lo": float, "hi": float}, {"kind": "low_bits", "lo": float, "hi": float, '
        '"zeros": int, "side": "fewer"|"at_least"} (these three optionally with a projection "w": [floats]) '
        'or {"kind": "likelihood_ratio", "c": float} (optionally with "exact": true)'
    )
    if not isinstance(event, dict) or event.get("kind") not in _EVENT_KINDS:
        raise invalid("event", event, expected)
    kind = event["kind"]
    if kind == "outputs":
        if set(event) != {"kind", "values"}:
            raise invalid("event", event, expected)
        vals = event["values"]
        if isinstance(vals, (str, bytes)):
            raise invalid("event", event, expected)
        fast = _integer_values(vals)
        if fast is not None:  # integers within int64 already (the auditor's own events): vectorised
            uniq = np.unique(fast) if fast.ndim == 1 else np.unique(fast, axis=0)
            return {"kind": "outputs", "values": uniq.tolist()}
        try:
            arr = np.asarray(_plain(vals), dtype=object)
        except (TypeError, ValueError):
            raise invalid("event", event, expected) from None
        if arr.ndim not in (1, 2):
            raise invalid("event", event, expected)
        for val in arr.ravel():
            if (
                isinstance(val, bool)
                or not isinstance(val, (numbers.Integral, np.integer))
                or not -(2**63) <= int(val) < 2**63
            ):
                raise invalid("event values", val, "integer outputs (or vectors of integers) within int64")
        if arr.ndim == 1:
            return {"kind": "outputs", "values": sorted({int(v) for v in arr})}
        rows = sorted({tuple(int(v) for v in row) for row in arr})
        return {"kind": "outputs", "values": [list(r) for r in rows]}
    extra: dict[str, Any] = {}
    keys = set(event)
    if "w" in event and kind in ("threshold", "interval", "low_bits"):
        w = event["w"]
        try:
            w_arr = np.asarray(w, dtype=np.float64)
        except (TypeError, ValueError):
            raise invalid("event w", w, "a list of finite numbers (a projection direction)") from None
        if w_arr.ndim != 1 or w_arr.size == 0 or not np.all(np.isfinite(w_arr)):
            raise invalid("event w", w, "a list of finite numbers (a projection direction)")
        extra["w"] = w_arr.tolist()
        keys = keys - {"w"}
    if kind == "threshold":
        if keys != {"kind", "t", "side"} or event["side"] not in ("above", "below"):
            raise invalid("event", event, expected)
        return {"kind": "threshold", "t": _number(event["t"], "event t"), "side": event["side"], **extra}
    if kind == "likelihood_ratio":
        if keys not in ({"kind", "c"}, {"kind", "c", "exact"}):
            raise invalid("event", event, expected)
        exact = event.get("exact", False)
        if not isinstance(exact, (bool, np.bool_)):
            raise invalid("event exact", exact, "true or false (compare the log-ratio without tolerance)")
        out = {"kind": "likelihood_ratio", "c": _number(event["c"], "event c")}
        return {**out, "exact": True} if exact else out
    if keys != ({"kind", "lo", "hi"} if kind == "interval" else {"kind", "lo", "hi", "zeros", "side"}):
        raise invalid("event", event, expected)
    lo, hi = _number(event["lo"], "event lo"), _number(event["hi"], "event hi")
    if not lo < hi:
        raise invalid("event", event, "an interval with lo < hi")
    if kind == "interval":
        return {"kind": "interval", "lo": lo, "hi": hi, **extra}
    zeros, side = event["zeros"], event["side"]
    integral = isinstance(zeros, (numbers.Integral, np.integer)) and not isinstance(zeros, (bool, np.bool_))
    if not (integral and 1 <= zeros <= MANTISSA_BITS):
        raise invalid(
            "event zeros", zeros, f"an integer from 1 to {MANTISSA_BITS} (trailing zero bits of the mantissa)"
        )
    if side not in ("fewer", "at_least"):
        raise invalid("event side", side, '"fewer" or "at_least" (than zeros trailing zero bits)')
    return {"kind": "low_bits", "lo": lo, "hi": hi, "zeros": int(zeros), "side": side, **extra}


def _row_members(y: np.ndarray, rows: list[list[int]]) -> NDArray[np.bool_]:
    """Which rows of the 2-D array ``y`` are among ``rows`` (exact: a row with a fractional or
    out-of-range entry matches nothing)."""
    if y.ndim != 2:
        raise invalid("outputs", f"an array of shape {y.shape}", "n x d vectors for an event made of vectors")
    if not rows:
        return np.zeros(y.shape[0], dtype=bool)
    vals = np.asarray(rows, dtype=np.int64)
    if y.shape[1] != vals.shape[1]:
        raise invalid(
            "outputs", f"an array of shape {y.shape}", f"vectors of length {vals.shape[1]} (n x {vals.shape[1]})"
        )
    if np.issubdtype(y.dtype, np.floating):
        ok = np.all((y == np.floor(y)) & (np.abs(y) < 2.0**63), axis=1)
    elif np.issubdtype(y.dtype, np.unsignedinteger):
        ok = np.all(y <= np.iinfo(np.int64).max, axis=1)
    else:
        ok = np.ones(y.shape[0], dtype=bool)
    out = np.zeros(y.shape[0], dtype=bool)
    if ok.any():
        _, inv = np.unique(np.concatenate([vals, y[ok].astype(np.int64)]), axis=0, return_inverse=True)
        inv = inv.ravel()
        out[ok] = np.isin(inv[len(vals) :], inv[: len(vals)])
    return out


def _json_number(value: Any) -> Any:
    """Infinite floats as the strings "inf" / "-inf" (strict JSON has no infinities)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _log_ratio(log_density: LogDensity, x: Any, xp: Any, y: np.ndarray) -> NDArray[np.float64]:
    """``log p_x(y) - log p_x'(y)`` in [-inf, inf]; NaN (both densities 0) becomes -inf."""
    lp = np.asarray(log_density(x, y), dtype=np.float64)
    lq = np.asarray(log_density(xp, y), dtype=np.float64)
    if lp.shape != y.shape[:1] or lq.shape != y.shape[:1]:
        raise invalid(
            "log_density output", f"an array of shape {lp.shape}", f"shape {y.shape[:1]}, one value per output"
        )
    with np.errstate(invalid="ignore"):
        out = lp - lq
    return np.where(np.isnan(out), -np.inf, out)


def trailing_zeros(y: ArrayLike) -> NDArray[np.int64]:
    """Number of trailing zero bits of the 52-bit mantissa (fraction) field of each output,
    read as a binary64 number (integer outputs are converted to float64 first): 0 when the
    last bit is 1, ..., 51; 52 when the whole field is zero, i.e. for +-0, +-inf and the
    powers of two (subnormals are read the same way, field only). Exact: the lowest set bit
    is isolated with integer operations on ``y.view(np.uint64)`` and its position read
    from the exponent of its (exactly representable) value."""
    arr = np.asarray(y, dtype=np.float64)
    flat = np.ascontiguousarray(arr.ravel())
    field_ = flat.view(np.uint64) & np.uint64((1 << MANTISSA_BITS) - 1)
    low = field_ & (~field_ + np.uint64(1))  # the lowest set bit (0 when none), two's complement
    exp = np.frexp(low.astype(np.float64))[1].astype(np.int64) - 1  # low < 2^52: exact in float64
    return np.where(field_ == 0, MANTISSA_BITS, exp).reshape(arr.shape)


def _lr_floor(c: Any) -> Any:
    """``c`` less a relative tolerance of 1e-9: a likelihood-ratio event ``L(y) >= c`` is
    read as ``L(y) >= c - 1e-9 (1 + |c|)``, so that it tests the mechanism's mathematical
    likelihood ratio and not rounding in its last bits. (Without it, the events on the
    plateau of Laplace's ratio separate ``0 + noise`` from ``1 + noise`` by their low-order
    bits -- the floating-point attack of Mironov (CCS 2012) on textbook Laplace samplers,
    which this auditor then certifies at eps_LB ~ 5.7 for Laplace(eps = 0.5) at n = 10^5.
    The exact-floats audit also tries the exact comparison: events with ``"exact": true``.)"""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(c), c, c - 1e-9 * (1.0 + np.abs(c)))


# --------------------------------------------------------------------------- witness
@dataclass(frozen=True)
class Witness:
    """A replayable witness: inputs ``x`` and ``x_prime`` and an event on the outputs.

    ``event`` is a JSON-serialisable dict: ``{"kind": "outputs", "values": [...]}`` (a set of
    finite outputs), ``{"kind": "threshold", "t": t, "side": "above"}`` (``y > t``) or
    ``"below"`` (``y <= t``), ``{"kind": "interval", "lo": lo, "hi": hi}``
    (``lo < y <= hi``; ends may be infinite: ``(-inf, hi]`` holds the finite outputs up to
    ``hi``, ``(t, inf]`` includes an atom at ``+inf``), or ``{"kind": "likelihood_ratio",
    "c": c}`` (``log p_x(y) - log p_x'(y) >= c``, replayed with the ``log_density`` it was
    found with; with ``"exact": true`` compared exactly, without the tolerance of
    :func:`_lr_floor`) or ``{"kind": "low_bits", "lo": lo, "hi": hi, "zeros": T, "side":
    "fewer"}`` (``lo < y <= hi`` and fewer than ``T`` trailing zero bits in the mantissa field
    of ``y`` as a binary64 number, :func:`trailing_zeros`; ``"at_least"``: ``T`` or more), the
    events of the exact-floats audit. ``threshold``, ``interval`` and ``low_bits`` events may
    carry a projection ``"w"`` (for vector outputs, the event is on ``y @ w``). Inputs are
    stored in their JSON form (tuples become lists); infinite numbers are written as the
    strings ``"inf"`` / ``"-inf"`` in JSON.
    """

    x: Any
    x_prime: Any
    event: dict[str, Any]
    log_density: LogDensity | None = field(default=None, compare=False, repr=False)

    __hash__ = None  # type: ignore[assignment]  # the event is a dict

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _plain(self.x))
        object.__setattr__(self, "x_prime", _plain(self.x_prime))
        object.__setattr__(self, "event", _check_event(self.event))

    def contains(self, outputs: ArrayLike, log_density: LogDensity | None = None) -> NDArray[np.bool_]:
        """Boolean mask: which of ``outputs`` (a 1-D array) fall in the event.

        A likelihood-ratio event needs the log density (``log_density(x, y)``): the one
        given here, else the one the witness was found with."""
        y = np.asarray(outputs)
        if y.dtype == bool:
            y = y.astype(np.int64)
        if not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)) or y.ndim not in (1, 2):
            raise invalid("outputs", outputs, "an array of real outputs (n outputs, or n x d vectors)")
        ev = self.event
        vector_event = ev["kind"] == "outputs" and bool(ev["values"]) and isinstance(ev["values"][0], list)
        if y.ndim == 2 and y.shape[1] == 1 and not vector_event and "w" not in ev:
            y = y[:, 0]  # n x 1 outputs are scalars, as in the audit
        if ev["kind"] == "outputs" and not ev["values"]:
            return np.zeros(y.shape[0], dtype=bool)  # the empty event
        if vector_event:
            return _row_members(y, ev["values"])
        if "w" in ev:
            w = np.asarray(ev["w"], dtype=np.float64)
            if y.ndim != 2 or y.shape[1] != w.size:
                raise invalid("outputs", f"an array of shape {y.shape}", f"vectors of length {w.size} (n x {w.size})")
            y = y @ w
        elif y.ndim == 2 and ev["kind"] != "likelihood_ratio":
            raise invalid("outputs", f"an array of shape {y.shape}", "scalar outputs (n,) for an event on scalars")
        if ev["kind"] == "outputs":
            return np.isin(y, np.asarray(ev["values"], dtype=np.int64))
        if ev["kind"] == "threshold":
            return y > ev["t"] if ev["side"] == "above" else y <= ev["t"]
        if ev["kind"] == "likelihood_ratio":
            ld = log_density if log_density is not None else self.log_density
            if ld is None:
                raise invalid(
                    "log_density", None, "the log density log_density(x, y) to replay a likelihood-ratio witness"
                )
            lr = _log_ratio(ld, self.x, self.x_prime, y)
            return lr >= ev["c"] if ev.get("exact", False) else lr >= _lr_floor(ev["c"])
        inside = (y > ev["lo"]) & (y <= ev["hi"])
        if ev["kind"] == "interval":
            return inside
        few = trailing_zeros(y) < ev["zeros"]
        return inside & (few if ev["side"] == "fewer" else ~few)

    def to_dict(self) -> dict[str, Any]:
        event = {k: _json_number(val) for k, val in self.event.items()}
        return {"x": self.x, "x_prime": self.x_prime, "event": event}

    def to_json(self) -> str:
        """The witness as a strict JSON string (infinite numbers as "inf" / "-inf")."""
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, log_density: LogDensity | None = None) -> "Witness":
        """Inverse of :meth:`to_json`; malformed text raises :class:`LdpSimError`."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise invalid("witness JSON", text, f"a JSON object ({exc})") from None
        if not isinstance(data, dict) or set(data) != {"x", "x_prime", "event"}:
            raise invalid("witness JSON", text, 'an object with keys "x", "x_prime", "event"')
        return cls(data["x"], data["x_prime"], data["event"], log_density)
