"""Scenario fuzzers: hypothesis strategies for scenario files of both kinds, and the check
every generated file must pass when ``ldpsim run`` takes it.

- A **grammar fuzzer** builds files from the scenario grammar with extreme-but-valid values
  (eps from 1e-300 to 800, times from 1e-300 to 1e12, populations of one client or 10^15
  in aggregate mode, labels that look like numbers or hold commas, quotes and newlines)
  and, now and then, a value of the wrong kind or range.
- A **mutation fuzzer** starts from the shipped scenarios (populations made small) and
  deletes keys, adds unknown ones, replaces values with odd ones (NaN, infinities, huge
  integers, text, lists, tables) or damages the TOML text itself.

:func:`check_run` runs the file in-process through the command line and accepts exactly
two outcomes: exit 0 with every output file complete, or exit 2 with one line on stderr.
A traceback, a warning, another exit code or a run over the time bound fails.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import signal
import time
import tomllib
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ldpsim.cli import main

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

#: Seconds one case may take before it counts as a hang.
TIME_BOUND = 60

#: Outcomes of every case checked in this process (clean / success), for the closing counts.
OUTCOMES: Counter = Counter()
#: What the clean refusals named (the key path, or the option), for tuning the generators.
REFUSALS: Counter = Counter()

NAN, INF = float("nan"), float("inf")
ODD = [
    0,
    -1,
    1,
    2,
    3,
    10**15,
    10**16,
    2**63 - 1,
    2**64,
    -(2**63),
    0.0,
    -0.0,
    1e-300,
    5e-324,
    1e300,
    1.7976931348623157e308,
    NAN,
    INF,
    -INF,
    0.5,
    1.0000000001,
    -0.5,
    "",
    "x",
    "1",
    "nan",
    "🙂",
    "a" * 300,
    True,
    False,
    [],
    [1],
    [0.5, 0.5],
    [[1]],
    {},
    {"kind": "x"},
]


EXTREME_INTS = [0, 1, 2, 7, 1000, 10**6, 10**9, 10**15, 2**62, 2**128 - 1]
EXTREME_FLOATS = [0.0, 5e-324, 1e-300, 1e-12, 1e-6, 0.001, 0.5, 0.999999, 1.0, 2.0, 700.0, 710.0, 800.0, 1e12, 1e300]


# ----------------------------------------------------------------------------- TOML out
def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON escapes are TOML basic-string escapes
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(doc: dict[str, Any]) -> str:
    """TOML for a scenario: top-level values first, then one table per section."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{_key(k)}]")
            lines += [f"{_key(kk)} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- grammar
EPS = [0.0, 1e-300, 1e-12, 0.1, 1.0, 5.0, 50.0, 700.0, 710.0, 800.0]
TIMES = [0.0, 1e-300, 1e-9, 0.25, 1.0, 7.0, 1e6, 1e12]
POSITIVE = [1e-300, 1e-9, 0.01, 0.25, 1.0, 7.0, 1e6, 1e12]


def _pick(draw, values: list) -> Any:
    return draw(st.sampled_from(values))


#: One draw in 25 is odd (True in the middle: hypothesis favours the ends of a range).
_ODD_DRAW = [False] * 12 + [True] + [False] * 12


def _odd(draw, value: Any) -> Any:
    """The value, or now and then one of the wrong kind or range."""
    return _pick(draw, ODD) if draw(st.sampled_from(_ODD_DRAW)) else value


def _distribution(draw, k: int) -> list[float]:
    w = draw(st.lists(st.integers(0, 20), min_size=k, max_size=k).filter(lambda w: sum(w) > 0))
    return [x / sum(w) for x in w]


LABELS = [
    "a",
    "b",
    "yes",
    "no",
    "",
    "1",
    "01",
    "1.0",
    " ",
    "a,b",
    'say "hi"',
    "é",
    "line\nbreak",
    "NaN",
    "None",
    "-",
    "x" * 60,
]
#: Distinct strings that are equal after Unicode normalisation (NFC, NFD or NFKC): the
#: ligature "\ufb01" and "fi", "caf\u00e9" composed and decomposed, the angstrom sign and
#: the letter, a fullwidth letter and its ASCII twin.
TWINS = [("\ufb01", "fi"), ("caf\u00e9", "cafe\u0301"), ("\u212b", "\u00c5"), ("\uff21", "A")]


def _labels(draw, pool: list[str], min_size: int = 2, max_size: int = 6) -> list[str]:
    """Distinct labels from ``pool``; one list in four holds a pair of normalisation twins."""
    labels = draw(st.lists(st.sampled_from(pool), min_size=min_size, max_size=max_size, unique=True))
    if draw(st.sampled_from([False, False, False, True])):
        a, b = _pick(draw, TWINS)
        labels = [x for x in labels if x not in (a, b)][: max(0, max_size - 2)]
        at = draw(st.integers(0, len(labels)))
        labels[at:at] = [a, b] if draw(st.booleans()) else [b, a]
    return labels


@st.composite
def survey_docs(draw) -> dict[str, Any]:
    mode = _pick(draw, ["individual", "aggregate"])
    labels = _labels(draw, LABELS)
    k = len(labels)
    size = draw(st.integers(1, 3000)) if mode == "individual" else _pick(draw, [1, 2, 1000, 10**6, 10**12, 10**15])
    population: dict[str, Any] = {"labels": labels, "size": _odd(draw, size)}
    testing = draw(st.booleans())
    p0, p1 = _distribution(draw, k), _distribution(draw, k)
    if testing:
        population.update(P0=p0, P1=p1, truth=_pick(draw, ["P0", "P1"]))
    else:
        population["distribution"] = _odd(draw, _distribution(draw, k))
    eps = _odd(draw, _pick(draw, EPS))
    kind = _pick(
        draw,
        [
            "randomized_response",
            "binary",
            "truncated_geometric",
            "quaternary",
            "matrix",
            "optimal",
            "better_of_binary_and_rr",
        ],
    )
    mechanism: dict[str, Any] = {"kind": kind}
    if kind == "matrix":
        m = draw(st.integers(1, 5))
        mechanism["matrix"] = [_distribution(draw, m) for _ in range(k)]
    else:
        mechanism["eps"] = eps
    if kind == "binary" and (not testing or draw(st.booleans())):
        mechanism["T"] = draw(st.lists(st.sampled_from(labels), unique=True, max_size=k))
    if kind == "quaternary":
        mechanism["delta"] = _pick(draw, [0.0, 1e-300, 0.01, 0.5, 1.0])
    if kind in ("optimal", "better_of_binary_and_rr"):
        mechanism["utility"] = _pick(draw, ["kl", "tv", "chi_square", "hellinger", "mutual_information"])
    arrivals = _pick(draw, ["all_at_once", "poisson", "waves"])
    if arrivals == "all_at_once":
        arr: dict[str, Any] = {"kind": arrivals, "at": _pick(draw, TIMES)}
    elif arrivals == "poisson":
        arr = (
            {"kind": arrivals, "duration": _pick(draw, POSITIVE)}
            if draw(st.booleans())
            else {"kind": arrivals, "rate": _pick(draw, [1e-300, 1e-6, 1.0, 1e3, 1e300])}
        )
    else:
        n = draw(st.integers(1, 4))
        arr = {
            "kind": arrivals,
            "times": sorted(draw(st.lists(st.sampled_from(TIMES), min_size=n, max_size=n))),
            "fractions": _distribution(draw, n),
        }
    lat = _pick(draw, ["constant", "exponential", "lognormal"])
    latency: dict[str, Any] = {"kind": lat}
    if lat == "constant":
        latency["value"] = _pick(draw, TIMES)
    elif lat == "exponential":
        latency["mean"] = _pick(draw, POSITIVE)
    else:
        latency.update(median=_pick(draw, POSITIVE), sigma=_pick(draw, [1e-300, 0.1, 1.0, 10.0]))
    network = {"latency": latency, "loss": _odd(draw, _pick(draw, [0.0, 1e-300, 0.05, 0.5, 1 - 1e-16, 1.0]))}
    checkpoints: dict[str, Any] = {}
    if draw(st.booleans()):
        checkpoints["every"] = _pick(draw, [1e-300, 1e-6, 0.25, 1.0, 1e12])
    if draw(st.booleans()):
        checkpoints["every_reports"] = _pick(draw, [1, 7, 1000, 10**6, 10**15])
    tasks: list[dict[str, Any]] = []
    for task in draw(st.lists(st.sampled_from(["frequency", "sprt", "lrt"]), unique=True, max_size=3)):
        if task == "frequency":
            tasks.append({"kind": task, "confidence": _pick(draw, [1e-300, 0.5, 0.95, 1 - 1e-16])})
        else:
            entry = {"kind": task, "P0": p0, "P1": p1, "alpha": _pick(draw, [1e-300, 0.01, 0.5, 1 - 1e-16])}
            if task == "sprt":
                entry["beta"] = _pick(draw, [1e-300, 0.01, 0.5])
            tasks.append(entry)
    if any(a in labels and b in labels for a, b in TWINS) and not any(t["kind"] == "frequency" for t in tasks):
        tasks.append({"kind": "frequency", "confidence": 0.95})  # twins matter where estimates are tabled by label
    simulation: dict[str, Any] = {
        "mode": mode,
        "replications": draw(st.integers(1, 3)),
        "seed": _pick(draw, [0, 1, 2**128 - 1]),
    }
    if draw(st.booleans()):
        simulation["tick"] = _pick(draw, [1e-300, 1e-4, 0.01, 1.0, 1e12])
    if draw(st.booleans()):
        simulation["end"] = _pick(draw, [1e-300, 1e-9, 0.5, 3.0, 1e12])
    if draw(st.booleans()):
        simulation["batch_size"] = _pick(draw, [1, 7, 65536, 10**15])
    doc: dict[str, Any] = {
        "name": _odd(draw, "fuzz"),
        "population": population,
        "mechanism": mechanism,
        "arrivals": arr,
        "network": network,
        "analyst": {"checkpoints": checkpoints, "tasks": tasks},
        "simulation": simulation,
    }
    if mode == "individual" and draw(st.booleans()):
        doc["server"] = {"keep_reports": True, "max_reports": _pick(draw, [0, 1, 10, 10**7])}
    return doc


@st.composite
def multiparty_docs(draw) -> dict[str, Any]:
    k = draw(st.integers(1, 8)) if not draw(st.sampled_from(_ODD_DRAW)) else _pick(draw, [12, 30, 64])
    levels = [0.0, 1e-300, 1e-12, 0.5, 1.0, 5.0, 700.0, 710.0]

    def per_party(values: list) -> Any:
        return (
            _pick(draw, values)
            if draw(st.booleans())
            else draw(st.lists(st.sampled_from(values), min_size=k, max_size=k))
        )

    task = _pick(draw, ["xor", "sum", "majority", "threshold", "and"])
    task_doc: dict[str, Any] = {"kind": task}
    if task == "threshold":
        task_doc["t"] = draw(st.integers(0, k + 1))
    lat = _pick(draw, ["constant", "exponential", "lognormal"])
    latency: dict[str, Any] = {"kind": lat}
    if lat == "constant":
        latency["value"] = _pick(draw, TIMES)
    elif lat == "exponential":
        latency["mean"] = _pick(draw, POSITIVE)
    else:
        latency.update(median=_pick(draw, POSITIVE), sigma=_pick(draw, [1e-300, 0.1, 1.0, 10.0]))
    # one file in eight asks for the most rounds one at a time: days of work, which must be
    # refused when the file is loaded (a cost estimate), not run
    huge = draw(st.sampled_from([False] * 7 + [True]))
    if huge:
        rounds, batch = _pick(draw, [10**8, 10**9]), 1
        k = max(k, 2)
    else:
        rounds, batch = draw(st.integers(1, 3000)), _pick(draw, [1, 7, 1000, 10**7])
    doc = {
        "kind": "multiparty",
        "name": _odd(draw, "fuzz_mp"),
        "protocols": draw(st.lists(st.sampled_from(["universal", "binary"]), min_size=1, max_size=2, unique=True)),
        "parties": {
            "k": _odd(draw, k),
            "eps": _odd(draw, per_party(levels)),
            "delta": per_party([0.0, 1e-300, 0.01, 0.5, 1.0]),
            "p_one": per_party([0.0, 1e-300, 0.5, 1.0]),
        },
        "task": task_doc,
        "rounds": {"count": _odd(draw, rounds), "batch": batch, "interval": _pick(draw, [0.0, 1e-300, 0.1, 1e9])},
        "network": {"latency": latency},
        "simulation": {
            "seed": _pick(draw, [0, 2**128 - 1]),
            "replications": draw(st.integers(1, 2)),
            "alpha": _pick(draw, [1e-300, 1e-6, 0.5, 1 - 1e-16]),
        },
    }
    if huge:  # otherwise valid (rounds one every 0.1 s, no latency): only the work is wrong
        doc["rounds"]["interval"], doc["network"] = 0.1, {"latency": {"kind": "constant", "value": 0.0}}
    return doc


def _latency(draw, times: list = TIMES) -> dict[str, Any]:
    lat = _pick(draw, ["constant", "exponential", "lognormal"])
    if lat == "constant":
        return {"kind": lat, "value": _pick(draw, times)}
    if lat == "exponential":
        return {"kind": lat, "mean": _pick(draw, POSITIVE)}
    return {"kind": lat, "median": _pick(draw, POSITIVE), "sigma": _pick(draw, [1e-300, 0.1, 1.0, 10.0])}


#: One-symbol catalog mechanisms a collection or a question may use, with their extra keys.
REPORT_MECHANISMS = [
    "randomized_response",
    "truncated_geometric",
    "staircase",
    "hadamard_response",
    "quaternary",
    "binary",
]


@st.composite
def collection_docs(draw) -> dict[str, Any]:
    """``kind = "collection"`` files (docs/collecting-over-time.md): repeated reports under
    several policies, with extremes where runs have broken: no report arriving (loss 1, or a
    latency far beyond the collection), a shuffler at eps 700 and beyond, eps = 1e-6 under a
    privacy filter, labels and policy names that are normalisation twins."""
    labels = _labels(draw, LABELS)
    k = len(labels)
    size = (
        draw(st.integers(1, 2000)) if not draw(st.sampled_from(_ODD_DRAW)) else _pick(draw, [10**6, 10**7, 10**7 + 1])
    )
    periods = draw(st.integers(1, 6)) if not draw(st.sampled_from(_ODD_DRAW)) else _pick(draw, [30, 1000, 1001])
    change_kind = _pick(draw, ["none", "markov", "drift"])
    change: dict[str, Any] = {"kind": change_kind}
    if change_kind == "markov":
        change["matrix"] = [_distribution(draw, k) for _ in range(k)]
    elif change_kind == "drift":
        change.update(final=_distribution(draw, k), stay=_pick(draw, [0.0, 1e-300, 0.5, 0.9, 1 - 1e-16]))
    schedule = (
        {"kind": "every_period"}
        if draw(st.booleans())
        else {"kind": "random", "rate": _pick(draw, [1e-300, 1e-6, 0.3, 1.0])}
    )
    collection = {
        "periods": _odd(draw, periods),
        "period": _pick(draw, POSITIVE),
        "schedule": schedule,
        "change": change,
        "delta": _odd(draw, _pick(draw, [1e-300, 1e-12, 1e-6, 0.5, 1 - 1e-16])),
    }
    eps = _odd(draw, _pick(draw, [1e-300, 1e-6, 0.1, 1.0, 5.0, 50.0, 700.0, 710.0, 800.0]))
    kind = _pick(draw, REPORT_MECHANISMS)
    mechanism: dict[str, Any] = {"kind": kind, "eps": eps}
    if kind == "quaternary":
        mechanism["delta"] = _pick(draw, [0.0, 1e-300, 0.01, 0.5])
    policies: list[dict[str, Any]] = []
    names = ["every report", "memoised", "budget", "\ufb01", "fi", "caf\u00e9", "cafe\u0301", "x" * 50]
    for i, policy in enumerate(draw(st.lists(st.sampled_from(["plain", "memoise", "filter"]), min_size=1, max_size=3))):
        entry: dict[str, Any] = {
            "name": names[draw(st.integers(0, len(names) - 1))] + ("" if i == 0 else f" {i}"),
            "kind": policy,
        }
        if i > 0 and draw(st.sampled_from([False] * 3 + [True])):  # names that are twins of the first
            a, b = _pick(draw, TWINS)
            policies[0]["name"], entry["name"] = a, b
        if policy == "memoise":
            entry["eps_permanent"] = _odd(draw, _pick(draw, [1e-300, 1e-6, 2.0, 50.0]))
        elif policy == "filter":
            entry["filter"] = _pick(draw, ["basic", "advanced"])
            entry["budget_eps"] = _odd(draw, _pick(draw, [1e-300, 1e-6, 0.5, 8.0, 1e6]))
            if draw(st.booleans()):
                entry["budget_delta"] = _pick(draw, [0.0, 1e-300, 1e-6, 0.5])
            if draw(st.booleans()):
                entry["exhausted"] = _pick(draw, ["stop", "lower"])
        if draw(st.booleans()):
            entry["rate"] = _pick(draw, [1e-300, 0.3, 1.0])
        policies.append(entry)
    doc: dict[str, Any] = {
        "kind": "collection",
        "name": _odd(draw, "fuzz_collection"),
        "population": {"labels": labels, "distribution": _odd(draw, _distribution(draw, k)), "size": _odd(draw, size)},
        "collection": collection,
        "mechanism": mechanism,
        "policies": policies,
        "network": {
            "latency": _latency(draw, TIMES + [1e6, 1e12]),
            "loss": _odd(draw, _pick(draw, [0.0, 0.02, 0.5, 1.0])),
        },
        "analyst": {"confidence": _pick(draw, [1e-300, 0.5, 0.95, 1 - 1e-16])},
        "simulation": {"seed": _pick(draw, [0, 1, 2**128 - 1]), "replications": draw(st.integers(1, 2))},
    }
    if draw(st.booleans()):
        shuffler: dict[str, Any] = (
            {"batch": _pick(draw, [2, 10, 1000, 10**8])} if draw(st.booleans()) else {"window": _pick(draw, POSITIVE)}
        )
        shuffler["compare"] = draw(st.booleans())
        doc["shuffler"] = shuffler
    return doc  # policies: an array of inline tables (to_toml writes lists inline)


@st.composite
def questions_docs(draw) -> dict[str, Any]:
    """Survey files that ask several questions (``[[questions]]``, ``[budget]``), each with
    its own labels and law; labels within a question, and question names, may be
    normalisation twins."""
    questions: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 4))):
        labels = _labels(draw, LABELS, max_size=5)
        q: dict[str, Any] = {
            "name": _pick(draw, ["q", "party", "vote", "a.b", "Q"]) + str(i),
            "labels": labels,
            "distribution": _distribution(draw, len(labels)),
            "mechanism": {
                "kind": _pick(draw, ["randomized_response", "truncated_geometric", "hadamard_response", "staircase"])
            },
        }
        kind = _pick(draw, ["categorical", "categorical", "ordinal", "multiselect", "keyvalue"])
        if kind == "ordinal":  # ranges over the labels, a tree, HaarHRR or a flat oracle
            q["kind"] = "ordinal"
            q["ranges"] = [{"name": "r", "first": labels[0], "last": _pick(draw, labels)}]
            q["quantiles"] = [_pick(draw, [1e-300, 0.5, 1 - 1e-16])]
            q["mechanism"] = _pick(
                draw,
                [
                    {"kind": "hierarchical", "fanout": _pick(draw, [2, 3, "optimal"])},
                    {"kind": "hierarchical", "oracle": "randomized_response", "consistent": False},
                    {"kind": "haar"},
                    {"kind": "oue"},
                ],
            )
        elif kind in ("multiselect", "keyvalue"):  # a law of items (keys) of their own
            del q["distribution"]
            q["kind"] = kind
            q["inclusion"] = [_pick(draw, [0.0, 0.3, 1.0]) for _ in labels]
            padding = draw(st.integers(1, len(labels)))
            if kind == "keyvalue":
                q["values"] = [_pick(draw, [-1.0, 0.0, 0.7, 1.0]) for _ in labels]
                q["mechanism"] = {"kind": "pckv", "padding": padding, "value_share": _pick(draw, [1e-6, 0.5])}
            else:
                q["mechanism"] = {"kind": "padding", "padding": padding}
        questions.append(q)
    strategy = _pick(draw, ["split", "one_random", "optimal"])
    total = _odd(draw, _pick(draw, [1e-300, 1e-6, 0.5, 2.0, 700.0, 800.0]))
    if strategy == "split" and draw(st.booleans()) and isinstance(total, float):
        for q in questions:
            q["eps"] = total / len(questions)
    mode = _pick(draw, ["individual", "aggregate"])
    analyst: dict[str, Any] = {
        "checkpoints": {"every": _pick(draw, [0.25, 1.0])},
        "tasks": [{"kind": "frequency", "confidence": _pick(draw, [1e-300, 0.95, 1 - 1e-16])}],
    }
    if len(questions) >= 2 and strategy == "split" and draw(st.booleans()):
        analyst["crosstabs"] = [{"rows": questions[0]["name"], "columns": questions[1]["name"]}]
    return {
        "name": _odd(draw, "fuzz_questions"),
        "population": {"size": _odd(draw, draw(st.integers(1, 2000)))},
        "budget": {"total": total, "strategy": strategy},
        "questions": questions,
        "arrivals": {"kind": "poisson", "duration": _pick(draw, POSITIVE)},
        "network": {"latency": _latency(draw), "loss": _pick(draw, [0.0, 0.05, 1.0])},
        "analyst": analyst,
        "simulation": {"mode": mode, "replications": draw(st.integers(1, 2)), "seed": _pick(draw, [0, 2**128 - 1])},
    }


