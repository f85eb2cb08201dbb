"""Rebuild nhanes2.csv (next to this file) from the NHANES II extract that the survey
package samplics ships (``samplics/datasets/data/nhanes2.csv``, samplics 0.6.1): one row
per examined person, in the order of that file, with the design columns renamed and the
codes of the answers replaced by their labels.

    python scenarios/data/convert_nhanes2.py PATH/TO/samplics/datasets/data/nhanes2.csv

Only that file is read (samplics itself is not imported); the output is written with the
csv module, read back and decoded to the source's codes, so no value can be lost or
changed silently.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

OUT = Path(__file__).with_name("nhanes2.csv")
ROWS = 10337
#: source column -> (our column, {code: label}); None: the value as it is
COLUMNS = {
    "stratid": ("stratum", None),
    "psuid": ("psu", None),
    "finalwgt": ("weight", None),
    "region": ("region", {"1": "Northeast", "2": "Midwest", "3": "South", "4": "West"}),
    "race": ("race", {"1": "White", "2": "Black", "3": "Other"}),
    "highbp": ("high_bp", {"0": "no", "1": "yes"}),
    "diabetes": ("diabetes", {"0": "no", "1": "yes", "": ""}),
}


def main(source: Path) -> None:
    with source.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if len(rows) != ROWS:
        raise SystemExit(f"{source}: got {len(rows)} rows, expected {ROWS}")
    out = []
    for r, row in enumerate(rows):
        line = []
        for name, (_, codes) in COLUMNS.items():
            value = row[name].strip()
            if codes is None:
                if not value.isdigit() or int(value) <= 0:
                    raise SystemExit(f"{source}: row {r + 2}, {name}: got {value!r}, expected a positive integer")
            elif value not in codes:
                raise SystemExit(f"{source}: row {r + 2}, {name}: got {value!r}, expected one of {sorted(codes)}")
            line.append(value if codes is None else codes[value])
        out.append(line)
    with OUT.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([ours for ours, _ in COLUMNS.values()])
        writer.writerows(out)
    with OUT.open(newline="") as fh:  # read back: every cell decodes to the source's code
        back = list(csv.DictReader(fh))
    for row, again in zip(rows, back, strict=True):
        for name, (ours, codes) in COLUMNS.items():
            decoded = again[ours] if codes is None else {v: k for k, v in codes.items()}[again[ours]]
            if decoded != row[name].strip():
                raise SystemExit(f"{OUT}: {ours} does not decode to the source's {name}")
    print(f"wrote {OUT} ({len(out)} rows)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
