"""Multi-party scenario files (``kind = "multiparty"``): TOML validated by strict pydantic
models, then built into protocols (per-party mechanisms from the one catalog), one task per
receiver, a lossy channel, deviating parties and a latency law.

Every problem becomes one :class:`ldpsim.errors.LdpSimError` naming the file, the key path
and the problem (:mod:`ldpsim.sim.scenario.common`), e.g.
``scenarios/x.toml: parties.eps: got a list of length 5, expected one value per party (k = 6)``
or ``scenarios/x.toml: protocols[1].mechanisms[3].eps: got -1, expected ...``.

Layout (every key; optional ones are commented with their default)::

    kind = "multiparty"
    name = "multiparty_lossy"
    description = "..."
    # a protocol is "universal" ((eps, delta) randomized response: the quaternary mechanism
    # per party), "binary" (Warner's randomized response at eps), or a table of per-party
    # mechanisms from the catalog (one table per party, or a single table for every party);
    # each party's exact (eps, delta) comes from its mechanism
    protocols = [
        "universal",
        { name = "mixed", mechanisms = [
            { kind = "quaternary", eps = 1, delta = 0.05 },
            { kind = "randomized_response", eps = 2 },
            { kind = "matrix", matrix = [[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]] },
            ...] },
        # or an interactive protocol (then every protocol runs as one, product ones as one slot per
        # party; the file runs as the kind "multiparty_interactive", without loss, deadline, loss
        # grid, deviations or p_one): a family ("gated", "rr_rounds") at [parties]' levels or its own,
        { name = "gated", family = "gated" },
        # or its rules: the speaker of each slot and rules[s][v][h][y] = P(message y | private value
        # v, history h); optional private (one matrix per party), eps and delta (the claim, checked
        # exactly on the whole transcript's law)
        { name = "mine", speakers = [0, 1], rules = [...], eps = [1, 1], delta = 0 },
    ]

    [parties]
    k = 8
    eps = [0.5, 1, ...]                 # or one number; needed by "universal" and "binary" only
    delta = [0, 0.01, ...]              # default 0; used by "universal" only
    p_one = 0.5                         # optional: P(bit = 1), a number or one per party (bits only)
    # values = [3, 2, 4, ...]           # optional (default 2: a bit): party j holds a value uniform on
    #                                   # {0, ..., values[j] - 1}; one size >= 2 per party, or one for all.
    #                                   # With a size above 2: protocols are tables of catalog mechanisms
    #                                   # (their alphabet parameter, e.g. randomized_response's k, is
    #                                   # values[j]; a matrix has values[j] rows), functions are
    #                                   # kind = "table" (prod(values) labels), no p_one

    [task]                              # the default function and gain of every receiver
    kind = "xor"                        # xor | sum | majority | threshold | and | table
    # t = 3                             # threshold only: f(x) = [sum x >= t]
    # values = [0, 1, 1, 0, ...]        # table only: 2^k output labels, x_1 the most significant bit
    #                                   # (prod(parties.values) labels when parties hold more than a bit,
    #                                   # in C order: x_1 the most significant digit)
    # outputs = ["no", "yes"]           # table only (optional): names of the outputs
    # gain = [[1, 0], [-1, 2]]          # optional: w[true, guess], n_outputs x n_outputs (default: indicator)

    [receivers.observer]                # optional overrides per receiver: the observer, or a
    kind = "sum"                        # party by index ([receivers.3]); with `kind` the table
    [receivers.2]                       # stands alone, without it its keys replace [task]'s
    gain = [[1, 0], [0, 3]]

    [[deviations]]                      # optional: parties that do not follow the protocol
    party = 5
    kind = "fixed"                      # "truthful" (its bit without privacy) or "fixed"
    bit = 1                             # fixed only: the bit (or value < parties.values[party]) it always claims

    [rounds]
    count = 100_000
    batch = 10_000                      # rounds per SimPy event
    interval = 1.0                      # time between rounds

    [network]
    latency = { kind = "lognormal", median = 0.05, sigma = 0.8 }
    loss = 0.05                         # default 0: P(a message is lost), per message and receiver
    deadline = 0.25                     # optional: a receiver decides by round start + deadline
    loss_grid = [0, 0.01, 0.05, 0.1]    # optional: loss rates of the exact channel table

    [simulation]
    seed = 1
    replications = 1
    alpha = 1e-6                        # false-failure probability of the tolerances
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Union

import numpy as np
from pydantic import Discriminator, Field, Tag, model_validator

from ldpsim._text import did_you_mean
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.protocols import OBSERVER, Protocol, Task, deviate, erasure_protocol, interactive, missing_probability
from ldpsim.protocols.decisions import MAX_TENSOR_ENTRIES, exact_plan
from ldpsim.protocols.tasks import MAX_TABLE_PARTIES
from ldpsim.sim.network import Latency
from ldpsim.sim.scenario.common import (
    BuiltScenario,
    Eps,
    Model,
    PositiveTime,
    Probability,
    ScenarioName,
    build_latency,
    check_rows,
    check_run_time,
    read_scenario_text,
    read_toml,
    validate_and_build,
)
from ldpsim.sim.scenario.common import NetworkSpec as _Network
from ldpsim.sim.scenario.common import SimulationSpec as _Simulation

KIND = "multiparty"
MAX_PARTIES = 256
MAX_ROUNDS = 10**9
MAX_PROTOCOLS = 8
#: Loss rates of the exact channel table when the file gives none (its own rate is added).
DEFAULT_LOSS_GRID = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)
MAX_LOSS_GRID = 20
#: Memory the messages in flight at one time may take (rounds are simulated in batches and
#: a batch is forgotten once every receiver has decided it, so this is what grows).
MAX_IN_FLIGHT_BYTES = 2 * 2**30
#: The task kinds a scenario names.
TASK_KINDS = ("xor", "sum", "majority", "threshold", "and", "table")
#: The largest number of values a party may hold (``[parties] values``).
MAX_VALUES = 64


class PartiesSpec(Model):
    k: Annotated[int, Field(ge=1, le=MAX_PARTIES)]
    eps: Eps | list[Eps] | None = None
    delta: Probability | list[Probability] = 0.0
    p_one: Probability | list[Probability] = 0.5
    values: Annotated[int, Field(ge=2, le=MAX_VALUES)] | list[Annotated[int, Field(ge=2, le=MAX_VALUES)]] = 2

    @model_validator(mode="after")
    def _lengths(self) -> "PartiesSpec":
        for key in ("eps", "delta", "p_one", "values"):
            value = getattr(self, key)
            if isinstance(value, list) and len(value) != self.k:
                raise ValueError(
                    f"{key}: got a list of length {len(value)}, expected one value per party (k = {self.k})"
                )
        return self

    def levels(self, key: str) -> list[float]:
        value = getattr(self, key)
        if value is None:
            return []
        return [float(v) for v in value] if isinstance(value, list) else [float(value)] * self.k

    def sizes(self) -> tuple[int, ...]:
        """Each party's number of values (2: a bit)."""
        return tuple(int(v) for v in self.values) if isinstance(self.values, list) else (int(self.values),) * self.k

    @property
    def bits(self) -> bool:
        """Whether every party holds a bit."""
        return all(a == 2 for a in self.sizes())


