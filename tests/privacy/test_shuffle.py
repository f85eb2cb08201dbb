"""Amplification by shuffling (Feldman, McMillan and Talwar 2021): the divergence computed
in O(n) against a brute-force sum over every outcome of the clone reduction in 50-digit
arithmetic, the single respondent against randomized response, monotonicity, and the
paper's closed-form bound above the numerical one."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import randomized_response
from ldpsim.privacy.shuffle import shuffle_delta, shuffle_epsilon, shuffle_epsilon_closed_form


def brute_force_delta(eps0: float, n: int, eps: float) -> mp.mpf:
    """sum over (a, b) of (P - e^eps Q)_+, P and Q written out from their definition:
    C ~ Bin(n - 1, e^-eps0), A ~ Bin(C, 1/2), D ~ Bern(e^eps0 / (e^eps0 + 1)),
    P = (A + D, C - A + 1 - D), Q = (A + 1 - D, C - A + D)."""
    with mp.workdps(50):
        p_clone = mp.e ** (-mp.mpf(eps0))
        q = mp.e ** mp.mpf(eps0) / (mp.e ** mp.mpf(eps0) + 1)
        P: dict[tuple[int, int], mp.mpf] = {}
        Q: dict[tuple[int, int], mp.mpf] = {}
        for c in range(n):
            pc = mp.binomial(n - 1, c) * p_clone**c * (1 - p_clone) ** (n - 1 - c)
            for a in range(c + 1):
                pa = pc * mp.binomial(c, a) / mp.mpf(2) ** c
                for d, pd in ((1, q), (0, 1 - q)):
                    kp = (a + d, c - a + 1 - d)
                    kq = (a + 1 - d, c - a + d)
                    P[kp] = P.get(kp, mp.mpf(0)) + pa * pd
                    Q[kq] = Q.get(kq, mp.mpf(0)) + pa * pd
        ee = mp.e ** mp.mpf(eps)
        return mp.fsum(max(mp.mpf(0), P.get(k, 0) - ee * Q.get(k, 0)) for k in set(P) | set(Q))


@pytest.mark.parametrize("eps0, n, eps", [(1.0, 1, 0.3), (1.0, 5, 0.2), (2.0, 12, 0.7), (0.5, 30, 0.1),
                                          (3.0, 25, 1.5), (1.5, 40, 0.0)])  # fmt: skip
def test_the_linear_time_divergence_equals_the_brute_force_sum(eps0, n, eps):
    got = shuffle_delta(eps0, n, eps)
    want = float(brute_force_delta(eps0, n, eps))
    assert got == pytest.approx(want, rel=1e-11, abs=1e-15)


def test_one_respondent_is_binary_randomized_response():
    for eps0 in (0.5, 1.0, 3.0):
        rr = randomized_response(2, eps0)
        for eps in (0.0, 0.2 * eps0, 0.9 * eps0):
            assert shuffle_delta(eps0, 1, eps) == pytest.approx(float(rr.delta(eps)), rel=1e-12)
        assert shuffle_epsilon(eps0, 1, 0.0) == pytest.approx(eps0, rel=1e-8)


def test_more_respondents_or_less_local_noise_move_eps_the_right_way():
    ns = [100, 1_000, 10_000, 100_000]
    for eps0 in (1.0, 3.0):
        eps = [shuffle_epsilon(eps0, n, 1e-6) for n in ns]
        assert all(a > b for a, b in zip(eps, eps[1:])), eps
        assert eps[-1] < eps0
    by_eps0 = [shuffle_epsilon(e0, 10_000, 1e-6) for e0 in (0.5, 1.0, 2.0, 4.0)]
    assert all(a < b for a, b in zip(by_eps0, by_eps0[1:])), by_eps0


@pytest.mark.parametrize("eps0, n, delta", [(1.0, 10_000, 1e-6), (2.0, 100_000, 1e-8), (0.5, 1_000_000, 1e-6),
                                            (3.0, 1_000_000, 1e-9)])  # fmt: skip
def test_the_numerical_bound_is_never_above_the_closed_form(eps0, n, delta):
    closed = shuffle_epsilon_closed_form(eps0, n, delta)
    assert closed < eps0  # inside the theorem's range
    numeric = shuffle_epsilon(eps0, n, delta)
    assert numeric <= closed
    assert shuffle_delta(eps0, n, numeric) <= delta


def test_the_closed_form_by_hand():
    eps0, n, delta = 1.0, 10**6, 1e-6
    e = math.e
    want = math.log(1 + (e - 1) / (e + 1) * (8 * math.sqrt(e * math.log(4 / delta)) / 1000 + 8 * e / n))
    assert shuffle_epsilon_closed_form(eps0, n, delta) == pytest.approx(want, rel=1e-14)
    assert shuffle_epsilon_closed_form(5.0, 100, 1e-6) == 5.0  # outside the theorem's range


@pytest.mark.parametrize("args, name", [((0.0, 10, 0.1), "eps0"), ((1.0, 0, 0.1), "n"), ((1.0, 10, -1.0), "eps"),
                                        ((float("nan"), 10, 0.1), "eps0")])  # fmt: skip
def test_bad_arguments_are_one_line(args, name):
    with pytest.raises(LdpSimError, match=name) as err:
        shuffle_delta(*args)
    assert "\n" not in str(err.value)
