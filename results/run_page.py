"""A run's page: per metric its readings (and, for a run a session stored, what the runner adds through
:mod:`results.extensions`: warm-up, autocorrelation, interval narrowing, machine load), and its stored
comparisons as :class:`results.rows.ComparisonRow`. Built once per run version (the view caches it); a run of
many series a page of them at a time, each series' section built when the reader opens it (:func:`run_section`)."""

from dataclasses import dataclass

from django.template.defaultfilters import floatformat, urlencode
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from . import access, charts, presentation, selectors, stats
from .stored_rows import stored_rows
from .extensions import MetricSection, run_page_additions
from .models import AlertStatus, Comparison, Result
from .rows import ComparisonRow
from .templatetags.figures import json_data


@dataclass(frozen=True)
class RunSection:
    """One result's part of the page: its anchor and what is shown of it (None: loaded when opened, from
    ``url``)."""

    result: Result
    anchor: str
    shown: MetricSection | None
    url: str = ""


def run_page(*, run_id: int, page: int = 1) -> dict:
    """The page's title, body (rendered) and figures (JSON), the same for every reader (the view checks who may
    read it first, and caches it), and the number of the page of series shown (None: every series). A run of
    more than ``selectors.RUN_PAGED_ABOVE`` series shows `page` of them, worst first, each series' section a
    placeholder its script fills from :func:`run_section` when it is opened or scrolled to. Raises
    Run.DoesNotExist."""
    detail = selectors.run_detail(run_id=run_id, viewer=access.SYSTEM, page=page)
    run = detail.run
    paged = detail.page is not None
    # A paged run's providers add what they show of the whole run; each series' part comes with its section.
    additions = run_page_additions(run, [] if paged else detail.results)
    section_url = reverse("results:run_section", args=[run.pk, 0]).removesuffix("0/")
    sections = [RunSection(result=result, anchor=f"metric-{result.metric_id}", shown=None,
                           url=f"{section_url}{result.metric_id}/")
                if paged else _section(result, additions) for result in detail.results]
    figures = {key: figure for section in sections if section.shown for key, figure in section.shown.figures.items()}
    for addition in additions:
        figures.update(addition.figures)
    machine = urlencode(run.machine.name)
    history_url = reverse("results:history", args=[0]).removesuffix("0/")
    rows = stored_rows([(comparison.candidate, comparison) for comparison in detail.comparisons],
                       alerts_by_comparison={c.pk: (c.alert_pk, AlertStatus(c.alert_status).label)
                                             for c in detail.comparisons if c.alert_pk is not None})
    comparisons = [_comparison_item(comparison, row, history_url=f"{history_url}{row.metric_id}/?machine={machine}")
                   for comparison, row in zip(detail.comparisons, rows)]
    body = render_to_string("results/_run_body.html", {
        "run": run, "sections": sections, "result_rows": [_result_item(section) for section in sections],
        "comparisons": comparisons,
        "additions": additions, "run_url": reverse("results:run", args=[0]).removesuffix("0/"),
        "failures": detail.failures, "nightly_baseline": detail.nightly_baseline, "page": detail.page,
        "page_links": list(detail.page.paginator.get_elided_page_range(detail.page.number, on_each_side=2,
                                                                       on_ends=1)) if paged else [],
        "no_nightly": "" if detail.nightly_baseline else selectors.no_nightly_before(run)})
    title = f"Run #{run.pk} · {run.project.name} · Pilot Web"
    if paged and detail.page.number > 1:
        title = f"Run #{run.pk}, page {detail.page.number} · {run.project.name} · Pilot Web"
    return {"title": title, "body": mark_safe(body), "figures": json_data(figures, "pilotweb-figures"),
            "page": detail.page.number if paged else None}


def _comparison_item(comparison: Comparison, row: ComparisonRow, *, history_url: str) -> dict:
    """A row of the comparisons table, its cells worded here: several hundred rows of template lookups on
    objects, tags and filters cost more than the rest of the page."""
    return {"benchmark": row.benchmark, "metric": row.metric, "method": row.method, "history_url": history_url,
            "baseline_run": comparison.baseline_run, "baseline_commit": comparison.baseline_commit,
            "history_size": len((comparison.inputs or {}).get("history_runs") or []), "note": row.note,
            "change": row.change or "—", "level_text": row.level_text, "threshold_text": row.threshold_text,
            "pvalue_text": row.pvalue_text, "qvalue_text": row.qvalue_text, "high_p": row.high_p, "alpha": row.alpha,
            "verdict_slug": row.verdict_slug, "verdict_label": row.verdict_label, "alert_id": row.alert_id,
            "alert_status": row.alert_status, "evidence_html": row.evidence_html}


