"""Unbiased frequency estimation from privatised output counts (inversion estimator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import FiniteMechanism
from ldpsim.mechanisms.randomized_response import RandomizedResponse


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
    which is unbiased when ``Q`` has full row rank ``k``; for randomized response it is the
    closed form ``(f - p_other) / q``. Standard errors use the plug-in multinomial covariance
    of ``f``. The estimate may leave the simplex; projecting it is the analyst's next step.
    Counts up to 10^12 and beyond are handled in floating point without overflow.
    """
    c = v.counts(output_counts, "output_counts", size=mechanism.m)
    n = int(c.sum())
    if n == 0:
        raise invalid("output_counts", "all zeros", "at least one report")
    f = c.astype(np.float64) / n
    if isinstance(mechanism, RandomizedResponse):
        est = (f - mechanism.p_other) / _keep(mechanism)
    else:
        est = _inverse(mechanism) @ f
    return FrequencyEstimate(mechanism.input_labels, est, _standard_error(mechanism, f, n), n)


def frequency_standard_error(mechanism: FiniteMechanism, prior: ArrayLike, n: int) -> NDArray[np.float64]:
    """Exact standard error of the inversion estimator from ``n`` i.i.d. reports when the
    inputs follow ``prior`` (output counts Multinomial(n, P^T Q)); the theory value that
    measured errors are compared with."""
    p = v.probability_vector(prior, "prior", size=mechanism.k)
    n = v.integer(n, "n", minimum=1)
    return _standard_error(mechanism, mechanism.marginal(p), n)


def _keep(mechanism: RandomizedResponse) -> float:
    if mechanism.keep <= 0:
        raise invalid("mechanism", mechanism, "eps > 0 (at eps = 0 the reports carry no information)")
    return mechanism.keep


def _inverse(mechanism: FiniteMechanism) -> NDArray[np.float64]:
    """The ``k x m`` matrix A with ``A Q^T = I`` (least-squares inverse), computed once per
    mechanism."""
    cached = getattr(mechanism, "_lsq_inverse", None)
    if cached is not None:
        return cached
    q = mechanism.matrix
    if np.linalg.matrix_rank(q) < mechanism.k:
        raise invalid("mechanism", mechanism, f"a matrix of full row rank {mechanism.k} to invert")
    a = np.linalg.pinv(q.T)
    mechanism._lsq_inverse = a  # type: ignore[attr-defined]
    return a


def _standard_error(mechanism: FiniteMechanism, marginal: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """sqrt(diag(A Cov(f) A^T)) with Cov(f) = (diag(M) - M M^T)/n, M the output distribution."""
    if isinstance(mechanism, RandomizedResponse):
        return np.sqrt(marginal * (1.0 - marginal) / n) / _keep(mechanism)
    a = _inverse(mechanism)
    cov = (np.diag(marginal) - np.outer(marginal, marginal)) / n
    return np.sqrt(np.clip(np.einsum("ij,jl,il->i", a, cov, a), 0.0, None))
