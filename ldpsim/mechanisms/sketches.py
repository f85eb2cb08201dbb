"""Count-mean sketches: frequencies of answers from a domain too large to list.

Apple's Differential Privacy Team (2017, "Learning with privacy at scale") collects emoji,
web domains and words this way: no list of the possible answers is needed, only ``k`` public
hash functions ``h_1 .. h_k`` from the domain to ``m`` buckets.

**The hash functions.** Answers are integers in ``[0, 2^32)``; text answers are mapped
there first by :func:`item_codes` (4 bytes of BLAKE2b). Row ``j`` hashes with Dietzfelbinger's multiply-add-shift,
``h_j(x) = ((a_j x + b_j) mod 2^64) >> (64 - log2 m)``, ``a_j, b_j`` uniform 64-bit words
drawn once from ``hash_seed`` (public: clients and server share them). For ``x < 2^32`` the
family is strongly universal: each ``h_j(x)`` is uniform on ``[m]`` and the values at two
distinct answers are independent (Dietzfelbinger 1996), so two answers collide in a row with
probability exactly ``1/m``. ``m`` is a power of two.

**Count-mean sketch (CMS).** A client with answer ``x`` picks a row ``j`` uniformly, sets
bit ``h_j(x)`` of an ``m``-bit vector and flips every bit independently with probability
``q = 1 / (1 + e^(eps/2))``: symmetric unary encoding over the ``m`` buckets (each bit
carries ``eps/2``, two bits differ between two answers). The report is ``(j, bits)``.

**Hadamard count-mean sketch (HCMS).** A client picks a row ``j`` and a column ``l`` of the
``m x m`` Sylvester-Hadamard matrix ``H`` uniformly and reports ``(j, l, w)``, ``w`` the
sign ``H[h_j(x), l]`` flipped with probability ``q = 1 / (1 + e^eps)``: one bit instead of
``m``.

**Exact privacy.** The row and the column are drawn independently of the answer and the hash
functions are public, so the privacy loss between two answers ``x, x'`` is that of the row's
randomiser between buckets ``h_j(x)`` and ``h_j(x')``: 0 when they collide, else ``+-eps``
(CMS: the two bits that differ, ``eps/2`` each; HCMS: ``(1 - q)/q = e^eps`` on the one sign).
Answers that no row separates are indistinguishable; any two that some row separates give
the pure ``eps`` exactly (with 2^32 answers and ``m >= 2`` such pairs always exist unless
every row is constant, which :class:`SketchHashes` refuses).

**The estimate** of the count of an answer ``d`` from ``n`` reports: each report gives one
unbiased term ``T_i`` of the indicator that its row maps its answer and ``d`` to the same
bucket, ``T_i = (B_i - q) / (1 - 2q)`` (CMS, ``B_i`` the report's bit at ``h_j(d)``) or
``T_i = c w_i H[h_j(d), l_i]`` (HCMS, ``c = (e^eps + 1)/(e^eps - 1)``), and

    C(d) = m / (m - 1) (sum_i T_i - n / m),

the debiased count of Apple (2017): over the hash functions a report of another answer meets
``d``'s bucket with probability ``1/m``, so ``E[C(d)] = n_d``. The server sums the reports into
a ``k x m`` sketch (:meth:`statistic`) and answers any query from it (:meth:`estimate`).

**Exact variance, hash collisions included.** Given the hash functions in use, the terms are
independent across reports; ``pi_i = (1/k) #{j : h_j(x_i) = h_j(d)}`` (1 for ``x_i = d``) is
the chance that report ``i``'s row maps its answer onto ``d``'s bucket, and

    E[C(d)] = m/(m-1) (sum_i pi_i - n/m),
    Var[C(d)] = (m/(m-1))^2 sum_i v(pi_i),
    v(pi) = q (1 - q) / (1 - 2q)^2 + pi (1 - pi)     (CMS),
    v(pi) = c^2 - pi^2                                (HCMS),

exact for the hashes drawn (:meth:`CountSketchBase.moments`); the bias ``E[C(d)] - n_d`` is
the collisions of these particular hash functions, zero on average over them. ``sum_i T_i``
is an affine image of a Poisson-binomial count (CMS: of the bits ``B_i``, success
probability ``q + (1 - 2q) pi_i``; HCMS: of the signs, ``1/2 + (1/2 - q) pi_i``), so its whole
law is exact too (:meth:`CountSketchBase.term_law`), which the tests compare the simulation
with.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.oracles.hadamard import _fwht, _odd_parity

__all__ = [
    "SketchHashes",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
    "DOMAIN_BITS",
    "item_codes",
    "shared_codes",
    "best_shape",
]

#: Answers are integers below ``2^DOMAIN_BITS`` (the multiply-add-shift family is strongly
#: universal for keys of half the 64-bit word).
DOMAIN_BITS = 32
_WORD = np.uint64(64)
#: Reports of one row whose bits are summed in 16-bit counters at a time (no overflow).
_SUM16 = (1 << 16) - 1
#: Geometric gaps drawn at a time by the count-mean sketch's client (32 MB of int64).
_UNIFORMS = 1 << 22


def _items(values: ArrayLike, name: str = "items") -> NDArray[np.uint64]:
    """Answers as uint64, each an integer in ``[0, 2^32)``; one line otherwise."""
    arr = np.asarray(values)
    expected = f"integers in [0, 2^{DOMAIN_BITS})"
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        if arr.size == 0:
            return arr.astype(np.uint64)
        raise invalid(name, f"an array of dtype {arr.dtype}", expected)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= 1 << DOMAIN_BITS):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise invalid(name, bad, expected)
    return arr.astype(np.uint64)


def item_codes(answers: ArrayLike) -> NDArray[np.uint64]:
    """Text answers as sketch items: the first 4 bytes of the BLAKE2b digest of each answer's
    UTF-8 bytes, read big-endian, an integer in ``[0, 2^32)`` that every client and the
    server compute alike. Two distinct answers share a code with probability ``2^-32``; a
    dictionary of ``D`` candidates has a shared code with probability about
    ``D^2 / 2^33`` (:func:`shared_codes` lists them). Each distinct answer is hashed once."""
    arr = np.asarray(answers, dtype=object).reshape(-1)
    if not all(isinstance(a, str) for a in arr.tolist()):
        bad = next(a for a in arr.tolist() if not isinstance(a, str))
        raise invalid("answers", bad, "text (str) answers")
    distinct, inverse = np.unique(arr.astype(str), return_inverse=True) if arr.size else (arr, arr)
    codes = np.array(
        [int.from_bytes(hashlib.blake2b(a.encode("utf-8"), digest_size=4).digest(), "big") for a in distinct.tolist()],
        dtype=np.uint64,
    )
    return codes[inverse.reshape(-1)] if arr.size else np.zeros(0, dtype=np.uint64)


def shared_codes(answers: ArrayLike) -> list[tuple[str, ...]]:
    """The groups of distinct answers that :func:`item_codes` maps to one code (empty for a
    dictionary the sketch can tell apart)."""
    distinct = sorted({str(a) for a in np.asarray(answers, dtype=object).reshape(-1).tolist()})
    by_code: dict[int, list[str]] = {}
    for answer, code in zip(distinct, item_codes(distinct).tolist()):
        by_code.setdefault(int(code), []).append(answer)
    return [tuple(group) for group in by_code.values() if len(group) > 1]


class SketchHashes:
    """``rows`` strongly universal hash functions ``[0, 2^32) -> [0, m)`` (module docstring),
    their words drawn from ``numpy.random.default_rng(seed)``."""

    def __init__(self, rows: int, m: int, seed: int = 0) -> None:
        self.rows = v.integer(rows, "rows", minimum=1)
        self.m = v.integer(m, "m", minimum=2)
        if self.m & (self.m - 1):
            raise invalid("m", m, "a power of two (the buckets are the top bits of a 64-bit word)")
        self.seed = v.seed(seed, "hash_seed")
        words = np.random.default_rng(self.seed).integers(0, 1 << 64, size=(2, self.rows), dtype=np.uint64)
        self.a, self.b = words[0], words[1]
        if not self.a.any():  # pragma: no cover - probability 2^-64 per row
            raise invalid("hash_seed", seed, "a seed whose hash functions are not all constant")
        self._shift = _WORD - np.uint64(self.m.bit_length() - 1)

    def __call__(self, items: ArrayLike, rows: ArrayLike | None = None) -> NDArray[np.int64]:
        """The buckets of ``items``: in row ``rows[i]`` for each item (same shape), or in
        every row (shape ``(rows, n)``) without ``rows``."""
        x = _items(items)
        if rows is None:
            a, b = self.a[:, None], self.b[:, None]
        else:
            r = np.asarray(rows, dtype=np.int64)
            a, b = self.a[r], self.b[r]
        with np.errstate(over="ignore"):
            return ((a * x + b) >> self._shift).astype(np.int64)

    def collision_rates(self, items: ArrayLike, query: int) -> NDArray[np.float64]:
        """``pi`` of each item: the share of rows that map it to ``query``'s bucket."""
        x = _items(items)
        mine = self(np.asarray([query]))
        return (self(x) == mine).mean(axis=0) if x.size else np.zeros(0)


