"""Results' endpoints of the versioned JSON API, ``/api/v1/`` (its framework: :mod:`results.api_framework`): run
ingestion (native and imported formats) and reads.

Writes need a per-user token (``Authorization: Bearer pw_…``). Reads accept a token, a
logged-in session, or nobody when ``PILOTWEB_PUBLIC_READ`` is on.
"""

import json
from typing import Annotated, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Schema
from ninja.responses import Status
from ninja.pagination import paginate
from pydantic import Field
from pydantic import ValidationError as PydanticValidationError

from . import exports, selectors, services
from .stored_rows import stored_rows
from .triage import set_alert_status, triage_incident
from .api_framework import (
    READ_AUTH,
    READ_REFUSALS,
    WRITE_AUTH,
    PageOf,
    Pages,
    api,
    error_body,
    or_404,
    refusals,
    request_token,
)
from .extensions import alert_sessions
from .json_schema import run_json_schema
from . import converters  # noqa: F401  (registers the "id" route converter)
from .ingest import (
    FormatMismatch,
    ImportFormatError,
    ImportTooLarge,
    import_document,
    stated_overrides,
)
from .models import (
    SESSION_KINDS,
    Alert,
    AlertStatus,
    Benchmark,
    Incident,
    Machine,
    Metric,
    Project,
    Result,
    Run,
)
from .notifications import incident_line
from .rows import ComparisonRow
from .schemas import (
    BenchmarkOut,
    Branch,
    Commit,
    CommitPrefix,
    INT64_MAX,
    Count,
    MachineOut,
    MetricOut,
    Name,
    OptionalCommit,
    ProjectOut,
    RunCreatedOut,
    RunDetailOut,
    RunIn,
    RunOut,
    SeriesOut,
    describe_errors,
)


@api.exception_handler(services.IngestError)
def on_ingest_error(request: HttpRequest, error: services.IngestError):
    return api.create_response(request, error_body(str(error), [{"field": error.field, "message": error.message}]),
                               status=error.status)


@api.exception_handler(ImportFormatError)
def on_format_error(request: HttpRequest, error: ImportFormatError):
    detail = error.telling(f"post it with format={error.detected}") if isinstance(error, FormatMismatch) \
        else str(error)
    return api.create_response(request, error_body(detail, [{"field": "file", "message": detail}]),
                               status=error.status)


def _created(request: HttpRequest, outcome: services.IngestOutcome):
    body = {
        "id": outcome.run.pk,
        "created": outcome.created,
        "url": request.build_absolute_uri(reverse("api-v1:run_detail", args=[outcome.run.pk])),
        "page_url": request.build_absolute_uri(reverse("results:run", args=[outcome.run.pk])),
        "results": outcome.results,
    }
    return Status(201 if outcome.created else 200, body)


@api.post("/runs", response={200: RunCreatedOut, 201: RunCreatedOut, **refusals(400, 401, 409, 413, 422)},
          url_name="run_create", summary="Post a run in the native format")
def create_run(request: HttpRequest, document: RunIn):
    return _created(request, services.ingest_run(document=_posted(document), user=request.user,
                                                 token=request_token(request)))


def _posted(document: RunIn) -> RunIn:
    """A posted run may not claim to be an A/B confirmation: those runs are never nights of a series and are
    made only by the runner's sessions, so a posted one would hide a night from its series."""
    if document.kind in SESSION_KINDS:
        raise services.IngestError("kind", f"{document.kind.value} runs are made by the runner's A/B sessions and "
                                           "bisections; post nightly, pr, manual or imported")
    return document


SCHEMA_RESPONSE = {"responses": {200: {"description": "A JSON Schema document", "content": {
    "application/schema+json": {"schema": {"type": "object"}}}}}}


@api.get("/schema/run.json", auth=None, response=refusals(), url_name="run_json_schema",
         summary="The native run format as a JSON Schema", openapi_extra=SCHEMA_RESPONSE)
def run_schema(request: HttpRequest):
    """What ``POST /runs`` accepts, as a JSON Schema (draft 2020-12) made from the API's own model."""
    schema = run_json_schema(schema_id=request.build_absolute_uri())
    response = HttpResponse(json.dumps(schema), content_type="application/schema+json")
    response["Cache-Control"] = "public, max-age=3600"
    return response


class ImportParams(Schema):
    format: Annotated[str, Field(max_length=50)] = "native"
    project: Name | None = None
    machine: Name | None = None
    commit: Commit | None = None
    branch: Branch = ""
    pull_request: Count | None = None
    base_commit: OptionalCommit = ""
    kind: Run.Kind | None = None
    run_key: Name | None = None


