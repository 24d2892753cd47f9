"""Plotly figures as plain dicts, built from plain data: no Django, no database, testable alone.

Every ``*_figure`` function returns ``{"data": [...], "layout": {...}}`` for ``Plotly.newPlot``
(``static/results/charts.js`` draws them from a JSON script element). What they draw is computed
elsewhere: the statistics by :mod:`results.stats`, a session's replay by :mod:`runner.replay`.

Text that comes from users (benchmark, machine and branch names, commits, warnings) is
HTML-escaped here: Plotly renders a subset of HTML in hover labels and legends, and decodes the
entities back for display, so a name like ``<b>x</b>`` shows as typed and never as markup.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from statistics import NormalDist
from typing import Any, TypedDict

import numpy as np

from results import decisions, presentation
from results.presentation import format_change, in_scale

Figure = dict[str, Any]

PALETTE = ["#2354a8", "#c2571a", "#2a8c82", "#7b3fa0", "#8a6d00", "#b0306a", "#4d6b2a", "#5b6575"]
REGRESSION, IMPROVEMENT, INCONCLUSIVE, QUIET = "#b3261e", "#1b7f3b", "#8a5a00", "#7d8694"
MAX_DISPLAYED_SAMPLES = 20_000
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#1d2430"}
BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.18, "yanchor": "top"}
"""Legend under the plot (the run page's charts are narrow; a legend on top eats the plot)."""
RUN_MARGIN = {"t": 40, "b": 40}
RUN_HEIGHT = 420
CONFIG = {"displaylogo": False, "responsive": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}
BULK_TAIL = 0.01
BULK_SIGMAS = 5.0
"""The y range of the readings and history plots shows the bulk of the values: from the ``BULK_TAIL`` to the
``1 - BULK_TAIL`` quantile, widened to ``BULK_SIGMAS`` robust standard deviations (the spread of those quantiles
over a normal distribution's) each way of them. Normal noise stays inside (a reading beyond 5σ is one in
1.7 million) and a warm-up of more than 1% of the readings sets the range; a few readings 200 times the rest
(a 76 µs benchmark interrupted for 16 ms) are drawn at its edge instead of flattening the bulk into a line."""
OUTLIER = "#8a5a00"


def escape(text: object) -> str:
    """User text for a Plotly label: HTML-escaped (Plotly shows the entities as the characters)."""
    return html.escape(str(text), quote=True)


def _number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return presentation.format_number(value)


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


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _layout(**overrides) -> dict:
    layout = {
        "font": FONT, "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff", "hovermode": "closest",
        "margin": {"l": 70, "r": 20, "t": 40, "b": 50}, "height": 360,
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}},
        "xaxis": {"gridcolor": "#eef0f3", "zeroline": False},
        "yaxis": {"gridcolor": "#eef0f3", "zeroline": False},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


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


# --------------------------------------------------------------------------------------------
# y ranges that show the bulk, outliers at their edge, a linear/log switch


def _bulk_range(values: np.ndarray, *, count: int | None = None,
                include: Sequence[float | None] = ()) -> tuple[float, float] | None:
    """The y range of the bulk of `values` (:data:`BULK_TAIL`, :data:`BULK_SIGMAS`) that also holds every
    finite value of `include` (a mean, an interval), or None when no value lies beyond it (Plotly's own
    range then shows them all).

    `count` is how many observations the values come from when each gives several (a night's mean and its
    interval's limits); the tail quantile leaves at least two observations' worth beyond it, so that one
    outlier of a short series does not set the range.
    """
    finite = values[np.isfinite(values)]
    if finite.size < 3:
        return None
    tail = min(0.25, max(BULK_TAIL, 2.0 / (count or finite.size)))
    low, high = (float(value) for value in np.quantile(finite, [tail, 1.0 - tail]))
    z = NormalDist().inv_cdf(1.0 - tail)
    spread = (high - low) / (2.0 * z) or 0.01 * abs(float(np.median(finite))) or 1.0
    margin = (BULK_SIGMAS - z) * spread
    low, high = low - margin, high + margin
    if finite.min() >= 0.0:
        low = max(low, 0.0)
    extra = [value for value in include if value is not None and math.isfinite(value)]
    low, high = min([low, *extra]), max([high, *extra])
    if finite.min() >= low and finite.max() <= high:
        return None
    return low, high


