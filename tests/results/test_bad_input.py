"""Bad input gets a clear 4xx that names what is wrong, and changes nothing: the cases a fuzzer of the
running service once turned into 500s."""

import gzip
import json
import sqlite3

import pytest
from django.db import connection
from django.test import Client

from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run
from tests.factories import run_document

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/runs"
BIG = 2**64 + 1


def stored_rows() -> dict[str, int]:
    return {model.__name__: model.objects.count()
            for model in (Project, Machine, Revision, Benchmark, Metric, Run, Result)}


@pytest.fixture
def api(served_api):
    return served_api


def post_raw(client: Client, body: str | bytes, path: str = RUNS):
    return client.post(path, data=body, content_type="application/json")


def document_with(path: str, value) -> dict:
    document = run_document()
    target = document
    *parents, last = path.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value
    return document


def summary_result(**summary) -> list[dict]:
    return [{"benchmark": "parse", "summary": {"mean": 1.0, "subsession_size": 1, "variance": 0.01, "n": 10,
                                               **summary}}]


@pytest.mark.parametrize(("results", "field"), [
    ([{"benchmark": "big", "samples": [1e308, 1e308, -1e308]}], "results[0].samples"),
    ([{"benchmark": "big", "samples": [[1e300, 1e300], [1e300, 2e300]]}], "results[0].samples"),
    (summary_result(mean=1e308), "results[0].summary.mean"),
    (summary_result(variance=1e308), "results[0].summary.variance"),
    (summary_result(n=BIG), "results[0].summary.n"),
    (summary_result(subsession_size=BIG), "results[0].summary.subsession_size"),
    ([{"benchmark": "w", "samples": [1.0, 2.0, 3.0], "warmup_removed": BIG}], "results[0].warmup_removed"),
    ([{"benchmark": "m", "samples": [1.0, 2.0, 3.0], "metadata": {"x": float("nan")}}], "results[0].metadata"),
])
def test_numbers_the_statistics_or_the_columns_cannot_hold_are_a_422_naming_the_field(api, results, field):
    before = stored_rows()

    response = post_raw(api, json.dumps(run_document(results=results)))

    assert response.status_code == 422, response.content
    assert field in [error["field"] for error in response.json()["errors"]]
    assert stored_rows() == before


@pytest.mark.parametrize(("path", "value", "field"), [
    ("machine.cores", BIG, "machine.cores"),
    ("machine.memory_bytes", BIG, "machine.memory_bytes"),
    ("revision.pull_request", BIG, "revision.pull_request"),
    ("started_at", "9999-12-31T23:59:59-23:59", "started_at"),
    ("revision.timestamp", "0001-01-01T00:00:00+05:00", "revision.timestamp"),
    ("project.name", "demo\x07", "project.name"),
])
def test_out_of_range_integers_dates_and_control_characters_are_a_422(api, path, value, field):
    before = stored_rows()

    response = post_raw(api, json.dumps(document_with(path, value)))

    assert response.status_code == 422, response.content
    assert field in [error["field"] for error in response.json()["errors"]]
    assert stored_rows() == before


@pytest.mark.parametrize(("escaped", "where"), [
    ('"benchmark": "sort\\ud800"', "results[0].benchmark holds an unpaired surrogate"),
    ('"benchmark": "sort\\u0000"', "results[0].benchmark holds a NUL character"),
    ('"benchmark": "sort", "description": "a\\u0000b"', "results[0].description holds a NUL character"),
    ('"metadata": {"\\udfff": 1}, "benchmark": "sort"', "a key of results[0].metadata"),
])
def test_text_no_database_can_store_is_a_400_naming_where(api, escaped, where):
    body = ('{"project": {"name": "p"}, "machine": {"name": "m"}, "results": [{'
            + escaped + ', "samples": [1.0, 2.0, 3.0]}]}')
    before = stored_rows()

    response = post_raw(api, body)

    assert response.status_code == 400
    assert where in response.json()["detail"]
    assert stored_rows() == before


