"""``ldpsim reproduce kov-binary-universality`` and ``kov-approximation-factor``.

The threshold eps* is checked against a direct evaluation of the likelihood ratios of all
staircase patterns (itertools over the subsets, no cross-multiplication), against a
threshold derived by hand for one prior pair, and against explicit mechanisms (the binary
mechanism on another set beats the binary mechanism on T* for the hockey-stick divergence
just above eps*). The factor is the closed form ``1/(2(e^eps+1)^2)`` written out here, and
its two ingredients (Pinsker for the binary mechanism, Duchi et al. for the optimum) are
checked directly. Deterministic: fixed seeds, no Monte Carlo tolerances.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ldpsim.mechanisms import binary_mechanism
from ldpsim.reproduce import kov_binary as kb
from ldpsim.reproduce import names, reproduce
from ldpsim.utility import KL, Hellinger, binary_for, optimal_mechanism

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _pairs(seed: int, n: int, k: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=(n, 2))


def _ratios(P0, P1, eps):
    """g(T) = P0.q / P1.q for the pattern q = 1 on T, e^-eps off T, for every subset T."""
    k = P0.size
    out = {}
    for bits in itertools.product((0, 1), repeat=k):
        q = np.where(np.array(bits) == 1, 1.0, math.exp(-eps))
        out[bits] = float(P0 @ q) / float(P1 @ q)
    return out


def _dominates(P0, P1, eps) -> bool:
    g = _ratios(P0, P1, eps)
    star = tuple(int(x) for x in (P0 >= P1))
    comp = tuple(1 - x for x in star)
    return max(g.values()) <= g[star] * (1 + 1e-12) and min(g.values()) >= g[comp] * (1 - 1e-12)


def test_both_registered():
    assert {"kov-binary-universality", "kov-approximation-factor"} <= set(names())


def test_threshold_by_hand():
    # P0 = (.6, .3, .1), P1 = (.3, .2, .5): T* = {0, 1}; g({0}) > g(T*) iff 0.03 c^2 > 0.1 c,
    # i.e. c > 10/3; no set goes below g({2}). So eps* = log(1 + 10/3) on the upper side.
    P0, P1 = np.array([0.6, 0.3, 0.1]), np.array([0.3, 0.2, 0.5])
    e, side = kb.blackwell_threshold(P0, P1)
    assert e == pytest.approx(math.log(13 / 3), rel=1e-12)
    assert side == "upper"


def test_two_symbols_never_stop():
    e, side = kb.blackwell_threshold(np.array([0.7, 0.3]), np.array([0.2, 0.8]))
    assert e == math.inf and side == ""


@pytest.mark.parametrize("k", [3, 4, 6])
def test_threshold_is_where_dominance_ends(k):
    for P0, P1 in _pairs(7 + k, 6, k):
        e, _ = kb.blackwell_threshold(P0, P1)
        assert 0 < e < math.inf
        for r in (0.3, 0.9, 1 - 1e-7):
            assert _dominates(P0, P1, e * r)
        assert not _dominates(P0, P1, e * (1 + 1e-4))


def test_binary_optimal_below_threshold_for_several_divergences():
    P0, P1 = _pairs(11, 1, 6)[0]
    e, _ = kb.blackwell_threshold(P0, P1)
    f = kb.random_fs(3, 1)[0]
    for U in (KL(P0, P1), Hellinger(P0, P1), kb._utility("random_f", P0, P1, f)):
        for eps in (0.5 * e, e):
            opt = optimal_mechanism(U, eps).value
            assert U.value(binary_for(U, eps)) == pytest.approx(opt, rel=1e-9)


def test_hockey_stick_beaten_above_threshold_by_an_explicit_mechanism():
    for P0, P1 in _pairs(5, 4, 5):
        e, side = kb.blackwell_threshold(P0, P1)
        for r, beaten in ((0.99, False), (1.01, True)):
            eps = e * r
            H = kb.hockey_stick(P0, P1, eps, side)
            assert H.value(binary_for(H, eps)) == pytest.approx(0.0, abs=1e-15)
            g = _ratios(P0, P1, eps)
            pick = max(g, key=g.get) if side == "upper" else min(g, key=g.get)
            other = H.value(binary_mechanism(eps, np.array(pick, dtype=bool), P0.size))
            assert (other > 1e-9) is beaten


def test_random_f_is_convex_and_zero_at_one():
    for f in kb.random_fs(2014, 20):
        t = np.geomspace(1e-3, 1e3, 2001)
        y = f(t)
        assert f(np.array([1.0]))[0] == pytest.approx(0.0, abs=1e-12)
        # convex: every chord lies above the graph (second differences on a log grid, mid-points)
        mid = f(np.sqrt(t[:-1] * t[1:]))
        lam = (np.sqrt(t[:-1] * t[1:]) - t[:-1]) / (t[1:] - t[:-1])
        assert np.all(mid <= (1 - lam) * y[:-1] + lam * y[1:] + 1e-9 * (1 + np.abs(y[1:])))


def test_factor_closed_form_and_its_ingredients():
    P0, P1 = _pairs(2, 1, 6)[0]
    tv = 0.5 * np.abs(P0 - P1).sum()
    for eps in (0.1, 1.0, 4.0):
        e = math.exp(eps)
        assert kb.binary_kl_lower_bound_factor(eps) == pytest.approx(1 / (2 * (e + 1) ** 2), rel=1e-13)
        ratio, b, opt = kb.kl_ratio(P0, P1, eps)
        assert b >= 2 * ((e - 1) / (e + 1)) ** 2 * tv**2  # Pinsker on the binary mechanism's two outputs
        assert opt <= 4 * (e - 1) ** 2 * tv**2  # Duchi et al. (its KL is one half of the symmetrised sum)
        assert ratio >= 1 / (2 * (e + 1) ** 2)


def test_search_never_worse_than_its_start(monkeypatch):
    monkeypatch.setattr(kb, "ADV_MAXFEV", 40)
    P0, P1 = _pairs(9, 1, 3)[0]
    start, _, _ = kb.kl_ratio(P0, P1, 3.0)
    found = kb._search(3, 3.0, [np.array([P0, P1])])
    assert found["ok"] and found["ratio"] <= start * (1 + 1e-9)


@pytest.fixture(scope="module")
def uni(tmp_path_factory):
    return reproduce(
        "kov-binary-universality",
        seed=2014,
        instances=1,
        out=tmp_path_factory.mktemp("uni"),
        eps_grid=[0.5, 5],
    )


def test_universality_run(uni):
    files = {p.name for p in uni.files}
    assert {
        "universality.csv",
        "thresholds.csv",
        "priors.csv",
        "summary.csv",
        "kov-binary-universality.png",
    } <= files
    assert (uni.out_dir / "kov-binary-universality.png").read_bytes()[:8] == PNG_MAGIC
    summary = uni.summary
    assert not summary["quantity"].str.startswith("CHECK FAILED").any()
    assert (summary.loc[summary["agrees"] != "", "agrees"] == "yes").all()
    thr = pd.read_csv(uni.out_dir / "thresholds.csv")
    P = _pairs(2014, 1, 6)  # the same draw as _study.prior_pairs
    for i in range(1):
        e, _ = kb.blackwell_threshold(P[i, 0], P[i, 1])
        assert thr.loc[i, "eps_star"] == pytest.approx(e, rel=1e-12)
        assert thr.loc[i, "threshold_kl"] >= e
        assert thr.loc[i, "threshold_tv"] == math.inf


def test_approximation_run(tmp_path, monkeypatch):
    monkeypatch.setattr(kb, "ADV_MAXFEV", 10)
    monkeypatch.setattr(kb, "FACTOR_K", (3,))
    run = reproduce(
        "kov-approximation-factor",
        seed=2014,
        instances=2,
        out=tmp_path,
        eps_grid=[0.1, 10],
    )
    files = {p.name for p in run.files}
    assert {
        "data.csv",
        "adversarial.csv",
        "priors.csv",
        "summary.csv",
        "kov-approximation-factor.png",
    } <= files
    assert not run.summary["quantity"].str.startswith("CHECK FAILED").any()
    assert (run.summary.loc[run.summary["agrees"] != "", "agrees"] == "yes").all()
    adv = pd.read_csv(tmp_path / "adversarial.csv")
    for _, r in adv.iterrows():
        assert r["factor"] == pytest.approx(1 / (2 * (math.exp(r["eps"]) + 1) ** 2), rel=1e-12)
        assert r["ratio"] >= r["factor"]
