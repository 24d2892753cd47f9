"""Comparisons and alerts over the API: read by anyone allowed to read, triaged by the project's maintainers
(and staff) only, through a token with the triage scope."""

import pytest
from django.test import Client

from results import comparisons, services
from results.models import Alert, TokenScope
from tests.factories import posted_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def regressed_run():
    for night in range(10):
        posted_run(night, {"sort": 1.0, "hash": 1.0}, sd=0.002)
    run = posted_run(10, {"sort": 1.2, "hash": 1.0}, sd=0.002)
    comparisons.compare_run(run_id=run.pk)
    return run


def test_a_runs_comparisons_are_listed_worst_first(regressed_run):
    body = Client().get(f"/api/v1/runs/{regressed_run.pk}/comparisons?method=history").json()["items"]

    assert [(row["benchmark"], row["verdict"]) for row in body] == [("sort", "regression"), ("hash", "no change")]
    assert body[0]["change"].startswith(("+19.", "+20.")) and body[0]["qvalue"] is not None


def test_alerts_are_listed_and_triaged_by_maintainers_with_a_token_for_triage(regressed_run, maintainer):
    listed = Client().get("/api/v1/alerts?status=new").json()["items"]
    assert [alert["comparison"]["benchmark"] for alert in listed] == ["sort"]
    assert listed[0]["bug_url"] is None and listed[0]["assignee"] is None and listed[0]["first_run_id"] is not None
    _, token = services.create_api_token(user=maintainer, name="sheriff", scopes=[TokenScope.TRIAGE])

    response = Client(headers={"Authorization": f"Bearer {token}"}).post(
        f"/api/v1/alerts/{listed[0]['id']}/status", data={"status": "acknowledged", "note": "mine"},
        content_type="application/json")

    assert response.status_code == 200
    assert response.json()["events"][0]["to"] == "acknowledged"
    assert Alert.objects.get().status == "acknowledged"


def test_a_non_member_or_a_token_without_the_triage_scope_cannot_triage(regressed_run, user, maintainer):
    alert = Alert.objects.get()
    _, stranger = services.create_api_token(user=user, name="sheriff", scopes=[TokenScope.TRIAGE])
    _, upload_only = services.create_api_token(user=maintainer, name="ci")

    refused = [Client(headers={"Authorization": f"Bearer {token}"}).post(
        f"/api/v1/alerts/{alert.pk}/status", data={"status": "invalid"}, content_type="application/json")
        for token in (stranger, upload_only)]

    assert [response.status_code for response in refused] == [403, 403]
    assert "role maintainer" in refused[0].json()["detail"] and "lacks the scope 'triage'" in refused[1].json()["detail"]
    assert Alert.objects.get().status == "new" and not alert.events.exists()


def test_anonymous_visitors_cannot_triage(regressed_run):
    alert = Alert.objects.get()

    response = Client().post(f"/api/v1/alerts/{alert.pk}/status", data={"status": "invalid"},
                             content_type="application/json")

    assert response.status_code == 401
    assert Alert.objects.get().status == "new"
