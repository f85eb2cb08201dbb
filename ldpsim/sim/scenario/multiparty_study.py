"""Multi-party scaling studies: a ``kind = "multiparty"`` file with a ``[study]`` table runs
the same tasks for many numbers of parties k and privacy levels eps, every party at the same
level, and reports accuracy against k (:mod:`ldpsim.sim.multiparty_study`).

Every problem becomes one :class:`ldpsim.errors.LdpSimError` naming the file, the key path
and the problem (:mod:`ldpsim.sim.scenario.common`), e.g.
``scenarios/x.toml: study.parties[2]: Input should be less than or equal to 1000 (got 5000)``.

Layout::

    kind = "multiparty"
    name = "multiparty_scaling"
    description = "..."

    [study]
    protocols = ["universal"]             # universal | binary (default: universal)
    tasks = ["xor", "sum", "majority"]
    parties = { from = 2, to = 200, count = 14 }   # log-spaced, or a list such as [2, 5, 10]
    eps = [0.5, 1, 2]
    delta = 0                             # one delta for every point (default 0)
    receivers = ["observer", "party"]     # the observer and party 0 (default: both)
    rounds = 20_000                       # Monte Carlo rounds per point and replication

    [simulation]
    seed = 1
    replications = 1
    alpha = 1e-6                          # false-failure probability of the tolerances

A study file has no ``[parties]``, ``[task]``, ``[rounds]``, ``[network]`` or top-level
``protocols``: the study sets them for each point.

Work is bounded before anything runs: each point has an exact path
(:func:`ldpsim.protocols.exact_plan`) or a Monte Carlo within reach (else the file is
refused, naming the point), and the estimated time of the whole study is bounded
(:func:`ldpsim.protocols.scaling.point_cost`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from ldpsim.errors import LdpSimError, show
from ldpsim.protocols.scaling import build_protocol, build_task, point_cost, receiver_label
from ldpsim.sim.scenario.common import (
    LONG_RUN_OPTION,
    BuiltScenario,
    Model,
    ScenarioName,
    check_rows,
    long_runs_allowed,
    read_scenario_text,
    read_toml,
    validate_and_build,
)
from ldpsim.sim.scenario.multiparty import SimulationSpec, parse_multiparty

KIND = "multiparty_study"
#: Most parties at one point (the exact symmetric path reaches 1000 at one level, delta = 0).
MAX_PARTIES = 1000
#: Most values of k, of eps, and Monte Carlo rounds per point.
MAX_VALUES = 200
MAX_ROUNDS = 10**8
#: A point whose Monte Carlo alone would take longer (estimated, one core) is out of reach.
MAX_POINT_SECONDS = 600.0
#: A study whose estimated time (exact values once, Monte Carlo per replication) is longer is refused.
MAX_STUDY_SECONDS = 3600.0
#: Top-level keys of a plain multi-party file that a study file must not have, and why.
NOT_IN_STUDY = {
    "parties": "study.parties and study.eps",
    "task": "study.tasks",
    "rounds": "study.rounds",
    "network": "no network (a study computes accuracies only)",
    "protocols": "study.protocols",
}

PartyCount = Annotated[int, Field(ge=2, le=MAX_PARTIES)]
PositiveEps = Annotated[float, Field(gt=0, le=50, allow_inf_nan=False)]


class PartiesGrid(Model):
    """``parties = { from = 2, to = 200, count = 14 }``: ``count`` log-spaced values from
    ``from`` to ``to``, rounded to integers (repeats dropped)."""

    start: PartyCount = Field(alias="from")
    to: PartyCount
    count: Annotated[int, Field(ge=1, le=MAX_VALUES)]

    def problem(self) -> str | None:
        """What is wrong with the grid, as ``key: got ..., expected ...`` (checked by
        :class:`StudySpec`, so that the message names ``study.parties.<key>``)."""
        if self.to < self.start:
            return f"to: got {self.to}, expected a number of parties >= from = {self.start}"
        if self.count == 1 and self.to != self.start:
            return f"count: got 1, expected at least 2 values to span from = {self.start} to to = {self.to}"
        return None

    def values(self) -> list[int]:
        grid = np.rint(np.geomspace(self.start, self.to, self.count)).astype(int)
        return sorted({int(v) for v in grid})


def _distinct(key: str, values: list[Any]) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"{key}: got {values!r}, expected each value at most once")


class StudySpec(Model):
    """``[study]``: the grid of points (protocol x task x eps x k x receiver) and the Monte
    Carlo rounds per point."""

    protocols: list[Literal["universal", "binary"]] = Field(default=["universal"], min_length=1)
    tasks: list[Literal["xor", "sum", "majority"]] = Field(min_length=1)
    parties: Annotated[list[PartyCount], Field(min_length=1, max_length=MAX_VALUES)] | PartiesGrid
    eps: Annotated[list[PositiveEps], Field(min_length=1, max_length=MAX_VALUES)]
    delta: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    receivers: list[Literal["observer", "party"]] = Field(default=["observer", "party"], min_length=1)
    rounds: Annotated[int, Field(ge=2, le=MAX_ROUNDS)]

    @field_validator("parties", mode="before")
    @classmethod
    def _list_or_grid(cls, value: Any) -> Any:
        if not isinstance(value, (list, dict)):
            raise ValueError(
                f"got {show(value)}, expected a list of numbers of parties (such as [2, 5, 10]) or a "
                "log-spaced grid { from = 2, to = 200, count = 14 }"
            )
        return value

    @model_validator(mode="after")
    def _each_once(self) -> StudySpec:
        for key in ("protocols", "tasks", "eps", "receivers"):
            _distinct(key, list(getattr(self, key)))
        if isinstance(self.parties, list):
            _distinct("parties", list(self.parties))
        elif (problem := self.parties.problem()) is not None:
            raise ValueError(f"parties.{problem}")
        return self

    def party_counts(self) -> list[int]:
        """The values of k, increasing."""
        return self.parties.values() if isinstance(self.parties, PartiesGrid) else sorted(self.parties)

    def receiver_indices(self) -> list[int]:
        """-1 for the observer, 0 for party 0, in the file's order."""
        return [-1 if r == "observer" else 0 for r in self.receivers]


