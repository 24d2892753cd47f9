"""Writes of the runner: jobs and their schedules, starting, cancelling and recovering sessions, the A/B
sessions that confirm alerts, and a finished session's stored analysis. What a bench worker does with a session
it is sent is :mod:`runner.execution`.

Only staff may define, change or schedule a job, or start or cancel its sessions: a job runs
commands on benchmark machines.
"""

import json
from collections import defaultdict
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from django_celery_beat.validators import crontab_validator

from results import confirmations
from results.identifiers import check_branch, check_commit
from results.models import Alert, Run, RunKind

from . import dispatch, replay, trust, workloads
from .models import Job, Session, SessionAnalysis, SessionStatus, SessionTrigger

STAFF_ONLY = "Only staff may define, schedule, start or cancel benchmark jobs."
HEARTBEAT_STALE_AFTER = timedelta(minutes=2)
MAX_ATTEMPTS = 3
RESEND_AFTER = timedelta(minutes=1)
NOT_SENT = ("Queued, but the broker is unreachable: the session will be sent to its machine as soon as the broker "
            "is back (recovery runs every minute).")
JOB_FIELDS = {
    "project", "name", "benchmark", "machine", "workload_kind", "builtin", "parameters", "command", "setup_command",
    "working_directory", "environment", "reading_mode", "metrics", "round_timeout", "confidence_level",
    "target_width", "max_autocorrelation", "work_min", "work_max", "min_round_duration", "budget_seconds",
    "budget_rounds", "warmup", "component", "overhead_rounds", "enabled", "comparison_alpha", "comparison_threshold",
    "comparison_rule", "require_width_in_comparison", "repository", "trusted_branch", "allow_pull_requests",
}


def _require_staff(user: AbstractBaseUser | None) -> None:
    if user is None or not user.is_active or not user.is_staff:
        raise PermissionDenied(STAFF_ONLY)


@transaction.atomic
def create_job(*, user: AbstractBaseUser, cron: str = "", **fields) -> Job:
    """Define a job (staff only); ``cron`` ("m h dom mon dow"), when given, schedules it."""
    _require_staff(user)
    unknown = set(fields) - JOB_FIELDS
    if unknown:
        raise TypeError(f"unknown job fields: {', '.join(sorted(unknown))}")
    job = Job(**fields, created_by=user)
    job.full_clean()
    job.save()
    if cron:
        set_schedule(job=job, cron=cron, user=user)
    return job


@transaction.atomic
def update_job(*, job: Job, user: AbstractBaseUser, cron: str | None = None, **fields) -> Job:
    """Change a job (staff only); with ``cron``, its schedule too: both change or neither does."""
    _require_staff(user)
    unknown = set(fields) - JOB_FIELDS
    if unknown:
        raise TypeError(f"unknown job fields: {', '.join(sorted(unknown))}")
    for name, value in fields.items():
        setattr(job, name, value)
    job.full_clean()
    job.save()
    if job.schedule is not None and job.schedule.enabled != job.enabled:
        PeriodicTask.objects.filter(pk=job.schedule.pk).update(enabled=job.enabled)
    if cron is not None:
        set_schedule(job=job, cron=cron, user=user)
    return job


@transaction.atomic
def set_schedule(*, job: Job, cron: str, user: AbstractBaseUser) -> PeriodicTask | None:
    """Schedule ``job`` by a cron expression, or remove its schedule when ``cron`` is empty.

    Schedules are django-celery-beat rows, read by the beat scheduler while it runs.
    """
    _require_staff(user)
    if not cron.strip():
        if job.schedule is not None:
            job.schedule.delete()
        return None
    try:
        crontab_validator(cron)
    except ValidationError as error:
        raise ValidationError({"cron": error.messages}) from None
    minute, hour, day_of_month, month_of_year, day_of_week = cron.split()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month_of_year, day_of_week=day_of_week,
        timezone=timezone.get_current_timezone_name(),
    )
    task, _ = PeriodicTask.objects.update_or_create(
        name=f"Benchmark job #{job.pk}",
        defaults={"task": "runner.tasks.start_scheduled_session", "crontab": crontab, "interval": None,
                  "args": json.dumps([job.pk]), "enabled": job.enabled, "queue": "analysis"},
    )
    if job.schedule_id != task.pk:
        job.schedule = task
        job.save(update_fields=["schedule"])
    return task


