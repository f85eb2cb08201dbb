"""``ldpsim privatize`` and ``ldpsim analyse`` (issue 38, docs/analyse.md): real answers
privatised into a CSV of reports, and such a file read back into the oracle's statistic,
its estimates and tests.

- a round trip on the shipped ANES extract: the statistic read from the file is the one
  ``mechanism.statistic`` gives on reports privatised here with the same seed (the
  generator ``default_rng(SeedSequence(seed))``, one ``privatize`` call for a file of at
  most 65,536 answers), and the estimates are ``mechanism.invert(statistic / n)``;
- a numeric mechanism's mean is ``mean_estimate`` of the same reports;
- groups (estimates per group, homogeneity) and weights (the Hajek estimate and its
  variance, as ``survey_design.hajek`` gives them with one PSU per report);
- determinism: the same seed gives the same bytes;
- every malformed file is one line naming the row and column, exit 2, and nothing written;
- the raw-bytes reader of bit strings and the chunked reader agree.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ldpsim import deploy
from ldpsim.analyst.betting import sequential_fit_of_reports
from ldpsim.analyst.hypotheses import sequential_homogeneity
from ldpsim.analyst.means import mean_estimate
from ldpsim.analyst.survey_design import hajek
from ldpsim.mechanisms import catalog
from tests.cli_helpers import run_cli

DATA = Path(__file__).resolve().parents[1] / "ldpsim" / "scenarios" / "data"
ANES = DATA / "anes96.csv"
NHANES = DATA / "nhanes2.csv"


def one_line(r, code: int = 2) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def answers(tmp_path: Path, source: Path = ANES) -> Path:
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    return path


def privatize(tmp_path: Path, spec: str, column: str, seed: int = 11, *extra: str) -> Path:
    src = answers(tmp_path)
    out = tmp_path / "reports.csv"
    r = run_cli("privatize", src, "--mechanism", spec, "--column", column, "--seed", seed, "--out", out, *extra)
    assert r.returncode == 0, r.stderr
    return out


def analyse(tmp_path: Path, reports: Path, spec: str, *extra: str, out: str = "a") -> Path:
    r = run_cli("analyse", reports, "--mechanism", spec, "--seed", "3", "--out", tmp_path / out, *extra)
    assert r.returncode == 0, r.stderr
    return tmp_path / out


def first_block(seed: int) -> np.random.Generator:
    """The generator of privatize's first 65,536 answers, as docs/analyse.md says: the stream a
    survey run's first cohort draws from, SeedSequence(seed) -> replication 0 (spawn key (0,))
    -> its second child (the cohorts') -> cohort 0."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)).spawn(5)[1].spawn(1)[0])


def expected_statistic(spec: str, column: str, seed: int, source: Path = ANES) -> tuple[catalog.Built, np.ndarray]:
    """The reports privatised here, as docs/analyse.md says privatize makes them."""
    values = pd.read_csv(source, dtype=str, keep_default_na=False)[column]
    labels = sorted(values.unique())
    built = deploy.build(spec, k=len(labels))
    codes = pd.Index(labels).get_indexer(values)
    assert len(values) <= deploy.CHUNK  # one privatize call
    reports = built.mechanism.privatize(codes, first_block(seed))
    return built, built.mechanism.statistic(reports)


ROUND_TRIPS = [
    "randomized_response:eps=1",
    "hadamard_response:eps=1",
    "oue:eps=1",
    "sue:eps=2",
    "rappor:m=16,h=2",
    "olh:eps=2",
    "blh:eps=2",
    "subset_selection:eps=1",
]


@pytest.mark.parametrize("spec", ROUND_TRIPS)
def test_a_round_trip_on_anes_gives_the_statistic_and_the_estimates_of_the_same_reports(spec, tmp_path):
    column = "party_id"
    reports = privatize(tmp_path, spec, column, 11)
    built, stat = expected_statistic(spec, column, 11)
    got = deploy.collect(reports, deploy.build(spec, k=built.mechanism.k), column=None, show_progress=False)
    np.testing.assert_array_equal(got.all.statistic, stat)
    n = got.all.n
    assert n == len(pd.read_csv(ANES))
    folder = analyse(tmp_path, reports, built.spec)
    est = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    everyone = est[est["scope"] == "all"]
    np.testing.assert_allclose(everyone["estimate"], built.mechanism.invert(stat / n), rtol=1e-12, atol=1e-15)
    assert everyone["projected"].sum() == pytest.approx(1.0) and (everyone["projected"] >= 0).all()
    assert (everyone["ci_low"] < everyone["estimate"]).all() and (everyone["estimate"] < everyone["ci_high"]).all()
    tests = pd.read_csv(folder / "tests.csv", keep_default_na=False)
    finite = built.mechanism.output_size is not None  # output counts: the mixture's e-value beside it
    assert tests["test"].tolist() == ["uniformity"] + ["sequential uniformity"] * finite
    assert 0 < float(tests["p_value"].iloc[0]) <= 1
    assert {p.name for p in folder.iterdir()} == {
        "estimates.csv",
        "tests.csv",
        "analysis.json",
        "summary.md",
        "report.html",
    }
    assert "uniformity" in (folder / "report.html").read_text(encoding="utf-8")


def test_labels_name_the_categories_and_k_comes_from_them(tmp_path):
    reports = privatize(tmp_path, "oue:eps=1", "vote", 5)
    labels = sorted(pd.read_csv(ANES, dtype=str)["vote"].unique())
    folder = analyse(tmp_path, reports, "oue:eps=1", "--labels", ",".join(labels))
    est = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    assert est["category"].tolist() == labels


def test_a_numeric_round_trip_gives_the_mean_of_the_reports(tmp_path):
    spec = "piecewise:eps=1,lo=17,hi=93"
    reports = privatize(tmp_path, spec, "age", 4)
    ages = pd.read_csv(ANES)["age"].to_numpy(dtype=float)
    built = deploy.build(spec)
    y = built.mechanism.privatize(ages, first_block(4))
    np.testing.assert_array_equal(
        np.array([float(t) for t in pd.read_csv(reports, dtype=str)["report"]]), y
    )  # the floats round-trip exactly
    folder = analyse(tmp_path, reports, spec)
    row = pd.read_csv(folder / "estimates.csv").iloc[0]
    want = mean_estimate(y, built.mechanism, confidence=0.95)
    assert row["estimate"] == pytest.approx(want.estimate, rel=1e-12)
    assert row["std_error"] == pytest.approx(want.std_error, rel=1e-9)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((want.ci_low, want.ci_high), rel=1e-9)


def test_groups_give_each_group_its_estimates_and_a_homogeneity_test(tmp_path):
    spec = "randomized_response:eps=2"
    src = answers(tmp_path)
    out = tmp_path / "r.csv"
    r = run_cli(
        "privatize", src, "--mechanism", spec, "--column", "party_id", "--seed", 9, "--out", out, "--keep", "vote"
    )
    assert r.returncode == 0, r.stderr
    folder = analyse(tmp_path, out, "randomized_response:k=7,eps=2", "--groups", "vote")
    est = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    mech = deploy.build("randomized_response:k=7,eps=2").mechanism
    for group, rows in frame.groupby("vote"):
        stat = mech.statistic(rows["report"].astype(int).to_numpy())
        mine = est[(est["scope"] == "group") & (est["group"] == group)]
        np.testing.assert_allclose(mine["estimate"], mech.invert(stat / len(rows)), rtol=1e-12)
        assert (mine["reports"] == len(rows)).all()
    tests = pd.read_csv(folder / "tests.csv", keep_default_na=False)
    assert tests["test"].tolist() == ["uniformity", "homogeneity", "sequential uniformity", "sequential homogeneity"]
    assert tests["method"].tolist()[1] == "conditional"
    # the anytime-valid versions from the counts: the library's mixtures on the file's statistics
    groups = [mech.statistic(rows["report"].astype(int).to_numpy()) for _, rows in frame.groupby("vote", sort=False)]
    seq = sequential_homogeneity(mech, groups)
    row = tests[tests["test"] == "sequential homogeneity"].iloc[0]
    assert row["statistic"] == pytest.approx(seq.log_e, rel=1e-12)
    assert row["p_value"] == pytest.approx(min(1.0, math.exp(-seq.log_e)), rel=1e-12)


def test_sequential_bets_on_every_report_in_file_order(tmp_path):
    """``--sequential`` with OUE: the betting test of uniformity on the reports in the
    file's order, the library's on the same reports; refused beside an analysis file."""
    out = privatize(tmp_path, "oue:eps=1", "party_id", 5)
    folder = analyse(tmp_path, out, "oue:k=7,eps=1", "--sequential")
    tests = pd.read_csv(folder / "tests.csv", keep_default_na=False)
    row = tests[tests["test"] == "sequential uniformity"].iloc[0]
    bits = pd.read_csv(out, dtype=str)["report"]
    reports = np.array([[int(c) for c in b] for b in bits])
    mech = deploy.build("oue:k=7,eps=1").mechanism
    seq = sequential_fit_of_reports(mech, reports, np.full(7, 1 / 7))
    assert row["statistic"] == pytest.approx(seq.log_e, rel=1e-9, abs=1e-9)
    assert row["method"] == "e-value (betting, file order)" and bool(row["reject"]) == seq.reject
    plain = pd.read_csv(analyse(tmp_path, out, "oue:k=7,eps=1", out="b") / "tests.csv", keep_default_na=False)
    assert "sequential uniformity" not in plain["test"].tolist()  # vector reports: only when asked


def test_weights_give_the_hajek_estimate_and_its_design_variance(tmp_path):
    src = answers(tmp_path, NHANES)
    out = tmp_path / "r.csv"
    spec = "oue:eps=1"
    argv = ("privatize", src, "--mechanism", spec, "--column", "race", "--seed", 2, "--out", out, "--keep", "weight")
    assert run_cli(*argv).returncode == 0
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    k = len(frame["report"].iloc[0])
    folder = analyse(tmp_path, out, f"oue:k={k},eps=1", "--weights", "weight")
    est = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    weighted = est[est["scope"] == "weighted"]
    mech = deploy.build(f"oue:k={k},eps=1").mechanism
    bits = np.array([[int(c) for c in s] for s in frame["report"]], dtype=np.uint8)
    p, q = 0.5, 1.0 / (math.exp(1.0) + 1.0)  # OUE's published probabilities at eps = 1
    u = (mech.unit_statistics(bits) - q) / (p - q)  # each report's unbiased term
    w = frame["weight"].astype(float).to_numpy()
    n = len(w)
    want = hajek(w[:, None] * u, w, np.zeros(n, dtype=np.int64), 1)  # each report its own PSU, one stratum
    np.testing.assert_allclose(weighted["estimate"], want.estimate, rtol=1e-9)
    np.testing.assert_allclose(weighted["std_error"] ** 2, want.variance, rtol=1e-6)
    assert "the tests ignore the weights" in (folder / "summary.md").read_text(encoding="utf-8")


def test_a_numeric_mechanism_with_two_groups_and_weights(tmp_path):
    spec = "duchi:eps=1,lo=17,hi=93"
    src = answers(tmp_path)
    out = tmp_path / "r.csv"
    argv = ("privatize", src, "--mechanism", spec, "--column", "age", "--seed", 1, "--out", out)
    assert run_cli(*argv, "--keep", "vote,education,tv_news_days").returncode == 0
    frame = pd.read_csv(out)
    frame["w"] = frame["tv_news_days"] + 1
    frame[["report", "education", "w"]].to_csv(tmp_path / "r2.csv", index=False)
    two = frame
    two[["report", "vote", "w"]].to_csv(tmp_path / "r3.csv", index=False)
    folder = analyse(tmp_path, tmp_path / "r3.csv", spec, "--groups", "vote", "--weights", "w")
    est = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    tests = pd.read_csv(folder / "tests.csv", keep_default_na=False)
    assert tests["method"].tolist() == ["normal (Welch)"]
    for group, rows in two.groupby("vote"):
        mine = est[(est["scope"] == "group") & (est["group"] == group)]
        assert float(mine["estimate"].iloc[0]) == pytest.approx(rows["report"].mean(), rel=1e-12)
    w, y = two["w"].to_numpy(float), two["report"].to_numpy()
    weighted = est[est["scope"] == "weighted"]
    assert float(weighted["estimate"].iloc[0]) == pytest.approx(float(np.sum(w * y) / np.sum(w)), rel=1e-12)
    seven = analyse(tmp_path, tmp_path / "r2.csv", spec, "--groups", "education", out="b")  # 7 groups: no Welch
    assert pd.read_csv(seven / "tests.csv", keep_default_na=False)["method"].tolist() == ["not run"]


def test_the_same_seed_gives_the_same_bytes(tmp_path):
    first = privatize(tmp_path, "oue:eps=1", "party_id", 21).read_bytes()
    again = privatize(tmp_path, "oue:eps=1", "party_id", 21, "--force").read_bytes()
    other = privatize(tmp_path, "oue:eps=1", "party_id", 22, "--force").read_bytes()
    assert first == again != other
    reports = privatize(tmp_path, "oue:eps=1", "party_id", 21, "--force")
    a = analyse(tmp_path, reports, "oue:k=7,eps=1", out="a")
    b = analyse(tmp_path, reports, "oue:k=7,eps=1", out="b")
    for name in ("estimates.csv", "tests.csv", "summary.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_the_raw_byte_reader_and_the_chunked_reader_agree(tmp_path):
    reports = privatize(tmp_path, "oue:eps=1", "party_id", 8)
    frame = pd.read_csv(reports, dtype=str)[["report"]]
    frame.to_csv(tmp_path / "bits.csv", index=False)
    built = deploy.build("oue:k=7,eps=1")
    fast = deploy.collect(tmp_path / "bits.csv", built, column=None, show_progress=False)
    slow = deploy.collect(tmp_path / "bits.csv", built, column=None, show_progress=False, fast=False)
    assert fast.fast and not slow.fast
    np.testing.assert_array_equal(fast.all.statistic, slow.all.statistic)
    (tmp_path / "nonl.csv").write_bytes((tmp_path / "bits.csv").read_bytes().rstrip(b"\n"))  # no final newline
    end = deploy.collect(tmp_path / "nonl.csv", built, column=None, show_progress=False)
    assert end.fast and end.all.n == fast.all.n
    np.testing.assert_array_equal(end.all.statistic, fast.all.statistic)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 2041, 6 * 2040 + 13])
