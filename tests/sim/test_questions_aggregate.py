"""Aggregate mode for ``[[questions]]``: exact counts by respondent type.

References are computed here independently: the truth from the CSV file's own counts, the
exact standard errors from the closed form of k-ary randomized response (``a = e^eps /
(e^eps + k - 1)`` on the diagonal, ``b = 1 / (e^eps + k - 1)`` elsewhere; the inversion
estimate of answer x at n reports has variance ``f_x (1 - f_x) / (n (a - b)^2)``, ``f = b +
(a - b) p``), and the joint table's from the Kronecker product of the two hand-built
matrices; the tests of independence from the analyst and scipy called on the same counts.
Tolerances: 6 exact standard errors per answer or cell (normal tail 2e-9 each; about 40
answers and cells in all: false failure below 1e-7), binomial counts within 6 standard
deviations.
"""

from __future__ import annotations

import csv
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import crosstab_estimate, independence_test
from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario
from ldpsim.sim.engine import Replication
from tests.sim.helpers import (
    EDUCATION,
    SCENARIOS,
    VOTE,
    same_bytes_with_one_and_two_workers,
)

EPS = 1.5  # each question's, under split (total 4.5 over three questions)


def _text(
    *,
    size: str = "size = 200000",
    strategy: str = "split",
    loss: float = 0.05,
    crosstabs: str | None = None,
    extra: str = "",
    total: float = 3 * EPS,
) -> str:
    xt = crosstabs if crosstabs is not None else '[{ rows = "education", columns = "vote" }]'
    return f"""
name = "qa"
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
[[questions]]
name = "party_id"
mechanism = {{ kind = "randomized_response" }}
{extra}
[arrivals]
kind = "poisson"
duration = 2.0
[network]
latency = {{ kind = "exponential", mean = 0.2 }}
loss = {loss}
[analyst]
checkpoints = {{ every = 1.0 }}
crosstabs = {xt}
[simulation]
mode = "aggregate"
seed = 7
"""


def _rows() -> list[dict[str, str]]:
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _rr(k: int, eps: float) -> tuple[np.ndarray, float, float]:
    a, b = math.exp(eps) / (math.exp(eps) + k - 1), 1.0 / (math.exp(eps) + k - 1)
    return np.full((k, k), b) + (a - b) * np.eye(k), a, b


def _marginal_se(p: np.ndarray, eps: float, n: float) -> np.ndarray:
    _, a, b = _rr(len(p), eps)
    f = b + (a - b) * p
    return np.sqrt(f * (1 - f) / (n * (a - b) ** 2))


def _run(text: str, seed: int = 11):
    sc = parse_scenario(text, str(SCENARIOS / "t.toml"))
    rep = Replication(sc, 0, seed)
    rows = rep.run()
    return sc, rep, rows[rows["reason"] == "end"]


def _check_marginals(sc, end, eps: float) -> None:
    data = _rows()
    for q in sc.questions.questions:
        counts = Counter(row[q.column] for row in data)
        truth = np.array([counts[label] for label in q.labels], dtype=np.float64) / len(data)
        f = end[(end["task"] == f"{q.name}:frequency") & (end["quantity"] == "frequency")]
        n = float(f["n_received"].iloc[0])
        se = _marginal_se(truth, eps, n)
        np.testing.assert_allclose(f["truth"], truth, rtol=1e-12)
        assert np.all(np.abs(f["estimate"].to_numpy() - truth) < 6 * se), q.name
        theory = end[(end["task"] == f"{q.name}:frequency") & (end["quantity"] == "std_error")]["theory"]
        np.testing.assert_allclose(theory, se, rtol=1e-9)


def test_split_marginals_and_crosstab_are_exact():
    sc, rep, end = _run(_text())
    engine = end[end["task"] == "engine"].set_index("quantity")["estimate"]
    received = engine["received"]
    assert engine["clients"] == 200_000 and received == 200_000 - engine["lost"] - engine["in_flight"]
    # every respondent's reports are lost together: Binomial(200000, 0.05) lost
    assert abs(engine["lost"] - 10_000) < 6 * math.sqrt(200_000 * 0.05 * 0.95)
    assert all(s.n_received == received for s in rep.servers)
    _check_marginals(sc, end, EPS)
    # the joint table: the unbiased estimate from the pairs' output counts, against the exact
    # covariance of the product of the two hand-built matrices at the table's joint law
    _, xt, joint, true_joint = rep.crosstabs[0]
    pairs = Counter((row["education"], row["vote"]) for row in _rows())
    truth = np.array([pairs[(e, v)] for e in EDUCATION for v in VOTE], dtype=np.float64) / 944
    matrix = np.kron(_rr(7, EPS)[0], _rr(2, EPS)[0])
    f = matrix.T @ truth
    inverse = np.linalg.inv(matrix.T)
    cov = inverse @ ((np.diag(f) - np.outer(f, f)) / received) @ inverse.T
    unbiased = crosstab_estimate(xt.mechanism, joint, (7, 2)).estimate.ravel()
    assert joint.sum() == true_joint.sum() == received
    assert np.all(np.abs(unbiased - truth) < 6 * np.sqrt(np.diag(cov)))
    cells = end[(end["task"] == "education x vote:crosstab") & (end["quantity"] == "joint")]
    np.testing.assert_allclose(cells["theory"], np.sqrt(np.diag(cov)), rtol=1e-9)
    # the two questions' statistics are the joint output counts' margins
    grid = joint.reshape(7, 2)
    np.testing.assert_array_equal(rep.servers[0].counts, grid.sum(axis=1))
    np.testing.assert_array_equal(rep.servers[1].counts, grid.sum(axis=0))
    # the tests on the same counts: the analyst's Wald test, scipy's Pearson test
    tests = end[end["task"] == "education x vote:crosstab"]

    def value(quantity, which):
        return float(tests[(tests["quantity"] == quantity) & (tests["category"] == which)]["estimate"].iloc[0])

    direct = independence_test(xt.mechanism, joint, (7, 2))
    assert value("independence_p_value", "ldp") == pytest.approx(direct.p_value, rel=1e-12)
    assert value("independence_statistic", "ldp") == pytest.approx(direct.statistic, rel=1e-12)
    pearson = stats.chi2_contingency(true_joint.reshape(7, 2), correction=False)
    assert value("independence_p_value", "pearson") == pytest.approx(pearson.pvalue, rel=1e-12, abs=1e-300)


