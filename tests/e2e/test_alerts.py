"""Alert triage in a real browser: the same shift on two machines shown together with its commit range, and an
alert triaged with a bug link and an assignee, then found under "assigned to me"."""

import re

import pytest
from playwright.sync_api import expect

from results.models import Alert, Membership, Project, Role
from tests.factories import UserFactory
from tests.results.test_alert_pages import regressed_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("results_without_broker")]

GITHUB = "https://github.com/acme/tool"


def test_an_alert_seen_on_two_machines_is_triaged_with_a_bug_link_and_an_assignee(page, login, screenshot):
    for machine in ("bench-1", "bench-2"):
        regressed_run(("sort",), machine=machine)
    Project.objects.update(repository_url=GITHUB)
    user = UserFactory(username="ada")
    Membership.objects.create(project=Project.objects.get(), user=user, role=Role.MAINTAINER)
    first = Alert.objects.get(first_run__machine__name="bench-1")
    login(user)

    page.goto("/alerts/")

    shift = page.locator("tbody.alert-shift.across-machines")
    expect(shift.locator("tr.shift-head")).to_contain_text(
        "sort · time: the same shift on 2 machines (bench-1, bench-2)")
    expect(shift.locator("tr.alert-row")).to_have_count(2)
    commits = shift.locator(f"#alert-{first.pk} + tr.alert-details .alert-commits")
    expect(commits).to_contain_text(re.compile(r"last good \w{12}\s+→ first bad \w{12}"))
    expect(commits.locator("a.commit").nth(0)).to_have_attribute("href", f"{GITHUB}/commit/{9:040x}")
    expect(commits.locator("a.commit").nth(1)).to_have_attribute("href", f"{GITHUB}/commit/{10:040x}")
    expect(commits.locator("a.compare-commits")).to_have_attribute(
        "href", f"{GITHUB}/compare/{9:040x}...{10:040x}")

    row = page.locator(f"#alert-{first.pk}")
    row.locator("select[name=status]").select_option("acknowledged")
    row.locator("input[name=note]").fill("bisecting")
    row.locator("input[name=bug_url]").fill("https://bugs.example.org/42")
    row.locator("select[name=assignee]").select_option(label="ada")
    row.locator("button[type=submit]").click()

    expect(page.locator("ul.messages")).to_contain_text(
        f"Alert #{first.pk} is now Acknowledged, assigned to ada.")
    row = page.locator(f"#alert-{first.pk}")
    expect(row.locator("a.bug-link")).to_have_attribute("href", "https://bugs.example.org/42")
    expect(row.locator(".assignee")).to_have_text("assigned to ada")
    screenshot("alerts-triaged")

    page.check("input[name=mine]")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"mine=on"))
    expect(page.locator("tr.alert-row")).to_have_count(1)
    expect(page.locator("tr.alert-row")).to_have_id(f"alert-{first.pk}")
    # Its sibling on the other machine is still named, and linked to its series' history.
    expect(page.locator("tr.shift-head")).to_contain_text("bench-2: alert #")


def test_the_sheriff_numbers_open_from_the_alerts_page_with_their_chart(page, screenshot):
    from tests.results.test_sheriff import opened_alerts

    opened_alerts()
    slug = Project.objects.get().slug

    page.goto("/alerts/")
    page.get_by_role("link", name="sheriff numbers").first.click()
    page.wait_for_url(re.compile(rf"/projects/{slug}/sheriff/$"))
    page.wait_for_selector(".js-plotly-plot .main-svg")

    expect(page.locator('dd[data-total="alerts"]')).to_have_text("3")
    names = page.evaluate("document.querySelector('.js-plotly-plot').data.map(trace => trace.name)")
    assert names[:2] == ["alerts opened", "later found false (invalid or dismissed)"]
    assert page.locator(".js-plotly-plot .barlayer .point").count() >= 1
    screenshot("sheriff")
