"""A bisection on the alert page in a real browser: a maintainer starts it from the alert, follows its steps while
they run, sees the culprit linked to its commit and marked on the history chart, or cancels it; the night's
alerts of one machine are one incident, triaged at once."""

import pytest
from playwright.sync_api import expect

from results.models import Alert, AlertStatus, Incident, Project
from runner.bisection import service
from runner.models import Bisection, BisectionStatus, Session, SessionStatus, SessionTrigger
from tests.runner.test_bisection_service import CULPRIT, finish, regression  # noqa: F401 (fixture)
from tests.runner.test_integration import machine  # noqa: F401 (fixture)
from tests.runner.test_trusted_revisions import repositories  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("results_without_broker")]

GITHUB = "https://github.com/acme/tool"


@pytest.fixture(autouse=True)
def machine_by_hand(monkeypatch):
    """No broker or bench worker here: the test does the machine's part (list the range, end each session)."""
    monkeypatch.setattr(service, "enqueue", lambda *args, **kwargs: True)
    monkeypatch.setattr(service, "send_on_commit", lambda session: None)


def queued_step() -> Session | None:
    return Session.objects.filter(trigger=SessionTrigger.BISECTION, status=SessionStatus.QUEUED).first()


def test_a_maintainer_bisects_from_the_alert_and_follows_it_to_the_culprit(page, login, screenshot, regression):  # noqa: F811
    Project.objects.update(repository_url=GITHUB)
    alert, main = regression["alert"], regression["main"]
    login(regression["maintainer"])
    page.goto(f"/alerts/#alert-{alert.pk}")

    page.get_by_role("button", name="Bisect to the culprit").click()
    expect(page.locator("ul.messages")).to_contain_text(f"of alert #{alert.pk} started")
    bisection = Bisection.objects.get(alert=alert)
    service.list_range(bisection_id=bisection.pk)  # on the machine

    page.goto(f"/alerts/#alert-{alert.pk}")
    shown = page.locator(f"#bisection-{bisection.pk}")
    expect(shown).to_contain_text("narrowing 5 commits")
    steps = shown.locator("table.bisection-steps tbody tr")
    expect(steps).to_have_count(1)
    expect(steps.nth(0)).to_contain_text("measuring")
    expect(shown.get_by_role("button", name=f"Cancel bisection #{bisection.pk}")).to_be_visible()
    screenshot("bisection-under-way")

    while (session := queued_step()) is not None:
        finish(session, main)
        bisection = service.advance(bisection_id=bisection.pk)
    assert bisection.status == BisectionStatus.FOUND

    page.reload()
    shown = page.locator(f"#bisection-{bisection.pk}")
    expect(shown.locator(".badge")).to_have_text("culprit found")
    expect(shown.locator(".culprit a.commit")).to_have_attribute("href", f"{GITHUB}/commit/{main[CULPRIT]}")
    expect(shown.locator("table.bisection-steps tbody tr")).to_have_count(bisection.steps.count())
    expect(shown.locator("table.bisection-steps tbody tr").last).to_contain_text("moved: at the bad level")
    expect(page.get_by_role("button", name="Bisect to the culprit")).to_have_count(0)
    screenshot("bisection-found")

    page.goto(f"/history/{alert.comparison.candidate.metric_id}/")
    expect(page.locator(".chart .legend")).to_contain_text("culprit found by bisection")


def test_a_bisection_under_way_is_cancelled_from_the_page(page, login, regression):  # noqa: F811
    login(regression["maintainer"])
    bisection = service.start_bisection(alert=regression["alert"], user=regression["maintainer"])
    service.list_range(bisection_id=bisection.pk)
    page.goto(f"/alerts/#alert-{regression['alert'].pk}")

    page.get_by_role("button", name=f"Cancel bisection #{bisection.pk}").click()

    expect(page.locator("body")).to_contain_text(f"Bisection #{bisection.pk}: cancelled.")
    expect(page.locator(f"#bisection-{bisection.pk} .badge")).to_have_text("Cancelled")
    assert Session.objects.get(trigger=SessionTrigger.BISECTION).status == SessionStatus.CANCELLED


def test_the_nights_alerts_of_one_machine_are_one_incident_triaged_at_once(page, login, regression):  # noqa: F811
    from tests.results.test_sheriff import opened_alerts

    opened_alerts()
    incident = Incident.objects.get()
    from results.models import Membership, Role

    Membership.objects.create(project=incident.project, user=regression["maintainer"], role=Role.MAINTAINER)
    login(regression["maintainer"])
    page.goto(f"/alerts/?project={incident.project.slug}")
    block = page.locator(f"#incident-{incident.pk}")
    expect(block).to_contain_text("commit range of bench-1")

    block.locator("select[name=status]").select_option(AlertStatus.ACKNOWLEDGED)
    block.locator("input[name=bug_url]").fill("https://bugs.example.org/32")
    block.get_by_role("button", name="Update all 3").click()

    expect(page.locator("body")).to_contain_text(f"Incident #{incident.pk} and its alerts are now Acknowledged.")
    assert set(Alert.objects.filter(incident=incident).values_list("status", "bug_url")) == {
        (AlertStatus.ACKNOWLEDGED, "https://bugs.example.org/32")}
