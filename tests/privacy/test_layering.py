"""The privacy package is pure accounting: it never imports ldpsim.mechanisms (mechanisms
import it), not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import ldpsim.privacy

PRIVACY_DIR = Path(ldpsim.privacy.__file__).parent


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement of ``path`` names (absolute, relative resolved
    against ``ldpsim.privacy``), with its line, wherever the statement sits."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["ldpsim", "privacy"][: max(0, 2 - (node.level - 1))]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{alias.name}") for alias in node.names]
    return out


def test_privacy_never_imports_mechanisms():
    files = sorted(PRIVACY_DIR.glob("*.py"))
    assert len(files) >= 7  # the package itself, not an empty glob
    bad = [
        f"{path.name}:{line}: {mod}"
        for path in files
        for line, mod in _imported_modules(path)
        if mod == "ldpsim.mechanisms" or mod.startswith("ldpsim.mechanisms.")
    ]
    assert bad == []


def test_the_checker_sees_relative_and_deferred_imports(tmp_path):
    # the two forms privacy once used (deferred, relative) are caught
    src = tmp_path / "probe.py"
    src.write_text("def f():\n    from ..mechanisms.noise import Gaussian\n    import ldpsim.mechanisms\n")
    mods = [mod for _, mod in _imported_modules(src)]
    assert "ldpsim.mechanisms.noise" in mods and "ldpsim.mechanisms" in mods
