"""Privacy tiers: respondents who chose different eps, combined with minimum-variance weights.

Respondents pick one of ``T`` privacy levels (tiers); tier ``t``'s ``n_t`` reports go through
its own frequency oracle ``M_t`` on the same ``k`` answers, and each tier alone gives the
unbiased inversion estimate ``p_t`` with exact variances ``V_t(x)``
(:meth:`~ldpsim.mechanisms.base.FrequencyOracle.estimate_variance`). The tiers are
independent, so for each answer ``x`` the unbiased combination ``sum_t w_t(x) p_t(x)``
(``sum_t w_t(x) = 1``) has variance ``sum_t w_t(x)^2 V_t(x)``, smallest at the
inverse-variance weights

    w_t(x) = (1 / V_t(x)) / sum_s (1 / V_s(x)),    variance 1 / sum_t (1 / V_t(x)).

**Per answer, not a matrix GLS.** The weights are chosen answer by answer, so each coordinate
is the minimum-variance unbiased combination of the tiers' estimates *of that answer*. A
generalised least-squares combination ``(sum_t S_t^-1)^-1 sum_t S_t^-1 p_t`` over whole
covariance matrices could borrow strength across answers, but the tiers' covariances are
singular (the estimates sum to one), their plug-in versions are noisy, and it needs ``k x k``
matrices where the per-answer weights need only the variances (closed forms for the large
oracles). The price: the combined estimate sums to one only in expectation.

**Data and design.** On data (:func:`combine_tiers`) the weights use the plug-in variances
(each tier's exact variance at its own estimate projected onto the simplex); because they
depend on the data, the combination is unbiased to first order. Passing ``prior`` fixes the
weights at the exact variances there, which keeps the combination exactly unbiased;
:func:`tier_design` gives those weights and variances before any data is collected.

**Naive pooling** for comparison: every report treated alike. For tiers of one family this
means averaging the tiers' estimates with weights ``n_t / N`` (unbiased, variance
``sum_t (n_t / N)^2 V_t(x)``, never below the weighted one); it is reported for any tiers,
with :attr:`TierEstimate.same_family` saying whether the comparison is the meaningful one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.analyst.estimation import _frequencies, project_to_simplex
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle, Mechanism

__all__ = [
    "TierDesign",
    "TierEstimate",
    "combine_tiers",
    "inverse_variance_weights",
    "tier_design",
]


def _mechanisms(mechanisms: Any) -> list[FrequencyOracle]:
    try:
        mechs: list[FrequencyOracle] = list(mechanisms)
    except TypeError:
        raise invalid("mechanisms", mechanisms, "a sequence of frequency oracles, one per tier") from None
    if not mechs:
        raise invalid("mechanisms", mechanisms, "at least one frequency oracle")
    for t, m in enumerate(mechs):
        if not isinstance(m, Mechanism) or not hasattr(m, "invert"):
            raise invalid(
                f"mechanisms[{t}]",
                m,
                "a frequency oracle (ldpsim.mechanisms.base.FrequencyOracle)",
            )
        if m.k != mechs[0].k:
            raise invalid(
                f"mechanisms[{t}]",
                m,
                f"an oracle on the same k = {mechs[0].k} answers as tier 0",
            )
    return mechs


def inverse_variance_weights(
    variances: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(weights, combined_variance)`` from per-tier variances (``T x k``, >= 0; ``inf`` for
    a tier without reports): ``w_t(x) = (1/V_t(x)) / sum_s 1/V_s(x)`` and ``1 / sum_t
    1/V_t(x)``. An answer that some tier estimates with variance 0 gets its weight spread
    equally over those tiers (combined variance 0)."""
    var = np.asarray(variances, dtype=np.float64)
    if var.ndim != 2 or var.shape[0] < 1 or np.any(np.isnan(var)) or np.any(var < 0):
        raise invalid(
            "variances",
            var.shape,
            "a T x k array of variances >= 0 (inf for an empty tier)",
        )
    if np.any(np.all(np.isinf(var), axis=0)):
        raise invalid(
            "variances",
            "an answer with infinite variance in every tier",
            "at least one tier with reports",
        )
    zero = var == 0
    with np.errstate(divide="ignore"):
        inv = np.where(zero, 0.0, 1.0 / var)
    total = inv.sum(axis=0)
    has_zero = zero.any(axis=0)
    weights = np.where(
        has_zero,
        zero / np.maximum(zero.sum(axis=0), 1),
        inv / np.where(total > 0, total, 1.0),
    )
    combined = np.where(has_zero, 0.0, 1.0 / np.where(total > 0, total, np.nan))
    return weights, combined


@dataclass(frozen=True)
class TierDesign:
    """Exact weights and variances of the tier combination at a prior, before any data.

    ``weights`` (``T x k``) are the inverse-variance weights; ``variance`` (``k``) the
    combined variance ``1 / sum_t 1/V_t``; ``tier_variances`` (``T x k``) the ``V_t``;
    ``naive_variance`` the variance of the ``n_t``-weighted average; ``sizes`` the ``n_t``."""

    weights: NDArray[np.float64]
    variance: NDArray[np.float64]
    tier_variances: NDArray[np.float64]
    naive_variance: NDArray[np.float64]
    sizes: NDArray[np.float64]

    @property
    def best_single_variance(self) -> NDArray[np.float64]:
        """Per answer, the smallest variance of one tier alone (at its size)."""
        return self.tier_variances.min(axis=0)


