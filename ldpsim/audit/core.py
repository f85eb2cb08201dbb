"""Empirical privacy auditing: a valid lower bound on eps for any mechanism, black box included.

:func:`audit` draws outputs of a sampler ``sampler(x, n, rng)`` on candidate pairs of inputs
and returns a lower bound ``eps_LB`` on the mechanism's eps that holds with probability at
least ``1 - alpha`` over the whole search (input pairs, orders, events, thresholds).

Method (select, then certify on fresh samples):

* For every input, ``n`` outputs (scalars or vectors) are drawn; the first ``round(split * n)`` (the *selection*
  half) choose, for every ordered pair ``(x, x')``, one event ``S`` (the witness). Finite
  outputs: prefixes of the outputs sorted by the observed ratio ``p_hat(y) / q_hat(y)``;
  real outputs: thresholds ``y > t``, ``y <= t`` and intervals ``lo < y <= hi`` over a
  quantile grid of the pooled selection outputs. The candidate maximising a plug-in
  lower bound (Wilson score bounds, cheap and vectorised) is kept.
* The remaining ``n2`` outputs per input (the *certification* half, independent of the
  selection half) certify that single event: with ``p_hit ~ Bin(n2, P(S|x))`` and
  ``q_hit ~ Bin(n2, P(S|x'))``, ``eps_LB = log(CP_lower(p_hit) / CP_upper(q_hit))`` with
  exact Clopper-Pearson bounds, each one-sided at level ``a / 2``, where ``a`` is alpha
  divided (Bonferroni) by the number of certified tests, ``2 * len(pairs)`` (one witness
  per ordered pair). The reported bound is the maximum over the tests, floored at 0.

Because each witness is a function of the selection half only, each certified test is a
single pre-specified test on fresh data; the union bound makes the maximum valid whatever
the dependence between the tests (inputs shared between pairs reuse the same samples).

With ``eps_for_delta``, a second witness per ordered pair is selected for the hockey-stick
bound ``delta_LB = CP_lower(p_hit) - e^eps CP_upper(q_hit)``; alpha is then split in two
halves, one for the eps tests and one for the delta tests, so that ``eps_LB`` and
``delta_LB`` hold *jointly* with probability at least ``1 - alpha``.

Sampled evidence cannot prove that an event has zero mass under an input (with 0 hits out
of ``n2`` the Clopper-Pearson upper bound is ``1 - (a/2)^(1/n2) > 0``), so from samples
alone ``eps_LB`` is finite; it is never capped at any constant either: it grows like
``log(n2)`` on an event that one input never produces. With a known density
(``log_density``), an event of zero density under ``x'`` has zero mass *by the density*:
its upper bound is 0 and ``eps_LB = inf`` once it is hit under ``x`` (a sample of ``x'``
inside it is reported as an error: the density does not describe the sampler).

Likelihood-ratio events (with a density): ``{y : log p_x(y) - log p_x'(y) >= c}``, ``c`` on
a quantile grid of the observed log-ratios; for finite outputs the output sets are the
prefixes of the outputs ordered by the exact ratio (Neyman-Pearson). Candidates are scored
on the selection data at the simultaneous level (certification level divided by the
number of candidates) to damp the winner's curse; that affects power only.

:func:`audit_sequential` repeats select-then-certify in looks on growing fresh batches and
stops once the claim is refuted (alpha spent equally over the looks planned in advance).

Exact-floats mode (``exact_floats=True``): the audit above tests the *mathematical*
mechanism (thresholds and intervals on a quantile grid never look at the last bits, and
likelihood-ratio events are read with a tolerance). Samplers computed in floating point
also leak through the low-order bits of their outputs (Mironov 2012): for ``x + Z`` in
doubles, an output one binade finer than ``Z`` (``1 + Z`` for ``Z`` in (-3, -2)) always has
its last mantissa bit 0, while ``0 + Z`` has it uniform, so the event "output in (-2, -1]
with last bit 1" has probability 0 under 1 and not under 0. In this mode the candidates of
real outputs also include the ``low_bits`` events (an interval of the quantile grid and the
number of trailing zero bits of the output's mantissa below, or at least, ``T``) and, with
a density, the likelihood-ratio events compared exactly. They are only more candidates of
the same selection, scored at the simultaneous level over *all* candidates, and the chosen
event is certified exactly as before: the validity (``eps_LB`` below the eps of the sampler
as it runs, bits included, with probability >= 1 - alpha) is unchanged. Integer outputs have
no float bits: nothing is added for them.

The derivation is in docs/theory.md sec. 11; the bounds are Clopper and Pearson (1934),
scored with Wilson (1927) intervals (both in :mod:`ldpsim.stats`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim._text import plural
from ldpsim.audit.events import LOW_BITS, _delta_score, _eps_score, _finite_select, _per_output, _real_select
from ldpsim.audit.witnesses import LogDensity, Witness, _finite_input, input_key
from ldpsim.errors import LdpSimError, invalid, show
from ldpsim.stats import clopper_pearson_lower, clopper_pearson_upper

__all__ = ["AuditResult", "audit", "density_of", "sampler_of", "MIN_HALF"]

#: Fewest samples per input in each of the selection and certification halves.
MIN_HALF = 10

Sampler = Callable[[Any, int, np.random.Generator], ArrayLike]


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit` and :func:`audit_sequential`.

    ``eps_lb``: lower bound on eps, valid with probability >= 1 - alpha (0 when nothing is
    certified; ``inf`` only when a known density proves the witness event impossible under
    ``x_prime``; never capped). ``delta_lb``: lower bound on the smallest delta at
    ``eps_for_delta`` (None when not asked), valid jointly with ``eps_lb``.
    ``witness`` / ``delta_witness``: the witnesses achieving them (None when the bound is 0).
    ``counts`` / ``delta_counts``: certification hits of the witness under ``x`` and
    ``x_prime`` and the certification size per input. ``n_samples_used``: total outputs
    drawn (all inputs). ``method``: what was done, with the multiple-testing correction.
    ``per_output`` (finite outputs): for the eps witness pair, every output seen with its
    counts under ``x`` and ``x_prime`` (all samples), the empirical log-ratio and, when a
    density is known, the exact one. Sequential audits also fill ``claimed_eps``,
    ``claimed_delta``, ``refuted`` and ``rounds`` (one row per look).
    """

    eps_lb: float
    delta_lb: float | None
    witness: Witness | None
    counts: dict[str, int]
    n_samples_used: int
    alpha: float
    method: str
    eps_for_delta: float | None = None
    delta_witness: Witness | None = None
    delta_counts: dict[str, int] = field(default_factory=dict)
    per_output: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    claimed_eps: float | None = None
    claimed_delta: float | None = None
    refuted: bool | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> str:
        """A few lines for people: eps_LB, the claim and verdict, witness, samples used."""
        lines = [f"eps_LB = {self.eps_lb:.6g}  (valid with probability >= {1 - self.alpha:g})"]
        if self.delta_lb is not None:
            lines.append(f"delta_LB at eps={self.eps_for_delta:g}: {self.delta_lb:.6g}")
        if self.claimed_eps is not None:
            claim = f"eps={self.claimed_eps:g}" + (f", delta={self.claimed_delta:g}" if self.claimed_delta else "")
            verdict = "REFUTED" if self.refuted else "not refuted"
            lines.append(f"claimed {claim}: {verdict}")
        lines.append("witness: " + (self.witness.to_json() if self.witness is not None else "none (nothing certified)"))
        if self.counts:
            lines.append(
                f"certification hits: {self.counts['hits_x']} under x, {self.counts['hits_x_prime']} under x' "
                f"(of {self.counts['n_per_input']} each)"
            )
        lines.append(f"samples used: {self.n_samples_used:,}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- samplers
def sampler_of(mechanism: Any) -> Sampler:
    """The sampler ``(x, n, rng) -> n outputs`` of a mechanism: its contract method
    ``sample(x, n, rng)`` (:class:`ldpsim.mechanisms.base.Mechanism`). Any object with such a
    method is accepted; anything else raises."""
    sample = getattr(mechanism, "sample", None)
    if callable(sample):
        return sample
    raise invalid(
        "mechanism", mechanism, "a mechanism with sample(x, n, rng) (the mechanism contract) or a sampler function"
    )


def density_of(mechanism: Any) -> LogDensity | None:
    """The exact log density ``log_density(x, y)`` of a mechanism's output (log pmf for
    finite outputs), or None: the contract method ``log_density`` when the mechanism's
    ``has_density`` is true (an object without ``has_density`` counts as having one when it
    has a ``log_density`` method); None for a bare sampler function."""
    ld = getattr(mechanism, "log_density", None)
    if not callable(ld) or not getattr(mechanism, "has_density", True):
        return None
    return ld


def _draw(sampler: Sampler, x: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    try:
        raw = sampler(x, n, rng)
    except Exception as exc:
        raise LdpSimError(f"sampler raised {type(exc).__name__}: {exc} for input x={show(x)}") from exc
    try:
        out = np.asarray(raw)
    except Exception:  # pragma: no cover - defensive (ragged objects)
        raise invalid("sampler output", raw, f"a 1-D numeric array of {n} outputs (input x={show(x)})") from None
    if out.dtype == bool:
        out = out.astype(np.int64)  # bits (or bit vectors) are finite outputs 0 / 1
    if out.dtype == bool or not (np.issubdtype(out.dtype, np.integer) or np.issubdtype(out.dtype, np.floating)):
        raise invalid(
            "sampler output", f"an array of dtype {out.dtype}", f"integer or real outputs (input x={show(x)})"
        )
    if not (out.shape == (n,) or (out.ndim == 2 and out.shape[0] == n and out.shape[1] >= 1)):
        raise invalid(
            "sampler output",
            f"an array of shape {out.shape}",
            f"shape ({n},) or ({n}, d): one output (or vector) per draw (input x={show(x)})",
        )
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    if np.issubdtype(out.dtype, np.floating) and np.isnan(out).any():
        raise invalid("sampler output", "NaN outputs", f"real outputs, not NaN (input x={show(x)})")
    if out.ndim == 2 and np.issubdtype(out.dtype, np.floating) and not np.isfinite(out).all():
        raise invalid("sampler output", "infinite entries in vector outputs", f"finite vectors (input x={show(x)})")
    return out


# --------------------------------------------------------------------------- audit
def _check_pairs(pairs: Any) -> list[tuple[Any, Any]]:
    expected = "a non-empty sequence of pairs (x, x_prime) of distinct inputs"
    if isinstance(pairs, (str, bytes)):
        raise invalid("pairs", pairs, expected)
    try:
        items = list(pairs)
    except TypeError:
        raise invalid("pairs", pairs, expected) from None
    if not items:
        raise invalid("pairs", pairs, expected)
    out = []
    for pair in items:
        if isinstance(pair, (str, bytes)):
            raise invalid("pairs", pair, expected)
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise invalid("pairs", pair, expected) from None
        if input_key(a) == input_key(b):
            raise invalid("pairs", pair, expected)
        if not (_finite_input(a) and _finite_input(b)):
            raise invalid("pairs", pair, expected + " (numbers must be finite)")
        out.append((a, b))
    return out


def _setup(
    sampler: Any, pairs: Any, alpha: float, outputs: str, eps_for_delta: Any, log_density: Any
) -> tuple[Sampler, list[tuple[Any, Any]], float, float | None, LogDensity | None]:
    ld: LogDensity | None
    if isinstance(log_density, str) and log_density == "auto":
        ld = None if callable(sampler) else density_of(sampler)
    elif log_density is None or callable(log_density):
        ld = log_density
    else:
        raise invalid("log_density", log_density, '"auto", None or a function log_density(x, y)')
    if not callable(sampler):
        sampler = sampler_of(sampler)
    pairs_ = _check_pairs(pairs)
    alpha_ = v.as_float(alpha, "alpha", "a number in (0, 1)")
    if not 0.0 < alpha_ < 1.0:
        raise invalid("alpha", alpha, "a number in (0, 1)")
    if outputs not in ("auto", "finite", "real"):
        raise invalid("outputs", outputs, '"auto", "finite" or "real"')
    eps_d = None if eps_for_delta is None else v.epsilon(eps_for_delta, "eps_for_delta")
    return sampler, pairs_, alpha_, eps_d, ld


def _draw_all(
    sampler: Sampler, pairs: list[tuple[Any, Any]], n: int, gen: np.random.Generator
) -> dict[str, np.ndarray]:
    """One batch of ``n`` outputs per distinct input, shared by all the pairs it appears in."""
    samples: dict[str, np.ndarray] = {}
    for pair in pairs:
        for x in pair:
            key = input_key(x)
            if key not in samples:
                samples[key] = _draw(sampler, x, n, gen)
    return samples


def _output_kind(samples: dict[str, np.ndarray], outputs: str) -> str:
    all_int = all(np.issubdtype(s.dtype, np.integer) for s in samples.values())
    kind = ("finite" if all_int else "real") if outputs == "auto" else outputs
    if kind == "finite" and not all_int:
        for key, s in samples.items():
            if not np.issubdtype(s.dtype, np.integer) and not (
                np.all(np.abs(s) <= 2.0**53) and np.all(s == np.floor(s))
            ):
                raise invalid(
                    "sampler output", f"non-integer outputs for input x={key}", 'integer outputs (outputs="finite")'
                )
    return kind


def _cast(samples: dict[str, np.ndarray], kind: str) -> dict[str, np.ndarray]:
    dtype = np.int64 if kind == "finite" else np.float64
    return {key: s.astype(dtype, copy=False) for key, s in samples.items()}


def _width(samples: dict[str, np.ndarray]) -> int:
    """0 for scalar outputs, else the common length ``d`` of the output vectors."""
    widths = {s.shape[1] if s.ndim == 2 else 0 for s in samples.values()}
    if len(widths) != 1:
        raise invalid(
            "sampler output", f"outputs of widths {sorted(widths)}", "the same shape for every input and batch"
        )
    return widths.pop()


class _Rows:
    """Integer codes for integer vector outputs (one code per distinct vector, stable across
    batches), so that the finite-output search runs on codes; vectorised over samples."""

    def __init__(self, d: int) -> None:
        self.d = d
        self.known = np.empty((0, d), dtype=np.int64)

    def encode(self, arr: np.ndarray) -> NDArray[np.int64]:
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise invalid("sampler output", f"an array of shape {arr.shape}", f"vectors of length {self.d}")
        uniq, inv = np.unique(arr, axis=0, return_inverse=True)
        m = self.known.shape[0]
        codes = np.full(uniq.shape[0], -1, dtype=np.int64)
        if m:
            allr, ainv = np.unique(np.concatenate([self.known, uniq]), axis=0, return_inverse=True)
            ainv = ainv.ravel()
            pos_to_code = np.full(allr.shape[0], -1, dtype=np.int64)
            pos_to_code[ainv[:m]] = np.arange(m)
            codes = pos_to_code[ainv[m:]]
        new = codes < 0
        codes[new] = m + np.arange(int(new.sum()))
        self.known = np.concatenate([self.known, uniq[new]])
        return codes[inv.ravel()]

    def decode(self, codes: ArrayLike) -> NDArray[np.int64]:
        return self.known[np.asarray(codes, dtype=np.int64)]

    def density(self, ld: LogDensity | None) -> LogDensity | None:
        if ld is None:
            return None
        return lambda x, codes: ld(x, self.decode(codes))

    def publish(self, event: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "outputs", "values": self.decode(event["values"]).tolist()}


def _encode(
    samples: dict[str, np.ndarray], kind: str, rows: "_Rows | None", ld: LogDensity | None
) -> tuple[dict[str, np.ndarray], "_Rows | None", LogDensity | None]:
    """Integer vector outputs become codes (``rows`` kept across batches); the density is
    wrapped to decode them. Other outputs pass through."""
    d = _width(samples)
    if kind != "finite" or d == 0:
        if rows is not None:
            raise invalid("sampler output", "scalar outputs after vector outputs", "the same shape in every batch")
        return samples, None, ld
    rows = rows if rows is not None else _Rows(d)
    return {key: rows.encode(s) for key, s in samples.items()}, rows, rows.density(ld)


@dataclass
class _Best:
    eps: float = 0.0
    w: Witness | None = None
    counts: dict[str, int] = field(default_factory=dict)
    delta: float = 0.0
    dw: Witness | None = None
    dcounts: dict[str, int] = field(default_factory=dict)


def _round(
    kind: str,
    pairs: list[tuple[Any, Any]],
    sel: dict[str, np.ndarray],
    cert: dict[str, np.ndarray],
    a: float,
    eps_d: float | None,
    ld: LogDensity | None,
    rows: _Rows | None = None,
    ld_public: LogDensity | None = None,
    exact_floats: bool = False,
) -> _Best:
    """Select one witness per ordered pair (and goal) on ``sel``, certify each on ``cert``
    with Clopper-Pearson bounds at ``a / 2`` per side; the best certified values.
    ``exact_floats`` adds candidates to the selection only (see the module docstring)."""
    z = float(stats.norm.isf(a / 2.0))
    select = _finite_select if kind == "finite" else _real_select
    best = _Best()
    ordered = [(p0, p1) for p0, p1 in pairs] + [(p1, p0) for p0, p1 in pairs]
    goals: list[tuple[str, Callable[[NDArray, NDArray], NDArray]]] = [("eps", _eps_score)]
    if eps_d is not None:
        goals.append(("delta", lambda lo, hi: _delta_score(lo, hi, eps_d)))
    for x, xp in ordered:
        sp, sq = sel[input_key(x)], sel[input_key(xp)]
        cp_, cq_ = cert[input_key(x)], cert[input_key(xp)]
        n2 = cp_.size
        for goal, score in goals:
            found = select(x, xp, sp, sq, score, z, ld, exact_floats)
            if found is None:
                continue
            event, zero_q = found
            w = Witness(x, xp, event, ld)
            public = w if rows is None else Witness(x, xp, rows.publish(event), ld_public)
            hp = int(np.count_nonzero(w.contains(cp_)))
            hq = int(np.count_nonzero(w.contains(cq_)))
            if zero_q and hq:
                raise LdpSimError(
                    f"log_density gives the witness event {event} probability 0 under x={show(xp)}, but {hq} of "
                    f"{n2} outputs fell in it: the density does not describe the sampler"
                )
            lo = float(clopper_pearson_lower(hp, n2, a / 2.0))
            hi = 0.0 if zero_q else float(clopper_pearson_upper(hq, n2, a / 2.0))
            counts = {"hits_x": hp, "hits_x_prime": hq, "n_per_input": n2}
            if goal == "eps":
                val = float(_eps_score(np.array(lo), np.array(hi)))
                if val > best.eps:
                    best.eps, best.w, best.counts = val, public, counts
            else:
                val = float(_delta_score(np.array(lo), np.array(hi), eps_d))  # type: ignore[arg-type]
                if val > best.delta:
                    best.delta, best.dw, best.dcounts = val, public, counts
    return best


def _events_text(kind: str, ld: LogDensity | None, exact_floats: bool = False) -> str:
    base = "output sets by observed ratio" if kind == "finite" else "thresholds and intervals on a quantile grid"
    if ld is not None:
        base = (
            "output sets by exact likelihood ratio" if kind == "finite" else base + " and likelihood-ratio events"
        ) + "; events of zero density under x' certified as zero mass (checked against the samples)"
    if exact_floats:
        if kind == "finite":
            base += "; exact-floats mode: integer outputs have no float bits, no event added"
        else:
            base += (
                f"; exact-floats mode: also the grid intervals split by the trailing zero bits of the outputs' "
                f"mantissa (fewer than / at least T, T in {{{', '.join(str(t) for t in LOW_BITS)}}})"
                + (" and likelihood-ratio events compared exactly" if ld is not None else "")
                + ", among the same candidates, so the validity is unchanged"
            )
    return base


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(name, value, "True or False")
    return bool(value)


def _finish(
    best: _Best,
    kind: str,
    pairs: list[tuple[Any, Any]],
    samples: dict[str, np.ndarray],
    ld: LogDensity | None,
    n_used: int,
    alpha: float,
    method: str,
    eps_d: float | None,
    rows: _Rows | None = None,
    **extra: Any,
) -> AuditResult:
    per_output = None
    if kind == "finite":
        x, xp = (best.w.x, best.w.x_prime) if best.w is not None else pairs[0]
        per_output = _per_output(x, xp, samples[input_key(x)], samples[input_key(xp)], ld)
        if rows is not None:
            per_output["output"] = [tuple(r) for r in rows.decode(per_output["output"]).tolist()]
    return AuditResult(
        eps_lb=best.eps,
        delta_lb=None if eps_d is None else best.delta,
        witness=best.w,
        counts=best.counts,
        n_samples_used=n_used,
        alpha=alpha,
        method=method,
        eps_for_delta=eps_d,
        delta_witness=best.dw,
        delta_counts=best.dcounts,
        per_output=per_output,
        **extra,
    )


def audit(
    sampler: Sampler | Any,
    pairs: Sequence[tuple[Any, Any]],
    n: int,
    alpha: float = 0.05,
    *,
    outputs: str = "auto",
    eps_for_delta: float | None = None,
    rng: RNGLike = None,
    split: float = 0.5,
    log_density: LogDensity | str | None = "auto",
    exact_floats: bool = False,
) -> AuditResult:
    """Lower bound on the eps of a mechanism from samples, valid with probability >= 1 - alpha.

    ``sampler(x, n, rng)`` returns ``n`` outputs of the mechanism on input ``x``: a 1-D array
    (integers for finite outputs, floats for real outputs, +-inf allowed as atoms) or an
    ``n x d`` array of vectors (integer vectors, e.g. bits, are finite outputs searched as
    sets of vectors; real vectors are projected on the difference of the means and on each
    axis up to ``MAX_AXES`` dimensions, then thresholds and intervals);
    a library mechanism (or any object with ``sample(x, n, rng)``) is accepted directly.
    ``pairs``: candidate pairs of inputs, each audited in both orders. ``n``: outputs drawn
    per distinct input, split into a selection part (``split``) and a certification part.
    ``outputs``: ``"finite"``, ``"real"`` or ``"auto"`` (finite when every sample has an
    integer dtype). ``eps_for_delta``: also return a lower bound on delta at that eps.
    ``log_density``: ``log_density(x, y)``, the exact log density (log pmf) of the output,
    used to choose likelihood-ratio events and to certify events of zero density under
    ``x'`` as having zero mass (so ``eps_LB`` can be ``inf``); ``"auto"`` (default) takes it
    from a mechanism object (:func:`density_of`), None for a bare sampler.
    ``exact_floats``: also search events on the exact bit patterns of real outputs (the
    trailing zero bits of their mantissa, within intervals of the grid) and, with a density,
    likelihood-ratio events compared exactly -- the floating-point attack of Mironov (2012),
    which refutes textbook float samplers. These are more candidates for the selection
    only; the certification is unchanged, and so is the validity. No effect on integer
    outputs (the method text says so).

    See the module docstring for the method and its validity.
    """
    sampler_, pairs_, alpha_, eps_d, ld = _setup(sampler, pairs, alpha, outputs, eps_for_delta, log_density)
    exact = _check_flag(exact_floats, "exact_floats")
    split_ = v.as_float(split, "split", "a number in (0, 1)")
    if not 0.0 < split_ < 1.0:
        raise invalid("split", split, "a number in (0, 1)")
    n_ = v.integer(n, "n", minimum=1)
    n1 = int(round(n_ * split_))
    n2 = n_ - n1
    if n1 < MIN_HALF or n2 < MIN_HALF:
        need = math.ceil(MIN_HALF / min(split_, 1.0 - split_)) + 1
        raise invalid(
            "n",
            n,
            f"at least about {need} samples per input at split={split_:g}, so that selection ({n1}) "
            f"and certification ({n2}) each get >= {MIN_HALF}",
        )
    gen = as_generator(rng)
    samples = _draw_all(sampler_, pairs_, n_, gen)
    kind = _output_kind(samples, outputs)
    samples, rows, ld_int = _encode(_cast(samples, kind), kind, None, ld)

    families = 1 if eps_d is None else 2
    tests = 2 * len(pairs_)
    a = alpha_ / families / tests  # per certified test; each side of the ratio gets a / 2
    sel = {key: s[:n1] for key, s in samples.items()}
    cert = {key: s[n1:] for key, s in samples.items()}
    best = _round(kind, pairs_, sel, cert, a, eps_d, ld_int, rows, ld, exact)

    fam = "" if eps_d is None else f", alpha split equally between the eps and the delta (at eps={eps_d:g}) witnesses"
    method = (
        f"select-then-certify: per input, {n1} outputs select one witness event per ordered pair "
        f"({_events_text(kind, ld, exact)}; Wilson-score plug-in), {n2} fresh outputs certify it with exact "
        f"Clopper-Pearson bounds; Bonferroni over {tests} tests (2 orders x {plural(len(pairs_), 'pair')}){fam}: "
        f"each test at level {a:.3g}, {a / 2:.3g} per side; no cap on eps_LB"
    )
    return _finish(best, kind, pairs_, samples, ld_int, n_ * len(samples), alpha_, method, eps_d, rows)
