"""Static types: ``mypy`` over the package with the ``[tool.mypy]`` section of pyproject.toml
(the typed modules; the ones still listed under ``[[tool.mypy.overrides]]`` are not checked
until their errors are fixed). ``warn_unused_ignores`` there makes every type-ignore comment
in a checked module one that mypy still needs.

mypy keeps its cache in the checkout's ``.mypy_cache`` (git ignores it): the first run
analyses the package and the stubs of numpy, scipy and the rest from scratch (about 15 s
of CPU, 25 s on a busy machine), a run after it only what changed (under a second).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 15 s of CPU from a cold cache: CI runs it with the slow tier
@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it comes with the dev extra: pip install -e '.[dev]')",
)
def test_mypy_passes_on_the_typed_modules():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "Success" in done.stdout, done.stdout + done.stderr
