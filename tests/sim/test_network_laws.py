"""Loss and latency: the number of reports received by each checkpoint has exactly the law
that arrivals, latency and loss imply, in both modes.

Reference laws are computed independently of the engine: the delivery probability by
numerical integration of the latency CDF (scipy.integrate.quad) and the count law as a
binomial (or a convolution of binomials for waves). Each law check has false-failure
probability 1e-7 (exact binomial tails per bin + chi-square, tests/stats_checks.py), and
each test makes at most 10 such checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.sim import run_replication
from tests.oracles import sum_of_binomials_pmf
from tests.sim.helpers import make
from tests.stats_checks import assert_sample_law
from tests.tiers import sample

REPS = 400
LATENCIES = {
    "constant": ('{ kind = "constant", value = 0.3 }', lambda s: float(s >= 0.3)),
    "exponential": ('{ kind = "exponential", mean = 0.5 }', lambda s: 1 - math.exp(-s / 0.5) if s > 0 else 0.0),
    "lognormal": (
        '{ kind = "lognormal", median = 0.4, sigma = 0.8 }',
        lambda s: stats.norm.cdf((math.log(s) - math.log(0.4)) / 0.8) if s > 0 else 0.0,
    ),
}


def received_by_checkpoint(scenario, reps=REPS):
    """n_received at each periodic/end checkpoint: array (reps, checkpoints), and the times."""
    rows = []
    for r in range(reps):
        df = run_replication(scenario, r, 12345)
        df = df[(df["quantity"] == "frequency") & (df["category"] == "a")]
        rows.append(df["n_received"].to_numpy())
        times = df["time"].to_numpy()
    return np.array(rows), times


def uniform_arrival_probability(cdf, t: float, start: float, stop: float) -> float:
    """P(U + L <= t), U uniform on [start, stop], by quadrature of the latency CDF."""
    lo, hi = start, min(stop, t)
    if hi <= lo:
        return 0.0
    val, _ = integrate.quad(lambda a: cdf(t - a), lo, hi, limit=200, points=[t - 0.3] if lo < t - 0.3 < hi else None)
    return val / (stop - start)


def cases(*kept, latencies=sorted(LATENCIES)):
    """(mode, latency) cases, those in ``kept`` in the default run and the rest in the slow
    tier (the law is the same code path per mode; each latency's CDF is what differs)."""
    all_cases = [(m, lat) for lat in latencies for m in ("individual", "aggregate")]
    return sample(all_cases, keep=[i for i, c in enumerate(all_cases) if c in kept])


@pytest.mark.parametrize("mode, latency", cases(("aggregate", "lognormal")))
def test_all_at_once_received_counts_are_binomial(mode, latency):
    text, cdf = LATENCIES[latency]
    n, loss = 2000, 0.1
    sc = make(size=n, latency=text, loss=loss, mode=mode, checkpoints="{ every = 0.25 }", end=1.5)
    counts, times = received_by_checkpoint(sc)
    for i, t in enumerate(times):
        p = (1 - loss) * cdf(t)
        pmf = stats.binom.pmf(np.arange(n + 1), n, p)
        assert_sample_law(counts[:, i], pmf, 1e-7)


@pytest.mark.parametrize("mode, latency", cases(("individual", "exponential"), latencies=["exponential", "lognormal"]))
def test_poisson_arrivals_received_counts_are_binomial(mode, latency):
    """Poisson arrivals over [0, D] given n: i.i.d. uniform arrival times, so the count by t is
    Binomial(n, (1 - loss) P(U + L <= t))."""
    text, cdf = LATENCIES[latency]
    n, loss, duration = 3000, 0.05, 2.0
    sc = make(
        size=n,
        latency=text,
        loss=loss,
        mode=mode,
        arrivals=f'{{ kind = "poisson", duration = {duration} }}',
        checkpoints="{ every = 0.5 }",
        end=3.0,
        tick=0.1,
    )
    counts, times = received_by_checkpoint(sc)
    for i, t in enumerate(times):
        p = (1 - loss) * uniform_arrival_probability(cdf, t, 0.0, duration)
        assert_sample_law(counts[:, i], stats.binom.pmf(np.arange(n + 1), n, p), 1e-7)


@pytest.mark.parametrize("mode", ["aggregate", pytest.param("individual", marks=pytest.mark.slow)])
def test_waves_received_counts_are_sums_of_binomials(mode):
    text, cdf = LATENCIES["exponential"]
    n, loss = 2000, 0.2
    times_w, fractions = [0.0, 0.6, 1.1], [0.5, 0.3, 0.2]
    sc = make(
        size=n,
        latency=text,
        loss=loss,
        mode=mode,
        checkpoints="{ every = 0.5 }",
        end=2.0,
        arrivals=f'{{ kind = "waves", times = {times_w}, fractions = {fractions} }}',
    )
    sizes = np.array([1000, 600, 400])  # largest-remainder split of 2000
    counts, times = received_by_checkpoint(sc)
    for i, t in enumerate(times):
        probs = np.array([(1 - loss) * cdf(t - w) if t >= w else 0.0 for w in times_w])
        assert_sample_law(counts[:, i], sum_of_binomials_pmf(sizes, probs), 1e-7)


def test_engine_book_keeping_adds_up():
    sc = make(size=5000, latency=LATENCIES["lognormal"][0], loss=0.3, end=0.5, checkpoints="{ every = 0.25 }")
    df = run_replication(sc, 0, 1)
    e = df[df["task"] == "engine"].set_index("quantity")["estimate"]
    assert e["clients"] == 5000
    assert e["lost"] + e["in_flight"] + e["received"] == 5000
    assert e["in_flight"] > 0  # median latency 0.4 with end 0.5: many still on their way


@pytest.mark.parametrize("mode", ["individual", "aggregate"])
def test_every_m_reports_checkpoints(mode):
    """Checkpoints every m reports see exactly m, 2m, ... reports; in individual mode at the
    exact time of the m-th report (checked against the stored report times)."""
    m = 700
    sc = make(
        size=5000,
        latency=LATENCIES["exponential"][0],
        mode=mode,
        checkpoints=f"{{ every_reports = {m} }}",
        end=4.0,
        extra_server="keep_reports = true" if mode == "individual" else "",
    )
    df = run_replication(sc, 0, 3)
    f = df[(df["quantity"] == "frequency") & (df["category"] == "a")]
    by_reports = f[f["reason"] == "every_reports"]
    np.testing.assert_array_equal(by_reports["n_received"].to_numpy(), m * np.arange(1, len(by_reports) + 1))
    assert len(by_reports) == f[f["reason"] == "end"]["n_received"].iloc[0] // m
    if mode == "individual":
        # rerun the replication by hand to read the server's stored report times
        from ldpsim.sim.engine import Replication

        rep = Replication(sc, 0, 3)
        rep.run()
        _, times = rep.server.stored_reports()
        assert np.all(np.diff(times) >= 0), "reports reach the server in time order"
        np.testing.assert_allclose(by_reports["time"].to_numpy(), times[m * np.arange(1, len(by_reports) + 1) - 1])


def test_report_storage_respects_the_budget():
    sc = make(size=3000, extra_server="keep_reports = true\nmax_reports = 1000", end=1.0)
    df = run_replication(sc, 0, 4)
    e = df[df["task"] == "engine"].set_index("quantity")["estimate"]
    assert e["received"] == 3000 and e["stored_reports"] == 1000
