"""Local hashing: optimised (OLH) and binary (BLH) local hashing, with an explicit hash
family whose laws are known exactly.

**The mechanism** (Bassily and Smith 2015; Wang, Blocki, Li and Jha 2017, "Locally
differentially private protocols for frequency estimation"). Each client draws its own hash
function ``h : [k] -> [g]`` from a family ``H``, from its own randomness, hashes its answer
``x`` and reports the pair (hash seed, ``y``), where ``y`` is ``g``-ary randomized response
on ``h(x)``::

    P(y = h(x)) = p = e^eps / (e^eps + g - 1),     P(y = j) = q = 1 / (e^eps + g - 1)  (j != h(x)).

The server recomputes each report's *support* ``{x in [k] : h(x) = y}`` and counts, for every
``x``, the reports whose support contains it. Optimised local hashing takes the ``g`` that
minimises the variance, ``g = max(2, round(e^eps + 1))`` (Wang et al. 2017; rounded half
up); binary local hashing takes ``g = 2``.

**The hash family.** ``P`` is the Mersenne prime ``2^31 - 1`` (tests use small primes); a seed
is ``(a, b, c)`` uniform on ``Z_P^3`` and

    h(x) = floor(u(x) g / P),   u(x) = (a x^2 + b x + c) mod P,   x in [0, k), k < P.

For distinct points ``x, x', z`` the map ``(a, b, c) -> (u(x), u(x'), u(z))`` is a bijection of
``Z_P^3`` (a Vandermonde system over the field ``Z_P``), so the three values are i.i.d.
uniform on ``Z_P`` and the hashed values are i.i.d. with the law ``w_j = c_j / P``, where
``c_j = #{u in [0, P) : floor(u g / P) = j} = ceil((j+1) P / g) - ceil(j P / g)``; writing
``P = s g + r`` (``0 <= r < g``), ``r`` buckets have ``s + 1`` points and ``g - r`` have ``s``.
Every probability below is therefore an exact rational function of ``P`` and ``g``, not
"about 1/g": the collision probability of two inputs and the triple-collision probability are

    gamma = sum_j w_j^2 = (r (s+1)^2 + (g-r) s^2) / P^2,    tau = sum_j w_j^3 = (r (s+1)^3 + (g-r) s^3) / P^3.

A degree-2 family is the smallest with this three-point property (a linear family is only
pairwise independent, and the covariance of the estimator needs three points); uniform
seeds (``a = 0`` allowed) keep the three values exactly independent; the prime is the largest
below ``2^31`` (a Mersenne prime) so that every product fits in 64-bit integers (``a * (x^2 mod P) <
2^62``) and the server's decoding runs on 32-bit words. ``g`` is at most ``P``: beyond ``P``
buckets ``gamma = 1/P`` cannot fall further, and more buckets only spread the noise, so the
optimal ``g`` is capped at ``P`` (it is ``P`` for eps above about 21.5).

A report is the int64 row ``(a, b, c, y)`` (``report_shape = (4,)``, ``3 log2 P + log2 g`` bits),
of probability ``P^-3 p`` if ``h(x) = y`` and ``P^-3 q`` otherwise.

**Exact privacy.** For inputs ``x != x'`` the privacy loss of a report is ``+eps`` when
``y = h(x) != h(x')``, ``-eps`` when ``y = h(x') != h(x)`` and 0 otherwise; under ``x`` these
have probabilities ``p (1 - gamma)``, ``q (1 - gamma)`` and ``gamma + (1 - gamma)(g - 2) q``,
the same for every pair (so :meth:`LocalHashing.neighbours` names one). Hence the exact pure
eps is ``eps`` (``g >= 2`` gives ``gamma < 1``), and ``delta(t) = p (1 - gamma)(1 - e^(t - eps))``
for ``0 <= t < eps`` (0 above), whose inverse
``epsilon(delta) = eps + log(1 - delta / (p (1 - gamma)))`` is polished to the smallest float.
:meth:`LocalHashing.guarantee` is the exact privacy-loss law of that pair.

**The estimator.** The statistic is the support counts ``C(x) = #{reports : h(x) = y}``
(``statistic_size = k``). Given the input ``z`` of a report, ``x`` is in its support with
probability ``p`` if ``x = z`` and

    q* = gamma p + (1 - gamma) q      if x != z,

so ``E[C(x)/n] = q* + (p - q*) pi_x`` and the unbiased estimate is ``f_x = (C(x)/n - q*) / (p -
q*)`` with ``p - q* = (1 - gamma)(p - q)`` (Wang et al. 2017 state it with ``q* = 1/g``, the
value of an ideal family). With ``B(x)`` the indicator that ``x`` is in one report's
support and ``mu_x = q* + (p - q*) pi_x``, inputs i.i.d. from ``pi``:

    Var f_x = mu_x (1 - mu_x) / (n (p - q*)^2),
    Cov(f_x, f_x') = [(pi_x + pi_x') p gamma + (1 - pi_x - pi_x') r3 - mu_x mu_x'] / (n (p - q*)^2),

where ``p gamma`` is the probability that ``x`` and ``x'`` are both in the support of a report
of input ``x`` (or ``x'``), and ``r3 = p tau + q (gamma - tau)`` the same for an input ``z``
distinct from both (all three hashed values equal and reported, or ``h(x) = h(x') != h(z)``
and that value reported), from the three-point law above.

**Costs.** :meth:`LocalHashing.privatize` is O(1) per client, in chunks of ``chunk_size``
clients (a few arrays of that length). :meth:`LocalHashing.statistic` is the standard
decoding cost of local hashing, O(n k): per chunk of reports the hash polynomials are
stepped through ``x = 0, 1, ..., k-1`` by finite differences (``u(x+1) = u(x) + d(x)``,
``d(x+1) = d(x) + 2a``, modulo ``P`` by one conditional subtraction on 32-bit words), about one
nanosecond per (report, input) pair; its memory is a few arrays of the chunk's length,
independent of ``k`` and of the number of reports.

**Aggregate mode.** ``aggregate_exact = False``: one report's support is a random subset of
``[k]`` whose law has ``P^3 g`` atoms, and the supports of different reports overlap, so the
support counts of ``n`` reports are neither multinomial nor a sum of independent binomials;
no exact draw at a cost independent of ``n`` is known, and a survey with these oracles runs
in individual mode (every report simulated).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms.base import target_indices
from ldpsim.mechanisms.finite import DEFAULT_CHUNK, _map_eps, _smallest_eps, check_dense
from ldpsim.mechanisms.oracles._pure import PureSupport
from ldpsim.privacy.guarantees import PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD

__all__ = ["LocalHashing", "OptimizedLocalHashing", "BinaryLocalHashing", "optimal_g", "MERSENNE_31"]

#: The prime of the hash family (the Mersenne prime 2^31 - 1); also the largest accepted.
MERSENNE_31 = (1 << 31) - 1

#: Reports decoded per chunk by :meth:`LocalHashing.statistic` (a few arrays of this length).
STATISTIC_CHUNK = 1 << 16

#: Chunks of fewer reports than this are decoded by blocks of (reports x inputs) cells, which
#: costs less than the per-input loop when the loop's overhead dominates.
BLOCK_MAX_REPORTS = 1024

#: Cells (reports x inputs) of one block of the block decoder.
BLOCK_CELLS = 1 << 18

#: :meth:`LocalHashing.possible_reports` lists at most this many reports (P^3 g).
MAX_POSSIBLE_REPORTS = 1 << 16

#: Above this eps, e^eps + 1 exceeds every accepted prime and the optimal g is the prime.
_EPS_G_CAP = 40.0


def optimal_g(eps: float, prime: int = MERSENNE_31) -> int:
    """The optimised hash range ``max(2, round(e^eps + 1))`` (rounded half up) of Wang et
    al. 2017, at most ``prime`` (see the module docstring); no overflow at any eps."""
    if eps >= _EPS_G_CAP:
        return int(prime)
    return int(min(prime, max(2, math.floor(math.exp(eps) + 1.5))))


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    root = math.isqrt(n)
    if root < 3:
        return True
    odd = np.arange(3, root + 1, 2, dtype=np.int64)
    return not bool(np.any(n % odd == 0))


class LocalHashing(PureSupport):
    """Local hashing with ``g`` buckets over ``k`` inputs at privacy level ``eps`` (exactly
    eps-LDP): see the module docstring for the hash family, the exact privacy and the
    estimator. ``g = None`` takes the optimal :func:`optimal_g`. ``prime`` (default
    ``2^31 - 1``) must be a prime larger than ``k``; small primes make every report
    enumerable (:meth:`possible_reports`), for tests."""

    pure_attributes = ("p", "q_star", "scale")
    support_label = "local-hashing support"

    name = "local_hashing"
    aggregate_exact = False
    report_shape = (4,)

    def __init__(self, k: int, eps: float, g: int | None = None, *, prime: int = MERSENNE_31) -> None:
        k = v.alphabet_size(k, "k")
        eps = v.epsilon(eps, "eps")
        prime = v.integer(prime, "prime", minimum=3, maximum=MERSENNE_31)
        if prime == MERSENNE_31:
            if k >= prime:
                raise invalid(
                    "k", k, f"an integer in 2..{prime - 1} (fewer inputs than the prime {prime} of the hash family)"
                )
        elif not _is_prime(prime) or prime <= k:
            raise invalid("prime", prime, f"a prime in {k + 1}..{MERSENNE_31} (larger than k = {k})")
        g = optimal_g(eps, prime) if g is None else v.integer(g, "g", minimum=2, maximum=prime)
        self.k = k
        self.eps = eps
        self.g = g
        self.prime = prime
        self.input_labels = tuple(range(k))
        # GRR over [g]: log p, log q stable at eps in the hundreds and g up to 2^31
        self.log_p = -math.log1p((g - 1) * math.exp(-eps))
        self.log_q = self.log_p - eps
        self.p = math.exp(self.log_p)
        self.q = math.exp(self.log_q)
        # exact bucket laws: P = size g + r, r buckets of size + 1 points, g - r of size points
        size, r = divmod(prime, g)
        s2 = r * (size + 1) ** 2 + (g - r) * size**2
        s3 = r * (size + 1) ** 3 + (g - r) * size**3
        p2, p3 = prime**2, prime**3
        self.gamma = float(Fraction(s2, p2))  # P(h(x) = h(x')), x != x'
        self.one_minus_gamma = float(Fraction(p2 - s2, p2))
        self.tau = float(Fraction(s3, p3))  # P(h(x) = h(x') = h(z)), distinct points
        self.gamma_minus_tau = float(Fraction(s2 * prime - s3, p3))
        # p - q without cancellation, then the support probabilities
        self._gap = self.p * -math.expm1(-eps)  # p - q
        #: P(x in the support | input z != x)
        self.q_star = self.q + self.gamma * self._gap
        #: p - q*, the scale of the estimator
        self.scale = self.one_minus_gamma * self._gap
        #: P(x and x' in the support | input z distinct from both)
        self.r3 = self.q * self.gamma + self.tau * self._gap
        #: P(x and x' in the support | input x)
        self.r2 = self.p * self.gamma
        self._lookup: dict[Any, int] | None = None

    # ----------------------------------------------------------------- identity
    @property
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "eps": self.eps, "g": self.g}
        if self.prime != MERSENNE_31:
            out["prime"] = self.prime
        return out

    def with_labels(self, labels: Any) -> "LocalHashing":
        out = super().with_labels(labels)
        out._lookup = None  # type: ignore[attr-defined]
        return out  # type: ignore[return-value]

    def _index(self, x: Any) -> int:
        """The symbol index of the input label ``x``."""
        if self._lookup is None:
            self._lookup = {label: i for i, label in enumerate(self.input_labels)}
        try:
            return self._lookup[x]
        except (KeyError, TypeError):
            shown = self.input_labels if self.k <= 10 else f"{self.input_labels[:3]!r} ... ({self.k} labels)"
            raise invalid("x", x, f"one of the input labels {shown}") from None

    # ----------------------------------------------------------------- hashing
    def _hash(
        self, a: NDArray[np.int64], b: NDArray[np.int64], c: NDArray[np.int64], x: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """``floor(((a x^2 + b x + c) mod P) g / P)`` elementwise, in int64 without overflow."""
        P = self.prime
        t = (x * x) % P
        t *= a  # < 2^62
        t %= P
        t += b * x  # < 2^31 + 2^62
        t %= P
        t += c
        t %= P
        t *= self.g  # < 2^62
        t //= P
        return t

    def _bucket_edges(self, y: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """First point ``ceil(y P / g)`` and size ``c_y`` of bucket ``y`` in ``[0, P)``."""
        P, g = self.prime, self.g
        lo = -((-y * P) // g)
        hi = -((-(y + 1) * P) // g)
        return lo, hi - lo

    # ----------------------------------------------------------------- the contract
    def neighbours(self) -> list[tuple[Any, Any]]:
        """The pair of the first two labels: every pair of distinct inputs has the same
        privacy-loss law (the hashed values of two distinct points are i.i.d.), so one pair
        attains the privacy loss and an auditor needs no other."""
        return [(self.input_labels[0], self.input_labels[1])]

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """``n`` reports (rows ``(a, b, c, y)``) for the input label ``x``: the same draws as
        :meth:`privatize` of ``n`` copies of its index."""
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, self._index(x), dtype=np.int64), rng)

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """Exact log probability of the reports ``y`` (rows ``(a, b, c, value)``, vectorised
        over leading axes) under the input label ``x``: ``-3 log P + log p`` when the seed
        hashes ``x`` to ``value``, ``-3 log P + log q`` otherwise; ``-inf`` for rows outside
        the report set (non-integers, out of range), NaN where a row holds a NaN. One row
        gives a float."""
        i = self._index(x)
        arr = v.real_array(y, "y", "reports: rows (a, b, c, value) of 4 integers")
        if arr.ndim == 0 or arr.shape[-1] != 4:
            raise invalid("y", f"an array of shape {arr.shape}", "reports: rows (a, b, c, value) of 4 integers")
        upper = np.array([self.prime, self.prime, self.prime, self.g], dtype=np.float64)
        with np.errstate(invalid="ignore"):
            ok = (np.isfinite(arr) & (np.floor(arr) == arr) & (arr >= 0) & (arr < upper)).all(axis=-1)
        ints = np.where(ok[..., None], arr, 0.0).astype(np.int64)
        h = self._hash(ints[..., 0], ints[..., 1], ints[..., 2], np.full(ok.shape, i, dtype=np.int64))
        seed = -3.0 * math.log(self.prime)
        out = np.where(h == ints[..., 3], seed + self.log_p, seed + self.log_q)
        out = np.where(ok, out, -np.inf)
        out = np.where(np.isnan(arr).any(axis=-1), np.nan, out)
        return float(out) if out.ndim == 0 else out

    # ----------------------------------------------------------------- privacy
    @property
    def _pair_atoms(self) -> tuple[float, float, float]:
        """Log-probabilities, under ``x``, of the losses ``+eps``, ``0`` and ``-eps`` against
        any ``x' != x``."""
        log_keep = math.log(self.one_minus_gamma)
        zero = self.gamma + self.one_minus_gamma * (self.g - 2) * self.q
        return self.log_p + log_keep, math.log(zero), self.log_q + log_keep

    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """The exact smallest eps at ``delta``: ``eps`` at ``delta = 0``; else the smallest
        float ``t`` with ``p (1 - gamma)(1 - e^(t - eps)) <= delta`` (0 when ``delta >= p (1 -
        gamma)``). ``delta`` may be an array."""
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0 or self.eps == 0.0:
            return self.eps
        top = self.p * self.one_minus_gamma
        guess = self.eps + math.log1p(-delta / top) if delta < top else 0.0
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, self.eps, guess)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact smallest delta at ``eps``: ``p (1 - gamma)(1 - e^(eps' - eps))`` below the
        mechanism's eps (``eps'`` the argument), 0 at and above it (the hockey-stick
        divergence of any pair; the pairs are alike). Scalar or array."""
        return _map_eps(eps, self._delta_scalar)

    def _delta_scalar(self, t: float) -> float:
        if t >= self.eps:
            return 0.0
        return self.p * self.one_minus_gamma * -math.expm1(t - self.eps)

    def pld(self) -> Any:
        """The exact privacy-loss law of a report under ``x`` against ``x' != x`` (atoms at
        ``+eps``, 0 and ``-eps``; the same for every pair)."""
        plus, zero, minus = self._pair_atoms
        return DiscretePLD.from_atoms([self.eps, 0.0, -self.eps], [plus, zero, minus])

    def guarantee(self) -> Any:
        """The exact guarantee: :meth:`pld` of a pair and its swap (a
        :class:`ldpsim.privacy.PLDGuarantee`)."""
        law = self.pld()
        return PLDGuarantee((law, law.swap()), label=repr(self))

    # ----------------------------------------------------------------- sampling
    def privatize(self, x: ArrayLike, rng: RNGLike = None, *, chunk_size: int = DEFAULT_CHUNK) -> NDArray[np.int64]:
        """One report per entry of ``x`` (symbol indices): an int64 array of shape
        ``x.shape + (4,)``, rows ``(a, b, c, y)``. Each client draws its seed uniformly from
        ``Z_P^3`` and randomises its hashed value; vectorised, in chunks of ``chunk_size``
        clients, so temporary memory is a few arrays of that length whatever ``x.size``. The
        result is determined by the generator state and ``chunk_size``."""
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        chunk = v.integer(chunk_size, "chunk_size", minimum=1)
        flat = arr.reshape(-1)
        out = np.empty((flat.size, 4), dtype=np.int64)
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            self._privatize_chunk(flat[start:stop], gen, out[start:stop])
        return out.reshape(arr.shape + (4,))

    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator, out: NDArray[np.int64]) -> None:
        m = x.size
        out[:, :3] = rng.integers(0, self.prime, size=(m, 3), dtype=np.int64)
        h = self._hash(out[:, 0], out[:, 1], out[:, 2], x.astype(np.int64))
        flip = rng.random(m) >= self.p
        moved = int(np.count_nonzero(flip))
        if moved:
            # uniform over the g - 1 other values
            h[flip] = (h[flip] + rng.integers(1, self.g, size=moved, dtype=np.int64)) % self.g
        out[:, 3] = h

    # ----------------------------------------------------------------- the server's statistic
    @property
    def statistic_size(self) -> int:
        """The statistic is one support count per input."""
        return self.k

    def _checked_reports(self, reports: ArrayLike) -> NDArray[np.int64]:
        expected = (
            f"reports: integer rows (a, b, c, value) with a, b, c in 0..{self.prime - 1} and value in 0..{self.g - 1}"
        )
        arr = np.asarray(reports)
        if arr.size == 0 and (arr.ndim == 1 or arr.shape[-1] == 4):
            return np.zeros((0, 4), dtype=np.int64)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer) or arr.ndim == 0 or arr.shape[-1] != 4:
            raise invalid("reports", f"an array of dtype {arr.dtype} and shape {arr.shape}", expected)
        rows = arr.reshape(-1, 4)
        lo = rows.min(axis=0)
        hi = rows.max(axis=0)
        if np.any(lo < 0) or np.any(hi[:3] >= self.prime) or hi[3] >= self.g:
            bad = int(np.flatnonzero((lo < 0) | (hi >= np.array([self.prime] * 3 + [self.g])))[0])
            raise invalid("reports", f"a row with {('a', 'b', 'c', 'value')[bad]} out of range", expected)
        return rows.astype(np.int64, copy=False)

    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """The support counts ``C(x) = #{reports : h_seed(x) = value}`` for ``x = 0..k-1``
        (length ``k``). O(n k) work in chunks of :data:`STATISTIC_CHUNK` reports; memory a
        few arrays of the chunk's length (see the module docstring)."""
        rows = self._checked_reports(reports)
        out = np.zeros(self.k, dtype=np.int64)
        for start in range(0, rows.shape[0], STATISTIC_CHUNK):
            out += self._support_counts(rows[start : start + STATISTIC_CHUNK])
        return out

    def _support_counts(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        P = self.prime
        a, b, c, y = (rows[:, j] for j in range(4))
        lo, width = self._bucket_edges(y)
        # x is in the support iff u(x) lies in [lo, lo + width): track (u(x) - lo) mod P
        start = (c - lo) % P
        if rows.shape[0] < BLOCK_MAX_REPORTS:
            return self._support_counts_blocks(a, b, start, width)
        return self._support_counts_steps(a, b, start, width)

    def _support_counts_steps(self, a, b, start, width) -> NDArray[np.int64]:
        """Step the polynomials through x = 0..k-1 by finite differences, on uint32 words:
        every value is below P < 2^31, so sums stay below 2^32, and ``min(t, t - P)``
        (wrapping) reduces them modulo P."""
        P = self.prime
        t = start.astype(np.uint32)
        d = ((a + b) % P).astype(np.uint32)  # u(1) - u(0) = a + b
        s = ((2 * a) % P).astype(np.uint32)  # second difference 2a
        w = width.astype(np.uint32)
        tmp = np.empty_like(t)
        hit = np.empty(t.shape, dtype=bool)
        pu = np.uint32(P)
        out = np.empty(self.k, dtype=np.int64)
        last = self.k - 1
        for x in range(self.k):
            np.less(t, w, out=hit)
            out[x] = np.count_nonzero(hit)
            if x == last:
                break
            np.add(t, d, out=t)
            np.subtract(t, pu, out=tmp)
            np.minimum(t, tmp, out=t)
            np.add(d, s, out=d)
            np.subtract(d, pu, out=tmp)
            np.minimum(d, tmp, out=d)
        return out

    def _support_counts_blocks(self, a, b, start, width) -> NDArray[np.int64]:
        """Evaluate the polynomials on blocks of (reports x inputs) cells in uint64
        (``a (x^2 mod P) + b x + start < 2^63 + 2^31``): cheaper than the stepping loop for
        few reports."""
        out = np.empty(self.k, dtype=np.int64)
        for x0, hit in self._support_blocks(a, b, start, width):
            out[x0 : x0 + hit.shape[1]] = np.count_nonzero(hit, axis=0)
        return out

    def _support_blocks(self, a, b, start, width):
        """``(x0, hit)`` per block of inputs ``x0, x0 + 1, ...``: ``hit[r, j]`` whether input
        ``x0 + j`` is in report r's support."""
        P = np.uint64(self.prime)
        au, bu, su = (arr.astype(np.uint64)[:, None] for arr in (a, b, start))
        w = width.astype(np.uint64)[:, None]
        block = max(1, BLOCK_CELLS // max(1, a.size))
        for x0 in range(0, self.k, block):
            xs = np.arange(x0, min(self.k, x0 + block), dtype=np.uint64)
            cells = au * ((xs * xs) % P)[None, :]
            cells += bu * xs[None, :]
            cells += su
            cells %= P
            yield x0, cells < w

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """One row per report: the indicator of the inputs its hashed value supports."""
        rows = self._checked_reports(reports)
        out = np.zeros((rows.shape[0], self.k), dtype=np.int64)
        for r0 in range(0, rows.shape[0], STATISTIC_CHUNK):
            part = rows[r0 : r0 + STATISTIC_CHUNK]
            lo, width = self._bucket_edges(part[:, 3])
            start = (part[:, 2] - lo) % self.prime
            for x0, hit in self._support_blocks(part[:, 0], part[:, 1], start, width):
                out[r0 : r0 + part.shape[0], x0 : x0 + hit.shape[1]] = hit
        return out

    # ------------------------------------------------- covariance (support matrix and inversion: PureSupport)
    def _mu(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.q_star + self.scale * np.asarray(prior, dtype=np.float64)

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        """Exact ``k x k`` covariance of one report's support indicators ``B`` when its input
        follows ``prior``: ``mu_x (1 - mu_x)`` on the diagonal and ``(pi_x + pi_x') p gamma +
        (1 - pi_x - pi_x') r3 - mu_x mu_x'`` off it (module docstring)."""
        check_dense(self.k, self.k, "covariance")
        pi = np.asarray(prior, dtype=np.float64)
        mu = self._mu(pi)
        pair = pi[:, None] + pi[None, :]
        cov = pair * self.r2 + (1.0 - pair) * self.r3 - np.outer(mu, mu)
        np.fill_diagonal(cov, mu * (1.0 - mu))
        return cov

    # The scale p - q* is about eps (1 - gamma) p at small eps: variances beyond the largest
    # double (eps below ~1e-154) are inf, the standard errors (their square roots, divided
    # by the scale once) stay finite down to eps ~ 1e-300.
    def _over_scale2(self, x: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        s = self._support_gap()
        with np.errstate(over="ignore"):
            return x / n / s / s

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """Exact ``k x k`` covariance of :meth:`invert` of ``n`` reports' support
        frequencies, inputs i.i.d. from ``prior``: ``statistic_covariance / (n (p - q*)^2)``."""
        return self._over_scale2(self.statistic_covariance(prior), n)

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """Exact variances ``mu_x (1 - mu_x) / (n (p - q*)^2)`` (O(k), no matrix)."""
        mu = self._mu(prior)
        return self._over_scale2(np.clip(mu * (1.0 - mu), 0.0, None), n)

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``sqrt(mu_x (1 - mu_x) / n) / (p - q*)``."""
        mu = self._mu(prior)
        return np.sqrt(np.clip(mu * (1.0 - mu), 0.0, None) / n) / self._support_gap()

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The plug-in of :meth:`estimate_variance` at the observed support frequencies
        (``f_x`` estimates ``mu_x`` without bias): ``f (1 - f) / (n (p - q*)^2)``."""
        f = np.asarray(f, dtype=np.float64)
        return self._over_scale2(np.clip(f * (1.0 - f), 0.0, None), n)

    def plugin_std_error(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``sqrt(f (1 - f) / n) / (p - q*)``."""
        f = np.asarray(f, dtype=np.float64)
        return np.sqrt(np.clip(f * (1.0 - f), 0.0, None) / n) / self._support_gap()

    def possible_outputs(self) -> NDArray[np.bool_]:
        """Every input is in some report's support (``q* >= gamma p > 0``)."""
        return np.ones(self.k, dtype=bool)

    # ----------------------------------------------------------------- what fake respondents can send
    #: Seeds tried per round of :meth:`crafted_reports`, and the most rounds.
    CRAFT_ROUND = 1 << 16
    CRAFT_ROUNDS = 64

    def crafted_reports(self, targets: ArrayLike, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """Rows ``(a, b, c, y)`` whose seed hashes the most targets to one value ``y`` (Cao,
        Jia and Gong 2021 search random hash functions the same way): rounds of
        :data:`CRAFT_ROUND` random seeds, until a seed puts every target in one bucket or
        :data:`CRAFT_ROUNDS` rounds are spent; the ``n`` reports are drawn with replacement
        among the seeds of the best count found."""
        t = target_indices(targets, self.k)
        n = v.integer(n, "n", minimum=0)
        gen = as_generator(rng)
        best_count = 0
        keep_seeds: list[NDArray[np.int64]] = []
        keep_values: list[NDArray[np.int64]] = []
        x = np.broadcast_to(t, (self.CRAFT_ROUND, t.size)).copy()
        for _ in range(self.CRAFT_ROUNDS):
            seeds = gen.integers(0, self.prime, size=(self.CRAFT_ROUND, 3), dtype=np.int64)
            h = np.sort(self._hash(seeds[:, :1], seeds[:, 1:2], seeds[:, 2:3], x.copy()), axis=1)
            # sorted rows: a run of d + 1 equal values exists where h[:, i] == h[:, i + d]
            best = np.ones(h.shape[0], dtype=np.int64)
            value = h[:, 0].copy()
            for d in range(1, t.size):
                same = h[:, d:] == h[:, :-d]
                rows = np.flatnonzero(same.any(axis=1))
                best[rows] = d + 1
                value[rows] = h[rows, np.argmax(same[rows], axis=1)]
            top = int(best.max())
            if top > best_count:
                best_count, keep_seeds, keep_values = top, [], []  # a better count: start over
            if top == best_count:
                hit = best == top
                keep_seeds.append(seeds[hit])
                keep_values.append(value[hit])
            if best_count == t.size:
                break
        seeds, values = np.concatenate(keep_seeds), np.concatenate(keep_values)
        pick = gen.integers(0, values.size, size=n)
        return np.column_stack([seeds[pick], values[pick]]).astype(np.int64)

    def random_reports(self, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """Uniform seeds and values."""
        n = v.integer(n, "n", minimum=0)
        gen = as_generator(rng)
        seeds = gen.integers(0, self.prime, size=(n, 3), dtype=np.int64)
        return np.column_stack([seeds, gen.integers(0, self.g, size=n, dtype=np.int64)])

    def random_report_support(self) -> NDArray[np.float64]:
        """``P(h(x) = y)`` for a value ``y`` uniform on ``[0, g)`` and any seed: ``1/g``."""
        return np.full(self.k, 1.0 / self.g)

    def itemset_support_bound(self, z: int) -> float:
        """Pairs: ``p gamma`` with the input in the pair, ``r3`` without (module docstring).
        Three or more answers: the family is only three-point uniform, so the bound is that of
        three of them, ``p tau`` (all three hashed values equal, ``tau``, and the reported value
        theirs, at most ``p``)."""
        z = v.integer(z, "z", minimum=2)
        return max(self.r2, self.r3) if z == 2 else self.p * self.tau

    def server_operations(self, n: float) -> float:
        """Every report's support is recomputed over all k answers: n k hash evaluations."""
        return float(n) * float(self.k)

    @property
    def report_bits(self) -> float:
        """``log2(P^3 g)``: the seed and the value."""
        return 3.0 * math.log2(self.prime) + math.log2(self.g)

    def possible_reports(self) -> NDArray[np.int64]:
        """Every report ``(a, b, c, value)`` (``P^3 g`` rows, all of positive probability),
        for small primes; a one-line :class:`LdpSimError` above
        :data:`MAX_POSSIBLE_REPORTS` rows."""
        size = self.prime**3 * self.g
        if size > MAX_POSSIBLE_REPORTS:
            raise LdpSimError(
                f"prime: got {self.prime}, expected prime^3 * g <= {MAX_POSSIBLE_REPORTS} to list every report "
                f"(here {float(size):.3g}); build the oracle with a small prime (e.g. prime=7) to enumerate"
            )
        grid = np.indices((self.prime, self.prime, self.prime, self.g), dtype=np.int64)
        return grid.reshape(4, -1).T.copy()


class OptimizedLocalHashing(LocalHashing):
    """Optimised local hashing (OLH, Wang et al. 2017): :class:`LocalHashing` with ``g =
    max(2, round(e^eps + 1))`` unless ``g`` is given; exactly eps-LDP."""

    name = "olh"

    def __init__(self, k: int, eps: float, g: int | None = None, *, prime: int = MERSENNE_31) -> None:
        super().__init__(k, eps, g, prime=prime)


class BinaryLocalHashing(LocalHashing):
    """Binary local hashing (BLH; Bassily and Smith 2015, as in Wang et al. 2017):
    :class:`LocalHashing` with ``g = 2``; exactly eps-LDP."""

    name = "blh"

    def __init__(self, k: int, eps: float, *, prime: int = MERSENNE_31) -> None:
        super().__init__(k, eps, 2, prime=prime)

    @property
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "eps": self.eps}
        if self.prime != MERSENNE_31:
            out["prime"] = self.prime
        return out
