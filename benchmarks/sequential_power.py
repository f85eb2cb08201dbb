"""What looking at every report costs: the power of the anytime-valid tests beside the fixed-n one.

The setting of ``fig_power.py`` (k = 8, eps = 1, the reference law and its shift by
``delta``), each replication privatising 2,000 answers from the shifted law through kRR, OUE
and OLH (common random numbers: the same answers). For each: the fixed-n goodness-of-fit test
looking once, after all 2,000 reports (Monte Carlo p-value, 99 draws); the betting test of
``ldpsim.analyst.betting`` following every report (a rejection: its wealth reached 1 / alpha
at some report); for kRR also the Krichevsky-Trofimov mixture of the counts, looking after
every 200 reports. Beside the betting test's power, the median number of reports it needed
when it rejected. Every rate with its 95% Clopper-Pearson interval.

Writes ``reports/benchmarks/sequential_power.csv``. Run from the repository root:
``python benchmarks/sequential_power.py [--reps 200]`` (about a minute on 2 cores).
"""

from __future__ import annotations

import numpy as np
from fig_power import EPS, REFERENCE, K, shifted
from scipy import stats

from _common import parser, report
from ldpsim.analyst import betting
from ldpsim.analyst.hypotheses import goodness_of_fit, sequential_goodness_of_fit
from ldpsim.mechanisms import catalog

ORACLES = {"randomized_response": "kRR", "oue": "OUE", "olh": "OLH"}
N, ALPHA, LOOK = 2000, 0.05, 200
DELTAS = (0.0, 0.1, 0.2, 0.3)


def _first_crossing(mech, reports: np.ndarray) -> int | None:
    """The number of reports at which the betting test first rejects (None: never)."""
    proc = betting.BettingProcess(betting.term_ranges(mech))
    terms = betting.report_terms(mech, reports) - REFERENCE
    threshold = np.log(1.0 / ALPHA)
    for end in range(LOOK, len(reports) + 1, LOOK):  # follow it in blocks, then find the report
        before = proc.log_e_max
        proc.update(terms[end - LOOK : end])
        if proc.log_e_max >= threshold > before:
            again = betting.BettingProcess(betting.term_ranges(mech))
            for i in range(end):
                again.update(terms[i : i + 1])
                if again.log_e_max >= threshold:
                    return i + 1
    return None


def _interval(hits: int, reps: int) -> tuple[float, float]:
    lo = stats.beta.ppf(0.025, hits, reps - hits + 1) if hits > 0 else 0.0
    hi = stats.beta.ppf(0.975, hits + 1, reps - hits) if hits < reps else 1.0
    return float(lo), float(hi)


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--reps", type=int, default=200, help="replications per point")
    args = p.parse_args()
    mechs = {name: catalog.build(name, k=K, eps=EPS) for name in ORACLES}
    rows = []
    for delta in DELTAS:
        law = shifted(delta)
        hits: dict[tuple[str, str], int] = {}
        needed: dict[str, list[int]] = {name: [] for name in ORACLES}
        for r in range(args.reps):
            gen = np.random.default_rng([args.seed, int(delta * 1000), r])
            answers = gen.choice(K, size=N, p=law)
            for name, mech in mechs.items():
                # 1 + index: a trailing 0 would give the answers' own stream (SeedSequence pads with zeros)
                stream = np.random.default_rng([args.seed, int(delta * 1000), r, 1 + list(ORACLES).index(name)])
                reports = mech.privatize(answers, stream)
                stat = mech.statistic(reports)
                fixed = goodness_of_fit(mech, stat, REFERENCE, n=N, alpha=ALPHA, draws=99, rng=stream).reject
                hits[(name, "fixed-n, one look")] = hits.get((name, "fixed-n, one look"), 0) + int(fixed)
                at = _first_crossing(mech, reports)
                hits[(name, "betting, every report")] = hits.get((name, "betting, every report"), 0) + int(
                    at is not None
                )
                if at is not None:
                    needed[name].append(at)
                if mech.output_size is not None:
                    mix = any(
                        sequential_goodness_of_fit(mech, mech.statistic(reports[:t]), REFERENCE).reject
                        for t in range(LOOK, N + 1, LOOK)
                    )
                    key = (name, "mixture, every 200 reports")
                    hits[key] = hits.get(key, 0) + int(mix)
        for (name, test), h in hits.items():
            lo, hi = _interval(h, args.reps)
            median = float(np.median(needed[name])) if test.startswith("betting") and needed[name] else float("nan")
            rows.append(
                {
                    "benchmark": "sequential_power",
                    "case": f"{ORACLES[name]} {test} delta={delta:g}",
                    "oracle": ORACLES[name],
                    "test": test,
                    "delta": delta,
                    "reps": args.reps,
                    "rejection_rate": h / args.reps,
                    "low": lo,
                    "high": hi,
                    "median_reports_to_reject": median,
                }
            )
    report("sequential_power", rows, args.out)


if __name__ == "__main__":
    main()
