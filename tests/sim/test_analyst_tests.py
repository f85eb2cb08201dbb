"""The tests of :mod:`ldpsim.analyst.hypotheses` as scenario tasks: every row at every
checkpoint, the rejection rate of a true null within its binomial interval over the
replications, the power column beside the measured rate, and one-line errors at load."""

from __future__ import annotations

import textwrap

import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import load_scenario, run_scenario
from tests.stats_checks import FALSE_FAILURE

TRUTH = [0.4, 0.3, 0.2, 0.1]


def _scenario(
    tmp_path, tasks: str, replications: int = 1, mechanism: str = "randomized_response", mode: str = "aggregate"
) -> str:
    text = textwrap.dedent(
        f"""
        name = "tests"
        [population]
        labels = ["a", "b", "c", "d"]
        distribution = {TRUTH}
        size = 1500
        [mechanism]
        kind = "{mechanism}"
        eps = 1.0
        [arrivals]
        kind = "poisson"
        duration = 10.0
        [network]
        latency = {{ kind = "constant", value = 0.0 }}
        loss = 0.0
        [analyst]
        checkpoints = {{ every = 5.0 }}
        tasks = [{{ kind = "frequency" }}, {tasks}]
        [simulation]
        mode = "{mode}"
        replications = {replications}
        seed = 11
        """
    )
    path = tmp_path / "tests.toml"
    path.write_text(text)
    return str(path)


ALL = (
    f'{{ kind = "goodness_of_fit", reference = {TRUTH}, draws = 199 }}, '
    '{ kind = "uniformity", draws = 199 }, '
    '{ kind = "uniformity", name = "uniform_seq", sequential = true }, '
    '{ kind = "change", since = 5.0, draws = 199 }, '
    '{ kind = "share", answer = "a", threshold = 0.3, draws = 199 }, '
    f'{{ kind = "mary", hypotheses = [{TRUTH}, [0.25, 0.25, 0.25, 0.25]], rule = "minimax" }}'
)


def test_every_test_writes_its_rows(tmp_path):
    run = run_scenario(_scenario(tmp_path, ALL), out=tmp_path / "run", progress=False)
    res = run.results
    end = res[res["reason"] == "end"]
    q = set(end["quantity"])
    assert {"goodness_of_fit_p_value", "uniformity_reject", "uniformity_e_value", "change_p_value"} <= q
    assert {"share_reject", "mary_decision", "mary_posterior"} <= q
    row = lambda task, quantity: end[(end["task"] == task) & (end["quantity"] == quantity)].iloc[0]  # noqa: E731
    assert row("uniformity", "uniformity_reject")["estimate"] == 1.0  # 1,500 reports see the skew
    assert row("uniformity", "uniformity_reject")["truth"] == 1.0
    assert row("mary", "mary_decision")["estimate"] == 0.0 and row("mary", "mary_decision")["truth"] == 0.0
    assert 0.0 < row("share", "share_reject")["theory"] < 1.0  # the power at the truth, by the normal law
    summary = (run.run_dir / "summary.md").read_text()
    assert "goodness_of_fit_reject" in summary and "rate_low" in summary


def test_true_nulls_keep_their_level_over_replications(tmp_path):
    reps = 100
    tasks = (
        f'{{ kind = "goodness_of_fit", reference = {TRUTH}, draws = 99 }}, '
        '{ kind = "change", since = 5.0, draws = 99 }'
    )
    run = run_scenario(_scenario(tmp_path, tasks, replications=reps), out=tmp_path / "run", progress=False)
    res = run.results
    end = res[res["reason"] == "end"]
    hi = stats.binom.isf(FALSE_FAILURE / 2, reps, 0.05)
    for quantity in ("goodness_of_fit_reject", "change_reject"):
        decisions = end.loc[end["quantity"] == quantity, "estimate"]
        assert decisions.notna().all() and len(decisions) == reps
        rejections = decisions.sum()
        assert rejections <= hi, (quantity, rejections)


@pytest.mark.parametrize(
    "tasks, match",
    [
        ('{ kind = "goodness_of_fit", reference = [0.5, 0.5] }', "reference with one entry per label"),
        ('{ kind = "share", answer = "zz", threshold = 0.3 }', "answer: got 'zz'"),
        ('{ kind = "share", answer = 7, threshold = 0.3 }', "answer index below 4"),
        ('{ kind = "mary", hypotheses = [[0.5, 0.5, 0, 0], [1, 0, 0]] }', r"hypotheses\[1\]"),
        ('{ kind = "uniformity", alpha = 1.5 }', "alpha"),
    ],
)
def test_bad_tests_are_one_line_at_load(tmp_path, tasks, match):
    with pytest.raises(LdpSimError, match=match) as err:
        load_scenario(_scenario(tmp_path, tasks))
    assert "\n" not in str(err.value)


