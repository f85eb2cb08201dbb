"""Empirical privacy auditing: a valid lower bound on eps for any mechanism, black box included.

:func:`audit` draws outputs of a sampler ``sampler(x, n, rng)`` on candidate pairs of inputs
and returns a lower bound ``eps_LB`` on the mechanism's eps that holds with probability at
least ``1 - alpha`` over the whole search (input pairs, orders, events, thresholds).

Method (select, then certify on fresh samples):

* For every input, ``n`` outputs (scalars or vectors) are drawn; the first ``round(split * n)`` (the *selection*
  half) choose, for every ordered pair ``(x, x')``, one event ``S`` (the witness). Finite
  outputs: prefixes of the outputs sorted by the observed ratio ``p_hat(y) / q_hat(y)``;
  real outputs: thresholds ``y > t``, ``y <= t`` and intervals ``lo < y <= hi`` over a
  quantile grid of the pooled selection outputs. The candidate maximising a plug-in
  lower bound (Wilson score bounds, cheap and vectorised) is kept.
* The remaining ``n2`` outputs per input (the *certification* half, independent of the
  selection half) certify that single event: with ``p_hit ~ Bin(n2, P(S|x))`` and
  ``q_hit ~ Bin(n2, P(S|x'))``, ``eps_LB = log(CP_lower(p_hit) / CP_upper(q_hit))`` with
  exact Clopper-Pearson bounds, each one-sided at level ``a / 2``, where ``a`` is alpha
  divided (Bonferroni) by the number of certified tests, ``2 * len(pairs)`` (one witness
  per ordered pair). The reported bound is the maximum over the tests, floored at 0.

Because each witness is a function of the selection half only, each certified test is a
single pre-specified test on fresh data; the union bound makes the maximum valid whatever
the dependence between the tests (inputs shared between pairs reuse the same samples).

With ``eps_for_delta``, a second witness per ordered pair is selected for the hockey-stick
bound ``delta_LB = CP_lower(p_hit) - e^eps CP_upper(q_hit)``; alpha is then split in two
halves, one for the eps tests and one for the delta tests, so that ``eps_LB`` and
``delta_LB`` hold *jointly* with probability at least ``1 - alpha``.

Sampled evidence cannot prove that an event has zero mass under an input (with 0 hits out
of ``n2`` the Clopper-Pearson upper bound is ``1 - (a/2)^(1/n2) > 0``), so from samples
alone ``eps_LB`` is finite; it is never capped at any constant either: it grows like
``log(n2)`` on an event that one input never produces. With a known density
(``log_density``), an event of zero density under ``x'`` has zero mass *by the density*:
its upper bound is 0 and ``eps_LB = inf`` once it is hit under ``x`` (a sample of ``x'``
inside it is reported as an error: the density does not describe the sampler).

Likelihood-ratio events (with a density): ``{y : log p_x(y) - log p_x'(y) >= c}``, ``c`` on
a quantile grid of the observed log-ratios; for finite outputs the output sets are the
prefixes of the outputs ordered by the exact ratio (Neyman-Pearson). Candidates are scored
on the selection data at the simultaneous level (certification level divided by the
number of candidates) to damp the winner's curse; that affects power only.

:func:`audit_sequential` repeats select-then-certify in looks on growing fresh batches and
stops once the claim is refuted (alpha spent equally over the looks planned in advance).
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, _show, invalid

__all__ = ["AuditResult", "Witness", "audit", "audit_sequential", "density_of", "sampler_of", "MIN_HALF", "GRID_SIZE"]

#: Fewest samples per input in each of the selection and certification halves.
MIN_HALF = 10

#: Real vector outputs are projected on every coordinate axis (besides the mean difference)
#: up to this dimension.
MAX_AXES = 16

#: Number of quantiles of the pooled selection outputs used as thresholds / interval ends
#: for real outputs (intervals: GRID_SIZE^2 / 2 candidates, scored vectorised).
GRID_SIZE = 128

Sampler = Callable[[Any, int, np.random.Generator], ArrayLike]

_EVENT_KINDS = ("outputs", "threshold", "interval", "likelihood_ratio")

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


def _key(value: Any) -> str:
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


def _check_event(event: Any) -> dict[str, Any]:
    expected = (
        '{"kind": "outputs", "values": [...]}, {"kind": "threshold", "t": float, "side": "above"|"below"}, '
        '{"kind": "interval", "lo": float, "hi": float} (both optionally with a projection "w": [floats]) '
        'or {"kind": "likelihood_ratio", "c": float}'
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
        try:
            arr = np.asarray(_plain(vals), dtype=object)
        except (TypeError, ValueError):
            raise invalid("event", event, expected) from None
        if arr.ndim not in (1, 2):
            raise invalid("event", event, expected)
        for val in arr.ravel():
            if isinstance(val, bool) or not isinstance(val, (numbers.Integral, np.integer)) or not -(2**63) <= val < 2**63:
                raise invalid("event values", val, "integer outputs (or vectors of integers) within int64")
        if arr.ndim == 1:
            return {"kind": "outputs", "values": sorted({int(v) for v in arr})}
        rows = sorted({tuple(int(v) for v in row) for row in arr})
        return {"kind": "outputs", "values": [list(r) for r in rows]}
    extra: dict[str, Any] = {}
    keys = set(event)
    if "w" in event and kind in ("threshold", "interval"):
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
        if keys != {"kind", "c"}:
            raise invalid("event", event, expected)
        return {"kind": "likelihood_ratio", "c": _number(event["c"], "event c")}
    if keys != {"kind", "lo", "hi"}:
        raise invalid("event", event, expected)
    lo, hi = _number(event["lo"], "event lo"), _number(event["hi"], "event hi")
    if not lo < hi:
        raise invalid("event", event, "an interval with lo < hi")
    return {"kind": "interval", "lo": lo, "hi": hi, **extra}


def _row_members(y: np.ndarray, rows: list[list[int]]) -> NDArray[np.bool_]:
    """Which rows of the 2-D array ``y`` are among ``rows`` (exact: a row with a fractional or
    out-of-range entry matches nothing)."""
    if y.ndim != 2:
        raise invalid("outputs", f"an array of shape {y.shape}", "n x d vectors for an event made of vectors")
    if not rows:
        return np.zeros(y.shape[0], dtype=bool)
    vals = np.asarray(rows, dtype=np.int64)
    if y.shape[1] != vals.shape[1]:
        raise invalid("outputs", f"an array of shape {y.shape}", f"vectors of length {vals.shape[1]} (n x {vals.shape[1]})")
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
        raise invalid("log_density output", f"an array of shape {lp.shape}", f"shape {y.shape[:1]}, one value per output")
    with np.errstate(invalid="ignore"):
        out = lp - lq
    return np.where(np.isnan(out), -np.inf, out)


def _lr_floor(c: Any) -> Any:
    """``c`` less a relative tolerance of 1e-9: a likelihood-ratio event ``L(y) >= c`` is
    read as ``L(y) >= c - 1e-9 (1 + |c|)``, so that it tests the mechanism's mathematical
    likelihood ratio and not rounding in its last bits. (Without it, the events on the
    plateau of Laplace's ratio separate ``0 + noise`` from ``1 + noise`` by their low-order
    bits -- the floating-point attack of Mironov (CCS 2012) on textbook Laplace samplers,
    which this auditor then certifies at eps_LB ~ 5.7 for Laplace(eps = 0.5) at n = 10^5.)"""
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
    found with). Inputs are stored in their JSON form (tuples become lists); infinite
    numbers are written as the strings ``"inf"`` / ``"-inf"`` in JSON.
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
                raise invalid("log_density", None, "the log density log_density(x, y) to replay a likelihood-ratio witness")
            return _log_ratio(ld, self.x, self.x_prime, y) >= _lr_floor(ev["c"])
        return (y > ev["lo"]) & (y <= ev["hi"])

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


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit` and :func:`audit_sequential`.

    ``eps_lb``: lower bound on eps, valid with probability >= 1 - alpha (0 when nothing is
    certified; ``inf`` only when a known density proves the witness event impossible under
    ``x_prime``; never capped). ``delta_lb``: lower bound on the smallest delta at
    ``eps_for_delta`` (None when not asked), valid jointly with ``eps_lb``.
    ``witness`` / ``delta_witness``: the witnesses achieving them (None when the bound is 0).
    ``counts`` / ``delta_counts``: certification hits of the witness under ``x`` and
    ``x_prime`` and the certification size per input. ``n_samples_used``: total outputs
    drawn (all inputs). ``method``: what was done, with the multiple-testing correction.
    ``per_output`` (finite outputs): for the eps witness pair, every output seen with its
    counts under ``x`` and ``x_prime`` (all samples), the empirical log-ratio and, when a
    density is known, the exact one. Sequential audits also fill ``claimed_eps``,
    ``claimed_delta``, ``refuted`` and ``rounds`` (one row per look).
    """

    eps_lb: float
    delta_lb: float | None
    witness: Witness | None
    counts: dict[str, int]
    n_samples_used: int
    alpha: float
    method: str
    eps_for_delta: float | None = None
    delta_witness: Witness | None = None
    delta_counts: dict[str, int] = field(default_factory=dict)
    per_output: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    claimed_eps: float | None = None
    claimed_delta: float | None = None
    refuted: bool | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> str:
        """A few lines for people: eps_LB, the claim and verdict, witness, samples used."""
        lines = [f"eps_LB = {self.eps_lb:.6g}  (valid with probability >= {1 - self.alpha:g})"]
        if self.delta_lb is not None:
            lines.append(f"delta_LB at eps={self.eps_for_delta:g}: {self.delta_lb:.6g}")
        if self.claimed_eps is not None:
            claim = f"eps={self.claimed_eps:g}" + (f", delta={self.claimed_delta:g}" if self.claimed_delta else "")
            verdict = "REFUTED" if self.refuted else "not refuted"
            lines.append(f"claimed {claim}: {verdict}")
        lines.append("witness: " + (self.witness.to_json() if self.witness is not None else "none (nothing certified)"))
        if self.counts:
            lines.append(
                f"certification hits: {self.counts['hits_x']} under x, {self.counts['hits_x_prime']} under x' "
                f"(of {self.counts['n_per_input']} each)"
            )
        lines.append(f"samples used: {self.n_samples_used:,}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- samplers
def sampler_of(mechanism: Any) -> Sampler:
    """A sampler ``(x, n, rng) -> n outputs`` for a library mechanism.

    :class:`~ldpsim.mechanisms.finite.FiniteMechanism`: ``x`` is an input label (see
    ``encode``), outputs are integer symbols. :class:`~ldpsim.mechanisms.noise.NoiseMechanism`:
    ``x`` is a real value, outputs are ``x + noise`` (floats). Any other object with a
    ``sample(x, n, rng)`` method (the broken mechanisms of
    :mod:`ldpsim.mechanisms.broken`): that method.
    """
    from ldpsim.mechanisms.finite import FiniteMechanism
    from ldpsim.mechanisms.noise import NoiseMechanism

    if isinstance(mechanism, FiniteMechanism):

        def finite_sampler(x: Any, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
            idx = int(mechanism.encode([x])[0])
            return mechanism.privatize(np.full(n, idx, dtype=np.int64), rng)

        return finite_sampler
    if isinstance(mechanism, NoiseMechanism):

        def noise_sampler(x: Any, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
            return np.asarray(mechanism.privatize(np.full(n, _number(x, "x")), rng), dtype=np.float64)

        return noise_sampler
    if callable(getattr(mechanism, "sample", None)):
        return mechanism.sample  # type: ignore[no-any-return]
    raise invalid(
        "mechanism", mechanism, "a FiniteMechanism, a NoiseMechanism, an object with sample(x, n, rng), or a sampler function"
    )


def density_of(mechanism: Any) -> LogDensity | None:
    """The exact log density ``log_density(x, y)`` of a mechanism's output, or None.

    :class:`~ldpsim.mechanisms.finite.FiniteMechanism`: the log of its matrix entry (log
    pmf of output symbol ``y`` given input label ``x``). Noise mechanisms: the noise log
    density at ``y - x``. Objects with ``log_density(x, y)`` (broken mechanisms with a
    closed form): that. Objects with ``matrix()`` and ``rows`` (the finite broken
    mechanisms): the log of the row of ``x``. Anything else: None.
    """
    from ldpsim.mechanisms.finite import FiniteMechanism
    from ldpsim.mechanisms.noise import NoiseMechanism

    if isinstance(mechanism, FiniteMechanism):
        lm = np.asarray(mechanism.log_matrix, dtype=np.float64)
        return _table_density(lm, lambda x: int(mechanism.encode([x])[0]))
    if isinstance(mechanism, NoiseMechanism) and hasattr(mechanism, "log_pdf"):

        def noise_density(x: Any, y: np.ndarray) -> NDArray[np.float64]:
            return np.asarray(mechanism.log_pdf(np.asarray(y, dtype=np.float64) - _number(x, "x")), dtype=np.float64)

        return noise_density
    if callable(getattr(mechanism, "log_density", None)):
        return mechanism.log_density  # type: ignore[no-any-return]
    if callable(getattr(mechanism, "matrix", None)) and hasattr(mechanism, "rows"):
        with np.errstate(divide="ignore"):
            lm = np.log(np.asarray(mechanism.matrix(), dtype=np.float64))
        index = {_key(r): i for i, r in enumerate(mechanism.rows)}

        def row_of(x: Any) -> int:
            try:
                return index[_key(x)]
            except KeyError:
                raise invalid("x", x, f"one of the mechanism's inputs {list(mechanism.rows)}") from None

        return _table_density(lm, row_of)
    return None


def _table_density(lm: NDArray[np.float64], row_of: Callable[[Any], int]) -> LogDensity:
    def table_density(x: Any, y: np.ndarray) -> NDArray[np.float64]:
        y = np.asarray(y)
        row = lm[row_of(x)]
        out = np.full(y.shape, -np.inf)
        ok = (y >= 0) & (y < row.size) & (y == np.floor(y))
        out[ok] = row[y[ok].astype(np.int64)]
        return out

    return table_density


def _draw(sampler: Sampler, x: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    try:
        raw = sampler(x, n, rng)
    except Exception as exc:
        raise LdpSimError(f"sampler raised {type(exc).__name__}: {exc} for input x={_show(x)}") from exc
    try:
        out = np.asarray(raw)
    except Exception:  # pragma: no cover - defensive (ragged objects)
        raise invalid("sampler output", raw, f"a 1-D numeric array of {n} outputs (input x={_show(x)})") from None
    if out.dtype == bool:
        out = out.astype(np.int64)  # bits (or bit vectors) are finite outputs 0 / 1
    if out.dtype == bool or not (np.issubdtype(out.dtype, np.integer) or np.issubdtype(out.dtype, np.floating)):
        raise invalid(
            "sampler output", f"an array of dtype {out.dtype}", f"integer or real outputs (input x={_show(x)})"
        )
    if not (out.shape == (n,) or (out.ndim == 2 and out.shape[0] == n and out.shape[1] >= 1)):
        raise invalid(
            "sampler output", f"an array of shape {out.shape}",
            f"shape ({n},) or ({n}, d): one output (or vector) per draw (input x={_show(x)})",
        )  # fmt: skip
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    if np.issubdtype(out.dtype, np.floating) and np.isnan(out).any():
        raise invalid("sampler output", "NaN outputs", f"real outputs, not NaN (input x={_show(x)})")
    if out.ndim == 2 and np.issubdtype(out.dtype, np.floating) and not np.isfinite(out).all():
        raise invalid("sampler output", "infinite entries in vector outputs", f"finite vectors (input x={_show(x)})")
    return out


# --------------------------------------------------------------------------- bounds
def _cp_lower(k: NDArray, n: int, a: float) -> NDArray[np.float64]:
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(all="ignore"):
        out = stats.beta.ppf(a, k, n - k + 1)
    return np.where(k > 0, out, 0.0)


def _cp_upper(k: NDArray, n: int, a: float) -> NDArray[np.float64]:
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(all="ignore"):
        out = stats.beta.isf(a, k + 1, n - k)
    return np.where(k < n, out, 1.0)


def _wilson(k: NDArray, n: int, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = np.asarray(k, dtype=np.float64)
    z2 = z * z
    centre = (k + z2 / 2.0) / (n + z2)
    half = z * np.sqrt(np.maximum(k * (n - k) / n, 0.0) + z2 / 4.0) / (n + z2)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _eps_score(lo_p: NDArray, hi_q: NDArray) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.log(lo_p) - np.log(hi_q)
    return np.where(np.isnan(s), -np.inf, s)


def _delta_score(lo_p: NDArray, hi_q: NDArray, eps: float) -> NDArray[np.float64]:
    hi_q = np.asarray(hi_q, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s = np.where(hi_q > 0, lo_p - np.exp(eps + np.log(hi_q)), lo_p)  # a zero-mass event costs nothing
    return np.where(np.isnan(s), -np.inf, s)


# --------------------------------------------------------------------------- selection
def _selection_z(z: float, candidates: int) -> float:
    """The Wilson z used to *score* candidates: the certification level further divided by
    the number of candidates. Scoring every candidate at the simultaneous level damps the
    winner's curse (a narrow interval with 15 hits against 0 out of 5e4 looks like eps 0.5
    at the per-test level and certifies at ~0 on fresh data); it never affects validity,
    which comes from certifying the single selected event on fresh samples."""
    a = 2.0 * stats.norm.sf(z)
    return float(stats.norm.isf(a / 2.0 / max(candidates, 1)))


def _best(score: NDArray, lo_p: NDArray) -> int:
    """Index of the highest score; ties (e.g. several ``inf``) go to the largest ``lo_p``."""
    return int(np.lexsort((lo_p, score))[-1])


def _finite_select(
    x: Any, xp: Any, sp: np.ndarray, sq: np.ndarray, score: Callable, z: float, ld: LogDensity | None
) -> tuple[dict[str, Any], bool] | None:
    """Prefixes of the observed outputs sorted by ratio (exact when ``ld`` is known, else the
    smoothed observed ratio); returns the best event and whether ``ld`` proves it has zero
    mass under ``xp``."""
    vals, inv = np.unique(np.concatenate([sp, sq]), return_inverse=True)
    cp = np.bincount(inv[: sp.size], minlength=vals.size)
    cq = np.bincount(inv[sp.size :], minlength=vals.size)
    if ld is None:
        keep = cp > 0
        vals, cp, cq = vals[keep], cp[keep], cq[keep]
        if vals.size == 0:
            return None
        order = np.lexsort((-cp, -(cp + 0.5) / (cq + 0.5)))
        n_zero = 0
    else:
        lr = _log_ratio(ld, x, xp, vals)
        order = np.lexsort((-cp, -lr))
        n_zero = int(np.count_nonzero(lr == np.inf))
    vals, hp, hq = vals[order], np.cumsum(cp[order]), np.cumsum(cq[order])
    zero = np.arange(vals.size) < n_zero  # prefix i has probability 0 under xp (by ld)
    z = _selection_z(z, vals.size)
    lo_p = _wilson(hp, sp.size, z)[0]
    hi_q = np.where(zero, 0.0, _wilson(hq, sq.size, z)[1])
    best = _best(score(lo_p, hi_q), lo_p)
    return {"kind": "outputs", "values": np.sort(vals[: best + 1]).tolist()}, bool(zero[best])


def _real_grid(pooled: np.ndarray) -> np.ndarray:
    """Quantiles of the finite pooled outputs, their extremes, and any atoms at +-inf."""
    fin = pooled[np.isfinite(pooled)]
    parts = [pooled[~np.isfinite(pooled)]]
    if fin.size:
        parts += [np.quantile(fin, np.linspace(0.0, 1.0, GRID_SIZE + 1)[:-1], method="lower"), [fin.min(), fin.max()]]
    return np.unique(np.concatenate(parts))


def _interval_family(sp: np.ndarray, sq: np.ndarray) -> tuple[NDArray, NDArray, Callable[[int], dict[str, Any]]]:
    """Hit counts of the thresholds ``y <= t``, ``y > t`` and intervals ``lo < y <= hi`` over
    a quantile grid of the pooled 1-D outputs, and the event of each candidate index."""
    n_p, n_q = sp.size, sq.size
    grid = _real_grid(np.concatenate([sp, sq]))
    sp_s, sq_s = np.sort(sp), np.sort(sq)
    cp = np.searchsorted(sp_s, grid, side="right")  # #{y <= t}
    cq = np.searchsorted(sq_s, grid, side="right")
    g = grid.size
    i, j = np.triu_indices(g, k=1)
    hp = np.concatenate([cp, n_p - cp, cp[j] - cp[i]])
    hq = np.concatenate([cq, n_q - cq, cq[j] - cq[i]])

    def event(b: int) -> dict[str, Any]:
        if b < g:
            return {"kind": "threshold", "t": float(grid[b]), "side": "below"}
        if b < 2 * g:
            return {"kind": "threshold", "t": float(grid[b - g]), "side": "above"}
        b -= 2 * g
        return {"kind": "interval", "lo": float(grid[i[b]]), "hi": float(grid[j[b]])}

    return hp, hq, event


def _directions(sp: np.ndarray, sq: np.ndarray) -> list[NDArray[np.float64]]:
    """Directions to project real vector outputs on: the difference of the two means (from
    the selection data) and, up to 16 dimensions, every coordinate axis."""
    d = sp.shape[1]
    dirs: list[NDArray[np.float64]] = []
    diff = sp.mean(axis=0) - sq.mean(axis=0)
    norm = float(np.linalg.norm(diff))
    if norm > 0 and np.isfinite(norm):
        dirs.append(diff / norm)
    if d <= MAX_AXES:
        dirs.extend(np.eye(d))
    return dirs or [np.eye(d)[0]]


def _real_select(
    x: Any, xp: Any, sp: np.ndarray, sq: np.ndarray, score: Callable, z: float, ld: LogDensity | None
) -> tuple[dict[str, Any], bool] | None:
    """Thresholds ``y <= t``, ``y > t`` and intervals ``lo < y <= hi`` on a quantile grid (for
    vector outputs, of the projections ``w . y`` on :func:`_directions`), and with a density
    the likelihood-ratio events ``L(y) >= c``; the best event and whether ``ld`` proves it
    has zero mass under ``xp``."""
    n_p, n_q = sp.shape[0], sq.shape[0]
    hp_parts, hq_parts, zero_parts = [], [], []
    decoders: list[Callable[[int], dict[str, Any]]] = []
    projections = [(sp, sq, None)] if sp.ndim == 1 else [(sp @ w, sq @ w, w) for w in _directions(sp, sq)]
    for p1, q1, w in projections:
        hp, hq, event = _interval_family(p1, q1)
        hp_parts.append(hp)
        hq_parts.append(hq)
        zero_parts.append(np.zeros(hp.size, dtype=bool))
        if w is None:
            decoders.append(event)
        else:
            decoders.append(lambda b, event=event, w=w: {**event(b), "w": w.tolist()})
    if ld is not None:
        lp_s, lq_s = np.sort(_log_ratio(ld, x, xp, sp)), np.sort(_log_ratio(ld, x, xp, sq))
        pooled = np.concatenate([lp_s, lq_s])
        fin = pooled[np.isfinite(pooled)]
        cparts = [[np.inf]] if lp_s[-1] == np.inf else []
        if fin.size:
            cparts.append(np.quantile(fin, np.linspace(0.0, 1.0, GRID_SIZE + 1), method="lower"))
        if cparts:
            cgrid = np.unique(np.concatenate(cparts))
            hp_parts.append(n_p - np.searchsorted(lp_s, _lr_floor(cgrid), side="left"))  # #{L >= c - tol}
            hq_parts.append(n_q - np.searchsorted(lq_s, _lr_floor(cgrid), side="left"))
            zero_parts.append(cgrid == np.inf)  # L = inf: density 0 under xp
            decoders.append(lambda b, cgrid=cgrid: {"kind": "likelihood_ratio", "c": float(cgrid[b])})
    sizes = np.cumsum([0] + [h.size for h in hp_parts])
    hp, hq, zero = np.concatenate(hp_parts), np.concatenate(hq_parts), np.concatenate(zero_parts)
    z = _selection_z(z, hp.size)
    lo_p = _wilson(hp, n_p, z)[0]
    hi_q = np.where(zero, 0.0, _wilson(hq, n_q, z)[1])
    best = _best(score(lo_p, hi_q), lo_p)
    fam = int(np.searchsorted(sizes, best, side="right")) - 1
    return decoders[fam](best - int(sizes[fam])), bool(zero[best])


def _per_output(
    x: Any, xp: Any, full_p: np.ndarray, full_q: np.ndarray, ld: LogDensity | None
) -> pd.DataFrame:
    vals, inv = np.unique(np.concatenate([full_p, full_q]), return_inverse=True)
    cp = np.bincount(inv[: full_p.size], minlength=vals.size)
    cq = np.bincount(inv[full_p.size :], minlength=vals.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        emp = np.log(cp / full_p.size) - np.log(cq / full_q.size)
    exact = _log_ratio(ld, x, xp, vals) if ld is not None else np.full(vals.size, np.nan)
    return pd.DataFrame(
        {"output": vals, "count_x": cp, "count_x_prime": cq, "log_ratio_observed": emp, "log_ratio_exact": exact}
    )


# --------------------------------------------------------------------------- audit
def _check_pairs(pairs: Any) -> list[tuple[Any, Any]]:
    expected = "a non-empty sequence of pairs (x, x_prime) of distinct inputs"
    if isinstance(pairs, (str, bytes)):
        raise invalid("pairs", pairs, expected)
    try:
        items = list(pairs)
    except TypeError:
        raise invalid("pairs", pairs, expected) from None
    if not items:
        raise invalid("pairs", pairs, expected)
    out = []
    for pair in items:
        if isinstance(pair, (str, bytes)):
            raise invalid("pairs", pair, expected)
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise invalid("pairs", pair, expected) from None
        if _key(a) == _key(b):
            raise invalid("pairs", pair, expected)
        if not (_finite_input(a) and _finite_input(b)):
            raise invalid("pairs", pair, expected + " (numbers must be finite)")
        out.append((a, b))
    return out


def _setup(
    sampler: Any, pairs: Any, alpha: float, outputs: str, eps_for_delta: Any, log_density: Any
) -> tuple[Sampler, list[tuple[Any, Any]], float, float | None, LogDensity | None]:
    ld: LogDensity | None
    if isinstance(log_density, str) and log_density == "auto":
        ld = None if callable(sampler) else density_of(sampler)
    elif log_density is None or callable(log_density):
        ld = log_density
    else:
        raise invalid("log_density", log_density, '"auto", None or a function log_density(x, y)')
    if not callable(sampler):
        sampler = sampler_of(sampler)
    pairs_ = _check_pairs(pairs)
    alpha_ = v._as_float(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < alpha_ < 1.0:
        raise invalid("alpha", alpha, "a number in (0, 1)")
    if outputs not in ("auto", "finite", "real"):
        raise invalid("outputs", outputs, '"auto", "finite" or "real"')
    eps_d = None if eps_for_delta is None else v.epsilon(eps_for_delta, "eps_for_delta")
    return sampler, pairs_, alpha_, eps_d, ld


def _draw_all(sampler: Sampler, pairs: list[tuple[Any, Any]], n: int, gen: np.random.Generator) -> dict[str, np.ndarray]:
    """One batch of ``n`` outputs per distinct input, shared by all the pairs it appears in."""
    samples: dict[str, np.ndarray] = {}
    for pair in pairs:
        for x in pair:
            key = _key(x)
            if key not in samples:
                samples[key] = _draw(sampler, x, n, gen)
    return samples


def _output_kind(samples: dict[str, np.ndarray], outputs: str) -> str:
    all_int = all(np.issubdtype(s.dtype, np.integer) for s in samples.values())
    kind = ("finite" if all_int else "real") if outputs == "auto" else outputs
    if kind == "finite" and not all_int:
        for key, s in samples.items():
            if not np.issubdtype(s.dtype, np.integer) and not (
                np.all(np.abs(s) <= 2.0**53) and np.all(s == np.floor(s))
            ):
                raise invalid("sampler output", f"non-integer outputs for input x={key}", 'integer outputs (outputs="finite")')
    return kind


def _cast(samples: dict[str, np.ndarray], kind: str) -> dict[str, np.ndarray]:
    dtype = np.int64 if kind == "finite" else np.float64
    return {key: s.astype(dtype, copy=False) for key, s in samples.items()}


def _width(samples: dict[str, np.ndarray]) -> int:
    """0 for scalar outputs, else the common length ``d`` of the output vectors."""
    widths = {s.shape[1] if s.ndim == 2 else 0 for s in samples.values()}
    if len(widths) != 1:
        raise invalid("sampler output", f"outputs of widths {sorted(widths)}", "the same shape for every input and batch")
    return widths.pop()


class _Rows:
    """Integer codes for integer vector outputs (one code per distinct vector, stable across
    batches), so that the finite-output search runs on codes; vectorised over samples."""

    def __init__(self, d: int) -> None:
        self.d = d
        self.known = np.empty((0, d), dtype=np.int64)

    def encode(self, arr: np.ndarray) -> NDArray[np.int64]:
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise invalid("sampler output", f"an array of shape {arr.shape}", f"vectors of length {self.d}")
        uniq, inv = np.unique(arr, axis=0, return_inverse=True)
        m = self.known.shape[0]
        codes = np.full(uniq.shape[0], -1, dtype=np.int64)
        if m:
            allr, ainv = np.unique(np.concatenate([self.known, uniq]), axis=0, return_inverse=True)
            ainv = ainv.ravel()
            pos_to_code = np.full(allr.shape[0], -1, dtype=np.int64)
            pos_to_code[ainv[:m]] = np.arange(m)
            codes = pos_to_code[ainv[m:]]
        new = codes < 0
        codes[new] = m + np.arange(int(new.sum()))
        self.known = np.concatenate([self.known, uniq[new]])
        return codes[inv.ravel()]

    def decode(self, codes: ArrayLike) -> NDArray[np.int64]:
        return self.known[np.asarray(codes, dtype=np.int64)]

    def density(self, ld: LogDensity | None) -> LogDensity | None:
        if ld is None:
            return None
        return lambda x, codes: ld(x, self.decode(codes))

    def publish(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "outputs", "values": self.decode(event["values"]).tolist()}


def _encode(
    samples: dict[str, np.ndarray], kind: str, rows: "_Rows | None", ld: LogDensity | None
) -> tuple[dict[str, np.ndarray], "_Rows | None", LogDensity | None]:
    """Integer vector outputs become codes (``rows`` kept across batches); the density is
    wrapped to decode them. Other outputs pass through."""
    d = _width(samples)
    if kind != "finite" or d == 0:
        if rows is not None:
            raise invalid("sampler output", "scalar outputs after vector outputs", "the same shape in every batch")
        return samples, None, ld
    rows = rows if rows is not None else _Rows(d)
    return {key: rows.encode(s) for key, s in samples.items()}, rows, rows.density(ld)


@dataclass
class _Best:
    eps: float = 0.0
    w: Witness | None = None
    counts: dict[str, int] = field(default_factory=dict)
    delta: float = 0.0
    dw: Witness | None = None
    dcounts: dict[str, int] = field(default_factory=dict)


def _round(
    kind: str,
    pairs: list[tuple[Any, Any]],
    sel: dict[str, np.ndarray],
    cert: dict[str, np.ndarray],
    a: float,
    eps_d: float | None,
    ld: LogDensity | None,
    rows: _Rows | None = None,
    ld_public: LogDensity | None = None,
) -> _Best:
    """Select one witness per ordered pair (and goal) on ``sel``, certify each on ``cert``
    with Clopper-Pearson bounds at ``a / 2`` per side; the best certified values."""
    z = float(stats.norm.isf(a / 2.0))
    select = _finite_select if kind == "finite" else _real_select
    best = _Best()
    ordered = [(p0, p1) for p0, p1 in pairs] + [(p1, p0) for p0, p1 in pairs]
    goals: list[tuple[str, Callable[[NDArray, NDArray], NDArray]]] = [("eps", _eps_score)]
    if eps_d is not None:
        goals.append(("delta", lambda lo, hi: _delta_score(lo, hi, eps_d)))
    for x, xp in ordered:
        sp, sq = sel[_key(x)], sel[_key(xp)]
        cp_, cq_ = cert[_key(x)], cert[_key(xp)]
        n2 = cp_.size
        for goal, score in goals:
            found = select(x, xp, sp, sq, score, z, ld)
            if found is None:
                continue
            event, zero_q = found
            w = Witness(x, xp, event, ld)
            public = w if rows is None else Witness(x, xp, rows.publish(event), ld_public)
            hp = int(np.count_nonzero(w.contains(cp_)))
            hq = int(np.count_nonzero(w.contains(cq_)))
            if zero_q and hq:
                raise LdpSimError(
                    f"log_density gives the witness event {event} probability 0 under x={_show(xp)}, but {hq} of "
                    f"{n2} outputs fell in it: the density does not describe the sampler"
                )
            lo = float(_cp_lower(hp, n2, a / 2.0))
            hi = 0.0 if zero_q else float(_cp_upper(hq, n2, a / 2.0))
            counts = {"hits_x": hp, "hits_x_prime": hq, "n_per_input": n2}
            if goal == "eps":
                val = float(_eps_score(np.array(lo), np.array(hi)))
                if val > best.eps:
                    best.eps, best.w, best.counts = val, public, counts
            else:
                val = float(_delta_score(np.array(lo), np.array(hi), eps_d))  # type: ignore[arg-type]
                if val > best.delta:
                    best.delta, best.dw, best.dcounts = val, public, counts
    return best


def _events_text(kind: str, ld: LogDensity | None) -> str:
    base = "output sets by observed ratio" if kind == "finite" else "thresholds and intervals on a quantile grid"
    if ld is not None:
        base = (
            "output sets by exact likelihood ratio" if kind == "finite" else base + " and likelihood-ratio events"
        ) + "; events of zero density under x' certified as zero mass (checked against the samples)"
    return base


def _finish(
    best: _Best,
    kind: str,
    pairs: list[tuple[Any, Any]],
    samples: dict[str, np.ndarray],
    ld: LogDensity | None,
    n_used: int,
    alpha: float,
    method: str,
    eps_d: float | None,
    rows: _Rows | None = None,
    **extra: Any,
) -> AuditResult:
    per_output = None
    if kind == "finite":
        x, xp = (best.w.x, best.w.x_prime) if best.w is not None else pairs[0]
        per_output = _per_output(x, xp, samples[_key(x)], samples[_key(xp)], ld)
        if rows is not None:
            per_output["output"] = [tuple(r) for r in rows.decode(per_output["output"]).tolist()]
    return AuditResult(
        eps_lb=best.eps,
        delta_lb=None if eps_d is None else best.delta,
        witness=best.w,
        counts=best.counts,
        n_samples_used=n_used,
        alpha=alpha,
        method=method,
        eps_for_delta=eps_d,
        delta_witness=best.dw,
        delta_counts=best.dcounts,
        per_output=per_output,
        **extra,
    )


def audit(
    sampler: Sampler | Any,
    pairs: Sequence[tuple[Any, Any]],
    n: int,
    alpha: float = 0.05,
    *,
    outputs: str = "auto",
    eps_for_delta: float | None = None,
    rng: RNGLike = None,
    split: float = 0.5,
    log_density: LogDensity | str | None = "auto",
) -> AuditResult:
    """Lower bound on the eps of a mechanism from samples, valid with probability >= 1 - alpha.

    ``sampler(x, n, rng)`` returns ``n`` outputs of the mechanism on input ``x``: a 1-D array
    (integers for finite outputs, floats for real outputs, +-inf allowed as atoms) or an
    ``n x d`` array of vectors (integer vectors, e.g. bits, are finite outputs searched as
    sets of vectors; real vectors are projected on the difference of the means and on each
    axis up to ``MAX_AXES`` dimensions, then thresholds and intervals);
    a library mechanism (or any object with ``sample(x, n, rng)``) is accepted directly.
    ``pairs``: candidate pairs of inputs, each audited in both orders. ``n``: outputs drawn
    per distinct input, split into a selection part (``split``) and a certification part.
    ``outputs``: ``"finite"``, ``"real"`` or ``"auto"`` (finite when every sample has an
    integer dtype). ``eps_for_delta``: also return a lower bound on delta at that eps.
    ``log_density``: ``log_density(x, y)``, the exact log density (log pmf) of the output,
    used to choose likelihood-ratio events and to certify events of zero density under
    ``x'`` as having zero mass (so ``eps_LB`` can be ``inf``); ``"auto"`` (default) takes it
    from a mechanism object (:func:`density_of`), None for a bare sampler.

    See the module docstring for the method and its validity.
    """
    sampler_, pairs_, alpha_, eps_d, ld = _setup(sampler, pairs, alpha, outputs, eps_for_delta, log_density)
    split_ = v._as_float(split, "split", "a number in (0, 1)")
    if not 0.0 < split_ < 1.0:
        raise invalid("split", split, "a number in (0, 1)")
    n_ = v.integer(n, "n", minimum=1)
    n1 = int(round(n_ * split_))
    n2 = n_ - n1
    if n1 < MIN_HALF or n2 < MIN_HALF:
        need = math.ceil(MIN_HALF / min(split_, 1.0 - split_)) + 1
        raise invalid(
            "n",
            n,
            f"at least about {need} samples per input at split={split_:g}, so that selection ({n1}) "
            f"and certification ({n2}) each get >= {MIN_HALF}",
        )
    gen = as_generator(rng)
    samples = _draw_all(sampler_, pairs_, n_, gen)
    kind = _output_kind(samples, outputs)
    samples, rows, ld_int = _encode(_cast(samples, kind), kind, None, ld)

    families = 1 if eps_d is None else 2
    tests = 2 * len(pairs_)
    a = alpha_ / families / tests  # per certified test; each side of the ratio gets a / 2
    sel = {key: s[:n1] for key, s in samples.items()}
    cert = {key: s[n1:] for key, s in samples.items()}
    best = _round(kind, pairs_, sel, cert, a, eps_d, ld_int, rows, ld)

    fam = "" if eps_d is None else f", alpha split equally between the eps and the delta (at eps={eps_d:g}) witnesses"
    method = (
        f"select-then-certify: per input, {n1} outputs select one witness event per ordered pair "
        f"({_events_text(kind, ld)}; Wilson-score plug-in), {n2} fresh outputs certify it with exact "
        f"Clopper-Pearson bounds; Bonferroni over {tests} tests (2 orders x {len(pairs_)} pairs){fam}: each test "
        f"at level {a:.3g}, {a / 2:.3g} per side; no cap on eps_LB"
    )
    return _finish(best, kind, pairs_, samples, ld_int, n_ * len(samples), alpha_, method, eps_d, rows)


def _schedule(n_max: int, first: int, growth: float) -> list[int]:
    """Certification batch sizes after a selection batch of ``first``: ``first * growth^r``
    while the total stays within ``n_max`` (the last batch takes what is left)."""
    sizes: list[int] = []
    used, size = first, float(first)
    while used < n_max:
        m = min(int(round(min(size, n_max))), n_max - used)
        if m < MIN_HALF:
            if sizes:
                sizes[-1] += m
            break
        sizes.append(m)
        used += m
        size = min(size * growth, float(n_max))
    return sizes


def audit_sequential(
    sampler: Sampler | Any,
    pairs: Sequence[tuple[Any, Any]],
    n_max: int,
    claimed_eps: float,
    alpha: float = 0.05,
    *,
    claimed_delta: float = 0.0,
    first: int = 1000,
    growth: float = 2.0,
    outputs: str = "auto",
    log_density: LogDensity | str | None = "auto",
    rng: RNGLike = None,
) -> AuditResult:
    """Audit in rounds and stop as soon as the claim (``claimed_eps``, ``claimed_delta``) is
    refuted or ``n_max`` outputs per input are spent.

    Schedule (fixed in advance from ``n_max``, ``first`` and ``growth``): a selection batch
    of ``first`` outputs per input, then certification batches of ``first * growth^(r-1)``
    (r = 1..R). At look ``r`` the witnesses are selected on *every* output drawn before
    (selection batch and the earlier certification batches) and certified on the fresh
    batch ``r`` alone, at level ``alpha / R`` -- an alpha-spending rule with equal spending
    over the R planned looks, so by the union bound over looks, pairs and orders every
    reported bound holds simultaneously with probability >= 1 - alpha, whenever the audit
    stops. ``eps_lb`` (and ``delta_lb``) are the largest certified over the looks made.

    Refuted: ``eps_lb > claimed_eps`` for a pure claim; for ``claimed_delta > 0``,
    ``delta_lb > claimed_delta`` at ``eps = claimed_eps`` (the eps test still runs, with
    half of alpha). ``rounds``: one row per look (certification size, cumulative outputs
    per input, the bounds of that look and the running best).
    """
    c_eps = v.epsilon(claimed_eps, "claimed_eps")
    c_delta = v._as_float(claimed_delta, "claimed_delta", "a number in [0, 1)")
    if not 0.0 <= c_delta < 1.0:
        raise invalid("claimed_delta", claimed_delta, "a number in [0, 1)")
    eps_for_delta = c_eps if c_delta > 0 else None
    sampler_, pairs_, alpha_, eps_d, ld = _setup(sampler, pairs, alpha, outputs, eps_for_delta, log_density)
    first_ = v.integer(first, "first", minimum=MIN_HALF)
    growth_ = v._as_float(growth, "growth", "a number >= 1")
    if not 1.0 <= growth_ < math.inf:
        raise invalid("growth", growth, "a number >= 1")
    n_max_ = v.integer(n_max, "n_max", minimum=1)
    if n_max_ < first_ + MIN_HALF:
        raise invalid("n_max", n_max, f"at least first + {MIN_HALF} = {first_ + MIN_HALF} samples per input")
    sizes = _schedule(n_max_, first_, growth_)
    looks = len(sizes)
    families = 1 if eps_d is None else 2
    tests = 2 * len(pairs_)
    a = alpha_ / looks / families / tests

    gen = as_generator(rng)
    sel = _draw_all(sampler_, pairs_, first_, gen)
    kind = _output_kind(sel, outputs)
    width = _width(sel)
    sel, rows, ld_int = _encode(_cast(sel, kind), kind, None, ld)
    best = _Best()
    rounds: list[dict[str, Any]] = []
    refuted = False
    for r, m in enumerate(sizes, start=1):
        batch = _draw_all(sampler_, pairs_, m, gen)
        if kind == "finite":
            _output_kind(batch, "finite")  # every batch must hold integer outputs, not only the first
        if _width(batch) != width:
            raise invalid("sampler output", "outputs of another shape in a later batch", "the same shape in every batch")
        cert, rows, _ = _encode(_cast(batch, kind), kind, rows, ld)
        got = _round(kind, pairs_, sel, cert, a, eps_d, ld_int, rows, ld)
        if got.eps > best.eps:
            best.eps, best.w, best.counts = got.eps, got.w, got.counts
        if got.delta > best.delta:
            best.delta, best.dw, best.dcounts = got.delta, got.dw, got.dcounts
        sel = {key: np.concatenate([sel[key], cert[key]]) for key in sel}
        refuted = best.eps > c_eps if c_delta == 0 else best.delta > c_delta
        rounds.append(
            {
                "look": r,
                "n_certify": m,
                "n_per_input": int(next(iter(sel.values())).shape[0]),
                "eps_lb_look": got.eps,
                "eps_lb": best.eps,
                **({} if eps_d is None else {"delta_lb_look": got.delta, "delta_lb": best.delta}),
                "refuted": refuted,
            }
        )
        if refuted:
            break

    n_per_input = rounds[-1]["n_per_input"]
    fam = "" if eps_d is None else f", alpha split equally between the eps and the delta (at eps={eps_d:g}) witnesses"
    method = (
        f"sequential select-then-certify: selection batch {first_}, then up to {looks} certification batches "
        f"(growth {growth_:g}, at most {n_max_} outputs per input); at each look witnesses ({_events_text(kind, ld)}) "
        f"are selected on all earlier outputs and certified on the fresh batch with exact Clopper-Pearson bounds; "
        f"alpha spending: alpha/{looks} per look (equal spending, union bound over looks), Bonferroni over {tests} "
        f"tests{fam}: each test at level {a:.3g}; stopped after {len(rounds)} look(s)"
        f"{' (refuted)' if refuted else ''}; no cap on eps_LB"
    )
    return _finish(
        best, kind, pairs_, sel, ld_int, n_per_input * len(sel), alpha_, method, eps_d, rows,
        claimed_eps=c_eps, claimed_delta=c_delta, refuted=refuted, rounds=rounds,
    )  # fmt: skip
