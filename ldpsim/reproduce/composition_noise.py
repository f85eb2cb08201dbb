"""Noise-adding mechanisms under k-fold composition (``ldpsim reproduce composition-noise``).

Kairouz, Oh and Viswanath 2015, Section 4: which noise should be added to each of k query
answers of sensitivity 1? Every number here is an exact privacy-loss computation (no
sampling); ``seed`` and ``instances`` are accepted for the registry's signature and unused.

**View 1 -- the same per-query guarantee (the privacy region).** Each mechanism is pure
``eps0``-DP per query (eps0 = 0.1, k = 30 compositions: the paper's figure setting):

* two-sided geometric noise on integer queries: its privacy loss at the worst shift takes
  only the values ``+-eps0`` (``Geometric.pld``), so its k-fold loss is binomial and its
  composed ``delta(eps)`` should *equal* the optimal composition region of Theorem 3.3
  (``optimal_delta(eps0, 0, k, eps)``): the paper's claim (Section 4.2, proof in its
  Appendix C) that it attains the largest region;
* staircase noise (Geng-Viswanath) with the variance-optimal gamma: loss in
  ``{-eps0, 0, +eps0}`` (an atom at 0 of mass ``a (1 - 2 gamma) b``), composed exactly with
  ``DiscretePLD.self_compose``; with ``gamma = 1/2`` the atom at 0 vanishes and the
  staircase attains the region too;
* Laplace noise ``Lap(1/eps0)``: its loss has atoms at ``+-eps0`` and a continuous part on
  ``(-eps0, eps0)`` with density ``e^{(l - eps0)/2}/4`` under P; :func:`laplace_delta` sums the
  k-fold law in closed form (the continuous parts add like uniforms tilted by ``e^{l/2}``,
  whose j-fold density is a B-spline; mpmath), used for k <= ``LAPLACE_EXACT_MAX_K`` and to
  check :class:`ldpsim.privacy.Accountant`, whose result (an upper bound, relative error about
  1e-6 here) is used beyond;
* Gaussian noise calibrated per query to (eps0, delta0) = (0.1, 1e-3) (analytic
  calibration), against the (eps0, delta0) region: k uses are exactly ``sqrt(k)/sigma``-GDP.

**View 2 -- the same total target.** For a total (eps, delta) after k compositions
(default (0.5, 1e-5), k from 1 to 1000) the least variance each family needs, each
calibrated on its *own* exact composed law (bisection on the per-query parameter; Brent in
log scale then moved to the feasible side), against the paper's sufficient conditions:
Corollary 4.1's per-query budget ``eps0 = eps/sqrt(4k log(e + eps/delta))``,
``delta0 = delta/(2k)``, which gives Laplace variance ``2/eps0^2 = 8k log(e + eps/delta)/eps^2``
and classical Gaussian variance ``2 log(2/delta0)/eps0^2``.

Files: ``region.csv`` (delta(eps_total) per mechanism and the regions), ``variance.csv``
(per k and mechanism: per-query parameter, variance, ratio to the Gaussian's),
``corollary.csv`` (the Corollary 4.1 checks per k), ``summary.csv``,
``composition-noise.png``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray
from scipy import optimize

from ldpsim import _progress as progress
from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.noise import Gaussian, Geometric, Laplace, Staircase
from ldpsim.privacy import GDP, Accountant, optimal_delta, per_query_budget
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

Array = NDArray[np.float64]

NAME = "composition-noise"
#: View 1: per-query pure eps0 and number of compositions (Kairouz et al. 2015's figure setting).
REGION_EPS0, REGION_K = 0.1, 30
#: View 1: the delta0 of the Gaussian's per-query (eps0, delta0) calibration (the figure's delta).
REGION_DELTA0 = 1e-3
#: View 1: the total eps at which the shortfall below the region is tabulated.
REGION_AT = 1.0
#: View 2: total target (eps, delta) (eps <= 0.9, Corollary 4.1's range) and the numbers of compositions.
TARGET_EPS, TARGET_DELTA = 0.5, 1e-5
K_LIST = (1, 3, 10, 30, 100, 300, 1000)
#: Laplace compositions up to this k use the closed form; beyond, the Accountant (upper bound).
LAPLACE_EXACT_MAX_K = 3
#: Geometric attains the region: largest relative difference allowed (rounding of two sums).
SAME = 1e-9
#: Inside the region: largest relative excess allowed (rounding).
INSIDE_TOL = 1e-9
PURE = ("geometric", "staircase_half", "staircase", "laplace")
LABELS = {
    "region": "optimal region (Thm 3.3)",
    "geometric": "geometric (integer queries)",
    "staircase_half": "staircase, gamma = 1/2",
    "staircase": "staircase, variance-optimal gamma",
    "laplace": "Laplace",
    "gaussian": "Gaussian",
    "paper_laplace": "Laplace at the Cor. 4.1 variance",
    "paper_gaussian": "Gaussian at the Cor. 4.1 variance",
}
COLORS = {
    "region": "black",
    "geometric": "tab:green",
    "staircase_half": "tab:olive",
    "staircase": "tab:orange",
    "laplace": "tab:blue",
    "gaussian": "tab:red",
    "paper_laplace": "tab:blue",
    "paper_gaussian": "tab:red",
}
MARKERS = {"laplace": "o-", "staircase": "^-", "geometric": "x-"}
DPI = 110
PNG_META = {"Software": None}


# --------------------------------------------------------------------------- exact Laplace composition
def _spline_tail(j: int, t: Any, lam: Any, e0: Any) -> Any:
    """``int_t^inf g_j(s) e^{lam s} ds`` (mpmath), ``g_j`` the j-fold convolution of the
    indicator of ``(-e0, e0)`` (a B-spline: ``sum_m (-1)^m C(j,m) (s - c_m)_+^{j-1}/(j-1)!``,
    ``c_m = (2m - j) e0``); ``g_0`` is a unit atom at 0."""
    if j == 0:
        return mpmath.mpf(1) if t < 0 else mpmath.mpf(0)
    top = j * e0
    if t >= top:
        return mpmath.mpf(0)
    n = j - 1
    fact = [mpmath.factorial(n) / mpmath.factorial(n - i) for i in range(n + 1)]

    def anti(u: Any) -> Any:  # an antiderivative of u^n e^{lam u}
        return mpmath.exp(lam * u) * mpmath.fsum(
            (-1) ** i * fact[i] * u ** (n - i) / lam ** (i + 1) for i in range(n + 1)
        )

    total = mpmath.mpf(0)
    for m in range(j):
        c = (2 * m - j) * e0
        total += (-1) ** m * mpmath.binomial(j, m) * mpmath.exp(lam * c) * (anti(top - c) - anti(max(t, c) - c))
    return total / mpmath.factorial(n)


def laplace_delta(scale: float, compositions: int, eps: float) -> float:
    """Exact ``delta(eps)`` of ``compositions`` releases of a sensitivity-1 query with
    ``Lap(scale)`` noise (the hockey-stick divergence of the k-fold pair), in closed form.

    With ``e0 = 1/scale`` the loss of one release under P is ``+e0`` with mass 1/2, ``-e0``
    with mass ``e^{-e0}/2`` and continuous on ``(-e0, e0)`` with density ``e^{(l-e0)/2}/4``.
    Conditioning on how many releases land on each part (a multinomial ``(a, b, j)``), the j
    continuous losses have joint density ``4^-j e^{(s - j e0)/2} g_j(s)`` in their sum s, so
    ``delta = sum w_abj int g_j(s) (e^{s/2} - e^{t} e^{-s/2})_+ ds``, ``t = eps - (a - b) e0``:
    two spline tails (:func:`_spline_tail`). mpmath at 40 + 3k digits (the alternating spline
    sums cancel); cost grows like k^3 (about 3 s at k = 30)."""
    k = v.integer(compositions, "compositions", minimum=1)
    with mpmath.workdps(40 + 3 * k):
        e0 = 1 / mpmath.mpf(scale)
        t_tot = mpmath.mpf(eps)
        half = mpmath.mpf(1) / 2
        pa, pb, pc = half, mpmath.exp(-e0) / 2, mpmath.exp(-e0 / 2) / 4
        out = mpmath.mpf(0)
        for a in range(k + 1):
            for b in range(k + 1 - a):
                j = k - a - b
                w = (
                    mpmath.factorial(k)
                    / (mpmath.factorial(a) * mpmath.factorial(b) * mpmath.factorial(j))
                    * pa**a
                    * pb**b
                    * pc**j
                )
                t = t_tot - (a - b) * e0
                out += w * (_spline_tail(j, t, half, e0) - mpmath.exp(t) * _spline_tail(j, t, -half, e0))
        return float(max(out, 0))


# --------------------------------------------------------------------------- composed delta of each family
def composed_delta(family: str, param: float, k: int, eps: Any) -> Any:
    """Exact ``delta(eps)`` of k uses of the family at per-query parameter ``param`` (eps0 for
    the pure families, sigma for the Gaussian). Laplace beyond ``LAPLACE_EXACT_MAX_K``: the
    Accountant's upper bound (relative error ~1e-6; checked against :func:`laplace_delta`)."""
    if family == "geometric":
        return Geometric(param).pld().self_compose(k).delta(eps)
    if family == "staircase":
        return Staircase(param).pld().self_compose(k).delta(eps)
    if family == "staircase_half":
        return Staircase(param, gamma=0.5).pld().self_compose(k).delta(eps)
    if family == "laplace":
        if k <= LAPLACE_EXACT_MAX_K:
            arr = np.atleast_1d(np.asarray(eps, dtype=float))
            out = np.array([laplace_delta(1.0 / param, k, e) for e in arr])
            return float(out[0]) if np.ndim(eps) == 0 else out
        return _laplace_accountant(param, k).delta(eps)
    if family == "gaussian":
        return GDP(math.sqrt(k) / param).delta(eps)
    raise ValueError(family)  # pragma: no cover


