"""Empirical privacy auditing: a valid lower bound on eps (and delta) of any mechanism from
its samples, black box included.

Modules: :mod:`~ldpsim.audit.core` (:func:`audit`, :class:`AuditResult`, the mechanism's
sampler and density through the mechanism contract), :mod:`~ldpsim.audit.sequential`
(:func:`audit_sequential`, stopping once a claim is refuted), :mod:`~ldpsim.audit.events`
(the candidate events and their selection), :mod:`~ldpsim.audit.witnesses`
(:class:`Witness`, replayable and JSON-serialisable), :mod:`~ldpsim.audit.targets`
(:func:`target`, :func:`parse_spec`: a catalog mechanism with its claimed and exact
privacy) and :mod:`~ldpsim.audit.zoo` (deliberately broken mechanisms, the ``broken.*``
entries of the catalog). The statistical bounds are those of :mod:`ldpsim.stats`. Method, validity and the bounds:
docs/theory.md sec. 11; the broken zoo follows Lyu, Su and Li (2017) for sparse vector.

>>> from ldpsim.audit import audit, target
>>> t = target("broken.doubled_rr", eps=1.0)
>>> res = audit(t.mechanism, t.pairs, 20_000, rng=1)
>>> t.claimed_eps < res.eps_lb <= t.true_eps
True
"""

from typing import TYPE_CHECKING

from ldpsim._lazy import lazy_exports

if TYPE_CHECKING:
    from ldpsim.audit.core import MIN_HALF, AuditResult, audit, density_of, sampler_of
    from ldpsim.audit.events import GRID_SIZE, MAX_AXES
    from ldpsim.audit.sequential import audit_sequential
    from ldpsim.audit.targets import Target, names, parse_spec, target
    from ldpsim.audit.witnesses import Witness

# names are imported on first use (PEP 562): building a broken target through the catalog
# (which imports ldpsim.audit.zoo) does not load the auditor and pandas
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("MIN_HALF", "AuditResult", "audit", "density_of", "sampler_of"), "ldpsim.audit.core"),
        **dict.fromkeys(("GRID_SIZE", "MAX_AXES"), "ldpsim.audit.events"),
        "audit_sequential": "ldpsim.audit.sequential",
        **dict.fromkeys(("Target", "names", "parse_spec", "target"), "ldpsim.audit.targets"),
        "Witness": "ldpsim.audit.witnesses",
    },
)

__all__ = [
    "AuditResult",
    "Witness",
    "audit",
    "audit_sequential",
    "density_of",
    "sampler_of",
    "Target",
    "target",
    "parse_spec",
    "names",
    "MIN_HALF",
    "GRID_SIZE",
    "MAX_AXES",
]
