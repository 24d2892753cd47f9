"""Writes: ingestion of runs and API tokens.

Services are keyword-only and transactional: a document is checked in full before the first
row is written, and the rows of one run are written in one transaction, so a bad result
anywhere in a batch writes nothing.
"""

import hashlib
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from . import access, presentation, queue, stats
from .bulk import bulk_insert
from .models import (
    ApiToken,
    Benchmark,
    FailedResult,
    Machine,
    Membership,
    Metric,
    Project,
    Result,
    Revision,
    Role,
    Run,
    TokenScope,
)
from .result_schema import summarize_result
from .schemas import ResultIn, RunIn

TOKEN_USE_RESOLUTION = timedelta(minutes=1)


class IngestError(ValueError):
    """A document that cannot be stored; ``field`` locates the offending part."""

    status = 400

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class IngestConflict(IngestError):
    """A document that contradicts what is already stored."""

    status = 409


@dataclass(frozen=True)
class IngestOutcome:
    run: Run
    created: bool
    results: int


def _intervals(summaries: list[stats.SampleSummary], levels: list[float]) -> list[tuple[float | None, float | None]]:
    """Each result's confidence interval at its own level (spec §3), in one call; none for a single unit."""
    bounds: list[tuple[float | None, float | None]] = [(None, None)] * len(summaries)
    chosen = [i for i, summary in enumerate(summaries) if summary.n > 1]
    if chosen:
        interval = stats.mean_interval([summaries[i].mean for i in chosen], [summaries[i].variance for i in chosen],
                                       [summaries[i].n for i in chosen], confidence=[levels[i] for i in chosen])
        for i, low, high in zip(chosen, np.atleast_1d(interval.low), np.atleast_1d(interval.high)):
            # min/max guard the stored invariant low <= mean <= high against rounding.
            bounds[i] = (min(float(low), summaries[i].mean), max(float(high), summaries[i].mean))
    return bounds


def document_digest(document: RunIn) -> str:
    return hashlib.sha256(document.model_dump_json().encode()).hexdigest()


def ingest_run(*, document: RunIn, user: AbstractBaseUser | None, token: ApiToken | None = None) -> IngestOutcome:
    """Store one run and all its results, or nothing.

    ``user`` posts it (through ``token`` when the request carried one) and must be allowed to post runs to its
    project (:mod:`results.access`); None is the system itself (the runner's sessions, the operator's
    management commands), which is not checked. Re-posting a document with the same ``run_key`` returns the
    stored run (``created=False``); reusing a key for a different document is a conflict. Missing revisions,
    benchmarks and metrics are created, and missing projects and machines by those who may create them (the
    creator of a project becomes its maintainer); a metric whose unit or direction contradicts the stored one
    is rejected.

    Raises
    ------
    PermissionDenied
        If ``user`` may not post to the project, or may not create the project or machine it names.
    """
    project_slug = document.project.slug or slugify(document.project.name)
    if not project_slug:
        raise IngestError("project.slug", "cannot derive a slug from the project name; give one")
    if user is not None:
        _check_poster(document=document, project_slug=project_slug, user=user, token=token)
    digest = document_digest(document)
    if document.run_key is not None:
        existing = _existing_run(project_slug=project_slug, run_key=document.run_key, digest=digest)
        if existing is not None:
            return IngestOutcome(run=existing, created=False, results=len(document.results))

    seen: set[tuple[str, str]] = set()
    for index, result in enumerate(document.results):
        key = (result.benchmark, result.metric)
        if key in seen:
            raise IngestError(f"results[{index}]", f"benchmark {result.benchmark!r} metric {result.metric!r} "
                                                   "appears twice")
        seen.add(key)
    measured = [result for result in document.results if not result.failed]
    summaries = [summarize_result(result) for result in measured]
    intervals = _intervals(summaries, [result.confidence_level for result in measured])

    try:
        with transaction.atomic():
            run = _write_run(document=document, project_slug=project_slug, digest=digest, user=user, token=token,
                             summaries=summaries, intervals=intervals)
            transaction.on_commit(lambda: _enqueue_comparison(run.pk))
            return IngestOutcome(run=run, created=True, results=len(document.results))
    except IntegrityError:
        # A concurrent post with the same run_key won the race: answer as for a re-post.
        if document.run_key is not None:
            existing = _existing_run(project_slug=project_slug, run_key=document.run_key, digest=digest)
            if existing is not None:
                return IngestOutcome(run=existing, created=False, results=len(document.results))
        raise


