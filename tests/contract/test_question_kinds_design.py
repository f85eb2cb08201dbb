"""The question-kind contract under a survey design (``[population] weight, strata, psu``).

Every registered kind gives design estimates (a question whose estimates are not linear
in its reports, such as a numeric distribution alone, is refused in one line). Over
independent replications of the privacy noise on one weighted, stratified table: the
weighted estimate is unbiased for the weighted truth, the truth is the Hajek estimate of
the table's own answers (computed here with plain sums), the stated privacy variance is
the empirical one (Laurent and Massart's chi-square band at the suite's false-failure
probability), and the stated design standard error is the with-replacement
linearisation written out here as loops over strata and PSUs. The same bytes whatever
the workers."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from ldpsim.sim.question_kinds import question_kinds
from tests.sim.helpers import same_bytes_with_one_and_two_workers
from tests.stats_checks import FALSE_FAILURE

ROWS = 1200
ANSWERS = ["a", "b", "c"]
BRACKETS = ["0-9", "10-19", "20-29", "30-39", "40-49", "50+"]
ITEMS = ["tv", "radio", "web", "print"]
KEYS = ["mail", "maps", "chat"]


def _held(row: dict[str, str]) -> dict[str, float]:
    return {k: float(v) for k, v in (p.split("=") for p in row["apps"].split(";") if p)}


def _table() -> list[dict[str, str]]:
    """A synthetic design sample: 4 strata of 3 PSUs, weights 1 to 10, answers whose law
    depends on the stratum (so the design matters)."""
    rng = np.random.default_rng(20261207)
    rows = []
    for r in range(ROWS):
        h = r % 4
        law = np.roll([0.5, 0.3, 0.2], h)
        items = [it for it, p in zip(ITEMS, [0.6, 0.4, 0.5, 0.2]) if rng.random() < p]
        apps = [f"{k}={rng.uniform(-1, 1):.3f}" for k, p in zip(KEYS, [0.7, 0.5, 0.3]) if rng.random() < p]
        rows.append(
            {
                "stratum": f"S{h}",
                "psu": str((r // 4) % 3),
                "weight": f"{rng.integers(1, 11)}",
                "answer": ANSWERS[rng.choice(3, p=law)],
                "bracket": BRACKETS[min(5, int(rng.integers(0, 6 + h)))],
                "value": f"{rng.uniform(0, 100):.3f}",
                "news": ";".join(items),
                "apps": ";".join(apps),
            }
        )
    return rows


#: kind -> (id, the [[questions]] entry, its design label, the true value of each row)
CASES = {
    "categorical": [
        (
            "answer-oue",
            'name = "answer"\nlabels = ["a", "b", "c"]\nmechanism = { kind = "oue" }',
            "b",
            lambda row: float(row["answer"] == "b"),
        ),
        (
            "answer-olh",
            'name = "answer"\nlabels = ["a", "b", "c"]\nmechanism = { kind = "olh" }',
            "c",
            lambda row: float(row["answer"] == "c"),
        ),
    ],
    "ordinal": [
        (
            "bracket-hierarchical",
            f'name = "bracket"\nkind = "ordinal"\nlabels = {BRACKETS}\n'
            'ranges = [{ name = "under 30", first = "0-9", last = "20-29" }]\n'
            'mechanism = { kind = "hierarchical", fanout = 2 }',
            "under 30",
            lambda row: float(BRACKETS.index(row["bracket"]) <= 2),
        ),
    ],
    "numeric": [
        (
            "value-piecewise",
            'name = "value"\nkind = "numeric"\nrange = [0, 100]\nmechanism = { kind = "piecewise" }',
            "mean",
            lambda row: float(row["value"]),
        ),
        (
            "value-oue-buckets",
            'name = "value"\nkind = "numeric"\nrange = [0, 100]\nbins = 10\nestimate = ["mean", "distribution"]\n'
            'mechanism = { kind = "oue" }',
            "mean",
            lambda row: min(9, int(float(row["value"]) // 10)) * 10 + 5.0,  # the bucket's midpoint
        ),
    ],
    "multiselect": [
        (
            "news-padding-2",
            f'name = "news"\nkind = "multiselect"\nlabels = {ITEMS}\nmechanism = {{ kind = "padding", padding = 2 }}',
            "web",
            # what padding and sampling estimates: l 1{web in S} / max(|S|, l)
            lambda row: 2.0 * ("web" in row["news"].split(";")) / max(len([p for p in row["news"].split(";") if p]), 2),
        ),
    ],
}
CASES["keyvalue"] = [
    (
        "apps-pckv-frequency",
        f'name = "apps"\nkind = "keyvalue"\nlabels = {KEYS}\nmechanism = {{ kind = "pckv", padding = 2 }}',
        "maps",
        # what PCKV's frequency estimates: l 1{maps in S} / max(|S|, l)
        lambda row: 2.0 * ("maps" in _held(row)) / max(len(_held(row)), 2),
    ),
    (
        "apps-pckv-value",
        f'name = "apps"\nkind = "keyvalue"\nlabels = {KEYS}\nmechanism = {{ kind = "pckv", padding = 2 }}',
        "mail (value)",
        lambda row: 2.0 * _held(row).get("mail", 0.0) / max(len(_held(row)), 2),
    ),
]
#: ratios: (id, question, label, numerator and denominator of each row)
RATIOS = [
    (
        "apps-pckv-mean",
        CASES["keyvalue"][0][1],
        "mail (mean)",
        lambda row: 2.0 * _held(row).get("mail", 0.0) / max(len(_held(row)), 2),
        lambda row: 2.0 * ("mail" in _held(row)) / max(len(_held(row)), 2),
    ),
]
#: specifications refused under a design, with the words of the refusal
REFUSED = {
    "numeric-distribution-only": (
        'name = "value"\nkind = "numeric"\nrange = [0, 100]\nbins = 8\nestimate = ["distribution"]\n'
        'mechanism = { kind = "square_wave" }',
        "estimate to include 'mean'",
    ),
}
ALL = [(kind, *case) for kind, cases in CASES.items() for case in cases]
IDS = [f"{kind}-{case[0]}" for kind, cases in CASES.items() for case in cases]


def _write(tmp_path, question: str, replications: int = 1, total: float = 1.0) -> str:
    rows = _table()
    with (tmp_path / "design.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    text = f"""
