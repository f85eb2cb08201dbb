"""Scenario files: one loader for every kind of run.

A scenario file is TOML. Its top-level ``kind`` says what it describes: ``"survey"`` (the
default: clients answering a question through a mechanism and a network, an analyst
estimating; :mod:`ldpsim.sim.scenario.survey`) or ``"multiparty"`` (parties broadcasting
privatised bits, every receiver deciding a function of all of them;
:mod:`ldpsim.sim.scenario.multiparty`) or ``"collection"`` (the same respondents reporting
period after period under several policies; :mod:`ldpsim.sim.scenario.collection`). :func:`load_scenario` reads the file, dispatches on
``kind`` and returns the built scenario of that kind; every kind shares the sections,
types and the one error format of :mod:`ldpsim.sim.scenario.common`, so every problem is
one :class:`ldpsim.errors.LdpSimError` naming the file, the key path and the problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ldpsim.errors import LdpSimError, invalid, show
from ldpsim.sim.scenario.collection import CollectionScenario, parse_collection
from ldpsim.sim.scenario.common import BuiltScenario, allow_long_runs, check_rows, read_scenario_text, read_toml
from ldpsim.sim.scenario.multiparty import MultipartyScenario, parse_multiparty
from ldpsim.sim.scenario.multiparty_study import MultipartyStudyScenario, parse_multiparty_study
from ldpsim.sim.scenario.survey import Scenario, parse_survey
from ldpsim.sim.table import data_access


def _parse_multiparty_file(text: str, where: str) -> BuiltScenario:
    """A multi-party file: one broadcast, or a study over k and eps when it has a ``[study]``
    table (:mod:`ldpsim.sim.scenario.multiparty_study`)."""
    if "study" in read_toml(text, where):
        return parse_multiparty_study(text, where)
    return parse_multiparty(text, where)


#: kind -> parser of the scenario text (``parse(text, where)``); a new kind of scenario
#: adds one entry (and one study, :mod:`ldpsim.sim.studies`). A parser may build a scenario
#: of a run kind of its own (a multi-party file with ``[study]`` runs as "multiparty_study").
KINDS: dict[str, Callable[[str, str], BuiltScenario]] = {
    "survey": parse_survey,
    "multiparty": _parse_multiparty_file,
    "collection": parse_collection,
}

__all__ = [
    "KINDS",
    "BuiltScenario",
    "CollectionScenario",
    "MultipartyScenario",
    "MultipartyStudyScenario",
    "Scenario",
    "allow_long_runs",
    "check_rows",
    "kind_of",
    "load_scenario",
    "parse_scenario",
]


def kind_of(raw: dict[str, Any], where: str) -> str:
    """The scenario's ``kind`` (``"survey"`` when absent); one line naming it otherwise."""
    kind = raw.get("kind", "survey")
    if not isinstance(kind, str) or kind not in KINDS:
        raise LdpSimError(f"{where}: kind: got {show(kind)}, expected one of {', '.join(repr(k) for k in KINDS)}")
    return kind


def parse_scenario(text: str, where: str = "<scenario>", *, allow_outside_data: bool = False) -> Any:
    """Validate and build scenario text of any kind (``where`` names it in messages and is
    where it would live: the data files it names must be regular files in that folder or
    below, unless ``allow_outside_data``)."""
    if not isinstance(allow_outside_data, bool):
        raise invalid("allow_outside_data", allow_outside_data, "True or False")
    with data_access(allow_outside_data):
        return KINDS[kind_of(read_toml(text, where), where)](text, where)


def load_scenario(path: str | Path, *, allow_outside_data: bool = False) -> Any:
    """Read, validate and build a scenario file of any kind: a :class:`Scenario` (survey) or
    a :class:`MultipartyScenario`; raise LdpSimError naming the file and the key. The data
    files it names (``population.file``) must be regular files in the scenario's folder or
    below (symlinks followed), unless ``allow_outside_data``."""
    text, where = read_scenario_text(path)
    return parse_scenario(text, where, allow_outside_data=allow_outside_data)
