"""The figure of range error against range length (docs/img/range_error_by_length.png).

Exact root mean squared error of range answers, averaged over every range of each length,
for the flat method (OUE), hierarchical trees (fan-out 4, with and without consistency)
and HaarHRR, at d = 1024 ordered answers, eps = 1, n = 10^6 respondents (answers from a
Beta(5, 2) law on the buckets). No simulation: the variances are
:meth:`ldpsim.mechanisms.ranges.RangeMethod.range_variance` at the expected respondents per
level (``bench_ranges.py`` checks them against simulated collections).

Run from the repo root: ``python benchmarks/fig_ranges.py [--figure PATH]``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from _common import REPO_ROOT, parser, report
from ldpsim.mechanisms.ranges import FlatRanges, HaarRanges, HierarchicalRanges, ranges_of_length
from ldpsim.report.figures import plt, png_bytes, quiet_figures


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--n", type=float, default=1e6)
    p.add_argument("--d", type=int, default=1024)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--figure", default=str(REPO_ROOT / "docs" / "img" / "range_error_by_length.png"))
    args = p.parse_args()
    d, eps, n = args.d, args.eps, args.n
    prior = np.diff(stats.beta(5, 2).cdf(np.linspace(0, 1, d + 1)))
    prior /= prior.sum()
    # the whole range is 1 exactly for the consistent and Haar fits (variance 0): left out
    lengths = [L for L in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if L < d]
    methods = {
        "flat (OUE)": FlatRanges(d, eps),
        "hierarchical, B = 4": HierarchicalRanges(d, eps, fanout=4, consistent=False),
        "hierarchical, B = 4, consistent": HierarchicalRanges(d, eps, fanout=4),
        "HaarHRR": HaarRanges(d, eps),
    }
    rows, curves = [], {}
    for name, method in methods.items():
        sizes = method.expected_sizes(n)
        rmse = []
        for length in lengths:
            var = method.range_variance(ranges_of_length(d, [length]), prior, sizes)
            rmse.append(float(np.sqrt(np.mean(var))))
            rows.append(dict(benchmark="fig_ranges", case=f"{name}, length {length}", n=int(n), k=d, rmse=rmse[-1]))
        curves[name] = rmse
    with quiet_figures():
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for (name, rmse), style in zip(curves.items(), ("-o", "--s", "-^", ":d")):
            ax.plot(lengths, rmse, style, ms=4, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("range length (answers)")
        ax.set_ylabel("root mean squared error of the range's share")
        ax.set_title(f"Exact error of range answers, d = {d}, eps = {eps:g}, n = {n:.0e}", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        data = png_bytes(fig)
    with open(args.figure, "wb") as f:
        f.write(data)
    report("fig_ranges", rows, args.out)


if __name__ == "__main__":
    main()
