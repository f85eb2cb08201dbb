"""Throughput and memory of unary encoding (SUE, OUE) at eps = 1.

Measured:

* ``bits``: the q-bit samplers on one chunk of ``CHUNK_BITS`` bits at SUE's and OUE's q,
  best of ``--repeats``: the exact bit-sliced sampler of ``bernoulli_bits``, one float64
  uniform per bit compared with q (the plain way), and the sparse sampler (a binomial
  count of ones at a uniform subset of positions, used below q = 1/64);
* ``privatize``: n clients (10^6 and 10^7) at k = 64 and k = 4096, privatised the way the
  survey engine does it, in batches of ``--batch`` clients (``simulation.batch_size``,
  default 2^16), each batch followed by the server's ``statistic``; the two are timed
  separately (one run: these take minutes). At k = 64 one ``privatize`` call of all n
  clients is timed too, best of 2 (its output is n k bytes: 640 MB at 10^7, whose first
  touch costs about 3 ns per byte in a fresh process; at k = 4096 a single call would
  return 41 GB, which is why the engine batches);
* ``memory``: the peak traced by tracemalloc during the batched run of n = 10^7 clients at
  k = 4096 (privatize and statistic of one batch at a time), and ``peak_extra_mib``, the
  peak of one ``privatize`` call less its output (the chunk temporaries), at k = 4096;
* ``sample_statistic``: 10^12 clients at k = 4096 (aggregate mode), best of ``--repeats``.

Run from the repo root: ``python benchmarks/bench_unary.py [--sizes 1000000,10000000]``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from _common import batched, best_of, parser, report, timed
from ldpsim.mechanisms.oracles.unary import CHUNK_BITS, OptimizedUnaryEncoding, SymmetricUnaryEncoding, bernoulli_bits

EPS = 1.0


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--sizes", default="1000000,10000000", help="comma-separated numbers of clients")
    p.add_argument("--batch", type=int, default=1 << 16, help="clients per engine batch")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(args.seed)
    rows = []

    # -- the q-bit samplers on one chunk
    nb = CHUNK_BITS
    for label, mech in (("sue", SymmetricUnaryEncoding(64, EPS)), ("oue", OptimizedUnaryEncoding(64, EPS))):
        q = mech.q
        best = best_of(
            {
                "bit-sliced (exact, used)": lambda: bernoulli_bits(q, nb, rng),
                "uniform per bit": lambda: (rng.random(nb) < q).view(np.uint8),
                "sparse (used below 1/64)": lambda: _sparse(q, nb, rng),
            },
            args.repeats,
        )
        for case, s in best.items():
            rows.append(
                dict(
                    benchmark="unary",
                    case=f"bits {label} q={q:.4f}: {case}",
                    n=nb,
                    seconds=s,
                    throughput_per_s=nb / s,
                    ns_per_bit=s / nb * 1e9,
                )
            )

    # -- privatize and statistic, engine-style batches
    for k in (64, 4096):
        for n in sizes:
            mech = OptimizedUnaryEncoding(k, EPS)
            t_priv, t_stat, total = batched(mech, n, args.batch, rng, rng)
            assert int(total.sum()) > 0
            rows.append(
                dict(
                    benchmark="unary",
                    case=f"oue privatize, batches of {args.batch}",
                    n=n,
                    k=k,
                    seconds=t_priv,
                    throughput_per_s=n / t_priv,
                    ns_per_bit=t_priv / (n * k) * 1e9,
                )
            )
            rows.append(
                dict(
                    benchmark="unary",
                    case=f"oue statistic, batches of {args.batch}",
                    n=n,
                    k=k,
                    seconds=t_stat,
                    throughput_per_s=n / t_stat,
                    ns_per_bit=t_stat / (n * k) * 1e9,
                )
            )
            if k == 64:
                x = rng.integers(0, k, size=n)
                sue = SymmetricUnaryEncoding(k, EPS)
                # best of 2: the first call of a process also pays the first touch of its n k bytes
                best = best_of({"sue": lambda: sue.privatize(x, rng), "oue": lambda: mech.privatize(x, rng)}, 2)
                y = mech.privatize(x, rng)
                s2, _ = timed(lambda: mech.statistic(y))  # noqa: F821 - runs before del y
                del y
                for label, s in best.items():
                    rows.append(
                        dict(
                            benchmark="unary",
                            case=f"{label} privatize, one call",
                            n=n,
                            k=k,
                            seconds=s,
                            throughput_per_s=n / s,
                            ns_per_bit=s / (n * k) * 1e9,
                        )
                    )
                rows.append(
                    dict(
                        benchmark="unary",
                        case="statistic, one call",
                        n=n,
                        k=k,
                        seconds=s2,
                        throughput_per_s=n / s2,
                        ns_per_bit=s2 / (n * k) * 1e9,
                    )
                )

    # -- memory at k = 4096
    mech = OptimizedUnaryEncoding(4096, EPS)
    n = max(sizes)
    tracemalloc.start()
    batched(mech, n, args.batch, rng, rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rows.append(
        dict(
            benchmark="unary",
            case=f"peak memory, privatize + statistic in batches of {args.batch}",
            n=n,
            k=4096,
            peak_mib=peak / 2**20,
        )
    )
    x = rng.integers(0, 4096, size=1 << 16)
    tracemalloc.start()
    y = mech.privatize(x, rng)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rows.append(
        dict(
            benchmark="unary",
            case="peak of one privatize call less its output",
            n=x.size,
            k=4096,
            peak_extra_mib=(peak - y.nbytes) / 2**20,
            output_mib=y.nbytes / 2**20,
        )
    )
    del y

    # -- aggregate mode
    counts = np.full(4096, 10**12 // 4096)
    counts[0] += 10**12 - int(counts.sum())
    best = best_of(
        {
            "oue": lambda: mech.sample_statistic(counts, rng),
            "sue": lambda: SymmetricUnaryEncoding(4096, EPS).sample_statistic(counts, rng),
        },
        args.repeats,
    )
    for label, s in best.items():
        rows.append(dict(benchmark="unary", case=f"{label} sample_statistic", n=10**12, k=4096, seconds=s))
    report("unary", rows, args.out)


def _sparse(q: float, size: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(size, dtype=np.uint8)
    out[rng.choice(size, size=int(rng.binomial(size, q)), replace=False, shuffle=False)] = 1
    return out


if __name__ == "__main__":
    main()