def _result_item(section: RunSection) -> dict:
    """A row of the results table and its section, the cells worded here (as :func:`_comparison_item`)."""
    result = section.result
    metric = result.metric
    return {"anchor": section.anchor, "benchmark": metric.benchmark.name, "metric": metric.name,
            "mean": presentation.quantity_in_scale(result.mean, metric),
            "interval": presentation.interval_in_scale(result.ci_low, result.ci_high, metric),
            "variance_method": result.get_variance_method_display(), "df": result.n - 1,
            "subsessions": f"{result.subsessions} × {result.subsession_size}" if result.subsessions else "—",
            "sample_count": result.sample_count, "warmup_removed": result.warmup_removed,
            "autocorrelation": "—" if result.autocorrelation is None else floatformat(result.autocorrelation, 3),
            "independent": result.independent, "converged": result.converged,
            "bottlenecks": "; ".join((result.metadata or {}).get("bottlenecks") or [])}


def run_section(*, run_id: int, metric_id: int) -> dict:
    """One series' section of a run's page, as the page of a run of many series loads it when it is opened: its
    HTML and its figures (JSON, ``<script id="pilotweb-figures-metric-ID">``), the same for every reader (the
    view checks who may read the run first, and caches it). Raises Result.DoesNotExist."""
    result = selectors.run_result(run_id=run_id, metric_id=metric_id, viewer=access.SYSTEM)
    section = _section(result, run_page_additions(result.run, [result]))
    html = render_to_string("results/_run_section.html", {"run": result.run, "section": section})
    return {"section": mark_safe(html),
            "figures": json_data(section.shown.figures, f"pilotweb-figures-{section.anchor}")}


def _section(result: Result, additions) -> RunSection:
    """A result's section: what a provider shows of it, else its stored samples."""
    added = next((addition.sections[result.pk] for addition in additions if result.pk in addition.sections), None)
    return RunSection(result=result, anchor=f"metric-{result.metric_id}",
                      shown=stored_section(result) if added is None else added)


def stored_section(result: Result) -> MetricSection:
    """A result's stored samples (a posted or imported run): no session, so no warm-up and no narrowing."""
    metric = result.metric
    samples = result.samples_array()
    if samples is None:
        return MetricSection(figures={}, notes=(
            "Only the summary was stored (mean, variance of the subsession means, their number): there are no "
            "samples to plot.",))
    key = f"m{metric.pk}"
    values = samples.ravel()
    figures = {f"{key}-samples": charts.samples_figure(values, scale=presentation.metric_scale(metric, result.mean),
                                                      mean=result.mean, ci_low=result.ci_low, ci_high=result.ci_high)}
    notes = autocorrelation_part(figures, key, values, chosen=result.subsession_size)
    if samples.ndim > 1:
        notes.append(f"Samples stored with the shape {list(samples.shape)}, plotted flattened in time order.")
    notes.append("No session rounds: this run was posted or imported, so warm-up removal and the CI narrowing "
                 "are not known here.")
    return MetricSection(figures=figures, notes=tuple(notes))


def autocorrelation_part(figures: dict, key: str, values, *, chosen: int, min_subsessions: int = stats.MIN_SUBSESSIONS,
                         bound: float = stats.MAX_AUTOCORRELATION) -> list[str]:
    """Add the autocorrelation at every subsession size (``{key}-autocorrelation``, the chosen size marked) to
    `figures`; return the note saying why there is none, if so. The runner's sections call it too."""
    sizes, autocorrelations = stats.autocorrelation_by_size(values, min_subsessions=min_subsessions, include=[chosen])
    if not sizes:
        return [f"Fewer than {min_subsessions} samples: no autocorrelation to show."]
    figures[f"{key}-autocorrelation"] = charts.autocorrelation_figure(sizes, autocorrelations, chosen=chosen,
                                                                       bound=bound)
    return []
