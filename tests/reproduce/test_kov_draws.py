"""``ldpsim reproduce``'s options ``--eps-grid``, ``--k`` and ``--seeds``, and the reproduction
``kov-fig4-draws`` at a tiny size.

The reference numbers are computed here, independently of the code under test: the
optimal KL divergence by our own linear program over the 2^k staircase patterns (scipy's
HiGHS), binary and randomized response by their formulas, the pooled estimate by
enumerating every subset, the Clopper-Pearson interval by scipy's binomial test.
Deterministic: fixed seeds, no Monte Carlo.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.optimize import linprog

from ldpsim.errors import LdpSimError
from ldpsim.reproduce import get, reproduce
from ldpsim.reproduce import kov_draws as kd

TINY_EPS = "0.3,2,8"  # three eps: a fast grid with both regimes (binary at small eps, RR at large)


# --------------------------------------------------------------------------- independent references
def _kl(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sum(a * np.log(a / b)))


def _optimal_kl(p0: np.ndarray, p1: np.ndarray, eps: float) -> float:
    """max D(M0||M1) over eps-LDP mechanisms: the LP over staircase columns ``theta_S S``
    (S in {1, e^eps}^k), rows summing to one (Kairouz et al. 2014, Theorem 2)."""
    k = p0.size
    patterns = np.array(list(itertools.product((1.0, math.exp(eps)), repeat=k))).T  # k x 2^k
    a, b = p0 @ patterns, p1 @ patterns
    res = linprog(-(a * np.log(a / b)), A_eq=patterns, b_eq=np.ones(k), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(-res.fun)


def _binary_kl(p0: np.ndarray, p1: np.ndarray, eps: float) -> float:
    t = p0 >= p1
    e = math.exp(eps)
    m = [
        np.array([(e * p[t].sum() + p[~t].sum()) / (1 + e), (p[t].sum() + e * p[~t].sum()) / (1 + e)]) for p in (p0, p1)
    ]
    return _kl(*m)


def _rr_kl(p0: np.ndarray, p1: np.ndarray, eps: float) -> float:
    k, e = p0.size, math.exp(eps)
    q = (np.ones((k, k)) + (e - 1) * np.eye(k)) / (k - 1 + e)
    return _kl(p0 @ q, p1 @ q)


# --------------------------------------------------------------------------- statistics
def test_pooled_cdf_is_the_average_over_every_subset():
    floors = np.array([0.91, 0.72, 0.85, 0.66, 0.97, 0.80, 0.74])
    for n in (1, 2, 3, 5, 7):
        for x in (0.6, 0.7, 0.75, 0.8, 0.9, 1.0):
            brute = np.mean([min(c) <= x for c in itertools.combinations(floors, n)])
            assert kd.pooled_cdf(floors, x, n) == pytest.approx(brute, abs=1e-15)
    x, p = kd.pooled_curve(floors, 3)
    assert list(x) == sorted(floors) and p[-1] == 1.0 and np.all(np.diff(p) >= 0)
    assert kd.pooled_quantile(floors, 3, 0.5) == min(xi for xi, pi in zip(x, p) if pi >= 0.5)
    with pytest.raises(LdpSimError, match="n: got 8"):
        kd.pooled_cdf(floors, 0.7, 8)


@pytest.mark.parametrize("count, trials", [(0, 16), (3, 16), (16, 16), (7, 1600)])
def test_clopper_pearson_matches_scipy(count, trials):
    ci = stats.binomtest(count, trials).proportion_ci(0.95, method="exact")
    # scipy finds the ends by root-finding (tolerance about 1e-12); ours are beta quantiles
    assert kd.clopper_pearson(count, trials) == pytest.approx((ci.low, ci.high), rel=1e-9, abs=1e-12)
    est, lo, hi = kd.plug_in_interval(count, trials, 100)
    assert (est, lo, hi) == pytest.approx(
        [1 - (1 - p) ** 100 for p in (count / trials, ci.low, ci.high)], rel=1e-9, abs=1e-12
    )


# --------------------------------------------------------------------------- the reproduction, tiny
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """k = 3 and 4, three draws (seeds 11..13) of two instances, three eps."""
    return reproduce(
        "kov-fig4-draws",
        instances=2,
        seeds="11..13",
        k=(3, 4),
        eps_grid=[0.3, 2, 8],
        out=tmp_path_factory.mktemp("draws") / "out",
    )


def test_draw_floors_equal_an_independent_computation(tiny):
    draws = pd.read_csv(tiny.out_dir / "draws.csv")
    insts = pd.read_csv(tiny.out_dir / "instances.csv")
    assert sorted(draws["seed"].unique()) == [11, 12, 13] and sorted(draws["k"].unique()) == [3, 4]
    for k in (3, 4):
        for sd in (11, 12, 13):
            pairs = np.random.default_rng(sd).dirichlet(np.ones(k), size=(2, 2))  # kov-fig4 --seed sd at this k
            floors = [
                min(max(_binary_kl(p0, p1, e), _rr_kl(p0, p1, e)) / _optimal_kl(p0, p1, e) for e in (0.3, 2, 8))
                for p0, p1 in pairs
            ]
            got = insts[(insts["k"] == k) & (insts["seed"] == sd)].sort_values("instance")["floor"].to_numpy()
            assert got == pytest.approx(floors, rel=1e-7)
            assert draws[(draws["k"] == k) & (draws["seed"] == sd)]["floor"].item() == pytest.approx(
                min(floors), rel=1e-7
            )


def test_summary_rows_and_files(tiny):
    assert {"draws.csv", "instances.csv", "summary.csv", "metadata.json", "kov-fig4-draws.png"} <= {
        p.name for p in tiny.files
    }
    summ = tiny.summary
    assert not summ["quantity"].str.startswith("CHECK FAILED").any()
    assert set(summ["k"]) == {3, 4} and summ["paper"].isna().all()  # the paper gives floors at k = 6 and 12 only
    draws = pd.read_csv(tiny.out_dir / "draws.csv")
    for k in (3, 4):
        rows = summ[summ["k"] == k].set_index("quantity")["ours"]
        assert rows["mixed: min ratio over 2 instances, smallest draw"] == pytest.approx(
            draws[draws["k"] == k]["floor"].min()
        )
        assert rows["mixed: min ratio over 2 instances, largest draw"] == pytest.approx(
            draws[draws["k"] == k]["floor"].max()
        )
    assert tiny.seeds == (11, 12, 13)


def test_paper_rows_at_k6(tmp_path):
    """The paper's 0.70 placed in the distribution (two draws of two instances, two eps)."""
    run = reproduce("kov-fig4-draws", instances=2, seeds=range(5, 7), k=[6], eps_grid=[1, 3], out=tmp_path / "o")
    insts = pd.read_csv(run.out_dir / "instances.csv")
    pool = insts["floor"].to_numpy()
    rows = run.summary.set_index("quantity")
    median = rows.loc["mixed: min ratio over 2 instances, median over draws"]
    assert median["paper"] == 0.70 and median["ours"] == pytest.approx(np.median(insts.groupby("seed")["floor"].min()))
    at = np.mean([min(c) <= 0.70 for c in itertools.combinations(pool, 2)])
    ci = stats.binomtest(int(np.sum(pool <= 0.70)), pool.size).proportion_ci(0.95, method="exact")
    lo, hi = (1 - (1 - p) ** 2 for p in (ci.low, ci.high))
    assert median["agrees"] == ("yes" if hi >= 0.025 and lo <= 0.975 else "no")
    assert rows.loc["paper's 0.70 as a quantile: pooled P(min over 2 <= 0.70)", "ours"] == pytest.approx(at)


