"""Mean estimation of a bounded numeric answer (ldpsim/mechanisms/numeric.py).

Reference values come from an independent computation: the output laws written here in
mpmath from the papers' definitions (Duchi, Jordan and Wainwright 2018; Wang et al. 2019) as
atoms plus piecewise-constant densities in unit coordinates, their moments and hockey-stick
divergences integrated exactly piece by piece, and mpmath quadrature of the mechanisms' own
``log_density``. Statistical checks have a false-failure probability of at most 1e-6 per
test (fixed seeds, Bonferroni over the checks of a test): DKW for the continuous laws,
exact Clopper-Pearson intervals for the atoms, Hoeffding / Chebyshev for means.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.noise import Laplace
from ldpsim.mechanisms.numeric import HYBRID_THRESHOLD, Duchi, Hybrid, LaplaceBounded, Piecewise
from ldpsim.stats import clopper_pearson, hoeffding
from tests.stats_checks import FALSE_FAILURE, assert_cdf_dkw

mp.mp.dps = 40
CLASSES = {"duchi": Duchi, "piecewise": Piecewise, "hybrid": Hybrid}


# --------------------------------------------------------------------------- reference laws
def ref_threshold() -> mp.mpf:
    """eps where Piecewise's variance at x = 0 (integrated from its density) equals Duchi's."""

    def gap(eps):
        atoms, pieces = ref_law("piecewise", eps, 0)
        return ref_moments(atoms, pieces)[1] - ref_law("duchi", eps, 0)[0][0][0] ** 2

    return mp.findroot(gap, mp.mpf("0.6"))


_THRESHOLD = None


def threshold() -> mp.mpf:
    global _THRESHOLD
    if _THRESHOLD is None:
        _THRESHOLD = ref_threshold()
    return _THRESHOLD


def ref_law(name: str, eps, x):
    """Unit-coordinate law of the report at the answer ``x`` in [-1, 1]: ``(atoms, pieces)``
    with atoms ``[(position, mass)]`` and pieces ``[(a, b, density)]``."""
    eps, x = mp.mpf(eps), mp.mpf(x)
    E = mp.e**eps
    if name == "duchi":
        C = (E + 1) / (E - 1)
        plus = mp.mpf(1) / 2 + x * (E - 1) / (2 * (E + 1))
        return [(-C, 1 - plus), (C, plus)], []
    if name == "piecewise":
        s = mp.e ** (eps / 2)
        C = (s + 1) / (s - 1)
        l = max((C + 1) * x / 2 - (C - 1) / 2, -C)  # the max and min only undo rounding at x = +-1
        r = min(l + C - 1, C)
        p = (E - s) / (2 * s + 2)
        q = p / E
        return [], [piece for piece in [(-C, l, q), (l, r, p), (r, C, q)] if piece[1] > piece[0]]
    if name == "hybrid":
        alpha = 1 - mp.e ** (-eps / 2) if eps > threshold() else mp.mpf(0)
        da, _ = ref_law("duchi", eps, x)
        _, pp = ref_law("piecewise", eps, x)
        return [(a, (1 - alpha) * m) for a, m in da], [(a, b, alpha * d) for a, b, d in pp if alpha > 0]
    raise AssertionError(name)


def ref_moments(atoms, pieces):
    """(mean, variance, total mass), exactly."""
    m0 = mp.fsum([m for _, m in atoms] + [d * (b - a) for a, b, d in pieces])
    m1 = mp.fsum([y * m for y, m in atoms] + [d * (b**2 - a**2) / 2 for a, b, d in pieces])
    m2 = mp.fsum([y**2 * m for y, m in atoms] + [d * (b**3 - a**3) / 3 for a, b, d in pieces])
    return m1, m2 - m1**2, m0


def ref_density(pieces, y):
    return mp.fsum([d for a, b, d in pieces if a < y < b])


def ref_hockey(law_p, law_q, t) -> mp.mpf:
    """``int (p - e^t q)_+`` over the pieces (on the merged breakpoints) plus the atoms."""
    (ap, pp), (aq, pq) = law_p, law_q
    et = mp.e ** mp.mpf(t)
    cuts = sorted({a for a, _, _ in pp + pq} | {b for _, b, _ in pp + pq})
    total = mp.mpf(0)
    for a, b in zip(cuts, cuts[1:]):
        if b - a < mp.mpf(10) ** (5 - mp.mp.dps):  # a sliver between two roundings of one point
            continue
        mid = (a + b) / 2
        total += max(ref_density(pp, mid) - et * ref_density(pq, mid), 0) * (b - a)
    for (y, m), (_, mq) in zip(ap, aq):
        total += max(m - et * mq, 0)
    return total


def ref_max_loss(law_p, law_q) -> mp.mpf:
    (ap, pp), (aq, pq) = law_p, law_q
    cuts = sorted({a for a, _, _ in pp + pq} | {b for _, b, _ in pp + pq})
    out = [mp.log(m / mq) for (_, m), (_, mq) in zip(ap, aq) if m > 0]
    for a, b in zip(cuts, cuts[1:]):
        if b - a < mp.mpf(10) ** (5 - mp.mp.dps):  # a sliver between two roundings of one point
            continue
        mid = (a + b) / 2
        dp, dq = ref_density(pp, mid), ref_density(pq, mid)
        if dp > 0:
            out.append(mp.log(dp / dq))
    return max(out)


PAIRS = [(-1, 1), (-0.5, 0.5), (0, 1), (-1, -0.2), (0.3, 0.4)]


# --------------------------------------------------------------------------- exact privacy
@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("eps", [0.3, 0.6, 0.62, 1.0, 2.5, 6.0])
def test_exact_eps_and_delta_against_the_reference_law(name, eps):
    mech = CLASSES[name](eps)
    assert mech.epsilon(0.0) == eps
    laws = {x: ref_law(name, eps, x) for pair in PAIRS for x in pair}
    ref_eps = max(ref_max_loss(laws[a], laws[b]) for x, y in PAIRS for a, b in ((x, y), (y, x)))
    assert float(ref_eps) == pytest.approx(eps, rel=1e-12)
    for t in [0.0, eps / 3, 0.9 * eps, eps, 1.5 * eps]:
        by_pair = [ref_hockey(laws[a], laws[b], t) for x, y in PAIRS for a, b in ((x, y), (y, x))]
        worst = max(by_pair)
        assert float(by_pair[0]) == pytest.approx(float(worst), rel=1e-25, abs=1e-30)  # (-1, 1) is a worst pair
        # (the reference is exact to ~1e-40 at mpmath's 40 digits: 0 at t >= eps up to that)
        assert float(mech.delta(t)) == pytest.approx(float(worst), rel=1e-13, abs=1e-35)
        assert float(mech.pld().delta(t)) == pytest.approx(float(worst), rel=1e-12, abs=1e-35)
        assert float(mech.guarantee().delta(t)) == pytest.approx(float(worst), rel=1e-12, abs=1e-35)
    for d in [1e-9, 1e-3, 0.05]:
        t = mech.epsilon(d)
        assert float(mech.delta(t)) <= d and (t == 0 or float(mech.delta(t * (1 - 1e-9))) > d)


def test_staircase_bounded_is_staircase_noise_for_the_range():
    """The noise is the library's staircase for sensitivity hi - lo, whose variance is
    Geng and Viswanath's closed form (tested in tests/mechanisms/test_noise.py); here: the
    same variance for every answer, below Laplace's, and the exact eps of the range."""
    from ldpsim.mechanisms.noise import Staircase

    for eps in (0.5, 1.0, 4.0):
        mech = catalog.build("staircase_bounded", eps=eps, lo=0.0, hi=10.0)
        assert mech.noise == Staircase(eps, 10.0)
        assert mech.epsilon() == pytest.approx(eps, rel=1e-12)
        v = mech.variance(np.array([0.0, 3.0, 10.0]))
        assert np.all(v == v[0]) and v[0] == pytest.approx(Staircase(eps, 10.0).variance, rel=1e-15)
        assert v[0] <= catalog.build("laplace_bounded", eps=eps, lo=0.0, hi=10.0).variance(0.0)


