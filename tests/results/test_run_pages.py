"""The page of a run of many series: a page of its series at a time, worst first, each series' section loaded
when it is opened (results.run_page, results.views.history.run and run_section)."""

import csv
import io
import json
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from results import access, selectors
from results.decisions import worst_first
from results.models import Comparison, Machine, Membership, Metric, Project, Result, Role, Run
from tests.factories import (
    BenchmarkFactory,
    ComparisonFactory,
    MachineFactory,
    MetricFactory,
    ResultFactory,
    RunFactory,
    UserFactory,
    posted_run,
)

pytestmark = pytest.mark.django_db

SERIES = selectors.RUN_PAGED_ABOVE + 50  # more than one page, the last one not full
# Verdicts given to every seventh, eleventh and thirteenth series; the others found no change, and every
# nineteenth was not compared at all.
VERDICTS = {7: ("regression", 0.10), 11: ("suspected improvement", 0.05), 13: ("inconclusive", 0.01)}


def large_run(*, series: int = SERIES, project: Project | None = None) -> Run:
    """A stored run of `series` series, each with a history comparison (a few regressions and improvements of
    different sizes among many of no change) but every nineteenth, not compared."""
    project = project or Project.objects.create(name="Large", slug="large")
    machine = Machine.objects.filter(name="bench-1").first() or MachineFactory(name="bench-1")
    run = RunFactory(project=project, machine=machine)
    for index in range(series):
        metric = MetricFactory(benchmark=BenchmarkFactory(project=project, name=f"bench {index:03d}"), name="time")
        result = ResultFactory(run=run, metric=metric, mean=1.0 + index / 1000)
        if index % 19 == 0:
            continue
        verdict, change = next(((v, c) for k, (v, c) in VERDICTS.items() if index % k == 0), ("no change", 0.0))
        change *= 1 + index / 1000  # sizes differ, so the order within a verdict is the size's
        ComparisonFactory(candidate=result, verdict=verdict, ratio=1 + change, ci_low=1 + change - 0.01,
                          ci_high=1 + change + 0.01)
    return run


def expected_order(run: Run) -> list[str]:
    """The run's benchmarks worst first: by the verdict and size of their comparison, as every table orders."""
    keys = {}
    for result in run.results.select_related("metric__benchmark"):
        comparison = Comparison.objects.filter(candidate=result).first()
        keys[result.metric.benchmark.name] = worst_first(
            comparison.verdict if comparison else "not compared", comparison.ratio if comparison else None,
            result.metric.benchmark.name, result.metric.name)
    return sorted(keys, key=keys.get)


def table_names(html: str, table: str) -> list[str]:
    """The benchmark names of a table's rows (``run-results`` or ``run-comparisons``), in order."""
    body = re.search(rf'<table class="results {table}[^"]*">(.*?)</table>', html, re.S).group(1)
    return re.findall(r"<tr[^>]*>\s*<td><a href=\"[^\"]*\">([^<]+)</a>", body)


