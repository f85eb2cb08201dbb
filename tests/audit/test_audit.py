"""Empirical privacy auditor (ldpsim.audit).

Calibration: each audit run reports eps_LB above the true eps with probability <= alpha; the
repeated-run checks allow the number of such runs given by an exact binomial tail at 1e-6.
Refutation and tightness checks use fixed seeds and margins far beyond the bound's width
(the certified log-ratio has standard error ~0.01 at these sample sizes), so their
false-failure probability is far below 1e-6.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim import LdpSimError
from ldpsim.audit import AuditResult, Witness, audit, audit_sequential, density_of, sampler_of
from ldpsim.mechanisms import randomized_response
from ldpsim.mechanisms.noise import Laplace
from tests.tiers import sample

RUNS = 30
ALPHA = 0.05


def allowed_false_alarms(runs: int, alpha: float, tail: float = 1e-6) -> int:
    """Smallest c with P(Bin(runs, alpha) > c) <= tail."""
    c = 0
    while stats.binom.sf(c, runs, alpha) > tail:
        c += 1
    return c


def broken_rr_sampler(k: int, eps: float):
    """k-ary randomized response whose keep probability uses 2*eps (true eps is 2*eps)."""
    e = math.exp(2 * eps)
    keep = (e - 1) / (e + k - 1)

    def sample(x, n, rng):
        out = np.full(n, int(x), dtype=np.int64)
        redraw = rng.random(n) >= keep
        out[redraw] = rng.integers(0, k, size=int(redraw.sum()))
        return out

    return sample


# --------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("k, eps", sample([(2, 0.5), (2, 2.0), (4, 1.0), (8, 4.0)], keep=(0, 1)))
def test_rr_false_alarm_rate(k, eps):
    mech = randomized_response(k, eps)
    pairs = [(0, 1), (1, 2)] if k > 2 else [(0, 1)]
    over = 0
    for seed in range(RUNS):
        res = audit(mech, pairs, 10**5, ALPHA, rng=seed)
        assert 0.0 <= res.eps_lb < math.inf
        over += res.eps_lb > eps
    assert over <= allowed_false_alarms(RUNS, ALPHA)


@pytest.mark.parametrize("eps", sample([0.5, 1.0, 3.0]))
def test_laplace_false_alarm_rate(eps):
    mech = Laplace(1.0 / eps)
    over = 0
    for seed in range(RUNS):
        res = audit(mech, [(0.0, 1.0)], 10**5, ALPHA, rng=1000 + seed)
        over += res.eps_lb > eps
    assert over <= allowed_false_alarms(RUNS, ALPHA)


def test_delta_lower_bound_valid_and_informative():
    mech = randomized_response(4, 2.0)
    true_delta = float(mech.delta(1.0))
    over = 0
    for seed in range(RUNS):
        res = audit(mech, [(0, 1)], 10**5, ALPHA, rng=seed, eps_for_delta=1.0)
        assert res.delta_lb is not None and res.eps_for_delta == 1.0
        over += res.delta_lb > true_delta
    assert over <= allowed_false_alarms(RUNS, ALPHA)
    assert res.delta_lb > 0.8 * true_delta
    assert res.delta_witness is not None and res.delta_counts["n_per_input"] == 50_000


def test_laplace_delta_lower_bound():
    mech = Laplace(1.0)
    res = audit(mech, [(0.0, 1.0)], 10**5, rng=3, eps_for_delta=0.5)
    assert 0.0 < res.delta_lb <= float(mech.delta(0.5))
    assert res.eps_lb <= 1.0


# --------------------------------------------------------------------------- power
@pytest.mark.parametrize("k, eps", [(2, 1.0), (4, 0.5), (3, 2.0)])
def test_broken_rr_refuted(k, eps):
    res = audit(broken_rr_sampler(k, eps), [(0, 1)], 10**5, ALPHA, rng=7)
    assert res.eps_lb > eps
    assert res.eps_lb <= 2 * eps  # still a valid bound for the true 2*eps
    assert res.witness is not None and res.witness.event["kind"] == "outputs"


def test_broken_laplace_refuted():
    # Laplace claimed at eps = 1 but drawn with scale 1/(2 eps): true eps = 2.
    def sample(x, n, rng):
        return float(x) + rng.laplace(0.0, 0.5, size=n)

    res = audit(sample, [(0.0, 1.0)], 10**5, ALPHA, rng=11)
    assert 1.0 < res.eps_lb <= 2.0
    assert res.witness.event["kind"] in ("threshold", "interval")


def test_tightness_rr_eps1():
    res = audit(randomized_response(2, 1.0), [(0, 1)], 10**6, ALPHA, rng=5)
    assert 0.8 < res.eps_lb <= 1.0
    assert res.n_samples_used == 2 * 10**6
    assert res.counts["n_per_input"] == 500_000
    assert res.counts["hits_x"] > res.counts["hits_x_prime"]


def test_no_ceiling_on_disjoint_supports():
    # x always reports 1, x' always 0: no constant cap such as ln(1/0.01) = 4.6.
    def sample(x, n, rng):
        return np.full(n, int(x), dtype=np.int64)

    res = audit(sample, [(0, 1)], 10**5, ALPHA, rng=0)
    n2 = 50_000
    a = ALPHA / 2 / 2  # Bonferroni over 2 orders, then per side
    # CP_lower(n2 of n2 hits) / CP_upper(0 of n2 hits) = c / (1 - c) with c = (a/2)^(1/n2)
    log_c = math.log(a) / n2
    expected = log_c - math.log(-math.expm1(log_c))
    assert math.isfinite(res.eps_lb) and res.eps_lb > 9.0
    assert res.eps_lb == pytest.approx(expected, rel=1e-9)


def test_identical_inputs_certify_nothing_much():
    res = audit(lambda x, n, rng: rng.integers(0, 3, size=n), [(0, 1)], 10**4, rng=2)
    assert res.eps_lb <= 0.2


def test_reproducible_and_method_text():
    mech = randomized_response(3, 1.0)
    r1 = audit(mech, [(0, 1), (1, 2)], 2000, rng=42)
    r2 = audit(mech, [(0, 1), (1, 2)], 2000, rng=42)
    assert r1 == r2
    assert isinstance(r1, AuditResult)
    assert "Bonferroni over 4 tests" in r1.method and "Clopper-Pearson" in r1.method
    assert r1.n_samples_used == 3 * 2000  # one batch per distinct input


def test_witness_replays_on_fresh_samples():
    mech = Laplace(0.5)
    res = audit(mech, [(0.0, 1.0)], 10**5, rng=9)
    w = Witness.from_json(res.witness.to_json(), log_density=density_of(mech))
    rng = np.random.default_rng(123)
    s = sampler_of(mech)
    p = w.contains(s(w.x, 10**5, rng)).mean()
    q = w.contains(s(w.x_prime, 10**5, rng)).mean()
    assert p > q > 0


# --------------------------------------------------------------------------- witness
@pytest.mark.parametrize(
    "event",
    [
        {"kind": "outputs", "values": [3, 1]},
        {"kind": "threshold", "t": 0.25, "side": "above"},
        {"kind": "threshold", "t": -1.5, "side": "below"},
        {"kind": "interval", "lo": -1.0, "hi": 2.0},
    ],
)
def test_witness_json_round_trip(event):
    w = Witness(np.int64(2), (1, 2), event)
    text = w.to_json()
    json.loads(text)  # strict JSON
    back = Witness.from_json(text)
    assert back == w
    assert back.x == 2 and back.x_prime == [1, 2]


def test_witness_contains():
    y = np.array([-2.0, 0.0, 0.25, 1.0, 3.0])
    assert Witness(0, 1, {"kind": "threshold", "t": 0.25, "side": "above"}).contains(y).tolist() == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert Witness(0, 1, {"kind": "threshold", "t": 0.25, "side": "below"}).contains(y).tolist() == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert Witness(0, 1, {"kind": "interval", "lo": 0.0, "hi": 1.0}).contains(y).tolist() == [
        False,
        False,
        True,
        True,
        False,
    ]
    assert Witness(0, 1, {"kind": "outputs", "values": [1, 3]}).contains(np.arange(5)).tolist() == [
        False,
        True,
        False,
        True,
        False,
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"kind": "set", "values": [1]},
        {"kind": "outputs", "values": [1.5]},
        {"kind": "threshold", "t": 0.0, "side": "left"},
        {"kind": "threshold", "t": float("nan"), "side": "above"},
        {"kind": "interval", "lo": 2.0, "hi": 1.0},
        "outputs",
    ],
)
def test_witness_bad_event(event):
    with pytest.raises(LdpSimError, match="event"):
        Witness(0, 1, event)


def test_witness_bad_json():
    with pytest.raises(LdpSimError, match="witness JSON"):
        Witness.from_json("{not json")
    with pytest.raises(LdpSimError, match="witness JSON"):
        Witness.from_json('{"x": 0}')


# --------------------------------------------------------------------------- bad input
def _ok(x, n, rng):
    return rng.integers(0, 2, size=n)


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, float("nan")])
def test_bad_alpha(alpha):
    with pytest.raises(LdpSimError, match="alpha"):
        audit(_ok, [(0, 1)], 1000, alpha)


@pytest.mark.parametrize("n, split", [(15, 0.5), (100, 0.95), (0, 0.5), (2.5, 0.5)])
def test_budget_too_small(n, split):
    with pytest.raises(LdpSimError, match="^n:"):
        audit(_ok, [(0, 1)], n, split=split)


@pytest.mark.parametrize("split", [0, 1, 2.0])
def test_bad_split(split):
    with pytest.raises(LdpSimError, match="split"):
        audit(_ok, [(0, 1)], 1000, split=split)


@pytest.mark.parametrize("pairs", [[], [(0, 0)], [(0, 1, 2)], "ab", 5])
def test_bad_pairs(pairs):
    with pytest.raises(LdpSimError, match="pairs"):
        audit(_ok, pairs, 1000)


@pytest.mark.parametrize(
    "sampler, what",
    [
        (lambda x, n, rng: np.zeros(n - 1, dtype=np.int64), "shape"),
        (lambda x, n, rng: np.zeros((n, 2, 2)), "shape"),
        (lambda x, n, rng: np.zeros((n, 0)), "shape"),
        (lambda x, n, rng: np.full((n, 2), np.inf), "infinite entries"),
        (lambda x, n, rng: np.array(["a"] * n), "dtype"),
        (lambda x, n, rng: np.zeros(n, dtype=complex), "dtype"),
        (lambda x, n, rng: np.full(n, np.nan), "NaN"),
        (lambda x, n, rng: None, "dtype"),
    ],
)
def test_bad_sampler_output(sampler, what):
    with pytest.raises(LdpSimError, match="sampler output") as info:
        audit(sampler, [(0, 1)], 1000)
    assert what in str(info.value) and "x=0" in str(info.value)


def test_sampler_that_raises():
    def sampler(x, n, rng):
        if x == 7:
            raise ZeroDivisionError("boom")
        return rng.integers(0, 2, size=n)

    with pytest.raises(LdpSimError, match=r"sampler raised ZeroDivisionError: boom for input x=7") as info:
        audit(sampler, [(0, 7)], 1000)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_finite_outputs_forced_on_reals():
    with pytest.raises(LdpSimError, match="integer outputs"):
        audit(lambda x, n, rng: rng.random(n), [(0, 1)], 1000, outputs="finite")
    # integer-valued floats are accepted as finite outputs
    res = audit(lambda x, n, rng: rng.integers(0, 2, size=n).astype(float), [(0, 1)], 1000, outputs="finite", rng=0)
    assert res.witness is None or res.witness.event["kind"] == "outputs"


def test_bad_options():
    with pytest.raises(LdpSimError, match="outputs"):
        audit(_ok, [(0, 1)], 1000, outputs="vector")
    with pytest.raises(LdpSimError, match="eps_for_delta"):
        audit(_ok, [(0, 1)], 1000, eps_for_delta=-1)
    with pytest.raises(LdpSimError, match="mechanism"):
        audit(object(), [(0, 1)], 1000)
    with pytest.raises(LdpSimError, match="mechanism"):
        sampler_of("rr")


# --------------------------------------------------------------------------- densities
def test_density_of_library_mechanisms():
    from ldpsim.audit.zoo import SVTNoQueryNoise

    rr = randomized_response(3, 1.0)
    ld = density_of(rr)
    y = np.array([0, 1, 2, 3])
    keep = math.e / (math.e + 2)  # closed form of 3-ary randomized response
    expected = np.log([keep, (1 - keep) / 2, (1 - keep) / 2])
    np.testing.assert_allclose(ld(0, y[:3]), expected, rtol=1e-12)
    assert ld(0, y)[3] == -np.inf  # outside the output alphabet
    lap = density_of(Laplace(2.0))
    np.testing.assert_allclose(lap(1.0, np.array([1.0, 3.0])), stats.laplace.logpdf([0.0, 2.0], scale=2.0))
    svt = SVTNoQueryNoise(eps=1.0)
    lds = density_of(svt)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(lds(list(svt.rows[0]), np.arange(svt.matrix().shape[1])), np.log(svt.matrix()[0]))
    assert density_of(lambda x, n, rng: None) is None


def test_zero_density_event_gives_inf():
    # quaternary (eps, delta) has outputs impossible under the other input: pure eps is inf
    from ldpsim.mechanisms import quaternary_mechanism

    res = audit(quaternary_mechanism(0.7, 0.05), [(0, 1)], 10**4, rng=1)
    assert res.eps_lb == math.inf
    assert res.counts["hits_x_prime"] == 0 and res.counts["hits_x"] > 0
    # the same sampler without the density: sampled evidence only, so finite
    res2 = audit(sampler_of(quaternary_mechanism(0.7, 0.05)), [(0, 1)], 10**4, rng=1)
    assert math.isfinite(res2.eps_lb) and res2.eps_lb > 3.0
    # a full-support mechanism never gets inf
    assert math.isfinite(audit(randomized_response(3, 2.0), [(0, 1)], 10**4, rng=1).eps_lb)


def test_density_inconsistent_with_sampler_is_reported():
    # the density says output 1 is impossible under x = 1, the sampler produces it
    def ld(x, y):
        table = {0: np.log([0.5, 0.5]), 1: np.array([0.0, -np.inf])}[int(x)]
        return table[np.asarray(y)]

    def sample(x, n, rng):
        return rng.integers(0, 2, size=n)

    with pytest.raises(LdpSimError, match="density does not describe the sampler"):
        audit(sample, [(0, 1)], 10**4, rng=0, log_density=ld)


def test_bad_log_density_option():
    with pytest.raises(LdpSimError, match="log_density"):
        audit(randomized_response(2, 1.0), [(0, 1)], 1000, log_density="exact")


def test_likelihood_ratio_witness_replays_and_serialises():
    from ldpsim.audit.zoo import NoisyMaxValue

    mech = NoisyMaxValue(eps=1.0, m=5)
    res = audit(mech, mech.inputs, 10**5, rng=4)
    assert res.witness.event["kind"] == "likelihood_ratio"
    assert mech.claimed_eps < res.eps_lb <= mech.true_eps
    text = res.witness.to_json()
    json.loads(text)
    with pytest.raises(LdpSimError, match="log_density"):
        Witness.from_json(text).contains(np.zeros(3))
    w = Witness.from_json(text, log_density=mech.log_density)
    rng = np.random.default_rng(77)
    n = 10**5
    p = w.contains(mech.sample(mech.inputs[0][0], n, rng)).mean()
    q = w.contains(mech.sample(mech.inputs[0][1], n, rng)).mean()
    assert p > math.exp(mech.claimed_eps) * q  # the event really separates the two inputs


def test_infinite_interval_ends_are_strict_json():
    w = Witness(0, 1, {"kind": "interval", "lo": -math.inf, "hi": 0.5})
    text = w.to_json()
    assert '"-inf"' in text
    back = Witness.from_json(text)
    assert back.event["lo"] == -math.inf
    np.testing.assert_array_equal(
        back.contains(np.array([-np.inf, -3.0, 0.5, 0.6, np.inf])), [False, True, True, False, False]
    )


def test_atoms_at_infinity_are_events():
    # x: an atom at -inf with probability 0.3 (x' never), otherwise N(0, 1) for both
    def sample(x, n, rng):
        out = rng.normal(size=n)
        if x == 0:
            out[rng.random(n) < 0.3] = -np.inf
        return out

    res = audit(sample, [(0, 1)], 10**5, rng=3)
    # the event {-inf} is impossible under x': eps_LB grows like log(n); anything short of
    # isolating the atom would certify at most log(1.3 / 1) ~ 0.26 ... log(1/0.7) ~ 0.36
    assert res.eps_lb > 5.0
    assert res.witness.contains(np.array([-np.inf])).all() and not res.witness.contains(np.array([0.0])).any()


# --------------------------------------------------------------------------- per-output ratios
def test_per_output_table_against_closed_form():
    k, eps = 4, 1.0
    res = audit(randomized_response(k, eps), [(0, 1)], 10**5, rng=6)
    tab = res.per_output.set_index("output")
    assert list(tab.index) == [0, 1, 2, 3]
    # exact log-ratios of k-ary RR for the pair (0, 1): +eps, -eps, 0, 0 (in either order)
    x = res.witness.x
    sign = 1.0 if x == 0 else -1.0
    np.testing.assert_allclose(tab["log_ratio_exact"], sign * np.array([eps, -eps, 0.0, 0.0]), atol=1e-12)
    assert tab["count_x"].sum() == 10**5 and tab["count_x_prime"].sum() == 10**5
    # observed log-ratios: each count has relative sd <= 1/sqrt(1e5 * 0.15); 6 sd per log-count
    np.testing.assert_allclose(tab["log_ratio_observed"], tab["log_ratio_exact"], atol=2 * 6 / math.sqrt(1.5e4))
    assert audit(Laplace(1.0), [(0.0, 1.0)], 1000, rng=1).per_output is None


# --------------------------------------------------------------------------- sequential
def test_sequential_refutes_early_and_stops():
    res = audit_sequential(broken_rr_sampler(2, 1.0), [(0, 1)], 10**6, 1.0, rng=8)
    assert res.refuted and res.claimed_eps == 1.0
    assert 1.0 < res.eps_lb <= 2.0
    assert res.n_samples_used < 2 * 10**5  # stopped long before the budget of 2e6 outputs
    assert res.rounds[-1]["refuted"] and not any(r["refuted"] for r in res.rounds[:-1])
    assert "alpha spending" in res.method and "REFUTED" in res.summary()


def test_sequential_false_alarm_rate():
    # validity across looks: a correct mechanism is refuted with probability <= alpha
    mech = randomized_response(3, 1.0)
    over = 0
    for seed in range(RUNS):
        res = audit_sequential(mech, [(0, 1)], 2 * 10**5, 1.0, ALPHA, rng=500 + seed)
        assert res.rounds[-1]["n_per_input"] == 2 * 10**5  # ran to the end
        over += res.refuted
    assert over <= allowed_false_alarms(RUNS, ALPHA)


def test_sequential_schedule_and_reproducibility():
    mech = Laplace(1.0)
    r1 = audit_sequential(mech, [(0.0, 1.0)], 50_000, 1.0, first=1000, growth=2.0, rng=5)
    r2 = audit_sequential(mech, [(0.0, 1.0)], 50_000, 1.0, first=1000, growth=2.0, rng=5)
    assert r1 == r2
    sizes = [r["n_certify"] for r in r1.rounds]
    assert sizes == [1000, 2000, 4000, 8000, 16000, 18000]  # 1000 + ... = 50,000
    assert r1.rounds[-1]["n_per_input"] == 50_000 and r1.n_samples_used == 100_000
    assert "alpha/6 per look" in r1.method
    assert r1.eps_lb == max(r["eps_lb_look"] for r in r1.rounds) <= 1.0


def test_sequential_delta_claims():
    from ldpsim.mechanisms import quaternary_mechanism

    mech = quaternary_mechanism(0.7, 0.05)  # exactly (0.7, 0.05)-DP
    ok = audit_sequential(mech, [(0, 1)], 10**5, 0.7, claimed_delta=0.05, rng=2)
    assert not ok.refuted and ok.delta_lb <= 0.05
    bad = audit_sequential(mech, [(0, 1)], 10**5, 0.7, claimed_delta=0.01, rng=2)
    assert bad.refuted and 0.01 < bad.delta_lb <= 0.05


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"claimed_delta": 1.0}, "claimed_delta"),
        ({"first": 5}, "first"),
        ({"growth": 0.5}, "growth"),
        ({"n_max": 1005}, "n_max"),
        ({"claimed_eps": -1.0}, "claimed_eps"),
    ],
)
def test_sequential_bad_input(kwargs, needle):
    args = {"n_max": 10**4, "claimed_eps": 1.0} | kwargs
    with pytest.raises(LdpSimError, match=needle):
        audit_sequential(randomized_response(2, 1.0), [(0, 1)], **args)


# --------------------------------------------------------------------------- review regressions
def test_sequential_checks_every_batch_for_integer_outputs():
    def sample(x, n, rng):  # integers in the first batch, fractional reals afterwards
        return rng.integers(0, 3, size=n) if n == 50 else rng.random(n) * 3

    with pytest.raises(LdpSimError, match="non-integer outputs"):
        audit_sequential(sample, [(0, 1)], 500, 0.1, first=50)


def test_delta_of_zero_mass_event_at_huge_eps():
    # x uniform on {0, 1, 2}, x' uniform on {1, 2}: delta(eps) = 1/3 for every eps
    def sample(x, n, rng):
        return rng.integers(0, 3, size=n) if x == 0 else rng.integers(1, 3, size=n)

    def ld(x, y):
        y = np.asarray(y)
        row = np.log([1 / 3, 1 / 3, 1 / 3]) if x == 0 else np.array([-np.inf, np.log(0.5), np.log(0.5)])
        return row[y]

    res = audit(sample, [(0, 1)], 4000, log_density=ld, eps_for_delta=700.0, rng=1)
    assert 0.25 < res.delta_lb <= 1 / 3 and res.eps_lb == math.inf


def test_growth_huge_and_outputs_too_large_for_integers():
    res = audit_sequential(randomized_response(2, 1.0), [(0, 1)], 100, 1.0, first=10, growth=1e308, rng=0)
    assert [r["n_certify"] for r in res.rounds] == [10, 80]
    with pytest.raises(LdpSimError, match="non-integer outputs"):
        audit(lambda x, n, g: np.full(n, 2.0**63), [(0, 1)], 100, outputs="finite")


def test_infinite_inputs_refused():
    with pytest.raises(LdpSimError, match="finite"):
        audit(Laplace(1.0), [(0.0, math.inf)], 200)


# --------------------------------------------------------------------------- vector outputs
def unary_sampler(k: int, eps: float, reset: bool = True):
    """Symmetric unary encoding: bit x is 1 w.p. p = e^(eps/2) / (1 + e^(eps/2)), every other
    bit 1 w.p. 1 - p (exact eps = eps: two bits differ between neighbouring inputs, each by a
    factor e^(eps/2)). ``reset=False``: the client ORs the true bit into the random bits, so
    bit x is 1 w.p. 1 - p(1 - p) and the pair's bits differ by more than e^(eps/2) (broken)."""
    p = math.exp(eps / 2) / (1 + math.exp(eps / 2))

    def sample(x, n, rng):
        bits = rng.random((n, k)) < 1 - p
        if reset:
            bits[:, x] = rng.random(n) < p
        else:
            bits[:, x] |= rng.random(n) < p
        return bits

    return sample


