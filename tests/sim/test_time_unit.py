"""``simulation.time_unit``: the unit of a scenario's times. It parses, defaults to a
neutral "time units", is validated (one line naming the key), and every figure axis and
summary.md line that shows a time, a delay or a period states it; the shipped scenarios
name theirs.

Figures are checked before they become PNG bytes: each report module's ``png_bytes`` is
wrapped to record the axis labels of the figure it is given.
"""

from __future__ import annotations

import tomllib

import matplotlib.pyplot as plt
import pytest

import ldpsim
from ldpsim import LdpSimError, _shipped
from ldpsim.report.figures import amount, in_unit, period_label
from ldpsim.sim import parse_scenario, run_scenario
from ldpsim.sim.scenario.common import DEFAULT_TIME_UNIT
from tests.sim.helpers import MULTIPARTY, SCENARIOS, collection_text, scenario_text


def _with_unit(text: str, unit: str) -> str:
    """``text`` with ``time_unit = unit`` (TOML) at the top of its ``[simulation]`` table."""
    assert text.count("[simulation]\n") == 1
    return text.replace("[simulation]\n", f"[simulation]\ntime_unit = {unit}\n")


def _labels(monkeypatch: pytest.MonkeyPatch, module: str) -> dict[str, list[str]]:
    """Record ``xlabel``/``ylabel`` of every axis of every figure ``module`` turns into PNG
    bytes (keys ``x`` and ``y``, in drawing order)."""
    import importlib

    mod = importlib.import_module(module)
    seen: dict[str, list[str]] = {"x": [], "y": []}
    original = mod.png_bytes

    def recording(fig):
        for ax in fig.axes:
            if ax.get_visible() and ax.axison:  # (a panel of text has no axes to label)
                seen["x"].append(ax.get_xlabel())
                seen["y"].append(ax.get_ylabel())
        return original(fig)

    monkeypatch.setattr(mod, "png_bytes", recording)
    return seen


# ----------------------------------------------------------------------------- the key
@pytest.mark.parametrize(
    "text", [scenario_text(), MULTIPARTY, collection_text()], ids=["survey", "multiparty", "collection"]
)
def test_every_kind_defaults_to_a_neutral_unit_and_takes_one(text: str) -> None:
    assert parse_scenario(text).spec.simulation.time_unit == DEFAULT_TIME_UNIT == "time units"
    assert parse_scenario(_with_unit(text, '"hours"')).spec.simulation.time_unit == "hours"


@pytest.mark.parametrize("unit", ['"µs"', '"trading days"', '"half-hours"', '"sec."'])
def test_short_unit_names_parse(unit: str) -> None:
    assert parse_scenario(_with_unit(scenario_text(), unit)).spec.simulation.time_unit == unit.strip('"')


@pytest.mark.parametrize(
    ("unit", "shown"),
    [
        ('""', "got ''"),
        ('"days "', "got 'days '"),
        ('"3 days"', "got '3 days'"),
        ('"days | hours"', "got 'days | hours'"),
        ('"<b>days</b>"', "got '<b>days</b>'"),
        ('"' + "d" * 31 + '"', "got 'ddd"),
        ("1", "(got 1)"),
        ("true", "(got True)"),
    ],
    ids=["empty", "trailing space", "starts with a digit", "markup pipe", "markup tag", "too long", "number", "bool"],
)
def test_bad_units_are_one_line_naming_the_key_and_the_value(unit: str, shown: str) -> None:
    with pytest.raises(LdpSimError) as err:
        parse_scenario(_with_unit(scenario_text(), unit), "bad.toml")
    msg = str(err.value)
    assert msg.startswith("bad.toml: simulation.time_unit: ") and "\n" not in msg
    assert shown in msg
    if unit.startswith('"'):  # our own check says what it expected; a wrong type is pydantic's
        assert "expected a short name of the unit" in msg and "'days'" in msg


def test_a_misspelt_key_suggests_time_unit() -> None:
    for text in (scenario_text(), MULTIPARTY, collection_text()):
        with pytest.raises(LdpSimError, match=r"simulation\.time_unt: no such key \(did you mean 'time_unit'\?\)"):
            parse_scenario(text.replace("[simulation]\n", '[simulation]\ntime_unt = "days"\n'))


def test_a_python_override_is_validated_like_the_file() -> None:
    scenario = ldpsim.Scenario.from_text(scenario_text())
    assert scenario.with_overrides(time_unit="minutes").spec.simulation.time_unit == "minutes"
    with pytest.raises(LdpSimError, match=r"^simulation\.time_unit: got '', expected a short name"):
        scenario.with_overrides(time_unit="")


