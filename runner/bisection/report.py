"""A bisection in words, the same on the alert page, in its notification and in its JSON: what each step decided,
with its change, readings and machine time, and what the bisection found (the only place they are worded)."""

from collections.abc import Iterable
from datetime import datetime
from dataclasses import dataclass

from results.extensions import BisectionEnd, Culprit
from results.presentation import format_relative_change, short_commit, single_line
from results.stats import AT_LEVEL, MOVED

from ..models import Bisection, BisectionStatus, BisectionStep, Session, SessionStatus
from ..session.levels import NOT_REPRODUCED
from .plan import VERIFY

__all__ = ["StepRow", "culprit_effect", "ended_bisections", "machine_seconds", "night_culprits", "session_seconds",
           "step_rows", "summary"]


@dataclass(frozen=True)
class StepRow:
    """One session of a bisection as every page shows it."""

    position: int
    role: str
    commit: str
    session_id: int
    status: str
    decision: str
    change: str
    readings: int
    seconds: float | None


def session_seconds(session: Session) -> float | None:
    """A session's machine time: from its start to its end (or to its last heartbeat while it runs)."""
    return _seconds(session.started_at, session.finished_at or session.heartbeat_at)


def _seconds(started: datetime | None, ended: datetime | None) -> float | None:
    if started is None or ended is None:
        return None
    return max(0.0, (ended - started).total_seconds())


def machine_seconds(sessions: Iterable[Session]) -> float:
    """The machine time of a bisection's sessions, together."""
    return sum(seconds for session in sessions if (seconds := session_seconds(session)) is not None)


def step_rows(bisection: Bisection, steps: Iterable[BisectionStep]) -> list[StepRow]:
    """The steps (with their sessions loaded, and annotated with ``readings``: their sessions' rounds, one reading
    of one commit each) as rows, in the order they ran."""
    commits = bisection.commits
    return [StepRow(position=step.position + 1, role=step.role,
                    commit=commits[step.candidate] if step.candidate < len(commits) else "",
                    session_id=step.session_id, status=step.session.get_status_display(),
                    decision=_decision(step), change=format_relative_change(step.change, step.low, step.high),
                    readings=step.readings, seconds=session_seconds(step.session))
            for step in steps]


def _decision(step: BisectionStep) -> str:
    if not step.decision:
        if step.session.status == SessionStatus.FAILED:
            return "failed: stepped over"
        return "no decision" if step.session.finished else "measuring"
    if step.decision == NOT_REPRODUCED:
        return "its parent is at the bad level" if step.role == VERIFY and step.position else \
            "the ends read as one level: not reproduced"
    if step.decision == MOVED:
        return "moved: at the bad level"
    if step.decision == AT_LEVEL:
        return "at the good level"
    return "undecided: too noisy"


def culprit_effect(bisection: Bisection, *, seconds: float | None = None) -> str:
    """What a culprit did, after its name: "+10.2% [+8.9%, +11.4%] over its parent, among 15 commits"."""
    change = format_relative_change(bisection.change, bisection.low, bisection.high)
    spent = f"; {seconds / 60:.1f} min of machine time" if seconds else ""
    return f"{change or 'a change'} over its parent, among {len(bisection.commits) - 1} commits{spent}"


def summary(bisection: Bisection, *, seconds: float | None = None) -> str:
    """What a bisection found or is doing, in one line: "culprit 3f2a9c1c0e1d: +10.2% [+8.9%, +11.4%] over its
    parent, among 15 commits" or "not isolated among 15 commits: …"."""
    count = len(bisection.commits)
    spent = f"; {seconds / 60:.1f} min of machine time" if seconds else ""
    match bisection.status:
        case BisectionStatus.FOUND:
            return f"culprit {short_commit(bisection.culprit)}: {culprit_effect(bisection, seconds=seconds)}"
        case BisectionStatus.NOT_ISOLATED:
            return f"not isolated among {count - 1} commits: {single_line(bisection.reason)}{_left(bisection)}{spent}"
        case BisectionStatus.LISTING:
            return "listing its range on the machine"
        case BisectionStatus.RUNNING:
            return f"narrowing {count - 1} commits ({short_commit(bisection.last_good)}…" \
                   f"{short_commit(bisection.first_bad)}){spent}"
    return f"{bisection.get_status_display()}: {single_line(bisection.reason)}{spent}"


def _left(bisection: Bisection) -> str:
    """The range a bisection that named no culprit narrowed to, where it narrowed it."""
    if len(bisection.narrowed) != 2 or not bisection.commits:
        return ""
    good, bad = bisection.narrowed
    if (good, bad) == (0, len(bisection.commits) - 1):
        return ""
    return (f"; left: {bad - good} commits after {short_commit(bisection.commits[good])} up to "
            f"{short_commit(bisection.commits[bad])}")


def ended_bisections(project_id: int, since: datetime) -> list[BisectionEnd]:
    """The project's bisections that ended since `since`, with their machine time (the sheriff numbers,
    registered with :func:`results.extensions.add_bisections`); two queries. A cancelled one is not counted."""
    ended, found = {}, set()
    for pk, at, status in Bisection.objects.filter(job__project_id=project_id, finished_at__gte=since).exclude(
            status=BisectionStatus.CANCELLED).order_by().values_list("pk", "finished_at", "status"):
        ended[pk] = at
        if status == BisectionStatus.FOUND:
            found.add(pk)
    seconds = dict.fromkeys(ended, 0.0)
    for bisection_id, started, finished in Session.objects.filter(
            bisection_step__bisection_id__in=list(ended)).values_list("bisection_step__bisection_id", "started_at",
                                                                       "finished_at"):
        seconds[bisection_id] += _seconds(started, finished) or 0.0
    return [BisectionEnd(ended_at=at, found=pk in found, machine_seconds=seconds[pk]) for pk, at in ended.items()]


def night_culprits(first_run_ids) -> dict[int, Culprit]:
    """The culprit named for each night (an alert's first run) by its newest bisection that found one (the history
    chart's marks, registered with :func:`results.extensions.add_culprits`); one query."""
    named = {}
    for run_id, commit, change, low, high in Bisection.objects.filter(
            alert__first_run__in=list(first_run_ids), status=BisectionStatus.FOUND).order_by("finished_at").values_list(
            "alert__first_run_id", "culprit", "change", "low", "high"):
        named[run_id] = Culprit(commit=commit, change=change, low=low, high=high)
    return named
