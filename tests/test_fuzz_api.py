"""The public-API fuzzer (tests/fuzz_api.py) in the suite: every catalog entry built at
extreme parameters, and the accounting functions at extreme arguments, return a value that
is not NaN and in range, or raise one LdpSimError in one line; no other exception, no
warning, no call over its CPU, wall-time or memory limit."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz_api import catalog_cases, check_catalog_case, check_privacy_case, privacy_cases
from tests.properties import examples

FUZZ = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


@settings(max_examples=75, **FUZZ)  # a smoke sample: 5,000 in the slow run below
@given(catalog_cases())
def test_catalog_entries_at_extreme_parameters(case):
    check_catalog_case(case)


@settings(max_examples=60, **FUZZ)  # 5,000 in the slow run below
@given(privacy_cases())
def test_privacy_accounting_at_extreme_arguments(call):
    check_privacy_case(call)


@pytest.mark.slow
@settings(max_examples=examples(5000), **FUZZ)
@given(catalog_cases())
def test_catalog_entries_at_extreme_parameters_thousands(case):
    check_catalog_case(case)


@pytest.mark.slow
@settings(max_examples=examples(5000), **FUZZ)
@given(privacy_cases())
def test_privacy_accounting_at_extreme_arguments_thousands(call):
    check_privacy_case(call)
