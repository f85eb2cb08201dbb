"""Populations with many answers: generated labels (``answers``) and named laws (``law``)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario
from tests.sim.helpers import scenario_text

BASE = scenario_text()
LISTED = 'labels = ["a", "b", "c", "d"]\ndistribution = [0.4, 0.3, 0.2, 0.1]'


def _with(population: str):
    return BASE.replace(LISTED, population)


def test_zipf_law_over_generated_answers():
    sc = parse_scenario(
        _with('answers = { count = 1000, prefix = "app " }\nlaw = { kind = "zipf", s = 1.1 }'), "z.toml"
    )
    assert sc.labels[0] == "app 1" and sc.labels[-1] == "app 1000" and len(sc.labels) == 1000
    i = np.arange(1, 1001)
    want = i**-1.1 / np.sum(i**-1.1)  # P(answer i) proportional to i^-s
    np.testing.assert_allclose(sc.prior, want, rtol=1e-12)
    assert sc.mechanism.k == 1000 and sc.mechanism.input_labels[1] == "app 2"


def test_uniform_law():
    sc = parse_scenario(_with('labels = ["a", "b", "c"]\nlaw = { kind = "uniform" }'), "u.toml")
    np.testing.assert_array_equal(sc.prior, np.full(3, 1 / 3))


@pytest.mark.parametrize(
    "population, key",
    [
        ('answers = { count = 5 }\nlabels = ["a", "b"]\nlaw = { kind = "uniform" }', "population"),
        ('answers = { count = 1 }\nlaw = { kind = "uniform" }', "population.answers.count"),
        ('answers = { count = 5 }\nlaw = { kind = "zipf" }', "population.law.s"),
        ('answers = { count = 5 }\nlaw = { kind = "uniform", s = 2.0 }', "population.law.s"),
        ('answers = { count = 5 }\nlaw = { kind = "zipf", s = -1.0 }', "population.law.s"),
        ('answers = { count = 5 }\nlaw = { kind = "uniform" }\ndistribution = [0.2, 0.2, 0.2, 0.2, 0.2]', "population"),
        ("answers = { count = 5 }", "population"),
    ],
)
def test_bad_populations_are_one_line_errors(population, key):
    with pytest.raises(LdpSimError, match=rf"^p\.toml: {key.replace('.', '[.]')}:") as info:
        parse_scenario(_with(population), "p.toml")
    assert "\n" not in str(info.value)


def test_a_run_with_many_answers_reports_the_top_answers_and_error_norms(tmp_path, cli):
    text = _with('answers = { count = 300, prefix = "app " }\nlaw = { kind = "zipf", s = 1.1 }').replace(
        "size = 10000", "size = 50000"
    )
    path = tmp_path / "many.toml"
    path.write_text(text)
    r = cli("run", str(path), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "the 20 answers with the largest estimates, of 300" in r.stdout and "L1 error" in r.stdout
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "The 20 largest estimates of the 300 answers" in md and "Linf" in md
    assert "## Estimates at each checkpoint" not in md  # 300 columns would not be read
    import pandas as pd

    res = pd.read_csv(tmp_path / "run" / "results.csv")
    end = res[(res["reason"] == "end") & (res["quantity"] == "frequency")]
    assert len(end) == 300  # every answer stays in results.csv
    l1 = float((end["estimate"] - end["truth"]).abs().sum())
    assert f"L1 error {l1:.5f}" in r.stdout
