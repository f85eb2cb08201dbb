"""Several questions per respondent in a survey scenario (``[[questions]]`` and ``[budget]``).

A survey file with a list ``[[questions]]`` asks every respondent several questions
instead of the one of ``[population]`` and ``[mechanism]``. Each question has a ``name``,
its answers (a column of the population's table, or labels and a true law of its own; a
numeric question, ``type = "numeric"`` with a ``range``, reads a column of numbers), and
a catalog mechanism (``mechanism = { kind = ... }``: a finite one, or for a numeric
question one tagged ``numeric``) whose eps comes from the respondent's privacy budget
``[budget] total = E, strategy = ...``:

- ``split``: every respondent answers every question; question j uses ``eps_j``, either
  as each question states it (``eps``; the stated values must sum to ``total``) or
  ``total / Q`` each when no question states one. Per-respondent privacy: the sum of the
  eps_j (basic composition is exact for pure eps, the answers of one respondent being any
  tuple); with (eps, delta) mechanisms, the exact (optimal) composition's delta at that sum.
- ``one_random``: every respondent answers one question, chosen uniformly from their own
  random stream, with the whole budget ``total``; the server learns which question was
  answered. Per-respondent privacy: eps = total, and delta = the mean of the questions'
  deltas at that eps (the choice does not depend on the answers, so the hockey-stick
  divergence of the mixture is the mean of the questions', each at its worst pair).

The built :class:`QuestionSet` also carries, for the design, the mechanisms of both
strategies, the exact per-respondent privacy of each, and the exact variance of every
estimate under each (at n respondents for ``split``, at the expected n / Q for
``one_random``; for a numeric question, of the mean of its reports).

Aggregate mode (categorical questions whose mechanisms have an exact aggregate law): the
respondents are counted by *type*, a distinct row of the table (the answers to all the
questions), or, without a table, all alike (the questions' answers are then drawn at
delivery from their independent laws); see :mod:`ldpsim.sim.engine`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import product_mechanism
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.finite import FiniteMechanism
from ldpsim.privacy.composition import optimal_delta_heterogeneous
from ldpsim.sim.design import SurveyDesign, build_design
from ldpsim.sim.question_kinds import STRATEGIES, BuildContext, Question, question_kind
from ldpsim.sim.scenario.survey_specs import QuestionsScenarioSpec
from ldpsim.sim.table import Table, TablePopulation, read_scenario_table


@dataclass(frozen=True)
class Crosstab:
    """A built cross-tabulation: the two questions (indices), the product of their
    mechanisms (inputs: answer pairs, row-major) and the true joint table (``ka x kb``: the
    table's joint distribution of the two columns, or the product of the two laws)."""

    name: str  # the task's name in results.csv: "rows x columns:crosstab"
    first: int
    second: int
    mechanism: FrequencyOracle
    truth: NDArray[np.float64]
    alpha: float

    @property
    def shape(self) -> tuple[int, int]:
        return self.truth.shape


@dataclass(frozen=True)
class PairedCrosstab:
    """A cross-tabulation beyond the finite path (``[analyst] crosstabs[index]``): two
    questions whose kinds give each report an unbiased term, tested for independence on the
    pairs of terms (no joint table)."""

    name: str  # "rows x columns:crosstab"
    first: int
    second: int
    alpha: float
    index: int  # the entry of analyst.crosstabs


@dataclass(frozen=True)
class GroupTest:
    """``[analyst] homogeneity``: a question against the groups of a table column (the
    column's distinct values, in order; each table row's group)."""

    name: str  # "question by column:homogeneity"
    question: int
    column: str
    labels: tuple[str, ...]
    group: NDArray[np.int64]
    alpha: float


@dataclass(frozen=True)
class QuestionSet:
    """The questions of a scenario, the budget, and the exact accounting of both strategies."""

    questions: tuple[Question, ...]
    strategy: str
    total: float
    size: int  # respondents
    table: TablePopulation | None  # the first question's column (the table's file, for the run's copy)
    rows: int | None  # table rows (kept), when answers come from a table
    resample: bool
    eps: dict[str, list[float]]  # strategy -> each question's eps (as its mechanism was built)
    privacy: pd.DataFrame  # per strategy: eps and delta per respondent
    variance: pd.DataFrame  # per question and answer: the exact variance under each strategy
    crosstabs: tuple[Crosstab, ...] = ()  # [analyst] crosstabs (split only)
    #: aggregate mode with a table: each distinct row's answer codes (types x questions),
    #: each table row's type, and the types' shares of the rows
    type_codes: NDArray[np.int64] | None = None
    row_type: NDArray[np.int64] | None = None
    type_prior: NDArray[np.float64] | None = None
    #: ``[budget] strategy = "optimal"``: per question its weight, eps and exact variance
    #: under the equal split and at the optimum (:func:`optimal_budget`); None otherwise
    plan: pd.DataFrame | None = None
    #: ``[population] weight``, ``strata``, ``psu``: the design of the table's rows
    design: SurveyDesign | None = None
    #: ``[analyst] crosstabs`` tested on paired unbiased terms (pairs beyond the finite path)
    paired: tuple[PairedCrosstab, ...] = ()
    #: ``[analyst] homogeneity``: questions tested across the groups of a table column
    homogeneity: tuple[GroupTest, ...] = ()

    @property
    def types(self) -> int:
        """Groups of respondents aggregate mode counts: the table's distinct rows, else 1."""
        return 1 if self.type_codes is None else int(self.type_codes.shape[0])

    def type_counts(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Aggregate mode: respondents ``first .. first + size - 1`` counted by type (their
        rows as they are, or a multinomial over the distinct rows when resampling; all alike
        without a table)."""
        if self.type_codes is None:
            return np.array([size], dtype=np.int64)
        if self.resample:
            return rng.multinomial(size, self.type_prior)  # type: ignore[arg-type]
        return np.bincount(self.row_type[first : first + size], minlength=self.types).astype(np.int64)  # type: ignore[index]

    @property
    def count(self) -> int:
        return len(self.questions)

    def mechanism(self, j: int) -> FrequencyOracle:
        """Question j's mechanism in this run (at the scenario's strategy)."""
        return self.questions[j].mechanisms[self.strategy]

    def expected_reports(self) -> int:
        """Reports each question expects: every respondent (split), n / Q (one_random)."""
        return self.size if self.strategy == "split" else max(1, math.ceil(self.size / self.count))

    def row_indices(self, first: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """The table rows of respondents ``first .. first + size - 1``: as they are, or drawn
        uniformly with replacement (one row per respondent for all questions)."""
        if self.resample:
            return rng.integers(0, self.rows, size=size)
        return np.arange(first, first + size, dtype=np.int64)

    def summary(self) -> dict[str, Any]:
        """For metadata.json: the budget, each strategy's exact privacy, the questions."""
        return {
            "strategy": self.strategy,
            "total_eps": self.total,
            "per_respondent": {
                row["strategy"]: {"eps": row["eps"], "delta": row["delta"]} for row in self.privacy.to_dict("records")
            },
            "questions": [
                {
                    "name": q.name,
                    "column": q.column,
                    "answers": q.answers_summary(),
                    "mechanism": repr(self.mechanism(j)),
                    "eps": float(self.privacy_eps(j)),
                }
                for j, q in enumerate(self.questions)
            ],
            **({"crosstabs": [c.name for c in self.crosstabs]} if self.crosstabs else {}),
            **({"paired_crosstabs": [c.name for c in self.paired]} if self.paired else {}),
            **({"homogeneity": [h.name for h in self.homogeneity]} if self.homogeneity else {}),
        }

    def privacy_eps(self, j: int) -> float:
        """Question j's exact eps in this run."""
        q = self.questions[j]
        return _eps_of(q.mechanisms[self.strategy], q.delta, self.eps[self.strategy][j])


def _eps_of(mech: FrequencyOracle, delta: float, stated: float) -> float:
    """A mechanism's exact eps: its own at delta 0 when pure, the stated one when it has a
    delta (the catalog's (eps, delta) mechanism is the worst case of its parameters)."""
    return float(mech.epsilon(0.0)) if delta == 0 else float(stated)


def respondent_privacy(eps: list[float], deltas: list[float], strategy: str) -> tuple[float, float]:
    """Exact per-respondent (eps, delta) of questions with parameters (eps_j, delta_j):

    - ``split``: eps = sum eps_j; delta = 0 when every delta_j = 0 (basic composition is
      exact for pure eps), else the optimal composition's delta at that eps
      (:func:`ldpsim.privacy.composition.optimal_delta_heterogeneous`, which is
      1 - prod(1 - delta_j) there);
    - ``one_random``: eps = max eps_j; delta = the mean of the questions' deltas at it.
    """
    if strategy == "split":
        total = math.fsum(eps)
        if not any(deltas):
            return total, 0.0

        return total, float(optimal_delta_heterogeneous(eps, deltas, total))
    # in this design every question runs at the whole budget, so the eps_j are equal
    return max(eps), math.fsum(deltas) / len(deltas)


def build_questions(spec: QuestionsScenarioSpec, where: str) -> QuestionSet:
    """Validate the questions against the population and the budget, and build them."""
    if spec.mechanism is not None or spec.mechanisms is not None:
        key = "mechanism" if spec.mechanism is not None else "mechanisms"
        raise LdpSimError(
            f"{key}: got a [{key}] table, expected none with [[questions]] (each question names its mechanism)"
        )
    pop = spec.population
    names = [q.name for q in spec.questions]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise LdpSimError(f"questions[{i}].name: got {name!r}, expected a name no other question has")
    eps_of = _question_eps(spec)
    table = _read_table(spec, where) if pop.file is not None else None
    resample = pop.size is not None
    built: list[Question] = []
    first_column: TablePopulation | None = None
    size = pop.size if pop.size is not None else table.rows  # type: ignore[union-attr]
    plan = None
    if spec.budget.strategy == "optimal":
        plan = optimal_budget(spec, table, resample, eps_of, size)
        eps_of["split"] = list(plan["eps_optimal"])
    ctx = BuildContext(spec, table, resample, eps_of)
    for i, q in enumerate(spec.questions):
        cls = question_kind(q.question_kind, f"questions[{i}].{q.kind_key}")
        question, record = cls.build(ctx, q, i)
        built.append(question)
        first_column = first_column or record
    if spec.analyst.reweight and all(q.loss is None for q in built):
        raise LdpSimError(
            "analyst.reweight: got true, expected some question with loss = { by_answer = {...} } "
            "(reweighting corrects answer-dependent item non-response)"
        )
    privacy, variance = _accounting(built, eps_of, size)
    crosstabs, paired = _crosstabs(spec, built)
    groups = _homogeneity(spec, built, table)
    design = _design(spec, table, built) if pop.designed else None
    types: tuple[Any, ...] = (None, None, None)
    if spec.simulation.mode == "aggregate":
        _check_aggregate(spec, built, crosstabs, paired)
        if table is not None:
            types = _types(built)
    return QuestionSet(
        tuple(built),
        spec.budget.runs_as,
        spec.budget.total,
        size,
        first_column,
        table.rows if table is not None else None,
        resample,
        eps_of,
        privacy,
        variance,
        crosstabs,
        type_codes=types[0],
        row_type=types[1],
        type_prior=types[2],
        plan=plan,
        design=design,
        paired=paired,
        homogeneity=groups,
    )


def _design(spec: QuestionsScenarioSpec, table: Table | None, built: list[Question]) -> SurveyDesign:
    """The design of the table's rows, and the checks that every question can be estimated
    under it (individual mode: each respondent's weight travels with their reports)."""
    pop = spec.population
    key = next(k for k in ("weight", "strata", "psu") if getattr(pop, k) is not None)
    if spec.simulation.mode != "individual":
        raise LdpSimError(
            f"simulation.mode: got {spec.simulation.mode!r} with population.{key}, expected 'individual' "
            "(each respondent's weight, stratum and PSU travel beside their reports)"
        )
    for i, q in enumerate(built):
        problem = q.design_problem(q.mechanisms[spec.budget.runs_as])
        if problem is not None:
            raise LdpSimError(
                f"questions[{i}]: got a question without estimates under population.{key}, expected one whose "
                f"estimates are linear in its reports ({problem})"
            )
    return build_design(table, pop.weight, pop.strata, pop.psu)


def question_variance(spec: QuestionsScenarioSpec, ctx: BuildContext, i: int, size: int) -> float:
    """The sum of the exact variances of question ``i``'s estimates (its rows of the budget
    table) when every respondent answers it at ``ctx.eps_of["split"][i]``."""
    q = spec.questions[i]
    question, _ = question_kind(q.question_kind, f"questions[{i}].{q.kind_key}").build(ctx, q, i)
    return float(sum(row["var_split"] for row in question.variance_rows(size, len(spec.questions))))


def optimal_budget(
    spec: QuestionsScenarioSpec, table: Table | None, resample: bool, eps_of: dict[str, list[float]], size: int
) -> pd.DataFrame:
    """``[budget] strategy = "optimal"``: the split of ``total`` over the questions that
    minimises ``sum_j w_j V_j(eps_j)``, ``V_j`` question j's summed exact variance at
    ``size`` respondents and ``w_j`` its weight (``budget.weights``, default ``1 / V_j(total)``:
    each question's variance relative to its variance with the whole budget). Every ``V_j``
    decreases in its eps; the minimum is found by SLSQP over the simplex of eps (in log
    coordinates, from the equal split), each value exact. One row per question: its weight,
    eps and variance under the equal split and at the optimum."""
    from scipy.optimize import minimize

    b = spec.budget
    count = len(spec.questions)
    names = [q.name for q in spec.questions]
    for name in b.weights or {}:
        if name not in names:
            raise LdpSimError(f"budget.weights: got {name!r}, expected the name of a question ({', '.join(names)})")
    cache: dict[tuple[int, float], float] = {}

    def variance(j: int, eps: float) -> float:
        key = (j, round(eps, 12))
        if key not in cache:
            trial = {
                "split": [eps if i == j else eps_of["split"][i] for i in range(count)],
                "one_random": eps_of["one_random"],
            }
            cache[key] = question_variance(spec, BuildContext(spec, table, resample, trial), j, size)
        return cache[key]

    whole = [variance(j, b.total) for j in range(count)]
    weights = [float((b.weights or {}).get(n, 1.0 / w if w > 0 else 1.0)) for n, w in zip(names, whole)]
    equal = [b.total / count] * count
    if count == 1:
        best = equal
    else:

        def objective(z: Any) -> float:
            eps = np.exp(z)
            eps = eps / eps.sum() * b.total
            return math.fsum(w * variance(j, float(e)) for j, (w, e) in enumerate(zip(weights, eps)))

        start = np.log(np.array(equal))
        found = minimize(
            objective, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 400 * count}
        )
        eps = np.exp(found.x)
        best = list(eps / eps.sum() * b.total)
        if objective(found.x) > objective(start):  # never worse than the equal split
            best = equal
    rows = [
        {
            "question": n,
            "weight": w,
            "eps_equal": e0,
            "var_equal": variance(j, e0),
            "eps_optimal": e1,
            "var_optimal": variance(j, e1),
        }
        for j, (n, w, e0, e1) in enumerate(zip(names, weights, equal, best))
    ]
    return pd.DataFrame(rows)