Gain = list[list[Annotated[float, Field(allow_inf_nan=False)]]]


class TaskSpec(Model):
    """``[task]``: a receiver's function and gain."""

    kind: Literal["xor", "sum", "majority", "threshold", "and", "table"]
    t: Annotated[int, Field(ge=0)] | None = None
    values: list[Annotated[int, Field(ge=0)]] | None = None
    outputs: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = None
    gain: Gain | None = None

    @model_validator(mode="after")
    def _keys(self) -> "TaskSpec":
        if self.kind == "threshold" and self.t is None:
            raise ValueError("t: got nothing, expected the threshold t (f(x) = 1 when sum x >= t)")
        if self.kind != "threshold" and self.t is not None:
            raise ValueError(f"t: got {self.t!r}, expected no 't' for kind = {self.kind!r} (only for 'threshold')")
        if self.kind == "table" and self.values is None:
            raise ValueError(
                "values: got nothing, expected the truth table: 2^k output labels (x_1 the most significant bit), "
                "or prod(parties.values) when parties hold more than a bit"
            )
        for key in ("values", "outputs"):
            if self.kind != "table" and getattr(self, key) is not None:
                raise ValueError(
                    f"{key}: got {show(getattr(self, key))}, expected no "
                    f"{key!r} for kind = {self.kind!r} (only for 'table')"
                )
        return self


class ReceiverSpec(Model):
    """``[receivers.<who>]``: the keys of ``[task]``, all optional."""

    kind: Literal["xor", "sum", "majority", "threshold", "and", "table"] | None = None
    t: Annotated[int, Field(ge=0)] | None = None
    values: list[Annotated[int, Field(ge=0)]] | None = None
    outputs: list[Annotated[str, Field(min_length=1, max_length=40)]] | None = None
    gain: Gain | None = None


ProtocolName = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.+-]+$")]


class ProtocolSpec(Model):
    """An inline protocol table: a name and per-party catalog mechanisms."""

    name: ProtocolName
    mechanisms: list[dict[str, Any]] = Field(min_length=1)


#: The largest number of slots (messages per round) of an interactive protocol a file declares.
MAX_SLOTS = 16
#: The named families of interactive protocols (``{ name = ..., family = ... }``).
FAMILIES = ("gated", "rr_rounds")
Levels = Eps | list[Eps] | None
Deltas = Probability | list[Probability] | None
Number = Annotated[float, Field(allow_inf_nan=False)]


class FamilySpec(Model):
    """An interactive protocol of a named family (:mod:`ldpsim.protocols.interactive`): ``gated``
    or ``rr_rounds``, at ``eps`` and ``delta`` (default: ``[parties]``'s)."""

    name: ProtocolName
    family: Literal["gated", "rr_rounds"]
    eps: Levels = None
    delta: Deltas = None


class RulesSpec(Model):
    """An interactive protocol given by its rules: the speaker of each slot, and per slot
    ``rules[s][v][h][y]`` = P(message y | private value v, history h); optional ``private``
    matrices (one per party, rows its inputs); claimed ``eps`` and ``delta`` (default:
    ``[parties]``'s)."""

    name: ProtocolName
    speakers: list[Annotated[int, Field(ge=0)]] = Field(min_length=1, max_length=MAX_SLOTS)
    rules: list[list[list[list[Number]]]] = Field(min_length=1, max_length=MAX_SLOTS)
    private: list[list[list[Number]]] | None = None
    eps: Levels = None
    delta: Deltas = None


def _protocol_form(value: Any) -> str | None:
    if isinstance(value, str):
        return "protocol_name"
    if isinstance(value, FamilySpec) or (isinstance(value, dict) and "family" in value):
        return "protocol_family"
    if isinstance(value, RulesSpec) or (isinstance(value, dict) and ("speakers" in value or "rules" in value)):
        return "protocol_rules"
    if isinstance(value, (dict, ProtocolSpec)):  # a table in the file, or the model when serialised
        return "protocol_table"
    return None


