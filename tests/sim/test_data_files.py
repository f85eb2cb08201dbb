"""Data files a scenario names (``population.file``) and weights typed in scenario files.

- Reading: a data file must be a regular file inside the scenario's folder (after symlinks
  are followed) unless the caller allows outside data (``--allow-outside-data``,
  ``allow_outside_data=True``, or an absolute path typed in ``ldpsim sweep --grid``); a
  device or a FIFO is refused before it is opened; at most ``MAX_TABLE_BYTES`` are read
  whatever the file's stat says; no message quotes the file's contents beyond a column
  name (issue 34, item 4).
- Weights: every list of a scenario file that must sum to 1 takes exact fractions such as
  ``"1/3"``, summed exactly when every entry is one (issue 34, item 21).
"""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.errors import LdpSimError
from ldpsim.sim import load_scenario, parse_scenario
from ldpsim.sim import table as table_module
from tests.sim.helpers import collection_text

CSV = "id,answer\n1,yes\n2,no\n3,yes\n"


def _survey(
    population: str,
    *,
    extra: str = "",
    arrivals: str = 'kind = "all_at_once"',
    mechanism: str = 'kind = "randomized_response"\neps = 1.0',
) -> str:
    return f"""
name = "data_files"
{extra}
[population]
{population}
[mechanism]
{mechanism}
[arrivals]
{arrivals}
[analyst]
checkpoints = {{ every = 1.0 }}
[simulation]
seed = 3
"""


