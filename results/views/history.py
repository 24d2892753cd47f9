"""Pages with charts: a metric's history, one run in detail, the machines.

Each view parses its input, calls one selector, turns the rows into Plotly figure dicts with the
pure :mod:`results.charts`, and renders; the figures reach the page as JSON in a script element.
"""

import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.http import Http404, HttpRequest, HttpResponse
from django.core.cache import cache
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.dateparse import parse_date
from django.utils.safestring import mark_safe
from django.utils.text import slugify

from runner import session as session_loop
from runner.monitor import BOTTLENECK_THRESHOLD

from .. import charts, presentation, selectors
from ..comparisons import stored_rows
from ..templatetags.figures import json_data
from ..models import Metric, Result, Run
from ..access import readable

MAX_WARNINGS_LISTED = 50
TABLE_ROWS = 100
# A cached run page is keyed by the run's version; the lifetime only bounds how long an edit made
# elsewhere (a metric renamed in the admin) can take to show.
RUN_PAGE_SECONDS = 600
"""The history's data table lists the newest runs; the chart holds them all."""


def _day(value: str | None, name: str, errors: list[str]) -> date | None:
    if not value:
        return None
    try:
        parsed = parse_date(value)
    except ValueError:
        parsed = None
    if parsed is None:
        errors.append(f"“{value}” is not a date (YYYY-MM-DD); the {name} bound is ignored.")
    return parsed


@readable
def history(request: HttpRequest, metric_id: int) -> HttpResponse:
    """A metric's run means over time on one or more machines, with comparisons and change points."""
    errors: list[str] = []
    first = _day(request.GET.get("from"), "from", errors)
    last = _day(request.GET.get("to"), "to", errors)
    start = datetime.combine(first, time.min, tzinfo=dt_timezone.utc) if first else None
    end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=dt_timezone.utc) if last else None
    try:
        found = selectors.metric_history(metric_id=metric_id, machines=request.GET.getlist("machine"),
                                         branch=request.GET.get("branch"), start=start, end=end)
    except Metric.DoesNotExist:
        raise Http404("No such metric.") from None
    metric = found.metric
    figure = charts.history_figure(found.points, found.change_points, metric=metric.name, unit=metric.unit,
                                   machines=found.selected_machines)
    # The data table is rendered when asked for (?table=1): a hundred formatted rows cost more than the
    # chart, and most visits never open it.
    rows = []
    if request.GET.get("table"):
        run_url = reverse("results:run", args=[0]).removesuffix("0/")
        rows = [_history_row(point, run_url) for point in found.points[:-TABLE_ROWS - 1:-1]]
    table_query = request.GET.copy()
    table_query["table"] = "1"
    return render(request, "results/history.html", {
        "history": found, "metric": metric, "figures": {"history": figure}, "rows": rows,
        "date_from": first.isoformat() if first else "", "date_to": last.isoformat() if last else "",
        "errors": errors, "table_rows": min(TABLE_ROWS, len(found.points)), "table_query": table_query.urlencode(),
        "alerts": sum(1 for point in found.points if (point["comparison"] or {}).get("alert_id") is not None),
    })


