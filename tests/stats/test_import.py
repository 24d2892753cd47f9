"""The numerical core imports without Django and exports its promised names."""

import subprocess
import sys
from pathlib import Path

import pytest

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


def test_every_public_name_is_its_submodules_object_by_attribute_by_from_import_and_by_star():
    star: dict = {}
    exec("from results.stats import *", star)
    for name in results.stats.__all__:
        value = getattr(results.stats, name)
        submodule = sys.modules[f"results.stats.{results.stats._SUBMODULE_OF[name]}"]
        assert value is getattr(submodule, name) is star[name], name
    assert set(results.stats.__all__) <= set(dir(results.stats))


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'results.stats' has no attribute 'welch'"):
        results.stats.welch  # noqa: B018
    with pytest.raises(ImportError, match="welch"):
        exec("from results.stats import welch", {})


def test_a_submodule_is_imported_when_one_of_its_names_is_first_used():
    # compare --files uses the test, the ratio and the verdict: the warm-up removal, the history and the
    # planning stay unimported (and scipy with them until a name needs it).
    code = ("import sys, results.stats\n"
            "loaded = lambda: sorted(m for m in sys.modules if m.startswith(('results.stats.', 'scipy')))\n"
            "assert loaded() == [], loaded()\n"
            "results.stats.welch_test\n"
            "print(' '.join(loaded()))")
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    loaded = set(completed.stdout.split())
    assert {"results.stats._compare", "results.stats._distributions", "scipy.special"} <= loaded
    assert not {"results.stats._edm", "results.stats._level_test", "results.stats._order_statistics",
                "results.stats._stable_phase", "results.stats._wps", "results.stats._history"} & loaded