@pytest.mark.parametrize("k", [3, 64])
def test_the_raw_byte_reader_of_bit_strings_counts_every_line_eight_at_a_time(n, k, tmp_path, monkeypatch):
    # blocks of 2,040 lines here (255 groups of eight, the most added as words before the
    # bytes could carry): line counts around a group, a block and a sum of 255 groups
    monkeypatch.setattr(deploy, "_BIT_ROWS", 2040)
    bits = (np.random.default_rng(n + k).random((n, k)) < 0.4).astype(np.uint8)
    body = b"\n".join(bytes(row + 48) for row in bits)
    path = tmp_path / "bits.csv"
    built = deploy.build(f"oue:k={k},eps=1")
    for end in (b"\n", b""):  # with and without the last newline
        path.write_bytes(b"report\n" + body + end)
        got = deploy.collect(path, built, column=None, show_progress=False)
        assert got.fast and got.all.n == n
        np.testing.assert_array_equal(got.all.statistic, bits.sum(axis=0))  # counted here by numpy, row-wise
    # any other byte anywhere goes to the chunked reader: a 2 or a space is a bad row it
    # names, a carriage return for a newline a line end it reads
    for row in sorted({0, n // 2, n - 1}):
        for at, byte in ((0, b"2"), (k - 1, b" "), (k, b"\r")):
            raw = bytearray(b"report\n" + body + b"\n")
            raw[len(b"report\n") + row * (k + 1) + at] = byte[0]
            path.write_bytes(bytes(raw))
            if byte == b"\r":
                got = deploy.collect(path, built, column=None, show_progress=False)
                assert not got.fast and got.all.n == n
                np.testing.assert_array_equal(got.all.statistic, bits.sum(axis=0))
                continue
            with pytest.raises(deploy.LdpSimError, match=f"row {row + 1}, column 'report'"):
                deploy.collect(path, built, column=None, show_progress=False)


def test_the_raw_byte_reader_of_symbols_counts_every_report_across_its_blocks(tmp_path, monkeypatch):
    # many blocks of bytes (small ones here): lines cut at the block boundaries are carried over
    monkeypatch.setattr(deploy, "_BLOCK", 4099)
    values = np.random.default_rng(38).integers(0, 64, 20_000)
    text = "\n".join(values.astype(str).tolist())
    path = tmp_path / "symbols.csv"
    path.write_bytes(b"report\n" + text.encode() + b"\n")
    assert path.stat().st_size > 10 * deploy._BLOCK
    built = deploy.build("randomized_response:k=64,eps=1")
    got = deploy.collect(path, built, column=None, show_progress=False)
    assert got.fast and got.all.n == values.size
    np.testing.assert_array_equal(got.all.statistic, np.bincount(values, minlength=64))
    path.write_bytes(b"report\n007\n" + text.encode())  # a leading zero, no final newline
    got = deploy.collect(path, built, column=None, show_progress=False)
    assert got.fast and got.all.n == values.size + 1
    np.testing.assert_array_equal(got.all.statistic, np.bincount(np.append(values, 7), minlength=64))
    # an irregular line goes to the chunked reader, which names it
    path.write_bytes(b"report\n" + text.encode() + b"\n64\n")
    with pytest.raises(deploy.LdpSimError, match=f"row {values.size + 1}, column 'report': got '64'"):
        deploy.collect(path, built, column=None, show_progress=False)
    path.write_bytes(b"report\r\n1\r\n2\r\n")
    got = deploy.collect(path, built, column=None, show_progress=False)
    assert not got.fast and got.all.n == 2


def test_the_raw_byte_reader_of_bit_strings_with_groups_gives_every_group_its_statistic(tmp_path, monkeypatch):
    monkeypatch.setattr(deploy, "_BLOCK", 4099)  # many blocks, lines cut at their boundaries
    rng = np.random.default_rng(39)
    n, k = 5_000, 64
    bits = (rng.random((n, k)) < 0.3).astype(np.uint8)
    names = np.array(["Some college", "Bachelor's degree", "8 grades or less", "caf\u00e9"])
    groups = names[rng.integers(0, 4, n)]
    lines = ["".join(map(str, row)) + "," + g for row, g in zip(bits.tolist(), groups)]
    path = tmp_path / "g.csv"
    path.write_text("report,school\n" + "\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 10 * deploy._BLOCK
    built = deploy.build(f"oue:k={k},eps=1")
    got = deploy.collect(path, built, column=None, groups="school", show_progress=False)
    assert got.fast and got.all.n == n
    np.testing.assert_array_equal(got.all.statistic, bits.sum(axis=0))
    first_seen = list(dict.fromkeys(groups.tolist()))
    assert list(got.groups) == first_seen
    for g in first_seen:
        assert got.groups[g].n == int((groups == g).sum())
        np.testing.assert_array_equal(got.groups[g].statistic, bits[groups == g].sum(axis=0))
    # a quoted label goes to the chunked reader, which reads it as CSV
    path.write_text("report,school\n" + "\n".join(lines[:-1]) + "\n" + lines[-1].split(",")[0] + ',"a,b"\n')
    slow = deploy.collect(path, built, column=None, groups="school", show_progress=False)
    assert not slow.fast and "a,b" in slow.groups and slow.all.n == n


# --------------------------------------------------------------------------- malformed files
BAD = [
    ("randomized_response:k=3,eps=1", "report\n0\n1,2\n", "row 2: got 2 fields, expected 1"),
    ("randomized_response:k=3,eps=1", "report\n0\n3\n", "row 2, column 'report': got '3', expected an integer in 0..2"),
    ("randomized_response:k=3,eps=1", "report\n0\nNaN\n", "row 2, column 'report': got 'NaN'"),
    ("randomized_response:k=3,eps=1", "report\n0\n\n1\n", "row 2, column 'report': got nothing"),
    ("randomized_response:k=3,eps=1", "", "got an empty file"),
    ("randomized_response:k=3,eps=1", "report\n", "with a header only, expected at least one report"),
    ("randomized_response:k=3,eps=1", "report\n0\n\uff11\n", "row 2, column 'report': got '\uff11'"),
    ("randomized_response:k=3,eps=1", "report\n0\n1\u200b\n", "row 2, column 'report': got '1\\u200b'"),
    ("oue:k=4,eps=1", "report\n0101\n011\n", "row 2, column 'report': got '011', expected a string of 4"),
    ("oue:k=4,eps=1", "report\n0101\n01010\n", "row 2, column 'report': got '01010'"),
    ("oue:k=4,eps=1", "report\n0101\n0121\n", "row 2, column 'report': got '0121'"),
    ("subset_selection:k=6,eps=1,omega=2", "report\n0;1\n2;2\n", "row 2, column 'report': got '2;2'"),
    ("subset_selection:k=6,eps=1,omega=2", "report\n0;1\n2;6\n", "row 2, column 'report': got '2;6'"),
    ("olh:k=6,eps=1", "hash_a,hash_b,hash_c,value\n1,2,3,0\n1,2,3,9\n", "row 2, column 'value': got '9'"),
    ("piecewise:eps=1", "report\n0.5\ninf\n", "row 2, column 'report': got 'inf', expected a finite number"),
    ("piecewise:eps=1", "report\n0.5\n1e400\n", "row 2, column 'report': got '1e400'"),
    ("piecewise:eps=1", "report\n0.5\n-9\n", "row 2, column 'report': got '-9', expected a report of Piecewise"),
    (
        "duchi:eps=1",
        "report\n2.163953413738653\n0.3\n",
        "row 2, column 'report': got '0.3', expected a report of Duchi",
    ),
]


@pytest.mark.parametrize("spec, text, needle", BAD)
def test_a_malformed_reports_file_is_one_line_exit_2_and_nothing_written(spec, text, needle, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(text, encoding="utf-8")
    before = tree(tmp_path)
    r = run_cli("analyse", path, "--mechanism", spec, "--seed", "1", "--out", tmp_path / "a", cwd=tmp_path)
    line = one_line(r)
    assert line.startswith("ldpsim: error: REPORTS: ") and needle in line, line
    assert tree(tmp_path) == before


def test_bytes_that_are_not_utf8_are_one_line_naming_the_row(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"report\n0\n1\n\xff\xfe\n")
    before = tree(tmp_path)
    r = run_cli("analyse", path, "--mechanism", "randomized_response:k=3,eps=1", "--out", tmp_path / "a")
    assert "REPORTS: row 3: got bytes that are not UTF-8" in one_line(r)
    assert tree(tmp_path) == before


def test_a_bad_row_late_in_a_large_file_is_found_and_nothing_is_written(tmp_path):
    rows = ["0110"] * (deploy.CHUNK + 10) + ["0112"]
    path = tmp_path / "r.csv"
    path.write_text("report\n" + "\n".join(rows) + "\n")
    r = run_cli("analyse", path, "--mechanism", "oue:k=4,eps=1", "--out", tmp_path / "a")
    assert f"REPORTS: row {deploy.CHUNK + 11}, column 'report': got '0112'" in one_line(r)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("privatize", "ans.csv", "--mechanism", "laplace:eps=1", "--seed", "1"), "--mechanism: got 'laplace:eps=1'"),
        (("privatize", "ans.csv", "--mechanism", "oue:eps=1", "--column", "x"), "--column: got 'x'"),
        (("privatize", "ans.csv", "--mechanism", "oue:k=3,eps=1"), "ANSWERS: got 2 labels"),
        (
            ("privatize", "ans.csv", "--mechanism", "oue:eps=1", "--labels", "a,c"),
            "ANSWERS: row 2, column 'q': got 'b'",
        ),
        (("privatize", "ans.csv", "--mechanism", "oue:eps=1", "--out", "ans.csv"), "--out: got 'ans.csv'"),
        (("privatize", "nope.csv", "--mechanism", "oue:eps=1"), "ANSWERS: got 'nope.csv'"),
        (("analyse", "ans.csv", "--mechanism", "oue:k=2,eps=1", "--alpha", "2"), "--alpha: got 2.0"),
        (("analyse", "ans.csv", "--mechanism", "oue:k=2,eps=1", "--groups", "g"), "--groups: got 'g'"),
        (("analyse", "ans.csv", "--mechanism", "oue:k=2,eps=1", "--out", "ans.csv"), "--out: got 'ans.csv'"),
    ],
)
def test_bad_arguments_are_one_line_and_write_nothing(argv, needle, tmp_path):
    (tmp_path / "ans.csv").write_text("q\na\nb\n")
    before = tree(tmp_path)
    r = run_cli(*argv, cwd=tmp_path)
    assert needle in one_line(r), r.stderr
    assert tree(tmp_path) == before


def test_an_existing_reports_file_or_folder_is_kept_without_force(tmp_path):
    reports = privatize(tmp_path, "oue:eps=1", "vote", 1)
    r = run_cli("privatize", tmp_path / "anes96.csv", "--mechanism", "oue:eps=1", "--column", "vote", "--out", reports)
    assert "--out: got" in one_line(r) and "use --force" in r.stderr
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.txt").write_text("mine")
    r = run_cli("analyse", reports, "--mechanism", "oue:k=2,eps=1", "--out", tmp_path / "a")
    assert "expected a new or empty folder" in one_line(r)
    r = run_cli("analyse", reports, "--mechanism", "oue:k=2,eps=1", "--out", tmp_path / "a", "--force")
    assert r.returncode == 0 and (tmp_path / "a" / "notes.txt").read_text() == "mine"
    assert (tmp_path / "a" / "estimates.csv").is_file()


@pytest.mark.parametrize("target", ["ldpsim.deploy.analyse", "ldpsim.deploy.block_generator"])
def test_ctrl_c_is_one_line_exit_130_and_leaves_nothing(target, tmp_path, monkeypatch):
    reports = privatize(tmp_path, "oue:eps=1", "vote", 1)
    before = tree(tmp_path)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(target, ctrl_c)
    if target.endswith("analyse"):
        r = run_cli("analyse", reports, "--mechanism", "oue:k=2,eps=1", "--out", tmp_path / "x" / "y", cwd=tmp_path)
    else:
        r = run_cli("privatize", tmp_path / "anes96.csv", "--mechanism", "oue:eps=1", "--column", "vote", cwd=tmp_path)
    assert one_line(r, 130) == "ldpsim: interrupted; nothing was written"
    assert tree(tmp_path) == before


def test_the_default_output_names(tmp_path):
    src = answers(tmp_path)
    r = run_cli("privatize", src, "--mechanism", "randomized_response:eps=1", "--column", "vote", cwd=tmp_path)
    assert r.returncode == 0 and "seed" in r.stdout
    reports = tmp_path / "anes96-reports.csv"
    assert reports.is_file()
    r = run_cli("analyse", reports, "--mechanism", "randomized_response:k=3,eps=1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    made = list((tmp_path / "reports" / "analyse" / "anes96-reports").iterdir())
    assert len(made) == 1 and (made[0] / "report.html").is_file()
    assert not math.isnan(float(pd.read_csv(made[0] / "estimates.csv")["estimate"].iloc[0]))


# ------------------------------------------------------------------------------ a file of several questions
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "analysis"


def example(tmp_path: Path) -> Path:
    """docs/examples/analysis copied: the analysis file and its three reports files."""
    folder = tmp_path / "example"
    folder.mkdir(parents=True)
    for p in EXAMPLE.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    return folder / "analysis.toml"


def unbiased(counts: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    """(c/n - q) / (p - q): the inversion of randomized response and of unary encoding,
    from their published probabilities (Wang et al. 2017)."""
    return (counts / n - q) / (p - q)


def test_an_analysis_file_gives_every_question_its_estimates_in_one_folder(tmp_path):
    r = run_cli("analyse", example(tmp_path), "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "analysis.json",
        "estimates.csv",
        "report.html",
        "summary.md",
        "tests.csv",
    ]
    est = pd.read_csv(out / "estimates.csv", keep_default_na=False)
    assert list(est.columns[:2]) == ["question", "scope"]
    everyone = est[est["scope"] == "all"].set_index(["question", "category"])["estimate"].astype(float)
    e = math.e
    # vote: randomized response, k = 2, eps = 1 (p = e / (e + 1), q = 1 / (e + 1))
    vote = pd.read_csv(EXAMPLE / "vote.csv")
    counts = np.bincount(vote["report"], minlength=2)
    want = unbiased(counts, len(vote), e / (e + 1), 1 / (e + 1))
    np.testing.assert_allclose(everyone["vote"][["Clinton", "Dole"]].to_numpy(), want, rtol=0, atol=1e-12)
    # party_id: OUE, k = 7, eps = 1 (p = 1/2, q = 1 / (e + 1)), bit j of each report
    party = pd.read_csv(EXAMPLE / "party_id.csv", dtype=str)
    bits = np.array([[int(c) for c in s] for s in party["report"]])
    want = unbiased(bits.sum(axis=0), len(party), 0.5, 1 / (e + 1))
    labels = ["Independent-Democrat", "Independent-Independent", "Independent-Republican", "Strong Democrat"]
    labels += ["Strong Republican", "Weak Democrat", "Weak Republican"]
    np.testing.assert_allclose(everyone["party_id"][labels].to_numpy(), want, rtol=0, atol=1e-12)
    # age: the mean of the reports, with its interval at the file's alpha (0.05)
    ages = pd.read_csv(EXAMPLE / "age.csv")["report"]
    row = est[(est["question"] == "age")].iloc[0]
    assert float(row["estimate"]) == pytest.approx(ages.mean(), abs=1e-12)
    half = 1.959963984540054 * ages.std(ddof=1) / math.sqrt(len(ages))
    assert float(row["ci_high"]) - float(row["estimate"]) == pytest.approx(half, rel=1e-9)
    # party_id's own alpha (0.1): its interval is z = 1.6448536... standard errors wide
    row = est[(est["question"] == "party_id") & (est["scope"] == "all")].iloc[0]
    assert (float(row["ci_high"]) - float(row["estimate"])) / float(row["std_error"]) == pytest.approx(
        1.6448536269514722, rel=1e-9
    )
    # vote's groups: one block per education level, and the homogeneity test
    groups = est[(est["question"] == "vote") & (est["scope"] == "group")]
    assert set(groups["group"]) == set(vote["education"])
    tests = pd.read_csv(out / "tests.csv", keep_default_na=False)
    assert list(tests["question"]) == ["vote"] * 4 + ["party_id"]
    assert list(tests["test"]) == [
        "uniformity",
        "homogeneity",
        "sequential uniformity",  # vote's randomized response: the mixtures from the counts
        "sequential homogeneity",
        "uniformity",
    ]
    assert list(tests["alpha"].astype(float)) == [0.05] * 4 + [0.1]
    summary = (out / "summary.md").read_text()
    assert "## Question vote" in summary and "## Question age" in summary
    meta = __import__("json").loads((out / "analysis.json").read_text())
    assert meta["seed"] == 1 and [q["question"] for q in meta["questions"]] == ["vote", "party_id", "age"]
    # the same seed (the file's, or --seed) gives the same bytes; another seed other p-values
    assert run_cli("analyse", example(tmp_path / "again"), "--out", tmp_path / "again" / "out").returncode == 0
    for name in ("estimates.csv", "tests.csv", "summary.md"):
        assert (tmp_path / "again" / "out" / name).read_bytes() == (out / name).read_bytes(), name
    assert run_cli("analyse", EXAMPLE / "analysis.toml", "--seed", "2", "--out", tmp_path / "two").returncode == 0
    assert (tmp_path / "two" / "tests.csv").read_bytes() != (out / "tests.csv").read_bytes()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (('mechanism = "oue:eps=1"', 'mechanism = "oue:eps=x"'), "questions[1].mechanism: eps: got 'x'"),
        (('mechanism = "oue:eps=1"', 'mechanism = "laplace:eps=1"'), "questions[1].mechanism: got 'laplace:eps=1'"),
        (("alpha = 0.1", "alpha = 2.0"), "questions[1].alpha: Input should be less than 1"),
        (("alpha = 0.1", "alpah = 0.1"), "questions[1].alpah: no such key (did you mean 'alpha'?)"),
        (('groups = "education"', 'groups = "school"'), "questions[0].groups: got 'school'"),
        (('reports = "age.csv"', 'reports = "ages.csv"'), "questions[2].reports: got 'ages.csv'"),
        (('reports = "age.csv"', ""), "questions[2].reports: got nothing"),
        (('name = "age"', 'name = "vote"'), "questions[2].name: got 'vote' twice"),
        (('labels = ["Clinton", "Dole"]', 'labels = ["Clinton"]'), "questions[0].labels: got 1 labels"),
        (('kind = "analysis"', 'kind = "survey"'), "kind: got 'survey', expected 'analysis'"),
        (("seed = 1 ", 'seed = "1" '), "seed: Input should be a valid integer"),
    ],
)
def test_a_bad_analysis_file_is_one_line_naming_the_key_and_writes_nothing(edit, needle, tmp_path):
    path = example(tmp_path)
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    before = tree(tmp_path)
    r = run_cli("analyse", path, "--out", tmp_path / "out", cwd=tmp_path)
    line = one_line(r)
    assert line.startswith(f"ldpsim: error: {path}: ") and needle in line, line
    assert tree(tmp_path) == before


def test_a_bad_row_of_one_question_names_the_question_and_writes_nothing(tmp_path):
    path = example(tmp_path)
    ages = path.parent / "age.csv"
    ages.write_text(ages.read_text().replace("\n", "\nnan\n", 1))
    before = tree(tmp_path)
    line = one_line(run_cli("analyse", path, "--out", tmp_path / "out"))
    assert "questions[2].reports (age.csv): row 1, column 'report': got 'nan'" in line, line
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    "option", [("--mechanism", "oue:k=2,eps=1"), ("--groups", "g"), ("--alpha", "0.05"), ("--sequential",)]
)
def test_options_of_one_file_are_refused_with_an_analysis_file(option, tmp_path):
    path = example(tmp_path)
    line = one_line(run_cli("analyse", path, *option, "--out", tmp_path / "out"))
    assert line.startswith(f"ldpsim: error: {option[0]}: got") and "analysis file" in line
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ a simulated run's own reports
SMALL_ANES = """
name = "anes96_round_trip"
description = "The 944 ANES respondents as they are, three questions, every report received."

[population]
file = "anes96.csv"

[budget]
total = 4.0
strategy = "split"

[[questions]]
name = "vote"
eps = 1.0
mechanism = { kind = "randomized_response" }

[[questions]]
name = "party_id"
eps = 1.0
mechanism = { kind = "oue" }

[[questions]]
name = "education"
eps = 2.0
mechanism = { kind = "olh" }

[arrivals]
kind = "poisson"
duration = 2.0

[network]
loss = 0.1

[analyst]
checkpoints = { every = 1.0 }
tasks = [{ kind = "frequency", confidence = 0.95 }]

[simulation]
mode = "individual"
replications = 2
seed = 38
"""


