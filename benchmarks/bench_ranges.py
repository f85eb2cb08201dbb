"""Range queries over an ordered answer: flat, hierarchical (each fan-out, with and without
consistency) and HaarHRR, at d = 1024, eps = 1, n = 10^6.

For every method: the exact mean variance of the workload (every range of the lengths
``--lengths``, at least 64 by default) from :meth:`ldpsim.mechanisms.ranges.RangeMethod.
range_variance` at the expected respondents per level, and the empirical mean squared
error over ``--repetitions`` simulated collections (answers from a Beta(5, 2) law on the
buckets, privatised and estimated; the truth is the law's share of each range), with the
ratio of the two; the time to collect and answer. The fan-out with the smallest exact
mean variance is :func:`ldpsim.mechanisms.ranges.optimal_fanout`'s.

Run from the repo root: ``python benchmarks/bench_ranges.py [--n 1000000]``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from _common import parser, report
from ldpsim.mechanisms.ranges import FlatRanges, HaarRanges, HierarchicalRanges, range_matrix, ranges_of_length


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=1024)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    args = p.parse_args()
    n, d, eps = args.n, args.d, args.eps
    edges = np.linspace(0, 1, d + 1)
    prior = np.diff(stats.beta(5, 2).cdf(edges))
    prior /= prior.sum()
    workload = ranges_of_length(d, args.lengths)
    truth = range_matrix(workload, d) @ prior
    methods = {"flat (OUE)": FlatRanges(d, eps)}
    for b in (2, 4, 8, 16):
        methods[f"hierarchical B={b}"] = HierarchicalRanges(d, eps, fanout=b, consistent=False)
        methods[f"hierarchical B={b}, consistent"] = HierarchicalRanges(d, eps, fanout=b)
    methods["HaarHRR"] = HaarRanges(d, eps)
    rows = []
    flat_exact = None
    for name, method in methods.items():
        exact = float(np.mean(method.range_variance(workload, prior, method.expected_sizes(n))))
        flat_exact = exact if flat_exact is None else flat_exact
        errors, seconds = [], []
        for r in range(args.repetitions):
            rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(r,)))
            x = rng.choice(d, size=n, p=prior)
            t0 = time.perf_counter()
            est = method.answer(method.collect(x, rng), workload)
            seconds.append(time.perf_counter() - t0)
            errors.append(np.mean((est - truth) ** 2))
        empirical = float(np.mean(errors))
        rows.append(
            dict(
                benchmark="ranges",
                case=f"{name}: {len(workload)} ranges of length {min(args.lengths)}..{max(args.lengths)}",
                n=n,
                k=d,
                seconds=float(np.mean(seconds)),
                throughput_per_s=n / float(np.mean(seconds)),
                exact_mse=exact,
                empirical_mse=empirical,
                empirical_over_exact=empirical / exact,
                flat_over_this=flat_exact / exact,
                target=">= 5x below flat" if name.startswith("hierarchical") else "",
                meets_target=flat_exact / exact >= 5 if name.startswith("hierarchical") else "",
            )
        )
    report("ranges", rows, args.out)


if __name__ == "__main__":
    main()
