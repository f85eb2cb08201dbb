"""Deliberately broken mechanisms, shipped as targets for privacy audits (docs/theory.md
sec. 11; the sparse-vector variants are those of Lyu, Su and Li 2017).

Each class claims ``claimed_eps`` but really satisfies only ``true_eps`` (``inf``: not
private at all), derived in its docstring. Every one implements the mechanism contract
(:class:`ldpsim.mechanisms.base.Mechanism`), so the auditor and the catalog (the
``broken.*`` entries of :mod:`ldpsim.mechanisms.catalog`) treat them like any mechanism:

* ``params`` -- the constructor parameters, ``eps`` being the *claimed* eps;
* ``neighbours()`` -- the candidate neighbouring input pairs (also ``inputs``);
* ``sample(x, n, rng)`` -- ``n`` i.i.d. outputs for input ``x`` as a 1-D array, vectorised:
  ``int64`` codes for finite outputs (``output_size`` codes), ``float64`` for real outputs;
* ``log_density(x, y)`` where a closed form exists (``has_density`` is False otherwise);
* ``epsilon(delta=0.0)`` -- the documented ``true_eps`` at ``delta = 0``; at ``delta > 0``
  exact from the matrix for finite outputs (over the rows of ``matrix()``) and from the
  closed form of a Laplace pair for the two wrong-scale Laplace mechanisms;
* ``delta(eps)`` -- exact where ``exact_delta`` is True (the finite ones, from their matrix;
  the Laplace pairs, in closed form); the others know their delta only at and above their
  pure eps (0 there) and raise :class:`~ldpsim.mechanisms.base.NotAvailable` below it;
* finite outputs: ``matrix()`` -- the exact output law, one row per distinct input appearing
  in ``inputs`` (in the order of :attr:`rows`), one column per output code;
* real outputs: ``cdf(x, t)`` -- the exact CDF of the output under input ``x``.

They are *not* exported from :mod:`ldpsim.mechanisms` on purpose, so that nobody picks one
up by accident: build them through the catalog (``catalog.build("broken.doubled_rr")``) or
from this module.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import integrate, special

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import Mechanism, NotAvailable
from ldpsim.mechanisms.finite import check_dense, from_matrix

__all__ = [
    "DoubledRR",
    "UnaryNoReset",
    "LaplaceWrongScale",
    "HistogramWrongScale",
    "NoisyMaxValue",
    "SVTNoQueryNoise",
    "SVTNoCutoff",
    "SVTReturnsValue",
]


def _n(n: object) -> int:
    return v.integer(n, "n", minimum=0)


def _count(value: object, name: str) -> int:
    """A number of bins or queries: 1..MAX_ALPHABET (the inputs and each output are tuples and
    arrays of that length: 2^31 was a MemoryError, 2^63 an OverflowError)."""
    out = v.integer(value, name, minimum=1)
    if out > v.MAX_ALPHABET:
        raise invalid(
            name,
            value,
            f"an integer in 1..{v.MAX_ALPHABET:,} (2^22: the datasets and outputs hold this many entries in memory)",
        )
    return out


def _eps(eps: object) -> float:
    e = v.epsilon(eps, "eps")
    if e <= 0:
        raise invalid("eps", eps, "a finite number > 0")
    return e


def _lap_cdf(t: ArrayLike, b: float) -> NDArray[np.float64]:
    """CDF of Lap(b): ``e^{t/b}/2`` below 0, ``1 - e^{-t/b}/2`` above (scipy's form, with
    t/b = -inf giving the limits 0 and 1 where the scale 2/eps is 2e-308, not an overflow)."""
    z = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        e = 0.5 * np.exp(-np.abs(z) / b)
    return np.where(z < 0, e, 1.0 - e)


def _lap_pdf(t: ArrayLike, b: float) -> NDArray[np.float64]:
    """Density of Lap(b), ``e^{-|t|/b} / (2b)`` (0 far out, as above)."""
    z = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.exp(-np.abs(z) / b) / (2.0 * b)


def _lap_logpdf(t: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """log density of Lap(b) at ``t`` (exact in log space)."""
    return -np.abs(t) / b - math.log(2.0 * b)


def _lap_logcdf(t: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """log CDF of Lap(b): ``t/b - log 2`` for ``t < 0``, ``log1p(-e^{-t/b}/2)`` for ``t >= 0``
    (both branches stable far in their tails)."""
    left = np.minimum(t, 0.0) / b - math.log(2.0)
    right = np.log1p(-0.5 * np.exp(-np.maximum(t, 0.0) / b))
    return np.where(t < 0, left, right)


def _points(t: ArrayLike) -> NDArray[np.float64]:
    return v.real_array(t, "y", "real numbers")


def _codes_log(logrow: NDArray[np.float64], y: ArrayLike) -> NDArray[np.float64] | float:
    """``logrow[y]`` (a row of log-probabilities) for integer codes ``y`` (vectorised); ``-inf``
    at codes outside ``0..len(logrow)-1`` and at non-integers. A scalar ``y`` gives a float."""
    arr = _points(y)
    ok = np.isfinite(arr) & (np.floor(arr) == arr) & (arr >= 0) & (arr < logrow.size)
    idx = np.where(ok, arr, 0.0).astype(np.int64)
    out = np.where(ok, logrow[idx], -np.inf)
    out = np.where(np.isnan(arr), np.nan, out)
    return float(out) if np.ndim(y) == 0 else out


def _map_eps(eps: ArrayLike, fn: Callable[[float], float]) -> float | NDArray[np.float64]:
    """``fn`` at a validated scalar eps, or elementwise over an array of them."""
    if np.ndim(eps) == 0:
        return float(fn(v.epsilon(eps, "eps", allow_inf=True)))
    arr = np.asarray(eps)
    flat = [v.epsilon(e, f"eps[{i}]", allow_inf=True) for i, e in enumerate(arr.reshape(-1).tolist())]
    return np.array([fn(e) for e in flat], dtype=np.float64).reshape(arr.shape)


def _laplace_pair_delta(eps: float, eps0: float) -> float:
    """Hockey-stick divergence of a Laplace pair whose pure eps is ``eps0`` (shift / scale):
    ``1 - exp((eps - eps0)/2)`` below ``eps0``, 0 at and above it (the same in both orders)."""
    return 0.0 if eps >= eps0 else float(-math.expm1((eps - eps0) / 2.0))


def _laplace_pair_epsilon(delta: float, eps0: float) -> float:
    """Inverse of :func:`_laplace_pair_delta`: ``max(0, eps0 + 2 log(1 - delta))``."""
    if delta >= 1.0:
        return 0.0
    return max(0.0, eps0 + 2.0 * math.log1p(-delta))


class _Broken(Mechanism):
    """The contract for the zoo. Constructors set ``claimed_eps``, ``true_eps`` and
    ``inputs``; ``_params`` names the constructor parameters in order (``eps`` is read from
    ``claimed_eps``, the others from the attributes of the same name)."""

    name: ClassVar[str] = "broken"
    exact_delta: ClassVar[bool] = False
    finite: ClassVar[bool] = True
    _params: ClassVar[tuple[str, ...]] = ("eps",)
    claimed_eps: float
    true_eps: float
    inputs: list[tuple[Any, Any]]

    @property
    def params(self) -> dict[str, Any]:
        """The constructor parameters (``eps`` is the claimed eps)."""
        return {key: (self.claimed_eps if key == "eps" else getattr(self, key)) for key in self._params}

    @property
    def rows(self) -> list[Any]:
        """The distinct inputs of :attr:`inputs`, in order of appearance: rows of ``matrix()``."""
        out: list[Any] = []
        for pair in self.inputs:
            for x in pair:
                if x not in out:
                    out.append(x)
        return out

    def neighbours(self) -> list[tuple[Any, Any]]:
        """The audited input pairs (:attr:`inputs`)."""
        return list(self.inputs)

    def epsilon(self, delta: float = 0.0) -> float:
        """``true_eps`` at ``delta = 0`` (0 at ``delta = 1``); in between exact where the
        delta curve is known (``exact_delta``), else :class:`NotAvailable`."""
        d = v.delta(delta, "delta")
        if d == 0.0:
            return float(self.true_eps)
        if d >= 1.0:
            return 0.0
        return self._epsilon_at(d)

    def _epsilon_at(self, delta: float) -> float:
        raise NotAvailable(
            f"delta: got {delta!r}, expected 0 or 1 for {self!r} (its delta curve is known only at and "
            f"above its pure eps {self.true_eps:g}, where it is 0)"
        )

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Smallest delta at ``eps``: 0 at and above ``true_eps``; below it exact where
        ``exact_delta`` is True, else :class:`NotAvailable`."""
        return _map_eps(eps, lambda e: 0.0 if e >= self.true_eps else self._delta_below(e))

    def _delta_below(self, eps: float) -> float:
        raise NotAvailable(
            f"eps: got {eps!r}, expected eps >= {self.true_eps:g} for {self!r} (below its pure eps its "
            "delta is not known exactly)"
        )


