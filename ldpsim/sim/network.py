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
from scipy import integrate, special, stats


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

    def expected_max(self, n: int) -> float:
        """``E[max of n i.i.d. latencies]`` (0 for n = 0), in closed form or as an integral
        that stays well-conditioned for heavy tails."""
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

    def expected_max(self, n):
        return float(self.value) if n > 0 else 0.0


@dataclass(frozen=True)
class ExponentialLatency(Latency):
    mean: float

    def sample(self, size, rng):
        return rng.exponential(self.mean, size)

    def cdf(self, s):
        s = np.maximum(np.asarray(s, dtype=np.float64), 0.0)
        with np.errstate(over="ignore"):  # s / mean = inf for a tiny mean: the CDF is 1
            return -np.expm1(-s / self.mean)

    def integrated_cdf(self, s):
        s = np.maximum(np.asarray(s, dtype=np.float64), 0.0)
        with np.errstate(over="ignore"):
            return s + self.mean * np.expm1(-s / self.mean)

    def quantile(self, p):
        return -self.mean * math.log1p(-p)

    def expected_max(self, n):
        # the max of n exponentials is a sum of exponentials of means mean/n, ..., mean/1: mean * H_n
        return float(self.mean * (special.digamma(n + 1) + np.euler_gamma)) if n > 0 else 0.0


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

    def expected_max(self, n):
        # E[max] = int median e^{sigma z} n Phi(z)^{n-1} phi(z) dz; with z = u + sigma this is
        # median e^{sigma^2/2} E[n Phi(U + sigma)^{n-1}], U standard normal: a bounded, smooth
        # integrand whatever sigma (a direct integral of 1 - F^n meets a tail too long for quad)
        if n == 0:
            return 0.0
        sigma = self.sigma

        def f(u: float) -> float:
            return (
                n
                * math.exp((n - 1) * float(special.log_ndtr(u + sigma)))
                * math.exp(-u * u / 2)
                / math.sqrt(2 * math.pi)
            )

        val, _ = integrate.quad(f, -np.inf, np.inf, limit=200)
        return float(self.median * math.exp(sigma**2 / 2) * val)
