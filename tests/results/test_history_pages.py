"""The chart pages: a metric's history, a run in detail, the machines."""

import json
import re
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone as django_timezone

from results import comparisons, triage
from results.models import (
    Alert,
    ChangeKind,
    ChangePoint,
    Comparison,
    Machine,
    Metric,
    Project,
    Result,
    Revision,
    Run,
)
from runner import execution, monitor
from runner import session as session_loop
from runner.models import Job, Session
from tests.factories import (
    ComparisonFactory,
    MachineFactory,
    MetricFactory,
    ResultFactory,
    RevisionFactory,
    RunFactory,
    UserFactory,
    posted_run,
)

pytestmark = pytest.mark.django_db



def history_of(nights: int, *, machines=("bench-1",), regression_at: int | None = None,
               benchmark: str = "sort") -> Metric:
    """Nightly runs of one benchmark on each machine, compared as they arrive."""
    for night in range(nights):
        for machine in machines:
            mean = 1.10 if regression_at is not None and night >= regression_at else 1.0
            comparisons.compare_run(run_id=posted_run(night, {benchmark: mean}, machine=machine, sd=0.004).pk)
    return Metric.objects.get(benchmark__name=benchmark)


def figures(response) -> dict:
    found = re.search(r'<script id="pilotweb-figures" type="application/json">(.*?)</script>',
                      response.content.decode(), re.S)
    assert found, "the page carries its figures in a json_script block"
    return json.loads(found.group(1))


# work_min 100: the rounds' 40-reading warm-up must be less than half a round, or spec §4's longest segment
# would be the warm-up itself.
FAKE_TARGETS = {"confidence_level": 0.95, "target_width": 0.0008, "max_autocorrelation": 0.1, "work_min": 100.0,
                "work_max": 200.0, "min_round_duration": 0.05, "budget_seconds": 3600.0, "budget_rounds": 12,
                "warmup": "edm"}


def session_run(*, rounds: int = 12, overhead: bool = True, benchmark: str = "sort (built-in workload)",
                seed: int = 7) -> Run:
    """A finished session of a synthetic workload with a warm-up, stored as the runner stores one.

    Each round's unit readings start 40 readings high (warm-up) then settle around 1 ms; the rounds
    go through Pilot's loop (``runner.session.run_session``) and the runner's own storage.
    """
    project, _ = Project.objects.get_or_create(name="Demo", defaults={"slug": "demo"})
    machine = Machine.objects.filter(name="bench-1").first() or MachineFactory(name="bench-1")
    job = Job.objects.create(project=project, name=f"job {benchmark}", benchmark=benchmark, machine=machine,
                             builtin="sort", **{**FAKE_TARGETS, "budget_rounds": rounds})
    session = Session.objects.create(job=job, status="running", started_at=django_timezone.now())
    if overhead:
        session.outcome = {"overhead": {"ratio": 1.012, "low": 0.998, "high": 1.027, "bounded": True,
                                        "confidence_level": 0.95, "rounds": 6}}
        session.save(update_fields=["outcome"])
    rng = np.random.default_rng(seed)
    clock = iter(range(10**6))

    def workload(work_amount: float) -> session_loop.RoundOutcome:
        units = int(work_amount)
        values = 0.001 * (1.0 + rng.normal(0, 0.01, units))
        values[:40] += 0.0004
        return session_loop.RoundOutcome(duration=float(values.sum()), readings={"time": float(values.sum())},
                                         unit_readings={"time": values.tolist()})

    def on_round(record, progress):
        busy = 85.0 if record.index % 4 == 3 else 30.0
        usage = {"cpu": monitor.Usage(component="cpu", label="cpu (all cores)", unit="%", mean=99.0, max=100.0),
                 "disk": monitor.Usage(component="disk", label="disk busy", unit="%", mean=busy, max=busy + 5),
                 "disk_throughput": monitor.Usage(component="disk", label="disk read+write", unit="B/s",
                                                  mean=1e6, max=2e6)}
        warnings = tuple(monitor.bottleneck_warnings(usage, under_test="cpu"))
        summary = monitor.MonitorSummary(usage=usage, warnings=warnings, samples=5, duration=record.outcome.duration)
        execution._store_round(session, record, progress, summary)

    outcome = session_loop.run_session({"A": workload}, job.metric_specs(), job.session_targets(),
                                       on_round=on_round, clock=lambda: float(next(clock)) * 1e-3)
    session = execution._finish(Session.objects.select_related("job__project", "job__machine")
                                .get(pk=session.pk), outcome)
    return session.runs.get()