def test_laplace_bounded_reuses_laplace():
    mech = LaplaceBounded(0.7, lo=2.0, hi=5.0)
    assert isinstance(mech.noise, Laplace) and mech.noise.sensitivity == 3.0
    assert mech.scale == pytest.approx(3.0 / 0.7, rel=1e-15) and 3.0 / mech.scale <= 0.7
    assert mech.epsilon(0.0) == pytest.approx(0.7, rel=1e-12)
    for t in [0.0, 0.2, 0.69]:  # Laplace shifted by the width of the range: 1 - e^((t - eps)/2)
        assert mech.delta(t) == pytest.approx(-math.expm1((t - 0.7) / 2), rel=1e-12)
    assert mech.delta(0.7) == 0.0
    np.testing.assert_allclose(mech.variance([2.0, 3.5, 9.0]), 2 * (3.0 / 0.7) ** 2, rtol=1e-14)
    y = np.array([-3.0, 2.5, 7.0])
    np.testing.assert_allclose(
        mech.log_density(4.0, y), -np.abs(y - 4.0) / mech.scale - math.log(2 * mech.scale), rtol=1e-14
    )


def test_hybrid_threshold():
    assert HYBRID_THRESHOLD == pytest.approx(float(threshold()), rel=1e-14)
    assert float(threshold()) == pytest.approx(0.609352493027, abs=1e-12)
    below, above = Hybrid(float(np.nextafter(HYBRID_THRESHOLD, 0))), Hybrid(0.61)
    assert below.alpha == 0.0 and below.piecewise is None and Hybrid(HYBRID_THRESHOLD).alpha == 0.0
    assert above.alpha == pytest.approx(float(1 - mp.e ** mp.mpf(-0.305)), rel=1e-14)
    # the paper's alpha makes the variance flat in x and the worst case no larger than either part's
    for eps in [0.7, 1.0, 2.0, 5.0]:
        h = Hybrid(eps)
        v = h.variance(np.linspace(-1, 1, 11))
        np.testing.assert_allclose(v, v[0], rtol=1e-12)
        assert h.worst_variance() <= min(Duchi(eps).worst_variance(), Piecewise(eps).worst_variance())
    for eps in [0.1, 0.4, 0.6]:
        assert Hybrid(eps).worst_variance() == Duchi(eps).worst_variance()


