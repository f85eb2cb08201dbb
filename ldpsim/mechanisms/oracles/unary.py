"""Unary encoding: symmetric (SUE, basic one-time RAPPOR) and optimised (OUE).

A client holding ``x in 0..k-1`` sends ``k`` bits: bit ``x`` is 1 with probability ``p``,
every other bit is 1 with probability ``q < p``, all independently. The two standard
choices of ``(p, q)`` at privacy level ``eps``:

* **SUE**, symmetric unary encoding: the one-hot vector of ``x`` with every bit kept with
  probability ``p = e^(eps/2) / (e^(eps/2) + 1)`` and flipped otherwise, so
  ``q = 1 - p = 1 / (e^(eps/2) + 1)``. This is basic one-time RAPPOR (Erlingsson, Pihur
  and Korolova 2014: one bit per item, no Bloom filter, the permanent randomised
  response only); the name SUE is Wang et al.'s (2017).
* **OUE**, optimised unary encoding (Wang, Blocki, Li and Jha 2017): ``p = 1/2`` and
  ``q = 1 / (e^eps + 1)``, the choice that minimises the variance of the estimator below
  at small frequencies.

**Exact privacy.** For inputs ``x != x'`` the likelihood ratio of a report depends only
on bits ``x`` and ``x'`` (all other bits have the same law under both). With
``eps* = log(p (1 - q) / (q (1 - p)))`` the privacy loss of ``x`` against ``x'`` is
``eps*`` when (bit x, bit x') = (1, 0) (probability ``p (1 - q)`` under ``x``), ``-eps*``
when it is (0, 1) (probability ``(1 - p) q``) and 0 otherwise. For SUE
``p (1 - q) / (q (1 - p)) = (p / q)^2 = e^eps`` and for OUE it is ``(1 - q) / q = e^eps``:
both are exactly eps-LDP, ``epsilon(0) = eps``. Every pair of distinct inputs has this same
privacy-loss law, so for ``0 <= t``

    ``delta(t) = p (1 - q) (1 - e^(t - eps))`` for ``t < eps``, and 0 for ``t >= eps``,

and ``epsilon(d)`` is its inverse ``eps + log(1 - d / (p (1 - q)))`` (0 once ``d >=
delta(0)``), polished to the smallest float ``t`` with ``delta(t) <= d``. All
probabilities are kept as logarithms (``log q = -eps/2 - log1p(e^(-eps/2))`` for SUE,
``-eps - log1p(e^(-eps))`` for OUE) and ``p - q`` is computed as ``tanh(eps/4)`` (SUE) or
``tanh(eps/2) / 2`` (OUE), so eps from 1e-300 to 700 and beyond neither overflows nor
cancels.

**Statistic and estimator.** The server keeps the ``k`` column sums ``c_z`` (the number of
reports whose bit ``z`` is 1); the support matrix is ``S[x, z] = p`` if ``z == x`` else
``q`` (built only on request). The unbiased estimator of Wang et al. (2017) is

    ``f_x = (c_x / n - q) / (p - q)``,

unbiased because ``E[c_x / n] = q + (p - q) pi_x`` when ``n`` clients' inputs follow ``pi``.
When the inputs are i.i.d. from ``pi`` one report's bits have mean
``mu_z = q + (p - q) pi_z``, variance ``mu_z (1 - mu_z)`` and, for ``z != z'``, covariance
``E[E[b_z | X] E[b_z' | X]] - mu_z mu_z' = -(p - q)^2 pi_z pi_z'`` (one client has one
input, so its bits are correlated across items although independent given the input).
Hence, exactly,

    ``Var f_x = mu_x (1 - mu_x) / (n (p - q)^2)``,
    ``Cov(f_x, f_y) = -pi_x pi_y / n`` for ``x != y``.

(Given fixed input counts ``n_x = n pi_x`` instead, the items are independent and
``Var f_x = (q (1 - q) + pi_x (p - q)(1 - p - q)) / (n (p - q)^2)``, Wang et al. 2017,
Theorem 2; the i.i.d. variance adds the sampling variance ``pi_x (1 - pi_x) / n``.)

**Exact aggregate law.** Given the input counts, each item's count is
``Binomial(n_x, p) + Binomial(n - n_x, q)``, independently across items, so
:meth:`UnaryEncoding.sample_statistic` costs O(k) whatever the number of clients.

**Sampling and memory.** A report is a row of ``k`` bytes (``uint8``, 0 or 1), so
privatising ``n`` clients returns ``n k`` bytes: 10^7 clients at ``k = 4096`` would be
41 GB. The survey engine privatises one batch (``simulation.batch_size`` clients) at a
time and keeps only the statistic unless ``server.keep_reports`` is set; callers of
:meth:`UnaryEncoding.privatize` with many clients should do the same. Inside one call the
clients are privatised in chunks of about :data:`CHUNK_BITS` bits, so temporary memory
beyond the result is bounded. The ``q``-bits are drawn by :func:`bernoulli_bits`, which
is exact for the floating-point ``q`` and about five times faster than comparing one
float64 uniform per bit (0.7 ns against 3.6 ns per bit at eps = 1, measured by
benchmarks/bench_unary.py); then bit ``x`` of each report is redrawn with probability
``p``. Privatising costs about 1.2 ns per bit in all (10^7 clients at k = 4096: 48 s, and
12 s for the server's statistic).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import target_indices
from ldpsim.mechanisms.finite import _map_eps, _smallest_eps, check_dense
from ldpsim.mechanisms.oracles._pure import PureSupport
from ldpsim.privacy.guarantees import PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD

__all__ = [
    "UnaryEncoding",
    "SymmetricUnaryEncoding",
    "OptimizedUnaryEncoding",
    "bernoulli_bits",
    "CHUNK_BITS",
    "POSSIBLE_REPORTS_MAX_K",
]

#: Bits privatised per chunk (``max(1, CHUNK_BITS // k)`` clients): bounds the temporary
#: memory of :meth:`UnaryEncoding.privatize` to a few times this many bytes. Measured: 2^22
#: bits is as fast per bit as larger chunks and keeps the words in cache.
CHUNK_BITS = 1 << 22

#: :meth:`UnaryEncoding.possible_reports` lists the ``2^k`` bit vectors up to this ``k``.
POSSIBLE_REPORTS_MAX_K = 10

#: Below this probability :func:`bernoulli_bits` places the 1-bits directly (a binomial
#: count, then a uniform subset of positions): cheaper than the bit-sliced comparison
#: when 1-bits are rare (measured crossover near 1/64; numpy's subset sampler stays on
#: its O(count) path while the count is below 1/50 of the positions).
SPARSE_BELOW = 1.0 / 64.0

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
#: binary digits compared on every word before the words with undecided lanes recurse
#: (then about 6% of the words): 9 to 11 measured equally fast, 7 takes 1.6 times as long
_FULL_STEPS = 10
_BASE_WORDS = 256  # at most this many words: compare every digit (no recursion)


# --------------------------------------------------------------------- exact Bernoulli bits
def _binary_digits(prob: float) -> list[int]:
    """The binary digits ``d_1 d_2 ...`` of ``prob`` in (0, 1) (``prob = sum d_i 2^-i``),
    up to its last 1: a double has a finite expansion."""
    mant, exp = math.frexp(prob)  # prob = mant 2^exp, 1/2 <= mant < 1, exp <= 0
    num = int(mant * 2.0**53)  # exact: prob = num 2^(exp - 53)
    num >>= (num & -num).bit_length() - 1  # strip trailing zeros
    return [0] * (-exp) + [int(b) for b in bin(num)[2:]]


def _random_words(gen: np.random.Generator, n: int) -> NDArray[np.uint64]:
    return gen.integers(0, _ALL, size=n, dtype=np.uint64, endpoint=True)


def _bernoulli_words(prob: float, words: int, gen: np.random.Generator) -> NDArray[np.uint64]:
    """``words`` 64-bit words of independent Bernoulli(``prob``) bits, ``0 < prob < 1``
    (see :func:`bernoulli_bits`)."""
    digits = _binary_digits(prob)
    short = words <= _BASE_WORDS
    todo = digits if short else digits[:_FULL_STEPS]
    res = np.zeros(words, dtype=np.uint64)
    und = np.full(words, _ALL)  # lanes not decided yet
    for d in todo:
        r = _random_words(gen, words)
        # a lane's random bit is fair, so "1" may stand for the digit that decides
        if d:  # lanes whose digit of U is 0 (here: r = 1) are below prob: decided 1
            np.bitwise_and(und, r, out=r)
            res |= r
            und ^= r
        else:  # lanes whose digit of U is 1 (here: r = 0) are above prob: decided 0
            und &= r
        if short and not und.any():
            break
    if short or len(todo) == len(digits):
        return res  # lanes still undecided have U >= prob: 0
    hit = np.flatnonzero(und)
    if hit.size:
        # an undecided lane is 1 with the probability of the remaining digits, frac(prob 2^s)
        tail = math.ldexp(prob, len(todo))
        tail -= math.floor(tail)  # exact
        res[hit] |= und[hit] & _bernoulli_words(tail, hit.size, gen)
    return res


def bernoulli_bits(prob: float, size: int, rng: RNGLike = None) -> NDArray[np.uint8]:
    """``size`` independent Bernoulli(``prob``) bits (``uint8`` 0 / 1), exact for the double
    ``prob``.

    A bit is 1 when a uniform ``U`` in [0, 1) is below ``prob``. The comparison is done one
    binary digit at a time on 64 bits at once: a random 64-bit word supplies the next digit
    of 64 uniforms; a lane whose digit differs from ``prob``'s is decided (1 if its digit is
    the smaller), the others stay undecided. After :data:`_FULL_STEPS` digits the undecided
    lanes (a fraction ``2^-10``, in about 6% of the words) are independent Bernoulli bits of
    the rest of the expansion, ``frac(prob 2^10)``: those words are completed by the same
    procedure, recursively; a short run compares every digit of ``prob`` (a double has at
    most 1074), and lanes still undecided after its last 1-digit have ``U >= prob``. So
    ``P(bit = 1) = prob`` exactly, with no 2^-53 rounding of a floating-point uniform, at
    about 11 random words per 64 bits. Rare 1-bits (``prob <`` :data:`SPARSE_BELOW`) are
    placed directly: a Binomial(size, prob) count of them at a uniformly random subset of
    the positions, the same law.
    """
    gen = as_generator(rng)
    size = int(size)
    if size <= 0 or prob <= 0.0:
        return np.zeros(max(size, 0), dtype=np.uint8)
    if prob >= 1.0:
        return np.ones(size, dtype=np.uint8)
    if prob < SPARSE_BELOW:
        out = np.zeros(size, dtype=np.uint8)
        ones = int(gen.binomial(size, prob))
        out[gen.choice(size, size=ones, replace=False, shuffle=False)] = 1
        return out
    words = _bernoulli_words(prob, -(-size // 64), gen)
    return np.unpackbits(words.view(np.uint8), count=size, bitorder="little")


def _bits_with(prob: float, comp: float, size: int, gen: np.random.Generator) -> NDArray[np.uint8]:
    """Bernoulli(prob) bits given both ``prob`` and ``comp = 1 - prob`` accurately: the
    smaller one is drawn (so a probability within 1e-17 of 1 keeps its complement)."""
    if prob <= comp:
        return bernoulli_bits(prob, size, gen)
    bits = bernoulli_bits(comp, size, gen)
    bits ^= 1
    return bits


# --------------------------------------------------------------------- the oracle
class UnaryEncoding(PureSupport):
    """Unary encoding with bit probabilities ``p`` (the input's bit) and ``q`` (every other
    bit); see the module docstring for the exact privacy, the estimator and its exact
    covariance. Subclasses fix ``(p, q)`` from eps: :class:`SymmetricUnaryEncoding`,
    :class:`OptimizedUnaryEncoding`.

    Inputs of :meth:`privatize` are symbol indices ``0..k-1``; :meth:`sample`,
    :meth:`log_density`, :meth:`neighbours` and :meth:`pld` take input labels (the indices
    unless :meth:`with_labels` named them). Reports are ``uint8`` rows of ``k`` bits.
    Nothing ``k x k`` is built unless asked (:attr:`support_matrix`,
    :meth:`statistic_covariance`, :meth:`estimate_covariance`), so ``k = 10^6`` works for
    everything the engine and the analyst use.
    """

    pure_attributes = ("p", "q", "gap")
    support_label = "unary-encoding support"

    name = "unary_encoding"
    aggregate_exact = True

    def __init__(self, k: int, eps: float) -> None:
        self.k = v.alphabet_size(k, "k")
        self.eps = v.epsilon(eps, "eps")
        self.report_shape = (self.k,)
        self._labels: tuple[Any, ...] | None = None
        self._lookup: dict[Any, int] | None = None
        lp, l1p, lq, l1q, gap = self._log_probabilities(self.eps)
        #: log p, log(1 - p), log q, log(1 - q) (finite at every finite eps)
        self.log_p, self.log_1mp, self.log_q, self.log_1mq = lp, l1p, lq, l1q
        self.p, self.q = math.exp(lp), math.exp(lq)
        #: ``p - q`` without cancellation
        self.gap = gap
        #: ``log(p (1 - q))``: the mass of the privacy-loss atom at eps
        self.log_top = lp + l1q

    def _log_probabilities(self, eps: float) -> tuple[float, float, float, float, float]:
        """``(log p, log(1 - p), log q, log(1 - q), p - q)`` at ``eps``."""
        raise NotImplementedError

    # ----------------------------------------------------------------- identity and labels
    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "eps": self.eps}

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        return self._labels == other._labels  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return super().__hash__()

    @property
    def input_labels(self) -> tuple[Any, ...]:
        """The names of the inputs (``0..k-1`` unless :meth:`with_labels` set them)."""
        return self._labels if self._labels is not None else tuple(range(self.k))

    @input_labels.setter
    def input_labels(self, labels: Any) -> None:
        names = tuple(labels)
        if len(names) != self.k or len(set(names)) != self.k:
            raise invalid("labels", names, f"{self.k} distinct labels")
        self._labels = None if names == tuple(range(self.k)) else names
        self._lookup = None

    def with_labels(self, labels: Any) -> "UnaryEncoding":
        """The same oracle with its inputs named ``labels`` (a copy; ``k`` distinct labels)."""
        out = copy.copy(self)
        try:
            out.input_labels = labels
        except TypeError:
            raise invalid("labels", labels, f"{self.k} distinct hashable labels") from None
        return out

    def _index(self, x: Any) -> int:
        """The symbol index of the input label ``x``."""
        if self._labels is None:
            return v.integer(x, "x", minimum=0, maximum=self.k - 1)
        if self._lookup is None:
            self._lookup = {label: i for i, label in enumerate(self._labels)}
        try:
            return self._lookup[x]
        except (KeyError, TypeError):
            raise invalid("x", x, f"one of the {self.k} input labels (such as {self._labels[0]!r})") from None

    # ----------------------------------------------------------------- the contract
    def neighbours(self) -> list[tuple[Any, Any]]:
        """The pair of the first two inputs: every pair of distinct inputs has the same
        privacy-loss law (only their two bits differ in law), so one pair attains it."""
        labels = self._labels
        return [(labels[0], labels[1])] if labels is not None else [(0, 1)]

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.uint8]:
        """``n`` reports (an ``(n, k)`` array of bits) for the input label ``x``: the same
        draws as :meth:`privatize` of ``n`` copies of its index."""
        n = v.integer(n, "n", minimum=0)
        return self.privatize(np.full(n, self._index(x), dtype=np.int64), rng)

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """``log P(report = y | input x)`` for bit vectors ``y`` (the last axis has length
        ``k``; vectorised over the others): ``n1 log q + (k - n1) log(1 - q)`` with bit ``x``'s
        term replaced by ``log p`` or ``log(1 - p)``, ``n1`` the number of 1-bits. ``-inf``
        for a vector with an entry other than 0 and 1; NaN propagates. One vector gives a
        float."""
        i = self._index(x)
        arr = v.real_array(y, "y", f"bit vectors of length {self.k}")
        if arr.ndim == 0 or arr.shape[-1] != self.k:
            raise invalid("y", f"an array of shape {arr.shape}", f"bit vectors of length {self.k} (the last axis)")
        one = arr == 1.0
        ok = (one | (arr == 0.0)).all(axis=-1)
        ones = one.sum(axis=-1)
        own = one[..., i]
        out = ones * self.log_q + (self.k - ones) * self.log_1mq
        out = out + np.where(own, self.log_p - self.log_q, self.log_1mp - self.log_1mq)
        out = np.where(ok, out, -np.inf)
        out = np.where(np.isnan(arr).any(axis=-1), np.nan, out)
        return float(out) if out.ndim == 0 else out

    # ----------------------------------------------------------------- privacy
    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """The smallest eps at which the oracle is (eps, delta)-LDP: ``eps`` itself at
        ``delta = 0``, else the smallest float ``t`` with ``delta(t) <= delta`` (0.0 once
        ``delta >= delta(0)``). ``delta`` may be an array."""
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0 or self.eps == 0.0:
            return self.eps
        top = math.exp(self.log_top)
        guess = self.eps + math.log1p(-delta / top) if delta < top else 0.0
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, self.eps, guess)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact smallest delta at ``eps``: ``p (1 - q) (1 - e^(eps - eps0))`` below the
        oracle's ``eps0``, 0 at and above it (scalar or array)."""
        return _map_eps(eps, self._delta_scalar)

    def _delta_scalar(self, eps: float) -> float:
        if eps >= self.eps:
            return 0.0
        return math.exp(self.log_top) * -math.expm1(eps - self.eps)

    def pld(self, x: Any = None, x_prime: Any = None) -> Any:
        """The exact privacy-loss law of the report on input ``x`` against ``x_prime`` (the
        same for every pair of distinct inputs; by default the pair of :meth:`neighbours`):
        atoms ``eps``, 0 and ``-eps`` with masses ``p (1 - q)``, ``p q + (1 - p)(1 - q)`` and
        ``(1 - p) q``."""
        if (x is None) != (x_prime is None):
            raise invalid("x_prime", x_prime, "both inputs of the pair, or neither")
        if x is not None and self._index(x) == self._index(x_prime):
            raise invalid("x_prime", x_prime, f"an input other than x = {x!r}")
        log_mid = float(np.logaddexp(self.log_p + self.log_q, self.log_1mp + self.log_1mq))
        return DiscretePLD.from_atoms([-self.eps, 0.0, self.eps], [self.log_1mp + self.log_q, log_mid, self.log_top])

    def guarantee(self) -> Any:
        """The exact guarantee (:class:`ldpsim.privacy.PLDGuarantee` of the loss law, both
        orders of the pair)."""
        law = self.pld()
        return PLDGuarantee((law, law.swap()), label=repr(self))

    # ----------------------------------------------------------------- reports
    # reports are bit vectors (one row per entry of x), not the int64 codes of FrequencyOracle.privatize
    def privatize(self, x: ArrayLike, rng: RNGLike = None, *, chunk_size: int | None = None) -> NDArray[np.uint8]:  # type: ignore[override]
        """One report per entry of ``x`` (symbol indices): an array of shape
        ``x.shape + (k,)`` of ``uint8`` bits.

        Vectorised, in chunks of ``chunk_size`` clients (default ``max(1, CHUNK_BITS //
        k)``), so temporary memory beyond the result is a few times ``chunk_size * k``
        bytes; the result itself is ``k`` bytes per client (see the module docstring).
        Each chunk draws its ``chunk_size * k`` bits as Bernoulli(q) (:func:`bernoulli_bits`),
        then redraws bit ``x`` of every report as Bernoulli(p). The result is determined
        by the generator state and ``chunk_size``."""
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        chunk = max(1, CHUNK_BITS // self.k) if chunk_size is None else v.integer(chunk_size, "chunk_size", minimum=1)
        flat = arr.reshape(-1)
        out = np.empty((flat.size, self.k), dtype=np.uint8)
        q, comp_q = self.q, math.exp(self.log_1mq)
        p, comp_p = self.p, math.exp(self.log_1mp)
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            block = out[start:stop]
            block.reshape(-1)[:] = _bits_with(q, comp_q, block.size, gen)
            block[np.arange(stop - start), flat[start:stop]] = _bits_with(p, comp_p, stop - start, gen)
        return out.reshape(arr.shape + (self.k,))

    @property
    def statistic_size(self) -> int:
        """The statistic is the count of 1-bits of each of the ``k`` items."""
        return self.k

    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """The ``k`` column sums of a batch of reports (bit vectors along the last axis):
        ``c_z`` = the number of reports whose bit ``z`` is 1."""
        arr = np.asarray(reports)
        expected = f"bit vectors of length {self.k} (integers 0 or 1 along the last axis)"
        if arr.ndim == 0 or arr.shape[-1] != self.k:
            raise invalid("reports", f"an array of shape {arr.shape}", expected)
        if arr.dtype == bool:
            arr = arr.view(np.uint8)
        if not np.issubdtype(arr.dtype, np.integer):
            raise invalid("reports", f"an array of dtype {arr.dtype}", expected)
        rows = arr.reshape(-1, self.k)
        if rows.shape[0] == 0:
            return np.zeros(self.k, dtype=np.int64)
        if rows.max() > 1 or (np.issubdtype(rows.dtype, np.signedinteger) and rows.min() < 0):
            raise invalid("reports", "an entry other than 0 and 1", expected)
        out = np.zeros(self.k, dtype=np.int64)
        step = (1 << 31) - 1  # column sums of up to this many rows fit in int32
        for start in range(0, rows.shape[0], step):
            out += np.add.reduce(rows[start : start + step], axis=0, dtype=np.int32)
        return out

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """One row per report: its bits."""
        self.statistic(reports)  # the same checks, one line naming what is wrong
        return np.asarray(reports).reshape(-1, self.k).astype(np.int64)

    # ----------------------------------------------------------------- what fake respondents can send
    def crafted_reports(self, targets: ArrayLike, n: int, rng: RNGLike = None) -> NDArray[np.uint8]:
        """Every target bit set, and ``l = max(0, floor(p + (k - 1) q - r))`` other bits,
        uniform among the non-targets, so that a crafted report has about as many 1-bits as
        an honest one has on average (Cao, Jia and Gong 2021)."""
        t = target_indices(targets, self.k)
        n = v.integer(n, "n", minimum=0)
        gen = as_generator(rng)
        out = np.zeros((n, self.k), dtype=np.uint8)
        out[:, t] = 1
        others = np.setdiff1d(np.arange(self.k), t)
        pad = min(others.size, max(0, math.floor(self.p + (self.k - 1) * self.q - t.size)))
        if pad:
            rows = max(1, (1 << 22) // others.size)  # a few MB of keys at a time
            for start in range(0, n, rows):
                stop = min(n, start + rows)
                keys = gen.random((stop - start, others.size))
                picked = np.argpartition(keys, pad - 1, axis=1)[:, :pad]
                out[np.arange(start, stop)[:, None], others[picked]] = 1
        return out

    def random_reports(self, n: int, rng: RNGLike = None) -> NDArray[np.uint8]:
        """Uniform bit vectors."""
        n = v.integer(n, "n", minimum=0)
        return as_generator(rng).integers(0, 2, size=(n, self.k), dtype=np.uint8)

    def random_report_support(self) -> NDArray[np.float64]:
        return np.full(self.k, 0.5)

    def support_size_cgf(self, lam: ArrayLike) -> NDArray[np.float64]:
        """The number of 1-bits is ``Bernoulli(p) + Binomial(k - 1, q)`` for every input:
        ``log(1 + p (e^lam - 1)) + (k - 1) log(1 + q (e^lam - 1))``."""
        e = np.expm1(np.asarray(lam, dtype=np.float64))
        return np.log1p(self.p * e) + (self.k - 1) * np.log1p(self.q * e)

    def itemset_support_bound(self, z: int) -> float:
        """Bits are independent given the input: ``p q^(z-1)`` when the input is in the set,
        ``q^z`` otherwise."""
        z = v.integer(z, "z", minimum=2)
        return max(self.p, self.q) * self.q ** (z - 1)

    def sample_statistic(self, input_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Exact draw of the statistic of ``input_counts[x]`` clients holding ``x``: item
        ``x``'s count is ``Binomial(n_x, p) + Binomial(n - n_x, q)``, independently across
        items (bits are independent given the inputs). O(k) whatever the number of clients."""
        gen = as_generator(rng)
        n = v.counts(input_counts, "input_counts", size=self.k)
        total = int(n.sum())
        own = n - gen.binomial(n, math.exp(self.log_1mp))  # Binomial(n_x, p) from the complement
        other = gen.binomial(total - n, self.q)
        return (own + other).astype(np.int64)

    def sample_statistics(self, input_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """:meth:`sample_statistic` for every row of ``input_counts`` at once (the same law,
        drawn as two binomial arrays)."""
        gen = as_generator(rng)
        rows = np.asarray(input_counts)
        if rows.ndim != 2 or rows.shape[1] != self.k:
            raise invalid("input_counts", f"an array of shape {rows.shape}", f"rows of {self.k} input counts")
        n = v.counts(rows.reshape(-1), "input_counts").reshape(rows.shape)
        total = n.sum(axis=1, keepdims=True)
        own = n - gen.binomial(n, math.exp(self.log_1mp))
        other = gen.binomial(total - n, self.q)
        return (own + other).astype(np.int64)

    def possible_reports(self) -> NDArray[np.uint8]:
        """All ``2^k`` bit vectors (every one has positive probability), for ``k <=``
        :data:`POSSIBLE_REPORTS_MAX_K`."""
        if self.k > POSSIBLE_REPORTS_MAX_K:
            raise invalid("k", self.k, f"k <= {POSSIBLE_REPORTS_MAX_K} to list all 2^k reports")
        codes = np.arange(1 << self.k)
        return ((codes[:, None] >> np.arange(self.k)) & 1).astype(np.uint8)

    def server_operations(self, n: float) -> float:
        """k bit counts per report."""
        return float(n) * float(self.k)

    @property
    def report_bits(self) -> float:
        """``k`` bits per report."""
        return float(self.k)

    # ----------------------------------------------------------------- inversion, closed forms
    def _mean_bits(self, prior: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``mu = q + (p - q) pi`` and ``1 - mu`` (each without cancellation)."""
        pi = np.asarray(prior, dtype=np.float64)
        return self.q + self.gap * pi, math.exp(self.log_1mq) - self.gap * pi

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        """``k x k`` covariance of one report's bits under inputs from ``prior``:
        ``mu_z (1 - mu_z)`` on the diagonal, ``-(p - q)^2 pi_z pi_z'`` off it."""
        check_dense(self.k, self.k, "statistic covariance")
        pi = np.asarray(prior, dtype=np.float64)
        mu, rest = self._mean_bits(pi)
        gp = self.gap * pi
        cov = -np.outer(gp, gp)
        cov[np.diag_indices_from(cov)] = mu * rest
        return cov

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``k x k`` exact covariance of :meth:`invert` of ``n`` reports' frequencies under
        inputs from ``prior``: ``mu_x (1 - mu_x) / (n (p - q)^2)`` on the diagonal,
        ``-pi_x pi_y / n`` off it."""
        check_dense(self.k, self.k, "estimate covariance")
        pi = np.asarray(prior, dtype=np.float64)
        cov = -np.outer(pi, pi)
        cov[np.diag_indices_from(cov)] = self._variance(pi)
        return cov / float(n)

    def _variance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        gap = self._support_gap()
        mu, rest = self._mean_bits(prior)
        with np.errstate(over="ignore"):
            return mu * rest / gap / gap

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``mu_x (1 - mu_x) / (n (p - q)^2)``, ``mu_x = q + (p - q) pi_x`` (O(k))."""
        return self._variance(prior) / float(n)

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        gap = self._support_gap()
        mu, rest = self._mean_bits(prior)
        with np.errstate(over="ignore"):
            return np.sqrt(mu * rest / float(n)) / gap

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``f_x (1 - f_x) / (n (p - q)^2)`` at the observed frequencies of 1-bits ``f``
        (clipped to [0, 1]): :meth:`estimate_variance` with ``mu`` replaced by its unbiased
        estimate ``f``."""
        gap = self._support_gap()
        fx = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
        with np.errstate(over="ignore"):
            return fx * (1.0 - fx) / float(n) / gap / gap

    def plugin_std_error(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        gap = self._support_gap()
        fx = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
        with np.errstate(over="ignore"):
            return np.sqrt(fx * (1.0 - fx) / float(n)) / gap

    def possible_outputs(self) -> NDArray[np.bool_]:
        """Every item's bit is 1 with positive probability (``p >= 1/2``)."""
        return np.ones(self.k, dtype=bool)


class SymmetricUnaryEncoding(UnaryEncoding):
    """Symmetric unary encoding (SUE; basic one-time RAPPOR, Erlingsson, Pihur and
    Korolova 2014; named by Wang et al. 2017): the one-hot vector of the input with every
    bit flipped with probability ``1 / (e^(eps/2) + 1)``, so ``p = e^(eps/2) / (e^(eps/2) +
    1)`` and ``q = 1 - p``. Exactly eps-LDP: ``log(p (1 - q) / (q (1 - p))) = 2 log(p / q) =
    eps``; ``delta(t) = p^2 (1 - e^(t - eps))`` below eps. Estimator
    ``(c_x / n - q) / (p - q)`` with ``p - q = tanh(eps / 4)``; see
    :mod:`ldpsim.mechanisms.oracles.unary` for its exact covariance."""

    name = "sue"

    def _log_probabilities(self, eps: float) -> tuple[float, float, float, float, float]:
        h = 0.5 * eps
        log_p = -math.log1p(math.exp(-h))
        log_q = -h + log_p
        return log_p, log_q, log_q, log_p, math.tanh(0.25 * eps)


class OptimizedUnaryEncoding(UnaryEncoding):
    """Optimised unary encoding (OUE; Wang, Blocki, Li and Jha 2017): the input's bit is 1
    with probability ``p = 1/2``, every other bit with ``q = 1 / (e^eps + 1)``. Exactly
    eps-LDP: ``log(p (1 - q) / (q (1 - p))) = log((1 - q) / q) = eps``; ``delta(t) =
    (1 - q) / 2 (1 - e^(t - eps))`` below eps. Estimator ``(c_x / n - q) / (p - q)`` with
    ``p - q = tanh(eps / 2) / 2``; its variance at small frequencies, ``4 e^eps / (n (e^eps
    - 1)^2)``, is the smallest among unary encodings (Wang et al. 2017, Sec. 4.4)."""

    name = "oue"

    def _log_probabilities(self, eps: float) -> tuple[float, float, float, float, float]:
        half = -math.log(2.0)
        log_1mq = -math.log1p(math.exp(-eps))
        return half, half, -eps + log_1mq, log_1mq, 0.5 * math.tanh(0.5 * eps)
