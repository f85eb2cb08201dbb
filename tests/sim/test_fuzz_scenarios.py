"""The scenario fuzzers (tests/sim/fuzz.py) in the suite: every generated file, valid or
not, either runs to a complete report (exit 0) or is refused in one line (exit 2); never a
traceback, a warning or a hang. Ninety cases by default, 2,400 under ``slow`` (sized to fit CI;
five times as many, freshly drawn, under ``HYPOTHESIS_PROFILE=explore``: tests.properties.examples).

Set ``LDPSIM_FUZZ_REPORT=path`` to have the outcome counts written there at the end."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.properties import examples
from tests.sim.fuzz import (
    OUTCOMES,
    check_run,
    collection_docs,
    multiparty_docs,
    questions_docs,
    scenario_texts,
    to_toml,
)

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(text: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        check_run(text, Path(work))


@settings(max_examples=20, **FUZZ)  # a smoke sample: 1,500 in the slow run below
@given(scenario_texts())
def test_generated_scenarios_run_or_fail_in_one_line(text):
    _check(text)


@pytest.mark.slow
@settings(max_examples=examples(1500), **FUZZ)
@given(scenario_texts())
def test_generated_scenarios_run_or_fail_in_one_line_thousands(text):
    _check(text)


# The generators added for issue 34, each on its own (they are in scenario_texts too):
# collection files, several questions per respondent, multi-party files (one in eight asks
# for 10^8 or 10^9 rounds one at a time, which must be refused at load).
KINDS = {"collection": collection_docs, "questions": questions_docs, "multiparty": multiparty_docs}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_files_of_each_new_kind_run_or_fail_in_one_line(kind):
    @settings(max_examples=3, **FUZZ)  # a smoke sample: 300 each in the slow run below
    @given(KINDS[kind]().map(to_toml))
    def run(text):
        _check(text)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_files_of_each_new_kind_run_or_fail_in_one_line_thousands(kind):
    @settings(max_examples=examples(300), **FUZZ)
    @given(KINDS[kind]().map(to_toml))
    def run(text):
        _check(text)

    run()


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("LDPSIM_FUZZ_REPORT")
    if path:
        Path(path).write_text(json.dumps(dict(OUTCOMES), indent=2) + "\n")