def test_the_table_as_is_gives_its_own_joint_counts():
    sc, rep, end = _run(
        _text(size="", loss=0.0).replace('kind = "exponential", mean = 0.2', 'kind = "constant", value = 0.0')
    )
    _, _, joint, true_joint = rep.crosstabs[0]
    pairs = Counter((row["education"], row["vote"]) for row in _rows())
    np.testing.assert_array_equal(true_joint, [pairs[(e, v)] for e in EDUCATION for v in VOTE])
    assert all(s.n_received == 944 for s in rep.servers)


def test_one_random_splits_the_respondents_among_the_questions():
    sc, rep, end = _run(_text(strategy="one_random", crosstabs="[]", total=EPS))
    received = end[(end["task"] == "engine") & (end["quantity"] == "received")]["estimate"].iloc[0]
    per = [s.n_received for s in rep.servers]
    assert sum(per) == received
    for n in per:  # Binomial(received, 1/3)
        assert abs(n - received / 3) < 6 * math.sqrt(received * 2 / 9)
    _check_marginals(sc, end, EPS)


def test_questions_from_laws():
    text = """
name = "laws"
[population]
size = 300000
[budget]
total = 2.0
strategy = "split"
[[questions]]
name = "a"
labels = ["x", "y", "z"]
distribution = [0.5, 0.3, 0.2]
mechanism = { kind = "randomized_response" }
[[questions]]
name = "b"
labels = ["u", "v"]
distribution = [0.6, 0.4]
mechanism = { kind = "randomized_response" }
[arrivals]
kind = "all_at_once"
[analyst]
crosstabs = [{ rows = "a", columns = "b" }]
[simulation]
mode = "aggregate"
seed = 3
end = 1.0
tick = 1.0
"""
    sc, rep, end = _run(text)
    for name, p in (("a", np.array([0.5, 0.3, 0.2])), ("b", np.array([0.6, 0.4]))):
        f = end[(end["task"] == f"{name}:frequency") & (end["quantity"] == "frequency")]
        assert np.all(np.abs(f["estimate"].to_numpy() - p) < 6 * _marginal_se(p, 1.0, 300_000))
    _, xt, joint, true_joint = rep.crosstabs[0]
    truth = np.outer([0.5, 0.3, 0.2], [0.6, 0.4]).ravel()
    matrix = np.kron(_rr(3, 1.0)[0], _rr(2, 1.0)[0])
    f = matrix.T @ truth
    inverse = np.linalg.inv(matrix.T)
    cov = inverse @ ((np.diag(f) - np.outer(f, f)) / 300_000) @ inverse.T
    unbiased = crosstab_estimate(xt.mechanism, joint, (3, 2)).estimate.ravel()
    assert np.all(np.abs(unbiased - truth) < 6 * np.sqrt(np.diag(cov)))


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    path = SCENARIOS / "qa_workers_tmp.toml"  # the table is found next to the scenarios
    text = _text(size="size = 5000").replace("seed = 7", "seed = 7\nreplications = 3")
    sc = parse_scenario(text, str(path))
    same_bytes_with_one_and_two_workers(sc, tmp_path)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (
            dict(
                extra='[[questions]]\nname = "age"\ntype = "numeric"\nrange = [17, 91]\nmechanism = { kind = "duchi" }'
            ),
            "questions[3].type",
        ),
        (dict(extra='[[questions]]\nname = "income"\nmechanism = { kind = "olh" }'), "questions[3].mechanism.kind"),
        (
            dict(crosstabs='[{ rows = "education", columns = "vote" }, { rows = "party_id", columns = "vote" }]'),
            "analyst.crosstabs[1].columns",
        ),
    ],
)
def test_errors_are_one_line_naming_file_and_key(change, key):
    if "extra" in change:
        change = {**change, "total": 4 * EPS}
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_text(**change), str(SCENARIOS / "t.toml"))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{SCENARIOS / 't.toml'}: {key}"), message
