"""k-ary randomized response (Warner's for k = 2), with closed forms and O(n) samplers."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.mechanisms.finite import FiniteMechanism, check_dense


class RandomizedResponse(FiniteMechanism):
    """k-ary randomized response: report the true symbol with probability
    ``e^eps / (k - 1 + e^eps)``, each other symbol with ``1 / (k - 1 + e^eps)`` (THEORY sec. 2).

    Equivalently: keep the input with probability ``q = (e^eps - 1)/(e^eps + k - 1)``,
    otherwise report a uniform symbol out of all ``k``. Both samplers use that form, so
    :meth:`privatize` draws one uniform per client plus one integer per re-drawn client,
    and :meth:`sample_counts` costs O(k) whatever the number of clients. Nothing
    k x k is built unless :attr:`matrix` is asked for, so k = 10^6 works.
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

    def epsilon(self) -> float:
        # log(p_keep / p_other) = eps exactly; the tests check it against the matrix.
        return self.eps

    def _delta_scalar(self, eps: float) -> float:
        # Only the output y = x contributes for a pair (x, x'): (p_keep - e^eps p_other)_+.
        if eps >= self.eps:
            return 0.0
        return self.p_keep * -math.expm1(eps - self.eps)

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