def test_analyse_on_a_run_s_own_reports_gives_the_run_s_estimates(tmp_path):
    (tmp_path / "anes96.csv").write_bytes(ANES.read_bytes())
    (tmp_path / "s.toml").write_text(SMALL_ANES)
    r = run_cli("run", tmp_path / "s.toml", "--out", tmp_path / "run", "--no-progress")
    assert r.returncode == 0, r.stderr
    results = pd.read_csv(tmp_path / "run" / "results.csv", keep_default_na=False)
    for replication in (1,):  # the second: its own seed stream, spawn key (1,)
        toml = deploy.replay_reports(tmp_path / "run", tmp_path / f"replay{replication}", replication)
        r = run_cli("analyse", toml, "--out", tmp_path / f"a{replication}", "--no-progress")
        assert r.returncode == 0, r.stderr
        est = pd.read_csv(tmp_path / f"a{replication}" / "estimates.csv", keep_default_na=False)
        est = est[est["scope"] == "all"]
        end = results[(results["replication"] == replication) & (results["reason"] == "end")]
        received = end[end["quantity"] == "received"]
        for question in ("vote", "party_id", "education"):
            rows = end[end["task"] == f"{question}:frequency"]
            freq = rows[rows["quantity"] == "frequency"].set_index("category")
            se = rows[rows["quantity"] == "std_error"].set_index("category")["estimate"].astype(float)
            mine = est[est["question"] == question].set_index("category")
            assert len(mine) == len(freq) > 1
            n = int(mine["reports"].iloc[0])
            assert n == int(rows["n_received"].iloc[0]) and n < 944  # 10% lost
            for column in ("estimate", "ci_low", "ci_high"):
                np.testing.assert_allclose(
                    mine.loc[freq.index, column].astype(float), freq[column].astype(float), rtol=0, atol=1e-12
                )
            np.testing.assert_allclose(mine.loc[se.index, "std_error"].astype(float), se, rtol=0, atol=1e-12)
        assert len(received) == 1
    line = one_line(run_cli("analyse", toml, "--out", tmp_path / "a1"))  # folder exists: refused
    assert line.startswith("ldpsim: error: --out:"), line
    with pytest.raises(deploy.LdpSimError, match="replication: got 2, expected an integer in 0..1"):
        deploy.replay_reports(tmp_path / "run", tmp_path / "replay2", 2)


