"""The look every figure shares: palette, font, layout and Plotly's config; user text escaped, numbers
formatted for labels."""

from __future__ import annotations

import html
import math
from typing import Any

from results import presentation

Figure = dict[str, Any]

PALETTE = ["#2354a8", "#c2571a", "#2a8c82", "#7b3fa0", "#8a6d00", "#b0306a", "#4d6b2a", "#5b6575"]
REGRESSION, IMPROVEMENT, INCONCLUSIVE, QUIET = "#b3261e", "#1b7f3b", "#8a5a00", "#7d8694"
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#1d2430"}
CONFIG = {"displaylogo": False, "responsive": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}


def escape(text: object) -> str:
    """User text for a Plotly label: HTML-escaped (Plotly shows the entities as the characters)."""
    return html.escape(str(text), quote=True)


def _number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return presentation.format_number(value)


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
