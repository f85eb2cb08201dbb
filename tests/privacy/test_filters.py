"""Privacy filters (ldpsim/privacy/filters.py): budgets that hold when each report's
(eps, delta) is chosen adaptively.

* Property-based: over random sequences of (eps_i, delta_i), fixed in advance or chosen
  from the parameters admitted so far, the basic filter keeps ``sum eps_i <= eps_g`` and
  ``sum delta_i <= delta_g`` in exact rational arithmetic (``Fraction``, no rounding), and
  the advanced filter keeps the condition of Whitehouse, Ramdas, Rogers and Wu (2023),
  ``sqrt(2 log(1/delta') sum eps_i^2) + sum eps_i^2 / 2 <= eps_g`` and ``sum delta_i <=
  delta''``, checked in mpmath at 50 digits from the exact rational sums. Both also refuse
  only what is (within the rounding units they charge) past the budget.
* Against the exact optimal composition (``optimal_epsilon``, ``optimal_epsilon_heterogeneous``,
  Kairouz et al. 2015) where both apply, i.e. for sequences fixed in advance: what a filter
  admits composes to at most eps_g at delta_g (the filter is valid, and conservative), and
  the number of reports it admits is compared with the number exact composition allows.
* ``allowed_reports`` equals counting with ``admits``/``spend``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldpsim.errors import LdpSimError
from ldpsim.privacy import (
    AdvancedFilter,
    BasicFilter,
    FilterState,
    PrivacyFilter,
    allowed_reports,
    optimal_epsilon,
    optimal_epsilon_heterogeneous,
)
from ldpsim.privacy.filters import MAX_REPORTS

# ---------------------------------------------------------------------------------------
# Oracles: exact sums of the floats admitted, and the theorem's condition in mpmath
# ---------------------------------------------------------------------------------------


def exact_sum(values) -> Fraction:
    return sum((Fraction(x) for x in values), Fraction(0))


def advanced_lhs(eps_list, delta_slack: float) -> mpmath.mpf:
    """``sqrt(2 log(1/delta') S2) + S2 / 2`` with ``S2`` the exact sum of the eps_i^2."""
    s2 = sum((Fraction(e) ** 2 for e in eps_list), Fraction(0))
    with mpmath.workdps(50):
        v = mpmath.mpf(s2.numerator) / s2.denominator
        return mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(delta_slack)) * v) + v / 2


def run(filt: PrivacyFilter, n: int, steps: int, choose):
    """Offer each of ``n`` respondents ``steps`` reports; ``choose(t, admitted)`` gives the
    next (eps, delta) arrays from the lists of (eps, delta) admitted so far (adaptivity).
    Returns the admitted lists and the refused offers (with what was admitted before)."""
    state = filt.start(n)
    admitted: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    refused: list[tuple[int, float, float, list]] = []
    for t in range(steps):
        eps, delta = choose(t, admitted)
        ok = filt.admits(state, eps, delta)
        before = state
        state = filt.spend(state, eps, delta, ok)
        assert np.array_equal(before.count + ok, state.count)
        for j in range(n):
            if ok[j]:
                admitted[j].append((float(eps[j]), float(delta[j])))
            else:
                refused.append((j, float(eps[j]), float(delta[j]), list(admitted[j])))
    return admitted, refused, state


# moves: how the next report's parameters are chosen from what was admitted so far
MOVE = st.tuples(
    st.sampled_from(["absolute", "remaining", "last", "remaining_sq"]),
    st.floats(0.0, 1.5),
    st.sampled_from(["zero", "absolute", "remaining"]),
    st.floats(0.0, 1.5),
)


