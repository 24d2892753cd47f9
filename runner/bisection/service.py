"""Writes of a bisection: start one for a confirmed regression, list its range on the benchmark machine, and after
each of its sessions run the next one the plan asks for (:func:`runner.bisection.plan.next_step`), or record what
it found. Its state is its steps: a bisection whose worker died, or whose broker restarted, is advanced again from
them (:func:`advance`, also called by the periodic catch-up)."""

import logging

from django.core.exceptions import PermissionDenied, ValidationError
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from results import access
from results.decisions import ALPHA, CHANGE_SIDES
from results.models import Alert, AlertState, AlertStatus, Direction, Project, Run, RunKind, nights_before
from results.queue import enqueue

from .. import trust
from ..models import (
    FINISHED_STATUSES,
    Bisection,
    BisectionStatus,
    BisectionStep,
    Job,
    Round,
    Session,
    SessionStatus,
    SessionTrigger,
)
from ..services import request_cancel, send_on_commit
from ..session.levels import CANDIDATE, MOVED_END, REFERENCE, LevelCheck
from . import notify
from .notify import TOLD
from .plan import MIDDLE, Measure, Step, next_step

logger = logging.getLogger(__name__)

LIST_RANGE = "runner.tasks.list_bisection_range"
ADVANCE = "runner.tasks.advance_bisection"
NOTIFY = "runner.tasks.notify_bisection"
START = "runner.tasks.start_bisections"
MAY_NOT_START = "Only staff and the project's maintainers may start a bisection."
MAY_NOT_CANCEL = "Only staff and the project's maintainers may cancel a bisection."
ACTIVE = (BisectionStatus.LISTING, BisectionStatus.RUNNING)
SETTLED = (*ACTIVE, BisectionStatus.FOUND)
"""A night with a bisection in these is not bisected again (one that found nothing, failed or was cancelled may be)."""
LIST_AGAIN_AFTER = timedelta(minutes=5)
"""A bisection still listing its range this long after it started has its listing sent again."""
AUTOMATIC_WITHIN = timedelta(days=7)
"""How long after its alert opened a regression is still bisected automatically (an older one, asked by hand)."""


@transaction.atomic
def start_bisection(*, alert: Alert, user, alpha: float = ALPHA) -> Bisection:
    """Start a bisection of a confirmed nightly regression (`user` may triage its project), with the enabled job
    of its project that runs its benchmark on its machine and builds the revision it is given; ValidationError
    says why one cannot start."""
    project = Project.objects.get(runs__alert_group__alerts=alert)
    if user is None or not user.is_authenticated or not access.allowed(user, "triage", project):
        raise PermissionDenied(MAY_NOT_START)
    return _start(alert, requested_by=user, alpha=alpha)


def bisect_confirmed() -> list[Bisection]:
    """Start the bisections projects ask for (``Project.bisect_regressions``): one a night and machine (the
    night's series share it), for its largest confirmed nightly regression that a job can bisect, once no A/B
    session re-measuring it is still to finish, within :data:`AUTOMATIC_WITHIN` of its opening. Called after a
    confirmation session settles its alert, and by the periodic catch-up."""
    bisected = Bisection.objects.filter(alert__first_run=OuterRef("first_run"))
    measuring = Session.objects.filter(confirms=OuterRef("pk")).exclude(status__in=FINISHED_STATUSES)
    candidates = (Alert.objects.filter(group__run__project__bisect_regressions=True, state=AlertState.CONFIRMED,
                                       status__in=(AlertStatus.NEW, AlertStatus.ACKNOWLEDGED),
                                       first_run__isnull=False,
                                       created_at__gte=timezone.now() - AUTOMATIC_WITHIN)
                  .exclude(group__run__kind=RunKind.PR).exclude(Exists(bisected)).exclude(Exists(measuring))
                  .select_related("comparison").order_by())
    nights: dict[int, list[Alert]] = {}
    for alert in candidates:
        if CHANGE_SIDES.get(alert.comparison.verdict) == "regression":
            nights.setdefault(alert.first_run_id, []).append(alert)
    started = []
    for alerts in nights.values():
        for alert in sorted(alerts, key=lambda found: -abs((found.comparison.ratio or 1.0) - 1.0)):
            try:
                with transaction.atomic():
                    started.append(_start(alert, requested_by=None))
                break
            except ValidationError:
                continue
    return started


