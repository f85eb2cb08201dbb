"""Privacy tiers in single-question scenario files (``[mechanism] tiers``).

References are computed here from the closed form of k-ary randomized response: with
``a = e^eps / (e^eps + k - 1)`` and ``b = 1 / (e^eps + k - 1)`` a report is answer x with
probability ``f_x = b + (a - b) p_x``, and the inversion estimate of tier t has variance
``V_t(x) = f_x (1 - f_x) / (n_t (a - b)^2)``. The combined estimate's variance is ``1 /
sum_t 1 / V_t(x)``, the naive pooling's ``sum_t (n_t / n)^2 V_t(x)``.

Tolerances: the combined estimate within 6 exact standard errors per answer (normal tail
2e-9; 4 answers, two modes), the tiers' sizes (binomial) within 6 standard deviations:
false failure below 1e-7 in all.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.sim.helpers import same_bytes_with_one_and_two_workers

P = np.array([0.4, 0.3, 0.2, 0.1])
EPS = (0.5, 2.0)
SHARES = (0.3, 0.7)
N = 200_000


def _text(
    *,
    mode: str = "individual",
    tiers: str = "[{ eps = 0.5, share = 0.3 }, { eps = 2.0, share = 0.7 }]",
    size: int = N,
    mechanism: str = "",
    extra: str = "",
    replications: int = 1,
) -> str:
    return f"""
name = "tiers"
[population]
labels = ["a", "b", "c", "d"]
distribution = [0.4, 0.3, 0.2, 0.1]
size = {size}
[mechanism]
kind = "randomized_response"
tiers = {tiers}
{mechanism}
[arrivals]
kind = "poisson"
duration = 10.0
{extra}
[analyst.checkpoints]
every = 5.0
[simulation]
mode = "{mode}"
seed = 3
replications = {replications}
"""


def _rr_variance(eps: float, n: float) -> np.ndarray:
    k = len(P)
    a, b = math.exp(eps) / (math.exp(eps) + k - 1), 1.0 / (math.exp(eps) + k - 1)
    f = b + (a - b) * P
    return f * (1 - f) / (n * (a - b) ** 2)


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_combined_estimate_is_exact_and_beats_naive_pooling(mode):
    rows = run_replication(parse_scenario(_text(mode=mode), "tiers.toml"), 0, 11)
    end = rows[(rows["reason"] == "end") & (rows["task"] == "tiers")]
    tier_rows = end[end["quantity"] == "tier_frequency"]
    sizes = tier_rows.groupby("method", sort=False)["n_received"].first().to_numpy()
    assert sizes.sum() == N
    # tier 0 holds Binomial(N, 0.3) respondents: within 6 standard deviations
    assert abs(sizes[0] - N * SHARES[0]) < 6 * math.sqrt(N * SHARES[0] * SHARES[1])
    var = np.array([_rr_variance(e, n) for e, n in zip(EPS, sizes)])
    combined = 1.0 / (1.0 / var).sum(axis=0)
    naive = ((sizes / sizes.sum())[:, None] ** 2 * var).sum(axis=0)
    assert np.all(combined < naive)
    freq = end[end["quantity"] == "frequency"]
    np.testing.assert_array_equal(freq["category"], ["a", "b", "c", "d"])
    assert np.all(np.abs(freq["estimate"].to_numpy() - P) < 6 * np.sqrt(combined))
    # the report's exact standard errors are the closed forms
    se = end[end["quantity"] == "std_error"]
    np.testing.assert_allclose(se["theory"], np.sqrt(combined), rtol=1e-9)
    np.testing.assert_allclose(end[end["quantity"] == "naive_frequency"]["theory"], np.sqrt(naive), rtol=1e-9)
    for t in range(2):
        np.testing.assert_allclose(
            tier_rows[tier_rows["method"].str.startswith(f"tier {t} ")]["theory"], np.sqrt(var[t]), rtol=1e-9
        )
    engine = rows[(rows["task"] == "engine") & (rows["quantity"] == "received")]
    assert engine["estimate"].iloc[0] == N


def test_each_tier_has_its_own_eps():
    sc = parse_scenario(_text(), "tiers.toml")
    assert [m.epsilon() for _, m in sc.mechanisms] == pytest.approx(list(EPS), rel=1e-12)
    assert not sc.compared
    np.testing.assert_allclose(sc.tiers.shares, SHARES)


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    path = tmp_path / "tiers.toml"
    path.write_text(_text(size=3000, replications=3))
    summary = same_bytes_with_one_and_two_workers(path, tmp_path)
    assert "## Privacy tiers" in summary and "tier 1 (eps = 2), share 0.7" in summary


def test_aggregate_mode_with_report_count_checkpoints():
    text = _text(mode="aggregate", size=20_000).replace("every = 5.0", "every_reports = 7000")
    rows = run_replication(parse_scenario(text, "tiers.toml"), 0, 2)
    freq = rows[(rows["task"] == "tiers") & (rows["quantity"] == "frequency") & (rows["category"] == "a")]
    assert freq["n_received"].tolist() == [7000, 14000, 20000]


_Q = """
name = "q"
[population]
size = 100
[budget]
total = 1.0
strategy = "split"
[[questions]]
name = "a"
labels = ["x", "y"]
distribution = [0.5, 0.5]
mechanism = { kind = "randomized_response", tiers = [{ eps = 0.5, share = 0.5 }, { eps = 1.0, share = 0.5 }] }
[arrivals]
kind = "all_at_once"
"""


@pytest.mark.parametrize(
    "text, key",
    [
        (
            _text(tiers="[{ eps = 0.5, share = 0.3 }, { eps = 2.0, share = 0.6 }]"),
            "mechanism.tiers: got shares summing",
        ),
        (_text(tiers="[{ eps = -0.5, share = 0.3 }, { eps = 2.0, share = 0.7 }]"), "mechanism.tiers[0].eps: got -0.5"),
        (_text(tiers="[{ eps = 0.5, share = 0.3 }, { eps = 2.0, share = 0.7, x = 1 }]"), "mechanism.tiers[1]: got"),
        (_text(tiers="[{ eps = 0.5, share = 1.0 }]"), "mechanism.tiers: got"),
        (_text(mechanism="eps = 1.0"), "mechanism.eps: got 1.0 with tiers"),
        (_text(extra="[network]\nloss = { by_answer = { a = 0.5 } }"), "network.loss: got a loss by answer with"),
        (_text(extra='[[analyst.tasks]]\nkind = "frequency"\nestimator = "em"'), "analyst.tasks[0].estimator: got"),
        (_Q, "questions[0].mechanism.tiers: got"),
        (_text().replace("[mechanism]\nkind", "[[mechanisms]]\nkind"), "mechanisms[0].tiers: got"),
    ],
)
def test_errors_are_one_line(text, key):
    with pytest.raises(LdpSimError) as err:
        parse_scenario(text, "tiers.toml")
    message = str(err.value)
    assert "\n" not in message and "tiers.toml" in message and key in message, message
