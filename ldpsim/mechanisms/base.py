"""The mechanism contract: what a mechanism *is* in ldpsim.

A **local mechanism** is a randomised map from one input ``x`` (a client's answer, a
number, a vector, a small data set) to one report ``y``. ldpsim describes every mechanism,
from randomized response to Gaussian noise to the deliberately broken targets of the
auditor, by the same handful of methods, so that every tool in the library (the
simulation engine, the analyst, the auditor, the accounting, the tests) works on any of
them without asking what kind it is:

``sample(x, n, rng=None)``
    ``n`` independent reports for the one input ``x``, as an array whose first axis has
    length ``n`` (vectorised: no Python loop over reports).
``log_density(x, y)``
    Natural log of the probability (finite outputs) or density (continuous outputs) of
    report ``y`` under input ``x``, vectorised over ``y``; ``-inf`` off the support.
    A mechanism with no density available sets ``has_density = False`` and raises
    :class:`NoDensity`.
``epsilon(delta=0.0)``
    The smallest eps such that the mechanism is (eps, delta)-LDP (``inf`` if none):
    exact, not a bound, unless the class documents otherwise.
``delta(eps)``
    The smallest delta at ``eps`` (the hockey-stick divergence, maximised over pairs of
    inputs); ``epsilon(delta(eps)) <= eps`` always holds.
``is_private(eps, delta=0.0)``
    Whether the mechanism is (eps, delta)-LDP, with a relative slack of
    ``PRIVACY_RTOL`` for rounding.
``guarantee()``
    The exact privacy guarantee as a :class:`ldpsim.privacy.Guarantee` (delta curve,
    trade-off function), for composition and plotting.
``neighbours()``
    Pairs of inputs ``(x, x')`` whose output laws attain the mechanism's privacy loss
    (the pairs an auditor should test).
``params``
    The parameters that identify the mechanism (a dict): two mechanisms are equal when
    they have the same class and ``params``; ``repr`` shows them.

Finite mechanisms (``output_size`` is the number ``m`` of output codes) also have an exact
matrix and the batch samplers ``privatize(values, rng)`` (one report per client) and
``sample_counts(counts, rng)`` (exact aggregate sampling); noise mechanisms have
``privatize(values, rng)``. Estimators ask the mechanism to invert its own reports
(:meth:`ldpsim.mechanisms.FiniteMechanism.invert`), so no estimator needs to know which
mechanism produced them.

Writing a new mechanism means one class implementing the abstract methods below and one
entry in :mod:`ldpsim.mechanisms.catalog`; the contract test suite then checks it. A
complete example, a binary mechanism that reports the true bit with probability 3/4:

.. code-block:: python

    import math
    import numpy as np
    from ldpsim.mechanisms.base import Mechanism

    class Coin(Mechanism):
        name = "coin"
        output_size = 2

        def __init__(self, keep: float = 0.75) -> None:
            self.keep = float(keep)

        @property
        def params(self):
            return {"keep": self.keep}

        def neighbours(self):
            return [(0, 1)]

        def sample(self, x, n, rng=None):
            flip = np.random.default_rng(rng).random(n) >= self.keep
            return np.where(flip, 1 - x, x)

        def log_density(self, x, y):
            return np.where(np.asarray(y) == x, math.log(self.keep), math.log1p(-self.keep))

        def epsilon(self, delta=0.0):
            eps0 = math.log(self.keep / (1 - self.keep))
            return max(0.0, eps0 + math.log1p(-min(delta, 1.0) / self.keep)) if delta < self.keep else 0.0

        def delta(self, eps):
            return max(0.0, self.keep - math.exp(eps) * (1 - self.keep))

    coin = Coin()
    assert coin.is_private(math.log(3)) and not coin.is_private(1.0)
    assert coin == Coin(0.75) and repr(coin) == "Coin(keep=0.75)"
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import as_generator
from ldpsim.errors import LdpSimError, invalid

#: Relative slack of :meth:`Mechanism.is_private` on eps and on delta for rounding in the
#: mechanism's probabilities: randomized response with keep probability 3/4 passes
#: ``log 3`` and fails ``log 2.999``.
PRIVACY_RTOL = 1e-9


class NoDensity(LdpSimError):
    """Raised by :meth:`Mechanism.log_density` of a mechanism whose output law has no
    density available in closed form (``has_density = False``)."""


class NotAvailable(LdpSimError):
    """Raised by :meth:`Mechanism.delta` (and what depends on it) of a mechanism whose
    ``exact_delta`` is False, at an eps below its pure eps, where its delta is not known
    exactly."""


class Mechanism(ABC):
    """The contract every mechanism of ldpsim implements (see the module docstring)."""

    #: catalog name of the mechanism family
    name: ClassVar[str] = "mechanism"
    #: whether :meth:`log_density` is available
    has_density: ClassVar[bool] = True
    #: whether :meth:`delta` is exact at every eps. False: the pure eps ``epsilon(0.0)`` is
    #: exact (so ``delta(eps) = 0`` at or above it and ``> 0`` below it), and ``delta(eps)``
    #: below it raises :class:`NotAvailable`.
    exact_delta: ClassVar[bool] = True
    #: number of output codes ``0..m-1`` for a finite output set; ``None`` for real or
    #: vector outputs (an instance attribute on finite mechanisms)
    output_size: int | None = None

    # ------------------------------------------------------------------ identity
    @property
    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The parameters that identify this mechanism (value equality and repr)."""

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={val!r}" for key, val in self.params.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return _same(self.params, other.params)

    def __hash__(self) -> int:
        return hash((type(self).__name__, _hashable(self.params)))

    # ------------------------------------------------------------------ sampling
    @abstractmethod
    def sample(self, x: Any, n: int, rng: Any = None) -> NDArray[Any]:
        """``n`` independent reports for the input ``x`` (first axis of length ``n``)."""

    def log_density(self, x: Any, y: ArrayLike) -> float | NDArray[np.float64]:
        """log probability (finite outputs) or density of report ``y`` under input ``x``."""
        raise NoDensity(
            f"log_density: got a call on {self!r}, expected a mechanism with a density "
            "(this one has none in closed form; use sample() and an empirical test instead)"
        )

    @abstractmethod
    def neighbours(self) -> list[tuple[Any, Any]]:
        """Pairs of inputs ``(x, x')`` that attain the privacy loss (for audits)."""

    # ------------------------------------------------------------------ privacy
    @abstractmethod
    def epsilon(self, delta: float = 0.0) -> float:
        """Smallest eps such that the mechanism is (eps, delta)-LDP (``inf`` if none)."""

    @abstractmethod
    def delta(self, eps: ArrayLike) -> float | NDArray[np.float64]:
        """Smallest delta such that the mechanism is (eps, delta)-LDP."""

    def is_private(self, eps: float, delta: float = 0.0) -> bool:
        """Whether the mechanism is (eps, delta)-LDP, up to a relative slack of
        :data:`PRIVACY_RTOL` on eps and on delta. Monotone in both arguments."""
        eps = v.epsilon(eps, "eps", allow_inf=True)
        delta = v.delta(delta, "delta")
        own = self.epsilon(0.0)
        if math.isfinite(eps) and own <= eps * (1.0 + PRIVACY_RTOL) + PRIVACY_RTOL * 1e-3:
            return True
        if delta >= 1.0:
            return True
        if delta == 0.0 and math.isfinite(eps):
            # epsilon(0.0) is exact by contract, so below it delta(eps) > 0 even where the
            # float delta(eps) underflows to 0 (a Gaussian far out in its tail)
            return False
        return float(self.delta(eps)) <= delta * (1.0 + PRIVACY_RTOL)

    def guarantee(self) -> Any:
        """The exact privacy guarantee (a :class:`ldpsim.privacy.Guarantee`) built from
        :meth:`delta`; families with a sharper description (a privacy-loss law) override it."""
        from ldpsim.privacy.guarantees import DeltaCurve  # deferred: privacy loads scipy (tests/test_import_cost.py)

        return DeltaCurve(self.delta, label=repr(self))


