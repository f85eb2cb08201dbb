"""RunOptions: the one value that says how a run is carried out (ldpsim/runs.py). Checked
once when made, each bad field one line naming its command-line option; given together
with keywords it refuses rather than drop either; a resume takes no seed, count or folder."""

from __future__ import annotations

import dataclasses

import pytest

from ldpsim.errors import LdpSimError
from ldpsim.runs import MAX_SHARDS, RunOptions
from ldpsim.sim import resume_run, run_scenario


@pytest.mark.parametrize(
    "field, value, option",
    [
        ("workers", 0, "--workers"),
        ("workers", True, "--workers"),
        ("workers", 1.5, "--workers"),
        ("replications", 0, "--replications"),
        ("replications", False, "--replications"),
        ("replications", "3", "--replications"),
        ("shards", 0, "--shards"),
        ("shards", MAX_SHARDS + 1, "--shards"),
    ],
)
def test_a_bad_field_is_one_line_naming_its_option(field, value, option):
    with pytest.raises(LdpSimError) as caught:
        RunOptions(**{field: value})
    message = str(caught.value)
    assert message.startswith(f"{option}: got {value!r}") and "\n" not in message


def test_defaults_are_those_of_the_keywords():
    """The dataclass's defaults and run_scenario's keyword defaults are one and the same."""
    import inspect

    keywords = inspect.signature(run_scenario).parameters
    for field in dataclasses.fields(RunOptions):
        assert keywords[field.name].default == field.default, field.name


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().workers = 2  # type: ignore[misc]


def test_options_and_keywords_together_are_refused(tmp_path):
    with pytest.raises(LdpSimError, match=r"^options: got a RunOptions and replications, workers too"):
        run_scenario("survey.toml", workers=2, replications=3, options=RunOptions(progress=False))
    with pytest.raises(LdpSimError, match=r"^options: got 3, expected a RunOptions or None$"):
        run_scenario("survey.toml", options=3)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("field, value", [("seed", 4), ("replications", 2), ("out", "elsewhere")])
def test_a_resume_takes_the_runs_own_seed_count_and_folder(field, value, tmp_path):
    with pytest.raises(LdpSimError, match=rf"^options: got {field}=.*, expected None on a resume"):
        resume_run(tmp_path, options=RunOptions(**{field: value}))
