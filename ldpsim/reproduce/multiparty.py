"""Optimality of the multi-party randomized response (``ldpsim reproduce multiparty-optimality``).

Kairouz et al. 2015, Sec. 5 (docs/theory.md sec. 7): k parties with independent
uniform bits and privacy levels (eps_i, delta_i); the protocol in which party i broadcasts
its bit through the quaternary (eps_i, delta_i) mechanism (``Protocol.universal``) is
optimal for every party, every function, every gain and both accuracy notions at once.
Here that is checked against alternative protocols *at the same privacy levels*:

* ``binary``: Warner's randomized response at eps_i (``Protocol.binary``, ignores delta_i);
* ``postprocessed-r`` (r = 1..3): party i's quaternary (eps_i, delta_i) matrix times a
  random row-stochastic 4 x m_i matrix (rows Dirichlet(1), m_i in {2, 3, 4}): private by
  post-processing;
* ``random2xm-r`` (r = 1, 2): a random 2 x m_i matrix ``lam R + (1 - lam) U`` (rows of R and
  the common row U Dirichlet(1/2)), with the largest ``lam`` in [0, 1] that passes the exact
  (eps_i, delta_i) check, found by bisection (the hockey-stick divergence is convex in
  ``lam`` and 0 at ``lam = 0``, hence non-decreasing, so bisection is exact).

Every alternative passes ``Protocol.privacy_table()['private']`` at the RR's own
(eps_i, delta_i) (a summary row counts it). Functions: XOR, sum, majority, AND (indicator
gain) and two random general functions per draw (2 and 3 outputs) with random gains
``w[true, guess] ~ U(0, 1)`` off the diagonal and ``U(1, 2)`` on it. For each party and the
central observer (``OBSERVER``):

* the average accuracy (``exact_accuracy``, exact) at k = 3, 5, 8 (general path: tensor
  contraction) and, for XOR/sum/majority/AND, at k = 200 in two privacy classes via the
  symmetric (transcript-class) path: 197 parties at (eps_A, 0) and 3 at (eps_B, delta_B).
  Parties in a class are exchangeable, so one representative of each class is evaluated.
  The approximate-DP class is kept small because a class of n parties with delta > 0
  has C(n + 3, 3) transcript classes (the exact enumeration's cost); at k = 200 the
  alternatives use one matrix per class and m = 2 outputs for the same reason;
* the worst-case accuracy (the linear program of Kairouz et al. 2015, eq. 12) at k = 3.

Privacy levels: eps_i log-uniform on [0.1, 3] (or uniform on the ``eps_grid`` values if
given), delta_i = 0 with probability 1/4 else uniform on [0.001, 0.3], all from
``numpy.random.default_rng(seed)`` drawn draw by draw (the first n draws do not depend on
``instances``); the alternatives and the random functions of draw d at size k come from
``default_rng([seed, d, k])``.

``instances`` -> number of draws: ``min(instances, MAX_DRAWS)`` draws of levels at k = 3, 5,
8 (default 100 -> 20 draws) and ``min(instances, LARGE_DRAWS)`` at k = 200, so the default
run takes well under a minute.

Checks: per (function, notion), the minimum over everything of ``gap = rr - alt`` must be
``>= -1e-9`` (average; exact up to rounding) or ``>= -1e-7`` (worst case; LP tolerance); the
RR's XOR accuracies must equal the closed form ``(1 + prod_{j != i}(delta_j + (1 - delta_j)
tanh(eps_j/2)))/2`` to 1e-12; and every alternative must be exactly private.

Files: ``data.csv`` (one row per draw x function x k x party x alternative x notion:
accuracy, rr_accuracy, gap, private), ``levels.csv`` (the drawn (eps_i, delta_i)),
``summary.csv``, ``multiparty-optimality.png`` (per function, alternative accuracy
against RR accuracy: every point on or below the diagonal).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, Sequence, overload

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray

from ldpsim import _progress as progress
from ldpsim import _validate as v
from ldpsim._pool import pool_map
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog, from_matrix
from ldpsim.protocols import OBSERVER, Protocol, Task, exact_accuracy
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

Array = NDArray[np.float64]

NAME = "multiparty-optimality"
#: Sizes with heterogeneous parties (average accuracy) and the worst-case size.
K_SMALL = (3, 5, 8)
K_WORST = 3
#: The large size: two privacy classes, LARGE_B parties at (eps_B, delta_B), the rest at (eps_A, 0).
K_LARGE = 200
LARGE_B = 3
#: Draws of privacy levels: min(instances, MAX_DRAWS) at K_SMALL, min(instances, LARGE_DRAWS) at K_LARGE.
MAX_DRAWS = 20
LARGE_DRAWS = 2
#: Time of a draw with the k = 200 comparisons over one without, for the progress bar
#: (measured: 3.0 s against 0.8 s).
LARGE_COST = 3.8
#: Privacy levels: eps log-uniform on EPS_RANGE; delta 0 with probability P_PURE, else uniform on DELTA_RANGE.
EPS_RANGE = (0.1, 3.0)
DELTA_RANGE = (0.001, 0.3)
P_PURE = 0.25
#: Alternatives per draw: post-processed quaternary and random 2 x m matrices; output sizes m.
N_POST = 3
N_RANDOM = 2
SIZES = (2, 3, 4)
#: Tolerances on the gap rr - alt (average: exact arithmetic up to rounding; worst: HiGHS).
TOL = {"average": 1e-9, "worst": 1e-7}
XOR_TOL = 1e-12
SYMMETRIC = ("xor", "sum", "majority", "and")
FUNCTIONS = (*SYMMETRIC, "random-2", "random-3")
NOTIONS = ("average", "worst")
DPI = 110
PNG_META = {"Software": None}
DATA_COLUMNS = [
    "instance",
    "function",
    "k",
    "party",
    "role",
    "protocol",
    "notion",
    "accuracy",
    "rr_accuracy",
    "gap",
    "private",
]


# --------------------------------------------------------------------------- privacy levels
def _eps(rng: np.random.Generator, size: int, grid: Array | None) -> Array:
    if grid is not None:
        return rng.choice(grid, size)
    lo, hi = EPS_RANGE
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size))


def _delta(rng: np.random.Generator, size: int) -> Array:
    pure = rng.random(size) < P_PURE
    return np.where(pure, 0.0, rng.uniform(*DELTA_RANGE, size))


def draw_levels(seed: int, draws: int, large_draws: int, grid: Array | None = None) -> list[dict]:
    """Per draw: ``{k: (eps, delta)}`` for k in K_SMALL and, for the first ``large_draws``,
    ``"large": (eps_A, eps_B, delta_B)``. One generator, draw by draw."""
    rng = np.random.default_rng(seed)
    out = []
    for d in range(draws):
        lv: dict[Any, Any] = {k: (_eps(rng, k, grid), _delta(rng, k)) for k in K_SMALL}
        e = _eps(rng, 2, grid)
        db = float(rng.uniform(*DELTA_RANGE))
        if d < large_draws:
            lv["large"] = (float(e[0]), float(e[1]), db)
        out.append(lv)
    return out


def large_levels(eps_a: float, eps_b: float, delta_b: float) -> tuple[Array, Array]:
    n_a = K_LARGE - LARGE_B
    return np.r_[np.full(n_a, eps_a), np.full(LARGE_B, eps_b)], np.r_[np.zeros(n_a), np.full(LARGE_B, delta_b)]


# --------------------------------------------------------------------------- alternatives
def _quaternary(eps: float, delta: float) -> Array:
    return catalog.build("quaternary", eps=eps, delta=delta).matrix


def postprocessed_matrix(eps: float, delta: float, m: int, rng: np.random.Generator) -> Array:
    """The quaternary (eps, delta) matrix times a random row-stochastic 4 x m matrix."""
    w = rng.dirichlet(np.ones(m), size=4)
    return _quaternary(eps, delta) @ w


@overload
def random_private_matrix(
    eps: float, delta: float, m: int, rng: np.random.Generator, iters: int = 50, *, return_lam: Literal[False] = False
) -> Array: ...


@overload
def random_private_matrix(
    eps: float, delta: float, m: int, rng: np.random.Generator, iters: int = 50, *, return_lam: Literal[True]
) -> tuple[Array, float]: ...


def random_private_matrix(
    eps: float, delta: float, m: int, rng: np.random.Generator, iters: int = 50, *, return_lam: bool = False
) -> Array | tuple[Array, float]:
    """``lam R + (1 - lam) U`` with random R (2 x m) and common row U, ``lam`` the largest
    value in [0, 1] (to bisection accuracy) that passes the exact (eps, delta) check
    (``return_lam``: also return ``lam``)."""
    r = rng.dirichlet(np.full(m, 0.5), size=2)
    u = rng.dirichlet(np.full(m, 0.5))

    def mix(lam: float) -> Array:
        return lam * r + (1.0 - lam) * u[None, :]

    lo = 1.0
    if not from_matrix(mix(1.0)).is_private(eps, delta):
        lo, hi = 0.0, 1.0
        for _ in range(iters):
            mid = 0.5 * (lo + hi)
            if from_matrix(mix(mid)).is_private(eps, delta):
                lo = mid
            else:
                hi = mid
    return (mix(lo), lo) if return_lam else mix(lo)


def alternatives(eps: Array, delta: Array, rng: np.random.Generator) -> list[Protocol]:
    """Binary RR, N_POST post-processed quaternary and N_RANDOM random 2 x m protocols, each
    party with its own random matrix (heterogeneous parties)."""
    out = [Protocol.binary(eps, delta)]
    for r in range(N_POST):
        mats = [postprocessed_matrix(e, d, int(rng.choice(SIZES)), rng) for e, d in zip(eps, delta)]
        out.append(Protocol.from_matrices(mats, eps, delta, name=f"postprocessed-{r + 1}"))
    for r in range(N_RANDOM):
        mats = [random_private_matrix(e, d, int(rng.choice(SIZES)), rng) for e, d in zip(eps, delta)]
        out.append(Protocol.from_matrices(mats, eps, delta, name=f"random2xm-{r + 1}"))
    return out


def class_alternatives(eps: Array, delta: Array, rng: np.random.Generator) -> list[Protocol]:
    """As :func:`alternatives` for parties in privacy classes: one matrix per class (parties
    with equal levels), m = 2 outputs, so the transcript classes stay few."""
    levels = sorted({(float(e), float(d)) for e, d in zip(eps, delta)})
    out = [Protocol.binary(eps, delta)]
    for name, maker in (("postprocessed", postprocessed_matrix), ("random2xm", random_private_matrix)):
        for r in range(N_RANDOM):
            per_class = {lv: maker(lv[0], lv[1], 2, rng) for lv in levels}
            mats = [per_class[(float(e), float(d))] for e, d in zip(eps, delta)]
            out.append(Protocol.from_matrices(mats, eps, delta, name=f"{name}-{r + 1}"))
    return out


def privacy_of(rr: Protocol, alts: Sequence[Protocol]) -> dict[str, bool]:
    return {alt.name: private_at(alt, rr.eps, rr.delta) for alt in alts}


def private_at(protocol: Protocol, eps: Array, delta: Array) -> bool:
    """Whether every party's matrix of ``protocol`` is exactly (eps_j, delta_j)-DP."""
    try:
        table = Protocol.from_matrices(protocol.matrices, eps, delta).privacy_table()
    except LdpSimError:
        return False
    return bool(table["private"].all())


