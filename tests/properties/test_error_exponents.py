r"""Error exponents of the exact Neyman-Pearson test on privatised reports, against bounds.

Setting (docs/theory.md sec. 5; Kairouz, Oh and Viswanath 2014, Sec. 1): ``n`` reports
``Y_i ~ M_v`` i.i.d. of the binary mechanism for a prior pair ``(P0, P1)``; the exact
randomised NP test at type I error ``alpha`` (:func:`ldpsim.analyst.lrt_exact`) has type II
error ``beta_n``. Everything here is exact arithmetic on binomial laws, so nothing is random:
the tolerances are *theorems* (the remainders of the expansions, stated below), plus float
rounding.

**Second order (Strassen 1962).** Let ``i(y) = log M0(y)/M1(y)``, ``D = E_0 i`` (the KL
divergence), ``V = Var_0 i``, ``rho = E_0 |i - D|^3`` and ``B = C_BE rho / V^{3/2}`` with
the Berry-Esseen constant ``C_BE = 0.4748`` for i.i.d. sums (Shevtsova 2011), so that the
law of ``S = sum_i i(Y_i)`` under H0 is within ``B / sqrt(n)`` of ``N(nD, nV)`` in
Kolmogorov distance. Then, for every ``n`` with ``B/sqrt(n) < alpha`` and
``alpha + 2B/sqrt(n) < 1``:

* (achievability) the test accepting H0 iff ``S > g``, ``g = nD + sqrt(nV) Phi^{-1}(alpha - B/sqrt n)``,
  has type I error ``P0(S <= g) <= alpha`` and type II error
  ``P1(S > g) = E_0[e^{-S} 1{S > g}] <= e^{-g}``; so ``-log beta_n >= g``;
* (converse) any test with type I error ``<= alpha`` accepts H0 on a set ``A`` with
  ``P0(A) >= 1 - alpha``, so ``beta = E_0[e^{-S} 1_A] >= e^{-g'} (P0(A) - P0(S > g'))``;
  with ``g' = nD + sqrt(nV) Phi^{-1}(alpha + 2B/sqrt n)`` the bracket is ``>= B/sqrt n``,
  so ``-log beta_n <= g' + log(sqrt(n)/B)``.

Divided by ``n``: ``-(1/n) log beta_n = D + sqrt(V/n) Phi^{-1}(alpha) + r_n`` (note the sign:
``Phi^{-1}(alpha) < 0`` for ``alpha < 1/2``, the exponent approaches ``D`` from below), with
``|r_n|`` at most the distance from the second-order term to these two bounds, which is
``O(log(n)/n) = o(1/sqrt n)``. The test checks that the exact exponent lies between the
bounds at every ``n`` of a grid up to ``4 x 10^5`` (so ``sqrt(n) |r_n|`` is at most
``sqrt(n)`` times the band's half-width, which goes to 0 like ``log(n)/sqrt(n)``:
``test_remainder_band_is_o_of_one_over_sqrt_n``).

**Small eps (Kairouz, Oh and Viswanath 2014, Sec. 3 and 6).** For the binary mechanism with
``T = {x : P0(x) >= P1(x)}``, ``M_v(0) = 1/(1+e^eps) + tanh(eps/2) P_v(T)``, so
``M0(0) - M1(0) = tanh(eps/2) TV`` and both lie in ``[(1-t)/2, (1+t)/2]``, ``t = tanh(eps/2)``.
From ``kl(a||b) = int_b^a (a - s) / (s(1-s)) ds`` with ``s(1-s)`` in ``[(1-t^2)/4, 1/4]``:

    2 tanh(eps/2)^2 TV^2  <=  D(M0||M1)  <=  2 sinh(eps/2)^2 TV^2,

so ``D / eps^2 -> TV^2 / 2``, within a relative ``max(sinh(eps/2)^2, 1 - (1 - eps^2/12)^2)``
(``tanh(x)/x >= 1 - x^2/3``) of it. The tests check the library's KL utility of the binary
mechanism and ``kl_divergence`` of its marginals against both for eps in [1e-3, 2], and the
KL utility and ``kl_divergence`` down to eps = 1e-8. (``kl_divergence`` was once a plain
sum of ``M0 log(M0/M1)``, whose absolute rounding error near 1e-17 made its relative error
grow like ``1e-17 / eps^2``, a factor 6e4 off at eps = 1e-10; it now sums non-negative
terms that keep their relative precision.)
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import special, stats

from ldpsim.analyst import lrt_exact
from ldpsim.mechanisms import binary_mechanism_for_priors
from ldpsim.utility import KL, kl_divergence
from tests.properties import examples

C_BE = 0.4748  # Shevtsova (2011), the i.i.d. Berry-Esseen constant
N_GRID = (1_000, 10_000, 100_000, 400_000)
ROUND = 1e-9  # float rounding allowance on exponents (log-space sums over <= 4e5 terms)


@st.composite
def priors(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """A prior pair over k in 2..6 symbols with total variation >= 0.05."""
    k = draw(st.integers(2, 6))
    w0 = np.array(draw(st.lists(st.floats(0.02, 1.0), min_size=k, max_size=k)))
    w1 = np.array(draw(st.lists(st.floats(0.02, 1.0), min_size=k, max_size=k)))
    P0, P1 = w0 / w0.sum(), w1 / w1.sum()
    assume(0.5 * np.abs(P0 - P1).sum() >= 0.05)
    return P0, P1


def binary_marginals(P0: np.ndarray, P1: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``M0, M1`` of the binary mechanism straight from its definition (not the library),
    and the total variation ``P0(T) - P1(T)``."""
    T = P0 >= P1
    hi = 1.0 / (1.0 + math.exp(-eps))  # e^eps / (1 + e^eps)
    m = [hi * P[T].sum() + (1 - hi) * P[~T].sum() for P in (P0, P1)]
    return (
        np.array([m[0], 1 - m[0]]),
        np.array([m[1], 1 - m[1]]),
        float(P0[T].sum() - P1[T].sum()),
    )


