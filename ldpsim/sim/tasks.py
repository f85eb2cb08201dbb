"""Analyst tasks: what the analyst computes at each checkpoint.

A task is a class with a ``kind``, a pydantic ``Params`` model (its keys in
``[[analyst.tasks]]``), and three hooks:

- ``start(rng)`` once per replication,
- ``observe(times, reports)`` for every batch of reports as it arrives, in time order
  (individual mode only; streaming tasks such as sequential tests use it),
- ``at_checkpoint(checkpoint)`` returning tidy rows (dicts with ``quantity``, ``category``,
  ``estimate``, ``ci_low``, ``ci_high``, ``truth``, ``theory``).

Register a new task with :func:`register_task`; the engine needs no change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from scipy import stats

from ldpsim.analyst import frequency_estimate, frequency_standard_error
from ldpsim.errors import LdpSimError, _show
from ldpsim.mechanisms.base import FrequencyOracle


@dataclass(frozen=True)
class Checkpoint:
    """What the server holds when the analyst looks."""

    index: int
    time: float
    reason: str  # "every", "every_reports" or "end"
    n_received: int
    counts: NDArray[np.int64]  # the mechanism's statistic so far (output counts of a finite mechanism)
    reports: NDArray[np.int64] | None = None  # stored reports in arrival order (if kept)
    report_times: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class TaskContext:
    mechanism: FrequencyOracle
    labels: list[str]
    truth: NDArray[np.float64]  # the true input distribution (for the truth column only)
    mode: str  # "individual" or "aggregate"


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    kind: str
    name: str | None = None


class Task:
    """Base class of analyst tasks."""

    kind: ClassVar[str]
    Params: ClassVar[type[TaskParams]] = TaskParams
    #: whether the task needs individual reports (then the scenario must run in individual mode)
    needs_reports: ClassVar[bool] = False

    def __init__(self, params: TaskParams, context: TaskContext) -> None:
        self.params = params
        self.context = context
        self.name = params.name or params.kind

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        """At load time: why this task cannot work with ``mechanism`` (None if it can)."""
        return None

    @classmethod
    def rows_per_checkpoint(cls, params: TaskParams, k: int) -> int:
        """Result rows this task writes at each checkpoint for ``k`` labels (bounds the
        size of a run at load time; a task that writes more should say so)."""
        return 2 * k

    def start(self, rng: np.random.Generator) -> None:
        """Reset for a new replication."""

    def observe(self, times: NDArray[np.float64], reports: NDArray[np.int64]) -> None:
        """A batch of reports as delivered, in time order (individual mode only)."""

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        raise NotImplementedError


TASKS: dict[str, type[Task]] = {}


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task available to scenario files under ``kind = cls.kind``."""
    TASKS[cls.kind] = cls
    return cls


def parse_task_params(entries: list[dict[str, Any]]) -> list[tuple[type[Task], TaskParams]]:
    """Validate ``[[analyst.tasks]]`` entries; errors name ``analyst.tasks[i].key``."""
    out = []
    for i, entry in enumerate(entries):
        where = f"analyst.tasks[{i}]"
        kind = entry.get("kind")
        if not isinstance(kind, str) or kind not in TASKS:
            raise LdpSimError(f"{where}.kind: got {kind!r}, expected one of {sorted(TASKS)}")
        cls = TASKS[kind]
        try:
            params = cls.Params.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in err["loc"]).replace(".[", "[")
            raise LdpSimError(f"{where}.{loc}: {err['msg']} (got {_show(err.get('input'))})") from None
        out.append((cls, params))
    names = [p.name or p.kind for _, p in out]
    if len(set(names)) != len(names):
        raise LdpSimError(f"analyst.tasks: got task names {names}, expected distinct names (set 'name')")
    return out


def validate_tasks(entries: list[dict[str, Any]], mode: str, mechanism: FrequencyOracle) -> None:
    """Check the task entries of a scenario against its mode and mechanism."""
    for i, (cls, params) in enumerate(parse_task_params(entries)):
        if cls.needs_reports and mode != "individual":
            raise LdpSimError(
                f"analyst.tasks[{i}].kind: got {cls.kind!r} in {mode} mode, expected simulation.mode = 'individual' "
                "(this task reads individual reports)"
            )
        problem = cls.check(params, mechanism)
        if problem is not None:
            raise LdpSimError(f"analyst.tasks[{i}].kind: got {cls.kind!r}, {problem}")


def rows_per_checkpoint(entries: list[dict[str, Any]], k: int) -> int:
    """Result rows all the tasks of a scenario write at each checkpoint."""
    return sum(cls.rows_per_checkpoint(params, k) for cls, params in parse_task_params(entries))


def make_tasks(entries: list[dict[str, Any]], context: TaskContext) -> list[Task]:
    return [cls(params, context) for cls, params in parse_task_params(entries)]


# --------------------------------------------------------------------- frequency estimation
class FrequencyParams(TaskParams):
    kind: Literal["frequency"]
    confidence: float = Field(0.95, gt=0, lt=1, allow_inf_nan=False)


@register_task
class FrequencyTask(Task):
    """Frequency estimation with normal confidence intervals (plug-in variance).

    Rows per category: ``frequency`` (estimate, CI, truth = the true probability) and
    ``std_error`` (the plug-in standard error; theory = the exact standard error at the
    number of reports received)."""

    kind = "frequency"
    Params = FrequencyParams

    @classmethod
    def check(cls, params: TaskParams, mechanism: FrequencyOracle) -> str | None:
        if mechanism.epsilon() == 0:
            return "expected a mechanism with eps > 0 (at eps = 0 the reports carry no information)"
        if not mechanism.identifiable:
            return (
                f"expected a mechanism whose matrix has full row rank {mechanism.k} to estimate "
                f"{mechanism.k} frequencies ({mechanism!r} has {mechanism.statistic_size} outputs)"
            )
        return None

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        ctx = self.context
        labels = ctx.labels
        n = checkpoint.n_received
        if n == 0:
            est = se = np.full(len(labels), np.nan)
            theory_se = np.full(len(labels), np.nan)
        else:
            fe = frequency_estimate(ctx.mechanism, checkpoint.counts, n)
            est, se = fe.estimate, fe.std_error
            theory_se = frequency_standard_error(ctx.mechanism, ctx.truth, n)
        z = float(stats.norm.isf((1.0 - self.params.confidence) / 2))  # type: ignore[attr-defined]
        rows = []
        for i, label in enumerate(labels):
            rows.append(
                dict(quantity="frequency", category=label, estimate=est[i], ci_low=est[i] - z * se[i],
                     ci_high=est[i] + z * se[i], truth=ctx.truth[i], theory=np.nan)
            )  # fmt: skip
            rows.append(
                dict(quantity="std_error", category=label, estimate=se[i], ci_low=np.nan, ci_high=np.nan,
                     truth=np.nan, theory=theory_se[i])
            )  # fmt: skip
        return rows
