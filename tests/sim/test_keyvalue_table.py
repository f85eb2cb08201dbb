"""Key-value answers read from a table column (``key=value`` pairs separated by ';'): the
truth beside the estimates is the table's own (each key's share of holders and its mean
value among them, computed here from the CSV text), the frequency and value estimates are
unbiased with their stated exact variance over replications (its law taken from the rows
themselves, whose values may depend on the set), and malformed cells are refused in one
line naming the row."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.sim import parse_scenario, run_replication
from tests.stats_checks import FALSE_FAILURE

KEYS = ["mail", "maps", "chat"]


def _write(tmp_path, cells: list[str], extra: str = "") -> str:
    with (tmp_path / "apps.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "apps"])  # a second column: a one-column row with a blank cell is a blank line
        writer.writerows([[i, c] for i, c in enumerate(cells)])
    path = tmp_path / "s.toml"
    path.write_text(
        f"""
name = "kv"
[population]
file = "apps.csv"
[budget]
total = 2.0
strategy = "split"
[[questions]]
name = "apps"
kind = "keyvalue"
labels = {KEYS}
{extra}mechanism = {{ kind = "pckv", padding = 2 }}
[arrivals]
kind = "all_at_once"
[analyst]
tasks = [{{ kind = "frequency", confidence = 0.95 }}]
[simulation]
seed = 3
end = 1.0
tick = 1.0
"""
    )
    return str(path)


def _cells(n: int = 3000) -> list[str]:
    rng = np.random.default_rng(8)
    out = []
    for _ in range(n):
        held = [k for k, p in zip(KEYS, [0.8, 0.5, 0.4]) if rng.random() < p]
        # values depend on the set's size: the more keys, the lower each value
        out.append(";".join(f"{k}={min(1.0, 0.9 - 0.4 * len(held) + 0.2 * rng.random()):.4f}" for k in held))
    return out


def test_truth_is_the_tables_and_estimates_are_unbiased_with_their_exact_variance(tmp_path):
    cells = _cells()
    path = _write(tmp_path, cells)
    sc = parse_scenario(open(path).read(), path)
    pairs = [dict((p.split("=")[0], float(p.split("=")[1])) for p in c.split(";") if p) for c in cells]
    share = {k: sum(k in p for p in pairs) / len(pairs) for k in KEYS}
    mean = {k: sum(p[k] for p in pairs if k in p) / sum(k in p for p in pairs) for k in KEYS}
    # what the frequency estimate is unbiased for: E[l 1{k in S} / max(|S|, l)]
    target = {k: sum(2.0 * (k in p) / max(len(p), 2) for p in pairs) / len(pairs) for k in KEYS}
    q = sc.questions.questions[0]
    exact, _, _ = q.moments(q.mechanisms["split"], len(cells))
    reps, errors = 150, []
    for r in range(reps):
        rows = run_replication(sc, r, 21)
        freq = rows[(rows["task"] == "apps:keys") & (rows["quantity"] == "key_frequency")].set_index("category")
        means = rows[(rows["task"] == "apps:keys") & (rows["quantity"] == "key_mean")].set_index("category")
        for k in KEYS:
            assert freq.loc[k, "truth"] == pytest.approx(share[k], rel=1e-12)
            assert means.loc[k, "truth"] == pytest.approx(mean[k], rel=1e-12)
        errors.append([freq.loc[k, "estimate"] - target[k] for k in KEYS])
    errors = np.array(errors)
    alpha = FALSE_FAILURE / (2 * len(KEYS))
    z = stats.norm.isf(alpha / 2)
    x = math.log(2.0 / alpha)
    for j in range(len(KEYS)):
        assert abs(errors[:, j].mean()) <= z * math.sqrt(exact[j] / reps)
        low = exact[j] * (1 - 2 * math.sqrt(x / reps))
        high = exact[j] * (1 + 2 * math.sqrt(x / reps) + 2 * x / reps)
        assert low <= float(np.mean(errors[:, j] ** 2)) <= high


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("mail=0.5;bank=0.1", "'bank=0.1'"),
        ("mail=2", "'mail=2'"),
        ("mail=x", "'mail=x'"),
        ("mail=0.1;mail=0.2", "'mail=0.2'"),
    ],
)
def test_a_malformed_cell_is_refused_in_one_line_naming_its_row(cell, words, tmp_path):
    path = _write(tmp_path, ["maps=0.1", cell])
    with pytest.raises(LdpSimError, match=words) as info:
        parse_scenario(open(path).read(), path)
    text = str(info.value)
    assert "\n" not in text and "questions[0].column" in text and "3" in text  # the file's line 3


def test_a_law_with_a_table_is_refused(tmp_path):
    path = _write(tmp_path, ["maps=0.1"], extra="inclusion = [0.5, 0.5, 0.5]\n")
    with pytest.raises(LdpSimError, match="inclusion: got .*expected none with a table"):
        parse_scenario(open(path).read(), path)


@pytest.mark.parametrize("row", [(0b000, 0, 0, 0), (0b011, 0.6, -0.2, 0), (0b111, -1.0, 1.0, 0.3), (0b100, 0, 0, -0.7)])
def test_pckv_reports_follow_their_exact_law(row):
    """The reports of one respondent, many times: their symbols' law is the one the module's
    docstring derives (key kept with probability a, its sign by the value and p; otherwise
    a uniform other key and sign), written out here from a, b and p."""
    from ldpsim.sim.question_kinds.keyvalue import PCKV
    from tests.stats_checks import assert_sample_law

    mech = PCKV(3, 2, 1.5, 0.5)
    mask, values = row[0], np.array(row[1:])
    held = [k for k in range(3) if mask >> k & 1]
    slots = max(len(held), 2)
    pairs = [(k, values[k]) for k in held] + [(3 + j, 0.0) for j in range(slots - len(held))]
    law = np.zeros(2 * mech.keys)
    for key, v in pairs:  # each padded pair with probability 1 / slots
        plus = (1 + v) / 2 * mech.p + (1 - v) / 2 * (1 - mech.p)
        law[2 * key] += mech.a * plus / slots
        law[2 * key + 1] += mech.a * (1 - plus) / slots
        for other in range(mech.keys):
            if other != key:
                law[2 * other : 2 * other + 2] += (1 - mech.a) / (mech.keys - 1) / 2 / slots
    assert law.sum() == pytest.approx(1.0)
    answers = np.tile(np.array([mask, *values], dtype=float), (200_000, 1))
    reports = mech.privatize(answers, np.random.default_rng(31))
    assert_sample_law(reports, law, FALSE_FAILURE)
    up, down = mech.row_law(answers[:1])  # the design's per-respondent law agrees
    assert np.allclose(up[0], law[0:6:2]) and np.allclose(down[0], law[1:6:2])