def _table_scenario(folder: Path, file: str, population: str = 'column = "answer"') -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.toml"
    path.write_text(_survey(f"file = {_toml_string(file)}\n{population}"), encoding="utf-8")
    return path


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _refused(path: Path, **kwargs) -> str:
    with pytest.raises(LdpSimError) as info:
        load_scenario(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: population.file: "), message
    return message


# ============================================================ item 4: where data may be
def test_a_relative_path_out_of_the_scenario_folder_is_refused_unless_allowed(tmp_path):
    (tmp_path / "out.csv").write_text(CSV)
    scenario = _table_scenario(tmp_path / "sc", "../out.csv")
    message = _refused(scenario)
    assert "'../out.csv'" in message and "--allow-outside-data" in message and "scenario's folder" in message
    sc = load_scenario(scenario, allow_outside_data=True)
    assert sc.size == 3 and sc.labels == ["no", "yes"]


def test_an_absolute_path_is_refused_unless_allowed(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    outside = tmp_path / "elsewhere" / "t.csv"
    outside.write_text(CSV)
    scenario = _table_scenario(tmp_path / "sc", str(outside))
    assert "--allow-outside-data" in _refused(scenario)
    assert load_scenario(scenario, allow_outside_data=True).size == 3
    inside = tmp_path / "sc" / "t.csv"  # an absolute path that lies in the folder is fine
    inside.write_text(CSV)
    assert load_scenario(_table_scenario(tmp_path / "sc", str(inside))).size == 3


def test_a_symlink_pointing_out_of_the_folder_is_refused_and_one_inside_is_followed(tmp_path):
    (tmp_path / "secret.csv").write_text(CSV)
    folder = tmp_path / "sc"
    folder.mkdir()
    (folder / "link.csv").symlink_to(tmp_path / "secret.csv")
    message = _refused(_table_scenario(folder, "link.csv"))
    assert "'link.csv'" in message and "--allow-outside-data" in message
    (folder / "data").mkdir()
    (folder / "data" / "real.csv").write_text(CSV)
    (folder / "inside.csv").symlink_to(folder / "data" / "real.csv")
    assert load_scenario(_table_scenario(folder, "inside.csv")).size == 3
    (folder / "data" / "up").symlink_to(tmp_path)  # a folder link out of it, then down again
    assert "--allow-outside-data" in _refused(_table_scenario(folder, "data/up/secret.csv"))


def test_a_device_is_refused_before_it_is_read(tmp_path):
    folder = tmp_path / "sc"
    message = _refused(_table_scenario(folder, "/dev/null"), allow_outside_data=True)
    assert "/dev/null" in message and "regular file" in message and "device" in message
    (folder / "null.csv").symlink_to("/dev/null")  # inside by name only: it points out
    assert "--allow-outside-data" in _refused(_table_scenario(folder, "null.csv"))


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path):
    folder = tmp_path / "sc"
    folder.mkdir()
    fifo = folder / "pipe.csv"
    os.mkfifo(fifo)
    loaded = threading.Event()

    def unblock() -> None:  # should the loader wait on the FIFO, give it a writer that closes
        if loaded.wait(3.0):
            return
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                return
            except OSError:  # no reader yet
                time.sleep(0.01)

    guard = threading.Thread(target=unblock, daemon=True)
    guard.start()
    start = time.monotonic()
    try:
        message = _refused(_table_scenario(folder, "pipe.csv"))
    finally:
        loaded.set()
        guard.join()
    assert time.monotonic() - start < 2.0
    assert "pipe.csv" in message and "regular file" in message and "FIFO" in message


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_reads_are_bounded_in_bytes_even_when_the_size_on_disk_says_zero(monkeypatch, tmp_path):
    """/proc files are regular files whose stat size is 0: the bound must come from reading."""
    assert os.stat("/proc/self/status").st_size == 0
    monkeypatch.setattr(table_module, "MAX_TABLE_BYTES", 64)
    message = _refused(_table_scenario(tmp_path / "sc", "/proc/self/status"), allow_outside_data=True)
    assert "larger than 64 bytes" in message
    assert "Name:" not in message and "State" not in message  # nothing of what was read
    (tmp_path / "sc" / "big.csv").write_text("id,answer\n" + "1,yes\n" * 20)
    assert "larger than 64 bytes" in _refused(_table_scenario(tmp_path / "sc", "big.csv"))


def test_reading_a_table_from_python_is_bounded_and_refuses_devices(tmp_path, monkeypatch):
    with pytest.raises(LdpSimError, match="regular file"):
        table_module.Table.read("/dev/null")
    (tmp_path / "t.csv").write_text(CSV)
    monkeypatch.setattr(table_module, "MAX_TABLE_BYTES", 10)
    with pytest.raises(LdpSimError, match="larger than 10 bytes"):
        table_module.Table.read(tmp_path / "t.csv")


SECRET = "SECRET-7f3a"


@pytest.mark.parametrize(
    "case", ["outside the labels", "one distinct value", "numeric not a number", "bucket not a number", "not utf-8"]
)
def test_messages_never_quote_the_file_beyond_a_column_name(case, tmp_path):
    folder = tmp_path / "sc"
    folder.mkdir()
    data = f"id,answer,age\n1,yes,30\n2,{SECRET},{SECRET}\n"
    question = None
    if case == "outside the labels":
        population = 'column = "answer"\nlabels = ["yes", "no"]'
    elif case == "one distinct value":
        data = f"id,answer\n1,{SECRET}\n2,{SECRET}\n"
        population = 'column = "answer"'
    elif case == "numeric not a number":
        question = 'name = "age"\ntype = "numeric"\nrange = [0, 120]\nmechanism = { kind = "piecewise" }'
    elif case == "bucket not a number":
        question = 'name = "age"\nbuckets = [0, 50, 120]\nmechanism = { kind = "randomized_response" }'
    if case == "not utf-8":
        (folder / "t.csv").write_bytes(b"id,answer\n1,yes\n2,\xff" + SECRET.encode() + b"\n")
        population = 'column = "answer"'
    else:
        (folder / "t.csv").write_text(data, encoding="utf-8")
    if question is None:
        scenario = _table_scenario(folder, "t.csv", population)
    else:
        scenario = folder / "q.toml"
        scenario.write_text(f"""
name = "q"
[population]
file = "t.csv"
[budget]
total = 1.0
strategy = "split"
[[questions]]
{question}
[arrivals]
kind = "all_at_once"
[simulation]
seed = 1
end = 1.0
tick = 1.0
""")
    with pytest.raises(LdpSimError) as info:
        load_scenario(scenario)
    message = str(info.value)
    assert "t.csv" in message, message
    if case not in ("one distinct value", "not utf-8"):
        assert "line 3 (row 2)" in message, message  # where it is, for the user to look
    assert SECRET not in message and "0xff" not in message, message


def test_a_missing_column_lists_the_column_names_only(tmp_path):
    folder = tmp_path / "sc"
    folder.mkdir()
    (folder / "t.csv").write_text(f"id,answer\n1,{SECRET}\n2,no\n")
    message = _refused_column(_table_scenario(folder, "t.csv", 'column = "answr"'))
    assert "'answr'" in message and "id, answer" in message and SECRET not in message


def _refused_column(path: Path) -> str:
    with pytest.raises(LdpSimError) as info:
        load_scenario(path)
    return str(info.value)


# ---------------------------------------------------------------- the Python API
def test_the_python_api_takes_allow_outside_data_and_keeps_it_for_overrides(tmp_path):
    (tmp_path / "out.csv").write_text(CSV)
    scenario = _table_scenario(tmp_path / "sc", "../out.csv")
    with pytest.raises(LdpSimError, match="allow_outside_data"):
        ldpsim.Scenario.from_file(scenario)
    sc = ldpsim.Scenario.from_file(scenario, allow_outside_data=True)
    assert sc.with_overrides(replications=2).spec.simulation.replications == 2  # rebuilt, the table read again
    text = scenario.read_text()
    assert ldpsim.Scenario.from_text(text, scenario, allow_outside_data=True).built.size == 3
    assert parse_scenario(text, str(scenario), allow_outside_data=True).size == 3
    with pytest.raises(LdpSimError, match="--allow-outside-data"):
        parse_scenario(text, str(scenario))


# ---------------------------------------------------------------- the command line
def test_the_command_line_refuses_outside_data_in_one_line_and_takes_the_option(cli, tmp_path):
    (tmp_path / "out.csv").write_text(CSV)
    scenario = _table_scenario(tmp_path / "sc", "../out.csv")
    for command in (["run", scenario, "--out", tmp_path / "run", "--no-progress"], ["check", scenario]):
        result = cli(*command)
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "population.file" in lines[0] and "--allow-outside-data" in lines[0], lines
    assert not (tmp_path / "run").exists()
    assert cli("check", scenario, "--allow-outside-data").returncode == 0
    done = cli("run", scenario, "--allow-outside-data", "--out", tmp_path / "run", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "results.csv").is_file()


def test_sweep_allows_an_absolute_path_typed_on_the_command_line_only(cli, tmp_path):
    folder = tmp_path / "sc"
    folder.mkdir()
    (folder / "t.csv").write_text(CSV)
    other = tmp_path / "other.csv"
    other.write_text("id,answer\n1,yes\n2,no\n3,no\n4,no\n")
    scenario = _table_scenario(folder, "t.csv")
    grid = f"population.file=[{_toml_string('t.csv')}, {_toml_string(str(other))}]"
    result = cli("sweep", scenario, "--grid", grid, "--out", tmp_path / "sw", "--no-point-reports", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sw" / "sweep.csv").is_file()
    # the same path from the file's own [sweep] table is not typed by the user: refused
    text = scenario.read_text() + f"\n[sweep]\n{grid.replace('=', ' = ', 1)}\n"
    scenario.write_text(text)
    refused = cli("sweep", scenario, "--out", tmp_path / "sw2", "--no-point-reports", "--no-progress")
    assert refused.returncode == 2 and "--allow-outside-data" in refused.stderr, refused.stderr
    # and a relative path out of the folder typed on the command line is still the file's business
    grid_up = f"population.file=[{_toml_string('../other.csv')}]"
    up = cli(
        "sweep",
        _table_scenario(tmp_path / "sc3", "t.csv"),
        "--grid",
        grid_up,
        "--out",
        tmp_path / "sw3",
        "--no-point-reports",
        "--no-progress",
    )
    assert up.returncode == 2 and "--allow-outside-data" in up.stderr, up.stderr
    allowed = cli(
        "sweep", scenario, "--allow-outside-data", "--out", tmp_path / "sw4", "--no-point-reports", "--no-progress"
    )
    assert allowed.returncode == 0, allowed.stderr


# ============================================================ item 21: exact fractions
def _pop(distribution: str) -> str:
    return f'labels = ["a", "b", "c"]\ndistribution = {distribution}\nsize = 300'


THIRDS = '["1/3", "1/3", "1/3"]'


def test_thirds_typed_as_fractions_sum_to_one_exactly():
    sc = parse_scenario(_survey(_pop(THIRDS)))
    np.testing.assert_array_equal(sc.prior, np.full(3, 1 / 3))
    assert sc.spec.population.distribution == [1 / 3, 1 / 3, 1 / 3]
    sixths = parse_scenario(_survey(_pop('["1/6", "1/2", "2/6"]')))
    np.testing.assert_allclose(sixths.prior, [1 / 6, 1 / 2, 1 / 3], rtol=1e-15)


def test_fractions_that_do_not_sum_to_one_exactly_are_refused_naming_the_key():
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_survey(_pop('["1/3", "1/3", "1/4"]')), "s.toml")
    message = str(info.value)
    assert message.startswith("s.toml: population.distribution: ") and "11/12" in message, message
    # a near miss is still a miss: fractions are summed exactly
    with pytest.raises(LdpSimError, match="population.distribution"):
        parse_scenario(_survey(_pop('["1/3", "1/3", "333333333333/1000000000000"]')))


def test_decimals_keep_the_tolerance_and_the_message_points_to_fractions():
    parse_scenario(_survey(_pop("[0.3333333333, 0.3333333333, 0.3333333334]")))  # as before
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_survey(_pop("[0.3333, 0.3333, 0.3333]")))
    message = str(info.value)
    assert "population.distribution" in message and '"1/3"' in message, message