@lru_cache(maxsize=256)
def _laplace_accountant(eps0: float, k: int) -> Accountant:
    return Accountant().add(Laplace(1.0 / eps0), times=k)


def variance_of(family: str, param: float) -> float:
    if family == "geometric":
        return Geometric(param).variance
    if family == "staircase":
        return Staircase(param).variance
    if family == "staircase_half":
        return Staircase(param, gamma=0.5).variance
    if family == "laplace":
        return 2.0 / param**2
    if family == "gaussian":
        return param**2
    raise ValueError(family)  # pragma: no cover


def param_for_variance(family: str, variance: float) -> float:
    """The per-query parameter of the family whose noise has the given variance (second view:
    equal variance): sigma, ``eps0 = sqrt(2/V)`` (Laplace), ``2 asinh(1/sqrt(2V))`` (geometric,
    variance ``1/(2 sinh^2(eps0/2))``), a root in eps0 for the staircase (its variance falls with eps0)."""
    if family == "gaussian":
        return math.sqrt(variance)
    if family == "laplace":
        return math.sqrt(2.0 / variance)
    if family == "geometric":
        return 2.0 * math.asinh(1.0 / math.sqrt(2.0 * variance))
    guess = math.sqrt(2.0 / variance)
    f = lambda x: math.log(variance_of(family, math.exp(x))) - math.log(variance)
    return math.exp(optimize.brentq(f, math.log(guess) - 2.0, math.log(guess) + 2.0, xtol=1e-13))