# ---------------------------------------------------------------------------------------------
# History


def test_the_history_shows_run_means_with_their_intervals_baseline_alerts_and_links():
    metric = history_of(15, regression_at=13)
    last = Run.objects.order_by("-started_at").first()
    first = Run.objects.get(started_at=last.started_at - timedelta(days=1))

    response = Client().get(f"/history/{metric.pk}/")

    assert response.status_code == 200
    figure = figures(response)["history"]
    names = [trace["name"] for trace in figure["data"]]
    assert "bench-1" in names and "bench-1: run CI" in names and "▲ alert (regression)" in names
    assert any("history baseline" in name for name in names)
    means = next(trace for trace in figure["data"] if trace["name"] == "bench-1")
    assert len(means["y"]) == 15 and means["customdata"][-1] == last.pk
    assert "p < " in means["text"][-1] and "▲ regression" in means["text"][-1]
    # Suspected on its first night, confirmed by the second: drawn at its first night.
    alert = next(trace for trace in figure["data"] if trace["name"] == "▲ alert (regression)")
    assert alert["customdata"] == [first.pk] and alert["marker"]["symbol"] == "triangle-up"
    assert "2 nights pooled" in alert["text"][0] and "confirmed" in alert["text"][0]
    assert figure["layout"]["xaxis"]["rangeslider"]["visible"] is True
    html = response.content.decode()
    assert 'data-run-url="/runs/0/"' in html and "vendor/plotly/plotly.min.js" in html
    # The data table only when asked for, with the same filters.
    assert "history-table" not in html and "?table=1#data-table" in html and "the newest 15 runs" in html
    assert 'id="series-alerts"' in html and f'href="/runs/{first.pk}/"' in html
    table = Client().get(f"/history/{metric.pk}/?machine=bench-1&table=1").content.decode()
    assert f'href="/runs/{last.pk}/"' in table and "▲ regression" in table and "history-table" in table


def test_several_machines_are_overlaid_and_can_be_picked():
    metric = history_of(5, machines=("bench-1", "bench-2"))

    both = figures(Client().get(f"/history/{metric.pk}/"))["history"]
    one = figures(Client().get(f"/history/{metric.pk}/?machine=bench-2"))["history"]

    assert {"bench-1", "bench-2"} <= {trace["name"] for trace in both["data"]}
    assert "bench-2" in {trace["name"] for trace in one["data"]}
    assert "bench-1" not in {trace["name"] for trace in one["data"]}


def test_the_date_range_and_branch_are_permalinks():
    metric = history_of(10)
    posted_run(3, {"sort": 1.0}, branch="feature", sd=0.004)

    page = Client().get(f"/history/{metric.pk}/?from=2026-10-03&to=2026-10-05")
    every_branch = Client().get(f"/history/{metric.pk}/?branch=")
    feature = Client().get(f"/history/{metric.pk}/?branch=feature")

    means = next(trace for trace in figures(page)["history"]["data"] if trace["name"] == "bench-1")
    assert means["x"] == ["2026-10-03 02:00:00", "2026-10-04 02:00:00", "2026-10-05 02:00:00"]
    assert 'value="2026-10-03"' in page.content.decode()
    counts = {response: len(next(t for t in figures(response)["history"]["data"] if t["name"] == "bench-1")["y"])
              for response in (every_branch, feature)}
    assert counts[every_branch] == 11 and counts[feature] == 1


def test_a_date_that_is_not_one_is_reported_and_ignored():
    metric = history_of(3)

    response = Client().get(f"/history/{metric.pk}/?from=yesterday")

    assert response.status_code == 200
    assert "is not a date" in response.content.decode()


