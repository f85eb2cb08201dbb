"""``ldpsim reproduce kov-mi-small-eps`` and ``kov-approximate-ldp`` (Kairouz, Oh and Viswanath
2014, Sec. 4 and 5). Small runs at fixed seeds; reference values are recomputed here
independently: the binary mechanism's mutual information with mpmath, the optimal mechanism
by enumerating every basis of the staircase LP (k = 4), hockey-stick divergences and the
quaternary matrix from their definitions. Deterministic: no tolerance is statistical.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pandas as pd
import pytest

from ldpsim.reproduce import kov_extra as kx
from ldpsim.reproduce import names, reproduce

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SEED = 2014
MI_GRID = [0.001, 0.01, 1.0, 10.0, 20.0]


# --------------------------------------------------------------------------- references
def mi_direct(P: np.ndarray, Q: np.ndarray) -> float:
    """I(X;Y) = sum P(x) Q(y|x) log(Q(y|x)/M(y)), straight from the definition."""
    M = P @ Q
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(Q > 0, P[:, None] * Q * np.log(Q / M[None, :]), 0.0)
    return float(t.sum())


def brute_force_opt(P: np.ndarray, eps: float) -> float:
    """The staircase LP by enumeration of its bases: every set of k patterns (columns
    e^(eps b), b in {0,1}^k) whose weights solving S theta = 1 are >= 0; the best I(X;Y)."""
    k = P.size
    bits = np.array(list(itertools.product([0, 1], repeat=k)), dtype=float).T  # k x 2^k
    S = np.exp(eps * bits)
    best = 0.0
    for cols in itertools.combinations(range(S.shape[1]), k):
        A = S[:, cols]
        if abs(np.linalg.det(A)) < 1e-14:
            continue
        th = np.linalg.solve(A, np.ones(k))
        if np.all(th >= -1e-12):
            best = max(best, mi_direct(P, A * np.clip(th, 0, None)[None, :]))
    return best


def binary_mi_mp(p: float, eps: float) -> float:
    """The binary mechanism with P(T) = p: I = H(Y) - H(Y|X), 50 digits."""
    with mpmath.workdps(50):
        a = mpmath.e**eps / (1 + mpmath.e**eps)
        b = 1 - a
        y0 = p * a + (1 - p) * b
        h = lambda x: -(x * mpmath.log(x) + (1 - x) * mpmath.log(1 - x))
        return float(h(y0) - h(a))


def hockey_ref(M: np.ndarray, eps: float) -> float:
    out = 0.0
    for x in (0, 1):
        out = max(out, float(np.sum(np.clip(M[x] - math.exp(eps) * M[1 - x], 0, None))))
    return out


def quaternary_ref(eps: float, delta: float) -> np.ndarray:
    e = math.exp(eps)
    return np.array(
        [
            [delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0],
            [0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta],
        ]
    )


# --------------------------------------------------------------------------- kov-mi-small-eps
@pytest.fixture(scope="module")
def mi_run(tmp_path_factory):
    return reproduce("kov-mi-small-eps", seed=SEED, instances=1, eps_grid=MI_GRID, out=tmp_path_factory.mktemp("mi"))


def test_registered():
    assert {"kov-mi-small-eps", "kov-approximate-ldp"} <= set(names())


def test_mi_files_and_agreement(mi_run):
    files = {p.name for p in mi_run.files}
    assert {"data.csv", "thresholds.csv", "priors.csv", "summary.csv", "kov-mi-small-eps.png"} <= files
    assert (mi_run.out_dir / "kov-mi-small-eps.png").read_bytes()[:8] == PNG_MAGIC
    assert (mi_run.summary["agrees"] != "no").all()
    assert not mi_run.summary["quantity"].str.startswith("CHECK FAILED").any()


@pytest.mark.parametrize("p", [0.5, 0.37, 0.12])
@pytest.mark.parametrize("eps", [1e-3, 0.05, 0.8, 3.0, 20.0])
def test_binary_mi_closed_form(p, eps):
    assert kx.binary_mi(p, eps)[0] == pytest.approx(binary_mi_mp(p, eps), rel=1e-10)


@pytest.mark.parametrize("p", [0.5, 0.3])
def test_small_eps_expansion_of_the_binary_mechanism(p):
    c = p * (1 - p)
    for eps in (1e-2, 3e-3):
        lead, fourth = kx.small_eps_expansion(c, np.array(eps))
        exact = binary_mi_mp(p, eps)
        # the next term is O(eps^6): relative to the fourth-order term, O(eps^2)
        assert (lead - exact) / fourth == pytest.approx(1.0, abs=eps**2 * 10)


def test_optimal_matches_brute_force_and_the_eps2_bound(mi_run):
    pri = pd.read_csv(mi_run.out_dir / "priors.csv")
    data = pd.read_csv(mi_run.out_dir / "data.csv")
    P = pri[(pri["k"] == 4) & (pri["instance"] == 0)].sort_values("symbol")["probability"].to_numpy()
    masses = [P[list(A)].sum() for r in range(5) for A in itertools.combinations(range(4), r)]
    c = max(m * (1 - m) for m in masses)
    opt = data[(data["k"] == 4) & (data["instance"] == 0) & (data["mechanism"] == "optimal")].set_index("eps")[
        "utility"
    ]
    for eps in (0.01, 1.0, 10.0):
        assert opt[eps] == pytest.approx(brute_force_opt(P, eps), rel=1e-9)
    assert opt[0.001] / (0.001**2 * c / 2) == pytest.approx(1.0, abs=1e-6)


def test_thresholds_bracket_the_regimes(mi_run):
    """Just below eps*_bin the enumerated optimum equals the binary mechanism's closed form,
    just above it exceeds it; likewise for randomized response at eps*_RR."""
    pri = pd.read_csv(mi_run.out_dir / "priors.csv")
    thr = pd.read_csv(mi_run.out_dir / "thresholds.csv")
    row = thr[(thr["k"] == 4) & (thr["instance"] == 0)].iloc[0]
    P = pri[(pri["k"] == 4) & (pri["instance"] == 0)].sort_values("symbol")["probability"].to_numpy()
    eb, er = float(row["eps_bin"]), float(row["eps_rr"])
    assert 0 < eb < er < 20
    bin_at = lambda e: binary_mi_mp(float(row["P_T"]), e)
    assert brute_force_opt(P, eb * 0.99) == pytest.approx(bin_at(eb * 0.99), rel=1e-9)
    assert brute_force_opt(P, eb * 1.01) > bin_at(eb * 1.01) * (1 + 1e-9)

    def rr(e):
        k = P.size
        Q = np.full((k, k), 1.0 / (k - 1 + math.exp(e)))
        np.fill_diagonal(Q, math.exp(e) / (k - 1 + math.exp(e)))
        return mi_direct(P, Q)

    assert brute_force_opt(P, er * 1.01) == pytest.approx(rr(er * 1.01), rel=1e-9)
    assert brute_force_opt(P, er * 0.99) > rr(er * 0.99) * (1 + 1e-9)


# --------------------------------------------------------------------------- kov-approximate-ldp
@pytest.fixture(scope="module")
def ldp_run(tmp_path_factory):
    return reproduce("kov-approximate-ldp", seed=SEED, instances=2, out=tmp_path_factory.mktemp("ldp"))


def test_ldp_files_and_counts(ldp_run):
    files = {p.name for p in ldp_run.files}
    assert {"mechanisms.csv", "targets.csv", "summary.csv", "kov-approximate-ldp.png"} <= files
    assert (ldp_run.out_dir / "kov-approximate-ldp.png").read_bytes()[:8] == PNG_MAGIC
    data = pd.read_csv(ldp_run.out_dir / "mechanisms.csv")
    assert len(data) == 2 * len(kx.FAMILIES) * kx.PER_FAMILY
    assert data["max_violation"].max() <= 1e-12
    assert data["blackwell"].all()
    assert (ldp_run.summary["agrees"] != "no").all()


@pytest.mark.parametrize("eps,delta", [(0.3, 0.0), (1.0, 0.1), (2.5, 0.25)])
def test_quaternary_region(eps, delta):
    """delta of R(eps, delta) equals the hockey-stick divergence of the quaternary matrix
    written out here, on a grid of eps' (including eps' below and above eps)."""
    Q = quaternary_ref(eps, delta)
    grid = np.linspace(0, 3 * eps + 1, 61)
    ours = kx.quaternary_delta(eps, delta, grid)
    assert np.allclose(ours, [hockey_ref(Q, e) for e in grid], rtol=0, atol=1e-14)
    assert kx.quaternary_delta(eps, delta, np.array([eps]))[0] == pytest.approx(delta, abs=1e-15)
    a = (1 - delta) / (1 + math.exp(eps))  # the region's corner (a, a)
    f = kx.region_tradeoff(eps, delta, np.array([0.0, a, 1 - delta]))
    assert f == pytest.approx([1 - delta, a, 0.0], abs=1e-15)


@pytest.mark.parametrize("family", kx.FAMILIES)
def test_drawn_mechanisms_are_private_and_inside(family):
    rng = np.random.default_rng(7)
    for eps, delta in ((0.2, 0.05), (1.5, 0.0), (3.0, 0.2)):
        Q = quaternary_ref(eps, delta)
        for _ in range(5):
            M = kx._draw(rng, family, eps, delta, Q)
            assert np.allclose(M.sum(axis=1), 1.0) and (M >= 0).all()
            assert hockey_ref(M, eps) <= delta + 1e-12
            with np.errstate(divide="ignore", invalid="ignore"):
                lr = np.abs(np.log(M[0] / M[1]))
            for e in np.concatenate([np.linspace(0, 3 * eps + 2, 41), lr[np.isfinite(lr)]]):
                assert hockey_ref(M, e) <= hockey_ref(Q, e) + 1e-12


def test_projection_meets_delta_exactly_and_minimally():
    rng = np.random.default_rng(3)
    eps, delta = 0.7, 0.08
    for _ in range(20):
        M = rng.dirichlet(np.ones(5), size=2)
        u = rng.dirichlet(np.ones(5))
        out, lam = kx.project(M, u, eps, delta)
        if lam == 0:
            assert hockey_ref(M, eps) <= delta
            continue
        assert hockey_ref(out, eps) == pytest.approx(delta, abs=1e-13)
        before = (1 - (lam - 1e-6)) * M + (lam - 1e-6) * np.vstack([u, u])
        assert hockey_ref(before, eps) > delta


def test_a_non_private_mechanism_is_caught():
    """The quaternary mechanism at (eps, 2 delta) violates by exactly delta at eps' = eps."""
    eps, delta = 1.0, 0.05
    M = quaternary_ref(eps, 2 * delta)
    viol = kx.hockey(M, np.array([eps])) - kx.quaternary_delta(eps, delta, np.array([eps]))
    assert viol[0] == pytest.approx(delta, abs=1e-15)
