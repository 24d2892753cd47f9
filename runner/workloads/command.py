"""Command workloads: an argument list run once per round, never through a shell.

:func:`command_workload` runs an argument list — never a shell — once per round, in a new session
(so in its own process group, which a timeout or a cancel kills as a whole). Placeholders
``{work_amount}`` and ``{revision}`` are substituted inside each argument; substitution never splits or
joins arguments, so a value holding shell metacharacters arrives as one literal argument, and a value
starting with ``-`` is refused (:class:`UnsafeArgument`), so it never becomes an option. Literal
braces are written ``{{`` and ``}}``; any other placeholder is a :class:`ValueError` when the workload
is defined. :func:`setup_command` runs a per-revision preparation step (check out, build) under the
same rules, with ``{revision}`` only.

The child's environment is a minimal base — ``PATH``, ``HOME`` and ``LANG`` copied from the worker —
with the given ``env`` merged over it. The worker's own environment is deliberately not inherited: it
holds the dashboard's secrets (database URL, secret key), and differences between workers' environments
would otherwise leak into results.

The ``json_lines`` protocol
---------------------------
In ``reading_mode="json_lines"`` the command reports on its standard output, one JSON object per line:

* ``{"reading": {"metric": value, ...}}`` — readings of the round (Pilot §III: one per metric per
  round; a metric reported twice is an error);
* ``{"unit": {"metric": value, ...}}`` — unit readings, appended per metric in line order.

One line may carry both keys. Values are finite numbers. A line whose first non-blank character is
``{`` is a protocol line and must follow these rules exactly (invalid JSON, other keys or bad values
are a :class:`WorkloadError` naming the line number); every other line is free text and ignored, so a
benchmark may print progress. A round must report at least one reading or unit reading. In this mode
the round's duration is still the process's wall time, but no ``time`` reading is added.
"""

import contextlib
import json
import math
import os
import signal
import string
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import psutil

from results.stats import Direction
from runner.session import MetricSpec, RoundOutcome, Workload


ReadingMode = Literal["wall_time", "json_lines"]


# The one metric of a command workload in ``wall_time`` mode.
WALL_TIME = MetricSpec("time", "s", Direction.LOWER_IS_BETTER)


READING_MODES = ("wall_time", "json_lines")


PLACEHOLDERS = ("work_amount", "revision")


# Variables a command needs to find programs and behave predictably; everything else must be passed.
BASE_ENVIRONMENT = ("PATH", "HOME", "LANG")


# Seconds a process group gets between SIGTERM and SIGKILL.
DEFAULT_KILL_GRACE = 2.0


# How much of a failed command's standard error the exception quotes.
STDERR_TAIL_CHARS = 2000


class WorkloadError(RuntimeError):
    """A round could not produce an outcome: the command failed, timed out or broke the protocol."""


class WorkloadTimeout(WorkloadError):
    """A command outlived its timeout; its whole process group was killed.

    Attributes
    ----------
    timeout : float
        The timeout in seconds.
    """

    def __init__(self, message: str, *, timeout: float):
        super().__init__(message)
        self.timeout = timeout


class CommandFailed(WorkloadError):
    """A command exited with a non-zero status.

    Attributes
    ----------
    returncode : int
        The exit status; negative ``-N`` when the process was killed by signal N.
    stderr_tail : str
        The last :data:`STDERR_TAIL_CHARS` characters of its standard error.
    """

    def __init__(self, message: str, *, returncode: int, stderr_tail: str):
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class UnsafeArgument(WorkloadError):
    """A placeholder's value would start with ``-`` and could be read as an option; nothing was run."""