FILE_BODY = {"required": True, "content": {
    "application/json": {"schema": {"type": "object"}},
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
    "multipart/form-data": {"schema": {"type": "object", "required": ["file"],
                                       "properties": {"file": {"type": "string", "format": "binary"}}}},
}}


@api.post("/runs/import", response={200: RunCreatedOut, 201: RunCreatedOut, **refusals(400, 401, 409, 413, 422)},
          url_name="run_import", summary="Post a results file in any supported format",
          openapi_extra={"requestBody": FILE_BODY})
def import_run(request: HttpRequest, params: Query[ImportParams]):
    """The body is the file itself (or a multipart upload named ``file``, possibly gzip-compressed);
    ``format`` is one of native, pyperf, pytest-benchmark, google-benchmark, hyperfine, asv. ``pull_request`` and
    ``base_commit`` go with ``commit`` (a ``kind=pr`` run). Without ``run_key``, importing the same file for
    the same project, machine, revision and kind again answers with the stored run (200)."""
    limit = settings.PILOTWEB_MAX_UPLOAD_BYTES
    if request.content_type == "multipart/form-data":
        upload = request.FILES.get("file")
        if upload is None:
            raise ImportFormatError("file: a multipart upload must hold the results file in a field named 'file'.")
        if upload.size > limit:
            raise ImportTooLarge(f"file: the upload holds {upload.size:,} bytes; the limit is {limit:,} "
                                 "(PILOTWEB_MAX_UPLOAD_BYTES).")
        content = upload.read()
    else:
        content = request.body
    overrides = stated_overrides(project=params.project, machine=params.machine, commit=params.commit,
                                 branch=params.branch, pull_request=params.pull_request,
                                 base_commit=params.base_commit, kind=params.kind, run_key=params.run_key)
    raw = import_document(format_name=params.format, content=content, overrides=overrides, max_bytes=limit)
    try:
        document = RunIn.model_validate(raw)
    except PydanticValidationError as error:
        return Status(422, describe_errors(error.errors()))
    return _created(request, services.ingest_run(document=_posted(document), user=request.user,
                                                 token=request_token(request)))


class RunFilters(Schema):
    project: str | None = None
    machine: str | None = None
    branch: str | None = None
    kind: Run.Kind | None = None
    commit: CommitPrefix | None = None


def _run_out(run: Run) -> dict:
    revision = run.revision
    return {
        "id": run.pk, "project": run.project.slug, "machine": run.machine.name, "kind": run.kind,
        "status": run.status, "commit": revision.commit if revision else None,
        "branch": revision.branch if revision else None, "pull_request": revision.pull_request if revision else None,
        "started_at": run.started_at, "finished_at": run.finished_at, "source": run.source, "run_key": run.run_key,
        "compared_at": run.compared_at,
    }


def _result_out(result: Result) -> dict:
    metric = result.metric
    return {
        "id": result.pk, "metric_id": metric.pk, "benchmark_id": metric.benchmark_id,
        "benchmark": metric.benchmark.name, "metric": metric.name, "unit": metric.unit,
        "direction": metric.direction, "mean": result.mean, "subsession_size": result.subsession_size,
        "variance": result.variance, "n": result.n, "sample_count": result.sample_count,
        "confidence_level": result.confidence_level, "ci_low": result.ci_low, "ci_high": result.ci_high,
        "warmup_removed": result.warmup_removed, "autocorrelation": result.autocorrelation,
        "independent": result.independent, "converged": result.converged, "samples_shape": result.samples_shape,
    }


@api.get("/runs", response={200: list[RunOut], **READ_REFUSALS}, auth=READ_AUTH,
         url_name="run_list", summary="List runs")
@paginate(Pages)
def list_runs(request: HttpRequest, filters: Query[RunFilters]):
    kind = filters.kind.value if filters.kind else None
    return PageOf(selectors.runs(viewer=request.user, project=filters.project, machine=filters.machine,
                                 branch=filters.branch, kind=kind, commit=filters.commit),
                  lambda runs: [_run_out(run) for run in runs])


@api.get("/runs/{id:run_id}", response={200: RunDetailOut, **refusals(401, 404)}, auth=READ_AUTH, url_name="run_detail",
         summary="One run with its results")
def run_detail(request: HttpRequest, run_id: int):
    run = or_404(lambda: selectors.run_with_results(run_id=run_id, viewer=request.user), f"No run {run_id}.",
                 absent=Run.DoesNotExist)
    return {**_run_out(run), "environment": run.environment,
            "results": [_result_out(result) for result in run.results.all()],
            "failures": [{"metric_id": failure.metric_id, "benchmark_id": failure.metric.benchmark_id,
                          "benchmark": failure.metric.benchmark.name, "metric": failure.metric.name,
                          "error": failure.error} for failure in run.failures.all()]}