def test_a_run_of_many_series_shows_them_a_page_at_a_time_worst_first():
    run = large_run()
    order = expected_order(run)
    per_page = selectors.RUN_SERIES_PER_PAGE

    first = Client().get(f"/runs/{run.pk}/").content.decode()
    second = Client().get(f"/runs/{run.pk}/?page=2").content.decode()

    # Page 1: the worst series, regressions on top (the largest first), in both tables; page 2: the next ones.
    assert table_names(first, "run-results") == order[:per_page]
    assert table_names(first, "run-comparisons") == [name for name in order[:per_page]
                                                     if int(name.split()[1]) % 19]
    assert table_names(first, "run-comparisons")[0] == "bench 245"  # the largest regression: 7 x 35
    assert "▲ regression" in first.split("run-comparisons")[1].split("</tr>")[1]
    assert table_names(second, "run-results") == order[per_page:2 * per_page]
    assert f"Series 1–{per_page} of {SERIES}, worst first" in first
    assert f"Series {per_page + 1}–{2 * per_page} of {SERIES}" in second
    assert 'href="?page=2"' in first and 'href="?page=3"' in first and 'rel="next"' in first
    assert 'rel="prev"' in second
    # The comparisons come before the results, so that the regressions are on the first screen.
    assert first.index("comparisons-title") < first.index("results-title")
    # Beyond the last page: the last page; not a number: the first.
    last = Client().get(f"/runs/{run.pk}/?page=99", follow=True).content.decode()
    assert table_names(last, "run-results") == order[(SERIES - 1) // per_page * per_page:]
    # Sent there: any later number beyond it is redirected without the page being built again.
    pages = (SERIES - 1) // per_page + 1
    with CaptureQueriesContext(connection) as queries:
        again = Client().get(f"/runs/{run.pk}/?page=500")
    assert again.status_code == 302 and again["Location"] == f"/runs/{run.pk}/?page={pages}"
    assert len(queries.captured_queries) == 1, [query["sql"][:80] for query in queries.captured_queries]
    assert table_names(Client().get(f"/runs/{run.pk}/?page=x").content.decode(), "run-results") == order[:per_page]


def test_a_link_to_one_series_of_a_run_opens_the_page_that_shows_it():
    run = large_run()
    order = expected_order(run)
    per_page = selectors.RUN_SERIES_PER_PAGE
    for position in (0, per_page + 3, len(order) - 1):
        metric = Metric.objects.get(benchmark__project=run.project, benchmark__name=order[position])
        response = Client().get(f"/runs/{run.pk}/?metric={metric.pk}")
        page = position // per_page + 1
        assert response.status_code == 302
        assert response["Location"] == (f"/runs/{run.pk}/" + (f"?page={page}" if page > 1 else "")
                                        + f"#metric-{metric.pk}")
        shown = Client().get(response["Location"].split("#")[0]).content.decode()
        assert f'id="metric-{metric.pk}"' in shown
    # A series not in the run, or not a number: the first page; a run the reader may not read: not found.
    assert Client().get(f"/runs/{run.pk}/?metric=999999")["Location"] == f"/runs/{run.pk}/#metric-999999"
    assert Client().get(f"/runs/{run.pk}/?metric=x").status_code == 200
    Project.objects.filter(pk=run.project_id).update(private=True)
    assert Client().get(f"/runs/{run.pk}/?metric=1").status_code == 404


def test_a_run_of_up_to_two_hundred_series_shows_every_series_and_section_at_once():
    run = large_run(series=selectors.RUN_PAGED_ABOVE)

    html = Client().get(f"/runs/{run.pk}/?page=2", follow=True).content.decode()  # one page: sent to it

    assert len(table_names(html, "run-results")) == selectors.RUN_PAGED_ABOVE
    assert "Pages of series" not in html and "data-section-url" not in html
    assert html.count('class="metric-detail"') == selectors.RUN_PAGED_ABOVE and "Only the summary was stored" in html
    # Results first, in name order, as ever.
    assert table_names(html, "run-results") == sorted(table_names(html, "run-results"))
    assert html.index("results-title") < html.index("comparisons-title")


def test_the_downloads_of_a_paged_run_hold_every_series():
    run = large_run()

    results = Client().get(f"/runs/{run.pk}/?page=2&format=csv")
    comparisons = Client().get(f"/runs/{run.pk}/?page=2&format=json&table=comparisons")

    assert len(list(csv.DictReader(io.StringIO(results.content.decode())))) == SERIES
    assert len(json.loads(comparisons.content)) == Comparison.objects.filter(candidate__run=run).count()


def test_a_paged_run_issues_a_fixed_number_of_queries():
    small = large_run(series=selectors.RUN_PAGED_ABOVE + 1)
    with CaptureQueriesContext(connection) as few:
        Client().get(f"/runs/{small.pk}/")
    large = large_run(series=SERIES + 100, project=Project.objects.create(name="Larger", slug="larger"))
    with CaptureQueriesContext(connection) as many:
        Client().get(f"/runs/{large.pk}/?page=2")

    assert len(many) == len(few) <= 9


def test_each_series_section_of_a_paged_page_is_a_placeholder_that_loads_it():
    run = large_run()
    result = run.results.select_related("metric").get(metric__benchmark__name="bench 245")

    html = Client().get(f"/runs/{run.pk}/").content.decode()

    anchor = f"metric-{result.metric_id}"
    url = f"/runs/{run.pk}/metrics/{result.metric_id}/"
    assert f'<a href="#{anchor}">bench 245</a>' in html
    assert re.search(rf'<section class="metric-detail on-demand" id="{anchor}"[^>]*data-section-url="{url}"', html)
    assert html.count("data-section-url=") == selectors.RUN_SERIES_PER_PAGE
    assert "Only the summary was stored" not in html and "results/sections.js" in html

    section = Client().get(url)

    assert section.status_code == 200
    text = section.content.decode()
    assert f'<section class="metric-detail" id="{anchor}"' in text
    assert "bench 245" in text and "Only the summary was stored" in text
    assert json.loads(re.search(rf'<script id="pilotweb-figures-{anchor}" type="application/json">(.*?)</script>',
                                text, re.S).group(1)) == {}


def test_a_section_carries_its_charts():
    run = posted_run(0, {f"bench {index:03d}": 1.0 for index in range(3)}, samples=True, n=200, sd=0.004)
    metric_id = run.results.first().metric_id

    text = Client().get(f"/runs/{run.pk}/metrics/{metric_id}/").content.decode()

    figures = json.loads(re.search(r'<script id="pilotweb-figures-metric-\d+" type="application/json">(.*?)</script>',
                                   text, re.S).group(1))
    assert set(figures) == {f"m{metric_id}-samples", f"m{metric_id}-autocorrelation"}
    assert all(f'data-figure="{key}"' in text for key in figures)


def test_a_section_is_read_as_its_run_is_read():
    project = Project.objects.create(name="Private", slug="private", private=True)
    run = large_run(series=3, project=project)
    metric_id = run.results.first().metric_id
    member, stranger = UserFactory(), UserFactory()
    Membership.objects.create(project=project, user=member, role=Role.VIEWER)
    url = f"/runs/{run.pk}/metrics/{metric_id}/"

    readers = {}
    for name, user in (("member", member), ("stranger", stranger)):
        client = Client()
        client.force_login(user)
        readers[name] = client

    assert readers["member"].get(url).status_code == 200
    assert readers["stranger"].get(url).status_code == 404
    assert readers["stranger"].get(f"/runs/{run.pk}/").status_code == 404
    assert Client().get(url).status_code == 404  # anonymous: as a stranger
    # A metric the run did not measure, and a run that is not there.
    other = MetricFactory(benchmark__project=project)
    assert readers["member"].get(f"/runs/{run.pk}/metrics/{other.pk}/").status_code == 404
    assert readers["member"].get(f"/runs/999999/metrics/{metric_id}/").status_code == 404


def test_a_section_is_cached_under_the_run_version_and_writes_nothing():
    run = large_run()
    result = run.results.get(metric__benchmark__name="bench 007")
    url = f"/runs/{run.pk}/metrics/{result.metric_id}/"

    with CaptureQueriesContext(connection) as first:
        shown = Client().get(url).content
    version = selectors.run_page_version(run_id=run.pk, viewer=access.SYSTEM)
    with CaptureQueriesContext(connection) as again:
        assert Client().get(url).content == shown

    assert cache.get(f"run-page:{run.pk}:{version}:metric-{result.metric_id}") is not None
    assert all(query["sql"].lstrip().upper().startswith("SELECT") for query in first.captured_queries)
    assert len(again) == 1  # whether the run changed
    # Compared again: a new version, a new section.
    Run.objects.filter(pk=run.pk).update(compared_at=run.started_at)
    Comparison.objects.filter(candidate=result).update(verdict="improvement", ratio=0.5, ci_low=0.45, ci_high=0.55)
    with CaptureQueriesContext(connection) as changed:
        Client().get(url)
    assert len(changed) > 1
    assert selectors.run_page_version(run_id=run.pk, viewer=access.SYSTEM) != version


def test_a_series_is_placed_by_the_worst_of_its_comparisons():
    # bench 001 found no change against its history, and a large regression on the shift test: it is the worst
    # series of the run, ahead of every single-comparison regression (10% at the most here).
    run = large_run()
    quiet = Result.objects.get(run=run, metric__benchmark__name="bench 001")
    ComparisonFactory(candidate=quiet, method="shift", verdict="regression", ratio=1.5, ci_low=1.45, ci_high=1.55)

    html = Client().get(f"/runs/{run.pk}/").content.decode()

    assert table_names(html, "run-results")[0] == "bench 001"
