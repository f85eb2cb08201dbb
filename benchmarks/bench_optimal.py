"""Time and peak memory of ``optimal_mechanism`` (the staircase LP) as the alphabet grows.

KL utility ``KL(P0, P1)`` with random Dirichlet(1) priors (fixed by ``--seed`` and k), at
eps = 1.0 and eps = 0.5 (``--eps``). For k = 4, 8, 12, 14, 16, 20, 22, 24, 26, ...
(``--ks``) it measures, per (k, eps):

* column generation (``optimal_mechanism(U, eps)``, the default method for k > 10): wall
  time, best of ``--repeats`` when one run takes under 2 s, else a single run;
* for k <= 14, the full LP over all 2^k patterns (``method="full"``) next to it, and the
  relative difference of the two optimal values;
* peak memory: the growth of the process's peak resident set size (``ru_maxrss``) over
  its value after imports and setup. Each case runs in a fresh child process, so the peak
  is that case's alone and includes the LP solver's (C++) memory, which tracemalloc would
  not see.

Targets: k = 12 under 1 s, k = 20 under 60 s (column generation). The sweep goes on while
the previous k took under 200 s (``--stop-after``) and the whole run stays within
``--max-seconds`` (default 600): each child gets the remaining budget as its timeout, and
a k whose predicted time (previous time x 2^(k - previous k), the growth of one pricing
pass) exceeds what remains is skipped. The largest k solved within the budget is printed
per eps.

Run from the repo root: ``python benchmarks/bench_optimal.py [--max-seconds S] [--seed S]``.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

import numpy as np

from _common import parser, report, timed

DEFAULT_KS = [4, 8, 12, 14, 16, 20, 22, 24, 26, 28, 30]
DEFAULT_EPS = [1.0, 0.5]
MAX_FULL_K = 14
TARGETS_S = {12: 1.0, 20: 60.0}
REPEAT_BELOW_S = 2.0


def priors(seed: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, k])
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def child(spec: dict) -> dict:
    """One case in this (fresh) process: returns its measurements as a dict."""
    from ldpsim.utility import KL, optimal_mechanism

    k, eps, method, repeats = spec["k"], spec["eps"], spec["method"], spec["repeats"]
    P0, P1 = priors(spec["seed"], k)
    utility = KL(P0, P1)
    base = _maxrss_mb()
    seconds, res = timed(lambda: optimal_mechanism(utility, eps, method=method))
    peak = _maxrss_mb() - base
    if seconds < REPEAT_BELOW_S:
        for _ in range(repeats - 1):
            s, _ = timed(lambda: optimal_mechanism(utility, eps, method=method))
            seconds = min(seconds, s)
    return dict(
        seconds=seconds,
        value=res.value,
        bound=res.bound,
        status=res.status,
        m=res.mechanism.m,
        iterations=res.iterations,
        columns=res.columns,
        peak_rss_mb=peak,
        private=bool(res.mechanism.epsilon() <= eps * (1 + 1e-9)),
    )


def run_child(spec: dict, timeout: float) -> dict | None:
    """Run one case in a child process; None if it did not finish within ``timeout``."""
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 1.0), check=True)
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as err:
        raise SystemExit(f"child {spec} failed:\n{err.stderr}") from None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--max-seconds", type=float, default=600.0, help="wall-time budget of the whole sweep")
    p.add_argument("--stop-after", type=float, default=200.0, help="stop once a k took this long (seconds)")
    p.add_argument("--eps", type=float, nargs="+", default=DEFAULT_EPS)
    p.add_argument("--ks", type=int, nargs="+", default=DEFAULT_KS)
    args = p.parse_args()

    started = time.perf_counter()
    rows: list[dict] = []
    largest: dict[float, int] = {}
    last: dict[float, tuple[int, float]] = {}  # eps -> (k, column-generation seconds)
    stop = False
    for k in args.ks:
        if stop:
            break
        for eps in args.eps:
            remaining = args.max_seconds - (time.perf_counter() - started)
            if eps in last:
                pk, ps = last[eps]
                predicted = ps * 2.0 ** (k - pk)
                if ps >= args.stop_after or predicted > remaining:
                    print(
                        f"k={k} eps={eps}: skipped (previous k={pk} took {ps:.1f} s; predicted {predicted:.0f} s, "
                        f"{remaining:.0f} s of the budget left)",
                        file=sys.stderr,
                    )
                    continue
            spec = dict(k=k, eps=eps, seed=args.seed, repeats=args.repeats, method="column_generation")
            cg = run_child(spec, remaining)
            if cg is None:
                print(f"k={k} eps={eps}: column generation did not finish within the budget", file=sys.stderr)
                rows.append(
                    dict(
                        benchmark="optimal_mechanism",
                        case=f"kl eps={eps:g}",
                        k=k,
                        eps=eps,
                        status="timeout",
                        seconds=math.nan,
                    )
                )
                stop = True
                break
            last[eps] = (k, cg["seconds"])
            if cg["status"] == "optimal":
                largest[eps] = k
            row = dict(
                benchmark="optimal_mechanism",
                case=f"kl eps={eps:g}",
                k=k,
                m=cg["m"],
                eps=eps,
                seconds=cg["seconds"],
                iterations=cg["iterations"],
                columns=cg["columns"],
                peak_rss_mb=cg["peak_rss_mb"],
                rel_gap=(cg["bound"] - cg["value"]) / cg["value"],
                status=cg["status"],
                private=cg["private"],
            )
            if k in TARGETS_S:
                row.update(target=f"< {TARGETS_S[k]:g} s", meets_target=cg["seconds"] < TARGETS_S[k])
            if k <= MAX_FULL_K:
                remaining = args.max_seconds - (time.perf_counter() - started)
                full = run_child(dict(spec, method="full"), remaining)
                if full is not None:
                    row.update(
                        full_seconds=full["seconds"],
                        full_peak_rss_mb=full["peak_rss_mb"],
                        full_rel_diff=abs(full["value"] - cg["value"]) / full["value"],
                    )
            rows.append(row)
            print(
                f"k={k} eps={eps}: {cg['seconds']:.3f} s, {cg['iterations']} iterations, "
                f"elapsed {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
        if any(last[e][0] == k and last[e][1] >= args.stop_after for e in last):
            stop = True
    report("optimal_mechanism", rows, args.out)
    total = time.perf_counter() - started
    for eps in args.eps:
        print(f"eps={eps:g}: largest k solved within the {args.max_seconds:g} s budget: {largest.get(eps, '-')}")
    print(f"total wall time {total:.0f} s")


if __name__ == "__main__":
    main()
