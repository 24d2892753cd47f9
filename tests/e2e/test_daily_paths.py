"""Issue 16's daily paths in a real browser: a pull request against a base measured by several runs, a
microsecond benchmark read in microseconds on every page, and a table downloaded as CSV."""

import csv
import io
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from results.models import Metric
from tests.factories import compared_run, posted_run
from tests.results.test_overview_pages import compared

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("results_without_broker")]


def test_a_pull_request_is_reviewed_against_every_run_of_its_base(page, screenshot):
    # Nights compared as the worker does: their history measures the run-to-run noise the pull request carries.
    for night in range(3):
        compared_run(night, {"sort": 1.0, "hash": 1.0, "json_dumps": 33.8e-6}, sd=0.002)
    suite = compared_run(3, {"sort": 1.0, "hash": 1.0}, sd=0.002, commit="b" * 40)
    imported = compared_run(3.1, {"json_dumps": 33.8e-6}, seed=31, sd=0.002, commit="b" * 40, kind="manual")
    head = compared(posted_run(4, {"sort": 1.08, "hash": 1.0, "json_dumps": 33.8e-6 * 1.1}, sd=0.002, kind="pr",
                               branch="feature", commit="c" * 40, base_commit="b" * 40, pull_request=42))

    page.goto(f"/runs/{head.pk}/pr/")

    expect(page.locator(".summary-counts")).to_contain_text("2 ▲ regression")
    expect(page.locator(".pr-summary")).to_contain_text(f"run #{suite.pk}")
    expect(page.locator(".pr-summary")).to_contain_text(f"run #{imported.pk}")
    json_row = page.locator("tr.verdict-row").filter(has_text="json_dumps")
    expect(json_row).to_contain_text("µs")
    expect(json_row.locator("td.num").first).to_have_text(re.compile(r"^33\.\d ± 0\.\d+ µs$"))
    expect(page.locator("text=Nothing to compare")).to_have_count(0)
    screenshot("pr-review")


def test_a_microsecond_benchmark_reads_in_microseconds_and_its_table_downloads(page, screenshot):
    for night in range(4):
        compared(posted_run(night, {"json_dumps": 33.8e-6, "parse": 2.0}, sd=0.01, samples=True))
    tonight = compared(posted_run(4, {"json_dumps": 33.8e-6 * 1.1, "parse": 2.0}, sd=0.01, samples=True))
    metric = Metric.objects.get(benchmark__name="json_dumps")

    page.goto(f"/runs/{tonight.pk}/")
    row = page.locator("table.run-results tr").filter(has_text="json_dumps")
    expect(row.locator("td.num").nth(0)).to_have_text(re.compile(r"^3[67]\.\d µs$"))
    expect(row.locator("td.num").nth(1)).to_have_text(re.compile(r"^\[3[67]\.\d, 3[67]\.\d\] µs$"))
    expect(page.locator("body")).not_to_contain_text("0.0000")
    screenshot("run-page")

    page.goto(f"/history/{metric.pk}/?table=1")
    expect(page.locator("#data-table td.num").first).to_have_text(re.compile(r"^3\d\.\d µs$"))

    page.goto("/")
    with page.expect_download() as download:
        page.click(".downloads >> text=CSV")
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert {row["benchmark"]: row["unit"] for row in rows} == {"json_dumps": "µs", "parse": "s"}
    assert next(row for row in rows if row["benchmark"] == "json_dumps")["verdict"] == "regression"
