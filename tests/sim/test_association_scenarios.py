"""``[analyst] crosstabs`` of questions of any kind and ``[analyst] homogeneity`` across
the groups of a table column (:mod:`ldpsim.sim.association`).

- The engine's rows against the analyst called here on the stored reports' terms (the
  reports of both questions paired by arrival) and on the groups read from the CSV file.
- The level of the engine's Wald test under a true null, with the kinds' own reports:
  numeric x numeric (piecewise), multiselect x categorical, keyvalue x numeric, and a
  numeric question across groups of a column. The null is exact: each table is the
  product of two lists of rows, resampled uniformly, so the two columns are independent.
  Rejections within the binomial interval of a level-0.05 test at the suite's
  false-failure probability.
- Errors: one line naming the key.
"""

from __future__ import annotations

import csv
import itertools

import numpy as np
import pytest
from scipy import stats

from ldpsim.analyst import association_test, group_homogeneity
from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_scenario
from ldpsim.sim.association import GroupTermsTask, PairedTermsTask
from ldpsim.sim.engine import Replication, merge_shards, plan_shards, run_replication, run_shard
from tests.stats_checks import FALSE_FAILURE

ALPHA = 0.05
ITEMS = ["tv", "radio", "web"]
KEYS = ["mail", "maps", "chat"]

QUESTIONS = {
    "x": 'name = "x"\nkind = "numeric"\nrange = [0, 10]\nmechanism = { kind = "piecewise" }',
    "y": 'name = "y"\nkind = "numeric"\nrange = [0, 10]\nmechanism = { kind = "piecewise" }',
    "news": f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\nmechanism = {{ kind = "padding", padding = 2 }}',
    "answer": 'name = "answer"\nlabels = ["a", "b", "c"]\nmechanism = { kind = "randomized_response" }',
    "apps": f'name = "apps"\nkind = "keyvalue"\nlabels = {KEYS}\nmechanism = {{ kind = "pckv", padding = 2 }}',
}


def _values(column: str, count: int, rng: np.random.Generator) -> list[str]:
    """``count`` answers of a column, as a table holds them."""
    if column in ("x", "y"):
        return [f"{v:.3f}" for v in rng.uniform(0, 10, count)]
    if column == "news":
        return [";".join(it for it in ITEMS if rng.random() < 0.5) for _ in range(count)]
    if column == "answer":
        return list(rng.choice(["a", "b", "c"], count, p=[0.5, 0.3, 0.2]))
    if column == "apps":
        return [";".join(f"{k}={rng.uniform(-1, 1):.3f}" for k in KEYS if rng.random() < 0.6) for _ in range(count)]
    return list(rng.choice(["north", "south", "east"], count))  # a group column