#: A ``protocols`` item: a name, an inline table of per-party mechanisms, or an interactive
#: protocol (a family, or its rules).
ProtocolItem = Annotated[
    Union[
        Annotated[Literal["universal", "binary"], Tag("protocol_name")],
        Annotated[ProtocolSpec, Tag("protocol_table")],
        Annotated[FamilySpec, Tag("protocol_family")],
        Annotated[RulesSpec, Tag("protocol_rules")],
    ],
    Discriminator(
        _protocol_form,
        custom_error_type="protocol_form",
        custom_error_message="expected 'universal', 'binary' or a table { name = ..., mechanisms = [...] } "
        "(or an interactive protocol: { name = ..., family = ... } or { name = ..., speakers = [...], rules = [...] })",
    ),
]
#: Union tags in error locations that are not keys of the file.
UNION_TAGS = frozenset({"protocol_name", "protocol_table", "protocol_family", "protocol_rules"})


class DeviationSpec(Model):
    party: Annotated[int, Field(ge=0)]
    kind: Literal["truthful", "fixed"]
    bit: Annotated[int, Field(ge=0, lt=MAX_VALUES)] | None = None  # a bit, or a value below parties.values[party]

    @model_validator(mode="after")
    def _bit(self) -> "DeviationSpec":
        if self.kind == "fixed" and self.bit is None:
            raise ValueError(
                "bit: got nothing, expected the bit (0 or 1; a value below parties.values[party] when the party "
                "holds more than a bit) a 'fixed' party always claims"
            )
        if self.kind == "truthful" and self.bit is not None:
            raise ValueError(f"bit: got {self.bit}, expected no bit for kind = 'truthful' (it sends its own bit)")
        return self


class RoundsSpec(Model):
    count: Annotated[int, Field(ge=1, le=MAX_ROUNDS)]
    batch: Annotated[int, Field(ge=1, le=10**7)] = 10_000
    interval: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] = 1.0


class NetworkSpec(_Network):
    loss: Probability = 0.0
    deadline: PositiveTime | None = None
    loss_grid: Annotated[list[Probability], Field(min_length=1, max_length=MAX_LOSS_GRID)] | None = None


class SimulationSpec(_Simulation):
    replications: Annotated[int, Field(ge=1, le=100_000)] = 1
    alpha: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 1e-6


class MultipartySpec(Model):
    kind: Literal["multiparty"]
    name: ScenarioName
    description: str = ""
    protocols: list[ProtocolItem] = Field(min_length=1, max_length=MAX_PROTOCOLS)
    parties: PartiesSpec
    task: TaskSpec
    receivers: dict[str, ReceiverSpec] = {}
    deviations: list[DeviationSpec] = []
    rounds: RoundsSpec
    network: NetworkSpec = NetworkSpec()
    simulation: SimulationSpec = SimulationSpec()

    @model_validator(mode="after")
    def _distinct(self) -> "MultipartySpec":
        names = protocol_names(self)
        if len(set(names)) != len(names):
            raise ValueError(f"protocols: got {names!r}, expected each protocol at most once (distinct names)")
        if self.task.t is not None and self.task.t > self.parties.k + 1:
            raise ValueError(
                f"task.t: got {self.task.t}, expected a threshold between 0 and k + 1 = {self.parties.k + 1}"
            )
        return self


def channel_grid(spec: MultipartySpec) -> list[float]:
    """The loss rates of the exact channel table (empty without loss, deadline or grid)."""
    net = spec.network
    if net.loss_grid is None and net.loss == 0 and net.deadline is None:
        return []
    return sorted({*(DEFAULT_LOSS_GRID if net.loss_grid is None else net.loss_grid), float(net.loss)})


def protocol_names(spec: MultipartySpec) -> list[str]:
    return [p if isinstance(p, str) else p.name for p in spec.protocols]


@dataclass(frozen=True)
class MultipartyScenario(BuiltScenario):
    """A validated multi-party scenario with its protocols, tasks, channel and latency built.

    ``protocols`` are the announced protocols (their rules are the receivers'), ``actual``
    what the parties really run (``deviate``d, or the same objects); ``tasks`` has one
    Task per receiver, parties 0..k-1 then the observer; ``task`` is the ``[task]`` default.
    ``missing`` is P(a message is not heard in time) = ``missing_probability(loss, late)``."""

    kind: ClassVar[str] = KIND
    #: whether the protocols are InteractiveProtocols (the file declares an interactive one)
    interactive: ClassVar[bool] = False

    protocols: tuple[Any, ...]  # ldpsim.protocols.Protocol
    task: Any  # ldpsim.protocols.Task: the default
    latency: Latency
    tasks: tuple[Any, ...] = ()
    actual: tuple[Any, ...] = ()
    deviations: tuple[tuple[int, Any], ...] = ()
    late: float = 0.0
    missing: float = 0.0
    #: the simulation's estimated seconds on one core, every replication (:func:`estimated_seconds`)
    estimated_seconds: float = 0.0

    @property
    def p_one(self) -> np.ndarray | None:
        """P(bit = 1) per party; None when some party holds more than a bit (every party's
        value is then uniform on its alphabet)."""
        if not self.spec.parties.bits:
            return None
        return np.asarray(self.spec.parties.levels("p_one"))

    @property
    def values(self) -> tuple[int, ...]:
        """Each party's number of values (``[parties] values``; 2 for a bit)."""
        return self.spec.parties.sizes()

    @property
    def loss(self) -> float:
        return float(self.spec.network.loss)

    @property
    def deadline(self) -> float | None:
        return self.spec.network.deadline

    @property
    def loss_grid(self) -> list[float]:
        """The loss rates of the exact channel table: the file's grid (or the default) and
        the scenario's own rate, sorted; none when the file describes no channel (no loss,
        deadline or grid)."""
        return channel_grid(self.spec)

    def missing_at(self, loss: float) -> float:
        return missing_probability(loss, self.late)

    def rebuild(self, spec: "MultipartySpec") -> "MultipartyScenario":
        return build(spec, self.source, self.path)


