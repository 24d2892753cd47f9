"""The session loop: run a round, analyse, stop when every target is met or the budget is spent."""

import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .analysis import Analyser, Progress
from .levels import LevelDecision
from .plan import growth_needed, work_amount_plan
from .rounds import RoundOutcome, RoundRecord, check_outcome, check_record
from .targets import MetricSpec, SessionTargets, check_metrics

NO_DIFFERENCE_RESOLVED = "No difference resolved within budget."


class SessionStatus(enum.StrEnum):
    """How a session ended.

    ``CONVERGED`` and ``BUDGET_EXHAUSTED`` end single-workload sessions; ``RESOLVED`` and
    ``UNRESOLVED`` ("no difference resolved within budget", never "equal") end comparisons.
    """

    CONVERGED = "converged"
    BUDGET_EXHAUSTED = "budget_exhausted"
    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class SessionOutcome:
    """The result of :func:`run_session`.

    Attributes
    ----------
    status : SessionStatus
    estimates : dict of str to dict of str to MetricEstimate
        ``estimates[workload][metric]`` after the last round.
    comparisons : list of PairComparison
        Adjacent pairs per metric, best first (comparison sessions only).
    additional_seconds_needed : float or None
        When the budget ran out: the further time the §3 rule estimates (samples still needed × seconds
        per sample); for undecided pairs, the time until the comparison could decide a difference of θ
        either way; None otherwise or when unknown.
    rounds : list of RoundRecord
        Every round, the resumed ones included.
    elapsed : float
        Session seconds (stored rounds' durations plus this run's clock time).
    message : str
    phases : dict
        Each round's stable phase as the session found it, by (round index, workload, metric): what the
        session's stored samples are made of, so that storing them runs no EDM again (:func:`analysed_samples`).
    level : LevelDecision or None
        A bisection's session: which level its candidate is at (:mod:`.levels`).
    """

    status: SessionStatus
    estimates: dict
    comparisons: list
    additional_seconds_needed: float | None
    rounds: list
    elapsed: float
    message: str = ""
    phases: dict = field(default_factory=dict)
    level: LevelDecision | None = None


def run_session(
    workloads: Mapping[str, Callable[[float], RoundOutcome]],
    metrics: Sequence[MetricSpec],
    targets: SessionTargets,
    *,
    previous_rounds: Sequence[RoundRecord] = (),
    on_round: Callable[[RoundRecord, Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SessionOutcome:
    """Run rounds until every CI reaches its target, the comparison is resolved, or the budget ends.

    One workload: rounds are planned by :func:`work_amount_plan` and the session stops when every
    metric has converged (Pilot §III-E). Two or more workloads: rounds are interleaved,
    A1 B1 C1 A2 B2 C2 …, and the session stops after a complete cycle when every CI can be computed,
    every adjacent pair by mean is decided by ``targets.comparison_rule`` (:func:`compare`; by default
    anytime-valid, so looking after every cycle costs no false decisions), and, if
    ``targets.require_width_in_comparison``, every CI is narrow enough (Pilot §III-F; spec §5). A bisection's
    session (``targets.level_check``) reads the commits its level test asks for each round and stops after a
    round once the candidate's level is decided (:func:`.levels.follow_level`).

    Parameters
    ----------
    workloads : mapping of str to callable
        ``workload(work_amount) -> RoundOutcome``; interleaved in mapping order.
    metrics : sequence of MetricSpec
        Every round must give a reading for each.
    targets : SessionTargets
    previous_rounds : sequence of RoundRecord, optional
        Rounds of an interrupted session, in order: they are re-analysed and the work-amount
        sequence continues after them.
    on_round : callable, optional
        ``on_round(record, progress)``, called after every round before the next starts (persist
        the round there).
    should_stop : callable, optional
        Polled before every round; True cancels the session.
    clock : callable, optional
        Seconds, monotonic; inject a fake one to simulate time.

    Returns
    -------
    SessionOutcome

    Notes
    -----
    The time budget counts the stored rounds' durations plus this run's clock time, so a resumed
    session does not restart its budget. Exceptions from a workload propagate; the rounds already
    passed to `on_round` are what a resumed session continues from.
    """
    if not workloads:
        raise ValueError("A session needs at least one workload.")
    metrics = check_metrics(metrics)
    names = list(workloads)
    rounds = [check_record(record, names, metrics) for record in previous_rounds]
    analyser = Analyser(metrics, targets)
    comparing = len(names) > 1
    prior_seconds = sum(record.outcome.duration for record in rounds)
    started = clock()

    def elapsed():
        return prior_seconds + (clock() - started)

    state = analyser.state(rounds, comparing=comparing)
    status = None
    while True:
        cycle_done, name = state.next_reading(names)
        if rounds and cycle_done and state.done:
            status = SessionStatus.RESOLVED if comparing else SessionStatus.CONVERGED
            break
        if len(rounds) >= targets.budget_rounds or elapsed() >= targets.budget_seconds:
            status = SessionStatus.UNRESOLVED if comparing else SessionStatus.BUDGET_EXHAUSTED
            break
        if should_stop is not None and should_stop():
            status = SessionStatus.CANCELLED
            break
        mine, floor, cap = state.work_plan(name)
        work_amount = work_amount_plan(mine, targets, floor=floor, cap=cap)
        outcome = workloads[name](work_amount)
        check_outcome(outcome, name, metrics)
        record = RoundRecord(
            index=len(rounds),
            workload=name,
            work_amount=work_amount,
            outcome=outcome,
            # At the top of the valid range no longer round is allowed: its rounds are used, short or not.
            analysed=growth_needed(outcome, targets) == 1.0 or work_amount >= targets.work_range[1],
        )
        rounds.append(record)
        state = analyser.state(rounds, comparing=comparing)
        if on_round is not None:
            on_round(record, state.progress(len(rounds), elapsed()))

    exhausted = status in (SessionStatus.UNRESOLVED, SessionStatus.BUDGET_EXHAUSTED)
    message = ""
    if status is SessionStatus.UNRESOLVED:
        message = NO_DIFFERENCE_RESOLVED
    elif status is SessionStatus.BUDGET_EXHAUSTED:
        message = "Budget exhausted before every CI reached the target width."
    return SessionOutcome(
        status=status,
        estimates=state.estimates,
        comparisons=list(state.comparisons),
        additional_seconds_needed=state.remaining_seconds if exhausted else None,
        rounds=rounds,
        elapsed=elapsed(),
        message=message,
        phases=dict(analyser.phases),
        level=state.level,
    )