class _LaplacePair(_Broken):
    """Output law a Laplace pair at shift 1 and scale ``scale``: the delta curve in closed
    form (:func:`_laplace_pair_delta`)."""

    exact_delta: ClassVar[bool] = True
    finite: ClassVar[bool] = False

    def _epsilon_at(self, delta: float) -> float:
        # the closed form is off by rounding; step up to the first float whose delta is within
        # the target, so that delta(epsilon(d)) <= d holds exactly (a few ulps at most)
        t = _laplace_pair_epsilon(delta, self.true_eps)
        for _ in range(64):
            if t >= self.true_eps or self._delta_below(t) <= delta:
                return t
            t = math.nextafter(t, math.inf)
        return float(self.true_eps)  # pragma: no cover - the closed form is within a few ulps

    def _delta_below(self, eps: float) -> float:
        return _laplace_pair_delta(eps, self.true_eps)


class _FiniteLogDensity(_Broken):
    """Finite broken mechanisms with ``matrix()`` and ``rows``: log density, and the exact
    delta curve of the matrix (maximised over its rows)."""

    exact_delta: ClassVar[bool] = True

    if TYPE_CHECKING:  # each subclass defines it; declared here for the type checker only

        def matrix(self) -> NDArray[np.float64]: ...

    def _row_index(self, x: Any) -> int:
        try:
            xa = np.asarray(x)
        except (TypeError, ValueError):  # pragma: no cover - ragged input
            xa = None
        for i, r in enumerate(self.rows):
            if xa is not None and xa.dtype != bool and np.shape(r) == xa.shape and np.array_equal(np.asarray(r), xa):
                return i
        raise invalid("x", x, f"one of the inputs {self.rows!r}")

    def _log_row(self, i: int) -> NDArray[np.float64]:
        """log of row ``i`` of ``matrix()`` (``-inf`` at probability 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.matrix()[i])

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """log of the probability of output code ``y`` under input ``x``:
        ``log matrix()[row of x, y]``, vectorised over ``y`` (``-inf`` where the probability is
        0, at codes out of range and at non-integers). ``x`` must be one of :attr:`rows`."""
        i = self._row_index(x)
        return _codes_log(self._log_row(i), y)

    def _finite(self) -> Any:
        """``matrix()`` as a :func:`~ldpsim.mechanisms.finite.from_matrix` mechanism (cached)."""
        fm = self.__dict__.get("_fm")
        if fm is None:
            fm = self.__dict__["_fm"] = from_matrix(self.matrix())
        return fm

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Exact hockey-stick divergence of ``matrix()``, maximised over ordered pairs of its rows."""
        return self._finite().delta(eps)

    def _epsilon_at(self, delta: float) -> float:
        """The inverse of :meth:`delta` from the matrix (bisection on the floats, so that
        ``delta(epsilon(d)) <= d`` exactly)."""
        return float(self._finite().epsilon(delta))


