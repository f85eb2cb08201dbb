"""The level of every test of ``ldpsim.analyst.hypotheses``, measured: the rejection rate
of a true null at alpha = 0.05 over ``--reps`` replications (4,000 by default), beside the
99.9% interval in which a test of level exactly 0.05 would put it (binomial), for k-ary
randomized response, OUE and OLH where a test applies to each.

Nulls: answers from ``LAW`` (k = 6), n = 400 reports per group; goodness of fit to ``LAW``,
uniformity on uniform answers, homogeneity of two groups drawn from ``LAW``, the share test
at its boundary (answer 0's share exactly 0.3), the sequential tests over ten looks (every
40 reports), the betting tests of ``ldpsim.analyst.betting`` on the reports one by one (a
rejection: the wealth ever reached 1 / alpha; m-ary: the true law ``LAW`` rejected against
the uniform law; independence: two independent questions' terms), and the two-sample mean
tests on Duchi's reports of uniform answers. The Monte Carlo p-values use 39 draws (valid at
any number).

Writes ``reports/benchmarks/levels.csv``. Run from the repository root:
``python benchmarks/levels.py [--reps 4000]`` (about 3 minutes).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from _common import parser, report
from ldpsim.analyst import betting
from ldpsim.analyst.hypotheses import (
    goodness_of_fit,
    homogeneity,
    mean_difference_test,
    sequential_goodness_of_fit,
    sequential_homogeneity,
    share_test,
    uniformity,
)
from ldpsim.mechanisms import catalog

K, N, ALPHA, DRAWS = 6, 400, 0.05, 39
LAW = np.array([0.3, 0.25, 0.15, 0.15, 0.1, 0.05])
UNIFORM = np.full(K, 1.0 / K)


def _stat(mech, answers, gen):
    if mech.aggregate_exact:
        return mech.sample_statistic(answers, gen)
    return mech.statistic(mech.privatize(np.repeat(np.arange(K), answers), gen))


def cases(mech, gen):
    """One replication of every test that applies to ``mech``: name -> rejected."""
    out = {}
    a = _stat(mech, gen.multinomial(N, LAW), gen)
    b = _stat(mech, gen.multinomial(N, LAW), gen)
    u = _stat(mech, gen.multinomial(N, UNIFORM), gen)
    out["goodness of fit"] = goodness_of_fit(mech, a, LAW, n=N, draws=DRAWS, rng=gen).reject
    out["uniformity"] = uniformity(mech, u, n=N, draws=DRAWS, rng=gen).reject
    out["homogeneity"] = homogeneity(mech, [a, b], sizes=[N, N], draws=DRAWS, rng=gen).reject
    out["share at its boundary"] = share_test(mech, a, 0, 0.3, n=N, draws=DRAWS, rng=gen).reject
    ya = mech.privatize(gen.choice(K, size=N, p=LAW), gen)
    yb = mech.privatize(gen.choice(K, size=N, p=LAW), gen)
    out["betting: goodness of fit (every report)"] = betting.sequential_fit_of_reports(mech, ya, LAW).reject
    out["betting: homogeneity (every report)"] = betting.sequential_homogeneity_of_reports(mech, [ya, yb]).reject
    out["betting: share at its boundary (every report)"] = betting.sequential_share_of_reports(mech, ya, 0, 0.3).reject
    out["betting: m-ary, the true law rejected (every report)"] = bool(
        betting.sequential_mary_test(mech, [LAW, UNIFORM], reports=ya).rejected[0]
    )
    r = betting.term_ranges(mech)
    out["betting: independence (every pair)"] = betting.sequential_independence(
        betting.report_terms(mech, ya), betting.report_terms(mech, yb), r, r
    ).reject
    if mech.output_size is not None:
        out_law = np.asarray(mech.forward(LAW))
        looks_a = np.cumsum(gen.multinomial(N // 10, out_law, size=10), axis=0)
        looks_b = np.cumsum(gen.multinomial(N // 10, out_law, size=10), axis=0)
        out["sequential goodness of fit (10 looks)"] = any(
            sequential_goodness_of_fit(mech, c, LAW).reject for c in looks_a
        )
        out["sequential homogeneity (10 looks)"] = any(
            sequential_homogeneity(mech, [x, y]).reject for x, y in zip(looks_a, looks_b)
        )
    return out


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--reps", type=int, default=4000, help="replications per test")
    args = p.parse_args()
    lo, hi = (
        stats.binom.ppf(0.0005, args.reps, ALPHA) / args.reps,
        stats.binom.isf(0.0005, args.reps, ALPHA) / args.reps,
    )
    rows = []
    for name in ("randomized_response", "oue", "olh"):
        mech = catalog.build(name, k=K, eps=1.0)
        reps = args.reps
        counts: dict[str, int] = {}
        for r in range(reps):
            gen = np.random.default_rng([args.seed, r, len(name)])
            for test, rejected in cases(mech, gen).items():
                counts[test] = counts.get(test, 0) + int(rejected)
        r_lo = stats.binom.ppf(0.0005, reps, ALPHA) / reps
        r_hi = stats.binom.isf(0.0005, reps, ALPHA) / reps
        for test, c in counts.items():
            rows.append(
                {
                    "benchmark": "levels",
                    "case": f"{name} {test}",
                    "oracle": name,
                    "test": test,
                    "reps": reps,
                    "rejection_rate": c / reps,
                    "interval_low": r_lo,
                    "interval_high": r_hi,
                    "within": bool(c / reps <= r_hi),
                }
            )
    duchi = catalog.build("duchi", eps=1.0)
    gen = np.random.default_rng([args.seed, 99])
    x = gen.uniform(-0.5, 0.9, size=(args.reps, 2, N))
    y = duchi.privatize(x.ravel(), gen).reshape(x.shape)
    rate = float(np.mean([mean_difference_test(g[0], g[1], alpha=ALPHA).reject for g in y]))
    rows.append(
        {
            "benchmark": "levels",
            "case": "duchi mean difference",
            "oracle": "duchi",
            "test": "mean difference (Welch)",
            "reps": args.reps,
            "rejection_rate": rate,
            "interval_low": lo,
            "interval_high": hi,
            "within": bool(lo <= rate <= hi),
        }
    )
    top = float(np.max(np.abs(y)))
    rate = float(np.mean([betting.sequential_mean_difference(g[0], g[1], low=-top, high=top).reject for g in y]))
    rows.append(
        {
            "benchmark": "levels",
            "case": "duchi betting mean difference",
            "oracle": "duchi",
            "test": "betting: mean difference (every pair)",
            "reps": args.reps,
            "rejection_rate": rate,
            "interval_low": lo,
            "interval_high": hi,
            "within": bool(rate <= hi),
        }
    )
    report("levels", rows, args.out)


if __name__ == "__main__":
    main()
