"""Speed of repeated collection: the 30-day telemetry scenario, and the guide's figures.

Measured (best of ``--repeats``):

* ``telemetry_daily.toml``, one replication: 100,000 devices x 30 days = 3 x 10^6 reports
  per arm, six arms (three policies, each with and without the shuffler: 1.8 x 10^7
  reports in all), with each device's privacy accounted after every day (per privacy
  class), every day's estimates and changes with intervals, latencies and the shuffler's
  central guarantee. Target: under 30 s on this 2-core machine.
* the whole ``ldpsim run`` path of the same file (the replication, the privacy tables
  computed once per run, results.csv, the three figures and summary.md).
* the privacy tables alone (the exact composition of the mechanism for 1..30 reports at
  delta, the memoised eps of 1..30 reports of one value): what accounting costs per run.

With ``--figures`` it also writes the guide's figures from one run
(``docs/img/collection-privacy.png``, ``collection-accuracy.png``, ``collection-central.png``).

Run from the repo root: ``python benchmarks/bench_collection.py [--repeats 3] [--figures]``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from _common import REPO_ROOT, best_of, full_run, parser, report
from ldpsim.privacy import shuffle
from ldpsim.sim import load_scenario, run_scenario
from ldpsim.sim.collection import privacy_tables, run_replication

TELEMETRY = REPO_ROOT / "scenarios" / "telemetry_daily.toml"
FIGURES = {
    "privacy.png": "collection-privacy.png",
    "accuracy.png": "collection-accuracy.png",
    "central.png": "collection-central.png",
}


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--figures", action="store_true", help="write the guide's figures to docs/img/")
    args = p.parse_args()
    sc = load_scenario(TELEMETRY)
    shared = privacy_tables(sc)
    reports = sc.size * sc.periods
    cases = {
        "replication": lambda: run_replication(sc, 0, args.seed, shared),
        "full": lambda: (shuffle._shuffle_epsilon.cache_clear(), full_run(TELEMETRY)),  # nothing cached
        "tables": lambda: privacy_tables(sc),
    }
    best = best_of(cases, args.repeats)
    arms = len(sc.arms)
    rows = [
        dict(
            benchmark="collection",
            case=f"telemetry_daily.toml: one replication, {arms} arms",
            n=reports * arms,
            k=len(sc.labels),
            seconds=best["replication"],
            throughput_per_s=reports * arms / best["replication"],
            target="< 30 s",
            meets_target=best["replication"] < 30,
        ),
        dict(
            benchmark="collection",
            case="ldpsim run scenarios/telemetry_daily.toml (replication + files + figures)",
            n=reports * arms,
            k=len(sc.labels),
            seconds=best["full"],
            throughput_per_s=reports * arms / best["full"],
            target="< 30 s",
            meets_target=best["full"] < 30,
        ),
        dict(
            benchmark="collection",
            case="privacy tables (per class, once per run)",
            n=sc.periods,
            k=len(sc.policies),
            seconds=best["tables"],
        ),
    ]
    report("collection", rows, args.out)
    if args.figures:
        with tempfile.TemporaryDirectory() as tmp:
            run = run_scenario(TELEMETRY, out=Path(tmp) / "run", progress=False)
            for name, target in FIGURES.items():
                shutil.copyfile(run.run_dir / name, REPO_ROOT / "docs" / "img" / target)
                print(f"wrote docs/img/{target}")


if __name__ == "__main__":
    main()
