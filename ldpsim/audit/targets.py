"""Audit targets: a mechanism of the catalog with what an audit is checked against.

A :class:`Target` bundles what :func:`ldpsim.audit.audit` needs (a sampler and candidate
neighbouring pairs) with the claimed ``(eps, delta)`` and the *exact* privacy of the
mechanism (``true_eps``, ``true_delta``). Every target is an entry of the one catalog
(:mod:`ldpsim.mechanisms.catalog`): :func:`target` builds one by name and parameters,
:func:`parse_spec` from a command-line string such as ``"randomized_response:k=4,eps=1"``
or ``"broken.svt_returns_value:eps=1,m=7"``.

Everything is read from the mechanism contract (:class:`ldpsim.mechanisms.base.Mechanism`)
and the catalog entry, for library mechanisms and the broken zoo alike:

* ``pairs`` = ``mechanism.neighbours()``; ``sampler`` = ``mechanism.sample``;
* ``true_eps`` = ``mechanism.epsilon(0.0)``; ``true_delta`` = ``mechanism.delta`` (exact),
  None where the mechanism's ``exact_delta`` is False;
* ``outputs`` = ``"finite"`` when ``mechanism.output_size`` is set or the mechanism is a
  frequency oracle (it has a ``statistic_size``: integer reports, symbols or vectors such as
  local hashing's), else ``"real"``;
* ``claimed_eps``, ``claimed_delta`` = ``entry.claimed(params)`` (for library mechanisms
  their exact privacy, for ``broken`` ones the false claim); ``broken`` = the entry's tag;
  ``description`` and the parameter defaults from the entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.catalog import Entry, entry

__all__ = ["Target", "target", "parse_spec", "names", "entry"]


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
        return entry(self.name).spec(self.params)


def names() -> list[str]:
    """Sorted names of the auditable mechanisms (every catalog entry)."""
    return catalog.names()


def _target(e: Entry, params: dict[str, Any], mech: Any) -> Target:
    claimed_eps, claimed_delta = e.claimed(params, mech)

    def true_delta(eps: float, _m: Any = mech) -> float:
        return float(_m.delta(eps))

    return Target(
        name=e.name,
        params=dict(params),
        mechanism=mech,
        sampler=mech.sample,
        pairs=list(mech.neighbours()),
        claimed_eps=claimed_eps,
        claimed_delta=claimed_delta,
        true_eps=float(mech.epsilon(0.0)),
        true_delta=true_delta if getattr(mech, "exact_delta", True) else None,
        broken="broken" in e.tags,
        # a frequency oracle (it has a statistic) sends integer reports, symbols or vectors
        outputs="finite"
        if getattr(mech, "output_size", None) is not None or hasattr(mech, "statistic_size")
        else "real",
        description=e.description,
    )


def target(name: str, **params: Any) -> Target:
    """The target ``name`` with ``params`` (the others at their catalog defaults)."""
    e = entry(name)
    resolved = e.resolve(**params)
    return _target(e, resolved, e.builder_fn()(**resolved))


def parse_spec(spec: str) -> Target:
    """The target of ``"name"`` or ``"name:param=value,..."`` (the grammar of
    :func:`ldpsim.mechanisms.catalog.parse`). Unknown names or parameters, malformed specs
    and bad values raise a one-line :class:`~ldpsim.errors.LdpSimError`; errors of the
    mechanism's own constructor pass through."""
    built = catalog.parse(spec)
    return _target(built.entry, built.params, built.mechanism)
