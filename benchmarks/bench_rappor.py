"""Throughput of RAPPOR: privatize, the server's statistic and the exact aggregate draw.

Measured for n in {10^6, 10^7} clients with inputs uniform over k in {64, 4096} candidates,
m Bloom filter bits (default 128) and h = 2 hashes, f = 0.5, p = 0.5 and q chosen so that
the exact eps of one report is 1 (``q_for_eps``):

* ``floor``: numpy drawing the ``n m`` uniforms the sampler compares with ``q*`` or ``p*``
  (in chunks of 2^20 into one reused buffer, as the sampler does);
* ``privatize``: ``Rappor.privatize(x, rng)`` (``n x m`` bits, one byte each);
* ``statistic``: ``Rappor.statistic(reports)``, the ``m`` bit counts;
* ``sample_statistic``: one exact draw of the bit counts of 10^12 clients (aggregate mode);
* ``peak_extra_mib``: the peak memory traced by tracemalloc during one privatize call,
  less its output (``n m`` bytes): the chunked sampler keeps it at a few chunks.

Run from the repo root: ``python benchmarks/bench_rappor.py [--m 128] [--repeats 1]``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
from scipy.optimize import brentq

from _common import best_of, parser, report, timed
from ldpsim.mechanisms.oracles.rappor import CHUNK_BITS, Rappor

EPS = 1.0


def q_for_eps(k: int, m: int, h: int = 2, f: float = 0.5, p: float = 0.5, eps: float = EPS) -> float:
    """The q at which the exact eps of one report is ``eps``."""
    return float(brentq(lambda q: Rappor(k, m, h, f, p, q).epsilon() - eps, p + 1e-9, 1.0, xtol=1e-15))


def floor(gen: np.random.Generator, n: int, m: int) -> None:
    rows = max(1, CHUNK_BITS // m)
    buf = np.empty((rows, m))
    for _ in range(-(-n // rows)):
        gen.random(out=buf)


def main() -> None:
    pa = parser(__doc__.splitlines()[0], repeats=1)
    pa.add_argument("--m", type=int, default=128, help="Bloom filter bits")
    args = pa.parse_args()
    rows = []
    setup, gen = np.random.default_rng(args.seed).spawn(2)
    for k in (64, 4096):
        q = q_for_eps(k, args.m)
        mech = Rappor(k, args.m, 2, 0.5, 0.5, q)
        base = dict(benchmark="rappor", k=k, m=args.m, eps=mech.epsilon(), q=q)
        for n in (10**6, 10**7):
            x = setup.integers(0, k, size=n)
            best = best_of(
                {"floor": lambda: floor(gen, n, args.m), "privatize": lambda: mech.privatize(x, gen)}, args.repeats
            )
            reports = mech.privatize(x, gen)
            stat_s, _ = timed(lambda: mech.statistic(reports))  # noqa: F821 - runs before del reports
            del reports
            rows.append(
                dict(
                    base,
                    case="floor: rng.random((n, m))",
                    n=n,
                    seconds=best["floor"],
                    throughput_per_s=n / best["floor"],
                )
            )
            rows.append(
                dict(
                    base,
                    case="privatize",
                    n=n,
                    seconds=best["privatize"],
                    throughput_per_s=n / best["privatize"],
                    floor_seconds=best["floor"],
                    ratio_to_floor=best["privatize"] / best["floor"],
                )
            )
            rows.append(dict(base, case="statistic", n=n, seconds=stat_s, throughput_per_s=n / stat_s))
            if n == 10**7 and k == 4096:
                tracemalloc.start()
                out = mech.privatize(x, gen)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                rows[-2]["peak_extra_mib"] = (peak - out.nbytes) / 2**20
                rows[-2]["output_mib"] = out.nbytes / 2**20
                del out
        counts = np.full(k, 10**12 // k)
        s, _ = timed(lambda: mech.sample_statistic(counts, gen))
        rows.append(dict(base, case="sample_statistic, 10^12 clients", n=int(counts.sum()), seconds=s))
    report("rappor", rows, args.out)


if __name__ == "__main__":
    main()
