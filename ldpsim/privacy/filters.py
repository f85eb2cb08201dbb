"""Privacy filters: per-respondent budgets that stay valid when each report's (eps, delta)
is chosen adaptively, from the outputs of the respondent's earlier reports.

A composition theorem needs the parameters of every report fixed in advance. A *privacy
filter* (Rogers, Roth, Ullman and Vadhan 2016) is a stopping rule instead: before each
report it looks at the parameters so far and at the next report's, and either admits the
report or refuses it. A valid filter for a budget (eps_g, delta_g) guarantees that the whole
interaction, stopped by the filter, is (eps_g, delta_g)-DP for the respondent, however the
parameters were chosen (as long as each is fixed before its report is drawn).

Two filters are implemented, both vectorised over ``n`` respondents whose parameters may differ:

* :class:`BasicFilter` -- basic composition as a filter (Rogers et al. 2016): admits while
  ``sum eps_i <= eps_g`` and ``sum delta_i <= delta_g``.
* :class:`AdvancedFilter` -- the filter of Whitehouse, Ramdas, Rogers and Wu (2023),
  whose condition carries the constants of advanced composition: admits while
  ``sqrt(2 log(1/delta') sum eps_i^2) + (1/2) sum eps_i^2 <= eps_g`` and
  ``sum delta_i <= delta''``, with ``delta' + delta'' = delta_g`` split in advance.

Usage::

    f = AdvancedFilter(1.0, 1e-6)
    state = f.start(n)                  # nothing spent yet
    ok = f.admits(state, eps, delta)    # per respondent: may the next report be sent?
    state = f.spend(state, eps, delta, ok)

**Exact, conservative arithmetic.** The filters compare sums of the floats they are given
in exact arithmetic, never past the budget: each report is charged its parameter rounded
*up* to a whole number of units (a power of two, 2^-60 to 2^-61 of the budget: exact for
any report of at least 1/256 of the budget), and the charges are summed as integers, so the
sums are exact, do not depend on the order of the reports, and the exact (real-number) sum
of what was admitted never exceeds the budget.
One consequence: ten reports of ``eps = 0.1`` do not fit ``eps_budget = 1.0``, because the
float 0.1 is 0.1000000000000000055...; a budget of ``1.0 + 1e-12`` admits ten.

**Refused reports.** Whether a report is admitted depends only on the parameters (never on
the data), so a refused report is the same as a report with ``eps = delta = 0``, an
adaptive choice the theorems allow: after a refusal a respondent may still be offered a
smaller report that fits. The filter's guarantee is for the respondent's whole sequence.

This module is pure accounting: it never imports :mod:`ldpsim.mechanisms`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid

__all__ = [
    "AdvancedFilter",
    "BasicFilter",
    "FilterState",
    "PrivacyFilter",
    "allowed_reports",
]

#: Largest count :func:`allowed_reports` returns: reports that cost nothing (eps = delta =
#: 0) are admitted without end, and they (and any report of which more than this many fit)
#: are reported as this many.
MAX_REPORTS = 2**53
#: For a filter without a closed form (a user's subclass), :func:`allowed_reports` counts
#: by ``admits``/``spend``, up to this many reports.
COUNT_CAP = 100_000
#: Largest number of respondents a state may hold.
MAX_RESPONDENTS = 10**9
#: The advanced filter's bound on ``sum eps_i^2`` is shaved by this relative amount, far more
#: than the float error of computing it (a few units in the last place), so that every
#: admitted sequence satisfies the theorem's condition in exact arithmetic.
SHAVE = 2.0**-40


# --------------------------------------------------------------------------- state
@dataclass(frozen=True, eq=False)
class FilterState:
    """What a filter knows of ``n`` respondents: the reports recorded for each and, for each
    quantity the filter budgets, the sum of the charges (int64: a number of ``units[q]``,
    a power of two; each report's value rounded up to a whole unit, so ``charges[q] *
    units[q]`` is, exactly, an upper bound on the sum of what was recorded, within one unit
    per report).

    ``sum_eps``, ``sum_eps_sq`` and ``sum_delta`` give the sums as floats (to double
    precision). States are never changed in place: :meth:`PrivacyFilter.spend` returns a
    new one."""

    count: NDArray[np.int64]
    charges: Mapping[str, NDArray[np.int64]] = field(repr=False)
    units: Mapping[str, float] = field(repr=False)

    @property
    def n(self) -> int:
        """Number of respondents."""
        return int(self.count.size)

    def total(self, quantity: str) -> NDArray[np.float64]:
        """The charged sum of ``quantity`` (``"eps"``, ``"eps_sq"`` or ``"delta"``) per
        respondent, as floats (``charges[q] * units[q]`` rounded to double precision)."""
        if quantity not in self.charges:
            raise invalid("quantity", quantity, f"one this filter budgets: {', '.join(sorted(self.charges))}")
        return self.charges[quantity].astype(np.float64) * self.units[quantity]

    @property
    def sum_eps(self) -> NDArray[np.float64]:
        """Sum of eps_i per respondent (the basic filter)."""
        return self.total("eps")

    @property
    def sum_eps_sq(self) -> NDArray[np.float64]:
        """Sum of eps_i^2 per respondent (the advanced filter)."""
        return self.total("eps_sq")

    @property
    def sum_delta(self) -> NDArray[np.float64]:
        """Sum of delta_i per respondent (both filters)."""
        return self.total("delta")


# --------------------------------------------------------------------------- exact charges
#: A budget is ``cap`` units with ``2^(CAP_BITS-1) <= cap < 2^CAP_BITS``: 8 bits finer than
#: the budget's own last place, so every report of at least 1/256 of the budget is charged
#: exactly, and sums (at most 2 * 2^CAP_BITS) stay far from the int64 limit.
CAP_BITS = 61


def _unit_for(limit: float) -> float:
    """A power of two with ``limit / unit`` an integer in [2^60, 2^61) (smaller for a
    subnormal limit, whose unit is the smallest float 2^-1074; 1.0 for a zero limit, when
    only zero charges fit)."""
    if limit <= 0.0:
        return 1.0
    _, exponent = math.frexp(limit)  # limit = m 2^exponent, 1/2 <= m < 1
    return math.ldexp(1.0, max(exponent - CAP_BITS, -1074))


@dataclass(frozen=True)
class _Budget:
    """One budgeted quantity: its unit and the largest total charge (in units) that fits."""

    unit: float
    cap: int  # < 2^CAP_BITS

    @classmethod
    def of(cls, limit: float) -> _Budget:
        unit = _unit_for(limit)
        cap = int(limit / unit)  # exact: limit is a float, unit a power of two
        assert cap * Fraction(unit) <= Fraction(limit)
        return cls(unit, cap)

    @property
    def limit(self) -> float:
        return self.cap * self.unit

    def charge(self, x: NDArray[np.float64]) -> NDArray[np.int64]:
        """``ceil(x / unit)`` for ``0 <= x <= limit`` (exact: unit is a power of two, so
        ``x / unit`` is x with its exponent shifted), at least 1 for any x > 0, and ``cap +
        1`` (never fits) for x above the limit or inf."""
        over = ~(x <= self.limit)
        xs = np.where(over, 0.0, x)
        q = np.ceil(xs / self.unit)
        q = np.where((q == 0.0) & (xs > 0.0), 1.0, q)  # a tiny x that underflowed
        out = q.astype(np.int64)  # exact: q is a whole number <= cap < 2^61
        out[over] = self.cap + 1  # in int64: cap + 1 need not be a float
        return out


def _eps_sq_upper(eps: NDArray[np.float64], limit: float) -> NDArray[np.float64]:
    """An upper bound on eps^2 (the float product, one step up); inf where eps^2 is past
    ``limit`` (so no overflow is ever computed)."""
    big = ~(eps <= math.sqrt(limit) * 2.0 + 1.0)
    e = np.where(big, 0.0, eps)
    sq = np.nextafter(e * e, np.inf)
    sq = np.where(e == 0.0, 0.0, sq)
    return np.where(big, np.inf, sq)


# --------------------------------------------------------------------------- validation
def _per_respondent(value: ArrayLike, name: str, n: int, *, what: str) -> NDArray[np.float64]:
    """A scalar or a 1-D array of length n, as float64 of length n; each element checked:
    ``what == "eps"``: a number >= 0 (inf allowed: never admitted); ``"delta"``: in [0, 1]."""
    if np.ndim(value) == 0:
        x = v.epsilon(value, name, allow_inf=True) if what == "eps" else v.delta(value, name)
        return np.full(n, x, dtype=np.float64)
    expected = "numbers >= 0" if what == "eps" else "numbers in [0, 1]"
    arr = v.real_array(value, name, expected)
    if arr.ndim != 1 or arr.size != n:
        raise invalid(name, f"an array of shape {arr.shape}", f"a number or a 1-D array of length n = {n}")
    bad = ~(arr >= 0) if what == "eps" else ~((arr >= 0) & (arr <= 1))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise invalid(f"{name}[{i}]", float(arr[i]), "a number >= 0" if what == "eps" else "a number in [0, 1]")
    return arr


def _mask(mask: ArrayLike | None, n: int) -> NDArray[np.bool_]:
    if mask is None:
        return np.ones(n, dtype=bool)
    arr = np.asarray(mask)
    if arr.dtype != bool or arr.shape != (n,):
        raise invalid("mask", mask, f"a boolean array of length n = {n} (or None: every respondent)")
    return arr


# --------------------------------------------------------------------------- filters
class PrivacyFilter:
    """Base class: a stopping rule for each respondent's reports against a budget
    ``(eps_budget, delta_budget)``. Subclasses say which theorem makes the rule valid.

    ``start(n)`` gives the state of ``n`` respondents with nothing spent; ``admits(state,
    eps, delta)`` says, per respondent, whether a next report ``(eps, delta)`` (scalars, or
    arrays of length n) keeps the respondent within the budget; ``spend(state, eps, delta,
    mask)`` records the reports of the respondents where ``mask`` is True, and raises if
    one of them is not admitted."""

    eps_budget: float
    delta_budget: float

    def start(self, n: int) -> FilterState:
        raise NotImplementedError

    def admits(self, state: FilterState, eps: ArrayLike, delta: ArrayLike = 0.0) -> NDArray[np.bool_]:
        raise NotImplementedError

    def spend(
        self, state: FilterState, eps: ArrayLike, delta: ArrayLike = 0.0, mask: ArrayLike | None = None
    ) -> FilterState:
        raise NotImplementedError

    def _closed_form_count(self, eps: float, delta: float) -> int | None:
        """How many reports of a fixed (eps, delta) the filter admits, if known in closed form."""
        return None


class _ChargedFilter(PrivacyFilter):
    """A filter that admits while each of a few sums of per-report quantities stays within
    a limit; the sums are kept exactly (see the module docstring)."""

    _budgets: dict[str, _Budget]

    def _quantities(self, eps: NDArray[np.float64], delta: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        raise NotImplementedError

    def start(self, n: int) -> FilterState:
        n = v.integer(n, "n", minimum=1, maximum=MAX_RESPONDENTS)
        return FilterState(
            count=np.zeros(n, dtype=np.int64),
            charges={q: np.zeros(n, dtype=np.int64) for q in self._budgets},
            units={q: b.unit for q, b in self._budgets.items()},
        )

    def _check_state(self, state: object) -> FilterState:
        if (
            not isinstance(state, FilterState)
            or set(state.charges) != set(self._budgets)
            or any(state.units[q] != b.unit for q, b in self._budgets.items())
        ):
            raise invalid("state", type(state).__name__, f"a FilterState from this filter's start(n) ({self!r})")
        return state

    def _charges(self, state: FilterState, eps: ArrayLike, delta: ArrayLike) -> dict[str, NDArray[np.int64]]:
        e = _per_respondent(eps, "eps", state.n, what="eps")
        d = _per_respondent(delta, "delta", state.n, what="delta")
        values = self._quantities(e, d)
        return {q: self._budgets[q].charge(values[q]) for q in self._budgets}

    def admits(self, state: FilterState, eps: ArrayLike, delta: ArrayLike = 0.0) -> NDArray[np.bool_]:
        """Per respondent: would a next report ``(eps, delta)`` keep the respondent within the
        budget? (Recorded charges are at most ``cap`` < 2^61 and a new one at most ``cap +
        1``, so the int64 sums cannot overflow.)"""
        state = self._check_state(state)
        charges = self._charges(state, eps, delta)
        ok = np.ones(state.n, dtype=bool)
        for q, b in self._budgets.items():
            ok &= state.charges[q] + charges[q] <= b.cap
        return ok

    def spend(
        self, state: FilterState, eps: ArrayLike, delta: ArrayLike = 0.0, mask: ArrayLike | None = None
    ) -> FilterState:
        """A new state with the report ``(eps, delta)`` recorded for each respondent where
        ``mask`` is True (every respondent when ``mask`` is None). Raises
        :class:`~ldpsim.errors.LdpSimError` if one of them is not admitted: spend only where
        :meth:`admits` said yes."""
        state = self._check_state(state)
        m = _mask(mask, state.n)
        charges = self._charges(state, eps, delta)
        new = {q: state.charges[q] + np.where(m, charges[q], 0) for q in self._budgets}
        over = np.zeros(state.n, dtype=bool)
        for q, b in self._budgets.items():
            over |= new[q] > b.cap
        if np.any(over):
            i = int(np.flatnonzero(over)[0])
            raise invalid(
                "mask",
                f"respondent {i} selected",
                f"only respondents {self!r} admits (call admits first; a report past the budget is never recorded)",
            )
        return FilterState(count=state.count + m.astype(np.int64), charges=new, units=dict(state.units))

    def _closed_form_count(self, eps: float, delta: float) -> int | None:
        values = self._quantities(np.array([eps]), np.array([delta]))
        k = MAX_REPORTS
        for q, b in self._budgets.items():
            c = int(b.charge(values[q])[0])
            if c > 0:
                k = min(k, b.cap // c)
        return k


class BasicFilter(_ChargedFilter):
    """Basic composition as a filter, from Rogers, Roth, Ullman and Vadhan (2016), "Privacy
    odometers and filters: pay-as-you-go composition", NeurIPS (arXiv 1605.08294), who
    show that basic composition, unlike advanced composition, survives adaptively chosen
    parameters unchanged. The statement: if each report i is (eps_i, delta_i)-DP given the
    earlier outputs, with (eps_i, delta_i) chosen adaptively from them, then the
    interaction stopped before the first report that would make ``sum eps_i > eps_g`` or
    ``sum delta_i > delta_g`` is (eps_g, delta_g)-DP.

    Admits a report while ``sum eps_i <= eps_budget`` and ``sum delta_i <= delta_budget``
    (including the report), in exact arithmetic (module docstring)."""

    def __init__(self, eps_budget: float, delta_budget: float = 0.0) -> None:
        self.eps_budget = v.positive(eps_budget, "eps_budget")
        self.delta_budget = v.delta(delta_budget, "delta_budget")
        self._budgets = {"eps": _Budget.of(self.eps_budget), "delta": _Budget.of(self.delta_budget)}

    def _quantities(self, eps: NDArray[np.float64], delta: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return {"eps": eps, "delta": delta}

    def __repr__(self) -> str:
        return f"BasicFilter(eps_budget={self.eps_budget!r}, delta_budget={self.delta_budget!r})"


class AdvancedFilter(_ChargedFilter):
    """The advanced-composition filter of Whitehouse, Ramdas, Rogers and Wu (2023), "Fully
    adaptive composition in differential privacy", ICML (arXiv 2203.05481): their filter for
    (eps, delta)-DP, which they obtain from their filter for approximate zCDP (an
    (eps_i, delta_i)-DP report is delta_i-approximately (eps_i^2 / 2)-zCDP).

    The theorem: let each report i be (eps_i, delta_i)-DP given the earlier outputs, with
    (eps_i, delta_i) chosen adaptively from them; let eps_g > 0 and delta_g = delta' +
    delta'' with delta' > 0 and delta'' >= 0; stop at

        N = inf{ n : eps_g < sqrt(2 log(1/delta') sum_{i <= n+1} eps_i^2)
                              + (1/2) sum_{i <= n+1} eps_i^2
                     or delta'' < sum_{i <= n+1} delta_i }.

    Then the first N reports are (eps_g, delta_g)-DP. For k reports of one eps the
    condition is advanced composition with its constants, ``eps sqrt(2 k log(1/delta')) +
    k eps^2 / 2`` (the zCDP form, Bun and Steinke 2016; Dwork, Rothblum and Vadhan 2010 have
    ``k eps (e^eps - 1)`` for the second term), now valid for adaptively chosen parameters.
    For pure reports (every delta_i = 0) the same condition also follows from the Renyi
    filter of Feldman and Zrnic (2021) at every order at once.

    Admits a report while, including it, ``sqrt(2 log(1/delta_slack) S2) + S2 / 2 <=
    eps_budget`` with ``S2 = sum eps_i^2``, and ``sum delta_i <= delta_budget -
    delta_slack``. ``delta_slack`` is the theorem's delta' (the part of delta_budget spent on
    the concentration term; the rest, delta'', pays for the reports' own delta_i); it must
    be fixed before any report, and defaults to half of ``delta_budget``. With pure
    reports (every delta_i = 0), ``delta_slack=delta_budget`` admits the most.

    The first condition is ``S2 <= V`` with ``V = (2 eps_g / (sqrt(2 L + 2 eps_g) +
    sqrt(2 L)))^2``, ``L = log(1/delta')`` (the root of the quadratic in sqrt(S2)); ``V`` is
    shaved by ``SHAVE`` (2^-40 relative) so that the condition holds in exact arithmetic.
    Each eps_i^2 is charged rounded up."""

    def __init__(self, eps_budget: float, delta_budget: float, delta_slack: float | None = None) -> None:
        self.eps_budget = v.positive(eps_budget, "eps_budget")
        d = v.delta(delta_budget, "delta_budget")
        if d <= 0.0:
            raise invalid("delta_budget", delta_budget, "a number in (0, 1]: the theorem needs delta' > 0")
        self.delta_budget = d
        if delta_slack is None:
            slack = d / 2.0
        else:
            slack = v.delta(delta_slack, "delta_slack")
            if not 0.0 < slack <= d:
                raise invalid("delta_slack", delta_slack, f"a number in (0, delta_budget = {d!r}]")
        self.delta_slack = slack
        rest = d - slack
        if Fraction(rest) > Fraction(d) - Fraction(slack):  # rounded up: step down
            rest = math.nextafter(rest, 0.0)
        #: the theorem's delta'': the most the reports' own delta_i may sum to
        self.delta_reports = max(0.0, rest)
        log_term = -math.log(slack)
        root = 2.0 * self.eps_budget / (math.sqrt(2.0 * log_term + 2.0 * self.eps_budget) + math.sqrt(2.0 * log_term))
        #: the largest sum of eps_i^2 admitted (the condition solved for it, shaved)
        self.eps_sq_budget = root * root * (1.0 - SHAVE)
        self._budgets = {"eps_sq": _Budget.of(self.eps_sq_budget), "delta": _Budget.of(self.delta_reports)}

    def _quantities(self, eps: NDArray[np.float64], delta: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return {"eps_sq": _eps_sq_upper(eps, self.eps_sq_budget), "delta": delta}

    def condition(self, sum_eps_sq: ArrayLike) -> NDArray[np.float64] | float:
        """The theorem's left-hand side ``sqrt(2 log(1/delta_slack) S2) + S2 / 2`` at ``S2 =
        sum eps_i^2`` (floats; for reporting: admission is decided exactly, as above)."""
        s2 = np.asarray(sum_eps_sq, dtype=np.float64)
        out = np.sqrt(2.0 * -math.log(self.delta_slack) * s2) + s2 / 2.0
        return float(out) if out.ndim == 0 else out

    def __repr__(self) -> str:
        return (
            f"AdvancedFilter(eps_budget={self.eps_budget!r}, delta_budget={self.delta_budget!r}, "
            f"delta_slack={self.delta_slack!r})"
        )


# --------------------------------------------------------------------------- counting
def allowed_reports(filter: PrivacyFilter, eps: float, delta: float = 0.0) -> int:
    """How many reports of a fixed ``(eps, delta)`` ``filter`` admits for one respondent,
    from nothing spent: the same number as calling ``admits``/``spend`` until refused.

    In closed form for :class:`BasicFilter` and :class:`AdvancedFilter` (the charges are
    integers: ``min over quantities of cap // charge``), at most :data:`MAX_REPORTS` (2^53,
    returned for reports that cost nothing). For another :class:`PrivacyFilter`, counted
    with ``admits``/``spend``, up to :data:`COUNT_CAP` (returned if still admitting)."""
    if not isinstance(filter, PrivacyFilter):
        raise invalid("filter", filter, "a PrivacyFilter (BasicFilter or AdvancedFilter)")
    e = v.epsilon(eps, "eps", allow_inf=True)
    d = v.delta(delta, "delta")
    k = filter._closed_form_count(e, d)
    if k is not None:
        return min(k, MAX_REPORTS)
    state = filter.start(1)
    count = 0
    while count < COUNT_CAP and bool(filter.admits(state, e, d)[0]):
        state = filter.spend(state, e, d)
        count += 1
    return count
