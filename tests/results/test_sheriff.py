"""Sheriff numbers: alerts and incidents opened per week, the share later found false, regressions confirmed, and the
hours to the alert and to triage, on the page, in its downloads and from the API, counted by hand here."""

from datetime import datetime, timedelta, timezone

import pytest
from django.db.models import F
from django.test import Client

from results import comparisons, selectors
from results.triage import set_alert_status
from results.models import Alert, AlertEvent, AlertState, AlertStatus, Incident, IncidentKind, Project, Run
from tests.factories import NIGHT_ZERO, UserFactory, posted_run

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 10, 28, 12, tzinfo=timezone.utc)  # a Wednesday; its week began on Monday 2026-10-26


def opened_alerts(names=("sort", "hash", "scan")) -> list[Alert]:
    """Three alerts opened by night 10 of a history that stepped 20-40% on it, each named by its benchmark."""
    for night in range(10):
        posted_run(night, dict.fromkeys(names, 1.0), sd=0.002)
    tonight = posted_run(10, {name: 1.2 + 0.1 * index for index, name in enumerate(names)}, sd=0.002)
    comparisons.compare_run(run_id=tonight.pk)
    return list(Alert.objects.order_by("comparison__candidate__metric__benchmark__name"))


@pytest.fixture
def week_of_alerts():
    """The three alerts (hash, scan, sort) told apart by their times: the first bad night is night 10
    (2026-10-11 02:00). hash: opened 6 h after it and triaged invalid 30 h after that; scan: opened 18 h after it,
    dismissed by later nights, never triaged; sort: opened 12 h after it, acknowledged 2 h after that, confirmed.
    All three opened in the week of Monday 2026-10-05, which ends on Sunday 2026-10-11, as their incident."""
    hash_alert, scan, sort = opened_alerts()
    first_bad = NIGHT_ZERO + timedelta(days=10)
    Run.objects.update(created_at=F("started_at"))  # each night stored as it ran
    staff = UserFactory(is_staff=True)
    for alert, hours in ((hash_alert, 6), (scan, 18), (sort, 12)):
        Alert.objects.filter(pk=alert.pk).update(created_at=first_bad + timedelta(hours=hours))
    set_alert_status(alert=hash_alert, status=AlertStatus.INVALID, note="a noisy runner", user=staff)
    set_alert_status(alert=sort, status=AlertStatus.ACKNOWLEDGED, user=staff)
    AlertEvent.objects.filter(alert=hash_alert).update(created_at=first_bad + timedelta(hours=36))
    AlertEvent.objects.filter(alert=sort).update(created_at=first_bad + timedelta(hours=14))
    Alert.objects.filter(pk=scan.pk).update(state=AlertState.DISMISSED)
    Alert.objects.filter(pk=sort.pk).update(state=AlertState.CONFIRMED)
    # The three moved on one night of one machine: one incident (a commit range), opened with them.
    Incident.objects.update(created_at=first_bad + timedelta(hours=6))
    return Project.objects.get()


def test_a_night_imported_long_after_it_ran_counts_from_when_it_was_stored(week_of_alerts):
    # The same first bad night, posted 40 days late: its alert, opened 2 h after it was stored, took 2 h.
    stored = NIGHT_ZERO + timedelta(days=50)
    Run.objects.update(created_at=stored)
    Alert.objects.update(created_at=stored + timedelta(hours=2))

    numbers = selectors.sheriff_numbers(viewer=None, project=week_of_alerts.slug, weeks=4,
                                        now=stored + timedelta(days=1))

    assert numbers.total.alerts == 3 and numbers.total.hours_to_alert == pytest.approx(2.0)


def test_the_numbers_of_a_week_counted_by_hand(week_of_alerts):
    numbers = selectors.sheriff_numbers(viewer=None, project=week_of_alerts.slug, weeks=4, now=NOW)
    assert [week.start.isoformat() for week in numbers.weeks] == ["2026-10-05", "2026-10-12", "2026-10-19",
                                                                 "2026-10-26"]
    week = numbers.weeks[0]
    assert (week.alerts, week.false_alerts, week.regressions_confirmed, week.incidents) == (3, 2, 1, 1)
    assert week.false_share == pytest.approx(2 / 3)
    assert week.hours_to_alert == pytest.approx(12.0)  # the median of 6, 12 and 18
    assert week.hours_to_triage == pytest.approx((30.0 + 2.0) / 2)  # scan was never triaged
    assert all(later.alerts == 0 and later.hours_to_alert is None for later in numbers.weeks[1:])
    assert numbers.total == type(week)(start=week.start, alerts=3, incidents=1, false_alerts=2,
                                       regressions_confirmed=1, hours_to_alert=12.0, hours_to_triage=16.0)
    assert numbers.untriaged == 1


