"""A metric's history: run means over time, one trace per machine, with their CIs, the history baseline band,
change points, the series' alerts and improvements."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from results import decisions, presentation
from results.presentation import format_change, in_scale

from .axes import _axis_range, _beyond, _bulk_range, _scale_switch
from .style import CONFIG, IMPROVEMENT, PALETTE, QUIET, REGRESSION, Figure, _layout, _number, _rgba, escape

if TYPE_CHECKING:
    from ..extensions import Culprit


def _scaled_point(point: Mapping, factor: float) -> dict:
    """A history point (or change point, or alert) with its values in the series' scale."""
    scaled = {**point, **{key: in_scale(point.get(key), factor) for key in ("mean", "ci_low", "ci_high")
                          if key in point}}
    comparison = point.get("comparison")
    if comparison and comparison.get("band"):
        scaled["comparison"] = {**comparison, "band": [in_scale(limit, factor) for limit in comparison["band"]]}
    return scaled


def _timestamp(value: datetime) -> str:
    """A UTC wall-clock string Plotly's date axis reads (it ignores time zones)."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _band(xs: Sequence, lows: Sequence[float | None], highs: Sequence[float | None]) -> tuple[list, list]:
    """Closed polygons (one per stretch of known limits, separated by None) for a ``fill: "toself"`` band."""
    out_x: list = []
    out_y: list = []
    stretch: list[tuple] = []

    def close() -> None:
        if stretch:
            if out_x:
                out_x.append(None)
                out_y.append(None)
            out_x.extend([x for x, _, _ in stretch] + [x for x, _, _ in reversed(stretch)])
            out_y.extend([high for _, _, high in stretch] + [low for _, low, _ in reversed(stretch)])
            stretch.clear()

    for x, low, high in zip(xs, lows, highs):
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            close()
        else:
            stretch.append((x, low, high))
    close()
    return out_x, out_y


class HistoryPoint(TypedDict, total=False):
    """One run mean of the history (a row of ``results.selectors.metric_history``).

    ``comparison`` is the comparison shown for the point (history for nightlies, pairwise for pull
    requests) or None: keys ``method, ratio, ci_low, ci_high, pvalue, qvalue, verdict,
    confidence_level, inputs, alert_id, alert_status``.
    """

    id: int
    run_id: int
    started_at: datetime
    machine: str
    commit: str | None
    branch: str | None
    kind: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    n: int
    comparison: Mapping | None


class ChangePointRow(TypedDict):
    run_id: int
    started_at: datetime
    machine: str
    ratio: float
    ci_low: float | None
    ci_high: float | None
    pvalue: float | None
    kind: str
    drift_per_night: float | None
    mean: float | None


class AlertMarker(TypedDict, total=False):
    """An alert of the series (``results.selectors.metric_history``), drawn at its first night: ``pk``, ``state``
    (suspected, confirmed, dismissed), ``status`` (its triage, worded), ``verdict`` of the comparison that opened
    it, ``started_at``, ``night`` (:func:`results.nights.night_of`) and ``mean`` of its first night, ``machine``,
    its evidence (``ratio``, ``low``, ``high``,
    ``pvalue``, ``qvalue``, ``nights`` pooled), ``first_run_id``, and the ``culprit`` a bisection named for its
    night (:class:`results.extensions.Culprit`), if any."""

    pk: int
    state: str
    status: str
    state_note: str
    verdict: str
    started_at: datetime
    night: date
    mean: float | None
    machine: str
    ratio: float | None
    low: float | None
    high: float | None
    pvalue: float | None
    qvalue: float | None
    nights: int | None
    first_run_id: int
    culprit: Culprit | None


ALERT_MARKERS = (
    # (side, state) → legend label, Plotly symbol, colour; a dismissed alert's side is not drawn
    (("regression", "confirmed"), "▲ alert (regression)", "triangle-up", REGRESSION),
    (("regression", "suspected"), "△ alert (suspected regression)", "triangle-up-open", REGRESSION),
    (("improvement", "confirmed"), "▼ alert (improvement)", "triangle-down", IMPROVEMENT),
    (("improvement", "suspected"), "▽ alert (suspected improvement)", "triangle-down-open", IMPROVEMENT),
    ((None, "dismissed"), "✕ alert dismissed", "x-thin-open", QUIET),  # either side: one legend entry
)


def _alert_hover(alert: Mapping, when: str) -> str:
    night = f"{presentation.said_night(alert['night'])}, run started {when} UTC"
    lines = [f"<b>alert #{alert['pk']}</b> · {escape(alert['state'])} {escape(_side(alert['verdict']))}",
             f"first night: {night} · {escape(alert['machine'])}"]
    if alert.get("ratio") is not None:
        nights = alert.get("nights")
        pooled = f" over {nights} night{'s' if nights != 1 else ''} pooled" if nights else ""
        lines.append(f"{format_change(alert['ratio'], alert.get('low'), alert.get('high'))}{pooled}")
    if alert.get("pvalue") is not None:
        tail = (f", {presentation.said_probability('q', alert['qvalue'])}" if alert.get("qvalue") is not None
                else "")
        lines.append(f"{presentation.said_probability('p', alert['pvalue'])}{tail}")
    lines.append(f"triage: {escape(alert['status'])}" + (f" · {escape(alert['state_note'])}"
                                                          if alert.get("state_note") else ""))
    lines.append("<i>click for the first night's run</i>")
    return "<br>".join(lines)


def _culprit_hover(alert: Mapping, when: str) -> str:
    culprit = alert["culprit"]
    change = presentation.format_relative_change(culprit.change, culprit.low, culprit.high)
    change = f" · {change} over its parent" if change else ""
    return (f"<b>culprit {escape(presentation.short_commit(culprit.commit))}</b>{change}<br>found by bisection of "
            f"the {presentation.said_night(alert['night'])} (run started {when} UTC) · {escape(alert['machine'])}")


def _side(verdict: str) -> str:
    return decisions.CHANGE_SIDES.get(verdict, "regression")


def history_bands(comparisons: Sequence[Mapping | None]) -> tuple[list[float | None], list[float | None]]:
    """The history baseline band of each point: where tonight's mean was expected if nothing changed,
    as the history comparison stored it (the prediction interval of one new run mean,
    :func:`results.stats.compare_with_history`). None where there is no history comparison."""
    bands = [(comparison or {}).get("band") if (comparison or {}).get("method") == "history" else None
             for comparison in comparisons]
    return ([band[0] if band else None for band in bands], [band[1] if band else None for band in bands])


def _history_hover(point: Mapping, unit: str, when: str) -> str:
    commit = point.get("commit")
    lines = [f"<b>{escape(commit[:12])}</b>" + (f" on {escape(point['branch'])}" if point.get("branch") else "")
             if commit else "<b>no revision</b>"]
    lines.append(f"{when} UTC · {escape(point['machine'])} · {escape(point.get('kind', ''))}")
    interval = (f" [{_number(point['ci_low'])}, {_number(point['ci_high'])}]"
                if point.get("ci_low") is not None else " (no CI)")
    lines.append(f"mean {_number(point['mean'])} {escape(unit)}{interval}")
    comparison = point.get("comparison")
    if comparison:
        ratio = comparison.get("ratio")
        if ratio is not None:
            change = format_change(ratio, comparison.get("ci_low"), comparison.get("ci_high"))
            baseline = "history" if comparison["method"] == "history" else "base"
            lines.append(f"vs {baseline}: {change}")
        if comparison.get("pvalue") is not None:
            tail = (f", {presentation.said_probability('q', comparison['qvalue'])}"
                    if comparison.get("qvalue") is not None else "")
            lines.append(f"{presentation.said_probability('p', comparison['pvalue'])}{tail}")
        lines.append(presentation.verdict_label(comparison.get("verdict")))
        if comparison.get("alert_id") is not None:
            lines.append(escape(presentation.said_alert(comparison["alert_id"], comparison["alert_status"])))
    lines.append("<i>click for the run</i>")
    return "<br>".join(lines)


def history_figure(points: Sequence[HistoryPoint], change_points: Sequence[ChangePointRow] = (),
                   alerts: Sequence[AlertMarker] = (), *, metric: str, scale: tuple[float, str],
                   machines: Sequence[str] | None = None) -> Figure:
    """Run means over time, one trace per machine, with their CIs, the history baseline band,
    change points, the series' alerts at their first nights (filled: confirmed, open: suspected, ✕:
    dismissed) and improvements.

    Parameters
    ----------
    points : sequence of HistoryPoint
        Oldest first. ``customdata`` of every clickable marker is the run id.
    change_points : sequence of ChangePointRow
    alerts : sequence of AlertMarker
    metric : str
        The axis title.
    scale : (float, str)
        The series' one scale (:func:`results.presentation.series_scale`): values are divided by the factor
        and shown in the unit.
    machines : sequence of str, optional
        Trace (and colour) order; by default the machines in order of appearance.
    """
    factor, unit = scale
    points = [_scaled_point(point, factor) for point in points]
    change_points = [_scaled_point(row, factor) for row in change_points]
    alerts = [_scaled_point(alert, factor) for alert in alerts]
    by_machine: dict[str, list[Mapping]] = {}
    for name in machines or ():
        by_machine[name] = []
    for point in points:
        by_machine.setdefault(point["machine"], []).append(point)
    data: list[dict] = []
    improvements: list[Mapping] = []
    # Nights where an improvement's alert (▼ ▽) is drawn: the night's own ▼ would repeat it.
    alert_nights = {alert["first_run_id"] for alert in alerts
                    if alert["state"] != "dismissed" and _side(alert["verdict"]) == "improvement"}
    for position, (machine, rows) in enumerate(by_machine.items()):
        if not rows:
            continue
        colour = PALETTE[position % len(PALETTE)]
        name = escape(machine)
        xs = [_timestamp(row["started_at"]) for row in rows]
        comparisons = [row.get("comparison") for row in rows]
        band_x, band_y = _band(xs, [row.get("ci_low") for row in rows], [row.get("ci_high") for row in rows])
        if band_x:
            data.append({"type": "scatter", "mode": "lines", "x": band_x, "y": band_y, "fill": "toself",
                         "fillcolor": _rgba(colour, 0.16), "line": {"width": 0}, "hoverinfo": "skip",
                         "name": f"{name}: run CI", "legendgroup": f"ci-{position}", "showlegend": True})
        lows, highs = history_bands(comparisons)
        base_x, base_y = _band(xs, lows, highs)
        if base_x:
            data.append({"type": "scatter", "mode": "lines", "x": base_x, "y": base_y, "fill": "toself",
                         "fillcolor": "rgba(120,128,140,0.10)",
                         "line": {"width": 1, "dash": "dot", "color": _rgba(colour, 0.55)}, "hoverinfo": "skip",
                         "name": f"{name}: history baseline (95% prediction of a run mean)",
                         "legendgroup": f"base-{position}"})
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": name, "legendgroup": f"mean-{position}",
            "x": xs, "y": [row["mean"] for row in rows], "customdata": [row["run_id"] for row in rows],
            "text": [_history_hover(row, unit, x) for row, x in zip(rows, xs)],
            "hovertemplate": "%{text}<extra></extra>",
            "line": {"color": colour, "width": 1.5}, "marker": {"color": colour, "size": 6},
        })
        improvements += [row for row, comparison in zip(rows, comparisons)
                         if comparison and row["run_id"] not in alert_nights
                         and comparison.get("verdict") == "improvement"]
    shapes = []
    for drift, name, dash, symbol in ((False, "┆ change point (shift, CI)", "dash", "diamond-open"),
                                      (True, "┆ drift (no step at its night)", "dot", "triangle-right-open")):
        shown = [row for row in change_points if (row.get("kind") == decisions.DRIFT_KIND) == drift]
        if not shown:
            continue
        texts, xs = [], []
        for row in shown:
            x = _timestamp(row["started_at"])
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                           "line": {"color": "#5b6575", "width": 1, "dash": dash}})
            change = format_change(row["ratio"], row.get("ci_low"), row.get("ci_high"))
            pvalue = (f"<br>{presentation.said_probability('p', row['pvalue'])}"
                      if row.get("pvalue") is not None else "")
            said = (f"{presentation.said_drift(row['drift_per_night'])}<br>segments either side differ {change}"
                    if drift else f"shift {change}{pvalue}")
            texts.append(f"<b>{'drift' if drift else 'change point'}</b> · {escape(row['machine'])}<br>{x} UTC<br>"
                         f"{said}<br><i>click for the first run after it</i>")
            xs.append(x)
        data.append({"type": "scatter", "mode": "markers", "name": name, "x": xs,
                     "y": [row.get("mean") for row in shown], "customdata": [row["run_id"] for row in shown],
                     "text": texts, "hovertemplate": "%{text}<extra></extra>",
                     "marker": {"symbol": symbol, "size": 16, "color": "#1d2430",
                                "line": {"color": "#1d2430", "width": 2}}})
    for key, label, symbol, colour in ALERT_MARKERS:
        shown = [alert for alert in alerts if (None if alert["state"] == "dismissed" else _side(alert["verdict"]),
                                               alert["state"]) == key]
        if shown:
            xs = [_timestamp(alert["started_at"]) for alert in shown]
            data.append({
                "type": "scatter", "mode": "markers", "name": label, "legendgroup": label,
                "x": xs, "y": [alert.get("mean") for alert in shown],
                "customdata": [alert["first_run_id"] for alert in shown],
                "text": [_alert_hover(alert, x) for alert, x in zip(shown, xs)],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {"symbol": symbol, "size": 14, "color": colour, "line": {"color": colour, "width": 2}},
            })
    found = [alert for alert in alerts if alert.get("culprit") is not None]
    if found:
        xs = [_timestamp(alert["started_at"]) for alert in found]
        data.append({
            "type": "scatter", "mode": "markers+text", "name": "★ culprit found by bisection",
            "x": xs, "y": [alert.get("mean") for alert in found],
            "customdata": [alert["first_run_id"] for alert in found],
            "text": [presentation.short_commit(alert["culprit"].commit) for alert in found],
            "textposition": "top center", "textfont": {"size": 10, "color": REGRESSION},
            "hovertext": [_culprit_hover(alert, x) for alert, x in zip(found, xs)],
            "hovertemplate": "%{hovertext}<extra></extra>",
            "marker": {"symbol": "star", "size": 15, "color": REGRESSION, "line": {"color": "#ffffff", "width": 1}},
        })
    if improvements:
        xs = [_timestamp(row["started_at"]) for row in improvements]
        data.append({
            "type": "scatter", "mode": "markers", "name": "▼ improvement",
            "x": xs, "y": [row["mean"] for row in improvements], "customdata": [row["run_id"] for row in improvements],
            "text": [_history_hover(row, unit, x) for row, x in zip(improvements, xs)],
            "hovertemplate": "%{text}<extra></extra>",
            "marker": {"symbol": "triangle-down", "size": 13, "color": IMPROVEMENT,
                       "line": {"color": "#ffffff", "width": 1}},
        })
    means = np.array([point["mean"] for point in points], dtype=float)
    limits = [point.get(key) for point in points for key in ("ci_low", "ci_high")]
    limits += [limit for comparison in (point.get("comparison") for point in points)
               for limit in (comparison or {}).get("band") or ()]
    bulk = _bulk_range(np.array([*means, *(limit for limit in limits if limit is not None)], dtype=float),
                       count=len(points))
    edge = None
    if bulk is not None:
        outside = [point for point, mean in zip(points, means) if mean < bulk[0] or mean > bulk[1]]
        edge = len(data)
        data.append(_beyond(bulk, [_timestamp(point["started_at"]) for point in outside],
                            np.array([point["mean"] for point in outside], dtype=float),
                            [_history_hover(point, unit, _timestamp(point["started_at"])) for point in outside],
                            noun="run mean", count=len(outside), customdata=[point["run_id"] for point in outside]))
    y_range = {"range": _axis_range(bulk), "autorange": False} if bulk is not None else {}
    # Above the plot's right corner, under Plotly's own buttons (the top margin holds both): inside the plot
    # they covered the newest points, below it the switch displaced the range selector.
    switch = (_scale_switch(len(data), bulk, edge=edge, x=1, xanchor="right", y=1, yanchor="bottom",
                            bgcolor="rgba(255,255,255,0.85)")
              if means.size and means.min() > 0 else [])
    layout = _layout(
        height=540, shapes=shapes, margin={"t": 64, "b": 30},
        legend={"y": 1.0, "yanchor": "bottom"}, updatemenus=switch,
        yaxis={"title": {"text": f"{escape(metric)} ({escape(unit)})"}, "rangemode": "normal", **y_range},
        xaxis={
            "type": "date", "rangeslider": {"visible": True, "thickness": 0.08},
            "rangeselector": {"buttons": [
                {"count": 7, "label": "1w", "step": "day", "stepmode": "backward"},
                {"count": 1, "label": "1m", "step": "month", "stepmode": "backward"},
                {"count": 3, "label": "3m", "step": "month", "stepmode": "backward"},
                {"count": 1, "label": "1y", "step": "year", "stepmode": "backward"},
                {"step": "all", "label": "all"},
            ], "x": 0, "y": -0.02, "yanchor": "top", "font": {"size": 11}},
        },
    )
    return {"data": data, "layout": layout, "config": CONFIG}
