"""Writes of the runner: jobs and their schedules, starting, cancelling and recovering sessions.

Only staff may define, change or schedule a job, or start or cancel its sessions: a job runs
commands on benchmark machines.
"""

import dataclasses
import json
import logging
import socket
import threading
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from django_celery_beat.validators import crontab_validator

from results import confirmations
from results import services as result_services
from results.identifiers import check_branch, check_commit
from results.machine_state import NEIGHBOUR_CORES
from results.models import SAMPLE_DTYPE, Alert, Run, RunKind
from results.schemas import RunIn

from . import dispatch, monitor, replay, trust, workloads
from . import session as session_loop
from .models import Job, Round, Session, SessionAnalysis, SessionStatus, SessionTrigger, WorkloadKind

logger = logging.getLogger(__name__)
STAFF_ONLY = "Only staff may define, schedule, start or cancel benchmark jobs."
STAFF_TRIGGERS = (SessionTrigger.MANUAL, SessionTrigger.SCHEDULE)
"""Sessions whose revisions staff chose (started by hand, or the job's own checkout on a schedule)."""
HEARTBEAT_INTERVAL = timedelta(seconds=20)
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
        _send_on_commit(session)
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


def _send_on_commit(session: Session) -> None:
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
    with transaction.atomic():
        session = Session.objects.select_for_update().get(pk=session.pk)
        if session.finished:
            return session
        if session.status == SessionStatus.QUEUED:
            session.status, session.finished_at = SessionStatus.CANCELLED, timezone.now()
            session.save(update_fields=["status", "finished_at"])
            return session
        session.cancel_requested = True
        session.save(update_fields=["cancel_requested"])
        process_group = session.process_group
    if process_group:
        workloads.kill_process_group(process_group)
    return session


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
                _send_on_commit(session)
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


class _Heartbeat(threading.Thread):
    """Refreshes a running session's heartbeat while a long round runs, so it is not taken for dead."""

    def __init__(self, session_id: int, interval: float) -> None:
        super().__init__(name=f"heartbeat-{session_id}", daemon=True)
        self.session_id, self.interval, self.stopped = session_id, interval, threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                Session.objects.filter(pk=self.session_id, status=SessionStatus.RUNNING).update(
                    heartbeat_at=timezone.now())
        finally:
            connection.close()


def execute_session(*, session_id: int, attempt: int) -> Session | None:
    """Run a queued session to its end on this worker: Pilot's loop (:mod:`runner.session`) with
    every finished round committed before the next starts, then the runs written in one transaction.

    A delivery whose ``attempt`` is not the session's current one (a redelivered message of a
    session that was since resumed, finished or cancelled) does nothing and returns None.
    """
    now = timezone.now()
    claimed = Session.objects.filter(pk=session_id, attempt=attempt, status=SessionStatus.QUEUED).update(
        status=SessionStatus.RUNNING, worker=socket.gethostname(), heartbeat_at=now,
        started_at=Coalesce("started_at", Value(now)),
    )
    if not claimed:
        logger.info("Session %s, attempt %s: not queued for this attempt; this delivery is skipped.",
                    session_id, attempt)
        return None
    logger.info("Session %s, attempt %s: claimed by this worker.", session_id, attempt)
    session = Session.objects.select_related("job__project", "job__machine").get(pk=session_id)
    job = session.job
    heartbeat = _Heartbeat(session.pk, HEARTBEAT_INTERVAL.total_seconds())
    heartbeat.start()
    monitored: dict[str, monitor.MonitorSummary] = {}
    try:
        plain = _workloads(session)
        built = {label: _monitored(workload, label, job.component_under_test(), monitored)
                 for label, workload in plain.items()}
        previous = [row.record() for row in session.rounds.order_by("index")]
        if job.overhead_rounds and not previous and "overhead" not in session.outcome:
            _measure_overhead(session, plain)
        outcome = session_loop.run_session(
            built,
            job.metric_specs(),
            job.session_targets(),
            previous_rounds=previous,
            on_round=lambda record, progress: _store_round(session, record, progress,
                                                           monitored.pop(record.workload, None)),
            should_stop=lambda: Session.objects.filter(pk=session.pk, cancel_requested=True).exists(),
        )
    except trust.UntrustedRevision as error:
        message = f"Refused to build a revision: {error}. Nothing was checked out or run."
        if session.confirms_id is not None:
            confirmations.note_unconfirmed(alert_ids=[session.confirms_id], note=f"session #{session.pk}: {message}")
        return _fail(session, message)
    except workloads.WorkloadError as error:
        if Session.objects.filter(pk=session.pk, cancel_requested=True).exists():
            return _fail(session, "Cancelled while a round ran; the rounds measured before are kept.",
                         status=SessionStatus.CANCELLED)
        return _fail(session, f"The workload failed: {error}")
    except Exception as error:
        _fail(session, f"Unexpected error: {type(error).__name__}: {error}")
        raise
    finally:
        heartbeat.stopped.set()
        heartbeat.join()
    return _finish(session, outcome)


