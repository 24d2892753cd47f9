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
    assert response.status_code == 301 and response["Location"].endswith("results/favicon.svg")
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
    assert re.fullmatch(r"2026-10-01: 1\.00 s", titles[0]) and re.fullmatch(r"2026-10-04: 1\.03 s", titles[-1])


def test_times_say_their_time_zone():
    compared(posted_run(0, {"parse": 1.0}))
    html = Client().get("/runs/").content.decode() + Client().get("/").content.decode()
    assert "2026-10-01 02:00 UTC" in html
