"""High-dimensional noise addition ``M(D) = f(D) + t X`` with norm-power noise (docs/theory.md sec. 8).

``X`` has density proportional to ``exp(-||x||_p^alpha)`` on R^n (``p`` in [1, inf], ``alpha >= 1``).
Exact Fisher information and mean squared norm, the uncertainty-principle product
``err * mu^2 = ||I||_2 E||X||_2^2 >= n``, samples of the privacy loss and its distance to Gaussian DP.

The ``l_p`` Laplace mechanism :class:`NormLaplace` (``alpha = 1``, scale ``1/eps``) lives in
:mod:`ldpsim.mechanisms.norm_laplace` and is re-exported here.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from ldpsim import _validate
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.norm_laplace import CHUNK, NormLaplace, norm_p, norm_power_rows, norm_power_sample
from ldpsim.mechanisms.norm_laplace import p_norm as _p_norm

__all__ = [
    "NormPowerNoise",
    "NormLaplace",
    "empirical_tradeoff",
    "gdp_distance",
    "random_direction",
    "axis_direction",
]

#: Elements per chunk when sampling (size * n entries are generated chunk by chunk).
_CHUNK = CHUNK


class NormPowerNoise:
    """Noise with density proportional to ``exp(-||x||_p^alpha)`` on R^n."""

    def __init__(self, n: int, p: float, alpha: float):
        self.n = _validate.integer(n, "n", minimum=1)
        self.p = norm_p(p)
        a_val = _validate.real(alpha, "alpha", "a finite number >= 1")
        if not (1 <= a_val < math.inf):
            raise invalid("alpha", alpha, "a finite number >= 1")
        self.alpha = a_val

    def __repr__(self) -> str:
        return f"NormPowerNoise(n={self.n}, p={self.p!r}, alpha={self.alpha!r})"

    # ----------------------------------------------------------------- sampling
    def _sample_chunk(self, rows: int, gen: np.random.Generator) -> NDArray[np.float64]:
        return norm_power_rows(self.n, self.p, self.alpha, rows, gen)

    def sample(self, size: int, rng: RNGLike = None) -> NDArray[np.float64]:
        """``size`` i.i.d. draws, shape ``(size, n)``: ``X = R U``, ``R^alpha ~ Gamma(n/alpha)``,
        ``U = G / ||G||_p`` (cone measure), drawn in chunks of about 2^20 entries."""
        return norm_power_sample(self.n, self.p, self.alpha, size, rng)

    # ------------------------------------------------------------ phi and grad
    def _rows(self, x: ArrayLike) -> NDArray[np.float64]:
        arr = _validate.real_array(x, "x", f"real points of dimension {self.n} (shape (n,) or (size, n))")
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.n:
            raise invalid("x", f"an array of shape {arr.shape}", f"shape ({self.n},) or (size, {self.n})")
        return arr

    def phi(self, x: ArrayLike) -> NDArray[np.float64]:
        """``||x||_p^alpha`` per row (a 0-d array for a single point of shape ``(n,)``)."""
        arr = self._rows(x)
        return _p_norm(arr, self.p) ** self.alpha

    def grad_phi(self, x: ArrayLike) -> NDArray[np.float64]:
        """Gradient of ``phi`` per row (defined almost everywhere; 0 at the origin and, for
        p = inf, only the first largest coordinate gets the derivative).

        ``d phi/dx_i = alpha ||x||_p^(alpha-1) (|x_i|/||x||_p)^(p-1) sign(x_i)``."""
        arr = self._rows(x)
        p, alpha = self.p, self.alpha
        norm = _p_norm(arr, p)
        pos = norm > 0
        safe = np.where(pos, norm, 1.0)
        outer = np.where(pos, alpha * safe ** (alpha - 1.0), 0.0)
        if math.isinf(p):
            a = np.abs(arr)
            idx = np.argmax(a, axis=-1)
            g = np.zeros_like(arr)
            picked = np.take_along_axis(np.sign(arr), idx[..., None], axis=-1)
            np.put_along_axis(g, idx[..., None], picked, axis=-1)
        elif p == 1.0:
            g = np.sign(arr)
        else:
            g = np.sign(arr) * (np.abs(arr) / safe[..., None]) ** (p - 1.0)
        return g * outer[..., None]

    # ------------------------------------------------------------ exact moments
    def _log_radius_moment(self, s: float) -> float:
        """``log E[R^s]``, ``R^alpha ~ Gamma(n/alpha)``."""
        return float(special.gammaln((self.n + s) / self.alpha) - special.gammaln(self.n / self.alpha))

    def fisher_norm(self) -> float:
        """``||I||_2`` exactly: ``I = c Id`` by sign and permutation symmetry, with
        ``c = alpha^2 E[R^(2 alpha - 2)] E|U_1|^(2p-2)`` (p = inf: ``E|U_1|^0`` on the argmax only, 1/n)."""
        n, p, alpha = self.n, self.p, self.alpha
        log_c = 2.0 * math.log(alpha) + self._log_radius_moment(2.0 * alpha - 2.0)
        if math.isinf(p):
            log_c -= math.log(n)
        elif p != 1.0:
            log_c += float(
                special.gammaln((2.0 * p - 1.0) / p)
                - special.gammaln(1.0 / p)
                - special.gammaln((n + 2.0 * p - 2.0) / p)
                + special.gammaln(n / p)
            )
        return math.exp(log_c)

    def fisher_norm_mc(self, samples: int, rng: RNGLike = None) -> tuple[float, float]:
        """Monte Carlo estimate of ``c`` (the common diagonal of ``I``): the mean over samples of
        the per-sample average of ``(d phi/dx_i)^2`` over coordinates; returns (estimate, standard error)."""
        samples = _validate.integer(samples, "samples", minimum=2)
        gen = as_generator(rng)
        vals = np.empty(samples)
        step = max(1, _CHUNK // self.n)
        for start in range(0, samples, step):
            stop = min(samples, start + step)
            g = self.grad_phi(self._sample_chunk(stop - start, gen))
            vals[start:stop] = np.einsum("ij,ij->i", g, g) / self.n
        return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(samples))

    def mean_sq_norm(self) -> float:
        """``E||X||_2^2 = E[R^2] E||U||_2^2`` exactly, ``E||U||_2^2 = n E[G_1^2] / E||G||_p^2``
        (p = inf: ``(n + 2)/3``)."""
        n, p = self.n, self.p
        log_r2 = self._log_radius_moment(2.0)
        if math.isinf(p):
            return math.exp(log_r2) * (n + 2.0) / 3.0
        log_u2 = math.log(n) + float(
            special.gammaln(3.0 / p)
            - special.gammaln(1.0 / p)
            - special.gammaln((n + 2.0) / p)
            + special.gammaln(n / p)
        )
        return math.exp(log_r2 + log_u2)

    def scale_for_mu(self, mu: float) -> float:
        """``t = sqrt(||I||_2) / mu``: the scale making the mechanism asymptotically mu-GDP."""
        m = _validate.real(mu, "mu", "a finite number > 0")
        if not (0 < m < math.inf):
            raise invalid("mu", mu, "a finite number > 0")
        return math.sqrt(self.fisher_norm()) / m

    def error_times_mu2(self) -> float:
        """``err * mu^2 = ||I||_2 E||X||_2^2`` (independent of mu; >= n, = n for the Gaussian)."""
        return self.fisher_norm() * self.mean_sq_norm()

    # ------------------------------------------------------------ privacy loss
    def privacy_loss(
        self, v: ArrayLike, t: float, size: int, rng: RNGLike = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Samples of ``L(y) = phi((y - f(D'))/t) - phi((y - f(D))/t)`` with ``f(D') - f(D) = v``:
        under D (``y = f(D) + tX``: ``L = phi(X - v/t) - phi(X)``) and, independently, under D'
        (``y = f(D') + tX``: ``L = phi(X) - phi(X + v/t)``)."""
        vec = _validate.finite_array(v, "v", f"a finite vector of length {self.n}")
        if vec.shape != (self.n,):
            raise invalid("v", v, f"a finite vector of length {self.n}")
        tt = _validate.real(t, "t", "a finite number > 0")
        if not (0 < tt < math.inf):
            raise invalid("t", t, "a finite number > 0")
        size = _validate.integer(size, "size", minimum=0)
        gen = as_generator(rng)
        w = vec / tt
        loss_p = np.empty(size)
        loss_r = np.empty(size)
        step = max(1, _CHUNK // self.n)
        for start in range(0, size, step):
            stop = min(size, start + step)
            x = self._sample_chunk(stop - start, gen)
            loss_p[start:stop] = self.phi(x - w) - self.phi(x)
        for start in range(0, size, step):
            stop = min(size, start + step)
            x = self._sample_chunk(stop - start, gen)
            loss_r[start:stop] = self.phi(x) - self.phi(x + w)
        return loss_p, loss_r


# ------------------------------------------------------------------ f-DP tools
def _loss_array(value: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = _validate.finite_array(value, name, "a non-empty 1-D array of finite losses")
    if arr.ndim != 1 or arr.size == 0:
        raise invalid(name, value, "a non-empty 1-D array of finite losses")
    return arr


def empirical_tradeoff(loss_p: ArrayLike, loss_r: ArrayLike, alphas: ArrayLike) -> NDArray[np.float64]:
    """Type II errors ``beta(alpha)`` of the likelihood-ratio tests that reject D for small L.

    The threshold is the empirical alpha-quantile of ``loss_p``; ties at the threshold are
    broken by randomisation so that the empirical type I error is exactly alpha; ``beta`` is the
    (correspondingly randomised) fraction of ``loss_r`` above the threshold. This is the exact
    trade-off function between the two empirical distributions of L."""
    lp = np.sort(_loss_array(loss_p, "loss_p"))
    lr = np.sort(_loss_array(loss_r, "loss_r"))
    a = _validate.real_array(alphas, "alphas", "levels in [0, 1]")
    if not np.all((a >= 0) & (a <= 1)):
        raise invalid("alphas", alphas, "levels in [0, 1]")
    shape = a.shape
    a = a.ravel()
    m, mr = lp.size, lr.size
    k = np.clip(np.ceil(a * m - 1e-9).astype(np.int64), 1, m)
    thr = lp[k - 1]
    lt = np.searchsorted(lp, thr, side="left") / m
    le = np.searchsorted(lp, thr, side="right") / m
    gamma = np.clip((a - lt) / (le - lt), 0.0, 1.0)  # rejection probability at the threshold
    r_lt = np.searchsorted(lr, thr, side="left") / mr
    r_le = np.searchsorted(lr, thr, side="right") / mr
    beta = (1.0 - r_le) + (1.0 - gamma) * (r_le - r_lt)
    beta = np.where(a <= 0, 1.0, beta)
    return beta.reshape(shape)


def gdp_distance(loss_p: ArrayLike, loss_r: ArrayLike, mu: float, grid: int = 1001) -> dict:
    """Distance of the sampled pair to mu-GDP.

    ``ks``: Kolmogorov-Smirnov distance between ``loss_p`` standardised by its sample mean and
    sd and N(0, 1); ``tradeoff_gap``: max over ``grid`` equally spaced alphas in [0, 1] of
    ``|empirical_tradeoff - G_mu|``, ``G_mu(a) = Phi(Phi^-1(1 - a) - mu)``."""
    lp = _loss_array(loss_p, "loss_p")
    m = _validate.real(mu, "mu", "a finite number >= 0")
    if not (0 <= m < math.inf):
        raise invalid("mu", mu, "a finite number >= 0")
    grid = _validate.integer(grid, "grid", minimum=2)
    sd = float(lp.std(ddof=1)) if lp.size > 1 else 0.0
    if sd > 0:
        ks = float(stats.kstest((lp - lp.mean()) / sd, "norm").statistic)
    else:
        ks = 0.5  # a point mass is at KS distance 1/2 from N(0, 1)
    alphas = np.linspace(0.0, 1.0, grid)
    beta = empirical_tradeoff(lp, loss_r, alphas)
    g = stats.norm.cdf(stats.norm.isf(alphas) - m)
    return {"ks": ks, "tradeoff_gap": float(np.max(np.abs(beta - g)))}


def random_direction(n: int, rng: RNGLike = None) -> NDArray[np.float64]:
    """A uniformly random unit vector in R^n."""
    n = _validate.integer(n, "n", minimum=1)
    gen = as_generator(rng)
    while True:
        z = gen.standard_normal(n)
        norm = float(np.linalg.norm(z))
        if norm > 0:
            return z / norm


def axis_direction(n: int) -> NDArray[np.float64]:
    """The first basis vector ``e_1`` of R^n."""
    n = _validate.integer(n, "n", minimum=1)
    e = np.zeros(n)
    e[0] = 1.0
    return e
