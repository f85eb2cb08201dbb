"""Exact accuracies of multi-party protocols: the largest k each path handles, and its time.

Cases (the universal (eps_i, delta_i) randomized response; one run each, best of
``--repeats``; party 0 and the central observer):

* general function (random table, 2 outputs), heterogeneous levels: k = 8, 10, 12 (the limit);
* symmetric functions (sum, majority) by transcript classes: k = 1000 parties at one privacy
  level with delta = 0 (1000 classes); k = 60 with delta > 0 (37,820 classes) and 2 levels;
* XOR by its closed form: k = 10^5;
* the optimal rule applied to simulated rounds (DP over parties): 1000 rounds at k = 1000;
* worst-case linear program: k = 3, 5, 7 (the limit for a binary function).

With a lossy channel (``--loss``, 5% by default: every message is not heard with that
probability, an extra "not heard" symbol per party, ``ldpsim.protocols.erasure_protocol``)
each path is timed at the largest k it accepts, found by bisection on ``exact_plan`` (the
general path and the transcript classes grow with the extra symbol; XOR does not).

The SimPy broadcast (``ldpsim.sim.multiparty.simulate_broadcast``: every party and the
observer decide every round; majority, universal RR at eps = 1, delta = 0, lognormal
latency, 5% loss and a deadline): seconds per 10^5 rounds at k = 8 (10^5 rounds run) and
k = 200 (``--rounds-200`` rounds run, 5,000 by default, scaled to 10^5: the cost is linear
in the rounds, batch by batch), the exact values computed beforehand and not timed.

Run from the repo root: ``python benchmarks/bench_protocols.py``. Writes
``reports/benchmarks/protocols.csv``.
"""

from __future__ import annotations

import numpy as np

from _common import parser, report, timed
from ldpsim.errors import LdpSimError
from ldpsim.protocols import (
    OBSERVER,
    Protocol,
    Task,
    decide,
    erasure_protocol,
    exact_accuracy,
    exact_plan,
    transcript_classes,
    worst_case,
)
from ldpsim.protocols.decisions import MAX_LP_ENTRIES


def best(fn, repeats):
    times, value = [], None
    for _ in range(repeats):
        s, value = timed(fn)
        times.append(s)
    return min(times), value


