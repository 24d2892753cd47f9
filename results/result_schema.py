"""One result of the native run document, validated, and the summary it is compared by.

The API, ``import_results`` and ``manage.py compare --files`` validate results with :class:`ResultIn`; nothing
here needs Django or a database (``results.schemas`` builds the whole run document on it).
"""

import math
import re
from typing import Annotated, Any, Literal

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

from . import json_input, stats
from .stats import VARIANCE_METHODS, Direction

SAMPLE_DTYPE = np.dtype("<f8")
"""How raw samples are held and stored: little-endian float64."""
DEFAULT_THRESHOLD = 0.02
"""A metric's practical-significance threshold θ unless it states one: changes inside ±2% are no change."""

# Database integer columns: PositiveIntegerField holds this on every backend.
INT32_MAX = 2**31 - 1
# Measurements and their summaries are bounded so that every statistic stays finite in float64 (Fieller's
# limits square the product of two means, which overflows past about 1e77); no measurement comes near it.
MAX_MAGNITUDE = 1e30
# A failed result's error text: a traceback's last lines, not a log.
MAX_ERROR_LENGTH = 10_000
Count = Annotated[int, Field(ge=1, le=INT32_MAX)]


# Control characters (C0, DEL, C1), the line and paragraph separators and the bidirectional overrides: a name
# holding one could start a new line (a heading in a pull request's Markdown, a fake line in an e-mail) or show
# other text than it holds.
_NOT_SINGLE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def check_single_line(value: str) -> str:
    """`value` if it is one line of plain text, else a ValueError saying what it holds."""
    found = _NOT_SINGLE_LINE.search(value)
    if found is not None:
        raise ValueError(f"must be one line of text, without control characters (it holds U+{ord(found.group()):04X})")
    return value


def _storable_json(value: Any) -> Any:
    """A free-form object every database stores as it is: bounded nesting, finite numbers, integers in 64 bits
    (Python's encoder writes NaN and infinity, which PostgreSQL's jsonb refuses; orjson refuses deep nesting)."""
    problem = json_input.field_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(check_single_line)]
SingleLine = Annotated[str, AfterValidator(check_single_line)]
"""Text shown as one line (a name, a unit, a host): no control characters, no line breaks."""
JsonObject = Annotated[dict[str, Any], AfterValidator(_storable_json)]
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


class SummaryIn(BaseModel):
    """What a comparison needs when raw samples are not kept: the mean, ``variance`` and ``n`` with
    ``variance / n`` the variance of the mean and ``n − 1`` its degrees of freedom (for independent units:
    their variance and number), and Pilot's subsession size q. ``variance_method`` says how the variance
    was estimated (default: ``summary``, as posted)."""

    mean: float = Field(allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)
    subsession_size: Count
    variance: float = Field(ge=0, le=MAX_MAGNITUDE**2, allow_inf_nan=False)
    n: Count
    variance_method: Literal[tuple(VARIANCE_METHODS)] = "summary"  # type: ignore[valid-type]


class ResultIn(BaseModel):
    benchmark: Annotated[SingleLine, Field(min_length=1, max_length=500)]
    metric: Name = "time"
    unit: Annotated[SingleLine, Field(min_length=1, max_length=50)] = "s"
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


def summarize_result(result: ResultIn) -> stats.SampleSummary:
    """A given summary is taken as given (a runner computed it after warm-up removal, or by WPS);
    otherwise it is computed from the samples (spec §2a, §6)."""
    if result.summary is None:
        return stats.summarize_samples(result.samples)
    given = result.summary
    return stats.SampleSummary(
        mean=given.mean, subsession_size=given.subsession_size, variance=given.variance, n=given.n,
        sample_count=given.n * given.subsession_size if result.samples is None or result.samples.size < given.n
        else result.samples.size,
        autocorrelation=math.nan, independent=True, variance_method=given.variance_method)


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
