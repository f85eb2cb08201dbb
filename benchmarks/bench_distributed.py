"""Replications on a Dask cluster against a local process pool and a sequential run.

Measured on this machine (one run each, wall time, every run checked byte for byte
against the sequential one):

* the overhead per task: ``--tasks`` empty tasks through a local Dask cluster of 2
  workers (``--scheduler local:2``), through a process pool of 2 (``--workers 2``) and in
  process, in ms per task (the scheduler's round trip, pickling included);
* replications of the survey scenario (``scenarios/survey.toml`` at ``--size`` clients per
  replication, ``--replications`` of them): sequential, ``--workers 2`` and
  ``--scheduler local:2``, and the speed-up of each over sequential;
* the crossover: the same at smaller sizes (``--sizes``), to show below which replication
  size the process pool (or the sequential run) beats the cluster;
* one huge individual-mode population (``--big``, 10^8 clients of the survey scenario,
  one replication): sequential and unsharded, then cut into ``--shards`` shards on a
  process pool of 2 and on the local cluster (``--shards N`` of ``ldpsim run``), with the
  seconds per million clients per worker that docs/distributed.md scales to 100 nodes;
* a sweep (``--sweep-points`` grid points of the survey at 10^4 clients, 10 replications
  each): sequential and on the local cluster, with and without each point's own report,
  and the seconds each point costs the machine that runs the sweep, which bounds a wide
  sweep.

The cluster is started once and not timed (its start-up, about 2 s, is printed). Run from
the repo root: ``python benchmarks/bench_distributed.py`` (needs the ``distributed`` extra).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import REPO_ROOT, parser, report
from ldpsim import cluster
from ldpsim._pool import start_pool, stop_pool
from ldpsim.sim import load_scenario, run_scenario
from ldpsim.sim.studies import study_of

SURVEY = REPO_ROOT / "scenarios" / "survey.toml"


def _noop(x: int) -> int:
    return x


def overhead(executor, tasks: int) -> float:
    """ms per empty task submitted and waited for."""
    t0 = time.perf_counter()
    futures = [executor.submit(_noop, i) for i in range(tasks)]
    for f in futures:
        f.result()
    return (time.perf_counter() - t0) / tasks * 1e3


def timed_run(scenario, out: Path, **kw) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    run_scenario(scenario, out=out, progress=False, **kw)
    return time.perf_counter() - t0, (out / "results.csv").read_bytes()


def replications_only(study, executor, workers: int) -> float:
    """Seconds to run every replication of ``study`` through ``executor`` the way a run does
    (grouped into tasks, results back in the parent), without files or report."""
    from ldpsim.runs import SequentialExecutor, _completed

    t0 = time.perf_counter()
    for _ in _completed(executor or SequentialExecutor(), study, 1, list(range(study.replications)), workers, None):
        pass
    return time.perf_counter() - t0


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--tasks", type=int, default=2000, help="empty tasks for the overhead")
    p.add_argument("--replications", type=int, default=200, help="replications of the survey scenario")
    p.add_argument("--size", type=int, default=1_000_000, help="clients per replication (the scenario's: 10^6)")
    p.add_argument(
        "--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000], help="smaller sizes for the crossover"
    )
    p.add_argument("--big", type=int, default=100_000_000, help="clients of the one sharded run (0: leave it out)")
    p.add_argument("--shards", type=int, default=16, help="shards of the big run")
    p.add_argument("--sweep-points", type=int, default=20, help="grid points of the sweep (0: leave it out)")
    args = p.parse_args()
    rows = []
    t0 = time.perf_counter()
    with cluster.connect("local:2") as where:
        print(
            f"local cluster of {where.workers} workers started in {time.perf_counter() - t0:.2f} s; dashboard "
            f"{where.dashboard}"
        )
        pool = start_pool(2)
        try:
            pool.submit(_noop, 0).result()  # start the pool's processes outside the timing
            for name, ex in (("dask local:2", where.executor), ("process pool 2", pool)):
                ms = overhead(ex, args.tasks)
                rows.append(
                    dict(
                        benchmark="distributed",
                        case=f"overhead per task, {name}",
                        n=args.tasks,
                        seconds=ms * args.tasks / 1e3,
                        ms_per_task=ms,
                    )
                )
        finally:
            stop_pool(pool)
        base = load_scenario(SURVEY)
        with tempfile.TemporaryDirectory() as tmp:
            for size in sorted(set(args.sizes + [args.size])):
                sc = base.rebuild(
                    base.spec.model_copy(update={"population": base.spec.population.model_copy(update={"size": size})})
                )
                sc = sc.with_overrides(replications=args.replications)
                seq, ref = timed_run(sc, Path(tmp) / f"seq-{size}")
                pool_s, pool_b = timed_run(sc, Path(tmp) / f"pool-{size}", workers=2)
                dask_s, dask_b = timed_run(
                    sc, Path(tmp) / f"dask-{size}", executor=where.executor, workers=where.workers
                )
                same = pool_b == ref and dask_b == ref
                for case, s in (("sequential", seq), ("process pool 2", pool_s), ("dask local:2", dask_s)):
                    rows.append(
                        dict(
                            benchmark="distributed",
                            case=f"survey x {args.replications}: {case}",
                            n=size,
                            seconds=s,
                            speedup=seq / s,
                            per_replication_ms=s / args.replications * 1e3,
                            identical=same,
                        )
                    )
                # the same replications without the files and the report (a constant 1-3 s that
                # hides the crossover at small sizes)
                study = study_of(sc)
                pool = start_pool(2)
                try:
                    pool.submit(_noop, 0).result()
                    alone = {
                        "sequential": replications_only(study, None, 1),
                        "process pool 2": replications_only(study, pool, 2),
                        "dask local:2": replications_only(study, where.executor, where.workers),
                    }
                finally:
                    stop_pool(pool)
                for case, s in alone.items():
                    rows.append(
                        dict(
                            benchmark="distributed",
                            case=f"replications only x {args.replications}: {case}",
                            n=size,
                            seconds=s,
                            speedup=alone["sequential"] / s,
                            per_replication_ms=s / args.replications * 1e3,
                        )
                    )
            if args.big:
                sc = base.rebuild(
                    base.spec.model_copy(
                        update={"population": base.spec.population.model_copy(update={"size": args.big})}
                    )
                )
                sc = sc.with_overrides(replications=1)
                seq, ref = timed_run(sc, Path(tmp) / "big-seq")
                pool_s, pool_b = timed_run(sc, Path(tmp) / "big-pool", workers=2, shards=args.shards)
                dask_s, dask_b = timed_run(
                    sc, Path(tmp) / "big-dask", executor=where.executor, workers=where.workers, shards=args.shards
                )
                same = pool_b == ref and dask_b == ref
                for case, s, workers in (
                    ("sequential, unsharded", seq, 1),
                    (f"process pool 2, {args.shards} shards", pool_s, 2),
                    (f"dask local:2, {args.shards} shards", dask_s, 2),
                ):
                    rows.append(
                        dict(
                            benchmark="distributed",
                            case=f"one population: {case}",
                            n=args.big,
                            seconds=s,
                            speedup=seq / s,
                            s_per_million_per_worker=s * workers / (args.big / 1e6),
                            identical=same,
                        )
                    )
            if args.sweep_points:
                from ldpsim.sweep import run_sweep

                path = Path(tmp) / "sweep.toml"
                path.write_text(SURVEY.read_text().replace("size = 1_000_000", "size = 10_000"))
                eps = [round(0.5 + 0.1 * i, 2) for i in range(args.sweep_points)]
                times = {}
                dask = {"executor": where.executor, "workers": where.workers}
                for case, kw in (
                    ("sequential", {}),
                    ("dask local:2", dask),
                    ("sequential, no point reports", {"point_reports": False}),
                    ("dask local:2, no point reports", {**dask, "point_reports": False}),
                ):
                    t0 = time.perf_counter()
                    run_sweep(
                        path,
                        {"mechanism.eps": eps},
                        replications=10,
                        out=Path(tmp) / f"sweep-{len(times)}",
                        progress=False,
                        **kw,
                    )
                    times[case] = time.perf_counter() - t0
                for case, s in times.items():
                    rows.append(
                        dict(
                            benchmark="distributed",
                            case=f"sweep of {args.sweep_points} points x 10: {case}",
                            n=10_000,
                            seconds=s,
                            speedup=times["sequential"] / s,
                            per_point_s=s / args.sweep_points,
                        )
                    )
    report("distributed", rows, args.out)


if __name__ == "__main__":
    main()
