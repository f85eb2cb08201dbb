"""One accountant for any mix of mechanisms: the composition of a sequence of privacy
guarantees, exact where the guarantees are finite and pessimistic (an upper bound, with a
stated error) where a noise mechanism or a curve enters.

Every guarantee gives a *dominating pair* (:meth:`ldpsim.privacy.Guarantee.dominating_pld`):
a symmetric pair of distributions at least as informative as the guarantee. The composition
of the guarantees is then bounded by the product of the pairs, whose privacy-loss law is the
convolution of theirs (Dong, Roth and Su 2022; Zhu, Dong and Wang 2022):

* **exact** pairs -- :class:`~ldpsim.privacy.EpsDelta` (the quaternary mechanism),
  :class:`~ldpsim.privacy.OptimalComposition` and :class:`~ldpsim.privacy.PLDGuarantee` (a
  finite mechanism, through the hull of all its pairs) -- are composed exactly with
  :meth:`DiscretePLD.compose` and :meth:`DiscretePLD.self_compose` while the product has at
  most ``max_atoms`` atoms. A list of (eps, delta) pairs gives exactly
  :func:`~ldpsim.privacy.optimal_delta_heterogeneous` (Kairouz, Oh and Viswanath 2015);
* every other guarantee (GDP, a delta curve, a trade-off function, a noise mechanism) is
  discretised pessimistically on the lattice ``eps = j * step`` (:func:`~ldpsim.privacy.guarantees.grid_pld`:
  exact at the lattice points, linear in e^eps between them). Lattice laws stay on the
  lattice when convolved, so their atoms merge; the convolutions use FFTs under several
  exponential tilts, each atom taken from the tilt where its rounding error is smallest
  relative to it (relative accuracy in the far tails, delta down to about 1e-300), plus a
  bound on that error, so rounding never makes the result optimistic. An exact part is put
  on the same lattice by splitting each atom between its two neighbouring lattice points
  (exact when its losses are multiples of the step, pessimistic otherwise) -- the step is
  chosen so that the exact part's losses fall on the lattice when they share one spacing.

Error of the pessimistic part. For one use, delta is exact at the lattice points and
overstated between them by the chord gap of a convex function, about
``a (a + 1) step^2 / 8`` relative with ``a = |d log delta / d eps|`` (docs/theory.md, 6.1).
Composition accumulates the chords' excess; the error falls as ``step^2``. The default step
is 1/100 of the smallest standard deviation of the privacy loss among the discretised
guarantees (:func:`default_step`): the k-fold Gaussian mechanism against its exact
``sqrt(k) mu``-GDP then errs by at most 6.1e-4 relative in delta at delta = 1e-6 for k <= 100
and sigma from 0.3 to 10 (measured; the tests hold it to 1e-3; docs/privacy-accounting.md has
the table).
:meth:`Accountant.delta_error` estimates the error of a given result by redoing it at twice the
step (the difference is about three times the error at the step used).

This module never imports :mod:`ldpsim.mechanisms`; mechanisms enter through their
``guarantee()`` (an object with one is accepted as an item directly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from .. import _validate as V
from ..errors import LdpSimError, invalid
from .guarantees import EpsDelta, Guarantee, PLDGuarantee
from .pld import MAX_ATOMS, DiscretePLD, _union

Array = NDArray[np.float64]

STEP_FRACTION = 0.01
"""Default lattice step: this fraction of the smallest standard deviation of the privacy
loss (under P) among the guarantees that are discretised."""

LOG_TINY = -745.0
"""Each discretised guarantee's grid runs to the eps where its delta falls below e^-745
(the smallest double), or to where its delta stops changing."""

EPS_CAP = 1e5
"""Grids end here at the latest (the delta left there becomes an atom at infinite loss)."""

TAIL_LOG = -800.0
"""After each convolution, lattice atoms below e^-800 of the largest are dropped (the upper
ones into the infinite-loss atom, so the result stays an upper bound)."""

MAX_LATTICE = 1 << 23
"""Largest number of lattice points a convolution may produce."""

_TILT_SPACING = 5.0  # successive tilts move the tilted mean by this many standard deviations
_CUT = 46.0  # under a tilt, weights below e^-46 (1e-20) of the largest are left out (and bounded)
_MAX_TILTS = 80
_DIRECT = 200_000  # n * m up to which convolutions are direct sums (no FFT rounding)
_U = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


# --------------------------------------------------------------------------- lattice laws
@dataclass(frozen=True)
class _Lattice:
    """A symmetric loss law on the lattice ``loss = j * step``: ``log_p[i]`` is the log
    P-mass at ``j = lo + i``; ``p_inf`` the mass at infinite loss (and, by symmetry, the
    R-mass at minus infinity)."""

    step: float
    lo: int
    log_p: Array
    p_inf: float

    @property
    def hi(self) -> int:
        return self.lo + self.log_p.size - 1

    @classmethod
    def from_pld(cls, pld: DiscretePLD, step: float) -> tuple["_Lattice", bool]:
        """Split each atom between its two neighbouring lattice points, R-mass in proportion
        to the distance in e^loss (so P- and R-masses are kept, the delta curve becomes its
        chord interpolation between lattice points -- above it: pessimistic -- and a
        symmetric law stays symmetric). Returns the law and whether nothing was split."""
        h = step
        q = pld.loss / h
        j = np.floor(q)
        f = q - j
        tol = 1e-9 * np.maximum(1.0, np.abs(q))
        up = f > 1.0 - tol
        j = np.where(up, j + 1, j)
        f = np.where(up | (f < tol), 0.0, f)
        split = f > 0
        lp = pld.log_p
        with np.errstate(divide="ignore"):
            den = float(_log_expm1(np.array(h)))
            low_lp = np.where(split, lp + _log_expm1((1.0 - f) * h) - den, lp)
            high_lp = lp[split] + (1.0 - f[split]) * h + _log_expm1(f[split] * h) - den
        idx = np.concatenate([j, j[split] + 1]).astype(np.int64)
        vals = np.concatenate([low_lp, high_lp])
        if idx.size == 0:
            return cls(h, 0, np.array([-np.inf]), pld.p_inf), True
        lo, hi = int(idx.min()), int(idx.max())
        lo, hi = min(lo, -hi), max(hi, -lo)
        if hi - lo + 1 > MAX_LATTICE:
            raise invalid("step", h, f"a step giving at most {MAX_LATTICE:,} lattice points (here {hi - lo + 1:,})")
        return cls(h, lo, _group_logsumexp(idx - lo, vals, hi - lo + 1), pld.p_inf), not bool(np.any(split))

    def to_pld(self) -> DiscretePLD:
        loss = (self.lo + np.arange(self.log_p.size)) * self.step
        return DiscretePLD.from_atoms(loss, self.log_p, self.p_inf, self.p_inf)


def _log_expm1(x: Array) -> Array:
    """``log(e^x - 1)`` for x >= 0 (``-inf`` at 0), without overflow for large x."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x < 1.0, np.log(np.expm1(np.minimum(x, 1.0))), x + np.log1p(-np.exp(-np.maximum(x, 1.0))))


