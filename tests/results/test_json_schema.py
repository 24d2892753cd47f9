"""The native run format as a JSON Schema: served beside the OpenAPI document, kept in ``docs/``, and
accepting what the API accepts (checked with jsonschema-rs, which schemathesis brings)."""

import json
from pathlib import Path

import jsonschema_rs
import pytest
from django.test import Client

from results.ingest import import_document, stated_overrides
from results.json_schema import DOCS_FILE, JSON_SCHEMA_DIALECT, REGENERATE, run_json_schema, run_json_schema_text
from results.schemas import RunIn

DATA = Path(__file__).resolve().parents[1] / "data"

# docs/posting.md's example, and a run with a benchmark that failed.
DOCUMENTS = {
    "samples and summary": {
        "run_key": "nightly-2026-11-21", "project": {"name": "My project"}, "machine": {"name": "bench-1"},
        "revision": {"commit": "3f2a9c1", "branch": "main"}, "kind": "nightly",
        "results": [
            {"benchmark": "parse", "metric": "time", "unit": "s",
             "samples": [[0.101, 0.099, 0.100], [0.104, 0.102, 0.103]]},
            {"benchmark": "throughput", "metric": "rate", "unit": "MB/s", "direction": "higher_is_better",
             "summary": {"mean": 812.0, "subsession_size": 4, "variance": 30.2, "n": 25}},
        ]},
    "a failed benchmark": {
        "project": {"name": "My project"}, "machine": {"name": "bench-1"},
        "results": [{"benchmark": "parse", "samples": [0.1, 0.11]},
                     {"benchmark": "crashes", "failed": True, "error": "Segmentation fault"}]},
}
IMPORTED = [("pyperf_suite.json", "pyperf"), ("hyperfine.json", "hyperfine"),
            ("google_benchmark_repetitions.json", "google-benchmark"),
            ("pytest_benchmark_data.json", "pytest-benchmark")]


@pytest.fixture(scope="module")
def validator():
    return jsonschema_rs.validator_for(run_json_schema())


def test_the_schema_is_served_beside_the_openapi_document_to_anyone(db, settings):
    settings.PILOTWEB_PUBLIC_READ = False

    response = Client().get("/api/v1/schema/run.json")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/schema+json"
    assert "max-age" in response["Cache-Control"]
    schema = json.loads(response.content)
    assert schema["$schema"] == JSON_SCHEMA_DIALECT
    assert schema["$id"] == "http://testserver/api/v1/schema/run.json"
    assert schema["title"] and schema["description"]
    assert schema["required"] == ["project", "machine", "results"]
    # Made from the model: what it holds is in the schema (a failed result, here).
    result = schema["$defs"]["ResultIn"]["properties"]
    assert result["failed"]["type"] == "boolean" and result["error"]["description"]
    assert schema == run_json_schema(schema_id=schema["$id"])
    jsonschema_rs.meta.validate(schema)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_native_document_the_api_accepts_is_valid(validator, name):
    document = DOCUMENTS[name]
    RunIn.model_validate(document)

    assert list(validator.iter_errors(document)) == []


@pytest.mark.parametrize(("file_name", "format_name"), IMPORTED)
def test_the_documents_the_importers_make_are_valid(validator, file_name, format_name):
    document = import_document(format_name=format_name, content=(DATA / file_name).read_bytes(),
                               overrides=stated_overrides(project="p", machine="m", commit="3f2a9c1"))

    assert list(validator.iter_errors(json.loads(json.dumps(document)))) == []


@pytest.mark.parametrize(("change", "where"), [
    (lambda document: document.pop("results"), "results"),
    (lambda document: document["results"].clear(), "results"),
    (lambda document: document["results"][1]["summary"].update(variance=-1.0), "variance"),
    (lambda document: document["revision"].update(commit="-rf"), "commit"),
    (lambda document: document["results"][0].update(direction="sideways"), "direction"),
])
def test_a_document_the_api_refuses_by_its_fields_is_invalid(validator, change, where):
    document = json.loads(json.dumps(DOCUMENTS["samples and summary"]))
    change(document)

    errors = list(validator.iter_errors(document))

    assert errors and any(where in ".".join(map(str, error.instance_path)) or where in error.message
                          for error in errors), [error.message for error in errors]


def test_the_schema_in_docs_is_the_one_the_model_makes():
    assert DOCS_FILE.read_text(encoding="utf-8") == run_json_schema_text(), (
        f"{DOCS_FILE.name} differs from results.schemas.RunIn; write it again with: {REGENERATE}")
