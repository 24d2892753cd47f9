"""The native JSON format of a run, and the API's response shapes.

A run document is validated here in full before anything is written: a bad field anywhere
rejects the whole document with its location named. Its results are :mod:`results.result_schema`'s.
"""

from datetime import UTC, datetime
from typing import Annotated, Any

from ninja import Schema
from pydantic import AfterValidator, BaseModel, Field, WithJsonSchema, model_validator

from .identifiers import (
    BRANCH_MAX_LENGTH,
    COMMIT_MAX_LENGTH,
    COMMIT_PATTERN,
    RESERVED_QUEUES,
    check_branch,
    check_commit,
    check_queue,
)
from .models import Run
# A result of the document is validated without Django (manage.py compare --files reads files with it).
from .result_schema import Count, JsonObject, Name, ResultIn, SingleLine
from .result_schema import INT32_MAX as INT32_MAX, describe_errors as describe_errors  # results.api's

# Database integer columns: PositiveBigIntegerField holds this on every backend (PositiveIntegerField's limit,
# INT32_MAX, is the results' own: results.result_schema).
INT64_MAX = 2**63 - 1


EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
"""A run's times lie in [EARLIEST, LATEST): a date near year 1 or 9999 overflowed every page that names its
night (a night is a day shifted by hours in a time zone)."""


def _utc(value: datetime) -> datetime:
    """An aware UTC datetime from 1970 up to 2100 (a naive one is taken as UTC); a ValueError otherwise."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        value = value.astimezone(UTC)
    except OverflowError:
        value = None
    if value is None or not EARLIEST <= value < LATEST:
        raise ValueError(f"must lie from {EARLIEST:%Y-%m-%d} up to {LATEST:%Y-%m-%d} (UTC)")
    return value


Timestamp = Annotated[datetime, AfterValidator(_utc), WithJsonSchema(
    {"type": "string", "format": "date-time", "description": f"From {EARLIEST:%Y-%m-%d} up to {LATEST:%Y-%m-%d}."})]
Commit = Annotated[str, AfterValidator(check_commit), WithJsonSchema(
    {"type": "string", "minLength": 1, "maxLength": COMMIT_MAX_LENGTH, "pattern": f"^{COMMIT_PATTERN.pattern}$",
     "description": "A commit hash, tag or ref (never starting with '-')."})]
OptionalCommit = Annotated[str, AfterValidator(lambda value: value and check_commit(value)), WithJsonSchema(
    {"type": "string", "maxLength": COMMIT_MAX_LENGTH, "pattern": f"^({COMMIT_PATTERN.pattern})?$",
     "description": "A commit hash, tag or ref, or empty."})]
# A lookup by the start of a commit hash: short enough to type, long enough not to match half the history.
CommitPrefix = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{4,64}$", description=(
    "The start of a commit hash: 4 to 64 hexadecimal digits."))]
Branch = Annotated[str, AfterValidator(check_branch), WithJsonSchema(
    {"type": "string", "maxLength": BRANCH_MAX_LENGTH, "pattern": r"^(?!-)[^\s\x00-\x1f\x7f~^:?*\[\\]*$",
     "description": "A branch name as git accepts one (git check-ref-format --branch), never starting with '-'."})]
Queue = Annotated[str, AfterValidator(lambda value: value and check_queue(value)), WithJsonSchema(
    {"type": "string", "maxLength": 100, "description": "A Celery queue, not one of the system's "
                                                        f"({', '.join(RESERVED_QUEUES)}); empty: bench.<name>."})]


class ProjectIn(Schema):
    name: Name
    slug: Annotated[str, Field(max_length=100, pattern=r"^[-a-zA-Z0-9_]*$")] = ""
    repository_url: Annotated[SingleLine, Field(max_length=200)] = ""
    default_branch: Annotated[Branch, Field(min_length=1)] = "main"


class MachineIn(Schema):
    name: Name
    hostname: Annotated[SingleLine, Field(max_length=255)] = ""
    cpu_model: Annotated[SingleLine, Field(max_length=255)] = ""
    cores: Count | None = None
    memory_bytes: Annotated[int, Field(ge=0, le=INT64_MAX)] | None = None
    os: Annotated[SingleLine, Field(max_length=255)] = ""
    queue: Annotated[Queue, Field(max_length=100)] = ""
    hardware: JsonObject = {}


class RevisionIn(Schema):
    commit: Commit
    branch: Branch = ""
    pull_request: Count | None = None
    base_commit: OptionalCommit = ""
    author: Annotated[SingleLine, Field(max_length=255)] = ""
    message: str = ""
    timestamp: Timestamp | None = None


class RunIn(Schema):
    run_key: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    project: ProjectIn
    machine: MachineIn
    revision: RevisionIn | None = None
    kind: Run.Kind = Run.Kind.MANUAL
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    environment: JsonObject = {}
    source: Annotated[SingleLine, Field(max_length=200)] = ""
    results: Annotated[list[ResultIn], Field(min_length=1)]

    @model_validator(mode="after")
    def finished_after_started(self) -> "RunIn":
        if self.started_at and self.finished_at and self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        return self


class RunCreatedOut(Schema):
    id: int
    created: bool
    url: str = Field(description="The run in the API (GET /api/v1/runs/{id}).")
    page_url: str = Field(description="The run's page on the dashboard.")
    results: int


class ResultOut(Schema):
    id: int
    metric_id: int
    benchmark_id: int
    benchmark: str
    metric: str
    unit: str
    direction: str
    mean: float
    subsession_size: int
    variance: float
    n: int
    sample_count: int
    confidence_level: float
    ci_low: float | None
    ci_high: float | None
    warmup_removed: int
    autocorrelation: float | None
    independent: bool
    converged: bool
    samples_shape: list[int] | None


class RunOut(Schema):
    id: int
    project: str
    machine: str
    kind: str
    status: str
    commit: str | None
    branch: str | None
    pull_request: int | None
    started_at: datetime
    finished_at: datetime | None
    source: str
    run_key: str | None
    compared_at: datetime | None = Field(description="When the run's comparisons were computed; null until then.")


class FailedResultOut(Schema):
    metric_id: int
    benchmark_id: int
    benchmark: str
    metric: str
    error: str


class RunDetailOut(RunOut):
    environment: dict[str, Any]
    results: list[ResultOut]
    failures: list[FailedResultOut] = Field(description="Benchmarks that gave no number in this run.")


class ProjectOut(Schema):
    id: int
    name: str
    slug: str
    repository_url: str
    default_branch: str


class BenchmarkOut(Schema):
    id: int
    project_id: int
    project: str
    name: str
    description: str


class MetricOut(Schema):
    id: int
    benchmark_id: int
    benchmark: str
    project: str
    name: str
    unit: str
    direction: str
    threshold: float
    confidence_level: float
    target_width: float


class MachineOut(Schema):
    id: int
    name: str
    hostname: str
    cpu_model: str
    cores: int | None
    memory_bytes: int | None
    os: str
    queue: str
    last_seen_at: datetime | None


# Plain pydantic models for what is built from plain rows: ninja's Schema reads every field through an
# ORM-aware getter, which was half the series endpoint's time at 500 points.
class SeriesPointOut(BaseModel):
    run_id: int
    started_at: datetime
    commit: str | None
    machine: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    subsession_size: int
    variance: float
    n: int


class SeriesOut(BaseModel):
    metric_id: int
    benchmark: str
    metric: str
    unit: str
    direction: str
    points: list[SeriesPointOut]


class ErrorOut(Schema):
    detail: str
    errors: list[dict[str, Any]] = []
