"""Two-sided geometric noise for integer queries: the discrete Laplace, pure eps-DP."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.noise.base import (
    _FLOAT_MAX,
    _AtomMechanism,
    _eps_for_scale,
    _geometric_floats,
    _need_pure,
    _positive,
)
from ldpsim.privacy.pld import MAX_ATOMS

#: Largest sensitivity (and shift): integer queries and integer noise are exact in doubles up
#: to 2^53, and so are the loss atoms' indices.
MAX_SENSITIVITY = 2**53


def _integer_shift(value: object, name: str) -> int:
    s = v.integer(value, name, minimum=1)
    if s > MAX_SENSITIVITY:
        raise invalid(name, value, "an integer in 1..2^53 (integer queries and noise are exact in doubles up to 2^53)")
    return s


class Geometric(_AtomMechanism):
    """Two-sided geometric noise on the integers: ``p(z) = (1-a)/(1+a) a^|z|``,
    ``a = e^{-eps/sensitivity}``, integer sensitivity; eps-DP at the full shift.

    Privacy loss at integer shift s: ``(eps/D)(|z-s| - |z|)``, i.e. ``(eps/D) s`` for
    ``z <= 0`` (P-mass ``1/(1+a)``, R-mass ``a^s/(1+a)``), ``(eps/D)(s - 2z)`` for
    ``0 < z < s`` (P-mass ``c a^z``, R-mass ``c a^{s-z}``, ``c = (1-a)/(1+a)``), and
    ``-(eps/D) s`` for ``z >= s`` (P-mass ``a^s/(1+a)``, R-mass ``1/(1+a)``) -- geometric
    series; at ``s = D`` the values are ``eps (D - 2z)/D`` clipped at ``+-eps``.
    Variance ``2a/(1-a)^2`` (``1/(2 sinh^2(eps/2))`` at sensitivity 1). Worst case: the
    full-sensitivity shift. The trade-off randomises at each atom (piecewise linear).
    """

    name = "geometric"
    family = "geometric"
    pure = True

    def __init__(self, eps: float, sensitivity: int = 1) -> None:
        self.eps = _positive(eps, "eps")
        self.sensitivity = Geometric._check_sensitivity(sensitivity)
        _eps_for_scale(self.eps, self.sensitivity, "geometric")
        self.log_a = -self.eps / self.sensitivity
        self.a = math.exp(self.log_a)
        self._one_a = -math.expm1(self.log_a)
        self._cache: dict[int, tuple] = {}

    @classmethod
    def _check_sensitivity(cls, sensitivity: object) -> int:
        return _integer_shift(sensitivity, "sensitivity")

    def _params(self) -> dict[str, Any]:
        return {"eps": self.eps, "sensitivity": self.sensitivity}

    def _shift(self, shift: object) -> float:
        if shift is None:
            return self.sensitivity
        return _integer_shift(shift, "shift")

    def pmf(self, z: ArrayLike) -> NDArray[np.float64]:
        z = np.asarray(z)
        return self._one_a / (1.0 + self.a) * np.exp(self.log_a * np.abs(z))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log pmf: log(1-a) - log(1+a) + log(a) |z| on the integers, -inf elsewhere
        z = np.abs(y)
        integer = np.isfinite(z) & (np.floor(z) == z)
        c = math.log(self._one_a) - math.log1p(self.a)
        return np.where(integer, c + self.log_a * np.where(integer, z, 0.0), -np.inf)

    def _log_atoms(self, shift: float):
        # log masses: a^s underflows for eps/D * s past 745 (R(+eps) = a^s/(1+a) is tiny, not 0,
        # and the loss stays bounded by eps: in linear scale it looked like mass without counterpart)
        s = int(shift)
        if s in self._cache:
            return self._cache[s]
        if s + 1 > MAX_ATOMS:
            name = "sensitivity" if s == self.sensitivity else "shift"
            raise invalid(
                name,
                s,
                f"an integer <= {MAX_ATOMS - 1:,} for the privacy-loss atoms (pld, tradeoff): the law has "
                f"{name} + 1 atoms (delta and epsilon are closed forms at every {name} up to 2^53)",
            )
        la, D = self.log_a, self.sensitivity
        l1a = math.log1p(self.a)
        lc = math.log(self._one_a) - l1a
        z = np.arange(1, s, dtype=np.float64)
        n = np.concatenate([[s], s - 2 * z, [-s]]).astype(np.float64)
        log_p = np.concatenate([[-l1a], lc + la * z, [la * s - l1a]])
        log_r = np.concatenate([[la * s - l1a], lc + la * (s - z), [-l1a]])
        order = np.argsort(n, kind="stable")
        res = (self.eps * (n[order] / D), log_p[order], log_r[order])
        if len(self._cache) < 64:
            self._cache[s] = res
        return res

    def _atoms(self, shift: float):
        L, log_p, log_r = self._log_atoms(shift)
        return L, np.exp(log_p), np.exp(log_r)

    def _loss_sup(self, shift: float) -> float:
        # the atom z <= 0 (P-mass 1/(1+a) > 0) carries the largest loss, eps s / D
        return self.eps * (float(int(shift)) / self.sensitivity)

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        s = int(shift)
        if s + 1 <= MAX_ATOMS:
            return super()._log_delta(t, shift)
        return self._log_delta_closed(np.asarray(t, dtype=np.float64), s)

    def _log_delta_closed(self, t: NDArray[np.float64], s: int) -> NDArray[np.float64]:
        """``log delta(t)`` at shift ``s`` from the geometric series, no atom table: with
        ``r = eps/D`` the atoms ``z = 0..m`` with loss ``r (s - 2z) > t`` give ``delta =
        (1 - a^m) + a^m (1 - e^u)/(1 + a)``, ``u = t - r (s - 2m) in [-2r, 0)`` (the sum of
        ``P_z - e^t R_z`` over them; every part >= 0, no cancellation)."""
        r = self.eps / self.sensitivity
        sup = self._loss_sup(s)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            below = t < sup
            tt = np.where(below, t, 0.0)
            gap = tt - sup  # < 0 where below; exact near sup
            m = np.clip(np.ceil(-gap / (2.0 * r)) - 1.0, 0.0, float(s - 1))
            m = np.where((gap + 2.0 * m * r >= 0.0) & (m > 0), m - 1.0, m)
            up = (m + 1.0 <= s - 1) & (gap + 2.0 * (m + 1.0) * r < 0.0)
            m = np.where(up, m + 1.0, m)
            u = np.minimum(gap + 2.0 * m * r, 0.0)
            first = np.log(-np.expm1(-r * m))  # log(1 - a^m); -inf at m = 0
            second = -r * m + np.log(-np.expm1(u)) - math.log1p(self.a)
            out = np.logaddexp(first, second)
        return np.where(below, out, -np.inf)

    def _log_variance(self) -> float:
        return math.log(2.0) + self.log_a - 2.0 * math.log(self._one_a)

    def _variance_direct(self) -> float:
        return 2.0 * self.a / self._one_a**2

    def _variance_refusal(self) -> tuple[str, float, str]:
        return (
            "eps",
            self.eps,
            f"eps >= about {self.sensitivity * math.sqrt(2.0 / _FLOAT_MAX):.3g} (variance ~ 2 (sensitivity/eps)^2)",
        )

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        rate, p = -self.log_a, self._one_a
        return _geometric_floats(rate, p, size, rng) - _geometric_floats(rate, p, size, rng)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Geometric":
        _need_pure(delta, "Geometric")
        return cls(eps, int(sens))
