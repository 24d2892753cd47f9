"""The set-up of several machines, on this box as it would be across machines: one database, one Redis, two
registered benchmark machines each with its own bench worker consuming only its machine's queue, and two
analysis workers consuming only the analysis queue. A job pinned to a machine runs on that machine's worker
alone; a large nightly is compared in chunks that both analysis workers take, and stores what one comparison
of it whole stores."""

import contextlib
import os
from pathlib import Path

import pytest

from pilotweb.celery import app
from results import comparisons
from results.models import Alert, AlertGroup, Comparison, ComparisonChunk, Run
from results.queue import ANALYSIS_QUEUE, analysis_in_process
from runner import dispatch, services
from runner.models import SessionStatus
from tests.factories import MachineFactory, ProjectFactory, posted_run
from tests.processes import wait_for, worker_process
from tests.runner.test_integration import database_url, finished

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CHUNK_SERIES = 2
# Ten earlier nights: the fewest a shift is tested against (results.nightly_rows.SHIFT_MIN_HISTORY), so that
# tonight's changes open alerts.
EARLIER_NIGHTS = 10
TONIGHT = {"regressed 0": 1.10, "regressed 1": 1.10, "improved": 0.90, **{f"steady {i}": 1.0 for i in range(21)}}


def workers_of(broker: str, machines: list, logs: Path) -> contextlib.ExitStack:
    """A bench worker per machine on its queue alone, and two analysis workers on the analysis queue alone,
    each with its own node name and log (``logs / "<node>.log"``); all compare a nightly of more than
    ``CHUNK_SERIES`` series in chunks."""
    environment = {"DATABASE_URL": database_url(), "PILOTWEB_COMPARISON_CHUNK_SERIES": str(CHUNK_SERIES)}
    nodes = {f"bench-{machine.name}@localhost": [machine.queue] for machine in machines}
    nodes.update({f"analysis-{i}@localhost": [ANALYSIS_QUEUE] for i in (1, 2)})
    stack = contextlib.ExitStack()
    for node, queues in nodes.items():
        stack.enter_context(worker_process(redis_url=broker, queues=queues, log=logs / f"{node}.log",
                                           environment=environment, name=node))
    return stack


def sort_job(staff, machine, project):
    """A job of the built-in sort workload pinned to ``machine``, converging in a few seconds."""
    return services.create_job(
        user=staff, project=project, name=f"sort on {machine.name}", benchmark="sort", machine=machine,
        workload_kind="builtin", builtin="sort", work_min=10, work_max=60, min_round_duration=0.0, budget_seconds=30,
        budget_rounds=60, target_width=0.5)


def ready(nodes: list[str]) -> bool:
    return len(app.control.ping(destination=nodes, timeout=0.5)) == len(nodes)


def stored(run: Run) -> dict:
    return {(benchmark, method): values for benchmark, method, *values in Comparison.objects.filter(
        candidate__run=run).values_list("candidate__metric__benchmark__name", "method", "verdict", "qvalue", "pvalue",
                                         "ratio", "ci_low", "ci_high")}


def opened(run: Run) -> list:
    return sorted(Alert.objects.filter(group__run=run).values_list(
        "comparison__candidate__metric__benchmark__name", "state", "first_run_id"))


def test_jobs_run_on_their_machines_workers_and_a_nightlys_chunks_are_shared_by_the_analysis_workers(
        staff, broker, tmp_path):
    machines = [MachineFactory(name=name, queue=f"bench.{name}-{os.getpid()}") for name in ("alpha", "beta")]
    project = ProjectFactory(name="Distributed")
    jobs = [sort_job(staff, machine, project) for machine in machines]
    log = {machine.pk: tmp_path / f"bench-{machine.name}@localhost.log" for machine in machines}

    with workers_of(broker, machines, tmp_path):
        wait_for(lambda: ready([f"{kind}@localhost" for kind in ("bench-alpha", "bench-beta", "analysis-1",
                                                                  "analysis-2")]),
                 timeout=120, what="the four workers to answer a ping")
        sessions = [services.start_session(job=job, user=staff) for job in jobs]
        # The earlier nights are compared here, whole; tonight's comparison is enqueued on commit, as in
        # production, for the analysis workers.
        with analysis_in_process():
            for night in range(EARLIER_NIGHTS):
                posted_run(night, {name: 1.0 for name in TONIGHT}, sd=0.002, machine="alpha")
        sessions = [wait_for(lambda: finished(session.pk), what=f"session {session.pk} to finish")
                    for session in sessions]
        # The analysis workers idle when tonight arrives, so that neither is busy with a session's run.
        wait_for(lambda: not Run.objects.filter(sessions__in=sessions, compared_at__isnull=True).exists(),
                 what="the sessions' runs to be compared")
        tonight = posted_run(EARLIER_NIGHTS, TONIGHT, sd=0.002, machine="alpha")
        wait_for(lambda: Run.objects.filter(pk=tonight.pk, compared_at__isnull=False).exists(),
                 what="tonight to be compared")

    for session, job, other in zip(sessions, jobs, reversed(jobs)):
        assert session.status in (SessionStatus.CONVERGED, SessionStatus.BUDGET_EXHAUSTED), session.error
        assert session.runs.get().machine == job.machine
        own, others = log[job.machine_id].read_text(), log[other.machine_id].read_text()
        received = f"run_session[{dispatch.task_id(session.pk, 0)}] received"
        claimed = f"Session {session.pk}, attempt 0: claimed by this worker."
        assert received in own and claimed in own
        assert received not in others and f"Session {session.pk}," not in others

    chunks = list(ComparisonChunk.objects.filter(run=tonight).order_by("index").values_list(
        "metric_ids", "worker", "finished_at"))
    assert [len(metric_ids) for metric_ids, _, _ in chunks] == [CHUNK_SERIES] * (len(TONIGHT) // CHUNK_SERIES)
    assert all(finished_at is not None for _, _, finished_at in chunks)
    assert {worker for _, worker, _ in chunks} == {"analysis-1@localhost", "analysis-2@localhost"}
    chunked, chunked_alerts = stored(tonight), opened(tonight)
    assert {verdict for verdict, *_ in chunked.values()} >= {"regression", "improvement", "no change"}
    assert AlertGroup.objects.filter(run=tonight).count() == 1
    assert [benchmark for benchmark, *_ in chunked_alerts] == ["improved", "regressed 0", "regressed 1"]

    comparisons.compare_run(run_id=tonight.pk)

    assert stored(tonight) == chunked
    assert opened(tonight) == chunked_alerts