class CountSketchBase:
    """What the count-mean sketch and its Hadamard version share: the hashes, the sketch's
    queries and the exact moments (module docstring). Subclasses give the row randomiser."""

    name = ""

    def __init__(self, eps: float, m: int = 1024, rows: int = 64, hash_seed: int = 0) -> None:
        self.eps = v.positive(eps, "eps")
        self.hashes = SketchHashes(rows, m, hash_seed)
        self.m, self.rows = self.hashes.m, self.hashes.rows

    def __repr__(self) -> str:
        return f"{type(self).__name__}(eps={self.eps!r}, m={self.m}, rows={self.rows}, hash_seed={self.hashes.seed})"

    # ----------------------------------------------------------------- privacy
    def epsilon(self) -> float:
        """The exact pure eps: the row randomiser's between two separated buckets."""
        return self.eps

    # ----------------------------------------------------------------- the terms and their law
    def _term_affine(self) -> tuple[float, float]:
        """``(scale, shift)``: a report's term is ``scale * S + shift`` with ``S`` its 0/1
        success (CMS: the bit at the query's bucket; HCMS: the sign agreeing with the query's
        Hadamard entry)."""
        raise NotImplementedError

    def _success(self, pi: NDArray[np.float64]) -> NDArray[np.float64]:
        """The probability of a success for a report whose row meets the query's bucket with
        probability ``pi``."""
        raise NotImplementedError

    def _scale(self) -> float:
        return self.m / (self.m - 1.0)

    def moments(self, items: ArrayLike, counts: ArrayLike, query: int) -> tuple[float, float]:
        """The exact mean and variance of :meth:`estimate` of ``query`` when ``counts[i]``
        reports hold ``items[i]`` (distinct), given these hash functions."""
        x = _items(items)
        n_i = v.counts(counts, "counts", size=x.size).astype(np.float64)
        pi = self.hashes.collision_rates(x, query)
        s = self._success(pi)
        scale, shift = self._term_affine()
        total = float(n_i.sum())
        mean_terms = float(n_i @ (scale * s + shift))
        var_terms = float(n_i @ (scale * scale * s * (1.0 - s)))
        return self._scale() * (mean_terms - total / self.m), self._scale() ** 2 * var_terms

    def term_law(
        self, items: ArrayLike, counts: ArrayLike, query: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The exact law of :meth:`estimate` of ``query`` given these hash functions: its
        values and their probabilities (a Poisson-binomial count of successes, by
        convolution; for tests on few reports)."""
        x = _items(items)
        n_i = v.counts(counts, "counts", size=x.size)
        s = self._success(self.hashes.collision_rates(x, query))
        pmf = np.ones(1)
        for prob, reps in zip(s.tolist(), n_i.tolist()):
            for _ in range(int(reps)):
                pmf = np.convolve(pmf, [1.0 - prob, prob])
        scale, shift = self._term_affine()
        total = int(n_i.sum())
        successes = np.arange(pmf.size, dtype=np.float64)
        values = self._scale() * (scale * successes + shift * total - total / self.m)
        return values, pmf

    # ----------------------------------------------------------------- aggregate mode
    def _bucket_counts(
        self, items: ArrayLike, counts: ArrayLike, gen: np.random.Generator
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The clients of each row (``rows``) and of each row's buckets (``rows x m``) when
        ``counts[i]`` clients hold ``items[i]``: each item's clients split over the rows by a
        multinomial (each picks its row uniformly), then counted by their bucket in it."""
        x = _items(items).reshape(-1)
        n = v.counts(counts, "counts", size=x.size)
        if int(n.sum()) >= 1 << 53:
            raise invalid("counts", f"counts summing to {int(n.sum())}", "a total below 2^53 (counted in doubles)")
        split = gen.multinomial(n, np.full(self.rows, 1.0 / self.rows)) if x.size else np.zeros((0, self.rows))
        split = np.asarray(split, dtype=np.int64).reshape(x.size, self.rows)
        cells = np.arange(self.rows)[:, None] * self.m + self.hashes(x)  # (rows, items)
        per_bucket = np.bincount(cells.reshape(-1), weights=split.T.reshape(-1), minlength=self.rows * self.m)
        return split.sum(axis=0), np.rint(per_bucket).astype(np.int64).reshape(self.rows, self.m)

    # ----------------------------------------------------------------- the server
    def _row_counts(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.bincount(rows, minlength=self.rows).astype(np.int64)

    def estimate(self, sketch: NDArray[np.float64], n: int, queries: ArrayLike) -> NDArray[np.float64]:
        """The debiased counts ``C(d)`` of ``queries`` from a sketch of ``n`` reports
        (:meth:`statistic`)."""
        q = _items(queries)
        s = np.asarray(sketch, dtype=np.float64)
        if s.shape != (self.rows, self.m):
            raise invalid("sketch", f"an array of shape {s.shape}", f"a {self.rows} x {self.m} sketch")
        total = v.integer(n, "n", minimum=0)
        buckets = self.hashes(q)  # (rows, queries)
        sums = s[np.arange(self.rows)[:, None], buckets].sum(axis=0)
        return self._scale() * (sums - total / self.m)

    def _largest_term_variance(self) -> float:
        """The largest variance of one report's term over ``pi`` in [0, 1]."""
        raise NotImplementedError

    def _term_variance(self, pi_mean: float, pi_square: float) -> float:
        """The mean of one report's term variance ``v(pi)`` over the hash family, from the
        first two moments of ``pi`` (``v`` is quadratic in ``pi``)."""
        raise NotImplementedError

    def expected_mse(self, n: int, count: int, squares: float) -> float:
        """The mean squared error of the estimate of an answer that ``count`` of ``n``
        clients hold, averaged over the hash family; ``squares`` is the sum of the squared
        counts of the other answers. Over the family the rows are independent and, for one
        other answer, ``pi`` is the mean of ``rows`` Bernoulli(1/m) collisions, so

            MSE = (m/(m-1))^2 [count v(1) + (n - count) E v(pi) + squares Var(pi)],
            E pi = 1/m,  Var(pi) = (1/m)(1 - 1/m)/rows,

        exact with one other answer (pairwise independence is all it uses). With several,
        the cross terms of the bias need three answers' collisions, taken here as a 3-wise
        independent family has them (1/m^2): the family in use is pairwise independent, so
        that part is an approximation (tests/mechanisms/test_sketches.py measures it)."""
        total = v.integer(n, "n", minimum=0)
        own = v.integer(count, "count", minimum=0, maximum=total)
        sq = v.real(squares, "squares", "a finite number >= 0 (a sum of squared counts)")
        if not (0.0 <= sq < math.inf):
            raise invalid("squares", squares, "a finite number >= 0 (a sum of squared counts)")
        mean = 1.0 / self.m
        spread = mean * (1.0 - mean) / self.rows
        others = self._term_variance(mean, spread + mean * mean)
        return self._scale() ** 2 * (own * self._term_variance(1.0, 1.0) + (total - own) * others + sq * spread)

    def std_error_bound(self, n: int) -> float:
        """An upper bound on the standard error of any estimate from ``n`` reports, whatever
        the answers and the hashes: every term's variance at its largest
        (:meth:`moments` gives the exact one when the answers are known)."""
        total = v.integer(n, "n", minimum=0)
        return self._scale() * math.sqrt(total * self._largest_term_variance())

    def heavy_hitters(
        self, sketch: NDArray[np.float64], n: int, candidates: ArrayLike, top: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The ``top`` candidates with the largest estimated counts, largest first (ties in
        the candidates' order): their positions in ``candidates`` and their estimates. A
        sketch answers queries; the candidates come from elsewhere (a dictionary, a pilot)."""
        count = v.integer(top, "top", minimum=1)
        est = self.estimate(sketch, n, candidates)
        order = np.argsort(-est, kind="stable")[:count]
        return order.astype(np.int64), est[order]


class CountMeanSketch(CountSketchBase):
    """Apple's count-mean sketch (module docstring): a report is ``(row, m bits)``."""

    name = "cms"

    def __init__(self, eps: float, m: int = 1024, rows: int = 64, hash_seed: int = 0) -> None:
        super().__init__(eps, m, rows, hash_seed)
        self.q = 1.0 / (1.0 + math.exp(self.eps / 2.0))
        self.gap = math.tanh(self.eps / 4.0)  # 1 - 2q without cancellation

    def _term_affine(self) -> tuple[float, float]:
        return 1.0 / self.gap, -self.q / self.gap

    def _largest_term_variance(self) -> float:
        return self.q * (1.0 - self.q) / (self.gap * self.gap) + 0.25  # pi (1 - pi) at most 1/4

    def _term_variance(self, pi_mean: float, pi_square: float) -> float:
        return self.q * (1.0 - self.q) / (self.gap * self.gap) + pi_mean - pi_square

    def _success(self, pi: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.q + self.gap * pi

    def privatize(self, items: ArrayLike, rng: RNGLike = None) -> tuple[NDArray[np.int64], NDArray[np.uint8]]:
        """One report per answer: its row and its ``m`` bits (``uint8``)."""
        gen = as_generator(rng)
        x = _items(items).reshape(-1)
        rows = gen.integers(0, self.rows, size=x.size)
        at = self.hashes(x, rows)
        bits = np.zeros((x.size, self.m), dtype=np.uint8)
        flat = bits.reshape(-1)
        _bernoulli_ones(flat, self.q, gen)
        keep = gen.random(x.size) >= self.q  # the answer's own bit: 1 with probability 1 - q
        bits[np.arange(x.size), at] = keep
        return rows, bits

    def sample_statistic(self, items: ArrayLike, counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        """The sketch of ``counts[i]`` clients holding ``items[i]``, drawn exactly without
        drawing a report: given the clients of row ``j`` and of its bucket ``s``, the bits at
        ``s`` are independent, so their number of ones is ``Binomial(N_js, 1 - q) +
        Binomial(n_j - N_js, q)``. Cost ``O(items x rows + rows x m)``, whatever the number of
        clients (aggregate mode)."""
        gen = as_generator(rng)
        per_row, buckets = self._bucket_counts(items, counts, gen)
        ones = gen.binomial(buckets, 1.0 - self.q) + gen.binomial(per_row[:, None] - buckets, self.q)
        return (ones - self.q * per_row[:, None]) / self.gap

    def statistic(self, rows: ArrayLike, bits: ArrayLike) -> NDArray[np.float64]:
        """The ``rows x m`` sketch of reports: per row and bucket the sum of the reports' terms
        ``(bit - q) / (1 - 2q)``; sketches of batches add up."""
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        b = np.asarray(bits)
        if b.shape != (r.size, self.m):
            raise invalid("bits", f"an array of shape {b.shape}", f"one row of {self.m} bits per report")
        per_row = self._row_counts(r)
        ordered = b[np.argsort(r, kind="stable")]  # the reports row by row
        bounds = np.concatenate([[0], np.cumsum(per_row)])
        ones = np.zeros((self.rows, self.m), dtype=np.int64)
        for j in np.flatnonzero(per_row).tolist():  # each row's bits summed in 16-bit blocks
            for lo in range(int(bounds[j]), int(bounds[j + 1]), _SUM16):
                hi = min(int(bounds[j + 1]), lo + _SUM16)
                ones[j] += ordered[lo:hi].sum(axis=0, dtype=np.uint16)
        return (ones - self.q * per_row[:, None]) / self.gap


class HadamardCountMeanSketch(CountSketchBase):
    """Apple's Hadamard count-mean sketch (module docstring): a report is ``(row, column,
    sign)``, one bit of signal."""

    name = "hcms"

    def __init__(self, eps: float, m: int = 1024, rows: int = 64, hash_seed: int = 0) -> None:
        super().__init__(eps, m, rows, hash_seed)
        self.q = 1.0 / (1.0 + math.exp(self.eps))
        self.c = 1.0 / math.tanh(self.eps / 2.0)  # (e^eps + 1)/(e^eps - 1)

    def _term_affine(self) -> tuple[float, float]:
        return 2.0 * self.c, -self.c

    def _largest_term_variance(self) -> float:
        return self.c * self.c  # c^2 - pi^2, at pi = 0

    def _term_variance(self, pi_mean: float, pi_square: float) -> float:
        return self.c * self.c - pi_square

    def _success(self, pi: NDArray[np.float64]) -> NDArray[np.float64]:
        return 0.5 + (0.5 - self.q) * pi

    def privatize(
        self, items: ArrayLike, rng: RNGLike = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int8]]:
        """One report per answer: its row, its column and its sign (``+1``/``-1``)."""
        gen = as_generator(rng)
        x = _items(items).reshape(-1)
        rows = gen.integers(0, self.rows, size=x.size)
        cols = gen.integers(0, self.m, size=x.size)
        at = self.hashes(x, rows)
        sign = 1 - 2 * _odd_parity(at, cols).astype(np.int64)  # H[h_j(x), l]
        flip = gen.random(x.size) < self.q
        return rows, cols, np.where(flip, -sign, sign).astype(np.int8)

    def sample_statistic(self, items: ArrayLike, counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.float64]:
        """The sketch of ``counts[i]`` clients holding ``items[i]``, drawn exactly without
        drawing a report (aggregate mode): the clients of each row and bucket split over the
        ``m`` columns by a multinomial (each picks its column uniformly); in column ``l`` the
        clients whose bucket has ``H[s, l] = +1`` send ``+1`` with probability ``1 - q`` and
        the others with probability ``q``, two binomials per cell. Cost ``O(rows x m^2)``
        (a row's ``m x m`` split at a time), whatever the number of clients."""
        gen = as_generator(rng)
        _, buckets = self._bucket_counts(items, counts, gen)
        h = _hadamard(self.m)
        raw = np.zeros((self.rows, self.m))
        uniform = np.full(self.m, 1.0 / self.m)
        for j in range(self.rows):
            cols = gen.multinomial(buckets[j], uniform)  # (bucket, column) clients
            agree = (cols * (h > 0)).sum(axis=0)  # per column: clients whose entry is +1
            total = cols.sum(axis=0)
            plus = gen.binomial(agree, 1.0 - self.q) + gen.binomial(total - agree, self.q)
            raw[j] = 2 * plus - total
        return self.c * _fwht(raw)

    def statistic(self, rows: ArrayLike, cols: ArrayLike, signs: ArrayLike) -> NDArray[np.float64]:
        """The ``rows x m`` sketch: each row's signs times ``c`` summed per column, then
        transformed by ``H`` (so entry ``[j, s]`` sums the terms of the reports of row ``j``
        for a query in bucket ``s``); sketches of batches add up."""
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        c = np.asarray(cols, dtype=np.int64).reshape(-1)
        w = np.asarray(signs, dtype=np.float64).reshape(-1)
        if not (r.size == c.size == w.size):
            raise invalid("signs", f"{w.size} signs for {r.size} rows and {c.size} columns", "one of each per report")
        raw = np.bincount(r * self.m + c, weights=w, minlength=self.rows * self.m).astype(np.float64)
        return self.c * _fwht(raw.reshape(self.rows, self.m))


def _bernoulli_ones(out: NDArray[np.uint8], q: float, gen: np.random.Generator) -> None:
    """Set each entry of the zeroed ``out`` to 1 independently with probability ``q``,
    drawing only the ones: the gaps between successive ones of a Bernoulli(``q``) sequence
    are independent Geometric(``q``) (trials up to and including the next one), so the
    positions are their running sums (about ``q`` draws per entry instead of one uniform),
    in blocks of gaps sized to the ones expected (at most :data:`_UNIFORMS`), the last
    block's gaps beyond the end left unused."""
    size = out.size
    position = -1  # the last one set so far
    while True:
        left = size - 1 - position  # entries still to decide; about q * left ones among them
        if left <= 0:
            return
        block = min(_UNIFORMS, int(q * left + 6.0 * math.sqrt(q * left) + 64))
        gaps = gen.geometric(q, size=block)
        ones = position + np.cumsum(gaps)
        inside = ones[ones < size]
        out[inside] = 1
        if inside.size < ones.size:
            return
        position = int(ones[-1])


def _hadamard(m: int) -> NDArray[np.int8]:
    """The ``m x m`` Sylvester-Hadamard matrix, ``H[s, l] = (-1)^popcount(s & l)``."""
    s = np.arange(m)
    return (1 - 2 * _odd_parity(s[:, None], s[None, :]).astype(np.int8)).astype(np.int8)


def best_shape(
    sketch: type[CountSketchBase], eps: float, n: int, count: int, squares: float, cells: int, max_m: int | None = None
) -> tuple[int, int, float]:
    """The width ``m`` (a power of two, at most ``max_m``) and depth ``rows`` with
    ``m x rows <= cells`` (the server's sketch) whose :meth:`~CountSketchBase.expected_mse`
    for an answer held by ``count`` of ``n`` clients is smallest: ``(m, rows, mse)``. For a
    fixed number of cells the collisions' share of the mean squared error,
    ``squares (1 - 1/m) / cells``, hardly depends on the shape, and a wider row lowers the
    other answers' share, so the widest row allowed wins: the real choice is ``max_m``. A
    count-mean sketch's report carries ``m`` bits, so ``max_m`` is its size; a Hadamard
    report carries ``log2 m + 1``, and its width is bounded by the server's memory alone.
    More rows never lower the mean squared error here; they make the error's law
    concentrate (each row an independent draw of collisions)."""
    budget = v.integer(cells, "cells", minimum=2)
    top = budget if max_m is None else min(budget, v.integer(max_m, "max_m", minimum=2))
    best: tuple[int, int, float] | None = None
    m = 2
    while m <= top:
        rows = budget // m
        mse = sketch(eps, m=m, rows=rows).expected_mse(n, count, squares)
        if best is None or mse < best[2]:
            best = (m, rows, mse)
        m *= 2
    assert best is not None
    return best