def calibrate(family: str, k: int, eps: float, delta: float) -> float:
    """The per-query parameter with the least noise whose exact k-fold ``delta(eps) <= delta``:
    the largest eps0 for the pure families (delta(eps) increases with eps0), the smallest
    sigma for the Gaussian (``sigma = sqrt(k)/mu``, mu the largest with ``G_mu`` meeting it)."""
    if family == "gaussian":
        return math.sqrt(k) / GDP.for_delta(eps, delta).mu
    ok: Callable[[float], bool] = lambda e0: float(composed_delta(family, e0, k, eps)) <= delta
    lo, hi = eps / k, 2.0 * eps / k  # delta = 0 at eps0 <= eps/k
    while ok(hi):
        lo, hi = hi, 2.0 * hi

    def g(x: float) -> float:
        d = float(composed_delta(family, math.exp(x), k, eps))
        return math.log(max(d, delta * 1e-30)) - math.log(delta)

    x = optimize.brentq(g, math.log(lo), math.log(hi), xtol=1e-10, rtol=1e-12)
    e0 = min(max(math.exp(x), lo), hi)
    while not ok(e0):  # onto the feasible side
        e0 *= 1 - 1e-12
    return e0


# --------------------------------------------------------------------------- view 1: the region
@dataclass
class RegionView:
    eps0: float
    k: int
    delta0: float
    grid: Array
    curves: dict[str, Array]  # family -> delta(eps_total) on grid (pure families, and "region")
    gauss_sigma: float
    gauss: Array  # Gaussian's composed delta on grid
    gauss_region: Array  # OptimalComposition(eps0, delta0, k) on grid
    laplace_exact_at: float  # closed-form Laplace delta at REGION_AT
    laplace_acc_at: float  # the Accountant's
    laplace_acc_err: float  # the Accountant's own error estimate there

    def rel_diff(self, fam: str) -> float:
        reg, d = self.curves["region"], self.curves[fam]
        pos = reg > 1e-300
        return float(np.max(np.abs(d[pos] - reg[pos]) / reg[pos]))

    def excess(self, fam: str) -> float:
        """Largest relative excess over the region (> 0 would be outside it)."""
        reg, d = (self.gauss_region, self.gauss) if fam == "gaussian" else (self.curves["region"], self.curves[fam])
        pos = reg > 1e-300
        return float(max(np.max((d[pos] - reg[pos]) / reg[pos]), np.max(d[~pos], initial=0.0)))

    def at(self, fam: str, eps: float = REGION_AT) -> tuple[float, float]:
        """(delta of the family, delta of its region) at total eps."""
        if fam == "gaussian":
            return float(GDP(math.sqrt(self.k) / self.gauss_sigma).delta(eps)), float(
                optimal_delta(self.eps0, self.delta0, self.k, eps)
            )
        return float(composed_delta(fam, self.eps0, self.k, eps)), float(optimal_delta(self.eps0, 0.0, self.k, eps))


