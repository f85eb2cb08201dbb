"""The empirical privacy ratio, both sides: the auditor's sampled lower bound ``eps_LB``
(:func:`ldpsim.audit.audit`) never exceeds the exact eps, and for finite mechanisms it comes
within 20% of it at a sample size chosen by a power argument.

Soundness (``test_lower_bound_never_exceeds_exact_eps``): hypothesis draws the parameters
of every catalog entry (:data:`STRATEGIES`, broken targets included, whose exact eps is
their true one), one audit per example at ``alpha = FALSE_FAILURE / (examples x entries)``.
Each audit exceeds the exact eps (or, with a delta claim, the exact delta) with probability
at most its alpha, and hypothesis runs at most ``examples`` audits per entry before a first
failure (shrinking only starts after one), so by the union bound the whole test fails
falsely with probability at most ``FALSE_FAILURE = 1e-6``.

Power (``test_lower_bound_reaches_exact_eps``): for finite mechanisms the exact eps is
``log Q(y*|x*) / Q(y*|x'*)`` for one output and one ordered pair. The audit (its documented
method, ldpsim/audit/core.py) selects on ``n1`` outputs per input an event maximising a
Wilson-score plug-in ratio and certifies it on ``n2`` fresh outputs with Clopper-Pearson
bounds. :func:`power_failure_bound` bounds, exactly from binomial tails, the probability that
the certified bound of the pair ``(x*, x'*)`` falls below ``0.8 eps``:

* a *good* event has exact log ratio ``>= g`` for a level ``g`` in ``(0.8 eps, eps]`` (the
  top few ratio levels of events are tried and the smallest bound kept; each is valid);
  ``S*`` (every output of the largest ratio) is good. A bad event ``S`` is selected only if
  its score reaches that of ``S*``, so only if ``score(S*) < c`` or ``score(S) >= c`` with
  ``c`` halfway between ``eps`` and the largest bad log ratio. The Wilson bounds bracket the
  observed frequency, so ``P(score(S) >= c) <= P(p_hat(S) >= u) + P(q_hat(S) <= u e^-c)``
  with ``u`` the geometric midpoint; ``P(score(S*) < c)`` is computed with the Wilson
  bounds themselves (monotone in the count) at the selection level (at most ``m``
  candidates). Every non-empty set of outputs counts as a possible bad event (a superset
  of the auditor's candidates, which are prefixes of the observed outputs).
* a good event ``S`` is certified at ``>= 0.8 eps`` unless ``CP_lower(S|x) < P(S) e^-h`` or
  ``CP_upper(S|x') > Q(S) e^h``, ``h = (log r_S - 0.8 eps) / 2``: two exact binomial tails;
  the certification half is independent of the selection, so the worst good event bounds it.

``n`` is the smallest on a 1.25x grid where the bound is ``<= POWER_FAILURE``. The test
runs at most ``POWER_AUDITS = examples(POWER_EXAMPLES) x len(POWER_NAMES)`` audits (14 in
the default run, 70 under ``explore``), each at level ``POWER_ALPHA``; each falls below
``0.8 eps`` with probability ``<= POWER_FAILURE`` or exceeds eps with probability
``<= POWER_ALPHA``, both ``FALSE_FAILURE / (2 POWER_AUDITS)``: the test's false-failure
probability is at most ``FALSE_FAILURE = 1e-6``. Examples with exact eps below 0.3 (a binary
mechanism whose T holds every input has eps 0) are skipped (``assume``).

Skipped in the soundness test: ``rappor`` (Bloom-filter vectors: about 1 s per audit at
``n = 20,000``; tests/audit covers it).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from ldpsim.audit import audit, target
from ldpsim.mechanisms import catalog
from ldpsim.stats import clopper_pearson_lower, clopper_pearson_upper, wilson
from tests.properties import examples, seed_of
from tests.stats_checks import FALSE_FAILURE

#: entries the auditor cannot sample cheaply, with the reason
SKIPPED = {"rappor": "Bloom-filter vector outputs: about 1 s per audit at n = 20,000 (covered in tests/audit)"}

SOUND_EXAMPLES = examples(3)
SOUND_N = 20_000

# --------------------------------------------------------------------------- strategies
EPS = st.floats(0.2, 3.0)
K = st.integers(2, 5)


@st.composite
def _distribution(draw: st.DrawFn, k: int) -> list[float]:
    w = draw(st.lists(st.floats(0.05, 1.0), min_size=k, max_size=k))
    return [x / sum(w) for x in w]


@st.composite
def _utility(draw: st.DrawFn) -> dict:
    k = draw(st.integers(2, 4))
    utility = draw(st.sampled_from(["kl", "tv", "chi_square", "hellinger", "mutual_information"]))
    out: dict = {"eps": draw(EPS), "utility": utility}
    if utility == "mutual_information":
        out["prior"] = draw(_distribution(k))
    else:
        out["P0"], out["P1"] = draw(_distribution(k)), draw(_distribution(k))
        assume(max(abs(a - b) for a, b in zip(out["P0"], out["P1"])) > 0.02)
    return out


@st.composite
def _binary(draw: st.DrawFn) -> dict:
    k = draw(K)
    out: dict = {"eps": draw(EPS), "k": k}
    how = draw(st.sampled_from(["default", "T", "priors"]))
    if how == "T":
        out["T"] = draw(st.lists(st.integers(0, k - 1), unique=True, min_size=1, max_size=k - 1))
    elif how == "priors":
        out["P0"], out["P1"] = draw(_distribution(k)), draw(_distribution(k))
    return out


@st.composite
def _matrix(draw: st.DrawFn) -> dict:
    k, m = draw(st.integers(2, 4)), draw(st.integers(2, 4))
    rows = [
        draw(st.lists(st.floats(0.0, 1.0), min_size=m, max_size=m).filter(lambda r: sum(r) > 0.05)) for _ in range(k)
    ]
    return {"matrix": [[x / sum(r) for x in r] for r in rows]}


@st.composite
def _bounded(draw: st.DrawFn) -> dict:
    lo = draw(st.floats(-5.0, 5.0))
    return {"eps": draw(EPS), "lo": lo, "hi": lo + draw(st.floats(0.1, 10.0))}


@st.composite
def _histogram(draw: st.DrawFn) -> dict:
    bins = draw(st.integers(1, 5))
    return {
        "eps": draw(st.floats(0.2, 1.5)),
        "bins": bins,
        "affected": draw(st.integers(0, bins - 1)),
    }


@st.composite
def _snapped(draw: st.DrawFn) -> dict:
    """Snapping needs a power-of-two sensitivity and a clamp B above the noise scale: B between
    1.5 and 30 scales (sensitivity / eps)."""
    eps, sens = draw(EPS), draw(st.sampled_from([0.5, 1.0, 2.0]))
    return {"eps": eps, "sensitivity": sens, "bound": sens * draw(st.floats(1.5, 30.0)) / eps}


@st.composite
def _integer_range(draw: st.DrawFn) -> dict:
    lo = draw(st.integers(-5, 5))
    return {"eps": draw(EPS), "lo": float(lo), "hi": float(lo + draw(st.integers(1, 10)))}


def _fixed(**kw: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries(kw)


def _optional(key: str, strategy: st.SearchStrategy, **kw: st.SearchStrategy) -> st.SearchStrategy:
    """``kw``, plus ``key`` drawn from ``strategy`` or left out (the entry's default)."""
    return _fixed(**kw, **{key: strategy}) | _fixed(**kw)


#: entry name -> strategy of its parameters (every entry of the catalog but SKIPPED)
STRATEGIES: dict[str, st.SearchStrategy] = {
    "randomized_response": _fixed(k=K, eps=EPS),
    "binary": _binary(),
    "truncated_geometric": _fixed(k=st.integers(2, 6), eps=EPS),
    "staircase": _fixed(k=st.integers(2, 6), eps=EPS),
    "optimal": _utility(),
    "better_of_binary_and_rr": _utility(),
    "matrix": _matrix(),
    "quaternary": _fixed(eps=EPS, delta=st.floats(0.0, 0.3)),
    "laplace": _fixed(eps=EPS, sensitivity=st.sampled_from([0.5, 1.0, 2.5])),
    "gaussian": _fixed(
        eps=EPS,
        delta=st.floats(1e-4, 0.2),
        sensitivity=st.sampled_from([0.5, 1.0, 2.5]),
    ),
    "gaussian_classical": _fixed(
        eps=st.floats(0.2, 0.99),
        delta=st.floats(1e-4, 0.2),
        sensitivity=st.sampled_from([1.0, 2.5]),
    ),
    "truncated_laplace": _fixed(
        eps=EPS,
        delta=st.floats(1e-4, 0.2),
        sensitivity=st.sampled_from([0.5, 1.0, 2.5]),
    ),
    "staircase_noise": _fixed(eps=EPS, sensitivity=st.sampled_from([0.5, 1.0, 2.5])),
    "geometric": _fixed(eps=EPS, sensitivity=st.integers(1, 3)),
    "discrete_laplace": _fixed(eps=EPS, sensitivity=st.integers(1, 3)),
    "discrete_gaussian": _fixed(eps=EPS, delta=st.floats(1e-4, 0.2), sensitivity=st.integers(1, 3)),
    "snapped_laplace": _snapped(),
    "norm_laplace": _fixed(d=st.integers(1, 4), p=st.sampled_from([1.0, 2.0, 3.0, math.inf]), eps=EPS),
    "sue": _fixed(k=st.integers(2, 6), eps=EPS),
    "oue": _fixed(k=st.integers(2, 6), eps=EPS),
    "olh": _optional("g", st.integers(2, 8), k=K, eps=EPS),
    "blh": _fixed(k=K, eps=EPS),
    "hadamard_response": _fixed(k=st.integers(2, 7), eps=EPS),
    "subset_selection": K.flatmap(lambda k: _optional("omega", st.integers(1, k - 1), k=st.just(k), eps=EPS)),
    "laplace_bounded": _bounded(),
    "discrete_laplace_bounded": _integer_range(),
    "snapped_laplace_bounded": _bounded(),
    "staircase_bounded": _bounded(),
    "duchi": _bounded(),
    "piecewise": _bounded(),
    "hybrid": _bounded(),
    "square_wave": _bounded(),
    "memoised_rr": _fixed(k=K, eps_permanent=st.floats(0.1, 3.0), eps_instantaneous=st.floats(0.1, 3.0)),
    "broken.doubled_rr": _fixed(k=K, eps=st.floats(0.2, 1.5)),
    "broken.unary_no_reset": _fixed(k=st.integers(2, 6), eps=EPS),
    "broken.laplace_wrong_scale": _fixed(eps=st.floats(0.2, 1.5)),
    "broken.histogram_wrong_scale": _histogram(),
    "broken.noisy_max_value": _fixed(eps=EPS, m=st.integers(2, 6)),
    "broken.svt_no_query_noise": _fixed(eps=EPS, T=st.floats(-1.0, 1.0)),
    "broken.svt_no_cutoff": _fixed(eps=EPS, m=st.integers(2, 4), T=st.floats(-1.0, 1.0)),
    "broken.svt_returns_value": _fixed(eps=EPS, m=st.integers(2, 8), T=st.floats(-1.0, 1.0)),
}

SOUND_NAMES = sorted(STRATEGIES)
SOUND_ALPHA = FALSE_FAILURE / (SOUND_EXAMPLES * len(SOUND_NAMES))


def test_every_catalog_entry_has_a_strategy_or_a_reason():
    assert set(STRATEGIES) | set(SKIPPED) == set(catalog.names())
    assert not set(STRATEGIES) & set(SKIPPED)


# --------------------------------------------------------------------------- soundness
@pytest.mark.parametrize("name", SOUND_NAMES)
@settings(max_examples=SOUND_EXAMPLES)
@given(data=st.data())
def test_lower_bound_never_exceeds_exact_eps(name, data):
    # SOUND_EXAMPLES audits per entry at SOUND_ALPHA: P(false failure of the whole test) <= 1e-6
    params = data.draw(STRATEGIES[name], label="params")
    t = target(name, **params)
    eps_d = t.claimed_eps if t.claimed_delta > 0 else None
    seed = seed_of(name, params)
    res = audit(t.sampler, t.pairs, SOUND_N, alpha=SOUND_ALPHA, rng=seed, eps_for_delta=eps_d)
    info = f"{t.spec} seed={seed}: eps_LB={res.eps_lb!r}, delta_LB={res.delta_lb!r}, witness {res.witness}"
    assert res.eps_lb >= 0.0, info
    assert res.eps_lb <= t.true_eps + 1e-12, f"eps_LB above the exact eps {t.true_eps!r}: {info}"
    if eps_d is not None and t.true_delta is not None:
        exact = t.true_delta(eps_d)
        assert res.delta_lb <= exact + 1e-12, f"delta_LB above the exact delta {exact!r}: {info}"


# --------------------------------------------------------------------------- power
FACTOR = 0.8  # the lower bound must reach FACTOR * eps
POWER_EXAMPLES = examples(2)
#: finite mechanisms whose eps is a ratio of two output probabilities, with parameter ranges
#: that keep the power-chosen n below a few 10^5
POWER_STRATEGIES: dict[str, st.SearchStrategy] = {
    "randomized_response": _fixed(k=st.integers(2, 4), eps=st.floats(0.8, 2.5)),
    "binary": _binary().filter(lambda p: p["eps"] >= 0.8),
    "truncated_geometric": _fixed(k=st.integers(2, 3), eps=st.floats(0.8, 2.5)),
    "memoised_rr": _fixed(
        k=st.integers(2, 3),
        eps_permanent=st.floats(1.5, 3.0),
        eps_instantaneous=st.floats(1.5, 3.0),
    ),
    "hadamard_response": _fixed(k=st.integers(2, 3), eps=st.floats(0.8, 2.5)),
    "broken.doubled_rr": _fixed(k=st.integers(2, 3), eps=st.floats(0.4, 1.2)),
    "matrix": _fixed(
        matrix=st.floats(0.55, 0.85).flatmap(lambda a: st.floats(0.15, a - 0.3).map(lambda b: [[a, 1 - a], [b, 1 - b]]))
    ),
}
POWER_NAMES = sorted(POWER_STRATEGIES)
POWER_AUDITS = POWER_EXAMPLES * len(POWER_NAMES)
POWER_ALPHA = FALSE_FAILURE / 2 / POWER_AUDITS  # the audits' own level (soundness, checked too)
POWER_FAILURE = FALSE_FAILURE / 2 / POWER_AUDITS  # per example: P(eps_LB < FACTOR eps) <= this
N_GRID = [int(2000 * 1.25**i) for i in range(40)]
N_MAX = 600_000


def _matrix_of(mech) -> np.ndarray:
    return np.asarray(mech.matrix() if callable(mech.matrix) else mech.matrix, dtype=float)


def _row(mech, x) -> int:
    return int(mech.encode([x])[0]) if hasattr(mech, "encode") else int(x)


def _first(pred, lo: int, hi: int) -> int:
    """Smallest integer in [lo, hi] where the monotone ``pred`` holds (hi + 1 if none)."""
    if not pred(hi):
        return hi + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _bound_at(p, q, n1, n2, a, z_sel, eps, g) -> float:
    """The power bound of the module docstring with good events ``log ratio >= g``."""
    subsets = np.array([s for s in itertools.product([0, 1], repeat=p.size) if any(s)], dtype=float)
    ps, qs = (
        np.minimum(subsets @ p, 1.0),
        np.minimum(subsets @ q, 1.0),
    )  # sums may round above 1
    lr = np.log(ps) - np.log(qs)
    good = lr >= g
    bad = ~good
    c = (eps + float(lr[bad].max())) / 2 if bad.any() else -math.inf  # score threshold between the levels
    fail = 0.0
    if bad.any():
        # the top event (every output of the largest ratio) scores below c ...
        top = np.isclose(np.log(p) - np.log(q), eps, rtol=0, atol=1e-12)
        P, Q = min(float(p[top].sum()), 1.0), min(float(q[top].sum()), 1.0)
        u = P * math.exp((c - eps) / 2)  # then u e^-c = Q e^((eps - c)/2)
        x_lo = _first(lambda x: wilson(x, n1, z=z_sel)[0] >= u, 0, n1)
        y_hi = _first(lambda y: wilson(y, n1, z=z_sel)[1] > u * math.exp(-c), 0, n1)
        fail += stats.binom.cdf(x_lo - 1, n1, P) + stats.binom.sf(y_hi - 1, n1, Q)
        # ... or a bad event's plug-in score reaches c (Wilson bounds bracket the frequency)
        ub = ps[bad] * np.exp((c - lr[bad]) / 2)  # u for S; u e^-c = Q(S) e^((lr - c)/2)
        vb = qs[bad] * np.exp((lr[bad] - c) / 2)
        fail += float(
            np.sum(stats.binom.sf(np.ceil(ub * n1) - 1, n1, ps[bad]) + stats.binom.cdf(np.floor(vb * n1), n1, qs[bad]))
        )
    # certification of the worst good event on fresh outputs
    worst = 0.0
    for P_s, Q_s, l_s in zip(ps[good], qs[good], lr[good]):
        h = (l_s - FACTOR * eps) / 2
        x2 = _first(
            lambda x, P_s=P_s, h=h: clopper_pearson_lower(x, n2, a / 2) >= P_s * math.exp(-h),
            0,
            n2,
        )
        y2 = _first(
            lambda y, Q_s=Q_s, h=h: clopper_pearson_upper(y, n2, a / 2) > Q_s * math.exp(h),
            0,
            n2,
        )
        worst = max(worst, stats.binom.cdf(x2 - 1, n2, P_s) + stats.binom.sf(y2 - 1, n2, Q_s))
    return float(fail + worst)


def power_failure_bound(p: np.ndarray, q: np.ndarray, n: int, pairs: int, alpha: float, split: float = 0.5) -> float:
    """Upper bound on P(certified bound of the ordered pair with rows ``p``, ``q`` < FACTOR eps)
    for an audit at ``n`` outputs per input over ``pairs`` pairs at level ``alpha`` (module
    docstring); the best over the choices of the good threshold ``g`` (the ratio levels of
    events between FACTOR eps and eps, each a valid bound)."""
    n1 = round(n * split)
    n2 = n - n1
    eps = float(np.max(np.log(p) - np.log(q)))
    a = alpha / (2 * pairs)  # per certified test; each side of the ratio at a / 2
    z_sel = float(stats.norm.isf(a / 2 / p.size))  # selection level, at most m candidates
    subsets = np.array([s for s in itertools.product([0, 1], repeat=p.size) if any(s)], dtype=float)
    levels = np.unique(np.log(subsets @ p) - np.log(subsets @ q))
    levels = levels[(levels > FACTOR * eps) & (levels <= eps)]
    levels = np.unique(np.concatenate([levels[-3:], [eps - 1e-12]]))  # the top few levels suffice
    bound = min(_bound_at(p, q, n1, n2, a, z_sel, eps, g) for g in levels)
    assert not math.isnan(bound)
    return bound


def _eps_pair(mech, pairs) -> tuple[np.ndarray, np.ndarray, float]:
    """Rows of the ordered pair with the largest log ratio, and that ratio."""
    M = _matrix_of(mech)
    best = None
    for x0, x1 in pairs:
        for a, b in ((x0, x1), (x1, x0)):
            p, q = M[_row(mech, a)], M[_row(mech, b)]
            val = float(np.max(np.log(p) - np.log(q)))
            if best is None or val > best[2]:
                best = (p, q, val)
    return best


@pytest.mark.parametrize("name", POWER_NAMES)
@settings(max_examples=POWER_EXAMPLES)
@given(data=st.data())
def test_lower_bound_reaches_exact_eps(name, data):
    # POWER_AUDITS audits: each falls below FACTOR * eps with probability <= POWER_FAILURE and
    # exceeds eps with probability <= POWER_ALPHA; together <= 1e-6 for the whole test
    params = data.draw(POWER_STRATEGIES[name], label="params")
    t = target(name, **params)
    p, q, eps = _eps_pair(t.mechanism, t.pairs)
    assert np.all(_matrix_of(t.mechanism) > 0), "the power argument needs every output possible"
    assert eps == pytest.approx(t.true_eps, rel=1e-9), "the exact eps is a ratio of two output probabilities"
    assume(eps >= 0.3)  # e.g. a binary mechanism whose T holds every input has eps 0: nothing to reach
    n = next(
        (n for n in N_GRID if power_failure_bound(p, q, n, len(t.pairs), POWER_ALPHA) <= POWER_FAILURE),
        None,
    )
    assert n is not None and n <= N_MAX, f"test design: {t.spec} needs n > {N_MAX}"
    seed = seed_of(name, params, n)
    res = audit(t.sampler, t.pairs, n, alpha=POWER_ALPHA, rng=seed)
    info = f"{t.spec} n={n} seed={seed}: eps_LB={res.eps_lb!r}, exact {t.true_eps!r}, witness {res.witness}"
    assert res.eps_lb <= t.true_eps + 1e-12, info
    assert res.eps_lb >= FACTOR * t.true_eps, info


def test_power_bound_is_a_probability_bound():
    # the power bound shrinks with n, and at a tiny n it does not claim power
    p, q = np.array([0.7, 0.3]), np.array([0.3, 0.7])
    bounds = [power_failure_bound(p, q, n, 1, 1e-7) for n in (200, 2000, 20_000, 200_000)]
    assert bounds[0] >= 0.5 and bounds[-1] < 1e-7
    assert all(b1 <= b0 for b0, b1 in itertools.pairwise(bounds))
