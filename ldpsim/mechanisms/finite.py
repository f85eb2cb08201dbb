"""Finite local mechanisms: an exact row-stochastic matrix, exact privacy, fast samplers.

A finite mechanism maps an input symbol ``x in 0..k-1`` to an output symbol
``y in 0..m-1`` with probability ``Q[x, y]``. Every mechanism keeps its matrix in log
space (``log_matrix``, ``-inf`` for impossible outputs) so that exact privacy is computed
without overflow or underflow, at eps in the hundreds and at tiny probabilities.

Finite mechanisms implement the whole contract of :class:`ldpsim.mechanisms.base.Mechanism`
and, in addition, invert their own reports for the analyst (:meth:`FiniteMechanism.invert`
and its companions): an estimator calls these methods and never asks which mechanism it
holds, and structured mechanisms (randomized response) answer with closed forms.
"""

from __future__ import annotations

import copy
import math
import struct
from functools import cached_property
from typing import TYPE_CHECKING, Any, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms._alias import alias_tables
from ldpsim.mechanisms.base import FrequencyOracle, _hashable, _same, target_indices

if TYPE_CHECKING:  # the return types; imported on first use at run time
    from ldpsim.privacy.guarantees import PLDGuarantee
    from ldpsim.privacy.pld import DiscretePLD

#: Default number of clients privatised per chunk: bounds the sampler's temporary memory
#: (a few arrays of this length) whatever the number of clients. 2^16 keeps those arrays in
#: cache; measured 1.5x faster than 2^20 for the alias sampler (benchmarks/bench_privatize.py).
DEFAULT_CHUNK = 1 << 16

#: A log-ratio within this many rounding units (of the log-entries involved) of eps counts
#: as equal to eps: a mechanism built to be exactly (eps, delta)-private does not gain a
#: spurious 1e-16 of delta from rounding, which matters when delta is 1e-300.
TIE_ULPS = 64
_DBL_EPS = float(np.finfo(np.float64).eps)

#: Slack of :meth:`FiniteMechanism.is_private` for floating-point rounding.
PRIVACY_RTOL = 1e-9

#: Largest matrix (in entries) that a structured mechanism materialises on request.
MAX_DENSE_ENTRIES = 1 << 25

#: :meth:`FiniteMechanism.neighbours` lists every unordered pair of inputs up to this many
#: inputs, and the ``k - 1`` pairs ``(label_0, label_j)`` above it.
ALL_PAIRS_MAX_K = 6


def _labels(labels: Sequence[Any] | None, size: int, name: str) -> tuple[Any, ...]:
    if labels is None:
        return tuple(range(size))
    try:
        out = tuple(labels)
        distinct = len(set(out)) == len(out)
    except TypeError:
        raise invalid(name, labels, f"{size} distinct hashable labels") from None
    if len(out) != size or not distinct:
        raise invalid(name, labels, f"{size} distinct hashable labels")
    return out


