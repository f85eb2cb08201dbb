"""RAPPOR (Erlingsson, Pihur and Korolova 2014): a Bloom filter of the client's value,
randomised twice, with exact privacy and an exact least-squares estimator over a known
candidate set.

**The mechanism.** The inputs are the indices ``x = 0..k-1`` of ``k`` candidate strings.
Candidate ``x`` sets the bits ``H_1(x), ..., H_h(x)`` of an ``m``-bit Bloom filter; ``B_x``
is that pattern (it has fewer than ``h`` ones when hashes collide). The ``h`` hash functions
are fixed per *cohort* ``c`` (:func:`bloom_bits`)::

    H_j(x) = s(s(s(c) XOR x) XOR j) mod m,      j = 0..h-1,

with ``s`` the splitmix64 mixer on 64-bit words (Steele, Lea and Flood 2014: add the golden
gamma ``0x9E3779B97F4A7C15``, then ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31``, all modulo 2^64).

One report of one value: the *permanent* randomized response sets ``B'_i = 1`` with
probability ``f/2``, ``0`` with probability ``f/2`` and ``B_i`` otherwise; the
*instantaneous* one reports ``S_i = 1`` with probability ``q`` if ``B'_i = 1`` and ``p`` if
``B'_i = 0``; all bits independently. For a single report the two stages compose, bit by
bit, into

    q* = P(S_i = 1 | B_i = 1) = (1 - f/2) q + (f/2) p,
    p* = P(S_i = 1 | B_i = 0) = (f/2) q + (1 - f/2) p,

(Erlingsson et al. 2014, sec. 3), so a report is ``m`` independent bits, bit ``i`` being
Bernoulli(``q*``) on the pattern and Bernoulli(``p*``) off it. :meth:`Rappor.privatize`
samples that law directly; :meth:`Rappor.permanent_response` and
:meth:`Rappor.instantaneous_response` run the two stages (memoised reports).

**Exact privacy of one report.** For candidates ``x != x'`` the two report laws differ only
on the ``a = |B_x minus B_x'|`` bits that ``x`` sets and ``x'`` does not and the
``b = |B_x' minus B_x|`` bits the other way round; the privacy loss is the sum of the
independent per-bit losses on them: ``L1 = log(q*/p*)`` or ``L0 = log((1-q*)/(1-p*))`` on
the first kind, ``-L1`` or ``-L0`` on the second. Composing the per-bit laws (their atoms
convolve) gives the exact privacy-loss law of the pair: with ``i`` ones among the ``a`` bits
and ``j`` among the ``b`` bits the loss is ``U L1 + (a - b - U) L0`` with ``U = i - j``, of
P-mass ``sum_{i - j = U} C(a,i) q*^i (1-q*)^(a-i) C(b,j) p*^j (1-p*)^(b-j)``, summed in
log space. Dropping bits is post-processing, so a pair with ``(a, b)`` dominates every pair
with fewer differing bits of each kind; the mechanism's ``delta(eps)`` (the hockey-stick
divergence maximised over pairs) is the largest over the Pareto-maximal ``(a, b)`` realised
by the actual candidate patterns (both orders), found once and cached. The pure eps is
``max (a L1 - b L0)`` over those pairs when ``q* > p*``: ``h log(q*(1-p*)/(p*(1-q*)))`` for
two disjoint patterns of ``h`` bits (the paper's ``eps_1``).

**Longitudinal privacy** (:meth:`Rappor.epsilon_longitudinal`): with infinitely many
reports of the same value the permanent bits ``B'`` are revealed, so the guarantee is that
of the permanent randomized response alone: per differing bit a binary randomized response
with keep probability ``1 - f/2``, so a pair with ``a + b`` differing bits has the law of
``a + b`` independent ones and the exact eps is ``max (a + b) log((1 - f/2)/(f/2))`` over the
pairs of candidates: the paper's ``eps_inf = 2 h log((1 - f/2)/(f/2))`` for disjoint
patterns.

**The estimator** (inversion over the known candidate set; the paper's regression step
without the lasso selection). The statistic is the ``m`` bit counts ``c_i``. From ``n``
reports ``t_i = (c_i/n - p*)/(q* - p*)`` estimates ``sum_x pi_x B_x[i]``, i.e.
``E[t] = B^T pi`` for the ``k x m`` pattern matrix ``B``; the estimate is the least-squares
solution ``pi_hat = P t`` with ``P = (B B^T)^-1 B``, the left inverse of ``B^T``. It exists
and is unbiased iff the ``m x k`` matrix ``B^T`` has full column rank ``k`` (so ``m >= k``;
:attr:`Rappor.identifiable`). The least squares splits over the connected blocks of the
bipartite graph of candidates and the bits they set, so ``P`` is computed block by block
and stored sparse.

Exact covariance: bits are independent given the input but not across clients, whose
inputs are random. With the input ``X ~ pi``, ``a_i(x)`` the probability that bit ``i`` is
one and ``u = B^T pi``, one report's statistic ``S`` has
``Cov(S) = diag(v) + (q* - p*)^2 (B^T diag(pi) B - u u^T)`` with
``v_i = u_i q*(1-q*) + (1 - u_i) p*(1-p*)`` (the mean conditional variance plus the
covariance of the conditional mean); as ``P B^T = I``,

    Cov(pi_hat) = [ P diag(v) P^T / (q* - p*)^2 + diag(pi) - pi pi^T ] / n.

The aggregate law is exact too: given the input counts, bit ``i``'s count is
``Binomial(N_i, q*) + Binomial(n - N_i, p*)`` with ``N_i`` the clients whose pattern has
bit ``i``, independently over the bits (:meth:`Rappor.sample_statistic`, O(k h + m)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.finite import MAX_DENSE_ENTRIES, _map_eps, _smallest_eps, check_dense
from ldpsim.privacy.guarantees import PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD

#: Largest number of candidates and of Bloom filter bits.
MAX_K = 1 << 24
MAX_BITS = 1 << 24
#: Largest number of hash functions (a pair's loss law has at most 2 h + 1 atoms).
MAX_HASHES = 64
#: :meth:`Rappor.possible_reports` lists the 2^m reports up to this many bits.
ENUMERATE_MAX_BITS = 10
#: Report bits drawn per chunk by :meth:`Rappor.privatize` (8 MB of uniforms): bounds its
#: temporary memory whatever the number of clients.
CHUNK_BITS = 1 << 20

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(z: ArrayLike) -> NDArray[np.uint64]:
    """The splitmix64 mixer (Steele, Lea and Flood 2014) on 64-bit words, vectorised:
    ``z + 0x9E3779B97F4A7C15``, then xor-shift-multiply twice and a final xor-shift, all
    modulo 2^64."""
    z = np.array(z, dtype=np.uint64, ndmin=1)
    with np.errstate(over="ignore"):
        z = z + _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def bloom_bits(k: int, m: int, h: int, cohort: int) -> NDArray[np.int64]:
    """``(k, h)``: the bit ``H_j(x) = s(s(s(cohort) XOR x) XOR j) mod m`` that hash ``j``
    of cohort ``cohort`` sets for candidate ``x`` (``s`` = :func:`splitmix64`)."""
    seed = splitmix64(np.array([cohort], dtype=np.uint64))
    per_x = splitmix64(seed ^ np.arange(k, dtype=np.uint64))
    z = splitmix64(per_x[:, None] ^ np.arange(h, dtype=np.uint64)[None, :])
    return (z % np.uint64(m)).astype(np.int64)


def _probability(value: Any, name: str) -> float:
    x = v.as_float(value, name, "a number in [0, 1]")
    if not 0.0 <= x <= 1.0:  # also NaN
        raise invalid(name, value, "a number in [0, 1]")
    return x


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _log_ratio(a: float, b: float, diff: float) -> float:
    """``log(a / b)`` for ``a, b > 0`` given ``diff = a - b`` (accurate when a is close to b)."""
    if 0.5 * b <= a <= 2.0 * b:
        return math.log1p(diff / b)
    return math.log(a) - math.log(b)


def _times(count: NDArray[Any], log_mass: float) -> NDArray[np.float64]:
    """``count * log_mass`` with ``0 * -inf = 0`` (no outcome of probability zero)."""
    count = np.asarray(count, dtype=np.float64)
    if math.isfinite(log_mass):
        return count * log_mass
    return np.where(count == 0, 0.0, -math.inf)


class Rappor(FrequencyOracle):
    """RAPPOR over ``k`` candidate strings (see the module docstring for the mechanism,
    its exact privacy and its estimator).

    Parameters: ``k`` candidates (inputs ``0..k-1``), ``m`` Bloom filter bits, ``h`` hash
    functions, ``f`` the permanent randomized response, ``p = P(S_i = 1 | B'_i = 0)``,
    ``q = P(S_i = 1 | B'_i = 1)`` and ``cohort`` (which fixed set of hash functions).

    A report is a vector of ``m`` bits (``uint8``, one byte per bit: ``report_shape =
    (m,)``); nothing ``k x m`` or ``k x k`` is built unless asked (:attr:`support_matrix`,
    :meth:`estimate_covariance`), so privatising, aggregating, the exact privacy and the
    estimate work at ``k`` in the hundreds of thousands.
    """

    name = "rappor"
    aggregate_exact = True
    has_density = True
    exact_delta = True

    def __init__(
        self, k: int, m: int = 32, h: int = 2, f: float = 0.5, p: float = 0.5, q: float = 0.75, cohort: int = 0
    ) -> None:
        self.k = v.integer(k, "k", minimum=2, maximum=MAX_K)
        self.m = v.integer(m, "m", minimum=1, maximum=MAX_BITS)
        self.h = v.integer(h, "h", minimum=1, maximum=MAX_HASHES)
        self.f = _probability(f, "f")
        self.p = _probability(p, "p")
        self.q = _probability(q, "q")
        self.cohort = v.integer(cohort, "cohort", minimum=0, maximum=2**63 - 1)
        self.report_shape = (self.m,)
        self._labels0 = tuple(range(self.k))
        self.input_labels = self._labels0
        half = self.f / 2.0
        # the composed per-bit probabilities and their complements, each from its own
        # formula (no 1 - x cancellation near 0 or 1)
        self.q_star = (1.0 - half) * self.q + half * self.p
        self.p_star = half * self.q + (1.0 - half) * self.p
        self._q_star_c = (1.0 - half) * (1.0 - self.q) + half * (1.0 - self.p)
        self._p_star_c = half * (1.0 - self.q) + (1.0 - half) * (1.0 - self.p)
        #: ``q* - p* = (1 - f)(q - p)``, the divisor of the estimator
        self.gap = (1.0 - self.f) * (self.q - self.p)
        self._lq1, self._lq0 = _log(self.q_star), _log(self._q_star_c)
        self._lp1, self._lp0 = _log(self.p_star), _log(self._p_star_c)
        bits = np.sort(bloom_bits(self.k, self.m, self.h, self.cohort), axis=1)
        first = np.ones(bits.shape, dtype=bool)
        first[:, 1:] = bits[:, 1:] != bits[:, :-1]
        #: ``(k, h)`` the hashed bits of every candidate (sorted; repeated on collisions)
        self.bits = bits
        self.bits.setflags(write=False)
        rows, cols = np.nonzero(first)
        # the pattern matrix B (k x m) as its ones: candidate rows[e] sets bit bits[rows, cols][e]
        self._rows = rows.astype(np.int64)
        self._cols = bits[rows, cols]
        #: number of distinct bits of each candidate's pattern (1..h)
        self.weights = first.sum(axis=1).astype(np.int64)

    # ----------------------------------------------------------------- identity
    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "m": self.m, "h": self.h, "f": self.f, "p": self.p, "q": self.q, "cohort": self.cohort}

    def pattern(self, x: Any) -> NDArray[np.int64]:
        """The distinct bits of the Bloom filter pattern ``B_x`` of the input label ``x``."""
        i = self._index(x)
        return np.unique(self.bits[i])

    def _index(self, x: Any) -> int:
        if self.input_labels is self._labels0:
            if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) and 0 <= int(x) < self.k:
                return int(x)
        else:
            cached = self.__dict__.get("_lookup")
            if cached is None or cached[0] is not self.input_labels:
                cached = (self.input_labels, {label: i for i, label in enumerate(self.input_labels)})
                self.__dict__["_lookup"] = cached
            try:
                if x in cached[1]:
                    return int(cached[1][x])
            except TypeError:
                pass
        raise invalid("x", x, f"one of the {self.k} input labels of {self!r}")

    # ----------------------------------------------------------------- sampling
    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.uint8]:
        """``n`` independent reports (``(n, m)`` bits) for the input label ``x``: the same
        draws as :meth:`privatize` of ``n`` copies of its index."""
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, self._index(x), dtype=np.int64), rng)

    def _chunk_rows(self, chunk_size: int | None) -> int:
        if chunk_size is None:
            return max(1, CHUNK_BITS // self.m)
        return v.integer(chunk_size, "chunk_size", minimum=1)

    def privatize(self, x: ArrayLike, rng: RNGLike = None, *, chunk_size: int | None = None) -> NDArray[np.uint8]:
        """One report per entry of ``x`` (candidate indices): an array of shape
        ``x.shape + (m,)`` of bits (``uint8``). Bit ``i`` of a client with input ``x`` is
        one with probability ``q*`` if ``B_x[i]`` else ``p*``, independently: one uniform
        per bit compared with that probability. Vectorised in chunks of ``chunk_size``
        clients (default: ``2^20 / m``), so temporary memory is bounded whatever the number
        of clients; the result is determined by the generator state and ``chunk_size``."""
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        chunk = self._chunk_rows(chunk_size)
        flat = arr.reshape(-1)
        out = np.empty((flat.size, self.m), dtype=np.uint8)
        buf = np.empty((min(chunk, flat.size), self.m))  # the uniforms, reused chunk after chunk
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            self._privatize_chunk(flat[start:stop], gen, out[start:stop], buf[: stop - start])
        return out.reshape(arr.shape + (self.m,))

    def _privatize_chunk(
        self, x: NDArray[np.integer], rng: np.random.Generator, out: NDArray[np.uint8], u: NDArray[np.float64]
    ) -> None:
        rng.random(out=u)
        np.less(u, self.p_star, out=out.view(np.bool_))
        r = np.repeat(np.arange(x.size), self.h)
        b = self.bits[x].ravel()
        out[r, b] = u[r, b] < self.q_star

    def permanent_response(self, x: ArrayLike, rng: RNGLike = None) -> NDArray[np.uint8]:
        """The permanent randomized response ``B'`` (memoised by a client and reused for all
        its reports of the same value): bit ``i`` is one with probability ``1 - f/2`` if
        ``B_x[i]`` else ``f/2``. Shape ``x.shape + (m,)``."""
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        flat = arr.reshape(-1)
        out = np.empty((flat.size, self.m), dtype=np.uint8)
        half = self.f / 2.0
        chunk = self._chunk_rows(None)
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            u = gen.random((stop - start, self.m))
            block = out[start:stop]
            np.less(u, half, out=block.view(np.bool_))
            r = np.repeat(np.arange(stop - start), self.h)
            b = self.bits[flat[start:stop]].ravel()
            block[r, b] = u[r, b] < 1.0 - half
        return out.reshape(arr.shape + (self.m,))

    def instantaneous_response(self, permanent: ArrayLike, rng: RNGLike = None) -> NDArray[np.uint8]:
        """The instantaneous randomized response of permanent bits ``B'`` (any shape
        ``(..., m)``): each bit is one with probability ``q`` if ``B'_i = 1`` else ``p``."""
        gen = as_generator(rng)
        arr = self._reports(permanent, "permanent")
        flat = arr.reshape(-1, self.m)
        out = np.empty(flat.shape, dtype=np.uint8)
        chunk = self._chunk_rows(None)
        for start in range(0, flat.shape[0], chunk):
            stop = min(start + chunk, flat.shape[0])
            u = gen.random((stop - start, self.m))
            np.less(u, np.where(flat[start:stop] == 1, self.q, self.p), out=out[start:stop].view(np.bool_))
        return out.reshape(arr.shape)

    def _reports(self, reports: ArrayLike, name: str) -> NDArray[Any]:
        """``reports`` as an integer array of 0/1 bits with last axis ``m`` (one line otherwise)."""
        arr = np.asarray(reports)
        expected = f"reports of {self.m} bits 0/1 (an integer array with last axis of length {self.m})"
        if arr.dtype == bool:
            arr = arr.view(np.uint8)
        if not np.issubdtype(arr.dtype, np.integer) or arr.ndim == 0 or arr.shape[-1] != self.m:
            raise invalid(name, f"an array of dtype {arr.dtype} and shape {arr.shape}", expected)
        if arr.size:
            top = arr.max()
            low = 0 if np.issubdtype(arr.dtype, np.unsignedinteger) else arr.min()
            if top > 1 or low < 0:
                raise invalid(name, f"a bit {int(top) if top > 1 else int(low)}", expected)
        return arr

    # ----------------------------------------------------------------- density
    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """``log P(report = y | input x)``, exact, for report rows ``y`` (shape ``(..., m)``;
        vectorised over the leading axes): ``n1 log q* + (w - n1) log(1 - q*) + o1 log p* +
        (m - w - o1) log(1 - p*)`` with ``w = |B_x|``, ``n1`` the ones of ``y`` on the
        pattern and ``o1`` off it. ``-inf`` for rows that are not 0/1 vectors or have
        probability zero; NaN propagates. A single row gives a float."""
        i = self._index(x)
        arr = v.real_array(y, "y", f"reports of {self.m} bits")
        if arr.ndim == 0 or arr.shape[-1] != self.m:
            raise invalid(
                "y", f"an array of shape {arr.shape}", f"reports of {self.m} bits (last axis of length {self.m})"
            )
        out = self._log_density_index(i, arr)
        return float(out) if out.ndim == 0 else out

    def _log_density_index(self, i: int, arr: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(invalid="ignore"):
            is_bit = (arr == 0.0) | (arr == 1.0)
        ok = is_bit.all(axis=-1)
        nan = np.isnan(arr).any(axis=-1)
        bits = np.where(is_bit, arr, 0.0)
        pat = np.unique(self.bits[i])
        w = pat.size
        n1 = bits[..., pat].sum(axis=-1)
        o1 = bits.sum(axis=-1) - n1
        lp = (
            _times(n1, self._lq1)
            + _times(w - n1, self._lq0)
            + _times(o1, self._lp1)
            + _times(self.m - w - o1, self._lp0)
        )
        out = np.where(ok, lp, -math.inf)
        return np.where(nan, math.nan, out)

    def possible_reports(self) -> NDArray[np.int64]:
        """Every report of positive probability under some input, as rows of ``m`` bits (bit
        ``j`` of row ``r`` is bit ``j`` of the binary code ``r`` among the kept codes): all
        ``2^m`` unless ``p*`` or ``q*`` is 0 or 1. Only for ``m <=``
        :data:`ENUMERATE_MAX_BITS`."""
        if self.m > ENUMERATE_MAX_BITS:
            raise invalid("m", self.m, f"m <= {ENUMERATE_MAX_BITS} to list all 2^m reports")
        codes = np.arange(1 << self.m, dtype=np.int64)
        y = (codes[:, None] >> np.arange(self.m, dtype=np.int64)[None, :]) & 1
        yf = y.astype(np.float64)
        keep = np.zeros(codes.size, dtype=bool)
        for i in self._distinct_patterns()[2]:
            keep |= np.isfinite(self._log_density_index(int(i), yf))
        return y[keep]

    # ----------------------------------------------------------------- the worst pairs
    def _distinct_patterns(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """The distinct patterns (rows of bits, -1 padding), their weights, one candidate of
        each and the number of candidates sharing it."""
        cached = self.__dict__.get("_distinct")
        if cached is None:
            first = np.ones(self.bits.shape, dtype=bool)
            first[:, 1:] = self.bits[:, 1:] != self.bits[:, :-1]
            keys = np.sort(np.where(first, self.bits, -1), axis=1)
            pats, rep, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
            cached = (pats, (pats >= 0).sum(axis=1), rep.astype(np.int64), counts)
            self.__dict__["_distinct"] = cached
        return cached

    def _pareto(self) -> dict[tuple[int, int], tuple[int, int]]:
        """The Pareto-maximal ``(a, b)`` over ordered pairs of candidates with their
        representative pairs of candidate indices (cached). Two disjoint patterns of the
        largest weight W realise ``(W, W)``, which dominates every pair; otherwise every
        pair of distinct patterns is examined, in blocks."""
        cached = self.__dict__.get("_pareto_cache")
        if cached is not None:
            return cached
        pats, w, rep, counts = self._distinct_patterns()
        d = pats.shape[0]
        found: dict[tuple[int, int], tuple[int, int]] = {}
        if d == 1:
            found[(0, 0)] = (0, 1)  # every candidate has the same pattern
        else:
            top = np.flatnonzero(w == w.max())
            big = int(w.max())
            for t in top[:64].tolist():
                hit = np.flatnonzero(_overlaps(pats[t : t + 1], pats[top])[0] == 0)
                if hit.size:
                    found[(big, big)] = (int(rep[t]), int(rep[top[hit[0]]]))
                    break
            else:
                found = self._all_pairs(pats, w, rep)
        pareto = {
            ab: pair
            for ab, pair in found.items()
            if not any(o != ab and o[0] >= ab[0] and o[1] >= ab[1] for o in found)
        }
        self.__dict__["_pareto_cache"] = pareto
        return pareto

    def _all_pairs(
        self, pats: NDArray[np.int64], w: NDArray[np.int64], rep: NDArray[np.int64]
    ) -> dict[tuple[int, int], tuple[int, int]]:
        d = pats.shape[0]
        found: dict[tuple[int, int], tuple[int, int]] = {}
        step = max(1, (1 << 20) // d)
        base = self.h + 1
        for r0 in range(0, d, step):
            r1 = min(d, r0 + step)
            ov = _overlaps(pats[r0:r1], pats)
            a = w[r0:r1, None] - ov
            b = w[None, :] - ov
            code = a * base + b
            code[np.arange(r1 - r0), np.arange(r0, r1)] = -1  # a pattern against itself
            uniq, where = np.unique(code.ravel(), return_index=True)
            for c, pos in zip(uniq.tolist(), where.tolist()):
                if c < 0 or (c // base, c % base) in found:
                    continue
                r, s = divmod(pos, d)
                found[(c // base, c % base)] = (int(rep[r0 + r]), int(rep[s]))
        return found

    def _pair_pld(self, a: int, b: int) -> Any:
        """The exact privacy-loss law of a pair with ``a`` bits set only by the first input
        and ``b`` only by the second (the other bits have equal laws and add nothing)."""
        fin1 = self.q_star > 0 and self.p_star > 0  # outcome 1 possible under both
        fin0 = self._q_star_c > 0 and self._p_star_c > 0  # outcome 0 possible under both
        l1 = _log_ratio(self.q_star, self.p_star, self.gap) if fin1 else 0.0
        l0 = _log_ratio(self._q_star_c, self._p_star_c, -self.gap) if fin0 else 0.0
        # P-masses of the outcomes where both laws are positive: bits of the first kind
        # (Bernoulli(q*) against p*) and of the second kind (p* against q*)
        f1, f0 = (self._lq1 if fin1 else -math.inf), (self._lq0 if fin0 else -math.inf)
        g1, g0 = (self._lp1 if fin1 else -math.inf), (self._lp0 if fin0 else -math.inf)
        i = np.arange(a + 1)
        j = np.arange(b + 1)
        li = np.log([float(math.comb(a, t)) for t in range(a + 1)]) + _times(i, f1) + _times(a - i, f0)
        lj = np.log([float(math.comb(b, t)) for t in range(b + 1)]) + _times(j, g1) + _times(b - j, g0)
        grid = li[:, None] + lj[None, :]
        u = i[:, None] - j[None, :]
        losses, masses = [], []
        for val in range(-b, a + 1):
            cells = grid[u == val]
            cells = cells[np.isfinite(cells)]
            if cells.size:
                losses.append(val * l1 + (a - b - val) * l0)
                masses.append(float(logsumexp(cells)))
        # the P-mass (R-mass) where the other law is zero: one minus the product over the
        # bits of the mass of the outcomes both laws allow
        both = fin1 and fin0
        mass_q = 1.0 if both else (self.q_star if fin1 else (self._q_star_c if fin0 else 0.0))
        mass_p = 1.0 if both else (self.p_star if fin1 else (self._p_star_c if fin0 else 0.0))
        p_inf = 0.0 if both else _one_minus_power(mass_q, a, mass_p, b)
        r_inf = 0.0 if both else _one_minus_power(mass_p, a, mass_q, b)
        return DiscretePLD.from_atoms(np.array(losses), np.array(masses), p_inf, r_inf)

    @property
    def _plds(self) -> tuple[Any, ...]:
        cached = self.__dict__.get("_plds_cache")
        if cached is None:
            out = []
            for a, b in sorted(self._pareto()):
                out.append(self._pair_pld(a, b))
                if a != b:
                    out.append(self._pair_pld(b, a))
            cached = tuple(out)
            self.__dict__["_plds_cache"] = cached
        return cached

    def worst_pairs(self) -> dict[tuple[int, int], tuple[int, int]]:
        """The Pareto-maximal ``(a, b)`` (bits set by one input only, by the other only)
        over ordered pairs of candidates, each with a pair of candidate indices realising it."""
        return dict(self._pareto())

    def neighbours(self) -> list[tuple[Any, Any]]:
        """One pair of input labels per worst ``(a, b)`` (up to order): the pairs that attain
        the privacy loss."""
        labels = self.input_labels
        seen, out = set(), []
        for (a, b), (x, y) in sorted(self._pareto().items()):
            if (b, a) in seen:
                continue
            seen.add((a, b))
            out.append((labels[x], labels[y]))
        return out

    # ----------------------------------------------------------------- privacy
    @property
    def _eps0(self) -> float:
        cached = self.__dict__.get("_eps0_cache")
        if cached is None:
            cached = max(_pure(p) for p in self._plds)
            self.__dict__["_eps0_cache"] = cached
        return cached

    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:
        """The exact smallest eps at which one report is (eps, delta)-LDP.

        ``delta = 0``: the largest privacy loss of the worst pairs (``inf`` when some report
        is possible under one candidate only). ``delta > 0``: the smallest float ``t`` with
        ``delta(t) <= delta`` (the loss laws' closed-form answer polished to the float
        boundary). ``delta`` may be an array."""
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        eps0 = self._eps0
        if delta == 0.0:
            return eps0
        plds = self._plds
        top = eps0 if math.isfinite(eps0) else max([0.0] + [float(p.loss[-1]) for p in plds if p.loss.size])
        guess = max(float(p.epsilon(delta)) for p in plds)
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, top, guess if math.isfinite(guess) else None)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact smallest delta at ``eps``: the hockey-stick divergence of the report laws,
        maximised over pairs of candidates (the worst pairs' loss laws, both orders).
        ``eps`` may be a scalar or an array; ``inf`` gives the largest mass one candidate
        puts where another puts none."""
        return _map_eps(eps, self._delta_scalar)

    def _delta_scalar(self, eps: float) -> float:
        return max(float(p.delta(eps)) for p in self._plds)

    def guarantee(self) -> Any:
        """The exact guarantee of one report: a :class:`ldpsim.privacy.PLDGuarantee` of the
        worst pairs' loss laws (both orders)."""
        return PLDGuarantee(self._plds, label=repr(self))

    # ----------------------------------------------------------------- longitudinal privacy
    def _max_differing(self) -> int:
        return max(a + b for a, b in self._pareto())

    def _longitudinal_pld(self) -> Any:
        s = self._max_differing()
        if s == 0 or self.f == 1.0:
            return DiscretePLD.from_atoms([0.0], [0.0])
        if self.f == 0.0:  # the permanent bits are the pattern itself
            return DiscretePLD.from_atoms([], [], 1.0, 1.0)
        return DiscretePLD.binomial(self._permanent_loss(), 0.0, s)

    def _permanent_loss(self) -> float:
        """``log((1 - f/2)/(f/2)) = log((2 - f)/f)``, the loss of one permanent bit."""
        f = self.f
        return math.log1p(2.0 * (1.0 - f) / f) if f >= 0.5 else math.log(2.0 - f) - math.log(f)

    def epsilon_longitudinal(self, delta: float = 0.0) -> float:
        """The exact eps of the permanent randomized response alone: the limit of privacy
        for any number of reports of the same value (memoisation; Erlingsson et al. 2014,
        sec. 4). ``delta = 0``: ``max (a + b) log((1 - f/2)/(f/2))`` over pairs of
        candidates (``2 h log((1 - f/2)/(f/2))`` for disjoint patterns of ``h`` bits;
        ``inf`` at ``f = 0``, 0 at ``f = 1``); ``delta > 0``: the smallest float ``t`` with
        :meth:`delta_longitudinal` ``(t) <= delta``."""
        delta = v.delta(delta, "delta")
        s = self._max_differing()
        if s == 0 or self.f == 1.0:
            return 0.0
        if self.f == 0.0:
            return 0.0 if delta >= 1.0 else math.inf
        top = float(s) * self._permanent_loss()
        if delta == 0.0:
            return top
        pld = self._longitudinal_pld()
        return _smallest_eps(lambda t: float(pld.delta(t)) <= delta, top, float(pld.epsilon(delta)))

    def delta_longitudinal(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """The exact delta at ``eps`` of the permanent randomized response alone (the law
        of ``a + b`` independent binary randomized responses with keep probability
        ``1 - f/2``, for the pair with the most differing bits)."""
        pld = self._longitudinal_pld()
        return _map_eps(eps, lambda e: float(pld.delta(e)))

    def guarantee_longitudinal(self) -> Any:
        """:meth:`epsilon_longitudinal`'s guarantee as a :class:`ldpsim.privacy.PLDGuarantee`."""
        pld = self._longitudinal_pld()
        return PLDGuarantee((pld, pld.swap()), label=repr(self) + " (longitudinal)")

    # ----------------------------------------------------------------- the statistic
    @property
    def statistic_size(self) -> int:
        """The statistic is the count of ones of each of the ``m`` bits."""
        return self.m

    def server_operations(self, n: float) -> float:
        """m bit counts per report, then least squares over the candidates."""
        return float(n) * float(self.statistic_size) + float(self.statistic_size) * float(self.k) ** 2

    @property
    def report_bits(self) -> float:
        """A report is ``m`` bits."""
        return float(self.m)

    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """The ``m`` bit counts of ``reports`` (shape ``(..., m)``, bits 0/1)."""
        arr = self._reports(reports, "reports")
        flat = arr.reshape(-1, self.m)
        out = np.zeros(self.m, dtype=np.int64)
        acc = np.uint16 if flat.dtype == np.uint8 else np.int64  # the fast path for our own reports
        for start in range(0, flat.shape[0], 4096):  # 4096 rows of bits: no uint16 overflow
            out += np.add.reduce(flat[start : start + 4096], axis=0, dtype=acc)
        return out

    def _covered(self, weights: NDArray[Any]) -> NDArray[Any]:
        """``B^T w``: per bit, the total weight of the candidates whose pattern sets it."""
        if np.issubdtype(np.asarray(weights).dtype, np.integer):
            out = np.zeros(self.m, dtype=np.int64)
            np.add.at(out, self._cols, np.asarray(weights, dtype=np.int64)[self._rows])
            return out
        return np.bincount(self._cols, weights=np.asarray(weights, dtype=np.float64)[self._rows], minlength=self.m)

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """One row per report: its ``m`` bits."""
        return self._reports(reports, "reports").reshape(-1, self.m).astype(np.int64)

    def sample_statistic(self, input_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Exact draw of the bit counts of ``input_counts[x]`` clients with input ``x``: bit
        ``i``'s count is ``Binomial(N_i, q*) + Binomial(n - N_i, p*)``, ``N_i`` the clients
        whose pattern sets bit ``i``, independently over the bits (O(k h + m))."""
        gen = as_generator(rng)
        n = v.counts(input_counts, "input_counts", size=self.k)
        covered = self._covered(n)
        total = int(sum(n.tolist()))
        return (gen.binomial(covered, self.q_star) + gen.binomial(total - covered, self.p_star)).astype(np.int64)

    @property
    def support_matrix(self) -> NDArray[np.float64]:
        """``k x m``: ``q*`` on each candidate's pattern, ``p*`` elsewhere (built on request,
        refused above ``MAX_DENSE_ENTRIES`` entries)."""
        check_dense(self.k, self.m, "RAPPOR support")
        s = np.full((self.k, self.m), self.p_star)
        s[self._rows, self._cols] = self.q_star
        return s

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``p^T S = p* sum(p) + (q* - p*) B^T p`` (length ``m``)."""
        p = np.asarray(p, dtype=np.float64)
        return self.p_star * p.sum() + self.gap * self._covered(p)

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """``S g = p* sum(g) + (q* - p*) B g`` (length ``k``)."""
        g = np.asarray(g, dtype=np.float64)
        return self.p_star * g.sum() + self.gap * np.bincount(self._rows, weights=g[self._cols], minlength=self.k)

    def possible_outputs(self) -> NDArray[np.bool_]:
        """Bits that some input makes one with positive probability."""
        covered = np.bincount(self._cols, minlength=self.m) > 0
        return np.full(self.m, self.p_star > 0) | (covered & (self.q_star > 0))

    # ----------------------------------------------------------------- the estimator
    def _inverse(self) -> tuple[str, Any]:
        """``("ok", (rows, cols, vals))``: the left inverse ``P`` of ``B^T`` as its entries;
        else ``("flat", None)`` (q* = p*), ``("rank", r)`` or ``("large", entries)``."""
        cached = self.__dict__.get("_inverse_cache")
        if cached is None:
            cached = self._build_inverse()
            self.__dict__["_inverse_cache"] = cached
        return cached

    def _build_inverse(self) -> tuple[str, Any]:
        if self.gap == 0.0:
            return ("flat", None)
        k, m = self.k, self.m
        if k > m:
            return ("rank", None)
        from scipy.sparse.csgraph import connected_components

        rows, cols = self._rows, self._cols
        from scipy.sparse import (
            coo_matrix,
        )  # deferred: scipy.sparse adds to start-up (ldpsim analyse loads this module)

        graph = coo_matrix((np.ones(rows.size), (rows, k + cols)), shape=(k + m, k + m))
        ncomp, label = connected_components(graph, directed=False)
        comp = label[:k]
        per_comp = np.bincount(comp, minlength=ncomp)
        bits_per_comp = np.bincount(label[k:], minlength=ncomp)
        multi = np.flatnonzero(per_comp > 1)
        entries = int(np.sum(per_comp[multi] * bits_per_comp[multi])) + rows.size
        if entries > MAX_DENSE_ENTRIES:
            return ("large", entries)
        alone = per_comp[comp[rows]] == 1  # a candidate alone in its block: the mean of its bits
        out_r, out_c, out_v = [rows[alone]], [cols[alone]], [1.0 / self.weights[rows[alone]]]
        deficit = 0
        ecomp = comp[rows]
        order = np.argsort(ecomp, kind="stable")
        sorted_comp = ecomp[order]
        lo = np.searchsorted(sorted_comp, multi, side="left")
        hi = np.searchsorted(sorted_comp, multi, side="right")
        for a, b in zip(lo.tolist(), hi.tolist()):  # one dense least squares per block
            ent = order[a:b]
            cand, r_loc = np.unique(rows[ent], return_inverse=True)
            bits, c_loc = np.unique(cols[ent], return_inverse=True)
            block = np.zeros((cand.size, bits.size))
            block[r_loc, c_loc] = 1.0
            rank = int(np.linalg.matrix_rank(block))
            if rank < cand.size:
                deficit += cand.size - rank
                continue
            pinv = np.linalg.pinv(block.T)  # (cand, bits): pinv @ block.T = I
            out_r.append(np.repeat(cand, bits.size))
            out_c.append(np.tile(bits, cand.size))
            out_v.append(pinv.ravel())
        if deficit:
            return ("rank", k - deficit)
        return ("ok", (np.concatenate(out_r), np.concatenate(out_c), np.concatenate(out_v)))

    def _left_inverse(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        status, value = self._inverse()
        if status == "ok":
            return value
        if status == "flat":
            if self.f == 1.0:
                raise invalid("f", self.f, "f < 1 to estimate frequencies (at f = 1 every bit is a fair coin)")
            raise invalid(
                "q", self.q, f"q != p = {self.p!r} to estimate frequencies (the reports carry no information)"
            )
        if status == "rank":
            rank = f"at most {self.m}" if value is None else str(value)
            raise invalid(
                "m",
                self.m,
                f"Bloom filter bits whose m x k pattern matrix has full column rank k = {self.k} "
                f"(its rank is {rank}) to estimate k frequencies by least squares over the candidates",
            )
        raise invalid(
            "m",
            self.m,
            f"Bloom filter patterns whose connected blocks hold at most {MAX_DENSE_ENTRIES} entries for "
            f"the exact least-squares inverse (here {value})",
        )

    @property
    def identifiable(self) -> bool:
        """Whether the frequencies can be estimated: ``q* != p*`` and the ``m x k`` pattern
        matrix ``B^T`` has full column rank ``k`` (so ``m >= k``); decided without building
        it (block by block). Raises the one-line error of :meth:`invert` when the blocks are
        too large to decide."""
        status, _ = self._inverse()
        if status == "large":
            self._left_inverse()
        return status == "ok"

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        """The unbiased estimate ``P t`` from bit frequencies ``f = c / n``, where
        ``t = (f - p*)/(q* - p*)`` and ``P`` is the least-squares left inverse of ``B^T``."""
        rows, cols, vals = self._left_inverse()
        t = (np.asarray(f, dtype=np.float64) - self.p_star) / self.gap
        return np.bincount(rows, weights=vals * t[cols], minlength=self.k)

    def _bit_variance(self, prior: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``u = B^T pi`` and ``v_i = u_i q*(1-q*) + (1 - u_i) p*(1-p*)``."""
        u = self._covered(prior)
        var = u * (self.q_star * self._q_star_c) + (1.0 - u) * (self.p_star * self._p_star_c)
        return u, var

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        """``m x m`` exact covariance of one report's bits when the input follows ``prior``:
        ``diag(v) + (q* - p*)^2 (B^T diag(pi) B - u u^T)``."""
        check_dense(self.m, self.m, "statistic covariance")
        pi = np.asarray(prior, dtype=np.float64)
        u, var = self._bit_variance(pi)
        from scipy.sparse import (
            csr_matrix,
        )  # deferred: scipy.sparse adds to start-up (ldpsim analyse loads this module)

        b = csr_matrix((np.ones(self._rows.size), (self._rows, self._cols)), shape=(self.k, self.m))
        second = (b.multiply(pi[:, None]).T @ b).toarray()
        cov = np.diag(var) + self.gap**2 * (second - np.outer(u, u))
        return (cov + cov.T) / 2.0

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``k x k`` exact covariance of :meth:`invert` from ``n`` reports of inputs drawn
        from ``prior``: ``[P diag(v) P^T / (q* - p*)^2 + diag(pi) - pi pi^T] / n``."""
        check_dense(self.k, self.k, "covariance")
        rows, cols, vals = self._left_inverse()
        pi = np.asarray(prior, dtype=np.float64)
        _, var = self._bit_variance(pi)
        from scipy.sparse import (
            csr_matrix,
        )  # deferred: scipy.sparse adds to start-up (ldpsim analyse loads this module)

        pm = csr_matrix((vals, (rows, cols)), shape=(self.k, self.m))
        noise = (pm.multiply(var[None, :]) @ pm.T).toarray() / self.gap**2
        cov = (noise + np.diag(pi) - np.outer(pi, pi)) / n
        return (cov + cov.T) / 2.0

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The diagonal of :meth:`estimate_covariance` without any ``k x k`` matrix:
        ``[sum_i P[x,i]^2 v_i / (q* - p*)^2 + pi_x (1 - pi_x)] / n``."""
        rows, cols, vals = self._left_inverse()
        pi = np.asarray(prior, dtype=np.float64)
        _, var = self._bit_variance(pi)
        noise = np.bincount(rows, weights=vals * vals * var[cols], minlength=self.k) / self.gap**2
        return np.clip((noise + pi * (1.0 - pi)) / n, 0.0, None)

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        """Per input ``x``: one report ``y`` contributes ``sum_i P[x,i] (y_i - p*)/(q* - p*)``
        to the estimate, whose range over ``y in {0,1}^m`` is ``sum_i |P[x,i]| / |q* - p*|``."""
        rows, _, vals = self._left_inverse()
        return np.bincount(rows, weights=np.abs(vals), minlength=self.k) / abs(self.gap)


def _overlaps(a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
    """``(len(a), len(b))``: the number of common bits of padded patterns (-1 = no bit)."""
    out = np.zeros((a.shape[0], b.shape[0]), dtype=np.int64)
    for i in range(a.shape[1]):
        col = a[:, i][:, None]
        if not np.any(col >= 0):
            continue
        for j in range(b.shape[1]):
            out += (col == b[None, :, j]) & (col >= 0)
    return out


def _one_minus_power(x: float, a: int, y: float, b: int) -> float:
    """``1 - x^a y^b`` for ``x, y`` in [0, 1], accurate when the product is close to 1."""
    if (x == 0.0 and a > 0) or (y == 0.0 and b > 0):
        return 1.0
    log_keep = (a * math.log(x) if a else 0.0) + (b * math.log(y) if b else 0.0)
    return min(1.0, max(0.0, -math.expm1(log_keep)))


def _pure(pld: Any) -> float:
    """The largest privacy loss of a loss law (``inf`` with mass where the other law has none)."""
    if pld.p_inf > 0:
        return math.inf
    return max(0.0, float(pld.loss[-1])) if pld.loss.size else 0.0


def rappor(k: int, m: int = 32, h: int = 2, f: float = 0.5, p: float = 0.5, q: float = 0.75, cohort: int = 0) -> Rappor:
    """RAPPOR over ``k`` candidates (see :class:`Rappor`)."""
    return Rappor(k, m, h, f, p, q, cohort)


__all__ = ["Rappor", "rappor", "bloom_bits", "splitmix64"]
