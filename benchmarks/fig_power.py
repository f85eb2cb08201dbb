"""Power curves of the analyst's tests for three oracles on the same respondents.

Goodness of fit to a reference law (did the answers change since the last wave?) and the
two-sample homogeneity test (does group B differ from group A?), at level 0.05, for k-ary
randomized response, OUE and OLH at eps = 1, k = 8. The alternative moves a share ``delta``
of the reference's mass from the four rarest answers to the four most common (``delta = 0``
is the null). In each replication the same respondents (the same answer counts: common
random numbers) answer through each oracle, so the curves differ by the oracle alone.
Every point is the rejection rate over ``--reps`` replications (``--olh-reps`` for OLH) with
its 95% Clopper-Pearson interval. The p-values: goodness of fit by Monte Carlo from the exact null law (valid at any
number of draws); homogeneity by the exact conditional test for randomized response and the
parametric bootstrap for OUE and OLH.

Writes ``reports/benchmarks/power.csv`` and ``docs/img/power-curves.png``. Run from the
repository root: ``python benchmarks/fig_power.py [--reps 400]`` (a few minutes on 2 cores;
OLH privatises every report, having no exact aggregate law).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from _common import REPO_ROOT, parser, report
from ldpsim.analyst.hypotheses import goodness_of_fit, homogeneity
from ldpsim.mechanisms import catalog
from ldpsim.report.figures import plt, png_bytes, quiet_figures

ORACLES = {"randomized_response": "kRR", "oue": "OUE", "olh": "OLH"}
K, EPS, N, ALPHA = 8, 1.0, 2000, 0.05
REFERENCE = np.array([0.22, 0.18, 0.15, 0.13, 0.11, 0.09, 0.07, 0.05])
DELTAS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def shifted(delta: float) -> np.ndarray:
    """The reference with a share ``delta`` of the mass moved from the four rarest answers
    (in proportion) to the four most common (in proportion)."""
    top, low = REFERENCE[:4], REFERENCE[4:]
    return np.concatenate([top + delta * top / top.sum(), low - delta * low / low.sum()])


def statistic(mech, answers: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """The oracle's statistic of respondents with these answer counts (exact aggregate law
    where the oracle has one, else every report privatised)."""
    if mech.aggregate_exact:
        return mech.sample_statistic(answers, gen)
    return mech.statistic(mech.privatize(np.repeat(np.arange(K), answers), gen))


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--reps", type=int, default=400, help="replications per point")
    p.add_argument("--draws", type=int, default=99, help="Monte Carlo draws per p-value")
    p.add_argument(
        "--olh-reps", type=int, default=100, help="replications per point for OLH (it privatises every null draw)"
    )
    p.add_argument("--figure", default=str(REPO_ROOT / "docs" / "img" / "power-curves.png"))
    args = p.parse_args()
    mechs = {name: catalog.build(name, k=K, eps=EPS) for name in ORACLES}
    rows = []
    for delta in DELTAS:
        law = shifted(delta)
        hits = {(name, test): 0 for name in ORACLES for test in ("fit", "two-sample")}
        for r in range(args.reps):
            gen = np.random.default_rng([args.seed, int(delta * 1000), r])
            group_a = gen.multinomial(N, law)  # this wave (fit) or group B (two-sample)
            group_b = gen.multinomial(N, REFERENCE)  # the control group
            for name, mech in mechs.items():
                if not mech.aggregate_exact and r >= args.olh_reps:
                    continue
                # 1 + index: a trailing 0 would give the answers' own stream (SeedSequence pads with zeros)
                stream = np.random.default_rng([args.seed, int(delta * 1000), r, 1 + list(ORACLES).index(name)])
                a = statistic(mech, group_a, stream)
                b = statistic(mech, group_b, stream)
                hits[(name, "fit")] += goodness_of_fit(
                    mech, a, REFERENCE, n=N, alpha=ALPHA, draws=args.draws, rng=stream
                ).reject
                hits[(name, "two-sample")] += homogeneity(
                    mech, [a, b], sizes=[N, N], alpha=ALPHA, draws=args.draws, rng=stream
                ).reject
        for (name, test), h in hits.items():
            reps = args.reps if mechs[name].aggregate_exact else min(args.reps, args.olh_reps)
            lo = stats.beta.ppf(0.025, h, reps - h + 1) if h > 0 else 0.0
            hi = stats.beta.ppf(0.975, h + 1, reps - h) if h < reps else 1.0
            rows.append(
                {
                    "benchmark": "power",
                    "case": f"{ORACLES[name]} {test}",
                    "oracle": ORACLES[name],
                    "test": test,
                    "delta": delta,
                    "n": N,
                    "eps": EPS,
                    "reps": reps,
                    "rejection_rate": h / reps,
                    "low": lo,
                    "high": hi,
                }
            )
    report("power", rows, args.out)
    with quiet_figures():
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, test, title in zip(axes, ("fit", "two-sample"), ("goodness of fit", "two-sample (A/B)")):
            for name, label in ORACLES.items():
                cur = [row for row in rows if row["oracle"] == label and row["test"] == test]
                x = [row["delta"] for row in cur]
                y = np.array([row["rejection_rate"] for row in cur])
                err = np.array(
                    [[y_ - row["low"] for y_, row in zip(y, cur)], [row["high"] - y_ for y_, row in zip(y, cur)]]
                )
                ax.errorbar(x, y, yerr=err, marker="o", ms=3, capsize=2, label=label)
            ax.axhline(ALPHA, color="black", lw=0.8, ls="--", label="level 0.05")
            ax.set_title(f"{title}: k = {K}, eps = {EPS:g}, n = {N:,} per group")
            ax.set_xlabel("mass moved to the common answers (delta)")
        axes[0].set_ylabel("rejection rate (95% interval)")
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        data = png_bytes(fig)
    with open(args.figure, "wb") as fh:
        fh.write(data)
    print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
