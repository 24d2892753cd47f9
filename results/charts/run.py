"""One run in detail: its readings (the warm-up and other removed stretches shaded), the autocorrelation
against the subsession size, the CI narrowing round by round, utilisation per round and the monitoring
overhead."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from results.presentation import format_change, in_scale

from .axes import _axis_range, _beyond, _bulk_range, _scale_switch
from .style import CONFIG, IMPROVEMENT, PALETTE, QUIET, REGRESSION, Figure, _layout, _number, escape

MAX_DISPLAYED_SAMPLES = 20_000
BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.18, "yanchor": "top"}
"""Legend under the plot (the run page's charts are narrow; a legend on top eats the plot)."""
RUN_MARGIN = {"t": 40, "b": 40}
RUN_HEIGHT = 420


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
