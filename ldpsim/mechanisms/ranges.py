"""Range queries over an ordered answer (income brackets, age in years): the share of
respondents whose answer lies in ``[a, b]``, by three methods with exact variances.

The answers are ``0, ..., d - 1``. Every method estimates a vector of *coefficients* ``x``
whose estimate is unbiased with an exact block-diagonal covariance (blocks: disjoint groups
of respondents), and answers a range as an affine function of ``x``: ``M x + r0``. So the
variance of every range answer, and the covariance of any two, is exact: ``sum_b M_b
Sigma_b M_b^T`` (:meth:`RangeMethod.range_covariance`). The covariances are those of
respondents drawn independently from the answers' law (``prior``), conditional on how many
respondents each group received.

- :class:`FlatRanges`: one frequency oracle over the ``d`` answers; a range sums its
  answers' estimates.
- :class:`HierarchicalRanges` (Cormode, Kulkarni, Srivastava 2019; Wang et al. 2019): a
  tree of fan-out ``B`` over the answers (padded to ``B^h``); each respondent reports the
  node of its answer at one level drawn uniformly from the ``h`` levels below the root,
  through a frequency oracle over that level's nodes, at the whole eps. Without
  consistency a range is the sum of its fewest covering nodes (at most ``2 (B - 1)`` per
  level). With ``consistent=True`` the leaves are the weighted least-squares fit of all
  the node estimates under the tree's constraints (a parent is the sum of its children,
  the root is 1), each level weighted by its respondents over its oracle's variance at a
  zero frequency (weights from the design, not the data, so the fit stays linear and
  unbiased); ranges are sums of fitted leaves.
- :class:`HaarRanges` (HaarHRR, Cormode et al. 2019): the Haar coefficients of the
  binary tree, ``c(node) = F(left child) - F(right child)`` (``F``: the share of answers
  below a node); each respondent draws one depth, and reports its node's coefficient sign
  through Hadamard randomized response: a uniform row ``r`` of the Hadamard matrix, and
  ``sign(node) H[r, node]`` kept with probability ``e^eps / (1 + e^eps)``. With ``C = (e^eps
  + 1)/(e^eps - 1)``, ``C H[r, k] s`` is unbiased for ``c_k``; its variance is ``C^2 -
  c_k^2`` and two coefficients of one depth have covariance ``-c_k c_k'`` (the rows are
  orthogonal). Leaves: ``F(leaf) = 2^-h + sum_j (+-) c_j / 2^(h - j)`` along its path.

:func:`optimal_fanout` computes the exact mean variance of a workload of ranges for each
fan-out and returns the best; :func:`ranges_of_length` builds workloads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim import _validate as v
from ldpsim.errors import invalid
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.finite import MatrixMechanism

__all__ = [
    "FlatRanges",
    "HaarRanges",
    "HierarchicalRanges",
    "RangeMethod",
    "optimal_fanout",
    "range_matrix",
    "ranges_of_length",
]


def range_matrix(ranges: ArrayLike, d: int) -> NDArray[np.float64]:
    """``(m, d)`` indicator rows of the inclusive ranges ``[a, b]`` (an ``(m, 2)`` array)."""
    r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    if r.size and (r.min() < 0 or r.max() >= d or np.any(r[:, 0] > r[:, 1])):
        raise invalid("ranges", "a range outside [0, d - 1] or with a > b", f"pairs 0 <= a <= b <= {d - 1}")
    cols = np.arange(d)
    return ((cols >= r[:, :1]) & (cols <= r[:, 1:])).astype(np.float64)


def ranges_of_length(d: int, lengths: ArrayLike) -> NDArray[np.int64]:
    """Every range ``[a, a + L - 1]`` inside ``[0, d - 1]`` for each length ``L``."""
    out = [np.column_stack([np.arange(0, d - L + 1), np.arange(L - 1, d)]) for L in np.atleast_1d(lengths) if L <= d]
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 2), np.int64)


@dataclass
class Collected:
    """What the server holds: each group's statistic and its number of respondents."""

    statistics: list[NDArray[Any]]
    sizes: NDArray[np.int64]