def _group_logsumexp(idx: NDArray[np.int64], vals: Array, size: int) -> Array:
    """``out[i] = log sum exp(vals[idx == i])`` (``-inf`` where none)."""
    top = np.full(size, -np.inf)
    np.maximum.at(top, idx, vals)
    safe = np.where(np.isfinite(top), top, 0.0)
    sums = np.zeros(size)
    with np.errstate(under="ignore"):
        np.add.at(sums, idx, np.exp(vals - safe[idx]))
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top), safe + np.log(sums), -np.inf)


def _tilted(log_p: Array, index: Array, theta: float) -> tuple[float, int, Array, float, float, float]:
    """The tilted weights ``exp(log_p + theta j - c)`` cut to where they exceed e^-_CUT:
    returns ``(c, first kept position, weights, dropped-sum bound, mean, variance)``, the
    moments over ``j >= 0`` only (at ``theta = -step/2`` a symmetric law is symmetric about 0,
    and two-humped when it has no mass near 0: its upper hump is what the next tilt follows)."""
    t = log_p + theta * index
    c = float(t.max())
    kept = np.nonzero(t >= c - _CUT)[0]
    i0, i1 = int(kept[0]), int(kept[-1])
    w = np.exp(t[i0 : i1 + 1] - c)
    idx = index[i0 : i1 + 1]
    wp = np.where(idx >= 0, w, 0.0)
    s = float(wp.sum())
    if s <= 0:
        return c, i0, w, (log_p.size - (i1 - i0 + 1)) * math.exp(-_CUT), 0.0, 0.0
    mean = float((wp * idx).sum() / s)  # not wp @ idx: a BLAS call, slow under thread contention
    var = float((wp * (idx - mean) ** 2).sum() / s)
    return c, i0, w, (log_p.size - (i1 - i0 + 1)) * math.exp(-_CUT), mean, var


