"""Memoisation (Erlingsson, Pihur and Korolova 2014, RAPPOR): a permanent randomised response
drawn once per true value and reused, and an instantaneous randomisation of it per report.

**The mechanism.** Two finite mechanisms: the *permanent* one ``M1`` (``k`` inputs, ``s``
outputs: the memo alphabet) and the *instantaneous* one ``M2`` (``s`` inputs, ``m`` outputs).
A respondent who holds the value ``x`` draws the memo ``S ~ M1(. | x)`` the first time it
reports ``x`` and keeps it; every report of ``x``, now or later, is a fresh draw ``Y ~ M2(. |
S)`` from that memo. A new value gets its own memo, drawn independently.

**One report** is the chain ``M2 o M1``: the finite mechanism with matrix ``Q = M1 M2``
(``k x m``, computed in log space). :class:`Memoised` *is* that finite mechanism for the
contract: ``sample``, ``log_density``, ``epsilon``, ``delta``, ``guarantee``, the samplers
and the inversion for the analyst are those of the composed mechanism (:attr:`Memoised.chain`),
so a scenario or an audit treats it like any other finite mechanism. For two k-ary
randomized responses the chain is again k-ary randomized response, with keep probability the
product of the two (``q = q1 q2``, ``q_i = (e^eps_i - 1)/(e^eps_i + k - 1)``), and the chain is
built as one (closed forms, no ``k x k`` matrix unless asked).

**c reports of one unchanged value** have the joint law ``P(y_1..y_c | x) = sum_s M1(s | x)
prod_i M2(y_i | s)``: a function of ``y`` only through the counts ``t_j`` of each output
symbol among the reports (the order carries no information about ``x``), so the privacy of
the ``c`` reports is the privacy of the finite mechanism from ``x`` to the count vector
``t`` (``C(c + m - 1, m - 1)`` outputs, each weighted by its multinomial coefficient), which
:meth:`Memoised.epsilon_reports` builds and measures exactly while the work stays under
:data:`REPORTS_WORK_LIMIT`. It grows with ``c`` (``c`` reports are a post-processing of
``c + 1``), equals the one-report eps at ``c = 1`` and never exceeds the permanent
mechanism's eps ``eps_inf`` (every report is a post-processing of the memo), which it tends
to when the rows of ``M2`` are distinct (many reports reveal the memo). For two k-ary
randomized responses (eps ``a`` then ``b``) there is a closed form for every ``c``::

    eps_c = log((e^a e^(c b) + k - 1) / (e^(c b) + e^a + k - 2)),

attained when all ``c`` reports name the value ``x`` (docs/theory.md, memoisation).

**Histories** (:meth:`Memoised.epsilon_history`): distinct values have independent memos, so
a respondent whose answers took ``d`` distinct values, reported ``c_1..c_d`` times, spends
``sum_j eps_{c_j}`` (basic composition), against any history with the same pattern of equal
answers. The pattern itself (when the answer changes) is not protected by memoisation.
"""

from __future__ import annotations

import itertools
import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import FiniteMechanism, MatrixMechanism, check_dense
from ldpsim.mechanisms.randomized_response import RandomizedResponse

__all__ = ["Memoised", "memoised_rr", "chain_mechanism", "REPORTS_WORK_LIMIT"]

#: :meth:`Memoised.epsilon_reports` enumerates the count vectors of ``c`` reports while
#: ``k * s * C(c + m - 1, m - 1)`` (inputs x memo symbols x count vectors) is at most this;
#: beyond it, it returns the permanent mechanism's eps, a valid upper bound. 2^22 keeps one
#: pure evaluation under a second (a few with delta > 0): c <= 114 reports for k = s = m = 4, c <= 8 for m = 10, any c
#: up to 10^6 for binary reports (two k-ary randomized responses have a closed form instead).
REPORTS_WORK_LIMIT = 1 << 22

#: Temporary entries per block of the log-space matrix product.
_BLOCK_ENTRIES = 1 << 21


