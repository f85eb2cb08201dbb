"""Speed of every question kind at 10^7 respondents: privatise and estimate, per report,
against k-ary randomized response's (the floor) in the same run.

Each case draws its answers first (not timed), then times the client side (``privatize``
of the question's mechanism, vectorised over all respondents) and the server side (the
statistic and the estimate the question's task computes):

* categorical: k-RR over 24 answers (the floor) and OUE;
* numeric: Square Wave's reports, their bucket counts and EMS on 256 buckets; piecewise's
  mean;
* ordinal: the hierarchical tree over 1,024 answers (fan-out 4, Hadamard response per
  level, consistent leaves) and HaarHRR, each as the finite mechanism a scenario uses,
  with 100 range answers;
* multiselect: padding and sampling of 6 items to 3, the items' shares;
* keyvalue: PCKV over 6 keys with padding 3, the keys' frequencies and value sums.

Run from the repo root: ``python benchmarks/bench_question_kinds.py [--n 10000000]``.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from _common import parser, report
from ldpsim.analyst import frequency_estimate
from ldpsim.analyst.distribution import em_counts, square_wave_transition
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.ranges import HaarRanges, HierarchicalRanges, ranges_of_length
from ldpsim.sim.question_kinds.keyvalue import PCKV
from ldpsim.sim.question_kinds.multiselect import PaddingSampling


def _timed(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=2)
    p.add_argument("--n", type=int, default=10_000_000)
    args = p.parse_args()
    n, eps = args.n, 1.0
    rng = np.random.default_rng(args.seed)
    cases: dict[str, Callable[[], object]] = {}

    krr = catalog.build("randomized_response", eps=eps, k=24)
    x24 = rng.integers(0, 24, size=n)
    cases["categorical: k-RR, k = 24 (the floor)"] = lambda: frequency_estimate(
        krr, np.bincount(krr.privatize(x24, rng), minlength=24)
    )
    oue = catalog.build("oue", eps=eps, k=24)
    cases["categorical: OUE, k = 24"] = lambda: frequency_estimate(oue, oue.statistic(oue.privatize(x24, rng)), n)

    sw = catalog.build("square_wave", eps=eps, lo=0.0, hi=1.0)
    u = rng.beta(5, 2, size=n)
    matrix = square_wave_transition(sw, 256)
    edges = np.linspace(0, 1, 257)

    def square_wave() -> object:
        y = sw.privatize(u, rng)
        cells = np.clip(np.floor((sw.raw(y) + sw.b) / (1 + 2 * sw.b) * 256), 0, 255).astype(np.int64)
        return y.mean(), em_counts(matrix, np.bincount(cells, minlength=256).astype(float), edges)

    cases["numeric: Square Wave, mean + EMS on 256 buckets"] = square_wave
    pw = catalog.build("piecewise", eps=eps, lo=0.0, hi=1.0)
    cases["numeric: piecewise, mean"] = lambda: pw.privatize(u, rng).mean()

    x1024 = np.minimum((u * 1024).astype(np.int64), 1023)
    workload = ranges_of_length(1024, [64])[:100]
    for name, method in (
        ("hierarchical B = 4, consistent", HierarchicalRanges(1024, eps, fanout=4, oracle="hadamard_response")),
        ("HaarHRR", HaarRanges(1024, eps)),
    ):
        mech = method.finite_mechanism()
        method.leaf_fit() if isinstance(method, HierarchicalRanges) else None  # the fit is set up once per run

        def ordinal(mech=mech, method=method) -> object:
            counts = np.bincount(mech.privatize(x1024, rng), minlength=mech.output_size)
            return method.answer(method.from_counts(counts), workload)

        cases[f"ordinal: {name}, d = 1,024, 100 ranges"] = ordinal

    ps = PaddingSampling(6, 3, eps)
    incl = np.array([0.6, 0.3, 0.25, 0.55, 0.4, 0.1])
    masks = ((rng.random((n, 6)) < incl).astype(np.int64) << np.arange(6)).sum(axis=1)

    def multiselect() -> object:
        counts = np.bincount(ps.privatize(masks, rng), minlength=ps.output_size)
        return 3 * ps.oracle.invert(counts / n)

    cases["multiselect: padding and sampling, 6 items to 3"] = multiselect

    kv = PCKV(6, 3, eps, 0.5)
    answers = np.empty((n, 7))
    answers[:, 0] = masks
    answers[:, 1:] = np.where(((masks[:, None] >> np.arange(6)) & 1) == 1, rng.uniform(-1, 1, (n, 6)), 0.0)

    def keyvalue() -> object:
        c = np.bincount(kv.privatize(answers, rng), minlength=kv.output_size) / n
        up, down = c[0:12:2], c[1:12:2]
        return 3 * (up + down - kv.b) / (kv.a - kv.b), 3 * (up - down) / (kv.a * (2 * kv.p - 1))

    cases["keyvalue: PCKV, 6 keys, padding 3"] = keyvalue

    times = {name: _timed(fn, args.repeats) for name, fn in cases.items()}
    floor = times["categorical: k-RR, k = 24 (the floor)"]
    rows = [
        dict(
            benchmark="question_kinds",
            case=name,
            n=n,
            seconds=sec,
            throughput_per_s=n / sec,
            floor_seconds=floor,
            ratio_to_floor=sec / floor,
            target="within 5x of k-RR",
            meets_target=sec / floor <= 5,
        )
        for name, sec in times.items()
    ]
    report("question_kinds", rows, args.out)


if __name__ == "__main__":
    main()
