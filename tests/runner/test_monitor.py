"""Utilisation sampling, bottleneck detection (Pilot §III-B) and monitoring overhead (Pilot §III-C)."""

import dataclasses
import threading
import time

import pytest

from runner import monitor as monitor_module
from runner.monitor import (
    Monitor,
    OverheadResult,
    Sample,
    bottleneck_warnings,
    measure_overhead,
    summarize,
    utilisation,
)
from runner.session import RoundOutcome
from runner.workloads import builtin_workload


QUIET = Sample(
    duration=0.1,
    cpu_percent=(10.0, 20.0),
    memory_percent=40.0,
    disk_busy_percent=5.0,
    disk_bytes_per_second=1e6,
    network_sent_per_second=1e3,
    network_received_per_second=2e3,
)


def busy(**changes) -> Sample:
    return dataclasses.replace(QUIET, **changes)


# --- pure figures and warnings ----------------------------------------------------------------------


def test_utilisation_means_are_weighted_by_sample_duration():
    samples = [
        busy(duration=0.1, cpu_percent=(100.0, 0.0), disk_busy_percent=90.0),
        busy(duration=0.1, cpu_percent=(0.0, 100.0), disk_busy_percent=90.0),
        busy(duration=0.2, cpu_percent=(20.0, 20.0), disk_busy_percent=30.0),
    ]
    usage = utilisation(samples)

    assert usage["cpu"].mean == pytest.approx((0.1 * 50 + 0.1 * 50 + 0.2 * 20) / 0.4)
    assert usage["cpu"].max == 50.0
    # One thread hopping between cores: the busiest core of each sample was saturated.
    assert usage["cpu_busiest_core"].mean == pytest.approx((0.1 * 100 + 0.1 * 100 + 0.2 * 20) / 0.4)
    assert usage["disk"].mean == pytest.approx(60.0)
    assert usage["disk"].max == 90.0
    assert usage["network_sent"].unit == "B/s"
    assert usage["network_sent"].mean == pytest.approx(1e3)
    assert "network_sent_utilisation" not in usage


def test_figures_the_platform_cannot_measure_are_absent():
    usage = utilisation([busy(disk_busy_percent=None, cpu_percent=())])
    assert "disk" not in usage and "cpu" not in usage
    assert usage["disk_throughput"].mean == 1e6
    assert utilisation([]) == {}


def test_busy_disk_is_flagged_while_measuring_cpu():
    usage = utilisation([busy(disk_busy_percent=93.0), busy(disk_busy_percent=93.0)])
    assert bottleneck_warnings(usage, under_test="cpu") == ["disk busy 93% (above 80%) while measuring cpu"]


def test_the_component_under_test_is_never_flagged():
    samples = [busy(cpu_percent=(99.0, 97.0), disk_busy_percent=99.0, memory_percent=95.0)]
    usage = utilisation(samples)
    assert bottleneck_warnings(usage, under_test="cpu") == [
        "memory used 95% (above 80%) while measuring cpu",
        "disk busy 99% (above 80%) while measuring cpu",
    ]
    assert bottleneck_warnings(usage, under_test="disk") == [
        "cpu (all cores) 98% (above 80%) while measuring disk",
        "busiest cpu core 99% (above 80%) while measuring disk",
        "memory used 95% (above 80%) while measuring disk",
    ]
    assert bottleneck_warnings(utilisation([busy(disk_busy_percent=99.0)]), under_test="disk") == []


def test_a_single_saturated_core_is_a_cpu_bottleneck_for_an_io_benchmark():
    usage = utilisation([busy(cpu_percent=(100.0, 0.0, 0.0, 0.0))] * 3)
    assert bottleneck_warnings(usage, under_test="disk") == [
        "busiest cpu core 100% (above 80%) while measuring disk"
    ]


