"""Time of the exact k-fold composition (``optimal_delta`` / ``optimal_epsilon``) for k up to 10^7.

Mechanism: (eps, delta) = (0.01, 1e-12) by default (``--eps``, ``--delta``); for each k in
``--ks`` (10^3 .. 10^7) the target eps_t is the centre of the privacy loss plus 3.7 standard
deviations, ``k eps tanh(eps/2) + 3.7 sqrt(k) eps``, where the exact delta is ~1e-4 (plus
the lost mass ``1 - (1-delta)^k``). Measured, best of ``--repeats`` (time.perf_counter):

* ``optimal_delta(eps, delta, k, eps_t)`` -- target < 10 ms at k = 10^6;
* ``optimal_epsilon(eps, delta, k, d)`` at the d just found -- target < 100 ms at k = 10^6
  (the row also gives the round-trip error |eps back - eps_t| / eps_t).

If ``dp_accounting`` imports, the same composition by its privacy loss distribution
(``from_privacy_parameters`` -- the pessimistic PLD of an (eps, delta) mechanism -- with
``--pld-interval`` as discretisation, then ``self_compose(k)``): the time of building and
composing, then ``get_delta_for_epsilon(eps_t)`` and ``get_epsilon_for_delta(d)``, next to
ours (a pessimistic discretisation: expect values >= ours; column ``rel_excess`` = theirs /
ours - 1). Run for k <= ``--pld-max-k``
and stopped once one k took more than ``--pld-max-seconds``/10 (the next is predicted > 10x).

Run from the repo root: ``python benchmarks/bench_composition.py [--ks ...] [--repeats N]``.
Writes ``reports/benchmarks/composition.csv``.
"""

from __future__ import annotations

import math
import sys
import time

from _common import best_of, parser, report, timed
from ldpsim.privacy.composition import optimal_delta, optimal_epsilon

DEFAULT_KS = [10**3, 10**4, 10**5, 10**6, 10**7]
TARGETS_S = {"optimal_delta": {10**6: 0.010}, "optimal_epsilon": {10**6: 0.100}}


def target_eps_t(eps: float, k: int, z: float = 3.7) -> float:
    return k * eps * math.tanh(eps / 2) + z * math.sqrt(k) * eps


def pld_rows(eps: float, delta: float, k: int, eps_t: float, d: float, ours_eps: float, interval: float) -> list[dict]:
    from dp_accounting.pld import common, privacy_loss_distribution

    def build():
        base = privacy_loss_distribution.from_privacy_parameters(
            common.DifferentialPrivacyParameters(eps, delta), value_discretization_interval=interval
        )
        return base.self_compose(k)

    build_s, pld = timed(build)
    q_delta_s, pld_delta = timed(lambda: float(pld.get_delta_for_epsilon(eps_t)))
    q_eps_s, pld_eps = timed(lambda: float(pld.get_epsilon_for_delta(d)))
    common_cols = dict(benchmark="composition", k=k, eps=eps, delta=delta, eps_t=eps_t, pld_interval=interval)
    return [
        dict(common_cols, case="dp_accounting pld compose", seconds=build_s),
        dict(
            common_cols,
            case="dp_accounting pld delta",
            seconds=q_delta_s,
            value=pld_delta,
            ours=d,
            rel_excess=pld_delta / d - 1.0,
        ),
        dict(
            common_cols,
            case="dp_accounting pld epsilon",
            seconds=q_eps_s,
            delta_total=d,
            value=pld_eps,
            ours=ours_eps,
            rel_excess=pld_eps / ours_eps - 1.0,
        ),
    ]


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=7)
    p.add_argument("--eps", type=float, default=0.01)
    p.add_argument("--delta", type=float, default=1e-12)
    p.add_argument("--ks", type=int, nargs="+", default=DEFAULT_KS)
    p.add_argument("--pld-interval", type=float, default=1e-4, help="dp_accounting value_discretization_interval")
    p.add_argument("--pld-max-k", type=int, default=10**6)
    p.add_argument("--pld-max-seconds", type=float, default=60.0)
    p.add_argument("--no-pld", action="store_true", help="skip the dp_accounting comparison")
    args = p.parse_args()
    eps, delta = args.eps, args.delta

    try:
        if args.no_pld:
            raise ImportError
        import dp_accounting  # noqa: F401

        have_pld = True
    except ImportError:
        have_pld = False
        print("dp_accounting not available: no PLD comparison", file=sys.stderr)

    rows: list[dict] = []
    pld_stop = False
    started = time.perf_counter()
    for k in args.ks:
        eps_t = target_eps_t(eps, k)
        d = optimal_delta(eps, delta, k, eps_t)
        e_back = optimal_epsilon(eps, delta, k, d)
        best = best_of(
            {
                "optimal_delta": lambda: optimal_delta(eps, delta, k, eps_t),
                "optimal_epsilon": lambda: optimal_epsilon(eps, delta, k, d),
            },
            args.repeats,
        )
        for name, value, extra in [
            ("optimal_delta", d, dict()),
            ("optimal_epsilon", e_back, dict(delta_total=d, roundtrip_rel_err=abs(e_back - eps_t) / eps_t)),
        ]:
            row = dict(
                benchmark="composition",
                case=name,
                k=k,
                eps=eps,
                delta=delta,
                eps_t=eps_t,
                seconds=best[name],
                value=value,
                **extra,
            )
            tgt = TARGETS_S[name].get(k)
            if tgt is not None:
                row.update(target=f"< {tgt * 1e3:g} ms", meets_target=best[name] < tgt)
            rows.append(row)
        print(
            f"k={k}: eps_t={eps_t:.4g} delta={d:.6g} optimal_delta {best['optimal_delta'] * 1e3:.3g} ms, "
            f"optimal_epsilon {best['optimal_epsilon'] * 1e3:.3g} ms",
            file=sys.stderr,
        )
        if have_pld and not pld_stop and k <= args.pld_max_k:
            prow = pld_rows(eps, delta, k, eps_t, d, e_back, args.pld_interval)
            rows.extend(prow)
            took = prow[0]["seconds"] + prow[1]["seconds"] + prow[2]["seconds"]
            print(
                f"k={k}: dp_accounting {took:.3g} s, delta {prow[1]['value']:.10g} (ours {d:.10g}), "
                f"eps {prow[2]['value']:.10g} (ours {e_back:.10g})",
                file=sys.stderr,
            )
            if took > args.pld_max_seconds / 10:
                pld_stop = True
    report("composition", rows, args.out)
    print(f"total wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
