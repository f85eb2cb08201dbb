"""Figure for the README: the audit's eps_LB against the number of samples per input.

Left: tightness -- eps_LB / eps for binary randomized response at eps in {0.5, 1, 2, 4, 8}
(exact density used). Right: the broken zoo (black box, samples only) -- eps_LB / claimed
eps, with each mechanism's true eps / claimed eps dotted; above 1 = the claim is refuted.
alpha = 0.05; one seeded audit per point (a fresh seed per point, spawned from --seed).

Run from the repo root: ``python benchmarks/fig_audit.py``. Writes
``docs/img/audit-power.png`` and ``reports/benchmarks/audit_power.csv``.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from _common import REPO_ROOT, parser, report  # noqa: E402
from ldpsim.audit import audit, target  # noqa: E402

ALPHA = 0.05
BROKEN = ["doubled_rr", "laplace_wrong_scale", "noisy_max_value", "svt_no_cutoff", "svt_returns_value"]


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--max-n", type=float, default=1e7, help="largest number of samples per input")
    p.add_argument("--replot", action="store_true", help="redraw the figure from the CSV of the last run")
    args = p.parse_args()
    if args.replot:
        import pandas as pd

        rows = pd.read_csv(args.out / "audit_power.csv").to_dict("records")
        plot(rows, sorted({int(r["n"]) for r in rows}))
        return
    ns = [int(n) for n in np.logspace(3, math.log10(args.max_n), int(round(2 * math.log10(args.max_n / 1e3))) + 1)]
    ss = np.random.SeedSequence(args.seed)
    rows = []
    for eps in (0.5, 1.0, 2.0, 4.0, 8.0):
        t = target("randomized_response", k=2, eps=eps)
        for n, s in zip(ns, ss.spawn(len(ns))):
            r = audit(t.mechanism, t.pairs, n, ALPHA, rng=np.random.default_rng(s))
            rows.append(
                dict(benchmark="audit_power", case=f"rr(2, {eps:g})", n=n, eps_lb=r.eps_lb, ratio=r.eps_lb / eps)
            )
    for key in BROKEN:
        t = target("broken." + key)
        for n, s in zip(ns, ss.spawn(len(ns))):
            r = audit(t.sampler, t.pairs, n, ALPHA, rng=np.random.default_rng(s))
            rows.append(
                dict(
                    benchmark="audit_power",
                    case=key,
                    n=n,
                    eps_lb=r.eps_lb,
                    ratio=r.eps_lb / t.claimed_eps,
                    true_ratio=t.true_eps / t.claimed_eps,
                )
            )
    report("audit_power", rows, args.out)
    plot(rows, ns)


def plot(rows: list[dict], ns: list[int]) -> None:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for eps in (0.5, 1.0, 2.0, 4.0, 8.0):
        sel = [r for r in rows if r["case"] == f"rr(2, {eps:g})"]
        ax1.plot([r["n"] for r in sel], [r["ratio"] for r in sel], marker="o", ms=3, label=f"eps = {eps:g}")
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set(
        xscale="log",
        ylim=(0, 1.05),
        xlabel="samples per input",
        ylabel="eps_LB / eps",
        title="Tightness: binary randomized response",
    )
    ax1.legend(fontsize=8)
    for i, key in enumerate(BROKEN):
        sel = [r for r in rows if r["case"] == key]
        (line,) = ax2.plot([r["n"] for r in sel], [r["ratio"] for r in sel], marker="o", ms=3, label=key)
        ax2.axhline(sel[0]["true_ratio"], color=line.get_color(), ls=":", lw=1)
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.text(ns[-1], 0.95, "claim refuted above this line", fontsize=8, va="top", ha="right")
    ax2.set(
        xscale="log",
        ylim=(0, 4.3),
        xlabel="samples per input",
        ylabel="eps_LB / claimed eps",
        title="Broken zoo, black box (dotted: true eps / claimed)",
    )
    ax2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.85))
    fig.suptitle(
        f"Empirical privacy audit at alpha = {ALPHA}: lower bounds valid with probability >= 0.95", fontsize=10
    )
    fig.tight_layout()
    path = REPO_ROOT / "docs" / "img" / "audit-power.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