# ----------------------------------------------------------------------------- mutations
def shipped_docs() -> list[dict[str, Any]]:
    """The shipped scenarios as documents, with populations and round counts made small."""
    docs = []
    for path in sorted(SCENARIOS.glob("*.toml")):
        doc = tomllib.loads(path.read_text())
        design = any(k in doc.get("population", {}) for k in ("weight", "strata", "psu"))
        if "population" in doc and not design:  # a design sample's rows are used as they are
            doc["population"]["size"] = (
                2_000
                if doc.get("simulation", {}).get("mode", "individual") == "individual"
                else doc["population"]["size"]
            )
        if "rounds" in doc:
            doc["rounds"]["count"] = 2_000
        docs.append(doc)
    return docs


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


@st.composite
def mutated_texts(draw) -> str:
    doc = json.loads(json.dumps(draw(st.sampled_from(shipped_docs()))))  # a deep copy
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        parent, last = _parent(doc, path), path[-1]
        op = draw(st.sampled_from(["extreme"] * 5 + ["replace"] * 2 + ["delete", "add", "scale", "twin"]))
        value = parent[last]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        strings = isinstance(value, list) and len(value) >= 2 and all(isinstance(x, str) for x in value)
        if op == "twin" and strings:  # two entries made distinct strings that normalise alike
            i, j = draw(st.lists(st.integers(0, len(value) - 1), min_size=2, max_size=2, unique=True))
            a, b = _pick(draw, TWINS)
            value[i], value[j] = value[i] + a, value[i] + b
        elif op == "delete" and isinstance(parent, dict):
            del parent[last]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "sizes", "Eps", "seed", "kind"]))] = _pick(draw, ODD)
        elif op == "scale" and number:
            parent[last] = value * _pick(draw, [0, -1, 1e-300, 1e-9, 1e9, 1e300])
        elif op == "extreme" and number:  # a value of the same type at an edge: often still valid
            parent[last] = _pick(draw, EXTREME_INTS if isinstance(value, int) else EXTREME_FLOATS)
        else:
            parent[last] = _pick(draw, ODD)
    text = to_toml(doc)
    if draw(st.sampled_from(_ODD_DRAW)):  # damage the text itself
        i = draw(st.integers(0, max(0, len(text) - 1)))
        text = text[:i] + draw(st.sampled_from(["", "[", "=", '"', "\n[x]\n", "\x00"])) + text[i + 2 :]
    return text