def _log_matmul(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(exp(a) @ exp(b))`` in log space: ``out[x, y] = logsumexp_s (a[x, s] + b[s, y])``,
    ``-inf`` where every term is. Exact to rounding whatever the scale (no entry underflows),
    in row blocks of bounded memory."""
    k, s = a.shape
    m = b.shape[1]
    out = np.empty((k, m), dtype=np.float64)
    rows = max(1, _BLOCK_ENTRIES // max(1, s * m))
    for start in range(0, k, rows):
        stop = min(start + rows, k)
        terms = a[start:stop, :, None] + b[None, :, :]  # (rows, s, m); -inf stays -inf
        top = terms.max(axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            out[start:stop] = safe + np.log(np.exp(terms - safe[:, None, :]).sum(axis=1))
    return out


def _rr_chain(first: RandomizedResponse, second: RandomizedResponse) -> RandomizedResponse:
    """Two k-ary randomized responses in a row: k-ary randomized response whose keep
    probability is the product ``q = q1 q2``, i.e. eps = ``log(1 + k q / (1 - q))`` with
    ``1 - q = k (o1 + q1 o2)`` (``o_i`` the probability of each other symbol), in logs."""
    k = first.k
    log_q = math.log(first.keep) + math.log(second.keep) if first.keep > 0 and second.keep > 0 else -math.inf
    log_rest = math.log(k) + float(
        np.logaddexp(first.log_p_other, math.log(first.keep) + second.log_p_other)
        if first.keep > 0
        else first.log_p_other
    )
    eps = float(np.logaddexp(0.0, math.log(k) + log_q - log_rest)) if log_q > -math.inf else 0.0
    return RandomizedResponse(k, eps)


def chain_mechanism(first: FiniteMechanism, second: FiniteMechanism) -> FiniteMechanism:
    """The finite mechanism ``second o first``: ``first``'s report fed to ``second`` (its
    inputs are ``first``'s output codes), matrix ``Q1 Q2`` computed in log space. Two k-ary
    randomized responses give k-ary randomized response (closed forms); any other pair a
    :class:`MatrixMechanism` with ``first``'s input labels and ``second``'s output labels."""
    if not (isinstance(first, FiniteMechanism) and isinstance(second, FiniteMechanism)):
        raise invalid("mechanisms", f"{first!r} and {second!r}", "two finite mechanisms (with matrices)")
    if second.k != first.m:
        raise invalid("instantaneous", second, f"a finite mechanism with {first.m} inputs, one per output of {first!r}")
    if isinstance(first, RandomizedResponse) and isinstance(second, RandomizedResponse):
        return _rr_chain(first, second)
    check_dense(first.k, second.m, "chained")
    lm = _log_matmul(first.log_matrix, second.log_matrix)
    return MatrixMechanism(
        lm,
        name="chain",
        params={"first": repr(first), "second": repr(second)},
        input_labels=first.input_labels,
        output_labels=second.output_labels,
    )


def _count_vectors(c: int, m: int) -> NDArray[np.int64]:
    """Every vector of ``m`` non-negative integers summing to ``c`` (``C(c + m - 1, m - 1)``
    rows), by stars and bars: the ``m - 1`` bar positions among ``c + m - 1`` slots."""
    if m == 1:
        return np.full((1, 1), c, dtype=np.int64)
    slots = c + m - 1
    n = math.comb(slots, m - 1)
    bars = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(slots), m - 1)), dtype=np.int64, count=n * (m - 1)
    ).reshape(n, m - 1)
    edges = np.hstack([np.full((n, 1), -1, dtype=np.int64), bars, np.full((n, 1), slots, dtype=np.int64)])
    return np.diff(edges, axis=1) - 1


class Memoised(FiniteMechanism):
    """Memoisation: a permanent finite mechanism ``M1`` drawn once per true value (the memo,
    reused by every later report of that value), then an instantaneous finite mechanism
    ``M2`` per report (see the module docstring).

    As a mechanism (the contract) it is one report: the chain ``M2 o M1`` (:attr:`chain`),
    a finite mechanism with matrix ``M1 M2``; every finite-mechanism member (``sample``,
    ``log_density``, ``epsilon``, ``delta``, ``guarantee``, ``privatize``,
    ``sample_counts``, ``invert`` and the inversion covariances) is the chain's. The
    longitudinal members:

    ``permanent_response(x, rng)``, ``instantaneous_response(s, rng)``
        The two stages, vectorised (memo codes from input indices; reports from memo codes).
    ``report_history(answers, rng)``
        Reports of ``n`` respondents over ``T`` periods (an ``n x T`` array of input
        indices): one memo per respondent and distinct value, one instantaneous draw per period.
    ``epsilon_report(delta)``
        The exact eps of one report (the chain's).
    ``epsilon_longitudinal(delta)``
        ``eps_inf``, the permanent mechanism's eps: a bound for any number of reports of one
        unchanged value.
    ``epsilon_reports(c, delta)``, ``epsilon_reports_exact_available(c, delta)``
        The exact eps of ``c`` reports of one unchanged value (or ``eps_inf`` beyond the work
        limit, and whether it is exact).
    ``epsilon_history(counts)``
        The pure eps spent by respondents whose answers took several values (a sum over the
        values; see its docstring for the neighbouring relation and what it does not cover).

    ``permanent`` and ``instantaneous`` are finite mechanisms; the instantaneous one has one
    input per output of the permanent one. Inputs are the permanent mechanism's input labels,
    outputs the instantaneous one's output codes.

    .. code-block:: python

        from ldpsim.mechanisms import Memoised, randomized_response
        memo = Memoised(randomized_response(4, 2.0), randomized_response(4, 1.0))
        assert memo.epsilon_report() < memo.epsilon_reports(5) < memo.epsilon_longitudinal() == 2.0
    """

    def __init__(self, permanent: FiniteMechanism, instantaneous: FiniteMechanism) -> None:
        chain = chain_mechanism(permanent, instantaneous)
        super().__init__(
            permanent.k,
            instantaneous.m,
            name="memoised",
            params={"permanent": repr(permanent), "instantaneous": repr(instantaneous)},
            input_labels=permanent.input_labels,
            output_labels=instantaneous.output_labels,
        )
        #: the permanent mechanism (drawn once per value)
        self.permanent = permanent
        #: the instantaneous mechanism (drawn per report from the memo)
        self.instantaneous = instantaneous
        #: one report as a finite mechanism: ``instantaneous o permanent``
        self.chain = chain
        self._eps_reports: dict[tuple[int, float], float] = {}

    # ----------------------------------------------------------------- identity
    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is not True:
            return same
        assert isinstance(other, Memoised)
        return self.permanent == other.permanent and self.instantaneous == other.instantaneous

    def __hash__(self) -> int:
        return super().__hash__()

    # ----------------------------------------------------------------- one report: the chain's
    @property
    def log_matrix(self) -> NDArray[np.float64]:
        return self.chain.log_matrix

    def _log_row(self, i: int) -> NDArray[np.float64]:
        return self.chain._log_row(i)

    def _epsilon_scalar(self, delta: float) -> float:
        return self.chain._epsilon_scalar(delta)

    def _delta_scalar(self, eps: float) -> float:
        return self.chain._delta_scalar(eps)

    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int64]:
        return self.chain._privatize_chunk(x, rng)

    def _sample_counts(self, n: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        return self.chain._sample_counts(n, rng)

    @property
    def inversion_matrix(self) -> NDArray[np.float64]:
        return self.chain.inversion_matrix

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.chain.invert(f)

    def inversion_covariance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.chain.inversion_covariance(marginal, n)

    def inversion_variance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        return self.chain.inversion_variance(marginal, n)

    def inversion_std_error(self, marginal: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return self.chain.inversion_std_error(marginal, n)

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        return self.chain.inversion_coefficient_range()

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.chain.forward(p)

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.chain.backward(g)

    def marginal(self, prior: ArrayLike) -> NDArray[np.float64]:
        return self.chain.marginal(prior)

    def possible_outputs(self) -> NDArray[np.bool_]:
        return self.chain.possible_outputs()

    @property
    def identifiable(self) -> bool:
        return self.chain.identifiable

    def server_operations(self, n: float) -> float:
        return self.chain.server_operations(n)

    # ----------------------------------------------------------------- the two stages
    def permanent_response(self, x: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """The memo of each input index in ``x`` (any shape; same shape out): one draw of
        the permanent mechanism per entry. A respondent keeps it for every later report of
        the same value: draw it once per respondent and value (a memo table), e.g.
        ``permanent_response(np.broadcast_to(np.arange(k), (n, k)), rng)``."""
        return self.permanent.privatize(x, rng)

    def instantaneous_response(self, s: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """One report per memo code in ``s`` (any shape; same shape out), independently: one
        draw of the instantaneous mechanism per entry."""
        return self.instantaneous.privatize(s, rng)

    def report_history(self, answers: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Memoised reports of ``n`` respondents over ``T`` periods: ``answers`` is an ``n x T``
        array of input indices (row ``i``: respondent ``i``'s answer at each period); each
        respondent draws one memo per distinct value it holds (only for the values it holds)
        and one instantaneous report per period. Returns the ``n x T`` reports."""
        gen = as_generator(rng)
        arr = v.symbol_indices(answers, self.k, "answers")
        if arr.ndim != 2:
            raise invalid("answers", f"an array of shape {arr.shape}", "an n x T array (respondents x periods)")
        n, periods = arr.shape
        pair = np.arange(n, dtype=np.int64)[:, None] * self.k + arr.astype(np.int64)
        pairs, where = np.unique(pair.reshape(-1), return_inverse=True)
        memo = self.permanent_response(pairs % self.k, gen)
        return self.instantaneous_response(memo[where].reshape(n, periods), gen)

    # ----------------------------------------------------------------- longitudinal privacy
    def epsilon_report(self, delta: float = 0.0) -> float:
        """The exact eps of one report (the chain's :meth:`epsilon`)."""
        return float(self.epsilon(v.delta(delta, "delta")))

    def epsilon_longitudinal(self, delta: float = 0.0) -> float:
        """``eps_inf``: the permanent mechanism's exact eps at ``delta``. Any number of reports
        of one unchanged value is a post-processing of its memo, so this bounds them all,
        however many; it is the limit of :meth:`epsilon_reports` when the rows of the
        instantaneous matrix are distinct (enough reports reveal the memo), and a bound that
        is not attained otherwise. It covers one value: each new value draws a new memo and
        spends again (:meth:`epsilon_history`)."""
        return float(self.permanent.epsilon(v.delta(delta, "delta")))

    def _rr_pair(self) -> bool:
        return isinstance(self.permanent, RandomizedResponse) and isinstance(self.instantaneous, RandomizedResponse)

    def epsilon_reports_exact_available(self, c: int, delta: float = 0.0) -> bool:
        """Whether :meth:`epsilon_reports` ``(c, delta)`` is exact (else it is the bound
        ``eps_inf``): always for ``c <= 1`` and for two k-ary randomized responses at
        ``delta = 0`` (closed form); otherwise when ``k * s * C(c + m - 1, m - 1) <=``
        :data:`REPORTS_WORK_LIMIT` (the count vectors of ``c`` reports are enumerated).
        Monotone: exact at ``c`` means exact at every smaller ``c``."""
        c = v.integer(c, "c", minimum=0)
        delta = v.delta(delta, "delta")
        if c <= 1 or (delta == 0.0 and self._rr_pair()):
            return True
        return self.k * self.permanent.m * math.comb(c + self.m - 1, self.m - 1) <= REPORTS_WORK_LIMIT

    def epsilon_reports(self, c: int, delta: float = 0.0) -> float:
        """The exact eps at ``delta`` of ``c`` reports of one unchanged value (drawn from one
        memo), when :meth:`epsilon_reports_exact_available`; beyond the work limit the valid
        upper bound :meth:`epsilon_longitudinal` (``eps_inf``).

        The joint law ``sum_s M1(s | x) prod_i M2(y_i | s)`` depends on the reports only
        through the count of each output symbol among them, so its privacy (pure and
        approximate) is that of the finite mechanism from ``x`` to the count vector; that
        mechanism is built in log space and measured exactly. Two k-ary randomized responses
        (eps ``a``, ``b``) have the closed form ``log((e^a e^(cb) + k - 1)/(e^(cb) + e^a + k - 2))``
        at ``delta = 0``.

        ``0`` at ``c = 0``; :meth:`epsilon_report` at ``c = 1``; nondecreasing in ``c`` and
        at most ``eps_inf`` (the result is capped there: rounding cannot push it above),
        tending to it when the instantaneous rows are distinct.
        """
        c = v.integer(c, "c", minimum=0)
        delta = v.delta(delta, "delta")
        if c == 0:
            return 0.0
        if c == 1:
            return self.epsilon_report(delta)
        key = (c, delta)
        if key not in self._eps_reports:
            bound = self.epsilon_longitudinal(delta)
            if delta == 0.0 and self._rr_pair():
                value = min(self._rr_reports_eps(c), bound)
            elif self.epsilon_reports_exact_available(c, delta):
                value = min(float(self._reports_mechanism(c).epsilon(delta)), bound)
            else:
                value = bound
            self._eps_reports[key] = value
        return self._eps_reports[key]

    def _rr_reports_eps(self, c: int) -> float:
        """``log((e^a e^u + k - 1)/(e^u + e^a + k - 2))`` with ``u = c b``, written as
        ``a + log(1 + (k - 1) e^-(a + u)) - log(1 + (e^a + k - 2) e^-u)`` (no overflow, no
        cancellation as ``u`` grows)."""
        # called only for two randomised responses (see _rr_pair)
        first, second = cast(RandomizedResponse, self.permanent), cast(RandomizedResponse, self.instantaneous)
        a, b, k = first.eps, second.eps, self.k
        u = c * b
        log_rest = float(np.logaddexp(a, math.log(k - 2))) if k > 2 else a  # log(e^a + k - 2)
        value = a + float(np.logaddexp(0.0, math.log(k - 1) - a - u)) - float(np.logaddexp(0.0, log_rest - u))
        return max(value, 0.0)

    def _reports_mechanism(self, c: int) -> MatrixMechanism:
        """The finite mechanism from the input to the counts of the ``m`` output symbols
        among ``c`` reports of one memo: ``log P(t | x) = log multinomial(c; t) +
        logsumexp_s (log M1[x, s] + sum_j t_j log M2[s, j])``."""
        t = _count_vectors(c, self.m)
        lb = self.instantaneous.log_matrix
        finite = np.isfinite(lb)
        per_memo = t.astype(np.float64) @ np.where(finite, lb, 0.0).T  # (count vectors, s)
        impossible = ((t > 0).astype(np.float64) @ (~finite).astype(np.float64).T) > 0
        per_memo[impossible] = -np.inf
        log_fact = np.array([math.lgamma(i + 1.0) for i in range(c + 1)])
        log_multinomial = log_fact[c] - log_fact[t].sum(axis=1)
        lm = _log_matmul(self.permanent.log_matrix, per_memo.T) + log_multinomial[None, :]
        return MatrixMechanism(lm, name="memoised_reports", params={"c": c})

    def epsilon_history(self, counts: ArrayLike) -> float | NDArray[np.float64]:
        """The pure eps spent by respondents whose answers took several values: ``counts[...,
        j]`` is how many reports a respondent made while holding value ``j`` (an ``n x k``
        integer array for ``n`` respondents, or one row); returns ``sum_j
        epsilon_reports(counts[..., j])`` per respondent (shape ``counts.shape[:-1]``; a float
        for one row). Vectorised: :meth:`epsilon_reports` runs once per distinct count.

        **Neighbouring relation.** Two answer histories ``(x_1..x_T)`` and ``(x'_1..x'_T)``
        over the same periods that share the pattern of equal answers (``x_t = x_u`` exactly
        when ``x'_t = x'_u``). The reports are then a post-processing of independent memos,
        one per distinct value, and the law of the reports factorises over the values, so the
        privacy loss is a sum over values of the loss of ``c_j`` reports of one memo: at most
        ``sum_j eps_{c_j}`` (basic composition; attained for two k-ary randomized responses,
        whose values can be swapped). Each new value spends again: the bound grows with the
        number of distinct values, not with the number of reports.

        **Not covered: the timing of changes.** Histories with different patterns, such as
        ``(a, a)`` against ``(a, b)``, are told apart through the memo: reports of one memo are
        correlated, reports of two memos are not. Memoisation cannot hide *when* (whether)
        the answer changes; the server sees it in any case, and the privacy loss between such
        histories can exceed both ``eps_inf`` and this sum (it is unbounded when the
        instantaneous mechanism reveals the memo). What holds for any two histories of ``T``
        reports is ``T`` times the instantaneous mechanism's eps. Exact while
        :meth:`epsilon_reports_exact_available` at the largest count; otherwise the terms
        beyond the limit are the bound ``eps_inf``.
        """
        arr = np.asarray(counts)
        if arr.ndim == 0 or arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise invalid("counts", counts, "an integer array of reports per value (n x k, or one row of k)")
        if arr.shape[-1] != self.k or (arr.size and int(arr.min()) < 0):
            raise invalid(
                "counts",
                f"an array of shape {arr.shape}",
                f"non-negative counts, last axis of length {self.k} (one per value)",
            )
        values, where = np.unique(arr.reshape(-1), return_inverse=True)
        table = np.array([self.epsilon_reports(int(c)) for c in values.tolist()], dtype=np.float64)
        out = table[where].reshape(arr.shape).sum(axis=-1)
        return float(out) if arr.ndim == 1 else out


def memoised_rr(k: int, eps_permanent: float, eps_instantaneous: float) -> Memoised:
    """Memoised k-ary randomized response (RAPPOR's two stages with k-ary randomized
    response in place of Bloom-filter bits): a permanent k-RR at ``eps_permanent`` per value,
    then an instantaneous k-RR at ``eps_instantaneous`` per report. One report is k-RR with
    the product keep probability; ``epsilon_longitudinal() = eps_permanent``."""
    k = v.alphabet_size(k, "k")
    eps_permanent = v.epsilon(eps_permanent, "eps_permanent")
    eps_instantaneous = v.epsilon(eps_instantaneous, "eps_instantaneous")
    return Memoised(RandomizedResponse(k, eps_permanent), RandomizedResponse(k, eps_instantaneous))
