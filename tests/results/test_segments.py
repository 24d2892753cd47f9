"""Detection on histories as the world makes them (issue 29, spec §8 revised 2026-11-26): a series is a sequence of
segments, so every shift is found on its own (an earlier alert, however it stands, never absorbs a later shift),
an alert names the night its shift began (a one-night outlier does not become a later step's first night), a
machine-wide shift is one incident, and series of one value per run or with two or four modes of noise behave.
Seeded histories with a known truth, through ingestion and the comparison as the analysis worker runs it."""

from datetime import timedelta

import numpy as np
import pytest
from django.db import connection

from benchmarks.two_modes import slow_nights
from results import alerts, comparisons, nights, notifications
from results.models import Alert, AlertGroup, AlertState, ChangePoint, Incident, Run
from results.stored_rows import stored_rows
from tests.factories import NIGHT_ZERO, post_results

pytestmark = pytest.mark.django_db


def night_run(night: int, levels: dict[str, float], *, machine: str = "bench-1", readings: int = 20,
              within: float = 0.005, seed: int = 0) -> Run:
    """One nightly run: each benchmark's `readings` around its level (relative sd `within`), or the level alone
    (one value) when `readings` is 1; compared as the analysis worker compares it."""
    rng = np.random.default_rng(1000 * seed + night)
    results = []
    for name, level in levels.items():
        if readings == 1:
            results.append({"benchmark": name, "samples": [float(level)]})
        else:
            values = level * (1.0 + rng.normal(0.0, within, readings))
            results.append({"benchmark": name, "summary": {"mean": float(values.mean()), "subsession_size": 1,
                                                           "variance": float(values.var(ddof=1)), "n": readings}})
    run = post_results(results, night=night, machine=machine)
    comparisons.compare_run(run_id=run.pk)
    return run


def history(levels_by_night: dict[str, np.ndarray], **options) -> list[Run]:
    nights = len(next(iter(levels_by_night.values())))
    return [night_run(night, {name: float(levels[night]) for name, levels in levels_by_night.items()}, **options)
            for night in range(nights)]


def noisy(nights: int, *, sd: float, seed: int, steps: dict[int, float] = ()) -> np.ndarray:
    """Night levels around 1.0 with run-to-run sd `sd`, multiplied by each step's factor from its night on."""
    levels = 1.0 + np.random.default_rng(seed).normal(0.0, sd, nights)
    for night, factor in dict(steps).items():
        levels[night:] *= factor
    return levels


def alerts_of(name: str) -> list[tuple[int, int, str]]:
    """(night opened, first night named, state) of a benchmark's alerts, in the order they were opened."""
    return [((opened - NIGHT_ZERO).days, (first - NIGHT_ZERO).days, state) for opened, first, state in
            Alert.objects.filter(comparison__candidate__metric__benchmark__name=name).order_by("pk").values_list(
                "comparison__candidate__run__started_at", "first_run__started_at", "state")]


def test_two_steps_on_one_series_are_alerted_each_on_its_night_with_the_first_alert_untriaged():
    levels = noisy(70, sd=0.01, seed=1, steps={25: 1.10, 50: 1.20})

    history({"sort": levels})

    found = [alert for alert in alerts_of("sort") if alert[2] != AlertState.DISMISSED]
    # Each step has an alert of its own, naming its night, opened within two nights of it: the second was not
    # pooled into the first (left untriaged), nor did it confirm the first.
    assert [first for _, first, _ in found] == [25, 50], alerts_of("sort")
    assert max(opened - first for opened, first, _ in found) <= 2, found


def test_one_odd_night_just_after_a_step_opens_no_alert_and_a_second_step_there_does():
    # A step at 25, then on one series a single odd night at 31 (while the step's evidence is still gathered),
    # on the other a second step at 31: one night just after a change is not a new level, two are.
    spike = noisy(40, sd=0.01, seed=7, steps={25: 1.10})
    spike[31] *= 1.04  # four standard deviations
    second = noisy(40, sd=0.01, seed=8, steps={25: 1.10, 31: 1.08})

    history({"spike": spike, "second": second})

    assert [first for _, first, _ in alerts_of("spike")] == [25], alerts_of("spike")
    found = [(opened, first) for opened, first, state in alerts_of("second") if state != AlertState.DISMISSED]
    assert [first for _, first in found] == [25, 31] and found[1][0] <= 33, alerts_of("second")


