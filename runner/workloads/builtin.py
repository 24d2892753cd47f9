"""Built-in Python workloads (Pilot §III).

:data:`BUILTIN_WORKLOADS` maps a name to a :class:`BuiltinWorkload`, which declares its metrics, its
work unit, a default valid work range, the component it stresses (for bottleneck detection, Pilot
§III-B) and its parameters. Inputs are generated from ``seed`` before the round's clock starts, so
every round of every session sees the same data and only the work itself is timed. A built-in's
reading is the round's aggregate over its units: for a time per unit, the mean unit time; for a
throughput, the units done over the time they took (which is not the mean of the unit throughputs).
"""

import hashlib
import json
import math
import operator
import os
import random
import string
import tempfile
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


from results.stats import Direction
from runner.session import MetricSpec, RoundOutcome, Workload


MIB = 1 << 20


SORT_BLOCK = 1000


# Distinct input blocks (sort) or records (json) a round cycles through: enough that the work is not
# one repeated input, few enough that building them costs nothing next to a round.
INPUT_POOL = 64


@dataclass(frozen=True)
class BuiltinWorkload:
    """A built-in workload: its declaration and a factory for its round callable.

    Attributes
    ----------
    name : str
    description : str
    metrics : tuple of MetricSpec
        What its readings and unit readings measure (the same metrics for both, per work unit), ready
        for :func:`runner.session.run_session`.
    work_unit : str
        One unit of work amount, e.g. ``"1 MiB hashed"``; unit readings are per work unit.
    work_range : tuple of float
        Default valid range ``(low, high)`` of the work amount (Pilot §III-A picks round work
        amounts inside it).
    component : str
        The component it is meant to stress, for bottleneck detection (Pilot §III-B).
    parameters : mapping of str to object
        Accepted parameters and their defaults.
    """

    name: str
    description: str
    metrics: tuple[MetricSpec, ...]
    work_unit: str
    work_range: tuple[float, float]
    component: str
    parameters: Mapping[str, object]
    factory: Callable[..., Workload] = field(repr=False, compare=False)

    def make(self, parameters: Mapping[str, object] | None = None) -> Workload:
        """Return the round callable for `parameters` merged over the defaults.

        Raises
        ------
        ValueError
            If a parameter is unknown or its value invalid.
        """
        given = dict(parameters or {})
        unknown = sorted(set(given) - set(self.parameters))
        if unknown:
            raise ValueError(
                f"Unknown parameter(s) for workload {self.name!r}: {', '.join(unknown)}; "
                f"accepted: {', '.join(sorted(self.parameters)) or 'none'}."
            )
        return self.factory(**{**self.parameters, **given})


def builtin_workload(name: str, parameters: Mapping[str, object] | None = None) -> Workload:
    """Return the round callable of the built-in workload `name` (see :data:`BUILTIN_WORKLOADS`)."""
    try:
        workload = BUILTIN_WORKLOADS[name]
    except KeyError:
        raise ValueError(
            f"`name` must be a built-in workload ({', '.join(sorted(BUILTIN_WORKLOADS))}); got {name!r}."
        ) from None
    return workload.make(parameters)


def _sort_workload(*, seed: int, slowdown: float) -> Workload:
    """Sort blocks of 1,000 random 32-bit integers; one block is one work unit.

    With ``slowdown`` s > 0 every block carries ``round(1000 s)`` extra integers, so each unit does
    genuinely more work (about s more, since sorting is n log n) while still counting as one unit: a
    real regression for the demo to find, not a sleep.
    """
    seed = _check_seed(seed)
    slowdown = _check_fraction(slowdown, "slowdown")
    extra = round(SORT_BLOCK * slowdown)
    base_rng = random.Random(seed)
    # A separate stream for the extra integers keeps the first 1,000 of each block identical to `sort`'s.
    extra_rng = random.Random(f"{seed}/slowdown")
    pool = [
        _random_integers(base_rng, SORT_BLOCK) + _random_integers(extra_rng, extra)
        for _ in range(INPUT_POOL)
    ]

    def sort_round(work_amount: float) -> RoundOutcome:
        units = _whole_units(work_amount)
        duration, times = _time_units(units, lambda index: sorted(pool[index % INPUT_POOL]))
        return RoundOutcome(
            duration=duration, readings={"time": duration / units}, unit_readings={"time": times}
        )

    return sort_round


def _sha256_workload(*, seed: int) -> Workload:
    """Feed one SHA-256 hash 1 MiB at a time; one MiB is one work unit."""
    chunk = random.Random(_check_seed(seed)).randbytes(MIB)

    def sha256_round(work_amount: float) -> RoundOutcome:
        units = _whole_units(work_amount)
        hasher = hashlib.sha256()
        duration, times = _time_units(units, lambda index: hasher.update(chunk))
        return RoundOutcome(
            duration=duration,
            readings={"throughput": units / duration},
            unit_readings={"throughput": [1.0 / seconds for seconds in times]},
        )

    return sha256_round


def _json_workload(*, seed: int) -> Workload:
    """Encode one record to JSON and decode it again; one record is one work unit."""
    rng = random.Random(_check_seed(seed))
    pool = [_random_record(rng, index) for index in range(INPUT_POOL)]

    def json_round(work_amount: float) -> RoundOutcome:
        units = _whole_units(work_amount)
        duration, times = _time_units(
            units, lambda index: json.loads(json.dumps(pool[index % INPUT_POOL]))
        )
        return RoundOutcome(
            duration=duration, readings={"time": duration / units}, unit_readings={"time": times}
        )

    return json_round


