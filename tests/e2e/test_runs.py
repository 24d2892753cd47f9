"""The runs list in a real browser: every run reachable, filtered by commit prefix and kind, paged."""

import re

import pytest
from playwright.sync_api import expect

from results import selectors
from tests.factories import posted_run
from tests.results.test_overview_pages import compared

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("results_without_broker")]


def test_a_user_finds_an_imported_run_by_its_commit_and_pages_through_the_rest(page, screenshot, monkeypatch):
    monkeypatch.setattr(selectors, "RUNS_PER_PAGE", 4)
    for night in range(5):
        compared(posted_run(night, {"parse": 1.0, "sort": 2.0}, sd=0.002))
    compared(posted_run(5, {"parse": 1.3, "sort": 2.0}, sd=0.002))
    imported = posted_run(5.2, {"json_dumps": 3e-5}, seed=52, commit="c0ffee" + "0" * 34, kind="manual",
                          machine="laptop")

    page.goto("/")
    page.click("nav >> text=Runs")
    expect(page).to_have_url(re.compile(r"/runs/$"))
    expect(page.locator("tr.run-row")).to_have_count(4)
    expect(page.locator("tr.run-row").nth(1)).to_contain_text("1 regression")
    screenshot("runs-list")

    page.click("a[rel=next]")
    expect(page.locator("tr.run-row")).to_have_count(3)
    expect(page.locator(".pager")).to_contain_text("page 2 of 2")

    page.goto("/runs/")
    page.fill("input[name=commit]", "C0FFEE")
    page.select_option("select[name=kind]", "manual")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"commit=C0FFEE"))
    expect(page.locator("tr.run-row")).to_have_count(1)
    page.click(f"tr.run-row >> text=#{imported.pk}")
    expect(page).to_have_url(re.compile(rf"/runs/{imported.pk}/$"))
