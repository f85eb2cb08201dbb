"""``[budget] strategy = "optimal"`` and ``ldpsim recommend --survey``: the split of the budget
that minimises the weighted sum of exact variances, against a brute-force search over a fine
grid of splits using the closed form of randomized response's variance (computed here, not
by the library); the plan beside the equal split and one random question; errors in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_scenario
from tests.cli_helpers import run_cli


def _text(strategy: str = "optimal", extra: str = "", eps: str = "", size: int = 50_000) -> str:
    return f"""
name = "budget"
[population]
size = {size}
[budget]
total = 2.0
strategy = "{strategy}"
{extra}
[[questions]]
name = "a"
labels = ["x", "y"]
distribution = [0.3, 0.7]
mechanism = {{ kind = "randomized_response" }}
{eps}
[[questions]]
name = "b"
labels = ["p", "q", "r", "s", "t", "u"]
distribution = [0.3, 0.2, 0.2, 0.1, 0.1, 0.1]
mechanism = {{ kind = "randomized_response" }}
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency" }}]
[simulation]
seed = 1
end = 1.0
tick = 1.0
"""


def _rr_variance(p: list[float], eps: float, n: int) -> float:
    """Sum over answers of Var(f_i) for k-ary randomized response: pi (1 - pi) / (n (P - Q)^2)."""
    k, e = len(p), math.exp(eps)
    big, small = e / (e + k - 1), 1 / (e + k - 1)
    return sum((x * (big - small) + small) * (1 - x * (big - small) - small) for x in p) / (n * (big - small) ** 2)


@pytest.mark.parametrize("weights", [None, {"a": 1.0, "b": 50.0}])
def test_the_optimal_split_is_the_brute_force_minimum(weights):
    extra = "" if weights is None else "weights = { " + ", ".join(f"{k} = {v}" for k, v in weights.items()) + " }"
    sc = parse_scenario(_text(extra=extra))
    plan = sc.questions.plan.set_index("question")
    pa, pb, n = [0.3, 0.7], [0.3, 0.2, 0.2, 0.1, 0.1, 0.1], 50_000
    wa = 1 / _rr_variance(pa, 2.0, n) if weights is None else weights["a"]
    wb = 1 / _rr_variance(pb, 2.0, n) if weights is None else weights["b"]
    grid = np.linspace(1e-3, 2.0 - 1e-3, 200_001)
    loss = [wa * _rr_variance(pa, e, n) + wb * _rr_variance(pb, 2.0 - e, n) for e in grid]
    best = float(grid[int(np.argmin(loss))])
    assert plan.loc["a", "eps_optimal"] == pytest.approx(best, abs=2e-4)
    assert plan.loc["a", "eps_optimal"] + plan.loc["b", "eps_optimal"] == pytest.approx(2.0, rel=1e-12)
    assert plan.loc["a", "weight"] == pytest.approx(wa, rel=1e-9)
    assert plan.loc["a", "var_optimal"] == pytest.approx(_rr_variance(pa, plan.loc["a", "eps_optimal"], n), rel=1e-9)
    # the run's mechanisms are at the optimal eps, and the respondent's privacy is the budget
    assert [m.epsilon() for _, m in sc.mechanisms] == pytest.approx(list(plan["eps_optimal"]), rel=1e-9)
    assert sc.questions.privacy.set_index("strategy").loc["split", "eps"] == pytest.approx(2.0, rel=1e-12)


def test_an_optimal_run_reports_its_plan_beside_the_equal_split_and_one_random_question(tmp_path):
    result = run_scenario(parse_scenario(_text(size=2000)), out=tmp_path / "run", progress=False)
    summary = (result.run_dir / "summary.md").read_text()
    assert "The optimal split" in summary and "| optimal split |" in summary and "| one random question |" in summary


def test_recommend_survey_prints_the_plan_without_running(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(_text(strategy="split"))
    r = run_cli("recommend", "--survey", path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "budget strategy optimal" in r.stdout and "effective_sample_size_gain" in r.stdout
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (_text(eps="eps = 1.0"), r"questions\[0\]\.eps: got 1\.0, expected no eps with budget\.strategy = 'optimal'"),
        (_text(extra="weights = { c = 1.0 }"), r"budget\.weights: got 'c', expected the name of a question"),
    ],
)
def test_bad_optimal_budgets_are_one_line(text, match):
    with pytest.raises(LdpSimError, match=match) as info:
        parse_scenario(text)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("argv", "word"),
    [(["recommend", "--survey", "survey"], "--survey"), (["recommend", "--survey", "anes96", "--k", "3"], "--k")],
)
def test_recommend_survey_refuses_in_one_line(argv, word, tmp_path):
    r = run_cli(*argv, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and word in r.stderr
