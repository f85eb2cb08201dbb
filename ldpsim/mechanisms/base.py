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

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError

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
        return _same(self.params, other.params)  # type: ignore[attr-defined]

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
        from ldpsim.privacy.guarantees import DeltaCurve

        return DeltaCurve(self.delta, label=repr(self))


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