class MultipartyStudySpec(Model):
    kind: Literal["multiparty"]
    name: ScenarioName
    description: str = ""
    study: StudySpec
    simulation: SimulationSpec = SimulationSpec()

    @model_validator(mode="before")
    @classmethod
    def _no_single_run_keys(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            for key, instead in NOT_IN_STUDY.items():
                if key in raw:
                    what = "a table" if isinstance(raw[key], dict) else "a value"
                    raise ValueError(
                        f"{key}: got {what}, expected no '{key}' in a file "
                        f"with a [study] table (the study sets it: {instead})"
                    )
        return raw


@dataclass(frozen=True)
class MultipartyStudyScenario(BuiltScenario):
    """A validated scaling study: its grid of points, one row each, in the order the study
    spawns random streams (protocol, task, eps, k, receiver), with the exact path
    (``plan``, empty when out of reach), whether the Monte Carlo runs (``monte_carlo``) and
    the estimated seconds of each."""

    kind: ClassVar[str] = KIND

    points: pd.DataFrame = field(compare=False)
    estimated_seconds: float = 0.0

    @property
    def rounds(self) -> int:
        return int(self.spec.study.rounds)

    def rebuild(self, spec: MultipartyStudySpec) -> MultipartyStudyScenario:
        return build(spec, self.source, self.path)


def load_multiparty_study(path: Any) -> MultipartyStudyScenario:
    """Read, validate and build a scaling study; raise LdpSimError naming file and key."""
    text, where = read_scenario_text(path)
    return parse_multiparty_study(text, where)


def parse_multiparty_study(text: str, where: str = "<scenario>") -> MultipartyStudyScenario:
    """Validate and build the text of a ``kind = "multiparty"`` file with a ``[study]`` table."""
    return validate_and_build(
        read_toml(text, where), text, where, MultipartyStudySpec, build, frozenset({"PartiesGrid"})
    )


def build(spec: MultipartyStudySpec, source: str, where: str) -> MultipartyStudyScenario:
    """The grid of points with their exact paths and cost estimates; refuse points out of
    reach of both paths and studies whose estimated time is too long."""
    st = spec.study
    reps = spec.simulation.replications
    rows = []
    exact_total = mc_total = 0.0
    for pname in st.protocols:
        for tname in st.tasks:
            for eps in st.eps:
                for k in st.party_counts():
                    try:
                        protocol = build_protocol(pname, float(eps), float(st.delta), k)
                    except LdpSimError as exc:
                        raise LdpSimError(
                            f"study.protocols ({pname}, eps {eps:g}, delta {st.delta:g}): {' '.join(str(exc).split())}"
                        ) from None
                    task = build_task(tname, k)
                    for party in st.receiver_indices():
                        cost = point_cost(protocol, task, party, st.rounds)
                        mc = cost.mc_seconds <= MAX_POINT_SECONDS
                        if cost.exact_path is None and not mc:
                            raise LdpSimError(
                                f"study.parties: got k = {k} for {tname} ({pname}, eps {eps:g}, delta {st.delta:g}, "
                                f"{receiver_label(party)}), expected a point within reach: no exact path and the "
                                f"Monte Carlo would take about {cost.mc_seconds:,.0f} s ({cost.table_rows:,} count "
                                f"vectors to decide; at most {MAX_POINT_SECONDS:g} s); lower k, study.delta (delta = "
                                "0 sends 2 symbols, not 4) or study.rounds"
                            )
                        if cost.exact_path is not None:
                            exact_total += cost.exact_seconds
                        if mc:
                            mc_total += cost.mc_seconds
                        rows.append(
                            {
                                "protocol": pname,
                                "task": tname,
                                "k": k,
                                "eps": float(eps),
                                "delta": float(st.delta),
                                "receiver": receiver_label(party),
                                "party": party,
                                "plan": cost.exact_path or "",
                                "monte_carlo": mc,
                                "exact_seconds": cost.exact_seconds,
                                "mc_seconds": cost.mc_seconds,
                            }
                        )
    total = exact_total + reps * mc_total
    if total > MAX_STUDY_SECONDS and not long_runs_allowed():
        key, value = (
            ("study.rounds", f"{st.rounds:,}")
            if reps * mc_total >= exact_total
            else ("study.parties", f"k up to {max(st.party_counts())}")
        )
        raise LdpSimError(
            f"{key}: got {value}, expected a study of at most about {MAX_STUDY_SECONDS:g} s on one core: this one is "
            f"estimated at {total:,.0f} s ({exact_total:,.0f} s of exact values, {reps} x {mc_total:,.0f} s of Monte "
            f"Carlo over {len(rows):,} points); lower study.rounds, simulation.replications, the largest k or "
            f"study.delta, or run it anyway with ldpsim run {LONG_RUN_OPTION}"
        )
    check_rows(len(rows), reps, f"study: got {len(rows):,} points, expected at most 250,000 rows per replication")
    points = pd.DataFrame(rows)
    return MultipartyStudyScenario(spec, source, where, points, float(total) if math.isfinite(total) else math.inf)


def parse_multiparty_file(text: str, where: str = "<scenario>") -> BuiltScenario:
    """A multi-party file (``kind = "multiparty"``): one broadcast, or a study over k and eps
    when it has a ``[study]`` table (run as the kind of :func:`parse_multiparty_study`)."""
    if "study" in read_toml(text, where):
        return parse_multiparty_study(text, where)
    return parse_multiparty(text, where)
