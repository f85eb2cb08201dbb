"""Empirical privacy auditing: a valid lower bound on eps for any mechanism, black box included.

:func:`audit` draws outputs of a sampler ``sampler(x, n, rng)`` on candidate pairs of inputs
and returns a lower bound ``eps_LB`` on the mechanism's eps that holds with probability at
least ``1 - alpha`` over the whole search (input pairs, orders, events, thresholds).

Method (select, then certify on fresh samples):

* For every input, ``n`` outputs are drawn; the first ``round(split * n)`` (the *selection*
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
of ``n2`` the Clopper-Pearson upper bound is ``1 - (a/2)^(1/n2) > 0``), so ``eps_LB`` is
always finite here; it is never capped at any constant either: it grows like
``log(n2)`` on an event that one input never produces.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, _show, invalid

__all__ = ["AuditResult", "Witness", "audit", "sampler_of", "MIN_HALF", "GRID_SIZE"]

#: Fewest samples per input in each of the selection and certification halves.
MIN_HALF = 10

#: Number of quantiles of the pooled selection outputs used as thresholds / interval ends
#: for real outputs (intervals: GRID_SIZE^2 / 2 candidates, scored vectorised).
GRID_SIZE = 128

Sampler = Callable[[Any, int, np.random.Generator], ArrayLike]

_EVENT_KINDS = ("outputs", "threshold", "interval")


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


def _key(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise invalid(name, value, "a real number")
    out = float(value)
    if math.isnan(out):
        raise invalid(name, value, "a real number (not NaN)")
    return out


def _check_event(event: Any) -> dict[str, Any]:
    expected = (
        '{"kind": "outputs", "values": [...]}, {"kind": "threshold", "t": float, "side": "above"|"below"} '
        'or {"kind": "interval", "lo": float, "hi": float}'
    )
    if not isinstance(event, dict) or event.get("kind") not in _EVENT_KINDS:
        raise invalid("event", event, expected)
    kind = event["kind"]
    if kind == "outputs":
        if set(event) != {"kind", "values"}:
            raise invalid("event", event, expected)
        vals = event["values"]
        if isinstance(vals, (str, bytes)) or np.ndim(vals) != 1:
            raise invalid("event", event, expected)
        out = []
        for val in vals:
            if isinstance(val, bool) or not isinstance(val, (numbers.Integral, np.integer)):
                raise invalid("event values", val, "integer outputs")
            out.append(int(val))
        return {"kind": "outputs", "values": sorted(set(out))}
    if kind == "threshold":
        if set(event) != {"kind", "t", "side"} or event["side"] not in ("above", "below"):
            raise invalid("event", event, expected)
        return {"kind": "threshold", "t": _number(event["t"], "event t"), "side": event["side"]}
    if set(event) != {"kind", "lo", "hi"}:
        raise invalid("event", event, expected)
    lo, hi = _number(event["lo"], "event lo"), _number(event["hi"], "event hi")
    if not lo < hi:
        raise invalid("event", event, "an interval with lo < hi")
    return {"kind": "interval", "lo": lo, "hi": hi}


# --------------------------------------------------------------------------- witness
@dataclass(frozen=True)
class Witness:
    """A replayable witness: inputs ``x`` and ``x_prime`` and an event on the outputs.

    ``event`` is a JSON-serialisable dict: ``{"kind": "outputs", "values": [...]}`` (a set of
    finite outputs), ``{"kind": "threshold", "t": t, "side": "above"}`` (``y > t``) or
    ``"below"`` (``y <= t``), or ``{"kind": "interval", "lo": lo, "hi": hi}``
    (``lo < y <= hi``). Inputs are stored in their JSON form (tuples become lists).
    """

    x: Any
    x_prime: Any
    event: dict[str, Any]

    __hash__ = None  # type: ignore[assignment]  # the event is a dict

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _plain(self.x))
        object.__setattr__(self, "x_prime", _plain(self.x_prime))
        object.__setattr__(self, "event", _check_event(self.event))

    def contains(self, outputs: ArrayLike) -> NDArray[np.bool_]:
        """Boolean mask: which of ``outputs`` (a 1-D array) fall in the event."""
        y = np.asarray(outputs)
        if y.dtype == bool or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
            raise invalid("outputs", outputs, "an array of real outputs")
        ev = self.event
        if ev["kind"] == "outputs":
            return np.isin(y, np.asarray(ev["values"], dtype=np.int64))
        if ev["kind"] == "threshold":
            return y > ev["t"] if ev["side"] == "above" else y <= ev["t"]
        return (y > ev["lo"]) & (y <= ev["hi"])

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "x_prime": self.x_prime, "event": dict(self.event)}

    def to_json(self) -> str:
        """The witness as a JSON string (strict JSON: infinite thresholds are never produced)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Witness":
        """Inverse of :meth:`to_json`; malformed text raises :class:`LdpSimError`."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise invalid("witness JSON", text, f"a JSON object ({exc})") from None
        if not isinstance(data, dict) or set(data) != {"x", "x_prime", "event"}:
            raise invalid("witness JSON", text, 'an object with keys "x", "x_prime", "event"')
        return cls(data["x"], data["x_prime"], data["event"])


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    ``eps_lb``: lower bound on eps, valid with probability >= 1 - alpha (0 when nothing is
    certified; finite for sampled evidence, never capped). ``delta_lb``: lower bound on the
    smallest delta at ``eps_for_delta`` (None when not asked), valid jointly with ``eps_lb``.
    ``witness`` / ``delta_witness``: the witnesses achieving them (None when the bound is 0).
    ``counts`` / ``delta_counts``: certification hits of the witness under ``x`` and
    ``x_prime`` and the certification size per input. ``n_samples_used``: total outputs
    drawn. ``method``: what was done, with the multiple-testing correction.
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

    __hash__ = None  # type: ignore[assignment]


# --------------------------------------------------------------------------- samplers
def sampler_of(mechanism: Any) -> Sampler:
    """A sampler ``(x, n, rng) -> n outputs`` for a library mechanism.

    :class:`~ldpsim.mechanisms.finite.FiniteMechanism`: ``x`` is an input label (see
    ``encode``), outputs are integer symbols. :class:`~ldpsim.mechanisms.noise.NoiseMechanism`:
    ``x`` is a real value, outputs are ``x + noise`` (floats).
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
    raise invalid("mechanism", mechanism, "a FiniteMechanism or a NoiseMechanism (or pass a sampler function)")