def start_session(*, job: Job, user: AbstractBaseUser | None, trigger: str = SessionTrigger.MANUAL,
                  run_kind: str = RunKind.MANUAL, revisions: list[dict] | None = None) -> Session:
    """Queue a session of ``job`` on its machine's queue ("run now", a schedule, or a confirmation).

    ``revisions`` with two or more entries makes an interleaved comparison session.
    Scheduled and confirmation sessions are started by the system (``user`` None).
    """
    if trigger == SessionTrigger.MANUAL:
        _require_staff(user)
    _check_revisions(revisions or [])
    if trigger == SessionTrigger.MANUAL:
        revisions = [{**entry, "trust": {"vouched": f"started by {user.get_username()}"}} for entry in revisions or []]
    with transaction.atomic():
        session = Session.objects.create(job=job, trigger=trigger, run_kind=run_kind, revisions=revisions or [],
                                         requested_by=user if trigger == SessionTrigger.MANUAL else None)
        send_on_commit(session)
    return session


def _check_revisions(revisions: list[dict]) -> None:
    labels = [entry.get("label") for entry in revisions]
    if len(set(labels)) != len(labels) or any(not label for label in labels):
        raise ValidationError({"revisions": "every revision needs a distinct, non-empty label"})
    for index, entry in enumerate(revisions):
        try:
            if entry.get("commit"):
                check_commit(entry["commit"])
            check_branch(entry.get("branch", ""))
        except ValueError as error:
            raise ValidationError({"revisions": f"revisions[{index}]: {error}"}) from None


def send_on_commit(session: Session) -> None:
    """Send a session created in the current transaction to its machine's queue once the transaction commits."""
    session_id, attempt, queue = session.pk, session.attempt, session.job.machine.queue
    transaction.on_commit(lambda: _send(session_id=session_id, attempt=attempt, queue=queue))


def _send(*, session_id: int, attempt: int, queue: str) -> bool:
    """Hand the session to the broker and record when; an unreachable broker leaves it to recovery."""
    if not dispatch.send(session_id=session_id, attempt=attempt, queue=queue):
        return False
    Session.objects.filter(pk=session_id, attempt=attempt, status=SessionStatus.QUEUED).update(sent_at=timezone.now())
    return True


def cancel_session(*, session: Session, user: AbstractBaseUser) -> Session:
    """Cancel a queued or running session; a running workload's process group is killed now."""
    _require_staff(user)
    session, process_group = _request_cancel(session)
    if process_group:
        workloads.kill_process_group(process_group)
    return session


def request_cancel(*, session: Session) -> Session:
    """Cancel a queued session now, or ask its worker to stop a running one at its next round (it reads the
    request as it goes); whoever may (the callers check). Nothing is killed from here: the workload runs on its
    benchmark machine."""
    return _request_cancel(session)[0]


def _request_cancel(session: Session) -> tuple[Session, int | None]:
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        if session.finished:
            return session, None
        if session.status == SessionStatus.QUEUED:
            session.status, session.finished_at = SessionStatus.CANCELLED, timezone.now()
            session.save(update_fields=["status", "finished_at"])
            return session, None
        session.cancel_requested = True
        session.save(update_fields=["cancel_requested"])
        return session, session.process_group


def recover_stale_sessions(*, now=None) -> list[Session]:
    """Resume sessions whose worker died (no heartbeat for a while) from their stored rounds, or mark
    them failed, keeping their rounds, once ``MAX_ATTEMPTS`` attempts have died; then send again the
    queued sessions whose message the broker lost (:func:`resend_lost_sessions`)."""
    now = now or timezone.now()
    recovered = []
    stale = Session.objects.filter(status=SessionStatus.RUNNING, heartbeat_at__lt=now - HEARTBEAT_STALE_AFTER)
    for session_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            session = Session.objects.select_for_update().select_related("job__machine").get(pk=session_id)
            if session.status != SessionStatus.RUNNING or session.heartbeat_at >= now - HEARTBEAT_STALE_AFTER:
                continue
            # Attempts are numbered from 0: attempt MAX_ATTEMPTS - 1 is the last one.
            if session.attempt + 1 >= MAX_ATTEMPTS:
                session.status, session.finished_at = SessionStatus.FAILED, now
                session.error = (f"The worker stopped sending heartbeats in all {MAX_ATTEMPTS} attempts; "
                                 f"the {session.rounds.count()} rounds measured are kept.")
                session.save(update_fields=["status", "finished_at", "error"])
            else:
                session.status, session.attempt, session.process_group = SessionStatus.QUEUED, session.attempt + 1, None
                session.sent_at = None
                session.save(update_fields=["status", "attempt", "process_group", "sent_at"])
                send_on_commit(session)
            recovered.append(session)
    return recovered + resend_lost_sessions(now=now)