def _revisions(session: Session) -> list[dict]:
    """The workloads a session measures: the revisions it names, or, for a plain session, one labelled by its
    job's name (or by the label its stored rounds carry, so a resumed session continues under it)."""
    if session.revisions:
        return session.revisions
    stored = session.rounds.values_list("workload", flat=True).first()
    return [{"label": stored or session.job.name[:Round._meta.get_field("workload").max_length], "commit": ""}]


def _workloads(session: Session) -> dict[str, Callable]:
    """The session's workload for each of its revisions, built here on the benchmark machine. Every revision is
    checked before any is built: a revision an automatic session was not vouched for must be on the job's trusted
    branch, and its setup is given the hash found (:func:`runner.trust.verified_commit`); one refused
    (:class:`runner.trust.UntrustedRevision`) leaves the machine as it was."""
    job = session.job
    revisions = _revisions(session)
    for revision in revisions:
        _check_identifier(revision.get("commit", ""))
    commits = {revision["label"]: _trusted_commit(session, revision) for revision in revisions}

    def remember_process_group(pid: int) -> None:
        Session.objects.filter(pk=session.pk).update(process_group=pid)

    built = {}
    measured = {}
    for revision in revisions:
        label = revision["label"]
        if job.workload_kind == WorkloadKind.BUILTIN:
            # A revision of a built-in workload can only differ by its parameters (e.g. the demo's slowdown).
            parameters = {**job.parameters, **revision.get("parameters", {})}
            built[label] = workloads.builtin_workload(job.builtin, parameters)
            continue
        options = {"cwd": job.working_directory or None, "env": job.environment, "timeout": job.round_timeout,
                   "revision": commits[label], "on_start": remember_process_group}
        if job.setup_command:
            workloads.setup_command(job.setup_command, **options)
        if not revision.get("commit"):
            # A session that named no revision (a scheduled nightly) records the one its checkout holds, so
            # its run is a night of its branch and its alerts can name their commits.
            found = trust.checked_out_revision(job)
            if found is not None:
                measured[label] = found
        built[label] = workloads.command_workload(job.command, reading_mode=job.reading_mode, **options)
    if measured:
        session.revisions = [{**revision, **measured.get(revision["label"], {})} for revision in revisions]
        Session.objects.filter(pk=session.pk).update(revisions=session.revisions)
    return built


def _check_identifier(commit: str) -> None:
    """Checked again where a stored revision becomes a command's argument: rows stored before identifiers were
    checked on entry, or sessions queued before, must not reach git as a refspec or a path."""
    if not commit:
        return
    try:
        check_commit(commit)
    except ValueError as error:
        raise workloads.UnsafeArgument(f"Refused to run the command: the revision {commit[:80]!r} {error}.") from None


def _trusted_commit(session: Session, revision: dict) -> str:
    """The commit a revision of the session is built as: as chosen by staff or vouched for, else the hash the
    machine found on the job's trusted branch (:mod:`runner.trust`)."""
    commit = revision.get("commit", "")
    if not commit or session.trigger in STAFF_TRIGGERS or revision.get("trust", {}).get("vouched") \
            or not trust.builds_revisions(session.job):
        return commit
    return trust.verified_commit(session.job, commit)


def _monitored(workload: Callable, label: str, under_test: str | None,
               sink: dict[str, monitor.MonitorSummary]) -> Callable:
    """The workload with psutil sampling around each round (Pilot §III-B); the summary lands in `sink`."""

    def monitored_round(work_amount: float) -> session_loop.RoundOutcome:
        with monitor.Monitor(under_test=under_test) as sampler:
            outcome = workload(work_amount)
        sink[label] = sampler.summary
        return outcome

    return monitored_round


def _measure_overhead(session: Session, built: dict[str, Callable]) -> None:
    """Pilot §III-C: rounds with and without monitoring, the overhead as a ratio with its Fieller CI."""
    job = session.job
    result = monitor.measure_overhead(
        next(iter(built.values())), job.work_min, rounds=job.overhead_rounds,
        monitor_factory=lambda: monitor.Monitor(under_test=job.component_under_test()),
        confidence=job.confidence_level,
    )
    session.outcome = {**session.outcome, "overhead": {
        "ratio": result.ratio, "low": result.low, "high": result.high, "bounded": result.bounded,
        "confidence_level": result.confidence_level, "rounds": job.overhead_rounds,
    }}
    Session.objects.filter(pk=session.pk).update(outcome=session.outcome)