def test_a_one_night_outlier_does_not_become_the_first_night_of_a_later_step():
    levels = noisy(60, sd=0.005, seed=2, steps={40: 1.06})
    levels[25] *= 1.25  # one odd night

    history({"sort": levels})

    found = alerts_of("sort")
    named = [first for _, first, _ in found]
    assert 40 in named, found
    outlier = [state for _, first, state in found if first == 25]
    assert outlier in ([], [AlertState.DISMISSED]), found


def test_a_machine_wide_shift_is_one_incident_of_its_series_and_no_more():
    shifted = {f"moved {i:02d}": noisy(40, sd=0.005, seed=10 + i, steps={30: 1.08}) for i in range(20)}
    steady = {f"steady {i:02d}": noisy(40, sd=0.005, seed=50 + i) for i in range(20)}

    history({**shifted, **steady})

    (incident,) = Incident.objects.all()
    # Unordered: the default order joins the alert groups, which PostgreSQL's stale statistics plan as nested loops.
    members = set(incident.alerts.order_by().values_list("comparison__candidate__metric__benchmark__name", flat=True))
    assert members == set(shifted)
    assert incident.night == nights.night_of(NIGHT_ZERO + timedelta(days=30))
    assert Alert.objects.count() <= len(shifted)
    # Told once: the night's notification has one line for the incident, none per series.
    group = AlertGroup.objects.filter(alerts__incident=incident).order_by("run__started_at").first()
    text = notifications.summary_text(notifications.alert_group_summary(group))
    assert text.count("machine-wide shift of bench-1 from the night of") == 1
    assert f"{incident.alerts.count()} series moved +" in text and "moved 00" not in text


def test_a_machine_wide_shift_and_a_regression_of_three_series_the_same_night_report_both():
    shifted = {f"moved {i:02d}": noisy(40, sd=0.005, seed=10 + i, steps={30: 1.08}) for i in range(12)}
    regressed = {f"slower {i}": noisy(40, sd=0.005, seed=80 + i, steps={30: 1.30}) for i in range(3)}
    steady = {f"steady {i:02d}": noisy(40, sd=0.005, seed=50 + i) for i in range(15)}

    history({**shifted, **regressed, **steady})

    (incident,) = Incident.objects.all()
    # Unordered: the default order joins the alert groups, which PostgreSQL's stale statistics plan as nested loops.
    members = set(incident.alerts.order_by().values_list("comparison__candidate__metric__benchmark__name", flat=True))
    assert members == set(shifted) | set(regressed)
    # Each series keeps its own alert and verdict: the three 30% regressions are regressions of those series.
    for name in regressed:
        alert = Alert.objects.get(comparison__candidate__metric__benchmark__name=name)
        assert alert.comparison.verdict in ("regression", "suspected regression")
        assert alert.comparison.ratio > 1.25
    line = notifications.incident_line(incident).text
    assert "first bad commit" in line and "after" in line


def test_a_series_of_one_value_per_run_is_detected_from_its_run_to_run_spread():
    levels = noisy(45, sd=0.01, seed=3, steps={30: 1.08})

    history({"single": levels}, readings=1)

    found = alerts_of("single")
    assert found and found[0][1] == 30 and found[0][0] - 30 <= 2, found


def statistics_run_on_sqlite_only(why: str = "") -> None:
    """Skip a test of the detection's statistics alone (the queries are the same as the other tests') on PostgreSQL."""
    if connection.vendor != "sqlite":
        pytest.skip("; ".join(filter(None, ("the same statistics as on SQLite", why))))


