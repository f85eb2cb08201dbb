"""Several questions per respondent (``[[questions]]``, ``[budget]``): the per-respondent
privacy of both budget strategies against hand-computed values, the exact variances
against the closed form of randomized response, the variance ordering the exact formulas
predict against simulated replications, answers kept together per respondent from a table,
seeds, the shipped scenario, and every error in one line."""

from __future__ import annotations

import csv
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication, run_scenario
from ldpsim.sim.engine import Replication
from tests.sim.helpers import SCENARIOS, same_bytes_with_one_and_two_workers
from tests.stats_checks import FALSE_FAILURE
from tests.tiers import sample


def _question(
    name: str,
    mechanism: str = '{ kind = "randomized_response" }',
    labels: str = '["x", "y"]',
    distribution: str = "[0.5, 0.5]",
    extra: str = "",
) -> str:
    return f"""
[[questions]]
name = "{name}"
labels = {labels}
distribution = {distribution}
mechanism = {mechanism}
{extra}
"""


def _text(
    questions: str,
    *,
    total: float = 2.0,
    strategy: str = "split",
    size: int = 2000,
    population: str = "",
    extra: str = "",
    seed: int = 1,
) -> str:
    pop = population or f"size = {size}"
    return f"""
name = "questions"
{extra}
[population]
{pop}
[budget]
total = {total}
strategy = "{strategy}"
{questions}
[arrivals]
kind = "all_at_once"
[simulation]
seed = {seed}
end = 1.0
tick = 1.0
"""


def _privacy(sc) -> dict[str, tuple[float, float]]:
    return {r["strategy"]: (r["eps"], r["delta"]) for r in sc.questions.privacy.to_dict("records")}


# --------------------------------------------------------------------- privacy accounting
def test_split_divides_the_total_equally_and_sums_back_exactly():
    sc = parse_scenario(_text(_question("a") + _question("b") + _question("c"), total=1.5))
    assert [m.epsilon() for _, m in sc.mechanisms] == pytest.approx([0.5, 0.5, 0.5], rel=1e-12)
    # by hand: 0.5 + 0.5 + 0.5 (split); the whole budget 1.5 on one question (one_random); pure eps
    assert _privacy(sc)["split"] == pytest.approx((1.5, 0.0), abs=1e-12)
    assert _privacy(sc)["one_random"] == pytest.approx((1.5, 0.0), abs=1e-12)


def test_stated_eps_per_question_and_one_random_at_the_whole_budget():
    qs = _question("a", extra="eps = 0.2") + _question("b", extra="eps = 0.3") + _question("c", extra="eps = 1.0")
    sc = parse_scenario(_text(qs, total=1.5))
    assert [m.epsilon() for _, m in sc.mechanisms] == pytest.approx([0.2, 0.3, 1.0], rel=1e-12)
    assert _privacy(sc)["split"] == pytest.approx((1.5, 0.0), abs=1e-12)
    one = parse_scenario(_text(_question("a") + _question("b") + _question("c"), total=1.5, strategy="one_random"))
    assert [m.epsilon() for _, m in one.mechanisms] == pytest.approx([1.5, 1.5, 1.5], rel=1e-12)
    assert _privacy(one)["one_random"] == pytest.approx((1.5, 0.0), abs=1e-12)


def test_eps_delta_mechanisms_compose_exactly():
    quaternary = '{ kind = "quaternary", delta = 0.1 }'
    other = '{ kind = "quaternary", delta = 0.2 }'
    sc = parse_scenario(_text(_question("a", quaternary) + _question("b", other), total=2.0))
    # split: at eps_total = 1 + 1 the optimal composition loses exactly 1 - (1 - 0.1)(1 - 0.2) = 0.28;
    # one_random: each question at eps 2, the mixture's delta is the mean (0.1 + 0.2) / 2 = 0.15
    assert _privacy(sc)["split"] == pytest.approx((2.0, 0.28), rel=1e-9)
    assert _privacy(sc)["one_random"] == pytest.approx((2.0, 0.15), rel=1e-9)
    mixed = parse_scenario(
        _text(
            _question("a", quaternary) + _question("b", labels='["x", "y", "z"]', distribution="[0.2, 0.3, 0.5]"),
            total=3.0,
        )
    )
    assert _privacy(mixed)["split"] == pytest.approx((3.0, 0.1), rel=1e-9)
    assert _privacy(mixed)["one_random"] == pytest.approx((3.0, 0.05), rel=1e-9)


