"""The results pages in a real browser: tonight's regressions stand out, two runs compare, a PR summary copies."""

import re

import pytest
from playwright.sync_api import expect

from tests.factories import posted_run
from tests.results.test_overview_pages import (
    compared,
    pull_request_against_base,
    suites_of_one_night,
    tonight_with_every_verdict,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("results_without_broker")]


def test_the_nightly_overview_marks_regressions_and_inconclusive_rows(page, screenshot):
    tonight_with_every_verdict()
    # A second machine with a single regression, so the page shows groups.
    for night in range(5):
        posted_run(night, {"regressed": 1.0, "steady": 2.0}, machine="bench-2", sd=0.002)
    compared(posted_run(5, {"regressed": 1.06, "steady": 2.0}, machine="bench-2", sd=0.002))

    page.goto("/")

    regression = page.locator("tr[data-verdict=regression]").filter(has_text="regressed").first
    expect(regression).to_have_class(re.compile(r"\bverdict-regression\b"))
    expect(regression.locator(".verdict")).to_have_text("▲ regression")
    inconclusive = page.locator("tr[data-verdict=inconclusive]").filter(has_text="noisy")
    expect(inconclusive).to_have_class(re.compile(r"\bverdict-inconclusive\b.*\bhigh-p\b"))
    expect(inconclusive.locator(".verdict")).to_have_text("? inconclusive")
    expect(inconclusive.locator(".badge")).to_have_text("high p")
    # Red for the regression label, and the first row of each table is the worst.
    color = regression.locator(".verdict").evaluate("element => getComputedStyle(element).color")
    assert color == "rgb(179, 38, 30)"
    firsts = page.locator("table.comparison tbody tr:first-child").evaluate_all(
        "rows => rows.map(row => row.dataset.verdict)")
    assert firsts == ["regression", "regression"]
    assert page.locator("svg.sparkline polyline").count() == 7
    page.locator("details.legend summary").click()
    expect(page.locator("details.legend dl")).to_be_visible()
    screenshot("nightly-overview")

    page.select_option("select[name=verdict]", "inconclusive")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"verdict=inconclusive"))
    assert page.locator("tr.verdict-row").count() == 1


def test_the_overview_shows_every_suite_of_the_night_and_opens_earlier_nights(page, screenshot):
    for night in range(6):
        for run in suites_of_one_night(night):
            compared(run)
    tonight = [compared(run) for run in suites_of_one_night(6, regressed=1.2)]

    page.goto("/")

    # The regression came in the night's first run; two more suites posted after it.
    expect(page.locator("tr[data-verdict=regression]")).to_have_count(1)
    regression = page.locator("tr[data-verdict=regression]")
    expect(regression).to_contain_text("parse")
    expect(regression.locator("a.from-run")).to_have_text(f"run #{tonight[0].pk}")
    expect(page.locator("tr.verdict-row")).to_have_count(5)
    expect(page.locator("ul.night-runs li")).to_have_count(3)
    expect(page.locator("h3")).to_have_text("bench-1 · night of 2026-10-06")
    screenshot("nightly-overview-suites")

    page.fill("input[name=night]", "2026-10-03")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"night=2026-10-03"))
    expect(page.locator("h3")).to_have_text("bench-1 · night of 2026-10-03")
    expect(page.locator("tr[data-verdict=regression]")).to_have_count(0)
    page.click("a[rel=next]")
    expect(page.locator("h3")).to_have_text("bench-1 · night of 2026-10-04")


def test_a_row_expands_to_why_it_is_red(page, screenshot):
    tonight_with_every_verdict()

    page.goto("/")

    expect(page.locator("th .theta")).to_have_text("θ = ±2%")
    regression = page.locator("tr[data-verdict=regression]")
    evidence = regression.locator("details.why dl")
    expect(evidence).to_be_hidden()
    regression.locator("details.why summary").click()
    expect(evidence).to_be_visible()
    expect(evidence).to_contain_text("the whole interval lies beyond the ±2% band on the worse side")
    expect(evidence).to_contain_text("10 nights (runs #")
    expect(evidence).to_contain_text("own noise")
    screenshot("nightly-why")