def command_workload(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float,
    reading_mode: ReadingMode = "wall_time",
    revision: str = "",
    on_start: Callable[[int], None] | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> Workload:
    """A workload that runs an external command once per round, without a shell.

    Parameters
    ----------
    argv : sequence of str
        The program and its arguments; ``{work_amount}`` and ``{revision}`` are substituted inside
        each argument (see the module docstring). The work amount is written as an integer when it is
        whole (``500``, not ``500.0``).
    cwd : path, optional
        Working directory of the command.
    env : mapping of str to str, optional
        Variables merged over the minimal base environment (``PATH``, ``HOME``, ``LANG``).
    timeout : float
        Seconds a round may take; then its process group is killed and :class:`WorkloadTimeout`
        raised.
    reading_mode : {"wall_time", "json_lines"}
        ``"wall_time"``: the reading is the process's wall time, metric :data:`WALL_TIME`.
        ``"json_lines"``: readings and unit readings come from standard output (module docstring).
    revision : str
        Value of ``{revision}``.
    on_start : callable, optional
        Called with the child's pid right after it starts. The child leads a new session, so the pid
        is also its process group id: store it to cancel the round from elsewhere with
        :func:`kill_process_group`. If it raises, the round is killed and the exception propagates.
    kill_grace : float
        Seconds between SIGTERM and SIGKILL when the round's process group is killed.

    Returns
    -------
    callable
        ``workload(work_amount) -> RoundOutcome``; it raises :class:`WorkloadError` when the command
        cannot start, fails (:class:`CommandFailed`), times out (:class:`WorkloadTimeout`) or breaks
        the ``json_lines`` protocol.

    Raises
    ------
    ValueError
        If `argv` holds an unknown or malformed placeholder, or another option is invalid.
    """
    template = _compile_argv(argv, allowed=PLACEHOLDERS)
    environment = _environment(env)
    timeout = _check_seconds(timeout, "timeout")
    kill_grace = _check_seconds(kill_grace, "kill_grace", allow_zero=True)
    if reading_mode not in READING_MODES:
        raise ValueError(f"`reading_mode` must be one of {', '.join(READING_MODES)}; got {reading_mode!r}.")
    if not isinstance(revision, str):
        raise ValueError(f"`revision` must be a string; got {revision!r}.")

    def command_round(work_amount: float) -> RoundOutcome:
        values = {"work_amount": _format_work_amount(work_amount), "revision": revision}
        completed = _run(
            _substitute(template, values),
            cwd=cwd,
            env=environment,
            timeout=timeout,
            kill_grace=kill_grace,
            on_start=on_start,
        )
        if reading_mode == "wall_time":
            return RoundOutcome(duration=completed.duration, readings={WALL_TIME.name: completed.duration})
        readings, unit_readings = parse_json_lines(completed.stdout)
        return RoundOutcome(duration=completed.duration, readings=readings, unit_readings=unit_readings)

    return command_round


def setup_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float,
    revision: str,
    on_start: Callable[[int], None] | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> None:
    """Run a revision's setup step once, before the session's rounds for it (e.g. check out and build).

    Same rules as :func:`command_workload`, with ``{revision}`` as the only placeholder (a setup does
    no measured work, so ``{work_amount}`` is refused).

    Raises
    ------
    ValueError
        If `argv` holds an unknown or malformed placeholder, or another option is invalid.
    WorkloadError
        If the command cannot start, fails (:class:`CommandFailed`) or times out
        (:class:`WorkloadTimeout`).
    """
    template = _compile_argv(argv, allowed=("revision",))
    if not isinstance(revision, str):
        raise ValueError(f"`revision` must be a string; got {revision!r}.")
    _run(
        _substitute(template, {"revision": revision}),
        cwd=cwd,
        env=_environment(env),
        timeout=_check_seconds(timeout, "timeout"),
        kill_grace=_check_seconds(kill_grace, "kill_grace", allow_zero=True),
        on_start=on_start,
    )


def kill_process_group(pgid: int, *, grace: float = DEFAULT_KILL_GRACE) -> bool:
    """Terminate a round's process group: SIGTERM, then SIGKILL to what is left after `grace` seconds.

    Used to cancel a running round from another process, with the id :func:`command_workload`
    passed to ``on_start``.

    Returns
    -------
    bool
        False if no process of the group was still running.

    Raises
    ------
    ValueError
        If `pgid` is not a process group this module could have created: at most 1, or the caller's own
        group (``killpg`` would then kill the caller).
    """
    if isinstance(pgid, bool) or not isinstance(pgid, int) or pgid <= 1:
        raise ValueError(f"`pgid` must be an integer greater than 1; got {pgid!r}.")
    if pgid == os.getpgrp():
        raise ValueError(f"`pgid` {pgid} is the caller's own process group; refusing to kill it.")
    return _terminate_group(pgid, grace=_check_seconds(grace, "grace", allow_zero=True))


def parse_json_lines(stdout: str) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Readings and unit readings from a command's standard output (``json_lines`` protocol).

    Returns
    -------
    readings : dict of str to float
    unit_readings : dict of str to list of float

    Raises
    ------
    WorkloadError
        Naming the line number (1-based) of a malformed protocol line, or if no line reported anything.
    """
    readings: dict[str, float] = {}
    unit_readings: dict[str, list[float]] = {}
    for number, line in enumerate(stdout.splitlines(), start=1):
        if not line.lstrip().startswith("{"):
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as error:
            raise WorkloadError(f"stdout line {number}: not valid JSON ({error.msg}): {line[:200]!r}") from None
        unknown = sorted(set(message) - {"reading", "unit"})
        if unknown or not message:
            raise WorkloadError(
                f"stdout line {number}: expected an object with keys 'reading' and/or 'unit'; "
                f"got keys {sorted(message)}."
            )
        for metric, value in _protocol_values(message.get("reading", {}), number, "reading").items():
            if metric in readings:
                raise WorkloadError(f"stdout line {number}: reading {metric!r} was already reported.")
            readings[metric] = value
        for metric, value in _protocol_values(message.get("unit", {}), number, "unit").items():
            unit_readings.setdefault(metric, []).append(value)
    if not readings and not unit_readings:
        raise WorkloadError(
            'The command reported no readings: json_lines mode expects lines like {"reading": {"time": 1.5}}.'
        )
    return readings, unit_readings


def _protocol_values(values: object, number: int, key: str) -> dict[str, float]:
    if not isinstance(values, dict):
        raise WorkloadError(f"stdout line {number}: {key!r} must map metric names to numbers; got {values!r}.")
    for metric, value in values.items():
        if not metric:
            raise WorkloadError(f"stdout line {number}: metric names must not be empty.")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise WorkloadError(
                f"stdout line {number}: {key} {metric!r} must be a finite number; got {value!r}."
            )
    return {metric: float(value) for metric, value in values.items()}


Template = tuple[tuple[tuple[str, str | None], ...], ...]


def _compile_argv(argv: Sequence[str], *, allowed: Sequence[str]) -> Template:
    """Parse every argument into (literal text, placeholder name or None) pieces, refusing the unknown."""
    if isinstance(argv, str | bytes):
        raise ValueError(
            "`argv` must be a list of arguments, not a single string: splitting a string would need a shell."
        )
    if not argv or not all(isinstance(argument, str) for argument in argv):
        raise ValueError(f"`argv` must be a non-empty list of strings; got {argv!r}.")
    names = ", ".join(f"{{{name}}}" for name in allowed)
    template = []
    for index, argument in enumerate(argv):
        try:
            parsed = list(string.Formatter().parse(argument))
        except ValueError as error:
            raise ValueError(
                f"`argv[{index}]` {argument!r} is not a valid template ({error}); "
                "write literal braces as {{ and }}."
            ) from None
        pieces = []
        for literal, name, spec, conversion in parsed:
            if name is not None and name not in allowed:
                raise ValueError(
                    f"Unknown placeholder {{{name}}} in `argv[{index}]` {argument!r}; allowed: {names} "
                    "(write literal braces as {{ and }})."
                )
            if spec or conversion:
                raise ValueError(
                    f"Placeholder {{{name}}} in `argv[{index}]` {argument!r} has a conversion or format "
                    "spec; only plain placeholders are supported."
                )
            pieces.append((literal, name))
        template.append(tuple(pieces))
    return tuple(template)


def _substitute(template: Template, values: Mapping[str, str]) -> list[str]:
    # A value is checked again here, whatever validated it where it entered: a revision such as
    # "--upload-pack=…" would be an option of the command (git runs it), not an argument.
    used = {name for pieces in template for _, name in pieces if name is not None}
    for name in sorted(used):
        if values[name].startswith("-"):
            raise UnsafeArgument(
                f"Refused to run the command: the value of {{{name}}}, {values[name][:80]!r}, starts with '-' "
                "and would be read as an option."
            )
    # Plain concatenation: a value can never become more than part of its own argument.
    return [
        "".join(literal + (values[name] if name is not None else "") for literal, name in pieces)
        for pieces in template
    ]


def _format_work_amount(work_amount: float) -> str:
    if isinstance(work_amount, bool) or not isinstance(work_amount, int | float):
        raise ValueError(f"`work_amount` must be a number; got {work_amount!r}.")
    if not math.isfinite(work_amount) or work_amount <= 0:
        raise ValueError(f"`work_amount` must be finite and positive; got {work_amount!r}.")
    return str(int(work_amount)) if float(work_amount).is_integer() else repr(float(work_amount))


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    environment = {name: os.environ[name] for name in BASE_ENVIRONMENT if name in os.environ}
    for name, value in (env or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"`env` must map strings to strings; got {name!r}: {value!r}.")
        environment[name] = value
    return environment


def _check_seconds(value: object, name: str, *, allow_zero: bool = False) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        relation = "non-negative" if allow_zero else "positive"
        raise ValueError(f"`{name}` must be a finite, {relation} number of seconds; got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class _Completed:
    stdout: str
    duration: float


def _run(
    argv: list[str],
    *,
    cwd: str | os.PathLike | None,
    env: dict[str, str],
    timeout: float,
    kill_grace: float,
    on_start: Callable[[int], None] | None,
) -> _Completed:
    """Run `argv` in a new session; return its stdout and wall time or raise :class:`WorkloadError`."""
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            shell=False,
            start_new_session=True,
        )
    except OSError as error:
        raise WorkloadError(f"Cannot start command {argv[0]!r}: {error}") from error
    # The child leads its new session, so its pid is the id of its process group.
    pgid = process.pid
    with process:
        try:
            if on_start is not None:
                on_start(pgid)
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _terminate_group(pgid, grace=kill_grace, reap=process.poll)
            _drain(process, kill_grace)
            raise WorkloadTimeout(
                f"Round timed out after {timeout:g} s: command {argv[0]!r} and its process group {pgid} "
                "were killed.",
                timeout=timeout,
            ) from None
        except BaseException:
            # A failing on_start or an interrupt must not leave the round running unobserved.
            _terminate_group(pgid, grace=kill_grace, reap=process.poll)
            _drain(process, kill_grace)
            raise
        duration = time.perf_counter() - started
        # Processes the command left behind in its group would load the machine during the next round.
        _signal_group(pgid, signal.SIGKILL)
    if process.returncode != 0:
        tail = stderr.decode(errors="replace")[-STDERR_TAIL_CHARS:]
        if process.returncode < 0:
            status = f"was killed by signal {_signal_name(-process.returncode)}"
        else:
            status = f"exited with code {process.returncode}"
        raise CommandFailed(
            f"Command {argv[0]!r} {status}; end of its stderr:\n{tail}",
            returncode=process.returncode,
            stderr_tail=tail,
        )
    return _Completed(stdout=stdout.decode(errors="replace"), duration=duration)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        # Real-time signals have numbers but no names.
        return str(signum)


def _drain(process: subprocess.Popen, grace: float) -> None:
    """Collect what is left of a killed process's output so its pipes close and it is reaped."""
    # A descendant that left the group may hold the pipes open for ever: then its output is dropped, and
    # leaving the caller's `with process` block closes the pipes and reaps the killed child.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.communicate(timeout=max(grace, 0.1))


def _signal_group(pgid: int, signum: int) -> bool:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def _terminate_group(pgid: int, *, grace: float, reap: Callable[[], object] | None = None) -> bool:
    """SIGTERM the group, wait up to `grace` seconds for it to empty, then SIGKILL what is left."""
    if reap is not None:
        reap()
    if not _group_alive(pgid):
        return False
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if reap is not None:
            # Our own child stays in the group as a zombie until it is reaped.
            reap()
        if not _group_alive(pgid):
            return True
        time.sleep(0.02)
    _signal_group(pgid, signal.SIGKILL)
    return True


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group is still running.

    ``killpg(pgid, 0)`` alone is not enough: it also succeeds while the group holds only zombies, such
    as orphaned grandchildren an init process has not reaped yet.
    """
    if not _signal_group(pgid, 0):
        return False
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True
        except (OSError, psutil.Error):
            # The process ended between listing and inspection.
            continue
    return False


def check_command(argv: Sequence[str], *, setup: bool = False) -> None:
    """Raise ValueError if `argv` is not a valid command template (a setup command takes only
    ``{revision}``), so a job is refused when it is defined rather than when it first runs."""
    _compile_argv(argv, allowed=("revision",) if setup else PLACEHOLDERS)


def check_environment(env: Mapping[str, str]) -> None:
    """Raise ValueError unless `env` maps strings to strings."""
    _environment(env)