def _axis_range(bulk: tuple[float, float]) -> list[float]:
    """The axis range around a bulk range: a little wider, so the markers at its edge are drawn whole."""
    low, high = bulk
    pad = 0.04 * (high - low)
    return [low - pad, high + pad]


def _beyond(bulk: tuple[float, float], xs: Sequence, values: np.ndarray, hover: Sequence[str], *,
            noun: str, count: int, **extra) -> dict:
    """The values beyond the bulk range, drawn at its edge (▲ above it, ▼ below) with their own value in the
    hover; the legend says how many there are (`count`: all of them, when only some are drawn)."""
    low, high = bulk
    above = values > high
    return {"type": "scatter" if above.size <= 5000 else "scattergl", "mode": "markers", "x": list(xs),
            "y": [high if up else low for up in above], "text": list(hover),
            "hovertemplate": "%{text}<extra>beyond the y range</extra>",
            "name": f"▲▼ {count} {noun}{'s' if count != 1 else ''} beyond the y range, at its edge (see log scale)",
            "marker": {"symbol": ["triangle-up" if up else "triangle-down" for up in above], "size": 9,
                       "color": OUTLIER, "line": {"color": "#ffffff", "width": 1}}, **extra}


def _scale_switch(traces: int, bulk: tuple[float, float] | None, *, edge: int | None, **position) -> list[dict]:
    """Plotly buttons (``updatemenus``, no script of ours) between the linear axis on the bulk range and a log
    axis over every value, where the markers at the range's edge (trace `edge`) are hidden."""
    linear_axis = ({"yaxis.type": "linear", "yaxis.autorange": False, "yaxis.range": _axis_range(bulk)}
                   if bulk is not None else {"yaxis.type": "linear", "yaxis.autorange": True})
    return [{"type": "buttons", "direction": "left", "showactive": True, "active": 0,
             "pad": {"l": 2, "r": 2, "t": 2, "b": 2}, "font": {"size": 11}, **position,
             "buttons": [
                 {"label": "linear", "method": "update", "args": [{"visible": [True] * traces}, linear_axis]},
                 {"label": "log", "method": "update",
                  "args": [{"visible": [index != edge for index in range(traces)]},
                           {"yaxis.type": "log", "yaxis.autorange": True}]},
             ]}]


# --------------------------------------------------------------------------------------------
# Benchmark history


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
    mean: float | None


class AlertMarker(TypedDict, total=False):
    """An alert of the series (``results.selectors.metric_history``), drawn at its first night: ``pk``, ``state``
    (suspected, confirmed, dismissed), ``status`` (triage), ``verdict`` of the comparison that opened it,
    ``started_at`` and ``mean`` of its first night, ``machine``, its evidence (``ratio``, ``low``, ``high``,
    ``pvalue``, ``qvalue``, ``nights`` pooled) and ``first_run_id``."""

    pk: int
    state: str
    status: str
    state_note: str
    verdict: str
    started_at: datetime
    mean: float | None
    machine: str
    ratio: float | None
    low: float | None
    high: float | None
    pvalue: float | None
    qvalue: float | None
    nights: int | None
    first_run_id: int


