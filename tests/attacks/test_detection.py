"""Detection of fake reports (:mod:`ldpsim.attacks.detect`): the stated false-alarm rate on
honest-only collections (checked with a binomial bound at the suite's false-failure
probability, on the least favourable honest populations), power against the attacks the
monitors are built for, and the itemset bounds against brute force over reports."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from ldpsim.attacks import ExcessMonitor, SizeMonitor, frequent_itemset, strategy
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import NotAvailable
from ldpsim.mechanisms.oracles.hashing import OptimizedLocalHashing
from tests.stats_checks import FALSE_FAILURE

ALPHA = 0.05


def _max_alarms(runs: int, alpha: float) -> int:
    """Alarms above which a detector of level alpha fails the test (false failure <= 1e-6)."""
    return int(stats.binom.isf(FALSE_FAILURE, runs, alpha))


def _honest_stream(mech, prior, ticks: int, per_tick: int, rng) -> list[np.ndarray]:
    return [mech.sample_statistic(rng.multinomial(per_tick, prior), rng) for _ in range(ticks)]


@pytest.mark.parametrize(
    "monitor,name,params,prior",
    [
        (SizeMonitor, "oue", dict(k=16, eps=1.0), np.full(16, 1 / 16)),
        (SizeMonitor, "sue", dict(k=8, eps=2.0), np.eye(8)[0]),
        # the excess bound is reached when everyone holds one answer: the least favourable population
        (ExcessMonitor, "randomized_response", dict(k=4, eps=1.0), np.eye(4)[0]),
        (ExcessMonitor, "oue", dict(k=8, eps=1.0), np.eye(8)[2]),
    ],
)
def test_monitors_keep_their_false_alarm_rate_on_honest_collections(monitor, name, params, prior) -> None:
    mech = catalog.build(name, **params)
    rng = np.random.default_rng(5)
    runs, alarms = 400, 0
    for _ in range(runs):
        mon = monitor(mech, ALPHA)
        for j, stat in enumerate(_honest_stream(mech, prior, 20, 200, rng)):
            mon.update(stat, 200, float(j))
        alarms += mon.detected_at is not None
    assert alarms <= _max_alarms(runs, ALPHA)


def test_size_monitor_finds_random_perturbed_values_on_unary_encoding() -> None:
    """Uniform bit vectors have k/2 ones on average, honest OUE reports p + (k - 1) q: found
    within the first ticks."""
    mech = catalog.build("oue", k=32, eps=1.0)
    rng = np.random.default_rng(7)
    prior = np.full(32, 1 / 32)
    mon = SizeMonitor(mech, 1e-3)
    for j in range(10):
        honest = mech.sample_statistic(rng.multinomial(950, prior), rng)
        fake = mech.statistic(strategy("random_perturbed").reports(mech, np.array([0]), 50, rng))
        mon.update(honest + fake, 1000, float(j))
    assert mon.detected_at is not None and mon.detected_at <= 2.0


def test_excess_monitor_finds_a_maximal_gain_attack_on_randomized_response() -> None:
    mech = catalog.build("randomized_response", k=8, eps=1.0)
    rng = np.random.default_rng(8)
    prior = np.full(8, 1 / 8)
    mon = ExcessMonitor(mech, 1e-3)
    fake = mech.statistic(mech.crafted_reports([3], 300))
    for j in range(10):
        mon.update(mech.sample_statistic(rng.multinomial(700, prior), rng) + fake, 1000, float(j))
    assert mon.detected_at is not None


def test_size_monitor_needs_an_input_free_law() -> None:
    with pytest.raises(NotAvailable):
        SizeMonitor(catalog.build("olh", k=8, eps=1.0))


@pytest.mark.parametrize(
    "name,params,z",
    [
        ("oue", dict(k=5, eps=1.0), 2),
        ("oue", dict(k=5, eps=1.0), 3),
        ("subset_selection", dict(k=6, eps=1.0, omega=3), 2),
        ("subset_selection", dict(k=6, eps=1.0, omega=3), 3),
        ("randomized_response", dict(k=5, eps=1.0), 2),
    ],
)
def test_itemset_bound_against_every_report(name: str, params: dict, z: int) -> None:
    """The largest probability, over inputs and z-sets, that a report supports the whole set,
    by summing the exact probabilities of every report (brute force over the report space)."""
    mech = catalog.build(name, **params)
    k = mech.k
    reports = mech.possible_reports() if name != "randomized_response" else np.arange(k)
    units = mech.unit_statistics(reports).astype(bool)
    worst = 0.0
    for x in range(k):
        prob = np.exp(mech.log_density(x, reports))
        for items in itertools.combinations(range(k), z):
            worst = max(worst, float(prob[units[:, list(items)].all(axis=1)].sum()))
    assert mech.itemset_support_bound(z) == pytest.approx(worst, rel=1e-12, abs=1e-15)


def test_hashing_itemset_bound_holds_over_every_hash_function() -> None:
    mech = OptimizedLocalHashing(4, 1.0, prime=5)
    reports = mech.possible_reports()
    units = mech.unit_statistics(reports).astype(bool)
    for z in (2, 3):
        worst = 0.0
        for x in range(4):
            prob = np.exp(mech.log_density(x, reports))
            for items in itertools.combinations(range(4), z):
                worst = max(worst, float(prob[units[:, list(items)].all(axis=1)].sum()))
        assert worst <= mech.itemset_support_bound(z) * (1 + 1e-12)


def test_frequent_itemset_keeps_its_level_on_honest_reports() -> None:
    mech = catalog.build("oue", k=12, eps=1.0)
    rng = np.random.default_rng(9)
    runs, alarms = 300, 0
    prior = np.full(12, 1 / 12)
    for _ in range(runs):
        found = frequent_itemset(mech, mech.privatize(rng.choice(12, size=600, p=prior), rng), ALPHA)
        alarms += found.items.size > 0
    assert alarms <= _max_alarms(runs, ALPHA)


@pytest.mark.parametrize("name", ["oue", "olh", "subset_selection"])
def test_frequent_itemset_finds_the_targets_of_a_maximal_gain_attack(name: str) -> None:
    mech = catalog.build(name, k=32, eps=1.0)
    rng = np.random.default_rng(10)
    honest = mech.privatize(rng.choice(32, size=4000), rng)
    targets = np.array([4, 9, 17, 30])
    fake = mech.crafted_reports(targets, 200, rng)
    found = frequent_itemset(mech, np.concatenate([honest, fake]), 1e-3)
    # local hashing's bound stops falling after three answers (a three-point family), so its
    # detected set may stop at three of the targets; every fake report still supports it
    if name == "olh":
        assert 3 <= found.items.size and set(found.items.tolist()) <= set(targets.tolist())
    else:
        assert found.items.tolist() == targets.tolist()
    assert found.flagged[4000:].mean() == 1.0
    assert found.flagged[:4000].mean() < 0.05
