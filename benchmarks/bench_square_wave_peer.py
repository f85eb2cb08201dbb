"""Square Wave + EMS against the Square Wave authors' own code, in one run: the same answers,
eps and buckets, Wasserstein-1 error of each against the sample's histogram.

The errors of Li et al. (2020) are in figures whose numbers cannot be read here, so the
paper's error at a matched setting is taken from its own implementation instead:
``sw.py`` of LDP_Protocols (https://github.com/vvv214/LDP_Protocols, the authors' group's
repository; not on PyPI), whose ``sw()`` privatises with the Square Wave mechanism, builds
its transition matrix on ``randomized_bins x domain_bins`` buckets and decodes with EM; its
file also has ``EMS``, the smoothed EM of the paper, left unused by ``sw()`` (its return
line calls EM, with EMS commented out). It is run here as is, with its module's ``EM``
name bound to its own ``EMS`` for the EMS rows (its file is not changed). ldpsim's Square
Wave (:mod:`ldpsim.mechanisms`) with ``ldpsim.analyst.distribution.em_counts`` runs on the
same answers.

Setting: n answers from Beta(5, 2) on [0, 1] (the paper's synthetic one), d = 256 buckets
both for the reports and the estimate, eps in ``--eps``; ``--repetitions`` seeds.

Run from the repo root with a checkout of LDP_Protocols:
``python benchmarks/bench_square_wave_peer.py --peer-dir PATH/TO/LDP_Protocols [--n 1000000]``.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np

from _common import parser, report
from ldpsim.analyst.distribution import em_counts, square_wave_transition, wasserstein1
from ldpsim.mechanisms import catalog


def _peer(peer_dir: Path):
    spec = importlib.util.spec_from_file_location("ldp_protocols_sw", peer_dir / "sw.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--peer-dir", type=Path, required=True, help="a checkout of LDP_Protocols (with sw.py)")
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    p.add_argument("--repetitions", type=int, default=5)
    args = p.parse_args()
    n, d = args.n, args.d
    peer = _peer(args.peer_dir)
    em, ems = peer.EM, peer.EMS
    edges = np.linspace(0.0, 1.0, d + 1)
    rows = []
    for eps in args.eps:
        sw = catalog.build("square_wave", eps=eps, lo=0.0, hi=1.0)
        matrix = square_wave_transition(sw, d)
        errors: dict[str, list[float]] = {}
        seconds: dict[str, float] = {}
        for r in range(args.repetitions):
            rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(r, int(eps * 1000))))
            x = rng.beta(5.0, 2.0, size=n)
            truth = np.bincount(np.clip((x * d).astype(np.int64), 0, d - 1), minlength=d) / n
            t0 = time.perf_counter()
            y = sw.privatize(x, rng)
            cells = np.clip(np.floor((sw.raw(y) + sw.b) / (1 + 2 * sw.b) * d), 0, d - 1).astype(np.int64)
            est = em_counts(matrix, np.bincount(cells, minlength=d).astype(float), edges).probabilities
            seconds["ldpsim SW + EMS"] = seconds.get("ldpsim SW + EMS", 0.0) + time.perf_counter() - t0
            errors.setdefault("ldpsim SW + EMS", []).append(wasserstein1(est, truth, edges))
            for name, decoder in (("authors' sw.py, EMS", ems), ("authors' sw.py, EM", em)):
                np.random.seed(r)  # the peer draws from numpy's global state
                peer.EM = decoder
                t0 = time.perf_counter()
                counts = np.asarray(peer.sw(x, 0.0, 1.0, eps, randomized_bins=d, domain_bins=d), dtype=float)
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t0
                errors.setdefault(name, []).append(wasserstein1(counts / counts.sum(), truth, edges))
        peer.EM = em
        reference = float(np.mean(errors["authors' sw.py, EMS"]))
        for name, values in errors.items():
            w1 = np.array(values)
            rows.append(
                dict(
                    benchmark="square_wave_peer",
                    case=f"{name}, Beta(5,2), eps={eps:g}, d={d}",
                    n=n,
                    k=d,
                    seconds=seconds[name] / args.repetitions,
                    throughput_per_s=n * args.repetitions / seconds[name],
                    w1_mean=float(w1.mean()),
                    w1_sd=float(w1.std(ddof=1)) if w1.size > 1 else float("nan"),
                    over_authors_ems=float(w1.mean()) / reference,
                    target="within 10% of the authors' SW + EMS" if name.startswith("ldpsim") else "",
                    meets_target=float(w1.mean()) <= 1.1 * reference if name.startswith("ldpsim") else "",
                    repetitions=int(w1.size),
                )
            )
    report("square_wave_peer", rows, args.out)


if __name__ == "__main__":
    main()