def _draw(sampler: Sampler, x: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    try:
        raw = sampler(x, n, rng)
    except Exception as exc:
        raise LdpSimError(f"sampler raised {type(exc).__name__}: {exc} for input x={_show(x)}") from exc
    try:
        out = np.asarray(raw)
    except Exception:  # pragma: no cover - defensive (ragged objects)
        raise invalid("sampler output", raw, f"a 1-D numeric array of {n} outputs (input x={_show(x)})") from None
    if out.dtype == bool or not (np.issubdtype(out.dtype, np.integer) or np.issubdtype(out.dtype, np.floating)):
        raise invalid(
            "sampler output", f"an array of dtype {out.dtype}", f"integer or real outputs (input x={_show(x)})"
        )
    if out.shape != (n,):
        raise invalid("sampler output", f"an array of shape {out.shape}", f"shape ({n},), one output per draw (input x={_show(x)})")
    if np.issubdtype(out.dtype, np.floating) and np.isnan(out).any():
        raise invalid("sampler output", "NaN outputs", f"real outputs, not NaN (input x={_show(x)})")
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
    with np.errstate(over="ignore", invalid="ignore"):
        s = lo_p - np.exp(eps + np.log(np.maximum(hi_q, 1e-300)))
    return np.where(np.isnan(s), -np.inf, s)


# --------------------------------------------------------------------------- selection
def _finite_candidates(sp: np.ndarray, sq: np.ndarray) -> tuple[NDArray, NDArray, NDArray]:
    """Prefixes of the outputs seen under x, sorted by smoothed ratio: events and hit counts."""
    vals, inv = np.unique(np.concatenate([sp, sq]), return_inverse=True)
    cp = np.bincount(inv[: sp.size], minlength=vals.size)
    cq = np.bincount(inv[sp.size :], minlength=vals.size)
    keep = cp > 0
    vals, cp, cq = vals[keep], cp[keep], cq[keep]
    order = np.lexsort((-cp, -(cp + 0.5) / (cq + 0.5)))
    vals, cp, cq = vals[order], np.cumsum(cp[order]), np.cumsum(cq[order])
    return vals, cp, cq  # prefix i: the event {vals[0..i]} with hits cp[i] and cq[i]


def _real_grid(pooled: np.ndarray) -> np.ndarray:
    grid = np.quantile(pooled, np.linspace(0.0, 1.0, GRID_SIZE + 1)[:-1], method="lower")
    grid = np.unique(grid[np.isfinite(grid)])
    return grid


def _select(
    kind: str, sp: np.ndarray, sq: np.ndarray, score: Callable[[NDArray, NDArray], NDArray], n1: int, z: float
) -> dict[str, Any] | None:
    """The best event on the selection halves ``sp`` (under x) and ``sq`` (under x')."""
    if kind == "finite":
        vals, hp, hq = _finite_candidates(sp, sq)
        if vals.size == 0:
            return None
        s = score(_wilson(hp, n1, z)[0], _wilson(hq, n1, z)[1])
        best = int(np.argmax(s))
        return {"kind": "outputs", "values": np.sort(vals[: best + 1]).tolist()}
    grid = _real_grid(np.concatenate([sp, sq]))
    if grid.size == 0:
        return None
    sp_s, sq_s = np.sort(sp), np.sort(sq)
    cp = np.searchsorted(sp_s, grid, side="right")  # #{y <= t}
    cq = np.searchsorted(sq_s, grid, side="right")
    hp_parts, hq_parts = [cp, n1 - cp], [cq, n1 - cq]
    g = grid.size
    i, j = np.triu_indices(g, k=1)
    hp_parts.append(cp[j] - cp[i])
    hq_parts.append(cq[j] - cq[i])
    hp, hq = np.concatenate(hp_parts), np.concatenate(hq_parts)
    s = score(_wilson(hp, n1, z)[0], _wilson(hq, n1, z)[1])
    best = int(np.argmax(s))
    if best < g:
        return {"kind": "threshold", "t": float(grid[best]), "side": "below"}
    if best < 2 * g:
        return {"kind": "threshold", "t": float(grid[best - g]), "side": "above"}
    b = best - 2 * g
    return {"kind": "interval", "lo": float(grid[i[b]]), "hi": float(grid[j[b]])}


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
        out.append((a, b))
    return out


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
) -> AuditResult:
    """Lower bound on the eps of a mechanism from samples, valid with probability >= 1 - alpha.

    ``sampler(x, n, rng)`` returns ``n`` outputs (a 1-D array; integers for finite outputs,
    floats for real scalar outputs) of the mechanism on input ``x``; a library mechanism is
    accepted directly (wrapped with :func:`sampler_of`). ``pairs``: candidate pairs of
    inputs, each audited in both orders. ``n``: outputs drawn per distinct input, split into
    a selection part (``split``) and a certification part. ``outputs``: ``"finite"``,
    ``"real"`` or ``"auto"`` (finite when every sample has an integer dtype).
    ``eps_for_delta``: also return a lower bound on delta at that eps.

    See the module docstring for the method and its validity.
    """
    if not callable(sampler):
        sampler = sampler_of(sampler)
    pairs_ = _check_pairs(pairs)
    alpha_ = v._as_float(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < alpha_ < 1.0:
        raise invalid("alpha", alpha, "a number in (0, 1)")
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
    if outputs not in ("auto", "finite", "real"):
        raise invalid("outputs", outputs, '"auto", "finite" or "real"')
    eps_d = None if eps_for_delta is None else v.epsilon(eps_for_delta, "eps_for_delta")
    gen = as_generator(rng)

    # one batch of n outputs per distinct input, shared by all the pairs it appears in
    samples: dict[str, np.ndarray] = {}
    for pair in pairs_:
        for x in pair:
            key = _key(x)
            if key not in samples:
                samples[key] = _draw(sampler, x, n_, gen)
    all_int = all(np.issubdtype(s.dtype, np.integer) for s in samples.values())
    kind = ("finite" if all_int else "real") if outputs == "auto" else outputs
    if kind == "finite" and not all_int:
        for key, s in samples.items():
            if not np.issubdtype(s.dtype, np.integer):
                if not (np.all(np.isfinite(s)) and np.all(s == np.floor(s))):
                    raise invalid("sampler output", f"non-integer outputs for input x={key}", 'integer outputs (outputs="finite")')
        samples = {key: s.astype(np.int64) for key, s in samples.items()}
    if kind == "real":
        samples = {key: s.astype(np.float64) for key, s in samples.items()}

    families = 1 if eps_d is None else 2
    tests = 2 * len(pairs_)
    a = alpha_ / families / tests  # per certified test; each side of the ratio gets a / 2
    z = float(stats.norm.isf(a / 2.0))

    best_eps, best_w, best_counts = 0.0, None, {}
    best_delta, best_dw, best_dcounts = 0.0, None, {}
    ordered = [(p0, p1) for p0, p1 in pairs_] + [(p1, p0) for p0, p1 in pairs_]
    for x, xp in ordered:
        full_p, full_q = samples[_key(x)], samples[_key(xp)]
        sp, sq = full_p[:n1], full_q[:n1]
        cp_, cq_ = full_p[n1:], full_q[n1:]
        goals: list[tuple[str, Callable[[NDArray, NDArray], NDArray]]] = [("eps", _eps_score)]
        if eps_d is not None:
            goals.append(("delta", lambda lo, hi: _delta_score(lo, hi, eps_d)))
        for goal, score in goals:
            event = _select(kind, sp, sq, score, n1, z)
            if event is None:
                continue
            w = Witness(x, xp, event)
            hp = int(np.count_nonzero(w.contains(cp_)))
            hq = int(np.count_nonzero(w.contains(cq_)))
            lo = float(_cp_lower(hp, n2, a / 2.0))
            hi = float(_cp_upper(hq, n2, a / 2.0))
            counts = {"hits_x": hp, "hits_x_prime": hq, "n_per_input": n2}
            if goal == "eps":
                val = float(_eps_score(np.array(lo), np.array(hi)))
                if val > best_eps:
                    best_eps, best_w, best_counts = val, w, counts
            else:
                val = float(_delta_score(np.array(lo), np.array(hi), eps_d))  # type: ignore[arg-type]
                if val > best_delta:
                    best_delta, best_dw, best_dcounts = val, w, counts

    fam = "" if eps_d is None else f", alpha split equally between the eps and the delta (at eps={eps_d:g}) witnesses"
    method = (
        f"select-then-certify: per input, {n1} outputs select one witness event per ordered pair "
        f"({'output sets by observed ratio' if kind == 'finite' else 'thresholds and intervals on a quantile grid'}, "
        f"Wilson-score plug-in), {n2} fresh outputs certify it with exact Clopper-Pearson bounds; "
        f"Bonferroni over {tests} tests (2 orders x {len(pairs_)} pairs){fam}: each test at level {a:.3g}, "
        f"{a / 2:.3g} per side; eps_LB finite (sampled evidence cannot prove zero mass), no cap"
    )
    return AuditResult(
        eps_lb=best_eps,
        delta_lb=None if eps_d is None else best_delta,
        witness=best_w,
        counts=best_counts,
        n_samples_used=n_ * len(samples),
        alpha=alpha_,
        method=method,
        eps_for_delta=eps_d,
        delta_witness=best_dw,
        delta_counts=best_dcounts,
    )