# --------------------------------------------------------------------- exact variances
def _rr_variance(f: float, k: int, eps: float, n: float) -> float:
    """k-ary randomized response, unbiased estimate of one frequency f: Var = c(1 - c) / (n (p - q)^2)."""
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = 1.0 / (math.exp(eps) + k - 1)
    c = f * p + (1 - f) * q
    return c * (1 - c) / (n * (p - q) ** 2)


def test_variances_of_both_strategies_are_the_closed_form():
    qs = _question("a", labels='["x", "y", "z"]', distribution="[0.2, 0.3, 0.5]") + _question(
        "b", distribution="[0.9, 0.1]"
    )
    sc = parse_scenario(_text(qs, total=3.0, size=10_000))
    var = sc.questions.variance
    for row in var.to_dict("records"):
        k = 3 if row["question"] == "a" else 2
        assert row["var_split"] == pytest.approx(_rr_variance(row["truth"], k, 1.5, 10_000), rel=1e-9)
        assert row["var_one_random"] == pytest.approx(_rr_variance(row["truth"], k, 3.0, 5_000), rel=1e-9)


def _mse_band(variance: float, reps: int, alpha: float) -> tuple[float, float]:
    """Laurent-Massart: the mean of reps squared N(0, variance) errors lies in this band
    with probability >= 1 - alpha (alpha / 2 each side)."""
    x = math.log(2.0 / alpha)
    return variance * (1 - 2 * math.sqrt(x / reps)), variance * (1 + 2 * math.sqrt(x / reps) + 2 * x / reps)


def _mean_inverse_binomial(n: int, p: float) -> float:
    """E[1 / N] for N ~ Binomial(n, p) given N > 0 (P(N = 0) is below 1e-100 here)."""
    k = np.arange(1, n + 1)
    w = stats.binom.pmf(k, n, p)
    return float(np.sum(w / k) / np.sum(w))


@pytest.mark.parametrize(
    ("count", "total", "reps", "better"), sample([(4, 0.5, 300, "one_random"), (3, 12.0, 600, "split")])
)
def test_the_variance_ordering_of_the_exact_formulas_is_the_simulated_one(count, total, reps, better):
    """Estimates of question a's first answer over independent replications (n = 2,000
    respondents, binary randomized response, fair answers): the exact formulas predict which
    strategy is better (small budgets favour one question at the whole budget, large ones
    the split), and the simulated mean squared errors fall in bands around the exact
    variances (Laurent-Massart, FALSE_FAILURE over the two bands of the two cases; the estimates
    are scaled binomials of n / Q >= 500 reports, normal to well within the bands) that do
    not overlap, so the simulation orders the strategies as the formulas do."""
    n = 2000
    questions = "".join(_question(chr(ord("a") + j)) for j in range(count))
    mse, exact = {}, {}
    for strategy in ("split", "one_random"):
        sc = parse_scenario(_text(questions, total=total, strategy=strategy, size=n))
        var = sc.questions.variance.iloc[0]
        # under one_random the number of respondents of a question is Binomial(n, 1/Q): the
        # exact variance is the variance at one report times E[1 / N]
        exact[strategy] = (
            var["var_split"]
            if strategy == "split"
            else var["var_one_random"] * n / count * _mean_inverse_binomial(n, 1 / count)
        )
        errors = []
        for r in range(reps):
            rows = run_replication(sc, r, 20261202)
            f = rows[(rows["task"] == "a:frequency") & (rows["quantity"] == "frequency") & (rows["category"] == "x")]
            errors.append(float(f["estimate"].iloc[0] - 0.5))
        mse[strategy] = float(np.mean(np.square(errors)))
    predicted = "split" if exact["split"] < exact["one_random"] else "one_random"
    assert predicted == better
    bands = {s: _mse_band(exact[s], reps, FALSE_FAILURE / 4) for s in exact}
    for s, value in exact.items():
        assert bands[s][0] <= mse[s] <= bands[s][1], (s, mse[s], value, bands[s])
    worse = "one_random" if better == "split" else "split"
    assert bands[better][1] < bands[worse][0]  # the design separates the two
    assert mse[better] < mse[worse]


