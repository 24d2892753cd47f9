"""The runner's part of a run page (registered with :func:`results.extensions.add_to_run_pages`): for a run a
session stored, each metric's readings split as the session analysed them (removed warm-up shaded), the
autocorrelation at every subsession size, the interval narrowing round by round, and the session's machine
load, bottleneck warnings and monitoring overhead."""

from collections.abc import Sequence

import numpy as np
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from results import charts, presentation
from results.extensions import MetricSection, RunPageAddition
from results.run_page import autocorrelation_part
from results.models import Result, Run

from . import replay, services
from . import session as session_loop
from .models import Round, Session
from .monitor import BOTTLENECK_THRESHOLD

MAX_WARNINGS_LISTED = 50


def session_analysis(run: Run, results: Sequence[Result]) -> RunPageAddition | None:
    """The addition for a run measured by a session, None for a posted or imported run; two queries.

    Each metric's removed readings and interval narrowing are read from what the session stored when it
    finished (:class:`runner.models.SessionAnalysis`); a session finished before that is replayed here
    (:func:`runner.replay.analyse_metric`, EDM on every round), never stored by a page (a GET writes nothing:
    ``manage.py store_session_analyses`` stores them).
    """
    found = _session_rounds(run, results)
    if found is None:
        return None
    session, workload, rows, records, targets, shown, values = found
    analyses, _ = _analyses(session, workload or "", shown, records, values, targets)
    figures: dict[str, dict] = {}
    sections = {result.pk: _section(result, values[result.metric.name], analyses[result.metric.name], targets,
                                    rounds=len(records))
                for result in shown}
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


def store_missing_analyses(run: Run) -> int:
    """Replay and store the analysis of a run's metrics that its session did not store (a session finished
    before it was stored at its end, or one whose stored analysis does not fit the readings): the number of
    metrics stored. The writing twin of :func:`session_analysis`, for ``manage.py store_session_analyses``."""
    results = list(Result.objects.filter(run=run).select_related("metric"))
    found = _session_rounds(run, results)
    if found is None:
        return 0
    session, workload, _, records, targets, shown, values = found
    _, missing = _analyses(session, workload or "", shown, records, values, targets)
    if missing:
        services.store_session_analysis(session=session, workload=workload or "", metrics=missing)
    return len(missing)


def _session_rounds(run: Run, results: Sequence[Result]):
    """The session that measured `run` (None for a posted or imported run), its workload's label, rounds and
    their records, its targets, the results the rounds have readings of, and those readings by metric."""
    session = (Session.objects.filter(runs=run).select_related("job", "analysis")
               .order_by("-queued_at", "-id").first())
    if session is None:
        return None
    workload = (run.environment or {}).get("workload")
    rows = [row for row in Round.objects.filter(session=session).order_by("index")
            if workload is None or row.workload == workload]
    records = [row.record() for row in rows]
    targets = session.job.session_targets()
    shown = [result for result in results
             if records and all(result.metric.name in record.outcome.readings for record in records)]
    values = {result.metric.name: replay.readings(records, result.metric.name) for result in shown}
    return session, workload, rows, records, targets, shown, values


def _analyses(session: Session, workload: str, results: Sequence[Result], records: list,
              values: dict[str, np.ndarray], targets: session_loop.SessionTargets
              ) -> tuple[dict[str, replay.MetricAnalysis], dict[str, replay.MetricAnalysis]]:
    """Each result's analysis by metric name, and those of them replayed: not stored, or not fitting the
    readings. `workload` is "" for a run that does not name one (all the session's rounds)."""
    stored = getattr(session, "analysis", None)
    found, missing = {}, {}
    for result in results:
        name = result.metric.name
        analysis = None if stored is None else stored.metric(workload, name)
        if analysis is None or analysis.readings != values[name].size:
            spec = session_loop.MetricSpec(name, result.metric.unit, result.metric.direction)
            analysis = missing[name] = replay.analyse_metric(records, spec, targets, stored=result.samples_array())
        found[name] = analysis
    return found, missing


REMOVED_WORDS = {"short round": "in rounds too short to analyse", "no stable phase": "in rounds with no stable phase"}
"""How a reason readings were not analysed (runner.replay.REMOVED_BECAUSE) reads after their count."""


def _section(result: Result, values: np.ndarray, analysis: replay.MetricAnalysis,
             targets: session_loop.SessionTargets, *, rounds: int) -> MetricSection:
    metric = result.metric
    key = f"m{metric.pk}"
    kept = analysis.kept()
    figures = {f"{key}-samples": charts.samples_figure(
        values, scale=presentation.metric_scale(metric, result.mean), kept=kept, spans=analysis.spans, mean=result.mean,
        ci_low=result.ci_low, ci_high=result.ci_high)}
    notes = []
    if targets.warmup is session_loop.WarmupMethod.WPS:
        notes.append("WPS: the estimate is a regression of round durations on work amounts, so the subsession "
                     "autocorrelation does not apply.")
    else:
        notes += autocorrelation_part(figures, key, values[kept], chosen=result.subsession_size,
                                      min_subsessions=targets.min_subsessions, bound=targets.max_autocorrelation)
    points = analysis.narrowing
    figures[f"{key}-narrowing"] = charts.ci_narrowing_figure(points, target=targets.target_width)
    if len(points) < rounds:
        notes.append(f"CI narrowing: after {len(points)} of the {rounds} rounds, evenly spread (each point "
                     "re-analyses every sample so far).")
    reasons: dict[str, int] = {}
    for start, stop, _, why in analysis.spans:
        why = REMOVED_WORDS.get(why, why)
        reasons[why] = reasons.get(why, 0) + int(stop - start)
    return MetricSection(figures=figures, notes=tuple(notes), removed=int((~kept).sum()), total=int(values.size),
                         removed_by=tuple((why, count) for why, count in reasons.items() if count))
