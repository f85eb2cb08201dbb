"""Every catalog entry tagged ``scenario`` is usable as a survey's ``[mechanism]`` with no
change to the loader: for each of its contract cases (tests/contract/cases.py), a scenario
file stating the case's own parameters, with the inputs (alphabet, P0, P1, prior) given by
``[population]``, builds exactly the mechanism the catalog builds, its inputs named by the
labels; and a short run of it estimates within its exact interval."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpsim.mechanisms import catalog
from ldpsim.sim import parse_scenario
from ldpsim.sim.engine import run_replication
from tests.contract.cases import CASES
from tests.sim.helpers import scenario_text

FILLED = {"alphabet", "P0", "P1", "prior"}


def _points():
    for name in catalog.names("scenario"):
        for i, params in enumerate(CASES[name]):
            yield pytest.param(name, params, id=f"{name}-{i}")


def _toml(value) -> str:
    return json.dumps(value)  # JSON numbers, strings and lists are TOML too


def _scenario(name: str, params: dict):
    """The scenario text for one contract case, and the mechanism the catalog builds."""
    entry = catalog.entry(name)
    mech = catalog.build(name, **params)
    k = mech.k
    labels = [f"answer {i}" for i in range(k)]
    lines = [f'kind = "{name}"']
    for key, value in params.items():
        role = entry.params[key].role
        if role in FILLED:
            continue
        if role == "inputs":
            value = [labels[i] for i in value]
        lines.append(f"{key} = {_toml(value)}")
    prior = params.get("prior") or [1.0 / k] * k
    text = scenario_text(
        mechanism="\n".join(lines), labels=json.dumps(labels), distribution=json.dumps(prior), size=20_000
    )
    if not mech.identifiable:  # too few outputs (patterns of too low rank, or eps = 0) to estimate k frequencies
        text = text.replace("checkpoints = { every = 1.0 }", "checkpoints = { every = 1.0 }\ntasks = []")
    if "P0" in params:
        pair = f'P0 = {json.dumps(params["P0"])}\nP1 = {json.dumps(params["P1"])}\ntruth = "P0"\n'
        text = text.replace(f"distribution = {json.dumps(prior)}\n", pair)
    return text, mech, labels


@pytest.mark.parametrize("name, params", list(_points()))
def test_scenario_builds_the_catalog_mechanism(name, params):
    text, mech, labels = _scenario(name, params)
    sc = parse_scenario(text, "case.toml")
    assert sc.mechanism == mech.with_labels(labels)
    assert sc.mechanism.input_labels == tuple(labels)
    assert np.array_equal(sc.mechanism.support_matrix, mech.support_matrix)  # the matrix of a finite mechanism
    assert sc.mechanism.epsilon() == mech.epsilon()


def _estimable(name: str) -> dict:
    """The first case of ``name`` whose matrix has full row rank (frequencies estimable)."""
    return next(p for p in CASES[name] if catalog.build(name, **p).identifiable)


@pytest.mark.parametrize("name", catalog.names("scenario"))
def test_a_run_estimates_within_the_exact_interval(name):
    """One replication of a case with estimable frequencies: every final estimate lies
    within 6 exact standard errors of the truth: 2 Phi(-6) = 2e-9 per estimate under the
    normal approximation, so the at most 5 estimates of a case stay far below a
    false-failure probability of 1e-6 even if the approximation's tail were 100 times off."""
    text, mech, labels = _scenario(name, _estimable(name))
    sc = parse_scenario(text, "case.toml")
    rows = run_replication(sc, 0, 20261201)
    final = rows[(rows["reason"] == "end") & (rows["quantity"] == "frequency")]
    se = rows[(rows["reason"] == "end") & (rows["quantity"] == "std_error")]["theory"].to_numpy()
    err = np.abs(final["estimate"].to_numpy() - final["truth"].to_numpy())
    assert len(err) == len(labels)
    finite = np.isfinite(se)
    assert np.all(err[finite] <= 6.0 * se[finite]), (err, se)
