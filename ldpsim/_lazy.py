"""Lazy package fronts (PEP 562): a package lists which module defines each public name,
and the module is imported the first time the name is read. ``import ldpsim`` therefore
costs numpy at most, not scipy, pandas, matplotlib or SimPy.

Usage in a package ``__init__``::

    __getattr__, __dir__ = lazy_exports(__name__, {"randomized_response": ".randomized_response"})

A name read once is stored in the package's namespace, so later reads are plain
attribute lookups. Submodules of the package stay reachable as attributes
(``ldpsim.mechanisms.noise`` after ``import ldpsim.mechanisms``), as they were when the
front imported everything eagerly.

One caveat: importing a submodule sets the package attribute of the same name to that
module. A public name that is also the name of a submodule (``randomized_response`` in
:mod:`ldpsim.mechanisms`) must therefore be imported eagerly, not listed here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package``: ``exports`` maps each public
    name to the module defining it (absolute, or relative to ``package`` when it starts
    with a dot)."""

    def __getattr__(name: str) -> Any:
        namespace = vars(sys.modules[package])
        target = exports.get(name)
        if target is not None:
            module = importlib.import_module(target, package)
            # a public name that is a submodule ("bounds": ".bounds") is the module itself
            value = module if module.__name__ == f"{package}.{name}" else getattr(module, name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")  # a submodule, as an attribute
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
