"""The two tiers of the suite: the default run (what a contributor waits for, about five
minutes on two cores) and the ``slow`` tier (``python -m pytest -m slow``; CI runs both).

A parametrised test whose cases each take a second or more keeps a sample of them in the
default run and runs every case in the slow tier: :func:`sample` marks the rest. The cases
kept are the cheapest that still take the test's code path; the others (a second mechanism
of a family, a larger alphabet, another stage or worker count) check the same claim again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def sample(cases: Iterable[Any], keep: Iterable[int] = (0,)) -> list[Any]:
    """``cases`` for ``pytest.mark.parametrize``: those at the positions in ``keep`` run by
    default, every other one in the slow tier only. A case may be a plain value, a tuple of
    values, or a ``pytest.param`` (its id and marks are kept)."""
    kept = set(keep)
    out = []
    for i, case in enumerate(cases):
        if i in kept:
            out.append(case)
        elif isinstance(case, type(pytest.param(None))):
            out.append(pytest.param(*case.values, id=case.id, marks=[*case.marks, pytest.mark.slow]))
        else:
            values = case if isinstance(case, tuple) else (case,)
            out.append(pytest.param(*values, marks=pytest.mark.slow))
    return out
