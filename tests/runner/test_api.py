"""Runner endpoints: run now and cancel are for staff; progress is readable."""

import pytest
from django.test import Client

from results import services as result_services
from runner import services
from runner.models import Session, SessionStatus
from tests.factories import MachineFactory, ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(staff):
    return services.create_job(user=staff, project=ProjectFactory(), name="sort", benchmark="sort",
                               machine=MachineFactory(), workload_kind="builtin", builtin="sort")


def client_for(user) -> Client:
    _, token = result_services.create_api_token(user=user, name="tests")
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


def as_deployed(**headers) -> Client:
    """A client as a real server sees one: CSRF enforced, exceptions answered, never raised."""
    return Client(enforce_csrf_checks=True, raise_request_exception=False, headers=headers)


def test_an_ordinary_user_gets_a_403_and_cannot_run_or_cancel(user, staff, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        session = services.start_session(job=job, user=staff)
    _, token = result_services.create_api_token(user=user, name="tests")
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
    client = as_deployed(Authorization=f"Bearer {result_services.create_api_token(user=staff, name='t')[1]}")

    response = client.post(f"/api/v1/jobs/{job.pk}/run", content_type="application/json",
                           data={"revisions": [{"label": "A", "commit": "main"}, {"label": "B", "commit": "-x"}]})

    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["revisions[1].commit"]
    assert not Session.objects.exists()


def test_jobs_are_listed_with_their_last_session(staff, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        services.start_session(job=job, user=staff)

    body = Client().get("/api/v1/jobs").json()

    assert body[0]["name"] == "sort" and body[0]["last_session"]["status"] == "queued"


def test_a_non_staff_user_sees_no_jobs_in_the_admin(user, client):
    user.is_staff = False
    user.save()
    client.force_login(user)

    assert client.get("/admin/runner/job/").status_code == 302
