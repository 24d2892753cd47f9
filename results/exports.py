"""Every table of the dashboard as CSV or JSON (``?format=csv`` / ``?format=json`` on its page).

The records carry the numbers the page shows, unrounded, in the series' one scale (its display unit), with
changes and θ as percentages; a page's filters select the same rows (all of them, not only the most notable).
"""

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import wraps

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from . import presentation
from .presentation import in_scale

FORMATS = ("csv", "json")


def downloadable(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page whose table downloads: the view gets ``export`` (None for the page, else the format) as a keyword
    argument; a format not offered is a 400 naming the choices before the view runs."""
    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            export = requested(request)
        except ValueError as error:
            return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
        return view(request, *args, export=export, **kwargs)

    return checked


def requested(request: HttpRequest) -> str | None:
    """The export format asked for (None: the HTML page); raises ValueError naming a format not offered."""
    name = request.GET.get("format")
    if not name or name == "html":
        return None
    if name not in FORMATS:
        raise ValueError(f"format must be one of html, {', '.join(FORMATS)}; not “{name}”.")
    return name


def response(records: Sequence[Mapping], *, name: str, format_name: str, columns: Sequence[str] | None = None
             ) -> HttpResponse:
    """The records as a download named ``<name>.<format>``; CSV columns in `columns` order (the first record's
    keys by default), JSON a list of objects."""
    columns = list(columns or (records[0].keys() if records else ()))
    if format_name == "json":
        body = json.dumps(list(records), ensure_ascii=False, indent=1, default=str)
        reply = HttpResponse(body, content_type="application/json; charset=utf-8")
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(_flat(record) for record in records)
        reply = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    reply["Content-Disposition"] = f'attachment; filename="{name}.{format_name}"'
    return reply


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these is a formula to a spreadsheet; names come from uploaded files."""


def _flat(record: Mapping) -> dict:
    return {key: _cell(json.dumps(value) if isinstance(value, (list, dict)) else value)
            for key, value in record.items()}


def _cell(value: object) -> object:
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def _percent(ratio: float | None) -> float | None:
    return None if ratio is None else (ratio - 1.0) * 100.0


def comparison_records(rows: Iterable, *, extra: Mapping[str, object] | None = None) -> list[dict]:
    """Comparison rows (:class:`results.rows.ComparisonRow`) as records: the same numbers every page shows."""
    records = []
    for row in rows:
        factor, unit = row.scale
        records.append({
            **(extra or {}), "benchmark": row.benchmark, "metric": row.metric, "machine": row.machine,
            "run_id": row.run_id, "metric_id": row.metric_id, "method": row.method, "unit": unit,
            "baseline_mean": in_scale(row.baseline.mean, factor),
            "baseline_half_width": in_scale(row.baseline.half_width, factor),
            "candidate_mean": in_scale(row.candidate.mean, factor),
            "candidate_half_width": in_scale(row.candidate.half_width, factor),
            "change_percent": _percent(row.ratio),
            "ci_low_percent": _percent(row.low) if row.bounded else None,
            "ci_high_percent": _percent(row.high) if row.bounded else None,
            "confidence_level": row.confidence_level, "threshold_percent": row.threshold * 100.0,
            "pvalue": row.pvalue, "qvalue": row.qvalue, "verdict": row.verdict, "note": row.note,
        })
    return records


COMPARISON_COLUMNS = ("project", "night", "benchmark", "metric", "machine", "run_id", "metric_id", "method", "unit",
                      "baseline_mean", "baseline_half_width", "candidate_mean", "candidate_half_width",
                      "change_percent", "ci_low_percent", "ci_high_percent", "confidence_level",
                      "threshold_percent", "pvalue", "qvalue", "verdict", "note")


def history_records(history) -> list[dict]:
    """A series' history (:class:`results.selectors.MetricHistory`), oldest first: each run's mean and interval
    in the series' scale, and the comparison it is shown with."""
    factor, unit = history.scale
    records = []
    for point in history.points:
        comparison = point.get("comparison") or {}
        records.append({
            "run_id": point["run_id"], "started_at": point["started_at"].isoformat(), "machine": point["machine"],
            "commit": point["commit"], "branch": point["branch"], "kind": point["kind"], "unit": unit,
            "mean": in_scale(point["mean"], factor), "ci_low": in_scale(point["ci_low"], factor),
            "ci_high": in_scale(point["ci_high"], factor), "n": point["n"],
            "compared_by": comparison.get("method"), "change_percent": _percent(comparison.get("ratio")),
            "change_low_percent": _percent(comparison.get("ci_low")),
            "change_high_percent": _percent(comparison.get("ci_high")), "pvalue": comparison.get("pvalue"),
            "qvalue": comparison.get("qvalue"), "verdict": comparison.get("verdict"),
        })
    return records


def alert_records(listing) -> list[dict]:
    """A page of alerts (:class:`results.selectors.AlertPage`): each alert with its state, triage, first night,
    commit range and the comparison that opened it (its pooled evidence where there is some)."""
    records = []
    for section in listing.sections:
        for shift in section.shifts:
            for entry in shift.entries:
                alert, row = entry.alert, entry.evidence or entry.row
                commits = entry.commits
                records.append({
                    "id": alert.pk, "project": section.project.slug, "machine": alert.group.run.machine.name,
                    "benchmark": row.benchmark, "metric": row.metric, "metric_id": row.metric_id,
                    "verdict": entry.row.verdict, "state": alert.state, "status": alert.status,
                    "first_run_id": alert.first_run_id, "change_percent": _percent(row.ratio),
                    "ci_low_percent": _percent(row.low) if row.bounded else None,
                    "ci_high_percent": _percent(row.high) if row.bounded else None,
                    "pvalue": row.pvalue, "qvalue": row.qvalue, "bug_url": alert.bug_url or None,
                    "assignee": alert.assignee.get_username() if alert.assignee else None,
                    "last_good_commit": commits.last_good_commit if commits else None,
                    "first_bad_commit": commits.first_bad_commit if commits else None,
                    "machines": shift.machines,
                })
    return records


def result_records(results) -> list[dict]:
    """A run's results (:class:`results.models.Result`, metric and benchmark loaded), in each series' scale."""
    records = []
    for result in results:
        factor, unit = presentation.metric_scale(result.metric, result.mean)
        records.append({
            "benchmark": result.metric.benchmark.name, "metric": result.metric.name, "metric_id": result.metric_id,
            "unit": unit, "mean": in_scale(result.mean, factor), "ci_low": in_scale(result.ci_low, factor),
            "ci_high": in_scale(result.ci_high, factor), "confidence_level": result.confidence_level,
            "degrees_of_freedom": result.n - 1, "variance_method": result.variance_method,
            "subsession_size": result.subsession_size, "subsessions": result.subsessions,
            "samples": result.sample_count, "warmup_removed": result.warmup_removed,
            "autocorrelation": result.autocorrelation, "converged": result.converged,
        })
    return records


def run_records(entries, *, url: str) -> list[dict]:
    """Runs as the runs list shows them (:class:`results.selectors.RunListEntry`), each with its page (`url`:
    the runs list's absolute address)."""
    return [{
        "id": entry.run.pk, "project": entry.run.project.slug, "machine": entry.run.machine.name,
        "kind": entry.run.kind, "status": entry.run.status,
        "commit": entry.run.revision.commit if entry.run.revision else None,
        "branch": entry.run.revision.branch if entry.run.revision else None,
        "started_at": entry.run.started_at.isoformat(), "source": entry.run.source, "results": entry.results,
        "failed": entry.failed,
        "changes": entry.counts, "url": f"{url}{entry.run.pk}/",
    } for entry in entries]


def sheriff_records(numbers) -> list[dict]:
    """A project's sheriff numbers, a row a week (:func:`results.selectors.sheriff_numbers`), oldest first."""
    return [sheriff_record(week) for week in numbers.weeks]


def sheriff_record(week) -> dict:
    """One week's sheriff numbers (or the period's total) as a row."""
    return {"week": week.start.isoformat(), "alerts": week.alerts, "incidents": week.incidents,
            "false_alerts": week.false_alerts, "false_share": week.false_share,
            "regressions_confirmed": week.regressions_confirmed, "median_hours_to_alert": week.hours_to_alert,
            "median_hours_to_triage": week.hours_to_triage, "bisections": week.bisections,
            "culprits": week.culprits, "bisection_machine_hours": week.bisection_hours}