@dataclass(frozen=True)
class InteractiveMultipartyScenario(MultipartyScenario):
    """A multi-party scenario that declares an interactive protocol: every protocol is an
    :class:`~ldpsim.protocols.InteractiveProtocol` (product ones as one slot per party), run
    as the kind ``"multiparty_interactive"`` (:mod:`ldpsim.sim.multiparty_interactive`)."""

    kind: ClassVar[str] = "multiparty_interactive"
    interactive: ClassVar[bool] = True


def load_multiparty(path: Any) -> MultipartyScenario:
    """Read, validate and build a multi-party scenario; raise LdpSimError naming file and key."""
    text, where = read_scenario_text(path)
    return parse_multiparty(text, where)


def parse_multiparty(text: str, where: str = "<scenario>") -> MultipartyScenario:
    return validate_and_build(read_toml(text, where), text, where, MultipartySpec, build, UNION_TAGS)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# ------------------------------------------------------------------------- protocols
def _party_mechanism(table: Any, where: str, alphabet: int = 2, who: int | None = None) -> tuple[Any, float]:
    """One party's mechanism from a catalog table (``kind`` + parameters, strict), and the
    delta it is held to (its ``delta`` parameter, else 0). The mechanism's alphabet
    parameter is the party's number of values ``alphabet`` (2: a bit; ``parties.values``)."""
    if not isinstance(table, dict):
        raise LdpSimError(f"{where}: got {show(table)}, expected a table {{ kind = ..., ... }} (a catalog mechanism)")
    table = dict(table)
    party = catalog.names("party")
    usable = [n for n in catalog.names("finite") if "broken" not in catalog.entry(n).tags]
    kind = table.pop("kind", None)
    if not isinstance(kind, str) or kind not in usable:
        got = "nothing" if kind is None else show(kind)
        other = isinstance(kind, str) and kind in catalog.CATALOG
        hint = (
            f" ({kind} does not send one of finitely many messages)" if other else did_you_mean(kind, [*party, *usable])
        )
        raise LdpSimError(
            f"{where}.kind: got {got}, expected one of {', '.join(party)} (mechanisms on a bit), or a finite "
            f"mechanism on two inputs ({', '.join(n for n in usable if n not in party)}){hint}"
        )
    entry = catalog.entry(kind)
    params: dict[str, Any] = {}
    for key, value in table.items():
        p = entry.params.get(key)
        if p is None:
            own = [n for n, q in entry.params.items() if q.role != "alphabet"]
            raise LdpSimError(f"{where}.{key}: got {show(value)}, expected no such key ({kind} takes {', '.join(own)})")
        if p.role == "alphabet":
            if alphabet == 2:
                raise LdpSimError(
                    f"{where}.{key}: got {show(value)}, expected no {key} here: a party's input is its bit (2 symbols)"
                )
            raise LdpSimError(
                f"{where}.{key}: got {show(value)}, expected no {key} here: a party's input alphabet is "
                f"parties.values ({alphabet} symbols for party {who})"
            )
        params[key] = value
    for key in ("eps", "delta"):
        if key in entry.params and key not in params:
            raise LdpSimError(
                f"{where}.{key}: got nothing, expected the privacy parameter {key} of {kind} (a scenario states it)"
            )
    for key, p in entry.params.items():
        if p.role == "alphabet":
            params[key] = alphabet
    try:
        mech = entry.build(strict=True, **params)
    except LdpSimError as exc:
        raise LdpSimError(f"{where}.{_one_line(exc)}") from None
    except (ValueError, TypeError) as exc:  # pragma: no cover - builders raise LdpSimError
        raise LdpSimError(f"{where}: got {show(table)}, expected a valid {kind} mechanism ({_one_line(exc)})") from None
    if getattr(mech, "output_size", None) is None or getattr(mech, "k", None) != alphabet:
        if alphabet == 2:
            raise LdpSimError(
                f"{where}.kind: got {kind!r} with {getattr(mech, 'k', '?')} "
                "inputs, expected a mechanism on a bit (2 inputs)"
            )
        raise LdpSimError(
            f"{where}.kind: got {kind!r} with {getattr(mech, 'k', '?')} inputs, expected a mechanism on "
            f"{alphabet} inputs (party {who} holds one of parties.values[{who}] = {alphabet} values)"
        )
    return mech, float(params.get("delta", 0.0))


def _values_text(sizes: tuple[int, ...]) -> str:
    return str(list(sizes)) if len(set(sizes)) > 1 else str(sizes[0])