def test_every_shipped_scenario_names_its_unit_as_its_comments_do() -> None:
    for name in _shipped.names():
        text = (SCENARIOS / f"{name}.toml").read_text()
        unit = tomllib.loads(text)["simulation"].get("time_unit")
        assert unit in ("days", "seconds"), name
        for other in {"days", "seconds"} - {unit}:
            assert f"Time is in {other}" not in text, name


# ----------------------------------------------------------------------------- label text
def test_label_text() -> None:
    assert in_unit("time", "days") == "time (days)"
    assert [
        amount(v, u)
        for v, u in [
            (1, "days"),
            (0.5, "days"),
            (1.0, "time units"),
            (1, "ms"),
            (1, "seconds"),
            (2, "hours"),
            (1, "trading days"),
            (1, "class"),
        ]
    ] == ["1 day", "0.5 days", "1 time unit", "1 ms", "1 second", "2 hours", "1 trading day", "1 class"]
    assert period_label(1.0, "days") == "period (1 day each)"
    assert period_label(0.25, "hours") == "period (0.25 hours each)"


# ----------------------------------------------------------------------------- reports
def test_survey_figures_and_summary_state_the_unit(tmp_path, monkeypatch) -> None:
    labels = _labels(monkeypatch, "ldpsim.report.survey")
    text = _with_unit(scenario_text(size=2_000, arrivals='{ kind = "poisson", duration = 2.0 }'), '"hours"')
    run = ldpsim.Scenario.from_text(text).run(out=tmp_path / "run")
    assert labels["x"][0] == "time (hours)"  # estimates over time
    assert "reports received" in labels["x"]  # error against n: not a time
    assert [x for x in labels["x"] if "time" in x] == ["time (hours)"]
    assert "- time unit: hours (every time in this report" in run.summary
    assert "report.html" in run.files and "time unit: hours" in run.files["report.html"].read_text()
    ax = run.plot()
    assert ax.get_xlabel() == "time (hours)"
    plt.close(ax.figure)


def test_survey_tasks_over_time_and_the_default_unit(tmp_path, monkeypatch) -> None:
    """Hypothesis tests only (no frequency estimates): the tasks figure's panels, and a file
    without time_unit labels its times in the neutral unit."""
    labels = _labels(monkeypatch, "ldpsim.report.survey")
    text = scenario_text(
        size=500,
        labels='["a", "b"]',
        distribution="[0.6, 0.4]",
        arrivals='{ kind = "poisson", duration = 2.0 }',
        mechanism='kind = "randomized_response"\neps = 1.0',
        end=2.0,
        tick=0.5,
    )
    text = text.replace(
        "[analyst]\n", '[analyst]\ntasks = [{ kind = "lrt", P0 = [0.5, 0.5], P1 = [0.6, 0.4], alpha = 0.05 }]\n'
    )
    text = text.replace("[population]\n", '[population]\nP0 = [0.5, 0.5]\nP1 = [0.6, 0.4]\ntruth = "P1"\n').replace(
        "distribution = [0.6, 0.4]\n", ""
    )
    run = ldpsim.Scenario.from_text(text).run(out=tmp_path / "run")
    assert labels["x"] and set(labels["x"]) == {"time (time units)"}
    assert "- time unit: time units" in run.summary
    ax = run.plot()
    assert ax.get_xlabel() == "time (time units)"
    plt.close(ax.figure)


def test_collection_figures_and_summary_state_the_unit(tmp_path, monkeypatch) -> None:
    labels = _labels(monkeypatch, "ldpsim.report.collection")
    text = collection_text(size=500, periods=3).replace("[collection]\n", "[collection]\nperiod = 0.5\n")
    run = ldpsim.Scenario.from_text(_with_unit(text, '"weeks"')).run(out=tmp_path / "run")
    period_axes = [x for x in labels["x"] if x.startswith("period")]
    assert period_axes and set(period_axes) == {"period (0.5 weeks each)"}  # privacy and accuracy figures
    assert "3 periods of 0.5 weeks" in run.summary
    assert "mean_delay: the mean time from sending to the server, in weeks" in run.summary
    ax = run.plot()
    assert ax.get_xlabel() == "period (0.5 weeks each)"
    plt.close(ax.figure)


def test_multiparty_figure_and_summary_state_the_unit(tmp_path, monkeypatch) -> None:
    labels = _labels(monkeypatch, "ldpsim.report.multiparty")
    text = _with_unit(
        MULTIPARTY.replace("count = 4000", "count = 1000").replace("replications = 3", "replications = 1"), '"seconds"'
    )
    result = run_scenario(parse_scenario(text), out=tmp_path / "run", progress=False)
    assert labels["y"][1].startswith("completion delay (seconds)")
    summary = (result.run_dir / "summary.md").read_text()
    assert "one every 0.01 seconds" in summary and "latency exponential (mean 0.2), in seconds" in summary
    assert "minus the round's start, in seconds" in summary
