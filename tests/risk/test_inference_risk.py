"""The inference risk of one report (:mod:`ldpsim.risk`) against brute force written here:
every output of randomized response, unary encoding and subset selection enumerated with
its probability from the mechanism's published formulas (not the library's matrices), local
hashing over every hash function of its family (Monte Carlo in the library: within its
stated standard error at the suite's false-failure probability), and the bounds that hold
for every eps-LDP mechanism."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.risk import inference_risk
from tests.stats_checks import FALSE_FAILURE

PRIORS = [np.array([0.5, 0.3, 0.15, 0.05]), np.full(4, 0.25), np.array([0.7, 0.0, 0.2, 0.1])]


def _risk(outputs: list[tuple[np.ndarray, float]], pi: np.ndarray) -> dict[str, float]:
    """Brute force: ``outputs`` lists, per report, the vector ``P(y | x)`` over x."""
    acc = expected = average = 0.0
    worst = 0.0
    for like, _ in outputs:
        joint = pi * like
        py = joint.sum()
        if py == 0:
            continue
        acc += joint.max()
        for x in range(pi.size):
            if joint[x] > 0:
                post = joint[x] / py
                expected += joint[x] * post
                average += joint[x] * post / pi[x]
                worst = max(worst, post / pi[x])
    return dict(accuracy=acc, expected_posterior=expected, average_ratio=average, worst_ratio=worst)


def _rr(k: int, eps: float) -> list:
    e = math.exp(eps)
    return [(np.array([e if x == y else 1.0 for x in range(k)]) / (e + k - 1), 1.0) for y in range(k)]


def _unary(k: int, p: float, q: float) -> list:
    out = []
    for bits in itertools.product([0, 1], repeat=k):
        like = np.array(
            [
                math.prod((p if j == x else q) if b else (1 - p if j == x else 1 - q) for j, b in enumerate(bits))
                for x in range(k)
            ]
        )
        out.append((like, 1.0))
    return out


def _subset(k: int, omega: int, eps: float) -> list:
    e = math.exp(eps)
    z = math.comb(k - 1, omega - 1) * e + math.comb(k - 1, omega)
    return [
        (np.array([(e if x in ys else 1.0) / z for x in range(k)]), 1.0)
        for ys in itertools.combinations(range(k), omega)
    ]


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("prior", range(len(PRIORS)))
def test_randomized_response_and_hadamard_enumerated(eps, prior):
    pi = PRIORS[prior]
    got = inference_risk(catalog.build("randomized_response", eps=eps, k=4), pi)
    want = _risk(_rr(4, eps), pi)
    assert got.method == "enumeration"
    for name, value in want.items():
        assert getattr(got, name) == pytest.approx(value, rel=1e-12, abs=1e-15), name
    assert got.posterior_probabilities.sum() == pytest.approx(1.0)
    assert float(got.posterior_values @ got.posterior_probabilities) == pytest.approx(want["expected_posterior"])
    hr = catalog.build("hadamard_response", eps=eps, k=4)
    rows = [(np.asarray(hr.matrix)[:, y], 1.0) for y in range(hr.matrix.shape[1])]  # its matrix, our sums
    assert inference_risk(hr, pi).accuracy == pytest.approx(_risk(rows, pi)["accuracy"], rel=1e-12)


@pytest.mark.parametrize("kind", ["oue", "sue"])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("prior", range(len(PRIORS)))
def test_unary_encoding_accuracy_is_exact(kind, eps, prior):
    pi = PRIORS[prior]
    mech = catalog.build(kind, eps=eps, k=4)
    e = math.exp(eps)
    p, q = (0.5, 1 / (e + 1)) if kind == "oue" else (math.sqrt(e) / (math.sqrt(e) + 1), 1 / (math.sqrt(e) + 1))
    assert (mech.p, mech.q) == pytest.approx((p, q), rel=1e-12)
    got = inference_risk(mech, pi, samples=20_000, rng=1)
    assert got.accuracy == pytest.approx(_risk(_unary(4, p, q), pi)["accuracy"], rel=1e-12)
    assert "accuracy" not in got.standard_errors


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("omega", [1, 2, 3])
def test_subset_selection_accuracy_is_exact(eps, omega):
    pi = np.array([0.4, 0.25, 0.2, 0.1, 0.05])
    mech = catalog.build("subset_selection", eps=eps, k=5, omega=omega)
    got = inference_risk(mech, pi, samples=20_000, rng=2)
    assert got.accuracy == pytest.approx(_risk(_subset(5, omega, eps), pi)["accuracy"], rel=1e-12)


def test_local_hashing_by_monte_carlo_within_its_stated_error():
    """OLH's hash family (a x^2 + b x + c modulo a prime of 31 bits, then cut into g
    buckets) is 3-wise independent, so for k = 3 answers their buckets are uniform over the
    g^3 patterns up to O(g / prime); every pattern enumerated here, the reported bucket kept
    with probability e^eps / (e^eps + g - 1), each other with 1 / (e^eps + g - 1)."""
    pi = np.array([0.6, 0.3, 0.1])
    mech = catalog.build("olh", eps=1.0, k=3)
    g, e = mech.g, math.exp(1.0)
    outputs = []
    for pattern in itertools.product(range(g), repeat=3):
        for value in range(g):
            like = np.array([(e if pattern[x] == value else 1.0) / (e + g - 1) for x in range(3)])
            outputs.append((like / g**3, 1.0))
    want = _risk(outputs, pi)
    got = inference_risk(mech, pi, samples=100_000, rng=3)
    assert got.method == "monte carlo"
    z = stats.norm.isf(FALSE_FAILURE / 6)
    for name in ("accuracy", "expected_posterior", "average_ratio"):
        assert abs(getattr(got, name) - want[name]) <= z * got.standard_errors[name] + 1e-6, name


@pytest.mark.parametrize(
    ("kind", "kw"),
    [
        ("randomized_response", {}),
        ("oue", {}),
        ("subset_selection", {}),
        ("hadamard_response", {}),
        ("olh", {}),
    ],
)
@pytest.mark.parametrize("eps", [0.01, 1.0, 5.0])
def test_every_eps_ldp_bound_holds(kind, kw, eps):
    pi = np.array([0.4, 0.3, 0.2, 0.06, 0.04])
    got = inference_risk(catalog.build(kind, eps=eps, k=5, **kw), pi, samples=20_000, rng=4)
    slack = 5 * got.standard_errors.get("accuracy", 0.0) + 1e-12
    assert got.baseline == 0.4
    assert got.accuracy <= min(1.0, math.exp(eps) * got.baseline) + slack
    assert got.accuracy >= got.baseline - slack  # a report never hurts the best guess
    assert got.worst_ratio <= math.exp(eps) * (1 + 1e-12)
    assert got.average_ratio <= got.worst_ratio + 1e-12


@pytest.mark.parametrize(
    ("prior", "words"),
    [
        ([0.5, 0.5], "prior: got '2 values', expected 4 probabilities"),
        ([0.5, 0.6, -0.1, 0.0], "prior: got 'a negative value -0.1'"),
        ([0.7, 0.2, 0.05, 0.04], "prior: got 'values summing to 0.99', expected probabilities summing to 1"),
    ],
)
def test_a_bad_prior_is_one_line(prior, words):
    with pytest.raises(LdpSimError, match=words) as info:
        inference_risk(catalog.build("randomized_response", eps=1.0, k=4), prior)
    assert "\n" not in str(info.value)


def _two_questions():
    a = catalog.build("randomized_response", eps=1.0, k=3)
    b = catalog.build("hadamard_response", eps=2.0, k=2)
    profiles = np.array([[0, 0], [0, 1], [1, 0], [2, 1], [1, 1]])
    weights = np.array([0.3, 0.25, 0.2, 0.15, 0.1])  # correlated answers
    return [a, b], profiles, weights


def test_profile_accuracy_is_the_enumeration_written_out():
    from ldpsim.risk import profile_risk

    mechs, profiles, weights = _two_questions()
    qa, qb = np.asarray(mechs[0].matrix), np.asarray(mechs[1].matrix)
    want = 0.0
    for ya in range(qa.shape[1]):
        for yb in range(qb.shape[1]):
            want += max(w * qa[p[0], ya] * qb[p[1], yb] for p, w in zip(profiles, weights))
    got = profile_risk(mechs, profiles, weights)
    assert got.method == "enumeration" and got.baseline == 0.3
    assert got.accuracy == pytest.approx(want, rel=1e-12)


def test_independent_questions_multiply():
    """With independent answers, guessing the profile is guessing each answer: the product."""
    from ldpsim.risk import profile_risk

    pa, pb = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4])
    a = catalog.build("randomized_response", eps=1.5, k=3)
    b = catalog.build("randomized_response", eps=0.7, k=2)
    profiles = np.array([[i, j] for i in range(3) for j in range(2)])
    weights = np.array([pa[i] * pb[j] for i, j in profiles])
    got = profile_risk([a, b], profiles, weights)
    assert got.accuracy == pytest.approx(inference_risk(a, pa).accuracy * inference_risk(b, pb).accuracy, rel=1e-12)


def test_profile_monte_carlo_is_within_its_stated_error(monkeypatch):
    import ldpsim.risk as risk

    mechs, profiles, weights = _two_questions()
    exact = risk.profile_risk(mechs, profiles, weights).accuracy
    monkeypatch.setattr(risk, "MAX_ENUMERATED", 1)
    got = risk.profile_risk(mechs, profiles, weights, samples=100_000, rng=5)
    assert got.method == "monte carlo"
    assert abs(got.accuracy - exact) <= stats.norm.isf(FALSE_FAILURE / 2) * got.standard_error


def test_the_command_prints_the_exact_values_and_refuses_bad_input_in_one_line():
    from tests.cli_helpers import run_cli

    res = run_cli("risk", "randomized_response:k=4,eps=1", "--prior", "5,3,1.5,0.5")
    assert res.returncode == 0, res.stderr
    want = _risk(_rr(4, 1.0), np.array([0.5, 0.3, 0.15, 0.05]))
    assert f"{want['accuracy']:.6g}" in res.stdout and "enumeration" in res.stdout + res.stderr
    for argv, words in (
        (("risk", "nope:k=3"), "MECHANISM: mechanism: got 'nope'"),
        (("risk", "randomized_response:k=3,eps=1", "--prior", "1,2"), "--prior: got '2 weights'"),
        (("risk", "laplace:eps=1"), "MECHANISM: got 'laplace:eps=1', expected a frequency oracle"),
        (("risk", "olh:k=1000,eps=1"), "with 1000 answers, expected at most 64 answers"),
    ):
        bad = run_cli(*argv)
        assert bad.returncode == 2 and words in bad.stderr and bad.stderr.strip().count("\n") == 0, (argv, bad.stderr)


def test_a_survey_report_states_the_risk_of_each_question_and_of_the_profile(tmp_path):
    """anes96_crosstab's two questions (education, vote; randomized response at eps = 1
    each) at 2,000 respondents: the report's accuracies are the brute force over the CSV's
    answers, each question alone and the two together."""
    import csv

    from ldpsim.sim import load_scenario, run_scenario
    from tests.sim.helpers import SCENARIOS

    scenario = load_scenario(str(SCENARIOS / "anes96_crosstab.toml")).with_overrides(
        **{"population.size": 2000, "simulation.replications": 1}
    )
    text = (run_scenario(scenario, out=tmp_path / "run", progress=False).run_dir / "summary.md").read_text()
    assert "## What a respondent risks" in text
    with (SCENARIOS / "data" / "anes96.csv").open(newline="") as f:
        rows = [(r["education"], r["vote"]) for r in csv.DictReader(f)]
    edu = sorted({a for a, _ in rows})
    vote = sorted({b for _, b in rows})
    pe = np.array([sum(a == e for a, _ in rows) for e in edu]) / len(rows)
    pv = np.array([sum(b == v for _, b in rows) for v in vote]) / len(rows)
    for pi in (pe, pv):
        want = _risk(_rr(pi.size, 1.0), pi)["accuracy"]
        assert f"{want:.4f}" in text
    # the profile: every pair of reports, the best profile's joint probability, summed
    e = math.e
    joint = {}
    for a, b in rows:
        joint[(edu.index(a), vote.index(b))] = joint.get((edu.index(a), vote.index(b)), 0) + 1 / len(rows)
    total = 0.0
    for ya in range(len(edu)):
        for yb in range(len(vote)):
            total += max(
                w * (e if ya == i else 1) / (e + len(edu) - 1) * (e if yb == j else 1) / (e + len(vote) - 1)
                for (i, j), w in joint.items()
            )
    assert f"right for {total:.4%} of respondents" in text


def _brute_reidentification(mats, rows):
    """Every respondent, every combination of reports: the matching rule's pick (uniform
    among the rows of largest likelihood) is right with this probability."""
    n = len(rows)
    total = 0.0
    for ys in itertools.product(*[range(m.shape[1]) for m in mats]):
        like = np.array([math.prod(m[r[j], y] for j, (m, y) in enumerate(zip(mats, ys))) for r in rows])
        best = np.isclose(like, like.max(), rtol=1e-12, atol=0)
        for i in range(n):
            if best[i]:
                total += like[i] / best.sum() / n
    return total


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
def test_reidentification_against_brute_force_over_every_report(eps):
    from ldpsim.risk import reidentification_risk

    rows = np.array([[0, 1], [0, 1], [1, 2], [2, 0], [1, 1], [2, 2], [0, 0]])
    mechs = [catalog.build("randomized_response", k=3, eps=eps), catalog.build("randomized_response", k=3, eps=eps / 2)]
    # the published law of k-ary randomized response, written here
    mats = []
    for e in (eps, eps / 2):
        keep = math.exp(e) / (math.exp(e) + 2)
        mats.append(np.where(np.eye(3, dtype=bool), keep, (1 - keep) / 2))
    got = reidentification_risk(mechs, rows)
    assert got.method == "enumeration"
    assert got.accuracy == pytest.approx(_brute_reidentification(mats, rows), rel=1e-12)
    assert (
        got.baseline == pytest.approx(1 / 7)
        and got.exposed == pytest.approx(6 / 7)
        and got.unique == pytest.approx(5 / 7)
    )
    assert got.baseline - 1e-12 <= got.accuracy <= got.exposed + 1e-12


def test_reidentification_monte_carlo_within_its_error():
    from ldpsim.risk import reidentification_risk

    rng = np.random.default_rng(3)
    rows = rng.integers(0, 8, size=(60, 6))
    mechs = [catalog.build("randomized_response", k=8, eps=2.0)] * 6  # 8^6 output combinations: Monte Carlo
    got = reidentification_risk(mechs, rows, samples=40_000, rng=1)
    assert got.method == "monte carlo"
    exact = reidentification_risk(mechs[:3], rows[:, :3])  # a smaller table, enumerated, for the bound below
    assert exact.method == "enumeration"
    # the whole six questions tell respondents apart at least as well as the first three
    assert got.accuracy >= exact.accuracy - stats.norm.isf(FALSE_FAILURE) * got.standard_error
    # and a brute-force Monte Carlo of the matching rule written here agrees within both errors
    mats = np.where(np.eye(8, dtype=bool), math.exp(2) / (math.exp(2) + 7), 1 / (math.exp(2) + 7))
    hits = []
    gen = np.random.default_rng(9)
    for _ in range(4000):
        i = gen.integers(60)
        y = np.array([gen.choice(8, p=mats[rows[i, j]]) for j in range(6)])
        like = np.prod(mats[rows, y[None, :]], axis=1)
        best = np.flatnonzero(np.isclose(like, like.max(), rtol=1e-12, atol=0))
        hits.append(float(i in best) / best.size)
    hits = np.array(hits)
    tol = stats.norm.isf(FALSE_FAILURE / 2) * math.hypot(hits.std(ddof=1) / math.sqrt(hits.size), got.standard_error)
    assert abs(hits.mean() - got.accuracy) <= tol


@pytest.mark.parametrize("name", ["randomized_response", "oue", "subset_selection", "hadamard_response", "olh", "blh"])
def test_report_accuracy_is_the_inference_accuracy(name):
    """``report_accuracy`` (what ldpsim recommend shows) against the full inference risk:
    equal where both are exact, within both stated errors where either is Monte Carlo."""
    from ldpsim.risk import report_accuracy

    pi = 1.0 / np.arange(1, 13)
    pi /= pi.sum()
    mech = catalog.build(name, k=12, eps=2.0)
    acc, method, se = report_accuracy(mech, pi, rng=4)
    full = inference_risk(mech, pi, rng=5)
    other = full.standard_errors.get("accuracy", 0.0)
    if se == 0.0 and other == 0.0:
        assert acc == pytest.approx(full.accuracy, rel=1e-12)
    else:
        assert abs(acc - full.accuracy) <= stats.norm.isf(FALSE_FAILURE / 2) * math.hypot(se, other)
    assert method != "not computed here"


def test_randomized_response_accuracy_closed_form_at_a_million_answers():
    from ldpsim.risk import report_accuracy

    k, eps = 10**6, 3.0
    pi = np.full(k, 1.0 / k)
    acc, method, _ = report_accuracy(catalog.build("randomized_response", k=k, eps=eps), pi)
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    assert method == "closed form" and acc == pytest.approx(keep, rel=1e-12)  # uniform prior: guess the report


def _rr_matrix(k: int, eps: float) -> np.ndarray:
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    return np.where(np.eye(k, dtype=bool), keep, (1 - keep) / (k - 1))


@pytest.mark.parametrize("memo", [False, True])
def test_repeated_reports_against_every_sequence_of_reports(memo):
    """An unchanged answer reported r times: the best guess from the whole sequence (not the
    counts), every sequence enumerated, with and without a permanent response."""
    from ldpsim.risk import repeated_risk

    k, pi = 3, np.array([0.5, 0.3, 0.2])
    q, m1 = _rr_matrix(k, 1.0), _rr_matrix(k, 2.0)
    got = repeated_risk(
        catalog.build("randomized_response", k=k, eps=1.0),
        pi,
        4,
        permanent=catalog.build("randomized_response", k=k, eps=2.0) if memo else None,
    )
    for r in range(5):
        total = 0.0
        for seq in itertools.product(range(k), repeat=r):
            like = np.ones(k)
            if memo:
                like = np.array([sum(m1[x, z] * math.prod(q[z, y] for y in seq) for z in range(k)) for x in range(k)])
            else:
                like = np.array([math.prod(q[x, y] for y in seq) for x in range(k)])
            total += (pi * like).max()
        assert got.accuracy[r] == pytest.approx(total, rel=1e-12)
    assert got.reports == (0, 1, 2, 3, 4) and set(got.method) == {"enumeration"}


def test_repeated_reports_monte_carlo_within_its_error(monkeypatch):
    from ldpsim import risk

    pi = np.array([0.4, 0.3, 0.2, 0.1])
    mech = catalog.build("randomized_response", k=4, eps=0.5)
    exact = risk.repeated_risk(mech, pi, [6])
    monkeypatch.setattr(risk, "MAX_TYPES", 1)
    mc = risk.repeated_risk(mech, pi, [6], samples=50_000, rng=2)
    assert mc.method == ("monte carlo",)
    assert abs(mc.accuracy[0] - exact.accuracy[0]) <= stats.norm.isf(FALSE_FAILURE / 2) * mc.standard_error[0]


def test_memoisation_caps_the_risk_at_the_permanent_response():
    from ldpsim.risk import repeated_risk

    pi = np.array([0.4, 0.3, 0.1, 0.1, 0.05, 0.05])
    rr = catalog.build("randomized_response", k=6, eps=1.0)
    perm = catalog.build("randomized_response", k=6, eps=2.0)
    memo = repeated_risk(rr, pi, [1, 10, 30], permanent=perm).accuracy
    plain = repeated_risk(rr, pi, [1, 10, 30]).accuracy
    cap = inference_risk(perm, pi).accuracy
    assert np.all(np.diff(memo) > 0) and memo[-1] < cap and plain[-1] > cap


def test_changing_answers_against_every_path_and_report_sequence():
    """A 3-answer Markov chain over 3 periods, reports of randomized response: the best guess
    of the last answer from the 3 reports, every path of answers and every report sequence
    enumerated here; the library's Monte Carlo within its stated error."""
    from ldpsim.risk import changing_risk

    pi = np.array([0.5, 0.3, 0.2])
    step = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.2, 0.2, 0.6]])
    q = _rr_matrix(3, 1.5)
    exact = 0.0
    for ys in itertools.product(range(3), repeat=3):
        joint = np.zeros(3)  # P(x_3, y_1..3)
        for xs in itertools.product(range(3), repeat=3):
            p = pi[xs[0]] * step[xs[0], xs[1]] * step[xs[1], xs[2]]
            joint[xs[2]] += p * q[xs[0], ys[0]] * q[xs[1], ys[1]] * q[xs[2], ys[2]]
        exact += joint.max()
    got = changing_risk(catalog.build("randomized_response", k=3, eps=1.5), pi, [step, step], samples=100_000, rng=3)
    assert abs(got.accuracy[2] - exact) <= stats.norm.isf(FALSE_FAILURE / 2) * got.standard_error[2]
    assert got.baseline[2] == pytest.approx((pi @ step @ step).max(), rel=1e-12)


