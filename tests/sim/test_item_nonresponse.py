"""Item non-response with several questions (``questions[i].loss = { by_answer, default }``).

Question ``a``'s report is left out of its respondent's message with probability 0.8 when
the answer is ``x`` and 0.1 otherwise; question ``b`` has none. References computed here:
the bias by hand, the randomized-response covariance in closed form (``a_ = e^eps / (e^eps
+ k - 1)``, ``b_ = 1 / (e^eps + k - 1)``), the reweighting's delta-method covariance from
its Jacobian written out. Tolerances: 6 standard errors per answer (normal tail 2e-9; 3
answers x 2 estimates x 3 runs), binomial counts within 6 standard deviations: false
failure below 1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario
from ldpsim.sim.engine import Replication
from tests.sim.helpers import SCENARIOS, same_bytes_with_one_and_two_workers

P = np.array([0.5, 0.3, 0.2])
R = np.array([0.2, 0.9, 0.9])  # response rates of question a's answers
EPS = 2.0  # each question's under split (total 4)


def _text(
    *,
    mode: str = "individual",
    strategy: str = "split",
    reweight: bool = True,
    size: int = 200_000,
    loss: str = "{ by_answer = { x = 0.8 }, default = 0.1 }",
    extra: str = "",
) -> str:
    total = 2 * EPS if strategy == "split" else EPS
    return f"""
name = "item"
[population]
size = {size}
[budget]
total = {total}
strategy = "{strategy}"
[[questions]]
name = "a"
labels = ["x", "y", "z"]
distribution = [0.5, 0.3, 0.2]
mechanism = {{ kind = "randomized_response" }}
loss = {loss}
[[questions]]
name = "b"
labels = ["u", "v"]
distribution = [0.6, 0.4]
mechanism = {{ kind = "randomized_response" }}
[arrivals]
kind = "all_at_once"
[network]
loss = 0.05
[analyst]
reweight = {str(reweight).lower()}
{extra}
[simulation]
mode = "{mode}"
seed = 3
end = 1.0
tick = 1.0
"""


def _covariance(q: np.ndarray, eps: float, n: float) -> np.ndarray:
    k = len(q)
    a, b = math.exp(eps) / (math.exp(eps) + k - 1), 1.0 / (math.exp(eps) + k - 1)
    inverse = np.linalg.inv(np.full((k, k), b) + (a - b) * np.eye(k))
    f = b + (a - b) * q
    return inverse @ ((np.diag(f) - np.outer(f, f)) / n) @ inverse.T


@pytest.mark.parametrize(
    ("mode", "strategy"), [("individual", "split"), ("aggregate", "split"), ("aggregate", "one_random")]
)
def test_the_raw_estimate_is_off_by_the_exact_bias_and_the_reweighted_one_is_not(mode, strategy):
    rep = Replication(parse_scenario(_text(mode=mode, strategy=strategy), "item.toml"), 0, 5)
    rows = rep.run()
    end = rows[rows["reason"] == "end"]
    received = end[(end["task"] == "engine") & (end["quantity"] == "received")]["estimate"].iloc[0]
    n_a, n_b = rep.servers[0].n_received, rep.servers[1].n_received
    heard = float(P @ R)  # 0.55
    # a's reports: Binomial(received, 0.55), or Binomial(received, 0.55 / 2) under one_random
    prob = heard if strategy == "split" else heard / 2
    assert abs(n_a - received * prob) < 6 * math.sqrt(received * prob * (1 - prob))
    if strategy == "split":
        assert n_b == received
    q = P * R / heard  # [0.1, 0.27, 0.18] / 0.55
    bias = end[(end["task"] == "a:nonresponse") & (end["quantity"] == "nonresponse_bias")]
    np.testing.assert_allclose(bias["estimate"], q - P, rtol=1e-12)
    np.testing.assert_allclose(bias["truth"], q, rtol=1e-12)
    cov = _covariance(q, EPS, float(n_a))  # (one_random: the whole budget EPS on the question answered)
    raw = end[(end["task"] == "a:frequency") & (end["quantity"] == "frequency")]["estimate"].to_numpy()
    assert np.all(np.abs(raw - q) < 6 * np.sqrt(np.diag(cov)))
    # the reweighting p = (q / r) / S, S = sum(q / r): Jacobian diag(1/r)/S - (q/r)(1/r)^T / S^2
    s = float(np.sum(q / R))
    jac = np.diag(1 / R) / s - np.outer(q / R, 1 / R) / s**2
    se = np.sqrt(np.diag(jac @ cov @ jac.T))
    rw = end[(end["task"] == "a:nonresponse") & (end["quantity"] == "reweighted")]
    np.testing.assert_allclose(rw["theory"], se, rtol=1e-9)
    assert np.all(np.abs(rw["estimate"].to_numpy() - P) < 6 * se)
    # question b has no item non-response: no such task
    assert "b:nonresponse" not in set(rows["task"])


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    path = tmp_path / "item.toml"
    path.write_text(_text(size=3000).replace("seed = 3", "seed = 3\nreplications = 3"))
    summary = same_bytes_with_one_and_two_workers(path, tmp_path)
    assert "## Answer-dependent non-response" in summary and "| a:nonresponse |" in summary


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (_text(loss="{ by_answer = { w = 0.5 } }"), "questions[0].loss.by_answer: got 'w'"),
        (_text(loss="{ by_answer = { x = 1.0 }, default = 1.0 }"), "questions[0].loss: got probability 1"),
        (_text(loss="{ by_answer = { x = 1.0 } }"), "questions[0].loss.by_answer: got 1 for 'x'"),
        (_text(extra='crosstabs = [{ rows = "a", columns = "b" }]'), "analyst.crosstabs[0].rows: got 'a', a question"),
        (
            _text(loss="{ by_answer = { x = 0.5 } }").replace("loss = 0.05", "loss = { by_answer = { x = 0.5 } }"),
            "network.loss: got a loss by answer with [[questions]]",
        ),
        (_text().replace("loss = { by_answer = { x = 0.8 }, default = 0.1 }\n", ""), "analyst.reweight: got true"),
    ],
)
def test_errors_are_one_line(text, key):
    with pytest.raises(LdpSimError) as err:
        parse_scenario(text, "item.toml")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"item.toml: {key}"), message


def test_a_numeric_question_takes_no_loss():
    text = """
name = "num"
[population]
file = "data/anes96.csv"
[budget]
total = 2.0
strategy = "split"
[[questions]]
name = "age"
type = "numeric"
range = [17, 91]
mechanism = { kind = "duchi" }
loss = { by_answer = { x = 0.5 } }
[[questions]]
name = "vote"
mechanism = { kind = "randomized_response" }
[arrivals]
kind = "all_at_once"
"""
    with pytest.raises(LdpSimError, match=r"t\.toml: questions\[0\]\.loss: got a loss by answer for a numeric") as err:
        parse_scenario(text, str(SCENARIOS / "t.toml"))
    assert "\n" not in str(err.value)