def resend_lost_sessions(*, now=None) -> list[Session]:
    """Send again the queued sessions the broker does not hold: never sent (the broker was unreachable)
    or lost (a broker restarted without persistence). Only sessions queued or sent more than
    ``RESEND_AFTER`` ago are considered, so a message on its way to a worker is not taken for lost; a
    session sent twice still runs once (a delivery runs only if it claims the session's attempt)."""
    now = now or timezone.now()
    waiting = list(
        Session.objects.filter(status=SessionStatus.QUEUED)
        .filter(Q(sent_at__isnull=True, queued_at__lt=now - RESEND_AFTER) | Q(sent_at__lt=now - RESEND_AFTER))
        .select_related("job__machine")
    )
    if not waiting:
        return []
    held = dispatch.held_task_ids({session.job.machine.queue for session in waiting})
    if held is None:
        return []
    lost = [session for session in waiting if dispatch.task_id(session.pk, session.attempt) not in held]
    return [session for session in lost
            if _send(session_id=session.pk, attempt=session.attempt, queue=session.job.machine.queue)]


@transaction.atomic
def store_session_analysis(*, session: Session, workload: str,
                           metrics: dict[str, replay.MetricAnalysis]) -> SessionAnalysis:
    """Add one workload's metrics to a finished session's stored analysis: what a run page replayed for a
    session finished before the analysis was stored at its end (manage.py store_session_analyses)."""
    stored, _ = SessionAnalysis.objects.select_for_update().get_or_create(session=session)
    stored.workloads = {**stored.workloads, workload: {
        **stored.workloads.get(workload, {}), **{name: analysis.as_json() for name, analysis in metrics.items()}}}
    stored.save(update_fields=["workloads", "updated_at"])
    return stored


def confirm_alerts(*, alert_ids: list[int]) -> list[Session]:
    """Re-measure flagged changes with an interleaved A/B session (Pilot §III-F), baseline revision vs
    candidate revision, when the project has a job for the flagged benchmark; one session per job. A revision
    is measured only as :mod:`runner.trust` allows; an alert that gets no session says why."""
    alerts = list(Alert.objects.filter(pk__in=alert_ids, confirmations__isnull=True)
                  .select_related("comparison__candidate__run__revision", "comparison__candidate__metric__benchmark",
                                  "comparison__baseline__run__revision", "comparison__candidate__run__project"))
    # The jobs and the history runs the alerts need, read once (a nightly opens many alerts at a time).
    jobs: dict[tuple[int, str], Job] = {}
    for job in (Job.objects.select_related("machine", "project").filter(
            project_id__in={alert.comparison.candidate.run.project_id for alert in alerts}, enabled=True,
            benchmark__in={alert.comparison.candidate.metric.benchmark.name for alert in alerts}).order_by("pk")):
        jobs.setdefault((job.project_id, job.benchmark), job)
    newest_history = {alert.pk: (alert.comparison.inputs.get("history_runs") or [None])[0] for alert in alerts
                      if alert.comparison.baseline is None}
    history = Run.objects.select_related("revision").in_bulk([pk for pk in newest_history.values() if pk])
    started, seen, notes = [], set(), defaultdict(list)
    for alert in alerts:
        comparison = alert.comparison
        run = comparison.candidate.run
        benchmark = comparison.candidate.metric.benchmark.name
        job = jobs.get((run.project_id, benchmark))
        baseline = comparison.baseline.run if comparison.baseline is not None else history.get(
            newest_history[alert.pk])
        if job is None:
            notes[f"no enabled job of project {run.project.slug} runs benchmark {benchmark}"].append(alert.pk)
            continue
        if job.pk in seen:
            continue
        if baseline is None:
            notes["no earlier run of the series to re-measure against"].append(alert.pk)
            continue
        judged = [(label, measured, trust.judge_posted(job=job, run=measured))
                  for label, measured in (("baseline", baseline), ("candidate", run))]
        refused = [f"{label}: {decision.refused}" for label, _, decision in judged if decision.refused]
        if refused:
            notes["not re-measured, " + "; ".join(refused)].append(alert.pk)
            continue
        seen.add(job.pk)
        revisions = [{"label": label, "commit": measured.revision.commit, "branch": measured.revision.branch,
                      "trust": decision.as_json()} for label, measured, decision in judged]
        with transaction.atomic():
            session = Session.objects.create(job=job, trigger=SessionTrigger.CONFIRMATION,
                                             run_kind=RunKind.CONFIRMATION,
                                             revisions=revisions, confirms=alert)
            send_on_commit(session)
        started.append(session)
    for note, ids in notes.items():
        confirmations.note_unconfirmed(alert_ids=ids, note=note)
    return started
