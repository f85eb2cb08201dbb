"""Fake respondents in survey scenarios (``[[attackers]]``): the measured gain against its
exact expectation in both modes, the honest respondents' draws untouched by the attack,
detection and recovery in the rows, and one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.stats_checks import FALSE_FAILURE

BASE = """
name = "poison"
[population]
answers = {{ count = 16, prefix = "app " }}
law = {{ kind = "zipf", s = 1.1 }}
size = {size}
[mechanism]
kind = "{mech}"
eps = 1.0
[arrivals]
kind = "poisson"
duration = 4.0
[analyst]
checkpoints = {{ every = 1.0 }}
tasks = [{{ kind = "frequency" }}]
[server]
keep_reports = {keep}
[simulation]
mode = "{mode}"
{attackers}
"""

ATTACKER = """
[[attackers]]
name = "promoter"
share = 0.05
targets = {targets}
strategy = "{strategy}"
start = 1.0
"""


def _scenario(
    mech="oue", mode="individual", keep="false", strategy="maximal_gain", targets="3", size=8000, attackers=None
):
    text = BASE.format(
        size=size,
        mech=mech,
        keep=keep,
        mode=mode,
        attackers=ATTACKER.format(targets=targets, strategy=strategy) if attackers is None else attackers,
    )
    return parse_scenario(text)


def _attack(df, quantity, checkpoint=None):
    rows = df[(df.task == "attack") & (df.quantity == quantity)]
    return rows if checkpoint is None else rows[rows.checkpoint == checkpoint]


@pytest.mark.parametrize(
    "mech,mode,strategy",
    [
        ("oue", "individual", "maximal_gain"),
        ("oue", "aggregate", "random_perturbed"),
        ("randomized_response", "aggregate", "maximal_gain"),
        ("randomized_response", "individual", "undetectable"),
        ("olh", "individual", "random_item"),
    ],
)
def test_measured_gain_is_unbiased_for_its_exact_expectation(mech, mode, strategy) -> None:
    """The gain row's theory is the exact expectation given the fake reports received; over
    replications, the measured gain minus it has mean zero, and the theory's mean is the
    unconditional exact gain of ldpsim.attacks (t tests at the suite's false-failure
    probability)."""
    from ldpsim.attacks import expected_gain

    sc = _scenario(mech, mode, strategy=strategy, size=3000 if mech == "olh" else 5000)
    reps = 20 if mech == "olh" else 30
    gains, theory = [], []
    for r in range(reps):
        row = _attack(run_replication(sc, r, 2026), "gain", 3).iloc[0]
        gains.append(row.estimate)
        theory.append(row.theory)
    gains, theory = np.array(gains), np.array(theory)
    z = stats.t.isf(FALSE_FAILURE / 4, reps - 1)  # two tests, two-sided
    diff = gains - theory
    assert abs(diff.mean()) <= z * diff.std(ddof=1) / math.sqrt(reps) + 1e-12
    att = sc.attackers[0]
    want = expected_gain(sc.mechanism, strategy, att.targets, att.count / (att.count + sc.size), sc.prior, rng=0)
    assert abs(theory.mean() - want) <= z * theory.std(ddof=1) / math.sqrt(reps) + 1e-9
    assert want > 0 or strategy == "random_perturbed"


def test_the_honest_respondents_are_those_of_the_run_without_attackers() -> None:
    """The attack draws from its own stream: the engine's book-keeping of the honest clients
    is the same, and the server receives exactly the fake reports more."""
    with_attack = run_replication(_scenario(), 0, 99)
    without = run_replication(_scenario(attackers=""), 0, 99)
    eng = lambda df: df[df.task == "engine"].set_index("quantity").estimate  # noqa: E731
    a, b = eng(with_attack), eng(without)
    assert a["clients"] == b["clients"] and a["lost"] == b["lost"]
    fakes = round(0.05 * 8000 / 0.95)
    assert a["received"] - b["received"] == fakes
    share = _attack(with_attack, "fake_share", 3).estimate.iloc[0]
    assert share == pytest.approx(fakes / a["received"])


def test_frequent_itemset_flags_the_fake_reports_and_recovers() -> None:
    df = run_replication(_scenario(keep="true", targets='["app 12", "app 14", "app 15", "app 16"]'), 0, 3)
    assert _attack(df, "flagged_fake", 3).estimate.iloc[0] == 1.0
    assert _attack(df, "flagged_honest", 3).estimate.iloc[0] < 0.02
    gain = _attack(df, "gain", 3).estimate.iloc[0]
    recovered = _attack(df, "recovered_gain", 3).estimate.iloc[0]
    assert gain > 0.5 and abs(recovered) < 0.1 * gain
    # Norm-Sub, the weak defence, keeps most of the gain; its cost and detection's on the honest
    # reports alone are measured at the end (detection flags none of them here: no cost)
    assert 0 < _attack(df, "normsub_gain", 3).estimate.iloc[0] <= gain
    cost = _attack(df, "honest_l1_change", 3).set_index("category").estimate
    assert cost["frequent itemset"] == 0.0 and np.isfinite(cost["norm-sub"])


def test_random_perturbed_values_are_detected_by_the_support_size() -> None:
    df = run_replication(_scenario(strategy="random_perturbed"), 0, 4)
    at = _attack(df, "detected_at", 3)
    assert at[at.category == "support size"].estimate.iloc[0] <= 2.5  # the attack starts at 1.0


@pytest.mark.parametrize(
    "attackers,words",
    [
        (ATTACKER.format(targets='["app 99"]', strategy="maximal_gain"), "attackers[0].targets: got 'app 99'"),
        (ATTACKER.format(targets="16", strategy="maximal_gain"), "attackers[0].targets: got 16"),
        (ATTACKER.format(targets="2", strategy="undetectable"), "attackers[0].strategy: got 'undetectable'"),
        (
            ATTACKER.format(targets="2", strategy="x"),
            "attackers[0].strategy: got 'x', expected one of random_perturbed",
        ),
        (ATTACKER.format(targets="2", strategy="random_item") * 2, "attackers: got the names"),
    ],
)
def test_bad_attackers_are_refused_in_one_line(attackers, words) -> None:
    with pytest.raises(LdpSimError, match=None) as err:
        _scenario(attackers=attackers)
    assert words in str(err.value) and "\n" not in str(err.value)


QUESTIONNAIRE = """
name = "q_poison"
[population]
size = 6000
[budget]
total = 2.0
strategy = "split"
[[questions]]
name = "app"
kind = "categorical"
answers = {{ count = 8, prefix = "app " }}
law = {{ kind = "zipf", s = 1.1 }}
mechanism = {{ kind = "randomized_response" }}
[[questions]]
name = "minutes"
kind = "numeric"
range = [0.0, 1.0]
mechanism = {{ kind = "piecewise" }}
density = {{ kind = "beta", a = 2.0, b = 5.0 }}
[arrivals]
kind = "poisson"
duration = 2.0
[analyst]
checkpoints = {{ every = 1.0 }}
[simulation]
mode = "individual"
{attackers}
"""


def test_a_numeric_mean_attack_in_a_questionnaire_has_its_exact_gain():
    """Li et al.'s output poisoning of the mean through the piecewise mechanism: every fake
    report carries (target - (1 - beta) mu) / beta clipped to the report range, whose top is
    1/2 + C/2 on [0, 1] with C = (e^(eps/2) + 1)/(e^(eps/2) - 1) (Wang et al. 2019), written
    here; the measured gain is unbiased for beta (v - mu)."""
    attackers = """