def region_view(eps0: float = REGION_EPS0, k: int = REGION_K, delta0: float = REGION_DELTA0) -> RegionView:
    grid = np.unique(np.concatenate([np.linspace(0.0, k * eps0, 301), eps0 * np.arange(-k, k + 1, 2)]))
    grid = grid[grid >= 0]
    curves = {"region": np.asarray(optimal_delta(eps0, 0.0, k, grid), dtype=float)}
    for fam in PURE:
        if fam == "laplace":
            curves[fam] = np.asarray(_laplace_accountant(eps0, k).delta(grid), dtype=float)
        else:
            curves[fam] = np.asarray(composed_delta(fam, eps0, k, grid), dtype=float)
    sigma = Gaussian.analytic(eps0, delta0).sigma
    gauss = np.asarray(GDP(math.sqrt(k) / sigma).delta(grid), dtype=float)
    greg = np.asarray(optimal_delta(eps0, delta0, k, grid), dtype=float)
    acc = _laplace_accountant(eps0, k)
    return RegionView(
        eps0,
        k,
        delta0,
        grid,
        curves,
        sigma,
        gauss,
        greg,
        laplace_delta(1.0 / eps0, k, REGION_AT),
        float(acc.delta(REGION_AT)),
        float(acc.delta_error(REGION_AT)),
    )


# --------------------------------------------------------------------------- view 2: variance for a target
FAMILIES = ("gaussian", "laplace", "staircase", "geometric")


@dataclass
class VarianceView:
    eps: float
    delta: float
    ks: tuple[int, ...]
    frame: pd.DataFrame  # k, family, param, variance, ratio_to_gaussian
    corollary: pd.DataFrame  # per k: the Corollary 4.1 checks
    crossover: int | None = None  # smallest k with Laplace's least variance above the Gaussian's


def variance_view(
    eps: float, delta: float, ks: tuple[int, ...], tick: Callable[[float], None] = lambda n: None
) -> VarianceView:
    rows, cor = [], []
    for k in ks:
        need = {}
        for fam in FAMILIES:
            p = calibrate(fam, k, eps, delta)
            need[fam] = (p, variance_of(fam, p))
            tick(_cost(fam, k))
        gvar = need["gaussian"][1]
        for fam, (p, var) in need.items():
            same = param_for_variance(fam, gvar)
            rows.append(
                dict(
                    k=k,
                    family=fam,
                    param=p,
                    variance=var,
                    ratio_to_gaussian=var / gvar,
                    delta_at_param=float(composed_delta(fam, p, k, eps)),
                    param_at_gaussian_variance=same,
                    delta_at_gaussian_variance=float(composed_delta(fam, same, k, eps)),
                )
            )
        eps0, delta0 = per_query_budget(eps, delta, k)
        lap_var = 2.0 / eps0**2  # = 8 k log(e + eps/delta) / eps^2
        sig_cor = math.sqrt(2.0 * math.log(2.0 / delta0)) / eps0  # classical Gaussian for (eps0, delta0)
        cor.append(
            dict(
                k=k,
                eps0=eps0,
                delta0=delta0,
                exact_delta_at_budget=float(optimal_delta(eps0, delta0, k, eps)),
                theorem34_delta=1.0 - (1.0 - delta0) ** k * (1.0 - delta / math.sqrt(2.0)),
                largest_eps0_same_delta0=_largest_eps0(eps, delta, delta0, k),
                paper_laplace_variance=lap_var,
                paper_laplace_variance_formula=8.0 * k * math.log(math.e + eps / delta) / eps**2,
                laplace_delta_at_paper_variance=float(composed_delta("laplace", eps0, k, eps)),
                staircase_delta_at_paper_eps0=float(composed_delta("staircase", eps0, k, eps)),
                paper_gaussian_variance=sig_cor**2,
                gaussian_delta_at_paper_variance=float(GDP(math.sqrt(k) / sig_cor).delta(eps)),
                laplace_needed_variance=need["laplace"][1],
                gaussian_needed_variance=need["gaussian"][1],
            )
        )
    frame = pd.DataFrame(rows)
    return VarianceView(eps, delta, tuple(ks), frame, pd.DataFrame(cor), crossover(eps, delta, frame))