class FiniteMechanism(FrequencyOracle):
    """A local mechanism with ``k`` inputs and ``m`` outputs, given by its exact matrix.

    Subclasses that have structure (randomized response) override the methods below with
    closed forms and never materialise the matrix unless asked; the generic versions here
    work from :attr:`log_matrix` and are the reference the closed forms are tested against.

    Inputs to :meth:`privatize` are symbol indices ``0..k-1``; :meth:`encode` maps input
    labels to indices. :meth:`sample`, :meth:`log_density` and :meth:`neighbours` take input
    labels; outputs are always the codes ``0..m-1``.

    Two finite mechanisms are equal when they have the same class, name, :attr:`params` and
    labels (a :class:`MatrixMechanism` also needs the same log matrix).

    Every finite mechanism is a frequency oracle
    (:class:`~ldpsim.mechanisms.base.FrequencyOracle`): the server's statistic is the count
    of each output symbol, its support matrix is the mechanism's matrix, and the exact
    aggregate law is :meth:`sample_counts`.
    """

    def __init__(
        self,
        k: int,
        m: int,
        *,
        name: str,
        params: dict[str, Any] | None = None,
        input_labels: Sequence[Any] | None = None,
        output_labels: Sequence[Any] | None = None,
    ) -> None:
        self.k = int(k)
        self.m = int(m)
        self.output_size = self.m
        self.name = name  # type: ignore[misc]  # per instance here (the family's name is a class constant elsewhere)
        self._params: dict[str, Any] = dict(params or {})
        self.input_labels = _labels(input_labels, self.k, "input_labels")
        self.output_labels = _labels(output_labels, self.m, "output_labels")

    # ----------------------------------------------------------------- identity
    @property
    def params(self) -> dict[str, Any]:
        """The parameters the mechanism was built with (a copy)."""
        return dict(self._params)

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={val!r}" for key, val in self._params.items())
        return f"{self.name}({args})"

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        assert isinstance(other, FiniteMechanism)
        return (
            self.name == other.name
            and self.shape == other.shape
            and _same(self._params, other._params)
            and self.input_labels == other.input_labels
            and self.output_labels == other.output_labels
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, self.shape, _hashable(self._params)))

    def with_labels(self, labels: Sequence[Any]) -> "FiniteMechanism":
        """The same mechanism with its inputs named ``labels`` (a copy); outputs that were
        named like the inputs (randomized response, the truncated geometric mechanism: the
        report is an input symbol) are renamed with them."""
        out = copy.copy(self)
        out.input_labels = _labels(labels, self.k, "labels")
        if self.m == self.k and self.output_labels == self.input_labels:
            out.output_labels = out.input_labels
        return out

    # ----------------------------------------------------------------- the matrix
    @property
    def log_matrix(self) -> NDArray[np.float64]:
        """``log Q`` (``k x m``), ``-inf`` where ``Q`` is zero."""
        raise NotImplementedError

    @cached_property
    def matrix(self) -> NDArray[np.float64]:
        """The exact conditional matrix ``Q[x, y] = P(Y = y | X = x)`` (``k x m``)."""
        q = np.exp(self.log_matrix)
        q.setflags(write=False)
        return q

    @property
    def shape(self) -> tuple[int, int]:
        return (self.k, self.m)

    def _log_row(self, i: int) -> NDArray[np.float64]:
        """``log Q[i]`` (length ``m``) for the input index ``i``."""
        return self.log_matrix[i]

    # ----------------------------------------------------------------- the contract
    def neighbours(self) -> list[tuple[Any, Any]]:
        """Pairs of input labels to audit: every unordered pair when ``k <=``
        :data:`ALL_PAIRS_MAX_K`, else ``(label_0, label_j)`` for ``j = 1..k-1``."""
        labels = self.input_labels
        if len(labels) <= ALL_PAIRS_MAX_K:
            return [(labels[i], labels[j]) for i in range(len(labels)) for j in range(i + 1, len(labels))]
        return [(labels[0], labels[j]) for j in range(1, len(labels))]

    def sample(self, x: Any, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """``n`` independent output codes for the one input label ``x``: the same draws as
        :meth:`privatize` of ``n`` copies of ``x``'s index."""
        n = v.integer(n, "n", minimum=0)
        idx = int(self.encode([x])[0])
        return self.privatize(np.full(n, idx, dtype=np.int64), rng)

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """``log Q[x, y]`` for the input label ``x`` and output codes ``y`` (vectorised over
        ``y``): ``-inf`` at probability zero, at codes outside ``0..m-1`` and at non-integer
        values; NaN propagates. A scalar ``y`` gives a float."""
        row = self._log_row(int(self.encode([x])[0]))
        arr = v.real_array(y, "y", "output codes (numbers)")
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(arr) & (np.floor(arr) == arr) & (arr >= 0) & (arr < row.size)
        out = np.where(ok, row[np.where(ok, arr, 0.0).astype(np.int64)], -np.inf)
        out = np.where(np.isnan(arr), np.nan, out)
        return float(out) if np.ndim(y) == 0 else out

    # ----------------------------------------------------------------- privacy
    # wider than Mechanism.epsilon: also elementwise over an array of deltas
    def epsilon(self, delta: ArrayLike = 0.0) -> float | NDArray[np.float64]:  # type: ignore[override]
        """The smallest eps at which the mechanism is (eps, delta)-LDP (``inf`` if none).

        ``delta = 0``: the exact pure eps ``max_y log(max_x Q[x,y] / min_x Q[x,y])``
        (docs/theory.md sec. 1); ``inf`` when a column mixes zero and non-zero entries,
        all-zero columns are ignored.

        ``delta > 0``: the smallest float ``t`` with ``delta(t) <= delta``, found by bisection
        on the floating-point numbers themselves (at most 64 evaluations of :meth:`delta`),
        so ``delta(epsilon(d)) <= d`` and ``epsilon(delta(e)) <= e`` hold exactly. It is 0.0
        when ``delta >= delta(0)`` and ``inf`` when ``delta`` is below ``delta(inf)``, the
        largest mass one input puts where another puts none. ``delta`` may be an array.
        """
        return v.over_deltas(delta, self._epsilon_scalar)

    def _epsilon_scalar(self, delta: float) -> float:
        if delta == 0.0:
            return _epsilon_of_log_matrix(self.log_matrix)
        lm = self.log_matrix
        present = np.isfinite(lm)
        hi_col = np.where(present, lm, -np.inf).max(axis=0)
        lo_col = np.where(present, lm, np.inf).min(axis=0)
        used = present.any(axis=0)
        # above the largest finite log-ratio only the outputs some input never produces count,
        # so delta(eps) is constant there
        top = float(np.max(hi_col[used] - lo_col[used])) if used.any() else 0.0
        return _smallest_eps(lambda e: self._delta_scalar(e) <= delta, top)

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact smallest delta at ``eps``: the hockey-stick divergence
        ``max_{x != x'} sum_y (Q[x,y] - e^eps Q[x',y])_+`` (docs/theory.md sec. 1).

        ``eps`` may be a scalar (returns a float) or an array (returns an array); ``inf``
        gives the largest mass that one input puts where another puts none.
        """
        return _map_eps(eps, self._delta_scalar)

    def _delta_scalar(self, eps: float) -> float:
        return _hockey_stick_log(self.log_matrix, eps)

    def is_private(self, eps: float, delta: float = 0.0) -> bool:
        """Whether the mechanism is (eps, delta)-LDP.

        Exact up to a relative slack of ``PRIVACY_RTOL`` (1e-9) on eps and on delta for
        rounding in the matrix entries: randomized response with keep probability 3/4
        passes ``log 3`` and fails ``log 2.999``. Monotone: a mechanism that passes at some
        delta passes at every larger delta.
        """
        eps = v.epsilon(eps, "eps", allow_inf=True)
        delta = v.delta(delta, "delta")
        if math.isfinite(eps) and self.epsilon(0.0) <= eps * (1.0 + PRIVACY_RTOL) + PRIVACY_RTOL * 1e-3:
            return True
        return self._delta_scalar(eps) <= delta * (1.0 + PRIVACY_RTOL)

    def pld(self, x: Any, x_prime: Any) -> "DiscretePLD":
        """Exact privacy-loss law of the output on input ``x`` against input ``x_prime``
        (labels as in :meth:`encode`), built from the log matrix."""
        from ldpsim.privacy.pld import DiscretePLD  # deferred: privacy loads scipy (tests/test_import_cost.py)

        i, j = (int(v) for v in self.encode([x, x_prime]))
        lp, lr = self.log_matrix[i], self.log_matrix[j]
        both = np.isfinite(lp) & np.isfinite(lr)
        p_inf = float(np.exp(lp[np.isfinite(lp) & ~np.isfinite(lr)]).sum())
        r_inf = float(np.exp(lr[np.isfinite(lr) & ~np.isfinite(lp)]).sum())
        return DiscretePLD.from_atoms(lp[both] - lr[both], lp[both], min(p_inf, 1.0), min(r_inf, 1.0))

    def tradeoff(self, alpha: ArrayLike, x: Any = None, x_prime: Any = None) -> float | NDArray[np.float64]:
        """Exact trade-off function: ``T[Q_x, Q_x'](alpha)`` for a given pair of inputs, or
        (no pair given) the mechanism's symmetric trade-off, the lower convex hull over all
        ordered pairs, whose conjugate is :meth:`delta`."""
        if (x is None) != (x_prime is None):
            raise invalid("x_prime", x_prime, "both inputs of the pair, or neither")
        if x is not None:
            return self.pld(x, x_prime).tradeoff(alpha)
        return self.guarantee().tradeoff(alpha)

    def guarantee(self) -> "PLDGuarantee":
        """The mechanism's exact privacy guarantee (all pairs of inputs) as a
        :class:`ldpsim.privacy.Guarantee`."""
        from ldpsim.privacy.guarantees import PLDGuarantee  # deferred: privacy loads scipy (tests/test_import_cost.py)

        check_dense(self.k * self.k, self.m, "pairs of inputs x outputs for the trade-off function")
        labels = self.input_labels
        plds = [self.pld(a, b) for a in labels for b in labels if a != b]
        return PLDGuarantee(tuple(plds), label=repr(self))

    # ----------------------------------------------------------------- utility helpers
    def marginal(self, prior: ArrayLike) -> NDArray[np.float64]:
        """The induced output distribution ``P^T Q`` (length ``m``)."""
        p = v.probability_vector(prior, "prior", size=self.k)
        return p @ self.matrix

    def encode(self, values: ArrayLike) -> NDArray[np.int64]:
        """Map input labels to symbol indices ``0..k-1`` (same shape as ``values``)."""
        arr = np.asarray(values)
        lookup = {label: i for i, label in enumerate(self.input_labels)}
        uniq, inv = np.unique(arr.reshape(-1), return_inverse=True)
        codes = np.empty(len(uniq), dtype=np.int64)
        for i, u in enumerate(uniq.tolist()):
            if u not in lookup:
                raise invalid("values", u, f"one of the input labels {self.input_labels!r}")
            codes[i] = lookup[u]
        return codes[inv].reshape(arr.shape)

    # ----------------------------------------------------------------- inversion (for the analyst)
    # The unbiased linear estimator of the input distribution from output frequencies ``f``
    # is ``A f`` with ``A`` the k x m least-squares inverse (``A Q^T = I``); its covariance
    # from n reports with output law ``M`` is ``A (diag(M) - M M^T) A^T / n``
    # (docs/theory.md sec. 3). Subclasses with structure override these with closed forms.
    @cached_property
    def inversion_matrix(self) -> NDArray[np.float64]:
        """The ``k x m`` matrix ``A`` with ``A Q^T = I`` (least-squares inverse), computed
        once. Raises :class:`LdpSimError` when ``Q`` does not have full row rank ``k``."""
        q = self.matrix
        if np.linalg.matrix_rank(q) < self.k:
            raise invalid("mechanism", self, f"a matrix of full row rank {self.k} to invert")
        a = cast(NDArray[np.float64], np.linalg.pinv(q.T))
        a.setflags(write=False)
        return a

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        """The unbiased estimate ``A f`` of the input distribution from the output
        frequencies ``f`` (length ``m``, not validated); it sums to one but may leave the
        simplex."""
        return self.inversion_matrix @ f

    def inversion_covariance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``A (diag(M) - M M^T) A^T / n`` (``k x k``, exactly symmetric) for an output
        distribution ``M`` (length ``m``) and ``n`` reports."""
        a = self.inversion_matrix
        am = a @ marginal
        cov = (a * marginal[None, :]) @ a.T - np.outer(am, am)
        cov = (cov + cov.T) / 2.0  # exactly symmetric
        return cov / n

    def inversion_variance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The diagonal of :meth:`inversion_covariance` (clipped at 0) without building the
        ``k x k`` matrix."""
        a = self.inversion_matrix
        var = ((a * a) @ marginal - (a @ marginal) ** 2) / n
        return np.clip(var, 0.0, None)

    def inversion_std_error(self, marginal: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """``sqrt(diag(A Cov(f) A^T))`` with ``Cov(f) = (diag(M) - M M^T) / n``: the standard
        errors of :func:`ldpsim.analyst.frequency_estimate` (the same quantity as the square
        root of :meth:`inversion_variance`, in the order of operations that function has
        always used)."""
        a = self.inversion_matrix
        cov = (np.diag(marginal) - np.outer(marginal, marginal)) / n
        return np.sqrt(np.clip(np.einsum("ij,jl,il->i", a, cov, a), 0.0, None))

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        """``max_y A[x, y] - min_y A[x, y]`` per input ``x``: the range of one report's
        contribution to the estimate (Hoeffding intervals)."""
        a = self.inversion_matrix
        return a.max(axis=1) - a.min(axis=1)

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``p^T Q`` (length ``m``) for any vector ``p`` over inputs (no validation; see
        :meth:`marginal` for a validated prior)."""
        return p @ self.matrix

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Q g`` (length ``k``) for a vector ``g`` over outputs."""
        return self.matrix @ g

    def possible_outputs(self) -> NDArray[np.bool_]:
        """Mask of the output codes that some input produces with positive probability."""
        return cast(NDArray[np.bool_], (self.matrix > 0).any(axis=0))  # axis=0 of a matrix: an array

    # ----------------------------------------------------------------- the frequency-oracle view
    @property
    def statistic_size(self) -> int:
        """The statistic is the count of each of the ``m`` output symbols."""
        return self.m

    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """Counts of each output symbol among ``reports`` (length ``m``)."""
        codes = v.symbol_indices(reports, self.m, "reports")
        return np.bincount(codes.reshape(-1), minlength=self.m).astype(np.int64)

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """One row per report: the indicator of its output symbol."""
        codes = v.symbol_indices(reports, self.m, "reports").reshape(-1)
        out = np.zeros((codes.size, self.m), dtype=np.int64)
        out[np.arange(codes.size), codes] = 1
        return out

    # ----------------------------------------------------------------- what fake respondents can send
    def target_gains(self, targets: ArrayLike) -> NDArray[np.float64]:
        """Per output symbol ``y`` (length ``m``): ``sum_{t in targets} A[t, y]``, what one
        report of ``y`` adds to the estimated total share of the targets, times the number
        of reports (``A``: the inversion, :meth:`invert` applied to the one-hot outputs)."""
        t = target_indices(targets, self.k)
        out = np.empty(self.m)
        for y in range(self.m):  # invert takes one frequency vector (closed forms may transform it)
            e = np.zeros(self.m)
            e[y] = 1.0
            out[y] = float(np.asarray(self.invert(e))[t].sum())
        return out

    def crafted_reports(self, targets: ArrayLike, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """``n`` copies of the output that adds most to the targets' estimated share (the
        first such output; for randomized response, the smallest target)."""
        n = v.integer(n, "n", minimum=0)
        gains = np.where(self.possible_outputs(), self.target_gains(targets), -np.inf)
        return np.full(n, int(np.argmax(gains)), dtype=np.int64)

    def random_reports(self, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        """Uniform over the output symbols some input can produce."""
        n = v.integer(n, "n", minimum=0)
        codes = np.flatnonzero(self.possible_outputs())
        return codes[as_generator(rng).integers(0, codes.size, size=n)].astype(np.int64)

    def random_report_support(self) -> NDArray[np.float64]:
        mask = self.possible_outputs()
        return mask / float(mask.sum())

    def support_size_cgf(self, lam: ArrayLike) -> NDArray[np.float64]:
        """Every report names exactly one output: ``lam``."""
        return np.asarray(lam, dtype=np.float64) * 1.0

    def itemset_support_bound(self, z: int) -> float:
        """A report names one output, never two."""
        return 0.0

    def sample_statistic(self, input_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """:meth:`sample_counts`: output counts are exactly multinomial per input."""
        return self.sample_counts(input_counts, rng)

    @property
    def support_matrix(self) -> NDArray[np.float64]:
        return self.matrix

    @property
    def _pinv(self) -> NDArray[np.float64]:
        return self.inversion_matrix

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.inversion_covariance(self.forward(np.asarray(prior, dtype=np.float64)), n)

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.inversion_variance(self.forward(np.asarray(prior, dtype=np.float64)), n)

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The multinomial plug-in: :meth:`inversion_variance` at the observed frequencies."""
        return self.inversion_variance(np.asarray(f, dtype=np.float64), n)

    def plugin_covariance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The multinomial plug-in: :meth:`inversion_covariance` at the observed frequencies."""
        return self.inversion_covariance(np.asarray(f, dtype=np.float64), n)

    def plugin_std_error(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.inversion_std_error(np.asarray(f, dtype=np.float64), n)  # type: ignore[arg-type]

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.inversion_std_error(self.forward(np.asarray(prior, dtype=np.float64)), n)  # type: ignore[arg-type]

    # ----------------------------------------------------------------- sampling
    def privatize(self, x: ArrayLike, rng: RNGLike = None, *, chunk_size: int = DEFAULT_CHUNK) -> NDArray[np.int64]:
        """Privatise every input: one output symbol per entry of ``x`` (same shape).

        Vectorised, in chunks of ``chunk_size`` clients, so temporary memory is bounded
        whatever ``x.size``. The result is determined by the generator state and
        ``chunk_size``.
        """
        gen = as_generator(rng)
        arr = v.symbol_indices(x, self.k, "x")
        chunk = v.integer(chunk_size, "chunk_size", minimum=1)
        flat = arr.reshape(-1)
        out = np.empty(flat.size, dtype=np.int64)
        for start in range(0, flat.size, chunk):
            stop = min(start + chunk, flat.size)
            out[start:stop] = self._privatize_chunk(flat[start:stop], gen)
        return out.reshape(arr.shape)

    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int64]:
        # Alias method: column j uniform, kept with probability accept[x, j], else alias[x, j].
        # Written as y = j + reject * (alias - j) on flat tables: fewer passes than np.where.
        if self.m == 1:
            return np.zeros(x.size, dtype=np.int64)
        accept, shift = self._alias
        y = rng.integers(0, self.m, size=x.size)
        cell = x.astype(np.int64) * self.m
        cell += y
        reject = rng.random(x.size) >= accept.take(cell)
        step = shift.take(cell)
        step *= reject
        y += step
        return y

    @cached_property
    def _alias(self) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Flat alias tables: acceptance probabilities and ``alias - j`` per cell ``x*m + j``."""
        accept, alias = alias_tables(self.matrix)
        shift = alias - np.arange(self.m, dtype=np.int64)[None, :]
        return accept.ravel(), shift.ravel()

    def sample_counts(self, input_counts: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Exact sample of the output counts when ``input_counts[x]`` clients hold input ``x``.

        The law is the sum over inputs of ``Multinomial(input_counts[x], Q[x])``, the same
        as aggregating :meth:`privatize`, at a cost independent of the number of clients.
        """
        gen = as_generator(rng)
        n = v.counts(input_counts, "input_counts", size=self.k)
        return self._sample_counts(n, gen)

    def _sample_counts(self, n: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        rows = np.flatnonzero(n)
        if rows.size == 0:
            return np.zeros(self.m, dtype=np.int64)
        q = self.matrix[rows]
        q = q / q.sum(axis=1, keepdims=True)
        return rng.multinomial(n[rows], q).sum(axis=0).astype(np.int64)


class MatrixMechanism(FiniteMechanism):
    """A finite mechanism stored as its full (log) matrix."""

    def __init__(self, log_matrix: NDArray[np.float64], **kwargs: Any) -> None:
        lm = np.array(log_matrix, dtype=np.float64)
        lm.setflags(write=False)
        super().__init__(lm.shape[0], lm.shape[1], **kwargs)
        self._log_matrix = lm

    @property
    def log_matrix(self) -> NDArray[np.float64]:
        return self._log_matrix

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        assert isinstance(other, MatrixMechanism)
        return bool(np.array_equal(self._log_matrix, other._log_matrix))

    def __hash__(self) -> int:
        return super().__hash__()


def from_matrix(
    Q: ArrayLike,
    *,
    input_labels: Sequence[Any] | None = None,
    output_labels: Sequence[Any] | None = None,
    name: str = "from_matrix",
) -> MatrixMechanism:
    """A mechanism from any user matrix: ``k >= 2`` rows, entries >= 0, rows summing to one
    within 1e-9 (they are then renormalised to sum to one in floating point)."""
    q = v.stochastic_matrix(Q, "Q")
    q = q / q.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        lm = np.log(q)
    return MatrixMechanism(
        lm, name=name, params={"shape": q.shape}, input_labels=input_labels, output_labels=output_labels
    )


def product_mechanism(first: FiniteMechanism, second: FiniteMechanism) -> MatrixMechanism:
    """One respondent answering two questions, each through its own finite mechanism with
    its own randomness: the mechanism on pairs of answers.

    Inputs are the pairs ``(x, x')`` of the two mechanisms' input labels in row-major order
    (index ``i k' + i'``), outputs the pairs of output codes (``j m' + j'``), and the matrix
    is the Kronecker product ``Q (x) Q'``, built in log space (``log Q[i, j] + log Q'[i',
    j']``). Its exact pure eps is the sum of the two (docs/theory.md sec. 1: the worst
    column ratio of a Kronecker product is the product of the worst ratios), so a
    respondent who answers both spends ``eps + eps'``; the analyst's cross-tabulation
    (:func:`ldpsim.analyst.crosstab_estimate`) inverts it."""
    if not (isinstance(first, FiniteMechanism) and isinstance(second, FiniteMechanism)):
        raise invalid("mechanisms", f"{first!r} and {second!r}", "two finite mechanisms (with matrices)")
    check_dense(first.k * second.k, first.m * second.m, "product matrix")
    lm = (first.log_matrix[:, None, :, None] + second.log_matrix[None, :, None, :]).reshape(
        first.k * second.k, first.m * second.m
    )
    inputs = [(a, b) for a in first.input_labels for b in second.input_labels]
    outputs = [(a, b) for a in first.output_labels for b in second.output_labels]
    return MatrixMechanism(
        lm,
        name="product",
        params={"first": repr(first), "second": repr(second)},
        input_labels=inputs,
        output_labels=outputs,
    )


# --------------------------------------------------------------------- exact privacy
def _epsilon_of_log_matrix(lm: NDArray[np.float64]) -> float:
    present = np.isfinite(lm)
    used = present.any(axis=0)
    if np.any(used & ~present.all(axis=0)):
        return math.inf
    cols = lm[:, used]
    return float(np.max(cols.max(axis=0) - cols.min(axis=0)))


def _hockey_stick_log(lm: NDArray[np.float64], eps: float) -> float:
    """``max_{x, x'} sum_y Q[x,y] (1 - e^eps Q[x',y]/Q[x,y])_+`` from ``log Q``, in log space.

    A cell counts when ``log Q[x,y] - log Q[x',y] > eps`` by more than ``TIE_ULPS`` rounding
    units of the log-entries involved; an output that ``x'`` never produces (``-inf``) gives
    a gap of ``+inf`` and so contributes all of ``Q[x,y]``. Only the cells that count are
    evaluated, which keeps this O(k^2 m) loop to a few passes over ``k x m`` arrays.
    """
    k = lm.shape[0]
    q = np.exp(lm)
    slack = TIE_ULPS * _DBL_EPS * np.where(np.isfinite(lm), np.abs(lm), 0.0)
    best = 0.0
    for x in range(k):
        with np.errstate(invalid="ignore"):
            gap = lm[x][None, :] - lm  # +inf where only x can produce y; nan/-inf where x cannot
        if math.isinf(eps):
            rows, cols = np.nonzero(gap == math.inf)
            vals = q[x][cols]
        else:
            rows, cols = np.nonzero(gap > (eps + slack[x])[None, :] + slack)
            vals = -np.expm1(eps - gap[rows, cols]) * q[x][cols]
        if vals.size:
            best = max(best, float(np.bincount(rows, weights=vals, minlength=k).max()))
    return min(best, 1.0)


def _float_bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _bits_float(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", b))[0])


def _smallest_float_ok(ok, lo: float, hi: float) -> float:
    """Smallest float ``t`` in ``(lo, hi]`` with ``ok(t)``, for ``0 <= lo < hi`` finite,
    ``ok`` monotone, ``ok(lo)`` False and ``ok(hi)`` True. Non-negative doubles are ordered
    like their bit patterns, so bisecting the patterns ends in at most 64 steps at two
    neighbouring floats, whatever the scale of the root."""
    a, b = _float_bits(lo), _float_bits(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if ok(_bits_float(mid)):
            b = mid
        else:
            a = mid
    return _bits_float(b)


def _smallest_eps(ok, top: float, guess: float | None = None) -> float:
    """Smallest float eps >= 0 with ``ok(eps)`` for a monotone ``ok`` that is constant on
    ``[top, inf)``: 0.0 if ``ok(0)``, ``inf`` if not ``ok(top)``. A ``guess`` (a closed form
    accurate to a few rounding steps) is checked and polished to the exact float by stepping
    to its neighbours; bisection decides when it is further off."""
    if ok(0.0):
        return 0.0
    if not ok(top):
        return math.inf
    lo, hi = 0.0, top  # ok(lo) is False, ok(hi) is True
    if guess is not None and lo < guess < hi:
        t = guess
        for _ in range(8):
            if ok(t):
                hi, t = t, math.nextafter(t, 0.0)
            else:
                lo, t = t, math.nextafter(t, math.inf)
            if not lo < t < hi:
                break
    return _smallest_float_ok(ok, lo, hi)


def _map_eps(eps: ArrayLike, fn) -> float | NDArray[np.float64]:
    """Apply ``fn`` to a validated scalar eps, or elementwise to an array of them."""
    if np.ndim(eps) == 0:
        return fn(v.epsilon(eps, "eps", allow_inf=True))
    arr = np.asarray(eps)
    flat = [v.epsilon(e, f"eps[{i}]", allow_inf=True) for i, e in enumerate(arr.reshape(-1).tolist())]
    return np.array([fn(e) for e in flat], dtype=np.float64).reshape(arr.shape)


def check_dense(k: int, m: int, what: str) -> None:
    """Refuse to materialise a matrix larger than ``MAX_DENSE_ENTRIES``."""
    if k * m > MAX_DENSE_ENTRIES:
        raise LdpSimError(
            f"k: got {k}, expected k * m <= {MAX_DENSE_ENTRIES} to materialise the {what} matrix "
            f"({k} x {m}); use the mechanism's closed-form methods (epsilon, delta, marginal, "
            "privatize, sample_counts) instead"
        )
