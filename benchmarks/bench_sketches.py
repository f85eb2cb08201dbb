"""Count-mean sketches at scale: reports per second in individual mode (each client's report
drawn and added to the sketch, in chunks, so memory stays bounded) and the sketch of 10^9
clients drawn in aggregate mode (``sample_statistic``: the cost of the distinct answers).

Answers: ``--items`` distinct 32-bit values with Zipf(1.1) weights over their ranks.

    python benchmarks/bench_sketches.py [--n 10000000] [--cms-n 1000000] [--items 100000]
"""

from __future__ import annotations

import time

import numpy as np

from _common import parser, report
from ldpsim.mechanisms.sketches import CountMeanSketch, HadamardCountMeanSketch

CHUNK = 1 << 20  # HCMS reports per chunk (a report is a row, a column and a sign)
CMS_CHUNK = 1 << 12  # CMS reports per chunk (a report is m bytes here)


def zipf_answers(gen: np.random.Generator, items: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``items`` distinct 32-bit answers and their Zipf(1.1) law over the ranks."""
    values = np.unique(gen.integers(0, 1 << 32, size=items + items // 10, dtype=np.int64))[:items]
    law = 1.0 / np.arange(1, values.size + 1) ** 1.1
    return values, law / law.sum()


def individual(mech, values, law, n, chunk, gen) -> tuple[float, np.ndarray]:
    """Seconds to privatise ``n`` answers and add their reports to the sketch, chunk by
    chunk (drawing the answers is not timed)."""
    sketch = np.zeros((mech.rows, mech.m))
    spent = 0.0
    for start in range(0, n, chunk):
        answers = values[gen.choice(values.size, size=min(chunk, n - start), p=law)]
        t0 = time.perf_counter()
        sketch += mech.statistic(*mech.privatize(answers, gen))
        spent += time.perf_counter() - t0
    return spent, sketch


def main() -> None:
    ap = parser(__doc__.splitlines()[0], repeats=1)
    ap.add_argument("--n", type=int, default=10_000_000, help="HCMS clients in individual mode")
    ap.add_argument("--cms-n", type=int, default=1_000_000, help="CMS clients in individual mode")
    ap.add_argument("--items", type=int, default=100_000, help="distinct answers")
    args = ap.parse_args()
    gen = np.random.default_rng(args.seed)
    values, law = zipf_answers(gen, args.items, args.n)

    def row(case: str, mech, sketch: np.ndarray, n: int, seconds: float) -> dict:
        """One CSV row: the time, and the three most common answers' estimated shares beside their true ones."""
        top = mech.estimate(sketch, n, values[:3])
        return {
            "benchmark": "sketches",
            "case": case,
            "n": n,
            "m": mech.m,
            "seconds": seconds,
            "throughput_per_s": n / seconds,
            "top3_estimate_share": np.round(top / n, 4).tolist(),
            "top3_share": np.round(law[:3], 4).tolist(),
        }

    hcms = HadamardCountMeanSketch(4.0, m=1024, rows=64, hash_seed=1)
    cms = CountMeanSketch(4.0, m=1024, rows=64, hash_seed=1)
    rows = []
    for mech, n, chunk in ((hcms, args.n, CHUNK), (cms, args.cms_n, CMS_CHUNK)):
        seconds, sketch = individual(mech, values, law, n, chunk, gen)
        rows.append(row(f"{mech.name} individual", mech, sketch, n, seconds))
    billion = 10**9
    counts = gen.multinomial(billion, law)
    for mech in (cms, hcms):
        t0 = time.perf_counter()
        sketch = mech.sample_statistic(values, counts, gen)
        rows.append(row(f"{mech.name} aggregate", mech, sketch, billion, time.perf_counter() - t0))
    report("sketches", rows, args.out)


if __name__ == "__main__":
    main()