def test_a_body_over_the_limit_is_a_413_that_states_the_limit(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.PILOTWEB_MAX_UPLOAD_BYTES = 10_000
    body = json.dumps(run_document(results=[{"benchmark": "b", "samples": [1.0] * 5000}]))

    response = post_raw(api, body)

    assert response.status_code == 413
    assert "10,000 bytes" in response.json()["detail"] and "PILOTWEB_MAX_UPLOAD_BYTES" in response.json()["detail"]
    assert not Run.objects.exists()


def test_an_uploaded_file_over_the_limit_is_a_413(api, settings):
    settings.PILOTWEB_MAX_UPLOAD_BYTES = 10_000
    upload = ("results.json", b"{" + b" " * 20_000 + b"}", "application/json")

    response = api.post("/api/v1/runs/import?format=native", data={"file": upload_file(*upload)})

    assert response.status_code == 413 and "the limit is 10,000" in response.json()["detail"]


def upload_file(name: str, content: bytes, content_type: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content, content_type=content_type)


def test_a_gzip_bomb_is_refused_with_a_413_before_it_expands(api, settings):
    settings.PILOTWEB_MAX_UPLOAD_BYTES = 1_000_000
    bomb = gzip.compress(b"0" * 50_000_000)
    assert len(bomb) < 100_000

    response = api.post("/api/v1/runs/import?format=pyperf&project=p&machine=m", data=bomb,
                        content_type="application/octet-stream")

    assert response.status_code == 413
    assert "expands to more than 1,000,000 bytes" in response.json()["detail"]


def test_a_multipart_upload_without_a_file_field_is_a_400(api):
    response = api.post("/api/v1/runs/import?format=native", data={"other": "x"})

    assert response.status_code == 400 and "named 'file'" in response.json()["detail"]


def test_ids_too_large_for_the_database_are_a_404(api):
    huge = "9" * 25
    for path in (f"/api/v1/runs/{huge}", f"/api/v1/runs/{huge}/comparisons", f"/runs/{huge}/",
                 f"/history/{huge}/", f"/jobs/sessions/{huge}/"):
        assert Client(raise_request_exception=False).get(path).status_code == 404, path


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's whole-database write lock")
def test_a_locked_sqlite_database_is_a_503_with_retry_after(api, tmp_path):
    connection.ensure_connection()
    connection.connection.execute("PRAGMA busy_timeout = 100")
    holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        response = post_raw(api, json.dumps(run_document()))
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    assert response.status_code == 503
    assert response["Retry-After"] == "5" and "busy" in response.json()["detail"]
    assert not Run.objects.exists()


def test_a_page_offset_past_what_the_database_counts_is_a_422(api):
    response = api.get(f"/api/v1/runs?offset={2**63}")

    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "offset"


@pytest.mark.parametrize("path", ["/api/v1/runs?machine=a%00b", "/api/v1/runs/1/comparisons?method=%00",
                                  "/api/v1/metrics/1/series?branch=%00", "/history/1/?machine=%00", "/?project=%00"])
def test_a_nul_character_in_a_query_is_a_400_not_a_database_error(api, path):
    # PostgreSQL refuses NUL in a query string literal: these were 500s there (benchmarks/fuzz.py).
    response = api.get(path)

    assert response.status_code == 400 and b"NUL" in response.content


@pytest.mark.parametrize("kind", ["confirmation", "bisection"])
def test_a_posted_confirmation_or_bisection_run_is_a_400_and_stores_nothing(api, kind):
    # Confirmation and bisection runs are never nights of a series: a posted one would hide a night from its series.
    document = {**run_document(), "kind": kind}
    before = stored_rows()

    for response in (post_raw(api, json.dumps(document)),
                     api.post(f"/api/v1/runs/import?format=native&kind={kind}", data=json.dumps(run_document()),
                              content_type="application/json")):
        assert response.status_code == 400, response.content
        assert "kind" in response.json()["detail"] and "A/B sessions" in response.json()["detail"]
    assert stored_rows() == before
