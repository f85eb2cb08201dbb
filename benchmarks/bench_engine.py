"""Speed of the scenario engine against a naive SimPy model with one process per client.

Measured (best of ``--repeats``):

* ``engine, individual``: one replication of ``scenarios/survey.toml`` (10^6 clients, every
  client drawn: value, report, arrival time, loss, latency; daily checkpoints); target
  under 10 s. Also the whole ``ldpsim run`` path (replication + files + figures).
* ``naive SimPy``: the same scenario with one SimPy process per client at n = 10^5 (the
  process sleeps until its arrival time, draws its value, privatises it with randomized
  response, is lost with probability 5% or waits its latency, and the server counts it;
  the analyst process estimates daily). Target: the engine at least 50x faster per client.
* ``engine, aggregate``: ``scenarios/survey_large.toml`` (10^10 clients, exact counts,
  daily checkpoints over 7 days); target under 5 s.

Run from the repo root: ``python benchmarks/bench_engine.py [--naive-n N]``.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from _common import REPO_ROOT, best_of, full_run, parser, report
from ldpsim.analyst import frequency_estimate
from ldpsim.sim import load_scenario, run_replication

SURVEY = REPO_ROOT / "scenarios" / "survey.toml"
SURVEY_LARGE = REPO_ROOT / "scenarios" / "survey_large.toml"


def naive_simpy(n: int, seed: int) -> int:
    """The survey with one SimPy process per client; returns the reports received."""
    sc = load_scenario(SURVEY)
    mech, prior = sc.mechanism, sc.prior
    spec = sc.spec
    duration = spec.arrivals.duration
    loss = spec.network.loss
    median, sigma = spec.network.latency.median, spec.network.latency.sigma
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    counts = np.zeros(mech.k, dtype=np.int64)
    cdf = np.cumsum(prior)

    def client(arrival: float):
        yield env.timeout(arrival)
        x = int(np.searchsorted(cdf, rng.random()))
        y = x if rng.random() < mech.keep else int(rng.integers(mech.k))
        if rng.random() < loss:
            return
        yield env.timeout(median * math.exp(sigma * rng.standard_normal()))
        counts[y] += 1

    def analyst():
        for _day in range(1, int(sc.end) + 1):
            yield env.timeout(1.0)
            if counts.sum():
                frequency_estimate(mech, counts)

    for a in rng.uniform(0, duration, n):
        env.process(client(float(a)))
    env.process(analyst())
    env.run(until=sc.end)
    return int(counts.sum())


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--naive-n", type=int, default=10**5, help="clients in the naive SimPy model")
    args = p.parse_args()
    survey = load_scenario(SURVEY)
    large = load_scenario(SURVEY_LARGE)
    n_ind = survey.spec.population.size
    n_large = large.spec.population.size

    cases = {
        "individual": lambda: run_replication(survey, 0, args.seed),
        "full": lambda: full_run(SURVEY),
        "naive": lambda: naive_simpy(args.naive_n, args.seed),
        "aggregate": lambda: run_replication(large, 0, args.seed),
    }
    best = best_of(cases, args.repeats)
    per_engine = best["individual"] / n_ind
    per_naive = best["naive"] / args.naive_n
    speedup = per_naive / per_engine
    base = dict(benchmark="engine", k=survey.mechanism.k, m=survey.mechanism.m)
    rows = [
        dict(
            base,
            case="engine, individual mode: survey.toml, one replication",
            n=n_ind,
            seconds=best["individual"],
            throughput_per_s=n_ind / best["individual"],
            target="< 10 s",
            meets_target=best["individual"] < 10,
        ),
        dict(
            base,
            case="ldpsim run scenarios/survey.toml (replication + files + figures)",
            n=n_ind,
            seconds=best["full"],
            throughput_per_s=n_ind / best["full"],
        ),
        dict(
            base,
            case="naive SimPy: one process per client",
            n=args.naive_n,
            seconds=best["naive"],
            throughput_per_s=args.naive_n / best["naive"],
        ),
        dict(
            base,
            case="engine speed-up per client over naive SimPy",
            n=n_ind,
            speedup_per_client=speedup,
            target=">= 50x",
            meets_target=speedup >= 50,
        ),
        dict(
            base,
            case="engine, aggregate mode: survey_large.toml, one replication",
            n=n_large,
            seconds=best["aggregate"],
            throughput_per_s=n_large / best["aggregate"],
            target="< 5 s",
            meets_target=best["aggregate"] < 5,
        ),
    ]
    report("engine", rows, args.out)


if __name__ == "__main__":
    main()