# --------------------------------------------------------------------------- density, moments
@pytest.mark.parametrize("name", sorted(CLASSES))
@pytest.mark.parametrize("eps,lo,hi", [(0.5, -1.0, 1.0), (1.0, 2.0, 5.0), (3.0, -10.0, 0.0)])
def test_density_moments_against_reference(name, eps, lo, hi):
    mech = CLASSES[name](eps, lo, hi)
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    for x in [lo, lo + 0.3 * (hi - lo), mid, hi]:
        u = (x - mid) / half
        atoms, pieces = ref_law(name, eps, u)
        mean, var, total = ref_moments(atoms, pieces)
        assert float(total) == pytest.approx(1.0, abs=1e-30)
        assert float(mean) == pytest.approx(u, abs=1e-30)
        assert mech.variance(x) == pytest.approx(float(var) * half**2, rel=1e-13)
        # log_density against the reference at points inside each piece and at the atoms
        pts = [a + (b - a) * f for a, b, _ in pieces for f in (0.1, 0.5, 0.9)]
        if pts:
            got = mech.log_density(x, mid + half * np.array(pts, dtype=float))
            want = [float(mp.log(ref_density(pieces, mp.mpf(z))) - mp.log(half)) for z in pts]
            np.testing.assert_allclose(got, want, rtol=1e-12)
        if atoms:
            got = mech.log_density(x, mech.atoms)
            np.testing.assert_allclose(got, [float(mp.log(m)) if m > 0 else -np.inf for _, m in atoms], rtol=1e-12)
        # the mechanism's own density integrated in mpmath, cell by cell between the reference's
        # breakpoints (constant on each cell: checked at 7 interior points), plus its atoms
        mom = [mp.mpf(0)] * 3
        for a_, b_, _ in pieces:
            a, b = mid + half * a_, mid + half * b_
            inner = np.array([float(a + (b - a) * f) for f in np.linspace(0.02, 0.98, 7)])
            dens = np.exp(mech.log_density(x, inner))
            np.testing.assert_allclose(dens, dens[0], rtol=1e-14)
            d = mp.mpf(float(dens[0]))
            mom = [mom[k] + d * (b ** (k + 1) - a ** (k + 1)) / (k + 1) for k in range(3)]
        for a in mech.atoms:
            m = math.exp(mech.log_density(x, a))
            mom = [mom[k] + m * mp.mpf(float(a)) ** k for k in range(3)]
        assert float(mom[0]) == pytest.approx(1.0, abs=1e-12)
        assert float(mom[1]) == pytest.approx(x, abs=1e-11 * max(1.0, abs(x)))
        assert float(mom[2] - mom[1] ** 2) == pytest.approx(mech.variance(x), rel=1e-10)


