"""Rebuild anes96.csv (next to this file) from the copy of the ANES 1996 extract that
statsmodels ships (``statsmodels.datasets.anes96``): one row per respondent, in the order
of that file, one column per variable, with the documented codes replaced by their labels.

    python scenarios/data/convert_anes96.py

Only statsmodels' own file is read; the output is written with the csv module. Every code
must be one the statsmodels documentation lists, and every converted row is decoded back
and compared with the source, so no value can be lost or changed silently.

The labels are those of the statsmodels documentation except education's, where that
documentation is wrong from code 5 up ("College degree", "Master's degree", "PhD"): the
same 944 respondents are distributed with R's faraway package (``nes96``) with the levels of
the ANES seven-category summary of education, so code 5 is a junior or community college
(associate) degree, 6 a BA level degree and 7 an advanced degree (README.md beside this
file says how this was checked).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import statsmodels.datasets.anes96 as source

SOURCE = Path(source.__file__).with_name("anes96.csv")
OUT = Path(__file__).with_name("anes96.csv")
ROWS = 944

PARTY = [
    "Strong Democrat",
    "Weak Democrat",
    "Independent-Democrat",
    "Independent-Independent",
    "Independent-Republican",
    "Weak Republican",
    "Strong Republican",
]
LEFT_RIGHT = [
    "Extremely liberal",
    "Liberal",
    "Slightly liberal",
    "Moderate",
    "Slightly conservative",
    "Conservative",
    "Extremely conservative",
]
# codes 1..7 (the ANES summary: 8 grades or less; 9-11 grades; high school diploma or
# equivalency; more than 12 years, no degree; junior or community college degree; BA level
# degree; advanced degree), not statsmodels' labels of 5..7 (see the docstring)
EDUCATION = [
    "8 grades or less",
    "Some high school",
    "High school graduate",
    "Some college",
    "Associate degree",
    "Bachelor's degree",
    "Advanced degree",
]
INCOME = [
    "None or less than $2,999",
    "$3,000-$4,999",
    "$5,000-$6,999",
    "$7,000-$8,999",
    "$9,000-$9,999",
    "$10,000-$10,999",
    "$11,000-$11,999",
    "$12,000-$12,999",
    "$13,000-$13,999",
    "$14,000-$14,999",
    "$15,000-$16,999",
    "$17,000-$19,999",
    "$20,000-$21,999",
    "$22,000-$24,999",
    "$25,000-$29,999",
    "$30,000-$34,999",
    "$35,000-$39,999",
    "$40,000-$44,999",
    "$45,000-$49,999",
    "$50,000-$59,999",
    "$60,000-$74,999",
    "$75,000-$89,999",
    "$90,000-$104,999",
    "$105,000 and over",
]
VOTE = ["Clinton", "Dole"]

# output column: (source column, {code: label} or None for a number kept as it is)
COLUMNS: dict[str, tuple[str, dict[int, str] | None]] = {
    "party_id": ("PID", dict(enumerate(PARTY))),  # coded 0..6
    "self_lr": ("selfLR", dict(enumerate(LEFT_RIGHT, start=1))),  # coded 1..7
    "clinton_lr": ("ClinLR", dict(enumerate(LEFT_RIGHT, start=1))),
    "dole_lr": ("DoleLR", dict(enumerate(LEFT_RIGHT, start=1))),
    "education": ("educ", dict(enumerate(EDUCATION, start=1))),
    "income": ("income", dict(enumerate(INCOME, start=1))),
    "vote": ("vote", dict(enumerate(VOTE))),  # coded 0..1
    "age": ("age", None),
    "tv_news_days": ("TVnews", None),
    "place_population": ("popul", None),
}
NUMBER_RANGES = {"age": (18, 120), "tv_news_days": (0, 7), "place_population": (0, 10**5)}


def read_source() -> list[dict[str, int]]:
    with SOURCE.open(newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    header = [h.strip("'") for h in rows[0]]
    out = []
    for line, row in enumerate(rows[1:], start=2):
        assert len(row) == len(header), f"{SOURCE}:{line}: {len(row)} fields, expected {len(header)}"
        assert all(re.fullmatch(r"-?\d+", v) for v in row), f"{SOURCE}:{line}: a value is not an integer"
        out.append({h: int(v) for h, v in zip(header, row)})
    assert len(out) == ROWS, f"{SOURCE}: {len(out)} respondents, expected {ROWS}"
    return out


def convert(rows: list[dict[str, int]]) -> list[list[str]]:
    out = []
    for i, row in enumerate(rows, start=1):
        cells = []
        for name, (src, labels) in COLUMNS.items():
            code = row[src]
            if labels is None:
                low, high = NUMBER_RANGES[name]
                assert low <= code <= high, f"respondent {i}: {src} = {code} outside [{low}, {high}]"
                cells.append(str(code))
            else:
                assert code in labels, f"respondent {i}: {src} = {code} is not a documented code"
                cells.append(labels[code])
        out.append(cells)
    return out


def check(rows: list[dict[str, int]]) -> None:
    """Read the written file back and decode every cell to the source's code."""
    with OUT.open(newline="", encoding="utf-8") as f:
        back = list(csv.reader(f))
    assert back[0] == list(COLUMNS), back[0]
    assert len(back) == ROWS + 1
    for row, cells in zip(rows, back[1:]):
        for (name, (src, labels)), cell in zip(COLUMNS.items(), cells):
            code = int(cell) if labels is None else {v: k for k, v in labels.items()}[cell]
            assert code == row[src], (name, cell, row[src])


def main() -> None:
    rows = read_source()
    with OUT.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(list(COLUMNS))
        writer.writerows(convert(rows))
    check(rows)
    print(f"wrote {OUT}: {len(rows)} respondents, {len(COLUMNS)} columns")


if __name__ == "__main__":
    main()
