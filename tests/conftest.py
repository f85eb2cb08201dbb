import os
import sys

from hypothesis import HealthCheck, settings

# Bytecode caches on, whatever the environment says: with PYTHONDONTWRITEBYTECODE set, each
# worker rewrites and compiles every test module again (about 9 s of the two workers' start)
# and each `python -m ldpsim` a test starts compiles the package again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Hypothesis runs derandomised by default (the same examples on every run, so CI is
# reproducible); timing deadlines are off because the CI machine is shared and noisy.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
# HYPOTHESIS_PROFILE=explore: fresh randomness on every run and many more examples, for a
# manual hunt for edge cases (tests that set their own max_examples scale it through
# tests.properties.examples). "thorough" is its older name, kept as an alias.
settings.register_profile("explore", parent=settings.get_profile("default"), max_examples=3000, derandomize=False)
settings.register_profile("thorough", parent=settings.get_profile("explore"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402


@pytest.fixture
def cli():
    """Run ``ldpsim`` in-process: ``cli("run", path, cwd=tmp_path)`` returns an object with
    ``returncode``, ``stdout`` and ``stderr`` (see :mod:`tests.cli_helpers`)."""
    from tests.cli_helpers import run_cli

    return run_cli


# mpmath's working precision is global. Test modules state theirs at import (``mp.dps = 40``),
# and some tests change it; left as it is, whichever module was imported last, or whichever
# test ran before on the same worker, decided the precision of the next test's reference
# values (the slow tier's order once gave a 40-digit reference 25 digits). So each module's
# own precision is recorded as it is imported, and every module and test starts at it; a
# module that states none gets 40 digits, what such modules got before (test_unary.py's 40
# was the last one collected).
_MPMATH_DEFAULT_DPS = 40
_MODULE_DPS: dict[object, int] = {}


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    if not isinstance(collector, pytest.Module):
        return (yield)
    import mpmath

    mpmath.mp.dps = _MPMATH_DEFAULT_DPS
    try:
        return (yield)
    finally:
        _MODULE_DPS[collector.path] = mpmath.mp.dps
        mpmath.mp.dps = _MPMATH_DEFAULT_DPS


def _module_dps(request) -> int:
    return _MODULE_DPS.get(request.path, _MPMATH_DEFAULT_DPS)


@pytest.fixture(scope="module", autouse=True)
def _mpmath_precision_of_the_module(request):
    """The precision the module stated, for its module-scoped fixtures too."""
    import mpmath

    mpmath.mp.dps = _module_dps(request)
    yield


@pytest.fixture(autouse=True)
def _mpmath_precision_of_the_test(request):
    """Every test starts at its module's precision, whatever the test before it left."""
    import mpmath

    mpmath.mp.dps = _module_dps(request)
    yield
