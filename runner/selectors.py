"""Reads of the runner, each a fixed number of queries."""

from collections import defaultdict
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, OuterRef, QuerySet, Subquery

from results import access, presentation
from results import selectors as result_selectors
from results.models import Machine, Run

from . import heartbeat
from .models import Job, Round, Session, SessionStatus


def session(*, session_id: int, viewer) -> Session:
    """One session of a job of a project `viewer` may read, with its job and runs; raises Session.DoesNotExist."""
    return (access.visible(Session.objects.select_related("job__machine", "job__project"), viewer, "job__project")
            .prefetch_related("runs").get(pk=session_id))


def reading_scales(*, session: Session) -> dict[str, tuple[float, str]]:
    """The one scale of each metric a session reads (by name), chosen from its first round's reading, so
    every round and every comparison of the session shows the metric in one unit; one query."""
    first = Round.objects.filter(session=session).order_by("index").values_list("readings", flat=True).first() or {}
    return {spec.name: presentation.unit_scale(spec.unit, first.get(spec.name)) for spec in session.job.metric_specs()}


def session_rounds(*, session_id: int, after: int = -1) -> list[Round]:
    """A session's rounds after the one of index ``after`` (all of them by default), in order; one query."""
    return list(Round.objects.filter(session_id=session_id, index__gt=after).defer("unit_readings").order_by("index"))


def jobs_with_last_session(*, viewer, job_id: int | None = None) -> list[Job]:
    """Every job of the projects `viewer` may read (or the one of ``job_id``), with its schedule, and
    ``last_session`` set to its newest session (or None)."""
    jobs = all_jobs(viewer=viewer)
    if job_id is not None:
        jobs = jobs.filter(pk=job_id)
    return with_last_session(list(jobs))


def all_jobs(*, viewer) -> QuerySet[Job]:
    """Every job of the projects `viewer` may read with its schedule (by project and name), its newest
    session's id annotated."""
    newest = Session.objects.filter(job=OuterRef("pk")).order_by("-queued_at", "-id").values("pk")[:1]
    return (access.visible(Job.objects.select_related("project", "machine", "schedule__crontab"), viewer)
            .annotate(last_session_id=Subquery(newest)).order_by("project", "name", "pk"))


def with_last_session(jobs: list[Job]) -> list[Job]:
    """`jobs` (of :func:`all_jobs`) with ``last_session`` set to their newest session (or None); one query,
    so a page of jobs reads only its own sessions."""
    sessions = {
        s.pk: s for s in Session.objects.filter(pk__in=[job.last_session_id for job in jobs if job.last_session_id])
        .select_related("job__machine").prefetch_related("runs")
    }
    for job in jobs:
        job.last_session = sessions.get(job.last_session_id)
    return jobs


ACTIVE_STATUSES = (SessionStatus.QUEUED, SessionStatus.RUNNING)


MACHINES_PER_PAGE = 50


@dataclass(frozen=True)
class MachineOverview:
    machine: Machine
    active_sessions: list
    runs: int = 0
    jobs: int = 0
    last_run_at: object = None

    @property
    def worker_alive(self) -> bool:
        """Whether a worker consuming its queue said it was alive lately (:mod:`runner.heartbeat`)."""
        return heartbeat.worker_alive(self.machine)


def machine_page(*, viewer, search: str = "", page: str | int | None = None) -> Page:
    """One page of the machines `viewer` may see (:func:`results.selectors.machines`), each a
    :class:`MachineOverview` with the counts of its runs and jobs in the projects `viewer` may read, its newest
    run, and its queued or running sessions; a fixed number of queries, whatever the number of machines."""
    page = Paginator(result_selectors.machines(viewer=viewer, search=search), MACHINES_PER_PAGE).get_page(page)
    listed = list(page.object_list)
    ids = [machine.pk for machine in listed]
    runs = {row["machine_id"]: row for row in access.visible(Run.objects.filter(machine_id__in=ids), viewer)
            .values("machine_id").annotate(count=Count("id"), newest=Max("started_at")).order_by()}
    jobs = dict(access.visible(Job.objects.filter(machine_id__in=ids), viewer).values("machine_id")
                .annotate(count=Count("id")).values_list("machine_id", "count").order_by())
    active = defaultdict(list)
    for session in (access.visible(Session.objects.filter(status__in=ACTIVE_STATUSES, job__machine_id__in=ids),
                                   viewer, "job__project").select_related("job__machine").order_by("queued_at", "id")):
        active[session.job.machine_id].append(session)
    page.object_list = [MachineOverview(machine=machine, active_sessions=active[machine.pk],
                                        runs=runs.get(machine.pk, {}).get("count", 0), jobs=jobs.get(machine.pk, 0),
                                        last_run_at=runs.get(machine.pk, {}).get("newest"))
                        for machine in listed]
    return page