def _convolve(a: _Lattice, b: _Lattice) -> _Lattice:
    """The law of the sum of independent losses (the product pair), symmetric again.

    The non-negative half is computed and the negative half mirrored from it
    (``p(-L) = p(L) e^-L`` for a symmetric pair). The convolution is done under tilts
    ``e^{theta j}``, from ``theta = -step/2`` (which centres the law at loss 0) upward until
    the tilted mean reaches the top, in steps of ``_TILT_SPACING`` tilted standard deviations;
    under each tilt the weights below e^-_CUT of the largest are cut (their sum bounds what
    that leaves out) and the rest convolved (FFT, or direct sums when small). Every atom takes
    the smallest over the tilts of its upper bound ``(computed + rounding bound + cut bound) /
    tilt``: accurate relative to itself however far in the tail it lies, and never below the
    exact value. Rounding bounds: for an FFT of length L, ``20 u log2(L) (||A||_2 ||B||_1 +
    ||A||_1 ||B||_2)`` with ``||w||_2 <= sqrt(||w||_1)`` for weights <= 1 (the error analysis of
    the FFT in Higham 2002, ch. 24, with its constant rounded up); for direct sums of n
    positive terms, ``4 u n`` relative plus the smallest normal double per term."""
    h = a.step
    n, m = a.log_p.size, b.log_p.size
    lo = a.lo + b.lo
    size = n + m - 1
    if size > MAX_LATTICE:
        raise invalid(
            "step", h, f"a step giving at most {MAX_LATTICE:,} lattice points in a composition (here {size:,})"
        )
    ga = a.lo + np.arange(n, dtype=np.float64)
    gb = b.lo + np.arange(m, dtype=np.float64)
    gk = lo + np.arange(size, dtype=np.float64)
    same = a is b
    best = np.full(size, np.inf)
    theta = -0.5 * h
    top = lo + size - 1

    def tilt(th: float) -> tuple[Any, Any, float, float]:
        ta = _tilted(a.log_p, ga, th)
        tb = ta if same else _tilted(b.log_p, gb, th)
        return ta, tb, ta[4] + tb[4], math.sqrt(ta[5] + tb[5])

    state = tilt(theta)
    for _ in range(_MAX_TILTS):
        (ca, ia, pa, da, _, _), (cb, ib, pb, db, _, _), mean, sd = state
        out = pa.size + pb.size - 1
        if pa.size * pb.size <= _DIRECT:
            c = np.convolve(pa, pb)
            bound = c * (4.0 * _U * min(pa.size, pb.size)) + _TINY * min(pa.size, pb.size)
        else:
            from scipy import fft as sp_fft  # deferred: scipy.fft adds to start-up (ldpsim analyse loads this module)

            length = sp_fft.next_fast_len(out, real=True)
            fa = sp_fft.rfft(pa, length)
            fb = fa if same else sp_fft.rfft(pb, length)
            c = sp_fft.irfft(fa * fb, length)[:out]
            sa, sb = float(pa.sum()), float(pb.sum())  # the weights are <= 1: ||w||_2 <= sqrt(sum w)
            err = 20.0 * _U * math.log2(length) * math.sqrt(sa * sb) * (math.sqrt(sa) + math.sqrt(sb))
            bound = np.full(out, err)
        cut = da + db
        k0 = ia + ib  # position of the first output in ``best``
        shift = (ca + cb) - theta * gk
        with np.errstate(divide="ignore", over="ignore"):
            # outside the window every term has a cut weight: at most ``cut``
            upper = np.full(size, math.log(cut) if cut > 0 else -np.inf) + shift
            upper[k0 : k0 + out] = np.log(np.maximum(c, 0.0) + bound + cut) + shift[k0 : k0 + out]
        np.minimum(best, upper, out=best)
        if mean >= top - 0.5 or sd < 1e-6:
            break
        # past the peak, where the masses at the tilted mean are far below what is kept
        at_mean = round(mean) - lo
        if at_mean > int(np.argmax(best)) and best[min(at_mean, size - 1)] < float(best.max()) + TAIL_LOG - 50.0:
            break
        # the next tilt: its mean _TILT_SPACING standard deviations higher (the tilted mean
        # grows with theta at the rate of the tilted variance: Newton steps, kept increasing)
        target = min(mean + _TILT_SPACING * sd, top - 0.25)
        lo_th, hi_th = theta, math.inf  # tilted mean below / above the target
        th, st = theta, state
        for _ in range(40):
            step_th = (target - st[2]) / max(st[3] ** 2, 1e-300)
            nxt = th + step_th if st[2] < target else th - abs(step_th)
            if not lo_th < nxt < hi_th:  # Newton left the bracket: bisect
                nxt = (
                    0.5 * (lo_th + hi_th)
                    if math.isfinite(hi_th)
                    else lo_th + 2.0 * (nxt - lo_th if nxt > lo_th else 1.0)
                )
            th, st = nxt, tilt(nxt)
            if abs(st[2] - target) <= 0.5 * sd:
                break
            if st[2] < target:
                lo_th = th
            else:
                hi_th = th
            if math.isfinite(hi_th) and hi_th - lo_th <= 1e-12 * (1.0 + abs(hi_th)):
                break
        theta, state = th, st
    p_inf = _union(a.p_inf, b.p_inf)
    # keep the non-negative half and mirror it; drop the far tails (upper ones into p_inf)
    half = best[-(top + 1) :] if top >= 0 else np.array([-np.inf])  # j = 0..top
    keep = np.nonzero(half >= half.max() + TAIL_LOG)[0]
    last = int(keep[-1]) if keep.size else 0
    if last < half.size - 1:
        with np.errstate(under="ignore"):
            p_inf = min(1.0, p_inf + float(np.exp(logsumexp(half[last + 1 :]))))
    half = half[: last + 1]
    j = np.arange(half.size, dtype=np.float64)
    full = np.concatenate([(half - j * h)[:0:-1], half])
    return _Lattice(h, -last, full, p_inf)


