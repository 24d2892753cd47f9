"""Bulk SQL for the pipeline's writes: rows inserted column by column without reading back their ids, many rows'
fields set in one statement. A leaf module: the ingestion, the comparisons, the alerts and the environment all
write through it, and it imports none of them."""

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np
import orjson
from django.db import DataError, connection, models
from django.db.models import JSONField
from django.utils import timezone
from psycopg.types.json import Jsonb


def bulk_insert(rows: list[models.Model]) -> None:
    """Insert model instances of one model in bulk, without reading back their ids (:func:`bulk_inserter`)."""
    if rows:
        fields = _inserted_fields(type(rows[0]))
        with bulk_inserter(type(rows[0])) as insert:
            insert({field.attname: [getattr(row, field.attname) for row in rows] for field in fields}, rows=len(rows))


def bulk_insert_columns(model: type[models.Model], columns: Mapping[str, Sequence[Any]], *, rows: int) -> None:
    """Insert `rows` rows of `model` given column by column (:func:`bulk_inserter`)."""
    with bulk_inserter(model) as insert:
        insert(columns, rows=rows)


class Inserter(Protocol):
    def __call__(self, columns: Mapping[str, Sequence[Any]], *, rows: int) -> None: ...


@contextmanager
def bulk_inserter(model: type[models.Model]) -> Iterator[Inserter]:
    """Insert rows of `model` in bulk, batch by batch, without reading back their ids: ``insert(columns,
    rows=n)`` stores `n` rows given column by column, each a field's values by its attribute name
    (``candidate_id``), the fields left out taking their default. No model instance, or dictionary, is built
    for a row.

    On PostgreSQL one binary COPY (after one query for the columns' types) takes every batch: raw samples
    travel as bytea, numbers as they are held and JSON as jsonb instead of being printed into one huge
    INSERT, about seven times faster for a thousand results. The COPY stays open in between, so the server
    stores most of a batch while the caller computes the next (constraint errors surface when the block
    ends). On SQLite each batch is one prepared INSERT executed for every row (``executemany``), where
    ``bulk_create`` splits the rows into batches of 999 parameters and compiles each batch's SQL (484 queries
    for 30,000 comparisons).

    No other query may run on the connection inside the block: on PostgreSQL it would wait for the COPY
    forever, so it is refused on both databases (RuntimeError).

    Raises
    ------
    ValueError
        If a column names no field of `model`, or does not hold `rows` values.
    DataError
        If an integer is out of its column's range (a binary COPY would store it wrapped around).

    Any exception inside the block ends the insert as a database error would: on PostgreSQL the COPY is
    cancelled and the transaction aborted; on SQLite the batches stored so far stay until the enclosing
    transaction is rolled back.
    """
    fields = _inserted_fields(model)
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    statement = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(fields))})"

    def adapted(columns: Mapping[str, Sequence[Any]], rows: int) -> list[tuple]:
        unknown = set(columns) - {field.attname for field in fields}
        if unknown:
            raise ValueError(f"columns: {model.__name__} has no field {', '.join(sorted(unknown))}")
        short = sorted(name for name, values in columns.items() if len(values) != rows)
        if short:
            raise ValueError(f"columns: {', '.join(short)} must hold rows={rows} values")
        return list(zip(*(_adapted(field, columns[field.attname] if field.attname in columns
                                   else [field.get_default()] * rows) for field in fields)))

    def only_this_insert(execute, sql, params, many, context):
        if sql != statement:
            raise RuntimeError(f"no query may run while bulk_inserter stores {model.__name__} rows: {sql[:200]}")
        return execute(sql, params, many, context)

    with connection.wrap_database_errors, connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT {names} FROM {table} LIMIT 0")
            types = [column.type_code for column in cursor.description]
            with cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy, \
                    connection.execute_wrapper(only_this_insert):
                copy.set_types(types)

                def insert(columns: Mapping[str, Sequence[Any]], *, rows: int) -> None:
                    for row in adapted(columns, rows):
                        copy.write_row(row)

                yield insert
        else:
            with connection.execute_wrapper(only_this_insert):

                def insert(columns: Mapping[str, Sequence[Any]], *, rows: int) -> None:
                    values = adapted(columns, rows)
                    if values:
                        cursor.executemany(statement, values)

                yield insert


