"""The bulk storage of comparisons and results (``results.services``): an ``executemany`` on SQLite, a binary
COPY on PostgreSQL (this module runs on both in CI), read back through the ORM."""

import json
import math

import numpy as np
import pytest
from django.db import DataError, connection, transaction

from results import comparisons
from results.models import Comparison, Result
from results.bulk import bulk_insert, bulk_insert_columns, bulk_inserter, json_text
from tests.factories import posted_run


@pytest.mark.django_db
def test_columns_are_stored_as_given_and_the_fields_left_out_take_their_defaults():
    run = posted_run(0, {"a": 1.0, "b": 2.0})
    results = list(Result.objects.filter(run=run).order_by("pk"))
    inputs = [{"history": [[np.float64(1.5), 0.25, np.int64(3)]], "note": "ünïcode \\ \t tab"}, {"nested": {7: None}}]
    bulk_insert_columns(Comparison, {
        "candidate_id": [results[0].pk, results[1].pk], "baseline_id": [results[1].pk, None],
        "method": ["history", "previous"], "ratio": [np.float64(1.25), None], "bounded": [np.bool_(True), False],
        "df": [np.int64(7), 3.5], "verdict": ["regression", "no change"], "threshold": [0.02, 0.05],
        "confidence_level": [0.95, 0.99], "inputs": inputs}, rows=2)

    stored = list(Comparison.objects.filter(candidate__run=run).order_by("candidate_id"))
    assert [(c.method, c.ratio, c.bounded, c.df, c.verdict, c.baseline_id) for c in stored] == [
        ("history", 1.25, True, 7.0, "regression", results[1].pk), ("previous", None, False, 3.5, "no change", None)]
    # JSON reads back as the standard library's encoder would have written it (numpy numbers as numbers,
    # keys as strings).
    assert [c.inputs for c in stored] == [json.loads(json.dumps(value, default=np.generic.item)) for value in inputs]
    # Fields left out: their model defaults, and the insert time.
    assert all(c.qvalue is None and c.statistic is None and c.created_at is not None for c in stored)


@pytest.mark.django_db
def test_a_column_the_model_does_not_have_or_of_the_wrong_length_is_refused():
    run = posted_run(0, {"a": 1.0})
    result = Result.objects.get(run=run)
    # A refused batch ends the insert as a database error would (on PostgreSQL the transaction is aborted); the
    # savepoint is rolled back.
    with pytest.raises(ValueError, match="columns: Comparison has no field colour"), transaction.atomic():
        bulk_insert_columns(Comparison, {"candidate_id": [result.pk], "colour": ["red"]}, rows=1)
    with pytest.raises(ValueError, match="columns: candidate_id, method must hold rows=2 values"), \
            transaction.atomic():
        bulk_insert_columns(Comparison, {"candidate_id": [result.pk], "method": ["history"]}, rows=2)
    assert not Comparison.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("beyond", [1, 2**64])
def test_an_integer_beyond_its_columns_range_is_refused_not_wrapped_around(beyond):
    run = posted_run(0, {"a": 1.0})
    original = Result.objects.get(run=run)
    Result.objects.filter(pk=original.pk).delete()
    # 2**31 on PostgreSQL, whose binary COPY would store it as a negative number; 2**63 on SQLite.
    n = connection.ops.integer_field_range("PositiveIntegerField")[1] + beyond
    huge = Result(run=run, metric=original.metric, mean=1.0, subsession_size=1, variance=0.5, n=n, sample_count=4)
    with pytest.raises(DataError, match=r"Result.n: a value is out of the column's range \[0, \d+\]"), \
            transaction.atomic():
        bulk_insert([huge])
    assert not Result.objects.filter(run=run).exists()


@pytest.mark.django_db
def test_model_instances_keep_raw_samples_byte_for_byte_and_metadata_past_64_bits():
    run = posted_run(0, {"a": 1.0}, samples=True)
    original = Result.objects.get(run=run)
    samples = np.array([[1.0, 2.5e-300], [math.pi, -0.0]])
    copy = Result(run=run, metric=original.metric, mean=1.0, subsession_size=1, variance=0.5, n=2, sample_count=4,
                  samples=samples.tobytes(), samples_shape=list(samples.shape),
                  metadata={"host": "b-1", "seed": 2**70})
    Result.objects.filter(pk=original.pk).delete()
    bulk_insert([copy])
    stored = Result.objects.get(run=run)
    assert stored.samples_array().tobytes() == samples.tobytes()
    assert (stored.samples_shape, stored.metadata) == ([2, 2], {"host": "b-1", "seed": 2**70})


def test_json_text_parses_to_what_the_standard_encoder_writes_nan_as_null_and_huge_integers_whole():
    value = {"a": [0.1 + 0.2, 1e300, 5e-324, np.float64(2.5), np.int32(4), True, None, "é\u2028"], 3: {}}
    assert json.loads(json_text(value)) == json.loads(json.dumps(value, default=np.generic.item))
    assert json.loads(json_text({"p": math.nan, "q": [math.inf]})) == {"p": None, "q": [None]}
    assert json.loads(json_text({"seed": [2**64, -(2**70)]})) == {"seed": [2**64, -(2**70)]}


@pytest.mark.django_db
def test_a_comparison_failing_after_its_first_batch_is_stored_keeps_the_run_as_it_was(monkeypatch):
    for night in range(4):
        posted_run(night, {"a": 1.0, "b": 2.0})
    tonight = posted_run(4, {"a": 1.0, "b": 2.4})
    comparisons.compare_run(run_id=tonight.pk)
    kept = Comparison.objects.filter(candidate__run=tonight).values_list("pk", "method", "verdict", "ratio")
    before = sorted(kept)
    assert {method for _, method, _, _ in before} == {"history", "shift", "previous"}

    def failing(*args, **kwargs):
        raise RuntimeError("the shift test failed")

    # The history rows are already stored (SQLite) or in the open COPY (PostgreSQL) when the shift rows fail.
    monkeypatch.setattr(comparisons, "shift_rows", failing)
    with pytest.raises(RuntimeError, match="the shift test failed"):
        comparisons.compare_run(run_id=tonight.pk)
    assert sorted(kept.all()) == before


@pytest.mark.django_db
def test_a_query_while_rows_are_being_stored_is_refused_instead_of_waiting_for_ever():
    run = posted_run(0, {"a": 1.0})
    result = Result.objects.get(run=run)
    with pytest.raises(RuntimeError, match="no query may run while bulk_inserter stores Comparison rows"), \
            transaction.atomic(), bulk_inserter(Comparison) as insert:
        insert({"candidate_id": [result.pk], "method": ["history"], "verdict": ["no change"], "threshold": [0.02],
                "confidence_level": [0.95]}, rows=1)
        Result.objects.count()
    assert not Comparison.objects.exists()