def _self_convolve(x: _Lattice, times: int) -> _Lattice:
    result: _Lattice | None = None
    base = x
    while times:
        if times & 1:
            result = base if result is None else _convolve(result, base)
        times >>= 1
        if times:
            base = _convolve(base, base)
    assert result is not None
    return result


# --------------------------------------------------------------------------- helpers
def _loss_sd(pld: DiscretePLD) -> float:
    """Standard deviation of the finite privacy loss under P (0 for a point mass)."""
    if pld.loss.size == 0:
        return 0.0
    w = np.exp(pld.log_p - pld.log_p.max())
    mean = float((w * pld.loss).sum() / w.sum())
    return float(math.sqrt(max(0.0, float((w * (pld.loss - mean) ** 2).sum() / w.sum()))))


def default_step(sd: float) -> float:
    """The default lattice step for a privacy loss of standard deviation ``sd`` (in eps):
    ``STEP_FRACTION * sd`` up to sd = 1, ``STEP_FRACTION * sqrt(sd)`` beyond. Each
    discretised use raises the mean loss by about ``step^2 / 12`` (the splitting onto the
    lattice), so k uses shift the composed loss by ``k step^2 / 12`` against its spread
    ``sqrt(k) sd``: the relative error in delta grows like ``sqrt(k) step^2 / sd``, which this
    keeps at the same level for every sd >= 1 (below 1, the chord error of one use,
    ``(step / sd)^2``, is the binding one)."""
    return STEP_FRACTION * (sd if sd <= 1.0 else math.sqrt(sd))


def _eps_max(g: Guarantee) -> float:
    """Where the grid of ``g`` can end: the first eps (to about 1%) with ``log delta <= LOG_TINY``,
    or where delta has stopped changing, or ``EPS_CAP``."""

    def ld(e: float) -> float:
        return float(np.asarray(g.log_delta(np.array([e])), dtype=np.float64).ravel()[0])

    def done(e: float) -> bool:  # below the doubles, or constant from e on (delta < 1 there)
        v = ld(e)
        return v <= LOG_TINY or (v < 0.0 and v == ld(2.0 * e))

    hi = 1.0
    if done(hi):
        while hi > 1e-12 and done(hi / 2.0):
            hi /= 2.0
        lo = hi / 2.0
    else:
        lo = hi
        while not done(hi):
            lo, hi = hi, 2.0 * hi
            if hi > EPS_CAP:
                return EPS_CAP
    while hi - lo > 0.01 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if done(mid) else (mid, hi)
    return hi