def _write_product(tmp_path, first: str, second: str, seed: int, rows: int = 12) -> None:
    """A table whose rows are every pair of ``rows`` answers of each column: resampled
    uniformly, the two columns are exactly independent."""
    rng = np.random.default_rng(seed)
    a, b = _values(first, rows, rng), _values(second, rows, rng)
    with (tmp_path / "t.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([first, second])
        writer.writerows(itertools.product(a, b))


def _text(questions: list[str], analyst: str, size: str = "size = 400", extra: str = "") -> str:
    body = "\n".join(f"[[questions]]\n{QUESTIONS[q]}" for q in questions)
    return f"""
name = "assoc"
[population]
file = "t.csv"
{size}
[budget]
total = {float(len(questions))}
strategy = "split"
{body}
[arrivals]
kind = "all_at_once"
{extra}
[analyst]
tasks = [{{ kind = "frequency" }}]
{analyst}
[simulation]
seed = 3
end = 1.0
tick = 1.0
"""


def _interval(reps: int) -> tuple[int, int]:
    return int(stats.binom.ppf(FALSE_FAILURE / 2, reps, ALPHA)), int(stats.binom.isf(FALSE_FAILURE / 2, reps, ALPHA))


def _end(rows, task: str, quantity: str, category: str = "ldp") -> float:
    end = rows[(rows["task"] == task) & (rows["reason"] == "end")]
    return float(end[(end["quantity"] == quantity) & (end["category"] == category)]["estimate"].iloc[0])


# ------------------------------------------------------------------------------ the engine's rows
def test_engine_rows_are_the_analysts_test_on_the_stored_reports(tmp_path):
    """OUE groups x a number through bucketed OUE, the 144 rows as they are (no resampling, no loss,
    everyone at once): the engine's sums give the Wald test the analyst computes here on
    the two servers' stored reports, paired by arrival; the homogeneity of the number across
    the table's groups is the analyst's on the groups read from the CSV."""
    _write_product(tmp_path, "x", "group", seed=1)
    text = _text(
        ["answer", "x"],
        '[[analyst.homogeneity]]\nquestion = "x"\nby = "group"\n',
        size="",
        extra="[server]\nkeep_reports = true",
    ).replace('kind = "randomized_response"', 'kind = "oue"')
    text = text.replace('name = "answer"', 'name = "answer"\ncolumn = "group"\n# the groups, privatised too')
    text = text.replace("[analyst]\n", '[analyst]\ncrosstabs = [{ rows = "answer", columns = "x" }]\n')
    text = text.replace('labels = ["a", "b", "c"]', 'labels = ["east", "north", "south"]')
    # the number through OUE over 10 buckets (a server that keeps its reports): its term is
    # the unbiased bucket law's mean of the midpoints
    text = text.replace(
        'range = [0, 10]\nmechanism = { kind = "piecewise" }',
        'range = [0, 10]\nbins = 10\nmechanism = { kind = "oue" }',
    )
    (tmp_path / "s.toml").write_text(text)
    sc = parse_scenario(text, str(tmp_path / "s.toml"))
    rep = Replication(sc, 0, 11)
    rows = rep.run()
    qs = sc.questions
    ya, _ = rep.servers[0].stored_reports()
    yb, _ = rep.servers[1].stored_reports()
    ua = qs.questions[0].design_units(qs.mechanism(0), ya)
    ub = qs.questions[1].design_units(qs.mechanism(1), yb)
    want = association_test(ua, ub, method="wald")
    task = "answer x x:crosstab"
    assert _end(rows, task, "independence_statistic") == pytest.approx(want.statistic, rel=1e-8)
    assert _end(rows, task, "independence_p_value") == pytest.approx(want.p_value, rel=1e-7)
    assert _end(rows, task, "independence_df") == want.df == 3  # OUE's 3 terms, one number
    assert _end(rows, task, "association") == pytest.approx(want.association, rel=1e-8)
    # the true answers: the product table, as is, has exactly no cross-covariance
    with (tmp_path / "t.csv").open(newline="") as f:
        table = list(csv.DictReader(f))
    groups = [r["group"] for r in table]
    x = np.minimum(np.array([float(r["x"]) for r in table]) // 1, 9) + 0.5  # each bucket's midpoint
    end = rows[(rows["task"] == task) & (rows["reason"] == "end") & (rows["quantity"] == "association")]
    assert float(end["truth"].iloc[0]) == pytest.approx(0.0, abs=1e-9)
    assert _end(rows, task, "independence_statistic", "answers") == pytest.approx(0.0, abs=1e-9)
    # homogeneity of x across the groups (rows in table order: all at once, no latency)
    homo = "x by group:homogeneity"
    direct = group_homogeneity(ub, groups, method="wald")
    assert _end(rows, homo, "independence_statistic") == pytest.approx(direct.statistic, rel=1e-8)
    assert _end(rows, homo, "independence_df") == direct.df == 2
    truth = group_homogeneity(x, groups, method="wald")
    assert _end(rows, homo, "independence_statistic", "answers") == pytest.approx(truth.statistic, abs=1e-8)


def test_a_finite_mechanism_also_gets_the_exact_conditional_test(tmp_path):
    """A categorical question through 3-ary randomized response across three groups, the
    144 rows as they are: the ``conditional`` statistic is Pearson's on the groups' output
    counts and the ``ldp`` one the Wald test on randomized response's terms (e_y - q) /
    (p - q), both written here from the stored reports and the CSV's groups."""
    _write_product(tmp_path, "answer", "group", seed=4)
    text = _text(
        ["answer"],
        'homogeneity = [{ question = "answer", by = "group" }]',
        size="",
        extra="[server]\nkeep_reports = true",
    )
    sc = parse_scenario(text, str(tmp_path / "s.toml"))
    rep = Replication(sc, 0, 11)
    rows = rep.run()
    y, _ = rep.servers[0].stored_reports()
    with (tmp_path / "t.csv").open(newline="") as f:
        groups = np.array([r["group"] for r in csv.DictReader(f)])
    table = np.array([[np.sum((groups == g) & (y == o)) for o in range(3)] for g in ("east", "north", "south")])
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    pearson = float(((table - expected) ** 2 / expected).sum())
    task = "answer by group:homogeneity"
    assert _end(rows, task, "independence_statistic", "conditional") == pytest.approx(pearson, rel=1e-10)
    assert 0 < _end(rows, task, "independence_p_value", "conditional") <= 1
    e = np.exp(1.0)  # eps = total / 1 question
    p, q = e / (e + 2), 1 / (e + 2)
    units = (np.eye(3)[y] - q) / (p - q)
    want = group_homogeneity(units, groups, method="wald")
    assert _end(rows, task, "independence_statistic") == pytest.approx(want.statistic, rel=1e-8)
    assert _end(rows, task, "independence_df") == want.df == 4  # rank 2 x (3 - 1)
    # the terms are affine in the one-hot outputs, so n times Pillai's trace is Pearson's
    # statistic of the groups x outputs table: the two tests differ only in calibration
    assert want.statistic == pytest.approx(pearson, rel=1e-9)


def test_a_run_reports_the_tests_in_summary_and_metadata(tmp_path):
    _write_product(tmp_path, "x", "group", seed=2)
    text = _text(
        ["x", "y"], 'crosstabs = [{ rows = "x", columns = "y" }]\nhomogeneity = [{ question = "x", by = "x" }]'
    )
    rng = np.random.default_rng(0)
    with (tmp_path / "t.csv").open("w", newline="") as f:  # x, y and a group column
        writer = csv.writer(f)
        writer.writerow(["x", "y", "group"])
        for _ in range(200):
            v = rng.uniform(0, 10)
            writer.writerow([f"{v:.3f}", f"{min(10, v + rng.uniform(0, 0.5)):.3f}", rng.choice(["a", "b"])])
    text = text.replace('by = "x"', 'by = "group"')
    path = tmp_path / "s.toml"
    path.write_text(text)
    result = run_scenario(parse_scenario(text, str(path)), out=tmp_path / "run", progress=False)
    tasks = set(result.results["task"])
    assert {"x x y:crosstab", "x by group:homogeneity"} <= tasks
    summary = (result.run_dir / "summary.md").read_text()
    assert "## Cross-tabulations" in summary and "| x x y:crosstab | ldp |" in summary
    assert "| x by group:homogeneity | answers |" in summary
    assert "## Other analyst tasks" not in summary
    meta = (result.run_dir / "metadata.json").read_text()
    assert "paired_crosstabs" in meta and "x by group:homogeneity" in meta


def test_shards_give_the_same_rows(tmp_path):
    """The sums travel with the reports, so a replication cut into shards writes the same
    rows as one run whole."""
    _write_product(tmp_path, "x", "group", seed=8)
    text = _text(
        ["answer", "x"],
        'crosstabs = [{ rows = "answer", columns = "x" }]\nhomogeneity = [{ question = "x", by = "group" }]',
        size="size = 3000",
    ).replace('name = "answer"', 'name = "answer"\ncolumn = "group"')
    text = text.replace('labels = ["a", "b", "c"]', 'labels = ["east", "north", "south"]')
    text = text.replace("[simulation]", "[simulation]\nbatch_size = 500")
    sc = parse_scenario(text, str(tmp_path / "s.toml"))
    whole = run_replication(sc, 0, 5)
    bounds = plan_shards(sc, 0, 5, 3)
    assert len(bounds) == 3
    assert whole.equals(merge_shards(sc, 0, 5, [run_shard(sc, 0, 5, lo, hi) for lo, hi in bounds]))
    assert "x by group:homogeneity" in set(whole["task"])


def test_homogeneity_hears_what_its_question_hears(tmp_path):
    """Under one_random, and with item non-response, a test of homogeneity uses the reports
    its question receives: its pairs are the question's own n_received."""
    _write_product(tmp_path, "answer", "group", seed=3)
    text = _text(
        ["answer"],
        'homogeneity = [{ question = "answer", by = "group" }, { question = "other", by = "group" }]',
        size="size = 3000",
    )
    text = text.replace(
        "[arrivals]",
        '[[questions]]\nname = "other"\ncolumn = "answer"\nlabels = ["a", "b", "c"]\nmechanism = { kind = "oue" }\n'
        'loss = { by_answer = { "a" = 0.5 } }\n[arrivals]',
    ).replace('strategy = "split"', 'strategy = "one_random"')
    rows = Replication(parse_scenario(text, str(tmp_path / "s.toml")), 0, 3).run()
    end = rows[rows["reason"] == "end"]
    for q in ("answer", "other"):
        heard = end[end["task"] == f"{q}:frequency"]["n_received"].iloc[0]
        pairs = end[end["task"] == f"{q} by group:homogeneity"]["n_received"]
        assert set(pairs) == {heard} and 0 < heard < 3000
    assert end[end["task"] == "other:frequency"]["n_received"].iloc[0] < 1500  # half its a's left out


# ------------------------------------------------------------------------------ level under a true null
PAIRS = [("x", "y"), ("news", "answer"), ("apps", "x")]


@pytest.mark.parametrize(
    ("first", "second"), PAIRS, ids=["numeric-numeric", "multiselect-categorical", "keyvalue-numeric"]
)
def test_paired_wald_level_with_the_kinds_own_reports(tmp_path, first, second):
    """400 respondents resampled from a product table, 600 replications of their reports
    (each through its question's own privatise and design_units, as the engine does), the
    engine's task on each: rejections of the true null within the binomial interval."""
    _write_product(tmp_path, first, second, seed=10 + PAIRS.index((first, second)))
    text = _text([first, second], f'crosstabs = [{{ rows = "{first}", columns = "{second}" }}]')
    (tmp_path / "s.toml").write_text(text)
    qs = parse_scenario(text, str(tmp_path / "s.toml")).questions
    xt = qs.paired[0]
    mechs = [qs.mechanism(0), qs.mechanism(1)]
    rng = np.random.default_rng(17)
    reps, n = 600, 400
    rejected = 0
    for _ in range(reps):
        rows = rng.integers(0, qs.rows, n)
        ys = [q.privatize(m, q.answers(rows), rng) for q, m in zip(qs.questions, mechs)]
        task = PairedTermsTask(xt.name, 0, 1, qs.questions, mechs, ALPHA, True)
        task.add(ys[0], ys[1], rows)
        out = {(r["quantity"], r["category"]): r["estimate"] for r in task.at_checkpoint()}
        rejected += int(out[("independence_reject", "ldp")])
    lo, hi = _interval(reps)
    assert lo <= rejected <= hi, (rejected, lo, hi)


def test_homogeneity_level_across_three_groups(tmp_path):
    _write_product(tmp_path, "x", "group", seed=5)
    text = _text(["x"], 'homogeneity = [{ question = "x", by = "group" }]')
    (tmp_path / "s.toml").write_text(text)
    qs = parse_scenario(text, str(tmp_path / "s.toml")).questions
    test = qs.homogeneity[0]
    assert test.labels == ("east", "north", "south")
    rng = np.random.default_rng(19)
    reps = 600
    rejected = 0
    for _ in range(reps):
        rows = rng.integers(0, qs.rows, 300)
        y = qs.questions[0].privatize(qs.mechanism(0), qs.questions[0].answers(rows), rng)
        task = GroupTermsTask(test, qs.questions, [qs.mechanism(0)])
        task.add(y, rows)
        rejected += int(next(r["estimate"] for r in task.at_checkpoint() if r["quantity"] == "independence_reject"))
    lo, hi = _interval(reps)
    assert lo <= rejected <= hi, (rejected, lo, hi)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("analyst", "extra", "message"),
    [
        ('homogeneity = [{ question = "z", by = "group" }]', "", "analyst.homogeneity[0].question: got 'z'"),
        ('homogeneity = [{ question = "x", by = "region" }]', "", "analyst.homogeneity[0].by: "),
        (
            'homogeneity = [{ question = "x", by = "group" }, { question = "x", by = "group" }]',
            "",
            "analyst.homogeneity[1]: got 'x' by 'group' twice",
        ),
        (
            'homogeneity = [{ question = "x", by = "group", alpha = 2 }]',
            "",
            "analyst.homogeneity[0].alpha: Input should be less than 1",
        ),
    ],
)
def test_errors_are_one_line_naming_the_key(tmp_path, analyst, extra, message):
    _write_product(tmp_path, "x", "group", seed=6)
    text = _text(["x"], analyst, extra=extra)
    with pytest.raises(LdpSimError) as info:
        parse_scenario(text, str(tmp_path / "s.toml"))
    assert "\n" not in str(info.value) and message in str(info.value), str(info.value)


def test_aggregate_mode_refuses_a_paired_crosstab_and_homogeneity(tmp_path):
    _write_product(tmp_path, "answer", "group", seed=7)
    base = _text(["answer"], "").replace("[simulation]", '[simulation]\nmode = "aggregate"')
    base = base.replace('kind = "randomized_response"', 'kind = "oue"')
    two = base.replace(
        "[arrivals]",
        '[[questions]]\nname = "other"\ncolumn = "answer"\nlabels = ["a", "b", "c"]\nmechanism = { kind = "oue" }\n'
        "[arrivals]",
    ).replace("total = 1.0", "total = 2.0")
    cases = [
        (
            two.replace("[analyst]\n", '[analyst]\ncrosstabs = [{ rows = "answer", columns = "other" }]\n'),
            "analyst.crosstabs[0]: got 'answer' x 'other' in aggregate mode",
        ),
        (
            base.replace("[analyst]\n", '[analyst]\nhomogeneity = [{ question = "answer", by = "group" }]\n'),
            "analyst.homogeneity[0]: got 'aggregate' mode",
        ),
    ]
    for text, message in cases:
        with pytest.raises(LdpSimError) as info:
            parse_scenario(text, str(tmp_path / "s.toml"))
        assert "\n" not in str(info.value) and message in str(info.value), str(info.value)


def test_homogeneity_without_a_table_is_refused():
    text = """
name = "no_table"
[population]
size = 100
[budget]
total = 1.0
strategy = "split"
[[questions]]
name = "a"
labels = ["x", "y"]
distribution = [0.5, 0.5]
mechanism = { kind = "randomized_response" }
[arrivals]
kind = "all_at_once"
[analyst]
homogeneity = [{ question = "a", by = "group" }]
"""
    with pytest.raises(LdpSimError, match=r"analyst\.homogeneity\[0\]\.by: got 'group' without population\.file"):
        parse_scenario(text, "t.toml")


# ------------------------------------------------------------------------------ the sequential rows
@pytest.mark.parametrize("first", ["x", "news", "answer", "apps"])
def test_every_kinds_terms_lie_within_their_stated_widths(tmp_path, first):
    """``design_ranges``: the spread of 20,000 reports' terms, entry by entry, is at most the
    width the kind states (what the betting tests rely on), and reaches most of it."""
    _write_product(tmp_path, first, "group", seed=21)
    text = _text([first], "")
    (tmp_path / "s.toml").write_text(text)
    qs = parse_scenario(text, str(tmp_path / "s.toml")).questions
    q, m = qs.questions[0], qs.mechanism(0)
    rng = np.random.default_rng(22)
    rows = rng.integers(0, qs.rows, 20000)
    u = q.design_units(m, q.privatize(m, q.answers(rows), rng))
    widths = q.design_ranges(m)
    assert widths.shape == (u.shape[1],)
    spread = u.max(axis=0) - u.min(axis=0)
    assert np.all(spread <= widths * (1 + 1e-12)), (spread, widths)
    assert np.all(spread >= 0.5 * widths), (spread, widths)


AGAIN = (
    '[[questions]]\nname = "again"\ncolumn = "answer"\nlabels = ["a", "b", "c"]\n'
    'mechanism = { kind = "randomized_response" }\n'
)


def test_sequential_rows_beside_the_fixed_tests(tmp_path):
    """Paired terms, the groups of a column and a finite cross-tabulation each write the
    anytime-valid test: independent columns are not rejected, a copied answer is."""
    _write_product(tmp_path, "x", "group", seed=23)
    text = _text(["x", "answer"], '[[analyst.homogeneity]]\nquestion = "x"\nby = "group"\n', size="size = 4000")
    text = text.replace("[analyst]\n", '[analyst]\ncrosstabs = [{ rows = "x", columns = "answer" }]\n')
    text = text.replace('name = "answer"', 'name = "answer"\ncolumn = "group"').replace(
        'labels = ["a", "b", "c"]', 'labels = ["east", "north", "south"]'
    )
    (tmp_path / "s.toml").write_text(text)
    rows = run_scenario(str(tmp_path / "s.toml"), out=tmp_path / "run", progress=False).results
    for task in ("x x answer:crosstab", "x by group:homogeneity"):
        assert _end(rows, task, "independence_reject", "sequential") == 0.0
        assert np.isfinite(_end(rows, task, "independence_log_e_value", "sequential"))
    # the same answer asked twice: the finite cross-tabulation's e-value finds it
    _write_product(tmp_path, "answer", "group", seed=24)
    both = (
        _text(["answer"], "", size="size = 3000")
        .replace("total = 1.0", "total = 6.0")
        .replace("[analyst]\n", '[analyst]\ncrosstabs = [{ rows = "answer", columns = "again" }]\n')
    )
    both = both.replace(
        "[arrivals]",
        AGAIN + "[arrivals]",
    )
    (tmp_path / "b.toml").write_text(both)
    rows = run_scenario(str(tmp_path / "b.toml"), out=tmp_path / "run2", progress=False).results
    assert _end(rows, "answer x again:crosstab", "independence_reject", "sequential") == 1.0
