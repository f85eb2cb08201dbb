"""Unbiased frequency estimation from the statistic of privatised reports (inversion
estimator), for any frequency oracle (:class:`ldpsim.mechanisms.base.FrequencyOracle`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated input frequencies with plug-in standard errors."""

    labels: tuple
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    n: int

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"category": list(self.labels), "estimate": self.estimate, "std_error": self.std_error})


def frequency_estimate(mechanism: FrequencyOracle, output_counts: ArrayLike, n: int | None = None) -> FrequencyEstimate:
    """The unbiased inversion estimator of the input distribution from the statistic of the
    reports (for a finite mechanism: its output counts).

    Solves ``S^T p = f`` (``f = statistic / n`` the observed statistic frequencies, ``S``
    the support matrix; for a finite mechanism its matrix ``Q``) in the least-squares sense,
    which is unbiased when ``S`` has full row rank ``k`` (the mechanism inverts its own
    reports, :meth:`~ldpsim.mechanisms.base.FrequencyOracle.invert`; for randomized
    response the closed form ``(f - p_other) / q``). Standard errors are the oracle's
    plug-in (for a finite mechanism the multinomial covariance of ``f``). The estimate may
    leave the simplex; projecting it is the analyst's next step. Counts up to 10^12 and
    beyond are handled in floating point without overflow.

    ``n``, the number of reports, is the sum of the counts for a finite mechanism (each
    report counts once) and must be given for oracles whose reports count several entries
    (unary encoding, local hashing, subset selection, RAPPOR).
    """
    c = v.counts(output_counts, "output_counts", size=mechanism.statistic_size)
    if n is None:
        if mechanism.output_size is None:
            raise invalid("n", None, f"the number of reports behind the statistic of {mechanism!r}")
        n = int(c.sum())
        if n == 0:
            raise invalid("output_counts", "all zeros", "at least one report")
    n = v.integer(n, "n", minimum=1)
    f = c.astype(np.float64) / n
    est = mechanism.invert(f)
    return FrequencyEstimate(mechanism.input_labels, est, mechanism.plugin_std_error(f, n), n)


def frequency_standard_error(mechanism: FrequencyOracle, prior: ArrayLike, n: int) -> NDArray[np.float64]:
    """Exact standard error of the inversion estimator from ``n`` i.i.d. reports when the
    inputs follow ``prior`` (for a finite mechanism the output counts are Multinomial(n,
    P^T Q)); the theory value that measured errors are compared with."""
    p = v.probability_vector(prior, "prior", size=mechanism.k)
    n = v.integer(n, "n", minimum=1)
    return mechanism.estimate_std_error(p, n)