def _check_poster(*, document: RunIn, project_slug: str, user: AbstractBaseUser, token: ApiToken | None) -> None:
    """Refuse (PermissionDenied) a post its user may not make: to a project where their role (or the token's
    scopes or project) does not allow uploads, or creating a project or machine they may not create, or naming
    a machine's queue, which only staff do (a queue is where a benchmark machine takes its sessions from)."""
    project = Project.objects.filter(slug=project_slug).first()
    if project is not None:
        access.require(user, "upload", project, token=token)
    elif (reason := access.may_create(user, Project, token=token)) is not None:
        raise PermissionDenied(f"No project {project_slug!r}, and you may not create one: {reason}.")
    machine = Machine.objects.filter(name=document.machine.name).first()
    if machine is None:
        reason = access.may_create(user, Machine, token=token)
        if reason is not None:
            raise PermissionDenied(f"No machine {document.machine.name!r}, and you may not create one: {reason}.")
        if document.machine.queue and not access.is_staff(user):
            raise PermissionDenied("machine.queue: only staff name a machine's queue; leave it out (the queue is "
                                   "then bench.<machine name>).")


def _enqueue_comparison(run_id: int) -> None:
    queue.enqueue(queue.COMPARE_RUN, run_id)


def _existing_run(*, project_slug: str, run_key: str, digest: str) -> Run | None:
    run = Run.objects.filter(project__slug=project_slug, run_key=run_key).first()
    if run is not None and run.payload_digest != digest:
        raise IngestConflict("run_key", f"{run_key!r} was already used for a different run (#{run.pk})")
    return run


def _write_run(*, document: RunIn, project_slug: str, digest: str, user: AbstractBaseUser | None,
               token: ApiToken | None, summaries: list[stats.SampleSummary],
               intervals: list[tuple[float | None, float | None]]) -> Run:
    creator = user if user is not None and user.is_authenticated else None
    project = get_or_insert(Project, {"slug": project_slug}, {
        "name": document.project.name, "repository_url": document.project.repository_url,
        "default_branch": document.project.default_branch, "created_by": creator})
    if project is None:
        raise IngestConflict("project.slug", f"project {document.project.name!r} exists under another slug")
    if creator is not None and project.created_by_id == creator.pk:
        Membership.objects.get_or_create(project=project, user=creator, defaults={"role": Role.MAINTAINER})
    machine = _machine(document, creator=creator)
    revision = _revision(document, project)
    metrics = _metrics(project, [(result, f"results[{index}]") for index, result in enumerate(document.results)])

    started_at = document.started_at or document.finished_at or timezone.now()
    run = Run.objects.create(
        project=project, machine=machine, revision=revision, kind=document.kind, status=Run.Status.COMPLETED,
        started_at=started_at, finished_at=document.finished_at, environment=document.environment,
        source=document.source, run_key=document.run_key, payload_digest=digest, created_by=creator, token=token,
        vouched=user is None or access.allowed(user, "vouch", project, token=token),
    )
    measured = [result for result in document.results if not result.failed]
    _choose_display_units(metrics, {(result.benchmark, result.metric): summary.mean
                                    for result, summary in zip(measured, summaries)})
    rows = []
    for result, summary, (ci_low, ci_high) in zip(measured, summaries, intervals):
        samples = result.samples
        metric = metrics[(result.benchmark, result.metric)]
        converged = result.converged
        if converged is None:
            converged = ci_low is not None and ci_high - ci_low <= metric.target_width * abs(summary.mean)
        rows.append(Result(
            run=run, metric=metric, mean=summary.mean, subsession_size=summary.subsession_size,
            variance=summary.variance, n=summary.n, sample_count=summary.sample_count,
            confidence_level=result.confidence_level, ci_low=ci_low, ci_high=ci_high,
            warmup_removed=result.warmup_removed,
            autocorrelation=None if math.isnan(summary.autocorrelation) else summary.autocorrelation,
            independent=summary.independent, converged=converged, variance_method=summary.variance_method,
            subsession_variance=None if math.isnan(summary.subsession_variance) else summary.subsession_variance,
            subsessions=summary.subsessions or None,
            samples=None if samples is None else samples.tobytes(),
            samples_shape=None if samples is None else list(samples.shape),
            metadata=result.metadata,
        ))
    bulk_insert(rows)
    bulk_insert([FailedResult(run=run, metric=metrics[(result.benchmark, result.metric)], error=result.error)
                 for result in document.results if result.failed])
    Machine.objects.filter(pk=machine.pk).update(last_seen_at=timezone.now())
    return run