class RangeMethod:
    """Common part: the coefficients, their exact block covariance, the affine range map."""

    d: int

    def collect(self, answers: ArrayLike, rng: np.random.Generator) -> Collected:  # pragma: no cover
        raise NotImplementedError

    def coefficients(self, collected: Collected) -> list[NDArray[np.float64]]:  # pragma: no cover
        raise NotImplementedError

    def blocks(self, prior: ArrayLike, sizes: ArrayLike) -> list[NDArray[np.float64]]:  # pragma: no cover
        """The exact covariance of each block of coefficients at ``sizes`` respondents."""
        raise NotImplementedError

    def range_map(self, ranges: ArrayLike) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:  # pragma: no cover
        """Per block the matrix from its coefficients to the ranges, and the constant term."""
        raise NotImplementedError

    def finite_mechanism(self) -> Any:  # pragma: no cover
        """The whole method as one mechanism over the ``d`` answers: its reports are what a
        respondent sends (the level or depth drawn, and the report at it)."""
        raise NotImplementedError

    def from_counts(self, counts: ArrayLike) -> Collected:  # pragma: no cover
        """What the server holds, from the statistic of :meth:`finite_mechanism`'s reports."""
        raise NotImplementedError

    def expected_sizes(self, n: float) -> NDArray[np.float64]:
        """Respondents per block in expectation (each draws one block uniformly)."""
        return np.full(self.groups, n / self.groups)

    groups: int = 1

    def answer(self, collected: Collected, ranges: ArrayLike) -> NDArray[np.float64]:
        """The estimates of the ranges."""
        maps, r0 = self.range_map(ranges)
        return r0 + sum((m @ x for m, x in zip(maps, self.coefficients(collected))), np.zeros(len(r0)))

    def range_covariance(self, ranges: ArrayLike, prior: ArrayLike, sizes: ArrayLike) -> NDArray[np.float64]:
        """The exact covariance of the range estimates at ``sizes`` respondents per block."""
        maps, r0 = self.range_map(ranges)
        cov = np.zeros((len(r0), len(r0)))
        for m, s in zip(maps, self.blocks(prior, sizes)):
            cov += m @ s @ m.T
        return cov

    def range_variance(self, ranges: ArrayLike, prior: ArrayLike, sizes: ArrayLike) -> NDArray[np.float64]:
        """The diagonal of :meth:`range_covariance`, without forming the whole matrix."""
        maps, r0 = self.range_map(ranges)
        out = np.zeros(len(r0))
        for m, s in zip(maps, self.blocks(prior, sizes)):
            out += np.einsum("ij,jk,ik->i", m, s, m)
        return np.clip(out, 0.0, None)


def _prior(prior: ArrayLike, d: int) -> NDArray[np.float64]:
    p = v.finite_array(prior, "prior", "probabilities")
    if p.shape != (d,) or np.any(p < 0) or not abs(p.sum() - 1.0) < 1e-9:
        raise invalid("prior", f"shape {p.shape}", f"{d} probabilities summing to 1")
    return p


def _answers(answers: ArrayLike, d: int) -> NDArray[np.int64]:
    x = np.asarray(answers)
    if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or (x.size and (x.min() < 0 or x.max() >= d)):
        raise invalid("answers", f"an array of dtype {x.dtype}", f"integers in [0, {d - 1}]")
    return x.astype(np.int64)


def _oracle(oracle: str, eps: float, k: int) -> Any:
    return catalog.build(oracle, eps=eps, k=k)


