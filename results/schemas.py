"""The native JSON format of a run, and the API's response shapes.

A run document is validated here in full before anything is written: a bad field anywhere
rejects the whole document with its location named.
"""

import math
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from ninja import Schema
import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    WithJsonSchema,
    field_serializer,
    field_validator,
    model_validator,
)

from .identifiers import BRANCH_MAX_LENGTH, COMMIT_MAX_LENGTH, COMMIT_PATTERN, check_branch, check_commit
from .models import SAMPLE_DTYPE, Direction, Run
from .stats import VARIANCE_METHODS

# Database integer columns: PositiveIntegerField and PositiveBigIntegerField hold these on every backend.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Measurements and their summaries are bounded so that every statistic stays finite in float64 (Fieller's
# limits square the product of two means, which overflows past about 1e77); no measurement comes near it.
MAX_MAGNITUDE = 1e30
# A failed result's error text: a traceback's last lines, not a log.
MAX_ERROR_LENGTH = 10_000
Count = Annotated[int, Field(ge=1, le=INT32_MAX)]


def _printable(value: str) -> str:
    if any(ord(character) < 32 or ord(character) == 127 for character in value):
        raise ValueError("must not contain control characters")
    return value


def _utc(value: datetime) -> datetime:
    """An aware UTC datetime (a naive one is taken as UTC); a ValueError where UTC cannot hold it."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC") from None


def _finite_json(value: Any) -> Any:
    """JSON without NaN or infinity (Python's encoder writes them, a number past 1e308 parses to one;
    PostgreSQL's jsonb refuses them)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError("must not hold NaN or infinite numbers")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_finite_json)]
Timestamp = Annotated[datetime, AfterValidator(_utc)]
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
     "description": "A branch name (never starting with '-')."})]
MAX_SAMPLE_LEVELS = 4
Samples = Annotated[Any, WithJsonSchema({
    "type": "array",
    "items": {"anyOf": [{"type": "number"}, {"type": "array"}]},
    "description": "Raw samples in time order: a list of numbers, or balanced nested lists (at most "
                   f"{MAX_SAMPLE_LEVELS} levels) whose axis 0 is the top level (e.g. process runs) and whose last "
                   "axis holds the measurements.",
})]


def samples_array(value: Any) -> np.ndarray:
    """Raw samples as a float64 array, or a ValueError saying what is wrong with them."""
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of numbers or of balanced lists of numbers")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError("nested lists must be balanced: every unit of a level the same size") from None
    if array.dtype.kind not in "iuf" or array.size == 0:
        raise ValueError("must hold only numbers, in balanced nested lists")
    if array.ndim > MAX_SAMPLE_LEVELS:
        raise ValueError(f"at most {MAX_SAMPLE_LEVELS} levels of nesting")
    array = array.astype(SAMPLE_DTYPE, copy=False)
    if not np.isfinite(array).all():
        raise ValueError("must be finite numbers (no NaN or infinity)")
    if np.abs(array).max() > MAX_MAGNITUDE:
        raise ValueError(f"must be numbers of magnitude at most {MAX_MAGNITUDE:g}")
    return array


class ProjectIn(Schema):
    name: Name
    slug: Annotated[str, Field(max_length=100, pattern=r"^[-a-zA-Z0-9_]*$")] = ""
    repository_url: Annotated[str, Field(max_length=200)] = ""
    default_branch: Annotated[Branch, Field(min_length=1)] = "main"


class MachineIn(Schema):
    name: Name
    hostname: Annotated[str, Field(max_length=255)] = ""
    cpu_model: Annotated[str, Field(max_length=255)] = ""
    cores: Count | None = None
    memory_bytes: Annotated[int, Field(ge=0, le=INT64_MAX)] | None = None
    os: Annotated[str, Field(max_length=255)] = ""
    queue: Annotated[str, Field(max_length=100)] = ""
    hardware: JsonObject = {}


class RevisionIn(Schema):
    commit: Commit
    branch: Branch = ""
    pull_request: Count | None = None
    base_commit: OptionalCommit = ""
    author: Annotated[str, Field(max_length=255)] = ""
    message: str = ""
    timestamp: Timestamp | None = None


class SummaryIn(Schema):
    """What a comparison needs when raw samples are not kept: the mean, ``variance`` and ``n`` with
    ``variance / n`` the variance of the mean and ``n − 1`` its degrees of freedom (for independent units:
    their variance and number), and Pilot's subsession size q. ``variance_method`` says how the variance
    was estimated (default: ``summary``, as posted)."""

    mean: float = Field(allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)
    subsession_size: Count
    variance: float = Field(ge=0, le=MAX_MAGNITUDE**2, allow_inf_nan=False)
    n: Count
    variance_method: Literal[tuple(VARIANCE_METHODS)] = "summary"  # type: ignore[valid-type]


class ResultIn(Schema):
    benchmark: Annotated[str, Field(min_length=1, max_length=500)]
    metric: Name = "time"
    unit: Annotated[str, Field(min_length=1, max_length=50)] = "s"
    direction: Direction = Direction.LOWER_IS_BETTER
    description: str = ""
    samples: Samples | None = None
    summary: SummaryIn | None = None
    confidence_level: float = Field(0.95, gt=0, lt=1)
    warmup_removed: Annotated[int, Field(ge=0, le=INT32_MAX)] = 0
    converged: bool | None = None
    metadata: JsonObject = {}
    failed: bool = Field(False, description="The benchmark ran and gave no number (it crashed, timed out, or the "
                                            "tool reported an error): give no 'samples' or 'summary'. Stored and "
                                            "shown, never compared, never part of a baseline.")
    error: Annotated[str, Field(max_length=MAX_ERROR_LENGTH)] = Field(
        "", description="A failed result's error text, as the tool gave it.")

    @field_validator("samples", mode="before")
    @classmethod
    def samples_as_array(cls, samples: Any) -> np.ndarray | None:
        return None if samples is None else samples_array(samples)

    @field_serializer("samples")
    def samples_as_lists(self, samples: np.ndarray | None) -> list | None:
        return None if samples is None else samples.tolist()

    @model_validator(mode="after")
    def samples_or_summary(self) -> "ResultIn":
        if self.failed:
            if self.samples is not None or self.summary is not None:
                raise ValueError("a failed result has no numbers: give 'samples' and 'summary' only without "
                                 "'failed': true")
        elif self.error:
            raise ValueError("'error' describes a failed result: give it with 'failed': true")
        elif self.samples is None and self.summary is None:
            raise ValueError("give 'samples', or 'summary' (mean, subsession_size, variance, n), or both, or "
                             "'failed': true for a benchmark that gave no number")
        return self


class RunIn(Schema):
    run_key: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    project: ProjectIn
    machine: MachineIn
    revision: RevisionIn | None = None
    kind: Run.Kind = Run.Kind.MANUAL
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None
    environment: JsonObject = {}
    source: Annotated[str, Field(max_length=200)] = ""
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


def field_path(location: tuple | list) -> str:
    """A validation error's location as a field path: ``('body', 'document', 'results', 3, 'mean')`` →
    ``results[3].mean``."""
    path = ""
    for part in location:
        if part in ("body", "document", "query", "params"):
            continue
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def describe_errors(errors: list[dict]) -> dict:
    """pydantic's error list as the API's error body: a one-line ``detail`` and the ``errors`` by field."""
    listed = [{"field": field_path(error.get("loc", ())), "message": error.get("msg", "")} for error in errors]
    detail = "; ".join(f"{item['field']}: {item['message']}" for item in listed[:5])
    return {"detail": detail, "errors": listed}
