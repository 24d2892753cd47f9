"""Factories for model rows and native run documents used across the tests."""

import factory
import numpy as np
from django.contrib.auth import get_user_model

from results.models import Benchmark, Machine, Metric, Project, Revision


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda i: f"user{i}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.django.Password("correct horse battery staple")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda i: f"Project {i}")
    slug = factory.Sequence(lambda i: f"project-{i}")


class MachineFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Machine

    name = factory.Sequence(lambda i: f"machine-{i}")
    queue = factory.LazyAttribute(lambda machine: f"bench.{machine.name}")


class BenchmarkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Benchmark

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda i: f"benchmark {i}")


class MetricFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Metric

    benchmark = factory.SubFactory(BenchmarkFactory)
    name = "time"
    unit = "s"


class RevisionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Revision

    project = factory.SubFactory(ProjectFactory)
    commit = factory.Sequence(lambda i: f"{i:040x}")
    branch = "main"


def run_document(*, results: list[dict] | None = None, run_key: str | None = None, project: str = "Demo",
                 machine: str = "bench-1", commit: str = "a" * 40, branch: str = "main", kind: str = "nightly",
                 seed: int = 0) -> dict:
    """A valid native run document with two results from seeded samples."""
    rng = np.random.default_rng(seed)
    if results is None:
        results = [
            {"benchmark": "sort", "metric": "time", "unit": "s", "samples": rng.normal(1.0, 0.01, 60).tolist()},
            {"benchmark": "sha256", "metric": "throughput", "unit": "MB/s", "direction": "higher_is_better",
             "samples": rng.normal(800, 5, (4, 10)).tolist()},
        ]
    document = {
        "project": {"name": project},
        "machine": {"name": machine, "cores": 2},
        "revision": {"commit": commit, "branch": branch},
        "kind": kind,
        "started_at": "2026-11-20T02:00:00Z",
        "source": "tests",
        "results": results,
    }
    if run_key is not None:
        document["run_key"] = run_key
    return document
