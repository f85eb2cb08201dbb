"""Scenario files: one loader for every kind of run.

A scenario file is TOML. Its top-level ``kind`` says what it describes: a survey (the
default: clients answering a question through a mechanism and a network, an analyst
estimating; :mod:`ldpsim.sim.scenario.survey`), a multi-party broadcast (parties
broadcasting privatised bits, every receiver deciding a function of all of them;
:mod:`ldpsim.sim.scenario.multiparty`, with a ``[study]`` over k and eps:
:mod:`ldpsim.sim.scenario.multiparty_study`) or a collection (the same respondents
reporting period after period under several policies; :mod:`ldpsim.sim.scenario.collection`).
The kinds and their parsers (each study's ``parse``) are those of the one registry,
:mod:`ldpsim.sim.kinds`. :func:`load_scenario` reads the file, dispatches on ``kind`` and
returns the built scenario of that kind; every kind shares the sections,
types and the one error format of :mod:`ldpsim.sim.scenario.common`, so every problem is
one :class:`ldpsim.errors.LdpSimError` naming the file, the key path and the problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ldpsim.errors import LdpSimError, invalid, show
from ldpsim.sim import kinds
from ldpsim.sim.scenario import analysis_specs
from ldpsim.sim.scenario.collection import CollectionScenario
from ldpsim.sim.scenario.common import BuiltScenario, allow_long_runs, check_rows, read_scenario_text, read_toml
from ldpsim.sim.scenario.multiparty import MultipartyScenario
from ldpsim.sim.scenario.multiparty_study import MultipartyStudyScenario
from ldpsim.sim.scenario.survey import Scenario
from ldpsim.sim.table import data_access

__all__ = [
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
    """The scenario's ``kind`` (the registry's default when absent); one line naming it
    otherwise. The kinds are those of the one registry, :mod:`ldpsim.sim.kinds`."""
    known = kinds.file_kinds()
    kind = raw.get("kind", kinds.default())
    if not isinstance(kind, str) or kind not in known:
        # an analysis file is ldpsim analyse's input, not a run's
        hint = f" (an analysis file: ldpsim analyse {where})" if kind == analysis_specs.KIND else ""
        raise LdpSimError(f"{where}: kind: got {show(kind)}, expected one of {', '.join(repr(k) for k in known)}{hint}")
    return kind


def parse_scenario(text: str, where: str = "<scenario>", *, allow_outside_data: bool = False) -> Any:
    """Validate and build scenario text of any kind (``where`` names it in messages and is
    where it would live: the data files it names must be regular files in that folder or
    below, unless ``allow_outside_data``)."""
    if not isinstance(allow_outside_data, bool):
        raise invalid("allow_outside_data", allow_outside_data, "True or False")
    with data_access(allow_outside_data):
        return kinds.parser(kind_of(read_toml(text, where), where))(text, where)


def load_scenario(path: str | Path, *, allow_outside_data: bool = False) -> Any:
    """Read, validate and build a scenario file of any kind: a :class:`Scenario` (survey) or
    a :class:`MultipartyScenario`; raise LdpSimError naming the file and the key. The data
    files it names (``population.file``) must be regular files in the scenario's folder or
    below (symlinks followed), unless ``allow_outside_data``."""
    text, where = read_scenario_text(path)
    return parse_scenario(text, where, allow_outside_data=allow_outside_data)
