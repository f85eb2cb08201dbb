"""Runs of collection and multi-party scenarios at their edges (issue 34): a collection in
which no report reaches the server, a shuffler behind reports of eps in the hundreds, a
privacy filter at eps = 1e-6 with a lowered last report, and a multi-party broadcast of
days of work (refused when the file is loaded, with its estimate and the option that goes
on)."""

from __future__ import annotations

import math
import time

import mpmath as mp
import pytest

from ldpsim.cli import main
from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario
from tests.sim.helpers import MULTIPARTY, collection_text

FAR_LATENCY = 'latency = { kind = "constant", value = 1e6 }'  # far beyond the collection's 4 periods


def _no_report_text(case: str, shuffler: str = "") -> str:
    text = collection_text(size=300, periods=4, loss=1.0 if case == "loss 1" else 0.0, shuffler=shuffler)
    return text.replace('latency = { kind = "exponential", mean = 0.01 }', FAR_LATENCY) if case == "late" else text


# --------------------------------------------------------------------- item 6: nothing arrives
@pytest.mark.parametrize("case, shuffler", [("loss 1", ""), ("late", ""), ("loss 1", "[shuffler]\nbatch = 50")])
def test_a_collection_in_which_no_report_arrives_gives_a_normal_report(tmp_path, capsys, case, shuffler):
    """Every report lost (or later than the end): the privacy spent is still real (the
    reports left the devices), the estimates are empty, and the run ends with its report
    and a line saying that nothing reached the server, as a survey does."""
    path = tmp_path / "c.toml"
    path.write_text(_no_report_text(case, shuffler))
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no report reached the server" in out
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "No report reached the server" in summary
    assert {"privacy.png", "report.html"} <= {p.name for p in (tmp_path / "run").iterdir()}
    from ldpsim.report.collection import final_summary, read_results

    row = final_summary(read_results(tmp_path / "run" / "results.csv")).iloc[0]
    assert row["eps_max"] == 4.0 and math.isnan(row["mean_delay"]) and math.isnan(row["se_last"])


# --------------------------------------------------------------------- item 8: shuffler at large eps
def reference_delta(eps0: float, n: int, eps: float, c_max: int = 8) -> mp.mpf:
    """The clone reduction's hockey-stick divergence written out from its definition in
    60-digit arithmetic, C ~ Bin(n - 1, e^-eps0) summed up to ``c_max`` and the mass beyond
    charged in full: for n e^-eps0 <= 1e-6 that mass is below 1e-50 (independent of the
    closed-form tails of ldpsim.privacy.shuffle)."""
    with mp.workdps(60):
        e0, m = mp.mpf(eps0), n - 1
        clone = mp.exp(-e0)
        q, qbar = 1 / (1 + clone), clone / (1 + clone)  # e^eps0 / (e^eps0 + 1) and 1 - q, each directly
        ee = mp.exp(mp.mpf(eps))
        total, seen = mp.mpf(0), mp.mpf(0)
        for c in range(min(c_max, m) + 1):
            pc = mp.binomial(m, c) * clone**c * (1 - clone) ** (m - c)
            seen += pc
            for a in range(c + 2):  # P, Q at (a, c + 1 - a): x = P(A = a - 1), y = P(A = a), A ~ Bin(c, 1/2)
                x = mp.binomial(c, a - 1) / mp.mpf(2) ** c if a >= 1 else mp.mpf(0)
                y = mp.binomial(c, a) / mp.mpf(2) ** c if a <= c else mp.mpf(0)
                total += pc * max(mp.mpf(0), (q * x + qbar * y) - ee * (q * y + qbar * x))
        return total + (1 - seen)


