"""Multi-party scenarios whose parties hold one of a few values instead of a bit
(``[parties] values``): catalog mechanisms on each party's alphabet, table tasks over the
input vectors, a lossy channel with a deadline and a party fixing its value.

The exact values are checked against an independent brute-force enumeration (every input
vector, every transcript with the "not heard" symbol, the optimal rule by enumeration),
written here from the mechanisms' textbook matrices. Monte Carlo assertions use the
model's tolerance column (false-failure probability ``FALSE_FAILURE = 1e-6`` over its table) or a
bound stated here; seeds are fixed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.protocols import OBSERVER, Protocol, Task, decide
from ldpsim.sim import run_scenario
from ldpsim.sim.multiparty import _RuleTable, exact_tables, simulate_broadcast
from ldpsim.sim.scenario.multiparty import parse_multiparty
from ldpsim.stats import binomial_acceptance
from tests.stats_checks import FALSE_FAILURE

VALUES = (3, 2, 4, 2)
LOSS, DEADLINE, MEDIAN, SIGMA = 0.05, 0.2, 0.05, 0.8
MATRIX2 = [[0.6, 0.3, 0.1], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3], [0.2, 0.6, 0.2]]
MATRIX3 = [[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]]
FIXED = (2, 2)  # party 2 always claims value 2
OBSERVER_GAIN = [[1, 0, 0.5], [0, 2, 0], [0.5, 0, 1]]
EQUAL_GAIN = [[1, 0], [0, 2.5]]


def inputs() -> np.ndarray:
    """Every input vector, C order (party 0 the most significant digit)."""
    return np.array(list(itertools.product(*[range(a) for a in VALUES])))


def f_mod3(xs: np.ndarray) -> np.ndarray:
    return xs.sum(axis=1) % 3


def f_equal(xs: np.ndarray) -> np.ndarray:  # receiver 1: do parties 0 and 2 hold the same value?
    return (xs[:, 0] == xs[:, 2]).astype(np.int64)


def scenario_text(rounds: int = 40_000, batch: int = 5_000) -> str:
    xs = inputs()
    return f"""
kind = "multiparty"
name = "multiparty_values_test"
description = "4 parties holding 3, 2, 4 and 2 values, a lossy channel, party 2 fixing its value"
protocols = [
    {{ name = "mixed", mechanisms = [
        {{ kind = "randomized_response", eps = 1 }},
        {{ kind = "randomized_response", eps = 1.5 }},
        {{ kind = "matrix", matrix = {MATRIX2} }},
        {{ kind = "matrix", matrix = {MATRIX3} }},
    ] }},
    {{ name = "rr", mechanisms = [{{ kind = "randomized_response", eps = 2 }}] }},
]

[parties]
k = 4
values = {list(VALUES)}

[task]
kind = "table"
values = {f_mod3(xs).tolist()}
outputs = ["0", "1", "2"]

[receivers.observer]
gain = {OBSERVER_GAIN}

[receivers.1]
kind = "table"
values = {f_equal(xs).tolist()}
outputs = ["differ", "equal"]
gain = {EQUAL_GAIN}

[[deviations]]
party = {FIXED[0]}
kind = "fixed"
bit = {FIXED[1]}

[rounds]
count = {rounds}
batch = {batch}
interval = 0.05

[network]
latency = {{ kind = "lognormal", median = {MEDIAN}, sigma = {SIGMA} }}
loss = {LOSS}
deadline = {DEADLINE}
loss_grid = [0, 0.05, 0.1]

