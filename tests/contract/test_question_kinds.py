"""The question-kind contract (:mod:`ldpsim.sim.question_kinds`), over every registered kind.

Every kind has cases here (a test fails when a registered kind has none). For each case:
the same bytes whatever the workers; the linear estimates unbiased (or off by their stated
bias) and their stated exact variance equal to the empirical one over independent
replications, at the suite's false-failure probability; bad specifications refused in one
line naming the key. References are independent of the code under test: the answers'
mean and law from the CSV table itself, the bias of a bucketed mean from the bucket
midpoints, the bands from Laurent and Massart's chi-square bounds."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from ldpsim.sim.question_kinds import question_kinds
from tests.sim.helpers import SCENARIOS, same_bytes_with_one_and_two_workers
from tests.stats_checks import FALSE_FAILURE
from tests.tiers import sample

#: kind -> cases: (id, the [[questions]] entry, the task and quantity of its linear estimate,
#: its category)
CASES = {
    "categorical": [
        ("vote-rr", 'name = "vote"\nmechanism = { kind = "randomized_response" }', "vote:frequency", "frequency", None),
    ],
    "numeric": [
        (
            "age-square-wave-mean",
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nmechanism = { kind = "square_wave" }',
            "age:mean",
            "mean",
            "",
        ),
        (
            "age-oue-buckets",
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nbins = 16\nestimate = ["mean", "distribution"]\n'
            'mechanism = { kind = "oue" }',
            "age:mean",
            "mean",
            "",
        ),
        (
            "income-beta-density-piecewise",
            'name = "income"\nkind = "numeric"\nrange = [0, 200]\ndensity = { kind = "beta", a = 2, b = 5 }\n'
            'mechanism = { kind = "piecewise" }',
            "income:mean",
            "mean",
            "",
        ),
        (
            "age-square-wave-distribution",
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nbins = 32\nbootstrap = 20\n'
            'estimate = ["mean", "distribution", "quantiles"]\nmechanism = { kind = "square_wave" }',
            "age:mean",
            "mean",
            "",
        ),
    ],
}
INCOME = (
    '["None or less than $2,999", "$3,000-$4,999", "$5,000-$6,999", "$7,000-$8,999", "$9,000-$9,999", '
    '"$10,000-$10,999", "$11,000-$11,999", "$12,000-$12,999", "$13,000-$13,999", "$14,000-$14,999", '
    '"$15,000-$16,999", "$17,000-$19,999", "$20,000-$21,999", "$22,000-$24,999", "$25,000-$29,999", '
    '"$30,000-$34,999", "$35,000-$39,999", "$40,000-$44,999", "$45,000-$49,999", "$50,000-$59,999", '
    '"$60,000-$74,999", "$75,000-$89,999", "$90,000-$104,999", "$105,000 and over"]'
)
UNDER_30K = 'ranges = [{ name = "under 30k", first = "None or less than $2,999", last = "$25,000-$29,999" }]'
CASES["ordinal"] = [
    (
        "income-hierarchical",
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\n{UNDER_30K}\nquantiles = [0.5]\n'
        'mechanism = { kind = "hierarchical", fanout = 3 }',
        "income:ranges",
        "range",
        "under 30k",
    ),
    (
        "income-haar",
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\n{UNDER_30K}\nmechanism = {{ kind = "haar" }}',
        "income:ranges",
        "range",
        "under 30k",
    ),
    (
        "income-flat-oue",
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\n{UNDER_30K}\nmechanism = {{ kind = "oue" }}',
        "income:ranges",
        "range",
        "under 30k",
    ),
]
ITEMS = '["tv", "radio", "newspaper", "web", "social"]'
INCLUSION = [0.6, 0.3, 0.25, 0.55, 0.4]
CASES["multiselect"] = [
    (
        "news-padding-2",
        f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\ninclusion = {INCLUSION}\n'
        'mechanism = { kind = "padding", padding = 2 }',
        "news:items",
        "item",
        "tv",
    ),
]
KEYS = '["mail", "maps", "music", "chat"]'
PRESENCE = [0.8, 0.5, 0.4, 0.7]
MEANS = [0.2, -0.5, 0.6, 0.1]
KV = f'name = "apps"\nkind = "keyvalue"\nlabels = {KEYS}\ninclusion = {PRESENCE}\nvalues = {MEANS}\n'
CASES["keyvalue"] = [
    ("apps-pckv-2", KV + 'mechanism = { kind = "pckv", padding = 2 }', "apps:keys", "key_frequency", "maps"),
]
ALL = [(kind, *case) for kind, cases in CASES.items() for case in cases]
IDS = [f"{kind}-{case[0]}" for kind, cases in CASES.items() for case in cases]


def _text(question: str, size: int = 2000, seed: int = 3, replications: int = 1) -> str:
    # a question with a law of its own (multiselect's inclusion) needs no table
    # a question with a law of its own (multiselect, keyvalue, a numeric density) needs no table
    table = 'file = "data/anes96.csv"\n' if "inclusion" not in question and "density" not in question else ""
    return f"""
