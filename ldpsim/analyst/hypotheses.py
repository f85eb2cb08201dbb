"""Tests on privatised reports: goodness of fit, uniformity, homogeneity, m-ary hypotheses
and a composite null, each with a level that is exact or calibrated, never a chi-square
approximation taken on faith.

Every test takes a frequency oracle and the server's statistic (for a finite mechanism, the
counts of each output; for an oracle, its additive statistic, :meth:`statistic`) and treats
the respondents' answers as independent draws from a law ``pi`` over the ``k`` answers.

- :func:`goodness_of_fit` (``H0: pi = reference``) and :func:`uniformity` (the uniform
  reference). The null is simple, so the law of the statistic under it is known exactly: the
  output counts of a finite mechanism are ``Multinomial(n, reference Q)``, an oracle's
  statistic is drawn exactly from answer counts ``Multinomial(n, reference)`` through
  :meth:`sample_statistic`. The test statistic is the standardised distance
  ``T = sum_v (f_v - pi0_v)^2 / Var0(f_v)`` of the unbiased estimate ``f`` from the
  reference, ``Var0`` its exact variance under the null. Its p-value is exact by enumerating
  the output counts when there are at most :data:`ENUMERATE` of them, and otherwise the Monte
  Carlo p-value ``(1 + #{T_b >= T}) / (1 + B)`` over ``B`` draws from the exact null law,
  which is itself a valid p-value: ``P(p <= a) <= a`` for every ``a`` and every ``B``
  (Barnard 1963), so the level holds exactly; ``B`` only costs power.
- :func:`homogeneity`: do ``g`` groups share one law (an A/B test for ``g = 2``)? For a finite
  mechanism, given the pooled output counts, the groups' counts are multivariate
  hypergeometric under the null whatever the common law, so the conditional test (Pearson's
  statistic on the ``g x m`` table of output counts, calibrated on tables drawn with the same
  margins) is exact at every n. For other oracles the common law is estimated (the pooled
  estimate projected on the simplex) and the statistic calibrated by drawing every group's
  statistic exactly from it: a parametric bootstrap, whose level is checked by simulation
  (``tests/analyst/test_hypotheses.py``), not promised.
- :func:`mary_test`: which of ``m`` simple hypotheses ``pi_1 .. pi_m`` holds. The Bayes rule
  for prior weights ``w`` picks ``argmax_j log w_j + log L_j``; the minimax rule is the Bayes
  rule for the least favourable weights, found by raising the weight of the hypothesis with
  the largest error until the errors balance. ``L_j`` is the exact multinomial likelihood of
  the output counts for a finite mechanism, and a normal likelihood with the statistic's exact
  mean and covariance for an oracle (the rule is then an approximation of the Bayes rule;
  its error probabilities are still measured on the exact law). The error matrix
  ``P(decide i | H_j)`` is exact by enumeration for small n, Monte Carlo otherwise.
- :func:`share_test`: a composite null on one answer's share, ``H0: pi_v <= theta`` against
  ``pi_v > theta`` (an effect of at least ``theta``). The statistic is the standardised
  excess ``(f_v - theta) / se``; it is calibrated by drawing from the null law closest to the
  data on the boundary ``pi_v = theta`` (the other shares in the proportions estimated), a
  parametric bootstrap at the least favourable point, checked by simulation.

Each result says how its p-value was obtained (``method``) and how many draws it used.

**Sequential versions** (finite mechanisms): :func:`sequential_goodness_of_fit`,
:func:`sequential_uniformity` and :func:`sequential_homogeneity` give e-values from the
counts so far, the Krichevsky-Trofimov mixture likelihood of the reports against the null's
(largest) likelihood. Rejecting when the e-value reaches ``1 / alpha`` keeps the level at
every look however often the analyst looks, where repeating a fixed-n test at every look
does not. :func:`mean_difference_test` compares two groups' numeric means (Welch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ldpsim import _validate as v
from ldpsim._rng import as_generator
from ldpsim.analyst.estimation import project_to_simplex
from ldpsim.analyst.testing import _compositions, chernoff_information, n_compositions
from ldpsim.errors import invalid

__all__ = [
    "ENUMERATE",
    "MaryResult",
    "SequentialResult",
    "TestResult",
    "affine_estimate",
    "fit_power",
    "goodness_of_fit",
    "homogeneity",
    "mary_exponent",
    "mary_test",
    "mean_difference_test",
    "sequential_goodness_of_fit",
    "sequential_homogeneity",
    "sequential_independence_of_pairs",
    "sequential_share_test",
    "sequential_uniformity",
    "share_exponent",
    "share_power",
    "share_test",
    "two_sample_exponent",
    "uniformity",
]

#: the exact law of the output counts is enumerated while it has at most this many points
ENUMERATE = 200_000
#: calibration draws by default (a Monte Carlo p-value is valid at any number of draws)
DRAWS = 4_999
#: two statistics within this relative distance are one (rounding, not evidence)
_TIE = 1e-9


@dataclass(frozen=True)
class TestResult:
    """One test on privatised reports: its statistic, p-value, the level ``alpha`` and how
    the p-value was obtained (``method``: ``"exact"``, ``"monte carlo"``, ``"conditional"``,
    ``"parametric bootstrap"``) with ``draws`` calibration draws (0 when exact)."""

    __test__ = False  # not a pytest class

    test: str
    statistic: float
    p_value: float
    alpha: float
    method: str
    draws: int

    @property
    def reject(self) -> bool:
        """Whether the null is rejected at ``alpha``."""
        return bool(self.p_value <= self.alpha)

    def as_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "reject": self.reject,
            "method": self.method,
            "draws": self.draws,
        }


# ------------------------------------------------------------------------------ helpers
def _alpha(alpha: Any) -> float:
    a = v.as_float(alpha, "alpha", "a level in (0, 1)")
    if not 0.0 < a < 1.0:
        raise invalid("alpha", alpha, "a level in (0, 1)")
    return a


def _finite(oracle: Any) -> bool:
    """A finite mechanism whose statistic is the counts of its outputs."""
    return getattr(oracle, "output_size", None) is not None and hasattr(oracle, "matrix")


def _statistic(oracle: Any, counts: ArrayLike, name: str = "counts") -> NDArray[np.float64]:
    c = np.asarray(counts, dtype=np.float64)
    size = int(oracle.statistic_size)
    if c.shape != (size,) or not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c != np.round(c)):
        raise invalid(name, f"shape {c.shape}", f"{size} non-negative integer counts (the oracle's statistic)")
    return c


def _size(n: Any, oracle: Any, counts: NDArray[np.float64]) -> int:
    if n is None:
        if not _finite(oracle):
            raise invalid("n", n, "the number of reports (an oracle's statistic does not say it)")
        return int(counts.sum())
    size = v.integer(n, "n", minimum=1)
    if _finite(oracle) and int(counts.sum()) != size:
        raise invalid("n", n, f"the sum of the output counts ({int(counts.sum())})")
    return size


def _draws(draws: Any) -> int:
    return v.integer(draws, "draws", minimum=19)


def _mc_p(observed: float, null: NDArray[np.float64]) -> float:
    """The Monte Carlo p-value ``(1 + #{T_b >= T}) / (1 + B)``, ties within rounding counted."""
    tol = _TIE * max(1.0, abs(observed))
    return float((1 + np.count_nonzero(null >= observed - tol)) / (1 + null.size))


def _null_statistics(
    oracle: Any, law: NDArray[np.float64], n: int, draws: int, gen: np.random.Generator
) -> NDArray[np.float64]:
    """``draws`` statistics (rows) drawn exactly when the answers follow ``law``: the output
    counts' multinomial for a finite mechanism, the oracle's exact aggregate sampler, or
    (an oracle without one, such as local hashing) every report privatised."""
    if _finite(oracle):
        out = np.asarray(oracle.forward(law), dtype=np.float64).clip(0.0)
        return gen.multinomial(n, out / out.sum(), size=draws).astype(np.float64)
    answers = gen.multinomial(n, law, size=draws)
    if oracle.aggregate_exact:
        return oracle.sample_statistics(answers, gen).astype(np.float64)
    symbols = np.arange(law.size)
    return np.stack([oracle.statistic(oracle.privatize(np.repeat(symbols, row), gen)) for row in answers]).astype(
        np.float64
    )


def affine_estimate(oracle: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(A, b)`` with ``invert(s / n) = A (s / n) + b``: every oracle's unbiased estimate is
    affine in its normalised statistic, so it is read off ``s + 1`` inversions once and then
    applied to many statistics at a time."""
    size = int(oracle.statistic_size)
    b = np.asarray(oracle.invert(np.zeros(size)), dtype=np.float64)
    a = np.stack([np.asarray(oracle.invert(e), dtype=np.float64) - b for e in np.eye(size)], axis=1)
    return a, b


def _estimates(oracle: Any, stats: NDArray[np.float64], n: Any) -> NDArray[np.float64]:
    """Unbiased estimates (rows) from statistics (rows) of ``n`` reports each."""
    a, b = affine_estimate(oracle)
    sizes = np.asarray(n, dtype=np.float64).reshape(-1, 1) if np.ndim(n) else float(n)
    return (stats / sizes) @ a.T + b


# ------------------------------------------------------------------------------ goodness of fit
def goodness_of_fit(
    oracle: Any,
    counts: ArrayLike,
    reference: ArrayLike,
    *,
    n: int | None = None,
    alpha: float = 0.05,
    draws: int = DRAWS,
    rng: Any = None,
) -> TestResult:
    """``H0``: the answers follow ``reference`` (module docstring). ``counts`` is the
    server's statistic of ``n`` reports (``n`` may be left out for a finite mechanism)."""
    a = _alpha(alpha)
    c = _statistic(oracle, counts)
    size = _size(n, oracle, c)
    pi0 = v.probability_vector(reference, "reference", size=int(oracle.k))
    var0 = np.asarray(oracle.estimate_variance(pi0, float(size)), dtype=np.float64)
    live = var0 > 0

    def distance(stats: NDArray[np.float64]) -> NDArray[np.float64]:
        f = _estimates(oracle, stats, size)
        return (((f - pi0) ** 2)[:, live] / var0[live]).sum(axis=1)

    observed = float(distance(c[None, :])[0])
    m = int(oracle.statistic_size)
    if _finite(oracle) and n_compositions(size, m) <= ENUMERATE:
        law = np.asarray(oracle.forward(pi0), dtype=np.float64).clip(0.0)
        comps = _compositions(size, m).astype(np.float64)
        with np.errstate(divide="ignore"):
            logp = (
                special.gammaln(size + 1.0)
                - special.gammaln(comps + 1.0).sum(axis=1)
                + special.xlogy(comps, law).sum(axis=1)
            )
        t = distance(comps)
        tol = _TIE * max(1.0, abs(observed))
        p = float(np.exp(logp[t >= observed - tol]).sum())
        return TestResult("goodness of fit", observed, min(1.0, p), a, "exact", 0)
    b = _draws(draws)
    gen = as_generator(rng)
    null = distance(_null_statistics(oracle, pi0, size, b, gen))
    return TestResult("goodness of fit", observed, _mc_p(observed, null), a, "monte carlo", b)


def fit_power(
    oracle: Any,
    reference: ArrayLike,
    truth: ArrayLike,
    n: int,
    alpha: float = 0.05,
    rng: Any = None,
    *,
    draws: int = 999,
    trials: int = 400,
) -> float:
    """The power of :func:`goodness_of_fit` (``draws`` calibration draws) at ``n`` reports
    when the answers follow ``truth``: the share of ``trials`` statistics drawn exactly from
    ``truth`` that the test rejects against one set of null draws (Monte Carlo, standard error
    at most ``0.5 / sqrt(trials)``)."""
    a = _alpha(alpha)
    size = v.integer(n, "n", minimum=1)
    pi0 = v.probability_vector(reference, "reference", size=int(oracle.k))
    pi1 = v.probability_vector(truth, "truth", size=int(oracle.k))
    var0 = np.asarray(oracle.estimate_variance(pi0, float(size)), dtype=np.float64)
    live = var0 > 0
    gen = as_generator(rng)

    def distance(stats: NDArray[np.float64]) -> NDArray[np.float64]:
        f = _estimates(oracle, stats, size)
        return (((f - pi0) ** 2)[:, live] / var0[live]).sum(axis=1)

    null = np.sort(distance(_null_statistics(oracle, pi0, size, _draws(draws), gen)))
    seen = distance(_null_statistics(oracle, pi1, size, v.integer(trials, "trials", minimum=1), gen))
    at_least = null.size - np.searchsorted(null, seen - _TIE * np.maximum(1.0, np.abs(seen)), side="left")
    return float(np.mean((1 + at_least) / (1 + null.size) <= a))


def share_power(oracle: Any, truth: ArrayLike, answer: int, threshold: float, n: int, alpha: float = 0.05) -> float:
    """The power of :func:`share_test` at ``n`` reports when the answers follow ``truth``, by
    the normal approximation: ``1 - Phi((z_(1-alpha) se0 - (pi_v - theta)) / se1)``, ``se0``
    the estimate's exact standard error at the boundary law (the true law with ``pi_v =
    theta``, the others in proportion) and ``se1`` at the true law."""
    a = _alpha(alpha)
    k = int(oracle.k)
    pi1 = v.probability_vector(truth, "truth", size=k)
    j = v.integer(answer, "answer", minimum=0, maximum=k - 1)
    theta = v.as_float(threshold, "threshold", "a share in (0, 1)")
    size = float(v.integer(n, "n", minimum=1))
    rest = np.delete(pi1, j)
    rest = rest / rest.sum() if rest.sum() > 0 else np.full(k - 1, 1.0 / (k - 1))
    boundary = np.insert(rest * (1.0 - theta), j, theta)
    se0 = math.sqrt(float(np.asarray(oracle.estimate_variance(boundary, size))[j]))
    se1 = math.sqrt(float(np.asarray(oracle.estimate_variance(pi1, size))[j]))
    return float(special.ndtr(((pi1[j] - theta) - special.ndtri(1.0 - a) * se0) / se1))


def uniformity(
    oracle: Any, counts: ArrayLike, *, n: int | None = None, alpha: float = 0.05, draws: int = DRAWS, rng: Any = None
) -> TestResult:
    """``H0``: every answer equally likely (:func:`goodness_of_fit` to the uniform law)."""
    k = int(oracle.k)
    out = goodness_of_fit(oracle, counts, np.full(k, 1.0 / k), n=n, alpha=alpha, draws=draws, rng=rng)
    return TestResult("uniformity", out.statistic, out.p_value, out.alpha, out.method, out.draws)


# ------------------------------------------------------------------------------ homogeneity
def homogeneity(
    oracle: Any,
    groups: Sequence[ArrayLike],
    *,
    sizes: Sequence[int] | None = None,
    alpha: float = 0.05,
    draws: int = DRAWS,
    rng: Any = None,
) -> TestResult:
    """``H0``: the ``g >= 2`` groups' answers follow one law (module docstring). ``groups``
    are the groups' statistics; ``sizes`` their numbers of reports (implied for a finite
    mechanism)."""
    a = _alpha(alpha)
    if len(groups) < 2:
        raise invalid("groups", len(groups), "at least two groups' statistics")
    stats = np.stack([_statistic(oracle, g, "groups") for g in groups])
    if sizes is None:
        if not _finite(oracle):
            raise invalid("sizes", sizes, "each group's number of reports (an oracle's statistic does not say it)")
        ns = stats.sum(axis=1).astype(np.int64)
    else:
        ns = np.array([v.integer(s, "sizes", minimum=1) for s in sizes], dtype=np.int64)
        if ns.size != stats.shape[0]:
            raise invalid("sizes", list(sizes), f"one size per group ({stats.shape[0]})")
    if np.any(ns < 1):
        raise invalid("groups", [int(s) for s in ns], "at least one report in every group")
    b = _draws(draws)
    gen = as_generator(rng)
    if _finite(oracle):
        if sizes is not None and not np.array_equal(stats.sum(axis=1), ns):
            raise invalid("sizes", list(sizes), "the groups' sums of output counts")
        observed = float(_pearson(stats[None])[0])
        tables = _hypergeometric_tables(stats.sum(axis=0).astype(np.int64), ns, b, gen)
        return TestResult("homogeneity", observed, _mc_p(observed, _pearson(tables)), a, "conditional", b)
    pooled = np.asarray(oracle.invert(stats.sum(axis=0) / ns.sum()), dtype=np.float64)
    common = project_to_simplex(pooled)

    def spread(group_stats: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rows of (g, s) statistics -> the standardised spread of the groups' estimates."""
        g = group_stats.shape[1]
        est = np.stack([_estimates(oracle, group_stats[:, i], int(ns[i])) for i in range(g)], axis=1)
        pool = _estimates(oracle, group_stats.sum(axis=1), int(ns.sum()))
        law = project_to_simplex(pool.mean(axis=0))
        var = np.stack([np.asarray(oracle.estimate_variance(law, float(m)), dtype=np.float64) for m in ns])
        var = np.where(var > 0, var, np.inf)
        return (((est - pool[:, None, :]) ** 2) / var[None]).sum(axis=(1, 2))

    observed = float(spread(stats[None])[0])
    null = np.stack([_null_statistics(oracle, common, int(m), b, gen) for m in ns], axis=1)
    return TestResult("homogeneity", observed, _mc_p(observed, spread(null)), a, "parametric bootstrap", b)


def _pearson(tables: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pearson's statistic of each ``g x m`` table (first axis: tables), empty cells skipped."""
    rows = tables.sum(axis=2, keepdims=True)
    cols = tables.sum(axis=1, keepdims=True)
    expected = rows * cols / tables.sum(axis=(1, 2), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(expected > 0, (tables - expected) ** 2 / expected, 0.0)
    return terms.sum(axis=(1, 2))


def _hypergeometric_tables(
    pooled: NDArray[np.int64], sizes: NDArray[np.int64], draws: int, gen: np.random.Generator
) -> NDArray[np.float64]:
    """``draws`` tables with the observed margins: the groups' counts when the pooled reports
    are dealt out at random (multivariate hypergeometric, group by group)."""
    out = np.empty((draws, sizes.size, pooled.size))
    left = np.broadcast_to(pooled, (draws, pooled.size)).copy()
    for i, m in enumerate(sizes[:-1]):
        if np.all(left == left[0]):  # the first group: every draw shares what is left
            out[:, i] = gen.multivariate_hypergeometric(left[0], int(m), size=draws)
        else:
            out[:, i] = np.stack([gen.multivariate_hypergeometric(row, int(m)) for row in left])
        left -= out[:, i].astype(np.int64)
    out[:, -1] = left
    return out


# ------------------------------------------------------------------------------ m-ary
@dataclass(frozen=True)
class MaryResult:
    """Which of ``m`` simple hypotheses holds: the ``decision`` (an index), the posterior
    under ``weights``, the rule's error matrix ``errors[i, j] = P(decide i | H_j)`` (exact or
    Monte Carlo, ``method``), each hypothesis's error ``1 - errors[j, j]``, and the rule."""

    decision: int
    posterior: NDArray[np.float64]
    weights: NDArray[np.float64]
    errors: NDArray[np.float64]
    rule: str
    method: str
    draws: int

    @property
    def error(self) -> NDArray[np.float64]:
        """``P(wrong | H_j)`` per hypothesis."""
        return 1.0 - np.diag(self.errors)

    @property
    def bayes_risk(self) -> float:
        """The weighted error ``sum_j w_j P(wrong | H_j)``."""
        return float(self.weights @ self.error)


def _loglik_function(oracle: Any, laws: NDArray[np.float64], n: int) -> Any:
    """``stats (rows) -> (rows, m)`` log-likelihoods under each hypothesis."""
    if _finite(oracle):
        outs = np.stack([np.asarray(oracle.forward(p), dtype=np.float64).clip(0.0) for p in laws])
        return lambda stats: special.xlogy(stats[:, None, :], outs[None, :, :]).sum(axis=2)
    means = np.stack([n * np.asarray(oracle.forward(p), dtype=np.float64) for p in laws])
    covs = [n * np.asarray(oracle.statistic_covariance(p), dtype=np.float64) for p in laws]
    parts = []
    for cov in covs:
        w, vecs = np.linalg.eigh(cov)
        keep = w > 1e-12 * max(1.0, float(w.max()))
        parts.append((vecs[:, keep] / np.sqrt(w[keep]), float(np.log(w[keep]).sum())))

    def loglik(stats: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty((stats.shape[0], len(parts)))
        for j, (whiten, logdet) in enumerate(parts):
            z = (stats - means[j]) @ whiten
            out[:, j] = -0.5 * (z**2).sum(axis=1) - 0.5 * logdet
        return out

    return loglik


def mary_test(
    oracle: Any,
    counts: ArrayLike,
    hypotheses: Sequence[ArrayLike],
    *,
    n: int | None = None,
    weights: ArrayLike | None = None,
    rule: str = "bayes",
    draws: int = 20_000,
    rng: Any = None,
) -> MaryResult:
    """Decide among simple hypotheses (module docstring): ``rule`` is ``"bayes"`` (prior
    ``weights``, equal by default) or ``"minimax"`` (the least favourable weights)."""
    c = _statistic(oracle, counts)
    size = _size(n, oracle, c)
    laws = np.stack([v.probability_vector(h, "hypotheses", size=int(oracle.k)) for h in hypotheses])
    m = laws.shape[0]
    if m < 2:
        raise invalid("hypotheses", m, "at least two answer laws")
    if rule not in ("bayes", "minimax"):
        raise invalid("rule", rule, "'bayes' or 'minimax'")
    w = np.full(m, 1.0 / m) if weights is None else v.probability_vector(weights, "weights", size=m)
    loglik = _loglik_function(oracle, laws, size)
    gen = as_generator(rng)
    # the law of the statistic under each hypothesis: exact points with their probabilities,
    # or Monte Carlo draws with equal mass
    s = int(oracle.statistic_size)
    if _finite(oracle) and n_compositions(size, s) <= ENUMERATE:
        points = _compositions(size, s).astype(np.float64)
        ll = loglik(points)
        base = special.gammaln(size + 1.0) - special.gammaln(points + 1.0).sum(axis=1)
        mass = np.exp(base[:, None] + ll)  # (points, m): P(point | H_j)
        samples = [(ll, mass)]
        method, used = "exact", 0
    else:
        used = v.integer(draws, "draws", minimum=100)
        samples = []
        for j in range(m):
            ll_j = loglik(_null_statistics(oracle, laws[j], size, used, gen))
            one = np.zeros((used, m))
            one[:, j] = 1.0 / used
            samples.append((ll_j, one))
        method = "monte carlo"

    def errors(weights_: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.zeros((m, m))
        with np.errstate(divide="ignore"):
            logw = np.log(weights_)
        for ll, mass in samples:
            decide = np.argmax(ll + logw[None, :], axis=1)
            np.add.at(out, decide, mass)
        return out

    if rule == "minimax":
        w = _least_favourable(errors, m)
    table = errors(w)
    ll_obs = loglik(c[None, :])[0]
    with np.errstate(divide="ignore"):
        joint = ll_obs + np.log(w)
    post = np.exp(joint - special.logsumexp(joint))
    return MaryResult(int(np.argmax(joint)), post, w, table, rule, method, used)


def _least_favourable(errors: Any, m: int, steps: int = 400) -> NDArray[np.float64]:
    """The weights whose Bayes rule has the smallest largest error: multiplicative steps
    towards the hypothesis with the largest error (the rule is a fixed function of the draws,
    so the search sees one deterministic error curve), keeping the best found."""
    w = np.full(m, 1.0 / m)
    best_w, best = w, math.inf
    rate = 2.0
    for _ in range(steps):
        err = 1.0 - np.diag(errors(w))
        worst = float(err.max())
        if worst < best - 1e-15:
            best_w, best = w, worst
        w = w * np.exp(rate * (err - err.mean()))
        w /= w.sum()
        rate *= 0.99
    return best_w


# ------------------------------------------------------------------------------ composite
def share_test(
    oracle: Any,
    counts: ArrayLike,
    answer: int,
    threshold: float,
    *,
    n: int | None = None,
    alpha: float = 0.05,
    draws: int = DRAWS,
    rng: Any = None,
) -> TestResult:
    """``H0: pi_answer <= threshold`` against ``pi_answer > threshold`` (module docstring)."""
    a = _alpha(alpha)
    c = _statistic(oracle, counts)
    size = _size(n, oracle, c)
    k = int(oracle.k)
    j = v.integer(answer, "answer", minimum=0, maximum=k - 1)
    theta = v.as_float(threshold, "threshold", "a share in (0, 1)")
    if not 0.0 < theta < 1.0:
        raise invalid("threshold", threshold, "a share in (0, 1)")
    est = np.asarray(oracle.invert(c / size), dtype=np.float64)
    # the boundary law closest to the data: pi_j = theta, the others in their estimated proportions
    rest = np.delete(project_to_simplex(est), j)
    rest = rest / rest.sum() if rest.sum() > 0 else np.full(k - 1, 1.0 / (k - 1))
    boundary = np.insert(rest * (1.0 - theta), j, theta)
    se = math.sqrt(float(np.asarray(oracle.estimate_variance(boundary, float(size)))[j]))

    def excess(stats: NDArray[np.float64]) -> NDArray[np.float64]:
        return (_estimates(oracle, stats, size)[:, j] - theta) / se

    observed = float(excess(c[None, :])[0])
    b = _draws(draws)
    null = excess(_null_statistics(oracle, boundary, size, b, as_generator(rng)))
    return TestResult("share at most threshold", observed, _mc_p(observed, null), a, "parametric bootstrap", b)


# ------------------------------------------------------------------------------ sequential (anytime-valid)
@dataclass(frozen=True)
class SequentialResult:
    """An anytime-valid test: the e-value ``E`` of the reports so far (``log_e`` its log) and
    the decision ``E >= 1 / alpha``, whose probability under the null, at any look and
    however many looks, is at most ``alpha`` (Ville's inequality)."""

    test: str
    log_e: float
    alpha: float
    #: the largest log e-value along the reports' path, where the test follows it report by
    #: report (:mod:`ldpsim.analyst.betting`); None where only the e-value now is known
    log_e_max: float | None = None

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_e, 700.0))

    @property
    def reject(self) -> bool:
        """Whether the e-value reached ``1 / alpha`` (now, or at any report before, where the
        path is known: Ville's inequality bounds the chance that it ever does)."""
        top = self.log_e if self.log_e_max is None else max(self.log_e, self.log_e_max)
        return bool(top >= math.log(1.0 / self.alpha))


def _dirichlet_mixture(counts: NDArray[np.float64]) -> float:
    """log of the Krichevsky-Trofimov mixture likelihood of a sequence with these output
    counts (Dirichlet(1/2) over the ``m`` outputs): the product of the predictive
    probabilities ``(c_y + 1/2) / (t + m/2)``, whatever the order of the reports."""
    m = counts.size
    t = float(counts.sum())
    return float(
        special.gammaln(m / 2.0)
        - special.gammaln(t + m / 2.0)
        + (special.gammaln(counts + 0.5) - special.gammaln(0.5)).sum()
    )


def _finite_only(oracle: Any, what: str) -> None:
    if not _finite(oracle):
        raise invalid(
            "oracle", repr(oracle), f"a finite mechanism (reports that are symbols) for the sequential {what} test"
        )


def sequential_goodness_of_fit(
    oracle: Any, counts: ArrayLike, reference: ArrayLike, *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid :func:`goodness_of_fit` for a finite mechanism: the mixture likelihood
    of the reports over every law of the outputs against their law under ``reference``. The
    ratio is a nonnegative martingale with mean 1 under the null, so an analyst who looks
    every day keeps the level; it needs only the counts so far."""
    a = _alpha(alpha)
    _finite_only(oracle, "goodness-of-fit")
    c = _statistic(oracle, counts)
    pi0 = v.probability_vector(reference, "reference", size=int(oracle.k))
    law = np.asarray(oracle.forward(pi0), dtype=np.float64).clip(0.0)
    null = float(special.xlogy(c, law).sum())
    return SequentialResult("sequential goodness of fit", _dirichlet_mixture(c) - null, a)


def sequential_uniformity(oracle: Any, counts: ArrayLike, *, alpha: float = 0.05) -> SequentialResult:
    """Anytime-valid :func:`uniformity`."""
    k = int(oracle.k)
    out = sequential_goodness_of_fit(oracle, counts, np.full(k, 1.0 / k), alpha=alpha)
    return SequentialResult("sequential uniformity", out.log_e, out.alpha)


def sequential_homogeneity(oracle: Any, groups: Sequence[ArrayLike], *, alpha: float = 0.05) -> SequentialResult:
    """Anytime-valid :func:`homogeneity` for a finite mechanism: each group's mixture
    likelihood (its own law) against the largest likelihood of one common law (the pooled
    frequencies). For the true common law the ratio with that law's likelihood below is a
    test martingale; the largest likelihood is at least that one, so the ratio here is
    smaller and keeps the level at every look."""
    a = _alpha(alpha)
    _finite_only(oracle, "homogeneity")
    if len(groups) < 2:
        raise invalid("groups", len(groups), "at least two groups' statistics")
    stats_ = np.stack([_statistic(oracle, g, "groups") for g in groups])
    pooled = stats_.sum(axis=0)
    total = float(pooled.sum())
    best = float(special.xlogy(pooled, pooled / total).sum()) if total > 0 else 0.0
    return SequentialResult("sequential homogeneity", sum(_dirichlet_mixture(g) for g in stats_) - best, a)


def sequential_independence_of_pairs(joint: ArrayLike, *, alpha: float = 0.05) -> SequentialResult:
    """Anytime-valid independence of two questions with finite mechanisms from the counts of
    their pairs of outputs (``joint[y_a, y_b]``; each respondent's two reports are privatised
    independently, so independent answers give independent outputs): the
    Krichevsky-Trofimov mixture over every joint law of the pairs against the largest
    likelihood of a product law, the product of the two margins' empirical laws. Every
    null law of the outputs is a product law, so the denominator is at least the true one's
    likelihood and the ratio keeps the level at every look."""
    a = _alpha(alpha)
    c = np.asarray(joint, dtype=np.float64)
    if c.ndim != 2 or min(c.shape) < 2 or not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c != np.round(c)):
        raise invalid("joint", f"shape {c.shape}", "a table of non-negative integer counts of output pairs")
    n = float(c.sum())
    if n == 0:
        return SequentialResult("sequential independence", 0.0, a)
    rows, cols = c.sum(axis=1), c.sum(axis=0)
    best = float(special.xlogy(rows, rows / n).sum() + special.xlogy(cols, cols / n).sum())
    return SequentialResult("sequential independence", _dirichlet_mixture(c.ravel()) - best, a)


# ------------------------------------------------------------------------------ numeric: two means
def mean_difference_test(
    reports_a: ArrayLike, reports_b: ArrayLike, *, delta: float = 0.0, alpha: float = 0.05
) -> TestResult:
    """``H0: mean_a - mean_b = delta`` for a numeric question's reports in two groups (the
    reports are unbiased for the answers, so their means estimate the answers' means):
    Welch's statistic against the normal law, an asymptotic whose level error the tests
    measure (``tests/analyst/test_hypotheses.py``)."""
    a = _alpha(alpha)
    ya = v.finite_array(reports_a, "reports_a", "finite numbers").ravel()
    yb = v.finite_array(reports_b, "reports_b", "finite numbers").ravel()
    if ya.size < 2 or yb.size < 2:
        raise invalid("reports_a" if ya.size < 2 else "reports_b", "fewer than 2 reports", "at least 2 reports")
    d = v.as_float(delta, "delta", "a finite number")
    se = math.sqrt(float(ya.var(ddof=1)) / ya.size + float(yb.var(ddof=1)) / yb.size)
    z = (float(ya.mean()) - float(yb.mean()) - d) / se if se > 0 else math.inf
    p = float(2.0 * special.ndtr(-abs(z)))
    return TestResult("mean difference", z, p, a, "normal (Welch)", 0)


# ------------------------------------------------------------------------------ error exponents
def two_sample_exponent(M_a: ArrayLike, M_b: ArrayLike) -> float:
    """The type II exponent of testing that two groups of ``n`` reports each share one law,
    when they follow ``M_a`` and ``M_b``: ``beta_n = exp(-n E + o(n))`` with
    ``E = min_Q D(Q || M_a) + D(Q || M_b) = -2 log sum_y sqrt(M_a(y) M_b(y))`` (the empirical
    laws of both groups must meet near a common law for the test to accept; the cheapest is
    the normalised geometric mean), twice the Bhattacharyya distance."""
    a = v.probability_vector(M_a, "M_a")
    b = v.probability_vector(M_b, "M_b", size=a.size)
    return float(-2.0 * math.log(float(np.sqrt(a * b).sum())))


def mary_exponent(laws: Sequence[ArrayLike]) -> float:
    """The exponent of the Bayes error of deciding among the report laws ``laws``: the
    smallest Chernoff information of two of them (Leang and Johnson 1997), whatever the prior
    weights (all positive)."""
    ms = [v.probability_vector(m, "laws") for m in laws]
    if len(ms) < 2:
        raise invalid("laws", len(ms), "at least two report laws")
    return min(chernoff_information(ms[i], ms[j]).value for i in range(len(ms)) for j in range(i + 1, len(ms)))


def share_exponent(oracle: Any, alternative: ArrayLike, answer: int, threshold: float) -> float:
    """The type II exponent of :func:`share_test` for a finite mechanism when the answers
    follow ``alternative`` (whose share of ``answer`` is above ``threshold``), by Sanov's
    theorem: the test accepts when the empirical law of the outputs ``Q`` gives an estimate at
    most ``threshold``, a half-space ``w . Q <= t`` of the simplex, so ``beta_n = exp(-n E +
    o(n))`` with ``E = min D(Q || M1)`` over it, attained by the tilt ``Q ∝ M1 e^(-lambda w)``
    that lands on its boundary: ``E = -lambda t - log sum_y M1(y) e^(-lambda w_y)``."""
    if not _finite(oracle):
        raise invalid("oracle", repr(oracle), "a finite mechanism (Sanov's exponent over its outputs)")
    k = int(oracle.k)
    j = v.integer(answer, "answer", minimum=0, maximum=k - 1)
    pi1 = v.probability_vector(alternative, "alternative", size=k)
    theta = v.as_float(threshold, "threshold", "a share in (0, 1)")
    a, b = affine_estimate(oracle)
    w, t = a[j], theta - b[j]
    m1 = np.asarray(oracle.forward(pi1), dtype=np.float64)
    live = m1 > 0
    w, m1 = w[live], m1[live]
    if float(w @ m1) <= t:
        raise invalid("alternative", pi1.tolist(), f"a law whose share of answer {j} is above the threshold {theta:g}")

    def gap(lam: float) -> float:
        z = m1 * np.exp(-lam * (w - w.min()))
        return float((w * z).sum() / z.sum()) - t

    if w.min() >= t:  # the half-space misses the outputs the alternative can send
        return math.inf
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2.0
    from scipy import optimize  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

    lam = optimize.brentq(gap, 0.0, hi, xtol=1e-14)
    return float(-lam * t - special.logsumexp(-lam * w, b=m1))


def sequential_share_test(
    oracle: Any, counts: ArrayLike, answer: int, threshold: float, *, alpha: float = 0.05
) -> SequentialResult:
    """Anytime-valid :func:`share_test` for a finite mechanism: the Krichevsky-Trofimov
    mixture of the reports against the largest likelihood of an output law under which the
    estimate of ``answer``'s share is at most ``threshold``. Every null law of the answers
    gives such an output law, so the denominator is at least the true law's likelihood and
    the ratio keeps the level at every look. The largest likelihood over the half-space
    ``w . M <= t`` (``w`` the estimate's row, ``t`` the threshold less its intercept) is the
    empirical law when it lies inside, else ``M_y = c_y / (n + lambda (w_y - t))`` with
    ``lambda > 0`` putting it on the boundary (the constrained maximum's optimality
    condition)."""
    a = _alpha(alpha)
    _finite_only(oracle, "share")
    c = _statistic(oracle, counts)
    k = int(oracle.k)
    j = v.integer(answer, "answer", minimum=0, maximum=k - 1)
    theta = v.as_float(threshold, "threshold", "a share in (0, 1)")
    if not 0.0 < theta < 1.0:
        raise invalid("threshold", threshold, "a share in (0, 1)")
    n = float(c.sum())
    if n == 0:
        return SequentialResult("sequential share at most threshold", 0.0, a)
    aff, b = affine_estimate(oracle)
    w, t = aff[j], theta - b[j]
    seen = c > 0
    if float(w @ (c / n)) <= t or not np.any(w[seen] < t):
        # the empirical law is in the null (its likelihood is the largest), or no null law
        # puts mass on what was seen: the e-value is at most the mixture over the maximum
        best = float(special.xlogy(c, c / n).sum()) if float(w @ (c / n)) <= t else -math.inf
    else:
        cs, ws = c[seen], w[seen]
        # lambda in (0, n / (t - min w)) keeps every M_y positive; sum M_y w_y falls to t along it
        top = n / (t - ws.min())

        def gap(lam: float) -> float:
            m = cs / (n + lam * (ws - t))
            return float((m * (ws - t)).sum())

        from scipy import (
            optimize,
        )  # deferred: scipy.optimize adds ~0.25 s to start-up (ldpsim analyse loads this module)

        lam = optimize.brentq(gap, 0.0, top * (1 - 1e-12), xtol=1e-13, rtol=1e-13)
        m = cs / (n + lam * (ws - t))
        best = float((cs * np.log(m / m.sum())).sum())
    return SequentialResult("sequential share at most threshold", _dirichlet_mixture(c) - best, a)
