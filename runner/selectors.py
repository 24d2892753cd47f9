"""Reads of the runner, each a fixed number of queries."""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Max, OuterRef, QuerySet, Subquery

from results import presentation
from results.models import Machine

from .models import Job, Round, Session, SessionStatus


def session(*, session_id: int) -> Session:
    """One session with its job and runs; raises Session.DoesNotExist."""
    return Session.objects.select_related("job__machine", "job__project").prefetch_related("runs").get(pk=session_id)


def reading_scales(*, session: Session) -> dict[str, tuple[float, str]]:
    """The one scale of each metric a session reads (by name), chosen from its first round's reading, so
    every round and every comparison of the session shows the metric in one unit; one query."""
    first = Round.objects.filter(session=session).order_by("index").values_list("readings", flat=True).first() or {}
    return {spec.name: presentation.unit_scale(spec.unit, first.get(spec.name)) for spec in session.job.metric_specs()}


def session_rounds(*, session_id: int, after: int = -1) -> list[Round]:
    """A session's rounds after the one of index ``after`` (all of them by default), in order; one query."""
    return list(Round.objects.filter(session_id=session_id, index__gt=after).defer("unit_readings").order_by("index"))


def jobs_with_last_session(*, job_id: int | None = None) -> list[Job]:
    """Every job (or the one of ``job_id``), with its schedule, and ``last_session`` set to its newest
    session (or None)."""
    jobs = all_jobs()
    if job_id is not None:
        jobs = jobs.filter(pk=job_id)
    return with_last_session(list(jobs))


def all_jobs() -> QuerySet[Job]:
    """Every job with its schedule (by project and name), its newest session's id annotated."""
    newest = Session.objects.filter(job=OuterRef("pk")).order_by("-queued_at", "-id").values("pk")[:1]
    return (Job.objects.select_related("project", "machine", "schedule__crontab")
            .annotate(last_session_id=Subquery(newest)).order_by("project", "name", "pk"))


def with_last_session(jobs: list[Job]) -> list[Job]:
    """`jobs` (of :func:`all_jobs`) with ``last_session`` set to their newest session (or None); one query,
    so a page of jobs reads only its own sessions."""
    sessions = {
        s.pk: s for s in Session.objects.filter(pk__in=[job.last_session_id for job in jobs if job.last_session_id])
        .select_related("job").prefetch_related("runs")
    }
    for job in jobs:
        job.last_session = sessions.get(job.last_session_id)
    return jobs


ACTIVE_STATUSES = (SessionStatus.QUEUED, SessionStatus.RUNNING)


@dataclass(frozen=True)
class MachineOverview:
    machine: Machine
    active_sessions: list


def machines_overview() -> list[MachineOverview]:
    """Every machine with its run and job counts, newest run, and queued or running sessions; two queries."""
    machines = list(Machine.objects.annotate(
        run_count=Count("runs", distinct=True), job_count=Count("jobs", distinct=True),
        last_run_at=Max("runs__started_at")).order_by("name"))
    active = defaultdict(list)
    for session in (Session.objects.filter(status__in=ACTIVE_STATUSES)
                    .select_related("job").order_by("queued_at", "id")):
        active[session.job.machine_id].append(session)
    return [MachineOverview(machine=machine, active_sessions=active[machine.pk]) for machine in machines]