def _build_protocols(spec: MultipartySpec) -> list[Any]:
    k = spec.parties.k
    eps, delta = spec.parties.levels("eps"), spec.parties.levels("delta")
    sizes = spec.parties.sizes()
    protocols = []
    for index, item in enumerate(spec.protocols):
        where = f"protocols[{index}]"
        if is_interactive(item):
            protocols.append(_build_interactive(spec, item, where))
            continue
        if isinstance(item, str) and not spec.parties.bits:
            raise LdpSimError(
                f"{where}: got {item!r}, expected a table {{ name = ..., mechanisms = [...] }} of catalog "
                f"mechanisms when parties hold more than a bit (parties.values = {_values_text(sizes)}; "
                f"{item!r} is for bits)"
            )
        if isinstance(item, str):
            if not eps:
                raise LdpSimError(
                    "parties.eps: got nothing, expected the parties' "
                    f"privacy levels eps ({where} = {item!r} needs them)"
                )
            try:
                protocols.append(Protocol.universal(eps, delta) if item == "universal" else Protocol.binary(eps, delta))
            except LdpSimError as exc:
                raise LdpSimError(f"{where} ({item}): {_one_line(exc)}") from None
            continue
        assert isinstance(item, ProtocolSpec)  # the last form (the discriminator chose it)
        tables = item.mechanisms
        if len(tables) not in (1, k):
            raise LdpSimError(
                f"{where}.mechanisms: got {len(tables)} tables, expected one for every party or one per party (k = {k})"
            )
        if len(tables) == k:
            built = [_party_mechanism(t, f"{where}.mechanisms[{j}]", sizes[j], j) for j, t in enumerate(tables)]
        else:  # one table for every party: built once per number of values
            by_size = {
                a: _party_mechanism(tables[0], f"{where}.mechanisms[0]", a, sizes.index(a))
                for a in dict.fromkeys(sizes)
            }
            built = [by_size[a] for a in sizes]
        try:
            protocols.append(
                Protocol.from_mechanisms([m for m, _ in built], delta=[d for _, d in built], name=item.name)
            )
        except LdpSimError as exc:
            raise LdpSimError(f"{where}.mechanisms: {_one_line(exc)}") from None
    return protocols


# ------------------------------------------------------------------------- interactive protocols
def is_interactive(item: Any) -> bool:
    """Whether a ``protocols`` item declares an interactive protocol (a family, or rules)."""
    return isinstance(item, (FamilySpec, RulesSpec))


def _item_levels(value: Any, default: Any, k: int, where: str) -> list[float]:
    """An interactive protocol's eps or delta: its own, else ``[parties]``'s, one per party."""
    key = where.rsplit(".", 1)[1]
    if value is None:
        value = default
    if value is None:
        raise LdpSimError(
            f"{where}: got nothing, expected the parties' privacy levels {key} (here or in parties.{key})"
        )
    if isinstance(value, list):
        if len(value) != k:
            raise LdpSimError(f"{where}: got a list of length {len(value)}, expected one value per party (k = {k})")
        return [float(v) for v in value]
    return [float(value)] * k


def _array(value: Any, where: str, what: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float64)
    except ValueError:
        raise LdpSimError(f"{where}: got rows of different lengths, expected {what}") from None


def _build_interactive(spec: MultipartySpec, item: Any, where: str) -> Any:
    """An InteractiveProtocol from a family or from rules; its claimed levels are checked
    exactly on construction. Errors name the item's key."""
    k, sizes = spec.parties.k, spec.parties.sizes()
    eps = _item_levels(item.eps, spec.parties.eps, k, f"{where}.eps")
    delta = _item_levels(item.delta, spec.parties.delta, k, f"{where}.delta")
    if isinstance(item, FamilySpec):
        if not spec.parties.bits:
            raise LdpSimError(
                f"{where}.family: got {item.family!r}, expected a table of rules (speakers, rules) when parties hold "
                f"more than a bit (parties.values = {_values_text(sizes)}; the families are for bits)"
            )
        if item.family == "gated" and k < 2:
            raise LdpSimError(f"{where}.family: got 'gated' with k = 1, expected k >= 2 (party 0 gates party k-1)")
        make = {"gated": interactive.gated, "rr_rounds": interactive.rr_over_rounds}[item.family]
        try:
            built = make(eps, delta)
        except LdpSimError as exc:
            raise LdpSimError(f"{where} ({item.family}): {_one_line(exc)}") from None
        built.name = item.name
        return built
    speakers = list(item.speakers)
    if len(item.rules) != len(speakers):
        raise LdpSimError(
            f"{where}.rules: got {len(item.rules)} rules, expected one per slot ({len(speakers)} speakers)"
        )
    for s, j in enumerate(speakers):
        if j >= k:
            raise LdpSimError(f"{where}.speakers[{s}]: got {j}, expected a party index 0..{k - 1}")
    silent = sorted(set(range(k)) - set(speakers))
    if silent:
        raise LdpSimError(
            f"{where}.speakers: got {speakers}, expected every party 0..{k - 1} to speak at least once "
            f"(party {silent[0]} never does)"
        )
    rules = [
        _array(r, f"{where}.rules[{s}]", "rules[s][v][h][y]: P(message y | private value v, history h)")
        for s, r in enumerate(item.rules)
    ]
    private = None
    if item.private is not None:
        if len(item.private) != k:
            raise LdpSimError(f"{where}.private: got {len(item.private)} matrices, expected one per party (k = {k})")
        private = [
            _array(m, f"{where}.private[{j}]", f"a matrix with parties.values[{j}] = {sizes[j]} rows")
            for j, m in enumerate(item.private)
        ]
    try:
        return interactive.InteractiveProtocol(
            rules, speakers, eps, delta, inputs=sizes, private=private, name=item.name
        )
    except LdpSimError as exc:
        raise LdpSimError(f"{where}.{_one_line(exc)}") from None


