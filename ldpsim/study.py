"""The run-kind contract: what a *kind of run* is in ldpsim.

A **study** is one kind of run (a survey, a multi-party broadcast, a repeated collection, a
multi-party scaling study): a model run replication after replication, its results one
table, its report a function of that table. The run framework (:mod:`ldpsim.runs`) owns
everything that does not depend on the model (the run directory, seeds, workers,
executors, interruption, resume, merging, metadata); a study owns everything that does,
through the hooks below, so that no tool of the house (``ldpsim run``, ``ldpsim report``,
sweeps, :mod:`ldpsim.workflow`) asks what kind a run is. Studies are listed once, in the
registry :mod:`ldpsim.sim.kinds`.

``kind``
    The run kind, recorded in metadata.json; the registry's name for the study.
``parse(text, where)`` (a class method)
    The built scenario of scenario text: ``name``, ``kind``, ``spec`` (a pydantic model
    with ``spec.simulation.seed`` and ``.replications``), ``source``, ``path``,
    ``digest()``, ``with_overrides(**simulation)``. The registry's loader calls it for a
    file whose ``kind`` is the study's, and resuming calls it on the run's scenario.toml.
``columns``
    The columns of results.csv, in order.
``shared()``
    Computed once per run in the calling process and handed to every replication (exact
    values, privacy tables); default None.
``run_replication(index, seed, shared)``
    Replication ``index``'s rows as a data frame, drawn from
    ``SeedSequence(seed, spawn_key=(index,))`` only: the bytes do not depend on the
    workers or the executor.
``read_results(path)``
    results.csv read back with the kind's column types; a function of the file alone
    (``self.scenario`` may be None).
``render_report(results, seed)``
    The report files (name -> bytes) and anything the caller gets back besides (summary
    tables): the report is a function of results.csv and the scenario.
``tables(results)``
    The report's summary tables by name (:meth:`ldpsim.workflow.Run.tables`).
``plot(ax, results, *, replication=None, quantity=None, **kw)``
    The run's main figure drawn onto a matplotlib ``Axes`` (:meth:`ldpsim.workflow.Run.plot`);
    ``kw`` goes to the drawing call of the measured series.
``console(result)``
    The lines ``ldpsim run`` prints for a finished run (``result``: what :meth:`result`
    returned), each within 100 columns: the command line prints them and nothing of its own
    but the report's path.
``metadata()``, ``inputs()``, ``result(outcome)``
    Extra fields of metadata.json; input files the scenario reads besides its text (copied
    into the run and checked on resume); what :func:`ldpsim.sim.run_scenario`'s caller gets
    back (default: the :class:`ldpsim.runs.Outcome`).
``unshardable()``, ``shard_plan``, ``run_shard``, ``merge_shards``
    Optional: why a replication cannot be cut into shards (the default says it cannot),
    else its pieces, one piece's result and the replication's rows from all of them (the
    same bytes as ``run_replication``).

The required hooks are abstract (:data:`REQUIRED_HOOKS`): a kind missing one cannot be
instantiated, and the contract suite (tests/contract/test_studies.py) checks every
registered kind: the same results.csv with 1 and 2 workers and after an interrupted run is
resumed, ``read_results`` round trips, the report re-rendered from results.csv alone is the
same, and ``tables``, ``plot`` and ``console`` run.

A complete example, a kind of run that flips a biased coin (its scenario file says
``kind = "coin"``, a ``name``, ``p`` and ``flips``):

.. code-block:: python

    import dataclasses
    import numpy as np
    import pandas as pd
    from pydantic import BaseModel
    from ldpsim.sim import kinds, run_scenario
    from ldpsim.sim.scenario.common import BuiltScenario, SimulationSpec, read_toml
    from ldpsim.study import Study

    class CoinSpec(BaseModel):
        kind: str = "coin"
        name: str
        p: float = 0.5
        flips: int = 100
        simulation: SimulationSpec = SimulationSpec()

    @dataclasses.dataclass(frozen=True)
    class CoinScenario(BuiltScenario):
        kind = "coin"

        def rebuild(self, spec):
            return dataclasses.replace(self, spec=spec)

    class CoinStudy(Study):
        kind = "coin"
        columns = ("replication", "heads")

        @classmethod
        def parse(cls, text, where):
            return CoinScenario(CoinSpec(**read_toml(text, where)), text, where)

        def run_replication(self, index, seed, shared):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
            heads = rng.binomial(self.scenario.spec.flips, self.scenario.spec.p)
            return pd.DataFrame({"replication": [index], "heads": [heads]})

        def read_results(self, path):
            return pd.read_csv(path)

        def tables(self, results):
            return {"heads": results[["heads"]].describe()}

        def render_report(self, results, seed):
            return {"summary.md": f"mean heads {results['heads'].mean():g}\\n".encode()}, None

        def plot(self, ax, results, *, replication=None, quantity=None, **kw):
            ax.plot(results["replication"], results["heads"], "o", **kw)

        def console(self, result):
            return [f"{self.scenario.name}: mean heads {result.results['heads'].mean():g}"]

    kinds.register("coin", CoinStudy)
    run_scenario("coin.toml", out="coin-run")  # or ldpsim run coin.toml, resume, report...
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ldpsim.errors import LdpSimError, show

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["REQUIRED_HOOKS", "Study"]


class Study(ABC):
    """What a kind of run provides to the framework (the module's docstring describes every
    hook). Subclasses are plain picklable objects (they travel to worker processes); a
    subclass missing a required hook cannot be instantiated."""

    #: the run kind, recorded in metadata.json; the registry's name for it
    kind: str = ""
    #: the columns of results.csv, in order
    columns: tuple[str, ...] = ()

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario

    # ------------------------------------------------------------- the scenario
    @classmethod
    @abstractmethod
    def parse(cls, text: str, where: str) -> Any:
        """The built scenario of scenario text (``where`` names it in messages)."""

    @property
    def replications(self) -> int:
        return int(self.scenario.spec.simulation.replications)

    def with_replications(self, replications: int) -> "Study":
        return type(self)(self.scenario.with_overrides(replications=replications))

    def pick_replication(self, available: Any, replication: int | None) -> int:
        """The replication a figure draws: ``replication`` if it is one of ``available`` (the
        first of them when None); one line naming it otherwise. For :meth:`plot`."""
        reps = sorted(int(r) for r in set(available))
        if replication is None:
            return reps[0]
        if isinstance(replication, bool) or not isinstance(replication, int) or replication not in reps:
            raise LdpSimError(
                f"replication: got {show(replication)}, expected one of the run's replications "
                f"0..{self.replications - 1}"
            )
        return replication

    # ------------------------------------------------------------- running
    def shared(self) -> Any:
        """Computed once per run in the calling process and handed to every replication."""
        return None

    @abstractmethod
    def run_replication(self, index: int, seed: int, shared: Any) -> pd.DataFrame:
        """Replication ``index``'s rows (seeded by ``SeedSequence(seed, spawn_key=(index,))``)."""

    # ------------------------------------------------------------- results and report
    @abstractmethod
    def read_results(self, path: Path) -> pd.DataFrame:
        """results.csv read back with the kind's column types (a function of the file alone:
        ``self.scenario`` may be None)."""

    @abstractmethod
    def render_report(self, results: pd.DataFrame, seed: int) -> tuple[dict[str, bytes], Any]:
        """The report files (name -> bytes, written in this order) and anything the caller
        should get back (e.g. summary tables)."""

    @abstractmethod
    def tables(self, results: pd.DataFrame) -> dict[str, pd.DataFrame]:
        """The report's summary tables by name (:meth:`ldpsim.workflow.Run.tables`)."""

    @abstractmethod
    def plot(
        self, ax: Any, results: pd.DataFrame, *, replication: int | None = None, quantity: str | None = None, **kw: Any
    ) -> None:
        """Draw the run's main figure onto ``ax`` (:meth:`ldpsim.workflow.Run.plot`)."""

    @abstractmethod
    def console(self, result: Any) -> list[str]:
        """The lines ``ldpsim run`` prints for ``result`` (what :meth:`result` returned),
        each within 100 columns; the command line prints them, then the report's path."""

    def metadata(self) -> dict[str, Any]:
        """Extra fields for metadata.json."""
        return {}

    #: the scenario key that names the input files, for messages
    input_key: str = "inputs"

    def inputs(self) -> dict[str, bytes]:
        """Input files the scenario reads besides its text (path relative to the scenario
        file as :func:`input_name` gives it -> contents, e.g. a population table): the run
        keeps a copy of each next to its scenario.toml, so that resuming finds them as the
        scenario names them, and records their SHA-256 (metadata.json ``inputs``)."""
        return {}

    def input_digests(self) -> dict[str, str]:
        """SHA-256 of every input file the study has read (name -> hex digest; a file kept
        outside the run directory by its path as the scenario names it): compared on resume
        with what the run recorded (:meth:`recorded_inputs`)."""
        return {name: hashlib.sha256(data).hexdigest() for name, data in self.inputs().items()}

    def recorded_inputs(self, meta: dict[str, Any]) -> dict[str, str]:
        """The input files' SHA-256 as ``meta`` (metadata.json) records them."""
        recorded = meta.get("inputs")
        return dict(recorded) if isinstance(recorded, dict) else {}

    def result(self, outcome: Any) -> Any:
        """What :func:`run_study`'s callers get back for this kind of run (default: the
        :class:`ldpsim.runs.Outcome` itself)."""
        return outcome

    # shards: one replication cut into pieces of work, run apart and merged (optional)
    def unshardable(self) -> str | None:
        """Why this study's replications cannot be cut into shards (None when they can)."""
        return f"for a {self.kind} run (shards cut an individual-mode survey population)"

    def shard_plan(self, index: int, seed: int, shared: Any, shards: int) -> list[Any]:  # pragma: no cover
        """At most ``shards`` pieces of replication ``index`` (picklable descriptions)."""
        raise NotImplementedError

    def run_shard(self, index: int, seed: int, shared: Any, piece: Any) -> Any:  # pragma: no cover
        """One piece of replication ``index``; its result travels back to the parent."""
        raise NotImplementedError

    def merge_shards(self, index: int, seed: int, shared: Any, results: list[Any]) -> pd.DataFrame:  # pragma: no cover
        """Replication ``index``'s rows from its pieces' results, in plan order: the same
        rows as :meth:`run_replication`."""
        raise NotImplementedError


#: The hooks every kind must implement (the contract suite checks each registered kind).
REQUIRED_HOOKS = ("parse", "run_replication", "read_results", "render_report", "tables", "plot", "console")
