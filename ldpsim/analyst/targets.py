"""Deprecated: the auditor's targets moved to :mod:`ldpsim.audit.targets` (the auditor has its
own package, above the analyst, which works on reports only). The names below keep working
for one release (the README of 0.1 used them), with a deprecation warning."""

from ldpsim._deprecate import moved

__getattr__ = moved(
    "ldpsim.analyst.targets", "ldpsim.audit.targets", ["target", "parse_spec", "names", "Target"], removed_in="0.2"
)
