"""Repeated collection scenarios (``kind = "collection"``): the privacy each respondent
has spent after each period (against optimal composition, the memoised closed form and the
filter's budget), the estimates and changes, the shuffler's latency and central guarantee,
reproducibility, and one-line errors for bad files."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.privacy import optimal_epsilon
from ldpsim.sim import parse_scenario
from ldpsim.sim.collection import run_replication
from tests.sim.helpers import SCENARIOS, collection_text, same_bytes_with_one_and_two_workers


def _rows(df, quantity, category=None, shuffled=False, policy=None):
    out = df[(df["quantity"] == quantity) & (df["shuffled"] == shuffled)]
    if category is not None:
        out = out[out["category"] == category]
    if policy is not None:
        out = out[out["policy"] == policy]
    return out.sort_values("period")


def test_plain_reports_spend_the_optimal_composition_of_binary_randomized_response() -> None:
    """Binary randomized response is the worst eps-DP mechanism, so the exact composition of
    t of its reports is the optimal composition theorem's value optimal_epsilon(eps, 0, t,
    delta) (Kairouz, Oh and Viswanath 2015); the pure eps is t eps; advanced >= exact."""
    sc = parse_scenario(collection_text(eps=0.7, periods=6, delta=1e-3))
    df = run_replication(sc, 0, 1)
    exact = _rows(df, "privacy", "exact_at_delta")["estimate"].to_numpy()
    want = [float(optimal_epsilon(0.7, 0.0, t, 1e-3)) for t in range(1, 7)]
    assert np.allclose(exact, want, rtol=1e-9, atol=1e-12)
    assert np.allclose(_rows(df, "privacy", "max")["estimate"], 0.7 * np.arange(1, 7))
    assert np.all(_rows(df, "privacy", "advanced")["estimate"].to_numpy() >= exact - 1e-12)
    assert exact[-1] < 0.7 * 6  # at delta = 1e-3 the exact composition saves something


def test_random_schedules_give_privacy_classes_by_the_number_of_reports() -> None:
    sc = parse_scenario(collection_text(size=3000, periods=4, schedule='{ kind = "random", rate = 0.5 }'))
    df = run_replication(sc, 0, 2)
    for t in range(1, 5):
        cls = _rows(df, "privacy_class")
        cls = cls[cls["period"] == t]
        assert int(cls["n"].sum()) == 3000
        reports = np.round(cls["estimate"].to_numpy() / 1.0)
        assert np.allclose(cls["estimate"], reports) and reports.max() <= t
        # classes follow Binomial(t, 1/2) counts: each within its ALPHA = 1e-6 two-sided normal band
        from scipy import stats

        for r, n in zip(reports.astype(int), cls["n"]):
            p = stats.binom.pmf(r, t, 0.5)
            assert abs(n - 3000 * p) <= stats.norm.isf(1e-6 / 10) * math.sqrt(3000 * p * (1 - p)) + 1


def test_memoised_reports_of_an_unchanged_answer_never_pass_eps_inf() -> None:
    """No change: every respondent reports one answer 8 times; its spent eps is the exact eps
    of 8 memoised reports, which is at most eps_inf = eps_permanent (closed form for a
    permanent k-RR) and at least one report's eps."""
    pol = '[[policies]]\nname = "memo"\nkind = "memoise"\neps_permanent = 1.5'
    sc = parse_scenario(
        collection_text(labels='["a", "b", "c"]', distribution="[0.5, 0.3, 0.2]", periods=8, policies=pol)
    )
    df = run_replication(sc, 0, 3)
    inf = _rows(df, "privacy", "longitudinal")["estimate"].to_numpy()
    assert np.allclose(inf, 1.5, rtol=1e-12)
    spent = _rows(df, "privacy", "max")["estimate"].to_numpy()
    one = _rows(df, "privacy", "per_report")["estimate"].to_numpy()[0]
    # one report of the chain k-RR(1.5) then k-RR(1): keep = p1 p2 + (1 - p1)(1 - p2)/(k - 1)
    k = 3
    p1, p2 = math.exp(1.5) / (math.exp(1.5) + k - 1), math.exp(1.0) / (math.exp(1.0) + k - 1)
    keep = p1 * p2 + (1 - p1) * (1 - p2) / (k - 1)
    assert one == pytest.approx(math.log(keep * (k - 1) / (1 - keep)), rel=1e-9)
    assert spent[0] == pytest.approx(one, rel=1e-9)
    assert np.all(np.diff(spent) >= -1e-12) and np.all(spent <= 1.5 + 1e-12)
    assert np.allclose(_rows(df, "privacy", "min" if False else "median")["estimate"], spent)  # all alike