def test_unchanged_answers_are_the_repeated_reports():
    from ldpsim.risk import changing_risk, repeated_risk

    pi = np.array([0.4, 0.3, 0.2, 0.1])
    mech = catalog.build("randomized_response", k=4, eps=1.0)
    mc = changing_risk(mech, pi, [np.eye(4)] * 5, samples=50_000, rng=7)
    exact = repeated_risk(mech, pi, 6).accuracy[1:]
    assert np.all(np.abs(mc.accuracy - exact) <= stats.norm.isf(FALSE_FAILURE / 12) * mc.standard_error)


def _memo_exact(pi, step, m1, m2, periods):
    """P(best guess of the last answer is right) for memoised reports of a changing answer:
    every path of answers, every set of memos (one per answer) and every report sequence."""
    k, s = m1.shape
    out = m2.shape[1]
    total = 0.0
    for ys in itertools.product(range(out), repeat=periods):
        joint = np.zeros(k)
        for memos in itertools.product(range(s), repeat=k):
            w = np.prod([m1[v, memos[v]] for v in range(k)])
            for xs in itertools.product(range(k), repeat=periods):
                p = pi[xs[0]] * np.prod([step[xs[t], xs[t + 1]] for t in range(periods - 1)])
                joint[xs[-1]] += w * p * np.prod([m2[memos[xs[t]], ys[t]] for t in range(periods)])
        total += joint.max()
    return total


