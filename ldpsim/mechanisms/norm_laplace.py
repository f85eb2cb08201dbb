"""The ``l_p`` Laplace mechanism on R^n (vector outputs), and the sampler of norm-power noise.

``NormLaplace(n, p, eps)`` releases ``x + Z / eps`` where ``Z`` has density proportional to
``exp(-||z||_p)`` on R^n: exactly eps-LDP for inputs at ``l_p`` distance at most 1. Its
delta below eps is an n-dimensional integral that ldpsim does not compute for ``n >= 2``
(``exact_delta = False``: :meth:`NormLaplace.delta` raises
:class:`~ldpsim.mechanisms.base.NotAvailable` there); for ``n = 1`` it is the Laplace
mechanism and everything is exact.

The sampler :func:`norm_power_rows` (density proportional to ``exp(-||z||_p^alpha)``) is
shared with :class:`ldpsim.highdim.NormPowerNoise`, which studies that noise family.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim._bisect import smallest_ok
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import Mechanism, NotAvailable
from ldpsim.privacy.guarantees import EpsDelta

__all__ = ["NormLaplace", "p_norm", "norm_power_rows", "norm_power_sample"]

#: Elements per chunk when sampling (size * n entries are generated chunk by chunk).
CHUNK = 1 << 20

#: Largest dimension: inputs, outputs and the neighbouring pair are n-vectors in memory (at
#: n = 2^31 the pair alone took tens of GB: MemoryError).
MAX_DIMENSION = v.MAX_ALPHABET

_FLOAT_MAX = float(np.finfo(np.float64).max)


def dimension(value: object, name: str) -> int:
    """A dimension: an integer in ``1..MAX_DIMENSION``."""
    d = v.integer(value, name, minimum=1)
    if d > MAX_DIMENSION:
        raise invalid(
            name,
            value,
            f"an integer in 1..{MAX_DIMENSION:,} (2^22: the inputs and outputs are vectors of this length in memory)",
        )
    return d


def p_norm(x: NDArray[np.float64], p: float) -> NDArray[np.float64]:
    """``||x||_p`` along the last axis, scaled by the max so large p neither overflows nor underflows."""
    a = np.abs(x)
    if p == 1.0:
        return a.sum(axis=-1)
    if p == 2.0:
        return np.sqrt(np.einsum("...i,...i->...", a, a))
    m = a.max(axis=-1)
    if math.isinf(p):
        return m
    safe = np.where(m > 0, m, 1.0)
    r = a / safe[..., None]
    return m * np.sum(r**p, axis=-1) ** (1.0 / p)


def norm_power_rows(n: int, p: float, alpha: float, rows: int, gen: np.random.Generator) -> NDArray[np.float64]:
    """``rows`` draws, shape ``(rows, n)``, of the law with density proportional to
    ``exp(-||x||_p^alpha)``: ``X = R U`` with ``R^alpha ~ Gamma(n/alpha)`` and
    ``U = G / ||G||_p`` (the cone measure), ``G_i`` i.i.d. with density proportional to
    ``exp(-|g|^p)``. Parameters are trusted (validated by the callers)."""
    # |G_i| with density prop. to exp(-g^p) on g > 0 is Gamma(1 + 1/p)^(1/p) * Uniform(0, 1)
    # (|G|^p ~ Gamma(1/p)); p = inf gives Uniform(0, 1). Exact, no underflow for large p.
    if math.isinf(p):
        mag = gen.random((rows, n))
    else:
        scale = gen.standard_gamma(1.0 + 1.0 / p, size=(rows, n)) ** (1.0 / p)
        mag = scale * gen.random((rows, n))
    sign = gen.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
    g = mag * sign
    norm = p_norm(g, p)
    radius = gen.standard_gamma(n / alpha, size=rows) ** (1.0 / alpha)
    return g * (radius / norm)[:, None]


def norm_power_sample(n: int, p: float, alpha: float, size: int, rng: RNGLike = None) -> NDArray[np.float64]:
    """``size`` draws of :func:`norm_power_rows`, shape ``(size, n)``, in chunks of about
    2^20 entries (``size`` validated here)."""
    size = v.integer(size, "size", minimum=0)
    gen = as_generator(rng)
    out = np.empty((size, n))
    step = max(1, CHUNK // n)
    for start in range(0, size, step):
        stop = min(size, start + step)
        out[start:stop] = norm_power_rows(n, p, alpha, stop - start, gen)
    return out


def norm_p(value: object, name: str = "p") -> float:
    """The norm ``p``: a number >= 1, ``inf`` allowed."""
    expected = "a number >= 1 (np.inf allowed)"
    p = v.real(value, name, expected)
    if p < 1:
        raise invalid(name, value, expected)
    return p


class NormLaplace(Mechanism):
    """The ``l_p`` Laplace mechanism on R^n: output ``x + Z / eps`` with ``Z`` of density
    proportional to ``exp(-||z||_p)`` (:class:`ldpsim.highdim.NormPowerNoise` ``(n, p, 1)``), i.e. output density
    ``eps^n exp(-eps ||y - x||_p) / c_{n,p}``, ``c_{n,p} = (2 Gamma(1 + 1/p))^n Gamma(n + 1) /
    Gamma(1 + n/p)`` (the unit ``l_p`` ball's volume times ``Gamma(n + 1)``).

    eps-DP for inputs at ``l_p`` distance <= 1, exactly: by the triangle inequality the
    log-ratio of the densities at ``x`` and ``x'`` is at most ``eps ||x - x'||_p``, with
    equality on the ray from ``x`` away from ``x'``. So ``epsilon(0.0) = eps`` (and
    ``eps * distance`` at another distance) and ``delta(eps') = 0`` for ``eps' >= eps``.

    Below eps, delta is an n-dimensional integral: for ``n = 1`` it is Laplace's,
    ``1 - exp((eps' - eps)/2)``, and exact; for ``n >= 2`` :meth:`delta` and
    :meth:`epsilon` at ``0 < delta < 1`` raise :class:`~ldpsim.mechanisms.base.NotAvailable`
    (``exact_delta`` is False) and :meth:`guarantee` is the pure eps-DP guarantee (a valid
    bound, not the exact curve).
    """

    name = "norm_laplace"
    exact_delta = False

    def __init__(self, n: int, p: float, eps: float):
        self.n = dimension(n, "n")
        self.p = norm_p(p)
        self.eps = v.positive(eps, "eps")
        # the noise Z/eps has l_p norm R/eps, R ~ Gamma(n): beyond n + 40 sqrt(n) + 700 with
        # probability below e^-400, so the outputs stay doubles (at eps = 5e-324, 1/eps alone
        # is not one: the samples overflowed)
        reach = (self.n + 40.0 * math.sqrt(self.n) + 700.0) / self.eps
        if not reach <= _FLOAT_MAX / 4.0:
            least = 4.0 * (self.n + 40.0 * math.sqrt(self.n) + 700.0) / _FLOAT_MAX
            raise invalid(
                "eps",
                eps,
                f"eps >= {least:.4g} at n = {self.n} (the noise, of norm about n/eps, must stay within the doubles)",
            )
        if self.n == 1:
            self.exact_delta = True  # type: ignore[misc]  # the Laplace mechanism: delta(eps) in closed form
        gam = 0.0 if math.isinf(self.p) else special.gammaln(1.0 + 1.0 / self.p)
        ball = self.n * (math.log(2.0) + gam) - (0.0 if math.isinf(self.p) else special.gammaln(1.0 + self.n / self.p))
        self.log_norm = ball + special.gammaln(self.n + 1.0) - self.n * math.log(self.eps)

    # ------------------------------------------------------------------ identity
    @property
    def params(self) -> dict[str, Any]:
        return {"n": self.n, "p": self.p, "eps": self.eps}

    def neighbours(self) -> list[tuple[Any, Any]]:
        """``[(0, e_1)]`` as tuples: two inputs at ``l_p`` distance 1 for every p (the pair
        attains the loss eps, as does every pair at distance 1)."""
        zero = tuple(0.0 for _ in range(self.n))
        e1 = tuple(float(j == 0) for j in range(self.n))
        return [(zero, e1)]

    # ------------------------------------------------------------------ sampling
    def _x(self, x: ArrayLike) -> NDArray[np.float64]:
        expected = f"a finite vector of length {self.n}"
        arr = v.finite_array(x, "x", expected)
        if arr.shape != (self.n,):
            raise invalid("x", x, expected)
        return arr

    def sample(self, x: ArrayLike, n: int, rng: RNGLike = None) -> NDArray[np.float64]:
        """``n`` outputs on input ``x``, shape ``(n, self.n)``."""
        x0 = self._x(x)
        n = v.integer(n, "n", minimum=0)
        return x0 + norm_power_sample(self.n, self.p, 1.0, n, rng) / self.eps

    def log_density(self, x: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        """Log density of the outputs ``y`` (shape ``(m, n)``, or one point of shape ``(n,)``;
        for ``n = 1`` also ``(m,)``) on input ``x``."""
        x0 = self._x(x)
        expected = f"real points of dimension {self.n} (shape ({self.n},) or (m, {self.n}))"
        yy = v.real_array(y, "y", expected)
        if self.n == 1 and yy.ndim == 1:
            yy = yy[:, None]
        if yy.ndim not in (1, 2) or yy.shape[-1] != self.n:
            raise invalid("y", f"an array of shape {yy.shape}", expected)
        return -self.eps * p_norm(yy - x0, self.p) - self.log_norm

    # ------------------------------------------------------------------ privacy
    def _pure(self, distance: object) -> float:
        return self.eps * v.epsilon(distance, "distance")

    def epsilon(self, delta: float = 0.0, *, distance: float = 1.0) -> float:
        """The smallest eps of (eps, delta)-LDP for inputs at ``l_p`` distance ``distance``
        (default 1, the neighbours): ``eps * distance`` at ``delta = 0``, 0 at ``delta = 1``;
        at ``0 < delta < 1`` exact for ``n = 1`` (Laplace: ``max(0, mu + 2 log(1 - delta))``,
        ``mu = eps * distance``), :class:`NotAvailable` for ``n >= 2``."""
        d = v.delta(delta, "delta")
        mu = self._pure(distance)
        if d == 0.0:
            return mu
        if d >= 1.0:
            return 0.0
        if self.n > 1:
            raise NotAvailable(
                f"delta: got {d!r}, expected 0 or 1 for {self!r} (at 0 < delta < 1 its eps lies below the pure "
                f"eps {mu!r} and is not computed; available: epsilon(0.0) = {mu!r}, delta(eps) = 0 for eps >= {mu!r})"
            )
        # the closed form, then the smallest float whose computed delta meets d (the computed
        # profile is flat over many floats at small eps: bracket geometrically, then bisect)
        ok = lambda t: bool(self._laplace_delta(t, mu) <= d)
        if ok(0.0):
            return 0.0
        hi = min(max(0.0, mu + 2.0 * math.log1p(-d)), mu)
        while not ok(hi):  # at most a few ulps: ok(mu) holds
            hi = min(float(np.nextafter(hi, math.inf)), mu)
        lo, step = hi, 2.0**-52
        while ok(lo):
            lo = hi * (1.0 - step) if step < 0.5 else 0.0
            step *= 2.0
        return smallest_ok(ok, lo, hi)

    @staticmethod
    def _laplace_delta(t: ArrayLike, mu: float) -> NDArray[np.float64]:
        """The Laplace profile ``1 - exp((t - mu)/2)`` below mu, 0 at and above it."""
        t = np.asarray(t, dtype=np.float64)
        with np.errstate(over="ignore"):
            return np.where(t < mu, -np.expm1((np.minimum(t, mu) - mu) / 2.0), 0.0)

    def delta(self, eps: ArrayLike, *, distance: float = 1.0) -> float | NDArray[np.float64]:
        """The smallest delta at ``eps`` for inputs at ``l_p`` distance ``distance``: 0 at and
        above the pure eps ``eps_mech * distance``; below it ``1 - exp((eps - mu)/2)`` for
        ``n = 1`` and :class:`NotAvailable` for ``n >= 2``. ``eps`` scalar or array."""
        mu = self._pure(distance)
        e, scalar = v.eps_array(eps)
        below = e < mu
        if np.any(below) and self.n > 1:
            first = float(e[below].reshape(-1)[0])
            raise NotAvailable(
                f"eps: got {first!r}, expected eps >= {mu!r} for {self!r} (below its pure eps, delta > 0 is a "
                f"{self.n}-dimensional integral not computed; available: delta(eps) = 0 for eps >= {mu!r})"
            )
        out = self._laplace_delta(e, mu)
        return float(out) if scalar else out

    def guarantee(self) -> Any:
        """The exact delta curve for ``n = 1``; for ``n >= 2`` the pure eps-DP guarantee
        :class:`ldpsim.privacy.EpsDelta` ``(eps, 0)`` (exact at and above eps, a valid bound
        below it, where the exact curve is not available)."""
        if self.n == 1:
            return super().guarantee()

        return EpsDelta(self.eps, 0.0, label=f"{self!r} (pure eps)")
