"""The runner's part of a run page (registered with :func:`results.extensions.add_to_run_pages`): for a run a
session stored, each metric's readings split as the session analysed them (removed warm-up shaded), the
autocorrelation at every subsession size, the interval narrowing round by round, and the session's machine
load, bottleneck warnings and monitoring overhead."""

from collections.abc import Sequence

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from results import charts
from results.extensions import MetricSection, RunPageAddition
from results.run_page import autocorrelation_part
from results.models import Result, Run

from . import replay
from . import session as session_loop
from .models import Round, Session
from .monitor import BOTTLENECK_THRESHOLD

MAX_WARNINGS_LISTED = 50


def session_analysis(run: Run, results: Sequence[Result]) -> RunPageAddition | None:
    """The addition for a run measured by a session, None for a posted or imported run; three queries."""
    session = Session.objects.filter(runs=run).select_related("job").order_by("-queued_at", "-id").first()
    if session is None:
        return None
    workload = (run.environment or {}).get("workload")
    rows = [row for row in Round.objects.filter(session=session).order_by("index")
            if workload is None or row.workload == workload]
    records = [row.record() for row in rows]
    targets = session.job.session_targets()
    figures: dict[str, dict] = {}
    sections = {result.pk: _section(result, records, targets) for result in results
                if records and all(result.metric.name in record.outcome.readings for record in records)}
    if rows:
        utilisation = charts.utilisation_figure([(row.index, row.monitor) for row in rows],
                                                threshold=BOTTLENECK_THRESHOLD)
        if utilisation is not None:
            figures["utilisation"] = utilisation
    overhead = (session.outcome or {}).get("overhead")
    if overhead and overhead.get("ratio") is not None:
        figures["overhead"] = charts.overhead_figure(overhead)
    warnings = [(row.index, warning) for row in rows for warning in (row.monitor or {}).get("warnings", [])]
    context = {"session": session, "rounds": len(rows), "figures": figures, "threshold": BOTTLENECK_THRESHOLD,
               "warnings": warnings[:MAX_WARNINGS_LISTED], "more_warnings": max(0, len(warnings) - MAX_WARNINGS_LISTED)}
    return RunPageAddition(
        header=mark_safe(render_to_string("runner/_run_session_header.html", context)),
        detail=mark_safe(render_to_string("runner/_run_session_detail.html", context)),
        figures=figures, sections=sections)


def _section(result: Result, records: list, targets: session_loop.SessionTargets) -> MetricSection:
    metric = result.metric
    key = f"m{metric.pk}"
    split = replay.session_samples(records, metric.name, targets, stored=result.samples_array())
    figures = {f"{key}-samples": charts.samples_figure(
        split.values, unit=metric.unit, kept=split.kept, spans=split.spans, mean=result.mean,
        ci_low=result.ci_low, ci_high=result.ci_high)}
    notes = []
    if targets.warmup is session_loop.WarmupMethod.WPS:
        notes.append("WPS: the estimate is a regression of round durations on work amounts, so the subsession "
                     "autocorrelation does not apply.")
    else:
        notes += autocorrelation_part(figures, key, split.values[split.kept], chosen=result.subsession_size,
                                      min_subsessions=targets.min_subsessions, bound=targets.max_autocorrelation)
    spec = session_loop.MetricSpec(metric.name, metric.unit, metric.direction)
    points = replay.ci_narrowing(records, spec, targets, trimmed=split.records)
    figures[f"{key}-narrowing"] = charts.ci_narrowing_figure(points, target=targets.target_width)
    if len(points) < len(records):
        notes.append(f"CI narrowing: after {len(points)} of the {len(records)} rounds, evenly spread (each point "
                     "re-analyses every sample so far).")
    return MetricSection(figures=figures, notes=tuple(notes), removed=int((~split.kept).sum()),
                         total=int(split.values.size))