def chooser(moves: list[list[tuple]], eps_g: float, delta_g: float, sq_budget: float):
    """``choose`` for :func:`run`: respondent j's t-th report from ``moves[j][t]``, adaptive
    on the parameters admitted before (remaining budget, last report)."""

    def choose(t, admitted):
        eps, delta = [], []
        for j, hist in enumerate(admitted):
            kind, u, dkind, w = moves[j][t]
            spent = math.fsum(e for e, _ in hist)
            spent_sq = math.fsum(e * e for e, _ in hist)
            spent_d = math.fsum(d for _, d in hist)
            if kind == "absolute":
                e = u * eps_g
            elif kind == "remaining":  # aims at the basic filter's boundary
                e = u * max(eps_g - spent, 0.0)
            elif kind == "last":
                e = (hist[-1][0] if hist else eps_g / 10) * u
            else:  # aims at the advanced filter's boundary
                e = u * math.sqrt(max(sq_budget - spent_sq, 0.0))
            if dkind == "zero":
                d = 0.0
            elif dkind == "absolute":
                d = min(1.0, w * delta_g)
            else:
                d = min(1.0, w * max(delta_g - spent_d, 0.0))
            eps.append(e)
            delta.append(d)
        return np.array(eps), np.array(delta)

    return choose


def sequences(max_steps: int = 30):
    return st.integers(1, 4).flatmap(
        lambda n: st.integers(1, max_steps).flatmap(
            lambda steps: st.lists(st.lists(MOVE, min_size=steps, max_size=steps), min_size=n, max_size=n)
        )
    )


EPS_BUDGETS = st.one_of(st.sampled_from([0.1, 1.0, 3.0, 10.0]), st.floats(1e-3, 20.0))
DELTA_BUDGETS = st.one_of(st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]), st.floats(0.0, 0.1))


# ---------------------------------------------------------------------------------------
# Property: never past the budget, adaptively
# ---------------------------------------------------------------------------------------


@given(eps_g=EPS_BUDGETS, delta_g=DELTA_BUDGETS, moves=sequences())
def test_basic_filter_never_lets_a_respondent_past_its_budget(eps_g, delta_g, moves):
    filt = BasicFilter(eps_g, delta_g)
    n, steps = len(moves), len(moves[0])
    admitted, refused, state = run(filt, n, steps, chooser(moves, eps_g, delta_g, eps_g**2))
    unit_e, unit_d = state.units["eps"], state.units["delta"]
    for j in range(n):
        assert exact_sum(e for e, _ in admitted[j]) <= Fraction(eps_g)
        assert exact_sum(d for _, d in admitted[j]) <= Fraction(delta_g)
        # the state's charged sums are upper bounds, within one unit per report
        k = len(admitted[j])
        charged = int(state.charges["eps"][j]) * Fraction(unit_e)
        assert (
            exact_sum(e for e, _ in admitted[j])
            <= charged
            <= exact_sum(e for e, _ in admitted[j]) + k * Fraction(unit_e)
        )
        assert float(state.sum_eps[j]) == float(charged)
    for j, e, d, hist in refused:  # refused only at (within rounding units of) the budget
        k = len(hist) + 1
        over_e = exact_sum([x for x, _ in hist] + [e]) > Fraction(eps_g) - k * Fraction(unit_e)
        over_d = exact_sum([x for _, x in hist] + [d]) > Fraction(delta_g) - k * Fraction(unit_d)
        assert over_e or over_d


@given(
    eps_g=EPS_BUDGETS,
    delta_g=st.one_of(st.sampled_from([1e-9, 1e-6, 1e-3]), st.floats(1e-12, 0.1)),
    slack=st.one_of(st.just(None), st.just(1.0), st.floats(0.01, 1.0)),
    moves=sequences(),
)
def test_advanced_filter_admits_only_sequences_meeting_the_theorems_condition(eps_g, delta_g, slack, moves):
    filt = AdvancedFilter(eps_g, delta_g, None if slack is None else slack * delta_g)
    d1, d2 = filt.delta_slack, filt.delta_reports
    assert Fraction(d1) + Fraction(d2) <= Fraction(delta_g) and d1 > 0 and d2 >= 0
    n, steps = len(moves), len(moves[0])
    admitted, refused, state = run(filt, n, steps, chooser(moves, eps_g, d2, filt.eps_sq_budget))
    for j in range(n):
        assert advanced_lhs([e for e, _ in admitted[j]], d1) <= eps_g
        assert exact_sum(d for _, d in admitted[j]) <= Fraction(d2)
    unit_v, unit_d = state.units["eps_sq"], state.units["delta"]
    for j, e, d, hist in refused:  # refused only near (or past) the boundary
        k = len(hist) + 1
        s2 = sum((Fraction(x) ** 2 for x, _ in hist), Fraction(e) ** 2)
        # each eps^2 is charged rounded up: to a float one step up (2^-51 relative), then a unit
        near_v = s2 * (1 + Fraction(1, 2**50)) + k * Fraction(unit_v) > Fraction(filt.eps_sq_budget)
        near_d = exact_sum([x for _, x in hist] + [d]) > Fraction(d2) - k * Fraction(unit_d)
        assert near_v or near_d


