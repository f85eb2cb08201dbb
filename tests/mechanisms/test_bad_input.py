"""Bad input at every public entry point: one exception family, a message naming the
parameter, the value received and what was expected."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim import LdpSimError, frequency_estimate
from ldpsim.mechanisms import (
    binary_mechanism,
    binary_mechanism_for_prior,
    binary_mechanism_for_priors,
    from_matrix,
    pattern_matrix,
    quaternary_mechanism,
    randomized_response,
    staircase_mechanism,
    truncated_geometric,
)

RR = randomized_response(4, 1.0)
GOOD = [0.25, 0.25, 0.25, 0.25]

CASES = {
    # eps: negative, NaN, infinite
    "rr eps negative": (lambda: randomized_response(3, -0.5), "eps", "-0.5"),
    "rr eps nan": (lambda: randomized_response(3, math.nan), "eps", "nan"),
    "rr eps inf": (lambda: randomized_response(3, math.inf), "eps", "inf"),
    "rr eps string": (lambda: randomized_response(3, "one"), "eps", "'one'"),
    "binary eps negative": (lambda: binary_mechanism(-1.0, [0], 3), "eps", "-1.0"),
    "geometric eps nan": (lambda: truncated_geometric(4, math.nan), "eps", "nan"),
    "quaternary eps inf": (lambda: quaternary_mechanism(math.inf, 0.1), "eps", "inf"),
    "staircase eps negative": (lambda: staircase_mechanism(-2.0, [0, 0.5, 0.5, 0]), "eps", "-2.0"),
    "pattern eps nan": (lambda: pattern_matrix(3, math.nan), "eps", "nan"),
    "delta() eps negative": (lambda: RR.delta(-0.1), "eps", "-0.1"),
    "delta() eps nan in array": (lambda: RR.delta(np.array([0.1, math.nan])), "eps[1]", "nan"),
    "is_private eps nan": (lambda: RR.is_private(math.nan), "eps", "nan"),
    # delta outside [0, 1]
    "quaternary delta negative": (lambda: quaternary_mechanism(1.0, -0.01), "delta", "-0.01"),
    "quaternary delta above one": (lambda: quaternary_mechanism(1.0, 1.5), "delta", "1.5"),
    "quaternary delta nan": (lambda: quaternary_mechanism(1.0, math.nan), "delta", "nan"),
    "is_private delta above one": (lambda: RR.is_private(1.0, 2.0), "delta", "2.0"),
    # priors
    "priors negative entry": (lambda: binary_mechanism_for_priors([1.2, -0.2], [0.5, 0.5], 1.0), "P0", "-0.2"),
    "priors not summing to one": (lambda: binary_mechanism_for_priors([0.5, 0.5], [0.6, 0.5], 1.0), "P1", "0.6"),
    "priors sum off by 1e-6": (
        lambda: binary_mechanism_for_priors([0.5, 0.5 + 1e-6], [0.5, 0.5], 1.0),
        "P0",
        "0.500001",
    ),
    "priors length mismatch": (lambda: binary_mechanism_for_priors([0.5, 0.5], [0.2, 0.3, 0.5], 1.0), "P1", "0.3"),
    "prior nan": (lambda: binary_mechanism_for_prior([0.5, math.nan], 1.0), "P", "nan"),
    "marginal prior negative": (lambda: RR.marginal([0.5, 0.6, -0.1, 0.0]), "prior", "-0.1"),
    "marginal prior wrong length": (lambda: RR.marginal([0.5, 0.5]), "prior", "0.5"),
    # matrices
    "matrix negative entry": (lambda: from_matrix([[1.1, -0.1], [0.5, 0.5]]), "Q[0, 1]", "-0.1"),
    "matrix row sum": (lambda: from_matrix([[0.5, 0.5], [0.5, 0.5 + 1e-8]]), "Q", "1.00000001"),
    "matrix nan entry": (lambda: from_matrix([[0.5, 0.5], [math.nan, 1.0]]), "Q[1, 0]", "nan"),
    "matrix complex": (lambda: from_matrix(np.array([[1 + 0j, 0], [0, 1]])), "Q", "1.+0.j"),
    "matrix one row": (lambda: from_matrix([[0.5, 0.5]]), "Q", "0.5"),
    "matrix not 2-d": (lambda: from_matrix([0.5, 0.5]), "Q", "0.5"),
    "staircase theta rows": (lambda: staircase_mechanism(1.0, [0.0, 0.5, 0.5, 0.0]), "theta", "S theta = 1"),
    "staircase theta negative": (lambda: staircase_mechanism(1.0, [0.0, -0.5, 0.5, 0.0]), "theta", "-0.5"),
    # alphabet sizes
    "rr k one": (lambda: randomized_response(1, 1.0), "k", "1"),
    "rr k zero": (lambda: randomized_response(0, 1.0), "k", "0"),
    "rr k float": (lambda: randomized_response(2.5, 1.0), "k", "2.5"),
    "geometric k one": (lambda: truncated_geometric(1, 1.0), "k", "1"),
    "binary k one": (lambda: binary_mechanism(1.0, [0], 1), "k", "1"),
    "binary T outside": (lambda: binary_mechanism(1.0, [0, 5], 3), "T", "5"),
    # inputs outside the alphabet
    "privatize above k": (lambda: RR.privatize([0, 1, 4], 0), "x", "4"),
    "privatize negative": (lambda: RR.privatize(np.array([-1, 0]), 0), "x", "-1"),
    "privatize floats": (lambda: RR.privatize(np.array([0.5, 1.0]), 0), "x", "float64"),
    "privatize generic above m": (lambda: from_matrix([[0.5, 0.5], [0.2, 0.8]]).privatize([2], 0), "x", "2"),
    "privatize chunk size": (lambda: RR.privatize([0, 1], 0, chunk_size=0), "chunk_size", "0"),
    "sample_counts negative": (lambda: RR.sample_counts([5, -1, 0, 0], 0), "input_counts", "-1"),
    "sample_counts wrong length": (lambda: RR.sample_counts([5, 1], 0), "input_counts", "5"),
    "sample_counts fractional": (lambda: RR.sample_counts([5.5, 1, 0, 0], 0), "input_counts", "5.5"),
    "encode unknown label": (lambda: RR.encode([0, 7]), "values", "7"),
    "delta() eps string": (lambda: RR.delta("one"), "eps", "'one'"),
    "delta() eps string in list": (lambda: RR.delta(["a"]), "eps[0]", "'a'"),
    "rr eps complex": (lambda: randomized_response(3, 1j), "eps", "1j"),
    "rr eps huge int": (lambda: randomized_response(3, 10**400), "eps", "1000"),
    "binary T int": (lambda: binary_mechanism(1.0, 3, 5), "T", "3"),
    "binary T none": (lambda: binary_mechanism(1.0, None, 5), "T", "None"),
    "staircase theta string": (lambda: staircase_mechanism(1.0, "ab"), "theta", "'ab'"),
    "staircase empty patterns": (
        lambda: staircase_mechanism(1.0, [0.5], patterns=np.array([], int), k=2),
        "patterns",
        "array",
    ),
    "staircase 3-d patterns": (
        lambda: staircase_mechanism(1.0, [0.5], patterns=np.zeros((1, 1, 2))),
        "patterns",
        "array",
    ),
    "pattern k one": (lambda: pattern_matrix(1, 1.0), "k", "1"),
    "pattern eps overflow": (lambda: pattern_matrix(2, 710.0), "eps", "710.0"),
    "sample_counts overflow": (
        lambda: RR.sample_counts([2**62, 2**62, 0, 0], 0),
        "input_counts",
        "9223372036854775808",
    ),
    "labels unhashable": (
        lambda: from_matrix([[1.0, 0.0], [0.0, 1.0]], input_labels=[[1], [2]]),
        "input_labels",
        "[[1], [2]]",
    ),
    "estimator rr eps 0": (lambda: frequency_estimate(randomized_response(3, 0.0), [1, 2, 3]), "mechanism", "eps=0.0"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_raises_project_error_naming_parameter(case):
    call, parameter, value = CASES[case]
    with pytest.raises(LdpSimError) as info:
        call()
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(parameter + ":"), message
    assert value in message, message
    assert "expected" in message, message
    assert "\n" not in message, "the message must be one line"


def test_boundary_values_are_accepted():
    """The edges of the valid ranges are valid: eps = 0, delta in {0, 1}, rows summing to one
    within 1e-9, the largest symbol k - 1."""
    randomized_response(2, 0.0)
    quaternary_mechanism(0.0, 0.0)
    quaternary_mechanism(2.0, 1.0)
    from_matrix([[0.5, 0.5], [0.5, 0.5 + 1e-10]])
    binary_mechanism_for_priors([0.5, 0.5 + 1e-10], [0.5, 0.5], 1.0)
    assert RR.privatize([3], 0).shape == (1,)
    assert RR.sample_counts([0, 0, 0, 0], 0).sum() == 0
