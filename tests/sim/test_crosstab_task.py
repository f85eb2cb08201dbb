"""``[analyst] crosstabs``: the joint table of two questions and a test of independence
from the pairs of reports (strategy ``split``).

Reference values are computed here independently: the joint counts from the stored reports
of the two questions (paired by arrival), the true joint table from the CSV file, the
analyst's functions called directly on those counts, and scipy's Pearson test on the
table's own counts. Tolerance of the estimate: 6 exact standard errors per cell (normal
tail 2e-9 per cell, under 1e-7 for the 14 cells; n = 20,000 pairs)."""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import (
    crosstab_estimate,
    independence_test,
    joint_output_counts,
    project_to_simplex,
)
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import product_mechanism
from ldpsim.sim import parse_scenario, run_scenario
from ldpsim.sim.engine import Replication
from tests.sim.helpers import EDUCATION, SCENARIOS, VOTE


def _text(
    size: str = "size = 20000",
    strategy: str = "split",
    crosstabs: str = '[{ rows = "education", columns = "vote" }]',
    loss: float = 0.05,
    total: float = 4.0,
    extra_question: str = "",
) -> str:
    return f"""
name = "xt"
[population]
file = "data/anes96.csv"
{size}
[budget]
total = {total}
strategy = "{strategy}"
[[questions]]
name = "education"
labels = {EDUCATION!r}
mechanism = {{ kind = "randomized_response" }}
[[questions]]
name = "vote"
mechanism = {{ kind = "randomized_response" }}
{extra_question}
[arrivals]
kind = "poisson"
duration = 2.0
[network]
loss = {loss}
[server]
keep_reports = true
[analyst]
checkpoints = {{ every = 1.0 }}
crosstabs = {crosstabs}
[simulation]
seed = 7
"""


def _table_counts() -> np.ndarray:
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        pairs = Counter((row["education"], row["vote"]) for row in csv.DictReader(f))
    return np.array([[pairs[(e, v)] for v in VOTE] for e in EDUCATION], dtype=np.int64)


def _run(text: str) -> tuple:
    sc = parse_scenario(text, str(SCENARIOS / "t.toml"))
    rep = Replication(sc, 0, 11)
    rows = rep.run()
    a, _ = rep.servers[0].stored_reports()
    b, _ = rep.servers[1].stored_reports()
    mech = product_mechanism(sc.questions.mechanism(0), sc.questions.mechanism(1))
    counts = joint_output_counts(a, b, sc.questions.mechanism(0).output_size, sc.questions.mechanism(1).output_size)
    end = rows[(rows["task"] == "education x vote:crosstab") & (rows["reason"] == "end")]
    return sc, rows, end, mech, counts


def _value(end, quantity: str, test: str) -> float:
    return float(end[(end["quantity"] == quantity) & (end["category"] == test)]["estimate"].iloc[0])


def test_the_estimated_joint_table_is_within_six_exact_standard_errors():
    _, rows, end, mech, counts = _run(_text())
    n = int(counts.sum())
    assert n == int(end["n_received"].iloc[0]) > 18_000
    truth = _table_counts() / 944
    cells = end[end["quantity"] == "joint"]
    assert list(cells["category"]) == [f"{e} / {v}" for e in EDUCATION for v in VOTE]
    np.testing.assert_allclose(cells["truth"], truth.ravel(), rtol=1e-12)
    unbiased = crosstab_estimate(mech, counts, (7, 2)).estimate.ravel()
    exact_se = np.sqrt(np.diag(mech.estimate_covariance(truth.ravel(), float(n))))
    assert np.all(np.abs(unbiased - truth.ravel()) < 6 * exact_se)
    np.testing.assert_allclose(cells["theory"], exact_se, rtol=1e-9)
    np.testing.assert_allclose(cells["estimate"], project_to_simplex(unbiased), atol=1e-12)
    # the projection is non-expansive: it is no farther from the truth than the unbiased estimate
    assert np.linalg.norm(cells["estimate"] - truth.ravel()) <= np.linalg.norm(unbiased - truth.ravel()) + 1e-12
    # one set of rows at every checkpoint the frequency tasks have
    seen = rows[(rows["task"] == "education x vote:crosstab") & (rows["quantity"] == "joint")]["checkpoint"]
    assert set(seen) == set(rows[rows["quantity"] == "frequency"]["checkpoint"]) and seen.nunique() >= 2


