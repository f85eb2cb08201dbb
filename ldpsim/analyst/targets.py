"""The catalog of audit targets: every mechanism family of the library, and the broken zoo.

A :class:`Target` bundles what :func:`ldpsim.analyst.audit.audit` needs (a sampler and
candidate neighbouring pairs) with what the audit is checked against: the claimed
``(eps, delta)`` and the *exact* privacy of the mechanism (``true_eps``, ``true_delta``).

``TARGETS`` maps a name to a spec (name, description, ordered parameters with their type,
default and help, and ``build(**params)``); :func:`target` builds one by name and
:func:`parse_spec` from a command-line string such as ``"randomized_response:k=4,eps=1"``
or ``"broken.svt_returns_value:eps=1,m=7"``.

Conventions:

* finite library mechanisms: outputs are int64 symbol codes; candidate pairs are all
  unordered pairs of input labels when ``k <= 6``, else ``(label_0, label_j)``; ``true_eps``
  is the exact ``epsilon()`` (over *all* pairs of inputs) and ``true_delta`` the exact
  hockey-stick ``delta(eps)``;
* noise mechanisms: outputs are float64 ``x + noise``; the pair is ``(0.0, sensitivity)``
  (the worst case: the full-sensitivity shift); ``true_eps = epsilon(0)`` and
  ``true_delta = delta(eps)`` exactly;
* broken mechanisms (``"broken." + key`` of :data:`ldpsim.mechanisms.broken.ZOO`): their
  own ``inputs`` and documented ``true_eps``; ``true_delta`` is the exact ``delta(eps)`` of
  their ``matrix()`` for finite ones (over the rows of ``matrix()``, the same scope as their
  ``true_eps``) and None for real-valued ones.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from typing import Any, Callable, Mapping

import numpy as np

from ldpsim.analyst.audit import sampler_of
from ldpsim.errors import invalid

__all__ = ["Target", "TargetSpec", "TARGETS", "target", "parse_spec", "names"]

#: Largest alphabet for which every unordered pair of inputs is a candidate pair.
ALL_PAIRS_MAX_K = 6

ParamSpec = tuple[type, Any, str]  # (type, default, help)


# --------------------------------------------------------------------------- target
@dataclass(frozen=True)
class Target:
    """One audit target: a mechanism, how to sample it, and its claimed and exact privacy."""

    name: str
    params: dict[str, Any]
    mechanism: Any
    sampler: Callable[[Any, int, np.random.Generator], np.ndarray]
    pairs: list[tuple[Any, Any]]
    claimed_eps: float
    claimed_delta: float
    true_eps: float
    true_delta: Callable[[float], float] | None
    broken: bool
    outputs: str  # "finite" or "real"
    description: str

    __hash__ = None  # type: ignore[assignment]  # params is a dict

    @property
    def spec(self) -> str:
        """The spec string that rebuilds this target with :func:`parse_spec`."""
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={_format(v)}" for k, v in self.params.items())


def _format(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- specs
def _coerce(name: str, value: Any, typ: type) -> Any:
    """``value`` as ``typ`` (int or float), from a string or a number; one-line errors."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return typ(text)
        except ValueError:
            raise invalid(name, value, f"{'an integer' if typ is int else 'a number'}") from None
    if isinstance(value, bool):
        raise invalid(name, value, f"{'an integer' if typ is int else 'a number'}")
    if typ is int:
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise invalid(name, value, "an integer")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    raise invalid(name, value, "a number")


class TargetSpec:
    """A named family of targets: ``params`` maps each parameter to ``(type, default, help)``
    in order; :meth:`build` fills in the defaults, checks and converts the values."""

    def __init__(
        self,
        name: str,
        description: str,
        params: Mapping[str, ParamSpec],
        builder: Callable[..., Target],
    ) -> None:
        self.name = name
        self.description = description
        self._params = dict(params)
        self._builder = builder

    @property
    def params(self) -> dict[str, ParamSpec]:
        return self._params

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={d[1]!r}" for k, d in self.params.items())
        return f"TargetSpec({self.name}: {args})"

    def resolve(self, **params: Any) -> dict[str, Any]:
        """Defaults merged with ``params``, converted to the declared types."""
        spec = self.params
        out: dict[str, Any] = {}
        for key, value in params.items():
            if key not in spec:
                expected = f"a parameter of {self.name}: one of {', '.join(spec) or '(none)'}"
                raise invalid("parameter", key, expected)
            out[key] = _coerce(key, value, spec[key][0])
        return {key: out.get(key, d[1]) for key, d in spec.items()}

    def build(self, **params: Any) -> Target:
        return self._builder(self.name, self.description, self.resolve(**params))