def _history_row(point: dict, run_url: str) -> dict:
    """One row of the data table, every cell formatted here (a hundred rows of template filters and
    ``{% url %}`` tags cost more than the rest of the page)."""
    comparison = point.get("comparison") or {}
    interval = "—" if point["ci_low"] is None else f"[{point['ci_low']:.4g}, {point['ci_high']:.4g}]"
    verdict = comparison.get("verdict")
    return {
        **point,
        "url": f"{run_url}{point['run_id']}/",
        "started_text": point["started_at"].astimezone(dt_timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "commit_short": (point["commit"] or "")[:12],
        "verdict_class": slugify(verdict or "none"),
        "mean_text": f"{point['mean']:.4g}",
        "ci_text": interval,
        "verdict": verdict,
        "verdict_label": presentation.verdict_label(verdict),
        "change": "" if comparison.get("ratio") is None else presentation.format_change(
            comparison["ratio"], comparison.get("ci_low"), comparison.get("ci_high")),
        "p_text": presentation.format_probability(comparison.get("pvalue")),
        "q_text": presentation.format_probability(comparison.get("qvalue")),
        "high_p": presentation.is_high_p(comparison.get("pvalue"), comparison.get("qvalue")),
        "alert_id": comparison.get("alert_id"),
    }


@dataclass
class MetricSection:
    """What the run page shows of one result."""

    result: Result
    anchor: str
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    from_session: bool = False
    removed: int = 0
    total: int = 0


@readable
def run(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: per metric its readings, warm-up, autocorrelation and CI narrowing; the session's
    utilisation, bottlenecks and monitoring overhead; the stored comparisons.

    Everything but the page's frame is kept in the cache under the run's version (its comparison time
    and its alerts' last change): a stored run does not change, and its figures replay its session."""
    try:
        version = selectors.run_page_version(run_id=run_id)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None
    key = f"run-page:{run_id}:{version}"
    page = cache.get(key)
    if page is None:
        page = _run_page(run_id)
        cache.set(key, page, RUN_PAGE_SECONDS)
    return render(request, "results/run.html", page)


def _run_page(run_id: int) -> dict:
    """The run page's title, body and figures, rendered."""
    detail = selectors.run_detail(run_id=run_id)
    figures: dict[str, dict] = {}
    session = detail.session
    records = [row.record() for row in detail.rounds] if detail.rounds else []
    targets = session.job.session_targets() if session is not None else None
    sections = [_section(result, records, targets, figures) for result in detail.results]
    warnings = [(row.index, warning) for row in detail.rounds for warning in (row.monitor or {}).get("warnings", [])]
    if detail.rounds:
        utilisation = charts.utilisation_figure([(row.index, row.monitor) for row in detail.rounds],
                                                threshold=BOTTLENECK_THRESHOLD)
        if utilisation is not None:
            figures["utilisation"] = utilisation
    overhead = (session.outcome or {}).get("overhead") if session is not None else None
    if overhead and overhead.get("ratio") is not None:
        figures["overhead"] = charts.overhead_figure(overhead)
    comparison_rows = stored_rows(
        [(comparison.candidate, comparison) for comparison in detail.comparisons],
        alerts_by_comparison={c.pk: (c.alert.pk, c.alert.get_status_display())
                              for c in detail.comparisons if getattr(c, "alert", None) is not None})
    comparisons = [{"comparison": comparison, "row": row,
                    "history_size": len((comparison.inputs or {}).get("history_runs") or [])}
                   for comparison, row in zip(detail.comparisons, comparison_rows)]
    run = detail.run
    body = render_to_string("results/_run_body.html", {
        "run": run, "session": session, "sections": sections, "comparisons": comparisons, "figures": figures,
        "warnings": warnings[:MAX_WARNINGS_LISTED], "more_warnings": max(0, len(warnings) - MAX_WARNINGS_LISTED),
        "rounds": len(detail.rounds), "threshold": BOTTLENECK_THRESHOLD,
    })
    return {"title": f"Run #{run.pk} · {run.project.name} · Pilot Web", "body": mark_safe(body),
            "figures": json_data(figures, "pilotweb-figures")}


def _section(result: Result, records: list, targets, figures: dict) -> MetricSection:
    metric = result.metric
    section = MetricSection(result=result, anchor=f"metric-{metric.pk}")
    key = f"m{metric.pk}"
    in_rounds = bool(records) and all(metric.name in record.outcome.readings for record in records)
    if in_rounds:
        section.from_session = True
        split = charts.session_samples(records, metric.name, targets, stored=result.samples_array())
        section.removed, section.total = int((~split.kept).sum()), int(split.values.size)
        figures[f"{key}-samples"] = charts.samples_figure(
            split.values, unit=metric.unit, kept=split.kept, spans=split.spans, mean=result.mean,
            ci_low=result.ci_low, ci_high=result.ci_high)
        section.figures.append(f"{key}-samples")
        if targets.warmup is session_loop.WarmupMethod.WPS:
            section.notes.append("WPS: the estimate is a regression of round durations on work amounts, so the "
                                 "subsession autocorrelation does not apply.")
        else:
            _autocorrelation(split.values[split.kept], result, targets.min_subsessions,
                             targets.max_autocorrelation, figures, section, key)
        spec = session_loop.MetricSpec(metric.name, metric.unit, metric.direction)
        points = charts.ci_narrowing(records, spec, targets, trimmed=split.records)
        figures[f"{key}-narrowing"] = charts.ci_narrowing_figure(points, target=targets.target_width)
        section.figures.append(f"{key}-narrowing")
        if len(points) < len(records):
            section.notes.append(f"CI narrowing: after {len(points)} of the {len(records)} rounds, evenly spread "
                                 "(each point re-analyses every sample so far).")
        return section
    samples = result.samples_array()
    if samples is None:
        section.notes.append("Only the summary was stored (mean, variance of the subsession means, their "
                             "number): there are no samples to plot.")
        return section
    values = samples.ravel()
    section.total = int(values.size)
    figures[f"{key}-samples"] = charts.samples_figure(values, unit=metric.unit, mean=result.mean,
                                                      ci_low=result.ci_low, ci_high=result.ci_high)
    section.figures.append(f"{key}-samples")
    _autocorrelation(values, result, 10, 0.1, figures, section, key)
    if samples.ndim > 1:
        section.notes.append(f"Samples stored with the shape {list(samples.shape)}, plotted flattened in time order.")
    section.notes.append("No session rounds: this run was posted or imported, so warm-up removal and the CI "
                         "narrowing are not known here.")
    return section


def _autocorrelation(samples, result: Result, min_subsessions: int, bound: float, figures: dict,
                     section: MetricSection, key: str) -> None:
    sizes, values = charts.autocorrelation_by_size(samples, min_subsessions=min_subsessions,
                                                   include=[result.subsession_size])
    if not sizes:
        section.notes.append(f"Fewer than {min_subsessions} samples: no autocorrelation to show.")
        return
    figures[f"{key}-autocorrelation"] = charts.autocorrelation_figure(sizes, values, chosen=result.subsession_size,
                                                                      bound=bound)
    section.figures.append(f"{key}-autocorrelation")


@readable
def machines(request: HttpRequest) -> HttpResponse:
    """Every machine: hardware, queue, last seen, runs, and the sessions queued or running on it."""
    entries = [(entry, _hardware(entry.machine.hardware)) for entry in selectors.machines_overview()]
    return render(request, "results/machines.html", {"machines": entries})


def _hardware(details: object) -> list[tuple[str, str]]:
    """The machine's free-form hardware JSON as (key, text) pairs; nested values as compact JSON."""
    if not isinstance(details, dict):
        return [("details", json.dumps(details))] if details else []
    return [(str(key), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            for key, value in details.items()]
