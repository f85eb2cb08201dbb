"""A survey's sampling design in a simulation: ``[population] weight``, ``strata`` and
``psu``, columns of the table of respondents.

Each row of the table is a respondent of a real (or realistic) design sample: a final
weight, a stratum and a primary sampling unit (PSU). The engine carries each respondent's
row beside their reports, and for every question a :class:`DesignAccumulator` keeps, per
PSU, the sums a weighted estimate needs (:mod:`ldpsim.analyst.survey_design`):

- ``W_c``: the respondents' weights;
- ``U_c``: their weighted unbiased contributions ``w_i u_i`` (the question kind's
  per-report term of its linear estimates, :meth:`Question.design_units`), from the reports;
- ``X_c``: their weighted true values ``w_i x_i``, what the same estimate would be without
  privacy (:meth:`Question.design_truth`): the truth beside the estimate;
- ``N_c``: ``w_i^2 Var(u_i | x_i)``, the exact privacy noise of each contribution given the
  respondent's answer (:meth:`Question.design_noise`).

At a checkpoint, for every estimate of the question: the Hajek estimate from the reports,
its linearised variance from the reports (what an analyst in the field computes: the design
variance and the privacy noise together), and its two parts as the simulation knows them:
the design variance (the same estimator on the true values) and the privacy noise's exact
variance ``sum_i w_i^2 Var(u_i | x_i) / W^2``. The interval uses the analyst's own
variance; the sum of the two parts is its theory. The same, by stratum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldpsim.analyst.estimation import z_value
from ldpsim.analyst.survey_design import hajek, kish_size, privacy_variance, psu_layout
from ldpsim.errors import LdpSimError


@dataclass(frozen=True)
class SurveyDesign:
    """The design of the table's rows: each row's weight and PSU index, each PSU's stratum,
    the strata's labels, and the columns they were read from."""

    weight: NDArray[np.float64]
    cell: NDArray[np.int64]
    stratum_of: NDArray[np.int64]
    strata: tuple[str, ...]
    columns: dict[str, str | None]

    @property
    def cells(self) -> int:
        return int(self.stratum_of.size)

    def summary(self) -> dict[str, Any]:
        """For metadata.json and the report's set-up."""
        return {
            **{k: v for k, v in self.columns.items()},
            "strata": len(self.strata),
            "psus": self.cells,
            "total_weight": float(math.fsum(self.weight.tolist())),
            "kish_size": kish_size(self.weight),
        }


def build_design(table: Any, weight: str | None, strata: str | None, psu: str | None) -> SurveyDesign:
    """The design from the table's columns (one line naming the key, the row and the value
    otherwise): weights positive finite numbers (1 each without ``weight``), strata and PSUs
    any labels (one stratum without ``strata``; each respondent its own PSU without ``psu``),
    at least two PSUs in every stratum."""
    rows = table.rows
    if weight is not None:
        raw = _column(table, weight, "weight")
        values = np.full(rows, np.nan)
        for r, text in enumerate(raw):
            try:
                values[r] = float(text)
            except ValueError:
                pass
        bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
        if bad.size:
            r = int(bad[0])
            raise LdpSimError(
                f"population.weight: {table.where(r, weight)}: got {raw[r]!r}, expected a positive finite number"
            )
    else:
        values = np.ones(rows)
    h_labels = _column(table, strata, "strata") if strata is not None else ("",) * rows
    p_labels = _column(table, psu, "psu") if psu is not None else tuple(str(r) for r in range(rows))
    for key, name, labels in (("strata", strata, h_labels), ("psu", psu, p_labels)):
        if name is not None and "" in labels:
            r = labels.index("")
            raise LdpSimError(f"population.{key}: {table.where(r, name)}: got a blank value, expected a label")
    cell, stratum_of, count = psu_layout(np.asarray(h_labels), np.asarray(p_labels))
    per = np.bincount(stratum_of, minlength=count)
    names = sorted(set(h_labels))
    if rows and (per < 2).any():
        lone = names[int(np.flatnonzero(per < 2)[0])]
        raise LdpSimError(
            f"population.psu: got a single PSU in stratum {lone!r}, expected at least two PSUs in every "
            "stratum (the design variance compares a stratum's PSUs)"
        )
    values.setflags(write=False)
    return SurveyDesign(values, cell, stratum_of, tuple(names), {"weight": weight, "strata": strata, "psu": psu})


def _column(table: Any, name: str, key: str) -> tuple[str, ...]:
    try:
        return tuple(table.column(name))
    except LdpSimError as exc:
        raise LdpSimError(f"population.{key}: {exc}") from None


def _row(
    quantity: str,
    category: str,
    estimate: float = np.nan,
    ci_low: float = np.nan,
    ci_high: float = np.nan,
    truth: float = np.nan,
    theory: float = np.nan,
) -> dict[str, Any]:
    """One result row of a design task (what is not given is blank)."""
    return dict(
        quantity=quantity,
        category=category,
        estimate=estimate,
        ci_low=ci_low,
        ci_high=ci_high,
        truth=truth,
        theory=theory,
    )


