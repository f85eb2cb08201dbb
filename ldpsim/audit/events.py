"""Event selection of the auditor: on the selection half of the samples, for one ordered
pair of inputs, the candidate events and the one that maximises a plug-in score.

Finite outputs: prefixes of the outputs sorted by the observed ratio (or by the exact
likelihood ratio when a density is known; Neyman-Pearson). Real outputs: thresholds
``y <= t``, ``y > t`` and intervals ``lo < y <= hi`` on a quantile grid of the pooled
outputs (for vector outputs, of their projections on the mean difference and on each axis),
and with a density the likelihood-ratio events ``L(y) >= c``. Candidates are scored with
Wilson score bounds (:func:`ldpsim.stats.wilson`) at the simultaneous level (the
certification level divided by the number of candidates) to damp the winner's curse;
scoring affects power only, never validity (the chosen event is certified on fresh data).
See docs/theory.md sec. 11 ("Select, then certify").

Exact-floats mode (``exact_floats=True``, real outputs only) adds the events that read the
outputs as binary64 numbers (Mironov 2012): the ``low_bits`` events ``lo < y <= hi`` with
fewer than ``T`` (or at least ``T``) trailing zero bits in the mantissa field, ``T`` in
:data:`LOW_BITS`, on the same quantile grid (:func:`_low_bits_family`), and with a density
the likelihood-ratio events compared exactly, without :func:`_lr_floor`'s tolerance. They
are more candidates of the same selection, scored together with the others; validity is
unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim.audit.witnesses import LogDensity, _log_ratio, _lr_floor, trailing_zeros
from ldpsim.stats import wilson

#: Real vector outputs are projected on every coordinate axis (besides the mean difference)
#: up to this dimension.
MAX_AXES = 16

#: Number of quantiles of the pooled selection outputs used as thresholds / interval ends
#: for real outputs (intervals: GRID_SIZE^2 / 2 candidates, scored vectorised).
GRID_SIZE = 128

#: Thresholds ``T`` on the number of trailing zero bits of the mantissa tried by the
#: exact-floats mode: ``T = 1`` is the last bit (an output of ``1 + Z`` one binade finer than
#: ``Z`` always has it 0), 2 and 4 catch drops of several binades (outputs near 0).
LOW_BITS = (1, 2, 4)


# --------------------------------------------------------------------------- scores
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


def _best(score: ArrayLike, lo_p: ArrayLike) -> int:
    """Index of the highest score; ties (e.g. several ``inf``) go to the largest ``lo_p``."""
    return int(np.lexsort((np.asarray(lo_p), np.asarray(score)))[-1])


def _finite_select(
    x: Any,
    xp: Any,
    sp: np.ndarray,
    sq: np.ndarray,
    score: Callable,
    z: float,
    ld: LogDensity | None,
    exact_floats: bool = False,
) -> tuple[dict[str, Any], bool] | None:
    """Prefixes of the observed outputs sorted by ratio (exact when ``ld`` is known, else the
    smoothed observed ratio); returns the best event and whether ``ld`` proves it has zero
    mass under ``xp``. ``exact_floats`` changes nothing: integer outputs have no float bits."""
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
    lo_p = wilson(hp, sp.size, z=z)[0]
    hi_q = np.where(zero, 0.0, wilson(hq, sq.size, z=z)[1])
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


def _low_bits_family(sp: np.ndarray, sq: np.ndarray) -> tuple[NDArray, NDArray, Callable[[int], dict[str, Any]]]:
    """Hit counts of the ``low_bits`` events: ``lo < y <= hi`` with fewer than ``T`` trailing
    zero bits in the mantissa field of ``y`` (and with at least ``T``), ``T`` in
    :data:`LOW_BITS`, ``lo < hi`` on the quantile grid of :func:`_interval_family` extended by
    ``-inf`` and ``+inf`` (so the thresholds are among them); and the event of each index.
    Counted as the interval family: cumulative sums over the sorted outputs, restricted to
    each bit class."""
    grid = np.unique(np.concatenate([[-np.inf], _real_grid(np.concatenate([sp, sq])), [np.inf]]))
    i, j = np.triu_indices(grid.size, k=1)
    m = i.size
    hits = []
    for s in (sp, sq):
        s_s = np.sort(s)
        pos = np.searchsorted(s_s, grid, side="right")  # #{y <= t}
        tz = trailing_zeros(s_s)
        total = pos[j] - pos[i]
        blocks = []
        for t in LOW_BITS:
            c = np.concatenate([[0], np.cumsum(tz < t)])[pos]  # #{y <= t_k, fewer than t zeros}
            fewer = c[j] - c[i]
            blocks += [fewer, total - fewer]
        hits.append(np.concatenate(blocks))

    def event(b: int) -> dict[str, Any]:
        block, k = divmod(b, m)
        lo, hi = float(grid[i[k]]), float(grid[j[k]])
        side = "fewer" if block % 2 == 0 else "at_least"
        return {"kind": "low_bits", "lo": lo, "hi": hi, "zeros": LOW_BITS[block // 2], "side": side}

    return hits[0], hits[1], event


def _is_axis(w: np.ndarray) -> bool:
    """True for a coordinate axis: then ``y @ w`` is the coordinate itself, bit for bit."""
    return bool(np.count_nonzero(w) == 1 and np.max(w) == 1.0)


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
    x: Any,
    xp: Any,
    sp: np.ndarray,
    sq: np.ndarray,
    score: Callable,
    z: float,
    ld: LogDensity | None,
    exact_floats: bool = False,
) -> tuple[dict[str, Any], bool] | None:
    """Thresholds ``y <= t``, ``y > t`` and intervals ``lo < y <= hi`` on a quantile grid (for
    vector outputs, of the projections ``w . y`` on :func:`_directions`), and with a density
    the likelihood-ratio events ``L(y) >= c``; the best event and whether ``ld`` proves it
    has zero mass under ``xp``. With ``exact_floats``, also the ``low_bits`` events of
    :func:`_low_bits_family` (on scalar outputs, and on the coordinates of vector outputs)
    and, with a density, the likelihood-ratio events compared exactly."""
    n_p, n_q = sp.shape[0], sq.shape[0]
    hp_parts, hq_parts, zero_parts = [], [], []
    decoders: list[Callable[[int], dict[str, Any]]] = []
    projections = [(sp, sq, None)] if sp.ndim == 1 else [(sp @ w, sq @ w, w) for w in _directions(sp, sq)]
    for p1, q1, w in projections:
        families = [_interval_family]
        if exact_floats and (w is None or _is_axis(w)):
            families.append(_low_bits_family)
        for family in families:
            hp, hq, event = family(p1, q1)
            hp_parts.append(hp)
            hq_parts.append(hq)
            zero_parts.append(np.zeros(hp.size, dtype=bool))
            if w is None:
                decoders.append(event)
            else:
                decoders.append(lambda b, event=event, w=w: {**event(b), "w": w.tolist()})  # type: ignore[misc]
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
            decoders.append(lambda b, cgrid=cgrid: {"kind": "likelihood_ratio", "c": float(cgrid[b])})  # type: ignore[misc]
            if exact_floats:  # the same events without the tolerance: L(y) >= c exactly
                hp_parts.append(n_p - np.searchsorted(lp_s, cgrid, side="left"))
                hq_parts.append(n_q - np.searchsorted(lq_s, cgrid, side="left"))
                zero_parts.append(cgrid == np.inf)
                decoders.append(
                    lambda b, cgrid=cgrid: {"kind": "likelihood_ratio", "c": float(cgrid[b]), "exact": True}  # type: ignore[misc]
                )
    sizes = np.cumsum([0] + [h.size for h in hp_parts])
    hp, hq, zero = np.concatenate(hp_parts), np.concatenate(hq_parts), np.concatenate(zero_parts)
    z = _selection_z(z, hp.size)
    lo_p = wilson(hp, n_p, z=z)[0]
    hi_q = np.where(zero, 0.0, wilson(hq, n_q, z=z)[1])
    best = _best(score(lo_p, hi_q), lo_p)
    fam = int(np.searchsorted(sizes, best, side="right")) - 1
    return decoders[fam](best - int(sizes[fam])), bool(zero[best])


def _per_output(x: Any, xp: Any, full_p: np.ndarray, full_q: np.ndarray, ld: LogDensity | None) -> pd.DataFrame:
    vals, inv = np.unique(np.concatenate([full_p, full_q]), return_inverse=True)
    cp = np.bincount(inv[: full_p.size], minlength=vals.size)
    cq = np.bincount(inv[full_p.size :], minlength=vals.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        emp = np.log(cp / full_p.size) - np.log(cq / full_q.size)
    exact = _log_ratio(ld, x, xp, vals) if ld is not None else np.full(vals.size, np.nan)
    return pd.DataFrame(
        {"output": vals, "count_x": cp, "count_x_prime": cq, "log_ratio_observed": emp, "log_ratio_exact": exact}
    )