ALERT_MARKERS = (
    # (side, state) → legend label, Plotly symbol, colour
    (("regression", "confirmed"), "▲ alert (regression)", "triangle-up", REGRESSION),
    (("regression", "suspected"), "△ alert (suspected regression)", "triangle-up-open", REGRESSION),
    (("improvement", "confirmed"), "▼ alert (improvement)", "triangle-down", IMPROVEMENT),
    (("improvement", "suspected"), "▽ alert (suspected improvement)", "triangle-down-open", IMPROVEMENT),
    (("regression", "dismissed"), "✕ alert dismissed", "x-thin-open", QUIET),
    (("improvement", "dismissed"), "✕ alert dismissed", "x-thin-open", QUIET),
)


def _alert_hover(alert: Mapping, when: str) -> str:
    lines = [f"<b>alert #{alert['pk']}</b> · {escape(alert['state'])} {escape(_side(alert['verdict']))}",
             f"first night {when} UTC · {escape(alert['machine'])}"]
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
            lines.append(f"alert #{comparison['alert_id']} ({escape(comparison.get('alert_status') or 'new')})")
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
                         if comparison and comparison.get("alert_id") is None
                         and comparison.get("verdict") == "improvement"]
    shapes = []
    if change_points:
        texts, xs, ys, ids = [], [], [], []
        for row in change_points:
            x = _timestamp(row["started_at"])
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                           "line": {"color": "#5b6575", "width": 1, "dash": "dash"}})
            change = format_change(row["ratio"], row.get("ci_low"), row.get("ci_high"))
            pvalue = (f"<br>{presentation.said_probability('p', row['pvalue'])}"
                      if row.get("pvalue") is not None else "")
            texts.append(f"<b>change point</b> · {escape(row['machine'])}<br>{x} UTC<br>"
                         f"shift {change}{pvalue}<br><i>click for the first run after it</i>")
            xs.append(x)
            ys.append(row.get("mean"))
            ids.append(row["run_id"])
        data.append({"type": "scatter", "mode": "markers", "name": "┆ change point (shift, CI)", "x": xs, "y": ys,
                     "customdata": ids, "text": texts, "hovertemplate": "%{text}<extra></extra>",
                     "marker": {"symbol": "diamond-open", "size": 16, "color": "#1d2430",
                                "line": {"color": "#1d2430", "width": 2}}})
    for key, label, symbol, colour in ALERT_MARKERS:
        shown = [alert for alert in alerts if (_side(alert["verdict"]), alert["state"]) == key]
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


# --------------------------------------------------------------------------------------------
# Run detail: samples, warm-up, autocorrelation, CI narrowing, utilisation, overhead


def _stride(size: int, limit: int = MAX_DISPLAYED_SAMPLES) -> int:
    return max(1, math.ceil(size / limit))


