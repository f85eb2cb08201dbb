"""Weighted (Hajek) estimates and their linearised design variance
(:mod:`ldpsim.analyst.survey_design`).

References, independent of the code under test: the survey package svy (0.35.0, Taylor
linearisation, PSUs with replacement within strata) on the NHANES II extract we ship,
its numbers written below and, where svy is installed (the newest-Python pass of
.ci/run installs it), recomputed live; the textbook formula written out as loops over
strata and PSUs on random designs; and, for the privacy noise's part, Monte Carlo over
the noise with a tolerance from the suite's false-failure probability."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst.survey_design import hajek, kish_size, privacy_variance, psu_layout, psu_totals
from ldpsim.errors import LdpSimError
from tests.sim.helpers import SCENARIOS
from tests.stats_checks import FALSE_FAILURE

#: svy 0.35.0 on scenarios/data/nhanes2.csv without the two rows whose diabetes is blank:
#: ``svy.Sample(d, svy.Design(stratum="stratum", psu="psu", wgt="weight")).estimation.mean(y)``
#: for the indicator y of each answer (estimate, standard error)
SVY = {
    ("high_bp", "yes"): (0.3688265101804908, 0.014332294938002277),
    ("diabetes", "yes"): (0.03428525679025107, 0.0018197263729908385),
    ("race", "Black"): (0.09563673787668373, 0.012780443970942745),
    ("race", "Other"): (0.02537433847701233, 0.010556645106700718),
    ("race", "White"): (0.878988923646304, 0.01672501297079752),
    ("region", "Midwest"): (0.24910073746429798, 0.006186809936918191),
    ("region", "Northeast"): (0.2062746821491721, 0.005682819265953733),
    ("region", "South"): (0.26565480932599983, 0.010398070846448905),
    ("region", "West"): (0.27896977106053006, 0.011325434931369146),
}
#: the same, of high_bp = yes in each region (a domain): ``mean(y, by="region")``
SVY_BY_REGION = {
    "Midwest": (0.34774904549301106, 0.03192371617695546),
    "Northeast": (0.39677881086148376, 0.03272196157739865),
    "South": (0.36952761703946385, 0.025894355804057346),
    "West": (0.3663112113111865, 0.024900405726569683),
}


def _nhanes() -> list[dict[str, str]]:
    with (SCENARIOS / "data" / "nhanes2.csv").open(newline="") as f:
        return [row for row in csv.DictReader(f) if row["diabetes"] != ""]


def _estimate(rows, column: str, answer: str, domain=None):
    cell, stratum_of, strata = psu_layout(np.array([r["stratum"] for r in rows]), np.array([r["psu"] for r in rows]))
    w = np.array([float(r["weight"]) for r in rows])
    inside = np.ones(len(rows), bool) if domain is None else np.array([domain(r) for r in rows])
    y = np.array([float(r[column] == answer) for r in rows])
    cells = stratum_of.size
    return hajek(psu_totals(cell, w * y * inside, cells), psu_totals(cell, w * inside, cells)[:, 0], stratum_of, strata)


@pytest.mark.parametrize(("column", "answer"), sorted(SVY))
def test_nhanes_shares_and_standard_errors_are_svys(column, answer):
    est = _estimate(_nhanes(), column, answer)
    want, se = SVY[(column, answer)]
    assert est.estimate[0] == pytest.approx(want, rel=1e-12)
    assert math.sqrt(est.variance[0]) == pytest.approx(se, rel=1e-9)


@pytest.mark.parametrize("region", sorted(SVY_BY_REGION))
def test_nhanes_domain_estimates_are_svys(region):
    est = _estimate(_nhanes(), "high_bp", "yes", domain=lambda r: r["region"] == region)
    want, se = SVY_BY_REGION[region]
    assert est.estimate[0] == pytest.approx(want, rel=1e-12)
    assert math.sqrt(est.variance[0]) == pytest.approx(se, rel=1e-9)


def test_live_svy_agrees_where_it_is_installed():
    svy = pytest.importorskip("svy")
    pl = pytest.importorskip("polars")
    rows = _nhanes()
    frame = pl.DataFrame(
        {
            "stratum": [int(r["stratum"]) for r in rows],
            "psu": [int(r["psu"]) for r in rows],
            "weight": [float(r["weight"]) for r in rows],
            "y": [float(r["race"] == "Black") for r in rows],
        }
    )
    got = svy.Sample(frame, svy.Design(stratum="stratum", psu="psu", wgt="weight")).estimation.mean("y")
    got = got.to_dicts()[0]
    est = _estimate(rows, "race", "Black")
    assert est.estimate[0] == pytest.approx(got["est"], rel=1e-12)
    assert math.sqrt(est.variance[0]) == pytest.approx(got["se"], rel=1e-9)


def _loops(y, w, strata, psus) -> tuple[float, float]:
    """The Hajek mean and its with-replacement linearised variance, as plain loops."""
    total = sum(w)
    theta = sum(a * b for a, b in zip(w, y)) / total
    variance = 0.0
    for h in sorted(set(strata)):
        units = sorted({p for s, p in zip(strata, psus) if s == h})
        z = [
            sum(w[i] * (y[i] - theta) for i in range(len(y)) if strata[i] == h and psus[i] == c) / total for c in units
        ]
        mean = sum(z) / len(z)
        variance += len(z) / (len(z) - 1) * sum((v - mean) ** 2 for v in z)
    return theta, variance


@pytest.mark.parametrize("seed", range(6))
def test_random_designs_match_the_formula_written_as_loops(seed):
    rng = np.random.default_rng(seed)
    strata = np.sort(rng.integers(0, int(rng.integers(1, 5)), size=int(rng.integers(20, 200))))
    psus = np.zeros_like(strata)
    for h in np.unique(strata):  # PSU labels 0, 1, ... in every stratum: equal labels, distinct PSUs
        at = np.flatnonzero(strata == h)
        psus[at] = rng.permutation(np.arange(at.size) % max(2, min(at.size, int(rng.integers(2, 6)))))
    keep = np.isin(strata, [h for h in np.unique(strata) if np.count_nonzero(strata == h) >= 2])
    strata, psus = strata[keep], psus[keep]
    w = rng.uniform(0.5, 20, size=strata.size)
    y = rng.normal(size=strata.size)
    cell, stratum_of, count = psu_layout(strata, psus)
    got = hajek(psu_totals(cell, w * y, stratum_of.size), psu_totals(cell, w, stratum_of.size)[:, 0], stratum_of, count)
    theta, variance = _loops(list(y), list(w), list(strata), list(psus))
    assert got.estimate[0] == pytest.approx(theta, rel=1e-12, abs=1e-15)
    assert got.variance[0] == pytest.approx(variance, rel=1e-10)


def test_a_stratum_with_one_psu_is_refused_in_one_line():
    cell, stratum_of, count = psu_layout(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 0]))
    with pytest.raises(LdpSimError, match="single PSU") as info:
        hajek(np.ones((stratum_of.size, 1)), np.ones(stratum_of.size), stratum_of, count)
    assert "\n" not in str(info.value)


def test_no_weight_gives_no_estimate():
    _, stratum_of, count = psu_layout(np.array([0, 0]), np.array([0, 1]))
    est = hajek(np.zeros((2, 1)), np.zeros(2), stratum_of, count)
    assert np.isnan(est.estimate).all() and np.isnan(est.variance).all() and est.weight == 0
    assert np.isnan(privacy_variance(np.ones(1), 0.0)).all()


def test_kish_size():
    assert kish_size(np.ones(10)) == pytest.approx(10.0)
    assert kish_size(np.array([1.0, 3.0])) == pytest.approx(16 / 10)


def test_the_linearisation_on_noisy_terms_estimates_design_plus_privacy_variance():
    """u_i = x_i + e_i, e_i independent with variance s_i: over the noise, the mean of the
    linearised variance of the u_i is that of the x_i plus sum w_i^2 s_i / W^2 (exactly
    at a fixed theta; here theta is estimated, so within the Monte Carlo tolerance)."""
    rng = np.random.default_rng(11)
    n, reps = 600, 400
    strata = np.repeat(np.arange(6), 100)
    psus = np.tile(np.arange(4), 150)
    w = rng.uniform(1, 8, size=n)
    x = rng.binomial(1, 0.3 + 0.05 * strata).astype(float)
    s = rng.uniform(0.5, 2.0, size=n)
    cell, stratum_of, count = psu_layout(strata, psus)
    weights = psu_totals(cell, w, stratum_of.size)[:, 0]
    base = hajek(psu_totals(cell, w * x, stratum_of.size), weights, stratum_of, count).variance[0]
    noise = privacy_variance(np.array([np.sum(w * w * s)]), float(w.sum()))[0]
    draws = np.array(
        [
            hajek(
                psu_totals(cell, w * (x + rng.normal(size=n) * np.sqrt(s)), stratum_of.size), weights, stratum_of, count
            ).variance[0]
            for _ in range(reps)
        ]
    )
    # the mean of 400 draws: a normal tolerance at the suite's false-failure probability
    z = stats.norm.isf(FALSE_FAILURE / 2)
    assert abs(draws.mean() - (base + noise)) <= z * draws.std(ddof=1) / math.sqrt(reps)
