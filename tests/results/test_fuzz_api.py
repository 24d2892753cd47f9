"""The API fuzzed from its own OpenAPI schema (schemathesis, on hypothesis): no request gets a 5xx, and
a refused request changes nothing. ``benchmarks/fuzz.py`` runs the same against a real server at scale."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from pilotweb.wsgi import application
from results.models import Alert, AlertEvent, Benchmark, Machine, Metric, Project, Result, Revision, Run
from runner.models import Session

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)
COUNTED = (Project, Machine, Revision, Benchmark, Metric, Run, Result, Alert, AlertEvent, Session)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in COUNTED}


@pytest.fixture
def in_test_transaction():
    """Requests run inside the test's transaction, as Django's test client does: the WSGI handler
    must not close the connection at the end of each request."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error_and_a_refused_one_changes_nothing(case, token, in_test_transaction):
    before = row_counts()

    response = case.call(headers={"Authorization": f"Bearer {token}"})

    assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
    if response.status_code >= 400:
        assert row_counts() == before, case.as_curl_command()
