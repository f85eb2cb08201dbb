"""Cases found in review of the multi-party code."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.protocols import Protocol, Task, decide, exact_accuracy
from ldpsim.protocols.decisions import exact_plan
from ldpsim.sim.multiparty import expected_max_latency
from ldpsim.sim.network import ExponentialLatency
from ldpsim.stats import hoeffding


def test_a_single_eps_is_repeated_for_a_list_of_deltas():
    for make in (Protocol.universal, Protocol.binary):
        p = make(1.0, [0.1, 0.2, 0.3])
        assert p.parties == 3 and np.allclose(p.eps, 1.0) and np.allclose(p.delta, [0.1, 0.2, 0.3])


@pytest.mark.parametrize("n", [1, 18, 19, 40])
def test_expected_max_of_exponentials_is_the_harmonic_number(n):
    harmonic = float(sum(Fraction(1, i) for i in range(1, n + 1)))  # E max of n Exp(1)
    assert expected_max_latency(ExponentialLatency(1.0), n) == pytest.approx(harmonic, rel=1e-8)


def test_out_of_reach_exact_accuracy_is_refused_in_one_line():
    p = Protocol.universal(np.linspace(0.1, 2.0, 20), 0.01)
    with pytest.raises(LdpSimError, match="k: got 20"):
        exact_plan(p, Task.sum(20), 0)
    with pytest.raises(LdpSimError, match="k: got 20"):
        exact_accuracy(p, Task.sum(20), 0)


def test_scenario_with_out_of_reach_accuracy_exits_2_before_any_file(tmp_path, cli):
    text = (Path := __import__("pathlib").Path)("scenarios/multiparty_sum.toml").read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith("k = "):
            line = "k = 20"
        elif line.startswith("eps = "):
            line = "eps = [" + ", ".join(f"{0.1 * (i + 1):.1f}" for i in range(20)) + "]"
        elif line.startswith("delta = "):
            line = "delta = 0.01"
        lines.append(line)
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    res = cli("run", bad, "--out", out)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "parties: k: got 20" in res.stderr
    assert not Path(out).exists()


def test_general_rule_is_built_once_and_stays_optimal():
    p = Protocol.universal([0.5, 1.0, 2.0], [0.0, 0.1, 0.05])
    task = Task.random(3, 3, rng=4)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (50_000, 3))
    tau = p.sample(x, rng)
    first = decide(p, task, 1, tau, x[:, 1])
    assert np.array_equal(first, decide(p, task, 1, tau, x[:, 1]))
    other = Task.random(3, 3, rng=5)  # a different task must not reuse the cached rule
    measured = np.mean(other.gain[other.value(x), decide(p, other, 1, tau, x[:, 1])])
    # Hoeffding, gains in [0, 1], false-failure 1e-6
    assert abs(measured - exact_accuracy(p, other, 1)) <= hoeffding(1.0, 50_000, 1e-6)