def test_two_runs_are_compared_from_the_form(page, screenshot):
    for night in range(4):
        posted_run(night, {"sort": 1.0, "hash": 1.0, "parse": 1.0}, sd=0.01)
    candidate = posted_run(4, {"sort": 1.1, "hash": 0.95, "parse": 1.0, "json": 1.0}, sd=0.01)
    baseline_id = candidate.pk - 1

    page.goto("/compare/")
    page.select_option("select[name=baseline]", str(baseline_id))
    page.select_option("select[name=candidate]", str(candidate.pk))
    page.click("form.compare-form button[type=submit]")

    expect(page).to_have_url(re.compile(rf"/compare/\?baseline={baseline_id}&candidate={candidate.pk}$"))
    expect(page.locator("tr.verdict-row").first).to_have_attribute("data-verdict", "regression")
    expect(page.locator("tr[data-verdict=improvement]")).to_contain_text("hash")
    expect(page.locator("text=Only in the candidate: json (time).")).to_be_visible()
    screenshot("compare")
    # The table sorts by a column's heading: by the change, smallest first, then the other way.
    names = page.locator("table.comparison tbody tr td.name > a")
    page.locator("table.comparison thead th", has_text="Change").locator("button.sort").click()
    expect(names).to_have_text(["hash", "parse", "sort"])
    expect(page.locator("table.comparison thead th", has_text="Change")).to_have_attribute("aria-sort", "ascending")
    page.locator("table.comparison thead th", has_text="Change").locator("button.sort").click()
    expect(names).to_have_text(["sort", "parse", "hash"])


def test_the_pr_review_copies_its_markdown(page, screenshot, live_server):
    head = pull_request_against_base()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)

    page.goto(f"/runs/{head.pk}/pr/")

    expect(page.locator("ul.summary-counts li").first).to_have_text(re.compile(r"1\s+▲ regression"))
    markdown = page.locator("#pr-markdown").input_value()
    assert markdown.startswith("### Performance: `cccccccccccc` against base `bbbbbbbbbbbb`")
    page.click("button.copy")
    expect(page.locator(".copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == markdown
    screenshot("pr-review")


def test_a_pull_request_of_a_busier_run_claims_no_regression_and_says_why(page, screenshot):
    """One run against one run (spec §8): the head's whole run landed 6% above its base on a busier machine.
    The page and its comment carry the series' run-to-run noise, name what is undecided, and say the load
    differed; a series without nightly history claims nothing."""
    from datetime import timedelta

    from results.models import Result, Run
    from tests.factories import NIGHT_ZERO
    from tests.results.test_pull_request_noise import nights_with_run_noise, pull_request

    nights_with_run_noise(14)
    base = Result.objects.filter(run__started_at=NIGHT_ZERO + timedelta(days=13)).first().run
    head = pull_request(14, {}, level=1.06)
    Run.objects.filter(pk=base.pk).update(environment={"load_avg_1min": 3.3, "cpu_count": 4})
    Run.objects.filter(pk=head).update(environment={"load_avg_1min": 4.7, "cpu_count": 4})

    page.goto(f"/runs/{head}/pr/")

    expect(page.locator("ul.summary-counts li.verdict-regression")).to_have_text(re.compile(r"^0\s"))
    expect(page.locator("p.machine-state")).to_contain_text("The machine's load differed: 3.3 for the base, 4.7")
    expect(page.locator("p.undecided-beyond")).to_contain_text("Undecided, estimate beyond its threshold")
    expect(page.locator(".legend-note")).to_contain_text("the run-to-run variance the series' nightly history")
    markdown = page.locator("#pr-markdown").input_value()
    assert "**0 regressions**" not in markdown and "0 regressions" in markdown
    assert "⚠ The machine's load differed" in markdown and "What would decide the suspected and undecided" in markdown
    page.locator("tr.verdict-row").first.locator("details.why summary").click()
    expect(page.locator("tr.verdict-row").first).to_contain_text("between runs, as the series' nightly history")
    screenshot("pr-run-to-run")
