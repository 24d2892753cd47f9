"""The numerical core imports without Django and exports its promised names."""

import subprocess
import sys
from pathlib import Path

import results.stats

ROOT = Path(__file__).resolve().parents[2]


def test_importing_results_stats_does_not_import_django():
    code = "import sys, results.stats; assert 'django' not in sys.modules, [m for m in sys.modules if 'django' in m]"
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def test_public_names():
    promised = {
        "autocorrelation", "subsessions", "SubsessionResult", "mean_interval", "required_subsessions",
        "welch_test", "WelchResult", "welch_required_subsessions", "variance_components",
        "ratio_fieller", "ratio_fieller_from_stats", "ratio_bootstrap", "RatioResult", "plan_repetitions",
        "verdict", "Verdict", "StatisticsError", "NotEnoughSamples", "summarize_samples", "SampleSummary",
    }
    assert promised <= set(results.stats.__all__)
    for name in results.stats.__all__:
        assert hasattr(results.stats, name), name
