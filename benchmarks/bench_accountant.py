"""Time of the accountant for a mix of mechanisms, against dp-accounting's PLD accountant.

The mix: ``--rr`` uses of binary randomized response at ``--eps`` (default 30 at eps = 1) and
``--gauss`` uses of the Gaussian mechanism with noise ``--sigma`` (default 30 at sigma = 2),
sensitivity 1. Each case builds the composition and answers ``epsilon(--delta)`` and
``delta(eps_t)`` at the eps_t where the exact delta is ``--delta``; the best of ``--repeats``
wall times (time.perf_counter) is kept.

* ``ours`` -- ``Accountant([(rr, 30), (Gaussian(sigma), 30)])``, default step (the randomized
  response part exact, the Gaussian part pessimistic);
* ``dp_accounting`` -- ``from_randomized_response(...).self_compose(30).compose(
  from_gaussian_mechanism(...).self_compose(30))`` at its default
  ``value_discretization_interval`` (1e-4, ``--interval``), connect-the-dots;
* ``dp_accounting @ our step`` -- the same at our lattice step (equal discretisation);
* with ``--fine``: ``ours @ 1e-4`` -- ours at dp-accounting's interval.

The exact values come from the closed form: binary randomized response composed k times has
its loss on (k - 2l) eps with binomial weights, the Gaussian part is ``sqrt(k)/sigma``-GDP,
and ``delta(eps) = sum_l b(l) G(eps - (k - 2l) eps)`` with ``G`` the GDP profile at a shifted
(possibly negative) eps. Columns: ``value`` (the eps or delta found), ``rel_err`` against the
exact value (positive: pessimistic), ``ratio`` = this case's time / ours.

Run from the repo root: ``python benchmarks/bench_accountant.py [--repeats N] [--fine]``.
Writes ``reports/benchmarks/accountant.csv``.
"""

from __future__ import annotations

import math
import sys
import warnings
from math import comb

from scipy.special import ndtr

from _common import best_of, parser, report, timed
from ldpsim.mechanisms import randomized_response
from ldpsim.mechanisms.noise import Gaussian
from ldpsim.privacy import Accountant


def exact_delta(eps: float, k_rr: int, k_gauss: int, sigma: float, eps_t: float) -> float:
    mu = math.sqrt(k_gauss) / sigma
    q = 1.0 / (1.0 + math.exp(eps))
    total = 0.0
    for l in range(k_rr + 1):
        t = eps_t - (k_rr - 2 * l) * eps
        g = ndtr(-t / mu + mu / 2) - math.exp(t) * ndtr(-t / mu - mu / 2) if mu > 0 else float(t < 0) * -math.expm1(t)
        total += comb(k_rr, l) * (1 - q) ** (k_rr - l) * q**l * g
    return total


def exact_epsilon(eps: float, k_rr: int, k_gauss: int, sigma: float, delta: float) -> float:
    lo, hi = 0.0, k_rr * eps + 50.0 * math.sqrt(k_gauss) / sigma + 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if exact_delta(eps, k_rr, k_gauss, sigma, mid) <= delta else (mid, hi)
    return hi


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=5)
    p.add_argument("--eps", type=float, default=1.0, help="eps of each randomized response")
    p.add_argument("--rr", type=int, default=30, help="uses of randomized response")
    p.add_argument("--sigma", type=float, default=2.0, help="Gaussian noise sigma (sensitivity 1)")
    p.add_argument("--gauss", type=int, default=30, help="uses of the Gaussian mechanism")
    p.add_argument("--delta", type=float, default=1e-6, help="the target delta")
    p.add_argument("--interval", type=float, default=1e-4, help="dp-accounting value_discretization_interval")
    p.add_argument("--fine", action="store_true", help="also ours at step = --interval (slow)")
    args = p.parse_args()
    eps, k_rr, sigma, k_g, d = args.eps, args.rr, args.sigma, args.gauss, args.delta
    eps_t = exact_epsilon(eps, k_rr, k_g, sigma, d)
    d_exact = exact_delta(eps, k_rr, k_g, sigma, eps_t)

    def ours(step: float | None = None):
        def run():
            acc = Accountant([(randomized_response(2, eps), k_rr), (Gaussian(sigma), k_g)], step=step)
            return acc.epsilon(d), float(acc.delta(eps_t)), acc.step

        return run

    cases = {"ours": ours()}
    _, (_, _, our_step) = timed(cases["ours"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from dp_accounting.pld import privacy_loss_distribution as pl

        def theirs(interval: float):
            def run():
                rr = pl.from_randomized_response(2.0 / (math.exp(eps) + 1.0), 2, value_discretization_interval=interval)
                g = pl.from_gaussian_mechanism(sigma, 1.0, value_discretization_interval=interval)
                both = rr.self_compose(k_rr).compose(g.self_compose(k_g))
                return float(both.get_epsilon_for_delta(d)), float(both.get_delta_for_epsilon(eps_t)), interval

            return run

        cases["dp_accounting"] = theirs(args.interval)
        cases["dp_accounting @ our step"] = theirs(our_step)
    except ImportError:
        print("dp_accounting not available: ours only", file=sys.stderr)
    if args.fine:
        cases["ours @ interval"] = ours(args.interval)
    best = best_of(cases, args.repeats)
    rows = []
    for name, fn in cases.items():
        e_found, d_found, step = fn()
        common = dict(
            benchmark="accountant",
            case=name,
            k=k_rr + k_g,
            seconds=best[name],
            ratio=best[name] / best["ours"],
            step=step,
            eps=eps,
            sigma=sigma,
        )
        rows.append(dict(common, query=f"epsilon({d:g})", value=e_found, exact=eps_t, rel_err=e_found / eps_t - 1))
        rows.append(
            dict(common, query=f"delta({eps_t:.6g})", value=d_found, exact=d_exact, rel_err=d_found / d_exact - 1)
        )
        print(
            f"{name}: {best[name] * 1e3:.1f} ms, epsilon({d:g}) = {e_found:.8g} (exact {eps_t:.8g}), "
            f"delta = {d_found:.8g} (exact {d_exact:.8g})",
            file=sys.stderr,
        )
    report("accountant", rows, args.out)
    if "dp_accounting" in best:
        print(f"dp_accounting / ours = {best['dp_accounting'] / best['ours']:.3g} (time, default settings)")


if __name__ == "__main__":
    main()
