"""Subset selection (Wang et al. 2016; Ye and Barg 2018): each client reports a
subset of ``omega`` of the ``k`` answers, ``e^eps`` times likelier when it holds its own.

The mechanism
-------------
The report is a subset ``Y`` of ``{0, .., k-1}`` with ``|Y| = omega`` (``1 <= omega <=
k - 1``), sent as its ``omega`` items in increasing order, with

    P(Y | x) = e^eps / Z  if x in Y,   1 / Z  otherwise,
    Z = C(k-1, omega-1) e^eps + C(k-1, omega).

Equivalently: ``x`` is in ``Y`` with probability
``p_in = omega e^eps / (omega e^eps + k - omega)``, and the other members are uniform
without replacement among the other ``k - 1`` answers. ``omega = 1`` is k-ary randomized
response.

By default ``omega`` minimises the exact worst-case squared l2 error of the estimator below.
Its sum of variances ``sum_x mu_x (1 - mu_x) / (n (p_in - q_in)^2)`` (with ``mu_x`` the
inclusion probability of ``x``, summing to ``omega``) is largest at the uniform input
distribution, where it equals

    R(omega) = (k - 1)^2 (omega (e^eps - 1) + k)^2 / (n k omega (k - omega) (e^eps - 1)^2).

``log R`` has the single stationary point ``omega = k / (e^eps + 1)`` on ``(0, k)``
(Wang et al. 2016 and Ye and Barg 2018 derive the same point), so the best integer is the
floor or the ceiling of ``k / (e^eps + 1)``, clipped to ``1..k-1``: :func:`optimal_omega`
takes the one with the smaller ``R`` (the smaller one on a tie).

Exact privacy
-------------
For two inputs ``x != x'`` the subsets split four ways: ``x in Y, x' not`` (``C(k-2,
omega-1)`` subsets, privacy loss ``eps``), the reverse (the same number, loss ``-eps``),
both or neither (loss 0). Under ``x`` the loss is ``eps`` with probability
``a = p_in (k - omega) / (k - 1)`` and ``-eps`` with probability ``a e^-eps``, so the pure eps
is exactly ``eps`` and, for ``t < eps``, ``delta(t) = a (1 - e^(t - eps))``, the same for every
pair; ``epsilon(delta) = eps + log(1 - delta / a)``, polished to the smallest float.

The estimator
-------------
The statistic is the inclusion count ``c_z`` of each answer. Item ``z`` is in ``Y`` with
probability ``p_in`` when ``z = x`` and ``q_in = (omega - p_in) / (k - 1)`` otherwise, so

    est_x = (c_x / n - q_in) / (p_in - q_in)

is unbiased (and the estimates sum to one, since the counts sum to ``n omega``). With
``mu_z = q_in + (p_in - q_in) P_z``, two items ``z != z'`` are both in ``Y`` with
probability ``r1 = p_in (omega - 1)/(k - 1)`` when one of them is the input and
``r0 = (p_in (omega-1)(omega-2) + (1 - p_in) omega (omega-1)) / ((k-1)(k-2))`` otherwise, so
``mu_zz' = r1 (P_z + P_z') + r0 (1 - P_z - P_z')`` and, exactly,

    Var(est_z) = mu_z (1 - mu_z) / (n (p_in - q_in)^2),
    Cov(est_z, est_z') = (mu_zz' - mu_z mu_z') / (n (p_in - q_in)^2).

Sampling, and why there is no aggregate mode
--------------------------------------------
:meth:`SubsetSelection.privatize` first decides, per client, whether ``x`` is in ``Y``
(probability ``p_in``), then draws the rest uniformly, vectorised over a chunk of clients:

- small subsets (``omega <= k / 64``) as ``omega`` uniform draws per row, the repeated items
  (and an ``x`` that must stay out) drawn again until the row is a set;
- larger ones on one bitmap row per client: independent Bernoulli(``w/k``) bits for the
  set of size ``w = min(omega, k - omega)`` (``Y`` or its complement) with the bit of ``x``
  forced, then uniform members other than ``x`` removed, or non-members added, until the
  set has ``w`` items (rejection sampling, in rounds over all the rows at once).

Both are exact: the size is fixed, and each procedure commutes with relabelling the items
other than ``x``, so given the membership of ``x`` the set is uniform, which is the law
above. The cost is O(omega) per client for small subsets and O(k) bytes per client on the
bitmap, with memory bounded per chunk.

The aggregate statistic of ``n`` clients is a sum of ``n`` random subsets: no closed law
(unlike the multinomial counts of a finite mechanism), and an exact draw at a cost
independent of ``n`` would need either ``O(k^2 omega)`` binomial draws (an item-by-item
chain per input) or hypergeometric splits of the clients, which numpy cannot draw exactly
beyond 10^9. So ``aggregate_exact`` is False and :meth:`sample_statistic` raises
:class:`~ldpsim.mechanisms.base.NotAvailable`: run subset selection in individual mode.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import target_indices
from ldpsim.mechanisms.finite import ALL_PAIRS_MAX_K, _map_eps, _smallest_eps, check_dense
from ldpsim.mechanisms.oracles._pure import PureSupport
from ldpsim.privacy.guarantees import PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD

#: :meth:`SubsetSelection.possible_reports` lists at most this many subsets.
MAX_REPORTS = 1 << 16

#: Bytes of the per-chunk bitmap of :meth:`SubsetSelection.privatize` (one ``k``-byte row
#: per client): bounds its temporary memory whatever the number of clients.
BITMAP_BYTES = 1 << 21

#: :meth:`SubsetSelection.privatize` draws subsets of at most ``k / SPARSE_RATIO`` items as
#: lists of items, larger ones on bitmaps.
SPARSE_RATIO = 64

#: Report entries counted per pass of :meth:`SubsetSelection.statistic` (bounds the int64
#: copy numpy's bincount makes).
COUNT_BLOCK = 1 << 22


def _log_comb(n: int, r: int) -> float:
    """``log C(n, r)``: exact through the integer binomial for moderate ``n``."""
    if n <= 2000:
        return math.log(math.comb(n, r))
    return math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)


def _log_risk(k: int, eps: float, omega: int) -> float:
    """``log`` of the worst-case squared l2 risk up to terms free of omega:
    ``2 log(omega (e^eps - 1) + k) - log omega - log(k - omega)``, without overflow."""
    tail = math.exp(-eps)
    return 2.0 * (eps + math.log(omega * -math.expm1(-eps) + k * tail)) - math.log(omega) - math.log(k - omega)


def optimal_omega(k: int, eps: float) -> int:
    """The subset size that minimises the exact worst-case squared l2 error of the
    estimator: the floor or the ceiling of ``k / (e^eps + 1)`` (clipped to ``1..k-1``),
    whichever gives the smaller risk (the smaller size on a tie)."""
    k = v.alphabet_size(k, "k")
    eps = v.epsilon(eps, "eps")
    star = k * math.exp(-eps) / (1.0 + math.exp(-eps))  # k / (e^eps + 1)
    lo = min(k - 1, max(1, math.floor(star)))
    hi = min(k - 1, max(1, math.ceil(star)))
    if hi == lo:
        return lo
    return hi if _log_risk(k, eps, hi) < _log_risk(k, eps, lo) else lo


def _distinct(values: NDArray[np.int64]) -> NDArray[np.int64]:
    """The distinct values, sorted (a sort and a comparison: faster here than np.unique)."""
    values = np.sort(values)
    keep = np.ones(values.size, dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]


class SubsetSelection(PureSupport):
    """Subset selection on ``k`` inputs at privacy level ``eps`` with subsets of size
    ``omega`` (default :func:`optimal_omega`); see the module docstring for the law, the
    exact privacy (``delta(t) = p_in (k - omega)/(k - 1) (1 - e^(t - eps))`` below ``eps``)
    and the estimator with its exact covariance.

    A report is ``omega`` distinct items in increasing order (``report_shape = (omega,)``),
    stored in the smallest unsigned integer type that holds ``k - 1``; the statistic is the
    inclusion count of each of the ``k`` items. ``report_bits`` is ``log2 C(k, omega)``, the
    size of a subset in the combinatorial number system.
    """

    pure_attributes = ("p_in", "q_in", "gap")
    support_label = "subset-selection support"

    name: ClassVar[str] = "subset_selection"
    aggregate_exact: ClassVar[bool] = False

    def __init__(self, k: int, eps: float, omega: int | None = None) -> None:
        k = v.alphabet_size(k, "k")
        eps = v.epsilon(eps, "eps")
        if omega is None:
            omega = optimal_omega(k, eps)
        else:
            omega = v.integer(omega, "omega", minimum=1, maximum=k - 1)
        self.k, self.eps, self.omega = k, eps, omega
        self.input_labels = tuple(range(k))
        self.report_shape = (omega,)
        self.report_dtype = np.min_scalar_type(k - 1)
        tail = math.exp(-eps)
        ratio = (k - omega) / omega * tail  # (1 - p_in) / p_in
        #: P(x in Y | x)
        self.p_in = 1.0 / (1.0 + ratio)
        #: P(x not in Y | x), without cancellation
        self.p_not = ratio / (1.0 + ratio)
        #: P(z in Y | x) for z != x
        self.q_in = ((omega - 1) + self.p_not) / (k - 1)
        #: P(z not in Y | x) for z != x
        self.q_not = ((k - 1 - omega) + self.p_in) / (k - 1)
        #: p_in - q_in, without cancellation
        self.gap = omega * (k - omega) * -math.expm1(-eps) / ((k - 1) * (omega + (k - omega) * tail))
        #: P(x and z in Y | x), P(z and z' in Y | x) for x, z, z' distinct
        self.r1 = self.p_in * (omega - 1) / (k - 1)
        self.r0 = (
            (self.p_in * (omega - 1) * (omega - 2) + self.p_not * omega * (omega - 1)) / ((k - 1) * (k - 2))
            if k > 2
            else 0.0
        )
        log_z = _log_comb(k - 1, omega - 1) + eps + math.log1p(ratio)
        self.log_p_with = eps - log_z
        self.log_p_without = -log_z
        # the loss atoms of every pair: eps w.p. a, -eps w.p. a e^-eps, 0 otherwise
        self.mass_up = self.p_in * (k - omega) / (k - 1)
        self.mass_down = self.p_not * omega / (k - 1)
        self.mass_zero = (self.p_in * (omega - 1) + self.p_not * (k - 1 - omega)) / (k - 1)

    # ----------------------------------------------------------------- identity
    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "eps": self.eps, "omega": self.omega}

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        return self.input_labels == other.input_labels  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return super().__hash__()

    def _index(self, x: Any) -> int:
        cache = self.__dict__.get("_lookup")
        if cache is None or cache[0] is not self.input_labels:
            cache = (self.input_labels, {label: i for i, label in enumerate(self.input_labels)})
            self.__dict__["_lookup"] = cache
        try:
            return cache[1][x]
        except (KeyError, TypeError):
            raise invalid("x", x, f"one of the {self.k} input labels") from None

    def neighbours(self) -> list[tuple[Any, Any]]:
        """Every unordered pair of input labels when ``k <= 6``, else ``(label_0, label_j)``;
        all pairs have the same privacy-loss law."""
        labels = self.input_labels
        if len(labels) <= ALL_PAIRS_MAX_K:
            return [(labels[i], labels[j]) for i in range(len(labels)) for j in range(i + 1, len(labels))]
        return [(labels[0], labels[j]) for j in range(1, len(labels))]

    # ----------------------------------------------------------------- the law
    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.integer]:
        """``n`` reports (an ``n x omega`` array) for the input label ``x``: the draws of
        :meth:`privatize` of ``n`` copies of its index."""
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, self._index(x), dtype=np.int64), rng)

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """``log P(Y | x)`` for report rows ``y`` (shape ``(..., omega)``): ``eps - log Z``
        when ``x`` is in the row, ``-log Z`` when not, ``-inf`` for rows that are not
        ``omega`` increasing integers in ``0..k-1``; a row with a NaN gives NaN. One row
        gives a float. With ``omega = 1`` the reports may also be given as plain items
        (shape ``(...)``)."""
        i = self._index(x)
        arr = v.real_array(y, "y", f"reports: rows of {self.omega} increasing integers in 0..{self.k - 1}")
        if self.omega == 1 and (arr.ndim == 0 or arr.shape[-1] != 1):
            arr = arr[..., None]  # single items may come without their axis of length 1 (the auditor's form)
        if arr.ndim == 0 or arr.shape[-1] != self.omega:
            raise invalid("y", f"an array of shape {arr.shape}", f"reports of shape (..., {self.omega})")
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(arr) & (np.floor(arr) == arr) & (arr >= 0) & (arr < self.k)
            ok = whole.all(axis=-1) & (np.diff(arr, axis=-1) > 0).all(axis=-1)
        holds = (arr == i).any(axis=-1)
        out = np.where(ok, np.where(holds, self.log_p_with, self.log_p_without), -np.inf)
        out = np.where(np.isnan(arr).any(axis=-1), np.nan, out)
        return float(out) if out.ndim == 0 else out

    def possible_reports(self) -> NDArray[np.integer]:
        """Every subset of size ``omega`` (``C(k, omega) x omega``, rows increasing), for
        ``C(k, omega) <=`` :data:`MAX_REPORTS`."""
        count = math.comb(self.k, self.omega)
        if count > MAX_REPORTS:
            raise invalid(
                "k",
                self.k,
                f"C(k, omega) <= {MAX_REPORTS} subsets to list (here C({self.k}, {self.omega}) = {count:.3g})",
            )
        rows = np.array(list(combinations(range(self.k), self.omega)), dtype=self.report_dtype)
        return rows.reshape(count, self.omega)

    # ----------------------------------------------------------------- exact privacy
    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """The smallest eps at which the mechanism is (eps, delta)-LDP: ``eps`` at
        ``delta = 0``, else the smallest float ``t`` with ``delta(t) <= delta`` (0.0 from
        ``delta(0)`` on). ``delta`` may be an array."""
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0:
            return self.eps
        a = self.mass_up
        guess = self.eps + math.log1p(-delta / a) if delta < a else 0.0
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, self.eps, guess)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact smallest delta at ``eps``: ``p_in (k - omega)/(k - 1) (1 - e^(eps_0 - eps))``
        below the mechanism's ``eps_0``, 0 from it on (scalar or array)."""
        return _map_eps(eps, self._delta_scalar)

    def _delta_scalar(self, eps: float) -> float:
        if eps >= self.eps:
            return 0.0
        return self.mass_up * -math.expm1(eps - self.eps)

    def pld(self) -> DiscretePLD:
        """The privacy-loss law of any input against any other: atoms ``eps, 0, -eps``."""
        atoms = [(self.eps, self.mass_up), (0.0, self.mass_zero), (-self.eps, self.mass_down)]
        loss = [t for t, m in atoms if m > 0]
        log_p = [math.log(m) for t, m in atoms if m > 0]
        return DiscretePLD.from_atoms(loss, log_p)

    def guarantee(self) -> PLDGuarantee:
        """The exact guarantee (the loss law of every ordered pair of distinct inputs)."""
        pld = self.pld()
        return PLDGuarantee((pld, pld.swap()), label=repr(self))

    # ----------------------------------------------------------------- sampling
    # reports are bit vectors (one row per entry of x), not the int64 codes of FrequencyOracle.privatize
    def privatize(self, x: ArrayLike, rng: RNGLike = None, *, chunk_size: int | None = None) -> NDArray[np.integer]:  # type: ignore[override]
        """One report per entry of ``x`` (symbol indices): shape ``x.shape + (omega,)``.

        Vectorised in chunks (by default as many clients as fit a bitmap of
        :data:`BITMAP_BYTES`), so temporary memory is bounded whatever ``x.size``; the
        result is determined by the generator state and the chunk size."""
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        chunk = max(1, BITMAP_BYTES // self.k) if chunk_size is None else v.integer(chunk_size, "chunk_size", minimum=1)
        flat = arr.reshape(-1)
        out = np.empty((flat.size, self.omega), dtype=self.report_dtype)
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            out[start:stop] = self._privatize_chunk(flat[start:stop].astype(np.int64), gen)
        return out.reshape(arr.shape + (self.omega,))

    def _privatize_chunk(self, x: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.integer]:
        want = rng.random(x.size) < self.p_in  # x in Y
        if self.omega * SPARSE_RATIO <= self.k:
            return self._sparse_rows(x, want, rng).astype(self.report_dtype, copy=False)
        return self._dense_rows(x, want, rng).astype(self.report_dtype, copy=False)

    def _sparse_rows(
        self, x: NDArray[np.int64], want: NDArray[np.bool_], rng: np.random.Generator
    ) -> NDArray[np.int64]:
        """Small subsets: ``omega`` uniform draws per row (the first one ``x`` where it must be
        in), then every repeated item and every ``x`` that must be out is drawn again until
        the row is a set. The procedure commutes with relabelling the items other than
        ``x``, and the size is fixed, so each row is uniform given the membership of ``x``."""
        c, k = x.size, self.k
        rows = rng.integers(0, k, size=(c, self.omega), dtype=np.int64)
        rows[want, 0] = x[want]
        while True:
            rows.sort(axis=1)
            bad = np.zeros(rows.shape, dtype=bool)
            bad[:, 1:] = rows[:, 1:] == rows[:, :-1]  # later copies of a repeated item
            bad |= ~want[:, None] & (rows == x[:, None])
            count = int(np.count_nonzero(bad))
            if count == 0:
                return rows
            rows[bad] = rng.integers(0, k, size=count, dtype=np.int64)

    def _dense_rows(self, x: NDArray[np.int64], want: NDArray[np.bool_], rng: np.random.Generator) -> NDArray[np.int64]:
        """Large subsets, on one bitmap row per client: the set ``V`` of size
        ``w = min(omega, k - omega)`` (``Y`` itself, or its complement when
        ``omega > k/2``) starts as independent Bernoulli(``w/k``) bits (rounded to a multiple
        of 1/256 or 1/65536) with the bit of ``x`` forced; given its size, the set of the
        other items is uniform, and uniformly chosen members other than ``x`` are removed
        (or non-members added) until it has ``w`` items: each row is uniform given the
        membership of ``x``. Within a round of proposals every distinct acceptable one is
        taken (never more than the row still needs), which is sequential sampling without
        replacement by rejection."""
        c, k = x.size, self.k
        w = min(self.omega, k - self.omega)
        complement = w != self.omega
        inside = want ^ complement  # x in V
        aim = w / k  # any bit probability keeps the law exact; w / k needs the fewest fixes
        if aim >= 1.0 / 16:
            bits = rng.integers(0, 256, size=(c, k), dtype=np.uint8) < math.floor(256 * aim)
        else:
            bits = rng.integers(0, 1 << 16, size=(c, k), dtype=np.uint16) < math.floor(65536 * aim)
        cells = bits.reshape(-1)
        base = np.arange(c, dtype=np.int64) * k
        cells[base + x] = inside
        size = np.count_nonzero(bits, axis=1)
        need = w - size
        rows = np.flatnonzero(need < 0)
        if rows.size:  # remove uniform members other than x
            members = np.flatnonzero(bits[rows])  # i * k + item for the i-th of these rows
            counts = size[rows]
            starts = np.cumsum(counts) - counts
            left = -need[rows]
            while True:
                act = np.flatnonzero(left > 0)
                if act.size == 0:
                    break
                rep = np.repeat(act, left[act])
                item = members[starts[rep] + rng.integers(0, counts[rep])] - rep * k
                cell = base[rows[rep]] + item
                ok = (item != x[rows[rep]]) & cells[cell]
                done = _distinct(cell[ok])
                cells[done] = False
                left -= np.bincount(done // k, minlength=c)[rows]
        rows = np.flatnonzero(need > 0)
        if rows.size:  # add uniform non-members other than x (accepted w.p. >= 1/2)
            left = need[rows]
            while True:
                act = np.flatnonzero(left > 0)
                if act.size == 0:
                    break
                rep = np.repeat(act, left[act])
                item = rng.integers(0, k, size=rep.size, dtype=np.int64)
                cell = base[rows[rep]] + item
                ok = (item != x[rows[rep]]) & ~cells[cell]
                done = _distinct(cell[ok])
                cells[done] = True
                left -= np.bincount(done // k, minlength=c)[rows]
        if complement:
            np.logical_not(bits, out=bits)
        items = np.flatnonzero(cells).reshape(c, self.omega)
        items -= base[:, None]
        return items

    # ----------------------------------------------------------------- the statistic
    @property
    def statistic_size(self) -> int:
        return self.k

    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """The inclusion count of each item over report rows (shape ``(..., omega)``)."""
        arr = np.asarray(reports)
        if self.omega == 1 and (arr.ndim == 0 or arr.shape[-1] != 1):
            arr = arr[..., None]
        expected = f"reports of shape (..., {self.omega}) with integer items in 0..{self.k - 1}"
        if arr.ndim == 0 or arr.shape[-1] != self.omega or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise invalid("reports", f"an array of shape {arr.shape} and dtype {arr.dtype}", expected)
        flat = arr.reshape(-1)
        counts = np.zeros(self.k, dtype=np.int64)
        for start in range(0, flat.size, COUNT_BLOCK):
            block = flat[start : start + COUNT_BLOCK]
            if int(block.min()) < 0 or int(block.max()) >= self.k:
                raise invalid(
                    "reports", f"an item {int(block.min()) if block.min() < 0 else int(block.max())}", expected
                )
            counts += np.bincount(block, minlength=self.k)
        return counts

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """One row per report: the indicator of the items in its subset."""
        self.statistic(reports)  # the same checks, one line naming what is wrong
        rows = np.asarray(reports).reshape(-1, self.omega)
        out = np.zeros((rows.shape[0], self.k), dtype=np.int64)
        out[np.repeat(np.arange(rows.shape[0]), self.omega), rows.reshape(-1)] = 1
        return out

    def possible_outputs(self) -> NDArray[np.bool_]:
        return np.ones(self.k, dtype=bool)

    # ----------------------------------------------------------------- what fake respondents can send
    def _subsets_with(self, fixed: NDArray[np.int64], n: int, gen: np.random.Generator) -> NDArray[np.integer]:
        """``n`` subsets of size omega holding ``fixed`` and ``omega - len(fixed)`` other items,
        uniform, sorted."""
        others = np.setdiff1d(np.arange(self.k), fixed)
        pad = self.omega - fixed.size
        out = np.empty((n, self.omega), dtype=np.int64)
        out[:, : fixed.size] = fixed
        if pad:
            rows = max(1, (1 << 22) // others.size)
            for start in range(0, n, rows):
                stop = min(n, start + rows)
                keys = gen.random((stop - start, others.size))
                out[start:stop, fixed.size :] = others[np.argpartition(keys, pad - 1, axis=1)[:, :pad]]
        return np.sort(out, axis=1).astype(self.report_dtype)

    def crafted_reports(self, targets: ArrayLike, n: int, rng: RNGLike = None) -> NDArray[np.integer]:
        """The targets (the first omega of them when there are more) and random other items."""
        t = target_indices(targets, self.k)[: self.omega]
        return self._subsets_with(t, v.integer(n, "n", minimum=0), as_generator(rng))

    def random_reports(self, n: int, rng: RNGLike = None) -> NDArray[np.integer]:
        """Uniform subsets of size omega."""
        return self._subsets_with(np.zeros(0, np.int64), v.integer(n, "n", minimum=0), as_generator(rng))

    def random_report_support(self) -> NDArray[np.float64]:
        return np.full(self.k, self.omega / self.k)

    def support_size_cgf(self, lam: ArrayLike) -> NDArray[np.float64]:
        """Every report names omega items: ``omega lam``."""
        return self.omega * np.asarray(lam, dtype=np.float64)

    def itemset_support_bound(self, z: int) -> float:
        """With the input in the set: ``p_in prod_{i<z-1} (omega-1-i)/(k-1-i)`` (the other
        ``z - 1`` among the report's ``omega - 1`` others); without: ``p_in prod_{i<z}
        (omega-1-i)/(k-1-i) + p_not prod_{i<z} (omega-i)/(k-1-i)``."""
        z = v.integer(z, "z", minimum=2)
        if z > self.omega:
            return 0.0

        def prod(top: int, count: int) -> float:
            return math.prod((top - i) / (self.k - 1 - i) for i in range(count)) if count <= self.k - 1 else 0.0

        inside = self.p_in * prod(self.omega - 1, z - 1)
        outside = self.p_in * prod(self.omega - 1, z) + self.p_not * prod(self.omega, z)
        return max(inside, outside)

    def _mu(self, p: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Inclusion probabilities ``mu`` and ``1 - mu`` (each a sum of non-negative terms
        for a prior summing to one)."""
        total = float(p.sum())
        mu = self.p_in * p + self.q_in * (total - p)
        rest = self.p_not * p + self.q_not * (total - p) + (1.0 - total)
        return mu, rest

    def _pairs(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P(z and z' in Y)`` (``k x k``; the diagonal is ``mu``)."""
        total = float(p.sum())
        both = self.r1 * (p[:, None] + p[None, :]) + self.r0 * (total - p[:, None] - p[None, :])
        np.fill_diagonal(both, self._mu(p)[0])
        return both

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        """``k x k`` exact covariance of one report's inclusion indicators."""
        check_dense(self.k, self.k, "statistic covariance")
        p = np.asarray(prior, dtype=np.float64)
        mu, rest = self._mu(p)
        cov = self._pairs(p) - np.outer(mu, mu)
        np.fill_diagonal(cov, mu * rest)
        return cov

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        gap = self._support_gap()
        with np.errstate(over="ignore"):
            return self.statistic_covariance(prior) / (float(n) * gap * gap)

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        gap = self._support_gap()
        mu, rest = self._mu(np.asarray(prior, dtype=np.float64))
        with np.errstate(over="ignore"):
            return np.clip(mu * rest / (float(n) * gap * gap), 0.0, None)

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return np.sqrt(self.estimate_variance(prior, n))

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The exact variance with the inclusion probabilities replaced by the observed
        frequencies: ``f (1 - f) / (n (p_in - q_in)^2)``."""
        gap = self._support_gap()
        mu = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
        with np.errstate(over="ignore"):
            return mu * (1.0 - mu) / (float(n) * gap * gap)

    def plugin_std_error(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return np.sqrt(self.plugin_variance(f, n))

    inversion_variance = plugin_variance

    def inversion_covariance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The plug-in covariance (``k x k``): the exact covariance with ``mu`` replaced by
        the observed frequencies ``f`` and the pair probabilities by their unbiased plug-in
        ``r1 (est_z + est_z') + r0 (1 - est_z - est_z')``."""
        check_dense(self.k, self.k, "covariance")
        gap = self._support_gap()
        f = np.asarray(f, dtype=np.float64)
        est = self.invert(f)
        both = self.r1 * (est[:, None] + est[None, :]) + self.r0 * (1.0 - est[:, None] - est[None, :])
        cov = both - np.outer(f, f)
        np.fill_diagonal(cov, np.clip(f, 0.0, 1.0) * (1.0 - np.clip(f, 0.0, 1.0)))
        return cov / (float(n) * gap * gap)

    def server_operations(self, n: float) -> float:
        """omega counts per report."""
        return float(n) * float(self.omega)

    @property
    def report_bits(self) -> float:
        """``log2 C(k, omega)``: the bits of a subset in the combinatorial number system."""
        return _log_comb(self.k, self.omega) / math.log(2.0)


def subset_selection(k: int, eps: float, omega: int | None = None) -> SubsetSelection:
    """Subset selection on ``k`` inputs (exact eps = ``eps``)."""
    return SubsetSelection(k, eps, omega)


__all__ = ["SubsetSelection", "subset_selection", "optimal_omega"]