# --------------------------------------------------------------------------- tasks
def tasks_for(parties: int, rng: np.random.Generator | None) -> dict[str, Task]:
    """XOR, sum, majority, AND (indicator gain) of ``parties`` bits and, when ``rng`` is
    given, two random general functions (2 and 3 outputs) with random gains."""
    out = {
        "xor": Task.xor(parties),
        "sum": Task.sum(parties),
        "majority": Task.majority(parties),
        "and": Task.and_(parties),
    }
    if rng is not None:
        for y in (2, 3):
            gain = rng.uniform(0.0, 1.0, (y, y)) + np.eye(y)  # a right answer is worth more than a wrong one
            out[f"random-{y}"] = Task.random(parties, y, rng, gain=gain)
    return out


# --------------------------------------------------------------------------- comparisons
def compare(
    rr: Protocol,
    alts: Sequence[Protocol],
    task: Task,
    function: str,
    *,
    receivers: Sequence[int],
    notions: Sequence[str] = ("average",),
    instance: int = 0,
    general: bool = True,
    private: dict[str, bool] | None = None,
) -> list[dict]:
    """Rows ``accuracy`` (of each alternative), ``rr_accuracy``, ``gap = rr - alt`` for each
    notion and receiver in ``receivers`` (party indices, ``OBSERVER`` = -1 for the observer).
    ``general``: use the tensor path
    for symmetric functions too (fast for k <= 12 with distinct parties)."""
    kw = {"max_classes": 0} if general else {}
    private = {alt.name: private_at(alt, rr.eps, rr.delta) for alt in alts}
    rows = []
    for notion in notions:
        for party in receivers:
            ref = exact_accuracy(rr, task, party, notion, **kw)
            for alt in alts:
                acc = exact_accuracy(alt, task, party, notion, **kw)
                rows.append(
                    dict(
                        instance=instance,
                        function=function,
                        k=rr.parties,
                        party=int(party),
                        role="observer" if party == OBSERVER else "party",
                        protocol=alt.name,
                        notion=notion,
                        accuracy=acc,
                        rr_accuracy=ref,
                        gap=ref - acc,
                        private=private[alt.name],
                    )
                )
    return rows


