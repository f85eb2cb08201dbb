"""Floating point and privacy: the speed of the safe samplers, how fast the floating-point
audit refutes the float samplers, and how often it wrongly refutes the safe ones.

1. speed: samples per second at ``--n`` (default 10^7) draws of the exact discrete Laplace
   and discrete Gaussian samplers (Canonne, Kamath and Steinke 2020), the snapped Laplace
   (Mironov 2012) and, in the same run, the float samplers they replace (numpy's Laplace and
   normal draws through ``laplace`` and ``gaussian``); best of ``--repeats`` runs each, plus
   the discrete samplers through the operating system's generator (``rng="os"``);
2. samples to refute: :func:`ldpsim.audit.audit_sequential` with ``exact_floats=True``
   (first look 1,000 outputs per input, doubling, up to ``--n-max``) on the float Laplace and
   Gaussian at eps in {0.1, 1, 4} (Gaussian: delta 1e-5), black box and with the exact density,
   alpha = 0.05: the outputs per input it needed to refute the claim; and, for comparison,
   the same audits without the mode (which test the mathematical mechanism, so they should
   not refute);
3. false alarms: ``--runs`` (default 20) seeded audits with ``exact_floats=True`` of
   ``--audit-n`` outputs per input (default 10^5) per (mechanism, eps), eps in {0.1, 1, 4}, on
   the safe mechanisms (``discrete_laplace``, ``discrete_gaussian`` at delta 1e-5 with delta
   audited at the claimed eps, ``snapped_laplace``) at alpha = 0.05. A false alarm is
   ``eps_LB`` above the mechanism's eps or ``delta_LB`` above its exact delta at the claimed
   eps; the overall rate must be at most alpha. The two safe mean-estimation mechanisms
   (``discrete_laplace_bounded``, ``snapped_laplace_bounded``, the latter without a density:
   black box) are audited the same way.

All randomness comes from one ``SeedSequence(--seed)``, spawned per section and per audit.
Run from the repo root: ``python benchmarks/bench_float_safety.py`` (``--quick`` for a
smoke run). Writes ``reports/benchmarks/float_safety.csv`` and prints three markdown tables.
"""

from __future__ import annotations

import math
import time

import numpy as np

from _common import best_of, parser, report
from ldpsim.audit import audit, audit_sequential, target

ALPHA = 0.05
EPS_GRID = (0.1, 1.0, 4.0)
DELTA = 1e-5
FLOAT = {"laplace": {}, "gaussian": {"delta": DELTA}}
SAFE = {
    "discrete_laplace": {},
    "discrete_gaussian": {"delta": DELTA},
    "snapped_laplace": {},
    "discrete_laplace_bounded": {},
    "snapped_laplace_bounded": {},
}
SPEED = {  # case -> (catalog name, parameters)
    "laplace (float)": ("laplace", {"eps": 1.0}),
    "gaussian (float)": ("gaussian", {"eps": 1.0, "delta": DELTA}),
    "discrete_laplace": ("discrete_laplace", {"eps": 1.0}),
    "discrete_gaussian": ("discrete_gaussian", {"eps": 1.0, "delta": DELTA}),
    "snapped_laplace": ("snapped_laplace", {"eps": 1.0}),
}
QUICK = dict(n=10**6, repeats=1, n_max=10**5, runs=3, audit_n=20_000)


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _g(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}" if math.isfinite(x) else ("inf" if x > 0 else "-inf")