def test_memoisation_spends_again_for_each_new_answer() -> None:
    """With changing answers a respondent's memoised reports of d distinct answers spend up
    to d eps_inf: the most exposed respondent passes eps_inf, and never d_max eps_inf."""
    pol = '[[policies]]\nname = "memo"\nkind = "memoise"\neps_permanent = 1.0'
    text = collection_text(
        labels='["a", "b", "c"]',
        distribution="[0.4, 0.3, 0.3]",
        periods=10,
        policies=pol,
        change='{ kind = "markov", matrix = [[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7]] }',
    )
    df = run_replication(parse_scenario(text), 0, 4)
    last = _rows(df, "privacy")
    last = last[last["period"] == 10].set_index("category")["estimate"]
    assert last["max"] > 1.0 + 1e-9  # some respondent held two or more answers
    assert last["max"] <= last["distinct_max"] * 1.0 + 1e-12


def test_the_filter_never_lets_a_respondent_pass_its_budget() -> None:
    pol = '[[policies]]\nname = "budget"\nkind = "filter"\nbudget_eps = 3.5\nrate = 0.6'
    df = run_replication(parse_scenario(collection_text(periods=10, policies=pol, eps=1.0)), 0, 5)
    spent = _rows(df, "privacy", "max")["estimate"].to_numpy()
    assert np.all(spent <= 3.5) and spent[-1] == 3.0  # basic filter: floor(3.5 / 1) = 3 reports
    stopped = _rows(df, "privacy", "stopped_share")["estimate"].to_numpy()
    assert np.all(np.diff(stopped) >= 0) and stopped[-1] > 0.9
    # after nearly everyone has stopped there are fewer reports behind each estimate
    n = _rows(df, "frequency", "a")["n"].to_numpy()
    assert n[-1] < 0.1 * n[0]


def test_a_lowered_last_report_spends_exactly_what_is_left_of_the_budget() -> None:
    """exhausted = "lower": after the 3 reports of eps 1 a budget of 3.5 admits, one last
    report at eps 0.5, then nothing; the most exposed respondent has spent 3.5 (never
    more), the exact composition of its four reports of binary randomized response is the
    optimal heterogeneous composition of (1, 1, 1, 0.5) (binary randomized response is the
    worst case), and the estimates that use lowered reports stay within their intervals."""
    from ldpsim.privacy import optimal_epsilon_heterogeneous

    pol = '[[policies]]\nname = "budget"\nkind = "filter"\nbudget_eps = 3.5\nrate = 0.6\nexhausted = "lower"'
    sc = parse_scenario(collection_text(periods=10, policies=pol, eps=1.0, size=20_000, delta=1e-3))
    assert sc.policies[0].allowed == 3 and sc.policies[0].lowered.epsilon() == pytest.approx(0.5, rel=1e-9)
    df = run_replication(sc, 0, 8)
    spent = _rows(df, "privacy", "max")["estimate"].to_numpy()
    assert np.all(spent <= 3.5) and spent[-1] == pytest.approx(3.5, rel=1e-9)
    exact = _rows(df, "privacy", "exact_at_delta")["estimate"].to_numpy()[-1]
    want = float(
        optimal_epsilon_heterogeneous([1.0, 1.0, 1.0, float(sc.policies[0].lowered.epsilon())], [0.0] * 4, 1e-3)
    )
    assert exact == pytest.approx(want, rel=1e-9)
    assert _rows(df, "privacy", "reports_max")["estimate"].to_numpy()[-1] == 4
    f = _rows(df, "frequency")
    half = (f["ci_high"] - f["ci_low"]) / 2 / 1.959963984540054
    assert np.all(np.abs(f["estimate"] - f["truth"]) <= 5.33 * half)  # 20 estimates, each two-sided 1e-7


