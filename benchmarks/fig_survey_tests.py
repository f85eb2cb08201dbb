"""The test of independence on privatised ANES answers: type I error and power against n
and eps, beside Pearson's test on the same respondents' true answers.

Two questions of the 1996 ANES extract (``scenarios/data/anes96.csv``): education (7
answers) and the vote (2), whose real association is weak (Pearson's chi-square on the
944 respondents is 11.3 on 6 degrees of freedom, p = 0.08). Respondents are drawn with
replacement from the 944 (the joint law of the two columns); each answers both questions
through k-ary randomized response with half of a total budget ``eps`` each (the budget
split, exact total ``eps`` by composition), so the pair of reports is one report of the
product mechanism and the analyst runs :func:`ldpsim.analyst.independence_test` on the
joint report counts (drawn from the exact aggregate law). On the same respondents'
true answer counts Pearson's test runs (scipy), the non-private baseline.

* **power**: the fraction of ``--reps`` replications that reject at level 0.05, for each
  total eps in ``--eps`` and n in ``--ns``, against the real association;
* **type I error**: the same at n = ``--null-n`` when the two answers are drawn
  independently from the two ANES marginals (the null), ``--null-reps`` replications,
  with the Clopper-Pearson interval at 95% beside it.

* **the cross-tabulation** itself: the real joint table beside its privatised estimate
  (projected onto the simplex) from 10^6 respondents at a total eps of 2.

Writes ``reports/benchmarks/survey_tests.csv`` and the figures
``docs/img/anes_independence_power.png`` and ``docs/img/anes_crosstab.png`` (``--figure``
and ``--crosstab-figure`` to put them elsewhere). Run from the
repository root: ``python benchmarks/fig_survey_tests.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
from scipy import stats

from _common import REPO_ROOT, parser, report
from ldpsim.analyst import crosstab_estimate, independence_test
from ldpsim.mechanisms import catalog, product_mechanism
from ldpsim.report.figures import plt, png_bytes
from ldpsim.stats import clopper_pearson

DATA = REPO_ROOT / "scenarios" / "data" / "anes96.csv"
ROWS, COLS = "education", "vote"
ALPHA = 0.05


def joint_table() -> tuple[np.ndarray, list, list]:
    """The joint law of the two columns, the education levels in the order of their scale
    (as scenarios/anes96_crosstab.toml lists them), not alphabetically."""
    d = pd.read_csv(DATA)
    spec = tomllib.loads((REPO_ROOT / "scenarios" / "anes96_crosstab.toml").read_text())
    levels = next(q["labels"] for q in spec["questions"] if q["name"] == ROWS)
    tab = pd.crosstab(d[ROWS], d[COLS]).reindex(levels)
    assert tab.notna().all().all() and int(tab.to_numpy().sum()) == len(d), "every level occurs, no other"
    return tab.to_numpy(dtype=float) / len(d), list(tab.index), list(tab.columns)


def rejections(table: np.ndarray, eps: float, n: int, reps: int, rng: np.random.Generator) -> tuple[int, int]:
    """Rejections at ALPHA of the private test and of Pearson's on the same respondents."""
    ka, kb = table.shape
    both = product_mechanism(
        catalog.build("randomized_response", k=ka, eps=eps / 2), catalog.build("randomized_response", k=kb, eps=eps / 2)
    )
    private = pearson = 0
    for _ in range(reps):
        answers = rng.multinomial(n, table.ravel())
        private += independence_test(both, both.sample_counts(answers, rng), (ka, kb)).reject(ALPHA)
        observed = answers.reshape(ka, kb)
        keep = observed.sum(axis=1) > 0  # an answer nobody gave has no expected count
        pearson += stats.chi2_contingency(observed[keep], correction=False).pvalue <= ALPHA
    return private, pearson


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--eps", type=float, nargs="+", default=[1.0, 2.0, 4.0], help="total eps per respondent")
    p.add_argument("--ns", type=int, nargs="+", default=[1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000])
    p.add_argument("--reps", type=int, default=300)
    p.add_argument("--null-n", type=int, default=100_000)
    p.add_argument("--null-reps", type=int, default=2_000)
    p.add_argument("--figure", default=str(REPO_ROOT / "docs" / "img" / "anes_independence_power.png"))
    p.add_argument("--crosstab-figure", default=str(REPO_ROOT / "docs" / "img" / "anes_crosstab.png"))
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    table, rows, cols = joint_table()
    null = np.outer(table.sum(axis=1), table.sum(axis=0))
    out = []
    for eps in args.eps:
        hits, base = rejections(null, eps, args.null_n, args.null_reps, rng)
        lo, hi = clopper_pearson(hits, args.null_reps, 0.05)
        out.append(
            {
                "case": f"type I error, eps {eps:g}",
                "n": args.null_n,
                "eps": eps,
                "reps": args.null_reps,
                "private": hits / args.null_reps,
                "private_ci_low": lo,
                "private_ci_high": hi,
                "pearson": base / args.null_reps,
                "kind": "null",
            }
        )
        for n in args.ns:
            hits, base = rejections(table, eps, n, args.reps, rng)
            out.append(
                {
                    "case": f"power, eps {eps:g}",
                    "n": n,
                    "eps": eps,
                    "reps": args.reps,
                    "private": hits / args.reps,
                    "pearson": base / args.reps,
                    "kind": "power",
                }
            )
    report("survey_tests", out, args.out)
    frame = pd.DataFrame(out)
    power = frame[frame["kind"] == "power"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for eps, g in power.groupby("eps"):
        ax.plot(g["n"], g["private"], marker="o", label=f"privatised, eps = {eps:g} (eps/2 per question)")
    base = power.groupby("n")["pearson"].mean()
    ax.plot(base.index, base.to_numpy(), color="black", ls="--", marker=".", label="Pearson on the true answers")
    ax.axhline(ALPHA, color="gray", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("respondents (resampled from the 944 of ANES 1996)")
    ax.set_ylabel(f"power at level {ALPHA:g}")
    ax.set_title(f"Test of independence of {ROWS} and {COLS}: randomized response on both", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with open(args.figure, "wb") as f:
        f.write(png_bytes(fig))
    print(f"figure: {args.figure}")
    crosstab_figure(table, rows, cols, rng, args.crosstab_figure)


def crosstab_figure(table: np.ndarray, rows: list, cols: list, rng: np.random.Generator, path: str) -> None:
    """The real joint table beside its privatised estimate (10^6 respondents, eps 1 + 1)."""
    ka, kb = table.shape
    both = product_mechanism(
        catalog.build("randomized_response", k=ka, eps=1.0), catalog.build("randomized_response", k=kb, eps=1.0)
    )
    counts = both.sample_counts(rng.multinomial(1_000_000, table.ravel()), rng)
    est = crosstab_estimate(both, counts, (ka, kb)).projected
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), sharey=True, layout="constrained")
    top = float(max(table.max(), est.max()))
    for ax, data, title in (
        (axes[0], table, "the 944 real respondents"),
        (axes[1], est, "privatised, 10^6 respondents, eps 1 + 1"),
    ):
        im = ax.imshow(data, vmin=0, vmax=top, cmap="viridis", aspect="auto")
        for i in range(ka):
            for j in range(kb):
                ax.text(
                    j,
                    i,
                    f"{data[i, j]:.3f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if data[i, j] < top / 2 else "black",
                )
        ax.set_xticks(range(kb), [str(c) for c in cols])
        ax.set_title(title, fontsize=9)
    axes[0].set_yticks(range(ka), [str(r) for r in rows])
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.suptitle(f"{ROWS} x {COLS}: joint shares", fontsize=10)
    with open(path, "wb") as f:
        f.write(png_bytes(fig))
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