def _lattice_base(pld: DiscretePLD) -> float | None:
    """The spacing b > 0 such that every loss is an integer multiple of b (the smallest
    positive loss, if it works), else None."""
    pos = np.abs(pld.loss[pld.loss != 0])
    if pos.size == 0:
        return None
    b = float(pos.min())
    q = pld.loss / b
    return b if np.all(np.abs(q - np.round(q)) <= 1e-9 * np.maximum(1.0, np.abs(q))) else None


def _common_base(values: list[float]) -> float | None:
    """The largest b = min(values) / n (n <= 1000) of which every value is an integer
    multiple (to 1e-9 relative), or None."""
    if not values:
        return None
    v = np.asarray(values, dtype=np.float64)
    b0 = float(v.min())
    for n in range(1, 1001):
        q = v / (b0 / n)
        if np.all(np.abs(q - np.round(q)) <= 1e-9 * np.maximum(1.0, q)):
            return b0 / n
    return None


def _as_guarantee(item: Any) -> Guarantee:
    if isinstance(item, Guarantee):
        return item
    make = getattr(item, "guarantee", None)
    if callable(make):
        g = make()
        if isinstance(g, Guarantee):
            return g
        raise invalid("item", item, "an object whose guarantee() returns a ldpsim.privacy.Guarantee")
    if (
        isinstance(item, (tuple, list))
        and len(item) == 2
        and all(isinstance(x, (int, float, np.integer, np.floating)) for x in item)
    ):
        return EpsDelta(float(item[0]), float(item[1]))
    raise invalid("item", item, "a Guarantee, an (eps, delta) pair, or a mechanism (an object with guarantee())")


def _pld_key(pld: DiscretePLD) -> tuple[bytes, bytes, float, float]:
    return (pld.loss.tobytes(), pld.log_p.tobytes(), pld.p_inf, pld.r_inf)