def run_draw(seed: int, instance: int, levels: dict) -> list[dict]:
    """Every comparison of one draw of privacy levels."""
    rows: list[dict] = []
    for k in K_SMALL:
        eps, delta = levels[k]
        rng = np.random.default_rng([seed, instance, k])
        rr = Protocol.universal(eps, delta)
        alts = alternatives(eps, delta, rng)
        private = privacy_of(rr, alts)
        notions = NOTIONS if k == K_WORST else ("average",)
        for fname, task in tasks_for(k, rng).items():
            rows += compare(
                rr,
                alts,
                task,
                fname,
                receivers=[OBSERVER, *range(k)],
                notions=notions,
                instance=instance,
                private=private,
            )
    if "large" in levels:
        eps, delta = large_levels(*levels["large"])
        rng = np.random.default_rng([seed, instance, K_LARGE])
        rr = Protocol.universal(eps, delta)
        alts = class_alternatives(eps, delta, rng)
        private = privacy_of(rr, alts)
        for fname, task in tasks_for(K_LARGE, None).items():
            rows += compare(
                rr,
                alts,
                task,
                fname,
                receivers=[OBSERVER, 0, K_LARGE - 1],
                instance=instance,
                general=False,
                private=private,
            )
    return rows


def level_frame(levels: list[dict]) -> pd.DataFrame:
    rows = []
    for d, lv in enumerate(levels):
        for k in K_SMALL:
            for j, (e, dl) in enumerate(zip(*lv[k])):
                rows.append(dict(instance=d, k=k, party=j, eps=float(e), delta=float(dl)))
        if "large" in lv:
            eps, delta = large_levels(*lv["large"])
            for j in (0, K_LARGE - 1):  # one representative per class (parties 0..196 and 197..199)
                rows.append(dict(instance=d, k=K_LARGE, party=j, eps=float(eps[j]), delta=float(delta[j])))
    return pd.DataFrame(rows, columns=["instance", "k", "party", "eps", "delta"])


