"""Two further claims of Kairouz, Oh and Viswanath 2014 (*Extremal Mechanisms for Local
Differential Privacy*), measured exactly.

``kov-mi-small-eps`` (Sec. 1 and 4, information preservation): under eps-LDP,
``I(X;Y) <= (eps^2 / 2) max_A P(A) P(A^c) + O(eps^3)``, attained by the binary mechanism
whose set T maximises ``P(T) P(T^c)``; the binary mechanism is optimal for
``eps <= eps*_bin(P)`` and randomized response for ``eps >= eps*_RR(P)``. For Dirichlet(1)
priors on k = 4 and 6 symbols the optimal I(X;Y) is the staircase linear program
(:func:`ldpsim.utility.optimal_mechanism`) on an eps grid from 0.001 to 20; the two
thresholds are located per prior by bisection with the same LP. The binary mechanism's
mutual information has the closed form ``h(1/2 + (p - 1/2) t) - h(1/2 + t/2)`` (``h`` the
binary entropy in nats, ``p = P(T)``, ``t = tanh(eps/2)``), whose expansion
``eps^2 c/2 - eps^4 (c/24 + c^2/12) + O(eps^6)`` (``c = p(1-p)``) is derived here and
checked against the LP.

``kov-approximate-ldp`` (Sec. 5; Kairouz, Oh and Viswanath 2015, Sec. 2): on a binary
input the quaternary (eps, delta) mechanism's privacy region is ``R(eps, delta)`` and it
dominates every (eps, delta)-LDP mechanism. For random target pairs (eps, delta), random
2 x m mechanisms are drawn, projected exactly onto (eps, delta)-LDP (mixed with a
mechanism that ignores its input, the mixing weight solved in closed form), and checked:
``delta_M(eps') <= delta_Q(eps')`` on a fine grid of eps' and at every breakpoint of the
two piecewise-linear curves (exact), a post-processing ``M = Q W`` exists (Blackwell, a
feasibility LP), and utilities obeying the data-processing inequality (mutual
information, total variation) do not exceed the quaternary mechanism's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter
from numpy.typing import NDArray
from scipy.optimize import linprog

from ldpsim import _progress as progress
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.builders import matrix as matrix_mechanism
from ldpsim.mechanisms.standard import best_balanced_set
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary
from ldpsim.utility import MutualInformation, binary_for, optimal_mechanism
from ldpsim.utility.bounds import regime_thresholds

DPI = 110
PNG_META = {"Software": None}


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI, metadata=PNG_META)


# =========================================================================== kov-mi-small-eps
MI_K = (4, 6)
#: eps from 0.001 to 20, ten points per decade (43 points).
MI_EPS = np.unique(np.concatenate([np.logspace(-3.0, 1.0, 41), [20.0]]))
#: Bisection steps (in log eps) for the thresholds: a bracket of 10^0.1 shrinks below 2e-5 relative.
BISECT = 13
#: Priors per k whose thresholds are recomputed with :func:`ldpsim.utility.bounds.regime_thresholds`.
CROSS_CHECK = 5


def balanced_mass(P: NDArray[np.float64]) -> tuple[float, float]:
    """``(P(T), c)`` for the set T maximising ``P(T) P(T^c)``; ``c = max_A P(A) P(A^c)``."""
    p = float(P[best_balanced_set(P)].sum())
    return p, p * (1.0 - p)


def binary_mi(p: float, eps: Any) -> NDArray[np.float64]:
    """Closed form of the binary mechanism's ``I(X;Y)`` (nats) for a set of mass ``p``:
    ``h(1/2 + (p - 1/2) t) - h(1/2 + t/2)``, ``t = tanh(eps/2)``, summed as the series
    ``sum_n t^(2n) (1 - (2p-1)^(2n)) / (2n (2n-1))`` (all terms positive, no cancellation)
    where ``t <= 0.6``, directly above."""
    eps = np.atleast_1d(np.asarray(eps, dtype=np.float64))
    t = np.tanh(eps / 2.0)
    out = np.empty_like(t)
    small = t <= 0.6
    n = np.arange(1, 80)[:, None]
    ts = t[small][None, :]
    out[small] = np.sum(ts ** (2 * n) * (1.0 - (2 * p - 1.0) ** (2 * n)) / (2 * n * (2 * n - 1)), axis=0)
    tb = t[~small]

    def h(x):
        return -(x * np.log(x) + (1.0 - x) * np.log1p(-x))

    out[~small] = h(0.5 + (p - 0.5) * tb) - h(0.5 + tb / 2.0)
    return out


def small_eps_expansion(
    c: float | NDArray[Any], eps: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Leading term ``eps^2 c / 2`` (the paper's) and the fourth-order correction
    ``eps^4 (c/24 + c^2/12)`` (derived here) of the binary mechanism's ``I(X;Y)``."""
    return eps**2 * c / 2.0, eps**4 * (c / 24.0 + c * c / 12.0)