@pytest.mark.parametrize("seed", [
    1, 2, 3,
    pytest.param(4, marks=pytest.mark.xfail(strict=True, reason=(
        "issue 29, not met: an alert opened at night 38 (its first night 33) and dismissed by its own evidence; none "
        "confirmed (the same before MIN_PER_HALF was 2)"))),
    5, 6,
])
def test_a_series_alternating_between_two_far_apart_modes_gets_no_alert_when_its_share_of_slow_nights_drifts(seed):
    statistics_run_on_sqlite_only()
    # A benchmark that takes a slow path (3x) on some nights, the share of slow nights drifting from week to week
    # (Perfherder's runs5 history, modes 38x apart: three alerts confirmed and four change points shown, where its
    # maintainers' test expects none). Of seeds 1 to 6, 2, 3 and 4 had alerts confirmed after night 30 before the
    # nights were compared within their modes.
    slow = slow_nights(80, seed=seed)
    levels = np.where(slow, 3.0, 1.0) * (1.0 + np.random.default_rng(seed).normal(0.0, 0.003, 80))

    runs = history({"modes": levels})

    from results import changepoints

    changepoints.detect_change_points(metric_ids=list(runs[-1].results.values_list("metric_id", flat=True)),
                                      machine_id=runs[-1].machine_id)
    # In the first nights a first slow night or two cannot be told from a step: an alert opened then is dismissed
    # as the modes show; none is opened once both modes have been seen alternating.
    found = alerts_of("modes")
    assert all(state == AlertState.DISMISSED and opened < 20 for opened, _, state in found), found
    assert not ChangePoint.objects.filter(retracted_at__isnull=True).exists(), list(
        ChangePoint.objects.values_list("run__started_at", "ratio"))


def test_a_step_of_a_series_alternating_between_two_far_apart_modes_is_alerted_on_its_night():
    statistics_run_on_sqlite_only()
    # Both modes 5% slower from night 50: the whole mixture moved, whatever share of nights each mode has.
    slow = slow_nights(70, seed=6)
    levels = np.where(slow, 3.0, 1.0) * (1.0 + np.random.default_rng(6).normal(0.0, 0.003, 70))
    levels[50:] *= 1.05

    history({"modes": levels})

    found = [alert for alert in alerts_of("modes") if alert[2] != AlertState.DISMISSED]
    assert [first for _, first, _ in found] == [50] and found[0][0] - 50 <= 2, alerts_of("modes")
    # Its rows say the means shown are on the fast mode's scale (the slow nights divided by about 3).
    (alert,) = Alert.objects.exclude(state=AlertState.DISMISSED)
    assert alert.comparison.inputs["mode_factor"] == pytest.approx(1 / 3, rel=0.02)
    (row,) = stored_rows([(alert.comparison.candidate, alert.comparison)])
    assert "compared within its two modes, the slow mode's nights ×0.33" in row.note, row.note


@pytest.mark.parametrize(("change", "moved"), [
    ("the fast mode slows to 2x", 2.0),
    ("every night slow", 3.0),
])
def test_a_regression_of_a_series_alternating_between_two_far_apart_modes_is_alerted_as_one(change, moved):
    statistics_run_on_sqlite_only()
    # What comparing nights within their modes must not hide (a first alignment, reverted, read the first as a 33%
    # improvement and aligned the second away): from night 50 the fast nights of a 1x/3x series take 2x, past the
    # gap's midpoint, or every night is slow.
    slow = slow_nights(70, seed=6)
    levels = np.where(slow, 3.0, 1.0)
    levels[50:] = np.where(slow[50:], 3.0, moved)
    levels *= 1.0 + np.random.default_rng(6).normal(0.0, 0.003, 70)

    history({"modes": levels})

    later = [(first, verdict) for first, verdict in Alert.objects.filter(
        comparison__candidate__metric__benchmark__name="modes", comparison__candidate__run__started_at__gte=(
            NIGHT_ZERO + timedelta(days=50))).values_list("first_run__started_at", "comparison__verdict")]
    assert later and all(verdict.endswith("regression") for _, verdict in later), (change, later)
    if moved == 3.0:
        # Every night slow from night 50 is one change: 7 alerts here, opened and dismissed every other night once
        # its change point split the slow run, before the run's nights since the change were left as measured
        # too; now 2 (the first's first night wavers between the run's and a slow pair's just before it, and the
        # run's own night opens a second). One is the aim: benchmarks/two_modes.py counts 30 alerts on 20 such
        # series (97 before), 10 with more than one.
        assert len(later) <= 2, (change, later)
    else:
        # The fast path at 2x, the slow one unchanged: one change. The slow mode's next night, in neither of the
        # new segment's few nights' modes, was compared as measured and alerted as a second (+50%); the segment
        # now reads the slow mode with the moved fast one (results.stats.align_modes).
        assert len(later) == 1, (change, later)


