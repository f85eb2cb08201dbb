"""Fake respondents in collection runs (``[[attackers]]`` of ``kind = "collection"``): the
gain of every period against its exact expectation given the fake reports, the honest
respondents untouched, and one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario
from ldpsim.sim.collection import run_replication
from tests.sim.helpers import collection_text
from tests.stats_checks import FALSE_FAILURE

POLICIES = (
    '[[policies]]\nname = "plain"\nkind = "plain"\n[[policies]]\nname = "memo"\nkind = "memoise"\neps_permanent = 2.0'
)
ATTACKER = '\n[[attackers]]\nname = "promoter"\nshare = 0.05\ntargets = ["c"]\nstrategy = "{strategy}"\nstart = 2\n'


def _text(strategy: str = "maximal_gain", attackers: str | None = None) -> str:
    base = collection_text(
        labels='["a", "b", "c"]', distribution="[0.5, 0.3, 0.2]", size=3000, periods=4, policies=POLICIES
    )
    return base + (ATTACKER.format(strategy=strategy) if attackers is None else attackers)


@pytest.mark.parametrize("strategy", ["maximal_gain", "random_perturbed", "undetectable"])
def test_period_gains_are_unbiased_for_their_exact_expectation(strategy):
    sc = parse_scenario(_text(strategy))
    diffs = {p: [] for p in ("plain", "memo")}
    for r in range(40):
        df = run_replication(sc, r, 5)
        g = df[(df.quantity == "gain") & (df.period == 3)]
        for p in diffs:
            row = g[g.policy == p].iloc[0]
            diffs[p].append(row.estimate - row.theory)
        assert (df[(df.quantity == "gain") & (df.period == 1)].estimate == 0).all()  # before the attack starts
    z = stats.t.isf(FALSE_FAILURE / 4, 39)
    for p, d in diffs.items():
        d = np.array(d)
        assert abs(d.mean()) <= z * d.std(ddof=1) / math.sqrt(d.size) + 1e-12, p


def test_the_honest_respondents_and_their_privacy_are_those_of_the_run_without_attackers():
    with_attack = run_replication(parse_scenario(_text()), 0, 9)
    without = run_replication(parse_scenario(_text(attackers="")), 0, 9)
    keep = ["policy", "shuffled", "period", "quantity", "category", "estimate"]
    priv = lambda df: df[df.quantity == "privacy"][keep].reset_index(drop=True)  # noqa: E731
    assert priv(with_attack).equals(priv(without))
    first = lambda df: df[(df.quantity == "frequency") & (df.period == 1)][keep].reset_index(drop=True)  # noqa: E731
    assert first(with_attack).equals(first(without))  # the attack starts in period 2


@pytest.mark.parametrize(
    "attackers,words",
    [
        (ATTACKER.format(strategy="output_mean"), "attackers[0].strategy: got 'output_mean'"),
        (ATTACKER.format(strategy="maximal_gain").replace('["c"]', '["z"]'), "attackers[0].targets: got 'z'"),
        (
            ATTACKER.format(strategy="maximal_gain").replace("start = 2", "start = 3\nstop = 2"),
            "attackers[0].stop: got 2",
        ),
        (ATTACKER.format(strategy="random_item") * 2, "attackers: got the names"),
    ],
)
def test_bad_attackers_are_refused_in_one_line(attackers, words):
    with pytest.raises(LdpSimError) as err:
        parse_scenario(_text(attackers=attackers))
    assert words in str(err.value) and "\n" not in str(err.value)


def _alarms(df, policy: str) -> bool:
    at = df[(df.quantity == "detected_at") & (df.policy == policy)]
    return bool(at.estimate.notna().any())


def test_the_excess_monitor_finds_a_large_attack_and_keeps_its_level_against_an_input_attack():
    loud = ATTACKER.format(strategy="maximal_gain").replace("share = 0.05", "share = 0.6") + "alpha = 0.05\n"
    df = run_replication(parse_scenario(_text(attackers=loud)), 0, 2)
    assert _alarms(df, "plain")
    assert not (df[(df.quantity == "detected_at") & (df.policy == "memo")]).shape[0]  # not run under memoisation
    # a random item attack is an honest population's reports: alarms at most at the stated rate
    quiet = ATTACKER.format(strategy="random_item") + "alpha = 0.05\n"
    sc = parse_scenario(_text(attackers=quiet))
    runs = 60
    alarms = sum(_alarms(run_replication(sc, r, 3), "plain") for r in range(runs))
    assert alarms <= stats.binom.isf(FALSE_FAILURE, runs, 0.05)
