"""Shared machinery of the extremal-mechanisms reproductions (Kairouz et al. 2014): random priors,
utilities of the binary, randomized-response, truncated-geometric and optimal mechanisms
on a grid of eps, and the tidy table of the results.

Every number comes from :mod:`ldpsim.utility` and :mod:`ldpsim.mechanisms`; nothing here
recomputes a utility by its own formula. The optimal mechanism is one linear program per
(instance, eps); the other mechanisms do not depend on the instance (randomized response,
truncated geometric) or only through the set T (binary), so their columns are built once
per eps and priced with the utility's ``mu`` for all eps at once.

Randomized response and the truncated geometric mechanism are built through the one
catalog (:mod:`ldpsim.mechanisms.catalog`); the binary mechanism of a utility
(``binary_for``) and the optimal one (the linear program) are chosen from the utility and
its priors, which no catalog entry takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim._pool import pool_map
from ldpsim.errors import invalid
from ldpsim.mechanisms import catalog
from ldpsim.utility import KL, MutualInformation, Utility, binary_for, optimal_mechanism

#: The paper's grid: eps from 0.1 to 10, log-spaced (25 points; 0.1, 1 and 10 are on it).
EPS_GRID = np.logspace(-1.0, 1.0, 25)

#: Mechanisms in the order they are tabulated and plotted.
MECHANISMS = ("binary", "randomized_response", "truncated_geometric", "optimal")
#: The better of binary and randomized response (Kairouz et al. 2014, Sec. 5), derived from the two.
MIXED = "mixed"

#: Two utilities within this relative distance count as equal ("binary is optimal").
SAME = 1e-7

LABELS = {
    "binary": "binary",
    "randomized_response": "randomized response",
    "truncated_geometric": "truncated geometric",
    "optimal": "optimal (LP)",
    "mixed": "better of binary and RR",
}
COLORS = {
    "binary": "tab:blue",
    "randomized_response": "tab:red",
    "truncated_geometric": "tab:green",
    "optimal": "black",
    "mixed": "tab:purple",
}


# --------------------------------------------------------------------------- inputs
def eps_grid(value: ArrayLike | None, default: NDArray[np.float64] = EPS_GRID) -> NDArray[np.float64]:
    """A sorted grid of distinct privacy levels in (0, 700]."""
    if value is None:
        return np.array(default, dtype=np.float64)
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr > 700):
        raise invalid("eps_grid", value, "a non-empty list of numbers in (0, 700]")
    return np.unique(arr)


def check_run_args(seed: int, instances: int) -> tuple[int, int]:
    return v.integer(seed, "--seed", minimum=0), v.integer(instances, "--instances", minimum=1)


def prior_pairs(seed: int, instances: int, k: int) -> NDArray[np.float64]:
    """``instances`` pairs (P0, P1) of Dirichlet(1) priors on k symbols (``instances x 2 x k``),
    from ``numpy.random.default_rng(seed)``. The first n pairs do not depend on ``instances``."""
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=(instances, 2))


def priors(seed: int, instances: int, k: int) -> NDArray[np.float64]:
    """``instances`` Dirichlet(1) priors P on k symbols (``instances x 1 x k``)."""
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=(instances, 1))


def make_utility(kind: str, prior: NDArray[np.float64]) -> Utility:
    return KL(prior[0], prior[1]) if kind == "kl" else MutualInformation(prior[0])


def normaliser(kind: str, prior: NDArray[np.float64]) -> float:
    """``D_kl(P0 || P1)`` (the utility without privatisation) for KL; the entropy ``H(P)``
    in nats (the largest possible ``I(X; Y)``) for mutual information."""
    if kind == "kl":
        return KL(prior[0], prior[1]).prior_divergence()
    return float(stats.entropy(prior[0]))


# --------------------------------------------------------------------------- solving
@dataclass(frozen=True)
class Study:
    """Utilities of every mechanism for every instance and eps, at one alphabet size k."""

    kind: str  # "kl" or "mi"
    k: int
    eps: NDArray[np.float64]  # (m,)
    priors: NDArray[np.float64]  # (n, 2, k) for KL, (n, 1, k) for MI
    values: dict[str, NDArray[np.float64]]  # mechanism -> (n, m) utility
    bound: NDArray[np.float64]  # (n, m) the LP's dual bound on every eps-LDP mechanism
    status_ok: NDArray[np.bool_]  # (n, m) the LP reported "optimal"
    private: NDArray[np.bool_]  # (n, m) the optimal mechanism is exactly eps-LDP
    scale: NDArray[np.float64]  # (n,) normaliser (D(P0||P1) or H(P))

    @property
    def instances(self) -> int:
        return int(self.priors.shape[0])

    def value(self, mech: str) -> NDArray[np.float64]:
        if mech == MIXED:
            return np.maximum(self.values["binary"], self.values["randomized_response"])
        return self.values[mech]

    def normalised(self, mech: str) -> NDArray[np.float64]:
        return self.value(mech) / self.scale[:, None]

    def ratio(self, mech: str) -> NDArray[np.float64]:
        """Utility over the optimal utility (``(n, m)``)."""
        return self.value(mech) / self.values["optimal"]

    def same_as_optimal(self, mech: str) -> NDArray[np.bool_]:
        opt = self.values["optimal"]
        return np.abs(self.value(mech) - opt) <= SAME * opt

    def frame(self) -> pd.DataFrame:
        """Tidy rows: one per instance x eps x mechanism (binary, RR, geometric, optimal,
        mixed), with the utility, its normalised value and its ratio to the optimum."""
        n, m = self.values["optimal"].shape
        parts = []
        for mech in (*MECHANISMS, MIXED):
            parts.append(
                pd.DataFrame(
                    {
                        "k": self.k,
                        "instance": np.repeat(np.arange(n), m),
                        "eps": np.tile(self.eps, n),
                        "mechanism": mech,
                        "utility": self.value(mech).ravel(),
                        "normalised": self.normalised(mech).ravel(),
                        "ratio_to_optimal": self.ratio(mech).ravel(),
                        "optimal_bound": self.bound.ravel() if mech == "optimal" else np.nan,
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)

    def prior_frame(self) -> pd.DataFrame:
        names = ("P0", "P1") if self.kind == "kl" else ("P",)
        n, r, k = self.priors.shape
        return pd.DataFrame(
            {
                "k": self.k,
                "instance": np.repeat(np.arange(n), r * k),
                "prior": np.tile(np.repeat(np.array(names), k), n),
                "symbol": np.tile(np.arange(k), n * r),
                "probability": self.priors.ravel(),
                "normaliser": np.repeat(self.scale, r * k),
            }
        )

    def anomalies(self) -> list[str]:
        """Independent sanity checks of the numbers; each failure is one line."""
        out = []
        opt = self.values["optimal"]
        for mech in MECHANISMS[:-1]:
            over = self.value(mech) > opt * (1 + 1e-9) + 1e-15
            if over.any():
                out.append(
                    f"k={self.k}: {mech} beats the 'optimal' mechanism in {int(over.sum())} (instance, eps) cells"
                )
        if (~self.status_ok).any():
            out.append(f"k={self.k}: {int((~self.status_ok).sum())} linear programs did not report 'optimal'")
        if (~self.private).any():
            out.append(f"k={self.k}: {int((~self.private).sum())} 'optimal' mechanisms are not eps-LDP")
        gap = self.bound - opt
        if np.any(np.abs(gap) > 1e-7 * np.maximum(opt, 1e-300)):
            out.append(
                f"k={self.k}: LP duality gap above 1e-7 (relative) in {int((np.abs(gap) > 1e-7 * opt).sum())} cells"
            )
        return out


def _fixed_columns(k: int, eps: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Columns of randomized response and truncated geometric for every eps (``k x m k``)."""
    return {
        name: np.concatenate([catalog.build(name, k=k, eps=e).matrix for e in eps], axis=1)
        for name in ("randomized_response", "truncated_geometric")
    }