# --------------------------------------------------------------------- the engine
def _anes_text(size: str = "", strategy: str = "split", seed: int = 3, extra: str = "") -> str:
    qs = """
[[questions]]
name = "party_id"
mechanism = { kind = "randomized_response" }
[[questions]]
name = "ballot"
column = "vote"
mechanism = { kind = "randomized_response" }
"""
    return _text(
        qs, total=200.0, strategy=strategy, population=f'file = "data/anes96.csv"\n{size}', extra=extra, seed=seed
    )


def test_a_respondent_is_one_row_of_the_table_for_every_question():
    """The table used as is, split at eps 100 per question (a flip has probability about
    e^-100): the stored reports of the two questions, paired by arrival, are the table's
    own joint answers, row by row."""
    sc = parse_scenario(_anes_text(extra="[server]\nkeep_reports = true"), str(SCENARIOS / "t.toml"))
    rep = Replication(sc, 0, 5)
    rep.run()
    a, _ = rep.servers[0].stored_reports()
    b, _ = rep.servers[1].stored_reports()
    qa, qb = sc.questions.questions
    pairs = Counter(zip((qa.labels[i] for i in a), (qb.labels[i] for i in b)))
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        table = Counter((row["party_id"], row["vote"]) for row in csv.DictReader(f))
    assert pairs == table
    assert qb.column == "vote" and qb.labels == ["Clinton", "Dole"]


def test_one_random_sends_each_respondent_to_one_question():
    sc = parse_scenario(_anes_text("size = 30000", strategy="one_random"), str(SCENARIOS / "t.toml"))
    rows = run_replication(sc, 0, 11)
    end = rows[(rows["quantity"] == "frequency") & (rows["reason"] == "end")]
    per = end.groupby("task")["n_received"].first()
    received = rows[(rows["task"] == "engine") & (rows["quantity"] == "received")]["estimate"].iloc[0]
    assert per.sum() == received == 30_000
    # each question's count is Binomial(30000, 1/2): within 6 standard deviations (p < 2e-9)
    assert abs(per.iloc[0] - 15_000) < 6 * math.sqrt(30_000 / 4)


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    path = tmp_path / "q.toml"
    path.write_text(
        _text(
            _question("a") + _question("b", labels='["x", "y", "z"]', distribution="[0.2, 0.3, 0.5]"),
            strategy="one_random",
            size=3000,
        ).replace("seed = 1", "seed = 1\nreplications = 3")
    )
    summary = same_bytes_with_one_and_two_workers(path, tmp_path)
    assert "## Budget strategies" in summary and "exact privacy per respondent: eps = 2, delta = 0" in summary


def test_the_shipped_scenario_runs_small(tmp_path):
    text = (SCENARIOS / "anes96.toml").read_text().replace("size = 1_000_000", "size = 20_000")
    sc = parse_scenario(text, str(SCENARIOS / "anes96.toml"))
    names = ["party_id", "self_lr", "education", "vote", "income", "age"]
    assert [q.name for q in sc.questions.questions] == names
    assert _privacy(sc) == {"split": pytest.approx((2.0, 0.0)), "one_random": pytest.approx((2.0, 0.0))}
    result = run_scenario(sc, out=tmp_path / "run", progress=False)
    tasks = set(result.results["task"]) - {"engine"}
    want = {f"{q}:frequency" for q in names[:-1]} | {"income:ranges", "age:distribution"}
    assert tasks == want | {"education x vote:crosstab"}
    summary = (result.run_dir / "summary.md").read_text()
    assert "## Budget strategies" in summary and "## Distributions, quantiles and ranges" in summary
    assert "| income:ranges | under $30,000 |" in summary and "| age:distribution | 0.5 |" in summary
    assert "## Cross-tabulations" in summary
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        education = Counter(row["education"] for row in csv.DictReader(f))
    truth = result.results[
        (result.results["task"] == "education:frequency") & (result.results["quantity"] == "frequency")
    ]
    top = "Advanced degree"
    assert truth.groupby("category")["truth"].first()[top] == pytest.approx(education[top] / 944, rel=1e-12)