def _monitor_summary(summary: monitor.MonitorSummary | None) -> dict:
    if summary is None:
        return {}
    return {
        "usage": {name: {"label": usage.label, "unit": usage.unit, "mean": usage.mean, "max": usage.max}
                  for name, usage in summary.usage.items()},
        "warnings": list(summary.warnings), "bottlenecks": list(summary.bottlenecks), "samples": summary.samples,
        "neighbour_cores": summary.neighbour_cores,
    }


def _store_round(session: Session, record: session_loop.RoundRecord, progress: session_loop.Progress,
                 summary: monitor.MonitorSummary | None) -> None:
    units = {metric: np.asarray(values, dtype=SAMPLE_DTYPE) for metric, values in record.outcome.unit_readings.items()}
    with transaction.atomic():
        Round.objects.create(
            session=session, index=record.index, workload=record.workload, work_amount=record.work_amount,
            duration=record.outcome.duration, readings=dict(record.outcome.readings),
            unit_readings=b"".join(values.tobytes() for values in units.values()) or None,
            unit_counts={metric: len(values) for metric, values in units.items()}, analysed=record.analysed,
            monitor=_monitor_summary(summary),
        )
        Session.objects.filter(pk=session.pk).update(
            progress=progress_summary(progress), heartbeat_at=timezone.now(), process_group=None)


def progress_summary(progress: session_loop.Progress) -> dict:
    """A session's progress as stored and served by the API (rounds, CI width vs target, time)."""
    return {
        "rounds_done": progress.rounds_done,
        "elapsed": progress.elapsed,
        "estimated_remaining": progress.estimated_remaining,
        "metrics": [
            {"workload": item.workload, "metric": item.metric, "relative_width": item.relative_width,
             "target_width": item.target_width, "converged": item.converged}
            for item in progress.metrics
        ],
    }


def _fail(session: Session, message: str, *, status: str = SessionStatus.FAILED) -> Session:
    Session.objects.filter(pk=session.pk).update(status=status, error=message,
                                                 finished_at=timezone.now(), process_group=None)
    session.refresh_from_db()
    return session


def _finish(session: Session, outcome: session_loop.SessionOutcome) -> Session:
    """Store the session's runs, outcome and analysis (what its runs' pages show of each metric). The
    analysis (stable phases of every round, by EDM) runs first, outside any transaction; the writes follow
    in one short transaction, so the database's write lock (all of it, on SQLite) is never held while the
    statistics run."""
    documents = _run_documents(session, outcome)
    try:
        analysis = _page_analysis(session, outcome, documents)
    except Exception:  # the measured runs matter more; the run page replays what is missing once
        logger.exception("session %s: its run pages' analysis failed; they will replay it", session.pk)
        analysis = {}
    with transaction.atomic():
        runs = {}
        for document in documents:
            # The runner stores what it measured itself (the system, user None): a revision it ran was vouched
            # for when its session was started (runner.trust).
            run = result_services.ingest_run(document=document, user=None).run
            session.runs.add(run)
            runs[document.environment["workload"]] = run.pk
        if outcome.status is session_loop.SessionStatus.CANCELLED:
            # What a cancelled session measured is kept, titled as cancelled (and out of its series' history).
            Run.objects.filter(pk__in=runs.values()).update(status=Run.Status.CANCELLED)
        if session.confirms_id is not None:
            confirmations.settle_alert(alert_id=session.confirms_id, session_id=session.pk,
                                       decision=_alert_decision(session, outcome, runs))
        session.status = outcome.status.value
        session.finished_at = timezone.now()
        session.process_group = None
        session.outcome = {
            **session.outcome,
            "message": outcome.message,
            "elapsed": outcome.elapsed,
            "additional_seconds_needed": outcome.additional_seconds_needed,
            "estimates": {label: {name: _estimate_summary(estimate) for name, estimate in estimates.items()}
                          for label, estimates in outcome.estimates.items()},
            "comparisons": [dataclasses.asdict(pair) for pair in outcome.comparisons],
        }
        session.save(update_fields=["status", "finished_at", "process_group", "outcome"])
        SessionAnalysis.objects.update_or_create(session=session, defaults={"workloads": analysis})
    return session


def _page_analysis(session: Session, outcome: session_loop.SessionOutcome, documents: list[RunIn]) -> dict:
    """Every stored result's :func:`runner.replay.analyse_metric`, as JSON by workload and metric, from the
    rounds' stable phases the session found (no EDM runs again: the budget is the session's machine time,
    its analysis included)."""
    targets = session.job.session_targets()
    specs = {spec.name: spec for spec in session.job.metric_specs()}
    analysis = {}
    for document in documents:
        label = document.environment["workload"]
        records = [record for record in outcome.rounds if record.workload == label]
        analysis[label] = {result.metric: replay.analyse_metric(records, specs[result.metric], targets,
                                                                stored=result.samples, found=outcome.phases).as_json()
                           for result in document.results}
    return analysis


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


