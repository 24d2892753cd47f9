"""What one benchmark round runs (Pilot §III): built-in Python workloads and external commands.

Every workload is a callable ``workload(work_amount) -> RoundOutcome``. The work amount is Pilot's
(§III): how much work the round does, in the workload's own work units (thousands of integers sorted,
MiB hashed, records encoded, MiB written). The outcome holds the round's duration, one reading per
performance index and, where the work divides into homogeneous work units, one unit reading per unit.

- :mod:`.builtin`: the built-in workloads (:data:`BUILTIN_WORKLOADS`), inputs generated before the clock starts;
- :mod:`.command`: external commands run as argument lists in their own process group, with the
  ``json_lines`` protocol for readings.
"""

from runner.session import Workload

from .builtin import BUILTIN_WORKLOADS, BuiltinWorkload, builtin_workload
from .command import (
    WALL_TIME,
    CommandFailed,
    UnsafeArgument,
    WorkloadError,
    WorkloadTimeout,
    check_command,
    check_environment,
    command_workload,
    kill_process_group,
    parse_json_lines,
    setup_command,
)

__all__ = [
    "BUILTIN_WORKLOADS",
    "WALL_TIME",
    "BuiltinWorkload",
    "CommandFailed",
    "UnsafeArgument",
    "Workload",
    "WorkloadError",
    "WorkloadTimeout",
    "builtin_workload",
    "check_command",
    "check_environment",
    "command_workload",
    "kill_process_group",
    "parse_json_lines",
    "setup_command",
]
