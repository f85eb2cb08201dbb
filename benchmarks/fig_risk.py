"""The figures of the risk guide (docs/risk.md): what one report gives away, and what fake
respondents can do.

- ``docs/img/risk-accuracy.png``: the Bayes-optimal accuracy of guessing a respondent's
  answer from one report against eps, per oracle, exact (``ldpsim.risk``), beside the
  baseline (no report) and the cap ``min(1, e^eps baseline)``; 32 answers, Zipf-like prior.
- ``docs/img/poisoning-share.png``: against the fake share, the exact gain of the maximal
  gain attack on kRR, OUE and OLH (three rarest of 64 answers, eps = 1), and the day the
  server detects it in a 10-day collection of 20,000 honest reports a day: the excess
  monitor for kRR, frequent-itemset detection on the stored reports (daily, at level
  alpha / 10 per look) for OUE and OLH; and the support-size monitor against random
  perturbed values on OUE. The median day over ``--repeats`` collections (11 when never).

Run from the repo root: ``python benchmarks/fig_risk.py [--repeats 3]``.
"""

from __future__ import annotations

import numpy as np

from _common import REPO_ROOT, parser, report
from ldpsim.attacks import ExcessMonitor, SizeMonitor, expected_gain, frequent_itemset, strategy
from ldpsim.mechanisms import catalog
from ldpsim.report.figures import plt, png_bytes, quiet_figures
from ldpsim.risk import inference_risk

ORACLES = {
    "randomized_response": "kRR",
    "oue": "OUE",
    "olh": "OLH",
    "hadamard_response": "Hadamard",
    "subset_selection": "subset selection",
}
SHARES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
DAYS, PER_DAY, K, ALPHA = 10, 20_000, 64, 1e-3


def accuracy_figure(rows: list[dict]) -> bytes:
    k = 32
    prior = 1.0 / np.arange(1, k + 1)
    prior /= prior.sum()
    eps = np.array([0.25, 0.5, 1, 2, 3, 4, 6, 8])
    fig, ax = plt.subplots(figsize=(7, 4.3))
    for name, label in ORACLES.items():
        acc = []
        for e in eps:
            risk = inference_risk(catalog.build(name, k=k, eps=float(e)), prior, rng=1)
            acc.append(risk.accuracy)
            rows.append(
                dict(
                    benchmark="fig_risk",
                    case=f"accuracy {label} eps={e:g}",
                    k=k,
                    value=risk.accuracy,
                    method=risk.method,
                )
            )
        ax.plot(eps, acc, "o-", ms=4, label=label)
    ax.plot(eps, np.full(eps.size, prior.max()), "k:", label="baseline (no report)")
    ax.plot(eps, np.minimum(1, np.exp(eps) * prior.max()), "k--", lw=0.8, label="cap min(1, e^eps baseline)")
    ax.set_xlabel("eps")
    ax.set_ylabel("accuracy of the best guess from one report")
    ax.set_title(f"{k} answers, Zipf-like prior (exact; OLH by Monte Carlo)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png_bytes(fig)


def detection_day(mech, attack: str, share: float, detector: str, rng: np.random.Generator) -> float:
    prior = 1.0 / np.arange(1, K + 1) ** 1.1
    prior /= prior.sum()
    targets = np.argsort(prior)[:3]
    m = int(round(share * PER_DAY / (1 - share)))
    strat = strategy(attack)
    monitor = (
        ExcessMonitor(mech, ALPHA) if detector == "excess" else SizeMonitor(mech, ALPHA) if detector == "size" else None
    )
    stored = []
    for day in range(1, DAYS + 1):
        honest = mech.privatize(rng.choice(K, size=PER_DAY, p=prior), rng)
        fake = strat.reports(mech, targets, m, rng, prior=prior, share=share)
        if monitor is not None:
            monitor.update(mech.statistic(honest) + mech.statistic(fake), PER_DAY + m, float(day))
            if monitor.detected_at is not None:
                return float(day)
        else:
            stored += [honest, fake]
            if frequent_itemset(mech, np.concatenate(stored), ALPHA / DAYS).items.size:
                return float(day)
    return float(DAYS + 1)


def poisoning_figure(rows: list[dict], repeats: int, seed: int) -> bytes:
    prior = 1.0 / np.arange(1, K + 1) ** 1.1
    prior /= prior.sum()
    targets = np.argsort(prior)[:3]
    cases = [
        ("randomized_response", "maximal_gain", "excess", "kRR, MGA: excess monitor"),
        ("oue", "maximal_gain", "itemset", "OUE, MGA: frequent itemsets"),
        ("olh", "maximal_gain", "itemset", "OLH, MGA: frequent itemsets"),
        ("oue", "random_perturbed", "size", "OUE, random values: support size"),
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (name, attack, detector, label) in enumerate(cases):
        mech = catalog.build(name, k=K, eps=1.0)
        gains, days = [], []
        for share in SHARES:
            gains.append(expected_gain(mech, attack, targets, share, prior, rng=seed))
            runs = [
                detection_day(mech, attack, share, detector, np.random.default_rng([seed, i, r, int(share * 1e6)]))
                for r in range(repeats)
            ]
            days.append(float(np.median(runs)))
            rows.append(
                dict(benchmark="fig_risk", case=f"{label}, share {share}", k=K, value=gains[-1], detected_day=days[-1])
            )
        left.plot(SHARES, np.abs(gains), "o-", color=f"C{i}", label=label)
        right.plot(SHARES, days, "o-", color=f"C{i}", label=label)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("fake share of the reports")
    left.set_ylabel("|exact gain| of the targets' share")
    left.legend(fontsize=8)
    right.set_xscale("log")
    right.axhline(DAYS + 0.5, color="0.6", lw=0.8)
    right.text(SHARES[0], DAYS + 0.6, "never (within 10 days)", fontsize=8)
    right.set_xlabel("fake share of the reports")
    right.set_ylabel("day of detection (median)")
    right.set_ylim(0, DAYS + 1.5)
    fig.suptitle(
        f"64 answers, eps = 1, 3 rarest answers promoted, {PER_DAY:,} honest reports a day, alpha = {ALPHA:g}",
        fontsize=10,
    )
    fig.tight_layout()
    return png_bytes(fig)


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    args = p.parse_args()
    rows: list[dict] = []
    with quiet_figures():
        images = {
            "risk-accuracy.png": accuracy_figure(rows),
            "poisoning-share.png": poisoning_figure(rows, args.repeats, args.seed),
        }
    for name, data in images.items():
        (REPO_ROOT / "docs" / "img" / name).write_bytes(data)
        print(f"wrote docs/img/{name}")
    report("fig_risk", rows, args.out)


if __name__ == "__main__":
    main()