def test_change_points_are_vertical_markers_with_the_shift_in_the_hover():
    metric = history_of(8, regression_at=5)
    shifted = Run.objects.order_by("started_at")[5]
    ChangePoint.objects.create(metric=metric, machine=shifted.machine, run=shifted, ratio=1.1, ci_low=1.08,
                               ci_high=1.12, pvalue=0.001)

    figure = figures(Client().get(f"/history/{metric.pk}/"))["history"]

    assert figure["layout"]["shapes"][0]["x0"] == "2026-10-06 02:00:00"
    marker = next(trace for trace in figure["data"] if trace["name"].startswith("┆ change point"))
    assert marker["customdata"] == [shifted.pk]
    assert "+10.0% [+8.0%, +12.0%]" in marker["text"][0] and "p = 0.001" in marker["text"][0]


def test_a_drift_is_its_own_dotted_marker_saying_how_fast_the_level_moves():
    metric = history_of(8, regression_at=5)
    runs = list(Run.objects.order_by("started_at"))
    ChangePoint.objects.create(metric=metric, machine=runs[5].machine, run=runs[5], ratio=1.1, pvalue=0.001)
    ChangePoint.objects.create(metric=metric, machine=runs[2].machine, run=runs[2], ratio=1.03, pvalue=0.004,
                               kind=ChangeKind.DRIFT, drift_per_night=0.0052)

    figure = figures(Client().get(f"/history/{metric.pk}/"))["history"]

    step = next(trace for trace in figure["data"] if trace["name"].startswith("┆ change point"))
    drift = next(trace for trace in figure["data"] if trace["name"] == "┆ drift (no step at its night)")
    assert step["customdata"] == [runs[5].pk] and drift["customdata"] == [runs[2].pk]
    assert "a drift: the level moves +0.52% a night, no step at its night" in drift["text"][0]
    assert [shape["line"]["dash"] for shape in figure["layout"]["shapes"][:2]] == ["dash", "dot"]


def test_an_unknown_metric_is_not_found():
    assert Client().get("/history/999999/").status_code == 404


def test_the_history_issues_a_fixed_number_of_queries():
    metric = history_of(4, machines=("bench-1", "bench-2"), regression_at=3)
    with CaptureQueriesContext(connection) as few:
        Client().get(f"/history/{metric.pk}/")
    for night in range(4, 12):
        for machine in ("bench-1", "bench-2", "bench-3"):
            comparisons.compare_run(run_id=posted_run(night, {"sort": 1.0}, machine=machine, sd=0.004).pk)
    first = Run.objects.order_by("started_at").first()
    ChangePoint.objects.create(metric=metric, machine=first.machine, run=first, ratio=1.0)
    with CaptureQueriesContext(connection) as many:
        response = Client().get(f"/history/{metric.pk}/")

    assert len(figures(response)["history"]["data"]) > 6
    assert len(many) == len(few) <= 7


def test_500_points_render_quickly():
    """500 nightly points with history comparisons, built in bulk: the page stays well under a second."""
    metric = MetricFactory(benchmark__name="sort")
    project, machine = metric.benchmark.project, MachineFactory(name="perf-1")
    revisions = Revision.objects.bulk_create(RevisionFactory.build_batch(500, project=project))
    runs = Run.objects.bulk_create([RunFactory.build(project=project, machine=machine, revision=revision)
                                    for revision in revisions])
    means = 1.0 + np.random.default_rng(1).normal(0, 0.01, 500)
    results = Result.objects.bulk_create([ResultFactory.build(run=run, metric=metric, mean=mean)
                                          for run, mean in zip(runs, means)])
    Comparison.objects.bulk_create([
        ComparisonFactory.build(candidate=result, inputs={"history": [[m, 1e-4, 20] for m in means[max(0, i - 10):i]],
                                                          "baseline": 1.0})
        for i, result in enumerate(results) if i >= 3])
    client = Client()
    client.get(f"/history/{metric.pk}/")

    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/history/{metric.pk}/")

    assert response.status_code == 200
    means_trace = next(t for t in figures(response)["history"]["data"] if t["name"] == "perf-1")
    assert len(means_trace["y"]) == 500
    # Tests never assert wall-clock time (benchmarks/pages.py measures it: p95 60-73 ms for 500 points);
    # what keeps a 500-point page fast is that it stays a handful of queries, not one per point.
    assert len(queries) <= 8, [query["sql"][:80] for query in queries]


# ---------------------------------------------------------------------------------------------
# Run detail


