"""Accurate log binomial probabilities for very large n (Loader's saddle-point form).

``gammaln(n + 1) - gammaln(l + 1) - gammaln(n - l + 1)`` loses about ``log10(n log n)``
digits to cancellation (for n = 10^7 the terms are ~1.5e8 and the result is off by ~1e-8
relative), which would ruin composition at k in the millions. Loader (2000) writes

    log b(x; n, p) = stirlerr(n) - stirlerr(x) - stirlerr(n - x)
                     - bd0(x, n p) - bd0(n - x, n q) + 0.5 log(n / (2 pi x (n - x)))

with ``stirlerr(m) = log m! - log(sqrt(2 pi m) (m/e)^m)`` (small, computed from its series)
and ``bd0(x, M) = x log(x/M) + M - x`` (computed by a series when x is close to M), so
every piece is small and the result is accurate to a few ulps. The mean ``n p`` is passed
through its logarithm so that p = e^-700 works.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

_LOG_2PI = float(np.log(2.0 * np.pi))
_S0, _S1, _S2, _S3, _S4 = 1.0 / 12, 1.0 / 360, 1.0 / 1260, 1.0 / 1680, 1.0 / 1188


def stirlerr(m: np.ndarray) -> np.ndarray:
    """``log m! - (m + 1/2) log m + m - log(2 pi)/2`` for integers m >= 1 (vectorised)."""
    m = np.asarray(m, dtype=np.float64)
    out = np.empty_like(m)
    small = m <= 15
    ms = m[small]
    out[small] = gammaln(ms + 1.0) - (ms + 0.5) * np.log(ms) + ms - 0.5 * _LOG_2PI
    mb = m[~small]
    inv2 = 1.0 / (mb * mb)
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 * inv2) * inv2) * inv2) * inv2) / mb
    return out


def bd0(x: np.ndarray, log_mean: np.ndarray | float) -> np.ndarray:
    """``x log(x / M) + M - x`` with ``M = exp(log_mean)``, accurate near x = M (x >= 1)."""
    x = np.asarray(x, dtype=np.float64)
    log_mean = np.broadcast_to(np.asarray(log_mean, dtype=np.float64), x.shape)
    with np.errstate(over="ignore"):
        mean = np.exp(log_mean)
    out = x * (np.log(x) - log_mean) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    if np.any(near):
        xn, mn = x[near], mean[near]
        v = (xn - mn) / (xn + mn)
        s = (xn - mn) * v
        ej = 2.0 * xn * v
        v2 = v * v
        for j in range(1, 40):  # |v| < 1/21 so 40 terms reach far below an ulp
            ej = ej * v2
            term = ej / (2 * j + 1)
            s = s + term
            if np.all(np.abs(term) <= 1e-18 * np.abs(s)):  # every series has converged (each
                break  # term shrinks by v^2 < 1/441, so the rest is below 1e-20 |s|)
        out[near] = s
    return out


def log_pmf(x: np.ndarray, n: int, log_p: float, log_q: float) -> np.ndarray:
    """log P(Bin(n, p) = x) for integer arrays 0 <= x <= n, with p, q = 1 - p given as logs."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    lo = x == 0
    hi = x == n
    out[lo] = n * log_q
    out[hi] = n * log_p
    mid = ~(lo | hi)
    if np.any(mid):
        xm = x[mid]
        ym = n - xm
        log_n = np.log(float(n))
        out[mid] = (
            stirlerr(np.array([float(n)]))[0]
            - stirlerr(xm)
            - stirlerr(ym)
            - bd0(xm, log_n + log_p)
            - bd0(ym, log_n + log_q)
            + 0.5 * (log_n - _LOG_2PI - np.log(xm) - np.log(ym))
        )
    if n == 0:
        out[:] = 0.0
    return out
