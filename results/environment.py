"""The machine environment of a night: recognised among the machine's earlier nights and divided out of its series
before they are tested for a shift (spec §8, revised 2026-11-26; :mod:`results.stats._environment` says why).

When a nightly (or manual, imported) run is compared, :func:`match_environment` stores on each of its results
its deviation from the series' recent level (``Result.level_deviation``: the run's fingerprint), and, where the
fingerprint matches earlier nights of an environment the machine has since left, what that environment moved
each series by (``Result.environment_offset``) and which nights matched (``Run.environment_match``). The shift
detection (:mod:`results.comparisons`) and the change points (:mod:`results.changepoints`) read a night's mean
divided by ``exp(environment_offset)``; the nightly table, the history chart and pull requests show what was
measured.
"""


import numpy as np
from django.db import connection
from django.db.models import QuerySet

from . import stats
from .bulk import bulk_update_values
from .models import OUTSIDE_SERIES, Result, Run, RunStatus, nights_before

LEVEL_NIGHTS = 20
"""A series' recent level: the median of its last this many nights (environment removed). It follows a change
of level after about half of them, so an environment is recognised only if it lasted fewer (``longest``, 8, of
:func:`results.stats.environment_match`): a change of level's fading fingerprint is not mistaken for one. With 10
nights and 4, a step of half a machine's series at 1.5% noise looked like its own earlier step, and steps of
single series on the asv histories were partly divided out on 10% of them."""
MIN_LEVEL_NIGHTS = 5
"""The fewest nights a level is taken from; a series with fewer has no deviation yet."""
PAST_NIGHTS = 60
"""The earlier nights of the machine searched for tonight's environment: two months of nightlies."""
FINGERPRINT_SERIES = 256
"""The most series a fingerprint is compared on (evenly spaced by metric id): the median distance of 256 series
is as steady as that of 2,000, at an eighth of the rows read."""


def match_environment(*, run: Run) -> stats.EnvironmentMatch | None:
    """Recognise ``run``'s machine environment among the machine's earlier nights and store what it did.

    Stores every result's ``level_deviation`` (or None) and ``environment_offset`` (None where nothing matched),
    and ``run.environment_match``. Returns the match, or None for a run that is no night of a series (a pull
    request, a confirmation, an unfinished run). Four queries, whatever the number of series.
    """
    if run.kind in OUTSIDE_SERIES or run.status != RunStatus.COMPLETED:
        return None
    tonight = list(Result.objects.filter(run=run).order_by("metric_id").values_list("pk", "metric_id", "mean"))
    earlier = list(nights_before(run).values_list("pk", flat=True)[:PAST_NIGHTS])[::-1]
    metrics = [metric for _, metric, _ in tonight]
    # The run's metrics as a subquery, not ten thousand parameters.
    selected = Result.objects.filter(run=run).values("metric_id")
    deviations = stats.level_deviations([mean for _, _, mean in tonight],
                                        _recent_values(earlier[-LEVEL_NIGHTS:], metrics, selected),
                                        min_nights=MIN_LEVEL_NIGHTS)
    spaced = np.unique(np.linspace(0, len(metrics) - 1, min(len(metrics), FINGERPRINT_SERIES)).astype(int)) \
        if metrics else np.array([], dtype=int)
    sample = [metrics[i] for i in spaced]
    past = _deviations(earlier, sample)
    match = stats.environment_match(deviations[spaced], past)
    offsets: list[float | None] = [None] * len(tonight)
    if match.matched:
        runs = [earlier[row] for row in match.neighbours]
        every = _deviations(runs, metrics, selected)
        offsets = [float(value) for value in stats.environment_offsets(every)]
    bulk_update_values(Result, ["level_deviation", "environment_offset"], [
        (pk, None if np.isnan(deviation) else float(deviation), offset)
        for (pk, _, _), deviation, offset in zip(tonight, deviations, offsets)])
    run.environment_match = {"runs": [earlier[row] for row in match.neighbours], "move": match.move,
                             "series": int(np.isfinite(deviations).sum())} if match.matched else {}
    Run.objects.filter(pk=run.pk).update(environment_match=run.environment_match)
    return match


def _recent_values(runs: list[int], metrics: list[int], selected: QuerySet) -> np.ndarray:
    """``metrics``' means (columns) on ``runs`` (rows), their environment divided out; NaN where none."""
    return _matrix(runs, metrics, ((metric, run, None if mean is None else mean * stats.without_environment(offset))
                                   for metric, run, mean, offset in _read(runs, selected, "mean",
                                                                          "environment_offset")))


def _deviations(runs: list[int], metrics: list[int], selected: QuerySet | None = None) -> np.ndarray:
    """The stored deviations of ``metrics`` (columns) on ``runs`` (rows, in their order); NaN where none.
    ``selected``: the same metrics as a subquery, to filter by."""
    return _matrix(runs, metrics, _read(runs, metrics if selected is None else selected, "level_deviation"))


def _matrix(runs: list[int], metrics: list[int], cells) -> np.ndarray:
    """(metric, run, value) cells as a runs × metrics matrix; NaN where none or None."""
    matrix = np.full((len(runs), len(metrics)), np.nan)
    row = {run: i for i, run in enumerate(runs)}
    column = {metric: j for j, metric in enumerate(metrics)}
    for metric, run, value in cells:
        if value is not None:
            matrix[row[run], column[metric]] = value
    return matrix


def _read(runs: list[int], metrics: list[int] | QuerySet, *fields: str) -> list[tuple]:
    if not runs:
        return []
    query = Result.objects.filter(run_id__in=runs, metric_id__in=metrics).order_by().values_list(
        "metric_id", "run_id", *fields)
    # By the cursor: the ORM's per-row converters cost more than the query on 15,000 rows.
    with connection.cursor() as cursor:
        cursor.execute(*query.query.sql_with_params())
        return cursor.fetchall()
