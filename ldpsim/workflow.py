"""Working from Python and notebooks: build a scenario, run it, load a run back.

:class:`Scenario` is a thin facade over the built scenarios of every kind (survey,
multi-party, collection): read from a file or from text, with values of ``[simulation]``
replaced, and run through :func:`ldpsim.sim.run_scenario`, so a run started here writes
exactly the run directory ``ldpsim run`` writes. :func:`load_run` opens any finished run
directory as a :class:`Run`: the results as a data frame (read by the study's own
``read_results``, so labels stay text and empty cells NaN), the scenario as run, the
metadata, the report's files, the summary tables of the report modules and the run's main
figure drawn onto a matplotlib ``Axes``.

Nothing here computes a result of its own: tables and figures take their numbers from
:mod:`ldpsim.report`, runs go through :mod:`ldpsim.runs`. The guide is docs/python.md.
"""

from __future__ import annotations

import difflib
import hashlib
import sys
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ldpsim.errors import LdpSimError, show

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["Run", "Scenario", "load_run"]

#: Files of a run directory that are not report files (the run's own record).
_RECORD = ("results.csv", "metadata.json", "scenario.toml")


def _studies() -> ModuleType:
    """:mod:`ldpsim.sim.studies`, imported on first use. The report modules it brings in
    select matplotlib's Agg backend (files without a screen); a backend the user chose
    before (a notebook's inline backend, ``MPLBACKEND``) is put back, so figures drawn
    with :meth:`Run.plot` show where the user expects them."""
    loaded = sys.modules.get("ldpsim.sim.studies")
    if loaded is not None and "ldpsim.report.figures" in sys.modules:
        return loaded
    import matplotlib

    chosen = getattr(matplotlib.rcParams, "_get_backend_or_none", lambda: None)()
    import ldpsim.report.figures  # noqa: F401 - the studies' figures: it selects Agg
    from ldpsim.sim import studies

    if isinstance(chosen, str) and chosen.lower() != "agg":
        try:
            matplotlib.use(chosen)
        except (ImportError, ValueError):  # pragma: no cover - the chosen backend cannot start here
            pass
    return studies


# ----------------------------------------------------------------------------- scenarios
class Scenario:
    """A scenario of any kind, ready to run.

    - ``Scenario.from_file(path)`` / ``Scenario.from_text(text, path)``: read and validate
      (every problem is one LdpSimError naming the file and the key);
    - :meth:`with_overrides`: a new Scenario with values of ``[simulation]`` replaced;
    - :meth:`run`: run it into a new run directory, as ``ldpsim run`` does; a :class:`Run`;
    - ``kind``, ``name``, ``spec`` (the validated file), ``built`` (the built scenario of
      :mod:`ldpsim.sim.scenario` that the run framework runs), ``path``, ``source``.
    """

    __slots__ = ("_built",)

    def __init__(self, built: Any) -> None:
        from ldpsim.sim.scenario import BuiltScenario

        if isinstance(built, Scenario):
            built = built.built
        if not isinstance(built, BuiltScenario):
            raise LdpSimError(
                f"scenario: got {show(built)}, expected a built scenario (ldpsim.sim.load_scenario) or "
                "Scenario.from_file / Scenario.from_text"
            )
        self._built = built

    @classmethod
    def from_file(cls, path: str | Path, *, allow_outside_data: bool = False) -> Scenario:
        """Read, validate and build a scenario file of any kind (its data files, such as a
        population table, are found next to it: in its folder or below, unless
        ``allow_outside_data``)."""
        from ldpsim.sim.scenario import load_scenario

        return cls(load_scenario(path, allow_outside_data=allow_outside_data))

    @classmethod
    def from_text(cls, text: str, path: str | Path = "<scenario>", *, allow_outside_data: bool = False) -> Scenario:
        """Validate and build scenario text of any kind. ``path`` names it in messages and
        is where it would live: data files it names are found next to it (in its folder or
        below, unless ``allow_outside_data``)."""
        from ldpsim.sim.scenario import parse_scenario

        if not isinstance(text, str):
            raise LdpSimError(f"text: got {show(text)}, expected the scenario's TOML text (str)")
        return cls(parse_scenario(text, str(path), allow_outside_data=allow_outside_data))

    # ----------------------------------------------------------------- what it is
    @property
    def built(self) -> Any:
        """The built scenario (:class:`ldpsim.sim.Scenario`, ``MultipartyScenario`` or
        ``CollectionScenario``)."""
        return self._built

    @property
    def kind(self) -> str:
        return str(self._built.kind)

    @property
    def name(self) -> str:
        return self._built.name

    @property
    def spec(self) -> Any:
        """The validated scenario file (a pydantic model; ``spec.simulation`` as overridden)."""
        return self._built.spec

    @property
    def path(self) -> str:
        """Where the scenario came from (the name used in messages)."""
        return str(self._built.path)

    @property
    def source(self) -> str:
        """The scenario's TOML text: what a run writes to ``scenario.toml``."""
        return str(self._built.source)

    def __repr__(self) -> str:
        sim = self.spec.simulation
        return (
            f"Scenario(kind={self.kind!r}, name={self.name!r}, replications={sim.replications}, "
            f"seed={sim.seed!r}, path={self.path!r})"
        )

    # ----------------------------------------------------------------- changing and running
    def with_overrides(self, **simulation: Any) -> Scenario:
        """A new Scenario with fields of ``[simulation]`` replaced, e.g. ``replications=3``,
        ``seed=5`` (and ``mode``, ``end``, ``alpha``, ... as the kind allows). A key the kind
        does not have or a value the file could not hold is one LdpSimError naming the key.

        As with :func:`ldpsim.sim.run_scenario` on an overridden scenario (and ``ldpsim run
        --seed/--replications``), the run writes the file's text to ``scenario.toml`` and
        records the values as run in ``metadata.json``."""
        from pydantic import ValidationError

        from ldpsim.sim.scenario.common import first_error

        if not simulation:
            return self
        current = self.spec.simulation
        model = type(current)
        fields = list(model.model_fields)
        for key in simulation:
            if key not in fields:
                close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise LdpSimError(
                    f"simulation.{key}: no such key{hint}; [simulation] of a {self.kind} scenario has "
                    f"{', '.join(fields)}"
                )
        try:
            checked = model.model_validate({**current.model_dump(), **simulation})
        except ValidationError as exc:
            raise LdpSimError(f"simulation.{first_error(exc, model=model)}") from None
        try:
            built = self._built.with_overrides(**{key: getattr(checked, key) for key in simulation})
        except LdpSimError as exc:
            raise LdpSimError(f"{self.path}: {' '.join(str(exc).split())}") from None
        return Scenario(built)

    def run(
        self,
        out: str | Path | None = None,
        *,
        seed: int | None = None,
        replications: int | None = None,
        workers: int = 1,
        progress: bool = False,
        executor: Any = None,
    ) -> Run:
        """Run the scenario into a new run directory (``out``; default
        ``reports/<name>/<UTC time>-seed<seed>``) through :func:`ldpsim.sim.run_scenario`,
        the function ``ldpsim run`` calls: the same files, seeds and report. ``seed`` and
        ``replications`` as ``--seed`` and ``--replications`` (default: the scenario's);
        ``workers`` > 1 or an ``executor`` run replications in parallel."""
        studies = _studies()
        options = studies.RunOptions(
            seed=seed, replications=replications, workers=workers, out=out, executor=executor, progress=progress
        )
        result = studies.run_scenario(self._built, options=options)
        run = Run(result.run_dir)
        run.__dict__["results"] = result.results  # already read by the study's read_results
        return run


