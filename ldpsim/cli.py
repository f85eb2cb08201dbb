"""The ``ldpsim`` command line: argument parsing and wiring only."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Sequence

import numpy as np
import pandas as pd

from ldpsim import __version__
from ldpsim.errors import LdpSimError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ldpsim", description="Simulate and validate local differential privacy.")
    parser.add_argument("--version", action="version", version=f"ldpsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="run a scenario file and write its report under reports/",
        description="Run a scenario (scenarios/*.toml): replications of the SimPy model of clients, "
        "network, server and analyst. Writes reports/<scenario>/<run-id>/ with results.csv, figures, "
        "summary.md, metadata.json and the scenario as run, and prints the final estimates.",
    )
    run.add_argument("file", nargs="?", help="scenario file (TOML); not needed with --resume")
    run.add_argument("--seed", type=int, default=None, help="root seed (default: the scenario's simulation.seed, else fresh entropy)")
    run.add_argument("--replications", type=int, default=None, help="number of replications (default: the scenario's)")
    run.add_argument("--workers", type=int, default=1, help="worker processes for replications (default 1: in-process)")
    run.add_argument("--out", default=None, help="run directory to create (default reports/<scenario>/<UTC time>-seed<seed>)")
    run.add_argument("--resume", metavar="DIR", default=None, help="finish an interrupted run in DIR (same seed and scenario)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr is not a terminal)")
    run.set_defaults(func=_run)

    demo = sub.add_parser(
        "demo",
        help="privatise answers with randomized response and estimate their frequencies",
        description="Draw n answers from a Zipf-like distribution over k categories, privatise each "
        "with k-ary randomized response, and print the true and estimated frequencies side by side.",
    )
    demo.add_argument("--n", type=int, default=1_000_000, help="number of clients (default 1,000,000)")
    demo.add_argument("--k", type=int, default=5, help="number of answer categories (default 5)")
    demo.add_argument("--eps", type=float, default=1.0, help="privacy level eps (default 1.0)")
    demo.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy, printed)")
    demo.set_defaults(func=_demo)

    comp = sub.add_parser(
        "compose",
        help="privacy of k-fold composition: the exact region next to the closed-form bounds",
        description="k-fold adaptive composition of (eps, delta)-DP mechanisms: prints delta_total at a grid "
        "of eps_total (or eps_total for --target-delta) for the exact optimal composition (Kairouz-Oh-Viswanath "
        "Theorem 3.3) and each bound (basic, Dwork-Rothblum-Vadhan, Theorem 3.4 in both forms), and writes "
        "table.csv and region.png comparing their privacy regions.",
    )
    comp.add_argument("--eps", type=float, required=True, help="eps of each mechanism")
    comp.add_argument("--delta", type=float, default=0.0, help="delta of each mechanism (default 0)")
    comp.add_argument("-k", type=int, required=True, help="number of mechanisms composed")
    comp.add_argument("--eps-total", type=float, nargs="+", default=None, metavar="E", help="eps_total values (default: 12 points up to where the exact delta meets its floor)")
    comp.add_argument("--target-delta", type=float, nargs="+", default=None, metavar="D", help="print eps_total for these total deltas instead")
    comp.add_argument("--out", default=None, help="output directory (default reports/compose/eps<eps>-delta<delta>-k<k>)")
    comp.add_argument("--no-figure", action="store_true", help="skip region.png")
    comp.set_defaults(func=_compose)

    rep = sub.add_parser(
        "reproduce",
        help="regenerate a figure or table of the seed papers (CSV + PNG under reports/reproduce/)",
        description="Regenerate a figure or table of the seed papers: writes data.csv, priors.csv, summary.csv, "
        "a PNG and metadata.json under reports/reproduce/NAME/ (or --out), and prints our numbers beside the "
        "paper's. `ldpsim reproduce --list` names every reproduction.",
    )
    rep.add_argument("name", nargs="?", metavar="NAME", help="the reproduction to run (see --list)")
    rep.add_argument("--list", action="store_true", help="name every reproduction with a one-line description")
    rep.add_argument("--seed", type=int, default=None, help="seed of the random instances (default 2014)")
    rep.add_argument("--instances", type=int, default=None, help="number of random instances (default 100, the papers' setting)")
    rep.add_argument("--out", default=None, help="output directory (default reports/reproduce/NAME)")
    rep.add_argument("--workers", type=int, default=1, help="worker processes for the linear programs (default 1)")
    rep.set_defaults(func=_reproduce)
    return parser


def _is_multiparty(args: argparse.Namespace) -> bool:
    """A scenario file with ``kind = "multiparty"`` at the top, or a run directory made from one."""
    import json
    import tomllib
    from pathlib import Path

    try:
        if args.resume is not None:
            return json.loads((Path(args.resume) / "metadata.json").read_text()).get("kind") == "multiparty"
        return args.file is not None and tomllib.loads(Path(args.file).read_text()).get("kind") == "multiparty"
    except (OSError, ValueError, AttributeError):
        return False  # the survey loader reports the problem


def _run(args: argparse.Namespace) -> int:
    if _is_multiparty(args):
        from ldpsim.protocols.report import cli_run

        return cli_run(args)
    from ldpsim.runs import RunInterrupted, resume_run, run_scenario
    from ldpsim.sim import summary

    progress = not args.no_progress
    try:
        if args.resume is not None:
            if args.file is not None or args.seed is not None or args.replications is not None or args.out is not None:
                raise LdpSimError("--resume: got other options too, expected only --workers with --resume")
            result = resume_run(args.resume, workers=args.workers, progress=progress)
        else:
            if args.file is None:
                raise LdpSimError("file: got nothing, expected a scenario file (or --resume DIR)")
            result = run_scenario(
                args.file, seed=args.seed, replications=args.replications, workers=args.workers, out=args.out,
                progress=progress,
            )  # fmt: skip
    except RunInterrupted as exc:
        print(f"ldpsim: {exc}", file=sys.stderr)
        return 130
    spec = result.scenario.spec
    print(f"{spec.name}: {spec.population.size:,} clients, {spec.simulation.replications} replication(s), seed {result.seed}")
    if (result.results["quantity"] == "frequency").any():
        final = summary.final_frequencies(result.results)
        if spec.simulation.replications == 1:
            cols = ["category", "truth", "estimate", "ci_low", "ci_high", "covered"]
        else:
            cols = ["category", "truth", "mean_estimate", "rmse", "theory_se", "coverage"]
        print(final[cols].to_string(index=False, float_format=lambda x: f"{x:.5f}"))
    others = summary.other_task_totals(result.results)
    if not others.empty:
        print(others.to_string(index=False, float_format=lambda x: f"{x:.6g}"))
    totals = summary.engine_totals(result.results).set_index("quantity")["mean"]
    print(
        f"reports received {totals.get('received', 0):,.0f}, lost {totals.get('lost', 0):,.0f}, "
        f"in flight at the end {totals.get('in_flight', 0):,.0f} (mean per replication)"
    )
    print(f"report: {result.run_dir / 'summary.md'}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from ldpsim import _validate as v
    from ldpsim.analyst import frequency_estimate
    from ldpsim.mechanisms import randomized_response

    n = v.integer(args.n, "--n", minimum=1)
    mech = randomized_response(args.k, args.eps)
    seed = np.random.SeedSequence(args.seed)
    data_rng, mech_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    prior = 1.0 / np.arange(1, mech.k + 1)
    prior /= prior.sum()

    start = time.perf_counter()
    truth = data_rng.choice(mech.k, size=n, p=prior)
    reports = mech.privatize(truth, mech_rng)
    elapsed = time.perf_counter() - start

    true_freq = np.bincount(truth, minlength=mech.k) / n
    est = frequency_estimate(mech, np.bincount(reports, minlength=mech.k))
    table = pd.DataFrame(
        {
            "category": list(mech.input_labels),
            "true": true_freq,
            "estimated": est.estimate,
            "std_error": est.std_error,
            "z": np.divide(est.estimate - true_freq, est.std_error, out=np.full(mech.k, np.nan), where=est.std_error > 0),
        }
    )
    print(f"ldpsim demo: {n:,} clients, k = {mech.k}, randomized response at eps = {mech.eps:g} (seed {seed.entropy})")
    print(f"simulated in {elapsed:.3f} s; keep probability {mech.keep:.4f}, true-answer probability {mech.p_keep:.4f}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.5f}"))
    print("z = (estimated - true) / std_error; |z| > 3 should be rare.")
    return 0


def _compose(args: argparse.Namespace) -> int:
    from ldpsim.privacy import compose_report as cr

    if args.eps_total is not None and args.target_delta is not None:
        raise LdpSimError("--target-delta: got --eps-total too, expected one of the two")
    table, files, notes = cr.run(
        args.eps, args.delta, args.k, eps_totals=args.eps_total, delta_totals=args.target_delta, out=args.out,
        figure=not args.no_figure,
    )  # fmt: skip
    what = "eps_total at each target delta_total" if args.target_delta is not None else "delta_total at each eps_total"
    print(f"{args.k}-fold composition of ({args.eps:g}, {args.delta:g})-DP mechanisms: {what}")
    shown = table.rename(columns={m: cr.LABELS[m] for m in cr.methods(args.eps)})
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.6g}"))
    print("exact = the optimal composition (no (eps, delta)-DP mechanisms compose worse); bounds are upper bounds")
    for note in notes:
        print(note)
    print(f"files: {', '.join(str(p) for p in files)}")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from ldpsim import reproduce as rp

    if args.list:
        if args.name is not None:
            raise LdpSimError(f"--list: got a NAME too ({args.name!r}), expected --list alone")
        width = max(len(n) for n in rp.names())
        for name in rp.names():
            print(f"{name:<{width}}  {rp.get(name).description}")
        return 0
    if args.name is None:
        raise LdpSimError(f"NAME: got nothing, expected one of {', '.join(rp.names())} (or --list)")
    rp.get(args.name)  # unknown names fail before any work
    seed = rp.DEFAULT_SEED if args.seed is None else args.seed
    instances = rp.DEFAULT_INSTANCES if args.instances is None else args.instances
    run = rp.reproduce(args.name, seed=seed, instances=instances, out=args.out, workers=args.workers)
    print(f"{run.name}: {rp.get(run.name).source}; {run.instances} instances, seed {run.seed}, {run.seconds:.1f} s")
    print(rp.format_summary(run.summary))
    bad = run.disagreements
    if len(bad):
        print(f"disagrees with the paper ({len(bad)}): " + "; ".join(bad["quantity"] + " (k=" + bad["k"].astype(str) + ")"))
    else:
        print("every number the paper gives agrees within the stated criterion")
    print(f"files in {run.out_dir}: {', '.join(p.name for p in run.files)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except LdpSimError as exc:
        print(f"ldpsim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
