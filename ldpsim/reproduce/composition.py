"""The empirical check of the optimal composition theorem (``ldpsim reproduce composition-region``).

Kairouz et al. 2015, Theorem 3.3: the k-fold composition of (eps, delta)-DP
mechanisms lies inside the exact region ``OptimalComposition(eps, delta, k)``, and the k-fold
quaternary mechanism attains it. Here that is checked from samples, not from formulas: for
each mechanism, n outputs of the k-fold composition are drawn under the input 0 (P) and the
neighbouring input 1 (R), the log-likelihood ratio ``L = log P/R`` of each output is computed,
and the empirical ROC of the likelihood-ratio tests "reject P iff L < t" (over every
threshold t among the pooled values of L) gives points ``(alpha_hat, beta_hat)``. The cases:

* ``quaternary``: the quaternary (eps, delta) mechanism composed k times, (0.5, 0.01) with
  k = 10 and the paper's figure setting (0.1, 0.001) with k = 30. The k outputs are summarised
  by their multinomial counts ``(c0, c1, c2, c3)`` (drawn directly, no loop over samples):
  ``L = +inf`` if symbol 0 occurs (possible only under P), ``-inf`` if symbol 3 occurs, else
  ``(c1 - c2) eps``.
* ``laplace``: a sensitivity-1 query released k = 10 times with ``Lap(1/eps0)`` noise, eps0 =
  0.5: (eps0, 0)-DP, so the composition lies inside ``OptimalComposition(eps0, 0, k)``
  (strictly: it is not the extremal mechanism).
* ``gaussian``: k = 10 releases with ``N(0, sigma^2)`` noise, sigma = 2: exactly
  ``sqrt(k)/sigma``-GDP, so the LR tests' points lie *on* ``G_mu``; and (eps0, delta0)-DP
  for eps0 = 0.5, ``delta0 = GDP(1/sigma).delta(eps0)``, so the composition lies inside
  ``OptimalComposition(eps0, delta0, k)``.

Checks, each with a false-failure probability of at most ``GAMMA`` = 1e-6:

* inside the region (every ROC point, not a subset): by the Dvoretzky-Kiefer-Wolfowitz
  inequality (Massart's constant) the two empirical CDFs are uniformly within
  ``tol = sqrt(log(4/GAMMA)/(2n))`` of the true ones with probability >= 1 - GAMMA, and the
  true point (alpha, beta) of each test satisfies ``beta >= f(alpha)``; since f is
  non-increasing, ``beta_hat + tol >= f(min(1, alpha_hat + tol))`` must then hold for every
  point, i.e. every point lies within distance ``tol`` of the region in the metric
  ``d = smallest s with beta_hat + s >= f(alpha_hat + s)`` (moving the point by s in both
  coordinates). ``ours`` is the largest such distance (0 if every point is inside; the
  vertical ``max f(alpha_hat) - beta_hat`` is in the criterion: it is much larger than the
  sampling error where f is steep, near the corners at alpha ~ 0).
* the corners (quaternary): at every vertex of the exact polygon
  (``DiscretePLD.binomial(eps, delta, k).tradeoff_vertices()``, achieved by the deterministic
  LR test "reject P iff L <= (k - 2l) eps"), the empirical point of that test is compared
  two-sidedly with the vertex: the vertex's alpha and beta must lie in the Clopper-Pearson
  intervals of the observed counts (level ``1 - GAMMA/(2 x vertices)`` each, union bound).
  ``ours`` is the largest coordinate distance ``max(|alpha_hat - alpha|, |beta_hat - beta|)``.
* on the GDP curve (Gaussian): ``G(min(1, alpha_hat + tol)) - tol <= beta_hat <=
  G(max(0, alpha_hat - tol)) + tol`` for every point; ``ours`` = the largest distance off
  ``G_mu`` in the same metric, on either side.
* strictly inside (Laplace): some point must lie farther than ``tol`` inside the region (in
  the same metric), so that the lower confidence bound ``max_t [beta_hat - tol - f(max(0,
  alpha_hat - tol))]`` on the largest true gap ``beta - f(alpha)`` is positive; ``ours`` is
  that largest distance. This is a claim of a positive gap, so it needs enough samples (the
  true distance is about 0.018, certified from n ~ 25,000): below ``STRICT_MIN_N`` = 50,000
  (``instances`` < 25) the row is printed without a verdict (``paper`` empty).

``instances`` sets the sample size: ``n = 2000 x instances`` outputs per hypothesis (the
default 100 gives n = 200,000, a few seconds). ``eps_grid``, if given, replaces the two
quaternary cases by one per eps (delta = 0.01, k = 10). The numbers depend only on the seed
and n: each case draws from ``default_rng([seed, case index])``.

Files: ``data.csv`` (long format: per case the empirical ROC decimated to at most
``KEEP_POINTS`` points, the exact region's lower boundary on a grid, the exact vertices and
the empirical points at the vertex tests, the GDP curve), ``summary.csv``,
``composition-region.png`` (one panel per case).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray

from ldpsim import _progress as progress
from ldpsim import _validate as v
from ldpsim import stats as stats_
from ldpsim.mechanisms import catalog
from ldpsim.privacy import GDP, DiscretePLD, OptimalComposition
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary
from ldpsim.stats import dkw, dkw_samples

Array = NDArray[np.float64]

NAME = "composition-region"
#: Outputs per hypothesis per unit of ``instances``.
SAMPLES_PER_INSTANCE = 2000
#: False-failure probability of each check.
GAMMA = 1e-6
#: Default cases: (eps, delta, compositions) of the quaternary mechanism (the second is Kairouz et al. 2015's figure).
QUATERNARY = ((0.5, 0.01, 10), (0.1, 0.001, 30))
QUATERNARY_DELTA, QUATERNARY_COMPOSITIONS = 0.01, 10  # for an eps_grid
LAPLACE = (0.5, 10)  # eps0 (scale 1/eps0, sensitivity 1), compositions
GAUSSIAN = (2.0, 10, 0.5)  # sigma, compositions, eps0 of the (eps0, delta0) the Gaussian is checked against
#: The strict-inside check needs a positive gap larger than the DKW tolerance: below this n
#: (where the Laplace default's gap, about 0.018 in the DKW metric, is not certain to show)
#: the row is reported without a verdict.
STRICT_MIN_N = 50_000
#: Empirical ROC points kept per case in data.csv.
KEEP_POINTS = 1500
#: Time of a case by mechanism, relative to Laplace, for the progress bar (measured at the
#: default 100 instances: quaternary 0.06-0.08 s, Laplace 0.6 s, Gaussian 0.8 s).
CASE_COST = {"quaternary": 0.1, "laplace": 1.0, "gaussian": 1.3}
DPI = 110
PNG_META = {"Software": None}


# --------------------------------------------------------------------------- empirical ROC
def empirical_roc(llr_p: Array, llr_r: Array) -> tuple[Array, Array, Array]:
    """The ROC of the likelihood-ratio tests from samples of ``L = log P/R`` under P and R.

    For every distinct pooled value ``t`` (ascending, +-inf allowed) the test "reject P iff
    L < t" has ``alpha_hat = #{P-samples < t}/n_P`` and ``beta_hat = #{R-samples >= t}/n_R``;
    a last point, "always reject" (threshold nan), is (1, 0). Since ``<= t_j`` is ``< t_{j+1}``,
    these are also the tests at the atoms with ``<=``; the randomised tests at an atom fill the
    segment between consecutive points. Returns ``(threshold, alpha_hat, beta_hat)``.
    """
    p = np.sort(np.asarray(llr_p, dtype=np.float64).ravel())
    r = np.sort(np.asarray(llr_r, dtype=np.float64).ravel())
    t = np.unique(np.concatenate([p, r]))
    alpha = np.searchsorted(p, t, side="left") / p.size
    beta = 1.0 - np.searchsorted(r, t, side="left") / r.size
    return np.append(t, np.nan), np.append(alpha, 1.0), np.append(beta, 0.0)


def roc_tolerance(n: int, gamma: float = GAMMA) -> float:
    """``tol`` with ``P(sup|F_hat - F| > tol for either of the two ECDFs of n samples behind an
    empirical ROC) <= gamma``: :func:`ldpsim.stats.dkw` at ``gamma / 2`` per ECDF (union bound),
    ``sqrt(log(4/gamma) / (2n))``."""
    return dkw(n, gamma / 2.0)


def _root_decreasing(g: Callable[[Array], Array], size: int, iters: int = 64) -> Array:
    """Per point, the root in [0, 1] of a decreasing ``g(s)`` with ``g(0) > 0`` (bisection)."""
    lo, hi = np.zeros(size), np.ones(size)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        pos = g(mid) > 0
        lo, hi = np.where(pos, mid, lo), np.where(pos, hi, mid)
    return hi


def distance_below(alpha: Array, beta: Array, f: Callable[[Array], Any]) -> Array:
    """Per point, how far it lies below the curve ``f`` in the DKW metric: the smallest
    ``s >= 0`` with ``beta + s >= f(min(1, alpha + s))`` (0 for points on or above f)."""
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    out = np.zeros(alpha.shape)
    bad = np.asarray(f(alpha)) > beta
    if bad.any():
        a, b = alpha[bad], beta[bad]
        out[bad] = _root_decreasing(lambda s: np.asarray(f(np.minimum(1.0, a + s))) - s - b, a.size)
    return out


def distance_above(alpha: Array, beta: Array, f: Callable[[Array], Any]) -> Array:
    """Per point, the smallest ``s >= 0`` with ``beta - s <= f(max(0, alpha - s))``."""
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    out = np.zeros(alpha.shape)
    bad = beta > np.asarray(f(alpha))
    if bad.any():
        a, b = alpha[bad], beta[bad]
        out[bad] = _root_decreasing(lambda s: b - s - np.asarray(f(np.maximum(0.0, a - s))), a.size)
    return out


@dataclass(frozen=True)
class Inside:
    distance: float  # max over the points of distance_below: 0 if every point is inside
    raw: float  # max f(alpha_hat) - beta_hat (vertical; large where f is steep)
    adjusted: float  # max f(min(1, alpha_hat + tol)) - tol - beta_hat; <= 0 iff distance <= tol
    tol: float
    points: int

    @property
    def ok(self) -> bool:
        return self.adjusted <= 0.0


def check_inside(alpha: Array, beta: Array, f: Callable[[Array], Any], n: int, gamma: float = GAMMA) -> Inside:
    """Are the empirical points inside the region ``beta >= f(alpha)`` up to sampling error?
    (see the module docstring; false failure <= gamma)."""
    tol = roc_tolerance(n, gamma)
    raw = float(np.max(np.asarray(f(alpha)) - beta))
    adjusted = float(np.max(np.asarray(f(np.minimum(1.0, alpha + tol))) - tol - beta))
    dist = float(np.max(distance_below(alpha, beta, f)))
    return Inside(dist, raw, adjusted, tol, int(alpha.size))


def certified_gap(
    alpha: Array, beta: Array, f: Callable[[Array], Any], n: int, gamma: float = GAMMA
) -> tuple[float, float, float]:
    """How far inside the region ``beta >= f(alpha)`` the points reach: (the largest distance
    above f in the DKW metric, ``max distance_above``; the vertical ``max beta_hat - f(alpha_hat)``;
    a lower confidence bound on the largest true vertical gap ``beta - f(alpha)`` over the
    tests, valid with probability >= 1 - gamma: ``max beta_hat - tol - f(max(0, alpha_hat - tol))``,
    positive iff the distance exceeds tol)."""
    tol = roc_tolerance(n, gamma)
    dist = float(np.max(distance_above(alpha, beta, f)))
    raw = float(np.max(beta - np.asarray(f(alpha))))
    lower = float(np.max(beta - tol - np.asarray(f(np.maximum(0.0, alpha - tol)))))
    return dist, raw, lower


def clopper_pearson(x: Array, n: int, level: float) -> tuple[Array, Array]:
    """Two-sided exact binomial interval for ``x`` successes of ``n`` at confidence ``level``
    (:func:`ldpsim.stats.clopper_pearson` at ``alpha = 1 - level``)."""
    lo, hi = stats_.clopper_pearson(np.asarray(x), n, 1.0 - level)
    return np.asarray(lo), np.asarray(hi)


# --------------------------------------------------------------------------- samplers
def quaternary_llr(
    eps: float, delta: float, compositions: int, n: int, rng: np.random.Generator, *, sample_eps: float | None = None
) -> tuple[Array, Array]:
    """LLRs (for the claimed ``eps``) of n outputs of the ``compositions``-fold quaternary mechanism under
    P (input 0) and R (input 1), drawn from the mechanism with ``sample_eps`` (default eps; a
    larger value is a mechanism that breaks its claim)."""
    Q = catalog.build("quaternary", eps=eps if sample_eps is None else sample_eps, delta=delta).matrix
    out = []
    for row in Q:
        c = rng.multinomial(compositions, row / row.sum(), size=n)
        llr = (c[:, 1] - c[:, 2]).astype(np.float64) * eps
        llr[c[:, 3] > 0] = -np.inf
        llr[c[:, 0] > 0] = np.inf
        out.append(llr)
    return out[0], out[1]


def laplace_llr(eps0: float, compositions: int, n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """``compositions`` releases of a sensitivity-1 query (0 under P, 1 under R) with ``Lap(1/eps0)`` noise:
    ``L = eps0 sum_i (|x_i - 1| - |x_i|)``."""
    b = 1.0 / eps0
    xp = rng.laplace(0.0, b, size=(n, compositions))
    xr = 1.0 + rng.laplace(0.0, b, size=(n, compositions))
    llr = lambda x: eps0 * np.sum(np.abs(x - 1.0) - np.abs(x), axis=1)
    return llr(xp), llr(xr)


def gaussian_llr(sigma: float, compositions: int, n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """``compositions`` releases with ``N(0, sigma^2)`` noise: ``L = sum_i (1 - 2 x_i) / (2 sigma^2)``."""
    xp = rng.normal(0.0, sigma, size=(n, compositions))
    xr = 1.0 + rng.normal(0.0, sigma, size=(n, compositions))
    llr = lambda x: np.sum(1.0 - 2.0 * x, axis=1) / (2.0 * sigma**2)
    return llr(xp), llr(xr)


# --------------------------------------------------------------------------- corners
@dataclass(frozen=True)
class Corners:
    alpha: Array  # exact vertices
    beta: Array
    alpha_hat: Array  # the empirical points of the same tests
    beta_hat: Array
    ok: NDArray[np.bool_]  # per vertex: both coordinates inside their Clopper-Pearson intervals
    halfwidth: float  # the largest half-width of those intervals

    @property
    def distance(self) -> float:
        return float(np.max(np.maximum(np.abs(self.alpha_hat - self.alpha), np.abs(self.beta_hat - self.beta))))


def check_corners(
    eps: float, delta: float, compositions: int, llr_p: Array, llr_r: Array, gamma: float = GAMMA
) -> Corners:
    """Compare every vertex of the exact polygon with the empirical point of its LR test.

    The vertices of ``DiscretePLD.binomial(eps, delta, compositions).tradeoff_vertices()`` are,
    in order: reject nothing; reject ``L = -inf``; reject ``L <= loss_j`` for each finite atom;
    reject all.
    """
    pld = DiscretePLD.binomial(eps, delta, compositions)
    va, vb = pld.tradeoff_vertices()
    n = llr_p.size
    p, r = np.sort(llr_p), np.sort(llr_r)
    # "reject P iff L <= t": t = -inf, then each atom (lattice spacing 2 eps: compare at +eps)
    t = np.concatenate([[-np.inf], pld.loss + eps])
    ca = np.searchsorted(p, t, side="right").astype(np.float64)
    cb = (r.size - np.searchsorted(r, t, side="right")).astype(np.float64)
    ca = np.concatenate([[0.0], ca, [n]])  # reject nothing / reject all
    cb = np.concatenate([[r.size], cb, [0.0]])
    if ca.size != va.size:  # pragma: no cover - the polygon's layout changed
        raise AssertionError(f"{va.size} vertices but {ca.size} tests")
    level = 1.0 - gamma / (2 * va.size)
    alo, ahi = clopper_pearson(ca, n, level)
    blo, bhi = clopper_pearson(cb, r.size, level)
    tiny = 1e-12  # the vertices are sums of floats
    ok = (alo - tiny <= va) & (va <= ahi + tiny) & (blo - tiny <= vb) & (vb <= bhi + tiny)
    half = float(np.max(np.concatenate([(ahi - alo) / 2, (bhi - blo) / 2])))
    return Corners(va, vb, ca / n, cb / r.size, ok, half)


# --------------------------------------------------------------------------- one case
@dataclass
class Case:
    key: str  # e.g. "quaternary (0.5, 0.01) x 10"
    mechanism: str  # quaternary / laplace / gaussian
    compositions: int
    eps: float  # per-query eps of the region checked against
    delta: float
    n: int
    region: OptimalComposition
    alpha: Array = field(repr=False)
    beta: Array = field(repr=False)
    threshold: Array = field(repr=False)
    inside: Inside
    corners: Corners | None = None
    gdp: GDP | None = None
    on_gdp: tuple[float, float, bool] | None = None  # (max DKW-metric distance to G, max vertical, passes)
    gap: tuple[float, float, float] | None = None  # (DKW-metric distance inside, vertical gap, certified lower bound)


def run_case(index: int, kind: str, params: tuple, n: int, seed: int, *, sample_eps: float | None = None) -> Case:
    """Sample one case and run its checks."""
    rng = np.random.default_rng([seed, index])
    if kind == "quaternary":
        eps, delta, compositions = params
        lp, lr = quaternary_llr(eps, delta, compositions, n, rng, sample_eps=sample_eps)
        key = f"quaternary ({eps:g}, {delta:g}) x {compositions}"
    elif kind == "laplace":
        eps, compositions = params
        delta = 0.0
        lp, lr = laplace_llr(eps, compositions, n, rng)
        key = f"Laplace(1/{eps:g}) x {compositions}"
    elif kind == "gaussian":
        sigma, compositions, eps = params
        g1 = GDP(1.0 / sigma)
        delta = float(g1.delta(eps))
        lp, lr = gaussian_llr(sigma, compositions, n, rng)
        key = f"Gaussian(sigma {sigma:g}) x {compositions}"
    else:  # pragma: no cover
        raise ValueError(kind)
    region = OptimalComposition(eps, delta, compositions)
    t, a, b = empirical_roc(lp, lr)
    case = Case(key, kind, compositions, eps, delta, n, region, a, b, t, check_inside(a, b, region.tradeoff, n))
    if kind == "quaternary":
        case.corners = check_corners(eps, delta, compositions, lp, lr)
    elif kind == "laplace":
        case.gap = certified_gap(a, b, region.tradeoff, n)
    else:
        g = GDP(math.sqrt(compositions) / sigma)
        tol = roc_tolerance(n)
        dist = float(max(np.max(distance_below(a, b, g.tradeoff)), np.max(distance_above(a, b, g.tradeoff))))
        ok = bool(
            np.all(g.tradeoff(np.minimum(1.0, a + tol)) - tol <= b)
            and np.all(b <= g.tradeoff(np.maximum(0.0, a - tol)) + tol)
        )
        case.gdp, case.on_gdp = g, (dist, float(np.max(np.abs(b - g.tradeoff(a)))), ok)
    return case


def cases_for(eps_grid: Any) -> list[tuple[str, tuple]]:
    if eps_grid is None:
        quat = [("quaternary", p) for p in QUATERNARY]
    else:
        quat = [("quaternary", (float(e), QUATERNARY_DELTA, QUATERNARY_COMPOSITIONS)) for e in s.eps_grid(eps_grid)]
    return [*quat, ("laplace", LAPLACE), ("gaussian", GAUSSIAN)]


# --------------------------------------------------------------------------- summary
def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def _rows(c: Case) -> list[dict]:
    eps = f"{c.eps:g}"
    fail = f"false failure <= {GAMMA:g}"
    ins = c.inside
    region = f"OptimalComposition({c.eps:g}, {c.delta:.4g}, {c.compositions})"
    rows = [
        dict(
            quantity=f"{c.key}: inside the exact region (Thm 3.3), max distance outside",
            k=c.compositions,
            eps=eps,
            paper=0.0,
            ours=ins.distance,
            agrees=_yes(ins.ok),
            criterion=f"ours <= DKW tol {ins.tol:.4g}: all {ins.points} ROC points of {region} have beta_hat + tol >= "
            f"f(alpha_hat + tol) (distance: smallest s with beta_hat + s >= f(alpha_hat + s); vertical "
            f"max f(alpha_hat) - beta_hat = {ins.raw:.3g}), n = {c.n}; {fail}",
        ),
    ]
    if c.corners is not None:
        cr = c.corners
        rows.append(
            dict(
                quantity=f"{c.key}: touches the corners, max |empirical - vertex|",
                k=c.compositions,
                eps=eps,
                paper=0.0,
                ours=cr.distance,
                agrees=_yes(bool(cr.ok.all())),
                criterion=f"each of {cr.alpha.size} vertices inside the Clopper-Pearson intervals of its LR test's "
                f"counts ({int(cr.ok.sum())}/{cr.ok.size}; half-width <= {cr.halfwidth:.3g}), n = {c.n}; {fail}",
            )
        )
    if c.gap is not None:
        dist, raw, lower = c.gap
        tol = roc_tolerance(c.n)
        need = dkw_samples(dist, GAMMA / 2.0) if dist > 0 else 0
        if c.n < STRICT_MIN_N:  # too few samples for the check to have power: no verdict
            rows.append(
                s.row(
                    f"{c.key}: strictly inside, max distance inside the region",
                    c.compositions,
                    eps,
                    dist,
                    note=f"not checked: n = {c.n} < {STRICT_MIN_N} (needs about n >= {need} to certify)",
                )
            )
            return rows
        rows.append(
            dict(
                quantity=f"{c.key}: strictly inside, max distance inside the region",
                k=c.compositions,
                eps=eps,
                paper=0.0,
                ours=dist,
                agrees=_yes(lower > 0),
                criterion=f"ours > DKW tol {tol:.4g}, i.e. a certified gap beta - f(alpha) >= {lower:.3g} > 0 for "
                f"some test (vertical max beta_hat - f(alpha_hat) = {raw:.3g}); n = {c.n} (needs about "
                f"n >= {need} to certify); {fail}",
            )
        )
    if c.on_gdp is not None and c.gdp is not None:
        dist, raw, ok = c.on_gdp
        rows.append(
            dict(
                quantity=f"{c.key}: on the GDP curve G_mu (mu = {c.gdp.mu:.4g}), max distance off it",
                k=c.compositions,
                eps=eps,
                paper=0.0,
                ours=dist,
                agrees=_yes(ok),
                criterion=f"ours <= DKW tol {ins.tol:.4g} on both sides for all {ins.points} points (vertical max "
                f"|beta_hat - G(alpha_hat)| = {raw:.3g}), n = {c.n}; {fail} (Dong et al. 2021: sigma-noise is "
                f"1/sigma-GDP, mu's compose as sqrt(k))",
            )
        )
    return rows


def summary_of(cases: list[Case]) -> pd.DataFrame:
    return s.summary_frame([r for c in cases for r in _rows(c)])


# --------------------------------------------------------------------------- data and figure
def _decimate(m: int, keep: int = KEEP_POINTS) -> NDArray[np.int64]:
    if m <= keep:
        return np.arange(m)
    return np.unique(np.round(np.linspace(0, m - 1, keep)).astype(np.int64))


def _grid() -> Array:
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, 1001), np.geomspace(1e-6, 1.0, 300)]))


def data_of(cases: list[Case]) -> pd.DataFrame:
    parts = []

    def add(c: Case, curve: str, alpha: Array, beta: Array, threshold: Array | None = None) -> None:
        parts.append(
            pd.DataFrame(
                {
                    "case": c.key,
                    "mechanism": c.mechanism,
                    "k": c.compositions,
                    "eps": c.eps,
                    "delta": c.delta,
                    "n": c.n,
                    "curve": curve,
                    "alpha": alpha,
                    "beta": beta,
                    "threshold": np.nan if threshold is None else threshold,
                }
            )
        )

    for c in cases:
        idx = _decimate(c.alpha.size)
        add(c, "empirical", c.alpha[idx], c.beta[idx], c.threshold[idx])
        a = _grid()
        add(c, "region_lower", a, np.asarray(c.region.tradeoff(a)))
        if c.corners is not None:
            add(c, "vertex", c.corners.alpha, c.corners.beta)
            add(c, "empirical_at_vertex", c.corners.alpha_hat, c.corners.beta_hat)
        if c.gdp is not None:
            add(c, "gdp", a, np.asarray(c.gdp.tradeoff(a)))
    return pd.concat(parts, ignore_index=True)


def figure(cases: list[Case], seed: int) -> Figure:
    m = len(cases)
    fig = Figure(figsize=(4.3 * m, 5.3), dpi=DPI)
    axes = np.atleast_1d(fig.subplots(1, m))
    for ax, c in zip(axes, cases):
        a, lower, upper = c.region.region(801)
        ax.fill_between(
            a,
            lower,
            upper,
            color="tab:blue",
            alpha=0.18,
            lw=0,
            label=f"exact region (Thm 3.3), ({c.eps:g}, {c.delta:.3g}) x {c.compositions}",
        )
        ax.plot(a, lower, color="tab:blue", lw=1)
        idx = _decimate(c.alpha.size)
        ax.plot(
            c.alpha[idx],
            c.beta[idx],
            ".-",
            ms=2.5 if c.mechanism != "quaternary" else 6,
            lw=0.6,
            color="tab:red",
            label=f"empirical ROC of the LR tests (n = {c.n:,}; lines: randomised tests)",
        )
        if c.corners is not None:
            ax.plot(
                c.corners.alpha, c.corners.beta, "o", mfc="none", mec="black", ms=8, mew=0.8, label="exact vertices"
            )
        if c.gdp is not None:
            ax.plot(
                a,
                c.gdp.tradeoff(a),
                color="black",
                lw=1,
                ls="--",
                label=f"GDP curve, mu = sqrt(k)/sigma = {c.gdp.mu:.3g}",
            )
        ax.plot([0, 1], [1, 0], color="gray", lw=0.6, ls=":")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("type I error alpha")
        ax.set_title(c.key, fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13))
        ax.grid(True, alpha=0.25)
    axes[0].set_ylabel("type II error beta")
    fig.suptitle(
        "k-fold composition: empirical privacy regions inside the "
        f"exact region of Kairouz et al. 2015 Thm 3.3 (seed {seed})",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- reproduction
@register(
    NAME,
    "Thm 3.3 from samples: empirical ROC of k-fold quaternary/Laplace/Gaussian "
    "inside the exact region (n = 2000 x instances)",
    "Kairouz et al. 2015, Theorem 3.3: the exact region of k-fold composition, attained by the quaternary mechanism",
)
def composition_region(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """Sample the compositions and check them against the exact region (module docstring).

    ``instances`` is the sample size in units of 2,000 outputs per hypothesis; ``workers`` is
    accepted for the registry's signature and unused (the run takes seconds)."""
    seed, instances = s.check_run_args(seed, instances)
    v.integer(workers, "--workers", minimum=1)
    n = SAMPLES_PER_INSTANCE * instances
    out_dir = Path(out_dir)
    todo = cases_for(eps_grid)
    cases = []
    with progress.bar(sum(CASE_COST[kind] for kind, _ in todo), NAME, counts=False):
        for i, (kind, params) in enumerate(todo):
            cases.append(run_case(i, kind, params, n, seed))
            progress.advance(CASE_COST[kind])
    data_of(cases).to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    summary = summary_of(cases)
    write_summary(summary, out_dir)
    fig = figure(cases, seed)
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / f"{NAME}.png", dpi=DPI, metadata=PNG_META)
    return summary
