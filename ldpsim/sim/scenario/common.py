"""What every kind of scenario file shares: the strict pydantic base model, value types,
names, seeds, latency laws, the network and simulation sections, the built-scenario base
class (digest, overrides), reading and validating a file, the one error formatter, and
the row budgets.

Every problem in a file becomes one :class:`ldpsim.errors.LdpSimError` whose message names
the file, the key path and the problem, e.g.
``scenarios/x.toml: network.loss: Input should be less than or equal to 1 (got 1.5)``.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Literal, Union, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ldpsim._validate import SUM_TOL
from ldpsim.errors import LdpSimError, show
from ldpsim.sim.network import ConstantLatency, ExponentialLatency, Latency, LognormalLatency
from ldpsim.sim.weights import sum_problem

#: Largest time (arrival, latency, duration, end) a scenario may use.
MAX_TIME = 1e12

# Work and memory are bounded when a scenario is loaded, before anything runs: a file that
# would need more gets one line saying what to change. (Each result row costs about 1 KB
# while a replication builds it; results.csv is read back whole to write the report.)
#: Result rows one replication may write.
MAX_ROWS_PER_REPLICATION = 250_000
#: Result rows one run may write (all replications).
MAX_ROWS = 2_000_000

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Time = Annotated[float, Field(ge=0, le=MAX_TIME, allow_inf_nan=False)]
PositiveTime = Annotated[float, Field(gt=0, le=MAX_TIME, allow_inf_nan=False)]
Probability = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Eps = Annotated[float, Field(ge=0, allow_inf_nan=False)]
#: Root seeds: integers in [0, 2^128) (as ``--seed``).
Seed = Annotated[int, Field(ge=0, le=2**128 - 1)]

#: The unit of a scenario's times when its file does not name one (``simulation.time_unit``).
DEFAULT_TIME_UNIT = "time units"
#: Longest ``simulation.time_unit``: it is printed inside axis labels and sentences.
MAX_TIME_UNIT = 30
#: A unit's name: starts with a letter, then letters, digits, spaces, ``-`` and ``.``, and
#: does not end with a space (nothing that Markdown or HTML would read as markup).
_TIME_UNIT = re.compile(r"[^\W\d_](?:[^\W_]|[ .-])*")


def _time_unit(unit: str) -> str:
    if len(unit) > MAX_TIME_UNIT or not _TIME_UNIT.fullmatch(unit) or unit.endswith(" "):
        raise ValueError(
            f"got {show(unit)}, expected a short name of the unit of the file's times, such as 'days', 'hours' "
            f"or 'seconds' (at most {MAX_TIME_UNIT} characters, starting with a letter; letters, digits, "
            "spaces, '-' and '.')"
        )
    return unit


#: ``simulation.time_unit``: what one unit of scenario time is ("days", "seconds", ...).
#: Times are plain numbers to the simulation; the unit only labels reports and figures.
TimeUnit = Annotated[str, AfterValidator(_time_unit)]


def _not_only_dots(name: str) -> str:
    if set(name) == {"."}:
        raise ValueError(f"got {name!r}, expected a name that is not only dots (it names a folder under reports/)")
    return name


#: A scenario's name: it becomes the folder ``reports/<name>/``, so letters, digits, ``_``,
#: ``.`` and ``-`` only, not only dots, and short enough for any file system.
ScenarioName = Annotated[
    str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$"), AfterValidator(_not_only_dots)
]


class Model(BaseModel):
    """Base of every section: unknown keys are errors, and strict types (a string is not a
    number and true is not 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --------------------------------------------------------------------- network
class ConstantLatencySpec(Model):
    kind: Literal["constant"]
    value: Time = 0.0


class ExponentialLatencySpec(Model):
    kind: Literal["exponential"]
    mean: PositiveTime


class LognormalLatencySpec(Model):
    kind: Literal["lognormal"]
    median: PositiveTime
    sigma: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)]


LatencySpec = Annotated[
    Union[ConstantLatencySpec, ExponentialLatencySpec, LognormalLatencySpec], Field(discriminator="kind")
]


def build_latency(spec: ConstantLatencySpec | ExponentialLatencySpec | LognormalLatencySpec) -> Latency:
    """The latency law a ``latency = {kind = ...}`` table describes."""
    if isinstance(spec, ConstantLatencySpec):
        return ConstantLatency(spec.value)
    if isinstance(spec, ExponentialLatencySpec):
        return ExponentialLatency(spec.mean)
    return LognormalLatency(spec.median, spec.sigma)


class NetworkSpec(Model):
    """``[network]``: the latency of every message (kinds of scenario add their own keys)."""

    latency: LatencySpec = ConstantLatencySpec(kind="constant", value=0.0)


