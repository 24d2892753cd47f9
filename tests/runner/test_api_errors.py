"""The runner's endpoints refuse in the API's one error shape: not staff (403), an id that names nothing
(404), a body that is not JSON (400) or not what the operation takes (422); and nothing changes."""

import pytest

from results import services as result_services
from results.models import TokenScope
from runner import services
from runner.models import Job, Session
from tests.factories import MachineFactory, ProjectFactory
from tests.results.test_error_bodies import as_deployed, assert_error_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(staff):
    return services.create_job(user=staff, project=ProjectFactory(), name="sort", benchmark="sort",
                               machine=MachineFactory(), workload_kind="builtin", builtin="sort")


@pytest.fixture
def session(staff, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        return services.start_session(job=job, user=staff)


def token_of(user) -> str:
    return result_services.create_api_token(user=user, name="tests", scopes=TokenScope.values)[1]


def test_an_ordinary_user_is_refused_every_staff_operation(user, job, session):
    client = as_deployed(token_of(user))

    for response in (
        client.post("/api/v1/jobs", data={"name": "other"}, content_type="application/json"),
        client.patch(f"/api/v1/jobs/{job.pk}", data={"name": "renamed"}, content_type="application/json"),
        client.post(f"/api/v1/jobs/{job.pk}/run", data={}, content_type="application/json"),
        client.post(f"/api/v1/sessions/{session.pk}/cancel"),
    ):
        assert assert_error_body(response, 403)["detail"] == services.STAFF_ONLY
    assert list(Job.objects.values_list("name", flat=True)) == ["sort"]
    assert Session.objects.get().status == session.status


def test_an_unknown_job_or_session_is_a_404(staff):
    client = as_deployed(token_of(staff))

    for response, detail in (
        (client.patch("/api/v1/jobs/999", data={"name": "x"}, content_type="application/json"), "No job 999."),
        (client.post("/api/v1/jobs/999/run", data={}, content_type="application/json"), "No job 999."),
        (client.post("/api/v1/sessions/999/cancel"), "No session 999."),
        (client.get("/api/v1/sessions/999"), "No session 999."),
    ):
        assert assert_error_body(response, 404)["detail"] == detail
    assert not Session.objects.exists()


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/jobs/{job}/run"])
def test_a_body_that_is_not_json_is_a_400(staff, job, path):
    response = as_deployed(token_of(staff)).post(path.format(job=job.pk), data=b"{\"name\": ",
                                                 content_type="application/json")

    assert "Cannot parse request body" in assert_error_body(response, 400)["detail"]
    assert Job.objects.count() == 1 and not Session.objects.exists()


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("post", "/api/v1/jobs/{job}/run", {"revisions": "main"}, "revisions"),
    ("post", "/api/v1/jobs/{job}/run", {"revisions": [{"label": ""}]}, "revisions[0].label"),
    ("post", "/api/v1/jobs", ["not", "an", "object"], "body"),
    ("patch", "/api/v1/jobs/{job}", {"colour": "red"}, "colour"),
    ("patch", "/api/v1/jobs/{job}", {"cron": "every day"}, "cron"),
])
def test_a_body_the_operation_does_not_take_is_a_422_by_field(staff, job, method, path, body, field):
    client = as_deployed(token_of(staff))

    response = getattr(client, method)(path.format(job=job.pk), data=body, content_type="application/json")

    errors = assert_error_body(response, 422)["errors"]
    assert field in [error["field"] for error in errors], errors
    assert list(Job.objects.values_list("name", flat=True)) == ["sort"] and not Session.objects.exists()
