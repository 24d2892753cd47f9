"""The native format: a run document as the API takes it (see ``results.schemas.RunIn``)."""

from typing import Any

from .base import ImportFormatError, load_json


def parse(content: bytes | str) -> dict[str, Any]:
    document = load_json(content, format_name="native")
    if not isinstance(document, dict):
        raise ImportFormatError("native: the document must be a JSON object with a 'results' list.")
    return document
