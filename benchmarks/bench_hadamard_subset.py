"""Throughput of Hadamard response and subset selection (privatize, the server's statistic,
exact aggregate sampling) and the temporary memory of privatize.

Measured at eps = 1 for k = 64 and k = 4096 and n clients (default 10^6 and 10^7):

* ``privatize``: one call on n inputs drawn uniformly, and ``statistic`` of its output;
  for subset selection at (k = 4096, n = 10^7) the n x omega output (22 GB) cannot be held,
  so that case runs as the survey engine runs it, in batches of 2^16 clients
  (privatize + statistic per batch, the statistic summed);
* ``peak_extra_mib``: the peak memory traced by tracemalloc during one privatize call of the
  largest n, minus its output (for the batched case: during one batch);
* Hadamard response's ``sample_statistic`` with 10^12 clients spread over k = 4096 inputs
  (the exact aggregate law; subset selection has none).

Run from the repo root: ``python benchmarks/bench_hadamard_subset.py [--n 1000000 10000000]``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from _common import parser, report, timed
from ldpsim.mechanisms.oracles.hadamard import HadamardResponse
from ldpsim.mechanisms.oracles.subset import SubsetSelection

EPS = 1.0
BATCH = 1 << 16
HOLDABLE = 4 * 2**30  # bytes of output privatize may return in one call here


def peak_extra_mib(call) -> float:
    tracemalloc.start()
    out = call()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - np.asarray(out).nbytes) / 2**20


def batched(mech, x, rng):
    total = np.zeros(mech.statistic_size, dtype=np.int64)
    for start in range(0, x.size, BATCH):
        total += mech.statistic(mech.privatize(x[start : start + BATCH], rng))
    return total


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--n", type=int, nargs="+", default=[10**6, 10**7], help="numbers of clients")
    p.add_argument("--k", type=int, nargs="+", default=[64, 4096], help="alphabet sizes")
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for k in args.k:
        for mech in (HadamardResponse(k, EPS), SubsetSelection(k, EPS)):
            width = int(np.prod(mech.report_shape, dtype=np.int64))
            itemsize = np.dtype(getattr(mech, "report_dtype", np.int64)).itemsize
            for n in args.n:
                x = rng.integers(0, k, size=n)
                base = dict(benchmark="oracles", case=repr(mech), n=n, k=k, m=mech.statistic_size)
                if n * width * itemsize <= HOLDABLE:
                    s_priv, y = timed(lambda: mech.privatize(x, rng))  # noqa: F821 - runs before del x
                    s_stat, counts = timed(lambda: mech.statistic(y))
                    del y
                    rows.append(dict(base, step="privatize", seconds=s_priv, throughput_per_s=n / s_priv))
                    rows.append(dict(base, step="statistic", seconds=s_stat, throughput_per_s=n / s_stat))
                    if n == max(args.n):
                        rows[-2]["peak_extra_mib"] = peak_extra_mib(
                            lambda: mech.privatize(x, rng)  # noqa: F821 - runs before del x
                        )
                else:
                    s, counts = timed(lambda: batched(mech, x, rng))  # noqa: F821 - runs before del x
                    rows.append(
                        dict(
                            base,
                            step=f"privatize + statistic in batches of {BATCH}",
                            seconds=s,
                            throughput_per_s=n / s,
                            peak_extra_mib=peak_extra_mib(
                                lambda: mech.privatize(x[:BATCH], rng)  # noqa: F821 - runs before del x
                            ),
                        )
                    )
                assert int(counts.sum()) == n * (width if width else 1)
                del x
        if isinstance(mech, SubsetSelection):
            hr = HadamardResponse(k, EPS)
            n_x = np.full(k, 10**12 // k, dtype=np.int64)
            hr.sample_statistic(n_x, rng)  # warm-up
            s, counts = timed(lambda: hr.sample_statistic(n_x, rng))
            rows.append(
                dict(
                    benchmark="oracles",
                    case=repr(hr),
                    n=int(n_x.sum()),
                    k=k,
                    m=hr.m,
                    step="sample_statistic (exact aggregate)",
                    seconds=s,
                )
            )
    report("hadamard_subset", rows, args.out)


if __name__ == "__main__":
    main()
