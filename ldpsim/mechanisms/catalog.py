"""The one catalog of mechanisms: name -> builder with typed parameters.

Every mechanism of the library, and every deliberately broken target of the auditor, has
exactly one entry here. The scenario loader, ``ldpsim audit``, the reproductions and the
contract test suite all build mechanisms through it, so adding a mechanism to ldpsim means
one class (implementing :class:`ldpsim.mechanisms.base.Mechanism`) and one entry below.

An entry names its builder as a ``"module:attribute"`` string, imported on first use: this
keeps ``import ldpsim`` light and lets packages above :mod:`ldpsim.mechanisms` (the
optimal-mechanism linear program, the auditor's broken zoo) contribute builders without an
import running upward.

Specs on the command line use the grammar ``NAME`` or ``NAME:param=value,param=value``
(:func:`parse`); values are converted to the declared parameter types, and parameters that
take lists (matrices, sets of inputs, distributions) take them as JSON:
``matrix:matrix=[[0.9,0.1],[0.2,0.8]]``, ``binary:eps=1,k=4,T=[1,3]``.

>>> from ldpsim.mechanisms import catalog
>>> catalog.build("randomized_response", k=4, eps=1.0)
randomized_response(k=4, eps=1.0)
>>> catalog.parse("laplace:eps=0.5").params
{'eps': 0.5, 'sensitivity': 1.0}
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ldpsim._text import did_you_mean
from ldpsim.errors import LdpSimError, invalid

__all__ = ["Param", "Entry", "Built", "CATALOG", "entry", "build", "parse", "names", "with_sampler", "SPEC_FORM"]

#: The command-line grammar of a mechanism spec.
SPEC_FORM = "NAME or NAME:param=value,param=value"


#: What a parameter with a ``role`` stands for. A scenario file does not set the first four
#: in ``[mechanism]``: the loader fills them in from ``[population]``; ``inputs`` values are
#: written there as labels and passed to the builder as symbol indices.
ROLES = {
    "alphabet": "the number of input symbols (in a scenario: the number of population.labels)",
    "P0": "a distribution over the inputs (in a scenario: population.P0)",
    "P1": "a distribution over the inputs (in a scenario: population.P1)",
    "prior": "the distribution of the inputs (in a scenario: the population's true distribution)",
    "inputs": "a set of input symbols (in a scenario: a list of labels)",
}


@dataclass(frozen=True)
class Param:
    """One parameter of a catalog entry: its type (``int``, ``float`` or ``str``; ``object``
    for values that only scenario files and Python pass, such as matrices), its default
    (``None``: required, unless ``optional``, when None means "not given"), a one-line help
    and, for parameters that describe the inputs rather than the mechanism, a ``role``
    (:data:`ROLES`)."""

    type: type
    default: Any
    help: str
    optional: bool = False
    role: str | None = None

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in ROLES:  # pragma: no cover - a catalog bug
            raise ValueError(f"role: got {self.role!r}, expected one of {sorted(ROLES)}")


@dataclass(frozen=True)
class Entry:
    """A family of mechanisms: ``build(**params)`` fills in defaults, converts the values to
    the declared types and calls the builder.

    ``tags`` say what the family is for: ``finite`` (finite outputs, exact matrix),
    ``noise`` (additive noise on a number), ``numeric`` (mean estimation of a bounded numeric
    answer: unbiased real reports), ``vector``, ``broken`` (an auditor's target that
    claims more privacy than it has), ``scenario`` (usable as ``[mechanism]`` of a survey
    scenario), ``party`` (a per-party mechanism of the multi-party protocols)."""

    name: str
    description: str
    params: Mapping[str, Param]
    builder: str
    tags: frozenset[str] = field(default_factory=frozenset)
    #: the versions of this family whose privacy holds for the floating-point numbers they
    #: produce: sampler name ("discrete", "snapped") -> entry name (docs/floating-point.md)
    samplers: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, *, strict: bool = False, **params: Any) -> dict[str, Any]:
        """Defaults merged with ``params``, converted to the declared types. ``strict``
        (scenario files): numbers must be numbers, not text that reads as one."""
        out: dict[str, Any] = {}
        for key, value in params.items():
            if key not in self.params:
                raise invalid(
                    "parameter", key, f"a parameter of {self.name}: one of {', '.join(self.params) or '(none)'}"
                )
            out[key] = _coerce(key, value, self.params[key].type, strict)
        resolved: dict[str, Any] = {}
        for key, p in self.params.items():
            if key in out:
                resolved[key] = out[key]
            elif p.default is None and not p.optional:
                raise invalid(key, None, f"a value for {self.name} ({p.help})")
            else:
                resolved[key] = p.default
        return resolved

    def builder_fn(self) -> Callable[..., Any]:
        module, _, attr = self.builder.partition(":")
        return getattr(importlib.import_module(module), attr)

    def build(self, *, strict: bool = False, **params: Any) -> Any:
        """The mechanism with ``params`` (the others at their defaults)."""
        return self.builder_fn()(**self.resolve(strict=strict, **params))

    def claimed(self, params: Mapping[str, Any], mechanism: Any = None) -> tuple[float, float]:
        """The privacy the family claims at these parameters: ``(eps, delta)`` read from
        the parameters of the same names (delta 0 where absent). A family without an eps
        parameter (``matrix``) claims the exact pure eps of the ``mechanism`` built (``inf``
        when none is given). For library mechanisms the claim is their exact privacy; for
        ``broken`` ones it is the false claim."""
        if "eps" in params:
            eps = float(params["eps"])
        else:
            eps = float(mechanism.epsilon(0.0)) if mechanism is not None else math.inf
        return eps, float(params.get("delta", 0.0))

    def spec(self, params: Mapping[str, Any]) -> str:
        """The spec string that rebuilds these parameters with :func:`parse` (parameters at
        None, "not given", are left out)."""
        shown = {k: v for k, v in params.items() if v is not None}
        if not shown:
            return self.name
        return self.name + ":" + ",".join(f"{k}={_format(v)}" for k, v in shown.items())


@dataclass(frozen=True)
class Built:
    """A parsed spec: the entry, the resolved parameters and the mechanism."""

    entry: Entry
    params: dict[str, Any]
    mechanism: Any

    __hash__ = None  # type: ignore[assignment]

    @property
    def spec(self) -> str:
        return self.entry.spec(self.params)


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return json.dumps(np.asarray(value).tolist(), separators=(",", ":"))
    return str(value)


def _coerce(name: str, value: Any, typ: type, strict: bool = False) -> Any:
    """``value`` as ``typ``, from a string (unless ``strict``) or a number; one-line errors."""
    if typ is object:
        if isinstance(value, str):  # the command line: JSON text
            try:
                return json.loads(value)
            except ValueError:
                raise invalid(name, value, "a JSON value such as [[0.9, 0.1], [0.2, 0.8]] or [1, 3]") from None
        return value
    if typ is str:
        if not isinstance(value, str):
            raise invalid(name, value, "a string")
        return value.strip()
    word = "an integer" if typ is int else "a number"
    if isinstance(value, str):
        if strict:
            raise invalid(name, value, word)
        text = value.strip()
        try:
            return typ(text)
        except ValueError:
            if typ is int:
                try:
                    f = float(text)
                except ValueError:
                    raise invalid(name, value, word) from None
                if f.is_integer():
                    return int(f)
            raise invalid(name, value, word) from None
    if isinstance(value, bool):
        raise invalid(name, value, word)
    if typ is int:
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise invalid(name, value, word)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    raise invalid(name, value, word)


# --------------------------------------------------------------------------- entries
_EPS = Param(float, 1.0, "privacy level eps (> 0)")
_SENS = Param(float, 1.0, "sensitivity of the query (the pair is (0, sensitivity))")
_K = Param(int, 2, "alphabet size (>= 2)", role="alphabet")
_B = "ldpsim.mechanisms.builders"
_OPT = "ldpsim.utility.optimal"
_NUM = "ldpsim.mechanisms.numeric"


def _distribution(role: str) -> Param:
    return Param(object, None, ROLES[role], optional=True, role=role)


def _numeric_params() -> dict[str, Param]:
    return {
        "eps": _EPS,
        "lo": Param(float, -1.0, "lower end of the answers' range (finite; answers below it are clipped to it)"),
        "hi": Param(float, 1.0, "upper end of the answers' range (finite, > lo; answers above it are clipped to it)"),
    }


def _utility_params() -> dict[str, Param]:
    return {
        "eps": _EPS,
        "utility": Param(str, "kl", "kl, tv, chi_square, hellinger (divergences of P0 and P1) or mutual_information"),
        "k": Param(
            int, None, "alphabet size (>= 2; implied by P0, P1 or prior when given)", optional=True, role="alphabet"
        ),
        "P0": _distribution("P0"),
        "P1": _distribution("P1"),
        "prior": _distribution("prior"),
    }


def _entries() -> list[Entry]:
    fin = frozenset({"finite", "scenario"})
    noise = frozenset({"noise"})
    broken = frozenset({"broken"})
    numeric = frozenset({"numeric"})
    zoo = "ldpsim.audit.zoo"
    return [
        Entry(
            "randomized_response",
            "k-ary randomized response: the input with probability e^eps/(k-1+e^eps); exact eps = eps",
            {"k": _K, "eps": _EPS},
            "ldpsim.mechanisms.randomized_response:RandomizedResponse",
            fin | {"party", "oracle"},
        ),
        Entry(
            "binary",
            "binary mechanism (two outputs: in T or not): T as given, else T = {x : P0(x) >= P1(x)} for "
            "a prior pair, else the first ceil(k/2) symbols; exact eps = eps",
            {
                "eps": _EPS,
                "k": _K,
                "T": Param(object, None, ROLES["inputs"], optional=True, role="inputs"),
                "P0": _distribution("P0"),
                "P1": _distribution("P1"),
            },
            f"{_B}:binary",
            fin,
        ),
        Entry(
            "truncated_geometric",
            "truncated geometric mechanism on 1..k, clip(x + Z, 1, k); exact eps = eps",
            {"k": Param(int, 4, "alphabet size (>= 2)", role="alphabet"), "eps": _EPS},
            "ldpsim.mechanisms.standard:truncated_geometric",
            fin,
        ),
        Entry(
            "staircase",
            "finite staircase mechanism S diag(theta): the optimal (LP) one for mutual information "
            "under a uniform prior; exact eps = eps",
            {"k": Param(int, 4, "alphabet size (2..14)", role="alphabet"), "eps": _EPS},
            f"{_OPT}:optimal_staircase_for_uniform_mi",
            fin,
        ),
        Entry(
            "optimal",
            "the optimal eps-LDP mechanism for a utility (the staircase linear program of Kairouz et al. "
            "2014): a divergence of P0 and P1, or mutual information under a prior; exact eps = eps",
            _utility_params(),
            f"{_OPT}:optimal_for",
            fin,
        ),
        Entry(
            "better_of_binary_and_rr",
            "whichever of the binary mechanism (of the utility) and randomized response has the larger "
            "utility (Kairouz et al. 2014, Sec. 5); exact eps = eps",
            _utility_params(),
            f"{_OPT}:better_of_binary_and_rr_for",
            fin,
        ),
        Entry(
            "matrix",
            "any finite mechanism from its k x m row-stochastic matrix Q[x, y] = P(y | x); exact eps "
            "from the matrix (max over columns of the log ratio of entries)",
            {
                "matrix": Param(object, None, "the k x m matrix, rows summing to 1 (rows: inputs, columns: outputs)"),
                "k": Param(
                    int, None, "number of inputs, the rows (implied by the matrix)", optional=True, role="alphabet"
                ),
                "output_labels": Param(object, None, "names of the m outputs", optional=True),
            },
            f"{_B}:matrix",
            fin,
        ),
        Entry(
            "quaternary",
            "quaternary (eps, delta) mechanism on a binary input; pure eps is inf, delta(eps) = delta",
            {"eps": _EPS, "delta": Param(float, 0.05, "delta in [0, 1]")},
            "ldpsim.mechanisms.standard:quaternary_mechanism",
            fin | {"party"},
        ),
        Entry(
            "laplace",
            "Laplace noise with scale sensitivity/eps; exact eps = eps",
            {"eps": _EPS, "sensitivity": _SENS},
            f"{_B}:laplace_for",
            noise,
            {"discrete": "discrete_laplace", "snapped": "snapped_laplace"},
        ),
        Entry(
            "gaussian",
            "Gaussian noise, analytic calibration (Balle-Wang 2018): exact delta(eps) <= delta; pure eps inf",
            {"eps": _EPS, "delta": Param(float, 1e-5, "delta in (0, 1)"), "sensitivity": _SENS},
            f"{_B}:gaussian_analytic",
            noise,
            {"discrete": "discrete_gaussian"},
        ),
        Entry(
            "gaussian_classical",
            "Gaussian noise, classical calibration sigma = sensitivity sqrt(2 log(1.25/delta))/eps (eps < 1)",
            {
                "eps": Param(float, 0.5, "privacy level eps in (0, 1)"),
                "delta": Param(float, 1e-5, "delta in (0, 1)"),
                "sensitivity": _SENS,
            },
            f"{_B}:gaussian_classical",
            noise,
        ),
        Entry(
            "truncated_laplace",
            "truncated Laplace noise (Geng-Ding-Guo-Kumar 2020): exactly (eps, delta)-DP; pure eps inf",
            {"eps": _EPS, "delta": Param(float, 1e-5, "delta in (0, 1/2)"), "sensitivity": _SENS},
            "ldpsim.mechanisms.noise.truncated_laplace:TruncatedLaplace",
            noise,
        ),
        Entry(
            "staircase_noise",
            "staircase noise (Geng-Viswanath), variance-optimal gamma; exact eps = eps",
            {"eps": _EPS, "sensitivity": _SENS},
            "ldpsim.mechanisms.noise.staircase:Staircase",
            noise,
        ),
        Entry(
            "geometric",
            "two-sided geometric noise for integer queries; exact eps = eps",
            {"eps": _EPS, "sensitivity": Param(int, 1, "integer sensitivity (>= 1)")},
            "ldpsim.mechanisms.noise.geometric:Geometric",
            noise,
        ),
        # ---- exact discrete samplers (Canonne, Kamath and Steinke 2020): entries go here
        Entry(
            "discrete_laplace",
            "discrete Laplace noise p(z) prop. to exp(-eps |z|/sensitivity) on the integers, exact integer-only "
            "sampler (Canonne-Kamath-Steinke 2020, Alg. 2; rng='os' allowed); exact eps = eps",
            {"eps": _EPS, "sensitivity": Param(int, 1, "integer sensitivity (>= 1)")},
            "ldpsim.mechanisms.noise.discrete_laplace:DiscreteLaplace",
            noise,
        ),
        Entry(
            "discrete_gaussian",
            "discrete Gaussian noise N_Z(0, sigma2), exact integer-only sampler (Canonne-Kamath-Steinke 2020, "
            "Alg. 3; rng='os' allowed); the least sigma2 in (1/1024)Z with exact delta(eps) <= delta; pure eps inf",
            {
                "eps": _EPS,
                "delta": Param(float, 1e-5, "delta in (0, 1)"),
                "sensitivity": Param(int, 1, "integer sensitivity (>= 1)"),
            },
            f"{_B}:discrete_gaussian_calibrated",
            noise,
        ),
        # ---- snapping (Mironov 2012): entries go here
        Entry(
            "snapped_laplace",
            "snapping mechanism (Mironov 2012): clamp to [-bound, bound], Laplace noise from the log of a uniform "
            "double, rounding to a power-of-two grid, clamp; proven eps bound (1 + 12 b eta)/lambda + 2 eta <= eps "
            "(b = bound/sensitivity, eta = 2^-52) for the floats produced",
            {
                "eps": _EPS,
                "bound": Param(
                    float, 16.0, "clamping bound B in query units (above sensitivity/eps, within the noise's reach)"
                ),
                "sensitivity": Param(
                    float, 1.0, "sensitivity of the query, a power of two (the pair is (0, sensitivity))"
                ),
            },
            "ldpsim.mechanisms.noise.snapping:SnappedLaplace",
            noise,
        ),
        Entry(
            "norm_laplace",
            "l_p Laplace noise on R^d (density prop. to exp(-eps ||y - x||_p)), vector outputs; exact eps = eps "
            "for inputs at l_p distance 1 (the pair 0, e_1)",
            {
                "d": Param(int, 4, "dimension (>= 1)"),
                "p": Param(float, 2.0, "the norm, >= 1 (inf allowed)"),
                "eps": _EPS,
            },
            f"{_B}:norm_laplace",
            frozenset({"vector"}),
        ),
        # ---- unary encoding (ldpsim/mechanisms/oracles/unary.py)
        Entry(
            "sue",
            "symmetric unary encoding (basic one-time RAPPOR, Erlingsson et al. 2014): k bits, the input's 1 "
            "with probability e^(eps/2)/(e^(eps/2)+1), every other bit 1 with 1/(e^(eps/2)+1); exact eps = eps, "
            "delta(t) = p^2 (1 - e^(t - eps)) below eps",
            {"k": Param(int, 4, "alphabet size (>= 2)", role="alphabet"), "eps": _EPS},
            "ldpsim.mechanisms.oracles.unary:SymmetricUnaryEncoding",
            frozenset({"oracle", "scenario"}),
        ),
        Entry(
            "oue",
            "optimised unary encoding (Wang et al. 2017): k bits, the input's 1 with probability 1/2, every "
            "other bit 1 with 1/(e^eps+1); exact eps = eps, delta(t) = (1 - q)/2 (1 - e^(t - eps)) below eps",
            {"k": Param(int, 4, "alphabet size (>= 2)", role="alphabet"), "eps": _EPS},
            "ldpsim.mechanisms.oracles.unary:OptimizedUnaryEncoding",
            frozenset({"oracle", "scenario"}),
        ),
        Entry(
            "rappor",
            "RAPPOR (Erlingsson et al. 2014): the candidate's m-bit Bloom filter (h hashes of the cohort), "
            "permanent randomized response f, instantaneous p and q; no eps parameter: exact eps of one report "
            "from the exact privacy-loss law of the worst pair of candidates (claimed exactly); "
            "epsilon_longitudinal() for memoised reports",
            {
                "k": Param(int, 2, "number of candidate strings (>= 2); inputs are their indices", role="alphabet"),
                "m": Param(
                    int,
                    32,
                    "Bloom filter bits (1..2^24; estimating k frequencies needs m >= k and patterns of full rank)",
                ),
                "h": Param(int, 2, "hash functions (1..64)"),
                "f": Param(
                    float, 0.5, "permanent randomized response: a bit becomes a fair coin with probability f, in [0, 1]"
                ),
                "p": Param(float, 0.5, "P(report 1 | permanent bit 0), in [0, 1]"),
                "q": Param(float, 0.75, "P(report 1 | permanent bit 1), in [0, 1]"),
                "cohort": Param(int, 0, "which fixed set of h hash functions (an integer >= 0)"),
            },
            "ldpsim.mechanisms.oracles.rappor:Rappor",
            frozenset({"oracle", "scenario"}),
        ),
        Entry(
            "olh",
            "optimised local hashing (Wang et al. 2017): each client hashes its answer with its own seed of a "
            "degree-2 polynomial family mod 2^31-1 into g = max(2, round(e^eps+1)) buckets and reports the seed and "
            "the bucket by g-ary randomized response; exact eps = eps, delta(t) = p(1-gamma)(1-e^(t-eps)) below it",
            {
                "k": _K,
                "eps": _EPS,
                "g": Param(
                    int,
                    None,
                    "hash range g in 2..2^31-1 (not given: the optimal max(2, round(e^eps + 1)))",
                    optional=True,
                ),
            },
            "ldpsim.mechanisms.oracles.hashing:OptimizedLocalHashing",
            frozenset({"oracle", "scenario"}),
        ),
        Entry(
            "blh",
            "binary local hashing (Bassily-Smith 2015, Wang et al. 2017): local hashing into g = 2 buckets with "
            "binary randomized response, a per-client degree-2 polynomial hash mod 2^31-1; exact eps = eps",
            {"k": _K, "eps": _EPS},
            "ldpsim.mechanisms.oracles.hashing:BinaryLocalHashing",
            frozenset({"oracle", "scenario"}),
        ),
        Entry(
            "hadamard_response",
            "Hadamard response (Acharya, Sun and Zhang 2019): K = 2^ceil(log2(k+1)) outputs, uniform on the K/2 "
            "of row x+1 of the Hadamard matrix w.p. e^eps/(1+e^eps), else on the other K/2; exact eps = eps, "
            "delta(t) = (e^eps - e^t)/(2(1+e^eps)) below it",
            {"k": Param(int, 4, "alphabet size (>= 2)", role="alphabet"), "eps": _EPS},
            "ldpsim.mechanisms.oracles.hadamard:HadamardResponse",
            frozenset({"oracle", "scenario", "finite"}),
        ),
        Entry(
            "subset_selection",
            "subset selection (Wang et al. 2016; Ye and Barg 2018): a subset of omega "
            "of the k answers, e^eps times likelier when it holds the input; exact "
            "eps = eps, delta(t) = p_in (k-omega)/(k-1) (1 - e^(t-eps)) below it",
            {
                "k": Param(int, 4, "alphabet size (>= 2)", role="alphabet"),
                "eps": _EPS,
                "omega": Param(
                    int,
                    None,
                    "subset size in 1..k-1 (default: floor or ceil of k/(e^eps+1), whichever has "
                    "the smaller exact worst-case l2 risk)",
                    optional=True,
                ),
            },
            "ldpsim.mechanisms.oracles.subset:SubsetSelection",
            frozenset({"oracle", "scenario"}),
        ),
        # ---- mean estimation of a bounded numeric answer (ldpsim/mechanisms/numeric.py)
        Entry(
            "laplace_bounded",
            "mean estimation: the answer clipped to [lo, hi] plus Laplace noise of scale (hi - lo)/eps; unbiased, "
            "variance 2 ((hi - lo)/eps)^2; exact eps = eps",
            _numeric_params(),
            f"{_NUM}:LaplaceBounded",
            numeric,
            {"discrete": "discrete_laplace_bounded", "snapped": "snapped_laplace_bounded"},
        ),
        Entry(
            "discrete_laplace_bounded",
            "mean estimation of integer answers: the answer clipped to [lo, hi] (integers) plus discrete Laplace noise "
            "P(z) ~ exp(-eps |z|/(hi - lo)) from the exact sampler of Canonne, Kamath and Steinke (2020); integer "
            "reports, unbiased; exact eps = eps",
            {
                "eps": _EPS,
                "lo": Param(float, -1.0, "lower end of the answers' range (an integer)"),
                "hi": Param(float, 1.0, "upper end of the answers' range (an integer > lo)"),
            },
            f"{_NUM}:DiscreteLaplaceBounded",
            numeric,
        ),
        Entry(
            "snapped_laplace_bounded",
            "mean estimation through Mironov's (2012) snapping mechanism on (answer - lo)/(hi - lo) with a public "
            "dither that removes the grid's bias: privacy holds for the doubles produced (pure eps <= eps, "
            "Mironov's bound); unbiased to 1e-12 (hi - lo); variance (hi - lo)^2 (2 lambda^2 + Lambda^2/12)",
            _numeric_params(),
            f"{_NUM}:SnappedLaplaceBounded",
            numeric,
        ),
        Entry(
            "staircase_bounded",
            "mean estimation: the answer clipped to [lo, hi] plus staircase noise for sensitivity hi - lo "
            "(Geng-Viswanath, variance-optimal gamma); unbiased, never more variance than Laplace; exact eps = eps",
            _numeric_params(),
            f"{_NUM}:StaircaseBounded",
            numeric,
        ),
        Entry(
            "duchi",
            "mean estimation (Duchi, Jordan and Wainwright 2018): one of two reports mid +- half C, C = coth(eps/2), "
            "unbiased for the answer in [lo, hi]; exact eps = eps",
            _numeric_params(),
            f"{_NUM}:Duchi",
            numeric,
        ),
        Entry(
            "piecewise",
            "mean estimation, the piecewise mechanism (Wang et al. 2019): a density on mid +- half C, C = coth(eps/4), "
            "e^eps times higher on a window that moves with the answer; unbiased; exact eps = eps",
            _numeric_params(),
            f"{_NUM}:Piecewise",
            numeric,
        ),
        Entry(
            "hybrid",
            "mean estimation, the hybrid mechanism (Wang et al. 2019): piecewise w.p. 1 - e^(-eps/2), else Duchi's, "
            "for eps > 0.609352 (Duchi's alone below); unbiased, the same variance for every answer; exact eps = eps",
            _numeric_params(),
            f"{_NUM}:Hybrid",
            numeric,
        ),
        Entry(
            "square_wave",
            "the Square Wave mechanism (Li et al. 2020): a report e^eps times likelier within b of the answer "
            "(b from eps, about eps e^-eps at large eps) on a range 2b wider, rescaled to be unbiased for the "
            "answer; its raw reports are what a distribution estimate decodes; exact eps = eps (eps <= 700)",
            _numeric_params(),
            f"{_NUM}:SquareWave",
            numeric,
        ),
        # ---- memoisation (ldpsim/mechanisms/memo.py)
        Entry(
            "memoised_rr",
            "memoised k-ary randomized response (Erlingsson et al. 2014's permanent and instantaneous "
            "randomisation, k-ary randomized response in place of Bloom bits): a permanent k-RR at eps_permanent "
            "drawn once per value and reused, each report a k-RR at eps_instantaneous of it; one report is k-RR "
            "with the product keep probability, exact eps log((e^a e^b + k - 1)/(e^a + e^b + k - 2)) for a = "
            "eps_permanent, b = eps_instantaneous; epsilon_longitudinal() = eps_permanent, epsilon_reports(c) exact "
            "for c reports of one value",
            {
                "k": _K,
                "eps_permanent": Param(
                    float,
                    2.0,
                    "eps of the permanent randomized response, drawn once per value (>= 0): "
                    "the bound for any number of reports of one value",
                ),
                "eps_instantaneous": Param(
                    float, 1.0, "eps of the instantaneous randomized response of the memo, drawn per report (>= 0)"
                ),
            },
            "ldpsim.mechanisms.memo:memoised_rr",
            fin,
        ),
        Entry(
            "broken.doubled_rr",
            "deliberately broken: k-ary randomized response whose probabilities use ``2 eps``.",
            {"k": _K, "eps": _EPS},
            f"{zoo}:DoubledRR",
            broken,
        ),
        Entry(
            "broken.unary_no_reset",
            "deliberately broken: Symmetric unary encoding (RAPPOR-like) whose client never randomises its true bit.",
            {"k": Param(int, 4, "alphabet size (>= 2)"), "eps": _EPS},
            f"{zoo}:UnaryNoReset",
            broken,
        ),
        Entry(
            "broken.laplace_wrong_scale",
            "deliberately broken: Laplace noise with scale ``eps`` instead of ``1/eps`` on a sensitivity-1 query.",
            {"eps": Param(float, 0.5, "claimed privacy level eps (> 0)")},
            f"{zoo}:LaplaceWrongScale",
            broken,
        ),
        Entry(
            "broken.histogram_wrong_scale",
            "deliberately broken: A histogram over ``bins`` bins with ``Lap(eps)`` noise per bin instead of "
            "``Lap(1/eps)``.",
            {
                "eps": Param(float, 0.5, "claimed privacy level eps (> 0)"),
                "bins": Param(int, 4, "number of bins"),
                "affected": Param(int, 0, "the bin the neighbouring data set changes"),
            },
            f"{zoo}:HistogramWrongScale",
            broken,
        ),
        Entry(
            "broken.noisy_max_value",
            "deliberately broken: Report-noisy-max over ``m`` "
            "counting queries that releases the noisy maximum *value*.",
            {"eps": _EPS, "m": Param(int, 5, "number of queries")},
            f"{zoo}:NoisyMaxValue",
            broken,
        ),
        Entry(
            "broken.svt_no_query_noise",
            "deliberately broken: Sparse vector without noise on "
            "the queries (Lyu-Su-Li 2017, Alg. 5, Stoddard et al.).",
            {"eps": _EPS, "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTNoQueryNoise",
            broken,
        ),
        Entry(
            "broken.svt_no_cutoff",
            "deliberately broken: Sparse vector that never stops (Lyu-Su-Li 2017, Alg. 6, Chen et al. 2015).",
            {"eps": _EPS, "m": Param(int, 3, "number of queries"), "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTNoCutoff",
            broken,
        ),
        Entry(
            "broken.svt_returns_value",
            "deliberately broken: Sparse vector that releases the noisy query value ``q_i + nu_i`` for its top "
            "(Lyu-Su-Li 2017, Alg. 3, after Roth's lecture notes), cutoff ``c = 1``.",
            {"eps": _EPS, "m": Param(int, 7, "number of queries"), "T": Param(float, 0.0, "threshold")},
            f"{zoo}:SVTReturnsValue",
            broken,
        ),
    ]


#: name -> entry, library mechanisms first, then the broken targets of the auditor.
CATALOG: dict[str, Entry] = {e.name: e for e in _entries()}


def names(tag: str | None = None) -> list[str]:
    """Sorted entry names (those with ``tag`` only, if given)."""
    return sorted(n for n, e in CATALOG.items() if tag is None or tag in e.tags)


def entry(name: Any) -> Entry:
    """The entry called ``name``; a one-line error listing the names otherwise."""
    if not isinstance(name, str) or name not in CATALOG:
        raise invalid("mechanism", name, f"one of {', '.join(names())}{did_you_mean(name, names())}")
    return CATALOG[name]


def build(name: str, **params: Any) -> Any:
    """Build the mechanism ``name`` with ``params`` (the others at their defaults)."""
    return entry(name).build(**params)


def parse(spec: str) -> Built:
    """Parse and build ``"name"`` or ``"name:param=value,..."``. Unknown names or
    parameters, malformed specs and bad values raise a one-line
    :class:`~ldpsim.errors.LdpSimError`; errors of the builder pass through."""
    if not isinstance(spec, str):
        raise invalid("spec", spec, SPEC_FORM)
    name, sep, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise invalid("spec", spec, SPEC_FORM)
    e = entry(name)
    given: dict[str, Any] = {}
    if sep:
        if not rest.strip():
            raise invalid("spec", spec, SPEC_FORM + " (parameters after ':')")
        for item in _items(rest):
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not key:
                raise invalid("spec", spec, SPEC_FORM + f" (bad item {item.strip()!r})")
            if not value:
                raise invalid(key, value, "a value after '='")
            if key in given:
                raise invalid("parameter", key, "each parameter at most once")
            if key not in e.params:
                raise invalid(
                    "parameter",
                    key,
                    f"a parameter of {name}: one of {', '.join(e.params) or '(none)'}{did_you_mean(key, e.params)}",
                )
            given[key] = value
    params = e.resolve(**given)
    return Built(e, params, e.builder_fn()(**params))


def _items(rest: str) -> list[str]:
    """``param=value`` items separated by the commas outside brackets (JSON lists keep theirs)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(rest[start:i])
            start = i + 1
    items.append(rest[start:])
    return items


#: The sampler of every family's plain version, in ``sampler`` keys of scenario files.
FLOAT_SAMPLER = "float"


def with_sampler(name: str, sampler: Any, where: str = "sampler") -> str:
    """The entry of family ``name`` drawn by ``sampler``: ``"float"`` is the family itself;
    ``"discrete"`` or ``"snapped"`` its safe version (:attr:`Entry.samplers`). One-line
    errors naming ``where`` for a sampler the family does not have."""
    e = entry(name)
    choices = [FLOAT_SAMPLER, *e.samplers]
    if not isinstance(sampler, str) or sampler not in choices:
        raise invalid(where, sampler, f"one of {', '.join(repr(c) for c in choices)} for {name}")
    return name if sampler == FLOAT_SAMPLER else e.samplers[sampler]


def check_catalog() -> None:
    """Every builder string resolves (used by the contract tests)."""
    for e in CATALOG.values():
        try:
            e.builder_fn()
        except (ImportError, AttributeError) as exc:  # pragma: no cover - caught by the tests
            raise LdpSimError(
                f"catalog: entry {e.name!r} names builder {e.builder!r}, which does not resolve ({exc})"
            ) from None