def test_a_session_run_shows_warmup_autocorrelation_narrowing_utilisation_and_overhead():
    run = session_run()
    result = run.results.get()

    response = Client().get(f"/runs/{run.pk}/")

    assert response.status_code == 200
    found = figures(response)
    key = f"m{result.metric_id}"
    assert {f"{key}-samples", f"{key}-autocorrelation", f"{key}-narrowing", "utilisation", "overhead"} <= set(found)
    samples = {trace["name"]: trace for trace in found[f"{key}-samples"]["data"]}
    assert "removed" in samples and "stable phase (analysed)" in samples
    assert len(samples["stable phase (analysed)"]["y"]) == result.sample_count
    assert any(name.startswith("removed stretch") for name in samples)
    narrowing = found[f"{key}-narrowing"]["data"][0]
    assert narrowing["x"][-1] == 12
    assert narrowing["y"][-1] == pytest.approx(100 * (result.ci_high - result.ci_low) / result.mean, rel=1e-9)
    chosen = next(t for t in found[f"{key}-autocorrelation"]["data"] if t["name"].startswith("chosen subsession size"))
    assert chosen["x"] == [result.subsession_size]
    utilisation = {trace["name"] for trace in found["utilisation"]["data"]}
    assert {"cpu (all cores)", "disk busy"} <= utilisation and "disk read+write" not in utilisation
    html = response.content.decode()
    assert "disk busy 85% (above 80%) while measuring cpu" in html and "round 3:" in html
    assert "+1.2% [-0.2%, +2.7%]" in found["overhead"]["layout"]["title"]["text"]
    assert f"/jobs/sessions/{run.sessions.get().pk}/" in html
    # Every figure has its place on the page, and the page served again from the cache is the same.
    assert all(f'data-figure="{name}"' in html for name in found)
    assert Client().get(f"/runs/{run.pk}/").content.decode() == html


def test_an_imported_run_shows_its_samples_and_a_summary_only_run_says_so():
    with_samples = posted_run(0, {"sort": 1.0}, samples=True, n=200, sd=0.004)
    summary_only = posted_run(1, {"sort": 1.0}, sd=0.004)

    shown = Client().get(f"/runs/{with_samples.pk}/")
    bare = Client().get(f"/runs/{summary_only.pk}/")

    key = f"m{with_samples.results.get().metric_id}"
    assert set(figures(shown)) == {f"{key}-samples", f"{key}-autocorrelation"}
    assert "No session rounds" in shown.content.decode()
    assert figures(bare) == {}
    assert "Only the summary was stored" in bare.content.decode()


def test_the_run_page_lists_its_comparisons_with_verdicts():
    history_of(12, regression_at=11)
    last = Run.objects.order_by("-started_at").first()

    html = Client().get(f"/runs/{last.pk}/").content.decode()

    assert "▲ regression" in html and "last 10 runs" in html and "alert #" in html
    assert "1 night pooled against 11 before" in html
    assert "previous" in html and "history" in html


def test_an_unknown_run_is_not_found():
    assert Client().get("/runs/999999/").status_code == 404


def test_the_run_page_issues_a_fixed_number_of_queries():
    small = session_run(rounds=5, benchmark="small")
    with CaptureQueriesContext(connection) as few:
        Client().get(f"/runs/{small.pk}/")
    large = session_run(rounds=15, benchmark="large", seed=8)
    for night in range(4):
        comparisons.compare_run(run_id=posted_run(night, {"large": 1.0, "other": 2.0, "third": 3.0}, sd=0.004).pk)
    with CaptureQueriesContext(connection) as many:
        Client().get(f"/runs/{large.pk}/")
    imported = Run.objects.order_by("-started_at").first()
    with CaptureQueriesContext(connection) as imported_queries:
        Client().get(f"/runs/{imported.pk}/")

    assert len(many) == len(few) <= 8  # 8: tonight's baseline, linked only where there is one
    assert len(imported_queries) <= 8
    # Seen again, the page comes from the cache: one query asks whether the run changed.
    with CaptureQueriesContext(connection) as again:
        assert Client().get(f"/runs/{large.pk}/").status_code == 200
    assert len(again) == 1


