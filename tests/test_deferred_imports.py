"""Imports sit at the top of their module (docs/design.md, Conventions, "Imports at the top").

An import inside a function (*deferred*) is allowed only

(a) in a front whose import must stay light, as tests/test_import_cost.py checks
    (:data:`FRONTS`, each with the reason it is light);
(b) of a heavy or optional third-party package (:data:`THIRD_PARTY`), where a function
    needs it;
(c) with a comment beginning ``# deferred:`` that says why, on the import's first line or
    the line just above it (when the line would pass 120 columns with it).

Every ``ldpsim/**/*.py`` is walked (``ldpsim/scenarios/`` holds data and a script of its
own, and is skipped); imports under ``if TYPE_CHECKING:`` never run and are not deferred,
imports in a class body run with the module and are not deferred either. The lists here are
the ones docs/design.md names, and every front is one tests/test_import_cost.py imports.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ldpsim"
DESIGN = ROOT / "docs" / "design.md"
IMPORT_COST = ROOT / "tests" / "test_import_cost.py"

#: Modules whose import must stay light (tests/test_import_cost.py): every import they make
#: inside a function is allowed. Kept short: a module is listed only while it defers something.
FRONTS: dict[str, str] = {
    "ldpsim/__init__.py": "import ldpsim: the package's names load on first use (PEP 562), and "
    "__version__ reads the installed metadata (importlib.metadata) on first use",
    "ldpsim/cli.py": "import ldpsim.cli and ldpsim --help: each command imports what it needs in its handler",
    "ldpsim/workflow.py": "import ldpsim.workflow (ldpsim.Scenario, ldpsim.load_run): the simulation and the "
    "report load on first use, after the user's matplotlib backend is noted (the report selects Agg)",
}

#: Heavy or optional third-party packages (the first component of the imported name): a
#: function that needs one may import it, so that its module stays light without it.
THIRD_PARTY = (
    "scipy",
    "pandas",
    "matplotlib",
    "simpy",
    "pydantic",
    "mpmath",
    "jinja2",
    "tqdm",
    "dask",
    "distributed",
    "bokeh",
    "selenium",
)

#: The comment that gives a deferred import its reason.
REASON = re.compile(r"#\s*deferred:\s*\S")


@dataclass(frozen=True)
class Deferred:
    file: str  # path relative to the repository
    line: int
    statement: str
    modules: tuple[str, ...]  # the absolute names imported ('' first for a relative import)
    reason: bool  # a '# deferred:' comment on the first line or the line above

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.statement}"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def deferred_imports(source: str, file: str) -> list[Deferred]:
    """Every import statement of the source that sits inside a function (at any depth, also
    in a method or a nested function), leaving out ``if TYPE_CHECKING:`` blocks."""
    lines = source.splitlines()
    out: list[Deferred] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:  # the else branch runs
                    visit_one(other, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(child: ast.AST, in_function: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            if in_function:
                if isinstance(child, ast.Import):
                    modules = tuple(alias.name for alias in child.names)
                else:
                    modules = ("" if child.level else (child.module or ""),)
                above = lines[child.lineno - 2].strip() if child.lineno >= 2 else ""
                reason = bool(
                    REASON.search(lines[child.lineno - 1]) or (above.startswith("#") and REASON.search(above))
                )
                out.append(Deferred(file, child.lineno, ast.unparse(child), modules, reason))
            return
        visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source, filename=file), False)
    return out


def package_files(package: Path = PACKAGE) -> list[Path]:
    return [p for p in sorted(package.rglob("*.py")) if "scenarios" not in p.relative_to(package).parts[:-1]]


def all_deferred(package: Path = PACKAGE) -> list[Deferred]:
    root = package.parent
    out: list[Deferred] = []
    for path in package_files(package):
        out += deferred_imports(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
    return out


def allowed(d: Deferred) -> bool:
    """(a) a front, (b) a listed third-party package, (c) a '# deferred:' comment."""
    return d.file in FRONTS or all(m.split(".")[0] in THIRD_PARTY for m in d.modules) or d.reason


def _design_bullet() -> str:
    """The Conventions bullet of docs/design.md on imports (up to the next bullet or heading)."""
    text = DESIGN.read_text(encoding="utf-8")
    found = re.search(r"^- \*\*Imports at the top\.\*\*(.*?)(?=^- |^#|\Z)", text, flags=re.S | re.M)
    assert found, "docs/design.md: no '- **Imports at the top.**' bullet under Conventions"
    return found.group(1)


# --------------------------------------------------------------------------- the checks
def test_every_deferred_import_has_a_reason():
    found = all_deferred()
    assert len(found) >= 10  # the walk sees the package (cli.py alone defers dozens)
    bad = [str(d) for d in found if not allowed(d)]
    assert not bad, (
        f"{len(bad)} imports inside functions with no reason (docs/design.md, Imports at the top): move each to the "
        "top of its module, or say why on its line ('# deferred: ...': a light front reached through the module, "
        "a cycle):\n" + "\n".join(bad)
    )


def test_every_front_still_defers_and_is_guarded_by_the_import_cost_test():
    found = {d.file for d in all_deferred()}
    guarded = IMPORT_COST.read_text(encoding="utf-8")
    for front, reason in FRONTS.items():
        assert reason.strip(), f"{front}: give the reason it must stay light"
        assert (ROOT / front).is_file(), f"{front}: no such file; remove it from FRONTS"
        assert front in found, f"{front}: defers nothing any more; remove it from FRONTS (and docs/design.md)"
        module = front.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        assert re.search(rf"\bimport {re.escape(module)}\b(?!\.)", guarded), (
            f"{front}: tests/test_import_cost.py does not import {module}: a front is one it keeps light"
        )


def test_the_lists_are_the_ones_docs_design_names():
    bullet = _design_bullet()
    named = set(re.findall(r"`([^`\s]+)`", bullet))
    fronts_named = {n for n in named if n.startswith("ldpsim/") and n.endswith(".py")}
    assert fronts_named == set(FRONTS), (
        f"docs/design.md names the fronts {sorted(fronts_named)}, the test {sorted(FRONTS)}"
    )
    missing = [p for p in THIRD_PARTY if p not in named]
    assert not missing, f"docs/design.md, Imports at the top: name the packages {missing}"
    assert "tests/test_deferred_imports.py" in bullet and "tests/test_import_cost.py" in bullet


# --------------------------------------------------------------------------- the checker itself
def test_the_walk_finds_imports_in_functions_only():
    src = "\n".join(
        [
            "import os",  # 1: top
            "from typing import TYPE_CHECKING",
            "if TYPE_CHECKING:",
            "    from ldpsim.privacy import pld",  # 4: never runs
            "else:",
            "    import json",  # 6: runs with the module
            "class A:",
            "    import re",  # 8: class body, runs with the module
            "    def m(self):",
            "        import copy",  # 10: deferred
            "        def inner():",
            "            from ..errors import invalid",  # 12: deferred, relative
            "async def f():",
            "    if TYPE_CHECKING:",
            "        import ldpsim.sim",  # 15: never runs
            "    import scipy.stats, pandas as pd",  # 16: deferred, third-party
            "    from ldpsim.privacy import pld  # deferred: a reason",  # 17
            "    # deferred: privacy loads scipy (tests/test_import_cost.py)",
            "    from ldpsim.privacy import (",  # 19: the reason just above
            "        guarantees,",
            "    )",
            "    # a comment that is no reason",
            "    from ldpsim import sim  # noqa: F401",  # 23: no reason
        ]
    )
    got = deferred_imports(src, "ldpsim/x.py")
    assert [(d.line, d.modules, d.reason) for d in got] == [
        (10, ("copy",), False),
        (12, ("",), False),
        (16, ("scipy.stats", "pandas"), False),
        (17, ("ldpsim.privacy",), True),
        (19, ("ldpsim.privacy",), True),
        (23, ("ldpsim",), False),
    ]
    assert [allowed(d) for d in got] == [False, False, True, True, True, False]
    assert str(got[0]) == "ldpsim/x.py:10: import copy"


def test_a_front_allows_anything_and_a_mixed_import_needs_a_reason():
    src = "def f():\n    import numpy, scipy\n    import os\n"
    assert [allowed(d) for d in deferred_imports(src, "ldpsim/x.py")] == [False, False]
    assert all(allowed(d) for d in deferred_imports(src, "ldpsim/cli.py"))


def test_scenarios_are_skipped():
    assert not any("ldpsim/scenarios/" in p.as_posix() for p in package_files())
    assert any(p.name == "cli.py" for p in package_files())
