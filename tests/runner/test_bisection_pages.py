"""The bisection on the alert page: who sees the button to start or cancel one, what a refused or bad request gets
(a clear 4xx or a message, nothing changed), and the steps and culprit as the page words them."""

import pytest
from django.test import Client

from results.models import Alert, AlertState
from runner.bisection import service
from runner.models import Bisection, BisectionStatus
from tests.factories import UserFactory
from tests.runner.test_bisection_service import CULPRIT, found, regression  # noqa: F401 (fixture)
from tests.runner.test_integration import machine  # noqa: F401 (fixture)
from tests.runner.test_trusted_revisions import repositories  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

START = "/jobs/bisections/start/"


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_only_those_who_triage_see_the_button_and_may_start(regression):  # noqa: F811
    alert = regression["alert"]
    page = logged_in(regression["maintainer"]).get("/alerts/").content.decode()
    assert "Bisect to the culprit" in page
    stranger = logged_in(UserFactory())
    assert "Bisect to the culprit" not in stranger.get("/alerts/").content.decode()

    assert stranger.post(START, {"alert": alert.pk}).status_code == 403
    assert Client().post(START, {"alert": alert.pk}).status_code == 302  # to the login page
    assert logged_in(regression["maintainer"]).post(START, {"alert": "x"}).status_code == 400
    assert logged_in(regression["maintainer"]).post(START, {"alert": 10**9}).status_code == 404
    assert not Bisection.objects.exists()


def test_a_refused_start_says_why_and_changes_nothing(regression):  # noqa: F811
    alert = regression["alert"]
    Alert.objects.filter(pk=alert.pk).update(state=AlertState.SUSPECTED)
    maintainer = logged_in(regression["maintainer"])
    assert "Bisect to the culprit" not in maintainer.get("/alerts/").content.decode()
    response = maintainer.post(START, {"alert": alert.pk}, follow=True)
    assert "Not started: Only a confirmed regression of a nightly series is bisected." in response.content.decode()
    assert not Bisection.objects.exists()


def test_the_page_shows_the_steps_and_links_the_culprit(regression):  # noqa: F811
    bisection = found(regression)
    culprit = regression["main"][CULPRIT]
    page = logged_in(regression["maintainer"]).get("/alerts/").content.decode()
    assert f'id="bisection-{bisection.pk}"' in page and f"culprit {culprit[:12]}" in page
    assert f'<code title="{culprit}">' in page
    assert page.count("moved: at the bad level") >= 2 and "at the good level" in page
    assert "Bisect to the culprit" not in page  # found: not bisected again
    assert "Cancel bisection" not in page


def test_a_bisection_under_way_can_be_cancelled_from_the_page(regression):  # noqa: F811
    bisection = service.start_bisection(alert=regression["alert"], user=regression["maintainer"])
    maintainer = logged_in(regression["maintainer"])
    assert f"Cancel bisection #{bisection.pk}" in maintainer.get("/alerts/").content.decode()
    assert logged_in(UserFactory()).post(f"/jobs/bisections/{bisection.pk}/cancel/").status_code == 403
    response = maintainer.post(f"/jobs/bisections/{bisection.pk}/cancel/", follow=True)
    assert f"Bisection #{bisection.pk}: cancelled." in response.content.decode()
    assert Bisection.objects.get(pk=bisection.pk).status == BisectionStatus.CANCELLED