@pytest.mark.parametrize("modes", [2, 4])
def test_a_flat_series_of_several_modes_gets_no_alert_and_no_change_point(modes):
    rng = np.random.default_rng(modes)
    centres = 1.0 + 0.12 * np.arange(modes)  # runner types 12% apart, landing at random each night
    levels = centres[rng.integers(0, modes, 80)] * (1.0 + rng.normal(0.0, 0.003, 80))

    runs = history({"modes": levels})

    from results import changepoints

    changepoints.detect_change_points(metric_ids=list(runs[-1].results.values_list("metric_id", flat=True)),
                                      machine_id=runs[-1].machine_id)
    assert alerts_of("modes") == [] and not ChangePoint.objects.exists()


def runner_types(nights: int, names: list[str], *, seed: int, steps: dict[str, tuple[int, float]] = ()):
    """Night levels of series on hosted runners: most nights the ordinary type, about one night in three one of
    two others (runs of one or two nights), each moving every series by its own amount (−25% to −8%, +8% to
    +20%); `steps`: a series' own step (night, factor). Returns the levels and each night's runner type."""
    rng = np.random.default_rng(seed)
    effects = np.vstack([np.zeros(len(names)), rng.uniform(0.75, 0.92, len(names)),
                         rng.uniform(1.08, 1.20, len(names))])
    kinds = np.zeros(nights, dtype=int)
    night = 3
    while night < nights:
        if rng.random() < 0.3:
            kinds[night:night + rng.integers(1, 3)] = rng.integers(1, 3)
            night += 3
        else:
            night += 1
    levels = {}
    for column, name in enumerate(names):
        series = (1.0 + rng.normal(0.0, 0.005, nights)) * np.where(kinds == 0, 1.0, effects[kinds, column])
        if name in dict(steps):
            start, factor = dict(steps)[name]
            series[start:] *= factor
        levels[name] = series
    return levels, kinds


def test_runner_types_of_a_hosted_machine_are_divided_out_and_one_series_step_is_found(client, admin_user):
    # Twelve series whose nights land on three runner types (modes 8-25% apart, every series moved at once):
    # once each type has come and gone twice, its nights are recognised and divided out, no series alerts on
    # them, and a 10% step of one series is alerted on its night.
    names = [f"bench {i:02d}" for i in range(12)]
    levels, kinds = runner_types(70, names, seed=29, steps={"bench 03": (50, 1.10)})

    runs = history(levels)
    client.force_login(admin_user)

    found = [alert for alert in alerts_of("bench 03") if alert[2] != AlertState.DISMISSED and alert[1] >= 40]
    assert found and found[0][1] == 50 and found[0][0] - 50 <= 2, alerts_of("bench 03")
    late = [(name, alert) for name in names if name != "bench 03" for alert in alerts_of(name) if alert[0] >= 30]
    # None stands; at most the false-alarm budget's (0.5% of 440 series-nights: about 2) opened and dismissed.
    assert [entry for entry in late if entry[1][2] != AlertState.DISMISSED] == [] and len(late) <= 2, late
    stored = dict(Run.objects.values_list("pk", "environment_match"))
    recognised = [night for night in range(30, 70) if stored[runs[night].pk]]
    assert recognised and all(kinds[night] != 0 for night in recognised)
    assert len(recognised) >= 0.8 * sum(kinds[30:] != 0)
    page = client.get(f"/runs/{runs[recognised[0]].pk}/").content.decode()
    assert "ran in a machine environment seen before" in page