# --------------------------------------------------------------------------- options of ldpsim reproduce
@pytest.mark.parametrize(
    "argv, needle",
    [
        (("kov-fig5", "--seeds", "5..3"), "--seeds: got '5..3'"),
        (("kov-fig5", "--seeds", "x"), "--seeds: got 'x'"),
        (("kov-fig5", "--seeds", "1..2", "--seed", "1"), "--seeds: got '1..2', expected either --seed or --seeds"),
        (("kov-fig4-draws", "--k", "1"), "--k: got 1"),
        (("kov-fig4-draws", "--k", "6,x"), "--k: got '6,x'"),
        (("kov-fig4-draws", "--k", "6,6"), "--k: got"),
        (("kov-fig5", "--k", "6"), "--k: kov-fig5 takes no alphabet size (reproductions that do: kov-fig4-draws)"),
        (("kov-fig5", "--eps-grid", "-1"), "--eps-grid: got [-1.0]"),
        (("kov-fig5", "--eps-grid", "0.1,x"), "--eps-grid: got '0.1,x'"),
        (("kov-fig5", "--eps-grid", "1", "800"), "--eps-grid: got [1.0, 800.0]"),
    ],
)
def test_bad_options_are_one_line_exit_2_before_any_work(cli, tmp_path, monkeypatch, argv, needle):
    from ldpsim.reproduce import _study

    def no_work(*a, **k):
        raise AssertionError("work started")

    monkeypatch.setattr(_study, "solve", no_work)
    r = cli("reproduce", *argv, "--out", tmp_path / "o")
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_registry_options():
    assert get("kov-fig4-draws").options == ("k", "seeds")
    assert get("kov-fig5").options == ()  # registered without options: unchanged
    from ldpsim.reproduce._registry import register

    with pytest.raises(LdpSimError, match="expected some of"):
        register("nope", "d", "s", options=("alpha",))


def test_seeds_runs_equal_the_single_seed_runs_byte_for_byte(cli, tmp_path):
    r = cli(
        "reproduce",
        "kov-fig5",
        "--instances",
        "1",
        "--seeds",
        "3..4",
        "--eps-grid",
        "0.5",
        "4",
        "--out",
        tmp_path / "many",
    )
    assert r.returncode == 0, r.stderr
    assert "each quantity over the seeds" in r.stdout
    many = tmp_path / "many"
    assert {p.name for p in many.iterdir()} == {"seed3", "seed4", "seeds.csv", "metadata.json"}
    combined = pd.read_csv(many / "seeds.csv")
    for sd in (3, 4):
        one = reproduce("kov-fig5", seed=sd, instances=1, eps_grid=[0.5, 4], out=tmp_path / f"one{sd}")
        for name in ("data.csv", "priors.csv", "summary.csv", "kov-fig5.png"):
            assert (many / f"seed{sd}" / name).read_bytes() == (one.out_dir / name).read_bytes(), name
        mine = combined[combined["seed"] == sd].drop(columns="seed").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, pd.read_csv(one.out_dir / "summary.csv"))