def xor_closed_form(eps: Array, delta: Array, party: int) -> float:
    """docs/theory.md sec. 7: ``(1 + prod_{j != i}(delta_j + (1 - delta_j) tanh(eps_j / 2))) / 2``."""
    tv = np.asarray(delta) + (1 - np.asarray(delta)) * np.tanh(np.asarray(eps) / 2)
    keep = np.ones(tv.size, dtype=bool)
    if party != OBSERVER:
        keep[party] = False
    return float(0.5 * (1.0 + np.prod(tv[keep])))


def xor_errors(data: pd.DataFrame, levels: list[dict]) -> Array:
    """|RR's XOR average accuracy - closed form| for every (draw, k, party) in ``data``."""
    xr = data[(data["function"] == "xor") & (data["notion"] == "average")].drop_duplicates(["instance", "k", "party"])
    out = []
    for d, k, party, acc in xr[["instance", "k", "party", "rr_accuracy"]].itertuples(index=False):
        eps, delta = large_levels(*levels[d]["large"]) if k == K_LARGE else levels[d][k]
        out.append(abs(acc - xor_closed_form(eps, delta, int(party))))
    return np.array(out)


# --------------------------------------------------------------------------- summary
def _ks(frame: pd.DataFrame) -> str:
    return "/".join(str(k) for k in sorted(frame["k"].unique()))