def _as_interactive(protocol: Any, where: str) -> Any:
    """A product protocol of a file that declares an interactive one: one slot per party."""
    try:
        built = interactive.InteractiveProtocol.from_protocol(protocol)
    except LdpSimError as exc:
        raise LdpSimError(
            f"{where}: {_one_line(exc)} (the file declares an interactive protocol, so {protocol.name} runs as one: "
            "one slot per party)"
        ) from None
    built.name = protocol.name
    return built


def _check_interactive(spec: MultipartySpec, where: str) -> None:
    """What an interactive broadcast does not model, refused in one line naming the key."""
    net = spec.network
    why = f"with an interactive protocol ({where}), whose broadcast has no loss, deadline or deviating party"
    if net.loss != 0:
        raise LdpSimError(f"network.loss: got {net.loss!r}, expected 0 {why}")
    if net.deadline is not None:
        raise LdpSimError(f"network.deadline: got {net.deadline!r}, expected no deadline {why}")
    if net.loss_grid is not None:
        raise LdpSimError(f"network.loss_grid: got {show(net.loss_grid)}, expected no loss grid {why}")
    if spec.deviations:
        raise LdpSimError(f"deviations: got {len(spec.deviations)} deviating party(ies), expected none {why}")
    if "p_one" in spec.parties.model_fields_set:
        raise LdpSimError(
            f"parties.p_one: got {show(spec.parties.p_one)}, expected no p_one with an interactive protocol "
            f"({where}): inputs are uniform, as its exact accuracy assumes"
        )


# ------------------------------------------------------------------------- tasks
def _build_task(table: dict[str, Any], k: int, where: str, sizes: tuple[int, ...] | None = None) -> Any:
    """A Task from the keys of ``[task]`` (validated ones), errors naming ``where.key``;
    ``sizes``: each party's number of values (None or all 2: bits)."""
    kind = table["kind"]
    bits = sizes is None or all(a == 2 for a in sizes)
    if not bits and kind != "table":
        raise LdpSimError(
            f"{where}.kind: got {kind!r}, expected 'table' when parties hold more than a bit "
            f"(parties.values = {_values_text(tuple(sizes or ()))})"
        )
    if kind == "threshold" and table.get("t") is None:
        raise LdpSimError(f"{where}.t: got nothing, expected the threshold t (f(x) = 1 when sum x >= t)")
    for key in ("values", "outputs"):
        if kind != "table" and table.get(key) is not None:
            raise LdpSimError(
                f"{where}.{key}: got {show(table[key])}, expected no {key!r} for kind = {kind!r} (only for 'table')"
            )
    if kind != "threshold" and table.get("t") is not None:
        raise LdpSimError(f"{where}.t: got {table['t']!r}, expected no 't' for kind = {kind!r} (only for 'threshold')")
    if kind == "table":
        values = table.get("values")
        if values is None:
            want = (
                f"2^k = {2**k if k <= 30 else 'many'}" if bits else f"prod(parties.values) = {math.prod(sizes or ()):,}"
            )
            raise LdpSimError(f"{where}.values: got nothing, expected the truth table: {want} output labels")
        if not bits:
            assert sizes is not None
            n_in = math.prod(sizes)
            if n_in > 2**MAX_TABLE_PARTIES or len(values) != n_in:
                raise LdpSimError(
                    f"{where}.values: got {len(values)} values, expected prod(parties.values) = {n_in:,} output "
                    f"labels, one per input vector in C order (x_1 the most significant digit; at most "
                    f"2^{MAX_TABLE_PARTIES} = {2**MAX_TABLE_PARTIES:,})"
                )
        elif k > MAX_TABLE_PARTIES or len(values) != 2**k:
            raise LdpSimError(
                f"{where}.values: got {len(values)} values, expected 2^k = {2**k:,} output labels (x_1 the most "
                f"significant bit of the index; tables for k <= {MAX_TABLE_PARTIES})"
            )
        outputs = table.get("outputs")
        n_out = max(values) + 1
        if outputs is not None:
            if len(set(outputs)) != len(outputs) or len(outputs) < n_out:
                raise LdpSimError(
                    f"{where}.outputs: got {show(outputs)}, expected {n_out} or more distinct names, one per output "
                    f"label 0..{len(outputs) - 1 if outputs else 0} (values go up to {n_out - 1})"
                )
            n_out = len(outputs)
    else:
        n_out = {"xor": 2, "majority": 2, "threshold": 2, "and": 2, "sum": k + 1}[kind]
    if kind == "threshold" and not 0 <= table["t"] <= k + 1:
        raise LdpSimError(f"{where}.t: got {table['t']}, expected a threshold between 0 and k + 1 = {k + 1}")
    gain = table.get("gain")
    if gain is not None:
        shape = (len(gain), *sorted({len(row) for row in gain}))
        if len(shape) != 2 or shape != (n_out, n_out):
            raise LdpSimError(
                f"{where}.gain: got rows of lengths {[len(r) for r in gain]}, expected a {n_out} x {n_out} matrix "
                f"w[true, guess] ({kind} has {n_out} outputs)"
            )
    try:
        if kind == "table":
            return Task.from_table(
                np.asarray(table["values"], dtype=np.int64), n_out, gain, name="table", inputs=None if bits else sizes
            )
        if kind == "threshold":
            return Task.threshold(k, table["t"], gain)
        return {"xor": Task.xor, "sum": Task.sum, "majority": Task.majority, "and": Task.and_}[kind](k, gain)
    except LdpSimError as exc:
        raise LdpSimError(f"{where}: {_one_line(exc)}") from None


