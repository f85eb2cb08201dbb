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
