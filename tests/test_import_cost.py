"""``import ldpsim`` and ``ldpsim --help`` stay light: the package fronts import their names
on first use (PEP 562), the command line imports each command's needs in its handler and
the Python workflow (``ldpsim.Scenario``) loads the simulation and the report on first use.
The fronts of docs/design.md ("Imports at the top"), whose imports inside functions
tests/test_deferred_imports.py allows, are modules these checks import.
Checked by which modules a fresh interpreter loaded, not by timing (robust on a shared
machine): none of the heavy packages may appear."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

HEAVY = ("pandas", "scipy", "matplotlib", "simpy", "pydantic")

PRINT_HEAVY = f"import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"


def _python(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize(
    "code",
    [
        "import ldpsim",
        "import ldpsim.mechanisms",
        "from ldpsim.mechanisms import randomized_response, FiniteMechanism; randomized_response(3, 1.0)",
        "import ldpsim.cli",
        "import ldpsim.errors; from ldpsim import LdpSimError",
        "import ldpsim.workflow; from ldpsim import Scenario, load_run",
    ],
)
def test_imports_load_no_heavy_package(code):
    assert _python("-c", f"{code}; {PRINT_HEAVY}").stdout.strip() == "[]"


def test_help_loads_no_heavy_package():
    # the real command line (python -m ldpsim), its imports listed by -X importtime on stderr
    proc = _python("-X", "importtime", "-m", "ldpsim", "--help")
    assert proc.stdout.startswith("usage: ldpsim")
    loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "ldpsim.cli" in loaded  # the listing works
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []


def test_usage_error_and_version_load_no_heavy_package():
    wrapper = (
        "import contextlib, io, sys\n"
        "from ldpsim.cli import main\n"
        "for argv in (['--version'], ['run', '--help'], ['compose', '--help'], ['nonsense']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        f"{PRINT_HEAVY}\n"
    )
    assert _python("-c", wrapper).stdout.strip() == "[]"


@pytest.mark.parametrize(
    "package",
    [
        "ldpsim",
        "ldpsim.mechanisms",
        "ldpsim.utility",
        "ldpsim.protocols",
        "ldpsim.sim",
        "ldpsim.reproduce",
        "ldpsim.analyst",
    ],
)
def test_every_public_name_resolves_and_is_listed(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name
        exec(f"from {package} import {name}", {})
    assert set(mod.__all__) <= set(dir(mod))
    with pytest.raises(AttributeError):
        getattr(mod, "no_such_name")


def test_the_analyse_command_loads_no_package_it_does_not_use(tmp_path):
    # ldpsim analyse starts in about half the time without these: SimPy, pydantic, matplotlib,
    # scipy.stats, and scipy.optimize with the sparse and dense linear algebra it loads
    # (docs/analyse.md, "How fast")
    reports = tmp_path / "r.csv"
    reports.write_text("report\n0101\n1100\n0010\n")
    wrapper = (
        "import sys\n"
        "from ldpsim.cli import main\n"
        f"assert main(['analyse', {str(reports)!r}, '--mechanism', 'oue:k=4,eps=1', '--seed', '1', "
        f"'--out', {str(tmp_path / 'out')!r}, '--no-progress']) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'simpy', 'pydantic'}), "
        "sorted(m for m in sys.modules if m.split('.')[:2] in (['scipy', 'stats'], ['scipy', 'optimize'], "
        "['scipy', 'sparse'], ['scipy', 'fft'], ['scipy', 'linalg'])))\n"
    )
    assert _python("-c", wrapper).stdout.strip().splitlines()[-1] == "[] []"


def test_lazy_names_are_the_defining_modules_objects():
    import ldpsim
    import ldpsim.analyst
    import ldpsim.mechanisms.noise
    import ldpsim.utility.bounds
    import ldpsim.utility.optimal

    assert ldpsim.optimal_mechanism is ldpsim.utility.optimal.optimal_mechanism
    assert ldpsim.frequency_estimate is ldpsim.analyst.frequency_estimate
    assert ldpsim.mechanisms.Laplace is ldpsim.mechanisms.noise.Laplace
    assert ldpsim.utility.bounds is sys.modules["ldpsim.utility.bounds"]
    assert isinstance(ldpsim.__version__, str) and ldpsim.__version__


def test_a_name_shared_with_a_submodule_stays_the_function():
    # importing the submodule ldpsim.mechanisms.randomized_response first must not shadow
    # the function of the same name in the package front (fresh interpreter: fixed order)
    code = (
        "import ldpsim.mechanisms.randomized_response, types\n"
        "from ldpsim.mechanisms import randomized_response\n"
        "import ldpsim\n"
        "assert not isinstance(randomized_response, types.ModuleType)\n"
        "assert ldpsim.randomized_response is randomized_response\n"
        "print(randomized_response(2, 1.0).k)\n"
    )
    assert _python("-c", code).stdout.strip() == "2"


def test_submodules_stay_reachable_as_attributes():
    code = (
        "import ldpsim, types; print(isinstance(ldpsim.mechanisms.noise, types.ModuleType), "
        "ldpsim.errors.LdpSimError.__name__)"
    )
    assert _python("-c", code).stdout.split() == ["True", "LdpSimError"]
