"""The mechanism contract (ldpsim/mechanisms/base.py), checked on every catalog entry at a
few parameter points and on the non-catalog instances of tests/contract/cases.py.

Exact first: eps and delta are compared with an independent computation wherever one exists
(brute force over events for finite outputs, adaptive Gauss-Legendre quadrature of the
hockey-stick integral for 1-D densities, a sum over the support for integer outputs and
for finite real grids, ``mech.support()``), all from ``log_density`` on the pairs
``neighbours()`` names. Samplers are checked against the
same exact laws with a false-failure probability of at most 1e-6 per test (fixed seeds).
The definitions checked are those of docs/theory.md sec. 1 (finite outputs) and sec. 9
(noise mechanisms: delta as the hockey-stick divergence of the output laws).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import PRIVACY_RTOL, Mechanism, NoDensity, NotAvailable
from tests.contract.cases import BAD, CASES, REFERENCE, case_params, entry_name, entry_params, instance, instance_params
from tests.oracles import density_window, hockey_stick_integral, pair_delta, pair_epsilon
from tests.stats_checks import FALSE_FAILURE, assert_cdf_dkw, assert_codes_law, assert_sample_law, bernstein

EPS_BASE = [0.0, 0.1, 0.5, 1.0, 2.0, 5.0]
DELTA_GRID = [1e-12, 1e-6, 1e-3, 0.05, 0.3, 0.9]


# --------------------------------------------------------------------------- helpers
def _same(a: Any, b: Any) -> bool:
    return bool(np.shape(a) == np.shape(b) and np.all(np.asarray(a) == np.asarray(b)))


def inputs_of(mech) -> list[Any]:
    """Distinct inputs of the neighbour pairs, in order."""
    out: list[Any] = []
    for pair in mech.neighbours():
        for x in pair:
            if not any(_same(x, y) for y in out):
                out.append(x)
    return out


def ordered_pairs(mech) -> list[tuple[Any, Any]]:
    return [p for x, y in mech.neighbours() for p in ((x, y), (y, x))]


def eps_grid(mech, key: str) -> list[float]:
    """eps where delta is checked: a fixed grid, around the pure eps, the claimed eps; for
    exact_delta False only at and above the pure eps (delta is NotAvailable below)."""
    e = mech.epsilon(0.0)
    grid = list(EPS_BASE)
    if math.isfinite(e) and e > 0:
        grid += [e / 2, 0.9 * e, e, 1.5 * e]
    name = entry_name(key)
    if name is not None:
        claimed = catalog.entry(name).claimed(catalog.entry(name).resolve(**case_params(key)))[0]
        if math.isfinite(claimed):
            grid.append(claimed)
    if not mech.exact_delta:
        grid = [t for t in grid if t >= e] if math.isfinite(e) else []
    return sorted(set(grid))


def finite_law(mech, x) -> np.ndarray:
    """The exact output law of a finite mechanism at input x, from log_density over all codes."""
    row = np.exp(np.asarray(mech.log_density(x, np.arange(mech.output_size)), dtype=float))
    assert row.shape == (mech.output_size,)
    np.testing.assert_allclose(row.sum(), 1.0, rtol=0, atol=1e-12, err_msg=f"law at input {x!r} does not sum to 1")
    return row


def vector_law(mech, x, reports: np.ndarray) -> np.ndarray:
    """The exact law of a mechanism with discrete vector reports at input x, over every
    possible report (``possible_reports()``), from log_density; it must sum to one."""
    row = np.exp(np.asarray(mech.log_density(x, reports), dtype=float))
    assert row.shape == (reports.shape[0],)
    np.testing.assert_allclose(math.fsum(row), 1.0, rtol=0, atol=1e-12, err_msg=f"law at input {x!r} does not sum to 1")
    return row


def enumerated_reports(mech) -> np.ndarray | None:
    """``possible_reports()`` of a mechanism with discrete vector reports, or None for an
    instance with too many reports to list (it says so with a one-line LdpSimError): such an
    instance is checked by :func:`sampled_loss_check` instead, and the enumeration runs on
    smaller instances of the same class (the small-prime local hashing of EXTRA)."""
    try:
        return np.asarray(mech.possible_reports())
    except LdpSimError as exc:
        assert "\n" not in str(exc), f"error message is not one line: {exc}"
        return None


def sampled_loss_check(mech, grid: list[float], alpha: float, n: int = 200_000) -> None:
    """For reports too many to enumerate: on n draws from each input of every ordered pair,
    the privacy loss L = log p(y|x) - log p(y|x') from log_density never exceeds the exact
    eps, and ``mean (1 - e^(t - L))_+``, an unbiased estimate of the pair's delta(t) in
    [0, 1], lies within Hoeffding's bound of delta(t) for the worst pair and never above it
    by more (two-sided at alpha over all pairs and eps of the grid)."""
    from ldpsim.stats import hoeffding

    e = mech.epsilon(0.0)
    pairs = ordered_pairs(mech)
    rng = np.random.default_rng(20261202)
    tol = float(hoeffding(1.0, n, alpha / (len(pairs) * max(len(grid), 1))))
    est = {t: [] for t in grid}
    for x, xp in pairs:
        y = mech.sample(x, n, rng)
        loss = np.asarray(mech.log_density(x, y), dtype=float) - np.asarray(mech.log_density(xp, y), dtype=float)
        if math.isfinite(e):
            assert loss.max() <= e * (1 + 1e-9) + 1e-12, (x, xp, loss.max(), e)
        for t in grid:
            with np.errstate(over="ignore", invalid="ignore"):
                part = np.where(np.isposinf(loss), 1.0, np.clip(-np.expm1(t - loss), 0.0, None))
            est[t].append(float(part.mean()))
    for t in grid:
        if mech.exact_delta or (math.isfinite(e) and t >= e):
            d = float(mech.delta(t))
            assert max(est[t]) <= d + tol and max(est[t]) >= d - tol, (t, est[t], d, tol)


def report_codes(reports: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """The index in ``reports`` of every drawn report (a draw not among them fails)."""
    index = {tuple(r): i for i, r in enumerate(np.asarray(reports).tolist())}
    rows = [tuple(r) for r in np.asarray(draws).reshape(len(draws), -1).tolist()]
    missing = [r for r in rows if r not in index]
    assert not missing, f"a report outside possible_reports(): {missing[0]}"
    return np.array([index[r] for r in rows], dtype=np.int64)


def one_column(mech) -> bool:
    """Reports that are vectors of length 1 (a 1-D law in vector form)."""
    shape = np.shape(mech.sample(inputs_of(mech)[0], 2, rng=0))
    return len(shape) == 2 and shape[1] == 1


def reference_kind(mech, key: str) -> str | None:
    if mech.output_size is not None:
        return "events"
    if callable(getattr(mech, "possible_reports", None)):
        return "vectors"  # discrete vector reports, enumerable at the case's parameters
    name = entry_name(key)
    kind = REFERENCE.get(name) if name is not None else None
    if kind == "radial" and mech.has_density and one_column(mech):
        return "quad"  # a radial law on R^1 is a 1-D law
    return kind


class RealLaws:
    """The exact 1-D laws of a real-output mechanism at its neighbour inputs: a window where
    every density falls by e^-46, cells refined by the integrator, the CDF at cell edges.

    ``atoms`` (kind ``"mixed"``): report values of positive probability, the same for every
    input; ``log_density`` there is the log of that probability and elsewhere the log density
    (a density with respect to Lebesgue measure plus unit masses at the atoms). The density
    part is integrated away from the atoms, the atoms are added to the CDF, to the total mass
    and to the hockey-stick divergence (``sum (p_a - e^eps q_a)_+``)."""

    CELLS = 3000

    def __init__(self, mech, lattice: bool, atoms: np.ndarray | None = None) -> None:
        self.mech, self.lattice = mech, lattice
        self.column = one_column(mech)
        self.inputs = inputs_of(mech)
        self.atoms = np.sort(np.asarray(atoms if atoms is not None else [], dtype=float))
        self.logpdf = [self._logpdf(x) for x in self.inputs]
        self.atom_mass = [self._atom_mass(x) for x in self.inputs]
        draws = np.concatenate([np.asarray(mech.sample(x, 2000, rng=5), dtype=float).ravel() for x in self.inputs])
        draws = draws[np.isfinite(draws)]
        lo, hi = np.quantile(np.concatenate([draws, self.atoms]), [0.01, 0.99])
        if self.atoms.size:
            lo, hi = min(lo, self.atoms[0]), max(hi, self.atoms[-1])
        a, b = density_window(self.logpdf, (lo - (hi - lo), hi + (hi - lo)), lattice=lattice)
        if lattice:
            self.support = np.arange(math.floor(a), math.ceil(b) + 1, dtype=float)
            self.pmf = [np.exp(lp(self.support)) for lp in self.logpdf]
            for x, p in zip(self.inputs, self.pmf):
                assert abs(math.fsum(p) - 1.0) <= 1e-12, f"pmf at input {x!r} sums to {math.fsum(p)!r}"
        else:
            self.edges = np.linspace(a, b, self.CELLS + 1)
            self.cdf = []
            from tests.oracles import adaptive_integral

            for x, lp, am in zip(self.inputs, self.logpdf, self.atom_mass):
                cells, err = adaptive_integral(lambda y, lp=lp: np.exp(lp(y)), self.edges)
                total = math.fsum(cells) + math.fsum(am)
                assert abs(total - 1.0) <= 1e-9 and err <= 1e-11, (
                    f"law at input {x!r} has total mass {total!r} (error {err:g})"
                )
                below = np.array([math.fsum(am[self.atoms <= e]) for e in self.edges])
                self.cdf.append(np.concatenate([[0.0], np.cumsum(cells)]) + below)

    def _logpdf(self, x):
        mech = self.mech

        column = self.column

        atoms = self.atoms

        def lp(y):
            y = np.asarray(y, dtype=float)
            if atoms.size:  # the density part only: beside an atom, not at it
                y = np.where(np.isin(y, atoms), np.nextafter(y, np.inf), y)
            out = np.asarray(mech.log_density(x, y[:, None] if column else y), dtype=float)
            assert out.shape == y.shape
            return out

        return lp

    def _atom_mass(self, x) -> np.ndarray:
        if not self.atoms.size:
            return np.zeros(0)
        return np.exp(np.asarray(self.mech.log_density(x, self.atoms), dtype=float))

    def index(self, x) -> int:
        return next(i for i, y in enumerate(self.inputs) if _same(x, y))

    def delta(self, x, xp, eps: float) -> float:
        i, j = self.index(x), self.index(xp)
        if self.lattice:
            p, q = self.pmf[i], self.pmf[j]
            if math.isinf(eps):
                return math.fsum(p[q == 0])
            with np.errstate(over="ignore"):
                diff = p - np.exp(min(eps, 700.0)) * q
            return math.fsum(diff[diff > 0])
        value, err = hockey_stick_integral(self.logpdf[i], self.logpdf[j], eps, self.edges)
        assert err <= 1e-11, f"quadrature did not converge (error bound {err:g})"
        if self.atoms.size:
            p, q = self.atom_mass[i], self.atom_mass[j]
            diff = np.where(q == 0, p, 0.0) if math.isinf(eps) else p - math.exp(min(eps, 700.0)) * q
            value += math.fsum(diff[diff > 0])
        return value


def radial_law(mech, x, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a vector mechanism whose density at ``y`` depends only on ``||y - x||_p`` (kind
    ``"radial"``; ``p`` is its parameter ``p``): the norms ``r`` of the draws ``z - x`` and
    the exact CDF of that norm at cell edges. In polar form for the l_p norm the norm has
    density proportional to ``r^(d-1) f(r e_1)`` (the l_p ball of radius r has volume
    proportional to r^d and ``||e_1||_p = 1``); the CDF comes from integrating that from
    ``log_density`` along ``e_1`` and normalising numerically."""
    p = float(mech.params["p"])
    x = np.asarray(x, dtype=float)
    d = x.size
    diff = np.asarray(z, dtype=float) - x
    r = np.max(np.abs(diff), axis=1) if math.isinf(p) else np.sum(np.abs(diff) ** p, axis=1) ** (1.0 / p)
    e1 = np.zeros(d)
    e1[0] = 1.0

    def g(t):
        t = np.asarray(t, dtype=float)
        lp = np.asarray(mech.log_density(tuple(x), x + t[:, None] * e1), dtype=float)
        with np.errstate(divide="ignore"):
            return (d - 1) * np.log(t) + lp

    top = np.quantile(r, 0.99) * 2
    while True:
        grid = np.linspace(0.0, top, 4001)[1:]
        vals = g(grid)
        if vals[-1] < np.max(vals) - 46.0:
            break
        top *= 2
    edges = np.linspace(0.0, top, 3001)
    from tests.oracles import adaptive_integral

    cells, err = adaptive_integral(lambda t: np.exp(g(t)), edges)
    total = math.fsum(cells)
    assert err <= 1e-11 * total, f"radial integral did not converge (error {err:g})"
    return r, edges, np.concatenate([[0.0], np.cumsum(cells)]) / total


class GridLaws:
    """Kind ``"grid"``: real reports on a finite set of points, ``mech.support()`` (sorted),
    the same for every input; the law at each neighbour input is the pmf from ``log_density``
    at every point (it must sum to 1), delta the sum of ``(p - e^eps q)_+`` over the points."""

    def __init__(self, mech) -> None:
        self.mech = mech
        self.inputs = inputs_of(mech)
        self.support = np.asarray(mech.support(), dtype=float)
        assert self.support.ndim == 1 and self.support.size >= 1 and np.all(np.diff(self.support) > 0), (
            "support() must be sorted"
        )
        self.pmf = [np.exp(np.asarray(mech.log_density(x, self.support), dtype=float)) for x in self.inputs]
        for x, p in zip(self.inputs, self.pmf):
            assert p.shape == self.support.shape
            assert abs(math.fsum(p) - 1.0) <= 1e-12, f"pmf at input {x!r} sums to {math.fsum(p)!r}"

    def index(self, x) -> int:
        return next(i for i, y in enumerate(self.inputs) if _same(x, y))

    def codes(self, draws: np.ndarray) -> np.ndarray:
        """The index in ``support`` of every draw (a draw off the support fails)."""
        z = np.asarray(draws, dtype=float).ravel()
        idx = np.clip(np.searchsorted(self.support, z), 0, self.support.size - 1)
        assert np.all(self.support[idx] == z), f"a report off support(): {z[self.support[idx] != z][:3]}"
        return idx

    def delta(self, x, xp, eps: float) -> float:
        p, q = self.pmf[self.index(x)], self.pmf[self.index(xp)]
        if math.isinf(eps):
            return math.fsum(p[q == 0])
        with np.errstate(over="ignore"):
            diff = p - np.exp(min(eps, 700.0)) * q
        return math.fsum(diff[diff > 0])


_LAWS: dict[str, RealLaws | GridLaws] = {}


def real_laws(key: str) -> RealLaws | GridLaws:
    if key not in _LAWS:
        mech = instance(key)
        kind = reference_kind(mech, key)
        if kind == "grid":
            _LAWS[key] = GridLaws(mech)
        else:
            _LAWS[key] = RealLaws(mech, kind == "lattice", np.asarray(mech.atoms) if kind == "mixed" else None)
    return _LAWS[key]


def _one_line_error(excinfo, *words: str) -> None:
    msg = str(excinfo.value)
    assert "\n" not in msg, f"error message is not one line: {msg!r}"
    for w in words:
        assert w in msg, f"error message does not name {w!r}: {msg!r}"


# --------------------------------------------------------------------------- the catalog
def test_every_catalog_entry_has_cases():
    catalog.check_catalog()
    missing = sorted(set(catalog.CATALOG) - set(CASES))
    assert not missing, f"catalog entries without contract cases in tests/contract/cases.py: {missing}"
    unknown = sorted(set(CASES) - set(catalog.CATALOG))
    assert not unknown, f"contract cases for names not in the catalog: {unknown}"
    assert all(CASES[n] for n in CASES), "an entry with an empty list of cases"
    assert set(BAD) == set(catalog.CATALOG), sorted(set(catalog.CATALOG) ^ set(BAD))


ENTRIES = pytest.mark.parametrize("name", entry_params())
CATALOG_ONLY = pytest.mark.parametrize("name", entry_params(contract=False))


@ENTRIES
def test_value_equality_hash_and_repr(name):
    built = [catalog.build(name, **p) for p in CASES[name]]
    again = [catalog.build(name, **p) for p in CASES[name]]
    for i, (a, b) in enumerate(zip(built, again)):
        assert a == b and not (a != b) and hash(a) == hash(b), (name, CASES[name][i])
        assert repr(a) == repr(b), "repr is not stable"
        text = repr(a)
        assert "\n" not in text and len(text) <= 200 and "object at 0x" not in text, text
        assert isinstance(a.params, dict)
        for key in a.params:
            assert f"{key}=" in text, f"repr {text!r} does not show parameter {key!r}"
        assert a != object() and a not in (None, 1.0, "x")
        assert len({a, b}) == 1
    resolved = [catalog.entry(name).resolve(**p) for p in CASES[name]]
    for i in range(len(built)):
        for j in range(i + 1, len(built)):
            if resolved[i] != resolved[j]:
                assert built[i] != built[j] and not (built[i] == built[j]), (CASES[name][i], CASES[name][j])


@ENTRIES
def test_spec_round_trip(name):
    e = catalog.entry(name)
    for p in CASES[name]:
        resolved = e.resolve(**p)
        parsed = catalog.parse(e.spec(resolved))
        assert parsed.params == resolved
        assert parsed.mechanism == catalog.build(name, **p)


@ENTRIES
def test_claims(name):
    """Library entries are exactly as private as their parameters say; the broken ones less."""
    e = catalog.entry(name)
    for p in CASES[name]:
        mech = catalog.build(name, **p)
        eps, delta = e.claimed(e.resolve(**p), mech)
        if "broken" in e.tags:
            assert not mech.is_private(eps, delta), (p, "a broken case must be broken")
            assert mech.epsilon(0.0) > eps
        elif math.isfinite(eps):
            assert mech.is_private(eps, delta), p
            if delta == 0.0:
                assert mech.epsilon(0.0) == pytest.approx(eps, rel=1e-9, abs=1e-12), p


@CATALOG_ONLY
def test_unknown_parameter(name):
    with pytest.raises(LdpSimError) as exc:
        catalog.build(name, bogus_param=1)
    _one_line_error(exc, "bogus_param")
    with pytest.raises(LdpSimError) as exc:
        catalog.parse(f"{name}:bogus_param=1")
    _one_line_error(exc, "bogus_param")


@CATALOG_ONLY
def test_wrong_types(name):
    for key, param in catalog.entry(name).params.items():
        if param.type is object:
            continue
        bad = [True, [1, 2]] if param.type is str else ["abc", True, [1.0], None if param.default is not None else "?"]
        for value in bad:
            with pytest.raises(LdpSimError) as exc:
                catalog.build(name, **{key: value})
            _one_line_error(exc, key)
        if param.type is not str:
            with pytest.raises(LdpSimError) as exc:
                catalog.parse(f"{name}:{key}=abc")
            _one_line_error(exc, key)


@ENTRIES
def test_out_of_range_values(name):
    for params, key in BAD[name]:
        with pytest.raises(LdpSimError) as exc:
            catalog.build(name, **params)
        _one_line_error(exc, key)


# --------------------------------------------------------------------------- every instance
@pytest.mark.parametrize("key", instance_params())
class TestContract:
    """The contract of ldpsim.mechanisms.base.Mechanism, one instance at a time."""

    def test_surface(self, key):
        mech = instance(key)
        assert isinstance(mech, Mechanism), f"{type(mech).__name__} does not subclass Mechanism"
        assert isinstance(mech.params, dict)
        assert isinstance(mech.has_density, bool) and isinstance(mech.exact_delta, bool)
        assert mech.output_size is None or (isinstance(mech.output_size, int) and mech.output_size >= 1)
        pairs = mech.neighbours()
        assert isinstance(pairs, list) and pairs, "neighbours() must name at least one pair"
        assert all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
        e = mech.epsilon(0.0)
        assert isinstance(e, float) and e >= 0.0
        assert mech.epsilon() == e
        if name := entry_name(key):
            assert mech.name == name.split(".")[-1] or mech.name == name or isinstance(mech.name, str)

    def test_sample_shape_and_reproducibility(self, key):
        mech = instance(key)
        for x in inputs_of(mech):
            a = np.asarray(mech.sample(x, 50, rng=3))
            b = np.asarray(mech.sample(x, 50, np.random.default_rng(3)))
            assert a.shape[0] == 50
            np.testing.assert_array_equal(a, b)
            assert np.asarray(mech.sample(x, 0, rng=3)).shape[0] == 0
            if mech.output_size is not None:
                assert np.issubdtype(a.dtype, np.integer) and a.min() >= 0 and a.max() < mech.output_size

    def test_exact_eps_at_the_boundary(self, key):
        mech = instance(key)
        e = mech.epsilon(0.0)
        if math.isfinite(e):
            assert mech.is_private(e) and mech.is_private(e, 0.0)
            assert mech.is_private(e * 1.01 + 1e-9)
            if e > 0:
                assert not mech.is_private(e * (1 - 1e-6))
            if mech.exact_delta:
                assert mech.delta(e) <= 1e-12
        else:
            # not (t, 0)-private at any finite t, also where the float delta(t) underflows to
            # 0.0 (epsilon(0.0) is exact by contract and decides)
            finite = [t for t in eps_grid(mech, key) if math.isfinite(t)]
            assert any(float(mech.delta(t)) > 0 for t in finite), "no eps in the grid where delta is positive"
            for t in finite:
                assert not mech.is_private(t) and not mech.is_private(t, 0.0), t
        assert mech.is_private(math.inf, 1.0)

    def test_delta_at_the_boundary(self, key):
        mech = instance(key)
        grid = eps_grid(mech, key)
        deltas = [float(mech.delta(t)) for t in grid]
        pure = mech.epsilon(0.0)
        for t, d in zip(grid, deltas):
            assert 0.0 <= d <= 1.0, (t, d)
            if d == 0.0 and math.isinf(pure):
                assert not mech.is_private(t, d), (t, d)  # delta(t) > 0 underflowed to 0.0
                continue
            assert mech.is_private(t, d), (t, d)
            if d > 0:
                assert not mech.is_private(t, d * (1 - 1e-6)), (t, d)
            verdicts = [mech.is_private(t, dd) for dd in (0.0, d / 2, d, min(1.0, 2 * d + 1e-12), 1.0)]
            assert verdicts == sorted(verdicts), (t, verdicts)  # monotone in delta
        assert all(b <= a * (1 + 1e-12) + 1e-300 for a, b in zip(deltas, deltas[1:])), "delta not non-increasing in eps"
        if grid:
            arr = np.asarray(mech.delta(np.array(grid)), dtype=float)
            np.testing.assert_allclose(arr, deltas, rtol=1e-12, atol=0)

    def test_epsilon_and_delta_invert_each_other(self, key):
        mech = instance(key)
        e0 = mech.epsilon(0.0)
        for t in eps_grid(mech, key):
            d = float(mech.delta(t))
            if d == 0.0 and math.isinf(e0):
                continue  # delta(t) > 0 underflowed to 0.0: epsilon(0.0) is the (infinite) pure eps
            back = mech.epsilon(d)
            assert back <= t * (1 + PRIVACY_RTOL) + 1e-12, (t, d, back)
        for d in DELTA_GRID:
            try:
                t = mech.epsilon(d)
            except NotAvailable:
                assert not mech.exact_delta
                continue
            assert t <= e0 * (1 + PRIVACY_RTOL) or math.isinf(e0), (d, t, e0)
            if math.isfinite(t) and (mech.exact_delta or t >= e0):
                assert float(mech.delta(t)) <= d * (1 + PRIVACY_RTOL), (d, t, mech.delta(t))

    def test_not_available_below_the_pure_eps(self, key):
        mech = instance(key)
        e = mech.epsilon(0.0)
        below = e / 2 if math.isfinite(e) and e > 0 else 1.0
        if mech.exact_delta:
            if not (math.isfinite(e) and e == 0):
                assert float(mech.delta(below)) > 0 or not math.isfinite(e) or e == 0
            return
        if math.isfinite(e) and e == 0:
            pytest.skip("pure eps 0: nothing below it")
        with pytest.raises(NotAvailable) as exc:
            mech.delta(below)
        _one_line_error(exc)
        assert not mech.is_private(below, 0.0)
        assert not mech.is_private(below)
        if math.isfinite(e):
            assert float(mech.delta(e)) == 0.0 and float(mech.delta(2 * e + 1)) == 0.0

    def test_no_density(self, key):
        mech = instance(key)
        x = inputs_of(mech)[0]
        y = np.asarray(mech.sample(x, 3, rng=1))
        if mech.has_density:
            out = np.asarray(mech.log_density(x, y), dtype=float)
            assert out.shape == y.shape[: out.ndim] and np.all(out > -np.inf), "a drawn report has log density -inf"
        else:
            with pytest.raises(NoDensity):
                mech.log_density(x, y)

    def test_exact_privacy_against_independent_computation(self, key):
        mech = instance(key)
        kind = reference_kind(mech, key)
        if kind is None or not mech.has_density:
            # nothing to integrate (the SVT that returns its noisy query has no density): such
            # a mechanism must not claim an exact delta curve; the auditor's tests check its eps
            assert not mech.has_density and not mech.exact_delta, key
            return
        e = mech.epsilon(0.0)
        grid = eps_grid(mech, key)
        if kind == "radial":
            # the privacy loss log p(y|x) - log p(y|x') at reports drawn from both inputs never
            # exceeds eps, and along the line through the pair (beyond x, away from x') it
            # attains eps: the triangle inequality is an equality there
            for x, xp in ordered_pairs(mech):
                xa, xpa = np.asarray(x, dtype=float), np.asarray(xp, dtype=float)
                draws = np.concatenate([np.asarray(mech.sample(u, 2000, rng=9), dtype=float) for u in (x, xp)])
                line = xa + np.linspace(-30.0, 30.0, 6001)[:, None] * (xpa - xa)
                loss_draws = np.asarray(mech.log_density(x, draws)) - np.asarray(mech.log_density(xp, draws))
                loss_line = np.asarray(mech.log_density(x, line)) - np.asarray(mech.log_density(xp, line))
                assert loss_draws.max() <= e * (1 + 1e-9) + 1e-12, (x, xp, loss_draws.max(), e)
                assert loss_line.max() <= e * (1 + 1e-9) + 1e-12, (x, xp, loss_line.max(), e)
                assert loss_line.max() >= e * (1 - 1e-9) - 1e-12, (x, xp, loss_line.max(), e)
            return
        if kind in ("events", "vectors"):
            if kind == "events":
                laws = {i: finite_law(mech, x) for i, x in enumerate(inputs_of(mech))}
            else:
                reports = enumerated_reports(mech)
                if reports is None:
                    sampled_loss_check(mech, grid, FALSE_FAILURE)
                    return
                laws = {i: vector_law(mech, x, reports) for i, x in enumerate(inputs_of(mech))}
            idx = {i: x for i, x in enumerate(inputs_of(mech))}

            def law(x):
                return laws[next(i for i, y in idx.items() if _same(x, y))]

            ref_eps = max(pair_epsilon(law(x), law(xp)) for x, xp in ordered_pairs(mech))
            if math.isinf(ref_eps):
                assert math.isinf(e), (e, ref_eps)
            else:
                assert e == pytest.approx(ref_eps, rel=1e-9, abs=1e-12)

            def ref_delta(t):
                return max(pair_delta(law(x), law(xp), t) for x, xp in ordered_pairs(mech))
        else:
            laws = real_laws(key)

            def ref_delta(t):
                return max(laws.delta(x, xp, t) for x, xp in ordered_pairs(mech))

            if math.isfinite(e) and e > 0:
                assert ref_delta(e) <= 1e-10, ("not private at its eps", e, ref_delta(e))
                assert ref_delta(e * (1 - 1e-3)) > 1e-9, ("private below its eps", e)
        for t in grid:
            ref = ref_delta(t)
            if mech.exact_delta or (math.isfinite(e) and t >= e):
                got = float(mech.delta(t))
                exact = kind in ("events", "vectors")
                tol = 1e-12 if exact else 1e-10
                assert got == pytest.approx(ref, rel=1e-9 if exact else 1e-7, abs=tol), (t, got, ref)

    def test_sampler_law(self, key):
        mech = instance(key)
        inputs = inputs_of(mech)
        alpha = FALSE_FAILURE / len(inputs)  # Bonferroni over the inputs: <= FALSE_FAILURE for the test
        rng = np.random.default_rng(20260)
        if mech.output_size is not None:
            if not mech.has_density:
                pytest.skip("no exact law")
            for x in inputs:
                pmf = finite_law(mech, x)
                n = int(min(400_000, max(20_000, 2_000 / pmf[pmf > 0].min())))
                assert_codes_law(np.asarray(mech.sample(x, n, rng)), pmf, alpha)
            return
        kind = reference_kind(mech, key)
        if kind == "vectors":
            reports = enumerated_reports(mech)
            if reports is None:  # the law of the privacy loss, from the draws, instead
                sampled_loss_check(mech, eps_grid(mech, key), FALSE_FAILURE)
                return
            for x in inputs:
                pmf = vector_law(mech, x, reports)
                n = int(min(400_000, max(20_000, 2_000 / pmf[pmf > 0].min())))
                assert_codes_law(report_codes(reports, np.asarray(mech.sample(x, n, rng))), pmf, alpha)
        elif kind == "lattice":
            laws = real_laws(key)
            for x in inputs:
                z = np.asarray(mech.sample(x, 100_000, rng), dtype=float)
                assert np.all(z == np.round(z)), "integer outputs expected"
                lo = laws.support[0]
                assert z.min() >= lo and z.max() <= laws.support[-1], "a draw outside the window of mass 1 - 1e-20"
                assert_sample_law(
                    (z - lo).astype(np.int64), laws.pmf[laws.index(x)] / laws.pmf[laws.index(x)].sum(), alpha
                )
        elif kind == "grid":
            laws = real_laws(key)
            for x in inputs:
                pmf = laws.pmf[laws.index(x)]
                n = int(min(400_000, max(100_000, 2_000 / pmf[pmf > 0].min())))
                assert_sample_law(laws.codes(mech.sample(x, n, rng)), pmf / pmf.sum(), alpha)
        elif kind in ("quad", "mixed") and mech.has_density:
            laws = real_laws(key)
            for x in inputs:
                z = np.asarray(mech.sample(x, 100_000, rng), dtype=float)
                z = z[:, 0] if laws.column else z
                assert z.ndim == 1
                assert_cdf_dkw(z, laws.edges, laws.cdf[laws.index(x)], alpha)
        elif kind == "radial":
            for x in inputs:
                z = np.asarray(mech.sample(x, 100_000, rng), dtype=float)
                r, edges, cdf = radial_law(mech, x, z)
                assert_cdf_dkw(r, edges, cdf, alpha)
        elif hasattr(mech, "cdf") and np.ndim(np.asarray(mech.sample(inputs[0], 2, rng))) == 1:
            # no density: the class's exact CDF at 40 quantiles of a pilot sample
            for x in inputs:
                z = np.asarray(mech.sample(x, 20_000, rng), dtype=float)
                pilot = np.asarray(mech.sample(x, 2_000, rng), dtype=float)
                pts = np.unique(np.quantile(pilot[np.isfinite(pilot)], np.linspace(0.02, 0.98, 40)))
                assert_cdf_dkw(z, pts, np.asarray(mech.cdf(x, pts), dtype=float), alpha)
        elif hasattr(mech, "report_range") and all(map(math.isfinite, mech.report_range)):
            # mean estimation without a closed-form law (the dithered snapped reports): bounded,
            # unbiased reports with an exact variance -- Bernstein's inequality on the mean and
            # on the mean square error, each at alpha / 2 per input
            lo, hi = mech.report_range
            n = 200_000
            for x in inputs:
                y = np.asarray(mech.sample(x, n, rng), dtype=float)
                assert y.min() >= lo and y.max() <= hi
                c = float(np.clip(x, mech.lo, mech.hi))
                b, var = max(hi - c, c - lo), float(mech.variance(x))
                assert abs(y.mean() - c) <= bernstein(var, b, n, alpha / 2) + 1e-12 * (mech.hi - mech.lo)
                assert abs(np.mean((y - c) ** 2) - var) <= bernstein(b * b * var, b * b, n, alpha / 2)
        else:
            pytest.skip("no exact law for this output type")