def test_the_advanced_filter_admits_what_its_condition_allows() -> None:
    """Pure reports of eps 0.05 under the advanced filter at (eps_g, delta_g) = (4, 1e-6),
    all of delta on the concentration term: the largest k with sqrt(2 log(1/delta) k eps^2)
    + k eps^2 / 2 <= eps_g, computed here directly, is what the policy admits, and more than
    the basic filter's 80."""
    pol = '[[policies]]\nname = "adv"\nkind = "filter"\nfilter = "advanced"\nbudget_eps = 4.0\nbudget_delta = 1e-6'
    sc = parse_scenario(collection_text(periods=3, policies=pol, eps=0.05))
    k = max(k for k in range(1, 100_000) if math.sqrt(2 * math.log(1e6) * k * 0.0025) + k * 0.0025 / 2 <= 4.0)
    assert sc.policies[0].allowed == k and k > 80


def test_estimates_track_the_drift_and_the_shuffler_adds_its_wait() -> None:
    shuffler = "[shuffler]\nbatch = 1000\ncompare = true"
    text = collection_text(
        labels='["a", "b", "c"]',
        distribution="[0.5, 0.3, 0.2]",
        size=20_000,
        periods=6,
        change='{ kind = "drift", final = [0.2, 0.3, 0.5], stay = 0.7 }',
        shuffler=shuffler,
        loss=0.1,
    )
    df = run_replication(parse_scenario(text), 0, 6)
    for shuffled in (False, True):
        f = _rows(df, "frequency", shuffled=shuffled)
        # each estimate within 5.3 standard errors (two-sided 1e-7 each, 36 of them) of the realised share
        half = (f["ci_high"] - f["ci_low"]) / 2 / 1.959963984540054
        assert np.all(np.abs(f["estimate"] - f["truth"]) <= 5.33 * half)
        assert np.allclose(f.groupby("period")["estimate"].sum(), 1.0)
        share = _rows(df, "latency", "received_share", shuffled=shuffled)["estimate"].to_numpy()
        # 10% lost; behind the shuffler the reports short of a last full batch are withheld too
        assert np.all(np.abs(share[:-1] - 0.9) < 0.02)
        withheld = df.loc[(df["quantity"] == "central") & (df["category"] == "withheld"), "estimate"]
        missing = 0.0 if not shuffled else float(withheld.iloc[0]) / 20_000
        assert abs(share[-1] + missing - 0.9) < 0.02
    wait = _rows(df, "latency", "mean_shuffler_wait", shuffled=True)["estimate"].to_numpy()
    plain = _rows(df, "latency", "mean_delay")["estimate"].to_numpy()
    shuf = _rows(df, "latency", "mean_delay", shuffled=True)["estimate"].to_numpy()
    assert np.all(wait > 0) and np.allclose(_rows(df, "latency", "mean_shuffler_wait")["estimate"], 0.0)
    assert np.all(shuf > plain)
    central = df[df["quantity"] == "central"].set_index("category")["estimate"]
    from ldpsim.privacy.shuffle import shuffle_epsilon

    assert central["central_eps"] == pytest.approx(shuffle_epsilon(1.0, int(central["batch_min"]), 1e-6))
    assert central["central_eps"] < central["local_eps"]


def test_same_seed_same_bytes_with_one_and_two_workers(tmp_path) -> None:
    pol = (
        '[[policies]]\nname = "plain"\nkind = "plain"\n[[policies]]\nname = "memo"\nkind = "memoise"\n'
        'eps_permanent = 2.0\n[[policies]]\nname = "budget"\nkind = "filter"\nbudget_eps = 2.0'
    )
    text = collection_text(
        size=2000,
        periods=4,
        policies=pol,
        shuffler="[shuffler]\nwindow = 0.5",
        replications=2,
        change='{ kind = "drift", final = [0.4, 0.6], stay = 0.5 }',
    )
    path = tmp_path / "c.toml"
    path.write_text(text)
    summary = same_bytes_with_one_and_two_workers(path, tmp_path)
    assert "memo + shuffler" in summary


def test_an_interrupted_collection_run_resumes_to_the_same_files(tmp_path) -> None:
    from ldpsim.runs import RunInterrupted
    from ldpsim.sim import resume_run, run_scenario

    pol = (
        '[[policies]]\nname = "plain"\nkind = "plain"\n[[policies]]\nname = "memo"\nkind = '
        '"memoise"\neps_permanent = 2.0'
    )
    path = tmp_path / "c.toml"
    path.write_text(
        collection_text(size=1000, periods=3, policies=pol, shuffler="[shuffler]\nbatch = 300", replications=3)
    )
    full = run_scenario(path, out=tmp_path / "full", progress=False)
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=1)
    resumed = resume_run(tmp_path / "cut", progress=False)
    for name in ("results.csv", "summary.md", "privacy.png", "accuracy.png", "central.png"):
        assert (resumed.run_dir / name).read_bytes() == (full.run_dir / name).read_bytes(), name