class SimulationSpec(Model):
    """``[simulation]``: the root seed, the number of replications and the unit of the
    file's times (kinds of scenario add their own keys)."""

    seed: Seed | None = None
    replications: Annotated[int, Field(ge=1)] = 1
    #: what one unit of time is: every time, delay, latency and period of the file is in it;
    #: the simulation does not use it, the report states it on every axis and table of times
    time_unit: TimeUnit = DEFAULT_TIME_UNIT


# --------------------------------------------------------------------- built scenarios
@dataclass(frozen=True)
class BuiltScenario:
    """A validated scenario of some kind with its simulation objects built: the spec, the
    TOML text as run and the path it came from. Subclasses add what their model needs and
    say how they are rebuilt from a spec (:meth:`rebuild`)."""

    #: the value of the file's top-level ``kind`` key
    kind: ClassVar[str] = ""

    spec: Any
    source: str  # the TOML text as run
    path: str

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def digest(self) -> str:
        """SHA-256 of the scenario's text: what a run directory records and resuming checks."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    def with_overrides(self, **simulation: Any) -> "BuiltScenario":
        """The same scenario with fields of ``[simulation]`` replaced (e.g. replications)."""
        sim = self.spec.simulation.model_copy(update=simulation)
        return self.rebuild(self.spec.model_copy(update={"simulation": sim}))

    def rebuild(self, spec: Any) -> "BuiltScenario":  # pragma: no cover - every kind overrides it
        raise NotImplementedError


# --------------------------------------------------------------------- reading and errors
def read_scenario_text(path: Any) -> tuple[str, str]:
    """The file's text and its name for messages; an unreadable file is one LdpSimError."""
    where = str(path)
    try:
        return Path(path).read_text(), where
    except OSError as exc:
        raise LdpSimError(f"{where}: cannot read the scenario file ({exc.strerror})") from None


def read_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LdpSimError(f"{where}: invalid TOML: {' '.join(str(exc).split())}") from None


def validate_and_build(
    raw: dict[str, Any],
    text: str,
    where: str,
    spec_cls: Any,
    build_fn: Callable[..., Any],
    union_tags: frozenset[str] = frozenset(),
) -> Any:
    """The strict pydantic spec, then ``build_fn(spec, text, where)``: every problem becomes
    one LdpSimError prefixed by ``where`` (``union_tags`` as for :func:`first_error`)."""
    try:
        spec = spec_cls.model_validate(raw)
    except ValidationError as exc:
        raise LdpSimError(f"{where}: {first_error(exc, union_tags, spec_cls)}") from None
    try:
        return build_fn(spec, text, where)
    except LdpSimError as exc:
        raise LdpSimError(f"{where}: {' '.join(str(exc).split())}") from None