def largest_k(build, task_of, party, lo: int, hi: int) -> int:
    """The largest k in [lo, hi] whose exact path ``exact_plan`` accepts (monotone in k)."""

    def ok(k: int) -> bool:
        p = build(k)
        try:
            exact_plan(p, task_of(k), party if party != "last" else k - 1)
        except LdpSimError:
            return False
        return True

    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def lp_fits(p: Protocol, k: int, outputs: int = 2) -> bool:
    """Whether the worst-case LP of party 0 fits MAX_LP_ENTRIES (2^k rows x the others' transcripts x outputs)."""
    others = int(np.prod(p.sizes[1:]))
    return (2**k) * others * outputs <= MAX_LP_ENTRIES


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--loss", type=float, default=0.05, help="probability that a message is not heard (the lossy cases)")
    p.add_argument(
        "--rounds-200", type=int, default=5_000, help="rounds simulated at k = 200 (the time is scaled to 10^5)"
    )
    args = p.parse_args()
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
        add(
            f"{task.name}, 1 level, delta 0, party 0",
            1000,
            lambda: exact_accuracy(p1k, task, 0),
            classes=transcript_classes(p1k, 0),
        )
    p60 = Protocol.universal(np.full(60, 0.5), 0.05)
    add(
        "majority, 1 level, delta 0.05, party 0",
        60,
        lambda: exact_accuracy(p60, Task.majority(60), 0),
        classes=transcript_classes(p60, 0),
    )
    p2 = Protocol.universal([0.5] * 100 + [2.0] * 100, 0.0)
    add(
        "majority, 2 levels, delta 0, party 0",
        200,
        lambda: exact_accuracy(p2, Task.majority(200), 0),
        classes=transcript_classes(p2, 0),
    )
    big = Protocol.universal(rng.uniform(0.1, 1, 100_000), rng.uniform(0, 0.01, 100_000))
    add("xor closed form, party 0", 100_000, lambda: exact_accuracy(big, Task.xor(100_000), 0))
    x = rng.integers(0, 2, (1000, 1000))
    tau = p1k.sample(x, rng)
    add(
        "decide 1000 rounds (DP), majority",
        1000,
        lambda: float(np.mean(decide(p1k, Task.majority(1000), 0, tau, x[:, 0]) == Task.majority(1000).value(x))),
    )
    for k in (3, 5, 7):
        p = Protocol.universal(rng.uniform(0.2, 3, k), rng.uniform(0, 0.1, k))
        add("worst-case LP, majority, party 0", k, lambda: worst_case(p, Task.majority(k), 0)[0])
        add("worst-case LP, majority, observer", k, lambda: worst_case(p, Task.majority(k), OBSERVER)[0])
    # ---- with a lossy channel: largest k per path, then its time
    m = args.loss
    hetero = lambda k: erasure_protocol(Protocol.universal(rng.uniform(0.2, 3, k), rng.uniform(0, 0.1, k)), m)
    for party, label in ((0, "party 0"), (OBSERVER, "observer")):
        k = largest_k(hetero, lambda k: Task.random(k, 2, rng=1), party, 2, 14)
        pk, fk = hetero(k), Task.random(k, 2, rng=rng)
        add(f"loss {m:g}: general f, {label}", k, lambda: exact_accuracy(pk, fk, party), loss=m)
    for delta, label in ((0.0, "delta 0"), (0.05, "delta 0.05")):
        one = lambda k, delta=delta: erasure_protocol(Protocol.universal(np.full(k, 0.5), delta), m)
        k = largest_k(one, Task.majority, 0, 2, 2000)
        pk = one(k)
        add(
            f"loss {m:g}: majority, 1 level, {label}, party 0",
            k,
            lambda: exact_accuracy(pk, Task.majority(k), 0),
            classes=transcript_classes(pk, 0),
            loss=m,
        )
    bigl = erasure_protocol(big, m)
    add(f"loss {m:g}: xor closed form, party 0", 100_000, lambda: exact_accuracy(bigl, Task.xor(100_000), 0), loss=m)
    k = max(k for k in range(2, 12) if lp_fits(hetero(k), k))
    pk = hetero(k)
    add(f"loss {m:g}: worst-case LP, majority, party 0", k, lambda: worst_case(pk, Task.majority(k), 0)[0], loss=m)
    # ---- the SimPy broadcast: seconds per 10^5 rounds
    from ldpsim.sim.multiparty import channel_missing, exact_values, simulate_broadcast
    from ldpsim.sim.network import LognormalLatency

    latency = LognormalLatency(median=0.05, sigma=0.8)
    for k, rounds, batch in ((8, 100_000, 10_000), (200, args.rounds_200, 1_000)):
        pk, task = Protocol.universal(1.0, 0.0, parties=k), Task.majority(k)
        exact = exact_values([pk], task, missing=channel_missing(m, 0.3, latency)[1])  # beforehand, not timed

        def sim(pk=pk, task=task, rounds=rounds, batch=batch, exact=exact):
            out = simulate_broadcast(
                [pk],
                task,
                rounds,
                batch=batch,
                latency=latency,
                interval=0.05,
                seed=1,
                loss=m,
                deadline=0.3,
                exact=exact,
            )
            acc = out.table[out.table["quantity"] == "accuracy"]
            return float(acc["within_tolerance"].mean())  # the share of receivers within tolerance

        s_, v = best(sim, 1)
        rows.append(
            dict(
                benchmark="protocols",
                case=f"SimPy broadcast, loss {m:g}, deadline 0.3, majority: s per 1e5 rounds",
                k=k,
                seconds=s_ * 100_000 / rounds,
                value=v,
                rounds_run=rounds,
                loss=m,
            )
        )
    report("protocols", rows, args.out)


if __name__ == "__main__":
    main()
