"""Factories for model rows, native run documents and runs posted through ingestion, shared by the tests."""

import json
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

import factory
import numpy as np
from django.contrib.auth import get_user_model
from scipy import stats

from results import services
from results.models import Benchmark, Comparison, Machine, Metric, Project, Result, Revision, Run
from results.schemas import RunIn
from tests.processes import wait_for

NIGHT_ZERO = datetime(2026, 10, 1, 2, 0, tzinfo=timezone.utc)
"""When night 0 of the tests' nightly histories started."""


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


class RunFactory(factory.django.DjangoModelFactory):
    """A completed nightly run, one hour after the previous one made here."""

    class Meta:
        model = Run

    project = factory.SubFactory(ProjectFactory)
    machine = factory.SubFactory(MachineFactory)
    revision = factory.SubFactory(RevisionFactory, project=factory.SelfAttribute("..project"))
    kind = Run.Kind.NIGHTLY
    started_at = factory.Sequence(lambda i: NIGHT_ZERO + timedelta(hours=i))


def _half_width_95(variance: float, n: int) -> float:
    return float(stats.t.ppf(0.975, n - 1) * (variance / n) ** 0.5)


class ResultFactory(factory.django.DjangoModelFactory):
    """A stored summary: 20 subsessions of one reading around 1.0 s, with its 95% interval."""

    class Meta:
        model = Result

    run = factory.SubFactory(RunFactory)
    metric = factory.SubFactory(MetricFactory, benchmark__project=factory.SelfAttribute("...run.project"))
    mean = 1.0
    subsession_size = 1
    variance = 1e-4
    n = 20
    sample_count = factory.LazyAttribute(lambda result: result.n * result.subsession_size)
    # The 95% interval of n units by scipy's t quantile (spec §3), whatever n a test gives.
    ci_low = factory.LazyAttribute(lambda result: result.mean - _half_width_95(result.variance, result.n))
    ci_high = factory.LazyAttribute(lambda result: result.mean + _half_width_95(result.variance, result.n))


class ComparisonFactory(factory.django.DjangoModelFactory):
    """A stored history comparison that found no change."""

    class Meta:
        model = Comparison

    candidate = factory.SubFactory(ResultFactory)
    method = "history"
    ratio = 1.0
    ci_low = 0.98
    ci_high = 1.02
    pvalue = 0.5
    qvalue = 0.6
    verdict = "no change"
    threshold = 0.02
    confidence_level = 0.95
    inputs = factory.Dict({})


def post_results(results: list[dict], *, night: int = 0, kind: str = "nightly", branch: str = "main",
                 commit: str | None = None, base_commit: str = "", pull_request: int | None = None,
                 project: str = "Demo", machine: str = "bench-1", machine_details: Mapping | None = None) -> Run:
    """Post a run of the given native results through ingestion, started `night` days after NIGHT_ZERO; its
    commit (unless given) is the night's number, so runs of one night on several machines share it."""
    document = RunIn.model_validate({
        "project": {"name": project}, "machine": {"name": machine, **(machine_details or {})}, "kind": kind,
        "revision": {"commit": commit or f"{night:040x}", "branch": branch, "base_commit": base_commit,
                     "pull_request": pull_request},
        "started_at": NIGHT_ZERO + timedelta(days=night), "source": "tests", "results": results,
    })
    return services.ingest_run(document=document, user=None).run


def posted_run(night: int, means: Mapping[str, float | tuple[float, float]], *, sd: float = 0.01, n: int = 20,
               seed: int | None = None, samples: bool = False, direction: str = "lower_is_better",
               **run_fields) -> Run:
    """Post the run of `night` with one ``time`` metric per benchmark: `n` readings drawn around its mean with relative
    sd `sd` (a ``(mean, sd)`` pair gives a benchmark its own), seeded by `seed` (the night's number unless
    given), stored as a summary of subsessions of one reading, or as the raw samples with ``samples=True``.
    `run_fields` are :func:`post_results`'s."""
    rng = np.random.default_rng(night if seed is None else seed)
    results = []
    for name, given in means.items():
        mean, spread = given if isinstance(given, tuple) else (given, sd)
        values = mean + rng.normal(0, spread * mean, n)
        entry = {"benchmark": name, "metric": "time", "unit": "s", "direction": direction}
        if samples:
            entry["samples"] = values.tolist()
        else:
            entry["summary"] = {"mean": float(values.mean()), "subsession_size": 1,
                                "variance": float(values.var(ddof=1)), "n": n}
        results.append(entry)
    return post_results(results, night=night, **run_fields)


def compared_run(night: int, means: Mapping[str, float | tuple[float, float]], **options) -> Run:
    """:func:`posted_run`, then compared as the worker does: a night whose history comparison measures its
    series' run-to-run noise (what a pull request's comparison carries in)."""
    from results import comparisons

    run = posted_run(night, means, **options)
    comparisons.compare_run(run_id=run.pk)
    return run


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


def post_nights(client, project, machine, commits: list[str], *, benchmark: str = "bench", slower: float = 1.3,
                spread: float = 0.01, seed: int = 7) -> int:
    """Ten steady nights of `benchmark`, then one `slower`, each naming its commit, posted through the API by
    `client` and each waited for until the analysis worker has compared it; the last run's id."""
    rng = np.random.default_rng(seed)
    for night, (level, revision) in enumerate(zip([1.0] * 10 + [slower], commits, strict=True)):
        document = run_document(project=project.name, machine=machine.name, commit=revision, seed=night,
                                results=[{"benchmark": benchmark, "samples": rng.normal(level, spread, 40).tolist()}])
        document["project"]["slug"] = project.slug
        document["started_at"] = f"2026-11-{10 + night:02d}T02:00:00Z"
        response = client.post("/api/v1/runs", data=json.dumps(document), content_type="application/json")
        assert response.status_code == 201, response.content
        run_id = response.json()["id"]
        wait_for(lambda: Run.objects.filter(pk=run_id, compared_at__isnull=False).exists(),
                 what=f"night {night} to be compared")
    return run_id