def unary_log_density(k: int, eps: float):
    p = math.exp(eps / 2) / (1 + math.exp(eps / 2))

    def ld(x, y):
        y = np.asarray(y)
        on = np.where(np.arange(k) == x, p, 1 - p)
        return np.sum(np.where(y == 1, np.log(on), np.log1p(-on)), axis=1)

    return ld


def test_integer_vector_outputs():
    k, eps = 4, 1.0
    over = 0
    for seed in range(RUNS):
        res = audit(unary_sampler(k, eps), [(0, 1)], 2 * 10**4, rng=seed)
        over += res.eps_lb > eps
    assert over <= allowed_false_alarms(RUNS, ALPHA)
    # the witness is a set of bit vectors and replays on fresh bit vectors
    res = audit(unary_sampler(k, eps), [(0, 1)], 10**5, rng=1, log_density=unary_log_density(k, eps))
    assert 0.8 < res.eps_lb <= eps
    vals = res.witness.event["values"]
    assert all(len(v) == k for v in vals)
    w = Witness.from_json(res.witness.to_json())
    y = unary_sampler(k, eps)(res.witness.x, 1000, np.random.default_rng(3))
    expected = np.array([list(row) in vals for row in y.astype(int).tolist()])
    np.testing.assert_array_equal(w.contains(y), expected)
    # per-output table: vectors, with exact log-ratios e.g. +-eps for 1000 vs 0100 at x=0, x'=1
    tab = res.per_output.set_index("output")
    x = res.witness.x
    one_x = tuple(int(j == x) for j in range(k))
    assert tab.loc[[one_x], "log_ratio_exact"].iloc[0] == pytest.approx(eps)
    # the broken client (no reset) is refuted
    assert audit(unary_sampler(k, eps, reset=False), [(0, 1)], 10**5, rng=2).eps_lb > eps


