"""Error exponents of the analyst's other tests (``ldpsim reproduce test-exponents``).

Kairouz, Oh and Viswanath (2014) price a mechanism for testing by the Chernoff-Stein exponent
of two simple hypotheses and leave m-ary and composite testing open. Here the three exponents
that answer those questions are computed from theory and measured, for randomized response
at eps = 0.5, 1 and 2 over random instances, from the *exact* type II (or Bayes) errors of the
tests at growing n, in log space, down to errors far below what simulation could see:

- **two-sample** (homogeneity, an A/B test with n reports per group, a yes/no question): the
  exact conditional test at level 0.05 (given the total of yes-reports, the groups' counts
  are hypergeometric under the null); its type II error ``beta_n`` summed over every pair of
  counts it accepts. Theory: ``E = -2 log sum_y sqrt(M_a(y) M_b(y))``
  (:func:`ldpsim.analyst.hypotheses.two_sample_exponent`).
- **m-ary** (three hypotheses on a three-answer question, equal weights): the Bayes rule's
  error ``P_e(n)``, summed over every vector of output counts. Theory: the smallest pairwise
  Chernoff information (:func:`ldpsim.analyst.hypotheses.mary_exponent`; Leang and Johnson
  1997).
- **composite** (``H0: pi <= theta`` on a yes/no question, Sanov): the exact level-0.05 test
  rejects when the yes-reports reach the binomial quantile at the boundary (where the level
  is largest), and ``beta_n`` is the binomial distribution function at the alternative.
  Theory: ``min D(Q || M1)`` over the output laws the test accepts
  (:func:`ldpsim.analyst.hypotheses.share_exponent`).

``n`` runs over a grid where ``n E`` spans about 5 to 150 (capped where the exact sums grow
too large), and the measured ``-(1/n) log beta_n`` approaches ``E`` from below, the gap
falling like ``log(n)/n`` and ``1/sqrt(n)`` terms. At the smallest n each exact error is also
checked against simulation of the library's own test (``homogeneity``, ``mary_test``,
``share_test``) on the same instance.

Files: ``data.csv`` (one row per instance, eps, test and n), ``summary.csv``,
``test-exponents.png``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import NDArray
from scipy import special, stats

from ldpsim import _progress as progress
from ldpsim.analyst.hypotheses import (
    homogeneity,
    mary_exponent,
    mary_test,
    share_exponent,
    share_test,
    two_sample_exponent,
)
from ldpsim.analyst.testing import _compositions
from ldpsim.mechanisms import catalog
from ldpsim.reproduce import _study as s
from ldpsim.reproduce._registry import register, write_summary

EPS = (1.0, 2.0, 4.0)
ALPHA = 0.05
TESTS = ("two-sample", "m-ary", "composite")
#: ``n E`` spanned by each instance's grid, and its points, per test (the composite test's
#: exact error is one binomial distribution function, so its grid reaches further, which
#: its integer thresholds need to average out)
NE_RANGE = {"two-sample": (5.0, 120.0), "m-ary": (5.0, 120.0), "composite": (5.0, 1000.0)}
POINTS = {"two-sample": 8, "m-ary": 8, "composite": 12}
#: the exact errors checked against simulation at ``n E`` about this (errors near 0.1 to 0.3)
CHECK_NE = 1.5
#: the largest n per test (the exact sums: (n + 1)^2 pairs; C(n + 2, 2) count vectors)
N_MAX = {"two-sample": 2000, "m-ary": 2000, "composite": 10**7}
#: simulated replications of the library's test at the smallest n
SIMULATIONS = 2000
#: the exponent fitted to the exact errors is within this relative distance of the theory
FIT_TOLERANCE = 0.05
#: an instance's fit needs at least this many points of its n grid (below the caps)
FIT_POINTS = 5

DPI = 110
PNG_META = {"Software": None}


def _rr(k: int, eps: float) -> Any:
    return catalog.build("randomized_response", k=k, eps=eps)


def _grid(exponent: float, test: str) -> NDArray[np.int64]:
    lo, hi = NE_RANGE[test]
    ns = np.geomspace(lo / exponent, hi / exponent, POINTS[test])
    return np.unique(np.clip(np.round(ns), 4, N_MAX[test]).astype(np.int64))


# --------------------------------------------------------------------------- exact errors
def two_sample_log_beta(m_a: float, m_b: float, n: int, alpha: float = ALPHA) -> float:
    """log type II error of the exact conditional two-sided test of two groups of ``n``
    yes/no reports (yes-probabilities ``m_a``, ``m_b``): given ``t`` yes-reports in all, the
    first group's count ``A`` is hypergeometric and symmetric about ``t/2``, so the p-value of
    ``a`` is ``P(|A - t/2| >= |a - t/2|) = 2 P(A <= min(a, t - a))`` (1 at the centre); the
    test rejects when it is at most ``alpha``. Every pair ``(a, t)`` at once."""
    a = np.arange(n + 1, dtype=np.float64)[None, :]
    t = np.arange(2 * n + 1, dtype=np.float64)[:, None]
    b = t - a
    valid = (b >= 0) & (b <= n)
    bb = np.clip(b, 0, n)
    log_comb = special.gammaln(n + 1.0) - special.gammaln(a + 1.0) - special.gammaln(n - a + 1.0)
    log_comb_b = special.gammaln(n + 1.0) - special.gammaln(bb + 1.0) - special.gammaln(n - bb + 1.0)
    log_total = special.gammaln(2 * n + 1.0) - special.gammaln(t + 1.0) - special.gammaln(2 * n - t + 1.0)
    pmf = np.exp(np.where(valid, log_comb + log_comb_b - log_total, -np.inf))  # hypergeometric, row t
    cdf = np.cumsum(pmf, axis=1)
    low = np.minimum(a, bb).astype(np.int64)
    p = np.where(2 * low < t, 2.0 * np.take_along_axis(cdf, np.broadcast_to(low, cdf.shape), axis=1), 1.0)
    accept = valid & (p > alpha * (1 + 1e-12))
    log_joint = (
        log_comb
        + special.xlogy(a, m_a)
        + special.xlog1py(n - a, -m_a)
        + log_comb_b
        + special.xlogy(bb, m_b)
        + special.xlog1py(n - bb, -m_b)
    )
    return float(special.logsumexp(log_joint[accept])) if accept.any() else -math.inf


def mary_log_error(laws: NDArray[np.float64], n: int) -> float:
    """log Bayes error (equal weights) of deciding among output laws (rows) from ``n``
    reports: every vector of output counts, its multinomial probability under each law."""
    c = _compositions(n, laws.shape[1]).astype(np.float64)
    base = special.gammaln(n + 1.0) - special.gammaln(c + 1.0).sum(axis=1)
    ll = base[:, None] + special.xlogy(c[:, :, None], laws.T[None, :, :]).sum(axis=1)  # (vectors, m)
    decide = np.argmax(ll, axis=1)
    wrong = np.ones_like(ll, dtype=bool)
    wrong[np.arange(ll.shape[0]), decide] = False
    return float(special.logsumexp(ll[wrong])) - math.log(laws.shape[0])


def composite_log_beta(m_theta: float, m1: float, n: int, alpha: float = ALPHA) -> float:
    """log type II error of the exact level-``alpha`` test of ``H0: yes-probability <=
    m_theta`` from ``n`` yes/no reports (reject at ``C >= c*``, the smallest count whose
    upper tail at ``m_theta`` is at most ``alpha``) when it is ``m1``."""
    c_star = int(stats.binom.isf(alpha, n, m_theta)) + 1
    while c_star > 0 and stats.binom.sf(c_star - 2, n, m_theta) <= alpha:
        c_star -= 1
    if c_star <= 0:
        return -math.inf
    return float(special.logsumexp(stats.binom.logpmf(np.arange(c_star), n, m1)))  # far tails too


# --------------------------------------------------------------------------- instances
def _instances(seed: int, instances: int) -> list[dict[str, Any]]:
    """Random instances, the hypotheses kept well apart (groups' shares 0.35 apart; three
    answer laws at total variation 0.3 from each other) so that every exponent is large enough
    for the exact sums to reach a useful ``n E``."""
    out = []
    for i in range(instances):
        g = np.random.default_rng([seed, i])
        pa, pb = g.uniform(0.05, 0.95, size=2)
        while abs(pa - pb) < 0.35:
            pa, pb = g.uniform(0.05, 0.95, size=2)
        laws = g.dirichlet(np.ones(3), size=3)
        while min(0.5 * np.abs(laws[x] - laws[y]).sum() for x, y in ((0, 1), (0, 2), (1, 2))) < 0.3:
            laws = g.dirichlet(np.ones(3), size=3)
        pi1 = g.uniform(0.3, 0.9)
        out.append({"pa": pa, "pb": pb, "laws": laws, "pi1": pi1, "theta": pi1 - g.uniform(0.1, 0.25)})
    return out


def fitted_exponent(n: NDArray[np.float64], log_beta: NDArray[np.float64], test: str) -> float:
    """The exponent read off exact errors at several n by least squares on their known form:
    ``log P_e = -n E - (1/2) log n + c`` for the Bayes error (m-ary), and ``log beta_n = -n E +
    a sqrt(n) + b log n + c`` at a fixed level (the ``sqrt(n)`` term is the level's price)."""
    n = np.asarray(n, dtype=np.float64)
    cols = [-n, np.log(n), np.ones_like(n)] if test == "m-ary" else [-n, np.sqrt(n), np.log(n), np.ones_like(n)]
    return float(np.linalg.lstsq(np.column_stack(cols), np.asarray(log_beta, dtype=np.float64), rcond=None)[0][0])


def _measure(inst: dict[str, Any], eps: float, index: int, seed: int) -> list[dict[str, Any]]:
    rr2, rr3 = _rr(2, eps), _rr(3, eps)
    ma = float(rr2.forward(np.array([inst["pa"], 1 - inst["pa"]]))[0])
    mb = float(rr2.forward(np.array([inst["pb"], 1 - inst["pb"]]))[0])
    outs = np.stack([rr3.forward(h) for h in inst["laws"]])
    m1 = float(rr2.forward(np.array([inst["pi1"], 1 - inst["pi1"]]))[0])
    mt = float(rr2.forward(np.array([inst["theta"], 1 - inst["theta"]]))[0])
    theory = {
        "two-sample": two_sample_exponent([ma, 1 - ma], [mb, 1 - mb]),
        "m-ary": mary_exponent(list(outs)),
        "composite": share_exponent(rr2, [inst["pi1"], 1 - inst["pi1"]], 0, inst["theta"]),
    }
    exact = {
        "two-sample": lambda n: two_sample_log_beta(ma, mb, n),
        "m-ary": lambda n: mary_log_error(outs, n),
        "composite": lambda n: composite_log_beta(mt, m1, n),
    }
    rows = []
    for test in TESTS:
        check = int(np.clip(round(CHECK_NE / theory[test]), 4, N_MAX[test]))
        rows.append(
            {
                "instance": index,
                "eps": eps,
                "test": test,
                "n": check,
                "role": "check",
                "log_beta": exact[test](check),
                "theory": theory[test],
            }
        )
        for n in _grid(theory[test], test):
            lb = exact[test](int(n))
            rows.append(
                {
                    "instance": index,
                    "eps": eps,
                    "test": test,
                    "n": int(n),
                    "role": "grid",
                    "nE": float(n * theory[test]),
                    "log_beta": lb,
                    "exponent": -lb / n,
                    "theory": theory[test],
                    "ratio": -lb / n / theory[test],
                }
            )
    return rows


def _simulated(inst: dict[str, Any], eps: float, n: int, test: str, seed: int) -> tuple[float, float]:
    """The library's own test at ``n``, simulated: its error rate and standard error."""
    g = np.random.default_rng([seed, 7, int(eps * 1000), TESTS.index(test)])
    rr2, rr3 = _rr(2, eps), _rr(3, eps)
    wrong = 0
    for _ in range(SIMULATIONS):
        if test == "two-sample":
            a = rr2.sample_statistic(g.multinomial(n, [inst["pa"], 1 - inst["pa"]]), g)
            b = rr2.sample_statistic(g.multinomial(n, [inst["pb"], 1 - inst["pb"]]), g)
            wrong += not homogeneity(rr2, [a, b], draws=199, rng=g).reject
        elif test == "m-ary":
            j = int(g.integers(3))
            c = rr3.sample_statistic(g.multinomial(n, inst["laws"][j]), g)
            wrong += mary_test(rr3, c, list(inst["laws"]), draws=100, rng=g).decision != j
        else:
            c = rr2.sample_statistic(g.multinomial(n, [inst["pi1"], 1 - inst["pi1"]]), g)
            wrong += not share_test(rr2, c, 0, inst["theta"], draws=199, rng=g).reject
    rate = wrong / SIMULATIONS
    return rate, math.sqrt(max(rate * (1 - rate), 1.0 / SIMULATIONS) / SIMULATIONS)


@register(
    "test-exponents",
    "Two-sample, m-ary and composite tests under randomized response: exact errors' exponents vs theory",
    "Kairouz et al. 2014's open extensions (m-ary and composite testing); Leang and Johnson 1997; Sanov",
)
def test_exponents(seed: int, instances: int, out_dir: Path, *, eps_grid: Any = None, workers: int = 1) -> pd.DataFrame:
    """Measured exponents against theory (module docstring)."""
    seed, instances = s.check_run_args(seed, instances)
    eps = s.eps_grid(eps_grid, default=np.array(EPS))
    out_dir = Path(out_dir)
    insts = _instances(seed, instances)
    rows: list[dict[str, Any]] = []
    with progress.bar(instances * len(eps), "test-exponents", unit="instance"):
        for e in eps:
            for i, inst in enumerate(insts):
                rows += _measure(inst, float(e), i, seed)
                progress.advance(1)
    every = pd.DataFrame(rows)
    data = every[every["role"] == "grid"].drop(columns="role").reset_index(drop=True)
    # the exact errors at n E of about CHECK_NE (first instance), against the library's tests simulated
    checks = []
    for e in eps:
        for test in TESTS:
            first = every[(every["eps"] == e) & (every["test"] == test) & (every["instance"] == 0)]
            point = first[first["role"] == "check"].iloc[0]
            n = int(point["n"])
            exact_beta = math.exp(float(point["log_beta"]))
            rate, se = _simulated(insts[0], float(e), n, test, seed)
            checks.append({"eps": e, "test": test, "n": n, "exact": exact_beta, "simulated": rate, "se": se})
    check = pd.DataFrame(checks)
    data.to_csv(out_dir / "data.csv", index=False, float_format="%.12g")
    check.to_csv(out_dir / "simulated.csv", index=False, float_format="%.12g")
    summary = _summary(data, check, eps, instances)
    write_summary(summary, out_dir)
    fig = _figure(data, eps)
    FigureCanvasAgg(fig)
    fig.savefig(out_dir / "test-exponents.png", dpi=DPI, metadata=PNG_META)
    return summary


def _summary(data: pd.DataFrame, check: pd.DataFrame, eps: NDArray[np.float64], instances: int) -> pd.DataFrame:
    over = f"over {instances} instance{'s' if instances > 1 else ''}"
    last = data[data["n"] == data.groupby(["instance", "eps", "test"])["n"].transform("max")]
    rows = []
    for e in eps:
        for test in TESTS:
            cur = data[(data["eps"] == e) & (data["test"] == test)]
            end = last[(last["eps"] == e) & (last["test"] == test)]
            fits = [
                fitted_exponent(g["n"], g["log_beta"], test) / g["theory"].iloc[0]
                for _, g in cur.groupby("instance")
                if len(g) >= FIT_POINTS
            ]
            rows.append(s.row(f"{test}: exponent (theory)", "", e, end["theory"].mean(), note=f"mean {over}"))
            rows.append(
                s.row(
                    f"{test}: -(1/n) log beta_n / theory at the largest n",
                    "",
                    e,
                    end["ratio"].mean(),
                    note=f"mean {over}; n E = {end['nE'].mean():.0f}; log10 beta down to "
                    f"{end['log_beta'].min() / math.log(10):.0f}",
                )
            )
            if fits:
                worst = max(fits, key=lambda r: abs(r - 1.0))
                rows.append(
                    s.row(
                        f"{test}: exponent fitted to the exact errors / theory (worst instance)",
                        "",
                        e,
                        worst,
                        paper=1.0,
                        how="fitted",
                        note=f"{len(fits)} of {instances} instances with {FIT_POINTS}+ points of n",
                    )
                )
            c = check[(check["eps"] == e) & (check["test"] == test)].iloc[0]
            rows.append(
                s.row(
                    f"{test}: exact error at n = {int(c['n'])}, beside the library's test simulated",
                    "",
                    e,
                    float(c["simulated"]),
                    paper=float(c["exact"]),
                    how="simulated",
                    note=f"{SIMULATIONS} runs, standard error {c['se']:.4f}",
                )
            )
    return s.summary_frame(rows)


def _figure(data: pd.DataFrame, eps: NDArray[np.float64]) -> Figure:
    fig = Figure(figsize=(11, 3.6))
    axes = fig.subplots(1, len(TESTS), sharey=True)
    for ax, test in zip(np.atleast_1d(axes), TESTS):
        for e, colour in zip(eps, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")):
            cur = data[(data["eps"] == e) & (data["test"] == test)]
            for _, inst in cur.groupby("instance"):
                ax.plot(inst["nE"], inst["ratio"], color=colour, alpha=0.35, lw=0.8)
            ax.plot([], [], color=colour, label=f"eps = {e:g}")
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_title(test)
        ax.set_xlabel("n E (theory)")
    np.atleast_1d(axes)[0].set_ylabel("-(1/n) log beta_n / E")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.suptitle("Exact errors' exponents approach the theory (randomized response)")
    fig.tight_layout()
    return fig
