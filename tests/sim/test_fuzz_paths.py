"""The hostile-table fuzzer (tests/sim/fuzz_paths.py) in the suite: every population.file,
whatever it names (odd CSV, junk, a path out of the scenario's folder, a device, a FIFO, a
folder), runs to a complete report or is refused in one line, fast, without printing the
file's contents or changing anything outside the scenario's folder and the run folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.properties import examples
from tests.sim.fuzz_paths import check_table_case, table_cases

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(case) -> None:
    with tempfile.TemporaryDirectory() as work:
        check_table_case(case, Path(work))


@settings(max_examples=15, **FUZZ)  # a smoke sample: 600 in the slow run below
@given(table_cases())
def test_hostile_tables_and_paths_run_or_fail_in_one_line(case):
    _check(case)


@pytest.mark.slow
@settings(max_examples=examples(600), **FUZZ)
@given(table_cases())
def test_hostile_tables_and_paths_run_or_fail_in_one_line_thousands(case):
    _check(case)