def test_a_cached_run_page_shows_a_triaged_alert_and_a_new_comparison_at_once(maintainer):
    history_of(12, regression_at=11)
    last = Run.objects.order_by("-started_at").first()
    assert "· New</a>" in Client().get(f"/runs/{last.pk}/").content.decode()

    alert = Alert.objects.get(group__run=last)
    triage.set_alert_status(alert=alert, status="acknowledged", note="looking", user=maintainer)
    assert "· Acknowledged</a>" in Client().get(f"/runs/{last.pk}/").content.decode()

    Run.objects.filter(pk=last.pk).update(compared_at=None)
    Comparison.objects.filter(candidate__run=last, method="previous").delete()
    assert "previous" not in Client().get(f"/runs/{last.pk}/").content.decode()


# ---------------------------------------------------------------------------------------------
# Machines


def test_the_machines_page_shows_hardware_queue_and_active_sessions():
    machine = MachineFactory(name="bench-9", cpu_model="AMD EPYC 7763", cores=128, memory_bytes=512 * 2**30,
                             os="Debian 12", hardware={"governor": "performance", "numa": {"nodes": 2}},
                             last_seen_at=django_timezone.now())
    project = Project.objects.create(name="P", slug="p")
    job = Job.objects.create(project=project, name="sorting", benchmark="sort", machine=machine, builtin="sort")
    running = Session.objects.create(job=job, status="running", progress={"rounds_done": 7})
    Session.objects.create(job=job, status="converged")

    html = Client().get("/machines/").content.decode()

    assert "AMD EPYC 7763" in html and "128 logical cores" in html and "512.0\xa0GB" in html
    assert "Debian 12" in html and "bench.bench-9" in html and "performance" in html
    assert "<dt>Numa</dt><dd>nodes 2</dd>" in html
    assert f"/jobs/sessions/{running.pk}/" in html and "7 rounds done" in html
    assert html.count("session #") == 1


def test_the_machines_page_issues_a_fixed_number_of_queries():
    MachineFactory()
    with CaptureQueriesContext(connection) as few:
        Client().get("/machines/")
    project = Project.objects.create(name="P", slug="p")
    for index in range(5):
        machine = MachineFactory()
        job = Job.objects.create(project=project, name=f"job {index}", benchmark="sort", machine=machine,
                                 builtin="sort")
        Session.objects.create(job=job, status="queued")
        posted_run(index, {"sort": 1.0}, machine=machine.name, sd=0.004)
    with CaptureQueriesContext(connection) as many:
        Client().get("/machines/")

    # A page of machines: its count, its machines, and their runs, jobs and sessions, whatever their number.
    assert len(many) == len(few) <= 5


def test_the_navigation_links_to_the_machines():
    assert 'href="/machines/"' in Client().get("/machines/").content.decode()


# ---------------------------------------------------------------------------------------------
# Escaping and permission


def test_user_text_is_escaped_in_the_page_and_in_the_figures():
    nasty = "<script>alert(1)</script>"
    for night in range(4):
        comparisons.compare_run(run_id=posted_run(night, {nasty: 1.0}, machine="<img src=x onerror=alert(2)>",
                                               samples=True, sd=0.004).pk)
    metric = Metric.objects.get(benchmark__name=nasty)
    run = Run.objects.order_by("-started_at").first()

    for url in (f"/history/{metric.pk}/", f"/runs/{run.pk}/", "/machines/"):
        html = Client().get(url).content.decode()
        assert nasty not in html and "<img src=x" not in html, url
    history = Client().get(f"/history/{metric.pk}/")
    raw = re.search(r'<script id="pilotweb-figures" type="application/json">(.*?)</script>',
                    history.content.decode(), re.S).group(1)
    assert "<" not in raw and "\\u003C" in raw  # json_script escapes the markup for the script element
    trace = next(t for t in figures(history)["history"]["data"] if t.get("mode") == "lines+markers")
    assert trace["name"] == "&lt;img src=x onerror=alert(2)&gt;"  # and Plotly gets entities, not tags


@pytest.mark.parametrize("public", [True, False])
def test_reading_needs_a_login_unless_reading_is_public(settings, public):
    settings.PILOTWEB_PUBLIC_READ = public
    metric = history_of(2)
    run = Run.objects.first()
    urls = [f"/history/{metric.pk}/", f"/runs/{run.pk}/", "/machines/"]

    anonymous = [Client().get(url) for url in urls]
    client = Client()
    client.force_login(UserFactory())
    logged_in = [client.get(url) for url in urls]

    for response in anonymous:
        if public:
            assert response.status_code == 200
        else:
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert all(response.status_code == 200 for response in logged_in)