def _solve_chunk(kind: str, chunk: NDArray[np.float64], eps: NDArray[np.float64]) -> dict[str, NDArray]:
    """All utilities for a block of instances (runs in a worker process when workers > 1)."""
    n, _, k = chunk.shape
    m = eps.size
    fixed = _fixed_columns(k, eps)
    out: dict[str, NDArray] = {name: np.empty((n, m)) for name in (*MECHANISMS, "bound")}
    out["status_ok"] = np.empty((n, m), dtype=bool)
    out["private"] = np.empty((n, m), dtype=bool)
    out["scale"] = np.empty(n)
    for i, prior in enumerate(chunk):
        U = make_utility(kind, prior)
        out["scale"][i] = normaliser(kind, prior)
        for name, cols in fixed.items():
            out[name][i] = U.mu(cols).reshape(m, k).sum(axis=1)
        for j, e in enumerate(eps):
            out["binary"][i, j] = U.value(binary_for(U, e))
            res = optimal_mechanism(U, e)
            out["optimal"][i, j] = res.value
            out["bound"][i, j] = res.bound
            out["status_ok"][i, j] = res.status == "optimal"
            out["private"][i, j] = res.mechanism.is_private(e)
    return out


def lp_cost(k: int) -> float:
    """Expected time to solve one instance on k symbols, relative to the time at small k:
    what one instance advances the progress bar by when a reproduction solves several k.

    The optimal mechanism's linear program is over the 2^k staircase patterns; the other
    mechanisms cost a fixed time per eps. Measured (25 eps, 20 instances each, one core):
    KL 0.048, 0.049, 0.056 and 0.98 s per instance at k = 3, 4, 6 and 12 (max 1.9 s), mutual
    information 0.065 and 0.69 s at k = 6 and 12. ``1 + 2^k / 200`` (a fixed time per
    instance, plus one per pattern) gives the ratios 1 : 1.04 : 1.27 : 20.7 (measured
    1 : 1.02 : 1.17 : 20.4 for KL), and 16.3 for k = 12 over k = 6 (measured 10.6 with MI)."""
    return 1.0 + 2.0**k / 200.0


