"""Speed of the real-survey scenarios: the ANES respondents resampled to a million.

Measured (best of ``--repeats``):

* ``anes96.toml``: the 944 ANES 1996 respondents resampled to 10^6, five questions per
  respondent (party identification, left-right self-placement, education, vote, age as a
  numeric question), individual mode (every respondent drawn: the row, each report,
  arrival time, loss, latency; daily checkpoints), one replication; target under 30 s on
  this 2-core machine. Also the whole ``ldpsim run`` path (replication, files, figures).
* ``anes96_party.toml``: one question from the same table at 10^6, individual mode, and
  the same scenario in aggregate mode (counts drawn from the exact laws: the multinomial
  of the table's shares and the mechanism's aggregate law).
* ``anes96_crosstab.toml``: two questions and their cross-tabulation at 10^6, individual
  and aggregate mode (respondents counted by table row; the cross-tabulated pair drawn
  from the product mechanism's aggregate law). ``anes96.toml`` itself has a numeric
  question, which has no exact aggregate law, so it runs in individual mode only.

Run from the repo root: ``python benchmarks/bench_surveys.py [--repeats 3]``.
"""

from __future__ import annotations

from _common import REPO_ROOT, best_of, full_run, parser, report
from ldpsim.sim import load_scenario, run_replication

ANES = REPO_ROOT / "scenarios" / "anes96.toml"
PARTY = REPO_ROOT / "scenarios" / "anes96_party.toml"
CROSSTAB = REPO_ROOT / "scenarios" / "anes96_crosstab.toml"


def main() -> None:
    p = parser(__doc__.splitlines()[0], repeats=3)
    args = p.parse_args()
    anes = load_scenario(ANES)
    party = load_scenario(PARTY)
    party_aggregate = party.with_overrides(mode="aggregate")
    crosstab = load_scenario(CROSSTAB)
    crosstab_aggregate = crosstab.with_overrides(mode="aggregate")
    n = anes.size

    cases = {
        "anes": lambda: run_replication(anes, 0, args.seed),
        "full": lambda: full_run(ANES),
        "party": lambda: run_replication(party, 0, args.seed),
        "party_aggregate": lambda: run_replication(party_aggregate, 0, args.seed),
        "crosstab": lambda: run_replication(crosstab, 0, args.seed),
        "crosstab_aggregate": lambda: run_replication(crosstab_aggregate, 0, args.seed),
    }
    best = best_of(cases, args.repeats)
    questions = anes.questions.count
    rows = [
        dict(
            benchmark="surveys",
            case=f"anes96.toml: {questions} questions, individual mode, one replication",
            n=n,
            k=questions,
            seconds=best["anes"],
            throughput_per_s=n / best["anes"],
            target="< 30 s",
            meets_target=best["anes"] < 30,
        ),
        dict(
            benchmark="surveys",
            case="ldpsim run scenarios/anes96.toml (replication + files + figures)",
            n=n,
            k=questions,
            seconds=best["full"],
            throughput_per_s=n / best["full"],
        ),
        dict(
            benchmark="surveys",
            case="anes96_party.toml: one question, individual mode",
            n=party.size,
            k=1,
            seconds=best["party"],
            throughput_per_s=party.size / best["party"],
        ),
        dict(
            benchmark="surveys",
            case="anes96_party.toml: one question, aggregate mode",
            n=party.size,
            k=1,
            seconds=best["party_aggregate"],
            throughput_per_s=party.size / best["party_aggregate"],
        ),
        dict(
            benchmark="surveys",
            case="anes96_crosstab.toml: two questions and their crosstab, individual mode",
            n=crosstab.size,
            k=2,
            seconds=best["crosstab"],
            throughput_per_s=crosstab.size / best["crosstab"],
        ),
        dict(
            benchmark="surveys",
            case="anes96_crosstab.toml: two questions and their crosstab, aggregate mode",
            n=crosstab.size,
            k=2,
            seconds=best["crosstab_aggregate"],
            throughput_per_s=crosstab.size / best["crosstab_aggregate"],
        ),
    ]
    report("surveys", rows, args.out)


if __name__ == "__main__":
    main()
