"""The hypothesis-testing tasks: Wald's SPRT on the report stream and the fixed-n NP test."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ldpsim import LdpSimError
from ldpsim.analyst.testing import chernoff_stein_exponent, hypothesis_marginals, lrt_exact
from ldpsim.sim import load_scenario, parse_scenario, run_replication, run_scenario
from tests.sim.helpers import SCENARIOS, scenario_text
from tests.stats_checks import FALSE_FAILURE
from tests.tiers import sample

P0 = [0.4, 0.3, 0.2, 0.1]
P1 = [0.1, 0.2, 0.3, 0.4]


def hyp_text(truth: str, tasks: str, *, size: int, mode: str = "individual", eps: float = 1.0) -> str:
    """All clients at time 0, no latency: one tick delivers every report, in the order drawn,
    so the stream the SPRT reads is i.i.d. from the true marginal."""
    text = scenario_text(size=size, mode=mode, end=1.0, tick=1.0, mechanism=f'kind = "binary"\neps = {eps}')
    text = text.replace("distribution = [0.4, 0.3, 0.2, 0.1]", f'P0 = {P0}\nP1 = {P1}\ntruth = "{truth}"')
    return text.replace("checkpoints = { every = 1.0 }", f"checkpoints = {{ every = 1.0 }}\ntasks = {tasks}")


def sprt_entry(alpha: float, beta: float) -> str:
    return f'[{{ kind = "sprt", P0 = {P0}, P1 = {P1}, alpha = {alpha}, beta = {beta} }}]'


def final(df: pd.DataFrame, quantity: str) -> pd.Series:
    return df[(df["quantity"] == quantity) & (df["reason"] == "end")].iloc[0]


# --------------------------------------------------------------------- SPRT
@pytest.mark.parametrize("truth", sample(["P1", "P0"]))
def test_sprt_errors_within_wald_bounds_and_sample_size_near_wald(truth):
    """R replications of the SPRT at alpha = beta = 0.05 on i.i.d. reports (E[N] is about 30,
    the stream has 3000 reports: the chance that a replication stays undecided is below
    1e-30, N having a geometric tail).

    Errors: P0(decide H1) <= alpha / (1 - beta) and P1(decide H0) <= beta / (1 - alpha)
    (Wald); the error count is at most Binomial(R, bound), so it stays below the exact
    one-sided binomial quantile at FALSE_FAILURE.

    Sample size: Wald's identity E[S_N] = E[N] E[w] is exact; S_N overshoots the boundary by
    less than c = max|w|, so under H1 E[N] lies in [((1-p) A + p (B - c)) / D10, (A + c) / D10]
    with p <= beta / (1-alpha) the error rate (D10 = D(M1||M0); symmetrically under H0). The
    sample mean is within z sd / sqrt(R) of E[N] (CLT, z at FALSE_FAILURE two-sided). Wald's
    approximation drops the overshoot, which here is a sizeable part of A (c is about a
    third of A), so it is only compared within 30%."""
    alpha = beta = 0.05
    R = 600
    sc = parse_scenario(hyp_text(truth, sprt_entry(alpha, beta), size=3000), "t.toml")
    decisions, sizes = [], []
    for r in range(R):
        df = run_replication(sc, r, 2026)
        decisions.append(final(df, "sprt_decision")["estimate"])
        sizes.append(final(df, "sprt_sample_size")["estimate"])
    decisions, sizes = np.array(decisions), np.array(sizes)
    assert not np.isnan(decisions).any()
    row = final(df, "sprt_sample_size")
    assert final(df, "sprt_decision")["truth"] == (1.0 if truth == "P1" else 0.0)
    wald = row["theory"]

    M0, M1 = hypothesis_marginals(sc.mechanism, P0, P1)
    w = np.log(M1) - np.log(M0)
    c = float(np.max(np.abs(w)))
    A, B = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    if truth == "P1":
        errors = int(np.sum(decisions == 0))
        bound = beta / (1 - alpha)
        D = chernoff_stein_exponent(M1, M0)
        lo, hi = ((1 - bound) * A + bound * (B - c)) / D, (A + c) / D
        assert wald == pytest.approx(((1 - beta) * A + beta * B) / D)
    else:
        errors = int(np.sum(decisions == 1))
        bound = alpha / (1 - beta)
        D = chernoff_stein_exponent(M0, M1)
        lo, hi = ((1 - bound) * -B + bound * -(A + c)) / D, (-B + c) / D
        assert wald == pytest.approx(((1 - alpha) * B + alpha * A) / -D)
    assert errors <= stats.binom.isf(FALSE_FAILURE, R, bound), (errors / R, bound)
    z = float(stats.norm.isf(FALSE_FAILURE / 2))
    tol = z * sizes.std(ddof=1) / math.sqrt(R)
    mean = float(sizes.mean())
    assert lo - tol <= mean <= hi + tol, (mean, lo, hi, tol)
    assert abs(mean - wald) <= 0.3 * wald, (mean, wald)


def test_sprt_stops_at_the_first_crossing_and_ignores_later_reports():
    """Against a direct loop over the same stream (kept on the server)."""
    text = hyp_text("P1", sprt_entry(0.01, 0.01), size=2000).replace("[server]\n", "[server]\nkeep_reports = true\n")
    sc = parse_scenario(text, "t.toml")
    df = run_replication(sc, 0, 3)
    from ldpsim.sim.engine import Replication

    rep = Replication(sc, 0, 3)
    rep.run()
    reports, times = rep.server.stored_reports()
    M0, M1 = hypothesis_marginals(sc.mechanism, P0, P1)
    w = np.log(M1) - np.log(M0)
    A, B = math.log(0.99 / 0.01), math.log(0.01 / 0.99)
    S, n = 0.0, 0
    for y in reports:
        S += w[y]
        n += 1
        if S >= A or S <= B:
            break
    assert final(df, "sprt_sample_size")["estimate"] == n
    assert final(df, "llr")["estimate"] == pytest.approx(S, abs=1e-9)
    assert final(df, "sprt_decision")["estimate"] == (1.0 if S >= A else 0.0)
    assert final(df, "sprt_decision_time")["estimate"] == times[n - 1]


# --------------------------------------------------------------------- fixed-n LRT
@pytest.mark.parametrize("R", [500, pytest.param(2000, marks=pytest.mark.slow)])
def test_lrt_type1_and_type2_rates_match_the_exact_test(R):
    """n = 150 reports, alpha = 0.05: the exact randomised NP test has type I error exactly
    alpha and type II error beta_n (exact law). Rejection counts over R replications are
    Binomial(R, alpha) under H0 and Binomial(R, 1 - beta_n) under H1 (R = 500 by
    default, 2000 in the slow tier): exact binomial bounds
    at FALSE_FAILURE (one-sided for the type I error, two-sided for the type II error). Aggregate mode
    (counts only) for speed; the task works the same in individual mode (checked below)."""
    n, alpha = 150, 0.05
    entry = f'[{{ kind = "lrt", P0 = {P0}, P1 = {P1}, alpha = {alpha} }}]'
    rates = {}
    for truth in ("P0", "P1"):
        sc = parse_scenario(hyp_text(truth, entry, size=n, mode="aggregate", eps=0.5), "t.toml")
        rej = [final(run_replication(sc, r, 11), "lrt_reject_h0")["estimate"] for r in range(R)]
        rates[truth] = int(np.sum(rej))
    M0, M1 = hypothesis_marginals(sc.mechanism, P0, P1)
    test = lrt_exact(M0, M1, n, alpha)
    df = run_replication(sc, 0, 11)
    assert final(df, "lrt_type2_theory")["theory"] == pytest.approx(test.beta)
    assert final(df, "stein_exponent")["estimate"] == pytest.approx(-math.log(test.beta) / n)
    assert final(df, "stein_exponent")["theory"] == pytest.approx(chernoff_stein_exponent(M0, M1))
    assert final(df, "lrt_reject_h0")["truth"] == 1.0
    assert rates["P0"] <= stats.binom.isf(FALSE_FAILURE, R, alpha), rates["P0"] / R
    misses = R - rates["P1"]
    assert (
        stats.binom.ppf(FALSE_FAILURE / 2, R, test.beta) <= misses <= stats.binom.isf(FALSE_FAILURE / 2, R, test.beta)
    ), (misses / R, test.beta)


def test_lrt_in_individual_mode_and_normal_fallback():
    """Individual mode gives the same rows; randomized response at k = 4 and n beyond the
    enumeration limit falls back to the normal test."""
    entry = f'[{{ kind = "lrt", P0 = {P0}, P1 = {P1}, alpha = 0.05 }}]'
    df = run_replication(parse_scenario(hyp_text("P1", entry, size=500), "t.toml"), 0, 1)
    assert set(df[df["task"] == "lrt"]["quantity"]) == {"lrt_reject_h0", "lrt_type2_theory", "stein_exponent"}
    text = hyp_text("P1", entry, size=5000).replace(
        'kind = "binary"\neps = 1.0', 'kind = "randomized_response"\neps = 1.0'
    )
    df = run_replication(parse_scenario(text, "t.toml"), 0, 1)
    beta = final(df, "lrt_type2_theory")["theory"]
    assert 0 <= beta < 1e-6 and final(df, "lrt_reject_h0")["estimate"] == 1.0


# --------------------------------------------------------------------- scenario and errors
def test_shipped_hypothesis_scenario_runs(tmp_path):
    text = (SCENARIOS / "hypothesis_test.toml").read_text()
    text, k = re.subn(r"(?m)^size = .*$", "size = 5000", text)
    assert k == 1
    path = tmp_path / "hypothesis_test.toml"
    path.write_text(text)
    result = run_scenario(path, out=tmp_path / "run", progress=False)
    df = pd.read_csv(result.run_dir / "results.csv")
    for q in ["sprt_decision", "sprt_sample_size", "llr", "lrt_reject_h0", "lrt_type2_theory", "stein_exponent"]:
        assert q in set(df["quantity"]), q
    assert sorted(set(df[df["quantity"] == "llr"]["time"])) == [float(t) for t in range(1, 12)]
    summary = (result.run_dir / "summary.md").read_text()
    assert "sprt_decision" in summary and "lrt_reject_h0" in summary
    shipped = load_scenario(SCENARIOS / "hypothesis_test.toml")
    assert shipped.spec.population.size == 20_000 and shipped.spec.simulation.mode == "individual"


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            '{ kind = "sprt", P0 = [0.5, 0.5], P1 = [0.1, 0.2, 0.3, 0.4] }',
            r"analyst\.tasks\[0\]\.kind: got 'sprt', expected P0 with one entry per label \(4\)",
        ),
        (
            f'{{ kind = "sprt", P0 = {P0}, P1 = {P1}, alpha = 1.5 }}',
            r"analyst\.tasks\[0\]\.alpha: Input should be less than 1",
        ),
        (
            f'{{ kind = "lrt", P0 = {P0}, P1 = {P1}, alpha = 0.0 }}',
            r"analyst\.tasks\[0\]\.alpha: Input should be greater than 0",
        ),
        (
            f'{{ kind = "sprt", P0 = {P0}, P1 = {P1}, beta = 1.0 }}',
            r"analyst\.tasks\[0\]\.beta: Input should be less than 1",
        ),
        (
            f'{{ kind = "lrt", P0 = {P0}, P1 = {P0} }}',
            r"analyst\.tasks\[0\]\.kind: got 'lrt', expected P0 and P1 to differ",
        ),
        (
            f'{{ kind = "lrt", P0 = [0.4, 0.3, 0.2, 0.2], P1 = {P1} }}',
            r"analyst\.tasks\[0\]\.kind: got 'lrt', expected P0 summing to 1",
        ),
        (f'{{ kind = "sprt", P1 = {P1} }}', r"analyst\.tasks\[0\]\.P0: Field required"),
        (f'{{ kind = "sprt", P0 = {P0}, P1 = {P1}, alpha = "0.1" }}', r"analyst\.tasks\[0\]\.alpha: "),
    ],
)
def test_bad_task_params_give_one_line_errors(entry, message):
    with pytest.raises(LdpSimError, match=r"^t\.toml: " + message) as info:
        parse_scenario(hyp_text("P1", f"[{entry}]", size=100), "t.toml")
    assert "\n" not in str(info.value)


def test_sprt_needs_individual_mode_and_an_informative_mechanism():
    with pytest.raises(LdpSimError, match=r"analyst\.tasks\[0\]\.kind: got 'sprt' in aggregate mode"):
        parse_scenario(hyp_text("P1", sprt_entry(0.05, 0.05), size=100, mode="aggregate"), "t.toml")
    with pytest.raises(
        LdpSimError, match=r"analyst\.tasks\[0\]\.kind: got 'sprt', expected a mechanism whose outputs tell"
    ):
        parse_scenario(hyp_text("P1", sprt_entry(0.05, 0.05), size=100, eps=0.0), "t.toml")
