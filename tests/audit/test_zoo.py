"""The zoo of deliberately broken mechanisms (ldpsim.audit.zoo): samplers against their exact
laws, the documented true eps against the exact matrices / densities, and the mechanism
contract (params, neighbours, epsilon(delta), delta(eps), NotAvailable, has_density)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from ldpsim.audit import zoo as b
from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog, from_matrix
from ldpsim.mechanisms.base import Mechanism, NoDensity, NotAvailable
from ldpsim.stats import dkw
from tests.oracles import brute_force_delta
from tests.stats_checks import FALSE_FAILURE, assert_sample_law

#: false-failure probability of each check: a test runs one check per input row (at most 4
#: rows here), so a tenth of FALSE_FAILURE per check keeps every test within it
PER_CHECK = FALSE_FAILURE / 10
N = 200_000

FINITE = {
    "doubled_rr": lambda: b.DoubledRR(3, 0.7),
    "unary_no_reset": lambda: b.UnaryNoReset(4, 1.0),
    "svt_no_query_noise": lambda: b.SVTNoQueryNoise(1.0),
    "svt_no_cutoff": lambda: b.SVTNoCutoff(1.0, 3),
}
REAL = {
    "laplace_wrong_scale": lambda: b.LaplaceWrongScale(0.5),
    "histogram_wrong_scale": lambda: b.HistogramWrongScale(0.5, bins=3, affected=1),
    "noisy_max_value": lambda: b.NoisyMaxValue(1.0, 5),
    "svt_returns_value": lambda: b.SVTReturnsValue(1.0, 7),
}


@pytest.mark.parametrize("key", sorted(FINITE))
def test_finite_sampler_follows_exact_matrix(key):
    mech = FINITE[key]()
    M = mech.matrix()
    assert M.shape[0] == len(mech.rows)
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-10)
    assert np.all(M >= 0)
    for r, x in enumerate(mech.rows):
        y = mech.sample(x, N, rng=1000 + r)
        assert y.shape == (N,) and y.dtype == np.int64
        assert np.all(M[r][y] > 0), "an output of probability zero was produced"
        assert_sample_law(y, M[r], PER_CHECK)


@pytest.mark.parametrize("key", sorted(FINITE))
def test_finite_true_eps_is_the_matrix_eps(key):
    mech = FINITE[key]()
    got = from_matrix(mech.matrix()).epsilon()
    if math.isinf(mech.true_eps):
        assert math.isinf(got)
    else:
        assert got == pytest.approx(mech.true_eps, rel=1e-9)
    assert mech.true_eps > mech.claimed_eps  # every member is broken at its defaults


def test_svt_no_cutoff_eps_within_its_derived_bounds():
    for m in (1, 2, 3):
        mech = b.SVTNoCutoff(1.0, m)
        lo, hi = mech.eps_bounds
        assert lo <= mech.true_eps <= hi
        assert lo == pytest.approx(m * 1.0 / 4)
    # quadrature against itself at a looser tolerance: the small cells are resolved
    assert b.SVTNoCutoff(0.5, 3).true_eps == pytest.approx(0.6215139746633964, rel=1e-7)


def _dkw_ok(y, cdf_values, grid):
    y = np.sort(y)
    emp = np.searchsorted(y, grid, side="right") / y.size
    return float(np.max(np.abs(emp - cdf_values))), dkw(y.size, PER_CHECK)


@pytest.mark.parametrize("key", sorted(REAL))
def test_real_sampler_follows_exact_cdf(key):
    mech = REAL[key]()
    grid_pts = 60 if key == "svt_returns_value" else 400
    for r, x in enumerate(mech.rows):
        y = mech.sample(x, N, rng=2000 + r)
        assert y.shape == (N,) and y.dtype == np.float64
        finite = y[np.isfinite(y)]
        grid = np.quantile(finite, np.linspace(0.001, 0.999, grid_pts))
        dev, bound = _dkw_ok(y, mech.cdf(x, grid), grid)  # DKW: sup over all t, so any grid
        assert dev <= bound, f"{key} input {x}: sup deviation {dev:.4g} > DKW {bound:.4g}"


def test_svt_returns_value_atoms():
    mech = b.SVTReturnsValue(1.0, 7)
    for r, x in enumerate(mech.rows):
        none, last, earlier = mech.masses(x)
        assert none + last + earlier == pytest.approx(1.0, abs=1e-10)
        y = mech.sample(x, N, rng=3000 + r)
        for k, p in ((np.count_nonzero(y == -np.inf), none), (np.count_nonzero(y == np.inf), earlier)):
            assert stats.binom.cdf(k, N, p) > PER_CHECK / 4 and stats.binom.sf(k - 1, N, p) > PER_CHECK / 4


def test_laplace_and_histogram_true_eps():
    for mech in (b.LaplaceWrongScale(0.25), b.HistogramWrongScale(0.25, bins=5, affected=2)):
        assert mech.true_eps == pytest.approx(4.0)
        ((x, xp),) = mech.inputs
        t = np.linspace(-2, 2.4, 2001) + 0.0123  # off the kinks, upper tails not cancelling
        h = 1e-4  # density ratio from the exact CDF (central differences)
        dens = lambda z: (mech.cdf(z, t + h) - mech.cdf(z, t - h)) / (2 * h)
        lr = np.log(dens(x)) - np.log(dens(xp))
        assert np.max(np.abs(lr)) == pytest.approx(mech.true_eps, rel=1e-5)
        assert np.max(np.abs(lr)) <= mech.true_eps * (1 + 1e-5)
    hist = b.HistogramWrongScale(0.5, bins=3)
    H = hist.sample_histogram((0, 1, 1), 1000, rng=1)
    assert H.shape == (1000, 3)
    assert abs(np.median(H[:, 1]) - 2.0) < 0.2


def test_noisy_max_value_true_eps():
    for eps, m in ((1.0, 5), (0.5, 3), (2.0, 1)):
        mech = b.NoisyMaxValue(eps, m)
        assert mech.true_eps == pytest.approx(m * eps / 2)
        ((x, xp),) = mech.inputs
        t = np.linspace(-6, 6, 1201) * mech.scale + 0.0123  # off the kinks
        h = 1e-5 * mech.scale
        dens = lambda z: (mech.cdf(z, t + h) - mech.cdf(z, t - h)) / (2 * h)
        lr = np.log(dens(x)) - np.log(dens(xp))
        assert np.max(np.abs(lr)) <= mech.true_eps * (1 + 1e-4)
        assert np.max(np.abs(lr)) == pytest.approx(mech.true_eps, rel=1e-4)  # attained for t <= 0


def test_svt_returns_value_true_eps():
    mech = b.SVTReturnsValue(1.0, 7)
    assert mech.true_eps == pytest.approx(2.0)
    ((x, xp),) = mech.inputs
    neg = np.array([-12.0, -3.0, -0.5, 0.0])
    pos = np.array([0.3, 1.0, 2.0, 6.0, 20.0])
    lr_neg = np.log(mech.density(x, neg)) - np.log(mech.density(xp, neg))
    lr_pos = np.log(mech.density(x, pos)) - np.log(mech.density(xp, pos))
    np.testing.assert_allclose(lr_neg, mech.true_eps, rtol=1e-7)
    assert np.all(np.abs(lr_pos) <= mech.true_eps + 1e-9)
    atoms = [np.log(a) - np.log(c) for a, c in zip(mech.masses(x), mech.masses(xp))]
    assert max(abs(a) for a in atoms) <= mech.true_eps


def test_zoo_and_output_contract():
    for name in catalog.names("broken"):
        mech = catalog.build(name)  # the catalog's default instance
        assert mech.name == name and isinstance(mech, Mechanism)
        assert mech.true_eps > mech.claimed_eps
        assert mech.inputs and all(len(p) == 2 for p in mech.inputs)
        x = mech.inputs[0][0]
        y = mech.sample(x, 7, rng=0)
        assert y.ndim == 1 and y.shape == (7,)
        assert y.dtype == (np.float64 if not mech.finite else np.int64)
        assert mech.sample(x, 0, rng=0).shape == (0,)
        np.testing.assert_array_equal(mech.sample(x, 50, rng=5), mech.sample(x, 50, rng=5))


def test_bad_inputs_are_named():
    with pytest.raises(LdpSimError, match="x"):
        b.NoisyMaxValue(1.0, 3).sample((0, 0), 5)
    with pytest.raises(LdpSimError, match="x"):
        b.SVTNoCutoff(1.0, 2).sample((0, 1), 5)
    with pytest.raises(LdpSimError, match="eps"):
        b.DoubledRR(2, 0.0)
    with pytest.raises(LdpSimError, match="k"):
        b.UnaryNoReset(17, 1.0)
    with pytest.raises(LdpSimError, match="n"):
        b.DoubledRR(2, 1.0).sample(0, -1)
    with pytest.raises(LdpSimError, match="x"):
        b.HistogramWrongScale(1.0, bins=2).sample((0, 5), 3)


@pytest.mark.parametrize("eps", [355.0, 700.0, 800.0])
def test_doubled_rr_matrix_past_e_to_the_709(eps):
    """Found by tests/test_api_edges.py: the matrix took e^{2 eps} (OverflowError from eps =
    355); it now comes from the log rows: diagonal 1/(1 + (k-1) e^{-2eps}), the rest its
    e^{-2eps} multiple (0 in doubles here), and the exact eps on the matrix rows stays 2 eps."""
    m = b.DoubledRR(3, eps)
    M = m.matrix()
    assert np.all(np.isfinite(M)) and np.allclose(M.sum(axis=1), 1.0)
    assert np.allclose(np.diag(M), 1.0)
    lm = np.array([m._log_row(i) for i in range(3)])
    assert lm[0, 1] == pytest.approx(-2 * eps, rel=1e-12)


def test_svt_no_cutoff_refuses_eps_below_what_its_quadrature_resolves():
    """At eps = 1e-300 the quadrature over rho ~ Lap(2e300) failed (rows summing to 7e-298,
    then 'Q: got row 0 summing to ...' from the matrix check, naming no parameter of the
    target); below 1e-6 the ratios 1 + O(eps) are not resolved, so eps is refused there."""
    with pytest.raises(LdpSimError, match=r"^eps: got 1e-300, expected eps >= 1e-06"):
        b.SVTNoCutoff(1e-300)
    lo = b.SVTNoCutoff(1e-6)
    assert lo.eps_bounds[0] <= lo.true_eps <= lo.eps_bounds[1]


# --------------------------------------------------------------------------- the contract
def test_params_rebuild_the_mechanism_and_match_the_catalog():
    for name in catalog.names("broken"):
        mech = catalog.build(name)
        e = catalog.entry(name)
        assert list(mech.params) == list(e.params), name  # same parameters, same order
        assert mech.params["eps"] == mech.claimed_eps
        assert type(mech)(**mech.params) == mech and hash(type(mech)(**mech.params)) == hash(mech)
        assert catalog.build(name, **mech.params) == mech
        assert e.claimed(mech.params) == (mech.claimed_eps, 0.0)
        assert mech.neighbours() == list(mech.inputs)
        assert repr(mech).startswith(
            type(mech).__name__ + "(eps=" if list(mech.params)[0] == "eps" else type(mech).__name__ + "(k="
        )
        assert (mech.output_size is not None) == mech.finite
        if mech.finite:
            assert mech.output_size == mech.matrix().shape[1]
    assert b.DoubledRR(3, 0.7) != b.DoubledRR(3, 0.8)


def test_density_flags():
    svt = b.SVTReturnsValue(1.0, 3)
    assert not svt.has_density
    with pytest.raises(NoDensity):
        svt.log_density((0, 0, 0, 0), np.array([0.0]))
    for key in (
        "doubled_rr",
        "unary_no_reset",
        "laplace_wrong_scale",
        "histogram_wrong_scale",
        "noisy_max_value",
        "svt_no_query_noise",
        "svt_no_cutoff",
    ):
        assert catalog.build("broken." + key).has_density, key


FINITE_SMALL = {  # matrices small enough to enumerate every event (<= 16 outputs)
    "doubled_rr": lambda: b.DoubledRR(3, 0.7),
    "unary_no_reset": lambda: b.UnaryNoReset(3, 1.0),
    "svt_no_query_noise": lambda: b.SVTNoQueryNoise(1.0),
    "svt_no_cutoff_1": lambda: b.SVTNoCutoff(1.0, 1),
    "svt_no_cutoff_2": lambda: b.SVTNoCutoff(0.7, 2),
}


@pytest.mark.parametrize("key", sorted(FINITE_SMALL))
def test_finite_delta_and_epsilon_against_brute_force_over_events(key):
    """delta(eps) is the hockey-stick divergence over the matrix rows, by its definition (max
    over every event and ordered pair of rows, tests/oracles.py); epsilon(delta) is the
    smallest eps with that divergence <= delta: checked on both sides of the returned value."""
    mech = FINITE_SMALL[key]()
    Q = mech.matrix()
    grid = [0.0, 0.1, 0.5, 1.0, 2.0, math.inf]
    for eps in grid:
        assert mech.delta(eps) == pytest.approx(brute_force_delta(Q, eps), rel=1e-9, abs=1e-12), eps
    assert mech.epsilon(0.0) == mech.true_eps and mech.epsilon(1.0) == 0.0
    for delta in (1e-6, 1e-3, 0.01, 0.05, 0.2, 0.5, 0.9):
        e = mech.epsilon(delta)
        assert e >= 0.0
        if math.isinf(e):
            assert brute_force_delta(Q, 800.0) > delta  # the mass no eps covers exceeds delta
            continue
        assert brute_force_delta(Q, e) <= delta * (1 + 1e-9) + 1e-12, (delta, e)
        if e > 0:
            assert brute_force_delta(Q, e * (1 - 1e-7) - 1e-12) > delta, (delta, e)
        assert mech.is_private(e, delta) and (e == 0 or not mech.is_private(e * 0.99, delta))


def _laplace_pair_delta_by_quadrature(scale: float, eps: float) -> float:
    """``int (p(y) - e^eps q(y))_+ dy`` for p = Lap(0, scale), q = Lap(1, scale), by quadrature
    split at the kinks 0 and 1 and where the integrand reaches 0 (``p = e^eps q`` at
    ``y = (1 - eps scale)/2``); independent of the closed form in the zoo."""
    f = lambda y: max(0.0, stats.laplace.pdf(y, 0, scale) - math.exp(eps) * stats.laplace.pdf(y, 1, scale))
    cuts = sorted({0.0, 1.0, min(1.0, max(0.0, (1.0 - eps * scale) / 2.0))})
    pts = [-np.inf, *cuts, np.inf]
    return sum(
        integrate.quad(f, a, c, epsabs=1e-15, epsrel=1e-12, limit=200)[0] for a, c in zip(pts[:-1], pts[1:]) if c > a
    )


@pytest.mark.parametrize(
    "mech",
    [b.LaplaceWrongScale(0.5), b.LaplaceWrongScale(0.25), b.HistogramWrongScale(0.5, bins=3, affected=1)],
    ids=repr,
)
def test_laplace_pairs_delta_curve_against_quadrature(mech):
    assert mech.exact_delta
    for eps in (0.0, 0.3, 1.0, 0.9 * mech.true_eps, mech.true_eps, 5.0):
        assert mech.delta(eps) == pytest.approx(_laplace_pair_delta_by_quadrature(mech.scale, eps), rel=1e-8, abs=1e-12)
    for delta in (1e-9, 1e-3, 0.1, 0.5):
        e = mech.epsilon(delta)
        assert 0 < e < mech.true_eps
        assert _laplace_pair_delta_by_quadrature(mech.scale, e) == pytest.approx(delta, rel=1e-7)
    assert mech.epsilon(0.999999) == 0.0  # delta beyond the divergence at eps = 0
    np.testing.assert_array_equal(mech.delta(np.array([0.0, 1.0])), [mech.delta(0.0), mech.delta(1.0)])


@pytest.mark.parametrize("mech", [b.NoisyMaxValue(1.0, 5), b.SVTReturnsValue(1.0, 3)], ids=repr)
def test_delta_known_only_at_and_above_the_pure_eps(mech):
    assert not mech.exact_delta
    e0 = mech.true_eps
    assert mech.epsilon() == e0 and mech.epsilon(1.0) == 0.0
    assert mech.delta(e0) == 0.0 and mech.delta(2 * e0) == 0.0 and mech.delta(math.inf) == 0.0
    with pytest.raises(NotAvailable, match=r"^eps: got 0.5"):
        mech.delta(0.5)
    with pytest.raises(NotAvailable, match=r"^delta: got 0.01"):
        mech.epsilon(0.01)
    assert mech.is_private(e0) and not mech.is_private(0.99 * e0) and mech.is_private(0.5, 1.0)
