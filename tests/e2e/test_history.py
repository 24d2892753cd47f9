"""The chart pages in a real browser: Plotly draws the history, a click opens the run, run detail (a large run's
sections loaded on demand) and machines."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from results import selectors
from results.models import ChangePoint, Machine, Run
from runner.models import Job, Session
from tests.factories import posted_run
from tests.results.test_history_pages import history_of, session_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_history_plot_renders_and_a_click_opens_the_run(page, screenshot):
    metric = history_of(20, machines=("bench-1", "bench-2"), regression_at=19)
    shifted = Run.objects.filter(machine__name="bench-1").order_by("started_at")[19]
    ChangePoint.objects.create(metric=metric, machine=shifted.machine, run=shifted, ratio=1.1, ci_low=1.08,
                               ci_high=1.12, pvalue=0.001)

    page.goto(f"/history/{metric.pk}/")
    page.wait_for_selector(".js-plotly-plot .main-svg")

    assert page.evaluate("document.querySelector('.js-plotly-plot').data.length") > 0
    assert page.evaluate("document.querySelector('.js-plotly-plot').data.some(t => t.name === 'bench-2')")
    assert page.locator(".js-plotly-plot .scatterlayer .point").count() >= 40
    screenshot("history")

    newest = Run.objects.filter(machine__name="bench-2").order_by("-started_at").first()
    page.evaluate("""() => {
        const plot = document.querySelector('.js-plotly-plot');
        const trace = plot.data.findIndex(t => t.name === 'bench-2');
        plot.emit('plotly_click', {points: [{customdata: plot.data[trace].customdata.at(-1)}]});
    }""")
    page.wait_for_url(re.compile(rf"/runs/{newest.pk}/#metric-\d+$"))
    assert f"Run #{newest.pk}" in page.content()


def test_clicking_a_real_point_navigates(page):
    metric = history_of(3)
    first = Run.objects.order_by("started_at").first()

    page.goto(f"/history/{metric.pk}/")
    page.wait_for_selector(".js-plotly-plot .scatterlayer .point")
    # The first mean marker of the only machine: hover it so Plotly picks it, then click.
    marker = page.locator(".js-plotly-plot .scatterlayer .trace.scatter").filter(
        has=page.locator(".point")).first.locator(".point").first
    box = marker.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(rf"/runs/{first.pk}/#metric-\d+$"))


def test_the_run_detail_draws_its_charts(page, screenshot):
    run = session_run()

    page.goto(f"/runs/{run.pk}/")
    page.wait_for_selector(".js-plotly-plot")
    for chart in page.locator("[data-figure]").all():
        chart.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('[data-figure]').length === "
                           "document.querySelectorAll('[data-figure].drawn').length")

    assert page.locator("[data-figure].drawn").count() == 5
    page.evaluate("window.scrollTo(0, 0)")
    screenshot("run-detail")


def test_the_machines_page(page, screenshot):
    machine = Machine.objects.create(name="bench-1", queue="bench.bench-1", cpu_model="Intel Xeon Gold 6338",
                                     cores=64, memory_bytes=256 * 2**30, os="Debian GNU/Linux 12 (bookworm)",
                                     hardware={"kernel": "6.1.0-18-amd64", "governor": "performance",
                                               "numa_nodes": 2, "disks": [{"name": "nvme0n1", "model": "Samsung PM9A3"}]},
                                     last_seen_at=timezone.now())
    Machine.objects.create(name="arm-runner", queue="bench.arm", cpu_model="Ampere Altra", cores=80)
    project = history_of(2).benchmark.project
    job = Job.objects.create(project=project, name="sort nightly", benchmark="sort", machine=machine, builtin="sort")
    Session.objects.create(job=job, status="running", progress={"rounds_done": 12})
    Session.objects.create(job=job, status="queued")

    page.goto("/machines/")

    assert page.locator(".machine-card").count() == 2
    assert "Intel Xeon Gold 6338" in page.content()
    screenshot("machines")


def test_a_large_runs_page_loads_a_series_section_with_its_chart_when_its_link_is_followed(page, screenshot):
    series, per_page = selectors.RUN_PAGED_ABOVE + 10, selectors.RUN_SERIES_PER_PAGE
    run = posted_run(0, {f"bench {index:03d}": 1.0 + index / 100 for index in range(series)}, samples=True, n=40,
                     sd=0.004)
    # Not compared: every series ties, so they come in name order, and the page's last is far down page 1.
    metric_id = run.results.get(metric__benchmark__name=f"bench {per_page - 1:03d}").metric_id

    page.goto(f"/runs/{run.pk}/")
    expect(page.locator(".run-pages").first).to_contain_text(f"Series 1–{per_page} of {series}")
    assert page.locator("section[data-section-url]").count() == per_page
    page.click(f'table.run-results a[href="#metric-{metric_id}"]')

    section = page.locator(f"#metric-{metric_id}")
    expect(page.locator(f"#metric-{metric_id}[data-section-url]")).to_have_count(0)  # the placeholder is filled
    expect(section.locator(".note").first).to_contain_text("No session rounds")
    expect(section.locator(f'[data-figure="m{metric_id}-samples"].drawn')).to_have_count(1)
    expect(section).to_be_in_viewport()
    assert page.evaluate(f"document.querySelector('#metric-{metric_id} .js-plotly-plot').data.length") > 0
    screenshot("run-detail-large")

    # The next page holds the next series, their sections loaded as they are reached.
    page.click(".run-pages a[rel=next] >> nth=0")
    last = run.results.get(metric__benchmark__name=f"bench {2 * per_page - 1:03d}").metric_id
    page.locator(f"#metric-{last}").scroll_into_view_if_needed()
    # Filled, with those above it, which pushes it down: scrolled to again, its chart is drawn.
    expect(page.locator(f"#metric-{last}[data-section-url]")).to_have_count(0)
    page.locator(f"#metric-{last}").scroll_into_view_if_needed()
    expect(page.locator(f'#metric-{last} [data-figure="m{last}-samples"].drawn')).to_have_count(1)