class _BrokenSpec(TargetSpec):
    """A spec for one broken mechanism: parameters read from its constructor signature, with
    the defaults of its :data:`~ldpsim.mechanisms.broken.ZOO` instance (built lazily)."""

    def __init__(self, key: str, factory: Callable[[], Any]) -> None:
        self.key = key
        self.name = "broken." + key
        self._factory = factory

    @cached_property
    def _default(self) -> Any:
        return self._factory()

    @property
    def description(self) -> str:  # type: ignore[override]
        doc = inspect.getdoc(type(self._default)) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        return f"deliberately broken: {first}"

    @cached_property
    def params(self) -> dict[str, ParamSpec]:  # type: ignore[override]
        obj = self._default
        out: dict[str, ParamSpec] = {}
        for pname, p in inspect.signature(type(obj).__init__).parameters.items():
            if pname == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            attr = "claimed_eps" if pname == "eps" else pname
            default = getattr(obj, attr, p.default)
            ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
            typ = int if ann == "int" or (ann == "" and isinstance(default, int)) else float
            out[pname] = (typ, typ(default), f"constructor parameter of {type(obj).__name__} (ZOO default {default!r})")
        return out

    def build(self, **params: Any) -> Target:
        return _build_broken(self.name, self.description, self.resolve(**params), cls=type(self._default))


