"""What every importer shares: the error it raises and the shape it returns.

An importer is a pure function ``parse(content: bytes | str) -> dict`` from a file's
content to a *partial native document*: the keys ``source``, ``environment``, ``results``
(and, when the file says so, ``started_at``, ``finished_at``, ``machine``). The API and the
``import_results`` command fill in project, machine, revision and kind from the request.

A result in the native document is a dict with ``benchmark``, ``metric``, ``unit``,
``direction`` (``"lower_is_better"`` or ``"higher_is_better"``) and either ``samples``
(a list of floats, or balanced nested lists whose axis 0 is the top level and whose last
axis holds the measurements, e.g. process runs x values) or ``summary`` (``mean``,
``subsession_size``, ``variance``, ``n``), plus optional ``description``,
``warmup_removed`` and ``metadata``.
"""

import json
import math
import zlib
from typing import Any

from .. import json_input
from ..result_schema import MAX_MAGNITUDE

GZIP_MAGIC = b"\x1f\x8b"
# What a compressed file may expand to when nobody states a limit (a file read from local disk).
MAX_DECOMPRESSED_BYTES = 1 << 30


class ImportFormatError(ValueError):
    """The file is not valid in the format it was declared to be in."""

    status = 400


class FormatMismatch(ImportFormatError):
    """The file is not valid in the format it was declared in, and looks like another known format
    (``detected``), which the caller names in the way its sender states a format."""

    def __init__(self, problem: str, *, detected: str) -> None:
        article = "an" if detected[:1] in ("a", "e", "i", "o", "u") else "a"
        # What the file is comes first: the declared format's own complaint (and its hints, such as pyperf's
        # "convert") is about a file that is not of that format at all.
        super().__init__(f"this looks like {article} {detected} file (read as {problem})")
        self.detected = detected

    def telling(self, how: str) -> str:
        """The refusal with how to send the file in its format (``how``: "post it with format=asv")."""
        text = str(self)
        cut = text.index(" (read as ")
        return f"{text[:cut]}: {how}{text[cut:]}"


class ImportTooLarge(ImportFormatError):
    """The file, or what it expands to, exceeds the size limit."""

    status = 413


def gunzip(content: bytes, *, format_name: str, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress gzip content, refusing to expand it past ``max_bytes`` (a small upload can hold a
    huge expansion: 400 KB of zeros make 400 MiB)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        expanded = inflater.decompress(content, max_bytes + 1)
        if len(expanded) > max_bytes or inflater.unconsumed_tail:
            raise ImportTooLarge(
                f"{format_name}: the gzip-compressed file expands to more than {max_bytes:,} bytes, the limit.")
        if not inflater.eof:
            raise ImportFormatError(f"{format_name}: the gzip-compressed file is damaged (it ends too early).")
    except zlib.error as error:
        raise ImportFormatError(f"{format_name}: the gzip-compressed file is damaged ({error}).") from None
    return expanded


def load_json(content: bytes | str, *, format_name: str) -> Any:
    """Parse JSON content, its nesting bounded before and its integers while (:func:`results.json_input.loads`),
    turning refusals and decoding errors into an :class:`ImportFormatError`."""
    try:
        return json_input.loads(content)
    except json_input.JsonInputError as error:
        raise ImportFormatError(f"{format_name}: the file is {error}.") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ImportFormatError(f"{format_name}: the file is not valid JSON ({error}).") from None


def load_benchmarks_report(content: bytes | str, *, format_name: str) -> dict[str, Any]:
    """A JSON report holding a non-empty ``benchmarks`` list (Google Benchmark's, pytest-benchmark's), parsed as
    :func:`load_json` does; :class:`ImportFormatError` where it is not one."""
    report = load_json(content, format_name=format_name)
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise ImportFormatError(f"{format_name}: the file must be a JSON object with a 'benchmarks' list.")
    if not report["benchmarks"]:
        raise ImportFormatError(f"{format_name}: the file holds no benchmark.")
    return report


def is_number(value: Any) -> bool:
    """A number a measurement can be: finite and at most ``MAX_MAGNITUDE`` in size (a standard deviation of
    1e200 would square to infinity), never a boolean or an integer too large for a float."""
    return json_input.finite_number(value, magnitude=MAX_MAGNITUDE)


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats, which strict JSON cannot hold, replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    return value


def unstorable_text(value: Any, path: str = "") -> str | None:
    """Where ``value`` holds a string no database can store, and why; None if nowhere.

    JSON may escape an unpaired surrogate (``"\\ud800"``), which Python decodes but is not text, or a
    NUL (``"\\u0000"``), which PostgreSQL's text and jsonb refuse. Checked where JSON enters, before
    anything is written.
    """
    if isinstance(value, str):
        if "\x00" in value:
            return f"{path or 'the document'} holds a NUL character (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path or 'the document'} holds an unpaired surrogate (\\ud800-\\udfff), which is not text"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unstorable_text(key, f"a key of {path or 'the document'}") or \
                unstorable_text(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str | dict | list):
                found = unstorable_text(item, f"{path}[{index}]")
                if found:
                    return found
    return None