def target_indices(targets: ArrayLike, k: int) -> NDArray[np.int64]:
    """Distinct answer indices ``0..k-1``, sorted (the targets of an attack); one line
    naming ``targets`` otherwise."""
    arr = v.symbol_indices(targets, k, "targets").reshape(-1)
    if arr.size == 0:
        raise LdpSimError(f"targets: got none, expected at least one answer index in 0..{k - 1}")
    return np.unique(arr)


class FrequencyOracle(Mechanism):
    """A mechanism for estimating how often each of ``k`` answers occurs: a *frequency
    oracle* (randomized response, unary encoding, local hashing, Hadamard response, subset
    selection, RAPPOR, any finite mechanism of full rank). Beyond the contract it says how
    the server aggregates reports and how the analyst inverts them, so the simulation
    engine and the estimators work with every oracle alike:

    ``privatize(x, rng)``
        One report per client for the symbol indices ``x`` (``0..k-1``), vectorised; an
        array of shape ``x.shape + report_shape``.
    ``statistic(reports)``
        The server's sufficient statistic, additive over reports: the ``statistic_size``
        counts of the *supports* the reports name (output symbols of a finite mechanism,
        1-bits of unary encoding, the candidates a hashed report is consistent with).
    ``unit_statistics(reports)``
        Each report's own statistic, one row per report (a weighted server sums them with
        the respondents' weights); optional.
    ``sample_statistic(input_counts, rng)``
        An exact draw of the statistic of ``input_counts[x]`` clients holding ``x`` at a
        cost independent of their number (aggregate mode); oracles for which no such law is
        available set ``aggregate_exact = False`` and raise :class:`NotAvailable`.
        ``sample_statistics(rows, rng)`` draws one per row of input counts (a Monte Carlo
        calibration's many draws at once); oracles whose law vectorises override it.
    ``support_matrix``
        ``k x s``: the expected statistic of one report given its input.
    ``invert(f)``
        The unbiased estimate of the input distribution from the statistic's frequencies
        ``f = statistic / n`` (``forward`` is its right inverse: ``invert(forward(p)) = p``).
    ``statistic_covariance(prior)``, ``estimate_covariance(prior, n)``, ``estimate_variance(prior, n)``
        The exact covariance of one report's statistic, and of the estimate from ``n``
        reports, when the inputs follow ``prior``; ``plugin_variance(f, n)`` estimates the
        latter from the observed frequencies alone.
    ``inversion_coefficient_range()``
        Per input, the range of one report's contribution to its estimate (Hoeffding
        intervals and confidence sequences).
    ``report_bits``
        The size of one report in bits (communication cost).

    The defaults below are the generic linear-algebra versions (least-squares inverse of
    the support matrix; one-hot statistics for the covariance); oracles with structure
    override them with closed forms and never build ``k x s`` or ``s x s`` matrices unless
    asked.
    """

    #: number of input symbols (an instance attribute)
    k: int = 0
    #: the names of the inputs (an instance attribute; ``0..k-1`` by default)
    input_labels: tuple[Any, ...] = ()
    #: whether :meth:`sample_statistic` draws the exact law (aggregate mode)
    aggregate_exact: ClassVar[bool] = True
    #: shape of one report (``()`` for a symbol, ``(d,)`` for a vector)
    report_shape: tuple[int, ...] = ()

    @property
    @abstractmethod
    def statistic_size(self) -> int:
        """Length ``s`` of the server's statistic."""

    @abstractmethod
    def privatize(self, x: ArrayLike, rng: Any = None) -> NDArray[np.int64]:
        """One report per entry of ``x`` (symbol indices), vectorised."""

    @abstractmethod
    def statistic(self, reports: ArrayLike) -> NDArray[np.int64]:
        """The additive statistic (length ``s``) of a batch of reports."""

    def unit_statistics(self, reports: ArrayLike) -> NDArray[np.int64]:
        """``(n, s)``: each report's own statistic (their column sums are
        :meth:`statistic`): what a server that weighs its respondents (survey design
        weights) sums with their weights."""
        raise NotAvailable(
            f"unit_statistics: got a call on {self!r}, expected an oracle whose reports each give their own "
            "statistic (a finite mechanism, unary encoding, local hashing, subset selection or RAPPOR)"
        )

    def sample_statistic(self, input_counts: ArrayLike, rng: Any = None) -> NDArray[np.int64]:
        """Exact draw of the statistic of ``input_counts[x]`` clients with input ``x``."""
        raise NotAvailable(
            f"sample_statistic: got a call on {self!r}, expected an oracle whose aggregate statistic has an exact law "
            "(use simulation.mode = 'individual' for this one)"
        )

    def sample_statistics(self, input_counts: ArrayLike, rng: Any = None) -> NDArray[np.int64]:
        """One exact draw of the statistic per row of ``input_counts`` (``(r, k)`` counts; an
        ``(r, s)`` array): :meth:`sample_statistic` row by row here, vectorised where an
        oracle's law allows it (unary encoding)."""
        gen = as_generator(rng)
        rows = np.asarray(input_counts)
        if rows.ndim != 2:
            raise invalid("input_counts", f"an array of shape {rows.shape}", f"rows of {self.k} input counts")
        if rows.shape[0] == 0:
            return np.zeros((0, self.statistic_size), dtype=np.int64)
        return np.stack([self.sample_statistic(row, gen) for row in rows]).astype(np.int64)

    # ----------------------------------------------------------------- what fake respondents can send
    # (ldpsim.attacks asks these; an oracle that cannot answer one raises NotAvailable)
    def crafted_reports(self, targets: ArrayLike, n: int, rng: Any = None) -> NDArray[Any]:
        """``n`` reports, each supporting as many of the answers ``targets`` (indices) as one
        report of this oracle can, and otherwise looking like an honest report where the
        encoding allows it: the reports of the maximal gain attack (Cao, Jia and Gong 2021)."""
        raise NotAvailable(
            f"crafted_reports: got a call on {self!r}, expected a finite mechanism, unary encoding, local hashing "
            "or subset selection"
        )

    def random_reports(self, n: int, rng: Any = None) -> NDArray[Any]:
        """``n`` reports drawn uniformly from the report space (the random perturbed-value
        attack)."""
        raise NotAvailable(
            f"random_reports: got a call on {self!r}, expected a finite mechanism, unary encoding, local hashing "
            "or subset selection"
        )

    def random_report_support(self) -> NDArray[np.float64]:
        """The exact expected statistic (length ``s``) of one report drawn by
        :meth:`random_reports`."""
        raise NotAvailable(
            f"random_report_support: got a call on {self!r}, expected a finite mechanism, unary encoding, local "
            "hashing or subset selection"
        )

    def support_size_cgf(self, lam: ArrayLike) -> NDArray[np.float64]:
        """``log E exp(lam |support|)`` of one honest report, the same for every input:
        where it exists, fake reports of another size are detectable whatever the answers
        (``ldpsim.attacks.SizeMonitor``)."""
        raise NotAvailable(
            f"support_size_cgf: got a call on {self!r}, expected an oracle whose number of supported answers per "
            "report has one law for every input (a finite mechanism, unary encoding or subset selection)"
        )

    def itemset_support_bound(self, z: int) -> float:
        """An upper bound, over inputs and sets of ``z >= 2`` distinct answers, on the
        probability that one honest report supports every answer of the set (frequent-itemset
        detection)."""
        raise NotAvailable(
            f"itemset_support_bound: got a call on {self!r}, expected unary encoding, local hashing, subset "
            "selection or a finite mechanism"
        )

    @property
    @abstractmethod
    def support_matrix(self) -> NDArray[np.float64]:
        """``k x s``: ``E[statistic of one report | input x]``."""

    @property
    def identifiable(self) -> bool:
        """Whether the input distribution can be estimated from the statistic: the support
        matrix has full row rank ``k`` (oracles with closed forms answer without building it)."""
        s = self.support_matrix
        return bool(s.shape[1] >= self.k and np.linalg.matrix_rank(s) == self.k)

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``p^T S``: the expected statistic frequencies under the input distribution ``p``."""
        return np.asarray(p, dtype=np.float64) @ self.support_matrix

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        """The unbiased estimate of the input distribution from statistic frequencies ``f``:
        the least-squares solution of ``S^T p = f``."""
        return self._pinv @ np.asarray(f, dtype=np.float64)

    @property
    def _pinv(self) -> NDArray[np.float64]:
        cached = self.__dict__.get("_pinv_cache")
        if cached is None:
            s = self.support_matrix
            if np.linalg.matrix_rank(s) < self.k:
                raise LdpSimError(
                    f"mechanism: got {self!r}, expected a support matrix of full row rank {self.k} to invert"
                )
            cached = cast(NDArray[np.float64], np.linalg.pinv(s.T))
            cached.setflags(write=False)
            self.__dict__["_pinv_cache"] = cached
        return cached

    def statistic_covariance(self, prior: NDArray[np.float64]) -> NDArray[np.float64]:
        """``s x s`` covariance of one report's statistic when the input follows ``prior``.
        Generic version: one-hot statistics (``diag(mu) - mu mu^T``, ``mu = forward(prior)``)."""
        mu = self.forward(prior)
        return np.diag(mu) - np.outer(mu, mu)

    def estimate_covariance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``k x k`` exact covariance of :meth:`invert` of ``n`` reports' statistic
        frequencies when the inputs follow ``prior``: ``A Sigma A^T / n``."""
        a = self._pinv
        cov = a @ self.statistic_covariance(prior) @ a.T
        return (cov + cov.T) / (2.0 * n)

    def estimate_variance(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """The diagonal of :meth:`estimate_covariance`."""
        return np.clip(np.diag(self.estimate_covariance(prior, n)), 0.0, None)

    def plugin_variance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """An estimate of :meth:`estimate_variance` from the observed statistic frequencies
        ``f``: the exact variance at the estimated distribution (clipped to the simplex)."""
        p = np.clip(self.invert(f), 0.0, None)
        total = p.sum()
        p = p / total if total > 0 else np.full(self.k, 1.0 / self.k)
        return self.estimate_variance(p, n)

    def plugin_covariance(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """An estimate of :meth:`estimate_covariance` from the observed statistic
        frequencies ``f``: the exact covariance at the estimated distribution (clipped to
        the simplex)."""
        p = np.clip(self.invert(f), 0.0, None)
        total = p.sum()
        p = p / total if total > 0 else np.full(self.k, 1.0 / self.k)
        return self.estimate_covariance(p, n)

    def plugin_std_error(self, f: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``sqrt(plugin_variance(f, n))``."""
        return np.sqrt(self.plugin_variance(f, n))

    def estimate_std_error(self, prior: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        """``sqrt(estimate_variance(prior, n))``: the exact standard errors."""
        return np.sqrt(self.estimate_variance(prior, n))

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """``S g`` (length ``k``) for a vector ``g`` over the statistic's entries (the
        iterative Bayesian update uses it)."""
        return self.support_matrix @ np.asarray(g, dtype=np.float64)

    def possible_outputs(self) -> NDArray[np.bool_]:
        """Mask of the statistic's entries that some input makes positive with positive
        probability."""
        return cast(NDArray[np.bool_], (self.support_matrix > 0).any(axis=0))  # axis=0 of a matrix: an array

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        """Per input ``x``: ``max - min`` over possible reports of their contribution to the
        estimate of ``x`` (generic version: one-hot statistics, so ``max_y A[x, y] - min_y A[x, y]``)."""
        a = self._pinv
        return a.max(axis=1) - a.min(axis=1)

    def with_labels(self, labels: Any) -> "FrequencyOracle":
        """The same oracle with its inputs named ``labels`` (a copy; ``k`` distinct labels)."""
        out = copy.copy(self)
        names = tuple(labels)
        if len(names) != self.k or len(set(names)) != self.k:
            raise LdpSimError(f"labels: got {len(names)} labels, expected {self.k} distinct labels")
        out.input_labels = names
        return out

    def server_operations(self, n: float) -> float:
        """About how many elementary operations the server spends on ``n`` reports:
        aggregating them into the statistic and inverting it. Generic version: one count per
        report (a symbol) and a ``k x s`` inverse; oracles whose reports name several
        supports (unary encoding, hashing) override it."""
        return float(n) + float(self.k) * float(self.statistic_size)

    @property
    def report_bits(self) -> float:
        """Bits needed to send one report."""
        return float(math.log2(self.statistic_size)) if self.statistic_size > 1 else 0.0


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((key, _hashable(val)) for key, val in value.items())
    if isinstance(value, np.ndarray):
        return (value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(x) for x in value)
    return value
