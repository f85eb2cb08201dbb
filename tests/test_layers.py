"""The import layers of ldpsim, checked against the table in docs/design.md.

A *unit* is the first path component under ``ldpsim/``: ``mechanisms`` for
``ldpsim/mechanisms/*``, ``runs`` for ``ldpsim/runs.py``, ``__init__`` for
``ldpsim/__init__.py``. Every ``import`` and ``from ... import`` statement anywhere in a
module (also inside functions and ``if TYPE_CHECKING:`` blocks; relative imports resolved)
that names another unit is an edge. The table in docs/design.md gives each unit a layer; the
tests fail on

(a) an edge to a unit of a higher layer (naming file, line and edge),
(b) an import cycle between units (even within one layer; the deferred imports listed in
    :data:`DEFERRED_CYCLE_BREAKERS` left out, as in (e)),
(c) a unit under ``ldpsim/`` that the table does not list.

Builders named by strings in the catalog (``"module:attribute"``, imported on first use) are
not import statements and are not edges.

The never-rules of docs/design.md ("What must never import what") that the table cannot say
are checked here too:

(d) ``privacy`` writes no files and draws nothing: no module under ``ldpsim/privacy/``
    imports a drawing, templating or file-handling module (:data:`NO_FILES_IMPORTS`) or
    calls anything that writes a file (:func:`file_writes`), even inside a function.

And within units, between files:

(e) an import cycle between modules (files): no module imports another that imports it back,
    directly or through others. The same statements count (top level, inside functions,
    under ``if TYPE_CHECKING:``); an edge goes to the module the statement names: ``from
    ldpsim.sim.scenario import survey`` to ``ldpsim.sim.scenario.survey``, ``from
    ldpsim.analyst import bucket`` (a name of the package front) to ``ldpsim.analyst``, whose
    ``__init__.py`` is a module like any other. That Python runs the packages above a module
    first is not an edge (otherwise every package front that imports its own modules would
    be a cycle). A deferred import (inside a function) that exists only to break a cycle may
    be listed, with its reason, in :data:`DEFERRED_CYCLE_BREAKERS`; the list is kept as
    short as possible and an entry no longer needed fails the test.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ldpsim"
DESIGN = ROOT / "docs" / "design.md"


# --------------------------------------------------------------------------- the table
def parse_layer_table(text: str) -> dict[str, int]:
    """unit -> layer from the Markdown rows whose first cell is an integer; the units are the
    backticked names in the second cell. A unit listed twice is an error."""
    layers: dict[str, int] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.strip().startswith("|") or not re.fullmatch(r"\d+", cells[0]):
            continue
        for unit in re.findall(r"`([^`]+)`", cells[1]):
            assert unit not in layers, f"docs/design.md: unit {unit!r} listed in layers {layers[unit]} and {cells[0]}"
            layers[unit] = int(cells[0])
    return layers


# --------------------------------------------------------------------------- the code
@dataclass(frozen=True)
class Edge:
    source: str  # unit that imports
    target: str  # unit imported
    file: str  # path relative to the repository
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.source} -> {self.target}"


def module_name(path: Path, root: Path) -> tuple[str, ...]:
    """Dotted module name of ``path`` (a package's ``__init__.py`` is the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def unit_of_file(path: Path, package: Path) -> str:
    """The first path component under the package (the file's stem for a top-level module)."""
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def units_on_disk(package: Path) -> set[str]:
    """Every unit under the package: top-level modules and sub-packages (directories with
    Python files)."""
    out = {p.stem for p in package.glob("*.py")}
    out |= {d.name for d in package.iterdir() if d.is_dir() and not d.name.startswith(".") and any(d.rglob("*.py"))}
    return out


def resolve(node: ast.ImportFrom | ast.Import, module: tuple[str, ...], is_package: bool) -> list[tuple[str, ...]]:
    """The absolute module paths an import statement names (for ``from M import a, b``: ``M.a``
    and ``M.b``, since ``a`` may be a submodule; the unit is decided by the caller)."""
    if isinstance(node, ast.Import):
        return [tuple(alias.name.split(".")) for alias in node.names]
    if node.level:
        package = module if is_package else module[:-1]
        if node.level - 1 > len(package):
            raise ValueError(f"relative import beyond the top level in {'.'.join(module)}")
        base = package[: len(package) - (node.level - 1)]
    else:
        base = ()
    base = base + (tuple(node.module.split(".")) if node.module else ())
    return [base + (alias.name,) for alias in node.names]


def edges_of_source(
    source: str, file: str, module: tuple[str, ...], is_package: bool, unit: str, units: set[str]
) -> list[Edge]:
    """Edges from one module's source text to other units of ``ldpsim``."""
    out = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in resolve(node, module, is_package):
            if not target or target[0] != "ldpsim":
                continue
            if len(target) == 1:  # import ldpsim
                dest = "__init__"
            elif target[1] in units:  # ldpsim.<unit>... or from ldpsim import <unit>
                dest = target[1]
            else:  # from ldpsim import <a name of the package front>
                dest = "__init__"
            edge = Edge(unit, dest, file, node.lineno)
            if dest != unit and edge not in out:  # one edge per statement and target unit
                out.append(edge)
    return sorted(out, key=lambda e: e.line)  # ast.walk visits nested statements late


def collect_edges(package: Path = PACKAGE) -> list[Edge]:
    root = package.parent
    units = units_on_disk(package)
    edges: list[Edge] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        edges += edges_of_source(
            path.read_text(encoding="utf-8"),
            rel,
            module_name(path, root),
            path.name == "__init__.py",
            unit_of_file(path, package),
            units,
        )
    return edges


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one unit (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def imported_modules(source: str, file: str, module: tuple[str, ...], is_package: bool) -> list[tuple[int, str]]:
    """Every dotted module an import statement of the source names, with its line, wherever
    the statement sits (``from M import a`` names ``M`` and ``M.a``: ``a`` may be a module)."""
    out = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            named = resolve(node, module, is_package)
            out.append((node.lineno, ".".join(named[0][:-1])))
            out += [(node.lineno, ".".join(t)) for t in named]
    return sorted(set(out))


# --------------------------------------------------------------------------- modules
def modules_on_disk(package: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package is its ``__init__.py``)."""
    root = package.parent
    return {".".join(module_name(p, root)): p for p in sorted(package.rglob("*.py"))}


def _imports_with_context(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of the tree and whether it sits inside a function (deferred)."""
    out: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, deferred))
            visit(child, deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def module_edges_of_source(
    source: str, file: str, module: tuple[str, ...], is_package: bool, modules: set[str]
) -> list[tuple[Edge, bool]]:
    """Edges from one module to the other modules of ``ldpsim`` its import statements name
    (the longest dotted prefix of each imported path that is a module), each with whether
    the statement is deferred (inside a function)."""
    own = ".".join(module)
    out: list[tuple[Edge, bool]] = []
    for node, deferred in _imports_with_context(ast.parse(source, filename=file)):
        for target in resolve(node, module, is_package):
            if not target or target[0] != "ldpsim":
                continue
            prefixes = (".".join(target[:i]) for i in range(len(target), 0, -1))
            dest = next((m for m in prefixes if m in modules), "ldpsim")
            edge = (Edge(own, dest, file, node.lineno), deferred)
            if dest != own and edge not in out:
                out.append(edge)
    return sorted(out, key=lambda e: e[0].line)


def collect_module_edges(package: Path = PACKAGE) -> list[tuple[Edge, bool]]:
    root = package.parent
    modules = modules_on_disk(package)
    edges: list[tuple[Edge, bool]] = []
    for name, path in modules.items():
        edges += module_edges_of_source(
            path.read_text(encoding="utf-8"),
            path.relative_to(root).as_posix(),
            tuple(name.split(".")),
            path.name == "__init__.py",
            set(modules),
        )
    return edges


#: Deferred imports (importing module, imported module) that exist only to break an import
#: cycle between modules, each with the reason it cannot be broken otherwise. (The cycle
#: sim.scenario.survey <-> sim.scenario.questions was broken by moving what both need to
#: sim.scenario.survey_specs, and is not listed.)
DEFERRED_CYCLE_BREAKERS: dict[tuple[str, str], str] = {}


def module_cycles(edges: list[tuple[Edge, bool]], allowed: dict[tuple[str, str], str]) -> list[list[str]]:
    """The cycles between modules, leaving out the deferred edges ``allowed`` lists."""
    return cycles([e for e, deferred in edges if not (deferred and (e.source, e.target) in allowed)])


# --------------------------------------------------------------------------- privacy writes no files
#: What no module of ``privacy`` may import: drawing and templating, file handling, and the
#: library's own writers (atomic files, run metadata, the report layer).
NO_FILES_IMPORTS = ("matplotlib", "jinja2", "shutil", "tempfile", "ldpsim._files", "ldpsim._meta", "ldpsim.report")

#: Calls that write, make or remove files, by the name called (``f(...)`` or ``x.f(...)``).
WRITING_CALLS = frozenset(
    {
        "write",
        "writelines",
        "write_text",
        "write_bytes",
        "dump",
        "to_csv",
        "to_json",
        "to_parquet",
        "to_pickle",
        "to_excel",
        "to_hdf",
        "to_feather",
        "savefig",
        "imsave",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "tofile",
        "mkdir",
        "makedirs",
        "touch",
        "unlink",
        "rmdir",
        "rmtree",
        "symlink_to",
        "hardlink_to",
    }
)

#: Modules whose ``open(file, mode)`` takes the mode second (``Path.open(mode)`` takes it first).
_OPEN_FILE_FIRST = {"io", "gzip", "bz2", "lzma", "codecs", "builtins"}


def _opens_for_writing(call: ast.Call) -> bool:
    """Whether ``call`` is an ``open`` whose mode may write (``w``, ``a``, ``x``, ``+``, or a
    mode that is not a literal); ``os.open`` always counts (its flags are not read)."""
    fn = call.func
    if isinstance(fn, ast.Name) and fn.id == "open":
        position = 1
    elif isinstance(fn, ast.Attribute) and fn.attr == "open":
        owner = fn.value.id if isinstance(fn.value, ast.Name) else None
        if owner == "os":
            return True
        position = 1 if owner in _OPEN_FILE_FIRST else 0
    else:
        return False
    mode = next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None and len(call.args) > position:
        mode = call.args[position]
    if mode is None:
        return False  # "r"
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not set(mode.value) & set("wax+"))