def _alert_decision(session: Session, outcome: session_loop.SessionOutcome,
                    runs: dict[str, int]) -> confirmations.PairDecision | None:
    """The session's decision about its alert's metric, candidate over baseline; None when it stored no run
    of a revision or decided nothing about the metric."""
    metric = session.confirms.comparison.candidate.metric.name
    pair = next((pair for pair in outcome.comparisons if pair.metric == metric), None)
    if pair is None or not {"baseline", "candidate"} <= runs.keys():
        return None
    ratio, low, high = pair.ratio, pair.ratio_low, pair.ratio_high
    if pair.first == "candidate" and ratio:
        # The pair is second over first: invert it to candidate over baseline (positive means).
        ratio, low, high = 1.0 / ratio, (1.0 / high if high else None), (1.0 / low if low else None)
    return confirmations.PairDecision(decision=pair.decision, ratio=ratio, low=low, high=high, pvalue=pair.pvalue,
                                      rule=pair.rule)


def _run_documents(session: Session, outcome: session_loop.SessionOutcome) -> list[RunIn]:
    """One run document per workload (revision) with a valid estimate, with the samples analysed."""
    job = session.job
    specs = {spec.name: spec for spec in job.metric_specs()}
    revisions = {entry["label"]: entry for entry in _revisions(session)}
    state = monitor.machine_state()
    documents = []
    for label, estimates in outcome.estimates.items():
        rounds = list(session.rounds.filter(workload=label).values_list("monitor", flat=True))
        neighbours = [summary["neighbour_cores"] for summary in rounds if summary.get("neighbour_cores") is not None]
        # A round's noisy neighbour is said once for the run, with the most cores it took.
        bottlenecks = sorted({warning for summary in rounds
                              for warning in summary.get("bottlenecks", summary.get("warnings", []))})
        noisy = [cores for cores in neighbours if cores >= NEIGHBOUR_CORES]
        if noisy:
            bottlenecks.append(f"{monitor.NEIGHBOUR_WARNING} up to {max(noisy):.1f} cores busy in {len(noisy)} of "
                               f"{len(rounds)} rounds: a noisy neighbour")
        results = [
            _result_document(spec=specs[name], estimate=estimate, job=job, bottlenecks=bottlenecks,
                             samples=session_loop.analysed_samples(outcome.rounds, name, label,
                                                                   job.session_targets(), phases=outcome.phases))
            for name, estimate in estimates.items() if estimate.valid
        ]
        if not results:
            continue
        revision = revisions.get(label, {})
        documents.append(RunIn.model_validate({
            "project": {"name": job.project.name, "slug": job.project.slug},
            "machine": {"name": job.machine.name},
            "revision": {"commit": revision["commit"], "branch": revision.get("branch", ""),
                         **({"timestamp": revision["timestamp"]} if revision.get("timestamp") else {})}
            if revision.get("commit") else None,
            "kind": session.run_kind,
            "started_at": session.started_at,
            "finished_at": timezone.now(),
            "source": f"pilotweb session #{session.pk}",
            "environment": {"session": session.pk, "workload": label, "job": job.name, **state,
                            **({"neighbour_cores": round(max(neighbours), 2)} if neighbours else {})},
            "results": results,
        }))
    return documents


def _estimate_summary(estimate: session_loop.MetricEstimate) -> dict:
    return {key: value for key, value in dataclasses.asdict(estimate).items() if key != "confidence"}


def _result_document(*, spec: session_loop.MetricSpec, estimate: session_loop.MetricEstimate, job: Job,
                     samples: np.ndarray | None, bottlenecks: list[str]) -> dict:
    return {
        "benchmark": job.benchmark, "metric": spec.name, "unit": spec.unit, "direction": str(spec.direction),
        "confidence_level": job.confidence_level, "warmup_removed": estimate.warmup_removed,
        "converged": estimate.converged,
        "summary": {"mean": estimate.mean, "subsession_size": estimate.subsession_size,
                    "variance": estimate.variance, "n": estimate.n,
                    "variance_method": "wps" if estimate.method == "wps" else estimate.variance_method},
        "samples": None if samples is None or samples.size == 0 else samples.tolist(),
        "metadata": {"method": estimate.method, "message": estimate.message, "bottlenecks": bottlenecks},
    }


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
            _send_on_commit(session)
        started.append(session)
    for note, ids in notes.items():
        confirmations.note_unconfirmed(alert_ids=ids, note=note)
    return started
