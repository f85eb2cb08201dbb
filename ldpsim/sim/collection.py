"""The SimPy model of repeated collection (``kind = "collection"``): the same respondents
report period after period, a network (and optionally a shuffler) carries the reports to a
server, the analyst estimates every period's distribution and each change, and every
respondent's privacy spent is accounted after every period.

One replication:

1. **Answers** (shared by every policy: the policies are compared on the same respondents
   and the same answers). Period 0 draws each respondent's answer from the first period's
   distribution; then each period a Markov step (``markov``), a keep-or-redraw step
   (``drift``: keep with probability ``stay``, else redraw from the law that keeps the
   marginal on the drift's path), or nothing (``none``). Vectorised over respondents.
2. **Schedule** (shared): who would report in each period (everyone, or each respondent
   with probability ``rate``).
3. **Arms**: each policy, without and/or with the shuffler, with its own random stream
   (spawned from the replication's SeedSequence). Per period, one SimPy process draws the
   period's reports (the policy decides who sends and what), their send times (uniform over
   the period), losses and latencies, and hands them to the network, which delivers them
   tick by tick (one SimPy event per delivery tick, a :class:`~ldpsim.sim.shuffler.Parcel`
   of numpy columns, never one event per report) to the server or to the shuffler
   (:mod:`ldpsim.sim.shuffler`). The run ends one period after the last period; reports
   still in flight then are not received.
4. **Analyst** (:mod:`ldpsim.analyst.longitudinal`): per period and answer the estimate and
   its interval, and the change from the period before; paired across periods when the
   server knows senders, anonymous (covariance 0) behind a shuffler.
5. **Privacy** per respondent after each period, computed per *privacy class* (respondents
   with the same history of reports share one value, computed once per run in
   :func:`privacy_tables`): plain and filter policies spend by the number of reports sent
   (pure eps: the sum; the exact composition of the mechanism at ``collection.delta``, with
   the basic and advanced bounds beside it); memoisation by the reports of each distinct
   answer (:meth:`ldpsim.mechanisms.memo.Memoised.epsilon_history`). Lost reports count:
   they left the device.

Every number is one row of the results table (:data:`ldpsim.report.collection.COLUMNS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
import simpy
from numpy.typing import NDArray

from ldpsim.analyst.estimation import z_value
from ldpsim.analyst.longitudinal import change_estimates, paired_covariance, period_estimates, report_estimators
from ldpsim.attacks.detect import ExcessMonitor
from ldpsim.attacks.strategies import STRATEGIES
from ldpsim.errors import LdpSimError
from ldpsim.privacy import bound_epsilon, kov_bound_heterogeneous
from ldpsim.privacy.accountant import Accountant
from ldpsim.privacy.shuffle import shuffle_epsilon
from ldpsim.report.collection import COLUMNS
from ldpsim.sim.scenario.collection import CollectionScenario, DriftSpec, MarkovSpec, Policy, RandomScheduleSpec
from ldpsim.sim.shuffler import Parcel, Shuffler

#: Delivery ticks per period (the SimPy clock's resolution; delivery stamps stay exact).
TICKS_PER_PERIOD = 24
#: Most privacy classes per period written one row each (beyond, only the summaries).
MAX_CLASS_ROWS = 64


# --------------------------------------------------------------------- answers and schedule
def draw_answers(sc: CollectionScenario, rng: np.random.Generator) -> NDArray[np.int64]:
    """``periods x n``: every respondent's answer in every period."""
    n, T, k = sc.size, sc.periods, len(sc.labels)
    dtype = np.uint8 if k <= 256 else np.int64
    out = np.empty((T, n), dtype=dtype)
    out[0] = _draw(sc.start, n, rng)
    ch = sc.spec.collection.change
    for t in range(1, T):
        prev = out[t - 1]
        if isinstance(ch, MarkovSpec):
            cum = np.cumsum(sc.transition, axis=1)  # type: ignore[arg-type]
            u = rng.random(n)
            nxt = np.empty(n, dtype=dtype)
            for s in range(k):  # one vectorised draw per current answer
                idx = np.flatnonzero(prev == s)
                nxt[idx] = np.minimum(np.searchsorted(cum[s], u[idx], side="right"), k - 1)
            out[t] = nxt
        elif isinstance(ch, DriftSpec):
            move = rng.random(n) >= ch.stay
            nxt = prev.copy()
            nxt[move] = _draw(sc.redraw[t], int(move.sum()), rng)  # type: ignore[index]
            out[t] = nxt
        else:
            out[t] = prev
    return out


