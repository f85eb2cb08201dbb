"""What a respondent risks: how well the server can guess a respondent's answer from one
report, exactly.

A respondent's answer ``X`` follows a prior ``pi`` (the population's law, as the server
knows it); the report ``Y`` follows the mechanism's law ``P(y | x)``. The server's best
guess of ``X`` from ``Y`` is the answer of largest posterior, so

- **accuracy** ``A = sum_y max_x pi_x P(y | x)``: the probability that the Bayes-optimal
  guess is right (no attack does better);
- **baseline** ``max_x pi_x``: the accuracy of guessing without any report;
- **advantage** ``A - baseline`` and **ratio** ``A / baseline``; under eps-LDP
  ``A <= min(1, e^eps baseline)`` (each ``pi_x P(y | x) <= e^eps pi_x P(y)``);
- **expected posterior** of the true answer, ``E[post(X | Y)]``, and the whole law of
  ``post(X | Y)`` (finite mechanisms);
- **worst ratio** ``max_{x, y} post(x | y) / pi_x`` (at most ``e^eps``) beside the
  **average ratio** ``E[post(X | Y) / pi_X]``.

How each is computed (the ``method`` of the result):

- ``enumeration``: a finite mechanism's matrix (``k x m``), every output;
- ``structure``: unary encoding and subset selection, whose report laws factor, give the
  accuracy exactly in ``O(k)`` from the sorted prior (:func:`_unary_accuracy`,
  :func:`_subset_accuracy`); their other quantities by Monte Carlo;
- ``monte carlo``: any other oracle with a ``log_density`` (local hashing, RAPPOR): reports
  drawn from the prior and the mechanism, each one's posterior over the ``k`` answers exact;
  every quantity then carries its standard error (``standard_errors``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid

#: reports drawn when a quantity has no exact form (its standard error is stated)
SAMPLES = 200_000
#: the quantities of an :class:`InferenceRisk`, in the order tables show them
QUANTITIES = (
    "accuracy",
    "baseline",
    "advantage",
    "ratio",
    "expected_posterior",
    "worst_ratio",
    "average_ratio",
)


@dataclass(frozen=True)
class InferenceRisk:
    """The server's Bayes-optimal attribute inference from one report (module docstring)."""

    accuracy: float
    baseline: float
    expected_posterior: float
    worst_ratio: float
    average_ratio: float
    method: str
    #: the law of ``post(X | Y)``: its values and their probabilities (finite mechanisms;
    #: None otherwise)
    posterior_values: NDArray[np.float64] | None = None
    posterior_probabilities: NDArray[np.float64] | None = None
    #: standard errors of the quantities estimated by Monte Carlo (by name; absent: exact)
    standard_errors: dict[str, float] = field(default_factory=dict)

    @property
    def advantage(self) -> float:
        return self.accuracy - self.baseline

    @property
    def ratio(self) -> float:
        return self.accuracy / self.baseline

    def as_dict(self) -> dict[str, Any]:
        return {name: float(getattr(self, name)) for name in QUANTITIES} | {"method": self.method}


def inference_risk(
    mechanism: Any, prior: ArrayLike | None = None, *, samples: int = SAMPLES, rng: Any = None
) -> InferenceRisk:
    """The inference risk of one report of ``mechanism`` when answers follow ``prior``
    (default uniform over the mechanism's ``k`` answers). ``samples`` and ``rng`` serve
    the quantities without an exact form (see the module docstring)."""
    k = int(getattr(mechanism, "k", 0) or 0)
    if k < 1:
        raise invalid("mechanism", repr(mechanism), "a mechanism over k >= 1 answers (a frequency oracle)")
    pi = _prior(prior, k)
    samples = v.integer(samples, "samples", minimum=1)
    matrix = getattr(mechanism, "matrix", None)
    if matrix is not None and getattr(mechanism, "output_size", None) is not None:
        return _enumerate(np.asarray(matrix, dtype=np.float64), pi)
    exact = None
    if hasattr(mechanism, "omega") and hasattr(mechanism, "p_in"):
        exact = _subset_accuracy(mechanism, pi)
    elif hasattr(mechanism, "log_1mq") and hasattr(mechanism, "gap"):
        exact = _unary_accuracy(mechanism, pi)
    risk = _monte_carlo(mechanism, pi, samples, np.random.default_rng(rng))
    if exact is None:
        return risk
    errors = {k_: e for k_, e in risk.standard_errors.items() if k_ not in ("accuracy", "advantage", "ratio")}
    return InferenceRisk(
        exact,
        risk.baseline,
        risk.expected_posterior,
        risk.worst_ratio,
        risk.average_ratio,
        "structure (accuracy), monte carlo (the rest)",
        standard_errors=errors,
    )