def laplace_over_gaussian(k: int, eps: float, delta: float) -> float:
    """Least variance of Laplace over the Gaussian's for k compositions and target (eps, delta)."""
    return variance_of("laplace", calibrate("laplace", k, eps, delta)) / variance_of(
        "gaussian", calibrate("gaussian", k, eps, delta)
    )


def crossover(eps: float, delta: float, frame: pd.DataFrame) -> int | None:
    """The smallest k at which Laplace needs more variance than the Gaussian: the first grid k
    with ratio > 1, refined by integer bisection from the grid k before it (the ratio rises
    with k on the grid; the bisection assumes it does so in between)."""
    lap = frame[frame.family == "laplace"].set_index("k").ratio_to_gaussian
    ks = list(lap.index)
    above = [kk for kk in ks if lap[kk] > 1.0]
    if not above:
        return None
    hi = above[0]
    i = ks.index(hi)
    if i == 0:
        return int(hi)
    lo = ks[i - 1]  # ratio <= 1 at lo, > 1 at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if laplace_over_gaussian(mid, eps, delta) > 1.0:
            hi = mid
        else:
            lo = mid
    return int(hi)


def _largest_eps0(eps: float, delta: float, delta0: float, k: int) -> float:
    """The largest eps0 whose exact k-fold (eps0, delta0) composition meets (eps, delta)
    (nan if delta0 alone already exceeds it)."""
    f = lambda e0: float(optimal_delta(e0, delta0, k, eps)) - delta
    lo = 1e-12
    if f(lo) > 0:
        return math.nan
    hi = 2.0 * eps / k + 1e-9
    while f(hi) <= 0:
        lo, hi = hi, 2 * hi
    return float(optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-12))


def _cost(fam: str, k: int) -> float:
    """Rough relative cost of one calibration (for the progress bar)."""
    if fam == "gaussian":
        return 0.01
    if fam == "laplace":
        return 0.05 + (2.0 if k <= LAPLACE_EXACT_MAX_K else 0.2 * k / 100)
    return 0.05 + 0.3 * k / 1000


# --------------------------------------------------------------------------- summary
def _row(
    quantity: str, k: int | str, eps: Any, ours: float, paper: float | None, ok: bool | None, criterion: str
) -> dict:
    return dict(
        quantity=quantity,
        k=k,
        eps=eps if isinstance(eps, str) else f"{eps:g}",
        paper=np.nan if paper is None else float(paper),
        ours=float(ours),
        agrees="" if ok is None else ("yes" if ok else "no"),
        criterion=criterion,
    )


