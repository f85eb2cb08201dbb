"""The one registry of run kinds: every kind of run the house knows, listed once.

A run kind is a :class:`ldpsim.runs.Study` subclass (its parser, its model, its report, its
console lines). This module lists them, by the ``"module:attribute"`` string of the class
(as the mechanism catalog names its builders), so that it imports none of them: the
scenario loader (:func:`ldpsim.sim.scenario.load_scenario`) takes its parsers from here,
the studies (:func:`ldpsim.sim.studies.run_scenario`, ``resume_run``) their classes, and
the tools above (``ldpsim run``, ``ldpsim report``, :mod:`ldpsim.workflow`) ask the study
of a run for what differs by kind instead of naming kinds.

A kind is either the ``kind`` of a scenario file (``file_kind=True``: the file's parser is
the study's :meth:`~ldpsim.runs.Study.parse`) or reached through another kind's parser (a
multi-party file with a ``[study]`` table runs as ``"multiparty_study"``, one that declares an
interactive protocol as ``"multiparty_interactive"``). The first kind
registered is the default: a scenario file without ``kind``, and a run whose metadata.json
was written before it recorded one.

Adding a kind is one :func:`register` call here (or, for a kind of one's own, anywhere
before the run: the contract suite registers a toy one inside a test)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable

from ldpsim.errors import LdpSimError

__all__ = [
    "Kind",
    "register",
    "unregister",
    "kinds",
    "file_kinds",
    "default",
    "study_class",
    "study_of",
    "parser",
    "parsers",
]


@dataclass(frozen=True)
class Kind:
    """One registered kind: its name (metadata.json's ``kind``), its study (a class, or the
    ``"module:attribute"`` string naming it) and whether it is a scenario file's ``kind``."""

    name: str
    study: Any
    file_kind: bool = True


_REGISTRY: dict[str, Kind] = {}


def register(name: str, study: Any, *, file_kind: bool = True) -> Kind:
    """Register the run kind ``name``, run by ``study`` (a Study subclass or its
    ``"module:attribute"``); refused if the name is taken."""
    if not isinstance(name, str) or not name or name in _REGISTRY:
        raise LdpSimError(f"kind: got {name!r}, expected a new name (registered: {', '.join(_REGISTRY)})")
    entry = _REGISTRY[name] = Kind(name, study, file_kind)
    return entry


def unregister(name: str) -> None:
    """Remove the kind ``name`` (for kinds registered by tests and plug-ins)."""
    _REGISTRY.pop(name, None)


# The kinds of this version, the default first. Nothing else in the package lists them.
register("survey", "ldpsim.sim.studies:SurveyStudy")
register("multiparty", "ldpsim.sim.studies:MultipartyStudy")
register("collection", "ldpsim.sim.studies:CollectionStudy")
register("multiparty_study", "ldpsim.sim.multiparty_study:MultipartyScalingStudy", file_kind=False)
register("multiparty_interactive", "ldpsim.sim.multiparty_interactive:MultipartyInteractiveStudy", file_kind=False)


def kinds() -> list[str]:
    """Every run kind, in registration order."""
    return list(_REGISTRY)


def file_kinds() -> list[str]:
    """The kinds a scenario file's ``kind`` may name."""
    return [k for k, e in _REGISTRY.items() if e.file_kind]


def default() -> str:
    """The default kind: of a file without ``kind``, of a run that recorded none."""
    return next(iter(_REGISTRY))


def study_class(name: str) -> Any:
    """The Study subclass of the kind ``name`` (KeyError if none), imported on first use."""
    study = _REGISTRY[name].study
    if isinstance(study, str):
        module, attribute = study.split(":")
        study = getattr(import_module(module), attribute)
    return study


def study_of(scenario: Any) -> Any:
    """The study that runs a built scenario (by its ``kind``)."""
    return study_class(scenario.kind)(scenario)


def parser(file_kind: str) -> Callable[[str, str], Any]:
    """The parser of scenario text of a file's ``kind`` (``parse(text, where)``)."""
    return study_class(file_kind).parse


def parsers(parse: Callable[[str, str], Any]) -> dict[str, Callable[[str, str], Any]]:
    """Run kind -> ``parse`` for every kind, the default first (as :func:`ldpsim.runs.resume_study` takes them)."""
    return {kind: parse for kind in _REGISTRY}
