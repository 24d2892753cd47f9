"""Celery tasks: thin. Each takes ids, loads, calls one service, and owns only its retry policy."""

from celery import shared_task

from . import execution, services
from .bisection import notify
from .bisection import service as bisections
from .models import Job, SessionTrigger


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_session(session_id: int, attempt: int) -> None:
    """Execute one session. Delivered to the session's machine queue; a worker there runs one at a time."""
    execution.execute_session(session_id=session_id, attempt=attempt)


@shared_task(ignore_result=True)
def start_scheduled_session(job_id: int) -> None:
    job = Job.objects.select_related("machine").filter(pk=job_id, enabled=True).first()
    if job is not None:
        services.start_session(job=job, user=None, trigger=SessionTrigger.SCHEDULE, run_kind="nightly")


@shared_task(ignore_result=True)
def recover_stale_sessions() -> None:
    services.recover_stale_sessions()


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def list_bisection_range(bisection_id: int) -> None:
    """List a bisection's range. Delivered to its job's machine queue: the repository is there."""
    bisections.list_range(bisection_id=bisection_id)


@shared_task(ignore_result=True)
def advance_bisection(bisection_id: int) -> None:
    bisections.advance(bisection_id=bisection_id)


@shared_task(ignore_result=True)
def start_bisections() -> None:
    bisections.bisect_confirmed()


@shared_task(ignore_result=True)
def notify_bisection(bisection_id: int) -> None:
    # No retry here: the catch-up retries each channel not told yet (runner.bisection.notify).
    notify.notify_bisection(bisection_id=bisection_id)


@shared_task(ignore_result=True)
def advance_bisections() -> None:
    bisections.catch_up()
