"""Shared helpers for the benchmark scripts: command line, best-of-N timing, CSV + table.

Results go to ``reports/benchmarks/<name>.csv`` under the repo root (the parent of
``benchmarks/``) unless ``--out DIR`` is given. Every row carries the columns in
:data:`COLUMNS` (plus any extra ones a script adds) and the Python / numpy versions.
"""

from __future__ import annotations

import argparse
import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "reports" / "benchmarks"

COLUMNS = [
    "benchmark",
    "case",
    "n",
    "k",
    "m",
    "seconds",
    "throughput_per_s",
    "floor_seconds",
    "ratio_to_floor",
    "target",
    "meets_target",
]


def parser(description: str, *, repeats: int = 5) -> argparse.ArgumentParser:
    """An argument parser with the common ``--seed``, ``--repeats`` and ``--out`` options."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--seed", type=int, default=20240601, help="seed of numpy.random.default_rng")
    p.add_argument("--repeats", type=int, default=repeats, help="timed runs per case (best is kept)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the CSV")
    return p


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Wall time of one call of ``fn`` (perf_counter) and its result."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def best_of(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best (smallest) time of each case over ``repeats`` rounds.

    The cases run interleaved (a, b, c, a, b, c, ...) so machine noise hits all alike.
    """
    best = {name: float("inf") for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            seconds, result = timed(fn)
            del result  # free the output before the next case runs
            best[name] = min(best[name], seconds)
    return best


def batched(
    mech, n: int, batch: int, inputs: np.random.Generator, noise: np.random.Generator
) -> tuple[float, float, np.ndarray]:
    """Privatise n clients of a frequency oracle the way the engine does, in batches of
    ``batch`` (inputs uniform over ``mech.k``, drawn from ``inputs`` and not timed), adding
    each batch's statistic: (seconds in privatize, seconds in statistic, the statistic).
    ``inputs`` and ``noise`` may be the same generator."""
    t_priv = t_stat = 0.0
    total = np.zeros(mech.statistic_size, dtype=np.int64)
    for start in range(0, n, batch):
        x = inputs.integers(0, mech.k, size=min(batch, n - start))
        t0 = time.perf_counter()
        y = mech.privatize(x, noise)
        t1 = time.perf_counter()
        total += mech.statistic(y)
        t2 = time.perf_counter()
        t_priv += t1 - t0
        t_stat += t2 - t1
        del y
    return t_priv, t_stat, total


def report(name: str, rows: list[dict], out: Path) -> Path:
    """Print ``rows`` as an aligned table and write them to ``out/<name>.csv``."""
    df = pd.DataFrame(rows)
    df = df.reindex(columns=COLUMNS + [c for c in df.columns if c not in COLUMNS])  # absent: empty
    df["python"] = platform.python_version()
    df["numpy"] = np.__version__
    df["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    shown = df.drop(columns=["benchmark", "python", "numpy", "timestamp"]).dropna(axis=1, how="all")
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 200):
        print(shown.to_string(index=False, na_rep="-"))
    print(f"python {platform.python_version()}, numpy {np.__version__}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.csv"
    df.to_csv(path, index=False)
    print(f"wrote {path}")
    return path


def full_run(path: Path) -> None:
    """The whole ``ldpsim run`` path of a scenario file in process (replications, files,
    figures), into a temporary folder."""
    import tempfile

    from ldpsim.sim import run_scenario

    with tempfile.TemporaryDirectory() as tmp:
        run_scenario(path, out=Path(tmp) / "run", progress=False)
