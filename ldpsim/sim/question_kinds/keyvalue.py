"""Key-value questions (``kind = "keyvalue"``): each respondent holds some of the ``labels``
(keys, e.g. apps) each with a value in [-1, 1] (e.g. minutes of use, scaled); the analyst
estimates each key's frequency (the share of respondents holding it) and its mean value
among its holders. PCKV (Gu et al. 2020) with randomized response:

1. pad the set of pairs with dummy keys ``d_1 .. d_(l - |S|)`` (value 0) to ``l = padding``
   pairs and sample one pair ``(k, v)`` uniformly from the padded set;
2. discretise the value: ``v* = +1`` with probability ``(1 + v) / 2``, else ``-1``;
3. perturb: keep the key with probability ``a = e^eps1 / (e^eps1 + D - 1)`` (``D = d + l``
   keys), then keep ``v*`` with probability ``p = e^eps2 / (e^eps2 + 1)``; a changed key, drawn
   uniformly from the others, gets a uniform value.

**Exact eps.** A report ``(k, s)`` has probability ``(1/m) sum_pairs P((k, s) | pair)`` over
the ``m = max(|S|, l)`` padded pairs; it is largest, ``(a p + (l - 1) b / 2) / l`` with ``b =
(1 - a)/(D - 1)``, for a padded set of ``l`` pairs holding ``(k, s)``, and smallest,
``min(b / 2, (a (1 - p) + (l - 1) b / 2) / l)``, for a set without key ``k`` or holding it
with the other value. The exact eps is the log of their ratio; the budget's eps is split
between keys and values (``value_share`` of it to ``eps2``, by the stated share of a common
scale) and the scale solved so that the exact eps is the budget's.

**Estimates.** With ``n1``, ``n2`` the reports ``(k, +1)``, ``(k, -1)``: the frequency
``f_k = l ((n1 + n2)/n - b) / (a - b)`` and ``g_k = l (n1 - n2) / (n a (2p - 1))`` are unbiased
(for sets of at most ``l`` pairs; else each holder counts ``l / |S|``: an exact bias the
report states) and linear in the counts, so their covariance is exact; the mean ``m_k =
g_k / f_k`` (clipped to [-1, 1]) is a ratio, with the delta-method variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.estimation import z_value
from ldpsim.errors import LdpSimError, show
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext, Question, WithoutAnswerList
from ldpsim.sim.question_kinds.multiselect import PaddingSampling
from ldpsim.sim.scenario.survey_specs import QuestionSpec, QuestionsScenarioSpec
from ldpsim.sim.servers import Server
from ldpsim.sim.table import TablePopulation
from ldpsim.sim.tasks import Checkpoint, Task, confidence_of

#: most keys of a key-value question without a table (the set law is enumerated)
MAX_KEYS = 16
#: the budgets a key-value question takes: its exact eps is solved by bisection in doubles
EPS_RANGE = (1e-6, 50.0)


def _pckv_parts(eps1: float, eps2: float, keys: int) -> tuple[float, float, float, float]:
    """``a``, ``b``, ``p`` and ``1 - p`` of PCKV with randomized response, written with
    ``e^-eps`` (no overflow whatever eps)."""
    t1, t2 = math.exp(-eps1), math.exp(-eps2)
    a = 1.0 / (1.0 + (keys - 1) * t1)
    b = t1 / (1.0 + (keys - 1) * t1)
    return a, b, 1.0 / (1.0 + t2), t2 / (1.0 + t2)


def pckv_eps(eps1: float, eps2: float, keys: int, padding: int) -> float:
    """The exact eps of PCKV with randomized response over ``keys`` (real and dummy) keys."""
    a, b, p, q = _pckv_parts(eps1, eps2, keys)
    top = (a * p + (padding - 1) * b / 2) / padding
    bottom = min(b / 2, (a * q + (padding - 1) * b / 2) / padding)
    return math.log(top / bottom) if bottom > 0 else math.inf


def pckv_split(eps: float, keys: int, padding: int, value_share: float) -> tuple[float, float]:
    """``(eps1, eps2)`` in the ratio ``1 - value_share : value_share`` whose exact eps is ``eps``."""
    lo, hi = 0.0, 2.0 * eps / min(value_share, 1 - value_share) + 50.0
    for _ in range(200):  # the exact eps grows with the scale
        mid = (lo + hi) / 2
        if pckv_eps(mid * (1 - value_share), mid * value_share, keys, padding) < eps:
            lo = mid
        else:
            hi = mid
    return lo * (1 - value_share), lo * value_share


class PCKV:
    """The engine's mechanism for a key-value question: ``privatize`` takes answers as rows
    ``(mask, v_1, ..., v_d)`` and returns report symbols ``2 key + (value < 0)``; the
    statistic is their counts."""

    aggregate_exact = False

    def __init__(self, d: int, padding: int, eps: float, value_share: float) -> None:
        self.d, self.padding, self.eps = d, padding, eps
        self.keys = d + padding
        self.eps1, self.eps2 = pckv_split(eps, self.keys, padding, value_share)
        self.a, self.b, self.p, _ = _pckv_parts(self.eps1, self.eps2, self.keys)
        self.output_size = self.statistic_size = 2 * self.keys
        self.report_shape: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return (
            f"pckv(d={self.d}, padding={self.padding}, eps={self.eps:.6g}, eps1={self.eps1:.4g}, eps2={self.eps2:.4g})"
        )

    def epsilon(self, delta: float = 0.0) -> float:
        return pckv_eps(self.eps1, self.eps2, self.keys, self.padding)

    def privatize(self, answers: Any, rng: Any = None) -> NDArray[np.int64]:
        """One report per row: the sampled pair's key kept with probability ``a`` and then
        its sign ``+1`` with probability ``1/2 + (p - 1/2) v`` (the value's discretisation
        and the sign's randomized response together: ``p (1 + v)/2 + (1 - p)(1 - v)/2``),
        both read off one uniform; otherwise a symbol uniform over the other keys' ``2 (D -
        1)``. The same law as the three steps of the module's docstring, in one pass."""
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        x = np.asarray(answers, dtype=np.float64).reshape(-1, self.d + 1)
        n = x.shape[0]
        # the sampled pair's key: a uniform slot of the padded set, read from the table of
        # every set (padding and sampling's: the same slots, keys for items)
        key = self._sampler.sample_items(x[:, 0].astype(np.int64), gen)
        u = gen.random(n)
        kept = u < self.a
        out = np.empty(n, dtype=np.int64)
        at = np.flatnonzero(kept)  # the key kept: the sign from the same uniform
        k = key[at]
        value = np.where(k < self.d, x[at, 1 + np.minimum(k, self.d - 1)], 0.0)  # a dummy's value is 0
        out[at] = 2 * k + (u[at] >= self.a * (0.5 + (self.p - 0.5) * value))
        at = np.flatnonzero(~kept)  # another key, uniform, with a uniform sign
        r = gen.integers(0, 2 * (self.keys - 1), size=at.size)
        other = r >> 1
        other += other >= key[at]
        out[at] = 2 * other + (r & 1)
        return out.astype(np.int64, copy=False)

    @property
    def _sampler(self) -> PaddingSampling:
        cached = self.__dict__.get("_padding_sampler")
        if cached is None:
            cached = PaddingSampling(self.d, self.padding, 1.0)
            self.__dict__["_padding_sampler"] = cached
        return cached

    def statistic(self, reports: Any) -> NDArray[np.int64]:
        return np.bincount(np.asarray(reports, dtype=np.int64), minlength=self.output_size)

    def row_law(self, pairs: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per respondent (rows ``(mask, v_1 .. v_d)``) the probabilities of the reports
        ``(k, +1)`` and ``(k, -1)`` of each real key k (``n x d`` each)."""
        masks = pairs[:, 0].astype(np.int64)
        bits = ((masks[:, None] >> np.arange(self.d)) & 1).astype(float)
        slots = np.maximum(bits.sum(axis=1), self.padding)[:, None]
        up = bits * (1 + pairs[:, 1:]) / 2 / slots
        down = bits * (1 - pairs[:, 1:]) / 2 / slots
        rest = self.b / 2 * (1 - up - down)
        a, p = self.a, self.p
        return a * (p * up + (1 - p) * down) + rest, a * (p * down + (1 - p) * up) + rest

    def output_law(self, sets: NDArray[np.int64], weights: NDArray[np.float64], means: NDArray[np.float64]) -> Any:
        """The law of the report symbol when sets ``sets`` have probabilities ``weights`` and
        a held key's value has mean ``means[key]`` (independent of the set), or, with
        ``means`` of shape ``(len(sets), d)``, ``means[s, key]`` in set ``s`` (a table's rows)."""
        bits = ((sets[:, None] >> np.arange(self.d)) & 1).astype(float)
        size = bits.sum(axis=1)
        inv = weights / np.maximum(size, self.padding)
        up = np.zeros(self.keys)  # P(sampled key k, v* = +1), P(.., -1)
        down = np.zeros(self.keys)
        up[: self.d] = inv @ (bits * (1 + means) / 2)
        down[: self.d] = inv @ (bits * (1 - means) / 2)
        for j in range(1, self.padding + 1):
            share = float(inv[size <= self.padding - j].sum())
            up[self.d + j - 1] = down[self.d + j - 1] = share / 2
        a, b, p = self.a, self.b, self.p
        law = np.empty(2 * self.keys)
        total = up + down
        law[0::2] = a * (p * up + (1 - p) * down) + b / 2 * (1 - total)
        law[1::2] = a * (p * down + (1 - p) * up) + b / 2 * (1 - total)
        return law


@dataclass(frozen=True)
class KeyValueQuestion(WithoutAnswerList, Question):
    """A key-value question: the keys, each key's holding probability and mean value."""

    keys: list[str] = field(default_factory=list)
    presence: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    means: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    padding: int = 1
    #: a table's rows ``(mask, v_1 .. v_d)`` (None: the law of ``presence`` and ``means``)
    pairs: NDArray[np.float64] | None = None

    kind: ClassVar[str] = "keyvalue"
    accepts: ClassVar[str] = "PCKV with randomized response (mechanism = { kind = 'pckv' })"

    @property
    def prior(self) -> NDArray[np.float64]:
        return self.presence

    def set_law(self) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The distinct sets of keys and their probabilities (the table's rows, or every set
        of independent keys)."""
        if self.pairs is not None:
            sets, counts = np.unique(self.pairs[:, 0].astype(np.int64), return_counts=True)
            return sets, counts / counts.sum()
        d = len(self.keys)
        sets = np.arange(1 << d, dtype=np.int64)
        bits = ((sets[:, None] >> np.arange(d)) & 1).astype(bool)
        return sets, np.where(bits, self.presence, 1 - self.presence).prod(axis=1)

    def value_law(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
        """What the reports' law depends on: sets, their probabilities and the values' means
        (per key; per row for a table, whose values need not be independent of the set)."""
        if self.pairs is not None:
            rows = self.pairs.shape[0]
            return self.pairs[:, 0].astype(np.int64), np.full(rows, 1.0 / rows), self.pairs[:, 1:]
        sets, pr = self.set_law()
        return sets, pr, self.means

    def ratio_target(self) -> NDArray[np.float64]:
        """What the mean's ratio estimate converges to: ``E[1{k in S} v_k / m] / E[1{k in S}
        / m]`` (``m = max(|S|, l)``): each key's mean among its holders when no set is longer
        than ``l`` or values do not depend on the set."""
        if self.pairs is None:
            return self.means
        masks = self.pairs[:, 0].astype(np.int64)
        bits = ((masks[:, None] >> np.arange(len(self.keys))) & 1).astype(float)
        inv = 1.0 / np.maximum(bits.sum(axis=1), self.padding)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (inv @ (bits * self.pairs[:, 1:])) / (inv @ bits)

    def holders_share(self) -> NDArray[np.float64]:
        """``E[1{k in S} l / max(|S|, l)]``: what the frequency estimate is unbiased for."""
        sets, pr = self.set_law()
        d = len(self.keys)
        bits = ((sets[:, None] >> np.arange(d)) & 1).astype(float)
        return (pr * self.padding / np.maximum(bits.sum(axis=1), self.padding)) @ bits

    @classmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[KeyValueQuestion, TablePopulation | None]:
        at = f"questions[{i}]"
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
            "variance",
        ):
            if getattr(q, key) is not None:
                raise LdpSimError(f"{at}.{key}: got {show(getattr(q, key))}, expected no {key} for a keyvalue question")
        if q.labels is None or len(set(q.labels)) != len(q.labels) or len(q.labels) > MAX_KEYS:
            raise LdpSimError(f"{at}.labels: got {show(q.labels)}, expected at most {MAX_KEYS} distinct keys")
        d = len(q.labels)
        pairs, column = None, None
        if ctx.table is not None:
            for key in ("inclusion", "values"):
                if getattr(q, key) is not None:
                    raise LdpSimError(f"{at}.{key}: got {show(getattr(q, key))}, expected none with a table")
            column = q.column or q.name
            pairs = _pairs(ctx.table, column, list(q.labels), at)
            bits = ((pairs[:, 0].astype(np.int64)[:, None] >> np.arange(d)) & 1).astype(float)
            presence = bits.mean(axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):  # a key nobody holds has no mean: NaN
                means = (bits * pairs[:, 1:]).sum(axis=0) / bits.sum(axis=0)
        else:
            if q.inclusion is None or len(q.inclusion) != d:
                raise LdpSimError(
                    f"{at}.inclusion: got {show(q.inclusion)}, expected each key's holding probability ({d})"
                )
            if q.values is None or len(q.values) != d or any(not -1.0 <= m <= 1.0 for m in q.values):
                raise LdpSimError(f"{at}.values: got {show(q.values)}, expected each key's mean value in [-1, 1] ({d})")
            presence = np.array(q.inclusion, dtype=np.float64)
            means = np.array(q.values, dtype=np.float64)
        keys = dict(q.mechanism)
        if keys.pop("kind", None) != "pckv":
            raise LdpSimError(f"{at}.mechanism.kind: got {show(q.mechanism.get('kind'))}, expected 'pckv'")
        padding = keys.pop("padding", 1)
        share = keys.pop("value_share", 0.5)
        for key, value in keys.items():
            raise LdpSimError(f"{at}.mechanism.{key}: got {show(value)}, expected kind, padding and value_share only")
        if not isinstance(padding, int) or isinstance(padding, bool) or not 1 <= padding <= d:
            raise LdpSimError(f"{at}.mechanism.padding: got {show(padding)}, expected an integer from 1 to {d}")
        if not isinstance(share, float) or not 0.0 < share < 1.0:
            raise LdpSimError(
                f"{at}.mechanism.value_share: got {show(share)}, expected a number strictly between 0 and 1"
            )
        for s in STRATEGIES:
            e = ctx.eps_of[s][i]
            if not EPS_RANGE[0] <= e <= EPS_RANGE[1]:
                raise LdpSimError(
                    f"{at}.mechanism: got eps {e:g} under {s!r}, expected eps in [{EPS_RANGE[0]:g}, {EPS_RANGE[1]:g}] "
                    "for pckv (its two randomized responses are solved for the exact eps)"
                )
        mechanisms = {s: PCKV(d, padding, ctx.eps_of[s][i], share) for s in STRATEGIES}
        return cls(q.name, mechanisms, 0.0, column, list(q.labels), presence, means, padding, pairs), None

    def answers(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        return self.pairs[rows]  # type: ignore[index]

    def draw(self, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Each respondent's row ``(mask, v_1 .. v_d)``: keys held independently, a held key's
        value uniform on ``[m - w, m + w]``, ``w = 1 - |m|`` (mean ``m``, inside [-1, 1])."""
        d = len(self.keys)
        held = rng.random((size, d)) < self.presence
        width = 1 - np.abs(self.means)
        values = self.means + width * (2 * rng.random((size, d)) - 1)
        out = np.empty((size, d + 1))
        out[:, 0] = (held.astype(np.int64) << np.arange(d)).sum(axis=1)
        out[:, 1:] = np.where(held, values, 0.0)
        return out

    def server(self, mechanism: Any, keep_reports: bool, max_reports: int) -> Any:
        return Server(mechanism, False, 0)

    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        return [KeyValueTask(f"{name}:keys", self, mechanism, confidence_of(spec.analyst.tasks))]

    def moments(self, mech: PCKV, n: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Exact variances of the frequency and ``g`` estimates and their covariance, per key."""
        law = mech.output_law(*self.value_law())
        d, ell = len(self.keys), self.padding
        cf = ell / (mech.a - mech.b)
        cg = ell / (mech.a * (2 * mech.p - 1))
        up, down = law[0 : 2 * d : 2], law[1 : 2 * d : 2]
        var_sum = (up + down) - (up + down) ** 2
        var_diff = (up + down) - (up - down) ** 2
        cov_sd = (up - down) - (up + down) * (up - down)
        return cf**2 * var_sum / n, cg**2 * var_diff / n, cf * cg * cov_sd / n

    def mean_variance(self, mech: PCKV, n: float) -> NDArray[np.float64]:
        """Delta-method variance of the mean value ``g / f`` at the truth."""
        vf, vg, cfg = self.moments(mech, n)
        f = self.holders_share()
        mu = self.ratio_target()
        with np.errstate(divide="ignore", invalid="ignore"):  # a key nobody holds has no mean: NaN
            return np.where(f > 0, (vg - 2 * mu * cfg + mu**2 * vf) / f**2, np.nan)

    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        split, _, _ = self.moments(self.mechanisms["split"], size)
        one, _, _ = self.moments(self.mechanisms["one_random"], size / count)
        return [
            {"question": self.name, "category": k, "truth": float(t), "var_split": float(a), "var_one_random": float(b)}
            for k, t, a, b in zip(self.keys, self.presence, split, one)
        ]

    # under a design: each key's share of holders and the mean of its value over all
    # respondents (0 for a non-holder), both linear in the reports (PCKV's f and g), and
    # their ratio, the key's mean value among its holders
    def design_problem(self, mechanism: Any) -> str | None:
        if self.pairs is None:  # pragma: no cover - a design needs a table, which gives pairs
            return "its answers come from its own law, not from the table's rows"
        return None

    def design_labels(self, mechanism: Any) -> list[str]:
        return list(self.keys) + [f"{k} (value)" for k in self.keys]

    def _scales(self, mech: PCKV) -> tuple[float, float]:
        return self.padding / (mech.a - mech.b), self.padding / (mech.a * (2 * mech.p - 1))

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        d = len(self.keys)
        y = np.asarray(reports, dtype=np.int64)
        up = (y[:, None] == 2 * np.arange(d)).astype(float)
        down = (y[:, None] == 2 * np.arange(d) + 1).astype(float)
        cf, cg = self._scales(mechanism)
        return np.hstack([cf * (up + down - mechanism.b), cg * (up - down)])

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        d = len(self.keys)  # a key's term takes two values cf apart; its value's term is -cg, 0 or cg
        cf, cg = self._scales(mechanism)
        return np.concatenate([np.full(d, cf), np.full(d, 2.0 * cg)])

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        pairs = self.pairs[rows]  # type: ignore[index]
        bits = ((pairs[:, 0].astype(np.int64)[:, None] >> np.arange(len(self.keys))) & 1).astype(float)
        share = self.padding * bits / np.maximum(bits.sum(axis=1), self.padding)[:, None]
        return np.hstack([share, share * pairs[:, 1:]])

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        up, down = mechanism.row_law(self.pairs[rows])  # type: ignore[index]
        cf, cg = self._scales(mechanism)
        either = up + down
        return np.hstack([cf**2 * either * (1 - either), cg**2 * (either - (up - down) ** 2)])

    def design_ratios(self, mechanism: Any) -> list[tuple[str, int, int]]:
        d = len(self.keys)
        return [(f"{k} (mean)", d + j, j) for j, k in enumerate(self.keys)]

    def design_noise_covariance(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        up, down = mechanism.row_law(self.pairs[rows])  # type: ignore[index]
        cf, cg = self._scales(mechanism)
        return cf * cg * ((up - down) - (up + down) * (up - down))

    def describe(self) -> str:
        return f"{len(self.keys)} keys with values in [-1, 1]; padding {self.padding}"

    def answers_summary(self) -> Any:
        return f"key-value pairs of {len(self.keys)} keys"

    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        return 3 * len(self.keys)


def _pairs(table: Any, column: str, keys: list[str], at: str) -> NDArray[np.float64]:
    """A table column of key-value pairs, ``key=value`` separated by ``;`` (blank: no key),
    as rows ``(mask, v_1 .. v_d)``; one line naming the row otherwise."""
    try:
        raw = table.column(column)
    except LdpSimError as exc:
        raise LdpSimError(f"{at}.column: {exc}") from None
    index = {k: j for j, k in enumerate(keys)}
    out = np.zeros((len(raw), len(keys) + 1))
    expected = f"pairs key=value separated by ';', keys among {at}.labels, values in [-1, 1], each key once"
    for r, text in enumerate(raw):
        mask = 0
        for part in (p.strip() for p in text.split(";") if p.strip()):
            key, _, value = part.partition("=")
            j = index.get(key.strip())
            try:
                v = float(value)
            except ValueError:
                v = math.nan
            if j is None or not -1.0 <= v <= 1.0 or mask >> j & 1:
                raise LdpSimError(f"{at}.column: {table.where(r, column)}: got {part!r}, expected {expected}")
            mask |= 1 << j
            out[r, 1 + j] = v
        out[r, 0] = mask
    out.setflags(write=False)
    return out


class KeyValueTask(Task):
    """Rows ``key_frequency`` (each key's share of holders: estimate, normal interval from
    the exact standard error at the truth, which is also ``theory``), ``key_bias`` (theory:
    the exact bias from sets of more than ``padding`` keys) and ``key_mean`` (each key's
    mean value among its holders: the ratio estimate clipped to [-1, 1], its delta-method
    standard error as ``theory`` and interval)."""

    kind = "keys"

    def __init__(self, name: str, question: KeyValueQuestion, mechanism: PCKV, confidence: float) -> None:
        self.name = name
        self.q = question
        self.mech = mechanism
        self.z = z_value(confidence)
        self.bias = question.holders_share() - question.presence

    def at_checkpoint(self, checkpoint: Checkpoint) -> list[dict[str, Any]]:
        q, mech = self.q, self.mech
        d, ell = len(q.keys), q.padding
        n = checkpoint.n_received
        nan = np.full(d, np.nan)
        if n == 0:
            f = g = mean = se_f = se_m = nan
        else:
            c = np.asarray(checkpoint.counts, dtype=np.float64) / n
            up, down = c[0 : 2 * d : 2], c[1 : 2 * d : 2]
            f = ell * ((up + down) - mech.b) / (mech.a - mech.b)
            g = ell * (up - down) / (mech.a * (2 * mech.p - 1))
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = np.clip(np.where(f > 0, g / f, np.nan), -1.0, 1.0)
            vf, _, _ = q.moments(mech, n)
            se_f = np.sqrt(vf)
            se_m = np.sqrt(np.clip(q.mean_variance(mech, n), 0.0, None))
        rows = []
        for j, key in enumerate(q.keys):
            rows += [
                dict(
                    quantity="key_frequency",
                    category=key,
                    estimate=float(f[j]),
                    ci_low=float(f[j] - self.z * se_f[j]),
                    ci_high=float(f[j] + self.z * se_f[j]),
                    truth=float(q.presence[j]),
                    theory=float(se_f[j]),
                    method="pckv/normal",
                ),
                dict(
                    quantity="key_bias",
                    category=key,
                    estimate=np.nan,
                    ci_low=np.nan,
                    ci_high=np.nan,
                    truth=np.nan,
                    theory=float(self.bias[j]),
                ),
                dict(
                    quantity="key_mean",
                    category=key,
                    estimate=float(mean[j]),
                    ci_low=float(mean[j] - self.z * se_m[j]),
                    ci_high=float(mean[j] + self.z * se_m[j]),
                    truth=float(q.means[j]),
                    theory=float(se_m[j]),
                    method="pckv/delta",
                ),
            ]
        return rows