def _naive(
    sizes: NDArray[np.float64],
    estimates: NDArray[np.float64],
    variances: NDArray[np.float64],
) -> tuple[Any, Any]:
    share = sizes / sizes.sum()
    used = share > 0
    est = (share[used, None] * estimates[used]).sum(axis=0)
    var = (share[used, None] ** 2 * variances[used]).sum(axis=0)
    return est, var


def tier_design(mechanisms: Sequence[FrequencyOracle], prior: ArrayLike, n: float, shares: ArrayLike) -> TierDesign:
    """The exact weights and variances when ``n`` respondents split into the tiers with
    ``shares`` (``n_t = n shares_t``) and answer from ``prior``: per tier ``V_t =
    estimate_variance(prior, n_t)``, then :func:`inverse_variance_weights`."""
    mechs = _mechanisms(mechanisms)
    k = mechs[0].k
    p = v.probability_vector(prior, "prior", size=k)
    total = v.positive(n, "n")
    sh = v.probability_vector(shares, "shares", size=len(mechs))
    sizes = total * sh
    var = np.full((len(mechs), k), np.inf)
    for t, m in enumerate(mechs):
        if sizes[t] > 0:
            var[t] = m.estimate_variance(p, float(sizes[t]))
    weights, combined = inverse_variance_weights(var)
    _, naive_var = _naive(sizes, np.zeros((len(mechs), k)), np.where(np.isinf(var), 0.0, var))
    return TierDesign(weights, combined, var, naive_var, sizes)


@dataclass(frozen=True)
class TierEstimate:
    """The tiers' estimates combined with minimum-variance weights.

    Attributes
    ----------
    labels : tuple
    estimate : ndarray (k,)
        ``sum_t w_t(x) p_t(x)``; sums to one only in expectation (per-answer weights).
    std_error : ndarray (k,)
        ``sqrt(1 / sum_t 1/V_t(x))`` with the variances the weights used.
    weights : ndarray (T, k)
        Columns sum to one; 0 for a tier without reports.
    tier_estimates, tier_variances : ndarray (T, k)
        Each tier's inversion estimate and its variance (NaN / inf for an empty tier).
    naive_estimate, naive_std_error : ndarray (k,)
        The ``n_t``-weighted average of the tiers' estimates (every report alike) and its
        standard error from the same variances.
    n : tuple of int
        Reports per tier.
    same_family : bool
        Whether every tier's oracle is of one family (same catalog name): then the naive
        pooling is "treating every report alike".
    plugin : bool
        True when the weights come from the plug-in variances, False when from ``prior``.
    """

    labels: tuple
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    weights: NDArray[np.float64]
    tier_estimates: NDArray[np.float64]
    tier_variances: NDArray[np.float64]
    naive_estimate: NDArray[np.float64]
    naive_std_error: NDArray[np.float64]
    n: tuple
    same_family: bool
    plugin: bool

    @property
    def projected(self) -> NDArray[np.float64]:
        """The combined estimate projected onto the simplex."""
        return project_to_simplex(self.estimate)


def combine_tiers(
    mechanisms: Sequence[FrequencyOracle],
    counts: Sequence[ArrayLike],
    n: Sequence[int | None] | None = None,
    prior: ArrayLike | None = None,
) -> TierEstimate:
    """Combine privacy tiers: ``counts[t]`` is the statistic of tier ``t``'s reports through
    ``mechanisms[t]`` (the output counts of a finite mechanism); ``n[t]`` its number of
    reports, needed only for oracles whose reports count several entries. A tier with no
    reports (all-zero counts, ``n[t]`` 0 or None) gets weight 0.

    Weights: inverse plug-in variances (the default), or, with ``prior``, the inverse exact
    variances at ``prior`` (fixed weights, exactly unbiased; see the module docstring)."""
    mechs = _mechanisms(mechanisms)
    t_count = len(mechs)
    k = mechs[0].k
    try:
        cts = list(counts)
    except TypeError:
        raise invalid("counts", counts, "a sequence of count arrays, one per tier") from None
    if len(cts) != t_count:
        raise invalid("counts", f"{len(cts)} count arrays", f"one per tier ({t_count})")
    ns = [None] * t_count if n is None else list(n)
    if len(ns) != t_count:
        raise invalid("n", n, f"one number of reports (or None) per tier ({t_count})")
    p0 = None if prior is None else v.probability_vector(prior, "prior", size=k)
    est = np.full((t_count, k), np.nan)
    var = np.full((t_count, k), np.inf)
    sizes = np.zeros(t_count)
    for t, m in enumerate(mechs):
        c = v.counts(cts[t], f"counts[{t}]", size=m.statistic_size)
        if (ns[t] is None or ns[t] == 0) and not c.any():
            continue  # an empty tier
        f, nt = _frequencies(m, c, ns[t], name=f"counts[{t}]")
        sizes[t] = nt
        est[t] = m.invert(f)
        var[t] = m.plugin_variance(f, float(nt)) if p0 is None else m.estimate_variance(p0, float(nt))
    if not sizes.any():
        raise invalid("counts", "no reports in any tier", "at least one tier with reports")
    weights, combined = inverse_variance_weights(var)
    combined_est = np.where(weights > 0, weights * np.nan_to_num(est), 0.0).sum(axis=0)
    naive_est, naive_var = _naive(sizes, np.nan_to_num(est), np.where(np.isinf(var), 0.0, var))
    same = len({m.name for m in mechs}) == 1
    return TierEstimate(
        mechs[0].input_labels,
        combined_est,
        np.sqrt(combined),
        weights,
        est,
        var,
        naive_est,
        np.sqrt(naive_var),
        tuple(int(s) for s in sizes),
        same,
        p0 is None,
    )
