"""Exact accuracies of multi-party protocols: the largest k each path handles, and its time.

Cases (the universal (eps_i, delta_i) randomized response; one run each, best of
``--repeats``; party 0 and the central observer):

* general function (random table, 2 outputs), heterogeneous levels: k = 8, 10, 12 (the limit);
* symmetric functions (sum, majority) by transcript classes: k = 1000 parties at one privacy
  level with delta = 0 (1000 classes); k = 60 with delta > 0 (37,820 classes) and 2 levels;
* XOR by its closed form: k = 10^5;
* the optimal rule applied to simulated rounds (DP over parties): 1000 rounds at k = 1000;
* worst-case linear program: k = 3, 5, 7 (the limit for a binary function).

Run from the repo root: ``python benchmarks/bench_protocols.py``. Writes
``reports/benchmarks/protocols.csv``.
"""

from __future__ import annotations

import numpy as np
from _common import parser, report, timed

from ldpsim.protocols import OBSERVER, Protocol, Task, decide, exact_accuracy, transcript_classes, worst_case


def best(fn, repeats):
    times, value = [], None
    for _ in range(repeats):
        s, value = timed(fn)
        times.append(s)
    return min(times), value


def main() -> None:
    args = parser(__doc__.splitlines()[0], repeats=3).parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []

    def add(case, k, fn, **extra):
        s, v = best(fn, args.repeats)
        rows.append(dict(benchmark="protocols", case=case, k=k, seconds=s, value=v, **extra))

    for k in (8, 10, 12):
        p = Protocol.universal(rng.uniform(0.2, 3, k), rng.uniform(0, 0.1, k))
        f = Task.random(k, 2, rng=rng)
        add("general f, party 0", k, lambda: exact_accuracy(p, f, 0))
        add("general f, observer", k, lambda: exact_accuracy(p, f, OBSERVER))
    p1k = Protocol.universal(np.full(1000, 0.5), 0.0)
    for task in (Task.sum(1000), Task.majority(1000)):
        add(f"{task.name}, 1 level, delta 0, party 0", 1000, lambda: exact_accuracy(p1k, task, 0), classes=transcript_classes(p1k, 0))
    p60 = Protocol.universal(np.full(60, 0.5), 0.05)
    add("majority, 1 level, delta 0.05, party 0", 60, lambda: exact_accuracy(p60, Task.majority(60), 0), classes=transcript_classes(p60, 0))
    p2 = Protocol.universal([0.5] * 100 + [2.0] * 100, 0.0)
    add("majority, 2 levels, delta 0, party 0", 200, lambda: exact_accuracy(p2, Task.majority(200), 0), classes=transcript_classes(p2, 0))
    big = Protocol.universal(rng.uniform(0.1, 1, 100_000), rng.uniform(0, 0.01, 100_000))
    add("xor closed form, party 0", 100_000, lambda: exact_accuracy(big, Task.xor(100_000), 0))
    x = rng.integers(0, 2, (1000, 1000))
    tau = p1k.sample(x, rng)
    add("decide 1000 rounds (DP), majority", 1000, lambda: float(np.mean(decide(p1k, Task.majority(1000), 0, tau, x[:, 0]) == Task.majority(1000).value(x))))
    for k in (3, 5, 7):
        p = Protocol.universal(rng.uniform(0.2, 3, k), rng.uniform(0, 0.1, k))
        add("worst-case LP, majority, party 0", k, lambda: worst_case(p, Task.majority(k), 0)[0])
        add("worst-case LP, majority, observer", k, lambda: worst_case(p, Task.majority(k), OBSERVER)[0])
    report("protocols", rows, args.out)


if __name__ == "__main__":
    main()