def _is_opt(value: float, opt: float) -> bool:
    return abs(opt - value) <= s.SAME * opt


def _bin_ok(U: MutualInformation, eps: float) -> bool:
    return _is_opt(U.value(binary_for(U, eps)), optimal_mechanism(U, eps).value)


def _rr_ok(U: MutualInformation, eps: float) -> bool:
    return _is_opt(U.value(catalog.build("randomized_response", k=U.k, eps=eps)), optimal_mechanism(U, eps).value)


def _bisect(test, lo: float, hi: float, steps: int = BISECT) -> float:
    """The switch point of ``test`` (True at lo, False at hi), bisected in log eps; midpoint of the last bracket."""
    a, b = math.log(lo), math.log(hi)
    for _ in range(steps):
        mid = (a + b) / 2
        if test(math.exp(mid)):
            a = mid
        else:
            b = mid
    return math.exp((a + b) / 2)


def _thresholds(st: s.Study) -> pd.DataFrame:
    """Per instance: eps*_bin (binary optimal below), eps*_RR (RR optimal above), and
    whether each regime is an interval on the grid."""
    eps = st.eps
    bin_ok = st.same_as_optimal("binary")
    rr_ok = st.same_as_optimal("randomized_response")
    rows = []
    for i in range(st.instances):
        P = st.priors[i, 0]
        U = MutualInformation(P)
        p, c = balanced_mass(P)
        b = bin_ok[i]
        if not b[0]:
            e_bin = 0.0
        elif b.all():
            e_bin = math.inf
        else:
            j = int(np.argmin(b))  # first grid eps where binary is not optimal
            e_bin = _bisect(lambda e, U=U: _bin_ok(U, e), eps[j - 1], eps[j])
        r = rr_ok[i]
        if not r[-1]:
            e_rr = math.inf
        elif r.all():
            e_rr = 0.0
        else:
            j = int(np.flatnonzero(~r)[-1])  # last grid eps where RR is not optimal
            e_rr = _bisect(lambda e, U=U: not _rr_ok(U, e), eps[j], eps[j + 1])
        first_false = int(np.argmin(b)) if not b.all() else b.size
        last_false = int(np.flatnonzero(~r)[-1]) if not r.all() else -1
        rows.append(
            {
                "k": st.k,
                "instance": i,
                "P_T": p,
                "c": c,
                "entropy": st.scale[i],
                "eps_bin": e_bin,
                "eps_rr": e_rr,
                "binary_interval": bool(not b[first_false:].any()),
                "rr_interval": bool(r[last_false + 1 :].all()),
            }
        )
        progress.advance(1)
    return pd.DataFrame(rows)


