"""Optimal composition of (eps, delta)-DP mechanisms (Kairouz et al. 2015, Sec. 3-4, docs/theory.md sec. 6).

Every reference value is computed here, independently of ``ldpsim.privacy.composition``:

* brute force: the k-fold product of quaternary mechanisms enumerated over all 4^k
  outcomes in mpmath, and the hockey-stick divergence ``sum_o (P(o) - e^t R(o))_+`` summed
  outcome by outcome (k <= 7; heterogeneous products up to 6 mechanisms);
* Theorem 3.3's lattice formula ``delta_i`` transcribed literally (mpmath);
* for large k, the defining sum over ``l`` (the number of "low" symbols) in mpmath at 50
  digits, each term ``C(k,l) e^{(k-l) eps} (1 - e^{t - (k-2l) eps}) / (1+e^eps)^k`` being
  positive, so there is no cancellation between terms; for k = 10^6, 10^7 a window of
  that same sum around its largest term, with a rigorous bound on the omitted part (the
  terms are log-concave in l), checked against the full sum at k = 10^3..10^5;
* the bounds of Theorems 3.1, 3.2, 3.4, 3.5 transcribed from docs/theory.md sec. 6 and inverted
  in closed form by hand.

Tolerances: relative 1e-12 for the small-k brute force and 1e-10 for large k, plus the
part that no double-precision implementation can avoid: the value's sensitivity to one
rounding of ``eps`` and ``eps_t`` (``~ 1e-15 (eps_t + k eps + 1) (P(S) + e^t R(S))`` where S
is the optimal event); it matters only where ``delta`` is near a zero of itself (just
below ``k eps`` with delta = 0). Where delta underflows doubles the comparison is on
``log delta``: ``|error| <= 1e-10 + 1e-14 |log delta|``.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mpmath import mp, mpf

from ldpsim.errors import LdpSimError
from tests.tiers import sample

comp = pytest.importorskip("ldpsim.privacy.composition")

MP_DPS = 50
TIE = mpf(10) ** -(MP_DPS - 10)
ULP_SLACK = 1e-15  # a few units of the double rounding of eps and eps_t (see module docstring)


# ---------------------------------------------------------------------------------------
# Independent oracles (mpmath; nothing below calls the code under test)
# ---------------------------------------------------------------------------------------


def mp_quaternary(eps: float, delta: float) -> tuple[list, list]:
    """Rows P, R of the quaternary mechanism (Kairouz et al. 2014, Sec. 5) in mpmath, from its definition."""
    e = mpmath.exp(mpf(eps))
    d = mpf(delta)
    p = [d, (1 - d) * e / (1 + e), (1 - d) / (1 + e), mpf(0)]
    return p, p[::-1]


def brute_force(mechanisms: list[tuple[float, float]], eps_ts) -> list[tuple]:
    """Hockey-stick divergence of the product of quaternary mechanisms, by enumeration of
    all 4^k outcomes: for each eps_t, (sum_o (P(o) - e^t R(o))_+, P(S) + e^t R(S)) with S the
    set where the summand is positive."""
    with mp.workdps(MP_DPS):
        p = np.array([mpf(1)], dtype=object)
        r = np.array([mpf(1)], dtype=object)
        for eps, delta in mechanisms:
            pq, rq = mp_quaternary(eps, delta)
            p = np.multiply.outer(p, np.array(pq, dtype=object)).ravel()
            r = np.multiply.outer(r, np.array(rq, dtype=object)).ravel()
        out = []
        for t in eps_ts:
            f = mpmath.exp(mpf(t))
            # outcomes with P = e^t R up to the working precision (ties at the corners) add 0
            diff = [(a, f * b) for a, b in zip(p, r) if a - f * b > TIE * (a + f * b)]
            out.append((mpmath.fsum(a - b for a, b in diff), mpmath.fsum(a + b for a, b in diff)))
        return out


def lattice_delta_i(eps: float, k: int, i: int):
    """Theorem 3.3, literally: delta_i = sum_{l=0}^{i-1} C(k,l)(e^{(k-l)eps} - e^{(k-2i+l)eps})/(1+e^eps)^k."""
    with mp.workdps(MP_DPS):
        ee = mpf(eps)
        e = mpmath.exp(ee)
        s = mpmath.fsum(
            mpmath.binomial(k, l) * (mpmath.exp((k - l) * ee) - mpmath.exp((k - 2 * i + l) * ee)) for l in range(i)
        )
        return s / (1 + e) ** k


def _pure(delta: float, k: int):
    """(1 - (1-delta)^k, (1-delta)^k) in mpmath."""
    with mp.workdps(MP_DPS):
        keep = (1 - mpf(delta)) ** k
        return 1 - keep, keep


def direct_sum(eps: float, delta: float, k: int, eps_t: float, dps: int = MP_DPS) -> tuple:
    """The defining sum (docs/theory.md sec. 6), every l with (k - 2l) eps > eps_t:
    ``1 - (1-d)^k + (1-d)^k sum_l C(k,l) (e^{(k-l)eps} - e^{eps_t} e^{l eps}) / (1+e^eps)^k``.
    Terms by the recurrence of C(k,l) e^{(k-l) eps}/(1+e^eps)^k in l, each times
    ``1 - e^{eps_t - (k-2l) eps}`` (expm1 where that is near 0). Returns (delta, mass) with
    mass = P(S) + e^t R(S) (the conditioning scale)."""
    with mp.workdps(dps):
        ee, t = mpf(eps), mpf(eps_t)
        e = mpmath.exp(ee)
        a = (e / (1 + e)) ** k
        r = mpmath.exp(t - k * ee)
        step_r, einv = mpmath.exp(2 * ee), 1 / e
        s = mass = mpf(0)
        l = 0
        while l <= k and (k - 2 * l) * ee > t:
            s += a * (1 - r) if r < 0.5 else a * -mpmath.expm1(t - (k - 2 * l) * ee)
            mass += a * (1 + r)
            a = a * (k - l) / (l + 1) * einv
            r = r * step_r
            l += 1
        lost, keep = _pure(delta, k)
        return lost + keep * s, lost + keep * mass


def windowed_sum(eps: float, delta: float, k: int, eps_t: float, dps: int = 40, rel: float = 1e-30) -> tuple:
    """The same sum as :func:`direct_sum`, walking outward from the largest term.

    The term ``T_l = C(k,l) q^l (1-q)^(k-l) (1 - e^{eps_t - (k-2l) eps})`` (q = 1/(1+e^eps))
    is log-concave in l (a binomial pmf times log(1 - e^x), x linear in l), so along either
    direction, once the ratio rho of consecutive terms is < 1 every later ratio is <= rho and
    the rest of that side is at most ``T rho / (1 - rho)``; the walk stops when that is below
    ``rel`` times the partial sum. The first term comes from log-gamma. Returns (delta, mass)."""
    with mp.workdps(dps + 20):
        ee, t = mpf(eps), mpf(eps_t)
        # L = number of l in 0..k with (k - 2l) eps > eps_t (exact: the products are exact here)
        hi = int(mpmath.ceil((k * ee - t) / (2 * ee))) - 1  # largest l with (k-2l)eps > t
        while hi >= 0 and not ((k - 2 * hi) * ee > t):
            hi -= 1
        while hi + 1 <= k and (k - 2 * (hi + 1)) * ee > t:
            hi += 1
        lost, keep = _pure(delta, k)
        if hi < 0:
            return lost, lost
        hi = min(hi, k)
        q = 1 / (1 + mpmath.exp(ee))
        lq, l1q = mpmath.log(q), mpmath.log1p(-q)

        def log_pmf(l: int):
            return mpmath.loggamma(k + 1) - mpmath.loggamma(l + 1) - mpmath.loggamma(k - l + 1) + l * lq + (k - l) * l1q

        def factor(l: int):
            return -mpmath.expm1(t - (k - 2 * l) * ee)

        def plus(l: int):
            return 1 + mpmath.exp(t - (k - 2 * l) * ee)

        l0 = max(0, min(hi, int(k * q)))
        a0 = mpmath.exp(log_pmf(l0))
        total = a0 * factor(l0)
        mass = a0 * plus(l0)
        ratio_up = (1 - q) / q  # pmf(l-1)/pmf(l) = l/(k-l+1) * (1-q)/q
        # downward
        a, prev = a0, total
        l = l0
        while l > 0:
            a = a * l / (k - l + 1) * ratio_up
            l -= 1
            term = a * factor(l)
            total += term
            mass += a * plus(l)
            rho = term / prev
            prev = term
            if rho < 1 and term * rho / (1 - rho) < rel * total:
                break
        # upward (never beyond hi)
        a, prev = a0, a0 * factor(l0)
        l = l0
        while l < hi:
            a = a * (k - l) / (l + 1) / ratio_up
            l += 1
            term = a * factor(l)
            total += term
            mass += a * plus(l)
            rho = term / prev
            prev = term
            if rho < 1 and term * rho / (1 - rho) < rel * total:
                break
        return lost + keep * total, lost + keep * mass


def oracle_epsilon(eps: float, delta: float, k: int, delta_total: float) -> float:
    """Smallest eps_t >= 0 with delta(eps_t) <= delta_total, by bisection to relative 1e-12
    (the windowed sum, checked against the full one in test_windowed_oracle_matches_full_sum)."""
    if direct_sum(eps, delta, k, 0.0)[0] <= delta_total:
        return 0.0
    lo, hi = 0.0, k * eps
    while hi - lo > 1e-12 * hi:  # far inside the 1e-9 the tests ask for
        mid = 0.5 * (lo + hi)
        if windowed_sum(eps, delta, k, mid, dps=20, rel=1e-25)[0] <= delta_total:
            hi = mid
        else:
            lo = mid
    return hi


# --- the bounds, transcribed from docs/theory.md sec. 6 / Kairouz et al. 2015, Theorems 3.1, 3.2, 3.4, 3.5 ---


def my_basic(eps, delta, k):
    return k * eps, min(1.0, k * delta)


def _one_minus_keep(log_keep: float, ds: float) -> float:
    """1 - e^{log_keep} (1 - ds), without the cancellation of the naive form."""
    return -math.expm1(log_keep + math.log1p(-ds))


def my_drv(eps, delta, k, ds):
    e = math.exp(eps)
    return min(k * eps, k * eps * (e - 1) + eps * math.sqrt(2 * k * math.log(1 / ds))), min(1.0, k * delta + ds)


def _kov_eps(sum_eps, drift, sum_sq, ds):
    return min(
        sum_eps,
        drift + math.sqrt(2 * sum_sq * math.log(math.e + math.sqrt(sum_sq) / ds)),
        drift + math.sqrt(2 * sum_sq * math.log(1 / ds)),
    )


def my_kov(eps, delta, k, ds, form="general"):
    e = math.exp(eps)
    drift = k * eps * (e - 1) / (e + 1) if form == "general" else k * eps**2
    return _kov_eps(k * eps, drift, k * eps**2, ds), _one_minus_keep(k * math.log1p(-delta), ds)


def my_kov_het(eps_list, delta_list, ds):
    drift = sum(x * math.expm1(x) / (math.exp(x) + 1) for x in eps_list)
    log_keep = sum(math.log1p(-d) for d in delta_list)
    return _kov_eps(sum(eps_list), drift, sum(x * x for x in eps_list), ds), _one_minus_keep(log_keep, ds)


def my_bound_delta(name, eps, delta, k, t):
    """Smallest total delta the named bound certifies at eps_total = t, inverted by hand:
    each term of the min in eps is decreasing in the slack, so the slack is the smallest one
    that brings some term down to t."""
    if name == "basic":
        return min(1.0, k * delta) if t >= k * eps else 1.0
    if name == "drv":
        if t >= k * eps:
            return min(1.0, k * delta)
        drift = k * eps * math.expm1(eps)
        if t <= drift:
            return 1.0
        ds = math.exp(-(((t - drift) / eps) ** 2) / (2 * k))
        return min(1.0, k * delta + ds)
    log_keep = k * math.log1p(-delta)
    if t >= k * eps:
        return -math.expm1(log_keep)
    e = math.exp(eps)
    drift = k * eps * (e - 1) / (e + 1) if name == "kov" else k * eps**2
    if t <= drift:
        return 1.0
    z = ((t - drift) / eps) ** 2 / (2 * k)
    ds = math.exp(-z)  # third term
    if z > 1:
        ds = min(ds, math.sqrt(k * eps**2) / (math.exp(z) - math.e))  # second term
    return min(1.0, _one_minus_keep(log_keep, ds)) if ds < 1 else 1.0


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def assert_close(got, ref, mass, eps, k, t, rel=1e-12, what=""):
    ref, mass = float(ref), float(mass)
    tol = rel * ref + ULP_SLACK * (abs(t) + k * eps + 1) * mass
    assert abs(float(got) - ref) <= tol, f"{what}: got {float(got)!r}, reference {ref!r} (tol {tol:.3g})"


def assert_log_close(got_log, ref, mass, eps, k, t, what=""):
    """|log got - log ref| <= 1e-10 + 1e-14 |log ref| + (rounding sensitivity)/ref; where ref is
    within the rounding sensitivity of 0 (just below k eps with delta = 0: the double product
    k eps may already be >= eps_t) only got <= ref + that sensitivity is required."""
    slack = ULP_SLACK * (abs(t) + k * eps + 1) * mass
    with mp.workdps(MP_DPS):
        ref_log = float(mpmath.log(ref)) if ref > 0 else -math.inf
        if ref <= 1e3 * slack:
            assert got_log <= float(mpmath.log(ref + slack)), what
            return
        tol = 1e-10 + 1e-14 * abs(ref_log) + float(slack / ref)
    assert abs(got_log - ref_log) <= tol, (
        f"{what}: log got {got_log!r}, reference {ref_log!r} (diff {got_log - ref_log:.3g})"
    )


EPS = st.floats(0.01, 5.0)
DELTA = st.one_of(st.just(0.0), st.floats(0.0, 0.2), st.floats(1e-9, 1e-3))
SMALL_K = st.integers(1, 7)


@st.composite
def small_case(draw):
    eps, delta, k = draw(EPS), draw(DELTA), draw(SMALL_K)
    ts = draw(st.lists(st.floats(0.0, k * eps + 1.0), min_size=1, max_size=4))
    i = draw(st.integers(0, k // 2))
    ts += [(k - 2 * i) * eps, 0.0]
    if i > 0:  # between two lattice points, and a hair on either side of one
        ts += [(k - 2 * i + 1) * eps, (k - 2 * i) * eps * (1 + 1e-9), (k - 2 * i) * eps * (1 - 1e-9)]
    ts += [k * eps * (1 - 1e-7)]  # just below the last corner
    return eps, delta, k, sorted(set(ts))


# ---------------------------------------------------------------------------------------
# 1. Brute force over 4^k outcomes
# ---------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(small_case())
def test_brute_force_small_k(case):
    eps, delta, k, ts = case
    refs = brute_force([(eps, delta)] * k, ts)
    got_arr = comp.optimal_delta(eps, delta, k, np.array(ts))
    assert isinstance(got_arr, np.ndarray) and got_arr.shape == (len(ts),)
    for t, (ref, mass), ga in zip(ts, refs, got_arr):
        got = comp.optimal_delta(eps, delta, k, t)
        assert isinstance(got, float)
        where = f"optimal_delta({eps!r}, {delta!r}, {k}, {t!r})"
        assert_close(got, ref, mass, eps, k, t, what=where)
        assert_close(ga, ref, mass, eps, k, t, what=where + " [array]")
        if ref > 0:
            assert_log_close(comp.optimal_log_delta(eps, delta, k, t), ref, mass, eps, k, t, what="log " + where)


@pytest.mark.parametrize(
    "eps, delta, k",
    sample(
        [(0.1, 0.001, 7), (1.0, 0.0, 6), (3.0, 0.05, 5), (0.01, 0.0, 7), (5.0, 0.2, 4), (0.7, 1e-6, 1), (2.0, 0.0, 2)],
        keep=(1, 2, 4, 5, 6),  # k = 7 (4^7 outcomes, 2 s each): the slow tier
    ),
)
def test_brute_force_fixed_grid(eps, delta, k):
    ts = sorted(
        {float(x) for x in np.linspace(0.0, k * eps + 0.5, 23)} | {(k - 2 * i) * eps for i in range(k // 2 + 1)}
    )
    refs = brute_force([(eps, delta)] * k, ts)
    got = comp.optimal_delta(eps, delta, k, np.array(ts))
    for t, (ref, mass), g in zip(ts, refs, got):
        assert_close(g, ref, mass, eps, k, t, what=f"optimal_delta({eps}, {delta}, {k}, {t!r})")


def test_beyond_k_eps_and_edges():
    # at and beyond k eps only the delta-parts remain: 1 - (1-delta)^k; -inf log when delta = 0
    for eps, delta, k in [(0.3, 0.01, 5), (0.3, 0.0, 5), (2.0, 1e-5, 100)]:
        pure = float(_pure(delta, k)[0])
        for t in [k * eps, k * eps + 1e-9, k * eps + 3.0, 1e6]:
            assert comp.optimal_delta(eps, delta, k, t) == pytest.approx(pure, rel=1e-14, abs=0.0)
        if delta == 0:
            assert comp.optimal_delta(eps, 0.0, k, k * eps + 1.0) == 0.0
            assert comp.optimal_log_delta(eps, 0.0, k, k * eps + 1.0) == -math.inf
    # delta = 1: nothing is private
    assert comp.optimal_delta(0.5, 1.0, 3, 0.7) == pytest.approx(1.0, abs=1e-15)
    # eps = 0: only the delta-parts, whatever eps_t
    for t in [0.0, 0.5, 10.0]:
        assert comp.optimal_delta(0.0, 0.01, 4, t) == pytest.approx(1 - 0.99**4, rel=1e-14)
    # k = 1: the single quaternary mechanism, closed form delta + (1-delta)(e^eps - e^t)/(1+e^eps)
    eps, delta, t = 1.3, 0.02, 0.4
    ref = delta + (1 - delta) * (math.exp(eps) - math.exp(t)) / (1 + math.exp(eps))
    assert comp.optimal_delta(eps, delta, 1, t) == pytest.approx(ref, rel=1e-13)


@pytest.mark.parametrize(
    "eps, delta, k",
    [(1.0, 0.0, 447), (2.7595935541462078, 0.0, 89), (5.0, 0.0, 1000), (0.5, 0.01, 2000), (3.0, 0.0, 10**6)],
)
def test_delta_is_a_probability(eps, delta, k):
    """Near-total leakage (delta -> 1) must stay a probability: at most 1, log at most 0."""
    ts = np.array([0.0, 0.1, 1.0, 10.0])
    d = comp.optimal_delta(eps, delta, k, ts)
    lg = comp.optimal_log_delta(eps, delta, k, ts)
    assert np.all((d >= 0) & (d <= 1)), f"optimal_delta({eps!r}, {delta!r}, {k}, {ts.tolist()}) = {d.tolist()}"
    assert np.all(lg <= 0), f"optimal_log_delta = {lg.tolist()}"
    assert comp.optimal_epsilon(eps, delta, k, float(d[0])) == 0.0


# ---------------------------------------------------------------------------------------
# 2. Theorem 3.3's lattice form
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, delta, k",
    [(0.1, 0.001, 30), (0.5, 0.0, 7), (1.0, 0.01, 10), (0.05, 1e-6, 100), (2.5, 0.0, 20), (0.3, 0.0, 1), (0.3, 0.1, 2)],
)
def test_lattice_points(eps, delta, k):
    eps_i, delta_tot = comp.lattice_region(eps, delta, k)
    assert len(eps_i) == len(delta_tot) == k // 2 + 1
    for i in range(k // 2 + 1):
        with mp.workdps(MP_DPS):
            lost, keep = _pure(delta, k)
            ref = 1 - keep * (1 - lattice_delta_i(eps, k, i))
        assert eps_i[i] == pytest.approx((k - 2 * i) * eps, rel=1e-15, abs=1e-15)
        assert float(delta_tot[i]) == pytest.approx(float(ref), rel=1e-12, abs=0.0), f"lattice_region i={i}"
        t = (k - 2 * i) * eps
        # the oracle's direct sum at the exact corner agrees with the theorem (tests the oracle)
        with mp.workdps(MP_DPS):
            ds_exact, _ = direct_sum(eps, delta, k, (k - 2 * i) * mpf(eps))
        assert abs(ds_exact - ref) <= mpf(10) ** -40, "oracle self-check"
        ds, mass = direct_sum(eps, delta, k, t)
        assert_close(comp.optimal_delta(eps, delta, k, t), ref, mass, eps, k, t, what=f"optimal_delta at corner i={i}")


# ---------------------------------------------------------------------------------------
# 3. Large k against high-precision summation
# ---------------------------------------------------------------------------------------

# (eps, delta, k, eps_t values); delta = 0 for the deep tails (else 1-(1-delta)^k dominates)
LARGE_CASES = [
    (0.1, 0.0, 100, [0.0, 1.0, 3.0, 7.0, 9.9]),
    (0.1, 1e-4, 100, [0.5, 2.0]),
    (0.05, 0.0, 1000, [0.0, 2.0, 5.0, 20.0, 35.0, 49.0, 50.0]),
    (0.5, 0.0, 1000, [200.0, 400.0, 499.0]),  # delta ~ 1e-30 ... 1e-200 and far beyond
    (0.01, 0.0, 10**4, [0.0, 0.5, 1.5, 3.0, 10.0, 60.0]),
    (0.01, 1e-9, 10**4, [1.0, 2.0]),
    pytest.param(0.01, 0.0, 10**5, [5.0, 8.0, 15.0, 300.0], marks=pytest.mark.slow),  # 5 s of reference sums
]


@pytest.mark.parametrize("eps, delta, k, ts", LARGE_CASES)
def test_large_k_direct_sum(eps, delta, k, ts):
    got = comp.optimal_delta(eps, delta, k, np.array(ts))
    got_log = comp.optimal_log_delta(eps, delta, k, np.array(ts))
    for t, g, gl in zip(ts, got, got_log):
        ref, mass = direct_sum(eps, delta, k, t)
        where = f"k={k} eps={eps} delta={delta} eps_t={t}"
        assert_log_close(float(gl), ref, mass, eps, k, t, what="optimal_log_delta " + where)
        if ref > 1e-290:
            assert_close(g, ref, mass, eps, k, t, rel=1e-10, what="optimal_delta " + where)
        else:
            assert 0.0 <= g <= 1e-280, where


@pytest.mark.parametrize(
    "eps, delta, k, t",
    [
        (0.05, 0.0, 1000, 5.0),
        (0.5, 1e-3, 1000, 100.0),
        (0.01, 0.0, 10**4, 3.0),
        pytest.param(0.01, 0.0, 10**5, 8.0, marks=pytest.mark.slow),  # 1-1.5 s each
        pytest.param(0.01, 0.0, 10**5, 300.0, marks=pytest.mark.slow),
    ],
)
def test_windowed_oracle_matches_full_sum(eps, delta, k, t):
    """The fast oracle used for k >= 10^6 equals the full sum (checks the oracle, not ldpsim)."""
    full, _ = direct_sum(eps, delta, k, t)
    win, _ = windowed_sum(eps, delta, k, t)
    assert abs(win - full) <= mpf(10) ** -25 * full


@pytest.mark.parametrize(
    "k, ts",
    [
        (10**6, [0.0, 50.0, 80.0, 100.0, 420.0, 3000.0]),
        pytest.param(10**7, [0.0, 500.0, 600.0, 700.0, 2000.0], marks=pytest.mark.slow),
    ],
)
def test_huge_k_windowed(k, ts):
    eps = 0.01
    got_log = comp.optimal_log_delta(eps, 0.0, k, np.array(ts))
    got = comp.optimal_delta(eps, 0.0, k, np.array(ts))
    for t, g, gl in zip(ts, got, got_log):
        ref, mass = windowed_sum(eps, 0.0, k, t)
        where = f"k={k} eps={eps} eps_t={t}"
        assert_log_close(float(gl), ref, mass, eps, k, t, what="optimal_log_delta " + where)
        if ref > 1e-290:
            assert_close(g, ref, mass, eps, k, t, rel=1e-10, what="optimal_delta " + where)
    # and with delta > 0
    ref, mass = windowed_sum(eps, 1e-12, k, ts[2])
    assert_close(comp.optimal_delta(eps, 1e-12, k, ts[2]), ref, mass, eps, k, ts[2], rel=1e-10, what="delta=1e-12")


# ---------------------------------------------------------------------------------------
# 4. The inverse
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, delta, k, targets",
    [
        (0.1, 0.001, 30, [0.5, 0.1, 0.05, 0.03, 0.02957]),
        (1.0, 0.0, 5, [0.5, 0.1, 1e-3, 1e-6]),
        pytest.param(0.05, 0.0, 1000, [0.2, 1e-3, 1e-10, 1e-30], marks=pytest.mark.slow),  # 1.6 s
        (0.01, 1e-9, 1000, [1e-3, 1e-6]),
    ],
)
def test_optimal_epsilon_against_bisection(eps, delta, k, targets):
    for d in targets:
        ref = oracle_epsilon(eps, delta, k, d)
        got = comp.optimal_epsilon(eps, delta, k, d)
        assert isinstance(got, float)
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-12), f"optimal_epsilon({eps}, {delta}, {k}, {d})"
        back = direct_sum(eps, delta, k, got)[0]
        assert back <= d * (1 + 1e-12), f"oracle delta at the returned eps exceeds the target: {float(back)} > {d}"
    arr = comp.optimal_epsilon(eps, delta, k, np.array(targets))
    assert isinstance(arr, np.ndarray) and arr.shape == (len(targets),)
    assert np.all(np.diff(arr) >= 0)  # targets decreasing -> eps non-decreasing


@settings(max_examples=50)
@given(eps=st.floats(0.01, 3.0), delta=DELTA, k=st.integers(1, 2000), frac=st.floats(0.0, 1.0))
@example(eps=0.03125, delta=3.1554215420365327e-21, k=1023, frac=0.34375)  # a flat stretch (explore profile)
@example(eps=1.0, delta=3.1554215420365327e-21, k=1, frac=1.0)  # d = the floor, as optimal_delta rounds it
def test_inverse_roundtrip(eps, delta, k, frac):
    x = frac * k * eps
    d = comp.optimal_delta(eps, delta, k, x)
    assert 0.0 <= d <= 1.0, f"optimal_delta({eps!r}, {delta!r}, {k}, {x!r}) = {d!r} is not a probability"
    e = comp.optimal_epsilon(eps, delta, k, d)
    assert 0.0 <= e <= k * eps * (1 + 1e-15)
    assert comp.optimal_delta(eps, delta, k, e) <= d * (1 + 1e-12)
    # eps back: x, up to the conditioning of the inverse (a rounding of d moves the root by
    # ~ err(d) / |slope|). delta is a sum of terms (p - e^t r)_+, each convex in t, so the
    # curve is convex and decreasing: its flattest point between x and e is the right end,
    # and the slope there (from the mpmath oracle) bounds the distance the root can move.
    # err(d): optimal_delta is exp(log delta), off by up to about (4 + 2 |log d|) ulps of d
    # relative (the explore profile found d = 3.2e-18, 2.3e-15 off, on a stretch so flat
    # that d / slope = 3e8: eps_total = 10.99 came back 9e-7 away, as that rounding implies).
    d0 = comp.optimal_delta(eps, delta, k, 0.0)
    if d < d0 and d > 1e-300:
        right = max(x, e)
        h = 1e-7 * max(right, 1e-3)
        lo, hi = right, right + h
        slope = float(direct_sum(eps, delta, k, lo, dps=30)[0] - direct_sum(eps, delta, k, hi, dps=30)[0]) / (hi - lo)
        cond = (4 + 2 * abs(math.log(d))) * 2.3e-16 * d / slope if slope > 0 else math.inf
        assert abs(e - x) <= 1e-9 * x + 1e-12 + cond, f"x={x}, got {e}, conditioning {cond:.3g}"
    # delta back within 1e-9 of the target, or within what one rounding of eps_total can
    # move it: |d delta / d eps_total| = (1-delta)^k e^eps_t S2 <= 1, so 4 ulps of e
    if d < d0:
        assert comp.optimal_delta(eps, delta, k, e) >= d * (1 - 1e-9) - 4 * math.ulp(e)


def test_inverse_flat_parts_and_monotone():
    eps, delta, k = 0.2, 1e-4, 50
    d0 = float(direct_sum(eps, delta, k, 0.0)[0])
    assert comp.optimal_epsilon(eps, delta, k, d0) <= 1e-12  # d0 is rounded: 0 up to that
    for d in [d0 * (1 + 1e-12), d0 * 1.01, 0.999, 1.0]:
        assert comp.optimal_epsilon(eps, delta, k, d) == 0.0
    pure = 1 - (1 - delta) ** k
    assert comp.optimal_epsilon(eps, delta, k, pure * (1 + 1e-12)) <= k * eps
    ts = np.linspace(0.0, k * eps + 1.0, 400)
    assert np.all(np.diff(comp.optimal_delta(eps, delta, k, ts)) <= 0)
    ds = np.geomspace(pure * 1.0001, 0.9, 200)
    assert np.all(np.diff(comp.optimal_epsilon(eps, delta, k, ds)) <= 0)


@pytest.mark.parametrize("d", [9.9955e-4 * (1 - 1e-6), 5e-4, 0.0, -0.1, 1.5, math.nan])
def test_inverse_unreachable(d):
    # 1 - (1 - 1e-4)^10 = 9.99550...e-4: no eps reaches below it
    with pytest.raises(LdpSimError):
        comp.optimal_epsilon(0.1, 1e-4, 10, d)


def test_inverse_zero_delta_target_unreachable_only_below_zero():
    # delta = 0: every delta_total > 0 is reached; 0 itself at eps_t = k eps
    assert comp.optimal_epsilon(0.1, 0.0, 10, 1e-300) <= 1.0
    assert comp.optimal_epsilon(0.1, 0.0, 10, 0.0) == pytest.approx(1.0, rel=1e-15)


# ---------------------------------------------------------------------------------------
# 5. Bounds are sound, and are the stated formulas
# ---------------------------------------------------------------------------------------

BOUND_NAMES = ["basic", "drv", "kov", "kov_small_eps"]


def test_bound_formulas():
    for eps, delta, k, ds in [
        (0.1, 0.001, 30, 1e-5),
        (0.5, 0.0, 100, 1e-3),
        (0.01, 1e-8, 10**5, 1e-6),
        (0.9, 1e-4, 10, 0.5),
        (2.0, 0.0, 1000, 1e-9),
    ]:
        assert comp.basic_bound(eps, delta, k) == pytest.approx(my_basic(eps, delta, k), rel=1e-13)
        assert comp.drv_bound(eps, delta, k, ds) == pytest.approx(my_drv(eps, delta, k, ds), rel=1e-12)
        assert comp.kov_bound(eps, delta, k, ds) == pytest.approx(my_kov(eps, delta, k, ds), rel=1e-12)
        assert comp.kov_bound(eps, delta, k, ds, form="general") == pytest.approx(my_kov(eps, delta, k, ds), rel=1e-12)
        if eps <= 0.9:
            got = comp.kov_bound(eps, delta, k, ds, form="small_eps")
            assert got == pytest.approx(my_kov(eps, delta, k, ds, "small_eps"), rel=1e-12)
            assert got[0] >= comp.kov_bound(eps, delta, k, ds)[0]  # tanh(eps/2) <= eps
        else:
            with pytest.raises(LdpSimError):
                comp.kov_bound(eps, delta, k, ds, form="small_eps")
    # the three branches of the kov min each win somewhere
    assert comp.kov_bound(1.0, 0.0, 3, 1e-3)[0] == pytest.approx(3.0)  # k eps
    e = math.exp(0.01)
    drift = 100 * 0.01 * (e - 1) / (e + 1)  # k = 100, eps = 0.01: k eps^2 = 0.01
    assert comp.kov_bound(0.01, 0.0, 100, 1e-3)[0] == pytest.approx(
        drift + math.sqrt(2 * 0.01 * math.log(math.e + 0.1 / 1e-3)), rel=1e-12
    )
    assert comp.kov_bound(0.01, 0.0, 100, 0.5)[0] == pytest.approx(
        drift + math.sqrt(2 * 0.01 * math.log(2.0)), rel=1e-12
    )


@pytest.mark.parametrize("name", BOUND_NAMES)
def test_bound_delta_formula(name):
    for eps, delta, k in [(0.1, 0.001, 30), (0.05, 0.0, 1000), (0.5, 1e-5, 200)]:
        for t in np.linspace(0.0, k * eps * 1.2, 37):
            ref = my_bound_delta(name, eps, delta, k, float(t))
            assert comp.bound_delta(name, eps, delta, k, float(t)) == pytest.approx(ref, rel=1e-10, abs=1e-300), (
                f"bound_delta({name!r}, {eps}, {delta}, {k}, {float(t)!r})"
            )
        arr = comp.bound_delta(name, eps, delta, k, np.linspace(0.0, k * eps * 1.2, 37))
        assert isinstance(arr, np.ndarray) and arr.shape == (37,)


@settings(max_examples=80)
@given(
    eps=st.floats(0.01, 2.0),
    delta=st.one_of(st.just(0.0), st.floats(1e-10, 1e-3)),
    k=st.integers(1, 3000),
    log_ds=st.floats(math.log(1e-12), 0.0),
    frac=st.floats(0.0, 1.2),
)
def test_bounds_sound(eps, delta, k, log_ds, frac):
    ds = math.exp(log_ds)
    bounds = {
        "basic": comp.basic_bound(eps, delta, k),
        "drv": comp.drv_bound(eps, delta, k, ds),
        "kov": comp.kov_bound(eps, delta, k, ds),
    }
    if eps <= 0.9:
        bounds["kov_small_eps"] = comp.kov_bound(eps, delta, k, ds, form="small_eps")
    for name, (et, dt) in bounds.items():
        exact = comp.optimal_delta(eps, delta, k, et)
        assert exact <= dt + 1e-12, f"{name} bound ({et}, {dt}) violated: exact {exact}"
    t = frac * k * eps
    exact = comp.optimal_delta(eps, delta, k, t)
    for name in BOUND_NAMES:
        if name == "kov_small_eps" and eps > 0.9:
            continue
        bd = comp.bound_delta(name, eps, delta, k, t)
        assert bd >= exact - 1e-12, f"bound_delta({name!r}) = {bd} < exact {exact} at eps_t={t}"
    d = max(exact, 1 - (1 - delta) ** k + 1e-9, 2 * k * delta + 1e-9)
    if d < 1:
        oe = comp.optimal_epsilon(eps, delta, k, d)
        for name in BOUND_NAMES:
            if name == "kov_small_eps" and eps > 0.9:
                continue
            be = comp.bound_epsilon(name, eps, delta, k, d)
            assert be >= oe * (1 - 1e-12) - 1e-12, f"bound_epsilon({name!r}) = {be} < optimal {oe} at delta={d}"


def test_bound_epsilon_values():
    eps, delta, k = 0.1, 0.001, 30
    # basic: k eps once delta_total >= k delta, inf below
    assert comp.bound_epsilon("basic", eps, delta, k, 0.05) == pytest.approx(3.0)
    assert comp.bound_epsilon("basic", eps, delta, k, 0.02) == math.inf
    # drv / kov at a target: the bound evaluated at the slack left over
    d = 0.05
    assert comp.bound_epsilon("drv", eps, delta, k, d) == pytest.approx(
        my_drv(eps, delta, k, d - k * delta)[0], rel=1e-10
    )
    ds = 1 - (1 - d) / (1 - delta) ** k
    assert comp.bound_epsilon("kov", eps, delta, k, d) == pytest.approx(my_kov(eps, delta, k, ds)[0], rel=1e-10)
    assert comp.bound_epsilon("kov_small_eps", eps, delta, k, d) == pytest.approx(
        my_kov(eps, delta, k, ds, "small_eps")[0], rel=1e-10
    )
    assert comp.bound_epsilon("kov", eps, delta, k, 0.02) == math.inf  # below 1 - (1-delta)^k
    with pytest.raises(LdpSimError):
        comp.bound_delta("nonsense", eps, delta, k, 1.0)


# ---------------------------------------------------------------------------------------
# 6. Heterogeneous composition
# ---------------------------------------------------------------------------------------


@st.composite
def het_case(draw):
    n_classes = draw(st.integers(2, 3))
    classes = [
        (draw(st.floats(0.05, 3.0)), draw(st.one_of(st.just(0.0), st.floats(0.0, 0.1), st.floats(1e-18, 1e-6))))
        for _ in range(n_classes)
    ]
    counts = [draw(st.integers(1, 3)) for _ in range(n_classes)]
    while sum(counts) > 6:
        counts[counts.index(max(counts))] -= 1
    mechs = [c for c, n in zip(classes, counts) for _ in range(n)]
    mechs = draw(st.permutations(mechs))
    total = sum(e for e, _ in mechs)
    ts = draw(st.lists(st.floats(0.0, total + 0.5), min_size=1, max_size=3))
    # some corners: sums of +-eps_l
    signs = draw(st.lists(st.sampled_from([-1, 1]), min_size=len(mechs), max_size=len(mechs)))
    corner = sum(s * e for s, (e, _) in zip(signs, mechs))
    if corner >= 0:
        ts.append(corner)
    return list(mechs), sorted(set(ts + [0.0]))


@settings(max_examples=40)
@given(het_case())
def test_heterogeneous_brute_force(case):
    mechs, ts = case
    eps_list = [e for e, _ in mechs]
    delta_list = [d for _, d in mechs]
    refs = brute_force(mechs, ts)
    k = len(mechs)
    for t, (ref, mass) in zip(ts, refs):
        got = comp.optimal_delta_heterogeneous(eps_list, delta_list, t)
        assert_close(
            got, ref, mass, max(eps_list), k, t, what=f"optimal_delta_heterogeneous({eps_list}, {delta_list}, {t!r})"
        )
    got_arr = comp.optimal_delta_heterogeneous(eps_list, delta_list, np.array(ts))
    for t, (ref, mass), g in zip(ts, refs, got_arr):
        assert_close(g, ref, mass, max(eps_list), k, t, what="array")


@pytest.mark.parametrize(
    "eps_list, delta_list, t",
    [
        ([1.0, 0.5], [1e-10, 0.0], 1.6),  # beyond sum eps only 1 - prod(1 - delta_l) remains
        ([1.0, 0.5], [1e-17, 0.0], 1.6),
        ([1.0, 0.5], [1e-17, 1e-17], 1.6),
        ([1.0, 1.0], [0.0, 1e-20], 2.0),
        ([0.3, 0.3, 0.7], [1e-12, 1e-12, 1e-9], 1.0),  # below sum eps too
    ],
)
def test_heterogeneous_small_deltas(eps_list, delta_list, t):
    """Small per-mechanism deltas must not be lost to 1 - (1 - a)(1 - b) in doubles."""
    ((ref, mass),) = brute_force(list(zip(eps_list, delta_list)), [t])
    got = comp.optimal_delta_heterogeneous(eps_list, delta_list, t)
    assert_close(
        got,
        ref,
        mass,
        max(eps_list),
        len(eps_list),
        t,
        what=f"optimal_delta_heterogeneous({eps_list}, {delta_list}, {t})",
    )


def test_heterogeneous_equal_classes_is_homogeneous():
    for eps, delta, k in [(0.1, 0.001, 30), (0.7, 0.0, 12), (0.02, 1e-7, 500)]:
        ts = np.linspace(0.0, k * eps * 1.1, 31)
        a = comp.optimal_delta_heterogeneous([eps] * k, [delta] * k, ts)
        b = comp.optimal_delta(eps, delta, k, ts)
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-300)
        for d in [0.5, 0.1, 1e-2 + (1 - (1 - delta) ** k)]:
            assert comp.optimal_epsilon_heterogeneous([eps] * k, [delta] * k, d) == pytest.approx(
                comp.optimal_epsilon(eps, delta, k, d), rel=1e-9, abs=1e-12
            )


def test_heterogeneous_inverse_and_kov():
    eps_list = [0.1] * 20 + [0.5] * 5 + [0.02] * 100
    delta_list = [1e-4] * 20 + [0.0] * 5 + [1e-6] * 100
    keep = math.prod(1 - d for d in delta_list)
    for d in [0.3, 0.05, (1 - keep) + 1e-4]:
        e = comp.optimal_epsilon_heterogeneous(eps_list, delta_list, d)
        back = comp.optimal_delta_heterogeneous(eps_list, delta_list, e)
        assert back <= d * (1 + 1e-12) and back >= d * (1 - 1e-9)
    for ds in [1e-2, 1e-4, 1e-8]:
        got = comp.kov_bound_heterogeneous(eps_list, delta_list, ds)
        ref = my_kov_het(eps_list, delta_list, ds)
        assert got == pytest.approx(ref, rel=1e-12)
        assert comp.optimal_delta_heterogeneous(eps_list, delta_list, got[0]) <= got[1] + 1e-12
    # equal classes: Theorem 3.5 reduces to Theorem 3.4
    assert comp.kov_bound_heterogeneous([0.1] * 30, [0.001] * 30, 1e-5) == pytest.approx(
        comp.kov_bound(0.1, 0.001, 30, 1e-5), rel=1e-12
    )


def test_heterogeneous_too_large():
    with pytest.raises(LdpSimError, match="kov_bound_heterogeneous"):
        comp.optimal_delta_heterogeneous([0.1, 0.2, 0.3] * 2, [0.0] * 6, 0.1, max_atoms=10)  # 3^3 = 27 > 10
    eps_list = [0.01 * (1 + j) for j in range(60)]  # 2^60 atoms
    with pytest.raises(LdpSimError, match="kov_bound_heterogeneous"):
        comp.optimal_delta_heterogeneous(eps_list, [0.0] * 60, 1.0)
    with pytest.raises(LdpSimError):
        comp.optimal_epsilon_heterogeneous(eps_list, [0.0] * 60, 1e-3)


# ---------------------------------------------------------------------------------------
# 7. Bad input
# ---------------------------------------------------------------------------------------

BAD_HOMOGENEOUS = [
    dict(compositions=0),
    dict(compositions=-3),
    dict(compositions=2.5),
    dict(compositions=math.nan),
    dict(eps=-0.1),
    dict(eps=math.nan),
    dict(delta=-1e-3),
    dict(delta=1.5),
    dict(delta=math.nan),
]


@pytest.mark.parametrize("bad", BAD_HOMOGENEOUS, ids=lambda b: ",".join(f"{k}={v}" for k, v in b.items()))
def test_bad_input(bad):
    args = dict(eps=0.1, delta=1e-3, compositions=10) | bad
    for fn, last in [(comp.optimal_delta, 0.5), (comp.optimal_log_delta, 0.5), (comp.optimal_epsilon, 0.5)]:
        with pytest.raises(LdpSimError):
            fn(args["eps"], args["delta"], args["compositions"], last)
    with pytest.raises(LdpSimError):
        comp.lattice_region(args["eps"], args["delta"], args["compositions"])
    with pytest.raises(LdpSimError):
        comp.kov_bound(args["eps"], args["delta"], args["compositions"], 1e-3)
    with pytest.raises(LdpSimError):
        comp.drv_bound(args["eps"], args["delta"], args["compositions"], 1e-3)
    with pytest.raises(LdpSimError):
        comp.basic_bound(args["eps"], args["delta"], args["compositions"])


@pytest.mark.parametrize(
    "t",
    [-0.1, math.nan, np.array([0.1, -1.0]), np.array([0.1, math.nan])],
    ids=["neg", "nan", "neg-in-array", "nan-in-array"],
)
def test_bad_eps_total(t):
    with pytest.raises(LdpSimError):
        comp.optimal_delta(0.1, 1e-3, 10, t)
    with pytest.raises(LdpSimError):
        comp.optimal_log_delta(0.1, 1e-3, 10, t)
    with pytest.raises(LdpSimError):
        comp.optimal_delta_heterogeneous([0.1, 0.2], [0.0, 0.0], t)
    with pytest.raises(LdpSimError):
        comp.bound_delta("kov", 0.1, 1e-3, 10, t)


@pytest.mark.parametrize("ds", [0.0, -0.1, 1.5, math.nan])
def test_bad_slack(ds):
    for fn in (comp.drv_bound, comp.kov_bound):
        with pytest.raises(LdpSimError):
            fn(0.1, 1e-3, 10, ds)
    with pytest.raises(LdpSimError):
        comp.kov_bound_heterogeneous([0.1, 0.2], [0.0, 0.0], ds)


def test_bad_heterogeneous_lists():
    for eps_list, delta_list in [
        ([0.1, 0.2, 0.3], [0.0, 0.0]),
        ([], []),
        ([0.1, -0.2], [0.0, 0.0]),
        ([0.1, 0.2], [0.0, 1.2]),
        ([0.1, math.nan], [0.0, 0.0]),
    ]:
        with pytest.raises(LdpSimError):
            comp.optimal_delta_heterogeneous(eps_list, delta_list, 0.1)
        with pytest.raises(LdpSimError):
            comp.kov_bound_heterogeneous(eps_list, delta_list, 1e-3)


def test_bad_kov_form():
    with pytest.raises(LdpSimError):
        comp.kov_bound(0.1, 0.0, 10, 1e-3, form="nonsense")


# ---------------------------------------------------------------------------------------
# 8. The paper's figure: 30-fold composition of (0.1, 0.001)
# ---------------------------------------------------------------------------------------


def test_seed_figure_ordering():
    eps, delta, k = 0.1, 0.001, 30
    ts = np.linspace(0.0, 3.2, 65)
    exact = comp.optimal_delta(eps, delta, k, ts)
    kov = comp.bound_delta("kov", eps, delta, k, ts)
    kov_small = comp.bound_delta("kov_small_eps", eps, delta, k, ts)
    drv = comp.bound_delta("drv", eps, delta, k, ts)
    basic = comp.bound_delta("basic", eps, delta, k, ts)
    assert np.all(exact <= kov + 1e-15)
    assert np.all(kov <= kov_small + 1e-15)
    assert np.all(kov_small <= drv + 1e-15)
    assert np.all(exact <= basic + 1e-15)
    # the exact curve from the oracle at a few grid points
    for t in [0.0, 0.8, 1.6, 2.4, 3.0, 3.2]:
        ref, mass = direct_sum(eps, delta, k, t)
        assert_close(comp.optimal_delta(eps, delta, k, t), ref, mass, eps, k, t)
    # exact = 1 - (1-delta)^k = 0.0295... at k eps; basic needs k delta = 0.03
    assert exact[-1] == pytest.approx(1 - 0.999**30, rel=1e-13)
    assert basic[-1] == pytest.approx(0.03, rel=1e-13)
    # the strict improvement of Thm 3.4 over DRV where either is informative
    informative = drv < 1.0
    assert np.any(informative) and np.all(kov[informative] < drv[informative])