def check(data: pd.DataFrame) -> pd.DataFrame:
    """Summary rows from comparison rows: per (function, notion) the minimum gap rr - alt
    (paper 0: "RR never worse"), the number of comparisons and whether every alternative
    was exactly private at the RR's levels."""
    rows = []
    functions = [f for f in FUNCTIONS if f in set(data["function"])] + sorted(set(data["function"]) - set(FUNCTIONS))
    for fname in functions:
        for notion in NOTIONS:
            sub = data[(data["function"] == fname) & (data["notion"] == notion)]
            if sub.empty:
                continue
            tol = TOL[notion]
            low = float(sub["gap"].min())
            worst = sub.loc[sub["gap"].idxmin()]
            rows.append(
                dict(
                    quantity=f"{fname}: RR never worse ({notion} accuracy), min gap RR - alternative",
                    k=_ks(sub),
                    eps="heterogeneous",
                    paper=0.0,
                    ours=low,
                    agrees="yes" if low >= -tol else "no",
                    criterion=f"ours >= -{tol:g} over {len(sub)} comparisons ({sub['protocol'].nunique()} "
                    f"alternatives, every party and the observer); max gap {sub['gap'].max():.3g}; min at "
                    f"{worst['protocol']}, k = {worst['k']}, party {worst['party']}",
                )
            )
    rows.append(
        s.row(
            "comparisons (draw x function x k x party/observer x alternative x notion)",
            _ks(data),
            "heterogeneous",
            float(len(data)),
            note=f"{data['instance'].nunique()} draws; {int((data['notion'] == 'worst').sum())} of them worst-case "
            "(linear programs, k = 3)",
        )
    )
    per_protocol = data.drop_duplicates(["instance", "k", "protocol"])
    rows.append(
        dict(
            quantity="alternatives exactly private at the RR's (eps_i, delta_i), fraction",
            k=_ks(data),
            eps="heterogeneous",
            paper=1.0,
            ours=float(data["private"].mean()),
            agrees="yes" if bool(data["private"].all()) else "no",
            criterion=f"ours == 1: Protocol.privacy_table()['private'] for every party of every alternative "
            f"({len(per_protocol)} protocol instances)",
        )
    )
    return s.summary_frame(rows)


def xor_row(data: pd.DataFrame, levels: list[dict]) -> dict:
    err = xor_errors(data, levels)
    return dict(
        quantity="xor: RR average accuracy vs closed form (1 + prod_{j!=i}(d_j + (1-d_j) tanh(e_j/2)))/2, max error",
        k=_ks(data[data["function"] == "xor"]),
        eps="heterogeneous",
        paper=0.0,
        ours=float(err.max()),
        agrees="yes" if float(err.max()) <= XOR_TOL else "no",
        criterion=f"ours <= {XOR_TOL:g} over {err.size} (draw, k, party/observer) cases (docs/theory.md sec. 7)",
    )


# --------------------------------------------------------------------------- figure
FAMILY_COLORS = {"binary": "tab:blue", "postprocessed": "tab:green", "random2xm": "tab:orange"}


