"""Which frequency oracle for a survey: exact expected losses side by side
(``ldpsim recommend``).

For ``k`` answers, privacy level ``eps``, ``n`` respondents and a true distribution
``prior``, every frequency oracle of the catalog (the entries tagged ``oracle`` that take
``k`` and ``eps``) is built at those parameters and scored by the exact variance of its
unbiased estimator (:meth:`~ldpsim.mechanisms.base.FrequencyOracle.estimate_variance`):

- ``mse``: the expected squared error summed over answers, ``sum_x Var(f_x)`` (exact: the
  estimators are unbiased);
- ``l1``: the expected L1 error ``sum_x E|f_x - p_x|``, with each estimate's error taken as
  normal: ``sum_x sqrt(2 Var(f_x) / pi)`` (an approximation, stated as such in the output;
  it is accurate when every variance is small against ``n``'s scale);
- ``kl``: the expected Kullback-Leibler divergence ``E KL(p || f)`` to second order,
  ``sum_{x: p_x > 0} Var(f_x) / (2 p_x)`` (the delta method: the first-order term has mean
  0 because the estimator is unbiased; the chi-square divergence over two). Also an
  approximation, good while every standard error is small against its ``p_x``; answers the
  prior gives no mass contribute nothing.

Beside each loss: what one report gives away, the accuracy of the server's best guess of a
respondent's answer from it at ``prior`` (:func:`ldpsim.risk.report_accuracy`; the baseline
without a report is ``max(prior)``), the report's size in bits, an estimate of the server's work
(:meth:`~ldpsim.mechanisms.base.FrequencyOracle.server_operations`) and the oracle's exact
eps. For ``k <= 24`` the optimal mechanism of the staircase linear program for mutual
information at ``prior`` (Kairouz, Oh and Viswanath 2014) is scored as well: optimal for
that utility, not for the squared error, which the table shows. :func:`curves` scores
every oracle over a grid of eps and :func:`boundaries` finds the regime boundaries: where
the best oracle changes, and where randomized response overtakes optimised unary encoding.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ldpsim import _validate as v
from ldpsim.errors import LdpSimError, invalid
from ldpsim.mechanisms import catalog
from ldpsim.risk import report_accuracy

__all__ = ["LOSSES", "candidates", "parse_prior", "evaluate", "curves", "boundaries", "LP_MAX_K"]

LOSSES = ("mse", "l1", "kl")
#: Above this largest relative standard error the command warns that ``kl``'s second-order
#: approximation is poor (the cubic term is then a third of the quadratic one or more).
KL_RELIABLE = 0.3
#: How each loss is computed, as the command says beside the table.
LOSS_KIND = {"mse": "exact", "l1": "normal approximation", "kl": "second-order approximation"}
#: Largest k for which the linear program's optimal mechanism is scored too.
LP_MAX_K = 24
#: Largest k the comparison accepts (labels, variances and priors are length-k vectors).
MAX_K = 10**7


def candidates() -> list[str]:
    """Catalog oracles that take ``k`` (the alphabet) and ``eps``, in catalog order."""
    out = []
    for name, e in catalog.CATALOG.items():
        roles = {p.role for p in e.params.values()}
        if "oracle" in e.tags and "eps" in e.params and "alphabet" in roles:
            out.append(name)
    return out


def parse_prior(text: str | Sequence[float] | None, k: int) -> NDArray[np.float64]:
    """``uniform`` (default), ``zipf:S`` (``P(answer i) ∝ i^-S``) or ``k`` comma-separated
    weights (normalised); one line naming ``--prior`` otherwise."""
    expected = "uniform, zipf:S with S > 0, or k comma-separated weights >= 0"
    if text is None or (isinstance(text, str) and text.strip() == "uniform"):
        return np.full(k, 1.0 / k)
    if isinstance(text, str) and text.strip().startswith("zipf:"):
        try:
            s = float(text.strip()[5:])
        except ValueError:
            raise invalid("--prior", text, expected) from None
        if not (math.isfinite(s) and 0 < s <= 100):
            raise invalid("--prior", text, expected)
        w = np.arange(1, k + 1, dtype=np.float64) ** -s
        return w / w.sum()
    try:
        w = np.asarray([float(x) for x in text.split(",")] if isinstance(text, str) else list(text), dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid("--prior", text, expected) from None
    if w.shape != (k,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise invalid("--prior", f"{w.size} weights" if w.ndim == 1 else text, f"{expected} (k = {k})")
    return w / w.sum()


def _losses(var: NDArray[np.float64], prior: NDArray[np.float64]) -> dict[str, float]:
    var = np.clip(var, 0.0, None)
    seen = prior > 0
    return {
        "mse": float(var.sum()),
        "l1": float(np.sqrt(2.0 * var / math.pi).sum()),
        "kl": float(np.sum(var[seen] / (2.0 * prior[seen]))),
        "max_relative_error": float(np.max(np.sqrt(var[seen]) / prior[seen])),
    }


def _score(name: str, mech: Any, prior: NDArray[np.float64], n: int) -> dict[str, Any]:
    var = np.asarray(mech.estimate_variance(prior, float(n)), dtype=np.float64)
    accuracy, method, _ = report_accuracy(mech, prior, rng=0)
    return {
        "mechanism": name,
        **_losses(var, prior),
        "max_std_error": float(np.sqrt(var.max())),
        "risk_accuracy": accuracy,
        "risk_method": method,
        "report_bits": float(mech.report_bits),
        "server_operations": float(mech.server_operations(n)),
        "exact_eps": float(mech.epsilon(0.0)),
    }


def _checked(k: int, eps: float, n: float, loss: str) -> tuple[int, float, int, str]:
    k = v.integer(k, "--k", minimum=2, maximum=MAX_K)
    eps = v.as_float(eps, "--eps", "a number in (0, 50]")
    if not (0 < eps <= 50):
        raise invalid("--eps", eps, "a number in (0, 50]")
    nf = v.as_float(n, "--n", "a number of respondents >= 1")
    if not (math.isfinite(nf) and nf >= 1 and float(nf).is_integer() and nf <= 1e15):
        raise invalid("--n", n, "a whole number of respondents between 1 and 1e15")
    if loss not in LOSSES:
        raise invalid("--utility", loss, f"one of {', '.join(LOSSES)}")
    return k, eps, int(nf), loss


def evaluate(k: int, eps: float, n: float, prior: Any = None, loss: str = "mse", lp: bool = True) -> pd.DataFrame:
    """One row per oracle (and the linear program's mechanism for ``k <= LP_MAX_K``):
    ``mse``, ``l1``, ``kl``, ``max_std_error``, ``max_relative_error`` (the largest standard
    error over its answer's probability, where the second-order ``kl`` stops meaning much
    once it nears 1), ``report_bits``, ``server_operations``,
    ``exact_eps``, ``note``; sorted by ``loss`` (best first)."""
    k, eps, n, loss = _checked(k, eps, n, loss)
    p = parse_prior(prior, k)
    rows: list[dict[str, Any]] = []
    for name in candidates():
        try:
            mech = catalog.build(name, k=k, eps=eps)
        except LdpSimError as exc:
            rows.append({"mechanism": name, "note": f"not available here ({' '.join(str(exc).split())[:90]})"})
            continue
        rows.append({**_score(name, mech, p, n), "note": ""})
    if lp and k <= LP_MAX_K:
        mech = catalog.build("optimal", eps=eps, utility="mutual_information", k=k, prior=p.tolist())
        label = "optimal (LP, mutual information)"
        if mech.identifiable:
            rows.append({**_score(label, mech, p, n), "note": "optimal for mutual information, not for this loss"})
        else:
            rows.append(
                {
                    "mechanism": label,
                    "report_bits": float(mech.report_bits),
                    "exact_eps": float(mech.epsilon(0.0)),
                    "note": f"its {mech.m} outputs cannot estimate {k} frequencies",
                }
            )
    table = pd.DataFrame(rows)
    table = table.sort_values(loss, kind="stable", na_position="last").reset_index(drop=True)
    cols = [
        "mechanism",
        "mse",
        "l1",
        "kl",
        "max_std_error",
        "max_relative_error",
        "risk_accuracy",
        "risk_method",
        "report_bits",
        "server_operations",
        "exact_eps",
        "note",
    ]
    return table.reindex(columns=cols)


def curves(
    k: int, n: float, prior: Any = None, eps_grid: Sequence[float] | None = None, loss: str = "mse"
) -> pd.DataFrame:
    """The loss of every oracle at each eps of ``eps_grid`` (default: 40 points from 0.1 to
    8, log-spaced): columns ``eps`` and one per oracle."""
    grid = np.geomspace(0.1, 8.0, 40) if eps_grid is None else np.asarray(eps_grid, dtype=np.float64)
    k, _, n, loss = _checked(k, float(grid[0]), n, loss)
    p = parse_prior(prior, k)
    out: dict[str, list[float]] = {"eps": [float(e) for e in grid]}
    for name in candidates():
        vals = []
        for e in grid:
            try:
                vals.append(_score(name, catalog.build(name, k=k, eps=float(e)), p, n)[loss])
            except LdpSimError:
                vals.append(math.nan)
        out[name] = vals
    return pd.DataFrame(out)


#: Losses within this relative distance count as tied (local hashing into two buckets and
#: Hadamard response, for example, have the same variance up to rounding).
TIE_RTOL = 1e-6


def boundaries(table: pd.DataFrame, k: int, n: float, prior: Any = None, loss: str = "mse") -> pd.DataFrame:
    """The regime boundaries on the grid of :func:`curves`: where the best oracle changes
    (ties within ``TIE_RTOL`` go to the earlier catalog entry), and where randomized
    response and optimised unary encoding swap places; each crossing eps found by bisection
    on the exact losses (to 1e-9 relative). Columns ``better_below``, ``better_above``,
    ``eps``, ``kind`` (``best`` or ``pair``)."""
    k, _, n, loss = _checked(k, float(table["eps"].iloc[0]), n, loss)
    p = parse_prior(prior, k)
    names = [c for c in table.columns if c != "eps"]
    eps = table["eps"].to_numpy()

    def value(name: str, e: float) -> float:
        return _score(name, catalog.build(name, k=k, eps=e), p, n)[loss]

    def crossing(a: str, b: str, lo: float, hi: float) -> float:
        below = value(a, lo) < value(b, lo)
        for _ in range(80):
            mid = math.sqrt(lo * hi)
            if (value(a, mid) < value(b, mid)) == below:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-9 * hi:
                break
        return math.sqrt(lo * hi)

    def leader(j: int) -> str | None:
        vals = {c: float(table[c].iloc[j]) for c in names if np.isfinite(table[c].iloc[j])}
        if not vals:
            return None
        best = min(vals.values())
        return next(c for c in names if c in vals and vals[c] <= best * (1 + TIE_RTOL))

    rows = []
    leaders = [leader(j) for j in range(len(eps))]
    for j in range(len(eps) - 1):
        a, b = leaders[j], leaders[j + 1]
        if a is not None and b is not None and a != b:
            rows.append(
                {
                    "better_below": a,
                    "better_above": b,
                    "eps": crossing(a, b, float(eps[j]), float(eps[j + 1])),
                    "kind": "best",
                }
            )
    if "randomized_response" in names and "oue" in names:
        d = table["randomized_response"].to_numpy() - table["oue"].to_numpy()
        for j in range(len(eps) - 1):
            if np.isfinite(d[j]) and np.isfinite(d[j + 1]) and np.sign(d[j]) != np.sign(d[j + 1]) and d[j] != 0:
                below, above = ("randomized_response", "oue") if d[j] < 0 else ("oue", "randomized_response")
                rows.append(
                    {
                        "better_below": below,
                        "better_above": above,
                        "eps": crossing(below, above, float(eps[j]), float(eps[j + 1])),
                        "kind": "pair",
                    }
                )
    out = pd.DataFrame(rows, columns=["better_below", "better_above", "eps", "kind"])
    return out.sort_values("eps", kind="stable").reset_index(drop=True)