def _project_out(project: Project) -> dict:
    return {"id": project.pk, "name": project.name, "slug": project.slug, "repository_url": project.repository_url,
            "default_branch": project.default_branch}


def _benchmark_out(benchmark: Benchmark) -> dict:
    return {"id": benchmark.pk, "project_id": benchmark.project_id, "project": benchmark.project.slug,
            "name": benchmark.name, "description": benchmark.description}


def _metric_out(metric: Metric) -> dict:
    return {"id": metric.pk, "benchmark_id": metric.benchmark_id, "benchmark": metric.benchmark.name,
            "project": metric.benchmark.project.slug, "name": metric.name, "unit": metric.unit,
            "direction": metric.direction, "threshold": metric.threshold,
            "confidence_level": metric.confidence_level, "target_width": metric.target_width}


def _machine_out(machine: Machine) -> dict:
    return {"id": machine.pk, "name": machine.name, "hostname": machine.hostname, "cpu_model": machine.cpu_model,
            "cores": machine.cores, "memory_bytes": machine.memory_bytes, "os": machine.os, "queue": machine.queue,
            "last_seen_at": machine.last_seen_at}


@api.get("/projects", response={200: list[ProjectOut], **READ_REFUSALS}, auth=READ_AUTH,
         url_name="project_list", summary="List projects")
@paginate(Pages)
def list_projects(request: HttpRequest, search: Annotated[str, Field(max_length=100)] = ""):
    """The projects you may read; ``search``: those whose name or slug contains it."""
    return PageOf(selectors.projects(viewer=request.user, search=search),
                  lambda projects: [_project_out(project) for project in projects])


@api.get("/benchmarks", response={200: list[BenchmarkOut], **READ_REFUSALS}, auth=READ_AUTH, url_name="benchmark_list",
         summary="List benchmarks")
@paginate(Pages)
def list_benchmarks(request: HttpRequest, project: str | None = None):
    return PageOf(selectors.benchmarks(viewer=request.user, project=project),
                  lambda benchmarks: [_benchmark_out(benchmark) for benchmark in benchmarks])


@api.get("/metrics", response={200: list[MetricOut], **READ_REFUSALS}, auth=READ_AUTH, url_name="metric_list",
         summary="List metrics (their ids read /metrics/{id}/series)")
@paginate(Pages)
def list_metrics(request: HttpRequest, project: str | None = None,
                 benchmark_id: Annotated[int, Field(ge=1, le=INT64_MAX)] | None = None):
    return PageOf(selectors.metrics(viewer=request.user, project=project, benchmark_id=benchmark_id),
                  lambda metrics: [_metric_out(metric) for metric in metrics])


@api.get("/machines", response={200: list[MachineOut], **READ_REFUSALS}, auth=READ_AUTH,
         url_name="machine_list", summary="List machines")
@paginate(Pages)
def list_machines(request: HttpRequest, search: Annotated[str, Field(max_length=100)] = ""):
    """The machines with runs of projects you may read; ``search``: those whose name contains it."""
    return PageOf(selectors.machines(viewer=request.user, search=search),
                  lambda machines: [_machine_out(machine) for machine in machines])


class SeriesFilters(Schema):
    machine: str | None = None
    branch: str | None = None
    limit: int = 500


@api.get("/metrics/{id:metric_id}/series", response={200: SeriesOut, **refusals(400, 401, 404, 422)},
         auth=READ_AUTH, url_name="metric_series",
         summary="One metric's results over time")
def metric_series(request: HttpRequest, metric_id: int, filters: Query[SeriesFilters]):
    metric, points = or_404(lambda: selectors.metric_series(
        metric_id=metric_id, viewer=request.user, machine=filters.machine, branch=filters.branch,
        limit=max(1, min(filters.limit, 5000))), f"No metric {metric_id}.", absent=Metric.DoesNotExist)
    series = SeriesOut.model_validate({
        "metric_id": metric.pk, "benchmark": metric.benchmark.name, "metric": metric.name, "unit": metric.unit,
        "direction": metric.direction, "points": points})
    # Validated and serialized by pydantic's core in one pass: thousands of points are this endpoint's point,
    # and the generic path (validate, dump to dicts, json.dumps) took three times as long.
    return HttpResponse(series.model_dump_json(), content_type="application/json")


