"""The auditor and the analyst treat every mechanism through the contract alone.

Every class defined under ``ldpsim/mechanisms/`` and in the broken zoo is a mechanism kind; an
``isinstance``/``issubclass`` test against one of them (or a ``hasattr`` probe for a
family-specific member) in ``ldpsim/audit/`` or ``ldpsim/analyst/`` would be dispatch over
kinds, which the contract exists to make unnecessary. This test reads the code with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ldpsim"
KIND_SOURCES = [*sorted((PACKAGE / "mechanisms").rglob("*.py")), PACKAGE / "audit" / "zoo.py"]
CLIENTS = [*sorted((PACKAGE / "audit").rglob("*.py")), *sorted((PACKAGE / "analyst").rglob("*.py"))]


def _kinds() -> set[str]:
    names: set[str] = set()
    for path in KIND_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return names


def _names_in(node: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def test_the_kind_list_is_not_empty():
    kinds = _kinds()
    assert {"Mechanism", "FiniteMechanism", "RandomizedResponse", "Laplace", "Gaussian", "NormLaplace"} <= kinds


def test_no_isinstance_over_mechanism_kinds_in_audit_or_analyst():
    kinds = _kinds() - {"Mechanism"}  # the contract itself is the one type a client may check
    found = []
    for path in CLIENTS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
            ):
                if len(node.args) == 2 and _names_in(node.args[1]) & kinds:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "dispatch over mechanism kinds:\n" + "\n".join(found)
