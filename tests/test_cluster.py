"""Runs on a Dask cluster (``--scheduler``, ldpsim/cluster.py): a local cluster of 2 worker
processes gives the same bytes as a sequential run, and bad specifications or a missing
extra are one line naming ``--scheduler``."""

from __future__ import annotations

import sys

import pytest

from ldpsim import cluster
from ldpsim.errors import LdpSimError
from tests.cli_helpers import run_cli
from tests.sim.helpers import scenario_text

pytest.importorskip("distributed")  # the `distributed` extra; part of [dev], so CI runs these


@pytest.fixture(scope="module")
def local2():
    with cluster.connect("local:2") as where:
        yield where


def _files(run_dir):
    return {name: (run_dir / name).read_bytes() for name in ("results.csv", "summary.md")}


MULTIPARTY = """
kind = "multiparty"
name = "mp"
protocols = ["universal", "binary"]

[parties]
k = 4
eps = [0.5, 1, 2, 3]
delta = [0, 0.05, 0.1, 0]

[task]
kind = "majority"

[rounds]
count = 3000
batch = 1000
interval = 0.01

[network]
latency = { kind = "exponential", mean = 0.05 }
loss = 0.05
deadline = 0.2

[simulation]
seed = 5
replications = 5
"""


@pytest.mark.parametrize("kind", ["survey", pytest.param("multiparty", marks=pytest.mark.slow)])
def test_a_local_cluster_of_two_workers_gives_the_bytes_of_a_sequential_run(tmp_path, local2, kind):
    from ldpsim.sim import run_scenario

    path = tmp_path / "s.toml"
    path.write_text(scenario_text(size=3000, replications=5) if kind == "survey" else MULTIPARTY)
    run_scenario(path, out=tmp_path / "seq", progress=False)
    run_scenario(path, out=tmp_path / "dask", progress=False, executor=local2.executor, workers=local2.workers)
    assert local2.workers == 2
    assert _files(tmp_path / "seq") == _files(tmp_path / "dask")


def test_a_population_sharded_over_the_cluster_gives_the_bytes_of_a_sequential_run(tmp_path, local2):
    """One individual-mode population per replication, cut into 2, 3 and 7 shards (tasks
    spread over the two workers) and merged: the files of the unsharded sequential run."""
    from ldpsim.sim import parse_scenario, run_scenario

    text = scenario_text(
        size=6000,
        replications=2,
        arrivals='{ kind = "poisson", duration = 2.0 }',
        latency='{ kind = "exponential", mean = 0.5 }',
        loss=0.1,
    )
    sc = parse_scenario(text, "s.toml").with_overrides(batch_size=500)
    run_scenario(sc, out=tmp_path / "seq", progress=False)
    for shards in (2, 3, 7):
        out = tmp_path / f"dask{shards}"
        run_scenario(sc, out=out, progress=False, executor=local2.executor, workers=local2.workers, shards=shards)
        assert _files(tmp_path / "seq") == _files(out), shards


