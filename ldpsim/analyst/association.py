"""Independence of two questions of any kind, and homogeneity across groups of a public
column, from each report's unbiased term.

Every question kind of a survey gives each report an unbiased term ``u_i`` (a row of
numbers: a categorical answer's inverted indicator, a numeric report itself, a
multiselect question's item shares, a key-value question's key frequencies and value
sums) whose mean over the respondents is the question's unbiased estimate. A respondent's
reports of two questions are privatised with independent randomness, so when the two
answers are independent so are the two reports, and so are their terms. Any test of
independence of the paired rows ``(u_a, u_b)`` is then a test of independence of the
answers, whatever the mechanisms.

**The statistic.** With ``S_a``, ``S_b`` the sample covariances of the two terms and ``C``
their cross-covariance, ``T = n tr(S_a^+ C S_b^+ C^T)``: ``n`` times the sum of the squared
sample canonical correlations (Hotelling 1936), i.e. ``n`` times Pillai's trace. Directions
in which a term does not vary (the one-hot terms of randomized response sum to a constant)
are left out: the pseudo-inverses keep the eigenvalues above ``RTOL`` times the largest.
Under independence ``sqrt(n) vec C`` is asymptotically normal with covariance ``S_b (x)
S_a``, so ``T`` is asymptotically chi-square with ``rank(S_a) rank(S_b)`` degrees of
freedom: the classical test of independence of two sets of variates (Anderson 2003,
ch. 9), here on privatised terms.

**Calibration.**

- ``method="permutation"``: the rows of ``u_b`` are permuted ``draws`` times; under
  independence the pairing is exchangeable, so the Monte Carlo p-value ``(1 + #{T_b >=
  T}) / (1 + B)`` is valid at every ``n`` and every ``B`` (Pitman 1937). The covariances do
  not change under a permutation, so each draw costs one ``r_a x r_b`` product.
- ``method="wald"``: the chi-square tail above, an asymptotic whose error the tests measure
  (``tests/analyst/test_association.py``). It needs only the sums ``n``, ``sum u_a``, ``sum
  u_b``, ``sum u_a u_a^T``, ``sum u_b u_b^T``, ``sum u_a u_b^T``
  (:class:`PairedSums`, :func:`association_from_sums`), which a simulation keeps instead of
  every pair.

**Homogeneity across groups** (:func:`group_homogeneity`): do the groups of a public,
noise-free column (gender, region; an A/B split for two groups) answer a question alike?
That is the independence of the question's terms and the groups' one-hot indicator: ``T``
is then ``n`` times Pillai's trace of the one-way multivariate analysis of variance, with
``rank(S_a) (g - 1)`` degrees of freedom; the permutation version deals the terms out to
the groups at random, exact when the groups' answers share one law.

What the tests detect: a difference in what the terms estimate. For a categorical question
(the answers' frequencies) that is any dependence; for a numeric one (its mean) a
correlation, or groups with different means; the level holds under full independence (or
one law in every group) in every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim._rng import as_generator
from ldpsim.analyst.hypotheses import TestResult, _alpha
from ldpsim.errors import LdpSimError, invalid

__all__ = ["AssociationResult", "PairedSums", "association_from_sums", "association_test", "group_homogeneity"]

#: eigenvalues of a covariance below this share of its largest are degenerate directions
RTOL = 1e-9
#: permutations by default (a Monte Carlo p-value is valid at any number)
DRAWS = 999
#: numbers held at once by the permutation draws (bounds temporary memory)
_CHUNK = 1 << 22
#: two statistics within this relative distance are one (rounding, not evidence)
_TIE = 1e-9
METHODS = ("permutation", "wald")


@dataclass(frozen=True)
class AssociationResult(TestResult):
    """A test of independence (or homogeneity) on paired unbiased terms: the
    :class:`~ldpsim.analyst.hypotheses.TestResult` fields, and ``df`` (``rank(S_a)
    rank(S_b)``, the chi-square's degrees of freedom), ``n`` the pairs and ``association``
    the Frobenius norm of the terms' cross-covariance (a consistent estimate of the answers'
    own: the two noises are independent and centred)."""

    __test__ = False

    df: int = 0
    n: int = 0
    association: float = float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "df": self.df, "n": self.n, "association": self.association}


@dataclass(frozen=True)
class PairedSums:
    """The sufficient sums of ``n`` paired terms: ``sa = sum u_a``, ``sb = sum u_b``, ``saa =
    sum u_a u_a^T``, ``sbb = sum u_b u_b^T``, ``sab = sum u_a u_b^T``."""

    n: int
    sa: NDArray[np.float64]
    sb: NDArray[np.float64]
    saa: NDArray[np.float64]
    sbb: NDArray[np.float64]
    sab: NDArray[np.float64]

    @classmethod
    def of(cls, units_a: ArrayLike, units_b: ArrayLike) -> PairedSums:
        a, b = _pair(units_a, units_b)
        return cls(a.shape[0], a.sum(axis=0), b.sum(axis=0), a.T @ a, b.T @ b, a.T @ b)

    def covariances(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``S_a``, ``S_b`` and ``C`` (divisor ``n``)."""
        n = float(self.n)
        ma, mb = self.sa / n, self.sb / n
        return self.saa / n - np.outer(ma, ma), self.sbb / n - np.outer(mb, mb), self.sab / n - np.outer(ma, mb)


