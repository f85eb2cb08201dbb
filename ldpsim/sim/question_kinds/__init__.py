"""The one registry of question kinds (``[[questions]] kind = ...``).

A question kind is one :class:`~ldpsim.sim.question_kinds.base.Question` subclass (the
contract is in :mod:`ldpsim.sim.question_kinds.base`) and one entry here. The scenario
loader asks :func:`question_kind` for the class a file names; nothing else names a kind.
A kind of one's own is one :func:`register` call before the scenario is loaded (the
contract suite registers a toy one inside a test)."""

from __future__ import annotations

from ldpsim._text import did_you_mean
from ldpsim.errors import LdpSimError
from ldpsim.sim.question_kinds.base import STRATEGIES, BuildContext, Question
from ldpsim.sim.question_kinds.categorical import CategoricalQuestion
from ldpsim.sim.question_kinds.keyvalue import KeyValueQuestion
from ldpsim.sim.question_kinds.multiselect import MultiselectQuestion
from ldpsim.sim.question_kinds.numeric import NumericQuestion
from ldpsim.sim.question_kinds.ordinal import OrdinalQuestion

__all__ = ["STRATEGIES", "BuildContext", "Question", "question_kind", "question_kinds", "register", "unregister"]

_KINDS: dict[str, type[Question]] = {}


def register(cls: type[Question]) -> type[Question]:
    """Make ``cls`` the question kind ``cls.kind`` (a class decorator too)."""
    if cls.kind in _KINDS and _KINDS[cls.kind] is not cls:
        raise LdpSimError(f"kind: got {cls.kind!r}, expected a question kind not yet registered")
    _KINDS[cls.kind] = cls
    return cls


def unregister(kind: str) -> None:
    """Remove a question kind (for tests that register one of their own)."""
    _KINDS.pop(kind, None)


def question_kinds() -> list[str]:
    """The registered kinds, in the order registered (the first is the default)."""
    return list(_KINDS)


def question_kind(kind: str, where: str) -> type[Question]:
    """The class of ``kind``; one line naming ``where`` otherwise."""
    try:
        return _KINDS[kind]
    except KeyError:
        names = question_kinds()
        raise LdpSimError(
            f"{where}: got {kind!r}, expected one of {', '.join(names)}{did_you_mean(kind, names)}"
        ) from None


register(CategoricalQuestion)
register(NumericQuestion)
register(OrdinalQuestion)
register(MultiselectQuestion)
register(KeyValueQuestion)
