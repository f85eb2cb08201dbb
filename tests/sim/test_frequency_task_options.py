"""The frequency task's choices in scenario files: estimator, interval, simultaneous,
confidence; results.csv carries the choice in its ``method`` column."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from ldpsim.analyst import confidence_intervals, em_estimate, frequency_estimate, project_to_simplex
from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.sim.helpers import scenario_text

ESTIMATORS = ["inversion", "projected", "norm_sub", "base_cut", "em"]
INTERVALS = ["normal", "hoeffding", "sequence"]


def _run(task: str, **kw):
    text = scenario_text(size=20_000, **kw).replace(
        "checkpoints = { every = 1.0 }", f"checkpoints = {{ every = 1.0 }}\ntasks = [{task}]"
    )
    sc = parse_scenario(text, "t.toml")
    return sc, run_replication(sc, 0, 11)


@pytest.mark.parametrize(
    "estimator, interval, simultaneous", list(itertools.product(ESTIMATORS, INTERVALS, [False, True]))
)
def test_every_choice_runs_and_is_recorded(estimator, interval, simultaneous):
    task = (
        f'{{ kind = "frequency", estimator = "{estimator}", interval = "{interval}", simultaneous = '
        f"{str(simultaneous).lower()} }}"
    )
    sc, rows = _run(task)
    final = rows[(rows["reason"] == "end") & (rows["quantity"] == "frequency")]
    method = f"{estimator}/{interval}" + ("+bonferroni" if simultaneous else "")
    assert set(final["method"]) == {method}
    assert set(rows[rows["quantity"] != "frequency"]["method"].fillna("")) <= {""}
    est = final["estimate"].to_numpy()
    if estimator in ("projected", "norm_sub", "em"):  # on the simplex
        assert np.all(est >= 0) and abs(est.sum() - 1) < 1e-9
    lo, hi = final["ci_low"].to_numpy(), final["ci_high"].to_numpy()
    assert np.all(lo <= hi) and np.all(lo >= 0) and np.all(hi <= 1)


def test_widths_order_normal_bonferroni_sequence():
    def width(interval, simultaneous="false"):
        _, rows = _run(f'{{ kind = "frequency", interval = "{interval}", simultaneous = {simultaneous} }}')
        f = rows[(rows["reason"] == "end") & (rows["quantity"] == "frequency")]
        return float((f["ci_high"] - f["ci_low"]).mean())

    assert width("normal") < width("normal", "true") < width("sequence", "true")
    assert width("normal") < width("hoeffding")


def test_the_rows_are_the_analyst_functions_of_the_server_counts():
    """With the server's counts kept (every report stored), each task's rows are exactly the
    analyst's functions of them: the point estimate of its estimator, the interval of the
    unbiased estimate."""
    tasks = (
        '{ kind = "frequency", name = "em", estimator = "em" }, '
        '{ kind = "frequency", name = "proj", estimator = "projected", interval = "sequence" }'
    )
    text = scenario_text(size=20_000).replace(
        "checkpoints = { every = 1.0 }", f"checkpoints = {{ every = 1.0 }}\ntasks = [{tasks}]"
    )
    sc = parse_scenario(text.replace("[server]\n", "[server]\nkeep_reports = true\n"), "t.toml")
    from ldpsim.sim.engine import Replication

    rep = Replication(sc, 0, 11)
    rows = rep.run()
    reports, _ = rep.server.stored_reports()
    counts = np.bincount(reports, minlength=sc.mechanism.m)
    end = rows[(rows["reason"] == "end") & (rows["quantity"] == "frequency")]
    em = end[end["task"] == "em"]
    np.testing.assert_allclose(em["estimate"], em_estimate(sc.mechanism, counts).estimate, rtol=0, atol=1e-15)
    proj = end[end["task"] == "proj"]
    np.testing.assert_allclose(
        proj["estimate"], project_to_simplex(frequency_estimate(sc.mechanism, counts).estimate), atol=1e-15
    )
    ci = confidence_intervals(sc.mechanism, counts, method="sequence", n_plan=20_000)
    # beside a projected estimate the unbiased interval is intersected with [0, 1] (docs/analyst.md)
    np.testing.assert_allclose(proj["ci_low"], np.clip(ci["ci_low"], 0, 1), atol=1e-15)
    np.testing.assert_allclose(proj["ci_high"], np.clip(ci["ci_high"], 0, 1), atol=1e-15)


@pytest.mark.parametrize(
    "task, key",
    [
        ('{ kind = "frequency", estimator = "mle" }', "analyst.tasks[0].estimator"),
        ('{ kind = "frequency", interval = "wald" }', "analyst.tasks[0].interval"),
        ('{ kind = "frequency", simultaneous = 1 }', "analyst.tasks[0].simultaneous"),
    ],
)
def test_bad_choices_are_one_line_errors(task, key):
    with pytest.raises(LdpSimError, match="^t.toml: " + re.escape(key)) as info:
        parse_scenario(
            scenario_text().replace(
                "checkpoints = { every = 1.0 }", f"checkpoints = {{ every = 1.0 }}\ntasks = [{task}]"
            ),
            "t.toml",
        )
    assert "\n" not in str(info.value)


def test_the_seed_keyword_and_its_deprecated_spelling_entropy_give_the_same_rows():
    sc = parse_scenario(scenario_text(size=2_000), "t.toml")
    rows = run_replication(sc, 0, seed=11)
    with pytest.warns(DeprecationWarning, match="entropy= .* use seed="):
        old = run_replication(sc, 0, entropy=11)
    assert rows.equals(old) and rows.equals(run_replication(sc, 0, 11))