@pytest.mark.parametrize(
    "eps0, n, eps",
    [
        (40.0, 10**6, 30.0),
        (40.0, 10**6, 39.0),
        (300.0, 10**6, 299.0),
        (700.0, 10**6, 699.999),
        (700.0, 1000, 1.0),
        (1000.0, 10**9, 999.5),
    ],
)
def test_shuffle_delta_at_local_eps_in_the_hundreds_matches_the_divergence(eps0, n, eps):
    from ldpsim.privacy.shuffle import shuffle_delta

    want = float(reference_delta(eps0, n, eps))
    assert shuffle_delta(eps0, n, eps) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("eps0", [40.0, 300.0, 700.0, 1000.0])
def test_shuffle_epsilon_at_local_eps_in_the_hundreds_is_the_smallest_eps_within_delta(eps0):
    """Where clones are too rare to matter (n e^-eps0 tiny) the central eps is just below
    eps0; the answer is never below the true one (its divergence is within delta) and within
    the stated 1e-9 relative of it (2e-9 lower, the divergence is past delta)."""
    from ldpsim.privacy.shuffle import shuffle_epsilon

    got = shuffle_epsilon(eps0, 10**6, 1e-6)
    assert got <= eps0
    assert reference_delta(eps0, 10**6, got) <= mp.mpf(1e-6)
    assert reference_delta(eps0, 10**6, got - 2e-9 * eps0) > mp.mpf(1e-6)


@pytest.mark.parametrize("eps", [700.0, 800.0])
def test_a_collection_with_a_shuffler_at_eps_700_and_beyond_reports_its_central_guarantee(tmp_path, eps):
    path = tmp_path / "c.toml"
    path.write_text(collection_text(size=300, periods=2, eps=eps, shuffler="[shuffler]\nbatch = 100"))
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    from ldpsim.report.collection import read_results

    df = read_results(tmp_path / "run" / "results.csv")
    cen = df[df["quantity"] == "central"].set_index("category")["estimate"]
    assert cen["local_eps"] == eps and eps * (1 - 1e-8) < cen["central_eps"] <= eps


# --------------------------------------------------------------------- item 9: filter at eps = 1e-6
LOWERED = '[[policies]]\nname = "budget"\nkind = "filter"\nbudget_eps = 1.0\nexhausted = "lower"'


def test_a_filter_at_eps_1e_6_with_a_lowered_last_report_loads_at_once_and_runs():
    """Budget 1 at eps 1e-6 per report admits 10^6 reports, far more than the 3 periods: no
    respondent reaches the budget, so the lowered last report is never sent, and neither
    loading nor the privacy accounting walks through 10^6 reports (they took a minute,
    then failed on the accountant's lattice ``step``)."""
    from ldpsim.sim.collection import privacy_tables, run_replication

    started = time.perf_counter()
    sc = parse_scenario(collection_text(size=200, periods=3, eps=1e-6, policies=LOWERED))
    tables = privacy_tables(sc)
    assert time.perf_counter() - started < 1.5
    rows = run_replication(sc, 0, 5, tables)
    top = rows[(rows["quantity"] == "privacy") & (rows["category"] == "max")].sort_values("period")["estimate"]
    assert top.to_list() == pytest.approx([1e-6, 2e-6, 3e-6], rel=1e-12)


def test_a_lowered_last_report_at_eps_1e_6_that_is_reached_is_still_sent():
    """Budget 2.5e-6 at eps 1e-6 over 4 periods: two full reports, then one at the 0.5e-6
    left (up to the filter's exact charges), then nothing."""
    from ldpsim.sim.collection import run_replication

    pol = LOWERED.replace("budget_eps = 1.0", "budget_eps = 2.5e-6")
    rows = run_replication(parse_scenario(collection_text(size=200, periods=4, eps=1e-6, policies=pol)), 0, 5)
    last = rows[(rows["quantity"] == "privacy") & (rows["period"] == 4)].set_index("category")["estimate"]
    assert last["lowered_eps"] == pytest.approx(0.5e-6, rel=1e-9)
    assert last["max"] == pytest.approx(2.5e-6, rel=1e-9) and last["max"] <= 2.5e-6


