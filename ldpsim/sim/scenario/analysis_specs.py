"""The file of several questions that ``ldpsim analyse analysis.toml`` reads (``kind =
"analysis"``, docs/analyse.md): the reports file(s) and, per question, its column, the
catalog mechanism that made its reports, its labels, its level and optional groups and
weights columns. Strict pydantic models as every scenario section (unknown keys and wrong
types are one line naming the key); the mechanisms, labels and files are checked by
:func:`ldpsim.deploy.load_analysis` before anything is read, each message naming its key
(``questions[1].mechanism: got ..., expected ...``).

It is not a run kind (nothing is simulated): ``ldpsim analyse`` reads it, ``ldpsim run``
does not.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ldpsim.sim.scenario.common import Model, Seed

#: The file's kind: what ``ldpsim analyse`` recognises.
KIND = "analysis"
#: Largest number of questions of one file.
MAX_QUESTIONS = 100

Level = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
Text = Annotated[str, Field(min_length=1, max_length=1000)]
#: A question's name: it names its rows in estimates.csv and tests.csv, and its section.
Name = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\s,\"'`<>|]([^,\"'`<>|]*\S)?$")]


class AnalysisQuestionSpec(Model):
    """One question: its reports (``column`` of ``reports``, the file's ``reports`` by
    default), the catalog ``mechanism`` that made them (``NAME:k=v,...``; ``k`` may come
    from ``labels``), its level ``alpha`` (the file's by default), and optional ``groups``
    and ``weights`` columns of the same file."""

    name: Name
    mechanism: Text
    column: Text | None = None
    reports: Text | None = None
    labels: Annotated[list[Text], Field(min_length=1)] | None = None
    alpha: Level | None = None
    groups: Text | None = None
    weights: Text | None = None
    #: the anytime-valid uniformity test on every report in file order (an oracle whose
    #: statistic is not output counts; finite mechanisms have theirs from the counts anyway)
    sequential: bool = False


class AnalysisSpec(Model):
    """A file of several questions analysed in one go (module docstring). Distinct question
    names and a reports file for each are checked where the file is loaded
    (:func:`ldpsim.deploy.load_analysis`), so that the message names the question's key."""

    kind: Literal["analysis"]
    name: Name | None = None
    description: str = ""
    reports: Text | None = None
    alpha: Level = 0.05
    seed: Seed | None = None
    questions: Annotated[list[AnalysisQuestionSpec], Field(min_length=1, max_length=MAX_QUESTIONS)]
