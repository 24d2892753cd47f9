"""Whether two runs' machines were in the same state (results.machine_state): load, governor, clock."""

from pathlib import Path


from results.ingest import pyperf
from results.machine_state import machine_state, state_differences


DATA = Path(__file__).resolve().parents[1] / "data"


def test_pyperfs_metadata_gives_the_load_the_cores_and_the_clock():
    environment = pyperf.parse((DATA / "pyperf_suite.json").read_bytes())["environment"]

    state = machine_state(environment)

    # The file's runs recorded 1-minute loads of 2.68 to 2.79; the importer keeps their median.
    assert environment["load_avg_1min"] == 2.79
    assert (state.load, state.cores, state.mhz) == (2.79, 2, 2445.0)


def test_a_load_a_quarter_of_a_core_apart_per_core_is_said_a_smaller_one_is_not():
    base = {"load_avg_1min": 3.3, "cpu_count": 4}

    assert state_differences(base, {**base, "load_avg_1min": 3.9}) == []
    (said,) = state_differences(base, {**base, "load_avg_1min": 4.7})
    assert said.startswith("the machine's load differed: 3.3 for the base, 4.7 for the head")
    assert "on 4 cores" in said


def test_a_governor_or_a_clock_that_changed_is_said_whatever_recorded_it():
    pyperf_style = {"cpu_config": "0-3=driver:intel_pstate, governor:powersave; idle:intel_idle",
                    "cpu_freq": "0-3=2400 MHz"}
    worker_style = {"cpu_governor": "performance", "cpu_mhz": 3400}

    said = state_differences(pyperf_style, worker_style, names=("the baseline", "the candidate"))

    assert said == ["the CPU frequency governor differed: powersave for the baseline, performance for the candidate",
                    "the CPU clock differed: 2400 MHz for the baseline, 3400 MHz for the candidate"]


def test_nothing_known_is_nothing_said():
    assert state_differences({}, {"load_avg_1min": 9.0}) == []
    assert state_differences(None, {"load_avg_1min": "high", "cpu_count": True}) == []


def test_a_noisy_neighbour_of_either_run_is_said():
    quiet, busy = {"neighbour_cores": 0.04}, {"neighbour_cores": 1.02}

    assert state_differences(quiet, quiet) == []
    (said,) = state_differences(quiet, busy)
    assert said.startswith("other processes kept up to 1.0 cores busy during the head's rounds")


def test_a_governor_that_is_no_governors_name_is_not_taken_into_the_comment():
    """A posted environment is the sender's: its words reach the pull request's Markdown comment."""
    posted = {"cpu_governor": "[click](https://example.org) @everyone"}

    assert machine_state(posted).governor is None
    assert state_differences(posted, {"cpu_governor": "performance"}) == []
