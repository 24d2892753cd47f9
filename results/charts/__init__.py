"""Plotly figures as plain dicts, built from plain data: no Django, no database, testable alone.

Every ``*_figure`` function returns ``{"data": [...], "layout": {...}}`` for ``Plotly.newPlot``
(``static/results/charts.js`` draws them from a JSON script element). What they draw is computed
elsewhere: the statistics by :mod:`results.stats`, a session's replay by :mod:`runner.replay`.

Text that comes from users (benchmark, machine and branch names, commits, warnings) is
HTML-escaped here: Plotly renders a subset of HTML in hover labels and legends, and decodes the
entities back for display, so a name like ``<b>x</b>`` shows as typed and never as markup.

- :mod:`.history`: a metric's history (run means over time, bands, change points, alerts);
- :mod:`.run`: one run in detail (readings, autocorrelation, CI narrowing, utilisation, monitoring overhead);
- :mod:`.sheriff`: a project's sheriff numbers week by week;
- :mod:`.axes`: the y ranges both draw (the bulk of the values, outliers at the edge, a linear/log switch);
- :mod:`.style`: the look every figure shares (palette, font, layout, escaped labels).

Callers use ``charts.<name>``; the names are re-exported here.
"""

from .history import AlertMarker, ChangePointRow, HistoryPoint, history_bands, history_figure
from .run import (
    NarrowingPoint,
    autocorrelation_figure,
    ci_narrowing_figure,
    overhead_figure,
    samples_figure,
    utilisation_figure,
)
from .sheriff import sheriff_figure
from .style import Figure

__all__ = [
    "AlertMarker", "ChangePointRow", "HistoryPoint", "history_bands", "history_figure",
    "NarrowingPoint", "autocorrelation_figure", "ci_narrowing_figure", "overhead_figure", "samples_figure",
    "utilisation_figure",
    "sheriff_figure",
    "Figure",
]
