"""Reads, by page. Each selector issues a fixed number of queries, whatever the number of rows.

- :mod:`.lists`: the lists pages filter and page through (runs, projects, metrics, machines, alerts, incidents);
- :mod:`.overview`: the nightly overview;
- :mod:`.compare`: two runs compared, tonight's baseline, a pull request's review;
- :mod:`.alert_page`: the alerts page;
- :mod:`.history`: a metric's history, one run in detail;
- :mod:`.sheriff`: a project's sheriff numbers, week by week;
- :mod:`.table_rows`: what their comparison tables share (the row limit, sparklines).

Views call them as ``selectors.<name>``; the names are re-exported here.
"""

from .alert_page import (
    ALERTS_PER_PAGE,
    SAME_SHIFT,
    AlertEntry,
    AlertPage,
    AlertSection,
    AlertShift,
    CommitRange,
    IncidentEntry,
    ShiftAlert,
    alert_page,
)
from .compare import (
    COMPARE_SHORTCUTS,
    RECENT_RUNS,
    PullRequestReview,
    no_nightly_before,
    nightly_before,
    pr_review,
    recent_runs,
    shortcut_baseline,
)
from .history import (
    HISTORY_LIMIT,
    RUN_PAGED_ABOVE,
    RUN_SERIES_PER_PAGE,
    MetricHistory,
    RunDetail,
    metric_history,
    run_detail,
    run_page_of,
    run_page_version,
    run_result,
)
from .lists import (
    RESULT_FIELDS_FOR_TABLES,
    RUNS_PER_EXPORT,
    RUNS_PER_PAGE,
    RunList,
    RunListEntry,
    alerts,
    benchmarks,
    incidents,
    machines,
    metric_series,
    metrics,
    projects,
    run_comparisons,
    run_list,
    run_with_results,
    runs,
)
from .overview import (
    PROJECTS_PER_PAGE,
    WITHOUT_NIGHT_NAMED,
    NightlyOverview,
    OverviewGroup,
    ProjectOverview,
    nightly_overview,
)
from .sheriff import SHERIFF_MAX_WEEKS, SHERIFF_WEEKS, SheriffNumbers, SheriffWeek, sheriff_numbers
from .table_rows import ROW_LIMIT, SPARKLINE_POINTS

__all__ = [
    "ALERTS_PER_PAGE", "SAME_SHIFT", "AlertEntry", "AlertPage", "AlertSection", "AlertShift", "CommitRange",
    "IncidentEntry", "ShiftAlert", "alert_page",
    "COMPARE_SHORTCUTS", "RECENT_RUNS", "PullRequestReview", "no_nightly_before", "nightly_before", "pr_review",
    "recent_runs", "shortcut_baseline",
    "HISTORY_LIMIT", "RUN_PAGED_ABOVE", "RUN_SERIES_PER_PAGE", "MetricHistory", "RunDetail", "metric_history",
    "run_detail", "run_page_of", "run_page_version", "run_result",
    "RESULT_FIELDS_FOR_TABLES", "RUNS_PER_EXPORT", "RUNS_PER_PAGE", "RunList", "RunListEntry", "alerts",
    "benchmarks", "incidents", "machines", "metric_series", "metrics", "projects", "run_comparisons", "run_list",
    "run_with_results", "runs",
    "PROJECTS_PER_PAGE", "WITHOUT_NIGHT_NAMED", "NightlyOverview", "OverviewGroup", "ProjectOverview",
    "nightly_overview",
    "SHERIFF_MAX_WEEKS", "SHERIFF_WEEKS", "SheriffNumbers", "SheriffWeek", "sheriff_numbers",
    "ROW_LIMIT", "SPARKLINE_POINTS",
]