def scenario_texts() -> st.SearchStrategy[str]:
    """Every kind of generated file."""
    return st.one_of(
        survey_docs().map(to_toml),
        multiparty_docs().map(to_toml),
        mutated_texts(),
        collection_docs().map(to_toml),
        questions_docs().map(to_toml),
    )


# ----------------------------------------------------------------------------- the check
class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang(f"the case ran over {TIME_BOUND} s")


#: Estimated seconds above which a valid file is only loaded, not run: a legal scenario may
#: ask for hours of work (10^9 rounds), which is not a hang.
WORK_BUDGET = 5.0
#: Estimated seconds above which a file that loads is a finding: work of days (10^9 rounds
#: one at a time) must be refused when the file is loaded, by the loader's own estimate.
#: The estimate below is rough (about 5 times the measured time of multi-party rounds), so
#: this is two days of estimate, several hours of real work at the least.
ABSURD_SECONDS = 2 * 86400.0
#: Seconds a file over ABSURD_SECONDS may take to be refused.
REFUSAL_BOUND = 10


def estimated_seconds(text: str, where: str = "case.toml") -> float:
    """A rough estimate of the run time of a scenario that loads (0 when it does not load:
    the command line then refuses it, which the check verifies)."""
    from ldpsim.sim.scenario import parse_scenario
    from ldpsim.sim.scenario.survey import split_cells

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sc = parse_scenario(text, where)
    except Exception:  # noqa: BLE001 - the run itself reports (or fails on) this
        return 0.0
    spec = sc.spec
    reps = spec.simulation.replications
    if sc.kind in ("multiparty_study", "multiparty_interactive"):  # their own estimates (a [study]: exact values
        return float(sc.estimated_seconds)  # and the Monte Carlo; interactive: the broadcast)
    if (
        sc.kind == "collection"
    ):  # respondent-periods per policy, with and without a shuffler (8 s for the shipped 1.8e7)
        arms = len(spec.policies) * (2 if spec.shuffler is not None and spec.shuffler.compare else 1)
        return reps * spec.collection.periods * spec.population.size * arms * 1e-6
    if sc.kind == "multiparty":  # the broadcast, and the exact worst-case linear programs once
        from ldpsim.sim.multiparty import worst_case_seconds

        k, r = spec.parties.k, spec.rounds
        batches = -(-r.count // min(r.batch, r.count))
        broadcast = reps * (batches * k * (k + 2) * 1e-4 + r.count * (k + 1) * len(spec.protocols) * 2e-6)
        return broadcast + worst_case_seconds(sc)
    ticks = math.ceil(sc.end / sc.tick)
    cp = spec.analyst.checkpoints
    checkpoints = (sc.end / cp.every if cp.every else 0) + (sc.size / cp.every_reports if cp.every_reports else 0)
    work = ticks * 2e-5 + checkpoints * 2e-4
    if spec.simulation.mode == "individual":
        work += sc.size * 2e-7
    else:
        outputs = getattr(sc.mechanism, "m", None) or sc.mechanism.statistic_size  # OUE and other oracles: no m
        work += split_cells(spec, sc.tick, sc.end, sc.size) * outputs * 5e-8
    return reps * work


def invoke(argv: list[str], bound: int = TIME_BOUND, what: str = "") -> tuple[int, str, str, float]:
    """``ldpsim ARGV`` in this process with warnings as errors and an alarm after ``bound``
    seconds: (exit status, stdout, stderr, seconds), or AssertionError for a traceback
    (any exception out of ``main``) or a hang (``what`` says why one matters)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(bound)
    started = time.perf_counter()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            warnings.simplefilter("error")
            # pandas 2.0 calls numpy 1.25+'s deprecated np.find_common_type inside its own
            # merges (the minimum versions' quick pass): not ldpsim's warning to answer
            warnings.filterwarnings("ignore", message="np.find_common_type is deprecated", category=DeprecationWarning)
            code = main(argv)
    except Hang:
        raise AssertionError(f"hang: {what or 'the case'} still running after {bound} s") from None
    except BaseException as exc:  # noqa: BLE001 - a traceback is the finding
        raise AssertionError(f"traceback: {type(exc).__name__}: {exc}") from exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, stdout.getvalue(), stderr.getvalue(), time.perf_counter() - started


def one_line_refusal(err: str) -> str:
    """The one ``ldpsim: error: ...`` line of a refusal (AssertionError if stderr is more)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ldpsim: error: "), f"exit 2 but stderr is {err!r}"
    return lines[0]


def check_complete_run(out: Path) -> None:
    """A finished run directory: the report files, a finished record, its figures, no
    temporary files."""
    names = {p.name for p in out.iterdir()}
    assert {"summary.md", "results.csv", "metadata.json", "scenario.toml"} <= names, names
    assert "finished" in json.loads((out / "metadata.json").read_text())
    summary = (out / "summary.md").read_text()
    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", summary):
        assert (out / figure).is_file() and (out / figure).stat().st_size > 0, (
            f"summary.md shows {figure}, which is missing or empty"
        )
    assert not list(out.rglob("*.tmp")), "temporary files left"


def check_run(text: str, work: Path) -> str:
    """Run ``text`` as a scenario file through ``ldpsim run``; return ``"success"``,
    ``"clean"`` (refused in one line) or ``"heavy"`` (valid, but more work than a test
    case should run: loaded only), or raise AssertionError describing what went wrong.
    A file estimated at days of work (``ABSURD_SECONDS``) must be refused within
    ``REFUSAL_BOUND`` seconds. With ``LDPSIM_FUZZ_FAILURES=path`` every failing case is also
    appended to that file as it happens (a long slow tier need not end to show its first
    finding)."""
    try:
        return _check_run(text, work)
    except AssertionError as exc:
        log = os.environ.get("LDPSIM_FUZZ_FAILURES")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"--- {exc}\n{text!r}\n")
        raise