# --------------------------------------------------------------------- item 10: days of rounds
def _rounds(count: int, batch: int) -> str:
    return MULTIPARTY.replace("count = 4000", f"count = {count:_}").replace("batch = 1000", f"batch = {batch:_}")


def test_a_broadcast_of_days_is_refused_at_load_with_its_estimate_and_the_way_on(tmp_path, capsys):
    """10^9 rounds one batch each: refused within a second, one line naming rounds.batch,
    giving the estimate and the option that runs it anyway; with the option it loads."""
    from ldpsim.sim.scenario import allow_long_runs

    text = _rounds(10**9, 1)
    started = time.perf_counter()
    with pytest.raises(LdpSimError) as info:
        parse_scenario(text, "days.toml")
    assert time.perf_counter() - started < 1.0
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("days.toml: rounds.batch: got 1, ") and "estimated at" in msg, msg
    assert "days" in msg and "--allow-long-run" in msg, msg
    with allow_long_runs():
        sc = parse_scenario(text, "days.toml")
    assert sc.estimated_seconds > 86400
    path = tmp_path / "days.toml"
    path.write_text(text)
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "rounds.batch" in err and "--allow-long-run" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()
    assert main(["check", str(path)]) == 2
    assert main(["check", str(path), "--allow-long-run"]) == 0


def test_the_estimate_prices_rounds_and_batches_and_ordinary_runs_pass():
    """The shipped-sized runs load; an estimate counts every batch and every round, so
    more rounds per batch is cheaper, and the count alone can be too much."""
    small = parse_scenario(_rounds(4000, 1000))
    assert 0 < small.estimated_seconds < 5
    one_by_one = parse_scenario(_rounds(20_000, 1))
    assert one_by_one.estimated_seconds > 10 * parse_scenario(_rounds(20_000, 10_000)).estimated_seconds
    with pytest.raises(LdpSimError, match=r"rounds\.count: got 1,000,000,000, .*estimated at"):
        parse_scenario(
            _rounds(10**9, 10_000)
            .replace("k = 4", "k = 40")
            .replace("eps = [0.5, 1, 2, 3]", f"eps = {[1.0] * 40}")
            .replace("delta = [0, 0.01, 0.05, 0.1]", f"delta = {[0.0] * 40}")
        )


def test_a_study_estimated_past_an_hour_runs_with_the_same_option():
    """The multi-party study's own limit (an hour) is refused with the same way on, and
    lifted by the same option."""
    from ldpsim.sim.scenario import allow_long_runs
    from tests.sim.test_multiparty_study import GOOD

    text = GOOD.replace("rounds = 4000", "rounds = 100_000_000")
    with pytest.raises(LdpSimError, match=r"study\.rounds: .*estimated at .*--allow-long-run"):
        parse_scenario(text, "study.toml")
    with allow_long_runs():
        assert parse_scenario(text, "study.toml").estimated_seconds > 3600


def test_a_composition_beyond_the_accountant_names_the_scenario_key(monkeypatch):
    """Where the exact composition of a collection's reports would need more lattice points
    than the accountant holds, the one line names the scenario's key, not the accountant's
    internal ``step``."""
    from ldpsim.errors import invalid
    from ldpsim.privacy.accountant import Accountant
    from ldpsim.sim.collection import privacy_tables

    def beyond(self, delta):
        raise invalid("step", 1e-8, "a step giving at most 8,388,608 lattice points in a composition (here 11,307,003)")

    sc = parse_scenario(collection_text(size=100, periods=3))
    monkeypatch.setattr(Accountant, "epsilon", beyond)
    with pytest.raises(LdpSimError) as info:
        privacy_tables(sc)
    msg = str(info.value)
    assert msg.startswith("collection.periods: got 3, ") and "step" not in msg.split(":")[0] and "\n" not in msg, msg
