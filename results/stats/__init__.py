"""The numerical core of Pilot Web: Pilot's and Kalibera & Jones's statistics.

numpy and scipy only; nothing here imports Django. The formulas are stated in
``shared/spec/statistics.md`` (sections cited in each docstring).
"""

from ._base import ConfidenceInterval, NotEnoughSamples, StatisticsError
from ._compare import SMALL_SIDE, WelchResult, welch_degrees_of_freedom, welch_required_subsessions, welch_test
from ._history import HistoryComparison, compare_with_history
from ._pairwise import PairwiseComparison, compare_summaries
from ._hierarchical import (
    RepetitionPlan,
    VarianceComponents,
    plan_repetitions,
    predicted_half_width,
    variance_components,
)
from ._long_run import MeanVariance, StoredMean, mean_variance, overlapping_batch_means
from ._rank_shifts import RankShifts, rank_shifts
from ._recent_shift import RecentShift, recent_shift, shift_since
from ._ratio import RatioResult, ratio_bootstrap, ratio_fieller, ratio_fieller_from_stats
from ._sequential import (
    DIFFERENT,
    EQUIVALENT,
    UNDECIDED,
    SequentialComparison,
    sequential_comparison,
    sequential_half_width,
)
from ._subsessions import (
    MAX_AUTOCORRELATION,
    MIN_SUBSESSIONS,
    MeanInterval,
    SubsessionResult,
    autocorrelation,
    autocorrelation_by_size,
    mean_interval,
    required_subsessions,
    subsessions,
)
from ._summary import VARIANCE_METHODS, SampleSummary, summarize_samples
from ._verdict import Direction, Verdict, format_change, verdict

# Warm-up / cool-down removal (spec §4): change points, stable phase, WPS model.
from ._changepoint import EDMResult, StablePhaseResult, edm, stable_phase
from ._transient import TruncationResult, mser_truncation
from ._wps import WPSResult, round_increment, work_amounts, wps_fit

__all__ = [
    "DIFFERENT",
    "EQUIVALENT",
    "UNDECIDED",
    "MAX_AUTOCORRELATION",
    "MIN_SUBSESSIONS",
    "SMALL_SIDE",
    "VARIANCE_METHODS",
    "PairwiseComparison",
    "compare_summaries",
    "HistoryComparison",
    "compare_with_history",
    "ConfidenceInterval",
    "Direction",
    "MeanInterval",
    "MeanVariance",
    "NotEnoughSamples",
    "RatioResult",
    "RecentShift",
    "RepetitionPlan",
    "StatisticsError",
    "SampleSummary",
    "StoredMean",
    "SequentialComparison",
    "SubsessionResult",
    "VarianceComponents",
    "Verdict",
    "WelchResult",
    "autocorrelation",
    "autocorrelation_by_size",
    "format_change",
    "mean_interval",
    "mean_variance",
    "overlapping_batch_means",
    "plan_repetitions",
    "predicted_half_width",
    "ratio_bootstrap",
    "ratio_fieller",
    "ratio_fieller_from_stats",
    "recent_shift",
    "RankShifts",
    "rank_shifts",
    "shift_since",
    "required_subsessions",
    "sequential_comparison",
    "sequential_half_width",
    "subsessions",
    "summarize_samples",
    "variance_components",
    "verdict",
    "welch_degrees_of_freedom",
    "welch_required_subsessions",
    "welch_test",
    # Warm-up / cool-down removal (spec §4).
    "EDMResult",
    "StablePhaseResult",
    "TruncationResult",
    "WPSResult",
    "edm",
    "mser_truncation",
    "round_increment",
    "stable_phase",
    "work_amounts",
    "wps_fit",
]