def with_optimal_plan(spec: QuestionsScenarioSpec, qs: QuestionSet, where: str) -> QuestionSet:
    """The questions as ``[budget] strategy = "optimal"`` builds them (``qs`` itself when it
    is), for ``ldpsim recommend --survey``: the strategies side by side without a run."""
    if qs.plan is not None:
        return qs
    budget = spec.budget.model_copy(update={"strategy": "optimal"})
    questions = [q.model_copy(update={"eps": None}) for q in spec.questions]
    return build_questions(spec.model_copy(update={"budget": budget, "questions": questions}), where)


def _check_aggregate(
    spec: QuestionsScenarioSpec,
    built: list[Question],
    crosstabs: tuple[Crosstab, ...],
    paired: tuple[PairedCrosstab, ...] = (),
) -> None:
    """Aggregate mode: categorical questions whose mechanisms have an exact aggregate law,
    each in at most one cross-tabulation of the finite path (one line naming the key
    otherwise)."""
    for i, q in enumerate(built):
        if not q.aggregate:
            key = spec.questions[i].kind_key
            raise LdpSimError(
                f"questions[{i}].{key}: got {q.kind!r} in aggregate mode, expected simulation.mode = "
                f"'individual' for {q.kind} questions ({q.aggregate_problem(None)})"
            )
        problem = q.aggregate_problem(q.mechanisms[spec.budget.runs_as])
        if problem is not None:
            raise LdpSimError(
                f"questions[{i}].mechanism.kind: got {spec.questions[i].mechanism.get('kind')!r} in aggregate "
                f"mode ({problem}), expected simulation.mode = 'individual'"
            )
    for pt in paired:
        raise LdpSimError(
            f"analyst.crosstabs[{pt.index}]: got {built[pt.first].name!r} x {built[pt.second].name!r} in "
            "aggregate mode, expected simulation.mode = 'individual' (outside two categorical or ordinal "
            "questions with finite mechanisms, the test needs each respondent's pair of reports)"
        )
    seen: dict[int, int] = {}
    for c, xt in enumerate(crosstabs):
        for key, j in (("rows", xt.first), ("columns", xt.second)):
            if j in seen:
                raise LdpSimError(
                    f"analyst.crosstabs[{c}].{key}: got {built[j].name!r}, already in analyst.crosstabs"
                    f"[{seen[j]}], expected each question in one cross-tabulation in aggregate mode"
                )
            seen[j] = c


