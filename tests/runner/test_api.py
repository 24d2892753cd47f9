"""Runner endpoints: run now and cancel are for staff; progress is readable."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import PeriodicTask

from results import services as result_services
from results.models import TokenScope
from runner import heartbeat, services
from runner.models import Job, Session, SessionStatus
from tests.factories import MachineFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(staff):
    return services.create_job(user=staff, project=ProjectFactory(), name="sort", benchmark="sort",
                               machine=MachineFactory(), workload_kind="builtin", builtin="sort")


def client_for(user) -> Client:
    _, token = result_services.create_api_token(user=user, name="tests", scopes=TokenScope.values)
    return Client(headers={"Authorization": f"Bearer {token}"})


@pytest.mark.django_db(transaction=True)
def test_staff_run_a_job_now_and_read_its_progress(staff, job):
    client = client_for(staff)
    response = client.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json")

    # Committed, then sent to the real Redis of the test session (no worker consumes that machine's queue).
    assert response.status_code == 201, response.content
    session_id = response.json()["id"]
    assert response.json()["sent_at"] is not None
    Session.objects.filter(pk=session_id).update(status=SessionStatus.RUNNING, progress={
        "rounds_done": 7, "elapsed": 3.5, "estimated_remaining": 1.5,
        "metrics": [{"workload": "A", "metric": "time", "relative_width": 0.14, "target_width": 0.1,
                     "converged": False}]})

    body = Client().get(f"/api/v1/sessions/{session_id}").json()
    assert body["status"] == "running" and body["rounds_done"] == 7
    assert body["progress"]["metrics"][0]["relative_width"] == 0.14
    # No worker has ever consumed the machine's queue: said beside the session.
    assert response.json()["warnings"] == [heartbeat.no_worker_warning(job.machine)]


@pytest.mark.django_db(transaction=True)
def test_running_a_job_as_the_readme_writes_it_needs_no_body(staff, job):
    # As curl -X POST sends it: no body, no content type.
    response = client_for(staff).generic("POST", f"/api/v1/jobs/{job.pk}/run")

    assert response.status_code == 201, response.content
    assert Session.objects.get(pk=response.json()["id"]).revisions == []


@pytest.mark.django_db
def test_a_wrong_token_is_said_to_be_invalid_not_missing():
    answered = Client(headers={"Authorization": "Bearer pw_not-a-token"}).post("/api/v1/runs", data={},
                                                                             content_type="application/json")
    missing = Client().post("/api/v1/runs", data={}, content_type="application/json")

    assert answered.status_code == missing.status_code == 401
    assert answered.json()["detail"].startswith("Invalid token: no active API token matches the one sent")
    assert answered["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert missing.json()["detail"].startswith("Authentication required")


def as_deployed(**headers) -> Client:
    """A client as a real server sees one: CSRF enforced, exceptions answered, never raised."""
    return Client(enforce_csrf_checks=True, raise_request_exception=False, headers=headers)


def test_an_ordinary_user_gets_a_403_and_cannot_run_or_cancel(user, staff, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        session = services.start_session(job=job, user=staff)
    _, token = result_services.create_api_token(user=user, name="tests", scopes=TokenScope.values)
    client = as_deployed(Authorization=f"Bearer {token}")

    for response in (client.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json"),
                     client.post(f"/api/v1/sessions/{session.pk}/cancel")):
        assert response.status_code == 403
        assert response.json()["detail"] == services.STAFF_ONLY
    assert Session.objects.count() == 1
    assert Session.objects.get().status == SessionStatus.QUEUED


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer pw_not-a-token"}, {"Authorization": "Basic x"}])
def test_anonymous_visitors_and_bad_tokens_get_a_401_not_a_csrf_failure(staff, job, headers,
                                                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        session = services.start_session(job=job, user=staff)
    client = as_deployed(**headers)

    for response in (client.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json"),
                     client.post(f"/api/v1/sessions/{session.pk}/cancel")):
        assert response.status_code == 401
        if "Bearer" in headers.get("Authorization", ""):  # a token was sent: it is said to be invalid
            assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
            assert response.json()["detail"].startswith("Invalid token")
        else:
            assert response["WWW-Authenticate"] == "Bearer"
            assert "Authentication required" in response.json()["detail"]
    assert Session.objects.get().status == SessionStatus.QUEUED


def test_a_logged_in_session_still_needs_its_csrf_token(staff, job):
    client = as_deployed()
    client.force_login(staff)

    response = client.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json")

    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    assert not Session.objects.exists()


def test_run_now_refuses_a_revision_that_would_be_an_option(staff, job):
    token = result_services.create_api_token(user=staff, name="t", scopes=TokenScope.values)[1]
    client = as_deployed(Authorization=f"Bearer {token}")

    response = client.post(f"/api/v1/jobs/{job.pk}/run", content_type="application/json",
                           data={"revisions": [{"label": "A", "commit": "main"}, {"label": "B", "commit": "-x"}]})

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["revisions[1].commit"]
    assert not Session.objects.exists()


def test_jobs_are_listed_with_their_last_session(staff, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        services.start_session(job=job, user=staff)

    body = Client().get("/api/v1/jobs").json()

    assert body["count"] == 1
    assert body["items"][0]["name"] == "sort" and body["items"][0]["last_session"]["status"] == "queued"


def test_a_page_of_jobs_reads_only_its_own_sessions(staff):
    project, machine = ProjectFactory(), MachineFactory()
    for index in range(6):
        created = services.create_job(user=staff, project=project, name=f"job {index}", benchmark="b",
                                      machine=machine, workload_kind="builtin", builtin="sort")
        Session.objects.create(job=created, requested_by=staff)
    client = Client()

    with CaptureQueriesContext(connection) as few:
        first = client.get("/api/v1/jobs", {"limit": 2}).json()
    with CaptureQueriesContext(connection) as all_of_them:
        everything = client.get("/api/v1/jobs", {"limit": 6}).json()

    assert [job["name"] for job in first["items"]] == ["job 0", "job 1"] and first["count"] == 6
    assert [job["name"] for job in everything["items"]] == [f"job {index}" for index in range(6)]
    assert len(few) == len(all_of_them)
    # Only the page's newest sessions are read (before, every job's was).
    (read,) = [query["sql"] for query in few.captured_queries
               if query["sql"].startswith('SELECT "runner_session"') and '"runner_session"."id" IN' in query["sql"]]
    assert read.split('"runner_session"."id" IN (')[1].split(")")[0].count(",") == 1


def test_a_non_staff_user_sees_no_jobs_in_the_admin(user, client):
    user.is_staff = False
    user.save()
    client.force_login(user)

    assert client.get("/admin/runner/job/").status_code == 302


# --- defining and changing jobs --------------------------------------------------------------------


def new_job(project, machine, **fields) -> dict:
    return {"project": project.pk, "machine": machine.pk, "name": "hash", "benchmark": "sha256 64 MiB",
            "workload_kind": "builtin", "builtin": "sha256", "work_max": 64, "cron": "30 3 * * 1-5", **fields}


def job_rows() -> tuple[int, int]:
    return Job.objects.count(), PeriodicTask.objects.filter(name__startswith="Benchmark job").count()


def test_staff_define_a_scheduled_job_over_the_api(staff):
    project, machine = ProjectFactory(), MachineFactory()

    response = client_for(staff).post("/api/v1/jobs", data=new_job(project, machine), content_type="application/json")

    assert response.status_code == 201, response.content
    job = Job.objects.get()
    body = response.json()
    assert (body["id"], body["name"], body["project_id"], body["project"]) == (job.pk, "hash", project.pk, project.slug)
    assert (body["machine_id"], body["machine"], body["last_session"]) == (machine.pk, machine.name, None)
    assert (job.builtin, job.work_max, job.created_by, job.enabled) == ("sha256", 64, staff, True)
    # What the form leaves to the model keeps the model's default.
    assert job.confidence_level == Job._meta.get_field("confidence_level").default
    crontab = job.schedule.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_week) == ("30", "3", "1-5")


def test_a_command_job_takes_its_lists_and_mappings_as_json(staff):
    project, machine = ProjectFactory(), MachineFactory()
    fields = new_job(project, machine, workload_kind="command", cron="", reading_mode="json_lines",
                     command=["python3", "-c", "print('{work_amount}' * 2)"],
                     setup_command="git checkout -- {revision}", environment={"PYTHONHASHSEED": "0"},
                     metrics=[{"name": "time", "unit": "s", "direction": "lower_is_better"}])

    response = client_for(staff).post("/api/v1/jobs", data=fields, content_type="application/json")

    assert response.status_code == 201, response.content
    job = Job.objects.get()
    # A list is taken argument by argument, a line is split as the form splits it.
    assert job.command == ["python3", "-c", "print('{work_amount}' * 2)"]
    assert job.setup_command == ["git", "checkout", "--", "{revision}"]
    assert (job.environment, job.builtin, job.schedule) == ({"PYTHONHASHSEED": "0"}, "", None)
    assert job.metrics == [{"name": "time", "unit": "s", "direction": "lower_is_better"}]


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"cron": "0 2 * *"}, "cron", "five fields"),
    ({"builtin": "no-such-workload"}, "builtin", "Select a valid choice"),
    ({"environment": "A=1\nJUST_A_NAME"}, "environment", 'Line 2 ("JUST_A_NAME") has no "="'),
    ({"parameters": {"speed": 2}}, "parameters", "Unknown parameter"),
    ({"project": None}, "project", "required"),
    ({"machine": 999999}, "machine", "Select a valid choice"),
    ({"work_max": "many"}, "work_max", "Enter a number"),
    ({"schedule": "nightly"}, "schedule", "unknown field"),
])
def test_invalid_job_fields_are_refused_by_the_forms_rules_and_nothing_is_stored(staff, change, field, message):
    fields = {**new_job(ProjectFactory(), MachineFactory()), **change}

    response = client_for(staff).post("/api/v1/jobs", data=fields, content_type="application/json")

    assert response.status_code == 422, response.content
    errors = response.json()["errors"]
    assert {error["field"] for error in errors} == {field}
    assert any(message in error["message"] for error in errors) and field in response.json()["detail"]
    assert job_rows() == (0, 0)


def test_a_job_body_that_is_not_an_object_is_refused(staff):
    response = client_for(staff).post("/api/v1/jobs", data=["hash"], content_type="application/json")

    assert response.status_code == 422
    assert job_rows() == (0, 0)


def test_staff_change_only_the_fields_they_give(staff):
    client = client_for(staff)
    job_id = client.post("/api/v1/jobs", data=new_job(ProjectFactory(), MachineFactory(), target_width=0.05,
                                                       environment={"A": "1"}),
                         content_type="application/json").json()["id"]
    before = Job.objects.get(pk=job_id)

    response = client.patch(f"/api/v1/jobs/{job_id}", data={"name": "hash-2", "enabled": False},
                            content_type="application/json")

    assert response.status_code == 200, response.content
    assert (response.json()["name"], response.json()["enabled"]) == ("hash-2", False)
    job = Job.objects.get(pk=job_id)
    assert (job.name, job.enabled, job.schedule.enabled) == ("hash-2", False, False)
    unchanged = ("project_id", "machine_id", "builtin", "work_max", "target_width", "environment", "confidence_level",
                 "command", "schedule_id")
    assert [getattr(job, name) for name in unchanged] == [getattr(before, name) for name in unchanged]
    assert (job.schedule.crontab.minute, job.schedule.crontab.hour) == ("30", "3")


def test_the_api_gives_a_target_width_as_the_stored_fraction_whether_a_number_or_text(staff):
    client = client_for(staff)
    job_id = client.post("/api/v1/jobs", data=new_job(ProjectFactory(), MachineFactory(), target_width=0.05),
                         content_type="application/json").json()["id"]

    response = client.patch(f"/api/v1/jobs/{job_id}", data={"target_width": "0.2"}, content_type="application/json")

    assert response.status_code == 200, response.content
    assert Job.objects.get(pk=job_id).target_width == 0.2


def test_a_job_edit_can_remove_its_schedule(staff, job):
    services.set_schedule(job=job, cron="0 2 * * *", user=staff)

    response = client_for(staff).patch(f"/api/v1/jobs/{job.pk}", data={"cron": ""}, content_type="application/json")

    assert response.status_code == 200, response.content
    assert Job.objects.get(pk=job.pk).schedule is None and job_rows() == (1, 0)


@pytest.mark.parametrize(("change", "field"), [({"cron": "61 2 * * *"}, "cron"), ({"builtin": ""}, "builtin"),
                                               ({"name": ""}, "name"), ({"colour": "red"}, "colour")])
def test_an_invalid_edit_is_refused_and_changes_nothing(staff, job, change, field):
    services.set_schedule(job=job, cron="0 2 * * *", user=staff)
    before = Job.objects.values().get(pk=job.pk)

    response = client_for(staff).patch(f"/api/v1/jobs/{job.pk}", data=change, content_type="application/json")

    assert response.status_code == 422, response.content
    assert field in [error["field"] for error in response.json()["errors"]]
    assert Job.objects.values().get(pk=job.pk) == before
    assert Job.objects.get(pk=job.pk).schedule.crontab.hour == "2"


def test_editing_a_job_that_does_not_exist_is_a_404(staff):
    response = client_for(staff).patch("/api/v1/jobs/999999", data={"name": "x"}, content_type="application/json")

    assert response.status_code == 404


def test_only_staff_define_or_change_jobs(user, staff, job):
    token = result_services.create_api_token(user=user, name="t", scopes=TokenScope.values)[1]
    client = as_deployed(Authorization=f"Bearer {token}")
    before = Job.objects.values().get(pk=job.pk)

    created = client.post("/api/v1/jobs", data=new_job(ProjectFactory(), MachineFactory()),
                          content_type="application/json")
    changed = client.patch(f"/api/v1/jobs/{job.pk}", data={"name": "mine"}, content_type="application/json")
    anonymous = as_deployed().patch(f"/api/v1/jobs/{job.pk}", data={"name": "mine"}, content_type="application/json")

    assert (created.status_code, changed.status_code, anonymous.status_code) == (403, 403, 401)
    assert created.json()["detail"] == changed.json()["detail"] == services.STAFF_ONLY
    assert job_rows() == (1, 0) and Job.objects.values().get(pk=job.pk) == before


def test_jobs_are_listed_a_page_at_a_time(staff, job):
    for name in ("a", "b"):
        services.create_job(user=staff, project=job.project, name=name, benchmark=name, machine=job.machine,
                            workload_kind="builtin", builtin="sort")

    page = Client().get("/api/v1/jobs?limit=2&offset=1").json()

    assert page["count"] == 3 and [item["name"] for item in page["items"]] == ["b", "sort"]


def test_a_job_named_twice_in_a_project_is_refused_for_the_whole_body(staff, job):
    fields = new_job(job.project, job.machine, name=job.name)

    response = client_for(staff).post("/api/v1/jobs", data=fields, content_type="application/json")

    assert response.status_code == 422, response.content
    assert [error["field"] for error in response.json()["errors"]] == ["body"]
    assert "already exists" in response.json()["detail"]
    assert job_rows() == (1, 0)
