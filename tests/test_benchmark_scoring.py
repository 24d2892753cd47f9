"""The benchmarks' scoring of change points against annotated labels, checked against the published figures of the
scorer they reproduce: TCPDBench's F1 (van den Burg & Williams 2020; the examples of its
analysis/scripts/metrics.py, github:alan-turing-institute/TCPDBench), margin 5, the first point counted; and the
drift reading of benchmarks/drift_reading.py on seeded series of known shape."""

import numpy as np
import pytest

from benchmarks import drift_reading
from benchmarks.real_histories import annotated_scores


@pytest.mark.parametrize(("annotators", "found", "f1"), [
    ({1: [10, 20], 2: [11, 20], 3: [10], 4: [0, 5]}, [10, 20], 1.0),
    ({1: [], 2: [10], 3: [50]}, [10], 0.9090909090909091),
    ({1: [], 2: [10], 3: [50]}, [], 0.8),
])
def test_the_f1_of_annotated_change_points_is_tcpdbenchs(annotators, found, f1):
    assert annotated_scores(found, annotators)[2] == pytest.approx(f1, rel=1e-12)


def test_a_trend_reads_as_a_drift_and_a_step_as_a_step():
    rng = np.random.default_rng(5)
    t = np.arange(60.0)
    trend = np.exp(0.004 * t + rng.normal(0.0, 0.01, t.size))
    step = np.exp(0.05 * (t >= 30) + rng.normal(0.0, 0.01, t.size))
    options = {"nights": 30, "step_level": 0.01, "slope_level": 0.001}

    assert drift_reading.drifts(trend, [30], **options) == {30}
    assert drift_reading.drifts(step, [30], **options) == set()
    assert drift_reading.drifts(step, [2], **options) == set()  # fewer than 4 values before it: not read
