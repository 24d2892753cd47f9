"""Where the apps built on results add to its pages, without results importing them.

The runner adds a session's analysis to the page of each run it stored (:mod:`runner.run_page`): the
stable phases and removed warm-up of every metric, the interval narrowing round by round, the machine's
load and the monitoring overhead; and to each alert the A/B sessions that re-measured it
(:mod:`runner.alert_page`) with its bisections; to a project's sheriff numbers the bisections that ended; and
to a history chart the culprits bisections named. It renders a run page's HTML itself; an alert's part is a
template and its context, rendered in the alert page's request (its forms need the page's CSRF token). An app
registers a provider once, in its ``AppConfig.ready``.
"""

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.safestring import SafeString

from .models import Alert, Result, Run

Figure = dict


@dataclass(frozen=True)
class MetricSection:
    """What a provider shows of one result instead of the stored samples: its figures (key → Plotly figure,
    in order), notes, how many of its readings were removed of how many, and why (reason, readings), so
    that the warm-up the results table counts is told apart from the rest."""

    figures: dict[str, Figure]
    notes: tuple[str, ...] = ()
    removed: int | None = None
    total: int | None = None
    removed_by: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class RunPageAddition:
    """A provider's part of a run page: HTML under the title and after the metrics (rendered by the provider,
    safe), the figures that HTML places, and sections by result id."""

    header: SafeString = SafeString("")
    detail: SafeString = SafeString("")
    figures: dict[str, Figure] = field(default_factory=dict)
    sections: dict[int, MetricSection] = field(default_factory=dict)


RunPageProvider = Callable[[Run, Sequence[Result]], RunPageAddition | None]
_run_page_providers: list[RunPageProvider] = []


def add_to_run_pages(provider: RunPageProvider) -> None:
    """Register ``provider(run, results)``: called for every run page rendered, None when it has nothing to add."""
    _register(_run_page_providers, provider)


def run_page_additions(run: Run, results: Sequence[Result]) -> list[RunPageAddition]:
    return [addition for provider in _run_page_providers if (addition := provider(run, results)) is not None]


def _register(providers: list, provider) -> None:
    if provider not in providers:
        providers.append(provider)


def _by_alert(providers: list, alerts: Sequence[Alert]) -> dict[int, list]:
    """What every provider gives each alert, in registration order; each provider is called once."""
    found: dict[int, list] = {}
    for provider in providers:
        for alert_id, value in provider(alerts).items():
            found.setdefault(alert_id, []).append(value)
    return found


@dataclass(frozen=True)
class AlertAddition:
    """A provider's part of one alert on the alert list: its template, rendered in the page's request (so its
    forms carry the page's CSRF token) with ``part`` set to `context`."""

    template: str
    context: dict


AlertProvider = Callable[..., dict[int, AlertAddition]]
_alert_providers: list[AlertProvider] = []


def add_to_alerts(provider: AlertProvider) -> None:
    """Register ``provider(alerts, *, triageable)``: called once per alert list rendered, an
    :class:`AlertAddition` by alert id for those it adds to; ``triageable`` holds the ids of the alerts the viewer
    may triage (actions are offered on those only)."""
    _register(_alert_providers, provider)


def alert_additions(alerts: Sequence[Alert], *, triageable: Collection[int] = ()) -> dict[int, list[AlertAddition]]:
    found: dict[int, list] = {}
    for provider in _alert_providers:
        for alert_id, value in provider(alerts, triageable=triageable).items():
            found.setdefault(alert_id, []).append(value)
    return found


AlertSessionsProvider = Callable[[Sequence[Alert]], dict[int, list[int]]]
_alert_session_providers: list[AlertSessionsProvider] = []


def add_alert_sessions(provider: AlertSessionsProvider) -> None:
    """Register ``provider(alerts)``: the ids of the sessions re-measuring each alert, by alert id (the API)."""
    _register(_alert_session_providers, provider)


def alert_sessions(alerts: Sequence[Alert]) -> dict[int, list[int]]:
    return {alert_id: [session for ids in found for session in ids]
            for alert_id, found in _by_alert(_alert_session_providers, alerts).items()}


@dataclass(frozen=True)
class BisectionEnd:
    """A bisection that ended (for the sheriff numbers): when, whether it named a culprit, its machine time."""

    ended_at: datetime
    found: bool
    machine_seconds: float


BisectionsProvider = Callable[[int, datetime], list[BisectionEnd]]
_bisection_providers: list[BisectionsProvider] = []


def add_bisections(provider: BisectionsProvider) -> None:
    """Register ``provider(project_id, since)``: the bisections of a project that ended since a moment."""
    _register(_bisection_providers, provider)


def bisections_ended(project_id: int, since: datetime) -> list[BisectionEnd]:
    return [ended for provider in _bisection_providers for ended in provider(project_id, since)]


@dataclass(frozen=True)
class Culprit:
    """The commit a bisection named as the cause of a night's change on one machine, with its change over its
    parent (relative) and interval."""

    commit: str
    change: float | None
    low: float | None
    high: float | None


CulpritsProvider = Callable[[Collection[int]], dict[int, Culprit]]
_culprit_providers: list[CulpritsProvider] = []


def add_culprits(provider: CulpritsProvider) -> None:
    """Register ``provider(first_run_ids)``: the culprit named for each night (an alert's first run), by run id."""
    _register(_culprit_providers, provider)


def culprits(first_run_ids: Collection[int]) -> dict[int, Culprit]:
    return {run_id: culprit for provider in _culprit_providers for run_id, culprit in provider(first_run_ids).items()}
