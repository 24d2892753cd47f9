"""One round of a session: what running the workload once returned, and the record of it the analysis reads."""

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RoundOutcome:
    """What one round of a workload yields (Pilot §III: a reading per performance index, and
    optionally many unit readings, one per work unit).

    Attributes
    ----------
    duration : float
        Wall-clock seconds the round took.
    readings : mapping of str to float
        One reading per metric name.
    unit_readings : mapping of str to sequence of float
        Per metric, the readings of the individual work units in time order (may be empty).
    """

    duration: float
    readings: Mapping[str, float]
    unit_readings: Mapping[str, list[float]] = field(default_factory=dict)


Workload = Callable[[float], RoundOutcome]
"""What a session runs: ``workload(work_amount)`` does one round of that much work and returns its outcome
(:mod:`runner.workloads`)."""


@dataclass(frozen=True)
class RoundRecord:
    """One round as persisted: the lead stores it as a row before the next round starts.

    Attributes
    ----------
    index : int
        0-based position in the session (over all workloads).
    workload : str
    work_amount : float
    outcome : RoundOutcome
    analysed : bool
        False for rounds too short to analyse (see :func:`work_amount_plan`): stored, never analysed.
    """

    index: int
    workload: str
    work_amount: float
    outcome: RoundOutcome
    analysed: bool


def check_outcome(outcome, workload, metrics):
    if not isinstance(outcome, RoundOutcome):
        raise TypeError(f"Workload {workload!r} returned {type(outcome).__name__}, not RoundOutcome.")
    if not (math.isfinite(outcome.duration) and outcome.duration >= 0.0):
        raise ValueError(f"Workload {workload!r} returned the duration {outcome.duration!r}.")
    missing = [spec.name for spec in metrics if spec.name not in outcome.readings]
    if missing:
        raise ValueError(f"Workload {workload!r} returned no reading for {', '.join(missing)}.")


def check_record(record, names, metrics):
    if record.workload not in names:
        raise ValueError(f"Stored round {record.index} belongs to the unknown workload {record.workload!r}.")
    check_outcome(record.outcome, record.workload, metrics)
    return record