def _fsync_workload(*, seed: int, directory: str | os.PathLike | None) -> Workload:
    """Write 1 MiB to a fresh temporary file and fsync it; one MiB is one work unit.

    The data is random so that a compressing file system cannot shrink the work.
    """
    chunk = random.Random(_check_seed(seed)).randbytes(MIB)
    if directory is not None and not (isinstance(directory, str | os.PathLike) and os.path.isdir(directory)):
        raise ValueError(f"`directory` must be an existing directory; got {directory!r}.")

    def write_unit(fd: int) -> None:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)

    def fsync_round(work_amount: float) -> RoundOutcome:
        units = _whole_units(work_amount)
        fd, path = tempfile.mkstemp(prefix="pilot-fsync-", dir=directory)
        try:
            duration, times = _time_units(units, lambda index: write_unit(fd))
        finally:
            os.close(fd)
            os.unlink(path)
        return RoundOutcome(
            duration=duration,
            readings={"throughput": units / duration},
            unit_readings={"throughput": [1.0 / seconds for seconds in times]},
        )

    return fsync_round


def _time_units(count: int, unit: Callable[[int], object]) -> tuple[float, list[float]]:
    """Run ``unit(0) .. unit(count - 1)``; return the total seconds and the seconds of each unit.

    One clock read per unit boundary: the unit times add up to the total exactly.
    """
    times = []
    started = previous = time.perf_counter()
    for index in range(count):
        unit(index)
        now = time.perf_counter()
        times.append(now - previous)
        previous = now
    return previous - started, times


def _whole_units(work_amount: float) -> int:
    """The number of whole work units in `work_amount` (rounded: a work unit cannot be split)."""
    if isinstance(work_amount, bool) or not isinstance(work_amount, int | float):
        raise ValueError(f"`work_amount` must be a number; got {work_amount!r}.")
    if not math.isfinite(work_amount) or round(work_amount) < 1:
        raise ValueError(f"`work_amount` must be finite and at least 1 work unit; got {work_amount!r}.")
    return round(work_amount)


def _random_integers(rng: random.Random, count: int) -> list[int]:
    # Bytes converted in C: building the input costs a fraction of sorting it.
    integers = array("I")
    integers.frombytes(rng.randbytes(count * integers.itemsize))
    return integers.tolist()


def _random_record(rng: random.Random, index: int) -> dict:
    """A record shaped like a typical API payload; every record has the same shape (homogeneous units)."""
    return {
        "id": index,
        "name": "".join(rng.choices(string.ascii_letters, k=16)),
        "active": rng.random() < 0.5,
        "score": rng.random(),
        "tags": ["".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(4)],
        "values": [rng.uniform(-1e3, 1e3) for _ in range(8)],
        "owner": {"id": rng.getrandbits(31), "email": f"user{rng.getrandbits(20)}@example.org"},
    }


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool):
        raise ValueError(f"`seed` must be an integer; got {seed!r}.")
    try:
        return operator.index(seed)
    except TypeError:
        raise ValueError(f"`seed` must be an integer; got {seed!r}.") from None


def _check_fraction(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"`{name}` must be a number between 0 and 1; got {value!r}.")
    return float(value)


# Per work unit: seconds per block or record, MiB per second.
_TIME = MetricSpec("time", "s", Direction.LOWER_IS_BETTER)


_THROUGHPUT = MetricSpec("throughput", "MiB/s", Direction.HIGHER_IS_BETTER)


BUILTIN_WORKLOADS: Mapping[str, BuiltinWorkload] = MappingProxyType(
    {
        "sort": BuiltinWorkload(
            name="sort",
            description="Sort thousands of random integers, 1,000 at a time (CPU and memory bound).",
            metrics=(_TIME,),
            work_unit="1,000 integers sorted",
            work_range=(10.0, 1000.0),
            component="cpu",
            parameters=MappingProxyType({"seed": 0, "slowdown": 0.0}),
            factory=_sort_workload,
        ),
        "sort_slow": BuiltinWorkload(
            name="sort_slow",
            description=(
                "`sort` with a deliberate regression: every unit also sorts 8% extra integers, "
                "about 8% more real work per unit."
            ),
            metrics=(_TIME,),
            work_unit="1,000 integers sorted (plus the slowdown's extra integers)",
            work_range=(10.0, 1000.0),
            component="cpu",
            parameters=MappingProxyType({"seed": 0, "slowdown": 0.08}),
            factory=_sort_workload,
        ),
        "sha256": BuiltinWorkload(
            name="sha256",
            description="SHA-256 of random data, fed 1 MiB at a time (CPU bound).",
            metrics=(_THROUGHPUT,),
            work_unit="1 MiB hashed",
            work_range=(1.0, 512.0),
            component="cpu",
            parameters=MappingProxyType({"seed": 0}),
            factory=_sha256_workload,
        ),
        "json": BuiltinWorkload(
            name="json",
            description="Encode records to JSON and decode them again, one record at a time (CPU bound).",
            metrics=(_TIME,),
            work_unit="1 record encoded and decoded",
            work_range=(100.0, 20000.0),
            component="cpu",
            parameters=MappingProxyType({"seed": 0}),
            factory=_json_workload,
        ),
        "fsync": BuiltinWorkload(
            name="fsync",
            description="Write random data to a temporary file 1 MiB at a time, fsync after each (disk bound).",
            metrics=(_THROUGHPUT,),
            work_unit="1 MiB written and synced",
            work_range=(1.0, 256.0),
            component="disk",
            parameters=MappingProxyType({"seed": 0, "directory": None}),
            factory=_fsync_workload,
        ),
    }
)