def test_a_two_night_excursion_of_every_series_is_a_transient_not_two_changes():
    # A runner type never seen before, for two nights, moving every series 12-20% slower: an excursion. Its
    # alerts are dismissed as a transient when the series come back, and the return opens none.
    names = [f"bench {i:02d}" for i in range(12)]
    levels = {name: noisy(40, sd=0.005, seed=100 + i) for i, name in enumerate(names)}
    slower = np.random.default_rng(3).uniform(1.12, 1.20, len(names))
    for name, factor in zip(names, slower):
        levels[name][25:27] *= factor

    history(levels)

    found = [alert for name in names for alert in alerts_of(name)]
    assert all(state == AlertState.DISMISSED for _, _, state in found), found
    assert all(first in (25, 26) for _, first, _ in found), found
    notes = set(Alert.objects.values_list("state_note", flat=True))
    assert notes and all("transient" in note for note in notes), notes



@pytest.mark.parametrize("level", [0.015, 0.03])
def test_the_benchmarks_machine_wide_shift_raises_one_incident_and_one_alert_a_moved_series(level):
    # The small seeded version of benchmarks/nightly_detection.py --scenario machine-wide (20 of 40 series move
    # 4% to 12% at night 25). Seed 29 drew both ways a moved series got a second alert: at 1.5% three nights high by
    # chance before the move, first named as its start, then split from it; at 3% the daily scan placing the move
    # 6 nights early, sized by it. Now: the alert re-placed at the move's night, the change point tested up to
    # the alerted move. Every moved series alerted, once; a later alert of a moved series is the false-alarm
    # rate's, as on the series that did not move in the same nights (with 14 first nights tried, at 1.5% one
    # moved series drew a -2.3% alert 13 nights after its +12% move, beside 3 alerts of the unmoved series).
    statistics_run_on_sqlite_only("PostgreSQL runs the machine-wide tests above (2 min each here)")
    from benchmarks.nightly_detection import measure

    figures = measure(40, 40, level, 29, "machine-wide")

    assert len(figures["incidents"]) == 1 and figures["incidents"][0] >= 15, figures["incidents"]
    moves, more = figures["stepped_alerts"]
    assert moves == 20 and more <= max(1, figures["unmoved_alerts"]), figures


def test_a_second_step_long_after_a_stray_alert_gets_an_alert_of_its_own():
    # Series 31 of benchmarks/nightly_detection.py --scenario two-steps (1.5%, seed 14): a 5% step at night 25,
    # alerted; a few noisy nights after it open a second alert (first night 28) that stays untriaged; the second
    # 5% step at night 50 was found inside that alert's nights and, the alert's own nights showing no change,
    # re-placed it 22 nights later: the second step was never told. A first night moves a few nights at most.
    from benchmarks.nightly_detection import READINGS, WITHIN_SD, scenario_levels

    rng = np.random.default_rng(14)
    factors, _ = scenario_levels("two-steps", 300, 70, rng)
    for night in range(70):
        levels = (1.0 + rng.normal(0.0, 0.015, 300)) * factors[:, night]
        values = levels[31] * (1.0 + rng.normal(0.0, WITHIN_SD, (300, READINGS))[31])
        run = post_results([{"benchmark": "sort", "summary": {"mean": float(values.mean()), "subsession_size": 1,
                                                              "variance": float(values.var(ddof=1)), "n": READINGS}}],
                           night=night)
        comparisons.compare_run(run_id=run.pk)
        alerts.scan_run_series(run_id=run.pk)
        alerts.scan_change_points()

    found = alerts_of("sort")
    assert [(first, state) for _, first, state in found if state != AlertState.DISMISSED] == [
        (25, AlertState.CONFIRMED), (50, AlertState.CONFIRMED)], found
    # Each opened on or after the night it names (the second step told when it came), within two nights.
    assert all(0 <= opened - first <= 2 for opened, first, _ in found), found
