"""What ``ldpsim demo`` computes: n answers drawn from a Zipf-like law over k categories,
each privatised with k-ary randomized response, and their frequencies estimated from the
reports, next to the true ones. The command line parses the options and prints the result
(``ldpsim.cli``); nothing here prints or writes a file.

The clients are numpy arrays, drawn in chunks of :data:`CHUNK` so that memory stays bounded
at any n, with a progress bar (:mod:`ldpsim._progress`) when there are many chunks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from ldpsim import _progress
from ldpsim import _validate as v
from ldpsim.analyst import frequency_estimate
from ldpsim.mechanisms import randomized_response

#: Clients the demo simulates at most (about a minute), in chunks of CHUNK (bounded memory).
MAX_N = 10**9
CHUNK = 1 << 20
#: Categories the demo prints at most (one table row each).
MAX_K = 10_000


@dataclass(frozen=True)
class Demo:
    """One demo: ``n`` clients, the mechanism, the root seed's entropy (to rerun it), the
    time the simulation took and the table (a data frame: ``category``, ``true``,
    ``estimated``, ``std_error`` and ``z = (estimated - true) / std_error``)."""

    n: int
    mechanism: Any  # the k-ary randomized response
    seed: int
    seconds: float
    table: Any


def run_demo(n: int, k: int, eps: float, seed: int | None = None) -> Demo:
    """The demo of ``ldpsim demo --n N --k K --eps EPS [--seed SEED]`` (``seed`` None: fresh
    entropy). A bad value is one line naming the option (``--n``, ``--k``, ``eps``, ``--seed``)."""

    n = v.integer(n, "--n", minimum=1, maximum=MAX_N)
    k = v.integer(k, "--k", minimum=2, maximum=MAX_K)
    mech = randomized_response(k, eps)
    root = np.random.SeedSequence(None if seed is None else v.seed(seed, "--seed"))
    data_rng, mech_rng = (np.random.default_rng(s) for s in root.spawn(2))
    prior = 1.0 / np.arange(1, mech.k + 1)
    prior /= prior.sum()

    start = time.perf_counter()
    true_counts = np.zeros(mech.k, dtype=np.int64)
    report_counts = np.zeros(mech.k, dtype=np.int64)
    chunks = range(0, n, CHUNK)
    with _progress.bar(len(chunks), "demo", "chunk", show=len(chunks) > 64):  # about a second per 64 chunks
        for first in chunks:
            size = min(CHUNK, n - first)  # clients are arrays: one chunk at a time keeps memory bounded
            truth = data_rng.choice(mech.k, size=size, p=prior)
            true_counts += np.bincount(truth, minlength=mech.k)
            report_counts += np.bincount(mech.privatize(truth, mech_rng), minlength=mech.k)
            _progress.advance()
    elapsed = time.perf_counter() - start

    true_freq = true_counts / n
    est = frequency_estimate(mech, report_counts)
    frame = pd.DataFrame(
        {
            "category": list(mech.input_labels),
            "true": true_freq,
            "estimated": est.estimate,
            "std_error": est.std_error,
            "z": np.divide(
                est.estimate - true_freq, est.std_error, out=np.full(mech.k, np.nan), where=est.std_error > 0
            ),
        }
    )
    return Demo(n, mech, cast(int, root.entropy), elapsed, frame)  # an int: the seed given, or one drawn
