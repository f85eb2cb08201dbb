"""Random number generators: the ``rng=`` convention of Scientific Python (SPEC 7)."""

from __future__ import annotations

from typing import Union

import numpy as np

RNGLike = Union[None, int, np.random.SeedSequence, np.random.BitGenerator, np.random.Generator]


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Normalise ``rng`` with :func:`numpy.random.default_rng` (a Generator passes through)."""
    return np.random.default_rng(rng)
