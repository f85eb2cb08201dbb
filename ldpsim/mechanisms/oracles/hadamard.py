"""Hadamard response (Acharya, Sun and Zhang 2019): a finite frequency oracle with
``K = 2^ceil(log2(k + 1))`` outputs whose every operation costs O(1) per client or
O(K log K) per batch, with no ``k x K`` matrix unless one is asked for.

The mechanism
-------------
Let ``H`` be the ``K x K`` Sylvester-Hadamard matrix, ``H[i, j] = (-1)^popcount(i & j)``.
Input ``x in 0..k-1`` uses row ``x + 1`` (row 0, all ones, is skipped) and its set of
``K/2`` outputs ``C_x = {y : H[x + 1, y] = +1}`` (the ``y`` whose bitwise product with
``x + 1`` has even parity). The report ``y in 0..K-1`` has

    P(y | x) = 2 e^eps / (K (1 + e^eps))   for y in C_x,
    P(y | x) = 2 / (K (1 + e^eps))         otherwise,

so it falls in ``C_x`` with probability ``p_in = e^eps / (1 + e^eps)``, uniformly within
``C_x`` or within its complement. Writing ``tau = tanh(eps/2) = (e^eps - 1)/(e^eps + 1)``,
``P(y | x) = (1 + tau H[x + 1, y]) / K``.

Exact privacy
-------------
For two inputs ``x != x'`` the rows ``x + 1`` and ``x' + 1`` of ``H`` are orthogonal, so
each of the four cells ``C_x ∩ C_x'``, ``C_x \\ C_x'``, ``C_x' \\ C_x`` and the rest has
exactly ``K/4`` outputs. The privacy loss ``log P(y|x)/P(y|x')`` is ``eps`` on
``C_x \\ C_x'`` (mass ``p_in / 2`` under ``x``), ``-eps`` on ``C_x' \\ C_x`` (mass
``(1 - p_in)/2``) and 0 elsewhere (mass 1/2), the same law for every pair. Hence the pure
eps is exactly ``eps`` and, for ``t < eps``,

    delta(t) = (p_in / 2) (1 - e^(t - eps)) = (e^eps - e^t) / (2 (1 + e^eps)),

with ``epsilon(delta) = eps + log(1 - 2 delta / p_in)`` (polished to the smallest float
``t`` with ``delta(t) <= delta``). At ``t = 0``, ``delta = tau / 2``: Hadamard response is
binary randomized response on the bit "is ``y`` in ``C_x``", at half the distinguishing
advantage.

The estimator
-------------
With ``f`` the output frequencies and ``Phat(C_x) = sum_{y in C_x} f_y``,
``E[Phat(C_x)] = 1/2 + (tau / 2) P(x)`` (for ``z != x``, ``P(C_x | z) = 1/2`` by
orthogonality), so the Hadamard estimator of Acharya, Sun and Zhang (2019) is

    est_x = 2 (e^eps + 1)/(e^eps - 1) (Phat(C_x) - 1/2) = (H f)[x + 1] / tau,

the second form (linear in ``f``, equal to the first when ``f`` sums to one) being what
:meth:`HadamardResponse.invert` computes with a fast Walsh-Hadamard transform (O(K log K)).
It is unbiased (``A Q^T = I`` for ``A = H[1:k+1] / tau``) but it is *not* the least-squares
inverse that :class:`~ldpsim.mechanisms.finite.FiniteMechanism` uses by default, so every
inversion method here (:meth:`inversion_matrix`, ``invert``, ``inversion_covariance``,
``inversion_variance``, ``inversion_std_error``, ``inversion_coefficient_range``, the
``estimate_*`` and ``plugin_*`` methods) describes this estimator. Its estimates need not
sum to one.

The output counts of ``n`` reports are Multinomial(n, M), ``M = P^T Q``; since
``H diag(M) H = [(H M)[i xor j]]``, the exact covariance is

    Cov(est_x, est_x') = ((H M)[(x+1) xor (x'+1)] - (H M)[x+1] (H M)[x'+1]) / (n tau^2),

which under an input distribution ``P`` is ``(P~[(x+1) xor (x'+1)] / tau - P_x P_x') / n``
(``P~[j] = P_{j-1}`` for ``1 <= j <= k``, 0 otherwise) and, on the diagonal,
``Var(est_x) = 4 Phat_x (1 - Phat_x) / (n tau^2)`` with ``Phat_x = P(C_x)``; each report
moves ``est_x`` by ``+-1/(n tau)``, a range of ``2 / tau`` per report (Hoeffding).

Sampling
--------
:meth:`~HadamardResponse.privatize` draws a uniform ``y`` and one uniform per client, and
flips the lowest set bit of ``x + 1`` in ``y`` when ``y`` is on the wrong side of ``C_x``
(which toggles the parity of ``(x + 1) & y``, a bijection between ``C_x`` and its
complement). :meth:`~HadamardResponse.sample_counts` is exact at a cost independent of the
number of clients: per input a binomial count lands in ``C_x`` and the rest off it; every
group of clients uniform on an affine hyperplane ``{y : parity((a & y)) = b}`` is then split
bit by bit, top bit first: a fair binomial split when the constraint leaves that bit free,
all clients to one side when it fixes it, groups with the same remaining constraint merged,
so at most ``2K`` groups at each of the ``log2 K`` levels: O(K log K) binomial draws.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import FiniteMechanism, _smallest_eps, check_dense
from ldpsim.privacy.guarantees import PLDGuarantee
from ldpsim.privacy.pld import DiscretePLD


def _fwht(vec: NDArray[np.float64]) -> NDArray[np.float64]:
    """``H vec`` for the Sylvester-Hadamard matrix (length a power of two), O(K log K); on
    the last axis, so each row of a matrix is transformed (the count-mean sketch's rows)."""
    out = np.array(vec, dtype=np.float64)
    lead, size = out.shape[:-1], out.shape[-1]
    h = 1
    while h < size:
        blocks = out.reshape(*lead, -1, 2, h)
        top = blocks[..., 0, :] + blocks[..., 1, :]
        blocks[..., 1, :] = blocks[..., 0, :] - blocks[..., 1, :]
        blocks[..., 0, :] = top
        h *= 2
    return out


def _parity_sums(vec: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(E, O)`` with ``E[j] = sum of vec[y] over y with popcount(j & y) even`` and ``O[j]``
    the sum over the odd ones, O(K log K) with additions only: for a non-negative ``vec``
    both are accurate to a few rounding units, where ``H vec = E - O`` would cancel."""
    even = np.array(vec, dtype=np.float64)
    odd = np.zeros_like(even)
    size = even.size
    h = 1
    while h < size:
        e, o = even.reshape(-1, 2, h), odd.reshape(-1, 2, h)
        e0, e1, o0, o1 = e[:, 0, :].copy(), e[:, 1, :].copy(), o[:, 0, :].copy(), o[:, 1, :].copy()
        e[:, 0, :] = e0 + e1
        o[:, 0, :] = o0 + o1
        e[:, 1, :] = e0 + o1  # where the new bit of j is set, the odd half changes parity
        o[:, 1, :] = o0 + e1
        h *= 2
    return even, odd


def _odd_parity(a: NDArray[np.int64] | np.int64, y: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Whether ``popcount(a & y)`` is odd (``H[a, y] = -1``); on numpy < 2, which lacks
    ``bitwise_count``, the parity by folding the word onto itself (indices are below 2^62)."""
    w = np.bitwise_and(a, y)
    if hasattr(np, "bitwise_count"):
        return (np.bitwise_count(w) & 1).astype(bool)
    for shift in (32, 16, 8, 4, 2, 1):  # pragma: no cover - numpy 1.x (the minimum-versions pass)
        w = w ^ (w >> shift)
    return (w & 1).astype(bool)  # pragma: no cover


class HadamardResponse(FiniteMechanism):
    """Hadamard response on ``k`` inputs at privacy level ``eps`` (Acharya, Sun and Zhang
    2019); see the module docstring for the mechanism, its exact privacy
    (``delta(t) = (e^eps - e^t) / (2 (1 + e^eps))`` below ``eps``) and the Hadamard
    estimator with its exact covariance.

    A finite mechanism with ``m = K = 2^ceil(log2(k + 1))`` outputs; the ``k x K`` matrix is
    built only when :attr:`matrix` or :attr:`log_matrix` is asked for (and refused above
    :data:`~ldpsim.mechanisms.finite.MAX_DENSE_ENTRIES` entries).
    """

    def __init__(self, k: int, eps: float) -> None:
        k = v.alphabet_size(k, "k")
        eps = v.epsilon(eps, "eps")
        big = 1 << int(k).bit_length()  # the smallest power of two >= k + 1
        super().__init__(k, big, name="hadamard_response", params={"k": k, "eps": eps})
        self.eps = eps
        self.K = big
        self.log_bits = big.bit_length() - 1
        tail = math.exp(-eps)  # e^-eps, never overflows
        #: probability that the report falls in C_x
        self.p_in = 1.0 / (1.0 + tail)
        #: probability that it falls outside C_x (computed without cancellation)
        self.p_out = tail / (1.0 + tail)
        #: tau = tanh(eps / 2) = p_in - p_out
        self.tau = -math.expm1(-eps) / (1.0 + tail)
        self.log_p_on = math.log(2.0 / big) - math.log1p(tail)
        self.log_p_off = self.log_p_on - eps
        self.p_on = math.exp(self.log_p_on)
        self.p_off = math.exp(self.log_p_off)

    # ----------------------------------------------------------------- the matrix, closed forms
    @property
    def log_matrix(self) -> NDArray[np.float64]:
        check_dense(self.k, self.m, "Hadamard-response")
        rows = np.arange(1, self.k + 1, dtype=np.int64)[:, None]
        odd = _odd_parity(rows, np.arange(self.m, dtype=np.int64)[None, :])
        return np.where(odd, self.log_p_off, self.log_p_on)

    def _log_row(self, i: int) -> NDArray[np.float64]:
        odd = _odd_parity(np.int64(i + 1), np.arange(self.m, dtype=np.int64))
        return np.where(odd, self.log_p_off, self.log_p_on)

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """``log P(y | x)`` for the input label ``x`` and output codes ``y`` (vectorised, no
        row of length ``K`` built): ``-inf`` at codes outside ``0..K-1`` and at non-integer
        values; NaN propagates."""
        a = np.int64(int(self.encode([x])[0]) + 1)
        arr = v.real_array(y, "y", "output codes (numbers)")
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(arr) & (np.floor(arr) == arr) & (arr >= 0) & (arr < self.m)
        codes = np.where(ok, arr, 0.0).astype(np.int64)
        out = np.where(ok, np.where(_odd_parity(a, codes), self.log_p_off, self.log_p_on), -np.inf)
        out = np.where(np.isnan(arr), np.nan, out)
        return float(out) if np.ndim(y) == 0 else out

    # ----------------------------------------------------------------- exact privacy
    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0:
            return self.eps
        half = self.p_in / 2.0  # the mass of the loss-eps atom
        guess = self.eps + math.log1p(-delta / half) if delta < half else 0.0
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, self.eps, guess)

    def _delta_scalar(self, eps: float) -> float:
        # only the K/4 outputs of C_x \ C_x' count: K/4 (p_on - e^t p_off)
        if eps >= self.eps:
            return 0.0
        return self.p_in / 2.0 * -math.expm1(eps - self.eps)

    def _pair_pld(self) -> DiscretePLD:
        log_half = math.log(0.5)
        loss = [self.eps, 0.0, -self.eps]
        log_p = [log_half + math.log(self.p_in), log_half, log_half - self.eps - math.log1p(math.exp(-self.eps))]
        return DiscretePLD.from_atoms(loss, log_p)

    def pld(self, x: Any, x_prime: Any) -> DiscretePLD:
        """Exact privacy-loss law of input ``x`` against ``x_prime``: atoms ``eps, 0, -eps``
        with masses ``p_in/2, 1/2, (1 - p_in)/2`` for any two distinct inputs."""
        i, j = (int(u) for u in self.encode([x, x_prime]))
        if i == j:
            return DiscretePLD.from_atoms([0.0], [0.0])
        return self._pair_pld()

    def guarantee(self) -> PLDGuarantee:
        """The exact guarantee: every ordered pair of distinct inputs has the same loss law."""
        pld = self._pair_pld()
        return PLDGuarantee((pld, pld.swap()), label=repr(self))

    # ----------------------------------------------------------------- the Hadamard estimator
    def _tau(self) -> float:
        if self.tau <= 0:
            raise invalid("mechanism", self, "eps > 0 (at eps = 0 the reports carry no information)")
        return self.tau

    def _padded(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``P~`` of length ``K``: ``P~[x + 1] = p[x]``, 0 at 0 and above ``k``."""
        out = np.zeros(self.m)
        out[1 : self.k + 1] = p
        return out

    @cached_property
    def inversion_matrix(self) -> NDArray[np.float64]:
        """``A = H[1:k+1, :] / tau`` (``k x K``): the Hadamard estimator ``est = A f``
        (built only when asked; :meth:`invert` does not)."""
        check_dense(self.k, self.m, "Hadamard-response inversion")
        tau = self._tau()
        rows = np.arange(1, self.k + 1, dtype=np.int64)[:, None]
        odd = _odd_parity(rows, np.arange(self.m, dtype=np.int64)[None, :])
        a = np.where(odd, -1.0 / tau, 1.0 / tau)
        a.setflags(write=False)
        return a

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        """``est_x = (H f)[x + 1] / tau``, that is ``2 (e^eps + 1)/(e^eps - 1) (Phat(C_x) - 1/2)``
        when ``f`` sums to one (fast Walsh-Hadamard transform, O(K log K))."""
        tau = self._tau()
        return _fwht(np.asarray(f, dtype=np.float64))[1 : self.k + 1] / tau

    def _variance_from(
        self, inside: NDArray[np.float64], outside: NDArray[np.float64], total: float, n: float
    ) -> NDArray[np.float64]:
        # Var = ((H M)[0] - (H M)[x+1]^2) / (n tau^2) with (H M)[0] = total = E + O and
        # (H M)[x+1] = E - O: total (1 - total) + 4 E O, free of cancellation when total = 1
        tau = self._tau()
        with np.errstate(over="ignore"):  # tau near 1e-300: the variance is past any double, inf
            var = (total * (1.0 - total) + 4.0 * inside * outside) / n / tau / tau  # tau * tau would underflow
        return np.clip(var, 0.0, None)

    def inversion_variance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``Var(est_x) = 4 M(C_x) (1 - M(C_x)) / (n tau^2)`` for output frequencies ``M``
        summing to one (the general form is in the module docstring)."""
        m = np.asarray(marginal, dtype=np.float64)
        even, odd = _parity_sums(m)
        idx = slice(1, self.k + 1)
        with np.errstate(over="ignore"):
            return self._variance_from(even[idx], odd[idx], float(m.sum()), float(n))

    def inversion_std_error(self, marginal: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.sqrt(self.inversion_variance(marginal, n))

    def inversion_covariance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``((H M)[(x+1) xor (x'+1)] - (H M)[x+1] (H M)[x'+1]) / (n tau^2)`` (``k x k``)."""
        check_dense(self.k, self.k, "covariance")
        tau = self._tau()
        m = np.asarray(marginal, dtype=np.float64)
        hm = _fwht(m)
        idx = np.arange(1, self.k + 1, dtype=np.int64)
        with np.errstate(over="ignore"):
            cov = (hm[idx[:, None] ^ idx[None, :]] - np.outer(hm[idx], hm[idx])) / (float(n) * tau * tau)
        np.fill_diagonal(cov, self.inversion_variance(m, n))
        return cov

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        # A[x, y] = +-1/tau
        return np.full(self.k, 2.0 / self._tau())

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The exact variance from ``n`` reports of inputs drawn from ``prior``, in closed
        form: ``M(C_x) = p_x p_in + (S - p_x)/2`` with ``S = sum(prior)``."""
        p = np.asarray(prior, dtype=np.float64)
        total = float(p.sum())
        rest = (total - p) / 2.0
        with np.errstate(over="ignore"):
            return self._variance_from(p * self.p_in + rest, p * self.p_out + rest, total, float(n))

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return np.sqrt(self.estimate_variance(prior, n))

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``(P~[(x+1) xor (x'+1)] / tau - p_x p_x') / n`` off the diagonal,
        :meth:`estimate_variance` on it (``k x k``)."""
        check_dense(self.k, self.k, "covariance")
        tau = self._tau()
        p = np.asarray(prior, dtype=np.float64)
        padded = self._padded(p)
        idx = np.arange(1, self.k + 1, dtype=np.int64)
        cov = (padded[idx[:, None] ^ idx[None, :]] / tau - np.outer(p, p)) / float(n)
        np.fill_diagonal(cov, self.estimate_variance(p, n))
        return cov

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        check_dense(self.m, self.m, "statistic covariance")
        mu = self.forward(np.asarray(prior, dtype=np.float64))
        return np.diag(mu) - np.outer(mu, mu)

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.inversion_variance(np.asarray(f, dtype=np.float64), n)

    @property
    def identifiable(self) -> bool:
        # rows 1..k of H are orthogonal and orthogonal to row 0: full rank when tau > 0
        return self.tau > 0

    # ----------------------------------------------------------------- forward / backward
    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``p^T Q`` (length ``K``) as ``p_on E + p_off O``, ``(E, O)`` the masses of ``p``
        on the inputs whose ``C_x`` holds, or misses, each output: additions only."""
        even, odd = _parity_sums(self._padded(np.asarray(p, dtype=np.float64)))
        return self.p_on * even + self.p_off * odd

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Q g`` (length ``k``): ``p_on g(C_x) + p_off g(not C_x)``."""
        even, odd = _parity_sums(np.asarray(g, dtype=np.float64))
        idx = slice(1, self.k + 1)
        return self.p_on * even[idx] + self.p_off * odd[idx]

    def marginal(self, prior: ArrayLike) -> NDArray[np.float64]:
        return self.forward(v.probability_vector(prior, "prior", size=self.k))

    def possible_outputs(self) -> NDArray[np.bool_]:
        return np.ones(self.m, dtype=bool)

    def server_operations(self, n: float) -> float:
        """One count per report, then a fast Walsh-Hadamard transform of the K counts."""
        return float(n) + float(self.m) * math.log2(self.m)

    @property
    def report_bits(self) -> float:
        """``log2 K`` bits per report."""
        return float(self.log_bits)

    # ----------------------------------------------------------------- sampling
    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int64]:
        y = rng.integers(0, self.m, size=x.size, dtype=np.int64)
        inside = rng.random(x.size) < self.p_in
        a = x.astype(np.int64) + 1
        wrong = _odd_parity(a, y) == inside  # odd parity means y is outside C_x
        y ^= (a & -a) * wrong  # flip the lowest set bit of x + 1 where y is on the wrong side
        return y

    def _sample_counts(self, n: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        rows = np.flatnonzero(n)
        out = np.zeros(self.m, dtype=np.int64)
        if rows.size == 0:
            return out
        inside = rng.binomial(n[rows], self.p_in).astype(np.int64)
        # groups of clients uniform on {y : parity(a & y) = b} of the remaining bits
        a = np.concatenate([rows + 1, rows + 1]).astype(np.int64)
        b = np.concatenate([np.zeros(rows.size, np.int64), np.ones(rows.size, np.int64)])
        count = np.concatenate([inside, n[rows] - inside])
        node = np.zeros(a.size, dtype=np.int64)  # the bits of y fixed so far
        keep = count > 0
        a, b, count, node = a[keep], b[keep], count[keep], node[keep]
        for r in range(self.log_bits, 0, -1):  # r bits remain; split on bit r - 1
            half = 1 << (r - 1)
            a_hi = (a >> (r - 1)) & 1
            a_lo = a & (half - 1)
            forced = (a_lo == 0) & (a_hi == 1)  # the constraint fixes the bit: it is b
            low = np.empty_like(count)
            low[forced] = np.where(b[forced] == 0, count[forced], 0)
            free = ~forced
            low[free] = rng.binomial(count[free], 0.5)
            # children: bit 0 keeps b; bit 1 flips b when the constraint involves the bit
            child_node = np.concatenate([2 * node, 2 * node + 1])
            child_a = np.concatenate([a_lo, a_lo])
            child_b = np.concatenate([b, b ^ a_hi])
            child_count = np.concatenate([low, count - low])
            key = ((child_node << (r - 1)) | child_a) << 1 | child_b
            merged = np.zeros(2 * self.m, dtype=np.int64)
            np.add.at(merged, key, child_count)
            key = np.flatnonzero(merged)
            count = merged[key]
            b = key & 1
            a = (key >> 1) & (half - 1)
            node = key >> r
        # every group is now one output (no bits left, constraint a = 0, b = 0)
        out[node] = count
        return out


def hadamard_response(k: int, eps: float) -> HadamardResponse:
    """Hadamard response on ``k`` inputs (exact eps = ``eps``)."""
    return HadamardResponse(k, eps)
