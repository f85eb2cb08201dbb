"""Hierarchical range queries against LDP_Protocols' code (Wang et al.'s ``hio``), in one run:
the same answers, d, fan-out, eps and ranges, both privatised and answered, seconds per
report side by side.

LDP_Protocols (https://github.com/vvv214/LDP_Protocols, research code, not on PyPI) keeps
its hierarchical intervals in ``hio/server/hdtree.py``: ``HDTree`` splits the users into
one group per level of a tree of fan-out B (``layer_style = "rl"``), each group reporting its
node at that level through randomized response or local hashing (``adap``: whichever has
the smaller variance), and answers a range by summing its nodes' estimates (no consistency
step). It is driven here as its own experiments drive it, through a stand-in for its
``users`` object (one ordered attribute of d values) and its ``args``. Its code loops over
the users in Python, so it runs at ``--n`` respondents (default 100,000); ldpsim's
hierarchical method (:class:`ldpsim.mechanisms.ranges.HierarchicalRanges`, with and without
consistent leaves) runs on the same answers. Two shims for numpy releases newer than that
code: ``np.int`` and ``np.asscalar`` (removed in numpy 1.24 and 1.23) are restored as the
builtins they aliased; its files are not changed.

Run from the repo root, with a checkout of LDP_Protocols (its ``hio`` folder) and
``xxhash`` (``pip install -e ".[peers]"``):
``python benchmarks/bench_ranges_peer.py --peer-dir PATH/TO/LDP_Protocols [--n 20000]``.
"""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import numpy as np
from scipy import stats

from _common import parser, report
from ldpsim.mechanisms.ranges import HierarchicalRanges, range_matrix


def _peer(peer_dir: Path):
    """LDP_Protocols' HDTree class, imported from the checkout."""
    if not hasattr(np, "int"):
        np.int = int  # type: ignore[attr-defined]  # the alias numpy 1.24 removed
    if not hasattr(np, "asscalar"):
        np.asscalar = lambda a: a.item()  # type: ignore[attr-defined]
    sys.path.insert(0, str(peer_dir / "hio"))
    from server.hdtree import HDTree  # noqa: E402  (the peer's package layout)

    return HDTree


def _users(n: int, d: int, x: np.ndarray) -> types.SimpleNamespace:
    """The part of LDP_Protocols' ``users`` object that HDTree reads: one ordered column."""
    return types.SimpleNamespace(
        n=n,
        X=x.reshape(-1, 1),
        column_to_perturb=["x"],
        col_name_index_map={"x": 0},
        colind_scolind_map={0: 0},
        ranges={"x": {"min": 0, "max": d - 1, "gran": 1}},
        kv_map={"x": {v: v for v in range(d)}},
    )


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--peer-dir", type=Path, required=True, help="a checkout of LDP_Protocols (with hio/)")
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--d", type=int, default=1024)
    p.add_argument("--fanout", type=int, default=4)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--ranges", type=int, default=10)
    args = p.parse_args()
    n, d, b, eps = args.n, args.d, args.fanout, args.eps
    HDTree = _peer(args.peer_dir)
    rng = np.random.default_rng(args.seed)
    prior = np.diff(stats.beta(5, 2).cdf(np.linspace(0, 1, d + 1)))
    prior /= prior.sum()
    x = rng.choice(d, size=n, p=prior)
    lo = rng.integers(0, d - 64, size=args.ranges)
    workload = np.stack([lo, lo + rng.integers(63, d - lo)], axis=1)  # ranges of 64 answers or more
    workload[:, 1] = np.minimum(workload[:, 1], d - 1)
    truth = range_matrix(workload, d) @ (np.bincount(x, minlength=d) / n)

    def peer() -> np.ndarray:
        np.random.seed(args.seed)  # the peer draws from numpy's global state
        ns = types.SimpleNamespace(epsilon=eps, hie_fanout=b, layer_style="rl", ce_size=1)
        tree = HDTree(_users(n, d, x), ns)
        tree.partition_users()
        order = np.random.permutation(n)  # its groups are contiguous: shuffle first, as its experiments do
        reports = tree.perturb(x[order].reshape(-1, 1))
        # its ranges are [l, r) over the tree's leaves 0..d (the root spans d + 1 values)
        tree.load_queries([[([0], [(int(a), int(c) + 1)])] for a, c in workload])
        return np.array([tree.estimate_query(reports, np.arange(n), q) / n for q in range(len(workload))])

    cases = {
        "LDP_Protocols HDTree (random level, adaptive RR/OLH), no consistency": peer,
        "ldpsim hierarchical, no consistency": lambda: HierarchicalRanges(d, eps, fanout=b, consistent=False).answer(
            HierarchicalRanges(d, eps, fanout=b, consistent=False).collect(x, rng), workload
        ),
        "ldpsim hierarchical, consistent": lambda: HierarchicalRanges(d, eps, fanout=b).answer(
            HierarchicalRanges(d, eps, fanout=b).collect(x, rng), workload
        ),
    }
    rows, seconds = [], {}
    for name, fn in cases.items():
        t0 = time.perf_counter()
        est = np.asarray(fn(), dtype=np.float64)
        seconds[name] = time.perf_counter() - t0
        rows.append(
            dict(
                benchmark="ranges_peer",
                case=f"{name}: d = {d}, B = {b}, eps = {eps:g}, {len(workload)} ranges",
                n=n,
                k=d,
                seconds=seconds[name],
                throughput_per_s=n / seconds[name],
                rmse=float(np.sqrt(np.mean((est - truth) ** 2))),
            )
        )
    peer_s = seconds[next(iter(cases))]
    for row in rows:
        row["peer_over_this"] = peer_s / row["seconds"]
    report("ranges_peer", rows, args.out)


if __name__ == "__main__":
    main()