def test_real_vector_outputs_projected():
    from ldpsim.audit.zoo import HistogramWrongScale

    h = HistogramWrongScale(eps=0.5, bins=4)  # claims 0.5, true eps 2 (one bin moves by 1)
    res = audit(lambda x, n, rng: h.sample_histogram(x, n, rng), h.inputs, 10**5, rng=2)
    assert h.claimed_eps < res.eps_lb <= h.true_eps
    assert len(res.witness.event["w"]) == 4
    # correct Laplace histogram (scale 1/eps per bin): never above eps
    eps = 1.0
    over = 0
    for seed in range(RUNS):

        def hist(x, n, rng):
            return np.asarray(x, dtype=float) + rng.laplace(0.0, 1.0 / eps, size=(n, 3))

        over += audit(hist, [((0, 0, 0), (1, 0, 0))], 2 * 10**4, rng=seed).eps_lb > eps
    assert over <= allowed_false_alarms(RUNS, ALPHA)


def test_vector_outputs_must_keep_their_shape():
    def sample(x, n, rng):
        return rng.integers(0, 2, size=(n, 3 if x == 0 else 4))

    with pytest.raises(LdpSimError, match="widths"):
        audit(sample, [(0, 1)], 1000)
    w = Witness(0, 1, {"kind": "threshold", "t": 0.0, "side": "above", "w": [1.0, 0.0]})
    with pytest.raises(LdpSimError, match="vectors of length 2"):
        w.contains(np.zeros((5, 3)))