# ----------------------------------------------------------------------------- runs
def load_run(run_dir: str | Path) -> Run:
    """Open a run directory made by ``ldpsim run`` (or :meth:`Scenario.run`) of any kind.
    A folder that is missing or not a run directory is one LdpSimError naming ``run_dir``."""
    return Run(run_dir)


class Run:
    """A run directory, opened for reading (:func:`load_run`).

    - ``dir``, ``kind``, ``name``, ``seed``, ``replications``, ``finished``;
    - ``metadata``: metadata.json as a dict;
    - ``results``: results.csv as a data frame, read by the study of the run's kind;
    - ``scenario``: the :class:`Scenario` as run, rebuilt from the run's scenario.toml (its
      data files found next to it, as resuming does) with the run's seed, replications and
      ``[simulation]`` values from metadata.json: ``run.scenario.run(out=...)`` runs it again
      to the same results;
    - ``summary`` (summary.md's text), ``files`` (the report files, name -> path);
    - :meth:`tables` (the report's summary tables), :meth:`plot` (the main figure).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        if not self.dir.is_dir():
            raise self._error("a run directory made by ldpsim run (no such folder)")
        from ldpsim.sim import kinds

        try:
            from ldpsim.runs import read_metadata

            meta = read_metadata(self.dir)  # bounded, a regular file (not a link to /dev/zero, say)
            kind = meta.get("kind", kinds.default())
            int(meta["seed"]), int(meta["replications"]), str(meta["scenario_sha256"])
            if not (self.dir / "scenario.toml").is_file():
                raise FileNotFoundError("scenario.toml")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise self._error("a run directory made by ldpsim run (with its metadata.json and scenario.toml)") from None
        known = kinds.kinds()  # run kinds, from the one registry
        if kind not in known:
            raise self._error(f"a run of a known kind ({', '.join(known)}), not {show(kind)}")
        self.metadata: dict[str, Any] = meta
        self.kind: str = kind

    def _error(self, expected: str) -> LdpSimError:
        return LdpSimError(f"run_dir: got {str(self.dir)!r}, expected {expected}")

    def __repr__(self) -> str:
        state = "" if self.finished else ", finished=False"
        return (
            f"Run({str(self.dir)!r}, kind={self.kind!r}, name={self.name!r}, seed={self.seed}, "
            f"replications={self.replications}{state})"
        )

    @property
    def name(self) -> str:
        return str(self.metadata.get("scenario", ""))

    @property
    def seed(self) -> int:
        return int(self.metadata["seed"])

    @property
    def replications(self) -> int:
        return int(self.metadata["replications"])

    @property
    def finished(self) -> bool:
        """Whether the run wrote its report (an interrupted run can be resumed with
        ``ldpsim run --resume DIR`` or :func:`ldpsim.sim.resume_run`)."""
        return "finished" in self.metadata

    def _require_finished(self) -> None:
        if not self.finished or not (self.dir / "results.csv").is_file():
            raise self._error(f"a finished run (resume it with: ldpsim run --resume {self.dir})")

    # ----------------------------------------------------------------- contents
    @cached_property
    def results(self) -> pd.DataFrame:
        """results.csv, every replication's rows in order, with the column types of the
        run's kind (the study's ``read_results``)."""
        self._require_finished()
        # read_results is a function of the file alone (the Study interface), so reading
        # does not rebuild the scenario; the study classes come through _studies(), since
        # their modules bring in the report (Agg) and the user's backend is kept there
        from ldpsim.sim import kinds

        _studies()
        study = kinds.study_class(self.kind)(None)
        return study.read_results(self.dir / "results.csv")

    @cached_property
    def scenario(self) -> Scenario:
        """The scenario as run (see the class)."""
        from ldpsim.sim.scenario import allow_long_runs, parse_scenario

        path = self.dir / "scenario.toml"
        try:
            source = path.read_text()
        except OSError:
            raise self._error("a run directory with a readable scenario.toml") from None
        if hashlib.sha256(source.encode()).hexdigest() != self.metadata["scenario_sha256"]:
            raise self._error("its scenario.toml unchanged since the run started")
        from ldpsim.runs import check_inputs, check_study_inputs

        bad = f"run_dir: got {str(self.dir)!r}, expected"
        check_inputs(self.dir, self.metadata, bad)  # the copies of its data files, as the run recorded them
        with allow_long_runs():  # the run exists: its estimated time was accepted when it started
            scenario = Scenario(parse_scenario(source, str(path)))
        check_study_inputs(_studies().study_of(scenario.built), self.metadata, bad)
        current = scenario.spec.simulation
        recorded = (
            self.metadata.get("spec", {}).get("simulation", {}) if isinstance(self.metadata.get("spec"), dict) else {}
        )
        fields = type(current).model_fields
        overrides = {k: v for k, v in recorded.items() if k in fields and getattr(current, k) != v}
        overrides.update(seed=self.seed, replications=self.replications)
        try:
            return scenario.with_overrides(**overrides)
        except LdpSimError as exc:
            raise self._error(f"metadata.json as the run wrote it ({exc})") from None

    @property
    def summary(self) -> str:
        """The text of summary.md (Markdown)."""
        self._require_finished()
        try:
            return (self.dir / "summary.md").read_text(encoding="utf-8")
        except OSError:
            raise self._error("a run directory with its summary.md") from None

    @property
    def files(self) -> dict[str, Path]:
        """The report files present (figures and summary.md), name -> path."""
        inputs = self.metadata.get("inputs")
        copies = {str(n).split("/")[0] for n in inputs} if isinstance(inputs, dict) else set()  # the data's copies
        return {
            p.name: p
            for p in sorted(self.dir.iterdir())
            if p.is_file() and p.name not in _RECORD and p.name not in copies and not p.name.startswith(".")
        }

    # ----------------------------------------------------------------- tables and figure
    @cached_property
    def study(self) -> Any:
        """The study of the run's kind over :attr:`scenario` (:mod:`ldpsim.study`): what
        differs by kind (tables, figure) is asked of it."""
        return _studies().study_of(self.scenario.built)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The summary tables of the run's report, by name, from the report modules (the
        study's ``tables``; its docstring names them, e.g. a survey's ``final``,
        ``error_by_n``, ``error_norms``, ``other_tasks``, ``engine``)."""
        return self.study.tables(self.results)

    def plot(
        self, ax: Axes | None = None, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> Axes:
        """Draw the run's main figure onto ``ax`` (a new figure when None) and return it: the
        study's ``plot`` (its docstring says what it draws: a survey's estimates over time, a
        multi-party run's accuracy per receiver, a study's accuracy against k, a collection's
        privacy spent per policy). ``replication``: the replication drawn, where the kind
        draws one (default the first); ``quantity``: what to draw, where the kind offers a
        choice; ``kw`` goes to the drawing call of the measured series (``lw``, ``alpha``, ...)."""
        _studies()  # the user's matplotlib backend is kept
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(8.5, 5))
        self.study.plot(ax, self.results, replication=replication, quantity=quantity, **kw)
        return ax
