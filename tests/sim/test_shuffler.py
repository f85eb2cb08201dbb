"""The shuffler node: it keeps every report (the multiset of each batch is what came in),
changes only their order, drops senders, closes batches by size or by time window, and
its waiting time is what the latency results add."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from ldpsim.errors import LdpSimError
from ldpsim.sim.shuffler import Parcel, Shuffler


def _parcel(rng: np.random.Generator, n: int, t0: float, t1: float, first_sender: int = 0) -> Parcel:
    arrived = np.sort(rng.uniform(t0, t1, n))
    return Parcel(
        rng.integers(0, 5, n), rng.integers(0, 3, n), np.arange(first_sender, first_sender + n), arrived - 0.01, arrived
    )


def _run(parcels_by_tick: list[tuple[float, Parcel]], **kw) -> tuple[list[Parcel], Shuffler]:
    env = simpy.Environment()
    out: list[Parcel] = []
    sh = Shuffler(env, out.append, np.random.default_rng(1), **kw)

    def feed():
        for when, parcel in parcels_by_tick:
            yield env.timeout(when - env.now)
            sh.put(parcel)

    env.process(feed())
    env.run()
    sh.flush()
    return out, sh


def _ticks(rng: np.random.Generator, counts: list[int], dt: float = 1.0) -> list[tuple[float, Parcel]]:
    out, sender = [], 0
    for j, n in enumerate(counts):
        out.append(((j + 1) * dt, _parcel(rng, n, j * dt, (j + 1) * dt, sender)))
        sender += n
    return out


@settings(max_examples=40)
@given(counts=st.lists(st.integers(0, 60), min_size=1, max_size=8), batch=st.integers(1, 50))
def test_batches_by_size_keep_every_report_and_only_reorder(counts: list[int], batch: int) -> None:
    ticks = _ticks(np.random.default_rng(sum(counts) + batch), counts)
    out, sh = _run(ticks, batch=batch)
    sent = Parcel.join([p for _, p in ticks])
    sent = sent.take(np.sort(np.argsort(sent.arrived, kind="stable")[: sum(counts) - sum(counts) % batch]))
    got = Parcel.join(out) if out else None
    total = sum(counts)
    # full batches leave; the reports short of a full batch at the end are withheld
    assert sum(sh.log.sizes) == total - total % batch and sh.log.withheld == total % batch
    total -= total % batch
    if total == 0:
        return
    assert got is not None
    # the multiset of (report, period, send time) is unchanged
    key = lambda p: Counter(zip(p.report.tolist(), p.period.tolist(), p.sent.tolist()))
    assert key(got) == key(sent)
    assert all(p.sender is None for p in out)
    # every batch has exactly `batch` reports, taken in arrival order
    assert all(s == batch for s in sh.log.sizes)
    order = np.argsort(sent.arrived, kind="stable")
    start = 0
    for p, size in zip(out, sh.log.sizes):
        mine = order[start : start + size]
        assert Counter(p.sent.tolist()) == Counter(sent.sent[mine].tolist())
        assert p.arrived[0] == sent.arrived[mine].max()  # it leaves when its last report arrives
        back = dict(zip(sent.sent.tolist(), sent.arrived.tolist()))  # send times are distinct
        assert np.allclose(p.waited, p.arrived - np.array([back[x] for x in p.sent.tolist()]))
        assert np.all(p.waited >= 0)
        start += size


def test_order_changes_and_permutations_are_uniform() -> None:
    """Reports 0..4 in one batch of 5: each of the 120 orders is equally likely (chi-square
    over 12,000 batches; the statistic with 119 degrees of freedom exceeds 215 with
    probability < 1e-6)."""
    env = simpy.Environment()
    seen: Counter[tuple[int, ...]] = Counter()
    sh = Shuffler(env, lambda p: seen.update([tuple(p.report.tolist())]), np.random.default_rng(7), batch=5)
    for _ in range(12_000):
        sh.put(Parcel(np.arange(5), np.zeros(5, dtype=np.int64), np.arange(5), np.zeros(5), np.zeros(5)))
        env.run()  # the batch closes once the instant's parcels are in
    assert sum(seen.values()) == 12_000 and len(seen) == 120
    expected = 12_000 / 120
    chi2 = sum((c - expected) ** 2 / expected for c in seen.values())
    assert chi2 < 215


def test_windows_close_at_their_end_and_waits_add_up() -> None:
    rng = np.random.default_rng(3)
    ticks = _ticks(rng, [40, 25, 0, 33, 10], dt=0.25)  # reports arrive over [0, 1.25]
    out, sh = _run(ticks, window=0.5)
    sent = Parcel.join([p for _, p in ticks])
    # the third window is still open when the run ends at 1.25: what it holds leaves then
    assert sh.log.times == [0.5, 1.0, 1.25]
    expected = [int(np.sum((sent.arrived > a) & (sent.arrived <= b))) for a, b in [(0, 0.5), (0.5, 1.0), (1.0, 1.5)]]
    assert sh.log.sizes == expected
    for p, close in zip(out, sh.log.times):
        assert np.all(p.arrived == close)
    got = Parcel.join(out)
    # waiting time = departure - arrival at the shuffler, for every report
    back = {s: a for s, a in zip(sent.sent.tolist(), sent.arrived.tolist())}
    dep = got.arrived
    assert np.allclose(got.waited, dep - np.array([back[s] for s in got.sent.tolist()]))


def test_bad_settings_name_the_parameter() -> None:
    env = simpy.Environment()
    with pytest.raises(LdpSimError, match="batch"):
        Shuffler(env, print, np.random.default_rng(0), batch=None, window=None)
    with pytest.raises(LdpSimError, match="window"):
        Shuffler(env, print, np.random.default_rng(0), window=0.0)


def test_batches_depend_on_arrival_times_not_on_the_order_parcels_are_handed_over() -> None:
    """Two parcels delivered at the same instant (reports of two periods, arrivals
    interleaved): the batches are the same whichever parcel is handed over first."""

    def batches(order: list[int]) -> list[list[float]]:
        env = simpy.Environment()
        out: list[Parcel] = []
        sh = Shuffler(env, out.append, np.random.default_rng(0), batch=3)
        parcels = [
            Parcel(
                np.zeros(3, dtype=np.int64),
                np.full(3, p, dtype=np.int64),
                np.arange(3) + 3 * p,
                np.zeros(3),
                np.array([0.1, 0.3, 0.5]) + 0.1 * p,
            )
            for p in (0, 1)
        ]
        for i in order:
            sh.put(parcels[i])
        env.run()
        return [sorted((p.arrived - p.waited).round(12).tolist()) for p in out]

    assert batches([0, 1]) == batches([1, 0]) == [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