def test_sequential_on_reports_needs_individual_mode(tmp_path):
    with pytest.raises(LdpSimError, match="simulation.mode = 'individual'"):
        load_scenario(_scenario(tmp_path, '{ kind = "uniformity", sequential = true }', mechanism="oue"))
    with pytest.raises(LdpSimError, match="sequential = true"):  # the fixed-n change test reads output counts
        load_scenario(_scenario(tmp_path, '{ kind = "change", since = 5.0 }', mechanism="oue", mode="individual"))


SEQUENTIAL = (
    '{ kind = "goodness_of_fit", reference = [0.25, 0.25, 0.25, 0.25], sequential = true }, '
    f'{{ kind = "goodness_of_fit", name = "fit_truth", reference = {TRUTH}, sequential = true }}, '
    '{ kind = "change", since = 5.0, sequential = true }, '
    '{ kind = "share", answer = "a", threshold = 0.2, sequential = true }, '
    f'{{ kind = "mary", hypotheses = [{TRUTH}, [0.1, 0.2, 0.3, 0.4]], sequential = true }}'
)


@pytest.mark.parametrize("mechanism", ["oue", "olh", "randomized_response"])
def test_sequential_tests_on_every_oracle(tmp_path, mechanism):
    """Vector and hashed reports are bet on one by one in individual mode (finite mechanisms
    keep the likelihood mixtures): every row, and the clear alternatives found."""
    path = _scenario(tmp_path, SEQUENTIAL, mechanism=mechanism, mode="individual")
    run = run_scenario(path, out=tmp_path / "run", progress=False)
    end = run.results[run.results["reason"] == "end"]
    row = lambda task, quantity: end[(end["task"] == task) & (end["quantity"] == quantity)].iloc[0]  # noqa: E731
    assert row("goodness_of_fit", "goodness_of_fit_reject")["estimate"] == 1.0  # far from uniform
    assert row("share", "share_reject")["estimate"] == 1.0  # 0.4 against at most 0.2
    assert row("mary", "mary_decision")["estimate"] == 0.0 and row("mary", "mary_rejected")["estimate"] == 1.0
    assert {"fit_truth", "change"} <= set(end["task"])
    assert end.loc[end["quantity"] == "change_log_e_value", "estimate"].notna().all()


def _with_tests(tmp_path, tables: str) -> str:
    path = _scenario(tmp_path, '{ kind = "frequency", name = "shares" }')
    text = open(path).read().replace("[simulation]", tables + "\n[simulation]")
    open(path, "w").write(text)
    return path


def test_tests_may_be_written_as_tables_of_their_own(tmp_path):
    """``[[analyst.tests]]`` entries are tasks of the one registry, after ``tasks``."""
    tables = textwrap.dedent(
        f"""
        [[analyst.tests]]
        kind = "goodness_of_fit"
        reference = {TRUTH}
        alpha = 0.01
        draws = 99

        [[analyst.tests]]
        kind = "uniformity"
        sequential = true
        """
    )
    run = run_scenario(_with_tests(tmp_path, tables), out=tmp_path / "run", progress=False)
    tasks = list(dict.fromkeys(run.results["task"]))
    assert [t for t in tasks if t in ("shares", "goodness_of_fit", "uniformity")] == [
        "shares",
        "goodness_of_fit",
        "uniformity",
    ]
    assert run.scenario.spec.analyst.tests[0]["alpha"] == 0.01


@pytest.mark.parametrize(
    "tables, match",
    [
        ('[[analyst.tests]]\nkind = "frequency"', r"analyst.tests\[0\].kind: got 'frequency', expected one of the"),
        ('[[analyst.tests]]\nkind = "uniformity"\n[[analyst.tests]]\nkind = "share"', r"analyst.tests\[1\]\.answer"),
        ('[[analyst.tests]]\nkind = "uniformity"\nalpha = 2.0', r"analyst.tests\[0\]\.alpha"),
    ],
)
def test_a_bad_test_table_is_named(tmp_path, tables, match):
    with pytest.raises(LdpSimError, match=match) as err:
        load_scenario(_with_tests(tmp_path, tables))
    assert "\n" not in str(err.value)