_MEMO_CASE = dict(
    pi=np.array([0.5, 0.3, 0.2]),
    step=np.array([[0.7, 0.2, 0.1], [0.15, 0.7, 0.15], [0.3, 0.1, 0.6]]),
    m1=np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]]),
    m2=np.array([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]]),
)


def _finite(matrix):
    from types import SimpleNamespace  # deferred: only these tests need a bare matrix holder

    return SimpleNamespace(matrix=matrix)


def test_memoised_changing_answers_against_every_path_memo_and_report_sequence():
    """Memoised reports (a memo per answer, reused when the answer comes back) of a 3-answer
    chain over 3 periods: the exact filter over (answer, memos) within its stated error of the
    enumeration written here, which shares no code with the library."""
    from ldpsim.risk import changing_risk

    c = _MEMO_CASE
    exact = _memo_exact(c["pi"], c["step"], c["m1"], c["m2"], 3)
    got = changing_risk(_finite(c["m2"]), c["pi"], [c["step"]] * 2, permanent=_finite(c["m1"]), samples=40_000, rng=5)
    assert got.method == "forward filter"
    assert abs(got.accuracy[2] - exact) <= stats.norm.isf(FALSE_FAILURE / 2) * got.standard_error[2]


def test_memoised_bounds_bracket_the_exact_accuracy(monkeypatch):
    """Beyond the filter's states the result is a bracket: a server that ignores the memos
    (lower) and one that sees them (upper) around the enumerated accuracy."""
    import ldpsim.risk as risk

    c = _MEMO_CASE
    exact = _memo_exact(c["pi"], c["step"], c["m1"], c["m2"], 3)
    monkeypatch.setattr(risk, "MEMO_STATES", 1)
    got = risk.changing_risk(_finite(c["m2"]), c["pi"], [c["step"]] * 2, permanent=_finite(c["m1"]), rng=6)
    z = stats.norm.isf(FALSE_FAILURE / 2)
    assert got.method == "bounds" and np.isnan(got.accuracy).all()
    assert got.lower[2] - z * got.lower_se[2] <= exact <= got.upper[2] + z * got.upper_se[2]
    assert got.upper[2] - got.lower[2] > 0.02  # the bracket says something: the memos matter here


def test_memoised_unchanged_answers_are_the_repeated_memoised_reports():
    from ldpsim.risk import changing_risk, repeated_risk

    pi = np.array([0.4, 0.35, 0.25])
    rr, perm = catalog.build("randomized_response", k=3, eps=1.0), catalog.build("randomized_response", k=3, eps=2.0)
    mc = changing_risk(rr, pi, [np.eye(3)] * 4, permanent=perm, samples=30_000, rng=8)
    exact = repeated_risk(rr, pi, 5, permanent=perm).accuracy[1:]
    assert np.all(np.abs(mc.accuracy - exact) <= stats.norm.isf(FALSE_FAILURE / 10) * mc.standard_error)


def test_memoised_changing_risk_checks_the_alphabets():
    from ldpsim.risk import changing_risk

    with pytest.raises(LdpSimError, match="permanent"):
        changing_risk(_finite(np.eye(2)), [0.5, 0.5], [np.eye(2)], permanent=_finite(np.full((2, 3), 1 / 3)))
