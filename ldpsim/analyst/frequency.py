"""Unbiased frequency estimation from privatised output counts (inversion estimator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import FiniteMechanism


@dataclass(frozen=True)
class FrequencyEstimate:
    """Estimated input frequencies with plug-in standard errors."""

    labels: tuple
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    n: int

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"category": list(self.labels), "estimate": self.estimate, "std_error": self.std_error})


def frequency_estimate(mechanism: FiniteMechanism, output_counts: ArrayLike) -> FrequencyEstimate:
    """The unbiased inversion estimator of the input distribution from output counts.

    Solves ``Q^T p = f`` (``f`` the observed output frequencies) in the least-squares sense,
    which is unbiased when ``Q`` has full row rank ``k`` (the mechanism inverts its own
    reports, :meth:`~ldpsim.mechanisms.FiniteMechanism.invert`; for randomized response the
    closed form ``(f - p_other) / q``). Standard errors use the plug-in multinomial covariance
    of ``f``. The estimate may leave the simplex; projecting it is the analyst's next step.
    Counts up to 10^12 and beyond are handled in floating point without overflow.
    """
    c = v.counts(output_counts, "output_counts", size=mechanism.m)
    n = int(c.sum())
    if n == 0:
        raise invalid("output_counts", "all zeros", "at least one report")
    f = c.astype(np.float64) / n
    est = mechanism.invert(f)
    return FrequencyEstimate(mechanism.input_labels, est, mechanism.inversion_std_error(f, n), n)


def frequency_standard_error(mechanism: FiniteMechanism, prior: ArrayLike, n: int) -> NDArray[np.float64]:
    """Exact standard error of the inversion estimator from ``n`` i.i.d. reports when the
    inputs follow ``prior`` (output counts Multinomial(n, P^T Q)); the theory value that
    measured errors are compared with."""
    p = v.probability_vector(prior, "prior", size=mechanism.k)
    n = v.integer(n, "n", minimum=1)
    return mechanism.inversion_std_error(mechanism.marginal(p), n)