def summary_of(rv: RegionView, vv: VarianceView) -> pd.DataFrame:
    e0, k = rv.eps0, rv.k
    per = f"{e0:g}"
    rows = [
        _row(
            f"geometric eps0-DP x {k}: k-fold delta(eps) vs the optimal region, max relative difference",
            k,
            per,
            rv.rel_diff("geometric"),
            0.0,
            rv.rel_diff("geometric") <= SAME,
            f"ours <= {SAME:g}: attains the region of Thm 3.3 exactly "
            f"({rv.grid.size} eps_total in [0, k eps0]; Sec. 4.2 theorem)",
        ),
        _row(
            f"staircase gamma = 1/2 x {k}: max relative difference from the optimal region",
            k,
            per,
            rv.rel_diff("staircase_half"),
            None,
            None,
            "no claim in the paper: with gamma = 1/2 the loss's atom at 0 vanishes, so it attains the region too",
        ),
    ]
    for fam in ("staircase", "laplace", "gaussian"):
        lab = LABELS[fam] + (f" ({e0:g}, {rv.delta0:g}) analytic" if fam == "gaussian" else "")
        ex = rv.excess(fam)
        region = f"({e0:g}, {rv.delta0:g})" if fam == "gaussian" else f"({e0:g}, 0)"
        rows.append(
            _row(
                f"{lab} x {k}: inside the {region} region, max relative excess",
                k,
                per,
                max(ex, 0.0),
                0.0,
                ex <= INSIDE_TOL,
                f"ours <= {INSIDE_TOL:g} (no mechanism beats the region; Thm 3.3)",
            )
        )
        d, r = rv.at(fam)
        rows.append(
            _row(
                f"{lab} x {k}: delta / region's delta at eps_total = {REGION_AT:g} (how much it misses)",
                k,
                per,
                d / r,
                None,
                None,
                f"delta {d:.5g} vs region {r:.5g}",
            )
        )
    rel = abs(rv.laplace_acc_at - rv.laplace_exact_at) / rv.laplace_exact_at
    rows.append(
        _row(
            f"Laplace x {k}: Accountant vs exact closed form at eps_total = {REGION_AT:g}, relative difference",
            k,
            per,
            rel,
            None,
            rel <= 1e-4 and rv.laplace_acc_at >= rv.laplace_exact_at * (1 - 1e-12),
            f"check: exact {rv.laplace_exact_at:.10g}, Accountant {rv.laplace_acc_at:.10g} (an upper bound; its "
            f"own error estimate {rv.laplace_acc_err:.2g}); ours <= 1e-4 and Accountant >= exact",
        )
    )
    tgt = f"{vv.eps:g}"
    fr, cor = vv.frame, vv.corollary
    for _, c in cor.iterrows():
        kk = int(c.k)
        ratio = c.exact_delta_at_budget / vv.delta
        rows.append(
            _row(
                f"Cor 4.1 budget (eps0 {c.eps0:.4g}, delta0 {c.delta0:.3g}) x {kk}: exact delta / target delta",
                kk,
                tgt,
                ratio,
                1.0,
                ratio <= 1.0,
                f"ours <= 1: the per-query budget meets (eps, delta) = ({vv.eps:g}, {vv.delta:g}) under exact "
                f"composition (Thm 3.4's own delta there is {c.theorem34_delta / vv.delta:.3g} x target); exact "
                f"composition allows eps0 up to {c.largest_eps0_same_delta0:.4g}",
            )
        )
    for _, c in cor.iterrows():
        kk = int(c.k)
        ratio = c.laplace_delta_at_paper_variance / vv.delta
        rows.append(
            _row(
                "Laplace, variance 8k log(e + eps/delta)/eps^2 = "
                f"{c.paper_laplace_variance:.4g}, x {kk}: exact delta / target",
                kk,
                tgt,
                ratio,
                1.0,
                ratio <= 1.0,
                f"ours <= 1 (Sec. 4.1 Laplace corollary); the least variance Laplace needs is "
                f"{c.laplace_needed_variance:.4g} ({c.paper_laplace_variance / c.laplace_needed_variance:.3g}x less)",
            )
        )
    for fam in ("laplace", "staircase", "geometric"):
        sub = fr[fr.family == fam]
        worst = float(sub.ratio_to_gaussian.max())
        lo = float(sub.ratio_to_gaussian.min())
        rows.append(
            _row(
                f"{LABELS[fam]}: least variance / Gaussian's, largest over k = {min(vv.ks)}..{max(vv.ks)}",
                "all",
                tgt,
                worst,
                None,
                None,
                f"'the same variance up to a constant' (Sec. 4.1): ratio from {lo:.3g} to {worst:.3g}; "
                + ", ".join(f"k={int(r.k)}: {r.ratio_to_gaussian:.3g}" for r in sub.itertuples()),
            )
        )
    gv = fr[fr.family == "gaussian"].set_index("k").variance
    unit = np.array([kk * math.log(math.e + vv.eps / vv.delta) / vv.eps**2 for kk in gv.index])
    const = gv.to_numpy() / unit
    rows.append(
        _row(
            "Gaussian: least variance / (k log(e + eps/delta)/eps^2), largest over k",
            "all",
            tgt,
            float(const.max()),
            None,
            None,
            "Sec. 4.1 (Gaussian theorem, proof in the paper's Appendix B): variance O(k log(e + eps/delta)/eps^2) "
            f"suffices; ours {const.max():.4g} at every k = {min(vv.ks)}..{max(vv.ks)} (k uses are exactly "
            "sqrt(k)/sigma-GDP, so the least variance is exactly linear in k)",
        )
    )
    cg = (cor.paper_gaussian_variance / cor.gaussian_needed_variance).to_numpy()
    rows.append(
        _row(
            "Gaussian at Cor 4.1's classical variance 2 log(2/delta0)/eps0^2: variance / least variance",
            "all",
            tgt,
            float(cg.min()),
            None,
            None,
            f"smallest over k (largest {cg.max():.3g}); the exact delta there is at most "
            f"{float(cor.gaussian_delta_at_paper_variance.max()):.3g} (target {vv.delta:g}): the log(1/delta) factor "
            "the paper's direct Gaussian analysis removes",
        )
    )
    t34 = float(cor.theorem34_delta.max()) / vv.delta
    rows.append(
        _row(
            "Thm 3.4's delta 1 - (1 - delta0)^k (1 - delta/sqrt 2) at the Cor 4.1 budget / target",
            "all",
            tgt,
            t34,
            None,
            None,
            "the corollary's slack delta/sqrt(2) plus k delta0 = delta/2 add up to 1.21 delta; the corollary itself "
            "still holds (rows above: exact composition gives about delta/2)",
        )
    )
    for kk in (min(vv.ks), max(vv.ks)):
        sub = fr[fr.k == kk].set_index("family")
        rows.append(
            _row(
                "equal variance (the Gaussian's least, "
                f"{sub.variance['gaussian']:.4g}), x {kk}: delta / target of Laplace",
                kk,
                tgt,
                sub.delta_at_gaussian_variance["laplace"] / vv.delta,
                None,
                None,
                "second view: every family at the same variance; staircase "
                f"{sub.delta_at_gaussian_variance['staircase'] / vv.delta:.3g}, geometric "
                f"{sub.delta_at_gaussian_variance['geometric'] / vv.delta:.3g}, Gaussian 1",
            )
        )
    rows.append(
        _row(
            "smallest k at which the Gaussian needs less variance than Laplace",
            "all",
            tgt,
            vv.crossover if vv.crossover is not None else math.nan,
            None,
            None,
            "integer bisection between the k of the grid; the ratio then tends to 2 (both compositions tend to "
            "GDP; Laplace's per-query mu^2 is about 1/scale^2 at variance 2 scale^2)",
        )
    )
    return s.summary_frame(rows)


