"""A shuffler node for the SimPy network: it sits between the clients' network and the
server, collects reports into batches, permutes each batch and forwards it without the
senders' identities.

Reports travel as :class:`Parcel` s: numpy columns (the report, its period, its sender,
when it was sent and when it reached this node), one parcel per delivery tick, never one
SimPy event per report. The shuffler closes a batch

- by **size** (``batch = B``): the reports are taken in the order they reached the
  shuffler, and batch j holds reports jB+1 .. (j+1)B; it leaves when its last report
  arrives;
- by **time** (``window = w``): batch j holds the reports that arrived in ((j-1)w, jw] and
  leaves at jw.

When the run ends, a time window still open leaves at the end (it may be smaller than the
others; the run reports its central guarantee), while reports short of a full batch of
``batch`` are withheld and never reach the server (a batch never leaves smaller than the
size whose central guarantee the run promises; they count as not received). Each
batch is permuted by a uniformly random permutation drawn from the node's own random
stream, and the sender column is dropped: the server sees only the multiset of reports of
each batch (and each report's period, which is public). The time a report waited in the
shuffler is its departure time minus its arrival; it shows in the latency results.

Exactness: parcels reach the node at the end of the delivery tick in which their reports
arrived, with every report's exact arrival time; a batch closed by size leaves at the exact
arrival of its last report, and windows are closed once every report up to the window's
end has reached the node, so departure stamps are exact whatever the tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, cast

import numpy as np
import simpy
from numpy.typing import NDArray

from ldpsim._validate import invalid


@dataclass(frozen=True)
class Parcel:
    """Reports in transit, one entry per report (all columns the same length)."""

    report: NDArray[np.int64]
    period: NDArray[np.int64]
    sender: NDArray[np.int64] | None  # None once shuffled
    sent: NDArray[np.float64]
    arrived: NDArray[np.float64]  # at the current node
    waited: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))  # time spent in the shuffler

    def __len__(self) -> int:
        return int(self.report.size)

    @staticmethod
    def join(parcels: list["Parcel"]) -> "Parcel":
        senders = [p.sender for p in parcels]
        return Parcel(
            np.concatenate([p.report for p in parcels]),
            np.concatenate([p.period for p in parcels]),
            None if any(s is None for s in senders) else np.concatenate(senders),  # type: ignore[arg-type]
            np.concatenate([p.sent for p in parcels]),
            np.concatenate([p.arrived for p in parcels]),
            np.concatenate([p.waited if p.waited.size else np.zeros(len(p)) for p in parcels]),
        )

    def take(self, index: NDArray[np.int64] | slice) -> "Parcel":
        w = self.waited if self.waited.size else np.zeros(len(self))
        return Parcel(
            self.report[index],
            self.period[index],
            None if self.sender is None else self.sender[index],
            self.sent[index],
            self.arrived[index],
            w[index],
        )


@dataclass
class BatchLog:
    """What the shuffler did: the size and departure time of every batch."""

    sizes: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    withheld: int = 0  # reports short of a full batch when the run ended (size batches)


class Shuffler:
    """The shuffler node: ``put(parcel)`` at the end of each delivery tick (the parcel's
    ``arrived`` are the exact arrival times, each <= now); each closed batch goes to
    ``forward(parcel)`` permuted, without senders, with ``arrived`` set to its departure
    time and ``waited`` to the time each report spent here. Call :meth:`flush` at the end.
    """

    def __init__(
        self,
        env: simpy.Environment,
        forward: Callable[[Parcel], None],
        rng: np.random.Generator,
        *,
        batch: int | None = None,
        window: float | None = None,
    ) -> None:
        if (batch is None) == (window is None):
            raise invalid("batch", batch, "exactly one of batch (reports per batch) and window (time per batch)")
        if batch is not None and batch < 1:
            raise invalid("batch", batch, "at least one report per batch")
        if window is not None and not window > 0:
            raise invalid("window", window, "a time > 0")
        self.env, self.forward, self.rng = env, forward, rng
        self.batch, self.window = batch, window
        self.held: list[Parcel] = []
        self.log = BatchLog()
        self._pending = False

    def put(self, parcel: Parcel) -> None:
        """Hold a parcel; batches are closed once every parcel delivered at this instant is
        in (a zero-delay event queued after them), so which reports share a batch depends on
        their arrival times only, not on the order parcels of one tick were handed over."""
        if len(parcel):
            self.held.append(parcel)
        if not self._pending:
            self._pending = True
            self.env.process(self._close_now())

    def _close_now(self):
        yield self.env.timeout(0)
        self._pending = False
        self._release(float(self.env.now))

    def _held(self) -> Parcel | None:
        if not self.held:
            return None
        whole = Parcel.join(self.held) if len(self.held) > 1 else self.held[0]
        self.held = []
        return whole.take(np.argsort(whole.arrived, kind="stable"))  # in arrival order

    def _release(self, now: float) -> None:
        whole = self._held()
        if whole is None:
            return
        if self.batch is not None:
            full = len(whole) // self.batch * self.batch
            for start in range(0, full, self.batch):
                part = whole.take(slice(start, start + self.batch))
                self._send(part, float(part.arrived[-1]))  # sorted: its last arrival
            rest = whole.take(slice(full, len(whole)))
        else:
            w = cast(float, self.window)  # exactly one of batch and window is set
            with np.errstate(over="ignore"):  # a window of 1e-300: each report closes its own window
                q = whole.arrived / w
            closes = np.where(np.isfinite(q), np.ceil(q - 1e-12) * w, whole.arrived)
            done = closes <= now + 1e-12 * max(1.0, abs(now))
            for close in np.unique(closes[done]):
                self._send(whole.take(np.flatnonzero(closes == close)), float(close))
            rest = whole.take(np.flatnonzero(~done))
        if len(rest):
            self.held = [rest]

    def flush(self) -> None:
        """The end of the run: a time window still open leaves now; reports short of a full
        size batch are withheld (counted in ``log.withheld``)."""
        now = float(self.env.now)
        self._release(now)
        whole = self._held()
        if whole is not None and len(whole):
            if self.window is not None:
                self._send(whole, now)
            else:
                self.log.withheld += len(whole)

    def _send(self, part: Parcel, leaves: float) -> None:
        perm = self.rng.permutation(len(part))
        waited = (part.waited if part.waited.size else np.zeros(len(part))) + (leaves - part.arrived)
        out = Parcel(
            part.report[perm], part.period[perm], None, part.sent[perm], np.full(len(part), leaves), waited[perm]
        )
        self.log.sizes.append(len(part))
        self.log.times.append(leaves)
        self.forward(out)