def exact_log_beta(M0: np.ndarray, M1: np.ndarray, n: int, alpha: float) -> float:
    """``log beta_n`` of the exact randomised NP test, from the binomial law of the count
    ``c`` of output 0 (written out independently of :func:`ldpsim.analyst.lrt_exact`):
    with ``M0(0) > M1(0)`` the test rejects H0 for small ``c``, randomising at ``c*``."""
    a0, a1 = float(M0[0]), float(M1[0])
    assert a0 > a1
    c = int(stats.binom.ppf(alpha, n, a0))
    while stats.binom.cdf(c, n, a0) < alpha:
        c += 1
    while c > 0 and stats.binom.cdf(c - 1, n, a0) >= alpha:
        c -= 1
    below = stats.binom.cdf(c - 1, n, a0) if c > 0 else 0.0  # P0(reject for sure) < alpha
    gamma = (alpha - below) / stats.binom.pmf(c, n, a0)
    cs = np.arange(c + 1, n + 1)
    terms = stats.binom.logpmf(cs, n, a1)
    if gamma < 1:
        terms = np.append(terms, math.log1p(-gamma) + stats.binom.logpmf(c, n, a1))
    return float(special.logsumexp(terms))


def strassen_terms(M0: np.ndarray, M1: np.ndarray) -> tuple[float, float, float]:
    """``D``, ``V`` and the Berry-Esseen ``B`` of the log-likelihood ratio under H0."""
    i = np.log(M0) - np.log(M1)
    D = float(M0 @ i)
    V = float(M0 @ (i - D) ** 2)
    rho = float(M0 @ np.abs(i - D) ** 3)
    return D, V, C_BE * rho / V**1.5


def exponent_bounds(D: float, V: float, B: float, n: int, alpha: float) -> tuple[float, float]:
    """(lower, upper) bounds on ``-(1/n) log beta_n`` (module docstring)."""
    s = math.sqrt(V / n)
    lower = D + s * float(stats.norm.ppf(alpha - B / math.sqrt(n)))
    upper = D + s * float(stats.norm.ppf(alpha + 2 * B / math.sqrt(n))) + math.log(math.sqrt(n) / B) / n
    return lower, upper


@settings(max_examples=examples(6))
@given(pp=priors(), eps=st.floats(0.1, 3.0), alpha=st.floats(0.05, 0.5))
def test_exponent_follows_the_second_order_expansion(pp, eps, alpha):
    P0, P1 = pp
    M0, M1, _ = binary_marginals(P0, P1, eps)
    mech = binary_mechanism_for_priors(P0, P1, eps)
    assert np.allclose(mech.marginal(P0), M0, rtol=1e-12) and np.allclose(mech.marginal(P1), M1, rtol=1e-12)
    D, V, B = strassen_terms(M0, M1)
    ns = [n for n in N_GRID if B / math.sqrt(n) < alpha and alpha + 2 * B / math.sqrt(n) < 1]
    assert ns and ns[-1] == N_GRID[-1], f"test design: B = {B:.3g} too large for alpha = {alpha:.3g}"
    for n in ns:
        test = lrt_exact(M0, M1, n, alpha)
        ours = exact_log_beta(M0, M1, n, alpha)
        assert test.type1 == pytest.approx(alpha, rel=1e-9)
        assert test.log_beta == pytest.approx(ours, rel=1e-10, abs=1e-8), f"n={n}"
        exponent = -test.log_beta / n
        lower, upper = exponent_bounds(D, V, B, n, alpha)
        second = D + math.sqrt(V / n) * float(stats.norm.ppf(alpha))
        info = (
            f"n={n} D={D:.6g} V={V:.6g} B={B:.3g}: exponent {exponent:.8g} not in [{lower:.8g}, {upper:.8g}] "
            f"(second order {second:.8g})"
        )
        assert lower - ROUND <= exponent <= upper + ROUND, info
    # the remainder is o(1/sqrt n): sqrt(n) |r_n| at the largest n, bounded by the band
    n = ns[-1]
    r = exponent - second
    assert math.sqrt(n) * abs(r) <= math.sqrt(n) * max(upper - second, second - lower) + ROUND


