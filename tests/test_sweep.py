"""``ldpsim sweep``: a scenario run at every point of a grid, one tidy table, a summary, a figure.

Tiny aggregate-mode surveys with 2-3 replications keep the file fast. The tests check that
the table holds exactly each point's results rows behind the point's values, that ``--grid``
and a ``[sweep]`` table give the same table, common random numbers across points, every bad
grid specification as one line with exit code 2 before any work, resuming after an
interruption (the same sweep.csv bytes), and the output folder checks."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ldpsim import sweep as sw
from ldpsim._text import WIDTH
from tests.cli_helpers import run_cli

BASE = """
name = "tiny"
[population]
labels = ["a", "b", "c"]
distribution = [0.5, 0.3, 0.2]
size = 1000
[mechanism]
kind = "randomized_response"
eps = 1.0
[arrivals]
kind = "all_at_once"
[network]
loss = 0.1
[analyst]
checkpoints = { every = 1.0 }
[simulation]
mode = "aggregate"
replications = 2
seed = 5
"""

GRID = ["mechanism.eps=[0.5, 2]", "population.size=[1e3, 4e3]"]


@pytest.fixture
def base(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(BASE)
    return path


def sweep(*argv, reports=False):
    """``ldpsim sweep ARGV`` (without each point's own report, a second of figures a point,
    unless ``reports``), which must succeed."""
    extra = () if reports or "--no-point-reports" in argv else ("--no-point-reports",)
    r = run_cli("sweep", *argv, *extra, "--no-progress")
    assert r.returncode == 0, r.stderr
    return r


def one_error(r, *words):
    """Exit code 2, one stderr line naming every word, nothing on stdout."""
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_the_table_holds_each_points_results_behind_its_values(base, tmp_path):
    out = tmp_path / "out"
    r = sweep(base, "--grid", *GRID, "--out", out)
    assert all(len(line) <= WIDTH for line in r.stdout.splitlines())
    assert f"table: {out / 'sweep.csv'}" in r.stdout and f"figure: {out / 'error.png'}" in r.stdout
    table = pd.read_csv(out / "sweep.csv", dtype=str, keep_default_na=False)
    assert list(table.columns[:2]) == ["mechanism.eps", "population.size"]
    points = sorted((out / "points").iterdir())
    assert [p.name for p in points] == [
        "p000-eps0.5-size1000",
        "p001-eps0.5-size4000",
        "p002-eps2-size1000",
        "p003-eps2-size4000",
    ]
    expected = [("0.5", "1000"), ("0.5", "4000"), ("2", "1000"), ("2", "4000")]  # the last key fastest
    seen = []
    for point, (eps, size) in zip(points, expected):
        rows = table[(table["mechanism.eps"] == eps) & (table["population.size"] == size)]
        own = pd.read_csv(point / "results.csv", dtype=str, keep_default_na=False)
        assert len(own) and rows.drop(columns=["mechanism.eps", "population.size"]).reset_index(drop=True).equals(own)
        seen.append(len(rows))
    assert sum(seen) == len(table)  # exactly one row set per point, nothing else
    assert (out / "error.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 4 and (summary["replications"] == 2).all()
    assert (summary["theory_rmse"] > 0).all() and summary["rmse"].notna().all()
    record = json.loads((out / "sweep.json").read_text())
    assert (
        record["seed"] == 5 and record["replications"] == 2 and record["grid"][1] == ["population.size", [1000, 4000]]
    )
    assert record["finished"]


def test_the_theory_column_is_the_exact_standard_error(base, tmp_path):
    from ldpsim.analyst import frequency_standard_error
    from ldpsim.mechanisms import randomized_response

    res = sw.run_sweep(
        base, {"mechanism.eps": [2.0]}, replications=1, out=tmp_path / "o", progress=False, point_reports=False
    )
    row = res.summary.iloc[0]
    n = int(row["n_received"])
    se = frequency_standard_error(randomized_response(k=3, eps=2.0), [0.5, 0.3, 0.2], n)
    assert row["theory_rmse"] == pytest.approx(float((se**2).mean() ** 0.5), rel=1e-12)
    t = res.table
    f = t[(t["quantity"] == "frequency") & (t["reason"] == "end")]
    assert row["rmse"] == pytest.approx(float((((f["estimate"] - f["truth"]) ** 2).mean()) ** 0.5), rel=1e-12)


def test_a_sweep_table_in_the_file_gives_the_same_table_as_grid_options(base, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    sweep(base, "--grid", *GRID, "--out", a)
    with_table = tmp_path / "with_table.toml"
    with_table.write_text(BASE + '\n[sweep]\n"mechanism.eps" = [0.5, 2]\npopulation.size = [1e3, 4e3]\n')
    sweep(with_table, "--out", b)
    assert (a / "sweep.csv").read_bytes() == (b / "sweep.csv").read_bytes()
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()
    # --grid replaces a key of the table, in its place
    c = tmp_path / "c"
    sweep(with_table, "--grid", "mechanism.eps=[1, 2]", "--out", c)
    t = pd.read_csv(c / "sweep.csv")
    assert list(t.columns[:2]) == ["mechanism.eps", "population.size"]
    assert sorted(t["mechanism.eps"].unique()) == [1, 2]


def test_common_random_numbers_across_points(base, tmp_path):
    # the interval's confidence uses no random numbers: the engine's counts and the
    # estimates are the same at both points, replication by replication
    tasks = 'analyst.tasks=[[{kind="frequency", confidence=0.9}], [{kind="frequency", confidence=0.5}]]'
    res = sw.run_sweep(base, [tasks], replications=3, out=tmp_path / "o", progress=False, point_reports=False)
    t = res.table
    per = [
        g.drop(columns=["analyst.tasks", "ci_low", "ci_high"]).reset_index(drop=True)
        for _, g in t.groupby("analyst.tasks", sort=False)
    ]
    assert len(per) == 2 and per[0].equals(per[1])
    assert not t[t["quantity"] == "frequency"].groupby("analyst.tasks")["ci_low"].sum().duplicated().any()
    # individual mode: a report is lost when its uniform draw falls below network.loss, the same
    # draws at every point, so the reports lost at loss 0.1 are among those lost at 0.3
    ind = tmp_path / "individual.toml"
    ind.write_text(BASE.replace('"aggregate"', '"individual"'))
    res = sw.run_sweep(
        ind, {"network.loss": [0.1, 0.3]}, replications=3, out=tmp_path / "i", progress=False, point_reports=False
    )
    lost = res.table[res.table["quantity"] == "lost"].pivot(
        index="replication", columns="network.loss", values="estimate"
    )
    assert (lost[0.1] < lost[0.3]).all()
    clients = res.table[res.table["quantity"] == "clients"].pivot(
        index="replication", columns="network.loss", values="estimate"
    )
    assert (clients[0.1] == clients[0.3]).all()


BAD = [
    (["mechanism.eps"], ["--grid", "'mechanism.eps'", "no '='"]),
    (["mechanism.eps=1"], ["--grid", "not a list"]),
    (["mechanism.eps=[1, 2"], ["--grid", "not a list"]),
    (["mechanism.eps=[]"], ["--grid", "empty"]),
    (["mechanism.epz=[1]"], ["--grid", "mechanism.epz", "did you mean 'mechanism.eps'"]),
    (["populaton.size=[1]"], ["--grid", "populaton.size", "did you mean 'population.size'"]),
    (['population.size=["a"]'], ["--grid", "population.size", "grid point 0 of 1", "valid integer"]),
    (["population.size=[1000, 1.5]"], ["--grid", "population.size=1.5", "grid point 1 of 2"]),
    (["mechanism.eps=[1]", "mechanism.eps=[2]"], ["--grid", "mechanism.eps", "twice"]),
    (["mechanism.eps=[1, 1]"], ["--grid", "distinct"]),
    (["mechanism.eps.x=[1]"], ["--grid", "mechanism.eps is a value"]),
    (["mechanism=[1]", "mechanism.eps=[1]"], ["--grid", "contain one another"]),
    (["simulation.seed=[1, 2]"], ["--grid", "--seed"]),
    (["mechanism.eps=[0.5, -1]"], ["--grid", "grid point 1 of 2", "mechanism.eps"]),
]


@pytest.mark.parametrize(("grid", "words"), BAD, ids=[" ".join(g) for g, _ in BAD])
def test_a_bad_grid_is_one_line_before_any_work(base, tmp_path, grid, words):
    out = tmp_path / "out"
    r = run_cli("sweep", base, "--grid", *grid, "--out", out)
    one_error(r, *words)
    assert not out.exists()


def test_other_bad_specifications(base, tmp_path):
    one_error(run_cli("sweep", base), "--grid", "[sweep]")
    bad_table = tmp_path / "bad.toml"
    bad_table.write_text(BASE + '\n[sweep]\n"mechanism.eps" = 2\n')
    one_error(run_cli("sweep", bad_table), "sweep", "not a list")
    one_error(run_cli("sweep", base, "--grid", "mechanism.eps=[1]", "--replications", "0"), "--replications")
    one_error(
        run_cli("sweep", base, "--grid", "mechanism.eps=[1]", "--workers", "2", "--scheduler", "local:2"), "--workers"
    )
    one_error(run_cli("sweep", "--resume", tmp_path, "--seed", "3"), "--resume")
    one_error(run_cli("sweep", "--resume", tmp_path), "--resume", "sweep folder")
    assert sorted(tmp_path.iterdir()) == sorted([base, bad_table])


def test_an_existing_non_empty_out_is_refused_before_work(base, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    one_error(run_cli("sweep", base, "--grid", *GRID, "--out", out), "--out", str(out))
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_resume_after_an_interruption_gives_the_same_files(base, tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    sw.run_sweep(base, GRID, replications=3, out=whole, progress=False, point_reports=False)
    with pytest.raises(sw.SweepInterrupted, match=f"ldpsim sweep --resume {cut}"):
        sw.run_sweep(
            base,
            GRID,
            replications=3,
            out=cut,
            progress=False,
            point_reports=False,
            interrupt_after=1,
            interrupt_within=1,
        )
    assert not (cut / "sweep.csv").exists()
    points = sorted(p.name for p in (cut / "points").iterdir())
    assert len(points) == 2  # one finished, one with one replication of three
    assert not (cut / "points" / points[1] / "results.csv").exists()
    r = run_cli(
        "sweep", "--resume", cut, "--no-progress", "--no-point-reports", "--workers", "2"
    )  # a process pool for the rest
    assert r.returncode == 0, r.stderr
    for name in ("sweep.csv", "summary.csv", "error.png"):
        assert (whole / name).read_bytes() == (cut / name).read_bytes(), name
    assert len(json.loads((cut / "sweep.json").read_text())["resumes"]) == 1
    back = sw.read_sweep(cut)
    assert len(back.summary) == 4 and len(back.run_dirs) == 4 and back.table.shape == sw.read_sweep(whole).table.shape


def test_ctrl_c_is_one_line_with_the_resume_command(base, tmp_path, monkeypatch):
    real = sw.run_scenario
    calls = []

    def stop_on_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sw, "run_scenario", stop_on_second)
    out = tmp_path / "out"
    r = run_cli("sweep", base, "--grid", *GRID, "--out", out)
    assert r.returncode == 130
    assert r.stderr.strip().splitlines() == [
        f"ldpsim: interrupted after 1 of 4 grid points; resume with: ldpsim sweep --resume {out}"
    ]
    monkeypatch.setattr(sw, "run_scenario", real)
    assert run_cli("sweep", "--resume", out, "--no-progress").returncode == 0
    assert len(list((out / "points").iterdir())) == 4


def test_toml_of_a_point_reads_back():
    raw = {
        "name": "x",
        "a": {"b": [1, 2.5, "s"], "c": {"kind": "lognormal", "median": 1e-3}, "my key": True},
        "tasks": [{"kind": "frequency"}],
        "inf": float("inf"),
    }
    import tomllib

    assert tomllib.loads(sw.to_toml(raw)) == raw


def test_the_default_folder_is_under_reports(base, tmp_path):
    r = run_cli("sweep", base, "--grid", "mechanism.eps=[1]", "--replications", "1", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (folder,) = (tmp_path / "reports" / "tiny-sweep").iterdir()
    assert folder.name.endswith("-seed5") and (folder / "sweep.csv").is_file()
    assert f"table: {folder.relative_to(tmp_path) / 'sweep.csv'}" in r.stdout


def test_a_multiparty_sweep_writes_the_table_without_summary_or_figure(tmp_path):
    from tests.sim.helpers import MULTIPARTY

    path = tmp_path / "mp.toml"
    path.write_text(MULTIPARTY)
    res = sw.run_sweep(
        path, ["rounds.count=[1000, 2000]"], replications=1, out=tmp_path / "o", progress=False, point_reports=False
    )
    assert res.figure_path is None and res.summary.empty
    assert sorted(res.table["rounds.count"].unique()) == [1000, 2000]
    for run_dir, count in zip(res.run_dirs, (1000, 2000)):
        own = pd.read_csv(run_dir / "results.csv")
        assert len(res.table[res.table["rounds.count"] == count]) == len(own)


def test_shards_give_the_same_sweep_and_are_refused_in_one_line_where_they_cannot_apply(base, tmp_path):
    individual = tmp_path / "individual.toml"
    individual.write_text(BASE.replace('mode = "aggregate"', 'mode = "individual"\nbatch_size = 300'))
    sweep(individual, "--grid", "mechanism.eps=[0.5, 2]", "--out", tmp_path / "one")
    sweep(individual, "--grid", "mechanism.eps=[0.5, 2]", "--shards", "3", "--out", tmp_path / "three")
    assert (tmp_path / "one" / "sweep.csv").read_bytes() == (tmp_path / "three" / "sweep.csv").read_bytes()
    r = run_cli("sweep", str(base), "--grid", "mechanism.eps=[0.5, 2]", "--shards", "3", "--out", str(tmp_path / "agg"))
    one_error(r, "--shards: got 3, expected 1 for an aggregate-mode scenario")
    assert not (tmp_path / "agg").exists()


def test_without_point_reports_the_sweep_is_the_same_and_a_point_report_can_be_made_later(base, tmp_path):
    sweep(base, "--grid", "mechanism.eps=[0.5, 2]", "--out", tmp_path / "with", reports=True)
    sweep(base, "--grid", "mechanism.eps=[0.5, 2]", "--no-point-reports", "--out", tmp_path / "without")
    for name in ("sweep.csv", "summary.csv", "error.png"):
        assert (tmp_path / "with" / name).read_bytes() == (tmp_path / "without" / name).read_bytes(), name
    point = sorted((tmp_path / "without" / "points").iterdir())[0]
    assert (point / "results.csv").is_file() and not (point / "summary.md").exists()
    assert run_cli("report", point).returncode == 0
    assert (point / "summary.md").is_file()


def test_an_integer_part_names_an_entry_of_an_array_of_tables():
    from ldpsim.sweep import _lookup, _set, to_toml

    raw = {"attackers": [{"share": 0.1, "targets": 2}, {"share": 0.2, "targets": 1}], "analyst": {"tasks": [{"k": 1}]}}
    out = _set(raw, "attackers.1.share", 0.05)
    assert out["attackers"][1]["share"] == 0.05 and raw["attackers"][1]["share"] == 0.2
    assert _lookup(raw, "attackers.0.share") == (True, None)
    assert _lookup(raw, "attackers.2.share") == (False, None)
    assert _lookup(raw, "attackers.x")[0] is False and _lookup(raw, "attackers.x")[1] == "attackers"
    assert _set(raw, "analyst.tasks.0.k", 5)["analyst"]["tasks"][0]["k"] == 5
    import tomllib

    assert tomllib.loads(to_toml(out)) == out


ATTACKED = """
name = "poison_sweep"
[population]
answers = { count = 16, prefix = "app " }
law = { kind = "zipf", s = 1.1 }
size = 4000
[mechanism]
kind = "oue"
eps = 1.0
[arrivals]
kind = "poisson"
duration = 2.0
[analyst]
checkpoints = { every = 1.0 }
[simulation]
mode = "individual"
seed = 5
[[attackers]]
name = "promoter"
share = 0.05
targets = 2
strategy = "random_perturbed"
"""


def test_a_sweep_with_attackers_writes_the_gain_and_detection_surfaces(tmp_path):
    from ldpsim.report import sweep as sweep_report

    path = tmp_path / "attacked.toml"
    path.write_text(ATTACKED)
    grid = ["mechanism.eps=[1, 2]", "attackers.0.share=[0.01, 0.1]"]
    res = sw.run_sweep(path, grid, replications=2, out=tmp_path / "o", progress=False, point_reports=False)
    summary = pd.read_csv(tmp_path / "o" / "attack.csv")
    assert (tmp_path / "o" / "attack.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keys = ["mechanism.eps", "attackers.0.share"]
    assert len(summary.drop_duplicates(subset=keys)) == 4
    # the gain column is the mean over replications of the end rows of the tidy table
    table = res.table
    end = table[(table["task"] == "attack") & (table["quantity"] == "gain") & (table["reason"] == "end")]
    want = end.groupby(keys)["estimate"].mean()
    got = summary.drop_duplicates(subset=keys).set_index(keys)["gain"]
    assert ((got - want.loc[got.index]).abs() < 1e-9).all()
    # random bit vectors at a tenth of the reports: the support size finds them in every replication
    loud = summary[(summary["attackers.0.share"] == 0.1) & (summary["detector"] == "support size")]
    assert (loud["detected"] == 1.0).all()
    assert sweep_report.attack_summary(table.iloc[0:0], keys).empty