def figure(data: pd.DataFrame, seed: int) -> Figure:
    functions = [f for f in FUNCTIONS if f in set(data["function"])]
    cols = 3
    rows = math.ceil(len(functions) / cols)
    fig = Figure(figsize=(4.4 * cols, 4.4 * rows + 0.6), dpi=DPI)
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    family = data["protocol"].str.replace(r"-\d+$", "", regex=True)
    for ax, fname in zip(axes, functions):
        sel = data["function"] == fname
        for fam, color in FAMILY_COLORS.items():
            for notion, marker in (("average", "o"), ("worst", "x")):
                m = sel & (family == fam) & (data["notion"] == notion)
                if not m.any():
                    continue
                style = dict(facecolors="none", edgecolors=color) if marker == "o" else dict(color=color)
                ax.scatter(
                    data.loc[m, "rr_accuracy"],
                    data.loc[m, "accuracy"],
                    s=9 if marker == "o" else 14,
                    marker=marker,
                    lw=0.6,
                    alpha=0.6,
                    label=f"{fam} ({notion})",
                    **style,
                )
        lo = float(min(data.loc[sel, "accuracy"].min(), data.loc[sel, "rr_accuracy"].min()))
        hi = float(max(data.loc[sel, "accuracy"].max(), data.loc[sel, "rr_accuracy"].max()))
        pad = 0.03 * (hi - lo + 1e-9)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="black", lw=0.8, label="diagonal (alt = RR)")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_aspect("equal")
        gmin = float(data.loc[sel, "gap"].min())
        ax.set_title(f"{fname} (k = {_ks(data[sel])}): min gap {gmin:.2g}", fontsize=9)
        ax.set_xlabel("RR (quaternary) accuracy")
        ax.set_ylabel("alternative accuracy")
        ax.grid(True, alpha=0.25)
    for ax in axes[len(functions) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=6.5, loc="upper left")
    fig.suptitle(
        "Kairouz et al. 2015, Sec. 5: no private protocol beats the (eps_i, delta_i) randomized response, every "
        f"party and the observer (o average, x worst case; seed {seed})",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- reproduction
@register(
    NAME,
    "Multi-party (eps_i, delta_i) RR beats private alternatives "
    "for all parties/functions; min(instances, 20) level draws",
    "Kairouz et al. 2015, Sec. 5: multi-party randomized response is optimal for every party, function, "
    "gain and accuracy notion",
)
def multiparty_optimality(
    seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1
) -> pd.DataFrame:
    """Compare the universal RR with private alternatives (see the module docstring).

    ``instances`` -> ``min(instances, MAX_DRAWS)`` draws of privacy levels (and
    ``min(instances, LARGE_DRAWS)`` at k = 200); ``eps_grid``, if given, is the set the eps_i
    are drawn from; ``workers`` > 1 spreads the draws over processes."""
    seed, instances = s.check_run_args(seed, instances)
    workers = v.integer(workers, "--workers", minimum=1)
    grid = None if eps_grid is None else s.eps_grid(eps_grid)
    draws = min(instances, MAX_DRAWS)
    levels = draw_levels(seed, draws, min(instances, LARGE_DRAWS), grid)
    costs = [LARGE_COST if "large" in lv else 1.0 for lv in levels]
    with progress.bar(sum(costs), NAME, counts=False):
        parts = pool_map(run_draw, [seed] * draws, range(draws), levels, workers=workers, ticks=costs)
    data = pd.DataFrame([r for p in parts for r in p], columns=DATA_COLUMNS)
    out_dir = Path(out_dir)
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.15g")
    level_frame(levels).to_csv(out_dir / "levels.csv", index=False, float_format="%.17g")
    summary = check(data)
    summary = pd.concat([summary, s.summary_frame([xor_row(data, levels)])], ignore_index=True)
    write_summary(summary, out_dir)
    fig = figure(data, seed)
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / f"{NAME}.png", dpi=DPI, metadata=PNG_META)
    return summary