def _prior(prior: ArrayLike | None, k: int) -> NDArray[np.float64]:
    if prior is None:
        return np.full(k, 1.0 / k)
    pi = v.finite_array(prior, "prior", "probabilities")
    if pi.shape != (k,):
        raise invalid("prior", f"{pi.size} values", f"{k} probabilities, one per answer of the mechanism")
    if np.any(pi < 0):
        raise invalid("prior", f"a negative value {float(pi.min()):g}", "probabilities >= 0")
    if not abs(float(pi.sum()) - 1.0) <= 1e-9:
        raise invalid("prior", f"values summing to {float(pi.sum()):.6g}", "probabilities summing to 1")
    return pi / pi.sum()


def _enumerate(q: NDArray[np.float64], pi: NDArray[np.float64]) -> InferenceRisk:
    """Every output of a finite mechanism: the joint law ``pi_x Q[x, y]`` and its posterior."""
    joint = pi[:, None] * q
    py = joint.sum(axis=0)
    seen = py > 0
    joint, py = joint[:, seen], py[seen]
    post = joint / py
    accuracy = float(joint.max(axis=0).sum())
    mass = joint > 0
    ratio = np.where(mass, post / np.where(pi > 0, pi, 1.0)[:, None], 0.0)
    values, inverse = np.unique(np.round(post[mass], 15), return_inverse=True)
    probabilities = np.asarray(np.bincount(inverse, weights=joint[mass], minlength=values.size), dtype=np.float64)
    return InferenceRisk(
        accuracy,
        float(pi.max()),
        float((joint * post).sum()),
        float(ratio.max()),
        float((joint * ratio).sum()),
        "enumeration",
        values,
        probabilities,
    )


def _unary_accuracy(mech: Any, pi: NDArray[np.float64]) -> float:
    """Unary encoding: the report's bits are independent given ``x``, 1 with probability
    ``p`` for ``x``'s bit and ``q`` for the others, so ``pi_x P(y | x) = base(y) pi_x
    (a if y_x = 1 else b)`` with ``base`` the law of bits all drawn at ``q``, ``a = p/q`` and
    ``b = (1 - p)/(1 - q)`` (``a > 1 > b``). With ``pi`` sorted decreasingly and ``S`` the
    set bits: if the top answer's bit is set (probability ``q`` under ``base``) the best is
    ``a pi_(1)``; otherwise, ``i`` the first set bit in the sorted order (probability ``(1 -
    q)^(i - 1) q``), the best is ``max(a pi_(i), b pi_(1))``; and ``b pi_(1)`` when no bit is
    set (``(1 - q)^k``)."""
    p, q = float(mech.p), float(mech.q)
    s = np.sort(pi)[::-1]
    k = s.size
    a, b = p / q, math.exp(mech.log_1mp - mech.log_1mq)
    i = np.arange(2, k + 1)
    weights = np.exp((i - 1) * mech.log_1mq) * q
    total = p * s[0] + float(weights @ np.maximum(a * s[1:], b * s[0]))
    return float(total + math.exp(k * mech.log_1mq) * b * s[0])


def _subset_accuracy(mech: Any, pi: NDArray[np.float64]) -> float:
    """Subset selection: ``P(Y | x) = e^eps / Z`` if ``x`` is in ``Y`` (``omega`` answers),
    ``1 / Z`` otherwise. With ``pi`` sorted decreasingly: the ``C(k - 1, omega - 1)`` subsets
    holding the top answer give ``e^eps pi_(1)``; those whose first member in the sorted
    order is ``i >= 2`` (``C(k - i, omega - 1)`` of them) give ``max(e^eps pi_(i), pi_(1))``."""
    k, omega, eps = int(mech.k), int(mech.omega), float(mech.eps)
    s = np.sort(pi)[::-1]
    log_z = np.logaddexp(_log_comb(k - 1, omega - 1) + eps, _log_comb(k - 1, omega))
    total = math.exp(_log_comb(k - 1, omega - 1) + eps - log_z) * s[0]
    i = np.arange(2, k - omega + 2)  # the first member can be at most k - omega + 1
    logs = np.array([_log_comb(k - int(j), omega - 1) for j in i]) - log_z
    best = np.maximum(math.exp(eps) * s[i - 1], s[0])
    return float(total + np.exp(logs) @ best)


def _log_comb(n: int, r: int) -> float:
    if r < 0 or r > n:
        return -math.inf
    return math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)