def test_off_support_and_nan():
    pm = Piecewise(1.0)
    assert pm.log_density(0.0, pm.C * 1.01) == -np.inf and np.isnan(pm.log_density(0.0, np.nan))
    d = Duchi(1.0)
    assert d.log_density(0.2, 0.0) == -np.inf and d.log_density(0.2, d.C * 1.0000001) == -np.inf
    out = d.log_density(np.array([[-1.0], [1.0]]), d.atoms)  # x and y broadcast
    assert out.shape == (2, 2) and out[0, 0] == pytest.approx(-math.log1p(math.exp(-1.0)))


# --------------------------------------------------------------------------- samplers
def test_sampler_laws():
    checks = 4 + 3 + 2 * 3 + 2 + 2  # Bonferroni over every check below
    a = FALSE_FAILURE / checks
    rng = np.random.default_rng(20261202)
    n = 100_000
    # piecewise (continuous) and hybrid (continuous part and atoms) against the reference CDF
    for name, eps, x in [
        ("piecewise", 1.0, 0.3),
        ("piecewise", 3.0, -1.0),
        ("hybrid", 2.0, 0.5),
        ("hybrid", 0.8, -0.9),
    ]:
        mech = CLASSES[name](eps)
        z = mech.sample(x, n, rng)
        atoms, pieces = ref_law(name, eps, x)
        c = mech.C if name == "piecewise" else mech.piecewise.C
        pts = np.linspace(-c, c, 801)

        def cdf(t, atoms=atoms, pieces=pieces):
            t = mp.mpf(float(t))
            out = mp.fsum([m for y, m in atoms if y <= t])
            return out + mp.fsum([d * (min(b, t) - a_) for a_, b, d in pieces if t > a_])

        assert_cdf_dkw(z, pts, np.array([float(cdf(t)) for t in pts]), a)
    # atoms: exact binomial (Clopper-Pearson) intervals for P(+C)
    for name, eps, x in [
        ("duchi", 1.0, 0.4),
        ("duchi", 0.1, -1.0),
        ("duchi", 6.0, -0.7),
        ("hybrid", 2.0, 0.5),
        ("hybrid", 0.5, 1.0),
        ("hybrid", 4.0, -0.2),
    ]:
        mech = CLASSES[name](eps)
        z = mech.sample(x, n, rng)
        atoms, _ = ref_law(name, eps, x)
        for atom, (_, mass) in zip(mech.atoms, atoms):
            lo, hi = clopper_pearson(int(np.sum(z == atom)), n, a)
            assert lo <= float(mass) <= hi, (name, eps, x, atom, lo, float(mass), hi)
        if name == "duchi" or eps <= HYBRID_THRESHOLD:  # Duchi's mechanism alone: nothing but the two reports
            assert np.all(np.isin(z, mech.atoms))
    # Laplace on the clipped answer
    lap = LaplaceBounded(0.5, 0.0, 10.0)
    for x in (3.0, 12.0):
        z = lap.sample(x, n, rng)
        c, b = min(x, 10.0), lap.scale
        pts = np.linspace(c - 10 * b, c + 10 * b, 401)
        cdf = np.where(pts < c, 0.5 * np.exp((pts - c) / b), 1 - 0.5 * np.exp(-(pts - c) / b))
        assert_cdf_dkw(z, pts, cdf, a)


