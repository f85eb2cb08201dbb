"""The level and power of the tests on paired unbiased terms (``ldpsim.analyst.association``),
measured: the rejection rate of a true null at alpha = 0.05 over ``--reps`` replications
(4,000 by default), beside the 99.9% interval in which a test of level exactly 0.05 would
put it (binomial), and the power against a correlation of about 0.3.

Cases: two independent numbers in [-1, 1] through Duchi et al.'s mechanism at eps = 1 (Wald,
n = 200 and 2,000); a 4-answer question through randomized response with its unbiased
terms (e_y - q) / (p - q) against an independent number through Duchi's (Wald, eps = 1 at
n = 300 and eps = 0.5 at n = 100); the permutation calibration at n = 30 with 99 draws on
continuous reports (the piecewise mechanism) and on two-valued ones (Duchi's, whose ties
make it conservative); homogeneity of a 3-answer question across three groups of 500
(Wald); and the power of the Wald test against a correlation of about 0.3 (Duchi, eps = 1,
n = 500, 2,000 and 8,000; ``--reps`` / 10 replications each).

Writes ``reports/benchmarks/association_levels.csv``. Run from the repository root:
``python benchmarks/association_levels.py [--reps 4000]`` (about a minute on 2 cores).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from _common import parser, report
from ldpsim.analyst import association_test, group_homogeneity
from ldpsim.mechanisms import catalog

ALPHA = 0.05


def numeric_pair(gen, n, eps, rho, kind="duchi"):
    """Two numbers in [-1, 1] with correlation about ``rho``, each through ``kind``."""
    mech = catalog.build(kind, eps=eps)
    z = gen.normal(size=(n, 2))
    x = np.tanh(z[:, 0])
    y = np.tanh(rho * z[:, 0] + math.sqrt(1 - rho**2) * z[:, 1])
    return mech.privatize(x, gen), mech.privatize(y, gen)


def rr_units(x, k, eps, gen):
    """Randomized response's reports of ``x`` and their unbiased terms."""
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = (1 - p) / (k - 1)
    y = np.where(gen.random(x.size) < p - q, x, gen.integers(0, k, x.size))
    return (np.eye(k)[y] - q) / (p - q)


def cases(gen):
    """Name -> a function of nothing returning whether one replication rejected."""
    duchi = catalog.build("duchi", eps=1.0)
    law = [0.4, 0.3, 0.2, 0.1]
    groups = np.repeat([0, 1, 2], 500)
    return {
        "number x number (Duchi, eps 1), n 200, wald": lambda: (
            association_test(*numeric_pair(gen, 200, 1.0, 0.0), method="wald").reject
        ),
        "number x number (Duchi, eps 1), n 2000, wald": lambda: (
            association_test(*numeric_pair(gen, 2000, 1.0, 0.0), method="wald").reject
        ),
        "4 answers (RR, eps 1) x number (Duchi), n 300, wald": lambda: (
            association_test(
                rr_units(gen.choice(4, 300, p=law), 4, 1.0, gen),
                duchi.privatize(gen.uniform(-1, 1, 300), gen),
                method="wald",
            ).reject
        ),
        "4 answers (RR, eps 0.5) x number (Duchi), n 100, wald": lambda: (
            association_test(
                rr_units(gen.choice(4, 100, p=law), 4, 0.5, gen),
                duchi.privatize(gen.uniform(-1, 1, 100), gen),
                method="wald",
            ).reject
        ),
        "number x number (piecewise, eps 0.5), n 30, permutation 99": lambda: (
            association_test(*numeric_pair(gen, 30, 0.5, 0.0, "piecewise"), draws=99, rng=gen).reject
        ),
        "number x number (Duchi, eps 0.5), n 30, permutation 99": lambda: (
            association_test(*numeric_pair(gen, 30, 0.5, 0.0), draws=99, rng=gen).reject
        ),
        "3 answers (RR, eps 1) across 3 groups of 500, wald": lambda: (
            group_homogeneity(rr_units(gen.choice(3, 1500), 3, 1.0, gen), groups, method="wald").reject
        ),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--reps", type=int, default=4000, help="replications per level case")
    args = p.parse_args()
    gen = np.random.default_rng(args.seed)
    rows = []
    reps = args.reps
    lo = stats.binom.ppf(0.0005, reps, ALPHA) / reps
    hi = stats.binom.isf(0.0005, reps, ALPHA) / reps
    for name, once in cases(gen).items():
        rate = sum(bool(once()) for _ in range(reps)) / reps
        rows.append(
            {
                "benchmark": "association_levels",
                "case": name,
                "what": "level",
                "reps": reps,
                "rejection_rate": rate,
                "interval_low": lo,
                "interval_high": hi,
                "within": bool(rate <= hi),
            }
        )
    few = max(20, reps // 10)
    for n in (500, 2000, 8000):
        rate = sum(bool(association_test(*numeric_pair(gen, n, 1.0, 0.3), method="wald").reject) for _ in range(few))
        rows.append(
            {
                "benchmark": "association_levels",
                "case": f"number x number (Duchi, eps 1), correlation 0.3, n {n}, wald",
                "what": "power",
                "reps": few,
                "rejection_rate": rate / few,
            }
        )
    report("association_levels", rows, args.out)


if __name__ == "__main__":
    main()
