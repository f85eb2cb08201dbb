"""Utilities and the better-of-binary-and-RR choice at extreme eps and tiny prior entries
(issue 14): correct values (references in mpmath from the closed-form mechanism matrices)
and no warning on any path the library handles (warnings are errors here)."""

from __future__ import annotations

import itertools
import warnings

import mpmath as mp
import numpy as np
import pytest

from ldpsim import LdpSimError
from ldpsim.mechanisms import binary_mechanism, randomized_response
from ldpsim.utility import KL, ChiSquare, Hellinger, MutualInformation, TotalVariation, better_of_binary_and_rr
from ldpsim.utility.optimal import binary_for


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def rr_mp(k: int, eps: float):
    e = mp.exp(mp.mpf(eps))
    return [[e / (k - 1 + e) if x == y else 1 / (k - 1 + e) for y in range(k)] for x in range(k)]


def binary_mp(T, k: int, eps: float):
    p, r = 1 / (1 + mp.exp(-mp.mpf(eps))), 1 / (1 + mp.exp(mp.mpf(eps)))  # r = 1 - p, not rounded to 0
    return [[p, r] if x in T else [r, p] for x in range(k)]


def marginal(P, Q):
    return [mp.fsum(mp.mpf(P[x]) * Q[x][y] for x in range(len(P))) for y in range(len(Q[0]))]


def kl_mp(a, c):
    return mp.fsum(ai * mp.log(ai / ci) for ai, ci in zip(a, c) if ai > 0)


def chi2_mp(a, c):
    return mp.fsum((ai - ci) ** 2 / ci for ai, ci in zip(a, c))


def mi_mp(P, Q):
    m = marginal(P, Q)
    return mp.fsum(
        mp.mpf(P[x]) * Q[x][y] * mp.log(Q[x][y] / m[y]) for x in range(len(P)) for y in range(len(m)) if Q[x][y] > 0
    )


def h2(p):
    return mp.mpf(0) if p in (0, 1) else -p * mp.log(p) - (1 - p) * mp.log(1 - p)


def test_zero_priors_raise_one_clean_error():
    """Defect 11: zeros in P0/P1 must give the error line alone (no RuntimeWarning first)."""
    for cls in (KL, TotalVariation, ChiSquare, Hellinger):
        for P0, P1 in (([0.5, 0.5, 0.0], [0.2, 0.3, 0.5]), ([0.2, 0.3, 0.5], [0.5, 0.0, 0.5])):
            with pytest.raises(LdpSimError, match=r"^P[01]: got "):
                better_of_binary_and_rr(cls(P0, P1), 1.0)
    with pytest.raises(LdpSimError, match=r"^P: got "):
        better_of_binary_and_rr(MutualInformation([0.5, 0.5, 0.0]), 1.0)


@pytest.mark.parametrize("eps", [700.0, 745.0, 800.0, 1e4])
def test_mutual_information_binary_choice_past_e_to_the_minus_745(eps):
    """Defect 11: the staircase pattern formula took log(e^-eps + (1 - e^-eps) P(T)) = log 0
    for T empty once e^-eps underflowed ('divide by zero encountered in log'), and 0 * -inf
    made a NaN that argmax then picked (the empty set: a useless binary mechanism)."""
    P = [0.5, 0.3, 0.15, 0.05]
    U = MutualInformation(P)
    b = binary_for(U, eps)
    # at this eps the binary mechanism is noiseless to double precision: I = h(P(T)); the best
    # T is the best balanced split (here {0} or its complement: P(T) = 0.5)
    best = max(h2(mp.fsum(mp.mpf(P[i]) for i in T)) for r in range(1, 4) for T in itertools.combinations(range(4), r))
    assert U.value(b) == pytest.approx(float(best), rel=1e-12)
    chosen = better_of_binary_and_rr(U, eps)
    H = -mp.fsum(mp.mpf(p) * mp.log(p) for p in P)
    assert U.value(chosen) == pytest.approx(float(H), rel=1e-12)  # RR is the identity here


TINY = [
    ([1e-300, 1 - 1e-300], [1 - 1e-300, 1e-300]),
    ([0.2, 0.3, 0.5], [0.5, 0.5 - 5e-324, 5e-324]),
    ([1 - 2e-300, 1e-300, 1e-300], [1e-300, 1e-300, 1 - 2e-300]),
]


@pytest.mark.parametrize("eps", [1.0, 50.0, 700.0, 710.0, 800.0])
@pytest.mark.parametrize("case", range(len(TINY)))
def test_divergence_utilities_with_tiny_priors_at_large_eps(case, eps):
    """KL and chi-square of binary and RR mechanisms overflowed in intermediate ratios
    ('overflow encountered in multiply / divide / square') when a marginal is tiny; the values
    are finite (or a justified inf: chi-square beyond the largest float)."""
    P0, P1 = TINY[case]
    k = len(P0)
    with mp.workdps(50):
        T = [x for x in range(k) if P0[x] >= P1[x]]
        for name, Q, Qmp in (
            ("binary", binary_mechanism(eps, T, k), binary_mp(T, k, eps)),
            ("rr", randomized_response(k, eps), rr_mp(k, eps)),
        ):
            a, c = marginal(P0, Qmp), marginal(P1, Qmp)
            kl, chi2 = kl_mp(a, c), chi2_mp(a, c)
            assert KL(P0, P1).value(Q) == pytest.approx(float(kl), rel=1e-9), name
            got = ChiSquare(P0, P1).value(Q)
            if chi2 > np.finfo(float).max:
                assert got == np.inf
            else:
                assert got == pytest.approx(float(chi2), rel=1e-9), name
            for cls in (TotalVariation, Hellinger):
                assert np.isfinite(cls(P0, P1).value(Q))
        better_of_binary_and_rr(KL(P0, P1), eps)
        better_of_binary_and_rr(ChiSquare(P0, P1), eps)


@pytest.mark.parametrize("eps", [1.0, 700.0, 800.0])
def test_mutual_information_value_with_tiny_prior_entries(eps):
    """I(X;Y) was inf: the terms P(x) M(y) underflowed to 0 beside P(x) Q(y|x) > 0. (These
    priors do not sum to 1 in floats -- 1 - 1e-300 is 1.0 -- and the value, a sum of
    non-negative terms P(x) (q log(q/M) - q + M), carries that excess: |sum(P) - 1| sum(P).)"""
    import math

    for P in ([1 - 1e-300, 1e-300], [0.5, 0.5 - 1e-320, 1e-320]):
        k = len(P)
        with mp.workdps(50):
            ref = mi_mp(P, rr_mp(k, eps))
        got = MutualInformation(P).value(randomized_response(k, eps))
        with mp.workdps(400):  # the excess 1e-300 needs 300 digits beside 1
            excess = float(abs(mp.fsum(map(mp.mpf, P)) - 1) * mp.fsum(map(mp.mpf, P)))
        assert got == pytest.approx(float(ref), rel=1e-9, abs=1.01 * excess + 1e-320)
        assert math.isfinite(got)
        better_of_binary_and_rr(MutualInformation(P), eps)
