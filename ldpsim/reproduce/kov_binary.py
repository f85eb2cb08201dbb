"""Two results of Kairouz, Oh and Viswanath, *Extremal Mechanisms for Local Differential
Privacy* (2014) about the binary mechanism, checked with the exact linear program.

``kov-binary-universality`` (Sec. 3.2, Theorem 5): for every prior pair (P0, P1) there is a
threshold eps* > 0, the same for every f-divergence, below which the binary mechanism
(``T = {P0 >= P1}``) maximises ``D_f(M0 || M1)`` over all eps-LDP mechanisms. The paper
proves it by Blackwell dominance: every eps-LDP mechanism's pair of output laws is a
garbling of the binary mechanism's pair. The extracted paper text gives no formula for
eps*; we use the exact one that the dominance argument yields (derived in
:func:`blackwell_threshold` and docs/theory): two binary-output laws ``(a0, 1 - a0)`` and
``(a1, 1 - a1)`` dominate a pair (M0, M1) exactly when every likelihood ratio
``M0(y)/M1(y)`` lies between ``(1 - a0)/(1 - a1)`` and ``a0/a1``, and the extreme likelihood
ratios of eps-LDP mechanisms come from the staircase patterns. For random prior pairs
(Dirichlet(1), k = 6) the linear program is solved for KL, total variation, squared
Hellinger, chi-square and a random convex f, on a grid of eps and at multiples of each
instance's eps*; the threshold where the binary mechanism stops being optimal is then
located by bisection, per utility. A hockey-stick divergence built at eps* shows that no
larger universal threshold exists.

``kov-approximation-factor`` (Sec. 3.3): ``BIN >= OPT / (2 (e^eps + 1)^2)`` for KL, for every
eps and prior pair. Per eps: the worst ratio BIN/OPT over random prior pairs (k = 3 and 6),
then a Nelder-Mead search over the priors from the worst random instances, against the
bound.

Files: ``universality.csv`` (one row per instance x utility x tested eps), ``thresholds.csv``
(eps* and the measured thresholds per instance), ``priors.csv``; or ``data.csv`` (random
instances), ``adversarial.csv`` (the searched priors), ``priors.csv``; ``summary.csv`` and
the PNG.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray
from scipy import optimize

from ldpsim import _progress as progress
from ldpsim._pool import pool_map
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary
from ldpsim.utility import (
    KL,
    ChiSquare,
    FDivergence,
    Hellinger,
    TotalVariation,
    Utility,
    binary_for,
    optimal_mechanism,
)
from ldpsim.utility.bounds import binary_kl_lower_bound_factor

DPI = 110
PNG_META = {"Software": None}

K = 6
#: The fixed grid of the universality study: 0.01 to 10, 13 log-spaced points (a factor of
#: 1.78 apart; with the multiples of eps* and the bisection, about 150 LPs per instance).
UNI_GRID = np.geomspace(0.01, 10.0, 13)
#: Multiples of each instance's eps* where every utility is also tested.
REL = (0.25, 0.5, 0.75, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5, 2.0)
#: Bisection of a measured threshold stops at hi / lo <= 1 + XTOL.
XTOL = 1e-3
#: Utilities of the universality study, in table order.
UTILS = ("kl", "tv", "hellinger", "chi_square", "random_f")
UTIL_LABELS = {
    "kl": "KL",
    "tv": "total variation",
    "hellinger": "squared Hellinger",
    "chi_square": "chi-square",
    "random_f": "random convex f",
}
UTIL_COLORS = {
    "kl": "tab:blue",
    "tv": "tab:gray",
    "hellinger": "tab:green",
    "chi_square": "tab:red",
    "random_f": "tab:purple",
}
#: The hockey-stick check: the LP optimum relative to TV, "zero" below ZERO and "positive" above POSITIVE.
ZERO, POSITIVE = 1e-10, 1e-8


# --------------------------------------------------------------------------- the threshold
def _subset_sums(p: NDArray[np.float64]) -> NDArray[np.float64]:
    k = p.size
    bits = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(np.float64)
    return bits @ p


def blackwell_threshold(P0: NDArray[np.float64], P1: NDArray[np.float64]) -> tuple[float, str]:
    """The largest eps* such that the binary mechanism's output pair dominates (in Blackwell's
    sense) that of every eps-LDP mechanism for all eps <= eps*, and the side that binds
    ("upper" or "lower" likelihood ratio); ``(inf, "")`` when it dominates for every eps.

    With ``c = e^eps - 1`` and ``g(T) = (1 + c P0(T)) / (1 + c P1(T))`` (the likelihood ratio
    of the scaled staircase pattern of T), dominance holds iff ``g(T) <= g(T*)`` and
    ``g(T) >= g(T*^c)`` for every subset T, ``T* = {P0 >= P1}``. Cross-multiplied, each is
    linear in c: ``(TV - d(T)) >= c (P0(T) P1(T*) - P0(T*) P1(T))`` and
    ``(d(T) + TV) >= c (P0(T*^c) P1(T) - P0(T) P1(T*^c))`` with ``d(T) = P0(T) - P1(T)``
    and ``TV = d(T*)``; so c* is the smallest ratio over the subsets where the right-hand
    factor is positive. Enumerates the 2^k subsets."""
    p0, p1 = np.asarray(P0, dtype=np.float64), np.asarray(P1, dtype=np.float64)
    t = p0 >= p1
    u_star, v_star = math.fsum(p0[t].tolist()), math.fsum(p1[t].tolist())
    tv = u_star - v_star
    u, v = _subset_sums(p0), _subset_sums(p1)
    d = u - v
    best, side = math.inf, ""
    for name, num, den in (
        ("upper", tv - d, u * v_star - u_star * v),
        ("lower", d + tv, (1.0 - u_star) * v - u * (1.0 - v_star)),
    ):
        mask = den > 1e-15
        if mask.any():
            c = float(np.min(num[mask] / den[mask]))
            if c < best:
                best, side = c, name
    return (math.log1p(best) if math.isfinite(best) else math.inf), side


def hockey_stick(P0: NDArray[np.float64], P1: NDArray[np.float64], eps: float, side: str) -> FDivergence:
    """The hockey-stick divergence whose kink is the binary mechanism's extreme likelihood
    ratio at eps: ``f(t) = (t - a0/a1)_+`` ("upper") or ``((1-a0)/(1-a1) - t)_+`` ("lower").
    The binary mechanism's value is exactly 0; any eps-LDP mechanism with an output whose
    likelihood ratio lies beyond the kink has a positive value."""
    c = math.expm1(eps)
    t = P0 >= P1
    inside = t if side == "upper" else ~t
    g = (1.0 + c * math.fsum(P0[inside].tolist())) / (1.0 + c * math.fsum(P1[inside].tolist()))
    if side == "upper":
        return FDivergence(P0, P1, lambda x: np.maximum(np.asarray(x) - g, 0.0), f_inf=1.0)
    return FDivergence(P0, P1, lambda x: np.maximum(g - np.asarray(x), 0.0), f_inf=0.0)


class _RandomF:
    """A random convex f with f(1) = 0 (picklable): ``w0 phi_alpha(t) + sum_j w_j ((t - g_j)_+ - (1 - g_j)_+)``,
    ``phi_alpha(t) = (t^alpha - 1 - alpha (t - 1)) / (alpha (alpha - 1))`` (the power divergences)."""

    def __init__(self, rng: np.random.Generator) -> None:
        alpha = float(rng.uniform(-1.0, 3.0))
        if abs(alpha) < 0.1 or abs(alpha - 1.0) < 0.1:
            alpha += 0.2
        self.alpha = alpha
        self.w = rng.exponential(size=4)
        self.g = np.exp(rng.normal(0.0, 0.5, size=3))

    def __call__(self, t):
        t = np.asarray(t, dtype=np.float64)
        a = self.alpha
        out = self.w[0] * (np.power(t, a) - 1.0 - a * (t - 1.0)) / (a * (a - 1.0))
        for w, g in zip(self.w[1:], self.g):
            out = out + w * (np.maximum(t - g, 0.0) - max(1.0 - g, 0.0))
        return out

    def describe(self) -> str:
        kinks = ", ".join(f"{g:.3g}" for g in self.g)
        return f"alpha={self.alpha:.3g}; weights {', '.join(f'{w:.3g}' for w in self.w)}; kinks {kinks}"


def random_fs(seed: int, instances: int) -> list[_RandomF]:
    """One random convex f per instance, from ``default_rng((seed, 20))`` (not the priors' stream)."""
    rng = np.random.default_rng((seed, 20))
    return [_RandomF(rng) for _ in range(instances)]


def _utility(name: str, P0, P1, f: _RandomF | None = None) -> Utility:
    if name == "random_f":
        return FDivergence(P0, P1, cast(_RandomF, f))  # given with "random_f"
    return {
        "kl": KL,
        "tv": TotalVariation,
        "hellinger": Hellinger,
        "chi_square": ChiSquare,
    }[name](P0, P1)


# --------------------------------------------------------------------------- universality, one instance
def _check(U: Utility, eps: float) -> dict:
    res = optimal_mechanism(U, eps)
    b = U.value(binary_for(U, eps))
    opt = res.value
    return {
        "optimal": opt,
        "binary": b,
        "bound": res.bound,
        "ok": res.status == "optimal",
        "same": abs(b - opt) <= s.SAME * opt,
    }


def _universality_instance(i: int, prior: NDArray[np.float64], f: _RandomF, grid: NDArray[np.float64]) -> dict:
    P0, P1 = prior
    e_star, side = blackwell_threshold(P0, P1)
    rel = [e_star * r for r in REL] if math.isfinite(e_star) else []
    eps_all = np.unique(np.concatenate([grid, [e for e in rel if 0 < e <= 700]]))
    rows, thresholds = [], {}
    for name in UTILS:
        U = _utility(name, P0, P1, f)
        tested = {float(e): _check(U, float(e)) for e in eps_all}
        fails = [e for e in eps_all if not tested[float(e)]["same"]]
        if not fails:
            measured = math.inf
        else:
            hi = float(fails[0])
            below = eps_all[eps_all < hi]
            if below.size == 0:
                measured = 0.0
            else:
                lo = float(below[-1])
                while hi / lo > 1.0 + XTOL:
                    mid = math.sqrt(lo * hi)
                    r = _check(U, mid)
                    tested[mid] = r
                    if r["same"]:
                        lo = mid
                    else:
                        hi = mid
                measured = lo
        thresholds[name] = measured
        for e, r in sorted(tested.items()):
            rows.append(dict(instance=i, utility=name, eps=e, eps_over_eps_star=e / e_star, **r))
    # the hockey-stick divergence at the binding side, just below, at, and just above eps*
    hockey = {}
    for ratio in (0.99, 1.0, 1.01):
        e = e_star * ratio
        if not e <= 700:  # eps* infinite (the binary pair dominates at every eps) or too large for the LP
            hockey[ratio] = {"optimal": math.nan, "binary": math.nan, "ok": True}
            continue
        H = hockey_stick(P0, P1, e, side)
        res = optimal_mechanism(H, e)
        scale = TotalVariation(P0, P1).value(binary_for(H, e))  # the binary mechanism's TV, > 0
        hockey[ratio] = {
            "optimal": res.value / scale,
            "binary": H.value(binary_for(H, e)) / scale,
            "ok": res.status == "optimal",
        }
    return {
        "instance": i,
        "eps_star": e_star,
        "side": side,
        "thresholds": thresholds,
        "rows": rows,
        "hockey": hockey,
    }


def _uni_chunk(
    idx: NDArray[np.int64],
    priors: NDArray[np.float64],
    fs: list[_RandomF],
    grid: NDArray[np.float64],
) -> list[dict]:
    return [_universality_instance(int(i), p, f, grid) for i, p, f in zip(idx, priors, fs)]


# --------------------------------------------------------------------------- universality
@register(
    "kov-binary-universality",
    "Binary optimal for KL, TV, Hellinger, chi^2, a random f up to the Blackwell threshold eps*, k = 6 (Kairouz et "
    "al. 2014, Thm 5)",
    "Kairouz et al. 2014, Sec. 3.2, Theorem 5",
)
def kov_binary_universality(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """Kairouz et al. 2014, Theorem 5: the binary mechanism maximises every f-divergence for
    eps <= eps*(P0, P1). For each random prior pair (k = 6): eps* from
    :func:`blackwell_threshold`; the LP for five utilities on ``eps_grid`` (default 13
    points from 0.01 to 10) and at the multiples :data:`REL` of eps*; the threshold where
    binary stops being optimal (relative 1e-7), bisected to relative :data:`XTOL`; and the
    hockey-stick divergence at 0.99, 1 and 1.01 eps*."""
    seed, instances = s.check_run_args(seed, instances)
    grid = s.eps_grid(eps_grid, default=UNI_GRID)
    pairs = s.prior_pairs(seed, instances, K)
    fs = random_fs(seed, instances)
    blocks = (
        [np.array([i]) for i in range(instances)]
        if workers == 1
        else np.array_split(np.arange(instances), min(instances, 8 * workers))
    )
    with progress.bar(instances, "kov-binary-universality", unit="instance"):
        parts = pool_map(
            _uni_chunk,
            blocks,
            [pairs[b] for b in blocks],
            [[fs[i] for i in b] for b in blocks],
            [grid] * len(blocks),
            workers=workers,
            ticks=[len(b) for b in blocks],
        )
    results = [r for part in parts for r in part]

    data = pd.DataFrame([row for r in results for row in r["rows"]])
    data.insert(0, "k", K)
    data.to_csv(out_dir / "universality.csv", index=False, float_format="%.12g")
    e_star = np.array([r["eps_star"] for r in results])
    thr = pd.DataFrame(
        {
            "instance": np.arange(instances),
            "eps_star": e_star,
            "binding_side": [r["side"] for r in results],
            **{f"threshold_{u}": [r["thresholds"][u] for r in results] for u in UTILS},
            **{f"hockey_opt_over_tv_{r}": [x["hockey"][r]["optimal"] for x in results] for r in (0.99, 1.0, 1.01)},
            "random_f": [f.describe() for f in fs],
        }
    )
    thr.to_csv(out_dir / "thresholds.csv", index=False, float_format="%.12g")
    _prior_frame(pairs).to_csv(out_dir / "priors.csv", index=False, float_format="%.15g")

    rows = [
        s.row(
            "eps* (Blackwell threshold): median over instances",
            K,
            "-",
            float(np.median(e_star)),
        ),
        s.row(
            "eps*: min / max over instances",
            K,
            "-",
            float(e_star.min()),
            note=f"max {e_star.max():.4g}",
        ),
    ]
    below = data[data["eps"].to_numpy() <= e_star[data["instance"].to_numpy()] * (1 + 1e-12)]
    for u in UTILS:
        sub = below[below["utility"] == u]
        rows.append(
            s.row(
                f"{UTIL_LABELS[u]}: (instance, eps <= eps*) where binary != OPT",
                K,
                "<= eps*",
                int((~sub["same"]).sum()),
                0,
                "equal",
                f"relative 1e-7; {len(sub)} LPs over {instances} instances",
            )
        )
    ratios_all = []
    for u in UTILS:
        m = thr[f"threshold_{u}"].to_numpy()
        ratio = m / e_star
        ratios_all.append(ratio)
        rows.append(
            s.row(
                f"{UTIL_LABELS[u]}: fraction of instances with measured threshold >= eps*",
                K,
                "-",
                float(np.mean(ratio >= 1.0 - 1e-9)),
                1.0,
                "all",
                "Theorem 5: optimal for all eps <= eps*",
            )
        )
        finite = np.isfinite(ratio)
        larger = int(np.sum(ratio > 1.01))
        note = f"{int((~finite).sum())} never stop up to eps = {grid.max():g}" if (~finite).any() else ""
        rows.append(
            s.row(
                f"{UTIL_LABELS[u]}: instances with measured threshold > 1.01 eps*",
                K,
                "-",
                larger,
                note=note,
            )
        )
        if finite.any():
            rows.append(
                s.row(
                    f"{UTIL_LABELS[u]}: measured / eps*, median (finite)",
                    K,
                    "-",
                    float(np.median(ratio[finite])),
                    note=f"min {ratio[finite].min():.4g}, max {ratio[finite].max():.4g}",
                )
            )
    first = np.min(np.vstack(ratios_all), axis=0)
    rows.append(
        s.row(
            "min over the five utilities of measured / eps*: median",
            K,
            "-",
            float(np.median(first)),
            note=f"min {first.min():.4g}; {int(np.sum(first > 1.01))} of {instances} instances above 1.01",
        )
    )
    h = {r: np.array([x["hockey"][r]["optimal"] for x in results]) for r in (0.99, 1.0, 1.01)}
    rows.append(
        s.row(
            "hockey-stick f at eps*: max OPT / TV(binary) at 0.99 eps* and eps*",
            K,
            "0.99-1 eps*",
            float(np.nanmax(np.r_[h[0.99], h[1.0], 0.0])),
            note=f"binary's value is 0: binary optimal iff OPT = 0 (<= {ZERO:g})",
        )
    )
    rows.append(
        s.row(
            "hockey-stick f at 1.01 eps*: instances where OPT > 0 = binary",
            K,
            "1.01 eps*",
            int(np.sum(h[1.01] > POSITIVE)),
            note=f"of {instances}; min OPT/TV {np.nanmin(np.r_[h[1.01], np.inf]):.3g}: "
            "no universal threshold above eps*",
        )
    )
    rows += _uni_anomalies(data, results, h)
    summary = s.summary_frame(rows)
    write_summary(summary, out_dir)
    _uni_figure(thr, e_star, grid, h, seed, instances, out_dir / "kov-binary-universality.png")
    return summary


def _prior_frame(pairs: NDArray[np.float64]) -> pd.DataFrame:
    n, r, k = pairs.shape
    return pd.DataFrame(
        {
            "k": k,
            "instance": np.repeat(np.arange(n), r * k),
            "prior": np.tile(np.repeat(np.array(["P0", "P1"]), k), n),
            "symbol": np.tile(np.arange(k), n * r),
            "probability": pairs.ravel(),
        }
    )


def _uni_anomalies(data: pd.DataFrame, results: list[dict], h: dict) -> list[dict]:
    out = []
    if (~data["ok"]).any():
        out.append(f"{int((~data['ok']).sum())} linear programs did not report 'optimal'")
    over = data["binary"] > data["optimal"] * (1 + 1e-9) + 1e-15
    if over.any():
        out.append(f"binary beats the 'optimal' mechanism in {int(over.sum())} cells")
    gap = np.abs(data["bound"] - data["optimal"]) > 1e-7 * np.maximum(data["optimal"], 1e-300) + 1e-15
    if gap.any():
        out.append(f"LP duality gap above 1e-7 (relative) in {int(gap.sum())} cells")
    if np.nanmax(np.r_[h[0.99], h[1.0], 0.0]) > ZERO:
        out.append("hockey-stick: binary not optimal at or below eps*")
    if not all(x["hockey"][r]["ok"] for x in results for r in (0.99, 1.0, 1.01)):
        out.append("hockey-stick: a linear program did not report 'optimal'")
    return [s.row(f"CHECK FAILED: {msg}", K, "all", 1.0) for msg in out]


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI, metadata=PNG_META)


def _uni_figure(
    thr: pd.DataFrame,
    e_star: NDArray,
    grid: NDArray,
    h: dict,
    seed: int,
    instances: int,
    path: Path,
) -> None:
    fig = Figure(figsize=(12.5, 5.2), dpi=DPI)
    left, right = fig.subplots(1, 2)
    top = grid.max() * 1.6
    for u in UTILS:
        m = thr[f"threshold_{u}"].to_numpy()
        shown = np.where(np.isfinite(m), m, top)
        left.scatter(
            e_star,
            shown,
            s=14,
            alpha=0.7,
            lw=0,
            color=UTIL_COLORS[u],
            label=UTIL_LABELS[u],
        )
    lim = (min(e_star.min(), grid.min()) / 1.3, top * 1.3)
    left.plot(lim, lim, color="black", lw=1, label="measured = eps*")
    left.axhline(top, color="gray", ls=":", lw=0.8)
    left.text(
        lim[0] * 1.1,
        top * 1.08,
        f"never stops up to eps = {grid.max():g}",
        fontsize=8,
        color="gray",
    )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlim(*lim)
    left.set_ylim(*lim)
    left.set_xlabel("eps* (Blackwell threshold, log scale)")
    left.set_ylabel("measured threshold: binary = OPT up to here")
    left.set_title(f"k = {K}, {instances} random prior pairs: every dot on or above the line")
    left.legend(fontsize=8, loc="lower right")
    left.grid(True, which="both", alpha=0.25)
    r = np.geomspace(0.5, 50.0, 400)
    for u in UTILS:
        ratio = thr[f"threshold_{u}"].to_numpy() / e_star
        right.plot(
            r,
            [(ratio >= x * (1 - 1e-9)).mean() for x in r],
            color=UTIL_COLORS[u],
            lw=1.6,
            label=UTIL_LABELS[u],
        )
    right.scatter(
        [0.99, 1.0, 1.01],
        [(h[x] <= ZERO).mean() for x in (0.99, 1.0, 1.01)],
        color="black",
        marker="x",
        zorder=5,
        label="hockey-stick f at eps*: fraction binary optimal",
    )
    right.axvline(1.0, color="black", ls="--", lw=1)
    right.set_xscale("log")
    right.set_ylim(-0.03, 1.05)
    right.set_xlabel("eps / eps* (log scale)")
    right.set_ylabel("fraction of instances where binary is optimal up to eps")
    right.set_title("binary optimal for all f up to eps*; beyond it, utility by utility")
    right.legend(fontsize=8, loc="center right")
    right.grid(True, which="both", alpha=0.25)
    fig.suptitle(
        f"Kairouz et al. 2014, Theorem 5 checked with the exact LP (seed {seed})",
        fontsize=11,
    )
    fig.tight_layout()
    _save(fig, path)


# --------------------------------------------------------------------------- approximation factor
FACTOR_K = (3, 6)
#: Adversarial search: every ADV_STEP-th point of the eps grid, from ADV_STARTS worst random instances.
ADV_STEP = 3
ADV_STARTS = 2
ADV_MAXFEV = 200
#: Logits of the searched priors stay in [-LOGIT, LOGIT] (entries >= about e^(-2 LOGIT)).
LOGIT = 18.0


def _softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    z = np.clip(z, -LOGIT, LOGIT)
    e = np.exp(z - z.max())
    return e / e.sum()


def kl_ratio(P0: NDArray[np.float64], P1: NDArray[np.float64], eps: float) -> tuple[float, float, float]:
    """(BIN / OPT, BIN, OPT) for KL at eps (OPT from the LP)."""
    U = KL(P0, P1)
    opt = optimal_mechanism(U, eps).value
    b = U.value(binary_for(U, eps))
    return b / opt, b, opt


def _search(k: int, eps: float, starts: list[NDArray[np.float64]]) -> dict:
    """Nelder-Mead on the logits of (P0, P1), minimising log(BIN/OPT) from each start."""

    def objective(z: NDArray[np.float64]) -> float:
        P0, P1 = _softmax(z[:k]), _softmax(z[k:])
        if np.allclose(P0, P1, rtol=0, atol=1e-9):
            return 0.0
        r, _, _ = kl_ratio(P0, P1, eps)
        return math.log(r) if r > 0 else 0.0

    best = None
    for start in starts:
        z0 = np.log(np.clip(start, 1e-300, None)).ravel()
        z0 = np.clip(z0 - z0.reshape(2, k).max(axis=1).repeat(k), -LOGIT, LOGIT)
        res = optimize.minimize(
            objective,
            z0,
            method="Nelder-Mead",
            options={"maxfev": ADV_MAXFEV, "xatol": 1e-6, "fatol": 1e-10, "adaptive": True},
        )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    P0, P1 = _softmax(best.x[:k]), _softmax(best.x[k:])
    U = KL(P0, P1)
    lp = optimal_mechanism(U, eps)
    b = U.value(binary_for(U, eps))
    return {
        "k": k,
        "eps": eps,
        "ratio": b / lp.value,
        "binary": b,
        "optimal": lp.value,
        "bound": lp.bound,
        "ok": lp.status == "optimal",
        "P0": " ".join(f"{x:.15g}" for x in P0),
        "P1": " ".join(f"{x:.15g}" for x in P1),
        "_best": np.array([P0, P1]),
    }


def _adv_path(k: int, eps_list: list[float], starts: list[list[NDArray[np.float64]]]) -> list[dict]:
    """The search at increasing eps, each also started from the best priors found at the
    previous eps (a continuation: the worst case moves gradually with eps)."""
    out: list[dict] = []
    for e, st in zip(eps_list, starts):
        if out:
            st = [*st, out[-1]["_best"]]
        out.append(_search(k, e, st))
        progress.advance(10)
    for row in out:
        del row["_best"]
    return out


@register(
    "kov-approximation-factor",
    "KL: worst BIN/OPT over random and searched priors (k = 3, 6) vs the bound 1/(2(e^eps+1)^2) (Kairouz et al. "
    "2014, Sec. 3.3)",
    "Kairouz et al. 2014, Sec. 3.3 (BIN >= OPT / (2 (e^eps + 1)^2))",
)
def kov_approximation_factor(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """Kairouz et al. 2014, Sec. 3.3: ``BIN >= OPT / (2 (e^eps + 1)^2)`` for KL. For k = 3 and
    6: every random prior pair's ratio BIN/OPT on ``eps_grid`` (default the paper's 25
    points, 0.1 to 10); then, at every third grid point in increasing order, a Nelder-Mead
    search over (P0, P1) (logits, at most :data:`ADV_MAXFEV` LPs per start) from the
    :data:`ADV_STARTS` worst random instances there and from the best priors found at the
    previous searched eps."""
    seed, instances = s.check_run_args(seed, instances)
    eps = s.eps_grid(eps_grid)
    adv_idx = list(range(0, eps.size, ADV_STEP))
    if adv_idx[-1] != eps.size - 1:
        adv_idx.append(eps.size - 1)
    studies = []
    paths = []
    total = sum(instances + 10 * len(adv_idx) for _ in FACTOR_K)
    with progress.bar(total, "kov-approximation-factor", counts=False):
        for k in FACTOR_K:
            progress.note(f"k = {k}, random")
            st = s.solve("kl", s.prior_pairs(seed, instances, k), eps, workers)
            studies.append(st)
            ratio = st.ratio("binary")
            starts = [[st.priors[i] for i in np.argsort(ratio[:, j], kind="stable")[:ADV_STARTS]] for j in adv_idx]
            paths.append((k, [float(eps[j]) for j in adv_idx], starts))
        progress.note("search")
        found = pool_map(
            _adv_path, *zip(*paths), workers=workers, ticks=[0 if workers == 1 else 10 * len(adv_idx)] * len(paths)
        )
        adv_rows = [row for part in found for row in part]
    adv = pd.DataFrame(adv_rows)
    adv["factor"] = [binary_kl_lower_bound_factor(e) for e in adv["eps"]]
    adv["ratio_over_factor"] = adv["ratio"] / adv["factor"]
    adv.to_csv(out_dir / "adversarial.csv", index=False, float_format="%.12g")
    data = pd.concat([st.frame() for st in studies], ignore_index=True)
    data = data[data["mechanism"].isin(["binary", "optimal"])]
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    pd.concat([st.prior_frame() for st in studies], ignore_index=True).to_csv(
        out_dir / "priors.csv", index=False, float_format="%.15g"
    )

    factor = np.array([binary_kl_lower_bound_factor(e) for e in eps])
    rows = []
    for st in studies:
        ratio = st.ratio("binary")
        a = adv[adv["k"] == st.k]
        below = int(np.sum(ratio < factor[None, :] * (1 - 1e-9))) + int(np.sum(a["ratio"] < a["factor"] * (1 - 1e-9)))
        rows.append(
            s.row(
                "(prior pair, eps) with BIN/OPT below 1/(2(e^eps+1)^2)",
                st.k,
                "all",
                below,
                0,
                "equal",
                f"{ratio.size} random cells + {len(a)} searched optima",
            )
        )
        for j in s.table_eps(eps):
            rnd = float(ratio[:, j].min())
            sa = a[np.isclose(a["eps"], eps[j])]
            worst = min(rnd, float(sa["ratio"].min())) if len(sa) else rnd
            rows.append(
                s.row(
                    "worst BIN/OPT, random instances",
                    st.k,
                    eps[j],
                    rnd,
                    note=f"bound {factor[j]:.4g}",
                )
            )
            if len(sa):
                rows.append(s.row("worst BIN/OPT, random + search", st.k, eps[j], worst))
            rows.append(
                s.row(
                    "tightness: worst BIN/OPT / bound",
                    st.k,
                    eps[j],
                    worst / factor[j],
                    note=">= 1: the bound holds; 1: tight",
                )
            )
        worst_all = np.minimum(ratio.min(axis=0), _adv_min(a, eps))
        tight = worst_all / factor
        jt = int(np.argmin(tight))
        rows.append(
            s.row(
                "tightness over the grid: min of worst BIN/OPT / bound",
                st.k,
                "all",
                float(tight.min()),
                note=f"at eps={eps[jt]:.3g}; max {tight.max():.3g} at eps={eps[int(np.argmax(tight))]:.3g}",
            )
        )
    rows += _factor_anomalies(studies, adv)
    summary = s.summary_frame(rows)
    write_summary(summary, out_dir)
    _factor_figure(studies, adv, eps, factor, seed, out_dir / "kov-approximation-factor.png")
    return summary


def _adv_min(a: pd.DataFrame, eps: NDArray) -> NDArray:
    out = np.full(eps.size, np.inf)
    for e, r in zip(a["eps"], a["ratio"]):
        j = int(np.argmin(np.abs(eps - e)))
        out[j] = min(out[j], r)
    return out


def _factor_anomalies(studies: list[s.Study], adv: pd.DataFrame) -> list[dict]:
    rows = [s.row(f"CHECK FAILED: {msg}", st.k, "all", 1.0) for st in studies for msg in st.anomalies()]
    if not adv["ok"].all():
        rows.append(s.row("CHECK FAILED: a searched LP did not report 'optimal'", 0, "all", 1.0))
    gap = np.abs(adv["bound"] - adv["optimal"]) > 1e-7 * adv["optimal"]
    if gap.any():
        rows.append(
            s.row(
                f"CHECK FAILED: LP duality gap above 1e-7 at {int(gap.sum())} searched optima",
                0,
                "all",
                1.0,
            )
        )
    if (adv["ratio"] > 1 + 1e-9).any():
        rows.append(s.row("CHECK FAILED: binary beats the LP at a searched point", 0, "all", 1.0))
    return rows


def _factor_figure(studies, adv, eps, factor, seed, path) -> None:
    fig = Figure(figsize=(12.5, 5.2), dpi=DPI)
    axes = fig.subplots(1, len(studies), sharey=True)
    for ax, st in zip(np.atleast_1d(axes), studies):
        ratio = st.ratio("binary")
        n = ratio.shape[0]
        x = st.eps[None, :] * np.exp(np.linspace(-0.02, 0.02, n))[:, None]
        ax.scatter(
            x.ravel(),
            ratio.ravel(),
            s=5,
            alpha=0.3,
            lw=0,
            color="tab:blue",
            label="random instances",
        )
        ax.plot(
            st.eps,
            ratio.min(axis=0),
            color="tab:blue",
            lw=1.5,
            label="worst random instance",
        )
        a = adv[adv["k"] == st.k]
        ax.scatter(
            a["eps"],
            a["ratio"],
            marker="v",
            color="tab:red",
            s=30,
            zorder=5,
            label="worst found by search",
        )
        ax.plot(eps, factor, color="black", lw=1.5, label="bound 1/(2(e^eps+1)^2)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("eps (log scale)")
        ax.set_title(f"KL, k = {st.k}: {n} random prior pairs + search")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=8, loc="lower left")
    np.atleast_1d(axes)[0].set_ylabel("BIN / OPT (log scale)")
    fig.suptitle(
        f"Kairouz et al. 2014, Sec. 3.3: the binary mechanism's KL against the optimum (seed {seed})",
        fontsize=11,
    )
    fig.tight_layout()
    _save(fig, path)
