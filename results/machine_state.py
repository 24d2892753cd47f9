"""Whether two runs were measured on a machine in the same state: its load, its CPU frequency governor and
its clock (pure; no Django).

A pull request's head and its base are two runs: a busier or differently clocked machine moves every series of
one of them (two pyperf runs of unchanged code at load 3.3 and 4.7 differed by +19.8%, spec §8, revision
2026-11-26). The run-to-run variance carried into the pull request's interval covers the ordinary spread of
nights; a difference of state beyond it is said beside the verdicts: on the pull request page, its comment
and Compare.

Where a run's environment says it: pyperf's ``load_avg_1min`` (the median of its runs', kept by the importer),
``cpu_count``, ``cpu_config`` (``governor:…``) and ``cpu_freq``; a bench worker's session records
``load_avg_1min``, ``cores``, ``cpu_governor`` and ``cpu_mhz`` (``runner.monitor.machine_state``), and the
cores other processes kept busy during its rounds, ``neighbour_cores``.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

LOAD_PER_CORE = 0.25
"""A difference of the 1-minute load average of this much per core or more is worth a warning: on 4 cores, one
more runnable process than the other run had (a compiler, a browser, another benchmark)."""
LOAD_WITHOUT_CORES = 1.0
"""The difference of load that is worth a warning where the number of cores is not known."""
NEIGHBOUR_CORES = 0.5
"""Other processes keeping this many cores busy on average through a round, besides the benchmark's own, is a
noisy neighbour worth a warning whatever the component under test: they take the cores, caches and memory
bandwidth the benchmark's numbers depend on (an idle machine's daemons use a few hundredths of a core). A bench
worker measures it each round (``runner.monitor``) and records the most of its rounds as ``neighbour_cores``."""
CLOCK_SHARE = 0.05
"""A CPU clock this much apart (relative) is worth a warning: frequency scales run time almost one for one."""

_GOVERNOR = re.compile(r"governor:\s*([A-Za-z_]{1,32})")
GOVERNOR_NAME = re.compile(r"[A-Za-z_]{1,32}")
"""A governor's name as the kernel spells them (performance, powersave, schedutil…): a posted run's environment
is the sender's, and these words reach the pull request's Markdown comment, so nothing else is taken."""
_MHZ = re.compile(r"(\d+(?:\.\d+)?)\s*MHz")


@dataclass(frozen=True)
class MachineState:
    """What a run's environment says of its machine's state; None where it says nothing."""

    load: float | None = None
    cores: int | None = None
    governor: str | None = None
    mhz: float | None = None
    neighbours: float | None = None


def machine_state(environment: Mapping | None) -> MachineState:
    """The state a run's ``environment`` records (see the module's list of keys); missing or malformed
    entries are None."""
    environment = environment if isinstance(environment, Mapping) else {}
    load = _number(environment.get("load_avg_1min"))
    cores = _number(environment.get("cores", environment.get("cpu_count")))
    governor = environment.get("cpu_governor")
    if not isinstance(governor, str) or not GOVERNOR_NAME.fullmatch(governor):
        found = _GOVERNOR.search(str(environment.get("cpu_config", "")))
        governor = found.group(1) if found else None
    mhz = _number(environment.get("cpu_mhz"))
    if mhz is None:
        found = _MHZ.search(str(environment.get("cpu_freq", "")))
        mhz = float(found.group(1)) if found else None
    return MachineState(load=load, cores=int(cores) if cores and cores >= 1 else None,
                        governor=governor or None, mhz=mhz if mhz and mhz > 0 else None,
                        neighbours=_number(environment.get("neighbour_cores")))


def neighbour_warning(environment: Mapping | None, name: str = "the run") -> str | None:
    """Said when other processes kept :data:`NEIGHBOUR_CORES` or more cores busy during a run's rounds."""
    neighbours = machine_state(environment).neighbours
    if neighbours is None or neighbours < NEIGHBOUR_CORES:
        return None
    return (f"other processes kept up to {neighbours:.1f} cores busy during {name}'s rounds (a noisy neighbour): "
            "its numbers include their load")


def environment_note(match: Mapping | None) -> str | None:
    """Said of a night whose machine environment was recognised among the machine's earlier nights
    (``Run.environment_match``, :mod:`results.environment`): which nights, and how far it moved the run."""
    runs = (match or {}).get("runs") or []
    if not runs:
        return None
    move = match.get("move")
    moved = f" by a median of {math.expm1(move):+.1%}" if isinstance(move, (int, float)) else ""
    named = ", ".join(f"#{run}" for run in runs)
    return (f"this night ran in a machine environment seen before (the nights of runs {named}): it moved the "
            f"run's series{moved}, each by its own amount, which is divided out before they are tested for a "
            "shift; the values shown are as measured")


def state_differences(base: Mapping | None, head: Mapping | None, *,
                      names: tuple[str, str] = ("the base", "the head")) -> list[str]:
    """What differed between the machine states of two runs (their environments) enough to move their
    numbers, each said in a phrase naming the runs by `names`; [] where nothing did, or nothing is known."""
    before, after = machine_state(base), machine_state(head)
    first, second = names
    said = []
    if before.load is not None and after.load is not None:
        cores = before.cores or after.cores
        limit = LOAD_PER_CORE * cores if cores else LOAD_WITHOUT_CORES
        if abs(after.load - before.load) >= limit:
            on = f" on {cores} cores" if cores else ""
            said.append(f"the machine's load differed: {before.load:g} for {first}, {after.load:g} for {second} "
                        f"(1-minute load average{on}); a busier machine slows every benchmark of its run")
    if before.governor and after.governor and before.governor != after.governor:
        said.append(f"the CPU frequency governor differed: {before.governor} for {first}, {after.governor} for "
                    f"{second}")
    if before.mhz and after.mhz and abs(after.mhz / before.mhz - 1.0) >= CLOCK_SHARE:
        said.append(f"the CPU clock differed: {before.mhz:g} MHz for {first}, {after.mhz:g} MHz for {second}")
    said += [warning for warning in (neighbour_warning(base, first), neighbour_warning(head, second)) if warning]
    return said


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None