def solve(
    kind: str, all_priors: NDArray[np.float64], eps: NDArray[np.float64], workers: int = 1, *, tick: float = 1
) -> Study:
    """Utilities of binary, RR, geometric and optimal mechanisms for every prior and eps.

    ``workers > 1`` spreads blocks of instances over a process pool (8 per worker, so that
    the progress bar moves often); in one process the instances are solved one at a time.
    The current progress bar advances by ``tick`` per instance as blocks finish. The
    numbers depend neither on the workers nor on the blocks: each instance is solved alone."""
    workers = v.integer(workers, "--workers", minimum=1)
    n = all_priors.shape[0]
    if workers == 1 or n < 2:
        blocks = [np.array([i]) for i in range(n)]
        workers = 1
    else:
        blocks = np.array_split(np.arange(n), min(n, 8 * workers))
    parts = pool_map(
        _solve_chunk,
        [kind] * len(blocks),
        [all_priors[b] for b in blocks],
        [eps] * len(blocks),
        workers=workers,
        ticks=[tick * len(b) for b in blocks],
    )
    joined = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    return Study(
        kind=kind,
        k=int(all_priors.shape[2]),
        eps=eps,
        priors=all_priors,
        values={mech: joined[mech] for mech in MECHANISMS},
        bound=joined["bound"],
        status_ok=joined["status_ok"],
        private=joined["private"],
        scale=joined["scale"],
    )


