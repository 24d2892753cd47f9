"""Runner endpoints of ``/api/v1/``: jobs (listed, defined and changed), run now, cancel, and a session's
progress."""

from datetime import datetime
from typing import Annotated, Any, NoReturn

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.http import HttpRequest
from ninja import Router, Schema
from ninja.pagination import paginate
from ninja.responses import Status
from pydantic import BaseModel, ConfigDict, Field

from results import access
from results.api_framework import (
    READ_AUTH,
    READ_REFUSALS,
    WRITE_AUTH,
    PageOf,
    Pages,
    or_404,
    refusals,
    request_token,
)
from results.models import TokenScope
from results.result_schema import SingleLine
from results.schemas import Branch, OptionalCommit

from . import heartbeat, selectors, services
from .forms import JobForm, PercentField
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


class SessionStartedOut(SessionOut):
    warnings: list[str]


class JobOut(Schema):
    id: int
    project_id: int
    project: str
    name: str
    benchmark: str
    machine_id: int
    machine: str
    queue: str
    worker_seen_at: datetime | None
    warnings: list[str]
    workload_kind: str
    enabled: bool
    last_session: SessionOut | None


class RevisionRequest(Schema):
    label: Annotated[SingleLine, Field(min_length=1, max_length=50)]
    commit: OptionalCommit = ""
    branch: Branch = ""


class RunNowIn(Schema):
    revisions: Annotated[list[RevisionRequest], Field(max_length=16)] = []


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
    """Jobs are staff's, and a token used for them needs the ``jobs`` scope."""
    if not access.is_staff(request.user):
        raise PermissionDenied(services.STAFF_ONLY)
    token = request_token(request)
    if token is not None and not token.allows(TokenScope.JOBS):
        raise PermissionDenied(f"The token {token.prefix}… lacks the scope 'jobs'.")


def job_out(job: Job) -> dict:
    """A job of :func:`runner.selectors.jobs_with_last_session` as the API shows it."""
    return {"id": job.pk, "project_id": job.project_id, "project": job.project.slug, "name": job.name,
            "benchmark": job.benchmark, "machine_id": job.machine_id, "machine": job.machine.name,
            "queue": job.machine.queue, "worker_seen_at": job.machine.worker_seen_at,
            "warnings": [warning] if (warning := heartbeat.no_worker_warning(job.machine)) else [],
            "workload_kind": job.workload_kind, "enabled": job.enabled,
            "last_session": session_out(job.last_session) if job.last_session else None}


@router.get("/jobs", response={200: list[JobOut], **READ_REFUSALS}, auth=READ_AUTH, url_name="job_list",
            summary="Jobs and their last session")
@paginate(Pages)
def list_jobs(request: HttpRequest):
    return PageOf(selectors.all_jobs(viewer=request.user),
                  lambda jobs: [job_out(job) for job in selectors.with_last_session(jobs)])


