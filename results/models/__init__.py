"""The stored truth: projects, machines, benchmarks and their metrics, revisions, runs, results.

Every invariant the statistics rely on is a database constraint, so no code path (admin,
API, shell, a future bug) can store a result the numerical core would choke on.

- :mod:`.projects`: projects, their members and API tokens, machines;
- :mod:`.benchmarks`: benchmarks and their metrics;
- :mod:`.runs`: revisions, runs (and the one definition of a series' nights), results, failed results;
- :mod:`.comparisons`: comparisons with their verdicts, and the chunks a large run's comparison is shared in;
- :mod:`.alerts`: change points, alerts, their groups, deliveries, incidents and events.

Callers import ``from results.models import X``; the names are re-exported here (and Django finds the
models through this package).
"""

from .alerts import (
    Alert,
    AlertEvent,
    AlertGroup,
    AlertState,
    AlertStatus,
    ChangeKind,
    ChangePoint,
    Channel,
    Delivery,
    DeliveryStatus,
    Incident,
    IncidentKind,
)
from .benchmarks import Benchmark, Direction, Metric
from .comparisons import Comparison, ComparisonChunk, ComparisonMethod, Verdict
from .projects import ApiToken, Machine, Membership, Project, Role, TokenScope, WebhookFormat
from .runs import (
    OUTSIDE_SERIES,
    SERIES_KINDS,
    SESSION_KINDS,
    FailedResult,
    Result,
    Revision,
    Run,
    RunKind,
    RunStatus,
    nights_before,
    series_nights,
)

__all__ = [
    "Alert", "AlertEvent", "AlertGroup", "AlertState", "AlertStatus", "ChangeKind", "ChangePoint", "Channel", "Delivery",
    "DeliveryStatus", "Incident", "IncidentKind",
    "Benchmark", "Direction", "Metric",
    "Comparison", "ComparisonChunk", "ComparisonMethod", "Verdict",
    "ApiToken", "Machine", "Membership", "Project", "Role", "TokenScope", "WebhookFormat",
    "OUTSIDE_SERIES", "SERIES_KINDS", "SESSION_KINDS", "FailedResult", "Result", "Revision", "Run", "RunKind", "RunStatus",
    "nights_before", "series_nights",
]