def _monte_carlo(mech: Any, pi: NDArray[np.float64], samples: int, gen: np.random.Generator) -> InferenceRisk:
    """Reports drawn from the prior and the mechanism; each one's posterior over the ``k``
    answers from ``log_density`` (exact); means with their standard errors."""
    k = pi.size
    x = gen.choice(k, size=samples, p=pi)
    y = mech.privatize(x, gen)
    labels = list(getattr(mech, "input_labels", None) or range(k))
    logs = np.stack([np.asarray(mech.log_density(labels[j], y), dtype=np.float64) for j in range(k)], axis=1)
    with np.errstate(divide="ignore"):
        logs = logs + np.log(pi)[None, :]
    logs -= logs.max(axis=1, keepdims=True)
    post = np.exp(logs)
    post /= post.sum(axis=1, keepdims=True)
    own = post[np.arange(samples), x]
    best = post.max(axis=1)
    ratio = own / pi[x]
    positive = pi > 0
    worst = float((post[:, positive] / pi[positive]).max())

    def mean_se(values: NDArray[np.float64]) -> tuple[float, float]:
        return float(values.mean()), float(values.std(ddof=1) / math.sqrt(samples)) if samples > 1 else math.nan

    accuracy, se_a = mean_se(best)
    expected, se_e = mean_se(own)
    average, se_r = mean_se(ratio)
    return InferenceRisk(
        accuracy,
        float(pi.max()),
        expected,
        worst,
        average,
        "monte carlo",
        standard_errors={
            "accuracy": se_a,
            "advantage": se_a,
            "ratio": se_a / float(pi.max()),
            "expected_posterior": se_e,
            "average_ratio": se_r,
            "worst_ratio": math.nan,  # the largest ratio seen among the samples: a lower bound
        },
    )


@dataclass(frozen=True)
class ProfileRisk:
    """The server's best guess of a respondent's whole profile of answers from their
    reports to every question: accuracy and the baseline (the most common profile)."""

    accuracy: float
    baseline: float
    method: str
    standard_error: float = 0.0

    @property
    def advantage(self) -> float:
        return self.accuracy - self.baseline


#: output combinations enumerated exactly (above: Monte Carlo)
MAX_ENUMERATED = 200_000


