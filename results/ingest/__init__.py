"""Importers: each format is a pure function from file content to a (partial) native document."""

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any

from . import asv, google_benchmark, hyperfine, native, pyperf, pytest_benchmark
from .base import (
    GZIP_MAGIC,
    MAX_DECOMPRESSED_BYTES,
    FormatMismatch,
    ImportFormatError,
    ImportTooLarge,
    gunzip,
    unstorable_text,
)
from .sniff import looks_like, sniff

__all__ = ["FORMATS", "FormatMismatch", "ImportFormatError", "ImportTooLarge", "import_document", "looks_like",
           "sniff", "stated_overrides", "unstorable_text"]

FORMATS: dict[str, Callable[..., dict[str, Any]]] = {
    "native": native.parse,
    "pyperf": pyperf.parse,
    "pytest-benchmark": pytest_benchmark.parse,
    "google-benchmark": google_benchmark.parse,
    "hyperfine": hyperfine.parse,
    "asv": asv.parse,
}
CONTENT_KEY_PREFIX = "content:"
# What identifies the run a file is imported as, beside the file itself.
IDENTIFYING_FIELDS = ("project", "machine", "revision", "kind")


def stated_overrides(*, project: str | None = None, machine: str | None = None, commit: str | None = None,
                     branch: str = "", pull_request: int | None = None, base_commit: str = "",
                     kind: str | None = None, run_key: str | None = None) -> dict[str, Any]:
    """What the sender states about a file's run (the API's parameters, the command's options) as
    :func:`import_document`'s ``overrides``, the revision as the native format's ``revision`` holds it.

    A stated commit names the run's revision; the other revision parts without one complete the revision
    the file names (a native file), and where it names none the document lacks ``revision.commit``.
    """
    revision = {key: value for key, value in {"commit": commit, "branch": branch, "pull_request": pull_request,
                                              "base_commit": base_commit}.items() if value not in (None, "")}
    return {
        "project": {"name": project} if project else None,
        "machine": {"name": machine} if machine else None,
        "revision": revision or None,
        "kind": kind,
        "run_key": run_key,
    }


def import_document(*, format_name: str, content: bytes | str, overrides: dict[str, Any],
                    max_bytes: int = MAX_DECOMPRESSED_BYTES,
                    parse_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Parse ``content`` in ``format_name`` and complete it into a native run document.

    ``overrides`` holds what the caller states about the run (``project``, ``machine``,
    ``revision``, ``kind``, ``run_key``; see :func:`stated_overrides`); what the file says about the
    machine (hostname, CPU, OS) fills the machine fields the caller left out. Gzip-compressed content
    of any format is accepted and may expand to at most ``max_bytes``. ``parse_options`` are what a
    format's parser takes beside the file (asv: ``benchmarks``, the suite's ``benchmarks.json``).

    A file that is not valid in ``format_name`` but looks like another known format raises
    :class:`FormatMismatch` naming it. A document without a run key gets one derived from the file and
    the fields identifying its run (:func:`content_key`), so importing the same file again finds the
    stored run.
    """
    try:
        parse = FORMATS[format_name]
    except KeyError:
        raise ImportFormatError(
            f"format: unknown format {format_name!r}; choose one of {', '.join(sorted(FORMATS))}."
        ) from None
    if isinstance(content, bytes) and content[:2] == GZIP_MAGIC:
        content = gunzip(content, format_name=format_name, max_bytes=max_bytes)
    document = _parse(functools.partial(parse, **(parse_options or {})), content, format_name=format_name)
    problem = unstorable_text(document)
    if problem is not None:
        raise ImportFormatError(f"{format_name}: {problem}.")
    described = document.pop("machine", None)
    revision = document.get("revision")
    for key, value in overrides.items():
        if value is not None:
            document[key] = value
    stated = document.get("machine")
    if isinstance(described, dict) and isinstance(stated, dict):
        document["machine"] = {**described, **stated}
    elif described is not None and stated is None:
        document["machine"] = described
    stated_revision = overrides.get("revision")
    if isinstance(revision, dict) and isinstance(stated_revision, dict) and "commit" not in stated_revision:
        document["revision"] = {**revision, **stated_revision}
    if format_name != "native":
        document.setdefault("kind", "imported")
    if document.get("run_key") is None:
        document["run_key"] = content_key(format_name=format_name, content=content, document=document)
    return document


def _parse(parse: Callable[[bytes | str], dict[str, Any]], content: bytes | str, *,
           format_name: str) -> dict[str, Any]:
    """``parse(content)``, its refusal naming the format the file looks like when that is another one."""
    try:
        document = parse(content)
    except ImportTooLarge:
        raise
    except ImportFormatError as error:
        detected = sniff(content)
        if detected is not None and detected != format_name:
            raise FormatMismatch(str(error).rstrip("."), detected=detected) from None
        raise
    # The native parser takes any object (the run schema checks it next): another tool's file would only
    # be refused for lacking a run document's fields.
    detected = looks_like(document) if format_name == "native" else None
    if detected is not None and detected != "native":
        raise FormatMismatch("native: the file is not a run document", detected=detected)
    return document


def content_key(*, format_name: str, content: bytes | str, document: dict[str, Any]) -> str:
    """The run key of a file imported without one: a digest of its (uncompressed) content, its format and the
    fields identifying its run (project, machine, revision, kind). The same file imported again for the same
    run answers with the stored run; stated for another commit or machine, it makes a new run."""
    identity = json.dumps({key: document.get(key) for key in IDENTIFYING_FIELDS}, sort_keys=True, default=str)
    digest = hashlib.sha256()
    for part in (format_name.encode(), identity.encode("utf-8", "surrogatepass"),
                 content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content):
        digest.update(len(part).to_bytes(8, "big") + part)
    return CONTENT_KEY_PREFIX + digest.hexdigest()