[[attackers]]
name = "inflater"
question = "minutes"
share = 0.05
strategy = "output_mean"
target = 0.9
"""
    sc = parse_scenario(QUESTIONNAIRE.format(attackers=attackers))
    eps = 1.0  # the budget of 2 split over two questions
    c = (math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1)
    mu = 2.0 / 7.0  # Beta(2, 5)
    m = round(0.05 * 6000 / 0.95)
    beta = m / (m + 6000)
    v = min((0.9 - (1 - 0.05) * mu) / 0.05, 0.5 + c / 2)
    gains = []
    for r in range(40):
        df = run_replication(sc, r, 11)
        row = df[(df.task == "minutes:attack") & (df.quantity == "gain") & (df.checkpoint == 1)].iloc[0]
        assert row.theory == pytest.approx(beta * (v - mu), rel=1e-9)
        gains.append(row.estimate)
    gains = np.array(gains)
    z = stats.t.isf(FALSE_FAILURE / 2, gains.size - 1)
    assert abs(gains.mean() - beta * (v - mu)) <= z * gains.std(ddof=1) / math.sqrt(gains.size)


@pytest.mark.parametrize(
    "attackers,words",
    [
        (
            '[[attackers]]\nshare = 0.1\nquestion = "app"\nstrategy = "output_mean"\ntarget = 1.0',
            "expected it for a numeric question",
        ),
        ('[[attackers]]\nshare = 0.1\nquestion = "minutes"\ntargets = 1', "expected a question with a list of answers"),
        ('[[attackers]]\nshare = 0.1\nquestion = "nope"\ntargets = 1', "attackers[0].question: got 'nope'"),
        (
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "input_mean"',
            "attackers[0].target: got nothing",
        ),
        ('[[attackers]]\nshare = 0.1\nquestion = "app"', "attackers[0].targets: got nothing"),
        (
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean_variance"\ntarget = 0.3',
            "attackers[0].strategy: got 'output_mean_variance' on question 'minutes', expected a numeric question "
            "with variance = true",
        ),
    ],
)
def test_bad_questionnaire_attackers_are_refused_in_one_line(attackers, words):
    with pytest.raises(LdpSimError) as err:
        parse_scenario(QUESTIONNAIRE.format(attackers=attackers))
    assert words in str(err.value) and "\n" not in str(err.value)
