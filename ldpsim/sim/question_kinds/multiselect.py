"""Check-all-that-apply questions (``kind = "multiselect"``): each respondent's answer is a
set of the ``labels`` (items), drawn item by item with the probabilities ``inclusion`` or
read from a table column (items separated by ``;``). The analyst estimates each item's
share (the fraction of respondents who checked it) and the distribution of the set size.

**Padding and sampling** (Qin et al. 2016; Wang, Li and Jha 2018). A respondent pads the set
with dummy items ``d_1, ..., d_(l - |S|)`` up to ``l = padding`` items (a set of more than
``l`` items is left as it is), samples one item uniformly from the padded set and reports it
through k-ary randomized response over the ``k + l`` symbols (items and distinct dummies) at
``eps0``. Item i's share is estimated as ``l`` times its estimated share among the reports:
unbiased when no set has more than ``l`` items; otherwise each such respondent counts
``l / |S|`` for its items, an exact bias the report states. The set-size law follows from the
dummies: ``P(|S| <= l - j) = l * share(d_j)``.

**Exact privacy.** The report's law is the mixture over the padded set of randomized
response's rows, so its exact eps is ``log((e^eps0 + l - 1) / l)``: the worst pair is a set
holding item a (with dummies, or other items) against one without it, at the report a. The
question's budget eps is that exact eps, so randomized response runs at
``eps0 = log(l (e^eps - 1) + 1)``. This holds because the dummies are distinct symbols: had
every dummy one symbol, the empty set would report it with probability ``e^eps0`` times a
full set's and the exact eps would be ``eps0`` (``tests/contract/test_question_kinds.py``
checks both by brute force over every pair of sets of a few items).

The naive alternative, one yes/no question per item at ``eps / k`` each, is in the budget
table beside it (its exact variance for the same respondents).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.estimation import z_value
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms import catalog
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext, Question, WithoutAnswerList
from ldpsim.sim.question_kinds.categorical import answer_noise, unit_inverse
from ldpsim.sim.scenario.survey_specs import QuestionSpec, QuestionsScenarioSpec
from ldpsim.sim.servers import Server
from ldpsim.sim.table import TablePopulation
from ldpsim.sim.tasks import Checkpoint, Task, confidence_of

#: most items of one check-all-that-apply question (sets are bit masks of an int64)
MAX_ITEMS = 60


def padding_eps0(eps: float, padding: int) -> float:
    """The randomized response eps whose padded-and-sampled report has exact eps ``eps``:
    ``log(l (e^eps - 1) + 1)``, in log space (no overflow at eps in the hundreds)."""
    if eps < 1.0:
        return math.log1p(padding * math.expm1(eps))
    return eps + math.log(padding) + math.log1p(-math.exp(-eps) * (1.0 - 1.0 / padding))


def padded_eps(eps0: float, padding: int) -> float:
    """The exact eps of padding and sampling with distinct dummies, randomized response at
    ``eps0``: ``log((e^eps0 + l - 1) / l)``, in log space."""
    if eps0 < 1.0:
        return math.log1p(math.expm1(eps0) / padding)
    return eps0 - math.log(padding) + math.log1p((padding - 1.0) * math.exp(-eps0))


def _bits(masks: NDArray[np.int64], k: int) -> NDArray[np.bool_]:
    return ((masks[:, None] >> np.arange(k)) & 1).astype(bool)


class PaddingSampling:
    """Padding and sampling over k items with ``padding`` distinct dummies, reporting through
    randomized response over the ``k + padding`` symbols (the engine's mechanism for a
    multiselect question: ``privatize`` takes set bit masks; the statistic is randomized
    response's output counts)."""

    aggregate_exact = False

    def __init__(self, k: int, padding: int, eps: float) -> None:
        self.k, self.padding, self.eps = k, padding, eps
        self.eps0 = padding_eps0(eps, padding)
        self.oracle = catalog.build("randomized_response", eps=self.eps0, k=k + padding)
        self.output_size = self.oracle.output_size
        self.statistic_size = self.oracle.statistic_size
        self.report_shape = self.oracle.report_shape

    def __repr__(self) -> str:
        return f"padding_sampling(k={self.k}, padding={self.padding}, eps={self.eps:.6g}, rr_eps={self.eps0:.6g})"

    def epsilon(self, delta: float = 0.0) -> float:
        return padded_eps(self.eps0, self.padding)

    def sample_items(self, masks: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.int64]:
        """Each respondent's sampled item (``k + j - 1`` for dummy ``d_j``), vectorised: a
        uniform slot of the padded set (exact: each respondent its own bound), then the item
        in that slot, read from a table of every set when there are at most 16 items."""
        masks = np.asarray(masks, dtype=np.int64)
        if self.k <= 16:
            table, sizes = self._slots()
            size = sizes[masks]
            j = rng.integers(0, np.maximum(size, self.padding))
            return table[masks, j]
        bits = _bits(masks, self.k)
        size = bits.sum(axis=1)
        j = rng.integers(0, np.maximum(size, self.padding))
        rank = np.cumsum(bits, axis=1)  # the (j + 1)-th set bit is where rank first reaches j + 1
        item = np.argmax(rank > j[:, None], axis=1)
        return np.where(j < size, item, self.k + (j - size)).astype(np.int64)

    def _slots(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """For every set (bit mask) the item in each slot of its padded set, and its size."""
        cached = self.__dict__.get("_slot_table")
        if cached is None:
            sets = np.arange(1 << self.k, dtype=np.int64)
            bits = _bits(sets, self.k)
            sizes = bits.sum(axis=1).astype(np.int64)
            width = max(self.k, self.padding)
            table = np.empty((sets.size, width), dtype=np.int64)
            for m in range(sets.size):
                items = np.flatnonzero(bits[m])
                pad = self.k + np.arange(max(0, self.padding - items.size))
                row = np.concatenate([items, pad])
                table[m, : row.size] = row
                table[m, row.size :] = -1
            cached = (table, sizes)
            self.__dict__["_slot_table"] = cached
        return cached

    def privatize(self, masks: Any, rng: Any = None) -> NDArray[np.int64]:
        gen = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
        return self.oracle.privatize(self.sample_items(np.asarray(masks), gen), gen)

    def statistic(self, reports: Any) -> NDArray[np.int64]:
        return self.oracle.statistic(reports)

    def symbol_law(self, masks: NDArray[np.int64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """The law of the sampled symbol when sets ``masks`` have probabilities ``weights``."""
        bits = _bits(masks, self.k).astype(float)
        size = bits.sum(axis=1)
        slots = np.maximum(size, self.padding)
        law = np.zeros(self.k + self.padding)
        law[: self.k] = (weights / slots) @ bits
        for j in range(1, self.padding + 1):  # dummy d_j is in the padded set when |S| <= l - j
            law[self.k + j - 1] = float(weights[size <= self.padding - j] @ (1.0 / slots[size <= self.padding - j]))
        return law


@dataclass(frozen=True)
class MultiselectQuestion(WithoutAnswerList, Question):
    """A check-all-that-apply question: the items, each row's set (bit mask) or the items'
    inclusion probabilities, the padding length."""

    items: list[str] = field(default_factory=list)
    masks: NDArray[np.int64] | None = None  # each table row's set (None: drawn from inclusion)
    inclusion: NDArray[np.float64] | None = None
    padding: int = 1

    kind: ClassVar[str] = "multiselect"
    accepts: ClassVar[str] = "padding and sampling over randomized response (mechanism = { kind = 'padding' })"

    @property
    def prior(self) -> NDArray[np.float64]:
        return self.shares()

    def set_law(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The distinct sets and their probabilities (the table's rows, or every set of
        independent items when there are at most 16, else a sample of 2^16 sets)."""
        if self.masks is not None:
            sets, counts = np.unique(self.masks, return_counts=True)
            return sets, counts / counts.sum()
        n = len(self.items)
        if n > 16:
            raise LdpSimError(f"inclusion: got {n} items, expected at most 16 without a table (the exact set law)")
        sets = np.arange(1 << n, dtype=np.int64)
        bits = _bits(sets, n)
        inclusion = np.asarray(self.inclusion, dtype=np.float64)
        pr = np.where(bits, inclusion, 1.0 - inclusion).prod(axis=1)
        return sets, pr

    def shares(self) -> NDArray[np.float64]:
        """Each item's true share (the fraction of respondents whose set holds it)."""
        sets, pr = self.set_law()
        return pr @ _bits(sets, len(self.items)).astype(float)

    def size_cdf(self) -> NDArray[np.float64]:
        """P(|S| <= m) for m = 0 .. padding - 1."""
        sets, pr = self.set_law()
        size = _bits(sets, len(self.items)).sum(axis=1)
        return np.array([pr[size <= m].sum() for m in range(self.padding)])

    def bias(self) -> NDArray[np.float64]:
        """The exact bias of each item's estimate: ``E[1{i in S} (l / max(|S|, l) - 1)]``."""
        sets, pr = self.set_law()
        bits = _bits(sets, len(self.items)).astype(float)
        size = bits.sum(axis=1)
        return (pr * (self.padding / np.maximum(size, self.padding) - 1.0)) @ bits

    @classmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[MultiselectQuestion, TablePopulation | None]:
        at = f"questions[{i}]"
        table = ctx.table
        for key in (
            "range",
            "estimate",
            "bins",
            "bootstrap",
            "loss",
            "buckets",
            "ranges",
            "quantiles",
            "answers",
            "values",
            "variance",
        ):
            if getattr(q, key) is not None:
                raise LdpSimError(
                    f"{at}.{key}: got {show(getattr(q, key))}, expected no {key} for a multiselect question"
                )
        if q.labels is None:
            raise LdpSimError(f"{at}.labels: got nothing, expected the items a respondent may check")
        items = list(q.labels)
        if len(set(items)) != len(items) or len(items) > MAX_ITEMS:
            raise LdpSimError(f"{at}.labels: got {len(items)} items, expected at most {MAX_ITEMS} distinct ones")
        masks = inclusion = None
        column = None
        if table is not None:
            if q.inclusion is not None:
                raise LdpSimError(f"{at}.inclusion: got {show(q.inclusion)}, expected none with a table")
            column = q.column or q.name
            raw = table.column(column)
            index = {name: j for j, name in enumerate(items)}
            masks = np.zeros(len(raw), dtype=np.int64)
            for r, text in enumerate(raw):
                for part in (p.strip() for p in text.split(";") if p.strip()):
                    if part not in index:
                        raise LdpSimError(
                            f"{at}.column: {table.where(r, column)}: got an item not among the labels, expected "
                            f"items of {at}.labels separated by ';'"
                        )
                    masks[r] |= 1 << index[part]
            masks.setflags(write=False)
        else:
            if q.inclusion is None or len(q.inclusion) != len(items):
                raise LdpSimError(
                    f"{at}.inclusion: got {show(q.inclusion)}, expected one probability per item ({len(items)})"
                )
            inclusion = np.array(q.inclusion, dtype=np.float64)
        keys = dict(q.mechanism)
        if keys.pop("kind", None) != "padding":
            raise LdpSimError(f"{at}.mechanism.kind: got {show(q.mechanism.get('kind'))}, expected 'padding'")
        padding = keys.pop("padding", None)
        for key, value in keys.items():
            raise LdpSimError(f"{at}.mechanism.{key}: got {show(value)}, expected only kind and padding")
        probe = cls(q.name, {}, 0.0, column, items, masks, inclusion, 1)
        if padding is None:  # the 90th percentile of the set size, at least 1
            sets, pr = probe.set_law()
            size = _bits(sets, len(items)).sum(axis=1)
            order = np.argsort(size)
            padding = int(max(1, size[order][np.searchsorted(np.cumsum(pr[order]), 0.9)]))
        if not isinstance(padding, int) or isinstance(padding, bool) or not 1 <= padding <= len(items):
            raise LdpSimError(
                f"{at}.mechanism.padding: got {show(padding)}, expected an integer from 1 to {len(items)}"
            )
        mechanisms = {s: PaddingSampling(len(items), padding, ctx.eps_of[s][i]) for s in STRATEGIES}
        return cls(q.name, mechanisms, 0.0, column, items, masks, inclusion, padding), None

    def answers(self, rows: NDArray[np.int64]) -> NDArray[np.int64]:
        return self.masks[rows]  # type: ignore[index]

    def draw(self, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        bits = rng.random((size, len(self.items))) < np.asarray(self.inclusion, dtype=np.float64)
        return (bits.astype(np.int64) << np.arange(len(self.items))).sum(axis=1)

    def server(self, mechanism: Any, keep_reports: bool, max_reports: int) -> Server:
        return Server(mechanism.oracle, keep_reports, max_reports)

    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        return [MultiselectTask(f"{name}:items", self, mechanism, confidence_of(spec.analyst.tasks))]

    def covariance(self, mechanism: PaddingSampling, n: float) -> NDArray[np.float64]:
        """The exact covariance of the estimated shares of items and of the set-size law
        (``padding`` times the estimated symbol shares), ``n`` reports."""
        sets, pr = self.set_law()
        law = mechanism.symbol_law(sets, pr)
        return self.padding**2 * mechanism.oracle.estimate_covariance(law, n)

    # under a design: each item's share, by padding and sampling's estimate (unbiased for
    # E[l 1{i in S} / max(|S|, l)], the share itself when no set is longer than l)
    def design_problem(self, mechanism: Any) -> str | None:
        return None

    def design_labels(self, mechanism: Any) -> list[str]:
        return list(self.items)

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        a, b = unit_inverse(mechanism.oracle)
        k = len(self.items)
        return self.padding * (mechanism.oracle.unit_statistics(reports) @ a[:k].T + b[:k])

    def _symbol_laws(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """Each row's law of the sampled symbol (``k`` items, then the ``padding`` dummies)."""
        k, ell = len(self.items), self.padding
        bits = _bits(self.masks[rows], k).astype(float)  # type: ignore[index]
        size = bits.sum(axis=1)
        slots = np.maximum(size, ell)
        dummies = (size[:, None] <= ell - np.arange(1, ell + 1)[None, :]) / slots[:, None]
        return np.hstack([bits / slots[:, None], dummies])

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        widths = np.asarray(mechanism.oracle.inversion_coefficient_range(), dtype=np.float64)
        return self.padding * widths[: len(self.items)]

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        return self.padding * self._symbol_laws(rows)[:, : len(self.items)]

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        k = len(self.items)
        law = self._symbol_laws(rows)
        own = law[:, :k]  # given the sampled symbol s the term is l e_s plus the oracle's noise
        return self.padding**2 * (law @ answer_noise(mechanism.oracle)[:, :k] + own * (1.0 - own))

    def naive_variance(self, eps: float, n: float) -> NDArray[np.float64]:
        """One yes/no randomized response per item at ``eps / k`` each: each share's exact variance."""
        k = len(self.items)
        gap = math.tanh(eps / (2 * k))  # p - q = (e - 1)/(e + 1), without cancellation
        pi = self.shares() * gap + (1 - gap) / 2
        with np.errstate(divide="ignore", over="ignore"):  # eps / k too small for the doubles: inf
            return np.asarray(pi * (1 - pi) / (n * np.float64(gap) ** 2), dtype=np.float64)

    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        split = np.diag(self.covariance(self.mechanisms["split"], size))
        one = np.diag(self.covariance(self.mechanisms["one_random"], size / count))
        shares = self.shares()
        return [
            {
                "question": self.name,
                "category": item,
                "truth": float(t),
                "var_split": float(a),
                "var_one_random": float(b),
            }
            for item, t, a, b in zip(self.items, shares, split, one)
        ]

    def describe(self) -> str:
        return f"{len(self.items)} items, check all that apply; padding {self.padding}"

    def answers_summary(self) -> Any:
        return f"sets of {len(self.items)} items"

    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        return 3 * len(self.items) + self.padding


class MultiselectTask(Task):
    """Rows ``item`` (each item's share: estimate, normal interval from the plug-in
    covariance, truth, ``theory`` its exact standard error), ``item_bias`` (theory: the
    estimate's exact bias, from sets of more than ``padding`` items), ``item_naive_se`` (theory: the
    exact standard error one yes/no question per item at eps / k would have had) and
    ``set_size_cdf`` (``category`` m: the share of sets of at most m items)."""

    kind = "items"

    def __init__(self, name: str, question: MultiselectQuestion, mechanism: PaddingSampling, confidence: float):
        self.name = name
        self.q = question
        self.mech = mechanism
        self.z = z_value(confidence)
        self.truth = question.shares()
        self.size_truth = question.size_cdf()
        self.bias = question.bias()

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        q, k, ell = self.q, len(self.q.items), self.q.padding
        n = checkpoint.n_received
        if n == 0:
            est = lo = hi = theory = np.full(k + ell, np.nan)
            naive = np.full(k, np.nan)
        else:
            f = np.asarray(checkpoint.counts, dtype=np.float64) / n
            est = ell * self.mech.oracle.invert(f)
            plug = np.sqrt(np.clip(np.diag(ell**2 * self.mech.oracle.plugin_covariance(f, n)), 0.0, None))
            theory = np.sqrt(np.clip(np.diag(q.covariance(self.mech, n)), 0.0, None))
            lo, hi = est - self.z * plug, est + self.z * plug
            naive = np.sqrt(q.naive_variance(self.mech.eps, n))
        rows = []
        for j, item in enumerate(q.items):
            rows.append(
                dict(
                    quantity="item",
                    category=item,
                    estimate=float(est[j]),
                    ci_low=float(lo[j]),
                    ci_high=float(hi[j]),
                    truth=float(self.truth[j]),
                    theory=float(theory[j]),
                    method="padding_sampling/normal",
                )
            )
            rows.append(
                dict(
                    quantity="item_bias",
                    category=item,
                    estimate=np.nan,
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=np.nan,
                    theory=float(self.bias[j]),
                )
            )
            rows.append(
                dict(
                    quantity="item_naive_se",
                    category=item,
                    estimate=np.nan,
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=np.nan,
                    theory=float(naive[j]),
                )
            )
        for m in range(ell):  # P(|S| <= m) = l * share(d_(l - m))
            j = k + (ell - m) - 1
            rows.append(
                dict(
                    quantity="set_size_cdf",
                    category=str(m),
                    estimate=float(est[j]),
                    ci_low=float(lo[j]),
                    ci_high=float(hi[j]),
                    truth=float(self.size_truth[m]),
                    theory=float(theory[j]),
                    method="padding_sampling/normal",
                )
            )
        return rows
