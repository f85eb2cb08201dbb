"""Packaging: the licence, the PEP 561 marker, the scenarios shipped inside the package and
reachable by name (:mod:`ldpsim._shipped`), and the built wheel installed alone.

The wheel is built with ``pip wheel --no-deps --no-build-isolation`` (the PEP 517 backend
that ``python -m build`` would call; ``build`` itself is not a dependency, and without
isolation nothing is downloaded: the dev extra brings setuptools>=77). It is built from a
copy of the sources in a temporary folder, so the checkout gets no ``build/`` or
``*.egg-info`` from the test. It is then installed alone (``--no-deps --no-index``) into a
fresh venv that sees this environment's site-packages for numpy, scipy, pandas and the
rest, and the quick start runs from an empty folder with that venv's ``ldpsim``.

"This environment" is the interpreter running the tests, a virtual environment or not:
the test venv has no packages of its own and a ``.pth`` file naming this interpreter's
site-packages folders. (``venv --system-site-packages`` would not do: made from inside a
virtual environment it reaches the *base* interpreter's packages, which a user's fresh
venv does not have.) Nothing is downloaded.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from ldpsim import _shipped
from ldpsim.errors import LdpSimError

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


# --------------------------------------------------------------------------- metadata
def test_the_licence_is_mit_and_pyproject_says_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the ldpsim authors" in text
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project.get("classifiers", []))  # the expression says it
    for url in project.get("urls", {}).values():  # none is known yet; any one given must be a real address
        assert re.fullmatch(r"https://\S+", url), url


def test_the_build_requirement_and_the_dev_extra_agree():
    """The licence expression needs setuptools>=77; the dev extra installs it so this file's
    build runs without isolation."""
    assert PYPROJECT["build-system"]["requires"] == ["setuptools>=77.0.1"]
    assert "setuptools>=77.0.1" in [
        d.split("#")[0].strip() for d in PYPROJECT["project"]["optional-dependencies"]["dev"]
    ]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_minimum_versions_ci_installs_are_the_declared_lower_bounds():
    """.ci/run's quick pass with the oldest versions allowed pins each dependency (runtime
    and dev; dask's extras by their packages) to exactly the lower bound pyproject.toml
    declares, so the bounds users rely on are the tested ones."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    pins = {}
    for line in (ROOT / ".ci" / "minimum-versions.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[_name(name)] = Version(version)
    project = PYPROJECT["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["dev"]
    for text in declared:
        req = Requirement(text.split("#")[0].strip())
        lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert len(lower) == 1, f"{text}: one lower bound expected"
        assert pins.get(_name(req.name)) == lower[0], (
            f"{req.name}: declared >= {lower[0]}, pinned {pins.get(_name(req.name))}"
        )
        assert str(lower[0]).count(".") == 2, f"{text}: the bound as a full version (x.y.z), as published"
    assert pins["distributed"] == pins["dask"]  # dask[distributed] at its own version
    assert set(pins) == {_name(Requirement(t.split("#")[0]).name) for t in declared} | {"distributed"}


def _third_party_imports(package: Path) -> dict[str, str]:
    """Top-level module -> first file importing it, for every module outside the standard
    library imported by the package's code (the shipped scenarios' data folder holds a script
    that rebuilt a table, not package code)."""
    found: dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        if (package / "scenarios") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "ldpsim" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_module_the_package_imports_is_a_declared_dependency():
    """The venv of the wheel test borrows this environment's packages, so it would not notice
    an undeclared one; this does."""
    from importlib.metadata import packages_distributions

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    def names(deps: list[str]) -> set[str]:
        return {norm(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for d in deps}

    declared = names(PYPROJECT["project"]["dependencies"])
    # an optional extra's modules, imported only by the module that needs them (and that
    # names the extra in one line when they are missing)
    optional = {"distributed": ("distributed", "ldpsim/cluster.py")}
    dists = packages_distributions()
    missing = {}
    for module, where in _third_party_imports(ROOT / "ldpsim").items():
        provided = {norm(d) for d in dists.get(module, [module])}
        if declared & provided:
            continue
        extra, user = optional.get(module, (None, None))
        if (
            extra is not None
            and where == user
            and names(PYPROJECT["project"]["optional-dependencies"][extra]) & (provided | {"dask"})
        ):
            continue
        missing[module] = where
    assert not missing, f"imported but not in [project] dependencies: {missing}"


def test_py_typed_and_the_scenarios_are_package_data():
    assert (ROOT / "ldpsim" / "py.typed").is_file()
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["ldpsim"]
    assert {"py.typed", "scenarios/*.toml", "scenarios/README.md", "scenarios/data/*"} <= set(data)


def test_the_top_level_scenarios_folder_is_a_relative_symlink_to_the_shipped_one():
    link = ROOT / "scenarios"
    assert link.is_symlink() and os.readlink(link) == "ldpsim/scenarios"
    assert link.resolve() == (ROOT / "ldpsim" / "scenarios").resolve() == _shipped.FOLDER.resolve()


# --------------------------------------------------------------------------- shipped scenarios
def test_names_are_the_shipped_files_sorted():
    names = _shipped.names()
    assert names == sorted(p.stem for p in (ROOT / "ldpsim" / "scenarios").glob("*.toml"))
    assert {"survey", "anes96", "telemetry_daily"} <= set(names)


def test_describe_gives_one_short_line_per_scenario():
    rows = _shipped.describe()
    assert [name for name, _ in rows] == _shipped.names()
    for name, line in rows:
        assert line and "\n" not in line and len(line) <= _shipped.DESCRIPTION_WIDTH, name
        full = " ".join(tomllib.loads((_shipped.FOLDER / f"{name}.toml").read_text())["description"].split())
        assert full == line or (line.endswith("...") and full.startswith(line[:-3])), name
        assert line == full or full[len(line) - 3] in " ,;:-", f"{name}: cut inside a word"


def test_shorten_cuts_at_a_word_boundary():
    assert _shipped.shorten("a  short\n text") == "a short text"
    assert _shipped.shorten("alpha beta gamma delta", width=14) == "alpha beta..."
    assert _shipped.shorten("alpha, beta gamma", width=12) == "alpha..."
    assert _shipped.shorten("x" * 20, width=10) == "xxxxxxx..."


def test_resolve_prefers_an_existing_file_then_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = _shipped.FOLDER / "survey.toml"
    assert _shipped.resolve("survey") == shipped and _shipped.resolve("survey.toml") == shipped
    own = tmp_path / "survey.toml"
    own.write_text("name = 'mine'\n")
    assert _shipped.resolve("survey.toml") == Path("survey.toml")  # the user's file wins
    assert _shipped.resolve("survey") == shipped
    assert _shipped.resolve(str(ROOT / "scenarios" / "survey.toml")) == ROOT / "scenarios" / "survey.toml"


@pytest.mark.parametrize(
    "arg, hint",
    [
        ("survy", "did you mean 'survey'?; "),
        ("scenarios/survy.toml", "did you mean 'survey'?; "),
        ("no-such-thing", ""),
        ("", ""),
    ],
)
def test_resolve_rejects_anything_else_in_one_line(tmp_path, monkeypatch, arg, hint):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LdpSimError) as info:
        _shipped.resolve(arg)
    assert str(info.value) == (
        f"file: got {arg!r}, expected a scenario file or a shipped scenario name ({hint}ldpsim scenarios lists them)"
    )


def test_resolve_rejects_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    with pytest.raises(LdpSimError, match="^file: got 'dir', expected a scenario file"):
        _shipped.resolve("dir")


def test_copy_writes_the_scenario_and_its_data_which_then_load(tmp_path):
    from ldpsim.sim import load_scenario

    written = _shipped.copy("anes96_party", tmp_path / "mine")
    rel = [p.relative_to(tmp_path / "mine").as_posix() for p in written]
    assert rel == ["anes96_party.toml", "data/anes96.csv", "data/README.md"]
    for p, r in zip(written, rel):
        assert p.read_bytes() == (_shipped.FOLDER / r).read_bytes()
    assert not list((tmp_path / "mine").rglob(".*.tmp"))  # atomic writes leave no temporaries
    copied = load_scenario(written[0])  # the relative data path works in the copy
    shipped = load_scenario(_shipped.FOLDER / "anes96_party.toml")
    assert copied.size == shipped.size == 1_000_000


def test_copy_of_a_scenario_without_data_is_one_file(tmp_path):
    assert _shipped.copy("survey.toml", tmp_path) == [tmp_path / "survey.toml"]


def test_copy_refuses_to_overwrite_and_then_writes_nothing(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text("mine")
    monkeypatch.chdir(tmp_path.parent)  # a short path: a long one is shortened in the message
    with pytest.raises(LdpSimError) as info:
        _shipped.copy("anes96", Path(tmp_path.name))
    assert str(info.value) == (
        f"copy: got {str(Path(tmp_path.name) / 'data' / 'README.md')!r}, expected "
        "a file that does not exist yet (--force overwrites it)"
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["README.md", "data"]  # nothing else written
    assert (tmp_path / "data" / "README.md").read_text() == "mine"
    written = _shipped.copy("anes96", tmp_path, force=True)
    assert (
        len(written) == 3
        and (tmp_path / "data" / "README.md").read_bytes() == (_shipped.FOLDER / "data" / "README.md").read_bytes()
    )


def test_copy_rejects_an_unknown_name_and_a_file_as_folder(tmp_path):
    with pytest.raises(
        LdpSimError,
        match=(
            r"^name: got 'anes', expected a shipped scenario name "
            r"\(did you mean 'anes96'\?; ldpsim scenarios lists them\)$"
        ),
    ):
        _shipped.copy("anes", tmp_path)
    (tmp_path / "f").write_text("")
    with pytest.raises(LdpSimError, match=r"^--to: got '.*f', expected a folder \(or a path to create\)$"):
        _shipped.copy("survey", tmp_path / "f")


@pytest.mark.parametrize("folder", ["scenarios", "ldpsim/scenarios"])
def test_scenarios_reading_data_load_through_either_path(folder):
    from ldpsim.sim import load_scenario

    assert load_scenario(ROOT / folder / "anes96_crosstab.toml").size == 1_000_000


# --------------------------------------------------------------------------- the wheel
def _setuptools_version() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(x) for x in re.findall(r"\d+", version("setuptools"))[:2])


def _run(cmd: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def _borrowed_site_packages() -> list[str]:
    """The site-packages folders of the interpreter running the tests, in its order (those
    of a virtual environment when it runs in one, the base's only when that venv sees them)."""
    found = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        found.append(site.getusersitepackages())
    return [p for p in dict.fromkeys(found) if Path(p).is_dir()]


def _venv_borrowing_this_environment(venv: Path, cwd: Path, env: dict) -> Path:
    """A fresh venv, without pip or packages of its own, that imports this interpreter's
    packages after its own (plain folders in a .pth file: the .pth files in them, such as an
    editable install's finder, are not run, so its own ldpsim comes only from what is
    installed into it). Returns its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd, env)
    python = venv / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd, env).stdout.strip()
    assert Path(purelib).resolve().is_relative_to(venv.resolve()), purelib
    (Path(purelib) / "borrowed-from-the-tests.pth").write_text("".join(f"{p}\n" for p in _borrowed_site_packages()))
    return python


def test_the_test_venv_imports_this_interpreters_packages(tmp_path):
    """The dependencies the wheel test's venv finds are the ones this interpreter imports:
    in a virtual environment, that venv's, not the base interpreter's (where a user's fresh
    venv has none: ModuleNotFoundError: No module named 'pandas')."""
    import numpy
    import pandas

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    python = _venv_borrowing_this_environment(tmp_path / "venv", tmp_path, env)
    code = "import sys, numpy, pandas; print(numpy.__file__); print(pandas.__file__); print(sys.prefix)"
    got = _run([python, "-c", code], tmp_path, env).stdout.split()
    assert got[:2] == [numpy.__file__, pandas.__file__]
    assert Path(got[2]).resolve() == (tmp_path / "venv").resolve()
    missing = _run([python, "-c", "import importlib.util as u; print(u.find_spec('ldpsim'))"], tmp_path / "venv", env)
    assert missing.stdout.strip() == "None", "the venv sees this environment's own ldpsim (an editable finder ran)"


def test_the_wheel_installed_alone_runs_the_quick_start(tmp_path):
    assert _setuptools_version() >= (77,), "the wheel build needs setuptools>=77: pip install -e '.[dev]'"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    # build from a copy of what the wheel is made of, so the checkout stays clean
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "ldpsim", src / "ldpsim", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", src, "--no-deps", "--no-build-isolation", "-q", "-w", dist],
        tmp_path,
        env,
    )
    (wheel,) = dist.glob("ldpsim-*.whl")

    files = zipfile.ZipFile(wheel).namelist()
    expected = {
        "ldpsim/py.typed",
        "ldpsim/scenarios/README.md",
        "ldpsim/scenarios/data/anes96.csv",
        "ldpsim/scenarios/data/README.md",
        "ldpsim/_shipped.py",
        "ldpsim/cli.py",
        *(f"ldpsim/scenarios/{n}.toml" for n in _shipped.names()),
    }
    assert expected <= set(files), sorted(expected - set(files))
    sources = {p.relative_to(src).as_posix() for p in (src / "ldpsim").rglob("*") if p.is_file()}
    assert sources <= set(files), (
        f"files under ldpsim/ missing from the wheel (package-data?): {sorted(sources - set(files))}"
    )
    assert not [f for f in files if not f.startswith(("ldpsim/", "ldpsim-"))], "only the package and its dist-info"
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc") or "/tests/" in f or f.endswith(".tmp")]
    info = next(f for f in files if f.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert "License-Expression: MIT" in metadata and any(f.endswith(".dist-info/licenses/LICENSE") for f in files)

    # a fresh venv that borrows this environment's dependencies but holds its own ldpsim
    venv = tmp_path / "venv"
    python, ldpsim = _venv_borrowing_this_environment(venv, tmp_path, env), venv / "bin" / "ldpsim"
    install = [python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q", wheel]
    _run(install, tmp_path, env)  # pip comes from this environment; it installs into the venv

    empty = tmp_path / "empty"
    empty.mkdir()
    where = _run(
        [python, "-c", "import ldpsim, sys; print(ldpsim.__file__); print(sys.prefix)"], empty, env
    ).stdout.split()
    assert Path(where[0]).resolve().is_relative_to(venv.resolve()), f"the venv imports {where[0]}, not its own wheel"

    # the quick start, by name, with nothing but the installed wheel
    resolved = _run(
        [python, "-c", "from ldpsim._shipped import resolve; print(resolve('survey'))"], empty, env
    ).stdout.strip()
    assert Path(resolved).resolve().is_relative_to(venv.resolve())
    listing = _run([ldpsim, "scenarios"], empty, env).stdout.splitlines()
    assert [line.split()[0] for line in listing] == _shipped.names()
    out = tmp_path / "run"
    done = _run([ldpsim, "run", "survey", "--out", out, "--no-progress"], empty, env)
    assert (out / "summary.md").is_file() and "report:" in done.stdout
    assert not list(empty.iterdir()), "the run wrote into the current folder"
