"""Concurrent posts race for the same new rows (projects, machines, revisions, benchmarks, metrics): every
post succeeds and nothing is stored twice. Run on SQLite and again on PostgreSQL (./pilot test), where
the race is real: before creation was race-free, 48 of 80 such posts failed there."""

import json
import random

import pytest
from django.test import Client

from results.models import Benchmark, Machine, Metric, Project, Result, Revision, Run
from tests.factories import run_document
from tests.processes import all_at_once

pytestmark = pytest.mark.django_db(transaction=True)

POSTERS = 8
ROUNDS = 10
BENCHMARKS = [f"bench {index}" for index in range(6)]


def post_together(token: str, documents: list[dict]) -> list[int]:
    """Post every document from its own thread, all released at once; the status codes."""
    def post(document: dict) -> int:
        client = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"})
        return client.post("/api/v1/runs", data=json.dumps(document), content_type="application/json").status_code

    return all_at_once(post, documents)


def test_concurrent_first_posts_of_new_projects_and_benchmarks_all_succeed_without_duplicates(token):
    rng = random.Random(4)
    statuses = []
    for round_ in range(ROUNDS):
        documents = []
        for poster in range(POSTERS):
            # Each poster lists the shared new benchmarks in its own order (a deadlock if inserted as given).
            names = rng.sample(BENCHMARKS, len(BENCHMARKS))
            documents.append(run_document(
                project=f"Race {round_}", machine=f"race-{round_}", commit=f"{round_:040x}", seed=poster,
                results=[{"benchmark": name, "samples": [1.0, 1.1, 0.9, 1.05]} for name in names]))
        statuses += post_together(token, documents)

    assert statuses == [201] * (ROUNDS * POSTERS)
    assert Project.objects.filter(name__startswith="Race").count() == ROUNDS
    assert Machine.objects.filter(name__startswith="race-").count() == ROUNDS
    assert Revision.objects.count() == ROUNDS
    assert Benchmark.objects.count() == ROUNDS * len(BENCHMARKS)
    assert Metric.objects.count() == ROUNDS * len(BENCHMARKS)
    assert Run.objects.count() == ROUNDS * POSTERS
    assert Result.objects.count() == ROUNDS * POSTERS * len(BENCHMARKS)


def test_concurrent_posts_of_a_new_metric_with_contradicting_units_store_one_unit(token):
    documents = [run_document(project="Units", commit=f"{poster:040x}", seed=poster,
                              results=[{"benchmark": "b", "unit": unit, "samples": [1.0, 1.1, 0.9]}])
                 for poster, unit in enumerate(["s", "ms"] * (POSTERS // 2))]

    statuses = post_together(token, documents)

    # One unit wins the race; every post of the other is a 409, none a 500.
    metric = Metric.objects.get()
    assert sorted(statuses) == sorted([201 if document["results"][0]["unit"] == metric.unit else 409
                                       for document in documents])