@pytest.mark.parametrize("name", ["laplace_bounded", "staircase_bounded", "duchi", "piecewise", "hybrid"])
def test_privatize_is_unbiased_in_original_units(name):
    mech = catalog.build(name, eps=1.5, lo=2.0, hi=5.0)
    rng = np.random.default_rng(7)
    values = rng.uniform(2.0, 5.0, size=(400, 500))
    reports = mech.privatize(values, rng=11)
    assert reports.shape == values.shape and reports.dtype == np.float64
    n = values.size
    gap = abs(reports.mean() - values.mean())
    if name in ("laplace_bounded", "staircase_bounded"):  # Chebyshev on the mean noise (variance known exactly)
        tol = math.sqrt(mech.variance(3.0) / (n * FALSE_FAILURE))
    else:  # Hoeffding: each report minus its answer lies in an interval of length 2 half C + (hi - lo)
        c = mech.C if name != "hybrid" else max(mech.piecewise.C, mech.duchi.C)
        tol = float(hoeffding(3.0 * c + 3.0, n, FALSE_FAILURE))
    assert gap <= tol, (gap, tol)
    # the same stream: sample(x, n) of one answer equals privatize of n copies
    np.testing.assert_array_equal(mech.sample(3.0, 64, rng=5), mech.privatize(np.full(64, 3.0), rng=5))


# --------------------------------------------------------------------------- range and bad inputs
@pytest.mark.parametrize("name", ["laplace_bounded", "staircase_bounded", "duchi", "piecewise", "hybrid"])
def test_answers_outside_the_range_are_clipped(name):
    mech = catalog.build(name, eps=1.0, lo=-2.0, hi=3.0)
    np.testing.assert_array_equal(mech.sample(10.0, 200, rng=1), mech.sample(3.0, 200, rng=1))
    np.testing.assert_array_equal(mech.privatize([-7.0, 1e300], rng=2), mech.privatize([-2.0, 3.0], rng=2))
    assert mech.variance(-9.0) == mech.variance(-2.0)
    y = mech.sample(0.0, 20, rng=3)
    np.testing.assert_array_equal(mech.log_density(50.0, y), mech.log_density(3.0, y))


def _one_line(exc, word):
    msg = str(exc.value)
    assert "\n" not in msg and word in msg, msg


