"""A numeric answer's distribution: Square Wave + EMS against bucketing + OUE, and their speed.

The setting of Li et al. (2020), as far as it can be matched: n answers drawn from
Beta(5, 2) on [0, 1], eps = 1, the distribution estimated on d = 256 equal buckets.

* Square Wave: every answer privatised (vectorised), the server keeps the counts of the
  raw reports in d equal buckets of [-b, 1 + b], EMS decodes them (``ldpsim.analyst.
  distribution.em_counts``, stopped when the log-likelihood per report gains < 1e-9).
* Bucketing + OUE at B buckets (B = 8 ... 256): the answers' bucket counts, the OUE
  statistic drawn from its exact aggregate law, the unbiased estimate projected by
  Norm-Sub; each bucket's mass spread evenly over the d fine buckets it covers.

Errors: Wasserstein-1 and Kolmogorov-Smirnov against the sample's own histogram on the d
buckets, mean and standard deviation over ``--repetitions`` seeds. Speed: privatise +
estimate per report for Square Wave + EMS and for k-RR over d answers (individual reports
both), at ``--n`` respondents.

Run from the repo root: ``python benchmarks/bench_numeric_distribution.py [--n 1000000]``.
"""

from __future__ import annotations

import time

import numpy as np

from _common import parser, report
from ldpsim.analyst import frequency_estimate, norm_sub
from ldpsim.analyst.distribution import em_counts, kolmogorov_smirnov, square_wave_transition, wasserstein1
from ldpsim.mechanisms import catalog


def _fine(p: np.ndarray, d: int) -> np.ndarray:
    """A histogram on B buckets spread evenly over d fine buckets (B divides d)."""
    return np.repeat(p / (d // p.size), d // p.size)


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--repetitions", type=int, default=5)
    args = p.parse_args()
    n, d, eps = args.n, args.d, args.eps
    edges = np.linspace(0.0, 1.0, d + 1)
    sw = catalog.build("square_wave", eps=eps, lo=0.0, hi=1.0)
    matrix = square_wave_transition(sw, d)
    results: dict[str, list[tuple[float, float, float]]] = {}
    for r in range(args.repetitions):
        rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(r,)))
        x = rng.beta(5.0, 2.0, size=n)
        truth = np.bincount(np.clip((x * d).astype(np.int64), 0, d - 1), minlength=d) / n
        t0 = time.perf_counter()
        y = sw.privatize(x, rng)
        raw = sw.raw(y)
        cells = np.clip(np.floor((raw + sw.b) / (1 + 2 * sw.b) * d), 0, d - 1).astype(np.int64)
        est = em_counts(matrix, np.bincount(cells, minlength=d).astype(float), edges).probabilities
        seconds = time.perf_counter() - t0
        results.setdefault("square_wave+ems", []).append(
            (wasserstein1(est, truth, edges), kolmogorov_smirnov(est, truth), seconds)
        )
        for b in (8, 16, 32, 64, 128, 256):
            if d % b:
                continue
            oue = catalog.build("oue", eps=eps, k=b)
            t0 = time.perf_counter()
            counts = np.bincount(np.clip((x * b).astype(np.int64), 0, b - 1), minlength=b)
            stat = oue.sample_statistic(counts, rng)
            coarse = norm_sub(frequency_estimate(oue, stat, n).estimate)
            seconds = time.perf_counter() - t0
            fine = _fine(coarse, d)
            results.setdefault(f"bucketing+oue B={b}", []).append(
                (wasserstein1(fine, truth, edges), kolmogorov_smirnov(fine, truth), seconds)
            )
    # speed: individual reports, privatise + estimate, per report
    rng = np.random.default_rng(args.seed)
    x = rng.beta(5.0, 2.0, size=n)
    t0 = time.perf_counter()
    y = sw.privatize(x, rng)
    cells = np.clip(np.floor((sw.raw(y) + sw.b) / (1 + 2 * sw.b) * d), 0, d - 1).astype(np.int64)
    em_counts(matrix, np.bincount(cells, minlength=d).astype(float), edges)
    sw_seconds = time.perf_counter() - t0
    krr = catalog.build("randomized_response", eps=eps, k=d)
    codes = np.clip((x * d).astype(np.int64), 0, d - 1)
    t0 = time.perf_counter()
    reports = krr.privatize(codes, rng)
    frequency_estimate(krr, np.bincount(reports, minlength=d))
    krr_seconds = time.perf_counter() - t0
    rows = []
    for method, values in results.items():
        w1, ks, sec = (np.array(v) for v in zip(*values))
        rows.append(
            dict(
                benchmark="numeric_distribution",
                case=f"{method}, Beta(5,2), eps={eps:g}, d={d}",
                n=n,
                k=d,
                seconds=float(np.mean(sec)),
                throughput_per_s=n / float(np.mean(sec)),
                w1_mean=float(w1.mean()),
                w1_sd=float(w1.std(ddof=1)) if w1.size > 1 else float("nan"),
                ks_mean=float(ks.mean()),
                repetitions=int(w1.size),
            )
        )
    rows.append(
        dict(
            benchmark="numeric_distribution",
            case=f"speed: square_wave privatise + EMS vs k-RR (k = {d}) privatise + estimate, individual reports",
            n=n,
            k=d,
            seconds=sw_seconds,
            throughput_per_s=n / sw_seconds,
            floor_seconds=krr_seconds,
            ratio_to_floor=sw_seconds / krr_seconds,
            target="within 5x of k-RR",
            meets_target=sw_seconds / krr_seconds <= 5,
        )
    )
    report("numeric_distribution", rows, args.out)


if __name__ == "__main__":
    main()
