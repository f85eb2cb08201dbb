"""Random number generators: the ``rng=`` convention of Scientific Python (SPEC 7)."""

from __future__ import annotations

import os
from typing import Union

import numpy as np

from ldpsim.errors import invalid

RNGLike = Union[None, int, np.random.SeedSequence, np.random.BitGenerator, np.random.Generator]


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Normalise ``rng`` with :func:`numpy.random.default_rng` (a Generator passes through).
    The operating system's generator (``"os"``, :class:`SystemRandom`) is refused with a
    one-line error: samplers that take it call :func:`as_source` instead."""
    if isinstance(rng, SystemRandom) or (isinstance(rng, str) and rng == SYSTEM):
        raise invalid(
            "rng",
            rng,
            "a seed or a numpy Generator: this sampler draws floats through numpy; the discrete "
            "and snapped samplers take rng='os' (docs/floating-point.md)",
        )
    return np.random.default_rng(rng)


class SystemRandom:
    """Random integers from the operating system's cryptographic generator
    (:func:`os.urandom`), for deployment-style draws that must not be predictable from a
    seed. It offers the part of :class:`numpy.random.Generator` that the exact samplers use
    (:meth:`integers` with exact uniform draws, :meth:`words`); it has no seed and no state,
    so draws through it are never reproducible. Pass ``rng="os"`` (or an instance) to a
    mechanism whose sampler accepts it: the discrete and snapped samplers
    (docs/floating-point.md). Simulations use numpy's seeded generators instead."""

    def __repr__(self) -> str:
        return "SystemRandom()"

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit words (uint64)."""
        n = int(n)
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy() if n > 0 else np.zeros(0, dtype=np.uint64)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint: bool = False) -> np.ndarray:
        """Exact uniform integers in ``[low, high)`` (``[low, high]`` with ``endpoint``),
        broadcast like :meth:`numpy.random.Generator.integers`; ranges up to 2^63. Each draw
        masks a 64-bit word to the next power of two above the range and redraws what falls
        beyond it (accepted with probability > 1/2 per word), so every value is equally likely."""
        if high is None:
            low, high = 0, low
        lo = np.asarray(low, dtype=np.int64)
        hi = np.asarray(high, dtype=np.int64) + (1 if endpoint else 0)
        shape = (
            np.broadcast_shapes(lo.shape, hi.shape)
            if size is None
            else (size if isinstance(size, tuple) else (int(size),))
        )
        span = np.broadcast_to(hi - lo, shape).astype(np.uint64)
        if np.any(hi - lo <= 0):
            raise ValueError("high <= low")
        flat = span.ravel()
        # mask = 2^bits - 1 with 2^bits >= span
        m = flat - np.uint64(1)
        for shift in (1, 2, 4, 8, 16, 32):
            m |= m >> np.uint64(shift)
        mask = m
        out = np.empty(flat.shape, dtype=np.uint64)
        todo = np.arange(flat.size)
        while todo.size:
            w = self.words(todo.size) & mask[todo]
            ok = w < flat[todo]
            out[todo[ok]] = w[ok]
            todo = todo[~ok]
        res = out.reshape(shape).astype(np.int64) + np.broadcast_to(lo, shape)
        return res.astype(dtype, copy=False)


#: The spelling of :class:`SystemRandom` in ``rng=`` arguments.
SYSTEM = "os"

RandomSource = Union[np.random.Generator, SystemRandom]


def as_source(rng: "RNGLike | str | SystemRandom") -> RandomSource:
    """A random source for the exact samplers: ``"os"`` or a :class:`SystemRandom` give the
    operating system's generator; anything else goes through :func:`as_generator`."""
    if isinstance(rng, SystemRandom):
        return rng
    if isinstance(rng, str) and rng == SYSTEM:
        return SystemRandom()
    return as_generator(rng)  # type: ignore[arg-type]


#: First spawn-key word of a block's own stream (the blocks of a stream after its first): far
#: above the few children a stream spawns, so the two never meet.
BLOCK_KEY = 1 << 40


def block_sequence(seq: np.random.SeedSequence, b: int) -> np.random.SeedSequence:
    """The stream of block ``b`` of ``seq`` (a survey cohort's batches of clients; the chunks
    of ``ldpsim privatize``): ``seq`` itself for block 0, and for ``b > 0`` its child
    ``(BLOCK_KEY, b)``, built directly from its key, so no earlier block is needed to find it."""
    if b == 0:
        return seq
    return np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, BLOCK_KEY, b), pool_size=seq.pool_size)