@pytest.mark.parametrize(
    "value, expected",
    [
        ('"1/0"', "denominator"),
        ('"x"', '"1/3"'),
        ('"-1/3"', '"1/3"'),
        ('"0.5"', '"1/3"'),
        ("true", '"1/3"'),
        ('"1/3/3"', '"1/3"'),
        ('"' + "1" * 40 + '/3"', "digits"),
    ],
)
def test_bad_fraction_strings_are_one_line_naming_the_entry(value, expected):
    with pytest.raises(LdpSimError) as info:
        parse_scenario(_survey(_pop(f'["1/3", {value}, "1/3"]')), "s.toml")
    message = str(info.value)
    assert message.startswith("s.toml: population.distribution") and expected in message, message


def test_every_list_that_sums_to_one_takes_fractions():
    # P0, P1 of the population and of the hypothesis tests
    p0, p1 = '["1/3", "1/3", "1/3"]', '["1/6", "1/3", "1/2"]'
    tasks = f'tasks = [{{ kind = "sprt", P0 = {p0}, P1 = {p1} }}, {{ kind = "lrt", P0 = {p0}, P1 = {p1} }}]'
    sc = parse_scenario(
        _survey(
            f'labels = ["a", "b", "c"]\nP0 = {p0}\nP1 = {p1}\ntruth = "P1"\nsize = 300',
            mechanism='kind = "randomized_response"\neps = 1.0',
        ).replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0 }\n" + tasks)
    )
    np.testing.assert_allclose(sc.prior, [1 / 6, 1 / 3, 1 / 2], rtol=1e-15)
    # privacy tiers' shares
    tiers = parse_scenario(
        _survey(
            _pop(THIRDS),
            mechanism='kind = "randomized_response"\n'
            'tiers = [{ eps = 0.5, share = "1/3" }, { eps = 1.0, share = "2/3" }]',
        )
    )
    np.testing.assert_allclose(tiers.tiers.shares, [1 / 3, 2 / 3], rtol=1e-15)
    # arrival waves
    waves = parse_scenario(
        _survey(_pop(THIRDS), arrivals='kind = "waves"\ntimes = [0.0, 0.5, 1.0]\nfractions = ["1/3", "1/3", "1/3"]')
    )
    assert waves.size == 300
    # a question's distribution
    q = parse_scenario(f"""
name = "q"
[population]
size = 300
[budget]
total = 1.0
strategy = "split"
[[questions]]
name = "a"
labels = ["x", "y", "z"]
distribution = {THIRDS}
mechanism = {{ kind = "randomized_response" }}
[arrivals]
kind = "all_at_once"
[simulation]
seed = 1
end = 1.0
tick = 1.0
""")
    np.testing.assert_array_equal(q.prior, np.full(3, 1 / 3))
    # a collection's population, transition matrix and drift target
    labels = '["a", "b", "c"]'
    parse_scenario(collection_text(labels=labels, distribution=THIRDS, periods=2, size=300))
    matrix = '{ kind = "markov", matrix = [["1/3", "1/3", "1/3"], ["0", "1/2", "1/2"], [0, 0, 1]] }'
    parse_scenario(collection_text(labels=labels, distribution=THIRDS, periods=2, size=300, change=matrix))
    drift = '{ kind = "drift", final = ["1/6", "1/6", "2/3"], stay = 0.4 }'
    parse_scenario(collection_text(labels=labels, distribution=THIRDS, periods=2, size=300, change=drift))


