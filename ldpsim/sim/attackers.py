"""Fake respondents in a survey replication (``[[attackers]]``), and the server's defences.

An :class:`Attacker` is built once per scenario: its strategy (:mod:`ldpsim.attacks`), its
targets, its number of fake reports ``m = share n / (1 - share)`` and its arrival window. A
:class:`Campaign` is one replication's: it draws every fake report, its sending time and its
latency from the replication's own attack stream (so the honest respondents' draws are those
of the same scenario without attackers), files them under their delivery ticks, and the
engine hands each tick's fake reports to the server after the honest ones. The campaign keeps
what the server cannot see (which reports are fake) to measure, at each checkpoint:

- each attacker's **gain**: the targets' estimated total share minus the estimate from the
  honest reports alone, beside its exact expectation (:mod:`ldpsim.attacks.gain`) at the
  fake share actually received;
- the server's **detection** by the anytime-valid monitors the oracle allows (support size,
  excess), updated at every tick from the statistic only: the log e-value, and the time it
  first crossed ``log(1 / alpha)``;
- with stored reports (``server.keep_reports``), **frequent-pair** detection at the end: the
  shares of fake and honest reports flagged, and each attacker's gain after removing them.

On a numeric question with ``variance = true`` (the two-group protocol), the joint strategies
``output_mean_variance`` and ``input_mean_variance`` move the mean and the variance together
(target ``{ mean, variance }``); the campaign reports the poisoned mean and variance beside
their exact expectations (:func:`ldpsim.attacks.expected_moments`'s identities at the fake
shares each group actually received) with their exact standard errors, and the variance's
gain (rows ``moved_mean``, ``moved_variance``, their ``_se`` and ``gain``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.consistency import norm_sub
from ldpsim.analyst.means import moments_from_sums, square_back, square_range
from ldpsim.attacks import STRATEGIES, ExcessMonitor, SizeMonitor, frequent_itemset, recovered_estimate, strategy
from ldpsim.errors import LdpSimError, show
from ldpsim.mechanisms.base import NotAvailable


@dataclass(frozen=True)
class Attacker:
    """One ``[[attackers]]`` entry, built (module docstring)."""

    name: str
    strategy: str
    #: the answers promoted (indices), or the target value of a numeric question's mean
    targets: Any
    share: float
    count: int
    burst: bool
    start: float
    stop: float
    alpha: float
    #: the exact expected statistic of one fake report
    unit_support: NDArray[np.float64]
    #: the attacked question (0 in a survey of one question)
    question: int = 0
    #: what the strategy moves: "answers", "mean" or "moments" (mean and variance together)
    moves: str = "answers"


def build_attacker(
    spec: Any,
    index: int,
    mech: Any,
    labels: list[str],
    prior: NDArray,
    size: int,
    stop: float,
    question: int = 0,
    kind: str = "categorical",
    two_groups: bool = False,
    question_name: str = "",
) -> Attacker:
    """An attacker from its spec (checked here: targets, the strategy against the mechanism
    and the question's kind; ``two_groups``: whether the question reports by the two-group
    protocol, ``variance = true``)."""
    where = f"attackers[{index}]"
    if spec.strategy not in STRATEGIES:
        raise LdpSimError(f"{where}.strategy: got {spec.strategy!r}, expected one of {', '.join(STRATEGIES)}")
    st = STRATEGIES[spec.strategy]
    named = f"question {question_name!r}" if question_name else "the question"
    if st.moves == "moments":
        if not two_groups:
            raise LdpSimError(
                f"{where}.strategy: got {spec.strategy!r} on {named}, expected a numeric question with variance = true "
                "(set it on the question: its respondents then report in two groups, the answer or its square)"
            )
        targets: Any = _moment_target(spec, where)
    elif two_groups:
        raise LdpSimError(
            f"{where}.strategy: got {spec.strategy!r} on {named} (variance = true), expected output_mean_variance or "
            "input_mean_variance (its reports are the two-group protocol's)"
        )
    elif st.moves == "mean":
        if labels or not hasattr(mech, "report_range"):  # a question without a list of answers, a numeric mechanism
            raise LdpSimError(
                f"{where}.strategy: got {spec.strategy!r}, expected it for a numeric question reported through a "
                f"numeric mechanism (here a {kind} question with {mech!r})"
            )
        if spec.target is None or isinstance(spec.target, dict):
            got = "nothing" if spec.target is None else show(spec.target)
            raise LdpSimError(f"{where}.target: got {got}, expected the value {spec.strategy} moves the mean to")
        targets = float(spec.target)
    else:
        if not labels or not hasattr(mech, "invert"):
            raise LdpSimError(
                f"{where}.strategy: got {spec.strategy!r}, expected a question with a list of answers reported "
                f"through a frequency oracle (here a {kind} question with {mech!r}; numeric questions take "
                "output_mean or input_mean)"
            )
        targets = answer_targets(spec, where, labels, prior)
    count = int(round(spec.share * size / (1.0 - spec.share)))
    if count < 1:
        raise LdpSimError(
            f"{where}.share: got {spec.share}, expected at least one fake report among {size} respondents"
        )
    end = stop if spec.stop is None else spec.stop
    if not spec.arrivals == "burst" and end < spec.start:
        raise LdpSimError(f"{where}.stop: got {end}, expected a time after start = {spec.start}")
    try:
        support = st.unit_support(mech, targets, prior=prior, share=spec.share, rng=np.random.default_rng(0))
    except (NotAvailable, LdpSimError) as exc:
        raise LdpSimError(
            f"{where}.strategy: got {spec.strategy!r} with {mech!r}, which cannot send it ({exc})"
        ) from None
    return Attacker(
        spec.name,
        spec.strategy,
        targets,
        spec.share,
        count,
        spec.arrivals == "burst",
        spec.start,
        end,
        spec.alpha,
        support,
        question,
        st.moves,
    )


def _moment_target(spec: Any, where: str) -> NDArray[np.float64]:
    """A joint strategy's target ``{ mean = ..., variance = ... }``, as ``[mean, variance]``."""
    t = spec.target
    if not isinstance(t, dict):
        raise LdpSimError(
            f"{where}.target: got {'nothing' if t is None else show(t)}, expected {{ mean = ..., variance = ... }} "
            f"(the values {spec.strategy} moves the mean and the variance to)"
        )
    if sorted(t) != ["mean", "variance"]:
        raise LdpSimError(f"{where}.target: got the keys {sorted(t)}, expected exactly mean and variance")
    for key in ("mean", "variance"):
        value = t[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or (key == "variance" and value < 0):
            wanted = "a number of at least 0" if key == "variance" else "a finite number"
            raise LdpSimError(f"{where}.target.{key}: got {show(value)}, expected {wanted}")
    return np.array([float(t["mean"]), float(t["variance"])])


def answer_targets(spec: Any, where: str, labels: list[str], prior: NDArray) -> NDArray[np.int64]:
    """An attacker's ``targets``: labels, or a number r (the r least likely answers under ``prior``)."""
    if spec.targets is None:
        raise LdpSimError(f"{where}.targets: got nothing, expected answer labels or a number of answers to promote")
    if isinstance(spec.targets, int):
        if spec.targets >= len(labels):
            raise LdpSimError(f"{where}.targets: got {spec.targets}, expected fewer than the {len(labels)} answers")
        return np.sort(np.argsort(prior, kind="stable")[: spec.targets]).astype(np.int64)
    lookup = {label: i for i, label in enumerate(labels)}
    unknown = [t for t in spec.targets if t not in lookup]
    if unknown:
        raise LdpSimError(f"{where}.targets: got {unknown[0]!r}, expected one of the answers' labels")
    return np.unique([lookup[t] for t in spec.targets]).astype(np.int64)


class Campaign:
    """One replication's fake reports and the server's defences (module docstring)."""

    def __init__(
        self,
        attackers: tuple[Attacker, ...],
        mech: Any,
        prior: NDArray,
        latency: Any,
        timeline: Any,
        seq: np.random.SeedSequence,
        keep: bool,
        looks: int = 1,
    ) -> None:
        self.attackers = attackers
        self.mech = mech
        self.prior = prior
        self.by_tick: dict[int, list[tuple[int, NDArray[np.float64], NDArray[Any]]]] = {}
        self.fake_stat: list[Any] = [0] * len(attackers)  # each attacker's share of the server's counts
        self.fake_n = [0] * len(attackers)
        self.strategies = [strategy(att.strategy) for att in attackers]
        #: whether the attack promotes answers of a frequency oracle (else a numeric mean)
        self.answers = all(st.moves == "answers" for st in self.strategies)
        #: whether it moves a numeric question's mean and variance (the two-group protocol)
        self.moments = all(st.moves == "moments" for st in self.strategies)
        self.in_flight = 0
        for a, (att, child) in enumerate(zip(attackers, seq.spawn(len(attackers)))):
            rng = np.random.default_rng(child)
            if att.burst or att.stop <= att.start:
                t = np.full(att.count, att.start)
            else:
                t = np.sort(rng.uniform(att.start, att.stop, att.count))
            y = strategy(att.strategy).reports(mech, att.targets, att.count, rng, prior=prior, share=att.share)
            t = t + latency.sample(att.count, rng)
            j = timeline.index(t)
            late = j >= timeline.n
            self.in_flight += int(late.sum())
            for tick in np.unique(j[~late]).tolist():
                here = j == tick
                self.by_tick.setdefault(tick, []).append((a, t[here], y[here]))
        alpha = min(att.alpha for att in attackers)
        self.monitors = []
        for monitor in (SizeMonitor, ExcessMonitor) if self.answers else ():
            try:
                self.monitors.append(monitor(mech, alpha))
            except NotAvailable:
                continue
        self.keep = keep
        self.looks = max(1, int(looks))
        self.itemset_at: float | None = None
        self.sender: list[
            NDArray[np.int16]
        ] = []  # per stored report, in the server's order: -1 honest, else the attacker
        self._seen: Any = 0
        self._seen_n = 0

    # --------------------------------------------------------------- delivery
    def deliver(self, tick: int, server: Any, individual: bool, observe: Any) -> int:
        """The tick's fake reports to the server (after the honest ones); returns how many."""
        parts = self.by_tick.pop(tick, [])
        total = 0
        for a, t, y in parts:
            counts = server.counts.copy()
            if individual:
                before = server.stored
                server.add_reports(t, y)
                if self.keep:
                    self._mark(server.stored - before, a)
                observe(t, y)
            else:
                server.add_counts(np.asarray(self.mech.statistic(y), dtype=np.int64), len(y))
            self.fake_stat[a] = self.fake_stat[a] + (server.counts - counts)  # what the server added, in its layout
            self.fake_n[a] += len(y)
            total += len(y)
        return total

    def mark_honest(self, stored: int) -> None:
        """``stored`` honest reports were just stored by the server."""
        if self.keep and stored:
            self._mark(stored, -1)

    def _mark(self, n: int, who: int) -> None:
        if n:
            self.sender.append(np.full(n, who, dtype=np.int16))

    def tick_end(self, server: Any, time: float) -> None:
        """The monitors see what the server received during the tick (its statistic)."""
        delta = server.counts - self._seen
        n = server.n_received - self._seen_n
        if n and self.monitors:
            for monitor in self.monitors:
                monitor.update(delta, n, time)
        self._seen = server.counts.copy()
        self._seen_n = server.n_received

    # --------------------------------------------------------------- rows
    def rows(self, server: Any, reports: NDArray | None, time: float, final: bool = False) -> list[dict[str, Any]]:
        """The checkpoint's rows (task ``attack``)."""
        mech = self.mech
        total_n = server.n_received
        fake_n = sum(self.fake_n)
        fake_stat = sum(self.fake_stat) + 0 * server.counts
        honest_n = total_n - fake_n
        out: list[dict[str, Any]] = []
        if honest_n <= 0:
            return out
        honest = server.counts - fake_stat
        if self.moments:
            return self._moment_rows(server.counts, fake_stat)
        for a, (att, st) in enumerate(zip(self.attackers, self.strategies)):
            t = att.targets
            truth = st.truth(self.prior, t)
            before = st.estimate(mech, honest, honest_n, t)
            # given the fake reports received (statistic S_f, m of them), E[after - before] over the
            # honest respondents is (m / N) (estimate(S_f / m) - truth) exactly (ldpsim.attacks.gain)
            expected = (fake_n / total_n) * (st.estimate(mech, fake_stat, fake_n, t) - truth) if fake_n else 0.0
            out.append(_row("gain", att.name, st.estimate(mech, server.counts, total_n, t) - before, truth, expected))
            out.append(_row("fake_share", att.name, self.fake_n[a] / total_n, math.nan, att.share))
        if self.answers:  # the weak defence: Norm-Sub on the poisoned estimate, and what it does to the honest one
            poisoned = np.asarray(mech.invert(server.counts / float(total_n)))
            clean = np.asarray(mech.invert(honest / float(honest_n)))
            pois_ns, clean_ns = norm_sub(poisoned), norm_sub(clean)
            for att in self.attackers:
                t = att.targets
                out.append(
                    _row("normsub_gain", att.name, float(pois_ns[t].sum() - clean_ns[t].sum()), math.nan, math.nan)
                )
            law = np.asarray(self.prior, dtype=np.float64)
            cost = float(np.abs(clean_ns - law).sum() - np.abs(clean - law).sum())
            out.append(_row("honest_l1_change", "norm-sub", cost, math.nan, math.nan))
        for monitor in self.monitors:
            at = math.nan if monitor.detected_at is None else monitor.detected_at
            out.append(_row("log_e_value", monitor.name, monitor.log_e, math.nan, monitor.threshold))
            out.append(_row("detected_at", monitor.name, at, math.nan, math.nan))
        if reports is not None and self.sender and self.answers:
            sender = np.concatenate(self.sender)[: len(reports)]
            try:  # at level alpha / looks at each checkpoint: alpha over the whole collection
                found = frequent_itemset(mech, reports, min(att.alpha for att in self.attackers) / self.looks)
            except NotAvailable:
                return out
            flagged = found.flagged
            if self.itemset_at is None and found.items.size:
                self.itemset_at = time
            at = math.nan if self.itemset_at is None else self.itemset_at
            out.append(_row("detected_at", "frequent itemset", at, math.nan, math.nan))
            for a, att in enumerate(self.attackers):  # each attacker's reports flagged
                own = sender == a
                share = float(flagged[own].mean()) if own.any() else math.nan
                out.append(_row("flagged_fake", att.name, share, math.nan, math.nan))
            honest_rows = sender < 0
            share = float(flagged[honest_rows].mean()) if honest_rows.any() else math.nan
            out.append(_row("flagged_honest", "frequent itemset", share, math.nan, math.nan))
            removed = mech.statistic(reports[flagged]) if flagged.any() else np.zeros_like(server.counts)
            kept = recovered_estimate(mech, server.counts, total_n, removed, int(flagged.sum()))
            clean_all = np.asarray(mech.invert(honest / float(honest_n)))
            if final and honest_rows.any():  # the defence's cost on the same honest respondents alone
                alone = reports[honest_rows]
                own = frequent_itemset(mech, alone, min(att.alpha for att in self.attackers) / self.looks).flagged
                out_stat = mech.statistic(alone[own]) if own.any() else np.zeros_like(server.counts)
                plain = np.asarray(mech.invert(mech.statistic(alone) / float(len(alone))))
                cleaned = recovered_estimate(mech, mech.statistic(alone), len(alone), out_stat, int(own.sum()))
                law = np.asarray(self.prior, dtype=np.float64)
                cost = float(np.abs(cleaned - law).sum() - np.abs(plain - law).sum())
                out.append(_row("honest_l1_change", "frequent itemset", cost, math.nan, math.nan))
            for att in self.attackers:
                t = att.targets
                out.append(
                    _row(
                        "recovered_gain",
                        att.name,
                        float(kept[t].sum() - clean_all[t].sum()),
                        float(self.prior[t].sum()),
                        math.nan,
                    )
                )
        return out

    def _moment_rows(self, counts: NDArray[np.float64], fake: NDArray[np.float64]) -> list[dict[str, Any]]:
        """The joint attacks' rows (module docstring). Given the groups' sizes received, the
        poisoned estimates are each group's honest and fake reports pooled: with ``h_g`` honest
        and ``f_g`` fake reports in group g (``n_g`` in all), fake values ``v_1``, ``v_2`` (their
        expectations, for the input attack) and the honest answers' mean ``mu``, second moment
        ``m2`` and one report's variances ``s_1``, ``s_2`` (the question's ``attack_prior``):
        ``E[mu'] = (h_1 mu + f_1 v_1) / n_1``, ``E[m2'] = g^-1((h_2 g(m2) + f_2 v_2) / n_2)``,
        ``Var(mu') = (h_1 s_1 + f_1 variance(v_1)) / n_1^2`` (the fake term for the input attack
        only), ``E[var'] = E[m2'] - E[mu']^2 - Var(mu')``, its variance by the delta method."""
        mech = self.mech
        lo, hi = mech.lo, mech.hi
        q_lo, q_hi = square_range(lo, hi)
        k = (q_hi - q_lo) / (hi - lo)
        mean, m2, s1, s2 = (float(p) for p in np.asarray(self.prior, dtype=np.float64)[:4])
        c = np.asarray(counts, dtype=np.float64)[:4]
        h = c - np.asarray(fake, dtype=np.float64)[:4]
        n1, n2, h1, h2 = c[1], c[3], h[1], h[3]
        out: list[dict[str, Any]] = []
        if not (h1 > 0 and h2 > 0):
            return out
        sum1, sum2, var1, var2 = h1 * mean, h2 * (lo + (m2 - q_lo) / k), h1 * s1, h2 * s2
        for a, (att, st) in enumerate(zip(self.attackers, self.strategies)):
            f1, f2 = (
                (float(x) for x in np.asarray(self.fake_stat[a], dtype=np.float64)[[1, 3]])
                if self.fake_n[a]
                else (0, 0)
            )
            v1, v2 = st.fake_values(mech, att.targets, att.share, self.prior)  # type: ignore[attr-defined]
            sum1, sum2 = sum1 + f1 * v1, sum2 + f2 * v2
            if st.clip_to == "answers":  # type: ignore[attr-defined]
                var1 += f1 * float(mech.variance(v1))
                var2 += f2 * k * k * float(mech.variance(v2))
        e_mean = sum1 / n1
        e_m2 = float(square_back(sum2 / n2, lo, hi))
        mean_var, m2_var = var1 / (n1 * n1), var2 / (n2 * n2)
        e_var = e_m2 - e_mean * e_mean - mean_var
        var_sd = math.sqrt(m2_var + 4.0 * e_mean * e_mean * mean_var)
        after = moments_from_sums(c[0], n1, c[2], n2, lo, hi)
        before = moments_from_sums(h[0], h1, h[2], h2, lo, hi)
        truth = m2 - mean * mean
        honest_e_var = truth - s1 / h1
        total_n = c[1] + c[3]
        for a, att in enumerate(self.attackers):
            out.append(_row("gain", att.name, after[2] - before[2], truth, e_var - honest_e_var))
            out.append(_row("fake_share", att.name, self.fake_n[a] / total_n, math.nan, att.share))
            out.append(_row("moved_mean", att.name, after[0], mean, e_mean))
            out.append(_row("moved_mean_se", att.name, math.sqrt(mean_var), math.nan, math.sqrt(mean_var)))
            out.append(_row("moved_variance", att.name, after[2], truth, e_var))
            out.append(_row("moved_variance_se", att.name, var_sd, math.nan, var_sd))
        return out


def _row(quantity: str, category: str, estimate: float, truth: float, theory: float) -> dict[str, Any]:
    return dict(
        quantity=quantity,
        category=category,
        estimate=estimate,
        ci_low=math.nan,
        ci_high=math.nan,
        truth=truth,
        theory=theory,
        method="",
    )
