"""JSON as it enters (request bodies, imported files, job fields): nesting bounded before parsing, integers
bounded while parsing, numbers finite and in range after.

Python's parser recurses once per level: a body nested a few thousand levels deep raised RecursionError, and
one nested 256 levels deep passed the parser and failed later, where orjson and the databases' JSON refuse it.
An integer of 400 digits parses, then overflows wherever it is taken as a float. Standard library and numpy
only, so the importers and ``manage.py compare --files`` use it without Django.
"""

import json
import math
import re
from typing import Any

import numpy as np

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a body or file may hold (a native run document needs 7: the
document, its results, a result, four levels of samples)."""
MAX_FIELD_DEPTH = 16
"""The deepest nesting inside a free-form field (metadata, environment, hardware, a workload's parameters)."""
MAX_INTEGER = 2**63 - 1
"""Integers beyond ±this parse as floats (infinite past 1e308), which every field's bounds then refuse."""

# A JSON string, escapes included (the unrolled form: no backtracking per character).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STEP = np.zeros(256, dtype=np.int8)
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1


class JsonInputError(ValueError):
    """JSON that is refused before or while it is parsed; the message says why."""


def nesting_depth(content: bytes | str) -> int:
    """The deepest nesting of arrays and objects in JSON text, read without parsing it: brackets inside strings
    are skipped, and the rest counted (vectorized: 60 MB in about half a second). Malformed text gives some number; the
    parser then says what is wrong with it."""
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    codes = np.frombuffer(_STRING.sub(b'""', content), dtype=np.uint8)
    return int(np.cumsum(_STEP[codes], dtype=np.int64).max(initial=0))


def _bounded_int(text: str) -> int | float:
    value = int(text) if len(text) <= 20 else None
    if value is None or abs(value) > MAX_INTEGER:
        return float(text)
    return value


def loads(content: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON whose nesting is at most `max_depth` (checked first), integers beyond ±2⁶³ − 1 read as floats.

    Raises
    ------
    JsonInputError
        If the nesting is deeper than `max_depth`.
    ValueError
        ``json.JSONDecodeError`` or ``UnicodeDecodeError``, as ``json.loads`` raises them.
    """
    depth = nesting_depth(content)
    if depth > max_depth:
        raise JsonInputError(f"nested {depth} levels deep; at most {max_depth} levels of arrays and objects")
    return json.loads(content, parse_int=_bounded_int)


def field_problem(value: Any, *, max_depth: int = MAX_FIELD_DEPTH) -> str | None:
    """What makes a parsed free-form value unstorable: nesting deeper than `max_depth`, a NaN or infinite
    number, an integer beyond ±2⁶³ − 1 (a caller's own, not parsed here); None if nothing."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"must not be nested more than {max_depth} levels deep"
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, float) and not math.isfinite(item):
            return "must not hold NaN or infinite numbers"
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INTEGER:
            return f"must not hold integers beyond ±{MAX_INTEGER}"
    return None


def finite_number(value: Any, *, magnitude: float) -> bool:
    """A JSON number (not a boolean) that is finite and at most `magnitude` in absolute value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) <= magnitude
    return math.isfinite(value) and abs(value) <= magnitude
