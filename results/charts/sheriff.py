"""A project's sheriff numbers over time: alerts opened a week and those later found false (bars), the culprits
bisections named (stars), and the median hours from a change's first bad night to its alert and from the alert to
its triage (lines)."""

from collections.abc import Sequence
from datetime import date

from .style import CONFIG, PALETTE, QUIET, REGRESSION, Figure, _layout


def sheriff_figure(weeks: Sequence[date], *, alerts: Sequence[int], false_alerts: Sequence[int],
                   hours_to_alert: Sequence[float | None], hours_to_triage: Sequence[float | None],
                   culprits: Sequence[int] = ()) -> Figure:
    """Weekly bars of the alerts opened and the false ones among them, the culprits bisections named (markers),
    and the median hours to the alert and to its triage on a second axis (gaps where a week had none); one value
    a week in each sequence."""
    x = [week.isoformat() for week in weeks]
    data = [
        {"type": "bar", "name": "alerts opened", "x": x, "y": list(alerts),
         "marker": {"color": QUIET}, "hovertemplate": "week of %{x}: %{y} alerts<extra></extra>"},
        {"type": "bar", "name": "later found false (invalid or dismissed)", "x": x,
         "y": list(false_alerts), "marker": {"color": REGRESSION},
         "hovertemplate": "week of %{x}: %{y} false<extra></extra>"},
        *([{"type": "scatter", "mode": "markers", "name": "culprits found by bisection", "x": x, "y": list(culprits),
            "marker": {"symbol": "star", "size": 11, "color": PALETTE[2]},
            "hovertemplate": "week of %{x}: %{y} culprits named<extra></extra>"}] if any(culprits) else []),
        {"type": "scatter", "mode": "lines+markers", "name": "median hours to the alert", "x": x,
         "y": list(hours_to_alert), "yaxis": "y2", "connectgaps": False,
         "line": {"color": PALETTE[0], "width": 1.5}, "marker": {"size": 4},
         "hovertemplate": "week of %{x}: %{y:.1f} h from the first bad night to the alert<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": "median hours to triage", "x": x,
         "y": list(hours_to_triage), "yaxis": "y2", "connectgaps": False,
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
