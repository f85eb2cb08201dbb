"""The one exception family of ldpsim."""

from __future__ import annotations


class LdpSimError(ValueError):
    """Invalid input to an ldpsim function or scenario.

    Every message names the parameter, the value received and what was expected, so the
    command line can print it as one line.
    """


def invalid(name: str, value: object, expected: str) -> LdpSimError:
    """Build the standard error: ``"<name>: got <value>, expected <expected>"``."""
    return LdpSimError(f"{name}: got {show(value)}, expected {expected}")


def show(value: object, limit: int = 80) -> str:
    """``repr(value)`` on one line (whitespace runs collapsed), cut to ``limit`` characters
    with ``...``: how every error message shows a value it was given."""
    text = " ".join(repr(value).split())  # one line, whatever the value
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