def test_an_incident_counts_in_the_week_it_was_opened(week_of_alerts):
    alert = Alert.objects.first()
    incident = Incident.objects.create(kind=IncidentKind.MACHINE, project=week_of_alerts,
                                       machine=alert.first_run.machine, night=alert.first_run.started_at.date(),
                                       first_run=alert.first_run)
    Incident.objects.filter(pk=incident.pk).update(created_at=datetime(2026, 10, 20, 8, tzinfo=timezone.utc))
    numbers = selectors.sheriff_numbers(viewer=None, project=week_of_alerts.slug, weeks=4, now=NOW)
    assert [week.incidents for week in numbers.weeks] == [1, 0, 1, 0] and numbers.total.incidents == 2


def test_alerts_before_the_period_are_left_out(week_of_alerts):
    numbers = selectors.sheriff_numbers(viewer=None, project=week_of_alerts.slug, weeks=3, now=NOW)
    assert numbers.total.alerts == 0 and numbers.total.hours_to_alert is None


def test_the_page_the_download_and_the_api_say_the_same(week_of_alerts, settings, monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    client = Client()
    slug = week_of_alerts.slug
    page = client.get(f"/projects/{slug}/sheriff/?weeks=4")
    assert page.status_code == 200
    text = page.content.decode()
    assert '<dd data-total="alerts">3</dd>' in text and "2 (67% of the alerts)" in text
    assert '<dd data-total="to-alert">12.0</dd>' in text and '<dd data-total="to-triage">16.0</dd>' in text
    plotted = page.context["figures"]["sheriff"]["data"]
    assert [trace["y"] for trace in plotted] == [[3, 0, 0, 0], [2, 0, 0, 0], [12.0, None, None, None],
                                                 [16.0, None, None, None]]
    download = client.get(f"/projects/{slug}/sheriff/?weeks=4&format=json").json()
    api = client.get(f"/api/v1/projects/{slug}/sheriff?weeks=4").json()
    assert api["weeks"] == download
    assert api["weeks"][0] == {"week": "2026-10-05", "alerts": 3, "incidents": 1, "false_alerts": 2,
                               "false_share": pytest.approx(2 / 3), "regressions_confirmed": 1,
                               "median_hours_to_alert": 12.0, "median_hours_to_triage": 16.0, "bisections": 0,
                               "culprits": 0, "bisection_machine_hours": 0.0}
    assert (api["total"]["alerts"], api["untriaged"], api["project"]) == (3, 1, slug)


def test_a_private_project_is_not_found_and_bad_weeks_are_refused(week_of_alerts, settings):
    client = Client()
    slug = week_of_alerts.slug
    assert client.get(f"/projects/{slug}/sheriff/?weeks=0").status_code == 400
    assert client.get(f"/projects/{slug}/sheriff/?format=xml").status_code == 400
    assert client.get(f"/projects/{slug}/sheriff/?weeks=0&format=csv").status_code == 400
    assert client.get(f"/api/v1/projects/{slug}/sheriff?weeks=1000").status_code == 422
    assert client.get("/projects/no-such-project/sheriff/").status_code == 404
    Project.objects.update(private=True)
    assert client.get(f"/api/v1/projects/{slug}/sheriff").status_code in (401, 404)
    outsider = UserFactory()
    client.force_login(outsider)
    assert client.get(f"/projects/{slug}/sheriff/").status_code == 404
    assert client.get(f"/api/v1/projects/{slug}/sheriff").status_code == 404


def test_the_false_alert_rule_reads_the_models_statuses():
    from results import decisions

    assert decisions.INVALID_STATUS == AlertStatus.INVALID and decisions.DISMISSED_STATE == AlertState.DISMISSED
    assert decisions.REAL_STATUSES == (AlertStatus.FIXED, AlertStatus.WONT_FIX)
    assert decisions.is_false_alert(AlertStatus.NEW, AlertState.DISMISSED)
    assert not decisions.is_false_alert(AlertStatus.FIXED, AlertState.DISMISSED)  # a reverted real regression
    assert decisions.is_false_alert(AlertStatus.INVALID, AlertState.CONFIRMED)