@pytest.mark.parametrize(
    "where, text",
    [
        ("arrivals", 'kind = "waves"\ntimes = [0.0, 1.0]\nfractions = ["1/3", "1/2"]'),
        ("tiers", 'tiers = [{ eps = 0.5, share = "1/3" }, { eps = 1.0, share = "1/2" }]'),
        ("matrix", '{ kind = "markov", matrix = [["1/3", "1/3", "1/4"], [0, 1, 0], [0, 0, 1]] }'),
    ],
)
def test_fractions_off_by_a_little_are_refused_everywhere(where, text):
    if where == "arrivals":
        source, key = _survey(_pop(THIRDS), arrivals=text), "arrivals"
    elif where == "tiers":
        source, key = _survey(_pop(THIRDS), mechanism='kind = "randomized_response"\n' + text), "mechanism.tiers"
    else:
        source, key = (
            collection_text(labels='["a", "b", "c"]', distribution=THIRDS, size=30, change=text),
            "collection.change.matrix",
        )
    with pytest.raises(LdpSimError) as info:
        parse_scenario(source, "s.toml")
    assert key in str(info.value), str(info.value)


def test_a_scenario_with_fractions_pickles_and_serialises():
    sc = parse_scenario(_survey(_pop(THIRDS)))
    again = pickle.loads(pickle.dumps(sc))
    np.testing.assert_array_equal(again.prior, sc.prior)
    assert again.spec.population.distribution == sc.spec.population.distribution
    dumped = sc.spec.model_dump(mode="json")["population"]["distribution"]
    assert dumped == [1 / 3, 1 / 3, 1 / 3] and all(type(x) is float for x in dumped)
    assert sc.digest() == parse_scenario(sc.source).digest()