def test_an_interrupted_run_resumes_from_its_own_copy_of_the_table(tmp_path):
    import shutil

    from ldpsim.runs import RunInterrupted
    from ldpsim.sim import resume_run

    shutil.copytree(SCENARIOS / "data", tmp_path / "data")
    text = (SCENARIOS / "anes96.toml").read_text().replace("size = 1_000_000", "size = 3_000")
    (tmp_path / "a.toml").write_text(text.replace("replications = 1", "replications = 3"))
    full = run_scenario(tmp_path / "a.toml", out=tmp_path / "full", progress=False)
    with pytest.raises(RunInterrupted):
        run_scenario(tmp_path / "a.toml", out=tmp_path / "cut", progress=False, interrupt_after=1)
    shutil.rmtree(tmp_path / "data")  # the run kept its copy
    resume_run(tmp_path / "cut", progress=False)
    for name in ("results.csv", "summary.md"):
        assert (full.run_dir / name).read_bytes() == (tmp_path / "cut" / name).read_bytes()


# --------------------------------------------------------------------- numeric questions
def _ages() -> np.ndarray:
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        return np.array([float(row["age"]) for row in csv.DictReader(f)])


def _numeric_text(
    mechanism: str = "laplace_bounded",
    range_: str = "[18, 100]",
    strategy: str = "split",
    size: int = 2000,
    seed: int = 3,
) -> str:
    qs = f"""
[[questions]]
name = "vote"
mechanism = {{ kind = "randomized_response" }}
[[questions]]
name = "age"
type = "numeric"
range = {range_}
mechanism = {{ kind = "{mechanism}" }}
"""
    return _text(qs, total=2.0, strategy=strategy, population=f'file = "data/anes96.csv"\nsize = {size}', seed=seed)


def test_numeric_questions_account_and_have_the_exact_variance_of_the_mean():
    """Clipped Laplace on age in [18, 100]: a report's variance is 2 b^2 (b = 82 / eps) plus
    the variance of the answers themselves (respondents drawn from the 944 rows)."""
    sc = parse_scenario(_numeric_text(size=10_000), str(SCENARIOS / "t.toml"))
    assert _privacy(sc)["split"] == pytest.approx((2.0, 0.0), rel=1e-12)
    assert _privacy(sc)["one_random"] == pytest.approx((2.0, 0.0), rel=1e-12)
    ages = _ages()
    spread = float(np.mean((ages - ages.mean()) ** 2))
    row = sc.questions.variance.set_index("question").loc["age"]
    assert row["truth"] == pytest.approx(ages.mean(), rel=1e-12)
    assert row["var_split"] == pytest.approx((2 * 82.0**2 + spread) / 10_000, rel=1e-9)
    assert row["var_one_random"] == pytest.approx((2 * 41.0**2 + spread) / 5_000, rel=1e-9)