# ------------------------------------------------------------------------------ helpers


def _units(units: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        u = np.asarray(units, dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid(name, units, "numbers, one row (or one number) per report") from None
    if u.ndim == 1:
        u = u[:, None]
    if u.ndim != 2 or u.shape[1] < 1 or not np.all(np.isfinite(u)):
        raise invalid(name, f"shape {np.shape(units)}", "finite numbers, one row (or one number) per report")
    return u


def _pair(units_a: ArrayLike, units_b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = _units(units_a, "units_a"), _units(units_b, "units_b")
    if a.shape[0] != b.shape[0]:
        raise invalid("units_b", f"{b.shape[0]} rows", f"one row per row of units_a ({a.shape[0]}), the same reports")
    if a.shape[0] < 3:
        raise invalid("units_a", f"{a.shape[0]} rows", "at least 3 paired reports")
    return a, b


def whitener(cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """``W`` (``d x r``) with ``W^T cov W = I_r`` on the ``r`` non-degenerate directions of
    ``cov`` (eigenvalues above ``RTOL`` times the largest); ``r = 0`` when it has none."""
    sym = (cov + cov.T) / 2.0
    lam, vec = np.linalg.eigh(sym)
    top = float(lam.max()) if lam.size else 0.0
    keep = lam > RTOL * top if top > 0 else np.zeros(lam.size, dtype=bool)
    return vec[:, keep] / np.sqrt(lam[keep])


def _result(statistic: float, df: int, n: int, cross: NDArray[np.float64], a: float, test: str) -> AssociationResult:
    p = float(stats.chi2.sf(statistic, df))
    return AssociationResult(test, statistic, p, a, "wald", 0, df, n, float(np.linalg.norm(cross)))


def _degenerate(ra: int, rb: int) -> None:
    if ra == 0 or rb == 0:
        which = "units_a" if ra == 0 else "units_b"
        raise LdpSimError(f"{which}: got terms that do not vary, expected reports whose unbiased terms vary")


# ------------------------------------------------------------------------------ the tests
def association_from_sums(sums: PairedSums, *, alpha: float = 0.05, test: str = "independence") -> AssociationResult:
    """The Wald test of independence from the sufficient sums alone (module docstring)."""
    a = _alpha(alpha)
    if sums.n < 3:
        raise invalid("sums.n", sums.n, "at least 3 paired reports")
    with np.errstate(over="ignore", invalid="ignore"):
        sa, sb, c = sums.covariances()
    if not (np.all(np.isfinite(sa)) and np.all(np.isfinite(sb)) and np.all(np.isfinite(c))):
        raise invalid("sums", "sums that are not finite", "finite sums of terms of moderate size")
    wa, wb = whitener(sa), whitener(sb)
    _degenerate(wa.shape[1], wb.shape[1])
    statistic = float(sums.n * np.sum((wa.T @ c @ wb) ** 2))
    return _result(statistic, wa.shape[1] * wb.shape[1], sums.n, c, a, test)


def association_test(
    units_a: ArrayLike,
    units_b: ArrayLike,
    *,
    alpha: float = 0.05,
    method: str = "permutation",
    draws: int = DRAWS,
    rng: Any = None,
    test: str = "independence",
) -> AssociationResult:
    """``H0``: the rows of ``units_a`` and ``units_b`` (each report's unbiased term of two
    questions, the same respondents in the same order; a 1-d array is one number per report)
    are independent. ``method``: ``"permutation"`` (exact Monte Carlo p-value over
    ``draws`` permutations of ``units_b``'s rows) or ``"wald"`` (asymptotic chi-square)."""
    a = _alpha(alpha)
    if method not in METHODS:
        raise invalid("method", method, f"one of {', '.join(METHODS)}")
    ua, ub = _pair(units_a, units_b)
    n = ua.shape[0]
    za, zb = ua - ua.mean(axis=0), ub - ub.mean(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        ca, cb = za.T @ za / n, zb.T @ zb / n
    for name, cov in (("units_a", ca), ("units_b", cb)):
        if not np.all(np.isfinite(cov)):
            raise LdpSimError(f"{name}: got terms whose covariance overflows, expected terms of moderate size")
    wa, wb = whitener(ca), whitener(cb)
    _degenerate(wa.shape[1], wb.shape[1])
    xa, xb = za @ wa, zb @ wb  # whitened: x^T x / n = I
    cross = za.T @ zb / n
    statistic = float(np.sum((xa.T @ xb) ** 2) / n)
    df = wa.shape[1] * wb.shape[1]
    if method == "wald":
        return _result(statistic, df, n, cross, a, test)
    b = v.integer(draws, "draws", minimum=19)
    gen = as_generator(rng)
    null = np.empty(b)
    per = max(1, _CHUNK // max(1, n * xb.shape[1]))
    for lo in range(0, b, per):
        hi = min(b, lo + per)
        order = gen.permuted(np.broadcast_to(np.arange(n), (hi - lo, n)), axis=1)
        prod = np.einsum("nr,bns->brs", xa, xb[order], optimize=True)
        null[lo:hi] = np.sum(prod**2, axis=(1, 2)) / n
    tol = _TIE * max(1.0, abs(statistic))
    p = float((1 + np.count_nonzero(null >= statistic - tol)) / (1 + b))
    return AssociationResult(test, statistic, p, a, "permutation", b, df, n, float(np.linalg.norm(cross)))


def group_indicator(groups: ArrayLike) -> tuple[NDArray[np.float64], list[Any]]:
    """The one-hot indicator (``n x g``) of each report's group, and the groups in order."""
    g = np.asarray(groups)
    if g.ndim != 1:
        raise invalid("groups", f"shape {g.shape}", "one group label per report")
    try:
        labels, codes = np.unique(g, return_inverse=True)
    except TypeError:
        raise invalid("groups", groups, "labels of one type (all text or all numbers)") from None
    if labels.size < 2:
        raise invalid("groups", [x.item() if hasattr(x, "item") else x for x in labels], "at least two groups")
    return np.eye(labels.size)[codes.ravel()], labels.tolist()


def group_homogeneity(
    units: ArrayLike,
    groups: ArrayLike,
    *,
    alpha: float = 0.05,
    method: str = "permutation",
    draws: int = DRAWS,
    rng: Any = None,
) -> AssociationResult:
    """``H0``: the reports of every group of ``groups`` (one public label per report: two
    groups for an A/B test, or more) follow one law, tested on what the question's unbiased
    terms ``units`` estimate (module docstring); df ``rank(S_u) (g - 1)``."""
    u = _units(units, "units")
    indicator, _ = group_indicator(groups)
    if indicator.shape[0] != u.shape[0]:
        raise invalid("groups", f"{indicator.shape[0]} labels", f"one label per row of units ({u.shape[0]})")
    return association_test(u, indicator, alpha=alpha, method=method, draws=draws, rng=rng, test="homogeneity")
