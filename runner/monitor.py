"""What the machine is (psutil, platform) and, during rounds, how busy it is (Pilot §III-B, §III-C)."""

import math
import platform
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from types import MappingProxyType
from typing import Self

import psutil

from results.machine_state import NEIGHBOUR_CORES
from results.stats import ConfidenceInterval, ratio_fieller
from runner.session import RoundOutcome


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo`` on Linux, where ``platform`` says only the architecture)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe_host() -> dict:
    """This machine's hardware and OS, as stored on :class:`results.models.Machine`."""
    frequency = psutil.cpu_freq()
    return {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": psutil.cpu_count(logical=True) or 1,
        "memory_bytes": psutil.virtual_memory().total,
        "os": f"{platform.system()} {platform.release()} ({platform.platform(terse=True)})",
        "hardware": {
            "physical_cores": psutil.cpu_count(logical=False),
            "architecture": platform.machine(),
            "cpu_max_mhz": frequency.max if frequency else None,
            "disks": [
                {"device": part.device, "mountpoint": part.mountpoint, "fstype": part.fstype}
                for part in psutil.disk_partitions(all=False)
            ][:8],
            "python": platform.python_version(),
        },
    }


GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def machine_state() -> dict:
    """The machine's state now, as a run's environment records it (``results.machine_state`` compares two
    runs'): the 1-minute load average, the cores, the CPU frequency governor where the kernel says it, and
    the current clock."""
    frequency = psutil.cpu_freq()
    try:
        governor = GOVERNOR.read_text().strip() or None
    except OSError:
        governor = None
    state = {"load_avg_1min": round(psutil.getloadavg()[0], 2), "cores": psutil.cpu_count(logical=True) or 1,
             "cpu_governor": governor, "cpu_mhz": round(frequency.current) if frequency else None}
    return {key: value for key, value in state.items() if value is not None}


# --- utilisation during rounds (Pilot §III-B) and the cost of watching it (Pilot §III-C) -----------

COMPONENTS = ("cpu", "memory", "disk", "network")
# Pilot §III-B: no component other than the one under test may be more than 80% utilised.
BOTTLENECK_THRESHOLD = 80.0
DEFAULT_INTERVAL = 0.1
NEIGHBOUR_WARNING = "other processes kept"
"""How a noisy neighbour's warning begins (the cores follow)."""


@dataclass(frozen=True)
class Sample:
    """How busy the machine was during one sampling interval.

    Attributes
    ----------
    duration : float
        Seconds the interval lasted.
    cpu_percent : tuple of float
        Busy share of each logical core, 0–100.
    memory_percent : float
        Share of memory in use at the end of the interval, 0–100.
    disk_busy_percent : float or None
        Busy time of the busiest disk as a share of the interval, 0–100; None where the platform
        reports no busy time (psutil has it on Linux and FreeBSD).
    disk_bytes_per_second : float
        Bytes read plus written, all disks.
    network_sent_per_second, network_received_per_second : float
        Bytes through the up, non-loopback interfaces.
    network_capacity : float or None
        Bytes per second each direction of those interfaces can carry; None if a link speed is unknown.
    """

    duration: float
    cpu_percent: tuple[float, ...]
    memory_percent: float
    disk_busy_percent: float | None
    disk_bytes_per_second: float
    network_sent_per_second: float
    network_received_per_second: float
    network_capacity: float | None = None


@dataclass(frozen=True)
class Usage:
    """One utilisation figure over a round.

    Attributes
    ----------
    component : str
        One of :data:`COMPONENTS`.
    label : str
        What was measured, as shown in warnings (``"disk busy"``).
    unit : str
        ``"%"`` for a utilisation (checked for bottlenecks) or ``"B/s"`` for a rate.
    mean : float
        Time-weighted mean over the samples.
    max : float
        Highest single sample.
    """

    component: str
    label: str
    unit: str
    mean: float
    max: float