def test_network_links_are_checked_in_each_direction_when_their_speed_is_known():
    # 1 Gbit/s = 125e6 B/s per direction; sending at 110e6 B/s is 88% of the link.
    samples = [busy(network_sent_per_second=110e6, network_received_per_second=1e6, network_capacity=125e6)]
    usage = utilisation(samples)
    assert usage["network_sent_utilisation"].mean == pytest.approx(88.0)
    assert bottleneck_warnings(usage, under_test="disk") == [
        "network send link 88% (above 80%) while measuring disk"
    ]
    assert bottleneck_warnings(usage, under_test="network") == []


def test_threshold_is_strict_and_configurable_and_spikes_do_not_count():
    at_threshold = utilisation([busy(memory_percent=80.0)])
    assert bottleneck_warnings(at_threshold, under_test="cpu") == []
    assert bottleneck_warnings(at_threshold, under_test="cpu", threshold=70) == [
        "memory used 80% (above 70%) while measuring cpu"
    ]
    spike = utilisation([busy(disk_busy_percent=100.0)] + [busy(disk_busy_percent=10.0)] * 9)
    assert spike["disk"].max == 100.0
    assert bottleneck_warnings(spike, under_test="cpu") == []


def test_without_a_component_under_test_every_saturated_component_is_flagged():
    usage = utilisation([busy(cpu_percent=(90.0, 90.0))])
    assert bottleneck_warnings(usage, under_test=None) == [
        "cpu (all cores) 90% (above 80%) (no component declared under test)",
        "busiest cpu core 90% (above 80%) (no component declared under test)",
    ]


def test_summarize_and_validation():
    summary = summarize([busy(disk_busy_percent=93.0), busy()], under_test="cpu")
    assert summary.samples == 2
    assert summary.duration == pytest.approx(0.2)
    assert summary.usage["disk"].mean == pytest.approx(49.0)
    assert summary.warnings == ()
    with pytest.raises(ValueError, match="`under_test` must be one of cpu, memory, disk, network"):
        summarize([], under_test="gpu")
    with pytest.raises(ValueError, match="`threshold`"):
        summarize([], under_test="cpu", threshold=0)


# --- the sampling thread ------------------------------------------------------------------------------


def monitor_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "pilot-monitor"]


def test_monitor_samples_a_busy_loop_in_a_thread_that_stops():
    outer_started = time.perf_counter()
    with Monitor(interval=0.02, under_test="cpu") as monitor:
        assert len(monitor_threads()) == 1
        # Busy for at least 0.3 s and until three samples are in: the sampler thread competes with this loop
        # for the GIL, and on a loaded machine 0.3 s held only two.
        started = time.perf_counter()
        while time.perf_counter() - started < 0.3 or (len(monitor.samples) < 3 and time.perf_counter() - started < 30):
            pass
        busy = time.perf_counter() - started
    outer = time.perf_counter() - outer_started

    assert monitor_threads() == []
    summary = monitor.summary
    assert summary.samples >= 3 and len(monitor.samples) == summary.samples
    # The samples tile the monitored span: all of the busy loop but a last piece shorter than half an interval,
    # and no more than the span itself (the same clock read around it; nothing here times the machine).
    assert busy - 0.01 <= summary.duration <= outer
    assert summary.usage["cpu_busiest_core"].mean > 0
    assert 0 < summary.usage["memory"].mean <= 100
    # Measuring the cpu: a busy cpu is expected, not a bottleneck.
    assert not [warning for warning in summary.warnings if warning.startswith(("cpu", "busiest"))]


def test_a_round_shorter_than_the_interval_still_gets_a_sample():
    with Monitor(interval=10.0) as monitor:
        time.sleep(0.02)
    assert monitor.summary.samples == 1
    assert monitor_threads() == []


def test_monitor_is_single_use_and_summary_waits_for_the_end():
    monitor = Monitor(interval=0.05)
    with pytest.raises(RuntimeError, match="after the `with` block"):
        _ = monitor.summary
    with monitor:
        pass
    with pytest.raises(RuntimeError, match="one round only"), monitor:
        pass
    with pytest.raises(ValueError, match="`interval`"):
        Monitor(interval=0)