def samples_figure(values: np.ndarray, *, scale: tuple[float, str], kept: np.ndarray | None = None,
                   spans: Sequence = (), mean: float | None = None, ci_low: float | None = None,
                   ci_high: float | None = None) -> Figure:
    """Readings in time order; with `kept`, the stable phase apart from the removed readings, whose
    stretches are shaded; the result's mean and CI across; everything in the series' one `scale`.

    More than ``MAX_DISPLAYED_SAMPLES`` readings are thinned evenly for display (the title says so).
    """
    factor, unit = scale
    values = np.asarray(values, dtype=float).ravel() / factor
    mean, ci_low, ci_high = (in_scale(value, factor) for value in (mean, ci_low, ci_high))
    step = _stride(values.size)
    index = np.arange(values.size)[::step]
    shown = values[::step]
    kind = "scattergl" if index.size > 5000 else "scatter"
    bulk = _bulk_range(values, include=(mean, ci_low, ci_high))
    data: list[dict] = []
    if spans:
        low = float(np.min(values)) if values.size else 0.0
        high = float(np.max(values)) if values.size else 1.0
        xs: list = []
        ys: list = []
        for start, stop, _, _ in spans:
            if xs:
                xs.append(None)
                ys.append(None)
            xs.extend([start - 0.5, stop - 0.5, stop - 0.5, start - 0.5, start - 0.5])
            ys.extend([low, low, high, high, low])
        data.append({"type": "scatter", "mode": "lines", "x": xs, "y": ys, "fill": "toself",
                     "fillcolor": "rgba(179,38,30,0.08)", "line": {"width": 0}, "hoverinfo": "skip",
                     "name": "removed stretch (warm-up, cool-down, unstable or short round)"})
    if kept is None:
        data.append({"type": kind, "mode": "markers", "name": "samples", "x": index.tolist(), "y": shown.tolist(),
                     "marker": {"size": 3, "color": PALETTE[0]},
                     "hovertemplate": "#%{x}: %{y:.3~g} " + escape(unit) + "<extra></extra>"})
    else:
        kept_shown = np.asarray(kept, dtype=bool)[::step]
        for mask, name, style in (
            (kept_shown, "stable phase (analysed)", {"size": 3, "color": PALETTE[0]}),
            (~kept_shown, "removed", {"size": 4, "color": REGRESSION, "symbol": "x-thin",
                                      "line": {"width": 1, "color": REGRESSION}}),
        ):
            if mask.any():
                data.append({"type": kind, "mode": "markers", "name": name, "x": index[mask].tolist(),
                             "y": shown[mask].tolist(), "marker": style,
                             "hovertemplate": "#%{x}: %{y:.3~g} " + escape(unit) + "<extra>" + name + "</extra>"})
    if mean is not None and values.size:
        ends = [-0.5, values.size - 0.5]
        if ci_low is not None and ci_high is not None:
            data.append({"type": "scatter", "mode": "lines", "x": ends + ends[::-1],
                         "y": [ci_high, ci_high, ci_low, ci_low], "fill": "toself",
                         "fillcolor": "rgba(29,36,48,0.12)", "line": {"width": 0}, "hoverinfo": "skip",
                         "name": f"CI [{_number(ci_low)}, {_number(ci_high)}] {escape(unit)}"})
        data.append({"type": "scatter", "mode": "lines", "x": ends, "y": [mean, mean],
                     "name": f"mean {_number(mean)} {escape(unit)}",
                     "line": {"color": "#1d2430", "width": 1.5, "dash": "dash"}, "hoverinfo": "skip"})
    edge = None
    if bulk is not None:
        outside = np.flatnonzero((values < bulk[0]) | (values > bulk[1]))
        drawn = outside[::_stride(outside.size)]
        edge = len(data)
        data.append(_beyond(bulk, drawn.tolist(), values[drawn],
                            [f"#{at}: {_number(values[at])} {escape(unit)}" for at in drawn], noun="reading",
                            count=outside.size))
    title = "Readings in time order"
    if step > 1:
        title += f" ({values.size // step + bool(values.size % step)} of {values.size} shown, 1 in {step})"
    switch = (_scale_switch(len(data), bulk, edge=edge, x=1, xanchor="right", y=1.0, yanchor="bottom")
              if values.size and values.min() > 0 else [])
    y_range = {"range": _axis_range(bulk), "autorange": False} if bulk is not None else {}
    return {"data": data, "layout": _layout(title={"text": title, "font": {"size": 13}, "x": 0.01},
                                            margin=RUN_MARGIN, height=RUN_HEIGHT,
                                            legend=BELOW, updatemenus=switch,
                                            xaxis={"title": {"text": "reading"}},
                                            yaxis={"title": {"text": escape(unit)}, **y_range}), "config": CONFIG}


