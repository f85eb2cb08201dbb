"""Sequential auditing: select-then-certify in looks on growing fresh batches, stopping once
the claim is refuted; alpha is spent equally over the looks planned in advance (see
:func:`audit_sequential`; docs/theory.md sec. 11, "Sequential audit")."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ldpsim import _progress as progress
from ldpsim import _validate as v
from ldpsim._rng import RNGLike, as_generator
from ldpsim._text import plural
from ldpsim.audit.core import (
    MIN_HALF,
    AuditResult,
    Sampler,
    _Best,
    _cast,
    _check_flag,
    _draw_all,
    _encode,
    _events_text,
    _finish,
    _output_kind,
    _round,
    _setup,
    _width,
)
from ldpsim.audit.witnesses import LogDensity
from ldpsim.errors import invalid

__all__ = ["audit_sequential"]


def _schedule(n_max: int, first: int, growth: float) -> list[int]:
    """Certification batch sizes after a selection batch of ``first``: ``first * growth^r``
    while the total stays within ``n_max`` (the last batch takes what is left)."""
    sizes: list[int] = []
    used, size = first, float(first)
    while used < n_max:
        m = min(int(round(min(size, n_max))), n_max - used)
        if m < MIN_HALF:
            if sizes:
                sizes[-1] += m
            break
        sizes.append(m)
        used += m
        size = min(size * growth, float(n_max))
    return sizes


def audit_sequential(
    sampler: Sampler | Any,
    pairs: Sequence[tuple[Any, Any]],
    n_max: int,
    claimed_eps: float,
    alpha: float = 0.05,
    *,
    claimed_delta: float = 0.0,
    first: int = 1000,
    growth: float = 2.0,
    outputs: str = "auto",
    log_density: LogDensity | str | None = "auto",
    rng: RNGLike = None,
    exact_floats: bool = False,
) -> AuditResult:
    """Audit in rounds and stop as soon as the claim (``claimed_eps``, ``claimed_delta``) is
    refuted or ``n_max`` outputs per input are spent.

    Schedule (fixed in advance from ``n_max``, ``first`` and ``growth``): a selection batch
    of ``first`` outputs per input, then certification batches of ``first * growth^(r-1)``
    (r = 1..R). At look ``r`` the witnesses are selected on *every* output drawn before
    (selection batch and the earlier certification batches) and certified on the fresh
    batch ``r`` alone, at level ``alpha / R`` -- an alpha-spending rule with equal spending
    over the R planned looks, so by the union bound over looks, pairs and orders every
    reported bound holds simultaneously with probability >= 1 - alpha, whenever the audit
    stops. ``eps_lb`` (and ``delta_lb``) are the largest certified over the looks made.

    Refuted: ``eps_lb > claimed_eps`` for a pure claim; for ``claimed_delta > 0``,
    ``delta_lb > claimed_delta`` at ``eps = claimed_eps`` (the eps test still runs, with
    half of alpha). ``rounds``: one row per look (certification size, cumulative outputs
    per input, the bounds of that look and the running best).

    ``exact_floats``: as in :func:`~ldpsim.audit.core.audit`, also select events on the
    exact bit patterns of real outputs (Mironov 2012); more candidates at each look, the
    certification and the alpha spending unchanged, so the validity is unchanged.

    On a terminal a progress bar runs over the planned looks (:mod:`ldpsim._progress`),
    each weighted by its batch size (its time: drawing and certifying are linear in the
    outputs, so with ``growth = 2`` the last look is about half of the work); it goes away
    when the audit stops, early or not.
    """
    c_eps = v.epsilon(claimed_eps, "claimed_eps")
    c_delta = v.as_float(claimed_delta, "claimed_delta", "a number in [0, 1)")
    if not 0.0 <= c_delta < 1.0:
        raise invalid("claimed_delta", claimed_delta, "a number in [0, 1)")
    eps_for_delta = c_eps if c_delta > 0 else None
    sampler_, pairs_, alpha_, eps_d, ld = _setup(sampler, pairs, alpha, outputs, eps_for_delta, log_density)
    exact = _check_flag(exact_floats, "exact_floats")
    first_ = v.integer(first, "first", minimum=MIN_HALF)
    growth_ = v.as_float(growth, "growth", "a number >= 1")
    if not 1.0 <= growth_ < math.inf:
        raise invalid("growth", growth, "a number >= 1")
    n_max_ = v.integer(n_max, "n_max", minimum=1)
    if n_max_ < first_ + MIN_HALF:
        raise invalid("n_max", n_max, f"at least first + {MIN_HALF} = {first_ + MIN_HALF} samples per input")
    sizes = _schedule(n_max_, first_, growth_)
    looks = len(sizes)
    families = 1 if eps_d is None else 2
    tests = 2 * len(pairs_)
    a = alpha_ / looks / families / tests

    gen = as_generator(rng)
    with progress.bar(first_ + sum(sizes), "audit", counts=False):  # ticks: outputs drawn per input
        sel = _draw_all(sampler_, pairs_, first_, gen)
        progress.advance(first_)
        kind = _output_kind(sel, outputs)
        width = _width(sel)
        sel, rows, ld_int = _encode(_cast(sel, kind), kind, None, ld)
        best = _Best()
        rounds: list[dict[str, Any]] = []
        refuted = False
        for r, m in enumerate(sizes, start=1):
            progress.note(f"look {r} of {looks}")
            batch = _draw_all(sampler_, pairs_, m, gen)
            if kind == "finite":
                _output_kind(batch, "finite")  # every batch must hold integer outputs, not only the first
            if _width(batch) != width:
                raise invalid(
                    "sampler output", "outputs of another shape in a later batch", "the same shape in every batch"
                )
            cert, rows, _ = _encode(_cast(batch, kind), kind, rows, ld)
            got = _round(kind, pairs_, sel, cert, a, eps_d, ld_int, rows, ld, exact)
            if got.eps > best.eps:
                best.eps, best.w, best.counts = got.eps, got.w, got.counts
            if got.delta > best.delta:
                best.delta, best.dw, best.dcounts = got.delta, got.dw, got.dcounts
            sel = {key: np.concatenate([sel[key], cert[key]]) for key in sel}
            refuted = best.eps > c_eps if c_delta == 0 else best.delta > c_delta
            rounds.append(
                {
                    "look": r,
                    "n_certify": m,
                    "n_per_input": int(next(iter(sel.values())).shape[0]),
                    "eps_lb_look": got.eps,
                    "eps_lb": best.eps,
                    **({} if eps_d is None else {"delta_lb_look": got.delta, "delta_lb": best.delta}),
                    "refuted": refuted,
                }
            )
            progress.advance(m)
            if refuted:
                break

    n_per_input = rounds[-1]["n_per_input"]
    fam = "" if eps_d is None else f", alpha split equally between the eps and the delta (at eps={eps_d:g}) witnesses"
    method = (
        f"sequential select-then-certify: selection batch {first_}, then up to "
        f"{plural(looks, 'certification batch', 'certification batches')} (growth {growth_:g}, at most {n_max_} "
        f"outputs per input); at each look witnesses ({_events_text(kind, ld, exact)}) are selected on all earlier "
        f"outputs and certified on the fresh batch with exact Clopper-Pearson bounds; alpha spending: alpha/{looks} "
        f"per look (equal spending, union bound over looks), Bonferroni over {tests} tests{fam}: each test at level "
        f"{a:.3g}; stopped after {plural(len(rounds), 'look')}{' (refuted)' if refuted else ''}; no cap on eps_LB"
    )
    return _finish(
        best,
        kind,
        pairs_,
        sel,
        ld_int,
        n_per_input * len(sel),
        alpha_,
        method,
        eps_d,
        rows,
        claimed_eps=c_eps,
        claimed_delta=c_delta,
        refuted=refuted,
        rounds=rounds,
    )
