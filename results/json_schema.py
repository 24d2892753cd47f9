"""The native run format (:class:`results.schemas.RunIn`) as a standalone JSON Schema document.

Served at ``/api/v1/schema/run.json`` and kept in ``docs/run.schema.json``, both made here from the model, so
the schema says what the API accepts. It describes the shape and the limits of every field; the rules that
join fields (give ``samples`` or ``summary`` unless ``failed``) are the API's, which answers them by field.
"""

import json
from functools import cache
from pathlib import Path

from django.conf import settings

from .schemas import RunIn

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic generates."""

TITLE = "Pilot Web run (native format)"
DESCRIPTION = (
    "One benchmark run posted to Pilot Web (POST /api/v1/runs, or POST /api/v1/runs/import?format=native): the "
    "project, the machine, the revision measured and one entry per benchmark and metric, each with its raw "
    "samples, or the summary of a mean (mean, variance, n and Pilot's subsession size), or 'failed': true for "
    "a benchmark that gave no number. Unknown projects, machines, benchmarks and metrics are created.")

DOCS_FILE = Path(settings.BASE_DIR) / "docs" / "run.schema.json"
REGENERATE = (".venv/bin/python manage.py shell -c "
              "'from results.json_schema import write_docs_file; write_docs_file()'")


@cache
def _generated() -> dict:
    # Made once per process, on first use: the model does not change while the process runs.
    return RunIn.model_json_schema()


def run_json_schema(*, schema_id: str = "") -> dict:
    """The run document's JSON Schema (draft 2020-12), identified by ``schema_id`` when one is given.

    Parameters
    ----------
    schema_id
        The absolute address the schema is served from (its ``$id``); none for the file in ``docs/``,
        which is read from wherever it is checked out.
    """
    head = {"$schema": JSON_SCHEMA_DIALECT, **({"$id": schema_id} if schema_id else {}),
            "title": TITLE, "description": DESCRIPTION}
    return {**head, **{key: value for key, value in _generated().items() if key != "title"}}


def run_json_schema_text() -> str:
    """The schema as ``docs/run.schema.json`` holds it: indented, keys in the model's order, a final newline."""
    return json.dumps(run_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_docs_file() -> None:
    """Write ``docs/run.schema.json`` again from the model (after changing :class:`results.schemas.RunIn`)."""
    DOCS_FILE.write_text(run_json_schema_text(), encoding="utf-8")
