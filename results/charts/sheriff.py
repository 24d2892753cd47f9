"""A project's sheriff numbers over time: alerts opened a week and those later found false (bars), and the median
hours from a change's first bad night to its alert and from the alert to its triage (lines)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from .style import CONFIG, PALETTE, QUIET, REGRESSION, Figure, _layout


@dataclass(frozen=True)
class SheriffPoint:
    """One week as the figure draws it."""

    start: date
    alerts: int
    false_alerts: int
    hours_to_alert: float | None
    hours_to_triage: float | None


def sheriff_figure(weeks: Sequence[SheriffPoint]) -> Figure:
    """Weekly bars of the alerts opened and the false ones among them, and the median hours to the alert and to
    its triage on a second axis (gaps where a week had none)."""
    x = [week.start.isoformat() for week in weeks]
    data = [
        {"type": "bar", "name": "alerts opened", "x": x, "y": [week.alerts for week in weeks],
         "marker": {"color": QUIET}, "hovertemplate": "week of %{x}: %{y} alerts<extra></extra>"},
        {"type": "bar", "name": "later found false (invalid or dismissed)", "x": x,
         "y": [week.false_alerts for week in weeks], "marker": {"color": REGRESSION},
         "hovertemplate": "week of %{x}: %{y} false<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": "median hours to the alert", "x": x,
         "y": [week.hours_to_alert for week in weeks], "yaxis": "y2", "connectgaps": False,
         "line": {"color": PALETTE[0], "width": 1.5}, "marker": {"size": 4},
         "hovertemplate": "week of %{x}: %{y:.1f} h from the first bad night to the alert<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": "median hours to triage", "x": x,
         "y": [week.hours_to_triage for week in weeks], "yaxis": "y2", "connectgaps": False,
         "line": {"color": PALETTE[1], "width": 1.5}, "marker": {"size": 4},
         "hovertemplate": "week of %{x}: %{y:.1f} h from the alert to its triage<extra></extra>"},
    ]
    return {"data": data, "layout": _layout(
        barmode="overlay", height=380,
        xaxis={"title": {"text": "week"}, "type": "date"},
        yaxis={"title": {"text": "alerts"}, "rangemode": "tozero"},
        yaxis2={"title": {"text": "hours (median)"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                "showgrid": False},
        margin={"l": 60, "r": 60, "t": 40, "b": 50}), "config": CONFIG}
