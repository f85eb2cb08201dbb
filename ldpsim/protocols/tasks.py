"""What the parties compute: a function f: {0,1}^k -> {0, ..., n_outputs - 1} of the bits of
the k = ``parties`` parties and a gain
``w[true, guess]`` (the identity, i.e. the probability of being right, by default).
Parties may hold more than a bit: a general function given by its table can take party j's
input from ``{0, ..., inputs[j] - 1}`` (``Task.from_table(..., inputs=(3, 2, 4))``).

Symmetric functions (``f(x) = g(sum x)``: sum, parity, majority, threshold, AND) keep
``g`` so that decisions and accuracies go through the count of ones and scale to
thousands of parties; general functions are a table of 2^k values (x_1 is the most
significant bit of the index).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from .._deprecate import renamed_attribute
from ..errors import invalid

MAX_TABLE_PARTIES = 20
"""A general function's table has 2^parties entries: at most 20 parties (a million) here."""


@dataclass(frozen=True)
class Task:
    name: str
    parties: int
    n_outputs: int
    gain: NDArray[np.float64]
    counts: NDArray[np.int64] | None = None  # g(s) for s = 0..parties (symmetric functions)
    table: NDArray[np.int64] | None = None  # f(x) for x = 0..prod(inputs) - 1 (general functions)
    inputs: tuple[int, ...] | None = None  # party j's input alphabet size (None: every party holds a bit)

    k = renamed_attribute(old="k", new="parties", since="0.1", removed_in="0.2")

    # ----------------------------------------------------------------- constructors
    @classmethod
    def symmetric(cls, name: str, parties: int, g: ArrayLike, gain: ArrayLike | None = None) -> "Task":
        parties = V.integer(parties, "parties", minimum=1)
        g = np.asarray(g)
        if g.shape != (parties + 1,) or not np.issubdtype(g.dtype, np.integer) or g.min() < 0:
            raise invalid(
                "g",
                f"shape {g.shape}",
                f"parties + 1 = {parties + 1} non-negative integer labels, one per count of ones",
            )
        n_out = int(g.max()) + 1
        return cls(name, parties, n_out, _gain(gain, n_out), counts=g.astype(np.int64))

    @classmethod
    def xor(cls, parties: int, gain: ArrayLike | None = None) -> "Task":
        return cls.symmetric("xor", parties, np.arange(V.integer(parties, "parties", minimum=1) + 1) % 2, gain)

    @classmethod
    def sum(cls, parties: int, gain: ArrayLike | None = None) -> "Task":
        return cls.symmetric("sum", parties, np.arange(V.integer(parties, "parties", minimum=1) + 1), gain)

    @classmethod
    def majority(cls, parties: int, gain: ArrayLike | None = None) -> "Task":
        parties = V.integer(parties, "parties", minimum=1)
        return cls.symmetric("majority", parties, (2 * np.arange(parties + 1) > parties).astype(np.int64), gain)

    @classmethod
    def threshold(cls, parties: int, t: int, gain: ArrayLike | None = None) -> "Task":
        parties = V.integer(parties, "parties", minimum=1)
        t = V.integer(t, "t", minimum=0, maximum=parties + 1)
        return cls.symmetric(f"threshold{t}", parties, (np.arange(parties + 1) >= t).astype(np.int64), gain)

    @classmethod
    def and_(cls, parties: int, gain: ArrayLike | None = None) -> "Task":
        parties = V.integer(parties, "parties", minimum=1)
        return cls.symmetric("and", parties, (np.arange(parties + 1) == parties).astype(np.int64), gain)

    @classmethod
    def from_table(
        cls,
        values: ArrayLike,
        n_outputs: int | None = None,
        gain: ArrayLike | None = None,
        name: str = "f",
        inputs: ArrayLike | None = None,
    ) -> "Task":
        """A general function from its values, one per input vector, in C order (x_1 the
        most significant digit): 2^parties values when every party holds a bit, or
        ``prod(inputs)`` values when party j's input is in ``{0, ..., inputs[j] - 1}``."""
        vals = np.asarray(values)
        size = vals.size
        if inputs is None:
            parties = int(np.log2(size)) if size > 0 else 0
            if vals.ndim != 1 or size < 2 or 2**parties != size or parties > MAX_TABLE_PARTIES:
                raise invalid(
                    "values", f"{size} values", f"2^parties values for some number of parties in 1..{MAX_TABLE_PARTIES}"
                )
            sizes = None
        else:
            arr = np.atleast_1d(np.asarray(inputs))
            if arr.ndim != 1 or arr.size < 1 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 2:
                raise invalid("inputs", inputs, "one alphabet size >= 2 per party")
            sizes = tuple(int(a) for a in arr)
            parties = len(sizes)
            if vals.ndim != 1 or size != int(np.prod(sizes, dtype=np.float64)) or size > 2**MAX_TABLE_PARTIES:
                raise invalid(
                    "values",
                    f"{size} values",
                    f"prod(inputs) = {int(np.prod(sizes, dtype=np.float64)):,} values (at most "
                    f"2^{MAX_TABLE_PARTIES}), one per input vector",
                )
            if all(a == 2 for a in sizes):
                sizes = None  # bits: the same task as without inputs
        if not np.issubdtype(vals.dtype, np.integer) or vals.min() < 0:
            raise invalid("values", vals[:4], "non-negative integer output labels")
        n_out = int(vals.max()) + 1 if n_outputs is None else V.integer(n_outputs, "n_outputs", minimum=1)
        if vals.max() >= n_out:
            raise invalid("values", int(vals.max()), f"labels below n_outputs = {n_out}")
        return cls(name, parties, n_out, _gain(gain, n_out), table=vals.astype(np.int64), inputs=sizes)

    @classmethod
    def random(
        cls, parties: int, n_outputs: int, rng=None, gain: ArrayLike | None = None, inputs: ArrayLike | None = None
    ) -> "Task":
        """A uniformly random general function (for tests and demonstrations)."""
        gen = np.random.default_rng(rng)
        if inputs is None:
            size = 2 ** V.integer(parties, "parties", minimum=1, maximum=MAX_TABLE_PARTIES)
        else:
            size = int(np.prod(np.asarray(inputs), dtype=np.float64))
        return cls.from_table(gen.integers(0, n_outputs, size), n_outputs, gain, "random", inputs=inputs)

    # ----------------------------------------------------------------- queries
    @property
    def is_symmetric(self) -> bool:
        return self.counts is not None

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each party's input alphabet size (2 for a bit)."""
        return self.inputs if self.inputs is not None else (2,) * self.parties

    def full_table(self) -> NDArray[np.int64]:
        """f(x) for every x in C order (2^parties values, or prod(inputs))."""
        if self.table is not None:
            return self.table
        if self.parties > MAX_TABLE_PARTIES:
            raise invalid("parties", self.parties, f"at most {MAX_TABLE_PARTIES} parties to tabulate f")
        idx = np.arange(2**self.parties)
        ones = np.zeros(idx.size, dtype=np.int64)
        for b in range(self.parties):
            ones += (idx >> b) & 1
        assert self.counts is not None
        return self.counts[ones]

    def value(self, x: ArrayLike) -> NDArray[np.int64]:
        """f(x) for a batch of input vectors (shape (n, parties))."""
        bits = np.asarray(x)
        if bits.ndim != 2 or bits.shape[1] != self.parties:
            raise invalid("x", f"shape {bits.shape}", f"an (n, {self.parties}) array of inputs")
        if self.counts is not None:
            return self.counts[bits.sum(axis=1)]
        assert self.table is not None
        return self.table[np.ravel_multi_index(tuple(bits.astype(np.int64).T), self.sizes)]


def _gain(gain: ArrayLike | None, n_out: int) -> NDArray[np.float64]:
    if gain is None:
        return np.eye(n_out)
    g = np.asarray(gain, dtype=np.float64)
    if g.shape != (n_out, n_out) or not np.all(np.isfinite(g)):
        raise invalid(
            "gain",
            f"shape {g.shape}",
            f"a finite {n_out} x {n_out} matrix w[true, guess] matching the function's {n_out} outputs",
        )
    return g
