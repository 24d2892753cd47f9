"""Reads of the runner, each a fixed number of queries."""

from django.db.models import OuterRef, Subquery

from .models import Job, Session


def session(*, session_id: int) -> Session:
    """One session with its job and runs; raises Session.DoesNotExist."""
    return Session.objects.select_related("job__machine", "job__project").prefetch_related("runs").get(pk=session_id)


def jobs_with_last_session() -> list[Job]:
    """Every job, with its schedule, and ``last_session`` set to its newest session (or None)."""
    newest = Session.objects.filter(job=OuterRef("pk")).order_by("-queued_at", "-id").values("pk")[:1]
    jobs = list(Job.objects.select_related("project", "machine", "schedule__crontab")
                .annotate(last_session_id=Subquery(newest)))
    sessions = {
        s.pk: s for s in Session.objects.filter(pk__in=[job.last_session_id for job in jobs if job.last_session_id])
        .select_related("job").prefetch_related("runs")
    }
    for job in jobs:
        job.last_session = sessions.get(job.last_session_id)
    return jobs

