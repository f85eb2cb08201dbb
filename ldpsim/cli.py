"""The ``ldpsim`` command line: argument parsing and wiring only.

Only the standard library is imported here; each handler imports what it needs, so
``ldpsim --help`` and a usage error cost no numpy, pandas or scipy.

Every command goes through the same handling (:func:`main`): a bad argument, an output
folder that is not new or empty (without ``--force``) or cannot be written, is one line and
exit code 2, found before any work starts; Ctrl-C is one line and exit code 130. A command
that writes a folder of files opens it with :class:`ldpsim._files.OutputFolder` (directly or
through the library function it calls) before computing, so the folder is checked first,
filled in a temporary folder and put in place whole at the end; Ctrl-C or an error leaves
nothing, and a default folder is a new one per run. ``ldpsim run`` keeps the replications
that are complete instead, and says how to resume.

Everything a command prints fits a 100-column terminal: tables and prose lines go through
:mod:`ldpsim._text` (a wider table is printed in blocks of columns, the file holding it whole
named below it; long lines wrap with an indented continuation).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence, cast

from ldpsim._text import KEEP, WIDTH, plain, plural, shorten, table, wrap
from ldpsim.errors import LdpSimError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Version(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (not for every command)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from ldpsim import __version__

        self.version = f"ldpsim {__version__}"
        super().__call__(parser, namespace, values, option_string)


#: ``--allow-outside-data`` of every command that loads a scenario file.
_OUTSIDE_HELP = (
    "read data files the scenario names (population.file) from outside its folder too: absolute paths, "
    "'..', symlinks out of it (default: only regular files in the scenario's folder or below)"
)
#: ``--allow-long-run`` of ``ldpsim run`` and ``ldpsim check`` (sim.scenario.common.MAX_RUN_SECONDS).
_LONG_HELP = (
    "run (or check) a scenario estimated at more than an hour on one core, which is otherwise refused "
    "when the file is loaded (a multi-party broadcast or study of many rounds)"
)
#: ``--force`` of every command that writes a folder of files (``ldpsim run`` has none: use --resume).
_FORCE_HELP = "write into a non-empty --out: its files of the same names are replaced at the end, others are kept"
#: ``--no-progress`` of ``ldpsim run`` and ``ldpsim sweep``.
_PROGRESS_HELP = "no progress bar (it is off anyway when stderr is not a terminal)"
#: ``--seed`` of the commands whose seed defaults to fresh entropy (``demo``, ``audit``).
_SEED_HELP = "root seed (default: fresh entropy, printed)"


def _say(text: str, hang: int = 2) -> None:
    """Print ``text`` wrapped within WIDTH (100) columns (continuation lines indented ``hang`` more)."""
    print(wrap(text, hang=hang))


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ldpsim", description="Simulate and validate local differential privacy.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser(
        "run",
        help="run a scenario file and write its report under reports/",
        description="Run a scenario (a TOML file, or a shipped scenario by name: `ldpsim scenarios` lists them): "
        "replications of the SimPy model of clients, network, server and analyst. Writes "
        "reports/<scenario>/<run-id>/ with results.csv, figures, summary.md, report.html, metadata.json and the "
        "scenario as run, and prints the final estimates.",
    )
    run.add_argument(
        "file",
        nargs="?",
        help="scenario file (TOML) or shipped scenario name (ldpsim scenarios lists them); not needed with --resume",
    )
    _add_seed(run, "root seed (default: the scenario's simulation.seed, else fresh entropy)")
    run.add_argument("--replications", type=int, default=None, help="number of replications (default: the scenario's)")
    _add_where_options(run, "the replications")
    run.add_argument(
        "--out",
        default=None,
        help="run directory to create, new or empty (default reports/<scenario>/<UTC time>-seed<seed>)",
    )
    run.add_argument(
        "--resume",
        metavar="DIR",
        default=None,
        help="finish an interrupted run in DIR (same seed and scenario); a finished one is left as it is",
    )
    _add_no_progress(run)
    _add_data_options(run)
    run.set_defaults(func=_run)

    sweep = sub.add_parser(
        "sweep",
        help="run a scenario at every point of a grid of its keys: one table, a summary and a figure",
        description="Run a scenario file at every point of a grid of values of its keys (--grid 'KEY=[v1, v2]', "
        "repeatable, and/or a [sweep] table in the file): the cartesian product, the last key varying fastest, "
        "every point with the same seed (common random numbers), each as a run directory under OUT/points/. "
        "Writes OUT/sweep.csv (the swept keys, then every point's results rows), summary.csv (measured error "
        "of the final estimates next to the exact one, per point and task), error.png and sweep.json.",
    )
    sweep.add_argument(
        "file", nargs="?", help="scenario file (TOML) or shipped scenario name; not needed with --resume"
    )
    sweep.add_argument(
        "--grid",
        nargs="+",
        action="extend",
        default=None,
        metavar="KEY=[V,...]",
        help="a dotted scenario key and its values as a TOML or JSON list, e.g. 'mechanism.eps=[0.5, 1, 2]'; "
        "adds to (or replaces keys of) the file's [sweep] table",
    )
    _add_seed(sweep, "root seed of every point (default: the scenario's simulation.seed, else fresh entropy)")
    sweep.add_argument(
        "--replications", type=int, default=None, help="replications of every point (default: the scenario's)"
    )
    _add_where_options(sweep, "every point's replications")
    sweep.add_argument(
        "--out",
        default=None,
        help="sweep folder to create, new or empty (default reports/<scenario>-sweep/<UTC time>-seed<seed>)",
    )
    sweep.add_argument("--resume", metavar="DIR", default=None, help="finish an interrupted sweep in DIR")
    sweep.add_argument(
        "--no-point-reports",
        action="store_true",
        help="no report of each point's own (a second or two of figures per point; `ldpsim report DIR` "
        "makes one later); the sweep's table, summary and figure are the same",
    )
    _add_no_progress(sweep)
    _add_data_options(
        sweep, _OUTSIDE_HELP + "; an absolute path given for population.file in --grid is read anyway", long_run=False
    )
    sweep.set_defaults(func=_sweep)

    scenarios = sub.add_parser(
        "scenarios",
        help="list the scenarios shipped with ldpsim, or copy one to edit",
        description="List the scenario files shipped with ldpsim, one line each (`ldpsim run NAME` runs one), "
        "or write an editable copy of one, with the data files it reads, into a folder: "
        "`ldpsim scenarios copy NAME [--to DIR] [--force]`.",
    )
    scenarios.set_defaults(func=_scenarios, action=None)
    scenario_actions = scenarios.add_subparsers(dest="action", metavar="copy", parser_class=_Parser)
    copy = scenario_actions.add_parser(
        "copy",
        help="write an editable copy of a shipped scenario (and the data it reads)",
        description="Write an editable copy of the shipped scenario NAME into DIR: NAME.toml and the data files "
        "it reads (e.g. data/anes96.csv with data/README.md, at the same relative paths, so the copy runs as it "
        "is). Existing files are left alone unless --force; then `ldpsim run DIR/NAME.toml`.",
    )
    copy.add_argument("name", metavar="NAME", help="a shipped scenario (`ldpsim scenarios` lists them)")
    copy.add_argument(
        "--to",
        default=".",
        metavar="DIR",
        help="folder to write into, created if need be (default: the current folder)",
    )
    copy.add_argument("--force", action="store_true", help="overwrite files that exist already")

    check = sub.add_parser(
        "check",
        help="validate a scenario file without running it",
        description="Read and validate a scenario file (or a shipped scenario by name) exactly as `ldpsim run` "
        "would, build its mechanisms and check its work and row budgets, then print what it would run; nothing "
        "is simulated or written. A problem is one line naming the key, and exit code 2.",
    )
    check.add_argument("file", help="scenario file (TOML) or shipped scenario name")
    _add_data_options(check)
    check.set_defaults(func=_check)

    report = sub.add_parser(
        "report",
        help="rebuild the HTML reports of runs and reproductions, and reports/index.html",
        description="Re-render the report files (report.html, summary.md, figures) of every finished run under DIR "
        "from its results.csv and scenario.toml, and the summary.md and report.html of every reproduction from its "
        "summary.csv, metadata.json and figures; then write DIR/index.html listing them. DIR may also be one run "
        "directory or one reproduction folder (then only its report is rebuilt). Folders that cannot be re-rendered "
        "are skipped with a line on stderr.",
    )
    report.add_argument(
        "dir",
        nargs="?",
        default="reports",
        help="a folder of runs and reproductions, or one of them (default: reports)",
    )
    report.add_argument(
        "--open", action="store_true", help="open the index (or the run's report.html) in the default browser"
    )
    report.set_defaults(func=_report)

    demo = sub.add_parser(
        "demo",
        help="privatise answers with randomized response and estimate their frequencies",
        description="Draw n answers from a Zipf-like distribution over k categories, privatise each "
        "with k-ary randomized response, and print the true and estimated frequencies side by side.",
    )
    demo.add_argument("--n", type=int, default=1_000_000, help="number of clients (default 1,000,000; at most 10^9)")
    demo.add_argument("--k", type=int, default=5, help="number of answer categories (default 5; at most 10,000)")
    demo.add_argument("--eps", type=float, default=1.0, help="privacy level eps (default 1.0)")
    _add_seed(demo)
    demo.set_defaults(func=_demo)

    risk = sub.add_parser(
        "risk",
        help="what a respondent risks: how often the server guesses an answer from one report, exactly",
        description="The Bayes-optimal accuracy of guessing a respondent's answer from one report of a catalog "
        "mechanism (a spec NAME:k=v,..., e.g. randomized_response:k=8,eps=2) when answers follow --prior, against "
        "the baseline of guessing the most common answer; the advantage, the ratio, the expected posterior of the "
        "true answer and the worst and average posterior-to-prior ratios. Exact for finite mechanisms (the accuracy "
        "too for unary encoding and subset selection); Monte Carlo with standard errors otherwise. Prints only.",
    )
    risk.add_argument("spec", metavar="MECHANISM", help="a catalog spec with its k and eps: NAME:k=K,eps=E,...")
    risk.add_argument(
        "--prior", default="uniform", help="the answers' law: uniform (default), zipf:S, or k comma-separated weights"
    )
    _add_seed(risk)
    risk.set_defaults(func=_risk)

    comp = sub.add_parser(
        "compose",
        help="privacy of composition: the exact region next to the closed-form bounds",
        description="k-fold adaptive composition of (eps, delta)-DP mechanisms: prints delta_total at a grid "
        "of eps_total (or eps_total for --target-delta) for the exact optimal composition (Kairouz-Oh-Viswanath "
        "Theorem 3.3) and each bound (basic, Dwork-Rothblum-Vadhan, Theorem 3.4 in both forms), and writes "
        "table.csv and region.png comparing their privacy regions. With --pairs and/or --mechanism instead: "
        "any list of different (eps, delta) pairs and library mechanisms, composed by the accountant (exact "
        "for pairs and finite mechanisms, pessimistic with its error for noise mechanisms) next to basic "
        "composition and Theorem 3.5.",
    )
    comp.add_argument("--eps", type=float, default=None, help="eps of each mechanism")
    comp.add_argument("--delta", type=float, default=None, help="delta of each mechanism (default 0)")
    count = comp.add_mutually_exclusive_group()
    count.add_argument("--compositions", type=int, metavar="K", help="number of mechanisms composed")
    count.add_argument(
        "-k",
        type=int,
        dest="k_deprecated",
        metavar="K",
        help="deprecated spelling of --compositions (goes away in 0.2)",
    )
    comp.add_argument(
        "--pairs",
        nargs="+",
        default=None,
        metavar="EPS,DELTA[xN]",
        help='(eps, delta) pairs, e.g. "1,1e-6 0.5,0x10" (xN: N of them); instead of --eps/--compositions',
    )
    comp.add_argument(
        "--mechanism",
        action="append",
        default=None,
        metavar="SPEC[xN]",
        help="a library mechanism, NAME:param=value,... as in ldpsim audit (xN: N uses); repeatable",
    )
    comp.add_argument(
        "--eps-total",
        type=float,
        nargs="+",
        default=None,
        metavar="E",
        help="eps_total values (default: 12 points up to where the exact delta meets its floor)",
    )
    comp.add_argument(
        "--target-delta",
        type=float,
        nargs="+",
        default=None,
        metavar="D",
        help="print eps_total for these total deltas instead",
    )
    _add_output_folder(
        comp,
        "reports/compose/eps<eps>-delta<delta>-k<K>/<UTC time>, or under "
        "reports/compose/mixed-<n>-<hash>/ with --pairs/--mechanism",
    )
    comp.add_argument("--no-figure", action="store_true", help="skip region.png")
    comp.set_defaults(func=_compose)

    rep = sub.add_parser(
        "reproduce",
        help="regenerate a figure or table of the papers we implement (CSV + PNG under reports/reproduce/)",
        description="Regenerate a figure or table of the papers we implement (Kairouz, Oh and Viswanath 2014 and "
        "2015; Dong, Su and Zhang 2021; docs/references.md): writes its data (CSV), figures (PNG), summary.csv, "
        "summary.md, report.html and metadata.json under reports/reproduce/NAME/ (or --out), and prints our numbers "
        "beside the paper's. `ldpsim reproduce --list` names every reproduction.",
    )
    rep.add_argument("name", nargs="?", metavar="NAME", help="the reproduction to run (see --list)")
    rep.add_argument("--list", action="store_true", help="name every reproduction with a one-line description")
    _add_seed(rep, "seed of the random instances (default 2014)")
    rep.add_argument(
        "--instances", type=int, default=None, help="number of random instances (default 100, the papers' setting)"
    )
    _add_output_folder(rep, "reports/reproduce/NAME/<UTC time>-seed<seed>")
    rep.add_argument("--workers", type=int, default=1, help="worker processes for the linear programs (default 1)")
    rep.add_argument(
        "--scheduler",
        default=None,
        metavar="SPEC",
        help="run the pieces of work on a Dask cluster: local:N or a scheduler address (tcp://host:8786); "
        'needs pip install "ldpsim[distributed]"',
    )
    rep.add_argument(
        "--eps-grid",
        nargs="+",
        default=None,
        metavar="E",
        help="the privacy levels to use instead of the reproduction's own, e.g. 0.1,1,10 or 0.1 1 10",
    )
    rep.add_argument(
        "--k",
        default=None,
        metavar="K[,K...]",
        help="alphabet sizes, for a reproduction that takes them (kov-fig4-draws); others refuse --k",
    )
    rep.add_argument(
        "--seeds",
        default=None,
        metavar="A..B",
        help="run for every seed from A to B: each into its own subfolder seed<S> of the output folder "
        "(kov-fig4-draws: the seeds of its draws); not with --seed",
    )
    rep.set_defaults(func=_reproduce)

    rec = sub.add_parser(
        "recommend",
        help="which frequency oracle for k answers at eps and n respondents: exact losses side by side",
        description="Score every frequency oracle of the catalog (and, for k <= 24, the linear program's optimal "
        "mechanism for mutual information) by the exact variance of its unbiased estimator at k answers, privacy eps "
        "and n respondents, with report sizes and server cost, sorted; and draw each oracle's loss against eps with "
        "the points where two swap places. Writes recommend.csv, curves.csv, crossings.csv, recommend.png and "
        "summary.md under reports/recommend/ (or --out).",
    )
    rec.add_argument("--k", type=int, default=None, help="number of answers (2 .. 10^7); required without --survey")
    rec.add_argument(
        "--eps", type=float, default=None, help="privacy level of one report, in (0, 50]; required without --survey"
    )
    rec.add_argument("--n", type=float, default=None, help="number of respondents, e.g. 1e6; required without --survey")
    rec.add_argument(
        "--survey",
        default=None,
        metavar="FILE",
        help="instead: a survey scenario with [[questions]] (a file or a shipped name): how to spend its budget, "
        "the exact variances of the equal split, the optimal split and one random question, without running it",
    )
    rec.add_argument(
        "--utility",
        default="mse",
        help="mse (exact, default), l1 (normal approximation) or kl (E KL(p || estimate), second order)",
    )
    rec.add_argument(
        "--prior", default="uniform", help="true distribution: uniform (default), zipf:S, or k comma-separated weights"
    )
    rec.add_argument(
        "--bits", type=float, default=None, metavar="B", help="only oracles whose reports take at most B bits"
    )
    _add_output_folder(rec, "reports/recommend/k<K>-eps<E>-n<N>/<UTC time>")
    rec.add_argument("--no-figure", action="store_true", help="skip recommend.png (and the eps sweep behind it)")
    rec.set_defaults(func=_recommend)

    priv = sub.add_parser(
        "privatize",
        help="privatise real answers (a CSV column) with a catalog mechanism: the reports a client would send",
        description="Read true answers from one column of ANSWERS.csv (labels for a frequency oracle, numbers for "
        "a numeric mechanism), privatise each with the catalog mechanism SPEC (NAME:k=v,..., as ldpsim risk takes "
        "it; k defaults to the number of labels) and write a CSV of reports in the format of docs/analyse.md. "
        "Every draw comes from numpy's generators seeded by --seed, one per chunk of 65,536 answers, the streams "
        "a simulated run with that seed privatises its respondents with: the same seed gives the same bytes, and "
        "the reports of such a run (docs/analyse.md). --rng os draws from the operating system's generator "
        "instead (no seed; the discrete and snapped samplers). Noise on numbers uses a sampler whose privacy "
        "holds for the doubles it produces, by default. The file is written whole at the end, or not at all.",
    )
    priv.add_argument("answers", metavar="ANSWERS", help="a CSV file with a header row, one answer per row")
    priv.add_argument(
        "--mechanism", required=True, metavar="SPEC", help="e.g. oue:k=8,eps=1 or piecewise:eps=1,lo=0,hi=100"
    )
    _add_seed(priv)
    priv.add_argument("--column", default=None, help="the column of the answers (default: the only column)")
    priv.add_argument(
        "--labels",
        default=None,
        metavar="A,B,...",
        help="the answers' labels in the order of the mechanism's symbols (default: those in the file, sorted)",
    )
    priv.add_argument(
        "--keep",
        default=None,
        metavar="COL,...",
        help="columns copied beside the reports (e.g. a group or a weight for ldpsim analyse)",
    )
    priv.add_argument(
        "--out", default=None, metavar="FILE", help="the reports file to write (default: ANSWERS-reports.csv beside it)"
    )
    priv.add_argument(
        "--sampler",
        default=None,
        metavar="NAME",
        help="float, discrete or snapped, for a mechanism that adds noise to numbers (laplace_bounded; default: "
        "snapped, whose privacy holds for the doubles it produces; float: the textbook sampler; "
        "docs/floating-point.md)",
    )
    priv.add_argument(
        "--rng",
        default=None,
        choices=["os"],
        help="os: draw from the operating system's generator (reports nobody can remake from a seed; the discrete "
        "and snapped samplers)",
    )
    priv.add_argument("--force", action="store_true", help="replace --out if it exists")
    _add_no_progress(priv)
    priv.set_defaults(func=_privatize)

    ana = sub.add_parser(
        "analyse",
        help="estimates and tests from a CSV of privatised reports, as a run without truths",
        description="Read a CSV of reports of the catalog mechanism SPEC (the format of docs/analyse.md, as ldpsim "
        "privatize writes it) in chunks, check every row (a bad one is one line naming its row and column, and "
        "nothing is written) and write OUT/ with estimates.csv (unbiased frequencies, projected on the simplex, "
        "with intervals; numeric mechanisms: the mean), tests.csv (uniformity; with --groups homogeneity), "
        "analysis.json, summary.md and report.html.",
    )
    ana.add_argument(
        "reports",
        metavar="REPORTS",
        help="a CSV file of reports with a header row, or an analysis file of several questions "
        '(analysis.toml, kind = "analysis": docs/analyse.md)',
    )
    ana.add_argument(
        "--mechanism", metavar="SPEC", help="the catalog spec the reports were made with (required for a CSV file)"
    )
    ana.add_argument("--column", default=None, help="the column of the reports (default: report, or the only column)")
    ana.add_argument("--groups", default=None, metavar="COLUMN", help="a column of group labels: estimates per group")
    ana.add_argument(
        "--weights", default=None, metavar="COLUMN", help="a column of weights > 0: weighted (Hajek) estimates too"
    )
    ana.add_argument(
        "--labels", default=None, metavar="A,B,...", help="names of the k answers, in symbol order (default 0..k-1)"
    )
    ana.add_argument(
        "--alpha", type=float, default=None, help="level of the tests; intervals at 1 - alpha (default 0.05)"
    )
    ana.add_argument(
        "--sequential",
        action="store_true",
        help="also the anytime-valid uniformity test on every report in file order, for vector or hashed reports "
        "(finite mechanisms have theirs from the counts)",
    )
    _add_seed(ana, "seed of the tests' Monte Carlo p-values (default: fresh entropy, printed)")
    _add_output_folder(ana, "reports/analyse/<REPORTS name>/<UTC time>")
    _add_no_progress(ana)
    ana.set_defaults(func=_analyse)

    aud = sub.add_parser(
        "audit",
        help="empirical privacy audit: a lower bound on eps of a library mechanism from samples",
        description="Draw outputs of a library mechanism (or a deliberately broken one) on candidate pairs of "
        "inputs and print eps_LB, a lower bound on its eps valid with probability >= 1 - alpha, next to the "
        "claimed and the exact eps, with the witness (inputs and event) and the samples used. SPEC is NAME or "
        "NAME:param=value,...; `ldpsim audit --list` names every mechanism and its parameters.",
    )
    aud.add_argument("spec", nargs="?", metavar="SPEC", help="e.g. randomized_response:k=4,eps=1 or broken.doubled_rr")
    aud.add_argument("--list", action="store_true", help="name every auditable mechanism with its parameters")
    aud.add_argument("--n", type=int, default=1_000_000, help="outputs per input (the budget; default 1,000,000)")
    aud.add_argument(
        "--alpha", type=float, default=0.05, help="the bound fails with probability <= alpha (default 0.05)"
    )
    _add_seed(aud)
    aud.add_argument("--sequential", action="store_true", help="sample in rounds, stop as soon as the claim is refuted")
    aud.add_argument(
        "--first", type=int, default=1000, help="with --sequential: size of the first batch (default 1000)"
    )
    aud.add_argument("--black-box", action="store_true", help="use samples only, not the mechanism's exact density")
    aud.add_argument(
        "--exact-floats",
        action="store_true",
        help="also search events on the outputs' exact float bits (low-order mantissa bits; Mironov 2012)",
    )
    aud.add_argument(
        "--claim-eps", type=float, default=None, help="audit this eps claim instead of the mechanism's own"
    )
    aud.add_argument(
        "--claim-delta", type=float, default=None, help="audit this delta claim instead of the mechanism's own"
    )
    aud.add_argument(
        "--pairs", default=None, help='candidate input pairs as JSON, e.g. "[[0, 1], [1, 2]]" (default: the catalog\'s)'
    )
    aud.add_argument("--json", action="store_true", help="print the result as one JSON object")
    aud.set_defaults(func=_audit)
    return parser


def _add_seed(p: argparse.ArgumentParser, text: str = _SEED_HELP) -> None:
    """--seed: an integer, None (the command's default) when not given; ``text``, its help,
    says what it seeds and that default."""
    p.add_argument("--seed", type=int, default=None, help=text)


def _add_output_folder(p: argparse.ArgumentParser, default: str) -> None:
    """--out and --force of a command that writes a folder of files whole (compose, reproduce,
    recommend: :class:`ldpsim._files.OutputFolder`); ``default`` is where it goes without --out."""
    p.add_argument("--out", default=None, help=f"output folder, new or empty (default: a new folder {default})")
    p.add_argument("--force", action="store_true", help=_FORCE_HELP)


def _add_no_progress(p: argparse.ArgumentParser) -> None:
    """--no-progress (ldpsim run and sweep)."""
    p.add_argument("--no-progress", action="store_true", help=_PROGRESS_HELP)


def _add_data_options(p: argparse.ArgumentParser, outside_help: str = _OUTSIDE_HELP, long_run: bool = True) -> None:
    """--allow-outside-data and (``long_run``) --allow-long-run of a command that loads a
    scenario file (run, check, sweep)."""
    p.add_argument("--allow-outside-data", action="store_true", help=outside_help)
    if long_run:
        p.add_argument("--allow-long-run", action="store_true", help=_LONG_HELP)


def _add_where_options(p: argparse.ArgumentParser, what: str) -> None:
    """--workers, --scheduler and --shards: where ``what`` run (ldpsim run and sweep)."""
    p.add_argument("--workers", type=int, default=1, help=f"worker processes for {what} (default 1: in-process)")
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="SPEC",
        help=f"run {what} on a Dask cluster: local:N (N local worker processes) or a scheduler address "
        '(tcp://host:8786); needs pip install "ldpsim[distributed]"',
    )
    p.add_argument(
        "--shards",
        type=int,
        default=1,
        metavar="N",
        help="cut each replication's population into N pieces run as separate tasks (individual-mode "
        "surveys; the files are the same whatever N; with --scheduler, one replication spreads over "
        "the cluster)",
    )


def _check_where(args: argparse.Namespace) -> None:
    """--scheduler (without --workers, installed) and --out, before any scenario is read."""
    if args.scheduler is not None:
        from ldpsim import cluster

        if args.workers != 1:
            raise LdpSimError(
                f"--workers: got {args.workers} with --scheduler, expected one of them (the cluster's workers run "
                "the replications)"
            )
        cluster.parse(args.scheduler)
        cluster.check_installed()
    if args.out is not None:  # the same check as every command's --out
        from ldpsim._files import check_output_folder
        from ldpsim.runs import stopped_while_starting

        # a run killed while starting left nothing worth keeping there: a new run takes it
        check_output_folder(
            args.out, force=stopped_while_starting(args.out), option="--out", hint="use --resume to continue"
        )


def _run(args: argparse.Namespace) -> int:
    from ldpsim.runs import RunInterrupted, RunOptions

    try:
        if args.resume is not None:
            if args.file is not None or args.seed is not None or args.replications is not None or args.out is not None:
                raise LdpSimError(
                    "--resume: got other options too, expected only --workers, --scheduler, --shards or "
                    "--allow-outside-data with --resume"
                )
        elif args.file is None:
            raise LdpSimError("file: got nothing, expected a scenario file (or --resume DIR)")
        _check_where(args)
        if args.resume is not None:
            from ldpsim.runs import finished_replications

            done = finished_replications(args.resume)
            if done is not None:  # nothing to run: the report stays as it is (ldpsim report redoes it)
                _say(
                    f"{args.resume}: already complete ({done} replication{'s' if done != 1 else ''}); nothing to "
                    f"resume; its report is {os.path.join(args.resume, 'summary.md')} (ldpsim{KEEP}report{KEEP}"
                    f"{shlex.quote(args.resume)} rebuilds it)"
                )
                return 0
        from ldpsim.sim import resume_run, run_scenario

        progress = not args.no_progress
        scenario = None
        if args.resume is None:
            from ldpsim._shipped import resolve
            from ldpsim.sim.scenario import allow_long_runs, load_scenario

            with allow_long_runs(args.allow_long_run):
                # args.file is set here (checked above)
                scenario = load_scenario(
                    resolve(cast(str, args.file)), allow_outside_data=args.allow_outside_data
                )  # before any
            # cluster starts: a bad file fails at once
            from ldpsim.runs import check_shards
            from ldpsim.sim.studies import study_of

            check_shards(study_of(scenario), args.shards)
        with _cluster(args.scheduler) as where:
            executor, workers = (where.executor, where.workers) if where is not None else (None, args.workers)
            options = RunOptions(workers=workers, executor=executor, progress=progress, shards=args.shards)
            if args.resume is not None:
                result = resume_run(args.resume, allow_outside_data=args.allow_outside_data, options=options)
            else:
                from ldpsim.sim.scenario import allow_long_runs

                fresh = replace(options, seed=args.seed, replications=args.replications, out=args.out)
                with allow_long_runs(args.allow_long_run):  # --replications rebuilds the scenario
                    result = run_scenario(scenario, options=fresh)
    except RunInterrupted as exc:
        print(f"ldpsim: {exc}", file=sys.stderr)
        return 130
    from ldpsim.sim.studies import study_of

    for line in study_of(result.scenario).console(result):  # what differs by kind is the study's
        print(line)
    _say(f"report: {result.run_dir / 'summary.md'}")
    from ldpsim.browse import refresh_index

    index = refresh_index(result.run_dir)  # reports/index.html lists this run too
    _say(f"in a browser: {result.run_dir / 'report.html'}")
    if index is not None:
        _say(f"every run: {index}")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from ldpsim.sweep import SweepInterrupted

    if args.file is None and args.resume is None and args.grid and "=" not in args.grid[-1]:
        args.file = args.grid.pop()  # `--grid K=[..] FILE`: the file came after the grid's entries
    try:
        if args.resume is not None:
            given = [
                o
                for o, v in (
                    ("FILE", args.file),
                    ("--grid", args.grid),
                    ("--seed", args.seed),
                    ("--replications", args.replications),
                    ("--out", args.out),
                )
                if v is not None
            ]
            if given:
                raise LdpSimError(
                    f"--resume: got {given[0]} too, expected only --workers, --scheduler, --shards or "
                    "--allow-outside-data with --resume"
                )
        elif args.file is None:
            raise LdpSimError("file: got nothing, expected a scenario file (or --resume DIR)")
        _check_where(args)
        from ldpsim import sweep as sw

        progress = not args.no_progress
        path = None
        if args.resume is None:
            from ldpsim._shipped import resolve
            from ldpsim.sim.scenario.common import read_scenario_text

            path = resolve(args.file)
            text, where = read_scenario_text(path)
            sw.plan(
                text, where, args.grid, replications=args.replications, allow_outside_data=args.allow_outside_data
            ).check_shards(args.shards)  # every point
            # checked before a cluster starts
        with _cluster(args.scheduler) as where_:
            executor, workers = (where_.executor, where_.workers) if where_ is not None else (None, args.workers)
            if args.resume is not None:
                result = sw.resume_sweep(
                    args.resume,
                    workers=workers,
                    executor=executor,
                    progress=progress,
                    shards=args.shards,
                    point_reports=not args.no_point_reports,
                    allow_outside_data=args.allow_outside_data,
                )
            else:
                result = sw.run_sweep(
                    cast("Path", path),  # set above when not resuming
                    args.grid,
                    seed=args.seed,
                    replications=args.replications,
                    workers=workers,
                    out=args.out,
                    executor=executor,
                    progress=progress,
                    shards=args.shards,
                    point_reports=not args.no_point_reports,
                    allow_outside_data=args.allow_outside_data,
                )
    except SweepInterrupted as exc:
        print(f"ldpsim: {exc}", file=sys.stderr)
        return 130
    grid = result.grid
    _say(
        f"sweep of {len(result.run_dirs)} grid point(s) "
        f"({' x '.join(f'{k} ({len(v)})' for k, v in zip(grid.keys, grid.values))}), {result.replications} "
        f"replication(s) each, seed {result.seed} (the same for every point)"
    )
    if len(result.summary):
        shown = result.summary.assign(n_received=result.summary["n_received"].round().astype("int64"))  # a mean count
        print(table(shown, float_format=lambda x: f"{x:.5g}", na_rep="", keys=len(grid.keys), full=result.summary_path))
        _say(
            "rmse: measured root mean squared error of the final frequency estimates over replications and "
            "categories; theory_rmse: the same mean of their exact standard errors; ratio = rmse / theory_rmse"
        )
    else:
        _say(
            "no summary: it measures the error of a survey's frequency estimates, and these points have none "
            "(sweep.csv holds every point's results)"
        )
    _say(f"table: {result.table_path}")
    if result.figure_path is not None:
        _say(f"figure: {result.figure_path}")
    _say(f"points: {result.out_dir / 'points'}")
    return 0


@contextlib.contextmanager
def _cluster(spec: str | None):
    """The Dask cluster of ``--scheduler`` for the block (None without one); says where its
    dashboard is."""
    if spec is None:
        yield None
        return
    from ldpsim import cluster

    with cluster.connect(spec) as where:
        _say(
            f"dask: {where.workers} worker(s) at {spec}" + (f"; dashboard {where.dashboard}" if where.dashboard else "")
        )
        yield where


def _scenarios(args: argparse.Namespace) -> int:
    from ldpsim import _shipped

    if args.action == "copy":
        written = _shipped.copy(args.name, args.to, force=args.force)
        for path in written:
            _say(f"wrote {path}")
        _say(f"edit it, then: ldpsim{KEEP}run{KEEP}{written[0]}")
        return 0
    rows = _shipped.describe()
    width = max(len(name) for name, _ in rows)
    for name, line in rows:  # one line each, the description shortened to the room left
        print(f"{name:<{width}}  {shorten(line, WIDTH - width - 2)}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from ldpsim._shipped import resolve
    from ldpsim.sim.scenario import allow_long_runs, load_scenario

    path = resolve(args.file)
    with allow_long_runs(args.allow_long_run):
        sc = load_scenario(path, allow_outside_data=args.allow_outside_data)
    spec = sc.spec
    size = getattr(sc, "size", None)
    who = f", {size:,} respondents" if isinstance(size, int) else ""
    valid = f"a valid {sc.kind} scenario '{sc.name}'".replace(" ", KEEP)
    _say(
        f"{path}: {valid}{who}, {spec.simulation.replications} replication(s), "
        f"seed {spec.simulation.seed if spec.simulation.seed is not None else 'fresh entropy'}"
    )
    _say(f"run it: ldpsim{KEEP}run{KEEP}{args.file}")  # the command on one line, to copy
    return 0


def _report(args: argparse.Namespace) -> int:
    from ldpsim.browse import rebuild

    done = rebuild(args.dir, open_browser=args.open)
    runs = len(done.runs) - len(done.reproductions)
    _say(
        f"rebuilt the reports of {runs} run(s) and {len(done.reproductions)} reproduction(s)"
        + (f", skipped {len(done.skipped)}" if done.skipped else "")
    )
    _say(f"open: {done.page}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from ldpsim._demo import run_demo

    demo = run_demo(args.n, args.k, args.eps, args.seed)
    mech = demo.mechanism
    _say(
        f"ldpsim demo: {demo.n:,} clients, k = {mech.k}, randomized response at eps = {mech.eps:g} "
        f"(seed{KEEP}{demo.seed})"
    )
    _say(
        f"simulated in {demo.seconds:.3f} s; keep probability {mech.keep:.4f}, true-answer probability "
        f"{mech.p_keep:.4f}"
    )
    print(table(demo.table, float_format=lambda x: f"{x:.5f}"))
    _say("z = (estimated - true) / std_error; |z| > 3 should be rare.")
    return 0


def _risk(args: argparse.Namespace) -> int:
    import pandas as pd

    from ldpsim.mechanisms import catalog
    from ldpsim.risk import MC_MAX_K, QUANTITIES, inference_risk
    from ldpsim.utility.recommend import parse_prior

    try:
        mech = catalog.parse(args.spec).mechanism
    except LdpSimError as exc:
        raise LdpSimError(f"MECHANISM: {exc}") from None
    k = int(getattr(mech, "k", 0) or 0)
    if k < 1 or not hasattr(mech, "privatize"):
        raise LdpSimError(f"MECHANISM: got {args.spec!r}, expected a frequency oracle over k answers")
    prior = parse_prior(args.prior, k)  # one line naming --prior otherwise
    finite = getattr(mech, "output_size", None) is not None and hasattr(mech, "matrix")
    if (finite and k * int(mech.output_size) > 10**7) or (not finite and k > MC_MAX_K):
        raise LdpSimError(
            f"MECHANISM: got {args.spec!r} with {k} answers, expected at most {MC_MAX_K} answers for an oracle "
            "estimated by Monte Carlo (k log-densities per draw), or a finite mechanism of at most 10^7 matrix entries"
        )
    result = inference_risk(mech, prior, rng=args.seed)
    _say(f"ldpsim risk: {mech!r}, {k} answers, prior {args.prior} ({result.method})")
    rows = []
    for name in QUANTITIES:
        se = result.standard_errors.get(name)
        shown = "exact" if se is None else ("a lower bound (the largest seen)" if math.isnan(se) else se)
        rows.append({"quantity": name, "value": getattr(result, name), "std_error": shown})
    print(table(pd.DataFrame(rows), float_format=lambda x: f"{x:.6g}"))
    _say(
        f"the best guess from a report is right {result.accuracy:.2%} of the time, against {result.baseline:.2%} "
        f"without it; eps-LDP caps the ratio at e^eps"
    )
    return 0


def _compose_items(pairs: Sequence[str] | None, mechanisms: Sequence[str] | None) -> list:
    """The items of ``ldpsim compose --pairs/--mechanism``: (eps, delta) pairs and mechanisms
    built from catalog specs, each with an optional ``xN`` (or ``*N``) count."""
    from ldpsim.privacy.guarantees import EpsDelta
    from ldpsim.report import compose as cr

    count = re.compile(r"^(.*?)\s*[x*]\s*(\d+)\s*$", re.S)
    items = []
    for token in [t for chunk in pairs or [] for t in chunk.split()]:
        m = count.match(token)
        body, n = (m.group(1), int(m.group(2))) if m else (token, 1)
        parts = body.split(",")
        try:
            eps, delta = float(parts[0]), float(parts[1]) if len(parts) == 2 else 0.0
            ok = len(parts) <= 2 and math.isfinite(eps) and eps >= 0 and 0 <= delta <= 1 and n >= 1
        except ValueError:
            ok = False
        if not ok:
            raise LdpSimError(
                f"--pairs: got {token!r}, expected EPS,DELTA with eps >= 0 and delta in [0, 1], "
                "optionally xN with N >= 1 (e.g. 0.5,1e-6x10)"
            )
        items.append(cr.Item(EpsDelta(eps, delta), n, f"({eps:g}, {delta:g})", eps, delta))
    if mechanisms:
        from ldpsim.mechanisms import catalog

        for text in mechanisms:
            m = count.match(text)
            spec, n = (m.group(1), int(m.group(2))) if m else (text, 1)
            if n < 1:
                raise LdpSimError(f"--mechanism: got {text!r}, expected SPEC or SPECxN with N >= 1")
            try:
                built = catalog.parse(spec)
            except LdpSimError as exc:
                raise LdpSimError(f"--mechanism: {exc}") from None
            mech = built.mechanism
            if not callable(getattr(mech, "guarantee", None)):
                raise LdpSimError(f"--mechanism: got {spec!r}, expected a mechanism with a privacy guarantee")
            pure = float(mech.epsilon(0.0))
            eps_i, delta_i = (pure, 0.0) if math.isfinite(pure) else (None, None)
            items.append(cr.Item(mech.guarantee(), n, built.spec, eps_i, delta_i))
    return items


def _compose_mixed(args: argparse.Namespace) -> int:
    from ldpsim.report import compose as cr

    given = [
        name
        for name, v in (
            ("--eps", args.eps),
            ("--delta", args.delta),
            ("--compositions", args.compositions),
            ("-k", args.k_deprecated),
        )
        if v is not None
    ]
    if given:
        raise LdpSimError(
            f"--pairs/--mechanism: got {given[0]} too, expected either --pairs/--mechanism or --eps with --compositions"
        )
    items = _compose_items(args.pairs, args.mechanism)
    deltas, files, notes, label = cr.run_mixed(
        items,
        eps_totals=args.eps_total,
        delta_totals=args.target_delta,
        out=args.out,
        figure=not args.no_figure,
        force=args.force,
    )
    what = "eps_total at each target delta_total" if args.target_delta is not None else "delta_total at each eps_total"
    listed = ", ".join((f"{it.label}" + (f" x{it.count}" if it.count > 1 else "")).replace(" ", KEEP) for it in items)
    _say(f"composition of {sum(it.count for it in items)} mechanisms ({listed}): {what}")
    labels = {"exact": label, **{m: cr.MIXED_LABELS[m] for m in ("basic", "kov_heterogeneous")}}
    print(table(deltas.rename(columns=labels), float_format=lambda x: f"{x:.6g}", full=_named(files, "table.csv")))
    if label.startswith("pessimistic"):
        _say(
            "pessimistic = an upper bound (noise mechanisms discretised on a lattice); its largest relative "
            "error here, estimated by redoing the composition at twice the lattice step, is in the header"
        )
    else:
        _say("exact = the optimal composition of these guarantees (no mechanisms meeting them compose worse)")
    if "basic" in deltas.columns:
        _say("bounds are upper bounds (Thm 3.5: Kairouz-Oh-Viswanath's heterogeneous composition theorem)")
    for note in notes:
        _say(note)
    _say(f"files: {', '.join(str(p) for p in files)}")
    return 0


def _named(files: Sequence[object], name: str) -> object:
    """The file of ``files`` called ``name`` (None if there is none)."""
    return next((p for p in files if getattr(p, "name", None) == name), None)


#: Headers of ``ldpsim compose``'s table shorter than the report's labels (so that the table
#: fits 100 columns; table.csv names the methods), and what the short ones stand for.
_COMPOSE_HEADERS = {"basic": "basic", "drv": "DRV", "kov_small_eps": "Thm 3.4 (eps<=0.9)"}
_COMPOSE_LEGEND = {
    "basic": "k eps, k delta",
    "drv": "Dwork-Rothblum-Vadhan",
    "kov_small_eps": f"Thm 3.4's form for eps{KEEP}<={KEEP}0.9",
}


def _compose(args: argparse.Namespace) -> int:
    from ldpsim.report import compose as cr

    if args.eps_total is not None and args.target_delta is not None:
        raise LdpSimError("--target-delta: got --eps-total too, expected one of the two")
    if args.pairs is not None or args.mechanism is not None:
        return _compose_mixed(args)
    if args.eps is None:
        raise LdpSimError("--eps: got nothing, expected the eps of each mechanism (or --pairs / --mechanism)")
    if args.compositions is None and args.k_deprecated is None:
        raise LdpSimError(
            "--compositions: got nothing, expected the number of mechanisms composed (or --pairs / --mechanism)"
        )
    if args.delta is None:
        args.delta = 0.0
    compositions = args.compositions
    if args.k_deprecated is not None:  # the README of 0.1 used `ldpsim compose ... -k 30`
        print("ldpsim: -k is deprecated; use --compositions (-k goes away in 0.2)", file=sys.stderr)
        compositions = args.k_deprecated
    from ldpsim import _validate as v

    v.epsilon(args.eps, "--eps")  # the options, named as typed, before the output folder is made
    v.delta(args.delta, "--delta")
    v.integer(compositions, "--compositions" if args.k_deprecated is None else "-k", minimum=1)
    deltas, files, notes = cr.run(
        args.eps,
        args.delta,
        compositions,
        eps_totals=args.eps_total,
        delta_totals=args.target_delta,
        out=args.out,
        figure=not args.no_figure,
        force=args.force,
    )
    what = "eps_total at each target delta_total" if args.target_delta is not None else "delta_total at each eps_total"
    _say(f"{compositions}-fold composition of ({args.eps:g}, {args.delta:g})-DP mechanisms: {what}")
    methods = cr.methods(args.eps)
    shown = deltas.rename(columns={m: _COMPOSE_HEADERS.get(m, cr.LABELS[m]) for m in methods})
    print(table(shown, float_format=lambda x: f"{x:.6g}", full=_named(files, "table.csv")))
    _say("exact = the optimal composition (no (eps, delta)-DP mechanisms compose worse); bounds are upper bounds")
    _say("; ".join(f"{_COMPOSE_HEADERS[m]} = {_COMPOSE_LEGEND[m]}" for m in methods if m in _COMPOSE_LEGEND))
    for note in notes:
        _say(note)
    _say(f"files: {', '.join(str(p) for p in files)}")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from ldpsim import reproduce as rp

    if args.list:
        if args.name is not None:
            raise LdpSimError(f"--list: got a NAME too ({args.name!r}), expected --list alone")

        width = max(len(n) for n in rp.names())
        for name in rp.names():  # the description wrapped in its column, whole
            print(
                textwrap.fill(
                    rp.get(name).description,
                    WIDTH,
                    initial_indent=f"{name:<{width}}  ",
                    subsequent_indent=" " * (width + 2),
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
        return 0
    if args.name is None:
        raise LdpSimError(f"NAME: got nothing, expected one of {', '.join(rp.names())} (or --list)")
    rp.get(args.name)  # unknown names fail before any work
    from ldpsim import _validate as v

    seed = None if args.seed is None else v.seed(args.seed, "--seed")
    instances = rp.DEFAULT_INSTANCES if args.instances is None else args.instances
    eps_grid = (
        None if args.eps_grid is None else _number_list(args.eps_grid, "--eps-grid", float, "numbers in (0, 700]")
    )
    k = None if args.k is None else _number_list([args.k], "--k", int, "alphabet sizes, integers >= 2")
    if args.scheduler is not None:
        from ldpsim import cluster

        if args.workers != 1:
            raise LdpSimError(
                f"--workers: got {args.workers} with --scheduler, "
                "expected one of them (the cluster's workers do the work)"
            )
        cluster.parse(args.scheduler)
        cluster.check_installed()
    from ldpsim._pool import executor_scope

    with _cluster(args.scheduler) as where, executor_scope(None if where is None else where.executor):
        run = rp.reproduce(
            args.name,
            seed=seed,
            instances=instances,
            out=args.out,
            workers=args.workers,
            force=args.force,
            eps_grid=eps_grid,
            k=k,
            seeds=args.seeds,
        )
    if run.runs:  # --seeds, one run per seed
        from ldpsim.reproduce._registry import format_spread, seed_spread

        _say(
            f"{run.name}: {rp.get(run.name).source}; {plural(run.instances, 'instance')}, seeds "
            f"{run.seeds[0]}..{run.seeds[-1]} ({len(run.runs)} runs), {run.seconds:.1f} s"
        )
        for one in run.runs:
            bad = one.disagreements
            _say(
                f"seed {one.seed}: {one.seconds:.1f} s, "
                + (
                    f"disagrees ({len(bad)}): " + "; ".join(bad["quantity"])
                    if len(bad)
                    else "agrees with every number the paper gives"
                )
                + f" ({one.out_dir})"
            )
        _say("each quantity over the seeds (agrees: in how many of the seeds where the paper gives a number):")
        spread = seed_spread(run.summary)
        shown = format_spread(spread)  # long quantities wrapped at their words
        print(shown)
        if len(shown.splitlines()) > len(spread) + 1:
            _say(f"full table: {_named(run.files, 'seeds.csv')}")
        _say(f"files in {run.out_dir}: {', '.join(p.name for p in run.files)}, and seed<S>/ for each seed")
        return 0
    seeds = f"seeds {run.seeds[0]}..{run.seeds[-1]}" if run.seeds else f"seed {run.seed}"
    _say(f"{run.name}: {rp.get(run.name).source}; {plural(run.instances, 'instance')}, {seeds}, {run.seconds:.1f} s")
    print(rp.format_summary(run.summary))  # within 100 columns already
    bad = run.disagreements
    if len(bad):
        _say(
            f"disagrees with the paper ({len(bad)}): "
            + "; ".join(bad["quantity"] + " (k=" + bad["k"].astype(str) + ")")
        )
    else:
        _say("every number the paper gives agrees within the stated criterion")
    _say(f"files in {run.out_dir}: {', '.join(p.name for p in run.files)}")
    return 0


def _number_list(tokens: Sequence[str], option: str, kind: type, expected: str) -> list:
    """Numbers given as one or more tokens, each a comma-separated list ("0.1,1 10"); a token
    that is not a number is one line naming ``option``."""
    values = []
    for token in tokens:
        for part in str(token).split(","):
            if not part.strip():
                continue
            try:
                values.append(kind(part))
            except ValueError:
                raise LdpSimError(
                    f"{option}: got {' '.join(tokens)!r}, expected {expected}, comma- or space-separated"
                ) from None
    if not values:
        raise LdpSimError(f"{option}: got {' '.join(tokens)!r}, expected {expected}, comma- or space-separated")
    return values


def _recommend_survey(args: argparse.Namespace) -> int:
    """``ldpsim recommend --survey FILE``: the budget's strategies side by side, not run."""
    from ldpsim.report.survey import questions_console
    from ldpsim.sim import load_scenario
    from ldpsim.sim.scenario.questions import with_optimal_plan

    for name in ("k", "eps", "n", "bits"):
        if getattr(args, name) is not None:
            raise LdpSimError(f"--{name}: got {getattr(args, name)!r}, expected none with --survey")
    from ldpsim import _shipped
    from ldpsim.sim.table import data_access

    with data_access(True):  # a file the user typed: its tables may sit anywhere
        try:
            path = _shipped.resolve(args.survey)
        except LdpSimError as exc:
            raise LdpSimError(f"--survey: {str(exc).split(': ', 1)[1]}") from None
        scenario = load_scenario(path)
        qs = getattr(scenario, "questions", None)
        if qs is None:
            raise LdpSimError(f"--survey: got {args.survey!r}, expected a survey scenario with [[questions]]")
        plan = with_optimal_plan(scenario.spec, qs, scenario.path)
    for line in questions_console(plan):
        print(line)
    return 0


def _recommend(args: argparse.Namespace) -> int:
    from ldpsim._files import OutputFolder
    from ldpsim.report import recommend as report
    from ldpsim.utility import recommend as rc

    if args.survey is not None:
        return _recommend_survey(args)
    for name in ("k", "eps", "n"):
        if getattr(args, name) is None:
            raise LdpSimError(f"--{name}: got nothing, expected a value (or --survey FILE for a survey's budget)")

    rc.evaluate(args.k, args.eps, args.n, args.prior, args.utility, lp=False)  # checks every argument first
    n = int(args.n)
    if args.bits is not None and not (args.bits > 0):
        raise LdpSimError(f"--bits: got {args.bits!r}, expected a number of bits > 0")
    default = Path("reports") / "recommend" / f"k{args.k}-eps{args.eps:g}-n{n:g}"
    with OutputFolder.of(args.out, default, force=args.force) as folder:  # checked before the work
        scores = rc.evaluate(args.k, args.eps, args.n, args.prior, args.utility)
        if args.bits is not None:
            scores = scores[scores["report_bits"].fillna(float("inf")) <= args.bits].reset_index(drop=True)
        if args.no_figure:
            curves = crossings = None
        else:
            curves = rc.curves(args.k, args.n, args.prior, loss=args.utility)
            crossings = rc.boundaries(curves, args.k, args.n, args.prior, args.utility)
        import pandas as pd

        files = report.files(
            scores,
            curves if curves is not None else pd.DataFrame(),
            crossings
            if crossings is not None
            else pd.DataFrame(columns=["better_below", "better_above", "eps", "kind"]),
            {
                "k": args.k,
                "eps": args.eps,
                "n": n,
                "utility": args.utility,
                "prior": args.prior,
                "loss_kind": rc.LOSS_KIND[args.utility],
            },
            with_figure=not args.no_figure,
        )
        assert folder.work is not None
        for name, data in files.items():
            (folder.work / name).write_bytes(data)
    written = [folder.path / name for name in files]
    exact = rc.LOSS_KIND[args.utility]
    _say(
        f"frequency oracles for k = {args.k:,} answers, eps = {args.eps:g}, n = {n:,} respondents, prior {args.prior}; "
        f"loss{KEEP}{args.utility}{KEEP}({exact}), best first:"
    )
    shown = scores.rename(
        columns={"server_operations": "server_ops", "max_std_error": "max_se", "risk_accuracy": "risk_acc"}
    )
    cols = ["mechanism", "mse", "l1", "kl", "max_se", "risk_acc", "report_bits", "server_ops", "exact_eps"]
    print(table(shown[cols], float_format=lambda x: f"{x:.4g}", na_rep="-", full=folder.path / "recommend.csv"))
    baseline = float(rc.parse_prior(args.prior, args.k).max())
    _say(
        f"  risk_acc: how often the server's best guess of a respondent's answer from one report is right "
        f"(without it: {baseline:.4g}; docs/risk.md)"
    )
    if args.utility == "kl" and scores["max_relative_error"].max() > rc.KL_RELIABLE:
        worst = scores.loc[scores["max_relative_error"].idxmax()]
        _say(
            f"  kl is a second-order approximation, poor here: {worst['mechanism']}'s standard error reaches "
            f"{worst['max_relative_error']:.3g} times its answer's probability (reliable below {rc.KL_RELIABLE:g})"
        )
    for _, row in scores[scores["note"].fillna("") != ""].iterrows():
        _say(f"  {row['mechanism']}: {row['note']}")
    if crossings is not None and len(crossings):
        _say(
            "regime boundaries (eps 0.1 to 8): "
            + "; ".join(
                f"{'best: ' if r.kind == 'best' else ''}{r.better_below} "
                f"below eps = {r.eps:.4g}, {r.better_above} above"
                for r in crossings.itertuples()
            )
        )
    _say(f"files: {', '.join(str(p) for p in written)}")
    return 0


def _split_list(text: str | None, option: str) -> list[str] | None:
    """A comma-separated list of names (``--labels a,b,c``); None when not given."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",")]
    if not items or any(not t for t in items):
        raise LdpSimError(f"{option}: got {text!r}, expected names separated by commas")
    return items


def _privatize(args: argparse.Namespace) -> int:
    from ldpsim import deploy

    answers = Path(args.answers)
    if not answers.is_file():
        raise LdpSimError(f"ANSWERS: got {args.answers!r}, expected a CSV file of answers")
    labels = _split_list(args.labels, "--labels")
    keep = _split_list(args.keep, "--keep") or []
    out = Path(args.out) if args.out is not None else answers.with_name(answers.stem + "-reports.csv")
    if out.exists() and not args.force:
        raise LdpSimError(f"--out: got {str(out)!r}, expected a new file (use --force to replace it)")
    if out.exists() and not out.is_file():
        raise LdpSimError(f"--out: got {str(out)!r}, expected a file (it is a folder)")
    if out.resolve() == answers.resolve():
        raise LdpSimError(f"--out: got {str(out)!r}, expected a file other than ANSWERS")
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):
        raise LdpSimError(f"--out: got {str(out)!r}, expected a file in a folder we can write")
    header = deploy._read_header(answers, "ANSWERS")
    column = deploy.pick_column(header, args.column, "ANSWERS")
    for c in keep:
        if c not in header:
            raise LdpSimError(f"--keep: got {c!r}, expected one of the columns of ANSWERS: {', '.join(header)}")
    system = args.rng == "os"
    if system and args.seed is not None:
        raise LdpSimError(f"--seed: got {args.seed}, expected none with --rng os (its draws have no seed)")
    seed = deploy.seed_value(args.seed)
    spec = deploy.with_sampler(args.mechanism, args.sampler)
    probe = deploy.build(spec, k=len(labels) if labels is not None else None)
    if deploy.report_format(probe).categorical:
        if labels is None:
            labels = deploy.file_labels(answers, column)
            if not labels:
                raise LdpSimError(f"ANSWERS: got {args.answers!r} with a header only, expected at least one answer")
        built = deploy.build(spec, k=len(labels))
        labels = deploy.check_labels(labels, int(built.mechanism.k), "--labels" if args.labels else "ANSWERS")
    else:
        if labels is not None:
            raise LdpSimError(f"--labels: got {args.labels!r}, expected none for a numeric mechanism")
        built = probe
    if system:
        deploy.check_system_rng(built)
    done = deploy.privatize_file(
        answers,
        built,
        seed,
        out,
        column=column,
        labels=labels,
        keep=keep,
        show_progress=not args.no_progress,
        system=system,
    )
    source = "the operating system's generator" if system else f"seed{KEEP}{seed}"
    _say(f"ldpsim privatize: {done.rows:,} answers of {column!r} with {built.spec} ({source})")
    if labels is not None:
        _say(f"labels, in symbol order (ldpsim analyse --labels): {shlex.quote(','.join(labels))}")
    _say(f"reports: {out} (columns {', '.join(done.columns)})")
    return 0


def _analyse(args: argparse.Namespace) -> int:
    from ldpsim import deploy
    from ldpsim._files import OutputFolder
    from ldpsim.report import analysis as report

    path = Path(args.reports)
    if not path.is_file():
        raise LdpSimError(f"REPORTS: got {args.reports!r}, expected a CSV file of reports")
    if path.suffix.lower() == ".toml":
        return _analyse_file(args, path)
    if args.mechanism is None:
        raise LdpSimError("--mechanism: got nothing, expected the catalog spec the reports were made with")
    args.alpha = 0.05 if args.alpha is None else args.alpha
    if not (0.0 < args.alpha < 1.0):
        raise LdpSimError(f"--alpha: got {args.alpha!r}, expected a level in (0, 1)")
    labels = _split_list(args.labels, "--labels")
    built = deploy.build(args.mechanism, k=len(labels) if labels is not None else None)
    fmt = deploy.report_format(built)
    if labels is not None:
        if not fmt.categorical:
            raise LdpSimError(f"--labels: got {args.labels!r}, expected none for a numeric mechanism")
        labels = deploy.check_labels(labels, int(built.mechanism.k))
    seed = deploy.seed_value(args.seed)
    default = Path("reports") / "analyse" / (path.stem or "reports")
    with OutputFolder.of(args.out, default, force=args.force) as folder:  # checked before the work
        got = deploy.collect(
            path,
            built,
            column=args.column,
            groups=args.groups,
            weights=args.weights,
            show_progress=not args.no_progress,
            sequential=args.sequential,
        )
        result = deploy.analyse(got, labels, args.alpha, seed)
        meta = {
            "kind": "analysis",
            "reports": path.name,
            "mechanism": built.spec,
            "n": got.all.n,
            "alpha": args.alpha,
            "seed": seed,
            "groups": args.groups,
            "weights": args.weights,
            "labels": result.labels,
        }
        written = report.files(meta, result.estimates, result.tests, result.notes)
        assert folder.work is not None
        for name, data in written.items():
            (folder.work / name).write_bytes(data)
    _say(f"ldpsim analyse: {got.all.n:,} reports of {built.spec} (seed{KEEP}{seed})")
    _show_analysis(result, args.alpha, folder.path / "estimates.csv")
    for note in result.notes:
        _say(f"note: {note}")
    _say(f"files in {folder.path}: {', '.join(sorted(written))}")
    return 0


def _show_analysis(result: Any, alpha: float, full: Path) -> None:
    """The estimates of all reports as a table, and one line per test."""
    shown = result.estimates[result.estimates["scope"] == "all"]
    cols = [c for c in ("category", "estimate", "std_error", "ci_low", "ci_high", "projected") if c in shown]
    print(table(shown[cols], float_format=lambda x: f"{x:.4g}", full=full))
    for row in result.tests.to_dict("records"):
        if row["method"] == "not run":
            _say(f"{row['test']} ({row['scope']}): not run, {row['note']}")
        else:
            verdict = "rejected" if row["reject"] else "not rejected"
            _say(f"{row['test']} ({row['scope']}): p = {row['p_value']:.4g}, {verdict} at {alpha:g}")


def _analyse_file(args: argparse.Namespace, path: Path) -> int:
    """``ldpsim analyse analysis.toml``: every question of the file into one folder."""
    from ldpsim import deploy
    from ldpsim._files import OutputFolder
    from ldpsim.report import analysis as report

    for option, value in (
        ("--mechanism", args.mechanism),
        ("--column", args.column),
        ("--groups", args.groups),
        ("--weights", args.weights),
        ("--labels", args.labels),
        ("--alpha", args.alpha),
    ):
        if value is not None:
            raise LdpSimError(f"{option}: got {value!r}, expected none with an analysis file (its questions name it)")
    if args.sequential:
        raise LdpSimError("--sequential: got it, expected none with an analysis file (sequential = true per question)")
    plan = deploy.load_analysis(path)
    seed = deploy.seed_value(args.seed if args.seed is not None else plan.seed)
    default = Path("reports") / "analyse" / (path.stem or "analysis")
    with OutputFolder.of(args.out, default, force=args.force) as folder:  # checked before the work
        done = deploy.analyse_questions(plan, seed, show_progress=not args.no_progress)
        parts = []
        for q, n, result in done:
            q_meta = {
                "question": q.name,
                "reports": q.path.name,
                "mechanism": q.built.spec,
                "n": n,
                "alpha": q.alpha,
                "seed": seed,
                "column": q.column,
                "groups": q.groups,
                "weights": q.weights,
                "labels": result.labels,
            }
            parts.append((q_meta, result.estimates, result.tests, result.notes))
        meta = {
            "kind": "analysis",
            "name": plan.name,
            "description": plan.description,
            "file": path.name,
            "seed": seed,
            "questions": [p[0] for p in parts],
        }
        written = report.question_files(meta, parts, source=path.read_text(encoding="utf-8"))
        assert folder.work is not None
        for name, data in written.items():
            (folder.work / name).write_bytes(data)
    _say(f"ldpsim analyse: {plural(len(done), 'question')} of {path.name} (seed{KEEP}{seed})")
    for q, n, result in done:
        _say(f"{q.name}: {n:,} reports of {q.built.spec}")
        _show_analysis(result, q.alpha, folder.path / "estimates.csv")
    _say(f"files in {folder.path}: {', '.join(sorted(written))}")
    return 0


def _audit(args: argparse.Namespace) -> int:
    import numpy as np

    from ldpsim import audit as au
    from ldpsim.audit import targets as tg
    from ldpsim.audit.witnesses import input_key

    if args.list:
        if args.spec is not None:
            raise LdpSimError(f"--list: got a SPEC too ({args.spec!r}), expected --list alone")
        for name in tg.names():  # the signature, continued under its "(", then the description indented 4
            spec = tg.entry(name)
            params = ", ".join(f"{k}={p.default!r}" for k, p in spec.params.items())
            _say(f"{name}({params})", hang=len(name) + 1 if len(name) < 40 else 4)
            _say(f"    {plain(spec.description)}", hang=0)
        return 0
    if args.spec is None:
        raise LdpSimError("SPEC: got nothing, expected NAME or NAME:param=value,... (see ldpsim audit --list)")
    t = tg.parse_spec(args.spec)
    pairs = t.pairs
    if args.pairs is not None:
        try:
            pairs = json.loads(args.pairs)
        except ValueError:
            raise LdpSimError(f"--pairs: got {args.pairs!r}, expected JSON such as [[0, 1], [1, 2]]") from None
    from ldpsim import _validate as v

    claim_eps = t.claimed_eps if args.claim_eps is None else v.epsilon(args.claim_eps, "--claim-eps")
    claim_delta = t.claimed_delta if args.claim_delta is None else args.claim_delta
    if not 0.0 <= claim_delta < 1.0:
        raise LdpSimError(f"--claim-delta: got {claim_delta}, expected a number in [0, 1)")
    seed = np.random.SeedSequence(None if args.seed is None else v.seed(args.seed, "--seed"))
    rng = np.random.default_rng(seed)
    ld = None if args.black_box else au.density_of(t.mechanism)
    if args.sequential:
        res = au.audit_sequential(
            t.sampler,
            pairs,
            args.n,
            claim_eps,
            args.alpha,
            claimed_delta=claim_delta,
            first=args.first,
            log_density=ld,
            rng=rng,
            exact_floats=args.exact_floats,
        )
    else:
        eps_d = claim_eps if claim_delta > 0 else None
        res = au.audit(
            t.sampler,
            pairs,
            args.n,
            args.alpha,
            eps_for_delta=eps_d,
            log_density=ld,
            rng=rng,
            exact_floats=args.exact_floats,
        )
    refuted = res.refuted
    if refuted is None:
        refuted = res.eps_lb > claim_eps if claim_delta == 0 else (res.delta_lb or 0.0) > claim_delta
    exact_delta = t.true_delta(claim_eps) if (claim_delta > 0 and t.true_delta is not None) else None
    per_input = res.n_samples_used // max(1, len({input_key(x) for pair in pairs for x in pair}))
    if args.json:
        out = {
            "spec": t.spec,
            "seed": seed.entropy,
            "alpha": res.alpha,
            "eps_lb": _json_float(res.eps_lb),
            "delta_lb": _json_float(res.delta_lb),
            "claimed_eps": _json_float(claim_eps),
            "claimed_delta": _json_float(claim_delta),
            "exact_eps": _json_float(t.true_eps),
            "exact_delta": _json_float(exact_delta),
            "refuted": bool(refuted),
            "witness": None if res.witness is None else res.witness.to_dict(),
            "delta_witness": None if res.delta_witness is None else res.delta_witness.to_dict(),
            "counts": res.counts,
            "samples_used": res.n_samples_used,
            "samples_per_input": per_input,
            "density": ld is not None,
            "exact_floats": bool(args.exact_floats),
            "method": res.method,
        }
        print(json.dumps(out, sort_keys=True, allow_nan=False))
        return 0
    how = "exact density used" if ld is not None else "black box: samples only"
    if args.exact_floats:
        how += ", exact-floats mode"
    _say(
        f"audit of {t.spec} ({how.replace(' ', KEEP)}); {plural(len(pairs), 'pair')}, alpha {res.alpha:g}, "
        f"seed{KEEP}{seed.entropy}"
    )
    _say(f"eps_LB = {res.eps_lb:.6g}   claimed eps = {claim_eps:g}   exact eps = {t.true_eps:.6g}")
    if res.delta_lb is not None:
        extra = f"   exact delta = {exact_delta:.6g}" if exact_delta is not None else ""
        _say(f"delta_LB at eps={res.eps_for_delta:g}: {res.delta_lb:.6g}   claimed delta = {claim_delta:g}{extra}")
    claim = f"eps={claim_eps:g}" + (f", delta={claim_delta:g}" if claim_delta > 0 else "")
    verdict = f"REFUTED at alpha {res.alpha:g}" if refuted else "not refuted (consistent with the samples)"
    _say(f"claim ({claim}): {verdict}")
    _say("witness: " + (res.witness.to_json() if res.witness is not None else "none (nothing certified)"))
    if res.counts:
        c = res.counts
        _say(
            f"certification hits: {c['hits_x']:,} under x, "
            f"{c['hits_x_prime']:,} under x' (of {c['n_per_input']:,} each)"
        )
    _say(f"samples used: {res.n_samples_used:,} ({per_input:,} per input)")
    _say(f"method: {res.method}")
    return 0


def _json_float(x: float | None) -> float | str | None:
    import numpy as np

    if x is None or np.isfinite(x):
        return x
    return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # bare `ldpsim`: what it can do, not just "a command is required"
        parser.print_help(sys.stderr)
        print("ldpsim: error: COMMAND: got nothing, expected one of the commands above", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    from ldpsim._files import put_in_place_count, put_in_place_since

    mark = put_in_place_count()
    try:
        return int(args.func(args))
    except LdpSimError as exc:
        print(f"ldpsim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside a run's own handling (which says how to resume)
        done = put_in_place_since(mark)  # an output folder is put in place whole, or not at all
        print(
            "ldpsim: interrupted; " + (f"the files in {done} are complete" if done else "nothing was written"),
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
