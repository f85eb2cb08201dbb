"""Malformed scenario files: one line naming the file and the key, exit code 2."""

from __future__ import annotations

import pytest

from ldpsim import LdpSimError
from ldpsim.sim import parse_scenario
from tests.sim.helpers import scenario_text

GOOD = scenario_text()

CASES = {
    "unknown top-level key": ("colour = 1\n" + GOOD, "colour", "no such key"),
    "unknown nested key": (
        GOOD.replace("loss = 0.0", "loss = 0.0\nlossy = 0.2"),
        "network.lossy",
        "no such key (did you mean 'loss'?)",
    ),
    "wrong type": (GOOD.replace("size = 10000", 'size = "many"'), "population.size", "integer"),
    "negative rate": (
        GOOD.replace('kind = "all_at_once"', 'kind = "poisson"\nrate = -3.0'),
        "arrivals.rate",
        "greater than 0",
    ),
    "loss above one": (GOOD.replace("loss = 0.0", "loss = 1.5"), "network.loss", "less than or equal to 1"),
    "negative eps": (GOOD.replace("eps = 1.0", "eps = -1.0"), "mechanism.eps", "expected a finite number >= 0"),
    "nan latency": (GOOD.replace("value = 0.0", "value = nan"), "network.latency.value", "finite"),
    "unknown latency": (GOOD.replace('kind = "constant", value = 0.0', 'kind = "gamma"'), "network.latency", "gamma"),
    "unknown mechanism": (
        GOOD.replace('kind = "randomized_response"', 'kind = "gamma"'),
        "mechanism.kind",
        "'gamma', expected one of",
    ),
    "noise mechanism": (
        GOOD.replace('kind = "randomized_response"', 'kind = "laplace"'),
        "mechanism.kind",
        "laplace does not report one of finitely many",
    ),
    "mechanism without kind": (GOOD.replace('kind = "randomized_response"\n', ""), "mechanism.kind", "got nothing"),
    "unknown mechanism key": (
        GOOD.replace("eps = 1.0", "eps = 1.0\nepsilon = 2"),
        "mechanism.epsilon",
        "randomized_response takes eps",
    ),
    "alphabet in the mechanism": (
        GOOD.replace("eps = 1.0", "eps = 1.0\nk = 4"),
        "mechanism.k",
        "comes from population.labels",
    ),
    "privacy level not stated": (GOOD.replace("eps = 1.0\n", ""), "mechanism.eps", "a scenario states it"),
    "delta not stated": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "quaternary"\neps = 1.0'),
        "mechanism.delta",
        "privacy parameter delta",
    ),
    "divergence without P0": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "optimal"\neps = 1.0\nutility = "kl"'),
        "population.P0",
        "a divergence of P0 and P1",
    ),
    "unknown utility": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "optimal"\neps = 1.0\nutility = "entropy"'),
        "mechanism.utility",
        "mutual_information",
    ),
    "T not labels": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "binary"\neps = 1.0\nT = [0, 1]'),
        "mechanism.T",
        "a list of labels",
    ),
    "misspelt section": (
        GOOD.replace("[mechanism]", "[mechanism_]"),
        "mechanism_",
        "no such key (did you mean 'mechanism'?)",
    ),
    "misspelt nested key": (
        GOOD.replace("[population]", "[population]\nsizee = 3"),
        "population.sizee",
        "did you mean 'size'?",
    ),
    "distribution off by 1e-3": (
        GOOD.replace("[0.4, 0.3, 0.2, 0.1]", "[0.4, 0.3, 0.2, 0.099]"),
        "population.distribution",
        "expected a sum of 1 (within 1e-09)",
    ),
    "both mechanism forms": (
        GOOD + '\n[[mechanisms]]\nkind = "truncated_geometric"\neps = 1.0\n',
        "mechanism",
        "both [mechanism] and [[mechanisms]]",
    ),
    "distribution length": (
        GOOD.replace("[0.4, 0.3, 0.2, 0.1]", "[0.5, 0.5]"),
        "population.distribution",
        "one per label",
    ),
    "distribution sum": (
        GOOD.replace("[0.4, 0.3, 0.2, 0.1]", "[0.4, 0.3, 0.2, 0.2]"),
        "population.distribution",
        "sum",
    ),
    "quaternary on 4 labels": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "quaternary"\neps = 1.0\ndelta = 0.1'),
        "mechanism.kind",
        "exactly 2 labels",
    ),
    "matrix rows": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "matrix"\nmatrix = [[0.5, 0.5], [0.5, 0.5]]'),
        "mechanism.matrix",
        "one per input symbol (4)",
    ),
    "matrix row sum": (
        GOOD.replace(
            'kind = "randomized_response"\neps = 1.0',
            'kind = "matrix"\nmatrix = [[0.5, 0.5], [0.5, 0.6], [1, 0], [0, 1]]',
        ),
        "mechanism.matrix",
        "summing",
    ),
    "binary unknown label": (
        GOOD.replace('kind = "randomized_response"\neps = 1.0', 'kind = "binary"\neps = 1.0\nT = ["a", "z"]'),
        "mechanism.T",
        "'z'",
    ),
    "waves fractions": (
        GOOD.replace('kind = "all_at_once"', 'kind = "waves"\ntimes = [0, 1]\nfractions = [0.5, 0.6]'),
        "arrivals.fractions",
        "expected a sum of 1",
    ),
    "poisson both": (
        GOOD.replace('kind = "all_at_once"', 'kind = "poisson"\nrate = 1.0\nduration = 2.0'),
        "arrivals",
        "exactly one",
    ),
    "unknown task": (
        GOOD.replace("checkpoints = { every = 1.0 }", 'checkpoints = { every = 1.0 }\ntasks = [{ kind = "magic" }]'),
        "analyst.tasks[0].kind",
        "magic",
    ),
    "bad task parameter": (
        GOOD.replace(
            "checkpoints = { every = 1.0 }",
            'checkpoints = { every = 1.0 }\ntasks = [{ kind = "frequency", confidence = 2 }]',
        ),
        "analyst.tasks[0].confidence",
        "less than 1",
    ),
    "individual too large": (GOOD.replace("size = 10000", "size = 1_000_000_000_001"), "population.size", "aggregate"),
    "tick too small": (
        GOOD.replace('mode = "individual"', 'mode = "individual"\ntick = 1e-9'),
        "simulation.tick",
        "ticks",
    ),
    "bad TOML": (GOOD.replace("[network]", "[network"), "invalid TOML", "line"),
    "bad name": (GOOD.replace('name = "test"', 'name = "a/b"'), "name", "pattern"),
    "task kind not text": (
        GOOD.replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0 }\ntasks = [{ kind = [1] }]"),
        "analyst.tasks[0].kind",
        "[1]",
    ),
    "lognormal sigma huge": (
        GOOD.replace('kind = "constant", value = 0.0', 'kind = "lognormal", median = 1.0, sigma = 400.0'),
        "network.latency.sigma",
        "less than or equal to 10",
    ),
    "latency mean huge": (
        GOOD.replace('kind = "constant", value = 0.0', 'kind = "exponential", mean = 1e308'),
        "network.latency.mean",
        "less than or equal to",
    ),
    "arrival time huge": (
        GOOD.replace('kind = "all_at_once"', 'kind = "all_at_once"\nat = 1e308'),
        "arrivals.at",
        "less than or equal to",
    ),
    "eps as text": (GOOD.replace("eps = 1.0", 'eps = "1"'), "mechanism.eps", "expected a number"),
    "size as bool": (GOOD.replace("size = 10000", "size = true"), "population.size", "valid integer"),
    "keep reports in aggregate mode": (
        GOOD.replace('mode = "individual"', 'mode = "aggregate"').replace("[server]", "[server]\nkeep_reports = true"),
        "server.keep_reports",
        "individual",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_scenario_names_file_and_key(case):
    text, key, problem = CASES[case]
    with pytest.raises(LdpSimError) as info:
        parse_scenario(text, "bad.toml")
    msg = str(info.value)
    assert msg.startswith(f"bad.toml: {key}"), msg
    assert problem in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize("case", ["unknown nested key", "loss above one", "matrix rows", "bad TOML"])
def test_cli_exits_2_with_one_line(case, tmp_path, cli):
    text, key, _ = CASES[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    proc = cli("run", path, "--out", tmp_path / "o")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and key in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_refuses_bad_run_directories(tmp_path, cli):
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad_meta = tmp_path / "run"
    bad_meta.mkdir()
    (bad_meta / "metadata.json").write_text("{}")
    (bad_meta / "scenario.toml").write_text(GOOD)
    cases = [
        (["run", str(good), "--out", str(blocker / "sub")], "--out"),
        (["run", "--resume", str(bad_meta)], "--resume"),
        (["run", str(good), "--out", str(tmp_path / "w0"), "--workers", "0"], "--workers"),
    ]
    for argv, key in cases:
        proc = cli(*argv)
        assert proc.returncode == 2 and key in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "w0").exists(), "a refused run leaves no directory behind"


def test_cli_missing_file_and_bad_options(tmp_path, cli):
    for argv in (
        ["run", str(tmp_path / "nope.toml")],
        ["run"],
        ["run", "x.toml", "--workers", "two"],
        ["run", "--resume", str(tmp_path)],
    ):
        proc = cli(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