# --------------------------------------------------------------------------- 1. speed
def speed(ss: np.random.SeedSequence, n: int, repeats: int) -> list[dict]:
    cases, mechs = {}, {}
    for (case, (name, params)), s in zip(SPEED.items(), ss.spawn(len(SPEED))):
        mech = target(name, **params).mechanism
        mechs[case] = mech
        rng = np.random.default_rng(s)
        cases[case] = lambda mech=mech, rng=rng: mech.sample(0.0, n, rng)
    for case in ("discrete_laplace", "discrete_gaussian", "snapped_laplace"):
        mech = mechs[case]
        cases[case + " (rng='os')"] = lambda mech=mech: mech.sample(0.0, n // 10, "os")
    best = best_of(cases, repeats)
    rows = []
    base = {c: best[c] for c in ("laplace (float)", "gaussian (float)")}
    for case, seconds in best.items():
        size = n // 10 if "os" in case else n
        rate = size / seconds
        ref = base["gaussian (float)"] if "gaussian" in case else base["laplace (float)"]
        rows.append(
            dict(
                benchmark="float_safety",
                section="speed",
                case=case,
                n=size,
                seconds=seconds,
                throughput_per_s=rate,
                slowdown_vs_float=(seconds / size) / (ref / n),
            )
        )
        print(f"  {case}: {rate:,.0f} samples/s ({seconds:.3f} s for {size:,})", flush=True)
    return rows


# --------------------------------------------------------------------------- 2. samples to refute
def refute(ss: np.random.SeedSequence, n_max: int) -> list[dict]:
    rows = []
    cases = [(name, eps) for name in FLOAT for eps in EPS_GRID]
    for (name, eps), case_ss in zip(cases, ss.spawn(len(cases))):
        t = target(name, eps=eps, **FLOAT[name])
        seeds = iter(case_ss.spawn(4))
        for exact in (True, False):
            for mode, subject in (("black-box", t.sampler), ("density", t.mechanism)):
                rng = np.random.default_rng(next(seeds))
                t0 = time.perf_counter()
                res = audit_sequential(
                    subject,
                    t.pairs,
                    n_max,
                    t.claimed_eps,
                    ALPHA,
                    claimed_delta=t.claimed_delta,
                    exact_floats=exact,
                    rng=rng,
                )
                seconds = time.perf_counter() - t0
                last = res.rounds[-1]
                rows.append(
                    dict(
                        benchmark="float_safety",
                        section="refute",
                        case=f"refute {t.spec} {mode}",
                        mechanism=name,
                        spec=t.spec,
                        eps=eps,
                        mode=mode,
                        exact_floats=exact,
                        n=n_max,
                        refuted=bool(res.refuted),
                        n_per_input=last["n_per_input"],
                        eps_lb=res.eps_lb,
                        delta_lb=res.delta_lb,
                        looks=len(res.rounds),
                        seconds=seconds,
                    )
                )
                print(
                    f"  {t.spec} [{mode}, exact_floats={exact}]: refuted={res.refuted} after "
                    f"{last['n_per_input']:,} per input, eps_LB {res.eps_lb:.4g}  [{seconds:.1f} s]",
                    flush=True,
                )
    return rows


# --------------------------------------------------------------------------- 3. false alarms
def false_alarms(ss: np.random.SeedSequence, runs: int, n: int) -> list[dict]:
    rows = []
    cases = [(name, eps) for name in SAFE for eps in EPS_GRID]
    for (name, eps), case_ss in zip(cases, ss.spawn(len(cases))):
        t = target(name, eps=eps, **SAFE[name])
        with_delta = t.claimed_delta > 0
        true_delta = t.true_delta(t.claimed_eps) if with_delta and t.true_delta is not None else None
        fa, eps_lbs, delta_lbs = 0, [], []
        t0 = time.perf_counter()
        for s in case_ss.spawn(runs):
            res = audit(
                t.mechanism,
                t.pairs,
                n,
                ALPHA,
                eps_for_delta=t.claimed_eps if with_delta else None,
                exact_floats=True,
                rng=np.random.default_rng(s),
            )
            bad = res.eps_lb > t.true_eps or (true_delta is not None and res.delta_lb > true_delta)
            fa += bool(bad)
            eps_lbs.append(res.eps_lb)
            if with_delta:
                delta_lbs.append(res.delta_lb)
        seconds = time.perf_counter() - t0
        rows.append(
            dict(
                benchmark="float_safety",
                section="false_alarms",
                case=f"false alarms {t.spec}",
                mechanism=name,
                spec=t.spec,
                eps=eps,
                n=n,
                runs=runs,
                false_alarms=fa,
                true_eps=t.true_eps,
                true_delta=true_delta,
                max_eps_lb=float(np.max(eps_lbs)),
                max_delta_lb=float(np.max(delta_lbs)) if delta_lbs else None,
                seconds=seconds,
            )
        )
        print(
            f"  {t.spec}: {fa}/{runs} false alarms, max eps_LB {np.max(eps_lbs):.4g} (eps {t.true_eps:.4g})"
            + (f", max delta_LB {np.max(delta_lbs):.3g} (exact {true_delta:.3g})" if delta_lbs else "")
            + f"  [{seconds:.1f} s]",
            flush=True,
        )
    total = sum(r["false_alarms"] for r in rows)
    audits = sum(r["runs"] for r in rows)
    rows.append(
        dict(
            benchmark="float_safety",
            section="false_alarms",
            case="false-alarm rate (safe samplers)",
            n=n,
            runs=audits,
            false_alarms=total,
            false_alarm_rate=total / audits,
            target=ALPHA,
            meets_target=bool(total / audits <= ALPHA),
        )
    )
    return rows


# --------------------------------------------------------------------------- tables
def tables(rows: list[dict]) -> str:
    out = []
    sp = [r for r in rows if r["section"] == "speed"]
    out.append(
        _markdown(
            ["sampler", "draws", "samples/s", "seconds", "time per draw vs the float sampler"],
            [
                [
                    r["case"],
                    f"{r['n']:,}",
                    f"{r['throughput_per_s']:,.0f}",
                    f"{r['seconds']:.3f}",
                    f"{r['slowdown_vs_float']:.1f}x",
                ]
                for r in sp
            ],
        )
    )
    rf = [r for r in rows if r["section"] == "refute"]
    body = []
    for r in rf:
        n_text = f"{r['n_per_input']:,}" if r["refuted"] else f"not refuted at {r['n_per_input']:,}"
        lb = _g(r["eps_lb"], 4) + (f" ({_g(r['delta_lb'], 3)})" if r["delta_lb"] is not None else "")
        body.append([r["spec"], r["mode"], "yes" if r["exact_floats"] else "no", n_text, lb])
    out.append(
        _markdown(["float sampler", "audit", "exact floats", "outputs per input to refute", "eps_LB (delta_LB)"], body)
    )
    fa = [r for r in rows if r["section"] == "false_alarms" and r.get("mechanism")]
    total = [r for r in rows if r["section"] == "false_alarms" and not r.get("mechanism")][0]
    body = [
        [
            r["spec"],
            f"{r['runs']}",
            f"{r['false_alarms']}",
            _g(r["max_eps_lb"], 4) + " / " + _g(r["true_eps"], 4),
            (_g(r["max_delta_lb"], 3) + " / " + _g(r["true_delta"], 3)) if r["true_delta"] is not None else "-",
        ]
        for r in fa
    ]
    out.append(
        _markdown(["safe sampler", "audits", "false alarms", "max eps_LB / eps", "max delta_LB / exact delta"], body)
        + f"\n\nOverall: {total['false_alarms']}/{total['runs']} false alarms (alpha = {ALPHA}), "
        f"{total['n']:,} outputs per input, exact floats, with the exact density where there is one."
    )
    return "\n\n".join(out)


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    p.add_argument("--n", type=int, default=10**7, help="draws per sampler in the speed section")
    p.add_argument("--n-max", type=int, default=10**6, help="largest outputs per input of a sequential audit")
    p.add_argument("--runs", type=int, default=20, help="seeded audits per (safe mechanism, eps)")
    p.add_argument("--audit-n", type=int, default=10**5, help="outputs per input of each false-alarm audit")
    p.add_argument("--quick", action="store_true", help="a smoke run with small sizes")
    args = p.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    ss = np.random.SeedSequence(args.seed)
    s1, s2, s3 = ss.spawn(3)
    t0 = time.perf_counter()
    print("1. speed", flush=True)
    rows = speed(s1, args.n, args.repeats)
    print("2. samples to refute the float samplers", flush=True)
    rows += refute(s2, args.n_max)
    print("3. false alarms on the safe samplers", flush=True)
    rows += false_alarms(s3, args.runs, args.audit_n)
    report("float_safety", rows, args.out)
    print(tables(rows))
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
