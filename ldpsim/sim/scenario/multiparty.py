"""Multi-party scenario files (``kind = "multiparty"``): TOML validated by strict pydantic
models, then built into protocols, a task and a latency law.

Every problem becomes one :class:`ldpsim.errors.LdpSimError` naming the file, the key path
and the problem (:mod:`ldpsim.sim.scenario.common`), e.g.
``scenarios/x.toml: parties.eps: got a list of length 5, expected one value per party (k = 6)``.

Layout::

    kind = "multiparty"
    name = "multiparty_xor"
    description = "..."
    protocols = ["universal", "binary"]

    [parties]
    k = 6
    eps = [0.5, 1, 1, 2, 3, 5]          # or one number for every party
    delta = [0, 0.01, 0.05, 0, 0.1, 0.02]
    p_one = 0.5                         # optional: P(bit = 1), a number or one per party

    [task]
    kind = "xor"                        # xor | sum | majority | threshold | and
    # t = 3                             # threshold only: f(x) = [sum x >= t]

    [rounds]
    count = 100_000
    batch = 10_000                      # rounds per SimPy event
    interval = 1.0                      # time between rounds

    [network]
    latency = { kind = "exponential", mean = 0.2 }

    [simulation]
    seed = 1
    replications = 1
    alpha = 1e-6                        # false-failure probability of the tolerances
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ldpsim.errors import LdpSimError
from ldpsim.sim.network import Latency
from ldpsim.sim.scenario.common import (
    BuiltScenario,
    Eps,
    Model,
    NetworkSpec,
    Probability,
    ScenarioName,
    SimulationSpec as _Simulation,
    build_latency,
    check_rows,
    read_scenario_text,
    read_toml,
    validate_and_build,
)

KIND = "multiparty"
MAX_PARTIES = 64
MAX_ROUNDS = 10**9
#: Memory the messages in flight at one time may take (rounds are simulated in batches and
#: a batch is forgotten once every receiver has decided it, so this is what grows).
MAX_IN_FLIGHT_BYTES = 2 * 2**30

class PartiesSpec(Model):
    k: Annotated[int, Field(ge=1, le=MAX_PARTIES)]
    eps: Eps | list[Eps]
    delta: Probability | list[Probability] = 0.0
    p_one: Probability | list[Probability] = 0.5

    @model_validator(mode="after")
    def _lengths(self) -> "PartiesSpec":
        for key in ("eps", "delta", "p_one"):
            value = getattr(self, key)
            if isinstance(value, list) and len(value) != self.k:
                raise ValueError(f"{key}: got a list of length {len(value)}, expected one value per party (k = {self.k})")
        return self

    def levels(self, key: str) -> list[float]:
        value = getattr(self, key)
        return [float(v) for v in value] if isinstance(value, list) else [float(value)] * self.k


class TaskSpec(Model):
    kind: Literal["xor", "sum", "majority", "threshold", "and"]
    t: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _threshold(self) -> "TaskSpec":
        if self.kind == "threshold" and self.t is None:
            raise ValueError("t: got nothing, expected the threshold t (f(x) = 1 when sum x >= t)")
        if self.kind != "threshold" and self.t is not None:
            raise ValueError(f"t: got {self.t!r}, expected no 't' for kind = {self.kind!r} (only for 'threshold')")
        return self


class RoundsSpec(Model):
    count: Annotated[int, Field(ge=1, le=MAX_ROUNDS)]
    batch: Annotated[int, Field(ge=1, le=10**7)] = 10_000
    interval: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] = 1.0


class SimulationSpec(_Simulation):
    replications: Annotated[int, Field(ge=1, le=100_000)] = 1
    alpha: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 1e-6


class MultipartySpec(Model):
    kind: Literal["multiparty"]
    name: ScenarioName
    description: str = ""
    protocols: list[Literal["universal", "binary"]] = Field(min_length=1)
    parties: PartiesSpec
    task: TaskSpec
    rounds: RoundsSpec
    network: NetworkSpec = NetworkSpec()
    simulation: SimulationSpec = SimulationSpec()

    @model_validator(mode="after")
    def _distinct(self) -> "MultipartySpec":
        if len(set(self.protocols)) != len(self.protocols):
            raise ValueError(f"protocols: got {self.protocols!r}, expected each protocol at most once")
        if self.task.t is not None and self.task.t > self.parties.k + 1:
            raise ValueError(f"task.t: got {self.task.t}, expected a threshold between 0 and k + 1 = {self.parties.k + 1}")
        return self


@dataclass(frozen=True)
class MultipartyScenario(BuiltScenario):
    """A validated multi-party scenario with its protocols, task and latency law built."""

    kind: ClassVar[str] = KIND

    protocols: tuple[Any, ...]  # ldpsim.protocols.Protocol
    task: Any  # ldpsim.protocols.Task
    latency: Latency

    @property
    def p_one(self) -> np.ndarray:
        return np.asarray(self.spec.parties.levels("p_one"))

    def rebuild(self, spec: "MultipartySpec") -> "MultipartyScenario":
        return build(spec, self.source, self.path)


def load_multiparty(path: Any) -> MultipartyScenario:
    """Read, validate and build a multi-party scenario; raise LdpSimError naming file and key."""
    text, where = read_scenario_text(path)
    return parse_multiparty(text, where)


def parse_multiparty(text: str, where: str = "<scenario>") -> MultipartyScenario:
    return validate_and_build(read_toml(text, where), text, where, MultipartySpec, build)


def build(spec: MultipartySpec, source: str, where: str) -> MultipartyScenario:
    """Construct the protocols and the task; their errors name the key path."""
    from ldpsim.protocols import Protocol, Task

    k = spec.parties.k
    eps, delta = spec.parties.levels("eps"), spec.parties.levels("delta")
    protocols = []
    for index, kind in enumerate(spec.protocols):
        try:
            protocols.append(Protocol.universal(eps, delta) if kind == "universal" else Protocol.binary(eps, delta))
        except LdpSimError as exc:
            raise LdpSimError(f"protocols[{index}] ({kind}): {' '.join(str(exc).split())}") from None
    t = spec.task
    try:
        task = {"xor": Task.xor, "sum": Task.sum, "majority": Task.majority, "and": Task.and_}[t.kind](k) \
            if t.kind != "threshold" else Task.threshold(k, t.t)  # fmt: skip
    except LdpSimError as exc:
        raise LdpSimError(f"task: {' '.join(str(exc).split())}") from None
    from ldpsim.protocols.decisions import OBSERVER, exact_plan

    for index, protocol in enumerate(protocols):  # the report needs every exact accuracy
        for party in [OBSERVER, *range(k)]:
            try:
                exact_plan(protocol, task, party)
            except LdpSimError as exc:
                raise LdpSimError(f"parties: {' '.join(str(exc).split())} (protocols[{index}], {protocol.name})") from None
    latency = build_latency(spec.network.latency)
    _check_workload(spec, latency)
    return MultipartyScenario(spec, source, where, tuple(protocols), task, latency)


def in_flight(spec: MultipartySpec, latency: Latency) -> tuple[int, float]:
    """An estimate of the batches in flight at once and the bytes they hold. Batch b is sent
    at ``b * batch * interval`` and done when its last message arrives, about the largest
    latency of the run later; with ``interval = 0`` every batch is sent at time 0."""
    r, k, n_protocols = spec.rounds, spec.parties.k, len(spec.protocols)
    batch = min(r.batch, r.count)
    batches = -(-r.count // batch)
    messages = r.count * k * (k + 1)
    longest = float(latency.quantile(min(1.0 - 1.0 / messages, 1.0 - 1e-12)))
    span = batch * r.interval
    ratio = longest / span if span > 0 else math.inf
    at_once = batches if not ratio < batches else min(batches, 2 + math.ceil(ratio))
    # per batch and party: each protocol's messages (int64), arrival times at every receiver
    # (float64), the bits (int8) and the latencies drawn (float64)
    per_batch = k * batch * (8 * n_protocols + 16 * (k + 1) + 1)
    return at_once, float(at_once) * per_batch


def _check_workload(spec: MultipartySpec, latency: Latency) -> None:
    """Bound memory and rows before anything runs."""
    at_once, nbytes = in_flight(spec, latency)
    if nbytes > MAX_IN_FLIGHT_BYTES:
        r = spec.rounds
        why = "every round starts at time 0 (interval = 0)" if r.interval == 0 else "latencies outlast many batches"
        raise LdpSimError(
            f"rounds.count: got {r.count:,}, expected rounds whose messages in flight fit in "
            f"{MAX_IN_FLIGHT_BYTES / 2**30:g} GiB: about {at_once:,} batches of {min(r.batch, r.count):,} rounds would be in "
            f"flight at once ({nbytes / 2**30:.3g} GiB) because {why}; raise rounds.interval or lower rounds.count"
        )
    k, n_protocols = spec.parties.k, len(spec.protocols)
    per_replication = (2 * n_protocols - 1) * (k + 1) + 5 * (k + 1)  # accuracies, differences, delays, messages
    check_rows(per_replication, spec.simulation.replications, "")