def test_ldpsim_run_refuses_an_analysis_file_and_says_which_command_reads_it(tmp_path):
    path = example(tmp_path)
    line = one_line(run_cli("run", path, "--out", tmp_path / "run"))
    assert "kind: got 'analysis', expected one of 'survey'" in line and f"ldpsim analyse {path}" in line
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------ privatize = a simulated run
ONE_QUESTION = """
name = "privatize_twin"
[population]
file = "answers.csv"
column = "{column}"
[mechanism]
{mechanism}
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
mode = "individual"
seed = {seed}
"""


def _twin_run(tmp_path: Path, answers: Path, column: str, spec: str, seed: int) -> tuple[Path, pd.DataFrame]:
    """The simulated run privatize stands for: the file's respondents as they are, the same
    mechanism and seed, all at once over a network that loses nothing; its results at the end."""
    name, _, params = spec.partition(":")
    mechanism = f'kind = "{name}"\n' + "\n".join(p.replace("=", " = ") for p in params.split(",") if p)
    folder = tmp_path / f"twin-{name}"
    folder.mkdir()
    (folder / "answers.csv").write_bytes(answers.read_bytes())
    (folder / "s.toml").write_text(ONE_QUESTION.format(column=column, mechanism=mechanism, seed=seed))
    r = run_cli("run", folder / "s.toml", "--out", folder / "run", "--no-progress")
    assert r.returncode == 0, r.stderr
    results = pd.read_csv(folder / "run" / "results.csv", keep_default_na=False)
    return folder / "run", results[results["reason"] == "end"]