def _types(built: list[Question]) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """The table's distinct rows (answer codes of all questions), each row's type and the
    types' shares of the rows."""
    codes = np.stack([q.codes for q in built], axis=1)  # type: ignore[misc]
    type_codes, row_type = np.unique(codes, axis=0, return_inverse=True)
    type_codes = type_codes.astype(np.int64)
    row_type = np.asarray(row_type, dtype=np.int64).ravel()
    prior = np.bincount(row_type, minlength=type_codes.shape[0]) / row_type.size
    for a in (type_codes, row_type, prior):
        a.setflags(write=False)
    return type_codes, row_type, prior


def _crosstabs(
    spec: QuestionsScenarioSpec, built: list[Question]
) -> tuple[tuple[Crosstab, ...], tuple[PairedCrosstab, ...]]:
    """``[analyst] crosstabs``, under ``split``: two categorical or ordinal questions with
    finite mechanisms each go through their product mechanism (built here: the analyst never
    builds mechanisms) with their true joint table; any other pair of questions whose kinds
    give each report an unbiased term (:meth:`Question.design_units`) is tested on the pairs
    of terms."""
    entries = spec.analyst.crosstabs
    if entries and spec.budget.runs_as != "split":
        raise LdpSimError(
            f"analyst.crosstabs: got {len(entries)} cross-tabulation(s) with budget.strategy = "
            f"{spec.budget.strategy!r}, expected budget.strategy = 'split' (under one_random nobody "
            "answers two questions)"
        )
    names = [q.name for q in built]
    out: list[Crosstab] = []
    paired: list[PairedCrosstab] = []
    for i, entry in enumerate(entries):
        at = f"analyst.crosstabs[{i}]"
        index = []
        for key in ("rows", "columns"):
            name = getattr(entry, key)
            if name not in names:
                raise LdpSimError(f"{at}.{key}: got {name!r}, expected the name of a question ({', '.join(names)})")
            j = names.index(name)
            q = built[j]
            if q.loss is not None:
                raise LdpSimError(
                    f"{at}.{key}: got {name!r}, a question with a loss by answer, expected a question "
                    "without item non-response (not yet cross-tabulated)"
                )
            index.append(j)
        a, b = index
        if a == b:
            raise LdpSimError(f"{at}.columns: got {entry.columns!r}, expected a question other than rows")
        qa, qb = built[a], built[b]
        if f"{qa.name} x {qb.name}:crosstab" in [x.name for x in out] + [x.name for x in paired]:
            raise LdpSimError(f"{at}: got {qa.name!r} x {qb.name!r} twice, expected each cross-tabulation once")
        finite = [q.crosstabs and isinstance(q.mechanisms["split"], FiniteMechanism) for q in (qa, qb)]
        if not all(finite):
            for key, j in (("rows", a), ("columns", b)):
                problem = built[j].design_problem(built[j].mechanisms["split"])
                if problem is not None:
                    raise LdpSimError(
                        f"{at}.{key}: got {built[j].name!r}, a {built[j].kind} question without an unbiased "
                        f"term per report ({problem}), expected a question whose reports have one, or two "
                        "categorical questions with finite mechanisms"
                    )
            paired.append(PairedCrosstab(f"{qa.name} x {qb.name}:crosstab", a, b, entry.alpha, i))
            continue
        try:
            # both finite (checked above)
            first, second = cast(FiniteMechanism, qa.mechanisms["split"]), cast(FiniteMechanism, qb.mechanisms["split"])
            mech = product_mechanism(first, second)
        except LdpSimError as exc:
            raise LdpSimError(f"{at}: {exc}") from None
        if qa.codes is not None and qb.codes is not None:  # the table's joint distribution
            joint = np.bincount(qa.codes * qb.k + qb.codes, minlength=qa.k * qb.k).astype(np.float64)
            truth = (joint / joint.sum()).reshape(qa.k, qb.k)
        else:  # answers drawn from each question's own law: independent
            truth = np.outer(qa.prior, qb.prior)
        truth.setflags(write=False)
        out.append(Crosstab(f"{qa.name} x {qb.name}:crosstab", a, b, mech, truth, entry.alpha))
    return tuple(out), tuple(paired)


