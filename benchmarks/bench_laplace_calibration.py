"""Laplace noise calibrated for k releases: the exact loss law against the worst case and dp-accounting.

For each (eps, delta, k) of ``--cases``, the Laplace scale (sensitivity 1) of

* ``worst_case`` -- ``Laplace.calibrate(eps, delta, compositions=k, method="worst_case")``: the
  largest eps0 whose optimal k-fold composition of eps0-DP mechanisms meets (eps, delta)
  (Kairouz, Oh and Viswanath 2015), the default before issue 34;
* ``exact`` -- ``Laplace.calibrate(eps, delta, compositions=k)``: Laplace's own privacy-loss
  law composed k times (the library's Accountant), now the default;
* ``dp_accounting`` -- ``dp_accounting.calibrate_dp_mechanism`` with its PLD accountant on a
  ``LaplaceDpEvent`` composed k times (default ``value_discretization_interval`` 1e-4,
  pessimistic), if dp-accounting is installed (the optional extra ``compare``).

The delta each scale reaches is exact (mpmath, ``ldpsim.reproduce.composition_noise.laplace_delta``)
for k <= ``--exact-k`` and otherwise the Accountant's upper bound at a quarter of its default
step. Columns: ``scale``, ``achieved_delta``, ``excess`` (the scale over the ``exact`` one, minus
1), ``seconds``.

Run from the repo root: ``python benchmarks/bench_laplace_calibration.py``. Writes
``reports/benchmarks/laplace_calibration.csv``.
"""

from __future__ import annotations

import sys
import warnings

from _common import parser, report, timed
from ldpsim.mechanisms.noise import Laplace
from ldpsim.privacy import Accountant
from ldpsim.reproduce.composition_noise import laplace_delta

CASES = "1,1e-5,10 1,1e-3,2 0.5,1e-6,5 2,1e-5,3 1,1e-5,30 1,1e-5,100 0.5,1e-8,100 1,1e-5,1000"


def achieved(scale: float, eps: float, delta: float, k: int, exact_k: int) -> tuple[float, str]:
    if k <= exact_k:
        return laplace_delta(scale, k, eps), "exact (mpmath)"
    base = Accountant().add(Laplace(scale), times=k)
    base.delta(eps)
    fine = Accountant(step=base.step / 4).add(Laplace(scale), times=k)
    return float(fine.delta(eps)), "accountant, step/4 (upper bound)"


def dp_accounting_scale(eps: float, delta: float, k: int, lo: float, hi: float) -> float | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import dp_accounting
            from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        return None
    return float(
        dp_accounting.calibrate_dp_mechanism(
            pld_privacy_accountant.PLDAccountant,
            lambda b: dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(b), k),
            eps,
            delta,
            dp_accounting.LowerEndpointAndGuess(lo, hi),
            tol=1e-12 * hi,
        )
    )


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--cases", default=CASES, help="space-separated eps,delta,k triples")
    p.add_argument(
        "--exact-k", type=int, default=30, help="largest k whose achieved delta is computed exactly (mpmath)"
    )
    args = p.parse_args()
    rows = []
    for spec in args.cases.split():
        e, d, kk = spec.split(",")
        eps, delta, k = float(e), float(d), int(kk)
        t_old, old = timed(lambda: Laplace.calibrate(eps, delta, compositions=k, method="worst_case"))
        t_new, new = timed(lambda: Laplace.calibrate(eps, delta, compositions=k))
        scales = {"worst_case": (old.scale, t_old), "exact": (new.scale, t_new)}
        t_dp, dp = timed(lambda: dp_accounting_scale(eps, delta, k, 0.9 * new.scale, old.scale))
        if dp is not None:
            scales["dp_accounting"] = (dp, t_dp)
        for name, (scale, seconds) in scales.items():
            got, how = achieved(scale, eps, delta, k, args.exact_k)
            rows.append(
                dict(
                    benchmark="laplace_calibration",
                    case=name,
                    k=k,
                    eps=eps,
                    target=delta,
                    scale=scale,
                    achieved_delta=got,
                    achieved_by=how,
                    excess=scale / new.scale - 1,
                    seconds=seconds,
                )
            )
            print(
                f"eps={eps:g} delta={delta:g} k={k} {name:13s} scale {scale:.10g} (excess "
                f"{scale / new.scale - 1:+.3%}) delta {got:.6g} [{how}] {seconds:.2f} s",
                file=sys.stderr,
            )
    report("laplace_calibration", rows, args.out)


if __name__ == "__main__":
    main()