def profile_risk(
    mechanisms: list[Any],
    profiles: ArrayLike,
    weights: ArrayLike,
    *,
    samples: int = SAMPLES,
    rng: Any = None,
) -> ProfileRisk:
    """Guessing a respondent's whole profile (one answer per question, ``profiles`` rows of
    answer codes with probabilities ``weights``, e.g. a table's distinct rows) from one
    report per question, each question privatised independently by its finite mechanism:
    ``A = sum_{y_1..y_Q} max_profile w(profile) prod_j Q_j[x_j, y_j]``. Exact by enumerating
    every combination of outputs when there are at most :data:`MAX_ENUMERATED`; otherwise
    Monte Carlo over respondents and their reports, each one's posterior over the profiles
    exact (with the standard error)."""
    x = np.asarray(profiles, dtype=np.int64)
    w = v.finite_array(weights, "weights", "probabilities")
    if x.ndim != 2 or x.shape[1] != len(mechanisms) or w.shape != (x.shape[0],):
        raise invalid(
            "profiles", f"shape {x.shape} with {w.size} weights", "one row per profile, one column per mechanism"
        )
    if np.any(w < 0) or not abs(float(w.sum()) - 1.0) <= 1e-9:
        raise invalid("weights", f"values summing to {float(w.sum()):.6g}", "probabilities summing to 1")
    mats = []
    for j, mech in enumerate(mechanisms):
        matrix = getattr(mech, "matrix", None)
        if matrix is None or getattr(mech, "output_size", None) is None:
            raise invalid(f"mechanisms[{j}]", repr(mech), "a finite mechanism (its matrix)")
        mats.append(np.asarray(matrix, dtype=np.float64))
        if x[:, j].min() < 0 or x[:, j].max() >= mats[-1].shape[0]:
            raise invalid("profiles", f"column {j} with codes outside 0..{mats[-1].shape[0] - 1}", "answer codes")
    baseline = float(w.max())
    sizes = [m.shape[1] for m in mats]
    if math.prod(sizes) <= MAX_ENUMERATED:
        # joint[profile, outputs...] built one question at a time; max over profiles at the end
        joint = w[:, None]
        for j, m in enumerate(mats):
            joint = (joint[:, :, None] * m[x[:, j]][:, None, :]).reshape(x.shape[0], -1)
        return ProfileRisk(float(joint.max(axis=0).sum()), baseline, "enumeration")
    gen = np.random.default_rng(rng)
    samples = v.integer(samples, "samples", minimum=2)
    best = np.empty(samples)
    chunk = max(1, 2_000_000 // max(1, x.shape[0]))
    with np.errstate(divide="ignore"):
        logw = np.log(w)
        logs = [np.log(m) for m in mats]
    for start in range(0, samples, chunk):
        size = min(chunk, samples - start)
        who = gen.choice(x.shape[0], size=size, p=w)
        ll = np.broadcast_to(logw, (size, x.shape[0])).copy()
        for j, m in enumerate(mats):
            cdf = np.cumsum(m[x[who, j]], axis=1)
            y = (cdf < gen.random((size, 1)) * cdf[:, -1:]).sum(axis=1)
            ll += logs[j][x[:, j]][:, y].T
        ll -= ll.max(axis=1, keepdims=True)
        post = np.exp(ll)
        best[start : start + size] = post.max(axis=1) / post.sum(axis=1)
    return ProfileRisk(float(best.mean()), baseline, "monte carlo", float(best.std(ddof=1) / math.sqrt(samples)))


@dataclass(frozen=True)
class ReidentificationRisk:
    """Picking a respondent out of a known population table from their reports: the
    probability that the best matching rule picks the right one (``accuracy``), beside
    picking at random (``baseline``, 1/n) and matching the true answers themselves
    (``exposed``: the number of distinct profiles over n), and the share of respondents whose
    profile is unique in the table."""

    accuracy: float
    baseline: float
    exposed: float
    unique: float
    respondents: int
    profiles: int
    method: str
    standard_error: float = 0.0


def reidentification_risk(
    mechanisms: list[Any], rows: ArrayLike, *, samples: int = SAMPLES, rng: Any = None
) -> ReidentificationRisk:
    """Re-identification from one report per question: the attacker knows the table
    ``rows`` (one row of answer codes per respondent, one column per mechanism) and, given a
    respondent's reports ``Y``, picks a respondent of largest likelihood ``P(Y | row)``
    (uniformly among ties). Respondents with the same profile cannot be told apart, so the
    pick is right with probability

        R = (1/n) sum_Y max_profile P(Y | profile),

    the profile accuracy under equal weights on the distinct profiles times their number
    over n (:func:`profile_risk`: exact by enumeration for few outputs, else Monte Carlo with
    its standard error)."""
    x = np.asarray(rows, dtype=np.int64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise invalid("rows", f"an array of shape {x.shape}", "one row of answer codes per respondent")
    n = x.shape[0]
    profiles, counts = np.unique(x, axis=0, return_counts=True)
    d = profiles.shape[0]
    whole = profile_risk(mechanisms, profiles, np.full(d, 1.0 / d), samples=samples, rng=rng)
    return ReidentificationRisk(
        accuracy=whole.accuracy * d / n,
        baseline=1.0 / n,
        exposed=d / n,
        unique=float(counts[counts == 1].sum()) / n,
        respondents=n,
        profiles=d,
        method=whole.method,
        standard_error=whole.standard_error * d / n,
    )


def report_accuracy(
    mechanism: Any, prior: ArrayLike, *, samples: int = 20_000, rng: Any = None
) -> tuple[float, str, float]:
    """The accuracy of the best guess from one report alone, as cheaply as it is known:
    ``(accuracy, method, standard error)``. Randomized response in ``O(k)`` (an output
    ``y`` is guessed as ``y`` or as the most common answer: ``sum_y max(pi_y p, pi_max q)``),
    unary encoding and subset selection from their structure, any other finite mechanism by
    enumeration up to 10^7 matrix entries, other oracles by Monte Carlo up to
    :data:`MC_MAX_K` answers; ``(nan, "not computed here", 0)`` beyond."""
    k = int(getattr(mechanism, "k", 0) or 0)
    pi = _prior(prior, k)
    if hasattr(mechanism, "p_keep") and hasattr(mechanism, "p_other"):
        top = float(pi.max())
        acc = float(np.maximum(pi * mechanism.p_keep, top * mechanism.p_other).sum())
        return acc, "closed form", 0.0
    if hasattr(mechanism, "omega") and hasattr(mechanism, "p_in"):
        return _subset_accuracy(mechanism, pi), "structure", 0.0
    if hasattr(mechanism, "log_1mq") and hasattr(mechanism, "gap"):
        return _unary_accuracy(mechanism, pi), "structure", 0.0
    if hasattr(mechanism, "prime") and hasattr(mechanism, "g"):
        return _hashing_accuracy(mechanism, pi, samples, np.random.default_rng(rng))
    finite = getattr(mechanism, "output_size", None) is not None and hasattr(mechanism, "matrix")
    if finite and k * int(mechanism.output_size) <= 10**7:
        q = np.asarray(mechanism.matrix, dtype=np.float64)
        return float((pi[:, None] * q).max(axis=0).sum()), "enumeration", 0.0
    if not finite and k <= MC_MAX_K:
        r = inference_risk(mechanism, pi, samples=samples, rng=rng)
        return r.accuracy, r.method, float(r.standard_errors.get("accuracy", 0.0))
    return math.nan, "not computed here", 0.0


def _hashing_accuracy(
    mech: Any, pi: NDArray[np.float64], samples: int, gen: np.random.Generator
) -> tuple[float, str, float]:
    """Local hashing: given the seed, the report's value ``y`` is guessed as the most likely
    answer among those hashed to ``y`` (weight ``p pi_x``) or, when that is smaller, the most
    common answer (weight ``q pi_max``), so ``A = E_seed sum_y max(p m_y, q pi_max)`` with
    ``m_y`` the largest prior among the answers in bucket ``y``: exact given the seed, the
    seed drawn (Monte Carlo over seeds only; at most 2 * 10^7 hash evaluations)."""
    k, g = mech.k, mech.g
    draws = int(max(2, min(samples, 2 * 10**7 // max(k, 1))))
    top = float(pi.max())
    values = np.empty(draws)
    x = np.arange(k, dtype=np.int64)
    chunk = max(1, 2_000_000 // k)
    for start in range(0, draws, chunk):
        m = min(chunk, draws - start)
        seeds = gen.integers(0, mech.prime, size=(m, 3), dtype=np.int64)
        h = mech._hash(seeds[:, :1], seeds[:, 1:2], seeds[:, 2:3], np.broadcast_to(x, (m, k)).copy())
        best = np.zeros((m, g))
        np.maximum.at(best, (np.repeat(np.arange(m), k), h.ravel()), np.broadcast_to(pi, (m, k)).ravel())
        values[start : start + m] = np.maximum(mech.p * best, mech.q * top).sum(axis=1)
    return (
        float(values.mean()),
        "structure given the seed, monte carlo over seeds",
        float(values.std(ddof=1) / math.sqrt(draws)),
    )


#: report-count vectors enumerated per number of reports in :func:`repeated_risk` (above: Monte Carlo)
MAX_TYPES = 2_000_000


def _compositions(r: int, m: int) -> NDArray[np.int64]:
    """Every vector of ``m`` non-negative counts summing to ``r`` (stars and bars: the
    positions of ``m - 1`` bars among ``r + m - 1`` places)."""
    if m == 1:
        return np.array([[r]], dtype=np.int64)
    bars = np.fromiter((b for combo in combinations(range(r + m - 1), m - 1) for b in combo), dtype=np.int64).reshape(
        -1, m - 1
    )
    edges = np.column_stack([np.full(bars.shape[0], -1), bars, np.full(bars.shape[0], r + m - 1)])
    return np.diff(edges, axis=1) - 1


@dataclass(frozen=True)
class RepeatedRisk:
    """The accuracy of guessing an unchanged answer from ``r`` reports of it, for each ``r``
    of ``reports`` (0 gives the baseline), how each was computed and its standard error (0
    where exact)."""

    reports: tuple[int, ...]
    accuracy: NDArray[np.float64]
    method: tuple[str, ...]
    standard_error: NDArray[np.float64]


def repeated_risk(
    mechanism: Any,
    prior: ArrayLike,
    reports: Any,
    *,
    permanent: Any = None,
    samples: int = SAMPLES,
    rng: Any = None,
) -> RepeatedRisk:
    """A respondent whose answer never changes sends ``r`` reports of it (``reports``: one
    number R for ``r = 0..R``, or a list of numbers), each through the
    finite ``mechanism`` (or, with ``permanent``, memoised: one permanent response ``z`` drawn
    once from ``permanent``, every report ``mechanism`` applied to ``z``). The report counts
    are sufficient, so the server's best guess is right with probability

        A(r) = sum_c max_x pi_x P(c | x),  P(c | x) = Mult(c; r, Q[x])  (or sum_z M1[x, z] Mult(c; r, Q[z])),

    exact by enumerating the count vectors ``c`` (at most :data:`MAX_TYPES` per ``r``), else
    Monte Carlo with the exact posterior per draw. Memoisation caps ``A(r)`` at the accuracy
    of seeing ``z`` itself; without it, ``A(r)`` tends to 1 for an invertible mechanism."""
    from scipy.special import gammaln, logsumexp

    q = np.asarray(mechanism.matrix, dtype=np.float64)
    m1 = None if permanent is None else np.asarray(permanent.matrix, dtype=np.float64)
    k_in = q.shape[0] if m1 is None else m1.shape[0]
    pi = _prior(prior, k_in)
    if np.ndim(reports) == 0:
        counts = list(range(v.integer(reports, "reports", minimum=0) + 1))
    else:
        counts = [v.integer(r, "reports", minimum=0) for r in reports]
    gen = np.random.default_rng(rng)
    with np.errstate(divide="ignore"):
        logq = np.log(q)
        logpi = np.log(pi)
    m = q.shape[1]

    def loglik(c: NDArray[np.int64]) -> NDArray[np.float64]:
        """log P(c | x) for count vectors ``c`` (rows): ``(len(c), k)``."""
        coef = gammaln(c.sum(axis=1) + 1.0) - gammaln(c + 1.0).sum(axis=1)
        with np.errstate(invalid="ignore"):
            per = np.where(c[:, None, :] > 0, c[:, None, :] * logq[None, :, :], 0.0).sum(axis=2)  # (n, rows of q)
        if m1 is not None:  # mix over the permanent response: sum_z M1[x, z] P(c | z), scaled per row
            top = per.max(axis=1, keepdims=True)
            with np.errstate(divide="ignore"):
                per = np.log(np.exp(per - top) @ m1.T) + top
        return coef[:, None] + per

    acc = np.zeros(len(counts))
    se = np.zeros(len(counts))
    methods = []
    for i, r in enumerate(counts):
        if math.comb(r + m - 1, m - 1) <= MAX_TYPES:
            c = _compositions(r, m)
            joint = loglik(c) + logpi[None, :]
            acc[i] = float(np.exp(joint.max(axis=1)).sum())
            methods.append("enumeration")
            continue
        x = gen.choice(k_in, size=samples, p=pi)
        z = x if m1 is None else (np.cumsum(m1[x], axis=1) < gen.random((samples, 1))).sum(axis=1)
        c = np.array([gen.multinomial(r, q[zi]) for zi in z])
        joint = loglik(c) + logpi[None, :]
        post = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        best = post.max(axis=1)
        acc[i], se[i] = float(best.mean()), float(best.std(ddof=1) / math.sqrt(samples))
        methods.append("monte carlo")
    return RepeatedRisk(tuple(counts), acc, tuple(methods), se)


@dataclass(frozen=True)
class ChangingRisk:
    """Per period: the accuracy of the server's best guess of the respondent's current
    answer from all its reports so far, its standard error (Monte Carlo), and the baseline
    (the most likely answer of that period without any report).

    ``method`` says how: ``"forward filter"`` (the exact posterior per respondent, averaged
    over simulated respondents) or, for memoised reports whose hidden state is too large to
    filter, ``"bounds"``: ``accuracy`` is then ``nan`` and the accuracy lies between
    ``lower`` and ``upper`` (each with its standard error), the accuracies of two rules the
    server could use, one with less information than it has and one with more. Where the
    accuracy is computed, ``lower`` and ``upper`` are the accuracy itself."""

    accuracy: NDArray[np.float64]
    standard_error: NDArray[np.float64]
    baseline: NDArray[np.float64]
    method: str = "forward filter"
    lower: NDArray[np.float64] | None = None
    upper: NDArray[np.float64] | None = None
    lower_se: NDArray[np.float64] | None = None
    upper_se: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        for name, same in (
            ("lower", "accuracy"),
            ("upper", "accuracy"),
            ("lower_se", "standard_error"),
            ("upper_se", "standard_error"),
        ):
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(self, same))


#: memoised reports of changing answers are filtered exactly while ``k s^k`` (the current
#: answer and the memo of every answer) is at most this; bounds beyond it
MEMO_STATES = 4096
#: filter entries (respondents x states) held at once
_FILTER_ENTRIES = 1 << 21


def _draw_rows(cum: NDArray[np.float64], rows: NDArray[np.int64], gen: np.random.Generator) -> NDArray[np.int64]:
    """One draw from each of the laws ``cum[rows]`` (cumulative rows of a stochastic matrix)."""
    c = cum[rows]
    return (c < gen.random(rows.shape + (1,)) * c[..., -1:]).sum(axis=-1).clip(max=cum.shape[1] - 1)


def changing_risk(
    mechanism: Any,
    start: ArrayLike,
    steps: Sequence[ArrayLike],
    reported: ArrayLike | None = None,
    *,
    permanent: Any = None,
    samples: int = 20_000,
    rng: Any = None,
) -> ChangingRisk:
    """A respondent whose answer changes: ``x_1 ~ start``, ``x_{t+1} ~ steps[t][x_t]``; in the
    periods where ``reported`` (default: all) it sends a report of its current answer through
    the finite ``mechanism``. The server knows the dynamics; its posterior of the current
    answer given every report so far is the forward filter of the hidden Markov chain, exact
    for each respondent, and the accuracy of its best guess ``E[max_x P(x_t | y_1..t)]`` is
    estimated over ``samples`` simulated respondents (standard error stated). With no change
    (identity steps) it is :func:`repeated_risk`'s accuracy, which is exact.

    With ``permanent``, the reports are memoised (RAPPOR): the first report of each answer
    ``v`` draws its memo ``S_v ~ permanent(. | v)``, kept for good, and every report of ``v``
    is ``mechanism`` applied to ``S_v``, so an answer the respondent returns to reuses its
    memo. The memos are independent of the path, so drawing all ``k`` of them at the start
    changes nothing, and the hidden state is the current answer with the ``k`` memos:
    ``k s^k`` states (``s`` memo symbols). Up to :data:`MEMO_STATES` of them the filter is run
    exactly on that state. Beyond, the result brackets the accuracy (``method = "bounds"``):
    from above by a server that also sees the memos (its filter has ``k`` states, the report
    law of answer ``x`` being ``mechanism(. | S_x)``), from below by the best of guessing the
    period's most likely answer and a server that treats the reports as unmemoised reports
    through the chain ``permanent`` then ``mechanism``."""
    q = np.asarray(mechanism.matrix, dtype=np.float64)
    m1 = None if permanent is None else np.asarray(permanent.matrix, dtype=np.float64)
    k = q.shape[0] if m1 is None else m1.shape[0]
    if m1 is not None and m1.shape[1] != q.shape[0]:
        raise invalid("permanent", f"{m1.shape[1]} outputs", f"as many as the mechanism's inputs ({q.shape[0]})")
    pi = _prior(start, k)
    mats = [np.asarray(m, dtype=np.float64) for m in steps]
    if any(m.shape != (k, k) for m in mats):
        raise invalid("steps", f"{len(mats)} matrices", f"k x k transition matrices (k = {k})")
    periods = len(mats) + 1
    rep = np.ones(periods, dtype=bool) if reported is None else np.asarray(reported, dtype=bool)
    if rep.shape != (periods,):
        raise invalid("reported", f"shape {rep.shape}", f"one flag per period ({periods})")
    samples = v.integer(samples, "samples", minimum=2)
    gen = np.random.default_rng(rng)
    # the respondents: answers over time and, memoised, every answer's memo
    cum_steps = [np.cumsum(m, axis=1) for m in mats]
    x = np.empty((periods, samples), dtype=np.int64)
    x[0] = (np.cumsum(pi)[None, :] < gen.random((samples, 1))).sum(axis=1).clip(max=k - 1)
    for t in range(1, periods):
        x[t] = _draw_rows(cum_steps[t - 1], x[t - 1], gen)
    memo = None if m1 is None else _draw_rows(np.cumsum(m1, axis=1), np.broadcast_to(np.arange(k), (samples, k)), gen)
    sent = x if memo is None else np.take_along_axis(memo, x.T, axis=1).T  # what each report randomises
    y = _draw_rows(np.cumsum(q, axis=1), sent, gen)
    base = np.empty(periods)
    law = pi.copy()
    for t in range(periods):
        law = law if t == 0 else law @ mats[t - 1]
        base[t] = float(law.max())

    def summary(values: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return values.mean(axis=1), values.std(axis=1, ddof=1) / math.sqrt(samples)

    if m1 is None:
        best = _filter(pi, mats, rep, lambda t: q[:, y[t]].T, samples)[0]
        acc, se = summary(best)
        return ChangingRisk(acc, se, base)
    s = m1.shape[1]
    if k * s**k <= MEMO_STATES:
        acc, se = summary(_memo_filter(pi, mats, rep, m1, q, y))
        return ChangingRisk(acc, se, base)
    upper, _ = _filter(pi, mats, rep, lambda t: q[memo, y[t][:, None]], samples)
    chain = m1 @ q
    _, guess = _filter(pi, mats, rep, lambda t: chain[:, y[t]].T, samples)
    right = (guess == x).astype(np.float64)
    lo, lo_se = summary(right)
    better = base > lo  # the period's mode beats the misread filter: its accuracy is exact
    lo, lo_se = np.where(better, base, lo), np.where(better, 0.0, lo_se)
    hi, hi_se = summary(upper)
    nan = np.full(periods, np.nan)
    return ChangingRisk(nan, nan, base, "bounds", lo, hi, lo_se, hi_se)


def _filter(
    pi: NDArray[np.float64], mats: list[NDArray[np.float64]], rep: NDArray[np.bool_], emission: Any, samples: int
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The forward filter over the ``k`` answers for every simulated respondent, the report
    of period ``t`` weighing answer ``x`` by ``emission(t)[:, x]`` (respondents x answers):
    per period, the largest posterior and its answer (periods x respondents)."""
    alpha = np.broadcast_to(pi, (samples, pi.size)).copy()
    best = np.empty((len(rep), samples))
    guess = np.empty((len(rep), samples), dtype=np.int64)
    for t in range(len(rep)):
        if t > 0:
            alpha = alpha @ mats[t - 1]
        if rep[t]:
            alpha = alpha * emission(t)
        alpha /= alpha.sum(axis=1, keepdims=True)
        best[t], guess[t] = alpha.max(axis=1), alpha.argmax(axis=1)
    return best, guess


def _memo_filter(
    pi: NDArray[np.float64],
    mats: list[NDArray[np.float64]],
    rep: NDArray[np.bool_],
    m1: NDArray[np.float64],
    q: NDArray[np.float64],
    y: NDArray[np.int64],
) -> NDArray[np.float64]:
    """The exact filter over (current answer, every answer's memo) for memoised reports: the
    largest posterior of the current answer, periods x respondents (in blocks of respondents)."""
    k, s = m1.shape
    configs = np.array(list(np.ndindex(*(s,) * k)), dtype=np.int64).reshape(-1, k)  # (s^k, k)
    weight = m1[np.arange(k)[None, :], configs].prod(axis=1)  # P(memos)
    emit = q[configs.T]  # (k, s^k, outputs): the report law of answer x under each memo set
    periods, samples = y.shape
    best = np.empty((periods, samples))
    block = max(1, _FILTER_ENTRIES // (k * configs.shape[0]))
    for lo in range(0, samples, block):
        hi = min(samples, lo + block)
        alpha = np.broadcast_to(pi[:, None] * weight[None, :], (hi - lo, k, configs.shape[0])).copy()
        for t in range(periods):
            if t > 0:
                alpha = np.einsum("nxc,xz->nzc", alpha, mats[t - 1])
            if rep[t]:
                alpha *= np.moveaxis(emit[:, :, y[t, lo:hi]], 2, 0)
            alpha /= alpha.sum(axis=(1, 2), keepdims=True)
            best[t, lo:hi] = alpha.sum(axis=2).max(axis=1)
    return best


#: the largest k a report's risk table estimates by Monte Carlo (k log-densities per draw)
MC_MAX_K = 64
#: reports drawn per mechanism for a report's risk table
REPORT_SAMPLES = 20_000


def risk_table(items: list[tuple[str, Any, ArrayLike]], seed: int = 0) -> list[dict[str, Any]]:
    """One row per ``(name, mechanism, prior)``: accuracy, baseline, advantage, the worst
    posterior-to-prior ratio beside ``e^eps``, and how they were computed; a mechanism too
    large for its method here (a finite one with more than 10^7 matrix entries, or one
    needing Monte Carlo with more than :data:`MC_MAX_K` answers) gets a row saying so."""
    rows = []
    for i, (name, mech, prior) in enumerate(items):
        k = int(getattr(mech, "k", 0) or 0)
        finite = getattr(mech, "output_size", None) is not None and hasattr(mech, "matrix")
        eps = float(mech.epsilon(0.0)) if callable(getattr(mech, "epsilon", None)) else math.nan
        row: dict[str, Any] = {"question": name, "answers": k, "exp_eps": math.exp(eps) if eps < 700 else math.inf}
        if (finite and k * int(mech.output_size) > 10**7) or (not finite and k > MC_MAX_K):
            rows.append(row | {"method": f"not computed here ({k} answers)"})
            continue
        r = inference_risk(mech, prior, samples=REPORT_SAMPLES, rng=np.random.SeedSequence(seed, spawn_key=(i,)))
        rows.append(
            row
            | {
                "accuracy": r.accuracy,
                "baseline": r.baseline,
                "advantage": r.advantage,
                "worst_ratio": r.worst_ratio,
                "method": r.method,
            }
        )
    return rows
