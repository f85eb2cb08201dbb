"""The simulation: scenario files of every kind, the SimPy models (survey: clients,
network, server and analyst; multi-party: the broadcast and its receivers) and their
studies, which the run framework (:mod:`ldpsim.runs`) runs.

``run_scenario``, ``resume_run`` and the result types are imported on first use (PEP 562):
they bring in the report, and so matplotlib.
"""

from ldpsim._lazy import lazy_exports
from ldpsim.sim import testing_tasks as _testing_tasks  # noqa: F401  (registers the hypothesis-testing tasks)
from ldpsim.sim.engine import run_replication
from ldpsim.sim.scenario import MultipartyScenario, Scenario, load_scenario, parse_scenario
from ldpsim.sim.tasks import Checkpoint, Task, TaskContext, register_task

__getattr__, __dir__ = lazy_exports(
    __name__,
    dict.fromkeys(("run_scenario", "resume_run", "RunResult", "MultipartyRun"), "ldpsim.sim.studies"),
)

__all__ = [
    "Checkpoint",
    "MultipartyRun",
    "MultipartyScenario",
    "RunResult",
    "Scenario",
    "Task",
    "TaskContext",
    "load_scenario",
    "parse_scenario",
    "register_task",
    "resume_run",
    "run_replication",
    "run_scenario",
]