[simulation]
seed = 11
alpha = {FALSE_FAILURE}
"""


# --------------------------------------------------------------------- brute force
def rr(k: int, eps: float) -> np.ndarray:
    """k-ary randomized response: the input with probability e^eps / (e^eps + k - 1)."""
    e = math.exp(eps)
    return (np.full((k, k), 1.0) + (e - 1) * np.eye(k)) / (e + k - 1)


NOMINAL = {
    "mixed": [rr(3, 1.0), rr(2, 1.5), np.array(MATRIX2), np.array(MATRIX3)],
    "rr": [rr(a, 2.0) for a in VALUES],
}


def missing_at(loss: float) -> float:
    late = stats.lognorm(s=SIGMA, scale=MEDIAN).sf(DEADLINE)
    return loss + (1 - loss) * late


def joint(matrices, m: float) -> np.ndarray:
    """P[x, tau]: x over every input vector, tau over every transcript, each party's
    message followed by the symbol "not heard" (probability m)."""
    P = np.ones((1, 1))
    for q in matrices:
        P = np.kron(P, np.hstack([(1 - m) * q, np.full((q.shape[0], 1), m)]))
    return P


def fixed(matrices) -> list[np.ndarray]:
    out = list(matrices)
    j, v = FIXED
    out[j] = np.vstack([matrices[j][v]] * len(matrices[j]))
    return out


def receiver_f_gain(who: int):
    if who == OBSERVER:
        return f_mod3, np.array(OBSERVER_GAIN, float)
    if who == 1:
        return f_equal, np.array(EQUAL_GAIN, float)
    return f_mod3, np.eye(3)


def brute_gain(Pn: np.ndarray, Pa: np.ndarray, who: int) -> tuple[float, float, float]:
    """The gain under the actual law Pa of the optimal rule for the nominal law Pn, by
    enumeration: (least, largest over the optimal rules' tie breaks, the smallest margin
    between the best and second-best guess on a transcript that occurs)."""
    xs = inputs()
    f, w = receiver_f_gain(who)
    W = w[f(xs)]  # (x, y)
    prior = 1.0 / len(xs)
    lo = hi = 0.0
    margin = math.inf
    for own in (None,) if who == OBSERVER else range(VALUES[who]):
        rows = np.ones(len(xs), bool) if own is None else xs[:, who] == own
        Hn = (prior * Pn[rows]).T @ W[rows]  # (tau, y): expected gain of guessing y, nominal
        Ha = (prior * Pa[rows]).T @ W[rows]
        best = Hn.max(axis=1, keepdims=True)
        tied = Hn >= best - 1e-12
        lo += float(np.where(tied, Ha, np.inf).min(axis=1).sum())
        hi += float(np.where(tied, Ha, -np.inf).max(axis=1).sum())
        live = Pa[rows].sum(axis=0) > 0
        srt = np.sort(Hn[live], axis=1)
        margin = min(margin, float((srt[:, -1] - srt[:, -2]).min()))
    return lo, hi, margin


@pytest.fixture(scope="module")
def scenario():
    return parse_multiparty(scenario_text())


# --------------------------------------------------------------------- tests
def test_scenario_builds_protocols_on_each_alphabet(scenario):
    sc = scenario
    assert sc.values == VALUES and sc.p_one is None
    for p in (*sc.protocols, *sc.actual):
        assert p.inputs == VALUES and not p.binary_inputs
    for p in sc.protocols:
        for q, want in zip(p.matrices, NOMINAL[p.name]):
            np.testing.assert_allclose(q, want, rtol=0, atol=1e-15)
    for a, p in zip(sc.actual, sc.protocols):
        for q, want in zip(a.matrices, fixed(NOMINAL[p.name])):
            np.testing.assert_allclose(q, want, rtol=0, atol=1e-15)
        assert a.eps[FIXED[0]] == 0.0
    assert all(t.sizes == VALUES for t in sc.tasks)
    assert sc.missing == pytest.approx(missing_at(LOSS), rel=1e-12)


def test_exact_values_match_brute_force(scenario):
    """Every receiver's exact expected gain (as run, everyone honest, each loss rate of the
    grid, perfect channel) equals the enumeration's."""
    sc = scenario
    tables = exact_tables(sc)
    rows = {(r["quantity"], r["protocol"], r["party"], r["loss"]): r["theory"] for r in tables.rows}
    checked = 0
    for name in ("mixed", "rr"):
        nominal, actual = NOMINAL[name], fixed(NOMINAL[name])
        for who in [*range(4), OBSERVER]:
            cases = [
                ("as run", tables.exact[(name, who)], actual, LOSS),
                ("honest", rows[("honest_accuracy", name, who, LOSS)], nominal, LOSS),
                ("perfect", rows[("perfect_channel_accuracy", name, who, 0.0)], actual, None),
            ]
            cases += [(f"loss={r}", rows[("channel_accuracy", name, who, r)], actual, r) for r in (0.0, 0.05, 0.1)]
            for what, got, act, loss in cases:
                m = 0.0 if loss is None else missing_at(loss)
                lo, hi, margin = brute_gain(joint(nominal, m), joint(act, m), who)
                assert lo - 1e-12 <= got <= hi + 1e-12, (name, who, what, got, lo, hi)
                if margin > 1e-9:  # no tie: one optimal rule
                    assert got == pytest.approx(lo, rel=1e-11, abs=1e-13)
                checked += 1
    assert checked == 2 * 5 * 6


