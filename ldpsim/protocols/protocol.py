"""Non-interactive multi-party protocols: party j broadcasts ``tau_j ~ Q_j[x_j, :]``.

The protocol's matrix ``P[x, tau] = prod_j Q_j[x_j, tau_j]`` (docs/theory.md sec. 7) is never
materialised; only the per-party a_j x m_j matrices are kept, one for each of the
``parties`` parties (a_j = 2 when party j holds a bit, the usual case; more when it holds
one of a_j values).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from .. import _validate as V
from .._deprecate import renamed_attribute
from .._rng import RNGLike, as_generator
from ..errors import invalid
from ..mechanisms import FiniteMechanism, from_matrix, quaternary_mechanism
from ..mechanisms.base import PRIVACY_RTOL

MAX_PARTIES = 100_000


def _levels(values: ArrayLike | float, parties: int | None, name: str, check) -> NDArray[np.float64]:
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise invalid(name, values, "a number or a non-empty list of numbers, one per party")
    if parties is not None:
        if arr.size == 1:
            arr = np.full(parties, float(arr[0]))
        elif arr.size != parties:
            raise invalid(name, f"a list of length {arr.size}", f"one value per party (parties = {parties})")
    for v in arr:
        check(float(v), name)
    return arr


def _pair_levels(
    eps: ArrayLike, delta: ArrayLike, parties: int | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-party eps and delta; a single value is repeated for every party."""
    if parties is None:
        parties = max(np.size(eps), np.size(delta))
    else:
        parties = V.integer(parties, "parties", minimum=1, maximum=MAX_PARTIES)
    return _levels(eps, parties, "eps", V.epsilon), _levels(delta, parties, "delta", V.delta)


