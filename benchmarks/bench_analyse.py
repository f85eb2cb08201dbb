"""``ldpsim analyse`` on a large file of OUE reports against the estimation step of a
simulated run (docs/analyse.md, "How fast").

Privatises ``--n`` answers (uniform over ``--k``) with OUE at eps = 1 once, writes them as a
reports file (``--file``, kept: made only when missing), then times

- in memory: ``mechanism.statistic(reports)`` and ``invert`` on the reports array, the bare
  estimation step of a simulated run, and the statistic followed by the same analysis
  ``analyse`` computes from it (estimates, intervals, the uniformity test): the like-for-like
  step (best of ``--repeat``);
- from the file: ``ldpsim analyse`` as a separate process (``/usr/bin/time -v`` for its peak
  resident memory), and :func:`ldpsim.deploy.collect` alone in this process;
- the chunked reader on the same file (``collect(fast=False)``: what ``--weights`` reads,
  and any irregular file), once;
- the first 10^6 reports with a group column: the raw-bytes reader of ``report,group``
  lines (``--groups``) and the chunked reader;
- randomized response at the same ``k`` (a file of one integer per line): the estimation
  step in memory, ``collect`` and the command.

    python benchmarks/bench_analyse.py --n 10000000 --k 64 --file /tmp/oue64.csv
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ldpsim import deploy
from ldpsim.report import analysis

ROOT = Path(__file__).resolve().parents[1]


def make_file(path: Path, n: int, k: int, spec: str) -> None:
    mech = deploy.build(spec).mechanism
    gen = np.random.default_rng(1)
    with open(path, "wb") as f:
        f.write(b"report\n")
        for start in range(0, n, 1 << 20):
            m = min(1 << 20, n - start)
            bits = mech.privatize(gen.integers(0, k, m), gen)
            rows = np.empty((m, k + 1), dtype=np.uint8)
            rows[:, :k] = bits + 48
            rows[:, k] = 10
            f.write(rows.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--file", default="/tmp/ldpsim-oue-reports.csv")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spec = f"oue:k={args.k},eps=1"
    path = Path(args.file)
    if not path.exists():
        t0 = time.perf_counter()
        make_file(path, args.n, args.k, spec)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    built = deploy.build(spec)
    mech = built.mechanism

    # from the file, in this process: the reader alone (the file is in the page cache after the first)
    best_collect = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        got = deploy.collect(path, built, column=None, show_progress=False)
        best_collect = min(best_collect, time.perf_counter() - t0)
    assert got.all.n == args.n and got.fast
    best_work = float("inf")
    for _ in range(args.repeat):  # everything ldpsim analyse computes, in this process: read, estimate, test, render
        t0 = time.perf_counter()
        got = deploy.collect(path, built, column=None, show_progress=False)
        result = deploy.analyse(got, None, 0.05, 1)
        meta = {"reports": path.name, "mechanism": built.spec, "n": got.all.n, "alpha": 0.05, "seed": 1}
        analysis.files({**meta, "groups": None, "weights": None}, result.estimates, result.tests, result.notes)
        best_work = min(best_work, time.perf_counter() - t0)

    # the whole command, as a separate process, with its peak memory
    best_command, peak = float("inf"), 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LDPSIM_NO_PROGRESS": "1"}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "ldpsim", "analyse", str(path), "--mechanism", spec]
            cmd += ["--seed", "1", "--out", str(Path(tmp) / "a")]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
            best_command = min(best_command, time.perf_counter() - t0)
            found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
            peak = max(peak, int(found.group(1)) if found else 0)

    # in memory: the reports array (n x k bytes) and the estimation step of a simulated run
    bits = np.fromfile(path, dtype=np.uint8, offset=len("report\n")).reshape(args.n, args.k + 1)[:, : args.k] - 48
    best_memory = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        stat = mech.statistic(bits)
        mech.invert(stat / args.n)
        best_memory = min(best_memory, time.perf_counter() - t0)
    np.testing.assert_array_equal(stat, got.all.statistic)
    # in memory, like for like: the statistic, then the analysis analyse computes from it
    # (estimates, standard errors, intervals, the projection, the uniformity test)
    best_same = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sums = deploy.Sums(n=args.n, statistic=mech.statistic(bits))
        deploy.analyse(deploy.Collected(built, deploy.report_format(built), sums), None, 0.05, 1)
        best_same = min(best_same, time.perf_counter() - t0)
    mine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # the chunked reader on the same file (what --groups or --weights read), once
    t0 = time.perf_counter()
    slow = deploy.collect(path, built, column=None, show_progress=False, fast=False)
    chunked = time.perf_counter() - t0
    np.testing.assert_array_equal(slow.all.statistic, stat)

    # with a group column (report,group: the raw-bytes reader with groups, and the chunked reader), on 10^6 reports
    m = min(args.n, 1_000_000)
    rows = np.empty((m, args.k + 3), dtype=np.uint8)
    rows[:, : args.k] = bits[:m] + 48
    rows[:, args.k] = ord(",")
    rows[:, args.k + 1] = np.random.default_rng(4).integers(ord("A"), ord("F"), m)
    rows[:, args.k + 2] = 10
    g_path = Path(str(path) + ".groups.csv")
    g_path.write_bytes(b"report,group\n" + rows.tobytes())
    timed = {}
    for fast in (True, False):
        t0 = time.perf_counter()
        g_got = deploy.collect(g_path, built, column=None, groups="group", show_progress=False, fast=fast)
        timed[fast] = time.perf_counter() - t0
        assert g_got.fast == fast and len(g_got.groups) == 5
    g_path.unlink()

    # randomized response at the same k: one integer per line, read by the raw-bytes reader of symbols
    rr_spec = f"randomized_response:k={args.k},eps=1"
    rr = deploy.build(rr_spec).mechanism
    symbols = rr.privatize(np.random.default_rng(2).integers(0, args.k, args.n), np.random.default_rng(3))
    rr_path = Path(str(path) + ".rr.csv")
    rr_path.write_bytes(b"report\n" + "\n".join(symbols.astype(str).tolist()).encode() + b"\n")
    rr_memory = rr_collect = rr_command = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        rr_stat = rr.statistic(symbols)
        rr.invert(rr_stat / args.n)
        rr_memory = min(rr_memory, time.perf_counter() - t0)
        t0 = time.perf_counter()
        rr_got = deploy.collect(rr_path, deploy.build(rr_spec), column=None, show_progress=False)
        rr_collect = min(rr_collect, time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "ldpsim", "analyse", str(rr_path), "--mechanism", rr_spec, "--seed", "1"]
            t0 = time.perf_counter()
            subprocess.run([*cmd, "--out", str(Path(tmp) / "a")], capture_output=True, env=env, check=True)
            rr_command = min(rr_command, time.perf_counter() - t0)
    assert rr_got.fast
    np.testing.assert_array_equal(rr_got.all.statistic, rr_stat)
    rr_size = rr_path.stat().st_size
    rr_path.unlink()
    print(f"n = {args.n:,} OUE reports, k = {args.k} ({path.stat().st_size / 1e6:.0f} MB file); ratios against")
    print("(a) the bare step, statistic + invert, and (b) the statistic + analyse's estimates, intervals and test")
    print(f"in memory: (a) statistic + invert           {best_memory:5.2f} s  (best of {args.repeat})")
    print(f"in memory: (b) statistic + the same analysis {best_same:4.2f} s")
    for name, took in (
        ("from the file: deploy.collect            ", best_collect),
        ("from the file: read, estimate, test, render", best_work),
        ("from the file: ldpsim analyse (process)  ", best_command),
        ("from the file: the chunked reader        ", chunked),
    ):
        print(f"{name} {took:5.2f} s  (a) {took / best_memory:.1f}x  (b) {took / best_same:.1f}x")
    print(f"with a group column, {m:,} reports: raw bytes {timed[True]:.2f} s, chunked reader {timed[False]:.2f} s")
    print(f"randomized response, k = {args.k} ({rr_size / 1e6:.0f} MB file):")
    print(f"in memory: statistic + invert            {rr_memory:7.2f} s")
    print(f"from the file: deploy.collect            {rr_collect:7.2f} s  ({rr_collect / rr_memory:.1f}x)")
    print(f"from the file: ldpsim analyse (process)  {rr_command:7.2f} s  ({rr_command / rr_memory:.1f}x)")
    print(
        f"peak memory of ldpsim analyse: {peak / 1024:.0f} MB; "
        f"of this process (reports in memory): {mine / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
