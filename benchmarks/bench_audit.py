"""Calibration of the empirical privacy audit (``ldpsim.analyst.audit``): validity on
correct mechanisms, power on the broken zoo, tightness on randomized response.

* correct mechanisms (randomized response and Laplace at several eps): ``--runs`` seeded
  audits at alpha = 0.05 each; the measured false-alarm rate (eps_LB above the true eps)
  must stay at or below alpha;
* the broken zoo (``ldpsim.mechanisms.broken.ZOO``): eps_LB at each budget of ``--budgets``
  samples per input, and the smallest budget (doubling from 10^3) at which the claimed eps
  is refuted (eps_LB > claimed) at alpha = 0.05;
* tightness: eps_LB / eps for binary randomized response at eps in {0.5, 1, 2, 4, 8} with
  ``--tight-n`` samples per input.

Run from the repo root: ``python benchmarks/bench_audit.py``. Writes
``reports/benchmarks/audit.csv``.
"""

from __future__ import annotations

import numpy as np
from _common import parser, report, timed

from ldpsim.analyst.audit import audit
from ldpsim.mechanisms import Laplace, randomized_response
from ldpsim.mechanisms.broken import ZOO

ALPHA = 0.05


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--n", type=int, default=100_000, help="samples per input for the false-alarm runs")
    p.add_argument("--budgets", type=int, nargs="+", default=[10**6])
    p.add_argument("--tight-n", type=int, default=10**6)
    args = p.parse_args()
    ss = np.random.SeedSequence(args.seed)
    rows = []

    correct = {f"rr(4, {e:g})": (randomized_response(4, e), e, [(0, 1)]) for e in (0.5, 1.0, 4.0)}
    correct.update({f"laplace({e:g})": (Laplace(1.0 / e), e, [(0.0, 1.0)]) for e in (0.5, 2.0)})
    for name, (mech, eps, pairs) in correct.items():
        seeds = ss.spawn(args.runs)
        lbs = [audit(mech, pairs, args.n, ALPHA, rng=np.random.default_rng(s)).eps_lb for s in seeds]
        rows.append(dict(benchmark="audit", case=f"false alarms {name}", n=args.n, true_eps=eps, runs=args.runs,
                         false_alarms=int(np.sum(np.array(lbs) > eps)), max_eps_lb=float(np.max(lbs))))  # fmt: skip

    for name, make in ZOO.items():
        mech = make()
        for budget in args.budgets:
            s, res = timed(lambda: audit(mech.sample, mech.inputs, budget, ALPHA, rng=np.random.default_rng(ss.spawn(1)[0])))
            rows.append(dict(benchmark="audit", case=f"broken {name}", n=budget, claimed_eps=mech.claimed_eps,
                             true_eps=mech.true_eps, eps_lb=res.eps_lb, seconds=s))  # fmt: skip
        n, refuted_at = 1000, None
        while n <= max(args.budgets):
            res = audit(mech.sample, mech.inputs, n, ALPHA, rng=np.random.default_rng(ss.spawn(1)[0]))
            if res.eps_lb > mech.claimed_eps:
                refuted_at = n
                break
            n *= 2
        rows.append(dict(benchmark="audit", case=f"samples to refute {name}", n=refuted_at, claimed_eps=mech.claimed_eps,
                         true_eps=mech.true_eps))  # fmt: skip

    for eps in (0.5, 1.0, 2.0, 4.0, 8.0):
        s, res = timed(lambda: audit(randomized_response(2, eps), [(0, 1)], args.tight_n, ALPHA, rng=np.random.default_rng(ss.spawn(1)[0])))
        rows.append(dict(benchmark="audit", case="tightness rr(2)", n=args.tight_n, true_eps=eps, eps_lb=res.eps_lb,
                         ratio=res.eps_lb / eps, seconds=s))  # fmt: skip
    report("audit", rows, args.out)


if __name__ == "__main__":
    main()