def _check_run(text: str, work: Path) -> str:
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "data").exists():  # the tables the shipped scenarios read, as next to them
        (work / "data").symlink_to(SCENARIOS / "data", target_is_directory=True)
    path = work / "case.toml"
    estimate = estimated_seconds(text, str(path))
    absurd = estimate > ABSURD_SECONDS  # it must be refused at load: a run that starts is the finding
    if estimate > WORK_BUDGET and not absurd:
        OUTCOMES["heavy"] += 1
        return "heavy"
    path.write_text(text, encoding="utf-8")
    out = work / "run"
    what = f"a run of about {estimate / 86400:.3g} days (estimated) was accepted and is" if absurd else ""
    code, _, err, seconds = invoke(
        ["run", str(path), "--out", str(out), "--no-progress"], REFUSAL_BOUND if absurd else TIME_BOUND, what
    )
    if code == 2:
        line = one_line_refusal(err)
        assert not out.exists() or not any(p.name != ".lock" for p in out.iterdir()), "a refused run left files"
        OUTCOMES["clean"] += 1
        REFUSALS[line.removeprefix("ldpsim: error: ").removeprefix(f"{path}: ").split(":")[0]] += 1
        return "clean"
    assert code == 0, f"exit {code}: {err!r}"
    assert err == "", f"success, but stderr holds {err!r}"
    assert not absurd, f"a run of about {estimate / 86400:.3g} days (estimated) ran to the end in {seconds:.1f} s"
    check_complete_run(out)
    OUTCOMES["success"] += 1
    OUTCOMES["seconds"] += seconds
    return "success"