def _draw(p: NDArray[np.float64], size: int, rng: np.random.Generator) -> NDArray[np.int64]:
    cum = np.cumsum(p)
    return np.minimum(np.searchsorted(cum / cum[-1], rng.random(size), side="right"), p.size - 1)


def draw_schedule(sc: CollectionScenario, rng: np.random.Generator) -> NDArray[np.bool_]:
    """``periods x n``: whether each respondent would report in each period."""
    s = sc.spec.collection.schedule
    if isinstance(s, RandomScheduleSpec):
        return rng.random((sc.periods, sc.size)) < s.rate
    return np.ones((sc.periods, sc.size), dtype=bool)


def sends(
    policy: Policy, schedule: NDArray[np.bool_], rng: np.random.Generator
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Who sends in each period under the policy, and which of those reports is the one
    lowered last report: the schedule, thinned by the policy's ``rate``, cut by the filter
    after the reports it admits (plus the lowered one, with ``exhausted = "lower"``)."""
    rate = float(policy.spec.rate)
    out = schedule & (rng.random(schedule.shape) < rate) if rate < 1 else schedule
    none = np.zeros_like(out)
    if policy.allowed is None:
        return out, none
    cum = np.cumsum(out, axis=0)
    low = out & (cum == policy.allowed + 1) if policy.lowered is not None else none
    return out & ((cum <= policy.allowed) | low), low


# --------------------------------------------------------------------- privacy per class
@dataclass(frozen=True)
class PrivacyTable:
    """A policy's privacy spent as a function of its class: for plain and filter policies
    indexed by the number of reports sent (0..periods), pure eps (``pure``), the exact
    composition of the mechanism at delta (``exact``), basic and advanced composition at
    delta; for memoisation the eps of c reports of one value (``per_value``, c = 0..periods)."""

    per_report: float
    pure: NDArray[np.float64] | None = None
    exact: NDArray[np.float64] | None = None
    basic: NDArray[np.float64] | None = None
    advanced: NDArray[np.float64] | None = None
    per_value: NDArray[np.float64] | None = None
    longitudinal: float = math.nan
    budget: float = math.nan
    #: a filter's lowered last report: its eps, and the exact and advanced composition of
    #: the admitted full reports and it at delta
    lowered: float = 0.0
    exact_lowered: float = math.nan
    advanced_lowered: float = math.nan


def privacy_tables(sc: CollectionScenario) -> dict[str, PrivacyTable]:
    """Each policy's privacy by class, computed once per run (shared by replications)."""
    T, delta = sc.periods, float(sc.spec.collection.delta)
    out: dict[str, PrivacyTable] = {}
    for index, p in enumerate(sc.policies):
        eps1 = float(p.mechanism.epsilon())
        if p.memo is not None:
            per_value = np.zeros(T + 1)
            per_value[1:] = [float(p.memo.epsilon_reports(c)) for c in range(1, T + 1)]
            out[p.name] = PrivacyTable(eps1, per_value=per_value, longitudinal=float(p.memo.epsilon_longitudinal()))
            continue
        k = np.arange(T + 1, dtype=np.float64)  # report counts 0..T
        exact = np.zeros(T + 1)
        g = p.mechanism.guarantee()
        for c in range(1, T + 1):  # one group of c reports each: the mechanism's loss law is built once per count,
            # not once per report (c separate additions made T periods cost T^2 / 2 loss laws)
            exact[c] = _composed(
                lambda c=c: Accountant().add(g, times=c).epsilon(delta), "collection.periods", T, f"{c} report(s)"
            )
        advanced = np.array([0.0] + [float(bound_epsilon("drv", eps1, 0.0, c, delta)) for c in range(1, T + 1)])
        budget = float(p.spec.budget_eps) if p.spec.budget_eps is not None else math.nan
        low: dict[str, Any] = {}  # floats: the lowered report's fields of PrivacyTable
        if p.lowered is not None:
            a = int(p.allowed)  # type: ignore[arg-type]
            low["lowered"] = float(p.lowered.epsilon())
            full = a * eps1 + low["lowered"]
            composed = _composed(
                lambda: Accountant().add(g, times=a).add(p.lowered.guarantee()).epsilon(delta),
                f"policies[{index}].budget_eps",
                p.spec.budget_eps,
                f"{a} reports and the lowered one",
            )
            low["exact_lowered"] = min(full, composed)
            low["advanced_lowered"] = min(
                full, kov_bound_heterogeneous([eps1] * a + [low["lowered"]], [0.0] * (a + 1), delta)[0]
            )
        out[p.name] = PrivacyTable(
            eps1,
            pure=k * eps1,
            exact=np.minimum(exact, k * eps1),
            basic=k * eps1,
            advanced=advanced,
            budget=budget,
            **low,
        )
    return out


def _composed(compute: Any, key: str, value: Any, what: str) -> float:
    """An exact composition, or one line naming the scenario key behind it when it is
    beyond the accountant's lattice (its internal ``step``), not that parameter."""
    try:
        return float(compute())
    except LdpSimError as exc:
        if not str(exc).startswith("step:"):
            raise
        raise LdpSimError(
            f"{key}: got {value!r}, expected a collection whose exact composition at collection.delta "
            f"the accountant can compute ({what} of the mechanism need more lattice points than it "
            f"holds: {str(exc).partition('expected ')[2]}); fewer periods or another mechanism"
        ) from None


def central_epsilon(eps0: float, batch: int, delta: float) -> float:
    """The central eps at delta of a shuffled batch of ``batch`` eps0-LDP reports."""
    return float(shuffle_epsilon(eps0, int(batch), delta)) if batch >= 1 else math.nan


# --------------------------------------------------------------------- one arm
class _Server:
    """Collects parcels; keeps per-period output counts and, when senders are known, each
    respondent's report of each period."""

    def __init__(self, periods: int, n: int, m: int, known: bool) -> None:
        self.counts = np.zeros((periods, m), dtype=np.int64)
        self.reports = np.full((periods, n), -1, dtype=np.int16 if m < 32_000 else np.int64) if known else None
        #: per attacker: the fake reports received, per period and output
        self.fake: list[NDArray[np.int64]] = []
        self.delay: list[NDArray[np.float64]] = []
        self.waited: list[NDArray[np.float64]] = []
        self.period: list[NDArray[np.int64]] = []

    def receive(self, parcel: Parcel) -> None:
        if not len(parcel):
            return
        np.add.at(self.counts, (parcel.period, parcel.report), 1)
        if self.reports is not None and parcel.sender is not None:
            known = parcel.sender >= 0  # fake reports (sender -1) belong to no respondent
            self.reports[parcel.period[known], parcel.sender[known]] = parcel.report[known]
        self.delay.append(parcel.arrived - parcel.sent)
        self.waited.append(parcel.waited if parcel.waited.size else np.zeros(len(parcel)))
        self.period.append(parcel.period)


def run_arm(
    sc: CollectionScenario,
    policy: Policy,
    shuffled: bool,
    answers: NDArray[Any],
    sent: NDArray[np.bool_],
    seed: np.random.SeedSequence,
    low: NDArray[np.bool_] | None = None,
) -> tuple[_Server, Any]:
    """Simulate one arm in which ``sent`` (periods x n) say who sends when (``low``: which of
    those reports go through the policy's lowered mechanism; they are coded ``m + y``);
    returns the server and the shuffler's log."""
    n, T = sc.size, sc.periods
    L = float(sc.spec.collection.period)
    dt = L / TICKS_PER_PERIOD
    end = (T + 1) * L
    draws, net_rng, shuf_rng = (np.random.default_rng(s) for s in seed.spawn(3))
    # fake respondents: their own stream (the fourth child), so the honest draws are unchanged
    fake_rng = np.random.default_rng(seed.spawn(1)[0]) if sc.attackers else None
    mech = policy.mechanism
    env = simpy.Environment()
    m = mech.statistic_size
    server = _Server(T, n, m * (2 if policy.lowered is not None else 1), known=not shuffled)
    server.fake = [np.zeros((T, server.counts.shape[1]), dtype=np.int64) for _ in sc.attackers]
    sh = sc.spec.shuffler
    shuffler = Shuffler(env, server.receive, shuf_rng, batch=sh.batch, window=sh.window) if shuffled and sh else None
    deliver = shuffler.put if shuffler is not None else server.receive
    memo_table = None
    if policy.memo is not None:  # one permanent response per respondent and answer
        k = len(sc.labels)
        memo_table = policy.memo.permanent_response(np.tile(np.arange(k), n), draws).reshape(n, k)
    loss = float(sc.spec.network.loss)

    def period(t: int):
        yield env.timeout(t * L - env.now if t * L > env.now else 0.0)
        who = np.flatnonzero(sent[t])
        x = answers[t, who].astype(np.int64)
        if memo_table is not None:
            y = policy.memo.instantaneous_response(memo_table[who, x], draws)
        else:
            y = mech.privatize(x, draws)
        y = np.asarray(y, dtype=np.int64)
        if low is not None and policy.lowered is not None:
            last = np.flatnonzero(low[t, who])
            if last.size:
                y[last] = m + np.asarray(policy.lowered.privatize(x[last], draws), dtype=np.int64)
        kept = net_rng.random(who.size) >= loss if loss > 0 else np.ones(who.size, dtype=bool)
        times = t * L + L * net_rng.random(who.size)
        arrive = times + sc.latency.sample(who.size, net_rng)
        keep = kept & (arrive <= end)
        who, y, times, arrive = who[keep], y[keep], times[keep], arrive[keep]
        if fake_rng is not None:  # fake reports of the period (sender -1), sent through the same network
            who, y, times, arrive = _with_fakes(sc, t, L, end, mech, fake_rng, server, who, y, times, arrive)
        tick = np.minimum(np.ceil(arrive / dt - 1e-9).astype(np.int64), int(round(end / dt)))
        order = np.argsort(tick, kind="stable")
        tick, who, y, times, arrive = tick[order], who[order], y[order], times[order], arrive[order]
        bounds = np.flatnonzero(np.diff(tick)) + 1
        starts = np.concatenate([[0], bounds])
        stops = np.concatenate([bounds, [tick.size]])
        for a, b in zip(starts, stops):
            if a == b:
                continue
            when = tick[a] * dt
            if when > env.now:
                yield env.timeout(when - env.now)
            deliver(Parcel(y[a:b], np.full(b - a, t), who[a:b], times[a:b], arrive[a:b]))

    for t in range(T):
        env.process(period(t))
    env.run()  # every delivery is at or before the end (later arrivals were dropped above)
    if shuffler is not None:
        shuffler.flush()
    return server, (shuffler.log if shuffler is not None else None)


def _with_fakes(sc, t, L, end, mech, rng, server, who, y, times, arrive):
    """The period's reports with every attacker's fake ones appended (sender -1); each
    attacker's received fake reports are counted in ``server.fake``."""
    for a, (spec, targets, count) in enumerate(sc.attackers):
        stop = sc.periods if spec.stop is None else spec.stop
        if not spec.start - 1 <= t < stop:
            continue
        fy = np.asarray(
            STRATEGIES[spec.strategy].reports(mech, targets, count, rng, prior=sc.path_expected[t], share=spec.share),
            dtype=np.int64,
        )
        ft = t * L + L * rng.random(count)
        fa = ft + sc.latency.sample(count, rng)
        ok = fa <= end
        fy, ft, fa = fy[ok], ft[ok], fa[ok]
        np.add.at(server.fake[a], (np.full(fy.size, t), fy), 1)
        who = np.concatenate([who, np.full(fy.size, -1, dtype=who.dtype)])
        y, times, arrive = np.concatenate([y, fy]), np.concatenate([times, ft]), np.concatenate([arrive, fa])
    return who, y, times, arrive


# --------------------------------------------------------------------- one replication
def run_replication(
    sc: CollectionScenario, index: int, seed: int, shared: dict[str, PrivacyTable] | None = None
) -> pd.DataFrame:
    """Every arm of one replication, as result rows (answers and schedule shared by the arms)."""
    tables = shared if shared is not None else privacy_tables(sc)
    root = np.random.SeedSequence(seed, spawn_key=(index,))
    answer_seed, schedule_seed, policy_seed, *arm_seeds = root.spawn(3 + len(sc.arms))
    answers = draw_answers(sc, np.random.default_rng(answer_seed))
    schedule = draw_schedule(sc, np.random.default_rng(schedule_seed))
    # who sends under each policy: the same with and without the shuffler
    sent_by = {
        p.name: sends(p, schedule, np.random.default_rng(s))
        for p, s in zip(sc.policies, policy_seed.spawn(len(sc.policies)))
    }
    k = len(sc.labels)
    truth = np.stack([np.bincount(answers[t], minlength=k) for t in range(sc.periods)]) / sc.size
    rows: list[dict[str, Any]] = []
    for (policy, shuffled), s in zip(sc.arms, arm_seeds):
        sent, low = sent_by[policy.name]
        server, log = run_arm(sc, policy, shuffled, answers, sent, s, low)
        base = {"replication": index, "policy": policy.name, "shuffled": shuffled}
        rows += _estimate_rows(sc, policy, server, truth, base)
        rows += _attack_rows(sc, policy, server, truth, base)
        rows += _detection_rows(sc, policy, server, base)
        rows += _privacy_rows(sc, policy, tables[policy.name], answers, sent, low, base)
        rows += _latency_rows(sc, server, sent, base)
        if log is not None:
            rows += _central_rows(sc, tables[policy.name], log, base)
    frame = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in frame.columns:
            frame[col] = np.nan
    return frame[COLUMNS]


def _row(
    base: dict[str, Any], period: int, time: float, quantity: str, category: str, estimate: float, **more: Any
) -> dict[str, Any]:
    return {
        **base,
        "period": period,
        "time": time,
        "quantity": quantity,
        "category": category,
        "estimate": estimate,
        **more,
    }


def _estimate_rows(
    sc: CollectionScenario, policy: Policy, server: _Server, truth: NDArray[np.float64], base: dict[str, Any]
) -> list[dict[str, Any]]:
    w = report_estimators(policy.mechanism)
    if policy.lowered is not None:  # a lowered report y is coded m + y: its own rows
        w = np.vstack([w, report_estimators(policy.lowered)])
    est = period_estimates(w, server.counts)
    conf = float(sc.spec.analyst.confidence)
    lo, hi = est.interval(conf)
    cov = paired_covariance(w, server.reports) if server.reports is not None else None
    chg, chg_var = change_estimates(est, cov)
    z = z_value(conf)
    L = float(sc.spec.collection.period)
    rows = []
    for t in range(sc.periods):
        for j, label in enumerate(sc.labels):
            rows.append(
                _row(
                    base,
                    t + 1,
                    (t + 1) * L,
                    "frequency",
                    label,
                    est.estimate[t, j],
                    ci_low=lo[t, j],
                    ci_high=hi[t, j],
                    truth=truth[t, j],
                    theory=sc.path_expected[t, j],
                    n=est.n[t],
                )
            )
            if t >= 1:
                half = (
                    math.nan if math.isnan(chg_var[t - 1, j]) else z * math.sqrt(chg_var[t - 1, j])
                )  # inf past the doubles
                c = float(chg[t - 1, j])  # a Python float: inf - inf past the doubles is NaN, not a warning
                rows.append(
                    _row(
                        base,
                        t + 1,
                        (t + 1) * L,
                        "change",
                        label,
                        c,
                        ci_low=c - half,
                        ci_high=c + half,
                        truth=truth[t, j] - truth[t - 1, j],
                        theory=sc.path_expected[t, j] - sc.path_expected[t - 1, j],
                        n=min(est.n[t], est.n[t - 1]),
                    )
                )
    return rows


def _attack_rows(
    sc: CollectionScenario, policy: Policy, server: _Server, truth: NDArray[np.float64], base: dict[str, Any]
) -> list[dict[str, Any]]:
    """Per attacker and period: the gain (the targets' estimated share from all the reports
    minus that from the honest ones alone) beside its exact expectation given the fake
    reports received, and the fake share received."""
    if not sc.attackers:
        return []
    w = report_estimators(policy.mechanism)
    if policy.lowered is not None:
        w = np.vstack([w, report_estimators(policy.lowered)])
    fake_all = np.sum(server.fake, axis=0)
    poisoned = period_estimates(w, server.counts).estimate
    honest = period_estimates(w, server.counts - fake_all).estimate
    fake_only = period_estimates(w, fake_all).estimate  # the fake reports' own estimate per period
    n_all = server.counts.sum(axis=1).astype(np.float64)
    n_fake = fake_all.sum(axis=1).astype(np.float64)
    L = float(sc.spec.collection.period)
    rows = []
    for a, (spec, targets, _) in enumerate(sc.attackers):
        for t in range(sc.periods):
            truth_t = float(truth[t, targets].sum())
            if n_fake[t] > 0 and n_all[t] > n_fake[t]:
                share = n_fake[t] / n_all[t]
                gain = float(poisoned[t, targets].sum() - honest[t, targets].sum())
                theory = share * (float(fake_only[t, targets].sum()) - truth_t)
            else:
                share, gain, theory = 0.0, 0.0, 0.0
            rows.append(_row(base, t + 1, (t + 1) * L, "gain", spec.name, gain, truth=truth_t, theory=theory))
            mine = float(server.fake[a][t].sum()) / n_all[t] if n_all[t] > 0 else math.nan
            rows.append(_row(base, t + 1, (t + 1) * L, "fake_share", spec.name, mine, theory=spec.share))
    return rows


def _detection_rows(
    sc: CollectionScenario, policy: Policy, server: _Server, base: dict[str, Any]
) -> list[dict[str, Any]]:
    """With attackers: the excess monitor (ldpsim.attacks.ExcessMonitor) over the periods'
    counts, each report's rate of each output bounded by its largest honest rate; a report
    is drawn afresh given everything before it except under memoisation (whose reports of one
    respondent share the permanent response), where nothing is monitored."""
    if not sc.attackers or policy.memo is not None:
        return []
    mats = [np.asarray(policy.mechanism.matrix, dtype=np.float64)]
    if policy.lowered is not None:
        mats.append(np.asarray(policy.lowered.matrix, dtype=np.float64))
    bound = np.concatenate([m.max(axis=0) for m in mats])
    alpha = min(float(spec.alpha) for spec, _, _ in sc.attackers)
    monitor = ExcessMonitor(None, alpha, bound=bound)
    L = float(sc.spec.collection.period)
    rows = []
    for t in range(sc.periods):
        n = int(server.counts[t].sum())
        if n:
            monitor.update(server.counts[t], n, float(t + 1))
        at = math.nan if monitor.detected_at is None else monitor.detected_at
        rows.append(_row(base, t + 1, (t + 1) * L, "log_e_value", "excess", monitor.log_e, theory=monitor.threshold))
        rows.append(_row(base, t + 1, (t + 1) * L, "detected_at", "excess", at))
    return rows


def _privacy_rows(
    sc: CollectionScenario,
    policy: Policy,
    table: PrivacyTable,
    answers: NDArray[Any],
    sent: NDArray[np.bool_],
    low: NDArray[np.bool_],
    base: dict[str, Any],
) -> list[dict[str, Any]]:
    L = float(sc.spec.collection.period)
    n, k = sc.size, len(sc.labels)
    rows = []
    reports = np.zeros(n, dtype=np.int64)  # full reports sent so far
    lowered = np.zeros(n, dtype=bool)  # whether the lowered last report was sent
    per_value = np.zeros((n, k), dtype=np.int64) if table.per_value is not None else None
    for t in range(sc.periods):
        reports += sent[t] & ~low[t]
        lowered |= low[t]
        if per_value is not None:
            who = np.flatnonzero(sent[t])
            np.add.at(per_value, (who, answers[t, who].astype(np.int64)), 1)
            eps = table.per_value[per_value].sum(axis=1)  # type: ignore[index]
        else:
            eps = table.pure[reports] + table.lowered * lowered  # type: ignore[index]
        values, counts = np.unique(eps, return_counts=True)
        time = (t + 1) * L
        top = int(reports.max())
        last = bool(lowered.any())  # the most exposed respondent also sent the lowered report
        stats = {
            "max": float(values[-1]),
            "mean": float(eps.mean()),
            "median": float(np.median(eps)),
            "p90": float(np.quantile(eps, 0.9)),
            "per_report": table.per_report,
        }
        if table.exact is not None:  # plain and filter policies: their tables are all set
            basic, advanced = cast(NDArray[np.float64], table.basic), cast(NDArray[np.float64], table.advanced)
            if last:
                stats.update(
                    exact_at_delta=table.exact_lowered,
                    basic=float(basic[top]) + table.lowered,
                    advanced=table.advanced_lowered,
                    reports_max=float(top + 1),
                )
            else:
                stats.update(
                    exact_at_delta=float(table.exact[top]),
                    basic=float(basic[top]),
                    advanced=float(advanced[top]),
                    reports_max=float(top),
                )
        if per_value is not None:
            stats.update(longitudinal=table.longitudinal, distinct_max=float((per_value > 0).sum(axis=1).max()))
        if policy.allowed is not None:
            done = lowered if policy.lowered is not None else reports >= policy.allowed
            stats.update(budget=table.budget, stopped_share=float(np.mean(done)))
            if policy.lowered is not None:
                stats.update(lowered_eps=table.lowered)
        rows += [_row(base, t + 1, time, "privacy", name, value, n=n) for name, value in stats.items()]
        if values.size <= MAX_CLASS_ROWS:
            rows += [
                _row(base, t + 1, time, "privacy_class", f"{v:.12g}", float(v), n=int(c))
                for v, c in zip(values, counts)
            ]
    return rows


def _latency_rows(
    sc: CollectionScenario, server: _Server, sent: NDArray[np.bool_], base: dict[str, Any]
) -> list[dict[str, Any]]:
    L = float(sc.spec.collection.period)
    if server.delay:
        delay, waited, period = (np.concatenate(a) for a in (server.delay, server.waited, server.period))
    else:
        delay = waited = np.zeros(0)
        period = np.zeros(0, dtype=np.int64)
    rows = []
    order = np.argsort(period, kind="stable")
    delay, waited, period = delay[order], waited[order], period[order]
    cuts = np.searchsorted(period, np.arange(sc.periods + 1))
    for t in range(sc.periods):
        d, w = delay[cuts[t] : cuts[t + 1]], waited[cuts[t] : cuts[t + 1]]
        n_sent = int(sent[t].sum())
        stats = {
            "mean_delay": float(d.mean()) if d.size else math.nan,
            "p95_delay": float(np.quantile(d, 0.95)) if d.size else math.nan,
            "mean_shuffler_wait": float(w.mean()) if w.size else math.nan,
            "received_share": d.size / n_sent if n_sent else math.nan,
        }
        rows += [_row(base, t + 1, (t + 1) * L, "latency", name, value, n=n_sent) for name, value in stats.items()]
    return rows


def _central_rows(sc: CollectionScenario, table: PrivacyTable, log: Any, base: dict[str, Any]) -> list[dict[str, Any]]:
    delta = float(sc.spec.collection.delta)
    sizes = np.asarray(log.sizes, dtype=np.int64)
    if not sizes.size:
        return []
    smallest = int(sizes.min())
    stats = {
        "local_eps": table.per_report,
        "central_eps": central_epsilon(table.per_report, smallest, delta),
        "batch_min": float(smallest),
        "batch_mean": float(sizes.mean()),
        "batches": float(sizes.size),
        "withheld": float(log.withheld),
    }
    return [
        _row(base, sc.periods, float(log.times[-1]), "central", name, value, n=int(sizes.sum()))
        for name, value in stats.items()
    ]
