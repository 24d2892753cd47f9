"""A bisection in words, the same on the alert page, in its notification and in its JSON: what each step decided,
with its change, readings and machine time, and what the bisection found (the only place they are worded)."""

from collections.abc import Iterable
from dataclasses import dataclass

from results.presentation import short_commit, single_line
from results.stats import AT_LEVEL, MOVED, format_change

from ..models import Bisection, BisectionStatus, BisectionStep, Session
from ..session.levels import NOT_REPRODUCED
from .plan import VERIFY

__all__ = ["StepRow", "machine_seconds", "relative_change", "session_seconds", "step_rows", "summary"]


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
    rounds: int
    seconds: float | None


def relative_change(change: float | None, low: float | None, high: float | None) -> str:
    """A relative change and its interval as every page writes a change ("+10.2% [+8.9%, +11.4%]"); empty for none."""
    if change is None:
        return ""
    return format_change(1.0 + change, None if low is None else 1.0 + low, None if high is None else 1.0 + high)


def session_seconds(session: Session) -> float | None:
    """A session's machine time: from its start to its end (or to now's last heartbeat while it runs)."""
    end = session.finished_at or session.heartbeat_at
    if session.started_at is None or end is None:
        return None
    return max(0.0, (end - session.started_at).total_seconds())


def machine_seconds(sessions: Iterable[Session]) -> float:
    """The machine time of a bisection's sessions, together."""
    return sum(seconds for session in sessions if (seconds := session_seconds(session)) is not None)


def step_rows(bisection: Bisection, steps: Iterable[BisectionStep]) -> list[StepRow]:
    """The steps (with their sessions loaded) as rows, in the order they ran."""
    commits = bisection.commits
    return [StepRow(position=step.position + 1, role=step.role,
                    commit=commits[step.candidate] if step.candidate < len(commits) else "",
                    session_id=step.session_id, status=step.session.get_status_display(),
                    decision=_decision(step), change=relative_change(step.change, step.low, step.high),
                    rounds=step.rounds, seconds=session_seconds(step.session))
            for step in steps]


def _decision(step: BisectionStep) -> str:
    if not step.decision:
        return "failed: stepped over" if step.session.status == "failed" else "measuring" if not step.session.finished \
            else "no decision"
    if step.decision == NOT_REPRODUCED:
        return "its parent is at the bad level" if step.role == VERIFY and step.position else \
            "the ends read as one level: not reproduced"
    if step.decision == MOVED:
        return "moved: at the bad level"
    if step.decision == AT_LEVEL:
        return "at the good level"
    return "undecided: too noisy"


def summary(bisection: Bisection, *, seconds: float | None = None) -> str:
    """What a bisection found, in one line: "culprit 3f2a9c1c0e1d: +10.2% [+8.9%, +11.4%] over its parent" or
    "not isolated: … (range 3f2a…–9b1c…)"."""
    count = len(bisection.commits)
    spent = f"; {seconds / 60:.1f} min of machine time" if seconds else ""
    match bisection.status:
        case BisectionStatus.FOUND:
            change = relative_change(bisection.change, bisection.low, bisection.high)
            return (f"culprit {short_commit(bisection.culprit)}: {change or 'a change'} over its parent, "
                    f"among {count - 1} commits{spent}")
        case BisectionStatus.NOT_ISOLATED:
            return f"not isolated among {count - 1} commits: {single_line(bisection.reason)}{spent}"
        case BisectionStatus.LISTING:
            return "listing its range on the machine"
        case BisectionStatus.RUNNING:
            return f"narrowing {count - 1} commits ({short_commit(bisection.last_good)}…" \
                   f"{short_commit(bisection.first_bad)}){spent}"
    return f"{bisection.get_status_display()}: {single_line(bisection.reason)}{spent}"
