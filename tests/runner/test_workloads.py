"""Built-in workloads and command workloads (Pilot §III: rounds, work amounts, readings, unit readings)."""

import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from runner.workloads import builtin as builtin_workloads
from runner.monitor import COMPONENTS
from runner.session import RoundOutcome
from runner.workloads import (
    BUILTIN_WORKLOADS,
    CommandFailed,
    WorkloadError,
    WorkloadTimeout,
    builtin_workload,
    command_workload,
    kill_process_group,
    parse_json_lines,
    setup_command,
)


FAKE = str(Path(__file__).with_name("fake_benchmark.py"))


def fake(*args: str) -> list[str]:
    return [sys.executable, FAKE, *args]


def gone(pid: int) -> bool:
    """True once `pid` has exited (a zombie awaiting its reaper counts as exited)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until_gone(*pids: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(gone(pid) for pid in pids):
            return True
        time.sleep(0.02)
    return False


# --- built-in workloads -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUILTIN_WORKLOADS))
def test_builtin_declares_metrics_range_and_component(name):
    workload = BUILTIN_WORKLOADS[name]
    assert workload.name == name
    assert workload.description and workload.work_unit
    assert 0 < workload.work_range[0] < workload.work_range[1]
    assert workload.component in COMPONENTS
    assert workload.metrics and all(metric.unit for metric in workload.metrics)


@pytest.mark.parametrize("name", sorted(BUILTIN_WORKLOADS))
def test_builtin_round_reports_a_reading_and_one_unit_reading_per_unit(name, tmp_path):
    declared = BUILTIN_WORKLOADS[name]
    parameters = {"directory": str(tmp_path)} if name == "fsync" else {}
    units = int(declared.work_range[0]) + 1

    outcome = declared.make(parameters)(units)

    assert isinstance(outcome, RoundOutcome)
    assert outcome.duration > 0
    metrics = {metric.name for metric in declared.metrics}
    assert set(outcome.readings) == metrics == set(outcome.unit_readings)
    for metric in declared.metrics:
        unit_readings = outcome.unit_readings[metric.name]
        assert len(unit_readings) == units
        assert all(math.isfinite(value) and value > 0 for value in unit_readings)
        if metric.unit == "s":
            # A time per unit: the reading is the mean unit time, and the units fill the round.
            assert outcome.readings[metric.name] == pytest.approx(statistics.fmean(unit_readings))
            assert math.fsum(unit_readings) == pytest.approx(outcome.duration)
        else:
            # A throughput: units over the time they took, i.e. the harmonic mean of the unit rates.
            assert outcome.readings[metric.name] == pytest.approx(statistics.harmonic_mean(unit_readings))
    assert list(tmp_path.iterdir()) == []


def test_work_amount_is_rounded_to_whole_units_and_must_hold_one():
    sort = builtin_workload("sort")
    assert len(sort(2.4).unit_readings["time"]) == 2
    assert len(sort(2.6).unit_readings["time"]) == 3
    for bad in (0.4, -1, math.nan, math.inf, "3", True):
        with pytest.raises(ValueError, match="`work_amount`"):
            sort(bad)


def test_sort_slow_sorts_more_integers_per_unit(monkeypatch):
    """sort_slow's regression is real work, not a sleep: each unit sorts the same 1,000 integers as
    `sort` plus 8% more. Counted through the lists handed to ``sorted`` — deterministic, unlike a
    timing ratio, which a busy CI machine can reverse."""
    sorted_inputs = []

    def recording_sorted(values):
        sorted_inputs.append(list(values))
        return sorted(values)

    fast, slow = builtin_workload("sort"), builtin_workload("sort_slow")
    monkeypatch.setattr(builtin_workloads, "sorted", recording_sorted, raising=False)
    fast(5)
    fast_inputs, sorted_inputs[:] = list(sorted_inputs), []
    slow(5)
    slow_inputs = sorted_inputs
    assert [len(values) for values in fast_inputs] == [1000] * 5
    assert [len(values) for values in slow_inputs] == [1080] * 5
    assert [values[:1000] for values in slow_inputs] == fast_inputs


def test_builtin_parameters_are_validated_by_name():
    with pytest.raises(ValueError, match="Unknown parameter.*'sort'.*colour.*accepted: seed, slowdown"):
        builtin_workload("sort", {"colour": "red"})
    with pytest.raises(ValueError, match="`seed`"):
        builtin_workload("sha256", {"seed": 1.5})
    with pytest.raises(ValueError, match="`slowdown`"):
        builtin_workload("sort", {"slowdown": 2})
    with pytest.raises(ValueError, match="`directory`"):
        builtin_workload("fsync", {"directory": "/no/such/directory"})
    with pytest.raises(ValueError, match="`name` must be a built-in workload.*sort_slow.*got 'quicksort'"):
        builtin_workload("quicksort")


# --- command workloads: readings --------------------------------------------------------------------


def test_wall_time_mode_reads_the_process_wall_time(tmp_path):
    out = tmp_path / "echo.json"
    outcome = command_workload(fake("echo", str(out)), timeout=30)(5)
    assert outcome.readings == {"time": outcome.duration}
    assert outcome.duration > 0
    assert outcome.unit_readings == {}
    assert out.exists()


def test_json_lines_mode_reads_readings_and_unit_readings():
    outcome = command_workload(fake("units", "{work_amount}"), timeout=30, reading_mode="json_lines")(4)
    assert outcome.readings == {"time": 0.004, "items": 4.0}
    assert outcome.unit_readings == {"time": pytest.approx([0.001, 0.002, 0.003, 0.004])}
    assert outcome.duration > 0


def test_malformed_json_line_is_an_error_naming_the_line():
    workload = command_workload(fake("malformed"), timeout=30, reading_mode="json_lines")
    with pytest.raises(WorkloadError, match="stdout line 2: not valid JSON"):
        workload(1)


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ('{"reading": {"time": "fast"}}', r"line 1: reading 'time' must be a finite number"),
        ('text\n{"unit": {"time": NaN}}', r"line 2: unit 'time' must be a finite number"),
        ('{"unit": {"ok": true}}', r"line 1: unit 'ok' must be a finite number"),
        ('{"readings": {"time": 1}}', r"line 1: expected an object with keys 'reading' and/or 'unit'"),
        ('{"reading": [1, 2]}', r"line 1: 'reading' must map metric names to numbers"),
        ('{"reading": {"t": 1}}\n{"reading": {"t": 2}}', r"line 2: reading 't' was already reported"),
        ("all good, no numbers", r"reported no readings"),
    ],
)
def test_json_lines_protocol_errors(stdout, message):
    with pytest.raises(WorkloadError, match=message):
        parse_json_lines(stdout)


def test_json_lines_free_text_is_ignored_and_one_line_may_carry_both_keys():
    readings, units = parse_json_lines('starting\n[1, 2]\n  {"reading": {"t": 2}, "unit": {"t": 1}}\n')
    assert readings == {"t": 2.0}
    assert units == {"t": [1.0]}


# --- command workloads: placeholders, environment, safety ---------------------------------------------


def test_placeholders_are_substituted_inside_arguments(tmp_path):
    out = tmp_path / "echo.json"
    argv = fake("echo", str(out), "--n={work_amount}", "{revision}", "{{literal}}", "{work_amount}{revision}")
    workload = command_workload(argv, timeout=30, revision="abc123")

    workload(500.0)
    assert json.loads(out.read_text())["argv"][2:] == ["--n=500", "abc123", "{literal}", "500abc123"]
    workload(2.5)
    assert json.loads(out.read_text())["argv"][2] == "--n=2.5"


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("{iterations}", r"Unknown placeholder \{iterations\} in `argv\[1\]`"),
        ("{work_amount.real}", r"Unknown placeholder \{work_amount.real\}"),
        ("{revision[0]}", r"Unknown placeholder \{revision\[0\]\}"),
        ("{}", r"Unknown placeholder \{\}"),
        ("{work_amount:>5}", r"conversion or format spec"),
        ("{revision!r}", r"conversion or format spec"),
        ("brace}", r"not a valid template.*literal braces"),
    ],
)
def test_bad_placeholders_are_refused_when_the_workload_is_defined(argument, message):
    with pytest.raises(ValueError, match=message):
        command_workload(["prog", argument], timeout=1)


def test_argv_must_be_a_list_not_a_shell_string():
    with pytest.raises(ValueError, match="not a single string"):
        command_workload("python bench.py {work_amount}", timeout=1)
    with pytest.raises(ValueError, match="non-empty list of strings"):
        command_workload([], timeout=1)


@pytest.mark.parametrize(
    "revision",
    [
        "; touch pwned",
        "$(touch pwned)",
        "`touch pwned`",
        "x | touch pwned",
        "x && touch pwned",
        "'; touch pwned; echo '",
        "$HOME > pwned",
    ],
)
def test_shell_metacharacters_arrive_as_one_literal_argument(revision, tmp_path):
    out = tmp_path / "echo.json"
    argv = fake("echo", str(out), "{revision}", "--rev={revision}")
    command_workload(argv, cwd=tmp_path, timeout=30, revision=revision)(1)
    assert json.loads(out.read_text())["argv"][2:] == [revision, f"--rev={revision}"]
    assert not (tmp_path / "pwned").exists()


def test_environment_is_a_minimal_base_plus_the_given_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("PILOT_TEST_SECRET", "do-not-leak")
    out = tmp_path / "echo.json"
    command_workload(fake("echo", str(out)), env={"BENCH_MODE": "fast"}, timeout=30)(1)
    env = json.loads(out.read_text())["env"]
    assert env["BENCH_MODE"] == "fast"
    assert env["PATH"] == os.environ["PATH"]
    assert "PILOT_TEST_SECRET" not in env
    with pytest.raises(ValueError, match="`env` must map strings to strings"):
        command_workload(["prog"], env={"N": 3}, timeout=1)


def test_invalid_options_are_named():
    with pytest.raises(ValueError, match="`timeout`"):
        command_workload(["prog"], timeout=0)
    with pytest.raises(ValueError, match="`reading_mode`.*got 'stdout'"):
        command_workload(["prog"], timeout=1, reading_mode="stdout")
    with pytest.raises(ValueError, match="`work_amount`"):
        command_workload(["prog"], timeout=1)(-1)


# --- command workloads: failures, timeouts, cancellation ----------------------------------------------


def test_non_zero_exit_raises_with_the_code_and_the_end_of_stderr():
    with pytest.raises(CommandFailed, match=r"(?s)exited with code 3.*something broke") as raised:
        command_workload(fake("fail", "3"), timeout=30)(1)
    assert raised.value.returncode == 3
    assert "something broke" in raised.value.stderr_tail


def test_a_missing_program_is_a_workload_error():
    with pytest.raises(WorkloadError, match="Cannot start command '/no/such/program'"):
        command_workload(["/no/such/program"], timeout=1)(1)


@pytest.mark.parametrize("ignore_term", [False, True], ids=["sigterm", "sigkill-after-grace"])
def test_timeout_kills_the_whole_process_group(ignore_term, tmp_path):
    pids_file = tmp_path / "pids.json"
    started = []
    argv = fake("hang", str(pids_file), *(["--ignore-term"] if ignore_term else []))
    workload = command_workload(argv, timeout=1.0, kill_grace=0.3, on_start=started.append)

    with pytest.raises(WorkloadTimeout, match="Round timed out after 1 s") as raised:
        workload(1)

    assert raised.value.timeout == 1.0
    pids = json.loads(pids_file.read_text())
    assert started == [pids["pid"]] == [pids["pgid"]]
    assert wait_until_gone(pids["pid"], pids["child"])


def test_kill_process_group_cancels_a_running_round_from_elsewhere(tmp_path):
    pids_file = tmp_path / "pids.json"
    started = threading.Event()
    pgids = []
    errors = []

    def on_start(pgid):
        pgids.append(pgid)
        started.set()

    def run_round():
        try:
            command_workload(fake("hang", str(pids_file)), timeout=30, on_start=on_start)(1)
        except WorkloadError as error:
            errors.append(error)

    runner = threading.Thread(target=run_round)
    runner.start()
    try:
        assert started.wait(10)
        deadline = time.monotonic() + 10
        while not pids_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert kill_process_group(pgids[0], grace=1.0)
    finally:
        runner.join(30)
    assert not runner.is_alive()
    assert isinstance(errors[0], CommandFailed)
    assert "killed by signal SIGTERM" in str(errors[0])
    assert wait_until_gone(json.loads(pids_file.read_text())["child"])
    assert not kill_process_group(pgids[0], grace=0.1)


def test_kill_process_group_refuses_groups_it_cannot_have_made():
    for pgid in (0, 1, -5, True):
        with pytest.raises(ValueError, match="`pgid` must be an integer greater than 1"):
            kill_process_group(pgid)
    with pytest.raises(ValueError, match="caller's own process group"):
        kill_process_group(os.getpgrp())


def test_a_failing_on_start_kills_the_round(tmp_path):
    pids_file = tmp_path / "pids.json"
    pgids = []

    def on_start(pgid):
        pgids.append(pgid)
        raise RuntimeError("could not store the process group")

    with pytest.raises(RuntimeError, match="could not store"):
        command_workload(fake("hang", str(pids_file)), timeout=30, kill_grace=0.3, on_start=on_start)(1)
    assert wait_until_gone(pgids[0])


# --- setup command ----------------------------------------------------------------------------------


def test_setup_command_runs_once_with_the_revision(tmp_path):
    out = tmp_path / "echo.json"
    argv = fake("echo", str(out), "checkout", "{revision}")
    setup_command(argv, cwd=tmp_path, timeout=30, revision="v1.2; touch pwned")
    assert json.loads(out.read_text())["argv"][2:] == ["checkout", "v1.2; touch pwned"]
    assert not (tmp_path / "pwned").exists()


def test_setup_command_refuses_work_amount_and_reports_failure():
    with pytest.raises(ValueError, match=r"Unknown placeholder \{work_amount\}.*allowed: \{revision\}"):
        setup_command(["make", "-j{work_amount}"], timeout=1, revision="main")
    with pytest.raises(CommandFailed, match="exited with code 2"):
        setup_command(fake("fail", "2"), timeout=30, revision="main")
