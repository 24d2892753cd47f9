"""The first page: the latest run of each project, with its results, server-rendered."""

import json

import pytest
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.db import connection

from tests.factories import ProjectFactory, run_document

pytestmark = pytest.mark.django_db


def post(api, document):
    response = api.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")
    assert response.status_code == 201, response.content


def test_the_home_page_shows_the_latest_run_of_each_project(api):
    older = run_document(project="Alpha", commit="1" * 40)
    older["started_at"] = "2026-11-01T02:00:00Z"
    post(api, older)
    post(api, run_document(project="Alpha", commit="2" * 40))
    post(api, run_document(project="Beta", commit="3" * 40))
    ProjectFactory(name="Gamma")

    page = Client().get("/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "Alpha" in html and "Beta" in html and "Gamma" in html
    assert "2222222222" in html and "1111111111" not in html
    assert "No nightly runs yet." in html
    assert "sha256" in html and "MB/s" in html


def test_the_home_page_issues_a_fixed_number_of_queries(api):
    for index in range(6):
        post(api, run_document(project=f"P{index}", commit=f"{index:040d}"))
    with CaptureQueriesContext(connection) as few:
        Client().get("/")
    for index in range(6, 12):
        post(api, run_document(project=f"P{index}", commit=f"{index:040d}"))
    with CaptureQueriesContext(connection) as many:
        Client().get("/")

    assert len(many) == len(few)


def test_benchmark_names_are_escaped(api):
    post(api, run_document(results=[{"benchmark": "<script>alert(1)</script>", "samples": [1.0, 1.1, 0.9]}]))

    html = Client().get("/").content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_anonymous_visitors_are_sent_to_log_in_when_reading_is_not_public(settings):
    settings.PILOTWEB_PUBLIC_READ = False

    response = Client().get("/")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_user_can_log_in_and_out(user):
    client = Client()
    response = client.post("/accounts/login/", {"username": user.username, "password": "correct horse battery staple"})
    assert response.status_code == 302
    assert user.username in client.get("/").content.decode()

    client.post("/accounts/logout/")
    assert "Log in" in client.get("/").content.decode()
