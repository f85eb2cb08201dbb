"""The scenario fuzzers (tests/sim/fuzz.py) in the suite: every generated file, valid or
not, either runs to a complete report (exit 0) or is refused in one line (exit 2); never a
traceback, a warning or a hang. A few hundred cases by default, thousands under ``slow``.

Set ``LDPSIM_FUZZ_REPORT=path`` to have the outcome counts written there at the end."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.sim.fuzz import OUTCOMES, check_run, scenario_texts

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(text: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        check_run(text, Path(work))


@settings(max_examples=150, **FUZZ)  # 4,000 in the slow run below
@given(scenario_texts())
def test_generated_scenarios_run_or_fail_in_one_line(text):
    _check(text)


@pytest.mark.slow
@settings(max_examples=4000, **FUZZ)
@given(scenario_texts())
def test_generated_scenarios_run_or_fail_in_one_line_thousands(text):
    _check(text)


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("LDPSIM_FUZZ_REPORT")
    if path:
        Path(path).write_text(json.dumps(dict(OUTCOMES), indent=2) + "\n")
