"""How a stored comparison becomes a :class:`results.rows.ComparisonRow`: every reader (pages, API, notifications,
the ``import_results`` command) shows stored comparisons through :func:`stored_rows`, so a row read back reads the
same as one just computed by :mod:`results.comparisons`, which writes them.
"""

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from . import decisions
from .models import Comparison, ComparisonMethod, Result, Verdict
from .nightly_rows import MIN_HISTORY, SINGLE_VALUES, shift_note
from .pairwise_rows import BOOTSTRAP_WITHIN_RUNS, RUN_NOISE_UNKNOWN, SMALL_SIDES, half_width
from .rows import ComparisonRow, Side


def stored_rows(items: Sequence[tuple[Result, Comparison | None]], *, machines: dict[int, str] | None = None,
                alerts_by_comparison: dict[int, tuple[int, str]] | None = None) -> list[ComparisonRow]:
    """Results with their stored comparison (or None: not compared yet) as rows, in their order.

    The results need their metric (and its benchmark) loaded; ``machines`` gives machine names by run id,
    ``alerts_by_comparison`` (alert id, status) by comparison id. Each side's half-width is computed at the
    comparison's stored confidence level; the baseline of a history comparison is the mean of its K
    run means, with their variance (so its interval carries the night-to-night variation).
    """
    machines = machines or {}
    alerts_by_comparison = alerts_by_comparison or {}
    levels = np.array([(comparison or result.metric).confidence_level for result, comparison in items], dtype=float)
    candidates = half_width([r.variance for r, _ in items], [r.n for r, _ in items], levels) if items else []
    baselines = [_stored_baseline(comparison) for _, comparison in items]
    baseline_widths = half_width([b.variance or 0.0 for b in baselines], [b.n or 0 for b in baselines],
                                           levels) if items else []
    rows = []
    for (result, comparison), width, baseline, baseline_width in zip(items, candidates, baselines, baseline_widths):
        metric = result.metric
        common = {
            "benchmark": metric.benchmark.name, "metric": metric.name, "unit": metric.unit,
            "direction": metric.direction, "metric_id": metric.pk, "run_id": result.run_id,
            "display_unit": metric.display_unit,
            "machine": machines.get(result.run_id, ""),
            "candidate": Side(mean=result.mean, variance=result.variance, n=result.n,
                              subsession_size=result.subsession_size, half_width=width,
                              independent=result.independent),
        }
        if comparison is None:
            rows.append(ComparisonRow(
                **common, method="", baseline=Side(mean=None), ratio=None, low=None, high=None, bounded=False,
                statistic=None, df=None, pvalue=None, qvalue=None, verdict="not compared",
                threshold=metric.threshold, confidence_level=metric.confidence_level,
                note="the run has not been compared yet"))
            continue
        inputs = comparison.inputs or {}
        if comparison.verdict == Verdict.INSUFFICIENT_HISTORY:
            found = len(inputs.get("history_runs", []))
            note = f"{found} earlier night{'s' if found != 1 else ''}, {inputs.get('needed', MIN_HISTORY)} needed"
        elif comparison.method == ComparisonMethod.HISTORY:
            single = result.n == 1 and all(entry[2] == 1 for entry in inputs.get("history") or [])
            note = f"mean of {baseline.n} nights" + (SINGLE_VALUES if single else "")
        elif comparison.method == ComparisonMethod.SHIFT:
            note = shift_note(len(inputs.get("pooled_runs") or []), len(inputs.get("history_runs") or []),
                              int(inputs.get("starts_tried") or 1), float(inputs.get("mode_factor") or 1.0),
                              inputs.get("newest_weight"))
        elif decisions.RUN_NOISE_UNKNOWN_KEY in inputs:
            note = RUN_NOISE_UNKNOWN
        elif "within_runs" in inputs:
            note = BOOTSTRAP_WITHIN_RUNS
        else:
            note = SMALL_SIDES if inputs.get("df_rule") == "hsu" else ""
        alert = alerts_by_comparison.get(comparison.pk) or (None, None)
        rows.append(ComparisonRow(
            **common, method=comparison.method,
            baseline=replace(baseline, half_width=baseline_width if baseline.mean is not None else None),
            ratio=comparison.ratio, low=comparison.ci_low, high=comparison.ci_high, bounded=comparison.bounded,
            statistic=comparison.statistic, df=comparison.df, pvalue=comparison.pvalue, qvalue=comparison.qvalue,
            verdict=comparison.verdict, threshold=comparison.threshold, confidence_level=comparison.confidence_level,
            note=note, comparison_id=comparison.pk, alert_id=alert[0], alert_status=alert[1], inputs=inputs,
            verdict_from="bootstrap" if comparison.method == ComparisonMethod.BOOTSTRAP else "fieller"))
    return rows


def _stored_baseline(comparison: Comparison | None) -> Side:
    """The baseline side a stored comparison was computed from (its inputs), without a half-width."""
    if comparison is None:
        return Side(mean=None)
    inputs = comparison.inputs or {}
    if comparison.method == ComparisonMethod.HISTORY:
        history = inputs.get("history") or []
        if len(history) < 2:
            return Side(mean=None)
        means = np.array([entry[0] for entry in history], dtype=float)
        return Side(mean=float(means.mean()), variance=float(means.var(ddof=1)), n=len(history))
    baseline = inputs.get("baseline")
    if isinstance(baseline, list) and len(baseline) >= 3:
        # [mean, variance, n], and since the comparison service, [..., subsession size, independent].
        size, independent = (baseline[3], bool(baseline[4])) if len(baseline) == 5 else (None, True)
        return Side(mean=float(baseline[0]), variance=float(baseline[1]), n=int(baseline[2]),
                    subsession_size=size, independent=independent)
    return Side(mean=None)
