"""``ldpsim recommend``: the exact losses against a short simulation of every oracle, the
regime boundary of randomized response against optimised unary encoding against its closed
form, and the command's careful behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from ldpsim.mechanisms import catalog
from ldpsim.utility import recommend as rc


def test_exact_losses_match_a_simulation_of_every_oracle():
    """R = 400 replications of n = 3,000 clients at k = 8, eps = 1, a Zipf prior: for each
    oracle the mean of the summed squared error over replications lies within 5.3 standard
    errors (the replications' own spread) of the exact loss recommend reports; with seeds
    fixed, a normal approximation of a mean of 400 i.i.d. terms puts the chance of a false
    failure near 1e-7 per oracle."""
    k, eps, n, R = 8, 1.0, 3_000, 400
    prior = rc.parse_prior("zipf:1.1", k)
    table = rc.evaluate(k, eps, n, "zipf:1.1", lp=False).set_index("mechanism")
    rng = np.random.default_rng(20261203)
    for name in rc.candidates():
        mech = catalog.build(name, k=k, eps=eps)
        sq = np.empty(R)
        for r in range(R):
            x = rng.choice(k, size=n, p=prior)
            est = mech.invert(mech.statistic(mech.privatize(x, rng)) / n)
            sq[r] = np.sum((est - prior) ** 2)  # against the law the answers are drawn from
        mean, se = sq.mean(), sq.std(ddof=1) / math.sqrt(R)
        assert abs(mean - table.loc[name, "mse"]) <= 5.3 * se, (name, mean, table.loc[name, "mse"], se)


def test_rr_against_oue_boundary_is_the_closed_form_crossing():
    """At a uniform prior randomized response's summed variance is k M (1 - M)/(n q^2) with
    M = 1/k and q = (e^eps - 1)/(e^eps + k - 1), optimised unary encoding's is
    k mu (1 - mu)/(n (p - q)^2) with p = 1/2, q = 1/(e^eps + 1), mu = q + (p - q)/k: the
    crossing of the two closed forms (found by brentq) is the boundary recommend reports."""
    k, n = 30, 1e6

    def rr(e):
        E = math.exp(e)
        q = (E - 1) / (E + k - 1)
        return k * (1 / k) * (1 - 1 / k) / (n * q * q)

    def oue(e):
        p, q = 0.5, 1 / (math.exp(e) + 1)
        mu = q + (p - q) / k
        return k * mu * (1 - mu) / (n * (p - q) ** 2)

    want = optimize.brentq(lambda e: rr(e) - oue(e), 0.5, 8.0, xtol=1e-14)
    curves = rc.curves(k, n)
    b = rc.boundaries(curves, k, n)
    pair = b[b["kind"] == "pair"]
    assert len(pair) == 1 and pair["better_below"].iloc[0] == "oue"
    assert pair["eps"].iloc[0] == pytest.approx(want, rel=1e-7)


def test_the_lp_mechanism_is_scored_for_small_k():
    t = rc.evaluate(4, 2.0, 1e4)
    assert "optimal (LP, mutual information)" in set(t["mechanism"])
    assert rc.evaluate(30, 2.0, 1e4)["mechanism"].str.startswith("optimal").sum() == 0


def test_the_command_writes_its_files_and_is_careful(tmp_path, cli):
    out = tmp_path / "rec"
    r = cli("recommend", "--k", "50", "--eps", "1", "--n", "1e5", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "best first" in r.stdout and "regime boundaries" in r.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "crossings.csv",
        "curves.csv",
        "recommend.csv",
        "recommend.png",
        "summary.md",
    ]
    again = cli("recommend", "--k", "50", "--eps", "1", "--n", "1e5", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "--out" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    forced = cli(
        "recommend", "--k", "50", "--eps", "2", "--n", "1e5", "--out", str(out), "--force", "--no-figure", cwd=tmp_path
    )
    assert forced.returncode == 0


def _grr_oue_closed_forms(k: int, e: float, n: float) -> dict[str, float]:
    """Per-answer variances at the uniform prior (Wang et al. 2017): randomized response
    M (1 - M)/(n q^2) with M = 1/k, q = (e^eps - 1)/(e^eps + k - 1); optimised unary
    encoding mu (1 - mu)/(n (1/2 - q)^2) with q = 1/(e^eps + 1), mu = q + (1/2 - q)/k."""
    E = math.exp(e)
    q = (E - 1) / (E + k - 1)
    rr = (1 / k) * (1 - 1 / k) / (n * q * q)
    qo = 1 / (E + 1)
    mu = qo + (0.5 - qo) / k
    return {"randomized_response": rr, "oue": mu * (1 - mu) / (n * (0.5 - qo) ** 2)}


@pytest.mark.parametrize("utility", ["mse", "l1", "kl"])
def test_the_command_prints_the_exact_formulas(utility, tmp_path, cli):
    """What the command writes, against closed forms computed here: at the uniform prior
    every answer has the same variance V, so mse = k V, l1 = k sqrt(2 V / pi) (normal
    approximation) and kl = sum V / (2 p_x) = k^2 V / 2 (second order)."""
    import pandas as pd

    k, eps, n = 30, 1.0, 1e6
    out = tmp_path / "rec"
    r = cli(
        "recommend",
        "--k",
        str(k),
        "--eps",
        str(eps),
        "--n",
        "1e6",
        "--utility",
        utility,
        "--no-figure",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert f"loss {utility} ({rc.LOSS_KIND[utility]})" in r.stdout
    table = pd.read_csv(out / "recommend.csv").set_index("mechanism")
    assert table[utility].is_monotonic_increasing  # sorted by the chosen loss, best first
    for name, var in _grr_oue_closed_forms(k, eps, n).items():
        row = table.loc[name]
        assert row["mse"] == pytest.approx(k * var, rel=1e-10)
        assert row["l1"] == pytest.approx(k * math.sqrt(2 * var / math.pi), rel=1e-10)
        assert row["kl"] == pytest.approx(k * k * var / 2, rel=1e-10)


def test_kl_is_the_second_order_expected_divergence():
    """The kl column against a simulation of E KL(p || estimate) for randomized response at
    a prior with no tiny answer (every estimate stays positive): within 5.3 standard errors
    of the replications plus the third-order remainder, bounded here by 10% of the value
    (the relative standard errors are below 2%, so the cubic term is far smaller)."""
    k, eps, n, R = 4, 1.0, 20_000, 400
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    mech = catalog.build("randomized_response", k=k, eps=eps)
    want = (
        rc.evaluate(k, eps, n, prior.tolist(), loss="kl", lp=False)
        .set_index("mechanism")
        .loc["randomized_response", "kl"]
    )
    rng = np.random.default_rng(20261202)
    kl = np.empty(R)
    for r in range(R):
        est = mech.invert(mech.statistic(mech.privatize(rng.choice(k, size=n, p=prior), rng)) / n)
        assert np.all(est > 0)
        kl[r] = np.sum(prior * np.log(prior / est))
    mean, se = kl.mean(), kl.std(ddof=1) / math.sqrt(R)
    assert abs(mean - want) <= 5.3 * se + 0.1 * want, (mean, want, se)


@pytest.mark.parametrize(
    "args, name",
    [
        (["--k", "1", "--eps", "1", "--n", "100"], "--k"),
        (["--k", "5", "--eps", "0", "--n", "100"], "--eps"),
        (["--k", "5", "--eps", "1", "--n", "0.5"], "--n"),
        (["--k", "5", "--eps", "1", "--n", "100", "--utility", "tv"], "--utility"),
        (["--k", "5", "--eps", "1", "--n", "100", "--prior", "zipf:-1"], "--prior"),
        (["--k", "5", "--eps", "1", "--n", "100", "--prior", "1,2"], "--prior"),
        (["--k", "5", "--eps", "1", "--n", "100", "--bits", "0"], "--bits"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args, name, tmp_path, cli):
    r = cli("recommend", *args, "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert r.returncode == 2 and name in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "x").exists()


def test_kl_says_when_its_approximation_is_poor(tmp_path, cli):
    """A long Zipf tail at small n: standard errors far above the tail's probabilities."""
    r = cli(
        "recommend",
        "--k",
        "200",
        "--eps",
        "1",
        "--n",
        "1e4",
        "--prior",
        "zipf:1.1",
        "--utility",
        "kl",
        "--no-figure",
        "--out",
        str(tmp_path / "a"),
        cwd=tmp_path,
    )
    assert r.returncode == 0 and "second-order approximation, poor here" in r.stdout
    r = cli(
        "recommend",
        "--k",
        "4",
        "--eps",
        "4",
        "--n",
        "1e7",
        "--utility",
        "kl",
        "--no-figure",
        "--out",
        str(tmp_path / "b"),
        cwd=tmp_path,
    )
    assert r.returncode == 0 and "poor here" not in r.stdout
