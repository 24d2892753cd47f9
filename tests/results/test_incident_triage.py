"""An incident is triaged once: its status, bug link and assignee, and with them each of its alerts', from the alerts
page and the API; a bad link or an assignee who may not triage changes nothing."""

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from results import services
from results.triage import triage_incident
from results.models import Alert, AlertEvent, AlertStatus, Incident, IncidentKind
from tests.factories import ResultFactory, UserFactory
from tests.results.test_sheriff import opened_alerts

pytestmark = pytest.mark.django_db

BUG = "https://bugs.example.org/1234"


@pytest.fixture
def incident():
    """The incident the three alerts of one night and machine make: a commit range."""
    alerts = opened_alerts()
    incident = Incident.objects.get()
    assert incident.kind == IncidentKind.RANGE and set(incident.alerts.all()) == set(alerts)
    return incident


@pytest.fixture
def triager(incident):
    from results.models import Membership, Role

    user = UserFactory(username="ada")
    Membership.objects.create(project=incident.project, user=user, role=Role.MAINTAINER)
    return user


def test_the_status_link_and_assignee_reach_every_alert_of_the_incident(incident, triager):
    triage_incident(incident=incident, status=AlertStatus.ACKNOWLEDGED, note="the runner image", bug_url=BUG,
                    assignee=triager, user=triager)

    incident.refresh_from_db()
    assert (incident.status, incident.bug_url, incident.assignee) == (AlertStatus.ACKNOWLEDGED, BUG, triager)
    assert set(Alert.objects.values_list("status", "bug_url", "assignee")) == {
        (AlertStatus.ACKNOWLEDGED, BUG, triager.pk)}
    assert AlertEvent.objects.filter(note="the runner image").count() == 3
    # Left out, the link and the assignee stay as they are.
    triage_incident(incident=incident, status=AlertStatus.FIXED, user=triager)
    assert set(Alert.objects.values_list("status", "bug_url", "assignee")) == {(AlertStatus.FIXED, BUG, triager.pk)}


@pytest.mark.parametrize("options, field", [({"bug_url": "javascript:alert(1)"}, "bug_url"),
                                            ({"assignee": "outsider"}, "assignee")])
def test_a_bad_link_or_an_assignee_who_may_not_triage_changes_nothing(incident, triager, options, field):
    if options.get("assignee") == "outsider":
        options = {"assignee": UserFactory()}
    with pytest.raises(ValidationError) as raised:
        triage_incident(incident=incident, status=AlertStatus.INVALID, user=triager, **options)
    assert field in raised.value.message_dict
    incident.refresh_from_db()
    assert (incident.status, incident.bug_url, incident.assignee) == (AlertStatus.NEW, "", None)
    assert set(Alert.objects.values_list("status", "bug_url")) == {(AlertStatus.NEW, "")}


def test_the_alerts_page_triages_an_incident_with_its_link_and_assignee(incident, triager):
    client = Client()
    client.force_login(triager)
    page = client.get("/alerts/").content.decode()
    assert f'id="incident-bug-{incident.pk}"' in page and f'id="incident-assignee-{incident.pk}"' in page

    response = client.post("/alerts/", {"incident": incident.pk, "status": "acknowledged", "note": "",
                                        "bug_url": BUG, "assignee": triager.pk})

    assert response.status_code == 302
    assert set(Alert.objects.values_list("bug_url", "assignee")) == {(BUG, triager.pk)}
    page = client.get("/alerts/").content.decode()
    assert f'<a href="{BUG}" rel="noreferrer">bug</a>' in page and "assigned to ada" in page
    refused = client.post("/alerts/", {"incident": incident.pk, "status": "fixed", "bug_url": "ftp://x"},
                          follow=True)
    assert "Not changed" in refused.content.decode() or "Enter a valid URL" in refused.content.decode()
    assert set(Alert.objects.values_list("status", flat=True)) == {AlertStatus.ACKNOWLEDGED}


