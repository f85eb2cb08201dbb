"""Run metadata shared by every command that writes files: versions, times, JSON."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ldpsim._files import write_text

PACKAGES = ("ldpsim", "numpy", "scipy", "simpy", "pandas", "pydantic", "matplotlib")


def package_version(name: str) -> str:
    try:
        return version(name)
    except Exception:  # pragma: no cover - a package missing from the environment
        return "unknown"


def versions() -> dict[str, str]:
    """Python and the key packages' versions."""
    return {"python": platform.python_version(), **{name: package_version(name) for name in PACKAGES}}


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON atomically (a temporary file of its own, then a rename)."""
    write_text(path, json.dumps(data, indent=2, default=str) + "\n")