def autocorrelation_figure(sizes: Sequence[int], values: Sequence[float], *, chosen: int | None,
                           bound: float = 0.1) -> Figure:
    """r1 of the block means against the subsession size, the ±bound band and the chosen q."""
    data = [
        {"type": "scatter", "mode": "lines", "x": [1, max(sizes, default=1)],
         "y": [bound, bound], "line": {"color": "rgba(27,127,59,0.5)", "width": 1, "dash": "dot"},
         "hoverinfo": "skip", "name": f"±{bound:g} (independent enough)", "legendgroup": "bound"},
        {"type": "scatter", "mode": "lines", "x": [1, max(sizes, default=1)], "y": [-bound, -bound],
         "fill": "tonexty", "fillcolor": "rgba(27,127,59,0.08)", "line": {"color": "rgba(27,127,59,0.5)",
                                                                             "width": 1, "dash": "dot"},
         "hoverinfo": "skip", "showlegend": False, "legendgroup": "bound", "name": f"-{bound:g}"},
        {"type": "scatter", "mode": "lines+markers", "x": list(sizes), "y": list(values), "name": "r1 of block means",
         "line": {"color": PALETTE[0], "width": 1.5}, "marker": {"size": 4},
         "hovertemplate": "subsession size %{x}: r1 = %{y:.3f}<extra></extra>"},
    ]
    if chosen is not None and chosen in sizes:
        value = values[list(sizes).index(chosen)]
        data.append({"type": "scatter", "mode": "markers+text", "x": [chosen], "y": [value],
                     "name": f"chosen subsession size {chosen}", "text": [f"size {chosen}"],
                     "textposition": "top center",
                     "marker": {"symbol": "star", "size": 13, "color": "#c2571a"},
                     "hovertemplate": "chosen subsession size %{x}: r1 = %{y:.3f}<extra></extra>"})
    log = bool(sizes) and max(sizes) > 40
    return {"data": data, "layout": _layout(
        title={"text": "Autocorrelation against subsession size", "font": {"size": 13}, "x": 0.01},
        margin=RUN_MARGIN, height=RUN_HEIGHT, legend=BELOW,
        xaxis={"title": {"text": "subsession size (samples per block)"},
               **({"type": "log", "dtick": 1} if log else {"type": "linear"})},
        yaxis={"title": {"text": "lag-1 autocorrelation r1"}, "range": [-1.05, 1.05]}), "config": CONFIG}


@dataclasses.dataclass(frozen=True)
class NarrowingPoint:
    rounds: int
    relative_width: float | None
    converged: bool


def ci_narrowing_figure(points: Sequence[NarrowingPoint], *, target: float) -> Figure:
    """Full CI width relative to the mean, round by round, against the target width."""
    xs = [point.rounds for point in points]
    ys = [None if point.relative_width is None else 100.0 * point.relative_width for point in points]
    converged = [point for point in points if point.converged and point.relative_width is not None]
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": "CI width / mean",
         "line": {"color": PALETTE[0], "width": 1.5}, "marker": {"size": 4}, "connectgaps": False,
         "hovertemplate": "after %{x} rounds: %{y:.2f}%<extra></extra>"},
        {"type": "scatter", "mode": "lines", "x": [min(xs, default=0), max(xs, default=1)],
         "y": [100.0 * target] * 2, "name": f"target {100.0 * target:g}%",
         "line": {"color": IMPROVEMENT, "dash": "dash", "width": 1.5}, "hoverinfo": "skip"},
    ]
    if converged:
        data.append({"type": "scatter", "mode": "markers", "x": [p.rounds for p in converged],
                     "y": [100.0 * p.relative_width for p in converged], "name": "✓ converged (stop rule met)",
                     "marker": {"symbol": "circle-open", "size": 9, "color": IMPROVEMENT, "line": {"width": 2}},
                     "hovertemplate": "after %{x} rounds: %{y:.2f}% (converged)<extra></extra>"})
    known = [y for y in ys if y is not None]
    log = bool(known) and max(known) / max(min(known), 1e-12) > 20
    return {"data": data, "layout": _layout(
        title={"text": "CI narrowing round by round", "font": {"size": 13}, "x": 0.01}, margin=RUN_MARGIN,
        height=RUN_HEIGHT, legend=BELOW,
        xaxis={"title": {"text": "rounds done"}},
        yaxis={"title": {"text": "full CI width, % of mean"}, "type": "log" if log else "linear",
               "rangemode": "tozero"}), "config": CONFIG}


