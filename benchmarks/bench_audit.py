"""Calibration of the empirical privacy audit (``ldpsim.audit``): validity on the
correct mechanisms, power on the broken zoo, tightness on randomized response. alpha = 0.05.

1. false alarms: every non-broken entry of the catalog (``ldpsim.mechanisms.catalog``) at eps in
   {0.5, 1, 2} (gaussian_classical, which needs eps < 1: {0.25, 0.5, 0.9}), other parameters
   at their defaults; ``--runs`` seeded audits of ``--n`` outputs per input each, with the
   exact density (``t.mechanism``). For (eps, delta) families delta is audited at the claimed
   eps too (``eps_for_delta``). A false alarm is ``eps_LB > true_eps`` or
   ``delta_LB > true_delta(eps)``; the overall measured rate must be <= alpha;
2. broken zoo (every ``broken.*`` target at its defaults): eps_LB at each budget of
   ``--budgets`` outputs per input, black box (``t.sampler``) and with the exact density
   (``t.mechanism``, when :func:`density_of` knows it), with seconds; and the outputs per
   input :func:`audit_sequential` needs to refute the claimed eps at alpha (``n_max`` = the
   largest budget), again black box and with the density;
3. tightness: eps_LB / eps for binary randomized response at eps in {0.5, 1, 2, 4, 8} with
   ``--tight-n`` outputs per input, with the density and black box.

All randomness comes from one ``SeedSequence(--seed)``, spawned per section and per audit.
Run from the repo root: ``python benchmarks/bench_audit.py`` (``--quick`` for a smoke
run). Writes ``reports/benchmarks/audit.csv`` and prints three markdown tables.
"""

from __future__ import annotations

import math
import time

import numpy as np

from _common import parser, report, timed
from ldpsim.audit import audit, audit_sequential, density_of, target
from ldpsim.mechanisms.catalog import CATALOG as TARGETS

ALPHA = 0.05
EPS_GRID = (0.5, 1.0, 2.0)
EPS_GRID_BELOW_1 = (0.25, 0.5, 0.9)  # gaussian_classical is only defined for eps < 1
TIGHT_EPS = (0.5, 1.0, 2.0, 4.0, 8.0)
QUICK = dict(runs=3, n=20_000, budgets=[10**4, 10**5], tight_n=10**5)


def _count(text: str) -> int:
    """An integer count from the command line; accepts ``1e6``."""
    value = float(text)
    if value != int(value) or value < 1:
        raise ValueError(text)
    return int(value)


def _n(n: int | None) -> str:
    """1000000 -> '1e6'; other counts with thousands separators."""
    if n is None:
        return "-"
    e = round(math.log10(n)) if n > 0 else 0
    return f"1e{e}" if 10**e == n else f"{n:,}"


def _g(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}" if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- 1. false alarms
def false_alarms(ss: np.random.SeedSequence, runs: int, n: int) -> list[dict]:
    rows = []
    families = [name for name in TARGETS if not name.startswith("broken.")]
    for name, fam_ss in zip(families, ss.spawn(len(families))):
        grid = EPS_GRID_BELOW_1 if name == "gaussian_classical" else EPS_GRID
        for eps, case_ss in zip(grid, fam_ss.spawn(len(grid))):
            t = target(name, eps=eps)
            with_delta = t.claimed_delta > 0
            true_delta = t.true_delta(t.claimed_eps) if (with_delta and t.true_delta is not None) else None
            eps_lbs, delta_lbs, fa_eps, fa_delta, fa = [], [], 0, 0, 0
            t0 = time.perf_counter()
            for s in case_ss.spawn(runs):
                res = audit(
                    t.mechanism,
                    t.pairs,
                    n,
                    ALPHA,
                    eps_for_delta=t.claimed_eps if with_delta else None,
                    rng=np.random.default_rng(s),
                )
                bad_eps = res.eps_lb > t.true_eps
                bad_delta = with_delta and true_delta is not None and res.delta_lb > true_delta
                fa_eps += bad_eps
                fa_delta += bad_delta
                fa += bad_eps or bad_delta
                eps_lbs.append(res.eps_lb)
                if with_delta:
                    delta_lbs.append(res.delta_lb)
            seconds = time.perf_counter() - t0
            rows.append(
                dict(
                    benchmark="audit",
                    section="false_alarms",
                    case=f"false alarms {t.spec}",
                    mechanism=name,
                    spec=t.spec,
                    n=n,
                    mode="density",
                    eps=eps,
                    claimed_eps=t.claimed_eps,
                    claimed_delta=t.claimed_delta,
                    true_eps=t.true_eps,
                    true_delta=true_delta,
                    runs=runs,
                    false_alarms=fa,
                    false_alarms_eps=fa_eps,
                    false_alarms_delta=fa_delta if with_delta else None,
                    max_eps_lb=float(np.max(eps_lbs)),
                    mean_eps_lb=float(np.mean(eps_lbs)),
                    max_delta_lb=float(np.max(delta_lbs)) if with_delta else None,
                    seconds=seconds,
                )
            )
            print(
                f"  {t.spec}: {fa}/{runs} false alarms, max eps_LB {np.max(eps_lbs):.4g}"
                + (f", max delta_LB {np.max(delta_lbs):.3g} (true {true_delta:.3g})" if with_delta else "")
                + f"  [{seconds:.1f} s]",
                flush=True,
            )
    total_runs = sum(r["runs"] for r in rows)
    total_fa = sum(r["false_alarms"] for r in rows)
    rate = total_fa / total_runs
    rows.append(
        dict(
            benchmark="audit",
            section="false_alarms",
            case="false-alarm rate (all correct targets)",
            n=n,
            mode="density",
            runs=total_runs,
            false_alarms=total_fa,
            false_alarm_rate=rate,
            target=ALPHA,
            meets_target=bool(rate <= ALPHA),
            seconds=sum(r["seconds"] for r in rows),
        )
    )
    return rows