class DesignAccumulator:
    """One question's design sums per PSU (see the module's docstring), and its rows."""

    def __init__(self, name: str, design: SurveyDesign, question: Any, mechanism: Any, confidence: float) -> None:
        self.name = f"{name}:design"
        self.design = design
        self.question = question
        self.mechanism = mechanism
        self.labels = list(question.design_labels(mechanism))
        #: ratios of two of the estimates (label, numerator, denominator): a key's mean value
        self.ratios = list(question.design_ratios(mechanism))
        m, c = len(self.labels), design.cells
        self.weights = np.zeros(c)
        self.units = np.zeros((c, m))
        self.truth = np.zeros((c, m))
        self.noise = np.zeros((c, m))
        self.covariance = np.zeros((c, len(self.ratios)))  # w^2 Cov(numerator, denominator | x)
        self.z = z_value(confidence)

    def add(self, rows: NDArray[np.int64], reports: NDArray[Any]) -> None:
        """Respondents of table rows ``rows`` heard, with their reports to the question."""
        if not len(rows):
            return
        w = self.design.weight[rows]
        cell = self.design.cell[rows]
        np.add.at(self.weights, cell, w)
        np.add.at(self.units, cell, w[:, None] * self.question.design_units(self.mechanism, reports))
        np.add.at(self.truth, cell, w[:, None] * self.question.design_truth(rows))
        np.add.at(self.noise, cell, (w * w)[:, None] * self.question.design_noise(self.mechanism, rows))
        if self.ratios:
            cov = self.question.design_noise_covariance(self.mechanism, rows)
            np.add.at(self.covariance, cell, (w * w)[:, None] * cov)

    def at_checkpoint(self) -> list[dict[str, Any]]:
        d = self.design
        out: list[dict[str, Any]] = []
        everyone = np.ones(d.cells, dtype=bool)
        domains = [("", everyone)] + [(label, d.stratum_of == h) for h, label in enumerate(d.strata)]
        if len(d.strata) == 1:
            domains = domains[:1]
        for stratum, inside in domains:
            w = np.where(inside, self.weights, 0.0)
            field = hajek(self.units * inside[:, None], w, d.stratum_of, len(d.strata))
            true = hajek(self.truth * inside[:, None], w, d.stratum_of, len(d.strata))
            noise = privacy_variance(self.noise[inside].sum(axis=0), field.weight)
            prefix = "" if not stratum else "stratum_"
            parts = [
                (label, field.estimate[j], field.variance[j], true.estimate[j], true.variance[j], noise[j])
                for j, label in enumerate(self.labels)
            ]
            for label, num, den in self.ratios:
                r_field, r_true, r_noise = self._ratio(num, den, inside, noise)
                parts.append(
                    (label, r_field.estimate[0], r_field.variance[0], r_true.estimate[0], r_true.variance[0], r_noise)
                )

            def theory(variance: float, heard: bool = field.weight > 0) -> float:
                return math.sqrt(variance) if heard else np.nan

            for label, est, var, truth, design_var, noise_var in parts:
                category = label if not stratum else f"{label} | {stratum}"
                se = math.sqrt(var) if var >= 0 else math.nan
                out.append(
                    _row(f"{prefix}weighted", category, est, est - self.z * se, est + self.z * se, truth)
                    | {"method": "hajek/linearised"}
                )
                out.append(_row(f"{prefix}weighted_se", category, se, theory=theory(design_var + noise_var)))
                if not stratum:
                    out.append(_row("design_se", category, theory=theory(design_var)))
                    out.append(_row("privacy_se", category, theory=theory(noise_var)))
        return out

    def _ratio(
        self, num: int, den: int, inside: NDArray[np.bool_], noise: NDArray[np.float64]
    ) -> tuple[Any, Any, float]:
        """A ratio of two estimates in a domain: from the reports and from the truth, each
        linearised (the denominator's totals in place of the weights), and the privacy
        noise's variance by the delta method at the truth: ``(V_nn - 2 r V_nd + r^2 V_dd) /
        t_d^2`` with the exact variances and covariance of the two Hajek estimates."""
        d = self.design
        field = hajek(self.units[:, num] * inside, self.units[:, den] * inside, d.stratum_of, len(d.strata))
        true = hajek(self.truth[:, num] * inside, self.truth[:, den] * inside, d.stratum_of, len(d.strata))
        weight = float(self.weights[inside].sum())
        t_den = float(self.truth[inside, den].sum()) / weight if weight > 0 else math.nan
        r = true.estimate[0]
        k = [i for i, (_, a, b) in enumerate(self.ratios) if (a, b) == (num, den)][0]
        cov = privacy_variance(np.array([self.covariance[inside, k].sum()]), weight)[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            var = (noise[num] - 2 * r * cov + r * r * noise[den]) / (t_den * t_den)
        return field, true, float(var)

    @staticmethod
    def rows_per_checkpoint(labels: int, strata: int) -> int:
        return 4 * labels + (2 * labels * strata if strata > 1 else 0)