# --------------------------------------------------------------------- flat
@dataclass
class FlatRanges(RangeMethod):
    """One frequency oracle over the ``d`` answers."""

    d: int
    eps: float
    oracle: str = "oue"
    mechanism: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.d = v.integer(self.d, "d", minimum=2)
        self.mechanism = _oracle(self.oracle, self.eps, self.d)
        self.groups = 1

    def collect(self, answers: ArrayLike, rng: np.random.Generator) -> Collected:
        x = _answers(answers, self.d)
        counts = np.bincount(x, minlength=self.d)
        return Collected([self.mechanism.sample_statistic(counts, rng)], np.array([x.size]))

    def finite_mechanism(self) -> Any:
        return self.mechanism

    def from_counts(self, counts: ArrayLike, n: int | None = None) -> Collected:
        stat = np.asarray(counts)
        return Collected([stat], np.array([int(stat.sum()) if n is None else n]))

    def coefficients(self, collected: Collected) -> list[NDArray[np.float64]]:
        n = int(collected.sizes[0])
        return [self.mechanism.invert(np.asarray(collected.statistics[0], dtype=np.float64) / n)]

    def blocks(self, prior: ArrayLike, sizes: ArrayLike) -> list[NDArray[np.float64]]:
        return [self.mechanism.estimate_covariance(_prior(prior, self.d), float(np.asarray(sizes)[0]))]

    def range_map(self, ranges: ArrayLike) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
        r = range_matrix(ranges, self.d)
        return [r], np.zeros(r.shape[0])