class ComparisonOut(Schema):
    id: int
    metric_id: int | None
    benchmark: str
    metric: str
    unit: str
    direction: str
    method: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    bounded: bool
    change: str | None
    statistic: float | None
    df: float | None
    pvalue: float | None
    qvalue: float | None
    significant: bool
    high_p: bool
    verdict: str
    threshold: float
    confidence_level: float
    inputs: dict[str, Any]


def comparison_out(row: ComparisonRow) -> dict:
    """A stored comparison's row (:func:`results.stored_rows.stored_rows`) as the API shows it."""
    return {
        "id": row.comparison_id, "metric_id": row.metric_id, "benchmark": row.benchmark, "metric": row.metric,
        "unit": row.unit, "direction": row.direction, "method": row.method, "ratio": row.ratio, "ci_low": row.low,
        "ci_high": row.high, "bounded": row.bounded, "change": row.change or None, "statistic": row.statistic,
        "df": row.df, "pvalue": row.pvalue, "qvalue": row.qvalue, "significant": row.significant,
        "high_p": row.high_p, "verdict": row.verdict, "threshold": row.threshold,
        "confidence_level": row.confidence_level, "inputs": dict(row.inputs),
    }


@api.get("/runs/{id:run_id}/comparisons", response={200: list[ComparisonOut], **refusals(400, 401, 404, 422)},
         auth=READ_AUTH, url_name="run_comparisons",
         summary="A run's comparisons, worst first")
@paginate(Pages)
def run_comparisons(request: HttpRequest, run_id: int, method: str | None = None):
    found = or_404(lambda: selectors.run_comparisons(run_id=run_id, viewer=request.user, method=method),
                   f"No run {run_id}.", absent=Run.DoesNotExist)
    rows = stored_rows([(comparison.candidate, comparison) for comparison in found])
    # Worst first needs every row's verdict and change: the rows are ordered whole, converted by the page.
    return PageOf(sorted(rows, key=lambda row: row.sort_key), lambda page: [comparison_out(row) for row in page])


class AlertOut(Schema):
    id: int
    status: str
    run_id: int
    project: str
    machine: str
    commit: str | None
    state: str
    incident_id: int | None = Field(description="The incident it is part of (a machine-wide shift), if any.")
    confirmation_note: str = Field(description="Why no A/B session re-measures it, where none could be started.")
    first_run_id: int | None
    bug_url: str | None
    assignee: str | None
    comparison: ComparisonOut
    confirmation_sessions: list[int]
    notifications: list[dict[str, Any]] = Field(description="Each channel's delivery of the alert's group: "
                                                            "channel, status (pending, sent, failed), attempts, "
                                                            "error.")
    events: list[dict[str, Any]]


class AlertStatusIn(Schema):
    status: AlertStatus
    note: str = ""


def alert_outs(alerts: list[Alert]) -> list[dict]:
    """Alerts as the API shows them, from a fixed number of queries for the page (rows read in one call, the
    confirmation sessions through :mod:`results.extensions`)."""
    rows = stored_rows([(alert.comparison.candidate, alert.comparison) for alert in alerts])
    sessions = alert_sessions(alerts)
    return [{
        "id": alert.pk, "status": alert.status, "run_id": alert.group.run.pk, "project": alert.group.run.project.slug,
        "machine": alert.group.run.machine.name,
        "commit": alert.group.run.revision.commit if alert.group.run.revision else None,
        "state": alert.state, "incident_id": alert.incident_id, "confirmation_note": alert.confirmation_note,
        "first_run_id": alert.first_run_id, "bug_url": alert.bug_url or None,
        "assignee": alert.assignee.get_username() if alert.assignee else None, "comparison": comparison_out(row),
        "confirmation_sessions": sessions.get(alert.pk, []),
        "notifications": [{"channel": delivery.channel, "status": delivery.status, "attempts": delivery.attempts,
                           "error": delivery.error} for delivery in alert.group.deliveries.all()],
        "events": [{"from": e.old_status, "to": e.new_status, "note": e.note, "at": e.created_at.isoformat(),
                    "by": e.user.get_username() if e.user else None} for e in alert.events.all()],
    } for alert, row in zip(alerts, rows)]


@api.get("/alerts", response={200: list[AlertOut], **READ_REFUSALS}, auth=READ_AUTH,
         url_name="alert_list", summary="Alerts, newest first")
@paginate(Pages)
def list_alerts(request: HttpRequest, status: AlertStatus | None = None, project: str | None = None):
    return PageOf(selectors.alerts(viewer=request.user, status=status.value if status else None, project=project),
                  alert_outs)