@register(
    "kov-mi-small-eps",
    "MI at small eps: OPT vs (eps^2/2) max_A P(A)P(A^c), binary and "
    "RR regime thresholds, k = 4, 6 (Kairouz et al. 2014, Sec. 4)",
    "Kairouz, Oh and Viswanath 2014, Sec. 1 (information leakage bound) and Sec. 4 (binary and randomized response "
    "optimal for mutual information)",
)
def kov_mi_small_eps(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """For Dirichlet(1) priors on k = 4 and 6 symbols: the optimal ``I(X;Y)`` over an eps
    grid from 0.001 to 20, against the paper's ``eps^2/2 max_A P(A)P(A^c)`` and the binary
    closed form; per prior, the eps below which binary and above which randomized response
    is optimal (bisection with the LP, relative precision 2e-5)."""
    seed, instances = s.check_run_args(seed, instances)
    eps = s.eps_grid(eps_grid, default=MI_EPS)
    studies, thresholds = [], []
    with progress.bar(instances * sum(2 * s.lp_cost(k) for k in MI_K), "kov-mi-small-eps", counts=False):
        for k in MI_K:
            progress.note(f"k = {k}")
            st = s.solve("mi", s.priors(seed, instances, k), eps, workers, tick=s.lp_cost(k))
            studies.append(st)
            thresholds.append(_thresholds(st))
    thr = pd.concat(thresholds, ignore_index=True)
    data = pd.concat([st.frame() for st in studies], ignore_index=True)
    c_of = {(r.k, r.instance): r.c for r in thr.itertuples()}
    cc = np.array([c_of[(k, i)] for k, i in zip(data["k"], data["instance"])])
    lead, fourth = small_eps_expansion(cc, data["eps"].to_numpy())
    data["c_balanced"] = cc
    data["ratio_to_eps2_bound"] = data["utility"] / lead
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    thr.to_csv(out_dir / "thresholds.csv", index=False, float_format="%.10g")
    pd.concat([st.prior_frame() for st in studies], ignore_index=True).to_csv(
        out_dir / "priors.csv", index=False, float_format="%.15g"
    )

    rows: list[dict] = []
    lo = 0
    for st, th in zip(studies, thresholds):
        k = st.k
        c = th["c"].to_numpy()
        opt = st.values["optimal"]
        lead, fourth = small_eps_expansion(c[:, None], eps[None, :])
        ratio = opt[:, lo] / lead[:, lo]
        rows.append(
            s.row(
                "OPT / (eps^2/2 max_A P(A)P(A^c)): min over priors",
                k,
                eps[lo],
                ratio.min(),
                1.0,
                "approx",
                "smallest eps of the grid",
            )
        )
        rows.append(
            s.row(
                "OPT / (eps^2/2 max_A P(A)P(A^c)): max over priors",
                k,
                eps[lo],
                ratio.max(),
                1.0,
                "approx",
                "smallest eps of the grid",
            )
        )
        if eps.size >= 2:
            mo = opt.mean(axis=0)
            slope = math.log(mo[1] / mo[0]) / math.log(eps[1] / eps[0])
            rows.append(
                s.row(
                    "OPT -> 0 as eps^a: a",
                    k,
                    f"{eps[0]:.3g}-{eps[1]:.3g}",
                    slope,
                    2.0,
                    "exponent",
                    "slope of log mean OPT vs log eps",
                )
            )
        small = eps <= 1.0
        if small.any():
            rem = ((opt - lead) / eps[None, :] ** 3)[:, small]
            rows.append(
                s.row(
                    "(OPT - eps^2 c/2) / eps^3: max over priors and eps <= 1",
                    k,
                    "<=1",
                    rem.max(),
                    note="the paper's O(eps^3) remainder; <= 0: the eps^2 term alone is an upper bound",
                )
            )
        above = opt > lead * (1 + 1e-12)
        rows.append(
            s.row(
                "(prior, eps) cells with OPT > eps^2 c/2",
                k,
                "all",
                int(above.sum()),
                note=f"out of {opt.size}"
                + (f"; smallest such eps {eps[np.argmax(above.any(axis=0))]:.3g}" if above.any() else ""),
            )
        )
        corr = (lead[:, lo] - opt[:, lo]) / fourth[:, lo]
        rows.append(
            s.row(
                "(eps^2 c/2 - OPT) / (eps^4 (c/24 + c^2/12)): min..max",
                k,
                eps[lo],
                corr.min(),
                note=f"max {corr.max():.6g}; fourth-order term derived here, -> 1",
            )
        )
        closed = np.array([binary_mi(p, eps) for p in th["P_T"]])
        rel = np.abs(st.values["binary"] - closed) / closed
        rows.append(
            s.row(
                "binary I(X;Y) vs closed form h(1/2+(p-1/2)t) - h(1/2+t/2): max rel. diff",
                k,
                "all",
                rel.max(),
                note="T maximising P(T)P(T^c); t = tanh(eps/2)",
            )
        )
        rows.append(
            s.row(
                "fraction of priors where binary is optimal",
                k,
                eps[lo],
                st.same_as_optimal("binary")[:, lo].mean(),
                1.0,
                "all",
                "smallest eps; optimal = within 1e-7 (relative) of the LP",
            )
        )
        rows.append(
            s.row(
                "fraction of priors where RR is optimal",
                k,
                eps[-1],
                st.same_as_optimal("randomized_response")[:, -1].mean(),
                1.0,
                "all",
                "largest eps of the grid",
            )
        )
        eb, er = th["eps_bin"].to_numpy(), th["eps_rr"].to_numpy()
        fin_b, fin_r = np.isfinite(eb) & (eb > 0), np.isfinite(er) & (er > 0)
        if fin_b.any():
            rows.append(
                s.row(
                    "eps*_bin (binary optimal below): min",
                    k,
                    "all",
                    eb[fin_b].min(),
                    note=f"median {np.median(eb[fin_b]):.4g}, max {eb[fin_b].max():.4g}; bisection with the LP",
                )
            )
        if fin_r.any():
            rows.append(
                s.row(
                    "eps*_RR (RR optimal above): max",
                    k,
                    "all",
                    er[fin_r].max(),
                    note=f"min {er[fin_r].min():.4g}, median {np.median(er[fin_r]):.4g}",
                )
            )
        both = fin_b & fin_r
        if both.any():
            rows.append(
                s.row(
                    "eps*_RR / eps*_bin: min",
                    k,
                    "all",
                    (er[both] / eb[both]).min(),
                    note="> 1: an intermediate regime where neither is optimal",
                )
            )
        cross = []
        for i in range(min(CROSS_CHECK, st.instances)):
            ref = regime_thresholds(MutualInformation(st.priors[i, 0]))
            for ours, theirs in ((eb[i], ref.eps_bin), (er[i], ref.eps_rr)):
                if math.isfinite(ours) and math.isfinite(theirs) and ours > 0:
                    cross.append(abs(ours / theirs - 1.0))
        if cross:
            rows.append(
                s.row(
                    "thresholds vs ldpsim.utility.regime_thresholds: max rel. diff",
                    k,
                    "all",
                    max(cross),
                    note=f"first {min(CROSS_CHECK, st.instances)} priors; its own grid, criterion 1e-9, bracket 1e-4",
                )
            )
        rows.append(
            s.row(
                "priors whose binary / RR regime is not an interval on the grid",
                k,
                "all",
                int((~th["binary_interval"]).sum() + (~th["rr_interval"]).sum()),
            )
        )
        rows.append(
            s.row(
                "max over priors of (OPT - BIN)/OPT, largest eps",
                k,
                eps[-1],
                (1.0 - st.ratio("binary")[:, -1]).max(),
                note="the binary mechanism's loss in the low-privacy regime",
            )
        )
    rows += [s.row(f"CHECK FAILED: {msg}", st.k, "all", 1.0) for st in studies for msg in st.anomalies()]
    summary = s.summary_frame(rows)
    write_summary(summary, out_dir)
    _mi_figure(studies, thresholds, eps, seed, out_dir / "kov-mi-small-eps.png")
    return summary


def _mi_figure(studies, thresholds, eps, seed, path) -> None:
    fig = Figure(figsize=(15, 5), dpi=DPI)
    a, b, c3 = fig.subplots(1, 3)
    colors = {4: "tab:blue", 6: "tab:red"}
    for st, th in zip(studies, thresholds):
        c = th["c"].to_numpy()[:, None]
        lead, fourth = small_eps_expansion(c, eps[None, :])
        ratio = st.values["optimal"] / lead
        for i in range(st.instances):
            a.plot(eps, ratio[i], color=colors.get(st.k, "gray"), lw=0.5, alpha=0.3)
            b.plot(
                eps, (lead[i] - st.values["optimal"][i]) / fourth[i], color=colors.get(st.k, "gray"), lw=0.5, alpha=0.3
            )
        a.plot([], [], color=colors.get(st.k, "gray"), label=f"k = {st.k}: optimal (LP), one line per prior")
        b.plot([], [], color=colors.get(st.k, "gray"), label=f"k = {st.k}")
    for cval, ls in ((0.25, "--"), (0.16, ":")):
        a.plot(
            eps,
            1 - eps**2 * (1 / 12 + cval / 6),
            color="black",
            ls=ls,
            lw=1,
            label=f"binary, 1 - eps^2 (1/12 + c/6), c = {cval}",
        )
    a.axhline(1.0, color="gray", lw=0.8)
    a.set_xscale("log")
    a.set_ylim(0, 1.1)
    a.set_xlabel("eps (log scale)")
    a.set_ylabel("I(X;Y) / (eps^2/2 max_A P(A)P(A^c))")
    a.set_title("optimal mutual information over the small-eps bound")
    a.legend(fontsize=7, loc="lower left")
    b.axhline(1.0, color="black", lw=1, label="binary mechanism, derived expansion")
    b.set_xscale("log")
    b.set_ylim(-1, 4)
    b.set_xlabel("eps (log scale)")
    b.set_ylabel("(eps^2 c/2 - OPT) / (eps^4 (c/24 + c^2/12))")
    b.set_title("fourth-order term (-> 1 while binary is optimal)")
    b.legend(fontsize=8)
    for off, (st, th) in enumerate(zip(studies, thresholds)):
        order = np.argsort(th["eps_bin"].to_numpy())
        y = np.arange(st.instances) + off * (st.instances + 5)
        eb = th["eps_bin"].to_numpy()[order]
        er = th["eps_rr"].to_numpy()[order]
        c3.hlines(y, eps.min(), eb, color="tab:blue", lw=1.2, label="binary optimal" if off == 0 else None)
        c3.hlines(y, er, eps.max(), color="tab:red", lw=1.2, label="RR optimal" if off == 0 else None)
        c3.text(eps.min() * 1.2, y[-1] + 1, f"k = {st.k}", fontsize=9, va="bottom")
    c3.set_xscale("log")
    c3.set_xlabel("eps (log scale)")
    c3.set_ylabel("prior (sorted by eps*_bin)")
    c3.set_title("regimes: binary below eps*_bin, RR above eps*_RR")
    c3.legend(fontsize=8, loc="lower right")
    for ax in (a, b, c3):
        ax.grid(True, which="both", alpha=0.25)
    fig.suptitle(
        f"Kairouz et al. 2014, mutual information at small eps and the regime thresholds (seed {seed})", fontsize=11
    )
    fig.tight_layout()
    _save(fig, path)


# =========================================================================== kov-approximate-ldp
#: Random mechanisms per target (eps, delta), by family.
FAMILIES = ("dense", "sparse", "postprocessed", "extreme")
PER_FAMILY = 3
#: eps' grid points per mechanism (from 0 to 2 eps + 3), besides the exact breakpoints.
GRID = 401
TOL = 1e-12


def quaternary_delta(eps: float, delta: float, eps_prime: NDArray[np.float64]) -> NDArray[np.float64]:
    """``delta`` of ``R(eps, delta)`` at ``eps'`` from the region's vertices (0, 1-delta),
    (a, a) with ``a = (1-delta)/(1+e^eps)``, (1-delta, 0): the largest ``1 - beta - e^eps' alpha``
    over them, ``max(delta, delta + (1-delta)(e^eps - e^eps')/(1+e^eps))`` for ``eps' >= 0``."""
    s_ = np.exp(np.asarray(eps_prime, dtype=np.float64))
    a = (1.0 - delta) / (1.0 + math.exp(eps))
    with np.errstate(invalid="ignore"):
        vals = np.stack(
            [np.full_like(s_, delta), 1.0 - a - s_ * a, np.where(np.isinf(s_), -np.inf, 1.0 - s_ * (1.0 - delta))]
        )
    return vals.max(axis=0)


def region_tradeoff(eps: float, delta: float, alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """``f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``."""
    return np.maximum.reduce(
        [np.zeros_like(alpha), 1 - delta - math.exp(eps) * alpha, math.exp(-eps) * (1 - delta - alpha)]
    )


def hockey(M: NDArray[np.float64], eps_prime: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max over the two directions of sum_y (M_x(y) - e^eps' M_x'(y))_+`` (vectorised, ``inf`` allowed)."""
    s_ = np.exp(np.asarray(eps_prime, dtype=np.float64))[:, None]
    out = []
    for x in (0, 1):
        a, b = M[x][None, :], M[1 - x][None, :]
        with np.errstate(invalid="ignore"):
            term = np.where(b > 0, a - s_ * b, a)
        out.append(np.clip(term, 0, None).sum(axis=1))
    return np.maximum(out[0], out[1])


def project(
    M: NDArray[np.float64], u: NDArray[np.float64], eps: float, delta: float
) -> tuple[NDArray[np.float64], float]:
    """The smallest mixing weight ``lam`` with ``(1 - lam) M + lam [u; u]`` (eps, delta)-LDP
    and the mixed matrix; ``lam = 0`` when ``M`` already is. For one direction
    ``g(lam) = sum_y ((1-lam) d_y + lam w_y)_+`` with ``d = M_x - e^eps M_x'`` and
    ``w = (1 - e^eps) u <= 0`` is convex, piecewise linear and decreasing; ``g = delta`` is
    solved on the piece that contains the root (exact up to rounding)."""
    e = math.exp(eps)
    lam_all = [0.0]
    for x in (0, 1):
        d = M[x] - e * M[1 - x]
        w = (1.0 - e) * u
        g0 = np.clip(d, 0, None).sum()
        if g0 <= delta:
            continue
        # breakpoints: (1 - lam) d + lam w = 0  <=>  lam = d / (d - w) for d > 0
        pos = d > 0
        bps = np.sort(np.unique(np.concatenate([[0.0, 1.0], d[pos] / (d[pos] - w[pos])])))
        gv = np.array([np.clip((1 - l) * d + l * w, 0, None).sum() for l in bps])
        j = int(np.argmax(gv <= delta))  # first breakpoint at or below delta
        l0, l1 = bps[j - 1], bps[j]
        active = ((1 - (l0 + l1) / 2) * d + (l0 + l1) / 2 * w) > 0
        # g(l) = sum_active (d + l (w - d)) = A + l B on [l0, l1]
        A, B = d[active].sum(), (w[active] - d[active]).sum()
        root = (delta - A) / B if B < 0 else l0  # B = 0: g = 0 on the piece, g(l0) = delta = 0 up to rounding
        lam_all.append(float(min(max(root, l0), l1)))
    lam = max(lam_all)
    return (1 - lam) * M + lam * np.vstack([u, u]), lam


def _draw(
    rng: np.random.Generator, family: str, eps: float, delta: float, Q: NDArray[np.float64]
) -> NDArray[np.float64]:
    """One random (eps, delta)-LDP mechanism on a binary input (2 x m)."""
    m = int(rng.integers(2, 9))
    if family == "postprocessed":  # inside by construction: Q W, W random row-stochastic 4 x m
        return Q @ rng.dirichlet(np.full(m, 0.5), size=4)
    if family == "extreme":  # output merges of the quaternary mechanism, and its (eps', delta') cousins
        pick = int(rng.integers(0, 3))
        if pick == 0:
            return np.column_stack([Q[:, 0] + Q[:, 1], Q[:, 2] + Q[:, 3]])
        if pick == 1:
            perm = rng.permutation(4)
            return Q[:, perm]
        e2 = eps * rng.uniform(0, 1)  # (e2, d2) with delta_Q2(eps) = delta: the projection below finds it
        M = catalog.build("quaternary", eps=e2, delta=min(1.0, delta * rng.uniform(1, 3))).matrix
        return project(M, np.array([0.0, 0.5, 0.5, 0.0]), eps, delta)[0]
    M = rng.dirichlet(np.full(m, 0.7), size=2)
    if family == "sparse":  # outputs that only one input produces (delta-type outputs)
        z = rng.integers(0, 2, size=m)
        zero = rng.random(m) < 0.4
        zero[int(rng.integers(0, m))] = False
        M[z[zero], np.flatnonzero(zero)] = 0.0
        M /= M.sum(axis=1, keepdims=True)
        both = (M > 0).all(axis=0)
        if not both.any():
            M = np.column_stack([M, [1e-3, 1e-3]])
            M /= M.sum(axis=1, keepdims=True)
            both = (M > 0).all(axis=0)
        u = np.where(both, rng.dirichlet(np.ones(M.shape[1])), 0.0)
    else:
        u = rng.dirichlet(np.ones(m))
    u = u / u.sum()
    return project(M, u, eps, delta)[0]


def blackwell(Q: NDArray[np.float64], M: NDArray[np.float64]) -> tuple[bool, float]:
    """Whether ``M = Q W`` for a row-stochastic ``W`` (4 x m), by a feasibility LP; the
    residual ``max |Q W - M|`` of the solution found."""
    nq, m = Q.shape[1], M.shape[1]
    # variables W[i, y] row-major; equalities: (Q W)[x, y] = M[x, y], sum_y W[i, y] = 1
    A = np.zeros((2 * m + nq, nq * m))
    for x in range(2):
        for y in range(m):
            A[x * m + y, np.arange(nq) * m + y] = Q[x]
    for i in range(nq):
        A[2 * m + i, i * m : (i + 1) * m] = 1.0
    b = np.concatenate([M.ravel(), np.ones(nq)])
    res = linprog(np.zeros(nq * m), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    if res.status != 0:
        return False, math.inf
    W = np.clip(res.x.reshape(nq, m), 0, None)
    W /= W.sum(axis=1, keepdims=True)
    return True, float(np.abs(Q @ W - M).max())


def _mi_binary(M: NDArray[np.float64], p: float) -> float:
    return MutualInformation(np.array([p, 1.0 - p])).value(M)


def _check_target(rng: np.random.Generator, eps: float, delta: float, i: int) -> tuple[list[dict], dict]:
    Qm = catalog.build("quaternary", eps=eps, delta=delta)
    Q = np.array(Qm.matrix)
    grid = np.linspace(0.0, 2 * eps + 3.0, GRID)
    dq_lib = Qm.delta(np.append(grid, np.inf))
    dq_closed = quaternary_delta(eps, delta, np.append(grid, np.inf))
    alpha = np.linspace(0, 1, 101)
    tq = np.asarray(Qm.tradeoff(alpha))
    target = {
        "instance": i,
        "eps": eps,
        "delta": delta,
        "Q_delta_at_eps": float(Qm.delta(eps)),
        "Q_lib_vs_region": float(np.abs(dq_lib - dq_closed).max()),
        "Q_tradeoff_vs_region": float(np.abs(tq - region_tradeoff(eps, delta, alpha)).max()),
    }
    rows = []
    for fam in FAMILIES:
        for r in range(PER_FAMILY):
            M = _draw(rng, fam, eps, delta, Q)
            mech = matrix_mechanism(M)
            Mm = np.array(mech.matrix)
            # exact breakpoints: the log likelihood ratios of M (both directions), eps, 0, inf
            with np.errstate(divide="ignore", invalid="ignore"):
                lr = np.abs(np.log(Mm[0] / Mm[1]))
            bps = np.unique(np.concatenate([[0.0, eps, np.inf], lr[np.isfinite(lr)]]))
            pts = np.concatenate([grid, bps])
            dm = mech.delta(pts)
            dq = quaternary_delta(eps, delta, pts)
            viol = dm - dq
            ok_bw, resid = blackwell(Q, Mm)
            p = float(rng.uniform(0.05, 0.95))
            rows.append(
                {
                    "instance": i,
                    "eps": eps,
                    "delta": delta,
                    "family": fam,
                    "m": Mm.shape[1],
                    "delta_at_eps": float(dm[grid.size + np.flatnonzero(bps == eps)[0]]),
                    "max_violation": float(viol.max()),
                    "max_violation_breakpoints": float(viol[grid.size :].max()),
                    "distance": float(np.min(-viol[dq > TOL])) if np.any(dq > TOL) else math.inf,
                    "argmax_eps_prime": float(pts[int(np.argmax(viol))]),
                    # touching where delta_Q = 0 is trivial (the test that never rejects): not counted
                    "touches": bool(np.any((viol >= -TOL) & (dq > TOL))),
                    "touches_at_eps": bool(
                        delta > TOL and dm[grid.size + np.flatnonzero(bps == eps)[0]] >= delta - TOL
                    ),
                    "tv": float(dm[grid.size]),
                    "tv_bound": (math.exp(eps) - 1 + 2 * delta) / (math.exp(eps) + 1),
                    "own_vs_library": float(np.abs(hockey(Mm, pts) - dm).max()),
                    "blackwell": ok_bw,
                    "blackwell_residual": resid,
                    "prior": p,
                    "mi": _mi_binary(Mm, p),
                    "mi_quaternary": _mi_binary(Q, p),
                    "tv_M": 0.5 * float(np.abs(Mm[0] - Mm[1]).sum()),
                    "tv_Q": 0.5 * float(np.abs(Q[0] - Q[1]).sum()),
                }
            )
    return rows, target


def targets(seed: int, instances: int) -> NDArray[np.float64]:
    """``instances`` pairs (eps, delta): eps log-uniform on [0.05, 5], delta uniform on [0, 0.3]
    (every tenth delta = 0: pure eps-LDP)."""
    u = np.random.default_rng(seed).random((instances, 2))  # the first n targets do not depend on instances
    eps = np.exp(math.log(0.05) + u[:, 0] * math.log(100.0))
    delta = 0.3 * u[:, 1]
    delta[::10] = 0.0
    return np.column_stack([eps, delta])


@register(
    "kov-approximate-ldp",
    "(eps, delta)-LDP on a binary input: random mechanisms inside the quaternary region R(eps, delta) (Kairouz et "
    "al. 2014, Sec. 5)",
    "Kairouz, Oh and Viswanath 2014, Sec. 5 (quaternary mechanism optimal for approximate LDP); Kairouz, Oh and "
    "Viswanath 2015, Sec. 2 (privacy region R(eps, delta))",
)
def kov_approximate_ldp(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """For ``instances`` random targets (eps, delta) (``eps_grid``, when given, replaces the
    random eps), 12 random (eps, delta)-LDP mechanisms each (four families): exact delta
    curves against the quaternary mechanism's, Blackwell post-processing, utilities."""
    seed = s.check_run_args(seed, instances)[0]
    instances = int(instances)
    tg = targets(seed, instances)
    if eps_grid is not None:
        e = s.eps_grid(eps_grid)
        tg = np.column_stack([np.resize(e, instances), tg[:, 1]])
    rows, tgt = [], []
    with progress.bar(instances, "kov-approximate-ldp", unit="target"):
        for i, (eps, delta) in enumerate(tg):
            rng = np.random.default_rng([seed, i])
            r, t = _check_target(rng, float(eps), float(delta), i)
            rows += r
            tgt.append(t)
            progress.advance(1)
    data = pd.DataFrame(rows)
    tdf = pd.DataFrame(tgt)
    data.to_csv(out_dir / "mechanisms.csv", index=False, float_format="%.15g")
    tdf.to_csv(out_dir / "targets.csv", index=False, float_format="%.15g")

    n = len(data)
    out = [
        s.row(
            "mechanisms tried",
            2,
            "all",
            n,
            note=f"{instances} targets (eps, delta) x {len(FAMILIES)} families x {PER_FAMILY}",
        ),
        s.row(
            "mechanisms outside the quaternary region: delta_M(eps') > delta_Q(eps') + 1e-12",
            2,
            "all",
            int((data["max_violation"] > TOL).sum()),
            0.0,
            "equal",
            f"{GRID} eps' in [0, 2 eps + 3] plus every breakpoint",
        ),
        s.row(
            "max violation max_eps' (delta_M - delta_Q)",
            2,
            "all",
            data["max_violation"].max(),
            note="must be <= 1e-12; 0 where a mechanism touches the boundary",
        ),
        s.row(
            "mechanisms touching the boundary (delta_M = delta_Q > 0 at some eps')",
            2,
            "all",
            int(data["touches"].sum()),
            note="within 1e-12; "
            + ", ".join(f"{f}: {int(g['touches'].sum())}/{len(g)}" for f, g in data.groupby("family", sort=False)),
        ),
        s.row(
            "... touching at eps' = eps (delta_M(eps) = delta > 0)",
            2,
            "all",
            int(data["touches_at_eps"].sum()),
            note=f"out of {int((data['delta'] > 0).sum())} with delta > 0",
        ),
        s.row(
            "... touching with delta = 0 (pure eps-LDP: at some eps' < eps)",
            2,
            "all",
            int(data.loc[data["delta"] == 0, "touches"].sum()),
            note=f"out of {int((data['delta'] == 0).sum())}",
        ),
        s.row(
            "mechanisms with TV = (e^eps - 1 + 2 delta)/(e^eps + 1), the bound at eps' = 0",
            2,
            "all",
            int((data["tv"] >= data["tv_bound"] - TOL).sum()),
        ),
        s.row("own hockey-stick vs library delta: max abs diff", 2, "all", data["own_vs_library"].max()),
        s.row(
            "mechanisms that are a post-processing Q W of the quaternary mechanism",
            2,
            "all",
            int(data["blackwell"].sum()),
            float(n),
            "equal",
            f"Blackwell; feasibility LP, max residual {data['blackwell_residual'].max():.2g}",
        ),
        s.row(
            "mechanisms with I(X;Y) above the quaternary's",
            2,
            "all",
            int((data["mi"] > data["mi_quaternary"] * (1 + 1e-12) + 1e-15).sum()),
            0.0,
            "equal",
            f"random binary prior per mechanism; max I_M/I_Q {np.max(data['mi'] / data['mi_quaternary']):.12g}",
        ),
        s.row(
            "mechanisms with TV(M0, M1) above the quaternary's",
            2,
            "all",
            int((data["tv_M"] > data["tv_Q"] + TOL).sum()),
            0.0,
            "equal",
        ),
        s.row(
            "quaternary: |delta_Q(eps) - delta|, max over targets",
            2,
            "all",
            float(np.abs(tdf["Q_delta_at_eps"] - tdf["delta"]).max()),
            note="attains the (eps, delta) boundary",
        ),
        s.row(
            "quaternary: library delta(eps') vs R(eps, delta) from its vertices, max abs diff",
            2,
            "all",
            tdf["Q_lib_vs_region"].max(),
        ),
        s.row(
            "quaternary: trade-off function vs f_(eps,delta), max abs diff",
            2,
            "all",
            tdf["Q_tradeoff_vs_region"].max(),
            note="101 alphas",
        ),
    ]
    summary = s.summary_frame(out)
    write_summary(summary, out_dir)
    _ldp_figure(data, tg, seed, out_dir / "kov-approximate-ldp.png")
    return summary


def _ldp_figure(data: pd.DataFrame, tg, seed: int, path: Path) -> None:
    fig = Figure(figsize=(13, 5), dpi=DPI)
    a, b = fig.subplots(1, 2)
    # one target with delta > 0: every mechanism's delta curve under the quaternary's
    i = int(np.flatnonzero(tg[:, 1] > 0.05)[0])
    eps, delta = float(tg[i, 0]), float(tg[i, 1])
    rng = np.random.default_rng([seed, i])
    Q = np.array(catalog.build("quaternary", eps=eps, delta=delta).matrix)
    grid = np.linspace(0, 2 * eps + 3, 400)
    colors = dict(zip(FAMILIES, ("tab:blue", "tab:orange", "tab:green", "tab:purple")))
    for fam in FAMILIES:
        for r in range(PER_FAMILY):
            M = _draw(rng, fam, eps, delta, Q)
            a.plot(grid, hockey(M, grid), color=colors[fam], lw=1, alpha=0.7, label=fam if r == 0 else None)
    a.plot(grid, quaternary_delta(eps, delta, grid), color="black", lw=2.2, ls="--", label="quaternary = R(eps, delta)")
    a.axvline(eps, color="gray", lw=0.8)
    a.set_xlabel("eps'")
    a.set_ylabel("delta_M(eps')")
    a.set_title(f"target {i}: eps = {eps:.3g}, delta = {delta:.3g}; {len(FAMILIES) * PER_FAMILY} random mechanisms")
    a.legend(fontsize=8)
    gap = data["max_violation"].to_numpy()
    shown = np.maximum(data["distance"].to_numpy(), 1e-17)
    for fam in FAMILIES:
        sel = (data["family"] == fam).to_numpy()
        b.scatter(data["eps"][sel], shown[sel], s=10, alpha=0.6, color=colors[fam], label=fam)
    b.axhline(1e-12, color="black", ls=":", lw=1, label="1e-12: touches the boundary below")
    b.set_xscale("log")
    b.set_yscale("log")
    b.xaxis.set_minor_formatter(NullFormatter())
    b.set_xlabel("target eps (log scale)")
    b.set_ylabel("min over eps' of delta_Q - delta_M (where delta_Q > 0)")
    b.set_title(f"{len(data)} mechanisms: distance to the boundary (max violation {gap.max():.2g})")
    b.legend(fontsize=8)
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.25)
    fig.suptitle(
        "Kairouz et al. 2014 / 2015: the quaternary mechanism's region R(eps, delta) contains every (eps, "
        f"delta)-LDP mechanism (seed {seed})",
        fontsize=11,
    )
    fig.tight_layout()
    _save(fig, path)
