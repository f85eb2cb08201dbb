"""Each report's own statistic (``unit_statistics``), what a server that weighs its
respondents sums: over every frequency oracle of the catalog that gives it, its rows are
the statistic of each report alone (computed here one report at a time) and sum to the
statistic of all; the oracles that do not give it say so in one line."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle, NotAvailable
from ldpsim.sim.question_kinds.categorical import unit_inverse

BUILT = {
    "randomized_response": dict(eps=1.0, k=5),
    "oue": dict(eps=1.0, k=5),
    "sue": dict(eps=1.0, k=5),
    "olh": dict(eps=1.0, k=7),
    "blh": dict(eps=1.0, k=7),
    "subset_selection": dict(eps=1.0, k=6),
    "hadamard_response": dict(eps=1.0, k=5),
    "rappor": dict(k=4, m=8, h=2, f=0.5, p=0.5, q=0.75, cohort=0),
}


def _build(name: str) -> FrequencyOracle:
    return catalog.build(name, **BUILT[name])


@pytest.mark.parametrize("name", sorted(BUILT))
def test_rows_are_each_reports_own_statistic_and_sum_to_the_statistic(name):
    mech = _build(name)
    rng = np.random.default_rng(3)
    x = rng.integers(0, mech.k, size=200)
    y = mech.privatize(x, rng)
    rows = mech.unit_statistics(y)
    assert rows.shape == (200, mech.statistic_size)
    assert np.array_equal(rows.sum(axis=0), mech.statistic(y))
    for i in range(0, 200, 37):  # one report at a time, through statistic itself
        assert np.array_equal(rows[i], mech.statistic(y[i : i + 1]))


@pytest.mark.parametrize("name", sorted(BUILT))
def test_the_mean_of_the_reports_terms_is_the_unbiased_estimate(name):
    mech = _build(name)
    if not mech.identifiable:
        pytest.skip(f"{name} here cannot estimate every frequency")  # pragma: no cover
    rng = np.random.default_rng(4)
    y = mech.privatize(rng.integers(0, mech.k, size=300), rng)
    a, b = unit_inverse(mech)
    terms = mech.unit_statistics(y) @ a.T + b
    assert np.allclose(terms.mean(axis=0), mech.invert(mech.statistic(y) / 300.0), atol=1e-12)


def test_an_oracle_without_it_says_so_in_one_line():
    mech = _build("randomized_response")  # the base class's own answer, as an oracle without it gives
    with pytest.raises(NotAvailable, match="unit_statistics") as info:
        FrequencyOracle.unit_statistics(mech, np.zeros(3, dtype=int))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_sample_statistics_draws_one_statistic_per_row_of_input_counts(name):
    """Every oracle with an exact aggregate law draws rows of statistics at once: one row per
    row of input counts, zero for no clients, each row's total within what its clients can
    send; the base class's version is sample_statistic row by row on the same generator."""
    mech = _build(name)
    rows = np.array([[0] * mech.k, [3] * mech.k, list(range(mech.k))])
    if not mech.aggregate_exact:
        with pytest.raises(NotAvailable, match="sample_statistic"):
            mech.sample_statistics(rows, 1)
        return
    got = mech.sample_statistics(rows, 5)
    assert got.shape == (3, mech.statistic_size) and got.dtype == np.int64
    assert not got[0].any() and (got >= 0).all()
    width = float(mech.statistic(mech.privatize(np.zeros(1, dtype=int), 1)).sum())  # supports one report names
    if name in ("oue", "sue", "rappor"):  # supports per report vary: bounded by the statistic's length
        width = float(mech.statistic_size)
    assert (got.sum(axis=1) <= width * rows.sum(axis=1)).all()
    loop = np.stack([mech.sample_statistic(r, np.random.default_rng(5)) for r in rows[:1]])
    base = FrequencyOracle.sample_statistics(mech, rows[:1], np.random.default_rng(5))
    assert np.array_equal(base, loop)
    with pytest.raises(ValueError, match="input_counts"):
        mech.sample_statistics(rows[0], 1)