def test_the_tests_match_the_analyst_and_scipy_called_directly():
    """The table as is, no loss: the 944 respondents all report, so Pearson's test runs on
    the table's own joint counts (read from the CSV here)."""
    _, _, end, mech, counts = _run(_text(size="", loss=0.0))
    assert int(end["n_received"].iloc[0]) == 944
    direct = independence_test(mech, counts, (7, 2))
    assert _value(end, "independence_statistic", "ldp") == pytest.approx(direct.statistic, rel=1e-12)
    assert _value(end, "independence_p_value", "ldp") == pytest.approx(direct.p_value, rel=1e-12)
    assert _value(end, "independence_df", "ldp") == direct.df == 6
    assert _value(end, "independence_reject", "ldp") == float(direct.reject(0.05))
    res = stats.chi2_contingency(_table_counts(), correction=False)
    assert _value(end, "independence_statistic", "pearson") == pytest.approx(res.statistic, rel=1e-12)
    assert _value(end, "independence_p_value", "pearson") == pytest.approx(res.pvalue, rel=1e-12)
    assert _value(end, "independence_df", "pearson") == res.dof
    assert _value(end, "independence_reject", "pearson") == float(res.pvalue <= 0.05)


def test_a_run_reports_the_crosstab_in_summary_and_metadata(tmp_path):
    text = (SCENARIOS / "anes96_crosstab.toml").read_text().replace("size = 1_000_000", "size = 20_000")
    sc = parse_scenario(text, str(SCENARIOS / "anes96_crosstab.toml"))
    result = run_scenario(sc, out=tmp_path / "run", progress=False)
    assert "education x vote:crosstab" in set(result.results["task"])
    summary = (result.run_dir / "summary.md").read_text()
    assert "## Cross-tabulations" in summary and "| education x vote:crosstab | pearson |" in summary
    assert "## Other analyst tasks" not in summary  # the crosstab rows have their own tables


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (
            {"strategy": "one_random"},
            "analyst.crosstabs: got 1 cross-tabulation(s) with budget.strategy = 'one_random'",
        ),
        ({"crosstabs": '[{ rows = "education", columns = "votes" }]'}, "analyst.crosstabs[0].columns: got 'votes'"),
        (
            {
                "crosstabs": '[{ rows = "age", columns = "vote" }]',
                "total": 6.0,
                "extra_question": '[[questions]]\nname = "age"\ntype = "numeric"\nrange = [18, 100]\nvariance = true'
                '\nmechanism = { kind = "piecewise" }',
            },
            "analyst.crosstabs[0].rows: got 'age', a numeric question without an unbiased term per report",
        ),
        (
            {
                "crosstabs": '[{ rows = "party_id", columns = "vote" }, { rows = "party_id", columns = "vote" }]',
                "total": 6.0,
                "extra_question": '[[questions]]\nname = "party_id"\nmechanism = { kind = "oue" }',
            },
            "analyst.crosstabs[1]: got 'party_id' x 'vote' twice",
        ),
        (
            {"crosstabs": '[{ rows = "vote", columns = "vote" }]'},
            "analyst.crosstabs[0].columns: got 'vote', expected a question other",
        ),
        ({"crosstabs": '[{ rows = "vote" }]'}, "analyst.crosstabs[0].columns:"),
    ],
)
def test_errors_are_one_line_naming_file_and_key(change, key):
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_text(**change), str(SCENARIOS / "t.toml"))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{SCENARIOS / 't.toml'}: {key}"), message


def test_a_single_question_scenario_refuses_crosstabs():
    text = (
        (SCENARIOS / "anes96_party.toml")
        .read_text()
        .replace("[analyst]", '[analyst]\ncrosstabs = [{ rows = "a", columns = "b" }]')
    )
    with pytest.raises(LdpSimError, match=r"anes96_party\.toml: analyst\.crosstabs") as info:
        parse_scenario(text, str(SCENARIOS / "anes96_party.toml"))
    assert "\n" not in str(info.value)


def test_an_ordinal_question_cross_tabulates_through_its_range_method():
    """Education as an ordinal question privatised by the hierarchical method: the pairs of
    its reports with the vote's are one report of the product of the two finite mechanisms,
    and the task's test is the analyst's on the stored pairs."""
    flat = 'mechanism = { kind = "randomized_response" }\n[[questions]]\nname = "vote"'
    tree = 'mechanism = { kind = "hierarchical", fanout = 2, oracle = "randomized_response" }'
    text = _text(size="", loss=0.0)
    text = text.replace('name = "education"\nlabels', 'name = "education"\nkind = "ordinal"\nlabels')
    text = text.replace(flat, tree + '\n[[questions]]\nname = "vote"')
    assert 'kind = "ordinal"' in text and "hierarchical" in text
    sc, _, end, mech, counts = _run(text)
    assert sc.questions.questions[0].kind == "ordinal"
    direct = independence_test(mech, counts, (7, 2))
    assert _value(end, "independence_statistic", "ldp") == pytest.approx(direct.statistic, rel=1e-12)
    assert _value(end, "independence_p_value", "ldp") == pytest.approx(direct.p_value, rel=1e-12)
