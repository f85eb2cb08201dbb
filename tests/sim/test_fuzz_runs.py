"""The tampered-run fuzzer (tests/sim/fuzz_runs.py) in the suite: whatever was done to a
run folder, ``ldpsim run --resume`` and ``ldpsim report`` finish it or refuse it in one
line (an edited scenario or table: refused), and never write outside it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.properties import examples
from tests.sim.fuzz_runs import check_tampered_run, tamper_cases

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(case) -> None:
    with tempfile.TemporaryDirectory() as work:
        check_tampered_run(case, Path(work))


@settings(max_examples=3, **FUZZ)  # a smoke sample: 300 in the slow run below
@given(tamper_cases())
def test_tampered_run_folders_resume_and_report_or_fail_in_one_line(case):
    _check(case)


@pytest.mark.slow
@settings(max_examples=examples(300), **FUZZ)
@given(tamper_cases())
def test_tampered_run_folders_resume_and_report_or_fail_in_one_line_thousands(case):
    _check(case)


def test_the_harness_never_reads_a_metadata_file_linked_to_dev_zero(tmp_path):
    """The slow tier once ran out of memory (23 GB, the worker killed): after
    "metadata -> /dev/zero", "metadata key deleted" read the endless device to edit it. An op
    that reads a file it cannot read as a plain file changes nothing."""
    from tests.sim.fuzz_runs import tamper

    run = tmp_path / "run"
    run.mkdir()
    (run / "metadata.json").write_text('{"kind": "survey"}')
    assert tamper(run, tmp_path, "metadata -> /dev/zero", None)
    assert (run / "metadata.json").resolve() == Path("/dev/zero")
    assert tamper(run, tmp_path, "metadata key deleted", "kind") is False
    assert tamper(run, tmp_path, "metadata value changed", ("kind", 1)) is False


def test_the_harness_never_writes_into_a_fifo_it_made(tmp_path):
    """The slow tier hung for good: after "results -> fifo", "results emptied" opened the FIFO
    to write and waited for a reader that never came."""
    from tests.sim.fuzz_runs import tamper

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.csv").write_text("a,b\n1,2\n")
    assert tamper(run, tmp_path, "results -> fifo", None)
    assert tamper(run, tmp_path, "results emptied", None) is False
