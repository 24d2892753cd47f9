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
from typing import Any


class ImportFormatError(ValueError):
    """The file is not valid in the format it was declared to be in."""


def load_json(content: bytes | str, *, format_name: str) -> Any:
    """Parse JSON content, turning decoding errors into an :class:`ImportFormatError`."""
    try:
        return json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ImportFormatError(f"{format_name}: the file is not valid JSON ({error}).") from None


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats, which strict JSON cannot hold, replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    return value
