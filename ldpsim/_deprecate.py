"""Old spellings kept for one release: renamed keywords and renamed attributes.

A renamed keyword still works for one release: the call goes through with the new name
and a :class:`DeprecationWarning` says which spelling to use instead and in which release
the old one goes away. Every such warning starts with ``"ldpsim: "``, so the test suite
can turn exactly these into errors (``pyproject.toml``) and no code or test keeps an old
spelling by accident. Only names that users met in the documentation get an alias; other
renames are plain renames.

Usage::

    @renamed(old="k", new="compositions", since="0.1", removed_in="0.2")
    def calibrate(cls, eps, delta=0.0, sensitivity=1.0, compositions=1): ...

    class Protocol:
        k = renamed_attribute(old="k", new="parties", since="0.1", removed_in="0.2")

    # a module whose names moved elsewhere
    __getattr__ = moved("ldpsim.runs", "ldpsim.sim", ["run_scenario"], removed_in="0.2")

This module is part of the foundation layer: it imports the standard library and
:mod:`ldpsim.errors` only.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from typing import Any, Callable, Iterable, TypeVar

from ldpsim.errors import invalid

PREFIX = "ldpsim: "
"""Every deprecation warning of ldpsim starts with this (the test suite's filter matches it)."""

F = TypeVar("F", bound=Callable[..., Any])


def warn(message: str, stacklevel: int = 2) -> None:
    """Emit ``DeprecationWarning("ldpsim: " + message)``; ``stacklevel`` as for
    :func:`warnings.warn`, counted from the caller of this function."""
    warnings.warn(PREFIX + message, DeprecationWarning, stacklevel=stacklevel + 1)


def renamed(old: str, new: str, since: str, removed_in: str) -> Callable[[F], F]:
    """Let the decorated function accept keyword ``old`` as a deprecated spelling of ``new``.

    ``f(old=v)`` warns (pointing at the caller) and calls ``f(new=v)``; giving both
    spellings, by keyword or ``new`` by position, raises :class:`~ldpsim.errors.LdpSimError`
    naming ``new``. ``since`` is the release that introduced ``new``; ``removed_in`` the one
    that drops ``old`` (both are recorded on the wrapper as ``__ldpsim_renamed__``).
    """

    def decorate(fn: F) -> F:
        params = list(inspect.signature(fn).parameters)
        if new not in params or old in params:
            raise TypeError(f"renamed: {fn.__qualname__} must take {new!r} and not {old!r}")
        position = params.index(new)
        kind = inspect.signature(fn).parameters[new].kind
        positional = kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        bound_to = params[0] if params and params[0] in ("cls", "self") else None

        def where(args: tuple[Any, ...]) -> str:
            """The name the caller used: ``Gaussian.calibrate``, not the defining class's."""
            if bound_to and args:
                owner = args[0] if bound_to == "cls" else type(args[0])
                return f"{getattr(owner, '__name__', '?')}.{fn.__name__}"
            return fn.__qualname__

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                value = kwargs.pop(old)
                if new in kwargs or (positional and len(args) > position):
                    given = kwargs[new] if new in kwargs else args[position]
                    raise invalid(
                        new, {new: given, old: value}, f"one of {new}= and {old}= ({old}= is its deprecated spelling)"
                    )
                warn(f"keyword {old}= of {where(args)} is deprecated; use {new}= ({old}= goes away in {removed_in})")
                kwargs[new] = value
            return fn(*args, **kwargs)

        record = dict(getattr(fn, "__ldpsim_renamed__", {}))
        record[old] = {"new": new, "since": since, "removed_in": removed_in}
        wrapper.__ldpsim_renamed__ = record  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_attribute(old: str, new: str, since: str, removed_in: str) -> property:
    """A read-only property ``old`` that warns (pointing at the reader) and returns ``new``.

    Put it in the class body under the old name: ``k = renamed_attribute("k", "parties",
    since="0.1", removed_in="0.2")``. It is not a dataclass field (no annotation)."""

    def get(self: Any) -> Any:
        warn(f"attribute {old} of {type(self).__name__} is deprecated; use {new} ({old} goes away in {removed_in})")
        return getattr(self, new)

    return property(get, doc=f"Deprecated spelling of ``{new}`` (since {since}; removed in {removed_in}).")


def moved(old: str, new: str, names: Iterable[str], removed_in: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a module ``old`` whose public ``names`` moved to module
    ``new``: reading one warns (naming the new home) and returns it from ``new``, imported
    by name on first use, so the old module never imports the new one's layer itself.

    Usage, in the old module::

        __getattr__ = moved("ldpsim.runs", "ldpsim.sim", ["run_scenario"], removed_in="0.2")
    """
    wanted = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in wanted:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warn(f"{old}.{name} is deprecated; use {new}.{name} (the old spelling goes away in {removed_in})")
        return getattr(importlib.import_module(new), name)

    return __getattr__
