"""``/runs/``: every run, filterable by project, machine, branch, kind, commit prefix and date, paginated."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from results import selectors
from tests.factories import posted_run
from tests.results.test_overview_pages import compared

pytestmark = pytest.mark.django_db


def listed(html: str) -> list[int]:
    """The run ids of the table, in page order."""
    return [int(run) for run in re.findall(r'<tr class="run-row" data-run="(\d+)">', html)]


def test_every_run_is_listed_newest_first_with_its_results_and_changes():
    nightlies = [compared(posted_run(night, {"parse": 1.0, "sort": 2.0}, sd=0.002)) for night in range(4)]
    regressed = compared(posted_run(4, {"parse": 1.2, "sort": 2.0}, sd=0.002))
    imported = posted_run(4.1, {"other": 1.0}, seed=41, commit="ab" * 20, kind="manual", machine="laptop")

    html = Client().get("/runs/").content.decode()

    assert listed(html) == [imported.pk, regressed.pk, *[run.pk for run in nightlies[::-1]]]
    row = re.search(rf'data-run="{regressed.pk}">.*?</tr>', html, flags=re.DOTALL).group(0)
    assert f'href="/runs/{regressed.pk}/"' in row and "1 regression" in row and '<td class="num">2</td>' in row
    assert "not compared yet" in re.search(rf'data-run="{imported.pk}">.*?</tr>', html, flags=re.DOTALL).group(0)


def test_runs_are_filtered_by_each_parameter_and_the_filters_are_the_permalink():
    alpha = [posted_run(night, {"parse": 1.0}, project="Alpha") for night in range(3)]
    beta = posted_run(1, {"parse": 1.0}, project="Beta", machine="bench-2", commit="deadbeef" + "0" * 32)
    pull = posted_run(2, {"parse": 1.0}, project="Beta", kind="pr", branch="feature", commit="cafe" + "1" * 36,
                      base_commit="deadbeef" + "0" * 32, pull_request=7)
    client = Client()

    def ids(**query) -> list[int]:
        return listed(client.get("/runs/", query).content.decode())

    assert ids(project="alpha") == [run.pk for run in alpha[::-1]]
    assert ids(machine="bench-2") == [beta.pk]
    assert ids(kind="pr") == [pull.pk] and ids(branch="feature") == [pull.pk]
    assert ids(commit="DEADBEEF") == [beta.pk] and ids(commit="cafe1") == [pull.pk]
    # Night 1 started 2026-10-02 02:00 UTC.
    assert set(ids(since="2026-10-02", until="2026-10-02")) == {alpha[1].pk, beta.pk}
    assert ids(project="beta", kind="nightly") == [beta.pk]
    html = client.get("/runs/", {"project": "beta"}).content.decode()
    assert f'href="/runs/{pull.pk}/pr/"' in html and "clear filters" in html


def test_a_filter_that_is_not_understood_is_said_and_ignored():
    runs = [posted_run(night, {"parse": 1.0}) for night in range(2)]

    client = Client()

    response = client.get("/runs/", {"commit": "xyz", "kind": "weekly", "until": "yesterday"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "A commit prefix is 4 to 64 hexadecimal digits." in html and "(ignored)" in html
    assert "Kind: Select a valid choice." in html and "Until: Enter a valid date." in html
    assert sorted(listed(html)) == sorted(run.pk for run in runs)
    inverted = client.get("/runs/", {"since": "2026-10-02", "until": "2026-10-01"}).content.decode()
    assert "The last day comes before the first." in inverted and listed(inverted) == [runs[1].pk]


def test_runs_are_paginated_and_a_page_issues_a_fixed_number_of_queries(monkeypatch):
    monkeypatch.setattr(selectors, "RUNS_PER_PAGE", 3)
    runs = [compared(posted_run(night, {"parse": 1.0, "sort": 1.0}, sd=0.002)) for night in range(7)]
    client = Client()

    with CaptureQueriesContext(connection) as first:
        html = client.get("/runs/", {"project": "demo"}).content.decode()
    assert listed(html) == [run.pk for run in runs[:-4:-1]] and "page 1 of 3" in html
    assert 'rel="next" href="?project=demo&amp;page=2"' in html
    with CaptureQueriesContext(connection) as last:
        html = client.get("/runs/", {"project": "demo", "page": 3}).content.decode()
    assert listed(html) == [runs[0].pk]
    assert len(first) == len(last)
    assert listed(client.get("/runs/", {"page": "nope"}).content.decode()) == [run.pk for run in runs[:-4:-1]]


def test_the_nav_links_to_the_runs():
    assert 'href="/runs/">Runs</a>' in Client().get("/").content.decode()