def test_resuming_on_the_cluster_finishes_with_the_same_bytes(tmp_path, local2):
    from ldpsim.runs import RunInterrupted
    from ldpsim.sim import resume_run, run_scenario

    path = tmp_path / "s.toml"
    path.write_text(scenario_text(size=3000, replications=5))
    run_scenario(path, out=tmp_path / "seq", progress=False)
    with pytest.raises(RunInterrupted):
        run_scenario(path, out=tmp_path / "cut", progress=False, interrupt_after=2)
    resume_run(tmp_path / "cut", progress=False, executor=local2.executor, workers=local2.workers)
    assert _files(tmp_path / "seq") == _files(tmp_path / "cut")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "expected local:N"),
        ("local", "expected local:N with N a number of workers"),
        ("local:0", "expected local:N with N from 1 to 256"),
        ("local:two", "expected local:N with N a number of workers"),
        ("not an address", "expected local:N"),
    ],
)
def test_bad_specifications_are_one_line_naming_the_option(spec, message):
    with pytest.raises(LdpSimError, match=r"^--scheduler: got ") as info:
        cluster.parse(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_addresses_are_accepted_as_written():
    assert cluster.parse("tcp://10.0.0.5:8786") == ("address", "tcp://10.0.0.5:8786")
    assert cluster.parse("scheduler.example.org:8786") == ("address", "scheduler.example.org:8786")
    assert cluster.parse(" local:3 ") == ("local", 3)


def test_without_the_extra_the_option_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(
        LdpSimError,
        match=(
            r"^--scheduler: Dask distributed is not installed, expected the optional extra: pip install "
            r'"ldpsim\[distributed\]"$'
        ),
    ):
        cluster.check_installed()


def test_the_command_refuses_workers_with_a_scheduler_and_a_bad_spec_before_any_work(tmp_path):
    r = run_cli("run", "survey", "--scheduler", "local:2", "--workers", "2", "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--workers: got 2 with --scheduler" in r.stderr
    r = run_cli("run", "survey", "--scheduler", "local:x", "--out", str(tmp_path / "b"))
    assert r.returncode == 2 and "--scheduler: got 'local:x'" in r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.slow  # 6-8 s: a cluster of its own (the command's refusals are checked above, the cluster by the API)
def test_the_command_runs_on_a_local_cluster_and_prints_its_dashboard(tmp_path):
    r = run_cli("run", "survey", "--replications", "2", "--scheduler", "local:2", "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert "dask: 2 worker(s) at local:2; dashboard http" in r.stdout
    assert (tmp_path / "run" / "results.csv").is_file()


@pytest.mark.slow  # 6-9 s each
@pytest.mark.parametrize("shards", [1, 8])
def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path, shards):
    """SIGKILL one of two workers while replications (or one replication's shards) run:
    Dask runs its tasks again on the other worker (its nanny starts a new one), and the
    files equal an undisturbed, unsharded run's."""
    import os
    import signal
    import threading
    import time

    from ldpsim.sim import parse_scenario, run_scenario

    text = scenario_text(size=400_000, replications=6 if shards == 1 else 1)
    path = parse_scenario(text, "s.toml").with_overrides(batch_size=10_000)
    run_scenario(path, out=tmp_path / "seq", progress=False)
    with cluster.connect("local:2") as where:
        pids = where.client.run(os.getpid)  # worker address -> pid
        failures: list[BaseException] = []

        def go() -> None:
            try:
                run_scenario(
                    path,
                    out=tmp_path / "dask",
                    progress=False,
                    executor=where.executor,
                    workers=where.workers,
                    shards=shards,
                )
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        t = threading.Thread(target=go)
        t.start()
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline and t.is_alive():
            busy = [addr for addr, keys in where.client.processing().items() if keys]
            if busy:
                victim = busy[0]
            else:
                time.sleep(0.02)
        assert victim is not None, "no task was ever running on a worker"
        os.kill(pids[victim], signal.SIGKILL)
        t.join(120)
        assert not t.is_alive() and not failures, failures
        assert victim not in where.client.scheduler_info()["workers"]  # it did die (its nanny started another)
    assert _files(tmp_path / "seq") == _files(tmp_path / "dask")


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("kov-fig3", {"eps_grid": [0.1, 1.0, 10.0]}),
        pytest.param("stein-exponent", {"points": 2, "samples": 200}, marks=pytest.mark.slow),
    ],
)
def test_a_reproduction_on_the_cluster_writes_the_same_files(tmp_path, local2, name, kwargs):
    """``reproduce --scheduler``: every pool_map of the reproduction goes to the cluster."""
    from ldpsim._pool import executor_scope
    from ldpsim.reproduce import get

    class Counting:  # the cluster's executor, counting what it is given
        submitted = 0

        def submit(self, fn, *args):
            Counting.submitted += 1
            return local2.executor.submit(fn, *args)

    func = get(name).func
    csvs = {}
    for label, scope in (("seq", None), ("dask", Counting())):
        out = tmp_path / label
        out.mkdir()
        with executor_scope(scope):
            func(5, 3, out, workers=1, **kwargs)
        csvs[label] = {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}
    assert Counting.submitted >= 2  # the work did go to the cluster
    assert csvs["seq"] and csvs["seq"] == csvs["dask"]
