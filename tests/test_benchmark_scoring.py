"""The benchmarks' scoring of change points against annotated labels, checked against the published figures of the
scorer they reproduce: TCPDBench's F1 (van den Burg & Williams 2020; the examples of its
analysis/scripts/metrics.py, github:alan-turing-institute/TCPDBench), margin 5, the first point counted (the drift
reading benchmarks/drift_reading.py prints is the product's, tested in tests/stats/test_trend_step.py)."""

import pytest

from benchmarks.real_histories import annotated_scores


@pytest.mark.parametrize(("annotators", "found", "f1"), [
    ({1: [10, 20], 2: [11, 20], 3: [10], 4: [0, 5]}, [10, 20], 1.0),
    ({1: [], 2: [10], 3: [50]}, [10], 0.9090909090909091),
    ({1: [], 2: [10], 3: [50]}, [], 0.8),
])
def test_the_f1_of_annotated_change_points_is_tcpdbenchs(annotators, found, f1):
    assert annotated_scores(found, annotators)[2] == pytest.approx(f1, rel=1e-12)