# --------------------------------------------------------------------------- summary rows
#: How a paper's number is compared with ours.
CRITERIA = {
    # "as bad as ~X": a minimum read off a figure, over other random instances
    "approx": (lambda ours, paper: abs(ours - paper) <= 0.05, "|ours - paper| <= 0.05"),
    # "at least X for all instances": a lower bound the paper observed
    "at_least": (lambda ours, paper: ours >= paper - 0.03, "ours >= paper - 0.03"),
    # "optimal" read off a figure: within 1% of the optimum
    "at_least_visible": (lambda ours, paper: ours >= 0.99 * paper, "ours >= 0.99 paper"),
    # "in all instances": a fraction of instances
    "all": (lambda ours, paper: ours >= paper, "ours == 1 (every instance)"),
    # "significant gains": a ratio above one
    "above": (lambda ours, paper: ours > paper, "ours > paper"),
    # an exponent: "quadratically" (2), "exponentially in eps" (-1)
    "exponent": (lambda ours, paper: abs(ours - paper) <= 0.1, "|ours - paper| <= 0.1"),
    # a closed form evaluated, or its mean measured: within 2% (and 0.002 near zero)
    "relative": (
        lambda ours, paper: abs(ours - paper) <= 0.02 * abs(paper) + 2e-3,
        "|ours - paper| <= 0.02 |paper| + 0.002",
    ),
    # a count that must be exactly the paper's (zero violations of a theorem)
    "equal": (lambda ours, paper: ours == paper, "ours == paper"),
    # an exponent fitted to exact errors at several n: within 5% of the theory
    "fitted": (lambda ours, paper: abs(ours - paper) <= 0.05 * abs(paper), "|ours - paper| <= 0.05 paper"),
    # a rate over 2,000 simulated runs beside its exact value (5 binomial standard errors, and
    # 0.01 for the Monte Carlo p-values of the simulated tests)
    "simulated": (
        lambda ours, paper: abs(ours - paper) <= 5 * math.sqrt(max(paper * (1 - paper), 5e-4) / 2000) + 0.01,
        "|ours - paper| <= 5 binomial standard errors of 2,000 runs + 0.01",
    ),
}

SUMMARY_COLUMNS = ["quantity", "k", "eps", "paper", "ours", "agrees", "criterion"]


def row(
    quantity: str,
    k: int | str,
    eps: str | float,
    ours: float,
    paper: float | None = None,
    how: str | None = None,
    note: str = "",
) -> dict:
    """One summary row; ``agrees`` is "yes"/"no" when the paper gives a number, else ""."""
    eps_text = eps if isinstance(eps, str) else f"{eps:g}"
    if paper is None:
        return dict(quantity=quantity, k=k, eps=eps_text, paper=np.nan, ours=float(ours), agrees="", criterion=note)
    test, text = CRITERIA[how]  # type: ignore[index]  # given with paper (KeyError otherwise)
    ok = bool(test(float(ours), float(paper)))
    return dict(
        quantity=quantity,
        k=k,
        eps=eps_text,
        paper=float(paper),
        ours=float(ours),
        agrees="yes" if ok else "no",
        criterion=text + (f"; {note}" if note else ""),
    )


def summary_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def table_eps(eps: NDArray[np.float64], targets=(0.1, 1.0, 10.0)) -> list[int]:
    """Indices of the grid points closest (in log eps) to the targets, without repeats."""
    idx = [int(np.argmin(np.abs(np.log(eps) - math.log(t)))) for t in targets]
    return sorted(set(idx))


def argmin_eps(study_ratio: NDArray[np.float64], eps: NDArray[np.float64]) -> tuple[float, float, int]:
    """(min, eps where it occurs, instance where it occurs) of an ``(n, m)`` array."""
    i, j = np.unravel_index(int(np.argmin(study_ratio)), study_ratio.shape)
    return float(study_ratio[i, j]), float(eps[j]), int(i)