name = "kinds"
[population]
{table}size = {size}
[budget]
total = 1.0
strategy = "split"
[[questions]]
{question}
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
seed = {seed}
end = 1.0
tick = 1.0
replications = {replications}
"""


def _column(name: str) -> list[str]:
    with (SCENARIOS / "data" / "anes96.csv").open(newline="", encoding="utf-8") as f:
        return [row[name] for row in csv.DictReader(f)]


def _parse(text: str):
    return parse_scenario(text, str(SCENARIOS / "t.toml"))


def test_every_registered_kind_has_cases():
    assert sorted(question_kinds()) == sorted(CASES)


@pytest.mark.parametrize(("kind", "case", "question", "task", "quantity", "category"), ALL, ids=IDS)
def test_same_bytes_whatever_the_workers(kind, case, question, task, quantity, category, tmp_path):
    text = _text(question, size=3000, replications=2)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "anes96.csv").write_bytes((SCENARIOS / "data" / "anes96.csv").read_bytes())
    path = tmp_path / "s.toml"
    path.write_text(text)
    same_bytes_with_one_and_two_workers(path, tmp_path)


def _band(variance: float, reps: int, alpha: float) -> tuple[float, float]:
    """Laurent-Massart: the mean of reps squared N(0, variance) errors lies in this band
    with probability >= 1 - alpha."""
    x = math.log(2.0 / alpha)
    return variance * (1 - 2 * math.sqrt(x / reps)), variance * (1 + 2 * math.sqrt(x / reps) + 2 * x / reps)


def _truth_and_bias(kind: str, case: str, sc) -> tuple[float, float, str]:
    """The truth of the linear estimate from the table itself, and its stated bias."""
    if kind == "keyvalue":  # every set of the 4 independent keys, enumerated here
        import itertools

        bias, ell = 0.0, 2
        for bits in itertools.product([0, 1], repeat=4):
            pr = math.prod(p if b else 1 - p for p, b in zip(PRESENCE, bits))
            if bits[1]:
                bias += pr * (ell / max(sum(bits), ell) - 1)
        return PRESENCE[1], bias, "maps"
    if kind == "multiselect":  # every set of the 5 independent items, enumerated here
        import itertools

        shares, bias, ell = 0.0, 0.0, 2
        for bits in itertools.product([0, 1], repeat=5):
            pr = math.prod(p if b else 1 - p for p, b in zip(INCLUSION, bits))
            if bits[0]:
                shares += pr
                bias += pr * (ell / max(sum(bits), ell) - 1)
        return shares, bias, "tv"
    if kind == "ordinal":  # the share of the table's rows in the first 15 brackets
        answers = _column("income")
        labels = sc.questions.questions[0].labels
        return sum(a in labels[:15] for a in answers) / len(answers), 0.0, "under 30k"
    if kind == "categorical":
        answers = _column("vote")
        label = sc.questions.questions[0].labels[0]
        return answers.count(label) / len(answers), 0.0, label
    if "density" in case:  # Beta(2, 5) over [0, 200]: mean 200 * 2 / 7
        return 400 / 7, 0.0, ""
    ages = np.array([float(a) for a in _column("age")])
    q = sc.questions.questions[0]
    if "buckets" in case:  # the bucket midpoints' mean: its bias, computed here from the edges
        edges = np.linspace(18, 100, q.bins + 1)
        idx = np.clip(np.searchsorted(edges, ages, side="right") - 1, 0, q.bins - 1)
        mids = (edges[:-1] + edges[1:]) / 2
        return float(ages.mean()), float(mids[idx].mean() - ages.mean()), ""
    return float(ages.mean()), 0.0, ""


@pytest.mark.parametrize(
    ("kind", "case", "question", "task", "quantity", "category"), sample(ALL, keep=[0, 1, 2, 3, 5, 6, 8, 9]), ids=IDS
)
def test_linear_estimates_are_unbiased_or_off_by_their_stated_bias_with_their_stated_variance(
    kind, case, question, task, quantity, category
):
    sc = _parse(_text(question))
    truth, bias, label = _truth_and_bias(kind, case, sc)
    # the budget table names a numeric question's mean "mean"; its result rows have no category
    cat = label if category is None else category
    if kind in ("ordinal", "multiselect", "keyvalue"):
        cat = category
    var = sc.questions.variance.set_index(["question", "category"]).loc[(sc.questions.questions[0].name, cat or "mean")]
    assert var["truth"] == pytest.approx(truth, rel=1e-12)
    exact = float(var["var_split"])
    reps, errors = 150, []
    for r in range(reps):
        rows = run_replication(sc, r, 11)
        mine = rows[(rows["task"] == task) & (rows["quantity"] == quantity)]
        row = mine[mine["category"] == cat].iloc[0] if cat else mine.iloc[0]
        assert row["truth"] == pytest.approx(truth, rel=1e-12)
        errors.append(row["estimate"] - truth - bias)
    errors = np.array(errors)
    z = stats.norm.isf(FALSE_FAILURE / 4)
    assert abs(errors.mean()) <= z * math.sqrt(exact / reps)
    low, high = _band(exact, reps, FALSE_FAILURE / 2)
    assert low <= float(np.mean(errors**2)) <= high


def test_a_bucketed_numeric_question_states_its_midpoint_bias_and_exact_cdf_errors():
    """The distribution function of a frequency oracle over buckets: rows at every edge,
    the exact standard error (theory) from the oracle's exact covariance, summed here by
    hand; the set-up line states the midpoint mean's bias."""
    sc = _parse(_text(CASES["numeric"][1][1], size=4000))
    q = sc.questions.questions[0]
    ages = np.array([float(a) for a in _column("age")])
    edges = np.linspace(18, 100, 17)
    idx = np.clip(np.searchsorted(edges, ages, side="right") - 1, 0, 15)
    hist = np.bincount(idx, minlength=16) / ages.size
    assert f"{float(((edges[:-1] + edges[1:]) / 2)[idx].mean() - ages.mean()):.4g}" in q.describe()
    rows = run_replication(sc, 0, 5)
    cdf = rows[(rows["task"] == "age:distribution") & (rows["quantity"] == "cdf")]
    assert list(cdf["category"]) == [f"{e:g}" for e in edges[1:]]
    assert np.allclose(cdf["truth"], np.cumsum(hist), rtol=0, atol=1e-12)
    n = int(cdf["n_received"].iloc[0])
    cov = sc.mechanisms[0][1].estimate_covariance(hist, n)
    se = [math.sqrt(max(cov[: j + 1, : j + 1].sum(), 0.0)) for j in range(16)]
    assert np.allclose(cdf["theory"], se, rtol=1e-9, atol=1e-15)