def utilisation_figure(rounds: Sequence[tuple[int, Mapping]], *, threshold: float = 80.0) -> Figure | None:
    """Mean utilisation (%) per component over each round, from the rounds' stored monitor summaries.

    `rounds` holds ``(round index, monitor)`` pairs; ``monitor["usage"]`` maps a figure key to
    ``{label, unit, mean, max}``. Rates (B/s) are not utilisations and are left out. None when no
    round was monitored.
    """
    series: dict[str, dict] = {}
    for index, monitor in rounds:
        for key, usage in ((monitor or {}).get("usage") or {}).items():
            if usage.get("unit") != "%" or usage.get("mean") is None:
                continue
            entry = series.setdefault(key, {"label": usage.get("label") or key, "x": [], "y": [], "max": []})
            entry["x"].append(index)
            entry["y"].append(usage["mean"])
            entry["max"].append(usage.get("max"))
    if not series:
        return None
    data = []
    for position, entry in enumerate(series.values()):
        label = escape(entry["label"])
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "x": entry["x"], "y": entry["y"],
                     "customdata": entry["max"], "line": {"color": PALETTE[position % len(PALETTE)], "width": 1.5},
                     "marker": {"size": 4},
                     "hovertemplate": f"{label}<br>round %{{x}}: mean %{{y:.0f}}%, peak %{{customdata:.0f}}%<extra></extra>"})
    every = [x for entry in series.values() for x in entry["x"]]
    data.append({"type": "scatter", "mode": "lines", "x": [min(every), max(every)], "y": [threshold, threshold],
                 "name": f"bottleneck threshold {threshold:g}%", "hoverinfo": "skip",
                 "line": {"color": REGRESSION, "dash": "dash", "width": 1}})
    return {"data": data, "layout": _layout(
        title={"text": "Utilisation per round (psutil)", "font": {"size": 13}, "x": 0.01}, margin=RUN_MARGIN,
        height=RUN_HEIGHT, legend=BELOW,
        xaxis={"title": {"text": "round"}}, yaxis={"title": {"text": "mean utilisation, %"}, "range": [0, 105]}),
        "config": CONFIG}


def overhead_figure(overhead: Mapping) -> Figure:
    """Monitoring overhead: ``mean(with) / mean(without)`` with its CI, against 1 (no overhead)."""
    ratio = overhead["ratio"]
    low, high = overhead.get("low"), overhead.get("high")
    bounded = overhead.get("bounded", True) and low is not None and high is not None \
        and math.isfinite(low) and math.isfinite(high)
    level = overhead.get("confidence_level", 0.95)
    point = {"type": "scatter", "mode": "markers", "x": [ratio], "y": ["overhead"], "name": "ratio with/without",
             "marker": {"size": 11, "color": PALETTE[0]},
             "hovertemplate": "%{x:.4f}<extra></extra>"}
    if bounded:
        point["error_x"] = {"type": "data", "symmetric": False, "array": [high - ratio], "arrayminus": [ratio - low],
                            "color": PALETTE[0], "thickness": 2, "width": 8}
    text = format_change(ratio, low if bounded else None, high if bounded else None)
    span = [x for x in (ratio, low, high, 1.0) if x is not None and math.isfinite(x)]
    pad = max(0.01, (max(span) - min(span)) * 0.3)
    return {"data": [point], "layout": _layout(
        height=170, margin={"t": 50, "b": 40}, showlegend=False,
        title={"text": f"Monitoring overhead: {text} ({level:.0%} CI, {overhead.get('rounds', '?')} rounds each way)",
               "font": {"size": 13}, "x": 0.01},
        shapes=[{"type": "line", "xref": "x", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1,
                 "line": {"color": QUIET, "dash": "dash"}}],
        xaxis={"title": {"text": "duration with monitoring / without (1 = no overhead)"},
               "range": [min(span) - pad, max(span) + pad]},
        yaxis={"showticklabels": False}), "config": CONFIG}