def test_a_refused_respondent_can_still_take_a_smaller_report():
    filt = BasicFilter(1.0)
    state = filt.spend(filt.start(2), [0.75, 0.25])
    assert filt.admits(state, 0.5).tolist() == [False, True]
    state = filt.spend(state, [0.25, 0.5])
    assert state.sum_eps.tolist() == [1.0, 0.75] and state.count.tolist() == [2, 2]
    assert filt.admits(state, 2.0**-60).tolist() == [False, True]  # the first is exactly at its budget


def test_spend_records_only_the_masked_respondents_and_never_changes_a_state():
    filt = AdvancedFilter(2.0, 1e-6)
    s0 = filt.start(3)
    s1 = filt.spend(s0, [0.1, 0.2, 0.3], [0.0, 1e-7, 0.0], np.array([True, False, True]))
    assert s0.count.tolist() == [0, 0, 0] and s0.sum_eps_sq.tolist() == [0.0, 0.0, 0.0]
    assert s1.count.tolist() == [1, 0, 1]
    assert s1.sum_eps_sq[1] == 0.0 and s1.sum_delta.tolist() == [0.0, 0.0, 0.0]
    assert s1.sum_eps_sq[0] >= 0.1 * 0.1 and s1.sum_eps_sq[2] >= 0.3 * 0.3
    with pytest.raises(LdpSimError, match="quantity"):
        _ = s1.sum_eps  # the advanced filter budgets eps^2, not eps


def test_spend_past_the_budget_raises_and_names_the_respondent():
    filt = BasicFilter(1.0, 1e-6)
    state = filt.start(3)
    with pytest.raises(LdpSimError, match=r"^mask: got 'respondent 1 selected'"):
        filt.spend(state, [0.5, 1.5, 0.5])
    with pytest.raises(LdpSimError, match="respondent 2"):
        filt.spend(state, 0.5, [0.0, 0.0, 2e-6])
    assert filt.spend(state, [0.5, 1.5, 0.5], 0.0, np.array([True, False, True])).count.tolist() == [1, 0, 1]


# ---------------------------------------------------------------------------------------
# Against the exact optimal composition (non-adaptive sequences)
# ---------------------------------------------------------------------------------------


def k_exact(eps: float, delta: float, eps_g: float, delta_g: float) -> int:
    """Largest k with the exact k-fold composition of (eps, delta) within (eps_g, delta_g)."""

    def ok(k: int) -> bool:
        try:
            return optimal_epsilon(eps, delta, k, delta_g) <= eps_g
        except LdpSimError:  # delta_g < 1 - (1 - delta)^k: no eps_total is enough
            return False

    lo, hi = 0, 1
    while ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


