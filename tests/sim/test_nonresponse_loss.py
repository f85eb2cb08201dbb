"""Answer-dependent loss (``network.loss = { by_answer = ... }``) and ``[analyst] reweight``.

The exact bias is checked against a hand computation; the raw and reweighted estimates
against the truth with tolerances of 6 exact standard errors per answer (normal tail 2e-9
each; a few answers, two modes: false failure < 1e-7). The bias is made large (about 0.3,
over 100 standard errors) so that "the raw estimate is off by the predicted bias" is a
sure check. Given the number of reports received, they are i.i.d. from q, so the exact
standard errors are taken at that number."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import randomized_response
from ldpsim.sim import parse_scenario, run_replication

P = np.array([0.5, 0.3, 0.2])
LOSS = np.array([0.8, 0.1, 0.1])  # "a" is lost with probability 0.8, the others with the default 0.1


def _text(
    mode: str = "individual",
    reweight: bool = True,
    loss: str = "{ by_answer = { a = 0.8 }, default = 0.1 }",
    size: int = 200_000,
    extra: str = "",
) -> str:
    return f"""
name = "nr"
[population]
labels = ["a", "b", "c"]
distribution = [0.5, 0.3, 0.2]
size = {size}
[mechanism]
kind = "randomized_response"
eps = 2.0
[arrivals]
kind = "all_at_once"
[network]
loss = {loss}
[analyst]
reweight = {str(reweight).lower()}
{extra}
[simulation]
mode = "{mode}"
seed = 5
end = 1.0
tick = 1.0
"""


def _end(rows, quantity: str, task: str):
    r = rows[(rows["quantity"] == quantity) & (rows["task"] == task) & (rows["reason"] == "end")]
    return r


def test_the_exact_bias_is_the_hand_computed_one():
    rows = run_replication(parse_scenario(_text(size=1000), "nr.toml"), 0, 1)
    r = 1 - LOSS  # 0.2, 0.9, 0.9
    heard = 0.5 * 0.2 + 0.3 * 0.9 + 0.2 * 0.9  # 0.55
    q = np.array([0.1, 0.27, 0.18]) / heard
    bias = _end(rows, "nonresponse_bias", "nonresponse")
    np.testing.assert_allclose(bias["estimate"], q - P, rtol=1e-12)
    np.testing.assert_allclose(bias["truth"], q, rtol=1e-12)
    assert list(bias["category"]) == ["a", "b", "c"] and np.allclose(P * r / heard - P, q - P)


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_the_reweighted_estimate_recovers_the_truth_and_the_raw_one_is_off_by_the_bias(mode):
    rows = run_replication(parse_scenario(_text(mode), "nr.toml"), 0, 3)
    freq = _end(rows, "frequency", "frequency")
    n = int(freq["n_received"].iloc[0])
    r = 1 - LOSS
    q = P * r / (P @ r)
    mech = randomized_response(3, 2.0)
    sigma = mech.estimate_covariance(q, float(n))
    raw = freq["estimate"].to_numpy()
    assert np.all(np.abs(raw - q) < 6 * np.sqrt(np.diag(sigma)))  # the raw estimate targets q ...
    assert np.all(np.abs((raw - P) - (q - P)) < 6 * np.sqrt(np.diag(sigma)))  # ... so it is off by the bias
    assert abs(q[0] - P[0]) > 100 * np.sqrt(sigma[0, 0])  # a large bias: the check above is a sure one
    # the reweighted estimate: p = (q / r) / sum(q / r); its delta-method covariance J Sigma J^T
    s = float(np.sum(q / r))
    g = (q / r) / s
    jac = (np.eye(3) - np.outer(g, np.ones(3))) / (r[None, :] * s)
    se = np.sqrt(np.diag(jac @ sigma @ jac.T))
    rw = _end(rows, "reweighted", "nonresponse")
    assert np.all(np.abs(rw["estimate"].to_numpy() - P) < 6 * se)
    np.testing.assert_allclose(rw["truth"], P, rtol=1e-12)
    np.testing.assert_allclose(rw["theory"], se, rtol=1e-9)
    assert np.all((rw["ci_low"] < rw["estimate"]) & (rw["estimate"] < rw["ci_high"]))


def test_without_reweight_only_the_bias_is_shown_and_one_loss_writes_no_such_rows():
    rows = run_replication(parse_scenario(_text(reweight=False, size=1000), "nr.toml"), 0, 1)
    assert set(rows.loc[rows["task"] == "nonresponse", "quantity"]) == {"nonresponse_bias"}
    rows = run_replication(parse_scenario(_text(reweight=False, size=1000, loss="0.1"), "nr.toml"), 0, 1)
    assert "nonresponse" not in set(rows["task"])


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"loss": "0.1"}, "analyst.reweight: got true"),
        ({"loss": "{ by_answer = { z = 0.8 } }"}, "network.loss.by_answer: got 'z'"),
        ({"loss": "{ by_answer = { a = 1.0 } }"}, "network.loss.by_answer: got 1 for 'a'"),
        ({"loss": "{ by_answer = { a = 1.5 } }"}, "network.loss.by_answer.a: Input should be less than or equal to 1"),
        ({"loss": "{ by_answer = { a = 0.5 }, other = 1 }"}, "network.loss.other: no such key"),
        ({"loss": "1.5"}, "network.loss: Input should be less than or equal to 1"),
    ],
)
def test_errors_are_one_line_naming_file_and_key(change, key):
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_text(**change), "nr.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"nr.toml: {key}"), message


def test_questions_refuse_a_loss_by_answer():
    from tests.sim.test_questions import _question
    from tests.sim.test_questions import _text as questions_text

    text = questions_text(_question("a") + _question("b")).replace(
        "[arrivals]", "[network]\nloss = { by_answer = { x = 0.5 } }\n[arrivals]"
    )
    with pytest.raises(LdpSimError, match=r"^q\.toml: network\.loss: got a loss by answer with \[\[questions\]\]"):
        parse_scenario(text, "q.toml")