def _task_table(spec: Any) -> dict[str, Any]:
    return {
        key: getattr(spec, key) for key in ("kind", "t", "values", "outputs", "gain") if getattr(spec, key) is not None
    }


def _build_tasks(spec: MultipartySpec) -> tuple[Any, list[Any]]:
    """The default task and one task per receiver (parties 0..k-1, then the observer)."""
    k = spec.parties.k
    sizes = spec.parties.sizes()
    base = _task_table(spec.task)
    default = _build_task(base, k, "task", sizes)
    tasks: list[Any] = [default] * (k + 1)
    for key, override in spec.receivers.items():
        where = f"receivers.{key}"
        if key == "observer":
            index = k
        elif key.isdigit() and int(key) < k and str(int(key)) == key:
            index = int(key)
        else:
            raise LdpSimError(f"receivers: got a table {key!r}, expected 'observer' or a party index 0..{k - 1}")
        own = _task_table(override)
        table = own if "kind" in own else {**base, **own}
        if not own:
            raise LdpSimError(f"{where}: got an empty table, expected keys of [task] (kind, t, values, outputs, gain)")
        tasks[index] = _build_task(table, k, where, sizes)
    return default, tasks


# ------------------------------------------------------------------------- build
def build(spec: MultipartySpec, source: str, where: str) -> MultipartyScenario:
    """Construct the protocols, tasks, channel and deviations; their errors name the key path."""
    k = spec.parties.k
    sizes = spec.parties.sizes()
    if not spec.parties.bits and "p_one" in spec.parties.model_fields_set:
        raise LdpSimError(
            f"parties.p_one: got {show(spec.parties.p_one)}, expected no p_one when parties hold more than a bit "
            f"(parties.values = {_values_text(sizes)}: every value is uniform on its party's alphabet)"
        )
    declared = [n for n, item in enumerate(spec.protocols) if is_interactive(item)]
    if declared:
        _check_interactive(spec, f"protocols[{declared[0]}]")
    protocols = _build_protocols(spec)
    if declared:
        protocols = [p if n in declared else _as_interactive(p, f"protocols[{n}]") for n, p in enumerate(protocols)]
    task, tasks = _build_tasks(spec)
    latency = build_latency(spec.network.latency)
    net = spec.network
    late = 0.0 if net.deadline is None else float(1.0 - latency.cdf(net.deadline))
    late = min(max(late, 0.0), 1.0)
    missing = missing_probability(net.loss, late)
    if missing >= 1.0:
        if net.loss >= 1.0:
            raise LdpSimError(f"network.loss: got {net.loss!r}, expected a loss below 1 (every message would be lost)")
        raise LdpSimError(
            f"network.deadline: got {net.deadline!r}, expected a deadline that some messages meet (with this "
            "latency no message is ever heard in time)"
        )
    deviations: dict[int, Any] = {}
    for n, d in enumerate(spec.deviations):
        if d.party >= k:
            raise LdpSimError(f"deviations[{n}].party: got {d.party}, expected a party index 0..{k - 1}")
        if d.party in deviations:
            raise LdpSimError(f"deviations[{n}].party: got {d.party} again, expected each party at most once")
        if d.bit is not None and d.bit >= sizes[d.party]:
            a = sizes[d.party]
            raise LdpSimError(
                f"deviations[{n}].bit: got {d.bit}, expected a value party {d.party} can hold: 0 to {a - 1} "
                f"(parties.values[{d.party}] = {a})"
            )
        deviations[d.party] = d.kind if d.kind == "truthful" else (d.kind, d.bit)
    actual = [deviate(p, deviations) if deviations else p for p in protocols]
    if not declared:  # an interactive protocol's law is enumerated on construction: that is its check
        _check_exact(spec, protocols, actual, tasks, missing, bool(deviations))
    _check_workload(spec, latency)
    seconds = _check_time(spec)
    return (InteractiveMultipartyScenario if declared else MultipartyScenario)(
        spec,
        source,
        where,
        tuple(protocols),
        task,
        latency,
        tuple(tasks),
        tuple(actual),
        tuple(sorted(deviations.items())),
        late,
        missing,
        seconds,
    )


def receivers(k: int) -> list[int]:
    """Receiver indices as the library names them: parties 0..k-1, then the observer."""
    return [*range(k), OBSERVER]


def receiver_key(who: int) -> str:
    return "observer" if who < 0 else str(who)


def _check_exact(
    spec: MultipartySpec, protocols: list[Any], actual: list[Any], tasks: list[Any], missing: float, deviating: bool
) -> None:
    """Every exact value the report needs is within reach, or one line naming the key."""
    k = spec.parties.k
    for index, protocol in enumerate(protocols):
        faced = erasure_protocol(protocol, missing) if missing > 0 else protocol
        # the channel table's rates use the alphabet with "not heard"
        lossy = erasure_protocol(protocol, 0.5) if channel_grid(spec) else faced
        for who, task in zip(receivers(k), tasks):
            for p in dict.fromkeys((faced, lossy)):
                try:
                    exact_plan(p, task, who)
                except LdpSimError as exc:
                    raise LdpSimError(
                        f"parties: {_one_line(exc)} (protocols[{index}], {protocol.name}, receiver "
                        f"{receiver_key(who)}, {task.name}{', with the channel' if p is not protocol else ''})"
                    ) from None
            if deviating:
                sizes = [lossy.inputs[j] if j == who else m for j, m in enumerate(lossy.sizes)]
                entries = task.n_outputs * math.prod(sizes)
                if k > MAX_TABLE_PARTIES or entries > MAX_TENSOR_ENTRIES:
                    raise LdpSimError(
                        f"deviations: got {len(spec.deviations)} deviating "
                        f"part{'y' if len(spec.deviations) == 1 else 'ies'} with k = {k}, expected a protocol small "
                        f"enough for the exact gain of the announced rule (rule_gain: {entries:,} entries for "
                        f"receiver {receiver_key(who)} of {protocol.name}, at most {MAX_TENSOR_ENTRIES:,}): fewer "
                        "parties or smaller alphabets"
                    )