# (eps_g, delta_g, eps) -> reports admitted by BasicFilter(eps_g, delta_g), by
# AdvancedFilter(eps_g, delta_g, delta_slack=delta_g) (pure reports: all of delta_g on the
# concentration term), and allowed by the exact optimal composition at (eps_g, delta_g).
# Measured with this code (the exact column by optimal_epsilon, Kairouz et al. 2015):
#
#   eps_g  delta_g  eps    basic  advanced  exact   exact eps of the advanced filter's k
#   1.0    1e-6     0.1        9         3      10   0.300
#   1.0    1e-6     0.05      19        13      26   0.644
#   1.0    1e-6     0.01      99       349     562   0.771
#   1.0    1e-6     0.001    999     34937   56032   0.776
#   4.0    1e-6     0.1       39        50      74   3.173
#   4.0    1e-6     0.01     399      5078    7024   3.335
#   1.0    1e-9     0.01      99       235     336   0.827
#
# Basic admits one report fewer than eps_g / eps wherever the float eps is above the decimal
# (0.1, 0.05, 0.01, 0.001 all are): the filters compare exact sums. The advanced filter wins
# once eps_g / eps is beyond about 2 log(1/delta') (28 here) and then admits about 62% of
# what exact composition allows (k scales as eps^-2 for both); below that, basic composition
# is better and the advanced filter admits few reports.
FILTER_VS_EXACT = [
    (1.0, 1e-6, 0.1, 9, 3, 10),
    (1.0, 1e-6, 0.05, 19, 13, 26),
    (1.0, 1e-6, 0.01, 99, 349, 562),
    (1.0, 1e-6, 0.001, 999, 34937, 56032),
    (4.0, 1e-6, 0.1, 39, 50, 74),
    (4.0, 1e-6, 0.01, 399, 5078, 7024),
    (1.0, 1e-9, 0.01, 99, 235, 336),
]


@pytest.mark.parametrize("eps_g, delta_g, eps, k_basic, k_adv, k_opt", FILTER_VS_EXACT)
def test_homogeneous_reports_the_filters_admit_compose_within_the_budget(eps_g, delta_g, eps, k_basic, k_adv, k_opt):
    basic = allowed_reports(BasicFilter(eps_g, delta_g), eps)
    adv = allowed_reports(AdvancedFilter(eps_g, delta_g, delta_slack=delta_g), eps)
    exact = k_exact(eps, 0.0, eps_g, delta_g)
    assert (basic, adv, exact) == (k_basic, k_adv, k_opt)
    for k in (basic, adv):
        assert k <= exact
        assert optimal_epsilon(eps, 0.0, k, delta_g) <= eps_g  # the filter is valid here
    # and the advanced filter stops where its condition does (nothing lost but rounding)
    assert advanced_lhs([eps] * adv, delta_g) <= eps_g < advanced_lhs([eps] * (adv + 1), delta_g)


@pytest.mark.parametrize(
    "eps, delta, eps_g, delta_g", [(0.01, 1e-8, 1.0, 1e-5), (0.05, 1e-7, 3.0, 1e-5), (0.2, 1e-9, 2.0, 1e-6)]
)
def test_homogeneous_approximate_reports_compose_within_the_budget(eps, delta, eps_g, delta_g):
    for filt in (BasicFilter(eps_g, delta_g), AdvancedFilter(eps_g, delta_g)):
        k = allowed_reports(filt, eps, delta)
        assert 1 <= k <= k_exact(eps, delta, eps_g, delta_g)
        assert optimal_epsilon(eps, delta, k, delta_g) <= eps_g


@settings(max_examples=60)
@given(
    eps_g=st.sampled_from([0.5, 1.0, 2.0, 5.0]),
    delta_g=st.sampled_from([1e-6, 1e-4]),
    offers=st.lists(
        st.tuples(st.sampled_from([0.02, 0.05, 0.1, 0.3]), st.sampled_from([0.0, 1e-8])), min_size=1, max_size=40
    ),
    advanced=st.booleans(),
)
def test_heterogeneous_sequences_fixed_in_advance_compose_within_the_budget(eps_g, delta_g, offers, advanced):
    filt = AdvancedFilter(eps_g, delta_g) if advanced else BasicFilter(eps_g, delta_g)
    eps = np.array([e for e, _ in offers])
    delta = np.array([d for _, d in offers])
    # the whole sequence is fixed before the first report; the filter skips what does not fit
    admitted, _, _ = run(filt, 1, len(offers), lambda t, _: (eps[t : t + 1], delta[t : t + 1]))
    if not admitted[0]:
        return
    e_list, d_list = zip(*admitted[0])
    assert optimal_epsilon_heterogeneous(list(e_list), list(d_list), delta_g) <= eps_g


