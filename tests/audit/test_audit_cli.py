"""`ldpsim audit SPEC`: prints eps_LB, the claim, the exact eps, the witness and the samples;
refutes broken mechanisms; errors are one line with exit code 2.

Statistical assertions: "not refuted" runs use alpha = 1e-7 (the bound exceeds the exact eps
with probability <= 1e-7); refutations use fixed seeds at margins measured far beyond the
bound's width (doubled RR: eps_LB ~1.95 against a claim of 1 at n = 10^5).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from ldpsim.audit import Witness, target
from ldpsim.cli import main
from ldpsim.mechanisms import catalog


def run(capsys, *argv):
    code = main(["audit", *argv])
    return code, capsys.readouterr().out


def test_text_output_of_a_correct_mechanism(capsys):
    code, out = run(capsys, "randomized_response:k=3,eps=1", "--n", "20000", "--seed", "5", "--alpha", "1e-7")
    assert code == 0
    line = next(l for l in out.splitlines() if l.startswith("eps_LB"))
    eps_lb = float(line.split()[2])
    assert 0.0 <= eps_lb <= 1.0
    assert "claimed eps = 1" in line and "exact eps = 1" in line
    assert "not refuted" in out and "witness: {" in out and "samples used: 60,000 (20,000 per input)" in out
    assert "seed 5" in out and "exact density used" in out


def test_broken_mechanism_refuted_and_json(capsys):
    code, out = run(capsys, "broken.doubled_rr", "--n", "100000", "--seed", "3", "--json", "--black-box")
    assert code == 0
    res = json.loads(out)
    assert res["refuted"] is True and res["density"] is False
    assert res["claimed_eps"] == 1.0 and res["exact_eps"] == pytest.approx(2.0)
    assert 1.0 < res["eps_lb"] <= 2.0
    assert res["samples_per_input"] == 100_000 and res["samples_used"] == 200_000
    # the printed witness replays: on fresh samples its event separates the inputs by more than e^1
    w = Witness.from_json(json.dumps(res["witness"]))
    t = target("broken.doubled_rr")
    rng = np.random.default_rng(0)
    p = w.contains(t.sampler(w.x, 10**5, rng)).mean()
    q = w.contains(t.sampler(w.x_prime, 10**5, rng)).mean()
    assert p > math.e * q


def test_sequential_stops_early(capsys):
    code, out = run(capsys, "broken.laplace_wrong_scale", "--n", "1000000", "--seed", "1", "--sequential", "--json")
    res = json.loads(out)
    assert code == 0 and res["refuted"] is True
    assert res["samples_per_input"] < 100_000  # a budget of 1e6 per input, stopped at an early look
    assert "alpha spending" in res["method"]


def test_density_gives_inf_for_impossible_outputs(capsys):
    code, out = run(capsys, "broken.svt_no_query_noise", "--n", "10000", "--seed", "2", "--json")
    res = json.loads(out)
    assert res["eps_lb"] == "inf" and res["exact_eps"] == "inf" and res["refuted"] is True


def test_delta_claims(capsys):
    # the quaternary mechanism is exactly (0.7, 0.05)-DP: a claim of delta = 0.01 is refuted
    argv = ["quaternary:eps=0.7,delta=0.05", "--n", "100000", "--seed", "4", "--json"]
    res = json.loads(run(capsys, *argv, "--claim-delta", "0.01")[1])
    assert res["refuted"] is True and 0.01 < res["delta_lb"] <= 0.05 and res["exact_delta"] == pytest.approx(0.05)
    res = json.loads(run(capsys, *argv, "--alpha", "1e-7")[1])
    assert res["refuted"] is False and res["delta_lb"] <= 0.05


def test_custom_claim_and_pairs(capsys):
    # randomized response at eps = 2 audited against a claim of 1 on a chosen pair
    argv = ["randomized_response:k=4,eps=2", "--claim-eps", "1", "--pairs", "[[2, 3]]", "--n", "50000", "--seed", "6"]
    res = json.loads(run(capsys, *argv, "--json")[1])
    assert res["refuted"] is True and 1.0 < res["eps_lb"] <= 2.0
    assert {res["witness"]["x"], res["witness"]["x_prime"]} == {2, 3}


def test_list_names_every_target(capsys):
    code, out = run(capsys, "--list")
    assert code == 0
    for name in catalog.names():
        assert any(line.startswith(name + "(") for line in out.splitlines()), name


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["nope"], "mechanism: got 'nope'"),
        (["laplace:eps=x"], "eps: got 'x'"),
        (["laplace:colour=1"], "parameter: got 'colour'"),
        (["laplace", "--list"], "--list: got a SPEC too"),
        ([], "SPEC: got nothing"),
        (["laplace", "--pairs", "[[0"], "--pairs: got"),
        (["laplace", "--pairs", "[[0, 0]]"], "pairs: got"),
        (["laplace", "--alpha", "2"], "alpha: got 2"),
        (["laplace", "--n", "5"], "n: got 5"),
        (["laplace", "--sequential", "--n", "500"], "n_max: got 500"),
        (["laplace", "--claim-delta", "-0.1"], "--claim-delta: got -0.1"),
        (["laplace", "--claim-delta", "1.5"], "--claim-delta: got 1.5"),
        (["laplace", "--claim-eps", "-1"], "--claim-eps: got -1.0"),
        (["laplace", "--claim-eps", "nan"], "--claim-eps: got nan"),
        (["laplace", "--seed", "-1"], "--seed: got -1"),
        (["norm_laplace:d=0"], "d: got 0"),
        (["norm_laplace", "--pairs", "[[0, 1]]"], "x: got"),
    ],
)
def test_errors_are_one_line_and_exit_2(cli, argv, needle):
    proc = cli("audit", *argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_end_to_end_in_a_subprocess():
    """The one true end-to-end run: a new interpreter, ``python -m ldpsim audit``, output on
    stdout, a one-line error with exit code 2 on stderr."""
    ok = subprocess.run(
        [sys.executable, "-m", "ldpsim", "audit", "broken.doubled_rr", "--n", "20000", "--seed", "3"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert ok.stdout.startswith("audit of broken.doubled_rr:k=2,eps=1.0 (exact density used)")
    assert "REFUTED at alpha 0.05" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "ldpsim", "audit", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and "mechanism: got 'nope'" in bad.stderr