#: Error types of the branch a "number or list" value did not take.
_BRANCH_MISMATCH = {"float_type", "list_type", "int_type"}
#: Union tags in pydantic's error locations that are not keys of the file (discriminated
#: unions name their branch by its kind; plain unions by the branch's type).
_UNION_TAGS = {
    "all_at_once",
    "poisson",
    "waves",
    "constant",
    "exponential",
    "lognormal",
    "constrained-float",
    "float",
    "int",
    "constrained-int",
    "LossByAnswerSpec",
}
_OWN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation may hold (through Annotated, Optional,
    unions, lists and dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _keys_at(model: type[BaseModel], path: list[Any]) -> set[str]:
    """The keys the file may use where ``path`` (the location of an unknown key, union tags
    dropped) puts it: the fields of the model(s) there."""
    models = [model]
    for step in path[:-1]:
        if isinstance(step, int):
            continue
        models = [
            m
            for parent in models
            if step in parent.model_fields
            for m in _models_in(parent.model_fields[step].annotation)
        ]
    return {name for m in models for name in m.model_fields}


def _did_you_mean(model: type[BaseModel] | None, path: list[Any]) -> str:
    """`` (did you mean 'x'?)`` for a misspelled key, when a known key is close to it."""
    if model is None or not path or not isinstance(path[-1], str):
        return ""
    close = difflib.get_close_matches(path[-1], sorted(_keys_at(model, path)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def first_error(exc: ValidationError, union_tags: frozenset[str] = frozenset(), model: Any = None) -> str:
    """The first problem of a validation error as one line ``key.path: problem (got value)``.

    - Union tags in the location are dropped (``union_tags``: the branch names of
      discriminated unions besides the shared ones, such as mechanism kinds).
    - For a key that takes "a number or a list", the error of the branch the input took is
      shown, not the type mismatch of the other branch.
    - A validator of ours that names its own key (``"eps: got ..., expected ..."``) puts it
      after the model's path.
    """
    errors = exc.errors()
    tags = _UNION_TAGS | union_tags

    def where(e: Mapping[str, Any]) -> list[Any]:
        return [p for p in e["loc"] if not _is_tag(p, tags)]

    head_loc = where(errors[0])
    same_key = [e for e in errors if where(e)[: len(head_loc)] == head_loc]
    chosen = next((e for e in same_key if e["type"] not in _BRANCH_MISMATCH), errors[0])
    loc = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in where(chosen)).replace(".[", "[")
    msg = chosen["msg"].removeprefix("Value error, ")
    if chosen["type"] == "extra_forbidden":
        msg = "no such key" + _did_you_mean(model, where(chosen))
    shown = chosen.get("input")
    quiet = chosen["type"] in ("missing", "model_type", "value_error") or isinstance(shown, dict)
    got = "" if quiet else f" (got {show(shown)})"
    key, sep, tail = msg.partition(": ")
    if sep and chosen["type"] == "value_error" and _OWN_KEY.fullmatch(key):
        loc, msg = (f"{loc}.{key}" if loc else key), tail
    return " ".join(f"{loc or '(top level)'}: {msg}{got}".split())


def _is_tag(p: Any, tags: set[str] | frozenset[str]) -> bool:
    return isinstance(p, str) and (p in tags or p.startswith("list["))


# --------------------------------------------------------------------- values
def check_sum_to_one(values: Any, key: str, what: str = "entries") -> None:
    """Shares, probabilities or fractions that must sum to 1: exactly when every one was
    typed exactly (``"1/3"``, :mod:`ldpsim.sim.weights`), else within ``SUM_TOL`` (1e-9);
    one line naming the key, the sum and the rule otherwise."""
    problem = sum_problem(values, what, SUM_TOL)
    if problem is not None:
        raise LdpSimError(f"{key}: {problem}")


# --------------------------------------------------------------------- budgets
def check_rows(per_replication: int, replications: int, detail: str) -> None:
    """Refuse runs whose results would not fit the row budgets (one line naming the key)."""
    if per_replication > MAX_ROWS_PER_REPLICATION:
        raise LdpSimError(detail)
    if per_replication * replications > MAX_ROWS:
        raise LdpSimError(
            f"simulation.replications: got {replications}, expected at most {MAX_ROWS // per_replication:,} "
            f"(results are limited to {MAX_ROWS:,} rows and each replication writes {per_replication:,})"
        )


# --------------------------------------------------------------------- time
#: Estimated seconds of work (one core, every replication) beyond which a run is refused
#: when its file is loaded, unless long runs are allowed (``ldpsim run --allow-long-run``,
#: :func:`allow_long_runs`): a legal file may ask for days (10^9 rounds one at a time).
MAX_RUN_SECONDS = 3600.0
#: The option of ``ldpsim run`` (and ``ldpsim check``) that lifts MAX_RUN_SECONDS.
LONG_RUN_OPTION = "--allow-long-run"
_LONG_RUNS: contextvars.ContextVar[bool] = contextvars.ContextVar("ldpsim_long_runs", default=False)


@contextlib.contextmanager
def allow_long_runs(allow: bool = True):
    """Inside the block, scenarios estimated at more than :data:`MAX_RUN_SECONDS` load (and
    run) instead of being refused; ``allow=False`` keeps the limit. Runs that exist are read
    back (resumed, reported) within it."""
    token = _LONG_RUNS.set(bool(allow) or _LONG_RUNS.get())
    try:
        yield
    finally:
        _LONG_RUNS.reset(token)


def long_runs_allowed() -> bool:
    """Whether the caller is inside :func:`allow_long_runs`."""
    return _LONG_RUNS.get()


def check_run_time(seconds: float, key: str, value: str, detail: str, remedy: str) -> None:
    """Refuse a run estimated at more than :data:`MAX_RUN_SECONDS` (unless long runs are
    allowed): one line naming ``key``, the estimate and its parts (``detail``), what to
    change (``remedy``) and the option that runs it anyway."""
    if seconds <= MAX_RUN_SECONDS or _LONG_RUNS.get():
        return
    days = f" = {seconds / 86400:,.1f} days" if seconds >= 2 * 86400 else f" = {seconds / 3600:,.1f} hours"
    raise LdpSimError(
        f"{key}: got {value}, expected a run of at most about {MAX_RUN_SECONDS / 3600:g} hour on one core: this one is "
        f"estimated at {seconds:,.0f} s{days} ({detail}); {remedy}, or run it anyway with ldpsim run {LONG_RUN_OPTION}"
    )