@pytest.mark.parametrize("mechanism", ["piecewise", "duchi"])
def test_the_mean_of_a_numeric_question_has_its_exact_variance(mechanism):
    """The simulated mean squared error of the mean age over independent replications lies
    in the Laurent-Massart band (FALSE_FAILURE) around the exact variance (the mean of n = 2,000
    bounded reports is normal to well within the band); the intervals use that variance."""
    sc = parse_scenario(_numeric_text(mechanism), str(SCENARIOS / "t.toml"))
    exact = float(sc.questions.variance.set_index("question").loc["age", "var_split"])
    reps, errors = 200, []
    for r in range(reps):
        rows = run_replication(sc, r, 99)
        m = rows[(rows["task"] == "age:mean") & (rows["quantity"] == "mean")].iloc[0]
        se = rows[(rows["task"] == "age:mean") & (rows["quantity"] == "std_error")].iloc[0]
        assert se["theory"] == pytest.approx(math.sqrt(exact), rel=1e-12)
        assert m["ci_high"] - m["estimate"] == pytest.approx(1.959963984540054 * math.sqrt(exact), rel=1e-9)
        errors.append(m["estimate"] - m["truth"])
    low, high = _mse_band(exact, reps, FALSE_FAILURE)
    assert low <= float(np.mean(np.square(errors))) <= high


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (
            lambda t: t.replace("[budget]", '[mechanism]\nkind = "randomized_response"\neps = 1.0\n[budget]'),
            "mechanism:",
        ),
        (
            lambda t: t.replace("end = 1.0", 'end = 1.0\nmode = "aggregate"').replace(
                '{ kind = "randomized_response" }', '{ kind = "olh" }', 1
            ),
            "questions[0].mechanism.kind:",
        ),  # aggregate mode: only oracles with an exact aggregate law
        (
            lambda t: t.replace('strategy = "split"', 'strategy = "one_random"').replace(
                'name = "b"', 'name = "b"\neps = 1.0'
            ),
            "questions[1].eps:",
        ),
        (lambda t: t.replace('name = "b"', 'name = "b"\neps = 1.0'), "questions[0].eps:"),
        (
            lambda t: t.replace('name = "a"', 'name = "a"\neps = 1.5').replace('name = "b"', 'name = "b"\neps = 1.0'),
            "budget.total:",
        ),
        (lambda t: t.replace('name = "b"', 'name = "a"'), "questions[1].name:"),
        (
            lambda t: t.replace('{ kind = "randomized_response" }', '{ kind = "randomized_response", eps = 1.0 }', 1),
            "questions[0].mechanism.eps:",
        ),
        (lambda t: t.replace('strategy = "split"', 'strategy = "all"'), "budget.strategy:"),
        (
            lambda t: t.replace("distribution = [0.5, 0.5]", "distribution = [0.5, 0.4]", 1),
            "questions[0].distribution:",
        ),
        (lambda t: t.replace('name = "a"', 'name = "a"\ntype = "numeric"'), "questions[0].density:"),
        (lambda t: t.replace('name = "a"', 'name = "a"\nrange = [0, 1]'), "questions[0].range:"),
    ],
)
def test_errors_are_one_line_naming_the_key(change, key):
    text = change(_text(_question("a") + _question("b")))
    with pytest.raises(LdpSimError) as info:
        parse_scenario(text, "q.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"q.toml: {key}"), message


def test_a_missing_column_names_the_question():
    text = _anes_text().replace('column = "vote"', 'column = "votes"')
    with pytest.raises(LdpSimError, match=r"t\.toml: questions\[1\]\.column: got column 'votes'"):
        parse_scenario(text, str(SCENARIOS / "t.toml"))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda t: t.replace("range = [18, 100]\n", ""), r"questions\[1\]\.range: got nothing"),
        (
            lambda t: t.replace("[18, 100]", "[18, 90]"),
            r"questions\[1\]\.column: data/anes96\.csv, line \d+ \(row \d+\), column 'age': got a number outside the "
            r"range, expected a number in the range \[18, 90\]",
        ),
        (
            lambda t: t.replace('kind = "laplace_bounded"', 'kind = "laplace"'),
            r"questions\[1\]\.mechanism\.kind: got 'laplace', expected a numeric mechanism",
        ),
        (
            lambda t: t.replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", lo = 0.0'),
            r"questions\[1\]\.mechanism\.lo:",
        ),
        (
            lambda t: t.replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", sampler = "exact"'),
            r"questions\[1\]\.mechanism\.sampler: got 'exact', expected one of 'float', 'discrete', 'snapped' for "
            r"laplace_bounded$",
        ),
        (
            lambda t: t.replace('kind = "laplace_bounded"', 'kind = "duchi", sampler = "discrete"'),
            r"questions\[1\]\.mechanism\.sampler: got 'discrete', expected one of 'float' for duchi$",
        ),
        (
            lambda t: t.replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", sampler = "discrete"').replace(
                "[18, 100]", "[18, 100.5]"
            ),
            r"questions\[1\]\.mechanism: hi: got 100\.5, expected an integer",
        ),
    ],
)
def test_numeric_errors_are_one_line(change, match):
    with pytest.raises(LdpSimError, match=r"^\S*t\.toml: " + match) as info:
        parse_scenario(change(_numeric_text()), str(SCENARIOS / "t.toml"))
    assert "\n" not in str(info.value)


