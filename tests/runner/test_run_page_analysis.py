"""A session's analysis for its runs' pages (runner.replay.MetricAnalysis) is stored when the session finishes,
and the run page reads it instead of replaying EDM over every round; a session finished before that is
replayed on its first view and stored then."""

import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from results.models import Machine, Project, Run
from runner import execution, replay
from runner import session as session_loop
from runner.models import Job, Round, Session, SessionAnalysis

pytestmark = pytest.mark.django_db

TARGETS = {"confidence_level": 0.95, "target_width": 0.0008, "max_autocorrelation": 0.1, "work_min": 100.0,
           "work_max": 200.0, "min_round_duration": 0.05, "budget_seconds": 3600.0, "warmup": "edm"}


def finished_session(*, rounds: int = 10, resolution: float | None = None, seed: int = 7) -> Session:
    """A session of a synthetic workload (a warm-up of 40 readings 40% high in every round), run through Pilot's
    loop and finished by the runner's own service. `resolution` rounds the readings (a coarse clock), so that
    they repeat and the stable phases cannot be read back from the stored samples: EDM runs at the end."""
    project = Project.objects.create(name="Analysis", slug="analysis")
    machine = Machine.objects.create(name="bench-1", queue="bench.bench-1")
    job = Job.objects.create(project=project, name="sort", benchmark="sort", machine=machine, builtin="sort",
                             budget_rounds=rounds, **TARGETS)
    session = Session.objects.create(job=job, status="running", started_at=timezone.now())
    rng = np.random.default_rng(seed)
    clock = iter(range(10**6))

    def workload(work_amount: float) -> session_loop.RoundOutcome:
        values = 0.001 * (1.0 + rng.normal(0, 0.01, int(work_amount)))
        values[:40] += 0.0004
        if resolution is not None:
            values = np.round(values / resolution) * resolution
        return session_loop.RoundOutcome(duration=float(values.sum()), readings={"time": float(values.sum())},
                                         unit_readings={"time": values.tolist()})

    outcome = session_loop.run_session({"A": workload}, job.metric_specs(), job.session_targets(),
                                       on_round=lambda record, progress: execution._store_round(
                                           session, record, progress, None),
                                       clock=lambda: float(next(clock)) * 1e-3)
    return execution._finish(Session.objects.select_related("job__project", "job__machine").get(pk=session.pk),
                            outcome)


def replayed(session: Session) -> replay.MetricAnalysis:
    """The replay called directly on the stored rounds, EDM on every round (no stored samples to read back)."""
    records = [row.record() for row in Round.objects.filter(session=session).order_by("index")]
    return replay.analyse_metric(records, session_loop.MetricSpec("time", "s"), session.job.session_targets())


def figures(response) -> dict:
    found = re.search(r'<script id="pilotweb-figures" type="application/json">(.*?)</script>',
                      response.content.decode(), re.S)
    return json.loads(found.group(1))


@pytest.fixture
def forbid_edm(monkeypatch):
    """Call it, and from then on EDM (a round's stable phase) fails the test: a page must read what was stored."""

    def refuse(*args, **kwargs):
        raise AssertionError("EDM ran while a run page was built")

    def forbid() -> None:
        monkeypatch.setattr("results.stats._stable_phase.edm", refuse)
        monkeypatch.setattr(session_loop, "round_stable_phase", refuse)

    return forbid


@pytest.mark.parametrize("resolution", [None, 1e-6], ids=["distinct readings", "repeated readings"])
def test_the_analysis_stored_at_the_end_is_what_the_replay_gives(resolution):
    session = finished_session(resolution=resolution)

    stored = SessionAnalysis.objects.get(session=session).metric("A", "time")

    expected = replayed(session)
    assert stored == expected
    assert "warm-up" in {why for *_, why in stored.spans}
    assert [point.rounds for point in stored.narrowing] == list(range(1, 11))
    records = [row.record() for row in session.rounds.order_by("index")]
    split = replay.session_samples(records, "time", session.job.session_targets())
    assert np.array_equal(stored.kept(), split.kept)
    assert stored.readings == replay.readings(records, "time").size == split.values.size
    result = session.runs.get().results.get()
    assert np.array_equal(split.values[stored.kept()], result.samples_array())