def test_remainder_band_is_o_of_one_over_sqrt_n():
    # the band around the second-order term, times sqrt(n), shrinks like log(n)/sqrt(n)
    M0, M1 = np.array([0.7, 0.3]), np.array([0.4, 0.6])
    D, V, B = strassen_terms(M0, M1)
    widths = []
    for n in (10**3, 10**4, 10**5, 10**6, 10**8):
        lo, hi = exponent_bounds(D, V, B, n, 0.1)
        second = D + math.sqrt(V / n) * float(stats.norm.ppf(0.1))
        widths.append(math.sqrt(n) * max(hi - second, second - lo))
    assert all(b < a for a, b in itertools.pairwise(widths)) and widths[-1] < 1e-2


def small_eps_band(eps: float) -> tuple[float, float]:
    """``[2 tanh(eps/2)^2, 2 sinh(eps/2)^2] / eps^2``: D / (eps^2 TV^2) lies in it."""
    return 2 * math.tanh(eps / 2) ** 2 / eps**2, 2 * math.sinh(eps / 2) ** 2 / eps**2


@settings(max_examples=examples(20))
@given(pp=priors(), eps=st.floats(1e-3, 2.0))
def test_divergence_over_eps_squared_approaches_its_constant(pp, eps):
    P0, P1 = pp
    mech = binary_mechanism_for_priors(P0, P1, eps)
    M0, M1 = mech.marginal(P0), mech.marginal(P1)
    _, _, tv = binary_marginals(P0, P1, eps)
    assert tv == pytest.approx(0.5 * np.abs(P0 - P1).sum(), rel=1e-12)
    lo, hi = small_eps_band(eps)
    rel = max(math.sinh(eps / 2) ** 2, 1 - (1 - eps**2 / 12) ** 2)
    # the marginals' own rounding (~1e-17 per entry) against D ~ eps^2 TV^2 / 2
    rounding = 1e-12 / (eps * tv) ** 2
    for what, D in (
        ("kl_divergence", kl_divergence(M0, M1)),
        ("KL utility", KL(P0, P1).value(mech)),
    ):
        ratio = D / (eps**2 * tv**2)
        assert lo * (1 - rounding) <= ratio <= hi * (1 + rounding), (
            f"{what}: D/(eps^2 TV^2) = {ratio!r} not in [{lo!r}, {hi!r}]"
        )
        # hence within a relative max(sinh(eps/2)^2, 1 - (1 - eps^2/12)^2) of the constant 1/2
        assert abs(ratio / 0.5 - 1) <= rel * (1 + 1e-9) + 2 * rounding, what


@settings(max_examples=examples(10))
@given(pp=priors(), eps=st.floats(1e-8, 1e-3))
def test_kl_utility_keeps_its_precision_at_tiny_eps(pp, eps):
    # the KL utility of the binary mechanism stays within the band down to eps = 1e-8
    # (observed relative error ~ 1e-16 / eps; allowance 1e-13 / (eps TV^2))
    P0, P1 = pp
    mech = binary_mechanism_for_priors(P0, P1, eps)
    _, _, tv = binary_marginals(P0, P1, eps)
    lo, hi = small_eps_band(eps)
    M0, M1 = mech.marginal(P0), mech.marginal(P1)
    rounding = 1e-13 / (eps * tv**2)
    for what, D in (("KL utility", KL(P0, P1).value(mech)), ("kl_divergence", kl_divergence(M0, M1))):
        ratio = D / (eps**2 * tv**2)
        assert lo * (1 - rounding) <= ratio <= hi * (1 + rounding), (
            f"{what}: D/(eps^2 TV^2) = {ratio!r} not in [{lo!r}, {hi!r}]"
        )