@dataclass(frozen=True)
class MonitorSummary:
    """Utilisation of a round and the bottleneck warnings it raises (Pilot §III-B).

    Attributes
    ----------
    usage : mapping of str to Usage
        Keyed ``cpu`` (all cores), ``cpu_busiest_core``, ``memory``, ``disk`` (busy %),
        ``disk_throughput``, ``network_sent``, ``network_received`` and, where link speeds are known,
        ``network_sent_utilisation`` and ``network_received_utilisation``; a figure the platform cannot
        measure is absent.
    warnings : tuple of str
        One per component other than the one under test whose mean utilisation exceeded the threshold, and
        one when other processes kept :data:`NEIGHBOUR_CORES` or more busy.
    bottlenecks : tuple of str
        The components' warnings alone (a run states its noisy neighbour once, from ``neighbour_cores``).
    samples : int
        Number of samples summarised.
    duration : float
        Seconds the samples cover.
    neighbour_cores : float or None
        Cores other processes kept busy on average (all cores' busy time less the benchmark's own processes'
        CPU time, over the round's duration); None where the own CPU time was not measured.
    """

    usage: Mapping[str, Usage]
    warnings: tuple[str, ...]
    samples: int
    duration: float
    neighbour_cores: float | None = None
    bottlenecks: tuple[str, ...] = ()


def utilisation(samples: Sequence[Sample]) -> dict[str, Usage]:
    """Mean and peak of every utilisation figure over `samples` (see :attr:`MonitorSummary.usage`).

    Means are weighted by each sample's duration, so a short final sample counts for what it covers.
    The busiest-core figure takes the busiest core of each sample rather than of the whole round: the
    scheduler moves a saturating single thread between cores, which averages it away per core.
    """
    labels: dict[str, tuple[str, str, str]] = {}
    points: dict[str, list[tuple[float, float]]] = {}
    for sample in samples:
        for key, component, label, unit, value in _figures(sample):
            labels[key] = (component, label, unit)
            points.setdefault(key, []).append((sample.duration, value))
    usage = {}
    for key, series in points.items():
        total = math.fsum(duration for duration, _ in series)
        values = [value for _, value in series]
        mean = math.fsum(duration * value for duration, value in series) / total if total > 0 else fmean(values)
        component, label, unit = labels[key]
        usage[key] = Usage(component=component, label=label, unit=unit, mean=mean, max=max(values))
    return usage


def bottleneck_warnings(
    usage: Mapping[str, Usage], *, under_test: str | None, threshold: float = BOTTLENECK_THRESHOLD
) -> list[str]:
    """Warnings for components other than `under_test` utilised above `threshold` percent (Pilot §III-B).

    A component counts as utilised at its mean over the round (as ``iostat``'s %util does): a one-sample
    spike shows in :attr:`Usage.max` but does not invalidate the round. Rates (``B/s``) are not
    utilisations and are never flagged. With `under_test` None every saturated component is flagged.
    """
    under_test = _check_component(under_test)
    threshold = _check_threshold(threshold)
    suffix = f" while measuring {under_test}" if under_test else " (no component declared under test)"
    return [
        f"{figure.label} {figure.mean:.0f}% (above {threshold:g}%){suffix}"
        for figure in usage.values()
        if figure.unit == "%" and figure.component != under_test and figure.mean > threshold
    ]


def summarize(
    samples: Sequence[Sample], *, under_test: str | None, threshold: float = BOTTLENECK_THRESHOLD,
    own_cpu_seconds: float | None = None,
) -> MonitorSummary:
    """Utilisation figures and bottleneck warnings of a round's samples (pure; Pilot §III-B).

    With ``own_cpu_seconds``, the CPU time the benchmark's own processes used over the samples, the rest of
    the cores' busy time is the neighbours' (other processes): warned of from :data:`NEIGHBOUR_CORES` cores
    on, whatever the component under test, since the exemption of the component under test would hide
    them (both cores busy during a one-thread benchmark said nothing)."""
    usage = utilisation(samples)
    duration = math.fsum(sample.duration for sample in samples)
    bottlenecks = tuple(bottleneck_warnings(usage, under_test=under_test, threshold=threshold))
    warnings = list(bottlenecks)
    neighbours = None
    if own_cpu_seconds is not None and duration > 0:
        busy = math.fsum(sample.duration * math.fsum(sample.cpu_percent) / 100.0 for sample in samples)
        neighbours = max(busy - own_cpu_seconds, 0.0) / duration
        if neighbours >= NEIGHBOUR_CORES:
            cores = len(samples[0].cpu_percent)
            warnings.append(f"{NEIGHBOUR_WARNING} {neighbours:.1f} of {cores} cores busy (the benchmark's own "
                            f"{own_cpu_seconds / duration:.1f}): a noisy neighbour")
    return MonitorSummary(usage=MappingProxyType(usage), warnings=tuple(warnings), samples=len(samples),
                          duration=duration, neighbour_cores=neighbours, bottlenecks=bottlenecks)