def test_the_api_takes_the_bug_link_and_shows_the_follow_up(incident, triager):
    _, token = services.create_api_token(user=triager, name="sheriff", scopes=["triage"])
    api = Client(headers={"Authorization": f"Bearer {token}"})

    answer = api.post(f"/api/v1/incidents/{incident.pk}/status", {"status": "acknowledged", "bug_url": BUG},
                      content_type="application/json")

    assert answer.status_code == 200, answer.content
    assert (answer.json()["bug_url"], answer.json()["status"]) == (BUG, "acknowledged")
    assert set(Alert.objects.values_list("bug_url", flat=True)) == {BUG}
    bad = api.post(f"/api/v1/incidents/{incident.pk}/status", {"status": "fixed", "bug_url": "not a link"},
                   content_type="application/json")
    assert bad.status_code in (400, 422)
    assert Incident.objects.get().status == AlertStatus.ACKNOWLEDGED


def test_a_commit_range_is_worded_as_one_and_its_alerts_are_each_told(incident):
    from results.notifications import alert_group_summary, incident_line

    line = incident_line(incident).text
    assert line.startswith("commit range of ") and "3 series moved +19.9% to +39.9%" in line
    summary = alert_group_summary(incident.alerts.first().group)
    # Few alerts: each is told (a machine-wide shift is told once instead).
    assert summary.incidents == [] and len(summary.changes) == 3


def test_an_incident_whose_alerts_were_opened_on_two_nights_is_shown_once_and_named_in_the_other(incident):
    from results.models import AlertGroup
    from tests.factories import posted_run

    later = AlertGroup.objects.create(run=posted_run(11, {"sort": 1.2, "hash": 1.3, "scan": 1.4}, sd=0.002))
    Alert.objects.filter(pk=incident.alerts.order_by("pk").first().pk).update(group=later)

    page = Client().get("/alerts/").content.decode()

    assert page.count(f'id="incident-{incident.pk}"') == 1
    assert f'belong to <a href="#incident-{incident.pk}">incident #{incident.pk}</a> (above)' in page


def test_an_incident_counts_series_not_alerts(incident):
    from results.notifications import incident_line

    alert = incident.alerts.first()
    comparison = alert.comparison
    comparison.pk, comparison.ratio = None, 0.9  # a second change of the same series, the other way
    comparison.save()
    alert.pk, alert.comparison = None, comparison
    alert.save()

    line = incident_line(incident).text
    assert incident.alerts.count() == 4 and "3 series moved -10.0% to +39.9%" in line


def test_an_alert_whose_first_night_moves_leaves_the_commit_range_it_no_longer_names(incident):
    from results.alerts import gather_incidents
    from results.models import Run

    moved, stays, last = incident.alerts.order_by("pk")
    earlier = Run.objects.filter(started_at__lt=moved.first_run.started_at).order_by("-started_at").first()

    def re_estimate(alert):  # its first night moved a night earlier, as _carry and _move_or_split do, and
        Alert.objects.filter(pk=alert.pk).update(first_run=earlier)  # open_alerts gathers it again
        gather_incidents(moved.group.run, also=[alert.pk, stays.pk])

    re_estimate(moved)
    moved.refresh_from_db()
    stays.refresh_from_db()
    # Alone on its night now: in no incident (a commit range is two series or more); the others keep theirs.
    assert moved.incident is None and stays.incident == incident and incident.alerts.count() == 2

    re_estimate(last)
    # Two on the earlier night now make a commit range of their own; the one left on the first night is no
    # incident any more (nobody had triaged it).
    assert not Incident.objects.filter(pk=incident.pk).exists()
    assert {alert.incident_id for alert in Alert.objects.filter(pk__in=[moved.pk, last.pk])} == {
        Incident.objects.get().pk} and Alert.objects.get(pk=stays.pk).incident is None


def test_a_commit_range_that_grows_to_many_series_is_a_machine_wide_shift(incident):
    from results.alerts import MACHINE_WIDE_SERIES, gather_incidents
    from results.models import AlertGroup

    group = incident.alerts.first().group
    alert = incident.alerts.first()
    for _ in range(MACHINE_WIDE_SERIES - 3):  # more series of the same run, each with an alert of the night
        comparison = alert.comparison
        comparison.pk, comparison.candidate = None, ResultFactory(run=comparison.candidate.run)
        comparison.save()
        alert.pk, alert.incident, alert.comparison = None, None, comparison
        alert.save()
    gather_incidents(AlertGroup.objects.get(pk=group.pk).run)
    incident.refresh_from_db()
    assert incident.kind == IncidentKind.MACHINE and incident.alerts.count() == MACHINE_WIDE_SERIES
