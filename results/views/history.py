"""Pages with charts: a metric's history and one run in detail.

Each view parses its input, calls one selector, turns the rows into Plotly figure dicts with the
pure :mod:`results.charts`, and renders; the figures reach the page as JSON in a script element.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.dateparse import parse_date
from django.utils.safestring import mark_safe
from django.utils.text import slugify


from .. import charts, presentation, selectors, stats
from ..access import readable
from ..comparisons import stored_rows
from ..extensions import run_page_additions
from ..models import Metric, Result, Run
from ..templatetags.figures import json_data

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
    """What the run page shows of one result: its figures (key → figure, in order) and notes."""

    result: Result
    anchor: str
    figures: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    removed: int | None = None
    total: int | None = None


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
    """The run page's title, body and figures, rendered; what the apps built on results add (the runner: the
    session's analysis) comes through :mod:`results.extensions`."""
    detail = selectors.run_detail(run_id=run_id)
    run = detail.run
    additions = run_page_additions(run, detail.results)
    figures: dict[str, dict] = {}
    sections = []
    for result in detail.results:
        added = next((addition.sections[result.pk] for addition in additions if result.pk in addition.sections), None)
        section = _stored_section(result) if added is None else MetricSection(
            result=result, anchor=f"metric-{result.metric_id}", figures=added.figures, notes=list(added.notes),
            removed=added.removed, total=added.total)
        figures.update(section.figures)
        sections.append(section)
    for addition in additions:
        figures.update(addition.figures)
    comparison_rows = stored_rows(
        [(comparison.candidate, comparison) for comparison in detail.comparisons],
        alerts_by_comparison={c.pk: (c.alert.pk, c.alert.get_status_display())
                              for c in detail.comparisons if getattr(c, "alert", None) is not None})
    comparisons = [{"comparison": comparison, "row": row,
                    "history_size": len((comparison.inputs or {}).get("history_runs") or [])}
                   for comparison, row in zip(detail.comparisons, comparison_rows)]
    body = render_to_string("results/_run_body.html", {
        "run": run, "sections": sections, "comparisons": comparisons, "additions": additions})
    return {"title": f"Run #{run.pk} · {run.project.name} · Pilot Web", "body": mark_safe(body),
            "figures": json_data(figures, "pilotweb-figures")}


def _stored_section(result: Result) -> MetricSection:
    """A result's stored samples (a posted or imported run): no session, so no warm-up and no narrowing."""
    metric = result.metric
    section = MetricSection(result=result, anchor=f"metric-{metric.pk}")
    samples = result.samples_array()
    if samples is None:
        section.notes.append("Only the summary was stored (mean, variance of the subsession means, their "
                             "number): there are no samples to plot.")
        return section
    key = f"m{metric.pk}"
    values = samples.ravel()
    section.figures[f"{key}-samples"] = charts.samples_figure(values, unit=metric.unit, mean=result.mean,
                                                              ci_low=result.ci_low, ci_high=result.ci_high)
    sizes, autocorrelations = stats.autocorrelation_by_size(
        values, min_subsessions=stats.MIN_SUBSESSIONS, include=[result.subsession_size])
    if sizes:
        section.figures[f"{key}-autocorrelation"] = charts.autocorrelation_figure(
            sizes, autocorrelations, chosen=result.subsession_size, bound=stats.MAX_AUTOCORRELATION)
    else:
        section.notes.append(f"Fewer than {stats.MIN_SUBSESSIONS} samples: no autocorrelation to show.")
    if samples.ndim > 1:
        section.notes.append(f"Samples stored with the shape {list(samples.shape)}, plotted flattened in time order.")
    section.notes.append("No session rounds: this run was posted or imported, so warm-up removal and the CI "
                         "narrowing are not known here.")
    return section