def _homogeneity(spec: QuestionsScenarioSpec, built: list[Question], table: Table | None) -> tuple[GroupTest, ...]:
    """``[analyst] homogeneity``: each entry's question (one whose reports have an unbiased
    term each) and the groups of its ``by`` column of the table (individual mode: each
    respondent's row travels beside their reports)."""
    names = [q.name for q in built]
    out: list[GroupTest] = []
    for i, entry in enumerate(spec.analyst.homogeneity):
        at = f"analyst.homogeneity[{i}]"
        if entry.question not in names:
            raise LdpSimError(
                f"{at}.question: got {entry.question!r}, expected the name of a question ({', '.join(names)})"
            )
        j = names.index(entry.question)
        q = built[j]
        problem = q.design_problem(q.mechanisms[spec.budget.runs_as])
        if problem is not None:
            raise LdpSimError(
                f"{at}.question: got {q.name!r}, a {q.kind} question without an unbiased term per report "
                f"({problem}), expected a question whose reports have one"
            )
        if table is None:
            raise LdpSimError(
                f"{at}.by: got {entry.by!r} without population.file, expected a column of the population's "
                "table (the groups are the table's respondents)"
            )
        if spec.simulation.mode != "individual":
            raise LdpSimError(
                f"{at}: got {spec.simulation.mode!r} mode, expected simulation.mode = 'individual' (each "
                "respondent's group travels beside their reports)"
            )
        try:
            values = np.asarray(table.column(entry.by), dtype=object)
        except LdpSimError as exc:
            raise LdpSimError(f"{at}.by: {exc}") from None
        labels, group = np.unique(values.astype(str), return_inverse=True)
        if labels.size < 2:
            raise LdpSimError(
                f"{at}.by: got {entry.by!r}, a column with the single value {str(labels[0])!r}, expected a "
                "column with at least two groups"
            )
        name = f"{q.name} by {entry.by}:homogeneity"
        if name in [h.name for h in out]:
            raise LdpSimError(f"{at}: got {q.name!r} by {entry.by!r} twice, expected each test once")
        group = np.asarray(group, dtype=np.int64).ravel()
        group.setflags(write=False)
        shown = tuple("(blank)" if lab == "" else str(lab) for lab in labels)
        out.append(GroupTest(name, j, entry.by, shown, group, entry.alpha))
    return tuple(out)


