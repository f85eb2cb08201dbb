"""Audit targets (ldpsim.audit.targets): catalog entries read through the mechanism contract;
building, sampling, exact privacy, specs."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from ldpsim import LdpSimError
from ldpsim.audit import Target, names, parse_spec, target
from ldpsim.mechanisms.catalog import CATALOG as TARGETS
from tests.contract.cases import CASES

LIBRARY = [
    "randomized_response",
    "binary",
    "truncated_geometric",
    "staircase",
    "optimal",
    "better_of_binary_and_rr",
    "matrix",
    "quaternary",
    "laplace",
    "gaussian",
    "gaussian_classical",
    "truncated_laplace",
    "staircase_noise",
    "geometric",
    "discrete_laplace",
    "discrete_gaussian",
    "snapped_laplace",
    "norm_laplace",
    "sue",
    "oue",
    "rappor",
    "olh",
    "blh",
    "hadamard_response",
    "subset_selection",
    "laplace_bounded",
    "discrete_laplace_bounded",
    "snapped_laplace_bounded",
    "staircase_bounded",
    "duchi",
    "piecewise",
    "hybrid",
    "square_wave",
    "memoised_rr",
]


BROKEN = [
    "doubled_rr",
    "unary_no_reset",
    "laplace_wrong_scale",
    "histogram_wrong_scale",
    "noisy_max_value",
    "svt_no_query_noise",
    "svt_no_cutoff",
    "svt_returns_value",
]
#: entries whose defaults do not describe the inputs: built from their first contract case,
#: and with their defaults alone a one-line error naming what is missing
NEEDS = {"optimal": "P0", "better_of_binary_and_rr": "P0", "matrix": "matrix"}


def test_catalog_names():
    assert [n for n in TARGETS if not n.startswith("broken.")] == LIBRARY
    assert sorted(n for n in TARGETS if n.startswith("broken.")) == sorted("broken." + k for k in BROKEN)
    assert names() == sorted(TARGETS)


def _params(name):
    return dict(CASES[name][0]) if name in NEEDS else {}


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_entries_without_complete_defaults_name_what_is_missing(name):
    with pytest.raises(LdpSimError, match=rf"^{NEEDS[name]}: got None, expected"):
        target(name)


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_target_builds_with_defaults(name):
    spec = TARGETS[name]
    assert spec.name == name and spec.description
    for pname, p in spec.params.items():
        assert p.type in (int, float, str, object) and p.help
        assert isinstance(p.default, p.type) or (p.default is None and (p.optional or p.type is object)), pname
    t = target(name, **_params(name))
    assert isinstance(t, Target) and t.name == name and t.description == spec.description
    assert t.params == {k: p.default for k, p in spec.params.items()} | _params(name)
    assert t.broken == name.startswith("broken.")
    assert t.outputs in ("finite", "real")
    assert t.pairs and all(len(p) == 2 for p in t.pairs)
    assert t.claimed_eps > 0 and 0.0 <= t.claimed_delta < 1
    if "eps" not in spec.params:  # matrix: it claims its matrix's exact eps
        assert t.claimed_eps == t.true_eps
    assert t.true_eps >= 0 and not math.isnan(t.true_eps)
    rng = np.random.default_rng(7)
    for x, xp in t.pairs:
        for inp in (x, xp):
            y = np.asarray(t.sampler(inp, 50, rng))
            if name == "rappor":  # reports of m bits, one byte each
                assert y.shape == (50, t.params["m"]) and y.dtype == np.uint8
                continue
            shape = tuple(getattr(t.mechanism, "report_shape", ()))  # discrete vector reports
            assert y.shape == ((50,) if name != "norm_laplace" else (50, t.params["d"])) + shape
            if shape:
                assert np.issubdtype(y.dtype, np.integer)  # the auditor codes the rows
            else:
                assert y.dtype == (np.int64 if t.outputs == "finite" else np.float64)
    if t.true_delta is not None:
        d = t.true_delta(t.claimed_eps)
        assert 0.0 <= d <= 1.0
        if not t.broken:
            assert d <= t.claimed_delta * (1 + 1e-9) + 1e-15  # the claim holds exactly
    if not t.broken and math.isfinite(t.true_eps):
        assert t.true_eps <= t.claimed_eps * (1 + 1e-9)
    if t.broken:
        assert t.true_eps > t.claimed_eps


def test_broken_targets_read_their_mechanisms():
    for key in BROKEN:
        t = target("broken." + key)
        obj = t.mechanism
        assert t.claimed_eps == obj.claimed_eps == t.params["eps"]
        assert t.true_eps == obj.true_eps
        assert t.pairs == list(obj.inputs)
        assert t.outputs == ("finite" if obj.finite else "real")
    assert (
        TARGETS["broken.svt_returns_value"].params["m"].type,
        TARGETS["broken.svt_returns_value"].params["m"].default,
    ) == (int, 7)
    assert TARGETS["broken.histogram_wrong_scale"].params["bins"].default == 4
    from ldpsim.audit.zoo import SVTReturnsValue

    assert target("broken.svt_returns_value").mechanism == SVTReturnsValue(eps=1.0, m=7)  # value equality (params)


# --------------------------------------------------------------------------- exact privacy
@pytest.mark.parametrize("k, eps", [(2, 1.0), (3, 0.3), (5, 2.5)])
def test_rr_true_eps_closed_form(k, eps):
    t = target("randomized_response", k=k, eps=eps)
    e = math.exp(eps)
    p, q = e / (k - 1 + e), 1.0 / (k - 1 + e)
    assert t.true_eps == pytest.approx(math.log(p / q), rel=1e-12)
    assert t.true_eps == pytest.approx(eps, rel=1e-12)
    # delta at half the eps: sum over the two outputs where x beats x' by more than e^{eps/2}
    h = math.exp(eps / 2)
    assert t.true_delta(eps / 2) == pytest.approx((p - h * q) + max(q - h * p, 0.0), rel=1e-9)
    assert t.pairs == list(combinations(range(k), 2))


def test_pairs_for_large_alphabets():
    t = target("randomized_response", k=8, eps=1.0)
    assert t.pairs == [(0, j) for j in range(1, 8)]
    assert target("truncated_geometric", k=3).pairs == [(1, 2), (1, 3), (2, 3)]


@pytest.mark.parametrize("k, eps", [(2, 0.5), (4, 1.0), (5, 3.0)])
def test_finite_families_true_eps(k, eps):
    for name in ("binary", "truncated_geometric", "staircase"):
        t = target(name, k=k, eps=eps)
        assert t.true_eps == pytest.approx(eps, rel=1e-9)
        assert t.mechanism.k == k
    assert target("staircase", k=k, eps=eps).mechanism.name == "staircase_mechanism"


def test_quaternary_true_privacy():
    t = target("quaternary", eps=0.7, delta=0.05)
    assert t.true_eps == math.inf
    assert t.true_delta(0.7) == pytest.approx(0.05, rel=1e-12)
    assert t.claimed_delta == 0.05 and t.outputs == "finite"


@pytest.mark.parametrize("eps, sens", [(1.0, 1.0), (0.3, 2.0), (4.0, 0.5)])
def test_laplace_true_eps(eps, sens):
    t = target("laplace", eps=eps, sensitivity=sens)
    assert t.mechanism.scale == pytest.approx(sens / eps)
    assert t.true_eps == pytest.approx(sens / t.mechanism.scale, rel=1e-9)
    assert t.pairs == [(0.0, sens)]
    # Laplace: delta(e) = 1 - exp((e - eps)/2) below eps
    assert t.true_delta(eps / 2) == pytest.approx(-math.expm1(-eps / 4), rel=1e-9)


def test_delta_mechanisms_have_infinite_pure_eps():
    for name in ("gaussian", "gaussian_classical", "truncated_laplace", "quaternary"):
        t = target(name)
        assert t.true_eps == math.inf
        assert t.claimed_delta > 0
    g = target("gaussian", eps=1.0, delta=1e-3)
    assert g.true_delta(1.0) == pytest.approx(1e-3, rel=1e-6)
    gc = target("gaussian_classical", eps=0.5, delta=1e-3)
    assert gc.mechanism.sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-3)) / 0.5)
    assert gc.true_delta(0.5) < 1e-3


def test_pure_noise_true_eps():
    assert target("staircase_noise", eps=1.5).true_eps == pytest.approx(1.5, rel=1e-9)
    g = target("geometric", eps=0.8, sensitivity=2)
    assert g.true_eps == pytest.approx(0.8, rel=1e-9)
    assert g.pairs == [(0.0, 2.0)]


def test_broken_true_values():
    assert target("broken.doubled_rr", k=3, eps=0.7).true_eps == pytest.approx(1.4)
    assert target("broken.noisy_max_value", eps=1.0, m=4).true_eps == pytest.approx(2.0)
    assert target("broken.svt_returns_value", eps=2.0, m=3).true_eps == pytest.approx(2.0)
    assert target("broken.unary_no_reset").true_eps == math.inf
    # finite broken ones: exact delta of their matrix; Laplace pairs: closed form; others: unknown
    assert target("broken.doubled_rr").true_delta is not None
    lap = target("broken.laplace_wrong_scale", eps=0.5)  # a Laplace pair with eps0 = 2
    assert lap.true_delta(1.0) == pytest.approx(-math.expm1(-0.5), rel=1e-12)
    assert target("broken.noisy_max_value").true_delta is None
    assert target("broken.svt_returns_value").true_delta is None


# --------------------------------------------------------------------------- specs
@pytest.mark.parametrize("name", list(TARGETS))
def test_parse_spec_round_trip(name):
    t = target(name, **_params(name))
    if name not in NEEDS:
        assert parse_spec(name).params == t.params
    again = parse_spec(t.spec)
    assert again.name == name and again.params == t.params
    assert again.claimed_eps == t.claimed_eps and again.true_eps == t.true_eps


def test_parse_spec_values_and_types():
    t = parse_spec("randomized_response:k=4,eps=1")
    assert t.params == {"k": 4, "eps": 1.0}
    assert isinstance(t.params["k"], int) and isinstance(t.params["eps"], float)
    assert t.mechanism.k == 4
    t = parse_spec(" broken.svt_returns_value : eps = 1 , m=7 ")
    assert t.params == {"eps": 1.0, "m": 7, "T": 0.0}
    assert parse_spec("laplace:eps=0.5").params == {"eps": 0.5, "sensitivity": 1.0}
    assert target("randomized_response", k=3.0).params["k"] == 3  # integral floats accepted


@pytest.mark.parametrize(
    "spec, match",
    [
        ("nope", r"^mechanism: got 'nope', expected one of .*randomized_response"),
        ("broken.nope:eps=1", r"^mechanism: got 'broken.nope'"),
        ("", r"^spec: got ''"),
        (":k=2", r"^spec: got ':k=2'"),
        ("randomized_response:", r"^spec: got 'randomized_response:'"),
        ("randomized_response:k", r"^spec: .*bad item 'k'"),
        ("randomized_response:=3", r"^spec: .*bad item '=3'"),
        ("randomized_response:k=", r"^k: got '', expected a value"),
        (
            "randomized_response:zz=3",
            r"^parameter: got 'zz', expected a parameter of randomized_response: one of k, eps",
        ),
        ("randomized_response:k=2,k=3", r"^parameter: got 'k', expected each parameter at most once"),
        ("randomized_response:k=two", r"^k: got 'two', expected an integer"),
        ("randomized_response:k=2.5", r"^k: got '2.5', expected an integer"),
        ("laplace:eps=abc", r"^eps: got 'abc', expected a number"),
        ("broken.svt_returns_value:m=1.5", r"^m: got '1.5', expected an integer"),
    ],
)
def test_parse_spec_errors(spec, match):
    with pytest.raises(ValueError, match=match) as info:
        parse_spec(spec)
    assert isinstance(info.value, LdpSimError)
    assert "\n" not in str(info.value)


def test_constructor_errors_pass_through():
    with pytest.raises(LdpSimError, match=r"^eps"):
        parse_spec("gaussian_classical:eps=2")
    with pytest.raises(LdpSimError, match=r"^k"):
        parse_spec("randomized_response:k=1")
    with pytest.raises(LdpSimError, match=r"^delta"):
        parse_spec("truncated_laplace:delta=0.7")
    with pytest.raises(LdpSimError, match=r"^eps"):
        parse_spec("laplace:eps=-1")
    with pytest.raises(LdpSimError, match=r"^m"):
        parse_spec("broken.svt_no_cutoff:m=9")


def test_target_errors():
    with pytest.raises(ValueError, match=r"^mechanism: got 'x'"):
        target("x")
    with pytest.raises(ValueError, match=r"^parameter: got 'delta', expected a parameter of laplace"):
        target("laplace", delta=0.1)
    with pytest.raises(ValueError, match=r"^k: got True, expected an integer"):
        target("randomized_response", k=True)
    with pytest.raises(ValueError, match=r"^eps: got None, expected a number"):
        target("laplace", eps=None)
