"""Pages with charts: a metric's history and one run in detail (built by :mod:`results.run_page`).

Each view parses its input, calls one selector, turns the rows into Plotly figure dicts with the
pure :mod:`results.charts`, and renders; the figures reach the page as JSON in a script element.
"""

from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date

from .. import charts, decisions, exports, nights, presentation, selectors
from ..stored_rows import stored_rows
from ..access import readable
from ..models import Metric, Result, Run
from ..run_page import run_page
from ..run_page import run_section as run_page_section

TABLE_ROWS = 100
"""The history's data table lists the newest runs; the chart holds them all."""
# A cached run page is keyed by the run's version; the lifetime only bounds how long an edit made
# elsewhere (a metric renamed in the admin) can take to show.
RUN_PAGE_SECONDS = 600


def _day(value: str | None, name: str, errors: list[str]) -> date | None:
    if not value:
        return None
    try:
        parsed = parse_date(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed > nights.LAST_DAY:
        errors.append(f"“{value}” is not a date (YYYY-MM-DD) up to {nights.LAST_DAY}; the {name} bound is ignored.")
        return None
    return parsed


@readable
@exports.downloadable
def history(request: HttpRequest, metric_id: int, *, export: str | None) -> HttpResponse:
    """A metric's run means over time on one or more machines, with comparisons and change points."""
    errors: list[str] = []
    first = _day(request.GET.get("from"), "from", errors)
    last = _day(request.GET.get("to"), "to", errors)
    start = datetime.combine(first, time.min, tzinfo=dt_timezone.utc) if first else None
    end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=dt_timezone.utc) if last else None
    try:
        found = selectors.metric_history(metric_id=metric_id, viewer=request.user, machines=request.GET.getlist("machine"),
                                         branch=request.GET.get("branch"), start=start, end=end)
    except Metric.DoesNotExist:
        raise Http404("No such metric.") from None
    metric = found.metric
    if export:
        return exports.response(exports.history_records(found), name=f"history-{metric.pk}", format_name=export)
    if found.branch and found.branch != metric.benchmark.project.default_branch and found.branch not in found.branches:
        errors.append(f"This series has no runs on the branch “{found.branch}”; its branches: "
                      f"{', '.join(found.branches) or 'none named'}.")
    scale = found.scale
    figure = charts.history_figure(found.points, found.change_points, found.alerts, metric=metric.name,
                                   scale=scale, machines=found.selected_machines)
    # The data table is rendered when asked for (?table=1): a hundred formatted rows cost more than the
    # chart, and most visits never open it.
    rows = []
    if request.GET.get("table"):
        run_url = reverse("results:run", args=[0]).removesuffix("0/")
        rows = [_history_row(point, run_url, scale) for point in found.points[:-TABLE_ROWS - 1:-1]]
    table_query = request.GET.copy()
    table_query["table"] = "1"
    return render(request, "results/history.html", {
        "history": found, "metric": metric, "figures": {"history": figure}, "rows": rows,
        "date_from": first.isoformat() if first else "", "date_to": last.isoformat() if last else "",
        "errors": errors, "table_rows": min(TABLE_ROWS, len(found.points)), "table_query": table_query.urlencode(),
        "alerts": [_alert_row(alert) for alert in found.alerts],
    })


def _history_row(point: dict, run_url: str, scale: tuple[float, str]) -> dict:
    """One row of the data table, every cell formatted here (a hundred rows of template filters and
    ``{% url %}`` tags cost more than the rest of the page), in the series' one scale."""
    comparison = point.get("comparison") or {}
    verdict = comparison.get("verdict")
    return {
        **point,
        "url": f"{run_url}{point['run_id']}/",
        "started_text": timezone.localtime(point["started_at"]).strftime("%Y-%m-%d %H:%M %Z"),
        "verdict_class": presentation.verdict_slug(verdict),
        "mean_text": presentation.format_quantity(point["mean"], None, scale),
        "ci_text": presentation.format_interval(point["ci_low"], point["ci_high"], scale),
        "verdict": verdict,
        "verdict_label": presentation.verdict_label(verdict),
        "change": "" if comparison.get("ratio") is None else presentation.format_change(
            comparison["ratio"], comparison.get("ci_low"), comparison.get("ci_high")),
        "p_text": presentation.format_probability(comparison.get("pvalue")),
        "q_text": presentation.format_probability(comparison.get("qvalue")),
        "high_p": decisions.is_high_p(comparison.get("pvalue"), comparison.get("qvalue")),
        "alert_id": comparison.get("alert_id"),
        "alert_text": presentation.said_alert(comparison["alert_id"], comparison["alert_status"])
        if comparison.get("alert_id") else "",
    }