def refusal(alert: Alert) -> str:
    """Why the alert itself cannot be bisected ("" where it can): only a confirmed regression of a nightly series,
    with a change to look for. (Its comparison and its group's run loaded.)"""
    if alert.group.run.kind == RunKind.PR or alert.state != AlertState.CONFIRMED \
            or CHANGE_SIDES.get(alert.comparison.verdict) != "regression" or alert.first_run_id is None:
        return "Only a confirmed regression of a nightly series is bisected."
    if alert.comparison.ratio is None or alert.comparison.ratio == 1.0:
        return "Its comparison has no change to look for."
    return ""


def bisects(job: Job, metric: str) -> bool:
    """Whether `job` can bisect a series of its benchmark and machine: enabled, building the revision it is given
    from its repository, and reading `metric`."""
    return job.enabled and trust.builds_revisions(job) and bool(trust.repository(job)) \
        and metric in {spec.name for spec in job.metric_specs()}


def _start(alert: Alert, *, requested_by, alpha: float = ALPHA) -> Bisection:
    alert = Alert.objects.select_related("comparison__candidate__metric__benchmark__project", "first_run__machine",
                                         "first_run__revision", "group__run").get(pk=alert.pk)
    metric = alert.comparison.candidate.metric
    project = metric.benchmark.project
    if refused := refusal(alert):
        raise ValidationError({"alert": refused})
    # The night's run, locked: two starts at once (the catch-up, a maintainer's click) make one bisection.
    list(Run.objects.select_for_update().filter(pk=alert.first_run_id).values_list("pk", flat=True))
    shared = Bisection.objects.filter(alert__first_run=alert.first_run_id, status__in=SETTLED).first()
    if shared is not None:
        doing = "is being bisected already" if shared.status in ACTIVE else "had its culprit found"
        raise ValidationError({"alert": f"Its night on {alert.first_run.machine.name} {doing} (bisection "
                                        f"#{shared.pk}, of alert #{shared.alert_id})."})
    first_bad = alert.first_run.revision.commit if alert.first_run.revision else ""
    last_good = nights_before(alert.first_run).filter(revision__isnull=False).values_list(
        "revision__commit", flat=True).first()
    if not first_bad or not last_good:
        raise ValidationError({"alert": "Its first bad night or the last good one before it names no commit."})
    job = next((job for job in Job.objects.select_related("machine").filter(
        project=project, machine=alert.first_run.machine, benchmark=metric.benchmark.name).order_by("pk")
        if bisects(job, metric.name)), None)
    if job is None:
        raise ValidationError({"alert": f"No enabled job of project {project.slug} builds a revision of benchmark "
                                        f"{metric.benchmark.name} on {alert.first_run.machine.name} from its "
                                        f"repository and reads {metric.name}: nothing to bisect with."})
    bisection = Bisection.objects.create(
        alert=alert, job=job, metric=metric.name, alpha=alpha, last_good=last_good, first_bad=first_bad,
        direction=1 if metric.direction == Direction.LOWER_IS_BETTER else -1,
        expected=abs(alert.comparison.ratio - 1.0), requested_by=requested_by)
    queue = job.machine.queue
    transaction.on_commit(lambda: enqueue(LIST_RANGE, bisection.pk, queue=queue))
    return bisection


@transaction.atomic
def cancel_bisection(*, bisection: Bisection, user) -> Bisection:
    """Cancel a bisection under way (`user` may triage its project): its session queued or running is cancelled
    with it, and no other starts."""
    bisection = Bisection.objects.select_for_update().select_related("job__project").get(pk=bisection.pk)
    if user is None or not user.is_authenticated or not access.allowed(user, "triage", bisection.job.project):
        raise PermissionDenied(MAY_NOT_CANCEL)
    if bisection.status not in ACTIVE:
        return bisection
    for session in Session.objects.filter(bisection_step__bisection=bisection).exclude(
            status__in=FINISHED_STATUSES):
        request_cancel(session=session)
    return _end(bisection, BisectionStatus.CANCELLED, reason=f"cancelled by {user.get_username()}")