# --------------------------------------------------------------------------- builders
def _finite_pairs(labels: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    if len(labels) <= ALL_PAIRS_MAX_K:
        return list(combinations(labels, 2))
    return [(labels[0], labels[j]) for j in range(1, len(labels))]


def _finite_target(name, description, params, mech, claimed_eps, claimed_delta=0.0) -> Target:
    return Target(
        name=name,
        params=dict(params),
        mechanism=mech,
        sampler=sampler_of(mech),
        pairs=_finite_pairs(tuple(mech.input_labels)),
        claimed_eps=float(claimed_eps),
        claimed_delta=float(claimed_delta),
        true_eps=float(mech.epsilon()),
        true_delta=lambda eps, _m=mech: float(_m.delta(eps)),
        broken=False,
        outputs="finite",
        description=description,
    )


def _noise_target(name, description, params, mech, claimed_eps, claimed_delta=0.0) -> Target:
    return Target(
        name=name,
        params=dict(params),
        mechanism=mech,
        sampler=sampler_of(mech),
        pairs=[(0.0, float(mech.sensitivity))],
        claimed_eps=float(claimed_eps),
        claimed_delta=float(claimed_delta),
        true_eps=float(mech.epsilon(0.0)),
        true_delta=lambda eps, _m=mech: float(_m.delta(eps)),
        broken=False,
        outputs="real",
        description=description,
    )


def _build_rr(name, description, p):
    from ldpsim.mechanisms import randomized_response

    return _finite_target(name, description, p, randomized_response(p["k"], p["eps"]), p["eps"])


def _build_binary(name, description, p):
    from ldpsim.mechanisms import binary_mechanism
    from ldpsim import _validate as v

    k = v.alphabet_size(p["k"], "k")
    T = list(range((k + 1) // 2))  # the first half of the symbols (ceil)
    return _finite_target(name, description, p, binary_mechanism(p["eps"], T, k), p["eps"])


def _build_trunc_geom(name, description, p):
    from ldpsim.mechanisms import truncated_geometric

    return _finite_target(name, description, p, truncated_geometric(p["k"], p["eps"]), p["eps"])


def _build_staircase(name, description, p):
    """The optimal staircase mechanism for mutual information under a uniform prior (the LP
    of :mod:`ldpsim.utility.optimal`), rebuilt with :func:`staircase_mechanism` from the
    LP's patterns and weights."""
    from ldpsim import _validate as v
    from ldpsim.mechanisms import staircase_mechanism
    from ldpsim.utility.optimal import optimal_mechanism
    from ldpsim.utility.utilities import MutualInformation

    k = v.alphabet_size(p["k"], "k")
    eps = v.epsilon(p["eps"], "eps")
    res = optimal_mechanism(MutualInformation(np.full(k, 1.0 / k)), eps)
    # the LP's weights are for the scaled columns e^-eps e^(eps b): staircase weights th e^-eps
    theta = np.asarray(res.weights, dtype=np.float64) * math.exp(-eps)
    mech = staircase_mechanism(eps, theta, patterns=np.asarray(res.patterns, dtype=np.int64), k=k)
    return _finite_target(name, description, p, mech, eps)


def _build_quaternary(name, description, p):
    from ldpsim.mechanisms import quaternary_mechanism

    mech = quaternary_mechanism(p["eps"], p["delta"])
    return _finite_target(name, description, p, mech, p["eps"], p["delta"])


def _build_laplace(name, description, p):
    from ldpsim.mechanisms.noise import Laplace

    eps, sens = p["eps"], p["sensitivity"]
    for pname, val in (("eps", eps), ("sensitivity", sens)):
        if not (math.isfinite(val) and val > 0):  # checked here: the scale is sens / eps
            raise invalid(pname, val, "a finite number > 0")
    return _noise_target(name, description, p, Laplace(sens / eps, sens), eps)


def _build_gaussian(name, description, p):
    from ldpsim.mechanisms.noise import Gaussian

    mech = Gaussian.analytic(p["eps"], p["delta"], p["sensitivity"])
    return _noise_target(name, description, p, mech, p["eps"], p["delta"])


def _build_gaussian_classical(name, description, p):
    from ldpsim.mechanisms.noise import Gaussian

    mech = Gaussian.classical(p["eps"], p["delta"], p["sensitivity"])
    return _noise_target(name, description, p, mech, p["eps"], p["delta"])


def _build_truncated_laplace(name, description, p):
    from ldpsim.mechanisms.noise import TruncatedLaplace

    mech = TruncatedLaplace(p["eps"], p["delta"], p["sensitivity"])
    return _noise_target(name, description, p, mech, p["eps"], p["delta"])


def _build_staircase_noise(name, description, p):
    from ldpsim.mechanisms.noise import Staircase

    return _noise_target(name, description, p, Staircase(p["eps"], p["sensitivity"]), p["eps"])


def _build_geometric(name, description, p):
    from ldpsim.mechanisms.noise import Geometric

    return _noise_target(name, description, p, Geometric(p["eps"], p["sensitivity"]), p["eps"])


def _build_norm_laplace(name, description, p):
    from ldpsim import _validate as v
    from ldpsim.highdim import NormLaplace

    mech = NormLaplace(v.integer(p["d"], "d", minimum=1), p["p"], p["eps"])
    e1 = tuple(float(j == 0) for j in range(mech.n))
    return Target(
        name=name,
        params=dict(p),
        mechanism=mech,
        sampler=mech.sample,
        pairs=[(tuple(0.0 for _ in range(mech.n)), e1)],
        claimed_eps=float(mech.eps),
        claimed_delta=0.0,
        true_eps=mech.epsilon(0.0),  # the pair is at l_p distance 1 for every p
        true_delta=None,  # only pure claims are made for this family
        broken=False,
        outputs="real",
        description=description,
    )


def _build_broken(name, description, p, *, cls) -> Target:
    obj = cls(**p)
    finite = bool(getattr(obj, "finite", True))
    true_delta = None
    if finite and hasattr(obj, "matrix"):
        from ldpsim.mechanisms.finite import from_matrix

        fm = from_matrix(obj.matrix())
        true_delta = lambda eps, _m=fm: float(_m.delta(eps))  # noqa: E731
    return Target(
        name=name,
        params=dict(p),
        mechanism=obj,
        sampler=obj.sample,
        pairs=list(obj.inputs),
        claimed_eps=float(obj.claimed_eps),
        claimed_delta=0.0,
        true_eps=float(obj.true_eps),
        true_delta=true_delta,
        broken=True,
        outputs="finite" if finite else "real",
        description=description,
    )


_EPS = (float, 1.0, "privacy level eps (> 0)")
_SENS = (float, 1.0, "sensitivity of the query (the pair is (0, sensitivity))")


def _delta(default: float, upper: str) -> ParamSpec:
    return (float, default, f"delta in (0, {upper})")


_LIBRARY: list[TargetSpec] = [
    TargetSpec(
        "randomized_response",
        "k-ary randomized response: the input with probability e^eps/(k-1+e^eps); exact eps = eps",
        {"k": (int, 2, "alphabet size (>= 2)"), "eps": _EPS},
        _build_rr,
    ),
    TargetSpec(
        "binary",
        "binary mechanism (two outputs) with T = the first ceil(k/2) symbols; exact eps = eps",
        {"eps": _EPS, "k": (int, 2, "alphabet size (>= 2)")},
        _build_binary,
    ),
    TargetSpec(
        "truncated_geometric",
        "truncated geometric mechanism on 1..k, clip(x + Z, 1, k); exact eps = eps",
        {"k": (int, 4, "alphabet size (>= 2)"), "eps": _EPS},
        _build_trunc_geom,
    ),
    TargetSpec(
        "staircase",
        "finite staircase mechanism S diag(theta): the optimal (LP) one for mutual information "
        "under a uniform prior; exact eps = eps",
        {"k": (int, 4, "alphabet size (2..14)"), "eps": _EPS},
        _build_staircase,
    ),
    TargetSpec(
        "quaternary",
        "quaternary (eps, delta) mechanism on a binary input; pure eps is inf, delta(eps) = delta",
        {"eps": _EPS, "delta": (float, 0.05, "delta in [0, 1]")},
        _build_quaternary,
    ),
    TargetSpec(
        "laplace",
        "Laplace noise with scale sensitivity/eps; exact eps = eps",
        {"eps": _EPS, "sensitivity": _SENS},
        _build_laplace,
    ),
    TargetSpec(
        "gaussian",
        "Gaussian noise, analytic calibration (Balle-Wang 2018): exact delta(eps) <= delta; pure eps inf",
        {"eps": _EPS, "delta": _delta(1e-5, "1"), "sensitivity": _SENS},
        _build_gaussian,
    ),
    TargetSpec(
        "gaussian_classical",
        "Gaussian noise, classical calibration sigma = sensitivity sqrt(2 log(1.25/delta))/eps (eps < 1)",
        {"eps": (float, 0.5, "privacy level eps in (0, 1)"), "delta": _delta(1e-5, "1"), "sensitivity": _SENS},
        _build_gaussian_classical,
    ),
    TargetSpec(
        "truncated_laplace",
        "truncated Laplace noise (Geng-Ding-Guo-Kumar 2020): exactly (eps, delta)-DP; pure eps inf",
        {"eps": _EPS, "delta": _delta(1e-5, "1/2"), "sensitivity": _SENS},
        _build_truncated_laplace,
    ),
    TargetSpec(
        "staircase_noise",
        "staircase noise (Geng-Viswanath), variance-optimal gamma; exact eps = eps",
        {"eps": _EPS, "sensitivity": _SENS},
        _build_staircase_noise,
    ),
    TargetSpec(
        "geometric",
        "two-sided geometric noise for integer queries; exact eps = eps",
        {"eps": _EPS, "sensitivity": (int, 1, "integer sensitivity (>= 1)")},
        _build_geometric,
    ),
    TargetSpec(
        "norm_laplace",
        "l_p Laplace noise on R^d (density prop. to exp(-eps ||y - x||_p)), vector outputs; exact eps = eps "
        "for inputs at l_p distance 1 (the pair 0, e_1)",
        {"d": (int, 4, "dimension (>= 1)"), "p": (float, 2.0, "the norm, >= 1 (inf allowed)"), "eps": _EPS},
        _build_norm_laplace,
    ),
]


def _broken_specs() -> list[TargetSpec]:
    from ldpsim.mechanisms.broken import ZOO

    return [_BrokenSpec(key, factory) for key, factory in ZOO.items()]


#: name -> spec, library mechanisms first, then the broken zoo.
TARGETS: dict[str, TargetSpec] = {s.name: s for s in _LIBRARY + _broken_specs()}


def names() -> list[str]:
    """Sorted target names."""
    return sorted(TARGETS)


def _spec_for(name: Any) -> TargetSpec:
    if not isinstance(name, str) or name not in TARGETS:
        raise invalid("mechanism", name, f"one of {', '.join(names())}")
    return TARGETS[name]


def target(name: str, **params: Any) -> Target:
    """Build the target ``name`` with ``params`` (the others at their defaults)."""
    return _spec_for(name).build(**params)


_SPEC_FORM = "NAME or NAME:param=value,param=value"


def parse_spec(spec: str) -> Target:
    """Build a target from ``"name"`` or ``"name:param=value,..."`` (values converted to the
    declared types). Unknown names or parameters, malformed specs and bad values raise a
    one-line :class:`~ldpsim.errors.LdpSimError`; errors of the mechanism's own constructor
    pass through."""
    if not isinstance(spec, str):
        raise invalid("spec", spec, _SPEC_FORM)
    name, sep, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise invalid("spec", spec, _SPEC_FORM)
    ts = _spec_for(name)
    params: dict[str, str] = {}
    if sep:
        if not rest.strip():
            raise invalid("spec", spec, _SPEC_FORM + " (parameters after ':')")
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not key:
                raise invalid("spec", spec, _SPEC_FORM + f" (bad item {item.strip()!r})")
            if not value:
                raise invalid(key, value, "a value after '='")
            if key in params:
                raise invalid("parameter", key, "each parameter at most once")
            if key not in ts.params:
                raise invalid("parameter", key, f"a parameter of {name}: one of {', '.join(ts.params) or '(none)'}")
            params[key] = value
    return ts.build(**params)
