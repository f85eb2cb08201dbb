"""Property-based tests of the mission's statistical claims (hypothesis).

Each test states its false-failure probability (the probability that it fails although the
library is correct): at most 1e-6 for the random ones, by a union bound over every example
hypothesis may run. The number of examples comes from :func:`examples`, so that the union
bound is taken over the examples actually run in every profile (see tests/conftest.py).
"""

from __future__ import annotations

import os
import zlib

#: Profiles (tests/conftest.py) that run more, fresh examples.
_EXPLORING = {"explore": 5, "thorough": 5}


def examples(default: int) -> int:
    """Examples per test: ``default`` in the default (derandomised) run, five times more under
    ``HYPOTHESIS_PROFILE=explore`` (or its older name ``thorough``)."""
    return default * _EXPLORING.get(os.environ.get("HYPOTHESIS_PROFILE", "default"), 1)


def seed_of(*parts: object) -> int:
    """A fixed seed derived from the example itself, so a failure replays exactly."""
    return zlib.crc32(repr(parts).encode())
