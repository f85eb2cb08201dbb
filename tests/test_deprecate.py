"""Old spellings kept for one release (ldpsim/_deprecate.py): the helpers themselves, then
every deprecated spelling of the library (same value as the new one, and a warning).

The test configuration turns every "ldpsim: " DeprecationWarning into an error, so an old
spelling is only ever used here, under ``pytest.warns``."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ldpsim._deprecate import PREFIX, renamed, renamed_attribute
from ldpsim.errors import LdpSimError

HERE = str(Path(__file__).resolve())


# --------------------------------------------------------------------------- the helpers
@renamed(old="k", new="compositions", since="0.1", removed_in="0.2")
def scaled(eps, compositions=1, *, factor=1.0):
    return eps * compositions * factor


class Family:
    @classmethod
    @renamed(old="k", new="compositions", since="0.1", removed_in="0.2")
    def make(cls, eps, compositions=1):
        return (cls.__name__, eps, compositions)


class Child(Family):
    pass


class Box:
    def __init__(self, parties):
        self.parties = parties

    k = renamed_attribute(old="k", new="parties", since="0.1", removed_in="0.2")


def test_renamed_keyword_warns_with_both_spellings_and_the_release():
    with pytest.warns(DeprecationWarning) as rec:
        assert scaled(0.5, k=4) == scaled(0.5, compositions=4) == 2.0
    assert len(rec) == 1
    assert str(rec[0].message) == (
        "ldpsim: keyword k= of scaled is deprecated; use compositions= (k= goes away in 0.2)"
    )


def test_the_warning_points_at_the_caller():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        line = _line() + 1  # the line of the call below
        scaled(1.0, k=2)
        attr_line = _line() + 1
        Box(3).k  # noqa: B018
    assert [(str(Path(r.filename).resolve()), r.lineno) for r in rec] == [(HERE, line), (HERE, attr_line)]


def _line() -> int:
    import inspect

    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


def test_new_spelling_and_positional_calls_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scaled(0.5, 4) == scaled(0.5, compositions=4) == scaled(0.5, 4, factor=1.0) == 2.0
        assert Child.make(1.0, 3) == ("Child", 1.0, 3)


@pytest.mark.parametrize(
    "call",
    [lambda: scaled(0.5, compositions=4, k=4), lambda: scaled(0.5, 4, k=4), lambda: Family.make(1.0, 2, k=2)],
    ids=["both-keywords", "positional-and-keyword", "classmethod"],
)
def test_both_spellings_is_an_error_naming_the_parameter(call):
    with pytest.raises(
        LdpSimError, match=r"^compositions: got \{'compositions': \d, 'k': \d\}, expected one of compositions= and k="
    ):
        call()


def test_classmethod_warning_names_the_class_called():
    with pytest.warns(DeprecationWarning, match=r"^ldpsim: keyword k= of Child\.make is deprecated; use compositions="):
        assert Child.make(1.0, k=3) == ("Child", 1.0, 3)


def test_renamed_attribute_warns_and_reads_the_new_one():
    box = Box(6)
    with pytest.warns(DeprecationWarning) as rec:
        assert box.k == 6
    assert str(rec[0].message) == "ldpsim: attribute k of Box is deprecated; use parties (k goes away in 0.2)"
    with pytest.raises(AttributeError):
        box.k = 7  # read-only: the alias never becomes a second copy


def test_renamed_records_and_refuses_a_wrong_signature():
    assert scaled.__ldpsim_renamed__ == {"k": {"new": "compositions", "since": "0.1", "removed_in": "0.2"}}
    with pytest.raises(TypeError, match="must take 'compositions'"):
        renamed(old="k", new="compositions", since="0.1", removed_in="0.2")(lambda eps, k=1: eps)


def test_the_test_suite_turns_ldpsim_deprecations_into_errors():
    # pyproject.toml's filterwarnings: an old spelling outside pytest.warns fails the test
    with pytest.raises(DeprecationWarning, match="^ldpsim: "):
        scaled(1.0, k=2)
    assert PREFIX == "ldpsim: "


# --------------------------------------------------------------------------- the library's old spellings
@pytest.mark.parametrize("family", ["Gaussian", "Laplace", "Staircase", "Geometric"])
def test_calibrate_k_is_compositions(family):
    import ldpsim.mechanisms.noise as noise

    cls = getattr(noise, family)
    delta = 1e-5
    new = cls.calibrate(1.0, delta, 1.0, compositions=10)
    with pytest.warns(
        DeprecationWarning,
        match=rf"^ldpsim: keyword k= of {family}\.calibrate is deprecated; use compositions= \(k= goes away in 0\.2\)$",
    ):
        old = cls.calibrate(1.0, delta, 1.0, k=10)
    assert old == new and old.params == new.params
    assert cls.calibrate(1.0, delta, 1.0, 10) == new  # positional: unchanged, no warning
    with pytest.raises(LdpSimError, match="^compositions: "):
        cls.calibrate(1.0, delta, compositions=10, k=10)


def test_calibrate_k_with_method_as_documented_in_0_1():
    from ldpsim.mechanisms import Gaussian

    with pytest.warns(DeprecationWarning, match="keyword k= of Gaussian.calibrate"):
        old = Gaussian.calibrate(1.0, 1e-5, k=10, method="corollary")
    assert old.sigma == Gaussian.calibrate(1.0, 1e-5, compositions=10, method="corollary").sigma


def test_protocol_k_is_parties():
    from ldpsim.protocols import Protocol

    p = Protocol.universal(1.0, 0.0, parties=6)
    assert p.parties == 6 and repr(p) == "Protocol('universal', parties=6)"
    with pytest.warns(
        DeprecationWarning,
        match=r"^ldpsim: attribute k of Protocol is deprecated; use parties \(k goes away in 0\.2\)$",
    ):
        assert p.k == 6


def test_task_k_is_parties():
    from ldpsim.protocols import Task

    t = Task.majority(5)
    assert t.parties == 5
    with pytest.warns(DeprecationWarning, match=r"^ldpsim: attribute k of Task is deprecated; use parties"):
        assert t.k == 5


def test_compose_dash_k_is_compositions_with_a_notice(cli, tmp_path):
    common = ["compose", "--eps", "0.1", "--delta", "0.001", "--eps-total", "0.5", "1", "--no-figure"]
    new = cli(*common, "--compositions", "30", "--out", "out", cwd=tmp_path)
    old = cli(*common, "-k", "30", "--out", "out_k", cwd=tmp_path)  # a new folder: outputs never overwrite
    assert new.returncode == old.returncode == 0
    assert old.stdout.replace("out_k", "out") == new.stdout and "30-fold composition" in new.stdout
    assert new.stderr == ""
    assert old.stderr == "ldpsim: -k is deprecated; use --compositions (-k goes away in 0.2)\n"
    both = cli(*common, "-k", "30", "--compositions", "30", cwd=tmp_path)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    neither = cli(*common, cwd=tmp_path)
    assert neither.returncode == 2 and "--compositions" in neither.stderr


# --------------------------------------------------------------------------- moved names
MOVED = [  # (old module, name, new module): every spelling the README of 0.1 used
    ("ldpsim.runs", "run_scenario", "ldpsim.sim"),
    ("ldpsim.runs", "resume_run", "ldpsim.sim"),
    ("ldpsim.analyst.audit", "audit", "ldpsim.audit"),
    ("ldpsim.analyst.audit", "audit_sequential", "ldpsim.audit"),
    ("ldpsim.analyst.targets", "target", "ldpsim.audit.targets"),
]


@pytest.mark.parametrize("old, name, new", MOVED)
def test_moved_names_warn_and_are_the_new_objects(old, name, new):
    import importlib

    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"^ldpsim: {old}\.{name} is deprecated; use {new}\.{name} "):
        got = getattr(module, name)
    assert got is getattr(importlib.import_module(new), name)


def test_a_moved_module_knows_only_its_moved_names():
    import ldpsim.analyst.audit as old

    with pytest.raises(AttributeError, match="has no attribute 'nonesuch'"):
        old.nonesuch  # noqa: B018
