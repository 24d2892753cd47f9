"""The small things of issue 16: the favicon, no debug pages, a branch nobody ran, sparkline values, time
zones."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from results.models import Metric
from tests.factories import posted_run
from tests.results.test_overview_pages import compared, row_html

pytestmark = pytest.mark.django_db


def test_the_favicon_is_served_and_linked():
    response = Client().get("/favicon.ico")
    assert response.status_code == 302 and response["Location"].endswith("results/favicon.svg")
    assert finders.find("results/favicon.svg")
    assert 'rel="icon"' in Client().get("/").content.decode()


def test_a_missing_page_lists_no_url_patterns_without_debug(settings):
    settings.DEBUG = False

    response = Client().get("/no/such/page/")

    html = response.content.decode()
    assert response.status_code == 404 and "Not found" in html and "URLconf" not in html
    assert "api/v1/" not in html and 'href="/runs/"' in html


def test_a_branch_without_runs_says_so_and_stays_selected():
    for night in range(3):
        posted_run(night, {"parse": 1.0})
    metric = Metric.objects.get()

    html = Client().get(f"/history/{metric.pk}/", {"branch": "nope"}).content.decode()

    assert "This series has no runs on the branch “nope”; its branches: main." in html
    assert '<option value="nope" selected>nope (no runs of this series)</option>' in html


def test_sparkline_points_give_their_values_on_hover():
    for night in range(4):
        compared(posted_run(night, {"parse": 1.0 + night / 100}, sd=0.002))

    row = row_html(Client().get("/").content.decode(), "parse")

    titles = re.findall(r"<circle [^>]*><title>([^<]+)</title></circle>", row)
    assert len(titles) == 4
    # Night 0 started 2026-10-01 02:00 UTC: the night of 2026-09-30.
    assert titles[0] == "night of 2026-09-30: 1.00 s" and titles[-1] == "night of 2026-10-03: 1.03 s"


def test_times_say_their_time_zone():
    compared(posted_run(0, {"parse": 1.0}))
    html = Client().get("/runs/").content.decode() + Client().get("/").content.decode()
    assert "2026-10-01 02:00 UTC" in html


def test_a_day_too_late_to_bound_a_query_is_said_not_a_500():
    posted_run(0, {"parse": 1.0})
    metric = Metric.objects.get()
    client = Client()

    overview = client.get("/", {"night": "9999-12-31", "benchmark": "parse"})
    runs = client.get("/runs/", {"until": "9999-12-31"})
    history = client.get(f"/history/{metric.pk}/", {"to": "9999-12-31"})

    assert overview.status_code == runs.status_code == history.status_code == 200
    assert "Choose a day up to 9998-12-31." in runs.content.decode()
    assert "up to 9998-12-31; the to bound is ignored" in history.content.decode()
    # The filters understood are kept.
    assert row_html(overview.content.decode(), "parse")


def test_a_cancelled_sessions_run_is_kept_but_never_compared():
    from results import comparisons
    from results.models import Comparison, Run

    for night in range(4):
        compared(posted_run(night, {"parse": 1.0}, sd=0.002))
    cancelled = posted_run(4, {"parse": 2.0}, sd=0.002)
    Run.objects.filter(pk=cancelled.pk).update(status=Run.Status.CANCELLED)

    assert comparisons.compare_run(run_id=cancelled.pk) == 0
    assert not Comparison.objects.filter(candidate__run=cancelled).exists()


def test_a_name_a_spreadsheet_would_run_as_a_formula_is_exported_as_text():
    for night in range(4):
        compared(posted_run(night, {"=HYPERLINK(\"x\")": 1.0}, sd=0.002))

    body = Client().get("/", {"format": "csv"}).content.decode()

    assert "'=HYPERLINK" in body and "\n=HYPERLINK" not in body and ",=HYPERLINK" not in body
