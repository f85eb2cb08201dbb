"""k-ary randomized response (Warner's for k = 2), with closed forms and O(n) samplers."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms.finite import FiniteMechanism, _smallest_eps, check_dense


class RandomizedResponse(FiniteMechanism):
    """k-ary randomized response: report the true symbol with probability
    ``e^eps / (k - 1 + e^eps)``, each other symbol with ``1 / (k - 1 + e^eps)`` (docs/theory.md sec. 2).

    Equivalently: keep the input with probability ``q = (e^eps - 1)/(e^eps + k - 1)``,
    otherwise report a uniform symbol out of all ``k``. Both samplers use that form, so
    :meth:`privatize` draws one uniform per client plus one integer per re-drawn client,
    and :meth:`sample_counts` costs O(k) whatever the number of clients. Nothing
    k x k is built unless :attr:`matrix` is asked for, so k = 10^6 works.

    The privacy and the inversion methods have closed forms: ``delta(t) = p_keep (1 -
    e^(t - eps))`` below eps, its inverse for :meth:`epsilon`, and the inverse
    ``A f = (f - p_other) / q`` with covariance ``(diag(M) - M M^T) / (n q^2)``.
    """

    def __init__(self, k: int, eps: float) -> None:
        k = v.alphabet_size(k, "k")
        eps = v.epsilon(eps, "eps")
        super().__init__(k, k, name="randomized_response", params={"k": k, "eps": eps})
        self.eps = eps
        # log of the keep / other probabilities, stable for eps in the hundreds, k in the millions
        self.log_p_keep = -math.log1p((k - 1) * math.exp(-eps))
        self.log_p_other = -eps + self.log_p_keep
        self.p_keep = math.exp(self.log_p_keep)
        self.p_other = math.exp(self.log_p_other)
        #: probability of keeping the input (else: uniform over all k symbols)
        self.keep = -math.expm1(-eps) * self.p_keep

    @property
    def log_matrix(self) -> NDArray[np.float64]:
        check_dense(self.k, self.k, "randomized-response")
        lm = np.full((self.k, self.k), self.log_p_other)
        np.fill_diagonal(lm, self.log_p_keep)
        return lm

    def _log_row(self, i: int) -> NDArray[np.float64]:
        row = np.full(self.k, self.log_p_other)
        row[i] = self.log_p_keep
        return row

    def _epsilon_scalar(self, delta: float) -> float:
        # log(p_keep / p_other) = eps exactly; the tests check it against the matrix.
        if delta == 0.0:
            return self.eps
        # p_keep (1 - e^(t - eps)) <= delta  <=>  t >= eps + log(1 - delta / p_keep); the
        # closed form is polished to the smallest float t with delta(t) <= delta.
        guess = self.eps + math.log1p(-delta / self.p_keep) if delta < self.p_keep else 0.0
        return _smallest_eps(lambda t: self._delta_scalar(t) <= delta, self.eps, guess)

    def _delta_scalar(self, eps: float) -> float:
        # Only the output y = x contributes for a pair (x, x'): (p_keep - e^eps p_other)_+.
        if eps >= self.eps:
            return 0.0
        return self.p_keep * -math.expm1(eps - self.eps)

    # ----------------------------------------------------------------- inversion, closed forms
    def _keep(self) -> float:
        """The keep probability ``q``, which every inversion divides by."""
        if self.keep <= 0:
            raise invalid("mechanism", self, "eps > 0 (at eps = 0 the reports carry no information)")
        return self.keep

    def invert(self, f: NDArray[np.float64]) -> NDArray[np.float64]:
        return (f - self.p_other) / self._keep()

    def inversion_covariance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        q = self._keep()
        cov = -np.outer(marginal, marginal)
        cov[np.diag_indices_from(cov)] += marginal
        with np.errstate(over="ignore"):  # q near 1e-300: the variance is past any double, inf
            return cov / n / q / q  # q * q would underflow to 0 first

    def inversion_variance(self, marginal: NDArray[np.float64], n: float) -> NDArray[np.float64]:
        q = self._keep()
        with np.errstate(over="ignore"):  # q near 1e-300: the variance is past any double, inf
            var = marginal * (1.0 - marginal) / n / q / q  # q * q would underflow to 0 first
        return np.clip(var, 0.0, None)

    def inversion_std_error(self, marginal: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.sqrt(marginal * (1.0 - marginal) / n) / self._keep()

    def inversion_coefficient_range(self) -> NDArray[np.float64]:
        # A = (I - p_other 1 1^T) / q: row x has 1 - p_other at y = x and -p_other elsewhere.
        return np.full(self.k, 1.0 / self._keep())

    def forward(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.keep * p + self.p_other * p.sum()

    def backward(self, g: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.p_keep * g + self.p_other * (g.sum() - g)

    def possible_outputs(self) -> NDArray[np.bool_]:
        return np.ones(self.k, dtype=bool)

    @property
    def identifiable(self) -> bool:
        return self.keep > 0

    def server_operations(self, n: float) -> float:
        return float(n) + float(self.k)  # one count per report; the inverse is a closed form

    def marginal(self, prior: ArrayLike) -> NDArray[np.float64]:
        p = v.probability_vector(prior, "prior", size=self.k)
        return self.keep * p + self.p_other

    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int64]:
        out = x.astype(np.int64)
        redraw = rng.random(x.size) >= self.keep
        out[redraw] = rng.integers(0, self.k, size=int(np.count_nonzero(redraw)))
        return out

    def _sample_counts(self, n: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        kept = rng.binomial(n, self.keep)
        redrawn = int(n.sum() - kept.sum())
        uniform = np.full(self.k, 1.0 / self.k)
        return kept + rng.multinomial(redrawn, uniform)


def randomized_response(k: int, eps: float) -> RandomizedResponse:
    """k-ary randomized response at privacy level ``eps`` (exact eps-LDP)."""
    return RandomizedResponse(k, eps)