class JobIn(BaseModel):
    """A job's settings, named and written as the job form's fields are; an edit gives only those it changes."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"description": (
        "A job's settings as the job form's fields, by name: " + ", ".join(JobForm.base_fields) + ". Lists "
        "(command, setup_command, metrics) and mappings (environment, parameters) may be JSON; project and "
        "machine are ids. POST needs what the form needs; PATCH changes only the fields given.")})


def _job_form(fields: dict[str, Any], *, job: Job | None = None) -> JobForm:
    """The job form bound to ``fields`` over the job's current values (a new job's defaults).

    Every value is written as the form shows it (``prepare_value``), so the form reads API input as it reads
    a person's: the same parsing, the same rules, the same errors by field; a field left out keeps its value.
    A name the form does not know is refused rather than ignored.
    """
    # An unsaved Job gives the form the model's defaults, which a form without an instance leaves blank.
    current = JobForm(instance=job or Job())
    unknown = sorted(set(fields) - current.fields.keys())
    if unknown:
        raise ValidationError({name: f"unknown field; a job's fields are {', '.join(current.fields)}"
                               for name in unknown})
    data = {name: current[name].value() for name in current.fields}
    data.update({name: current.fields[name].prepare_value(_stored(current.fields[name], value))
                 for name, value in fields.items()})
    return JobForm(data, instance=job)


def _stored(field: forms.Field, value: Any) -> Any:
    """The API speaks the stored units: a percentage field's value is the fraction (0.1 for 10%), a number
    or its text alike (the form's page is where people type percentages)."""
    if isinstance(field, PercentField) and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _refuse(form: JobForm) -> NoReturn:
    """The form's errors as a refusal by field (a 422), the form-wide ones under ``body``."""
    raise ValidationError({"body" if field == NON_FIELD_ERRORS else field: [error["message"] for error in errors]
                           for field, errors in form.errors.get_json_data().items()})


@router.post("/jobs", response={201: JobOut, **refusals(400, 401, 403, 413, 422)}, auth=WRITE_AUTH,
             url_name="job_create",
             summary="Define a job (staff), validated by the job form")
def create_job(request: HttpRequest, body: JobIn):
    _staff(request)
    form = _job_form(body.model_extra or {})
    if not form.is_valid():
        _refuse(form)
    try:
        job = services.create_job(user=request.user, cron=form.cleaned_data["cron"], **form.job_fields())
    except ValidationError as error:
        form.add_service_errors(error)
        _refuse(form)
    return Status(201, job_out(selectors.jobs_with_last_session(viewer=request.user, job_id=job.pk)[0]))


@router.patch("/jobs/{id:job_id}", response={200: JobOut, **refusals(400, 401, 403, 404, 413, 422)}, auth=WRITE_AUTH,
              url_name="job_edit",
              summary="Change a job and its schedule (staff), validated by the job form")
def edit_job(request: HttpRequest, job_id: int, body: JobIn):
    _staff(request)
    job = or_404(Job.objects.select_related("schedule__crontab").filter(pk=job_id).first, f"No job {job_id}.")
    form = _job_form(body.model_extra or {}, job=job)
    if not form.is_valid():
        _refuse(form)
    try:
        services.update_job(job=job, user=request.user, cron=form.cleaned_data["cron"], **form.job_fields())
    except ValidationError as error:
        form.add_service_errors(error)
        _refuse(form)
    return job_out(selectors.jobs_with_last_session(viewer=request.user, job_id=job.pk)[0])


@router.post("/jobs/{id:job_id}/run", response={201: SessionStartedOut, 202: SessionQueuedOut,
                                                **refusals(400, 401, 403, 404, 413, 422)},
             auth=WRITE_AUTH, url_name="job_run", summary="Run a job now (staff)")
def run_job(request: HttpRequest, job_id: int, body: RunNowIn | None = None):
    """Queue a session of the job now; the body (its revisions) may be left out: a plain session."""
    _staff(request)
    job = or_404(Job.objects.select_related("machine").filter(pk=job_id).first, f"No job {job_id}.")
    session = services.start_session(job=job, user=request.user,
                                     revisions=[revision.model_dump() for revision in body.revisions] if body else [])
    session = selectors.session(session_id=session.pk, viewer=request.user)
    if session.sent_at is None:
        return Status(202, {**session_out(session), "detail": services.NOT_SENT})
    warning = heartbeat.no_worker_warning(job.machine)
    return Status(201, {**session_out(session), "warnings": [warning] if warning else []})


@router.post("/sessions/{id:session_id}/cancel", response={200: SessionOut, **refusals(401, 403, 404)}, auth=WRITE_AUTH,
             url_name="session_cancel", summary="Cancel a session (staff)")
def cancel(request: HttpRequest, session_id: int):
    _staff(request)
    session = or_404(lambda: selectors.session(session_id=session_id, viewer=request.user),
                     f"No session {session_id}.", absent=Session.DoesNotExist)
    services.cancel_session(session=session, user=request.user)
    return session_out(selectors.session(session_id=session_id, viewer=request.user))


@router.get("/sessions/{id:session_id}", response={200: SessionOut, **refusals(401, 404)}, auth=READ_AUTH,
            url_name="session_detail",
            summary="A session's status and progress")
def session_detail(request: HttpRequest, session_id: int):
    return session_out(or_404(lambda: selectors.session(session_id=session_id, viewer=request.user),
                              f"No session {session_id}.", absent=Session.DoesNotExist))