@pytest.mark.parametrize(
    "spec", ["randomized_response:eps=1", "hadamard_response:eps=1", "oue:eps=1", "olh:eps=2", "subset_selection:eps=1"]
)
def test_privatize_then_analyse_gives_the_estimates_of_the_simulated_run_with_the_same_seed(spec, tmp_path):
    # the round trip: privatize on the ANES extract, analyse, and the equivalent
    # simulated run with the same seed: the same reports, byte for byte (the run's as its
    # server received them, replay_reports), so the same estimates and intervals
    seed = 1996
    reports = privatize(tmp_path, spec, "party_id", seed)
    run, end = _twin_run(tmp_path, ANES, "party_id", spec, seed)
    toml = deploy.replay_reports(run, tmp_path / "replay")
    (received,) = (tmp_path / "replay").glob("*.csv")  # named after the run's one mechanism
    assert received.read_bytes() == reports.read_bytes()
    folder = analyse(tmp_path, reports, spec, "--labels", ",".join(file_labels_of(ANES, "party_id")))
    mine = pd.read_csv(folder / "estimates.csv", keep_default_na=False)
    mine = mine[mine["scope"] == "all"].set_index("category")
    freq = end[end["quantity"] == "frequency"].set_index("category")
    assert len(freq) == len(mine) == 7 and int(mine["reports"].iloc[0]) == 944
    for column in ("estimate", "ci_low", "ci_high"):
        np.testing.assert_allclose(mine.loc[freq.index, column], freq[column].astype(float), rtol=0, atol=1e-12)
    assert toml.is_file()


