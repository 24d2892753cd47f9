"""Celery tasks of results: thin. Each takes ids, loads, calls one service, owns only its retries."""

from celery import shared_task

from . import comparisons, notifications


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def compare_run(run_id: int) -> None:
    comparisons.compare_run(run_id=run_id)


@shared_task(ignore_result=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_alert_group(group_id: int) -> None:
    notifications.notify_alert_group(group_id=group_id)


@shared_task(ignore_result=True)
def compare_pending_runs() -> None:
    for run_id in comparisons.pending_runs():
        compare_run.delay(run_id)
