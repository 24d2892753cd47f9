"""The bisection on the alert page: who sees the button to start or cancel one, what a refused or bad request gets
(a clear 4xx or a message, nothing changed), and the steps and culprit as the page words them."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from results.models import Alert, AlertState
from runner.bisection import service
from runner.models import Bisection, BisectionStatus, Round, Session
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
    assert f'id="bisection-{bisection.pk}"' in page and "over its parent, among 5 commits" in page
    assert f'<code title="{culprit}">' in page
    assert page.count("moved: at the bad level") >= 2 and "at the good level" in page
    # Each step's readings: its session's rounds, one reading of one commit each (the level test's rounds read the
    # candidate and one end or both).
    first = bisection.steps.get(position=0).session
    Round.objects.bulk_create(Round(session=first, index=index, workload=label, work_amount=1.0, duration=0.1,
                                    readings={"time": 1.0})
                              for index, label in enumerate(["reference", "candidate", "moved"] * 5 + ["candidate",
                                                                                                       "moved"] * 3))
    page = logged_in(regression["maintainer"]).get("/alerts/").content.decode()
    cells = (r'sessions/(\d+)/">#\d+</a>[^<]*</td>\s*<td>[^<]*</td><td class="num">[^<]*</td>'
             r'<td class="num">([^<]*)</td>')
    shown = dict(re.findall(cells, page))
    assert shown[str(first.pk)] == "21" and set(shown.values()) == {"21", "—"}
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


def test_the_sheriff_numbers_count_the_culprits_and_their_machine_time(regression):  # noqa: F811
    bisection = found(regression)
    steps = Session.objects.filter(bisection_step__bisection=bisection)
    # Each step took five minutes of the machine.
    for session in steps:
        Session.objects.filter(pk=session.pk).update(started_at=timezone.now() - timedelta(minutes=5),
                                                    finished_at=timezone.now())
    slug = regression["job"].project.slug

    numbers = Client().get(f"/api/v1/projects/{slug}/sheriff?weeks=1").json()["total"]
    assert (numbers["bisections"], numbers["culprits"]) == (1, 1)
    assert numbers["bisection_machine_hours"] == pytest.approx(steps.count() * 5 / 60, rel=1e-3)
    page = Client().get(f"/projects/{slug}/sheriff/?weeks=1")
    assert '<dd data-total="culprits">1 of 1 bisection</dd>' in page.content.decode()
    plotted = {trace["name"]: trace["y"] for trace in page.context["figures"]["sheriff"]["data"]}
    assert plotted["culprits found by bisection"] == [1]


def test_the_history_chart_marks_the_culprit_at_its_night(regression):  # noqa: F811
    bisection = found(regression)
    alert = regression["alert"]
    metric = alert.comparison.candidate.metric
    page = Client().get(f"/history/{metric.pk}/")
    traces = {trace["name"]: trace for trace in page.context["figures"]["history"]["data"]}
    marked = traces["★ culprit found by bisection"]
    assert marked["customdata"] == [alert.first_run_id]
    assert marked["text"] == [bisection.culprit[:12]]
    assert f"culprit {bisection.culprit[:12]}" in marked["hovertext"][0]


def test_no_button_and_a_refusal_where_the_job_does_not_read_the_alerts_metric(regression):  # noqa: F811
    from runner.models import Job

    Job.objects.filter(pk=regression["job"].pk).update(
        reading_mode="json_lines", metrics=[{"name": "memory", "unit": "B", "direction": "lower_is_better"}])
    maintainer = logged_in(regression["maintainer"])
    assert "Bisect to the culprit" not in maintainer.get("/alerts/").content.decode()
    response = maintainer.post(START, {"alert": regression["alert"].pk}, follow=True)
    assert "and reads time: nothing to bisect with" in response.content.decode()
    assert not Bisection.objects.exists()