# --------------------------------------------------------------------------- data and figure
def region_frame(rv: RegionView) -> pd.DataFrame:
    parts = [
        pd.DataFrame({"curve": fam, "eps0": rv.eps0, "delta0": 0.0, "k": rv.k, "eps_total": rv.grid, "delta": d})
        for fam, d in rv.curves.items()
    ]
    parts.append(
        pd.DataFrame(
            {
                "curve": "gaussian",
                "eps0": rv.eps0,
                "delta0": rv.delta0,
                "k": rv.k,
                "eps_total": rv.grid,
                "delta": rv.gauss,
            }
        )
    )
    parts.append(
        pd.DataFrame(
            {
                "curve": "region_delta0",
                "eps0": rv.eps0,
                "delta0": rv.delta0,
                "k": rv.k,
                "eps_total": rv.grid,
                "delta": rv.gauss_region,
            }
        )
    )
    return pd.concat(parts, ignore_index=True)


def figure(rv: RegionView, vv: VarianceView) -> Figure:
    fig = Figure(figsize=(16, 5.2), dpi=DPI)
    a1, a2, a3 = fig.subplots(1, 3)
    g = rv.grid
    for fam, d in rv.curves.items():
        if fam == "region":
            a1.plot(g, d, color="black", lw=2.4, alpha=0.35, label=f"{LABELS['region']}, ({rv.eps0:g}, 0) x {rv.k}")
        else:
            a1.plot(g, d, color=COLORS[fam], lw=1.1, ls="--" if fam == "staircase_half" else "-", label=LABELS[fam])
    a1.set_yscale("log")
    a1.set_ylim(1e-8, 1)
    a1.set_xlabel("total eps")
    a1.set_ylabel("delta(eps) of the k-fold composition")
    a1.set_title(f"pure eps0 = {rv.eps0:g} per query, k = {rv.k}", fontsize=10)
    a1.legend(fontsize=7)
    reg = rv.curves["region"]
    pos = reg > 1e-12
    for fam in PURE:
        a2.plot(
            g[pos],
            rv.curves[fam][pos] / reg[pos],
            color=COLORS[fam],
            lw=1.1,
            ls="--" if fam == "staircase_half" else "-",
            label=LABELS[fam],
        )
    gp = rv.gauss_region > 1e-12
    a2.plot(
        g[gp],
        rv.gauss[gp] / rv.gauss_region[gp],
        color=COLORS["gaussian"],
        lw=1.1,
        label=f"Gaussian ({rv.eps0:g}, {rv.delta0:g}) vs its region",
    )
    a2.axhline(1.0, color="black", lw=0.8)
    a2.set_xlabel("total eps")
    a2.set_ylabel("delta(eps) / delta(eps) of the region")
    a2.set_title("how far each composition stays inside its region", fontsize=10)
    a2.set_ylim(0, 1.05)
    a2.legend(fontsize=7, loc="lower left")
    fr = vv.frame
    for fam in ("laplace", "staircase", "geometric"):
        sub = fr[fr.family == fam]
        a3.plot(
            sub.k, sub.ratio_to_gaussian, MARKERS[fam], ms=5, mfc="none", color=COLORS[fam], lw=1.1, label=LABELS[fam]
        )
    cor = vv.corollary
    gv = fr[fr.family == "gaussian"].set_index("k").variance
    a3.plot(
        cor.k,
        cor.paper_laplace_variance / gv.loc[cor.k].to_numpy(),
        "s:",
        ms=4,
        color="tab:blue",
        label="Cor. 4.1 Laplace variance 8k log(e+eps/delta)/eps^2",
    )
    a3.plot(
        cor.k,
        cor.paper_gaussian_variance / gv.loc[cor.k].to_numpy(),
        "s:",
        ms=4,
        color="tab:red",
        label="Cor. 4.1 classical Gaussian variance",
    )
    a3.axhline(1.0, color=COLORS["gaussian"], lw=1.0, label="Gaussian (exact GDP calibration)")
    a3.axhline(2.0, color="gray", lw=0.6, ls="--")
    a3.set_xscale("log")
    a3.set_yscale("log")
    a3.set_xlabel("compositions k")
    a3.set_ylabel("variance per query / the Gaussian's")
    a3.set_title(f"least variance for ({vv.eps:g}, {vv.delta:g})-DP after k queries", fontsize=10)
    a3.legend(fontsize=7)
    for ax in (a1, a2, a3):
        ax.grid(True, alpha=0.25, which="both")
    fig.suptitle(
        "Noise under k-fold composition, exact privacy-loss laws (Kairouz, Oh and Viswanath 2015, Sec. 4)", fontsize=11
    )
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- reproduction
@register(
    NAME,
    "Sec. 4: geometric/staircase/Laplace/Gaussian noise composed exactly k times vs the optimal region; least "
    "variance per target",
    "Kairouz et al. 2015, Section 4 (Corollary 4.1 and its Laplace, staircase and Gaussian consequences; the "
    "geometric mechanism's optimality)",
)
def composition_noise(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """Both views (module docstring). Deterministic: ``seed``, ``instances`` and ``workers``
    are validated and unused; ``eps_grid``, if given, replaces the total eps of view 2 (each
    in (0, 0.9], Corollary 4.1's range; the first is used)."""
    s.check_run_args(seed, instances)
    v.integer(workers, "--workers", minimum=1)
    eps = TARGET_EPS
    if eps_grid is not None:
        eps = float(s.eps_grid(eps_grid)[0])
        if eps > 0.9:
            raise invalid("eps_grid", eps_grid, "total eps in (0, 0.9] (Corollary 4.1)")
    out_dir = Path(out_dir)
    total = 4.0 + sum(_cost(f, k) for k in K_LIST for f in FAMILIES)
    with progress.bar(total, NAME, counts=False):
        rv = region_view()
        progress.advance(4.0)
        vv = variance_view(eps, TARGET_DELTA, K_LIST, progress.advance)
    region_frame(rv).to_csv(out_dir / "region.csv", index=False, float_format="%.12g")
    vv.frame.to_csv(out_dir / "variance.csv", index=False, float_format="%.12g")
    vv.corollary.to_csv(out_dir / "corollary.csv", index=False, float_format="%.12g")
    summary = summary_of(rv, vv)
    write_summary(summary, out_dir)
    fig = figure(rv, vv)
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / f"{NAME}.png", dpi=DPI, metadata=PNG_META)
    return summary
