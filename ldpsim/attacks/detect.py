"""Detecting fake reports, and estimating without them.

**Sequential tests** (anytime valid: the server may look after every tick and still raises a
false alarm with probability at most ``alpha`` over the whole collection). Each is a mixture
of exponential test martingales, ``E_N = mean_j exp(lam_j S_N - N psi(lam_j))``, over a grid
of bets ``lam_j``; by Ville's inequality ``P(sup_N E_N >= 1 / alpha) <= alpha`` under the null,
so the first ``N`` at which ``E_N`` crosses ``1 / alpha`` is when the attack *became
detectable*. Both need only the statistic, so they run in aggregate mode too.

- :class:`SizeMonitor`: ``S_N`` is the total number of answers the reports support. For
  unary encoding its law is ``Bernoulli(p) + Binomial(k - 1, q)`` per report whatever the
  answer (for randomized response and subset selection it is a constant), so
  ``psi`` is its exact cumulant generating function and ``E_N`` is a martingale under
  every honest population. Fake reports with another number of 1-bits on average (random
  perturbed values, an unpadded maximal gain attack) are found; Cao et al.'s padding makes
  the average honest and escapes it.
- :class:`ExcessMonitor`: for each entry ``s`` of the statistic, ``S_N`` is its count and
  ``b_s = max_x P(report supports s | x)`` bounds its rate under any honest population, so
  ``psi(lam) = log(1 - b_s + b_s e^lam)`` (``lam > 0``) makes ``E_N`` a supermartingale; the
  alarm is raised when some entry's ``E_N`` crosses ``s / alpha`` (a union over entries).
  It finds an answer reported more often than any honest population could.

**Frequent itemsets** (:func:`frequent_itemset`, after Cao et al.'s defence): fake reports
of the maximal gain attack all support the targets together, which honest reports rarely
do. The search starts from the pair of answers supported together most in excess of what
the population estimated from the same reports would give, and grows the set greedily (the
answer most often supported with all the set so far), up to :data:`MAX_ITEMSET` answers.
For each size ``z`` the number of reports supporting the whole set is compared with ``b_z``,
a bound on its honest rate under any population
(:meth:`FrequencyOracle.itemset_support_bound`), by an exact binomial tail multiplied by the
number of sets of that size and by the number of sizes tried: a union bound over every set
the search could have chosen, so the level is ``alpha`` whatever the data. The set of
smallest adjusted p-value is the detected set; a report supporting all of it is flagged.
:func:`recovered_estimate` is the estimate from the reports left: the recovery studied here
(LDPRecover of Sun et al. 2024 solves a constrained inference instead; not implemented).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp
from scipy.stats import binom

from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = ["ExcessMonitor", "FrequentItemset", "SizeMonitor", "frequent_itemset", "recovered_estimate"]

#: bets of the mixtures, in units of the increments' scale: 2^-12 .. 2^1
GRID = 2.0 ** np.arange(-12, 2)


def _alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise invalid("alpha", alpha, "a false-alarm probability in (0, 1)")
    return float(alpha)


class SizeMonitor:
    """The e-process on the total support size (module docstring)."""

    name = "support size"

    def __init__(self, mech: FrequencyOracle, alpha: float = 1e-3) -> None:
        self.alpha = _alpha(alpha)
        h = 1e-3
        psi = mech.support_size_cgf(np.array([-h, 0.0, h]))  # NotAvailable where the law depends on the input
        sd = math.sqrt(max(float(psi[0] + psi[2] - 2.0 * psi[1]) / h**2, 0.0))
        scale = 1.0 / max(sd, 1.0)
        self.lam = np.concatenate([GRID, -GRID]) * scale
        self.psi = np.asarray(mech.support_size_cgf(self.lam), dtype=np.float64)
        self.total = 0.0
        self.n = 0
        self.log_e = 0.0
        #: the log e-value at which the alarm is raised
        self.threshold = -math.log(self.alpha)
        self.detected_at: float | None = None

    def update(self, statistic: NDArray, reports: int, time: float) -> None:
        self.total += float(np.sum(statistic))
        self.n += int(reports)
        terms = self.lam * self.total - self.n * self.psi
        self.log_e = float(logsumexp(terms) - math.log(terms.size))
        if self.detected_at is None and self.log_e >= self.threshold:
            self.detected_at = time


class ExcessMonitor:
    """The e-processes on every entry of the statistic (module docstring)."""

    name = "excess"

    def __init__(self, mech: FrequencyOracle | None, alpha: float = 1e-3, *, bound: NDArray | None = None) -> None:
        """``bound``: the entries' largest honest rates when ``mech`` is None (a server whose
        statistic mixes several mechanisms' outputs)."""
        self.alpha = _alpha(alpha)
        if bound is None:
            eye = np.eye(mech.k)  # type: ignore[union-attr]
            bound = np.max([np.asarray(mech.forward(e), dtype=np.float64) for e in eye], axis=0)  # type: ignore[union-attr]
        self.bound = np.clip(np.asarray(bound, dtype=np.float64), 1e-300, 1.0)
        self.lam = GRID.copy()
        # psi(lam) per entry: log(1 - b + b e^lam); an entry always supported (b = 1) never alarms
        self.psi = np.log1p(self.bound[:, None] * np.expm1(self.lam[None, :]))
        self.counts = np.zeros(self.bound.size)
        self.n = 0
        self.log_e = 0.0
        #: the largest entry's log e-value at which the alarm is raised (a union over entries)
        self.threshold = math.log(self.bound.size / self.alpha)
        self.detected_at: float | None = None

    def update(self, statistic: NDArray, reports: int, time: float) -> None:
        self.counts += np.asarray(statistic, dtype=np.float64)
        self.n += int(reports)
        terms = self.counts[:, None] * self.lam[None, :] - self.n * self.psi
        per = logsumexp(terms, axis=1) - math.log(self.lam.size)
        self.log_e = float(per.max())
        if self.detected_at is None and self.log_e >= self.threshold:
            self.detected_at = time


