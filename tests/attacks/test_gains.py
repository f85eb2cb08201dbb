"""Attack gains (:mod:`ldpsim.attacks`) against the closed forms of Cao, Jia and Gong (2021,
Table 1), written here from the paper, and against simulation at the suite's false-failure
probability; the optimal attacker against brute force over outputs and against the closed
form of the undetectable attack on randomized response derived in the test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.attacks import STRATEGIES, expected_gain, optimal_attack, strategy
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.finite import MatrixMechanism
from tests.stats_checks import FALSE_FAILURE

D, R, BETA = 64, 5, 0.05
PRIOR = 1.0 / np.arange(1, D + 1) ** 1.1
PRIOR /= PRIOR.sum()
TARGETS = np.arange(D - R, D)  # the five least frequent answers
F_T = float(PRIOR[TARGETS].sum())


def _cao(protocol: str, attack: str, eps: float, g: int | None = None) -> float:
    """Cao et al.'s Table 1 (OLH with q = 1/g, their ideal hash family)."""
    e = math.exp(eps)
    if attack == "random_item":
        return BETA * (1 - F_T)
    if protocol == "randomized_response":
        return BETA * (R / D - F_T) if attack == "random_perturbed" else BETA * (1 - F_T) + BETA * (D - R) / (e - 1)
    if protocol == "oue":
        return BETA * (R - F_T) if attack == "random_perturbed" else BETA * (2 * R - F_T) + 2 * BETA * R / (e - 1)
    # OLH, for the g the oracle uses: p = e / (e + g - 1), q = 1/g
    p = e / (e + g - 1)
    if attack == "random_perturbed":
        return -BETA * F_T
    return BETA * (R * (1 - 1 / g) / (p - 1 / g) - F_T)


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("protocol", ["randomized_response", "oue", "olh"])
@pytest.mark.parametrize("attack", ["random_perturbed", "random_item", "maximal_gain"])
def test_expected_gain_is_cao_et_al_table_1(protocol: str, attack: str, eps: float) -> None:
    mech = catalog.build(protocol, k=D, eps=eps)
    want = _cao(protocol, attack, eps, getattr(mech, "g", None))
    got = expected_gain(mech, attack, TARGETS, BETA, PRIOR, rng=1)
    # OLH: our family's q* = gamma p + (1 - gamma) q differs from 1/g by about 1/P (P = 2^31 - 1)
    assert got == pytest.approx(want, rel=1e-12 if protocol != "olh" else 1e-7, abs=1e-12)


def test_olh_maximal_gain_paper_form_at_the_paper_g() -> None:
    """With g = e^eps + 1 (an integer at eps = log 3), MGA's gain is 2 r e^eps / (e^eps - 1)
    per unit share, as in Cao et al. for OUE and OLH alike."""
    eps = math.log(3.0)
    mech = catalog.build("olh", k=D, eps=eps)
    assert mech.g == 4
    want = BETA * (2 * R * 3 / 2 - F_T)
    assert expected_gain(mech, "maximal_gain", TARGETS, BETA, PRIOR, rng=2) == pytest.approx(want, rel=1e-7)


@pytest.mark.parametrize(
    "name,params",
    [
        ("hadamard_response", dict(k=16, eps=1.0)),
        ("subset_selection", dict(k=16, eps=1.0)),
        ("blh", dict(k=16, eps=1.0)),
        ("sue", dict(k=16, eps=2.0)),
    ],
)
def test_random_item_gain_is_beta_one_minus_f_for_every_oracle(name: str, params: dict) -> None:
    mech = catalog.build(name, **params)
    prior = np.full(16, 1 / 16)
    assert expected_gain(mech, "random_item", [3, 9], BETA, prior) == pytest.approx(BETA * (1 - 2 / 16), abs=1e-12)