def list_range(*, bisection_id: int) -> Bisection:
    """On the benchmark machine: the bisection's range on the job's trusted branch (:func:`runner.trust.
    commit_range`), then its first session; a range that cannot be listed fails it, saying why."""
    bisection = Bisection.objects.select_related("job__project").get(pk=bisection_id)
    if bisection.status != BisectionStatus.LISTING:
        return bisection
    try:
        commits = trust.commit_range(bisection.job, bisection.last_good, bisection.first_bad)
    except trust.UntrustedRevision as error:
        return _end(bisection, BisectionStatus.FAILED, reason=f"The range could not be listed: {error}")
    Bisection.objects.filter(pk=bisection.pk, status=BisectionStatus.LISTING).update(
        commits=commits, status=BisectionStatus.RUNNING)
    return advance(bisection_id=bisection.pk)


@transaction.atomic
def advance(*, bisection_id: int) -> Bisection:
    """Record the finished sessions' decisions and run the next session the plan asks for, or record what the
    bisection found. Nothing happens while a session of it is still queued or running."""
    bisection = Bisection.objects.select_for_update().select_related("job__machine", "job__project").get(
        pk=bisection_id)
    if bisection.status != BisectionStatus.RUNNING:
        return bisection
    steps = list(bisection.steps.select_related("session").order_by("position"))
    if any(step.session.status not in FINISHED_STATUSES for step in steps):
        return bisection
    failed = list(bisection.failed)
    decided = []
    for step in steps:
        if not step.decision:
            _record(step, failed)
        if step.decision:
            decided.append(Step(step.role, step.reference, step.candidate, step.moved, step.decision,
                                step.change, step.low, step.high, step.rounds))
    stopped = next((step for step in steps if not step.decision and step.candidate not in failed), None)
    if stopped is not None:
        session = stopped.session
        return _end(bisection, BisectionStatus.CANCELLED if session.status == SessionStatus.CANCELLED
                    else BisectionStatus.FAILED, reason=(
                        f"session #{session.pk} ({stopped.role} of commit {stopped.candidate}) ended "
                        f"{session.get_status_display()}: {session.error or session.outcome.get('message', '')}"))
    if failed != bisection.failed:
        bisection.failed = failed
        bisection.save(update_fields=["failed"])
    planned = next_step(commits=len(bisection.commits), steps=decided, failed=set(failed), alpha=bisection.alpha)
    if not isinstance(planned, Measure):
        culprit = bisection.commits[planned.culprit] if planned.culprit is not None else ""
        if not culprit:
            bisection.narrowed = [planned.last_good, planned.first_bad]
            bisection.save(update_fields=["narrowed"])
        return _end(bisection, BisectionStatus.FOUND if culprit else BisectionStatus.NOT_ISOLATED, culprit=culprit,
                    change=planned.change, low=planned.low, high=planned.high, reason=planned.reason)
    _start_step(bisection, planned, position=len(steps))
    return bisection


def level_check(session: Session) -> LevelCheck | None:
    """What a bisection's session decides (its targets' :class:`runner.session.levels.LevelCheck`), with the
    readings its reference and first bad commit gave in the bisection's earlier sessions; None for any other
    session."""
    step = BisectionStep.objects.select_related("bisection").filter(session=session).first()
    if step is None:
        return None
    bisection = step.bisection
    commits = bisection.commits
    wanted = {commits[step.reference]: [], commits[step.moved]: []}
    labels = {earlier.session_id: {REFERENCE: commits[earlier.reference], CANDIDATE: commits[earlier.candidate],
                                   MOVED_END: commits[earlier.moved]}
              for earlier in bisection.steps.filter(position__lt=step.position)}
    # The earlier sessions' rounds in one query, in the order the sessions and their rounds ran.
    for session_id, workload, readings in Round.objects.filter(session_id__in=labels, analysed=True).order_by(
            "session_id", "index").values_list("session_id", "workload", "readings"):
        commit = labels[session_id].get(workload)
        if commit in wanted and bisection.metric in readings:
            wanted[commit].append(float(readings[bisection.metric]))
    return LevelCheck(metric=bisection.metric, alpha=step.alpha, direction=bisection.direction,
                      expected=bisection.expected, check_ends=step.check_ends,
                      earlier=(tuple(wanted[commits[step.reference]]), tuple(wanted[commits[step.moved]])))


def after_session(session: Session) -> None:
    """A bisection's session ended: advance its bisection once this commits (on the analysis worker)."""
    bisection_id = BisectionStep.objects.filter(session=session).values_list("bisection_id", flat=True).first()
    if bisection_id is not None:
        transaction.on_commit(lambda: enqueue(ADVANCE, bisection_id))