@api.post("/alerts/{id:alert_id}/status", response={200: AlertOut, **refusals(400, 401, 403, 404, 413, 422)},
          auth=WRITE_AUTH, url_name="alert_status", summary="Triage an alert")
def alert_status(request: HttpRequest, alert_id: int, body: AlertStatusIn):
    alert = or_404(selectors.alerts(viewer=request.user).filter(pk=alert_id).first, f"No alert {alert_id}.")
    set_alert_status(alert=alert, status=body.status.value, note=body.note, user=request.user,
                     token=request_token(request))
    return alert_outs([selectors.alerts(viewer=request.user).get(pk=alert_id)])[0]


class IncidentOut(Schema):
    id: int
    kind: str
    project: str
    machine: str
    night: str
    status: str
    first_run_id: int
    text: str
    alert_ids: list[int]
    bug_url: str | None
    assignee: str | None


class IncidentStatusIn(AlertStatusIn):
    bug_url: Annotated[str, Field(max_length=500)] | None = None


def incident_outs(incidents: list[Incident]) -> list[dict]:
    """Incidents as the API shows them, each worded once (:func:`results.notifications.incident_line`)."""
    members: dict[int, list[int]] = {}
    for alert_id, incident_id in Alert.objects.filter(incident__in=incidents).order_by("pk").values_list(
            "pk", "incident_id"):
        members.setdefault(incident_id, []).append(alert_id)
    return [{"id": incident.pk, "kind": incident.kind, "project": incident.project.slug,
             "machine": incident.machine.name, "night": incident.night.isoformat(), "status": incident.status,
             "first_run_id": incident.first_run_id, "text": incident_line(incident).text,
             "alert_ids": members.get(incident.pk, []), "bug_url": incident.bug_url or None,
             "assignee": incident.assignee.get_username() if incident.assignee else None} for incident in incidents]


class SheriffWeekOut(Schema):
    week: str
    alerts: int
    incidents: int
    false_alerts: int
    false_share: float | None
    regressions_confirmed: int
    median_hours_to_alert: float | None
    median_hours_to_triage: float | None
    bisections: int
    culprits: int
    bisection_machine_hours: float


class SheriffOut(Schema):
    project: str
    weeks: list[SheriffWeekOut]
    total: SheriffWeekOut
    untriaged: int


@api.get("/projects/{slug}/sheriff", response={200: SheriffOut, **refusals(400, 401, 404, 422)}, auth=READ_AUTH,
         url_name="project_sheriff", summary="A project's sheriff numbers, week by week")
def project_sheriff(request: HttpRequest, slug: Annotated[str, Field(max_length=100)],
                    weeks: Annotated[int, Field(ge=1, le=selectors.SHERIFF_MAX_WEEKS)] = selectors.SHERIFF_WEEKS):
    """Alerts and incidents opened each week, those later found false (invalid, or dismissed by later nights),
    regressions confirmed, and the median hours from a change's first bad night to its alert and from the alert to
    its triage, the bisections that ended, the culprits they named and their machine hours; ``total`` over the
    weeks asked for."""
    numbers = or_404(lambda: selectors.sheriff_numbers(viewer=request.user, project=slug, weeks=weeks),
                     f"No project {slug}.", absent=Project.DoesNotExist)
    return {"project": numbers.project.slug, "weeks": exports.sheriff_records(numbers),
            "total": exports.sheriff_record(numbers.total), "untriaged": numbers.untriaged}


@api.get("/incidents", response={200: list[IncidentOut], **READ_REFUSALS}, auth=READ_AUTH, url_name="incident_list",
         summary="Incidents (machine-wide shifts), newest night first")
@paginate(Pages)
def list_incidents(request: HttpRequest, project: Annotated[str, Field(max_length=100)] | None = None):
    return PageOf(selectors.incidents(viewer=request.user, project=project), incident_outs)


@api.post("/incidents/{id:incident_id}/status", response={200: IncidentOut, **refusals(400, 401, 403, 404, 413, 422)},
          auth=WRITE_AUTH, url_name="incident_status", summary="Triage an incident and its alerts at once")
def incident_status(request: HttpRequest, incident_id: int, body: IncidentStatusIn):
    incident = or_404(selectors.incidents(viewer=request.user).filter(pk=incident_id).first,
                      f"No incident {incident_id}.")
    triage_incident(incident=incident, status=body.status.value, note=body.note, bug_url=body.bug_url,
                    user=request.user, token=request_token(request))
    return incident_outs([selectors.incidents(viewer=request.user).get(pk=incident_id)])[0]