# --------------------------------------------------------------------- hierarchical
@dataclass
class HierarchicalRanges(RangeMethod):
    """A tree of fan-out ``fanout`` with level sampling; ``consistent`` for the fitted leaves."""

    d: int
    eps: float
    fanout: int = 4
    oracle: str = "oue"
    consistent: bool = True
    height: int = field(init=False)
    mechanisms: list[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.d = v.integer(self.d, "d", minimum=2)
        self.fanout = v.integer(self.fanout, "fanout", minimum=2)
        h = 1
        while self.fanout**h < self.d:
            h += 1
        self.height = h
        self.groups = h
        # level l (1..h) has B^l nodes, of which only those holding some answer are reported
        self.mechanisms = [_oracle(self.oracle, self.eps, self.level_nodes(level)) for level in range(1, h + 1)]
        self._fit: tuple[list[NDArray[np.float64]], NDArray[np.float64]] | None = None

    def level_nodes(self, level: int) -> int:
        """Nodes at ``level`` that hold some answer (``ceil(d / B^(h - level))``)."""
        width = self.fanout ** (self.height - level)
        return -(-self.d // width)

    def node_matrix(self, level: int) -> NDArray[np.float64]:
        """``(nodes, d)``: which answers each node of ``level`` holds."""
        width = self.fanout ** (self.height - level)
        return (np.arange(self.d)[None, :] // width == np.arange(self.level_nodes(level))[:, None]).astype(np.float64)

    def collect(self, answers: ArrayLike, rng: np.random.Generator) -> Collected:
        x = _answers(answers, self.d)
        level = rng.integers(0, self.height, size=x.size)
        stats, sizes = [], []
        for i, mech in enumerate(self.mechanisms):
            mine = x[level == i]
            width = self.fanout ** (self.height - (i + 1))
            counts = np.bincount(mine // width, minlength=mech.k)
            stats.append(mech.sample_statistic(counts, rng))
            sizes.append(mine.size)
        return Collected(stats, np.array(sizes, dtype=np.int64))

    def finite_mechanism(self) -> Any:
        """One finite mechanism: a report is ``(level, the level oracle's output)``, output
        ``offset(level) + y``; ``Q[x, offset(l) + y] = Q_l[node_l(x), y] / h`` (each level's
        oracle must be finite: ``randomized_response``, ``hadamard_response``, ...)."""
        blocks = []
        for level, mech in enumerate(self.mechanisms, start=1):
            if getattr(mech, "output_size", None) is None or not hasattr(mech, "log_matrix"):
                raise invalid(
                    "oracle", self.oracle, "a finite frequency oracle (randomized_response, hadamard_response)"
                )
            width = self.fanout ** (self.height - level)
            blocks.append(mech.log_matrix[np.arange(self.d) // width] - math.log(self.height))
        params = {"eps": self.eps, "fanout": self.fanout, "oracle": self.oracle, "k": self.d}
        return _Composed(np.concatenate(blocks, axis=1), self._report, name="hierarchical", params=params)

    def _report(self, x: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        """Each respondent's report: a uniform level, then its oracle's output, after the
        outputs of the levels above."""
        offsets = np.cumsum([0] + [m.output_size for m in self.mechanisms])
        level = rng.integers(0, self.height, size=x.size)
        order = np.argsort(level, kind="stable")  # respondents grouped by level: slices, not masks
        bounds = np.searchsorted(level[order], np.arange(self.height + 1))
        out = np.empty(x.size, dtype=np.int64)
        for i, mech in enumerate(self.mechanisms):
            mine = order[bounds[i] : bounds[i + 1]]
            width = self.fanout ** (self.height - (i + 1))
            out[mine] = offsets[i] + mech.privatize(x[mine] // width, rng)
        return out

    def from_counts(self, counts: ArrayLike) -> Collected:
        c = np.asarray(counts, dtype=np.int64)
        stats, sizes, at = [], [], 0
        for mech in self.mechanisms:
            part = c[at : at + mech.output_size]
            stats.append(part)
            sizes.append(int(part.sum()))
            at += mech.output_size
        return Collected(stats, np.array(sizes, dtype=np.int64))

    def coefficients(self, collected: Collected) -> list[NDArray[np.float64]]:
        out = []
        for mech, stat, n in zip(self.mechanisms, collected.statistics, collected.sizes):
            if n == 0:
                raise invalid("collected", "a level with no respondent", "at least one respondent per level")
            out.append(mech.invert(np.asarray(stat, dtype=np.float64) / int(n)))
        return out

    def blocks(self, prior: ArrayLike, sizes: ArrayLike) -> list[NDArray[np.float64]]:
        p = _prior(prior, self.d)
        return [
            mech.estimate_covariance(self.node_matrix(level) @ p, float(n))
            for level, (mech, n) in enumerate(zip(self.mechanisms, np.asarray(sizes, dtype=float)), start=1)
        ]

    def _weights(self) -> list[float]:
        """Each level's weight: its expected respondents over its oracle's variance at a zero
        frequency (the design's, so that the fit is linear in the estimates)."""
        out = []
        for mech in self.mechanisms:
            zero = np.zeros(mech.k)
            zero[0] = 1.0
            out.append(1.0 / float(mech.estimate_variance(zero, 1.0)[-1] if mech.k > 1 else 1.0))
        return out

    def leaf_fit(self) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
        """The consistent leaves as ``sum_l G_l x_l + c``: the weighted least-squares fit of
        the node estimates with the leaves summing to 1 (Lagrange), per level ``G_l``."""
        if self._fit is None:
            a = [self.node_matrix(level) for level in range(1, self.height + 1)]
            w = self._weights()
            if not all(math.isfinite(x) and x > 0 for x in w):  # variances past the doubles: equal weights
                w = [1.0] * len(w)
            m = sum(wl * al.T @ al for wl, al in zip(w, a))
            minv = np.linalg.inv(m)
            ones = np.ones(self.d)
            u = minv @ ones
            s = float(ones @ u)
            project = np.eye(self.d) - np.outer(u, ones) / s
            self._fit = ([project @ minv @ (wl * al.T) for wl, al in zip(w, a)], u / s)
        return self._fit

    def range_map(self, ranges: ArrayLike) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
        r = range_matrix(ranges, self.d)
        if self.consistent:
            gs, c = self.leaf_fit()
            return [r @ g for g in gs], r @ c
        return self._cover(np.asarray(ranges, dtype=np.int64).reshape(-1, 2)), np.zeros(r.shape[0])

    def _cover(self, ranges: NDArray[np.int64]) -> list[NDArray[np.float64]]:
        """Per level, which nodes make up each range's fewest covering nodes."""
        maps = [np.zeros((len(ranges), self.level_nodes(level))) for level in range(1, self.height + 1)]
        for i, (a, b) in enumerate(ranges):
            lo, hi = int(a), int(b) + 1  # [lo, hi)
            for level in range(self.height, 0, -1):  # leaves up: take the nodes wholly inside
                if lo >= hi:
                    break
                width = self.fanout ** (self.height - level)
                parent = width * self.fanout
                # nodes of this level inside [lo, hi) that are not inside a whole parent in it
                first, last = -(-lo // width), hi // width  # whole nodes: first .. last - 1
                if first >= last:
                    continue
                up_first, up_last = -(-lo // parent), hi // parent
                if level > 1 and up_first < up_last:
                    take = list(range(first, up_first * self.fanout)) + list(range(up_last * self.fanout, last))
                else:
                    take = list(range(first, last))
                maps[level - 1][i, take] = 1.0
                if level > 1 and up_first < up_last:
                    lo, hi = up_first * parent, up_last * parent
                else:
                    lo = hi
        return maps


# --------------------------------------------------------------------- Haar
def _parity(x: NDArray[np.int64]) -> NDArray[np.int64]:
    """Parity of the set bits of non-negative integers below 2^32."""
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    return x & 1


class _Composed(MatrixMechanism):
    """A finite mechanism given by its matrix whose reports are drawn the way a respondent
    makes them (a level or depth, then its report; ``sample(x, rng)``), not by the alias
    tables of the whole matrix: the same law, a few passes over the respondents."""

    def __init__(self, log_matrix: NDArray[np.float64], sample: Any, **kwargs: Any) -> None:
        super().__init__(log_matrix, **kwargs)
        self._sample = sample

    def _privatize_chunk(self, x: NDArray[np.integer], rng: np.random.Generator) -> NDArray[np.int64]:
        return np.asarray(self._sample(np.asarray(x, dtype=np.int64), rng), dtype=np.int64)


@dataclass
class HaarRanges(RangeMethod):
    """HaarHRR: Haar coefficients of the binary tree through Hadamard randomized response."""

    d: int
    eps: float
    height: int = field(init=False)

    def __post_init__(self) -> None:
        self.d = v.integer(self.d, "d", minimum=2)
        self.eps = v.positive(self.eps, "eps")
        self.height = max(1, math.ceil(math.log2(self.d)))
        self.groups = self.height
        self.c = 1.0 / math.tanh(self.eps / 2.0)  # (e^eps + 1)/(e^eps - 1)
        self.keep = 1.0 / (1.0 + math.exp(-self.eps))
        # log keep and log(1 - keep) without rounding keep to 1 at large eps
        self._log_keep = -math.log1p(math.exp(-self.eps))
        self._log_flip = -self.eps - math.log1p(math.exp(-self.eps))

    def collect(self, answers: ArrayLike, rng: np.random.Generator) -> Collected:
        x = _answers(answers, self.d)
        h = self.height
        depth = rng.integers(0, h, size=x.size)
        stats, sizes = [], []
        for j in range(h):
            mine = x[depth == j]
            node = mine >> (h - j)
            sign = 1 - 2 * ((mine >> (h - j - 1)) & 1)  # +1 in the left child
            m = 1 << j  # rows of the Hadamard matrix at this depth
            row = rng.integers(0, m, size=mine.size)
            s = sign * (1 - 2 * _parity(row & node))
            s = np.where(rng.random(mine.size) < self.keep, s, -s)
            stats.append(np.bincount(row, weights=s, minlength=m))
            sizes.append(mine.size)
        return Collected(stats, np.array(sizes, dtype=np.int64))

    def finite_mechanism(self) -> Any:
        """One finite mechanism: a report is ``(depth j, row r, sign s)``, output ``offset(j) +
        2 r + (s < 0)``, with probability ``(1/h)(1/2^j)`` times ``keep`` when ``s`` is the
        answer's coefficient sign times ``H[r, node]``, else ``1 - keep``."""
        h, x = self.height, np.arange(self.d)
        blocks = []
        for j in range(h):
            m = 1 << j
            node = x >> (h - j)
            sign = 1 - 2 * ((x >> (h - j - 1)) & 1)
            r = np.arange(m)
            truth = sign[:, None] * (1 - 2 * _parity(r[None, :] & node[:, None]))  # d x m: the sign sent unflipped
            base = -math.log(h) - j * math.log(2.0)
            plus = np.where(truth > 0, self._log_keep, self._log_flip) + base
            minus = np.where(truth < 0, self._log_keep, self._log_flip) + base
            blocks.append(np.stack([plus, minus], axis=2).reshape(self.d, 2 * m))
        return _Composed(
            np.concatenate(blocks, axis=1), self._report, name="haar", params={"eps": self.eps, "k": self.d}
        )

    def _report(self, x: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        """Each respondent's report: a uniform depth, a uniform Hadamard row below 2^depth,
        the sign kept or flipped; output ``offset(depth) + 2 row + (sign < 0)``."""
        h = self.height
        offsets = np.cumsum([0] + [2 * (1 << j) for j in range(h)])
        depth = rng.integers(0, h, size=x.size)
        rows = rng.integers(0, np.left_shift(1, depth))  # uniform below 2^depth, each its own bound
        node = x >> (h - depth)
        sign = 1 - 2 * ((x >> (h - depth - 1)) & 1)
        s = sign * (1 - 2 * _parity(rows & node))
        s = np.where(rng.random(x.size) < self.keep, s, -s)
        return offsets[depth] + 2 * rows + (s < 0)

    def from_counts(self, counts: ArrayLike) -> Collected:
        c = np.asarray(counts, dtype=np.int64)
        stats, sizes, at = [], [], 0
        for j in range(self.height):
            part = c[at : at + 2 * (1 << j)].reshape(-1, 2)
            stats.append((part[:, 0] - part[:, 1]).astype(np.float64))
            sizes.append(int(part.sum()))
            at += 2 * (1 << j)
        return Collected(stats, np.array(sizes, dtype=np.int64))

    def _hadamard(self, j: int) -> NDArray[np.float64]:
        m = 1 << j
        idx = np.arange(m)
        return (1 - 2 * _parity(idx[:, None] & idx[None, :])).astype(np.float64)

    def coefficients(self, collected: Collected) -> list[NDArray[np.float64]]:
        out = []
        for j, (t, n) in enumerate(zip(collected.statistics, collected.sizes)):
            if n == 0:
                raise invalid("collected", "a depth with no respondent", "at least one respondent per depth")
            out.append(self.c / int(n) * (self._hadamard(j).T @ np.asarray(t, dtype=np.float64)))
        return out

    def true_coefficients(self, prior: ArrayLike) -> list[NDArray[np.float64]]:
        p = np.zeros(1 << self.height)
        p[: self.d] = _prior(prior, self.d)
        out = []
        for j in range(self.height):
            size = 1 << (self.height - j)
            f = p.reshape(-1, size)
            out.append(f[:, : size // 2].sum(axis=1) - f[:, size // 2 :].sum(axis=1))
        return out

    def blocks(self, prior: ArrayLike, sizes: ArrayLike) -> list[NDArray[np.float64]]:
        return [
            (np.float64(self.c) ** 2 * np.eye(cj.size) - np.outer(cj, cj)) / float(n)
            for cj, n in zip(self.true_coefficients(prior), np.asarray(sizes, dtype=float))
        ]

    def range_map(self, ranges: ArrayLike) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
        r = range_matrix(ranges, self.d)
        h = self.height
        leaves = np.arange(self.d)
        maps = []
        for j in range(h):
            size = 1 << (h - j)
            node = leaves >> (h - j)
            sign = np.where((leaves >> (h - j - 1)) & 1, -1.0, 1.0)
            synth = np.zeros((self.d, 1 << j))
            synth[leaves, node] = sign / size
            maps.append(r @ synth)
        return maps, r @ np.full(self.d, 2.0**-h)


def optimal_fanout(
    d: int,
    eps: float,
    n: float,
    ranges: ArrayLike,
    *,
    prior: ArrayLike | None = None,
    oracle: str = "oue",
    consistent: bool = True,
    fanouts: ArrayLike = (2, 3, 4, 5, 6, 8, 16),
) -> tuple[int, dict[int, float]]:
    """The fan-out with the smallest exact mean variance over the workload ``ranges`` (at
    ``n`` respondents split evenly over the levels, answers from ``prior``, default
    uniform), and that mean variance for every fan-out tried."""
    p = np.full(d, 1.0 / d) if prior is None else _prior(prior, d)
    table = {}
    for b in np.atleast_1d(fanouts):
        method = HierarchicalRanges(d, eps, fanout=int(b), oracle=oracle, consistent=consistent)
        table[int(b)] = float(np.mean(method.range_variance(ranges, p, method.expected_sizes(n))))
    best = min(table, key=table.__getitem__)
    return best, table