def get_or_insert(model: type[models.Model], lookup: dict, defaults: dict) -> models.Model | None:
    """The row matching ``lookup``, inserted with ``defaults`` when missing, race-free.

    Concurrent first posts for a new project, machine or revision all try the insert; it is an
    ``INSERT … ON CONFLICT DO NOTHING`` (``INSERT OR IGNORE`` on SQLite), so the losers wait for the
    winner's commit and read its row instead of failing on the unique constraint. None when the
    insert conflicted on another unique field (e.g. a project name under another slug).
    """
    row = model.objects.filter(**lookup).first()
    if row is None:
        model.objects.bulk_create([model(**lookup, **defaults)], ignore_conflicts=True)
        row = model.objects.filter(**lookup).first()
    return row


def _machine(document: RunIn, *, creator: AbstractBaseUser | None) -> Machine:
    given = document.machine
    described = {
        key: value for key, value in
        {"hostname": given.hostname, "cpu_model": given.cpu_model, "cores": given.cores,
         "memory_bytes": given.memory_bytes, "os": given.os, "hardware": given.hardware}.items()
        if value not in ("", None, {})
    }
    queue = given.queue or default_queue(given.name)
    machine = get_or_insert(Machine, {"name": given.name}, {"queue": queue, "created_by": creator, **described})
    if machine is None:
        raise IngestConflict("machine.queue", f"queue {queue!r} belongs to another machine; name this machine's "
                                              "queue in machine.queue")
    # What a post says of a machine fills in what is not known of it yet, when the poster is the system, staff or
    # the machine's creator: an uploader of one project does not describe a machine others share.
    missing = {key: value for key, value in described.items() if not getattr(machine, key)}
    if missing and (creator is None or access.is_staff(creator) or machine.created_by_id == creator.pk):
        Machine.objects.filter(pk=machine.pk).update(**missing)
    return machine


def _revision(document: RunIn, project: Project) -> Revision | None:
    given = document.revision
    if given is None:
        return None
    revision = get_or_insert(
        Revision, {"project": project, "commit": given.commit, "branch": given.branch},
        {"pull_request": given.pull_request, "base_commit": given.base_commit, "author": given.author,
         "message": given.message, "timestamp": given.timestamp},
    )
    if revision.pull_request is None and given.pull_request is not None:
        Revision.objects.filter(pk=revision.pk, pull_request__isnull=True).update(pull_request=given.pull_request)
        revision.pull_request = given.pull_request
    return revision


def _metrics(project: Project, results: list[tuple[ResultIn, str]]) -> dict[tuple[str, str], Metric]:
    """Find or create every (benchmark, metric) pair in a constant number of queries."""
    names = {result.benchmark for result, _ in results}
    benchmarks = {b.name: b for b in Benchmark.objects.filter(project=project, name__in=names)}
    descriptions = {result.benchmark: result.description for result, _ in results}
    # Sorted, and ignoring conflicts: concurrent posts of new benchmarks insert in one order (no deadlock)
    # and read back each other's rows.
    Benchmark.objects.bulk_create(
        [Benchmark(project=project, name=name, description=descriptions[name])
         for name in sorted(names - benchmarks.keys())], ignore_conflicts=True,
    )
    benchmarks = {b.name: b for b in Benchmark.objects.filter(project=project, name__in=names)}
    stored = _stored_metrics(benchmarks)
    wanted = {(result.benchmark, result.metric): result for result, _ in results}
    missing = sorted(wanted.keys() - stored.keys())
    if missing:
        Metric.objects.bulk_create(
            [Metric(benchmark=benchmarks[benchmark], name=name, unit=wanted[benchmark, name].unit,
                    direction=wanted[benchmark, name].direction) for benchmark, name in missing],
            ignore_conflicts=True,
        )
        stored = _stored_metrics(benchmarks)
    # Checked after the insert: a concurrent post may have created a metric with another unit.
    for result, field in results:
        key = (result.benchmark, result.metric)
        metric = stored[key]
        if result.failed and not {"unit", "direction"} & result.model_fields_set:
            continue  # a failure that states no unit takes the series' own
        if (metric.unit, metric.direction) != (result.unit, result.direction) and not result.failed \
                and not Result.objects.filter(metric=metric).exists():
            # Known only from failures so far: its first number says what it measures.
            Metric.objects.filter(pk=metric.pk).update(unit=result.unit, direction=result.direction)
            metric.unit, metric.direction = result.unit, result.direction
        if metric.unit != result.unit:
            raise IngestConflict(
                f"{field}.unit", f"{result.unit!r} contradicts the stored unit {metric.unit!r} of metric {key}"
            )
        if metric.direction != result.direction:
            raise IngestConflict(
                f"{field}.direction",
                f"{result.direction.value!r} contradicts the stored direction {metric.direction!r} of metric {key}",
            )
    return stored


