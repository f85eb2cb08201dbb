"""Walker/Vose alias tables: O(1) categorical draws, one table per input symbol."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def alias_tables(matrix: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Alias tables for every row of a row-stochastic ``k x m`` matrix.

    Returns ``(accept, alias)``, both ``k x m``: to draw from row ``x``, pick a column ``j``
    uniformly, then return ``j`` with probability ``accept[x, j]`` and ``alias[x, j]``
    otherwise. The construction is Vose's (1991) numerically stable variant. Its cost is
    O(k m) Python steps, paid once per mechanism (the tables are cached by the caller).
    """
    k, m = matrix.shape
    accept = np.ones((k, m), dtype=np.float64)
    alias = np.tile(np.arange(m, dtype=np.int64), (k, 1))
    scaled_rows = matrix * (m / matrix.sum(axis=1, keepdims=True))
    for x in range(k):
        scaled = scaled_rows[x].tolist()
        small = [j for j, s in enumerate(scaled) if s < 1.0]
        large = [j for j, s in enumerate(scaled) if s >= 1.0]
        acc_row = accept[x]
        alias_row = alias[x]
        while small and large:
            s = small.pop()
            g = large[-1]
            acc_row[s] = scaled[s]
            alias_row[s] = g
            scaled[g] = (scaled[g] + scaled[s]) - 1.0
            if scaled[g] < 1.0:
                large.pop()
                small.append(g)
        # Left-overs are 1 up to rounding: they always accept themselves.
        for j in large + small:
            acc_row[j] = 1.0
            alias_row[j] = j
    return accept, alias
