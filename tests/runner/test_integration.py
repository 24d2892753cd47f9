"""Sessions on a real Redis broker and real Celery worker processes: scheduled, cancelled, killed."""

import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from pilotweb.celery import app
from results import services as result_services
from results.models import Alert, Machine, Membership, Result, Role, Run, TokenScope
from runner import heartbeat, services
from runner.models import Round, Session, SessionStatus
from tests.factories import MachineFactory, ProjectFactory, post_nights
from tests.processes import wait_for, worker_process

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SLEEPER = Path(__file__).with_name("fake_benchmark.py")
# A key Django's deploy check accepts, for workers started with production settings.
PRODUCTION_KEY = "integration-tests-only-" + "k3y-0f-f1fty-chars-and-m4ny-un1que-ones!"


def database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    return f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"


@pytest.fixture
def machine(db):
    return MachineFactory(name="integration", queue=f"bench.integration-{os.getpid()}")


def bench_worker(redis_url, machine, tmp_path, name="first", production=False, environment=None):
    environment = {"DATABASE_URL": database_url(), **(environment or {})}
    if production:
        environment.update(DEBUG="false", ALLOWED_HOSTS="localhost", DJANGO_SECRET_KEY=PRODUCTION_KEY)
    return worker_process(redis_url=redis_url, queues=[machine.queue, "analysis"], log=tmp_path / f"{name}.log",
                          environment=environment)


def sort_job(staff, machine, **overrides):
    fields = {"project": ProjectFactory(name="Integration"), "name": "sort", "benchmark": "sort", "machine": machine,
              "workload_kind": "builtin", "builtin": "sort", "work_min": 10, "work_max": 60,
              "min_round_duration": 0.0, "budget_seconds": 30, "budget_rounds": 60, "target_width": 0.5}
    return services.create_job(user=staff, **{**fields, **overrides})


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def finished(session_id):
    session = Session.objects.get(pk=session_id)
    return session if session.finished else None


def test_a_scheduled_job_runs_on_its_machine_queue_and_stores_its_results(staff, machine, broker, tmp_path):
    job = sort_job(staff, machine, cron="0 3 * * *")
    task = PeriodicTask.objects.get(pk=job.schedule_id)

    assert "No benchmark worker is consuming queue" in heartbeat.no_worker_warning(machine)
    with bench_worker(broker, machine, tmp_path):
        # The worker stamps its machine as it starts: the pages tell its worker apart from its uploads.
        wait_for(lambda: Machine.objects.filter(pk=machine.pk, worker_seen_at__isnull=False).exists(),
                 what="the worker's heartbeat")
        assert heartbeat.no_worker_warning(Machine.objects.get(pk=machine.pk)) == ""
        # What celery beat does when the cron fires.
        app.send_task(task.task, args=json.loads(task.args), queue=task.queue)
        session = wait_for(lambda: Session.objects.filter(job=job).first(), what="the scheduled session")
        session = wait_for(lambda: finished(session.pk), what="the session to finish")

    assert session.status in (SessionStatus.CONVERGED, SessionStatus.BUDGET_EXHAUSTED), session.error
    assert session.trigger == "schedule"
    rounds = list(session.rounds.order_by("index"))
    assert [r.index for r in rounds] == list(range(len(rounds))) and rounds
    run = session.runs.get()
    assert run.kind == "nightly" and run.machine == machine
    result = Result.objects.get(run=run)
    # n is the count behind the variance's degrees of freedom: on a loaded machine a session stopped by its budget,
    # or one whose readings batch (q > 1), has fewer than ten (CI once stored 9; batch means are no disjoint
    # subsessions: 17 of q = 9 from 120 readings), so the test checks what every stored result holds.
    assert result.metric.benchmark.name == "sort" and result.samples is not None
    assert result.sample_count >= result.n >= 2
    assert result.subsessions is None or result.sample_count >= result.subsessions * result.subsession_size


def test_cancelling_kills_the_running_workload(staff, machine, broker, tmp_path):
    job = services.create_job(
        user=staff, project=ProjectFactory(), name="hang", benchmark="hang", machine=machine, workload_kind="command",
        command=[sys.executable, str(SLEEPER), "hang", str(tmp_path / "pids.json")], round_timeout=3600,
        min_round_duration=0.0)

    with bench_worker(broker, machine, tmp_path):
        session = services.start_session(job=job, user=staff)
        wait_for(lambda: Session.objects.filter(pk=session.pk, process_group__isnull=False).exists()
                 and (tmp_path / "pids.json").exists(), what="the workload and its child to start")
        group = Session.objects.get(pk=session.pk).process_group
        services.cancel_session(session=session, user=staff)
        # The round would time out after an hour: finishing within wait_for's limit is the cancel's doing.
        session = wait_for(lambda: finished(session.pk), what="the cancelled session to finish")

    assert session.status == SessionStatus.CANCELLED
    assert "Cancelled while a round ran" in session.error
    hung = json.loads((tmp_path / "pids.json").read_text())
    assert hung["pgid"] == group
    for pid in (hung["pid"], hung["child"]):
        assert not alive(pid)