DISPLAY_UNIT_BATCH = 900
"""Metrics updated per query (SQLite's parameter limit)."""


def _choose_display_units(metrics: dict[tuple[str, str], Metric], means: dict[tuple[str, str], float]) -> None:
    """Give each new series the unit it is shown in from its first result (one query, only for new ones):
    one scale per series on every page, chart and export, whatever its later values."""
    chosen = {metric.pk: presentation.display_unit(metric.unit, means[key])
              for key, metric in metrics.items() if not metric.display_unit and key in means}
    by_unit: dict[str, list[int]] = {}
    for pk, unit in chosen.items():
        by_unit.setdefault(unit, []).append(pk)
    for unit, pks in by_unit.items():
        for start in range(0, len(pks), DISPLAY_UNIT_BATCH):
            Metric.objects.filter(pk__in=pks[start:start + DISPLAY_UNIT_BATCH], display_unit="").update(
                display_unit=unit)
    for metric in metrics.values():
        metric.display_unit = chosen.get(metric.pk, metric.display_unit)


def _stored_metrics(benchmarks: dict[str, Benchmark]) -> dict[tuple[str, str], Metric]:
    return {(m.benchmark.name, m.name): m
            for m in Metric.objects.filter(benchmark__in=benchmarks.values()).select_related("benchmark")}


DEFAULT_TOKEN_SCOPES = (TokenScope.UPLOAD,)
"""A CI job's token posts runs, and no more: a pull request's code runs in CI and can read its token."""


def create_api_token(*, user: AbstractBaseUser, name: str, project: Project | None = None,
                     scopes: Sequence[str] = DEFAULT_TOKEN_SCOPES) -> tuple[ApiToken, str]:
    """Create a token for ``user``, for one ``project`` (None: any the user may write to) and ``scopes``;
    returns the row and the token, which is never shown again. ValidationError for an unknown scope."""
    token = "pw_" + secrets.token_urlsafe(32)
    row = ApiToken(user=user, name=name, project=project, scopes=sorted(set(scopes)), prefix=token[:10],
                   digest=token_digest(token))
    row.full_clean(exclude=["digest", "prefix"])
    row.save()
    return row, token


@transaction.atomic
def set_membership(*, project: Project, user: AbstractBaseUser, role: str | None) -> Membership | None:
    """Give ``user`` the ``role`` in ``project`` (None: take their membership away); returns the membership."""
    if role is None:
        Membership.objects.filter(project=project, user=user).delete()
        return None
    Membership(project=project, user=user, role=role).full_clean(validate_unique=False, validate_constraints=False)
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def touch_api_token(*, token: ApiToken, now: datetime | None = None) -> None:
    """Record when a token was last used, to the minute: a write on every request would make every
    reader of the API a writer, queued behind the database's write lock."""
    now = now or timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < TOKEN_USE_RESOLUTION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


def register_machine(*, name: str, description: dict, queue: str = "") -> Machine:
    """Create or refresh a machine's hardware description; its queue is kept once set."""
    fields = {key: description[key] for key in ("hostname", "cpu_model", "cores", "memory_bytes", "os", "hardware")
              if key in description}
    machine, created = Machine.objects.update_or_create(
        name=name, defaults={**fields, "last_seen_at": timezone.now()},
        create_defaults={**fields, "last_seen_at": timezone.now(), "queue": queue or default_queue(name)},
    )
    if queue and machine.queue != queue:
        machine.queue = queue
        machine.full_clean(validate_unique=True, validate_constraints=True)
        machine.save(update_fields=["queue"])
    return machine


def default_queue(machine_name: str) -> str:
    return f"bench.{slugify(machine_name)[:90] or 'machine'}"
