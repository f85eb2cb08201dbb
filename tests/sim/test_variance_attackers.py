"""A numeric question's variance in survey scenarios (``variance = true``: Li et al.'s two
groups) and the joint mean-and-variance attacks on it (``[[attackers]]`` with
``output_mean_variance`` or ``input_mean_variance``), run end to end from a file: the honest
estimates within their stated intervals of their exact expectations, the poisoned mean and
variance against :func:`ldpsim.attacks.expected_moments` within their exact standard errors,
determinism, and one-line refusals."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from ldpsim.attacks import expected_moments
from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication, run_scenario
from tests.stats_checks import FALSE_FAILURE

SCENARIO = """
name = "var_poison"
[population]
size = 20000
[budget]
total = 1.0
strategy = "split"
[[questions]]
name = "minutes"
kind = "numeric"
range = [0.0, 1.0]
mechanism = {{ kind = "{mech}" }}
density = {{ kind = "beta", a = 2.0, b = 5.0 }}
{question}
[arrivals]
kind = "poisson"
duration = 2.0
[analyst]
checkpoints = {{ every = 1.0 }}
[simulation]
mode = "individual"
seed = 5
replications = 1
{attackers}
"""

ATTACKER = """
[[attackers]]
name = "spreader"
question = "minutes"
share = 0.1
strategy = "{strategy}"
target = {{ mean = 0.4, variance = 0.05 }}
"""

#: Beta(2, 5) on [0, 1]: mean a / (a + b), variance ab / ((a + b)^2 (a + b + 1)), written here
MEAN, VARIANCE = 2 / 7, 10 / (49 * 8)


def _file(tmp_path: Path, question: str = "variance = true", attackers: str = "", mech: str = "piecewise") -> Path:
    path = tmp_path / "scenario.toml"
    path.write_text(SCENARIO.format(question=question, attackers=attackers, mech=mech))
    return path


def _end(results: pd.DataFrame, task: str, quantity: str, category: str = "") -> pd.Series:
    rows = results[
        (results["reason"] == "end")
        & (results["task"] == task)
        & (results["quantity"] == quantity)
        & (results["category"].fillna("").astype(str) == category)
    ]
    assert len(rows) == 1, (task, quantity)
    return rows.iloc[0]


def test_the_honest_variance_is_within_its_stated_interval_of_the_exact(tmp_path: Path) -> None:
    """Mean, second moment and variance, each within z exact standard errors of its exact
    expectation (``moments_law(..., drawn=True)`` at the groups' sizes received), z for a
    false failure of FALSE_FAILURE over the three; the truths are Beta(2, 5)'s, written here,
    and the variance's expectation is below the truth by exactly the mean's variance."""
    run = run_scenario(_file(tmp_path), out=tmp_path / "run", progress=False)
    z = stats.norm.isf(FALSE_FAILURE / 6)
    truths = {"mean": MEAN, "second_moment": VARIANCE + MEAN**2, "variance": VARIANCE}
    for part, truth in truths.items():
        row = _end(run.results, f"minutes:{part}", part)
        se = _end(run.results, f"minutes:{part}", "std_error")
        assert row.truth == pytest.approx(truth, rel=1e-9)
        assert abs(row.estimate - row.theory) <= z * se.theory, (part, row.estimate, row.theory, se.theory)
        assert row.ci_low < row.estimate < row.ci_high
        assert se.estimate == pytest.approx(se.theory, rel=0.1)  # the plug-in beside the exact
    mean_se = _end(run.results, "minutes:mean", "std_error").theory
    variance = _end(run.results, "minutes:variance", "variance")
    assert variance.theory == pytest.approx(VARIANCE - mean_se**2, rel=1e-9)
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "minutes:variance" in summary and "| expected |" in summary


@pytest.mark.parametrize("strategy", ["output_mean_variance", "input_mean_variance"])
def test_the_poisoned_mean_and_variance_match_expected_moments(tmp_path: Path, strategy: str) -> None:
    """The poisoned estimates within z exact standard errors of their exact expectations
    given the groups' sizes received, and of ``expected_moments`` at the attacker's share (the
    large-sample limit: its gap from the former is far below a standard error)."""
    run = run_scenario(
        _file(tmp_path, attackers=ATTACKER.format(strategy=strategy)), out=tmp_path / "r", progress=False
    )
    res = run.results
    sc = parse_scenario((tmp_path / "scenario.toml").read_text())
    mech = sc.questions.mechanism(0)
    limit = expected_moments(mech, strategy, (0.4, 0.05), 0.1, honest=(MEAN, VARIANCE + MEAN**2))
    z = stats.norm.isf(FALSE_FAILURE / 4)
    for part, exact in (("mean", limit.mean), ("variance", limit.variance)):
        row = _end(res, "minutes:attack", f"moved_{part}", "spreader")
        se = _end(res, "minutes:attack", f"moved_{part}_se", "spreader").theory
        assert abs(row.estimate - row.theory) <= z * se, (part, row.estimate, row.theory, se)
        assert abs(row.theory - exact) <= 0.25 * se, (part, row.theory, exact, se)
        assert abs(row.estimate - exact) <= z * se
    # what the analyst sees is the poisoned estimate
    assert _end(res, "minutes:mean", "mean").estimate == _end(res, "minutes:attack", "moved_mean", "spreader").estimate
    gain = _end(res, "minutes:attack", "gain", "spreader")
    assert gain.truth == pytest.approx(VARIANCE, rel=1e-9) and gain.estimate > 0
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert "variance_exact" in summary and "moving the mean towards 0.4 and the variance towards 0.05" in summary


def test_the_same_seed_gives_the_same_run_and_the_key_off_leaves_the_draws_alone(tmp_path: Path) -> None:
    attacked = _file(tmp_path, attackers=ATTACKER.format(strategy="input_mean_variance"))
    one = run_scenario(attacked, out=tmp_path / "one", progress=False)
    two = run_scenario(attacked, out=tmp_path / "two", progress=False)
    for name in ("results.csv", "summary.md"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert one.results.equals(two.results)
    off = parse_scenario(SCENARIO.format(question="variance = false", attackers="", mech="piecewise"))
    absent = parse_scenario(SCENARIO.format(question="", attackers="", mech="piecewise"))
    pd.testing.assert_frame_equal(run_replication(off, 0, 3), run_replication(absent, 0, 3))


def test_the_groups_are_halves_and_the_shards_change_nothing(tmp_path: Path) -> None:
    path = _file(tmp_path)
    one = run_scenario(path, out=tmp_path / "one", progress=False)
    run_scenario(path, out=tmp_path / "two", progress=False, shards=2)
    assert (tmp_path / "one" / "results.csv").read_bytes() == (tmp_path / "two" / "results.csv").read_bytes()
    n = _end(one.results, "minutes:mean", "mean").n_received
    assert n == 20000
    # the mean's exact variance is one report's over n_1 ~ Bin(n, 1/2): n_1 within z sqrt(n) / 2 of n / 2
    sc = parse_scenario(path.read_text())
    q = sc.questions.questions[0]
    n1 = q.report_law("split").mean_var / _end(one.results, "minutes:mean", "std_error").theory ** 2
    assert abs(n1 - n / 2) <= stats.norm.isf(FALSE_FAILURE / 2) * math.sqrt(n) / 2


@pytest.mark.parametrize(
    "question,attackers,mech,words",
    [
        ("", ATTACKER.format(strategy="output_mean_variance"), "piecewise", "set it on the question"),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean"\ntarget = 0.4',
            "piecewise",
            "attackers[0].strategy: got 'output_mean' on question 'minutes' (variance = true), expected "
            "output_mean_variance or input_mean_variance",
        ),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "input_mean_variance"',
            "piecewise",
            "attackers[0].target: got nothing, expected { mean = ..., variance = ... }",
        ),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "input_mean_variance"\ntarget = 0.3',
            "piecewise",
            "attackers[0].target: got 0.3, expected { mean = ..., variance = ... }",
        ),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean_variance"\n'
            "target = { mean = 0.3 }",
            "piecewise",
            "attackers[0].target: got the keys ['mean'], expected exactly mean and variance",
        ),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean_variance"\n'
            "target = { mean = 0.3, variance = -0.1 }",
            "piecewise",
            "attackers[0].target.variance: got -0.1, expected a number of at least 0",
        ),
        (
            "variance = true",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean_variance"\n'
            'target = { mean = "high", variance = 0.1 }',
            "piecewise",
            "attackers[0].target.mean: got 'high', expected a finite number",
        ),
        (
            "",
            '[[attackers]]\nshare = 0.1\nquestion = "minutes"\nstrategy = "output_mean"\n'
            "target = { mean = 0.3, variance = 0.1 }",
            "piecewise",
            "attackers[0].target: got {'mean': 0.3, 'variance': 0.1}, expected the value output_mean moves",
        ),
        ("variance = true", "", "oue", "questions[0].variance: got true with mechanism.kind = 'oue', expected a"),
        (
            'variance = true\nestimate = ["distribution"]',
            "",
            "square_wave",
            "questions[0].variance: got true with estimate = ['distribution'], expected estimate = ['mean']",
        ),
    ],
)
def test_bad_variance_keys_are_refused_in_one_line(question: str, attackers: str, mech: str, words: str) -> None:
    with pytest.raises(LdpSimError) as err:
        parse_scenario(SCENARIO.format(question=question, attackers=attackers, mech=mech))
    assert words in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_variance_on_a_categorical_question_is_refused() -> None:
    text = SCENARIO.format(question="variance = true", attackers="", mech="piecewise").replace(
        'kind = "numeric"\nrange = [0.0, 1.0]\nmechanism = { kind = "piecewise" }\n'
        'density = { kind = "beta", a = 2.0, b = 5.0 }',
        'kind = "categorical"\nanswers = { count = 4, prefix = "a" }\nlaw = { kind = "uniform" }\n'
        'mechanism = { kind = "randomized_response" }',
    )
    with pytest.raises(LdpSimError, match=r"questions\[0\]\.variance: got True, expected no variance"):
        parse_scenario(text)
