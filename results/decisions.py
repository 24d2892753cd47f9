"""The decision rules, in one place: the verdict vocabulary, what is significant, what is suspected, which way a
verdict points, the order of verdicts, and which verdicts alert (spec §7, §8).

Every module that decides reads them here: the comparison service finalises a run's verdicts with
:func:`final_verdicts`, the alerts open and settle on :data:`SERIES_LEVEL` and :data:`NIGHTLY_ALERTS`, the models
take their choices from :data:`VERDICTS`, and :mod:`results.presentation` only words what is decided here. Pure
functions of values, no Django: ``manage.py compare --files`` decides without starting it.
"""

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .stats import Verdict

__all__ = [
    "ALPHA",
    "CHANGE_POINT_LEVEL",
    "CHANGE_SIDES",
    "DRIFT_KIND",
    "DRIFT_SLOPE_LEVEL",
    "DRIFT_STEP_LEVEL",
    "INSUFFICIENT_HISTORY",
    "NIGHTLY_ALERTS",
    "NOT_COMPARED",
    "PULL_REQUEST_ALERTS",
    "RUN_NOISE_UNKNOWN_KEY",
    "SERIES_LEVEL",
    "STEP_KIND",
    "SUSPECTED_IMPROVEMENT",
    "SUSPECTED_REGRESSION",
    "VERDICTS",
    "VERDICT_ORDER",
    "bh_qvalues",
    "contradicts",
    "final_verdicts",
    "is_false_alert",
    "is_high_p",
    "is_significant",
    "qvalues_by_method",
    "series_verdict",
    "suspected_verdict",
    "worst_first",
]

ALPHA = 0.05
"""Significance level of every claim the dashboard makes (spec §7)."""

SERIES_LEVEL = 0.01
"""A nightly series alerts only when its own shift p-value (adjusted for the first nights tried) is below this,
besides q < α: the false-alarm budget of spec §8, 0.5% per series-night. The q-value alone allows 5% per
night in a project of one series (Benjamini–Hochberg over one test is the test)."""

SUSPECTED_REGRESSION, SUSPECTED_IMPROVEMENT = "suspected regression", "suspected improvement"
"""Significant (q < α) with the point estimate beyond the band, the interval still crossing its edge (spec §7);
decided once the run's q-values are known (:func:`final_verdicts`), never by the numerical core alone."""
INSUFFICIENT_HISTORY = "insufficient history"
"""Too few earlier nights to compare with."""
NOT_COMPARED = "not compared"
"""A series shown without a comparison (its run is not compared yet): a row's state, never stored."""

VERDICTS = (Verdict.REGRESSION.value, Verdict.IMPROVEMENT.value, Verdict.NO_CHANGE.value, SUSPECTED_REGRESSION,
            SUSPECTED_IMPROVEMENT, Verdict.INCONCLUSIVE.value, INSUFFICIENT_HISTORY)
"""Every verdict a stored comparison can hold: the core's four, the two suspected ones and insufficient history."""

CHANGE_SIDES = {Verdict.REGRESSION: "regression", SUSPECTED_REGRESSION: "regression",
                Verdict.IMPROVEMENT: "improvement", SUSPECTED_IMPROVEMENT: "improvement"}
"""Which way a verdict says the series changed, decided or suspected (alerts, their settlement, their markers)."""

VERDICT_ORDER = {Verdict.REGRESSION: 0, SUSPECTED_REGRESSION: 1, Verdict.IMPROVEMENT: 2, SUSPECTED_IMPROVEMENT: 3,
                 Verdict.INCONCLUSIVE: 4, INSUFFICIENT_HISTORY: 5, Verdict.NO_CHANGE: 6, NOT_COMPARED: 7}
"""Worst first: the order of rows in every table. Inconclusive rows (no evidence either way) are quiet."""


def worst_first(verdict: str, ratio: float | None, benchmark: str, metric: str) -> tuple:
    """A row's place in every table: by :data:`VERDICT_ORDER`, then the larger change first, then by name."""
    return (VERDICT_ORDER.get(verdict, len(VERDICT_ORDER)), -(0.0 if ratio is None else abs(ratio - 1.0)),
            benchmark, metric)

RUN_NOISE_UNKNOWN_KEY = "within_run_pvalue"
"""The input a two-run comparison without a measured run-to-run component keeps: the p-value of its subsessions
alone, which decides nothing (results.pairwise_rows.without_run_noise)."""

PULL_REQUEST_ALERTS = (Verdict.REGRESSION, SUSPECTED_REGRESSION)
"""A pull request alerts on its regressions, decided or suspected."""
NIGHTLY_ALERTS = (Verdict.REGRESSION, SUSPECTED_REGRESSION, Verdict.IMPROVEMENT, SUSPECTED_IMPROVEMENT)
"""A nightly's improvements alert too: the series' level moved (and a benchmark that stopped working looks faster)."""


def contradicts(verdict: str, side: str | None) -> bool:
    """A verdict that dismisses a change to ``side``: no change, or a change the other way."""
    return verdict == Verdict.NO_CHANGE or CHANGE_SIDES.get(verdict, side) != side


INVALID_STATUS, REAL_STATUSES, DISMISSED_STATE = "invalid", ("fixed", "wont_fix"), "dismissed"
"""The alert statuses and state :func:`is_false_alert` reads (``results.models.AlertStatus``, ``AlertState``)."""