def _question_eps(spec: QuestionsScenarioSpec) -> dict[str, list[float]]:
    """Each question's eps under each strategy (the scenario's, and the other for comparison)."""
    b = spec.budget
    qs = spec.questions
    stated = [q.eps for q in qs]
    if b.strategy in ("one_random", "optimal"):
        why = {
            "one_random": "each respondent answers one question with the whole budget.total",
            "optimal": "the eps of each question is the solution",
        }[b.strategy]
        for i, e in enumerate(stated):
            if e is not None:
                raise LdpSimError(
                    f"questions[{i}].eps: got {e!r}, expected no eps with budget.strategy = {b.strategy!r} ({why})"
                )
    if all(e is None for e in stated):
        split = [b.total / len(qs)] * len(qs)
    else:
        missing = [i for i, e in enumerate(stated) if e is None]
        if missing:
            raise LdpSimError(
                f"questions[{missing[0]}].eps: got nothing, expected an eps for every question or for none "
                "(none: budget.total is divided equally)"
            )
        split = [float(e) for e in stated]  # type: ignore[arg-type]
        if abs(math.fsum(split) - b.total) > 1e-9 * b.total:
            raise LdpSimError(
                f"budget.total: got {b.total!r}, expected the sum of the questions' eps ({math.fsum(split)!r}) "
                "with budget.strategy = 'split'"
            )
    return {"split": split, "one_random": [b.total] * len(qs)}