# --------------------------------------------------------------------------- 2. broken zoo
def broken_zoo(ss: np.random.SeedSequence, budgets: list[int]) -> list[dict]:
    rows = []
    names = [name for name in TARGETS if name.startswith("broken.")]
    n_max = max(budgets)
    for name, case_ss in zip(names, ss.spawn(len(names))):
        t = target(name)
        modes = {"black-box": t.sampler}
        if density_of(t.mechanism) is not None:
            modes["density"] = t.mechanism
        seeds = iter(case_ss.spawn(len(modes) * (len(budgets) + 1)))
        base = dict(
            benchmark="audit",
            mechanism=name,
            spec=t.spec,
            claimed_eps=t.claimed_eps,
            claimed_delta=t.claimed_delta,
            true_eps=t.true_eps,
        )
        for mode, subject in modes.items():
            for budget in budgets:
                rng = np.random.default_rng(next(seeds))
                s, res = timed(lambda: audit(subject, t.pairs, budget, ALPHA, rng=rng))
                rows.append(
                    dict(
                        base,
                        section="broken",
                        case=f"broken {name} {mode}",
                        n=budget,
                        mode=mode,
                        eps_lb=res.eps_lb,
                        refuted=bool(res.eps_lb > t.claimed_eps),
                        seconds=s,
                    )
                )
                print(f"  {name} [{mode}] n={_n(budget)}: eps_LB {res.eps_lb:.4g}  [{s:.1f} s]", flush=True)
                del res
            rng = np.random.default_rng(next(seeds))
            s, res = timed(lambda: audit_sequential(subject, t.pairs, n_max, t.claimed_eps, ALPHA, rng=rng))
            last = res.rounds[-1]
            rows.append(
                dict(
                    base,
                    section="refute",
                    case=f"samples to refute {name} {mode}",
                    n=n_max,
                    mode=mode,
                    eps_lb=res.eps_lb,
                    refuted=bool(res.refuted),
                    n_per_input=last["n_per_input"],
                    looks=len(res.rounds),
                    seconds=s,
                )
            )
            print(
                f"  {name} [{mode}] sequential: refuted={res.refuted} after {last['n_per_input']:,} per input "
                f"({len(res.rounds)} looks)  [{s:.1f} s]",
                flush=True,
            )
            del res
    return rows


# --------------------------------------------------------------------------- 3. tightness
def tightness(ss: np.random.SeedSequence, n: int) -> list[dict]:
    rows = []
    for eps, case_ss in zip(TIGHT_EPS, ss.spawn(len(TIGHT_EPS))):
        t = target("randomized_response", k=2, eps=eps)
        for (mode, subject), s_ in zip({"density": t.mechanism, "black-box": t.sampler}.items(), case_ss.spawn(2)):
            rng = np.random.default_rng(s_)
            s, res = timed(lambda: audit(subject, t.pairs, n, ALPHA, rng=rng))
            rows.append(
                dict(
                    benchmark="audit",
                    section="tightness",
                    case=f"tightness {t.spec} {mode}",
                    mechanism="randomized_response",
                    spec=t.spec,
                    n=n,
                    k=2,
                    mode=mode,
                    eps=eps,
                    true_eps=t.true_eps,
                    eps_lb=res.eps_lb,
                    ratio=res.eps_lb / t.true_eps,
                    seconds=s,
                )
            )
            print(
                f"  {t.spec} [{mode}]: eps_LB {res.eps_lb:.4g} ratio {res.eps_lb / t.true_eps:.3f}  [{s:.1f} s]",
                flush=True,
            )
    return rows


# --------------------------------------------------------------------------- tables
def table_false_alarms(rows: list[dict]) -> str:
    body, total = [], None
    for r in rows:
        if r.get("mechanism") is None:
            total = r
            continue
        delta = r["true_delta"] is not None
        body.append(
            [
                r["mechanism"],
                _g(r["eps"]),
                _g(r["true_eps"], 4),
                f"{r['claimed_delta']:g}" if r["claimed_delta"] else "0",
                f"{r['runs']}",
                f"{r['false_alarms']}",
                _g(r["max_eps_lb"], 4),
                (_g(r["max_delta_lb"], 4) + " / " + _g(r["true_delta"], 4)) if delta else "-",
            ]
        )
    head = [
        "mechanism",
        "eps",
        "true eps",
        "delta",
        "runs",
        "false alarms",
        "max eps_LB",
        "max delta_LB / true delta(eps)",
    ]
    assert total is not None
    verdict = "<=" if total["meets_target"] else "> (FAIL)"
    foot = (
        f"\nOverall measured false-alarm rate: {total['false_alarms']}/{total['runs']} = "
        f"{total['false_alarm_rate']:.4f} {verdict} alpha = {ALPHA} "
        f"({_n(rows[0]['n'])} outputs per input, exact density)"
    )
    return _markdown(head, body) + foot


