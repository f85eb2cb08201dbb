"""Deprecated: the auditor moved to :mod:`ldpsim.audit` (the auditor has its own package, above
the analyst, which works on reports only). The names below keep working for one release
(the README of 0.1 used them), with a deprecation warning."""

from ldpsim._deprecate import moved

__getattr__ = moved(
    "ldpsim.analyst.audit",
    "ldpsim.audit",
    [
        "audit",
        "audit_sequential",
        "AuditResult",
        "Witness",
        "density_of",
        "sampler_of",
        "MIN_HALF",
        "MAX_AXES",
        "GRID_SIZE",
    ],
    removed_in="0.2",
)