def _simulated_gains(mech, attack: str, n: int, m: int, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    strat = strategy(attack)
    out = np.empty(reps)
    for i in range(reps):
        x = rng.choice(D, size=n, p=PRIOR)
        honest = mech.statistic(mech.privatize(x, rng))
        fake = mech.statistic(strat.reports(mech, TARGETS, m, rng, prior=PRIOR, share=m / (n + m)))
        after = mech.invert((honest + fake) / (n + m))[TARGETS].sum()
        before = mech.invert(honest / n)[TARGETS].sum()
        out[i] = after - before
    return out


@pytest.mark.parametrize("protocol", ["randomized_response", "oue", "olh"])
@pytest.mark.parametrize("attack", ["random_perturbed", "random_item", "maximal_gain"])
def test_simulated_gain_matches_the_exact_one(protocol: str, attack: str) -> None:
    """The mean measured gain over independent surveys against the exact expectation: a t
    test at the suite's false-failure probability."""
    n, m, reps = 4000, 210, 60
    mech = catalog.build(protocol, k=D, eps=1.0)
    gains = _simulated_gains(mech, attack, n, m, reps, seed=11)
    want = expected_gain(mech, attack, TARGETS, m / (n + m), PRIOR, rng=3)
    half = stats.t.isf(FALSE_FAILURE / 2, reps - 1) * gains.std(ddof=1) / math.sqrt(reps)
    assert abs(gains.mean() - want) <= half + 1e-12


def _brute_gains(q: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per output: what one report adds to the targets' estimate, from the least-squares
    inverse computed here."""
    a = np.linalg.pinv(q.T)
    return a[targets].sum(axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_optimal_attacker_dominates_every_named_attack(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, m_out = 4, 6
    logits = rng.normal(size=(k, m_out))
    q = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    mech = MatrixMechanism(np.log(q), name="random")
    prior = rng.dirichlet(np.ones(k))
    targets = np.array([0, 2])
    beta = 0.1
    free = optimal_attack(mech, prior, targets, beta, undetectable=False)
    brute = beta * (_brute_gains(q, targets).max() - prior[targets].sum())
    assert free.gain == pytest.approx(brute, abs=1e-9)
    named = {
        s: expected_gain(mech, s, targets, beta, prior, rng=0)
        for s in ("random_perturbed", "random_item", "maximal_gain")
    }
    assert free.gain >= max(named.values()) - 1e-9
    assert named["maximal_gain"] == pytest.approx(free.gain, abs=1e-9)
    hidden = optimal_attack(mech, prior, targets, beta)
    assert named["random_item"] - 1e-9 <= hidden.gain <= free.gain + 1e-9
    # feasible: the pooled law is the honest law of the imitated answers
    pooled = (1 - beta) * prior @ q + beta * hidden.law
    assert np.allclose(pooled, hidden.imitated @ q, atol=1e-9)
    assert np.all(hidden.imitated >= -1e-12) and np.all(hidden.law >= -1e-12)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("beta", [0.01, 0.05, 0.2])
def test_undetectable_attack_on_randomized_response_closed_form(eps: float, beta: float) -> None:
    """kRR's honest output laws are exactly those with every output at least q; so the
    undetectable attacker keeps each non-target output at max(q, (1 - beta) nu_y) and puts the
    rest of the mass on the targets (derived here, not in the library)."""
    k = 8
    prior = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.015, 0.005])
    targets = np.array([6, 7])
    e = math.exp(eps)
    p, q = e / (e + k - 1), 1 / (e + k - 1)
    nu = q + (p - q) * prior
    others = np.setdiff1d(np.arange(k), targets)
    kept = np.maximum(q, (1 - beta) * nu[others])
    target_mass = 1 - kept.sum()
    want = (target_mass - targets.size * q) / (p - q) - prior[targets].sum()
    mech = catalog.build("randomized_response", k=k, eps=eps)
    assert optimal_attack(mech, prior, targets, beta).gain == pytest.approx(want, abs=1e-9)
    assert expected_gain(mech, "undetectable", targets, beta, prior) == pytest.approx(want, abs=1e-9)


def test_errors_name_the_parameter() -> None:
    mech = catalog.build("oue", k=8, eps=1.0)
    with pytest.raises(LdpSimError, match="^strategy: got 'nope'"):
        strategy("nope")
    with pytest.raises(LdpSimError, match="^share"):
        expected_gain(mech, "maximal_gain", [1], 1.5, np.full(8, 1 / 8))
    with pytest.raises(LdpSimError, match="^targets"):
        expected_gain(mech, "maximal_gain", [9], 0.1, np.full(8, 1 / 8))
    with pytest.raises(LdpSimError, match="^mechanism"):
        optimal_attack(mech, np.full(8, 1 / 8), [1], 0.1)
    with pytest.raises(NotAvailable):
        catalog.build("rappor", k=8, m=16, h=2, f=0.5, p=0.25, q=0.75).crafted_reports([1], 3)
    assert set(STRATEGIES) == {
        "random_perturbed",
        "random_item",
        "maximal_gain",
        "undetectable",
        "output_mean",
        "input_mean",
        "output_mean_variance",
        "input_mean_variance",
    }