def _alert_row(alert: dict) -> dict:
    """One alert of the series as its list shows it."""
    verdict = alert["verdict"]
    # Named as every page names nights (a run started at 02:00 belongs to the night before), the start in the title.
    return {**alert, "night_text": presentation.said_night(alert["night"]),
            "started_text": timezone.localtime(alert["started_at"]).strftime("%Y-%m-%d %H:%M %Z"),
            "verdict_label": presentation.verdict_label(verdict), "verdict_class": presentation.verdict_slug(verdict),
            "change": "" if alert["ratio"] is None else presentation.format_change(alert["ratio"], alert["low"],
                                                                                   alert["high"]),
            "p_text": presentation.format_probability(alert["pvalue"]),
            "q_text": presentation.format_probability(alert["qvalue"])}


@readable
@exports.downloadable
def run(request: HttpRequest, run_id: int, *, export: str | None) -> HttpResponse:
    """One run: per metric its readings, warm-up, autocorrelation and CI narrowing; the session's
    utilisation, bottlenecks and monitoring overhead; the stored comparisons.

    Everything but the page's frame is kept in the cache under the run's version (its comparison time
    and its alerts' last change): a stored run does not change, and its session's analysis is stored.
    A run of many series shows a page of them (``?page=``, worst first), each series' section loaded when
    opened (:func:`run_section`); ``?metric=`` goes to the page that shows that series. ``?format=csv|json``
    downloads all its results (``&table=comparisons``: its comparisons), whatever the page."""
    try:
        if export:
            detail = selectors.run_detail(run_id=run_id, viewer=request.user)
            comparisons_table = request.GET.get("table") == "comparisons"
            return exports.response(
                exports.comparison_records(stored_rows([(c.candidate, c) for c in detail.comparisons]))
                if comparisons_table else exports.result_records(detail.results),
                name=f"run-{run_id}-{'comparisons' if comparisons_table else 'results'}", format_name=export,
                columns=exports.COMPARISON_COLUMNS if comparisons_table else None)
        metric = request.GET.get("metric", "")
        if metric.isdecimal() and 0 < int(metric) < 2**63:
            # A link to one series of the run (the history chart's, an alert's): to the page that shows it.
            number = selectors.run_page_of(run_id=run_id, metric_id=int(metric), viewer=request.user) or 1
            return redirect(f"{_page_url(request, number)}#metric-{int(metric)}")
        version = selectors.run_page_version(run_id=run_id, viewer=request.user)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None
    number = _page_number(request.GET.get("page"))
    # A number beyond the last page is sent to the last (known once one such request built it), so that no
    # number makes the page be built again on every request.
    pages_key = f"run-page:{run_id}:{version}:pages"
    last = cache.get(pages_key)
    if last is not None and number > last:
        return redirect(_page_url(request, last))
    shown = cache.get(f"run-page:{run_id}:{version}:{number}")
    if shown is None:
        shown = run_page(run_id=run_id, page=number)
        actual = shown["page"] or 1
        cache.set(f"run-page:{run_id}:{version}:{actual}", shown, RUN_PAGE_SECONDS)
        if actual != number:
            cache.set(pages_key, actual, RUN_PAGE_SECONDS)
            return redirect(_page_url(request, actual))
    return render(request, "results/run.html", shown)


def _page_url(request: HttpRequest, number: int) -> str:
    return request.path if number == 1 else f"{request.path}?page={number}"


def _page_number(value: str | None) -> int:
    """``?page=`` as a page number: 1 unless a positive whole number."""
    return int(value) if value and value.isdecimal() and 0 < int(value) < 10**6 else 1


@readable
def run_section(request: HttpRequest, run_id: int, metric_id: int) -> HttpResponse:
    """One series' section of a run's page (its readings, notes and charts), which the page of a run of many
    series loads when the reader opens it; read as the page is read (a run the reader may not read is not
    found) and cached under the same run version."""
    try:
        version = selectors.run_page_version(run_id=run_id, viewer=request.user)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None
    key = f"run-page:{run_id}:{version}:metric-{metric_id}"
    section = cache.get(key)
    if section is None:
        try:
            section = run_page_section(run_id=run_id, metric_id=metric_id)
        except Result.DoesNotExist:
            raise Http404("No such series in this run.") from None
        cache.set(key, section, RUN_PAGE_SECONDS)
    return render(request, "results/run_section.html", section)
