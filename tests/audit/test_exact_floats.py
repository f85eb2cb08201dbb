"""Exact-floats audit mode (``exact_floats=True``, ``ldpsim audit --exact-floats``): events on
the exact bit patterns of real outputs (Mironov 2012).

Refutations. The float Laplace ``x + Z`` with ``Z ~ Lap(2)`` (eps = 0.5) and the pair (0, 1):
for ``-2 < y < 0.5`` the output ``y = fl(1 + Z)`` lies in a finer binade than ``Z``, so the sum
is exact and its last mantissa bit is 0; the event E = {-2 < y < 0.5, last bit 1} has
probability exactly 0 under 1, and about P(-2 < Z < 0.5) / 2 = 0.21 under 0 (the float
Gaussian: about 0.12). Every grid interval inside (-2, 0.5) with the ``fewer than 1 zero``
split is such an event; on 10^4 selection outputs the best of them scores about log(0.2 /
4e-3) ~ 4 at the simultaneous level, and the selected event (scored at least as high) is
certified on 10^4 fresh outputs at eps_LB ~ 6 (the bound exceeds 0.5 unless ~2,000 expected
hits fall below ~20: a binomial tail far below 1e-30). The same holds for delta at eps = 1
(the Gaussian claim, delta = 1e-5 against a certified ~0.1) and at the first look of the
sequential audit (~200 expected hits against ~0 under 1). So the refutation checks fail with
probability far below 1e-6; measured margins are an order of magnitude.

Without the mode the audit tests the mathematical mechanism (grid events never look at the
last bits, whose effect on an interval's probability is ~1e-16 relative; likelihood ratios
are read with a tolerance), so those "not refuted" checks err with probability <= alpha.

Never refutes: mechanisms whose outputs are exact (integer outputs, integers stored as
floats, a grid of powers of two, the catalog's discrete and snapped samplers) have no float
leak, and the mode keeps the validity of the audit: each audit errs with probability <= its
alpha. Every audit of this file that must not refute runs at ``STRICT = FALSE_FAILURE / 20``
(5e-8) and there are ``MUST_NOT_REFUTE <= 20`` of them, so together they fail with
probability <= FALSE_FAILURE = 1e-6 (union bound; tests/stats_checks.py). The slow
calibration test allows the number of false alarms given by an exact binomial tail at
FALSE_FAILURE.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim import LdpSimError
from ldpsim.audit import Witness, audit, audit_sequential, target
from ldpsim.audit.events import LOW_BITS
from ldpsim.audit.witnesses import trailing_zeros
from ldpsim.cli import main
from ldpsim.mechanisms import catalog
from tests.stats_checks import FALSE_FAILURE

N = 20_000
STRICT = FALSE_FAILURE / 20  # alpha of every audit that must not refute (at most 20 of them)

FLOATS = [("laplace", {"eps": 0.5}), ("gaussian", {"eps": 1.0, "delta": 1e-5})]

# the safe samplers of the catalog (docs/floating-point.md), where they exist: one audit each
SAFE_NAMES = (
    "discrete_laplace",
    "discrete_gaussian",
    "snapped_laplace",
    "discrete_laplace_bounded",
    "snapped_laplace_bounded",
)
SAFE = [n for n in SAFE_NAMES if n in catalog.names()]

# audits that must not refute: the float samplers without the mode (4 single, 4 sequential),
# 2 x (rr, geometric, snapped-like), SAFE, and one on the command line
MUST_NOT_REFUTE = 8 + 6 + len(SAFE) + 1
assert MUST_NOT_REFUTE * STRICT <= FALSE_FAILURE


def _claim(t):
    """The eps at which delta is audited: the claimed eps of an (eps, delta) claim, else None."""
    return t.claimed_eps if t.claimed_delta > 0 else None


def _refuted(res, t):
    return res.eps_lb > t.claimed_eps if t.claimed_delta == 0 else res.delta_lb > t.claimed_delta


# --------------------------------------------------------------------------- bits
def test_trailing_zeros_exact():
    y = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, 1.5, 1.25, -1.75, 3.0, 1.0 + 2**-52, 5e-324, 1e-323])
    assert trailing_zeros(y).tolist() == [52, 52, 52, 52, 52, 51, 50, 50, 51, 0, 0, 1]
    z = np.random.default_rng(0).laplace(0.0, 2.0, 2000)
    fields = z.view(np.uint64) & np.uint64(2**52 - 1)
    ref = [52 if f == 0 else (int(f) & -int(f)).bit_length() - 1 for f in fields]
    assert trailing_zeros(z).tolist() == ref
    assert trailing_zeros(np.array([3, 4, 6])).tolist() == [51, 52, 51]  # integers read as float64


def test_the_leak_is_real():
    # 1 + Z, Z in (-3, -2): the sum is exact in a finer binade, its last bit always 0, while
    # the Laplace sampler's Z has it 1 about half the time (~7,000 draws: 0.5 +- 0.006)
    z = np.random.default_rng(1).laplace(0.0, 2.0, 10**5)
    z = z[(z > -3.0) & (z < -2.0)]
    assert np.all(trailing_zeros(1.0 + z) >= 1)
    assert 0.45 < np.mean(trailing_zeros(z) == 0) < 0.55


# --------------------------------------------------------------------------- refutations
@pytest.mark.parametrize("name, params", FLOATS)
@pytest.mark.parametrize("density", [True, False])
def test_float_samplers_refuted_with_exact_floats(name, params, density):
    t = target(name, **params)
    mech = t.mechanism if density else t.sampler
    eps_d = _claim(t)
    res = audit(mech, t.pairs, N, 0.05, rng=1, eps_for_delta=eps_d, exact_floats=True)
    assert _refuted(res, t)
    assert res.eps_lb > 3.0 and math.isfinite(res.eps_lb)
    assert "exact-floats mode" in res.method
    assert ("compared exactly" in res.method) == density
    # the witness replays on fresh samples: hits under x, none under x'
    w = res.witness
    assert w.event["kind"] in ("low_bits", "likelihood_ratio")
    rng = np.random.default_rng(2)
    assert w.contains(t.sampler(w.x, 10**4, rng), t.mechanism.log_density).mean() > 0.02
    assert not w.contains(t.sampler(w.x_prime, 10**4, rng), t.mechanism.log_density).any()
    # without the mode: the mathematical mechanism, not refuted (alpha = STRICT)
    res = audit(mech, t.pairs, N, STRICT, rng=1, eps_for_delta=eps_d)
    assert not _refuted(res, t) and "exact-floats" not in res.method


@pytest.mark.parametrize("name, params", FLOATS)
@pytest.mark.parametrize("density", [True, False])
def test_sequential_refutes_at_the_first_look(name, params, density):
    t = target(name, **params)
    mech = t.mechanism if density else t.sampler
    kw = dict(claimed_delta=t.claimed_delta, rng=3)
    res = audit_sequential(mech, t.pairs, 10**5, t.claimed_eps, 0.05, exact_floats=True, **kw)
    assert res.refuted and len(res.rounds) == 1 and res.rounds[0]["n_per_input"] == 2000
    assert "exact-floats mode" in res.method
    res = audit_sequential(mech, t.pairs, N, t.claimed_eps, STRICT, **kw)
    assert not res.refuted


# --------------------------------------------------------------------------- soundness
LAM, B, SCALE = 0.25, 4.0, 2.0  # grid 2^-2, clamp to [-4, 4], Laplace scale 2 (eps 0.5)
SNAP_PAIRS = [(0.0, 1.0), (0.0, 0.3)]


def snapped_sample(x, n, rng):
    """round(x + Z) to the grid 2^-2 Z, then clamped to [-4, 4]: every step after the sum is
    exact (division and multiplication by a power of two, rounding to an integer), so an
    output is a grid point and its bits say nothing beyond its value."""
    y = np.round((float(x) + rng.laplace(0.0, SCALE, n)) / LAM) * LAM
    return np.clip(y, -B, B)


def _cdf(t):
    t = np.asarray(t, dtype=np.float64)
    return np.where(t < 0, 0.5 * np.exp(np.minimum(t, 0.0) / SCALE), 1.0 - 0.5 * np.exp(-np.maximum(t, 0.0) / SCALE))


GRID = np.arange(-B, B + LAM / 2, LAM)


def snapped_pmf(x):
    """Mass of every grid point under input x: the Laplace mass of its cell (the end cells
    take the tails)."""
    lo = np.concatenate([[-np.inf], GRID[1:] - LAM / 2])
    hi = np.concatenate([GRID[:-1] + LAM / 2, [np.inf]])
    upper = np.where(np.isinf(hi), 1.0, _cdf(np.where(np.isinf(hi), 0.0, hi - x)))
    lower = np.where(np.isinf(lo), 0.0, _cdf(np.where(np.isinf(lo), 0.0, lo - x)))
    return upper - lower


def snapped_log_density(x, y):
    j = np.rint((np.asarray(y, dtype=np.float64) + B) / LAM).astype(np.int64)
    ok = (j >= 0) & (j < GRID.size) & (np.asarray(y) == GRID[np.clip(j, 0, GRID.size - 1)])
    return np.where(ok, np.log(snapped_pmf(float(x)))[np.clip(j, 0, GRID.size - 1)], -np.inf)


def snapped_eps():
    """The exact eps of the snapped-like sampler on SNAP_PAIRS, from the grid cell masses.
    (Rounding after the sum is post-processing, so it is at most 0.5: 0.5 on (0, 1) through
    the tails, 0.15 on (0, 0.3). The float sum moves a cell's mass by ~1e-16 relative, far
    below what any audit here can see.)"""
    return max(float(np.max(np.abs(np.log(snapped_pmf(a)) - np.log(snapped_pmf(b))))) for a, b in SNAP_PAIRS)


def test_snapped_like_cell_masses():
    assert snapped_eps() == pytest.approx(0.5, rel=1e-12)
    assert snapped_pmf(0.3).sum() == pytest.approx(1.0, abs=1e-15)
    y = snapped_sample(0.3, 10**5, np.random.default_rng(4))
    emp = np.array([(y == g).mean() for g in GRID])
    assert np.max(np.abs(emp - snapped_pmf(0.3))) < 0.006  # 6 standard errors at most


@pytest.mark.parametrize("seed", [1, 2])
def test_never_refutes_exact_outputs(seed):
    # randomized response (finite outputs: the mode is accepted and adds nothing)
    rr = target("randomized_response", k=4, eps=1.0)
    res = audit(rr.mechanism, rr.pairs, N, STRICT, rng=seed, exact_floats=True)
    assert res.eps_lb <= rr.true_eps and "integer outputs have no float bits" in res.method
    # geometric noise: integers stored as floats, with the density (seed 1) or without (seed 2)
    geo = target("geometric", eps=1.0)
    res = audit(geo.mechanism if seed == 1 else geo.sampler, geo.pairs, N, STRICT, rng=seed, exact_floats=True)
    assert res.eps_lb <= geo.true_eps and "T in {1, 2, 4}" in res.method
    # a grid of powers of two, computed exactly
    ld = snapped_log_density if seed == 1 else None
    res = audit(snapped_sample, SNAP_PAIRS, N, STRICT, rng=seed, log_density=ld, exact_floats=True)
    assert res.eps_lb <= snapped_eps()


@pytest.mark.skipif(not SAFE, reason="no exact (discrete or snapped) sampler in the catalog yet")
@pytest.mark.parametrize("name", SAFE)
def test_never_refutes_safe_samplers(name):
    t = target(name)
    eps_d = _claim(t)
    res = audit(t.mechanism, t.pairs, N, STRICT, rng=5, eps_for_delta=eps_d, exact_floats=True)
    assert res.eps_lb <= t.true_eps
    if eps_d is not None and t.true_delta is not None:
        assert res.delta_lb <= t.true_delta(eps_d)


def allowed_false_alarms(runs: int, alpha: float, tail: float = FALSE_FAILURE) -> int:
    """Smallest c with P(Bin(runs, alpha) > c) <= tail."""
    c = 0
    while stats.binom.sf(c, runs, alpha) > tail:
        c += 1
    return c


@pytest.mark.slow
def test_false_alarm_rate_of_the_mode():
    runs, alpha = 20, 0.05
    geo = target("geometric", eps=1.0)
    cases = [(geo.mechanism, geo.pairs, "auto", geo.true_eps), (geo.sampler, geo.pairs, None, geo.true_eps)]
    cases += [(snapped_sample, SNAP_PAIRS, ld, snapped_eps()) for ld in (snapped_log_density, None)]
    pure = [target(n) for n in SAFE if target(n).claimed_delta == 0]  # the discrete Gaussian's eps is inf
    cases += [(t.mechanism, t.pairs, "auto", t.true_eps) for t in pure]
    for mech, pairs, ld, eps in cases:
        over = sum(
            audit(mech, pairs, 10**5, alpha, rng=100 + seed, log_density=ld, exact_floats=True).eps_lb > eps
            for seed in range(runs)
        )
        assert over <= allowed_false_alarms(runs, alpha), mech


# --------------------------------------------------------------------------- witnesses
EVENTS = [
    {"kind": "low_bits", "lo": -2.0, "hi": 0.5, "zeros": 1, "side": "fewer"},
    {"kind": "low_bits", "lo": float("-inf"), "hi": float("inf"), "zeros": 4, "side": "at_least"},
    {"kind": "low_bits", "lo": -1.0, "hi": 1.0, "zeros": 2, "side": "fewer", "w": [0.0, 1.0]},
    {"kind": "likelihood_ratio", "c": 0.5, "exact": True},
]


@pytest.mark.parametrize("event", EVENTS)
def test_new_events_round_trip(event):
    w = Witness(0.0, 1.0, event)
    text = w.to_json()
    json.loads(text)  # strict JSON
    assert Witness.from_json(text) == w


def test_low_bits_contains():
    y = np.array([-3.0, -1.5, -1.25, -1.0 - 2**-52, 0.0, 0.5 + 2**-53, 2.0 - 2**-52])
    few = Witness(0, 1, {"kind": "low_bits", "lo": -2.0, "hi": 2.0, "zeros": 2, "side": "fewer"})
    assert few.contains(y).tolist() == [False, False, False, True, False, True, True]
    many = Witness(0, 1, {"kind": "low_bits", "lo": -2.0, "hi": 2.0, "zeros": 2, "side": "at_least"})
    assert many.contains(y).tolist() == [False, True, True, False, True, False, False]
    vec = Witness(0, 1, {"kind": "low_bits", "lo": -2.0, "hi": 2.0, "zeros": 1, "side": "fewer", "w": [0.0, 1.0]})
    assert vec.contains(np.array([[9.0, 1.0 + 2**-52], [1.0 + 2**-52, 1.0]])).tolist() == [True, False]


def test_exact_likelihood_ratio_contains():
    ld = lambda x, y: -np.abs(np.asarray(y) - x)
    y = np.array([-5.0, 0.5])  # log-ratios 1 and 0: the tolerance reads c = 1 + 1e-12 as 1
    assert Witness(0.0, 1.0, {"kind": "likelihood_ratio", "c": 1.0 + 1e-12}, ld).contains(y).tolist() == [True, False]
    exact = Witness(0.0, 1.0, {"kind": "likelihood_ratio", "c": 1.0 + 1e-12, "exact": True}, ld)
    assert exact.contains(y).tolist() == [False, False]
    assert "exact" not in Witness(0.0, 1.0, {"kind": "likelihood_ratio", "c": 1.0, "exact": False}).event


@pytest.mark.parametrize(
    "event, needle",
    [
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 0, "side": "fewer"}, "event zeros"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 53, "side": "fewer"}, "event zeros"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 1.5, "side": "fewer"}, "event zeros"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": True, "side": "fewer"}, "event zeros"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 1, "side": "more"}, "event side"),
        ({"kind": "low_bits", "lo": 1.0, "hi": 1.0, "zeros": 1, "side": "fewer"}, "event"),
        ({"kind": "low_bits", "lo": float("nan"), "hi": 1.0, "zeros": 1, "side": "fewer"}, "event lo"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 1}, "event"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 1, "side": "fewer", "t": 0}, "event"),
        ({"kind": "low_bits", "lo": 0.0, "hi": 1.0, "zeros": 1, "side": "fewer", "w": ["a"]}, "event w"),
        ({"kind": "likelihood_ratio", "c": 0.0, "exact": "yes"}, "event exact"),
        ({"kind": "interval", "lo": 0.0, "hi": 1.0, "zeros": 1}, "event"),
    ],
)
def test_bad_new_events_one_line(event, needle):
    with pytest.raises(LdpSimError, match=f"^{needle}: got ") as err:
        Witness(0, 1, event)
    assert "\n" not in str(err.value)


def test_bad_flag():
    with pytest.raises(LdpSimError, match="^exact_floats: got 'yes', expected True or False$"):
        audit(snapped_sample, SNAP_PAIRS, N, exact_floats="yes")
    with pytest.raises(LdpSimError, match="^exact_floats: got 1, expected"):
        audit_sequential(snapped_sample, SNAP_PAIRS, N, 1.0, exact_floats=1)


def test_candidates_only_in_the_mode():
    t = target("laplace", eps=0.5)
    plain = audit(t.sampler, t.pairs, 2000, rng=6)
    assert plain == audit(t.sampler, t.pairs, 2000, rng=6, exact_floats=False)
    assert "exact-floats" not in plain.method and LOW_BITS == (1, 2, 4)


# --------------------------------------------------------------------------- command line
def test_cli_exact_floats(capsys):
    argv = ["audit", "laplace:eps=0.5", "--n", "20000", "--seed", "1"]
    assert main([*argv, "--exact-floats"]) == 0
    out = capsys.readouterr().out
    assert "exact-floats mode" in out and "claim (eps=0.5): REFUTED at alpha 0.05" in out
    assert main([*argv, "--exact-floats", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["exact_floats"] is True and res["refuted"] is True and res["witness"]["event"]["kind"] == "low_bits"
    assert main([*argv, "--json", "--alpha", str(STRICT)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["exact_floats"] is False and res["refuted"] is False