def test_the_telemetry_scenario_loads_with_its_three_policies_and_six_arms() -> None:
    from ldpsim.sim import load_scenario

    sc = load_scenario(SCENARIOS / "telemetry_daily.toml")
    assert sc.size == 100_000 and sc.periods == 30
    assert [(p.name, s) for p, s in sc.arms] == [
        ("every report", False),
        ("every report", True),
        ("memoised", False),
        ("memoised", True),
        ("budget eps 8", False),
        ("budget eps 8", True),
    ]
    assert sc.policies[2].allowed == 8


@pytest.mark.parametrize(
    "change, policies, mechanism, key",
    [
        ('{ kind = "drift", final = [0.0, 1.0], stay = 0.99 }', None, None, "collection.change.stay"),
        ('{ kind = "markov", matrix = [[0.5, 0.4], [0.5, 0.5]] }', None, None, "collection.change.matrix[0]"),
        ('{ kind = "markov", matrix = [[1.0]] }', None, None, "collection.change.matrix"),
        ('{ kind = "drift", final = [0.5, 0.5, 0.0] }', None, None, "collection.change.final"),
        ('{ kind = "none" }', '[[policies]]\nname = "m"\nkind = "memoise"', None, "eps_permanent"),
        ('{ kind = "none" }', '[[policies]]\nname = "p"\nkind = "plain"\nbudget_eps = 1.0', None, "budget_eps"),
        (
            '{ kind = "none" }',
            '[[policies]]\nname = "f"\nkind = "filter"\nbudget_eps = 0.5',
            None,
            "policies[0].budget_eps",
        ),
        (
            '{ kind = "none" }',
            '[[policies]]\nname = "p"\nkind = "plain"\n[[policies]]\nname = "p"\nkind = "plain"',
            None,
            "policies[1].name",
        ),
        ('{ kind = "none" }', None, 'kind = "unary_encoding"\neps = 1.0', "mechanism.kind"),
        (
            '{ kind = "none" }',
            '[[policies]]\nname = "f"\nkind = "filter"\nbudget_eps = 3.0\nexhausted = "lower"',
            None,
            "policies[0].exhausted",
        ),
        ('{ kind = "none" }', '[[policies]]\nname = "p"\nkind = "plain"\nexhausted = "lower"', None, "exhausted"),
        (
            '{ kind = "none" }',
            '[[policies]]\nname = "f"\nkind = "filter"\nfilter = "advanced"\nbudget_eps = 9.0',
            None,
            "policies[0].budget_delta",
        ),
        ('{ kind = "sideways" }', None, None, "collection.change"),
    ],
)
def test_bad_files_give_one_line_naming_the_key(change, policies, mechanism, key) -> None:
    kw = {"change": change}
    if policies is not None:
        kw["policies"] = policies
    if mechanism is not None:
        kw["mechanism"] = mechanism
    with pytest.raises(LdpSimError) as info:
        parse_scenario(collection_text(**kw))
    msg = str(info.value)
    assert "\n" not in msg and key in msg, msg


@pytest.mark.slow
def test_the_telemetry_scenario_end_to_end(tmp_path) -> None:
    """The shipped 30-day scenario (1.8 x 10^7 reports, about 13 s): every device's pure eps
    after 30 daily reports is 30, the budget's never passes 8, memoisation's eps_inf is the
    permanent response's eps 2, and the report has its three figures."""
    from ldpsim.sim import run_scenario

    run = run_scenario(SCENARIOS / "telemetry_daily.toml", out=tmp_path / "run", progress=False)
    df = run.results
    last = df[(df["quantity"] == "privacy") & (df["period"] == 30) & ~df["shuffled"]].set_index(["policy", "category"])[
        "estimate"
    ]
    assert last[("every report", "max")] == 30 and last[("every report", "median")] == 30
    assert last[("budget eps 8", "max")] == 8
    assert last[("memoised", "longitudinal")] == pytest.approx(2.0)
    assert {"privacy.png", "accuracy.png", "central.png", "summary.md"} <= {p.name for p in run.run_dir.iterdir()}