def after_settling(session: Session) -> None:
    """A confirmation session settled its alert: if its project bisects automatically, start what it may once
    this commits."""
    if session.job.project.bisect_regressions:
        transaction.on_commit(lambda: enqueue(START))


def catch_up() -> None:
    """The periodic catch-up: listings and advances lost with a worker or the broker, the regressions projects
    bisect automatically, and the tellings due. Each part runs whatever another raised (logged): one bisection in
    a state no code foresaw must not stop every other's."""
    _isolated("listing again", list_again)
    for pk in _running():
        _isolated(f"advancing bisection #{pk}", lambda: advance(bisection_id=pk))  # noqa: B023 (called at once)
    _isolated("starting the automatic bisections", bisect_confirmed)
    for pk in notify.pending_notifications():
        _isolated(f"telling bisection #{pk}", lambda: notify.notify_bisection(bisection_id=pk))  # noqa: B023


def _isolated(what: str, part) -> None:
    try:
        part()
    except Exception:
        logger.exception("bisection catch-up: %s failed", what)


def _running() -> list[int]:
    return list(Bisection.objects.filter(status=BisectionStatus.RUNNING).values_list("pk", flat=True))


def list_again(*, older_than: timedelta = LIST_AGAIN_AFTER) -> list[int]:
    """Send again the listing of bisections still listing their range after `older_than` (its message lost with
    the broker, or its worker killed); listing twice lists once (:func:`list_range` goes on from LISTING only)."""
    now = timezone.now()
    stale = list(Bisection.objects.filter(status=BisectionStatus.LISTING, list_sent_at__lt=now - older_than)
                 .select_related("job__machine"))
    for bisection in stale:
        # Once per `older_than`: a machine busy with a long session gets one more message, not one a tick.
        if Bisection.objects.filter(pk=bisection.pk, list_sent_at=bisection.list_sent_at).update(list_sent_at=now):
            enqueue(LIST_RANGE, bisection.pk, queue=bisection.job.machine.queue)
    return [bisection.pk for bisection in stale]


def _record(step: BisectionStep, failed: list[int]) -> None:
    """A finished session's decision, stored on its step (undecided where it ran out of budget); a middle
    candidate whose session failed (its build or its run) is stepped over."""
    session = step.session
    level = (session.outcome or {}).get("level") or {}
    if session.status in (SessionStatus.RESOLVED, SessionStatus.UNRESOLVED) and level.get("decision"):
        step.decision = level["decision"]
        step.change, step.low, step.high = level.get("change"), level.get("low"), level.get("high")
        step.rounds = level.get("rounds") or 0
        step.save(update_fields=["decision", "change", "low", "high", "rounds"])
    elif session.status == SessionStatus.FAILED and step.role == MIDDLE and step.candidate not in failed:
        failed.append(step.candidate)


def _start_step(bisection: Bisection, planned: Measure, *, position: int) -> None:
    commits = bisection.commits
    branch = trust.trusted_branch(bisection.job)
    vouched = {"vouched": f"on the trusted branch {branch}: bisection #{bisection.pk}'s range, listed on the machine"}
    revisions = [{"label": label, "commit": commits[index], "branch": branch, "trust": vouched}
                 for label, index in ((REFERENCE, planned.reference), (CANDIDATE, planned.candidate),
                                      (MOVED_END, planned.moved))]
    session = Session.objects.create(job=bisection.job, trigger=SessionTrigger.BISECTION,
                                     run_kind=RunKind.BISECTION, revisions=revisions)
    BisectionStep.objects.create(bisection=bisection, position=position, session=session, role=planned.role,
                                 reference=planned.reference, candidate=planned.candidate, moved=planned.moved,
                                 alpha=planned.alpha, check_ends=planned.check_ends)
    send_on_commit(session)


def _end(bisection: Bisection, status: str, *, culprit: str = "", change: float | None = None,
         low: float | None = None, high: float | None = None, reason: str = "") -> Bisection:
    bisection.status, bisection.finished_at = status, timezone.now()
    bisection.culprit, bisection.change, bisection.low, bisection.high = culprit, change, low, high
    bisection.reason = reason
    bisection.save(update_fields=["status", "finished_at", "culprit", "change", "low", "high", "reason"])
    logger.info("%s: %s %s", bisection, status, reason or culprit)
    if status in TOLD:
        transaction.on_commit(lambda: enqueue(NOTIFY, bisection.pk))
    return bisection