@pytest.mark.parametrize("cls", [LaplaceBounded, Duchi, Piecewise, Hybrid])
def test_bad_inputs(cls):
    for kwargs, word in [
        ({"eps": 0.0}, "eps"),
        ({"eps": -1.0}, "eps"),
        ({"eps": math.nan}, "eps"),
        ({"eps": math.inf}, "eps"),
        ({"eps": "x"}, "eps"),
        ({"eps": 1.0, "lo": 1.0, "hi": 1.0}, "hi"),
        ({"eps": 1.0, "lo": math.nan}, "lo"),
        ({"eps": 1.0, "hi": math.inf}, "hi"),
        ({"eps": 1e-310}, "eps"),
        ({"eps": 1.0, "lo": -1e308, "hi": 1e308}, "hi"),
    ]:
        with pytest.raises(LdpSimError) as exc:
            cls(**kwargs)
        _one_line(exc, word)
    mech = cls(1.0)
    for call, word in [
        (lambda: mech.sample(math.nan, 3), "x"),
        (lambda: mech.sample([0.1, 0.2], 3), "x"),
        (lambda: mech.sample(0.0, -1), "n"),
        (lambda: mech.privatize(["a"]), "values"),
        (lambda: mech.privatize([0.0, math.inf]), "values"),
        (lambda: mech.variance(math.nan), "x"),
        (lambda: mech.log_density(math.inf, 0.0), "x"),
        (lambda: mech.log_density(0.0, "y"), "y"),
        (lambda: mech.delta(-1.0), "eps"),
        (lambda: mech.delta([0.5, -1.0]), "eps[1]"),
        (lambda: mech.epsilon(1.5), "delta"),
        (lambda: mech.epsilon([0.1, -0.1]), "delta[1]"),
    ]:
        with pytest.raises(LdpSimError) as exc:
            call()
        _one_line(exc, word)


# --------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("eps", [1e-9, 1e-4, 50.0, 300.0, 1000.0])
def test_extreme_eps(eps):
    with mp.workdps(40 + int(eps / 2)):  # e^-eps resolved beside 1
        check_extreme_eps(eps)


def check_extreme_eps(eps):
    for name, cls in CLASSES.items():
        mech = cls(eps)
        assert mech.epsilon(0.0) == eps
        for x in (-1.0, 0.0, 0.7):
            atoms, pieces = ref_law(name, eps, x)
            _, var, _ = ref_moments(atoms, pieces)
            assert mech.variance(x) == pytest.approx(float(var), rel=1e-11), (name, x)
            if atoms:
                want = [float(mp.log(m)) if m > 0 else -np.inf for _, m in atoms]
                got = mech.log_density(x, mech.atoms)
                assert np.all(np.isfinite(got)), (name, x, got)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
            if pieces:
                z = [float((a + b) / 2) for a, b, _ in pieces if b - a > 1e-9]  # pieces wider than a float's rounding
                got = mech.log_density(x, np.array(z))
                want = [float(mp.log(ref_density(pieces, mp.mpf(v)))) for v in z]
                assert np.all(np.isfinite(got))
                np.testing.assert_allclose(got, want, rtol=1e-11)
        y = mech.sample(-1.0, 1000, rng=4)
        assert np.all(np.isfinite(y)) and np.all(np.isfinite(mech.log_density(1.0, y)))
        # delta from the reference law of the worst pair, in logs
        t = eps / 2
        want = ref_hockey(ref_law(name, eps, -1), ref_law(name, eps, 1), t)
        assert float(mech.delta(t)) == pytest.approx(float(want), rel=1e-11)
        d = float(mech.delta(t))
        assert mech.epsilon(d) <= t * (1 + 1e-12)
        if d < 0.99:  # (above, delta(0) = K (1 - e^-eps) rounds to the same float as delta(t))
            assert mech.epsilon(d) == pytest.approx(t, rel=1e-6)
    lap = LaplaceBounded(eps)
    assert np.all(np.isfinite(lap.sample(0.0, 100, rng=1))) and lap.epsilon(0.0) == pytest.approx(eps, rel=1e-12)


def test_catalog_entries():
    for name, cls in [
        ("laplace_bounded", LaplaceBounded),
        ("duchi", Duchi),
        ("piecewise", Piecewise),
        ("hybrid", Hybrid),
    ]:
        e = catalog.entry(name)
        assert "numeric" in e.tags and set(e.params) == {"eps", "lo", "hi"}
        mech = catalog.parse(f"{name}:eps=2,lo=0,hi=10").mechanism
        assert mech == cls(2.0, 0.0, 10.0) and repr(mech) == f"{cls.__name__}(eps=2.0, lo=0.0, hi=10.0)"
        assert mech.neighbours() == [(0.0, 10.0)]