# ---------------------------------------------------------------------------------------
# allowed_reports
# ---------------------------------------------------------------------------------------


def count_by_spending(filt: PrivacyFilter, eps: np.ndarray, delta: np.ndarray, cap: int = 100_000) -> np.ndarray:
    """For each (eps[j], delta[j]): how many times in a row the filter admits it."""
    state = filt.start(eps.size)
    counts = np.zeros(eps.size, dtype=np.int64)
    for _ in range(cap):
        ok = filt.admits(state, eps, delta)
        if not ok.any():
            return counts
        state = filt.spend(state, eps, delta, ok)
        counts += ok
    raise AssertionError("still admitting")


@settings(max_examples=40)
@given(
    eps_g=EPS_BUDGETS,
    delta_g=st.sampled_from([1e-9, 1e-6, 1e-3]),
    ratios=st.lists(st.floats(0.002, 1.5), min_size=1, max_size=8),
    dratios=st.lists(st.sampled_from([0.0, 0.01, 0.1, 0.3, 1.0, 2.0]), min_size=8, max_size=8),
)
def test_allowed_reports_equals_counting_with_admits_and_spend(eps_g, delta_g, ratios, dratios):
    eps = np.array(ratios) * eps_g
    delta = np.array(dratios[: eps.size]) * delta_g
    for filt in (BasicFilter(eps_g, delta_g), AdvancedFilter(eps_g, delta_g)):
        # at most ~500 reports: eps = ratio * budget for basic, sqrt(ratio * budget of eps^2) for advanced
        e = eps if isinstance(filt, BasicFilter) else np.sqrt(np.array(ratios) * filt.eps_sq_budget)
        counted = count_by_spending(filt, e, delta)
        assert [allowed_reports(filt, float(x), float(d)) for x, d in zip(e, delta)] == counted.tolist()


def test_allowed_reports_at_the_edges():
    basic = BasicFilter(1.0, 1e-6)
    adv = AdvancedFilter(1.0, 1e-6)
    assert allowed_reports(basic, 0.25) == 4  # exact binary fractions fill the budget
    assert allowed_reports(basic, 0.1) == 9  # float 0.1 > 1/10: ten are past 1.0 ...
    assert allowed_reports(BasicFilter(1.0 + 1e-12), 0.1) == 10  # ... by 5.6e-17
    assert allowed_reports(basic, 0.0, 1e-7) == 10  # delta alone limits
    assert allowed_reports(basic, 0.0) == MAX_REPORTS == allowed_reports(adv, 0.0)  # free reports
    assert allowed_reports(basic, 1.5) == 0 == allowed_reports(basic, math.inf) == allowed_reports(adv, 2.0)
    assert allowed_reports(basic, 0.5, 1.0) == 0
    assert allowed_reports(BasicFilter(1.0), 0.5, 1e-300) == 0  # no delta budget: only pure reports
    assert allowed_reports(AdvancedFilter(1.0, 1e-6, delta_slack=1e-6), 0.01, 1e-12) == 0


class _Wrapped(PrivacyFilter):
    """A filter with no closed form: allowed_reports has to count."""

    def __init__(self, inner: PrivacyFilter) -> None:
        self.inner, self.eps_budget, self.delta_budget = inner, inner.eps_budget, inner.delta_budget

    def start(self, n):
        return self.inner.start(n)

    def admits(self, state, eps, delta=0.0):
        return self.inner.admits(state, eps, delta)

    def spend(self, state, eps, delta=0.0, mask=None):
        return self.inner.spend(state, eps, delta, mask)


def test_allowed_reports_counts_for_a_filter_without_a_closed_form():
    for inner, eps, delta in [(BasicFilter(1.0, 1e-6), 0.07, 1e-8), (AdvancedFilter(3.0, 1e-6), 0.2, 0.0)]:
        assert allowed_reports(_Wrapped(inner), eps, delta) == allowed_reports(inner, eps, delta) > 0