def test_review_vector_edge_cases():
    # a sampler switching from scalar to vector outputs in a later batch is an error
    calls = {"n": 0}

    def switching(x, n, rng):
        calls["n"] += 1
        return rng.integers(0, 50, n) if calls["n"] <= 2 else rng.integers(0, 2, (n, 20))

    with pytest.raises(LdpSimError, match="same shape in every batch"):
        audit_sequential(switching, [(0, 1)], 3000, 0.5, first=1000, rng=0)
    # exact row membership: fractional or out-of-range rows match nothing
    w = Witness(0, 1, {"kind": "outputs", "values": [[0, 1], [-1, 1]]})
    np.testing.assert_array_equal(w.contains(np.array([[0.7, 1.2], [0.0, 1.0]])), [False, True])
    np.testing.assert_array_equal(w.contains(np.array([[2**64 - 1, 1]], dtype=np.uint64)), [False])
    with pytest.raises(LdpSimError, match="int64"):
        Witness.from_json(
            '{"x": 0, "x_prime": 1, "event": {"kind": "outputs", "values": [[1180591620717411303424, 1]]}}'
        )
    # empty events, scalar events on vectors, n x 1 outputs
    assert Witness(0, 1, {"kind": "outputs", "values": []}).contains(np.zeros((4, 3), dtype=int)).shape == (4,)
    with pytest.raises(LdpSimError, match="scalar outputs"):
        Witness(0, 1, {"kind": "outputs", "values": [1]}).contains(np.zeros((4, 3), dtype=int))
    np.testing.assert_array_equal(
        Witness(0, 1, {"kind": "threshold", "t": 0.5, "side": "above"}).contains(np.array([[0.0], [1.0]])),
        [False, True],
    )
    # bits as booleans are finite outputs 0 / 1
    res = audit(lambda x, n, rng: rng.random(n) < (0.75 if x == 0 else 0.25), [(0, 1)], 10**4, rng=1)
    assert 0.5 < res.eps_lb <= math.log(3)