def test_measured_within_tolerance_and_same_seed_same_bytes(scenario, tmp_path):
    run = run_scenario(scenario, out=tmp_path / "a", progress=False)
    acc = run.summary[run.summary["quantity"].isin(("accuracy", "accuracy_difference"))]
    assert len(acc) == 2 * 5 + 5 and acc["within"].all(), acc.to_string()
    assert float(run.results.loc[run.results["quantity"] == "accuracy", "alpha"].sum()) <= FALSE_FAILURE
    exact = exact_tables(scenario).exact
    for _, r in acc[acc["quantity"] == "accuracy"].iterrows():
        who = OBSERVER if r["party"] == "observer" else int(r["party"])
        assert r["exact"] == pytest.approx(exact[(r["protocol"], who)], abs=1e-15)
    summary = (tmp_path / "a" / "summary.md").read_text()
    assert "alphabet sizes a = [3, 2, 4, 2]" in summary and "party 2 fixed value 2" in summary
    again = run_scenario(parse_multiparty(scenario_text()), out=tmp_path / "b", progress=False)
    for name in ("results.csv", "summary.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert again.summary.equals(run.summary)


def test_inputs_are_uniform_on_each_alphabet_and_bits_keep_their_draw():
    """Party j's input is uniform on its alphabet (a chi-square bound at FALSE_FAILURE / 2); a party
    holding a bit draws it exactly as in an all-bit scenario (the same stream)."""
    mechs = [rr(a, 1.0) for a in VALUES]
    p = Protocol.from_matrices(mechs, [1.0] * 4)
    task = Task.from_table(f_mod3(inputs()), 3, inputs=VALUES)
    n = 30_000
    res = simulate_broadcast([p], task, n, batch=n, seed=5, keep_trace=True, alpha=FALSE_FAILURE)
    x = res.trace.bits
    for j, a in enumerate(VALUES):
        counts = np.bincount(x[:, j], minlength=a)
        assert counts.size == a
        chi2 = float(((counts - n / a) ** 2 / (n / a)).sum())
        assert chi2 <= stats.chi2.isf(FALSE_FAILURE / 2 / len(VALUES), a - 1)
    bits = Protocol.binary([1.0] * 4)
    ref = simulate_broadcast([bits], Task.xor(4), n, batch=n, seed=5, keep_trace=True, alpha=FALSE_FAILURE)
    for j in (1, 3):
        assert np.array_equal(x[:, j], ref.trace.bits[:, j])
    # the party holding 3 values: its share of 0s within the binomial acceptance interval
    assert abs(float((x[:, 0] == 0).mean()) - 1 / 3) <= binomial_acceptance(n, 1 / 3, FALSE_FAILURE / 2)


def test_rule_table_matches_decide_for_every_own_value(scenario):
    from ldpsim.protocols import erasure_protocol

    p = erasure_protocol(scenario.protocols[0], scenario.missing)
    rule = _RuleTable.build(p, list(scenario.tasks), 10**6)
    assert rule is not None
    sizes = p.sizes
    taus = np.stack(np.unravel_index(np.arange(math.prod(sizes)), sizes), axis=1).astype(np.int64)
    for i in range(4):
        for v in range(VALUES[i]):
            own = np.full(len(taus), v)
            assert np.array_equal(rule.lookup(i, taus, own), decide(p, scenario.tasks[i], i, taus, own))
    assert np.array_equal(rule.lookup(OBSERVER, taus, None), decide(p, scenario.tasks[-1], OBSERVER, taus))


def test_decide_path_without_rule_table_gives_the_same_gains(scenario, monkeypatch):
    """Few rounds: no rule table, every batch by decide(); the gains agree round by round
    with a run that looks the same decisions up in the rule table (same seed, same draws)."""
    sc = scenario
    args = {
        "batch": 500,
        "latency": sc.latency,
        "interval": 0.05,
        "seed": 3,
        "keep_trace": True,
        "alpha": FALSE_FAILURE,
        "loss": LOSS,
        "deadline": DEADLINE,
        "actual": list(sc.actual),
    }
    built = []
    build = _RuleTable.build.__func__

    def spy(cls, p, t, rounds):
        built.append(build(cls, p, t, rounds))
        return built[-1]

    monkeypatch.setattr(_RuleTable, "build", classmethod(spy))
    direct = simulate_broadcast(list(sc.protocols), list(sc.tasks), 1_000, **args)
    assert built == [None, None]  # 1,000 rounds: too few for a table
    monkeypatch.setattr(_RuleTable, "build", classmethod(lambda cls, p, t, rounds: build(cls, p, t, 10**9)))
    tabled = simulate_broadcast(list(sc.protocols), list(sc.tasks), 1_000, **args)
    assert np.array_equal(tabled.trace.gains, direct.trace.gains)
    assert np.isfinite(direct.trace.gains).all()


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


BASE = scenario_text(rounds=1_000, batch=500)


@pytest.mark.parametrize(
    "old,new,key",
    [
        (
            '{ name = "rr", mechanisms = [{ kind = "randomized_response", eps = 2 }] }',
            '"universal"',
            "protocols[1]: got 'universal'",
        ),
        (
            '{ name = "rr", mechanisms = [{ kind = "randomized_response", eps = 2 }] }',
            '"binary"',
            "protocols[1]: got 'binary'",
        ),
        ("values = [3, 2, 4, 2]", "values = [3, 2, 4, 2]\np_one = 0.3", "parties.p_one: got 0.3"),
        ("bit = 2", "bit = 4", "deviations[0].bit: got 4"),
        ("values = [3, 2, 4, 2]", "values = [3, 2, 4]", "parties.values: got a list of length 3"),
        ("values = [3, 2, 4, 2]", "values = [3, 1, 4, 2]", "parties.values"),
        (
            '{ kind = "randomized_response", eps = 1 },',
            '{ kind = "quaternary", eps = 1, delta = 0.1 },',
            "protocols[0].mechanisms[0].kind: got 'quaternary' with 2 inputs",
        ),
        (
            '{ kind = "randomized_response", eps = 1 },',
            '{ kind = "randomized_response", k = 3, eps = 1 },',
            "protocols[0].mechanisms[0].k: got 3",
        ),
        (f"matrix = {MATRIX3}", f"matrix = {MATRIX2}", "protocols[0].mechanisms[3].matrix"),
    ],
)
def test_one_line_errors_name_the_key(old, new, key):
    with pytest.raises(LdpSimError) as err:
        parse_multiparty(edit(BASE, old, new), "x.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"x.toml: {key}"), msg


@pytest.mark.parametrize("kind", ["xor", "sum", "majority", "and"])
def test_symmetric_tasks_need_bits(kind):
    start = BASE.index("[task]")
    end = BASE.index("[receivers.observer]")
    text = BASE[:start] + f'[task]\nkind = "{kind}"\n\n' + BASE[end:]
    with pytest.raises(LdpSimError) as err:
        parse_multiparty(text, "x.toml")
    msg = str(err.value)
    assert msg == (
        f"x.toml: task.kind: got '{kind}', expected 'table' when parties hold more than a bit "
        "(parties.values = [3, 2, 4, 2])"
    ), msg


def test_receiver_tasks_and_table_lengths_follow_the_values():
    bad = edit(
        BASE,
        '[receivers.1]\nkind = "table"',
        '[receivers.2]\nkind = "threshold"\nt = 2\n\n[receivers.1]\nkind = "table"',
    )
    with pytest.raises(LdpSimError, match=r"^x\.toml: receivers\.2\.kind: got 'threshold', expected 'table'"):
        parse_multiparty(bad, "x.toml")
    short = edit(BASE, "values = [0, 1, 1, 2,", "values = [1, 1, 2,")
    with pytest.raises(
        LdpSimError, match=r"^x\.toml: task\.values: got 47 values, expected prod\(parties\.values\) = 48"
    ):
        parse_multiparty(short, "x.toml")


def test_bits_stay_as_before():
    """values = 2 (or omitted) is the bit scenario: universal works, p_one allowed."""
    text = """
kind = "multiparty"
name = "bits"
protocols = ["universal"]
[parties]
k = 3
eps = 1
values = 2
p_one = 0.3
[task]
kind = "majority"
[rounds]
count = 100
batch = 100
"""
    sc = parse_multiparty(text)
    assert sc.values == (2, 2, 2) and sc.p_one.tolist() == [0.3] * 3 and sc.protocols[0].binary_inputs
