"""Celery tasks of results: thin. Each takes ids, loads, calls one service, owns only its retries."""

from celery import shared_task

from . import alerts, comparisons, notifications
from .queue import enqueue


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def compare_run(run_id: int) -> None:
    for chunk_id in comparisons.begin_comparison(run_id=run_id):
        enqueue(compare_chunk, chunk_id)


@shared_task(bind=True, ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def compare_chunk(self, chunk_id: int) -> None:
    comparisons.compare_chunk(chunk_id=chunk_id, worker=self.request.hostname or "")


@shared_task(ignore_result=True)
def notify_alert_group(group_id: int) -> None:
    # No retry here: each channel keeps its own attempts and backoff, and the catch-up sends what is due.
    notifications.notify_alert_group(group_id=group_id)


@shared_task(ignore_result=True)
def compare_pending_runs() -> None:
    for run_id in comparisons.pending_runs():
        enqueue(compare_run, run_id)
    for chunk_id in comparisons.pending_chunks():
        enqueue(compare_chunk, chunk_id)


@shared_task(ignore_result=True)
def notify_pending_alert_groups() -> None:
    for group_id in notifications.pending_groups():
        enqueue(notify_alert_group, group_id)


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def detect_change_points_for_run(run_id: int) -> None:
    alerts.scan_run_series(run_id=run_id)


@shared_task(ignore_result=True)
def scan_change_points() -> None:
    alerts.scan_change_points()
