"""A series' change alerts on the series' level (spec §7, §8): one rule for the nightly scan, an alert's own nights
and the daily scan's change points (results.decisions.series_verdict)."""

import pytest

from results.decisions import SERIES_LEVEL, SUSPECTED_IMPROVEMENT, SUSPECTED_REGRESSION, series_verdict
from results.stats import Verdict



@pytest.mark.parametrize(("ratio", "pvalue", "direction", "expected"), [
    (1.04, 0.0, "lower_is_better", SUSPECTED_REGRESSION),  # a p-value of 0 is the most significant, not "none"
    (1.04, SERIES_LEVEL / 2, "lower_is_better", SUSPECTED_REGRESSION),
    (1.04, SERIES_LEVEL, "lower_is_better", Verdict.INCONCLUSIVE),  # at the level: not below it
    (1.04, None, "lower_is_better", Verdict.INCONCLUSIVE),  # untested
    (1.01, 0.001, "lower_is_better", Verdict.INCONCLUSIVE),  # within the 2% band
    (1.04, 0.001, "higher_is_better", SUSPECTED_IMPROVEMENT),
    (0.96, 0.001, "lower_is_better", SUSPECTED_IMPROVEMENT),
])
def test_an_inconclusive_change_is_suspected_when_significant_at_the_series_level(ratio, pvalue, direction, expected):
    assert series_verdict(Verdict.INCONCLUSIVE, ratio=ratio, pvalue=pvalue, threshold=0.02,
                          direction=direction) == expected


def test_a_verdict_beyond_the_band_stays_whatever_its_p_value():
    assert series_verdict(Verdict.REGRESSION, ratio=1.1, pvalue=0.5, threshold=0.02,
                          direction="lower_is_better") == Verdict.REGRESSION