# --------------------------------------------------------------------------- 1
class DoubledRR(_FiniteLogDensity):
    """k-ary randomized response whose probabilities use ``2 eps``.

    Claims ``eps``. Reports the input with probability ``e^{2eps}/(k - 1 + e^{2eps})`` and
    each other symbol with ``1/(k - 1 + e^{2eps})``; every column of the matrix has
    max/min ratio ``e^{2 eps}``, so ``true_eps = 2 eps`` exactly.
    Inputs: symbols ``0..k-1``; the pair ``(0, 1)`` is a worst case (all pairs are).
    """

    name = "broken.doubled_rr"
    _params = ("k", "eps")

    def __init__(self, k: int = 2, eps: float = 1.0) -> None:
        self.k = v.alphabet_size(k, "k")
        self.claimed_eps = _eps(eps)
        self.true_eps = 2.0 * self.claimed_eps
        self.inputs = [(0, 1)]
        self.output_size = self.k
        self.keep = -math.expm1(-self.true_eps) / (1.0 + (self.k - 1) * math.exp(-self.true_eps))

    @property
    def rows(self) -> list[Any]:
        return list(range(self.k))

    def matrix(self) -> NDArray[np.float64]:
        check_dense(self.k, self.k, "doubled randomized-response")  # k x k: refused past 2^25 entries
        # from the log rows: e^{2 eps} overflows past eps = 354
        return np.exp(np.array([self._log_row(i) for i in range(self.k)]))

    def _log_row(self, i: int) -> NDArray[np.float64]:
        # log-space matrix row (e^{2 eps} overflows past eps = 354): with
        # L = log(1 + (k-1) e^{-2eps}), the diagonal is -L and the rest -2 eps - L
        L = math.log1p((self.k - 1) * math.exp(-self.true_eps))
        row = np.full(self.k, -self.true_eps - L)
        row[i] = -L
        return row

    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Randomized response's curve at ``e' = 2 eps``, in closed form: the pair's only
        positive term is the output ``x``, ``p (1 - e^(t - e'))`` below ``e'`` with ``p =
        1/(1 + (k - 1) e^-e')`` (the matrix's off-diagonal e^-e' p underflows past eps = 372,
        and its inverse was then inf)."""
        return _map_eps(eps, self._delta_below)

    def _delta_below(self, eps: float) -> float:
        if eps >= self.true_eps:
            return 0.0
        p = 1.0 / (1.0 + (self.k - 1) * math.exp(-self.true_eps))
        return p * -math.expm1(eps - self.true_eps)

    def _epsilon_at(self, delta: float) -> float:
        # the inverse e' + log1p(-delta/p) (0 where delta(0) <= delta), then up to the first
        # float whose delta is within the target (a few ulps at most)
        if self._delta_below(0.0) <= delta:
            return 0.0
        p = 1.0 / (1.0 + (self.k - 1) * math.exp(-self.true_eps))
        t = max(0.0, self.true_eps + math.log1p(-delta / p))
        for _ in range(64):
            if t >= self.true_eps or self._delta_below(t) <= delta:
                return t
            t = math.nextafter(t, math.inf)
        return float(self.true_eps)  # pragma: no cover - the closed form is within a few ulps

    def sample(self, x: int, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        x = v.integer(x, "x", minimum=0, maximum=self.k - 1)
        n, g = _n(n), as_generator(rng)
        out = np.full(n, x, dtype=np.int64)
        redraw = g.random(n) >= self.keep
        out[redraw] = g.integers(0, self.k, size=int(np.count_nonzero(redraw)))
        return out


# --------------------------------------------------------------------------- 2
class UnaryNoReset(_FiniteLogDensity):
    """Symmetric unary encoding (RAPPOR-like) whose client never randomises its true bit.

    Correct client: one-hot vector of ``x``, each bit kept with probability
    ``p = e^{eps/2}/(1 + e^{eps/2})`` and flipped otherwise (eps-LDP). Broken client: bit
    ``x`` is always reported as 1 (only the other bits are randomised). Output: the bit
    vector as the integer code ``sum_j bit_j 2^j`` (``k <= 16``).
    ``true_eps = inf``: an output with bit ``x'`` equal to 0 has probability 0 under ``x'``
    and probability ``p > 0`` times the other bits' (positive) probabilities under ``x``
    (a column of the matrix mixes zero and non-zero entries).
    ``matrix()`` has one row per symbol ``0..k-1`` (a superset of the audited pair).
    """

    name = "broken.unary_no_reset"
    _params = ("k", "eps")

    def __init__(self, k: int = 4, eps: float = 1.0) -> None:
        self.k = v.integer(k, "k", minimum=2, maximum=16)
        self.claimed_eps = _eps(eps)
        self.true_eps = math.inf
        self.p = 1.0 / (1.0 + math.exp(-self.claimed_eps / 2.0))
        self.inputs = [(0, 1)]
        self.output_size = 2**self.k

    @property
    def rows(self) -> list[Any]:
        return list(range(self.k))

    def matrix(self) -> NDArray[np.float64]:
        codes = np.arange(2**self.k)
        bits = (codes[:, None] >> np.arange(self.k)) & 1  # (codes, k)
        M = np.empty((self.k, codes.size))
        for x in range(self.k):
            # other bits: 1 with probability 1 - p (a flipped 0); bit x: 1 surely
            pb = np.where(bits == 1, 1.0 - self.p, self.p)
            pb[:, x] = bits[:, x].astype(float)
            M[x] = pb.prod(axis=1)
        return M

    def sample(self, x: int, n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        x = v.integer(x, "x", minimum=0, maximum=self.k - 1)
        n, g = _n(n), as_generator(rng)
        bits = (g.random((n, self.k)) >= self.p).astype(np.int64)  # flipped zeros
        bits[:, x] = 1  # the bug: the true bit is never randomised
        return bits @ (np.int64(1) << np.arange(self.k, dtype=np.int64))


# --------------------------------------------------------------------------- 3
class LaplaceWrongScale(_LaplacePair):
    """Laplace noise with scale ``eps`` instead of ``1/eps`` on a sensitivity-1 query.

    Claims ``eps``. Output ``x + Lap(b)`` with ``b = eps``; for neighbours ``x, x + 1`` the
    privacy loss ``(|t - x - 1| - |t - x|)/b`` ranges over ``[-1/b, 1/b]`` (attained), so
    ``true_eps = 1/b = 1/eps`` -- larger than the claim whenever ``eps < 1``.
    Inputs: query values ``(0, 1)``. Real output; exact CDF in :meth:`cdf`.
    """

    name = "broken.laplace_wrong_scale"

    def __init__(self, eps: float = 0.5) -> None:
        self.claimed_eps = _eps(eps)
        self.scale = self.claimed_eps
        self.true_eps = 1.0 / self.scale
        self.inputs = [(0, 1)]

    def cdf(self, x: float, t: ArrayLike) -> NDArray[np.float64]:
        return _lap_cdf(np.asarray(t, dtype=np.float64) - float(x), self.scale)

    def log_density(self, x: float, y: ArrayLike) -> float | NDArray[np.float64]:
        """log density of the output ``x + Lap(b)`` at ``y`` (vectorised over ``y``)."""
        xv = v.as_float(x, "x", "a finite real number")
        if not math.isfinite(xv):
            raise invalid("x", x, "a finite real number")
        out = _lap_logpdf(_points(y) - xv, self.scale)
        return float(out) if np.ndim(y) == 0 else out

    def sample(self, x: float, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        n, g = _n(n), as_generator(rng)
        return float(x) + g.laplace(0.0, self.scale, n)


# --------------------------------------------------------------------------- 4
class HistogramWrongScale(_LaplacePair):
    """A histogram over ``bins`` bins with ``Lap(eps)`` noise per bin instead of ``Lap(1/eps)``.

    Claims ``eps``. Datasets are tuples of bin indices; neighbours differ by adding or
    removing one record, which moves exactly one count (the *affected* bin) by 1 and leaves
    the others unchanged. The noises are independent, so the privacy loss of the whole
    noisy histogram equals that of the affected bin alone: a Laplace(``b = eps``) pair at
    shift 1, ``true_eps = 1/eps`` (for replace-one neighbours two bins move and it would be
    ``2/eps``). :meth:`sample` outputs the noisy count of the affected bin (real);
    :meth:`sample_histogram` the full ``(n, bins)`` release.
    Inputs: ``(D, D + (affected,))`` with ``D = (0, 1, ..., bins-1)``.
    """

    name = "broken.histogram_wrong_scale"
    _params = ("eps", "bins", "affected")

    def __init__(self, eps: float = 0.5, bins: int = 4, affected: int = 0) -> None:
        self.claimed_eps = _eps(eps)
        self.bins = _count(bins, "bins")
        self.affected = v.integer(affected, "affected", minimum=0, maximum=self.bins - 1)
        self.scale = self.claimed_eps
        self.true_eps = 1.0 / self.scale
        D = tuple(range(self.bins))
        self.inputs = [(D, D + (self.affected,))]

    def _counts(self, x: Sequence[int]) -> NDArray[np.int64]:
        arr = np.asarray(x, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= self.bins):
            raise invalid("x", x, f"a dataset of bin indices in 0..{self.bins - 1}")
        return np.bincount(arr, minlength=self.bins)

    def sample_histogram(self, x: Sequence[int], n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        n, g = _n(n), as_generator(rng)
        return self._counts(x)[None, :] + g.laplace(0.0, self.scale, (n, self.bins))

    def cdf(self, x: Sequence[int], t: ArrayLike) -> NDArray[np.float64]:
        c = float(self._counts(x)[self.affected])
        return _lap_cdf(np.asarray(t, dtype=np.float64) - c, self.scale)

    def log_density(self, x: Sequence[int], y: ArrayLike) -> float | NDArray[np.float64]:
        """log density of the affected bin's noisy count (the output of :meth:`sample`) at
        ``y`` under dataset ``x`` (vectorised over ``y``)."""
        c = float(self._counts(x)[self.affected])
        out = _lap_logpdf(_points(y) - c, self.scale)
        return float(out) if np.ndim(y) == 0 else out

    def sample(self, x: Sequence[int], n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        n, g = _n(n), as_generator(rng)
        c = float(self._counts(x)[self.affected])
        return c + g.laplace(0.0, self.scale, n)


# --------------------------------------------------------------------------- 5
class NoisyMaxValue(_Broken):
    """Report-noisy-max over ``m`` counting queries that releases the noisy maximum *value*.

    Claims ``eps`` (the noise ``Lap(b)``, ``b = 2/eps``, makes the *index* eps-DP). Output
    ``M = max_i (q_i + Z_i)``. Derivation of ``true_eps = m/b = m eps / 2``:
    the density of ``M`` under ``q`` is ``sum_i f(t-q_i) prod_{j!=i} F(t-q_j)`` (``f, F`` of
    Lap(b)). For neighbours (``|q_i - q'_i| <= 1``) both ``f(t - q_i)`` and ``F(t - q_i)``
    change by a factor at most ``e^{1/b}``, so every term, hence the density, by at most
    ``e^{m/b}``. The pair ``q = 0^m``, ``q' = 1^m`` attains it: ``M' = M + 1`` and for
    ``t <= 0`` the density of ``M`` is ``m e^{m t/b} / (2^m b)``, so
    ``f_M(t)/f_M(t - 1) = e^{m/b}`` on ``t <= 0``. Hence ``true_eps = m eps/2``: broken for
    ``m >= 3`` (for ``m = 2`` exactly eps, for ``m = 1`` eps/2).
    Inputs: ``((0,)*m, (1,)*m)``. Real output; exact CDF ``prod_i F(t - q_i)``.
    """

    name = "broken.noisy_max_value"
    finite = False
    _params = ("eps", "m")

    def __init__(self, eps: float = 1.0, m: int = 5) -> None:
        self.claimed_eps = _eps(eps)
        self.m = _count(m, "m")
        self.scale = 2.0 / self.claimed_eps
        self.true_eps = self.m / self.scale
        self.inputs = [((0,) * self.m, (1,) * self.m)]

    def _q(self, x: Sequence[float]) -> NDArray[np.float64]:
        q = np.asarray(x, dtype=np.float64).reshape(-1)
        if q.size != self.m:
            raise invalid("x", x, f"a vector of {self.m} query answers")
        return q

    def cdf(self, x: Sequence[float], t: ArrayLike) -> NDArray[np.float64]:
        q = self._q(x)
        t = np.asarray(t, dtype=np.float64)
        return np.prod(_lap_cdf(t[..., None] - q, self.scale), axis=-1)

    def log_density(self, x: Sequence[float], y: ArrayLike) -> float | NDArray[np.float64]:
        """log density of ``M = max_i (q_i + Z_i)`` at ``y``: the log of
        ``sum_i f(y - q_i) prod_{j != i} F(y - q_j)``, by ``logsumexp`` over ``i`` of
        ``log f + sum_{j != i} log F`` (Laplace log-CDF in closed form): finite and accurate
        far in both tails. Vectorised over ``y``; ``-inf`` at ``y = +-inf``."""
        q = self._q(x)
        t = _points(y)
        fin = np.isfinite(t)
        z = np.where(fin, t, 0.0)[..., None] - q  # (..., m)
        lf = _lap_logpdf(z, self.scale)
        lF = _lap_logcdf(z, self.scale)
        off = ~np.eye(self.m, dtype=bool)  # j != i
        others = np.where(off, lF[..., None, :], 0.0).sum(axis=-1)  # (..., m): sum_{j != i}
        out = np.asarray(special.logsumexp(lf + others, axis=-1), dtype=np.float64)
        out = np.where(fin, out, -np.inf)
        out = np.where(np.isnan(t), np.nan, out)
        return float(out) if np.ndim(y) == 0 else out

    def sample(self, x: Sequence[float], n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        q = self._q(x)
        n, g = _n(n), as_generator(rng)
        return (q + g.laplace(0.0, self.scale, (n, self.m))).max(axis=1)


# --------------------------------------------------------------------------- sparse vector
class _SVT(_Broken):
    """Sparse vector with threshold ``T``, cutoff ``c = 1`` and the noise of the correct
    algorithm (Lyu-Su-Li 2017, Alg. 1 with ``eps1 = eps2 = eps/2``): threshold noise
    ``rho ~ Lap(2/eps)``, query noise ``nu_i ~ Lap(4/eps)``; answer ``T`` (top) when
    ``q_i + nu_i >= T + rho``. Sensitivity 1."""

    n_queries: int  # set by each subclass's _setup

    def _setup(self, eps: float, T: float) -> None:
        self.claimed_eps = _eps(eps)
        self.T = v.real(T, "T", "a finite real number")  # the threshold
        if not math.isfinite(self.T):
            raise invalid("T", T, "a finite real number")
        if 4.0 / self.claimed_eps > 1.7976931348623157e308:  # the noise scales 2/eps and 4/eps
            raise invalid("eps", eps, "at least 2.3e-308 (the noise scale 4/eps must be a finite double)")
        self.b_rho = 2.0 / self.claimed_eps
        self.b_nu = 4.0 / self.claimed_eps

    def _q(self, x: Sequence[float]) -> NDArray[np.float64]:
        q = np.asarray(x, dtype=np.float64).reshape(-1)
        if q.size != self.n_queries:
            raise invalid("x", x, f"a vector of {self.n_queries} query answers")
        return q


class SVTNoQueryNoise(_FiniteLogDensity, _SVT):
    """Sparse vector without noise on the queries (Lyu-Su-Li 2017, Alg. 5, Stoddard et al.).

    Claims ``eps`` (``rho ~ Lap(2/eps)``; cutoff ``c = 1``). With no query noise the answers
    are a deterministic function of ``rho``: the first top is at ``i`` iff
    ``rho <= q_i - T`` and ``rho > q_j - T`` for all ``j < i``. Output code: the index of the
    first top, or ``m`` when every answer is bottom (that determines the whole answer
    sequence when ``c = 1``). The paper's counterexample: ``T = 0``, ``q(D) = (0, 1)``,
    ``q(D') = (1, 0)`` (each query moves by 1, in opposite directions). The output
    (bottom, top) needs ``0 < rho <= 1`` under ``D`` (probability > 0) and
    ``1 < rho <= 0`` under ``D'`` (impossible): ``true_eps = inf``.
    """

    name = "broken.svt_no_query_noise"
    _params = ("eps", "T")

    def __init__(self, eps: float = 1.0, T: float = 0.0) -> None:
        self._setup(eps, T)
        self.n_queries = 2
        self.true_eps = math.inf
        self.inputs = [((0, 1), (1, 0))]
        self.output_size = self.n_queries + 1

    def matrix(self) -> NDArray[np.float64]:
        rows = []
        for x in self.rows:
            u = self._q(x) - self.T
            row = np.zeros(self.n_queries + 1)
            prev = -np.inf  # rho must exceed every earlier q_j - T
            for i, ui in enumerate(u):
                if ui > prev:
                    row[i] = float(_lap_cdf(ui, self.b_rho) - _lap_cdf(prev, self.b_rho))
                prev = max(prev, ui)
            row[-1] = 1.0 - float(_lap_cdf(prev, self.b_rho))
            rows.append(row)
        return np.array(rows)

    def sample(self, x: Sequence[float], n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        u = self._q(x) - self.T
        n, g = _n(n), as_generator(rng)
        rho = g.laplace(0.0, self.b_rho, n)
        top = u[None, :] >= rho[:, None]
        first = np.argmax(top, axis=1)
        return np.where(top.any(axis=1), first, self.n_queries).astype(np.int64)


def _patterns(n_queries: int) -> NDArray[np.bool_]:
    codes = np.arange(2**n_queries)
    return ((codes[:, None] >> np.arange(n_queries)) & 1).astype(bool)


class SVTNoCutoff(_FiniteLogDensity, _SVT):
    """Sparse vector that never stops (Lyu-Su-Li 2017, Alg. 6, Chen et al. 2015).

    Claims ``eps`` with the noise of the correct ``c = 1`` algorithm (``rho ~ Lap(2/eps)``,
    ``nu_i ~ Lap(4/eps)``) but answers every query instead of stopping after the first top.
    Output code: ``sum_i [answer_i = top] 2^i`` over the ``2m`` queries.
    Pair (the paper's counterexample, ``T = 0``): ``q(D) = (0^m, 1^m)``,
    ``q(D') = (1^m, 0^m)``. For the pattern ``a = (bottom^m, top^m)`` and a fixed ``rho = z``
    the ratio ``P_D(a | z)/P_D'(a | z)`` is ``[O(z)/O(z - 1)]^m`` with ``O = F/(1 - F)`` the
    odds of Lap(4/eps), and ``log O(z) - log O(z - 1) >= 1/b_nu`` for every ``z`` (``log O``
    is ``z/b + log(...)`` with a non-decreasing correction off ``(0, 1)``, and concave on
    ``(0, 1)`` with value ``log(2 e^{1/b} - 1) >= 1/b`` at the ends); hence
    ``eps(pair) >= m/b_nu = m eps/4``. Upper bound (the usual SVT argument: shift ``rho`` by 1,
    each of at most ``2m`` tops costs ``e^{2/b_nu}``): ``eps <= eps/2 + m eps``. The privacy
    level grows linearly with the number of queries, so no eps' bounds it for every query
    sequence (the paper's "infinity-DP").

    ``true_eps`` here is the *exact eps on the shipped pair* (a lower bound on this
    instance's eps over all neighbours), computed from :meth:`matrix` -- whose entries are
    one-dimensional integrals over ``rho`` evaluated by adaptive quadrature split at the
    kinks (absolute error ~1e-13).
    """

    name = "broken.svt_no_cutoff"
    _params = ("eps", "m", "T")

    #: Smallest eps: the likelihood ratios on the pair are 1 + O(eps), and the quadrature
    #: (relative error ~1e-12) resolves them to ~1e-6 relative here; below it the exact eps
    #: could not be computed (at eps = 1e-300 the integrals themselves failed: Lap(2/eps)).
    MIN_EPS = 1e-6
    #: Largest eps: beyond it some output probabilities (down to ~e^-(m eps/2)) underflow for
    #: every m (and the quadrature of Lap(2/eps) densities 1e-308 wide fails well before)
    MAX_EPS = 2000.0

    def __init__(self, eps: float = 1.0, m: int = 3, T: float = 0.0) -> None:
        if not v.epsilon(eps, "eps") <= self.MAX_EPS:  # before the noise scales 2/eps, 4/eps (subnormal at 1e308)
            raise invalid(
                "eps",
                eps,
                f"eps <= {self.MAX_EPS:g} for svt_no_cutoff (its exact eps on the pair comes from its "
                "output probabilities, which underflow the doubles beyond that)",
            )
        self._setup(eps, T)
        if self.claimed_eps < self.MIN_EPS:
            raise invalid(
                "eps",
                eps,
                f"eps >= {self.MIN_EPS:g} for svt_no_cutoff (its exact eps on the pair comes from quadrature, "
                "which cannot resolve likelihood ratios 1 + O(eps) below that)",
            )
        self.m = v.integer(m, "m", minimum=1, maximum=8)
        self.n_queries = 2 * self.m
        D = (0,) * self.m + (1,) * self.m
        Dp = (1,) * self.m + (0,) * self.m
        self.inputs = [(D, Dp)]
        self.output_size = 2**self.n_queries
        self.eps_bounds = (self.m / self.b_nu, 1.0 / self.b_rho + 2 * self.m * 2.0 / self.b_nu)
        self._matrix: NDArray[np.float64] | None = None

        if not np.all(self.matrix() > 0):  # every output has probability > 0 (Laplace noise): an
            # underflowed 0 made true_eps inf (at eps = 1000, m = 3; the bounds say <= 3500)
            raise invalid(
                "eps",
                eps,
                f"a smaller eps for svt_no_cutoff at m = {self.m} (some output probabilities of the pair "
                "underflow the doubles, so its exact eps cannot be computed)",
            )
        self.true_eps = float(from_matrix(self.matrix()).epsilon())

    def matrix(self) -> NDArray[np.float64]:
        if self._matrix is None:
            B = _patterns(self.n_queries)
            rows = []
            for x in self.rows:
                q = self._q(x)

                def g(z: float, q: NDArray[np.float64] = q) -> NDArray[np.float64]:
                    F = _lap_cdf(z + self.T - q, self.b_nu)
                    return float(_lap_pdf(z, self.b_rho)) * np.where(B, 1.0 - F, F).prod(axis=1)

                kinks = np.unique(np.concatenate([[0.0], q - self.T]))
                pts = np.concatenate([[-np.inf], kinks, [np.inf]])
                row = sum(
                    integrate.quad_vec(g, lo, hi, epsabs=1e-15, epsrel=1e-12)[0] for lo, hi in zip(pts[:-1], pts[1:])
                )
                rows.append(np.asarray(row))
            self._matrix = np.array(rows)
        return self._matrix

    def sample(self, x: Sequence[float], n: int, rng: RNGLike = None) -> NDArray[np.int64]:
        q = self._q(x)
        n, g = _n(n), as_generator(rng)
        rho = g.laplace(0.0, self.b_rho, n)
        nu = g.laplace(0.0, self.b_nu, (n, self.n_queries))
        top = (q + nu) >= (self.T + rho)[:, None]
        return top.astype(np.int64) @ (np.int64(1) << np.arange(self.n_queries, dtype=np.int64))


class SVTReturnsValue(_SVT):
    """Sparse vector that releases the noisy query value ``q_i + nu_i`` for its top
    (Lyu-Su-Li 2017, Alg. 3, after Roth's lecture notes), cutoff ``c = 1``.

    Claims ``eps`` with the noise of the correct ``c = 1`` algorithm (``rho ~ Lap(2/eps)``,
    ``nu_i ~ Lap(4/eps)``), over ``m + 1`` queries. Output (real), a post-processing of the
    release (so its eps is a lower bound on that of the release): the released value when
    the top is the *last* query, ``-inf`` when every answer is bottom, ``+inf`` when the top
    came earlier.

    Why it fails: releasing ``v = q_m + nu_m`` pins ``rho <= v - T``; the usual proof shifts
    ``rho`` by 1 to absorb the bottoms, which this constraint forbids. Pair (``T = 0``):
    ``q(D) = 0^{m+1}``, ``q(D') = 1^{m+1}`` (every query moves by 1; the same direction is
    the worst case here). Output density at a finite ``v``:
    ``g_q(v) = f_nu(v - q_m) H_q(v - T)``,
    ``H_q(w) = int_{-inf}^{w} f_rho(z) prod_{j<m} F_nu(z + T - q_j) dz``.
    For ``v <= 0`` every ``z <= v`` has ``F_nu(z)/F_nu(z - 1) = e^{1/b_nu}`` exactly (the left
    Laplace tail is exponential), so ``H_D(v) = e^{m/b_nu} H_D'(v)``, and
    ``f_nu(v)/f_nu(v - 1) = e^{1/b_nu}``: the log-ratio equals ``(m + 1)/b_nu`` on the whole
    half-line ``v <= 0``. Conversely, for any neighbours each query contributes one factor
    (``F_nu``, ``1 - F_nu`` or ``f_nu``) that moves by at most ``e^{1/b_nu}``, so no output
    has a larger ratio. Hence ``true_eps = (m + 1)/b_nu = (m + 1) eps/4`` exactly -- growing
    without bound in ``m`` (the paper: not eps'-DP for any eps'); default ``m = 7``:
    ``2 eps``. Exact CDF and density in :meth:`cdf`, :meth:`density` (one-dimensional
    quadrature over ``rho``, absolute error ~1e-12).
    """

    name = "broken.svt_returns_value"
    finite = False
    has_density = False
    _params = ("eps", "m", "T")

    def __init__(self, eps: float = 1.0, m: int = 7, T: float = 0.0) -> None:
        self._setup(eps, T)
        self.m = v.integer(m, "m", minimum=1, maximum=64)
        self.n_queries = self.m + 1
        self.inputs = [((0,) * self.n_queries, (1,) * self.n_queries)]
        self.true_eps = self.n_queries / self.b_nu

    def _quad(self, q: NDArray[np.float64], w: float, last: Any) -> float:
        """``int_{-inf}^{w} f_rho(z) prod_{j<m} F_nu(z + T - q_j) last(z) dz``."""
        hi = min(w, float(q.max()) - self.T + 80.0 * max(self.b_rho, self.b_nu))
        kinks = np.unique(np.concatenate([[0.0], q - self.T]))
        pts = np.concatenate([[-np.inf], kinks[kinks < hi], [hi]])

        def g(z: float) -> float:
            F = _lap_cdf(z + self.T - q[:-1], self.b_nu)
            return float(_lap_pdf(z, self.b_rho)) * float(np.prod(F)) * last(z)

        return sum(
            integrate.quad(g, lo, b, epsabs=1e-14, epsrel=1e-11, limit=200)[0]
            for lo, b in zip(pts[:-1], pts[1:])
            if b > lo
        )

    def masses(self, x: Sequence[float]) -> tuple[float, float, float]:
        """``(P(out = -inf), P(out finite), P(out = +inf))``."""
        q = self._q(x)
        Fm = lambda z: float(_lap_cdf(z + self.T - q[-1], self.b_nu))
        none = self._quad(q, np.inf, Fm)
        last = self._quad(q, np.inf, lambda z: 1.0 - Fm(z))
        return none, last, max(0.0, 1.0 - none - last)

    def density(self, x: Sequence[float], t: ArrayLike) -> NDArray[np.float64]:
        """Density of the finite part of the output at ``t``."""
        q = self._q(x)
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        H = np.array([self._quad(q, tk - self.T, lambda z: 1.0) for tk in t.ravel()])
        return (_lap_pdf(t.ravel() - q[-1], self.b_nu) * H).reshape(t.shape)

    def cdf(self, x: Sequence[float], t: ArrayLike) -> NDArray[np.float64]:
        """Exact ``P(out <= t)`` for finite ``t``: the ``-inf`` mass plus
        ``int_{z <= t - T} f_rho(z) prod_{j<m} F_nu(z+T-q_j) (F_nu(t - q_m) - F_nu(z+T-q_m)) dz``."""
        q = self._q(x)
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        none = self.masses(x)[0]
        out = np.empty(t.shape)
        for k, tk in enumerate(t.ravel()):
            Ft = float(_lap_cdf(tk - q[-1], self.b_nu))
            part = self._quad(q, tk - self.T, lambda z: Ft - float(_lap_cdf(z + self.T - q[-1], self.b_nu)))
            out.flat[k] = none + part
        return out

    def sample(self, x: Sequence[float], n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        q = self._q(x)
        n, g = _n(n), as_generator(rng)
        rho = g.laplace(0.0, self.b_rho, n)
        val = q + g.laplace(0.0, self.b_nu, (n, self.n_queries))
        top = val >= (self.T + rho)[:, None]
        first = np.argmax(top, axis=1)
        out = np.where(first == self.m, val[:, -1], np.inf)
        return np.where(top.any(axis=1), out, -np.inf)
