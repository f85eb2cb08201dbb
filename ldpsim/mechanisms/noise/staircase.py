"""Staircase noise (Geng-Viswanath 2016): the pure eps-DP family with the least variance."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.noise.base import (
    _FLOAT_MAX,
    MAX_NOISE_SCALE,
    _AtomMechanism,
    _eps_for_scale,
    _geometric_floats,
    _need_pure,
    _positive,
)

#: Largest eps of :class:`Staircase`: its privacy-loss atoms and density use ``b = e^-eps``,
#: which leaves the normal floats past eps = 708.
STAIRCASE_MAX_EPS = 700.0


def _optimal_gamma(eps: float) -> float:
    """Variance-optimal staircase gamma (Geng-Viswanath 2016, IEEE T-IT 62(2), Thm 7):
    ``gamma* = -b/(1-b) + (b - 2b^2 + 2b^4 - b^5)^{1/3} / (2^{1/3} (1-b)^2)``, ``b = e^-eps``
    (clipped to [0, 1]; the tests check it against numerical minimisation of the variance).

    The closed form cancels for small eps (``b - 2b^2 + 2b^4 - b^5 ~ eps^3``, and
    ``(1 - b)^2`` underflows below eps ~ 1e-154): up to eps = 0.5 its Taylor series
    ``1/2 - eps/12 + eps^5/12960 - eps^7/145152 + ...`` (to eps^15, exact to rounding there)."""
    if eps <= 0.5:
        e2 = eps * eps
        # odd powers from eps^5 on (Horner in e2): 1/12960, -1/145152, 1/1866240, -433/10346434560, ...
        tail = eps**5 * (
            1 / 12960
            + e2
            * (
                -1 / 145152
                + e2 * (1 / 1866240 + e2 * (-433 / 10346434560 + e2 * (103 / 30569011200 - e2 * 521 / 1862358220800)))
            )
        )
        return 0.5 - eps / 12.0 + tail
    if eps > 50.0:  # b < 2e-22: gamma* = (b/2)^(1/3) (1 + O(b^(2/3))), in log space (b underflows past 745)
        return min(math.exp(-(eps + math.log(2.0)) / 3.0), 1.0)
    b = math.exp(-eps)
    one_b = -math.expm1(-eps)
    inner = b - 2 * b**2 + 2 * b**4 - b**5
    g = -b / one_b + (max(inner, 0.0)) ** (1.0 / 3.0) / (2.0 ** (1.0 / 3.0) * one_b**2)
    return min(max(g, 0.0), 1.0)


class Staircase(_AtomMechanism):
    """Staircase noise (Geng-Viswanath): ``b = e^-eps``,
    ``a = (1-b) / (2 Delta (gamma + (1-gamma) b))``, density ``a`` on ``[0, gamma Delta)``,
    ``a b`` on ``[gamma Delta, Delta)``, ``f(x) = b^j f(x - j Delta)`` on
    ``[j Delta, (j+1) Delta)``, symmetric. ``gamma=None``: the variance-optimal gamma
    (:func:`_optimal_gamma`, Geng-Viswanath Thm 7).

    Privacy loss at shift Delta: ``+eps, 0, -eps`` with P-masses
    ``P(+eps) = 1/2 + a Delta min(gamma, 1-gamma)``, ``P(0) = a Delta |1 - 2 gamma| b^[gamma<=1/2]``,
    ``P(-eps) = 1 - P(+eps) - P(0)``; R-masses ``e^-L`` times these; so
    ``delta(t) = P(+eps)(1 - e^{t - eps})`` for ``t < eps``, else 0. For other shifts the
    density ratio is piecewise constant and periodic (ratio ``b``) outside ``[0, shift]``: the
    atoms are summed exactly over one period with geometric factor ``1/(1-b)``; the loss
    values are integer multiples of eps (computed exactly). Variance, via
    ``|X| = Delta (G + W)``: ``Delta^2 (E G^2 + 2 E G E W + E W^2)`` with
    ``E G = b/(1-b)``, ``E G^2 = b(1+b)/(1-b)^2``, ``p0 = gamma/(gamma + (1-gamma) b)``,
    ``E W = p0 gamma/2 + (1-p0)(1+gamma)/2``, ``E W^2 = p0 gamma^2/3 + (1-p0)(1+gamma+gamma^2)/3``.
    Worst case: the full-sensitivity shift.
    """

    name = "staircase_noise"
    family = "staircase"
    pure = True

    def __init__(self, eps: float, sensitivity: float = 1.0, gamma: float | None = None) -> None:
        self.eps = _positive(eps, "eps")
        if self.eps > STAIRCASE_MAX_EPS:  # b = e^-eps must stay a normal float for the atoms of the loss
            raise invalid("eps", eps, f"a number in (0, {STAIRCASE_MAX_EPS:g}] for the staircase mechanism")
        self.sensitivity = _positive(sensitivity, "sensitivity")
        _eps_for_scale(self.eps, self.sensitivity, "staircase")
        if gamma is None:
            gamma = _optimal_gamma(self.eps)
        else:
            g = v.as_float(gamma, "gamma", "a number in [0, 1] or None")
            if not 0.0 <= g <= 1.0:
                raise invalid("gamma", gamma, "a number in [0, 1] or None")
            gamma = g
        self.gamma = float(gamma)
        self.b = math.exp(-self.eps)
        self._one_b = -math.expm1(-self.eps)
        D = self.sensitivity
        # the steps gamma D and the normalising width D (gamma + (1 - gamma) b) must be normal
        # floats (a subnormal sensitivity divided a by 0: ZeroDivisionError, and a = 1/(2 D ...)
        # overflowed the loss atoms), and the number of steps G ~ Exp/eps a finite one
        width = self.gamma + (1.0 - self.gamma) * self.b
        if not D * width >= sys.float_info.min:
            raise invalid(
                "sensitivity",
                sensitivity,
                f"a sensitivity >= {sys.float_info.min / width:.4g} at eps = "
                f"{self.eps:g} (the staircase's steps, sensitivity * {width:.4g}, must be normal floats)",
            )
        if not 1.0 / self.eps <= MAX_NOISE_SCALE:
            raise invalid(
                "eps",
                eps,
                f"eps >= {1.0 / MAX_NOISE_SCALE:.4g} for the staircase mechanism (its number of "
                "steps, about 1/eps, must be a float)",
            )
        self.a = self._one_b / (2.0 * D * width)
        self._cache: dict[float, tuple] = {}

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "sensitivity": self.sensitivity, "gamma": self.gamma}

    def _exponent(self, x: NDArray[np.float64]) -> NDArray[np.int64]:
        """m(x) with f(x) = a b^m(x)."""
        D = self.sensitivity
        ax = np.abs(x)
        j = np.floor(ax / D)
        r = ax - j * D
        return (j + (r >= self.gamma * D)).astype(np.int64)

    def density(self, x: ArrayLike) -> NDArray[np.float64]:
        """The staircase density."""
        m = self._exponent(np.asarray(x, dtype=np.float64))
        return self.a * np.exp(-self.eps * m)

    @property
    def _log_a(self) -> float:
        """log a = log(1 - b) - log(2 Delta) - log(gamma + (1 - gamma) b), in log space (b = e^-eps
        underflows for eps > 745, where ``a`` itself may overflow)."""
        g = self.gamma
        log_g = math.log(g) if g > 0 else -math.inf
        log_rest = math.log1p(-g) - self.eps if g < 1 else -math.inf
        return math.log(self._one_b) - math.log(2.0 * self.sensitivity) - float(np.logaddexp(log_g, log_rest))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(a b^m(y)) = log a - eps m(y); m(y) as in _exponent, in float (no int overflow)
        D = self.sensitivity
        fin = np.isfinite(y)
        ay = np.abs(np.where(fin, y, 0.0))
        j = np.floor(ay / D)
        r = ay - j * D
        m = j + (r >= self.gamma * D)
        return np.where(fin, self._log_a - self.eps * m, -np.inf)

    def _pieces(self, lo: float, hi: float, shift: float) -> tuple[NDArray, NDArray]:
        D, g = self.sensitivity, self.gamma
        js = np.arange(math.floor((lo - shift) / D) - 2, math.ceil(hi / D) + 3, dtype=np.float64)
        base = np.concatenate([js * D, js * D + g * D, js * D - g * D])
        pts = np.concatenate([base, base + shift, [lo, hi]])
        # exact duplicates only: a spurious piece one ulp wide (two breakpoints equal in exact
        # arithmetic, rounded apart) carries negligible mass and a genuine loss value, whereas
        # merging by a tolerance would lose genuine thin steps (gamma near 0 or 1)
        pts = np.unique(pts[(pts >= lo) & (pts <= hi)])
        return pts[:-1], np.diff(pts)

    def _atoms(self, shift: float):
        if shift in self._cache:
            return self._cache[shift]
        D = self.sensitivity
        ns, Ps, Rs = [], [], []
        for lo, hi, weight in ((-D, 0.0, 1.0 / self._one_b), (0.0, shift, 1.0), (shift, shift + D, 1.0 / self._one_b)):
            if hi <= lo:
                continue
            start, length = self._pieces(lo, hi, shift)
            mid = start + length / 2.0
            mp = self._exponent(mid)
            mr = self._exponent(mid - shift)
            ns.append(mr - mp)
            # a b^m in log space: a ~ e^eps / 2 for gamma = 0, whose product with b^2 would underflow
            log_w = math.log(weight) + self._log_a
            Ps.append(np.exp(log_w - self.eps * mp) * length)
            Rs.append(np.exp(log_w - self.eps * mr) * length)
        n = np.concatenate(ns)
        P = np.concatenate(Ps)
        R = np.concatenate(Rs)
        uniq, inv = np.unique(n, return_inverse=True)
        res = (uniq * self.eps, np.bincount(inv, weights=P), np.bincount(inv, weights=R))
        if len(self._cache) < 64:
            self._cache[shift] = res
        return res

    def _log_variance(self) -> float:
        return self._log_variance_of(self.gamma)

    def _variance_direct(self) -> float:
        return self._variance_of(self.gamma)

    def _variance_refusal(self) -> tuple[str, float, str]:
        return (
            "eps",
            self.eps,
            f"eps >= about {self.sensitivity * math.sqrt(2.0 / _FLOAT_MAX):.3g} (variance ~ 2 (sensitivity/eps)^2)",
        )

    def _moments(self, gamma: float) -> tuple[float, float]:
        p0 = gamma / (gamma + (1.0 - gamma) * self.b)
        EW = p0 * gamma / 2.0 + (1.0 - p0) * (1.0 + gamma) / 2.0
        EW2 = p0 * gamma**2 / 3.0 + (1.0 - p0) * (1.0 + gamma + gamma**2) / 3.0
        return EW, EW2

    def _variance_of(self, gamma: float) -> float:
        b, one_b, D = self.b, self._one_b, self.sensitivity
        if math.log(one_b) < -300.0:  # (1 - b)^2 underflows: through the log form
            return math.exp(self._log_variance_of(gamma))
        EW, EW2 = self._moments(gamma)
        EG = b / one_b
        EG2 = b * (1.0 + b) / one_b**2
        return D * D * (EG2 + 2.0 * EG * EW + EW2)

    def _log_variance_of(self, gamma: float) -> float:
        """log of the variance with the factor ``1/(1 - b)^2`` taken out (it overflows for eps
        below ~1e-154): ``D^2 (b(1+b) + 2 b (1-b) EW + (1-b)^2 EW2) / (1-b)^2``."""
        b, one_b, D = self.b, self._one_b, self.sensitivity
        EW, EW2 = self._moments(gamma)
        inner = b * (1.0 + b) + 2.0 * b * one_b * EW + one_b * one_b * EW2
        return 2.0 * math.log(D) + math.log(inner) - 2.0 * math.log(one_b)

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        g, b = self.gamma, self.b
        sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
        G = _geometric_floats(self.eps, self._one_b, size, rng)
        U = rng.random(size)
        p0 = g / (g + (1.0 - g) * b)
        B = rng.random(size) >= p0  # B = 1 with probability 1 - p0
        inner = np.where(B, G + g + (1.0 - g) * U, G + g * U)
        return sign * self.sensitivity * inner

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Staircase":
        _need_pure(delta, "Staircase")
        return cls(eps, sens)
