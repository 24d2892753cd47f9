"""Every error the API answers has one shape, ``{"detail": …, "errors": […]}``, and its OpenAPI document
says so for every operation: those its views answer and those made before or after them (no address,
a method a path does not take, an unexpected failure)."""

import json

import pytest
from django.test import Client

from results import selectors
from tests.factories import run_document

pytestmark = pytest.mark.django_db

ERROR_SCHEMA = "#/components/schemas/ErrorOut"


def assert_error_body(response, status: int) -> dict:
    """The one error shape: a JSON object of a non-empty ``detail`` and ``errors`` by field."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].split(";")[0] == "application/json", response["Content-Type"]
    body = json.loads(response.content)
    assert set(body) == {"detail", "errors"}, body
    assert isinstance(body["detail"], str) and body["detail"]
    assert all(set(error) == {"field", "message"} for error in body["errors"]), body["errors"]
    return body


def as_deployed(token: str | None = None) -> Client:
    """A client as a real server sees one: CSRF enforced, exceptions answered, never raised."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(enforce_csrf_checks=True, raise_request_exception=False, headers=headers)


def operations(document: dict):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_every_declared_error_response_is_the_one_error_shape():
    document = Client().get("/api/v1/openapi.json").json()
    assert set(document["components"]["schemas"]["ErrorOut"]["properties"]) == {"detail", "errors"}

    declared = {}
    for name, operation in operations(document):
        errors = {status: response for status, response in operation["responses"].items()
                  if not status.startswith("2")}
        declared[name] = set(errors)
        for status, response in errors.items():
            assert response["content"]["application/json"]["schema"] == {"$ref": ERROR_SCHEMA}, (name, status)

    assert len(declared) >= 19
    assert all("500" in statuses for statuses in declared.values()), declared


def test_every_operation_declares_the_errors_its_inputs_can_cause():
    """401 where credentials are needed, 404 where the path names something, 400 and 422 where a query or a
    body is read, 413 where a body is, 403 where a logged-in session writes (its CSRF token)."""
    document = Client().get("/api/v1/openapi.json").json()

    for name, operation in operations(document):
        places = {parameter["in"] for parameter in operation.get("parameters", [])}
        body = "requestBody" in operation
        schemes = {scheme for requirement in operation.get("security", []) for scheme in requirement}
        expected = ({"401"} if schemes else set()) | ({"404"} if "path" in places else set())
        expected |= {"400", "422"} if "query" in places or body else set()
        expected |= {"413"} if body else set()
        expected |= {"403"} if "LoggedInSession" in schemes and not name.startswith("GET") else set()
        assert expected <= set(operation["responses"]), (name, sorted(expected - set(operation["responses"])))


def test_a_body_that_is_not_json_is_a_400(token):
    response = as_deployed(token).post("/api/v1/runs", data=b"{not json", content_type="application/json")

    assert "Cannot parse request body" in assert_error_body(response, 400)["detail"]


def test_a_nul_in_a_query_is_a_400_by_field():
    body = assert_error_body(as_deployed().get("/api/v1/runs", {"machine": "a\x00b"}), 400)

    assert body["errors"] == [{"field": "machine", "message": "holds a NUL character"}]


def test_no_credentials_is_a_401():
    response = as_deployed().post("/api/v1/runs", data=run_document(), content_type="application/json")

    assert_error_body(response, 401)
    assert response["WWW-Authenticate"] == "Bearer"


def test_a_session_without_its_csrf_token_is_a_403(user):
    client = as_deployed()
    client.force_login(user)

    response = client.post("/api/v1/alerts/1/status", data={"status": "acknowledged"},
                           content_type="application/json")

    assert "CSRF" in assert_error_body(response, 403)["detail"]


def test_an_id_that_names_nothing_is_a_404():
    assert assert_error_body(as_deployed().get("/api/v1/runs/999"), 404)["detail"] == "No run 999."


@pytest.mark.parametrize("path", ["/api/v1/no-such-thing", "/api/v1/runs/not-an-id", f"/api/v1/runs/{'9' * 25}"])
def test_an_address_the_api_does_not_have_is_a_404(path):
    assert path in assert_error_body(as_deployed().get(path), 404)["detail"]


def test_a_method_a_path_does_not_take_is_a_405_that_names_those_it_does(token):
    response = as_deployed(token).delete("/api/v1/runs")

    assert "GET" in assert_error_body(response, 405)["detail"]
    assert set(response["Allow"].split(", ")) == {"GET", "POST"}


def test_a_run_key_reused_for_other_content_is_a_409(token):
    client = as_deployed(token)
    client.post("/api/v1/runs", data=run_document(run_key="k"), content_type="application/json")

    response = client.post("/api/v1/runs", data=run_document(run_key="k", seed=1), content_type="application/json")

    assert assert_error_body(response, 409)["errors"][0]["field"] == "run_key"


def test_a_body_over_the_limit_is_a_413(token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.PILOTWEB_MAX_UPLOAD_BYTES = 10_000
    document = run_document(results=[{"benchmark": "b", "samples": [1.0] * 5000}])

    response = as_deployed(token).post("/api/v1/runs", data=document, content_type="application/json")

    assert "PILOTWEB_MAX_UPLOAD_BYTES" in assert_error_body(response, 413)["detail"]


def test_a_refused_field_is_a_422_by_field(token):
    document = run_document(results=[{"benchmark": "b", "summary": {"mean": 1.0, "subsession_size": 1,
                                                                    "variance": -1.0, "n": 5}}])

    response = as_deployed(token).post("/api/v1/runs", data=document, content_type="application/json")

    assert assert_error_body(response, 422)["errors"][0]["field"] == "results[0].summary.variance"


def test_an_unexpected_failure_is_a_500_in_the_same_shape_and_still_logged(monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(selectors, "run_with_results", broken)

    response = as_deployed().get("/api/v1/runs/1")

    assert "a bug" not in assert_error_body(response, 500)["detail"]
    assert any(record.exc_info and record.exc_info[0] is RuntimeError for record in caplog.records
               if record.name == "django.request")


def test_what_is_not_there_is_a_404_that_names_it(token):
    client = as_deployed(token)
    status = {"status": "acknowledged", "note": ""}

    for response, detail in (
        (client.get("/api/v1/runs/999/comparisons"), "No run 999."),
        (client.get("/api/v1/runs/999/pr-summary"), "No pull-request run 999."),
        (client.get("/api/v1/metrics/999/series"), "No metric 999."),
        (client.get("/api/v1/projects/no-such-project/sheriff"), "No project no-such-project."),
        (client.post("/api/v1/alerts/999/status", status, content_type="application/json"), "No alert 999."),
        (client.post("/api/v1/incidents/999/status", status, content_type="application/json"), "No incident 999."),
    ):
        assert assert_error_body(response, 404)["detail"] == detail
