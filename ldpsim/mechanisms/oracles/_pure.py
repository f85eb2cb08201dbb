"""What the "pure" frequency oracles share: unary encoding, local hashing and subset
selection.

Wang et al. (2017) call an oracle *pure* when every report supports a set of answers, and
the probability that a report supports answer ``x`` is ``p*`` when ``x`` is the reporter's
input and ``q*`` when it is any other answer. The statistic is then the ``k`` support
counts, its support matrix is ``p*`` on the diagonal and ``q*`` elsewhere, and the
unbiased estimate is ``(f - q*) / (p* - q*)`` for the support frequencies ``f``. A class
that mixes this in names the attributes that hold ``p*``, ``q*`` and ``p* - q*`` (each
computed stably in its own way) in :attr:`PureSupport.pure_attributes`; the statistic's
covariance, which differs between the oracles, stays with each of them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.errors import invalid
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.finite import check_dense

__all__ = ["PureSupport"]


class PureSupport(FrequencyOracle):
    """A frequency oracle whose support matrix is ``q* + (p* - q*) I`` (``k x k``)."""

    #: Names of the attributes holding ``p*``, ``q*`` and ``p* - q*``.
    pure_attributes: ClassVar[tuple[str, str, str]]
    #: What the support matrix is called in the message when it is too large to build.
    support_label: ClassVar[str] = "support"

    def _pure(self) -> tuple[float, float, float]:
        a, b, c = self.pure_attributes
        return getattr(self, a), getattr(self, b), getattr(self, c)

    def _support_gap(self) -> float:
        """``p* - q*``, or one line naming the mechanism when it is not positive (eps = 0)."""
        gap = self._pure()[2]
        if not gap > 0.0:
            raise invalid("mechanism", self, "eps > 0 (at eps = 0 the reports carry no information)")
        return gap

    @property
    def support_matrix(self) -> NDArray[np.float64]:
        """``k x k``: ``p*`` on the diagonal, ``q*`` elsewhere (built only when asked)."""
        p_star, q_star, _ = self._pure()
        check_dense(self.k, self.k, self.support_label)
        s = np.full((self.k, self.k), q_star)
        np.fill_diagonal(s, p_star)
        return s

    @property
    def identifiable(self) -> bool:
        return bool(self._pure()[2] > 0.0)

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """``p^T S = q* sum(p) + (p* - q*) p``."""
        _, q_star, gap = self._pure()
        p = np.asarray(p, dtype=np.float64)
        return q_star * p.sum() + gap * p

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        """``S g = q* sum(g) + (p* - q*) g`` (``S`` is symmetric)."""
        _, q_star, gap = self._pure()
        g = np.asarray(g, dtype=np.float64)
        return q_star * g.sum() + gap * g

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(f - q*) / (p* - q*)``: unbiased for the input distribution when ``f`` is the
        support counts divided by the number of reports (Wang et al. 2017)."""
        gap = self._support_gap()
        with np.errstate(over="ignore"):
            return (np.asarray(f, dtype=np.float64) - self._pure()[1]) / gap

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        """One report adds ``(b_x - q*) / (p* - q*)`` to ``n f_x`` with ``b_x`` in {0, 1}: a
        range of ``1 / (p* - q*)``."""
        gap = self._support_gap()
        with np.errstate(over="ignore", divide="ignore"):
            return np.full(self.k, 1.0) / gap