def test_a_worker_killed_mid_session_loses_no_round_and_the_session_resumes(staff, machine, broker, tmp_path):
    # A target no session reaches, so the worker is surely mid-session when it is killed.
    job = sort_job(staff, machine, budget_rounds=400, budget_seconds=600, target_width=0.0001, work_max=400)
    with bench_worker(broker, machine, tmp_path) as worker:
        session = services.start_session(job=job, user=staff)
        wait_for(lambda: Round.objects.filter(session=session).count() >= 5, what="five rounds")
        os.killpg(worker.pid, signal.SIGKILL)
        time.sleep(0.5)
    kept = list(Round.objects.filter(session=session).order_by("index").values_list("index", flat=True))
    assert kept == list(range(len(kept))) and len(kept) >= 5
    assert Session.objects.get(pk=session.pk).status == SessionStatus.RUNNING

    services.update_job(job=job, user=staff, target_width=0.5)
    recovered = services.recover_stale_sessions(now=timezone.now() + timedelta(minutes=10))
    assert [s.pk for s in recovered] == [session.pk]
    with bench_worker(broker, machine, tmp_path, name="second"):
        session = wait_for(lambda: finished(session.pk), what="the resumed session to finish")

    assert session.status in (SessionStatus.CONVERGED, SessionStatus.BUDGET_EXHAUSTED), session.error
    indexes = list(session.rounds.order_by("index").values_list("index", flat=True))
    assert indexes[: len(kept)] == kept and indexes == list(range(len(indexes)))
    assert session.attempt == 1 and session.runs.count() == 1


def test_a_regressing_nightly_is_confirmed_by_an_ab_session_whose_outcome_the_alert_shows(
        staff, machine, broker, tmp_path, user, api):
    """The whole path with nothing called by hand: a nightly posted through the API (by the project's uploader)
    is compared by the analysis worker, its regression opens an alert, the alert queues an interleaved A/B
    confirmation session of the job that runs the benchmark, the bench worker runs it, and the alert page shows
    it."""
    job = sort_job(staff, machine)
    Membership.objects.create(project=job.project, user=user, role=Role.UPLOADER)
    # Production settings (DEBUG off), where the alert's receivers were once garbage-collected.
    with bench_worker(broker, machine, tmp_path, production=True):
        # Ten nights of history: the fewest a shift is tested against (results.nightly_rows.SHIFT_MIN_HISTORY).
        run_id = post_nights(api, job.project, machine, [f"{night + 1:040x}" for night in range(11)],
                             benchmark="sort", seed=5)
        alert = wait_for(lambda: Alert.objects.filter(group__run_id=run_id).first(), what="the alert")
        session = wait_for(lambda: Session.objects.filter(confirms=alert).first(), what="the confirmation session")
        assert session.trigger == "confirmation"
        assert [entry["commit"] for entry in session.revisions] == [f"{10:040x}", f"{11:040x}"]
        session = wait_for(lambda: finished(session.pk), timeout=120, what="the confirmation session to finish")

    assert session.status in (SessionStatus.RESOLVED, SessionStatus.UNRESOLVED), session.error
    # The session's two runs are compared for the alert (confirmed, dismissed or, if undecided, left as it
    # was: the note says which) and are no nights of the series.
    alert.refresh_from_db()
    assert f"session #{session.pk}" in alert.state_note, alert.state_note
    assert not Run.objects.filter(sessions=session).exclude(kind="confirmation").exists()
    page = api.get("/alerts/").content.decode()
    assert session.outcome["message"] in page
    assert f"Session #{session.pk}" in page and session.get_status_display() in page


def claims(log: Path, session_id: int) -> int:
    return log.read_text().count(f"Session {session_id}, attempt 0: claimed by this worker.")


def test_a_redis_restart_loses_no_queued_session_and_runs_none_twice(staff, machine, broker, redis_server, tmp_path):
    """The broker restarts empty (no persistence) while one session runs and two wait in its queue, and
    "run now" is pressed while it is down: recovery sends every lost session again, each runs once."""
    job = sort_job(staff, machine, budget_seconds=5, budget_rounds=400, target_width=0.0001, work_max=400)
    _, token = result_services.create_api_token(user=staff, name="tests", scopes=TokenScope.values)
    api = Client(headers={"Authorization": f"Bearer {token}"})
    later = lambda: timezone.now() + services.RESEND_AFTER + timedelta(seconds=1)  # noqa: E731
    with bench_worker(broker, machine, tmp_path):
        sessions = [services.start_session(job=job, user=staff) for _ in range(3)]
        assert all(Session.objects.get(pk=s.pk).sent_at for s in sessions)
        wait_for(lambda: Session.objects.filter(pk=sessions[0].pk, status=SessionStatus.RUNNING).exists(),
                 what="the first session to run")
        assert services.resend_lost_sessions(now=later()) == []  # the broker holds the two waiting ones

        redis_server.stop()
        response = api.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json")
        assert response.status_code == 202 and "broker is unreachable" in response.json()["detail"]
        sessions.append(Session.objects.get(pk=response.json()["id"]))
        assert sessions[-1].sent_at is None and sessions[-1].status == SessionStatus.QUEUED
        redis_server.start()

        resent = services.recover_stale_sessions(now=later())
        assert sorted(s.pk for s in resent) == [s.pk for s in sessions[1:]]
        for session in sessions:
            wait_for(lambda: finished(session.pk), timeout=120, what=f"session {session.pk} to finish")

    log = tmp_path / "first.log"
    for session in sessions:
        session.refresh_from_db()
        assert session.status == SessionStatus.BUDGET_EXHAUSTED, session.error
        assert session.attempt == 0 and claims(log, session.pk) == 1, session.outcome
        indexes = list(session.rounds.order_by("index").values_list("index", flat=True))
        assert indexes and indexes == list(range(len(indexes)))
