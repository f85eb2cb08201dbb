"""Network delays: latency laws with the integrals the exact aggregate mode needs.

A client that arrives at a time uniform on ``[a, b]`` and whose report takes latency
``L`` is delivered by time ``t`` with probability ``(G(t - a) - G(t - b)) / (b - a)``
where ``G(s) = int_0^s F_L(u) du``; each law below gives ``F_L`` and ``G`` in closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats


@dataclass(frozen=True)
class Latency:
    """Base class: a latency law on ``[0, inf)``."""

    def sample(self, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        raise NotImplementedError

    def cdf(self, s: ArrayLike) -> NDArray[np.float64]:
        raise NotImplementedError

    def integrated_cdf(self, s: ArrayLike) -> NDArray[np.float64]:
        """``G(s) = int_0^s F(u) du`` (0 for s <= 0)."""
        raise NotImplementedError

    def quantile(self, p: float) -> float:
        raise NotImplementedError

    def delivered_by(self, t: ArrayLike, start: float, stop: float) -> NDArray[np.float64]:
        """P(arrival + latency <= t) for an arrival uniform on [start, stop] (a point if equal)."""
        t = np.asarray(t, dtype=np.float64)
        if stop <= start:
            return self.cdf(t - start)
        return np.clip((self.integrated_cdf(t - start) - self.integrated_cdf(t - stop)) / (stop - start), 0.0, 1.0)


@dataclass(frozen=True)
class ConstantLatency(Latency):
    value: float

    def sample(self, size, rng):
        return np.full(size, self.value)

    def cdf(self, s):
        return (np.asarray(s, dtype=np.float64) >= self.value).astype(np.float64)

    def integrated_cdf(self, s):
        return np.maximum(np.asarray(s, dtype=np.float64) - self.value, 0.0)

    def quantile(self, p):
        return self.value


@dataclass(frozen=True)
class ExponentialLatency(Latency):
    mean: float

    def sample(self, size, rng):
        return rng.exponential(self.mean, size)

    def cdf(self, s):
        s = np.maximum(np.asarray(s, dtype=np.float64), 0.0)
        return -np.expm1(-s / self.mean)

    def integrated_cdf(self, s):
        s = np.maximum(np.asarray(s, dtype=np.float64), 0.0)
        return s + self.mean * np.expm1(-s / self.mean)

    def quantile(self, p):
        return -self.mean * math.log1p(-p)


@dataclass(frozen=True)
class LognormalLatency(Latency):
    """``log L ~ Normal(log median, sigma^2)``."""

    median: float
    sigma: float

    def sample(self, size, rng):
        return self.median * np.exp(self.sigma * rng.standard_normal(size))

    def _z(self, s):
        s = np.asarray(s, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(s > 0, (np.log(np.where(s > 0, s, 1.0)) - math.log(self.median)) / self.sigma, -np.inf)

    def cdf(self, s):
        return special.ndtr(self._z(s))

    def integrated_cdf(self, s):
        # int_0^s F = s F(s) - E[L; L <= s],  E[L; L <= s] = median e^{sigma^2/2} Phi(z - sigma)
        s = np.asarray(s, dtype=np.float64)
        z = self._z(s)
        partial = self.median * math.exp(self.sigma**2 / 2) * special.ndtr(z - self.sigma)
        return np.where(s > 0, s * special.ndtr(z) - partial, 0.0)

    def quantile(self, p):
        return float(self.median * math.exp(self.sigma * stats.norm.ppf(p)))
