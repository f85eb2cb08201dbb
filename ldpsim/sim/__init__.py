"""The simulation: scenarios, the SimPy model of clients, network, server and analyst."""

from ldpsim.sim.engine import run_replication
from ldpsim.sim.scenario import Scenario, load_scenario, parse_scenario
from ldpsim.sim.tasks import Checkpoint, Task, TaskContext, register_task
from ldpsim.sim import testing_tasks as _testing_tasks  # noqa: F401  (registers the hypothesis-testing tasks)

__all__ = [
    "Checkpoint",
    "Scenario",
    "Task",
    "TaskContext",
    "load_scenario",
    "parse_scenario",
    "register_task",
    "run_replication",
]
