"""Every finite mechanism of the library, at a few parameters: the contract tests run over all."""

from __future__ import annotations

import math

import numpy as np

import ldpsim
from ldpsim.mechanisms import (
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    from_matrix,
    quaternary_mechanism,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)


def _random_matrix() -> ldpsim.FiniteMechanism:
    rng = np.random.default_rng(20261129)
    q = rng.dirichlet(np.ones(5), size=4)
    q[1, 3] = 0.0  # a column that mixes zeros and non-zeros: eps = inf
    q[1] /= q[1].sum()
    return from_matrix(q)


def _rr_as_staircase(k: int, eps: float) -> ldpsim.FiniteMechanism:
    codes = 1 << np.arange(k)  # one-hot patterns e_i
    theta = np.full(k, 1.0 / (k - 1 + math.exp(eps)))
    return staircase_mechanism(eps, theta, patterns=codes, k=k)


ZOO = {
    "rr-k2-log3": lambda: randomized_response(2, math.log(3.0)),
    "rr-k5-eps1": lambda: randomized_response(5, 1.0),
    "rr-k3-eps0": lambda: randomized_response(3, 0.0),
    "binary-priors": lambda: binary_mechanism_for_priors([0.5, 0.2, 0.2, 0.1], [0.1, 0.3, 0.2, 0.4], 0.8),
    "binary-prior-bestT": lambda: binary_mechanism_for_prior([0.4, 0.3, 0.2, 0.1], 1.5),
    "binary-explicit-T": lambda: binary_mechanism(2.0, [1, 2], 5),
    "trunc-geom-k2": lambda: truncated_geometric(2, 1.0),
    "trunc-geom-k6": lambda: truncated_geometric(6, 2.5),
    "staircase-rr": lambda: _rr_as_staircase(4, 1.2),
    "staircase-full-theta": lambda: staircase_mechanism(
        1.0, np.array([0.0, 1.0, 1.0, 0.0]) / (1.0 + math.e)
    ),  # binary: patterns 01 and 10 with theta = 1/(1+e)
    "quaternary": lambda: quaternary_mechanism(0.7, 0.05),
    "quaternary-delta0": lambda: quaternary_mechanism(0.7, 0.0),
    "from-matrix": _random_matrix,
}
