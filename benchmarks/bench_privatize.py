"""Throughput of ``privatize`` against the cost of the random numbers it must draw.

Measured, for n clients (default 10^7) with inputs in k = 64 symbols, eps = 1:

* ``floor``: numpy's default generator drawing what a sampler needs per client, one
  uniform (``rng.random(n)``) plus one integer in [0, k) (``rng.integers(0, k, n)``);
* ``randomized_response(64, 1.0).privatize(x, rng)``;
* ``from_matrix(Q).privatize(x, rng)`` for a random 64 x 64 row-stochastic Q (Dirichlet
  rows), an alias-table sampler; its one-off table build is timed separately (first call
  on a tiny input) and excluded from the timed runs.

The three are run interleaved ``--repeats`` times and the best time of each is kept.
Target: each sampler within 3x the floor (ratio_to_floor <= 3). The inputs x are drawn
once beforehand. ``peak_extra_mib`` is the peak memory traced by tracemalloc during one
extra (untimed) privatize call, minus its n-long output: the chunked sampler should
keep it at a few chunk-sized arrays whatever n.

Run from the repo root: ``python benchmarks/bench_privatize.py [--n N] [--seed S]``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

import ldpsim
from _common import best_of, parser, report, timed

K = 64
EPS = 1.0
TARGET = 3.0


def peak_extra_mib(privatize) -> float:
    """Peak traced memory of one call, less its output, in MiB."""
    tracemalloc.start()
    out = privatize()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - out.nbytes) / 2**20


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10**7, help="number of clients")
    args = p.parse_args()
    n = args.n

    setup, g_floor, g_rr, g_gen = np.random.default_rng(args.seed).spawn(4)
    x = setup.integers(0, K, size=n)
    rr = ldpsim.randomized_response(K, EPS)
    generic = ldpsim.from_matrix(setup.dirichlet(np.ones(K), size=K))
    build_s, _ = timed(lambda: generic.privatize(x[:8], g_gen))  # builds the alias tables

    cases = {
        "floor": lambda: (g_floor.random(n), g_floor.integers(0, K, n)),
        "rr": lambda: rr.privatize(x, g_rr),
        "generic": lambda: generic.privatize(x, g_gen),
    }
    best = best_of(cases, args.repeats)
    floor = best["floor"]

    base = dict(benchmark="privatize", n=n, k=K, m=K)
    rows = [
        dict(
            base,
            case="floor: rng.random(n) + rng.integers(0, k, n)",
            seconds=floor,
            throughput_per_s=n / floor,
            floor_seconds=floor,
            ratio_to_floor=1.0,
        )
    ]
    for key, label, mech in [
        ("rr", "randomized_response(64, 1.0)", rr),
        ("generic", "from_matrix(Q 64x64 Dirichlet)", generic),
    ]:
        s = best[key]
        rows.append(
            dict(
                base,
                case=label,
                seconds=s,
                throughput_per_s=n / s,
                floor_seconds=floor,
                ratio_to_floor=s / floor,
                target=f"<= {TARGET:g}x floor",
                meets_target=s / floor <= TARGET,
                peak_extra_mib=peak_extra_mib(lambda: mech.privatize(x, 0)),
            )
        )
    rows.append(dict(base, n=8, case="from_matrix: alias-table build (one-off, first call)", seconds=build_s))
    report("privatize", rows, args.out)


if __name__ == "__main__":
    main()