def test_a_sampling_error_is_raised_when_the_block_exits(monkeypatch):
    def broken():
        raise OSError("no /proc/meminfo")

    monkeypatch.setattr(monitor_module.psutil, "virtual_memory", broken)
    with pytest.raises(RuntimeError, match="utilisation failed") as raised, Monitor(interval=0.01):
        time.sleep(0.05)
    assert isinstance(raised.value.__cause__, OSError)
    assert monitor_threads() == []


# --- overhead (Pilot §III-C) --------------------------------------------------------------------------


class FakeMonitor:
    """Marks rounds as monitored; a monitored round of the fake workload takes 10% longer."""

    active = False

    def __enter__(self):
        FakeMonitor.active = True
        return self

    def __exit__(self, *exc_info):
        FakeMonitor.active = False


def test_measure_overhead_recovers_a_known_ratio_in_abba_order():
    order = []

    def workload(work_amount):
        order.append("on" if FakeMonitor.active else "off")
        jitter = 0.01 * (len(order) % 3)
        duration = work_amount * (1.1 if FakeMonitor.active else 1.0) + jitter
        return RoundOutcome(duration=duration, readings={"time": duration})

    result = measure_overhead(workload, 1.0, rounds=6, monitor_factory=FakeMonitor, warmup=1)

    assert order == ["off"] + ["on", "off", "off", "on"] * 3
    assert len(result.durations_on) == len(result.durations_off) == 6
    assert result.bounded
    assert result.low < 1.1 < result.high
    assert result.ratio == pytest.approx(1.1, abs=0.01)
    assert result.overhead == pytest.approx(result.ratio - 1)
    assert result.confidence_interval() == (result.low, result.high)


def test_measure_overhead_of_the_real_monitor_is_a_bounded_ratio_near_one():
    result = measure_overhead(
        builtin_workload("sort"), 200, rounds=8, monitor_factory=lambda: Monitor(interval=0.01)
    )
    assert isinstance(result, OverheadResult)
    assert result.bounded
    assert result.low <= result.ratio <= result.high
    # Generous: only a grossly wrong measurement (e.g. timing the monitor's start-up) leaves this band.
    assert 0.5 < result.ratio < 2.0
    assert result.confidence_level == 0.95


def test_measure_overhead_validates_before_running():
    def workload(work_amount):
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match="`rounds` must be an integer of at least 2"):
        measure_overhead(workload, 1.0, rounds=1, monitor_factory=FakeMonitor)
    with pytest.raises(ValueError, match="`confidence`"):
        measure_overhead(workload, 1.0, rounds=3, monitor_factory=FakeMonitor, confidence=95)


# --- noisy neighbours: the cores other processes kept busy ---------------------------------------------


def test_the_neighbours_are_the_cores_busy_time_less_the_benchmarks_own():
    # Two cores busy for a second, the benchmark's own processes one CPU second of it: one core is another's.
    samples = [busy(duration=0.5, cpu_percent=(100.0, 100.0)), busy(duration=0.5, cpu_percent=(100.0, 100.0))]

    summary = summarize(samples, under_test="cpu", own_cpu_seconds=1.0)
    alone = summarize(samples, under_test="cpu", own_cpu_seconds=1.9)

    assert summary.neighbour_cores == pytest.approx(1.0)
    assert [w for w in summary.warnings if "other processes" in w] == [
        "other processes kept 1.0 of 2 cores busy (the benchmark's own 1.0): a noisy neighbour"]
    assert alone.neighbour_cores == pytest.approx(0.1) and alone.warnings == ()


def test_a_real_process_spinning_beside_a_one_thread_benchmark_is_warned_of():
    """Both cores busy during a one-thread CPU benchmark said "Bottleneck warnings: None" (the component under
    test is exempt); the neighbour's core is told apart from the benchmark's own."""
    import subprocess
    import sys

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        with Monitor(under_test="cpu", interval=0.05) as sampler:
            deadline = time.perf_counter() + 0.6
            while time.perf_counter() < deadline:
                pass
    finally:
        spinner.kill()
        spinner.wait()

    summary = sampler.summary
    assert summary.neighbour_cores >= 0.5
    assert any(warning.startswith("other processes kept") for warning in summary.warnings)