def table_broken(rows: list[dict], budgets: list[int]) -> str:
    by: dict[str, dict] = {}
    for r in rows:
        d = by.setdefault(r["mechanism"], dict(claimed=r["claimed_eps"], true=r["true_eps"]))
        if r["section"] == "broken":
            d[(r["mode"], r["n"])] = r
        else:
            d[("refute", r["mode"])] = r

    def pair(d: dict, fn) -> str:
        cells = [fn(d[key]) if key in d else "-" for key in d["_keys"]]
        return " / ".join(cells)

    def refute_cell(r: dict) -> str:
        return f"{r['n_per_input']:,}" if r["refuted"] else f"> {_n(r['n'])}"

    body = []
    for name, d in by.items():
        cells = [name.removeprefix("broken."), _g(d["claimed"]), _g(d["true"], 4)]
        for b in budgets:
            d["_keys"] = [("black-box", b), ("density", b)]
            cells.append(pair(d, lambda r: _g(r["eps_lb"])))
        d["_keys"] = [("refute", "black-box"), ("refute", "density")]
        cells.append(pair(d, refute_cell))
        d["_keys"] = [("black-box", max(budgets)), ("density", max(budgets))]
        cells.append(pair(d, lambda r: f"{r['seconds']:.1f}"))
        body.append(cells)
    head = (
        ["mechanism", "claimed eps", "true eps"]
        + [f"eps_LB @{_n(b)}" for b in budgets]
        + [f"samples/input to refute (n_max {_n(max(budgets))})", f"seconds @{_n(max(budgets))}"]
    )
    return (
        _markdown(head, body) + "\nCells: black box / with exact density ('-': density unknown). "
        f"Samples to refute: audit_sequential(first=1000, growth=2) at alpha = {ALPHA}."
    )


def table_tightness(rows: list[dict]) -> str:
    by: dict[float, dict] = {}
    for r in rows:
        by.setdefault(r["eps"], {})[r["mode"]] = r
    body = [
        [
            _g(eps),
            _g(d["density"]["eps_lb"], 4),
            f"{d['density']['ratio']:.3f}",
            _g(d["black-box"]["eps_lb"], 4),
            f"{d['black-box']['ratio']:.3f}",
        ]
        for eps, d in by.items()
    ]
    head = ["eps", "eps_LB (density)", "eps_LB / eps (density)", "eps_LB (black box)", "eps_LB / eps (black box)"]
    return _markdown(head, body) + f"\nRandomized response k=2, {_n(rows[0]['n'])} outputs per input, alpha = {ALPHA}."


# --------------------------------------------------------------------------- main
def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=1)
    p.add_argument("--runs", type=_count, default=20, help="seeded audits per correct target and eps")
    p.add_argument("--n", type=_count, default=100_000, help="outputs per input for the false-alarm runs")
    p.add_argument("--budgets", type=_count, nargs="+", default=[10**6, 10**7], help="outputs per input, broken zoo")
    p.add_argument("--tight-n", type=_count, default=10**7, help="outputs per input for the tightness audits")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: --runs 3 --n 2e4 --budgets 1e4 1e5 --tight-n 1e5 (explicit options win)",
    )
    args = p.parse_args()
    if args.quick:
        p.set_defaults(**QUICK)
        args = p.parse_args()
    budgets = sorted(set(args.budgets))
    t_start = time.perf_counter()
    ss_false, ss_broken, ss_tight = np.random.SeedSequence(args.seed).spawn(3)

    print(f"1. false alarms: {args.runs} runs x {_n(args.n)} outputs per input", flush=True)
    fa_rows = false_alarms(ss_false, args.runs, args.n)
    print(f"2. broken zoo: budgets {', '.join(_n(b) for b in budgets)}", flush=True)
    broken_rows = broken_zoo(ss_broken, budgets)
    print(f"3. tightness: {_n(args.tight_n)} outputs per input", flush=True)
    tight_rows = tightness(ss_tight, args.tight_n)
    total = time.perf_counter() - t_start

    rows = fa_rows + broken_rows + tight_rows
    for r in rows:
        r["seed"] = args.seed
        r["alpha"] = ALPHA
    report("audit", rows, args.out)

    print("\n### False alarms on the correct mechanisms\n")
    print(table_false_alarms(fa_rows))
    print("\n### Power on the broken zoo\n")
    print(table_broken(broken_rows, budgets))
    print("\n### Tightness\n")
    print(table_tightness(tight_rows))
    print(f"\nTotal runtime {total:.0f} s (seed {args.seed}).")


if __name__ == "__main__":
    main()
