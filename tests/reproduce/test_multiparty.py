"""``ldpsim reproduce multiparty-optimality``: Kairouz et al. 2015, Sec. 5, the (eps_i, delta_i) randomized
response is never beaten by a private protocol at the same levels.

A small run (one draw of privacy levels, also at k = 200) must agree everywhere; the RR's
XOR accuracies are recomputed here from the closed form of docs/theory.md sec. 7 and the drawn
levels; and a deliberately non-private alternative (binary RR at 2 eps_i) must make the check
fail. Deterministic: fixed seeds only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ldpsim.mechanisms import from_matrix
from ldpsim.protocols import OBSERVER, Protocol, Task
from ldpsim.reproduce import multiparty as mp
from ldpsim.reproduce import names, reproduce

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SEED = 2014
INSTANCES = 1


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return reproduce(mp.NAME, seed=SEED, instances=INSTANCES, out=tmp_path_factory.mktemp("multiparty"))


@pytest.fixture(scope="module")
def data(run) -> pd.DataFrame:
    return pd.read_csv(run.out_dir / "data.csv")


@pytest.fixture(scope="module")
def levels(run) -> pd.DataFrame:
    return pd.read_csv(run.out_dir / "levels.csv")


def _closed_form_xor(eps: np.ndarray, delta: np.ndarray, party: int) -> float:
    others = [j for j in range(eps.size) if j != party]
    return 0.5 * (1.0 + float(np.prod([delta[j] + (1 - delta[j]) * np.tanh(eps[j] / 2) for j in others])))


def _party_levels(levels: pd.DataFrame, instance: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rows = levels[(levels["instance"] == instance) & (levels["k"] == k)].sort_values("party")
    if k != mp.K_LARGE:
        assert rows["party"].tolist() == list(range(k))
        return rows["eps"].to_numpy(), rows["delta"].to_numpy()
    # two classes: parties 0..k-LARGE_B-1 like party 0, the last LARGE_B like party k-1
    a, b = rows.iloc[0], rows.iloc[-1]
    n_a = k - mp.LARGE_B
    return np.r_[np.full(n_a, a["eps"]), np.full(mp.LARGE_B, b["eps"])], np.r_[
        np.full(n_a, a["delta"]), np.full(mp.LARGE_B, b["delta"])
    ]


# ----------------------------------------------------------------------------- the run
def test_files_are_written(run):
    assert mp.NAME in names()
    files = {p.name for p in run.files}
    assert {"data.csv", "levels.csv", "summary.csv", "metadata.json", f"{mp.NAME}.png"} <= files
    assert (run.out_dir / f"{mp.NAME}.png").read_bytes()[:8] == PNG_MAGIC
    summary = pd.read_csv(run.out_dir / "summary.csv")
    assert list(summary.columns) == ["quantity", "k", "eps", "paper", "ours", "agrees", "criterion"]
    assert len(summary) == len(run.summary) == len(mp.FUNCTIONS) * 2 + 3


def test_every_summary_row_agrees(run):
    summary = run.summary
    checked = summary[summary["paper"].notna()]
    assert (checked["agrees"] == "yes").all(), checked[["quantity", "ours", "criterion"]].to_string()
    unchecked = summary[summary["paper"].isna()]
    assert unchecked["quantity"].str.startswith("comparisons").all() and len(unchecked) == 1


def test_data_covers_every_function_party_notion_and_size(data):
    assert set(data["k"]) == {*mp.K_SMALL, mp.K_LARGE}
    assert set(data["function"]) == set(mp.FUNCTIONS)
    assert set(data[data["notion"] == "worst"]["k"]) == {mp.K_WORST}
    assert set(data[data["k"] == mp.K_LARGE]["function"]) == set(mp.SYMMETRIC)
    for k in mp.K_SMALL:
        assert set(data[data["k"] == k]["party"]) == {OBSERVER, *range(k)}
    assert set(data["protocol"]) >= {"binary", "postprocessed-1", "random2xm-1"}
    assert data["private"].all()
    assert data["instance"].nunique() == INSTANCES
    assert np.allclose(data["gap"], data["rr_accuracy"] - data["accuracy"], atol=1e-14)
    # the RR's accuracy does not depend on the alternative it is compared with
    keys = ["instance", "function", "k", "party", "notion"]
    assert (data.groupby(keys)["rr_accuracy"].nunique() == 1).all()
    # RR never worse; strictly better somewhere for every function
    for fname, notion in data[["function", "notion"]].drop_duplicates().itertuples(index=False):
        gap = data[(data["function"] == fname) & (data["notion"] == notion)]["gap"]
        assert gap.min() >= -mp.TOL[notion], (fname, notion)
        assert gap.max() > 1e-3, (fname, notion)


def test_worst_case_never_exceeds_average(data):
    k3 = data[data["k"] == mp.K_WORST]
    keys = ["instance", "function", "party", "protocol"]
    ave = k3[k3["notion"] == "average"].set_index(keys)
    wc = k3[k3["notion"] == "worst"].set_index(keys)
    assert len(ave) == len(wc) > 0
    assert (wc["rr_accuracy"] <= ave.loc[wc.index, "rr_accuracy"] + 1e-7).all()
    assert (wc["accuracy"] <= ave.loc[wc.index, "accuracy"] + 1e-7).all()


def test_xor_accuracies_match_the_closed_form(data, levels):
    xor = data[(data["function"] == "xor") & (data["notion"] == "average")].drop_duplicates(["instance", "k", "party"])
    assert len(xor) == INSTANCES * (sum(k + 1 for k in mp.K_SMALL) + 3)
    for d, k, party, acc in xor[["instance", "k", "party", "rr_accuracy"]].itertuples(index=False):
        eps, delta = _party_levels(levels, d, k)
        assert acc == pytest.approx(_closed_form_xor(eps, delta, party), abs=1e-12), (d, k, party)


def test_levels_are_heterogeneous_and_do_not_depend_on_instances():
    few, many = mp.draw_levels(SEED, 2, 1), mp.draw_levels(SEED, 5, 2)
    for a, b in zip(few, many):
        for k in mp.K_SMALL:
            assert np.array_equal(a[k][0], b[k][0]) and np.array_equal(a[k][1], b[k][1])
    assert few[0]["large"] == many[0]["large"] and "large" not in few[1] and "large" in many[1]
    eps = np.concatenate([lv[8][0] for lv in many])
    delta = np.concatenate([lv[8][1] for lv in many])
    assert np.unique(eps).size == eps.size and (delta == 0).any() and (delta > 0).any()
    assert eps.min() >= mp.EPS_RANGE[0] and eps.max() <= mp.EPS_RANGE[1]


def test_alternatives_are_private_and_random_matrices_are_tight():
    rng = np.random.default_rng(5)
    eps, delta = np.array([0.3, 1.0, 2.5, 0.7]), np.array([0.0, 0.05, 0.2, 0.01])
    for alt in mp.alternatives(eps, delta, rng):
        assert alt.privacy_table()["private"].all(), alt.name
    tight = 0
    for e, d in zip(eps, delta):
        for m in (2, 3, 4):
            q, lam = mp.random_private_matrix(e, d, m, rng, return_lam=True)
            mech = from_matrix(q)
            assert q.shape == (2, m) and mech.is_private(e, d)
            if lam == 1:  # the raw random matrix was private already
                continue
            tight += 1  # else the bisection stops at the boundary of the (e, d) region
            if d > 0:
                assert mech.delta(e) == pytest.approx(d, rel=1e-6)
            else:
                assert mech.epsilon() == pytest.approx(e, rel=1e-6)
    assert tight >= 6  # most of the 12 needed mixing (7 with these seeds)


# ----------------------------------------------------------------------------- mutation
def test_a_non_private_alternative_is_caught():
    eps, delta = np.array([1.0, 0.8, 1.2]), np.array([0.01, 0.02, 0.0])
    rr = Protocol.universal(eps, delta)
    cheat = Protocol.binary(2 * eps, delta)  # private at 2 eps_i only
    honest = Protocol.binary(eps, delta)
    tasks = mp.tasks_for(3, np.random.default_rng(1))
    rows, fair = [], []
    for fname, task in tasks.items():
        rows += mp.compare(rr, [cheat], task, fname, receivers=[OBSERVER, 0, 1, 2], notions=mp.NOTIONS)
        fair += mp.compare(rr, [honest], task, fname, receivers=[OBSERVER, 0, 1, 2], notions=mp.NOTIONS)
    bad = mp.check(pd.DataFrame(rows, columns=mp.DATA_COLUMNS))
    assert (bad["agrees"] == "no").any()
    xor_rows = bad[bad["quantity"].str.startswith("xor: RR never worse")]
    assert (xor_rows["agrees"] == "no").all() and (xor_rows["ours"] < -0.05).all()
    assert bad.loc[bad["quantity"].str.startswith("alternatives exactly private"), "agrees"].item() == "no"
    good = mp.check(pd.DataFrame(fair, columns=mp.DATA_COLUMNS))
    assert (good.loc[good["paper"].notna(), "agrees"] == "yes").all(), good.to_string()


def test_a_better_than_rr_number_is_caught_by_the_tolerance():
    rows = [
        dict(
            instance=0,
            function="sum",
            k=3,
            party=0,
            role="party",
            protocol="x",
            notion=n,
            accuracy=0.5 + t,
            rr_accuracy=0.5,
            gap=-t,
            private=True,
        )
        for n, t in (("average", 1e-8), ("worst", 1e-8))
    ]
    summary = mp.check(pd.DataFrame(rows, columns=mp.DATA_COLUMNS)).set_index("quantity")["agrees"]
    assert summary.filter(like="(average accuracy)").item() == "no"  # 1e-8 > average tolerance 1e-9
    assert summary.filter(like="(worst accuracy)").item() == "yes"  # within the LP tolerance 1e-7


def test_xor_closed_form_helper_matches_the_library():
    from ldpsim.protocols import exact_accuracy

    eps, delta = np.array([0.2, 1.5, 3.0, 0.9]), np.array([0.1, 0.0, 0.3, 0.05])
    rr = Protocol.universal(eps, delta)
    general = Task.from_table(Task.xor(4).full_table())  # not recognised as XOR: tensor contraction
    for party in (OBSERVER, 0, 3):
        assert mp.xor_closed_form(eps, delta, party) == pytest.approx(_closed_form_xor(eps, delta, party), abs=1e-15)
        assert exact_accuracy(rr, general, party) == pytest.approx(_closed_form_xor(eps, delta, party), abs=1e-12)