class Protocol:
    """A product protocol: ``parties`` parties, party j with its a_j x m_j matrix ``Q_j``
    (a_j = 2: a bit) and claimed privacy level (eps_j, delta_j), checked exactly at
    construction.

    Each party's mechanism is a finite mechanism of the library on the party's bit
    (:attr:`mechanisms`, on the mechanism contract of :mod:`ldpsim.mechanisms.base`: exact
    eps and delta, samplers, guarantee); :meth:`from_mechanisms` builds a protocol from any
    such mechanisms, catalog-built ones included."""

    def __init__(self, matrices: Sequence[ArrayLike], eps: ArrayLike, delta: ArrayLike = 0.0, name: str = "custom"):
        if len(matrices) == 0 or len(matrices) > MAX_PARTIES:
            raise invalid("matrices", f"{len(matrices)} parties", f"between 1 and {MAX_PARTIES} per-party matrices")
        parties = len(matrices)
        # eps = inf: a party that claims no pure privacy (a deviating one; its delta says what it reveals)
        self.eps = _levels(eps, parties, "eps", lambda v, name: V.epsilon(v, name, allow_inf=True))
        self.delta = _levels(delta, parties, "delta", V.delta)
        mats = []
        for j, q in enumerate(matrices):
            q = V.stochastic_matrix(q, f"matrices[{j}]")
            if q.shape[0] < 2:
                raise invalid(
                    f"matrices[{j}]", f"shape {q.shape}", "at least 2 rows (one per input value: 0 and 1 for a bit)"
                )
            mats.append(q)
        self.matrices: list[NDArray[np.float64]] = mats
        #: party j's mechanism on its bit (inputs 0 and 1), on the mechanism contract
        self.mechanisms: tuple[FiniteMechanism, ...] = tuple(from_matrix(q) for q in mats)
        self.name = name
        self._check_privacy()

    # ----------------------------------------------------------------- constructors
    @classmethod
    def universal(cls, eps: ArrayLike, delta: ArrayLike = 0.0, parties: int | None = None) -> "Protocol":
        """The paper's randomized response: party j uses the quaternary (eps_j, delta_j)
        mechanism, optimal for every function and accuracy notion (Kairouz et al. 2015, Sec. 5). ``parties``
        (default: the length of ``eps`` or ``delta``) repeats a single level for every party."""
        e, d = _pair_levels(eps, delta, parties)
        mats = [quaternary_mechanism(float(a), float(b)).matrix for a, b in zip(e, d)]
        return cls(mats, e, d, name="universal")

    @classmethod
    def binary(cls, eps: ArrayLike, delta: ArrayLike = 0.0, parties: int | None = None) -> "Protocol":
        """Warner's binary randomized response at eps_j (ignores the delta_j allowance)."""
        e, d = _pair_levels(eps, delta, parties)
        mats = []
        for a in e:
            keep = 1.0 / (1.0 + np.exp(-a))
            mats.append(np.array([[keep, 1 - keep], [1 - keep, keep]]))
        return cls(mats, e, d, name="binary")

    @classmethod
    def from_matrices(
        cls, matrices: Sequence[ArrayLike], eps: ArrayLike, delta: ArrayLike = 0.0, name: str = "custom"
    ) -> "Protocol":
        """Any per-party matrices; each must pass the exact (eps_j, delta_j) check."""
        return cls(matrices, eps, delta, name=name)

    @classmethod
    def from_mechanisms(
        cls,
        mechanisms: Sequence[FiniteMechanism],
        eps: ArrayLike | None = None,
        delta: ArrayLike = 0.0,
        name: str = "custom",
    ) -> "Protocol":
        """Any finite mechanisms, one per party, on a bit (two inputs) or on a small
        alphabet, e.g. built by the catalog. ``delta`` and ``eps`` are the levels each must meet, checked exactly;
        ``eps`` defaults to each mechanism's exact eps at its delta, ``epsilon(delta_j)``
        with the contract's rounding slack on delta (:data:`ldpsim.mechanisms.base.PRIVACY_RTOL`:
        a quaternary mechanism's float delta at its own eps can be an ulp above its delta)."""
        mechs = list(mechanisms)
        if not mechs or len(mechs) > MAX_PARTIES:
            raise invalid("mechanisms", f"{len(mechs)} parties", f"between 1 and {MAX_PARTIES} per-party mechanisms")
        for j, m in enumerate(mechs):
            if getattr(m, "output_size", None) is None or not isinstance(getattr(m, "k", None), int) or m.k < 2:
                raise invalid(
                    f"mechanisms[{j}]", repr(m), "a finite mechanism on a bit or a small alphabet (>= 2 inputs)"
                )
        d = _levels(delta, len(mechs), "delta", V.delta)
        if eps is None:
            eps = [float(m.epsilon(min(1.0, float(dj) * (1.0 + PRIVACY_RTOL)))) for m, dj in zip(mechs, d)]
        return cls([m.matrix for m in mechs], eps, d, name=name)

    # ----------------------------------------------------------------- properties
    @property
    def parties(self) -> int:
        """The number of parties."""
        return len(self.matrices)

    k = renamed_attribute(old="k", new="parties", since="0.1", removed_in="0.2")

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each party's number of messages (columns)."""
        return tuple(q.shape[1] for q in self.matrices)

    @property
    def inputs(self) -> tuple[int, ...]:
        """Each party's number of input values (rows; 2 for a bit)."""
        return tuple(q.shape[0] for q in self.matrices)

    @property
    def binary_inputs(self) -> bool:
        """Whether every party holds a bit."""
        return all(a == 2 for a in self.inputs)

    def __repr__(self) -> str:
        return f"Protocol({self.name!r}, parties={self.parties})"

    def _check_privacy(self) -> None:
        for j, mech in enumerate(self.mechanisms):
            if not mech.is_private(float(self.eps[j]), float(self.delta[j])):
                raise invalid(
                    f"matrices[{j}]",
                    f"a matrix with exact delta {mech.delta(float(self.eps[j])):.3g} at eps {self.eps[j]:g}",
                    f"an ({self.eps[j]:g}, {self.delta[j]:g})-DP matrix for party {j}",
                )

    def privacy_table(self) -> pd.DataFrame:
        """Per party: claimed (eps, delta), the exact delta at that eps, and the verdict."""
        rows = []
        for j, mech in enumerate(self.mechanisms):
            e, d = float(self.eps[j]), float(self.delta[j])
            rows.append(
                {
                    "party": j,
                    "eps": e,
                    "delta": d,
                    "exact_delta_at_eps": float(mech.delta(e)),
                    "private": mech.is_private(e, d),
                }
            )
        return pd.DataFrame(rows)

    def total_variation(self) -> NDArray[np.float64]:
        """Per party ``TV(Q_j[0], Q_j[1])`` (what a party's message says about its bit); for
        a party with more inputs, the largest TV between two of its rows."""
        return np.array(
            [max(0.5 * np.abs(q[a] - q[b]).sum() for a in range(len(q)) for b in range(a)) for q in self.matrices]
        )

    # ----------------------------------------------------------------- sampling
    def sample(self, x: ArrayLike, rng: RNGLike = None) -> NDArray[np.int64]:
        """Transcripts for a batch of input vectors ``x`` (shape (n, parties); bits, or values
        below each party's alphabet size): one vectorised draw per party over all rounds."""
        bits = np.asarray(x)
        bits = bits.astype(np.int64) if bits.dtype == bool else bits
        if (
            bits.ndim != 2
            or bits.shape[1] != self.parties
            or not np.issubdtype(bits.dtype, np.integer)
            or (bits.size and (bits.min() < 0 or not np.all(bits.max(axis=0) < np.asarray(self.inputs))))
        ):
            raise invalid(
                "x",
                f"shape {bits.shape}",
                f"an (n, {self.parties}) array of inputs (bits 0/1, or below each party's alphabet size)",
            )
        gen = as_generator(rng)
        n: int = bits.shape[0]
        out = np.empty((n, self.parties), dtype=np.int64)
        for j, q in enumerate(self.matrices):  # a loop over parties, vectorised over rounds
            cum = np.cumsum(q, axis=1)[:, :-1]
            u = gen.random(n)
            out[:, j] = (u[:, None] >= cum[bits[:, j]]).sum(axis=1)
        return out