def test_viewing_a_session_run_reads_the_stored_analysis_and_never_runs_edm(forbid_edm):
    session = finished_session(resolution=1e-6)
    run = session.runs.get()
    result = run.results.get()
    analysis = SessionAnalysis.objects.get(session=session).metric("A", "time")
    forbid_edm()

    response = Client().get(f"/runs/{run.pk}/")

    assert response.status_code == 200
    found = figures(response)
    key = f"m{result.metric_id}"
    samples = {trace["name"]: trace for trace in found[f"{key}-samples"]["data"]}
    assert len(samples["stable phase (analysed)"]["y"]) == result.sample_count == int(analysis.kept().sum())
    narrowing = found[f"{key}-narrowing"]["data"][0]
    assert narrowing["x"] == [point.rounds for point in analysis.narrowing]
    assert narrowing["y"][-1] == pytest.approx(100 * (result.ci_high - result.ci_low) / result.mean, rel=1e-9)
    removed = analysis.readings - result.sample_count
    page = response.content.decode()
    assert f"{removed} of {analysis.readings} readings not analysed (" in page
    # The warm-up the results table counts is told apart from the rest.
    # What the results table counts as removed (not stable) is the section's warm-up and unstable rounds.
    told = re.search(r"readings not analysed \(([^)]*)\)", page).group(1)
    counts = {why: int(count) for count, why in re.findall(r"(\d+) ([^,]+)", told)}
    assert sum(count for why, count in counts.items() if "too short" not in why) == result.warmup_removed


def test_a_session_finished_before_the_analysis_was_stored_is_replayed_by_the_page_and_stored_by_the_command(
        forbid_edm):
    session = finished_session(resolution=1e-6)
    expected = SessionAnalysis.objects.get(session=session).metric("A", "time")
    SessionAnalysis.objects.filter(session=session).delete()
    run = session.runs.get()

    first = Client().get(f"/runs/{run.pk}/")

    # A GET writes nothing: the page replays the analysis (and caches the page).
    assert first.status_code == 200 and not SessionAnalysis.objects.filter(session=session).exists()
    out = StringIO()
    call_command("store_session_analyses", stdout=out)
    assert out.getvalue() == "Stored the analysis of 1 metric.\n"
    assert SessionAnalysis.objects.get(session=session).metric("A", "time") == expected
    cache.clear()
    forbid_edm()
    again = Client().get(f"/runs/{run.pk}/")
    assert figures(again) == figures(first)
    call_command("store_session_analyses", stdout=out)
    assert out.getvalue().endswith("Stored the analysis of 0 metrics.\n")


def test_a_stored_analysis_that_does_not_fit_the_readings_is_replaced():
    session = finished_session(rounds=6)
    expected = SessionAnalysis.objects.get(session=session).metric("A", "time")
    stored = SessionAnalysis.objects.get(session=session)
    stored.workloads = {"A": {"time": {**expected.as_json(), "readings": expected.readings + 1}}}
    stored.save()
    run = Run.objects.get(sessions=session)

    assert Client().get(f"/runs/{run.pk}/").status_code == 200
    call_command("store_session_analyses", stdout=StringIO())

    assert SessionAnalysis.objects.get(session=session).metric("A", "time") == expected


def test_a_stored_analysis_reads_back_exactly_and_refuses_other_layouts():
    analysis = replay.MetricAnalysis(readings=10, spans=[(0, 3, 0, "short round"), (8, 10, 1, "cool-down")],
                                     narrowing=[replay.NarrowingPoint(1, None, False),
                                                replay.NarrowingPoint(2, 0.25, True)])

    assert replay.MetricAnalysis.from_json(json.loads(json.dumps(analysis.as_json()))) == analysis
    assert analysis.kept().tolist() == [False] * 3 + [True] * 5 + [False] * 2
    for layout in ({}, {"readings": 10, "spans": [[0, 11, 0, "warm-up"]], "narrowing": []},
                   {"readings": 10, "spans": [[0, 3, 0, "lunch"]], "narrowing": []},
                   {"readings": 10, "spans": [], "narrowing": [[1, 0.1]]}):
        with pytest.raises(ValueError, match="Not a stored session analysis"):
            replay.MetricAnalysis.from_json(layout)