def test_a_numeric_question_can_choose_the_exact_discrete_sampler():
    """``sampler = "discrete"``: integer ages plus discrete Laplace noise of scale 82/eps
    (Canonne, Kamath and Steinke 2020); every report is an integer, and the exact variance
    of the mean uses the discrete Laplace variance 2a/(1 - a)^2, a = e^(-eps/82), which is
    not the continuous 2 (82/eps)^2."""
    text = _numeric_text().replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", sampler = "discrete"')
    sc = parse_scenario(text, str(SCENARIOS / "t.toml"))
    ages = _ages()
    spread = float(np.mean((ages - ages.mean()) ** 2))
    a = math.exp(-1.0 / 82.0)  # eps = 1 per question (total 2 split over two)
    row = sc.questions.variance.set_index("question").loc["age"]
    assert row["var_split"] == pytest.approx((2 * a / (1 - a) ** 2 + spread) / 2000, rel=1e-9)
    mech = sc.questions.questions[1].mechanisms["split"]
    assert type(mech).__name__ == "DiscreteLaplaceBounded"
    reports = mech.privatize(ages[:500], np.random.default_rng(1))
    assert np.all(reports == np.round(reports))
    rows = run_replication(sc, 0, 99)
    assert rows[rows["task"] == "age:mean"].shape[0] >= 1


def test_a_numeric_question_can_choose_the_snapped_sampler():
    """``sampler = "snapped"``: Mironov's snapping with the dither that keeps the mean of the
    reports unbiased; the exact variance is the snapped report's, and the mean age of a
    replication falls in its 95% interval computed from it (one replication: a smoke check,
    the law is tested in tests/mechanisms/test_numeric_safe.py)."""
    text = _numeric_text(size=5000).replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", sampler = "snapped"')
    sc = parse_scenario(text, str(SCENARIOS / "t.toml"))
    mech = sc.questions.questions[1].mechanisms["split"]
    assert type(mech).__name__ == "SnappedLaplaceBounded" and mech.epsilon(0.0) <= 1.0
    ages = _ages()
    spread = float(np.mean((ages - ages.mean()) ** 2))
    row = sc.questions.variance.set_index("question").loc["age"]
    assert row["var_split"] == pytest.approx((float(mech.variance(40.0)) + spread) / 5000, rel=1e-9)
    rows = run_replication(sc, 0, 99)
    m = rows[(rows["task"] == "age:mean") & (rows["quantity"] == "mean")].iloc[0]
    assert abs(m["estimate"] - m["truth"]) <= 5 * math.sqrt(row["var_split"])


def test_the_discrete_sampler_names_the_first_answer_that_is_not_an_integer(tmp_path):
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[2][rows[0].index("age")] = "40.5"  # line 3 of the file
    (tmp_path / "data").mkdir()
    with (tmp_path / "data" / "anes96.csv").open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    text = _numeric_text().replace('kind = "laplace_bounded"', 'kind = "laplace_bounded", sampler = "discrete"')
    with pytest.raises(
        LdpSimError,
        match=(
            r"questions\[1\]\.column: data/anes96\.csv, line 3 .*"
            r"got a number that is not an integer, expected an integer"
        ),
    ) as info:
        parse_scenario(text, str(tmp_path / "t.toml"))
    assert "\n" not in str(info.value)