def file_writes(source: str, file: str) -> list[tuple[int, str]]:
    """The calls of the source that write a file (:data:`WRITING_CALLS`, ``open`` for
    writing), with their lines, wherever they sit."""
    out = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
        if name in WRITING_CALLS or _opens_for_writing(node):
            out.append((node.lineno, f"{name}(...)"))
    return sorted(out)


def privacy_file_problems(package: Path = PACKAGE) -> list[str]:
    """Every import of :data:`NO_FILES_IMPORTS` and every writing call under ``privacy/``."""
    root = package.parent
    problems = []
    for path in sorted((package / "privacy").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        found = [
            (line, mod)
            for line, mod in imported_modules(source, rel, module_name(path, root), path.name == "__init__.py")
            if any(mod == bad or mod.startswith(bad + ".") for bad in NO_FILES_IMPORTS)
        ]
        # ``from M import a`` names M and M.a: the statement once, by M
        problems += [
            f"{rel}:{line}: imports {mod}"
            for line, mod in found
            if not any(other != mod and mod.startswith(other + ".") and at == line for at, other in found)
        ]
        problems += [f"{rel}:{line}: calls {what}" for line, what in file_writes(source, rel)]
    return problems


# --------------------------------------------------------------------------- the checks
@pytest.fixture(scope="module")
def table() -> dict[str, int]:
    layers = parse_layer_table(DESIGN.read_text(encoding="utf-8"))
    assert layers, "docs/design.md has no layer table (rows '| <layer> | `unit`, ... | ... |')"
    return layers


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return collect_edges()


def test_every_unit_is_in_the_table(table):
    missing = sorted(units_on_disk(PACKAGE) - set(table))
    assert not missing, f"units under ldpsim/ missing from the layer table of docs/design.md: {', '.join(missing)}"


def test_no_import_runs_upward(table, edges):
    upward = [
        f"{e} (layer {table[e.source]} -> {table[e.target]})"
        for e in edges
        if e.source in table and e.target in table and table[e.target] > table[e.source]
    ]
    assert not upward, f"{len(upward)} imports run upward (docs/design.md, Layers):\n" + "\n".join(upward)


def test_no_import_cycle_between_units(edges, module_edges):
    # the statements DEFERRED_CYCLE_BREAKERS lists are left out here too
    listed = {
        (e.file, e.line) for e, deferred in module_edges if deferred and (e.source, e.target) in DEFERRED_CYCLE_BREAKERS
    }
    edges = [e for e in edges if (e.file, e.line) not in listed]
    found = cycles(edges)
    lines = []
    for comp in found:
        inside = [str(e) for e in edges if e.source in comp and e.target in comp]
        lines.append(f"cycle among {', '.join(comp)}:\n  " + "\n  ".join(inside))
    assert not found, "\n".join(lines)


@pytest.fixture(scope="module")
def module_edges() -> list[tuple[Edge, bool]]:
    return collect_module_edges()


def test_no_import_cycle_between_modules(module_edges):
    found = module_cycles(module_edges, DEFERRED_CYCLE_BREAKERS)
    lines = []
    for comp in found:
        inside = [
            f"{e}{' (deferred)' if deferred else ''}"
            for e, deferred in module_edges
            if e.source in comp and e.target in comp
        ]
        lines.append(f"cycle among {', '.join(comp)}:\n  " + "\n  ".join(inside))
    assert not found, "modules import each other back (move what both need to a module of its own):\n" + "\n".join(
        lines
    )


def test_every_listed_cycle_breaker_is_a_deferred_import_still_needed(module_edges):
    deferred = {(e.source, e.target) for e, d in module_edges if d}
    for pair, reason in DEFERRED_CYCLE_BREAKERS.items():
        assert reason.strip(), f"{pair}: give the reason"
        assert pair in deferred, f"{pair}: no such deferred import any more; remove it from DEFERRED_CYCLE_BREAKERS"
        rest = {k: v for k, v in DEFERRED_CYCLE_BREAKERS.items() if k != pair}
        assert module_cycles(module_edges, rest), (
            f"{pair}: breaks no cycle; import it at the top, and remove it from the list"
        )


def test_privacy_writes_no_files_and_draws_nothing():
    assert len(list((PACKAGE / "privacy").glob("*.py"))) >= 7  # the package itself, not an empty glob
    problems = privacy_file_problems()
    assert not problems, (
        "privacy writes no files and draws nothing (docs/design.md); move these to report/:\n" + "\n".join(problems)
    )


# --------------------------------------------------------------------------- the checker itself
def test_table_parser_reads_rows_with_an_integer_first_cell():
    text = "\n".join(
        [
            "| layer | units | owns |",
            "|---|---|---|",
            "| 0 | `errors`, `_rng` | foundation, see `x` |",
            "| two | `ignored` | not a layer row |",
            "| 11 | `cli`, `__init__` | front |",
        ]
    )
    assert parse_layer_table(text) == {"errors": 0, "_rng": 0, "cli": 11, "__init__": 11}
    with pytest.raises(AssertionError, match="listed in layers"):
        parse_layer_table("| 1 | `a` | x |\n| 2 | `a` | y |")


def test_the_design_table_lists_the_target_layers(table):
    assert table["errors"] == 0 and table["privacy"] == 1 and table["mechanisms"] == 2
    assert table["cli"] == table["__init__"] == table["__main__"] == 11
    assert len(set(table.values())) == 12


def test_resolution_of_absolute_relative_and_nested_imports():
    src = "\n".join(
        [
            "import numpy",
            "import ldpsim.privacy.pld as pld",
            "from ldpsim import _validate as v, FiniteMechanism",
            "from . import finite",
            "from ..utility.optimal import lp",
            "def f():",
            "    from ldpsim.sim import engine",
            "    if True:",
            "        import ldpsim",
            "from .base import Mechanism",
        ]
    )
    units = {"privacy", "_validate", "mechanisms", "utility", "sim"}
    got = edges_of_source(
        src, "ldpsim/mechanisms/noise.py", ("ldpsim", "mechanisms", "noise"), False, "mechanisms", units
    )
    assert [(e.target, e.line) for e in got] == [
        ("privacy", 2),
        ("_validate", 3),
        ("__init__", 3),
        ("utility", 5),
        ("sim", 7),
        ("__init__", 9),
    ]
    # in a package's __init__ a single dot is the package itself
    got = edges_of_source(
        "from .optimal import x\nfrom .. import errors",
        "ldpsim/utility/__init__.py",
        ("ldpsim", "utility"),
        True,
        "utility",
        {"utility", "errors"},
    )
    assert [(e.source, e.target) for e in got] == [("utility", "errors")]


def test_units_of_files():
    assert unit_of_file(PACKAGE / "runs.py", PACKAGE) == "runs"
    assert unit_of_file(PACKAGE / "__init__.py", PACKAGE) == "__init__"
    assert unit_of_file(PACKAGE / "mechanisms" / "noise" / "laplace.py", PACKAGE) == "mechanisms"
    assert module_name(PACKAGE / "mechanisms" / "__init__.py", ROOT) == ("ldpsim", "mechanisms")


def test_cycle_finder():
    def e(a, b):
        return Edge(a, b, "f.py", 1)

    assert cycles([e("a", "b"), e("b", "c")]) == []
    assert cycles([e("a", "b"), e("b", "a"), e("c", "a")]) == [["a", "b"]]
    assert cycles([e("a", "b"), e("b", "c"), e("c", "a"), e("d", "e"), e("e", "d")]) == [["a", "b", "c"], ["d", "e"]]


def test_the_file_rule_sees_what_compose_report_did_in_privacy():
    # the imports and calls of the old ldpsim/privacy/compose_report.py and plot.py
    src = "\n".join(
        [
            "from matplotlib.figure import Figure",
            "from .._files import OutputFolder",
            "from .._meta import write_json",
            "def run(table, fig, folder, path):",
            "    table.to_csv(folder / 'table.csv', index=False)",
            "    fig.savefig(path, dpi=110)",
            "    import ldpsim.report.figures",
            "    with open(path, 'w') as f, open(path) as g, path.open('rb') as h, path.open(mode) as i:",
            "        pass",
            "    from ldpsim.report import regions",
        ]
    )
    mods = imported_modules(src, "ldpsim/privacy/x.py", ("ldpsim", "privacy", "x"), False)
    bad = [(line, m) for line, m in mods if any(m == b or m.startswith(b + ".") for b in NO_FILES_IMPORTS)]
    assert [line for line, _ in bad] == [1, 1, 2, 2, 3, 3, 7, 10, 10]
    assert file_writes(src, "x.py") == [(5, "to_csv(...)"), (6, "savefig(...)"), (8, "open(...)"), (8, "open(...)")]
    assert file_writes("open(p)\nopen(p, 'rb')\nopen(p, mode='r')\nio.open(p, 'r')\nos.open(p, 0)", "x.py") == [
        (5, "open(...)")
    ]


def test_the_file_rule_fails_on_the_old_layout(tmp_path):
    package = tmp_path / "ldpsim"
    (package / "privacy").mkdir(parents=True)
    (package / "privacy" / "__init__.py").write_text("")
    (package / "privacy" / "compose_report.py").write_text(
        "from .._files import OutputFolder\nfrom .plot import plot_regions\ndef f(fig, p):\n    fig.savefig(p)\n"
    )
    (package / "privacy" / "plot.py").write_text("from matplotlib.figure import Figure\n")
    assert privacy_file_problems(package) == [
        "ldpsim/privacy/compose_report.py:1: imports ldpsim._files",
        "ldpsim/privacy/compose_report.py:4: calls savefig(...)",
        "ldpsim/privacy/plot.py:1: imports matplotlib.figure",
    ]


def test_module_edges_name_modules_and_see_deferred_imports():
    modules = {
        "ldpsim",
        "ldpsim.analyst",
        "ldpsim.sim.scenario",
        "ldpsim.sim.scenario.survey",
        "ldpsim.sim.scenario.common",
        "ldpsim.sim.scenario.questions",
        "ldpsim.errors",
    }
    src = "\n".join(
        [
            "from ldpsim.errors import LdpSimError",
            "from ldpsim.sim.scenario import common, load_scenario",
            "from .survey import ScenarioSpec",
            "def f():",
            "    from ldpsim.analyst import bucket",
            "    import ldpsim.sim.scenario.survey",
            "from ldpsim import LdpSimError",
            "import numpy",
        ]
    )
    got = module_edges_of_source(src, "q.py", ("ldpsim", "sim", "scenario", "questions"), False, modules)
    assert [(e.target, e.line, d) for e, d in got] == [
        ("ldpsim.errors", 1, False),
        ("ldpsim.sim.scenario.common", 2, False),
        ("ldpsim.sim.scenario", 2, False),
        ("ldpsim.sim.scenario.survey", 3, False),
        ("ldpsim.analyst", 5, True),
        ("ldpsim.sim.scenario.survey", 6, True),
        ("ldpsim", 7, False),
    ]


def test_the_module_cycle_check_finds_the_old_survey_questions_circle(tmp_path):
    scenario = tmp_path / "ldpsim" / "sim" / "scenario"
    scenario.mkdir(parents=True)
    for package in (tmp_path / "ldpsim", tmp_path / "ldpsim" / "sim"):
        (package / "__init__.py").write_text("")
    (scenario / "__init__.py").write_text("from ldpsim.sim.scenario.survey import Scenario, parse_survey\n")
    (scenario / "common.py").write_text("")
    # as they were: questions imported survey's specs, survey imported questions inside functions
    (scenario / "questions.py").write_text(
        "from ldpsim.sim.scenario.common import Model\n"
        "from ldpsim.sim.scenario.survey import ScenarioSpec, _build_mechanism\n"
    )
    (scenario / "survey.py").write_text(
        "from ldpsim.sim.scenario.common import Model\n"
        "def parse_survey():\n"
        "    from ldpsim.sim.scenario.questions import QuestionsScenarioSpec\n"
    )
    edges = collect_module_edges(tmp_path / "ldpsim")
    assert module_cycles(edges, {}) == [["ldpsim.sim.scenario.questions", "ldpsim.sim.scenario.survey"]]
    # a listed deferred import breaks it; a top-level one cannot be listed away
    allowed = {("ldpsim.sim.scenario.survey", "ldpsim.sim.scenario.questions"): "a test"}
    assert module_cycles(edges, allowed) == []
    assert module_cycles(edges, {("ldpsim.sim.scenario.questions", "ldpsim.sim.scenario.survey"): "a test"}) != []
