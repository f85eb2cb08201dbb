"""Weights typed in scenario files: the entries of every list that must sum to 1
(distributions, P0 and P1, shares of privacy tiers, fractions of arrival waves, rows of a
transition matrix).

An entry is a number >= 0, or an exact fraction written as a string, ``"1/3"`` (or an
integer, ``"0"``): thirds, sevenths and the like cannot be typed as decimals that sum to
1 within the tolerance of 1e-9 without ten digits each. The rule:

- when every entry of the list is exact (a fraction string or an integer), the entries
  are summed exactly and the sum must be exactly 1;
- otherwise the sum of the numbers must be within 1e-9 of 1, as always.

A fraction becomes the double nearest to it (:class:`Exact`, a ``float`` that keeps the
fraction), so everything downstream sees plain numbers.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Annotated, Any, Iterable

from pydantic import PlainValidator

#: Most digits of a fraction's numerator or denominator.
MAX_DIGITS = 18
#: Most digits of the common denominator an exact sum may need (the work stays small).
MAX_COMMON_DIGITS = 100

_FRACTION = re.compile(r"\s*(\d+)\s*(?:/\s*(\d+)\s*)?")
_EXPECTED = 'expected a number >= 0 or an exact fraction as a string, such as "1/3"'


class Exact(float):
    """A weight typed exactly (``"1/3"``, or an integer): the double nearest to it, with the
    value itself as ``fraction``."""

    fraction: Fraction

    def __new__(cls, fraction: Fraction | int) -> "Exact":
        fraction = Fraction(fraction)
        self = super().__new__(cls, fraction.numerator / fraction.denominator)  # correctly rounded
        self.fraction = fraction
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Exact, (self.fraction,))


def parse_weight(value: Any, at_most_one: bool = False) -> float:
    """A typed weight as a float (an :class:`Exact` when typed exactly); ValueError with a
    ``got ..., expected ...`` message otherwise."""
    upper = " and <= 1" if at_most_one else ""
    if isinstance(value, bool):
        raise ValueError(f"got {value!r}, {_EXPECTED}")
    if isinstance(value, int):
        exact = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value) or value < 0 or (at_most_one and value > 1):
            raise ValueError(
                f'got {value!r}, expected a finite number >= 0{upper} (or an exact fraction such as "1/3")'
            )
        return float(value)
    elif isinstance(value, str):
        m = _FRACTION.fullmatch(value)
        if m is None:
            raise ValueError(f"got {value[:40]!r}, {_EXPECTED}")
        p, q = m.group(1), m.group(2) or "1"
        if len(p) > MAX_DIGITS or len(q) > MAX_DIGITS:
            raise ValueError(
                f"got a fraction of more than {MAX_DIGITS} digits, expected at most {MAX_DIGITS} digits above and below"
            )
        if int(q) == 0:
            raise ValueError(f"got {value!r}, expected a fraction whose denominator is not 0")
        exact = Fraction(int(p), int(q))
    else:
        raise ValueError(f"got a {type(value).__name__}, {_EXPECTED}")
    if exact < 0 or (at_most_one and exact > 1):
        raise ValueError(f"got {value!r}, expected a weight >= 0{upper}")
    return Exact(exact)


#: A weight in a list that sums to 1: a number >= 0 or an exact fraction ``"p/q"``.
Weight = Annotated[float, PlainValidator(parse_weight)]
#: The same, at most 1 (a probability).
UnitWeight = Annotated[float, PlainValidator(lambda v: parse_weight(v, at_most_one=True))]


def exact_sum(values: Iterable[Any]) -> Fraction | None:
    """The exact sum of ``values`` when every one is :class:`Exact`, else None. ValueError
    when their common denominator would pass ``MAX_COMMON_DIGITS`` digits."""
    by_denominator: dict[int, int] = {}
    for x in values:
        if not isinstance(x, Exact):
            return None
        f = x.fraction
        by_denominator[f.denominator] = by_denominator.get(f.denominator, 0) + f.numerator
    common, limit = 1, 10**MAX_COMMON_DIGITS
    for q in by_denominator:
        common = common * q // math.gcd(common, q)
        if common > limit:
            raise ValueError(
                f"got fractions whose common denominator has more than {MAX_COMMON_DIGITS} digits, "
                "expected fewer different denominators"
            )
    return Fraction(sum(p * (common // q) for q, p in by_denominator.items()), common)


def sum_problem(values: Iterable[Any], what: str = "entries", tolerance: float = 1e-9) -> str | None:
    """Why ``values`` do not sum to 1 (``got ..., expected ...``), or None when they do:
    exactly when all are exact, else within ``tolerance``."""
    values = list(values)
    try:
        exact = exact_sum(values)
    except ValueError as exc:
        return str(exc)
    if exact is not None:
        return (
            None
            if exact == 1
            else f"got {what} summing to {exact} exactly, expected a sum "
            "of exactly 1 (every entry is exact, so is the sum)"
        )
    total = math.fsum(float(x) for x in values)
    if abs(total - 1.0) <= tolerance:
        return None
    return (
        f"got {what} summing to {total!r}, expected a sum of 1 (within {tolerance:g}); or write each as an exact "
        'fraction such as "1/3", summed exactly'
    )
