"""One individual-mode population cut into shards (ldpsim/sim/engine.py): the rows of a
replication merged from its shards are the rows of the unsharded replication, byte for
byte, whatever the number of shards, in every feature of a survey file; and the run
framework's ``shards`` option writes the same files.

The units of randomness are the batches of ``simulation.batch_size`` clients of every
cohort; the batches here are small, so that cohorts hold many of them and shards cut
cohorts in the middle.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.runs import RunInterrupted
from ldpsim.sim import parse_scenario, resume_run, run_scenario
from ldpsim.sim.engine import Replication, merge_shards, plan_shards, run_replication, run_shard, shard_bounds
from tests.sim import test_compared_mechanisms, test_crosstab_task, test_questions, test_tiers_task
from tests.sim.helpers import SCENARIOS, scenario_text

SEED = 20261202


def _small(text: str, batch: int) -> object:
    # named beside the shipped scenarios, so that data/anes96.csv is found
    return parse_scenario(text, str(SCENARIOS / "shards.toml")).with_overrides(batch_size=batch)


#: name -> (scenario, whether each tick's statistic suffices, so shards send counts back)
CASES = {
    # one cohort of 5,000 at time 0 (ten batches), constant latency: equal times, so the
    # order of the parts within a tick matters
    "all_at_once": (lambda: _small(scenario_text(size=5000, latency='{ kind = "constant", value = 0.3 }'), 512), True),
    "poisson_loss_oue": (
        lambda: _small(
            scenario_text(
                size=6000,
                arrivals='{ kind = "poisson", duration = 3.0 }',
                latency='{ kind = "exponential", mean = 0.4 }',
                loss=0.1,
                mechanism='kind = "oue"\neps = 1.5',
                end=4.0,
            ),
            333,
        ),
        True,
    ),
    "every_reports": (
        lambda: _small(
            scenario_text(
                size=4000, arrivals='{ kind = "poisson", duration = 2.0 }', checkpoints="{ every_reports = 700 }"
            ),
            250,
        ),
        False,
    ),
    "keep_reports": (
        lambda: _small(scenario_text(size=3000, extra_server="keep_reports = true\nmax_reports = 2500"), 400),
        False,
    ),
    "waves_in_flight": (
        lambda: _small(
            scenario_text(
                size=3000,
                arrivals='{ kind = "waves", times = [0.0, 1.5], fractions = [0.6, 0.4] }',
                latency='{ kind = "exponential", mean = 1.0 }',
                end=2.0,
            ),
            256,
        ),
        True,
    ),
    "compared": (lambda: _small(test_compared_mechanisms._text(), 1000), False),
    "tiers": (lambda: _small(test_tiers_task._text(size=5000), 300), False),
    "questions_one_random": (
        lambda: _small(test_questions._anes_text(size="size = 3000", strategy="one_random"), 256),
        False,
    ),
    "crosstab": (lambda: _small(test_crosstab_task._text(size="size = 3000"), 256), False),
}


def _csv(frame) -> str:
    return frame.to_csv(index=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_shards_merge_to_the_unsharded_rows_byte_for_byte(name):
    make, counts = CASES[name]
    sc = make()
    rep = Replication(sc, 1, SEED)
    assert rep.counts_suffice() is counts
    assert len(rep.blocks()) >= 6, "cohorts of several batches"
    whole = _csv(Replication(sc, 1, SEED).run_live())  # the SimPy model, every report held to its tick
    assert _csv(run_replication(sc, 1, SEED)) == whole
    for shards in (1, 2, 5):
        plan = plan_shards(sc, 1, SEED, shards)
        assert len(plan) == shards and plan[0][0] == 0 and plan[-1][1] == len(rep.blocks())
        assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))  # contiguous, in block order
        pieces = [run_shard(sc, 1, SEED, lo, hi) for lo, hi in plan]
        assert all(p.counts is counts for p in pieces)
        assert _csv(merge_shards(sc, 1, SEED, pieces)) == whole, (name, shards)


def test_a_cohort_of_one_batch_draws_as_before_and_later_batches_from_their_own_streams():
    # batch 0 of a cohort uses the cohort's stream, so a population that fits in one batch
    # gives the rows it always gave; a smaller batch changes the draws (new streams) but not
    # their law, and not the book-keeping of the clients
    sc = parse_scenario(scenario_text(size=3000), "shards.toml")
    one = run_replication(sc, 0, SEED)
    cut = run_replication(sc.with_overrides(batch_size=100), 0, SEED)
    engine = [f[f["task"] == "engine"].set_index("quantity")["estimate"] for f in (one, cut)]
    assert engine[0]["clients"] == engine[1]["clients"] == 3000
    assert _csv(one) != _csv(cut)


@pytest.mark.parametrize(
    ("sizes", "shards", "expected"),
    [
        ([10, 10, 10, 10], 2, [(0, 2), (2, 4)]),
        ([10, 10, 10, 10], 3, [(0, 2), (2, 3), (3, 4)]),
        ([100, 1, 1, 1], 3, [(0, 1), (1, 4)]),  # never an empty shard
        ([5], 4, [(0, 1)]),
        ([3, 3, 3], 9, [(0, 1), (1, 2), (2, 3)]),
    ],
)
def test_shard_bounds_cut_contiguous_runs_of_about_equal_clients(sizes, shards, expected):
    assert shard_bounds(np.array(sizes), shards) == expected


def test_sharded_runs_write_the_same_files(tmp_path):
    text = scenario_text(
        size=4000,
        arrivals='{ kind = "poisson", duration = 2.0 }',
        replications=3,
        latency='{ kind = "exponential", mean = 0.3 }',
        loss=0.05,
    )
    sc = parse_scenario(text, "shards.toml").with_overrides(batch_size=300)
    one = run_scenario(sc, out=tmp_path / "one", progress=False)
    # sharded on a pool of two, interrupted after one replication, resumed with other shards
    with pytest.raises(RunInterrupted):
        run_scenario(sc, out=tmp_path / "four", progress=False, shards=4, workers=2, interrupt_after=1)
    four = resume_run(tmp_path / "four", progress=False, shards=3)
    for name in ("results.csv", "summary.md"):
        assert (one.run_dir / name).read_bytes() == (four.run_dir / name).read_bytes(), name


def test_aggregate_mode_and_other_kinds_refuse_shards_in_one_line(tmp_path):
    agg = parse_scenario(scenario_text(size=1000, mode="aggregate"), "agg.toml")
    with pytest.raises(LdpSimError, match=r"^--shards: got 3, expected 1 for an aggregate-mode scenario") as err:
        run_scenario(agg, out=tmp_path / "a", progress=False, shards=3)
    assert "\n" not in str(err.value) and not (tmp_path / "a").exists()
    with pytest.raises(LdpSimError, match=r"^--shards: got 0, expected an integer from 1 to 1,000,000$"):
        run_scenario(agg, out=tmp_path / "b", progress=False, shards=0)
    with pytest.raises(LdpSimError, match=r"^--shards: got 3, expected 1 for a multiparty run"):
        from tests.sim.helpers import MULTIPARTY

        run_scenario(parse_scenario(MULTIPARTY, "mp.toml"), out=tmp_path / "c", progress=False, shards=3)
    assert not (tmp_path / "c").exists()


def test_the_command_takes_shards_and_refuses_bad_ones_before_any_work(tmp_path):
    from tests.cli_helpers import run_cli

    path = tmp_path / "s.toml"
    path.write_text(scenario_text(size=2000, replications=2))
    r = run_cli("run", str(path), "--shards", "3", "--out", str(tmp_path / "a"), "--no-progress")
    assert r.returncode == 0, r.stderr
    r = run_cli("run", str(path), "--out", str(tmp_path / "b"), "--no-progress")
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()
    for args, message in [
        (["--shards", "0"], "--shards: got 0, expected an integer from 1 to 1,000,000"),
        (["--shards", "x"], "--shards"),
        (["--shards", "2", "--scheduler", "local:2"], "--shards: got 2, expected 1 for an aggregate-mode"),
    ]:
        text = scenario_text(size=2000, mode="aggregate") if "--scheduler" in args else path.read_text()
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        r = run_cli("run", str(bad), *args, "--out", str(tmp_path / "c"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
        assert not (tmp_path / "c").exists()