name = "design"
[population]
file = "design.csv"
weight = "weight"
strata = "stratum"
psu = "psu"
[budget]
total = {total}
strategy = "split"
[[questions]]
{question}
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
seed = 5
end = 1.0
tick = 1.0
replications = {replications}
"""
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


def test_every_registered_kind_has_design_cases():
    assert sorted(question_kinds()) == sorted(CASES)


def _linearised(values: np.ndarray, rows: list[dict[str, str]]) -> float:
    """The with-replacement linearised variance of the Hajek mean, as loops over strata and
    PSUs (the textbook formula, independent of ldpsim.analyst.survey_design)."""
    w = np.array([float(r["weight"]) for r in rows])
    total = w.sum()
    theta = float(w @ values) / total
    variance = 0.0
    for h in sorted({r["stratum"] for r in rows}):
        psus = sorted({r["psu"] for r in rows if r["stratum"] == h})
        z = []
        for c in psus:
            inside = [i for i, r in enumerate(rows) if r["stratum"] == h and r["psu"] == c]
            z.append(sum(w[i] * (values[i] - theta) for i in inside) / total)
        mean = sum(z) / len(z)
        variance += len(z) / (len(z) - 1) * sum((zc - mean) ** 2 for zc in z)
    return variance


@pytest.mark.parametrize(("kind", "case", "question", "label", "value"), ALL, ids=IDS)
def test_design_estimates_are_unbiased_with_their_stated_privacy_variance(kind, case, question, label, value, tmp_path):
    sc = parse_scenario(open(_write(tmp_path, question)).read(), _write(tmp_path, question))
    rows = _table()
    x = np.array([value(r) for r in rows])
    w = np.array([float(r["weight"]) for r in rows])
    truth = float(w @ x) / w.sum()
    design_var = _linearised(x, rows)
    reps, errors, privacy = 120, [], None
    name = sc.questions.questions[0].name
    for r in range(reps):
        out = run_replication(sc, r, 11)
        mine = out[(out["task"] == f"{name}:design") & (out["category"] == label)]
        row = mine[mine["quantity"] == "weighted"].iloc[-1]
        assert row["truth"] == pytest.approx(truth, rel=1e-9)
        design = mine[mine["quantity"] == "design_se"].iloc[-1]["theory"]
        assert design**2 == pytest.approx(design_var, rel=1e-9)
        privacy = mine[mine["quantity"] == "privacy_se"].iloc[-1]["theory"] ** 2
        errors.append(row["estimate"] - truth)
    errors_arr = np.array(errors)
    z = stats.norm.isf(FALSE_FAILURE / 4)
    assert abs(errors_arr.mean()) <= z * math.sqrt(privacy / reps)
    x_ = math.log(4.0 / FALSE_FAILURE)
    low = privacy * (1 - 2 * math.sqrt(x_ / reps))
    high = privacy * (1 + 2 * math.sqrt(x_ / reps) + 2 * x_ / reps)
    assert low <= float(np.mean(errors_arr**2)) <= high


@pytest.mark.parametrize(("kind", "case", "question", "label", "value"), ALL[:1] + ALL[-1:], ids=IDS[:1] + IDS[-1:])
def test_design_rows_are_the_same_bytes_whatever_the_workers(kind, case, question, label, value, tmp_path):
    same_bytes_with_one_and_two_workers(_write(tmp_path, question, replications=2), tmp_path)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_question_without_design_estimates_is_refused_in_one_line(case, tmp_path):
    question, words = REFUSED[case]
    path = _write(tmp_path, question)
    with pytest.raises(LdpSimError, match=words) as info:
        parse_scenario(open(path).read(), path)
    assert "\n" not in str(info.value) and "population.weight" in str(info.value)


@pytest.mark.parametrize(("case", "question", "label", "numerator", "denominator"), RATIOS, ids=[r[0] for r in RATIOS])
def test_a_ratio_is_consistent_with_its_delta_method_privacy_variance(
    case, question, label, numerator, denominator, tmp_path
):
    """A ratio of two design estimates (a key's mean value among its holders): its truth is
    the ratio of the weighted sums (computed here), its design variance the linearisation
    of the ratio written out as loops, and its spread over replications the delta method's
    privacy variance (an approximation: a band twice as wide as the chi-square's)."""
    path = _write(tmp_path, question, total=6.0)  # a denominator far from 0: where the delta method holds
    sc = parse_scenario(open(path).read(), path)
    rows = _table()
    num = np.array([numerator(r) for r in rows])
    den = np.array([denominator(r) for r in rows])
    w = np.array([float(r["weight"]) for r in rows])
    ratio = float(w @ num) / float(w @ den)
    # the ratio's linearisation: the Hajek variance of (num - r den) / t_den
    design_var = _linearised((num - ratio * den) / (float(w @ den) / w.sum()), rows)
    reps, errors, privacy = 200, [], None
    for r in range(reps):
        out = run_replication(sc, r, 13)
        mine = out[(out["task"] == "apps:design") & (out["category"] == label)]
        row = mine[mine["quantity"] == "weighted"].iloc[-1]
        assert row["truth"] == pytest.approx(ratio, rel=1e-9)
        assert mine[mine["quantity"] == "design_se"].iloc[-1]["theory"] ** 2 == pytest.approx(design_var, rel=1e-9)
        privacy = mine[mine["quantity"] == "privacy_se"].iloc[-1]["theory"] ** 2
        errors.append(row["estimate"] - ratio)
    errors_arr = np.array(errors)
    z = stats.norm.isf(FALSE_FAILURE / 4)
    assert abs(errors_arr.mean()) <= z * math.sqrt(privacy / reps) + 2 * privacy  # the ratio's O(1/n) bias
    x_ = math.log(4.0 / FALSE_FAILURE)
    assert privacy * (1 - 4 * math.sqrt(x_ / reps)) <= float(np.mean(errors_arr**2))
    assert float(np.mean(errors_arr**2)) <= privacy * (1 + 4 * math.sqrt(x_ / reps) + 4 * x_ / reps)


@pytest.mark.parametrize(("kind", "case", "question", "label", "value"), ALL, ids=IDS)
def test_every_report_term_lies_within_the_width_the_kind_states(kind, case, question, label, value, tmp_path):
    """``design_ranges`` (what the betting tests rely on): over 20,000 reports of every
    kind's design cases, each entry of the terms spreads over at most its stated width."""
    sc = parse_scenario(open(_write(tmp_path, question)).read(), _write(tmp_path, question))
    qs = sc.questions
    q, mech = qs.questions[0], qs.mechanism(0)
    rng = np.random.default_rng(31)
    rows = rng.integers(0, qs.rows, 20000)
    units = q.design_units(mech, q.privatize(mech, q.answers(rows), rng))
    widths = q.design_ranges(mech)
    assert widths.shape == (units.shape[1],) and np.all(np.isfinite(widths))
    assert np.all(units.max(axis=0) - units.min(axis=0) <= widths * (1 + 1e-12))
