"""Two questions of one respondent: the cross-tabulation and a test of independence, from
privatised reports.

A respondent answers question A (``ka`` answers) and question B (``kb`` answers), each
through its own finite mechanism with its own randomness. The pair of reports is then one
report of the *product mechanism* (:func:`ldpsim.mechanisms.product_mechanism`), whose
matrix is the Kronecker product of the two, so the joint output counts are one multinomial
and everything the analyst does for one question applies to the pair: the unbiased
inversion estimate of the joint table ``P`` (``ka x kb``) and its exact covariance. The
analyst receives that product mechanism and the counts; it never builds a mechanism.

**The test of independence** (in the spirit of Gaboardi and Rogers 2018: a chi-square
statistic whose covariance is that of the privatised estimate, not the multinomial's).
Under independence ``P = r c^T`` with ``r``, ``c`` the two marginals. The deviation ``D =
P_hat - r_hat c_hat^T`` (marginals of the estimate itself) has rows and columns summing to
zero, so its first ``(ka - 1)(kb - 1)`` cells determine it. To first order ``vec D = J
vec(P_hat - P)`` with ``J = I - I (x) c 1^T - r 1^T (x) I``, so its covariance is ``J
Sigma J^T``, where ``Sigma`` is the exact covariance of the estimate at the null table
``r c^T`` (the estimated marginals projected onto the simplex). The Wald statistic ``W =
d^T (J Sigma J^T)_sub^{-1} d`` on the free cells ``d`` is chi-square with ``(ka - 1)(kb -
1)`` degrees of freedom as ``n`` grows (docs/theory.md sec. 10). The tests measure its
type I error and power by simulation against the exact aggregate law.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim.analyst.estimation import _frequencies, project_to_simplex
from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle

__all__ = ["CrossTab", "IndependenceTest", "crosstab_estimate", "independence_test", "joint_output_counts"]


def joint_output_counts(first: ArrayLike, second: ArrayLike, m_first: int, m_second: int) -> NDArray[np.int64]:
    """The counts of the product mechanism's outputs (length ``m_first m_second``, code
    ``y m_second + y'``) from the two questions' output codes of the same respondents, in
    the same order."""
    a = np.asarray(first)
    b = np.asarray(second)
    m1 = v.integer(m_first, "m_first", minimum=1)
    m2 = v.integer(m_second, "m_second", minimum=1)
    if a.ndim != 1 or b.shape != a.shape:
        raise invalid("second", f"shape {b.shape}", f"the shape of first, {a.shape} (one code per respondent)")
    for name, arr, m in (("first", a, m1), ("second", b, m2)):
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= m):
            raise invalid(
                name, f"codes from {arr.min()} to {arr.max()} ({arr.dtype})", f"integer output codes in 0..{m - 1}"
            )
    return np.bincount(a.astype(np.int64) * m2 + b.astype(np.int64), minlength=m1 * m2).astype(np.int64)


def _shape(mechanism: FrequencyOracle, shape: Any) -> tuple[int, int]:
    try:
        ka, kb = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise invalid("shape", shape, "(ka, kb): the numbers of answers of the two questions") from None
    if ka < 2 or kb < 2 or ka * kb != mechanism.k:
        raise invalid("shape", shape, f"(ka, kb) with ka, kb >= 2 and ka kb = {mechanism.k}, the mechanism's inputs")
    return ka, kb


@dataclass(frozen=True)
class CrossTab:
    """The estimated joint table of two questions.

    ``estimate`` (``ka x kb``) is unbiased (it may leave the simplex); ``projected`` is its
    Euclidean projection onto the simplex; ``std_error`` the plug-in standard errors;
    ``rows`` and ``columns`` the two questions' answers; :attr:`covariance` the plug-in
    covariance of ``estimate.ravel()`` (``ka kb x ka kb``)."""

    rows: tuple
    columns: tuple
    estimate: NDArray[np.float64]
    projected: NDArray[np.float64]
    std_error: NDArray[np.float64]
    frequencies: NDArray[np.float64]
    n: int
    mechanism: FrequencyOracle = field(repr=False, compare=False)

    @property
    def covariance(self) -> NDArray[np.float64]:
        return self.mechanism.plugin_covariance(self.frequencies, float(self.n))

    def exact_covariance(self, table: ArrayLike) -> NDArray[np.float64]:
        """The exact covariance of ``estimate.ravel()`` when the respondents' answer pairs
        are i.i.d. from ``table`` (``ka x kb``, summing to one)."""
        p = v.probability_vector(np.asarray(table, dtype=np.float64).ravel(), "table", size=self.mechanism.k)
        return self.mechanism.estimate_covariance(p, float(self.n))


def crosstab_estimate(mechanism: FrequencyOracle, counts: ArrayLike, shape: Any) -> CrossTab:
    """The cross-tabulation of two questions from the counts of the product mechanism's
    outputs (``counts``, e.g. from :func:`joint_output_counts`).

    ``mechanism`` is the mechanism on answer pairs (:func:`ldpsim.mechanisms.product_mechanism`
    of the two questions' mechanisms, or any oracle whose inputs are the ``ka kb`` pairs in
    row-major order); ``shape`` is ``(ka, kb)``."""
    ka, kb = _shape(mechanism, shape)
    f, n = _frequencies(mechanism, counts, None)
    est = np.asarray(mechanism.invert(f), dtype=np.float64)
    se = np.sqrt(np.clip(mechanism.plugin_variance(f, float(n)), 0.0, None))
    labels = mechanism.input_labels
    rows = tuple(lab[0] if isinstance(lab, tuple) else i for i, lab in enumerate(labels[::kb]))
    cols = tuple(lab[1] if isinstance(lab, tuple) else j for j, lab in enumerate(labels[:kb]))
    return CrossTab(
        rows, cols, est.reshape(ka, kb), project_to_simplex(est).reshape(ka, kb), se.reshape(ka, kb), f, n, mechanism
    )


@dataclass(frozen=True)
class IndependenceTest:
    """The Wald chi-square test of independence on a privatised cross-tabulation:
    ``statistic`` W, ``df`` = (ka - 1)(kb - 1), ``p_value`` = P(chi2_df >= W)."""

    statistic: float
    df: int
    p_value: float
    crosstab: CrossTab = field(repr=False, compare=False)

    def reject(self, alpha: float = 0.05) -> bool:
        """Whether independence is rejected at level ``alpha``."""
        a = v.as_float(alpha, "alpha", "a level in (0, 1)")
        if not 0.0 < a < 1.0:
            raise invalid("alpha", alpha, "a level in (0, 1)")
        return self.p_value <= a


def _deviation_jacobian(r: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    """``d vec(P - (P 1)(1^T P)) / d vec P`` at marginals ``r``, ``c`` (row-major vec)."""
    ka, kb = r.size, c.size
    return (
        np.eye(ka * kb) - np.kron(np.eye(ka), np.outer(c, np.ones(kb))) - np.kron(np.outer(r, np.ones(ka)), np.eye(kb))
    )


def independence_test(mechanism: FrequencyOracle, counts: ArrayLike, shape: Any) -> IndependenceTest:
    """Test that the two questions' answers are independent, from the product mechanism's
    output counts (see the module docstring for the statistic and its null law)."""
    tab = crosstab_estimate(mechanism, counts, shape)
    ka, kb = tab.estimate.shape
    r = tab.estimate.sum(axis=1)
    c = tab.estimate.sum(axis=0)
    deviation = tab.estimate - np.outer(r, c)
    r0, c0 = project_to_simplex(r), project_to_simplex(c)
    sigma = mechanism.estimate_covariance(np.outer(r0, c0).ravel(), float(tab.n))
    jac = _deviation_jacobian(r0, c0)
    free = (np.arange(ka)[:, None] < ka - 1) & (np.arange(kb)[None, :] < kb - 1)
    idx = np.flatnonzero(free.ravel())
    cov = (jac @ sigma @ jac.T)[np.ix_(idx, idx)]
    d = deviation.ravel()[idx]
    try:
        w = float(d @ np.linalg.solve(cov, d))
    except np.linalg.LinAlgError:
        raise invalid(
            "counts",
            "a table whose null covariance is singular",
            "reports in which every answer of both questions has positive estimated probability",
        ) from None
    df = (ka - 1) * (kb - 1)
    return IndependenceTest(w, df, float(stats.chi2.sf(w, df)), tab)