def _inserted_fields(model: type[models.Model]) -> list[models.Field]:
    return [field for field in model._meta.concrete_fields if not field.primary_key]


def bulk_update_values(model: type[models.Model], fields: list[str], rows: list[tuple]) -> None:
    """Set `fields` of many rows of `model` in one statement: ``rows`` are ``(pk, value, …)`` in the order of
    `fields`. On PostgreSQL an ``UPDATE … FROM unnest(arrays)``, which the server runs as one join (an
    ``executemany`` of 300,000 single-row updates took most of a chunked comparison's end); on SQLite, whose
    statements run in this process, an ``executemany`` by primary key."""
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = [model._meta.get_field(name) for name in fields]
    key = quote(model._meta.pk.column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in [model._meta.pk, *columns])
            names = ", ".join([key, *(quote(field.column) for field in columns)])
            assignments = ", ".join(f"{quote(field.column)} = v.{quote(field.column)}" for field in columns)
            cursor.execute(f"UPDATE {table} SET {assignments} FROM unnest({arrays}) AS v({names}) "
                           f"WHERE {table}.{key} = v.{key}", [list(column) for column in zip(*rows)])
        else:
            assignments = ", ".join(f"{quote(field.column)} = %s" for field in columns)
            cursor.executemany(f"UPDATE {table} SET {assignments} WHERE {key} = %s",
                               [(*values, pk) for pk, *values in rows])


_PLAIN_TYPES = ((models.FloatField, float), (models.BooleanField, bool), (models.IntegerField, int),
                (models.CharField, str), (models.TextField, str))
"""Fields whose values the drivers take once they have their Python type (numpy's integers are not ints to
them), and the type; a foreign key counts as the field it points to."""


def _adapted(field: models.Field, values: Sequence[Any]) -> list[Any]:
    """A column of Python values of `field`, as the database driver takes them.

    Timestamps set on insert (``auto_now``, ``auto_now_add``) are the same for every row, taken once, and JSON
    is encoded by :func:`json_text` (as text on SQLite, as jsonb for COPY). The other fields, and JSON with an
    encoder of its own, go through the field's own ``get_db_prep_save``; COPY adapts the rest itself
    (datetimes must be aware).
    """
    target = field.target_field if field.is_relation else field
    cast = next((cast for kind, cast in _PLAIN_TYPES if isinstance(target, kind)), None)
    if cast is not None:
        values = [None if value is None else cast(value) for value in values]
        if cast is int:
            _check_integer_range(field, target, values)
        return values
    postgresql = connection.vendor == "postgresql"
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        now = timezone.now()
        stamp = now if isinstance(field, models.DateTimeField) else now.date()
        return [stamp if postgresql else field.get_db_prep_save(stamp, connection)] * len(values)
    if isinstance(field, JSONField) and field.encoder is None:
        if postgresql:
            return [None if value is None else Jsonb(value, dumps=json_text) for value in values]
        return [None if value is None else json_text(value) for value in values]
    if not postgresql or isinstance(field, JSONField):
        return [field.get_db_prep_save(value, connection) for value in values]
    return values


def _check_integer_range(field: models.Field, target: models.Field, values: list[int | None]) -> None:
    """Refuse a column of `field` (whose values are of `target`, the field a foreign key points to) holding an
    integer beyond its database column's range."""
    present = [value for value in values if value is not None]
    if present:
        low, high = connection.ops.integer_field_range(target.get_internal_type())
        if (low is not None and min(present) < low) or (high is not None and max(present) > high):
            raise DataError(f"{field.model.__name__}.{field.name}: a value is out of the column's range "
                            f"[{low}, {high}]")


def json_text(value: Any) -> str:
    """`value` as JSON text that parses to what ``json.dumps`` would write, ten times faster (orjson: 0.03 s
    instead of 0.3 s for a nightly's 30,000 comparison inputs). numpy's numbers are written as numbers and
    keys that are not strings as strings, as ``json.dumps`` writes them; NaN and infinities are written as
    null, where ``json.dumps`` would write tokens that neither JSON nor PostgreSQL's jsonb accepts. What
    orjson cannot write (an integer beyond 64 bits, posted metadata nested hundreds deep) ``json.dumps``
    does, refusing NaN there (ValueError)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        # Refuses NaN rather than write a token jsonb rejects.
        return json.dumps(value, allow_nan=False, default=np.generic.item)