def in_flight(spec: MultipartySpec, latency: Latency) -> tuple[int, float]:
    """An estimate of the batches in flight at once and the bytes they hold. Batch b is sent
    at ``b * batch * interval`` and done when its last message arrives (or at the deadline),
    about the largest latency of the run later; with ``interval = 0`` every batch is sent at
    time 0."""
    r, k, n_protocols = spec.rounds, spec.parties.k, len(spec.protocols)
    batch = min(r.batch, r.count)
    batches = -(-r.count // batch)
    messages = r.count * k * (k + 1)
    longest = float(latency.quantile(min(1.0 - 1.0 / messages, 1.0 - 1e-12)))
    if spec.network.deadline is not None:
        longest = min(longest, float(spec.network.deadline))
    span = batch * r.interval
    ratio = longest / span if span > 0 else math.inf
    at_once = batches if not ratio < batches else min(batches, 2 + math.ceil(ratio))
    # per batch and party: each protocol's messages (int64), arrival times at every receiver
    # (float64), the bits (int8), the latencies drawn (float64) and who heard it (bool)
    per_batch = k * batch * (8 * n_protocols + 17 * (k + 1) + 1)
    return at_once, float(at_once) * per_batch


#: Seconds of the broadcast per batch and per message of a round (k (k + 1) messages: every
#: party's to every other party and the observer), and per round, message and protocol
#: (measured on one core at k = 4 to 32, 1 and 2 protocols; the estimate is rather low than
#: high, by up to 2 at k = 200).
SECONDS_PER_BATCH_MESSAGE = 3e-5
SECONDS_PER_ROUND_MESSAGE = 2.5e-8


def estimated_seconds(spec: MultipartySpec) -> tuple[float, float]:
    """The simulation's rough cost on one core, all replications: the part that grows with
    the number of batches (SimPy events: one per batch and message) and the part that grows
    with the rounds (numpy work per round and message, more with more protocols)."""
    r, k, reps = spec.rounds, spec.parties.k, spec.simulation.replications
    batches = -(-r.count // min(r.batch, r.count))
    messages = k * (k + 1)
    per_batch = reps * batches * messages * SECONDS_PER_BATCH_MESSAGE
    per_round = reps * r.count * messages * SECONDS_PER_ROUND_MESSAGE * (1 + len(spec.protocols) / 2)
    return per_batch, per_round


def _check_time(spec: MultipartySpec) -> float:
    """Refuse a broadcast estimated at more than MAX_RUN_SECONDS unless long runs are
    allowed (one line: the estimate, what to change, the option that goes on)."""
    per_batch, per_round = estimated_seconds(spec)
    r, k = spec.rounds, spec.parties.k
    batch = min(r.batch, r.count)
    detail = (
        f"{spec.simulation.replications} replication(s) of {-(-r.count // batch):,} batch(es) of {batch:,} "
        f"round(s), k (k + 1) = {k * (k + 1):,} messages a round"
    )
    if per_batch >= per_round:
        check_run_time(
            per_batch + per_round,
            "rounds.batch",
            f"{r.batch:,}",
            detail,
            "raise rounds.batch (rounds simulated per event), lower rounds.count or simulation.replications",
        )
    else:
        check_run_time(
            per_batch + per_round,
            "rounds.count",
            f"{r.count:,}",
            detail,
            "lower rounds.count, parties.k or simulation.replications",
        )
    return per_batch + per_round


def _check_workload(spec: MultipartySpec, latency: Latency) -> None:
    """Bound memory and rows before anything runs."""
    at_once, nbytes = in_flight(spec, latency)
    k = spec.parties.k
    if nbytes > MAX_IN_FLIGHT_BYTES:
        r = spec.rounds
        why = "every round starts at time 0 (interval = 0)" if r.interval == 0 else "latencies outlast many batches"
        raise LdpSimError(
            f"rounds.count: got {r.count:,}, expected rounds whose messages in flight fit in "
            f"{MAX_IN_FLIGHT_BYTES / 2**30:g} GiB: about {at_once:,} batches of "
            f"{min(r.batch, r.count):,} rounds would be in flight at once ({nbytes / 2**30:.3g} "
            f"GiB; each round of a batch holds k (k + 1) = {k * (k + 1):,} latencies) because "
            f"{why}; lower rounds.batch, raise rounds.interval or lower rounds.count"
        )
    n_protocols = len(spec.protocols)
    grid = len(channel_grid(spec))
    # accuracies, differences, delays and messages, and the exact-only rows (worst case,
    # honest accuracy, the channel table)
    per_replication = (2 * n_protocols - 1) * (k + 1) + 6 * (k + 1) + n_protocols * (k + 1) * (2 + grid)
    check_rows(per_replication, spec.simulation.replications, "")