def is_false_alert(status: str, state: str) -> bool:
    """An alert later found false, as its users see it: marked invalid, or dismissed by later nights unless a person
    said it was real (fixed, won't fix)."""
    return status == INVALID_STATUS or (state == DISMISSED_STATE and status not in REAL_STATUSES)


STEP_KIND, DRIFT_KIND = "step", "drift"
"""What a change point is read as (``results.models.ChangeKind``): a jump of the level at its night, or a stretch of
a steady drift the scan cut."""
CHANGE_POINT_LEVEL = 0.01
"""Level of each split of the change-point scan's permutation test (``results.changepoints``): about 1% of shift-free
series of 80 to 300 nights get one."""
DRIFT_STEP_LEVEL, DRIFT_SLOPE_LEVEL = CHANGE_POINT_LEVEL, 0.001
"""A change point is a drift, not a step, where a line with a jump at it (``results.stats.read_drifts``) finds the
jump not significant (p above 1%, the change-point scan's own level, :data:`CHANGE_POINT_LEVEL`) and the slope
significant (p below 0.1%). Nested models: a line against two means with no test would call most steps in noisy
nightly histories drifts. Neither level is a calibrated error rate: the jump's test at a point the scan chose leans
towards a step, the slope's test on correlated nights rejects too often. They were chosen on a printed grid
(``benchmarks/drift_reading.py``): on TCPD's annotated series they remove the most change points no annotator
marked, and read none of 84 steps injected into real nightly histories as a drift."""


def is_significant(pvalue: float | None, qvalue: float | None, alpha: float = ALPHA) -> bool:
    """The one rule for "statistically significant", everywhere: the q-value where the comparison belongs to a
    run (Benjamini–Hochberg across its series controls false discoveries), the p-value where it stands alone
    (two files on the command line); below ``alpha``."""
    value = qvalue if qvalue is not None else pvalue
    return value is not None and value < alpha


def is_high_p(pvalue: float | None, qvalue: float | None, alpha: float = ALPHA) -> bool:
    """The *high p-value* flag: there is a test, and by :func:`is_significant` it is not significant."""
    return (pvalue is not None or qvalue is not None) and not is_significant(pvalue, qvalue, alpha)


def suspected_verdict(verdict: str, *, ratio: float | None, threshold: float, direction: str,
                      significant: bool) -> str:
    """*Inconclusive* split (spec §7): a change that is significant (:func:`is_significant`) with its point
    estimate beyond the band is a *suspected* regression or improvement; the rest stay inconclusive, shown
    quietly. Other verdicts stay."""
    if verdict != Verdict.INCONCLUSIVE or ratio is None or not significant:
        return verdict
    above, below = ratio > 1.0 + threshold, ratio < 1.0 - threshold
    worse, better = (above, below) if direction == "lower_is_better" else (below, above)
    return SUSPECTED_REGRESSION if worse else SUSPECTED_IMPROVEMENT if better else verdict


def series_verdict(verdict: str, *, ratio: float | None, pvalue: float | None, threshold: float,
                   direction: str) -> str:
    """A series' change as it alerts (spec §8): :func:`suspected_verdict` with the series' level,
    :data:`SERIES_LEVEL`, as its significance (its p-value adjusted wherever a first night was chosen)."""
    return suspected_verdict(verdict, ratio=ratio, threshold=threshold, direction=direction,
                             significant=pvalue is not None and pvalue < SERIES_LEVEL)


def qvalues_by_method(methods: Sequence[str], pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg q-values across the comparisons of each method that have a p-value (None for the
    others), in their order.

    A run touches hundreds of series; at α = 5% per series, some would be "significant" by chance
    alone. The q-value controls the false discovery rate across them, and it is the q-value, not the
    p-value, that decides significance wherever the comparison belongs to a run (spec §7).
    """
    qvalues: list[float | None] = [None] * len(pvalues)
    by_method: dict[str, list[int]] = defaultdict(list)
    for index, (method, pvalue) in enumerate(zip(methods, pvalues)):
        if pvalue is not None:
            by_method[method].append(index)
    for indexes in by_method.values():
        for i, qvalue in zip(indexes, bh_qvalues([pvalues[i] for i in indexes])):
            qvalues[i] = float(qvalue)
    return qvalues


def bh_qvalues(pvalues: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg q-values of p-values, in their order (:func:`qvalues_by_method`)."""
    # Imported here: scipy.stats takes half a second to import, and two files are compared without q-values.
    from scipy.stats import false_discovery_control

    return np.minimum(np.atleast_1d(false_discovery_control(pvalues, method="bh")), 1.0)


def final_verdicts(rows: Sequence[tuple[str, float | None, float | None, float, str, str]]
                   ) -> tuple[list[float | None], list[str]]:
    """A run's comparisons decided, once their q-values can be known: for each ``(method, p-value, ratio,
    threshold, direction, verdict)``, its q-value (:func:`qvalues_by_method`) and its verdict with
    *inconclusive* split by that q-value (:func:`suspected_verdict`)."""
    qvalues = qvalues_by_method([row[0] for row in rows], [row[1] for row in rows])
    verdicts = [suspected_verdict(verdict, ratio=ratio, threshold=threshold, direction=direction,
                                  significant=is_significant(pvalue, qvalue))
                for (_, pvalue, ratio, threshold, direction, verdict), qvalue in zip(rows, qvalues)]
    return qvalues, verdicts