class Monitor:
    """Samples the machine's utilisation in a background thread while a round runs (Pilot §III-B).

    Use once per round as a context manager; afterwards :attr:`summary` holds the figures and warnings::

        with Monitor(under_test="cpu") as monitor:
            outcome = workload(work_amount)
        monitor.summary.warnings

    Parameters
    ----------
    interval : float
        Seconds between samples. Shorter intervals catch shorter spikes but cost more (Pilot §III-B:
        the sampling may itself shift the bottleneck; measure it with :func:`measure_overhead`).
    under_test : {"cpu", "memory", "disk", "network"} or None
        The component the workload is meant to stress; it is exempt from the bottleneck check.
    threshold : float
        Utilisation in percent above which another component is reported.

    Notes
    -----
    Counters are read when the block starts, every `interval`, and once more when it ends unless less
    than half an interval is left (a sliver of time gives coarse CPU figures: the kernel counts CPU
    time in ticks). A round shorter than that still gets its one sample. An error while sampling is
    raised when the block exits.
    """

    def __init__(
        self,
        *,
        interval: float = DEFAULT_INTERVAL,
        under_test: str | None = None,
        threshold: float = BOTTLENECK_THRESHOLD,
    ):
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not (
            math.isfinite(interval) and interval > 0
        ):
            raise ValueError(f"`interval` must be a finite, positive number of seconds; got {interval!r}.")
        self.interval = float(interval)
        self.under_test = _check_component(under_test)
        self.threshold = _check_threshold(threshold)
        self._samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: Exception | None = None
        self._summary: MonitorSummary | None = None
        self._links: frozenset[str] = frozenset()
        self._capacity: float | None = None
        self._last: _Counters | None = None
        self._own_before = 0.0

    @property
    def samples(self) -> tuple[Sample, ...]:
        """The samples taken so far."""
        return tuple(self._samples)

    @property
    def summary(self) -> MonitorSummary:
        """Utilisation and bottleneck warnings of the round; available once the block has exited."""
        if self._summary is None:
            raise RuntimeError("The monitor has not finished: read `summary` after the `with` block.")
        return self._summary

    def __enter__(self) -> Self:
        if self._thread is not None:
            raise RuntimeError("A Monitor samples one round only; create a new one for each round.")
        self._links, self._capacity = _network_links()
        self._own_before = own_cpu_seconds()
        self._last = _read_counters(self._links)
        self._thread = threading.Thread(target=self._sample_until_stopped, name="pilot-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is None and (
            not self._samples or time.perf_counter() - self._last.time >= self.interval / 2
        ):
            self._take_sample()
        self._summary = summarize(self._samples, under_test=self.under_test, threshold=self.threshold,
                                  own_cpu_seconds=own_cpu_seconds() - self._own_before)
        if self._error is not None and exc_type is None:
            raise RuntimeError("Sampling the machine's utilisation failed.") from self._error

    def _sample_until_stopped(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self._take_sample()
        except Exception as error:  # noqa: BLE001 - re-raised by __exit__
            # An exception escaping a thread would only be printed; the round must not pass as monitored.
            self._error = error

    def _take_sample(self) -> None:
        current = _read_counters(self._links)
        self._samples.append(_sample_between(self._last, current, self._capacity))
        self._last = current


@dataclass(frozen=True)
class OverheadResult:
    """The cost of monitoring: round durations with it over without it (Pilot §III-C).

    Attributes
    ----------
    ratio : float
        ``mean(durations_on) / mean(durations_off)``; 1 means no measurable overhead.
    low, high : float
        Fieller confidence limits of the ratio; infinite when ``bounded`` is False.
    bounded : bool
        False when the durations without monitoring are too noisy for a finite interval.
    confidence_level : float
    durations_on, durations_off : tuple of float
        Round durations with and without monitoring, in the order they ran.
    """

    ratio: float
    low: float
    high: float
    bounded: bool
    confidence_level: float
    durations_on: tuple[float, ...]
    durations_off: tuple[float, ...]

    @property
    def overhead(self) -> float:
        """Relative slowdown caused by monitoring, ``ratio - 1`` (0.02 is 2%)."""
        return self.ratio - 1.0

    def confidence_interval(self) -> ConfidenceInterval:
        """Return ``ConfidenceInterval(low, high)`` at :attr:`confidence_level`."""
        return ConfidenceInterval(self.low, self.high)


def measure_overhead(
    workload: Callable[[float], RoundOutcome],
    work_amount: float,
    *,
    rounds: int,
    monitor_factory: Callable[[], AbstractContextManager],
    confidence: float = 0.95,
    warmup: int = 1,
) -> OverheadResult:
    """Run `workload` with and without monitoring and compare the round durations (Pilot §III-C).

    Rounds alternate in ABBA order (on, off, off, on, ...), so a slow drift of the machine weighs on
    both sides equally. The ratio's interval is Fieller's (:func:`results.stats.ratio_fieller`) on the
    two samples of durations, each round an independent unit.

    Parameters
    ----------
    workload : callable
        ``workload(work_amount) -> RoundOutcome``; its :attr:`RoundOutcome.duration` is compared.
    work_amount : float
        Work amount of every round.
    rounds : int
        Rounds with monitoring, and as many without; at least 2.
    monitor_factory : callable
        Returns a fresh context manager (e.g. ``lambda: Monitor(interval=0.05)``) entered around each
        monitored round.
    confidence : float
        Confidence level of the interval, in (0, 1).
    warmup : int
        Unmonitored rounds run first and discarded, so one-off costs (caches, first allocations)
        land on neither side.

    Returns
    -------
    OverheadResult
    """
    rounds = _check_count(rounds, "rounds", minimum=2)
    warmup = _check_count(warmup, "warmup", minimum=0)
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be strictly between 0 and 1; got {confidence!r}.")
    for _ in range(warmup):
        workload(work_amount)
    durations = {True: [], False: []}
    for index in range(rounds):
        for monitored in (True, False) if index % 2 == 0 else (False, True):
            if monitored:
                with monitor_factory():
                    outcome = workload(work_amount)
            else:
                outcome = workload(work_amount)
            durations[monitored].append(outcome.duration)
    result = ratio_fieller(durations[True], durations[False], confidence=confidence)
    return OverheadResult(
        ratio=float(result.ratio),
        low=float(result.low),
        high=float(result.high),
        bounded=bool(result.bounded),
        confidence_level=result.confidence_level,
        durations_on=tuple(durations[True]),
        durations_off=tuple(durations[False]),
    )


def _check_component(component: str | None) -> str | None:
    if component is not None and component not in COMPONENTS:
        raise ValueError(f"`under_test` must be one of {', '.join(COMPONENTS)} or None; got {component!r}.")
    return component


def _check_count(value: int, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer of at least {minimum}; got {value!r}.")
    return value


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 100:
        raise ValueError(f"`threshold` must be a percentage in (0, 100]; got {threshold!r}.")
    return float(threshold)


def _figures(sample: Sample) -> Iterator[tuple[str, str, str, str, float]]:
    """(key, component, label, unit, value) of every figure `sample` can give."""
    if sample.cpu_percent:
        yield "cpu", "cpu", "cpu (all cores)", "%", fmean(sample.cpu_percent)
        yield "cpu_busiest_core", "cpu", "busiest cpu core", "%", max(sample.cpu_percent)
    yield "memory", "memory", "memory used", "%", sample.memory_percent
    if sample.disk_busy_percent is not None:
        yield "disk", "disk", "disk busy", "%", sample.disk_busy_percent
    yield "disk_throughput", "disk", "disk read+write", "B/s", sample.disk_bytes_per_second
    yield "network_sent", "network", "network sent", "B/s", sample.network_sent_per_second
    yield "network_received", "network", "network received", "B/s", sample.network_received_per_second
    if sample.network_capacity:
        sent = 100.0 * sample.network_sent_per_second / sample.network_capacity
        received = 100.0 * sample.network_received_per_second / sample.network_capacity
        yield "network_sent_utilisation", "network", "network send link", "%", sent
        yield "network_received_utilisation", "network", "network receive link", "%", received


@dataclass(frozen=True)
class _Counters:
    """Cumulative kernel counters at one instant; a sample is the difference of two."""

    time: float
    cpu: tuple[tuple[float, float], ...]  # (busy seconds, total seconds) per core
    disk_busy: Mapping[str, float] | None  # milliseconds busy per disk
    disk_bytes: float
    network_sent: float
    network_received: float


def _network_links() -> tuple[frozenset[str], float | None]:
    """The up, non-loopback interfaces, and bytes per second per direction they carry (None if unknown)."""
    links = {
        name: stats
        for name, stats in psutil.net_if_stats().items()
        if stats.isup and name != "lo" and "loopback" not in getattr(stats, "flags", "").split(",")
    }
    speeds = [stats.speed for stats in links.values()]
    # psutil reports link speeds in Mbit/s, 0 when the driver does not say.
    capacity = sum(speeds) * 1e6 / 8 if speeds and all(speed > 0 for speed in speeds) else None
    return frozenset(links), capacity


def own_cpu_seconds() -> float:
    """CPU seconds this process and its children used so far: its own user and system time (every thread:
    a builtin workload, the sampling thread) and its waited-for children's (a command workload's processes)."""
    times = psutil.Process().cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def _read_counters(links: frozenset[str]) -> _Counters:
    per_disk = psutil.disk_io_counters(perdisk=True) or {}
    # The totals skip partitions on Linux, whose bytes would otherwise be counted twice.
    disks = psutil.disk_io_counters(perdisk=False)
    nics = psutil.net_io_counters(pernic=True)
    has_busy = bool(per_disk) and all(hasattr(counters, "busy_time") for counters in per_disk.values())
    return _Counters(
        time=time.perf_counter(),
        cpu=tuple(_busy_and_total(times) for times in psutil.cpu_times(percpu=True)),
        disk_busy={name: counters.busy_time for name, counters in per_disk.items()} if has_busy else None,
        disk_bytes=float(disks.read_bytes + disks.write_bytes) if disks else 0.0,
        network_sent=float(sum(nics[name].bytes_sent for name in links if name in nics)),
        network_received=float(sum(nics[name].bytes_recv for name in links if name in nics)),
    )


def _busy_and_total(times) -> tuple[float, float]:
    """Busy and total CPU seconds of one core, counted as ``psutil.cpu_percent`` counts them."""
    # Linux includes guest time in user time; iowait is idle time spent waiting for a disk.
    total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
    idle = times.idle + getattr(times, "iowait", 0.0)
    return total - idle, total


def _sample_between(before: _Counters, after: _Counters, capacity: float | None) -> Sample:
    elapsed = max(after.time - before.time, 1e-9)
    cpu = []
    for (busy_before, total_before), (busy_after, total_after) in zip(before.cpu, after.cpu):
        total = total_after - total_before
        cpu.append(min(max(100.0 * (busy_after - busy_before) / total, 0.0), 100.0) if total > 0 else 0.0)
    disk_busy = None
    if before.disk_busy is not None and after.disk_busy is not None:
        busy_ms = [after.disk_busy[name] - before.disk_busy.get(name, 0.0) for name in after.disk_busy]
        # Busy time is counted in whole milliseconds, so a short interval can round above 100%.
        disk_busy = min(max(busy_ms, default=0.0) / (10.0 * elapsed), 100.0)
    return Sample(
        duration=elapsed,
        cpu_percent=tuple(cpu),
        memory_percent=psutil.virtual_memory().percent,
        disk_busy_percent=disk_busy,
        disk_bytes_per_second=max(after.disk_bytes - before.disk_bytes, 0.0) / elapsed,
        network_sent_per_second=max(after.network_sent - before.network_sent, 0.0) / elapsed,
        network_received_per_second=max(after.network_received - before.network_received, 0.0) / elapsed,
        network_capacity=capacity,
    )