# ---------------------------------------------------------------------------------------
# The filters' definitions and their inputs
# ---------------------------------------------------------------------------------------


def test_the_advanced_filters_bound_on_the_sum_of_squares_solves_its_condition():
    for eps_g, d1 in [(1.0, 1e-6), (0.01, 1e-9), (10.0, 0.5), (3.0, 1.0)]:
        filt = AdvancedFilter(eps_g, d1, delta_slack=d1)
        with mpmath.workdps(50):
            log_term = mpmath.log(1 / mpmath.mpf(d1))
            # the positive root of s^2 / 2 + sqrt(2 L) s = eps_g, squared
            s = -mpmath.sqrt(2 * log_term) + mpmath.sqrt(2 * log_term + 2 * mpmath.mpf(eps_g))
            root = s * s
            assert mpmath.sqrt(2 * log_term * root) + root / 2 == pytest.approx(eps_g, rel=1e-30)
            assert filt.eps_sq_budget <= root
            assert filt.eps_sq_budget == pytest.approx(float(root), rel=1e-11)
        assert filt.condition(filt.eps_sq_budget) == pytest.approx(eps_g, rel=1e-11)
    filt = AdvancedFilter(1.0, 1e-6)  # the default split: half on the concentration term
    assert filt.delta_slack == 5e-7 and filt.delta_reports == 5e-7
    assert filt.delta_slack + filt.delta_reports <= 1e-6


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: BasicFilter(0.0), "eps_budget"),
        (lambda: BasicFilter(float("nan")), "eps_budget"),
        (lambda: BasicFilter(math.inf), "eps_budget"),
        (lambda: BasicFilter(1.0, 1.5), "delta_budget"),
        (lambda: AdvancedFilter(1.0, 0.0), "delta_budget"),
        (lambda: AdvancedFilter(1.0, 1e-6, delta_slack=2e-6), "delta_slack"),
        (lambda: AdvancedFilter(1.0, 1e-6, delta_slack=0.0), "delta_slack"),
        (lambda: BasicFilter(1.0).start(0), "n"),
        (lambda: BasicFilter(1.0).admits(BasicFilter(1.0).start(2), [0.1, 0.1, 0.1]), "eps"),
        (lambda: BasicFilter(1.0).admits(BasicFilter(1.0).start(2), [0.1, -0.1]), r"eps\[1\]"),
        (lambda: BasicFilter(1.0).admits(BasicFilter(1.0).start(2), 0.1, [0.0, 1.5]), r"delta\[1\]"),
        (lambda: BasicFilter(1.0).admits(BasicFilter(1.0).start(2), "0.1"), "eps"),
        (lambda: BasicFilter(1.0).spend(BasicFilter(1.0).start(2), 0.1, 0.0, [1, 0]), "mask"),
        (lambda: BasicFilter(1.0).admits(BasicFilter(2.0).start(2), 0.1), "state"),
        (lambda: BasicFilter(1.0).admits(AdvancedFilter(1.0, 1e-6).start(2), 0.1), "state"),
        (lambda: allowed_reports("basic", 0.1), "filter"),
        (lambda: allowed_reports(BasicFilter(1.0), -0.1), "eps"),
    ],
)
def test_bad_arguments_are_one_line_naming_the_parameter(make, name):
    with pytest.raises(LdpSimError, match=f"^{name}: got ") as err:
        make()
    assert "\n" not in str(err.value)


def test_states_and_names():
    filt = BasicFilter(2.0, 1e-6)
    state = filt.start(4)
    assert isinstance(state, FilterState) and state.n == 4
    assert filt.admits(state, np.full(4, 2.0)).all() and not filt.admits(state, 2.0000000000000004).any()
    assert repr(filt) == "BasicFilter(eps_budget=2.0, delta_budget=1e-06)"
    assert "AdvancedFilter(eps_budget=1.0, delta_budget=1e-06" in repr(AdvancedFilter(1.0, 1e-6))
