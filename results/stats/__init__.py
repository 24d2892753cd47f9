"""The numerical core of Pilot Web: Pilot's and Kalibera & Jones's statistics.

numpy and scipy only; nothing here imports Django. The formulas are stated in
``shared/spec/statistics.md`` (sections cited in each docstring).

Each name is imported from its submodule when first used (PEP 562, as scipy loads its subpackages), so a
caller that needs the comparison alone (``manage.py compare --files``) does not import the warm-up removal,
the history or the planning; ``from results.stats import X`` and ``results.stats.X`` work as for any module.
"""

_EXPORTS = {
    "_base": ("ConfidenceInterval", "NotEnoughSamples", "StatisticsError"),
    "_compare": ("SMALL_SIDE", "WelchResult", "welch_degrees_of_freedom", "welch_required_subsessions",
                 "welch_test"),
    "_environment": ("EnvironmentMatch", "environment_match", "environment_offsets", "level_deviations",
                     "without_environment"),
    "_history": ("HistoryComparison", "compare_with_history"),
    "_pairwise": ("PairwiseComparison", "compare_summaries"),
    "_hierarchical": ("RepetitionPlan", "VarianceComponents", "plan_repetitions", "predicted_half_width",
                      "variance_components"),
    "_level_test": ("AT_LEVEL", "MOVED", "LevelTest", "bracketed_level_test"),
    "_long_run": ("MeanVariance", "StoredMean", "mean_variance", "overlapping_batch_means"),
    "_modes": ("AlignedModes", "align_modes"),
    "_rank_shifts": ("RankShifts", "rank_shifts"),
    "_recent_shift": ("RecentShift", "prior_spread", "recent_shift", "shift_since"),
    "_ratio": ("RatioResult", "RatioTest", "ratio_bootstrap", "ratio_fieller", "ratio_fieller_from_stats"),
    "_sequential": ("DIFFERENT", "EQUIVALENT", "UNDECIDED", "SequentialComparison", "sequential_comparison",
                    "sequential_half_width"),
    "_subsessions": ("MAX_AUTOCORRELATION", "MIN_SUBSESSIONS", "MeanInterval", "SubsessionResult", "autocorrelation",
                     "autocorrelation_by_size", "mean_interval", "required_subsessions", "subsessions"),
    "_summary": ("VARIANCE_METHODS", "SampleSummary", "summarize_samples"),
    "_trend_step": ("DriftReading", "TrendStep", "read_drifts", "trend_step"),
    "_verdict": ("Direction", "Verdict", "format_change", "verdict"),
    # Warm-up / cool-down removal (spec §4): change points, stable phase, WPS model.
    "_edm": ("EDMResult", "edm"),
    "_stable_phase": ("StablePhaseResult", "stable_phase"),
    "_transient": ("TruncationResult", "mser_truncation"),
    "_wps": ("WPSResult", "round_increment", "work_amounts", "wps_fit"),
}
_SUBMODULE_OF = {name: submodule for submodule, names in _EXPORTS.items() for name in names}

__all__ = list(_SUBMODULE_OF)


def __getattr__(name: str):
    try:
        submodule = _SUBMODULE_OF[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    # __import__ rather than importlib.import_module: -X importtime, by which this package's import is measured,
    # lists only the modules that the import statement's machinery loads.
    value = getattr(__import__(f"{__name__}.{submodule}", fromlist=[name]), name)
    # Bound here, the next look-up of the name is an ordinary one.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
