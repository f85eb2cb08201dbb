"""Laplace noise ``Lap(scale)``: the pure eps-DP family of real-valued queries."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms.noise.base import (
    _FLOAT_MAX,
    _SQRT2,
    NoiseMechanism,
    _eps_for_scale,
    _need_pure,
    _positive,
    _scale,
)
from ldpsim.privacy.accountant import Accountant

#: ``calibrate(..., compositions=k)`` composes Laplace's own privacy-loss law up to this k
#: (about a second at the bound); beyond it the worst case (``method="worst_case"``), whose
#: excess noise falls with k (0.12% at k = 1000).
LAPLACE_EXACT_MAX_COMPOSITIONS = 1000
#: The largest lattice step (in privacy loss) of that calibration: dp-accounting's default
#: ``value_discretization_interval``, so its pessimistic discretisation is never finer than ours.
CALIBRATION_STEP = 1e-4
#: Secant steps of the calibration's polish on its finer lattice, and that lattice's points
#: per k releases (``mu / n`` with ``n = _POLISH_POINTS / k``).
_POLISH_STEPS = 6
_POLISH_POINTS = 2**16


class Laplace(NoiseMechanism):
    """Laplace noise ``Lap(scale)`` (density ``exp(-|x|/scale)/(2 scale)``).

    With ``mu = shift/scale``: ``delta(eps) = 1 - exp((eps - mu)/2)`` for ``eps < mu``, else 0
    (pure ``mu``-DP); trade-off ``1 - e^mu alpha`` (``alpha < e^-mu/2``),
    ``e^-mu/(4 alpha)`` (up to 1/2), ``e^-mu (1 - alpha)`` beyond; variance ``2 scale^2``.
    Worst case: the full-sensitivity shift.
    """

    name = "laplace"
    family = "laplace"
    pure = True

    def __init__(self, scale: float, sensitivity: float = 1.0) -> None:
        self.scale = _scale(scale, "scale")
        self.sensitivity = _positive(sensitivity, "sensitivity")

    def _params(self) -> dict[str, Any]:
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    def _log_delta(self, t: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        mu = shift / self.scale
        with np.errstate(all="ignore"):
            val = np.log(-np.expm1(np.minimum(t - mu, 0.0) / 2.0))
        return np.where(t < mu, val, -np.inf)

    def _loss_sup(self, shift: float) -> float:
        return shift / self.scale

    def _tradeoff(self, a: NDArray[np.float64], shift: float) -> NDArray[np.float64]:
        # in logs: e^mu overflows past mu = 709.78 (and e^mu * 0 was NaN)
        mu = shift / self.scale
        with np.errstate(all="ignore"):
            log_a = np.log(a)
            low = -np.expm1(np.minimum(mu + log_a, 1.0))
            mid = np.exp(-mu - np.log(4.0) - log_a)
            high = np.exp(-mu) * (1.0 - a)
        return np.where(log_a < -mu - math.log(2.0), low, np.where(a <= 0.5, mid, high))

    def _log_pdf(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        # log(exp(-|y|/scale) / (2 scale))
        return -np.abs(y) / self.scale - math.log(2.0 * self.scale)

    def _log_variance(self) -> float:
        return math.log(2.0) + 2.0 * math.log(self.scale)

    def _variance_direct(self) -> float:
        return 2.0 * self.scale**2

    def _variance_refusal(self) -> tuple[str, float, str]:
        return "scale", self.scale, f"scale <= {math.sqrt(_FLOAT_MAX / 2.0):.4g}"

    @property
    def std(self) -> float:
        return _SQRT2 * self.scale  # finite: scale <= MAX_NOISE_SCALE

    def _sample(self, size: Any, rng: np.random.Generator) -> NDArray[np.float64]:
        return rng.laplace(0.0, self.scale, size)

    @classmethod
    def _calibrate_single(cls, eps: float, delta: float, sens: float) -> "Laplace":
        _need_pure(delta, "Laplace")
        scale = _eps_for_scale(eps, sens, "Laplace")
        while sens / scale > eps:  # rounding: make the pure eps <= the target
            scale = float(np.nextafter(scale, math.inf))
        return cls(scale, sens)

    @classmethod
    def _calibrate_exact_composed(cls, eps: float, delta: float, sens: float, compositions: int) -> "Laplace":
        """The least scale whose k-fold composition of Laplace's own privacy-loss law meets
        (eps, delta), k = ``compositions``, below the worst-case scale (``method="worst_case"``,
        the optimal composition of eps0-DP mechanisms), which brackets it from above.

        ``delta(scale)`` is the :class:`ldpsim.privacy.Accountant`'s: Laplace's pair composed k
        times on the lattice ``mu / n`` (``mu = sensitivity/scale``, its pure eps, on the
        lattice; the same n for every scale, so the result is smooth in it), an upper bound on
        the exact delta. First Brent's method on ``log delta`` in ``log scale`` with the lattice
        no coarser than the accountant's default and :data:`CALIBRATION_STEP`; then up to
        :data:`_POLISH_STEPS` secant steps on a lattice of about ``2^16 / k`` points per ``mu``
        (there the delta reached is within about 1e-8 of the target; up to 2e-4 when k mu is
        just above eps, where the accountant's bound is looser). The scale returned is the least the
        accountant certified, so its exact composed delta is at most delta, never with more
        noise than the worst case. ``delta = 0`` (basic composition is exact) and k above
        :data:`LAPLACE_EXACT_MAX_COMPOSITIONS` give the worst case."""
        k = compositions
        worst = cast(Laplace, cls._calibrate_worst_case(eps, delta, sens, k))  # cls(...) inside: a Laplace
        if delta == 0.0 or k > LAPLACE_EXACT_MAX_COMPOSITIONS:
            return worst
        log_target = math.log(delta)
        mu0 = float(worst.epsilon(0.0))
        best = [worst.scale]  # the least scale certified so far

        def excess(log_scale: float, n: int) -> float:
            """log delta - log target at the scale e^log_scale, on the lattice mu / n."""
            scale = math.exp(log_scale)
            mech = cls(scale, sens)
            d = float(Accountant(step=float(mech.epsilon(0.0)) / n).add(mech, times=k).delta(eps))
            if d <= delta and scale < best[0]:
                best[0] = scale
            return (math.log(d) if d > 0 else log_target - 1e3) - log_target

        try:
            # the accountant's default lattice has mu = n0 steps; the bracket spans 2% in mu
            # step: not None, Laplace's loss law is put on a lattice
            n0 = max(1, round(mu0 / float(Accountant().add(worst).step)))  # type: ignore[arg-type]
            n1 = max(n0, math.ceil(1.05 * mu0 / CALIBRATION_STEP))
            seen: list[tuple[float, float]] = []  # (log scale, excess) of the root finding

            def g(x: float) -> float:
                seen.append((x, excess(x, n1)))
                return seen[-1][1]

            hi = math.log(worst.scale)
            if g(hi) > 0:  # the accountant's pessimism exceeds the worst case's slack
                return worst
            lo = hi + math.log(0.98)
            for _ in range(60):
                if g(lo) > 0:
                    break
                hi, lo = lo, lo + math.log(0.9)
            else:  # pragma: no cover - delta grows without bound as the scale falls
                return cls(best[0], sens)
            n2 = math.ceil(_POLISH_POINTS / k)
            polish = n2 >= 1.5 * n1
            from scipy import (
                optimize,
            )  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

            optimize.brentq(g, lo, hi, xtol=1e-8 if polish else 1e-13, rtol=1e-15, maxiter=80)
            if polish:  # on the finer lattice, from the slope of the two points nearest the root
                (xa, ga), (xb, gb) = sorted(seen, key=lambda p: abs(p[1]))[:2]
                slope = (ga - gb) / (xa - xb) if xa != xb else -1.0
                x = math.log(best[0])
                gx = excess(x, n2)
                for _ in range(_POLISH_STEPS):
                    if not slope < 0 or -1e-8 < gx <= 0:
                        break
                    x_new = x - (gx + 2e-9) / slope  # aim just inside the target
                    g_new = excess(x_new, n2)
                    if x_new != x and g_new != gx:
                        slope = (g_new - gx) / (x_new - x)
                    x, gx = x_new, g_new
        except (LdpSimError, RuntimeError):  # the accountant refused (a lattice too large), or no convergence
            pass
        return worst if best[0] >= worst.scale else cls(best[0], sens)
