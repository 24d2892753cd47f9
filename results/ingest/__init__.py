"""Importers: each format is a pure function from file content to a (partial) native document."""

from collections.abc import Callable
from typing import Any

from . import google_benchmark, hyperfine, native, pyperf, pytest_benchmark
from .base import GZIP_MAGIC, MAX_DECOMPRESSED_BYTES, ImportFormatError, ImportTooLarge, gunzip, unstorable_text

__all__ = ["FORMATS", "ImportFormatError", "ImportTooLarge", "import_document", "unstorable_text"]

FORMATS: dict[str, Callable[[bytes | str], dict[str, Any]]] = {
    "native": native.parse,
    "pyperf": pyperf.parse,
    "pytest-benchmark": pytest_benchmark.parse,
    "google-benchmark": google_benchmark.parse,
    "hyperfine": hyperfine.parse,
}


def import_document(*, format_name: str, content: bytes | str, overrides: dict[str, Any],
                    max_bytes: int = MAX_DECOMPRESSED_BYTES) -> dict[str, Any]:
    """Parse ``content`` in ``format_name`` and complete it into a native run document.

    ``overrides`` holds what the caller states about the run (``project``, ``machine``,
    ``revision``, ``kind``, ``run_key``); what the file says about the machine (hostname,
    CPU, OS) fills the machine fields the caller left out. Gzip-compressed content of any format
    is accepted and may expand to at most ``max_bytes``.
    """
    try:
        parse = FORMATS[format_name]
    except KeyError:
        raise ImportFormatError(
            f"format: unknown format {format_name!r}; choose one of {', '.join(sorted(FORMATS))}."
        ) from None
    if isinstance(content, bytes) and content[:2] == GZIP_MAGIC:
        content = gunzip(content, format_name=format_name, max_bytes=max_bytes)
    document = parse(content)
    problem = unstorable_text(document)
    if problem is not None:
        raise ImportFormatError(f"{format_name}: {problem}.")
    described = document.pop("machine", None)
    for key, value in overrides.items():
        if value is not None:
            document[key] = value
    stated = document.get("machine")
    if isinstance(described, dict) and isinstance(stated, dict):
        document["machine"] = {**described, **stated}
    elif described is not None and stated is None:
        document["machine"] = described
    if format_name != "native":
        document.setdefault("kind", "imported")
    return document