def file_labels_of(path: Path, column: str) -> list[str]:
    """The distinct answers, as a population orders them (text: sorted)."""
    return sorted(pd.read_csv(path, dtype=str, keep_default_na=False)[column].unique())


def test_privatize_draws_each_block_of_answers_as_the_run_draws_each_batch(tmp_path):
    # 150,000 answers: three chunks of privatize, three batches of the run's one cohort, each
    # from its own stream; numeric labels in numeric order, as a population orders them
    n = 150_000
    values = np.random.default_rng(5).choice([1, 2, 10], size=n, p=[0.5, 0.3, 0.2])
    answers = tmp_path / "answers.csv"
    answers.write_text("score\n" + "\n".join(map(str, values.tolist())) + "\n")
    spec = "randomized_response:eps=1"
    r = run_cli("privatize", answers, "--mechanism", spec, "--seed", 7, "--out", tmp_path / "r.csv", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "1,2,10" in r.stdout  # the labels, in numeric order
    run, _ = _twin_run(tmp_path, answers, "score", spec, 7)
    deploy.replay_reports(run, tmp_path / "replay")
    (received,) = (tmp_path / "replay").glob("*.csv")
    assert received.read_bytes() == (tmp_path / "r.csv").read_bytes()


def test_noise_on_numbers_is_float_safe_by_default_and_draws_from_the_os_on_request(tmp_path):
    src = tmp_path / "anes96.csv"
    src.write_bytes(ANES.read_bytes())
    base = ("privatize", src, "--column", "age", "--mechanism", "laplace_bounded:eps=1,lo=17,hi=93", "--no-progress")
    made = {}
    for sampler, family in ((None, "snapped_laplace_bounded"), ("float", "laplace_bounded"), ("discrete", None)):
        extra = () if sampler is None else ("--sampler", sampler)
        out = tmp_path / f"{sampler}.csv"
        r = run_cli(*base, *extra, "--seed", 3, "--out", out)
        assert r.returncode == 0, r.stderr
        used = r.stdout.split(" with ")[1].split(":")[0]
        assert used == (family or "discrete_laplace_bounded")
        made[sampler] = out.read_bytes()
        # analyse reads them with the family's spec: the mean of the reports
        assert (
            run_cli("analyse", out, "--mechanism", f"{used}:eps=1,lo=17,hi=93", "--out", tmp_path / used).returncode
            == 0
        )
    assert len(set(made.values())) == 3
    # the operating system's generator: no seed, different bytes each time, the same mean's law
    first = run_cli(*base, "--rng", "os", "--out", tmp_path / "os1.csv")
    second = run_cli(*base, "--rng", "os", "--out", tmp_path / "os2.csv")
    assert first.returncode == second.returncode == 0, first.stderr
    assert "operating system's generator" in first.stdout
    assert (tmp_path / "os1.csv").read_bytes() != (tmp_path / "os2.csv").read_bytes()
    assert len((tmp_path / "os1.csv").read_text().splitlines()) == 945


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("--mechanism", "oue:eps=1", "--column", "vote", "--rng", "os"), "--rng: got 'os' with oue"),
        (
            (
                "--mechanism",
                "laplace_bounded:eps=1,lo=17,hi=93",
                "--column",
                "age",
                "--rng",
                "os",
                "--sampler",
                "float",
            ),
            "--rng: got 'os' with laplace_bounded",
        ),
        (
            ("--mechanism", "piecewise:eps=1,lo=17,hi=93", "--column", "age", "--rng", "os", "--seed", "4"),
            "--seed: got 4, expected none with --rng os",
        ),
        (("--mechanism", "oue:eps=1", "--column", "vote", "--sampler", "snapped"), "--sampler: got 'snapped'"),
        (
            ("--mechanism", "laplace_bounded:eps=1,lo=17,hi=93", "--column", "age", "--sampler", "exact"),
            "--sampler: got 'exact'",
        ),
    ],
)
def test_a_sampler_or_generator_the_mechanism_lacks_is_one_line_and_writes_nothing(argv, needle, tmp_path):
    src = tmp_path / "anes96.csv"
    src.write_bytes(ANES.read_bytes())
    before = tree(tmp_path)
    line = one_line(run_cli("privatize", src, *argv, "--out", tmp_path / "r.csv"))
    assert line.startswith("ldpsim: error: ") and needle in line, line
    assert tree(tmp_path) == before