# --------------------------------------------------------------------------- the accountant
class Accountant:
    """The composition of a sequence of privacy guarantees (adaptive composition: each
    mechanism may be chosen after seeing the earlier outputs).

    ``items`` are :class:`~ldpsim.privacy.Guarantee` objects, ``(eps, delta)`` pairs,
    mechanisms (anything with a ``guarantee()`` method) or ``(item, count)`` pairs; add more
    with :meth:`add`. Equal items are grouped and composed by repeated squaring (guarantees
    with an exact closed-form k-fold composition, :class:`EpsDelta` and :class:`GDP`, use it).

    ``step``: the lattice step of the pessimistic discretisation (default: ``STEP_FRACTION``
    times the smallest standard deviation of the privacy loss among the discretised items);
    ``max_atoms``: the largest exact product before the exact part is put on the lattice too.

    >>> acc = Accountant([(1.0, 1e-6), (0.5, 0.0), (0.5, 0.0)])
    >>> round(acc.epsilon(1e-5), 6), acc.exact
    (1.999968, True)
    """

    def __init__(self, items: Iterable[Any] = (), *, step: float | None = None, max_atoms: int = MAX_ATOMS) -> None:
        if step is not None:
            step = V.positive(step, "step")
        self._step = step
        self._max_atoms = V.integer(max_atoms, "max_atoms", minimum=1)
        self._groups: list[list[Any]] = []  # [guarantee, count]
        self._index: dict[Any, int] = {}
        self._result: tuple[DiscretePLD, bool, float | None, list[str]] | None = None
        for item in items:
            if (
                isinstance(item, (tuple, list))
                and len(item) == 2
                and not isinstance(item[0], (int, float, np.integer, np.floating))
            ):
                self.add(item[0], times=item[1])
            else:
                self.add(item)

    # ----------------------------------------------------------------- building
    def add(self, item: Any, times: int = 1) -> "Accountant":
        """Compose ``item`` (a guarantee, an (eps, delta) pair or a mechanism) ``times``
        more times; returns the accountant (calls chain)."""
        k = V.integer(times, "times", minimum=1)
        g = _as_guarantee(item)
        self._result = None
        try:
            key: Any = ("g", g)
            hash(key)
            pos = self._index.get(key)
        except (TypeError, ValueError):  # unhashable (pairs of arrays): grouped by its loss law later
            key, pos = ("id", id(g)), None
        if pos is None:
            self._index[key] = len(self._groups)
            self._groups.append([g, k])
        else:
            self._groups[pos][1] += k
        return self

    @property
    def items(self) -> list[tuple[Guarantee, int]]:
        """The grouped items: (guarantee, count)."""
        return [(g, k) for g, k in self._groups]

    @property
    def compositions(self) -> int:
        """Total number of mechanisms composed."""
        return sum(k for _, k in self._groups)

    # ----------------------------------------------------------------- the composition
    def _compute(self) -> tuple[DiscretePLD, bool, float | None, list[str]]:
        if self._result is not None:
            return self._result
        if not self._groups:
            raise invalid("items", "nothing", "at least one guarantee to compose (Accountant([...]) or add())")
        groups: list[tuple[Guarantee, int]] = []
        for g, k in self._groups:
            compose = getattr(g, "compose", None)
            if k > 1 and callable(compose):  # an exact closed-form k-fold composition
                try:
                    gk = compose(k)
                except LdpSimError:
                    gk = None
                if isinstance(gk, Guarantee):
                    g, k = gk, 1
            groups.append((g, k))
        notes: list[str] = []
        exact_plds: dict[tuple[bytes, bytes, float, float], list[Any]] = {}
        noise: list[tuple[Guarantee, int]] = []
        for g, k in groups:
            if g.exact_pld:
                q = g.dominating_pld(1.0, 0.0)
                exact_plds.setdefault(_pld_key(q), [q, 0])[1] += k
            else:
                noise.append((g, k))
        exact_part = self._exact_product([(q, k) for q, k in exact_plds.values()])
        overflow = exact_part is None and bool(exact_plds)
        if not noise and not overflow:
            assert exact_part is not None
            self._result = (exact_part, True, None, notes)
            return self._result
        # ---- the lattice: the discretised items, and the exact part split onto it
        pure = [float(g.epsilon(0.0)) for g, _ in noise]  # the largest finite loss, if any
        eps_max = [p if math.isfinite(p) else _eps_max(g) for (g, _), p in zip(noise, pure)]
        lattice_exact = [(q, k) for q, k in exact_plds.values()] if overflow else []
        step = self._step
        if step is None:
            # put the atoms that matter most on the lattice: each pure eps (where a noise
            # mechanism's loss has its largest atom) and the spacing of the exact part
            anchors = [p for p in pure if math.isfinite(p) and p > 0]
            exact_bases = [_lattice_base(q) for q in [exact_part] + [q for q, _ in lattice_exact] if q is not None]
            base = _common_base(anchors + [b for b in exact_bases if b is not None])
            if not noise and base is not None and None not in exact_bases:
                step = base  # exact items only, on a common lattice: no discretisation at all
            else:
                sds = [_loss_sd(g.dominating_pld(max(e, 1e-300) / 512.0, e)) for (g, _), e in zip(noise, eps_max)]
                sds += [_loss_sd(q) for q, _ in lattice_exact] if not noise else []
                sds = [s for s in sds if s > 0]
                step = default_step(min(sds)) if sds else 1.0
                if base is not None:
                    step = base / math.ceil(base / step - 1e-9)
        exact = True
        lat: _Lattice | None = None
        for (g, k), e in zip(noise, eps_max):
            x, _ = _Lattice.from_pld(g.dominating_pld(step, e), step)
            part = _self_convolve(x, k)
            lat = part if lat is None else _convolve(lat, part)
            exact = False
        for q, k in lattice_exact:
            x, on = _Lattice.from_pld(q, step)
            exact &= on
            part = _self_convolve(x, k)
            lat = part if lat is None else _convolve(lat, part)
        if overflow:
            notes.append(
                f"the exact product would exceed max_atoms = {self._max_atoms:,} atoms: the exact items were put on "
                f"the lattice eps = j * {step:.4g}"
                + (" (their losses are on it: still exact)" if exact else " (pessimistic)")
            )
        if exact_part is not None:
            x, on = _Lattice.from_pld(exact_part, step)
            exact &= on
            lat = x if lat is None else _convolve(lat, x)
            if not on:
                notes.append(
                    f"the exact part ({exact_part.loss.size:,} loss atoms) has losses off the lattice eps = j * "
                    f"{step:.4g}: each was split between its two neighbours (pessimistic)"
                )
        assert lat is not None
        if noise:
            notes.append(
                f"pessimistic: {sum(k for _, k in noise)} item(s) without an exact loss law discretised on the lattice "
                f"eps = j * {step:.4g} (exact at its points, an upper bound between them)"
            )
        self._result = (lat.to_pld(), exact, step, notes)
        return self._result

    def _exact_product(self, parts: list[tuple[DiscretePLD, int]]) -> DiscretePLD | None:
        """The exact product of the exact items, or None if some step would exceed max_atoms."""
        cap = self._max_atoms
        out: DiscretePLD | None = None

        def times(x: DiscretePLD | None, y: DiscretePLD) -> DiscretePLD | None:
            if x is None:
                return y
            if x.loss.size * y.loss.size > cap:
                return None
            return x.compose(y, cap)

        for q, k in parts:
            power: DiscretePLD | None = None
            base = q
            while k:
                if k & 1:
                    power = times(power, base)
                    if power is None:
                        return None
                k >>= 1
                if k:
                    if base.loss.size**2 > cap:
                        return None
                    base = base.compose(base, cap)
            assert power is not None
            out = times(out, power)
            if out is None:
                return None
        return out

    # ----------------------------------------------------------------- results
    def pld(self) -> DiscretePLD:
        """The privacy-loss law of the composed dominating pair (symmetric)."""
        return self._compute()[0]

    @property
    def exact(self) -> bool:
        """True if the result is exact (no item was discretised, nothing split)."""
        return self._compute()[1]

    @property
    def step(self) -> float | None:
        """The lattice step used (None when the result is exact without a lattice)."""
        return self._compute()[2]

    @property
    def notes(self) -> list[str]:
        """What was approximated, in words."""
        return list(self._compute()[3])

    def delta(self, eps: ArrayLike) -> Array | float:
        """Smallest delta with the composition (eps, delta)-DP (an upper bound when not
        :attr:`exact`). Vectorised over ``eps >= 0``."""
        return self.pld().delta(eps)

    def log_delta(self, eps: ArrayLike) -> Array | float:
        """Natural log of :meth:`delta`."""
        return self.pld().log_delta(eps)

    def epsilon(self, delta: float) -> float:
        """Smallest eps with ``delta(eps) <= delta`` (``inf`` if none: below the mass at
        infinite loss)."""
        return float(self.pld().epsilon(V.delta(delta, "delta")))

    def guarantee(self, label: str | None = None) -> PLDGuarantee:
        """The composition as a :class:`~ldpsim.privacy.PLDGuarantee` (for
        :func:`ldpsim.report.regions.plot_regions`, or to compose further)."""
        if label is None:
            label = f"composition of {self.compositions} mechanism(s)" + ("" if self.exact else " (pessimistic)")
        return PLDGuarantee((self.pld(),), label)

    def _coarse(self) -> "Accountant | None":
        step = self.step
        if self.exact or step is None:
            return None
        other = Accountant(step=2.0 * step, max_atoms=self._max_atoms)
        for g, k in self._groups:
            other.add(g, times=k)
        return other

    def delta_error(self, eps: ArrayLike) -> Array | float:
        """Estimated overstatement of :meth:`delta` by the discretisation (0 when exact):
        ``delta`` at twice the step minus ``delta`` at this step. The error scales as
        ``step^2``, so this is about three times the error of the value at this step."""
        coarse = self._coarse()
        if coarse is None:
            arr = np.zeros(np.shape(eps))
            return float(arr) if arr.ndim == 0 else arr
        out = np.maximum(np.asarray(coarse.delta(eps)) - np.asarray(self.delta(eps)), 0.0)
        return float(out) if np.ndim(out) == 0 else out

    def epsilon_error(self, delta: float) -> float:
        """Estimated overstatement of :meth:`epsilon` (as :meth:`delta_error`)."""
        coarse = self._coarse()
        if coarse is None:
            return 0.0
        return max(0.0, coarse.epsilon(delta) - self.epsilon(delta))

    def __repr__(self) -> str:
        parts = ", ".join(f"{g.label}" + (f" x{k}" if k > 1 else "") for g, k in self._groups)
        return f"Accountant([{parts}])"