@dataclass(frozen=True)
class FrequentItemset:
    """The detected answers ``items`` (sorted indices; empty when nothing was found), the
    p-value of the set (Bonferroni-adjusted over every set of its size and every size
    tried) and the mask of the reports flagged as fake (those supporting all of it)."""

    items: NDArray[np.int64]
    p_value: float
    flagged: NDArray[np.bool_]


#: Largest set the greedy search grows.
MAX_ITEMSET = 32


def frequent_itemset(mech: FrequencyOracle, reports: NDArray, alpha: float = 1e-3) -> FrequentItemset:
    """Frequent-itemset detection on stored reports (module docstring)."""
    alpha = _alpha(alpha)
    k = mech.k
    n = len(reports)
    none = FrequentItemset(np.zeros(0, np.int64), 1.0, np.zeros(n, bool))
    if n == 0 or mech.itemset_support_bound(2) <= 0.0:
        return none  # reports that never support two answers (randomized response)
    # each report's support, one byte per answer, built a block at a time
    rows = max(1, (1 << 22) // k)
    units = np.empty((n, k), dtype=bool)
    co = np.zeros((k, k))
    for start in range(0, n, rows):
        block = np.asarray(mech.unit_statistics(reports[start : start + rows])) > 0
        units[start : start + rows] = block
        f = block.astype(np.float32)
        co += (f.T @ f).astype(np.float64)
    # where to start: the pair most in excess of its expected count under the population the
    # reports themselves estimate (any order of search keeps the level: the union bound covers
    # every set the search could reach)
    pi = np.clip(np.asarray(mech.invert(np.diag(co) / n)), 0.0, None)
    pi = pi / pi.sum() if pi.sum() > 0 else np.full(k, 1.0 / k)
    mu = np.asarray(mech.forward(pi))
    expected = n * (np.asarray(mech.statistic_covariance(pi)) + np.outer(mu, mu))
    excess = (co - expected) / np.sqrt(np.clip(expected, 1.0, None))
    np.fill_diagonal(excess, -np.inf)
    a, b = np.unravel_index(int(np.argmax(excess)), excess.shape)
    chosen = [int(a), int(b)]
    mask = units[:, a] & units[:, b]
    sizes = min(MAX_ITEMSET, k)
    best = (math.inf, chosen[:], mask)
    for z in range(2, sizes + 1):
        count = int(mask.sum())
        bound = float(mech.itemset_support_bound(z))
        log_sets = math.lgamma(k + 1) - math.lgamma(z + 1) - math.lgamma(k - z + 1) + math.log(sizes - 1)
        log_p = float(binom.logsf(count - 1, n, bound)) if bound > 0 else (0.0 if count == 0 else -math.inf)
        adjusted = log_p + log_sets
        if adjusted < best[0]:
            best = (adjusted, chosen[:], mask)
        if z == sizes or count == 0:
            break
        gain = units[mask].sum(axis=0, dtype=np.float64)
        gain[chosen] = -1.0
        nxt = int(np.argmax(gain))
        chosen.append(nxt)
        mask = mask & units[:, nxt]
    log_adjusted, items, flagged = best
    if not log_adjusted < math.log(alpha):
        return FrequentItemset(np.zeros(0, np.int64), float(min(1.0, math.exp(log_adjusted))), np.zeros(n, bool))
    return FrequentItemset(np.sort(np.asarray(items, np.int64)), float(math.exp(log_adjusted)), flagged)


def recovered_estimate(mech: FrequencyOracle, statistic: NDArray, n: int, removed: NDArray, n_removed: int) -> NDArray:
    """The estimate from the reports left after removing ``n_removed`` flagged ones (their
    statistic ``removed``)."""
    left = n - n_removed
    if left <= 0:
        return np.full(mech.k, np.nan)
    return np.asarray(mech.invert((np.asarray(statistic) - np.asarray(removed)) / float(left)))