def _read_table(spec: QuestionsScenarioSpec, where: str) -> Table:
    pop = spec.population
    table = read_scenario_table(pop.file, where)  # type: ignore[arg-type]
    columns = []
    for i, q in enumerate(spec.questions):
        try:
            columns.append(table.column(q.column or q.name))
        except LdpSimError as exc:
            raise LdpSimError(f"questions[{i}].{'column' if q.column else 'name'}: {exc}") from None
    if pop.missing == "drop":  # rows blank in any question's column are left out of all
        keep = [r for r in range(table.rows) if all(c[r] != "" for c in columns)]
        if len(keep) < table.rows:
            table = dataclasses.replace(
                table,
                columns=tuple(tuple(c[r] for r in keep) for c in table.columns),
                lines=tuple(table.lines[r] for r in keep),
            )
    return table


def _accounting(
    questions: list[Question], eps_of: dict[str, list[float]], size: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both strategies' exact per-respondent privacy, and the exact variance of every
    estimate under each (split: n respondents; one_random: n / Q, the expected number)."""
    count = len(questions)
    rows = []
    for s in STRATEGIES:
        eps = [_eps_of(q.mechanisms[s], q.delta, e) for q, e in zip(questions, eps_of[s])]
        total, delta = respondent_privacy(eps, [q.delta for q in questions], s)
        rows.append({"strategy": s, "eps": total, "delta": delta, "question_eps": ", ".join(f"{e:.6g}" for e in eps)})
    privacy = pd.DataFrame(rows)
    var_rows = [row for q in questions for row in q.variance_rows(size, count)]
    return privacy, pd.DataFrame(var_rows)
