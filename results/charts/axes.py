"""The y ranges of the readings and history plots: the bulk of the values, the values beyond it drawn at its
edge, and a switch between a linear axis on the bulk and a log axis over every value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

BULK_TAIL = 0.01
BULK_SIGMAS = 5.0
"""The y range of the readings and history plots shows the bulk of the values: from the ``BULK_TAIL`` to the
``1 - BULK_TAIL`` quantile, widened to ``BULK_SIGMAS`` robust standard deviations (the spread of those quantiles
over a normal distribution's) each way of them. Normal noise stays inside (a reading beyond 5σ is one in
1.7 million) and a warm-up of more than 1% of the readings sets the range; a few readings 200 times the rest
(a 76 µs benchmark interrupted for 16 ms) are drawn at its edge instead of flattening the bulk into a line."""
OUTLIER = "#8a5a00"


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
