"""Runner endpoints of ``/api/v1/``: jobs, run now, cancel, and a session's progress."""

from datetime import datetime
from typing import Annotated, Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import Field

from results.api import READ_AUTH, WRITE_AUTH
from results.schemas import Branch, ErrorOut, OptionalCommit

from . import selectors, services
from .models import Job, Session
from .progress import progress_view

router = Router(tags=["runner"])


class SessionOut(Schema):
    id: int
    job_id: int
    job: str
    status: str
    trigger: str
    revisions: list[dict[str, Any]]
    queued_at: datetime
    sent_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    rounds_done: int
    progress: dict[str, Any]
    display: dict[str, Any]
    outcome: dict[str, Any]
    error: str
    run_ids: list[int]


class SessionQueuedOut(SessionOut):
    detail: str


class JobOut(Schema):
    id: int
    project: str
    name: str
    benchmark: str
    machine: str
    queue: str
    workload_kind: str
    enabled: bool
    last_session: SessionOut | None


class RevisionRequest(Schema):
    label: Annotated[str, Field(min_length=1, max_length=50)]
    commit: OptionalCommit = ""
    branch: Branch = ""


class RunNowIn(Schema):
    revisions: list[RevisionRequest] = []


def session_out(session: Session) -> dict:
    return {
        "id": session.pk, "job_id": session.job_id, "job": session.job.name, "status": session.status,
        "trigger": session.trigger, "revisions": session.revisions, "queued_at": session.queued_at,
        "sent_at": session.sent_at, "started_at": session.started_at, "finished_at": session.finished_at,
        "rounds_done": session.progress.get("rounds_done", 0), "progress": session.progress,
        "display": progress_view(session),
        "outcome": session.outcome, "error": session.error, "run_ids": [run.pk for run in session.runs.all()],
    }


def _staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied(services.STAFF_ONLY)


@router.get("/jobs", response=list[JobOut], auth=READ_AUTH, url_name="job_list", summary="Jobs and their last session")
def list_jobs(request: HttpRequest):
    return [
        {"id": job.pk, "project": job.project.slug, "name": job.name, "benchmark": job.benchmark,
         "machine": job.machine.name, "queue": job.machine.queue, "workload_kind": job.workload_kind,
         "enabled": job.enabled, "last_session": session_out(job.last_session) if job.last_session else None}
        for job in selectors.jobs_with_last_session()
    ]


REFUSALS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


@router.post("/jobs/{id:job_id}/run", response={201: SessionOut, 202: SessionQueuedOut, **REFUSALS}, auth=WRITE_AUTH,
             url_name="job_run", summary="Run a job now (staff)")
def run_job(request: HttpRequest, job_id: int, body: RunNowIn):
    _staff(request)
    job = Job.objects.select_related("machine").filter(pk=job_id).first()
    if job is None:
        raise Http404(f"No job {job_id}.")
    session = services.start_session(job=job, user=request.user,
                                     revisions=[revision.model_dump() for revision in body.revisions])
    session = selectors.session(session_id=session.pk)
    if session.sent_at is None:
        return Status(202, {**session_out(session), "detail": services.NOT_SENT})
    return Status(201, session_out(session))


@router.post("/sessions/{id:session_id}/cancel", response={200: SessionOut, **REFUSALS}, auth=WRITE_AUTH,
             url_name="session_cancel", summary="Cancel a session (staff)")
def cancel(request: HttpRequest, session_id: int):
    _staff(request)
    try:
        session = selectors.session(session_id=session_id)
    except Session.DoesNotExist:
        raise Http404(f"No session {session_id}.") from None
    services.cancel_session(session=session, user=request.user)
    return session_out(selectors.session(session_id=session_id))


@router.get("/sessions/{id:session_id}", response=SessionOut, auth=READ_AUTH, url_name="session_detail",
            summary="A session's status and progress")
def session_detail(request: HttpRequest, session_id: int):
    try:
        return session_out(selectors.session(session_id=session_id))
    except Session.DoesNotExist:
        raise Http404(f"No session {session_id}.") from None