def test_square_wave_distribution_rows_are_a_distribution_with_bootstrap_intervals():
    sc = _parse(_text(CASES["numeric"][3][1], size=20_000))
    rows = run_replication(sc, 0, 5)
    dist = rows[rows["task"] == "age:distribution"]
    cdf = dist[dist["quantity"] == "cdf"]
    assert len(cdf) == 32
    assert np.all(np.diff(cdf["estimate"]) >= -1e-12) and cdf["estimate"].iloc[-1] == pytest.approx(1.0)
    assert np.all(cdf["ci_low"] <= cdf["ci_high"])
    quant = dist[dist["quantity"] == "quantile"]
    assert list(quant["category"]) == ["0.1", "0.25", "0.5", "0.75", "0.9"]
    ages = np.array([float(a) for a in _column("age")])
    assert np.allclose(quant["truth"], np.quantile(ages, [0.1, 0.25, 0.5, 0.75, 0.9]))
    assert np.all(quant["ci_low"] <= quant["ci_high"])
    assert np.all(np.diff(quant["estimate"]) >= 0)
    w1 = dist[dist["quantity"] == "wasserstein1"].iloc[0]
    assert 0 <= w1["estimate"] < 5.0  # years: the age range is 82 wide


BAD_ORDINAL = [
    (f'name = "income"\nkind = "ordinal"\n{UNDER_30K}\nmechanism = {{ kind = "haar" }}', r"questions\[0\]\.labels: "),
    (
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\n{UNDER_30K.replace("$25,000-$29,999", "$25k")}\n'
        'mechanism = { kind = "haar" }',
        r"questions\[0\]\.ranges\[0\]\.last: got '\$25k'",
    ),
    (
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\nmechanism = {{ kind = "hierarchical", fanout = 1 }}',
        r"questions\[0\]\.mechanism\.fanout: ",
    ),
    (
        f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\n'
        'mechanism = { kind = "hierarchical", oracle = "oue" }',
        r"questions\[0\]\.mechanism\.oracle: ",
    ),
    (f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\nmechanism = {{ kind = "tree" }}', r"mechanism\.kind: "),
    (f'name = "income"\nkind = "ordinal"\nlabels = {INCOME}\nbins = 4\nmechanism = {{ kind = "haar" }}', r"\.bins: "),
]
BAD_MULTISELECT = [
    (
        f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\ninclusion = [0.5]\nmechanism = {{ kind = "padding" }}',
        r"questions\[0\]\.inclusion: got \[0\.5\], expected one probability per item \(5\)",
    ),
    (
        f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\ninclusion = {INCLUSION}\n'
        'mechanism = { kind = "padding", padding = 9 }',
        r"questions\[0\]\.mechanism\.padding: got 9",
    ),
    (
        f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\ninclusion = {INCLUSION}\n'
        'mechanism = { kind = "oue" }',
        r"questions\[0\]\.mechanism\.kind: got 'oue', expected 'padding'",
    ),
]
BAD_KEYVALUE = [
    (KV.replace(f"values = {MEANS}", "values = [0.2, 2.0, 0.6, 0.1]") + 'mechanism = { kind = "pckv" }', r"\.values: "),
    (KV + 'mechanism = { kind = "pckv", padding = 5 }', r"questions\[0\]\.mechanism\.padding: got 5"),
    (KV + 'mechanism = { kind = "pckv", value_share = 1.0 }', r"questions\[0\]\.mechanism\.value_share: "),
    (KV + 'mechanism = { kind = "olh" }', r"questions\[0\]\.mechanism\.kind: got 'olh', expected 'pckv'"),
]
BAD = {
    "keyvalue": BAD_KEYVALUE,
    "multiselect": BAD_MULTISELECT,
    "ordinal": BAD_ORDINAL,
    "categorical": [
        ('name = "vote"\nrange = [0, 1]\nmechanism = { kind = "randomized_response" }', r"questions\[0\]\.range: "),
        ('name = "vote"\nbins = 4\nmechanism = { kind = "randomized_response" }', r"questions\[0\]\.bins: "),
    ],
    "numeric": [
        ('name = "age"\nkind = "numeric"\nmechanism = { kind = "square_wave" }', r"questions\[0\]\.range: got nothing"),
        (
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nestimate = ["median"]\n'
            'mechanism = { kind = "square_wave" }',
            r"questions\[0\]\.estimate: got 'median', expected some of mean, distribution, quantiles",
        ),
        (
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nestimate = ["quantiles"]\n'
            'mechanism = { kind = "piecewise" }',
            r"questions\[0\]\.mechanism\.kind: got 'piecewise' with estimate",
        ),
        (
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nestimate = ["quantiles"]\nquantiles = [0.5, 1.5]\n'
            'mechanism = { kind = "square_wave" }',
            r"questions\[0\]\.quantiles: ",
        ),
        (
            'name = "age"\nkind = "numeric"\nrange = [18, 100]\nbins = 8\nmechanism = { kind = "square_wave" }',
            r"questions\[0\]\.bins: ",
        ),
        ('name = "age"\nkind = "numerik"\nrange = [18, 100]\nmechanism = { kind = "square_wave" }', r"did you mean"),
        (
            'name = "age"\nkind = "numeric"\ntype = "numeric"\nrange = [18, 100]\nmechanism = { kind = "square_wave" }',
            r"questions\[0\]\.type: ",
        ),
    ],
}


@pytest.mark.parametrize(("kind", "question", "match"), [(k, q, m) for k, cases in BAD.items() for q, m in cases])
def test_bad_specs_are_one_line_naming_the_key(kind, question, match):
    with pytest.raises(LdpSimError, match=match) as info:
        _parse(_text(question))
    assert "\n" not in str(info.value)


def test_every_kind_has_bad_specs():
    assert sorted(BAD) == sorted(question_kinds())


def test_nothing_outside_the_registry_asks_which_kind_a_question_is():
    """No module outside ``ldpsim/sim/question_kinds/`` names a kind's class or compares a
    kind's name (``== "numeric"``): the loader, the engine and the report ask the question."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "ldpsim"
    classes = {"CategoricalQuestion", "NumericQuestion"}
    found = []
    for path in sorted(package.rglob("*.py")):
        if "question_kinds" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Name)
                and node.id in classes
                or isinstance(node, ast.Attribute)
                and node.attr in classes
            ):
                found.append(f"{path.relative_to(package)}:{node.lineno}: names a question kind's class")
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(isinstance(s, ast.Constant) and s.value in question_kinds() for s in sides):
                    found.append(f"{path.relative_to(package)}:{node.lineno}: compares a question kind's name")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("ell", [1, 2, 3])
def test_padding_and_sampling_has_the_exact_eps_of_its_closed_form_by_brute_force(ell):
    """Every pair of sets of 3 items, every report: the largest log ratio of report
    probabilities (each report's probability summed over the padded set, randomized
    response over the items and the distinct dummies at eps0) is log((e^eps0 + l - 1) / l).
    With one shared dummy symbol it would be eps0 itself: the amplified eps is not valid."""
    import itertools

    from ldpsim.sim.question_kinds.multiselect import padded_eps, padding_eps0

    k, eps = 3, 1.0
    eps0 = padding_eps0(eps, ell)

    def worst(shared: bool) -> float:
        m = k + (1 if shared else ell)
        e = math.exp(eps0)
        rr = np.full((m, m), 1 / (e + m - 1))
        np.fill_diagonal(rr, e / (e + m - 1))
        rows = []
        for bits in itertools.product([0, 1], repeat=k):
            items = [i for i in range(k) if bits[i]]
            pad = [k if shared else k + j for j in range(max(0, ell - len(items)))]
            padded = items + pad
            rows.append(rr[padded].mean(axis=0))
        rows = np.array(rows)
        return float(np.max(np.log(rows[:, None, :] / rows[None, :, :])))

    assert worst(shared=False) == pytest.approx(padded_eps(eps0, ell), rel=1e-12)
    assert worst(shared=False) == pytest.approx(eps, rel=1e-12)  # the budget's eps is the exact one
    if ell > 1:
        assert worst(shared=True) == pytest.approx(eps0, rel=1e-12) and eps0 > eps


@pytest.mark.parametrize("k", [5, 18])  # the table of every set, and the path past 16 items
def test_padding_and_sampling_picks_each_slot_of_the_padded_set_uniformly(k):
    """For sets of 0, 1, 3 and all 5 first items (padding 2): the sampled symbol's counts
    over 60,000 respondents against uniform over the padded set (items, then dummies
    d_1 .. d_(l - |S|)), by Pearson's chi-square test at the suite's false-failure probability."""
    from ldpsim.sim.question_kinds.multiselect import PaddingSampling

    ps = PaddingSampling(k, 2, 1.0)
    rng = np.random.default_rng(5)
    for items in ([], [1], [0, 2, 4], [0, 1, 2, 3, 4]):
        mask = sum(1 << i for i in items)
        padded = items + [k + j for j in range(max(0, 2 - len(items)))]
        got = np.bincount(ps.sample_items(np.full(60_000, mask, dtype=np.int64), rng), minlength=k + 2)
        assert got[[s for s in range(k + 2) if s not in padded]].sum() == 0
        expected = 60_000 / len(padded)
        chi2 = float(((got[padded] - expected) ** 2 / expected).sum())
        assert len(padded) == 1 or stats.chi2.sf(chi2, len(padded) - 1) > FALSE_FAILURE / 8


@pytest.mark.parametrize(("ell", "share"), [(1, 0.5), (2, 0.3), (3, 0.7)])
def test_pckv_exact_eps_is_its_closed_form_by_brute_force(ell, share):
    """Every pair of key-value sets over 3 keys, values +-1 (the extremes a value's
    discretisation can reach), every report: the largest log ratio of report probabilities
    is the closed form's, and the scenario's split of eps1 and eps2 makes it the budget's."""
    import itertools

    from ldpsim.sim.question_kinds.keyvalue import PCKV

    d, eps = 3, 1.0
    mech = PCKV(d, ell, eps, share)
    keys = d + ell
    rows = []
    for held in itertools.product([0, 1], repeat=d):
        for signs in itertools.product([1, -1], repeat=d):
            pairs = [(k, signs[k]) for k in range(d) if held[k]]
            pairs += [(d + j, 0) for j in range(max(0, ell - len(pairs)))]
            row = np.zeros(2 * keys)
            for k, v in pairs:
                for out_k in range(keys):
                    for out_s in (1, -1):
                        if out_k == k:
                            up = (1 + v) / 2  # the discretised value is +1 with this probability
                            same = up if out_s == 1 else 1 - up
                            pr = mech.a * (mech.p * same + (1 - mech.p) * (1 - same))
                        else:
                            pr = mech.b / 2
                        row[2 * out_k + (out_s < 0)] += pr / len(pairs)
            rows.append(row)
    rows = np.array(rows)
    worst = float(np.max(np.log(rows[:, None, :] / rows[None, :, :])))
    assert worst == pytest.approx(mech.epsilon(), rel=1e-9)
    assert mech.epsilon() == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize("total", [1e-300, 800.0])
@pytest.mark.parametrize("kind", ["numeric", "ordinal", "multiselect", "keyvalue"])
def test_every_kind_at_extreme_eps_runs_or_is_refused_in_one_line(kind, total, tmp_path):
    """What the scenario fuzzer found in the new kinds (eps 1e-300 and 800 through the
    budget): overflowing eps conversions, singular consistency weights, 0/0 in the naive
    design and in a key nobody holds, a report table before any report. Each now runs to
    its report or is refused in one line, through the harness's own check."""
    from tests.sim.fuzz import check_run

    cases = {
        "numeric": CASES["numeric"][1][1],
        "ordinal": CASES["ordinal"][1][1],
        "multiselect": CASES["multiselect"][0][1],
        "keyvalue": KV.replace("inclusion = [0.8, 0.5, 0.4, 0.7]", "inclusion = [0.8, 0.0, 0.4, 0.7]")
        + 'mechanism = { kind = "pckv", padding = 2, value_share = 1e-06 }',
    }
    text = _text(cases[kind], size=50).replace("total = 1.0", f"total = {total!r}")
    check_run(text, tmp_path)
