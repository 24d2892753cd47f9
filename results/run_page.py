"""A run's page: per metric its readings (and, for a run a session stored, what the runner adds through
:mod:`results.extensions`: warm-up, autocorrelation, interval narrowing, machine load), and its stored
comparisons as :class:`results.rows.ComparisonRow`. Built once per run version (the view caches it)."""

from dataclasses import dataclass

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from . import access, charts, presentation, selectors, stats
from .stored_rows import stored_rows
from .extensions import MetricSection, run_page_additions
from .models import Result
from .templatetags.figures import json_data


@dataclass(frozen=True)
class RunSection:
    """One result's part of the page: its anchor and what is shown of it."""

    result: Result
    anchor: str
    shown: MetricSection


def run_page(*, run_id: int) -> dict:
    """The page's title, body (rendered) and figures (JSON), the same for every reader (the view checks who may
    read it first, and caches it). Raises Run.DoesNotExist."""
    detail = selectors.run_detail(run_id=run_id, viewer=access.SYSTEM)
    run = detail.run
    additions = run_page_additions(run, detail.results)
    sections = []
    for result in detail.results:
        added = next((addition.sections[result.pk] for addition in additions if result.pk in addition.sections), None)
        sections.append(RunSection(result=result, anchor=f"metric-{result.metric_id}",
                                   shown=stored_section(result) if added is None else added))
    figures = {key: figure for section in sections for key, figure in section.shown.figures.items()}
    for addition in additions:
        figures.update(addition.figures)
    rows = stored_rows(
        [(comparison.candidate, comparison) for comparison in detail.comparisons],
        alerts_by_comparison={c.pk: (c.alert.pk, c.alert.get_status_display())
                              for c in detail.comparisons if getattr(c, "alert", None) is not None})
    comparisons = [{"comparison": comparison, "row": row,
                    "history_size": len((comparison.inputs or {}).get("history_runs") or [])}
                   for comparison, row in zip(detail.comparisons, rows)]
    body = render_to_string("results/_run_body.html", {
        "run": run, "sections": sections, "comparisons": comparisons, "additions": additions,
        "failures": detail.failures, "nightly_baseline": detail.nightly_baseline,
        "no_nightly": "" if detail.nightly_baseline else selectors.no_nightly_before(run)})
    return {"title": f"Run #{run.pk} · {run.project.name} · Pilot Web", "body": mark_safe(body),
            "figures": json_data(figures, "pilotweb-figures")}


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
