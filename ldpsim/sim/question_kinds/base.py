"""The contract of a question kind: one class for each ``[[questions]] kind = ...``.

A question kind is a subclass of :class:`Question` registered under its ``kind`` in
:mod:`ldpsim.sim.question_kinds`. An instance is one built question of a scenario. The
scenario loader (:func:`ldpsim.sim.scenario.questions.build_questions`) asks the registry
for the class a file names and calls :meth:`Question.build`; the SimPy model
(:mod:`ldpsim.sim.engine`), the budget tables and the report then ask the built question,
never its kind:

- how its true answers are drawn: :meth:`Question.answers` (the rows of a CSV table) or
  :meth:`Question.draw` (its synthetic law), in the form its mechanism takes;
- which catalog mechanisms it accepts: :attr:`Question.accepts` (words for the errors and
  the docs), checked in :meth:`Question.build`;
- the server's sufficient statistic: :meth:`Question.server`, and whether aggregate mode
  draws it exactly (:meth:`Question.aggregate_problem`, None when it does);
- its estimators: :meth:`Question.tasks`, analyst tasks whose rows go to results.csv,
  named ``"<question>:<task>"``;
- their exact variance at n respondents: :meth:`Question.variance_rows`, the budget table
  (each row: the estimate, its truth and its exact variance under both strategies);
- its truth (beside every estimate, in the tasks' ``truth`` column) and its line in the
  report's set-up (:meth:`Question.describe`);
- under a survey design (weights, strata, PSUs), each report's unbiased term, what it is
  unbiased for and its exact noise variance (:meth:`Question.design_units` and the two
  beside it), or why the kind has none (:meth:`Question.design_problem`).

Nothing outside the registry asks which kind a question is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ldpsim.sim.scenario.survey_specs import QuestionSpec, QuestionsScenarioSpec
    from ldpsim.sim.table import Table, TablePopulation
    from ldpsim.sim.tasks import Task

#: the budget strategies every question is built under (the scenario's, and the other one
#: for the comparison in the report)
STRATEGIES = ("split", "one_random")


@dataclass(frozen=True)
class BuildContext:
    """What building a question needs from its scenario: the file's sections, the table of
    answers (None: each question's own law), whether its rows are resampled, and each
    question's eps under each strategy."""

    spec: QuestionsScenarioSpec
    table: Table | None
    resample: bool
    eps_of: dict[str, list[float]]


@dataclass(frozen=True)
class Question(ABC):
    """One built question (see the module's docstring for the contract)."""

    name: str
    mechanisms: dict[str, Any]  # strategy -> the mechanism at that strategy's eps
    delta: float  # the mechanism's stated delta (0 for pure-eps mechanisms)
    column: str | None  # the table's column with the answers (None: a law of its own)

    #: the ``kind`` a scenario file names
    kind: ClassVar[str]
    #: which catalog mechanisms the kind accepts, in words
    accepts: ClassVar[str]
    #: whether the question can be one side of an ``[analyst] crosstabs`` entry through the
    #: product of two finite mechanisms (its joint table); any question with design units
    #: (:meth:`design_units`) can be one side of a test of independence on paired terms
    crosstabs: ClassVar[bool] = False
    #: whether aggregate mode can run the kind at all (then :meth:`aggregate_problem` says
    #: whether it can with a given mechanism)
    aggregate: ClassVar[bool] = False

    # What the single-question parts of a survey scenario read of its first question, the
    # budget table and the cross-tabulations: every kind has these (a kind without a finite
    # list of answers: no labels, k = 0, no codes, no loss by answer). Declared for the type
    # checker only, so that a kind may make them dataclass fields.
    if TYPE_CHECKING:

        @property
        def labels(self) -> list[str]:
            """The answers' labels (empty: no finite list of answers)."""

        @property
        def k(self) -> int:
            """The number of answers (0: no finite list)."""

        @property
        def prior(self) -> NDArray[np.float64]:
            """The truth of the first estimate: the answers' law (a numeric answer's mean)."""

        @property
        def codes(self) -> NDArray[np.int64] | None:
            """Each table row's answer code (None: no finite list, or no table)."""

        @property
        def loss(self) -> NDArray[np.float64] | None:
            """Each answer's probability that the question's report is left out (None: none)."""

    @classmethod
    @abstractmethod
    def build(cls, ctx: BuildContext, q: QuestionSpec, i: int) -> tuple[Question, TablePopulation | None]:
        """Validate ``questions[i]`` (one line naming the key otherwise) and build it; also
        the table's record for the run's copy of the table (None without a table)."""

    @abstractmethod
    def answers(self, rows: NDArray[np.int64]) -> NDArray[Any]:
        """The true answers of the table rows ``rows``, as the question's mechanism takes them."""

    @abstractmethod
    def draw(self, size: int, rng: np.random.Generator) -> NDArray[Any]:
        """``size`` true answers drawn from the question's own law (no table)."""

    @abstractmethod
    def server(self, mechanism: Any, keep_reports: bool, max_reports: int) -> Any:
        """A fresh server for the question's reports (its sufficient statistic)."""

    def privatize(self, mechanism: Any, answers: NDArray[Any], rng: np.random.Generator) -> NDArray[Any]:
        """The reports of respondents answering ``answers`` (from the stream that privatises
        the question's reports): the mechanism's, unless the kind's protocol says otherwise."""
        return mechanism.privatize(answers, rng)

    @property
    def two_groups(self) -> bool:
        """Whether the reports are those of the two-group protocol (rows ``(group, value)``:
        :func:`ldpsim.analyst.means.moment_reports`), which the joint mean-and-variance attacks send."""
        return False

    def attack_prior(self, strategy: str) -> NDArray[np.float64]:
        """What an attacker's strategy reads of the honest answers (``prior`` of
        :mod:`ldpsim.attacks`) under the budget ``strategy``: by default the question's law."""
        return self.prior

    def aggregate_problem(self, mechanism: Any) -> str | None:
        """Why aggregate mode cannot draw this question's statistic exactly with
        ``mechanism`` (None: it can); with ``mechanism=None``, why the kind cannot."""
        return "the statistic of its reports has no exact aggregate law here"

    @abstractmethod
    def tasks(self, name: str, mechanism: Any, spec: QuestionsScenarioSpec, expected_reports: int) -> list[Task]:
        """The analyst's tasks for this question, named ``"<name>:<task>"``."""

    @abstractmethod
    def variance_rows(self, size: int, count: int) -> list[dict[str, Any]]:
        """The exact variance of each unbiased estimate: rows with ``question``, ``category``,
        ``truth``, ``var_split`` (``size`` respondents) and ``var_one_random`` (``size /
        count``, the expected number under ``one_random``)."""

    @abstractmethod
    def describe(self) -> str:
        """What the question is, for the report's set-up: ``"4 answers"``, ``"numeric, ..."``."""

    @abstractmethod
    def answers_summary(self) -> Any:
        """The question's answers for metadata.json (a count, or a word)."""

    @abstractmethod
    def rows_per_checkpoint(self, spec: QuestionsScenarioSpec) -> int:
        """Result rows the question's tasks write at each checkpoint (bounds a run's size)."""

    # The survey design (``[population] weight``, ``strata``, ``psu``; :mod:`ldpsim.sim.design`):
    # a kind whose estimates are linear in its reports gives each report's unbiased term.
    def design_problem(self, mechanism: Any) -> str | None:
        """Why this question cannot be estimated under a design (None: it can)."""
        return f"a {self.kind} question has no design estimates"

    def design_labels(self, mechanism: Any) -> list[str]:
        """The names of the ``m`` estimates the design rows give (their ``category``)."""
        raise NotImplementedError

    def design_units(self, mechanism: Any, reports: NDArray[Any]) -> NDArray[np.float64]:
        """``(n, m)``: each report's unbiased term ``u_i`` (its mean over the respondents
        is the question's unbiased estimate)."""
        raise NotImplementedError

    def design_truth(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """``(n, m)``: what ``u_i`` is unbiased for, from each table row's true answer."""
        raise NotImplementedError

    def design_ranges(self, mechanism: Any) -> NDArray[np.float64]:
        """``(m,)``: a width that every report's term ``u_i`` lies within, entry by entry
        (``inf`` where there is none): the anytime-valid tests that bet on the terms
        (:mod:`ldpsim.analyst.betting`) need it."""
        raise NotImplementedError

    def design_noise(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """``(n, m)``: the exact ``Var(u_i | x_i)`` of each table row's report."""
        raise NotImplementedError

    def design_ratios(self, mechanism: Any) -> list[tuple[str, int, int]]:
        """Estimates that are ratios of two of the ``m`` (label, numerator, denominator)."""
        return []

    def design_noise_covariance(self, mechanism: Any, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """``(n, ratios)``: the exact covariance of each ratio's numerator and denominator
        terms given each table row's answer."""
        raise NotImplementedError


class WithoutAnswerList:
    """For a kind without a finite list of answers (numeric, multiselect, keyvalue): no
    labels, k = 0, no answer codes, no loss by answer (what the single-question parts of a
    survey scenario and the categorical-only features read)."""

    @property
    def labels(self) -> list[str]:
        return []

    @property
    def k(self) -> int:
        return 0

    @property
    def codes(self) -> Any:
        return None

    @property
    def loss(self) -> None:
        return None
