"""The server side of a survey replication: what a server keeps of the reports it receives.

:class:`Server` keeps a mechanism's statistic (the output counts of a finite mechanism,
the support counts of other frequency oracles) and, on request, the reports themselves;
:class:`NumericServer` keeps what the estimates of a numeric question need (the number
of reports, their sum, their sum of squares and, for a distribution, the counts of the raw
reports in equal buckets), and :class:`MomentsServer` that of the two-group protocol of a
numeric question's variance. A question kind (:mod:`ldpsim.sim.question_kinds`) says which
one its questions use.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray


class Server:
    """Accumulates the mechanism's statistic (always: output counts of a finite mechanism,
    support counts of other frequency oracles) and individual reports (up to a budget)."""

    def __init__(self, mechanism: Any, keep_reports: bool, max_reports: int) -> None:
        self.mechanism = mechanism
        self.counts = np.zeros(mechanism.statistic_size, dtype=np.int64)
        self.n_received = 0
        self.keep = keep_reports
        self.budget = max_reports
        self._reports: list[NDArray[np.int64]] = []
        self._times: list[NDArray[np.float64]] = []
        self.stored = 0
        self.truncated = False

    def add_reports(self, times: NDArray[np.float64], reports: NDArray[np.int64]) -> None:
        size = len(reports)
        self.counts += self.mechanism.statistic(reports)
        self.n_received += size
        if self.keep and size:
            room = self.budget - self.stored
            if room < size:
                self.truncated = True
            if room > 0:
                self._reports.append(reports[:room])
                self._times.append(times[:room])
                self.stored += min(room, size)

    def add_counts(self, counts: NDArray[np.int64], reports: int) -> None:
        """The statistic of ``reports`` reports received together (aggregate mode)."""
        self.counts += counts
        self.n_received += reports

    def stored_reports(self) -> tuple[NDArray[np.int64] | None, NDArray[np.float64] | None]:
        if not self.keep:
            return None, None
        if len(self._reports) > 1:
            self._reports = [np.concatenate(self._reports)]
            self._times = [np.concatenate(self._times)]
        if not self._reports:
            return np.zeros((0, *self.mechanism.report_shape), np.int64), np.zeros(0)
        return self._reports[0], self._times[0]


class NumericServer:
    """A numeric question's server: the number of reports, their sum and their sum of
    squares (the statistic of the mean), and with a ``binner`` (reports -> bucket index
    among ``cells``) the counts of the reports' buckets after them; reports are not stored."""

    stored = 0
    truncated = False

    def __init__(
        self, binner: Callable[[NDArray[np.float64]], NDArray[np.int64]] | None = None, cells: int = 0
    ) -> None:
        self.binner = binner
        self.cells = cells if binner is not None else 0
        self.counts = np.zeros(2 + self.cells, dtype=np.float64)
        self.n_received = 0

    def add_reports(self, times: NDArray[np.float64], reports: NDArray[np.float64]) -> None:
        self.counts[:2] += (float(np.sum(reports)), float(np.dot(reports, reports)))
        if self.binner is not None and len(reports):
            self.counts[2:] += np.bincount(self.binner(reports), minlength=self.cells)
        self.n_received += len(reports)

    def stored_reports(self) -> tuple[None, None]:
        return None, None


class MomentsServer:
    """The server of a numeric question's two-group protocol (reports: rows ``(group,
    value)``, :func:`ldpsim.analyst.means.moment_reports`): ``[sum_1, n_1, sum_2, n_2]`` (the
    layout of :func:`ldpsim.attacks.strategies.moment_statistic`), then each group's sum of
    squares (for the plug-in standard errors); reports are not stored."""

    stored = 0
    truncated = False

    def __init__(self) -> None:
        self.counts = np.zeros(6, dtype=np.float64)
        self.n_received = 0

    def add_reports(self, times: NDArray[np.float64], reports: NDArray[np.float64]) -> None:
        r = np.asarray(reports, dtype=np.float64).reshape(-1, 2)
        second = r[:, 0] > 0.5
        y1, y2 = r[~second, 1], r[second, 1]
        self.counts += (y1.sum(), y1.size, y2.sum(), y2.size, float(y1 @ y1), float(y2 @ y2))
        self.n_received += len(r)

    def stored_reports(self) -> tuple[None, None]:
        return None, None
